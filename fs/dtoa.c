/* dtoa.c - shortest round-trip digits of binary64/binary32 values,
 * the exact search for any binary float, and decimal integers (see
 * dtoa.h).
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
 * patterns have been compared with the exact search below (check_dtoa's
 * exhaustive mode), and check_dtoa compares millions of binary64 values
 * with it on every run (10^8 in its opt-in mode).
 *
 * Integers: two digits at a time from a 200-byte table, back to front
 * from the end the length gives, in 32-bit arithmetic below 10^8. The
 * float significand is scaled to exactly 17 digits and kept in registers
 * (struct dtoa_dec): the first digit, then the other 16 as two blocks of
 * digit bytes, made by multiplications only (SSE2 lanes on x86-64, both
 * blocks at once; dtoa_swar8 elsewhere). Its length is read off the
 * blocks (the highest non-zero byte), not searched for digit by digit.
 *
 * The exact search (dtoa_shortest_exact): free-format digit generation in
 * the manner of Steele & White / Burger & Dybvig, in 64- or 128-bit
 * integers when the operands fit and in small fixed-size big integers
 * otherwise. float16 and bfloat16 use it: their values are few and small,
 * and Schubfach's precision argument is made for binary32/64 (a float16
 * is exactly a float32, but its shortest digits are shorter). */
#include "dtoa.h"

#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/* floor(log10(2^q)) and floor(log2(10^e)) in 32-bit arithmetic, for
 * |q| <= 2620 and |e| <= 1233 (Dragonbox's constants; the binary64
 * search needs |q| <= 1075, |e| <= 326): one instruction shorter each,
 * which counts on the binary64 path. */
static inline int dtoa_flog10_pow2_short(int q) { return (q * 315653) >> 20; }
static inline int dtoa_flog2_pow10_short(int e) { return (e * 1741647) >> 19; }

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

/* dec->first, block and len for 17 digits: the first, then the two
 * blocks r_hi, r_lo < 10^8. */
static inline __attribute__((always_inline)) void
dtoa_blocks(uint32_t first, uint32_t r_hi, uint32_t r_lo,
            struct dtoa_dec *dec) {
  dec->first = first;
#ifdef __SSE2__
  /* Both blocks at once, lane by lane as dtoa_swar8 does: 32-bit lanes
   * of 4 digits (y / 10^4 = y * 109951163 >> 40 for y < 10^8), 16-bit
   * lanes of 2 (z / 100 = z * 20972 >> 21 for z < 10^4), bytes (for
   * w < 100, w * 6554 = 2^16 (w / 10) + f with w % 10 = f * 10 >> 16).
   * The last non-zero digit is the highest non-zero byte: one compare
   * and a bit scan. The 100 goes through an empty asm: GCC would turn
   * the multiply into five shifts and adds. */
  __m128i c100 = _mm_set1_epi16(100), c6554 = _mm_set1_epi16(6554);
  __asm__("" : "+x"(c100));
  __m128i vx = _mm_set_epi64x((long long)r_lo, (long long)r_hi);
  __m128i vq =
      _mm_srli_epi64(_mm_mul_epu32(vx, _mm_set1_epi64x(109951163)), 40);
  vx = _mm_sub_epi32(vx, _mm_mul_epu32(vq, _mm_set1_epi64x(10000)));
  vx = _mm_or_si128(vq, _mm_slli_epi64(vx, 32));
  vq = _mm_srli_epi16(_mm_mulhi_epu16(vx, _mm_set1_epi16(20972)), 5);
  vx = _mm_sub_epi16(vx, _mm_mullo_epi16(vq, c100));
  vx = _mm_or_si128(vq, _mm_slli_epi32(vx, 16));
  vq = _mm_mulhi_epu16(vx, c6554);
  vx = _mm_mulhi_epu16(_mm_mullo_epi16(vx, c6554), _mm_set1_epi16(10));
  vx = _mm_or_si128(vq, _mm_slli_epi16(vx, 8));
  unsigned nz =
      ~(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(vx, _mm_setzero_si128()));
  /* bit j + 1 of w is set for a non-zero digit j + 1; bit 0 stands for
   * the first digit, never 0 */
  unsigned w = (nz & 0xffff) << 1 | 1;
  dec->len = 32 - __builtin_clz(w);
  _mm_storeu_si128((__m128i *)(void *)dec->block, vx); /* read back whole */
#else
  uint64_t hi = dtoa_swar8(r_hi), lo = dtoa_swar8(r_lo);
  /* zero digits at the end of each block (8 for a zero block) */
  unsigned zhi = (unsigned)(__builtin_clzll(hi | 1) + (hi == 0)) >> 3;
  unsigned zlo = (unsigned)(__builtin_clzll(lo | 1) + (lo == 0)) >> 3;
  dec->block[0] = hi;
  dec->block[1] = lo;
  dec->len = DTOA_DIGITS_MAX - (int)(zlo + (zhi & (0u - (lo == 0))));
#endif
}

/* *dec (all fields) for the digits n * 10^k, n < 10^17 (v < 2^53 * 2^q
 * and 2^q < 10^(k+1)). `normal64` says they are a binary64 normal's,
 * whose n has 16 or 17 digits (below). */
static inline __attribute__((always_inline)) void
dtoa_fill(uint64_t n, int k, int normal64, struct dtoa_dec *dec) {
  /* Scaled to exactly 17 digits: the first, then two blocks of 8 in registers.
   * For a binary64 normal, n >= 4 c / 3 * 2^q / 10^(k+1) > 10^15 (the
   * interval's width 2^q or 3/4 2^q is below 10^(k+1)): 16 or 17 digits,
   * so no length search. The trailing zeros (the scaling's and n's own)
   * are the zero bytes at the top of the blocks: counted, not searched
   * for. */
  uint64_t full;
  if (normal64) {
    /* 16 or 17 is a coin toss for typical data: a multiply by 10 or 1,
     * not a branch */
    int short16 = n < 10000000000000000ull;
    full = n * (1 + 9 * (uint64_t)short16);
    dec->x10 = k + 16 - short16;
  } else {
    int len = dtoa_dec_len(n);
    dec->x10 = k + len - 1;
    full = n * dtoa_pow10_u64[DTOA_DIGITS_MAX - len];
  }
  uint64_t top = full / 100000000;                          /* 9 digits */
  uint32_t first = (uint32_t)(full / 10000000000000000ull); /* 1 digit */
  dtoa_blocks(first, (uint32_t)top - first * 100000000,
              (uint32_t)(full - top * 100000000), dec);
}

/* Shortest digits of c * 2^q (c > 0): the search in the file comment.
 * `irregular` is set at a power of two whose gap below is half the gap
 * above. `normal64` says c is a binary64 normal's (2^52 <= c < 2^53),
 * whose digits n are 16 or 17 (below). Fills *dec (all fields). */
static inline __attribute__((always_inline)) void
dtoa_digits(uint64_t c, int q, int irregular, int normal64,
            struct dtoa_dec *dec) {
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
  int s10 = normal64 || s >= 10; /* a normal's s has 16 or 17 digits */
  int u10_in = (vbl + open <= u10 << 2) & s10;
  int w10_in = ((w10 << 2) + open <= vbr) & s10;
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
  dtoa_fill(n, k, normal64, dec);
}

/* Whether c * 2^e2 * 10^e10 (c > 0) is an integer: c 5^e10 2^(e2+e10).
 * Asked only where a product lands within a few units of 2^-64 of an
 * integer (or of another fraction), to tell an exact tie from a near
 * one. */
static __attribute__((noinline, cold)) int dtoa_is_int(uint64_t c, int e2,
                                                       int e10) {
  if (__builtin_ctzll(c) + e2 + e10 < 0)
    return 0;
  if (e10 >= 0)
    return 1;
  if (e10 < -27) /* 5^28 > 2^64 > c */
    return 0;
  uint64_t p5 = 1;
  for (int i = 0; i < -e10; i++)
    p5 *= 5;
  return c % p5 == 0;
}

/* Shortest digits of the binary64 normal c * 2^q (2^52 < c < 2^53: not
 * a power of two) into *dec: the Dragonbox-style search of the file
 * comment. Returns 0 (*dec untouched) where it cannot decide, for
 * dtoa_digits to search instead. Unless `careful`, it also returns 0 at
 * the first sign of a rare case (z within reach of an integer, r ==
 * deltai, a possible tie), so that the common path keeps few values
 * live; the careful call then settles them. */
static inline __attribute__((always_inline)) int
dtoa_dragon(uint64_t c, int q, int careful, struct dtoa_dec *dec) {
  /* 10^k0 with k0 = 2 - k scales the interval's width 2^q to delta in
   * [100, 1000). G = the table's 10^k0 shifted to 128 bits (above the
   * exact value by at most 4) and beta in [6, 9] make the top 128 bits
   * of (2c + 1) 2^beta G the high end z = (c + 1/2) 2^q 10^k0 with 64
   * fraction bits, above the exact value by less than 2^-63: its
   * integer part zi is floor(z) unless the fraction f is below 4 units,
   * where z may be an integer or just below one. */
  int k = dtoa_flog10_pow2_short(q), k0 = 2 - k;
  int beta = q + dtoa_flog2_pow10_short(k0);
  const uint64_t *g = dtoa_pow10_g[k - 2 - DTOA_K_MIN];
  uint64_t gh = g[0] << 2 | g[1] >> 62, gl = g[1] << 2;
  uint64_t cp = (2 * c + 1) << beta, lo, unused;
  uint64_t zi = dtoa_mul64(cp, gh, &lo);
  uint64_t f = lo + dtoa_mul64(cp, gl, &unused);
  zi += f < lo;
  /* floor(delta) and floor(delta / 2): exact for every q, as the table's
   * error is far below delta's distance to the next integer (checked by
   * enumeration over q) */
  uint32_t deltai = (uint32_t)(gh >> (63 - beta));
  uint64_t zint = 0; /* z is an integer */
  if (__builtin_expect(f < 4, 0)) {
    if (!careful || !dtoa_is_int(2 * c + 1, q - 1, k0))
      return 0;
    zint = 1;
  }
  /* The multiple of 1000 at or below z, m = 1000 s = zi - r, is in the
   * interval when z - m = r + frac(z) < delta (<= delta when c is even,
   * the interval closed): so when r < deltai, not when r > deltai. It is
   * the shortest. */
  uint64_t s = zi / 1000;
  uint32_t r = (uint32_t)(zi - s * 1000);
  int in2 = r < deltai;
  if (__builtin_expect(r == deltai || (r == 0 && (zint & c)), 0)) {
    if (!careful)
      return 0;
    if (r == 0) {
      /* m is z itself, out of the open interval; the multiple below is
       * out too, so the next step starts from it */
      s--;
      zi -= 1000;
      r = 1000;
      in2 = 0;
    } else {
      /* m against the low end x = z - delta: frac(delta) (from G, as
       * deltai) against frac(z); when they are within the errors' reach,
       * x is m exactly (an integer) or the order is left to dtoa_digits */
      uint64_t fd = gh << (beta + 1) | gl >> (63 - beta);
      if (f - fd + 4 <= 8) {
        if (!dtoa_is_int(2 * c - 1, q - 1, k0))
          return 0;
        in2 = (int)(~c & 1);
      } else {
        in2 = fd > f;
      }
    }
  }
  /* Otherwise the value y = z - delta / 2 rounded to a multiple of 100
   * (always in the interval, whose half-width is at least 50): y - m is
   * W - 50 with W = r + 50 - delta / 2 in (0, 1000], so n = 10 s + j
   * with j = floor(W / 100) but at a tie; W = wi + (frac(z) -
   * frac(delta / 2)) with the integer wi, so only when wi is a multiple
   * of 100 does the sign of that difference matter: below 0 takes one
   * off, 0 is a tie (y is an integer), where n is the even one. The
   * fraction h of delta / 2 comes from G as deltai did. */
  uint32_t wi = r + 50 - (deltai >> 1);
  uint32_t j = wi * 656 >> 16; /* wi / 100 for wi <= 1024 */
  if (__builtin_expect(wi == j * 100, 0) && !in2) {
    if (!careful)
      return 0;
    uint64_t h = gh << beta | gl >> (64 - beta);
    if (f - h + 4 <= 8) {
      if (!dtoa_is_int(c, q, k0))
        return 0;
      j -= j & 1;
    } else {
      j -= f < h;
    }
  }
  /* in2 is a coin toss for typical data: a mask, not a branch */
  j &= (uint32_t)in2 - 1;
  /* n = 10 s + j has 16 or 17 digits (see dtoa_fill), 17 when s has 16,
   * that is when zi >= 10^18. Its 17-digit form full (10 n when n has
   * 16) is 10 s + j times jm = 1 or 10, and its first digit and first
   * 9 digits are those of zn = zi jm, in [10^18, 10^19): divisions of
   * zn by constants, made while s and j are still under way. */
  int short16 = zi < 1000000000000000000ull;
  uint32_t jm = 1 + 9 * (uint32_t)short16;
  uint64_t zn = zi * jm;
  uint32_t first = (uint32_t)(zn / 1000000000000000000ull);
  uint64_t top = zn / 10000000000ull;
  dec->x10 = k + 16 - short16;
  dtoa_blocks(first, (uint32_t)top - first * 100000000,
              (uint32_t)((s * 10 + j) * jm - top * 100000000), dec);
  return 1;
}

/* Shortest digits of a binary64 value, out of line: the careful
 * dtoa_dragon, or dtoa_digits where it does not apply or decide. */
static __attribute__((noinline)) void dtoa_f64_slow(int ef, uint64_t m,
                                                    struct dtoa_dec *dec) {
  if (m != 0 && ef > 5 && dtoa_dragon(m | (uint64_t)1 << 52, ef - 1075, 1, dec))
    return;
  if (ef == 0) /* subnormal: the gaps are those of the smallest normal */
    dtoa_digits(m, -1074, 0, 0, dec);
  else /* at a power of two the gap below halves, except at the smallest
        * normal, whose neighbour below is the largest subnormal */
    dtoa_digits(m | (uint64_t)1 << 52, ef - 1075, m == 0 && ef > 1, 1, dec);
}

/* Shortest digits of a binary64 value, in registers. */
int dtoa_dec_f64(uint64_t bits, struct dtoa_dec *dec) {
  int ef = (int)(bits >> 52) & 0x7ff;
  uint64_t m = bits & (((uint64_t)1 << 52) - 1);
  /* zero, infinities and NaNs in one compare: without the sign, 0 wraps
   * to the top and the others have every exponent bit set */
  if ((bits << 1) - 1 >= ((uint64_t)0x7ff << 53) - 1)
    return 0;
  /* Dragonbox for normals but powers of two (the shorter interval) and
   * the few smallest exponents (whose 10^k0 is past the table) */
  if (__builtin_expect((m != 0) & (ef > 5), 1) &&
      __builtin_expect(
          dtoa_dragon(m | (uint64_t)1 << 52, ef - 1075, 0, dec), 1))
    return dec->len;
  dtoa_f64_slow(ef, m, dec);
  return dec->len;
}

/* Shortest digits of a binary32 value, in registers. */
int dtoa_dec_f32(uint32_t bits, struct dtoa_dec *dec) {
  int ef = (int)(bits >> 23) & 0xff;
  uint32_t m = bits & ((1u << 23) - 1);
  if (ef == 0xff || (ef == 0 && m == 0))
    return 0;
  if (ef == 0)
    dtoa_digits(m, -149, 0, 0, dec);
  else
    dtoa_digits(m | 1u << 23, ef - 150, m == 0 && ef > 1, 0, dec);
  return dec->len;
}

/* The 17 digit bytes of *dec as ASCII at d. */
static int dtoa_dec_ascii(const struct dtoa_dec *dec, char *d, int *x10) {
  d[0] = (char)('0' + dec->first);
  dtoa_store8(d + 1, dec->block[0] + DTOA_ZEROS8);
  dtoa_store8(d + 9, dec->block[1] + DTOA_ZEROS8);
  *x10 = dec->x10;
  return dec->len;
}

/* Shortest digits of a binary64 value. */
int dtoa_shortest_f64(uint64_t bits, char *d, int *x10) {
  struct dtoa_dec dec;
  return dtoa_dec_f64(bits, &dec) ? dtoa_dec_ascii(&dec, d, x10) : 0;
}

/* Shortest digits of a binary32 value. */
int dtoa_shortest_f32(uint32_t bits, char *d, int *x10) {
  struct dtoa_dec dec;
  return dtoa_dec_f32(bits, &dec) ? dtoa_dec_ascii(&dec, d, x10) : 0;
}

/* ---- the exact search: big integers ---- */

/* Enough for float64: the largest operands are about 2^1080 (the scale of
 * a subnormal, or 10^309 times a small factor), i.e. 34 words, plus the
 * factor of 10 the digit loop multiplies in. */
#define BIG_WORDS 40

/* Unsigned integer, little-endian 32-bit words; n words in use and the top
 * one non-zero (n == 0 is zero). */
struct big {
  int n;
  uint32_t w[BIG_WORDS];
};

/* b = v. */
static void big_set(struct big *b, uint64_t v) {
  b->w[0] = (uint32_t)v;
  b->w[1] = (uint32_t)(v >> 32);
  b->n = b->w[1] ? 2 : b->w[0] ? 1 : 0;
}

/* b *= m (a small factor). Words past BIG_WORDS cannot occur for the
 * operands below; the bound check only keeps a bug from writing memory. */
static void big_mul_small(struct big *b, uint32_t m) {
  uint64_t carry = 0;
  for (int i = 0; i < b->n; i++) {
    uint64_t t = (uint64_t)b->w[i] * m + carry;
    b->w[i] = (uint32_t)t;
    carry = t >> 32;
  }
  if (carry && b->n < BIG_WORDS)
    b->w[b->n++] = (uint32_t)carry;
}

/* b *= 10^k for k >= 0, nine decimal digits at a time. */
static void big_mul_pow10(struct big *b, int k) {
  static const uint32_t p10[9] = {1,      10,      100,      1000,     10000,
                                  100000, 1000000, 10000000, 100000000};
  for (; k >= 9; k -= 9)
    big_mul_small(b, 1000000000u);
  if (k)
    big_mul_small(b, p10[k]);
}

/* b <<= s bits. */
static void big_shl(struct big *b, unsigned s) {
  if (b->n == 0)
    return;
  unsigned ws = s / 32, bs = s % 32;
  if (b->n + (int)ws + 1 > BIG_WORDS)
    return; /* cannot happen for IEEE widths up to 64 bits */
  if (bs == 0) {
    b->w[b->n + (int)ws] = 0;
    for (int i = b->n - 1; i >= 0; i--)
      b->w[i + (int)ws] = b->w[i];
  } else {
    b->w[b->n + (int)ws] = b->w[b->n - 1] >> (32 - bs);
    for (int i = b->n - 1; i > 0; i--)
      b->w[i + (int)ws] = b->w[i] << bs | b->w[i - 1] >> (32 - bs);
    b->w[ws] = b->w[0] << bs;
  }
  for (unsigned i = 0; i < ws; i++)
    b->w[i] = 0;
  b->n += (int)ws + 1;
  while (b->n > 0 && b->w[b->n - 1] == 0)
    b->n--;
}

/* -1, 0, 1 as a <, ==, > b. */
static int big_cmp(const struct big *a, const struct big *b) {
  if (a->n != b->n)
    return a->n < b->n ? -1 : 1;
  for (int i = a->n - 1; i >= 0; i--)
    if (a->w[i] != b->w[i])
      return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

/* Compare a + b with c without building the sum in place. */
static int big_cmp_sum(const struct big *a, const struct big *b,
                       const struct big *c) {
  struct big s;
  const struct big *x = a->n >= b->n ? a : b, *y = a->n >= b->n ? b : a;
  uint64_t carry = 0;
  int i;
  for (i = 0; i < x->n; i++) {
    uint64_t t = (uint64_t)x->w[i] + (i < y->n ? y->w[i] : 0) + carry;
    s.w[i] = (uint32_t)t;
    carry = t >> 32;
  }
  s.n = x->n;
  if (carry) {
    if (s.n == BIG_WORDS)
      return 1;
    s.w[s.n++] = 1;
  }
  return big_cmp(&s, c);
}

/* a -= q * b, where the result is known to be >= 0. */
static void big_submul(struct big *a, const struct big *b, uint32_t q) {
  uint64_t carry = 0, borrow = 0;
  for (int i = 0; i < a->n; i++) {
    uint64_t p = (i < b->n ? (uint64_t)b->w[i] * q : 0) + carry;
    carry = p >> 32;
    uint64_t sub = (uint64_t)(uint32_t)p + borrow;
    borrow = a->w[i] < sub;
    a->w[i] = (uint32_t)((uint64_t)a->w[i] - sub);
  }
  while (a->n > 0 && a->w[a->n - 1] == 0)
    a->n--;
}

/* Number of significant bits. */
static unsigned big_bitlen(const struct big *b) {
  if (b->n == 0)
    return 0;
  return (unsigned)(b->n - 1) * 32 + 32 -
         (unsigned)__builtin_clz(b->w[b->n - 1]);
}

/* The 64 bits of b starting at bit `sh`. */
static uint64_t big_bits(const struct big *b, unsigned sh) {
  unsigned wi = sh / 32, bi = sh % 32;
  uint64_t lo = (int)wi < b->n ? b->w[wi] : 0;
  uint64_t mid = (int)wi + 1 < b->n ? b->w[wi + 1] : 0;
  uint64_t hi = (int)wi + 2 < b->n ? b->w[wi + 2] : 0;
  uint64_t low64 = mid << 32 | lo;
  return bi ? (low64 >> bi | hi << (64 - bi)) : low64;
}

/* floor(r / s) for r < 10 s, leaving r mod s in r. A quotient estimate from
 * the top bits keeps big operands (10^300-sized) to one or two passes. */
static unsigned big_divmod_digit(struct big *r, const struct big *s) {
  unsigned sb = big_bitlen(s);
  if (sb <= 32) { /* then r < 2^36: plain 64-bit division */
    uint64_t rv = big_bits(r, 0), sv = s->w[0];
    big_set(r, rv % sv);
    return (unsigned)(rv / sv);
  }
  /* s < (shi + 1) * 2^sh and r >= rhi * 2^sh, so q never overshoots. */
  unsigned sh = sb - 32;
  uint64_t shi = big_bits(s, sh) & 0xffffffffu, rhi = big_bits(r, sh);
  unsigned q = (unsigned)(rhi / (shi + 1));
  if (q)
    big_submul(r, s, q);
  while (big_cmp(r, s) >= 0) {
    big_submul(r, s, 1);
    q++;
  }
  return q;
}

/* ---- the exact search ---- */

/* One shortest-digits search: the positive finite value f * 2^e, whether
 * the gap below is half the gap above (at a power of two), whether the
 * interval ends read back to the value (f even: readers round half to
 * even), and a first guess k for the decimal exponent. */
struct fsearch {
  uint64_t f;
  int e;
  int unequal;
  int inclusive;
  int k;
};

/* Final digit when the loop stops: q, or q + 1 when only that reads back,
 * or the nearer of the two (even on a tie) when both do. `twice_cmp` is
 * the sign of 2r - s. */
static char last_digit(unsigned q, int low, int high, int twice_cmp) {
  if (low && high) {
    if (twice_cmp > 0 || (twice_cmp == 0 && (q & 1)))
      q++;
  } else if (high) {
    q++;
  }
  return (char)('0' + q);
}

/* The search on exact big integers: any exponent. Free-format digit
 * generation: r/s is the value, (r+mp)/s and (r-mm)/s the ends of its
 * rounding interval, each scaled by 10^-k; every loop peels one digit and
 * stops as soon as the digits so far (or the next one up) lie inside. */
static int digits_big(const struct fsearch *fs, char *d, int *x10) {
  struct big r, s, mp, mm;
  int e = fs->e, unequal = fs->unequal, inclusive = fs->inclusive, k = fs->k;
  if (e >= 0) {
    big_set(&r, fs->f);
    big_shl(&r, (unsigned)e + 1 + (unsigned)unequal);
    big_set(&s, unequal ? 4 : 2);
    big_set(&mp, 1);
    big_shl(&mp, (unsigned)e + (unsigned)unequal);
    big_set(&mm, 1);
    big_shl(&mm, (unsigned)e);
  } else {
    big_set(&r, fs->f << (1 + unequal));
    big_set(&s, 1);
    big_shl(&s, (unsigned)(1 - e + unequal));
    big_set(&mp, unequal ? 2 : 1);
    big_set(&mm, 1);
  }
  if (k > 0) {
    big_mul_pow10(&s, k);
  } else if (k < 0) {
    big_mul_pow10(&r, -k);
    big_mul_pow10(&mp, -k);
    big_mul_pow10(&mm, -k);
  }
  for (;;) { /* raise k until the high end is below 10^k */
    int c = big_cmp_sum(&r, &mp, &s);
    if (inclusive ? c < 0 : c <= 0)
      break;
    big_mul_small(&s, 10);
    k++;
  }
  int n = 0;
  for (;;) {
    big_mul_small(&r, 10);
    big_mul_small(&mp, 10);
    big_mul_small(&mm, 10);
    unsigned q = big_divmod_digit(&r, &s);
    int c1 = big_cmp(&r, &mm), c2 = big_cmp_sum(&r, &mp, &s);
    int low = inclusive ? c1 <= 0 : c1 < 0;
    int high = inclusive ? c2 >= 0 : c2 > 0;
    if (!low && !high && n < 17) {
      d[n++] = (char)('0' + q);
      continue;
    }
    struct big twice = r;
    big_mul_small(&twice, 2);
    d[n++] = last_digit(q, low, high, big_cmp(&twice, &s));
    break;
  }
  *x10 = k - 1;
  return n;
}

#ifdef __SIZEOF_INT128__
typedef unsigned __int128 u128;

/* The digit loop for scaled operands in an unsigned type T in which 11*s
 * cannot wrap (r < s, mp and mm at most s on entry). r < 10s after each
 * *10, so the digit is found by four compares, branch-free because the
 * digits of real data are unpredictable. Defined for 64 and 128 bits:
 * most values fit the narrower one, which avoids register spills. */
#define DTOA_DIGIT_LOOP(NAME, T)                                               \
  static int NAME(T r, T s, T mp, T mm, int inclusive, char *d) {              \
    T s2 = s << 1, s4 = s << 2, s8 = s << 3;                                   \
    int n = 0;                                                                 \
    for (;;) {                                                                 \
      r *= 10;                                                                 \
      mp *= 10;                                                                \
      mm *= 10;                                                                \
      unsigned b8 = r >= s8;                                                   \
      r -= s8 & -(T)b8;                                                        \
      unsigned b4 = r >= s4;                                                   \
      r -= s4 & -(T)b4;                                                        \
      unsigned b2 = r >= s2;                                                   \
      r -= s2 & -(T)b2;                                                        \
      unsigned b1 = r >= s;                                                    \
      r -= s & -(T)b1;                                                         \
      unsigned q = b8 << 3 | b4 << 2 | b2 << 1 | b1;                           \
      int low = inclusive ? r <= mm : r < mm;                                  \
      int high = inclusive ? r + mp >= s : r + mp > s;                         \
      if (!low && !high && n < 17) {                                           \
        d[n++] = (char)('0' + q);                                              \
        continue;                                                              \
      }                                                                        \
      T twice = r << 1;                                                        \
      d[n++] = last_digit(q, low, high, twice > s ? 1 : twice == s ? 0 : -1);  \
      return n;                                                                \
    }                                                                          \
  }
DTOA_DIGIT_LOOP(digit_loop_u64, uint64_t)
DTOA_DIGIT_LOOP(digit_loop_u128, u128)

/* Operands stay below 2^124, so that r*10, mp*10 and r+mp (all less than
 * 11*s) never wrap. */
#define U128_LIMIT ((u128)1 << 124)

/* v *= 10^k; 0 when the result would leave the safe range. */
static int u128_mul_pow10(u128 *v, int k) {
  for (; k > 0; k--) {
    if (*v >= U128_LIMIT / 10)
      return 0;
    *v *= 10;
  }
  return 1;
}

/* The same search in 128-bit integers: covers values from about 1e-20 to
 * 1e36 (nearly all real data) several times faster than digits_big.
 * Returns 0 when the operands would not fit. */
static int digits_u128(const struct fsearch *fs, char *d, int *x10) {
  u128 r, s, mp, mm;
  int e = fs->e, unequal = fs->unequal, inclusive = fs->inclusive, k = fs->k;
  if (e >= 0) {
    if (64 - __builtin_clzll(fs->f) + e + 2 > 123)
      return 0;
    r = (u128)fs->f << (e + 1 + unequal);
    s = unequal ? 4 : 2;
    mp = (u128)1 << (e + unequal);
    mm = (u128)1 << e;
  } else {
    if (1 - e + unequal > 123)
      return 0;
    r = (u128)fs->f << (1 + unequal);
    s = (u128)1 << (1 - e + unequal);
    mp = unequal ? 2 : 1;
    mm = 1;
  }
  if (k > 0 && !u128_mul_pow10(&s, k))
    return 0;
  if (k < 0 && (!u128_mul_pow10(&r, -k) || !u128_mul_pow10(&mp, -k) ||
                !u128_mul_pow10(&mm, -k)))
    return 0;
  while (inclusive ? r + mp >= s : r + mp > s) {
    if (s >= U128_LIMIT / 10)
      return 0;
    s *= 10;
    k++;
  }
  int n = s < ((u128)1 << 59)
              ? digit_loop_u64((uint64_t)r, (uint64_t)s, (uint64_t)mp,
                               (uint64_t)mm, inclusive, d)
              : digit_loop_u128(r, s, mp, mm, inclusive, d);
  *x10 = k - 1;
  return n;
}
#endif

/* Shortest digits of the positive finite value f * 2^e (f > 0) at
 * precision p bits with minimum exponent min_e (contract in dtoa.h). The
 * digits are the fewest that lie in the value's rounding
 * interval, and among those the closest to the value at the first digit
 * position (only when the interval spans a power of ten and is wider than
 * the value, as for bfloat16's smallest subnormal, could a candidate one
 * position lower be closer: 9.18e-41 gives 1e-40, not 9e-41). */
int dtoa_shortest_exact(uint64_t f, int e, int p, int min_e, char *d,
                        int *x10) {
  struct fsearch fs;
  fs.f = f;
  fs.e = e;
  /* The gap below is half the gap above at a power of two (but not at the
   * smallest normal, whose neighbour below is the largest subnormal). */
  fs.unequal = f == (uint64_t)1 << (p - 1) && e > min_e;
  fs.inclusive = (f & 1) == 0;
  /* k = ceil(log10(high end)). Start from floor(t * log10(2)), with
   * 2^18 * log10(2) = 78913.2 rounded so that the guess is never high;
   * it is at most two low, and the searches raise it exactly. */
  long t = (long)(e + 63 - __builtin_clzll(f));
  long est = t >= 0 ? t * 78913L : t * 78914L;
  fs.k = (int)(est >= 0 ? est >> 18 : -((-est + (1L << 18) - 1) >> 18));
  int n = 0;
#ifdef __SIZEOF_INT128__
  n = digits_u128(&fs, d, x10);
#endif
  if (!n)
    n = digits_big(&fs, d, x10);
  if (n < DTOA_DIGITS_MAX) /* the padding the contract promises */
    memset(d + n, '0', (size_t)(DTOA_DIGITS_MAX - n));
  return n;
}
