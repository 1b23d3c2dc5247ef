/* check_lograte.c - unit tests of src/util/lograte: at most per_sec lines
 * a second, the rest counted by kind; the summary before the next line
 * shown, from lograte_flush once the second is over, and at free; 8
 * threads account for every line. The clock and the sink are injected:
 * nothing sleeps. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "../../../src/util/lograte.h"
#include "../testutil.h"

/* Captured lines (guarded by lock: the sink runs on several threads). */
struct capture {
  pthread_mutex_t lock;
  size_t n, summaries;
  unsigned long long summarised; /* lines the summaries say were left out */
  char lines[64][LOGONCE_LINE_MAX + 1];
};

static struct capture cap;
static _Atomic uint64_t now_ms;
static const char *const kinds[] = {"request", "cache", "decode", NULL};

/* The test sink: keep the line, add up the summaries. */
static void cap_sink(void *ud, enum zlog_level lvl, const char *line) {
  (void)lvl;
  struct capture *c = ud;
  unsigned long long n = 0;
  int sum = strstr(line, " debug lines left out in the last ") != NULL;
  if (sum) { /* "1,234 debug lines ...": the count with its commas */
    for (const char *p = line; *p && *p != ' '; p++)
      if (*p >= '0' && *p <= '9')
        n = n * 10 + (unsigned long long)(*p - '0');
  }
  pthread_mutex_lock(&c->lock);
  c->summaries += sum;
  c->summarised += n;
  if (c->n < 64)
    snprintf(c->lines[c->n], sizeof c->lines[0], "%s", line);
  c->n++;
  pthread_mutex_unlock(&c->lock);
}

/* The test clock: milliseconds set by the test. */
static uint64_t fake_clock(void *ud) {
  return atomic_load((_Atomic uint64_t *)ud);
}

/* A fresh lograte of per_sec lines a second on the fake clock. */
static struct lograte *mk(unsigned per_sec) {
  memset(&cap, 0, sizeof cap);
  pthread_mutex_init(&cap.lock, NULL);
  atomic_store(&now_ms, 5000000);
  struct lograte *r;
  struct zerr err = {0};
  ck_assert_int_eq(lograte_new(per_sec, kinds, &r, &err), 0);
  lograte_set_sink(r, cap_sink, &cap);
  lograte_set_clock(r, fake_clock, &now_ms);
  return r;
}

/* A second shows per_sec lines; the next second's first line comes after
 * the summary of what was left out, by kind, with thousands separated. */
START_TEST(per_second_then_summary) {
  struct lograte *r = mk(3);
  for (int i = 0; i < 1500; i++)
    lograte_log(r, ZLOG_DEBUG, i % 3 == 2 ? 2 : 0, "line %d", i);
  ck_assert_uint_eq(cap.n, 3);
  ck_assert_str_eq(cap.lines[0], "line 0");
  ck_assert_str_eq(cap.lines[2], "line 2");
  ck_assert_uint_eq(lograte_left_out(r), 1497);
  atomic_fetch_add(&now_ms, 999); /* still the same second */
  lograte_log(r, ZLOG_DEBUG, 1, "still held");
  ck_assert_uint_eq(cap.n, 3);
  atomic_fetch_add(&now_ms, 1);
  lograte_log(r, ZLOG_DEBUG, 1, "next second");
  ck_assert_uint_eq(cap.n, 5);
  ck_assert_str_eq(cap.lines[3],
                   "1,498 debug lines left out in the last 1 s (request 998, "
                   "cache 1, decode 499): at most 3 a second are shown");
  ck_assert_str_eq(cap.lines[4], "next second");
  lograte_free(r); /* nothing pending: no line */
  ck_assert_uint_eq(cap.n, 5);
}
END_TEST

/* A burst that stops is said by lograte_flush once its second is over
 * (not before), and what is pending at free is said then. */
START_TEST(flush_and_free) {
  struct lograte *r = mk(2);
  for (int i = 0; i < 10; i++)
    lograte_log(r, ZLOG_DEBUG, 0, "a");
  lograte_flush(r); /* the second is not over */
  ck_assert_uint_eq(cap.n, 2);
  atomic_fetch_add(&now_ms, 2500);
  lograte_flush(r);
  ck_assert_uint_eq(cap.n, 3);
  ck_assert_str_eq(cap.lines[2], "8 debug lines left out in the last 3 s "
                                 "(request 8): at most 2 a second are shown");
  lograte_flush(r); /* said once */
  ck_assert_uint_eq(cap.n, 3);
  for (int i = 0; i < 5; i++)
    lograte_log(r, ZLOG_DEBUG, 2, "b");
  ck_assert_uint_eq(cap.n, 5);
  lograte_free(r);
  ck_assert_uint_eq(cap.n, 6);
  ck_assert_str_eq(cap.lines[5], "3 debug lines left out in the last 1 s "
                                 "(decode 3): at most 2 a second are shown");
  lograte_free(NULL);
  lograte_flush(NULL);
}
END_TEST

/* No rate: every line as it comes; a bad rate is refused. */
START_TEST(bad_arguments) {
  struct lograte *r = (struct lograte *)1;
  struct zerr err = {0};
  ck_assert_int_eq(lograte_new(0, kinds, &r, &err), -EINVAL);
  ck_assert_ptr_null(r);
  ck_assert_ptr_nonnull(strstr(err.msg, "per_sec"));
}
END_TEST

/* Eight threads, 10,000 lines each within one second: 20 shown, and the
 * summary accounts for every other one. */
static void *hammer(void *arg) {
  struct lograte *r = arg;
  for (int i = 0; i < 10000; i++)
    lograte_log(r, ZLOG_DEBUG, (unsigned)(i % 3), "t %d", i);
  return NULL;
}

START_TEST(threads_account_for_every_line) {
  struct lograte *r = mk(20);
  pthread_t t[8];
  for (int i = 0; i < 8; i++)
    ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, r), 0);
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  ck_assert_uint_eq(cap.n, 20);
  ck_assert_uint_eq(lograte_left_out(r), 80000 - 20);
  lograte_free(r);
  ck_assert_uint_eq(cap.summaries, 1);
  ck_assert_uint_eq(cap.summarised, 80000 - 20);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lograte");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, per_second_then_summary);
  tcase_add_test(tc, flush_and_free);
  tcase_add_test(tc, bad_arguments);
  tcase_add_test(tc, threads_account_for_every_line);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
