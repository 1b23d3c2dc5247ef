/* rnum.c - runs of numbers -> lines of text (see rnum.h).
 *
 * The text is render.c's (render.h's contract), made with fewer branches
 * and no byte loops, because a run may leave scratch past each text:
 *   - integers below 10^8 become 8 digit bytes in one 64-bit register
 *     (dtoa_swar8: multiplications, no division), the leading zeros are
 *     counted with ctz and shifted out, and the 8 bytes are stored at
 *     once; with SSE2, two such values at a time in one register; wider
 *     values are two such blocks, or dtoa_u64 past 10^16;
 *   - floats take Schubfach's digits in registers (fs/text/dtoa.c's struct
 *     dtoa_dec: 17 digits, '0' padded) and are laid out by fixed 8-byte
 *     stores: the plain form writes all 17 digits, then the point and the
 *     digits after it shifted by one, and the length alone says which
 *     digits count. The digits of a block of elements are searched before
 *     its lines are written (rnum_floats); float64's in one call
 *     (dtoa_dec_f64_run), whose loop has the search inlined.
 * Little-endian hosts only for the SWAR store; elsewhere the integers go
 * through dtoa_u64. */
#include "rnum.h"

#include <stdint.h>
#include <string.h>

#include "dtoa.h"

#if defined(__SSE2__) && DTOA_SWAR
#define RNUM_PAIRS 1
#else
#define RNUM_PAIRS 0
#endif

/* Decimal of v >= 10^8 at p: two blocks of 8 below 10^16 (scratch past
 * the digits), else dtoa_u64; returns the digit count. Out of line: the
 * hot loop keeps only the common case. */
static __attribute__((noinline)) size_t rnum_u64_wide(uint64_t v, char *p) {
#if DTOA_SWAR
  if (v < 10000000000ull) { /* 9 or 10 digits: every large 32-bit value */
    uint32_t hi = (uint32_t)(v / 100000000); /* 1..99 */
    size_t nh = 1 + (hi >= 10);
    /* one or two digits from the pair table: for hi < 10 the digit and
     * the next pair's first character, which the block below overwrites */
    memcpy(p, dtoa_pairs + 2 * hi + (hi < 10), 2);
    uint64_t w =
        dtoa_swar8((uint32_t)(v - (uint64_t)hi * 100000000)) + DTOA_ZEROS8;
    memcpy(p + nh, &w, 8);
    return nh + 8;
  }
  if (v < 10000000000000000ull) {
    uint64_t hi = v / 100000000;
    uint64_t x = dtoa_swar8((uint32_t)hi);
    unsigned z = (unsigned)__builtin_ctzll(x) >> 3; /* hi > 0 */
    uint64_t w = (x + DTOA_ZEROS8) >> (8 * z);
    memcpy(p, &w, 8);
    w = dtoa_swar8((uint32_t)(v - hi * 100000000)) + DTOA_ZEROS8;
    memcpy(p + 8 - z, &w, 8);
    return 16 - z;
  }
#endif
  return dtoa_u64(v, p);
}

/* Decimal of v at p, 8 bytes stored at once (scratch past the digits);
 * returns the digit count. */
static inline __attribute__((always_inline)) size_t rnum_u64(uint64_t v,
                                                             char *p) {
#if DTOA_SWAR
  if (__builtin_expect(v < 100000000, 1)) {
    uint64_t x = dtoa_swar8((uint32_t)v);
    /* leading zero digits; the last digit always counts */
    unsigned z = (unsigned)__builtin_ctzll(x | (uint64_t)1 << 56) >> 3;
    uint64_t w = (x + DTOA_ZEROS8) >> (8 * z);
    memcpy(p, &w, 8);
    return 8 - z;
  }
#endif
  return rnum_u64_wide(v, p);
}

/* Whether v is negative (a function: in the loops below the test is made
 * on unsigned types too, for which an inline comparison would warn). */
static inline int rnum_neg(int64_t v) { return v < 0; }

#if RNUM_PAIRS
/* The digits of two values below 10^8 at once, one in each 64-bit half
 * of an SSE2 register (dtoa_swar8x2, as a float's two blocks are made);
 * each half is dtoa_swar8's register with its leading zero digits shifted
 * out (the last digit always counts). Writes
 * the ASCII registers to w[0..1] and their lengths to len[0..1]. */
static inline __attribute__((always_inline)) void
rnum_pair8(uint32_t a, uint32_t b, uint64_t w[2], unsigned len[2]) {
  __m128i vx = dtoa_swar8x2(a, b);
  /* leading zero digits: the low bytes of each half that are 0 */
  unsigned zero =
      (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(vx, _mm_setzero_si128()));
  unsigned za = (unsigned)__builtin_ctz(~zero | 0x80);
  unsigned zb = (unsigned)__builtin_ctz(~(zero >> 8) | 0x80);
  vx = _mm_add_epi8(vx, _mm_set1_epi8('0'));
  uint64_t lo = (uint64_t)_mm_cvtsi128_si64(vx);
  uint64_t hi = (uint64_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(vx, vx));
  w[0] = lo >> (8 * za);
  w[1] = hi >> (8 * zb);
  len[0] = 8 - za;
  len[1] = 8 - zb;
}
#endif

/* An integer's line at dst + o: the sign when neg, the digits of mag;
 * returns the end. */
static inline __attribute__((always_inline)) size_t
rnum_int_line(char *dst, size_t o, int neg, uint64_t mag) {
  dst[o] = '-'; /* overwritten when not negative */
  o += (size_t)neg;
  o += rnum_u64(mag, dst + o);
  dst[o++] = '\n';
  return o;
}

/* Lines of n integers of type T at s (SIGNED: two's complement), two at
 * a time where both magnitudes are below 10^8 (rnum_pair8), else one by
 * one; o advances past them. */
#define RNUM_INTS(T, SIGNED)                                                   \
  do {                                                                         \
    size_t i = 0;                                                              \
    RNUM_INT_PAIRS(T, SIGNED);                                                 \
    for (; i < n; i++) {                                                       \
      T v;                                                                     \
      memcpy(&v, s + i * sizeof(T), sizeof(T));                                \
      int ng = (SIGNED) && rnum_neg((int64_t)v);                               \
      o = rnum_int_line(                                                       \
          dst, o, ng, ng ? (uint64_t)0 - (uint64_t)(int64_t)v : (uint64_t)v);  \
    }                                                                          \
  } while (0)

#if RNUM_PAIRS
/* The pairs of RNUM_INTS: one rnum_pair8 for two values below 10^8. */
#define RNUM_INT_PAIRS(T, SIGNED)                                              \
  for (; i + 1 < n; i += 2) {                                                  \
    T v0, v1;                                                                  \
    memcpy(&v0, s + i * sizeof(T), sizeof(T));                                 \
    memcpy(&v1, s + (i + 1) * sizeof(T), sizeof(T));                           \
    int n0 = (SIGNED) && rnum_neg((int64_t)v0);                                \
    int n1 = (SIGNED) && rnum_neg((int64_t)v1);                                \
    uint64_t a0 = n0 ? (uint64_t)0 - (uint64_t)(int64_t)v0 : (uint64_t)v0;     \
    uint64_t a1 = n1 ? (uint64_t)0 - (uint64_t)(int64_t)v1 : (uint64_t)v1;     \
    if (__builtin_expect((a0 | a1) >= 100000000, 0)) {                         \
      o = rnum_int_line(dst, rnum_int_line(dst, o, n0, a0), n1, a1);           \
      continue;                                                                \
    }                                                                          \
    uint64_t w[2];                                                             \
    unsigned len[2];                                                           \
    rnum_pair8((uint32_t)a0, (uint32_t)a1, w, len);                            \
    for (int h = 0; h < 2; h++) {                                              \
      dst[o] = '-';                                                            \
      o += (size_t)(h ? n1 : n0);                                              \
      memcpy(dst + o, &w[h], 8);                                               \
      o += len[h];                                                             \
      dst[o++] = '\n';                                                         \
    }                                                                          \
  }
#else
#define RNUM_INT_PAIRS(T, SIGNED) (void)0
#endif

/* Lay out the digits of *dc at p + o (o: 1 after a sign, else 0): plain
 * for an exponent x in [-4, 16), else d.ddde+XX. The digits go from
 * registers straight to p with 8-byte stores (none is read back, so no
 * store has to be forwarded to a wider load). Returns the end of the
 * text. */
static inline __attribute__((always_inline)) size_t
rnum_place(const struct dtoa_dec *dc, size_t o, char *p) {
  uint64_t hi = dc->block[0] + DTOA_ZEROS8, lo = dc->block[1] + DTOA_ZEROS8;
  char first = (char)('0' + dc->first);
  int n = dc->len, x = dc->x10;
  char *q = p + o;
  if (__builtin_expect((unsigned)x < 16, 1)) {
    /* all 17 digits (the integer part's padding '0's included), then the
     * point after x + 1 of them and the digits from there, shifted out of
     * the two blocks; an integral value ends before the point */
    q[0] = first;
    dtoa_store8(q + 1, hi);
    dtoa_store8(q + 9, lo);
#ifdef __SIZEOF_INT128__
    unsigned __int128 frac = ((unsigned __int128)lo << 64 | hi) >> (8 * x);
    q[x + 1] = '.';
    dtoa_store8(q + x + 2, (uint64_t)frac);
    dtoa_store8(q + x + 10, (uint64_t)(frac >> 64));
#else
    char d[17];
    memcpy(d, q, 17);
    q[x + 1] = '.';
    memcpy(q + x + 2, d + x + 1, (size_t)(16 - x));
#endif
    return o + (size_t)(n > x + 1 ? n + 1 : x + 1);
  }
  if (x < 0 && x >= -4) { /* "0.", -x-1 zeros, the digits */
    memcpy(q, "0.000000", 8);
    q[1 - x] = first;
    dtoa_store8(q + 2 - x, hi);
    dtoa_store8(q + 10 - x, lo);
    return o + (size_t)(1 - x + n);
  }
  q[0] = first;
  q[1] = '.';
  dtoa_store8(q + 2, hi);
  dtoa_store8(q + 10, lo);
  o += n > 1 ? (size_t)n + 1 : 1;
  p[o] = 'e';
  p[o + 1] = x < 0 ? '-' : '+';
  unsigned ax = (unsigned)(x < 0 ? -x : x); /* at most 324 */
  p[o + 2] = (char)('0' + ax / 100);
  o += 2 + (ax >= 100);
  memcpy(p + o, dtoa_pairs + 2 * (ax % 100), 2);
  return o + 2;
}

/* How a float is written: zero, infinities and NaNs as fixed words; an
 * integral value with a gap of at most 1 as exactly its integer (both
 * "plain": dtoa_dec_f64_run and dtoa_dec_f32_run give them len 0); any
 * other by its shortest digits. */

/* Text at p of the float with bit pattern b that has no digits to lay
 * out (plain, above); o is 1 after the sign, else 0. Returns
 * the length. */
static inline __attribute__((always_inline)) size_t
rnum_float_plain(uint64_t b, int mb, int eb, size_t o, char *p) {
  unsigned emax = (1u << eb) - 1;
  unsigned ef = (unsigned)(b >> mb) & emax;
  uint64_t m = b & (((uint64_t)1 << mb) - 1);
  if (ef == emax) {
    if (m) {
      memcpy(p, "nan", 3);
      return 3;
    }
    memcpy(p + o, "inf", 3);
    return o + 3;
  }
  if (ef == 0) { /* zero: a subnormal has digits */
    p[o] = '0';
    return o + 1;
  }
  int e = (int)ef - (int)emax / 2 - mb;
  return o + rnum_u64((m | (uint64_t)1 << mb) >> -e, p + o);
}

/* Elements to a block of floats: the digits of those that need them are
 * searched first, then the lines written. The searches do not depend on
 * one another, so the processor overlaps several; between them, a line's
 * stores (which wait for the previous line's length) would leave fewer
 * in flight. */
#define RNUM_FBLOCK 64

/* The bit pattern of float j at s (float64 when mb is 52, else
 * float32). */
static inline uint64_t rnum_float_bits(const unsigned char *s, size_t j,
                                       int mb) {
  if (mb == 52) {
    uint64_t b;
    memcpy(&b, s + j * 8, 8);
    return b;
  }
  uint32_t b32;
  memcpy(&b32, s + j * 4, 4);
  return b32;
}

/* The digits of n <= RNUM_FBLOCK floats (float64 when mb is 52, else
 * float32) at s into dec, len 0 for the plain ones (written by
 * rnum_float_plain). The loops are dtoa.c's, where the digit search
 * inlines into them. */
static inline __attribute__((always_inline)) void
rnum_float_digits(const unsigned char *s, size_t n, int mb,
                  struct dtoa_dec *dec) {
  if (mb == 52) {
    dtoa_dec_f64_run(s, n, dec);
    return;
  }
  dtoa_dec_f32_run(s, n, dec);
}

/* Decimal digits of v (1 for 0). */
static inline size_t rnum_digits(uint64_t v) {
  return (size_t)dtoa_dec_len(v | (v == 0));
}

/* The length rnum_place gives *dc after o sign bytes. */
static inline size_t rnum_layout_len(const struct dtoa_dec *dc, size_t o) {
  int n = dc->len, x = dc->x10;
  if ((unsigned)x < 16)
    return o + (size_t)(n > x + 1 ? n + 1 : x + 1);
  if (x < 0 && x >= -4)
    return o + (size_t)(1 - x + n);
  unsigned ax = (unsigned)(x < 0 ? -x : x);
  return o + (n > 1 ? (size_t)n + 1 : 1) + 4 + (ax >= 100);
}

/* The length rnum_float_plain gives the float b (no digits to lay out)
 * after o sign bytes. */
static inline size_t rnum_float_plain_len(uint64_t b, int mb, int eb,
                                          size_t o) {
  unsigned emax = (1u << eb) - 1;
  unsigned ef = (unsigned)(b >> mb) & emax;
  uint64_t m = b & (((uint64_t)1 << mb) - 1);
  if (ef == emax)
    return m ? 3 : o + 3; /* "nan" has no sign */
  if (ef == 0)
    return o + 1;
  int e = (int)ef - (int)emax / 2 - mb;
  return o + rnum_digits((m | (uint64_t)1 << mb) >> -e);
}

/* Lines of n floats (float64 when mb is 52, else float32) at s; with
 * dst NULL, only their length (rnum_size: the shortest digits are still
 * searched, as their count and exponent decide it). */
static inline __attribute__((always_inline)) size_t
rnum_floats(const unsigned char *s, size_t n, int mb, int eb, char *dst) {
  size_t w = (size_t)(mb + eb + 1) / 8, o = 0;
  struct dtoa_dec dec[RNUM_FBLOCK]; /* len 0: no digits (rnum_float_plain) */
  for (size_t i0 = 0; i0 < n; i0 += RNUM_FBLOCK) {
    size_t m = n - i0 < RNUM_FBLOCK ? n - i0 : RNUM_FBLOCK;
    const unsigned char *sb = s + i0 * w;
    rnum_float_digits(sb, m, mb, dec);
    for (size_t j = 0; j < m; j++) {
      uint64_t b = rnum_float_bits(sb, j, mb);
      size_t sign = (size_t)(b >> (mb + eb)) & 1;
      if (!dst) {
        o += 1 + (dec[j].len ? rnum_layout_len(&dec[j], sign)
                             : rnum_float_plain_len(b, mb, eb, sign));
        continue;
      }
      char *p = dst + o;
      p[0] = '-'; /* overwritten when not negative */
      if (__builtin_expect(dec[j].len != 0, 1))
        o += rnum_place(&dec[j], sign, p);
      else
        o += rnum_float_plain(b, mb, eb, sign, p);
      dst[o++] = '\n';
    }
  }
  return o;
}

/* The integer kinds of rnum_run and rnum_size, as X(kind, type, signed). */
#define RNUM_INT_KINDS(X)                                                      \
  X(DT_INT8, int8_t, 1)                                                        \
  X(DT_INT16, int16_t, 1)                                                      \
  X(DT_INT32, int32_t, 1)                                                      \
  X(DT_INT64, int64_t, 1)                                                      \
  X(DT_UINT8, uint8_t, 0)                                                      \
  X(DT_UINT16, uint16_t, 0)                                                    \
  X(DT_UINT32, uint32_t, 0)                                                    \
  X(DT_UINT64, uint64_t, 0)

/* ---- sizes without text (rnum_size) ---- */

/* Lines' bytes of n integers of type T at s (SIGNED: two's complement):
 * each a sign when negative, its digits and a newline. */
#define RNUM_INT_SIZES(T, SIGNED)                                              \
  do {                                                                         \
    for (size_t i = 0; i < n; i++) {                                           \
      T v;                                                                     \
      memcpy(&v, s + i * sizeof(T), sizeof(T));                                \
      int ng = (SIGNED) && rnum_neg((int64_t)v);                               \
      o += (size_t)ng + 1 +                                                    \
           rnum_digits(ng ? (uint64_t)0 - (uint64_t)(int64_t)v : (uint64_t)v); \
    }                                                                          \
  } while (0)

/* See rnum.h. */
size_t rnum_size(enum dtype_kind kind, const void *src, size_t n) {
  const unsigned char *s = src;
  size_t o = 0;
  switch (kind) {
#define RNUM_CASE(K, T, SIGNED)                                                \
  case K:                                                                      \
    RNUM_INT_SIZES(T, SIGNED);                                                 \
    break;
    RNUM_INT_KINDS(RNUM_CASE)
#undef RNUM_CASE
  case DT_FLOAT32:
    o = rnum_floats(s, n, 23, 8, NULL);
    break;
  case DT_FLOAT64:
    o = rnum_floats(s, n, 52, 11, NULL);
    break;
  default:
    break;
  }
  return o;
}

/* Whether rnum_run takes the kind. */
int rnum_has(enum dtype_kind kind) {
  switch (kind) {
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_UINT16:
  case DT_UINT32:
  case DT_UINT64:
  case DT_FLOAT32:
  case DT_FLOAT64:
    return 1;
  default:
    return 0;
  }
}

/* Lines of a run (see rnum.h). */
size_t rnum_run(enum dtype_kind kind, const void *src, size_t n, char *dst) {
  const unsigned char *s = src;
  size_t o = 0;
  switch (kind) {
#define RNUM_CASE(K, T, SIGNED)                                                \
  case K:                                                                      \
    RNUM_INTS(T, SIGNED);                                                      \
    break;
    RNUM_INT_KINDS(RNUM_CASE)
#undef RNUM_CASE
  case DT_FLOAT32:
    o = rnum_floats(s, n, 23, 8, dst);
    break;
  case DT_FLOAT64:
    o = rnum_floats(s, n, 52, 11, dst);
    break;
  default:
    break;
  }
  return o;
}
