/* csvfield.h - one value as a field of an RFC 4180 table (D.csv,
 * fs/views/table.h):
 *   text     written as it is, inside double quotes when it holds a comma,
 *            a double quote, CR or LF (each quote then doubled; newlines
 *            kept exactly, so a field may span lines)
 *   missing  an empty field: a number's `nan`, a time's `NaT` (as
 *            pandas.to_csv writes NaN and NaT, and as read_csv reads them)
 *   floats   an integral value keeps a `.0` (`1.0`, `-0.0`), which the
 *            float rule of views leaves out, so that readers that guess
 *            a column's type (pandas.read_csv) read floats as floats
 *   bytes    lowercase hex, two characters per byte (never quoted)
 * Pure functions, no allocation, thread-safe. */
#ifndef ZARRFS_CSVFIELD_H
#define ZARRFS_CSVFIELD_H

#include <stddef.h>
#include <stdint.h>

/* Does s[0, n) need quotes (a comma, a quote, CR or LF in it)? */
int csvfield_needs_quotes(const char *s, size_t n);

/* Bytes s[0, n) takes as a field: n, or n + 2 + its quotes when quoted. */
size_t csvfield_len(const char *s, size_t n);

/* Write s[0, n) as a field into dst (csvfield_len bytes); returns that
 * length. */
size_t csvfield_put(const char *s, size_t n, char *dst);

/* Is the text a value views show for a missing number or time (`nan`,
 * `NaT`, a complex `nan+nanj`), written as an empty field? Only for the text of
 * a number, a time or a bool: a string "nan" is a string. */
int csvfield_is_missing(const char *s, size_t n);

/* Is s[0, n) a float's text written without a point or an exponent (an
 * optional '-' then digits), which a field of a float gets `.0` after? */
int csvfield_float_integral(const char *s, size_t n);

/* Write b[0, n) as lowercase hex into dst (2n bytes); returns 2n. */
size_t csvfield_hex(const uint8_t *b, size_t n, char *dst);

#endif
