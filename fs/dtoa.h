/* dtoa.h - numbers -> decimal digits: shortest round-trip digits of
 * binary64 and binary32 values (Schubfach, fast), of any IEEE binary
 * float up to 64 bits (an exact search, slower), and unsigned integers.
 *
 * This module owns digit generation only; fs/render.c owns the text
 * layout (sign, point, exponent, nan/inf). Pure functions on const tables:
 * no allocation, no locale, no global mutable state, thread-safe. */
#ifndef ZARRFS_DTOA_H
#define ZARRFS_DTOA_H

#include <stddef.h>
#include <stdint.h>

/* Most digits dtoa_shortest_f64/f32 write (17 for binary64, 9 for
 * binary32). */
#define DTOA_DIGITS_MAX 17

/* Most characters dtoa_u64 writes (UINT64_MAX has 20 digits). */
#define DTOA_U64_MAX 20

/* Shortest digits of the binary64 value with bit pattern `bits`, sign bit
 * ignored: the fewest decimal digits that read back (round to nearest,
 * ties to even) to the same value, and among those the closest to it
 * (ties: even last digit). Writes the digits as ASCII to d, then '0's up
 * to exactly DTOA_DIGITS_MAX bytes (so callers may copy fixed-size blocks;
 * not NUL-terminated), the decimal exponent of the first digit to *x10,
 * and returns the count of digits, the last one not 0: the value is
 * d[0].d[1]d[2]... * 10^*x10. Returns 0 (d, *x10 untouched) for zero,
 * infinities and NaNs, which have no digits. */
int dtoa_shortest_f64(uint64_t bits, char *d, int *x10);

/* The same for the binary32 value with bit pattern `bits`: shortest at
 * binary32 precision (at most 9 digits). */
int dtoa_shortest_f32(uint32_t bits, char *d, int *x10);

/* Bytes dtoa_shortest_exact may write to d (its digit loop stops one
 * digit past DTOA_DIGITS_MAX at most). */
#define DTOA_EXACT_MAX 20

/* Shortest digits of the positive finite value f * 2^e (f > 0) at
 * precision p bits with minimum exponent min_e, by an exact search on
 * integers: the fewest digits that lie in the value's rounding interval,
 * and among those the closest to the value. Same output as
 * dtoa_shortest_f64 (digits, '0' padding to DTOA_DIGITS_MAX bytes, *x10,
 * the count); d holds at least DTOA_EXACT_MAX bytes. */
int dtoa_shortest_exact(uint64_t f, int e, int p, int min_e, char *d, int *x10);

/* The two decimal digits of every value 0..99 ("00" "01" ... "99"), for
 * callers that write small numbers themselves. */
extern const char dtoa_pairs[200];

/* Decimal digits of v into buf (at least DTOA_U64_MAX bytes, not
 * NUL-terminated); returns their count. */
size_t dtoa_u64(uint64_t v, char *buf);

#endif
