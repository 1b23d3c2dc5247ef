/* testchunk.h - chunks built by hand, shared by the codec tests that
 * decode them through the chain (tests/unit/codecs/) and the store tests
 * that read them through the engine (tests/unit/views/): zarrs.optional
 * chunks and their codecs and data types, vlen-utf8 element lists, and
 * the ZEP0007 draft string layout of `bytes`. Header-only, test code only
 * (allocation failure aborts the test). */
#ifndef ZARRFS_TESTCHUNK_H
#define ZARRFS_TESTCHUNK_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* zarrs.optional data types (V3 JSON). */
#define OPT_STR \
    "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"string\"," \
    "\"configuration\":{}}}"
#define OPT_BYTES \
    "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"bytes\"}}"
#define OPT_OPT_U8 \
    "{\"name\":\"optional\",\"configuration\":{\"name\":\"optional\"," \
    "\"configuration\":{\"name\":\"uint8\",\"configuration\":{}}}}"
#define OPT_OPT_STR \
    "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":" \
    "\"zarrs.optional\",\"configuration\":{\"name\":\"string\"}}}"

/* A growable byte buffer (test only: allocation failure aborts). */
struct bb {
  uint8_t p[4096];
  size_t n;
};

/* Append n bytes. */
static inline void bb_put(struct bb *b, const void *p, size_t n) {
  ck_assert_uint_le(b->n + n, sizeof b->p);
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

/* Append a little-endian integer of w bytes. */
static inline void bb_le(struct bb *b, uint64_t v, int w) {
  for (int i = 0; i < w; i++) {
    uint8_t c = (uint8_t)(v >> (8 * i));
    bb_put(b, &c, 1);
  }
}

/* vlen-utf8 / vlen-bytes: u32 count, then u32 length and bytes each. */
static inline struct bb vlen(int count, const char *const *s) {
  struct bb b = {.n = 0};
  bb_le(&b, (uint64_t)count, 4);
  for (int i = 0; i < count; i++) {
    bb_le(&b, strlen(s[i]), 4);
    bb_put(&b, s[i], strlen(s[i]));
  }
  return b;
}

/* A zarrs.optional chunk: the two lengths, the mask, the data. */
static inline struct bb opt_chunk(const void *mask, size_t mlen, const void *data,
                           size_t dlen) {
  struct bb b = {.n = 0};
  bb_le(&b, mlen, 8);
  bb_le(&b, dlen, 8);
  bb_put(&b, mask, mlen);
  bb_put(&b, data, dlen);
  return b;
}

/* The codecs of an optional type: packbits mask, data_codecs `data`. */
static inline void opt_codecs(char *buf, size_t len, const char *data) {
  snprintf(buf, len,
           "[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
           "[{\"name\":\"packbits\"}],\"data_codecs\":%s}}]",
           data);
}

/* A draft-layout chunk of the strings s[0..n): offsets, padding, data.
 * Caller frees; *len set. */
static inline uint8_t *draft_chunk(const char *const *s, uint32_t n, size_t *len) {
  size_t hdr = 4 * ((size_t)n + 1), pad = (hdr + 63) / 64 * 64, data = 0;
  for (uint32_t i = 0; i < n; i++)
    data += strlen(s[i]);
  uint8_t *p = calloc(1, pad + data + 1);
  uint32_t off = 0;
  for (uint32_t i = 0; i <= n; i++) {
    memcpy(p + 4 * i, &off, 4); /* little-endian host */
    if (i < n) {
      memcpy(p + pad + off, s[i], strlen(s[i]));
      off += (uint32_t)strlen(s[i]);
    }
  }
  *len = pad + data;
  return p;
}

#endif
