/* info.h - what an array or group is, in words: the "field: value" lines
 * of `zarrfs info` and of an array's info.txt, and the values of the
 * user.zarr.* extended attributes a mount shows on array and group
 * directories (getfattr -d).
 *
 * The attributes come from the node's parsed metadata alone (no chunk is
 * read, no listing is made), so they are cheap enough to answer on every
 * getxattr; the text adds an array's stored-chunk counts from its listing
 * (the views' memoised presence scan). FUSE-free; the caller owns what is
 * returned (free()). */
#ifndef ZARRFS_INFO_H
#define ZARRFS_INFO_H

#include <stddef.h>
#include <stdint.h>

#include "../../src/util/err.h"

struct engine;
struct znode;

/* What a listing tells of an array's stored chunks (stored keys of the
 * chunk grid: shards for sharded arrays). */
struct info_counts {
  int known;       /* 0: unknown (the store cannot list; reason in why) */
  uint64_t stored; /* chunks stored */
  uint64_t bytes;  /* their listed sizes summed; STORE_SIZE_UNKNOWN when
                      the listing gives no size (whole-file references) */
  const char *why; /* !known: why (borrowed), or NULL */
};

/* The text of node n (an array, group or broken node) into *out
 * (malloc'd, NUL-terminated, *len bytes): `zarrfs info` and info.txt.
 * Arrays list their stored chunks once (memoised); their attributes (V3
 * `attributes`, V2 .zattrs) follow, one a line. A group is summarised as
 * ncdump -h does: the store's listing of it and consolidated metadata name
 * its members, whose metadata is read (once, into the node table); then
 * its dimensions with their sizes, each array member (data type,
 * dimensions, shape, chunks, codecs, fill value, attributes), its member
 * groups and its own attributes (V2: its .zattrs). A group's text is made
 * once and kept in the memo (ELEVEL_INFO), as the store is taken as
 * immutable while mounted: a .zattrs edited or a member added while
 * mounted shows after a remount (or once the text was evicted). 0, or
 * a transient failure (-EINTR, -ENOMEM, ...) with err set; any other
 * listing failure says "unknown" and why in the text. */
int info_text(struct engine *e, const struct znode *n, char **out, size_t *len,
              struct zerr *err);

/* The same text from given counts (counts NULL: no count lines), with no
 * I/O: what info_text formats. 0 or -ENOMEM. */
int info_format(const struct znode *n, const struct info_counts *counts,
                char **out, size_t *len);

/* The names of n's extended attributes, each NUL-terminated, one after
 * the other (the listxattr format), into *out (malloc'd, *len bytes; 0
 * for a node without metadata). 0 or -ENOMEM. */
int info_xattr_names(const struct znode *n, char **out, size_t *len);

/* The value of extended attribute name of n into *out (malloc'd, *len
 * bytes, no trailing newline): -ENODATA when n has no such attribute,
 * -ENOMEM. The attributes: user.zarr.node_type, zarr_format, and for
 * arrays shape, data_type, chunks (the chunk shape), codecs, fill_value,
 * dimension_names (V3's, or V2's _ARRAY_DIMENSIONS attribute), attributes
 * (when there are any, compact JSON); user.zarr.metadata is the node's
 * metadata document (compact JSON). */
int info_xattr(const struct znode *n, const char *name, char **out,
               size_t *len);

#endif
