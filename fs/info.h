/* info.h - what an array or group is, in words: the "field: value" lines
 * of `zarrfs info` and the values of the user.zarr.* extended attributes
 * a mount shows on array and group directories (getfattr -d).
 *
 * Everything comes from the node's parsed metadata (no chunk is read, no
 * listing is made), so it is cheap enough to answer on every getxattr.
 * FUSE-free; the caller owns what is returned (free()). */
#ifndef ZARRFS_INFO_H
#define ZARRFS_INFO_H

#include <stddef.h>

struct znode;

/* The lines of `zarrfs info` for node n (an array, group or broken node)
 * into *out (malloc'd, NUL-terminated, *len bytes). 0 or -ENOMEM. */
int info_text(const struct znode *n, char **out, size_t *len);

/* The names of n's extended attributes, each NUL-terminated, one after
 * the other (the listxattr format), into *out (malloc'd, *len bytes; 0
 * for a node without metadata). 0 or -ENOMEM. */
int info_xattr_names(const struct znode *n, char **out, size_t *len);

/* The value of extended attribute name of n into *out (malloc'd, *len
 * bytes, no trailing newline): -ENODATA when n has no such attribute,
 * -ENOMEM. The attributes: user.zarr.node_type, zarr_format, and for
 * arrays shape, data_type, chunks (the chunk shape), codecs, fill_value,
 * dimension_names (when the metadata has them); user.zarr.metadata is the
 * node's metadata document (compact JSON). */
int info_xattr(const struct znode *n, const char *name, char **out,
               size_t *len);

#endif
