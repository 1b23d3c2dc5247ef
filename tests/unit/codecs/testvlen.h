/* testvlen.h - helpers shared by the variable-length codec tests
 * (check_vlen*.c): a zarrs.vlen encoder of every layout and config form
 * (as zarrs writes them), the interleaved vlen-utf8 encoding, one chunk of
 * strings decoded through the chain, element checks. Header-only, test
 * code only. */
#ifndef ZARRFS_TESTVLEN_H
#define ZARRFS_TESTVLEN_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testcodec.h"
#include "codecs/chain.h"
#include "codecs/codec.h"
#include "src/util/buf.h"

#define MAXDEC ((size_t)64 << 20)

/* The codec_env heap_max of run's decodes (0: pages may be handed back). */
static size_t run_heap_max;

/* Build, then decode one in-memory chunk of n string elements. */
static inline int run(const char *json, uint64_t n, const void *enc, size_t len,
                      size_t max, struct abytes **out, struct zerr *err) {
  struct codec_spec s = tc_spec1(DT_STRING, n);
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
static inline void check_elem(struct abytes *a, uint64_t i, const void *want,
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
static inline void check_strings(struct abytes *a, const char *const *want,
                                 uint64_t n) {
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, 0);
  ck_assert_ptr_nonnull(a->offsets);
  ck_assert_ptr_nonnull(a->data);
  for (uint64_t i = 0; i < n; i++)
    check_elem(a, i, want[i], strlen(want[i]));
}

/* Append the gzip stream of p[0..n) to out. */
static inline void gzip_into(struct zbuf *out, const void *p, size_t n) {
  size_t len;
  uint8_t *o = tc_deflate(p, n, 31, 5, &len);
  ck_assert_int_eq(zbuf_append(out, o, len, NULL), 0);
  free(o);
}

/* Append v as an `size`-byte integer, little or big endian. */
static inline void put_uint(struct zbuf *b, uint64_t v, size_t size, int big) {
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
static inline void venc_json(const struct venc *o, const char *name, char *buf,
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
static inline uint8_t *venc_chunk(const struct venc *o, const char *const *els,
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
static inline uint8_t *vli_chunk(const char *const *els, uint64_t n,
                                 size_t *len) {
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

#endif
