/* check_meta.c - zarr.json parsing: valid nodes, every data type and key
 * encoding, fill values, lenient JSON, chunk keys, and a table of
 * malformed or contradictory metadata that must be refused with a reason
 * naming the problem. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../../src/json/zjson.h"
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../../src/util/log.h"
#include "../../../src/zarr/meta.h"
#include "../teststore.h"
#include "../testutil.h"

/* An array document with the given fields spliced in (static storage). */
static char *array_doc(const char *shape, const char *chunks, const char *dtype,
                       const char *fill, const char *keyenc,
                       const char *extra) {
  static char buf[8192];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":%s,\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":%s}},\"chunk_key_encoding\":"
           "%s,\"fill_value\":%s,\"codecs\":[{\"name\":\"bytes\"}]%s}",
           shape, dtype, chunks, keyenc, fill, extra);
  return buf;
}

/* A one-dimensional array of dtype with the given fill. */
static char *fill_doc(const char *dtype, const char *fill) {
  return array_doc("[4]", "[2]", dtype, fill, "\"default\"", "");
}

/* Parse text, expecting success. */
static struct zmeta *parse_ok(const char *text) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  int rc = zmeta_parse(text, strlen(text), &m, &err);
  ck_assert_msg(rc == 0, "rejected: %s (%s)", err.msg, text);
  ck_assert_ptr_nonnull(m);
  return m;
}

/* Parse a fill value for dtype and compare its bytes. */
static void fill_is(const char *dtype, const char *fill, const void *want,
                    size_t want_len) {
  struct zmeta *m = parse_ok(fill_doc(dtype, fill));
  ck_assert_msg(m->fill_len == want_len, "%s %s: %zu bytes, want %zu", dtype,
                fill, m->fill_len, want_len);
  ck_assert_msg(!memcmp(m->fill, want, want_len), "%s %s: wrong bytes", dtype,
                fill);
  zmeta_free(m);
}

/* zarrita's defaults: "codecs": [] is [bytes] little-endian, and a null
 * fill of a numeric type is its zero (NaN for floats); both flagged. */
START_TEST(zarrita_defaults) {
  struct zmeta *m = parse_ok(array_doc("[4]", "[2]", "\"int16\"", "3",
                                       "\"default\"", ",\"codecs\":[]"));
  char *c = json_dumps(m->codecs, JSON_COMPACT | JSON_SORT_KEYS);
  ck_assert_str_eq(c, "[{\"configuration\":{\"endian\":\"little\"},"
                      "\"name\":\"bytes\"}]");
  free(c);
  ck_assert_uint_eq(m->defaults, ZMETA_DEFAULT_CODECS);
  zmeta_free(m);
  static const struct {
    const char *dtype;
    uint8_t bytes[16];
    size_t len;
  } t[] = {
      {"\"int16\"", {0}, 2},
      {"\"uint64\"", {0}, 8},
      {"\"int4\"", {0}, 1},
      {"\"bool\"", {0}, 1},
      {"\"float32\"", {0x00, 0x00, 0xc0, 0x7f}, 4},
      {"\"float64\"", {0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, 8},
      {"\"float16\"", {0x00, 0x7e}, 2},
      {"\"complex64\"", {0, 0, 0xc0, 0x7f, 0, 0, 0xc0, 0x7f}, 8},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    m = parse_ok(array_doc("[4]", "[2]", t[i].dtype, "null", "\"default\"",
                           ",\"codecs\":[]"));
    ck_assert_msg(m->fill_len == t[i].len, "%s", t[i].dtype);
    ck_assert_msg(!memcmp(m->fill, t[i].bytes, t[i].len), "%s: wrong bytes",
                  t[i].dtype);
    ck_assert_uint_eq(m->defaults, ZMETA_DEFAULT_CODECS | ZMETA_DEFAULT_FILL);
    zmeta_free(m);
  }
  /* Types that take null themselves are not flagged. */
  m = parse_ok(fill_doc("\"string\"", "null"));
  ck_assert_uint_eq(m->defaults, 0);
  zmeta_free(m);
  m = parse_ok(fill_doc("\"int8\"", "0"));
  ck_assert_uint_eq(m->defaults, 0);
  zmeta_free(m);
}
END_TEST

/* A store zarrita wrote reads through the engine: "codecs": [] as
 * little-endian bytes, a missing chunk of a null fill as 0 (NaN for a
 * float), and one info line per array says so. */
START_TEST(zarrita_store) {
  char dir[] = "/tmp/check_meta.XXXXXX",
       logpath[] = "/tmp/check_meta_log.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  int fd = mkstemp(logpath);
  ck_assert_int_ge(fd, 0);
  zlog_setup_fd(fd, ZLOG_INFO);
  const char *group = "{\"zarr_format\":3,\"node_type\":\"group\"}";
  ts_put_file(dir, "zarr.json", group, strlen(group));
  char *doc = array_doc("[4]", "[2]", "\"int16\"", "null", "\"default\"",
                        ",\"codecs\":[]");
  ts_put_file(dir, "a/zarr.json", doc, strlen(doc));
  ts_put_file(dir, "a/c/0", "\x01\x00\xff\xff", 4);
  doc = array_doc("[3]", "[2]", "\"float32\"", "null", "\"default\"",
                  ",\"codecs\":[{\"name\":\"bytes\",\"configuration\":"
                  "{\"endian\":\"little\"}}]");
  ts_put_file(dir, "f/zarr.json", doc, strlen(doc));
  ts_put_file(dir, "f/c/0", "\x00\x00\xc0\x3f\x00\x00\x00\x00", 8);
  struct engine *e = ts_open_engine(dir);
  struct zerr err = {0};
  for (int pass = 0; pass < 2; pass++) { /* read twice: logged once */
    char *t = ts_view_text(e, "/a/values.txt", 3, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_str_eq(t, "1\n-1\n0\n0\n");
    free(t);
    t = ts_view_text(e, "/f/values.txt", 5, &err);
    ck_assert_msg(t != NULL, "%s", err.msg);
    ck_assert_str_eq(t, "1.5\n0\nnan\n");
    free(t);
  }
  engine_free(e);
  char log[4096] = {0};
  int lf = open(logpath, O_RDONLY);
  ck_assert_int_ge(lf, 0);
  ck_assert_int_ge(read(lf, log, sizeof log - 1), 0);
  close(lf);
  unlink(logpath);
  int lines = 0;
  for (char *p = log; *p; p++)
    lines += *p == '\n';
  ck_assert_msg(lines == 2, "%d lines:\n%s", lines, log);
  ck_assert_msg(strstr(log, "info: ") &&
                    strstr(log, "a/zarr.json: codecs [] and fill_value null") &&
                    strstr(log, "f/zarr.json: fill_value null"),
                "%s", log);
  testutil_rmtree(dir);
}
END_TEST

START_TEST(group_and_array) {
  struct zmeta *m = parse_ok(
      "{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":{\"a\":1}}");
  ck_assert_int_eq(m->node, ZMETA_GROUP);
  zmeta_free(m);
  m = parse_ok("{\"zarr_format\":3,\"node_type\":\"group\","
               "\"consolidated_metadata\":{\"kind\":\"inline\","
               "\"must_understand\":false,\"metadata\":{}}}");
  zmeta_free(m);
  m = parse_ok(array_doc("[10,7]", "[4,3]", "\"int16\"", "-5",
                         "{\"name\":\"default\"}",
                         ",\"attributes\":{},\"storage_transformers\":[],"
                         "\"dimension_names\":[\"y\",null]"));
  ck_assert_int_eq(m->node, ZMETA_ARRAY);
  ck_assert_int_eq(m->ndim, 2);
  ck_assert_uint_eq(m->grid[0], 3);
  ck_assert_uint_eq(m->grid[1], 3);
  ck_assert_uint_eq(m->nelem, 70);
  ck_assert_uint_eq(m->chunk_nelem, 12);
  ck_assert_uint_eq(m->nchunks, 9);
  ck_assert_int_eq(m->dtype.kind, DT_INT16);
  ck_assert_uint_eq(m->fill_len, 2);
  int16_t f;
  memcpy(&f, m->fill, 2);
  ck_assert_int_eq(f, -5);
  ck_assert_int_eq(m->key_encoding, ZMETA_KEY_DEFAULT);
  ck_assert_int_eq(m->key_sep, '/');
  ck_assert(json_is_array(m->codecs));
  ck_assert(json_is_object(m->root));
  zmeta_free(m);
  zmeta_free(NULL);
  /* Shape 0 is a valid, empty array: no chunks. */
  m = parse_ok(array_doc("[0,5]", "[3,3]", "\"uint8\"", "0", "\"v2\"", ""));
  ck_assert_uint_eq(m->grid[0], 0);
  ck_assert_uint_eq(m->grid[1], 2);
  ck_assert_uint_eq(m->nelem, 0);
  ck_assert_uint_eq(m->nchunks, 0);
  ck_assert_int_eq(m->key_encoding, ZMETA_KEY_V2);
  ck_assert_int_eq(m->key_sep, '.');
  zmeta_free(m);
  /* A scalar. */
  m = parse_ok(array_doc("[]", "[]", "\"float64\"", "1.5", "\"default\"", ""));
  ck_assert_int_eq(m->ndim, 0);
  ck_assert_uint_eq(m->nelem, 1);
  ck_assert_uint_eq(m->nchunks, 1);
  zmeta_free(m);
}
END_TEST

START_TEST(every_dtype) {
  static const struct {
    const char *json;
    enum dtype_kind kind;
    size_t size;
    const char *fill;
  } t[] = {
      {"\"bool\"", DT_BOOL, 1, "true"},
      {"\"int8\"", DT_INT8, 1, "-128"},
      {"\"int16\"", DT_INT16, 2, "32767"},
      {"\"int32\"", DT_INT32, 4, "0"},
      {"\"int64\"", DT_INT64, 8, "-9223372036854775808"},
      {"\"uint8\"", DT_UINT8, 1, "255"},
      {"\"uint16\"", DT_UINT16, 2, "65535"},
      {"\"uint32\"", DT_UINT32, 4, "4294967295"},
      {"\"uint64\"", DT_UINT64, 8, "0"},
      {"\"float16\"", DT_FLOAT16, 2, "\"0x7e00\""},
      {"\"float32\"", DT_FLOAT32, 4, "1.5"},
      {"\"float64\"", DT_FLOAT64, 8, "\"-Infinity\""},
      {"{\"name\":\"float64\",\"configuration\":{}}", DT_FLOAT64, 8, "0"},
      {"\"string\"", DT_STRING, 0, "\"abc\""},
      {"{\"name\":\"bytes\"}", DT_BYTES, 0, "\"AAE=\""},
      {"\"variable_length_bytes\"", DT_BYTES, 0, "[1,2,3]"},
      {"\"binary\"", DT_BYTES, 0, "\"\""},
      {"\"float8_e4m3\"", DT_UNSUPPORTED, 0, "0"},
      {"{\"name\":\"complex128\"}", DT_COMPLEX128, 16, "[0,0]"},
      {"\"complex64\"", DT_COMPLEX64, 8, "[\"NaN\",1]"},
      {"\"bfloat16\"", DT_BFLOAT16, 2, "\"0x7fc0\""},
      {"\"int2\"", DT_INT2, 1, "-2"},
      {"\"int4\"", DT_INT4, 1, "7"},
      {"\"uint2\"", DT_UINT2, 1, "3"},
      {"\"uint4\"", DT_UINT4, 1, "15"},
      {"\"r8\"", DT_RAW, 1, "[255]"},
      {"\"r256\"", DT_RAW, 32,
       "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\""},
      {"{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":5}}",
       DT_RAW, 5, "\"AAAAAAA=\""},
      {"{\"name\":\"null_terminated_bytes\",\"configuration\":{"
       "\"length_bytes\":3}}",
       DT_FIXED_BYTES, 3, "\"\""},
      {"{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":\"ns\","
       "\"scale_factor\":1}}",
       DT_TIMEDELTA64, 8, "-5"},
      {"{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":\"ps\"}}",
       DT_UNSUPPORTED, 0, "0"},
      {"\"rectangle\"", DT_UNSUPPORTED, 0, "0"},
      {"\"r08\"", DT_UNSUPPORTED, 0, "0"},
      {"{\"name\":\"fixed_length_utf32\",\"configuration\":{\"length_bytes\":"
       "16}}",
       DT_FIXED_UTF32, 16, "\"\""},
      {"{\"name\":\"numpy.datetime64\",\"configuration\":{\"unit\":\"s\","
       "\"scale_factor\":1}}",
       DT_DATETIME64, 8, "\"NaT\""},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zmeta *m = parse_ok(fill_doc(t[i].json, t[i].fill));
    ck_assert_msg(m->dtype.kind == t[i].kind, "%s: kind %d", t[i].json,
                  m->dtype.kind);
    ck_assert_uint_eq(m->dtype.size, t[i].size);
    ck_assert_int_eq(dtype_is_variable(&m->dtype),
                     t[i].kind == DT_STRING || t[i].kind == DT_BYTES);
    zmeta_free(m);
  }
  /* An unknown type keeps its name for messages, and has no fill bytes. */
  struct zmeta *m = parse_ok(fill_doc("\"float8_e4m3\"", "\"whatever\""));
  ck_assert_str_eq(m->dtype.name, "float8_e4m3");
  ck_assert_uint_eq(m->fill_len, 0);
  zmeta_free(m);
}
END_TEST

START_TEST(integer_fills) {
  int8_t i8 = -128;
  fill_is("\"int8\"", "-128", &i8, 1);
  uint16_t u16 = 65535;
  fill_is("\"uint16\"", "65535", &u16, 2);
  int32_t i32 = -2147483647 - 1;
  fill_is("\"int32\"", "-2147483648", &i32, 4);
  uint32_t u32 = 7;
  fill_is("\"uint32\"", "7.0", &u32, 4); /* integral real: accepted */
  int64_t i64 = INT64_MAX;
  fill_is("\"int64\"", "9223372036854775807", &i64, 8);
  i64 = INT64_MIN;
  fill_is("\"int64\"", "-9223372036854775808", &i64, 8);
  /* Beyond int64: jansson refuses it, the lenient loader carries it. */
  uint64_t u64 = UINT64_MAX;
  fill_is("\"uint64\"", "18446744073709551615", &u64, 8);
  u64 = 9223372036854775808ull;
  fill_is("\"uint64\"", "9223372036854775808", &u64, 8);
  uint8_t b = 1;
  fill_is("\"bool\"", "true", &b, 1);
  b = 0;
  fill_is("\"bool\"", "false", &b, 1);
}
END_TEST

START_TEST(float_fills) {
  static const struct {
    const char *fill;
    uint64_t bits;
  } t[] = {{"\"NaN\"", 0x7ff8000000000000ull},
           {"\"Infinity\"", 0x7ff0000000000000ull},
           {"\"-Infinity\"", 0xfff0000000000000ull},
           {"\"0x7ff0000000000001\"", 0x7ff0000000000001ull},
           {"\"0xFFF8000000000000\"", 0xfff8000000000000ull},
           {"-0.0", 0x8000000000000000ull},
           {"0.5", 0x3fe0000000000000ull},
           {"3", 0x4008000000000000ull},
           {"1e300", 0x7e37e43c8800759cull}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    fill_is("\"float64\"", t[i].fill, &t[i].bits, 8);
  static const struct {
    const char *fill;
    uint32_t bits;
  } t32[] = {{"\"NaN\"", 0x7fc00000u},      {"\"0x7fc00001\"", 0x7fc00001u},
             {"\"Infinity\"", 0x7f800000u}, {"\"-Infinity\"", 0xff800000u},
             {"0.1", 0x3dcccccdu},          {"-0.0", 0x80000000u}};
  for (size_t i = 0; i < sizeof t32 / sizeof *t32; i++)
    fill_is("\"float32\"", t32[i].fill, &t32[i].bits, 4);
  uint16_t h = 0x7e00;
  fill_is("\"float16\"", "\"NaN\"", &h, 2);
  h = 0x3c00;
  fill_is("\"float16\"", "1", &h, 2);
  h = 0x7c01;
  fill_is("\"float16\"", "\"0x7c01\"", &h, 2);
}
END_TEST

START_TEST(lenient_json) {
  /* Bare NaN / Infinity / -Infinity tokens (Python's json module); the
   * same words inside strings, also after escaped quotes, stay as they
   * are. */
  static const struct {
    const char *fill;
    uint32_t bits;
  } t[] = {{"NaN", 0x7fc00000u},
           {"Infinity", 0x7f800000u},
           {"-Infinity", 0xff800000u}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zmeta *m = parse_ok(array_doc(
        "[4]", "[2]", "\"float32\"", t[i].fill, "\"default\"",
        ",\"attributes\":{\"x\":\"NaN, \\\"Infinity\\\" -Infinity\","
        "\"y\":[NaN,-Infinity,1.5e3,-2],\"big\":18446744073709551615}"));
    uint32_t b;
    memcpy(&b, m->fill, 4);
    ck_assert_uint_eq(b, t[i].bits);
    json_t *attrs = json_object_get(m->root, "attributes");
    ck_assert_str_eq(json_string_value(json_object_get(attrs, "x")),
                     "NaN, \"Infinity\" -Infinity");
    json_t *y = json_object_get(attrs, "y");
    ck_assert_str_eq(json_string_value(json_array_get(y, 0)), "NaN");
    ck_assert_str_eq(json_string_value(json_array_get(y, 1)), "-Infinity");
    ck_assert(json_real_value(json_array_get(y, 2)) == 1500.0);
    ck_assert_int_eq(json_integer_value(json_array_get(y, 3)), -2);
    zmeta_free(m);
  }
  /* Direct use, and errors that stay errors. */
  struct zerr err = {0};
  json_t *j = zjson_loadb("[NaN]", 5, &err);
  ck_assert_ptr_nonnull(j);
  ck_assert_str_eq(json_string_value(json_array_get(j, 0)), "NaN");
  json_decref(j);
  j = zjson_loadb("{\"a\":\"x\\u0000y\"}", 16, &err); /* NUL in a string */
  ck_assert_ptr_nonnull(j);
  ck_assert_uint_eq(json_string_length(json_object_get(j, "a")), 3);
  json_decref(j);
  ck_assert_ptr_null(zjson_loadb("[nan]", 5, &err));
  ck_assert_int_eq(err.code, EIO);
  ck_assert_ptr_null(zjson_loadb("{\"a\":NaN", 8, &err));
  ck_assert_ptr_nonnull(strstr(err.msg, "JSON"));
  /* Not NUL-terminated: only len bytes count. */
  const char text[] = "{\"zarr_format\":3,\"node_type\":\"group\"}garbage";
  struct zmeta *m = NULL;
  ck_assert_int_eq(zmeta_parse(text, strlen(text) - 7, &m, &err), 0);
  zmeta_free(m);
}
END_TEST

START_TEST(bytes_and_string_fills) {
  fill_is("\"bytes\"", "\"AAEC\"", "\0\1\2", 3);
  fill_is("\"bytes\"", "\"AAE=\"", "\0\1", 2);
  fill_is("\"bytes\"", "\"AA==\"", "\0", 1);
  fill_is("\"bytes\"", "\"AAE\"", "\0\1", 2); /* padding left out */
  fill_is("\"bytes\"", "\"+/+/\"", "\xfb\xff\xbf", 3);
  fill_is("\"bytes\"", "\"\"", "", 0);
  fill_is("\"bytes\"", "[]", "", 0);
  fill_is("\"bytes\"", "[0,255,7]", "\0\xff\x07", 3);
  fill_is("\"string\"", "\"h\\u00e9\"", "h\xc3\xa9", 3);
  fill_is("\"string\"", "\"\"", "", 0);
  fill_is("\"string\"", "null", "", 0); /* legacy writers */
  fill_is("\"string\"", "0", "", 0);
  fill_is("\"string\"", "\"a\\nb\"", "a\nb", 3);
  uint32_t cp[3] = {'h', 0xe9, 0};
  fill_is("{\"name\":\"fixed_length_utf32\",\"configuration\":"
          "{\"length_bytes\":12}}",
          "\"h\\u00e9\"", cp, 12);
}
END_TEST

START_TEST(new_type_fills) {
  /* complex: [re, im], each part a float fill of half the width. */
  uint32_t c64[2] = {0x3fc00000u, 0xff800000u};
  fill_is("\"complex64\"", "[1.5,\"-Infinity\"]", c64, 8);
  c64[0] = 0x7fc00000u, c64[1] = 0x7fc00001u;
  fill_is("\"complex64\"", "[\"NaN\",\"0x7fc00001\"]", c64, 8);
  c64[0] = 0x3dcccccdu, c64[1] = 0x80000000u;
  fill_is("\"complex64\"", "[0.1,-0.0]", c64, 8);
  uint64_t c128[2] = {0x7ff0000000000001ull, 0x3ff0000000000000ull};
  fill_is("\"complex128\"", "[\"0x7ff0000000000001\",1]", c128, 16);
  c128[0] = 0x7ff8000000000000ull, c128[1] = 0x7ff0000000000000ull;
  fill_is("\"complex128\"", "[NaN,Infinity]", c128, 16); /* bare tokens */
  /* bfloat16: rounded half to even from the JSON number. */
  static const struct {
    const char *fill;
    uint16_t bits;
  } bf[] = {{"1", 0x3f80},
            {"0.1", 0x3dcd},
            {"-2.5", 0xc020},
            {"\"NaN\"", 0x7fc0},
            {"\"Infinity\"", 0x7f80},
            {"\"-Infinity\"", 0xff80},
            {"\"0x7f81\"", 0x7f81},
            {"\"0xFFC1\"", 0xffc1},
            {"-0.0", 0x8000},
            {"1.00390625", 0x3f80}, /* halfway: to even (down) */
            {"1.01171875", 0x3f82}, /* halfway: to even (up) */
            {"1.0039063", 0x3f81},  /* just above halfway */
            {"3.3895313892515355e38", 0x7f7f},
            {"9.183549615799121e-41", 0x0001}, /* smallest subnormal */
            {"4.6e-41", 0x0001},
            {"4.5e-41", 0x0000}, /* below half of it */
            {"1e-50", 0x0000}};
  for (size_t i = 0; i < sizeof bf / sizeof *bf; i++)
    fill_is("\"bfloat16\"", bf[i].fill, &bf[i].bits, 2);
  /* Sub-byte integers: one byte, sign-extended. */
  fill_is("\"int2\"", "-2", "\xfe", 1);
  fill_is("\"int2\"", "1", "\x01", 1);
  fill_is("\"int4\"", "-8", "\xf8", 1);
  fill_is("\"int4\"", "7.0", "\x07", 1);
  fill_is("\"uint2\"", "3", "\x03", 1);
  fill_is("\"uint4\"", "15", "\x0f", 1);
  /* Raw bytes: integer array (r<N>) or base64 (zarr-python), exact size. */
  fill_is("\"r16\"", "[1,2]", "\1\2", 2);
  fill_is("\"r16\"", "\"AQI=\"", "\1\2", 2);
  fill_is("{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":3}}",
          "\"AQID\"", "\1\2\3", 3);
  fill_is("{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":3}}",
          "[0,0,255]", "\0\0\xff", 3);
  /* null_terminated_bytes: base64 or integers, NUL padded; null / 0. */
  const char *nt = "{\"name\":\"null_terminated_bytes\",\"configuration\":"
                   "{\"length_bytes\":4}}";
  fill_is(nt, "\"YQ==\"", "a\0\0\0", 4);
  fill_is(nt, "[97,98]", "ab\0\0", 4);
  fill_is(nt, "null", "\0\0\0\0", 4);
  fill_is(nt, "0", "\0\0\0\0", 4);
  fill_is(nt, "\"\"", "\0\0\0\0", 4);
  /* timedelta64: integer or NaT. */
  const char *td = "{\"name\":\"numpy.timedelta64\",\"configuration\":"
                   "{\"unit\":\"s\",\"scale_factor\":2}}";
  int64_t v = INT64_MIN;
  fill_is(td, "\"NaT\"", &v, 8);
  v = -7;
  fill_is(td, "-7", &v, 8);
  struct zmeta *m = parse_ok(fill_doc(td, "0"));
  ck_assert_int_eq(m->dtype.unit, DTU_s);
  ck_assert_int_eq(m->dtype.scale, 2);
  ck_assert_uint_eq(dtype_swap_unit(&m->dtype), 8);
  zmeta_free(m);
  /* Byte-order units: per part for complex, none for raw bytes. */
  m = parse_ok(fill_doc("\"complex128\"", "[0,0]"));
  ck_assert_uint_eq(dtype_swap_unit(&m->dtype), 8);
  zmeta_free(m);
  m = parse_ok(fill_doc("\"r32\"", "[0,0,0,0]"));
  ck_assert_uint_eq(dtype_swap_unit(&m->dtype), 1);
  ck_assert(dtype_is_fixed_string(&m->dtype));
  zmeta_free(m);
  /* zarrs.optional: the inner bytes then a presence byte; null is all
   * zero. */
  const char *ou8 = "{\"name\":\"zarrs.optional\",\"configuration\":{"
                    "\"name\":\"uint8\",\"configuration\":{}}}";
  fill_is(ou8, "null", "\0\0", 2);
  fill_is(ou8, "200", "\xc8\x01", 2);
  uint8_t of[5] = {0x00, 0x00, 0xc0, 0x7f, 1};
  fill_is("{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
          "\"float32\"}}",
          "\"NaN\"", of, 5);
  m = parse_ok(fill_doc("{\"name\":\"optional\",\"configuration\":{\"name\":"
                        "\"numpy.datetime64\",\"configuration\":{\"unit\":"
                        "\"ms\",\"scale_factor\":3}}}",
                        "\"NaT\""));
  ck_assert_int_eq(m->dtype.kind, DT_OPTIONAL);
  ck_assert_int_eq(m->dtype.inner, DT_DATETIME64);
  ck_assert_uint_eq(m->dtype.size, 9);
  struct dtype in = dtype_optional_inner(&m->dtype);
  ck_assert_int_eq(in.kind, DT_DATETIME64);
  ck_assert_uint_eq(in.size, 8);
  ck_assert_int_eq(in.unit, DTU_ms);
  ck_assert_int_eq(in.scale, 3);
  ck_assert_str_eq(m->dtype.name, "optional(numpy.datetime64)");
  zmeta_free(m);
  /* Inner types it cannot hold: unsupported (not refused), named. */
  static const char *const unsup[][2] = {
      {"{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
       "\"fixed_length_utf32\",\"configuration\":{\"length_bytes\":8}}}",
       "zarrs.optional(fixed_length_utf32)"},
      {"{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
       "\"zarrs.optional\",\"configuration\":{\"name\":\"foo\"}}}",
       "zarrs.optional(zarrs.optional(foo))"},
      {"{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
       "\"r16\"}}",
       "zarrs.optional(r16)"}};
  for (size_t i = 0; i < 3; i++) {
    m = parse_ok(fill_doc(unsup[i][0], "null"));
    ck_assert_int_eq(m->dtype.kind, DT_UNSUPPORTED);
    ck_assert_str_eq(m->dtype.name, unsup[i][1]);
    zmeta_free(m);
  }
}
END_TEST

/* An int8 array of shape with the given chunk_grid (static storage). */
static char *grid_doc(const char *shape, const char *grid) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":\"int8\",\"chunk_grid\":%s,\"chunk_key_encoding\":"
           "\"default\",\"fill_value\":0,\"codecs\":[\"bytes\"]}",
           shape, grid);
  return buf;
}

/* Parse a grid expecting failure with code and a message containing frag. */
static void grid_bad(const char *shape, const char *grid, int code,
                     const char *frag) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  const char *doc = grid_doc(shape, grid);
  int rc = zmeta_parse(doc, strlen(doc), &m, &err);
  ck_assert_msg(rc == -code && strstr(err.msg, frag),
                "rc %d (%s), want -%d '%s': %s", rc, err.msg, code, frag, grid);
  ck_assert_ptr_null(m);
}

/* Rectangular (zarrs) and rectilinear (zarr-extensions) grids: listed
 * edges become prefix sums, chunk lookups by coordinate, and bad lists are
 * refused with a reason. */
START_TEST(listed_grids) {
  /* zarrs' documented example: [[5,5,5,15,15,20,35],10] over 100 x 100 */
  struct zmeta *m = parse_ok(
      grid_doc("[100,100]", "{\"name\":\"rectangular\",\"configuration\":{"
                            "\"chunk_shape\":[[5,5,5,15,15,20,35],10]}}"));
  ck_assert_str_eq(m->grid_name, "rectangular");
  ck_assert_int_eq(m->irregular, 1);
  ck_assert_uint_eq(m->grid[0], 7);
  ck_assert_uint_eq(m->grid[1], 10);
  ck_assert_uint_eq(m->nchunks, 70);
  ck_assert_uint_eq(m->chunk[0], 35); /* the largest */
  ck_assert_uint_eq(m->chunk_nelem, 350);
  ck_assert_ptr_null(m->edge[1]);
  /* zarrs' test: element (17, 17) is in chunk (3, 1) at (2, 7) */
  ck_assert_uint_eq(zmeta_chunk_of(m, 0, 17), 3);
  ck_assert_uint_eq(zmeta_chunk_of(m, 1, 17), 1);
  ck_assert_uint_eq(17 - zmeta_chunk_start(m, 0, 3), 2);
  ck_assert_uint_eq(17 - zmeta_chunk_start(m, 1, 1), 7);
  static const uint64_t starts[] = {0, 5, 10, 15, 30, 45, 65, 100};
  for (uint64_t i = 0; i < 7; i++) {
    ck_assert_uint_eq(zmeta_chunk_start(m, 0, i), starts[i]);
    ck_assert_uint_eq(zmeta_chunk_len(m, 0, i), starts[i + 1] - starts[i]);
    ck_assert_uint_eq(zmeta_chunk_extent(m, 0, i), starts[i + 1] - starts[i]);
    for (uint64_t x = starts[i]; x < starts[i + 1]; x++)
      ck_assert_uint_eq(zmeta_chunk_of(m, 0, x), i);
  }
  uint64_t idx[2];
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "c/6/9", idx), 0);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "c/7/0", idx), -ENOENT);
  zmeta_free(m);
  /* The rectilinear form: runs, an integer dimension, overshoot allowed
   * (chunks starting past the end are not in the grid). */
  m = parse_ok(grid_doc("[6,6,6,10]",
                        "{\"name\":\"rectilinear\",\"configuration\":{"
                        "\"kind\":\"inline\",\"chunk_shapes\":[[[1,3],3],4,"
                        "[4,4,4],[[2,2],[3,2]]]}}"));
  ck_assert_str_eq(m->grid_name, "rectilinear");
  ck_assert_uint_eq(m->grid[0], 4);
  ck_assert_uint_eq(zmeta_chunk_start(m, 0, 3), 3);
  ck_assert_uint_eq(zmeta_chunk_len(m, 0, 3), 3);
  ck_assert_ptr_null(m->edge[1]);
  ck_assert_uint_eq(m->grid[1], 2);
  ck_assert_uint_eq(m->grid[2], 2); /* the third 4 starts past 6 */
  ck_assert_uint_eq(zmeta_chunk_len(m, 2, 1), 4);
  ck_assert_uint_eq(zmeta_chunk_extent(m, 2, 1), 2);
  ck_assert_uint_eq(m->grid[3], 4);
  ck_assert_uint_eq(zmeta_chunk_start(m, 3, 3), 7);
  ck_assert_uint_eq(zmeta_chunk_of(m, 3, 9), 3);
  zmeta_free(m);
  /* A run far longer than the axis stores only what the axis needs. */
  m = parse_ok(grid_doc("[5]", "{\"name\":\"rectilinear\",\"configuration\":{"
                               "\"kind\":\"inline\",\"chunk_shapes\":[[[2,"
                               "1000000000000]]]}}"));
  ck_assert_uint_eq(m->grid[0], 3);
  zmeta_free(m);
  /* Empty axes: an empty list, or any list for a rectilinear one. */
  m = parse_ok(grid_doc("[0,3]", "{\"name\":\"rectangular\",\"configuration\":"
                                 "{\"chunk_shape\":[[],[1,2]]}}"));
  ck_assert_uint_eq(m->nchunks, 0);
  zmeta_free(m);
  /* Integers only: regular in effect. */
  m = parse_ok(grid_doc("[7]", "{\"name\":\"rectangular\",\"configuration\":{"
                               "\"chunk_shape\":[3]}}"));
  ck_assert_int_eq(m->irregular, 0);
  ck_assert_uint_eq(m->grid[0], 3);
  zmeta_free(m);

  static const struct {
    int rect;
    const char *shape, *cs, *frag;
    int code;
  } bad[] = {
      {1, "[10]", "[[2,3]]", "add up to 5, less than the shape 10", EIO},
      {1, "[4]", "[[2,3]]", "more than the shape 4", EIO},
      {1, "[4]", "[[2,0,2]]", "integers > 0", EIO},
      {1, "[4]", "[[2,-2]]", "integers > 0", EIO},
      {1, "[4]", "[[2,2.5]]", "integers > 0", EIO},
      {1, "[4]", "[[[2,2]]]", "integers > 0", EIO}, /* no runs here */
      {1, "[4]", "[0]", "integer > 0 or a list", EIO},
      {1, "[4]", "[\"4\"]", "integer > 0 or a list", EIO},
      {1, "[4,4]", "[[4]]", "has 1 dimensions, shape has 2", EIO},
      {1, "[4]", "[[2,2],4]", "has 2 dimensions, shape has 1", EIO},
      {1, "[4]", "[[]]", "add up to 0", EIO},
      {1, "[4]", "5", "missing list chunk_shape", EIO},
      {0, "[4]", "[[[2]]]", "[length, count]", EIO},
      {0, "[4]", "[[[2,1,1]]]", "[length, count]", EIO},
      {0, "[4]", "[[[2,0]]]", "integers > 0", EIO},
      {0, "[6]", "[[[1,3],2]]", "add up to 5, less than the shape 6", EIO},
      {0, "[4]", "[[4,0]]", "integers > 0", EIO}, /* checked past the end */
      /* 2^21 chunks of 1 along an axis: more than the cap */
      {0, "[2097152]", "[[[1,2097152]]]", "more than 1048576 listed", EIO},
      {0, "[1048576,2]", "[[[1,1048576]],[1,1]]", "more than 1048576", EIO},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char grid[512];
    if (bad[i].rect)
      snprintf(grid, sizeof grid,
               "{\"name\":\"rectangular\",\"configuration\":{"
               "\"chunk_shape\":%s}}",
               bad[i].cs);
    else
      snprintf(grid, sizeof grid,
               "{\"name\":\"rectilinear\",\"configuration\":{"
               "\"kind\":\"inline\",\"chunk_shapes\":%s}}",
               bad[i].cs);
    grid_bad(bad[i].shape, grid, bad[i].code, bad[i].frag);
  }
  grid_bad("[4]",
           "{\"name\":\"rectilinear\",\"configuration\":{\"chunk_shapes\":"
           "[[2,2]]}}",
           ENOTSUP, "kind must be \"inline\"");
  grid_bad("[4]",
           "{\"name\":\"rectilinear\",\"configuration\":{\"kind\":\"file\","
           "\"chunk_shapes\":[[2,2]]}}",
           ENOTSUP, "kind must be \"inline\"");
}
END_TEST

/* One document that must be refused: the errno and a word the message
 * must contain. */
struct bad_case {
  const char *doc;
  int rc;
  const char *says;
};

START_TEST(invalid_metadata_table) {
  static char docs[160][8192];
  struct bad_case t[160];
  int n = 0;
#define RAW(text, code, word)                                                  \
  (t[n++] = (struct bad_case){(text), -(code), (word)})
#define BAD(code, word, ...)                                                   \
  (snprintf(docs[n], sizeof docs[n], "%s", array_doc(__VA_ARGS__)),            \
   t[n] = (struct bad_case){docs[n], -(code), (word)}, n++)
#define BADFILL(dtype, fill)                                                   \
  BAD(EIO, "fill_value", "[4]", "[2]", dtype, fill, "\"default\"", "")
  RAW("not json", EIO, "JSON");
  RAW("", EIO, "JSON");
  RAW("[1,2]", EIO, "object");
  RAW("{\"zarr_format\":2,\"node_type\":\"group\"}", EIO, "zarr_format");
  RAW("{\"zarr_format\":\"3\",\"node_type\":\"group\"}", EIO, "zarr_format");
  RAW("{\"node_type\":\"group\"}", EIO, "zarr_format");
  RAW("{\"zarr_format\":3}", EIO, "node_type");
  RAW("{\"zarr_format\":3,\"node_type\":\"thing\"}", EIO, "node_type");
  RAW("{\"zarr_format\":3,\"node_type\":\"group\",\"foo\":1}", EIO, "'foo'");
  RAW("{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":[]}", EIO,
      "attributes");
  RAW("{\"zarr_format\":3,\"node_type\":\"array\",\"data_type\":\"int8\","
      "\"chunk_grid\":{\"name\":\"regular\",\"configuration\":{"
      "\"chunk_shape\":[2]}},\"chunk_key_encoding\":\"default\","
      "\"fill_value\":0,\"codecs\":[\"bytes\"]}",
      EIO, "shape");
  BAD(EIO, "shape", "\"x\"", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "shape", "[-1]", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "shape", "[1.5]", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "chunk_shape", "[4]", "[0]", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "chunk_shape", "[4]", "\"2\"", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "dimensions", "[4,4]", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "dimensions", "[4]", "[2,2]", "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "'foo'", "[4]", "[2]", "\"int8\"", "0", "\"default\"", ",\"foo\":1");
  BAD(EIO, "'foo'", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"foo\":{\"must_understand\":true}");
  BAD(EIO, "'foo'", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"foo\":{\"name\":\"x\"}");
  BAD(EIO, "attributes", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"attributes\":\"x\"");
  BADFILL("\"int8\"", "300");
  BADFILL("\"int8\"", "-129");
  BADFILL("\"uint8\"", "-1");
  BADFILL("\"uint16\"", "65536");
  BADFILL("\"int32\"", "2147483648");
  BADFILL("\"uint32\"", "4294967296");
  BADFILL("\"int64\"", "9223372036854775808");
  BADFILL("\"uint64\"", "18446744073709551616");
  BADFILL("\"uint64\"", "-1");
  BADFILL("\"int8\"", "1.5");
  BADFILL("\"int8\"", "\"1\"");
  BADFILL("\"int8\"", "true");
  BADFILL("\"bool\"", "1");
  BADFILL("\"bool\"", "\"true\"");
  BADFILL("\"float32\"", "\"nan\"");
  BADFILL("\"float32\"", "\"inf\"");
  BADFILL("\"float32\"", "\"0x7fc0\"");
  BADFILL("\"float32\"", "\"0x7fc0000g\"");
  BADFILL("\"float64\"", "\"0x7ff80000\"");
  BADFILL("\"float32\"", "1e300");
  BADFILL("\"float16\"", "70000");
  BADFILL("\"float64\"", "[1]");
  BADFILL("\"bytes\"", "[256]");
  BADFILL("\"bytes\"", "[-1]");
  BADFILL("\"bytes\"", "[\"a\"]");
  BADFILL("\"bytes\"", "\"!!\"");
  BADFILL("\"bytes\"", "\"A\"");
  BADFILL("\"bytes\"", "\"AB=C\"");
  BADFILL("\"bytes\"", "\"A===\"");
  BADFILL("\"bytes\"", "\"AB=\"");
  BADFILL("\"bytes\"", "5");
  BADFILL("\"string\"", "5");
  BADFILL("\"string\"", "[\"a\"]");
  BAD(EIO, "fill_value", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"fill_value\":\"x\""); /* duplicate key: last one wins */
  /* New types: complex, bfloat16, sub-byte integers, raw and fixed bytes,
   * timedelta. */
  BADFILL("\"complex64\"", "1");
  BADFILL("\"complex64\"", "[1]");
  BADFILL("\"complex64\"", "[1,2,3]");
  BADFILL("\"complex64\"", "[\"nan\",0]");
  BADFILL("\"complex64\"", "[1e300,0]");
  BADFILL("\"complex64\"", "[0,\"0x7ff8000000000000\"]");
  BADFILL("\"complex128\"", "[\"0x7ff80000\",0]");
  BADFILL("\"complex128\"", "{\"re\":1,\"im\":2}");
  BADFILL("\"complex128\"", "\"1+2j\"");
  BADFILL("\"bfloat16\"", "1e39");
  BADFILL("\"bfloat16\"", "3.3963e38"); /* rounds to infinity */
  BADFILL("\"bfloat16\"", "\"0x7fc00000\"");
  BADFILL("\"bfloat16\"", "\"0x7fc\"");
  BADFILL("\"bfloat16\"", "\"NaN \"");
  BADFILL("\"bfloat16\"", "[1]");
  BADFILL("\"int2\"", "2");
  BADFILL("\"int2\"", "-3");
  BADFILL("\"int4\"", "8");
  BADFILL("\"int4\"", "-9");
  BADFILL("\"int4\"", "1.5");
  BADFILL("\"uint2\"", "4");
  BADFILL("\"uint2\"", "-1");
  BADFILL("\"uint4\"", "16");
  BADFILL("\"uint4\"", "\"1\"");
  BADFILL("\"r16\"", "[1]");
  BADFILL("\"r16\"", "[1,2,3]");
  BADFILL("\"r16\"", "[256,0]");
  BADFILL("\"r16\"", "\"AQID\"");
  BADFILL("\"r16\"", "\"A\"");
  BADFILL("\"r16\"", "0");
  BADFILL("\"r16\"", "null");
  BADFILL("{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":2}}",
          "\"AA==\"");
  BADFILL("{\"name\":\"null_terminated_bytes\",\"configuration\":{"
          "\"length_bytes\":2}}",
          "[300]");
  BADFILL("{\"name\":\"null_terminated_bytes\",\"configuration\":{"
          "\"length_bytes\":2}}",
          "5");
  BADFILL("{\"name\":\"null_terminated_bytes\",\"configuration\":{"
          "\"length_bytes\":2}}",
          "\"!!\"");
  BADFILL("{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":"
          "\"s\"}}",
          "\"nat\"");
  BADFILL("{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":"
          "\"s\"}}",
          "1.5");
  BADFILL("{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":"
          "\"s\"}}",
          "[1]");
  BAD(EIO, "multiple of 8", "[4]", "[2]", "\"r12\"", "[0]", "\"default\"", "");
  BAD(EIO, "must name a data type", "[4]", "[2]", "\"zarrs.optional\"", "null",
      "\"default\"", "");
  BAD(EIO, "must name a data type", "[4]", "[2]",
      "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":5}}", "null",
      "\"default\"", "");
  BAD(EIO, "multiple of 8", "[4]", "[2]",
      "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"r4\"}}",
      "null", "\"default\"", "");
  BADFILL("{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
          "\"uint8\"}}",
          "300");
  BADFILL("{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
          "\"uint8\"}}",
          "[null]");
  BAD(EIO, "at most", "[4]", "[2]", "\"r99999999999\"", "[0]", "\"default\"",
      "");
  BAD(EIO, "length_bytes", "[4]", "[2]", "{\"name\":\"raw_bytes\"}", "\"\"",
      "\"default\"", "");
  BAD(EIO, "length_bytes", "[4]", "[2]",
      "{\"name\":\"null_terminated_bytes\",\"configuration\":{"
      "\"length_bytes\":0}}",
      "\"\"", "\"default\"", "");
  BAD(EIO, "length_bytes", "[4]", "[2]",
      "{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":"
      "2000000}}",
      "\"\"", "\"default\"", "");
  /* fill_value missing */
  RAW("{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
      "\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"regular\","
      "\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":"
      "\"default\",\"codecs\":[\"bytes\"]}",
      EIO, "fill_value");
  /* 2^40 x 2^40 elements, 2^80 in all. */
  BAD(EIO, "overflows", "[1099511627776,1099511627776]", "[1,1]", "\"int8\"",
      "0", "\"default\"", "");
  BAD(EIO, "overflows", "[4611686018427387904,4611686018427387904]", "[1,1]",
      "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "overflows", "[1]", "[9223372036854775807]", "\"int8\"", "0",
      "\"default\"", "");
  BAD(EIO, "dimensions",
      "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
      "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
      "\"int8\"", "0", "\"default\"", "");
  BAD(EIO, "separator", "[4]", "[2]", "\"int8\"", "0",
      "{\"name\":\"default\",\"configuration\":{\"separator\":\"-\"}}", "");
  BAD(EIO, "separator", "[4]", "[2]", "\"int8\"", "0",
      "{\"name\":\"v2\",\"configuration\":{\"separator\":1}}", "");
  BAD(ENOTSUP, "nonsense", "[4]", "[2]", "\"int8\"", "0", "\"nonsense\"", "");
  BAD(EIO, "chunk_key_encoding", "[4]", "[2]", "\"int8\"", "0", "7", "");
  BAD(ENOTSUP, "sharded-store-xyz", "[4]", "[2]", "\"int8\"", "0",
      "\"default\"",
      ",\"storage_transformers\":[{\"name\":\"sharded-store-xyz\"}]");
  BAD(EIO, "storage_transformers", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"storage_transformers\":{}");
  BAD(EIO, "dimension_names", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"dimension_names\":[\"a\",\"b\"]");
  BAD(EIO, "dimension_names", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"dimension_names\":[3]");
  BAD(EIO, "data_type", "[4]", "[2]", "42", "0", "\"default\"", "");
  BAD(EIO, "data_type", "[4]", "[2]", "{\"configuration\":{}}", "0",
      "\"default\"", "");
  BAD(EIO, "length_bytes", "[4]", "[2]",
      "{\"name\":\"fixed_length_utf32\",\"configuration\":{\"length_bytes\":"
      "6}}",
      "\"\"", "\"default\"", "");
  RAW("{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
      "\"data_type\":\"int8\",\"chunk_grid\":{\"name\":"
      "\"zarrs.regular_bounded\",\"configuration\":{\"chunk_shape\":[2]}},"
      "\"chunk_key_encoding\":\"default\",\"fill_value\":0,"
      "\"codecs\":[\"bytes\"]}",
      ENOTSUP, "chunk grid");
  RAW("{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
      "\"data_type\":\"int8\",\"chunk_grid\":\"regular\","
      "\"chunk_key_encoding\":\"default\",\"fill_value\":0,"
      "\"codecs\":[\"bytes\"]}",
      EIO, "chunk_shape");
  RAW("{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
      "\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"regular\","
      "\"configuration\":[]},\"chunk_key_encoding\":\"default\","
      "\"fill_value\":0,\"codecs\":[\"bytes\"]}",
      EIO, "configuration");
  BAD(EIO, "codecs", "[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"codecs\":{\"name\":\"bytes\"}");
#undef RAW
#undef BAD
#undef BADFILL
  ck_assert_int_le(n, 160);
  for (int i = 0; i < n; i++) {
    struct zmeta *m = (struct zmeta *)1;
    struct zerr err = {0};
    int rc = zmeta_parse(t[i].doc, strlen(t[i].doc), &m, &err);
    ck_assert_msg(rc == t[i].rc, "case %d: rc %d, want %d (%s): %s", i, rc,
                  t[i].rc, err.msg, t[i].doc);
    ck_assert_msg(err.code == -rc, "case %d: err.code %d", i, err.code);
    ck_assert_msg(strstr(err.msg, t[i].says) != NULL,
                  "case %d: message '%s' does not say '%s'", i, err.msg,
                  t[i].says);
    ck_assert_msg(strchr(err.msg, '\n') == NULL, "case %d: multi-line", i);
    ck_assert_msg(m == (struct zmeta *)1, "case %d: *out written", i);
  }
}
END_TEST

START_TEST(ignorable_extensions) {
  /* must_understand:false fields and transformers are skipped. */
  zmeta_free(parse_ok(array_doc("[4]", "[2]", "\"int8\"", "0", "\"default\"",
                                ",\"foo\":{\"must_understand\":false}")));
  zmeta_free(parse_ok(array_doc("[4]", "[2]", "\"int8\"", "0", "\"default\"",
                                ",\"storage_transformers\":[{\"name\":\"x\","
                                "\"must_understand\":false}]")));
  zmeta_free(parse_ok("{\"zarr_format\":3,\"node_type\":\"group\","
                      "\"bar\":{\"must_understand\":false,\"y\":1}}"));
  /* An unknown data type is not a parse failure; its fill is not read. */
  struct zmeta *m = parse_ok(fill_doc("{\"name\":\"float8_e5m2\"}", "[1,2]"));
  ck_assert_int_eq(m->dtype.kind, DT_UNSUPPORTED);
  ck_assert_ptr_null(m->fill);
  zmeta_free(m);
}
END_TEST

START_TEST(chunk_keys) {
  static const struct {
    const char *keyenc;
    const char *shape, *chunks;
    uint64_t idx[3];
    const char *key;
  } t[] = {
      {"\"default\"", "[10,20,30]", "[1,1,1]", {1, 2, 3}, "c/1/2/3"},
      {"{\"name\":\"default\",\"configuration\":{\"separator\":\".\"}}",
       "[10,30]",
       "[1,1]",
       {1, 23},
       "c.1.23"},
      {"{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}}",
       "[100]",
       "[1]",
       {99},
       "c/99"},
      {"\"v2\"", "[10,20]", "[1,1]", {1, 0}, "1.0"},
      {"{\"name\":\"v2\",\"configuration\":{\"separator\":\"/\"}}",
       "[10,20]",
       "[1,1]",
       {1, 0},
       "1/0"},
      {"{\"name\":\"v2\"}", "[8]", "[1]", {7}, "7"},
      {"\"default\"", "[]", "[]", {0}, "c"},
      {"\"v2\"", "[]", "[]", {0}, "0"},
      {"\"default\"",
       "[4611686018427387904]",
       "[1]",
       {4611686018427387903ull},
       "c/4611686018427387903"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zmeta *m = parse_ok(
        array_doc(t[i].shape, t[i].chunks, "\"int8\"", "0", t[i].keyenc, ""));
    char key[64];
    int len = zmeta_chunk_key(m, t[i].idx, key, sizeof key);
    ck_assert_int_eq(len, (int)strlen(t[i].key));
    ck_assert_str_eq(key, t[i].key);
    uint64_t idx[3] = {9, 9, 9};
    ck_assert_int_eq(zmeta_parse_chunk_key(m, t[i].key, idx), 0);
    for (int d = 0; d < m->ndim; d++)
      ck_assert_uint_eq(idx[d], t[i].idx[d]);
    /* Too small a buffer: the key and its NUL must fit. */
    ck_assert_int_eq(zmeta_chunk_key(m, t[i].idx, key, (size_t)len),
                     -ENAMETOOLONG);
    ck_assert_int_eq(zmeta_chunk_key(m, t[i].idx, key, 0), -ENAMETOOLONG);
    zmeta_free(m);
  }
  /* Every chunk of a 3-d grid round-trips. */
  struct zmeta *m = parse_ok(
      array_doc("[10,20,7]", "[3,7,7]", "\"int8\"", "0", "\"default\"", ""));
  for (uint64_t a = 0; a < m->grid[0]; a++)
    for (uint64_t b = 0; b < m->grid[1]; b++) {
      uint64_t idx[3] = {a, b, 0}, back[3];
      char key[64];
      ck_assert_int_gt(zmeta_chunk_key(m, idx, key, sizeof key), 0);
      ck_assert_int_eq(zmeta_parse_chunk_key(m, key, back), 0);
      ck_assert(!memcmp(idx, back, sizeof idx));
    }
  zmeta_free(m);

  m = parse_ok(
      array_doc("[10,20]", "[5,5]", "\"int8\"", "0", "\"default\"", ""));
  uint64_t idx[2];
  const char *reject[] = {
      "c/01/0",    "c/2/0",   "c/0/4",
      "c/0",       "c/0/0/0", "c/-1/0",
      "c/+1/0",    "c//0",    "0/0",
      "c/0/0.txt", "c/1/",    "d/0/0",
      "c.0.0",     "c/0/ 1",  "C/0/0",
      "c",         "",        "c/0/00",
      "c/1/0/",    "/c/1/0",  "c/99999999999999999999999/0"};
  for (size_t i = 0; i < sizeof reject / sizeof *reject; i++)
    ck_assert_msg(zmeta_parse_chunk_key(m, reject[i], idx) == -ENOENT,
                  "accepted %s", reject[i]);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, NULL, idx), -ENOENT);
  zmeta_free(m);

  m = parse_ok(array_doc("[10,20]", "[5,5]", "\"int8\"", "0", "\"v2\"", ""));
  const char *reject_v2[] = {"0/0", "c.0.0", "0.", ".0",   "0.0.0",
                             "2.0", "00.1",  "0",  "0..1", "1.3 "};
  for (size_t i = 0; i < sizeof reject_v2 / sizeof *reject_v2; i++)
    ck_assert_msg(zmeta_parse_chunk_key(m, reject_v2[i], idx) == -ENOENT,
                  "v2 accepted %s", reject_v2[i]);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "1.3", idx), 0);
  zmeta_free(m);

  /* Scalars: only the one key. */
  m = parse_ok(array_doc("[]", "[]", "\"int8\"", "0", "\"default\"", ""));
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "c", idx), 0);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "c/0", idx), -ENOENT);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "0", idx), -ENOENT);
  zmeta_free(m);
  m = parse_ok(array_doc("[]", "[]", "\"int8\"", "0", "\"v2\"", ""));
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "0", idx), 0);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "c", idx), -ENOENT);
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "", idx), -ENOENT);
  zmeta_free(m);
  /* An empty array has no chunks at all. */
  m = parse_ok(array_doc("[0]", "[5]", "\"int8\"", "0", "\"default\"", ""));
  ck_assert_int_eq(zmeta_parse_chunk_key(m, "c/0", idx), -ENOENT);
  zmeta_free(m);
}
END_TEST

/* Parse a .zarray document, expecting success. */
static struct zmeta *parse_v2_ok(const char *text) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  int rc = zmeta_parse_v2(text, strlen(text), &m, &err);
  ck_assert_msg(rc == 0, "rejected: %s (%s)", err.msg, text);
  return m;
}

/* The codec list as compact JSON (caller frees). */
static char *codecs_text(const struct zmeta *m) {
  return json_dumps(m->codecs, JSON_COMPACT | JSON_SORT_KEYS);
}

START_TEST(v2_arrays) {
  struct zmeta *m = parse_v2_ok(
      "{\"zarr_format\":2,\"shape\":[10,7],\"chunks\":[4,3],\"dtype\":\">i4\","
      "\"order\":\"F\",\"compressor\":{\"id\":\"zlib\",\"level\":1},"
      "\"filters\":null,\"fill_value\":null,\"dimension_separator\":\"/\"}");
  ck_assert_int_eq(m->dtype.kind, DT_INT32);
  ck_assert_int_eq(m->key_encoding, ZMETA_KEY_V2);
  ck_assert_int_eq(m->key_sep, '/');
  ck_assert_uint_eq(m->fill_len, 4);
  ck_assert_int_eq(memcmp(m->fill, "\0\0\0\0", 4), 0);
  char *c = codecs_text(m);
  ck_assert_str_eq(c, "[{\"configuration\":{\"order\":\"F\"},\"name\":"
                      "\"transpose\"},{\"configuration\":{\"endian\":\"big\"},"
                      "\"name\":\"bytes\"},{\"configuration\":{\"level\":1},"
                      "\"name\":\"numcodecs.zlib\"}]");
  free(c);
  char key[32];
  uint64_t idx[2] = {2, 1};
  zmeta_chunk_key(m, idx, key, sizeof key);
  ck_assert_str_eq(key, "2/1");
  zmeta_free(m);

  m = parse_v2_ok("{\"zarr_format\":2,\"shape\":[5],\"chunks\":[2],\"dtype\":"
                  "\"|O\",\"order\":\"C\",\"compressor\":{\"id\":\"zstd\","
                  "\"level\":3},\"filters\":[{\"id\":\"vlen-utf8\"}],"
                  "\"fill_value\":0}");
  ck_assert_int_eq(m->dtype.kind, DT_STRING);
  ck_assert_uint_eq(m->fill_len, 0);
  c = codecs_text(m);
  ck_assert_str_eq(c, "[{\"name\":\"vlen-utf8\"},{\"configuration\":{"
                      "\"level\":3},\"name\":\"zstd\"}]");
  free(c);
  zmeta_free(m);

  /* uint64 fill beyond int64: carried exactly. */
  m = parse_v2_ok("{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
                  "\"<u8\",\"order\":\"C\",\"compressor\":null,\"filters\":"
                  "null,\"fill_value\":18446744073709551615}");
  uint64_t f;
  memcpy(&f, m->fill, 8);
  ck_assert_uint_eq(f, UINT64_MAX);
  zmeta_free(m);

  /* numpy U: UTF-32 code units, byte order per code unit; fill encoded. */
  m = parse_v2_ok("{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
                  "\">U2\",\"order\":\"C\",\"compressor\":null,\"filters\":"
                  "null,\"fill_value\":\"h\u00e9\"}");
  ck_assert_int_eq(m->dtype.kind, DT_FIXED_UTF32);
  ck_assert_uint_eq(m->dtype.size, 8);
  ck_assert_uint_eq(dtype_swap_unit(&m->dtype), 4);
  uint32_t cp[2];
  memcpy(cp, m->fill, 8);
  ck_assert_uint_eq(cp[0], 'h');
  ck_assert_uint_eq(cp[1], 0xe9);
  zmeta_free(m);
  m = parse_v2_ok("{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
                  "\"|S5\",\"order\":\"C\",\"compressor\":null,\"filters\":"
                  "null,\"fill_value\":\"YWI=\"}"); /* base64 of "ab" */
  ck_assert_int_eq(m->dtype.kind, DT_FIXED_BYTES);
  ck_assert_int_eq(memcmp(m->fill, "ab\0\0\0", 5), 0);
  zmeta_free(m);
  /* Unsupported dtypes still parse, as DT_UNSUPPORTED named by the string. */
  static const char *const unsup[] = {"<f16", "<m8[ps]", "<m8", "|V0", "<c32"};
  for (size_t i = 0; i < sizeof unsup / sizeof *unsup; i++) {
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
             "\"%s\",\"order\":\"C\",\"compressor\":null,\"filters\":"
             "null,\"fill_value\":null}",
             unsup[i]);
    m = parse_v2_ok(doc);
    ck_assert_int_eq(m->dtype.kind, DT_UNSUPPORTED);
    ck_assert_str_eq(m->dtype.name, unsup[i]);
    zmeta_free(m);
  }
  /* complex, timedelta, void: kinds, byte order and fills. */
  static const struct {
    const char *dtype, *fill;
    enum dtype_kind kind;
    size_t size;
    const char *codec; /* the array->bytes codec, as JSON */
    const char *fill_bytes;
  } v2t[] = {
      {"<c8", "[1.5,\"NaN\"]", DT_COMPLEX64, 8,
       "{\"configuration\":{\"endian\":\"little\"},\"name\":\"bytes\"}",
       "\x00\x00\xc0\x3f\x00\x00\xc0\x7f"},
      {">c16", "null", DT_COMPLEX128, 16,
       "{\"configuration\":{\"endian\":\"big\"},\"name\":\"bytes\"}",
       "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0"},
      {"<m8[ns]", "\"NaT\"", DT_TIMEDELTA64, 8,
       "{\"configuration\":{\"endian\":\"little\"},\"name\":\"bytes\"}",
       "\0\0\0\0\0\0\0\x80"},
      {">m8[D]", "3", DT_TIMEDELTA64, 8,
       "{\"configuration\":{\"endian\":\"big\"},\"name\":\"bytes\"}",
       "\3\0\0\0\0\0\0\0"},
      {"|V3", "\"AQID\"", DT_RAW, 3, "{\"name\":\"bytes\"}", "\1\2\3"},
  };
  for (size_t i = 0; i < sizeof v2t / sizeof *v2t; i++) {
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
             "\"%s\",\"order\":\"C\",\"compressor\":null,\"filters\":"
             "null,\"fill_value\":%s}",
             v2t[i].dtype, v2t[i].fill);
    m = parse_v2_ok(doc);
    ck_assert_msg(m->dtype.kind == v2t[i].kind, "%s: kind %d", v2t[i].dtype,
                  m->dtype.kind);
    ck_assert_uint_eq(m->dtype.size, v2t[i].size);
    ck_assert_uint_eq(m->fill_len, v2t[i].size);
    ck_assert_msg(!memcmp(m->fill, v2t[i].fill_bytes, v2t[i].size),
                  "%s: fill bytes", v2t[i].dtype);
    c = codecs_text(m);
    char want[256];
    snprintf(want, sizeof want, "[%s]", v2t[i].codec);
    ck_assert_str_eq(c, want);
    free(c);
    zmeta_free(m);
  }
  /* The numcodecs packbits filter becomes numcodecs.packbits (a2a). */
  m = parse_v2_ok("{\"zarr_format\":2,\"shape\":[9],\"chunks\":[9],\"dtype\":"
                  "\"|b1\",\"order\":\"C\",\"compressor\":{\"id\":\"zlib\","
                  "\"level\":1},\"filters\":[{\"id\":\"packbits\"}],"
                  "\"fill_value\":false}");
  c = codecs_text(m);
  ck_assert_str_eq(c, "[{\"configuration\":{},\"name\":\"numcodecs.packbits\"},"
                      "{\"name\":\"bytes\"},{\"configuration\":{\"level\":1},"
                      "\"name\":\"numcodecs.zlib\"}]");
  free(c);
  zmeta_free(m);

  const char *bad[] = {
      "{\"zarr_format\":3,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<i4\"}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[0],\"dtype\":\"<i4\"}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3,3],\"dtype\":\"<i4\"}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"|O\","
      "\"filters\":null}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<i4\","
      "\"order\":\"X\"}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<i4\","
      "\"dimension_separator\":\"-\"}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":{\"a\":"
      "\"<i4\"}}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":[[\"a\","
      "\"<i4\"]],\"fill_value\":\"AAA=\"}",
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<i4\","
      "\"fill_value\":\"x\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct zerr err = {0};
    ck_assert_msg(zmeta_parse_v2(bad[i], strlen(bad[i]), &m, &err) < 0,
                  "accepted %s", bad[i]);
    ck_assert(err.msg[0] != '\0');
  }
}
END_TEST

/* A V2 |S4 fill as zarr-python 2.13.6 (Debian) reads it: the stored bytes
 * of numpy's S4 value of Metadata2.decode_fill_value (base64 when
 * base64.b64decode takes the text, else the text's own bytes), computed
 * by zarr-python itself. kerchunk writes " " for every netCDF char
 * variable. */
START_TEST(v2_bytes_fills_as_zarr_python) {
  static const struct {
    const char *fill; /* JSON */
    const char want[5];
  } t[] = {
      {"\" \"", "\0\0\0\0"},
      {"\"\"", "\0\0\0\0"},
      {"\"QUJD\"", "ABC\0"},
      {"\"QUJDREVG\"", "ABCD"},
      {"\"ab\"", "ab\0\0"},
      {"\"abcd\"", "i\xb7\x1d\0"},
      {"\"a b c d\"", "i\xb7\x1d\0"},
      {"\"YQ==x\"", "a\0\0\0"},
      {"\"YWJj=\"", "abc\0"},
      {"\"=YQ==\"", "a\0\0\0"},
      {"\"YQ=\"", "YQ=\0"},
      {"\"Y=Q=\"", "Y=Q="},
      {"\"AA=A\"", "AA=A"},
      {"\"QUJD!!\"", "ABC\0"},
      {"\"\\u0000\"", "\0\0\0\0"},
      {"\"x y\"", "x y\0"},
      {"\"AAAA\"", "\0\0\0\0"},
      {"0", "0\0\0\0"},
      {"7", "7\0\0\0"},
      {"-12", "-12\0"},
      {"true", "True"},
      {"false", "Fals"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
             "\"|S4\",\"order\":\"C\",\"compressor\":null,\"filters\":"
             "null,\"fill_value\":%s}",
             t[i].fill);
    struct zmeta *m = parse_v2_ok(doc);
    ck_assert_uint_eq(m->fill_len, 4);
    ck_assert_msg(!memcmp(m->fill, t[i].want, 4), "fill %s: %02x%02x%02x%02x",
                  t[i].fill, m->fill[0], m->fill[1], m->fill[2], m->fill[3]);
    zmeta_free(m);
  }
  /* zarr-python fails on text that is not ASCII; a real would be its
   * Python repr, which zarrfs does not write: both refused by name. */
  const char *bad[] = {"\"h\\u00e9\"", "1.5", "[1,2]"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char doc[512];
    snprintf(doc, sizeof doc,
             "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
             "\"|S4\",\"order\":\"C\",\"compressor\":null,\"filters\":"
             "null,\"fill_value\":%s}",
             bad[i]);
    struct zmeta *m = NULL;
    struct zerr err = {0};
    ck_assert_msg(zmeta_parse_v2(doc, strlen(doc), &m, &err) == -EIO,
                  "accepted %s", bad[i]);
    ck_assert_ptr_nonnull(strstr(err.msg, "is not a valid"));
  }
}
END_TEST

/* A float fill written as an integer literal of any length (JavaScript
 * writes 1e20 as 100000002004087730000): the value Python's float() gives
 * the int, then narrowed as any number; V2 and V3 alike. */
START_TEST(float_fills_as_integer_literals) {
  static const struct {
    const char *fill;
    uint64_t bits;
  } t64[] = {
      {"100000002004087730000", 0x4415af1d80000000ull}, /* float32(1e20) */
      {"-100000002004087730000", 0xc415af1d80000000ull},
      {"9223372036854775808", 0x43e0000000000000ull}, /* 2^63 */
      /* 2^64 + 2^11 + 1: above the midpoint, up; 2^64 + 2^11: the tie, to
       * even (down) */
      {"18446744073709553665", 0x43f0000000000001ull},
      {"18446744073709553664", 0x43f0000000000000ull},
      {"1797693134862315708145274237317043567980705675258449965989174768031572"
       "6078002853876058955863276687817154045895351438246423432132688946418276"
       "8467546703537516986049910576551282076245490090389328944075868508455133"
       "9423045832369032229481658085593321233482747978262041447231687381771809"
       "19299881250404026184124858368",
       0x7fefffffffffffffull}, /* DBL_MAX, written out */
  };
  for (size_t i = 0; i < sizeof t64 / sizeof *t64; i++)
    fill_is("\"float64\"", t64[i].fill, &t64[i].bits, 8);
  uint32_t f32 = 0x60ad78ecu; /* float32(1e20) */
  fill_is("\"float32\"", "100000002004087730000", &f32, 4);
  /* through float64, as numpy casts a Python int: 2^80 + 2^56 + 1 rounds
   * to the float32 midpoint as a double, then to even */
  f32 = 0x67800000u;
  fill_is("\"float32\"", "1208925891672223212634113", &f32, 4);
  /* V2, as kerchunk's JSON from JavaScript carries it */
  struct zmeta *m = parse_v2_ok(
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f4\","
      "\"order\":\"C\",\"compressor\":null,\"filters\":null,"
      "\"fill_value\":100000002004087730000}");
  uint32_t b;
  memcpy(&b, m->fill, 4);
  ck_assert_uint_eq(b, 0x60ad78ecu);
  zmeta_free(m);
  /* Too large for a double (Python: OverflowError), and for a float32
   * (a finite value that overflows is refused, as for any number). */
  char big[400];
  memset(big, '9', 330);
  big[330] = '\0';
  const char *bad[][2] = {{"\"float64\"", big},
                          {"\"float32\"", "1000000000000000000000000000000000"
                                          "000000000000000"}};
  for (size_t i = 0; i < 2; i++) {
    struct zmeta *mm = NULL;
    struct zerr err = {0};
    const char *doc = fill_doc(bad[i][0], bad[i][1]);
    ck_assert_msg(zmeta_parse(doc, strlen(doc), &mm, &err) == -EIO,
                  "accepted %s", bad[i][1]);
    ck_assert_ptr_nonnull(strstr(err.msg, "is not a valid"));
  }
}
END_TEST

/* Parse every zarr.json below dir; returns how many. */
static int parse_tree(const char *dir) {
  int count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.')
      continue;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
    if (!strcmp(de->d_name, "zarr.json")) {
      FILE *f = fopen(path, "rb");
      char text[65536];
      size_t n = fread(text, 1, sizeof text, f);
      fclose(f);
      struct zmeta *m = NULL;
      struct zerr err = {0};
      ck_assert_msg(zmeta_parse(text, n, &m, &err) == 0, "%s: %s", path,
                    err.msg);
      zmeta_free(m);
      count++;
    } else if (de->d_type == DT_DIR && strcmp(de->d_name, "c")) {
      count += parse_tree(path);
    }
  }
  closedir(d);
  return count;
}

START_TEST(fixture_metadata) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  char dir[8192];
  snprintf(dir, sizeof dir, "%s/zarrs/synthesized_vlen", fx);
  ck_assert_int_ge(parse_tree(dir), 9);
  snprintf(dir, sizeof dir, "%s/zarrs/snapshots/supported/regular/string/a2b",
           fx);
  ck_assert_int_ge(parse_tree(dir), 5);
}
END_TEST

int main(void) {
  Suite *s = suite_create("meta");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, group_and_array);
  tcase_add_test(tc, zarrita_defaults);
  tcase_add_test(tc, zarrita_store);
  tcase_add_test(tc, every_dtype);
  tcase_add_test(tc, integer_fills);
  tcase_add_test(tc, float_fills);
  tcase_add_test(tc, lenient_json);
  tcase_add_test(tc, bytes_and_string_fills);
  tcase_add_test(tc, new_type_fills);
  tcase_add_test(tc, invalid_metadata_table);
  tcase_add_test(tc, listed_grids);
  tcase_add_test(tc, ignorable_extensions);
  tcase_add_test(tc, chunk_keys);
  tcase_add_test(tc, v2_arrays);
  tcase_add_test(tc, v2_bytes_fills_as_zarr_python);
  tcase_add_test(tc, float_fills_as_integer_literals);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 60);
  tcase_add_test(fx, fixture_metadata);
  testutil_add_fixture_tcase(s, fx, "check_meta");
  return testutil_run(s);
}
