/* check_b2b.c - unit tests for the blosc and numcodecs bytes->bytes codecs
 * (codecs/blosc.c, codecs/numcodecs.c). Encoded inputs are produced here
 * with c-blosc, zlib, libzstd, libbz2 and liblz4, or by small hand-written
 * encoders (shuffle and the checksums); when the shared fixtures exist,
 * the zarrs snapshot stores are decoded and compared too. */
#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "config.h"
#if ZFS_WITH_BLOSC
#include <blosc.h>
#endif
#if ZFS_WITH_BZ2
#include <bzlib.h>
#endif
#if ZFS_WITH_LZ4
#include <lz4.h>
#endif

#include "codecs/chain.h"
#include "codecs/codec.h"
#include "src/util/buf.h"
#include "../testcodec.h"
#include "../testutil.h"

#define MAXDEC ((size_t)1 << 26)

/* snprintf into a path buffer, failing the test on truncation. */
#define PATHF(buf, ...)                                                        \
  do {                                                                         \
    int w_ = snprintf(buf, sizeof buf, __VA_ARGS__);                           \
    ck_assert_msg(w_ >= 0 && (size_t)w_ < sizeof buf, "path too long");        \
  } while (0)

/* The chain "bytes, <codec>" for a uint8 array, in buf. */
static const char *chain_json(char *buf, size_t cap, const char *codec) {
  snprintf(buf, cap,
           "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
           "%s]",
           codec);
  return buf;
}

/* Decode a uint8 chunk through "bytes, <codec>" and compare with want. */
static void expect_u8(const char *codec, const void *enc, size_t len,
                      const uint8_t *want, size_t n) {
  char json[1024];
  chain_json(json, sizeof json, codec);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  struct abytes *a;
  struct zerr err = {0};
  int rc = tc_run(json, &s, enc, len, MAXDEC, &a, &err);
  ck_assert_msg(rc == 0, "%s: %s", codec, err.msg);
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, 1);
  uint8_t *got = tc_fixed_bytes(a);
  ck_assert_msg(n == 0 || memcmp(got, want, n) == 0, "%s: wrong bytes", codec);
  free(got);
  abytes_free(a);
}

/* A decode of n uint8 elements that must fail with errno e and a message
 * containing msg. */
static void expect_fail(const char *codec, size_t n, const void *enc,
                        size_t len, size_t max, int e, const char *msg) {
  char json[1024];
  chain_json(json, sizeof json, codec);
  struct codec_spec s = tc_spec1(DT_UINT8, n);
  struct abytes *a = NULL;
  struct zerr err = {0};
  int rc = tc_run(json, &s, enc, len, max, &a, &err);
  ck_assert_msg(rc == -e, "%s: rc %d (want %d), msg '%s'", codec, rc, -e,
                err.msg);
  ck_assert_ptr_null(a);
  ck_assert_msg(strstr(err.msg, msg), "%s: message '%s' lacks '%s'", codec,
                err.msg, msg);
}

/* chain_build of "bytes, <codec>" must fail with -EIO. */
static void expect_bad_config(const char *codec) {
  char json[1024];
  chain_json(json, sizeof json, codec);
  struct codec_spec s = tc_spec1(DT_UINT8, 4);
  struct chain *c = NULL;
  struct zerr err = {0};
  int rc = tc_build(json, &s, &c, &err);
  ck_assert_msg(rc == -EIO, "%s: rc %d", codec, rc);
  ck_assert_ptr_null(c);
  ck_assert(err.msg[0] != 0);
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

/* ---- registry ---- */

START_TEST(test_b2b_names) {
  static const struct {
    const char *name;
    const char *canonical;
  } cases[] = {
      {"blosc", "blosc"},
      {"numcodecs.blosc", "blosc"},
      {"numcodecs.zlib", "numcodecs.zlib"},
      {"numcodecs.gzip", "numcodecs.gzip"},
      {"numcodecs.zstd", "numcodecs.zstd"},
      {"numcodecs.bz2", "numcodecs.bz2"},
      {"numcodecs.lz4", "numcodecs.lz4"},
      {"numcodecs.shuffle", "numcodecs.shuffle"},
      {"numcodecs.adler32", "numcodecs.adler32"},
      {"numcodecs.crc32", "numcodecs.crc32"},
      {"numcodecs.crc32c", "numcodecs.crc32c"},
      {"numcodecs.fletcher32", "numcodecs.fletcher32"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct codec_impl *c = codec_lookup(cases[i].name);
    ck_assert_msg(c != NULL, "%s not found", cases[i].name);
    ck_assert_str_eq(c->name, cases[i].canonical);
    ck_assert_int_eq(c->kind, CODEC_B2B);
  }
}
END_TEST

/* ---- blosc ---- */
#if ZFS_WITH_BLOSC

/* A blosc frame of p; caller frees. */
static uint8_t *blosc_enc(const void *p, size_t n, const char *cname,
                          int shuffle, size_t typesize, size_t *out) {
  size_t cap = n + BLOSC_MAX_OVERHEAD;
  uint8_t *o = malloc(cap);
  int r = blosc_compress_ctx(5, shuffle, typesize, n, p, o, cap, cname, 0, 1);
  ck_assert_msg(r > 0, "blosc_compress_ctx(%s) = %d", cname, r);
  *out = (size_t)r;
  return o;
}

START_TEST(test_blosc_roundtrip) {
  static const char *const cnames[] = {"blosclz", "lz4", "lz4hc", "zstd",
                                       "zlib"};
  static const char *const shuf[] = {"noshuffle", "shuffle", "bitshuffle"};
  static const size_t sizes[] = {0, 1, 100, 4096, 100003};
  static const size_t types[] = {1, 2, 4, 8};
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    size_t n = sizes[si];
    uint8_t *p = pattern(n);
    for (size_t ci = 0; ci < sizeof cnames / sizeof cnames[0]; ci++)
      for (int sh = 0; sh < 3; sh++)
        for (size_t ti = 0; ti < sizeof types / sizeof types[0]; ti++) {
          size_t len;
          uint8_t *e = blosc_enc(p, n, cnames[ci], sh, types[ti], &len);
          char codec[512];
          snprintf(codec, sizeof codec,
                   "{\"name\":\"blosc\",\"configuration\":{\"cname\":\"%s\","
                   "\"clevel\":5,\"shuffle\":\"%s\",\"typesize\":%zu,"
                   "\"blocksize\":0}}",
                   cnames[ci], shuf[sh], types[ti]);
          expect_u8(codec, e, len, p, n);
          /* numcodecs form: integer shuffle, no typesize. */
          snprintf(codec, sizeof codec,
                   "{\"name\":\"numcodecs.blosc\",\"configuration\":{"
                   "\"cname\":\"%s\",\"clevel\":5,\"shuffle\":%d,"
                   "\"blocksize\":0}}",
                   cnames[ci], sh);
          expect_u8(codec, e, len, p, n);
          /* No configuration at all: the header is enough. */
          expect_u8("\"blosc\"", e, len, p, n);
          free(e);
        }
    free(p);
  }
}
END_TEST

START_TEST(test_blosc_bad) {
  size_t n = 4096, len;
  uint8_t *p = pattern(n);
  uint8_t *e = blosc_enc(p, n, "lz4", 1, 4, &len);
  const char *codec = "\"blosc\"";
  /* Too short for a header. */
  expect_fail(codec, n, e, 8, MAXDEC, EIO, "blosc: corrupt header");
  expect_fail(codec, n, e, 0, MAXDEC, EIO, "blosc: corrupt header");
  /* Truncated frame: cbytes no longer matches. */
  expect_fail(codec, n, e, len - 1, MAXDEC, EIO, "blosc: corrupt header");
  /* Trailing garbage. */
  uint8_t *big = calloc(1, len + 3);
  memcpy(big, e, len);
  expect_fail(codec, n, big, len + 3, MAXDEC, EIO, "blosc: corrupt header");
  free(big);
  /* A header claiming more compressed bytes than there are. */
  uint8_t *c = malloc(len);
  memcpy(c, e, len);
  c[12] = 0xff; /* cbytes */
  c[13] = 0xff;
  expect_fail(codec, n, c, len, MAXDEC, EIO, "blosc: corrupt header");
  /* A bad version byte. */
  memcpy(c, e, len);
  c[0] = 0xee;
  expect_fail(codec, n, c, len, MAXDEC, EIO, "blosc");
  /* nbytes over the cap. */
  expect_fail(codec, n, e, len, n - 1, EFBIG, "decode limit");
  free(c);
  free(e);
  free(p);
  expect_bad_config("{\"name\":\"blosc\",\"configuration\":{\"shuffle\":"
                    "\"sideways\"}}");
  expect_bad_config("{\"name\":\"blosc\",\"configuration\":{\"shuffle\":7}}");
  expect_bad_config("{\"name\":\"blosc\",\"configuration\":{\"clevel\":10}}");
  expect_bad_config("{\"name\":\"blosc\",\"configuration\":{\"cname\":5}}");
  expect_bad_config("{\"name\":\"blosc\",\"configuration\":{\"bogus\":1}}");
}
END_TEST
#endif

/* ---- zlib, gzip, zstd ---- */

/* zlib stream (compress2) of p; caller frees. */
static uint8_t *zlib_enc(const void *p, size_t n, size_t *out) {
  uLongf cap = compressBound(n);
  uint8_t *o = malloc(cap);
  ck_assert_int_eq(compress2(o, &cap, p, n, 5), Z_OK);
  *out = cap;
  return o;
}

START_TEST(test_zlib_gzip_zstd) {
  size_t n = 50000, len, glen;
  uint8_t *p = pattern(n);
  uint8_t *z = zlib_enc(p, n, &len);
  const char *zc =
      "{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":5}}";
  expect_u8(zc, z, len, p, n);
  expect_u8("\"numcodecs.zlib\"", z, len, p, n);
  expect_fail(zc, n, z, len / 2, MAXDEC, EIO, "numcodecs.zlib: corrupt");
  expect_fail(zc, n, z, 0, MAXDEC, EIO, "numcodecs.zlib: corrupt");
  expect_fail(zc, n, z, len, n - 1, EFBIG, "decode limit");
  uint8_t *bad = malloc(len);
  memcpy(bad, z, len);
  bad[0] ^= 0xff;
  expect_fail(zc, n, bad, len, MAXDEC, EIO, "numcodecs.zlib: corrupt");
  free(bad);
  /* gzip: one member, and the data split across two members. */
  uint8_t *g = tc_deflate(p, n, 31, 6, &glen);
  const char *gc =
      "{\"name\":\"numcodecs.gzip\",\"configuration\":{\"level\":1}}";
  expect_u8(gc, g, glen, p, n);
  size_t l1, l2;
  uint8_t *g1 = tc_deflate(p, 1000, 31, 6, &l1);
  uint8_t *g2 = tc_deflate(p + 1000, n - 1000, 31, 6, &l2);
  uint8_t *gg = malloc(l1 + l2);
  memcpy(gg, g1, l1);
  memcpy(gg + l1, g2, l2);
  expect_u8(gc, gg, l1 + l2, p, n);
  expect_fail(gc, n, g, glen - 5, MAXDEC, EIO, "numcodecs.gzip: corrupt");
  /* A zlib stream is not gzip. */
  expect_fail(gc, n, z, len, MAXDEC, EIO, "numcodecs.gzip: corrupt");
  free(g1);
  free(g2);
  free(gg);
  free(g);
  free(z);
  /* zstd */
  size_t cap = ZSTD_compressBound(n);
  uint8_t *zs = malloc(cap);
  size_t zl = ZSTD_compress(zs, cap, p, n, 5);
  ck_assert(!ZSTD_isError(zl));
  const char *sc =
      "{\"name\":\"numcodecs.zstd\",\"configuration\":{\"level\":5,"
      "\"checksum\":false}}";
  expect_u8(sc, zs, zl, p, n);
  expect_fail(sc, n, zs, zl - 3, MAXDEC, EIO, "zstd");
  free(zs);
  free(p);
  expect_bad_config("{\"name\":\"numcodecs.zlib\",\"configuration\":{\"level\":"
                    "\"high\"}}");
  expect_bad_config(
      "{\"name\":\"numcodecs.gzip\",\"configuration\":{\"x\":1}}");
}
END_TEST

/* ---- bz2 ---- */
#if ZFS_WITH_BZ2

/* bzip2 stream of p; caller frees. */
static uint8_t *bz2_enc(const void *p, size_t n, size_t *out) {
  unsigned cap = (unsigned)(n + n / 100 + 600);
  uint8_t *o = malloc(cap);
  ck_assert_int_eq(BZ2_bzBuffToBuffCompress((char *)o, &cap, (char *)p,
                                            (unsigned)n, 5, 0, 0),
                   BZ_OK);
  *out = cap;
  return o;
}

START_TEST(test_bz2) {
  size_t n = 300000, len;
  uint8_t *p = pattern(n);
  uint8_t *b = bz2_enc(p, n, &len);
  const char *bc =
      "{\"name\":\"numcodecs.bz2\",\"configuration\":{\"level\":5}}";
  expect_u8(bc, b, len, p, n);
  expect_u8("\"numcodecs.bz2\"", b, len, p, n);
  /* Two concatenated streams. */
  size_t l1, l2;
  uint8_t *b1 = bz2_enc(p, 777, &l1), *b2 = bz2_enc(p + 777, n - 777, &l2);
  uint8_t *bb = malloc(l1 + l2);
  memcpy(bb, b1, l1);
  memcpy(bb + l1, b2, l2);
  expect_u8(bc, bb, l1 + l2, p, n);
  /* Truncated at several points. */
  expect_fail(bc, n, b, len - 1, MAXDEC, EIO, "numcodecs.bz2: corrupt");
  expect_fail(bc, n, b, len / 2, MAXDEC, EIO, "numcodecs.bz2: corrupt");
  expect_fail(bc, n, b, 10, MAXDEC, EIO, "numcodecs.bz2: corrupt");
  expect_fail(bc, n, b, 0, MAXDEC, EIO, "numcodecs.bz2: corrupt");
  /* Not bzip2 at all. */
  expect_fail(bc, n, p, 1000, MAXDEC, EIO, "numcodecs.bz2");
  /* Over the cap. */
  expect_fail(bc, n, b, len, n - 1, EFBIG, "decode limit");
  free(b1);
  free(b2);
  free(bb);
  free(b);
  free(p);
}
END_TEST
#endif

/* ---- lz4 ---- */
#if ZFS_WITH_LZ4

/* numcodecs LZ4: 4-byte LE size, then a raw block; caller frees. */
static uint8_t *lz4_enc(const void *p, size_t n, size_t *out) {
  int cap = LZ4_compressBound((int)n);
  uint8_t *o = malloc((size_t)cap + 4);
  o[0] = (uint8_t)n;
  o[1] = (uint8_t)(n >> 8);
  o[2] = (uint8_t)(n >> 16);
  o[3] = (uint8_t)(n >> 24);
  int r = LZ4_compress_default(p, (char *)o + 4, (int)n, cap);
  ck_assert_int_gt(r, 0);
  *out = (size_t)r + 4;
  return o;
}

START_TEST(test_lz4) {
  size_t n = 70000, len;
  uint8_t *p = pattern(n);
  uint8_t *l = lz4_enc(p, n, &len);
  const char *lc =
      "{\"name\":\"numcodecs.lz4\",\"configuration\":{\"acceleration\":1}}";
  expect_u8(lc, l, len, p, n);
  expect_u8("\"numcodecs.lz4\"", l, len, p, n);
  size_t sl;
  uint8_t *s = lz4_enc(p, 1, &sl);
  expect_u8(lc, s, sl, p, 1);
  free(s);
  expect_fail(lc, n, l, len - 1, MAXDEC, EIO, "numcodecs.lz4: corrupt");
  expect_fail(lc, n, l, len / 2, MAXDEC, EIO, "numcodecs.lz4: corrupt");
  expect_fail(lc, n, l, 3, MAXDEC, EIO, "numcodecs.lz4: chunk of 3 bytes");
  /* A size header that disagrees with the block. */
  uint8_t *c = malloc(len);
  memcpy(c, l, len);
  c[0] ^= 1;
  expect_fail(lc, n, c, len, MAXDEC, EIO, "numcodecs.lz4: corrupt");
  /* A huge size header stops before allocating. */
  c[3] = 0x7f;
  expect_fail(lc, n, c, len, MAXDEC, EFBIG, "decode limit");
  free(c);
  expect_fail(lc, n, l, len, n - 1, EFBIG, "decode limit");
  free(l);
  free(p);
}
END_TEST
#endif

/* ---- shuffle ---- */

/* numcodecs byte shuffle: byte k of element j goes to k*count + j;
 * trailing bytes stay. Caller frees. */
static uint8_t *shuffle_enc(const uint8_t *p, size_t n, size_t es) {
  uint8_t *o = malloc(n ? n : 1);
  size_t count = n / es;
  for (size_t j = 0; j < count; j++)
    for (size_t k = 0; k < es; k++)
      o[k * count + j] = p[j * es + k];
  memcpy(o + count * es, p + count * es, n - count * es);
  return o;
}

START_TEST(test_shuffle) {
  static const size_t es[] = {1, 2, 3, 4, 8, 16};
  static const size_t ns[] = {0, 1, 7, 48, 1001};
  for (size_t ei = 0; ei < sizeof es / sizeof es[0]; ei++)
    for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
      size_t n = ns[ni];
      uint8_t *p = pattern(n);
      uint8_t *s = shuffle_enc(p, n, es[ei]);
      char codec[256];
      snprintf(codec, sizeof codec,
               "{\"name\":\"numcodecs.shuffle\",\"configuration\":{"
               "\"elementsize\":%zu}}",
               es[ei]);
      if (n > 0)
        expect_u8(codec, s, n, p, n);
      free(s);
      free(p);
    }
  /* The default elementsize is 4. */
  uint8_t p[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  uint8_t *s = shuffle_enc(p, 8, 4);
  expect_u8("\"numcodecs.shuffle\"", s, 8, p, 8);
  free(s);
  expect_bad_config("{\"name\":\"numcodecs.shuffle\",\"configuration\":{"
                    "\"elementsize\":0}}");
  expect_bad_config("{\"name\":\"numcodecs.shuffle\",\"configuration\":{"
                    "\"elementsize\":\"2\"}}");
}
END_TEST

/* ---- checksums ---- */

/* Fletcher-32 as numcodecs' _fletcher32 (with_odd = 1) or zarrs (0). */
static uint32_t fletcher_ref(const uint8_t *data, size_t n, int with_odd) {
  uint32_t sum1 = 0, sum2 = 0;
  size_t len = n / 2;
  while (len) {
    size_t tlen = len < 360 ? len : 360;
    len -= tlen;
    do {
      sum1 += (uint32_t)((uint16_t)data[0] << 8) | (uint16_t)data[1];
      data += 2;
      sum2 += sum1;
    } while (--tlen);
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if (n % 2 && with_odd) {
    sum1 += (uint32_t)((uint16_t)data[0] << 8);
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return (sum2 << 16) | sum1;
}

/* p with a 4-byte LE word v at the start or end; caller frees. */
static uint8_t *with_sum(const uint8_t *p, size_t n, uint32_t v, int at_end) {
  uint8_t *o = malloc(n + 4);
  uint8_t w[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16),
                  (uint8_t)(v >> 24)};
  memcpy(o + (at_end ? 0 : 4), p, n);
  memcpy(o + (at_end ? n : 0), w, 4);
  return o;
}

/* Round trip and corruption for one checksum codec at one location. */
static void check_sum(const char *name, const char *loc, int at_end,
                      uint32_t (*fn)(const uint8_t *, size_t, int), int arg) {
  static const size_t ns[] = {0, 1, 3, 4, 1000, 1001};
  for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
    size_t n = ns[ni];
    uint8_t *p = pattern(n);
    uint8_t *e = with_sum(p, n, fn(p, n, arg), at_end);
    char codec[256], msg[128];
    if (loc)
      snprintf(codec, sizeof codec,
               "{\"name\":\"%s\",\"configuration\":{\"location\":\"%s\"}}",
               name, loc);
    else
      snprintf(codec, sizeof codec, "{\"name\":\"%s\"}", name);
    snprintf(msg, sizeof msg, "%s: checksum mismatch", name);
    expect_u8(codec, e, n + 4, p, n);
    /* A flipped payload byte, a flipped checksum byte. (The zarrs
     * Fletcher-32 variant never covers an odd last byte, so flipping the
     * only byte of a 1-byte payload goes unnoticed there.) */
    int unprotected = fn == fletcher_ref && (n & 1) && n / 2 == n - 1;
    if (n > 0 && !unprotected) {
      e[at_end ? n / 2 : 4 + n / 2] ^= 0x10;
      expect_fail(codec, n, e, n + 4, MAXDEC, EIO, msg);
      e[at_end ? n / 2 : 4 + n / 2] ^= 0x10;
    }
    e[at_end ? n : 0] ^= 0x01;
    expect_fail(codec, n, e, n + 4, MAXDEC, EIO, msg);
    /* Shorter than the checksum. */
    expect_fail(codec, 0, e, 3, MAXDEC, EIO, name);
    free(e);
    free(p);
  }
}

/* Adapters to one signature. */
static uint32_t sum_adler(const uint8_t *p, size_t n, int a) {
  (void)a;
  return (uint32_t)adler32(adler32(0L, Z_NULL, 0), p, (uInt)n);
}
static uint32_t sum_crc(const uint8_t *p, size_t n, int a) {
  (void)a;
  return (uint32_t)crc32(crc32(0L, Z_NULL, 0), p, (uInt)n);
}
static uint32_t sum_crc32c(const uint8_t *p, size_t n, int a) {
  (void)a;
  return tc_crc32c(p, n);
}

START_TEST(test_checksums) {
  check_sum("numcodecs.adler32", NULL, 0, sum_adler, 0);
  check_sum("numcodecs.adler32", "start", 0, sum_adler, 0);
  check_sum("numcodecs.adler32", "end", 1, sum_adler, 0);
  check_sum("numcodecs.crc32", NULL, 0, sum_crc, 0);
  check_sum("numcodecs.crc32", "start", 0, sum_crc, 0);
  check_sum("numcodecs.crc32", "end", 1, sum_crc, 0);
  check_sum("numcodecs.crc32c", NULL, 1, sum_crc32c, 0);
  check_sum("numcodecs.crc32c", "end", 1, sum_crc32c, 0);
  check_sum("numcodecs.crc32c", "start", 0, sum_crc32c, 0);
  /* Fletcher-32: both the zarrs and the numcodecs variant verify. */
  check_sum("numcodecs.fletcher32", NULL, 1, fletcher_ref, 0);
  check_sum("numcodecs.fletcher32", NULL, 1, fletcher_ref, 1);
  expect_bad_config("{\"name\":\"numcodecs.adler32\",\"configuration\":{"
                    "\"location\":\"middle\"}}");
  expect_bad_config("{\"name\":\"numcodecs.fletcher32\",\"configuration\":{"
                    "\"location\":\"end\"}}");
}
END_TEST

START_TEST(test_fletcher32_vectors) {
  /* "abcde": the numcodecs variant sums the odd 'e' as 0x6500, the zarrs
   * variant drops it; both are accepted. */
  const uint8_t *p = (const uint8_t *)"abcde";
  uint32_t num = fletcher_ref(p, 5, 1), zrs = fletcher_ref(p, 5, 0);
  ck_assert_uint_ne(num, zrs);
  /* Hand-computed from words 0x6162, 0x6364: sum1 = 0xc4c6, sum2 =
   * 0x6162 + 0xc4c6 = 0x12628, folded to 0x2629. */
  ck_assert_uint_eq(zrs, 0x2629c4c6u);
  uint8_t *e = with_sum(p, 5, 0x12345678u, 1);
  expect_fail("\"numcodecs.fletcher32\"", 5, e, 9, MAXDEC, EIO,
              "numcodecs.fletcher32: checksum mismatch");
  free(e);
}
END_TEST

/* ---- zarrs snapshots ---- */

/* Read a whole file (caller frees) or NULL. */
static uint8_t *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *p = malloc(n > 0 ? (size_t)n : 1);
  *len = fread(p, 1, (size_t)n, f);
  fclose(f);
  return p;
}

/* The single store directory under dir (first entry not starting with a
 * dot), in out; 0 if none. */
static int store_dir(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  struct dirent *e;
  int found = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    int w = snprintf(out, cap, "%s/%s", dir, e->d_name);
    found = w >= 0 && (size_t)w < cap;
    break;
  }
  closedir(d);
  return found;
}

/* Decode all 8 chunks of a uint16 snapshot store and compare. */
static void check_uint16_store(const char *fx, const char *codec_dir) {
  char dir[2048], store[4096], path[4200];
  PATHF(dir, "%s/zarrs/snapshots/supported/regular/uint16/b2b/%s", fx,
        codec_dir);
  ck_assert_msg(store_dir(dir, store, sizeof store), "no store in %s", dir);
  PATHF(path, "%s/zarr.json", store);
  json_error_t je;
  json_t *meta = json_load_file(path, 0, &je);
  ck_assert_msg(meta, "%s: %s", path, je.text);
  json_t *codecs = json_object_get(meta, "codecs");
  ck_assert(json_is_array(codecs));
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 2;
  s.shape[0] = 4;
  s.shape[1] = 6;
  s.nelem = 24;
  s.dtype = dtype_of(DT_UINT16);
  s.fill = testcodec_zero_fill;
  s.fill_len = 2;
  struct chain *c = NULL;
  struct zerr err = {0};
  int rc = chain_build(codecs, &s, &c, &err);
  if (rc < 0 && testutil_is_without(err.msg)) { /* main said so */
    json_decref(meta);
    return;
  }
  ck_assert_msg(rc == 0, "%s: %s", store, err.msg);
  for (int ci = 0; ci < 2; ci++)
    for (int cj = 0; cj < 4; cj++) {
      PATHF(path, "%s/c/%d/%d", store, ci, cj);
      size_t len;
      uint8_t *enc = slurp(path, &len);
      ck_assert_msg(enc, "cannot read %s", path);
      struct bytesrc *src = bytesrc_from_static(enc, len);
      struct codec_env env = {MAXDEC, NULL, 0};
      struct abytes *a = NULL;
      rc = chain_decode(c, &s, src, &env, &a, &err);
      bytesrc_unref(src);
      ck_assert_msg(rc == 0, "%s: %s", path, err.msg);
      ck_assert_uint_eq(a->n, 24);
      uint8_t *got = tc_fixed_bytes(a);
      for (int r = 0; r < 4; r++)
        for (int k = 0; k < 6; k++) {
          uint16_t v;
          memcpy(&v, got + 2 * (r * 6 + k), 2);
          unsigned want = (unsigned)((4 * ci + r) * 24 + 6 * cj + k);
          ck_assert_msg(v == want, "%s [%d,%d]: %u != %u", path, r, k, v, want);
        }
      free(got);
      abytes_free(a);
      free(enc);
    }
  chain_free(c);
  json_decref(meta);
}

START_TEST(test_zarrs_uint16) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  static const char *const dirs[] = {"blosc",
                                     "numcodecs.zlib(level5)",
                                     "numcodecs.bz2(level5)",
                                     "numcodecs.adler32",
                                     "numcodecs.fletcher32",
                                     "numcodecs.shuffle"};
  for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++)
    check_uint16_store(fx, dirs[i]);
}
END_TEST

/* Verify the checksum layer alone on every chunk of every dtype's
 * adler32/fletcher32 snapshot store (odd lengths included: the optional
 * stores are zarrs-variant fletcher32). */
START_TEST(test_zarrs_checksums_all_dtypes) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  static const char *const dtypes[] = {"bool",
                                       "bytes",
                                       "float32",
                                       "float64",
                                       "int32",
                                       "string",
                                       "uint16",
                                       "uint8",
                                       "zarrs.optional(string)",
                                       "zarrs.optional(uint8)"};
  static const char *const sums[] = {"numcodecs.adler32",
                                     "numcodecs.fletcher32"};
  int odd = 0, checked = 0;
  for (size_t di = 0; di < sizeof dtypes / sizeof dtypes[0]; di++)
    for (size_t si = 0; si < 2; si++) {
      char dir[2048];
      PATHF(dir, "%s/zarrs/snapshots/supported/regular/%s/b2b/%s", fx,
            dtypes[di], sums[si]);
      DIR *d = opendir(dir);
      if (!d)
        continue;
      struct dirent *e;
      while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
          continue;
        char store[4096], path[4200];
        PATHF(store, "%s/%s", dir, e->d_name);
        PATHF(path, "%s/zarr.json", store);
        json_t *meta = json_load_file(path, 0, NULL);
        ck_assert_msg(meta, "cannot load %s", path);
        json_t *codecs = json_object_get(meta, "codecs");
        json_t *last = json_array_get(codecs, json_array_size(codecs) - 1);
        const char *name;
        json_t *config;
        int optional;
        struct zerr err = {0};
        ck_assert_int_eq(
            codec_entry_parse(last, &name, &config, &optional, &err), 0);
        ck_assert_str_eq(name, sums[si]);
        const struct codec_impl *impl = codec_lookup(name);
        ck_assert_ptr_nonnull(impl);
        struct codec_spec s = tc_spec1(DT_UINT8, 1);
        void *st = NULL;
        ck_assert_int_eq(impl->create(config, &s, &st, &err), 0);
        for (int ci = 0; ci < 2; ci++)
          for (int cj = 0; cj < 4; cj++) {
            PATHF(path, "%s/c/%d/%d", store, ci, cj);
            size_t len;
            uint8_t *enc = slurp(path, &len);
            if (!enc)
              continue;
            struct bytesrc *src = bytesrc_from_static(enc, len);
            struct codec_env env = {MAXDEC, NULL, 0};
            struct bytesrc *outp = NULL;
            int rc = impl->decode_bytes(st, src, &env, &outp, &err);
            ck_assert_msg(rc == 0, "%s: %s", path, err.msg);
            ck_assert_uint_eq(outp->size, len - 4);
            odd += (len - 4) % 2;
            checked++;
            bytesrc_unref(outp);
            bytesrc_unref(src);
            free(enc);
          }
        impl->destroy(st);
        json_decref(meta);
      }
      closedir(d);
    }
  ck_assert_int_gt(checked, 0);
  ck_assert_int_gt(odd, 0);
}
END_TEST

/* A raised stop flag (shutdown) ends long decodes with -EINTR: a 64 MiB
 * zstd frame (known size, streamed in slices), a zstd frame of unknown
 * size, gzip, zlib and bz2; without the flag they decode. */
START_TEST(test_stop_interrupts_decodes) {
  size_t n = (size_t)64 << 20;
  uint8_t *raw = calloc(1, n);
  size_t zcap = ZSTD_compressBound(n);
  uint8_t *z = malloc(zcap);
  size_t zn = ZSTD_compress(z, zcap, raw, n, 1);
  ck_assert(!ZSTD_isError(zn));
  /* Unknown content size: the streaming API without pledging. */
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  uint8_t *zu = malloc(zcap);
  ZSTD_inBuffer in = {raw, n, 0};
  ZSTD_outBuffer out = {zu, zcap, 0};
  ck_assert_uint_eq(ZSTD_compressStream2(cc, &out, &in, ZSTD_e_end), 0);
  ZSTD_freeCCtx(cc);
  uLongf gn = compressBound((uLong)n);
  uint8_t *g = malloc(gn);
  ck_assert_int_eq(compress2(g, &gn, raw, (uLong)n, 1), Z_OK);
#if ZFS_WITH_BZ2
  unsigned bn = (unsigned)(n / 50 + 1024);
  uint8_t *bz = malloc(bn);
  ck_assert_int_eq(BZ2_bzBuffToBuffCompress((char *)bz, &bn, (char *)raw,
                                            (unsigned)n, 1, 0, 0),
                   BZ_OK);
#endif
  struct {
    const char *codec;
    const uint8_t *enc;
    size_t len;
  } cases[] = {
    {"{\"name\":\"zstd\",\"configuration\":{\"level\":1}}", z, zn},
    {"{\"name\":\"zstd\",\"configuration\":{\"level\":1}}", zu, out.pos},
    {"{\"name\":\"numcodecs.zlib\"}", g, gn},
#if ZFS_WITH_BZ2
    {"{\"name\":\"numcodecs.bz2\"}", bz, bn},
#endif
  };
  struct codec_spec spec = tc_spec1(DT_UINT8, n);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char json[512];
    chain_json(json, sizeof json, cases[i].codec);
    for (int stop = 0; stop < 2; stop++) {
      struct chain *c;
      struct zerr err = {0};
      ck_assert_int_eq(tc_build(json, &spec, &c, &err), 0);
      atomic_int flag;
      atomic_init(&flag, stop);
      struct codec_env env = {n, &flag, 0};
      struct bytesrc *src = bytesrc_from_static(cases[i].enc, cases[i].len);
      struct abytes *a = NULL;
      struct bytesrc *data = NULL;
      int rc = chain_decode(c, &spec, src, &env, &a, &err);
      /* the bytes codec may defer: force the bytes->bytes stages to run */
      if (rc == 0)
        rc = bytesrc_load(a->fixed, n, &data, &err);
      ck_assert_msg(rc == (stop ? -EINTR : 0), "%s stop=%d: %d %s",
                    cases[i].codec, stop, rc, err.msg);
      bytesrc_unref(data);
      abytes_free(a);
      bytesrc_unref(src);
      chain_free(c);
    }
  }
  free(raw);
  free(z);
  free(zu);
  free(g);
#if ZFS_WITH_BZ2
  free(bz);
#endif
}
END_TEST

static Suite *b2b_suite(void) {
  Suite *s = suite_create("b2b");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_b2b_names);
  tcase_add_test(tc, test_stop_interrupts_decodes);
#if ZFS_WITH_BLOSC
  tcase_add_test(tc, test_blosc_roundtrip);
  tcase_add_test(tc, test_blosc_bad);
#else
  testutil_skip_without("check_b2b", "blosc", "the blosc tests");
#endif
  tcase_add_test(tc, test_zlib_gzip_zstd);
#if ZFS_WITH_BZ2
  tcase_add_test(tc, test_bz2);
#else
  testutil_skip_without("check_b2b", "bz2", "the numcodecs.bz2 tests");
#endif
#if ZFS_WITH_LZ4
  tcase_add_test(tc, test_lz4);
#else
  testutil_skip_without("check_b2b", "lz4", "the numcodecs.lz4 tests");
#endif
  tcase_add_test(tc, test_shuffle);
  tcase_add_test(tc, test_checksums);
  tcase_add_test(tc, test_fletcher32_vectors);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 120);
  tcase_add_test(fx, test_zarrs_uint16);
  tcase_add_test(fx, test_zarrs_checksums_all_dtypes);
  testutil_add_fixture_tcase(s, fx, "check_b2b");
  if (*ZFS_WITHOUT && testutil_fixtures())
    testutil_skip_without("check_b2b", ZFS_WITHOUT,
                          "the fixture stores that need it");
  return s;
}

/* Run the suite. */

int main(void) { return testutil_run(b2b_suite()); }
