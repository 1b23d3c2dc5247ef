/* check_numcodecs.c - numcodecs.fixedscaleoffset (codecs/fixedscaleoffset.c),
 * the json2 object codec (codecs/json2.c), the ZEP0007 draft string layout
 * of the bytes codec (codecs/bytes.c) and blosc's partial decoding
 * (codecs/blosc.c).
 *
 * Hand-made chunks with known values, tables of bad configurations and bad
 * chunks (each an error with a message naming the problem), and counting byte
 * sources that prove partial decoding: a small read of a multi-block blosc
 * frame, or of a draft-layout chunk, reads a small part of the input. All
 * through the codec chain (codecs/chain.h); stores of these codecs read
 * through the engine: tests/unit/views/check_numcodecs_stores.c. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#if ZFS_WITH_BLOSC
#include <blosc.h>
#endif

#include "../../../codecs/chain.h"
#include "../../../codecs/codec.h"
#include "../../../src/util/log.h"
#include "../testchunk.h"
#include "../testcodec.h"
#include "../testutil.h"

#define MAXDEC ((size_t)1 << 28)

/* Build a chain and decode `src` with it; the first failure. */
static int decode_src(const char *json, const struct codec_spec *spec,
                      struct bytesrc *src, size_t max, struct abytes **out,
                      struct zerr *err) {
  struct chain *c = NULL;
  *out = NULL;
  int rc = tc_build(json, spec, &c, err);
  if (rc < 0)
    return rc;
  struct codec_env env = {max, NULL, 0};
  rc = chain_decode(c, spec, src, &env, out, err);
  chain_free(c);
  return rc;
}

/* Same, over static memory. */
static int decode(const char *json, const struct codec_spec *spec,
                  const void *enc, size_t len, struct abytes **out,
                  struct zerr *err) {
  struct bytesrc *src = bytesrc_from_static(enc, len);
  int rc = decode_src(json, spec, src, MAXDEC, out, err);
  bytesrc_unref(src);
  return rc;
}

/* All bytes of a source (caller frees). */
static uint8_t *all_bytes(struct bytesrc *s) {
  size_t n = (size_t)s->size;
  uint8_t *p = malloc(n + 1);
  struct zerr err = {0};
  ck_assert_msg(bytesrc_read_range(s, 0, n, p, &err) == 0, "%s", err.msg);
  return p;
}

/* Element i of a variable-length abytes as a NUL-terminated string. */
static char *var_elem(const struct abytes *a, uint64_t i) {
  size_t len = (size_t)(a->offsets[i + 1] - a->offsets[i]);
  char *s = malloc(len + 1);
  struct zerr err = {0};
  ck_assert_msg(bytesrc_read_range(a->data, a->offsets[i], len, s, &err) == 0,
                "%s", err.msg);
  s[len] = '\0';
  return s;
}

/* Check every element of a variable-length abytes against want[]. */
static void expect_strings(const struct abytes *a, const char *const *want,
                           uint64_t n) {
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, 0);
  for (uint64_t i = 0; i < n; i++) {
    char *got = var_elem(a, i);
    ck_assert_msg(!strcmp(got, want[i]), "element %llu: '%s', want '%s'",
                  (unsigned long long)i, got, want[i]);
    free(got);
  }
}

/* ---- a byte source that counts what is read from it ---- */

struct count_src {
  struct bytesrc base;
  const uint8_t *p; /* borrowed */
  uint64_t bytes, reads;
};

/* Copy and count. */
static int count_read(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                      struct zerr *err) {
  (void)err;
  struct count_src *c = (struct count_src *)s;
  memcpy(dst, c->p + off, len);
  c->bytes += len;
  c->reads++;
  return 0;
}

/* Free the wrapper only. */
static void count_destroy(struct bytesrc *s) { free(s); }

static const struct bytesrc_ops count_ops = {count_read, count_destroy};

/* A counting source over p[0, n) (p must outlive it). */
static struct count_src *count_new(const void *p, size_t n) {
  struct count_src *c = calloc(1, sizeof *c);
  c->base.ops = &count_ops;
  c->base.size = n;
  atomic_init(&c->base.refs, 1);
  c->p = p;
  return c;
}

/* ==== numcodecs.fixedscaleoffset ==== */

static const char FSO_F8_U1[] =
    "[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{\"offset\":"
    "1000,\"scale\":10,\"dtype\":\"<f8\",\"astype\":\"|u1\"}},\"bytes\"]";

/* numcodecs' own docstring example, and other type pairs. */
START_TEST(fso_hand_computed) {
  /* offset 1000, scale 10, f8 <- u1: 1000 + e / 10. */
  uint8_t enc[] = {0, 1, 2, 3, 4, 6, 7, 8, 9, 10};
  struct codec_spec s = tc_spec_1d(dtype_of(DT_FLOAT64), 10);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(decode(FSO_F8_U1, &s, enc, sizeof enc, &a, &err) == 0, "%s",
                err.msg);
  ck_assert_uint_eq(a->elsize, 8);
  double *d = (double *)all_bytes(a->fixed);
  for (int i = 0; i < 10; i++)
    ck_assert_msg(d[i] == enc[i] / 10.0 + 1000.0, "element %d: %.17g", i, d[i]);
  ck_assert(d[0] == 1000.0 && d[9] == 1001.0);
  free(d);
  abytes_free(a);

  /* f4 <- i2, scale 100 (float64 arithmetic, then float32). */
  int16_t e2[] = {-150, 0, 32767, 25};
  s = tc_spec_1d(dtype_of(DT_FLOAT32), 4);
  ck_assert_int_eq(
      decode("[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{"
             "\"offset\":0,\"scale\":100,\"dtype\":\"<f4\",\"astype\":\"<i2\"}}"
             ",{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
             &s, e2, sizeof e2, &a, &err),
      0);
  float *f = (float *)all_bytes(a->fixed);
  ck_assert(f[0] == -1.5f && f[1] == 0.0f && f[2] == (float)327.67 &&
            f[3] == 0.25f);
  free(f);
  abytes_free(a);

  /* f4 <- f4: float32 arithmetic (offset -0.5, scale 4). */
  float e3[] = {1.0f, -2.0f, 0.5f};
  s = tc_spec_1d(dtype_of(DT_FLOAT32), 3);
  ck_assert_int_eq(
      decode("[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{"
             "\"offset\":-0.5,\"scale\":4,\"dtype\":\"<f4\"}},{\"name\":"
             "\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
             &s, e3, sizeof e3, &a, &err),
      0);
  f = (float *)all_bytes(a->fixed);
  ck_assert(f[0] == -0.25f && f[1] == -1.0f && f[2] == -0.375f);
  free(f);
  abytes_free(a);

  /* i4 <- i2 with an offset; u8 from large float64; int64 through
   * float64 (2^53 + 1 rounds to 2^53, as numpy does). */
  int16_t e4[] = {5, -5, 0};
  s = tc_spec_1d(dtype_of(DT_INT32), 3);
  ck_assert_int_eq(
      decode("[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{"
             "\"offset\":1000,\"scale\":1,\"dtype\":\"int32\",\"astype\":"
             "\"int16\"}},{\"name\":\"bytes\",\"configuration\":{\"endian\":"
             "\"little\"}}]",
             &s, e4, sizeof e4, &a, &err),
      0);
  int32_t *i4 = (int32_t *)all_bytes(a->fixed);
  ck_assert(i4[0] == 1005 && i4[1] == 995 && i4[2] == 1000);
  free(i4);
  abytes_free(a);
  int64_t e5[] = {9007199254740993LL, -7};
  s = tc_spec_1d(dtype_of(DT_INT64), 2);
  ck_assert_int_eq(
      decode("[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":{"
             "\"offset\":0,\"scale\":2,\"dtype\":\"<i8\",\"astype\":null}},"
             "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
             &s, e5, sizeof e5, &a, &err),
      0);
  int64_t *i8 = (int64_t *)all_bytes(a->fixed);
  ck_assert(i8[0] == 4503599627370496LL && i8[1] == -3); /* -3.5 -> -3 */
  free(i8);
  abytes_free(a);
}
END_TEST

/* Bad configurations (refused at chain build) and values that do not fit
 * the data type (refused at decode). */
START_TEST(fso_bad_input) {
  static const struct {
    const char *cfg;
    enum dtype_kind kind;
    int rc;
    const char *msg;
  } cases[] = {
      {"{\"scale\":1,\"dtype\":\"<f8\"}", DT_FLOAT64, -EIO, "must be numbers"},
      {"{\"offset\":0,\"scale\":\"1\",\"dtype\":\"<f8\"}", DT_FLOAT64, -EIO,
       "must be numbers"},
      {"{\"offset\":0,\"scale\":0,\"dtype\":\"<f8\"}", DT_FLOAT64, -EIO,
       "non-zero"},
      {"{\"offset\":0,\"scale\":1}", DT_FLOAT64, -EIO, "'dtype'"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<c8\"}", DT_COMPLEX64, -ENOTSUP,
       "unsupported"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<f4\"}", DT_FLOAT64, -ENOTSUP,
       "unsupported"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<f8\",\"astype\":\"|b1\"}",
       DT_FLOAT64, -ENOTSUP, "unsupported"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<f8\",\"astype\":\"<f2\"}",
       DT_FLOAT64, -ENOTSUP, "unsupported"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<f8\",\"astype\":\">i2\"}",
       DT_FLOAT64, -ENOTSUP, "byte order"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<f8\",\"astype\":3}", DT_FLOAT64,
       -EIO, "'astype'"},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"<f8\",\"bogus\":1}", DT_FLOAT64,
       -EIO, "unknown configuration key 'bogus'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    char json[512];
    snprintf(json, sizeof json,
             "[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":%s},"
             "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
             cases[i].cfg);
    struct codec_spec s = tc_spec_1d(dtype_of(cases[i].kind), 4);
    struct chain *c = NULL;
    struct zerr err = {0};
    int rc = tc_build(json, &s, &c, &err);
    ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
  /* Decoded values out of the integer type's range: an error, not wrap. */
  static const struct {
    const char *json;
    enum dtype_kind kind;
    int16_t enc;
  } range[] = {
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"|i1\",\"astype\":\"<i2\"}",
       DT_INT8, 300},
      {"{\"offset\":0,\"scale\":1,\"dtype\":\"|u1\",\"astype\":\"<i2\"}",
       DT_UINT8, -2},
      {"{\"offset\":70000,\"scale\":1,\"dtype\":\"<u2\",\"astype\":\"<i2\"}",
       DT_UINT16, 0},
  };
  for (size_t i = 0; i < sizeof range / sizeof *range; i++) {
    char json[512];
    snprintf(json, sizeof json,
             "[{\"name\":\"numcodecs.fixedscaleoffset\",\"configuration\":%s},"
             "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
             range[i].json);
    struct codec_spec s = tc_spec_1d(dtype_of(range[i].kind), 1);
    struct abytes *a;
    struct zerr err = {0};
    int rc = decode(json, &s, &range[i].enc, 2, &a, &err);
    ck_assert_msg(rc == -EIO, "range case %zu: rc %d", i, rc);
    ck_assert_ptr_null(a);
    ck_assert_ptr_nonnull(strstr(err.msg, "does not fit"));
  }
  /* A chunk of the wrong size for astype is the bytes codec's error. */
  struct codec_spec s = tc_spec_1d(dtype_of(DT_FLOAT64), 10);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(decode(FSO_F8_U1, &s, "abc", 3, &a, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "expected 10"));
}
END_TEST

/* ==== msgpack2 ==== */

/* A msgpack2 chunk (len bytes) decoded for n string elements. */
static int msgpack_decode(const char *chunk, size_t len, uint64_t n,
                          struct abytes **a, struct zerr *err) {
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), n);
  return decode("[{\"name\":\"msgpack2\",\"configuration\":{\"raw\":false,"
                "\"use_single_float\":false,\"use_bin_type\":true}}]",
                &s, chunk, len, a, err);
}

/* Chunks numcodecs 0.11 wrote (numcodecs.MsgPack().encode of object
 * arrays), each element as json.dumps gives it (strings as text, bytes as
 * hex). */
START_TEST(msgpack_hand_computed) {
  /* ['foo', b'\x00\xff', 1, -5, 2.5, None, True, [1, 'a'],
   *  {'k': 1, 2: 'x'}, 1e20, nan, 'héllo\nx', 'a"b'] */
  static const char c1[] =
      "\x9f\xa3\x66\x6f\x6f\xc4\x02\x00\xff\x01\xfb\xcb\x40\x04\x00\x00\x00"
      "\x00\x00\x00\xc0\xc3\x92\x01\xa1\x61\x82\xa1\x6b\x01\x02\xa1\x78\xcb"
      "\x44\x15\xaf\x1d\x78\xb5\x8c\x40\xcb\x7f\xf8\x00\x00\x00\x00\x00\x00"
      "\xa8\x68\xc3\xa9\x6c\x6c\x6f\x0a\x78\xa3\x61\x22\x62\xa2\x7c\x4f\x91"
      "\x0d";
  static const char *const want1[] = {
      "foo",   "00ff",      "1",
      "-5",    "2.5",       "null",
      "true",  "[1,\"a\"]", "{\"k\":1,\"2\":\"x\"}",
      "1e+20", "NaN",       "h\xc3\xa9llo\nx",
      "a\"b"};
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(msgpack_decode(c1, sizeof c1 - 1, 13, &a, &err) == 0, "%s",
                err.msg);
  expect_strings(a, want1, 13);
  abytes_free(a);
  /* [['a','b','c'],['d','e','f']]: nested along the shape (2, 3). */
  static const char c2[] = "\x94\x93\xa1\x61\xa1\x62\xa1\x63\x93\xa1\x64\xa1"
                           "\x65\xa1\x66\xa2\x7c\x4f\x92\x02\x03";
  static const char *const want2[] = {"a", "b", "c", "d", "e", "f"};
  ck_assert_msg(msgpack_decode(c2, sizeof c2 - 1, 6, &a, &err) == 0, "%s",
                err.msg);
  expect_strings(a, want2, 6);
  abytes_free(a);
  /* [[b'\x01', 0.1, -2**63, 2**64-1], {'n': None}]: lists in a 1-D chunk
   * are elements, bytes inside them hex strings. */
  static const char c3[] =
      "\x94\x94\xc4\x01\x01\xcb\x3f\xb9\x99\x99\x99\x99\x99\x9a\xd3\x80\x00"
      "\x00\x00\x00\x00\x00\x00\xcf\xff\xff\xff\xff\xff\xff\xff\xff\x81\xa1"
      "\x6e\xc0\xa2\x7c\x4f\x91\x02";
  static const char *const want3[] = {
      "[\"01\",0.1,-9223372036854775808,18446744073709551615]", "{\"n\":null}"};
  ck_assert_msg(msgpack_decode(c3, sizeof c3 - 1, 2, &a, &err) == 0, "%s",
                err.msg);
  expect_strings(a, want3, 2);
  abytes_free(a);
  /* Floats as Python's repr: integral ones keep ".0", small ones go to
   * the exponent form. [1.0, 1e-05, 123456789012345680.0, -0.0001, 1e16,
   * float32 0.5] */
  static const char c4[] =
      "\x98\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00\xcb\x3e\xe4\xf8\xb5\x88\xe3"
      "\x68\xf1\xcb\x43\x7b\x69\xb4\xba\x63\x0f\x35\xcb\xbf\x1a\x36\xe2\xeb"
      "\x1c\x43\x2d\xcb\x43\x41\xc3\x79\x37\xe0\x80\x00\xca\x3f\x00\x00\x00"
      "\xa2\x7c\x4f\x91\x06";
  static const char *const want4[] = {
      "1.0", "1e-05", "1.2345678901234568e+17", "-0.0001", "1e+16", "0.5"};
  ck_assert_msg(msgpack_decode(c4, sizeof c4 - 1, 6, &a, &err) == 0, "%s",
                err.msg);
  expect_strings(a, want4, 6);
  abytes_free(a);
  ck_assert_ptr_eq(codec_lookup("numcodecs.msgpack2"),
                   codec_lookup("msgpack2"));
}
END_TEST

/* Malformed chunks are EIO with the reason; nothing is read past the end. */
START_TEST(msgpack_bad_input) {
  static char deep[1200];
  deep[0] = (char)0x93;
  memset(deep + 1, 0x91, 1000); /* 1000 nested one-item lists */
  memcpy(deep + 1001, "\xc0\xa2|O\x91\x01", 6);
  const struct {
    const char *chunk;
    size_t len;
    uint64_t n;
    const char *msg;
  } cases[] = {
      {"", 0, 1, "truncated"},
      {"\xa1x", 2, 1, "not a list"},
      {"\x91\xa1x", 3, 1, "not a list ending"},
      {"\x93\xa1x\xa2|O\x91\x02", 8, 2, "1 items for a shape of 2"},
      {"\x93\xa1x\xa2|O\x91\x01", 8, 2, "holds 1 elements, expected 2"},
      {"\x93\xa1x\xa2<U\x91\x01", 8, 1, "dtype"},
      {"\x93\xa1x\xa2|O\xa1x", 8, 1, "shape"},
      {"\x93\xa1x\xa2|O\x91\xff", 8, 1, "non-negative"},
      {"\x93\xa1x\xa2|O\x91\x01\x00", 9, 1, "trailing bytes"},
      {"\x93\xa9x\xa2|O\x91\x01", 8, 1, "truncated"},
      {"\x93\xdb\xff\xff\xff\xff\xa2|O\x91\x01", 12, 1, "truncated"},
      {"\x93\xdd\xff\xff\xff\xff\xa2|O\x91\x01", 12, 1, "truncated"},
      {"\x93\xdf\x80\x00\x00\x00\xa2|O\x91\x01", 12, 1, "truncated"},
      {"\x93\xc1\xa2|O\x91\x01", 7, 1, "0xc1"},
      {"\x93\xd4\x00\x00\xa2|O\x91\x01", 9, 1, "ext type"},
      {"\x93\xcb\x00\x00\xa2|O\x91\x01", 9, 1, "truncated"},
      {"\x94\x91\x01\x92\x02\x03\xa2|O\x92\x02\x02", 12, 4,
       "does not match the shape"},
      {"\x93\x8f\x01\xa2|O\x91\x01", 8, 1, "truncated"},
      {"\xdc\x00", 2, 1, "truncated"},
      {deep, 1007, 1, "nesting too deep"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct abytes *a = NULL;
    struct zerr err = {0};
    int rc = msgpack_decode(cases[i].chunk, cases[i].len, cases[i].n, &a, &err);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
  /* Configuration: an unknown key; a fixed-size array. */
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), 1);
  struct chain *c = NULL;
  struct zerr err = {0};
  ck_assert_int_eq(
      tc_build("[{\"name\":\"msgpack2\",\"configuration\":{\"x\":1}}]", &s, &c,
               &err),
      -EIO);
  s = tc_spec_1d(dtype_of(DT_INT32), 1);
  ck_assert_int_eq(tc_build("[\"msgpack2\"]", &s, &c, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "not variable-length"));
}
END_TEST

/* ==== json2 ==== */

/* A json2 chunk decoded for n string elements. */
static int json2_decode(const char *doc, uint64_t n, struct abytes **a,
                        struct zerr *err) {
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), n);
  return decode("[{\"name\":\"json2\",\"configuration\":{\"encoding\":"
                "\"utf-8\",\"allow_nan\":true,\"sort_keys\":true}}]",
                &s, doc, strlen(doc), a, err);
}

START_TEST(json2_hand_computed) {
  /* As numcodecs writes it (compact separators), with every kind of item. */
  const char *doc =
      "[\"a\",\"b\\u00e9\",1,null,[1, 2],{\"k\": \"v w\"},\"\\ud83d\\ude00\","
      "\"q\\\"\\\\\\/\\n\\t\",NaN,-Infinity,true,1.5e-3,\"\\ud800x\",\"\","
      "\"|O\",[14]]";
  static const char *const want[] = {"a",
                                     "b\xc3\xa9",
                                     "1",
                                     "null",
                                     "[1,2]",
                                     "{\"k\":\"v w\"}",
                                     "\xf0\x9f\x98\x80",
                                     "q\"\\/\n\t",
                                     "NaN",
                                     "-Infinity",
                                     "true",
                                     "1.5e-3",
                                     "\xef\xbf\xbdx",
                                     ""};
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(json2_decode(doc, 14, &a, &err) == 0, "%s", err.msg);
  expect_strings(a, want, 14);
  abytes_free(a);
  /* Indented (indent=2) output, and a 2-D chunk as nested lists. */
  const char *doc2 = "[\n  [\n    \"x\",\n    \"y\"\n  ],\n  [\n    \"z\","
                     "\n    7\n  ],\n  \"|O\",\n  [\n    2,\n    2\n  ]\n]\n";
  static const char *const want2[] = {"x", "y", "z", "7"};
  ck_assert_msg(json2_decode(doc2, 4, &a, &err) == 0, "%s", err.msg);
  expect_strings(a, want2, 4);
  abytes_free(a);
  /* An element that is itself a list in a 1-D chunk stays JSON text. */
  ck_assert_int_eq(json2_decode("[[\"p\",[]],\"|O\",[1]]", 1, &a, &err), 0);
  static const char *const want3[] = {"[\"p\",[]]"};
  expect_strings(a, want3, 1);
  abytes_free(a);
  /* The alias under the numcodecs prefix. */
  ck_assert_ptr_eq(codec_lookup("numcodecs.json2"), codec_lookup("json2"));
}
END_TEST

START_TEST(json2_bad_input) {
  char *deep = malloc(200002);
  memset(deep, '[', 200000);
  deep[200000] = ']';
  deep[200001] = '\0';
  const struct {
    const char *doc;
    uint64_t n;
    const char *msg;
  } cases[] = {
      {"hello", 1, "not a JSON list"},
      {"", 1, "not a JSON list"},
      {"{\"a\": 1}", 1, "not a JSON list"},
      {"[\"a\",\"b\",\"|O\",[3]]", 3, "2 items for a shape of 3"},
      {"[\"a\",\"b\",\"|O\",[2]]", 3, "holds 2 elements, expected 3"},
      {"[\"a\"]", 1, "dtype string and a shape"},
      {"[\"a\",\"|O\",\"x\"]", 1, "shape"},
      {"[\"a\",\"|O\",[-1]]", 1, "shape"},
      {"[\"a\",\"|O\",[1]] x", 1, "trailing bytes"},
      {"[\"a,\"|O\",[1]]", 1, "json2"},
      {"[\"a\\x\",\"|O\",[1]]", 1, "invalid escape"},
      {"[\"a\\u12\",\"|O\",[1]]", 1, "invalid \\u escape"},
      {"[\"a\nb\",\"|O\",[1]]", 1, "control character"},
      {"[01,\"|O\",[1]]", 1, "json2"},
      {"[1.,\"|O\",[1]]", 1, "invalid number"},
      {"[nul,\"|O\",[1]]", 1, "invalid value"},
      {"[{\"a\" 1},\"|O\",[1]]", 1, "':' expected"},
      {"[{1:1},\"|O\",[1]]", 1, "string expected"},
      {"[[1,2],[3],\"|O\",[2,2]]", 4, "nested list has 1 items"},
      {"[1,\"|O\",[1,2]]", 2, "a list was expected"},
      {"[\"a\",\"|O\",[1]", 1, "json2"},
      {deep, 1, "nested too deeply"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct abytes *a;
    struct zerr err = {0};
    int rc = json2_decode(cases[i].doc, cases[i].n, &a, &err);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d", i, rc);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
  free(deep);
  /* Configuration: another text encoding; a fixed-size array. */
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), 1);
  struct chain *c = NULL;
  struct zerr err = {0};
  ck_assert_int_eq(tc_build("[{\"name\":\"json2\",\"configuration\":{"
                            "\"encoding\":\"latin-1\"}}]",
                            &s, &c, &err),
                   -ENOTSUP);
  ck_assert_ptr_nonnull(strstr(err.msg, "unsupported"));
  s = tc_spec_1d(dtype_of(DT_INT32), 1);
  ck_assert_int_eq(tc_build("[\"json2\"]", &s, &c, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "not variable-length"));
}
END_TEST

/* ==== json (numcodecs' LegacyJSON: no shape in the chunk) ==== */

/* A legacy json chunk decoded for a chunk of shape shape[0..ndim). */
static int json_legacy_decode(const char *doc, int ndim, const uint64_t *shape,
                              struct abytes **a, struct zerr *err) {
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), 1);
  s.ndim = ndim;
  s.nelem = 1;
  for (int d = 0; d < ndim; d++) {
    s.shape[d] = shape[d];
    s.nelem *= shape[d];
  }
  return decode("[{\"name\":\"json\",\"configuration\":{\"encoding\":\"utf-8\","
                "\"skipkeys\":false,\"ensure_ascii\":true,\"check_circular\":"
                "true,\"allow_nan\":true,\"sort_keys\":true,\"indent\":null,"
                "\"separators\":[\",\",\":\"]}}]",
                &s, doc, strlen(doc), a, err);
}

START_TEST(json_legacy_hand_computed) {
  /* 1-D as LegacyJSON writes it: the items, then the dtype; a list item
   * is one element (JSON text), as are null, numbers and objects. */
  const char *doc = "[\"a\",\"null\",null,\"\\u00e9\\n\\\"q\\\"\",[1,[2]],"
                    "-1.5e3,{\"k\":\"v\"},NaN,\"\",\"|O\"]";
  static const char *const want[] = {
      "a",       "null",   "null",          "\xc3\xa9\n\"q\"",
      "[1,[2]]", "-1.5e3", "{\"k\":\"v\"}", "NaN",
      ""};
  uint64_t sh1[] = {9};
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(json_legacy_decode(doc, 1, sh1, &a, &err) == 0, "%s", err.msg);
  expect_strings(a, want, 9);
  abytes_free(a);
  /* 2-D: nested lists in C order, indented, items that are lists inside. */
  const char *doc2 = "[\n [\"x\", [7], \"y\"],\n [\"z\", 8, []]\n, \"|O\"]\n";
  static const char *const want2[] = {"x", "[7]", "y", "z", "8", "[]"};
  uint64_t sh2[] = {2, 3};
  ck_assert_msg(json_legacy_decode(doc2, 2, sh2, &a, &err) == 0, "%s", err.msg);
  expect_strings(a, want2, 6);
  abytes_free(a);
  /* Only the count is compared with the chunk (zarr-python reshapes): a
   * 3x2 nesting for a 2x3 chunk, as a V2 order F chunk has. */
  ck_assert_int_eq(
      json_legacy_decode("[[1,2],[3,4],[5,6],\"|O\"]", 2, sh2, &a, &err), 0);
  static const char *const want3[] = {"1", "2", "3", "4", "5", "6"};
  expect_strings(a, want3, 6);
  abytes_free(a);
  /* 3-D, and the alias under the numcodecs prefix. */
  uint64_t sh3[] = {1, 2, 1};
  ck_assert_int_eq(
      json_legacy_decode("[[[\"p\"],[\"q\"]],\"|O\"]", 3, sh3, &a, &err), 0);
  static const char *const want4[] = {"p", "q"};
  expect_strings(a, want4, 2);
  abytes_free(a);
  ck_assert_ptr_eq(codec_lookup("numcodecs.json"), codec_lookup("json"));
  ck_assert_ptr_ne(codec_lookup("json"), codec_lookup("json2"));
}
END_TEST

START_TEST(json_legacy_bad_input) {
  uint64_t one[] = {3}, two[] = {2, 2};
  const struct {
    const char *doc;
    int ndim;
    const uint64_t *shape;
    const char *msg;
  } cases[] = {
      {"[\"a\",\"b\",\"|O\"]", 1, one, "json: the nesting holds 2 elements"},
      {"[\"a\",\"b\",\"c\",\"d\",\"|O\"]", 1, one, "holds 4 elements"},
      {"[\"a\",\"b\",\"c\"]", 1, one, "dtype item is not \"|O\""},
      {"[\"a\",\"b\",\"c\",\"<U1\"]", 1, one, "dtype item is not"},
      {"[\"a\",\"b\",\"c\",\"|O\",[3]]", 1, one, "does not end with a dtype"},
      {"[]", 1, one, "does not end with a dtype string"},
      {"\"|O\"", 1, one, "not a JSON list"},
      {"[\"a\",\"b\",\"c\",\"|O\"] x", 1, one, "trailing bytes"},
      {"[\"a\",\"b\",\"c,\"|O\"]", 1, one, "json: not valid JSON"},
      {"[[1,2],[3],\"|O\"]", 2, two, "nested list has 1 items"},
      {"[[1,2],[3,4,5],\"|O\"]", 2, two, "nested list has 3 items"},
      {"[[1,2],3,\"|O\"]", 2, two, "a list was expected"},
      {"[1,2,3,4,\"|O\"]", 2, two, "a list was expected"},
      {"[[],[],\"|O\"]", 2, two, "holds 0 elements"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct abytes *a;
    struct zerr err = {0};
    int rc = json_legacy_decode(cases[i].doc, cases[i].ndim, cases[i].shape, &a,
                                &err);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d", i, rc);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
  /* json2 checks the dtype item too. */
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(json2_decode("[\"a\",\"<U1\",[1]]", 1, &a, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "json2: the dtype item is not"));
  /* Configuration: another text encoding, a key numcodecs does not have. */
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), 1);
  struct chain *c = NULL;
  ck_assert_int_eq(tc_build("[{\"name\":\"json\",\"configuration\":{"
                            "\"encoding\":\"utf-16\"}}]",
                            &s, &c, &err),
                   -ENOTSUP);
  ck_assert_ptr_nonnull(strstr(err.msg, "json: text encoding"));
  ck_assert_int_eq(
      tc_build("[{\"name\":\"json\",\"configuration\":{\"shape\":1}}]", &s, &c,
               &err),
      -EIO);
  s = tc_spec_1d(dtype_of(DT_FLOAT64), 1);
  ck_assert_int_eq(tc_build("[\"numcodecs.json\"]", &s, &c, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "not variable-length"));
}
END_TEST

/* ==== the ZEP0007 draft layout of `bytes` on strings ==== */

START_TEST(draft_hand_computed) {
  static const char *const s3[] = {"ab", "", "xyz"};
  size_t len;
  uint8_t *c = draft_chunk(s3, 3, &len);
  ck_assert_uint_eq(len, 64 + 5);
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), 3);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(decode("[\"bytes\"]", &s, c, len, &a, &err) == 0, "%s",
                err.msg);
  expect_strings(a, s3, 3);
  abytes_free(a);
  /* endian given, binary type: the same layout. */
  s = tc_spec_1d(dtype_of(DT_BYTES), 3);
  ck_assert_int_eq(decode("[{\"name\":\"bytes\",\"configuration\":{"
                          "\"endian\":\"little\"}}]",
                          &s, c, len, &a, &err),
                   0);
  expect_strings(a, s3, 3);
  abytes_free(a);
  free(c);
  /* 15 elements: 64 bytes of offsets, no padding; 0 elements: 4 + 60. */
  static const char *const s15[] = {"a", "b", "c", "d", "e", "f", "g", "h",
                                    "i", "j", "k", "l", "m", "n", "o"};
  c = draft_chunk(s15, 15, &len);
  ck_assert_uint_eq(len, 64 + 15);
  s = tc_spec_1d(dtype_of(DT_STRING), 15);
  ck_assert_int_eq(decode("[\"bytes\"]", &s, c, len, &a, &err), 0);
  expect_strings(a, s15, 15);
  abytes_free(a);
  free(c);
  c = draft_chunk(NULL, 0, &len);
  ck_assert_uint_eq(len, 64);
  s = tc_spec_1d(dtype_of(DT_STRING), 0);
  ck_assert_int_eq(decode("[\"bytes\"]", &s, c, len, &a, &err), 0);
  ck_assert_uint_eq(a->n, 0);
  abytes_free(a);
  free(c);
}
END_TEST

/* Decoding reads only the offsets; an element reads only its bytes. */
START_TEST(draft_partial) {
  enum { N = 1000, L = 100 };
  char **strs = malloc(N * sizeof *strs);
  for (int i = 0; i < N; i++) {
    strs[i] = malloc(L + 1);
    memset(strs[i], 'a' + i % 26, L);
    strs[i][L] = '\0';
  }
  size_t len;
  uint8_t *c = draft_chunk((const char *const *)strs, N, &len);
  struct count_src *cs = count_new(c, len);
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), N);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(decode_src("[\"bytes\"]", &s, &cs->base, MAXDEC, &a, &err),
                   0);
  ck_assert_uint_eq(cs->bytes, 4032); /* 1001 offsets, padded to 64 */
  char *got = var_elem(a, 777);
  ck_assert_str_eq(got, strs[777]);
  free(got);
  ck_assert_uint_eq(cs->bytes, 4032 + L);
  ck_assert_uint_lt(cs->bytes, len / 20);
  abytes_free(a);
  bytesrc_unref(&cs->base);
  free(c);
  for (int i = 0; i < N; i++)
    free(strs[i]);
  free(strs);
}
END_TEST

/* Bad chunks: decreasing offsets, offsets past the data, a negative
 * offset, too short for n offsets, non-zero padding (more elements). */
START_TEST(draft_bad_input) {
  static const char *const s3[] = {"ab", "", "xyz"};
  size_t len;
  uint8_t *good = draft_chunk(s3, 3, &len);
  uint8_t *c = malloc(len);
  const struct {
    size_t at;   /* byte to patch */
    uint8_t val; /* new value */
    size_t len;  /* chunk length used */
    uint64_t n;  /* elements the spec says */
    const char *msg;
  } cases[] = {
      {4, 9, 69, 3, "offsets decrease at element 1"},
      {12, 200, 69, 3, "past the data"},
      {15, 0x80, 69, 3, "negative"},
      {0, 0, 63, 3, "too short"},
      {0, 0, 69, 16, "too short"},
      {0, 0, 69, 2, "non-zero padding"},
      {40, 1, 69, 3, "non-zero padding"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    memcpy(c, good, len);
    c[cases[i].at] = cases[i].at || cases[i].val ? cases[i].val : c[0];
    struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), cases[i].n);
    struct abytes *a;
    struct zerr err = {0};
    int rc = decode("[\"bytes\"]", &s, c, cases[i].len, &a, &err);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
  free(c);
  free(good);
  /* bytes on a zarrs.optional type: refused as unsupported. */
  json_t *j = json_loads("{\"name\":\"zarrs.optional\",\"configuration\":{"
                         "\"name\":\"uint8\",\"configuration\":{}}}",
                         0, NULL);
  struct dtype dt;
  struct zerr err = {0};
  ck_assert_int_eq(dtype_parse_v3(j, &dt, &err), 0);
  json_decref(j);
  ck_assert_int_eq(dt.kind, DT_OPTIONAL);
  struct codec_spec s = tc_spec_1d(dt, 2);
  struct chain *ch = NULL;
  ck_assert_int_eq(tc_build("[\"bytes\"]", &s, &ch, &err), -ENOTSUP);
  ck_assert_ptr_nonnull(strstr(err.msg, "unsupported"));
  ck_assert_ptr_nonnull(strstr(err.msg, "'zarrs.optional(uint8)'"));
}
END_TEST

/* ==== blosc: partial decoding ==== */
#if ZFS_WITH_BLOSC

/* n bytes of compressible, position-dependent data (caller frees). */
static uint8_t *pattern(size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (uint8_t)((i % 5 == 0) ? (x & 0x0f) : ((i >> 8) & 0xff));
  }
  return p;
}

/* A blosc frame of p (caller frees). */
static uint8_t *blosc_frame(const uint8_t *p, size_t n, const char *cname,
                            int clevel, int shuffle, size_t typesize,
                            size_t blocksize, int threads, size_t *len) {
  size_t cap = n + BLOSC_MAX_OVERHEAD;
  uint8_t *o = malloc(cap);
  int r = blosc_compress_ctx(clevel, shuffle, typesize, n, p, o, cap, cname,
                             blocksize, threads);
  ck_assert_msg(r > 0, "blosc_compress_ctx(%s) = %d", cname, r);
  *len = (size_t)r;
  return o;
}

static const char BLOSC_U8[] = "[\"bytes\",\"blosc\"]";

/* Reads here and there in multi-block frames of every compressor and
 * shuffle, with a short last block: right bytes, and a 100-byte read
 * in the middle reads a small part of the frame. */
START_TEST(blosc_partial_reads) {
  static const char *const cnames[] = {"blosclz", "lz4",  "lz4hc",
                                       "zlib",    "zstd", "snappy"};
  static const struct {
    int shuffle;
    size_t typesize;
    int threads;
  } modes[] = {{0, 1, 1}, {1, 4, 1}, {2, 8, 1}, {1, 2, 2}, {2, 1, 2}};
  size_t n = ((size_t)4 << 20) + 777;
  uint8_t *p = pattern(n);
  for (size_t ci = 0; ci < sizeof cnames / sizeof *cnames; ci++) {
    if (blosc_get_complib_info(cnames[ci], NULL, NULL) < 0)
      continue; /* compressor not built into this c-blosc */
    for (size_t mi = 0; mi < sizeof modes / sizeof *modes; mi++) {
      size_t len;
      uint8_t *f =
          blosc_frame(p, n, cnames[ci], 5, modes[mi].shuffle,
                      modes[mi].typesize, 65536, modes[mi].threads, &len);
      struct count_src *cs = count_new(f, len);
      struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT8), n);
      struct abytes *a;
      struct zerr err = {0};
      int rc = decode_src(BLOSC_U8, &s, &cs->base, MAXDEC, &a, &err);
      ck_assert_msg(rc == 0, "%s/%zu: %s", cnames[ci], mi, err.msg);
      ck_assert_ptr_null(a->fixed->mem); /* lazy */
      /* Decoding read the header and the block starts only. c-blosc may
       * enlarge 64 KiB blocks by the type size for splitting codecs. */
      uint32_t bs, nb;
      memcpy(&bs, f + 8, 4);
      nb = (uint32_t)((n + bs - 1) / bs);
      ck_assert_uint_ge(nb, 8);
      int copy = (f[2] & BLOSC_MEMCPYED) != 0; /* incompressible */
      ck_assert_msg(cs->bytes == (copy ? 16 : 16 + 4 * (uint64_t)nb),
                    "%s/%zu: flags 0x%x, decode read %llu", cnames[ci], mi,
                    f[2], (unsigned long long)cs->bytes);
      /* Reads: middle, across a block edge, the short last block, the
       * first bytes, a whole block. */
      static const struct {
        uint64_t off;
        size_t len;
      } rd[] = {{2097152 + 12345, 100},
                {65536 * 7 - 50, 100},
                {((uint64_t)4 << 20) + 700, 77},
                {0, 10},
                {65536 * 3, 65536},
                {65536 * 3 + 1, 200000}};
      uint8_t *buf = malloc(200000);
      for (size_t k = 0; k < sizeof rd / sizeof *rd; k++) {
        uint64_t before = cs->bytes;
        ck_assert_msg(
            bytesrc_read_range(a->fixed, rd[k].off, rd[k].len, buf, &err) == 0,
            "%s/%zu read %zu: %s", cnames[ci], mi, k, err.msg);
        ck_assert_msg(!memcmp(buf, p + rd[k].off, rd[k].len),
                      "%s/%zu read %zu: wrong bytes", cnames[ci], mi, k);
        /* About one block's share of the frame. */
        if (k == 0)
          ck_assert_msg(cs->bytes - before <= 2 * len / nb + 1024 &&
                            cs->bytes - before < len / 4,
                        "%s/%zu: a 100-byte read read %llu of %zu bytes",
                        cnames[ci], mi,
                        (unsigned long long)(cs->bytes - before), len);
      }
      free(buf);
      /* Everything at once. */
      uint8_t *whole = all_bytes(a->fixed);
      ck_assert_msg(!memcmp(whole, p, n), "%s/%zu: whole output differs",
                    cnames[ci], mi);
      free(whole);
      abytes_free(a);
      bytesrc_unref(&cs->base);
      free(f);
    }
  }
  free(p);
}
END_TEST

/* A real-size blosc frame: 4 MiB, typesize 1, 64 KiB blocks. */
START_TEST(blosc_counting) {
  size_t n = (size_t)4 << 20, len;
  uint8_t *p = pattern(n);
  uint8_t *f = blosc_frame(p, n, "lz4", 5, 1, 1, 65536, 1, &len);
  struct count_src *cs = count_new(f, len);
  struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT8), n);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(decode_src(BLOSC_U8, &s, &cs->base, MAXDEC, &a, &err), 0);
  /* The header and 64 block starts. */
  ck_assert_uint_eq(cs->bytes, 16 + 64 * 4);
  uint8_t buf[100];
  ck_assert_int_eq(bytesrc_read_range(a->fixed, n / 2 + 1000, 100, buf, &err),
                   0);
  ck_assert(!memcmp(buf, p + n / 2 + 1000, 100));
  /* One block's compressed bytes, nowhere near the whole frame. */
  ck_assert_uint_lt(cs->bytes, 16 + 64 * 4 + len / 32);
  ck_assert_uint_eq(cs->reads, 3);
  /* The same block again comes from the one-block cache. */
  ck_assert_int_eq(bytesrc_read_range(a->fixed, n / 2 + 2000, 100, buf, &err),
                   0);
  ck_assert_uint_eq(cs->reads, 3);
  abytes_free(a);
  bytesrc_unref(&cs->base);
  free(f);

  /* A plain copy (clevel 0): a window, the read reads just its bytes. */
  f = blosc_frame(p, n, "lz4", 0, 0, 1, 65536, 1, &len);
  ck_assert(f[2] & BLOSC_MEMCPYED);
  cs = count_new(f, len);
  ck_assert_int_eq(decode_src(BLOSC_U8, &s, &cs->base, MAXDEC, &a, &err), 0);
  uint64_t before = cs->bytes;
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 123456, 100, buf, &err), 0);
  ck_assert(!memcmp(buf, p + 123456, 100));
  ck_assert_uint_eq(cs->bytes - before, 100);
  abytes_free(a);
  bytesrc_unref(&cs->base);
  free(f);

  /* A small frame is decoded at once, into memory. */
  f = blosc_frame(p, 100000, "lz4", 5, 1, 1, 16384, 1, &len);
  s = tc_spec_1d(dtype_of(DT_UINT8), 100000);
  ck_assert_int_eq(decode(BLOSC_U8, &s, f, len, &a, &err), 0);
  ck_assert_ptr_nonnull(a->fixed->mem);
  ck_assert(!memcmp(a->fixed->mem, p, 100000));
  abytes_free(a);
  free(f);
  free(p);
}
END_TEST

/* zarrs.vlen inside blosc: decoding reads the index's blocks, one element
 * reads one more block, not the whole chunk. */
START_TEST(blosc_under_vlen) {
  enum { N = 20000, L = 100 };
  uint64_t idx_len = (N + 1) * 8, data_len = (uint64_t)N * L;
  size_t n = (size_t)(8 + idx_len + data_len);
  uint8_t *chunk = malloc(n);
  memcpy(chunk, &idx_len, 8);
  uint8_t *data = chunk + 8 + idx_len;
  for (uint64_t i = 0; i <= N; i++) {
    uint64_t o = i * L;
    memcpy(chunk + 8 + i * 8, &o, 8);
    if (i < N)
      for (int k = 0; k < L; k++)
        data[i * L + k] = (uint8_t)('a' + (i * 7 + (uint64_t)k) % 26);
  }
  size_t len;
  uint8_t *f = blosc_frame(chunk, n, "zstd", 3, 1, 8, 65536, 1, &len);
  struct count_src *cs = count_new(f, len);
  struct codec_spec s = tc_spec_1d(dtype_of(DT_STRING), N);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(
      decode_src("[{\"name\":\"zarrs.vlen\",\"configuration\":{"
                 "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{"
                 "\"endian\":\"little\"}}],\"data_codecs\":[\"bytes\"],"
                 "\"index_data_type\":\"uint64\"}},\"blosc\"]",
                 &s, &cs->base, MAXDEC, &a, &err),
      0);
  uint64_t after_index = cs->bytes;
  char *got = var_elem(a, 15000);
  ck_assert_int_eq(memcmp(got, data + 15000 * L, L), 0);
  free(got);
  ck_assert_msg(
      cs->bytes < len / 4, "read %llu of a %zu-byte frame (index: %llu)",
      (unsigned long long)cs->bytes, len, (unsigned long long)after_index);
  abytes_free(a);
  bytesrc_unref(&cs->base);
  free(f);
  free(chunk);
}
END_TEST

/* Corrupt frames: an error with a message at decode or at read, never a
 * crash, never wrong bytes. */
START_TEST(blosc_bad_input) {
  size_t n = (size_t)1 << 20, len;
  uint8_t *p = pattern(n);
  uint8_t *f = blosc_frame(p, n, "lz4", 5, 1, 1, 65536, 1, &len);
  uint32_t nblocks = 16, data0 = 16 + 4 * nblocks;
  uint8_t *c = malloc(len + 16);
  struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT8), n);
  /* Refused at decode: header and block table. */
  const struct {
    size_t at;
    uint32_t val; /* written as u32 LE at `at` */
    size_t len;   /* chunk length used (0: len) */
    int rc;
    const char *msg;
  } cases[] = {
      {0, 0, 10, -EIO, "corrupt header"},
      {12, (uint32_t)len + 5, 0, -EIO, "corrupt header"},
      {0, 0xee, 0, -EIO, "corrupt header"},
      {0, 0x08ff0102, 0, -EIO, "unknown flags"}, /* flags byte 0x08 */
      {8, 0, 0, -EIO, "block size 0"},
      {8, 1, 0, -EIO, "block starts do not fit"},
      {16 + 4 * 3, (uint32_t)len + 10, 0, -EIO, "block 3 starts at"},
      {16 + 4 * 5, 20, 0, -EIO, "block 5 starts at 20"},
      {16 + 4 * 6, 0, 0, -EIO, "start at the same offset"}, /* = block 0 */
      {4, (uint32_t)n * 4, 0, -EFBIG, "decode limit"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    memcpy(c, f, len);
    uint32_t v = cases[i].val;
    if (cases[i].at == 16 + 4 * 6 && v == 0)
      memcpy(&v, f + 16, 4);
    if (cases[i].at == 0 && v == 0xee)
      c[0] = 0xee;
    else if (cases[i].at == 0 && v == 0x08ff0102)
      c[2] |= 0x08;
    else if (cases[i].len != 10)
      memcpy(c + cases[i].at, &v, 4);
    struct abytes *a;
    struct zerr err = {0};
    struct bytesrc *src =
        bytesrc_from_static(c, cases[i].len ? cases[i].len : len);
    int rc = decode_src(BLOSC_U8, &s, src, i == 9 ? n : MAXDEC, &a, &err);
    bytesrc_unref(src);
    ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
  /* Truncated frames with the header patched to match: cut inside the
   * last block, that block fails to read (the others read); cut deeper,
   * the block table points past the end. */
  memcpy(c, f, len);
  uint32_t short_len = (uint32_t)len - 300;
  memcpy(c + 12, &short_len, 4);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(decode(BLOSC_U8, &s, c, short_len, &a, &err), 0);
  uint8_t buf[100];
  ck_assert_int_eq(bytesrc_read_range(a->fixed, n - 100, 100, buf, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "block 15 is corrupt"));
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 100, 100, buf, &err), 0);
  ck_assert(!memcmp(buf, p + 100, 100));
  abytes_free(a);
  short_len = data0 + 1000;
  memcpy(c + 12, &short_len, 4);
  ck_assert_int_eq(decode(BLOSC_U8, &s, c, short_len, &a, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "outside the frame"));
  /* Garbage inside block 9: decoding succeeds (the block table is fine),
   * a read of block 9 fails with EIO, block 0 still reads. */
  memcpy(c, f, len);
  uint32_t b9;
  memcpy(&b9, f + 16 + 4 * 9, 4);
  ck_assert_uint_ge(b9, data0);
  memset(c + b9, 0xff, 64);
  ck_assert_int_eq(decode(BLOSC_U8, &s, c, len, &a, &err), 0);
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 9 * 65536 + 10, 100, buf, &err),
                   -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "block 9 is corrupt"));
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 10, 100, buf, &err), 0);
  ck_assert(!memcmp(buf, p + 10, 100));
  /* Reading everything fails too (whole-frame path). */
  uint8_t *big = malloc(n);
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 0, n, big, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "blosc"));
  free(big);
  abytes_free(a);
  /* A block's compressed bytes cut short inside the frame: the length of
   * its first stream says more than the block holds. */
  memcpy(c, f, len);
  uint32_t b4, huge = 0x7ffffff0;
  memcpy(&b4, f + 16 + 4 * 4, 4);
  memcpy(c + b4, &huge, 4);
  ck_assert_int_eq(decode(BLOSC_U8, &s, c, len, &a, &err), 0);
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 4 * 65536, 100, buf, &err),
                   -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "block 4 is corrupt"));
  abytes_free(a);
  free(c);
  free(f);
  free(p);
}
END_TEST

/* Several threads reading one lazy blosc output (the block cache is
 * shared): every read returns the right bytes. */
struct par_arg {
  struct bytesrc *src;
  const uint8_t *want;
  uint32_t seed;
  int bad;
};

/* 200 reads of random ranges. */
static void *par_reader(void *p) {
  struct par_arg *a = p;
  uint8_t buf[3000];
  for (int k = 0; k < 200; k++) {
    a->seed = a->seed * 1103515245u + 12345u;
    uint64_t off = (a->seed >> 4) % (a->src->size - sizeof buf);
    struct zerr err = {0};
    if (bytesrc_read_range(a->src, off, sizeof buf, buf, &err) < 0 ||
        memcmp(buf, a->want + off, sizeof buf))
      a->bad++;
  }
  return NULL;
}

START_TEST(blosc_threads) {
  size_t n = (size_t)2 << 20, len;
  uint8_t *p = pattern(n);
  uint8_t *f = blosc_frame(p, n, "zstd", 3, 1, 2, 65536, 1, &len);
  struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT8), n);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(decode(BLOSC_U8, &s, f, len, &a, &err), 0);
  pthread_t t[4];
  struct par_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (struct par_arg){a->fixed, p, (uint32_t)i * 7919u + 1, 0};
    ck_assert_int_eq(pthread_create(&t[i], NULL, par_reader, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(args[i].bad, 0);
  }
  abytes_free(a);
  free(f);
  free(p);
}
END_TEST

/* ==== mutations: any decode or read either works or fails cleanly ==== */

/* Next pseudo-random number (fixed seed: reproducible). */
static uint32_t mut_next(uint32_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 17;
  *x ^= *x << 5;
  return *x;
}

/* Decode a mutated copy of `good` through `json` and read every byte of the
 * result in pieces; under ASan this finds any out-of-bounds access. */
static void mutate_and_read(const char *json, struct dtype dt, uint64_t n,
                            const uint8_t *good, size_t len, int rounds) {
  uint32_t x = 0x9e3779b9u;
  uint8_t *c = malloc(len);
  for (int r = 0; r < rounds; r++) {
    memcpy(c, good, len);
    int flips = 1 + (int)(mut_next(&x) % 4);
    for (int k = 0; k < flips; k++)
      c[mut_next(&x) % len] = (uint8_t)mut_next(&x);
    size_t use = mut_next(&x) % 8 == 0 ? mut_next(&x) % len : len;
    struct codec_spec s = tc_spec_1d(dt, n);
    struct abytes *a;
    struct zerr err = {0};
    int rc = decode(json, &s, c, use, &a, &err);
    if (rc < 0) {
      ck_assert_msg(err.msg[0], "round %d: failure without a message", r);
      continue;
    }
    struct bytesrc *src = a->elsize ? a->fixed : a->data;
    uint8_t *buf = malloc(70000);
    for (uint64_t off = 0; off < src->size; off += 70000) {
      size_t l = src->size - off < 70000 ? (size_t)(src->size - off) : 70000;
      if (bytesrc_read_range(src, off, l, buf, &err) < 0)
        ck_assert_msg(err.msg[0], "round %d: read failed silently", r);
    }
    free(buf);
    abytes_free(a);
  }
  free(c);
}

START_TEST(mutations) {
  size_t n = 300000, len;
  uint8_t *p = pattern(n);
  uint8_t *f = blosc_frame(p, n, "lz4", 5, 1, 4, 65536, 1, &len);
  mutate_and_read(BLOSC_U8, dtype_of(DT_UINT8), n, f, len, 150);
  free(f);
  f = blosc_frame(p, n, "blosclz", 5, 2, 8, 65536, 1, &len);
  mutate_and_read(BLOSC_U8, dtype_of(DT_UINT8), n, f, len, 150);
  free(f);
  free(p);
  const char *doc = "[\"a\",\"b\\u00e9\",1,null,[1, 2],{\"k\": \"v\"},"
                    "\"\\ud83d\\ude00\",NaN,\"|O\",[8]]";
  mutate_and_read("[\"json2\"]", dtype_of(DT_STRING), 8, (const uint8_t *)doc,
                  strlen(doc), 400);
  static const char *const s3[] = {"ab", "", "xyz", "0123456789"};
  uint8_t *c = draft_chunk(s3, 4, &len);
  mutate_and_read("[\"bytes\"]", dtype_of(DT_STRING), 4, c, len, 400);
  free(c);
}
END_TEST
#endif /* ZFS_WITH_BLOSC */

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("codecs2");
  TCase *tc = tcase_create("codecs2");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, fso_hand_computed);
  tcase_add_test(tc, fso_bad_input);
  tcase_add_test(tc, msgpack_hand_computed);
  tcase_add_test(tc, msgpack_bad_input);
  tcase_add_test(tc, json2_hand_computed);
  tcase_add_test(tc, json2_bad_input);
  tcase_add_test(tc, json_legacy_hand_computed);
  tcase_add_test(tc, json_legacy_bad_input);
  tcase_add_test(tc, draft_hand_computed);
  tcase_add_test(tc, draft_partial);
  tcase_add_test(tc, draft_bad_input);
#if ZFS_WITH_BLOSC
  tcase_add_test(tc, blosc_partial_reads);
  tcase_add_test(tc, blosc_counting);
  tcase_add_test(tc, blosc_under_vlen);
  tcase_add_test(tc, blosc_bad_input);
  tcase_add_test(tc, blosc_threads);
  tcase_add_test(tc, mutations);
#else
  testutil_skip_without("check_numcodecs", "blosc",
                        "the blosc and mutation tests");
#endif
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
