/* check_codecs.c - unit tests for the codec registry, chain building, and
 * the fixed-size and bytes->bytes codecs (bytes, gzip, zstd, crc32c).
 * Compressed inputs are produced here with zlib and libzstd. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "codecs/chain.h"
#include "codecs/codec.h"
#include "src/util/buf.h"
#include "../testcodec.h"
#include "../testutil.h"

/* zstd frame with its content size in the header; caller frees. */
static uint8_t *zstd_known(const void *p, size_t n, int checksum, size_t *out) {
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, checksum);
  size_t cap = ZSTD_compressBound(n);
  uint8_t *o = malloc(cap);
  size_t r = ZSTD_compress2(cc, o, cap, p, n);
  ck_assert(!ZSTD_isError(r));
  ZSTD_freeCCtx(cc);
  ck_assert(ZSTD_getFrameContentSize(o, r) == n);
  *out = r;
  return o;
}

/* zstd frame written by the streaming API without a content size. */
static uint8_t *zstd_unknown(const void *p, size_t n, size_t *out) {
  ZSTD_CStream *cs = ZSTD_createCStream();
  ZSTD_initCStream(cs, 3);
  size_t cap = ZSTD_compressBound(n) + 1024;
  uint8_t *o = malloc(cap);
  ZSTD_outBuffer zo = {o, cap, 0};
  ZSTD_inBuffer zi = {p, n, 0};
  while (zi.pos < zi.size)
    ck_assert(!ZSTD_isError(ZSTD_compressStream(cs, &zo, &zi)));
  ck_assert(ZSTD_endStream(cs, &zo) == 0);
  ZSTD_freeCStream(cs);
  ck_assert(ZSTD_getFrameContentSize(o, zo.pos) == ZSTD_CONTENTSIZE_UNKNOWN);
  *out = zo.pos;
  return o;
}

/* Compressible but not trivial test data. */
static uint8_t *pattern(size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1103515245u + 12345u;
    p[i] = (uint8_t)((i % 7 == 0) ? (x >> 24) : (i & 0x3f));
  }
  return p;
}

/* Decode a b2b-carrying uint8 chain and compare with want. */
static void expect_u8(const char *json, const void *enc, size_t len,
                      const uint8_t *want, size_t n) {
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  struct abytes *a;
  struct zerr err = {0};
  int rc = tc_run(json, &s, enc, len, (size_t)1 << 26, &a, &err);
  ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, 1);
  uint8_t *got = tc_fixed_bytes(a);
  ck_assert(memcmp(got, want, n) == 0);
  free(got);
  abytes_free(a);
}

/* Decode that must fail with errno e and a message containing msg. */
static void expect_fail(const char *json, const struct codec_spec *s,
                        const void *enc, size_t len, size_t max, int e,
                        const char *msg) {
  struct abytes *a = NULL;
  struct zerr err = {0};
  int rc = tc_run(json, s, enc, len, max, &a, &err);
  ck_assert_msg(rc == -e, "%s: rc %d (want %d), msg '%s'", json, rc, -e,
                err.msg);
  ck_assert_ptr_null(a);
  ck_assert_msg(strstr(err.msg, msg), "message '%s' lacks '%s'", err.msg, msg);
}

/* ---- registry ---- */

START_TEST(test_registry_names) {
  static const struct {
    const char *name;
    const char *canonical;
    enum codec_kind kind;
  } cases[] = {
      {"bytes", "bytes", CODEC_A2B},
      {"endian", "bytes", CODEC_A2B},
      {"zarrs.vlen", "zarrs.vlen", CODEC_A2B},
      {"https://codec.zarrs.dev/array_to_bytes/vlen", "zarrs.vlen", CODEC_A2B},
      {"vlen", "zarrs.vlen", CODEC_A2B},
      {"vlen-utf8", "vlen-utf8", CODEC_A2B},
      {"vlen-bytes", "vlen-bytes", CODEC_A2B},
      {"vlen-array", "vlen-array", CODEC_A2B},
      {"zarrs.vlen_v2", "zarrs.vlen_v2", CODEC_A2B},
      {"https://codec.zarrs.dev/array_to_bytes/vlen_v2", "zarrs.vlen_v2",
       CODEC_A2B},
      {"gzip", "gzip", CODEC_B2B},
      {"zstd", "zstd", CODEC_B2B},
      {"crc32c", "crc32c", CODEC_B2B},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct codec_impl *c = codec_lookup(cases[i].name);
    ck_assert_msg(c != NULL, "%s not found", cases[i].name);
    ck_assert_str_eq(c->name, cases[i].canonical);
    ck_assert_int_eq(c->kind, cases[i].kind);
  }
  ck_assert_ptr_null(codec_lookup("nope"));
  ck_assert_ptr_null(codec_lookup("GZIP"));
  ck_assert_ptr_null(codec_lookup("gzip "));
  ck_assert_ptr_null(codec_lookup(""));
  ck_assert_ptr_null(codec_lookup(NULL));
  /* The stale doc aliases zarrs never registered stay unknown. */
  ck_assert_ptr_null(codec_lookup("numcodecs.vlen-array"));
  size_t n = 0;
  for (const struct codec_impl *const *all = codec_all(); *all; all++, n++)
    ck_assert_ptr_eq(codec_lookup((*all)->name), *all);
  ck_assert_uint_ge(n, 10); /* grows as codecs are added */
}
END_TEST

/* A codec whose library the build was configured without (configure
 * --without-LIB) keeps its names and is refused by name when a chain
 * names it, saying so; a build with every library has none such. */
START_TEST(test_built_without) {
  struct codec_spec spec = tc_spec_1d(dtype_of(DT_UINT8), 4);
  int n = 0;
  for (const struct codec_impl *const *all = codec_all(); *all; all++) {
    const struct codec_impl *c = *all;
    if (!c->built_without)
      continue;
    n++;
    ck_assert_ptr_nonnull(strstr(ZFS_WITHOUT, c->built_without));
    const char *names[] = {c->name, c->aliases ? c->aliases[0] : NULL};
    for (size_t k = 0; k < 2 && names[k]; k++) {
      char json[256], want[256];
      snprintf(json, sizeof json,
               c->kind == CODEC_B2B ? "[\"bytes\",\"%s\"]" : "[\"%s\"]",
               names[k]);
      snprintf(want, sizeof want, "zarrfs was built without %s",
               c->built_without);
      struct chain *ch = NULL;
      struct zerr err = {0};
      ck_assert_int_eq(tc_build(json, &spec, &ch, &err), -ENOTSUP);
      ck_assert_ptr_null(ch);
      ck_assert_msg(strstr(err.msg, want) && strstr(err.msg, names[k]),
                    "%s: %s", json, err.msg);
    }
  }
  /* Every library this build lacks leaves a codec refused by name. */
  ck_assert_int_eq(n > 0, *ZFS_WITHOUT != '\0');
}
END_TEST

START_TEST(test_registry_entry_parse) {
  static const struct {
    const char *json;
    int rc;
    const char *name;
    int has_config;
    int optional;
  } cases[] = {
      {"\"gzip\"", 0, "gzip", 0, 0},
      {"{\"name\":\"gzip\"}", 0, "gzip", 0, 0},
      {"{\"name\":\"gzip\",\"configuration\":{\"level\":1}}", 0, "gzip", 1, 0},
      {"{\"name\":\"x\",\"must_understand\":false}", 0, "x", 0, 1},
      {"{\"name\":\"x\",\"must_understand\":true}", 0, "x", 0, 0},
      {"{\"name\":\"x\",\"configuration\":[]}", -EIO, NULL, 0, 0},
      {"{\"name\":\"x\",\"configuration\":null}", -EIO, NULL, 0, 0},
      {"{\"name\":\"x\",\"configuration\":\"a\"}", -EIO, NULL, 0, 0},
      {"{\"name\":\"x\",\"must_understand\":\"no\"}", -EIO, NULL, 0, 0},
      {"{\"name\":3}", -EIO, NULL, 0, 0},
      {"{\"configuration\":{}}", -EIO, NULL, 0, 0},
      {"7", -EIO, NULL, 0, 0},
      {"null", -EIO, NULL, 0, 0},
      {"[\"gzip\"]", -EIO, NULL, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    json_t *j = json_loads(cases[i].json, JSON_DECODE_ANY, NULL);
    ck_assert_ptr_nonnull(j);
    const char *name;
    json_t *config;
    int optional;
    struct zerr err = {0};
    int rc = codec_entry_parse(j, &name, &config, &optional, &err);
    ck_assert_msg(rc == cases[i].rc, "%s: rc %d", cases[i].json, rc);
    if (rc == 0) {
      ck_assert_str_eq(name, cases[i].name);
      ck_assert_int_eq(config != NULL, cases[i].has_config);
      ck_assert_int_eq(optional, cases[i].optional);
    } else {
      ck_assert(err.msg[0] != '\0');
    }
    json_decref(j);
  }
}
END_TEST

START_TEST(test_registry_cfg_helpers) {
  json_t *c = json_loads("{\"i\":5,\"s\":\"x\",\"f\":1.5}", 0, NULL);
  struct zerr err = {0};
  long long v;
  const char *s;
  ck_assert_int_eq(codec_cfg_int(c, "i", 1, 0, &v, &err), 0);
  ck_assert_int_eq(v, 5);
  ck_assert_int_eq(codec_cfg_int(c, "missing", 0, 42, &v, &err), 0);
  ck_assert_int_eq(v, 42);
  ck_assert_int_eq(codec_cfg_int(NULL, "i", 0, 7, &v, &err), 0);
  ck_assert_int_eq(v, 7);
  ck_assert_int_eq(codec_cfg_int(c, "missing", 1, 0, &v, &err), -EIO);
  ck_assert(strstr(err.msg, "missing"));
  ck_assert_int_eq(codec_cfg_int(c, "f", 1, 0, &v, &err), -EIO);
  ck_assert_int_eq(codec_cfg_int(c, "s", 1, 0, &v, &err), -EIO);
  ck_assert_int_eq(codec_cfg_str(c, "s", 1, NULL, &s, &err), 0);
  ck_assert_str_eq(s, "x");
  ck_assert_int_eq(codec_cfg_str(c, "none", 0, "d", &s, &err), 0);
  ck_assert_str_eq(s, "d");
  ck_assert_int_eq(codec_cfg_str(c, "i", 0, NULL, &s, &err), -EIO);
  static const char *const ok[] = {"i", "s", "f", NULL};
  static const char *const few[] = {"i", NULL};
  ck_assert_int_eq(codec_cfg_only(c, "t", ok, &err), 0);
  ck_assert_int_eq(codec_cfg_only(NULL, "t", few, &err), 0);
  ck_assert_int_eq(codec_cfg_only(c, "t", few, &err), -EIO);
  ck_assert(strstr(err.msg, "t: unknown configuration key"));
  json_decref(c);
}
END_TEST

/* ---- chain building ---- */

START_TEST(test_chain_build_errors) {
  static const struct {
    const char *json;
    enum dtype_kind kind;
    int rc;
    const char *msg;
  } cases[] = {
      {"[\"foo\"]", DT_UINT8, -ENOTSUP, "unsupported codec 'foo'"},
      {"[{\"name\":\"bytes\"},{\"name\":\"foo\",\"must_understand\":true}]",
       DT_UINT8, -ENOTSUP, "unsupported codec 'foo'"},
      {"[]", DT_UINT8, -EIO, "missing array->bytes"},
      {"[\"gzip\"]", DT_UINT8, -EIO, "must come after the array->bytes"},
      {"[\"gzip\",\"bytes\"]", DT_UINT8, -EIO, "must come after"},
      {"[\"bytes\",\"bytes\"]", DT_UINT8, -EIO, "more than one array->bytes"},
      {"[\"bytes\",\"vlen-utf8\"]", DT_UINT8, -EIO,
       "more than one array->bytes"},
      {"{\"name\":\"bytes\"}", DT_UINT8, -EIO, "must be a list"},
      {"[3]", DT_UINT8, -EIO, "codec entry"},
      {"[\"bytes\"]", DT_INT32, -EIO, "'endian' is required"},
      {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"middle\"}}]",
       DT_INT32, -EIO, "\"little\" or \"big\""},
      {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":1}}]", DT_INT32,
       -EIO, "bytes: configuration key 'endian'"},
      {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\","
       "\"x\":1}}]",
       DT_INT32, -EIO, "bytes: unknown configuration key 'x'"},
      {"[\"bytes\"]", DT_UNSUPPORTED, -ENOTSUP, "not supported"},
      {"[\"bytes\",{\"name\":\"gzip\",\"configuration\":{\"level\":\"5\"}}]",
       DT_UINT8, -EIO, "gzip: configuration key 'level'"},
      {"[\"bytes\",{\"name\":\"gzip\",\"configuration\":{\"lvl\":5}}]",
       DT_UINT8, -EIO, "gzip: unknown configuration key 'lvl'"},
      {"[\"bytes\",{\"name\":\"zstd\",\"configuration\":{\"checksum\":1}}]",
       DT_UINT8, -EIO, "zstd: configuration key 'checksum'"},
      {"[\"bytes\",{\"name\":\"zstd\",\"configuration\":{\"cname\":1}}]",
       DT_UINT8, -EIO, "zstd: unknown configuration key"},
      {"[\"bytes\",{\"name\":\"crc32c\",\"configuration\":{\"a\":1}}]",
       DT_UINT8, -EIO, "crc32c: unknown configuration key 'a'"},
      {"[\"vlen-utf8\"]", DT_INT32, -EIO, "not variable-length"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct codec_spec s = tc_spec1(cases[i].kind, 4);
    if (cases[i].kind == DT_UNSUPPORTED)
      snprintf(s.dtype.name, sizeof s.dtype.name, "complex128");
    struct chain *c = NULL;
    struct zerr err = {0};
    int rc = tc_build(cases[i].json, &s, &c, &err);
    ck_assert_msg(rc == cases[i].rc, "%s: rc %d want %d (%s)", cases[i].json,
                  rc, cases[i].rc, err.msg);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "%s: message '%s' lacks '%s'",
                  cases[i].json, err.msg, cases[i].msg);
  }
}
END_TEST

START_TEST(test_chain_build_ok) {
  static const struct {
    const char *json;
    enum dtype_kind kind;
    int passthrough;
  } cases[] = {
      {"[\"bytes\"]", DT_UINT8, 1},
      {"[\"endian\"]", DT_BOOL, 1},
      {"[\"bytes\",\"gzip\",\"zstd\",\"crc32c\"]", DT_UINT8, 0},
      {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},"
       "{\"name\":\"gzip\",\"configuration\":{\"level\":5}}]",
       DT_FLOAT64, 0},
      {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
       "{\"name\":\"zstd\",\"configuration\":{\"level\":0,\"checksum\":false}"
       "}]",
       DT_INT16, 0},
      /* unknown but optional codecs are skipped, wherever they stand */
      {"[{\"name\":\"x.filter\",\"must_understand\":false},\"bytes\","
       "{\"name\":\"y.ck\",\"must_understand\":false}]",
       DT_UINT8, 1},
      {"[\"bytes\",{\"name\":\"crc32c\",\"configuration\":{}}]", DT_UINT8, 0},
      {"[{\"name\":\"vlen-utf8\",\"configuration\":{}}]", DT_STRING, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct codec_spec s = tc_spec1(cases[i].kind, 4);
    struct chain *c = NULL;
    struct zerr err = {0};
    int rc = tc_build(cases[i].json, &s, &c, &err);
    ck_assert_msg(rc == 0, "%s: %s", cases[i].json, err.msg);
    ck_assert_int_eq(chain_is_passthrough(c), cases[i].passthrough);
    chain_free(c);
  }
  chain_free(NULL);
}
END_TEST

/* ---- bytes ---- */

START_TEST(test_bytes_endian) {
  static const enum dtype_kind kinds[] = {DT_UINT8,   DT_INT16, DT_UINT32,
                                          DT_FLOAT32, DT_INT64, DT_FLOAT64};
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    size_t es = dt.size, n = 5;
    uint8_t le[40], be[40], host[40];
    /* Element i has byte b at significance b: value bytes 0x10*i+b. */
    for (size_t i = 0; i < n; i++)
      for (size_t b = 0; b < es; b++) {
        uint8_t v = (uint8_t)(0x10 * i + b + 1);
        le[i * es + b] = v;
        be[i * es + (es - 1 - b)] = v;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        host[i * es + (es - 1 - b)] = v;
#else
        host[i * es + b] = v;
#endif
      }
    for (int big = 0; big < 2; big++) {
      char json[128];
      snprintf(json, sizeof json,
               "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"%s\"}}]",
               big ? "big" : "little");
      struct codec_spec s = tc_spec1(kinds[k], n);
      struct abytes *a;
      struct zerr err = {0};
      ck_assert_int_eq(tc_run(json, &s, big ? be : le, n * es, 1 << 20, &a, &err),
                       0);
      ck_assert_uint_eq(a->n, n);
      ck_assert_uint_eq(a->elsize, es);
      uint8_t *got = tc_fixed_bytes(a);
      ck_assert_msg(memcmp(got, host, n * es) == 0, "%s %s", dt.name,
                    big ? "big" : "little");
      free(got);
      abytes_free(a);
    }
    /* Size must match n*elsize exactly, both ways. */
    struct codec_spec s = tc_spec1(kinds[k], n);
    const char *j =
        "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]";
    expect_fail(j, &s, le, n * es - 1, 1 << 20, EIO, "expected");
    expect_fail(j, &s, le, n * es + 1, 1 << 20, EIO, "expected");
  }
}
END_TEST

START_TEST(test_bytes_no_swap_is_lazy) {
  /* No swap: the decoded array is the input source itself, untouched. */
  uint8_t raw[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
  struct codec_spec s = tc_spec1(DT_UINT16, 8);
  struct chain *c;
  struct zerr err = {0};
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  const char *j =
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]";
#else
  const char *j =
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]";
#endif
  ck_assert_int_eq(tc_build(j, &s, &c, &err), 0);
  struct bytesrc *src = bytesrc_from_static(raw, sizeof raw);
  struct codec_env env = {0, NULL, 0}; /* no memory allowed at all */
  struct abytes *a;
  ck_assert_int_eq(chain_decode(c, &s, src, &env, &a, &err), 0);
  ck_assert_ptr_eq(a->fixed, src);
  abytes_free(a);
  bytesrc_unref(src);
  chain_free(c);
}
END_TEST

START_TEST(test_bytes_swap_respects_cap) {
  uint8_t raw[64] = {0};
  struct codec_spec s = tc_spec1(DT_UINT64, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  const char *j =
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]";
#else
  const char *j =
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]";
#endif
  expect_fail(j, &s, raw, sizeof raw, 63, EFBIG, "decode limit");
}
END_TEST

/* ---- gzip ---- */

START_TEST(test_gzip_roundtrip) {
  size_t n = 300000, clen;
  uint8_t *raw = pattern(n);
  uint8_t *gz = tc_deflate(raw, n, 15 + 16, 6, &clen);
  expect_u8("[\"bytes\",{\"name\":\"gzip\",\"configuration\":{\"level\":5}}]",
            gz, clen, raw, n);
  free(gz);
  /* zlib-wrapped streams are accepted too. */
  uint8_t *zl = tc_deflate(raw, n, 15, 6, &clen);
  expect_u8("[\"bytes\",\"gzip\"]", zl, clen, raw, n);
  free(zl);
  /* Two gzip members back to back decode to the concatenation. */
  size_t l1, l2;
  uint8_t *g1 = tc_deflate(raw, 1000, 31, 6, &l1);
  uint8_t *g2 = tc_deflate(raw + 1000, 2000, 31, 6, &l2);
  uint8_t *both = malloc(l1 + l2);
  memcpy(both, g1, l1);
  memcpy(both + l1, g2, l2);
  expect_u8("[\"bytes\",\"gzip\"]", both, l1 + l2, raw, 3000);
  free(g1);
  free(g2);
  free(both);
  /* Empty payload. */
  uint8_t *ge = tc_deflate("", 0, 31, 6, &clen);
  struct codec_spec s = tc_spec1(DT_UINT8, 0);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(tc_run("[\"bytes\",\"gzip\"]", &s, ge, clen, 1 << 20, &a, &err),
                   0);
  ck_assert_uint_eq(a->fixed->size, 0);
  abytes_free(a);
  free(ge);
  free(raw);
}
END_TEST

START_TEST(test_gzip_bad) {
  size_t n = 50000, clen;
  uint8_t *raw = pattern(n);
  uint8_t *gz = tc_deflate(raw, n, 31, 6, &clen);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  const char *j = "[\"bytes\",\"gzip\"]";
  const char *msg = "gzip: corrupt or truncated stream";
  /* truncated at several points, including inside header and trailer */
  size_t cuts[] = {0, 1, 5, 10, clen / 2, clen - 4, clen - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
    expect_fail(j, &s, gz, cuts[i], 1 << 20, EIO, msg);
  /* corrupt: bad magic, damaged payload, damaged CRC trailer */
  size_t spots[] = {0, clen / 3, clen - 6};
  for (size_t i = 0; i < sizeof spots / sizeof spots[0]; i++) {
    uint8_t *bad = malloc(clen);
    memcpy(bad, gz, clen);
    bad[spots[i]] ^= 0x5a;
    bad[spots[i] + 1] ^= 0xa5;
    expect_fail(j, &s, bad, clen, 1 << 20, EIO, "gzip: corrupt");
    free(bad);
  }
  /* not gzip at all */
  expect_fail(j, &s, "hello world, not gzip", 21, 1 << 20, EIO, msg);
  /* trailing garbage after the member */
  uint8_t *tail = malloc(clen + 3);
  memcpy(tail, gz, clen);
  memcpy(tail + clen, "xyz", 3);
  expect_fail(j, &s, tail, clen + 3, 1 << 20, EIO, msg);
  free(tail);
  free(gz);
  free(raw);
}
END_TEST

START_TEST(test_gzip_bomb) {
  size_t n = 10 << 20, clen;
  uint8_t *zeros = calloc(1, n);
  uint8_t *gz = tc_deflate(zeros, n, 31, 6, &clen);
  ck_assert_uint_lt(clen, 20000);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  expect_fail("[\"bytes\",\"gzip\"]", &s, gz, clen, 1 << 20, EFBIG,
              "gzip: decompressed data exceeds the decode limit");
  free(gz);
  free(zeros);
}
END_TEST

/* ---- zstd ---- */

START_TEST(test_zstd_roundtrip) {
  size_t n = 500000, l1, l2;
  uint8_t *raw = pattern(n);
  uint8_t *known = zstd_known(raw, n, 0, &l1);
  expect_u8("[\"bytes\",{\"name\":\"zstd\",\"configuration\":{\"level\":0,"
            "\"checksum\":false}}]",
            known, l1, raw, n);
  uint8_t *unk = zstd_unknown(raw, n, &l2);
  expect_u8("[\"bytes\",\"zstd\"]", unk, l2, raw, n);
  /* Two frames, one of each kind, decode to the concatenation. */
  size_t a1, a2;
  uint8_t *f1 = zstd_known(raw, 200000, 1, &a1);
  uint8_t *f2 = zstd_unknown(raw + 200000, n - 200000, &a2);
  uint8_t *both = malloc(a1 + a2);
  memcpy(both, f1, a1);
  memcpy(both + a1, f2, a2);
  expect_u8("[\"bytes\",\"zstd\"]", both, a1 + a2, raw, n);
  /* and the other order */
  free(f1);
  free(f2);
  f1 = zstd_unknown(raw, 1234, &a1);
  f2 = zstd_known(raw + 1234, n - 1234, 0, &a2);
  memcpy(both, f1, a1);
  memcpy(both + a1, f2, a2);
  expect_u8("[\"bytes\",\"zstd\"]", both, a1 + a2, raw, n);
  free(both);
  free(f1);
  free(f2);
  free(known);
  free(unk);
  free(raw);
}
END_TEST

START_TEST(test_zstd_bad) {
  size_t n = 100000, k, u;
  uint8_t *raw = pattern(n);
  uint8_t *known = zstd_known(raw, n, 1, &k);
  uint8_t *unk = zstd_unknown(raw, n, &u);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  const char *j = "[\"bytes\",\"zstd\"]";
  size_t cuts[] = {0, 1, 4, 7, k / 2, k - 1};
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++)
    expect_fail(j, &s, known, cuts[i], 1 << 20, EIO, "zstd: corrupt");
  size_t ucuts[] = {3, u / 2, u - 1};
  for (size_t i = 0; i < sizeof ucuts / sizeof ucuts[0]; i++)
    expect_fail(j, &s, unk, ucuts[i], 1 << 20, EIO, "zstd: corrupt");
  /* bad magic */
  uint8_t *bad = malloc(k);
  memcpy(bad, known, k);
  bad[0] ^= 0xff;
  expect_fail(j, &s, bad, k, 1 << 20, EIO, "zstd: corrupt");
  /* damaged checksum of a checksummed frame */
  memcpy(bad, known, k);
  bad[k - 1] ^= 0xff;
  expect_fail(j, &s, bad, k, 1 << 20, EIO, "zstd: corrupt");
  /* damaged payload */
  memcpy(bad, known, k);
  for (size_t i = k / 3; i < k / 3 + 16; i++)
    bad[i] ^= 0x55;
  expect_fail(j, &s, bad, k, 1 << 20, EIO, "zstd: corrupt");
  /* trailing garbage after a valid frame */
  uint8_t *tail = malloc(k + 5);
  memcpy(tail, known, k);
  memcpy(tail + k, "abcde", 5);
  expect_fail(j, &s, tail, k + 5, 1 << 20, EIO, "zstd: corrupt");
  free(tail);
  free(bad);
  free(known);
  free(unk);
  free(raw);
}
END_TEST

/* Frames over 16 MiB of known size decode in input steps straight into
 * their buffer: the same bytes, alone and beside another frame; a cut or
 * damaged one fails; a raised stop flag interrupts it. */
START_TEST(test_zstd_large_known) {
  size_t n = (size_t)20 << 20, k, u;
  uint8_t *raw = pattern(n);
  uint8_t *known = zstd_known(raw, n, 1, &k);
  expect_u8("[\"bytes\",\"zstd\"]", known, k, raw, n);
  uint8_t *small = zstd_unknown(raw, 1000, &u);
  uint8_t *both = malloc(u + k);
  memcpy(both, small, u);
  memcpy(both + u, known, k);
  uint8_t *want = malloc(n + 1000);
  memcpy(want, raw, 1000);
  memcpy(want + 1000, raw, n);
  expect_u8("[\"bytes\",\"zstd\"]", both, u + k, want, n + 1000);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  const char *j = "[\"bytes\",\"zstd\"]";
  expect_fail(j, &s, known, k / 2, (size_t)1 << 26, EIO, "zstd: corrupt");
  expect_fail(j, &s, known, k - 1, (size_t)1 << 26, EIO, "zstd: corrupt");
  uint8_t *bad = malloc(k);
  memcpy(bad, known, k);
  for (size_t i = k / 2; i < k / 2 + 64; i++)
    bad[i] ^= 0x5a;
  expect_fail(j, &s, bad, k, (size_t)1 << 26, EIO, "zstd: corrupt");
  /* the decode limit still holds */
  expect_fail(j, &s, known, k, n - 1, EFBIG, "decode limit");
  /* stop */
  struct chain *c;
  struct zerr err = {0};
  ck_assert_int_eq(tc_build(j, &s, &c, &err), 0);
  struct bytesrc *src = bytesrc_from_static(known, k);
  atomic_int stop = 1;
  struct codec_env env = {(size_t)1 << 26, &stop, 0};
  struct abytes *a = NULL;
  ck_assert_int_eq(chain_decode(c, &s, src, &env, &a, &err), -EINTR);
  ck_assert_ptr_null(a);
  bytesrc_unref(src);
  chain_free(c);
  free(bad);
  free(want);
  free(both);
  free(small);
  free(known);
  free(raw);
}
END_TEST

START_TEST(test_zstd_bomb) {
  size_t n = 10 << 20, k, u;
  uint8_t *zeros = calloc(1, n);
  uint8_t *known = zstd_known(zeros, n, 0, &k);
  uint8_t *unk = zstd_unknown(zeros, n, &u);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  expect_fail("[\"bytes\",\"zstd\"]", &s, known, k, 1 << 20, EFBIG,
              "exceeds the decode limit");
  expect_fail("[\"bytes\",\"zstd\"]", &s, unk, u, 1 << 20, EFBIG,
              "exceeds the decode limit");
  /* A forged header claiming an enormous size is refused before any
   * allocation: many small frames that together exceed the cap. */
  size_t one;
  uint8_t *f = zstd_known(zeros, 600000, 0, &one);
  uint8_t *two = malloc(2 * one);
  memcpy(two, f, one);
  memcpy(two + one, f, one);
  expect_fail("[\"bytes\",\"zstd\"]", &s, two, 2 * one, 1 << 20, EFBIG,
              "exceeds the decode limit");
  free(two);
  free(f);
  free(known);
  free(unk);
  free(zeros);
}
END_TEST

/* ---- crc32c ---- */

START_TEST(test_crc32c_vector) {
  uint8_t buf[13] = "123456789";
  uint32_t want = 0xE3069283u;
  ck_assert_uint_eq(tc_crc32c(buf, 9), want);
  buf[9] = (uint8_t)want;
  buf[10] = (uint8_t)(want >> 8);
  buf[11] = (uint8_t)(want >> 16);
  buf[12] = (uint8_t)(want >> 24);
  expect_u8("[\"bytes\",\"crc32c\"]", buf, 13, buf, 9);
  /* The output is a window onto the input: same memory, no copy. */
  struct codec_spec s = tc_spec1(DT_UINT8, 9);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(
      tc_run("[\"bytes\",\"crc32c\"]", &s, buf, 13, 1 << 20, &a, &err), 0);
  ck_assert_ptr_eq(a->fixed->mem, buf);
  abytes_free(a);
  /* CRC of nothing is 0: a 4-byte chunk of zeros is a valid empty payload */
  uint8_t z[4] = {0};
  struct codec_spec s0 = tc_spec1(DT_UINT8, 0);
  ck_assert_int_eq(tc_run("[\"bytes\",\"crc32c\"]", &s0, z, 4, 1 << 20, &a, &err),
                   0);
  abytes_free(a);
}
END_TEST

START_TEST(test_crc32c_table_matches_bitwise) {
  /* Every length 0..100 plus some long ones, at odd alignments. */
  uint8_t *raw = pattern(5000);
  uint8_t *buf = malloc(5000 + 8);
  size_t lens[110];
  size_t nl = 0;
  for (size_t l = 0; l <= 100; l++)
    lens[nl++] = l;
  lens[nl++] = 1023;
  lens[nl++] = 4096;
  lens[nl++] = 4999;
  for (size_t i = 0; i < nl; i++) {
    size_t l = lens[i];
    size_t at = i % 3; /* misalign the payload */
    memcpy(buf + at, raw, l);
    uint32_t c = tc_crc32c(raw, l);
    for (int b = 0; b < 4; b++)
      buf[at + l + (size_t)b] = (uint8_t)(c >> (8 * b));
    expect_u8("[\"bytes\",\"crc32c\"]", buf + at, l + 4, raw, l);
  }
  free(buf);
  free(raw);
}
END_TEST

START_TEST(test_crc32c_bad) {
  uint8_t buf[13] = "123456789";
  buf[9] = 0x83; /* right CRC is 83 92 06 e3 */
  buf[10] = 0x92;
  buf[11] = 0x06;
  buf[12] = 0xe4;
  struct codec_spec s = tc_spec1(DT_UINT8, 9);
  expect_fail("[\"bytes\",\"crc32c\"]", &s, buf, 13, 1 << 20, EIO,
              "crc32c: checksum mismatch (stored e4069283, computed e3069283)");
  buf[12] = 0xe3;
  buf[0] = '0';
  expect_fail("[\"bytes\",\"crc32c\"]", &s, buf, 13, 1 << 20, EIO,
              "crc32c: checksum mismatch");
  struct codec_spec s0 = tc_spec1(DT_UINT8, 0);
  expect_fail("[\"bytes\",\"crc32c\"]", &s0, buf, 3, 1 << 20, EIO,
              "shorter than the 4-byte checksum");
  expect_fail("[\"bytes\",\"crc32c\"]", &s0, buf, 0, 1 << 20, EIO,
              "shorter than the 4-byte checksum");
}
END_TEST

START_TEST(test_chain_full_stack) {
  /* bytes(big) -> gzip -> zstd -> crc32c on int32, decoded in reverse. */
  int32_t vals[1000];
  uint8_t be[4000];
  for (int i = 0; i < 1000; i++) {
    vals[i] = i * 7919 - 3000000;
    uint32_t u = (uint32_t)vals[i];
    be[4 * i] = (uint8_t)(u >> 24);
    be[4 * i + 1] = (uint8_t)(u >> 16);
    be[4 * i + 2] = (uint8_t)(u >> 8);
    be[4 * i + 3] = (uint8_t)u;
  }
  size_t gl, zl;
  uint8_t *gz = tc_deflate(be, sizeof be, 31, 6, &gl);
  uint8_t *zs = zstd_known(gz, gl, 0, &zl);
  uint8_t *enc = malloc(zl + 4);
  memcpy(enc, zs, zl);
  uint32_t c = tc_crc32c(zs, zl);
  for (int b = 0; b < 4; b++)
    enc[zl + (size_t)b] = (uint8_t)(c >> (8 * b));
  struct codec_spec s = tc_spec1(DT_INT32, 1000);
  struct abytes *a;
  struct zerr err = {0};
  int rc = tc_run("[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},"
               "\"gzip\",\"zstd\",\"crc32c\"]",
               &s, enc, zl + 4, 1 << 20, &a, &err);
  ck_assert_msg(rc == 0, "%s", err.msg);
  uint8_t *got = tc_fixed_bytes(a);
  ck_assert(memcmp(got, vals, sizeof vals) == 0);
  free(got);
  abytes_free(a);
  /* An error inside the chain surfaces with the codec's name. */
  enc[zl + 1] ^= 1;
  rc = tc_run("[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}},"
           "\"gzip\",\"zstd\",\"crc32c\"]",
           &s, enc, zl + 4, 1 << 20, &a, &err);
  ck_assert_int_eq(rc, -EIO);
  ck_assert(strstr(err.msg, "crc32c:"));
  /* Element count must match the spec. */
  expect_fail("[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]",
              &s, be, 3996, 1 << 20, EIO, "bytes:");
  free(enc);
  free(zs);
  free(gz);
}
END_TEST

/* ---- abytes ---- */

START_TEST(test_abytes_fill) {
  struct zerr err = {0};
  struct abytes *a;
  struct codec_env env = {1u << 20, NULL, 0};
  int32_t fv = -7;
  struct codec_spec s = tc_spec1(DT_INT32, 5);
  s.fill = (const uint8_t *)&fv;
  s.fill_len = 4;
  ck_assert_int_eq(abytes_new_fill(&s, &env, &a, &err), 0);
  ck_assert_uint_eq(a->n, 5);
  ck_assert_uint_eq(a->elsize, 4);
  ck_assert_uint_eq(a->fixed->size, 20);
  for (int i = 0; i < 5; i++) {
    int32_t v;
    memcpy(&v, a->fixed->mem + 4 * i, 4);
    ck_assert_int_eq(v, -7);
  }
  ck_assert_uint_ge(abytes_mem_cost(a), 20);
  abytes_free(a);

  struct codec_spec t = tc_spec1(DT_STRING, 3);
  t.fill = (const uint8_t *)"abc";
  t.fill_len = 3;
  ck_assert_int_eq(abytes_new_fill(&t, &env, &a, &err), 0);
  ck_assert_uint_eq(a->elsize, 0);
  ck_assert_uint_eq(a->data->size, 9);
  for (int i = 0; i <= 3; i++)
    ck_assert_uint_eq(a->offsets[i], 3 * (uint64_t)i);
  ck_assert(memcmp(a->data->mem, "abcabcabc", 9) == 0);
  abytes_free(a);

  t.fill = NULL;
  t.fill_len = 0;
  ck_assert_int_eq(abytes_new_fill(&t, &env, &a, &err), 0);
  ck_assert_uint_eq(a->data->size, 0);
  ck_assert_uint_eq(a->offsets[3], 0);
  abytes_free(a);

  /* wrong fill size and absurd element counts fail cleanly */
  s.fill_len = 2;
  ck_assert_int_eq(abytes_new_fill(&s, &env, &a, &err), -EIO);
  s.fill_len = 4;
  s.nelem = UINT64_MAX / 2;
  ck_assert_int_eq(abytes_new_fill(&s, &env, &a, &err), -EFBIG);
  t.nelem = UINT64_MAX;
  ck_assert_int_eq(abytes_new_fill(&t, &env, &a, &err), -EFBIG);
  /* the decode limit holds for fills too: 1 MiB of fill is the cap here */
  s.nelem = (1u << 18) + 1;
  ck_assert_int_eq(abytes_new_fill(&s, &env, &a, &err), -EFBIG);
  s.nelem = 1u << 18;
  ck_assert_int_eq(abytes_new_fill(&s, &env, &a, &err), 0);
  abytes_free(a);

  abytes_free(NULL);
  ck_assert_uint_eq(abytes_mem_cost(NULL), 0);
  a = abytes_alloc();
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_null(a->fixed);
  abytes_free(a);
}
END_TEST

/* Assemble the suite. */
START_TEST(test_transpose) {
  /* A 2x3 int16 chunk stored transposed (3x2): encoded C order is the
   * decoded array's column-major order. */
  struct codec_spec s = tc_spec1(DT_INT16, 6);
  s.ndim = 2;
  s.shape[0] = 2;
  s.shape[1] = 3;
  const int16_t enc[6] = {0, 3, 1, 4, 2, 5};
  struct abytes *a;
  struct zerr err = {0};
  const char *order[] = {
      "[{\"name\":\"transpose\",\"configuration\":{\"order\":[1,0]}},"
      "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
      "[{\"name\":\"transpose\",\"configuration\":{\"order\":\"F\"}},"
      "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]"};
  for (int t = 0; t < 2; t++) {
    ck_assert_int_eq(tc_run(order[t], &s, enc, sizeof enc, 1 << 20, &a, &err), 0);
    uint8_t *p = tc_fixed_bytes(a);
    for (int16_t i = 0; i < 6; i++) {
      int16_t v;
      memcpy(&v, p + 2 * i, 2);
      ck_assert_int_eq(v, i);
    }
    free(p);
    abytes_free(a);
  }
  /* Variable-length elements are permuted too. */
  struct codec_spec vs = s;
  vs.dtype = dtype_of(DT_STRING);
  vs.fill = (const uint8_t *)"";
  vs.fill_len = 0;
  const uint8_t venc[] = {6, 0,   0, 0, 1,   0, 0,   0, 'a', 1,  0, 0,
                          0, 'd', 1, 0, 0,   0, 'b', 1, 0,   0,  0, 'e',
                          1, 0,   0, 0, 'c', 1, 0,   0, 0,   'f'};
  ck_assert_int_eq(tc_run("[{\"name\":\"transpose\",\"configuration\":{"
                       "\"order\":[1,0]}},{\"name\":\"vlen-utf8\"}]",
                       &vs, venc, sizeof venc, 1 << 20, &a, &err),
                   0);
  char text[7] = {0};
  ck_assert_int_eq(bytesrc_read_range(a->data, 0, 6, text, &err), 0);
  ck_assert_str_eq(text, "abcdef");
  abytes_free(a);
  /* Not a permutation, wrong axis count, bad legacy string. */
  const char *bad[] = {
      "[{\"name\":\"transpose\",\"configuration\":{\"order\":[0,0]}},"
      "{\"name\":\"bytes\"}]",
      "[{\"name\":\"transpose\",\"configuration\":{\"order\":[0]}},"
      "{\"name\":\"bytes\"}]",
      "[{\"name\":\"transpose\",\"configuration\":{\"order\":\"X\"}},"
      "{\"name\":\"bytes\"}]",
      "[{\"name\":\"transpose\"},{\"name\":\"bytes\"}]"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct chain *c;
    ck_assert_msg(tc_build(bad[i], &s, &c, &err) < 0, "accepted %s", bad[i]);
    ck_assert(strstr(err.msg, "transpose") != NULL);
  }
}
END_TEST

START_TEST(test_sharding) {
  /* uint16 shard [4] of inner chunks [2]; chunk 1 is empty (fill 7). */
  static const uint8_t fill7[2] = {7, 0};
  struct codec_spec s = tc_spec1(DT_UINT16, 4);
  s.fill = fill7;
  const char *json =
      "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":"
      "[2],\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
      "\"little\"}}],\"index_codecs\":[{\"name\":\"bytes\",\"configuration\""
      ":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]}}]";
  uint8_t shard[4 + 32 + 4];
  const uint16_t inner[2] = {1, 2};
  memcpy(shard, inner, 4);
  uint64_t idx[4] = {0, 4, UINT64_MAX, UINT64_MAX};
  memcpy(shard + 4, idx, 32);
  uint32_t crc = tc_crc32c(shard + 4, 32);
  memcpy(shard + 36, &crc, 4);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(tc_run(json, &s, shard, sizeof shard, 1 << 20, &a, &err), 0);
  uint8_t *p = tc_fixed_bytes(a);
  const uint16_t want[4] = {1, 2, 7, 7};
  ck_assert_int_eq(memcmp(p, want, 8), 0);
  free(p);
  abytes_free(a);
  /* A lying index: inner chunk 0 outside the shard (checksum updated). */
  uint8_t bad[sizeof shard];
  memcpy(bad, shard, sizeof bad);
  uint64_t lie = 1000;
  memcpy(bad + 4, &lie, 8);
  crc = tc_crc32c(bad + 4, 32);
  memcpy(bad + 36, &crc, 4);
  ck_assert_int_eq(tc_run(json, &s, bad, sizeof bad, 1 << 20, &a, &err), -EIO);
  ck_assert(strstr(err.msg, "outside") != NULL);
  /* Wrong index checksum. */
  memcpy(bad, shard, sizeof bad);
  bad[sizeof bad - 1] ^= 1;
  ck_assert_int_eq(tc_run(json, &s, bad, sizeof bad, 1 << 20, &a, &err), -EIO);
  ck_assert(strstr(err.msg, "crc32c") != NULL);
  /* Shard shorter than its index. */
  ck_assert_int_eq(tc_run(json, &s, shard, 20, 1 << 20, &a, &err), -EIO);
  ck_assert(strstr(err.msg, "shorter") != NULL);
}
END_TEST

START_TEST(test_reshape_squeeze) {
  /* Shape changes, element order does not. */
  struct codec_spec s = tc_spec1(DT_INT16, 6);
  s.ndim = 3;
  s.shape[0] = 2;
  s.shape[1] = 1;
  s.shape[2] = 3;
  const int16_t enc[6] = {0, 1, 2, 3, 4, 5};
  const char *ok[] = {
      "[{\"name\":\"reshape\",\"configuration\":{\"shape\":[6]}},"
      "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
      "[{\"name\":\"reshape\",\"configuration\":{\"shape\":[[0,1],-1]}},"
      "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
      "[{\"name\":\"zarrs.squeeze\"},"
      "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]"};
  for (size_t t = 0; t < sizeof ok / sizeof *ok; t++) {
    struct abytes *a;
    struct zerr err = {0};
    ck_assert_msg(tc_run(ok[t], &s, enc, sizeof enc, 1 << 20, &a, &err) == 0,
                  "%s: %s", ok[t], err.msg);
    uint8_t *p = tc_fixed_bytes(a);
    ck_assert_int_eq(memcmp(p, enc, sizeof enc), 0);
    free(p);
    abytes_free(a);
  }
  /* A shape with another element count is refused. */
  struct chain *c;
  struct zerr err = {0};
  ck_assert_int_lt(
      tc_build("[{\"name\":\"reshape\",\"configuration\":{\"shape\":"
               "[5]}},{\"name\":\"bytes\",\"configuration\":{"
               "\"endian\":\"little\"}}]",
               &s, &c, &err),
      0);
  ck_assert(strstr(err.msg, "reshape") != NULL);
}
END_TEST

START_TEST(test_delta) {
  struct codec_spec s = tc_spec1(DT_INT32, 4);
  const int32_t enc[4] = {5, 1, -2, 10};
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(tc_run("[{\"name\":\"numcodecs.delta\",\"configuration\":{"
                       "\"dtype\":\"<i4\",\"astype\":\"<i4\"}},{\"name\":"
                       "\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
                       &s, enc, sizeof enc, 1 << 20, &a, &err),
                   0);
  uint8_t *p = tc_fixed_bytes(a);
  const int32_t want[4] = {5, 6, 4, 14};
  ck_assert_int_eq(memcmp(p, want, sizeof want), 0);
  free(p);
  abytes_free(a);
  /* Integers wrap like numpy's. */
  struct codec_spec s8 = tc_spec1(DT_UINT8, 3);
  const uint8_t e8[3] = {250, 10, 1};
  ck_assert_int_eq(tc_run("[{\"name\":\"numcodecs.delta\",\"configuration\":{"
                       "\"dtype\":\"uint8\"}},{\"name\":\"bytes\"}]",
                       &s8, e8, sizeof e8, 1 << 20, &a, &err),
                   0);
  p = tc_fixed_bytes(a);
  ck_assert_int_eq(p[1], 4);
  ck_assert_int_eq(p[2], 5);
  free(p);
  abytes_free(a);
  /* A dtype that is not the array's, or a type change, is refused. */
  struct chain *c;
  ck_assert_int_lt(tc_build("[{\"name\":\"numcodecs.delta\",\"configuration\":{"
                            "\"dtype\":\"<i2\"}},{\"name\":\"bytes\","
                            "\"configuration\":{\"endian\":\"little\"}}]",
                            &s, &c, &err),
                   0);
  ck_assert_int_lt(
      tc_build("[{\"name\":\"numcodecs.delta\",\"configuration\":{"
               "\"dtype\":\"<i4\",\"astype\":\"<i2\"}},{\"name\":"
               "\"bytes\",\"configuration\":{\"endian\":\"little\"}}"
               "]",
               &s, &c, &err),
      0);
}
END_TEST

static Suite *codecs_suite(void) {
  Suite *s = suite_create("codecs");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_registry_names);
  tcase_add_test(tc, test_registry_entry_parse);
  tcase_add_test(tc, test_built_without);
  tcase_add_test(tc, test_registry_cfg_helpers);
  tcase_add_test(tc, test_chain_build_errors);
  tcase_add_test(tc, test_chain_build_ok);
  tcase_add_test(tc, test_bytes_endian);
  tcase_add_test(tc, test_bytes_no_swap_is_lazy);
  tcase_add_test(tc, test_bytes_swap_respects_cap);
  tcase_add_test(tc, test_gzip_roundtrip);
  tcase_add_test(tc, test_gzip_bad);
  tcase_add_test(tc, test_gzip_bomb);
  tcase_add_test(tc, test_zstd_roundtrip);
  tcase_add_test(tc, test_zstd_bad);
  tcase_add_test(tc, test_zstd_bomb);
  tcase_add_test(tc, test_zstd_large_known);
  tcase_add_test(tc, test_crc32c_vector);
  tcase_add_test(tc, test_crc32c_table_matches_bitwise);
  tcase_add_test(tc, test_crc32c_bad);
  tcase_add_test(tc, test_chain_full_stack);
  tcase_add_test(tc, test_abytes_fill);
  tcase_add_test(tc, test_transpose);
  tcase_add_test(tc, test_sharding);
  tcase_add_test(tc, test_reshape_squeeze);
  tcase_add_test(tc, test_delta);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(codecs_suite()); }
