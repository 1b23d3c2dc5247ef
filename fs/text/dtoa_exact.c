/* dtoa_exact.c - the exact shortest-digits search for any binary float
 * up to 64 bits (dtoa_shortest_exact, see dtoa.h).
 *
 * Free-format digit generation in the manner of Steele & White / Burger &
 * Dybvig, in 64- or 128-bit integers when the operands fit and in small
 * fixed-size big integers otherwise. float16 and bfloat16 use it: their
 * values are few and small, and the precision arguments of fs/text/dtoa.c's
 * searches are made for binary32/64 (a float16 is exactly a float32, but
 * its shortest digits are shorter). check_dtoa holds fs/text/dtoa.c's digits
 * against it. */
#include "dtoa.h"

#include <string.h>

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
