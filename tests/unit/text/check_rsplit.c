/* check_rsplit.c - a run's lines rendered in parts (fs/text/rsplit.h): the text
 * and the block offsets are those of one render_fixed_run per block,
 * whoever renders the parts (a worker, or the caller when the pool is
 * busy, full, absent or shut down); a buffer with no room left is dropped
 * while the offsets stay exact; queued parts go before queued jobs
 * (pool_submit_first); a run is split as many ways as the pool has idle
 * workers, plus the caller; many runs split at once from several threads. */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../fs/text/render.h"
#include "../../../fs/text/rsplit.h"
#include "../../../src/util/pool.h"

#define BLOCK 64

/* n elements of kind: varied digit counts and signs (seeded). */
static unsigned char *make_elems(enum dtype_kind kind, size_t size, size_t n,
                                 uint64_t seed) {
  unsigned char *e = malloc(n * size);
  ck_assert_ptr_nonnull(e);
  uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    if (kind == DT_FLOAT64) {
      double d = (double)(int64_t)(x >> 11) / (double)(1ull << (x % 60));
      memcpy(e + i * size, &d, 8);
    } else {
      uint64_t v = x >> (x % 64);
      memcpy(e + i * size, &v, size); /* low bytes: little-endian host */
    }
  }
  return e;
}

/* The reference: one render_fixed_run per block, offsets as it goes. */
static char *reference(const struct dtype *dt, const unsigned char *src,
                       size_t n, uint64_t *blk, size_t *len) {
  char *t = malloc(n * RENDER_RUN_ROOM + 1);
  size_t o = 0;
  for (size_t k = 0; k < n; k += BLOCK) {
    size_t m = n - k < BLOCK ? n - k : BLOCK;
    blk[k / BLOCK] = o;
    o += render_fixed_run(dt, src + k * dt->size, m, t + o);
  }
  *len = o;
  return t;
}

/* What fs/text/text.c does: the caller's share by blocks into tb, then the
 * parts; returns the text length (pos) and leaves tb as the parts made it.
 * wait_helped: hold the caller's share back until a worker has a part. */
static uint64_t split_render(struct pool *p, int ways, const struct dtype *dt,
                             const unsigned char *src, size_t n, uint64_t *blk,
                             struct tbuf *tb, int wait_helped, int *split) {
  uint64_t kend, pos = 0, before = rsplit_helped();
  struct rsplit *rs =
      rsplit_start(p, ways, dt, src, dt->size, 0, n, BLOCK, blk, &kend);
  *split = rs != NULL;
  if (!rs)
    ck_assert_uint_eq(kend, n);
  for (int i = 0; wait_helped && rs && i < 10000 && rsplit_helped() == before;
       i++)
    usleep(1000);
  for (uint64_t k = 0; k < kend; k += BLOCK) {
    size_t m = kend - k < BLOCK ? (size_t)(kend - k) : BLOCK;
    blk[k / BLOCK] = pos;
    char *d = tbuf_room(tb, m * RENDER_RUN_ROOM);
    char scratch[BLOCK * RENDER_RUN_ROOM];
    size_t l = render_fixed_run(dt, src + k * dt->size, m, d ? d : scratch);
    if (d)
      tb->len += l;
    pos += l;
  }
  if (rs)
    rsplit_end(rs, tb, blk, &pos);
  return pos;
}

/* Split and reference agree: text (when kept) and every block offset. */
static void check_same(struct pool *p, int ways, enum dtype_kind kind,
                       size_t size, size_t n, size_t max, int wait_helped,
                       int want_split) {
  struct dtype dt = {.kind = kind, .size = size};
  unsigned char *src = make_elems(kind, size, n, n + size);
  size_t nb = (n + BLOCK - 1) / BLOCK, rlen;
  uint64_t *rblk = calloc(nb + 1, 8), *blk = calloc(nb + 1, 8);
  char *ref = reference(&dt, src, n, rblk, &rlen);
  struct tbuf tb = {malloc(1024), 0, 1024, max};
  int split;
  uint64_t pos =
      split_render(p, ways, &dt, src, n, blk, &tb, wait_helped, &split);
  if (want_split >= 0) /* -1: either */
    ck_assert_int_eq(split, want_split);
  ck_assert_uint_eq(pos, rlen);
  ck_assert(memcmp(blk, rblk, nb * 8) == 0);
  if (rlen + RENDER_RUN_ROOM <= max) {
    ck_assert_ptr_nonnull(tb.p);
    ck_assert_uint_eq(tb.len, rlen);
    ck_assert(memcmp(tb.p, ref, rlen) == 0);
  } else {
    ck_assert_ptr_null(tb.p);
  }
  free(tb.p);
  free(ref);
  free(blk);
  free(rblk);
  free(src);
}

START_TEST(parts_make_the_same_text) {
  struct pool *p = pool_new(2, 64);
  static const size_t ns[] = {2 * RSPLIT_MIN_PART, 2 * RSPLIT_MIN_PART + 1,
                              3 * RSPLIT_MIN_PART + 17, 1000003};
  for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
    check_same(p, 3, DT_FLOAT64, 8, ns[i], SIZE_MAX, 0, 1);
    check_same(p, 3, DT_INT32, 4, ns[i], SIZE_MAX, 0, 1);
    check_same(p, 3, DT_INT8, 1, ns[i], SIZE_MAX, 0, 1);
    check_same(p, 3, DT_UINT64, 8, ns[i], SIZE_MAX, 0, 1);
  }
  /* a worker surely renders a part: the caller waits for it to start */
  uint64_t before = rsplit_helped();
  check_same(p, 3, DT_FLOAT64, 8, 600000, SIZE_MAX, 1, 1);
  ck_assert_uint_gt(rsplit_helped(), before);
  pool_free(p);
}
END_TEST

START_TEST(short_runs_and_no_pool_not_split) {
  struct pool *p = pool_new(2, 64);
  check_same(p, 3, DT_INT32, 4, 2 * RSPLIT_MIN_PART - 1, SIZE_MAX, 0, 0);
  check_same(NULL, 3, DT_INT32, 4, 1000000, SIZE_MAX, 0, 0);
  pool_free(p);
}
END_TEST

START_TEST(no_room_drops_the_text_keeps_offsets) {
  /* room for about half the text: the buffer goes, the layout stays */
  struct pool *p = pool_new(2, 64);
  check_same(p, 3, DT_FLOAT64, 8, 400000, 4u << 20, 0, 1);
  check_same(p, 3, DT_INT32, 4, 400000, 1u << 20, 0, 1);
  pool_free(p);
}
END_TEST

/* A job that holds its worker until *gate opens. */
static void gate_job(void *arg, int cancelled) {
  (void)cancelled;
  atomic_int *gate = arg;
  for (int i = 0; i < 10000 && !atomic_load(gate); i++)
    usleep(1000);
}

START_TEST(busy_or_full_pool_caller_renders) {
  /* one worker held, a queue of one: at most one part is queued, the
   * rest refused; the caller renders them all, nobody waits */
  struct pool *p = pool_new(1, 1);
  atomic_int gate = 0;
  ck_assert_int_eq(pool_submit(p, gate_job, &gate), 0);
  uint64_t before = rsplit_helped();
  check_same(p, 3, DT_INT32, 4, 1000000, SIZE_MAX, 0, 1);
  ck_assert_uint_eq(rsplit_helped(), before);
  atomic_store(&gate, 1);
  pool_free(p);
}
END_TEST

/* Record the order jobs run in. */
struct order {
  atomic_int n;
  atomic_int seen[4];
};
struct order_arg {
  struct order *o;
  int id;
};
static void order_job(void *arg, int cancelled) {
  struct order_arg *a = arg;
  if (!cancelled)
    atomic_store(&a->o->seen[atomic_fetch_add(&a->o->n, 1)], a->id);
}

START_TEST(ways_are_idle_workers_and_the_caller) {
  struct pool *p = pool_new(2, 8);
  ck_assert_int_eq(rsplit_ways(NULL), 1);
  ck_assert_int_eq(rsplit_ways(p), 3);
  atomic_int gate = 0;
  ck_assert_int_eq(pool_submit(p, gate_job, &gate), 0);
  ck_assert_int_eq(rsplit_ways(p), 2);
  ck_assert_int_eq(pool_submit(p, gate_job, &gate), 0);
  ck_assert_int_eq(rsplit_ways(p), 1);
  ck_assert_int_eq(pool_submit(p, gate_job, &gate), 0); /* queued too */
  ck_assert_int_eq(rsplit_ways(p), 1);
  /* a busy pool is not split */
  check_same(p, rsplit_ways(p), DT_INT32, 4, 1000000, SIZE_MAX, 0, 0);
  atomic_store(&gate, 1);
  pool_free(p);
}
END_TEST

START_TEST(first_jobs_run_before_queued_ones) {
  struct pool *p = pool_new(1, 8);
  atomic_int gate = 0;
  struct order o = {0};
  struct order_arg a[3] = {{&o, 1}, {&o, 2}, {&o, 3}};
  ck_assert_int_eq(pool_submit(p, gate_job, &gate), 0);
  ck_assert_int_eq(pool_submit(p, order_job, &a[0]), 0);
  ck_assert_int_eq(pool_submit(p, order_job, &a[1]), 0);
  ck_assert_int_eq(pool_submit_first(p, order_job, &a[2]), 0);
  atomic_store(&gate, 1);
  for (int i = 0; i < 10000 && atomic_load(&o.n) < 3; i++)
    usleep(1000);
  ck_assert_int_eq(atomic_load(&o.n), 3);
  /* the gate job may not have started when the first one was queued */
  ck_assert_int_eq(atomic_load(&o.seen[0]), 3);
  ck_assert_int_eq(atomic_load(&o.seen[1]), 1);
  ck_assert_int_eq(atomic_load(&o.seen[2]), 2);
  pool_free(p);
}
END_TEST

/* One thread's share of concurrent splits on a shared pool. */
static void *split_thread(void *arg) {
  struct pool *p = arg;
  for (int i = 0; i < 3; i++)
    check_same(p, rsplit_ways(p), i % 2 ? DT_INT32 : DT_FLOAT64, i % 2 ? 4 : 8,
               300000 + 64 * i, SIZE_MAX, 0,
               -1); /* split while a worker is idle */
  return NULL;
}

START_TEST(concurrent_splits) {
  struct pool *p = pool_new(3, 16);
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, split_thread, p), 0);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  pool_free(p);
}
END_TEST

START_TEST(parts_queued_at_shutdown) {
  /* the pool is freed with parts still queued (cancelled): the caller
   * renders them, and the split's memory is freed once (ASan build) */
  struct pool *p = pool_new(1, 8);
  atomic_int gate = 0;
  ck_assert_int_eq(pool_submit(p, gate_job, &gate), 0);
  struct dtype dt = {.kind = DT_INT32, .size = 4};
  size_t n = 500000, nb = (n + BLOCK - 1) / BLOCK, rlen;
  unsigned char *src = make_elems(DT_INT32, 4, n, 7);
  uint64_t *rblk = calloc(nb, 8), *blk = calloc(nb, 8), kend, pos = 0;
  char *ref = reference(&dt, src, n, rblk, &rlen);
  struct rsplit *rs = rsplit_start(p, 3, &dt, src, 4, 0, n, BLOCK, blk, &kend);
  ck_assert_ptr_nonnull(rs);
  atomic_store(&gate, 1);
  pool_free(p); /* the gate job finishes; queued parts may be cancelled */
  struct tbuf tb = {malloc(n * RENDER_RUN_ROOM), 0, n * RENDER_RUN_ROOM,
                    SIZE_MAX};
  for (uint64_t k = 0; k < kend; k += BLOCK) {
    size_t m = kend - k < BLOCK ? (size_t)(kend - k) : BLOCK;
    blk[k / BLOCK] = pos;
    size_t l = render_fixed_run(&dt, src + k * 4, m, tb.p + tb.len);
    tb.len += l;
    pos += l;
  }
  rsplit_end(rs, &tb, blk, &pos);
  ck_assert_uint_eq(pos, rlen);
  ck_assert(memcmp(tb.p, ref, rlen) == 0);
  ck_assert(memcmp(blk, rblk, nb * 8) == 0);
  free(tb.p);
  free(ref);
  free(blk);
  free(rblk);
  free(src);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rsplit");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, parts_make_the_same_text);
  tcase_add_test(tc, short_runs_and_no_pool_not_split);
  tcase_add_test(tc, no_room_drops_the_text_keeps_offsets);
  tcase_add_test(tc, busy_or_full_pool_caller_renders);
  tcase_add_test(tc, ways_are_idle_workers_and_the_caller);
  tcase_add_test(tc, first_jobs_run_before_queued_ones);
  tcase_add_test(tc, concurrent_splits);
  tcase_add_test(tc, parts_queued_at_shutdown);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
