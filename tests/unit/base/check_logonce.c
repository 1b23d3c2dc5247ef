/* check_logonce.c - unit tests of src/logonce: one line per failure, counted
 * repeats summarised per interval, independence of lines, LRU eviction
 * with its pending count, flush and free, 8 threads. The clock and the
 * sink are injected: nothing sleeps. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../../../src/util/logonce.h"
#include "../testutil.h"

/* Captured lines (guarded by lock: the sink runs on several threads). */
struct capture {
  pthread_mutex_t lock;
  size_t n;
  char lines[64][LOGONCE_LINE_MAX + 128];
  size_t dropped;           /* lines past the 64 kept */
  unsigned long long calls; /* calls accounted for: 1 per first line, N
                               per "(repeated N more ...)" summary */
};

/* The test sink: keep the line. */
static void cap_sink(void *ud, enum zlog_level lvl, const char *line) {
  (void)lvl;
  struct capture *c = ud;
  const char *p = strstr(line, "(repeated ");
  unsigned long long n = 1;
  if (p && sscanf(p, "(repeated %llu", &n) != 1)
    n = 0;
  pthread_mutex_lock(&c->lock);
  c->calls += n;
  if (c->n < 64)
    snprintf(c->lines[c->n++], sizeof c->lines[0], "%s", line);
  else
    c->dropped++;
  pthread_mutex_unlock(&c->lock);
}

/* The test clock: milliseconds set by the test. */
static uint64_t fake_clock(void *ud) {
  return atomic_load((_Atomic uint64_t *)ud);
}

static struct capture cap;
static _Atomic uint64_t now_ms;

/* A fresh logonce on the fake clock and the capture sink. */
static struct logonce *mk(size_t keys, unsigned secs) {
  memset(&cap, 0, sizeof cap);
  pthread_mutex_init(&cap.lock, NULL);
  atomic_store(&now_ms, 1000000);
  struct logonce *l;
  struct zerr err = {0};
  ck_assert_int_eq(logonce_new(keys, secs, &l, &err), 0);
  logonce_set_sink(l, cap_sink, &cap);
  logonce_set_clock(l, fake_clock, &now_ms);
  return l;
}

START_TEST(first_line_once_then_summary) {
  struct logonce *l = mk(16, 60);
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "symlink out of the store");
  ck_assert_uint_eq(cap.n, 1);
  ck_assert_str_eq(cap.lines[0], "/s: c/0: symlink out of the store");
  for (int i = 0; i < 1000; i++) {
    atomic_fetch_add(&now_ms, 10); /* 1000 repeats within 10 s */
    logonce_log(l, ZLOG_ERR, "/s", "c/0", "symlink out of the store");
  }
  ck_assert_uint_eq(cap.n, 1);
  atomic_store(&now_ms, 1000000 + 60000); /* the interval has passed */
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "symlink out of the store");
  ck_assert_uint_eq(cap.n, 2);
  ck_assert_str_eq(cap.lines[1], "/s: c/0: symlink out of the store "
                                 "(repeated 1001 more times in the last 60 s)");
  /* The next window starts at that summary. */
  atomic_fetch_add(&now_ms, 59999);
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "symlink out of the store");
  ck_assert_uint_eq(cap.n, 2);
  atomic_fetch_add(&now_ms, 1);
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "symlink out of the store");
  ck_assert_uint_eq(cap.n, 3);
  ck_assert_str_eq(cap.lines[2], "/s: c/0: symlink out of the store "
                                 "(repeated 2 more times in the last 60 s)");
  logonce_flush(l); /* nothing pending */
  ck_assert_uint_eq(cap.n, 3);
  logonce_free(l);
  ck_assert_uint_eq(cap.n, 3);
}
END_TEST

/* A note is said once; its repeats are neither counted nor summarised. */
START_TEST(note_once_without_summary) {
  struct logonce *l = mk(16, 60);
  for (int i = 0; i < 100; i++) {
    atomic_fetch_add(&now_ms, 1000); /* past the interval, too */
    logonce_note(l, ZLOG_WARN, "/s", "c/0", "not UTF-8");
  }
  ck_assert_uint_eq(cap.n, 1);
  ck_assert_str_eq(cap.lines[0], "/s: c/0: not UTF-8");
  logonce_note(l, ZLOG_WARN, "/s", "c/1", "not UTF-8"); /* another chunk */
  ck_assert_uint_eq(cap.n, 2);
  logonce_flush(l);
  logonce_free(l);
  ck_assert_uint_eq(cap.n, 2);
}
END_TEST

START_TEST(keys_and_reasons_independent) {
  struct logonce *l = mk(16, 60);
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "bad");
  logonce_log(l, ZLOG_ERR, "/s", "c/1", "bad");   /* other key */
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "worse"); /* other reason */
  logonce_log(l, ZLOG_ERR, "/t", "c/0", "bad");   /* other store */
  logonce_log(l, ZLOG_WARN, NULL, "", "no where, root key");
  ck_assert_uint_eq(cap.n, 5);
  ck_assert_str_eq(cap.lines[4], ".: no where, root key");
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "bad");
  logonce_log(l, ZLOG_ERR, "/s", "c/0", "bad");
  logonce_log(l, ZLOG_ERR, "/s", "c/1", "bad");
  ck_assert_uint_eq(cap.n, 5);
  atomic_fetch_add(&now_ms, 1500);
  logonce_flush(l); /* most recent first */
  ck_assert_uint_eq(cap.n, 7);
  ck_assert_str_eq(cap.lines[5],
                   "/s: c/1: bad (repeated 1 more time in the last 2 s)");
  ck_assert_str_eq(cap.lines[6],
                   "/s: c/0: bad (repeated 2 more times in the last 2 s)");
  /* A line break in a message cannot split the log line. */
  logonce_log(l, ZLOG_ERR, "/s", "a\nb", "x\ry");
  ck_assert_str_eq(cap.lines[7], "/s: a b: x y");
  logonce_free(l);
  ck_assert_uint_eq(cap.n, 8);
}
END_TEST

START_TEST(eviction_prints_pending) {
  struct logonce *l = mk(2, 60);
  logonce_log(l, ZLOG_ERR, "/s", "a", "m");
  logonce_log(l, ZLOG_ERR, "/s", "a", "m");
  logonce_log(l, ZLOG_ERR, "/s", "a", "m");
  logonce_log(l, ZLOG_ERR, "/s", "b", "m");
  logonce_log(l, ZLOG_ERR, "/s", "a", "m"); /* a is now the newest */
  ck_assert_uint_eq(cap.n, 2);
  logonce_log(l, ZLOG_ERR, "/s", "c", "m"); /* evicts b: nothing pending */
  ck_assert_uint_eq(cap.n, 3);
  ck_assert_str_eq(cap.lines[2], "/s: c: m");
  logonce_log(l, ZLOG_ERR, "/s", "d", "m"); /* evicts a: 3 pending */
  ck_assert_uint_eq(cap.n, 5);
  ck_assert_str_eq(cap.lines[3],
                   "/s: a: m (repeated 3 more times in the last 1 s)");
  ck_assert_str_eq(cap.lines[4], "/s: d: m");
  logonce_log(l, ZLOG_ERR, "/s", "a", "m"); /* forgotten: printed again */
  ck_assert_uint_eq(cap.n, 6);
  ck_assert_str_eq(cap.lines[5], "/s: a: m");
  logonce_free(l);
  ck_assert_uint_eq(cap.n, 6);
}
END_TEST

START_TEST(free_prints_pending) {
  struct logonce *l = mk(16, 60);
  for (int i = 0; i < 20; i++) {
    char key[16];
    snprintf(key, sizeof key, "k%d", i % 10);
    logonce_log(l, ZLOG_ERR, "/s", key, "m");
  }
  ck_assert_uint_eq(cap.n, 10);
  atomic_fetch_add(&now_ms, 30000);
  logonce_free(l); /* 10 pending lines: more than one flush batch */
  ck_assert_uint_eq(cap.n, 20);
  for (size_t i = 10; i < 20; i++)
    ck_assert_ptr_nonnull(
        strstr(cap.lines[i], ": m (repeated 1 more time in the last 30 s)"));
  logonce_free(NULL);
  logonce_flush(NULL);
}
END_TEST

START_TEST(bad_arguments) {
  struct logonce *l = (struct logonce *)1;
  struct zerr err = {0};
  ck_assert_int_eq(logonce_new(0, 60, &l, &err), -EINVAL);
  ck_assert_ptr_null(l);
  ck_assert_int_eq(logonce_new(4, 0, &l, &err), -EINVAL);
  ck_assert_int_gt(strlen(err.msg), 0);
  /* A long line is cut, still remembered. */
  l = mk(4, 60);
  char big[3000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  logonce_log(l, ZLOG_ERR, "/s", "k", big);
  logonce_log(l, ZLOG_ERR, "/s", "k", big);
  ck_assert_uint_eq(cap.n, 1);
  ck_assert_uint_eq(strlen(cap.lines[0]), LOGONCE_LINE_MAX);
  logonce_free(l);
  ck_assert_uint_eq(cap.n, 2);
}
END_TEST

/* Totals per key across threads. */
#define HAMMER_THREADS 8
#define HAMMER_CALLS 20000
#define HAMMER_KEYS 5

/* One thread: log keys k0..k3 in turn and now and then k4 (which evicts
 * one of them), advancing the clock now and then. */
static void *hammer(void *arg) {
  struct logonce *l = arg;
  for (int i = 0; i < HAMMER_CALLS; i++) {
    char key[8];
    snprintf(key, sizeof key, "k%d",
             i % 1000 == 999 ? HAMMER_KEYS - 1 : i % (HAMMER_KEYS - 1));
    if (i % 997 == 0)
      atomic_fetch_add(&now_ms, 7000);
    logonce_log(l, ZLOG_ERR, "/s", key, "boom");
  }
  return NULL;
}

START_TEST(threads_count_every_call) {
  /* 4 remembered lines for 5 keys: eviction races with counting too. */
  struct logonce *l = mk(4, 60);
  pthread_t t[HAMMER_THREADS];
  for (int i = 0; i < HAMMER_THREADS; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, l), 0);
  for (int i = 0; i < HAMMER_THREADS; i++)
    pthread_join(t[i], NULL);
  logonce_free(l);
  /* Each call is either a printed first line or counted in a summary. */
  ck_assert_uint_eq(cap.calls,
                    (unsigned long long)HAMMER_THREADS * HAMMER_CALLS);
  /* ...and 160,000 calls gave a few hundred lines, not 160,000. */
  ck_assert_uint_lt(cap.n + cap.dropped, 5000);
}
END_TEST

int main(void) {
  Suite *s = suite_create("logonce");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, first_line_once_then_summary);
  tcase_add_test(tc, note_once_without_summary);
  tcase_add_test(tc, keys_and_reasons_independent);
  tcase_add_test(tc, eviction_prints_pending);
  tcase_add_test(tc, free_prints_pending);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, threads_count_every_call);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
