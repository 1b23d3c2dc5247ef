/* check_zfp_stores.c - stores built here with zfp and bitround, read
 * through the engine: the V2 mappings (filter `bitround`, compressor
 * `zfpy` in place of `bytes`, zfpy on a big-endian dtype refused) and
 * bitround's rounded fill in a shard's empty inner chunk. The codecs
 * themselves, through the chain: tests/unit/codecs/check_zfp.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/util/log.h"
#include "../teststore.h"
#include "../testutil.h"
#include "../testzfp.h"

/* Expect a view's text. */
static void expect_view(struct engine *e, const char *path, const char *want) {
  struct zerr err = {0};
  char *got = ts_view_text(e, path, 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", path, err.msg);
  ck_assert_msg(!strcmp(got, want), "%s: got\n%s\nwant\n%s", path, got, want);
  free(got);
}

#if ZFS_WITH_ZFP
/* V2 stores: filter id `bitround`, compressor `zfpy` (the array->bytes
 * codec in place of `bytes`), and zfpy on a big-endian dtype refused. */
START_TEST(v2_stores) {
  char dir[] = "/tmp/check_zfp.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  static const char zg[] = "{\"zarr_format\":2}";
  ts_put_file(dir, ".zgroup", zg, strlen(zg));
  static const char br[] =
      "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f4\","
      "\"compressor\":null,\"fill_value\":0,\"order\":\"C\","
      "\"filters\":[{\"id\":\"bitround\",\"keepbits\":10}]}";
  ts_put_file(dir, "br/.zarray", br, strlen(br));
  ts_put_file(dir, "br/0", "\x00\x00\xc0\x3f\x00\x00\x10\xc0\x00\x00\x80\x44",
              12);
  static const char zp[] =
      "{\"zarr_format\":2,\"shape\":[2,5],\"chunks\":[2,5],\"dtype\":\"<f8\","
      "\"compressor\":{\"id\":\"zfpy\",\"mode\":5,\"tolerance\":-1,"
      "\"rate\":-1,\"precision\":-1},\"fill_value\":0,\"order\":\"C\","
      "\"filters\":null}";
  ts_put_file(dir, "zp/.zarray", zp, strlen(zp));
  double v[10] = {0, 1, 2, 3, 4, 5, 6.5, 7, 8, -9};
  size_t n[4] = {5, 2, 0, 0};
  uint8_t *enc;
  size_t len = encode(v, zfp_type_double, 2, n, &tmodes[0], 1, &enc);
  ts_put_file(dir, "zp/0.0", enc, len);
  free(enc);
  char be[sizeof zp];
  memcpy(be, zp, sizeof zp);
  *strstr(be, "<f8") = '>';
  ts_put_file(dir, "be/.zarray", be, strlen(be));
  ts_put_file(dir, "be/0.0", "x", 1);
  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/br/values.txt", "1.5\n-2.25\n1024\n");
  expect_view(e, "/zp/values.txt", "0\n1\n2\n3\n4\n5\n6.5\n7\n8\n-9\n");
  expect_view(e, "/zp/0.0.txt", "0\n1\n2\n3\n4\n5\n6.5\n7\n8\n-9\n");
  struct zerr err = {0};
  char *got = ts_view_text(e, "/be/values.txt", 1 << 16, &err);
  ck_assert_ptr_null(got);
  ck_assert_msg(strstr(err.msg, "unsupported on a big-endian"), "%s", err.msg);
  engine_free(e);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST
#endif
/* Write a V3 array `name` of 4 elements in one shard of two inner chunks:
 * the first holds `inner0` (ilen bytes), the second is empty. */
static void put_bitround_shard(const char *dir, const char *name,
                               const char *dtype, const char *fill,
                               const void *inner0, size_t ilen) {
  char doc[2048], key[256];
  snprintf(doc, sizeof doc,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
           "\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[4]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":%s,\"codecs\":["
           "{\"name\":\"bitround\",\"configuration\":{\"keepbits\":%d}},"
           "{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":"
           "[2],\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
           "\"little\"}}],\"index_codecs\":[{\"name\":\"bytes\","
           "\"configuration\":{\"endian\":\"little\"}}],\"index_location\":"
           "\"end\"}}]}",
           dtype, fill, dtype[0] == 'f' ? 2 : 3);
  snprintf(key, sizeof key, "%s/zarr.json", name);
  ts_put_file(dir, key, doc, strlen(doc));
  uint8_t shard[8 + 32];
  memcpy(shard, inner0, ilen);
  uint64_t idx[4] = {0, ilen, UINT64_MAX, UINT64_MAX}; /* little-endian host */
  memcpy(shard + ilen, idx, sizeof idx);
  snprintf(key, sizeof key, "%s/c/0", name);
  ts_put_file(dir, key, shard, ilen + sizeof idx);
}

/* bitround rounds the fill value it hands on, as zarrs does: a shard's
 * empty inner chunk shows the rounded fill (float32 0.1 keeping 2 mantissa
 * bits is 0.09375; uint16 1000 keeping 3 bits from its top bit is 1024),
 * a missing chunk of the array the fill as written. */
START_TEST(bitround_shard_fill) {
  char dir[] = "/tmp/check_zfp.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  static const char zg[] = "{\"zarr_format\":3,\"node_type\":\"group\"}";
  ts_put_file(dir, "zarr.json", zg, strlen(zg));
  float f[2] = {1.5f, 2.5f};
  put_bitround_shard(dir, "f", "float32", "0.1", f, sizeof f);
  uint16_t u[2] = {7, 9};
  put_bitround_shard(dir, "u", "uint16", "1000", u, sizeof u);
  static const char miss[] =
      "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],"
      "\"data_type\":\"float32\",\"chunk_grid\":{\"name\":\"regular\","
      "\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":"
      "{\"name\":\"default\"},\"fill_value\":0.1,\"codecs\":[{\"name\":"
      "\"bitround\",\"configuration\":{\"keepbits\":2}},{\"name\":\"bytes\","
      "\"configuration\":{\"endian\":\"little\"}}]}";
  ts_put_file(dir, "m/zarr.json", miss, strlen(miss));
  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/f/values.txt", "1.5\n2.5\n0.09375\n0.09375\n");
  expect_view(e, "/u/values.txt", "7\n9\n1024\n1024\n");
  expect_view(e, "/m/values.txt", "0.1\n0.1\n");
  engine_free(e);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("zfp_stores");
  TCase *tc = tcase_create("zfp_stores");
  tcase_set_timeout(tc, 120);
#if ZFS_WITH_ZFP
  tcase_add_test(tc, v2_stores);
#else
  testutil_skip_without("check_zfp_stores", "zfp", "the zfpy V2 store test");
#endif
  tcase_add_test(tc, bitround_shard_fill);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
