/* consolidated.h - the consolidated metadata of one group, parsed into a
 * read-only table of node documents keyed by path relative to the group.
 *
 * Two sources:
 *   - Zarr V3 (zarr-python): the group's zarr.json carries
 *     "consolidated_metadata": {"kind": "inline", "metadata": {REL: DOC}},
 *     REL a '/'-joined path below the group ("a", "a/b/arr"), DOC the node's
 *     complete zarr.json (or a V2-shaped document with zarr_format 2);
 *   - Zarr V2: the group's `.zmetadata`, {"zarr_consolidated_format": 1,
 *     "metadata": {"a/.zgroup": {...}, "a/arr/.zarray": {...}, ...}}.
 *
 * The table is a snapshot taken when the writer consolidated: it may be
 * stale (nodes added, removed or rewritten since). The engine prefers it
 * when present, so nodes need no per-node read and hierarchies list even
 * where a store cannot list; `-o consolidated=no` reads per-node metadata
 * instead. Malformed consolidated metadata is refused as a whole here
 * (-EIO with a reason naming the entry); the caller logs it and falls back.
 *
 * Immutable after parsing: shared by FUSE threads without locks. */
#ifndef ZARRFS_CONSOLIDATED_H
#define ZARRFS_CONSOLIDATED_H

#include <jansson.h>
#include <stddef.h>

#include "../util/err.h"

struct zcons;

/* What a consolidated entry describes. */
enum zcons_kind {
  ZCONS_V3 = 1,       /* a V3 zarr.json document (group or array) */
  ZCONS_V2_ARRAY = 2, /* a V2 .zarray document */
  ZCONS_V2_GROUP = 3, /* a V2 group (.zgroup) */
};

/* Parse the `consolidated_metadata` member of a V3 group document (member
 * may be NULL or JSON null: nothing is consolidated, *out = NULL, 0).
 * On success *out is NULL or a new table owned by the caller (zcons_free). */
int zcons_parse_v3(json_t *member, struct zcons **out, struct zerr *err);

/* Parse the text of a V2 `.zmetadata` (len bytes). On success *out is a new
 * table owned by the caller (zcons_free); an empty map gives NULL. */
int zcons_parse_v2(const char *text, size_t len, struct zcons **out,
                   struct zerr *err);

/* Free; NULL-safe. */
void zcons_free(struct zcons *c);

/* Number of nodes listed. */
size_t zcons_count(const struct zcons *c);

/* The document of node rel (non-empty, relative to the group): compact JSON
 * text (borrowed, NUL-terminated, valid while c lives), its length in *len
 * and its kind in *kind. NULL when rel is not listed. */
const char *zcons_node(const struct zcons *c, const char *rel, size_t *len,
                       enum zcons_kind *kind);

/* Is rel ("" = the group itself) a listed node or a directory on the way
 * to one? */
int zcons_has_dir(const struct zcons *c, const char *rel);

/* Called once per child name; return non-zero to stop. */
typedef int (*zcons_child_cb)(void *ud, const char *name);

/* The distinct immediate child names under rel ("" = the group) of every
 * listed node, in strcmp order. Returns 0, or -ENOMEM. */
int zcons_children(const struct zcons *c, const char *rel, zcons_child_cb cb,
                   void *ud, struct zerr *err);

#endif
