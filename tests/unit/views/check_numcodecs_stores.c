/* check_numcodecs_stores.c - stores built here with numcodecs.fixedscaleoffset,
 * msgpack2, json2 (and the legacy json) filters and the ZEP0007 draft
 * string layout of `bytes`, read through the engine (V3 and V2 metadata):
 * metadata -> chain -> view text, fill of missing chunks and each bad
 * chunk failing alone with a message naming the codec. The codecs
 * themselves, through the chain: tests/unit/codecs/check_numcodecs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/util/log.h"
#include "../testchunk.h"
#include "../teststore.h"
#include "../testutil.h"

/* ---- stores through the engine ---- */

/* numcodecs' own docstring example (as in check_numcodecs.c). */
static const char FSO_F8_U1[] =
    "[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{\"offset\":"
    "1000,\"scale\":10,\"dtype\":\"<f8\",\"astype\":\"|u1\"}},\"bytes\"]";

/* Write a NUL-terminated text file. */
static void put_text(const char *dir, const char *key, const char *text) {
  ts_put_file(dir, key, text, strlen(text));
}

/* A view must read as want. */
static void expect_view(struct engine *e, const char *path, const char *want) {
  struct zerr err = {0};
  char *got = ts_view_text(e, path, 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", path, err.msg);
  ck_assert_msg(!strcmp(got, want), "%s: got\n%s\nwant\n%s", path, got, want);
  free(got);
}

/* A view must fail with a message containing msg. */
static void expect_view_fails(struct engine *e, const char *path,
                              const char *msg) {
  struct zerr err = {0};
  char *got = ts_view_text(e, path, 1 << 16, &err);
  ck_assert_msg(got == NULL, "%s: read '%s', expected a failure", path, got);
  ck_assert_msg(strstr(err.msg, msg), "%s: message '%s' lacks '%s'", path,
                err.msg, msg);
}

/* A temporary store directory with a root group. */
static void new_store(char *dir) {
  ck_assert_ptr_nonnull(mkdtemp(dir));
  put_text(dir, "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
}

/* Remove a temporary store (test stores are shallow and small). */
static void remove_store(const char *dir) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* V3 and V2 stores: values, a missing chunk's fill value. */
START_TEST(fso_stores) {
  char dir[] = "/tmp/check_numcodecs.XXXXXX";
  new_store(dir);
  ts_put_v3_1d(dir, "v3", 6, 4, "\"float64\"", "-1", FSO_F8_U1);
  ts_put_file(dir, "v3/c/0", "\x00\x05\x0a\x19", 4);
  /* V2 filter id, order C, no compressor; chunk 1 missing (fill 2.5). */
  put_text(dir, "v2/.zarray",
           "{\"zarr_format\":2,\"shape\":[5],\"chunks\":[3],\"dtype\":\"<f4\","
           "\"compressor\":null,\"fill_value\":2.5,\"order\":\"C\","
           "\"filters\":[{\"id\":\"fixedscaleoffset\",\"offset\":-1,"
           "\"scale\":2,\"dtype\":\"<f4\",\"astype\":\"<i2\"}]}");
  ts_put_file(dir, "v2/0", "\x00\x00\x03\x00\xfe\xff", 6);
  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/v3/values.txt", "1000\n1000.5\n1001\n1002.5\n-1\n-1\n");
  expect_view(e, "/v3/c/0.txt", "1000\n1000.5\n1001\n1002.5\n");
  expect_view(e, "/v2/values.txt", "-1\n0.5\n-2\n2.5\n2.5\n");
  engine_free(e);
  remove_store(dir);
}
END_TEST
/* A V2 store as zarr-python 2 writes it with object_codec=MsgPack(). */
START_TEST(msgpack_store) {
  char dir[] = "/tmp/check_numcodecs.XXXXXX";
  new_store(dir);
  put_text(dir, "obj/.zarray",
           "{\"zarr_format\":2,\"shape\":[5],\"chunks\":[3],\"dtype\":\"|O\","
           "\"compressor\":null,\"fill_value\":0,\"order\":\"C\","
           "\"filters\":[{\"id\":\"msgpack2\",\"raw\":false,"
           "\"use_bin_type\":true,\"use_single_float\":false}]}");
  ts_put_file(dir, "obj/0", "\x95\xa3one\xa7two\nlin\x03\xa2|O\x91\x03", 19);
  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/obj/values.txt", "one\ntwo lin\n3\n\n\n");
  expect_view(e, "/obj/0.txt", "one\ntwo lin\n3\n");
  engine_free(e);
  remove_store(dir);
}
END_TEST
/* A V2 object array with the json2 object codec (first filter) and a zlib
 * compressor-free chunk; the second chunk is missing (fill null: ""); and
 * a 2-D one with the legacy json codec as zarr-python 2 wrote it. */
START_TEST(json2_store) {
  char dir[] = "/tmp/check_numcodecs.XXXXXX";
  new_store(dir);
  put_text(dir, "obj/.zarray",
           "{\"zarr_format\":2,\"shape\":[5],\"chunks\":[3],\"dtype\":\"|O\","
           "\"compressor\":null,\"fill_value\":null,\"order\":\"C\","
           "\"filters\":[{\"id\":\"json2\",\"allow_nan\":true,"
           "\"check_circular\":true,\"encoding\":\"utf-8\",\"ensure_ascii\":"
           "true,\"indent\":null,\"separators\":[\",\",\":\"],\"skipkeys\":"
           "false,\"sort_keys\":true,\"strict\":true}]}");
  put_text(dir, "obj/0", "[\"caf\\u00e9\",\"two\\nlines\",3,\"|O\",[3]]");
  put_text(dir, "bad/.zarray",
           "{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"|O\","
           "\"compressor\":null,\"fill_value\":null,\"order\":\"C\","
           "\"filters\":[{\"id\":\"json2\"}]}");
  put_text(dir, "bad/0", "[\"a\",\"|O\",[1]]");
  put_text(dir, "old/.zarray",
           "{\"zarr_format\":2,\"shape\":[3,2],\"chunks\":[2,2],\"dtype\":"
           "\"|O\",\"compressor\":null,\"fill_value\":null,\"order\":\"C\","
           "\"filters\":[{\"id\":\"json\",\"encoding\":\"utf-8\"}]}");
  put_text(dir, "old/0.0", "[[\"null\",null],[\"a\\nb\",[1,2]],\"|O\"]");
  put_text(dir, "old/1.0", "[\"a\",\"|O\"]");
  /* Order F: zarr-python 2 reshapes the decoded nesting (flattened in C
   * order) to the chunk in F order. */
  put_text(dir, "oldf/.zarray",
           "{\"zarr_format\":2,\"shape\":[2,3],\"chunks\":[2,3],\"dtype\":"
           "\"|O\",\"compressor\":null,\"fill_value\":null,\"order\":\"F\","
           "\"filters\":[{\"id\":\"json\"}]}");
  put_text(dir, "oldf/0.0", "[[\"a\",\"b\",\"c\"],[\"d\",\"e\",\"f\"],\"|O\"]");
  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/obj/values.txt", "caf\xc3\xa9\ntwo lines\n3\n\n\n");
  expect_view(e, "/obj/0.txt", "caf\xc3\xa9\ntwo lines\n3\n");
  expect_view_fails(e, "/bad/values.txt", "json2");
  expect_view(e, "/old/0.0.txt", "null\nnull\na b\n[1,2]\n");
  expect_view_fails(e, "/old/1.0.txt", "json: a list was expected");
  expect_view(e, "/oldf/values.txt", "a\nc\ne\nb\nd\nf\n");
  engine_free(e);
  remove_store(dir);
}
END_TEST
/* V3 string and binary arrays with the bytes codec, through the engine,
 * plus a chunk whose offsets lie. */
START_TEST(draft_store) {
  char dir[] = "/tmp/check_numcodecs.XXXXXX";
  new_store(dir);
  static const char *const s3[] = {"hello", "", "w\norld"};
  size_t len;
  uint8_t *c = draft_chunk(s3, 3, &len);
  ts_put_v3_1d(dir, "str", 4, 3, "\"string\"", "\"-\"", "[\"bytes\"]");
  ts_put_file(dir, "str/c/0", c, len);
  ts_put_v3_1d(dir, "bin", 3, 3, "\"binary\"", "[]", "[\"bytes\"]");
  ts_put_file(dir, "bin/c/0", c, len);
  ts_put_v3_1d(dir, "bad", 3, 3, "\"string\"", "\"\"", "[\"bytes\"]");
  c[12] = 0x7f; /* last offset past the data */
  ts_put_file(dir, "bad/c/0", c, len);
  free(c);
  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/str/values.txt", "hello\n\nw orld\n-\n");
  expect_view(e, "/bin/values.txt", "68656c6c6f\n\n770a6f726c64\n");
  expect_view_fails(e, "/bad/values.txt", "past the data");
  engine_free(e);
  remove_store(dir);
}
END_TEST

static Suite *numcodecs_stores_suite(void) {
  Suite *s = suite_create("numcodecs_stores");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, fso_stores);
  tcase_add_test(tc, msgpack_store);
  tcase_add_test(tc, json2_store);
  tcase_add_test(tc, draft_store);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(numcodecs_stores_suite());
}
