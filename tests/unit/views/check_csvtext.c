/* check_csvtext.c - rows.csv: the CSV field rules of fs/csvtext (quotes
 * around a comma, a double quote, CR or LF, quotes doubled, newlines kept;
 * bytes as hex; NaT, CF-masked values and zarrs.optional nulls empty;
 * CF-decoded numbers and times; finding the n-th field in a text), then
 * the view itself driven through the engine without a mount, over V2
 * arrays: integers with a missing chunk and edge chunks, strings with
 * commas, quotes, CR and LF, numpy S bytes, a CF-packed int16 with fill
 * values, datetime64 with NaT, a 3-D float64 array with a missing chunk,
 * an int32 array on a rectangular grid, a 2-D structured array (each
 * record its fields, quoted one by one; a missing chunk of fill records).
 * Each rows.csv is read whole in pieces of 1 byte to 1 MiB, from its end
 * first (tail), and at every offset, and compared with its text; a 1-D
 * array has no rows.csv. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/text/csvfield.h"
#include "../../../fs/text/csvtext.h"
#include "../teststore.h"
#include "../testutil.h"

/* ---- the field rules ---- */

/* A string's field. */
static char *field_of(const char *s, size_t n) {
  size_t l = csvfield_len(s, n);
  char *f = malloc(l + 1);
  csvfield_put(s, n, f);
  f[l] = '\0';
  return f;
}

START_TEST(string_fields) {
  static const struct {
    const char *in, *want;
  } cases[] = {
      {"plain", "plain"},
      {"", ""},
      {"a,b", "\"a,b\""},
      {"say \"hi\"", "\"say \"\"hi\"\"\""},
      {"\"", "\"\"\"\""},
      {"l1\nl2", "\"l1\nl2\""},
      {"cr\rlf\r\n", "\"cr\rlf\r\n\""},
      {"tab\tand space ", "tab\tand space "},
      {"caf\xc3\xa9 \xe2\x82\xac", "caf\xc3\xa9 \xe2\x82\xac"},
      {",", "\",\""},
      {"'single'", "'single'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char *f = field_of(cases[i].in, strlen(cases[i].in));
    ck_assert_msg(!strcmp(f, cases[i].want), "case %zu: [%s] want [%s]", i, f,
                  cases[i].want);
    free(f);
  }
  /* a NUL byte is kept as it is */
  char *f = field_of("a\0b", 3);
  ck_assert(!memcmp(f, "a\0b", 3));
  free(f);
}
END_TEST

START_TEST(skip_fields) {
  const char *t = "1,\"a,b\",,\"q\"\"\n\"\"x\"\nlast,\"\"\"\"\n";
  uint64_t size = strlen(t);
  /* field starts: 0 "1", 2 "a,b", 8 "", 9 "q\"\n\"x", 19 "last", 24 "\"" */
  static const uint64_t starts[] = {0, 2, 8, 9, 19, 24};
  for (size_t i = 0; i < 6; i++)
    for (size_t j = i; j <= 6; j++)
      ck_assert_uint_eq(csvtext_skip(t, size, starts[i], j - i),
                        j < 6 ? starts[j] : size);
  ck_assert_uint_eq(csvtext_skip(t, size, 0, 100), size);
}
END_TEST

/* Random strings over the bytes that matter (comma, quote, CR, LF, a
 * letter) become fields of a text; csvtext_skip finds every field's start
 * from every earlier one. */
START_TEST(skip_random_fields) {
  static const char alphabet[] = ",\"\r\na";
  unsigned seed = 12345;
  for (int round = 0; round < 200; round++) {
    char text[4096];
    uint64_t starts[33], size = 0;
    int n = 1 + round % 32;
    for (int f = 0; f < n; f++) {
      char s[16];
      size_t len = (size_t)(rand_r(&seed) % 8);
      for (size_t i = 0; i < len; i++)
        s[i] = alphabet[rand_r(&seed) % 5];
      starts[f] = size;
      size += csvfield_put(s, len, text + size);
      text[size++] = f % 3 == 2 ? '\n' : ',';
    }
    starts[n] = size;
    for (int i = 0; i <= n; i++)
      for (int j = i; j <= n; j++)
        ck_assert_uint_eq(
            csvtext_skip(text, size, starts[i], (uint64_t)(j - i)), starts[j]);
  }
}
END_TEST

/* The field of one fixed element, as a string. */
static const char *fixed(const struct cf *cf, const struct dtype *dt,
                         const void *elem) {
  static char buf[CSVTEXT_MAX + 1];
  size_t n = csvtext_fixed(cf, dt, elem, buf);
  buf[n] = '\0';
  return buf;
}

START_TEST(fixed_fields) {
  struct dtype i32 = dtype_of(DT_INT32), f64 = dtype_of(DT_FLOAT64),
               b = dtype_of(DT_BOOL);
  int32_t iv = -42;
  double dv = 0.1, nan = NAN, seven = 7, mzero = -0.0;
  uint8_t bv = 1;
  ck_assert_str_eq(fixed(NULL, &i32, &iv), "-42");
  ck_assert_str_eq(fixed(NULL, &f64, &dv), "0.1");
  /* D.csv's rule (fs/csvfield.h): a float's NaN is an empty field, an
   * integral float keeps its .0 (pandas reads the column as floats) */
  ck_assert_str_eq(fixed(NULL, &f64, &nan), "");
  ck_assert_str_eq(fixed(NULL, &f64, &seven), "7.0");
  ck_assert_str_eq(fixed(NULL, &f64, &mzero), "-0.0");
  ck_assert_str_eq(fixed(NULL, &b, &bv), "true");
  /* NaT is missing */
  struct dtype dt64 = dtype_of(DT_DATETIME64);
  dt64.unit = DTU_s;
  dt64.scale = 1;
  int64_t t = 86400, nat = INT64_MIN;
  ck_assert_str_eq(fixed(NULL, &dt64, &t), "1970-01-02T00:00:00");
  ck_assert_str_eq(fixed(NULL, &dt64, &nat), "");
  /* zarrs.optional: a null at any layer is missing, a present value is
   * its inner text (a present NaN is empty too, as in D.csv) */
  struct dtype o8 = {.kind = DT_OPTIONAL, .size = 2, .inner = DT_UINT8};
  uint8_t some[2] = {7, 1}, none[2] = {7, 0};
  ck_assert_str_eq(fixed(NULL, &o8, some), "7");
  ck_assert_str_eq(fixed(NULL, &o8, none), "");
  struct dtype of = {.kind = DT_OPTIONAL, .size = 9, .inner = DT_FLOAT64};
  uint8_t fnan[9];
  memcpy(fnan, &nan, 8);
  fnan[8] = 1;
  ck_assert_str_eq(fixed(NULL, &of, fnan), "");
  struct dtype oo = {
      .kind = DT_OPTIONAL, .size = 3, .depth = 2, .inner = DT_UINT8};
  uint8_t inner_null[3] = {0, 0, 1}; /* Some(None): "[null]" in values.txt */
  ck_assert_str_eq(fixed(NULL, &oo, inner_null), "");
}
END_TEST

START_TEST(cf_fields) {
  struct zerr err = {0};
  struct dtype i16 = dtype_of(DT_INT16);
  json_t *attrs = json_loads(
      "{\"scale_factor\":0.5,\"add_offset\":10.0,\"_FillValue\":-32768}", 0,
      NULL);
  struct cf *cf = NULL;
  ck_assert_int_eq(cf_parse(attrs, NULL, &i16, &cf, &err), 0);
  ck_assert_ptr_nonnull(cf);
  int16_t v = 3, fill = -32768, even = 4;
  ck_assert_str_eq(fixed(cf, &i16, &v), "11.5");
  ck_assert_str_eq(fixed(cf, &i16, &even), "12.0"); /* unpacked: a float */
  ck_assert_str_eq(fixed(cf, &i16, &fill), "");
  cf_free(cf);
  json_decref(attrs);
  struct dtype i64 = dtype_of(DT_INT64);
  attrs = json_loads("{\"units\":\"hours since 2021-03-01\","
                     "\"calendar\":\"proleptic_gregorian\","
                     "\"_FillValue\":-1}",
                     0, NULL);
  ck_assert_int_eq(cf_parse(attrs, NULL, &i64, &cf, &err), 0);
  int64_t h = 30, missing = -1;
  ck_assert_str_eq(fixed(cf, &i64, &h), "2021-03-02T06:00:00");
  ck_assert_str_eq(fixed(cf, &i64, &missing), "");
  cf_free(cf);
  json_decref(attrs);
}
END_TEST

/* ---- the view through the engine ---- */

static char tmpdir[64];

/* Write a file under tmpdir, creating parent directories. */
static void put_file(const char *rel, const void *data, size_t len) {
  ts_put_file(tmpdir, rel, data, len);
}

/* Write text. */
static void put_text(const char *rel, const char *text) {
  put_file(rel, text, strlen(text));
}

/* A V2 array without compressor: .zarray (shape and chunks as JSON
 * lists, filters as JSON) and .zattrs. */
static void put_v2(const char *name, const char *shape, const char *chunks,
                   const char *dtype, const char *fill, const char *filters,
                   const char *attrs) {
  char buf[1024], rel[128];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":2,\"shape\":%s,\"chunks\":%s,\"dtype\":\"%s\","
           "\"fill_value\":%s,\"order\":\"C\",\"compressor\":null,"
           "\"filters\":%s}",
           shape, chunks, dtype, fill, filters);
  snprintf(rel, sizeof rel, "%s/.zarray", name);
  put_text(rel, buf);
  snprintf(rel, sizeof rel, "%s/.zattrs", name);
  put_text(rel, attrs);
}

/* numcodecs' vlen-utf8 encoding of n strings (lens given: NULs allowed). */
static void put_vlen(const char *rel, const char *const *s, int n) {
  uint8_t buf[1024];
  size_t at = 4;
  uint32_t c = (uint32_t)n;
  memcpy(buf, &c, 4);
  for (int i = 0; i < n; i++) {
    uint32_t l = (uint32_t)strlen(s[i]);
    memcpy(buf + at, &l, 4);
    memcpy(buf + at + 4, s[i], l);
    at += 4 + l;
  }
  put_file(rel, buf, at);
}

/* The integers of "num": shape (5, 7), chunks (2, 3); chunk (1, 1) is not
 * stored, so its elements are the fill value -1. */
static int32_t num_at(int i, int j) {
  return i / 2 == 1 && j / 3 == 1 ? -1 : i * 100 + j - 250;
}

/* The 3-D float64 "cube": shape (2, 3, 4), chunks (1, 2, 3); chunk
 * (1, 0, 1) is not stored (fill 0.5). */
static double cube_at(int i, int j, int k) {
  return i == 1 && j / 2 == 0 && k / 3 == 1 ? 0.5 : (i * 12 + j * 4 + k) / 8.0;
}

/* The int32 "rect" on a rectangular grid: shape (3, 6), rows in chunks
 * of 2, columns in chunks of 1, 3 and 2; chunk (1, 1) is not stored (fill
 * 9). */
static int32_t rect_at(int i, int j) {
  return i / 2 == 1 && j >= 1 && j < 4 ? 9 : i * 10 + j;
}

/* Write "rect". */
static void put_rect(void) {
  put_text("rect/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[3,6],"
           "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":"
           "\"rectangular\",\"configuration\":{\"chunk_shape\":[2,[1,3,2]]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":9,"
           "\"codecs\":[{\"name\":\"bytes\",\"configuration\":"
           "{\"endian\":\"little\"}}]}");
  static const int start[] = {0, 1, 4}, len[] = {1, 3, 2};
  for (int ci = 0; ci < 2; ci++)
    for (int cj = 0; cj < 3; cj++) {
      if (ci == 1 && cj == 1)
        continue;
      int32_t c[6];
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < len[cj]; b++)
          c[a * len[cj] + b] = rect_at(ci * 2 + a, start[cj] + b);
      char rel[32];
      snprintf(rel, sizeof rel, "rect/c/%d/%d", ci, cj);
      put_file(rel, c, 2 * (size_t)len[cj] * sizeof *c);
    }
}

static void put_records(void);

/* The store. */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-csvrows-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_text(".zgroup", "{\"zarr_format\":2}");
  put_v2("num", "[5,7]", "[2,3]", "<i4", "-1", "null", "{}");
  for (int ci = 0; ci < 3; ci++)
    for (int cj = 0; cj < 3; cj++) {
      if (ci == 1 && cj == 1)
        continue;
      int32_t c[6];
      for (int a = 0; a < 2; a++)
        for (int b = 0; b < 3; b++)
          c[a * 3 + b] = num_at(ci * 2 + a, cj * 3 + b); /* pads too */
      char rel[32];
      snprintf(rel, sizeof rel, "num/%d.%d", ci, cj);
      put_file(rel, c, sizeof c);
    }
  put_v2("str", "[2,3]", "[1,2]", "|O", "null", "[{\"id\":\"vlen-utf8\"}]",
         "{}");
  const char *s00[] = {"a,b", "say \"hi\""}, *s01[] = {"l1\nl2", ""};
  const char *s10[] = {"cr\rx", ""}, *s11[] = {"plain", ""};
  put_vlen("str/0.0", s00, 2);
  put_vlen("str/0.1", s01, 2);
  put_vlen("str/1.0", s10, 2);
  put_vlen("str/1.1", s11, 2);
  put_v2("b", "[2,2]", "[2,2]", "|S3", "\"\"", "null", "{}");
  put_file("b/0.0", "ab\0,\"\n\xff\0\0xyz", 12);
  put_v2("cf", "[2,3]", "[2,3]", "<i2", "-32768", "null",
         "{\"_ARRAY_DIMENSIONS\":[\"y\",\"x\"],\"scale_factor\":0.5,"
         "\"add_offset\":10.0,\"_FillValue\":-32768}");
  int16_t cfv[6] = {0, 3, -32768, -32768, 1, -20};
  put_file("cf/0.0", cfv, sizeof cfv);
  put_v2("t", "[2,2]", "[2,2]", "<M8[s]", "null", "null", "{}");
  int64_t tv[4] = {0, INT64_MIN, 86400 * 366, 90};
  put_file("t/0.0", tv, sizeof tv);
  put_v2("cube", "[2,3,4]", "[1,2,3]", "<f8", "0.5", "null", "{}");
  for (int ci = 0; ci < 2; ci++)
    for (int cj = 0; cj < 2; cj++)
      for (int ck = 0; ck < 2; ck++) {
        if (ci == 1 && cj == 0 && ck == 1)
          continue;
        double c[6];
        for (int b = 0; b < 2; b++)
          for (int d = 0; d < 3; d++)
            c[b * 3 + d] = cube_at(ci, cj * 2 + b, ck * 3 + d);
        char rel[32];
        snprintf(rel, sizeof rel, "cube/%d.%d.%d", ci, cj, ck);
        put_file(rel, c, sizeof c);
      }
  put_v2("one", "[3]", "[3]", "<i4", "0", "null", "{}");
  put_rect();
  put_records();
}

/* One record of "rec": <i2, <U2 (ASCII here), <M8[s], <f4. */
static void rec_put(uint8_t *p, int16_t i, const char *s, int64_t t, float f) {
  uint32_t u[2] = {0, 0};
  for (size_t k = 0; k < strlen(s) && k < 2; k++)
    u[k] = (uint8_t)s[k];
  memcpy(p, &i, 2);
  memcpy(p + 2, u, 8);
  memcpy(p + 10, &t, 8);
  memcpy(p + 18, &f, 4);
}

/* "rec": shape (2, 3), chunks (2, 2), chunk (0, 1) not stored; the fill
 * record is (9, "z", NaT, NaN). */
static void put_records(void) {
  put_text("rec/.zarray",
           "{\"zarr_format\":2,\"shape\":[2,3],\"chunks\":[2,2],"
           "\"dtype\":[[\"i\",\"<i2\"],[\"s\",\"<U2\"],[\"t\",\"<M8[s]\"],"
           "[\"f\",\"<f4\"]],\"fill_value\":"
           "\"CQB6AAAAAAAAAAAAAAAAAACAAADAfw==\",\"order\":\"C\","
           "\"compressor\":null,\"filters\":null}");
  uint8_t c[4 * 22];
  rec_put(c, 1, "a,", 0, 1.5f);
  rec_put(c + 22, 2, "\"", INT64_MIN, NAN);
  rec_put(c + 44, -3, "x\n", 60, -0.0f);
  rec_put(c + 66, 4, "", 3600, 1e20f);
  put_file("rec/0.0", c, sizeof c);
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* Engine over tmpdir. */
static struct engine *open_engine(void) {
  struct engine_config cfg = {
      .cache_size = 64u << 20, .max_decoded = 1u << 30, .size_table_max = 1000};
  return ts_engine(tmpdir, &cfg);
}

/* Resolve path and learn its size. */
static uint64_t view_open(struct engine *e, const char *path,
                          struct ns_entry *ent) {
  struct zerr err = {0};
  uint64_t size;
  ck_assert_msg(ns_resolve(e, path, ent, &err) == 0, "%s: %s", path, err.msg);
  ck_assert_msg(ns_size(e, ent, &size, &err) == 0, "%s: %s", path, err.msg);
  return size;
}

/* Read [off, off+len) of a view whole into buf. */
static void read_range(struct engine *e, const struct ns_entry *ent,
                       uint64_t off, size_t len, char *buf) {
  struct zerr err = {0};
  size_t done = 0;
  while (done < len) {
    long n =
        ns_read_view(e, ent, off + done, len - done, buf + done, NULL, &err);
    ck_assert_msg(n > 0, "%s at %llu: %s", ent->key,
                  (unsigned long long)(off + done), err.msg);
    done += (size_t)n;
  }
}

/* Every way of reading gives want: pieces of each size (fresh engines
 * and one throughout), the last bytes first, and every offset on. */
static void check_view(const char *path, const char *want, size_t wlen) {
  static const size_t steps[] = {1, 2, 3, 7, 64, 4096, 1u << 20};
  struct engine *shared = open_engine();
  struct ns_entry ent;
  char *got = malloc(wlen + 8);
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    struct engine *e = open_engine();
    for (int pass = 0; pass < 2; pass++) {
      struct engine *x = pass ? shared : e;
      ck_assert_uint_eq(view_open(x, path, &ent), wlen);
      for (uint64_t off = 0; off < wlen; off += steps[i]) {
        size_t n = wlen - off < steps[i] ? (size_t)(wlen - off) : steps[i];
        read_range(x, &ent, off, n, got + off);
      }
      ck_assert_msg(!memcmp(got, want, wlen), "%s step %zu:\n%.*s\nwant:\n%s",
                    path, steps[i], (int)wlen, got, want);
      struct zerr err = {0};
      ck_assert_int_eq(ns_read_view(x, &ent, wlen, 8, got, NULL, &err), 0);
    }
    engine_free(e);
  }
  for (uint64_t off = 0; off < wlen; off++) {
    struct engine *e = open_engine(); /* the tail read comes first */
    view_open(e, path, &ent);
    read_range(e, &ent, off, (size_t)(wlen - off), got);
    ck_assert_msg(!memcmp(got, want + off, (size_t)(wlen - off)),
                  "%s from %llu", path, (unsigned long long)off);
    engine_free(e);
  }
  free(got);
  engine_free(shared);
}

/* check_view of a NUL-terminated text. */
static void check_text(const char *path, const char *want) {
  check_view(path, want, strlen(want));
}

START_TEST(integers_missing_and_edge_chunks) {
  char want[512];
  size_t at = 0;
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 7; j++)
      at += (size_t)snprintf(want + at, sizeof want - at, "%d%c", num_at(i, j),
                             j == 6 ? '\n' : ',');
  check_view("num/rows.csv", want, at);
}
END_TEST

START_TEST(strings_quoted) {
  check_text("str/rows.csv", "\"a,b\",\"say \"\"hi\"\"\",\"l1\nl2\"\n"
                             "\"cr\rx\",,plain\n");
  /* values.txt keeps its own rule: a newline is a space */
  check_text("str/values.txt", "a,b\nsay \"hi\"\nl1 l2\ncr\rx\n\nplain\n");
}
END_TEST

START_TEST(bytes_as_hex) {
  check_text("b/rows.csv", "6162,2c220a\nff,78797a\n"); /* NULs dropped */
}
END_TEST

START_TEST(cf_packed_with_fill) {
  check_text("cf/rows.csv", "10.0,11.5,\n,10.5,0.0\n");
  check_text("cf/values.cf.txt", "10\n11.5\nnan\nnan\n10.5\n0\n");
}
END_TEST

START_TEST(times_with_nat) {
  check_text("t/rows.csv", "1970-01-01T00:00:00,\n"
                           "1971-01-02T00:00:00,1970-01-01T00:01:30\n");
}
END_TEST

START_TEST(three_dimensions) {
  char want[1024];
  size_t at = 0;
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++)
      for (int k = 0; k < 4; k++)
        at += (size_t)snprintf(want + at, sizeof want - at, "%.17g%s%c",
                               cube_at(i, j, k),
                               cube_at(i, j, k) == (int)cube_at(i, j, k)
                                   ? ".0"
                                   : "",
                               k == 3 ? '\n' : ',');
  check_view("cube/rows.csv", want, at);
}
END_TEST

START_TEST(structured_records) {
  /* row 1 starts 2 records (8 fields) into chunk (0, 0) */
  check_text("rec/rows.csv",
             "1,\"a,\",1970-01-01T00:00:00,1.5,2,\"\"\"\",,,9,z,,\n"
             "-3,\"x\n\",1970-01-01T00:01:00,-0.0,4,,1970-01-01T01:00:00,1e+20,"
             "9,z,,\n");
  /* values.txt keeps its own rule */
  check_text("rec/values.txt", "1\ta,\t1970-01-01T00:00:00\t1.5\n"
                               "2\t\"\tNaT\tnan\n"
                               "9\tz\tNaT\tnan\n"
                               "-3\tx \t1970-01-01T00:01:00\t-0\n"
                               "4\t\t1970-01-01T01:00:00\t1e+20\n"
                               "9\tz\tNaT\tnan\n");
}
END_TEST

START_TEST(rectangular_grid) {
  char want[512];
  size_t at = 0;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 6; j++)
      at += (size_t)snprintf(want + at, sizeof want - at, "%d%c", rect_at(i, j),
                             j == 5 ? '\n' : ',');
  check_view("rect/rows.csv", want, at);
}
END_TEST

/* Collects listed names into one string. */
static int collect(void *ud, const char *name, int is_dir) {
  (void)is_dir;
  strcat(ud, name);
  strcat(ud, " ");
  return 0;
}

START_TEST(listed_in_nd_arrays_only) {
  struct engine *e = open_engine();
  struct zerr err = {0};
  char names[4096] = "";
  ck_assert_int_eq(ns_list(e, "num", collect, names, &err), 0);
  ck_assert_ptr_nonnull(strstr(names, " rows.csv "));
  names[0] = '\0';
  ck_assert_int_eq(ns_list(e, "one", collect, names, &err), 0);
  ck_assert_ptr_null(strstr(names, "rows.csv"));
  struct ns_entry ent;
  ck_assert_int_eq(ns_resolve(e, "one/rows.csv", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, "rows.csv", &ent, &err), -ENOENT);
  engine_free(e);
  put_text("num/rows.csv", "mine\n"); /* a stored key wins */
  e = open_engine();
  ck_assert_int_eq(ns_resolve(e, "num/rows.csv", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  engine_free(e);
}
END_TEST

/* The suite. */
static Suite *csvtext_suite(void) {
  Suite *s = suite_create("csvtext");
  TCase *tf = tcase_create("fields");
  tcase_add_test(tf, string_fields);
  tcase_add_test(tf, skip_fields);
  tcase_add_test(tf, skip_random_fields);
  tcase_add_test(tf, fixed_fields);
  tcase_add_test(tf, cf_fields);
  suite_add_tcase(s, tf);
  TCase *tc = tcase_create("rows");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, integers_missing_and_edge_chunks);
  tcase_add_test(tc, strings_quoted);
  tcase_add_test(tc, bytes_as_hex);
  tcase_add_test(tc, cf_packed_with_fill);
  tcase_add_test(tc, times_with_nat);
  tcase_add_test(tc, three_dimensions);
  tcase_add_test(tc, rectangular_grid);
  tcase_add_test(tc, structured_records);
  tcase_add_test(tc, listed_in_nd_arrays_only);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(csvtext_suite()); }
