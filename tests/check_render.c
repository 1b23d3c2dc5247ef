/* check_render.c - the text contract for every element type. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../fs/render.h"
#include "testutil.h"

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
           {DTU_us, 1, INT64_MIN, "NaT"}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype dt;
    memset(&dt, 0, sizeof dt);
    dt.kind = DT_DATETIME64;
    dt.size = 8;
    dt.unit = t[i].unit;
    dt.scale = t[i].scale;
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, &t[i].v, buf);
    ck_assert_msg(n == strlen(t[i].want) && !memcmp(buf, t[i].want, n),
                  "case %zu rendered as '%.*s', want '%s'", i, (int)n, buf,
                  t[i].want);
  }
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
}
END_TEST

int main(void) {
  Suite *s = suite_create("render");
  TCase *tc = tcase_create("text");
  tcase_add_test(tc, floats_shortest);
  tcase_add_test(tc, floats_round_trip);
  tcase_add_test(tc, float16_shortest);
  tcase_add_test(tc, datetime64_iso);
  tcase_add_test(tc, integers_and_bools);
  tcase_add_test(tc, strings_and_hex);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
