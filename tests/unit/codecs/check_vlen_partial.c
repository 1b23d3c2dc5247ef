/* check_vlen_partial.c - unit tests for partial reads of variable-length
 * chunks: a range read takes only the index and the bytes it needs, and a
 * partial decoder (zarrs.vlen, bytes) gives what a whole decode gives;
 * a chain that cannot decode partially says so. Shared helpers:
 * testvlen.h. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "testvlen.h"

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
    struct codec_spec s = tc_spec1(DT_STRING, N);
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
    struct codec_spec s = tc_spec1(DT_STRING, NSAMPLE);
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
    struct codec_spec s1 = tc_spec1(DT_STRING, NSAMPLE + 1);
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
    struct codec_spec s = tc_spec1(DT_UINT32, N);
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
    struct codec_spec s1 = tc_spec1(DT_UINT32, N + 1);
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
    struct codec_spec s = tc_spec1(cases[i].kind, 4);
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

/* Assemble the suite. */

static Suite *vlen_partial_suite(void) {
  Suite *s = suite_create("vlen_partial");
  TCase *tc = tcase_create("partial");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_vlen_partial_read);
  tcase_add_test(tc, test_partial_vlen_same_as_decode);
  tcase_add_test(tc, test_partial_bytes_same_as_decode);
  tcase_add_test(tc, test_partial_not_capable);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(vlen_partial_suite()); }
