/* logonce.c - per-mount log deduplication (see logonce.h).
 *
 * Lines live in a chained hash table (FNV-1a of the line) and on one LRU
 * list, most recently seen first; the tail is evicted when max_keys lines
 * are remembered. Everything is guarded by `lock`, a leaf: what must be
 * printed is formatted into the caller's stack while the lock is held and
 * handed to the sink after it is released, so a slow sink (syslog) never
 * holds up other threads' bookkeeping. */
#include "logonce.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* A remembered line. */
struct lo_entry {
  struct lo_entry *hnext;         /* hash chain */
  struct lo_entry *newer, *older; /* LRU list */
  uint64_t hash;                  /* FNV-1a of line */
  uint64_t last_ms;               /* when last printed */
  uint64_t pending;               /* repeats since then */
  enum zlog_level lvl;            /* of the first call */
  size_t len;                     /* strlen(line) */
  char line[];                    /* "WHERE: KEY: MSG" */
};

struct logonce {
  pthread_mutex_t lock; /* guards everything below (leaf lock) */
  struct lo_entry **buckets;
  size_t nbuckets; /* power of two */
  size_t count, max_keys;
  struct lo_entry *newest, *oldest;
  uint64_t summary_ms;
  /* Set before sharing, read-only afterwards. */
  logonce_sink_fn sink;
  void *sink_ud;
  logonce_clock_fn clock;
  void *clock_ud;
};

/* Room for a line and its summary suffix. */
#define LO_OUT_MAX (LOGONCE_LINE_MAX + 96)

/* A line to print once the lock is released. */
struct lo_out {
  enum zlog_level lvl;
  char text[LO_OUT_MAX];
};

/* The default sink: zlog. */
static void lo_zlog_sink(void *ud, enum zlog_level lvl, const char *line) {
  (void)ud;
  zlog(lvl, "%s", line);
}

/* The default clock: CLOCK_MONOTONIC in milliseconds. */
static uint64_t lo_monotonic_ms(void *ud) {
  (void)ud;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* FNV-1a of n bytes. */
static uint64_t lo_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
  return h;
}

/* Create the table. */
int logonce_new(size_t max_keys, unsigned summary_secs, struct logonce **out,
                struct zerr *err) {
  *out = NULL;
  if (max_keys == 0 || summary_secs == 0)
    return zerr_set(err, EINVAL,
                    "logonce: max_keys and summary_secs must "
                    "be at least 1");
  size_t nb = 16;
  while (nb < max_keys && nb < ((size_t)1 << 24))
    nb <<= 1;
  struct logonce *l = calloc(1, sizeof *l);
  if (!l || !(l->buckets = calloc(nb, sizeof *l->buckets))) {
    free(l);
    return zerr_set(err, ENOMEM, "logonce: out of memory");
  }
  if (pthread_mutex_init(&l->lock, NULL) != 0) {
    free(l->buckets);
    free(l);
    return zerr_set(err, ENOMEM, "logonce: cannot create a mutex");
  }
  l->nbuckets = nb;
  l->max_keys = max_keys;
  l->summary_ms = (uint64_t)summary_secs * 1000u;
  l->sink = lo_zlog_sink;
  l->clock = lo_monotonic_ms;
  *out = l;
  return 0;
}

/* Replace the sink (tests). */
void logonce_set_sink(struct logonce *l, logonce_sink_fn fn, void *ud) {
  l->sink = fn ? fn : lo_zlog_sink;
  l->sink_ud = fn ? ud : NULL;
}

/* Replace the clock (tests). */
void logonce_set_clock(struct logonce *l, logonce_clock_fn fn, void *ud) {
  l->clock = fn ? fn : lo_monotonic_ms;
  l->clock_ud = fn ? ud : NULL;
}

/* "WHERE: KEY: MSG" into buf (LOGONCE_LINE_MAX + 1 bytes), line breaks
 * shown as spaces so a log line stays one line; returns the length. */
static size_t lo_format(char *buf, const char *where, const char *key,
                        const char *msg) {
  if (!key || !*key)
    key = ".";
  if (!msg)
    msg = "";
  int n =
      where && *where
          ? snprintf(buf, LOGONCE_LINE_MAX + 1, "%s: %s: %s", where, key, msg)
          : snprintf(buf, LOGONCE_LINE_MAX + 1, "%s: %s", key, msg);
  size_t len = n < 0 ? 0 : (size_t)n;
  if (len > LOGONCE_LINE_MAX)
    len = LOGONCE_LINE_MAX;
  buf[len] = '\0';
  for (size_t i = 0; i < len; i++)
    if (buf[i] == '\n' || buf[i] == '\r')
      buf[i] = ' ';
  return len;
}

/* The summary of e's pending repeats into o; resets the count. */
static void lo_summary(struct lo_entry *e, uint64_t now, struct lo_out *o) {
  uint64_t ms = now > e->last_ms ? now - e->last_ms : 0;
  uint64_t secs = (ms + 999) / 1000;
  if (secs == 0)
    secs = 1;
  o->lvl = e->lvl;
  snprintf(o->text, sizeof o->text,
           "%s (repeated %llu more time%s in the last %llu s)", e->line,
           (unsigned long long)e->pending, e->pending == 1 ? "" : "s",
           (unsigned long long)secs);
  e->pending = 0;
  e->last_ms = now;
}

/* Unlink e from the LRU list. */
static void lo_lru_unlink(struct logonce *l, struct lo_entry *e) {
  if (e->newer)
    e->newer->older = e->older;
  else
    l->newest = e->older;
  if (e->older)
    e->older->newer = e->newer;
  else
    l->oldest = e->newer;
  e->newer = e->older = NULL;
}

/* Put e at the newest end of the LRU list. */
static void lo_lru_push(struct logonce *l, struct lo_entry *e) {
  e->newer = NULL;
  e->older = l->newest;
  if (l->newest)
    l->newest->newer = e;
  l->newest = e;
  if (!l->oldest)
    l->oldest = e;
}

/* Remove e from the table and the list (not freed). */
static void lo_remove(struct logonce *l, struct lo_entry *e) {
  struct lo_entry **pp = &l->buckets[e->hash & (l->nbuckets - 1)];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  lo_lru_unlink(l, e);
  l->count--;
}

/* Log once; count repeats and summarise them, or (count 0) let them
 * pass unsaid. */
static void lo_log(struct logonce *l, enum zlog_level lvl, const char *where,
                   const char *key, const char *msg, int count) {
  char line[LOGONCE_LINE_MAX + 1];
  size_t len = lo_format(line, where, key, msg);
  if (!l) {
    zlog(lvl, "%s", line);
    return;
  }
  uint64_t h = lo_hash(line, len);
  uint64_t now = l->clock(l->clock_ud);
  struct lo_out out[2]; /* an evicted line's summary, then this line */
  int nout = 0;
  struct lo_entry *victim = NULL;

  pthread_mutex_lock(&l->lock);
  struct lo_entry **bucket = &l->buckets[h & (l->nbuckets - 1)];
  struct lo_entry *e = *bucket;
  while (e && !(e->hash == h && e->len == len && !memcmp(e->line, line, len)))
    e = e->hnext;
  if (e) {
    e->pending += count != 0;
    lo_lru_unlink(l, e);
    lo_lru_push(l, e);
    if (e->pending && now >= e->last_ms && now - e->last_ms >= l->summary_ms)
      lo_summary(e, now, &out[nout++]);
    pthread_mutex_unlock(&l->lock);
  } else {
    if (l->count >= l->max_keys) {
      victim = l->oldest;
      lo_remove(l, victim);
      if (victim->pending)
        lo_summary(victim, now, &out[nout++]);
    }
    e = malloc(sizeof *e + len + 1);
    if (e) { /* without memory the line is printed, just not remembered */
      *e = (struct lo_entry){.hash = h, .last_ms = now, .lvl = lvl, .len = len};
      memcpy(e->line, line, len + 1);
      e->hnext = *bucket;
      *bucket = e;
      lo_lru_push(l, e);
      l->count++;
    }
    pthread_mutex_unlock(&l->lock);
    out[nout].lvl = lvl;
    memcpy(out[nout++].text, line, len + 1);
  }
  free(victim);
  for (int i = 0; i < nout; i++)
    l->sink(l->sink_ud, out[i].lvl, out[i].text);
}

/* See logonce.h. */
void logonce_log(struct logonce *l, enum zlog_level lvl, const char *where,
                 const char *key, const char *msg) {
  lo_log(l, lvl, where, key, msg, 1);
}

/* See logonce.h. */
void logonce_note(struct logonce *l, enum zlog_level lvl, const char *where,
                  const char *key, const char *msg) {
  lo_log(l, lvl, where, key, msg, 0);
}

/* Summaries printed per round of logonce_flush (they sit on the stack). */
#define LO_FLUSH_BATCH 8

/* Print pending summaries, a few at a time so the lock is never held
 * while printing. Bounded rounds: repeats that keep arriving meanwhile
 * wait for the next summary. */
void logonce_flush(struct logonce *l) {
  if (!l)
    return;
  struct lo_out out[LO_FLUSH_BATCH];
  pthread_mutex_lock(&l->lock);
  size_t rounds = l->count / LO_FLUSH_BATCH + 1;
  pthread_mutex_unlock(&l->lock);
  for (size_t r = 0; r < rounds; r++) {
    int n = 0;
    uint64_t now = l->clock(l->clock_ud);
    pthread_mutex_lock(&l->lock);
    for (struct lo_entry *e = l->newest; e && n < LO_FLUSH_BATCH; e = e->older)
      if (e->pending)
        lo_summary(e, now, &out[n++]);
    pthread_mutex_unlock(&l->lock);
    for (int i = 0; i < n; i++)
      l->sink(l->sink_ud, out[i].lvl, out[i].text);
    if (n < LO_FLUSH_BATCH)
      break;
  }
}

/* Flush, then free every line. */
void logonce_free(struct logonce *l) {
  if (!l)
    return;
  logonce_flush(l);
  struct lo_entry *e = l->newest;
  while (e) {
    struct lo_entry *next = e->older;
    free(e);
    e = next;
  }
  free(l->buckets);
  pthread_mutex_destroy(&l->lock);
  free(l);
}
