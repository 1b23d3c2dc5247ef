/* check_vlen_fixtures.c - real chunks written by zarrs (the shared
 * fixtures, ../shared/fixtures; skipped with a line when absent, a failure
 * under CI): every vlen snapshot decodes to the expected elements, the
 * other codecs' snapshots decode, and the synthesized stores. Shared
 * helpers: testvlen.h. */
#include <check.h>
#include <glob.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../testutil.h"
#include "testvlen.h"

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
  struct codec_spec s = tc_spec1(is_bytes ? DT_BYTES : DT_STRING, 1);
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
  struct codec_spec s = tc_spec1(DT_STRING, 24);
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

static Suite *vlen_fixtures_suite(void) {
  Suite *s = suite_create("vlen_fixtures");
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 60);
  tcase_add_test(fx, test_fixture_snapshot_vlen);
  tcase_add_test(fx, test_fixture_snapshot_others);
  tcase_add_test(fx, test_fixture_synthesized);
  testutil_add_fixture_tcase(s, fx, "check_vlen_fixtures");
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(vlen_fixtures_suite()); }
