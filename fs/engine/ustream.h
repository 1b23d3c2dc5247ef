/* ustream.h - units of interleaved strings read as a stream: the read
 * half (unitwin.c) reads through it. The sizes are in unit.h
 * (unit_stream_windowed, unit_size_streamed). Nothing here owns memory
 * but what *pin pins (the caller's: memo_release). */
#ifndef ZARRFS_FS_ENGINE_USTREAM_H
#define ZARRFS_FS_ENGINE_USTREAM_H

#include "unit.h"

/* Read [off, off+len) of the text of unit idx into dst when it is
 * streamed (unit_stream_windowed); *pin (the caller's) pins the stream,
 * positioned where the read ended. The bytes read, -ENOTSUP when it is
 * not streamed or not stored, or a negative errno. */
long ustream_read(struct engine *e, const struct znode *n, const uint64_t *idx,
                  uint64_t off, size_t len, char *dst, struct memo_ref **pin,
                  struct zerr *err);

/* The text size of unit idx claimed by what its chunk's stream header
 * states (chain_elems_stated: zstd's content size, less the count and
 * length words), without decoding: 0 and *value (UNIT_SIZE_CLAIM set),
 * or -1 when it cannot be claimed so (not a stream of strings, elements
 * out of bounds, no size stated, not stored, a read that failed: the
 * decode that learns the size says why). Every decode checks a claim
 * (unit.h, unit_size_claim). */
int ustream_size_stated(struct engine *e, const struct znode *n,
                        const uint64_t *idx, uint64_t *value);

#endif
