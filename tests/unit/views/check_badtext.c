/* check_badtext.c - what the text views show where the data is not what
 * text can hold, driven through the engine without a mount, and the one
 * log line per chunk that says so (issue 32, items 7, 14 and 17):
 *   - string chunks holding bytes that are not UTF-8 (a `zarrs.vlen`
 *     array whose sizes come from the index alone and whose reads fetch
 *     ranges, a 2-D one for rows.csv, a V2 vlen-utf8 one decoded whole,
 *     and the group's D.csv of the first): each such byte is '?', the
 *     text's size is still the bytes' count plus one newline per element
 *     (stat equals what a read gives, in pieces of 1 byte to 1 MiB), the
 *     text is valid UTF-8, and one line per chunk names the chunk's key
 *     (none for the chunks that are valid);
 *   - CF times: `nanoseconds since` decoded as xarray decodes it, a time
 *     beyond what xarray represents shown as the stored number with one
 *     line naming the chunk;
 *   - names from the store in info.txt, `zarrfs info` and the
 *     user.zarr.* attributes: an attribute, dimension, member or field
 *     name (or a data type, a path) that could break its line is written
 *     as a JSON string, so `evil\nnode_type: group` makes no line of its
 *     own. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/engine/node.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/info.h"
#include "../../../src/util/logonce.h"
#include "../teststore.h"
#include "../testutil.h"

static char tmpdir[64];

/* Lines the engine logged (the test's sink). */
struct cap {
  char text[16384];
  size_t len;
};

/* The sink: keep each line, a newline after it. */
static void cap_sink(void *ud, enum zlog_level lvl, const char *line) {
  (void)lvl;
  struct cap *c = ud;
  size_t n = strlen(line);
  if (c->len + n + 1 < sizeof c->text) {
    memcpy(c->text + c->len, line, n);
    c->text[c->len + n] = '\n';
    c->len += n + 1;
    c->text[c->len] = '\0';
  }
}

/* Lines of the capture that hold both a and b. */
static int cap_count(const struct cap *c, const char *a, const char *b) {
  int k = 0;
  for (const char *p = c->text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char line[2048];
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    k += strstr(line, a) && strstr(line, b);
    p += n + (nl != NULL);
  }
  return k;
}

/* Write a file under tmpdir. */
static void put_file(const char *rel, const void *data, size_t len) {
  ts_put_file(tmpdir, rel, data, len);
}

/* Write text. */
static void put_text(const char *rel, const char *text) {
  put_file(rel, text, strlen(text));
}

/* A zarrs.vlen chunk (index at the start, u64 offsets, data plain) of n
 * strings. */
static void put_vlen_chunk(const char *rel, const char *const *s, int n) {
  uint8_t buf[1024];
  uint64_t L = 8 * (uint64_t)(n + 1), off = 0;
  memcpy(buf, &L, 8);
  size_t at = 8 + (size_t)L;
  for (int i = 0; i <= n; i++) {
    memcpy(buf + 8 + 8 * i, &off, 8);
    if (i < n) {
      size_t l = strlen(s[i]);
      memcpy(buf + at, s[i], l);
      at += l;
      off += l;
    }
  }
  put_file(rel, buf, at);
}

/* A vlen-utf8 chunk (V2, numcodecs): a u32 count, each element as a u32
 * length and its bytes. */
static void put_vlen_utf8_chunk(const char *rel, const char *const *s, int n) {
  uint8_t buf[1024];
  uint32_t c = (uint32_t)n;
  memcpy(buf, &c, 4);
  size_t at = 4;
  for (int i = 0; i < n; i++) {
    uint32_t l = (uint32_t)strlen(s[i]);
    memcpy(buf + at, &l, 4);
    memcpy(buf + at + 4, s[i], l);
    at += 4 + l;
  }
  put_file(rel, buf, at);
}

#define VLEN_CODECS                                                            \
  "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{\"name\":"  \
  "\"bytes\",\"configuration\":{\"endian\":\"little\"}}],\"data_codecs\":[{"   \
  "\"name\":\"bytes\"}],\"index_data_type\":\"uint64\",\"index_location\":"    \
  "\"start\"}}]"

/* The store (see the file comment). */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-badtext-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_text("zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
  /* s: chunk 0 valid (a newline and an é in it), chunk 1 not UTF-8 */
  put_text("s/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[6],"
           "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[3]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":\"\",\"dimension_names\":"
           "[\"x\"],\"codecs\":" VLEN_CODECS "}");
  static const char *const s0[] = {"\xc3\xa9t\xc3\xa9", "x\ny", "plain"};
  static const char *const s1[] = {"ok",
                                   "b\xff"
                                   "d",
                                   "\xe2\x82"};
  put_vlen_chunk("s/c/0", s0, 3);
  put_vlen_chunk("s/c/1", s1, 3);
  put_text("v/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[6],"
           "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[6]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":0,\"dimension_names\":"
           "[\"x\"],\"codecs\":[{\"name\":\"bytes\",\"configuration\":"
           "{\"endian\":\"little\"}}]}");
  int32_t v[6] = {0, 1, 2, 3, 4, 5};
  put_file("v/c/0", v, sizeof v);
  /* m: 2 x 3 strings, one chunk: quoting and bytes that are not UTF-8 */
  put_text("m/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2,3],"
           "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[2,3]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":\"\",\"codecs\":" VLEN_CODECS
           "}");
  static const char *const m0[] = {"a,\xc0",           "\x80",          "q",
                                   "\xf0\x9f\x98\x80", "z\xed\xa0\x80", "\""};
  put_vlen_chunk("m/c/0/0", m0, 6);
  /* l: V2 vlen-utf8, decoded whole; chunk 0 not UTF-8 */
  put_text("l/.zarray",
           "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"|O\","
           "\"fill_value\":null,\"order\":\"C\",\"compressor\":null,"
           "\"filters\":[{\"id\":\"vlen-utf8\"}]}");
  static const char *const l0[] = {"\xff\xfe", "ok"}, *const l1[] = {"a", "b"};
  put_vlen_utf8_chunk("l/0", l0, 2);
  put_vlen_utf8_chunk("l/1", l1, 2);
  /* t: days since 2000 with a count past what xarray holds; ns: in ns */
  put_text("t/.zarray",
           "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],\"dtype\":\"<f8\","
           "\"fill_value\":null,\"order\":\"C\",\"compressor\":null,"
           "\"filters\":null}");
  put_text("t/.zattrs", "{\"units\":\"days since 2000-01-01\"}");
  double t[3] = {1, 1e17, 2.5};
  put_file("t/0", t, sizeof t);
  put_text("ns/.zarray",
           "{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],\"dtype\":\"<i8\","
           "\"fill_value\":null,\"order\":\"C\",\"compressor\":null,"
           "\"filters\":null}");
  put_text("ns/.zattrs", "{\"units\":\"nanoseconds since 2000-01-01\"}");
  int64_t ns[2] = {1, -1};
  put_file("ns/0", ns, sizeof ns);
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* Engine over tmpdir, logging into c. */
static struct engine *open_engine(struct cap *c) {
  struct engine *e = ts_open_engine(tmpdir);
  c->len = 0;
  c->text[0] = '\0';
  logonce_set_sink(e->log, cap_sink, c);
  return e;
}

/* Read a whole view in pieces of `step` bytes: its size (stat) must be
 * exactly what the reads give. */
static char *read_all(struct engine *e, const char *path, size_t step) {
  struct zerr err = {0};
  char *text = ts_view_text(e, path, step, &err);
  ck_assert_msg(text != NULL, "%s: %s", path, err.msg);
  return text;
}

/* Every piece size gives want, valid UTF-8, with a fresh engine each and
 * one engine throughout; each fresh engine logs `lines` lines naming key
 * with msg (none when key is NULL). */
static void check_view(const char *path, const char *want, const char *key,
                       const char *msg, int lines) {
  static const size_t steps[] = {1, 2, 3, 5, 7, 64, 1u << 20};
  struct cap shared_log, log;
  struct engine *shared = open_engine(&shared_log);
  for (size_t i = 0; i < sizeof steps / sizeof *steps; i++) {
    struct engine *e = open_engine(&log);
    char *got = read_all(e, path, steps[i]);
    ck_assert_msg(!strcmp(got, want), "%s step %zu:\n%s\nwant:\n%s", path,
                  steps[i], got, want);
    ck_assert_msg(testutil_utf8_ok((const uint8_t *)got, strlen(got)),
                  "%s: not UTF-8", path);
    free(got);
    if (key)
      ck_assert_msg(cap_count(&log, key, msg) == lines,
                    "%s step %zu: %d lines on %s, want %d; the log:\n%s", path,
                    steps[i], cap_count(&log, key, msg), key, lines, log.text);
    engine_free(e);
    got = read_all(shared, path, steps[i]);
    ck_assert_str_eq(got, want);
    free(got);
  }
  engine_free(shared);
}

#define NOT_UTF8 "not UTF-8"

START_TEST(vlen_sizes_from_index_reads_by_range) {
  check_view("s/values.txt", "\xc3\xa9t\xc3\xa9\nx y\nplain\nok\nb?d\n??\n",
             ": s/c/1:", NOT_UTF8, 1);
  check_view("s/c/1.txt", "ok\nb?d\n??\n", ": s/c/1:", NOT_UTF8, 1);
  /* the valid chunk says nothing */
  check_view("s/c/0.txt", "\xc3\xa9t\xc3\xa9\nx y\nplain\n",
             ": s/c/0:", NOT_UTF8, 0);
  check_view("s/values.txt", "\xc3\xa9t\xc3\xa9\nx y\nplain\nok\nb?d\n??\n",
             ": s/c/0:", NOT_UTF8, 0);
}
END_TEST

START_TEST(rows_csv_quoted_and_fixed) {
  check_view("m/rows.csv", "\"a,?\",?,q\n\xf0\x9f\x98\x80,z???,\"\"\"\"\n",
             ": m/c/0/0:", NOT_UTF8, 1);
  check_view("m/values.txt", "a,?\n?\nq\n\xf0\x9f\x98\x80\nz???\n\"\n",
             ": m/c/0/0:", NOT_UTF8, 1);
}
END_TEST

START_TEST(vlen_utf8_decoded_whole) {
  check_view("l/values.txt", "??\nok\na\nb\n", ": l/0:", NOT_UTF8, 1);
  check_view("l/values.txt", "??\nok\na\nb\n", ": l/1:", NOT_UTF8, 0);
  check_view("l/0.txt", "??\nok\n", ": l/0:", NOT_UTF8, 1);
}
END_TEST

START_TEST(table_fields_fixed) {
  check_view(
      "x.csv",
      "s,v\n\xc3\xa9t\xc3\xa9,0\n\"x\ny\",1\nplain,2\nok,3\nb?d,4\n??,5\n",
      ": s/c/1:", NOT_UTF8, 1);
}
END_TEST

START_TEST(cf_times_beyond_xarray_logged) {
  check_view("t/values.cf.txt",
             "2000-01-02T00:00:00\n1e+17\n"
             "2000-01-03T12:00:00\n",
             ": t/0:", "beyond what xarray represents", 1);
  check_view("t/values.txt", "1\n1e+17\n2.5\n", ": t/0:", "beyond", 0);
}
END_TEST

START_TEST(cf_nanoseconds_since) {
  check_view("ns/values.cf.txt",
             "2000-01-01T00:00:00.000000001\n1999-12-31T23:59:59.999999999\n",
             ": ns", "CF", 0);
}
END_TEST

/* ---- names in info.txt ---- */

#define EVIL "evil\\nnode_type: group"

/* A store whose names try to inject lines. */
static void setup_names(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-badname-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_text("zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\","
                        "\"attributes\":{\"" EVIL "\":1}}");
  put_text("a/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],"
           "\"data_type\":\"int8\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[{\"name\":"
           "\"bytes\"}],\"dimension_names\":[\"x\\nnode_type: group\"],"
           "\"attributes\":{\"" EVIL "\":1,\"tab\\there\":2,"
           "\"plain name\":3,\"k: v\":4,\"\\u2028\":5,\"caf\u00e9\":6}}");
  put_text("m\nnode_type: group/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"group\"}");
  put_text("b/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2],"
           "\"data_type\":\"int8\\nnode_type: group\",\"chunk_grid\":{"
           "\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[2]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
           "\"codecs\":[{\"name\":\"bytes\"}]}");
}

/* Lines of text that start with prefix. */
static int lines_starting(const char *text, const char *prefix) {
  int k = 0;
  for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    k += !strncmp(p, prefix, strlen(prefix));
  return k;
}

/* info.txt of node path, NUL-terminated. */
static char *info_of(struct engine *e, const char *path) {
  char *out = NULL;
  size_t len;
  struct zerr err = {0};
  const struct znode *n = node_get(e->nodes, path);
  ck_assert_msg(info_text(e, n, &out, &len, &err) == 0, "%s: %s", path,
                err.msg);
  ck_assert_uint_eq(strlen(out), len);
  return out;
}

START_TEST(names_cannot_make_lines) {
  struct cap log;
  struct engine *e = open_engine(&log);
  char *a = info_of(e, "a");
  ck_assert_msg(lines_starting(a, "node_type:") == 1, "%s", a);
  ck_assert_msg(strstr(a, "\n  \"evil\\nnode_type: group\": 1\n"), "%s", a);
  ck_assert_msg(strstr(a, "\n  \"tab\\there\": 2\n"), "%s", a);
  ck_assert_msg(strstr(a, "\n  plain name: 3\n"), "%s", a);
  ck_assert_msg(strstr(a, "\n  \"k: v\": 4\n"), "%s", a);
  ck_assert_msg(strstr(a, "\n  \"\\u2028\": 5\n"), "%s", a);
  ck_assert_msg(strstr(a, "\n  caf\xc3\xa9: 6\n"), "%s", a);
  ck_assert_msg(strstr(a, "\npath: /a\n") || !strncmp(a, "path: /a\n", 9), "%s",
                a);
  free(a);
  char *g = info_of(e, "");
  ck_assert_msg(lines_starting(g, "node_type:") == 1, "%s", g);
  ck_assert_msg(strstr(g, "\n  \"x\\nnode_type: group\" = 2\n"), "%s", g);
  ck_assert_msg(strstr(g, "\n  a(\"x\\nnode_type: group\")\n"), "%s", g);
  ck_assert_msg(strstr(g, "\n  \"m\\nnode_type: group\"\n"), "%s", g);
  ck_assert_msg(strstr(g, "\n  \"evil\\nnode_type: group\": 1\n"), "%s", g);
  free(g);
  char *m = info_of(e, "m\nnode_type: group");
  ck_assert_msg(!strncmp(m, "path: \"/m\\nnode_type: group\"\n", 29), "%s", m);
  ck_assert_msg(lines_starting(m, "node_type:") == 1, "%s", m);
  free(m);
  /* an unknown data type named by the store: the broken node's reason */
  char *b = info_of(e, "b");
  ck_assert_msg(lines_starting(b, "node_type:") == 1, "%s", b);
  free(b);
  /* the extended attribute shows a data type as info.txt does */
  char *v = NULL;
  size_t vl;
  const struct znode *n = node_get(e->nodes, "a");
  ck_assert_int_eq(info_xattr(n, "user.zarr.attributes", &v, &vl), 0);
  ck_assert_ptr_null(memchr(v, '\n', vl));
  free(v);
  engine_free(e);
}
END_TEST

int main(void) {
  Suite *s = suite_create("badtext");
  TCase *tc = tcase_create("views");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, vlen_sizes_from_index_reads_by_range);
  tcase_add_test(tc, rows_csv_quoted_and_fixed);
  tcase_add_test(tc, vlen_utf8_decoded_whole);
  tcase_add_test(tc, table_fields_fixed);
  tcase_add_test(tc, cf_times_beyond_xarray_logged);
  tcase_add_test(tc, cf_nanoseconds_since);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  TCase *tn = tcase_create("names");
  tcase_add_checked_fixture(tn, setup_names, teardown);
  tcase_add_test(tn, names_cannot_make_lines);
  suite_add_tcase(s, tn);
  return testutil_run(s);
}
