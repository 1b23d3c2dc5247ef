/* lograte.c - debug lines at a rate a person can follow (see lograte.h).
 *
 * Time is cut in windows of one second from the first line; a window
 * shows per_sec lines and counts the rest. The first line shown in a
 * later window is preceded by the summary of what the windows between
 * left out. Bookkeeping under `lock`; the lines are formatted and written
 * after it is released. */
#include "lograte.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct lograte {
  pthread_mutex_t lock;         /* guards the fields below it (a leaf) */
  uint64_t window_ms;           /* start of the current window */
  unsigned shown;               /* lines shown in it */
  uint64_t since_ms;            /* start of what the pending summary covers */
  uint64_t left[LOGRATE_KINDS]; /* lines left out, not summarised yet */
  uint64_t left_total;          /* every line left out (tests) */
  int started;
  /* Set before sharing, read-only afterwards. */
  unsigned per_sec;
  const char *kinds[LOGRATE_KINDS];
  logonce_sink_fn sink;
  void *sink_ud;
  logonce_clock_fn clock;
  void *clock_ud;
};

/* The default sink: zlog. */
static void lr_zlog_sink(void *ud, enum zlog_level lvl, const char *line) {
  (void)ud;
  zlog(lvl, "%s", line);
}

/* The default clock: CLOCK_MONOTONIC in milliseconds. */
static uint64_t lr_monotonic_ms(void *ud) {
  (void)ud;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Create, with the default sink and clock. */
int lograte_new(unsigned per_sec, const char *const *kinds,
                struct lograte **out, struct zerr *err) {
  *out = NULL;
  if (per_sec == 0)
    return zerr_set(err, EINVAL, "lograte: per_sec must be at least 1");
  struct lograte *r = calloc(1, sizeof *r);
  if (!r)
    return zerr_set(err, ENOMEM, "out of memory");
  pthread_mutex_init(&r->lock, NULL);
  r->per_sec = per_sec;
  for (unsigned k = 0; kinds && k < LOGRATE_KINDS && kinds[k]; k++)
    r->kinds[k] = kinds[k];
  r->sink = lr_zlog_sink;
  r->clock = lr_monotonic_ms;
  *out = r;
  return 0;
}

/* n with thousands separated by commas, into buf. */
static const char *lr_count(uint64_t n, char *buf, size_t cap) {
  char d[32];
  int len = snprintf(d, sizeof d, "%llu", (unsigned long long)n);
  size_t o = 0;
  for (int i = 0; i < len && o + 2 < cap; i++) {
    if (i && (len - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = d[i];
  }
  buf[o] = '\0';
  return buf;
}

/* Is something left out and not summarised yet? (lock held) */
static int lr_pending(const struct lograte *r) {
  for (unsigned k = 0; k < LOGRATE_KINDS; k++)
    if (r->left[k])
      return 1;
  return 0;
}

/* The summary of what is pending (lock held), into out; cleared. 0 when
 * nothing was left out. */
static int lr_summary(struct lograte *r, uint64_t now, char *out, size_t cap) {
  uint64_t total = 0;
  for (unsigned k = 0; k < LOGRATE_KINDS; k++)
    total += r->left[k];
  if (!total)
    return 0;
  char n[40];
  uint64_t secs = (now - r->since_ms + 999) / 1000;
  int o = snprintf(out, cap, "%s debug lines left out in the last %llu s (",
                   lr_count(total, n, sizeof n),
                   (unsigned long long)(secs ? secs : 1));
  const char *sep = "";
  for (unsigned k = 0; k < LOGRATE_KINDS; k++) {
    if (!r->left[k] || o < 0 || (size_t)o >= cap)
      continue;
    o += snprintf(out + o, cap - (size_t)o, "%s%s %s", sep,
                  r->kinds[k] ? r->kinds[k] : "other",
                  lr_count(r->left[k], n, sizeof n));
    sep = ", ";
    r->left[k] = 0;
  }
  if (o >= 0 && (size_t)o < cap)
    snprintf(out + o, cap - (size_t)o, "): at most %u a second are shown",
             r->per_sec);
  return 1;
}

/* Count or show one line. */
void lograte_log(struct lograte *r, enum zlog_level lvl, unsigned k,
                 const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lograte_vlog(r, lvl, k, fmt, ap);
  va_end(ap);
}

/* lograte_log with a va_list: formatted only when shown. */
void lograte_vlog(struct lograte *r, enum zlog_level lvl, unsigned k,
                  const char *fmt, va_list ap) {
  char line[LOGONCE_LINE_MAX + 1], sum[400];
  int show = 1, summary = 0;
  if (r) {
    uint64_t now = r->clock(r->clock_ud);
    pthread_mutex_lock(&r->lock);
    if (!r->started || now - r->window_ms >= 1000) {
      r->window_ms = r->started ? now - (now - r->window_ms) % 1000 : now;
      r->started = 1;
      r->shown = 0;
    }
    if (r->shown < r->per_sec) {
      r->shown++;
      summary = lr_summary(r, now, sum, sizeof sum);
    } else {
      show = 0;
      if (!lr_pending(r)) /* the summary to come starts here */
        r->since_ms = now;
      r->left[k < LOGRATE_KINDS ? k : LOGRATE_KINDS - 1]++;
      r->left_total++;
    }
    pthread_mutex_unlock(&r->lock);
  }
  if (!show)
    return;
  vsnprintf(line, sizeof line, fmt, ap);
  if (summary)
    (r ? r->sink : lr_zlog_sink)(r ? r->sink_ud : NULL, lvl, sum);
  (r ? r->sink : lr_zlog_sink)(r ? r->sink_ud : NULL, lvl, line);
}

/* A summary due: what the windows that ended left out. */
void lograte_flush(struct lograte *r) {
  if (!r)
    return;
  char sum[400];
  uint64_t now = r->clock(r->clock_ud);
  pthread_mutex_lock(&r->lock);
  int due = r->started && now - r->window_ms >= 1000 &&
            lr_summary(r, now, sum, sizeof sum);
  pthread_mutex_unlock(&r->lock);
  if (due)
    r->sink(r->sink_ud, ZLOG_DEBUG, sum);
}

/* Say what is pending, then free. */
void lograte_free(struct lograte *r) {
  if (!r)
    return;
  char sum[400];
  if (lr_summary(r, r->clock(r->clock_ud), sum, sizeof sum))
    r->sink(r->sink_ud, ZLOG_DEBUG, sum);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

/* Lines left out so far. */
uint64_t lograte_left_out(struct lograte *r) {
  pthread_mutex_lock(&r->lock);
  uint64_t n = r->left_total;
  pthread_mutex_unlock(&r->lock);
  return n;
}

/* Tests: the sink. */
void lograte_set_sink(struct lograte *r, logonce_sink_fn fn, void *ud) {
  r->sink = fn;
  r->sink_ud = ud;
}

/* Tests: the clock. */
void lograte_set_clock(struct lograte *r, logonce_clock_fn fn, void *ud) {
  r->clock = fn;
  r->clock_ud = ud;
}
