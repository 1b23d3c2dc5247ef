/* lsize.c - a region's unit sizes learned in bulk on every core, and kept
 * whole in the persistent index (see lsize.h). */
#include "lsize.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../src/store/presence.h"
#include "../../src/store/sizeblob.h"
#include "../../src/util/htab.h"
#include "../../src/util/pool.h"
#include "tblock.h"

/* Units of less text than this are never kept by a measuring run (the
 * size under which fs/views/layout.c learns units alone, not on the
 * workers). */
#define LSIZE_KEEP_TEXT 256

/* Units a thread takes from the counter at once. */
#define LSIZE_RUN 32

/* The time the rest would take is judged once this many units are
 * learned and this much time went by (a few runs: one slow unit, or the
 * first ones, which start the workers, do not decide). */
#define LSIZE_JUDGE_UNITS (4 * LSIZE_RUN)
#define LSIZE_JUDGE_NS 20000000ull

/* See lsize.h. */
uint64_t lsize_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One bulk learning, shared by the caller and its jobs (reference
 * counted: the caller's and one per job queued). */
struct lsize_run {
  _Atomic int refs;
  pthread_mutex_t lock; /* guards closed, running, fail_*; a leaf */
  pthread_cond_t idle;  /* running dropped to 0 */
  int closed;           /* the caller is done: a job starting now quits */
  int running;          /* jobs inside the region's layout */
  struct engine *e;
  const struct znode *n;
  struct region r;          /* a copy: jobs outlive the caller's frame */
  struct region_layout *l;  /* pinned by the caller while running > 0 */
  int measure;              /* decode to measure, keep nothing... */
  uint64_t keep_to;         /* ...from this unit on (those before are kept
                               for the reader that usually follows) */
  uint64_t from, np;        /* the units to learn: [from, np) */
  _Atomic uint64_t next;    /* the next run's first unit */
  _Atomic uint64_t learned; /* units learned so far */
  uint64_t start_ns, deadline_ns;
  atomic_int stop;      /* the deadline, a stop, or no time */
  uint64_t fail_at;     /* the first unit that failed (lock) */
  struct zerr fail_err; /* its error */
};

/* Drop a reference; the last one frees. */
static void run_put(struct lsize_run *R) {
  if (atomic_fetch_sub(&R->refs, 1) != 1)
    return;
  pthread_mutex_destroy(&R->lock);
  pthread_cond_destroy(&R->idle);
  free(R);
}

/* Learn unit i's size into l->p_cum[i] (a difference), or note its
 * failure. */
static void run_unit(struct lsize_run *R, uint64_t i) {
  struct region_layout *l = R->l;
  uint64_t idx[ZMETA_MAX_DIMS], size;
  region_unit(&R->r, l->p_lin ? l->p_lin[i] : i, idx);
  struct zerr err = {0};
  int claim = 0;
  /* a region too small for a region record keeps each measured size on
   * its own, as a kept decode would: the next mount finds them */
  int rc = R->measure && i >= R->keep_to
               ? unit_size_measure(R->e, R->n, idx, R->np < LSIZE_MIN, &size,
                                   &claim, &err)
               : unit_size_claim(R->e, R->n, idx, &size, &claim, &err);
  __int128 d = 0;
  if (rc == 0) {
    d = (__int128)size - (__int128)l->line * unit_nin(R->n, idx);
    if (d > INT64_MAX || d <= -(__int128)INT64_MAX)
      rc = zerr_set(&err, EFBIG, "view: text exceeds 2^63 bytes");
  }
  if (rc < 0) {
    pthread_mutex_lock(&R->lock);
    if (i < R->fail_at) {
      R->fail_at = i;
      R->fail_err = err;
    }
    pthread_mutex_unlock(&R->lock);
    if (zerr_is_transient(-rc))
      atomic_store(&R->stop, 1);
    return;
  }
  l->p_cum[i] = (int64_t)d;
  if (claim && l->claimed) { /* checked before it is read (layout.c) */
    atomic_fetch_or_explicit(&l->claimed[i / 8], (uint8_t)(1u << (i % 8)),
                             memory_order_relaxed);
    uint64_t f = atomic_load_explicit(&l->first_claim, memory_order_relaxed);
    while (i < f && !atomic_compare_exchange_weak_explicit(
                        &l->first_claim, &f, i, memory_order_relaxed,
                        memory_order_relaxed))
      ;
  }
}

/* Whether to go on after a run: not past the deadline, and the rest
 * (judged from the rate so far) would end before it. */
static int run_in_time(struct lsize_run *R, uint64_t done) {
  if (!R->deadline_ns)
    return 1;
  uint64_t now = lsize_now_ns(), el = now - R->start_ns;
  if (now >= R->deadline_ns)
    return 0;
  if (done < LSIZE_JUDGE_UNITS || el < LSIZE_JUDGE_NS)
    return 1;
  uint64_t left = R->np - R->from - done;
  return (long double)el * left / done < (long double)(R->deadline_ns - now);
}

/* Take runs until none is left or the run stops. */
static void run_work(struct lsize_run *R) {
  for (;;) {
    if (atomic_load(&R->stop))
      return;
    if (engine_stopping(R->e)) { /* shutdown, or the caller's request */
      atomic_store(&R->stop, 1);
      return;
    }
    uint64_t a = atomic_fetch_add(&R->next, LSIZE_RUN);
    if (a >= R->np)
      return;
    uint64_t b = R->np - a < LSIZE_RUN ? R->np : a + LSIZE_RUN;
    for (uint64_t i = a; i < b && !atomic_load(&R->stop); i++)
      run_unit(R, i);
    uint64_t done = atomic_fetch_add(&R->learned, b - a) + (b - a);
    if (!run_in_time(R, done))
      atomic_store(&R->stop, 1);
  }
}

/* Worker: join the run unless the caller is done with it. */
static void run_job(void *arg, int cancelled) {
  struct lsize_run *R = arg;
  pthread_mutex_lock(&R->lock);
  int join = !cancelled && !R->closed;
  R->running += join;
  pthread_mutex_unlock(&R->lock);
  if (join) {
    run_work(R);
    pthread_mutex_lock(&R->lock);
    if (--R->running == 0)
      pthread_cond_broadcast(&R->idle);
    pthread_mutex_unlock(&R->lock);
  }
  run_put(R);
}

/* Should a region be learned keeping nothing (each unit decoded to
 * measure and let go)? Not while all its units fit in three quarters of
 * the cache (the rest for what readers hold meanwhile): the reader that
 * usually follows finds them decoded and lets each go as it passes
 * (unit_passing), so each unit is decoded once. `held` is what the memo
 * charges for the first unit, kept (its text, or its elements and
 * layout, and what holds them); 0 when it is not held (its size came
 * without a decode): its text size `size0` stands in, against a quarter
 * of the cache. Past that, kept units would push each other (and every
 * reader's) out: measure, all but the first few (keep_to). */
static int run_measures(const struct engine *e, uint64_t size0, size_t held,
                        uint64_t left) {
  if (held)
    return (long double)held * left > (long double)e->cache_size * 3 / 4;
  return (long double)size0 * left > (long double)e->cache_size / 4;
}

/* See lsize.h. */
int lsize_fill(struct engine *e, const struct znode *n, const struct region *r,
               struct region_layout *l, uint64_t from, uint64_t deadline_ns,
               uint64_t *fail_at, struct zerr *err) {
  *fail_at = UINT64_MAX;
  for (uint64_t i = from; i < l->np; i++)
    l->p_cum[i] = LSIZE_UNSET;
  if (from >= l->np)
    return 0;
  struct lsize_run *R = calloc(1, sizeof *R);
  if (!R)
    return zerr_set(err, ENOMEM, "out of memory");
  atomic_init(&R->refs, 1);
  pthread_mutex_init(&R->lock, NULL);
  pthread_cond_init(&R->idle, NULL);
  R->e = e;
  R->n = n;
  R->r = *r;
  R->l = l;
  R->from = from;
  R->np = l->np;
  R->fail_at = UINT64_MAX;
  R->start_ns = lsize_now_ns();
  R->deadline_ns = deadline_ns;
  atomic_init(&R->next, from + 1);
  atomic_init(&R->learned, 1);
  atomic_init(&R->stop, 0);
  /* The first unit here, kept: its size says whether the others are. */
  run_unit(R, from);
  if (R->fail_at == UINT64_MAX) {
    uint64_t idx[ZMETA_MAX_DIMS];
    region_unit(r, l->p_lin ? l->p_lin[from] : from, idx);
    __int128 s0 = (__int128)l->line * unit_nin(n, idx) + l->p_cum[from];
    R->measure = run_measures(e, (uint64_t)s0, unit_held_cost(e, n, idx),
                              l->np - from);
    /* A learning bounded by a deadline (a `stat` within size_wait, the
     * lookup's) keeps its first units all the same, up to half the ahead
     * budget (a unit's text and about as much again for what holds it):
     * the `cat` that usually follows reads them first, and decodes each
     * unit once. Not a learning of every size (a `tail`: it reads the
     * end), nor units of less text than LSIZE_KEEP_TEXT, which cost more
     * to hold than their text (and than their decode: the reader's
     * layout learns them alone). */
    uint64_t keep = deadline_ns && s0 >= LSIZE_KEEP_TEXT
                        ? e->ahead_budget / 2 / ((uint64_t)s0 + LSIZE_KEEP_TEXT)
                        : 0;
    R->keep_to = keep < l->np - from ? from + keep : l->np;
  }
  int jobs = e->ahead && R->fail_at == UINT64_MAX && l->np - from > LSIZE_RUN
                 ? pool_threads(e->ahead)
                 : 0;
  for (int t = 0; t < jobs; t++) {
    atomic_fetch_add(&R->refs, 1);
    if (pool_submit_first(e->ahead, run_job, R) < 0) {
      atomic_fetch_sub(&R->refs, 1); /* the caller's is still held */
      break;
    }
  }
  if (R->fail_at == UINT64_MAX)
    run_work(R);
  pthread_mutex_lock(&R->lock);
  R->closed = 1;
  while (R->running > 0)
    pthread_cond_wait(&R->idle, &R->lock);
  *fail_at = R->fail_at;
  if (R->fail_at != UINT64_MAX)
    *err = R->fail_err;
  pthread_mutex_unlock(&R->lock);
  run_put(R);
  return 0;
}

/* ---- records of many sizes ---- */

/* See lsize.h. */
int lsize_node_version(struct engine *e, const struct znode *n, uint64_t *v) {
  struct zerr err = {0};
  uint64_t h = 0x6c73697a65ull;
  if (store_prefix_version(e->store, n->path, v, &err) == 0)
    return 0;
  /* else every stored chunk's key, size and version, in C order */
  struct memo_ref *pref;
  if (e->store->remote || unit_presence(e, n, &pref, &err) < 0)
    return -1;
  const struct presence *p = (const struct presence *)memo_obj(pref);
  int rc = p->complete ? 0 : -1;
  char key[4096];
  for (uint64_t i = 0; rc == 0 && i < p->n; i++) {
    uint64_t cidx[ZMETA_MAX_DIMS], c = p->lin[i], size = 0, version = 0;
    for (int d = n->meta->ndim - 1; d >= 0; d--) {
      cidx[d] = c % n->meta->grid[d];
      c /= n->meta->grid[d];
    }
    if (node_chunk_key(n, cidx, key, sizeof key) < 0 ||
        store_version(e->store, key, &size, &version, &err) < 0)
      rc = -1; /* no version known (inline or remote bytes) */
    h = htab_hash_str(key) ^ (h * 0x9e3779b97f4a7c15ull);
    h = htab_hash_bytes(&size, sizeof size, h);
    h = htab_hash_bytes(&version, sizeof version, h);
  }
  memo_release(e->memo, pref);
  *v = h;
  return rc;
}

/* Append v as a varint to *p. */
static unsigned char *put_varint(unsigned char *p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = (unsigned char)(v | 0x80);
    v >>= 7;
  }
  *p++ = (unsigned char)v;
  return p;
}

/* A varint from [*p, end) into *v: 0, or -1 when it is cut or too long. */
static int get_varint(const unsigned char **p, const unsigned char *end,
                      uint64_t *v) {
  uint64_t x = 0;
  for (int s = 0; s < 64 && *p < end; s += 7) {
    unsigned char b = *(*p)++;
    x |= (uint64_t)(b & 0x7f) << s;
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return -1;
}

/* See lsize.h. */
void lsize_keep_sizes(struct engine *e, const struct sizeindex_id *id,
                      uint64_t check, const uint64_t *sizes, uint64_t n) {
  if (!e->sizeidx || n > SIZE_MAX / 10)
    return;
  /* each size as the zigzag difference from the one before: a byte or
   * two for units of similar text */
  unsigned char *buf = malloc((size_t)n * 10 + 1), *p = buf;
  if (!buf)
    return;
  uint64_t prev = 0, total = 0;
  for (uint64_t i = 0; i < n; i++) {
    int64_t d = (int64_t)(sizes[i] - prev);
    p = put_varint(p, ((uint64_t)d << 1) ^ (uint64_t)(d >> 63));
    prev = sizes[i];
    total += sizes[i];
  }
  struct sizeindex_rec rec = {total, check};
  sizeblob_store(e->sizeidx, id, &rec, buf, (size_t)(p - buf)); /* a failure:
                                                       learned next time */
  free(buf);
}

/* See lsize.h. */
int lsize_load_sizes(struct engine *e, const struct sizeindex_id *id,
                     uint64_t check, uint64_t *sizes, uint64_t n) {
  struct sizeindex_rec rec;
  void *data;
  size_t len;
  if (!e->sizeidx || !sizeblob_lookup(e->sizeidx, id, &rec, &data, &len))
    return 0;
  const unsigned char *p = data, *end = p + len;
  uint64_t prev = 0, total = 0;
  int ok = rec.lines == check;
  for (uint64_t i = 0; ok && i < n; i++) {
    uint64_t z = 0;
    ok = get_varint(&p, end, &z) == 0;
    sizes[i] = prev + (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));
    ok = ok && sizes[i] < UNIT_SIZE_CLAIM;
    prev = sizes[i];
    total += sizes[i];
  }
  free(data);
  return ok && p == end && total == rec.text_size;
}

/* ---- region records ---- */

/* The region record's identity of r (its key in key, len bytes). 0, or
 * -1 when it has none (no index, too few units, a store without
 * versions, a key too long). */
static int region_ident(struct engine *e, const struct znode *n,
                        const struct region *r, const struct region_layout *l,
                        char *key, size_t len, struct sizeindex_id *id) {
  if (!e->sizeidx || e->store->remote || !n->meta || !n->meta->root ||
      !n->meta_hash || l->np < LSIZE_MIN)
    return -1;
  const char *tag = n->form.csv ? "csv" : n->form.cf ? "cf" : "txt";
  int w = snprintf(key, len, "#region %s %s", tag, *n->path ? n->path : ".");
  if (w < 0 || (size_t)w >= len)
    return -1;
  for (int d = 0; r->is_chunk && d < r->ndim; d++) {
    int x = snprintf(key + w, len - (size_t)w, "%c%llu", d ? ',' : '#',
                     (unsigned long long)r->cidx[d]);
    if (x < 0 || (size_t)x >= len - (size_t)w)
      return -1;
    w += x;
  }
  /* the bytes of every stored chunk: the store's version of all of the
   * array's keys at once, else each chunk's */
  uint64_t v;
  const struct znode *base = n->base ? n->base : n;
  if (lsize_node_version(e, base, &v) < 0)
    return -1;
  v = htab_hash_bytes(&l->np, sizeof l->np, v);
  *id = (struct sizeindex_id){
      e->store->location, key, l->np, v, unit_text_hash(n), UNIT_TEXT_RULES};
  return 0;
}

/* Stored unit i's text size in complete layout l. */
static uint64_t unit_size_of(const struct znode *n, const struct region *r,
                             const struct region_layout *l, uint64_t i) {
  uint64_t idx[ZMETA_MAX_DIMS];
  region_unit(r, l->p_lin ? l->p_lin[i] : i, idx);
  int64_t d = l->p_cum[i] - (i ? l->p_cum[i - 1] : 0);
  return (uint64_t)((__int128)l->line * unit_nin(n, idx) + d);
}

/* See lsize.h. */
void lsize_keep(struct engine *e, const struct znode *n, const struct region *r,
                const struct region_layout *l) {
  char key[4200];
  struct sizeindex_id id;
  /* only the truth: no size from a record, or every claim checked */
  uint64_t claim0 = atomic_load_explicit(&l->first_claim, memory_order_relaxed);
  if (l->from_record ||
      (claim0 != UINT64_MAX &&
       atomic_load_explicit(&l->checked, memory_order_acquire) < l->np) ||
      region_ident(e, n, r, l, key, sizeof key, &id) < 0 ||
      l->np > SIZE_MAX / sizeof(uint64_t))
    return;
  uint64_t *sizes = malloc((size_t)l->np * sizeof *sizes);
  if (!sizes)
    return;
  for (uint64_t i = 0; i < l->np; i++)
    sizes[i] = unit_size_of(n, r, l, i);
  /* (the elements as the record's check: the shape the sizes are of) */
  lsize_keep_sizes(e, &id, r->total_elems, sizes, l->np);
  free(sizes);
}

/* See lsize.h. */
int lsize_load(struct engine *e, const struct znode *n, const struct region *r,
               struct region_layout *l) {
  char key[4200];
  struct sizeindex_id id;
  if (node_sizes_gen(n) || region_ident(e, n, r, l, key, sizeof key, &id) < 0 ||
      l->np > SIZE_MAX / sizeof(uint64_t))
    return 0;
  uint64_t *sizes = malloc((size_t)l->np * sizeof *sizes);
  int ok = sizes && lsize_load_sizes(e, &id, r->total_elems, sizes, l->np);
  for (uint64_t i = 0; ok && i < l->np; i++) {
    uint64_t idx[ZMETA_MAX_DIMS];
    region_unit(r, l->p_lin ? l->p_lin[i] : i, idx);
    __int128 d = (__int128)sizes[i] - (__int128)l->line * unit_nin(n, idx);
    ok = d < INT64_MAX && d > -(__int128)INT64_MAX;
    if (ok)
      l->p_cum[i] = (int64_t)d;
  }
  free(sizes);
  if (!ok)
    return 0;       /* a record that does not add up: learned again */
  if (l->claimed) { /* claims, each checked when its unit is read */
    for (uint64_t b = 0; b < l->np / 8 + 1; b++)
      atomic_store_explicit(&l->claimed[b], 0xff, memory_order_relaxed);
    atomic_store_explicit(&l->first_claim, 0, memory_order_relaxed);
  }
  return 1;
}

/* ---- table records ---- */

/* The identity of the record of table t (dimension dim of group g): its
 * key in key (len bytes); the version of every column's chunks and what
 * makes its rows' text. 0, or -1 when it has none (no index, a store
 * without versions). */
static int table_ident(struct engine *e, const struct znode *g, const char *dim,
                       const struct table *t, char *key, size_t len,
                       struct sizeindex_id *id) {
  if (!e->sizeidx || e->store->remote)
    return -1;
  int w = snprintf(key, len, "#table %s %s", *g->path ? g->path : ".", dim);
  if (w < 0 || (size_t)w >= len)
    return -1;
  /* the rows' text: the header, then each column's bytes and rules */
  uint64_t v = htab_hash_bytes(t->header, t->header_len, t->nrows);
  uint64_t rules = htab_hash_bytes("table", 5, t->ncols);
  for (size_t c = 0; c < t->ncols; c++) {
    const struct tcol *col = &t->cols[c];
    const struct znode *n = col->n, *base = n->base ? n->base : n;
    uint64_t cv;
    if (!n->meta_hash || lsize_node_version(e, base, &cv) < 0)
      return -1;
    v = htab_hash_bytes(&cv, sizeof cv, v);
    uint64_t h = unit_text_hash(n);
    int flags[3] = {col->raw, col->number, col->floating};
    rules = htab_hash_bytes(&h, sizeof h, rules);
    rules = htab_hash_bytes(flags, sizeof flags, rules);
    rules = htab_hash_str(col->name) ^ (rules * 0x9e3779b97f4a7c15ull);
    if (col->field)
      rules = htab_hash_bytes(&c, sizeof c, rules ^ 0x6669656c64ull);
  }
  *id = (struct sizeindex_id){e->store->location, key, t->nrows, v, rules,
                              UNIT_TEXT_RULES};
  return 0;
}

/* See lsize.h. */
void lsize_table_keep(struct engine *e, const struct znode *g, const char *dim,
                      const struct table *t, const uint64_t *sizes,
                      uint64_t nb) {
  char key[1200];
  struct sizeindex_id id;
  if (table_ident(e, g, dim, t, key, sizeof key, &id) == 0)
    lsize_keep_sizes(e, &id, t->nrows, sizes, nb);
}

/* See lsize.h. */
int lsize_table_claim(struct engine *e, const struct znode *g, const char *dim,
                      const struct table *t, uint64_t nb, uint64_t *size) {
  char key[1200];
  struct sizeindex_id id;
  uint64_t *sz = e->sizeidx && nb <= SIZE_MAX / sizeof *sz
                     ? malloc((size_t)nb * sizeof *sz)
                     : NULL;
  int ok = sz && table_ident(e, g, dim, t, key, sizeof key, &id) == 0 &&
           lsize_load_sizes(e, &id, t->nrows, sz, nb);
  *size = 0;
  for (uint64_t b = 0; ok && b < nb; b++)
    *size += sz[b];
  free(sz);
  return ok;
}
