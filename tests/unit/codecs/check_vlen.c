/* check_vlen.c - unit tests for the variable-length codecs: `zarrs.vlen`
 * (every layout and config form, partial reads, partial decoders, with
 * those of `bytes` beside them) and the interleaved
 * vlen-utf8 family; every malformed input as a table of cases; real
 * chunks from the shared zarrs fixtures when they are present; all through
 * the codec chain (codecs/chain.h). The text of decoded units:
 * tests/unit/text/check_textvar.c. */
#include <check.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../testcodec.h"
#include "../testutil.h"
#include "codecs/chain.h"
#include "codecs/codec.h"
#include "src/util/buf.h"

#define MAXDEC ((size_t)64 << 20)

/* ---- helpers ---- */

/* A 1-D spec of n elements (fill ""). */
static struct codec_spec vspec(enum dtype_kind kind, uint64_t n) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = n;
  s.nelem = n;
  s.dtype = dtype_of(kind);
  return s;
}

/* The codec_env heap_max of run's decodes (0: pages may be handed back). */
static size_t run_heap_max;

/* Build, then decode one in-memory chunk of n string elements. */
static int run(const char *json, uint64_t n, const void *enc, size_t len,
               size_t max, struct abytes **out, struct zerr *err) {
  struct codec_spec s = vspec(DT_STRING, n);
  struct chain *c;
  int rc = tc_build(json, &s, &c, err);
  ck_assert_msg(rc == 0, "chain_build(%s): %s", json, err->msg);
  struct bytesrc *src = bytesrc_from_static(enc, len);
  struct codec_env env = {max, NULL, run_heap_max};
  *out = NULL;
  rc = chain_decode(c, &s, src, &env, out, err);
  /* A deferred data section (gzip, zstd data codecs) is decoded the way a
   * view read does it, while the chain is still alive. */
  if (rc == 0 && !(*out)->elsize && !(*out)->data) {
    struct bytesrc *data;
    rc = chain_load_data(*out, &env, &data, err);
    if (rc == 0) {
      (*out)->data = data;
    } else {
      abytes_free(*out);
      *out = NULL;
    }
  }
  bytesrc_unref(src);
  chain_free(c);
  return rc;
}

/* Element i of a decoded variable-length chunk equals want[0..wlen). */
static void check_elem(struct abytes *a, uint64_t i, const void *want,
                       size_t wlen) {
  uint64_t len = a->offsets[i + 1] - a->offsets[i];
  ck_assert_msg(len == wlen, "element %llu: length %llu, want %zu",
                (unsigned long long)i, (unsigned long long)len, wlen);
  char buf[4096];
  ck_assert_uint_le(len, sizeof buf);
  struct zerr err = {0};
  ck_assert_int_eq(
      bytesrc_read_range(a->data, a->offsets[i], (size_t)len, buf, &err), 0);
  ck_assert_msg(memcmp(buf, want, wlen) == 0, "element %llu differs",
                (unsigned long long)i);
}

/* Check all elements against NUL-terminated strings. */
static void check_strings(struct abytes *a, const char *const *want,
                          uint64_t n) {
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, 0);
  ck_assert_ptr_nonnull(a->offsets);
  ck_assert_ptr_nonnull(a->data);
  for (uint64_t i = 0; i < n; i++)
    check_elem(a, i, want[i], strlen(want[i]));
}

/* gzip stream of p. */
static void gzip_into(struct zbuf *out, const void *p, size_t n) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  ck_assert_int_eq(deflateInit2(&zs, 5, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY),
                   Z_OK);
  size_t cap = deflateBound(&zs, n) + 64;
  uint8_t *o = malloc(cap);
  zs.next_in = (Bytef *)p;
  zs.avail_in = (uInt)n;
  zs.next_out = o;
  zs.avail_out = (uInt)cap;
  ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
  ck_assert_int_eq(zbuf_append(out, o, cap - zs.avail_out, NULL), 0);
  deflateEnd(&zs);
  free(o);
}

/* Append v as an `size`-byte integer, little or big endian. */
static void put_uint(struct zbuf *b, uint64_t v, size_t size, int big) {
  uint8_t t[8];
  for (size_t i = 0; i < size; i++)
    t[big ? size - 1 - i : i] = (uint8_t)(v >> (8 * i));
  ck_assert_int_eq(zbuf_append(b, t, size, NULL), 0);
}

/* How the test encoder lays out a zarrs.vlen chunk. */
struct venc {
  int u32;      /* index_data_type uint32 (else uint64) */
  int big;      /* index bytes big endian */
  int at_end;   /* index_location end */
  int idx_crc;  /* index_codecs += crc32c */
  int dat_gzip; /* data_codecs += gzip */
  int v0;       /* omit index_location (V0 config; start only) */
};

/* The codecs JSON for o, under `name`. */
static void venc_json(const struct venc *o, const char *name, char *buf,
                      size_t len) {
  char loc[40] = "";
  if (!o->v0)
    snprintf(loc, sizeof loc, ",\"index_location\":\"%s\"",
             o->at_end ? "end" : "start");
  snprintf(buf, len,
           "[{\"name\":\"%s\",\"configuration\":{\"index_codecs\":[{\"name\":"
           "\"bytes\",\"configuration\":{\"endian\":\"%s\"}}%s],"
           "\"data_codecs\":[{\"name\":\"bytes\"}%s],"
           "\"index_data_type\":\"%s\"%s}}]",
           name, o->big ? "big" : "little", o->idx_crc ? ",\"crc32c\"" : "",
           o->dat_gzip ? ",{\"name\":\"gzip\",\"configuration\":{\"level\":5}}"
                       : "",
           o->u32 ? "uint32" : "uint64", loc);
}

/* Encode strings the way zarrs does (vlen_codec.rs encode). */
static uint8_t *venc_chunk(const struct venc *o, const char *const *els,
                           uint64_t n, size_t *out_len) {
  struct zbuf idx, dat, raw, out;
  zbuf_init(&idx, MAXDEC);
  zbuf_init(&dat, MAXDEC);
  zbuf_init(&raw, MAXDEC);
  zbuf_init(&out, MAXDEC);
  uint64_t off = 0;
  size_t isz = o->u32 ? 4 : 8;
  put_uint(&idx, 0, isz, o->big);
  for (uint64_t i = 0; i < n; i++) {
    size_t l = strlen(els[i]);
    ck_assert_int_eq(zbuf_append(&raw, els[i], l, NULL), 0);
    off += l;
    put_uint(&idx, off, isz, o->big);
  }
  if (o->idx_crc)
    put_uint(&idx, tc_crc32c(idx.data, idx.len), 4, 0);
  if (raw.len && o->dat_gzip)
    gzip_into(&dat, raw.data, raw.len);
  else if (raw.len)
    ck_assert_int_eq(zbuf_append(&dat, raw.data, raw.len, NULL), 0);
  if (!o->at_end) {
    put_uint(&out, idx.len, 8, 0);
    zbuf_append(&out, idx.data, idx.len, NULL);
    zbuf_append(&out, dat.data, dat.len, NULL);
  } else {
    zbuf_append(&out, dat.data, dat.len, NULL);
    zbuf_append(&out, idx.data, idx.len, NULL);
    put_uint(&out, idx.len, 8, 0);
  }
  zbuf_free(&idx);
  zbuf_free(&dat);
  zbuf_free(&raw);
  return zbuf_steal(&out, out_len);
}

/* Interleaved (vlen-utf8) encoding of strings. */
static uint8_t *vli_chunk(const char *const *els, uint64_t n, size_t *len) {
  struct zbuf b;
  zbuf_init(&b, MAXDEC);
  put_uint(&b, n, 4, 0);
  for (uint64_t i = 0; i < n; i++) {
    put_uint(&b, strlen(els[i]), 4, 0);
    zbuf_append(&b, els[i], strlen(els[i]), NULL);
  }
  return zbuf_steal(&b, len);
}

static const char *const sample[] = {"",      "a",  "hello", "",
                                     "wörld", "zz", "",      "0123456789"};
#define NSAMPLE (sizeof sample / sizeof sample[0])

/* ---- zarrs.vlen ---- */

START_TEST(test_vlen_formats) {
  /* Every combination of index type, endianness, location, index crc32c
   * and gzip data. */
  for (int m = 0; m < 32; m++) {
    struct venc o = {m & 1, !!(m & 2), !!(m & 4), !!(m & 8), !!(m & 16), 0};
    char json[1024];
    venc_json(&o, "zarrs.vlen", json, sizeof json);
    size_t len;
    uint8_t *enc = venc_chunk(&o, sample, NSAMPLE, &len);
    struct abytes *a;
    struct zerr err = {0};
    int rc = run(json, NSAMPLE, enc, len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
    check_strings(a, sample, NSAMPLE);
    ck_assert_uint_eq(a->offsets[0], 0);
    abytes_free(a);
    free(enc);
  }
}
END_TEST

START_TEST(test_vlen_start_u64_bytes) {
  /* Exactly the worked example of zarrs-vlen.md 1.3, smaller. */
  static const uint8_t chunk[] = {24, 0, 0, 0, 0,   0,   0,   0, /* L */
                                  0,  0, 0, 0, 0,   0,   0,   0,   3,  0,
                                  0,  0, 0, 0, 0,   0,   5,   0,   0,  0,
                                  0,  0, 0, 0, 'f', 'o', 'o', 'h', 'i'};
  const char *json = "[{\"name\":\"zarrs.vlen\",\"configuration\":{"
                     "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":"
                     "{\"endian\":\"little\"}}],\"data_codecs\":[{\"name\":"
                     "\"bytes\"}],\"index_data_type\":\"uint64\","
                     "\"index_location\":\"start\"}}]";
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run(json, 2, chunk, sizeof chunk, MAXDEC, &a, &err), 0);
  static const char *const want[] = {"foo", "hi"};
  check_strings(a, want, 2);
  /* the data is a window onto the chunk, not a copy */
  ck_assert_ptr_eq(a->data->mem, chunk + 32);
  abytes_free(a);
}
END_TEST

START_TEST(test_vlen_empty_data) {
  static const char *const empty[] = {"", "", ""};
  for (int m = 0; m < 4; m++) {
    /* gzip data codec: zarrs writes 0 data bytes, not a gzip stream */
    struct venc o = {m & 1, 0, !!(m & 2), 0, 1, 0};
    char json[1024];
    venc_json(&o, "zarrs.vlen", json, sizeof json);
    size_t len;
    uint8_t *enc = venc_chunk(&o, empty, 3, &len);
    ck_assert_uint_eq(len, 8 + 4 * (o.u32 ? 4 : 8));
    struct abytes *a;
    struct zerr err = {0};
    int rc = run(json, 3, enc, len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
    check_strings(a, empty, 3);
    ck_assert_uint_eq(a->data->size, 0);
    abytes_free(a);
    free(enc);
  }
  /* Anything in the data section is ignored when the last offset is 0:
   * not gunzipped, not checked. */
  static const uint8_t junk[] = {16, 0, 0, 0, 0,   0,   0,   0,  0, 0,
                                 0,  0, 0, 0, 0,   0,   0,   0,  0, 0,
                                 0,  0, 0, 0, 'j', 'u', 'n', 'k'};
  struct venc o = {0, 0, 0, 0, 1, 0};
  char json[1024];
  venc_json(&o, "zarrs.vlen", json, sizeof json);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run(json, 1, junk, sizeof junk, MAXDEC, &a, &err), 0);
  ck_assert_uint_eq(a->offsets[1], 0);
  abytes_free(a);
}
END_TEST

START_TEST(test_vlen_offsets_absolute) {
  /* offsets[0] need not be 0: bytes before it are unreferenced, and equal
   * offsets make empty elements. */
  static const uint8_t chunk[] = {
      32, 0, 0, 0, 0, 0, 0, 0, 2,   0,   0,   0,   0,   0,  0, 0,
      3,  0, 0, 0, 0, 0, 0, 0, 3,   0,   0,   0,   0,   0,  0, 0,
      6,  0, 0, 0, 0, 0, 0, 0, 'x', 'x', 'a', 'b', 'c', 'd'};
  const char *json = "[{\"name\":\"vlen\",\"configuration\":{"
                     "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":"
                     "{\"endian\":\"little\"}}],\"data_codecs\":[\"bytes\"],"
                     "\"index_data_type\":\"uint64\"}}]";
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run(json, 3, chunk, sizeof chunk, MAXDEC, &a, &err), 0);
  static const char *const want[] = {"a", "", "bcd"};
  check_strings(a, want, 3);
  ck_assert_uint_eq(a->offsets[0], 2);
  abytes_free(a);
}
END_TEST

START_TEST(test_vlen_config_forms) {
  /* V0 (no index_location) means start; all three names work. */
  static const char *const names[] = {
      "zarrs.vlen", "https://codec.zarrs.dev/array_to_bytes/vlen", "vlen"};
  for (size_t k = 0; k < 3; k++)
    for (int v0 = 0; v0 < 2; v0++) {
      struct venc o = {0, 0, 0, 0, 0, v0};
      char json[1024];
      venc_json(&o, names[k], json, sizeof json);
      size_t len;
      uint8_t *enc = venc_chunk(&o, sample, NSAMPLE, &len);
      struct abytes *a;
      struct zerr err = {0};
      ck_assert_msg(run(json, NSAMPLE, enc, len, MAXDEC, &a, &err) == 0,
                    "%s: %s", json, err.msg);
      check_strings(a, sample, NSAMPLE);
      abytes_free(a);
      free(enc);
    }
  /* A V0 config reading an "end" chunk does not silently succeed. */
  struct venc end = {0, 0, 1, 0, 0, 0}, v0 = {0, 0, 0, 0, 0, 1};
  char json[1024];
  venc_json(&v0, "zarrs.vlen", json, sizeof json);
  size_t len;
  uint8_t *enc = venc_chunk(&end, sample, NSAMPLE, &len);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_lt(run(json, NSAMPLE, enc, len, MAXDEC, &a, &err), 0);
  free(enc);
}
END_TEST

START_TEST(test_vlen_config_errors) {
#define IC                                                                     \
  "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{"                  \
  "\"endian\":\"little\"}}]"
#define DC "\"data_codecs\":[\"bytes\"]"
#define VL(cfg) "[{\"name\":\"zarrs.vlen\",\"configuration\":{" cfg "}}]"
  static const struct {
    const char *json;
    enum dtype_kind kind;
    int rc;
    const char *msg;
  } cases[] = {
      {VL(IC "," DC ",\"index_data_type\":\"uint64\",\"extra\":1"), DT_STRING,
       -EIO, "zarrs.vlen: unknown configuration key 'extra'"},
      {VL(IC "," DC ",\"index_data_type\":\"uint64\",\"must_understand\":"
             "false"),
       DT_STRING, -EIO, "unknown configuration key 'must_understand'"},
      {VL(IC "," DC), DT_STRING, -EIO, "'index_data_type'"},
      {VL(DC ",\"index_data_type\":\"uint64\""), DT_STRING, -EIO,
       "'index_codecs'"},
      {VL(IC ",\"index_data_type\":\"uint64\""), DT_STRING, -EIO,
       "'data_codecs'"},
      {VL(IC "," DC ",\"index_data_type\":\"uint16\""), DT_STRING, -EIO,
       "index_data_type must be"},
      {VL(IC "," DC ",\"index_data_type\":64"), DT_STRING, -EIO,
       "'index_data_type' must be a string"},
      {VL(IC "," DC ",\"index_data_type\":\"uint64\",\"index_location\":"
             "\"middle\""),
       DT_STRING, -EIO, "index_location must be"},
      {"[{\"name\":\"zarrs.vlen\"}]", DT_STRING, -EIO,
       "configuration is required"},
      {"[\"zarrs.vlen\"]", DT_BYTES, -EIO, "configuration is required"},
      {VL("\"index_codecs\":[]," DC ",\"index_data_type\":\"uint64\""),
       DT_STRING, -EIO, "zarrs.vlen index_codecs: missing array->bytes"},
      {VL("\"index_codecs\":[\"bytes\"]," DC ",\"index_data_type\":\"uint32\""),
       DT_STRING, -EIO,
       "index_codecs: bytes: configuration 'endian' is "
       "required"},
      {VL("\"index_codecs\":\"bytes\"," DC ",\"index_data_type\":\"uint32\""),
       DT_STRING, -EIO, "must be a list"},
      {VL(IC ",\"data_codecs\":[\"bytes\",\"blosc2x\"],\"index_data_type\":"
             "\"uint64\""),
       DT_STRING, -ENOTSUP, "data_codecs: unsupported codec 'blosc2x'"},
      {VL(IC ",\"data_codecs\":[\"gzip\",\"bytes\"],\"index_data_type\":"
             "\"uint64\""),
       DT_STRING, -EIO, "must come after"},
      {VL(IC "," DC ",\"index_data_type\":\"uint64\""), DT_INT32, -EIO,
       "not variable-length"},
      {"[{\"name\":\"vlen-utf8\",\"configuration\":{\"a\":1}}]", DT_STRING,
       -EIO, "vlen-utf8: configuration must be empty"},
      {"[{\"name\":\"zarrs.vlen_v2\",\"configuration\":{\"x\":[]}}]", DT_BYTES,
       -EIO, "zarrs.vlen_v2: configuration must be empty"},
      {"[\"vlen-bytes\"]", DT_UINT8, -EIO, "not variable-length"},
  };
#undef IC
#undef DC
#undef VL
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct codec_spec s = vspec(cases[i].kind, 4);
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

/* ---- interleaved ---- */

START_TEST(test_vlen_interleaved) {
  static const char *const names[] = {
      "\"vlen-utf8\"", "{\"name\":\"vlen-bytes\"}",
      "{\"name\":\"vlen-array\",\"configuration\":{}}", "\"zarrs.vlen_v2\"",
      "\"https://codec.zarrs.dev/array_to_bytes/vlen_v2\""};
  for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
    char json[256];
    snprintf(json, sizeof json, "[%s]", names[k]);
    size_t len;
    uint8_t *enc = vli_chunk(sample, NSAMPLE, &len);
    /* trailing bytes after the last element are ignored */
    uint8_t *big = malloc(len + 3);
    memcpy(big, enc, len);
    memcpy(big + len, "xyz", 3);
    for (int t = 0; t < 2; t++) {
      struct abytes *a;
      struct zerr err = {0};
      int rc = run(json, NSAMPLE, big, len + (t ? 3 : 0), MAXDEC, &a, &err);
      ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
      check_strings(a, sample, NSAMPLE);
      /* compact: the data is exactly the element bytes */
      ck_assert_uint_eq(a->data->size, a->offsets[NSAMPLE]);
      abytes_free(a);
    }
    free(big);
    free(enc);
  }
  /* The verified numcodecs example: ["a", "bb"]. */
  static const uint8_t ex[] = {2,   0, 0, 0, 1, 0,   0,  0,
                               'a', 2, 0, 0, 0, 'b', 'b'};
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run("[\"vlen-utf8\"]", 2, ex, sizeof ex, MAXDEC, &a, &err),
                   0);
  static const char *const want[] = {"a", "bb"};
  check_strings(a, want, 2);
  abytes_free(a);
  /* 16 bytes an element that would pass for HDF5 heap IDs, but a valid
   * numcodecs chunk: decoded as such. */
  static const uint8_t h[] = {1, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0};
  ck_assert_int_eq(run("[\"vlen-bytes\"]", 1, h, sizeof h, MAXDEC, &a, &err),
                   0);
  ck_assert_uint_eq(a->offsets[1], 8);
  check_elem(a, 0, h + 8, 8);
  abytes_free(a);
}
END_TEST

/* Interleaved chunks decoded in place (behind gzip, the chain's own
 * buffer) and by copy (a borrowed input) give the same elements, for
 * every length pattern of the first elements (the 16-byte moves), long
 * strings, newlines, and the last element close to the chunk's end. */
START_TEST(test_vlen_interleaved_in_place) {
  enum { N = 3000 };
  static char pool[N][80];
  static const char *els[N];
  unsigned seed = 12345;
  for (int round = 0; round < 48; round++) {
    uint64_t n = round < 24 ? 3 + (uint64_t)round % 5 : N;
    for (uint64_t i = 0; i < n; i++) {
      seed = seed * 1103515245u + 12345u;
      size_t l = round < 24 && i < 2     ? (size_t)(round + (int)i * 7) % 21
                 : (seed >> 16) % 9 == 0 ? 17 + (seed >> 8) % 60
                                         : (seed >> 16) % 17;
      if (round % 2 && i == n - 1)
        l = (size_t)round % 4; /* a short last element */
      for (size_t c = 0; c < l; c++)
        pool[i][c] = (char)(c % 13 == 5 ? '\n' : 'a' + (c + i) % 26);
      pool[i][l] = 0;
      els[i] = pool[i];
    }
    size_t len;
    uint8_t *enc = vli_chunk(els, n, &len);
    struct zbuf gz;
    zbuf_init(&gz, MAXDEC);
    gzip_into(&gz, enc, len);
    struct abytes *a;
    struct zerr err = {0};
    int rc = run("[\"vlen-utf8\",{\"name\":\"gzip\",\"configuration\":"
                 "{\"level\":5}}]",
                 n, gz.data, gz.len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "round %d: %s", round, err.msg);
    check_strings(a, els, n);
    ck_assert_uint_eq(a->data->size, a->offsets[n]);
    abytes_free(a);
    rc = run("[\"vlen-utf8\"]", n, enc, len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "round %d: %s", round, err.msg);
    check_strings(a, els, n);
    abytes_free(a);
    /* A lying length behind gzip fails cleanly (and frees the buffer). */
    enc[len - 1 - strlen(els[n - 1]) - 3] = 0x7f;
    zbuf_free(&gz);
    zbuf_init(&gz, MAXDEC);
    gzip_into(&gz, enc, len);
    rc = run("[\"vlen-utf8\",\"gzip\"]", n, gz.data, gz.len, MAXDEC, &a, &err);
    ck_assert_int_eq(rc, -EIO);
    zbuf_free(&gz);
    free(enc);
  }
}
END_TEST

/* The 32-byte moves (strings of 17 to 32 bytes): in place they start
 * where the excess lands on bytes already read (4i + 8 + len >= 32), so
 * the first seven elements take every length around that edge, and the
 * last element ends at the chunk's end or near it; in place and by copy
 * give the same elements. */
START_TEST(test_vlen_interleaved_moves32) {
  enum { N = 9 };
  static char pool[N][40];
  static const char *els[N];
  unsigned seed = 4242;
  for (int round = 0; round < 600; round++) {
    for (uint64_t i = 0; i < N; i++) {
      seed = seed * 1103515245u + 12345u;
      size_t l = i < 7 ? (size_t)(round + (int)i * 11) % 34
                       : 15 + (seed >> 16) % 19; /* 15..33 */
      for (size_t c = 0; c < l; c++)
        pool[i][c] = (char)('A' + (c * 5 + i + (size_t)round) % 26);
      pool[i][l] = 0;
      els[i] = pool[i];
    }
    size_t len;
    uint8_t *enc = vli_chunk(els, N, &len);
    size_t tail = (size_t)round % 3 ? 0 : (size_t)round % 40; /* trailing */
    uint8_t *big = malloc(len + tail + 1);
    memcpy(big, enc, len);
    memset(big + len, 'z', tail);
    struct zbuf gz;
    zbuf_init(&gz, MAXDEC);
    gzip_into(&gz, big, len + tail);
    struct abytes *a, *b;
    struct zerr err = {0};
    int rc =
        run("[\"vlen-utf8\",\"gzip\"]", N, gz.data, gz.len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "round %d: %s", round, err.msg);
    check_strings(a, els, N);
    rc = run("[\"vlen-utf8\"]", N, big, len + tail, MAXDEC, &b, &err);
    ck_assert_msg(rc == 0, "round %d: %s", round, err.msg);
    check_strings(b, els, N);
    ck_assert_uint_eq(a->data->size, a->offsets[N]);
    ck_assert_uint_eq(b->data->size, b->offsets[N]);
    abytes_free(a);
    abytes_free(b);
    zbuf_free(&gz);
    free(big);
    free(enc);
  }
}
END_TEST

/* A chunk large enough that in-place compaction hands pages of the gap
 * behind it back to the system as it goes (hundreds of thousands of
 * elements, empty to long): decoded behind gzip it gives the same offsets
 * and bytes as decoded from a borrowed copy. */
START_TEST(test_vlen_interleaved_in_place_large) {
  enum { N = 400000 };
  static char pool[N][48];
  static const char *els[N];
  unsigned seed = 777;
  for (uint64_t i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t l =
        (seed >> 16) % 11 == 0 ? 20 + (seed >> 4) % 27 : (seed >> 16) % 19;
    for (size_t c = 0; c < l; c++)
      pool[i][c] = (char)(c % 17 == 9 ? '\n' : 'a' + (c * 7 + i) % 26);
    pool[i][l] = 0;
    els[i] = pool[i];
  }
  size_t len;
  uint8_t *enc = vli_chunk(els, N, &len);
  struct zbuf gz;
  zbuf_init(&gz, MAXDEC);
  gzip_into(&gz, enc, len);
  struct abytes *a, *b;
  struct zerr err = {0};
  /* pages handed back as it goes, then none (a heap's block: heap_max
   * above the chunk's size) */
  for (int keep = 0; keep < 2; keep++) {
    run_heap_max = keep ? len + 1 : 0;
    int rc =
        run("[\"vlen-utf8\",\"gzip\"]", N, gz.data, gz.len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    rc = run("[\"vlen-utf8\"]", N, enc, len, MAXDEC, &b, &err);
    ck_assert_msg(rc == 0, "%s", err.msg);
    check_strings(a, els, N);
    ck_assert_mem_eq(a->offsets, b->offsets, (N + 1) * sizeof *a->offsets);
    ck_assert_uint_eq(a->data->size, b->data->size);
    ck_assert_mem_eq(a->data->mem, b->data->mem, (size_t)a->data->size);
    abytes_free(a);
    abytes_free(b);
  }
  run_heap_max = 0;
  zbuf_free(&gz);
  free(enc);
}
END_TEST

/* ---- bad input, as data ---- */

#define U32(x)                                                                 \
  (uint8_t)((x)&0xff), (uint8_t)(((x) >> 8) & 0xff),                           \
      (uint8_t)(((x) >> 16) & 0xff), (uint8_t)(((x) >> 24) & 0xff)
#define U64(x)                                                                 \
  U32((uint64_t)(x)&0xffffffffu), U32(((uint64_t)(x) >> 32) & 0xffffffffu)
#define BYTES(...)                                                             \
  (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

#define CFG(idx, dat, itype, loc)                                              \
  "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[" idx        \
  "],\"data_codecs\":[" dat "],\"index_data_type\":\"" itype                   \
  "\",\"index_location\":\"" loc "\"}}]"
#define LE "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}"
#define START_U64 CFG(LE, "\"bytes\"", "uint64", "start")
#define END_U64 CFG(LE, "\"bytes\"", "uint64", "end")
#define START_U32 CFG(LE, "\"bytes\"", "uint32", "start")
#define GZIP_DATA CFG(LE, "\"bytes\",\"gzip\"", "uint64", "start")
#define CRC_INDEX CFG(LE ",\"crc32c\"", "\"bytes\"", "uint64", "start")
#define UTF8 "[\"vlen-utf8\"]"

struct bad_case {
  const char *name;
  const char *codecs;
  uint64_t n;
  const uint8_t *bytes;
  size_t len;
  size_t max; /* 0: MAXDEC */
  int err;
  const char *msg;
};

START_TEST(test_bad_inputs) {
  const struct bad_case cases[] = {
      {"chunk shorter than 8 bytes", START_U64, 1, BYTES(1, 2, 3, 4, 5), 0, EIO,
       "zarrs.vlen: chunk of 5 bytes is shorter than the 8-byte"},
      {"empty chunk", END_U64, 1, (const uint8_t[]){0}, 0, 0, EIO,
       "shorter than the 8-byte"},
      {"index length larger than the chunk (start)", START_U64, 1,
       BYTES(U64(1000), U64(0), U64(0)), 0, EIO,
       "zarrs.vlen: index length 1000 exceeds chunk size 24"},
      {"index length larger than the chunk (end)", END_U64, 1,
       BYTES(U64(0), U64(0), U64(17)), 0, EIO,
       "index length 17 exceeds chunk size 24"},
      {"index length 2^64-1", START_U64, 1,
       BYTES(U64(UINT64_MAX), U64(0), U64(0)), 0, EIO, "exceeds chunk size 24"},
      {"offsets that decrease", START_U64, 3,
       BYTES(U64(32), U64(0), U64(3), U64(2), U64(4), 'a', 'b', 'c', 'd'), 0,
       EIO, "zarrs.vlen: offsets decrease at element 1 (3 then 2)"},
      {"offset past the data", START_U64, 2,
       BYTES(U64(24), U64(0), U64(9), U64(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "offsets decrease at element 1 (9 then 4)"},
      {"first offset past the data", START_U64, 1,
       BYTES(U64(16), U64(7), U64(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "offsets decrease at element 0 (7 then 4)"},
      {"data shorter than last offset", START_U64, 2,
       BYTES(U64(24), U64(0), U64(2), U64(10), 'a', 'b', 'c', 'd'), 0, EIO,
       "zarrs.vlen: data length 4 disagrees with last offset 10"},
      {"data longer than last offset", END_U64, 2,
       BYTES('a', 'b', 'c', 'd', U64(0), U64(2), U64(3), U64(24)), 0, EIO,
       "data length 4 disagrees with last offset 3"},
      {"gzip data shorter than last offset", GZIP_DATA, 1,
       BYTES(U64(16), U64(0), U64(10), 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00,
             0x00, 0x00, 0x03, 0x4b, 0x4c, 0x4a, 0x4e, 0x01, 0x00, 0x11, 0xcd,
             0x82, 0xed, 0x04, 0x00, 0x00, 0x00),
       0, EIO, "zarrs.vlen data: bytes: chunk has 4 bytes, expected 10"},
      {"gzip data corrupt", GZIP_DATA, 1,
       BYTES(U64(16), U64(0), U64(4), 'n', 'o', 't', 'g', 'z'), 0, EIO,
       "zarrs.vlen data: gzip: corrupt or truncated stream"},
      {"index with a missing offset", START_U64, 2,
       BYTES(U64(16), U64(0), U64(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "zarrs.vlen index: bytes: chunk has 16 bytes, expected 24"},
      {"index with a stray byte", START_U64, 1,
       BYTES(U64(17), U64(0), U64(1), 0, 'a'), 0, EIO,
       "chunk has 17 bytes, expected 16"},
      {"uint32 index with wrong count", START_U32, 2,
       BYTES(U64(8), U32(0), U32(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "chunk has 8 bytes, expected 12"},
      {"element count n+1 overflows", START_U64, UINT64_MAX,
       BYTES(U64(8), U64(0)), 0, EFBIG, "overflow"},
      {"element count (n+1)*8 overflows", START_U64, (uint64_t)1 << 61,
       BYTES(U64(8), U64(0)), 0, EFBIG, "overflow"},
      {"uint32 index (n+1)*8 overflows", START_U32, UINT64_MAX / 4,
       BYTES(U64(8), U64(0)), 0, EFBIG, "overflow"},
      {"index larger than the decode limit", START_U64, (uint64_t)1 << 40,
       BYTES(U64(8), U64(0)), 0, EFBIG, "decode limit"},
      {"index offsets over a small limit", START_U64, 3,
       BYTES(U64(32), U64(0), U64(0), U64(0), U64(0)), 16, EFBIG,
       "decode limit"},
      {"crc32c index mismatch", CRC_INDEX, 1,
       BYTES(U64(20), U64(0), U64(1), U32(0xdeadbeef), 'a'), 0, EIO,
       "zarrs.vlen index: crc32c: checksum mismatch (stored deadbeef"},
      {"crc32c index too short", CRC_INDEX, 1, BYTES(U64(2), 0, 0, 'a'), 0, EIO,
       "crc32c: chunk of 2 bytes is shorter"},
      {"vlen-utf8 count mismatch", UTF8, 2,
       BYTES(U32(3), U32(1), 'a', U32(1), 'b', U32(1), 'c'), 0, EIO,
       "vlen-utf8: header says 3 elements, chunk has 2"},
      {"vlen-utf8 count for a huge n", UTF8, UINT64_MAX, BYTES(U32(0)), 0, EIO,
       "header says 0 elements"},
      {"vlen-utf8 element length runs past the buffer", UTF8, 2,
       BYTES(U32(2), U32(1), 'a', U32(100), 'b'), 0, EIO,
       "vlen-utf8: element 1 length 100 runs past the end of the chunk"},
      {"vlen-utf8 element length 2^32-1", UTF8, 2,
       BYTES(U32(2), U32(0xffffffffu), 'a', U32(1), 'b'), 0, EIO,
       "element 0 length 4294967295 runs past"},
      {"vlen-utf8 length header runs past", UTF8, 2,
       BYTES(U32(2), U32(3), 'a', 'b', 'c', 'x', 'x', 'x'), 0, EIO,
       "element 1 length header runs past"},
      {"vlen-utf8 too short for the lengths", UTF8, 2,
       BYTES(U32(2), U32(1), 'a'), 0, EIO, "too short for 2 element lengths"},
      {"vlen-utf8 huge count, tiny chunk", UTF8, 0xffffffffu,
       BYTES(U32(0xffffffffu), U32(0)), 0, EIO, "too short for 4294967295"},
      {"vlen-utf8 truncated header", UTF8, 1, BYTES(1, 0), 0, EIO,
       "vlen-utf8: chunk of 2 bytes is too short for the 4-byte header"},
      {"vlen-utf8 empty chunk", UTF8, 1, (const uint8_t[]){0}, 0, 0, EIO,
       "too short for the 4-byte header"},
      {"vlen-utf8 offsets over a small limit", UTF8, 1,
       BYTES(U32(1), U32(1), 'a'), 8, EFBIG, "decode limit"},
      /* HDF5 vlen strings by byte range: the heap IDs h5py wrote for
       * ['hello', '', 'a'] and ['ab', 'cd', (unwritten)] */
      {"HDF5 heap references", UTF8, 3,
       BYTES(U32(5), U64(3496), U32(10), U32(0), U64(3496), U32(9), U32(1),
             U64(3496), U32(8)),
       0, EIO,
       "vlen-utf8: the chunk holds 3 HDF5 variable-length references (16 "
       "bytes each), not the strings: they live in the HDF5 file's global "
       "heap, so the references must inline them"},
      {"HDF5 heap references, one unwritten", "[\"vlen-bytes\"]", 3,
       BYTES(U32(2), U64(3496), U32(12), U32(2), U64(3496), U32(11), U32(0),
             U64(0), U32(0)),
       0, EIO, "vlen-bytes: the chunk holds 3 HDF5 variable-length"},
      {"16 bytes an element, not heap IDs", UTF8, 1,
       BYTES(U32(7), U32(3), 'a', 'b', 'c', U32(0), 'x'), 0, EIO,
       "vlen-utf8: header says 7 elements, chunk has 1"},
      {"vlen-bytes count mismatch", "[\"vlen-bytes\"]", 1,
       BYTES(U32(0), U32(1), 'a'), 0, EIO, "vlen-bytes: header says 0"},
      {"zarrs.vlen_v2 truncated element", "[\"zarrs.vlen_v2\"]", 1,
       BYTES(U32(1), U32(5), 'a', 'b'), 0, EIO,
       "zarrs.vlen_v2: element 0 length 5 runs past"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct bad_case *c = &cases[i];
    struct abytes *a = NULL;
    struct zerr err = {0};
    int rc = run(c->codecs, c->n, c->bytes, c->len, c->max ? c->max : MAXDEC,
                 &a, &err);
    ck_assert_msg(rc == -c->err, "%s: rc %d, want %d (%s)", c->name, rc,
                  -c->err, err.msg);
    ck_assert_msg(a == NULL, "%s: output despite error", c->name);
    ck_assert_msg(err.code == c->err && strstr(err.msg, c->msg),
                  "%s: message '%s' lacks '%s'", c->name, err.msg, c->msg);
    ck_assert_msg(!strchr(err.msg, '\n'), "%s: multi-line message", c->name);
  }
}
END_TEST

START_TEST(test_check_offsets) {
  static const uint64_t ok[] = {0, 0, 3, 3, 7};
  static const uint64_t dec[] = {0, 4, 3, 7};
  static const uint64_t past[] = {1, 2, 9};
  struct zerr err = {0};
  ck_assert_int_eq(abytes_check_offsets(ok, 4, 7, &err), 0);
  ck_assert_int_eq(abytes_check_offsets(ok, 4, 100, &err), 0);
  ck_assert_int_eq(abytes_check_offsets(ok, 4, 6, &err), -EIO);
  ck_assert(strstr(err.msg, "last offset 7 lies past the data (6 bytes)"));
  ck_assert_int_eq(abytes_check_offsets(dec, 3, 7, &err), -EIO);
  ck_assert(strstr(err.msg, "offsets decrease at element 1"));
  ck_assert_int_eq(abytes_check_offsets(past, 2, 8, &err), -EIO);
  static const uint64_t one[] = {10};
  ck_assert_int_eq(abytes_check_offsets(one, 0, 10, &err), 0);
}
END_TEST

/* ---- partial decoding ---- */

START_TEST(test_vlen_partial_read) {
  /* 200 elements of varying length in a real file: decoding reads the
   * length word and the index only; a view's range read adds exactly the
   * bytes of the range. */
  enum { N = 200 };
  char *store[N];
  const char *els[N];
  for (int i = 0; i < N; i++) {
    size_t l = (size_t)(i * 37 % 50);
    store[i] = malloc(l + 1);
    for (size_t k = 0; k < l; k++)
      store[i][k] = (char)('a' + (i + (int)k) % 26);
    store[i][l] = '\0';
    els[i] = store[i];
  }
  for (int at_end = 0; at_end < 2; at_end++) {
    struct venc o = {0, 0, at_end, 0, 0, 0};
    char json[1024];
    venc_json(&o, "zarrs.vlen", json, sizeof json);
    size_t len;
    uint8_t *enc = venc_chunk(&o, els, N, &len);
    char path[] = "/tmp/check_vlen_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, enc, len), (ssize_t)len);
    close(fd);

    struct io_stats st;
    memset(&st, 0, sizeof st);
    struct bytesrc *src;
    struct zerr err = {0};
    ck_assert_int_eq(bytesrc_open_file(path, &st, &src, &err), 0);
    unlink(path);
    struct codec_spec s = vspec(DT_STRING, N);
    struct chain *c;
    ck_assert_int_eq(tc_build(json, &s, &c, &err), 0);
    struct codec_env env = {MAXDEC, NULL, 0};
    struct abytes *a;
    ck_assert_msg(chain_decode(c, &s, src, &env, &a, &err) == 0, "%s", err.msg);
    uint64_t index_len = (N + 1) * 8;
    ck_assert_uint_eq(st.bytes_read, 8 + index_len);
    ck_assert_ptr_null(a->data->mem); /* still lazy */
    ck_assert_uint_eq(a->data->size, a->offsets[N]);

    uint64_t before = st.bytes_read;
    check_elem(a, 123, els[123], strlen(els[123]));
    ck_assert_uint_eq(st.bytes_read - before, strlen(els[123]));
    char buf[5];
    before = st.bytes_read;
    ck_assert_int_eq(bytesrc_read_range(a->data, 10, 5, buf, &err), 0);
    ck_assert_uint_eq(st.bytes_read - before, 5);
    ck_assert_uint_lt(st.bytes_read, len);

    abytes_free(a);
    chain_free(c);
    bytesrc_unref(src);
    free(enc);
  }
  for (int i = 0; i < N; i++)
    free(store[i]);
}
END_TEST

/* A partial decoder over zarrs.vlen chunks gives the offsets and element
 * bytes a whole decode gives, in any piece; capabilities follow the index
 * and data codecs. */
START_TEST(test_partial_vlen_same_as_decode) {
  for (int v = 0; v < 32; v++) {
    struct venc o = {v & 1, v >> 1 & 1, v >> 2 & 1, v >> 3 & 1, v >> 4 & 1, 0};
    char json[1024];
    venc_json(&o, "zarrs.vlen", json, sizeof json);
    size_t len;
    uint8_t *enc = venc_chunk(&o, sample, NSAMPLE, &len);
    struct codec_spec s = vspec(DT_STRING, NSAMPLE);
    struct chain *c;
    struct zerr err = {0};
    ck_assert_int_eq(tc_build(json, &s, &c, &err), 0);
    unsigned caps = chain_partial_caps(c);
    unsigned want = CODEC_PARTIAL_INDEX;
    if (!o.idx_crc)
      want |= CODEC_PARTIAL_OFFSETS | (o.dat_gzip ? 0 : CODEC_PARTIAL_PLAIN);
    ck_assert_msg(caps == want, "%s: caps %u, want %u", json, caps, want);

    struct abytes *a;
    ck_assert_int_eq(run(json, NSAMPLE, enc, len, MAXDEC, &a, &err), 0);
    struct bytesrc *src = bytesrc_from_static(enc, len);
    struct codec_partial p;
    int rc = chain_partial_open(c, &s, src, &p, &err);
    if (o.idx_crc) {
      ck_assert_int_eq(rc, -ENOTSUP);
    } else {
      ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
      ck_assert_uint_eq(p.n, NSAMPLE);
      ck_assert_uint_eq(p.elsize, 0);
      uint64_t off[NSAMPLE + 1];
      ck_assert_int_eq(chain_partial_offsets(&p, 0, NSAMPLE + 1, off, &err), 0);
      ck_assert_int_eq(memcmp(off, a->offsets, sizeof off), 0);
      for (uint64_t first = 0; first <= NSAMPLE; first++)
        for (uint64_t k = 0; k <= NSAMPLE + 1 - first; k++) {
          uint64_t piece[NSAMPLE + 1];
          ck_assert_int_eq(chain_partial_offsets(&p, first, k, piece, &err), 0);
          ck_assert_int_eq(memcmp(piece, off + first, k * sizeof *piece), 0);
        }
      ck_assert_int_eq(chain_partial_offsets(&p, 2, NSAMPLE, off, &err), -EIO);
      ck_assert_int_eq(chain_partial_elements(&p, 0, 1, off, &err), -ENOTSUP);
      if (o.dat_gzip) {
        ck_assert_ptr_null(p.data);
      } else {
        ck_assert_ptr_nonnull(p.data);
        for (uint64_t i = 0; i < NSAMPLE; i++) {
          char buf[64];
          size_t l = (size_t)(off[i + 1] - off[i]);
          ck_assert_int_eq(bytesrc_read_range(p.data, off[i], l, buf, &err), 0);
          ck_assert_int_eq(l, strlen(sample[i]));
          ck_assert_int_eq(memcmp(buf, sample[i], l), 0);
        }
      }
    }
    chain_partial_close(&p);
    chain_partial_close(&p); /* closed twice: a no-op */
    /* A chunk whose index does not hold n+1 offsets. */
    struct codec_spec s1 = vspec(DT_STRING, NSAMPLE + 1);
    rc = chain_partial_open(c, &s1, src, &p, &err);
    ck_assert_int_eq(rc, o.idx_crc ? -ENOTSUP : -EIO);
    chain_partial_close(&p);
    bytesrc_unref(src);
    abytes_free(a);
    chain_free(c);
    free(enc);
  }
}
END_TEST

/* A partial decoder over `bytes` chunks: an element range is a byte
 * range (plain, no swap) or read and swapped; the same values as a whole
 * decode. */
START_TEST(test_partial_bytes_same_as_decode) {
  static const char *const cfg[] = {
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]",
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]"};
  enum { N = 37 };
  uint8_t enc[N * 4];
  for (size_t i = 0; i < sizeof enc; i++)
    enc[i] = (uint8_t)(i * 7 + 3);
  for (int big = 0; big < 2; big++) {
    struct codec_spec s = vspec(DT_UINT32, N);
    struct chain *c;
    struct zerr err = {0};
    ck_assert_int_eq(tc_build(cfg[big], &s, &c, &err), 0);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    int swap = !big;
#else
    int swap = big;
#endif
    ck_assert_uint_eq(chain_partial_caps(c),
                      CODEC_PARTIAL_ELEMENTS |
                          (swap ? 0 : CODEC_PARTIAL_PLAIN));
    struct bytesrc *src = bytesrc_from_static(enc, sizeof enc);
    struct codec_env env = {MAXDEC, NULL, 0};
    struct abytes *a;
    ck_assert_int_eq(chain_decode(c, &s, src, &env, &a, &err), 0);
    uint8_t whole[sizeof enc];
    ck_assert_int_eq(bytesrc_read_range(a->fixed, 0, sizeof whole, whole, &err),
                     0);
    struct codec_partial p;
    ck_assert_int_eq(chain_partial_open(c, &s, src, &p, &err), 0);
    ck_assert_uint_eq(p.n, N);
    ck_assert_uint_eq(p.elsize, 4);
    for (uint64_t first = 0; first <= N; first++)
      for (uint64_t k = 0; k <= N - first; k++) {
        uint8_t got[sizeof enc];
        ck_assert_int_eq(chain_partial_elements(&p, first, k, got, &err), 0);
        ck_assert_int_eq(memcmp(got, whole + first * 4, k * 4), 0);
        uint64_t off, len;
        int rc = chain_partial_range(&p, first, k, &off, &len, &err);
        if (swap) {
          ck_assert_int_eq(rc, -ENOTSUP);
          continue;
        }
        ck_assert_int_eq(rc, 0);
        ck_assert_uint_eq(off, first * 4);
        ck_assert_uint_eq(len, k * 4);
        ck_assert_int_eq(
            bytesrc_read_range(p.data, off, (size_t)len, got, &err), 0);
        ck_assert_int_eq(memcmp(got, whole + first * 4, k * 4), 0);
      }
    uint64_t o[2];
    ck_assert_int_eq(chain_partial_elements(&p, N, 1, o, &err), -EIO);
    ck_assert_int_eq(chain_partial_offsets(&p, 0, 1, o, &err), -ENOTSUP);
    chain_partial_close(&p);
    /* A chunk of the wrong size. */
    struct codec_spec s1 = vspec(DT_UINT32, N + 1);
    ck_assert_int_eq(chain_partial_open(c, &s1, src, &p, &err), -EIO);
    chain_partial_close(&p);
    abytes_free(a);
    bytesrc_unref(src);
    chain_free(c);
  }
}
END_TEST

/* Chains with a bytes->bytes or array->array stage, and the draft string
 * layout of `bytes`, cannot be read partially: -ENOTSUP. */
START_TEST(test_partial_not_capable) {
  static const struct {
    const char *json;
    enum dtype_kind kind;
  } cases[] = {
      {"[{\"name\":\"bytes\"},{\"name\":\"gzip\"}]", DT_UINT8},
      {"[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},"
       "\"crc32c\"]",
       DT_UINT32},
      {"[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":["
       "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
       "\"data_codecs\":[{\"name\":\"bytes\"}],\"index_data_type\":"
       "\"uint64\"}},{\"name\":\"zstd\",\"configuration\":{\"level\":1,"
       "\"checksum\":false}}]",
       DT_STRING},
      {"[\"vlen-utf8\"]", DT_STRING},
      {"[{\"name\":\"bytes\"}]", DT_STRING},
  };
  uint8_t junk[64] = {0};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct codec_spec s = vspec(cases[i].kind, 4);
    struct chain *c;
    struct zerr err = {0};
    ck_assert_msg(tc_build(cases[i].json, &s, &c, &err) == 0, "%s: %s",
                  cases[i].json, err.msg);
    ck_assert_uint_eq(chain_partial_caps(c), 0);
    struct bytesrc *src = bytesrc_from_static(junk, sizeof junk);
    struct codec_partial p;
    ck_assert_int_eq(chain_partial_open(c, &s, src, &p, &err), -ENOTSUP);
    chain_partial_close(&p);
    bytesrc_unref(src);
    chain_free(c);
  }
}
END_TEST

/* ---- fixtures ---- */

/* Read a whole JSON file; NULL when missing. */
static json_t *load_json(const char *path) {
  json_error_t je;
  return json_load_file(path, 0, &je);
}

/* Expected element i (row-major over the whole array) of a fixture store:
 * snapshot strings/bytes per EXPECTED.md, or the empty_data store. */
static void fixture_expect(int is_bytes, int tiny, uint64_t i, uint8_t *buf,
                           size_t *len) {
  if (tiny) {
    static const char *const v[] = {"", "", "a", "", "fill", "fill"};
    *len = strlen(v[i]);
    memcpy(buf, v[i], *len);
  } else if (is_bytes) {
    *len = (size_t)(i % 8) + 1;
    memset(buf, (int)(i % 256), *len);
  } else {
    *len = (size_t)snprintf((char *)buf, 16, "str_%04d", (int)(i % 10000));
  }
}

/* Decode every chunk of a fixture store and compare with EXPECTED.md.
 * Returns the number of chunks checked (0 when a codec is unsupported). */
static int fixture_store(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/zarr.json", dir);
  json_t *root = load_json(path);
  ck_assert_msg(root != NULL, "cannot parse %s", path);
  const char *dtn = json_string_value(json_object_get(root, "data_type"));
  ck_assert_ptr_nonnull(dtn);
  int is_bytes = !strcmp(dtn, "bytes");
  json_t *shape = json_object_get(root, "shape");
  json_t *chunk = json_object_get(
      json_object_get(json_object_get(root, "chunk_grid"), "configuration"),
      "chunk_shape");
  struct codec_spec s = vspec(is_bytes ? DT_BYTES : DT_STRING, 1);
  s.ndim = (int)json_array_size(chunk);
  s.nelem = 1;
  uint64_t ashape[4], grid[4];
  ck_assert_int_le(s.ndim, 2);
  for (int d = 0; d < s.ndim; d++) {
    s.shape[d] = (uint64_t)json_integer_value(json_array_get(chunk, d));
    ashape[d] = (uint64_t)json_integer_value(json_array_get(shape, d));
    grid[d] = (ashape[d] + s.shape[d] - 1) / s.shape[d];
    s.nelem *= s.shape[d];
  }
  json_t *fv = json_object_get(root, "fill_value");
  uint8_t fill[64];
  s.fill_len = 0;
  if (json_is_string(fv)) {
    s.fill_len = json_string_length(fv);
    memcpy(fill, json_string_value(fv), s.fill_len);
  } else if (json_is_array(fv)) {
    for (size_t k = 0; k < json_array_size(fv); k++)
      fill[s.fill_len++] = (uint8_t)json_integer_value(json_array_get(fv, k));
  }
  s.fill = fill;
  int tiny = s.ndim == 1 && ashape[0] == 6;

  struct chain *c = NULL;
  struct zerr err = {0};
  int rc = chain_build(json_object_get(root, "codecs"), &s, &c, &err);
  if (rc == -ENOTSUP) {
    printf("check_vlen: skipping %s (%s)\n", dir, err.msg);
    json_decref(root);
    return 0;
  }
  ck_assert_msg(rc == 0, "%s: %s", dir, err.msg);
  int checked = 0;
  uint64_t ncells = s.ndim == 2 ? grid[0] * grid[1] : grid[0];
  for (uint64_t cell = 0; cell < ncells; cell++) {
    uint64_t ci = s.ndim == 2 ? cell / grid[1] : cell;
    uint64_t cj = s.ndim == 2 ? cell % grid[1] : 0;
    if (s.ndim == 2)
      snprintf(path, sizeof path, "%s/c/%llu/%llu", dir, (unsigned long long)ci,
               (unsigned long long)cj);
    else
      snprintf(path, sizeof path, "%s/c/%llu", dir, (unsigned long long)ci);
    struct io_stats st;
    memset(&st, 0, sizeof st);
    struct bytesrc *src = NULL;
    struct abytes *a = NULL;
    rc = bytesrc_open_file(path, &st, &src, &err);
    if (rc == -ENOENT) {
      struct codec_env fenv = {MAXDEC, NULL, 0};
      rc = abytes_new_fill(&s, &fenv, &a, &err); /* missing chunk: fill */
    } else {
      ck_assert_msg(rc == 0, "%s: %s", path, err.msg);
      struct codec_env env = {MAXDEC, NULL, 0};
      rc = chain_decode(c, &s, src, &env, &a, &err);
      if (rc == 0 && !a->elsize && !a->data)
        rc = chain_load_data(a, &env, &a->data, &err);
    }
    ck_assert_msg(rc == 0, "%s: %s", path, err.msg);
    ck_assert_uint_eq(a->n, s.nelem);
    for (uint64_t k = 0; k < s.nelem; k++) {
      uint64_t i;
      if (s.ndim == 2)
        i = (ci * s.shape[0] + k / s.shape[1]) * ashape[1] + cj * s.shape[1] +
            k % s.shape[1];
      else
        i = ci * s.shape[0] + k;
      uint8_t want[16];
      size_t wl;
      fixture_expect(is_bytes, tiny, i, want, &wl);
      check_elem(a, k, want, wl);
    }
    abytes_free(a);
    bytesrc_unref(src);
    checked++;
  }
  chain_free(c);
  json_decref(root);
  return checked;
}

START_TEST(test_fixture_snapshot_vlen) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  /* The worked example: c/0/0 of the zarrs.vlen snapshot, read lazily. */
  char path[4200];
  snprintf(path, sizeof path,
           "%s/zarrs/snapshots/supported/regular/string/a2b/zarrs.vlen/"
           "90309b49b72f0ea7",
           fx);
  ck_assert_int_eq(fixture_store(path), 8);
  char zj[4300], c00[4300];
  snprintf(zj, sizeof zj, "%s/zarr.json", path);
  snprintf(c00, sizeof c00, "%s/c/0/0", path);
  json_t *root = load_json(zj);
  struct codec_spec s = vspec(DT_STRING, 24);
  s.ndim = 2;
  s.shape[0] = 4;
  s.shape[1] = 6;
  struct chain *c;
  struct zerr err = {0};
  ck_assert_int_eq(chain_build(json_object_get(root, "codecs"), &s, &c, &err),
                   0);
  ck_assert(chain_is_passthrough(c));
  struct io_stats st;
  memset(&st, 0, sizeof st);
  struct bytesrc *src;
  ck_assert_int_eq(bytesrc_open_file(c00, &st, &src, &err), 0);
  struct codec_env env = {MAXDEC, NULL, 0};
  struct abytes *a;
  ck_assert_int_eq(chain_decode(c, &s, src, &env, &a, &err), 0);
  ck_assert_uint_eq(st.bytes_read, 8 + 200);
  static const char *const first[] = {"str_0000", "str_0001", "str_0002",
                                      "str_0003", "str_0004", "str_0005",
                                      "str_0024"};
  for (int k = 0; k < 7; k++)
    check_elem(a, (uint64_t)k, first[k], 8);
  check_elem(a, 23, "str_0077", 8);
  ck_assert_uint_eq(st.bytes_read, 8 + 200 + 8 * 8);
  abytes_free(a);
  bytesrc_unref(src);
  chain_free(c);
  json_decref(root);
}
END_TEST

START_TEST(test_fixture_snapshot_others) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  static const char *const pats[] = {
      "string/a2b/zarrs.vlen/*",    "string/a2b/vlen-utf8/*",
      "string/a2b/vlen-bytes/*",    "string/a2b/vlen-array/*",
      "string/a2b/zarrs.vlen_v2/*", "bytes/a2b/zarrs.vlen/*",
      "bytes/a2b/vlen-utf8/*",      "bytes/a2b/vlen-bytes/*",
      "bytes/a2b/vlen-array/*",     "bytes/a2b/zarrs.vlen_v2/*",
      "string/b2b/gzip(level5)/*",  "string/b2b/zstd(level5)/*",
      "string/b2b/crc32c/*",        "bytes/b2b/gzip(level5)/*",
      "bytes/b2b/zstd(level5)/*",   "bytes/b2b/crc32c/*",
  };
  int stores = 0;
  for (size_t p = 0; p < sizeof pats / sizeof pats[0]; p++) {
    char pat[4200];
    snprintf(pat, sizeof pat, "%s/zarrs/snapshots/supported/regular/%s", fx,
             pats[p]);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0)
      continue;
    for (size_t k = 0; k < g.gl_pathc; k++) {
      ck_assert_int_eq(fixture_store(g.gl_pathv[k]), 8);
      stores++;
    }
    globfree(&g);
  }
  ck_assert_int_ge(stores, 16);
}
END_TEST

START_TEST(test_fixture_synthesized) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  char pat[4200];
  snprintf(pat, sizeof pat, "%s/zarrs/synthesized_vlen/*.zarr", fx);
  glob_t g;
  ck_assert_int_eq(glob(pat, 0, NULL, &g), 0);
  int decoded = 0;
  for (size_t k = 0; k < g.gl_pathc; k++)
    decoded += fixture_store(g.gl_pathv[k]) > 0;
  /* all but the blosc and sharding stores */
  ck_assert_int_ge(decoded, 7);
  globfree(&g);
}
END_TEST

/* Assemble the suite. */

static Suite *vlen_suite(void) {
  Suite *s = suite_create("vlen");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_vlen_formats);
  tcase_add_test(tc, test_vlen_start_u64_bytes);
  tcase_add_test(tc, test_vlen_empty_data);
  tcase_add_test(tc, test_vlen_offsets_absolute);
  tcase_add_test(tc, test_vlen_config_forms);
  tcase_add_test(tc, test_vlen_config_errors);
  tcase_add_test(tc, test_vlen_interleaved);
  tcase_add_test(tc, test_vlen_interleaved_in_place);
  tcase_add_test(tc, test_vlen_interleaved_in_place_large);
  tcase_add_test(tc, test_vlen_interleaved_moves32);
  tcase_add_test(tc, test_bad_inputs);
  tcase_add_test(tc, test_check_offsets);
  tcase_add_test(tc, test_vlen_partial_read);
  tcase_add_test(tc, test_partial_vlen_same_as_decode);
  tcase_add_test(tc, test_partial_bytes_same_as_decode);
  tcase_add_test(tc, test_partial_not_capable);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 60);
  tcase_add_test(fx, test_fixture_snapshot_vlen);
  tcase_add_test(fx, test_fixture_snapshot_others);
  tcase_add_test(fx, test_fixture_synthesized);
  testutil_add_fixture_tcase(s, fx, "check_vlen");
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(vlen_suite()); }
