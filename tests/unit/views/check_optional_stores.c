/* check_optional_stores.c - stores built here with `zarrs.optional` over
 * strings and bytes, read through the engine: null, [null], a present
 * string "null", newlines, hex, missing chunks, empty inner chunks of a
 * shard, each view whole and in 1- and 3-byte reads. The codec itself,
 * through the chain: tests/unit/codecs/check_optional.c; the text of its
 * elements: tests/unit/text/check_render.c. */
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

/* The view's text equals want, whole and in 1- and 3-byte reads. */
static void expect_view(struct engine *e, const char *path, const char *want) {
  static const size_t steps[] = {1 << 16, 1, 3};
  for (size_t k = 0; k < 3; k++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, path, steps[k], &err);
    ck_assert_msg(got != NULL, "%s: %s", path, err.msg);
    ck_assert_msg(!strcmp(got, want), "%s (step %zu):\n%s\nwant:\n%s", path,
                  steps[k], got, want);
    free(got);
  }
}
START_TEST(stores_through_engine) {
  char dir[] = "/tmp/check_optional.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ts_put_file(dir, "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}",
              37);
  char codecs[512], bcodecs[512];
  opt_codecs(codecs, sizeof codecs, "[\"vlen-utf8\"]");
  opt_codecs(bcodecs, sizeof bcodecs, "[\"vlen-bytes\"]");

  /* Optional strings: "ab", null, "null", "x\ny", "" in chunk 0; chunk 1
   * missing (fill null). */
  ts_put_v3_1d(dir, "s", 8, 5, OPT_STR, "null", codecs);
  static const char *const sv[] = {"ab", "null", "x\ny", ""};
  struct bb sd = vlen(4, sv);
  struct bb sc = opt_chunk("\x1d", 1, sd.p, sd.n);
  ts_put_file(dir, "s/c/0", sc.p, sc.n);
  /* The same with a present fill "null" (zarrs' [x] form) for the missing
   * chunk: escaped like a stored "null". */
  ts_put_v3_1d(dir, "sf", 7, 5, OPT_STR, "[\"null\"]", codecs);
  ts_put_file(dir, "sf/c/0", sc.p, sc.n);
  /* Present strings that read as missing or start with the escape, next
   * to a missing value and look-alikes that are left as they are. */
  ts_put_v3_1d(dir, "esc", 10, 10, OPT_STR, "null", codecs);
  static const char *const ev[] = {"\\x",   "[null]", "null",
                                   "nul",   "\\null", "[[null]]",
                                   "[null", "null]",  ""};
  struct bb ed = vlen(9, ev);
  struct bb ec = opt_chunk("\xf7\x03", 2, ed.p, ed.n);
  ts_put_file(dir, "esc/c/0", ec.p, ec.n);
  /* Optional bytes: hex, null. */
  ts_put_v3_1d(dir, "b", 3, 3, OPT_BYTES, "null", bcodecs);
  static const char *const bv[] = {"\x01\xab", ""};
  struct bb bd = vlen(2, bv);
  struct bb bc = opt_chunk("\x05", 1, bd.p, bd.n);
  ts_put_file(dir, "b/c/0", bc.p, bc.n);
  /* optional(optional(string)), fill Some(None): the missing chunk shows
   * [null]. */
  char inner[256], ncodecs[512];
  opt_codecs(inner, sizeof inner, "[\"vlen-utf8\"]");
  opt_codecs(ncodecs, sizeof ncodecs, inner);
  ts_put_v3_1d(dir, "n", 6, 3, OPT_OPT_STR, "[null]", ncodecs);
  static const char *const nv[] = {"null"};
  struct bb nd = vlen(1, nv);
  struct bb nic = opt_chunk("\x02", 1, nd.p, nd.n);
  struct bb noc = opt_chunk("\x06", 1, nic.p, nic.n);
  ts_put_file(dir, "n/c/0", noc.p, noc.n);
  /* Sharded: one shard of two inner chunks of 2; the second is empty. */
  char sh[1024];
  snprintf(sh, sizeof sh,
           "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":"
           "[2],\"codecs\":%s,\"index_codecs\":[{\"name\":\"bytes\","
           "\"configuration\":{\"endian\":\"little\"}}],\"index_location\":"
           "\"end\"}}]",
           codecs);
  ts_put_v3_1d(dir, "sh", 4, 4, OPT_STR, "null", sh);
  static const char *const shv[] = {"q"};
  struct bb shd = vlen(1, shv);
  struct bb shc = opt_chunk("\x02", 1, shd.p, shd.n);
  struct bb shard = shc;
  bb_le(&shard, 0, 8);
  bb_le(&shard, shc.n, 8);
  bb_le(&shard, UINT64_MAX, 8);
  bb_le(&shard, UINT64_MAX, 8);
  ts_put_file(dir, "sh/c/0", shard.p, shard.n);
  /* A string codec straight on an optional type, and a corrupt chunk. */
  ts_put_v3_1d(dir, "wrong", 2, 2, OPT_STR, "null", "[\"vlen-utf8\"]");
  ts_put_file(dir, "wrong/c/0", sd.p, sd.n);
  ts_put_v3_1d(dir, "corrupt", 3, 3, OPT_STR, "null", codecs);
  struct bb cc = opt_chunk("\x07", 1, sd.p, sd.n);
  ts_put_file(dir, "corrupt/c/0", cc.p, cc.n);

  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/s/values.txt",
              "ab\nnull\n\\null\nx y\n\nnull\nnull\nnull\n");
  expect_view(e, "/s/c/0.txt", "ab\nnull\n\\null\nx y\n\n");
  expect_view(e, "/sf/values.txt", "ab\nnull\n\\null\nx y\n\n\\null\n\\null\n");
  expect_view(e, "/esc/values.txt",
              "\\\\x\n\\[null]\n\\null\nnull\nnul\n\\\\null\n\\[[null]]\n"
              "[null\nnull]\n\n");
  expect_view(e, "/b/values.txt", "01ab\nnull\n\n");
  expect_view(e, "/n/values.txt",
              "null\n[null]\n\\null\n[null]\n[null]\n[null]\n");
  expect_view(e, "/sh/values.txt", "null\nq\nnull\nnull\n");
  static const char *const broken[] = {"/wrong/values.txt",
                                       "/corrupt/values.txt"};
  static const char *const says[] = {"not variable-length",
                                     "header says 4 elements, chunk has 3"};
  for (int i = 0; i < 2; i++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, broken[i], 1 << 16, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, says[i]), "%s: %s", broken[i], err.msg);
  }
  engine_free(e);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *optional_stores_suite(void) {
  Suite *s = suite_create("optional_stores");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, stores_through_engine);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(optional_stores_suite());
}
