/* engine.c - the engine's composition: its memo, log, workers and node
 * table, built and freed together (see engine.h). */
#include "engine.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../src/store/icechunk/icechunk.h"
#include "node.h"

/* One sub-engine of the table, by snapshot id. */
struct engine_sub {
  uint8_t id[12];
  struct engine *e;
};

/* Signal-safe: one lock-free atomic store. */
void engine_stop(struct engine *e) {
  atomic_store_explicit(&e->stopping, 1, memory_order_relaxed);
}

/* Work counter of a memo level. */
uint64_t engine_fills(const struct engine *e, enum engine_level level) {
  return memo_fills(e->memo, level);
}

/* Hold the index, replacing none. */
void engine_set_index(struct engine *e, struct sizeindex *sizeidx) {
  sizeindex_close(e->sizeidx);
  e->sizeidx = sizeidx;
}

/* ---- requests in flight, and the watchdog ---- */

/* The request the calling thread serves, or NULL. */
static _Thread_local struct engine_req *req_current;

/* Monotonic nanoseconds. */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Lines one pass of the watchdog writes at most (the others wait a tick). */
#define WATCH_BATCH 16

/* One slow request's line, copied under the lock, written after it. */
struct watch_line {
  char what[512];
  char msg[256];
};

/* Hand the free memory of malloc's heaps back to the system. */
static void engine_trim(struct engine *e) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
  atomic_fetch_add_explicit(&e->trims, 1, memory_order_relaxed);
}

/* Thread: once a second, find the requests running longer than slow_ns
 * not said yet, and say each once. */
static void *watchdog_run(void *arg) {
  struct engine *e = arg;
  struct watch_line lines[WATCH_BATCH];
  pthread_mutex_lock(&e->reqs_lock);
  while (!e->watch_quit) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 1;
    pthread_cond_timedwait(&e->reqs_cond, &e->reqs_lock, &until);
    int nl = 0;
    uint64_t now = now_ns();
    for (struct engine_req *r = e->reqs; r && nl < WATCH_BATCH; r = r->next) {
      if (r->logged || now - r->start_ns < e->slow_ns)
        continue;
      r->logged = 1;
      snprintf(lines[nl].what, sizeof lines[nl].what, "%s",
               *r->what ? r->what : ".");
      char op[96];
      if (r->len == ENGINE_REQ_SIZE)
        snprintf(op, sizeof op, "learning its size");
      else
        snprintf(op, sizeof op, "a read of %llu bytes at offset %llu",
                 (unsigned long long)r->len, (unsigned long long)r->off);
      snprintf(lines[nl].msg, sizeof lines[nl].msg,
               "%s has been running for %.1f s, %llu units decoded so far", op,
               (double)(now - r->start_ns) / 1e9,
               (unsigned long long)atomic_load_explicit(&r->units,
                                                        memory_order_relaxed));
      nl++;
    }
    int trim = !e->reqs && !e->trimmed && now - e->idle_ns >= e->idle_trim_ns;
    if (trim)
      e->trimmed = 1;
    pthread_mutex_unlock(&e->reqs_lock);
    if (trim)
      engine_trim(e);
    for (int i = 0; i < nl; i++)
      logonce_log(e->log, ZLOG_INFO, e->store->location, lines[i].what,
                  lines[i].msg);
    lograte_flush(e->debug); /* debug lines left out: said once a second */
    pthread_mutex_lock(&e->reqs_lock);
  }
  pthread_mutex_unlock(&e->reqs_lock);
  return NULL;
}

/* Link under the lock; the first request starts the watchdog (so it is
 * made in the process that serves, after a daemon's fork). */
void engine_req_begin(struct engine *e, struct engine_req *r, const char *what,
                      uint64_t off, uint64_t len) {
  while (e->parent)
    e = e->parent;
  r->prev = NULL;
  r->what = what;
  r->off = off;
  r->len = len;
  r->start_ns = now_ns();
  atomic_init(&r->units, 0);
  r->logged = 0;
  pthread_mutex_lock(&e->reqs_lock);
  r->next = e->reqs;
  if (e->reqs)
    e->reqs->prev = r;
  e->reqs = r;
  if (!e->watch_started && !e->watch_quit &&
      pthread_create(&e->watchdog, NULL, watchdog_run, e) == 0)
    e->watch_started = 1; /* else: no watchdog, no lines, reads go on */
  pthread_mutex_unlock(&e->reqs_lock);
  req_current = r;
}

/* Unlink under the lock. */
void engine_req_end(struct engine *e, struct engine_req *r) {
  while (e->parent)
    e = e->parent;
  req_current = NULL;
  pthread_mutex_lock(&e->reqs_lock);
  if (r->prev)
    r->prev->next = r->next;
  else
    e->reqs = r->next;
  if (r->next)
    r->next->prev = r->prev;
  if (!e->reqs) {
    e->idle_ns = now_ns();
    e->trimmed = 0;
  }
  pthread_mutex_unlock(&e->reqs_lock);
}

/* A relaxed add on the thread's request. */
void engine_req_note_unit(void) {
  if (req_current)
    atomic_fetch_add_explicit(&req_current->units, 1, memory_order_relaxed);
}

/* Stop and join the watchdog, if it runs. */
static void watchdog_stop(struct engine *e) {
  pthread_mutex_lock(&e->reqs_lock);
  e->watch_quit = 1;
  int started = e->watch_started;
  pthread_cond_signal(&e->reqs_cond);
  pthread_mutex_unlock(&e->reqs_lock);
  if (started)
    pthread_join(e->watchdog, NULL);
}

/* What a reader in sequence of a view larger than a quarter of the cache
 * has passed is kept within this part of the cache (memo_scan,
 * unit_passing): the units behind it are let go as it goes and their
 * pages reused by the units ahead, so a cat grows the daemon by its
 * working set, not by its text up to cache_size (those fresh pages, each
 * zeroed by the kernel, were up to 40% of a fresh cat's CPU). */
#define ENGINE_SCAN_PART 16

/* ...and at least this much (up to a quarter of the cache): the kernel's
 * read-ahead sends a window of reads at once and they are served out of
 * order, so a read can pass units that a read before it, not served yet,
 * still ends in; the scan list must hold what such a window spans, or
 * those units are decoded twice (seen with units of 250 KB, 1 MiB reads
 * and cache_size=8M: a 512 KiB scan list). */
#define ENGINE_SCAN_MIN (4u << 20)

/* The scan list's bound for a cache of `cache` bytes. */
static size_t engine_scan_budget(size_t cache) {
  size_t part = cache / ENGINE_SCAN_PART, least = ENGINE_SCAN_MIN;
  if (least > cache / 4)
    least = cache / 4;
  return part > least ? part : least;
}

/* Blocks from an eighth of the cache up (at least 4 MiB, at most 32 MiB,
 * glibc's ceiling) are mapped and unmapped on their own; smaller ones
 * come from malloc's heaps, which keep a freed block's pages for the next
 * (up to twice that size free at a heap's top; the rest when idle,
 * ENGINE_IDLE_TRIM_NS). A decoded chunk, its text or a zstd output of a
 * few MB mapped fresh for each chunk had the kernel zero its pages every
 * time: a `cat` of 10 chunks of 1M float64 faulted some 280 MB for a
 * working set of 100 MB (decoded twice: its size, then its text), and
 * the page clearing was up to 40% of the daemon's CPU. A fixed 4 MiB
 * keeps a small cache's bound (glibc's own threshold rises to the largest
 * block freed, up to 32 MiB, and a 48 MB unit read with a 16 MiB cache
 * then peaked at 94 MB instead of 69 MB); a large cache has room for what
 * the heaps keep. */
#define ENGINE_MMAP_MIN ((size_t)4 << 20)
#define ENGINE_MMAP_MAX ((size_t)32 << 20)

/* malloc's arenas: one per core, 2 to 4. glibc makes up to 8 a core, one
 * for each thread that allocates while the others' are busy (16 FUSE
 * threads, the workers), and a block freed goes back to the arena that
 * made it, where only the threads of that arena reuse it: a `cat` of the
 * 200,000-chunk kerchunk archive (small units made on one thread, freed
 * on another) peaked at 300-325 MiB with 16 arenas, 204 MiB with 4, 156
 * MiB with 2 (bound 320 MiB), with no cost in wall time above the noise
 * of the 2-core VM. */
#define ENGINE_ARENAS_MIN 2
#define ENGINE_ARENAS_MAX 4

/* Idle this long (no request in flight), the daemon hands what malloc's
 * heaps keep free back to the system (malloc_trim): once per idle spell. */
#define ENGINE_IDLE_TRIM_NS 2000000000ull

/* Build the engine. */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e) {
    store_free(store);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  /* A fixed threshold: glibc's own rises to the size of the largest block
   * freed (up to 32 MiB), after which decoded chunks come from heaps that
   * keep their pages when they are freed, and the daemon's peak is no
   * longer what it holds (94 MB instead of 69 MB for a 48 MB unit read
   * with a 16 MiB cache). Process-wide, and the same for every engine. */
  size_t mt = cfg->cache_size / 8;
  mt = mt < ENGINE_MMAP_MIN   ? ENGINE_MMAP_MIN
       : mt > ENGINE_MMAP_MAX ? ENGINE_MMAP_MAX
                              : mt;
  mallopt(M_MMAP_THRESHOLD, (int)mt);
  mallopt(M_TRIM_THRESHOLD, (int)(2 * mt));
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  mallopt(M_ARENA_MAX, ncpu < ENGINE_ARENAS_MIN   ? ENGINE_ARENAS_MIN
                       : ncpu > ENGINE_ARENAS_MAX ? ENGINE_ARENAS_MAX
                                                  : (int)ncpu);
  atomic_init(&e->stopping, 0);
  pthread_mutex_init(&e->subs_lock, NULL);
  pthread_mutex_init(&e->reqs_lock, NULL);
  pthread_cond_init(&e->reqs_cond, NULL);
  e->slow_ns = ENGINE_SLOW_REQUEST_NS;
  e->idle_trim_ns = ENGINE_IDLE_TRIM_NS;
  e->table_learn_ns = ENGINE_TABLE_LEARN_NS;
  e->cfg = *cfg;
  e->ic = icechunk_of_store(store);
  if (e->ic)
    icechunk_ref(e->ic);
  struct memo_config mc = {
      cfg->cache_size, cfg->size_table_max ? cfg->size_table_max : 1 << 20,
      &e->stopping, ENGINE_FAIL_KEEP_NS, engine_scan_budget(cfg->cache_size)};
  e->store = store;
  e->env.max_decoded = cfg->max_decoded;
  e->env.heap_max = mt; /* below the mmap threshold: a heap's block */
  e->env.stop = &e->stopping;
  int rc = memo_new(&mc, &e->memo, err);
  if (rc == 0)
    rc = logonce_new(LOGONCE_DEFAULT_KEYS, LOGONCE_DEFAULT_SECS, &e->log, err);
  static const char *const kinds[] = {"request", "cache", "decode", NULL};
  if (rc == 0)
    rc = lograte_new(ENGINE_DEBUG_PER_SEC, kinds, &e->debug, err);
  if (rc == 0)
    rc = vnode_table_new(store, e->log, &e->env, cfg->no_consolidated,
                         &e->nodes, err);
  if (rc < 0) {
    node_table_free(e->nodes);
    lograte_free(e->debug);
    logonce_free(e->log);
    memo_free(e->memo);
    icechunk_unref(e->ic);
    pthread_mutex_destroy(&e->subs_lock);
    pthread_mutex_destroy(&e->reqs_lock);
    pthread_cond_destroy(&e->reqs_cond);
    free(e);
    store_free(store);
    return rc;
  }
  e->window_cap = cfg->max_decoded;
  /* A unit's text is kept whole up to an eighth of the cache (so a view
   * of several units still fits it), never above the decode limit. */
  e->render_max = cfg->cache_size / 8 < cfg->max_decoded ? cfg->cache_size / 8
                                                         : cfg->max_decoded;
  e->no_consolidated = cfg->no_consolidated;
  e->lazy_sizes = cfg->lazy_sizes;
  e->views = cfg->views;
  /* Decode-ahead holds at most a quarter of the cache pinned per reader.
   * No pool (no threads, or none could be made) only means no decoding
   * ahead. */
  e->ahead_budget = cfg->cache_size / 4;
  e->cache_size = cfg->cache_size;
  if (cfg->decode_threads > 0)
    e->ahead = pool_new(cfg->decode_threads, 4 * cfg->decode_threads + 64);
  *out = e;
  return 0;
}

/* What a sub-engine owns: its node table and its store (the memo, log
 * and workers are its parent's). Called after the parent's memo is gone. */
static void sub_free(struct engine *s) {
  node_table_free(s->nodes);
  store_free(s->store);
  icechunk_unref(s->ic);
  pthread_mutex_destroy(&s->subs_lock);
  free(s);
}

/* Free everything; NULL-safe. */
void engine_free(struct engine *e) {
  if (!e)
    return;
  if (e->parent) {
    sub_free(e);
    return;
  }
  /* First the jobs (they pin memo entries), then the memo (cached units
   * borrow node forms, the sub-engines' too), then the node tables. */
  engine_stop(e);
  watchdog_stop(e);
  pool_free(e->ahead);
  memo_free(e->memo);
  for (size_t i = 0; i < e->nsubs; i++)
    sub_free(e->subs[i].e);
  free(e->subs);
  node_table_free(e->nodes);
  store_free(e->store);
  icechunk_unref(e->ic);
  sizeindex_close(e->sizeidx);
  lograte_free(e->debug); /* says what was left out */
  logonce_free(e->log);   /* prints the repeats not summarised yet */
  pthread_mutex_destroy(&e->subs_lock);
  pthread_mutex_destroy(&e->reqs_lock);
  pthread_cond_destroy(&e->reqs_cond);
  free(e);
}

/* Format, then count or show (lograte). */
void engine_debug(struct engine *e, enum engine_debug_kind k, const char *fmt,
                  ...) {
  if (!engine_debugging())
    return;
  va_list ap;
  va_start(ap, fmt);
  lograte_vlog(e->debug, ZLOG_DEBUG, (unsigned)k, fmt, ap);
  va_end(ap);
}

/* A sub-engine over store (taken): the parent's memo, log, workers and
 * limits, a node table of its own. */
static int sub_new(struct engine *p, struct store *store, struct engine **out,
                   struct zerr *err) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e) {
    store_free(store);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  atomic_init(&e->stopping, 0);
  pthread_mutex_init(&e->subs_lock, NULL);
  e->parent = p;
  e->store = store;
  e->cfg = p->cfg;
  e->ic = icechunk_ref(p->ic);
  e->memo = p->memo;
  e->env = p->env;
  e->log = p->log;
  e->debug = p->debug;
  e->ahead = p->ahead;
  e->window_cap = p->window_cap;
  e->render_max = p->render_max;
  e->ahead_budget = p->ahead_budget;
  e->cache_size = p->cache_size;
  e->table_learn_ns = p->table_learn_ns;
  e->no_consolidated = p->no_consolidated;
  e->lazy_sizes = p->lazy_sizes;
  e->views = p->views;
  int rc = vnode_table_new(store, e->log, &e->env, e->no_consolidated,
                           &e->nodes, err);
  if (rc < 0) {
    e->nodes = NULL;
    sub_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

/* Look up under the lock; open the snapshot outside it (a read), then
 * insert unless another thread did meanwhile. */
int engine_sub(struct engine *e, const uint8_t id[12], struct engine **out,
               struct zerr *err) {
  if (!e->ic || e->parent)
    return zerr_set(err, ENOENT, "no such file");
  pthread_mutex_lock(&e->subs_lock);
  for (size_t i = 0; i < e->nsubs; i++)
    if (!memcmp(e->subs[i].id, id, 12)) {
      *out = e->subs[i].e;
      pthread_mutex_unlock(&e->subs_lock);
      return 0;
    }
  size_t n = e->nsubs;
  pthread_mutex_unlock(&e->subs_lock);
  if (n >= ENGINE_SUBS_MAX)
    return zerr_set(err, ENFILE,
                    "more than %d snapshots shown since the mount: "
                    "remount to see others",
                    ENGINE_SUBS_MAX);
  struct store *st;
  ZTRY(icechunk_open_snapshot(e->ic, id, &st, err));
  struct engine *s = NULL;
  ZTRY(sub_new(e, st, &s, err));
  pthread_mutex_lock(&e->subs_lock);
  for (size_t i = 0; i < e->nsubs; i++)
    if (!memcmp(e->subs[i].id, id, 12)) {
      *out = e->subs[i].e;
      pthread_mutex_unlock(&e->subs_lock);
      sub_free(s); /* another thread made it first; ours was never used */
      return 0;
    }
  if (!e->subs) {
    e->subs = calloc(ENGINE_SUBS_MAX, sizeof *e->subs);
    if (!e->subs) {
      pthread_mutex_unlock(&e->subs_lock);
      sub_free(s);
      return zerr_set(err, ENOMEM, "out of memory");
    }
  }
  if (e->nsubs >= ENGINE_SUBS_MAX) {
    pthread_mutex_unlock(&e->subs_lock);
    sub_free(s);
    return zerr_set(err, ENFILE,
                    "more than %d snapshots shown since the mount: "
                    "remount to see others",
                    ENGINE_SUBS_MAX);
  }
  memcpy(e->subs[e->nsubs].id, id, 12);
  e->subs[e->nsubs++].e = s;
  *out = s;
  pthread_mutex_unlock(&e->subs_lock);
  return 0;
}
