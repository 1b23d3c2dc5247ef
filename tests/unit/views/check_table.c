/* check_table.c - the tables D.csv of a group (fs/views/table.h) and their
 * fields (fs/text/csvfield.h), driven through the engine without a mount.
 *
 * The field rules one by one; then a V2 group as xarray writes it: a
 * coordinate x, a float64 column with NaN and integral values, an int16
 * packed with scale_factor and _FillValue (CF-decoded, a missing chunk),
 * a string column with a comma, a quote, CR LF and an empty string, a
 * column of another length (left out), a 2-D array (no table), a second
 * dimension y, and a stored y.csv that wins over the table; a group g
 * with a 1-D structured array (one column per leaf field, a missing
 * chunk of fill records). Each table
 * is read in pieces of 1 byte to 1 MiB and compared with the text
 * expected; a table of 10,000 rows crosses blocks of rows; a lazy-size
 * engine renders only the blocks a reader reaches, learns the size from
 * a reader that reaches the end, and walks a table of 74 blocks. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/text/csvfield.h"
#include "../../../fs/views/info.h"
#include "../../../fs/views/table.h"
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

/* A V2 array without compressor (filters: JSON or "null"), along dims (a
 * JSON list), with extra attributes (JSON members or ""). */
static void put_v2(const char *name, const char *shape, const char *chunks,
                   const char *dtype, const char *fill, const char *filters,
                   const char *dims, const char *attrs) {
  char buf[1024], rel[128];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":2,\"shape\":%s,\"chunks\":%s,\"dtype\":\"%s\","
           "\"fill_value\":%s,\"order\":\"C\",\"compressor\":null,"
           "\"filters\":%s}",
           shape, chunks, dtype, fill, filters);
  snprintf(rel, sizeof rel, "%s/.zarray", name);
  put_text(rel, buf);
  snprintf(buf, sizeof buf, "{\"_ARRAY_DIMENSIONS\":%s%s%s}", dims,
           *attrs ? "," : "", attrs);
  snprintf(rel, sizeof rel, "%s/.zattrs", name);
  put_text(rel, buf);
}

/* A vlen-utf8 chunk of n strings. */
static void put_strings(const char *rel, const char *const *s, uint32_t n) {
  uint8_t buf[1024];
  size_t w = 0;
  memcpy(buf, &n, 4);
  w = 4;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t l = (uint32_t)strlen(s[i]);
    memcpy(buf + w, &l, 4);
    memcpy(buf + w + 4, s[i], l);
    w += 4 + l;
  }
  put_file(rel, buf, w);
}

static void put_records(void);
static void put_phony(void);

/* The store (see the file comment). */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-table-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_text(".zgroup", "{\"zarr_format\":2}");
  put_v2("x", "[5]", "[3]", "<i4", "null", "null", "[\"x\"]", "");
  int32_t x0[3] = {10, 20, 30}, x1[3] = {40, 50, 0};
  put_file("x/0", x0, sizeof x0);
  put_file("x/1", x1, sizeof x1);
  put_v2("b", "[5]", "[5]", "<f8", "\"NaN\"", "null", "[\"x\"]", "");
  double b[5] = {1.5, NAN, 2, -0.0, 1e300};
  put_file("b/0", b, sizeof b);
  put_v2("a", "[5]", "[2]", "<i2", "-32768", "null", "[\"x\"]",
         "\"scale_factor\":0.5,\"add_offset\":10.0,\"_FillValue\":-32768");
  int16_t a0[2] = {0, -32768}, a1[2] = {3, 4}; /* chunk 2 missing */
  put_file("a/0", a0, sizeof a0);
  put_file("a/1", a1, sizeof a1);
  put_v2("s", "[5]", "[4]", "|O", "null", "[{\"id\":\"vlen-utf8\"}]", "[\"x\"]",
         "");
  static const char *const s0[] = {"plain", "a,b", "say \"hi\"", "cr\r\nlf"};
  static const char *const s1[] = {"", "", "", ""};
  put_strings("s/0", s0, 4);
  put_strings("s/1", s1, 4);
  put_v2("short", "[3]", "[3]", "<i4", "0", "null", "[\"x\"]", "");
  put_v2("m", "[2,2]", "[2,2]", "<i4", "0", "null", "[\"x\",\"y\"]", "");
  put_v2("y", "[2]", "[2]", "|b1", "null", "null", "[\"y\"]", "");
  uint8_t y[2] = {1, 0};
  put_file("y/0", y, sizeof y);
  put_v2("zz", "[1]", "[1]", "<i4", "7", "null", "[\"z\"]", "");
  put_text("z.csv", "mine\n");
  put_records();
  put_phony();
}

/* Group p as kerchunk makes an HDF5 file without dimension scales: each
 * dataset's axes are phony_dim_0, phony_dim_1, ... whatever their
 * lengths: data [6,3], lat and lon [4], time [6], and zz [4] whose codec
 * no one knows (no views). */
static void put_phony(void) {
  put_text("p/.zgroup", "{\"zarr_format\":2}");
  put_v2("p/data", "[6,3]", "[6,3]", "<i4", "0", "null",
         "[\"phony_dim_0\",\"phony_dim_1\"]", "");
  put_v2("p/lat", "[4]", "[4]", "<f8", "null", "null", "[\"phony_dim_0\"]", "");
  put_v2("p/lon", "[4]", "[4]", "<i2", "null", "null", "[\"phony_dim_0\"]", "");
  put_v2("p/time", "[6]", "[6]", "<i4", "0", "null", "[\"phony_dim_0\"]", "");
  put_v2("p/zz", "[4]", "[4]", "<i4", "0", "[{\"id\":\"nobody-knows\"}]",
         "[\"phony_dim_0\"]", "");
  double lat[4] = {-45, -15, 15, 45};
  int16_t lon[4] = {0, 90, 180, 270};
  put_file("p/lat/0", lat, sizeof lat);
  put_file("p/lon/0", lon, sizeof lon);
}

/* Group g: rec along r, shape 3, chunks 2, chunk 1 not stored (the fill
 * record: zeros); fields <i2, <f8, <U3, a nested record of |u1 and >i2,
 * a <i2 subarray of 2, <M8[s]. */
static void put_records(void) {
  put_text("g/.zgroup", "{\"zarr_format\":2}");
  put_text("g/rec/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[2],\"dtype\":"
           "[[\"id\",\"<i2\"],[\"v\",\"<f8\"],[\"name\",\"<U3\"],"
           "[\"pos\",[[\"x\",\"|u1\"],[\"y\",\">i2\"]]],"
           "[\"q\",\"<i2\",[2]],[\"t\",\"<M8[s]\"]],\"fill_value\":null,"
           "\"order\":\"C\",\"compressor\":null,\"filters\":null}");
  put_text("g/rec/.zattrs", "{\"_ARRAY_DIMENSIONS\":[\"r\"]}");
  uint8_t c[2 * 37] = {0};
  for (int k = 0; k < 2; k++) {
    uint8_t *p = c + 37 * k;
    int16_t id = k ? -5 : 1, q[2] = {k ? 0 : -1, k ? 0 : 3};
    double v = k ? NAN : 2.0;
    uint32_t name[3] = {k ? 0xe9 : 'a', k ? '\n' : ',', k ? 0 : 'b'};
    int64_t t = k ? 86400 : INT64_MIN;
    memcpy(p, &id, 2);
    memcpy(p + 2, &v, 8);
    memcpy(p + 10, name, 12);
    p[22] = k ? 255 : 7;
    p[23] = k ? 0xff : 1; /* big-endian y: 258, -2 */
    p[24] = k ? 0xfe : 2;
    memcpy(p + 25, q, 4);
    memcpy(p + 29, &t, 8);
  }
  put_file("g/rec/0", c, sizeof c);
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* Engine over tmpdir. */
static struct engine *open_engine(int lazy) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &s, &err), 0);
  struct engine_config cfg = {64u << 20, 1u << 30, 1000, 0, lazy, 0, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* Read a whole view in pieces of `step` bytes; its size must be exact. */
static char *read_all(struct engine *e, const char *path, size_t step,
                      size_t *len) {
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == 0, "%s: %s", path, err.msg);
  ck_assert_int_eq(ent.kind, NS_TABLE);
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
  *len = (size_t)size;
  return buf;
}

/* Every piece size gives the whole text, with a fresh engine each and
 * with one engine throughout. */
static void check_table(const char *path, const char *want, size_t wlen) {
  static const size_t steps[] = {1, 2, 3, 7, 64, 4096, 1u << 20};
  struct engine *shared = open_engine(0);
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    struct engine *e = open_engine(0);
    size_t len;
    char *got = read_all(e, path, steps[i], &len);
    ck_assert_msg(len == wlen && !memcmp(got, want, wlen),
                  "%s step %zu:\n%s\nwant:\n%s", path, steps[i], got, want);
    free(got);
    engine_free(e);
    got = read_all(shared, path, steps[i], &len);
    ck_assert(len == wlen && !memcmp(got, want, wlen));
    free(got);
  }
  engine_free(shared);
}

START_TEST(field_rules) {
  char buf[64];
  ck_assert(!csvfield_needs_quotes("plain text", 10));
  ck_assert(csvfield_needs_quotes("a,b", 3));
  ck_assert(csvfield_needs_quotes("a\rb", 3));
  ck_assert(csvfield_needs_quotes("a\nb", 3));
  ck_assert(csvfield_needs_quotes("\"", 1));
  ck_assert_uint_eq(csvfield_len("ab", 2), 2);
  ck_assert_uint_eq(csvfield_len("say \"hi\"", 8), 12);
  size_t n = csvfield_put("say \"hi\"", 8, buf);
  ck_assert_uint_eq(n, 12);
  ck_assert(!memcmp(buf, "\"say \"\"hi\"\"\"", 12));
  n = csvfield_put("l1\r\nl2", 6, buf);
  ck_assert(n == 8 && !memcmp(buf, "\"l1\r\nl2\"", 8));
  ck_assert_uint_eq(csvfield_put("", 0, buf), 0);
  ck_assert(csvfield_is_missing("nan", 3));
  ck_assert(csvfield_is_missing("NaT", 3));
  ck_assert(!csvfield_is_missing("nano", 4));
  ck_assert(!csvfield_is_missing("-nan", 4));
  ck_assert(csvfield_float_integral("12", 2));
  ck_assert(csvfield_float_integral("-0", 2));
  ck_assert(!csvfield_float_integral("-", 1));
  ck_assert(!csvfield_float_integral("", 0));
  ck_assert(!csvfield_float_integral("1.5", 3));
  ck_assert(!csvfield_float_integral("1e+20", 5));
  ck_assert(!csvfield_float_integral("inf", 3));
  static const uint8_t b[3] = {0x00, 0xab, 0x7f};
  ck_assert_uint_eq(csvfield_hex(b, 3, buf), 6);
  ck_assert(!memcmp(buf, "00ab7f", 6));
}
END_TEST

START_TEST(columns_and_values) {
  /* x first, then a, b, s in name order; short (3 rows) left out; a's
   * third value is a missing chunk (its fill value, masked); b's NaN
   * empty, its integral values with .0 */
  static const char want[] = "x,a,b,s\n"
                             "10,10.0,1.5,plain\n"
                             "20,,,\"a,b\"\n"
                             "30,11.5,2.0,\"say \"\"hi\"\"\"\n"
                             "40,12.0,-0.0,\"cr\r\nlf\"\n"
                             "50,,1e+300,\n";
  check_table("x.csv", want, sizeof want - 1);
  /* one column: a table of y alone (the 2-D m is no column) */
  check_table("y.csv", "y\ntrue\nfalse\n", 13);
}
END_TEST

START_TEST(structured_fields) {
  static const char want[] =
      "rec.id,rec.v,rec.name,rec.pos.x,rec.pos.y,rec.q,rec.t\n"
      "1,2.0,\"a,b\",7,258,-1 3,\n"
      "-5,,\"\xc3\xa9\n\",255,-2,0 0,1970-01-02T00:00:00\n"
      "0,0.0,,0,0,0 0,1970-01-01T00:00:00\n";
  check_table("g/r.csv", want, sizeof want - 1);
}
END_TEST

/* info.txt and D.csv agree on a dimension's size when arrays give the
 * name several lengths (kerchunk's phony_dim_N): the table's rows (its
 * first 1-D array in name order, lat: 4, not data's 6), and info.txt says
 * which arrays give another length and which the table leaves out. */
START_TEST(phony_dims_agree) {
  static const char csv[] = "lat,lon\n-45.0,0\n-15.0,90\n15.0,180\n45.0,270\n";
  check_table("p/phony_dim_0.csv", csv, sizeof csv - 1);
  struct engine *e = open_engine(0);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "p/phony_dim_1.csv", &ent, &err), -ENOENT);
  char *text;
  size_t len;
  ck_assert_int_eq(info_text(e, node_get(e->nodes, "p"), &text, &len, &err), 0);
  static const char want[] =
      "dimensions: 2\n"
      "  phony_dim_0 = 4\n"
      "    other lengths: data (6), time (6)\n"
      "    left out of phony_dim_0.csv: time (length 6), zz (no views)\n"
      "  phony_dim_1 = 3\n"
      "variables: 5\n";
  ck_assert_msg(strstr(text, want), "info.txt:\n%s", text);
  free(text);
  engine_free(e);
}
END_TEST

/* Collects listed names into one string. */
static int collect(void *ud, const char *name, int is_dir) {
  (void)is_dir;
  strcat(ud, name);
  strcat(ud, " ");
  return 0;
}

START_TEST(listed_resolved_and_shadowed) {
  struct engine *e = open_engine(0);
  struct zerr err = {0};
  char names[4096] = " ";
  ck_assert_int_eq(ns_list(e, "", collect, names, &err), 0);
  ck_assert_ptr_nonnull(strstr(names, " x.csv "));
  ck_assert_ptr_nonnull(strstr(names, " y.csv "));
  ck_assert_ptr_nonnull(strstr(names, " z.csv "));
  ck_assert_ptr_null(strstr(strstr(names, " z.csv ") + 1, " z.csv "));
  struct ns_entry ent;
  ck_assert_int_eq(ns_resolve(e, "z.csv", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW); /* the stored file wins */
  ck_assert_int_eq(ns_resolve(e, "q.csv", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, "x/x.csv", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, ".csv", &ent, &err), -ENOENT);
  names[1] = '\0';
  ck_assert_int_eq(ns_list(e, "x", collect, names, &err), 0);
  ck_assert_ptr_null(strstr(names, ".csv"));
  engine_free(e);
}
END_TEST

/* A group "big": i (0..rows-1, chunks of 3000) and v = i/2 (chunks of
 * 777), so that blocks of rows and chunks of columns cross. */
static char *put_big(size_t rows, size_t *len) {
  char shape[32], rel[64];
  snprintf(shape, sizeof shape, "[%zu]", rows);
  put_text("big/.zgroup", "{\"zarr_format\":2}");
  put_v2("big/i", shape, "[3000]", "<i4", "null", "null", "[\"i\"]", "");
  put_v2("big/v", shape, "[777]", "<f8", "\"NaN\"", "null", "[\"i\"]", "");
  int32_t *iv = malloc(rows * sizeof *iv);
  double *vv = malloc(rows * sizeof *vv);
  for (size_t k = 0; k < rows; k++) {
    iv[k] = (int32_t)k;
    vv[k] = (double)k / 2;
  }
  for (size_t c = 0; c * 3000 < rows; c++) {
    int32_t chunk[3000] = {0};
    size_t n = rows - c * 3000 < 3000 ? rows - c * 3000 : 3000;
    memcpy(chunk, iv + c * 3000, n * sizeof *iv);
    snprintf(rel, sizeof rel, "big/i/%zu", c);
    put_file(rel, chunk, sizeof chunk);
  }
  for (size_t c = 0; c * 777 < rows; c++) {
    double chunk[777] = {0};
    size_t n = rows - c * 777 < 777 ? rows - c * 777 : 777;
    memcpy(chunk, vv + c * 777, n * sizeof *vv);
    snprintf(rel, sizeof rel, "big/v/%zu", c);
    put_file(rel, chunk, sizeof chunk);
  }
  char *want = malloc(rows * 32 + 16);
  size_t w = (size_t)sprintf(want, "i,v\n");
  for (size_t k = 0; k < rows; k++)
    w += (size_t)sprintf(want + w, "%zu,%zu.%s\n", k, k / 2, k % 2 ? "5" : "0");
  free(iv);
  free(vv);
  *len = w;
  return want;
}

START_TEST(blocks_of_rows) {
  size_t wlen;
  char *want = put_big(10000, &wlen);
  check_table("big/i.csv", want, wlen);
  /* reads that start inside a block and cross into the next ones */
  struct engine *e = open_engine(0);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "big/i.csv", &ent, &err), 0);
  char buf[70000];
  for (size_t off = 0; off < wlen; off += 9973) {
    long n = ns_read_view(e, &ent, off, sizeof buf, buf, NULL, &err);
    size_t exp = wlen - off < sizeof buf ? wlen - off : sizeof buf;
    ck_assert_int_eq(n, (long)exp);
    ck_assert(!memcmp(buf, want + off, exp));
  }
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(lazy_size_learned) {
  size_t wlen;
  char *want = put_big(5000, &wlen);
  struct engine *e = open_engine(1);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size = 1;
  ck_assert_int_eq(ns_resolve(e, "big/i.csv", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, 0); /* not known without rendering */
  char buf[4096];
  ck_assert_int_eq(ns_read_view(e, &ent, 0, 4, buf, NULL, &err), 4);
  ck_assert(!memcmp(buf, "i,v\n", 4));
  /* head: the first block of rows only */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 1);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, 0);
  /* a reader going through to the end (as with direct I/O) */
  uint64_t off = 0;
  long n;
  while ((n = ns_read_view(e, &ent, off, sizeof buf, buf, NULL, &err)) > 0) {
    ck_assert(!memcmp(buf, want + off, (size_t)n));
    off += (uint64_t)n;
  }
  ck_assert_int_eq(n, 0);
  ck_assert_uint_eq(off, wlen);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, wlen); /* learned by the reader */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 2);
  engine_free(e);
  free(want);
}
END_TEST

/* A lazy-size reader going through a table of more than WALK_STRIDE
 * blocks (each read walks from the nearest remembered block start), then
 * reads at offsets out of order. */
START_TEST(long_walk) {
  size_t wlen;
  char *want = put_big(300000, &wlen);
  struct engine *e = open_engine(1);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "big/i.csv", &ent, &err), 0);
  static char buf[65536];
  uint64_t off = 0;
  long n;
  while ((n = ns_read_view(e, &ent, off, sizeof buf, buf, NULL, &err)) > 0) {
    ck_assert(!memcmp(buf, want + off, (size_t)n));
    off += (uint64_t)n;
  }
  ck_assert_int_eq(n, 0);
  ck_assert_uint_eq(off, wlen);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 300000 / 4096 + 1);
  for (uint64_t o = wlen - 1; o > 0; o = o * 7 / 11) {
    n = ns_read_view(e, &ent, o, 1000, buf, NULL, &err);
    size_t exp = wlen - o < 1000 ? wlen - o : 1000;
    ck_assert_int_eq(n, (long)exp);
    ck_assert(!memcmp(buf, want + o, exp));
  }
  uint64_t size;
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, wlen);
  engine_free(e);
  free(want);
}
END_TEST

/* A column whose fields are all empty (a float array never written, its
 * fill NaN) has no bytes at all in a block: rendering it copied zero
 * bytes from a NULL buffer (UBSan, issue 32 item 15). */
START_TEST(empty_column) {
  put_text("e/.zgroup", "{\"zarr_format\":2}");
  put_v2("e/x", "[2]", "[2]", "<i4", "null", "null", "[\"x\"]", "");
  int32_t x[2] = {1, 2};
  put_file("e/x/0", x, sizeof x);
  put_v2("e/nan", "[2]", "[2]", "<f8", "\"NaN\"", "null", "[\"x\"]", "");
  check_table("e/x.csv", "x,nan\n1,\n2,\n", 12);
  /* one column, all empty: each row is written "" */
  put_v2("e/only", "[2]", "[1]", "<f8", "\"NaN\"", "null", "[\"o\"]", "");
  check_table("e/o.csv", "only\n\"\"\n\"\"\n", 11);
}
END_TEST

/* A table whose columns have no stored chunk (arrays never written, of
 * 2^40 elements) has every row the same: its size is arithmetic, learned
 * from block 0, and a read at its end renders the last block alone (issue
 * 32 item 8: ls -l sat in D state while 2^40 rows were rendered). */
START_TEST(uniform_table) {
  put_text("u/.zgroup", "{\"zarr_format\":2}");
  put_v2("u/x", "[1099511627776]", "[1048576]", "<i4", "0", "null", "[\"u\"]",
         "");
  put_v2("u/y", "[1099511627776]", "[1048576]", "<f8", "\"NaN\"", "null",
         "[\"u\"]", "");
  uint64_t want = 4 + 2 * ((uint64_t)1 << 40); /* "x,y\n", then ",\n":
                                                 both fill values masked */
  for (int lazy = 0; lazy < 2; lazy++) {
    struct engine *e = open_engine(lazy);
    struct ns_entry ent;
    struct zerr err = {0};
    uint64_t size = 1;
    ck_assert_int_eq(ns_resolve(e, "u/u.csv", &ent, &err), 0);
    ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
    ck_assert_uint_eq(size, (lazy ? 0 : want)); /* lazy: nothing rendered */
    ck_assert_int_eq(ns_read_direct(e, &ent, &err), lazy);
    char buf[64];
    ck_assert_int_eq(ns_read_view(e, &ent, 0, 10, buf, NULL, &err), 10);
    ck_assert(!memcmp(buf, "x,y\n,\n,\n,\n", 10));
    ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
    ck_assert_uint_eq(size, want); /* known once found arithmetic */
    ck_assert_int_eq(ns_read_view(e, &ent, want - 5, 64, buf, NULL, &err), 5);
    ck_assert(!memcmp(buf, "\n,\n,\n", 5));
    ck_assert_int_eq(ns_read_view(e, &ent, want, 64, buf, NULL, &err), 0);
    ck_assert_int_eq(
        ns_read_view(e, &ent, 4 + 2 * 4096 - 1, 4, buf, NULL, &err),
        4); /* across blocks 0 and 1 */
    ck_assert(!memcmp(buf, "\n,\n,", 4));
    ck_assert_uint_le(engine_fills(e, ELEVEL_TABLE_BLOCK), 3);
    engine_free(e);
  }
}
END_TEST

/* A table that is not arithmetic and has more than TABLE_EXACT_FIELDS
 * fields: stat shows 0 rather than render it, the file is read with
 * direct I/O, and a read of its head renders the first block only. */
START_TEST(large_table_deferred) {
  put_text("w/.zgroup", "{\"zarr_format\":2}");
  put_v2("w/p", "[33554433]", "[1000]", "<i4", "0", "null", "[\"w\"]", "");
  put_v2("w/q", "[33554433]", "[1000]", "<i4", "0", "null", "[\"w\"]", "");
  int32_t p[1000];
  for (int i = 0; i < 1000; i++)
    p[i] = i + 1; /* 0, the fill value, is masked: an empty field */
  put_file("w/p/0", p, sizeof p);
  struct engine *e = open_engine(0);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size = 1;
  ck_assert_int_eq(ns_resolve(e, "w/w.csv", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, 0);
  ck_assert_int_eq(ns_read_direct(e, &ent, &err), 1);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 0);
  char buf[16];
  ck_assert_int_eq(ns_read_view(e, &ent, 0, 14, buf, NULL, &err), 14);
  ck_assert(!memcmp(buf, "p,q\n1.0,\n2.0,\n", 14)); /* masked: floats */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 1);
  engine_free(e);
}
END_TEST

/* The suite. */
static Suite *table_suite(void) {
  Suite *s = suite_create("table");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, field_rules);
  tcase_add_test(tc, columns_and_values);
  tcase_add_test(tc, structured_fields);
  tcase_add_test(tc, phony_dims_agree);
  tcase_add_test(tc, listed_resolved_and_shadowed);
  tcase_add_test(tc, blocks_of_rows);
  tcase_add_test(tc, lazy_size_learned);
  tcase_add_test(tc, long_walk);
  tcase_add_test(tc, empty_column);
  tcase_add_test(tc, uniform_table);
  tcase_add_test(tc, large_table_deferred);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(table_suite()); }
