/* check_textfixed.c - the layout of a unit of plain numbers in its own
 * order (fs/text/text.h: text_layout) whether its text is kept or not: a
 * render_max the samples put the text past writes none of it (the unit
 * stays lazy: no text, its elements kept; no part of it is handed to the
 * helpers to render) and gives the same size, line
 * offsets and ranged reads as a layout that keeps the text, and as
 * render_fixed_run over the whole run; text_measure agrees. Units of a few
 * elements (below the sampling) and texts just over the limit too. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/text/render.h"
#include "../../../fs/text/rsplit.h"
#include "../../../fs/text/text.h"
#include "../../../src/io/bytesrc.h"
#include "../../../src/util/log.h"
#include "../../../src/util/pool.h"
#include "../testutil.h"

#define MAXDEC ((size_t)1 << 30)

/* n float64 of varied lengths (seeded). */
static double *make_f64(size_t n, uint64_t seed) {
  double *v = malloc(n * sizeof *v);
  ck_assert_ptr_nonnull(v);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = (double)(int64_t)(x >> 11) / (double)(1ull << (x % 60));
  }
  return v;
}

/* A decoded 1-D unit of n float64 (a copy of v). */
static struct abytes *unit_of(const double *v, size_t n) {
  struct abytes *ab = calloc(1, sizeof *ab);
  void *mem = malloc(n * 8 ? n * 8 : 1);
  ck_assert_ptr_nonnull(ab);
  memcpy(mem, v, n * 8);
  ab->n = n;
  ab->elsize = 8;
  ab->fixed = bytesrc_from_mem(mem, n * 8);
  return ab;
}

/* The form of a 1-D float64 unit of n (units borrow their form: it
 * outlives them). */
static void form_of(struct text_form *form, size_t n) {
  memset(form, 0, sizeof *form);
  form->dt = dtype_of(DT_FLOAT64);
  form->ndim = 1;
  form->shape[0] = n;
  form->fill = (char *)"";
}

/* Layout of v[0..n) as a unit of form with render_max rmax. */
static struct chunk_text *layout(const struct text_form *form, const double *v,
                                 size_t n, size_t rmax, struct pool *helpers) {
  uint64_t shape[1] = {n}, idx[1] = {0};
  struct zerr err = {0};
  struct chunk_text *ct = NULL;
  ck_assert_int_eq(text_layout(form, shape, idx, unit_of(v, n), MAXDEC, rmax,
                               helpers, NULL, &ct, &err),
                   0);
  return ct;
}

/* The reference text: one render_fixed_run over all of v. */
static char *reference(const double *v, size_t n, size_t *len) {
  struct dtype dt = dtype_of(DT_FLOAT64);
  char *t = malloc(n * RENDER_RUN_ROOM + 1);
  *len = render_fixed_run(&dt, (const unsigned char *)v, n, t);
  return t;
}

/* kept and lazy layouts of n values: same size, offsets and reads, the
 * lazy one holding no text. */
static void same_kept_and_lazy(size_t n, struct pool *helpers) {
  double *v = make_f64(n, n);
  struct text_form form;
  form_of(&form, n);
  size_t wlen;
  char *want = reference(v, n, &wlen);
  struct chunk_text *kept = layout(&form, v, n, MAXDEC, helpers);
  ck_assert_ptr_nonnull(kept->text);
  ck_assert_uint_eq(kept->size, wlen);
  ck_assert(!memcmp(kept->text, want, wlen));
  /* limits well under the text, and just under it */
  size_t limits[] = {wlen / 4, wlen - wlen / 64};
  for (int li = 0; li < 2; li++) {
    uint64_t helped = rsplit_helped();
    struct chunk_text *lazy = layout(&form, v, n, limits[li], helpers);
    /* sampled units: counted, no part handed to a helper to be written */
    if (n >= 65536)
      ck_assert_uint_eq(rsplit_helped(), helped);
    ck_assert_ptr_null(lazy->text);
    ck_assert_ptr_nonnull(lazy->ab);
    ck_assert_uint_eq(lazy->size, wlen);
    for (uint64_t k = 0; k <= n; k += 997)
      ck_assert_uint_eq(text_line_off(lazy, k), text_line_off(kept, k));
    ck_assert_uint_eq(text_line_off(lazy, n), wlen);
    struct zerr err = {0};
    char buf[70000];
    uint64_t offs[] = {0, 1, wlen / 3 + 7, wlen - 65536, wlen - 5};
    for (int i = 0; i < 5; i++) {
      size_t want_n = wlen - offs[i] < sizeof buf ? wlen - offs[i] : sizeof buf;
      long got = text_read(lazy, NULL, offs[i], sizeof buf, buf, &err);
      ck_assert_int_eq(got, (long)want_n);
      ck_assert(!memcmp(buf, want + offs[i], want_n));
    }
    zobj_put(&lazy->obj);
  }
  /* text_measure: the size alone */
  uint64_t shape[1] = {n}, idx[1] = {0}, size = 0;
  struct zerr err = {0};
  ck_assert_int_eq(text_measure(&form, shape, idx, unit_of(v, n), MAXDEC, NULL,
                                &size, &err),
                   0);
  ck_assert_uint_eq(size, wlen);
  zobj_put(&kept->obj);
  free(want);
  free(v);
}

START_TEST(lazy_layout_same_as_kept) {
  struct pool *p = pool_new(2, 16);
  same_kept_and_lazy(300000, NULL); /* sampled: measured, none written */
  same_kept_and_lazy(300000, p);    /* the kept one split on helpers */
  same_kept_and_lazy(70001, p);
  same_kept_and_lazy(5000, NULL); /* below the sampling: rendered, dropped */
  pool_free(p);
}
END_TEST

static Suite *textfixed_suite(void) {
  Suite *s = suite_create("textfixed");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, lazy_layout_same_as_kept);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(textfixed_suite());
}
