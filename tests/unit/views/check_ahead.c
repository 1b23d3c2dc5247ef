/* check_ahead.c - the worker pool (src/util/pool.h) and decoding ahead
 * (fs/views/view.c): every job runs exactly once or is cancelled; a sequential
 * reader with workers gets the exact text; `stat` followed by one full
 * read decodes each unit once within the budget and at most twice beyond
 * it (decodes counted); a reader that goes away with jobs in flight
 * leaks nothing (ASan build); on a store that fetches ahead
 * (store_prefetch), a sequential reader names the chunks after the one it
 * reads, in a growing window within what the store accepts, and lets go
 * of them all on a seek and on close; a reader in sequence copies text
 * the workers rendered (cursor_rendered), and of units rendered as they
 * are read, slices of text the workers rendered (cursor_sliced), also
 * when it reads in pieces that straddle slices or jumps back; one worker
 * learning sizes beside a reader meets it once a run of units. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "../../../fs/engine/cursor.h"
#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../../../src/util/pool.h"
#include "../teststore.h"
#include "../testutil.h"

static char tmpdir[64];

static void setup(void) {
  strcpy(tmpdir, "/tmp/zarrfs-ahead-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void) { testutil_rmtree(tmpdir); }

/* ---- the pool ---- */

struct counts {
  atomic_int ran, cancelled;
  atomic_int closed;        /* jobs wait while this is set (10 s at most) */
  atomic_int until_freeing; /* ... or until pool_free has begun */
  atomic_int submitted;     /* the test has queued all it will */
  atomic_int started;       /* jobs that began to run */
  struct pool *p;
};

/* A job that does nothing (the probe of count_job). */
static void noop_job(void *arg, int cancelled) {
  (void)arg;
  (void)cancelled;
}

/* Has pool_free begun? A submit then refuses with -ESHUTDOWN; before
 * that, a probe may be queued (a no-op), which changes no count. */
static int pool_freeing(struct pool *p) {
  return pool_submit(p, noop_job, NULL) == -ESHUTDOWN;
}

/* A job that counts how it ended (and takes a little time, or waits as
 * the test says). */
static void count_job(void *arg, int cancelled) {
  struct counts *c = arg;
  if (cancelled) {
    atomic_fetch_add(&c->cancelled, 1);
    return;
  }
  atomic_fetch_add(&c->started, 1);
  usleep(100);
  for (int i = 0; atomic_load(&c->closed) && i < 10000; i++)
    usleep(1000);
  if (atomic_load(&c->until_freeing)) {
    for (int i = 0; !atomic_load(&c->submitted) && i < 10000; i++)
      usleep(1000);
    for (int i = 0; !pool_freeing(c->p) && i < 10000; i++)
      usleep(1000);
  }
  atomic_fetch_add(&c->ran, 1);
}

START_TEST(pool_runs_each_job_once) {
  struct counts c = {0};
  atomic_store(&c.closed, 1);
  struct pool *p = pool_new(3, 16);
  ck_assert_ptr_nonnull(p);
  ck_assert_int_eq(pool_threads(p), 3);
  int accepted = 0, refused = 0;
  /* While the jobs wait, at most 3 are running and 16 queued: a submit
   * is refused by the 20th at the latest, whatever the timing. */
  for (int i = 0; i < 20 && !refused; i++) {
    int rc = pool_submit(p, count_job, &c);
    if (rc == 0)
      accepted++;
    else {
      ck_assert_int_eq(rc, -EAGAIN); /* a full queue refuses, never blocks */
      refused++;
    }
  }
  ck_assert_int_eq(refused, 1);
  atomic_store(&c.closed, 0);
  /* Then many more jobs than the queue holds (10 s at most). */
  for (int i = 0; accepted < 200 && i < 200000; i++) {
    int rc = pool_submit(p, count_job, &c);
    if (rc == 0)
      accepted++;
    else {
      ck_assert_int_eq(rc, -EAGAIN);
      refused++;
      usleep(50);
    }
  }
  ck_assert_int_eq(accepted, 200);
  pool_free(p); /* cancels what is still queued, waits for the rest */
  ck_assert_int_eq(atomic_load(&c.ran) + atomic_load(&c.cancelled), accepted);
  pool_free(NULL);
}
END_TEST

START_TEST(pool_free_cancels_queued) {
  /* The first job runs before pool_free is called and holds its worker
   * until pool_free has begun, so the other 63 are still queued then,
   * whatever the timing. */
  struct counts c = {0};
  struct pool *p = pool_new(1, 64);
  c.p = p;
  atomic_store(&c.until_freeing, 1);
  for (int i = 0; i < 64; i++)
    ck_assert_int_eq(pool_submit(p, count_job, &c), 0);
  atomic_store(&c.submitted, 1);
  for (int i = 0; !atomic_load(&c.started) && i < 10000; i++)
    usleep(1000);
  ck_assert_int_eq(atomic_load(&c.started), 1);
  pool_free(p);
  ck_assert_int_eq(atomic_load(&c.ran) + atomic_load(&c.cancelled), 64);
  ck_assert_int_eq(atomic_load(&c.ran), 1);
  ck_assert_int_eq(atomic_load(&c.cancelled), 63);
}
END_TEST

/* ---- decoding ahead ---- */

/* A 1-D int32 array `a` of n chunks of `per` elements (element i is
 * i*3-7), uncompressed; returns its expected text (caller frees). */
static char *make_int_array(uint64_t n, uint64_t per) {
  ts_put_v3_1d(tmpdir, "a", (int)(n * per), (int)per, "\"int32\"", "0",
               "[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
               "\"little\"}}]");
  int32_t *v = malloc(per * sizeof *v);
  char *want = malloc(n * per * 12 + 1), *w = want;
  for (uint64_t c = 0; c < n; c++) {
    for (uint64_t i = 0; i < per; i++) {
      v[i] = (int32_t)((c * per + i) * 3) - 7;
      w += sprintf(w, "%d\n", v[i]);
    }
    char key[32];
    snprintf(key, sizeof key, "a/c/%llu", (unsigned long long)c);
    ts_put_file(tmpdir, key, v, per * sizeof *v);
  }
  free(v);
  return want;
}

/* An engine over tmpdir with a cache and decode workers. */
static struct engine *engine_threads(size_t cache, int threads) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &s, &err), 0);
  struct engine_config cfg = {cache, 1u << 30, 1 << 16, 0, 0, threads};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* stat, then read the whole view in sequence through one cursor (as
 * `stat` and `cat` do), checking the text. */
static void stat_then_cat(struct engine *e, const char *path, const char *want,
                          size_t step) {
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
  ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(size, strlen(want));
  char *buf = malloc(size + 1);
  struct view_cursor *c = view_cursor_new();
  for (uint64_t off = 0; off < size;) {
    long n = ns_read_view(e, &ent, off, step, buf + off, c, &err);
    ck_assert_msg(n > 0, "at %llu: %s", (unsigned long long)off, err.msg);
    off += (uint64_t)n;
  }
  view_cursor_free(e, c);
  ck_assert(memcmp(buf, want, size) == 0);
  free(buf);
}

START_TEST(stat_then_cat_decodes_each_unit_once) {
  char *want = make_int_array(40, 20000); /* 40 units, ~8 MB of text */
  for (int threads = 0; threads <= 2; threads += 2) {
    struct engine *e = engine_threads(256u << 20, threads);
    stat_then_cat(e, "/a/values.txt", want, 128 << 10);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 40);
    engine_free(e);
  }
  free(want);
}
END_TEST

START_TEST(small_units_in_runs_decode_once) {
  /* ~1.2 KB of text a unit: size jobs cover runs of ~50 units; ~50 bytes:
   * no jobs at all. Either way each unit is decoded once. */
  static const uint64_t per[] = {100, 4};
  for (int k = 0; k < 2; k++) {
    char *want = make_int_array(3000, per[k]);
    struct engine *e = engine_threads(256u << 20, 2);
    stat_then_cat(e, "/a/values.txt", want, 128 << 10);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 3000);
    engine_free(e);
    free(want);
    teardown();
    setup();
  }
}
END_TEST

/* One worker learning sizes beside the reader that needs them (a `cat`
 * of 3,000 units of ~600 bytes of text, no stat first: size jobs of runs
 * of ~100 units, data jobs of 32): each job does its run last unit
 * first, so the reader, going forward, does a run's first units itself
 * and waits for the job at most once a run (about 30 waits here), not
 * once a unit: size jobs in C order had the reader catch up with the job
 * at every unit (1,700-2,300 waits here; archive K's `cat` with one
 * worker was slower than with none). */
START_TEST(one_worker_meets_the_reader_once_a_run) {
  char *want = make_int_array(3000, 100);
  struct engine *e = engine_threads(256u << 20, 1);
  /* cat: read to the end, no stat first */
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/a/values.txt", &ent, &err), 0);
  size_t size = strlen(want), off = 0;
  char *buf = malloc(size + 1);
  struct view_cursor *c = view_cursor_new();
  for (long n;
       (n = ns_read_view(e, &ent, off, 128 << 10, buf + off, c, &err)) > 0;)
    off += (size_t)n;
  view_cursor_free(e, c);
  ck_assert_uint_eq(off, size);
  ck_assert(memcmp(buf, want, size) == 0);
  free(buf);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 3000);
  uint64_t waits = memo_waits(e->memo);
  ck_assert_msg(waits <= 300, "%llu waits for 3,000 units",
                (unsigned long long)waits);
  engine_free(e);
  free(want);
}
END_TEST

/* A 1-D string array `s` of n chunks of `per` strings ("s<i>", i the
 * element's index) in vlen-utf8 behind zstd, whose frames state their
 * size (so the view's size needs no decode); returns its text. */
static char *make_utf8_array(uint64_t n, uint64_t per) {
  ts_put_v3_1d(tmpdir, "s", (int)(n * per), (int)per, "\"string\"", "\"\"",
               "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]");
  size_t cap = 4 + per * 28;
  uint8_t *raw = malloc(cap), *z = malloc(ZSTD_compressBound(cap));
  char *want = malloc(n * per * 24 + 1), *w = want;
  for (uint64_t c = 0; c < n; c++) {
    size_t rl = 4;
    for (int b = 0; b < 4; b++)
      raw[b] = (uint8_t)(per >> (8 * b));
    for (uint64_t i = 0; i < per; i++) {
      int l = sprintf(w, "s%llu", (unsigned long long)(c * per + i));
      for (int b = 0; b < 4; b++)
        raw[rl + b] = (uint8_t)((unsigned)l >> (8 * b));
      memcpy(raw + rl + 4, w, (size_t)l);
      rl += 4 + (size_t)l;
      w += l;
      *w++ = '\n';
    }
    size_t zl = ZSTD_compress(z, ZSTD_compressBound(cap), raw, rl, 1);
    ck_assert(!ZSTD_isError(zl));
    char key[32];
    snprintf(key, sizeof key, "s/c/%llu", (unsigned long long)c);
    ts_put_file(tmpdir, key, z, zl);
  }
  *w = '\0';
  free(raw);
  free(z);
  return want;
}

/* A reader's first read, before any unit's cost is known, has a unit
 * per worker decoded ahead (a single one left the second worker idle
 * while the reader decoded its first): with two workers, units 1 and 2
 * beside the reader's unit 0. */
START_TEST(first_read_gives_every_worker_a_unit) {
  char *want = make_utf8_array(40, 40000); /* ~300 KB of text a unit */
  /* once a unit's cost is known, the ahead budget (a quarter of the
   * cache) holds one: only the first read queues more */
  struct engine *e = engine_threads(3u << 19, 2);
  e->ahead_settle = 1; /* the reader waits for the workers: no race */
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/s/values.txt", &ent, &err), 0);
  size_t len = 260u << 10; /* past the 256 KiB before decoding ahead */
  char *buf = malloc(len);
  struct view_cursor *c = view_cursor_new();
  long n = ns_read_view(e, &ent, 0, len, buf, c, &err);
  ck_assert_msg(n == (long)len, "%ld: %s", n, err.msg);
  ck_assert(memcmp(buf, want, len) == 0);
  pool_wait_idle(e->ahead);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 3);
  view_cursor_free(e, c);
  engine_free(e);
  free(buf);
  free(want);
}
END_TEST

START_TEST(beyond_the_budget_at_most_twice) {
  char *want = make_int_array(40, 20000);
  /* a 2 MiB cache holds about 8 of the 40 units' text */
  for (int threads = 0; threads <= 2; threads += 2) {
    struct engine *e = engine_threads(2u << 20, threads);
    e->ahead_settle = 1; /* the reader waits for the workers: no race */
    stat_then_cat(e, "/a/values.txt", want, 128 << 10);
    /* Twice each at most (the size, then the read); decoding ahead that
     * ignored the budget would be far above. */
    ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT), 80);
    /* once the workers are idle, nothing stays pinned */
    if (e->ahead)
      pool_wait_idle(e->ahead);
    ck_assert_uint_eq(memo_pinned(e->memo), 0);
    engine_free(e);
  }
  free(want);
}
END_TEST

START_TEST(units_larger_than_the_cache_held_once) {
  /* 8 units of ~2.4 MB of text each, a 1 MiB cache: a sequential reader
   * lets go of the unit before when it needs a new one (cursor_room), so
   * one unit, not two, is pinned after each read; each is decoded at
   * most twice (the size of the view learns them all first). */
  char *want = make_int_array(8, 300000);
  size_t size = strlen(want), unit = 300000 * 4; /* its elements */
  for (int threads = 0; threads <= 2; threads += 2) {
    struct engine *e = engine_threads(1u << 20, threads);
    struct ns_entry ent;
    struct zerr err = {0};
    ck_assert_int_eq(ns_resolve(e, "/a/values.txt", &ent, &err), 0);
    char *buf = malloc(size);
    struct view_cursor *c = view_cursor_new();
    size_t peak = 0;
    for (uint64_t off = 0; off < size;) {
      long n = ns_read_view(e, &ent, off, 128 << 10, buf + off, c, &err);
      ck_assert_msg(n > 0, "at %llu: %s", (unsigned long long)off, err.msg);
      off += (uint64_t)n;
      size_t p = memo_pinned(e->memo);
      peak = p > peak ? p : peak;
    }
    ck_assert_msg(peak < unit + unit / 2, "pinned %zu, a unit %zu", peak, unit);
    view_cursor_free(e, c);
    ck_assert(memcmp(buf, want, size) == 0);
    ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT), 16);
    free(buf);
    engine_free(e);
  }
  free(want);
}
END_TEST

START_TEST(rows_read_with_workers) {
  /* 2-D (60, 900) int32, chunks (7, 50): rows of 18 units, edge chunks
   * along dimension 0 */
  const char *meta =
      "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[60,900],"
      "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":\"regular\","
      "\"configuration\":{\"chunk_shape\":[7,50]}},"
      "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":-1,"
      "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
      "\"little\"}}]}";
  ts_put_file(tmpdir, "b/zarr.json", meta, strlen(meta));
  for (int ci = 0; ci < 9; ci++)
    for (int cj = 0; cj < 18; cj++) {
      if ((ci + cj) % 5 == 0)
        continue; /* missing: the fill value */
      int32_t v[7 * 50];
      for (int r = 0; r < 7; r++)
        for (int q = 0; q < 50; q++)
          v[r * 50 + q] = (ci * 7 + r) * 1000 + cj * 50 + q;
      char key[32];
      snprintf(key, sizeof key, "b/c/%d/%d", ci, cj);
      ts_put_file(tmpdir, key, v, sizeof v);
    }
  char *want = malloc(60 * 900 * 8 + 1), *w = want;
  for (int r = 0; r < 60; r++)
    for (int q = 0; q < 900; q++)
      w += ((r / 7) + (q / 50)) % 5 == 0 ? sprintf(w, "-1\n")
                                         : sprintf(w, "%d\n", r * 1000 + q);
  for (int threads = 0; threads <= 3; threads += 3) {
    struct engine *e = engine_threads(256u << 20, threads);
    stat_then_cat(e, "/b/values.txt", want, 4096);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 9 * 18 - 9 * 18 / 5);
    engine_free(e);
  }
  free(want);
}
END_TEST

START_TEST(workers_render_for_a_reader) {
  /* 40 units of ~150 KB of text read in sequence: the workers render the
   * units after the one being read (or while the size is learned), so the
   * reader copies text made on the other cores; with none it makes all.
   * The engine's test hook (ahead_settle) has the reader wait for the
   * workers after it queued them, as a reader slower than the workers
   * would: the count does not depend on which thread the machine ran
   * first (no timing, no retries). The text must be exact. */
  char *want = make_int_array(40, 20000);
  size_t size = strlen(want);
  for (int threads = 0; threads <= 2; threads += 2) {
    struct engine *e = engine_threads(256u << 20, threads);
    e->ahead_settle = 1;
    struct ns_entry ent;
    struct zerr err = {0};
    ck_assert_int_eq(ns_resolve(e, "/a/values.txt", &ent, &err), 0);
    char *buf = malloc(size);
    struct view_cursor *c = view_cursor_new();
    uint64_t before = cursor_rendered();
    for (uint64_t off = 0; off < size;) {
      long n = ns_read_view(e, &ent, off, 128 << 10, buf + off, c, &err);
      ck_assert_msg(n > 0, "at %llu: %s", (unsigned long long)off, err.msg);
      off += (uint64_t)n;
    }
    ck_assert(memcmp(buf, want, size) == 0);
    uint64_t made = cursor_rendered() - before;
    /* every unit but the first two, whose sizes the reader learns alone
     * (the first judges the window, the second is its own) */
    if (threads)
      ck_assert_msg(made == 38, "workers rendered %llu of 40 units",
                    (unsigned long long)made);
    else
      ck_assert_uint_eq(made, 0);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 40);
    view_cursor_free(e, c);
    free(buf);
    engine_free(e);
  }
  free(want);
}
END_TEST

START_TEST(workers_render_slices_for_a_reader) {
  /* 10 units of ~2.5 MB of text: more than render_max (an eighth of the
   * 16 MiB cache), so their text is rendered as it is read; the workers
   * render the slices after the reader's, in reads of 1 MiB and of
   * 300 KB (straddling slices), and after a jump back to the start; a
   * read that one slice holds whole is lent, not copied. */
  char *want = make_int_array(10, 300000);
  size_t size = strlen(want);
  static const size_t steps[] = {1 << 20, 300000};
  for (int threads = 0; threads <= 2; threads += 2)
    for (int s = 0; s < 2; s++) {
      struct engine *e = engine_threads(16u << 20, threads);
      e->ahead_settle = 1; /* the reader waits for the workers: no race */
      struct ns_entry ent;
      struct zerr err = {0};
      ck_assert_int_eq(ns_resolve(e, "/a/values.txt", &ent, &err), 0);
      char *buf = malloc(size);
      struct view_cursor *c = view_cursor_new();
      uint64_t before = cursor_sliced(), lent = 0;
      for (int pass = 0; pass < 2; pass++) {
        memset(buf, 0, size);
        uint64_t end = pass ? size : size / 3; /* then back to 0 */
        for (uint64_t off = 0; off < end;) {
          /* the second pass as the FUSE layer reads: lent where it can */
          struct view_lend lend;
          long n =
              pass ? view_array_read_lend(e, ent.node, off, steps[s], buf + off,
                                          c, &lend, &err)
                   : ns_read_view(e, &ent, off, steps[s], buf + off, c, &err);
          ck_assert_msg(n > 0, "at %llu: %s", (unsigned long long)off, err.msg);
          if (pass && lend.bytes) {
            memcpy(buf + off, lend.bytes, (size_t)n);
            lent++;
          }
          if (pass)
            view_lend_return(c, &lend);
          off += (uint64_t)n;
        }
        ck_assert(memcmp(buf, want, end) == 0);
      }
      uint64_t made = cursor_sliced() - before;
      if (threads) {
        ck_assert_msg(made >= 1, "workers rendered no slice");
        if (s == 0) /* reads of a whole slice */
          ck_assert_msg(lent >= 1, "no read lent");
      } else {
        ck_assert_uint_eq(made, 0);
      }
      view_cursor_free(e, c);
      free(buf);
      engine_free(e);
    }
  free(want);
}
END_TEST

START_TEST(reader_leaves_with_jobs_in_flight) {
  char *want = make_int_array(64, 20000);
  struct engine *e = engine_threads(256u << 20, 2);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "/a/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  char buf[128 << 10];
  for (int round = 0; round < 20; round++) {
    struct view_cursor *c = view_cursor_new();
    uint64_t off = (uint64_t)round * (size / 20);
    for (int i = 0; i < 4; i++) { /* in sequence: jobs are queued */
      long n = ns_read_view(e, &ent, off, sizeof buf, buf, c, &err);
      ck_assert_int_gt(n, 0);
      ck_assert(memcmp(buf, want + off, (size_t)n) == 0);
      off += (uint64_t)n;
    }
    view_cursor_free(e, c); /* at once, jobs still running */
  }
  engine_free(e); /* waits for them; they release what they made */
  free(want);
}
END_TEST

/* ---- naming chunks to a store that fetches ahead ---- */

/* A fake store_prefetch over the local store: counts the hints held
 * (the reader's, flags 0, and the size jobs', HEAD), refuses beyond
 * pf_cap reader hints, and remembers the highest chunk named. */
static pthread_mutex_t pf_lock = PTHREAD_MUTEX_INITIALIZER;
static int pf_held, pf_held_max, pf_head_held, pf_cap, pf_refused;
static long pf_top; /* highest chunk index the reader named */

struct fake_hint {
  int head;
};

static int fake_prefetch(struct store *s, const char *key, const void *owner,
                         int flags, void **hint) {
  (void)s;
  (void)owner;
  int head = (flags & STORE_PREFETCH_HEAD) != 0;
  pthread_mutex_lock(&pf_lock);
  if (!head && pf_held >= pf_cap) {
    pf_refused++;
    pthread_mutex_unlock(&pf_lock);
    return -EAGAIN;
  }
  struct fake_hint *h = malloc(sizeof *h);
  h->head = head;
  if (head) {
    pf_head_held++;
  } else {
    if (++pf_held > pf_held_max)
      pf_held_max = pf_held;
    const char *c = strrchr(key, '/');
    long k = c ? strtol(c + 1, NULL, 10) : -1;
    if (k > pf_top)
      pf_top = k;
  }
  pthread_mutex_unlock(&pf_lock);
  *hint = h;
  return 0;
}

static void fake_drop(struct store *s, void *hint) {
  (void)s;
  struct fake_hint *h = hint;
  pthread_mutex_lock(&pf_lock);
  if (h->head)
    pf_head_held--;
  else
    pf_held--;
  pthread_mutex_unlock(&pf_lock);
  free(h);
}

static const struct store_ahead_ops fake_ahead = {fake_prefetch, fake_drop};

START_TEST(chunks_named_ahead_of_a_reader) {
  char *want = make_int_array(80, 20000); /* ~200 KB of text a chunk */
  pf_held = pf_held_max = pf_head_held = pf_refused = 0;
  pf_top = -1;
  pf_cap = 12;
  struct engine *e = engine_threads(256u << 20, 2);
  e->store->ahead = &fake_ahead;
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "/a/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, strlen(want));
  char *buf = malloc(128 << 10);
  struct view_cursor *c = view_cursor_new();
  int ahead_by_2 = 0;
  uint64_t off = 0;
  /* A quarter of the view in sequence: naming happens in the read
   * itself, so what was named is known when the read returns (no
   * timing). */
  while (off < size / 4) {
    long n = ns_read_view(e, &ent, off, 128 << 10, buf, c, &err);
    ck_assert_int_gt(n, 0);
    ck_assert(memcmp(buf, want + off, (size_t)n) == 0);
    off += (uint64_t)n;
    long reading = (long)(off / (size / 80)); /* chunks are equal here */
    pthread_mutex_lock(&pf_lock);
    ahead_by_2 |= pf_top >= reading + 2;
    ck_assert_int_le(pf_held, pf_cap);
    pthread_mutex_unlock(&pf_lock);
  }
  ck_assert_msg(ahead_by_2, "never 2 chunks ahead (top %ld)", pf_top);
  ck_assert_int_gt(pf_held_max, 4); /* the window grew past its start */
  ck_assert_int_le(pf_held_max, pf_cap);
  ck_assert_int_gt(pf_refused, 0); /* and stopped where the store said */
  /* A seek (far beyond the slack of reads out of order): every hint
   * goes. */
  long n = ns_read_view(e, &ent, size - 4096, 4096, buf, c, &err);
  ck_assert_int_gt(n, 0);
  pthread_mutex_lock(&pf_lock);
  ck_assert_int_eq(pf_held, 0);
  pthread_mutex_unlock(&pf_lock);
  /* Sequential again, then close: nothing is held after. */
  for (off = 0; off < size / 4;) {
    n = ns_read_view(e, &ent, off, 128 << 10, buf, c, &err);
    ck_assert_int_gt(n, 0);
    off += (uint64_t)n;
  }
  view_cursor_free(e, c);
  engine_free(e); /* the size jobs are done: theirs are let go too */
  ck_assert_int_eq(pf_held, 0);
  ck_assert_int_eq(pf_head_held, 0);
  free(buf);
  free(want);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ahead");
  TCase *tc = tcase_create("pool");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, pool_runs_each_job_once);
  tcase_add_test(tc, pool_free_cancels_queued);
  suite_add_tcase(s, tc);
  tc = tcase_create("views");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, stat_then_cat_decodes_each_unit_once);
  tcase_add_test(tc, small_units_in_runs_decode_once);
  tcase_add_test(tc, one_worker_meets_the_reader_once_a_run);
  tcase_add_test(tc, first_read_gives_every_worker_a_unit);
  tcase_add_test(tc, beyond_the_budget_at_most_twice);
  tcase_add_test(tc, units_larger_than_the_cache_held_once);
  tcase_add_test(tc, rows_read_with_workers);
  tcase_add_test(tc, workers_render_for_a_reader);
  tcase_add_test(tc, workers_render_slices_for_a_reader);
  tcase_add_test(tc, reader_leaves_with_jobs_in_flight);
  tcase_add_test(tc, chunks_named_ahead_of_a_reader);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
