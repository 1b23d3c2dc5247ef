/* check_vlen_interleaved.c - unit tests for the interleaved
 * variable-length codecs (vlen-utf8, vlen-bytes): decoding, behind gzip,
 * the text pass in place (small and large chunks, 17-32-byte moves),
 * through the codec chain (codecs/chain.h). Shared helpers: testvlen.h. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "testvlen.h"

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

/* Assemble the suite. */

static Suite *vlen_interleaved_suite(void) {
  Suite *s = suite_create("vlen_interleaved");
  TCase *tc = tcase_create("interleaved");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_vlen_interleaved);
  tcase_add_test(tc, test_vlen_interleaved_in_place);
  tcase_add_test(tc, test_vlen_interleaved_moves32);
  tcase_add_test(tc, test_vlen_interleaved_in_place_large);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(vlen_interleaved_suite()); }
