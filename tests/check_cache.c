/* check_cache.c - the byte-budget LRU cache and the learned-size table. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../src/cache.h"
#include "testutil.h"

struct val {
  struct zobj obj;
  int *freed;
};

/* Count destructions. */
static void val_destroy(struct zobj *o) {
  struct val *v = (struct val *)o;
  (*v->freed)++;
  free(v);
}

/* New value with one reference. */
static struct val *val_new(int *freed) {
  struct val *v = calloc(1, sizeof *v);
  zobj_init(&v->obj, val_destroy);
  v->freed = freed;
  return v;
}

START_TEST(budget_evicts_lru) {
  int freed = 0;
  struct zcache *c = zcache_new(100);
  for (int i = 0; i < 5; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%d", i);
    struct val *v = val_new(&freed);
    zcache_put(c, key, &v->obj, 30);
    zobj_put(&v->obj);
    if (i == 2) { /* touch k0 so k1 becomes the oldest */
      struct zobj *o = zcache_get(c, "k0");
      ck_assert(o != NULL);
      zobj_put(o);
    }
  }
  ck_assert_uint_le(zcache_used(c), 100);
  struct zobj *o = zcache_get(c, "k1");
  ck_assert(o == NULL);
  o = zcache_get(c, "k4");
  ck_assert(o != NULL);
  zobj_put(o);
  ck_assert_int_eq(freed, 2);
  zcache_free(c);
  ck_assert_int_eq(freed, 5);
}
END_TEST

START_TEST(in_use_survives_eviction) {
  int freed = 0;
  struct zcache *c = zcache_new(50);
  struct val *v = val_new(&freed);
  zcache_put(c, "a", &v->obj, 40);
  struct val *w = val_new(&freed);
  zcache_put(c, "b", &w->obj, 40); /* evicts a, but we still hold it */
  zobj_put(&w->obj);
  ck_assert_int_eq(freed, 0);
  ck_assert(zcache_get(c, "a") == NULL);
  zobj_put(&v->obj);
  ck_assert_int_eq(freed, 1);
  /* Too large for the whole budget: not kept. */
  struct val *big = val_new(&freed);
  zcache_put(c, "big", &big->obj, 51);
  ck_assert(zcache_get(c, "big") == NULL);
  zobj_put(&big->obj);
  ck_assert_int_eq(freed, 2);
  zcache_free(c);
  zcache_free(NULL);
}
END_TEST

START_TEST(replace_same_key) {
  int freed = 0;
  struct zcache *c = zcache_new(1000);
  for (int i = 0; i < 3; i++) {
    struct val *v = val_new(&freed);
    zcache_put(c, "same", &v->obj, 10);
    zobj_put(&v->obj);
  }
  ck_assert_int_eq(freed, 2);
  ck_assert_uint_eq(zcache_used(c), 10);
  zcache_free(c);
}
END_TEST

struct thread_arg {
  struct zcache *c;
  int id;
  int *freed;
};

/* Hammer the cache from several threads. */
static void *hammer(void *p) {
  struct thread_arg *a = p;
  for (int i = 0; i < 20000; i++) {
    char key[32];
    snprintf(key, sizeof key, "k%d", (i * 7 + a->id) % 300);
    struct zobj *o = zcache_get(a->c, key);
    if (o) {
      zobj_put(o);
      continue;
    }
    struct val *v = calloc(1, sizeof *v);
    zobj_init(&v->obj, (void (*)(struct zobj *))free);
    zcache_put(a->c, key, &v->obj, 64);
    zobj_put(&v->obj);
  }
  return NULL;
}

START_TEST(threads) {
  struct zcache *c = zcache_new(64 * 100);
  pthread_t t[8];
  struct thread_arg a[8];
  for (int i = 0; i < 8; i++) {
    a[i] = (struct thread_arg){c, i, NULL};
    pthread_create(&t[i], NULL, hammer, &a[i]);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  ck_assert_uint_le(zcache_used(c), 64 * 100);
  zcache_free(c);
}
END_TEST

START_TEST(sizes_table) {
  struct zsizes *t = zsizes_new(3);
  uint64_t v;
  ck_assert_int_eq(zsizes_get(t, "a", &v), 0);
  zsizes_put(t, "a", 1);
  zsizes_put(t, "b", 2);
  zsizes_put(t, "c", 3);
  zsizes_put(t, "b", 20);
  ck_assert_int_eq(zsizes_get(t, "b", &v), 1);
  ck_assert_uint_eq(v, 20);
  zsizes_put(t, "d", 4); /* evicts the oldest, a */
  ck_assert_int_eq(zsizes_get(t, "a", &v), 0);
  ck_assert_int_eq(zsizes_get(t, "d", &v), 1);
  ck_assert_uint_eq(v, 4);
  zsizes_free(t);
  zsizes_free(NULL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("cache");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, budget_evicts_lru);
  tcase_add_test(tc, in_use_survives_eviction);
  tcase_add_test(tc, replace_same_key);
  tcase_add_test(tc, threads);
  tcase_add_test(tc, sizes_table);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
