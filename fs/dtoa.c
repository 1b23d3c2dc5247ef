/* dtoa.c - shortest round-trip digits of binary64/binary32 values and
 * decimal integers (see dtoa.h).
 *
 * The float digits follow Schubfach (Raffaello Giulietti, "The Schubfach
 * way to render doubles", 2020-2021), written here from the paper's
 * description. For v = c * 2^q, let R be the rounding interval of v (the
 * reals that read back as v), of width 2^q, or 3/4 * 2^q at a power of
 * two where the gap below is half the gap above ("irregular"). Pick the
 * decimal exponent k with 10^k <= width(R) < 10^(k+1). Then:
 *   - R holds at least one multiple of 10^k (its width is at least 10^k),
 *     and among them s*10^k or (s+1)*10^k with s = floor(v / 10^k), as
 *     these bracket v;
 *   - R holds at most one multiple of 10^(k+1) (its width is below);
 *   - no decimal with a digit below 10^k is shorter than the best
 *     multiple of 10^k, so only two decimal positions need looking at.
 * If R holds a multiple of 10^(k+1), it is the one next below or above
 * s, and it is the shortest: return it. Otherwise return whichever of s,
 * s+1 is in R, or the closer when both are (ties: the even one). The one
 * exception, a single-digit s (only the few smallest subnormals), is left
 * to that second rule, because there 10 * 10^k and s * 10^k have the same
 * length and the closer must win.
 *
 * All of this needs v/10^k and the ends of R scaled by 10^-k, compared
 * exactly with integers. Each is computed as 4x (two fraction bits) from
 * one 126-bit approximation of 10^-k (fs/dtoa_pow10.h, rounded up) and
 * rounded to odd: the lowest bit records "inexact", so comparing with an
 * even integer (4s, 4(s+1), 2(2s+1), ...) gives the exact answer. The
 * paper proves the 126-bit table is precise enough for every binary64
 * value. binary32 uses the same table and code; all 2^32 binary32
 * patterns have been compared with the exact big-integer search in
 * render.c (check_dtoa's exhaustive mode), and check_dtoa compares
 * millions of binary64 values with it on every run.
 *
 * Integers: two digits at a time from a 200-byte table, back to front
 * from the end the length gives, in 32-bit arithmetic below 10^8. The
 * float significand is scaled to exactly 17 digits and written as fixed
 * blocks instead (its own buffer, so writing padding is fine). */
#include "dtoa.h"

#include <string.h>

#include "dtoa_pow10.h"

/* ---- integers ---- */

/* The two decimal digits of every value 0..99 (no NUL: 200 bytes). */
const char dtoa_pairs[200] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

/* 10^i for i in 0..19. */
static const uint64_t dtoa_pow10_u64[20] = {1ull,
                                            10ull,
                                            100ull,
                                            1000ull,
                                            10000ull,
                                            100000ull,
                                            1000000ull,
                                            10000000ull,
                                            100000000ull,
                                            1000000000ull,
                                            10000000000ull,
                                            100000000000ull,
                                            1000000000000ull,
                                            10000000000000ull,
                                            100000000000000ull,
                                            1000000000000000ull,
                                            10000000000000000ull,
                                            100000000000000000ull,
                                            1000000000000000000ull,
                                            10000000000000000000ull};

/* Number of decimal digits of v > 0: the bit length times log10(2)
 * (1233 / 4096, never above it) is the count or one below. */
static inline int dtoa_dec_len(uint64_t v) {
  int t = ((64 - __builtin_clzll(v)) * 1233) >> 12;
  return t + (v >= dtoa_pow10_u64[t]);
}

/* Exactly 8 digits of r < 10^8 at p. */
static inline void dtoa_put8(uint32_t r, char *p) {
  uint32_t hi = r / 10000, lo = r % 10000;
  memcpy(p, dtoa_pairs + 2 * (hi / 100), 2);
  memcpy(p + 2, dtoa_pairs + 2 * (hi % 100), 2);
  memcpy(p + 4, dtoa_pairs + 2 * (lo / 100), 2);
  memcpy(p + 6, dtoa_pairs + 2 * (lo % 100), 2);
}

/* The digits of v, the last one just before `end`. 64-bit division only
 * splits off blocks of 8 digits; the rest is 32-bit, which is cheaper. */
static inline void dtoa_put_digits(uint64_t v, char *end) {
  while (v >= 100000000) {
    uint64_t q = v / 100000000;
    end -= 8;
    dtoa_put8((uint32_t)(v - q * 100000000), end);
    v = q;
  }
  uint32_t w = (uint32_t)v;
  while (w >= 100) {
    uint32_t q = w / 100;
    end -= 2;
    memcpy(end, dtoa_pairs + 2 * (w - q * 100), 2);
    w = q;
  }
  /* The first one or two digits (w < 100) before the others; whether
   * one or two is a coin toss for mixed data, so no branch: the pair's
   * first character ('0' when w < 10) is overwritten by its second. */
  end -= 1 + (w >= 10);
  end[0] = dtoa_pairs[2 * w];
  end[w >= 10] = dtoa_pairs[2 * w + 1];
}

/* Decimal of v: the length first, so the digits go straight to their
 * place, back to front, and nothing is written past them (render.h
 * promises that of every text). */
size_t dtoa_u64(uint64_t v, char *buf) {
  int n = dtoa_dec_len(v | 1); /* v | 1 has as many digits; v may be 0 */
  dtoa_put_digits(v, buf + n);
  return (size_t)n;
}

/* ---- floats ---- */

/* floor(log10(2^q)), floor(log10(3/4 * 2^q)) and floor(log2(10^e)) by
 * multiply and shift; tools/gen_dtoa_pow10.py checks them over every
 * q and e used here. The shifts of negative values rely on GCC and Clang
 * shifting signed integers arithmetically (rounding toward -inf). */
static inline int dtoa_flog10_pow2(int q) {
  return (int)(((int64_t)q * 661971961083) >> 41);
}
static inline int dtoa_flog10_3q_pow2(int q) {
  return (int)(((int64_t)q * 661971961083 - 274743187321) >> 41);
}
static inline int dtoa_flog2_pow10(int e) {
  return (int)(((int64_t)e * 913124641741) >> 38);
}

/* High 64 bits of a * b; the low 64 bits in *lo. */
static inline uint64_t dtoa_mul64(uint64_t a, uint64_t b, uint64_t *lo) {
#ifdef __SIZEOF_INT128__
  unsigned __int128 p = (unsigned __int128)a * b;
  *lo = (uint64_t)p;
  return (uint64_t)(p >> 64);
#else
  uint64_t a0 = (uint32_t)a, a1 = a >> 32, b0 = (uint32_t)b, b1 = b >> 32;
  uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
  uint64_t mid = (p00 >> 32) + (uint32_t)p01 + (uint32_t)p10;
  *lo = mid << 32 | (uint32_t)p00;
  return p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
#endif
}

/* floor(g * cp / 2^127), rounded to odd, for g = {hi, lo} from the table
 * and cp < 2^60. The low 64 bits of lo * cp are dropped before the sticky
 * bit is taken: g exceeds the exact scaled 10^-k by at most 1, so the
 * product exceeds the exact one by less than cp < 2^64, and that error
 * lives in exactly those bits. An exact product (a multiple of 2^127)
 * thus still gives a clear sticky bit; for inexact ones the paper shows
 * that bits 64 to 126 are never all zero and that the error never
 * carries into bit 127, so floor and sticky bit are the exact ones. */
static inline uint64_t dtoa_round_odd(const uint64_t g[2], uint64_t cp) {
  uint64_t x_lo, y_lo;
  uint64_t x_hi = dtoa_mul64(g[1], cp, &x_lo);
  uint64_t y_hi = dtoa_mul64(g[0], cp, &y_lo);
  uint64_t z_lo = y_lo + x_hi;
  uint64_t z_hi = y_hi + (z_lo < x_hi);
  uint64_t sticky = (z_lo & (((uint64_t)1 << 63) - 1)) != 0;
  return (z_hi << 1 | z_lo >> 63) | sticky;
}

/* Shortest digits of c * 2^q (c > 0): the search in the file comment.
 * `irregular` is set at a power of two whose gap below is half the gap
 * above. Writes the digits to d and the first digit's exponent to *x10;
 * returns the count. */
static int dtoa_digits(uint64_t c, int q, int irregular, char *d, int *x10) {
  /* The interval is closed when c is even (readers round ties to even),
   * open otherwise: `open` is added to a lower end and to a candidate
   * checked against the upper end to make the comparisons strict. */
  uint64_t open = c & 1;
  uint64_t cb = c << 2; /* 4c: two fraction bits for the interval ends */
  uint64_t cbr = cb + 2, cbl;
  int k;
  if (irregular) {
    cbl = cb - 1;
    k = dtoa_flog10_3q_pow2(q);
  } else {
    cbl = cb - 2;
    k = dtoa_flog10_pow2(q);
  }
  /* g * 2^h / 2^127 = 2^q * 10^-k with h in [2, 5] (checked by the
   * generator), so (4c + 2) << h stays below 2^60. */
  int h = q + dtoa_flog2_pow10(-k) + 2;
  const uint64_t *g = dtoa_pow10_g[k - DTOA_K_MIN];
  uint64_t vb = dtoa_round_odd(g, cb << h);   /* 4 v 10^-k */
  uint64_t vbl = dtoa_round_odd(g, cbl << h); /* 4 low end 10^-k */
  uint64_t vbr = dtoa_round_odd(g, cbr << h); /* 4 high end 10^-k */
  uint64_t s = vb >> 2, t = s + 1;
  /* Membership of s, s + 1 and of the multiples of 10 next below and
   * above s (at most one of those is in R). All computed, then picked
   * with masks rather than branches (GCC turns ?: here into jumps): for
   * real data each test is a coin toss, and a mispredicted branch costs
   * more than the few compares. */
  uint64_t u10 = s / 10 * 10, w10 = u10 + 10;
  int u10_in = (vbl + open <= u10 << 2) & (s >= 10);
  int w10_in = ((w10 << 2) + open <= vbr) & (s >= 10);
  int u_in = vbl + open <= s << 2;
  int w_in = (t << 2) + open <= vbr;
  /* One of s, s + 1 is always in R; when both are, the closer, the even
   * one on a tie (vb against 4 (s + 1/2)). */
  uint64_t mid = (s << 2) + 2;
  uint64_t take_t =
      (uint64_t)((u_in ^ 1) |
                 (w_in & ((vb > mid) | ((vb == mid) & (int)(s & 1)))));
  uint64_t n = s + take_t;
  n ^= (n ^ w10) & (0 - (uint64_t)w10_in);
  n ^= (n ^ u10) & (0 - (uint64_t)u10_in);
  /* n * 10^k with n < 10^17 (v < 2^53 * 2^q and 2^q < 10^(k+1)). Scaled
   * to exactly 17 digits, written in a fixed sequence, and the padding
   * zeros are dropped with any trailing zeros of n. */
  int len = dtoa_dec_len(n);
  *x10 = k + len - 1;
  uint64_t full = n * dtoa_pow10_u64[DTOA_DIGITS_MAX - len];
  uint32_t top = (uint32_t)(full / 100000000); /* first 9 digits */
  d[0] = (char)('0' + top / 100000000);
  dtoa_put8(top % 100000000, d + 1);
  dtoa_put8((uint32_t)(full - (uint64_t)top * 100000000), d + 9);
  /* A multiple of ten ends in at least one 0: dropped without a test
   * (for real data whether it is one is a coin toss, so a loop that
   * found it would mostly mispredict); the loop finds any further ones,
   * which are rare unless the data are short decimals. */
  len -= u10_in | w10_in;
  while (d[len - 1] == '0') /* the first digit is never 0 */
    len--;
  return len;
}

/* Shortest digits of a binary64 value. */
int dtoa_shortest_f64(uint64_t bits, char *d, int *x10) {
  int ef = (int)(bits >> 52) & 0x7ff;
  uint64_t m = bits & (((uint64_t)1 << 52) - 1);
  if (ef == 0x7ff || (ef == 0 && m == 0))
    return 0;
  if (ef == 0) /* subnormal: the gaps are those of the smallest normal */
    return dtoa_digits(m, -1074, 0, d, x10);
  /* At a power of two the gap below halves, except at the smallest
   * normal, whose neighbour below is the largest subnormal. */
  return dtoa_digits(m | (uint64_t)1 << 52, ef - 1075, m == 0 && ef > 1, d,
                     x10);
}

/* Shortest digits of a binary32 value. */
int dtoa_shortest_f32(uint32_t bits, char *d, int *x10) {
  int ef = (int)(bits >> 23) & 0xff;
  uint32_t m = bits & ((1u << 23) - 1);
  if (ef == 0xff || (ef == 0 && m == 0))
    return 0;
  if (ef == 0)
    return dtoa_digits(m, -149, 0, d, x10);
  return dtoa_digits(m | 1u << 23, ef - 150, m == 0 && ef > 1, d, x10);
}
