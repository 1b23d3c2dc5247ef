/* render.h - element -> text for the text views (the text contract).
 *
 * One element per line; the newline is added by the caller
 * (fs/text/text.c), never by these functions.
 *   bool     true / false
 *   integers decimal
 *   floats   shortest text that reads back to the same value at the
 *            element's width (float16, bfloat16, float32, float64; printf
 *            %g style: "0.5", "1e+20", "-0"), and nan, inf, -inf
 *   complex  both parts as floats, the imaginary one signed: "1+2j",
 *            "0.5-1.5j", "nan+infj"
 *   datetime64   ISO 8601 like numpy ("2023-01-01T00:00:00.000", years
 *            in at least 4 digits), NaT; an instant past 64 bits of the
 *            base unit (count x scale_factor overflows) is the count and
 *            the scaled unit, "10000000[1000000000000Y]", never a date
 *   timedelta64  ISO 8601 duration ("P1DT2H3M4.007S", "-PT1.5S"), NaT;
 *            exact for every count and scale_factor
 *   int2/int4/uint2/uint4  decimal of the stored byte
 *   zarrs.optional  null, or the inner type's text; nested: a value
 *            missing inside k present layers is null in k brackets
 *            ([null] is Some(None)); a present value is the innermost
 *            type's text
 *   string   the UTF-8 bytes, each '\n' byte shown as ' ' and each byte
 *            that is not part of a well-formed UTF-8 sequence of its
 *            element as '?' (UTF8_BAD_BYTE): one byte for one, so a
 *            text's size is still its elements' bytes plus one newline
 *            each, known from a vlen index alone (render_var_run,
 *            render_str_fix; render_var alone shows the bytes as they are)
 *   bytes    lowercase hex, two characters per byte (raw bytes r<N> /
 *            raw_bytes and numpy S are converted to bytes first)
 * Pure functions, no allocation, thread-safe. */
#ifndef ZARRFS_RENDER_H
#define ZARRFS_RENDER_H

#include <stddef.h>
#include <stdint.h>

#include "../../src/zarr/dtype.h"

/* Longest text of one fixed-size element (without newline). */
#define RENDER_FIXED_MAX 64

/* Render one fixed-size element (elem points at dt->size bytes in host byte
 * order) into buf (at least RENDER_FIXED_MAX bytes, not NUL-terminated).
 * Returns the text length. For DT_UNSUPPORTED, a variable kind or a kind
 * views convert to bytes first (fixed strings, raw bytes) returns 0. */
size_t render_fixed(const struct dtype *dt, const void *elem, char *buf);

/* Bytes of room render_fixed_run needs per element. */
#define RENDER_RUN_ROOM (RENDER_FIXED_MAX + 1)

/* Lines of n consecutive fixed-size elements at src (n * dt->size bytes in
 * host byte order): each element's render_fixed text and '\n', into dst,
 * which holds at least n * RENDER_RUN_ROOM bytes. Returns the bytes
 * written; bytes of dst past them are undefined (numbers are written with
 * scratch past each text, fs/text/rnum.c). */
size_t render_fixed_run(const struct dtype *dt, const void *src, size_t n,
                        char *dst);

/* What render_fixed_run of the same run returns, the text not kept:
 * numbers counted without being written (rnum_size), other kinds
 * rendered an element at a time into a scratch buffer. */
size_t render_fixed_run_size(const struct dtype *dt, const void *src, size_t n);

/* The text render_fixed gives the IEEE binary float with bit pattern
 * `bits` (mant_bits stored mantissa bits, exp_bits exponent bits, at most
 * 64 bits in all: 52/11 float64, 23/8 float32, 10/5 float16, 7/8
 * bfloat16), but with the digits of the exact search
 * (dtoa_shortest_exact) for every width, where render_fixed uses
 * Schubfach for float64 and float32: the reference the tests compare
 * with, and bench/numfmt's reference row. buf as for render_fixed;
 * returns the length. */
size_t render_float_exact(uint64_t bits, int mant_bits, int exp_bits,
                          char *buf);

/* Most brackets render_optional_null writes on each side. */
#define RENDER_OPTIONAL_MAX_LEVEL 16

/* The text of a zarrs.optional value missing inside `level` present layers
 * ("null", "[null]", "[[null]]", ...) into buf (at least RENDER_FIXED_MAX
 * bytes, not NUL-terminated); returns its length. */
size_t render_optional_null(unsigned level, char *buf);

/* Whether a present optional string s[0, n) is written with a backslash in
 * front, so that it never reads as a missing value: 1 when it is "null"
 * inside any number of bracket pairs ("null", "[null]", ...) or starts
 * with a backslash itself, else 0. */
int render_optional_escaped(const uint8_t *s, size_t n);

/* Text length of a variable-length element of nbytes source bytes
 * (string: nbytes, bytes: 2*nbytes). */
uint64_t render_var_len(const struct dtype *dt, uint64_t nbytes);

/* Source byte that holds text position `text_off` of a variable-length
 * element (string: text_off, bytes: text_off/2). */
uint64_t render_var_src_off(const struct dtype *dt, uint64_t text_off);

/* Render text positions [text_off, text_off+len) of a variable-length
 * element into dst. src points at the element's source bytes starting at
 * render_var_src_off(dt, text_off) and holds enough bytes for the range.
 * Strings (not bytes) may be rendered in place: dst may overlap src when
 * it starts at or after it. Strings are their bytes with newlines as
 * spaces: bytes that are not UTF-8 are the caller's (utf8_fix over a
 * whole element, or render_var_run). */
void render_var(const struct dtype *dt, const uint8_t *src, uint64_t text_off,
                size_t len, char *dst);

/* Render text positions [off, end) of the lines of variable-length
 * elements [ja, jb) that lie one after another in their unit (eo: the
 * unit's n+1 absolute byte offsets): each line is the element's text and
 * '\n', the line of ja starting at text position tpos, so the line of j
 * starts at tpos + render_var_len(dt, eo[j] - eo[ja]) + (j - ja). dst is
 * text position off; only the positions the run covers inside [off, end)
 * are written, byte for byte what render_var and a newline per element
 * give, strings with their bytes that are not UTF-8 as '?' (utf8_fix of
 * each whole element). src[x - sbase] is source byte x for x in [sbase,
 * sbase + slen), which holds every byte of the range and, for strings,
 * the RENDER_UTF8_CONTEXT bytes of an element either side of the range
 * that lie in the element (a byte is judged with its neighbours).
 * Strings are copied in long pieces, then their newlines and bytes that
 * are not UTF-8 found by one scan that skips ASCII runs fast. Returns
 * how many bytes of strings inside [off, end) were not UTF-8 (0 for
 * bytes). */
#define RENDER_UTF8_CONTEXT 3
uint64_t render_var_run(const struct dtype *dt, const uint64_t *eo, uint64_t ja,
                        uint64_t jb, uint64_t tpos, const uint8_t *src,
                        uint64_t sbase, uint64_t slen, uint64_t off,
                        uint64_t end, char *dst);

/* The bytes of string elements [0, n) (eo: their n+1 offsets; buf holds
 * bytes eo[0] .. eo[n]) turned into their text in place, newlines and
 * separators left out: each '\n' a space, each byte that is not part of
 * a well-formed UTF-8 sequence of its element '?'. One scan skipping
 * ASCII runs fast. Returns how many bytes were not UTF-8. */
uint64_t render_str_fix(const uint64_t *eo, uint64_t n, uint8_t *buf);

#endif
