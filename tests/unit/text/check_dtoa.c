/* check_dtoa.c - fs/text/dtoa.c against the exact big-integer search it
 * replaced (render_float_exact) and against the C library.
 *
 * For every float64/float32 value tried, five texts must agree: render's
 * (dtoa.c's digits), the line render_fixed_run writes for it (fs/text/rnum.c,
 * the text views' loop), render_float_exact's (the exact free-format search),
 * dtoa.c's digits laid out by this file's own reading of the contract in
 * render.h, and, for expected values, the text written here. The text
 * must read back to the same bits with strtod/strtof. Values: edge cases
 * (subnormals, min/max, every power of two, integers near 2^53, 17-digit
 * values, short decimals), then random bit patterns.
 *
 * Environment: ZARRFS_DTOA_SAMPLES=N random values per width (default
 * 2,000,000, and 250,000 under sanitizers, where the exact search is
 * slow); ZARRFS_DTOA_EXHAUSTIVE=1 also compares every one of the 2^32
 * float32 bit patterns (tens of minutes), and ZARRFS_DTOA_F64=N compares N
 * more float64 values (10^8: a few minutes) with the exact search: run
 * these with CK_FORK=no so no timeout applies. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/text/dtoa.h"
#include "../../../fs/text/dtoa_pow10.h"
#include "../../../fs/text/render.h"
#include "../testutil.h"

#if defined(__SANITIZE_ADDRESS__)
#define DTOA_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DTOA_SANITIZED 1
#endif
#endif
#ifndef DTOA_SANITIZED
#define DTOA_SANITIZED 0
#endif

/* splitmix64: a fixed sequence, so a failure repeats. */
static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Random values per width. */
static long samples(void) {
  const char *env = getenv("ZARRFS_DTOA_SAMPLES");
  if (env && *env)
    return atol(env);
  return DTOA_SANITIZED ? 250000 : 2000000;
}

/* Text of digits d[0..n) with first-digit exponent x, as render.h
 * describes it, written without render.c's code: plain for x in [-4, 16),
 * else d.ddde+XX with at least two exponent digits. */
static void ref_place(const char *d, int n, int x, int neg, char *out) {
  char *o = out;
  if (neg)
    *o++ = '-';
  if (x < -4 || x >= 16) {
    o += sprintf(o, "%c%s%.*s", d[0], n > 1 ? "." : "", n - 1, d + 1);
    sprintf(o, "e%c%02d", x < 0 ? '-' : '+', abs(x));
  } else if (x < 0) {
    o += sprintf(o, "0.%.*s", -x - 1, "0000");
    sprintf(o, "%.*s", n, d);
  } else {
    for (int i = 0; i <= x; i++)
      *o++ = i < n ? d[i] : '0';
    if (n > x + 1)
      o += sprintf(o, ".%.*s", n - x - 1, d + x + 1);
    *o = '\0';
  }
}

/* The float width under test: float64 or float32. */
struct width {
  enum dtype_kind kind;
  int mant_bits, exp_bits;
  int max_digits;
};
static const struct width W64 = {DT_FLOAT64, 52, 11, 17};
static const struct width W32 = {DT_FLOAT32, 23, 8, 9};

/* All four texts of one bit pattern agree and read back (see the file
 * comment); `want`, if not NULL, is the expected text. Failures abort the
 * test with the bits in the message. Plain ifs rather than ck_assert in
 * the loop: Check records a location per passing assertion, which would
 * dominate millions of cases. */
static void check_bits(const struct width *w, uint64_t bits, const char *want) {
  struct dtype dt = dtype_of(w->kind);
  char fast[RENDER_FIXED_MAX + 8], exact[RENDER_FIXED_MAX + 1];
  memset(fast, '#', sizeof fast);
  size_t nf;
  if (w->kind == DT_FLOAT64) {
    nf = render_fixed(&dt, &bits, fast);
  } else {
    uint32_t b32 = (uint32_t)bits;
    nf = render_fixed(&dt, &b32, fast);
  }
  if (nf > RENDER_FIXED_MAX || fast[nf] != '#')
    ck_abort_msg("bits %#llx: wrote past the text", (unsigned long long)bits);
  fast[nf] = '\0';
  /* the run path (fs/text/rnum.c, the text views' loop) gives the same line */
  char line[3 * RENDER_RUN_ROOM];
  size_t nl;
  if (w->kind == DT_FLOAT64) {
    uint64_t run[3] = {bits, bits, bits};
    nl = render_fixed_run(&dt, run, 3, line);
  } else {
    uint32_t run[3] = {(uint32_t)bits, (uint32_t)bits, (uint32_t)bits};
    nl = render_fixed_run(&dt, run, 3, line);
  }
  if (nl != 3 * (nf + 1) || memcmp(line, fast, nf) || line[nf] != '\n' ||
      memcmp(line + nf + 1, fast, nf) || memcmp(line + 2 * nf + 2, fast, nf) ||
      line[nl - 1] != '\n')
    ck_abort_msg("bits %#llx: render_fixed_run '%.*s', render_fixed '%s'",
                 (unsigned long long)bits, (int)nl, line, fast);
  size_t ne = render_float_exact(bits, w->mant_bits, w->exp_bits, exact);
  exact[ne] = '\0';
  if (nf != ne || memcmp(fast, exact, ne))
    ck_abort_msg("bits %#llx: render '%s', exact search '%s'",
                 (unsigned long long)bits, fast, exact);
  if (want && strcmp(fast, want))
    ck_abort_msg("bits %#llx: '%s', want '%s'", (unsigned long long)bits, fast,
                 want);

  char d[DTOA_DIGITS_MAX + 1];
  int x10 = 12345;
  int n = w->kind == DT_FLOAT64 ? dtoa_shortest_f64(bits, d, &x10)
                                : dtoa_shortest_f32((uint32_t)bits, d, &x10);
  int special = isnan(strtod(fast, NULL)) || isinf(strtod(fast, NULL)) ||
                !strcmp(fast, "0") || !strcmp(fast, "-0");
  if (special) {
    if (n != 0 || x10 != 12345)
      ck_abort_msg("bits %#llx: %d digits for '%s'", (unsigned long long)bits,
                   n, fast);
    return;
  }
  if (n < 1 || n > w->max_digits || d[n - 1] == '0')
    ck_abort_msg("bits %#llx: %d digits", (unsigned long long)bits, n);
  for (int i = n; i < DTOA_DIGITS_MAX; i++)
    if (d[i] != '0')
      ck_abort_msg("bits %#llx: padding d[%d] = %#x", (unsigned long long)bits,
                   i, (unsigned)(unsigned char)d[i]);
  char ref[RENDER_FIXED_MAX + 8];
  int neg = (int)(bits >> (w->mant_bits + w->exp_bits)) & 1;
  ref_place(d, n, x10, neg, ref);
  if (strcmp(ref, exact))
    ck_abort_msg("bits %#llx: dtoa digits %.*s x %d laid out '%s', exact '%s'",
                 (unsigned long long)bits, n, d, x10, ref, exact);

  if (w->kind == DT_FLOAT64) {
    double back = strtod(fast, NULL);
    uint64_t bb;
    memcpy(&bb, &back, 8);
    if (bb != bits)
      ck_abort_msg("bits %#llx: '%s' reads back as %#llx",
                   (unsigned long long)bits, fast, (unsigned long long)bb);
  } else {
    float back = strtof(fast, NULL);
    uint32_t bb;
    memcpy(&bb, &back, 4);
    if (bb != (uint32_t)bits)
      ck_abort_msg("bits %#llx: '%s' reads back as %#x",
                   (unsigned long long)bits, fast, (unsigned)bb);
  }
}

/* check_bits for a double / float value. */
static void check_f64(double v, const char *want) {
  uint64_t b;
  memcpy(&b, &v, 8);
  check_bits(&W64, b, want);
}
static void check_f32(float v, const char *want) {
  uint32_t b;
  memcpy(&b, &v, 4);
  check_bits(&W32, b, want);
}

START_TEST(f64_named_values) {
  check_f64(5e-324, "5e-324"); /* the smallest subnormal */
  check_f64(1e-323, "1e-323");
  check_f64(1.5e-323, "1.5e-323");
  check_f64(2.225073858507201e-308, "2.225073858507201e-308");
  check_f64(2.2250738585072014e-308, "2.2250738585072014e-308");
  check_f64(1.7976931348623157e308, "1.7976931348623157e+308");
  check_f64(-1.7976931348623157e308, "-1.7976931348623157e+308");
  check_f64(9007199254740991.0, "9007199254740991"); /* 2^53 - 1 */
  check_f64(9007199254740992.0, "9007199254740992"); /* 2^53 */
  /* 9007199254740993 is not a double: it reads as 2^53 */
  check_f64(strtod("9007199254740993", NULL), "9007199254740992");
  check_f64(9007199254740994.0, "9007199254740994");
  check_f64(18014398509481984.0, "1.8014398509481984e+16"); /* 2^54 */
  check_f64(0.1, "0.1");
  check_f64(0.30000000000000004, "0.30000000000000004"); /* 17 digits */
  check_f64(1.0 / 3, "0.3333333333333333");
  check_f64(2.0 / 3, "0.6666666666666666");
  check_f64(123456789012345680.0, "1.2345678901234568e+17");
  check_f64(1e23, "1e+23");
  check_f64(8.41e21, "8.41e+21");
  check_f64(5.0e-324 * 3, "1.5e-323");
  check_f64(1e-5, "1e-05");
  check_f64(1.5e16, "1.5e+16");
  check_f64(1e16, "1e+16");
  check_f64(9999999999999998.0, "9999999999999998");
  check_f64(0.0001, "0.0001");
  check_f64(0.00012345678901234567, "0.00012345678901234567");
  check_f64(-0.0, "-0");
  check_f64(0.0, "0");
  check_f64(INFINITY, "inf");
  check_f64(-INFINITY, "-inf");
  check_f64(NAN, "nan");
  check_f64(4.940656458412465e-324 * 2, "1e-323");
  check_f64(2.9802322387695312e-08, "2.9802322387695312e-08"); /* 2^-25 */
  check_f64(5e-310, "5e-310");
}
END_TEST

START_TEST(f32_named_values) {
  check_f32(1e-45f, "1e-45"); /* the smallest subnormal */
  check_f32(3e-45f, "3e-45");
  check_f32(1.1754942e-38f, "1.1754942e-38"); /* the largest subnormal */
  check_f32(1.1754944e-38f, "1.1754944e-38"); /* the smallest normal */
  check_f32(3.4028235e38f, "3.4028235e+38");
  check_f32(16777216.0f, "16777216");
  check_f32(16777218.0f, "16777218");
  check_f32(0.1f, "0.1");
  check_f32(1.0f / 3, "0.33333334");
  check_f32(7.038531e-26f, "7.038531e-26");
  check_f32(3.3554432e7f, "33554432");
  check_f32(1e10f, "10000000000");
  check_f32(-2.5f, "-2.5");
  check_f32(0.0f, "0");
  check_f32(-0.0f, "-0");
  check_f32(INFINITY, "inf");
  check_f32(NAN, "nan");
}
END_TEST

/* Bit patterns near each power of two (the unequal-gap case and its
 * neighbours), every small and every large subnormal, the normals next to
 * the subnormals and the largest values: float64 or float32. */
static void edges(const struct width *w) {
  int mb = w->mant_bits, eb = w->exp_bits;
  uint64_t one = 1, mant_max = (one << mb) - 1;
  for (uint64_t ef = 0; ef < (one << eb) - 1; ef++)
    for (uint64_t m = 0; m < 4; m++) {
      check_bits(w, ef << mb | m, NULL);
      check_bits(w, ef << mb | (mant_max - m), NULL);
    }
  for (uint64_t m = 1; m < 20000; m++) { /* subnormals, both ends */
    check_bits(w, m, NULL);
    check_bits(w, mant_max + 1 - m, NULL);
    check_bits(w, (one << (mb + eb)) | m, NULL); /* negative */
  }
}

START_TEST(f64_edges) { edges(&W64); }
END_TEST

START_TEST(f32_edges) { edges(&W32); }
END_TEST

START_TEST(integers_and_short_decimals) {
  /* Integers (through render's integer path and dtoa.c's digits), their
   * neighbours, and short decimals k * 10^j: these pick a shorter
   * candidate (a multiple of ten) in dtoa.c. */
  for (int i = 1; i < 20000; i++) {
    check_f64(i, NULL);
    check_f32((float)i, NULL);
    check_f64(nextafter(i, 0), NULL);
    check_f64(nextafter(i, 1e300), NULL);
  }
  for (int64_t v = 9007199254740992 - 2000; v < 9007199254740992 + 2000; v++)
    check_f64((double)v, NULL);
  for (int j = -30; j <= 30; j++)
    for (int k = 1; k < 1000; k++) {
      double v = k * pow(10, j);
      check_f64(v, NULL);
      check_f64(nextafter(v, 0), NULL);
      check_f64(nextafter(v, INFINITY), NULL);
      check_f32((float)v, NULL);
    }
  for (int j = -323; j <= 308; j++) { /* every power of ten */
    char t[16];
    snprintf(t, sizeof t, "1e%d", j);
    check_f64(strtod(t, NULL), NULL);
    if (j >= -45 && j <= 38)
      check_f32(strtof(t, NULL), NULL);
  }
}
END_TEST

/* Unsigned integers of up to 1536 bits for f64_scaling, little-endian
 * 32-bit words (all of them compared and added: no length kept). */
struct tbig {
  uint32_t w[48];
};

/* x = 5^a * 2^b (a, b >= 0). */
static void tbig_pow(struct tbig *x, int a, int b) {
  memset(x, 0, sizeof *x);
  x->w[b / 32] = 1u << (b % 32);
  for (int i = 0; i < a; i++) {
    uint64_t carry = 0;
    for (int j = 0; j < 48; j++) {
      uint64_t t = (uint64_t)x->w[j] * 5 + carry;
      x->w[j] = (uint32_t)t;
      carry = t >> 32;
    }
  }
}

/* x = y * m * 2^(32 sh) + add (add may be NULL); nothing reaches the top
 * words for the operands here. */
static void tbig_muladd(struct tbig *x, const struct tbig *y, uint64_t m,
                        int sh, const struct tbig *add) {
  struct tbig r;
  memset(&r, 0, sizeof r);
  for (int h = 0; h < 2; h++) {
    uint64_t carry = 0;
    for (int j = 0; j + h + sh < 48; j++) {
      uint64_t t = (uint64_t)y->w[j] * (uint32_t)(m >> (32 * h)) +
                   r.w[j + h + sh] + carry;
      r.w[j + h + sh] = (uint32_t)t;
      carry = t >> 32;
    }
  }
  if (add) {
    uint64_t carry = 0;
    for (int j = 0; j < 48; j++) {
      uint64_t t = (uint64_t)r.w[j] + add->w[j] + carry;
      r.w[j] = (uint32_t)t;
      carry = t >> 32;
    }
  }
  *x = r;
}

/* x = y - z (y >= z). */
static void tbig_sub(struct tbig *x, const struct tbig *y,
                     const struct tbig *z) {
  uint64_t borrow = 0;
  for (int j = 0; j < 48; j++) {
    uint64_t t = (uint64_t)y->w[j] - z->w[j] - borrow;
    x->w[j] = (uint32_t)t;
    borrow = t >> 63;
  }
}

/* -1, 0, 1 as a <, ==, > b. */
static int tbig_cmp(const struct tbig *a, const struct tbig *b) {
  for (int i = 47; i >= 0; i--)
    if (a->w[i] != b->w[i])
      return a->w[i] < b->w[i] ? -1 : 1;
  return 0;
}

/* Whether lo <= a * 2^(32 sh) / b < hi. */
static int tbig_within(const struct tbig *a, const struct tbig *b, uint64_t lo,
                       uint64_t hi, int sh) {
  struct tbig as, blo, bhi;
  tbig_muladd(&as, a, 1, sh, NULL);
  tbig_muladd(&blo, b, lo, 0, NULL);
  tbig_muladd(&bhi, b, hi, 0, NULL);
  return tbig_cmp(&blo, &as) <= 0 && tbig_cmp(&as, &bhi) < 0;
}

START_TEST(f64_scaling) {
  /* What fs/text/dtoa.c's binary64 search takes from the power-of-ten table,
   * for every binary exponent q of a normal it searches (ef > 5): with
   * k = floor(q log10 2) and k0 = 2 - k, delta = 2^q 10^k0 lies in
   * [2^beta, 2^(beta+1)) within [100, 1000); the table's 10^k0 scaled to
   * 128 bits, G, exceeds the exact value by at most 4; the integer part
   * of delta read from G is floor(delta), and the 64 bits below it, and
   * those below floor(delta / 2), are frac(delta) and frac(delta / 2)
   * within one unit. Exact integer arithmetic, with delta = A / B. */
  for (int ef = 6; ef <= 2046; ef++) {
    int q = ef - 1075, k = (q * 315653) >> 20, k0 = 2 - k;
    int beta = q + ((k0 * 1741647) >> 19), e2 = q + k0;
    int a5 = k0 > 0 ? k0 : 0, a2 = e2 > 0 ? e2 : 0;
    struct tbig a, b, a127, gb, gb4, t, fr, fr2;
    tbig_pow(&a, a5, a2);
    tbig_pow(&b, k0 < 0 ? -k0 : 0, e2 < 0 ? -e2 : 0);
    ck_assert_msg(
        beta >= 6 && beta <= 9 && tbig_within(&a, &b, 100, 1000, 0) &&
            tbig_within(&a, &b, (uint64_t)1 << beta, (uint64_t)2 << beta, 0),
        "q %d: delta not in [2^%d, 2^%d) within [100, 1000)", q, beta,
        beta + 1);
    /* (G - 4) B <= A 2^(127 - beta) < G B: G is 10^k0 2^(127 - beta + q)
     * rounded up by at most 4 (its low two bits are 0, so gl >= 4) */
    const uint64_t *g = dtoa_pow10_g[k - 2 - DTOA_K_MIN];
    uint64_t gh = g[0] << 2 | g[1] >> 62, gl = g[1] << 2;
    tbig_pow(&a127, a5, a2 + 127 - beta);
    tbig_muladd(&t, &b, gl, 0, NULL);
    tbig_muladd(&gb, &b, gh, 2, &t);
    tbig_muladd(&t, &b, gl - 4, 0, NULL);
    tbig_muladd(&gb4, &b, gh, 2, &t);
    ck_assert_msg(gl >= 4 && tbig_cmp(&gb4, &a127) <= 0 &&
                      tbig_cmp(&a127, &gb) < 0,
                  "q %d: table entry not within 4 above 10^%d", q, k0);
    /* floor(delta): deltai B <= A < (deltai + 1) B */
    uint64_t deltai = gh >> (63 - beta);
    ck_assert_msg(tbig_within(&a, &b, deltai, deltai + 1, 0),
                  "q %d: floor(delta) is not %llu", q,
                  (unsigned long long)deltai);
    /* frac(delta) = (A - deltai B) / B, and frac(delta / 2) =
     * (A - (deltai & ~1) B) / 2B */
    uint64_t fd = gh << (beta + 1) | gl >> (63 - beta);
    uint64_t h = gh << beta | gl >> (64 - beta);
    tbig_muladd(&t, &b, deltai, 0, NULL);
    tbig_sub(&fr, &a, &t);
    tbig_muladd(&t, &b, deltai & ~(uint64_t)1, 0, NULL);
    tbig_sub(&fr2, &a, &t);
    tbig_muladd(&t, &b, 2, 0, NULL);
    ck_assert_msg(tbig_within(&fr, &b, fd ? fd - 1 : 0,
                              fd == UINT64_MAX ? fd : fd + 1, 2),
                  "q %d: frac(delta) is not %#llx", q, (unsigned long long)fd);
    ck_assert_msg(
        tbig_within(&fr2, &t, h ? h - 1 : 0, h == UINT64_MAX ? h : h + 1, 2),
        "q %d: frac(delta / 2) is not %#llx", q, (unsigned long long)h);
  }
}
END_TEST

/* The values of fs/text/dtoa.c's binary64 search whose interval ends or
 * value land exactly on what its rounding has to tell apart: with
 * v = c 2^q, scaled by 10^k0 so the gap lies in [100, 1000), the high
 * end (2c + 1) 2^(q-1) 10^k0, the low end (2c - 1) 2^(q-1) 10^k0 or the
 * value itself an integer (a multiple of 1000 among them: an end on a
 * short candidate; or 50 past a multiple of 100: a tie). Where
 * k0 = 2 - floor(q log10 2) < 0 that takes c, 2c + 1 or 2c - 1 divisible
 * by 5^-k0 (c below 2^53 allows -k0 <= 23): runs of consecutive such
 * significands, at the low end, the middle and the top of [2^52, 2^53),
 * for every exponent where it can happen. Also every significand form
 * near the smallest normals, where the search hands over to another. */
START_TEST(f64_exact_ends) {
  const uint64_t lo = (uint64_t)1 << 52, hi = (uint64_t)1 << 53;
  const uint64_t run = DTOA_SANITIZED ? 200 : 700; /* significands a run */
  for (int q = -3; q <= 90; q++) {
    int k0 = 2 - (int)floor(q * log10(2.0));
    uint64_t p5 = 1;
    for (int i = 0; i < -k0 && p5 < hi; i++)
      p5 *= 5;
    if (p5 >= hi)
      break;
    /* c = 0, (p5 - 1) / 2, (p5 + 1) / 2 mod p5: c, 2c + 1, 2c - 1 */
    uint64_t res[3] = {0, (p5 - 1) / 2, (p5 + 1) / 2 % p5};
    for (int f = 0; f < 3; f++) {
      uint64_t first = (lo - res[f] + p5 - 1) / p5,
               last = (hi - 1 - res[f]) / p5;
      uint64_t starts[3] = {first, first + (last - first) / 2,
                            last > run ? last - run : 0};
      for (int st = 0; st < 3; st++)
        for (uint64_t t = starts[st]; t < starts[st] + run && t <= last; t++) {
          uint64_t c = res[f] + t * p5;
          if (c <= lo || c >= hi)
            continue;
          uint64_t ef = (uint64_t)(q + 1075);
          check_bits(&W64, ef << 52 | (c - lo), NULL);
        }
    }
  }
  uint64_t s = 0x5eedef;
  for (uint64_t ef = 1; ef <= 12; ef++)
    for (uint64_t i = 0; i < 30 * run; i++)
      check_bits(&W64, ef << 52 | (next_rand(&s) >> 12), NULL);
}
END_TEST

START_TEST(f64_random) {
  /* Half random bit patterns (every exponent), half values in [0, 1)
   * and random 17-significant-digit decimals (typical data). */
  uint64_t s = 0x5eed64;
  long n = samples();
  for (long i = 0; i < n; i++) {
    uint64_t r = next_rand(&s);
    if (i % 4 == 1) {
      double v = (double)(r >> 11) * 0x1p-53;
      memcpy(&r, &v, 8);
    } else if (i % 4 == 3) {
      char t[40];
      snprintf(t, sizeof t, "%llu.%016llue%d", (unsigned long long)(r % 10),
               (unsigned long long)(r >> 8) % 10000000000000000ull,
               (int)(r >> 58) - 32);
      double v = strtod(t, NULL);
      memcpy(&r, &v, 8);
    }
    check_bits(&W64, r, NULL);
  }
}
END_TEST

START_TEST(f32_random) {
  uint64_t s = 0x5eed32;
  long n = samples();
  for (long i = 0; i < n; i++) {
    uint64_t r = next_rand(&s);
    check_bits(&W32, (uint32_t)r, NULL);
    if (i % 2) { /* a float in [0, 1) */
      float f = (float)(r >> 40) * 0x1p-24f;
      uint32_t b;
      memcpy(&b, &f, 4);
      check_bits(&W32, b, NULL);
    }
  }
}
END_TEST

START_TEST(f32_exhaustive) {
  /* Every float32 bit pattern, on request (see the file comment). */
  const char *env = getenv("ZARRFS_DTOA_EXHAUSTIVE");
  if (!env || strcmp(env, "1"))
    return;
  /* Only render and the run path against the exact search (the slow
   * checks of check_bits gain nothing here: the exact search's texts read
   * back). */
  struct dtype dt = dtype_of(DT_FLOAT32);
  for (uint64_t b = 0; b <= 0xffffffffu; b++) {
    uint32_t b32 = (uint32_t)b;
    char fast[RENDER_FIXED_MAX], exact[RENDER_FIXED_MAX];
    size_t nf = render_fixed(&dt, &b32, fast);
    size_t ne = render_float_exact(b, 23, 8, exact);
    if (nf != ne || memcmp(fast, exact, ne))
      ck_abort_msg("float32 bits %#x: render '%.*s', exact search '%.*s'",
                   (unsigned)b32, (int)nf, fast, (int)ne, exact);
    char line[RENDER_RUN_ROOM];
    size_t nl = render_fixed_run(&dt, &b32, 1, line);
    if (nl != nf + 1 || memcmp(line, fast, nf) || line[nf] != '\n')
      ck_abort_msg("float32 bits %#x: render_fixed_run '%.*s', render '%.*s'",
                   (unsigned)b32, (int)nl, line, (int)nf, fast);
    if ((b & 0xfffffff) == 0xfffffff)
      fprintf(stderr, "f32_exhaustive: %.0f%%\n",
              (double)(b + 1) / 0x1p32 * 100);
  }
}
END_TEST

/* Value i of the opt-in float64 run, from one random word r: a mix of
 * every finite and special pattern, typical data and values whose shortest
 * digits are few (where dtoa.c takes a multiple of ten). */
static uint64_t many_f64(long i, uint64_t r) {
  static const double p10[10] = {1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9};
  double v;
  switch (i % 8) {
  case 0: /* any bit pattern */
  case 1:
    return r;
  case 2: /* uniform in [0, 1) */
    v = (double)(r >> 11) * 0x1p-53;
    break;
  case 3: /* a short decimal: up to 9 digits, up to 9 after the point */
    v = (double)(r % (uint64_t)p10[1 + (r >> 60) % 9]) / p10[(r >> 56) % 10];
    break;
  case 4: /* a random significand at exponents of measured data */
    return (r & 0x800fffffffffffffull) | (uint64_t)(983 + (r >> 52) % 100)
                                             << 52;
  case 5: /* few significand bits: near powers of two */
    return (r & 0x8000000000000fffull) | (r & 0x7ff0000000000000ull);
  case 6: /* 17 significant digits written as a decimal */
    if (i % 64 == 6) {
      char t[40];
      snprintf(t, sizeof t, "%llu.%016llue%d", (unsigned long long)(r % 10),
               (unsigned long long)(r >> 8) % 10000000000000000ull,
               (int)(r >> 56) % 40 - 20);
      v = strtod(t, NULL);
      break;
    }
    /* fall through */
  default: /* an integer times a small power of ten */
    v = (double)(int64_t)(r >> 24) * p10[(r >> 8) % 10] * 1e-9;
    break;
  }
  uint64_t b;
  memcpy(&b, &v, 8);
  return b;
}

START_TEST(f64_many) {
  /* ZARRFS_DTOA_F64 float64 values against the exact search, on request
   * (see the file comment); render and the run path, as f32_exhaustive. */
  const char *env = getenv("ZARRFS_DTOA_F64");
  long n = env ? atol(env) : 0;
  struct dtype dt = dtype_of(DT_FLOAT64);
  uint64_t s = 0x5eed6464;
  for (long i = 0; i < n; i++) {
    uint64_t b = many_f64(i, next_rand(&s));
    char fast[RENDER_FIXED_MAX], exact[RENDER_FIXED_MAX];
    size_t nf = render_fixed(&dt, &b, fast);
    size_t ne = render_float_exact(b, 52, 11, exact);
    if (nf != ne || memcmp(fast, exact, ne))
      ck_abort_msg("float64 bits %#llx: render '%.*s', exact search '%.*s'",
                   (unsigned long long)b, (int)nf, fast, (int)ne, exact);
    char line[RENDER_RUN_ROOM];
    size_t nl = render_fixed_run(&dt, &b, 1, line);
    if (nl != nf + 1 || memcmp(line, fast, nf) || line[nf] != '\n')
      ck_abort_msg("float64 bits %#llx: render_fixed_run '%.*s', render '%.*s'",
                   (unsigned long long)b, (int)nl, line, (int)nf, fast);
    if ((i + 1) % 10000000 == 0)
      fprintf(stderr, "f64_many: %ld of %ld\n", i + 1, n);
  }
}
END_TEST

/* dtoa_u64 of v equals printf's and writes nothing past it. */
static void check_u64(uint64_t v) {
  char buf[DTOA_U64_MAX + 4], want[32];
  memset(buf, '#', sizeof buf);
  size_t n = dtoa_u64(v, buf);
  int wn = snprintf(want, sizeof want, "%llu", (unsigned long long)v);
  if (n != (size_t)wn || memcmp(buf, want, n) || buf[n] != '#')
    ck_abort_msg("dtoa_u64(%s) gave '%.*s'", want, (int)n, buf);
}

START_TEST(u64_decimal) {
  check_u64(0);
  check_u64(UINT64_MAX);
  check_u64(UINT64_MAX - 1);
  uint64_t p = 1;
  for (int i = 0; i < 20; i++, p *= 10) {
    check_u64(p);
    check_u64(p - 1);
    check_u64(p + 1);
    check_u64(p * 2);
    check_u64(p * 9 + p - 1);
  }
  for (uint64_t v = 0; v < 100000; v++)
    check_u64(v);
  for (int sh = 0; sh < 64; sh++) {
    check_u64((uint64_t)1 << sh);
    check_u64(((uint64_t)1 << sh) - 1);
  }
  uint64_t s = 0x5eed;
  for (int i = 0; i < 300000; i++) {
    uint64_t r = next_rand(&s);
    check_u64(r);
    check_u64(r >> (r & 63)); /* every length */
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("dtoa");
  TCase *tc = tcase_create("digits");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, f64_named_values);
  tcase_add_test(tc, f32_named_values);
  tcase_add_test(tc, f64_edges);
  tcase_add_test(tc, f32_edges);
  tcase_add_test(tc, integers_and_short_decimals);
  tcase_add_test(tc, f64_scaling);
  tcase_add_test(tc, f64_exact_ends);
  tcase_add_test(tc, f64_random);
  tcase_add_test(tc, f32_random);
  tcase_add_test(tc, f32_exhaustive);
  tcase_add_test(tc, f64_many);
  tcase_add_test(tc, u64_decimal);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
