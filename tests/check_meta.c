/* check_meta.c - zarr.json parsing: valid nodes, every data type and key
 * encoding, fill values, and a table of malformed or contradictory
 * metadata that must be refused with a reason. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../src/meta.h"
#include "testutil.h"

/* An array document with the given fields spliced in. */
static char *array_doc(const char *shape, const char *chunks, const char *dtype,
                       const char *fill, const char *keyenc,
                       const char *extra) {
  static char buf[4096];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":%s,\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":%s}},\"chunk_key_encoding\":"
           "%s,\"fill_value\":%s,\"codecs\":[{\"name\":\"bytes\"}]%s}",
           shape, dtype, chunks, keyenc, fill, extra);
  return buf;
}

/* Parse text, expecting success. */
static struct zmeta *parse_ok(const char *text) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  int rc = zmeta_parse(text, strlen(text), &m, &err);
  ck_assert_msg(rc == 0, "rejected: %s (%s)", err.msg, text);
  return m;
}

START_TEST(group_and_array) {
  struct zmeta *m = parse_ok(
      "{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":{\"a\":1}}");
  ck_assert_int_eq(m->node, ZMETA_GROUP);
  zmeta_free(m);
  m = parse_ok(array_doc("[10,7]", "[4,3]", "\"int16\"", "-5",
                         "{\"name\":\"default\"}", ""));
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
  ck_assert_int_eq(m->key_sep, '/');
  zmeta_free(m);
  zmeta_free(NULL);
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
      {"\"string\"", DT_STRING, 0, "\"abc\""},
      {"{\"name\":\"bytes\"}", DT_BYTES, 0, "\"AAE=\""},
      {"\"variable_length_bytes\"", DT_BYTES, 0, "[1,2,3]"},
      {"\"binary\"", DT_BYTES, 0, "\"\""},
      {"\"float8_e4m3\"", DT_UNSUPPORTED, 0, "0"},
      {"{\"name\":\"fixed_length_utf32\",\"configuration\":{\"length_bytes\":"
       "16}}",
       DT_FIXED_UTF32, 16, "\"\""},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zmeta *m = parse_ok(
        array_doc("[4]", "[2]", t[i].json, t[i].fill, "\"default\"", ""));
    ck_assert_int_eq(m->dtype.kind, t[i].kind);
    ck_assert_uint_eq(m->dtype.size, t[i].size);
    zmeta_free(m);
  }
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
           {"-0.0", 0x8000000000000000ull},
           {"0.5", 0x3fe0000000000000ull}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zmeta *m = parse_ok(
        array_doc("[4]", "[2]", "\"float64\"", t[i].fill, "\"default\"", ""));
    uint64_t b;
    memcpy(&b, m->fill, 8);
    ck_assert_msg(b == t[i].bits, "%s -> %llx", t[i].fill,
                  (unsigned long long)b);
    zmeta_free(m);
  }
  struct zmeta *m = parse_ok(array_doc("[4]", "[2]", "\"float32\"",
                                       "\"0x7fc00001\"", "\"default\"", ""));
  uint32_t b32;
  memcpy(&b32, m->fill, 4);
  ck_assert_uint_eq(b32, 0x7fc00001u);
  zmeta_free(m);
  /* Bare NaN tokens (legacy writers) are accepted. */
  m = parse_ok(array_doc("[4]", "[2]", "\"float32\"", "NaN", "\"default\"",
                         ",\"attributes\":{\"x\":\"NaN in a string\"}"));
  memcpy(&b32, m->fill, 4);
  ck_assert_uint_eq(b32, 0x7fc00000u);
  zmeta_free(m);
}
END_TEST

START_TEST(bytes_and_string_fills) {
  struct zmeta *m = parse_ok(
      array_doc("[4]", "[2]", "\"bytes\"", "\"AAEC\"", "\"default\"", ""));
  ck_assert_uint_eq(m->fill_len, 3);
  ck_assert_int_eq(memcmp(m->fill, "\0\1\2", 3), 0);
  zmeta_free(m);
  m = parse_ok(
      array_doc("[4]", "[2]", "\"string\"", "\"h\\u00e9\"", "\"default\"", ""));
  ck_assert_uint_eq(m->fill_len, 3);
  ck_assert_int_eq(memcmp(m->fill, "h\xc3\xa9", 3), 0);
  zmeta_free(m);
}
END_TEST

START_TEST(invalid_metadata_table) {
  static char doc[64][4096];
  const char *bad[64];
  int n = 0;
  bad[n++] = "not json";
  bad[n++] = "[1,2]";
  bad[n++] = "{\"zarr_format\":2,\"node_type\":\"group\"}";
  bad[n++] = "{\"zarr_format\":3}";
  bad[n++] = "{\"zarr_format\":3,\"node_type\":\"thing\"}";
  bad[n++] = "{\"zarr_format\":3,\"node_type\":\"group\",\"foo\":1}";
  bad[n++] = "{\"zarr_format\":3,\"node_type\":\"array\"}";
#define BAD(...)                                                               \
  (snprintf(doc[n], sizeof doc[n], "%s", array_doc(__VA_ARGS__)),              \
   bad[n] = doc[n], n++)
  BAD("\"x\"", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD("[-1]", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD("[4]", "[0]", "\"int8\"", "0", "\"default\"", "");
  BAD("[4,4]", "[2]", "\"int8\"", "0", "\"default\"", "");
  BAD("[4]", "[2]", "\"int8\"", "0", "\"default\"", ",\"foo\":1");
  BAD("[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"foo\":{\"must_understand\":true}");
  BAD("[4]", "[2]", "\"int8\"", "300", "\"default\"", "");
  BAD("[4]", "[2]", "\"uint8\"", "-1", "\"default\"", "");
  BAD("[4]", "[2]", "\"int8\"", "1.5", "\"default\"", "");
  BAD("[4]", "[2]", "\"bool\"", "1", "\"default\"", "");
  BAD("[4]", "[2]", "\"float32\"", "\"nan\"", "\"default\"", "");
  BAD("[4]", "[2]", "\"float32\"", "\"0x7fc0\"", "\"default\"", "");
  BAD("[4]", "[2]", "\"bytes\"", "[256]", "\"default\"", "");
  BAD("[4]", "[2]", "\"bytes\"", "\"!!\"", "\"default\"", "");
  BAD("[4611686018427387904,4611686018427387904]", "[1,1]", "\"int8\"", "0",
      "\"default\"", "");
  BAD("[4]", "[2]", "\"int8\"", "0",
      "{\"name\":\"default\",\"configuration\":{\"separator\":\"-\"}}", "");
  BAD("[4]", "[2]", "\"int8\"", "0", "\"nonsense\"", "");
  BAD("[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"storage_transformers\":[{\"name\":\"chunk-manifest-json\"}]");
  BAD("[4]", "[2]", "\"int8\"", "0", "\"default\"",
      ",\"dimension_names\":[\"a\",\"b\"]");
  BAD("[4]", "[2]", "42", "0", "\"default\"", "");
#undef BAD
  for (int i = 0; i < n; i++) {
    struct zmeta *m = NULL;
    struct zerr err = {0};
    int rc = zmeta_parse(bad[i], strlen(bad[i]), &m, &err);
    ck_assert_msg(rc < 0, "accepted case %d: %s", i, bad[i]);
    ck_assert_msg(err.msg[0] != '\0', "no reason for case %d", i);
    ck_assert(m == NULL);
  }
  /* must_understand:false extensions are allowed. */
  zmeta_free(parse_ok(array_doc("[4]", "[2]", "\"int8\"", "0", "\"default\"",
                                ",\"foo\":{\"must_understand\":false}")));
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
      {"\"v2\"", "[10,20]", "[1,1]", {1, 0}, "1.0"},
      {"{\"name\":\"v2\",\"configuration\":{\"separator\":\"/\"}}",
       "[10,20]",
       "[1,1]",
       {1, 0},
       "1/0"},
      {"\"default\"", "[]", "[]", {0}, "c"},
      {"\"v2\"", "[]", "[]", {0}, "0"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zmeta *m = parse_ok(
        array_doc(t[i].shape, t[i].chunks, "\"int8\"", "0", t[i].keyenc, ""));
    char key[64];
    ck_assert_int_ge(zmeta_chunk_key(m, t[i].idx, key, sizeof key), 0);
    ck_assert_str_eq(key, t[i].key);
    uint64_t idx[3] = {9, 9, 9};
    ck_assert_int_eq(zmeta_parse_chunk_key(m, t[i].key, idx), 0);
    for (int d = 0; d < m->ndim; d++)
      ck_assert_uint_eq(idx[d], t[i].idx[d]);
    zmeta_free(m);
  }
  struct zmeta *m = parse_ok(
      array_doc("[10,20]", "[5,5]", "\"int8\"", "0", "\"default\"", ""));
  uint64_t idx[2];
  const char *reject[] = {"c/01/0",  "c/2/0",     "c/0/4",  "c/0",
                          "c/0/0/0", "c/-1/0",    "c/+1/0", "c//0",
                          "0/0",     "c/0/0.txt", "c/1/",   "d/0/0"};
  for (size_t i = 0; i < sizeof reject / sizeof *reject; i++)
    ck_assert_msg(zmeta_parse_chunk_key(m, reject[i], idx) == -ENOENT,
                  "accepted %s", reject[i]);
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
                  "null,\"fill_value\":\"ab\"}");
  ck_assert_int_eq(m->dtype.kind, DT_FIXED_BYTES);
  ck_assert_int_eq(memcmp(m->fill, "ab\0\0\0", 5), 0);
  zmeta_free(m);
  /* Unsupported dtypes still parse, as DT_UNSUPPORTED named by the string. */
  m = parse_v2_ok("{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":"
                  "\"<c16\",\"order\":\"C\",\"compressor\":null,\"filters\":"
                  "null,\"fill_value\":null}");
  ck_assert_int_eq(m->dtype.kind, DT_UNSUPPORTED);
  ck_assert_str_eq(m->dtype.name, "<c16");
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
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":[[\"a\","
      "\"<i4\"]]}",
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
  if (!fx) {
    printf("check_meta: fixtures not found: skipping fixture metadata\n");
    return;
  }
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
  tcase_add_test(tc, every_dtype);
  tcase_add_test(tc, float_fills);
  tcase_add_test(tc, bytes_and_string_fills);
  tcase_add_test(tc, invalid_metadata_table);
  tcase_add_test(tc, chunk_keys);
  tcase_add_test(tc, v2_arrays);
  tcase_add_test(tc, fixture_metadata);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
