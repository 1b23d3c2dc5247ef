/* check_chaincaps.c - what access a chain reports, through the chain
 * alone (codecs/chain.h), as fs/ sees it: inner chunks (a shard's index
 * read once, one inner chunk decoded or its byte range taken) and
 * elements read in order from a stream (the interleaved vlen formats
 * behind zstd or gzip). A chain that cannot says so, and a chunk that
 * lies fails with -EIO naming the codec. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "codecs/abytes.h"
#include "../testcodec.h"
#include "../testutil.h"

/* A uint16 shard [6] of inner chunks [2]: inner chunk 0 holds {1, 2},
 * 1 is empty (fill 7), 2 holds {3, 4} stored first. */
#define SHARD_JSON                                                             \
  "{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":"         \
  "[2],\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"         \
  "\"little\"}}],\"index_codecs\":[{\"name\":\"bytes\",\"configuration\""      \
  ":{\"endian\":\"little\"}},{\"name\":\"crc32c\"}]}}"

static const uint8_t fill7[2] = {7, 0};

/* The shard's bytes into buf (8 + 48 + 4). */
static void shard_bytes(uint8_t *buf) {
  const uint16_t data[4] = {3, 4, 1, 2};
  memcpy(buf, data, 8);
  const uint64_t idx[6] = {4, 4, UINT64_MAX, UINT64_MAX, 0, 4};
  memcpy(buf + 8, idx, 48);
  uint32_t crc = tc_crc32c(buf + 8, 48);
  memcpy(buf + 56, &crc, 4);
}

START_TEST(inner_chunks_through_the_chain) {
  struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT16), 6);
  s.fill = fill7;
  struct chain *c;
  struct zerr err = {0};
  ck_assert_int_eq(tc_build("[" SHARD_JSON "]", &s, &c, &err), 0);
  uint64_t shape[ZMETA_MAX_DIMS] = {0};
  const struct chain *in = chain_inner(c, shape);
  ck_assert_ptr_nonnull(in);
  ck_assert_uint_eq(shape[0], 2);
  uint8_t buf[60];
  shard_bytes(buf);
  struct bytesrc *src = bytesrc_from_static(buf, sizeof buf);
  struct codec_env env = {1 << 20, NULL, 0};
  struct chain_index *x = NULL;
  ck_assert_int_eq(chain_index_read(c, &s, src, &env, &x, &err), 0);
  ck_assert_uint_eq(chain_index_count(x), 3);
  ck_assert_uint_ge(chain_index_cost(x), 48);
  uint64_t off, len;
  ck_assert_int_eq(chain_index_range(x, 0, &off, &len), 1);
  ck_assert_uint_eq(off, 4);
  ck_assert_uint_eq(len, 4);
  ck_assert_int_eq(chain_index_range(x, 1, &off, &len), 0);
  const uint16_t want[3][2] = {{1, 2}, {7, 7}, {3, 4}};
  for (uint64_t i = 0; i < 3; i++) {
    struct abytes *a = NULL;
    ck_assert_int_eq(chain_inner_decode(c, &s, src, x, i, &env, &a, &err), 0);
    ck_assert_uint_eq(a->n, 2);
    uint16_t got[2];
    ck_assert_int_eq(bytesrc_read_range(a->fixed, 0, 4, got, &err), 0);
    ck_assert_int_eq(memcmp(got, want[i], 4), 0);
    abytes_free(a);
  }
  struct abytes *a = NULL;
  ck_assert_int_eq(chain_inner_decode(c, &s, src, x, 3, &env, &a, &err), -EIO);
  chain_index_free(x);
  /* A lying index: an entry outside the shard. */
  uint64_t lie = 1000;
  memcpy(buf + 8, &lie, 8);
  uint32_t crc = tc_crc32c(buf + 8, 48);
  memcpy(buf + 56, &crc, 4);
  x = NULL;
  ck_assert_int_eq(chain_index_read(c, &s, src, &env, &x, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "outside"));
  ck_assert_ptr_null(x);
  bytesrc_unref(src);
  chain_free(c);
  chain_index_free(NULL);
}
END_TEST

START_TEST(no_inner_chunks_without_the_sole_stage) {
  struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT16), 6);
  s.fill = fill7;
  const char *no[] = {
      "[" SHARD_JSON ",{\"name\":\"gzip\"}]",
      "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]"};
  for (size_t t = 0; t < sizeof no / sizeof *no; t++) {
    struct chain *c;
    struct zerr err = {0};
    ck_assert_int_eq(tc_build(no[t], &s, &c, &err), 0);
    uint64_t shape[ZMETA_MAX_DIMS];
    ck_assert_ptr_null(chain_inner(c, shape));
    uint8_t buf[60];
    shard_bytes(buf);
    struct bytesrc *src = bytesrc_from_static(buf, sizeof buf);
    struct codec_env env = {1 << 20, NULL, 0};
    struct chain_index *x = NULL;
    ck_assert_int_eq(chain_index_read(c, &s, src, &env, &x, &err), -ENOTSUP);
    ck_assert_int_eq(chain_elems_capable(c), 0);
    bytesrc_unref(src);
    chain_free(c);
  }
}
END_TEST

/* The interleaved format of strs (n of them) with count `count`: a u32 LE
 * count, then length + bytes each; malloc'd, *len its size. */
static uint8_t *interleave(const char *const *strs, uint32_t n, uint32_t count,
                           size_t *len) {
  size_t size = 4;
  for (uint32_t i = 0; i < n; i++)
    size += 4 + strlen(strs[i]);
  uint8_t *b = malloc(size), *p = b;
  memcpy(p, &count, 4); /* the tests run little-endian */
  p += 4;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t l = (uint32_t)strlen(strs[i]);
    memcpy(p, &l, 4);
    memcpy(p + 4, strs[i], l);
    p += 4 + l;
  }
  *len = size;
  return b;
}

/* zstd (gz: gzip) of p; malloc'd. */
static uint8_t *squeeze_bytes(int gz, const uint8_t *p, size_t n, size_t *out) {
  if (gz)
    return tc_deflate(p, n, 31, 6, out);
  size_t cap = ZSTD_compressBound(n) + 64;
  uint8_t *o = malloc(cap);
  *out = ZSTD_compress(o, cap, p, n, 3);
  ck_assert(!ZSTD_isError(*out));
  return o;
}

static const char *const strs[] = {"a", "", "hello", "zarr"};

/* Open strs (interleaved with `count`, cut to `cut` bytes when > 0) as an
 * element stream of a chain of `codecs` over n elements. */
static int open_elems(const char *codecs, int gz, uint32_t count, size_t cut,
                      uint64_t n, struct chain **c, struct chain_elems **s,
                      struct chain_elem_pos *p, struct zerr *err) {
  struct codec_spec spec = tc_spec_1d(dtype_of(DT_STRING), n);
  ck_assert_int_eq(tc_build(codecs, &spec, c, err), 0);
  size_t len, zlen;
  uint8_t *raw = interleave(strs, 4, count, &len);
  uint8_t *z = squeeze_bytes(gz, raw, cut ? cut : len, &zlen);
  free(raw);
  struct bytesrc *src = bytesrc_from_mem(z, zlen);
  struct codec_env env = {1 << 20, NULL, 0};
  int rc = chain_elems_open(*c, &spec, src, &env, s, p, err);
  bytesrc_unref(src); /* the stream keeps its own reference */
  return rc;
}

START_TEST(elements_streamed_in_order) {
  const char *chains[] = {"[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]",
                          "[{\"name\":\"vlen-bytes\"},{\"name\":\"gzip\"}]",
                          "[{\"name\":\"zarrs.vlen_v2\"},{\"name\":\"zstd\"}]"};
  for (size_t t = 0; t < sizeof chains / sizeof *chains; t++) {
    struct chain *c;
    struct chain_elems *s = NULL;
    struct chain_elem_pos p, again;
    struct zerr err = {0};
    ck_assert_int_eq(open_elems(chains[t], t == 1, 4, 0, 4, &c, &s, &p, &err),
                     0);
    ck_assert_int_eq(chain_elems_capable(c), 1);
    ck_assert_uint_eq(p.k, 0);
    ck_assert_uint_gt(chain_elems_cost(s), 0);
    for (int i = 0; i < 4; i++) {
      uint64_t len;
      ck_assert_int_eq(chain_elems_len(s, &p, &len, &err), 0);
      ck_assert_uint_eq(len, strlen(strs[i]));
      char got[16];
      ck_assert_int_eq(chain_elems_read(s, &p, len, got, &err), 0);
      ck_assert_int_eq(memcmp(got, strs[i], len), 0);
      if (i == 2)
        again = p;
      chain_elems_step(s, &p, len);
      ck_assert_uint_eq(p.k, (uint64_t)i + 1);
    }
    ck_assert_int_eq(chain_elems_check(s, &p, &err), 0);
    /* A position kept is read again (behind the window: a restart). */
    uint64_t len;
    ck_assert_int_eq(chain_elems_len(s, &again, &len, &err), 0);
    ck_assert_uint_eq(len, 5);
    chain_elems_close(s);
    chain_free(c);
  }
  chain_elems_close(NULL);
}
END_TEST

START_TEST(elements_stream_lies_fail) {
  const char *json = "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]";
  struct chain *c;
  struct chain_elems *s = NULL;
  struct chain_elem_pos p;
  struct zerr err = {0};
  /* The count is not the chunk's. */
  ck_assert_int_eq(open_elems(json, 0, 3, 0, 4, &c, &s, &p, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "vlen-utf8: header says 3"));
  chain_free(c);
  /* The stream ends inside the last element: its bytes are not there. */
  size_t full;
  free(interleave(strs, 4, 4, &full));
  ck_assert_int_eq(open_elems(json, 0, 4, full - 2, 4, &c, &s, &p, &err), 0);
  int rc = 0;
  for (int i = 0; i < 4 && rc == 0; i++) {
    uint64_t len;
    rc = chain_elems_len(s, &p, &len, &err);
    if (rc == 0)
      chain_elems_step(s, &p, len);
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(chain_elems_check(s, &p, &err), -EIO);
  chain_elems_close(s);
  chain_free(c);
}
END_TEST

START_TEST(elements_stream_only_where_it_can) {
  struct codec_spec spec = tc_spec_1d(dtype_of(DT_STRING), 4);
  const char *no[] = {
      "[{\"name\":\"vlen-utf8\"}]", /* nothing to stream: decoded whole */
      "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"},{\"name\":\"crc32c\"}]",
      "[{\"name\":\"vlen-array\"},{\"name\":\"zstd\"}]",
      "[{\"name\":\"zarrs.vlen\"},{\"name\":\"zstd\"}]"};
  for (size_t t = 0; t < sizeof no / sizeof *no; t++) {
    struct chain *c;
    struct zerr err = {0};
    int rc = tc_build(no[t], &spec, &c, &err);
    if (rc < 0) /* vlen-array wants an array type */
      continue;
    ck_assert_int_eq(chain_elems_capable(c), 0);
    uint8_t b[4] = {0};
    struct bytesrc *src = bytesrc_from_static(b, 4);
    struct codec_env env = {1 << 20, NULL, 0};
    struct chain_elems *s = NULL;
    struct chain_elem_pos p;
    ck_assert_int_eq(chain_elems_open(c, &spec, src, &env, &s, &p, &err),
                     -ENOTSUP);
    ck_assert_ptr_null(s);
    bytesrc_unref(src);
    chain_free(c);
  }
}
END_TEST

/* The suite. */
static Suite *chaincaps_suite(void) {
  Suite *s = suite_create("chaincaps");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, inner_chunks_through_the_chain);
  tcase_add_test(tc, no_inner_chunks_without_the_sole_stage);
  tcase_add_test(tc, elements_streamed_in_order);
  tcase_add_test(tc, elements_stream_lies_fail);
  tcase_add_test(tc, elements_stream_only_where_it_can);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(chaincaps_suite()); }
