/* rnum.h - runs of numbers -> lines of text, for the text views' hot
 * loop (fs/text/text.c renders a unit's elements a block at a time).
 *
 * Each element's text is the one render_fixed gives (render.h's text
 * contract), followed by '\n'. Unlike render_fixed, a run may write
 * scratch bytes past the end of the text it returns (within the room
 * below): digits are copied in fixed-size blocks, never byte by byte.
 * Pure functions, no allocation, no locale, thread-safe. */
#ifndef ZARRFS_RNUM_H
#define ZARRFS_RNUM_H

#include <stddef.h>

#include "../../src/zarr/dtype.h"

/* Bytes of room a run needs per element: the longest text (a float64 is
 * at most 24 characters), its newline and the scratch written past it. */
#define RNUM_ROOM 64

/* Whether rnum_run renders elements of this kind: the integers (8 to 64
 * bits, signed and unsigned), float32 and float64. */
int rnum_has(enum dtype_kind kind);

/* Lines of the n elements of a kind rnum_has accepts at src (n * element
 * size bytes in host byte order, any alignment) into dst, which holds at
 * least n * RNUM_ROOM bytes. Returns the bytes of text written (the
 * lines); bytes of dst past them are undefined. */
size_t rnum_run(enum dtype_kind kind, const void *src, size_t n, char *dst);

/* What rnum_run of the same run returns, without writing the text: the
 * byte count alone (a float's shortest digits are still searched, their
 * count and exponent give its length). For learning a unit's text size
 * (fs/text/text.c, text_measure). */
size_t rnum_size(enum dtype_kind kind, const void *src, size_t n);

#endif
