/* check_packbits_stores.c - stores built here with `packbits` (V3 and a V2
 * numcodecs.packbits filter), the new data types with the bytes codec, and
 * the zarrs snapshot stores that use packbits or zarrs.optional (compared
 * with the values of zarrs/EXPECTED.md sections 1 and 3), read through the
 * engine: metadata -> chain -> view text. The codecs themselves, through
 * the chain: tests/unit/codecs/check_packbits.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/util/log.h"
#include "../teststore.h"
#include "../testutil.h"

/* ---- stores read through the engine ---- */

START_TEST(stores_through_engine) {
  char dir[] = "/tmp/check_packbits.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ts_put_file(dir, "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}",
              37);
  /* int4 packed, first_byte padding; chunk 1 missing (fill -3). */
  ts_put_v3_1d(dir, "i4", 6, 3, "\"int4\"", "-3",
            "[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
            "\"first_byte\"}}]");
  ts_put_file(dir, "i4/c/0", "\x04\x78\x0f", 3);
  /* uint2 with the bytes codec: one byte per element (as zarrs stores). */
  ts_put_v3_1d(dir, "u2", 3, 3, "\"uint2\"", "0", "[\"bytes\"]");
  ts_put_file(dir, "u2/c/0", "\x03\x00\x02", 3);
  /* complex64, complex128, bfloat16, timedelta64 with bytes. */
  ts_put_v3_1d(dir, "c8", 3, 3, "\"complex64\"", "[\"NaN\",\"-Infinity\"]",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]");
  ts_put_file(dir, "c8/c/0",
              "\x3f\x80\x00\x00\x40\x00\x00\x00"
              "\x3f\x00\x00\x00\xbf\xc0\x00\x00"
              "\x80\x00\x00\x00\x80\x00\x00\x00",
              24);
  ts_put_v3_1d(dir, "c16", 2, 1, "\"complex128\"", "[0.25,\"0x7ff0000000000000\"]",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]");
  ts_put_file(dir, "c16/c/0", "\0\0\0\0\0\0\xf8\x3f\0\0\0\0\0\0\0\0",
              16); /* 1.5 + 0j */
  ts_put_v3_1d(dir, "bf", 2, 2, "\"bfloat16\"", "\"0x7fc0\"",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]");
  ts_put_file(dir, "bf/c/0", "\xcd\x3d\x80\xbf", 4); /* 0.1, -1 */
  ts_put_v3_1d(dir, "td", 4, 4,
            "{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":"
            "\"ms\",\"scale_factor\":1}}",
            "\"NaT\"",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]");
  int64_t td[4] = {93784007, -1500, 0, INT64_MIN};
  ts_put_file(dir, "td/c/0", td, sizeof td);
  /* raw bytes (r24, raw_bytes) and null_terminated_bytes: hex. */
  ts_put_v3_1d(dir, "r24", 3, 2, "\"r24\"", "[1,2,255]", "[\"bytes\"]");
  ts_put_file(dir, "r24/c/0", "\0\0\0\xab\x00\xcd", 6);
  ts_put_v3_1d(dir, "rb", 2, 2,
            "{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":2}}",
            "\"AAE=\"", "[\"bytes\"]");
  ts_put_file(dir, "rb/c/0", "\x10\x00\x00\x00", 4);
  ts_put_v3_1d(dir, "nt", 3, 3,
            "{\"name\":\"null_terminated_bytes\",\"configuration\":"
            "{\"length_bytes\":3}}",
            "\"YQ==\"", "[\"bytes\"]");
  ts_put_file(dir, "nt/c/0", "ab\0\0\0\0a\0b", 9);
  /* V2: bool with the numcodecs packbits filter, zlib-free; and <c8. */
  const char v2[] = "{\"zarr_format\":2,\"shape\":[10],\"chunks\":[10],"
                    "\"dtype\":\"|b1\",\"fill_value\":false,\"order\":\"C\","
                    "\"filters\":[{\"id\":\"packbits\"}],\"compressor\":null}";
  ts_put_file(dir, "v2b/.zarray", v2, strlen(v2));
  ts_put_file(dir, "v2b/0", "\x06\x81\xc0", 3); /* 1000 0001 11 */
  const char v2c[] = "{\"zarr_format\":2,\"shape\":[1],\"chunks\":[1],"
                     "\"dtype\":\">c8\",\"fill_value\":[\"NaN\",0],"
                     "\"order\":\"C\",\"filters\":null,\"compressor\":null}";
  ts_put_file(dir, "v2c/.zarray", v2c, strlen(v2c));
  ts_put_file(dir, "v2c/0", "\xbf\x80\x00\x00\x00\x00\x00\x00", 8);
  const char v2m[] = "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],"
                     "\"dtype\":\"<m8[s]\",\"fill_value\":null,"
                     "\"order\":\"C\",\"filters\":null,\"compressor\":null}";
  ts_put_file(dir, "v2m/.zarray", v2m, strlen(v2m));
  int64_t m8[3] = {90061, 59, -86400};
  ts_put_file(dir, "v2m/0", m8, sizeof m8);
  const char v2v[] = "{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],"
                     "\"dtype\":\"|V3\",\"fill_value\":\"AAAA\","
                     "\"order\":\"C\",\"filters\":null,\"compressor\":null}";
  ts_put_file(dir, "v2v/.zarray", v2v, strlen(v2v));
  ts_put_file(dir, "v2v/0", "\x00\x01\x02\xfd\xfe\xff", 6);

  static const struct {
    const char *path, *want;
  } t[] = {
      {"/i4/values.txt", "-8\n7\n-1\n-3\n-3\n-3\n"},
      {"/i4/c/0.txt", "-8\n7\n-1\n"},
      {"/u2/values.txt", "3\n0\n2\n"},
      {"/c8/values.txt", "1+2j\n0.5-1.5j\n-0-0j\n"},
      {"/c16/values.txt", "1.5+0j\n0.25+infj\n"},
      {"/bf/values.txt", "0.1\n-1\n"},
      {"/td/values.txt", "P1DT2H3M4.007S\n-PT1.5S\nPT0S\nNaT\n"},
      {"/r24/values.txt", "000000\nab00cd\n0102ff\n"},
      {"/rb/values.txt", "1000\n0000\n"},
      {"/nt/values.txt", "6162\n\n610062\n"},
      {"/v2b/values.txt", "true\nfalse\nfalse\nfalse\nfalse\nfalse\nfalse\n"
                          "true\ntrue\ntrue\n"},
      {"/v2c/values.txt", "-1+0j\n"},
      {"/v2m/values.txt", "P1DT1H1M1S\nPT59S\n-P1D\n"},
      {"/v2v/values.txt", "000102\nfdfeff\n"},
  };
  struct engine *e = ts_open_engine(dir);
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, t[i].path, 1 << 16, &err);
    ck_assert_msg(got != NULL, "%s: %s", t[i].path, err.msg);
    ck_assert_msg(!strcmp(got, t[i].want), "%s: got '%s', want '%s'", t[i].path,
                  got, t[i].want);
    free(got);
  }
  engine_free(e);
  /* A corrupt packed chunk is an EIO for that view, not wrong values. */
  ts_put_file(dir, "i4/c/1", "\x09\x00\x00", 3);
  e = ts_open_engine(dir);
  struct zerr err = {0};
  char *got = ts_view_text(e, "/i4/c/1.txt", 1 << 16, &err);
  ck_assert_ptr_null(got);
  ck_assert_int_eq(err.code, EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "padding byte says 9"));
  engine_free(e);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST
/* ---- the zarrs snapshots (EXPECTED.md section 1) ---- */

/* Expected text of the 8x24 snapshot array of dtype dir dt. */
static char *snapshot_text(const char *dt) {
  char *out = malloc(192 * 16), *p = out;
  for (int i = 0; i < 192; i++) {
    if (!strcmp(dt, "bool"))
      p += sprintf(p, "%s\n", i % 2 ? "true" : "false");
    else if (!strcmp(dt, "uint8"))
      p += sprintf(p, "%d\n", i % 256);
    else if (!strcmp(dt, "float32") || !strcmp(dt, "float64"))
      p += sprintf(p, "%g\n", i * 0.5);
    else /* uint16, int32 */
      p += sprintf(p, "%d\n", i);
  }
  return out;
}
START_TEST(zarrs_snapshots) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  static const char *const dts[] = {"bool",  "uint8",   "uint16",
                                    "int32", "float32", "float64"};
  int stores = 0;
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
    char base[4200];
    snprintf(base, sizeof base,
             "%s/zarrs/snapshots/supported/regular/%s/a2b/packbits", fx,
             dts[d]);
    DIR *dir = opendir(base);
    ck_assert_msg(dir != NULL, "%s missing", base);
    char *want = snapshot_text(dts[d]);
    struct dirent *de;
    while ((de = readdir(dir))) {
      if (de->d_name[0] == '.')
        continue;
      char sp[4500];
      snprintf(sp, sizeof sp, "%s/%s", base, de->d_name);
      struct engine *e = ts_open_engine(sp);
      struct zerr err = {0};
      char *got = ts_view_text(e, "/values.txt", 1 << 16, &err);
      ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
      ck_assert_msg(!strcmp(got, want), "%s: values differ", sp);
      free(got);
      got = ts_view_text(e, "/c/1/3.txt", 1 << 16,
                         &err); /* rows 4..7, cols 18..23 */
      ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
      char *line = got;
      for (int r = 4; r < 8; r++)
        for (int c = 18; c < 24; c++) {
          char *nl = strchr(line, '\n');
          ck_assert_ptr_nonnull(nl);
          const char *w = want;
          for (int k = 0; k < r * 24 + c; k++)
            w = strchr(w, '\n') + 1;
          ck_assert_msg(!strncmp(line, w, (size_t)(nl - line + 1)),
                        "%s: c/1/3 element (%d,%d)", sp, r, c);
          line = nl + 1;
        }
      ck_assert_str_eq(line, "");
      free(got);
      engine_free(e);
      stores++;
    }
    closedir(dir);
    free(want);
  }
  printf("check_packbits: %d zarrs packbits snapshot stores match\n", stores);
  ck_assert_int_ge(stores, 8);
}
END_TEST
START_TEST(zarrs_optional_stores) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  /* EXPECTED.md section 1: null when i % 4 == 3, else i % 256. */
  char *want = malloc(192 * 8), *p = want;
  for (int i = 0; i < 192; i++)
    p += i % 4 == 3 ? sprintf(p, "null\n") : sprintf(p, "%d\n", i % 256);
  static const char *const sets[] = {"a2b", "a2a", "b2b"};
  int stores = 0, refused = 0, without = 0;
  for (size_t k = 0; k < 3; k++) {
    char base[4200];
    snprintf(base, sizeof base,
             "%s/zarrs/snapshots/supported/regular/zarrs.optional(uint8)/%s",
             fx, sets[k]);
    DIR *codecs = opendir(base);
    ck_assert_msg(codecs != NULL, "%s missing", base);
    struct dirent *cd;
    while ((cd = readdir(codecs))) {
      if (cd->d_name[0] == '.')
        continue;
      char cdir[4500];
      snprintf(cdir, sizeof cdir, "%s/%s", base, cd->d_name);
      DIR *ids = opendir(cdir);
      ck_assert_ptr_nonnull(ids);
      struct dirent *id;
      while ((id = readdir(ids))) {
        if (id->d_name[0] == '.')
          continue;
        char sp[4800];
        snprintf(sp, sizeof sp, "%s/%s", cdir, id->d_name);
        struct engine *e = ts_open_engine(sp);
        struct zerr err = {0};
        char *got = ts_view_text(e, "/values.txt", 1 << 16, &err);
        if (!got && testutil_is_without(err.msg)) { /* main said so */
          without++;
          engine_free(e);
          continue;
        }
        if (strstr(cd->d_name, "gdeflate")) { /* not supported: refused */
          ck_assert_ptr_null(got);
          ck_assert_ptr_nonnull(strstr(err.msg, "unsupported codec"));
          refused++;
        } else {
          ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
          ck_assert_msg(!strcmp(got, want), "%s: values differ", sp);
          stores++;
        }
        free(got);
        engine_free(e);
      }
      closedir(ids);
    }
    closedir(codecs);
  }
  free(want);
  printf("check_packbits: %d zarrs.optional(uint8) stores match, %d refused\n",
         stores, refused);
  ck_assert_int_ge(stores + without, 11);
  ck_assert_int_eq(refused, 1);

  /* tests_data: the legacy `optional` name, a missing chunk (fill null);
   * the nested optional (Some(None) shown as [null]) and an optional
   * string store (check_optional.c and check_conformance_zarrs.c test
   * them in full). */
  char sp[4200];
  snprintf(sp, sizeof sp, "%s/zarrs/tests_data/v3/array_optional.zarr", fx);
  struct engine *e = ts_open_engine(sp);
  struct zerr err = {0};
  char *got = ts_view_text(e, "/array/values.txt", 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
  ck_assert_str_eq(got, "0\nnull\n2\n3\nnull\n5\nnull\n7\n8\n9\nnull\nnull\n"
                        "12\nnull\nnull\nnull\n");
  free(got);
  engine_free(e);
  snprintf(sp, sizeof sp, "%s/zarrs/tests_data/v3/array_optional_nested.zarr",
           fx);
  e = ts_open_engine(sp);
  got = ts_view_text(e, "/array/values.txt", 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
  ck_assert_str_eq(got, "null\n[null]\n2\n3\nnull\n5\nnull\n7\n[null]\n"
                        "[null]\nnull\nnull\n[null]\n[null]\nnull\nnull\n");
  free(got);
  engine_free(e);
  snprintf(sp, sizeof sp,
           "%s/zarrs/snapshots/supported/regular/zarrs.optional(string)/a2b/"
           "zarrs.optional/a7bd47f9d1021087",
           fx);
  e = ts_open_engine(sp);
  got = ts_view_text(e, "/values.txt", 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
  ck_assert_int_eq(strncmp(got, "str_0000\nstr_0001\nstr_0002\nnull\n", 32), 0);
  free(got);
  engine_free(e);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("packbits_stores");
  TCase *tc = tcase_create("packbits_stores");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, stores_through_engine);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 120);
  tcase_add_test(fx, zarrs_snapshots);
  tcase_add_test(fx, zarrs_optional_stores);
  testutil_add_fixture_tcase(s, fx, "check_packbits_stores");
  if (*ZFS_WITHOUT && testutil_fixtures())
    testutil_skip_without("check_packbits_stores", ZFS_WITHOUT,
                          "the fixture stores that need it");
  return testutil_run(s);
}
