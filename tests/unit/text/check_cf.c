/* check_cf.c - src/zarr/cf.c and fs/text/cftext.c against xarray: a table of
 * CF cases (packed integers, fill and missing values, booleans, times in
 * every calendar, durations) whose expected text xarray's decode_cf
 * computed once (tests/writers/cf_expect.py -> check_cf_table.h), so this
 * test needs no Python; and the parse failures, which xarray reports as
 * errors. */
#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/text/cftext.h"
#include "../../../src/zarr/cf.h"
#include "../../../src/zarr/cfmask.h"
#include "../../../src/zarr/cfvars.h"
#include "../testutil.h"

struct cf_case {
  const char *name, *dtype, *attrs, *fill, *value, *want;
};

static const struct cf_case cases[] = {
#include "check_cf_table.h"
};

/* The kind of a numpy dtype name of the table. */
static enum dtype_kind kind_of(const char *name) {
  static const struct {
    const char *name;
    enum dtype_kind kind;
  } t[] = {{"int8", DT_INT8},       {"int16", DT_INT16},
           {"int32", DT_INT32},     {"int64", DT_INT64},
           {"uint8", DT_UINT8},     {"uint16", DT_UINT16},
           {"uint32", DT_UINT32},   {"uint64", DT_UINT64},
           {"float32", DT_FLOAT32}, {"float64", DT_FLOAT64}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(t[i].name, name))
      return t[i].kind;
  ck_abort_msg("unknown dtype %s", name);
  return DT_UNSUPPORTED;
}

/* The stored bytes of value text v for dt (host order). */
static void store_value(const struct dtype *dt, const char *v, uint8_t *elem) {
  if (dt->kind == DT_FLOAT32) {
    float f = strtof(v, NULL);
    memcpy(elem, &f, 4);
  } else if (dt->kind == DT_FLOAT64) {
    double d = strtod(v, NULL);
    memcpy(elem, &d, 8);
  } else if (dt->kind == DT_UINT64) {
    uint64_t u = strtoull(v, NULL, 10);
    memcpy(elem, &u, 8);
  } else {
    long long i = strtoll(v, NULL, 10);
    int8_t i8 = (int8_t)i;
    int16_t i16 = (int16_t)i;
    int32_t i32 = (int32_t)i;
    int64_t i64 = i;
    const void *src = dt->size == 1   ? (const void *)&i8
                      : dt->size == 2 ? (const void *)&i16
                      : dt->size == 4 ? (const void *)&i32
                                      : (const void *)&i64;
    memcpy(elem, src, dt->size);
  }
}

/* Every case decodes to xarray's text. */
START_TEST(xarray_table) {
  size_t n = sizeof cases / sizeof *cases;
  ck_assert_uint_gt(n, 150);
  for (size_t i = 0; i < n; i++) {
    const struct cf_case *c = &cases[i];
    struct dtype dt = dtype_of(kind_of(c->dtype));
    json_error_t je;
    json_t *attrs = json_loads(c->attrs, 0, &je);
    json_t *fill = c->fill ? json_loads(c->fill, JSON_DECODE_ANY, &je) : NULL;
    ck_assert_ptr_nonnull(attrs);
    struct cf *cf = NULL;
    struct zerr err = {0};
    int rc = cf_parse(attrs, fill, &dt, &cf, &err);
    ck_assert_msg(rc == 0 && cf, "%s: cf_parse %d: %s", c->name, rc, err.msg);
    uint8_t elem[8] = {0};
    store_value(&dt, c->value, elem);
    struct cf_value v;
    rc = cf_decode(cf, elem, &v);
    ck_assert_msg(rc == 0, "%s %s: cf_decode %d", c->name, c->value, rc);
    char buf[CFTEXT_MAX + 1];
    size_t len = cftext_render(&v, buf);
    buf[len] = '\0';
    ck_assert_msg(!strcmp(buf, c->want), "%s: %s (%s) -> %s, xarray %s",
                  c->name, c->value, c->attrs, buf, c->want);
    cf_free(cf);
    json_decref(attrs);
    json_decref(fill);
  }
}
END_TEST

/* A group's variables as xarray's decode_cf_variables sees them: the
 * attributes each bounds variable ends with are what
 * xarray.conventions._update_bounds_attributes gives (run on the same
 * variables: b takes a's units, the first in name order, and c's
 * calendar; g keeps its own units; e is bounded by no time; nope names
 * no variable), and which dimensions' character arrays are joined. */
START_TEST(group_variables) {
  static const struct {
    const char *name, *dims, *attrs;
    int is_bytes;
  } g[] = {
      {"a", "[\"t\"]",
       "{\"units\":\"hours since 2000-01-01\",\"bounds\":\"b\"}", 0},
      {"b", "[\"t\",\"nv\"]", "{}", 0},
      {"c", "[\"t\"]",
       "{\"units\":\"days since 2001-01-01\",\"calendar\":\"julian\","
       "\"bounds\":\"b\"}",
       0},
      {"d", "[\"t\"]", "{\"units\":\"m\",\"bounds\":\"e\"}", 0},
      {"e", "[\"t\",\"nv\"]", "{}", 0},
      {"f", "[\"t\"]", "{\"units\":\"days since 2000-01-01\",\"bounds\":\"g\"}",
       0},
      {"g", "[\"t\",\"nv\"]", "{\"units\":\"hours since 1999-01-01\"}", 0},
      {"h", "[\"t\"]",
       "{\"units\":\"days since 2000-01-01\",\"bounds\":\"nope\"}", 0},
      {"name", "[\"s\",\"strlen\"]", "{}", 1},
      {"code", "[\"s\",\"codelen\"]", "{}", 1},
      {"mixed", "[\"s\",\"m\"]", "{}", 1},
      {"num", "[\"m\"]", "{}", 0},
      {"first", "[\"strlen2\",\"s\"]", "{}", 1},
      {"last", "[\"x\",\"strlen2\"]", "{}", 1},
      {"nodims", "null", "{\"bounds\":\"b\",\"units\":\"s since 2000-01-01\"}",
       0},
  };
  enum { N = sizeof g / sizeof *g };
  struct cfvar_in in[N];
  json_error_t je;
  for (size_t i = 0; i < N; i++) {
    in[i] = (struct cfvar_in){g[i].name,
                              json_loads(g[i].dims, JSON_DECODE_ANY, &je),
                              g[i].is_bytes, json_loads(g[i].attrs, 0, &je)};
    ck_assert_ptr_nonnull(in[i].attrs);
  }
  struct cfvars *cv;
  struct zerr err = {0};
  ck_assert_int_eq(cfvars_new(in, N, &cv, &err), 0);
  static const struct {
    const char *name, *want; /* the attributes decoded with, or NULL */
  } w[] = {
      {"a", NULL},
      {"b", "{\"units\":\"hours since 2000-01-01\",\"calendar\":\"julian\"}"},
      {"c", NULL},
      {"e", NULL},
      {"g", NULL},
      {"nope", NULL},
  };
  for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
    json_t *attrs = NULL, *out;
    for (size_t k = 0; k < N; k++)
      if (!strcmp(g[k].name, w[i].name))
        attrs = in[k].attrs;
    ck_assert_int_eq(cfvars_attrs(cv, w[i].name, attrs, &out, &err), 0);
    if (!w[i].want) {
      ck_assert_msg(out == NULL, "%s: attributes changed", w[i].name);
      continue;
    }
    json_t *want = json_loads(w[i].want, 0, &je);
    ck_assert_msg(json_equal(out, want), "%s: %s", w[i].name,
                  json_dumps(out, JSON_COMPACT));
    json_decref(want);
    json_decref(out);
  }
  /* stackable: no variable named after it, and every variable along it
   * an S array with it last */
  ck_assert(cfvars_stackable(cv, "strlen"));
  ck_assert(cfvars_stackable(cv, "codelen"));
  ck_assert(!cfvars_stackable(cv, "m"));       /* num is no S array */
  ck_assert(!cfvars_stackable(cv, "strlen2")); /* first's first axis */
  ck_assert(!cfvars_stackable(cv, "t"));
  ck_assert(!cfvars_stackable(cv, "nowhere"));
  cfvars_free(cv);
  ck_assert_int_eq(cfvars_new(NULL, 0, &cv, &err), 0);
  ck_assert(!cfvars_stackable(cv, "strlen"));
  cfvars_free(cv);
  for (size_t i = 0; i < N; i++) {
    json_decref(in[i].dims);
    json_decref(in[i].attrs);
  }
}
END_TEST

/* Masks xarray applies without unpacking (values from xarray 2023.01
 * on h5netcdf: a bool masked by _FillValue False gives [True, nan],
 * complex64 masked by 0 gives nan+nanj; a complex fill [re, im] is one
 * value; strings compare without their trailing NULs). */
START_TEST(masks_of_bool_complex_strings) {
  json_error_t je;
  json_t *attrs = json_loads("{\"_FillValue\":false}", 0, &je);
  struct dtype dt = dtype_of(DT_BOOL);
  struct cf *cf = NULL;
  struct zerr err = {0};
  ck_assert_int_eq(cf_parse(attrs, NULL, &dt, &cf, &err), 0);
  struct cf_value v;
  uint8_t b = 1;
  ck_assert_int_eq(cf_decode(cf, &b, &v), 0);
  ck_assert(v.kind == CF_BOOL && v.b == 1);
  b = 0;
  ck_assert_int_eq(cf_decode(cf, &b, &v), 0);
  ck_assert_int_eq(v.kind, CF_MISSING);
  cf_free(cf);
  json_decref(attrs);
  attrs = json_loads("{}", 0, &je);
  json_t *fill = json_loads("[1.5, -2]", 0, &je);
  dt = dtype_of(DT_COMPLEX64);
  ck_assert_int_eq(cf_parse(attrs, fill, &dt, &cf, &err), 0);
  float z[2] = {1.5f, -2};
  char buf[CFTEXT_MAX + 1];
  ck_assert_int_eq(cf_decode(cf, z, &v), 0);
  buf[cftext_render(&v, buf)] = '\0';
  ck_assert_str_eq(buf, "nan+nanj");
  z[1] = 2;
  ck_assert_int_eq(cf_decode(cf, z, &v), 0);
  buf[cftext_render(&v, buf)] = '\0';
  ck_assert_str_eq(buf, "1.5+2j");
  cf_free(cf);
  json_decref(fill);
  json_decref(attrs);
  attrs = json_loads("{\"scale_factor\":2}", 0, &je);
  ck_assert_int_eq(cf_parse(attrs, NULL, &dt, &cf, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "complex"));
  json_decref(attrs);
  attrs =
      json_loads("{\"_FillValue\":[\"N/A\",\"\"],\"missing_value\":7}", 0, &je);
  ck_assert_int_eq(cfmask_parse_bytes(attrs, NULL, 0, 0, 0, &cf, &err), 0);
  ck_assert(cfmask_bytes_masked(cf, (const uint8_t *)"N/A\0\0", 5));
  ck_assert(cfmask_bytes_masked(cf, (const uint8_t *)"", 0));
  ck_assert(!cfmask_bytes_masked(cf, (const uint8_t *)"N/A ", 4));
  cf_free(cf);
  json_decref(attrs);
  /* kerchunk's " " is NULs: the array's own fill masks empty strings */
  attrs = json_loads("{}", 0, &je);
  ck_assert_int_eq(
      cfmask_parse_bytes(attrs, (const uint8_t *)"\0", 1, 1, 0, &cf, &err), 0);
  ck_assert(cfmask_bytes_masked(cf, (const uint8_t *)"\0\0", 2));
  ck_assert(!cfmask_bytes_masked(cf, (const uint8_t *)"a", 1));
  cf_free(cf);
  ck_assert_int_eq(cfmask_parse_bytes(attrs, NULL, 0, 0, 0, &cf, &err), 0);
  ck_assert_ptr_null(cf); /* nothing to decode */
  json_decref(attrs);
}
END_TEST

/* No CF attribute, or a type CF does not decode: nothing to do. */
START_TEST(not_cf) {
  static const char *const docs[] = {"{}",
                                     "{\"units\": \"K\"}",
                                     "{\"long_name\": \"x\", \"valid_min\": 0}",
                                     "{\"dtype\": \"int8\"}",
                                     "{\"units\": \"hour\"}",
                                     "{\"units\": \"Days\"}",
                                     "{\"units\": \"weeks\"}"};
  struct dtype i16 = dtype_of(DT_INT16);
  for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
    json_t *a = json_loads(docs[i], 0, NULL);
    struct cf *cf = (struct cf *)1;
    ck_assert_int_eq(cf_parse(a, NULL, &i16, &cf, NULL), 0);
    ck_assert_ptr_null(cf);
    json_decref(a);
  }
  json_t *a = json_loads("{\"scale_factor\": 2}", 0, NULL);
  struct dtype s = dtype_of(DT_STRING);
  struct cf *cf = (struct cf *)1;
  ck_assert_int_eq(cf_parse(a, NULL, &s, &cf, NULL), 0);
  ck_assert_ptr_null(cf);
  ck_assert_int_eq(cf_parse(NULL, NULL, &i16, &cf, NULL), 0);
  ck_assert_ptr_null(cf);
  json_decref(a);
  cf_free(NULL);
}
END_TEST

/* Encodings xarray cannot decode are refused with the reason. */
START_TEST(malformed) {
  static const struct {
    const char *attrs, *says;
  } t[] = {
      {"{\"scale_factor\": \"x\"}", "scale_factor"},
      {"{\"add_offset\": [1, 2]}", "add_offset"},
      {"{\"_FillValue\": \"x\"}", "_FillValue"},
      {"{\"missing_value\": [1, {}]}", "missing_value"},
      {"{\"units\": \"days since\"}", "units"},
      {"{\"units\": \"days since 2000-13-01\"}", "units"},
      {"{\"units\": \"days since 2000-01-01 25:00\"}", "units"},
      {"{\"units\": \"weeks since 2000-01-01\"}", "units"},
      {"{\"units\": \"days since yesterday\"}", "units"},
      /* units neither pandas nor cftime reads (in that calendar) */
      {"{\"units\": \"ns since 2000-01-01\"}", "units"},
      {"{\"units\": \"us since 2000-01-01\"}", "units"},
      {"{\"units\": \"nanosec since 2000-01-01\"}", "units"},
      {"{\"units\": \"nanoseconds since 2000-01-01\", \"calendar\": "
       "\"noleap\"}",
       "units"},
      {"{\"units\": \"nanoseconds since 2000-01-01\", \"calendar\": "
       "\"julian\"}",
       "units"},
      {"{\"units\": \"months since 2000-01-01\"}", "units"},
      {"{\"units\": \"months since 2000-01-01\", \"calendar\": "
       "\"noleap\"}",
       "units"},
      {"{\"units\": \"common_years since 2000-01-01\"}", "units"},
      {"{\"units\": \"common_years since 2000-01-01\", \"calendar\": "
       "\"360_day\"}",
       "units"},
      {"{\"units\": \"years since 2000-01-01\"}", "units"},
      {"{\"units\": \"days since 2000-01-01\", \"calendar\": \"mayan\"}",
       "calendar"},
      {"{\"missing_value\": [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17]}",
       "fill values"},
  };
  struct dtype i32 = dtype_of(DT_INT32);
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    json_t *a = json_loads(t[i].attrs, 0, NULL);
    ck_assert_ptr_nonnull(a);
    struct cf *cf = NULL;
    struct zerr err = {0};
    ck_assert_int_eq(cf_parse(a, NULL, &i32, &cf, &err), -EIO);
    ck_assert_ptr_null(cf);
    ck_assert_msg(strstr(err.msg, t[i].says), "%s: %s", t[i].attrs, err.msg);
    json_decref(a);
  }
}
END_TEST

/* A time beyond 2^63 microseconds from the reference, a duration beyond
 * 2^63 nanoseconds, are -ERANGE (xarray fails the whole variable). */
START_TEST(out_of_range) {
  json_t *a = json_loads("{\"units\": \"days since 2000-01-01\"}", 0, NULL);
  struct dtype i64 = dtype_of(DT_INT64);
  struct cf *cf = NULL;
  ck_assert_int_eq(cf_parse(a, NULL, &i64, &cf, NULL), 0);
  int64_t v = 1000000000000ll;
  struct cf_value out;
  ck_assert_int_eq(cf_decode(cf, &v, &out), -ERANGE);
  v = -1000000000000ll;
  ck_assert_int_eq(cf_decode(cf, &v, &out), -ERANGE);
  cf_free(cf);
  json_decref(a);
  /* Nanoseconds go through pandas alone: a reference or a result beyond
   * datetime64[ns] is beyond xarray (cftime does not read them). */
  a = json_loads("{\"units\": \"nanoseconds since 1600-01-01\"}", 0, NULL);
  ck_assert_int_eq(cf_parse(a, NULL, &i64, &cf, NULL), 0);
  v = 1;
  ck_assert_int_eq(cf_decode(cf, &v, &out), -ERANGE);
  cf_free(cf);
  json_decref(a);
  a = json_loads("{\"units\": \"nanoseconds since 2000-01-01\"}", 0, NULL);
  ck_assert_int_eq(cf_parse(a, NULL, &i64, &cf, NULL), 0);
  v = INT64_MAX;
  ck_assert_int_eq(cf_decode(cf, &v, &out), -ERANGE);
  v = 0;
  ck_assert_int_eq(cf_decode(cf, &v, &out), 0);
  ck_assert_int_eq(out.kind, CF_TIME);
  cf_free(cf);
  json_decref(a);
  /* Durations past 2^63 nanoseconds (pandas raises OutOfBoundsTimedelta);
   * a count that is numpy's NaT is NaT. */
  a = json_loads("{\"units\": \"days\"}", 0, NULL);
  ck_assert_int_eq(cf_parse(a, NULL, &i64, &cf, NULL), 0);
  v = 106752;
  ck_assert_int_eq(cf_decode(cf, &v, &out), -ERANGE);
  v = -106752;
  ck_assert_int_eq(cf_decode(cf, &v, &out), -ERANGE);
  v = INT64_MIN;
  ck_assert_int_eq(cf_decode(cf, &v, &out), 0);
  ck_assert_int_eq(out.kind, CF_NAT);
  cf_free(cf);
  struct dtype f64 = dtype_of(DT_FLOAT64);
  ck_assert_int_eq(cf_parse(a, NULL, &f64, &cf, NULL), 0);
  double d = 1e300;
  ck_assert_int_eq(cf_decode(cf, &d, &out), -ERANGE);
  d = -INFINITY;
  ck_assert_int_eq(cf_decode(cf, &d, &out), -ERANGE);
  d = 106751.5;
  ck_assert_int_eq(cf_decode(cf, &d, &out), 0);
  ck_assert_int_eq(out.kind, CF_TIMEDELTA);
  cf_free(cf);
  json_decref(a);
}
END_TEST

/* Every day number reads back to itself in every calendar. */
START_TEST(day_round_trip) {
  for (int cal = CF_CAL_STANDARD; cal <= CF_CAL_JULIAN; cal++) {
    for (int64_t day = -3000000; day < 3000000; day += 997) {
      struct cf_time t;
      cf_date_of_day(cal, day, &t);
      char ref[64];
      snprintf(ref, sizeof ref, "days since %s%04lld-%02d-%02d",
               t.year < 0 ? "-" : "",
               (long long)(t.year < 0 ? -t.year : t.year), t.month, t.day);
      int64_t unit, rday, rns;
      int pu;
      ck_assert_msg(cf_parse_units(ref, cal, &unit, &pu, &rday, &rns) == 0,
                    "%s", ref);
      ck_assert_msg(rday == day && rns == 0, "cal %d: %s is day %lld, not %lld",
                    cal, ref, (long long)rday, (long long)day);
    }
  }
}
END_TEST

/* Random text after "UNIT since " parses or is refused, never more: each
 * calendar, reference dates made of digits, separators and zone marks. */
START_TEST(random_references) {
  static const char alphabet[] = "0123456789-:. TZ+UTC";
  uint64_t seed = 0x5eed;
  char units[64];
  for (int i = 0; i < 200000; i++) {
    int n = snprintf(units, sizeof units, "hours since ");
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    int len = (int)(seed >> 59) + 1;
    for (int k = 0; k < len; k++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      units[n++] = alphabet[(seed >> 33) % (sizeof alphabet - 1)];
    }
    units[n] = '\0';
    int64_t unit, day, ns;
    int pu;
    enum cf_calendar cal = (enum cf_calendar)(CF_CAL_STANDARD + i % 6);
    if (cf_parse_units(units, cal, &unit, &pu, &day, &ns) == 0) {
      ck_assert_int_eq(unit, 3600000000000ll);
      ck_assert_msg(ns >= 0 && ns < 86400000000000ll, "%s", units);
    }
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("cf");
  TCase *tc = tcase_create("cf");
  tcase_add_test(tc, xarray_table);
  tcase_add_test(tc, not_cf);
  tcase_add_test(tc, group_variables);
  tcase_add_test(tc, masks_of_bool_complex_strings);
  tcase_add_test(tc, malformed);
  tcase_add_test(tc, out_of_range);
  tcase_add_test(tc, day_round_trip);
  tcase_add_test(tc, random_references);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
