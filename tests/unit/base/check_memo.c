/* check_memo.c - the hash table and the memo: fills once, single flight,
 * pins and the byte budget, remembered and transient failures, the wait
 * rule, the stop flag, and learned values. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../../src/util/cancel.h"
#include "../../../src/util/htab.h"
#include "../../../src/util/memo.h"
#include "../../../src/util/zmath.h"
#include "../testutil.h"

/* ---- htab ---- */

struct item {
  struct htab_node hn;
  uint64_t key;
};

/* Equality on the integer key. */
static int item_eq(const struct htab_node *n, const void *key) {
  return ((const struct item *)n)->key == *(const uint64_t *)key;
}

START_TEST(htab_grows_and_finds) {
  struct htab t;
  ck_assert_int_eq(htab_init(&t, 4), 0);
  size_t nb0 = t.nbuckets;
  enum { N = 50000 };
  struct item *it = calloc(N, sizeof *it);
  for (uint64_t i = 0; i < N; i++) {
    it[i].key = i * 7919;
    it[i].hn.hash = htab_hash_bytes(&it[i].key, 8, 1);
    htab_insert(&t, &it[i].hn);
  }
  ck_assert_uint_eq(t.count, N);
  ck_assert_uint_gt(t.nbuckets, nb0); /* it grew */
  for (uint64_t i = 0; i < N; i += 7) {
    uint64_t k = i * 7919;
    struct htab_node *n = htab_find(&t, htab_hash_bytes(&k, 8, 1), item_eq, &k);
    ck_assert_ptr_eq(n, &it[i].hn);
  }
  for (uint64_t i = 0; i < N; i += 2)
    htab_remove(&t, &it[i].hn);
  ck_assert_uint_eq(t.count, N / 2);
  uint64_t k = 2 * 7919;
  ck_assert_ptr_null(htab_find(&t, htab_hash_bytes(&k, 8, 1), item_eq, &k));
  size_t popped = 0;
  while (htab_pop(&t))
    popped++;
  ck_assert_uint_eq(popped, N / 2);
  htab_fini(&t);
  free(it);
  /* Strings hash apart. */
  ck_assert(htab_hash_str("a/c/0") != htab_hash_str("a/c/1"));
}
END_TEST

/* Teardown by htab_pop is linear: a million entries pop in well under a
 * second (a scan from bucket 0 per pop took minutes); entries inserted
 * after pops, into buckets already emptied, are still found. */
START_TEST(htab_pop_linear) {
  struct htab t;
  ck_assert_int_eq(htab_init(&t, 16), 0);
  enum { N = 1000000 };
  struct item *it = calloc(N, sizeof *it);
  ck_assert_ptr_nonnull(it);
  for (uint64_t i = 0; i < N; i++) {
    it[i].key = i;
    it[i].hn.hash = htab_hash_bytes(&it[i].key, 8, 3);
    htab_insert(&t, &it[i].hn);
  }
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  size_t popped = 0;
  while (htab_pop(&t))
    popped++;
  clock_gettime(CLOCK_MONOTONIC, &b);
  double secs = (double)(b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
  ck_assert_uint_eq(popped, N);
  ck_assert_msg(secs < 5, "popping %d entries took %.1f s", N, secs);
  for (uint64_t i = 0; i < 64; i++) /* all over the bucket array again */
    htab_insert(&t, &it[i].hn);
  popped = 0;
  while (htab_pop(&t))
    popped++;
  ck_assert_uint_eq(popped, 64);
  ck_assert_uint_eq(t.count, 0);
  htab_fini(&t);
  free(it);
}
END_TEST

/* Sorted u64 helpers used by layouts and presence. */
START_TEST(sorted_u64) {
  uint64_t a[] = {40, 10, 30, 10, 20};
  zsort_u64(a, 5);
  ck_assert(a[0] == 10 && a[1] == 10 && a[2] == 20 && a[3] == 30 && a[4] == 40);
  ck_assert_uint_eq(zrank_u64(a, 5, 0), 0);
  ck_assert_uint_eq(zrank_u64(a, 5, 10), 0);
  ck_assert_uint_eq(zrank_u64(a, 5, 11), 2);
  ck_assert_uint_eq(zrank_u64(a, 5, 41), 5);
  ck_assert_uint_eq(zrank_u64(a, 0, 7), 0);
  uint64_t off[] = {0, 5, 9, 20};
  ck_assert_uint_eq(zfloor_u64(off, 4, 0), 0);
  ck_assert_uint_eq(zfloor_u64(off, 4, 4), 0);
  ck_assert_uint_eq(zfloor_u64(off, 4, 5), 1);
  ck_assert_uint_eq(zfloor_u64(off, 4, 19), 2);
  ck_assert_uint_eq(zfloor_u64(off, 4, UINT64_MAX), 3);
  ck_assert_uint_eq(zfloor_u64(off, 1, 3), 0);
}
END_TEST

/* ---- memo ---- */

struct val {
  struct zobj obj;
  int *freed;
  int id;
};

/* Count destructions. */
static void val_destroy(struct zobj *o) {
  struct val *v = (struct val *)o;
  if (v->freed)
    __atomic_add_fetch(v->freed, 1, __ATOMIC_RELAXED);
  free(v);
}

/* What a test fill does. */
struct job {
  int calls;        /* fills run (atomic) */
  size_t cost;      /* cost to report */
  int fail;         /* negative errno to fail with, or 0 */
  atomic_int *hold; /* if set: hold the fill until *hold is 0 (10 s at most) */
  int *freed;
  struct memo *m; /* for nested gets */
  int nested_level;
  int nested_rc;
};

/* A fill that makes a val, or fails as told. */
static int fill(void *ctx, struct zobj **obj, size_t *cost, struct zerr *err) {
  struct job *j = ctx;
  __atomic_add_fetch(&j->calls, 1, __ATOMIC_RELAXED);
  for (int i = 0; j->hold && atomic_load(j->hold) && i < 10000; i++)
    usleep(1000);
  if (j->nested_level) {
    struct memo_key k = {.level = (uint8_t)j->nested_level, .n = 1, .v = {99}};
    struct job inner = {.cost = 1};
    struct memo_ref *r;
    j->nested_rc = memo_get(j->m, &k, fill, &inner, &r, err);
    if (j->nested_rc == 0)
      memo_release(j->m, r);
  }
  if (j->fail)
    return zerr_set(err, -j->fail, "told to fail");
  struct val *v = calloc(1, sizeof *v);
  zobj_init(&v->obj, val_destroy);
  v->freed = j->freed;
  *obj = &v->obj;
  *cost = j->cost;
  return 0;
}

/* A memo with this budget and value bound. */
static struct memo *memo_make(size_t budget, size_t values,
                              const atomic_int *stop) {
  struct memo_config cfg = {budget, values, stop, 0, 0};
  struct memo *m;
  struct zerr err = {0};
  ck_assert_int_eq(memo_new(&cfg, &m, &err), 0);
  return m;
}

/* Key (level, word). */
static struct memo_key key(int level, uint64_t w) {
  struct memo_key k = {.level = (uint8_t)level, .n = 1, .owner = NULL};
  k.v[0] = w;
  return k;
}

START_TEST(fills_once_and_hits) {
  struct memo *m = memo_make(1 << 20, 100, NULL);
  struct job j = {.cost = 100};
  struct zerr err = {0};
  struct memo_key k = key(2, 1);
  struct memo_ref *r1, *r2;
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r1, &err), 0);
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r2, &err), 0);
  ck_assert_int_eq(j.calls, 1);
  ck_assert_ptr_eq(memo_obj(r1), memo_obj(r2));
  ck_assert_uint_eq(memo_fills(m, 2), 1);
  ck_assert_uint_eq(memo_hits(m), 1);
  ck_assert_uint_eq(memo_waits(m), 0); /* found ready: no wait */
  memo_release(m, r1);
  memo_release(m, r2);
  ck_assert_int_eq(memo_peek(m, &k, &r1), 1);
  memo_release(m, r1);
  ck_assert_uint_eq(memo_hits(m), 1); /* a peek is not a lookup */
  /* Another owner is another key. */
  int other;
  k.owner = &other;
  ck_assert_int_eq(memo_peek(m, &k, &r1), 0);
  memo_release(m, NULL);
  memo_free(m);
  memo_free(NULL);
}
END_TEST

START_TEST(budget_pins_and_big_entries) {
  int freed = 0;
  struct memo *m = memo_make(1000, 100, NULL);
  struct zerr err = {0};
  struct job j = {.cost = 300, .freed = &freed};
  struct memo_ref *pinned;
  struct memo_key k0 = key(2, 0);
  ck_assert_int_eq(memo_get(m, &k0, fill, &j, &pinned, &err), 0);
  for (uint64_t i = 1; i <= 10; i++) {
    struct memo_key k = key(2, i);
    struct memo_ref *r;
    ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), 0);
    memo_release(m, r);
    ck_assert_uint_le(memo_used(m), 1000);
  }
  ck_assert_int_ge(freed, 7); /* older unpinned entries went */
  /* The pinned one stayed findable and is not charged to the budget. */
  struct memo_ref *again;
  ck_assert_int_eq(memo_peek(m, &k0, &again), 1);
  ck_assert_ptr_eq(again, pinned);
  memo_release(m, again);
  ck_assert_uint_ge(memo_pinned(m), 300);
  memo_release(m, pinned);
  ck_assert_uint_eq(memo_pinned(m), 0);
  ck_assert_uint_le(memo_used(m), 1000);

  /* Larger than the whole budget: shared while pinned, dropped after. */
  struct job big = {.cost = 5000, .freed = &freed};
  struct memo_key kb = key(2, 77);
  struct memo_ref *b1, *b2;
  ck_assert_int_eq(memo_get(m, &kb, fill, &big, &b1, &err), 0);
  ck_assert_int_eq(memo_get(m, &kb, fill, &big, &b2, &err), 0);
  ck_assert_int_eq(big.calls, 1);
  int before = freed;
  memo_release(m, b1);
  ck_assert_int_eq(freed, before);
  memo_release(m, b2);
  ck_assert_int_eq(freed, before + 1);
  ck_assert_int_eq(memo_peek(m, &kb, &b1), 0);
  memo_free(m);
}
END_TEST

/* Bytes a fill holds outside the memo (memo_hold) count as pinned: the
 * cache makes room at once, and gets it back when they are given back. */
START_TEST(held_bytes_make_room) {
  int freed = 0;
  struct memo *m = memo_make(2000, 100, NULL);
  struct zerr err = {0};
  struct job j = {.cost = 200, .freed = &freed};
  for (uint64_t i = 0; i < 5; i++) {
    struct memo_key k = key(2, i);
    struct memo_ref *r;
    ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), 0);
    memo_release(m, r);
  }
  size_t full = memo_used(m); /* five entries' worth, all kept */
  ck_assert_uint_ge(full, 5 * 100);
  ck_assert_int_eq(freed, 0);
  memo_hold(m, 1000);
  ck_assert_uint_eq(memo_pinned(m), 1000);
  ck_assert_uint_le(memo_used(m), 1000);
  ck_assert_int_ge(freed, 2); /* the oldest went, at once */
  struct memo_ref *r;
  struct memo_key k0 = key(2, 0), k4 = key(2, 4);
  ck_assert_int_eq(memo_peek(m, &k0, &r), 0);
  ck_assert_int_eq(memo_peek(m, &k4, &r), 1);
  memo_release(m, r);
  /* while held, a new entry pushes out another */
  struct memo_key k9 = key(2, 9);
  ck_assert_int_eq(memo_get(m, &k9, fill, &j, &r, &err), 0);
  memo_release(m, r);
  ck_assert_uint_le(memo_used(m), 1000);
  memo_hold(m, -1000);
  ck_assert_uint_eq(memo_pinned(m), 0);
  /* the room is the cache's again */
  for (uint64_t i = 10; i < 13; i++) {
    struct memo_key k = key(2, i);
    ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), 0);
    memo_release(m, r);
  }
  ck_assert_uint_gt(memo_used(m), 1000);
  memo_free(m);
}
END_TEST

START_TEST(remembered_and_transient_failures) {
  struct memo *m = memo_make(1 << 20, 100, NULL);
  struct zerr err = {0};
  struct memo_ref *r;
  struct job bad = {.fail = -EIO};
  struct memo_key k = key(2, 5);
  ck_assert_int_eq(memo_get(m, &k, fill, &bad, &r, &err), -EIO);
  ck_assert_str_eq(err.msg, "told to fail");
  zerr_clear(&err);
  ck_assert_int_eq(memo_get(m, &k, fill, &bad, &r, &err), -EIO);
  ck_assert_str_eq(err.msg, "told to fail");
  ck_assert_int_eq(bad.calls, 1); /* remembered */

  struct job busy = {.fail = -EMFILE};
  struct memo_key kt = key(2, 6);
  ck_assert_int_eq(memo_get(m, &kt, fill, &busy, &r, &err), -EMFILE);
  ck_assert_int_eq(memo_get(m, &kt, fill, &busy, &r, &err), -EMFILE);
  ck_assert_int_eq(busy.calls, 2); /* tried again */
  busy.fail = 0;
  ck_assert_int_eq(memo_get(m, &kt, fill, &busy, &r, &err), 0);
  memo_release(m, r);
  memo_free(m);
}
END_TEST

/* A remembered failure answers for fail_keep_ns, then the key is filled
 * again: a chunk repaired is read, one still bad is remembered anew. */
START_TEST(remembered_failure_expires) {
  struct memo_config cfg = {1 << 20, 100, NULL, 50000000, 0}; /* 50 ms */
  struct memo *m;
  struct zerr err = {0};
  ck_assert_int_eq(memo_new(&cfg, &m, &err), 0);
  struct memo_ref *r;
  struct job j = {.fail = -EIO, .cost = 10};
  struct memo_key k = key(2, 7);
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), -EIO);
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), -EIO);
  ck_assert_int_eq(j.calls, 1); /* remembered */
  nanosleep(&(struct timespec){0, 60000000}, NULL);
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), -EIO);
  ck_assert_int_eq(j.calls, 2); /* expired: tried again, still bad */
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), -EIO);
  ck_assert_int_eq(j.calls, 2); /* remembered anew */
  nanosleep(&(struct timespec){0, 60000000}, NULL);
  j.fail = 0; /* repaired */
  zerr_clear(&err);
  ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), 0);
  ck_assert_int_eq(j.calls, 3);
  memo_release(m, r);
  memo_free(m);
}
END_TEST

/* A thread that gets one key. */
struct getter {
  struct memo *m;
  struct job *j;
  struct memo_key k;
  int rc;
  atomic_int *entered; /* if set: counted up just before the get */
};

/* Get, hold briefly, release. */
static void *getter_run(void *p) {
  struct getter *g = p;
  struct zerr err = {0};
  struct memo_ref *r;
  if (g->entered)
    atomic_fetch_add(g->entered, 1);
  g->rc = memo_get(g->m, &g->k, fill, g->j, &r, &err);
  if (g->rc == 0)
    memo_release(g->m, r);
  return NULL;
}

/* Eight getters of one key while its fill is held: one fill, seven
 * waits counted, and a failure reaches every waiter once too. The fill
 * is held (no fixed wait) until it has started and every other getter
 * waits for it; a getter that got there after the release would find the
 * value (or the remembered failure), so one fill holds whatever the
 * scheduling. */
static void single_flight_of(struct memo *m, struct job *j, uint64_t id,
                             int want_rc) {
  uint64_t waits0 = memo_waits(m);
  atomic_int hold, entered;
  atomic_init(&hold, 1);
  atomic_init(&entered, 0);
  j->hold = &hold;
  pthread_t t[8];
  struct getter g[8];
  g[0] = (struct getter){m, j, key(2, id), -1, NULL};
  pthread_create(&t[0], NULL, getter_run, &g[0]);
  for (int i = 0; !__atomic_load_n(&j->calls, __ATOMIC_RELAXED) && i < 10000;
       i++)
    usleep(1000);
  ck_assert_int_eq(__atomic_load_n(&j->calls, __ATOMIC_RELAXED), 1);
  for (int i = 1; i < 8; i++) {
    g[i] = (struct getter){m, j, key(2, id), -1, &entered};
    pthread_create(&t[i], NULL, getter_run, &g[i]);
  }
  for (int i = 0; atomic_load(&entered) < 7 && i < 10000; i++)
    usleep(1000);
  ck_assert_int_eq(atomic_load(&entered), 7);
  /* each of them found the fill running and waits (memo_waits) */
  for (int i = 0; memo_waits(m) - waits0 < 7 && i < 10000; i++)
    usleep(1000);
  ck_assert_uint_eq(memo_waits(m) - waits0, 7);
  atomic_store(&hold, 0);
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(g[i].rc, want_rc);
  }
  ck_assert_int_eq(j->calls, 1);
  j->hold = NULL;
}

START_TEST(single_flight) {
  struct memo *m = memo_make(1 << 20, 100, NULL);
  struct job j = {.cost = 10};
  single_flight_of(m, &j, 42, 0);
  struct job bad = {.fail = -EIO};
  single_flight_of(m, &bad, 43, -EIO);
  memo_free(m);
}
END_TEST

/* memo_present: an object there or being filled counts (a fill's
 * transfer may end before the memo holds it: the remote blocks' claims
 * must see it); a remembered failure, a value and an absent key do not. */
START_TEST(present_while_filling) {
  struct memo *m = memo_make(1 << 20, 100, NULL);
  atomic_int hold = 1;
  struct job j = {.cost = 10, .hold = &hold};
  struct getter g = {m, &j, key(2, 40), 0, NULL};
  ck_assert_int_eq(memo_present(m, &g.k), 0);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, getter_run, &g), 0);
  for (int i = 0; i < 5000 && !__atomic_load_n(&j.calls, __ATOMIC_RELAXED); i++)
    usleep(1000);
  ck_assert_int_eq(__atomic_load_n(&j.calls, __ATOMIC_RELAXED), 1); /* held */
  struct memo_ref *r;
  ck_assert_int_eq(memo_peek(m, &g.k, &r), 0);
  ck_assert_int_eq(memo_present(m, &g.k), 1);
  atomic_store(&hold, 0);
  pthread_join(t, NULL);
  ck_assert_int_eq(g.rc, 0);
  ck_assert_int_eq(memo_present(m, &g.k), 1);
  struct job bad = {.fail = -EIO};
  struct memo_key kb = key(2, 41);
  struct zerr err = {0};
  ck_assert_int_eq(memo_get(m, &kb, fill, &bad, &r, &err), -EIO);
  ck_assert_int_eq(memo_present(m, &kb), 0);
  struct memo_key kv = key(2, 42);
  memo_value_put(m, &kv, 7);
  ck_assert_int_eq(memo_present(m, &kv), 0);
  memo_free(m);
}
END_TEST

START_TEST(wait_rule_is_checked) {
  struct memo *m = memo_make(1 << 20, 100, NULL);
  struct zerr err = {0};
  struct memo_ref *r;
  struct job up = {.cost = 1, .m = m, .nested_level = 3};
  struct memo_key k3 = key(3, 1);
  ck_assert_int_eq(memo_get(m, &k3, fill, &up, &r, &err), 0);
  ck_assert_int_eq(up.nested_rc, -EDEADLK); /* same level: refused */
  memo_release(m, r);
  struct job down = {.cost = 1, .m = m, .nested_level = 2};
  struct memo_key k3b = key(3, 2);
  ck_assert_int_eq(memo_get(m, &k3b, fill, &down, &r, &err), 0);
  ck_assert_int_eq(down.nested_rc, 0); /* lower level: fine */
  memo_release(m, r);
  struct memo_key bad = key(0, 1);
  ck_assert_int_eq(memo_get(m, &bad, fill, &down, &r, &err), -EINVAL);
  memo_free(m);
}
END_TEST

START_TEST(stop_ends_waits) {
  /* The fill is held until the waiter has returned, so the waiter meets
   * a pending entry whenever its thread gets to run: the stop must end
   * its wait. */
  atomic_int stop, hold;
  atomic_init(&stop, 0);
  atomic_init(&hold, 1);
  struct memo *m = memo_make(1 << 20, 100, &stop);
  struct job slow = {.cost = 1, .hold = &hold};
  pthread_t filler, waiter;
  struct getter gf = {m, &slow, key(2, 9), -1, NULL};
  struct getter gw = {m, &slow, key(2, 9), -1, NULL};
  pthread_create(&filler, NULL, getter_run, &gf);
  /* the filler is inside its fill before the waiter starts */
  for (int i = 0; !__atomic_load_n(&slow.calls, __ATOMIC_RELAXED) && i < 10000;
       i++)
    usleep(1000);
  ck_assert_int_eq(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 1);
  pthread_create(&waiter, NULL, getter_run, &gw);
  atomic_store(&stop, 1); /* before or during its wait: either ends it */
  pthread_join(waiter, NULL); /* returns while the fill is still held */
  ck_assert_int_eq(gw.rc, -EINTR);
  ck_assert_int_eq(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 1);
  atomic_store(&hold, 0);
  pthread_join(filler, NULL);
  ck_assert_int_eq(gf.rc, 0);
  memo_free(m);
}
END_TEST

/* A getter serving a request whose token is raised (src/util/cancel.h). */
struct cgetter {
  struct getter g;
  struct cancel tok;
};
static void *cgetter_run(void *p) {
  struct cgetter *c = p;
  cancel_enter(&c->tok);
  getter_run(&c->g);
  cancel_leave(NULL);
  return NULL;
}

START_TEST(cancel_ends_a_wait) {
  /* A request abandoned by its reader (FUSE INTERRUPT) stops waiting for
   * another thread's fill at once; the fill goes on for whoever else
   * wants it (issue 32 item 8). */
  atomic_int hold;
  atomic_init(&hold, 1);
  struct memo *m = memo_make(1 << 20, 100, NULL);
  struct job slow = {.cost = 1, .hold = &hold};
  struct getter gf = {m, &slow, key(2, 9), -1, NULL};
  struct cgetter cw = {{m, &slow, key(2, 9), -1, NULL}, {0}};
  cancel_init(&cw.tok);
  pthread_t filler, waiter;
  pthread_create(&filler, NULL, getter_run, &gf);
  for (int i = 0; !__atomic_load_n(&slow.calls, __ATOMIC_RELAXED) && i < 10000;
       i++)
    usleep(1000);
  pthread_create(&waiter, NULL, cgetter_run, &cw);
  cancel_raise(&cw.tok);
  pthread_join(waiter, NULL); /* returns while the fill is still held */
  ck_assert_int_eq(cw.g.rc, -EINTR);
  ck_assert(cancel_raised(&cw.tok));
  ck_assert_ptr_null(cancel_current()); /* this thread has no token */
  atomic_store(&hold, 0);
  pthread_join(filler, NULL);
  ck_assert_int_eq(gf.rc, 0);
  ck_assert_int_eq(__atomic_load_n(&slow.calls, __ATOMIC_RELAXED), 1);
  /* the reason says which */
  struct zerr err = {0};
  struct cancel tok;
  cancel_init(&tok);
  ck_assert_int_eq(cancel_check(NULL, &err), 0);
  struct cancel *prev = cancel_enter(&tok);
  cancel_raise(&tok);
  ck_assert_int_eq(cancel_check(NULL, &err), -EINTR);
  ck_assert_str_eq(err.msg, "interrupted: its reader gave up");
  cancel_leave(prev);
  ck_assert(!cancel_requested());
  memo_free(m);
}
END_TEST

/* A value fill. */
static int vfill(void *ctx, uint64_t *v, struct zerr *err) {
  struct job *j = ctx;
  __atomic_add_fetch(&j->calls, 1, __ATOMIC_RELAXED);
  if (j->fail)
    return zerr_set(err, -j->fail, "no value");
  *v = 1000 + (uint64_t)j->cost;
  return 0;
}

START_TEST(values) {
  struct memo *m = memo_make(1 << 20, 3, NULL);
  struct zerr err = {0};
  struct job j = {.cost = 5};
  uint64_t v;
  struct memo_key k = key(4, 1);
  ck_assert_int_eq(memo_value(m, &k, vfill, &j, &v, &err), 0);
  ck_assert_uint_eq(v, 1005);
  ck_assert_int_eq(memo_value(m, &k, vfill, &j, &v, &err), 0);
  ck_assert_int_eq(j.calls, 1);
  struct memo_key k2 = key(4, 2), k3 = key(4, 3), k4 = key(4, 4);
  memo_value_put(m, &k2, 2);
  memo_value_put(m, &k3, 3);
  ck_assert_int_eq(memo_value_peek(m, &k, &v), 1); /* k used last */
  memo_value_put(m, &k4, 4);                       /* evicts k2 */
  ck_assert_int_eq(memo_value_peek(m, &k2, &v), 0);
  ck_assert_int_eq(memo_value_peek(m, &k4, &v), 1);
  ck_assert_uint_eq(v, 4);
  memo_value_put(m, &k4, 40);
  ck_assert_int_eq(memo_value_peek(m, &k4, &v), 1);
  ck_assert_uint_eq(v, 40);
  /* An object key is not a value key. */
  struct memo_ref *r;
  struct job oj = {.cost = 1};
  ck_assert_int_eq(memo_get(m, &k4, fill, &oj, &r, &err), -EINVAL);
  /* Failed values are remembered like objects. */
  struct job bad = {.fail = -EIO};
  struct memo_key k5 = key(4, 5);
  ck_assert_int_eq(memo_value(m, &k5, vfill, &bad, &v, &err), -EIO);
  ck_assert_int_eq(memo_value(m, &k5, vfill, &bad, &v, &err), -EIO);
  ck_assert_int_eq(bad.calls, 1);
  memo_free(m);
}
END_TEST

/* Hammer the memo from several threads with a small budget. */
static void *hammer(void *p) {
  struct getter *g = p;
  struct zerr err = {0};
  struct job vj = {.cost = 1}; /* value fills, counted apart */
  for (int i = 0; i < 20000; i++) {
    struct memo_key k = key(2, (uint64_t)(i * 7 + g->rc) % 300);
    struct memo_ref *r;
    if (memo_get(g->m, &k, fill, g->j, &r, &err) == 0) {
      ck_assert_ptr_nonnull(memo_obj(r));
      memo_release(g->m, r);
    }
    uint64_t v;
    struct memo_key kv = key(4, (uint64_t)i % 50);
    memo_value(g->m, &kv, vfill, &vj, &v, &err);
  }
  return NULL;
}

START_TEST(threads) {
  int freed = 0;
  struct memo *m = memo_make(64 * 100, 20, NULL);
  struct job j = {.cost = 64, .freed = &freed};
  pthread_t t[8];
  struct getter g[8];
  for (int i = 0; i < 8; i++) {
    g[i] = (struct getter){m, &j, key(2, 0), i, NULL};
    pthread_create(&t[i], NULL, hammer, &g[i]);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  ck_assert_uint_le(memo_used(m), 64 * 100);
  ck_assert_uint_eq(memo_pinned(m), 0);
  ck_assert_int_gt(j.calls, 300); /* the small budget forced refills */
  memo_free(m);
  /* Every object made was freed exactly once. */
  ck_assert_int_eq(freed, j.calls);
}
END_TEST

/* What a scan passed (memo_scan) is kept within scan_budget, oldest out
 * first and before anything kept for its own sake; freed, so the next
 * fills reuse its memory; one larger than scan_budget goes at its last
 * unpin; a scan entry found again is a hit until then. */
START_TEST(scan_list_bound_and_order) {
  int freed = 0;
  struct memo_config cfg = {10000, 100, NULL, 0, 1000}; /* scan_budget */
  struct memo *m;
  struct zerr err = {0};
  ck_assert_int_eq(memo_new(&cfg, &m, &err), 0);
  /* Kept for its own sake: survives every scan below. */
  struct job keep = {.cost = 2000, .freed = &freed};
  struct memo_key kk = key(2, 500);
  struct memo_ref *r;
  ck_assert_int_eq(memo_get(m, &kk, fill, &keep, &r, &err), 0);
  memo_release(m, r);
  struct job j = {.cost = 300, .freed = &freed};
  for (uint64_t i = 0; i < 20; i++) {
    struct memo_key k = key(2, i);
    ck_assert_int_eq(memo_get(m, &k, fill, &j, &r, &err), 0);
    ck_assert_uint_ge(memo_cost(r), 300);
    memo_scan(m, r);
    memo_release(m, r);
    ck_assert_uint_le(memo_scan_used(m), 1000);
  }
  /* 20 made, at most 1000 / 300 kept: the others were freed as it went. */
  ck_assert_int_ge(freed, 17);
  ck_assert_uint_gt(memo_scan_used(m), 0);
  ck_assert_int_eq(memo_peek(m, &kk, &r), 1);
  memo_release(m, r);
  /* The newest scan entry is still there, the oldest gone. */
  struct memo_key k19 = key(2, 19), k0 = key(2, 0);
  ck_assert_int_eq(memo_peek(m, &k19, &r), 1);
  memo_release(m, r); /* still marked: back to the scan list */
  ck_assert_int_eq(memo_peek(m, &k0, &r), 0);
  ck_assert_uint_le(memo_scan_used(m), 1000);
  /* Pressure on the whole budget takes scan entries first. */
  struct job big = {.cost = 7000, .freed = &freed};
  struct memo_key kb = key(2, 600);
  ck_assert_int_eq(memo_get(m, &kb, fill, &big, &r, &err), 0);
  memo_release(m, r);
  ck_assert_int_eq(memo_peek(m, &kk, &r), 1); /* kept for its own sake */
  memo_release(m, r);
  ck_assert_uint_le(memo_used(m), 10000);
  /* Larger than scan_budget: dropped at its last unpin. */
  struct job huge = {.cost = 1500, .freed = &freed};
  struct memo_key kh = key(2, 700);
  struct memo_ref *h1, *h2;
  ck_assert_int_eq(memo_get(m, &kh, fill, &huge, &h1, &err), 0);
  ck_assert_int_eq(memo_get(m, &kh, fill, &huge, &h2, &err), 0);
  memo_scan(m, h1);
  int before = freed;
  memo_release(m, h1);
  ck_assert_int_eq(freed, before); /* still pinned by h2 */
  memo_release(m, h2);
  ck_assert_int_eq(freed, before + 1);
  ck_assert_int_eq(memo_peek(m, &kh, &r), 0);
  memo_scan(m, NULL);
  memo_free(m);
  ck_assert_int_eq(freed, keep.calls + j.calls + big.calls + huge.calls);
}
END_TEST

int main(void) {
  Suite *s = suite_create("memo");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, htab_grows_and_finds);
  tcase_add_test(tc, htab_pop_linear);
  tcase_add_test(tc, sorted_u64);
  tcase_add_test(tc, fills_once_and_hits);
  tcase_add_test(tc, budget_pins_and_big_entries);
  tcase_add_test(tc, scan_list_bound_and_order);
  tcase_add_test(tc, remembered_and_transient_failures);
  tcase_add_test(tc, remembered_failure_expires);
  tcase_add_test(tc, single_flight);
  tcase_add_test(tc, present_while_filling);
  tcase_add_test(tc, wait_rule_is_checked);
  tcase_add_test(tc, stop_ends_waits);
  tcase_add_test(tc, cancel_ends_a_wait);
  tcase_add_test(tc, values);
  tcase_add_test(tc, held_bytes_make_room);
  tcase_add_test(tc, threads);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
