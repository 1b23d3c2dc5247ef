/* view.h - the text views: a chunk's view (K.txt) and an array's view
 * (values.txt). Sizes and reads, FUSE-free.
 *
 * A read maps a byte range of the view to elements through the chunk's
 * text offsets, then to the bytes of those elements only; for `zarrs.vlen`
 * chunks whose data codecs are `bytes` those are ranged reads of the stored
 * chunk. The array view walks the array in C order: for each slab of chunk
 * rows along dimension 0 it knows the text size, and within a slab the rows
 * of the array cut each chunk into segments (one segment per chunk when the
 * chunks span the trailing dimensions, which includes every 1-D array). */
#ifndef ZARRFS_VIEW_H
#define ZARRFS_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "engine.h"

/* Size of the text view of chunk idx. */
int view_chunk_size(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, struct zerr *err);
/* Read up to len bytes at off of chunk idx's view into dst; returns the
 * number of bytes (short only at the end of the view) or a negative errno. */
long view_chunk_read(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t off, size_t len, char *dst,
                     struct zerr *err);

/* Size of the whole-array view of node n. */
int view_array_size(struct engine *e, const struct znode *n, uint64_t *size,
                    struct zerr *err);
/* Read from the whole-array view (same contract as view_chunk_read). */
long view_array_read(struct engine *e, const struct znode *n, uint64_t off,
                     size_t len, char *dst, struct zerr *err);

/* Render text bytes [off, off+len) of a decoded chunk; data is the element
 * bytes of a variable-length chunk (engine_chunk_data), NULL for fixed-size
 * ones. Returns the bytes written or a negative errno. */
long view_chunk_text_read(const struct chunk_text *ct, struct bytesrc *data,
                          const struct dtype *dt, const uint64_t *chunk_shape,
                          int ndim, uint64_t off, size_t len, char *dst,
                          struct zerr *err);

#endif
