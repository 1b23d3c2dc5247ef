/* check_bigraw.c - chunks of fixed-size elements stored as decoded (a
 * `bytes`-only chain) larger than the decode limit, read by ranges in
 * windows, driven without a mount: a 1-D float64 chunk of 3.2 MB under a
 * 1 MiB max_decode and cache reads exactly in order and at random
 * offsets, never decoded whole (no unit fill, nothing left pinned); a
 * big-endian int32 2-D array of two chunks over the limit, the second an
 * edge chunk with a third of its rows in bounds, reads exactly; a big chunk not stored
 * reads as the fill value; a chunk cut short fails with EIO naming it; a
 * chain with a bytes->bytes stage is not read this way (it is refused by
 * the decode limit, as before). */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../../../src/util/log.h"
#include "../teststore.h"
#include "viewread.h"
#include "../testutil.h"

static char tmpdir[64];

/* Elements of the 1-D chunk (3.2 MB of float64). */
#define BN 400000

/* Fresh temp store directory. */
static void setup(void) {
  ts_new_v3_group(tmpdir, sizeof tmpdir, "bigraw");
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* An engine over tmpdir with a 1 MiB cache and a 1 MiB decode limit. */
static struct engine *open_engine(void) {
  struct engine_config cfg = {.cache_size = 1u << 20,
                             .max_decoded = 1u << 20,
                             .size_table_max = 1000};
  return ts_engine(tmpdir, &cfg);
}

/* Array `name`'s zarr.json. */
static void put_meta(const char *name, const char *shape, const char *chunk,
                     const char *dtype, const char *codecs) {
  char buf[1024], rel[64];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%s],"
           "\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%s]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":7,\"codecs\":%s}",
           shape, dtype, chunk, codecs);
  snprintf(rel, sizeof rel, "%s/zarr.json", name);
  ts_put_file(tmpdir, rel, buf, strlen(buf));
}

static const char *const LE = "[{\"name\":\"bytes\",\"configuration\":"
                              "{\"endian\":\"little\"}}]";

/* Chunk 0 of a 1-D float64 array `name` of `shape` elements, chunks of
 * BN: element i is i + 0.5, little-endian; `cut` bytes short. Returns the
 * text of its BN elements (caller frees) and its length. */
static char *put_f64(const char *name, size_t cut, size_t *tlen) {
  uint8_t *chunk = malloc((size_t)BN * 8);
  char *text = malloc((size_t)BN * 16);
  ck_assert(chunk && text);
  size_t tl = 0;
  for (size_t i = 0; i < BN; i++) {
    double v = (double)i + 0.5;
    memcpy(chunk + 8 * i, &v, 8); /* the test hosts are little-endian */
    tl += (size_t)sprintf(text + tl, "%zu.5\n", i);
  }
  char rel[64];
  snprintf(rel, sizeof rel, "%s/c/0", name);
  ts_put_file(tmpdir, rel, chunk, (size_t)BN * 8 - cut);
  free(chunk);
  *tlen = tl;
  return text;
}

START_TEST(f64_over_the_limit_read_in_windows) {
  char shape[32];
  snprintf(shape, sizeof shape, "%d", BN);
  put_meta("f", shape, shape, "float64", LE);
  size_t wlen;
  char *want = put_f64("f", 0, &wlen);
  struct engine *e = open_engine();
  vr_read_seq(e, "/f/values.txt", 131072, want, wlen);
  vr_read_seq(e, "/f/c/0.txt", 4093, want, wlen);
  vr_read_random(e, "/f/values.txt", want, wlen, 100000);
  /* element bytes read where they lie: never a unit decoded whole */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(big_chunk_not_stored_reads_fill) {
  char shape[32], chunk[32];
  snprintf(shape, sizeof shape, "%d", 2 * BN);
  snprintf(chunk, sizeof chunk, "%d", BN);
  put_meta("m", shape, chunk, "float64", LE);
  size_t wlen;
  char *want = put_f64("m", 0, &wlen); /* chunk 1 is not stored */
  want = realloc(want, wlen + (size_t)BN * 2);
  ck_assert(want);
  for (size_t i = 0; i < BN; i++)
    memcpy(want + wlen + 2 * i, "7\n", 2);
  wlen += (size_t)BN * 2;
  struct engine *e = open_engine();
  vr_read_seq(e, "/m/values.txt", 131072, want, wlen);
  vr_read_random(e, "/m/values.txt", want, wlen, 100000);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(int32_big_endian_2d_with_edge) {
  /* 400 x 2000 int32, chunks of 300 rows: chunk 0 (2.4 MB) in windows,
   * chunk 1 too (stored whole, 100 rows in bounds). */
  put_meta("b", "400,2000", "300,2000", "int32",
           "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]");
  size_t ce = 300 * 2000;
  uint8_t *chunk = malloc(ce * 4);
  char *want = malloc((size_t)800000 * 12);
  ck_assert(chunk && want);
  size_t tl = 0;
  for (int c = 0; c < 2; c++) {
    for (size_t i = 0; i < ce; i++) {
      int32_t v = (int32_t)((c * ce + i) * 7919u % 2000001u) - 1000000;
      uint32_t u = (uint32_t)v;
      for (int b = 0; b < 4; b++)
        chunk[4 * i + (size_t)b] = (uint8_t)(u >> (24 - 8 * b));
      if (c == 0 || i < 100 * 2000)
        tl += (size_t)sprintf(want + tl, "%d\n", (int)v);
    }
    ts_put_file(tmpdir, c ? "b/c/1/0" : "b/c/0/0", chunk, ce * 4);
  }
  free(chunk);
  struct engine *e = open_engine();
  vr_read_seq(e, "/b/values.txt", 131072, want, tl);
  vr_read_random(e, "/b/values.txt", want, tl, 100000);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(cut_short_fails_naming_the_chunk) {
  char shape[32];
  snprintf(shape, sizeof shape, "%d", BN);
  put_meta("s", shape, shape, "float64", LE);
  size_t wlen;
  free(put_f64("s", 8, &wlen));
  struct engine *e = open_engine();
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/s/values.txt", &ent, &err), 0);
  char buf[4096];
  long n = ns_read_view(e, &ent, 0, sizeof buf, buf, NULL, &err);
  ck_assert_int_eq(n, -EIO);
  ck_assert_msg(strstr(err.msg, "s/c/0") != NULL, "%s", err.msg);
  engine_free(e);
}
END_TEST

START_TEST(bytes_to_bytes_stage_keeps_the_limit) {
  /* crc32c after bytes: the chunk is not read by ranges, and is over the
   * decode limit */
  char shape[32];
  snprintf(shape, sizeof shape, "%d", BN);
  put_meta("g", shape, shape, "float64",
           "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
           "{\"name\":\"crc32c\"}]");
  size_t wlen;
  free(put_f64("g", 0, &wlen)); /* no checksum: a decode would fail too */
  struct engine *e = open_engine();
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/g/values.txt", &ent, &err), 0);
  char buf[4096];
  long n = ns_read_view(e, &ent, 0, sizeof buf, buf, NULL, &err);
  ck_assert_int_lt(n, 0);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_DATA), 0);
  engine_free(e);
}
END_TEST

/* The suite. */
static Suite *bigraw_suite(void) {
  Suite *s = suite_create("bigraw");
  TCase *tc = tcase_create("bigraw");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, f64_over_the_limit_read_in_windows);
  tcase_add_test(tc, big_chunk_not_stored_reads_fill);
  tcase_add_test(tc, int32_big_endian_2d_with_edge);
  tcase_add_test(tc, cut_short_fails_naming_the_chunk);
  tcase_add_test(tc, bytes_to_bytes_stage_keeps_the_limit);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  zlog_setup(0, ZLOG_ERR);
  SRunner *sr = srunner_create(bigraw_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
