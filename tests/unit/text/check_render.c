/* check_render.c - the text contract for every element type: exact
 * shortest floats (checked against the C library's own conversions),
 * integer extremes, integer runs made two at a time, strings and hex,
 * and sub-ranges of variable-length
 * text at every offset, element by element and by runs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "../../../fs/text/render.h"
#include "../testutil.h"

/* Render a double (float64) and compare. */
static void f64_is(double v, const char *want) {
  struct dtype dt = dtype_of(DT_FLOAT64);
  char buf[RENDER_FIXED_MAX];
  size_t n = render_fixed(&dt, &v, buf);
  ck_assert_msg(n == strlen(want) && !memcmp(buf, want, n),
                "%.17g rendered as '%.*s', want '%s'", v, (int)n, buf, want);
}

/* Render a float (float32) and compare. */
static void f32_is(float v, const char *want) {
  struct dtype dt = dtype_of(DT_FLOAT32);
  char buf[RENDER_FIXED_MAX];
  size_t n = render_fixed(&dt, &v, buf);
  ck_assert_msg(n == strlen(want) && !memcmp(buf, want, n),
                "%.9g rendered as '%.*s', want '%s'", (double)v, (int)n, buf,
                want);
}

START_TEST(floats_shortest) {
  f64_is(0.1, "0.1");
  f64_is(0.5, "0.5");
  f64_is(-3, "-3");
  f64_is(100, "100");
  f64_is(1e20, "1e+20");
  f64_is(1e16, "1e+16");
  f64_is(1e15, "1000000000000000");
  f64_is(0.0001, "0.0001");
  f64_is(1e-5, "1e-05");
  f64_is(5e-324, "5e-324");
  f64_is(1.7976931348623157e308, "1.7976931348623157e+308");
  f64_is(-0.0, "-0");
  f64_is(0.0, "0");
  f64_is(123.456, "123.456");
  f64_is(NAN, "nan");
  f64_is(-NAN, "nan");
  f64_is(INFINITY, "inf");
  f64_is(-INFINITY, "-inf");
  f32_is(0.1f, "0.1");
  f32_is(3.14159274f, "3.1415927");
  f32_is(-0.0f, "-0");
  f32_is(1e-10f, "1e-10");
  f32_is(NAN, "nan");
  uint32_t payload = 0x7fc00123;
  float pn;
  memcpy(&pn, &payload, 4);
  f32_is(pn, "nan");
  payload = 0xffbfffff; /* negative signalling NaN */
  memcpy(&pn, &payload, 4);
  f32_is(pn, "nan");
  uint64_t payload64 = 0xfff0000000000001ull;
  double pn64;
  memcpy(&pn64, &payload64, 8);
  f64_is(pn64, "nan");
  f64_is(1e100, "1e+100");
  f64_is(-1e-300, "-1e-300");
  f64_is(2.2250738585072014e-308, "2.2250738585072014e-308"); /* min normal */
  f64_is(2.225073858507201e-308, "2.225073858507201e-308"); /* max subnormal */
  f64_is(9007199254740993.0, "9007199254740992"); /* 2^53 + 1 rounds down */
  f64_is(9007199254740994.0, "9007199254740994");
  f64_is(123456789012345680.0, "1.2345678901234568e+17");
  f64_is(0.3, "0.3");
  f64_is(2.0 / 3.0, "0.6666666666666666");
  f64_is(1.0 / 3.0, "0.3333333333333333");
  f64_is(0.000123, "0.000123");
  f64_is(-1.5e-5, "-1.5e-05");
  f64_is(4.35, "4.35");
  f64_is(1e22, "1e+22");
  f64_is(1e23, "1e+23"); /* the double nearest 1e23 is below it */
  f64_is(5e-324 * 3, "1.5e-323");
  f32_is(123456789.0f, "123456790"); /* 123456792 exactly; plain below 1e16 */
  f32_is(16777216.0f, "16777216");
  f32_is(16777217.0f, "16777216");
  f32_is(3.4028235e38f, "3.4028235e+38");
  f32_is(1e-45f, "1e-45"); /* smallest subnormal */
  f32_is(1.17549435e-38f, "1.1754944e-38");
  f32_is(0.3f, "0.3");
  f32_is(1.0f / 3.0f, "0.33333334");
  f32_is(1e10f, "10000000000");
  f32_is(-2.5f, "-2.5");
  f32_is(INFINITY, "inf");
  f32_is(-INFINITY, "-inf");
  /* Nothing is written past the returned length, and the longest texts
   * fit RENDER_FIXED_MAX. */
  struct dtype dt = dtype_of(DT_FLOAT64);
  char buf[RENDER_FIXED_MAX + 8];
  memset(buf, '#', sizeof buf);
  double v = -2.2250738585072014e-308;
  size_t n = render_fixed(&dt, &v, buf);
  ck_assert_uint_eq(n, strlen("-2.2250738585072014e-308"));
  ck_assert_int_eq(buf[n], '#');
  v = -0.00012345678901234567;
  n = render_fixed(&dt, &v, buf);
  ck_assert_uint_le(n, RENDER_FIXED_MAX);
  ck_assert_int_eq(memcmp(buf, "-0.00012345678901234567", n), 0);
}
END_TEST

/* Significant digits of a rendering (no sign, point, exponent, or the
 * zeros that only place the point). */
static int sig_digits(const char *s, size_t n) {
  char d[64];
  int k = 0;
  for (size_t i = 0; i < n && s[i] != 'e'; i++)
    if (s[i] >= '0' && s[i] <= '9' && (k || s[i] != '0'))
      d[k++] = s[i];
  while (k > 1 && d[k - 1] == '0')
    k--;
  return k;
}

/* Fewest digits printf needs to round-trip v at its width. */
static int printf_shortest(double v, int is_f32) {
  char t[64];
  for (int p = 1; p < 17; p++) {
    snprintf(t, sizeof t, "%.*e", p - 1, v);
    if (is_f32 ? strtof(t, NULL) == (float)v : strtod(t, NULL) == v)
      return p;
  }
  return 17;
}

START_TEST(floats_never_longer_than_printf) {
  /* The search finds digits at least as short as printf's correctly
   * rounded ones, for both widths, across all magnitudes. */
  struct dtype d64 = dtype_of(DT_FLOAT64), d32 = dtype_of(DT_FLOAT32);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 20000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double v;
    memcpy(&v, &s, 8);
    if (i % 2)
      v = (double)(s >> 20) / (double)(1 + s % 100000); /* everyday sizes */
    if (!isfinite(v) || v == 0)
      continue;
    char buf[RENDER_FIXED_MAX + 1];
    size_t n = render_fixed(&d64, &v, buf);
    buf[n] = '\0';
    ck_assert_msg(sig_digits(buf, n) <= printf_shortest(v, 0),
                  "%s longer than printf for %.17g", buf, v);
    float f = (float)v;
    if (!isfinite(f) || f == 0)
      continue;
    n = render_fixed(&d32, &f, buf);
    buf[n] = '\0';
    float back = strtof(buf, NULL);
    ck_assert_msg(!memcmp(&back, &f, 4), "%s does not read back as float32",
                  buf);
    ck_assert_msg(sig_digits(buf, n) <= printf_shortest(f, 1),
                  "%s longer than printf for float32 %.9g", buf, (double)f);
  }
}
END_TEST

START_TEST(float16_every_value) {
  /* All 65536 patterns: NaNs are "nan", everything else reads back. */
  struct dtype dt = dtype_of(DT_FLOAT16);
  for (uint32_t b = 0; b < 65536; b++) {
    uint16_t h = (uint16_t)b;
    char buf[RENDER_FIXED_MAX + 1];
    size_t n = render_fixed(&dt, &h, buf);
    buf[n] = '\0';
    ck_assert_uint_le(n, 12);
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      ck_assert_str_eq(buf, "nan");
      continue;
    }
    _Float16 back = (_Float16)strtod(buf, NULL);
    uint16_t bb;
    memcpy(&bb, &back, 2);
    ck_assert_msg(bb == h, "%04x rendered as %s, reads back as %04x", h, buf,
                  bb);
  }
}
END_TEST

START_TEST(float16_shortest) {
  struct dtype dt = dtype_of(DT_FLOAT16);
  static const struct {
    uint16_t bits;
    const char *want;
  } t[] = {{0x2e66, "0.1"},   {0x7bff, "65500"}, {0x0001, "6e-08"},
           {0x8000, "-0"},    {0x3c00, "1"},     {0xc100, "-2.5"},
           {0x7e00, "nan"},   {0x7c00, "inf"},   {0xfc00, "-inf"},
           {0x3555, "0.3333"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, &t[i].bits, buf);
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "%04x rendered as '%.*s', want '%s'", t[i].bits, (int)n, buf,
                  t[i].want);
  }
}
END_TEST

START_TEST(datetime64_iso) {
  static const struct {
    enum dtype_time_unit unit;
    int64_t scale, v;
    const char *want;
  } t[] = {{DTU_D, 1, 0, "1970-01-01"},
           {DTU_D, 1, -1, "1969-12-31"},
           {DTU_D, 1, 19358, "2023-01-01"},
           {DTU_D, 1, 11016, "2000-02-29"},
           {DTU_D, 2, 1, "1970-01-03"},
           {DTU_W, 1, 1, "1970-01-08"},
           {DTU_M, 1, 0, "1970-01"},
           {DTU_M, 1, -1, "1969-12"},
           {DTU_Y, 1, 53, "2023"},
           {DTU_h, 1, 25, "1970-01-02T01"},
           {DTU_m, 1, 61, "1970-01-01T01:01"},
           {DTU_s, 1, 1672531200, "2023-01-01T00:00:00"},
           {DTU_ms, 1, 1672617600123, "2023-01-02T00:00:00.123"},
           {DTU_ns, 1, -1, "1969-12-31T23:59:59.999999999"},
           {DTU_us, 1, INT64_MIN, "NaT"},
           /* Years in at least 4 digits, as numpy writes them. */
           {DTU_D, 1, -717701, "0005-01-01"},
           {DTU_Y, 1, -1970, "0000"},
           {DTU_Y, 1, -1971, "-001"},
           {DTU_Y, 1000000000000, 5, "5000000001970"},
           /* The ends of the 64-bit ranges are still dates. */
           {DTU_ns, 1, INT64_MAX, "2262-04-11T23:47:16.854775807"},
           {DTU_ns, 1, INT64_MIN + 1, "1677-09-21T00:12:43.145224193"},
           {DTU_D, 1, INT64_MAX, "25252734927768524-07-27"},
           {DTU_D, 1, INT64_MAX - 719468, "25252734927766554-09-25"},
           {DTU_D, 1, INT64_MAX - 719467, "25252734927766554-09-26"},
           {DTU_D, 1, -INT64_MAX, "-25252734927764585-06-08"},
           {DTU_W, 1, INT64_MAX / 7, "25252734927768524-07-27"},
           {DTU_D, 3, INT64_MAX / 3, "25252734927768524-07-26"},
           {DTU_s, 1, INT64_MAX, "292277026596-12-04T15:30:07"},
           /* Past them (count x scale, x 7 for weeks, 1970 + years
            * overflow): the count and the scaled unit, never a wrapped
            * date. */
           {DTU_Y, 1000000000000, 10000000, "10000000[1000000000000Y]"},
           {DTU_Y, 1000000000000, -10000000, "-10000000[1000000000000Y]"},
           {DTU_Y, 1, INT64_MAX, "9223372036854775807[Y]"},
           {DTU_Y, 1, INT64_MAX - 1969, "9223372036854773838[Y]"},
           {DTU_M, INT64_MAX, 2, "2[9223372036854775807M]"},
           {DTU_W, 1, INT64_MAX / 7 + 1, "1317624576693539402[W]"},
           {DTU_D, 2, INT64_MIN / 2, "-25252734927764585-06-07"},
           {DTU_D, 2, INT64_MIN / 2 - 1, "-4611686018427387905[2D]"},
           {DTU_s, 10, INT64_MAX / 5, "1844674407370955161[10s]"},
           {DTU_ms, 2, INT64_MAX / 2 + 1, "4611686018427387904[2ms]"},
           {DTU_ns, INT64_MAX, INT64_MAX,
            "9223372036854775807[9223372036854775807ns]"},
           {DTU_us, INT64_MAX, INT64_MIN + 1,
            "-9223372036854775807[9223372036854775807us]"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype dt;
    memset(&dt, 0, sizeof dt);
    dt.kind = DT_DATETIME64;
    dt.size = 8;
    dt.unit = t[i].unit;
    dt.scale = t[i].scale;
    char buf[RENDER_FIXED_MAX + 8];
    memset(buf, '#', sizeof buf);
    size_t n = render_fixed(&dt, &t[i].v, buf);
    ck_assert_uint_le(n, RENDER_FIXED_MAX);
    for (size_t k = RENDER_FIXED_MAX; k < sizeof buf; k++)
      ck_assert_int_eq(buf[k], '#'); /* snprintf's NUL stays inside */
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "case %zu rendered as '%.*s', want '%s'", i, (int)n, buf,
                  t[i].want);
  }
}
END_TEST

START_TEST(complex_text) {
  /* Both parts at the part's width, the imaginary part always signed. */
  static const struct {
    double re, im;
    const char *want64, *want128;
  } t[] = {{1, 2, "1+2j", "1+2j"},
           {0.5, -1.5, "0.5-1.5j", "0.5-1.5j"},
           {NAN, INFINITY, "nan+infj", "nan+infj"},
           {-INFINITY, -NAN, "-inf+nanj", "-inf+nanj"},
           {1, -0.0, "1-0j", "1-0j"},
           {0, 0, "0+0j", "0+0j"},
           {-0.0, -INFINITY, "-0-infj", "-0-infj"},
           {0.1, 1e-30, "0.1+1e-30j", "0.1+1e-30j"},
           {1.0 / 3, 2e20, "0.33333334+2e+20j", "0.3333333333333333+2e+20j"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype d64 = dtype_of(DT_COMPLEX64), d128 = dtype_of(DT_COMPLEX128);
    float f[2] = {(float)t[i].re, (float)t[i].im};
    double d[2] = {t[i].re, t[i].im};
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&d64, f, buf);
    ck_assert_msg(n == strlen(t[i].want64) && !memcmp(buf, t[i].want64, n),
                  "complex64 case %zu: '%.*s', want '%s'", i, (int)n, buf,
                  t[i].want64);
    n = render_fixed(&d128, d, buf);
    ck_assert_msg(n == strlen(t[i].want128) && !memcmp(buf, t[i].want128, n),
                  "complex128 case %zu: '%.*s', want '%s'", i, (int)n, buf,
                  t[i].want128);
  }
  /* The longest complex128 text fits, and nothing is written past it. */
  struct dtype dt = dtype_of(DT_COMPLEX128);
  double v[2] = {-2.2250738585072014e-308, -2.2250738585072014e-308};
  char buf[RENDER_FIXED_MAX + 8];
  memset(buf, '#', sizeof buf);
  size_t n = render_fixed(&dt, v, buf);
  ck_assert_uint_eq(n, 49);
  ck_assert_uint_le(n, RENDER_FIXED_MAX);
  ck_assert_int_eq(
      memcmp(buf, "-2.2250738585072014e-308-2.2250738585072014e-308j", n), 0);
  ck_assert_int_eq(buf[n], '#');
}
END_TEST

/* float32 f rounded (half to even) to bfloat16 bits. */
static uint16_t bf16_of(float f) {
  uint32_t b;
  memcpy(&b, &f, 4);
  return (uint16_t)((b + 0x7fffu + (b >> 16 & 1)) >> 16);
}

START_TEST(bfloat16_every_value) {
  /* All 65536 patterns: NaNs are "nan", everything else reads back at
   * bfloat16 precision (plain up to 1e16, so up to 17 characters). */
  struct dtype dt = dtype_of(DT_BFLOAT16);
  for (uint32_t b = 0; b < 65536; b++) {
    uint16_t h = (uint16_t)b;
    char buf[RENDER_FIXED_MAX + 1];
    size_t n = render_fixed(&dt, &h, buf);
    buf[n] = '\0';
    if ((h & 0x7f80) == 0x7f80 && (h & 0x7f)) {
      ck_assert_str_eq(buf, "nan");
      continue;
    }
    ck_assert_uint_le(n, 17);
    uint16_t back = bf16_of(strtof(buf, NULL));
    ck_assert_msg(back == h, "%04x rendered as %s, reads back as %04x", h, buf,
                  back);
  }
  /* 0x0001 (9.18e-41): its rounding interval holds both 1e-40 and 9e-41;
   * the digit search keeps the first digit position, so 1e-40 (also one
   * digit, also reads back). */
  static const struct {
    uint16_t bits;
    const char *want;
  } t[] = {{0x3dcd, "0.1"},   {0x4049, "3.14"}, {0x7f7f, "3.39e+38"},
           {0x0001, "1e-40"}, {0x3f81, "1.01"}, {0x3f80, "1"},
           {0xbf80, "-1"},    {0x8000, "-0"},   {0x7f80, "inf"},
           {0xff80, "-inf"},  {0x7fc0, "nan"},  {0x4780, "65500"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, &t[i].bits, buf);
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "%04x rendered as '%.*s', want '%s'", t[i].bits, (int)n, buf,
                  t[i].want);
  }
}
END_TEST

START_TEST(timedelta64_iso) {
  static const struct {
    enum dtype_time_unit unit;
    int64_t scale, v;
    const char *want;
  } t[] = {
      {DTU_Y, 1, 3, "P3Y"},
      {DTU_M, 1, -2, "-P2M"},
      {DTU_W, 1, 1, "P1W"},
      {DTU_D, 1, 0, "P0D"},
      {DTU_D, 7, 2, "P14D"},
      {DTU_h, 1, 25, "P1DT1H"},
      {DTU_h, 1, 0, "PT0S"},
      {DTU_m, 1, 61, "PT1H1M"},
      {DTU_m, 1, -1440, "-P1D"},
      {DTU_s, 1, 0, "PT0S"},
      {DTU_s, 1, 59, "PT59S"},
      {DTU_s, 10, 9, "PT1M30S"},
      {DTU_s, 1, 90061, "P1DT1H1M1S"},
      {DTU_ms, 1, 93784007, "P1DT2H3M4.007S"},
      {DTU_ms, 1, 1000, "PT1S"},
      {DTU_ms, 1, 1, "PT0.001S"},
      {DTU_us, 1, 1500000, "PT1.5S"},
      {DTU_us, 1, -86400000001, "-P1DT0.000001S"},
      {DTU_ns, 1, 1, "PT0.000000001S"},
      {DTU_ns, 1, 120000000000, "PT2M"},
      {DTU_ns, 1, INT64_MAX, "P106751DT23H47M16.854775807S"},
      {DTU_ns, 1, INT64_MIN + 1, "-P106751DT23H47M16.854775807S"},
      {DTU_ns, 1, INT64_MIN, "NaT"},
      {DTU_D, 1, INT64_MIN, "NaT"},
      /* The scaled count passes 64 bits. */
      {DTU_D, INT64_MAX, INT64_MAX, "P85070591730234615847396907784232501249D"},
      {DTU_ns, INT64_MAX, -INT64_MAX,
       "-P984613330211048794530056DT19H16M24.232501249S"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype dt;
    memset(&dt, 0, sizeof dt);
    dt.kind = DT_TIMEDELTA64;
    dt.size = 8;
    dt.unit = t[i].unit;
    dt.scale = t[i].scale;
    char buf[RENDER_FIXED_MAX + 8];
    memset(buf, '#', sizeof buf);
    size_t n = render_fixed(&dt, &t[i].v, buf);
    ck_assert_uint_le(n, RENDER_FIXED_MAX);
    ck_assert_int_eq(buf[n], '#');
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "case %zu rendered as '%.*s', want '%s'", i, (int)n, buf,
                  t[i].want);
  }
}
END_TEST

START_TEST(sub_byte_integers) {
  /* One byte each, shown as stored (the decoders sign-extend). */
  static const struct {
    enum dtype_kind kind;
    uint8_t byte;
    const char *want;
  } t[] = {{DT_INT2, 0xfe, "-2"}, {DT_INT2, 0x01, "1"},  {DT_INT4, 0xf8, "-8"},
           {DT_INT4, 0x07, "7"},  {DT_UINT2, 0x03, "3"}, {DT_UINT4, 0x0f, "15"},
           {DT_UINT4, 0x00, "0"}, {DT_INT4, 0xff, "-1"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype dt = dtype_of(t[i].kind);
    ck_assert_uint_eq(dt.size, 1);
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, &t[i].byte, buf);
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "case %zu: '%.*s', want '%s'", i, (int)n, buf, t[i].want);
  }
}
END_TEST

/* A data type from its V3 JSON (test literals: a bad one fails the test). */
static struct dtype dtype_from(const char *json) {
  json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
  ck_assert_ptr_nonnull(j);
  struct dtype dt;
  struct zerr err = {0};
  ck_assert_msg(dtype_parse_v3(j, &dt, &err) == 0, "%s", err.msg);
  json_decref(j);
  return dt;
}

/* Nested optionals: each layer's presence byte after the value, innermost
 * first; the text names the outermost missing layer ([null] inside one
 * present layer), a value present in every layer as the value (the
 * elements of zarrs' array_optional_nested.zarr chunk c/0/0, decoded by
 * tests/unit/codecs/check_optional.c; eight layers are the most held). */
START_TEST(optional_nested_text) {
  struct dtype dt = dtype_from(
      "{\"name\":\"optional\",\"configuration\":{\"name\":\"optional\","
      "\"configuration\":{\"name\":\"uint8\",\"configuration\":{}}}}");
  static const uint8_t els[4][3] = {{0, 0, 0}, {0, 0, 1}, {0, 0, 0}, {5, 1, 1}};
  static const char *const text[] = {"null", "[null]", "null", "5"};
  for (int i = 0; i < 4; i++) {
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, els[i], buf);
    ck_assert_msg(n == strlen(text[i]) && !memcmp(buf, text[i], n),
                  "element %d: '%.*s'", i, (int)n, buf);
  }
  char deep[1024] = "{\"name\":\"uint8\"}";
  for (int layers = 1; layers <= 8; layers++) {
    char t[1100];
    snprintf(t, sizeof t, "{\"name\":\"zarrs.optional\",\"configuration\":%s}",
             deep);
    memcpy(deep, t, strlen(t) + 1);
  }
  struct dtype d8 = dtype_from(deep);
  ck_assert_uint_eq(d8.depth, 8);
  uint8_t el[9] = {42, 0, 1, 1, 1, 1, 1, 1, 1}; /* missing inside seven */
  char buf[RENDER_FIXED_MAX];
  size_t n = render_fixed(&d8, el, buf);
  ck_assert_int_eq((int)n, 18);
  ck_assert_int_eq(memcmp(buf, "[[[[[[[null]]]]]]]", 18), 0);
  el[1] = 1;
  n = render_fixed(&d8, el, buf);
  ck_assert_int_eq((int)n, 2);
  ck_assert_int_eq(memcmp(buf, "42", 2), 0);
}
END_TEST

START_TEST(optional_text) {
  /* Missing values (presence byte 0) are null; present ones as the inner
   * type shows them. */
  struct dtype u8 = {.kind = DT_OPTIONAL, .size = 2, .inner = DT_UINT8};
  struct dtype f64 = {.kind = DT_OPTIONAL, .size = 9, .inner = DT_FLOAT64};
  struct dtype td = {.kind = DT_OPTIONAL,
                     .size = 9,
                     .inner = DT_TIMEDELTA64,
                     .unit = DTU_s,
                     .scale = 1};
  char buf[RENDER_FIXED_MAX];
  size_t n = render_fixed(&u8, "\x07\x01", buf);
  ck_assert_int_eq(memcmp(buf, "7", n), 0);
  n = render_fixed(&u8, "\x07\x00", buf);
  ck_assert_uint_eq(n, 4);
  ck_assert_int_eq(memcmp(buf, "null", 4), 0);
  n = render_fixed(&u8, "\x00\x05", buf); /* any non-zero byte: present */
  ck_assert_int_eq(memcmp(buf, "0", n), 0);
  uint8_t e[9];
  double v = -0.25;
  memcpy(e, &v, 8);
  e[8] = 1;
  n = render_fixed(&f64, e, buf);
  ck_assert_uint_eq(n, 5);
  ck_assert_int_eq(memcmp(buf, "-0.25", 5), 0);
  int64_t t = 61;
  memcpy(e, &t, 8);
  n = render_fixed(&td, e, buf);
  ck_assert_int_eq(memcmp(buf, "PT1M1S", n), 0);
  e[8] = 0;
  n = render_fixed(&td, e, buf);
  ck_assert_int_eq(memcmp(buf, "null", n), 0);
  /* Present strings that would read as a missing value (any null form,
   * whatever the depth) or start with the escape get a backslash; none of
   * the others do. */
  static const struct {
    const char *s;
    int escaped;
  } strs[] = {{"null", 1},  {"[null]", 1},  {"[[[null]]]", 1}, {"\\", 1},
              {"\\x", 1},   {"\\null", 1},  {"", 0},           {"nul", 0},
              {"Null", 0},  {"null ", 0},   {" null", 0},      {"[null", 0},
              {"null]", 0}, {"[null]]", 0}, {"[[null]", 0},    {"[]", 0},
              {"x\\", 0},   {"nullnull", 0}};
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    ck_assert_msg(render_optional_escaped((const uint8_t *)strs[i].s,
                                          strlen(strs[i].s)) == strs[i].escaped,
                  "'%s'", strs[i].s);
}
END_TEST

START_TEST(floats_round_trip) {
  /* Every rendering reads back to the same bits. */
  struct dtype dt = dtype_of(DT_FLOAT64);
  uint64_t s = 88172645463325252ull;
  for (int i = 0; i < 20000; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double v;
    memcpy(&v, &s, 8);
    if (isnan(v))
      continue;
    char buf[RENDER_FIXED_MAX + 1];
    size_t n = render_fixed(&dt, &v, buf);
    buf[n] = '\0';
    double back = strtod(buf, NULL);
    ck_assert_msg(!memcmp(&back, &v, 8), "%s does not read back", buf);
  }
}
END_TEST

START_TEST(integers_and_bools) {
  struct dtype dt;
  char buf[RENDER_FIXED_MAX];
  size_t n;
  int64_t i64 = INT64_MIN;
  dt = dtype_of(DT_INT64);
  n = render_fixed(&dt, &i64, buf);
  ck_assert_int_eq(memcmp(buf, "-9223372036854775808", n), 0);
  uint64_t u64 = UINT64_MAX;
  dt = dtype_of(DT_UINT64);
  n = render_fixed(&dt, &u64, buf);
  ck_assert_uint_eq(n, 20);
  ck_assert_int_eq(memcmp(buf, "18446744073709551615", n), 0);
  int8_t i8 = -128;
  dt = dtype_of(DT_INT8);
  n = render_fixed(&dt, &i8, buf);
  ck_assert_int_eq(memcmp(buf, "-128", n), 0);
  uint16_t u16 = 65535;
  dt = dtype_of(DT_UINT16);
  n = render_fixed(&dt, &u16, buf);
  ck_assert_int_eq(memcmp(buf, "65535", n), 0);
  int32_t z = 0;
  dt = dtype_of(DT_INT32);
  n = render_fixed(&dt, &z, buf);
  ck_assert_uint_eq(n, 1);
  ck_assert_int_eq(buf[0], '0');
  uint8_t b = 1;
  dt = dtype_of(DT_BOOL);
  n = render_fixed(&dt, &b, buf);
  ck_assert_int_eq(memcmp(buf, "true", n), 0);
  b = 0;
  n = render_fixed(&dt, &b, buf);
  ck_assert_int_eq(memcmp(buf, "false", n), 0);
  b = 2; /* any non-zero byte is true */
  n = render_fixed(&dt, &b, buf);
  ck_assert_int_eq(memcmp(buf, "true", n), 0);
}
END_TEST

/* render_fixed_run of elems (n elements of dt, host order) is each
 * element's render_fixed text and a newline. */
static void check_run(const struct dtype *dt, const void *elems, size_t n) {
  static char line[256 * RENDER_RUN_ROOM];
  ck_assert_uint_le(n, 256);
  memset(line, '#', sizeof line);
  size_t len = render_fixed_run(dt, elems, n, line), o = 0;
  for (size_t i = 0; i < n; i++) {
    char one[RENDER_FIXED_MAX];
    size_t l = render_fixed(dt, (const char *)elems + i * dt->size, one);
    if (o + l + 1 > len || memcmp(line + o, one, l) || line[o + l] != '\n')
      ck_abort_msg("%s element %zu: run '%.*s', render_fixed '%.*s'", dt->name,
                   i, (int)(len - o < l + 1 ? len - o : l + 1), line + o,
                   (int)l, one);
    o += l + 1;
  }
  ck_assert_uint_eq(o, len);
  ck_assert_uint_eq(render_fixed_run_size(dt, elems, n), len);
}

START_TEST(fixed_run_same_as_elements) {
  /* integers around every digit count, both signs, the extremes, and
   * random values of every integer width; floats of render's own tests;
   * kinds without a number loop (bool, dates) element by element */
  uint64_t v[256];
  size_t n = 0;
  uint64_t p = 1;
  for (int d = 0; d < 20; d++, p *= 10) {
    v[n++] = p;
    v[n++] = p - 1;
    v[n++] = p + 1;
    v[n++] = 0 - p;
    v[n++] = 0 - (p - 1);
  }
  v[n++] = 0;
  v[n++] = UINT64_MAX;
  v[n++] = (uint64_t)INT64_MIN;
  v[n++] = (uint64_t)INT64_MAX;
  uint64_t seed = 0x72756e;
  while (n < 256) {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    v[n++] = z >> (z % 64); /* every magnitude */
  }
  static const enum dtype_kind kinds[] = {
      DT_INT8,   DT_INT16,   DT_INT32,    DT_INT64,    DT_UINT8,
      DT_UINT16, DT_UINT32,  DT_UINT64,   DT_FLOAT32,  DT_FLOAT64,
      DT_BOOL,   DT_FLOAT16, DT_BFLOAT16, DT_COMPLEX64};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    unsigned char elems[256 * 16];
    size_t cnt = 256 * 8 / dt.size < 256 ? 256 * 8 / dt.size : 256;
    for (size_t i = 0; i < cnt; i++) /* the low bytes of each value */
      memcpy(elems + i * dt.size, &v[i], dt.size <= 8 ? dt.size : 8);
    check_run(&dt, elems, cnt);
  }
  static const double f[] = {0.1,
                             -0.0,
                             1e16,
                             1e15,
                             123456789012345.6,
                             1e-4,
                             1e-5,
                             5e-324,
                             -1.5e-7,
                             0.0001234,
                             100,
                             -3,
                             2.5,
                             1e21,
                             1.7976931348623157e308,
                             9007199254740993.0};
  struct dtype f64 = dtype_of(DT_FLOAT64);
  check_run(&f64, f, sizeof f / sizeof f[0]);
  int64_t dates[] = {0, -1, 19358, INT64_MIN};
  struct dtype day = dtype_of(DT_DATETIME64);
  day.unit = DTU_D;
  check_run(&day, dates, 4);
}
END_TEST

START_TEST(float32_runs_same_as_elements) {
  /* runs of float32 search their digits in dtoa_dec_f32_run, each value
   * by itself in render_fixed: every exponent, both signs, with mantissas
   * empty (zero, powers of two, infinities), all ones, random, and
   * integral exactly where the point falls (the runs' integer test, at
   * each of its 24 edges and one bit past it) */
  struct dtype f32 = dtype_of(DT_FLOAT32);
  uint32_t v[256];
  size_t n = 0;
  uint64_t seed = 0x66333272;
  for (uint32_t ef = 0; ef < 256; ef++)
    for (uint32_t sign = 0; sign < 2; sign++) {
      uint32_t sh = 150 - ef < 24 ? 150 - ef : 0;
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      uint32_t r = (uint32_t)(seed >> 41) & 0x7fffff;
      uint32_t in = r & ~((1u << sh) - 1); /* integral at sh */
      uint32_t ms[] = {0, 1, 0x7fffff, r, in, in | (sh ? 1u << (sh - 1) : 1)};
      for (size_t i = 0; i < sizeof ms / sizeof ms[0]; i++) {
        v[n++] = sign << 31 | ef << 23 | ms[i];
        if (n == 256 || (ef == 255 && sign == 1 && i + 1 == 6)) {
          check_run(&f32, v, n);
          check_run(&f32, v + 1, n - 1); /* odd starts and lengths */
          n = 0;
        }
      }
    }
}
END_TEST

START_TEST(integer_runs_in_pairs) {
  /* runs of integers take two values at a time (fs/text/rnum.c): every int32
   * in [-2^20, 2^20], then every digit count next to every other, each
   * also in runs of odd length and at odd starts, and wide values
   * (>= 10^8) beside small ones, every integer width */
  struct dtype i32 = dtype_of(DT_INT32);
  static int32_t v[255];
  for (int64_t x = -(1 << 20); x <= 1 << 20; x += 255) {
    for (int i = 0; i < 255; i++)
      v[i] = (int32_t)(x + i);
    check_run(&i32, v, 255);
    check_run(&i32, v + 1, 254);
  }
  static const int64_t mags[] = {0,        7,         42,        999,
                                 1000,     54321,     999999,    1234567,
                                 99999999, 100000000, 123456789, 2147483647};
  size_t nm = sizeof mags / sizeof mags[0], n = 0;
  int64_t w[4 * 12 * 12];
  for (size_t a = 0; a < nm; a++)
    for (size_t b = 0; b < nm; b++) {
      w[n++] = mags[a];
      w[n++] = -mags[b];
      w[n++] = -mags[a];
      w[n++] = mags[b];
    }
  static const enum dtype_kind kinds[] = {DT_INT8,   DT_INT16, DT_INT32,
                                          DT_INT64,  DT_UINT8, DT_UINT16,
                                          DT_UINT32, DT_UINT64};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    static unsigned char elems[4 * 12 * 12 * 8];
    for (size_t i = 0; i < n; i++) /* the low bytes of each value */
      memcpy(elems + i * dt.size, &w[i], dt.size);
    for (size_t at = 0; at + 1 < n; at += 250) {
      size_t m = n - at < 255 ? n - at : 255;
      check_run(&dt, elems + at * dt.size, m);
      check_run(&dt, elems + (at + 1) * dt.size, m - 1);
    }
  }
}
END_TEST

START_TEST(f64_runs_at_the_integer_edge) {
  /* float64 runs tell integral values below 2^53 (written as integers)
   * from the others in their digit pass (dtoa_dec_f64_run): every
   * exponent from 2^-12 to 2^64 with mantissas whose lowest set bit is
   * each of the 52, none, and all set, both signs, against render_fixed */
  static uint64_t v[256];
  size_t n = 0;
  struct dtype f64 = dtype_of(DT_FLOAT64);
  for (uint64_t ef = 1011; ef <= 1087; ef++) {
    for (int low = 0; low <= 53; low++) {
      uint64_t m = low == 53 ? 0 : ((uint64_t)1 << 52) - ((uint64_t)1 << low);
      uint64_t b = ef << 52 | (m & (((uint64_t)1 << 52) - 1));
      v[n++] = b;
      v[n++] = b | (uint64_t)1 << 63;
      v[n++] = ef << 52 | (uint64_t)1 << low % 52;
      if (n > 250) {
        check_run(&f64, v, n);
        n = 0;
      }
    }
  }
  check_run(&f64, v, n);
}
END_TEST

START_TEST(f64_runs_of_rare_cases) {
  /* values whose digit search takes dtoa.c's rarer branches, in runs
   * (dtoa_dec_f64_run) against render_fixed: x 1e13 + 0.5 past 2^66,
   * whose interval's low end is exactly the short decimal x 1e13 (or
   * half its values' high end z is an integer), and bench/perf.sh's
   * other float64 forms there */
  static double v[256];
  struct dtype f64 = dtype_of(DT_FLOAT64);
  for (uint64_t x0 = 7378690; x0 < 7378690 + 256 * 40; x0 += 256) {
    for (size_t i = 0; i < 256; i++) {
      double x = (double)(x0 + i);
      switch (i % 4) {
      case 0:
        v[i] = x * 1e13 + 0.5;
        break;
      case 1:
        v[i] = -x * 1e13;
        break;
      case 2:
        v[i] = x * 1e-9;
        break;
      default:
        v[i] = 1 / (x + 1);
      }
    }
    check_run(&f64, v, 256);
  }
}
END_TEST

START_TEST(run_sizes_without_text) {
  /* render_fixed_run_size (the count of text_measure) is render_fixed_run's
   * length for bit patterns of every kind: random ones (every exponent,
   * subnormals, NaNs, infinities, integral floats among them), every
   * float32 exponent with its smallest, largest and a middle mantissa,
   * and every power of ten's neighbours */
  static const enum dtype_kind kinds[] = {
      DT_INT8,   DT_INT16,  DT_INT32,  DT_INT64,   DT_UINT8,
      DT_UINT16, DT_UINT32, DT_UINT64, DT_FLOAT32, DT_FLOAT64};
  static unsigned char elems[256 * 8];
  static char text[256 * RENDER_RUN_ROOM];
  uint64_t seed = 0x73697a65;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    for (int round = 0; round < 2000; round++) {
      for (size_t i = 0; i < 256; i++) {
        uint64_t z = (seed += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        z ^= z >> 31;
        if (round % 4 == 1) /* small magnitudes: short texts, integers */
          z >>= z % 64;
        memcpy(elems + i * dt.size, &z, dt.size);
      }
      size_t n = 1 + (size_t)(seed % 256);
      ck_assert_uint_eq(render_fixed_run_size(&dt, elems, n),
                        render_fixed_run(&dt, elems, n, text));
    }
  }
  struct dtype f32 = dtype_of(DT_FLOAT32);
  for (uint32_t e = 0; e < 256; e++) {
    uint32_t v[6] = {e << 23,
                     e << 23 | 1,
                     e << 23 | 0x7fffff,
                     e << 23 | 0x400000,
                     1u << 31 | e << 23,
                     1u << 31 | e << 23 | 0x123456};
    ck_assert_uint_eq(render_fixed_run_size(&f32, v, 6),
                      render_fixed_run(&f32, v, 6, text));
  }
  struct dtype f64 = dtype_of(DT_FLOAT64);
  double p = 1;
  for (int d = 0; d < 40; d++, p *= 10) {
    double v[6] = {p, -p, 1 / p, -1 / p, p + 0.5, 1 / p + 1};
    ck_assert_uint_eq(render_fixed_run_size(&f64, v, 6),
                      render_fixed_run(&f64, v, 6, text));
  }
}
END_TEST

START_TEST(integer_extremes) {
  static const struct {
    enum dtype_kind kind;
    int64_t sv;  /* for signed kinds */
    uint64_t uv; /* for unsigned kinds */
    const char *want;
  } t[] = {{DT_INT8, 127, 0, "127"},
           {DT_INT8, -1, 0, "-1"},
           {DT_INT16, -32768, 0, "-32768"},
           {DT_INT16, 32767, 0, "32767"},
           {DT_INT32, INT32_MIN, 0, "-2147483648"},
           {DT_INT32, INT32_MAX, 0, "2147483647"},
           {DT_INT64, INT64_MAX, 0, "9223372036854775807"},
           {DT_INT64, INT64_MIN, 0, "-9223372036854775808"},
           {DT_INT64, -10, 0, "-10"},
           {DT_INT64, 1000000, 0, "1000000"},
           {DT_UINT8, 0, 0, "0"},
           {DT_UINT8, 0, 255, "255"},
           {DT_UINT16, 0, 10, "10"},
           {DT_UINT32, 0, UINT32_MAX, "4294967295"},
           {DT_UINT64, 0, UINT64_MAX, "18446744073709551615"},
           {DT_UINT64, 0, 10000000000000000000ull, "10000000000000000000"},
           {DT_UINT64, 0, 99, "99"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype dt = dtype_of(t[i].kind);
    uint8_t elem[8];
    uint64_t u = t[i].kind >= DT_UINT8 ? t[i].uv : (uint64_t)t[i].sv;
    /* host order, narrowed to the element size */
    if (dt.size == 1) {
      elem[0] = (uint8_t)u;
    } else if (dt.size == 2) {
      uint16_t x = (uint16_t)u;
      memcpy(elem, &x, 2);
    } else if (dt.size == 4) {
      uint32_t x = (uint32_t)u;
      memcpy(elem, &x, 4);
    } else {
      memcpy(elem, &u, 8);
    }
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, elem, buf);
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "case %zu: '%.*s', want '%s'", i, (int)n, buf, t[i].want);
  }
  /* Kinds render_fixed does not handle give no text. */
  static const enum dtype_kind none[] = {DT_UNSUPPORTED, DT_STRING,
                                         DT_BYTES,       DT_FIXED_UTF32,
                                         DT_FIXED_BYTES, DT_RAW};
  for (size_t i = 0; i < sizeof none / sizeof *none; i++) {
    struct dtype dt = dtype_of(none[i]);
    uint8_t elem[8] = {0};
    char buf[RENDER_FIXED_MAX];
    ck_assert_uint_eq(render_fixed(&dt, elem, buf), 0);
  }
}
END_TEST

START_TEST(strings_and_hex) {
  struct dtype s = dtype_of(DT_STRING), b = dtype_of(DT_BYTES);
  char out[32];
  ck_assert_uint_eq(render_var_len(&s, 5), 5);
  render_var(&s, (const uint8_t *)"a\nb\nc", 0, 5, out);
  ck_assert_int_eq(memcmp(out, "a b c", 5), 0);
  render_var(&s, (const uint8_t *)"\nc", 3, 2, out); /* a sub-range */
  ck_assert_int_eq(memcmp(out, " c", 2), 0);
  const uint8_t bytes[] = {0x00, 0xab, 0x7f};
  ck_assert_uint_eq(render_var_len(&b, 3), 6);
  render_var(&b, bytes, 0, 6, out);
  ck_assert_int_eq(memcmp(out, "00ab7f", 6), 0);
  /* Odd start: text position 3 is the low nibble of byte 1. */
  ck_assert_uint_eq(render_var_src_off(&b, 3), 1);
  render_var(&b, bytes + 1, 3, 3, out);
  ck_assert_int_eq(memcmp(out, "b7f", 3), 0);
  render_var(&b, bytes + 1, 2, 1, out);
  ck_assert_int_eq(out[0], 'a');
  render_var(&b, bytes + 1, 3, 1, out); /* one low nibble alone */
  ck_assert_int_eq(out[0], 'b');
  render_var(&b, bytes, 0, 0, out); /* empty range touches nothing */
  ck_assert_uint_eq(render_var_len(&s, 0), 0);
  ck_assert_uint_eq(render_var_src_off(&s, 7), 7);
  ck_assert_uint_eq(render_var_src_off(&b, 6), 3);
}
END_TEST

START_TEST(var_every_subrange) {
  /* Every [off, off+len) of a string and of a byte string equals the same
   * slice of the whole rendering, given only the source bytes from
   * render_var_src_off on. */
  static const uint8_t src[] = "ab\ncd\n\n\xc3\xa9\x00\xff\x10\x01z\n";
  const size_t nsrc = sizeof src - 1;
  static const enum dtype_kind kinds[] = {DT_STRING, DT_BYTES};
  for (size_t k = 0; k < 2; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    size_t total = (size_t)render_var_len(&dt, nsrc);
    char whole[64], part[64];
    render_var(&dt, src, 0, total, whole);
    for (size_t i = 0; i < total; i++)
      ck_assert(whole[i] != '\n');
    if (kinds[k] == DT_STRING) {
      ck_assert_int_eq(memcmp(whole, "ab cd  \xc3\xa9\0\xff\x10\x01z ", total),
                       0);
    } else {
      ck_assert_int_eq(memcmp(whole, "61620a63640a0ac3a900ff10017a0a", total),
                       0);
    }
    for (size_t off = 0; off <= total; off++)
      for (size_t len = 0; off + len <= total; len++) {
        uint64_t so = render_var_src_off(&dt, off);
        /* a copy holding exactly the bytes the range needs: ASan catches
         * any read beyond them */
        size_t need = len ? (size_t)render_var_src_off(&dt, off + len - 1) -
                                (size_t)so + 1
                          : 0;
        uint8_t *copy = malloc(need ? need : 1);
        memcpy(copy, src + so, need);
        memset(part, '#', sizeof part);
        render_var(&dt, copy, off, len, part);
        free(copy);
        ck_assert_msg(!memcmp(part, whole + off, len),
                      "kind %d [%zu, +%zu) differs", kinds[k], off, len);
        ck_assert_int_eq(part[len], '#');
      }
  }
}
END_TEST

/* Random variable-length elements: lengths 0-70 (across the 32-byte
 * copies), bytes drawn so that newlines, invalid UTF-8 and empty elements
 * are common. Fills eo[0..n] starting at base; returns the data size. */
static size_t random_elements(unsigned *seed, uint64_t n, uint64_t base,
                              uint64_t *eo, uint8_t *data, size_t cap) {
  static const uint8_t pick[] = {'a',  'b',  '\n', 0xff, 0xc3, 0x80,
                                 0,    ' ',  0xe2, 0x82, 0xac, 0xf0,
                                 0x9f, 0x98, 0x80, 0xed, 0xa0};
  eo[0] = base;
  size_t used = 0;
  for (uint64_t j = 0; j < n; j++) {
    unsigned r = (unsigned)rand_r(seed);
    size_t len = r % 4 == 0   ? 0
                 : r % 3 == 0 ? (size_t)(r >> 8) % 71
                              : (size_t)(r >> 8) % 17;
    if (used + len > cap)
      len = cap - used;
    for (size_t i = 0; i < len; i++)
      data[used + i] = pick[(unsigned)rand_r(seed) % sizeof pick];
    used += len;
    eo[j + 1] = base + used;
  }
  return used;
}

START_TEST(var_run_same_as_elements) {
  /* render_var_run over a run gives, for every range [off, end) (ends up
   * to 80 bytes on, and the run's end), the bytes render_var and one
   * newline per element give (strings with each byte that is not UTF-8
   * of its element '?', by the tests' own reference), writes nothing
   * else, and reads only the source bytes it is handed (a string's: the
   * range's and RENDER_UTF8_CONTEXT bytes of its elements either side). */
  unsigned seed = 25;
  static const enum dtype_kind kinds[] = {DT_STRING, DT_BYTES};
  for (int round = 0; round < 200; round++) {
    struct dtype dt = dtype_of(kinds[round % 2]);
    uint64_t n = (uint64_t)rand_r(&seed) % 13, base = 7, eo[13];
    uint8_t data[12 * 71];
    size_t used = random_elements(&seed, n, base, eo, data, sizeof data);
    uint64_t tpos = (uint64_t)rand_r(&seed) % 5;
    char whole[2 * sizeof data + 16];
    uint64_t t = tpos;
    for (uint64_t j = 0; j < n; j++) {
      uint64_t l = render_var_len(&dt, eo[j + 1] - eo[j]);
      render_var(&dt, data + (eo[j] - base), 0, (size_t)l, whole + t);
      if (dt.kind == DT_STRING)
        testutil_utf8_fix((uint8_t *)whole + t, (size_t)l);
      whole[t + l] = '\n';
      t += l + 1;
    }
    uint64_t tend = t;
    for (uint64_t off = 0; off <= tend + 1; off++)
      for (uint64_t end = off; end <= tend + 1;
           end = end < off + 80 || end == tend + 1 ? end + 1 : tend + 1) {
        /* exactly the source bytes of the range: ASan sees any overrun */
        uint64_t sa = base + used, sb = base;
        for (uint64_t j = 0, q = tpos; j < n; j++) {
          uint64_t l = render_var_len(&dt, eo[j + 1] - eo[j]);
          if (q < end && q + l + 1 > off && eo[j + 1] > eo[j]) {
            uint64_t a = off > q ? off - q : 0;
            uint64_t b = end - q < l ? end - q : l;
            if (a < b) {
              uint64_t x = eo[j] + render_var_src_off(&dt, a);
              uint64_t y = eo[j] + render_var_src_off(&dt, b - 1) + 1;
              if (dt.kind == DT_STRING) { /* the neighbours it judges by */
                x = x - eo[j] > RENDER_UTF8_CONTEXT ? x - RENDER_UTF8_CONTEXT
                                                    : eo[j];
                y = eo[j + 1] - y > RENDER_UTF8_CONTEXT
                        ? y + RENDER_UTF8_CONTEXT
                        : eo[j + 1];
              }
              sa = x < sa ? x : sa;
              sb = y > sb ? y : sb;
            }
          }
          q += l + 1;
        }
        if (sb < sa)
          sa = sb = base;
        uint8_t *copy = malloc(sb - sa ? sb - sa : 1);
        memcpy(copy, data + (sa - base), sb - sa);
        char out[sizeof whole + 2];
        memset(out, '#', sizeof out);
        render_var_run(&dt, eo, 0, n, tpos, copy, sa, sb - sa, off, end, out);
        free(copy);
        /* (ck_assert per byte would write its location each time) */
        for (uint64_t i = off; i <= end; i++) {
          char want = i >= tpos && i < tend && i < end ? whole[i] : '#';
          if (out[i - off] != want)
            ck_abort_msg("kind %d round %d [%llu, %llu) byte %llu: %02x, "
                         "want %02x",
                         dt.kind, round, (unsigned long long)off,
                         (unsigned long long)end, (unsigned long long)i,
                         (uint8_t)out[i - off], (uint8_t)want);
        }
      }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("render");
  TCase *tc = tcase_create("text");
  tcase_add_test(tc, floats_shortest);
  tcase_add_test(tc, floats_round_trip);
  tcase_add_test(tc, floats_never_longer_than_printf);
  tcase_add_test(tc, float16_shortest);
  tcase_add_test(tc, float16_every_value);
  tcase_add_test(tc, datetime64_iso);
  tcase_add_test(tc, complex_text);
  tcase_add_test(tc, bfloat16_every_value);
  tcase_add_test(tc, timedelta64_iso);
  tcase_add_test(tc, sub_byte_integers);
  tcase_add_test(tc, optional_text);
  tcase_add_test(tc, optional_nested_text);
  tcase_add_test(tc, integers_and_bools);
  tcase_add_test(tc, integer_extremes);
  tcase_add_test(tc, fixed_run_same_as_elements);
  tcase_add_test(tc, float32_runs_same_as_elements);
  tcase_add_test(tc, integer_runs_in_pairs);
  tcase_add_test(tc, f64_runs_at_the_integer_edge);
  tcase_add_test(tc, f64_runs_of_rare_cases);
  tcase_add_test(tc, run_sizes_without_text);
  tcase_add_test(tc, strings_and_hex);
  tcase_add_test(tc, var_every_subrange);
  tcase_add_test(tc, var_run_same_as_elements);
  tcase_set_timeout(tc, 60); /* every range of 200 runs, on a busy machine */
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
