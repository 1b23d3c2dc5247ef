/* check_struct.c - V2 structured data types: the descr list flattened into
 * leaf fields (offsets, item size, byte orders, subarrays, nested and
 * repeated records, numpy's names for padding), a table of hostile or
 * malformed lists that must be refused with a message naming the
 * problem, and the line a record renders to (fs/text/rstruct.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/text/rstruct.h"
#include "../../../src/zarr/dtype_struct.h"
#include "../../../src/zarr/meta.h"
#include "../testutil.h"

/* Parse a descr given as JSON text, expecting success. */
static struct dtype_struct *parse_ok(const char *text, struct dtype *dt) {
  json_error_t je;
  json_t *j = json_loads(text, 0, &je);
  ck_assert_msg(j != NULL, "bad JSON in the test: %s", text);
  struct dtype_struct *st = NULL;
  struct zerr err = {0};
  int rc = dtype_struct_parse(j, dt, &st, &err);
  json_decref(j);
  ck_assert_msg(rc == 0, "rejected %s: %s", text, err.msg);
  ck_assert_int_eq(dt->kind, DT_STRUCT);
  ck_assert_ptr_eq(dt->st, st);
  ck_assert_uint_eq(dt->size, st->itemsize);
  return st;
}

START_TEST(layout) {
  struct dtype dt;
  struct dtype_struct *st =
      parse_ok("[[\"id\",\"<i4\"],[\"score\",\">f8\"],[\"tag\",\"|S3\"],"
               "[\"name\",\"<U4\"],[\"vec\",\"<f4\",[2,3]],"
               "[\"pos\",[[\"x\",\">i2\"],[\"y\",\"|u1\"]]],[\"ok\",\"|b1\"],"
               "[\"when\",\"<M8[s]\"],[\"pts\",[[\"a\",\">u2\"]],[2]]]",
               &dt);
  static const struct {
    const char *name;
    size_t offset;
    enum dtype_kind kind;
    char endian;
    uint64_t count;
  } want[] = {
      {"id", 0, DT_INT32, 'l', 1},         {"score", 4, DT_FLOAT64, 'b', 1},
      {"tag", 12, DT_FIXED_BYTES, 0, 1},   {"name", 15, DT_FIXED_UTF32, 'l', 1},
      {"vec", 31, DT_FLOAT32, 'l', 6},     {"pos.x", 55, DT_INT16, 'b', 1},
      {"pos.y", 57, DT_UINT8, 0, 1},       {"ok", 58, DT_BOOL, 0, 1},
      {"when", 59, DT_DATETIME64, 'l', 1}, {"pts[0].a", 67, DT_UINT16, 'b', 1},
      {"pts[1].a", 69, DT_UINT16, 'b', 1}};
  ck_assert_uint_eq(st->nfields, sizeof want / sizeof *want);
  for (size_t i = 0; i < st->nfields; i++) {
    const struct dtype_field *f = &st->fields[i];
    ck_assert_str_eq(f->name, want[i].name);
    ck_assert_uint_eq(f->offset, want[i].offset);
    ck_assert_int_eq(f->type.kind, want[i].kind);
    ck_assert_int_eq(f->endian, want[i].endian);
    ck_assert_uint_eq(f->count, want[i].count);
  }
  ck_assert_int_eq(st->fields[4].ndim, 2);
  ck_assert_uint_eq(st->fields[4].shape[1], 3);
  ck_assert_str_eq(st->fields[4].typestr, "<f4");
  ck_assert_uint_eq(st->itemsize, 71);
  dtype_struct_free(st);

  /* numpy's padding fields are named f<index>; [title, name] pairs give
   * the name; an integer shape is one dimension; a 2-D subarray of
   * records is named by both indices. */
  st = parse_ok("[[\"a\",\"<i2\"],[\"\",\"|V2\"],[[\"T\",\"b\"],\">f4\"],"
                "[\"c\",\"|u1\",3],[\"r\",[[\"x\",\"|i1\"]],[2,2]]]",
                &dt);
  ck_assert_uint_eq(st->nfields, 8);
  ck_assert_str_eq(st->fields[1].name, "f1");
  ck_assert_int_eq(st->fields[1].type.kind, DT_RAW);
  ck_assert_str_eq(st->fields[2].name, "b");
  ck_assert_uint_eq(st->fields[3].count, 3);
  ck_assert_str_eq(st->fields[7].name, "r[1,1].x");
  ck_assert_uint_eq(st->fields[7].offset, 14);
  ck_assert_uint_eq(st->itemsize, 15);
  dtype_struct_free(st);
  dtype_struct_free(NULL);
}
END_TEST

/* A list nested `depth` levels deep around one int8 field. */
static char *nested(int depth) {
  static char buf[4096];
  buf[0] = 0;
  for (int i = 0; i < depth - 1; i++)
    strcat(buf, "[[\"n\",");
  strcat(buf, "[[\"v\",\"|i1\"]]");
  for (int i = 0; i < depth - 1; i++)
    strcat(buf, "]]");
  return buf;
}

/* n fields "f0".."f<n-1>" of type t. */
static char *many(int n, const char *t) {
  size_t cap = (size_t)n * 48 + 8;
  char *buf = malloc(cap);
  ck_assert_ptr_nonnull(buf);
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(buf + len, cap - len, "%s[\"g%d\",\"%s\"]",
                            i ? "," : "", i, t);
  snprintf(buf + len, cap - len, "]");
  return buf;
}

START_TEST(hostile) {
  struct dtype dt;
  struct dtype_struct *st = parse_ok(nested(DSTRUCT_MAX_DEPTH), &dt);
  ck_assert_str_eq(st->fields[0].name, "n.n.n.n.n.n.n.v");
  dtype_struct_free(st);
  char *four_k = many(DSTRUCT_MAX_FIELDS, "|u1");
  dtype_struct_free(parse_ok(four_k, &dt));
  free(four_k);
  /* 64 x 64 repeated records: exactly the leaf limit */
  dtype_struct_free(
      parse_ok("[[\"a\",[[\"b\",[[\"c\",\"|i1\"]],[64]]],[64]]]", &dt));

  char *too_many = many(DSTRUCT_MAX_FIELDS + 1, "|u1");
  char *too_big = many(5, "|S262144");
  static char deep[4096];
  snprintf(deep, sizeof deep, "%s", nested(DSTRUCT_MAX_DEPTH + 1));
  const struct {
    const char *descr;
    const char *msg; /* a piece of the message */
  } bad[] = {
      {deep, "nested more than 8 deep"},
      {too_many, "more than 4096 fields"},
      {too_big, "more than 1048576 bytes"},
      {"[[\"a\",[[\"b\",[[\"c\",\"|i1\"]],[64]]],[65]]]", "more than 4096"},
      {"[[\"a\",\"<f8\",[1024,1024,2]]]", "at most 1048576 values"},
      {"[[\"a\",\"<f8\",[131073]]]", "more than 1048576 bytes"},
      {"[[\"a\",\"<f8\",[0]]]", "positive"},
      {"[[\"a\",\"<f8\",[-1]]]", "positive"},
      {"[[\"a\",\"<f8\",[1,1,1,1,1,1,1,1,1]]]", "at most 8 integers"},
      {"[[\"a\",\"<f8\",\"2\"]]", "shape"},
      {"[[\"a\",\"<i4\"],[\"a\",\"<f8\"]]", "'a' appears twice"},
      {"[[\"\",\"<i4\"],[\"f0\",\"<f8\"]]", "'f0' appears twice"},
      {"[[\"a\",\"<f16\"]]", "unsupported type '<f16'"},
      {"[[\"a\",\"<i3\"]]", "unsupported type"},
      {"[[\"a\",\"|O\"]]", "object fields"},
      {"[[\"a\",\"<m8[ps]\"]]", "unsupported type"},
      {"[[\"a\",\"\"]]", "unsupported type"},
      {"[[\"a\",7]]", "must be a string or a list"},
      {"[[\"a\"]]", "[name, type]"},
      {"[[\"a\",\"<i4\",[1],4]]", "[name, type]"},
      {"[[1,\"<i4\"]]", "[name, type]"},
      {"[\"a\"]", "[name, type]"},
      {"[]", "no fields"},
      {"[[\"a\",[]]]", "field 'a' has no fields"},
      {"{\"a\":\"<i4\"}", "list of fields"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_error_t je;
    json_t *j = json_loads(bad[i].descr, JSON_DECODE_ANY, &je);
    ck_assert_msg(j != NULL, "bad JSON in the test: %.80s", bad[i].descr);
    struct zerr err = {0};
    st = (struct dtype_struct *)1;
    int rc = dtype_struct_parse(j, &dt, &st, &err);
    json_decref(j);
    ck_assert_msg(rc < 0, "accepted %.80s", bad[i].descr);
    ck_assert_ptr_null(st);
    ck_assert_msg(strstr(err.msg, bad[i].msg) != NULL,
                  "%.80s: message '%s' lacks '%s'", bad[i].descr, err.msg,
                  bad[i].msg);
  }
  free(too_many);
  free(too_big);
}
END_TEST

/* The line of one record given as bytes. */
static void check_line(const char *descr, const void *rec, size_t n,
                       const char *want) {
  struct dtype dt;
  struct dtype_struct *st = parse_ok(descr, &dt);
  ck_assert_uint_eq(dt.size, n);
  struct zbuf out;
  zbuf_init(&out, 1 << 20);
  struct zerr err = {0};
  ck_assert_int_eq(rstruct_element(&dt, rec, &out, &err), 0);
  ck_assert_msg(out.len == strlen(want) && !memcmp(out.data, want, out.len),
                "%s: got '%.*s', want '%s'", descr, (int)out.len,
                (const char *)out.data, want);
  zbuf_free(&out);
  dtype_struct_free(st);
}

START_TEST(lines) {
  /* <i4 -2, >i4 -2, >f8 0.1, |b1 1, <f2 1.5 */
  static const uint8_t a[] = {0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                              0xfe, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99,
                              0x99, 0x9a, 0x01, 0x00, 0x3e};
  check_line("[[\"l\",\"<i4\"],[\"b\",\">i4\"],[\"f\",\">f8\"],"
             "[\"ok\",\"|b1\"],[\"h\",\"<f2\"]]",
             a, sizeof a, "-2\t-2\t0.1\ttrue\t1.5");
  /* S trailing NULs dropped (hex), V kept whole, U little and big endian
   * with a tab and a newline shown as spaces, a non-character as U+FFFD */
  static const uint8_t s[] = {'a', 0,    'b', 0,                      /* |S4 */
                              0,   0,    0,   1,                      /* |V4 */
                              'h', 0,    0,   0,    '\t', 0, 0, 0,    /* <U2 */
                              0,   0,    0,   0xe9, 0,    0, 0, '\n', /* >U3 */
                              0,   0x11, 0,   0};
  check_line("[[\"s\",\"|S4\"],[\"v\",\"|V4\"],[\"u\",\"<U2\"],"
             "[\"w\",\">U3\"]]",
             s, sizeof s, "610062\t00000001\th \t\xc3\xa9 \xef\xbf\xbd");
  /* a subarray of big-endian uint16, a nested record, a complex64, a
   * timedelta and a NaT datetime */
  uint8_t c[2 * 3 + 1 + 8 + 8 + 8];
  static const uint8_t sub[] = {0, 1, 1, 0, 0xff, 0xff, 0x80};
  memcpy(c, sub, sizeof sub);
  float re = 1, im = -2;
  memcpy(c + 7, &re, 4);
  memcpy(c + 11, &im, 4);
  int64_t td = 93600, nat = INT64_MIN;
  memcpy(c + 15, &td, 8);
  memcpy(c + 23, &nat, 8);
  check_line("[[\"x\",\">u2\",[3]],[\"n\",[[\"y\",\"|i1\"]]],"
             "[\"z\",\"<c8\"],[\"d\",\"<m8[s]\"],[\"t\",\"<M8[D]\"]]",
             c, sizeof c, "1 256 65535\t-128\t1-2j\tP1DT2H\tNaT");
}
END_TEST

/* A .zarray with a structured dtype: the type, its base64 fill, the
 * `bytes` codec without a byte order (each field keeps its own). */
START_TEST(v2_metadata) {
  const char *doc =
      "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":"
      "[[\"a\",\">i2\"],[\"b\",\"|S2\"]],\"order\":\"C\",\"compressor\":null,"
      "\"filters\":null,\"fill_value\":\"//9hYg==\"}";
  struct zmeta *m = NULL;
  struct zerr err = {0};
  ck_assert_int_eq(zmeta_parse_v2(doc, strlen(doc), &m, &err), 0);
  ck_assert_int_eq(m->dtype.kind, DT_STRUCT);
  ck_assert_ptr_eq(m->dtype.st, m->st);
  ck_assert_uint_eq(m->dtype.size, 4);
  ck_assert_uint_eq(m->fill_len, 4);
  ck_assert(!memcmp(m->fill,
                    "\xff\xff"
                    "ab",
                    4));
  char *c = json_dumps(m->codecs, JSON_COMPACT);
  ck_assert_str_eq(c, "[{\"name\":\"bytes\"}]");
  free(c);
  ck_assert_uint_eq(dtype_swap_unit(&m->dtype), 1);
  zmeta_free(m);
  /* null fill: a record of zeros */
  const char *nullfill =
      "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":"
      "[[\"a\",\"<f8\"]],\"fill_value\":null}";
  ck_assert_int_eq(zmeta_parse_v2(nullfill, strlen(nullfill), &m, &err), 0);
  ck_assert_uint_eq(m->fill_len, 8);
  zmeta_free(m);
  /* a refused list names the field */
  const char *deep = "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],"
                     "\"dtype\":[[\"a\",\"<q8\"]]}";
  ck_assert_int_lt(zmeta_parse_v2(deep, strlen(deep), &m, &err), 0);
  ck_assert_msg(strstr(err.msg, "field 'a'") != NULL, "%s", err.msg);
}
END_TEST

int main(void) {
  Suite *s = suite_create("struct");
  TCase *tc = tcase_create("struct");
  tcase_add_test(tc, layout);
  tcase_add_test(tc, hostile);
  tcase_add_test(tc, lines);
  tcase_add_test(tc, v2_metadata);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
