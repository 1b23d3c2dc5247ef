/* dtoa.h - numbers -> decimal digits: shortest round-trip digits of
 * binary64 and binary32 values (Dragonbox and Schubfach, fast), of any
 * IEEE binary float up to 64 bits (an exact search, slower), and unsigned
 * integers.
 *
 * This module owns digit generation only; fs/text/render.c owns the text
 * format (sign, point, exponent, nan/inf). Pure functions on const tables:
 * no allocation, no locale, no global mutable state, thread-safe. */
#ifndef ZARRFS_DTOA_H
#define ZARRFS_DTOA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* Shortest digits held in registers, for callers that lay text out with
 * wide stores (fs/text/rnum.c): the digits of dtoa_shortest_f64/f32 as 17
 * digit values, the first and two blocks of 8 in dtoa_swar8's order (the
 * earlier digit in the lower byte), padded with 0s. */
struct dtoa_dec {
  uint64_t block[2]; /* digits 1..8 and 9..16 as byte values 0..9 */
  unsigned first;    /* digit 0, 1..9 */
  int len;           /* significant digits, 1..17 (the last one not 0) */
  int x10;           /* decimal exponent of digit 0 */
};

/* dtoa_shortest_f64 into *dec: returns the count of digits (dec->len),
 * or 0 (*dec untouched) for zero, infinities and NaNs. */
int dtoa_dec_f64(uint64_t bits, struct dtoa_dec *dec);

/* dtoa_dec_f64 of the n binary64 values at src (8 bytes each, host
 * order, any alignment) into dec[0..n-1], for the text views' runs
 * (fs/text/rnum.c): dec[i].len is 0 for zero, infinities and NaNs, and
 * also for integral values below 2^53 in magnitude, which those callers
 * write as integers (the other fields then undefined). */
void dtoa_dec_f64_run(const void *src, size_t n, struct dtoa_dec *dec);

/* The same at binary32 precision. */
int dtoa_dec_f32(uint32_t bits, struct dtoa_dec *dec);

/* dtoa_dec_f64_run for n binary32 values at src: len 0 for zero,
 * infinities, NaNs and integral values below 2^24 in magnitude. */
void dtoa_dec_f32_run(const void *src, size_t n, struct dtoa_dec *dec);

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

/* 10^i for i in 0..19. */
extern const uint64_t dtoa_pow10_u64[20];

/* Number of decimal digits of v > 0: the bit length times log10(2)
 * (1233 / 4096, never above it) is the count or one below. */
static inline int dtoa_dec_len(uint64_t v) {
  int t = ((64 - __builtin_clzll(v)) * 1233) >> 12;
  return t + (v >= dtoa_pow10_u64[t]);
}

/* Decimal digits of v into buf (at least DTOA_U64_MAX bytes, not
 * NUL-terminated); returns their count. */
size_t dtoa_u64(uint64_t v, char *buf);

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define DTOA_SWAR 1 /* dtoa_swar8 stores in digit order */
#else
#define DTOA_SWAR 0
#endif

/* Eight ASCII '0's, to add to dtoa_swar8's byte values. */
#define DTOA_ZEROS8 0x3030303030303030ull

/* The 8 decimal digits of r < 10^8 as byte values 0..9 in one register,
 * the first digit in the lowest byte (the first in memory where
 * DTOA_SWAR is 1, a little-endian host; add DTOA_ZEROS8 and store the 8
 * bytes at once): split into two lanes of 4 digits, then 2, then 1,
 * with y / 100 = y * 5243 >> 19 (y < 10^4) and z / 10 = z * 103 >> 10
 * (z < 100), each lane too small to reach the next. A lane's quotient q
 * and remainder y - q * d become q | (y - q * d) << w in one multiply,
 * as (y << w) - q * ((d << w) - 1): every lane's result is non-negative
 * and fits its lane, so no borrow crosses lanes. */
static inline uint64_t dtoa_swar8(uint32_t r) {
  uint64_t q = r / 10000;
  uint64_t x = ((uint64_t)r << 32) - q * ((10000ull << 32) - 1);
  q = (x * 5243 >> 19) & 0x0000007f0000007full;
  x = (x << 16) - q * ((100ull << 16) - 1);
  q = (x * 103 >> 10) & 0x000f000f000f000full;
  return (x << 8) - q * ((10ull << 8) - 1);
}

#ifdef __SSE2__
/* dtoa_swar8 of a (the low 8 bytes) and of b (the high 8) at once, lane
 * by lane: 32-bit lanes of 4 digits (y / 10^4 = y * 109951163 >> 40 for
 * y < 10^8), 16-bit lanes of 2 (z / 100 = z * 20972 >> 21 for z < 10^4),
 * bytes (for w < 100, w * 6554 = 2^16 (w / 10) + f with w % 10 =
 * f * 10 >> 16). The 100 goes through an empty asm: GCC would turn the
 * multiply into five shifts and adds. */
static inline __m128i dtoa_swar8x2(uint32_t a, uint32_t b) {
  __m128i c100 = _mm_set1_epi16(100), c6554 = _mm_set1_epi16(6554);
  __asm__("" : "+x"(c100));
  __m128i vx = _mm_set_epi64x((long long)b, (long long)a);
  __m128i vq =
      _mm_srli_epi64(_mm_mul_epu32(vx, _mm_set1_epi64x(109951163)), 40);
  vx = _mm_sub_epi32(vx, _mm_mul_epu32(vq, _mm_set1_epi64x(10000)));
  vx = _mm_or_si128(vq, _mm_slli_epi64(vx, 32));
  vq = _mm_srli_epi16(_mm_mulhi_epu16(vx, _mm_set1_epi16(20972)), 5);
  vx = _mm_sub_epi16(vx, _mm_mullo_epi16(vq, c100));
  vx = _mm_or_si128(vq, _mm_slli_epi32(vx, 16));
  vq = _mm_mulhi_epu16(vx, c6554);
  vx = _mm_mulhi_epu16(_mm_mullo_epi16(vx, c6554), _mm_set1_epi16(10));
  return _mm_or_si128(vq, _mm_slli_epi16(vx, 8));
}
#endif

/* Store 8 digit bytes in dtoa_swar8's order at p (the first at p[0]), on
 * any host. */
static inline void dtoa_store8(char *p, uint64_t x) {
#if !DTOA_SWAR
  x = __builtin_bswap64(x);
#endif
  memcpy(p, &x, 8);
}

#endif
