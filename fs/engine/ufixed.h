/* ufixed.h - units of fixed-size elements stored as they are decoded (a
 * chain of one `bytes` codec: contiguous netCDF variables through
 * kerchunk, V3 `bytes`-only chains, V2 without compressor or filters)
 * too large to decode whole, read by ranges in windows of elements: the
 * unit's text size and where each window's text starts are learned by
 * one pass of ranged reads (memoised at ELEVEL_DATA: 8 bytes a window),
 * and a read renders the windows it shows from one ranged read each
 * (memoised at ELEVEL_DATA, so a reader in order reads each window once).
 * unitwin.c calls it (unit_windowed, unit_read_window, the sizes), never
 * the other way. Nothing here owns memory but what *pin pins. */
#ifndef ZARRFS_FS_ENGINE_UFIXED_H
#define ZARRFS_FS_ENGINE_UFIXED_H

#include "unit.h"

/* Is unit idx such a unit: fixed-size elements of a plain text form (no
 * CSV, no conversion before rendering) whose chain reads them where they
 * lie (codecs/chain.h: CODEC_PARTIAL_ELEMENTS, swapped or not; a
 * transpose or any bytes->bytes stage refuses), every dimension but the
 * first whole, and its element bytes at least UNIT_WINDOW_MIN and more
 * than a quarter of the cache or than max_decode? */
int ufixed_windowed(const struct engine *e, const struct znode *n,
                    const uint64_t *idx);

/* The text size of a ufixed_windowed unit (one pass of ranged reads, the
 * first time): 0, 1 when the chunk is not stored (the fill unit knows its
 * size), or a negative errno (logged, naming the chunk). */
int ufixed_size(struct engine *e, const struct znode *n, const uint64_t *idx,
                uint64_t *size, struct zerr *err);

/* Read text [off, off+len) of a ufixed_windowed unit into dst; *pin (the
 * caller's: memo_release) pins the window the read ended in. The bytes
 * read (short only at the end of the text), -ENOTSUP when the unit is not
 * such a unit or not stored (read it the usual way), or a negative errno
 * (logged, naming the chunk). */
long ufixed_read(struct engine *e, const struct znode *n, const uint64_t *idx,
                 uint64_t off, size_t len, char *dst, struct memo_ref **pin,
                 struct zerr *err);

#endif
