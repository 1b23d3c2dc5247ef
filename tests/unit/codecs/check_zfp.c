/* check_zfp.c - the zfp and numcodecs.zfpy codecs (codecs/zfp.c) and
 * bitround (codecs/bitround.c).
 *
 * The test is its own zfp writer: it encodes with libzfp directly, in every
 * mode (fixed-rate the way zarrs sets it, for 3-D blocks), in 1 to 4
 * dimensions and for each type, then decodes through the codec chain and
 * compares with libzfp's own decode of the same stream (lossy modes) or
 * with the original values (reversible mode, and zarrs' promotions of
 * 8/16-bit and unsigned integers). Bad streams (truncated, garbage,
 * a header that lies, nothing at all) must give EIO with a message, never
 * a crash: run it under ASan to see that libzfp reads nothing beyond its
 * buffer. Bad configurations are a table. Stores through the engine (the
 * V2 mappings, filter `bitround` and compressor `zfpy`):
 * tests/unit/views/check_zfp_stores.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#if ZFS_WITH_ZFP
#include <zfp.h>
#endif

#include "../../../codecs/chain.h"
#include "../../../src/util/log.h"
#include "../testcodec.h"
#include "../testutil.h"
#include "../testzfp.h"

#define MAXDEC ((size_t)1 << 28)

#if ZFS_WITH_ZFP
/* libzfp's own decode of a stream without header into out. */
static void direct_decode(const uint8_t *enc, size_t len, void *out, zfp_type t,
                          int dims, const size_t n[4], const struct tmode *m) {
  size_t cap = len + 4096;
  uint8_t *buf = calloc(1, cap);
  memcpy(buf, enc, len);
  zfp_field *f = make_field(out, t, dims, n);
  bitstream *bs = stream_open(buf, cap);
  zfp_stream *zs = zfp_stream_open(bs);
  set_mode(zs, m, t);
  ck_assert_uint_gt(zfp_decompress(zs, f), 0);
  zfp_stream_close(zs);
  stream_close(bs);
  zfp_field_free(f);
  free(buf);
}
#endif

/* A spec of dt over a C-order shape. */
static struct codec_spec spec_nd(struct dtype dt, int ndim,
                                 const uint64_t *shape) {
  struct codec_spec s = tc_spec_1d(dt, 1);
  s.ndim = ndim;
  s.nelem = 1;
  for (int i = 0; i < ndim; i++) {
    s.shape[i] = shape[i];
    s.nelem *= shape[i];
  }
  return s;
}

/* Decode enc through a chain; the first failure, *out on success. */
static int chain_run(const char *json, const struct codec_spec *spec,
                     const void *enc, size_t len, struct abytes **out,
                     struct zerr *err) {
  struct chain *c = NULL;
  *out = NULL;
  int rc = tc_build(json, spec, &c, err);
  if (rc == 0) {
    struct bytesrc *src = bytesrc_from_static(enc, len);
    struct codec_env env = {MAXDEC, NULL, 0};
    rc = chain_decode(c, spec, src, &env, out, err);
    bytesrc_unref(src);
  }
  chain_free(c);
  return rc;
}

/* The decoded bytes of a fixed-size chunk (caller frees). */
static uint8_t *chunk_bytes(const struct abytes *a) {
  size_t len = (size_t)(a->n * a->elsize);
  uint8_t *p = malloc(len + 1);
  struct zerr err = {0};
  ck_assert_msg(bytesrc_read_range(a->fixed, 0, len, p, &err) == 0, "%s",
                err.msg);
  return p;
}

#if ZFS_WITH_ZFP
/* Fill n values of type t with smooth, signed data. */
static void fill_values(void *p, zfp_type t, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double v = 100 * sin((double)i * 0.3) + (double)(i % 7);
    if (t == zfp_type_float)
      ((float *)p)[i] = (float)v;
    else if (t == zfp_type_double)
      ((double *)p)[i] = v;
    else if (t == zfp_type_int32)
      ((int32_t *)p)[i] = (int32_t)(v * 1000);
    else
      ((int64_t *)p)[i] = (int64_t)(v * 1e6);
  }
}

/* Every mode, 1-4 dimensions, the four zfp types: the chain's decode is
 * libzfp's decode byte for byte, and the original in reversible mode. */
START_TEST(modes_dims_types) {
  static const uint64_t shapes[4][4] = {{37}, {5, 7}, {3, 5, 6}, {2, 3, 5, 6}};
  static const struct {
    zfp_type t;
    enum dtype_kind k;
  } types[] = {{zfp_type_float, DT_FLOAT32},
               {zfp_type_double, DT_FLOAT64},
               {zfp_type_int32, DT_INT32},
               {zfp_type_int64, DT_INT64}};
  int lossy_differs = 0;
  for (int d = 1; d <= 4; d++)
    for (size_t ti = 0; ti < sizeof types / sizeof *types; ti++)
      for (size_t mi = 0; mi < sizeof tmodes / sizeof *tmodes; mi++) {
        const struct tmode *m = &tmodes[mi];
        zfp_type t = types[ti].t;
        if (m->mode == zfp_mode_fixed_accuracy &&
            (t == zfp_type_int32 || t == zfp_type_int64))
          continue; /* refused: see bad_configs */
        struct codec_spec s = spec_nd(dtype_of(types[ti].k), d, shapes[d - 1]);
        size_t n[4] = {0, 0, 0, 0};
        for (int i = 0; i < d; i++)
          n[i] = (size_t)shapes[d - 1][d - 1 - i];
        size_t count = (size_t)s.nelem, bytes = count * zfp_type_size(t);
        void *orig = malloc(bytes), *want = malloc(bytes);
        fill_values(orig, t, count);
        uint8_t *enc;
        size_t len = encode(orig, t, d, n, m, 0, &enc);
        direct_decode(enc, len, want, t, d, n, m);
        char json[512];
        snprintf(json, sizeof json, "[{\"name\":\"zfp\",\"configuration\":%s}]",
                 m->json);
        struct abytes *a;
        struct zerr err = {0};
        ck_assert_msg(chain_run(json, &s, enc, len, &a, &err) == 0,
                      "%s %dD type %d: %s", m->json, d, (int)t, err.msg);
        ck_assert_uint_eq(a->n, count);
        uint8_t *got = chunk_bytes(a);
        ck_assert_msg(!memcmp(got, want, bytes), "%s %dD type %d differs",
                      m->json, d, (int)t);
        if (m->mode == zfp_mode_reversible)
          ck_assert_msg(!memcmp(got, orig, bytes), "reversible %dD not exact",
                        d);
        else
          lossy_differs += memcmp(got, orig, bytes) != 0;
        free(got);
        abytes_free(a);
        /* The same stream behind zfp's header: zfp with write_header (old
         * zarrs) and numcodecs.zfpy decode it from the header. */
        free(enc);
        len = encode(orig, t, d, n, m, 1, &enc);
        snprintf(json, sizeof json,
                 "[{\"name\":\"zfp\",\"configuration\":{\"mode\":"
                 "\"reversible\",\"write_header\":true}}]");
        ck_assert_msg(chain_run(json, &s, enc, len, &a, &err) == 0, "%s",
                      err.msg);
        got = chunk_bytes(a);
        ck_assert_msg(!memcmp(got, want, bytes), "header %dD differs", d);
        free(got);
        abytes_free(a);
        ck_assert_msg(
            chain_run("[{\"name\":\"numcodecs.zfpy\",\"configuration\""
                      ":{\"mode\":5}}]",
                      &s, enc, len, &a, &err) == 0,
            "%s", err.msg);
        got = chunk_bytes(a);
        ck_assert_msg(!memcmp(got, want, bytes), "zfpy %dD differs", d);
        free(got);
        abytes_free(a);
        free(enc);
        free(orig);
        free(want);
      }
  ck_assert_int_gt(lossy_differs, 0); /* the lossy modes really were lossy */
}
END_TEST

/* zarrs' promotions (reversible, so exact): int8/uint8 << 23, int16/uint16
 * << 15 (unsigned minus the midpoint first), uint32/uint64 as int32/int64;
 * datetime64 as int64. Also a 6-D chunk whose size-1 dimensions drop. */
START_TEST(promotions) {
  enum { N = 24 };
  static const uint64_t shape[] = {2, 1, 3, 1, 4, 1}; /* zfp: 4 x 3 x 2 */
  static const enum dtype_kind kinds[] = {DT_INT8,      DT_UINT8,  DT_INT16,
                                          DT_UINT16,    DT_UINT32, DT_UINT64,
                                          DT_DATETIME64};
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    if (kinds[k] == DT_DATETIME64)
      dt.size = 8; /* dtype_of knows no unit for it */
    int wide = kinds[k] == DT_UINT64 || kinds[k] == DT_DATETIME64;
    uint8_t orig[N * 8];
    int64_t z64[N];
    int32_t z32[N];
    for (int i = 0; i < N; i++) {
      int64_t v = (int64_t)i * 37 - 300; /* some negative */
      switch (kinds[k]) {
      case DT_INT8: {
        int8_t x = (int8_t)(v % 128);
        memcpy(orig + i, &x, 1);
        z32[i] = (int32_t)((uint32_t)(int32_t)x << 23);
        break;
      }
      case DT_UINT8: {
        uint8_t x = (uint8_t)(i * 11);
        orig[i] = x;
        z32[i] = (int32_t)((uint32_t)((int32_t)x - 0x80) << 23);
        break;
      }
      case DT_INT16: {
        int16_t x = (int16_t)(v * 97);
        memcpy(orig + 2 * i, &x, 2);
        z32[i] = (int32_t)((uint32_t)(int32_t)x << 15);
        break;
      }
      case DT_UINT16: {
        uint16_t x = (uint16_t)(i * 2741);
        memcpy(orig + 2 * i, &x, 2);
        z32[i] = (int32_t)((uint32_t)((int32_t)x - 0x8000) << 15);
        break;
      }
      case DT_UINT32: {
        uint32_t x = (uint32_t)i * 90000000u % 2147483647u;
        memcpy(orig + 4 * i, &x, 4);
        z32[i] = (int32_t)x;
        break;
      }
      default: {
        int64_t x = kinds[k] == DT_UINT64 ? i * 400000000000LL : v * 86400;
        memcpy(orig + 8 * i, &x, 8);
        z64[i] = x;
        break;
      }
      }
    }
    size_t n[4] = {4, 3, 2, 0};
    uint8_t *enc;
    size_t len = encode(wide ? (void *)z64 : (void *)z32,
                        wide ? zfp_type_int64 : zfp_type_int32, 3, n,
                        &tmodes[0], 0, &enc);
    struct codec_spec s = spec_nd(dt, 6, shape);
    struct abytes *a;
    struct zerr err = {0};
    ck_assert_msg(chain_run("[{\"name\":\"zfp\",\"configuration\":{\"mode\":"
                            "\"reversible\"}}]",
                            &s, enc, len, &a, &err) == 0,
                  "%s: %s", dt.name, err.msg);
    ck_assert_uint_eq(a->elsize, dt.size);
    uint8_t *got = chunk_bytes(a);
    ck_assert_msg(!memcmp(got, orig, N * dt.size), "%s differs", dt.name);
    free(got);
    abytes_free(a);
    free(enc);
  }
}
END_TEST

/* A decode that must fail with EIO and a message containing msg. */
static void expect_eio(const char *json, const struct codec_spec *s,
                       const void *enc, size_t len, const char *msg) {
  struct abytes *a;
  struct zerr err = {0};
  int rc = chain_run(json, s, enc, len, &a, &err);
  ck_assert_msg(rc == -EIO, "%s: rc %d (%s), want EIO", msg, rc, err.msg);
  ck_assert_msg(strstr(err.msg, msg), "message '%s' lacks '%s'", err.msg, msg);
}

static const char REV[] =
    "[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"reversible\"}}]";
static const char ZFPY[] =
    "[{\"name\":\"numcodecs.zfpy\",\"configuration\":{\"mode\":4,"
    "\"tolerance\":0.01,\"rate\":-1,\"precision\":-1,"
    "\"compression_kwargs\":{\"tolerance\":0.01}}}]";

/* Truncated, cut, lying and garbage streams. */
START_TEST(bad_streams) {
  enum { W = 40, H = 30 };
  static double v[W * H];
  fill_values(v, zfp_type_double, W * H);
  size_t n[4] = {W, H, 0, 0};
  uint64_t shape[] = {H, W};
  struct codec_spec s = spec_nd(dtype_of(DT_FLOAT64), 2, shape);
  uint8_t *enc;
  size_t len = encode(v, zfp_type_double, 2, n, &tmodes[0], 0, &enc);
  ck_assert_uint_gt(len, 64);
  /* Cut anywhere: the decoder runs into the zeroed tail and needs more
   * words than the chunk has. */
  expect_eio(REV, &s, enc, 8, "truncated");
  expect_eio(REV, &s, enc, len / 2, "truncated");
  expect_eio(REV, &s, enc, len - 8, "truncated");
  expect_eio(REV, &s, enc, 0, "empty chunk");
  free(enc);

  /* zfpy: the header must be there, valid, and describe the chunk. */
  len = encode(v, zfp_type_double, 2, n, &tmodes[3], 1, &enc);
  uint8_t *bad = malloc(len);
  memcpy(bad, enc, len);
  bad[0] ^= 0xff; /* not "zfp" */
  expect_eio(ZFPY, &s, bad, len, "no valid zfp header");
  expect_eio(ZFPY, &s, enc, 3, "no valid zfp header");
  expect_eio(ZFPY, &s, enc, len / 2, "truncated");
  uint64_t other[] = {W, H}; /* the same values, transposed */
  struct codec_spec so = spec_nd(dtype_of(DT_FLOAT64), 2, other);
  expect_eio(ZFPY, &so, enc, len, "header describes");
  struct codec_spec sf = spec_nd(dtype_of(DT_FLOAT32), 2, shape);
  expect_eio(ZFPY, &sf, enc, len, "header describes");
  /* A bare stream where zfpy wants a header. */
  free(enc);
  len = encode(v, zfp_type_double, 2, n, &tmodes[0], 0, &enc);
  expect_eio(ZFPY, &s, enc, len, "no valid zfp header");
  free(enc);
  free(bad);

  /* Garbage in every mode: decoded or EIO, never a read beyond the
   * buffer (ASan) or a crash. A bigger chunk than its bytes: most garbage
   * streams end early and are "truncated". */
  uint64_t big[] = {64, 64};
  struct codec_spec sb = spec_nd(dtype_of(DT_FLOAT64), 2, big);
  uint8_t junk[96];
  unsigned seed = 12345;
  int failed = 0, runs = 0;
  for (size_t mi = 0; mi < sizeof tmodes / sizeof *tmodes; mi++)
    for (int r = 0; r < 20; r++) {
      for (size_t i = 0; i < sizeof junk; i++) {
        seed = seed * 1103515245u + 12345u;
        junk[i] = (uint8_t)(seed >> 16);
      }
      if (r % 2)
        memcpy(junk, "zfp\x05", 4); /* a magic, then garbage */
      char json[512];
      snprintf(json, sizeof json, "[{\"name\":\"zfp\",\"configuration\":%s}]",
               tmodes[mi].json);
      const char *j = r % 2 ? ZFPY : json;
      struct abytes *a;
      struct zerr err = {0};
      int rc = chain_run(j, &sb, junk, sizeof junk, &a, &err);
      ck_assert_msg(rc == 0 || rc == -EIO, "rc %d: %s", rc, err.msg);
      if (rc == 0)
        abytes_free(a);
      else
        ck_assert_msg(strstr(err.msg, "zf"), "%s", err.msg);
      failed += rc < 0;
      runs++;
    }
  ck_assert_int_gt(failed, runs / 2);
}
END_TEST

/* Garbage that libzfp decodes greedily (all one bits, random bits) of
 * every length up to well past what a decoder could use, in every mode,
 * type and dimensionality: decoded or EIO, and never "past its buffer"
 * (the codec's check that libzfp stayed inside the zeroed buffer it was
 * given; a read bound too small would trip it here). */
START_TEST(garbage_streams) {
  static const uint64_t shapes[4][4] = {{9}, {6, 7}, {3, 5, 6}, {2, 3, 2, 5}};
  static const enum dtype_kind kinds[] = {DT_FLOAT32, DT_FLOAT64, DT_INT32,
                                          DT_INT64};
  static uint8_t junk[4096];
  unsigned seed = 777;
  int runs = 0, decoded = 0;
  for (int d = 1; d <= 4; d++)
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
      for (size_t mi = 0; mi <= sizeof tmodes / sizeof *tmodes; mi++)
        for (int pattern = 0; pattern < 2; pattern++) {
          for (size_t i = 0; i < sizeof junk; i++) {
            seed = seed * 1103515245u + 12345u;
            junk[i] = pattern ? (uint8_t)(seed >> 16) : 0xff;
          }
          char json[512];
          if (mi == sizeof tmodes / sizeof *tmodes) { /* zfpy: a header */
            snprintf(json, sizeof json, "%s", ZFPY);
            memcpy(junk, "zfp\x05", 4);
          } else {
            snprintf(json, sizeof json,
                     "[{\"name\":\"zfp\",\"configuration\":%s}]",
                     tmodes[mi].json);
          }
          struct codec_spec s = spec_nd(dtype_of(kinds[k]), d, shapes[d - 1]);
          struct chain *c;
          struct zerr err = {0};
          if (tc_build(json, &s, &c, &err) < 0)
            continue; /* fixed_accuracy on integers */
          struct codec_env env = {MAXDEC, NULL, 0};
          for (size_t len = 8; len <= sizeof junk; len += 24) {
            struct bytesrc *src = bytesrc_from_static(junk, len);
            struct abytes *a = NULL;
            int rc = chain_decode(c, &s, src, &env, &a, &err);
            bytesrc_unref(src);
            ck_assert_msg(rc == 0 || rc == -EIO, "rc %d: %s", rc, err.msg);
            ck_assert_msg(rc == 0 || !strstr(err.msg, "past its buffer"),
                          "%dD kind %d %s length %zu: %s", d, (int)kinds[k],
                          json, len, err.msg);
            decoded += rc == 0;
            runs++;
            abytes_free(a);
          }
          chain_free(c);
        }
  ck_assert_int_gt(runs, 5000);
  ck_assert_int_gt(decoded, 0);
}
END_TEST

/* Configurations refused, each with the reason. */
START_TEST(bad_configs) {
  static const struct {
    const char *codecs;
    enum dtype_kind kind;
    int rc;
    const char *msg;
  } cases[] = {
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"bogus\"}}]",
       DT_FLOAT32, -EIO, "unknown mode"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"fixed_rate\"}}]",
       DT_FLOAT32, -EIO, "'rate'"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"fixed_rate\","
       "\"rate\":0}}]",
       DT_FLOAT32, -EIO, "'rate'"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"fixed_precision\","
       "\"precision\":65}}]",
       DT_FLOAT32, -EIO, "'precision'"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"fixed_accuracy\","
       "\"tolerance\":0.1}}]",
       DT_INT32, -ENOTSUP, "unsupported"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"expert\","
       "\"minbits\":10,\"maxbits\":5,\"maxprec\":64,\"minexp\":-1074}}]",
       DT_FLOAT64, -EIO, "'maxbits'"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"reversible\","
       "\"extra\":1}}]",
       DT_FLOAT32, -EIO, "unknown configuration key"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"reversible\","
       "\"write_header\":1}}]",
       DT_FLOAT32, -EIO, "write_header"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"reversible\"}}]",
       DT_BOOL, -ENOTSUP, "unsupported for data type"},
      {"[{\"name\":\"zfp\",\"configuration\":{\"mode\":\"reversible\"}}]",
       DT_FLOAT16, -ENOTSUP, "unsupported for data type"},
      {"[{\"name\":\"numcodecs.zfpy\",\"configuration\":{\"mode\":7}}]",
       DT_FLOAT32, -EIO, "'mode'"},
      {"[{\"name\":\"numcodecs.zfpy\",\"configuration\":{\"mode\":4}}]",
       DT_FLOAT32, -EIO, "tolerance"},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":24}},"
       "{\"name\":\"bytes\"}]",
       DT_FLOAT32, -EIO, "out of range"},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":11}},"
       "{\"name\":\"bytes\"}]",
       DT_FLOAT16, -EIO, "out of range"},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":-1}},"
       "{\"name\":\"bytes\"}]",
       DT_FLOAT64, -EIO, "out of range"},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":65}},"
       "{\"name\":\"bytes\"}]",
       DT_UINT8, -EIO, "out of range"},
      {"[{\"name\":\"bitround\",\"configuration\":{}},{\"name\":\"bytes\"}]",
       DT_FLOAT32, -EIO, "keepbits"},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":3}},"
       "{\"name\":\"bytes\"}]",
       DT_BOOL, -ENOTSUP, "unsupported for data type"},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":3,\"x\":1}},"
       "{\"name\":\"bytes\"}]",
       DT_FLOAT32, -EIO, "unknown configuration key"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct codec_spec s = tc_spec_1d(dtype_of(cases[i].kind), 4);
    struct chain *c;
    struct zerr err = {0};
    int rc = tc_build(cases[i].codecs, &s, &c, &err);
    ck_assert_msg(rc == cases[i].rc, "case %zu: rc %d (%s), want %d", i, rc,
                  err.msg, cases[i].rc);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "case %zu: '%s' lacks '%s'", i,
                  err.msg, cases[i].msg);
  }
}
END_TEST
#endif /* ZFS_WITH_ZFP */

/* bitround reads as the identity for every type it takes, also under its
 * numcodecs alias, and keepbits at the type's limits is accepted. */
START_TEST(bitround_identity) {
  static const struct {
    const char *codecs;
    enum dtype_kind kind;
  } cases[] = {
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":10}},"
       "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
       DT_FLOAT32},
      {"[{\"name\":\"numcodecs.bitround\",\"configuration\":{\"keepbits\":"
       "52}},{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
       DT_FLOAT64},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":10}},"
       "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
       DT_FLOAT16},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":0}},"
       "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
       DT_INT64},
      {"[{\"name\":\"bitround\",\"configuration\":{\"keepbits\":10}},"
       "{\"name\":\"bytes\"}]",
       DT_UINT8},
  };
  static const uint8_t chunk[32] = {
      0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x10, 0xc0, 0x00, 0x00, 0x80,
      0x44, 1,    2,    3,    4,    5,    6,    7,    8,    9,    10,
      11,   12,   13,   14,   15,   16,   17,   18,   19,   20};
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct dtype dt = dtype_of(cases[i].kind);
    struct codec_spec s = tc_spec_1d(dt, 32 / dt.size);
    struct abytes *a;
    struct zerr err = {0};
    ck_assert_msg(chain_run(cases[i].codecs, &s, chunk, 32, &a, &err) == 0,
                  "case %zu: %s", i, err.msg);
    uint8_t *got = chunk_bytes(a);
    ck_assert_msg(!memcmp(got, chunk, 32), "case %zu differs", i);
    free(got);
    abytes_free(a);
  }
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("zfp");
  TCase *tc = tcase_create("zfp");
  tcase_set_timeout(tc, 120);
#if ZFS_WITH_ZFP
  tcase_add_test(tc, modes_dims_types);
  tcase_add_test(tc, promotions);
  tcase_add_test(tc, bad_streams);
  tcase_add_test(tc, garbage_streams);
  tcase_add_test(tc, bad_configs);
#else
  testutil_skip_without("check_zfp", "zfp", "the zfp and zfpy tests");
#endif
  tcase_add_test(tc, bitround_identity);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
