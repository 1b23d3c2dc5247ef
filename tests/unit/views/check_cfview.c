/* check_cfview.c - the CF views (values.cf.txt, K.cf.txt) driven through
 * the engine without a mount, over V2 arrays as xarray writes them (.zattrs
 * beside .zarray): a packed int16 with _FillValue and a missing chunk, a
 * time array in hours since a date, an int8 bool flag array. Each view is
 * read in pieces of 1 byte to 1 MiB and compared with its whole text;
 * values.txt stays as stored; an array xarray wrote (_ARRAY_DIMENSIONS) is
 * masked by its fill_value, and other arrays whose attributes carry no CF
 * encoding (a fill_value alone is not one) have no CF views. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../teststore.h"
#include "../testutil.h"

static char tmpdir[64];

/* Write a file under tmpdir, creating parent directories. */
static void put_file(const char *rel, const void *data, size_t len) {
  ts_put_file(tmpdir, rel, data, len);
}

/* Write text. */
static void put_text(const char *rel, const char *text) {
  put_file(rel, text, strlen(text));
}

/* A V2 array of any shape, without compressor: .zarray and .zattrs. */
static void put_nd(const char *name, const char *shape, const char *chunks,
                   const char *dtype, const char *fill, const char *attrs) {
  char buf[1024], rel[128];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":2,\"shape\":%s,\"chunks\":%s,\"dtype\":\"%s\","
           "\"fill_value\":%s,\"order\":\"C\",\"compressor\":null,"
           "\"filters\":null}",
           shape, chunks, dtype, fill);
  snprintf(rel, sizeof rel, "%s/.zarray", name);
  put_text(rel, buf);
  snprintf(rel, sizeof rel, "%s/.zattrs", name);
  put_text(rel, attrs);
}

/* A V2 1-D array without compressor: .zarray and .zattrs. */
static void put_v2(const char *name, int n, int chunk, const char *dtype,
                   const char *fill, const char *attrs) {
  char shape[32], chunks[32];
  snprintf(shape, sizeof shape, "[%d]", n);
  snprintf(chunks, sizeof chunks, "[%d]", chunk);
  put_nd(name, shape, chunks, dtype, fill, attrs);
}

/* Group nc as kerchunk shows a netCDF file: a noleap time and its bounds
 * (no units of their own), days whose bounds have a calendar of their
 * own, a character array (S1 along a dimension no variable is named
 * after; its second chunk missing), another split across chunks, one
 * along time (a variable: not joined), a masked bool, complex and S5. */
static void put_nc(void) {
  put_text("nc/.zgroup", "{\"zarr_format\":2}");
  put_nd("nc/time", "[3]", "[3]", "<f8", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"time\"],\"units\":\"hours since "
         "2020-01-01\",\"calendar\":\"noleap\",\"bounds\":\"time_bnds\"}");
  double tm[3] = {0, 6, 12}, tb[8] = {-3, 3, 3, 9, 9, 15, 0, 0};
  put_file("nc/time/0", tm, sizeof tm);
  put_nd("nc/time_bnds", "[3,2]", "[2,2]", "<f8", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"time\",\"nv\"]}");
  put_file("nc/time_bnds/0.0", tb, 4 * sizeof *tb);
  put_file("nc/time_bnds/1.0", tb + 4, 4 * sizeof *tb);
  put_nd("nc/day", "[2]", "[2]", "<i4", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"day\"],\"units\":\"days since "
         "1999-12-31 12:00\",\"bounds\":\"day_bnds\"}");
  int32_t dy[2] = {0, 1}, db[4] = {0, 1, 1, 2};
  put_file("nc/day/0", dy, sizeof dy);
  put_nd("nc/day_bnds", "[2,2]", "[2,2]", "<i4", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"day\",\"nv\"],\"calendar\":\"julian\"}");
  put_file("nc/day_bnds/0.0", db, sizeof db);
  put_nd("nc/name", "[3,5]", "[2,5]", "|S1", "\" \"",
         "{\"_ARRAY_DIMENSIONS\":[\"station\",\"strlen\"],"
         "\"_Encoding\":\"utf-8\"}");
  put_file("nc/name/0.0", "Oslo\0Bergn", 10);
  put_nd("nc/split", "[2,4]", "[2,2]", "|S1", "\" \"",
         "{\"_ARRAY_DIMENSIONS\":[\"row\",\"len4\"]}");
  put_file("nc/split/0.0", "abef", 4);
  put_file("nc/split/0.1", "cdgh", 4);
  put_nd("nc/flag", "[3]", "[3]", "|S1", "\" \"",
         "{\"_ARRAY_DIMENSIONS\":[\"time\"]}");
  put_file("nc/flag/0", "a\0c", 3);
  put_nd("nc/b", "[3]", "[3]", "|b1", "false",
         "{\"_ARRAY_DIMENSIONS\":[\"k\"]}");
  put_file("nc/b/0", "\1\0\1", 3);
  put_nd("nc/z", "[2]", "[2]", "<c8", "[0.0,0.0]",
         "{\"_ARRAY_DIMENSIONS\":[\"k2\"]}");
  float z[4] = {1, 2, 0, 0};
  put_file("nc/z/0", z, sizeof z);
  put_nd("nc/s5", "[2]", "[2]", "|S5", "\"eA==\"",
         "{\"_ARRAY_DIMENSIONS\":[\"k2\"]}");
  put_file("nc/s5/0", "abc\0\0x\0\0\0\0", 10);
}

/* A V3 1-D int16 array of 3 elements in one chunk (uncompressed), with
 * fill_value 0, dimension_names and attributes, and its chunk. */
static void put_v3_i16(const char *name, const char *attrs, const int16_t *v) {
  char doc[1024], rel[128];
  snprintf(doc, sizeof doc,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[3],"
           "\"data_type\":\"int16\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[3]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[{\"name\":"
           "\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
           "\"dimension_names\":[\"x\"],\"attributes\":%s}",
           attrs);
  snprintf(rel, sizeof rel, "%s/zarr.json", name);
  put_text(rel, doc);
  snprintf(rel, sizeof rel, "%s/c/0", name);
  put_file(rel, v, 3 * sizeof *v);
}

/* The store: t (packed temperature, chunk 2 missing), time, flag, plain. */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-cfview-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_text(".zgroup", "{\"zarr_format\":2}");
  put_v2("t", 10, 4, "<i2", "-32768",
         "{\"_ARRAY_DIMENSIONS\":[\"x\"],\"scale_factor\":0.01,"
         "\"add_offset\":20.0,\"_FillValue\":-32768,\"units\":\"degC\"}");
  int16_t t0[4] = {0, 100, -32768, 5}, t1[4] = {1862, -2000, 3, 32767};
  put_file("t/0", t0, sizeof t0);
  put_file("t/1", t1, sizeof t1);
  put_v2("time", 5, 5, "<i8", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"time\"],\"units\":"
         "\"hours since 2021-03-01\",\"calendar\":\"proleptic_gregorian\"}");
  int64_t tm[5] = {0, 6, 12, 30, 8784};
  put_file("time/0", tm, sizeof tm);
  put_v2("flag", 4, 4, "|i1", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"x\"],\"dtype\":\"bool\"}");
  int8_t fl[4] = {1, 0, 0, 2};
  put_file("flag/0", fl, sizeof fl);
  put_v2("plain", 3, 3, "<i4", "0", "{\"units\":\"m\"}");
  put_v2("count", 3, 3, "<i2", "-1", "{\"_ARRAY_DIMENSIONS\":[\"x\"]}");
  int16_t co[3] = {7, -1, 300};
  put_file("count/0", co, sizeof co);
  int32_t pl[3] = {1, 2, 3};
  put_file("plain/0", pl, sizeof pl);
  put_nc();
  put_text("v3/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":{}}");
  const int16_t pk[3] = {0, 2, 4};
  put_v3_i16("v3/packed", "{\"scale_factor\":0.5,\"add_offset\":1.0}", pk);
  put_v3_i16("v3/filled", "{\"scale_factor\":0.5,\"_FillValue\":4}", pk);
}

/* Remove the temp store. */
static void teardown(void) { testutil_rmtree(tmpdir); }

/* Engine over tmpdir. */
static struct engine *open_engine(void) {
  struct engine_config cfg = {64u << 20, 1u << 30, 1000};
  return ts_engine(tmpdir, &cfg);
}

/* Read a whole view in pieces of `step` bytes; its size must be exact. */
static char *read_all(struct engine *e, const char *path, size_t step) {
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == 0, "%s: %s", path, err.msg);
  ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s: %s", path, err.msg);
  char *buf = malloc(size + 1);
  uint64_t off = 0;
  while (off < size) {
    size_t want = step < size - off ? step : (size_t)(size - off);
    long n = ns_read_view(e, &ent, off, want, buf + off, NULL, &err);
    ck_assert_msg(n > 0, "%s at %llu: %s", path, (unsigned long long)off,
                  err.msg);
    off += (uint64_t)n;
  }
  char extra[8];
  ck_assert_int_eq(ns_read_view(e, &ent, size, sizeof extra, extra, NULL, &err),
                   0);
  buf[size] = '\0';
  return buf;
}

/* Every piece size gives the whole text, with a fresh engine each (no
 * memo shared) and with one engine throughout. */
static void check_view(const char *path, const char *want) {
  static const size_t steps[] = {1, 2, 3, 7, 64, 4096, 1u << 20};
  struct engine *shared = open_engine();
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    struct engine *e = open_engine();
    char *got = read_all(e, path, steps[i]);
    ck_assert_msg(!strcmp(got, want), "%s step %zu:\n%s\nwant:\n%s", path,
                  steps[i], got, want);
    free(got);
    engine_free(e);
    got = read_all(shared, path, steps[i]);
    ck_assert_str_eq(got, want);
    free(got);
  }
  engine_free(shared);
}

START_TEST(packed_with_fill_and_missing_chunk) {
  /* Masked first, int16 becomes float32 and is unpacked in float32, as
   * xarray does: 347.67 is the float32 347.66998. */
  check_view("t/values.cf.txt", "20\n21\nnan\n20.05\n"
                                "38.62\n0\n20.03\n347.66998\n"
                                "nan\nnan\n");
  check_view("t/0.cf.txt", "20\n21\nnan\n20.05\n");
  check_view("t/1.cf.txt", "38.62\n0\n20.03\n347.66998\n");
  check_view("t/values.txt", "0\n100\n-32768\n5\n1862\n-2000\n3\n32767\n"
                             "-32768\n-32768\n");
}
END_TEST

START_TEST(times_in_hours_since) {
  check_view("time/values.cf.txt",
             "2021-03-01T00:00:00\n2021-03-01T06:00:00\n2021-03-01T12:00:00\n"
             "2021-03-02T06:00:00\n2022-03-02T00:00:00\n");
  check_view("time/0.cf.txt",
             "2021-03-01T00:00:00\n2021-03-01T06:00:00\n2021-03-01T12:00:00\n"
             "2021-03-02T06:00:00\n2022-03-02T00:00:00\n");
}
END_TEST

/* xarray keeps _FillValue in the fill_value: an array it wrote is masked
 * by it, as xarray reads it back (int16 masked becomes float32). */
START_TEST(xarray_fill_value_masks) {
  check_view("count/values.cf.txt", "7\nnan\n300\n");
  check_view("count/values.txt", "7\n-1\n300\n");
}
END_TEST

/* A V3 array's fill_value is no _FillValue: xarray (which reads V3 since
 * 2024.10) masks with it only when asked (use_zarr_fill_value_as_mask,
 * off for V3); its _FillValue attribute masks. Unpacked 0 is add_offset,
 * in float64 (an offset); masked, an int16 unpacks in float32. */
START_TEST(v3_fill_value_does_not_mask) {
  check_view("v3/packed/values.cf.txt", "1\n2\n3\n");
  check_view("v3/filled/values.cf.txt", "0\n1\nnan\n");
  check_view("v3/packed/values.txt", "0\n2\n4\n");
}
END_TEST

START_TEST(bool_flags) {
  check_view("flag/values.cf.txt", "true\nfalse\nfalse\ntrue\n");
  check_view("flag/values.txt", "1\n0\n0\n2\n");
}
END_TEST

/* Time bounds decode with their time's units and calendar, as xarray's
 * decode_cf_variables gives them (setdefault: a calendar of their own
 * stays), values.cf.txt and rows.csv alike (xarray's values). */
START_TEST(bounds_decoded_with_their_time) {
  check_view("nc/time_bnds/values.cf.txt",
             "2019-12-31T21:00:00\n2020-01-01T03:00:00\n2020-01-01T03:00:00\n"
             "2020-01-01T09:00:00\n2020-01-01T09:00:00\n2020-01-01T15:00:00\n");
  check_view("nc/time_bnds/rows.csv",
             "2019-12-31T21:00:00,2020-01-01T03:00:00\n"
             "2020-01-01T03:00:00,2020-01-01T09:00:00\n"
             "2020-01-01T09:00:00,2020-01-01T15:00:00\n");
  check_view("nc/time_bnds/values.txt", "-3\n3\n3\n9\n9\n15\n");
  check_view("nc/day_bnds/values.cf.txt",
             "1999-12-31T12:00:00\n2000-01-01T12:00:00\n2000-01-01T12:00:00\n"
             "2000-01-02T12:00:00\n");
}
END_TEST

/* Character arrays as xarray joins them (CharacterArrayCoder): a string
 * per run along the character dimension, NUL padding dropped, in
 * values.cf.txt, its chunk views and the tables; a missing chunk is the
 * fill, masked (empty); not joined when the character dimension is split
 * across chunks, or is a variable's (flag along time). */
START_TEST(char_arrays_joined) {
  check_view("nc/name/values.cf.txt", "Oslo\nBergn\n\n");
  check_view("nc/name/0.0.cf.txt", "Oslo\nBergn\n");
  check_view("nc/name/values.txt", "4f\n73\n6c\n6f\n\n42\n65\n72\n67\n6e\n"
                                   "\n\n\n\n\n");
  check_view("nc/station.csv", "name\nOslo\nBergn\n\"\"\n");
  check_view("nc/split/values.cf.txt", "a\nb\nc\nd\ne\nf\ng\nh\n");
  check_view("nc/flag/values.cf.txt", "a\n\nc\n");
  check_view("nc/time.csv", "time,flag\n2020-01-01T00:00:00,a\n"
                            "2020-01-01T06:00:00,\n2020-01-01T12:00:00,c\n");
}
END_TEST

/* A masked bool, complex and S5 as xarray shows them: True / NaN,
 * nan+nanj, an empty string for xarray's NaN; missing in the tables. */
START_TEST(masked_bool_complex_bytes) {
  check_view("nc/b/values.cf.txt", "true\nnan\ntrue\n");
  check_view("nc/b/values.txt", "true\nfalse\ntrue\n");
  check_view("nc/k.csv", "b\ntrue\n\"\"\ntrue\n");
  check_view("nc/z/values.cf.txt", "1+2j\nnan+nanj\n");
  check_view("nc/s5/values.cf.txt", "abc\n\n");
  check_view("nc/s5/values.txt", "616263\n78\n");
  check_view("nc/k2.csv", "s5,z\nabc,1+2j\n,\n");
}
END_TEST

/* Collects listed names into one string. */
static int collect(void *ud, const char *name, int is_dir) {
  (void)is_dir;
  strcat(ud, name);
  strcat(ud, " ");
  return 0;
}

START_TEST(listed_only_where_cf_applies) {
  struct engine *e = open_engine();
  struct zerr err = {0};
  char names[4096] = "";
  ck_assert_int_eq(ns_list(e, "t", collect, names, &err), 0);
  ck_assert_ptr_nonnull(strstr(names, " values.cf.txt "));
  ck_assert_ptr_nonnull(strstr(names, " 0.cf.txt "));
  ck_assert_ptr_nonnull(strstr(names, " 1.cf.txt "));
  ck_assert_ptr_null(strstr(names, "2.cf.txt"));
  names[0] = '\0';
  ck_assert_int_eq(ns_list(e, "plain", collect, names, &err), 0);
  ck_assert_ptr_null(strstr(names, ".cf.txt"));
  struct ns_entry ent;
  ck_assert_int_eq(ns_resolve(e, "plain/values.cf.txt", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, "plain/0.cf.txt", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, "t/2.cf.txt", &ent, &err), -ENOENT);
  engine_free(e);
}
END_TEST

START_TEST(stored_key_wins) {
  put_text("t/values.cf.txt", "mine\n");
  struct engine *e = open_engine();
  struct zerr err = {0};
  struct ns_entry ent;
  ck_assert_int_eq(ns_resolve(e, "t/values.cf.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  engine_free(e);
  /* A stored K.txt hides the view K.txt, not K.cf.txt. */
  put_text("t/0.txt", "mine\n");
  e = open_engine();
  char names[4096] = "";
  ck_assert_int_eq(ns_list(e, "t", collect, names, &err), 0);
  ck_assert_ptr_nonnull(strstr(names, " 0.cf.txt "));
  ck_assert_int_eq(ns_resolve(e, "t/0.cf.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_CHUNK_VIEW);
  ck_assert_int_eq(ns_resolve(e, "t/0.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  engine_free(e);
}
END_TEST

/* A 2-D packed array of 4 chunks (one missing, masked in the CF view by
 * the fill value it is read as): the views of one array
 * share its decoded chunks, so values.txt, values.cf.txt and rows.csv
 * read one after another decode each stored chunk once. */
START_TEST(views_share_decoded_chunks) {
  put_text("g/.zarray", "{\"zarr_format\":2,\"shape\":[4,6],\"chunks\":[2,3],"
                        "\"dtype\":\"<i2\",\"fill_value\":0,\"order\":\"C\","
                        "\"compressor\":null,\"filters\":null}");
  put_text("g/.zattrs", "{\"scale_factor\":0.5}");
  int16_t c[6] = {1, 2, 3, 4, 5, 6};
  put_file("g/0.0", c, sizeof c);
  put_file("g/0.1", c, sizeof c);
  put_file("g/1.0", c, sizeof c);
  struct engine *e = open_engine();
  static const char *const views[] = {"g/values.txt", "g/values.cf.txt",
                                      "g/rows.csv", "g/values.txt"};
  static const char *const want[] = {
      "1\n2\n3\n1\n2\n3\n4\n5\n6\n4\n5\n6\n"
      "1\n2\n3\n0\n0\n0\n4\n5\n6\n0\n0\n0\n",
      "0.5\n1\n1.5\n0.5\n1\n1.5\n2\n2.5\n3\n2\n2.5\n3\n"
      "0.5\n1\n1.5\nnan\nnan\nnan\n2\n2.5\n3\nnan\nnan\nnan\n",
      NULL, NULL};
  for (int i = 0; i < 4; i++) {
    char *got = read_all(e, views[i], 5);
    if (want[i])
      ck_assert_str_eq(got, want[i]);
    else if (i == 2)
      ck_assert_ptr_nonnull(strstr(got, "0.5,1.0,1.5,0.5,1.0,1.5\n"));
    free(got);
    /* three chunks stored: three decodes, whichever views read them */
    ck_assert_uint_eq(engine_fills(e, ELEVEL_DECODED), 3);
    ck_assert_uint_eq(atomic_load(&e->stats.decodes), 3);
  }
  engine_free(e);
}
END_TEST

/* A group's info.txt is made once for stat and reads alike (its V2
 * .zattrs read once): an edit while mounted does not show. */
START_TEST(group_info_made_once) {
  put_text(".zattrs", "{\"title\":\"one\"}");
  struct engine *e = open_engine();
  char *a = read_all(e, "info.txt", 7);
  ck_assert_ptr_nonnull(strstr(a, "title: \"one\""));
  put_text(".zattrs", "{\"title\":\"two, longer\"}");
  char *b = read_all(e, "info.txt", 4096);
  ck_assert_str_eq(a, b);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_INFO), 1);
  free(a);
  free(b);
  engine_free(e);
}
END_TEST

/* The suite. */
static Suite *cfview_suite(void) {
  Suite *s = suite_create("cfview");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, packed_with_fill_and_missing_chunk);
  tcase_add_test(tc, times_in_hours_since);
  tcase_add_test(tc, bool_flags);
  tcase_add_test(tc, bounds_decoded_with_their_time);
  tcase_add_test(tc, char_arrays_joined);
  tcase_add_test(tc, masked_bool_complex_bytes);
  tcase_add_test(tc, xarray_fill_value_masks);
  tcase_add_test(tc, v3_fill_value_does_not_mask);
  tcase_add_test(tc, listed_only_where_cf_applies);
  tcase_add_test(tc, stored_key_wins);
  tcase_add_test(tc, views_share_decoded_chunks);
  tcase_add_test(tc, group_info_made_once);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(cfview_suite()); }
