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
 * one 126-bit approximation of 10^-k (fs/text/dtoa_pow10.h, rounded up) and
 * rounded to odd: the lowest bit records "inexact", so comparing with an
 * even integer (4s, 4(s+1), 2(2s+1), ...) gives the exact answer. The
 * paper proves the 126-bit table is precise enough for every binary64
 * value. binary32 uses the same table and code; all 2^32 binary32
 * patterns have been compared with the exact search (fs/text/dtoa_exact.c;
 * check_dtoa's exhaustive mode). Binary32 normals first take
 * dtoa_f32_fast: the Dragonbox-style search below with one 64-bit
 * multiply by a 64-bit table entry per exponent (dtoa_f32_v).
 *
 * Binary64 normals (but powers of two and the few smallest exponents)
 * take a shorter route with the same answer, in the manner of Dragonbox
 * (Junekey Jeon, "Dragonbox: A New Floating-Point Binary-to-Decimal
 * Conversion Algorithm", 2020), written here from the paper's
 * description. With the same k, everything is scaled by 10^(2-k)
 * instead: the width of R becomes delta in [100, 1000), and the multiples
 * of 10^(k+1) and 10^k multiples of 1000 and 100. One product (two 64x64
 * multiplications, where Schubfach needs six) gives the high end z of R
 * with 64 fraction bits; floor(delta) comes from the table entry alone.
 * The multiple of 1000 at or below z is in R when its distance to z,
 * r + frac(z) with r = floor(z) mod 1000, is below delta: r < floor(delta)
 * says yes and r > floor(delta) no, without fractions. Otherwise the
 * value z - delta/2 rounded to the nearest multiple of 100 is the answer
 * (R reaches at least 50 either side of the value), which needs fractions
 * only near a tie. The two cases with fractions (r == floor(delta), a near
 * tie) compare frac(z) with the fraction of delta or delta/2, which the
 * product and the table give to a few units of 2^-64; within that reach
 * an end or the value is an exact integer, told by a divisibility test
 * (dtoa_is_int), or else the value goes to the Schubfach search, as do
 * the cases left out. check_dtoa compares millions of binary64 values
 * with the exact search on every run (10^8 in its opt-in mode), and
 * builds values whose ends or value are exact integers for every
 * exponent where they can be.
 *
 * Integers: two digits at a time from a 200-byte table, back to front
 * from the end the length gives, in 32-bit arithmetic below 10^8. The
 * float significand is scaled to exactly 17 digits and kept in registers
 * (struct dtoa_dec): the first digit, then the other 16 as two blocks of
 * digit bytes, made by multiplications only (SSE2 lanes on x86-64, both
 * blocks at once; dtoa_swar8 elsewhere). Its length is read off the
 * blocks (the highest non-zero byte), not searched for digit by digit.
 *
 * The exact search dtoa_shortest_exact, which the float search above is
 * checked against, is in fs/text/dtoa_exact.c. */
#include "dtoa.h"

#include <string.h>

#include "dtoa_pow10.h"

/* ---- integers ---- */

/* The two decimal digits of every value 0..99 (no NUL: 200 bytes). */
const char dtoa_pairs[200] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536"
    "37383940414243444546474849505152535455565758596061626364656667686970717273"
    "7475767778798081828384858687888990919293949596979899";

/* 10^i for i in 0..19 (dtoa.h). */
const uint64_t dtoa_pow10_u64[20] = {1ull,
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
 * search needs |q| <= 1075, |e| <= 326, and check_dtoa's f64_scaling
 * checks them there): an instruction shorter each than the 64-bit ones,
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
  /* Both blocks at once (dtoa_swar8x2). The last non-zero digit is the
   * highest non-zero byte: one compare and a bit scan. */
  __m128i vx = dtoa_swar8x2(r_hi, r_lo);
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
  /* Scaled to exactly 17 digits: the first, then two blocks of 8 in
   * registers. For a binary64 normal, n >= 4 c / 3 * 2^q / 10^(k+1) >
   * 10^15 (the interval's width 2^q or 3/4 2^q is below 10^(k+1)): 16 or
   * 17 digits, so no length search. The trailing zeros (the scaling's and
   * n's own) are the zero bytes at the top of the blocks: counted, not
   * searched for. */
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

/* What dtoa_dragon scales the interval of c * 2^q by, which depends on q
 * alone: 10^k0 with k0 = 2 - k scales the interval's width 2^q to delta
 * in [100, 1000). G = {gh, gl}, the table's 10^k0 shifted to 128 bits
 * (above the exact value by at most 4), and beta in [6, 9] make the top
 * 128 bits of (2c + 1) 2^beta G the high end z = (c + 1/2) 2^q 10^k0
 * with 64 fraction bits, above the exact value by less than 2^-63.
 * deltai is floor(delta): exact for every q, as the table's error is far
 * below delta's distance to the next integer (check_dtoa's f64_scaling
 * checks this, beta's range and G's error for every q). */
struct dtoa_scale {
  uint64_t gh, gl;
  uint32_t deltai;
  int16_t k;
  uint8_t beta;
};

/* The scale of q (above). */
static inline __attribute__((always_inline)) void
dtoa_scale_of(int q, struct dtoa_scale *sc) {
  int k = dtoa_flog10_pow2_short(q);
  int beta = q + dtoa_flog2_pow10_short(2 - k);
  const uint64_t *g = dtoa_pow10_g[k - 2 - DTOA_K_MIN];
  sc->gh = g[0] << 2 | g[1] >> 62;
  sc->gl = g[1] << 2;
  sc->deltai = (uint32_t)(sc->gh >> (63 - beta));
  sc->k = (int16_t)k;
  sc->beta = (uint8_t)beta;
}

/* The scale of every binary64 exponent dtoa_dragon takes (biased ef in
 * [6, 2046], q = ef - 1075), made once at load by the same code and
 * read-only after: one look-up in place of the dozen instructions (two
 * multiplies, variable shifts) that make it. bench/numfmt, ns a float64 in
 * render_fixed_run, medians of 3 alternated with the build before:
 * values in [0, 1) 15.7 -> 14.1, perf.sh's mix 14.2 -> 12.0, random bit
 * patterns (whose exponents spread over the table's 48 KB) 18.8 -> 17.7. */
static struct dtoa_scale dtoa_f64_scales[2047];

/* Fill dtoa_f64_scales before main. */
__attribute__((constructor)) static void dtoa_f64_scales_init(void) {
  for (int ef = 6; ef <= 2046; ef++)
    dtoa_scale_of(ef - 1075, &dtoa_f64_scales[ef]);
}

/* frac(z) of dtoa_dragon's c with scale *sc, in units of 2^-64: the
 * product dtoa_dragon makes, made again by its out-of-line cases. */
static inline uint64_t dtoa_frac_z(uint64_t c, const struct dtoa_scale *sc) {
  uint64_t cp = (2 * c + 1) << sc->beta, lo, unused;
  dtoa_mul64(cp, sc->gh, &lo);
  return lo + dtoa_mul64(cp, sc->gl, &unused);
}

/* For dtoa_dragon's c * 2^q with scale *sc at r == deltai: whether the
 * multiple of 1000 below z is in the interval (1) or not (0), comparing
 * it with the low end x = z - delta: frac(delta) (from G, as deltai)
 * against frac(z); when they are within the errors' reach, x is that
 * multiple exactly (an integer), or else -1, the order left to
 * dtoa_digits. Out of line, and frac(z) made again here: what it needs
 * beyond c, q and sc would otherwise be kept (spilled) through every
 * value's search. */
static __attribute__((noinline, cold)) int
dtoa_low_end_in(uint64_t c, int q, const struct dtoa_scale *sc) {
  int beta = sc->beta;
  uint64_t gh = sc->gh, gl = sc->gl, f = dtoa_frac_z(c, sc);
  uint64_t fd = gh << (beta + 1) | gl >> (63 - beta);
  if (f - fd + 4 <= 8)
    return dtoa_is_int(2 * c - 1, q - 1, 2 - sc->k) ? (int)(~c & 1) : -1;
  return fd > f;
}

/* For dtoa_dragon's c * 2^q with scale *sc where wi is a multiple of
 * 100 (j = wi / 100): j less one when frac(z) is below the fraction h of
 * delta / 2 (from G, as deltai), else j; within the errors' reach of
 * each other, the value is halfway exactly (an integer), where n is the
 * even of j and j - 1, or else -1 (as unsigned), left to dtoa_digits.
 * Out of line as dtoa_low_end_in. */
static __attribute__((noinline, cold)) uint32_t
dtoa_tie_j(uint64_t c, int q, const struct dtoa_scale *sc, uint32_t j) {
  int beta = sc->beta;
  uint64_t gh = sc->gh, gl = sc->gl, f = dtoa_frac_z(c, sc);
  uint64_t h = gh << beta | gl >> (64 - beta);
  if (f - h + 4 <= 8)
    return dtoa_is_int(c, q, 2 - sc->k) ? j - (j & 1) : (uint32_t)-1;
  return j - (f < h);
}

/* Shortest digits of the binary64 normal c * 2^q (2^52 < c < 2^53: not
 * a power of two), or with f32 of the binary32 normal (2^23 < c < 2^24),
 * into *dec: the Dragonbox-style search of the file comment. Returns 0 (*dec
 * untouched) where it cannot decide, for dtoa_digits to search instead. Unless
 * `careful`, it also returns 0 at the first sign of a rare case (z within reach
 * of an integer, z itself a multiple of 1000), so that the common path keeps
 * few values live; the careful call then settles them. r == deltai and a
 * possible tie are settled in either, out of line (dtoa_low_end_in,
 * dtoa_tie_j): r == deltai is 3.3% of bench/perf.sh's float64 values (x
 * 1e13 + 0.5 past 2^66, whose low end is exactly a multiple of 1000), and
 * the slow call that redid the search was 1.7% of the daemon's samples. */
static inline __attribute__((always_inline)) int
dtoa_dragon(uint64_t c, int q, int careful, int f32, struct dtoa_dec *dec) {
  /* The scale (struct dtoa_scale): binary64's from the table. z's integer
   * part zi is floor(z) unless the fraction f is below 4 units, where z
   * may be an integer or just below one. */
  struct dtoa_scale scq;
  const struct dtoa_scale *sc = &scq;
  if (f32)
    dtoa_scale_of(q, &scq);
  else
    sc = &dtoa_f64_scales[q + 1075];
  int k = sc->k, k0 = 2 - k, beta = sc->beta;
  uint64_t gh = sc->gh, gl = sc->gl;
  uint64_t cp = (2 * c + 1) << beta, lo, unused;
  uint64_t zi = dtoa_mul64(cp, gh, &lo);
  uint64_t f = lo + dtoa_mul64(cp, gl, &unused);
  zi += f < lo;
  /* floor(delta) and floor(delta / 2) */
  uint32_t deltai = sc->deltai;
  uint64_t zint = 0; /* z is an integer */
  if (__builtin_expect(f < 4, 0)) {
    /* dtoa_is_int(2c + 1, q - 1, k0) at once where k0 >= 0 (2c + 1 is
     * odd): the large values, whose z is always an integer, are common
     * in binary32 data */
    if (k0 < 0 || q - 1 + k0 < 0) {
      if (!careful || !dtoa_is_int(2 * c + 1, q - 1, k0))
        return 0;
    }
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
    if (r == 0) {
      if (!careful)
        return 0;
      /* m is z itself, out of the open interval; the multiple below is
       * out too, so the next step starts from it */
      s--;
      zi -= 1000;
      r = 1000;
      in2 = 0;
    } else {
      in2 = dtoa_low_end_in(c, q, sc);
      if (in2 < 0)
        return 0;
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
  /* wi / 100 for wi <= 1024, and wi a multiple of 100 when the
   * multiply's low 16 bits (64 j + 656 (wi mod 100)) are below 656 */
  uint32_t j = wi * 656 >> 16;
  if (__builtin_expect((wi * 656 & 0xffff) < 656, 0) && !in2) {
    j = dtoa_tie_j(c, q, sc, j);
    if (j > 9)
      return 0;
  }
  /* in2 is a coin toss for typical data: a mask, not a branch */
  j &= (uint32_t)in2 - 1;
  if (f32) {
    /* n = 10 s + j with j <= 9 (wi < 1000) has one digit more than s:
     * for a binary32 normal z is in [2^23 * 100, 2^24 * 1000), so s has
     * 6 to 8 digits and n 7 to 9, scaled to exactly 9 (the first and a
     * block of 8, the second block 0). */
    int ls = dtoa_dec_len(s);
    uint32_t full = ((uint32_t)s * 10 + j) * (uint32_t)dtoa_pow10_u64[8 - ls];
    uint32_t first = full / 100000000;
    uint64_t x = dtoa_swar8(full - first * 100000000);
    /* the last non-zero digit is the highest non-zero byte of x */
    unsigned nb = (unsigned)(71 - __builtin_clzll(x | 1)) >> 3;
    dec->first = first;
    dec->block[0] = x;
    dec->block[1] = 0;
    dec->len = 1 + (int)nb - (x == 0);
    dec->x10 = k + ls;
    return 1;
  }
  /* n = 10 s + j has 16 or 17 digits (see dtoa_fill), 17 when s has 16,
   * that is when zi >= 10^18. Its 17-digit form full (10 n when n has
   * 16) is 10 s + j times jm = 1 or 10, and its first digit and first
   * 9 digits are those of zn = zi jm, in [10^18, 10^19): divisions of
   * zn by constants, made while s and j are still under way. */
  int short16 = zi < 1000000000000000000ull;
  uint32_t jm = 1 + 9 * (uint32_t)short16;
  uint64_t zn = zi * jm;
  uint64_t top = zn / 10000000000ull;
  uint32_t first = (uint32_t)top / 100000000; /* 32-bit: cheaper */
  dec->x10 = k + 16 - short16;
  dtoa_blocks(first, (uint32_t)top - first * 100000000,
              (uint32_t)((s * 10 + j) * jm - top * 100000000), dec);
  return 1;
}

/* dtoa_dec_f64 out of line: zero, infinities and NaNs, then the careful
 * dtoa_dragon, or dtoa_digits where it does not apply or decide. */
static __attribute__((noinline)) int dtoa_f64_slow(uint64_t bits,
                                                   struct dtoa_dec *dec) {
  int ef = (int)(bits >> 52) & 0x7ff;
  uint64_t m = bits & (((uint64_t)1 << 52) - 1);
  /* zero, infinities and NaNs in one compare: without the sign, 0 wraps
   * to the top and the others have every exponent bit set */
  if ((bits << 1) - 1 >= ((uint64_t)0x7ff << 53) - 1)
    return 0;
  if (m != 0 && ef > 5 &&
      dtoa_dragon(m | (uint64_t)1 << 52, ef - 1075, 1, 0, dec))
    return dec->len;
  if (ef == 0) /* subnormal: the gaps are those of the smallest normal */
    dtoa_digits(m, -1074, 0, 0, dec);
  else /* at a power of two the gap below halves, except at the smallest
        * normal, whose neighbour below is the largest subnormal */
    dtoa_digits(m | (uint64_t)1 << 52, ef - 1075, m == 0 && ef > 1, 1, dec);
  return dec->len;
}

/* Shortest digits of a binary64 value, in registers. */
int dtoa_dec_f64(uint64_t bits, struct dtoa_dec *dec) {
  unsigned ef = (unsigned)(bits >> 52) & 0x7ff;
  uint64_t m = bits & (((uint64_t)1 << 52) - 1);
  /* Dragonbox for normals but powers of two (the shorter interval) and
   * the few smallest exponents (whose 10^k0 is past the table): ef in
   * [6, 2046], which leaves zero, infinities and NaNs out too */
  if (__builtin_expect((ef - 6 < 2041) & (m != 0), 1) &&
      __builtin_expect(
          dtoa_dragon(m | (uint64_t)1 << 52, (int)ef - 1075, 0, 0, dec), 1))
    return dec->len;
  return dtoa_f64_slow(bits, dec);
}

/* Shortest digits of n binary64 values (see dtoa.h): dtoa_dec_f64's fast
 * path inlined in the loop, so a value costs no call, and the integers
 * below 2^53 told apart in the same pass over the bits. */
void dtoa_dec_f64_run(const void *src, size_t n, struct dtoa_dec *dec) {
  const unsigned char *s = src;
  for (size_t i = 0; i < n; i++) {
    uint64_t bits;
    memcpy(&bits, s + 8 * i, 8);
    unsigned ef = (unsigned)(bits >> 52) & 0x7ff;
    uint64_t m = bits & (((uint64_t)1 << 52) - 1);
    /* integral below 2^53: ef in [1023, 1075] (a gap of at most 1) and
     * no bit below the point */
    unsigned sh = 1075u - ef;
    if (sh <= 52 && (m & (((uint64_t)1 << sh) - 1)) == 0) {
      dec[i].len = 0;
      continue;
    }
    if (__builtin_expect((ef - 6 < 2041) & (m != 0), 1) &&
        __builtin_expect(
            dtoa_dragon(m | (uint64_t)1 << 52, (int)ef - 1075, 0, 0, &dec[i]),
            1))
      continue;
    if (!dtoa_f64_slow(bits, &dec[i]))
      dec[i].len = 0;
  }
}

/* dtoa_dec_f32 out of line: zero, infinities and NaNs, then the careful
 * dtoa_dragon, or dtoa_digits where it does not apply or decide. */
static __attribute__((noinline)) int dtoa_f32_slow(uint32_t bits,
                                                   struct dtoa_dec *dec) {
  int ef = (int)(bits >> 23) & 0xff;
  uint32_t m = bits & ((1u << 23) - 1);
  if (ef == 0xff || (ef == 0 && m == 0))
    return 0;
  if (m != 0 && ef != 0 && dtoa_dragon(m | 1u << 23, ef - 150, 1, 1, dec))
    return dec->len;
  if (ef == 0)
    dtoa_digits(m, -149, 0, 0, dec);
  else
    dtoa_digits(m | 1u << 23, ef - 150, m == 0 && ef > 1, 0, dec);
  return dec->len;
}

/* dtoa_dragon's search for the binary32 normal c * 2^q (2^23 < c < 2^24,
 * q = ef - 150) with one 64x64 multiply and no exponent arithmetic: v =
 * dtoa_f32_v[ef - 1] is the interval's width delta in [100, 1000) times
 * 2^54, rounded up (tools/gen_dtoa_pow10.py), so u v / 2^64 with u =
 * (2c + 1) 2^9 < 2^34 is the high end z = (2c + 1) delta / 2, above the
 * exact value by less than u units of 2^-64: its integer part zi is
 * floor(z) unless the fraction f is below u. floor(delta) and floor(delta
 * / 2) are v's top bits (the generator checks them), and frac(delta / 2)
 * is v << 9, above the exact fraction by less than 2^9 units. Fractions
 * within the errors' reach of each other are told apart by dtoa_is_int,
 * as in dtoa_dragon. What is left (z within f's error of an integer but
 * not provably one; z itself at r == 0, out of the open interval; a
 * near tie or end that is not exact) returns 0 for dtoa_f32_slow, whose
 * careful dtoa_dragon has the 128-bit table. s =
 * floor(z / 1000) is in [2^23 / 10, 2^24]: 6 to 8 digits ls, told by
 * two compares; the digits are s's and one more, j. Same answers as
 * dtoa_dragon for all 2^32 binary32 patterns (compared exhaustively;
 * check_dtoa samples them against the exact search). */
static inline __attribute__((always_inline)) int
dtoa_f32_fast(uint32_t c, unsigned ef, struct dtoa_dec *dec) {
  uint64_t v = dtoa_f32_v[ef - 1];
  uint64_t u = (uint64_t)(2 * c + 1) << 9, f;
  uint64_t zi = dtoa_mul64(u, v, &f);
  uint32_t deltai = (uint32_t)(v >> 54);
  int k = dtoa_flog10_pow2_short((int)ef - 150);
  /* f < u: z is an integer if z = (2c + 1) 2^(q-1) 10^(2-k) always is
   * one, for 2 - k >= 0 and q - 1 + 2 - k >= 0: q in [-2, 9] (the large
   * values, common in binary32 data); else undecided */
  uint32_t zint = 0;
  if (__builtin_expect(f < u, 0)) {
    if (ef - 148 > 11)
      return 0;
    zint = 1;
  }
  /* zi < 2^24 1000 < 2^34: zi / 1000 = (zi / 8) / 125 in 32 bits */
  uint32_t s = (uint32_t)(zi >> 3) / 125;
  uint32_t r = (uint32_t)zi - s * 1000;
  int in2 = r < deltai;
  if (__builtin_expect(r == deltai || (r == 0 && (zint & c)), 0)) {
    /* r == deltai: the multiple of 1000 below z against the low end z -
     * delta, frac(z) against frac(delta) (v << 10, above the exact one by
     * less than 2^10 units), as in dtoa_dragon; within the errors' reach
     * of each other the low end is the multiple exactly, or undecided */
    uint64_t fd = v << 10, e = u + 2048;
    if (r == 0)
      return 0;
    if (f - fd + e <= 2 * e) {
      if (!zint && !dtoa_is_int(2 * c - 1, (int)ef - 151, 2 - k))
        return 0;
      in2 = (int)(~c & 1);
    } else {
      in2 = fd > f;
    }
  }
  uint32_t wi = r + 50 - (uint32_t)(v >> 55);
  uint32_t j = wi * 656 >> 16;
  if (__builtin_expect((wi * 656 & 0xffff) < 656, 0) && !in2) {
    /* frac(z) against frac(delta / 2), as in dtoa_dragon; within the
     * errors' reach of each other the value is halfway exactly (n the
     * even one: always where z is an integer, as delta / 2 = 2^(q-1)
     * 10^(2-k) then is), or undecided */
    uint64_t h = v << 9, e = u + 1024;
    if (f - h + e <= 2 * e) {
      if (!zint && !dtoa_is_int(c, (int)ef - 150, 2 - k))
        return 0;
      j -= j & 1;
    } else {
      j -= f < h;
    }
  }
  j &= (uint32_t)in2 - 1;
  /* the digits are s's, then j: s's 8-digit register (made while j is
   * under way) has 8 - ls = lz leading zero bytes, then the first digit,
   * then the others, followed by j at byte ls - 1 of the block */
  unsigned lz = (unsigned)(s < 1000000) + (unsigned)(s < 10000000);
  uint64_t xs = dtoa_swar8(s);
  uint32_t first = (uint32_t)(xs >> (8 * lz)) & 0xff;
  uint64_t x = xs >> (8 * lz + 8) | (uint64_t)j << (56 - 8 * lz);
  /* the last non-zero digit is the highest non-zero byte of x */
  unsigned nb = (unsigned)(71 - __builtin_clzll(x | 1)) >> 3;
  dec->first = first;
  dec->block[0] = x;
  dec->block[1] = 0;
  dec->len = 1 + (int)nb - (x == 0);
  dec->x10 = k + 8 - (int)lz;
  return 1;
}

/* Shortest digits of a binary32 value, in registers: dtoa_f32_fast for
 * normals but powers of two, then dtoa_f32_slow for what it leaves; the
 * digits end at 9. All 2^32 patterns were compared with the old
 * dtoa_dragon path it shortcuts, and with the exact search (check_dtoa's
 * exhaustive mode). */
static inline __attribute__((always_inline)) int
dtoa_dec_f32_inline(uint32_t bits, struct dtoa_dec *dec) {
  unsigned ef = (bits >> 23) & 0xff;
  uint32_t m = bits & ((1u << 23) - 1);
  /* ef in [1, 254], which leaves zero, subnormals, infinities, NaNs out */
  if (__builtin_expect((ef - 1 < 254) & (m != 0), 1) &&
      __builtin_expect(dtoa_f32_fast(m | 1u << 23, ef, dec), 1))
    return dec->len;
  return dtoa_f32_slow(bits, dec);
}

int dtoa_dec_f32(uint32_t bits, struct dtoa_dec *dec) {
  return dtoa_dec_f32_inline(bits, dec);
}

/* Shortest digits of n binary32 values (see dtoa.h): as
 * dtoa_dec_f64_run, dtoa_dec_f32's search inlined in the loop (a call per value
 * was a sixth of a float32 line's cost in a kerchunk archive's cat) and
 * the integers below 2^24 told apart in the same pass. */
void dtoa_dec_f32_run(const void *src, size_t n, struct dtoa_dec *dec) {
  const unsigned char *s = src;
  for (size_t i = 0; i < n; i++) {
    uint32_t bits;
    memcpy(&bits, s + 4 * i, 4);
    unsigned ef = (bits >> 23) & 0xff;
    uint32_t m = bits & ((1u << 23) - 1);
    /* integral below 2^24: ef in [127, 150] and no bit below the point */
    unsigned sh = 150u - ef;
    /* without a branch on sh: in real data it is as often one way as the
     * other, and the test is almost never true */
    if (__builtin_expect((sh <= 23) & ((m & ((1u << (sh & 31)) - 1)) == 0),
                         0)) {
      dec[i].len = 0;
      continue;
    }
    if (!dtoa_dec_f32_inline(bits, &dec[i]))
      dec[i].len = 0;
  }
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
