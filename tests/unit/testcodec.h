/* testcodec.h - helpers shared by the codec unit tests: a 1-D spec, a
 * chain built from JSON text, one chunk decoded through it, a decoded
 * array's bytes and a CRC-32C. Header-only, test code only (a bad
 * test JSON literal fails the test at once). */
#ifndef ZARRFS_TESTCODEC_H
#define ZARRFS_TESTCODEC_H

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include <stdlib.h>
#include <zlib.h>

#include "../../codecs/chain.h"
#include "../../src/io/bytesrc.h"

static const uint8_t testcodec_zero_fill[16];

/* A 1-D spec of n elements of dt with a zero fill. */
static inline struct codec_spec tc_spec_1d(struct dtype dt, uint64_t n) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = n;
  s.nelem = n;
  s.dtype = dt;
  s.fill = testcodec_zero_fill;
  s.fill_len = dt.size;
  return s;
}

/* A 1-D spec of n elements of kind with a zero fill. */
static inline struct codec_spec tc_spec1(enum dtype_kind kind, uint64_t n) {
  return tc_spec_1d(dtype_of(kind), n);
}

/* Build a chain from JSON text; chain_build's result (*out NULL on error). */
static inline int tc_build(const char *json, const struct codec_spec *spec,
                           struct chain **out, struct zerr *err) {
  json_error_t je;
  json_t *j = json_loads(json, 0, &je);
  ck_assert_msg(j != NULL, "bad test JSON %s: %s", json, je.text);
  *out = NULL;
  int rc = chain_build(j, spec, out, err);
  json_decref(j);
  return rc;
}

/* Build a chain and decode one in-memory chunk with it (at most max
 * bytes); chain_decode's result, *out owned by the caller. */
static inline int tc_run(const char *json, const struct codec_spec *spec,
                         const void *enc, size_t len, size_t max,
                         struct abytes **out, struct zerr *err) {
  struct chain *c;
  int rc = tc_build(json, spec, &c, err);
  ck_assert_msg(rc == 0, "chain_build(%s): %s", json, err->msg);
  struct bytesrc *src = bytesrc_from_static(enc, len);
  struct codec_env env = {max, NULL, 0};
  *out = NULL;
  rc = chain_decode(c, spec, src, &env, out, err);
  bytesrc_unref(src);
  chain_free(c);
  return rc;
}

/* All bytes of a decoded fixed array, loaded (caller frees). */
static inline uint8_t *tc_fixed_bytes(struct abytes *a) {
  size_t n = (size_t)a->fixed->size;
  uint8_t *p = malloc(n ? n : 1);
  struct zerr err = {0};
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 0, n, p, &err), 0);
  return p;
}

/* CRC-32C bit by bit (Castagnoli, reflected): the checksum a test writes
 * beside data it makes (crc32c, a shard index). */
static inline uint32_t tc_crc32c(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

/* A deflate stream of p[0..n): gzip (windowBits 31) or zlib (15), at
 * `level`; the caller frees it. */
static inline uint8_t *tc_deflate(const void *p, size_t n, int wbits, int level,
                                  size_t *out) {
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  ck_assert_int_eq(
      deflateInit2(&zs, level, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  size_t cap = deflateBound(&zs, n) + 64;
  uint8_t *o = malloc(cap);
  ck_assert_ptr_nonnull(o);
  zs.next_in = (Bytef *)p;
  zs.avail_in = (uInt)n;
  zs.next_out = o;
  zs.avail_out = (uInt)cap;
  ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
  *out = cap - zs.avail_out;
  deflateEnd(&zs);
  return o;
}

#endif
