/* hier.h - hierarchies through consolidated metadata (src/consolidated.h):
 * the engine asks which ancestor group's table describes a node, and the
 * namespace asks which directories a table names, so a hierarchy is served
 * without reading per-node metadata and lists even where the store cannot.
 *
 * A node is looked up in the tables of its ancestor groups from the root
 * down; the outermost table that lists it wins (zarr-python consolidates
 * at the root; nested groups inside its table carry empty tables). Nothing
 * below an array is a node. With engine_config.no_consolidated every
 * function here answers "nothing consolidated". FUSE-free. */
#ifndef ZARRFS_HIER_H
#define ZARRFS_HIER_H

#include "../src/consolidated.h"
#include "engine.h"

/* The consolidated document of the node at store prefix path (non-empty):
 * its text (borrowed; lives as long as the engine), length and kind; the
 * store key of the document that consolidated it ("zarr.json",
 * "g/.zmetadata") is written to src_key. NULL when no table lists path. */
const char *hier_node_doc(struct engine *e, const char *path, size_t *len,
                          enum zcons_kind *kind, char *src_key, size_t src_cap);

/* Give group node n (whose metadata key is key) its own table: the V3
 * document's `consolidated_metadata`, or for a V2 group whose metadata came
 * from the store its `.zmetadata`. A malformed table is logged (one line,
 * naming the key and the reason) and ignored. */
void hier_load_group(struct engine *e, struct znode *n, const char *key,
                     int from_consolidated);

/* Is path (non-empty) a node or a directory on the way to one, according
 * to the tables of its ancestors? */
int hier_is_dir(struct engine *e, const char *path);

/* The distinct child names of directory path ("" = root) named by the
 * tables of path and its ancestors, in strcmp order. 0 or -ENOMEM. */
int hier_children(struct engine *e, const char *path, zcons_child_cb cb,
                  void *ud, struct zerr *err);

#endif
