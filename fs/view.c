/* view.c - sizes and ranged reads of chunk views and array views (see
 * view.h for the model). */
#include "view.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif
#include <string.h>

#include "../codecs/chain.h"
#include "../src/util/buf.h"
#include "../src/util/pool.h"
#include "../src/store/presence.h"

/* Largest segment table of one row of units (entries). */
#define VIEW_MAX_SEGMENTS (64u << 20)
/* Units, rows and data sections a cursor keeps. */
#define VIEW_WINDOWS 4
/* Released pins of at least this many bytes are handed back to the system
 * at once (cursor_room). */
#define VIEW_TRIM_MIN ((size_t)4 << 20)
/* Units a reader may have decoded ahead of it. */
#define VIEW_AHEAD_MAX 8
/* Bytes read in sequence before decoding ahead starts: `head`, `file`
 * and `tail` read less, and decode nothing they do not show. */
#define VIEW_AHEAD_AFTER (256u << 10)
/* Reads this close to where the last one ended still count as in
 * sequence (the kernel's read-ahead sends several reads at once). */
#define VIEW_SEQ_SLACK (4u << 20)
/* Units handled between looks at the stop flag. */
#define VIEW_STOP_EVERY 256
/* A job that learns sizes for a layout covers a run of units whose text
 * adds up to about this much (judged by the first unit), at most
 * VIEW_RUN_MAX units: a job per 16-byte chunk costs more in wake-ups than
 * the chunk's decoding. Units whose text is smaller than VIEW_RUN_TEXT /
 * VIEW_RUN_MAX (256 bytes) are not fanned out at all: measured on 2 cores
 * (100,000 kerchunk chunks of 4 int32), the fill alone learned them in
 * 0.9-1.1 s, runs of 256 units took 1.2-1.7 s, a job a unit 2.2-2.5 s. */
#define VIEW_RUN_TEXT (64u << 10)
#define VIEW_RUN_MAX 256

/* ---- cursors ---- */

/* Units one cursor has decoded ahead (or is decoding). */
struct ahead_slot {
  uint64_t rl;           /* region-linear unit; AHEAD_FREE: slot unused */
  int ready;             /* its job is done: the pins below (may be NULL) */
  struct memo_ref *unit; /* the decoded unit */
  struct memo_ref *data; /* its deferred data section, decoded */
};
#define AHEAD_FREE UINT64_MAX

struct view_cursor {
  pthread_mutex_t lock;               /* guards what follows (leaf lock) */
  _Atomic int refs;                   /* the open file's, one per job */
  int closed;                         /* released: jobs drop what they made */
  struct memo_ref *layout;            /* layout last read through */
  struct memo_ref *win[VIEW_WINDOWS]; /* most recently used first */
  uint64_t next_off;                  /* where the reader's last read ended */
  uint64_t seq;        /* bytes it has read in sequence up to there */
  uint64_t ahead_next; /* next region-linear unit to queue */
  size_t est;          /* cost of a unit lately read */
  struct ahead_slot slot[VIEW_AHEAD_MAX];
};

/* An empty cursor. */
struct view_cursor *view_cursor_new(void) {
  struct view_cursor *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_init(&c->lock, NULL);
  atomic_init(&c->refs, 1);
  for (int i = 0; i < VIEW_AHEAD_MAX; i++)
    c->slot[i].rl = AHEAD_FREE;
  return c;
}

/* Drop a reference; the last one frees (everything was released). */
static void cursor_unref(struct view_cursor *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1)
    return;
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* Unpin everything and drop the file's reference; jobs still running for
 * this cursor keep it alive and release what they make. */
void view_cursor_free(struct engine *e, struct view_cursor *c) {
  if (!c)
    return;
  struct memo_ref *drop[2 * VIEW_AHEAD_MAX + VIEW_WINDOWS + 1];
  int nd = 0;
  pthread_mutex_lock(&c->lock);
  c->closed = 1;
  drop[nd++] = c->layout;
  c->layout = NULL;
  for (int i = 0; i < VIEW_WINDOWS; i++) {
    drop[nd++] = c->win[i];
    c->win[i] = NULL;
  }
  for (int i = 0; i < VIEW_AHEAD_MAX; i++) {
    drop[nd++] = c->slot[i].unit;
    drop[nd++] = c->slot[i].data;
    c->slot[i] = (struct ahead_slot){AHEAD_FREE, 0, NULL, NULL};
  }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < nd; i++)
    memo_release(e->memo, drop[i]);
  cursor_unref(c);
}

/* Drop a cursor's windows beyond the first `keep`. */
static void cursor_trim(struct engine *e, struct view_cursor *c, int keep) {
  struct memo_ref *drop[VIEW_WINDOWS] = {0};
  pthread_mutex_lock(&c->lock);
  for (int i = keep; i < VIEW_WINDOWS; i++) {
    drop[i] = c->win[i];
    c->win[i] = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < VIEW_WINDOWS; i++)
    memo_release(e->memo, drop[i]);
}

/* Hand a pin over to the cursor: it keeps it as its layout or its newest
 * window (dropping the oldest), or, with no cursor, it is released. When
 * everything pinned exceeds the window cap the cursor lets go of its older
 * windows, then of all of them. */
static void cursor_keep(struct engine *e, struct view_cursor *c,
                        struct memo_ref *r, int is_layout) {
  if (!r)
    return;
  if (!c) {
    memo_release(e->memo, r);
    return;
  }
  struct memo_ref *drop = NULL;
  pthread_mutex_lock(&c->lock);
  if (is_layout) {
    drop = c->layout == r ? r : c->layout;
    c->layout = r;
  } else {
    int i = 0;
    while (i < VIEW_WINDOWS && c->win[i] != r)
      i++;
    if (i < VIEW_WINDOWS)
      drop = r; /* kept already: our own pin is extra */
    else
      drop = c->win[i = VIEW_WINDOWS - 1];
    memmove(c->win + 1, c->win, (size_t)i * sizeof c->win[0]);
    c->win[0] = r;
  }
  pthread_mutex_unlock(&c->lock);
  memo_release(e->memo, drop);
  /* Readers use their newest one or two windows; older ones only spare
   * a decode when the cache cannot hold them, so they go first when
   * everything pinned outgrows the cache, and all go past the cap. */
  size_t pinned = memo_pinned(e->memo);
  if (pinned > e->cache_size) {
    cursor_trim(e, c, 2);
    pinned = memo_pinned(e->memo);
  }
  if (pinned > e->window_cap) {
    cursor_trim(e, c, 1);
    if (memo_pinned(e->memo) > e->window_cap)
      cursor_trim(e, c, 0);
  }
}

/* About to decode what key names while everything pinned exceeds the
 * cache: a sequential reader has moved on, so its older windows go first,
 * and a unit larger than the whole cache is held once rather than beside
 * the one before it (a peak of two such units). Nothing is dropped when
 * the object is in the memo already (no decode: the windows may be what
 * the reader is using). */
static void cursor_room(struct engine *e, struct view_cursor *c,
                        const struct memo_key *key) {
  if (!c || memo_pinned(e->memo) <= e->cache_size)
    return;
  struct memo_ref *r;
  if (memo_peek(e->memo, key, &r)) {
    memo_release(e->memo, r);
    return;
  }
  size_t before = memo_pinned(e->memo);
  cursor_trim(e, c, 0);
#ifdef __GLIBC__
  /* What that freed sits in the malloc arena of whichever thread freed it
   * (16 FUSE threads, each its own arena) and would stay in the RSS beside
   * the next unit: hand it back now. Only under this pressure (pins over
   * the whole cache) and for large units, so a roomy cache keeps glibc's
   * reuse of freed blocks, which spares page faults, and small units do
   * not pay for a walk of the arenas. */
  size_t after = memo_pinned(e->memo);
  if (before > after && before - after >= VIEW_TRIM_MIN)
    malloc_trim(0);
#else
  (void)before;
#endif
}

/* ---- regions ---- */

/* A box of units read in C order of their elements. */
struct region {
  int ndim;
  int is_chunk;                                      /* a chunk's view */
  uint64_t cidx[ZMETA_MAX_DIMS];                     /* that chunk */
  uint64_t lo[ZMETA_MAX_DIMS], hi[ZMETA_MAX_DIMS];   /* unit range */
  uint64_t elo[ZMETA_MAX_DIMS], ehi[ZMETA_MAX_DIMS]; /* element box */
  uint64_t nslabs;      /* unit rows along dimension 0 */
  uint64_t per_slab;    /* units in a slab */
  uint64_t nunits;      /* nslabs * per_slab */
  uint64_t row_elems;   /* in-bounds elements per index along dimension 0 */
  uint64_t total_elems; /* in-bounds elements of the region */
};

/* Derived counts of a region whose unit range is set; -EFBIG when they do
 * not fit in 64 bits. */
static int region_finish(const struct znode *n, struct region *r,
                         struct zerr *err) {
  int nd = r->ndim;
  r->per_slab = 1;
  r->total_elems = 1;
  uint64_t rest = 1; /* elements across dimensions 1.. */
  for (int d = 0; d < nd; d++) {
    r->elo[d] = node_unit_start(n, d, r->lo[d]);
    /* a unit inside the grid starts inside the array */
    r->ehi[d] = r->hi[d] < n->ugrid[d] ? node_unit_start(n, d, r->hi[d])
                                       : n->meta->shape[d];
    if (d && zmul_u64(r->per_slab, r->hi[d] - r->lo[d], &r->per_slab) < 0)
      return zerr_set(err, EFBIG, "view: too many chunks");
    if (d)
      rest *= r->ehi[d] - r->elo[d]; /* <= the array's element count */
    r->total_elems *= r->ehi[d] - r->elo[d];
  }
  r->nslabs = nd ? r->hi[0] - r->lo[0] : 1;
  if (zmul_u64(r->nslabs, r->per_slab, &r->nunits) < 0)
    return zerr_set(err, EFBIG, "view: too many chunks");
  r->row_elems = rest;
  return 0;
}

/* The region of the whole array. */
static int region_of_array(const struct znode *n, struct region *r,
                           struct zerr *err) {
  memset(r, 0, sizeof *r);
  r->ndim = n->meta->ndim;
  for (int d = 0; d < r->ndim; d++)
    r->hi[d] = n->ugrid[d];
  return region_finish(n, r, err);
}

/* The region of chunk idx (its units inside the array). */
static int region_of_chunk(const struct znode *n, const uint64_t *idx,
                           struct region *r, struct zerr *err) {
  memset(r, 0, sizeof *r);
  r->ndim = n->meta->ndim;
  r->is_chunk = 1;
  for (int d = 0; d < r->ndim; d++) {
    if (idx[d] >= n->meta->grid[d])
      return zerr_set(err, ENOENT, "chunk outside the grid");
    r->cidx[d] = idx[d];
    node_chunk_units(n, d, idx[d], &r->lo[d], &r->hi[d]);
  }
  return region_finish(n, r, err);
}

/* Memo key of something about region r (with an optional slab index). */
static void region_key(struct memo_key *k, enum engine_level level,
                       const struct znode *n, const struct region *r,
                       const uint64_t *slab) {
  int w = 0;
  k->level = (uint8_t)level;
  k->owner = n;
  k->v[w++] = (uint64_t)r->is_chunk;
  if (r->is_chunk)
    for (int d = 0; d < r->ndim; d++)
      k->v[w++] = r->cidx[d];
  if (slab)
    k->v[w++] = *slab;
  k->n = (uint8_t)w;
}

/* Unit coordinates of region-linear unit rl (C order over the box). */
static void region_unit(const struct region *r, uint64_t rl, uint64_t *idx) {
  for (int d = r->ndim - 1; d >= 0; d--) {
    uint64_t span = r->hi[d] - r->lo[d];
    idx[d] = r->lo[d] + rl % span;
    rl /= span;
  }
}

/* ---- layouts ---- */

/* Where each slab's text starts, from the stored units' sizes: every unit
 * is first taken as the fill value (arithmetic), then corrected by the
 * difference each stored unit makes. */
struct region_layout {
  struct zobj obj;
  uint64_t line;   /* bytes of a fill line (fill text + newline) */
  uint64_t np;     /* stored units */
  uint64_t *p_lin; /* their region-linear indices, sorted; NULL when every
                      unit of the region is listed (p_lin[i] == i) */
  int64_t *p_cum;  /* sum of (size - fill size) of stored units 0..i */
  uint64_t total;  /* text size of the region */
};

/* Release a layout. */
static void layout_destroy(struct zobj *o) {
  struct region_layout *l = (struct region_layout *)o;
  free(l->p_lin);
  free(l->p_cum);
  free(l);
}

/* Stored units with a region-linear index below x. */
static uint64_t layout_rank(const struct region_layout *l, uint64_t x) {
  if (!l->p_lin)
    return x < l->np ? x : l->np;
  return zrank_u64(l->p_lin, l->np, x);
}

/* Is region-linear unit rl stored? */
static int layout_stored(const struct region_layout *l, uint64_t rl) {
  uint64_t r = layout_rank(l, rl);
  return r < l->np && (!l->p_lin || l->p_lin[r] == rl);
}

/* Text offset where slab k starts (k == nslabs: the end). */
static uint64_t slab_off(const struct znode *n, const struct region *r,
                         const struct region_layout *l, uint64_t k) {
  if (k >= r->nslabs)
    return l->total;
  uint64_t rank = layout_rank(l, k * r->per_slab);
  /* rows of the region before the slab (slabs may differ in height) */
  uint64_t rows = r->ndim ? node_unit_start(n, 0, r->lo[0] + k) - r->elo[0] : 0;
  __int128 off = (__int128)l->line * ((__int128)rows * r->row_elems) +
                 (rank ? l->p_cum[rank - 1] : 0);
  return (uint64_t)off;
}

/* The slab whose text holds offset pos (< total). */
static uint64_t slab_find(const struct znode *n, const struct region *r,
                          const struct region_layout *l, uint64_t pos) {
  uint64_t lo = 0, hi = r->nslabs; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (slab_off(n, r, l, mid) <= pos)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* What a job does with its unit: learn its size (decoding it only when
 * the size needs that), decode it, or decode it and its deferred data. */
enum { AHEAD_SIZE, AHEAD_UNIT, AHEAD_DATA };

/* A fill (a layout, a row) that has workers decode its units ahead of
 * it: how far it has come itself. A job for a unit the fill has passed
 * is stale (the fill decoded that unit) and does nothing: with a small
 * cache it would decode it a second time. */
struct fan {
  _Atomic int refs;     /* the fill's and one per job */
  _Atomic uint64_t pos; /* units before this one are done */
};

/* A new progress record (NULL: fan out nothing). */
static struct fan *fan_new(void) {
  struct fan *f = malloc(sizeof *f);
  if (f) {
    atomic_init(&f->refs, 1);
    atomic_init(&f->pos, 0);
  }
  return f;
}

/* Drop a reference; NULL-safe. */
static void fan_unref(struct fan *f) {
  if (f && atomic_fetch_sub(&f->refs, 1) == 1)
    free(f);
}

/* The fill is done: every job of it is stale now. */
static void fan_done(struct fan *f) {
  if (f)
    atomic_store(&f->pos, UINT64_MAX);
  fan_unref(f);
}

static int ahead_submit(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t rl,
                        struct view_cursor *c, int what, struct fan *fan,
                        uint64_t at);
static int ahead_submit_sizes(struct engine *e, const struct znode *n,
                              const struct region *r, struct fan *fan,
                              uint64_t at, const uint64_t *run, uint32_t nrun);

/* What layout, size and row fills need. */
struct region_job {
  struct engine *e;
  const struct znode *n;
  const struct region *r;
  const struct region_layout *l; /* rows */
  uint64_t k;                    /* rows: the slab */
};

/* The stored units of an array region from the store's listing: chunks
 * are units, or each stored shard brings its inner chunks. *lin is NULL
 * (every unit counts as stored) when the store cannot list the array. */
static int layout_stored_units(struct region_job *j, uint64_t **lin,
                               uint64_t *np, struct zerr *err) {
  const struct znode *n = j->n;
  const struct region *r = j->r;
  uint64_t max = j->e->env.max_decoded / (2 * sizeof(uint64_t));
  *lin = NULL;
  *np = r->nunits;
  if (r->is_chunk) /* a chunk view exists only for a stored chunk */
    goto dense;
  struct memo_ref *pref;
  ZTRY(engine_presence(j->e, n, &pref, err));
  const struct presence *p = (const struct presence *)memo_obj(pref);
  int rc = 0;
  if (!p->complete) {
    memo_release(j->e->memo, pref);
    goto dense;
  }
  uint64_t per = 1;
  for (int d = 0; d < r->ndim; d++)
    per *= n->per[d]; /* units of a shard (at most): <= its elements */
  uint64_t cap = p->n, cnt = 0;
  if (zmul_u64(cap, per, &cap) < 0 || cap > max) {
    rc = zerr_set(err, EFBIG, "view: too many stored chunks to lay out");
    engine_log(j->e, *n->path ? n->path : ".", err->msg);
  }
  uint64_t *v = rc == 0 ? malloc((size_t)(cap ? cap : 1) * sizeof *v) : NULL;
  if (rc == 0 && !v)
    rc = zerr_set(err, ENOMEM, "out of memory");
  for (uint64_t i = 0; rc == 0 && i < p->n; i++) {
    uint64_t c = p->lin[i], cidx[ZMETA_MAX_DIMS];
    for (int d = r->ndim - 1; d >= 0; d--) {
      cidx[d] = c % n->meta->grid[d];
      c /= n->meta->grid[d];
    }
    /* The chunk's units, clipped to the grid, in C order. */
    uint64_t ulo[ZMETA_MAX_DIMS], uhi[ZMETA_MAX_DIMS], u[ZMETA_MAX_DIMS];
    int empty = 0;
    for (int d = 0; d < r->ndim; d++) {
      node_chunk_units(n, d, cidx[d], &ulo[d], &uhi[d]);
      u[d] = ulo[d];
      empty |= ulo[d] >= uhi[d];
    }
    for (; !empty;) {
      uint64_t rl = 0;
      for (int d = 0; d < r->ndim; d++)
        rl = rl * n->ugrid[d] + u[d];
      v[cnt++] = rl;
      int d = r->ndim - 1;
      for (; d >= 0; d--) {
        if (++u[d] < uhi[d])
          break;
        u[d] = ulo[d];
      }
      if (d < 0)
        break;
    }
  }
  memo_release(j->e->memo, pref);
  if (rc < 0) {
    free(v);
    return rc;
  }
  if (n->shard)
    zsort_u64(v, cnt);
  *lin = v;
  *np = cnt;
  return 0;
dense:
  if (r->nunits > max) {
    if (r->is_chunk)
      zerr_set(err, EFBIG,
               "view: the shard holds %llu inner chunks, too many to lay "
               "out within max_decode",
               (unsigned long long)r->nunits);
    else
      zerr_set(err, EFBIG,
               "view: the store cannot list this array and its %llu chunks "
               "are too many to probe",
               (unsigned long long)r->nunits);
    char key[1024];
    int named =
        r->is_chunk && engine_chunk_key(n, r->cidx, key, sizeof key) >= 0;
    engine_log(j->e, named ? key : *n->path ? n->path : ".", err->msg);
    return -EFBIG;
  }
  return 0;
}

/* Sizes are learned by decoding: have the workers decode the next few
 * units whose sizes are unknown while the fill waits for unit i, so a
 * first `stat` uses every core. The units decoded stay in the cache for
 * the reads that usually follow. Small units go in runs of consecutive
 * ones, a job each (VIEW_RUN_TEXT). */
static void layout_fan_out(struct region_job *j, const struct region_layout *l,
                           uint64_t i, uint64_t *queued, struct fan *fan) {
  struct engine *e = j->e;
  if (!e->ahead || !fan)
    return;
  atomic_store(&fan->pos, i);
  /* As many units as the ahead budget holds, judged by the size of the
   * first one's text (this thread learned it first, alone). */
  if (i == 0)
    return;
  uint64_t jobs = 2 * (uint64_t)pool_threads(e->ahead) + 2, size0, run = 1;
  struct memo_key k0;
  uint64_t idx0[ZMETA_MAX_DIMS];
  region_unit(j->r, l->p_lin ? l->p_lin[0] : 0, idx0);
  engine_key(&k0, ELEVEL_UNIT_SIZE, j->n, idx0, NULL, 0);
  int known0 = memo_value_peek(e->memo, &k0, &size0) && size0;
  if (known0 && size0 < VIEW_RUN_TEXT / VIEW_RUN_MAX)
    return; /* cheaper here than handed over */
  if (known0 && size0 < VIEW_RUN_TEXT / 2)
    run = VIEW_RUN_TEXT / size0;
  uint64_t win = jobs * run;
  if (known0 && e->ahead_budget / size0 < win)
    win = e->ahead_budget / size0;
  if (*queued <= i)
    *queued = i + 1; /* unit i is this thread's own */
  while (*queued < l->np && *queued <= i + win) {
    /* Units [*queued, *queued + nrun), those of unknown size among them
     * (all of a run: its job skips what it finds known). */
    uint64_t rls[VIEW_RUN_MAX];
    uint32_t nrun = 0, unknown = 0;
    for (; nrun < run && *queued + nrun < l->np; nrun++) {
      uint64_t at = *queued + nrun, size, idx[ZMETA_MAX_DIMS];
      struct memo_key k;
      rls[nrun] = l->p_lin ? l->p_lin[at] : at;
      region_unit(j->r, rls[nrun], idx);
      engine_key(&k, ELEVEL_UNIT_SIZE, j->n, idx, NULL, 0);
      unknown += !memo_value_peek(e->memo, &k, &size);
    }
    if (unknown &&
        ahead_submit_sizes(e, j->n, j->r, fan, *queued, rls, nrun) < 0)
      break;
    *queued += nrun;
  }
}

/* Fill: a region's layout (needs every stored unit's size once). */
static int layout_fill(void *ctx, struct zobj **obj, size_t *cost,
                       struct zerr *err) {
  struct region_job *j = ctx;
  const struct znode *n = j->n;
  const struct region *r = j->r;
  struct region_layout *l = calloc(1, sizeof *l);
  if (!l)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&l->obj, layout_destroy);
  l->line = n->form.fill_len + 1;
  int rc = layout_stored_units(j, &l->p_lin, &l->np, err);
  if (rc == 0 && !(l->p_cum = malloc((size_t)(l->np ? l->np : 1) * 8)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  __int128 cum = 0;
  uint64_t queued = 0; /* units before this one went to the workers */
  struct fan *fan = j->e->ahead && l->np > 1 ? fan_new() : NULL;
  for (uint64_t i = 0; rc == 0 && i < l->np; i++) {
    if (i % VIEW_STOP_EVERY == 0 && (rc = engine_check_stop(j->e, err)) < 0)
      break;
    layout_fan_out(j, l, i, &queued, fan);
    uint64_t idx[ZMETA_MAX_DIMS], size;
    region_unit(r, l->p_lin ? l->p_lin[i] : i, idx);
    rc = engine_unit_size(j->e, n, idx, &size, err);
    if (rc == 0)
      cum += (__int128)size - (__int128)l->line * engine_unit_nin(n, idx);
    if (rc == 0 && (cum > INT64_MAX || cum < -(__int128)INT64_MAX))
      rc = zerr_set(err, EFBIG, "view: text exceeds 2^63 bytes");
    if (rc == 0)
      l->p_cum[i] = (int64_t)cum;
  }
  fan_done(fan);
  __int128 total = (__int128)l->line * r->total_elems + cum;
  if (rc == 0 && (total < 0 || total > INT64_MAX))
    rc = zerr_set(err, EFBIG, "view: text exceeds 2^63 bytes");
  if (rc < 0) {
    zobj_put(&l->obj);
    return rc;
  }
  l->total = (uint64_t)total;
  /* The size outlives the layout (and answers lazy stats). */
  struct memo_key sk;
  region_key(&sk, ELEVEL_REGION_SIZE, n, r, NULL);
  memo_value_put(j->e->memo, &sk, l->total);
  *obj = &l->obj;
  *cost = sizeof *l + (size_t)l->np * (l->p_lin ? 16 : 8);
  return 0;
}

/* The layout of region r (a pin). */
static int layout_get(struct engine *e, const struct znode *n,
                      const struct region *r, struct memo_ref **out,
                      struct zerr *err) {
  struct memo_key k;
  region_key(&k, ELEVEL_LAYOUT, n, r, NULL);
  struct region_job j = {e, n, r, NULL, 0};
  return memo_get(e->memo, &k, layout_fill, &j, out, err);
}

/* Fill: a region's text size, from its layout. */
static int region_size_fill(void *ctx, uint64_t *value, struct zerr *err) {
  struct region_job *j = ctx;
  struct memo_ref *ref;
  ZTRY(layout_get(j->e, j->n, j->r, &ref, err));
  *value = ((const struct region_layout *)memo_obj(ref))->total;
  memo_release(j->e->memo, ref);
  return 0;
}

/* Text size of a region, remembered among the learned sizes. */
static int region_size(struct engine *e, const struct znode *n,
                       const struct region *r, uint64_t *size,
                       struct zerr *err) {
  struct memo_key k;
  region_key(&k, ELEVEL_REGION_SIZE, n, r, NULL);
  struct region_job j = {e, n, r, NULL, 0};
  return memo_value(e->memo, &k, region_size_fill, &j, size, err);
}

/* ---- decoding ahead ----
 *
 * A reader going through a view in sequence has the units after the one
 * it reads decoded by the engine's workers (src/util/pool.h) meanwhile, so it
 * finds them ready: decoding runs in parallel with the kernel's copying
 * and on every core. The cursor keeps those units pinned until the reader
 * passes them; how many is bounded by the engine's ahead budget (a part of
 * the cache) divided by the cost of the units read lately. A row of
 * units is likewise decoded by the workers together (row_fill). Jobs are
 * hints: a full queue or a failure only means the reader decodes itself
 * (and sees the failure, logged once by the engine). */

/* One unit to decode ahead. */
struct ahead_job {
  struct engine *e;
  const struct znode *n;
  struct region r;
  uint64_t rl;           /* region-linear unit */
  struct view_cursor *c; /* holds a reference; NULL: release at once */
  int what;              /* AHEAD_SIZE, AHEAD_UNIT or AHEAD_DATA */
  struct fan *fan;       /* a fill's progress (a reference), or NULL */
  uint64_t at;           /* this unit's place in that fill */
  uint32_t nrun;         /* AHEAD_SIZE: units run[0..nrun) at places at.. */
  uint64_t run[];
};

/* Decode a unit (and its deferred data) into the memo; pins in *u, *d. */
static void ahead_decode(struct ahead_job *j, struct memo_ref **u,
                         struct memo_ref **d) {
  struct zerr err = {0};
  uint64_t idx[ZMETA_MAX_DIMS], size;
  region_unit(&j->r, j->rl, idx);
  if (j->what == AHEAD_SIZE) {
    for (uint32_t k = 0; k < j->nrun; k++) {
      /* Passed by the fill (which learned it) or the fill stopped. */
      if (atomic_load(&j->fan->pos) > j->at + k)
        continue;
      region_unit(&j->r, j->run[k], idx);
      zerr_clear(&err);
      (void)engine_unit_size(j->e, j->n, idx, &size, &err);
    }
    return;
  }
  if (engine_unit(j->e, j->n, idx, u, &err) < 0) {
    *u = NULL;
    return;
  }
  const struct chunk_text *ct = engine_ref_unit(*u), *rct;
  struct bytesrc *src = NULL;
  /* a reader in sequence reads it all: decode its data too */
  if (j->what == AHEAD_DATA &&
      engine_unit_src(j->e, j->n, ct, &rct, &src, d, &err) == 0)
    bytesrc_unref(src);
}

/* A worker's job: decode, then hand the pins to the cursor's slot (or let
 * them go when the reader moved on or closed the file). */
static void ahead_run(void *arg, int cancelled) {
  struct ahead_job *j = arg;
  struct view_cursor *c = j->c;
  struct memo_ref *u = NULL, *d = NULL;
  int wanted = !cancelled && !engine_stopping(j->e);
  if (wanted && j->fan) /* the last unit of a run is still ahead */
    wanted = atomic_load(&j->fan->pos) <= j->at + (j->nrun ? j->nrun - 1 : 0);
  if (wanted && c) { /* still wanted: the reader has not passed it */
    wanted = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < VIEW_AHEAD_MAX && !c->closed; i++)
      wanted |= c->slot[i].rl == j->rl;
    pthread_mutex_unlock(&c->lock);
  }
  if (wanted)
    ahead_decode(j, &u, &d);
  fan_unref(j->fan);
  if (c) {
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < VIEW_AHEAD_MAX; i++) {
      struct ahead_slot *sl = &c->slot[i];
      if (!c->closed && sl->rl == j->rl && !sl->ready) {
        sl->ready = 1;
        sl->unit = u;
        sl->data = d;
        u = d = NULL;
        break;
      }
    }
    pthread_mutex_unlock(&c->lock);
    cursor_unref(c);
  }
  memo_release(j->e->memo, u);
  memo_release(j->e->memo, d);
  free(j);
}

/* Queue job j (its references taken here); 0, or negative when the pool
 * refused (then j is freed). */
static int ahead_queue(struct ahead_job *j) {
  if (j->c)
    atomic_fetch_add(&j->c->refs, 1);
  if (j->fan)
    atomic_fetch_add(&j->fan->refs, 1);
  int rc = pool_submit(j->e->ahead, ahead_run, j);
  if (rc < 0) { /* the caller still holds a reference to both */
    if (j->c)
      atomic_fetch_sub(&j->c->refs, 1);
    if (j->fan)
      atomic_fetch_sub(&j->fan->refs, 1);
    free(j);
  }
  return rc;
}

/* Queue unit rl of region r; 0, or negative when the pool refused. */
static int ahead_submit(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t rl,
                        struct view_cursor *c, int what, struct fan *fan,
                        uint64_t at) {
  struct ahead_job *j = malloc(sizeof *j + sizeof j->run[0]);
  if (!j)
    return -ENOMEM;
  *j = (struct ahead_job){e, n, *r, rl, c, what, fan, at, 1};
  j->run[0] = rl;
  return ahead_queue(j);
}

/* Queue learning the sizes of units run[0..nrun) (nrun <= VIEW_RUN_MAX),
 * places at.. of fill fan's list. */
static int ahead_submit_sizes(struct engine *e, const struct znode *n,
                              const struct region *r, struct fan *fan,
                              uint64_t at, const uint64_t *run, uint32_t nrun) {
  struct ahead_job *j = malloc(sizeof *j + nrun * sizeof j->run[0]);
  if (!j)
    return -ENOMEM;
  *j = (struct ahead_job){e, n, *r, run[0], NULL, AHEAD_SIZE, fan, at, nrun};
  memcpy(j->run, run, nrun * sizeof *run);
  return ahead_queue(j);
}

/* Note a read of [off, off+len) about to be served: is its reader going
 * through the view in sequence (then the units after are decoded ahead)? */
static int cursor_note(struct view_cursor *c, uint64_t off, size_t len) {
  if (!c)
    return 0;
  pthread_mutex_lock(&c->lock);
  /* In sequence: near where the last read ended (reads overlap and come
   * out of order under the kernel's read-ahead). */
  if (off + VIEW_SEQ_SLACK >= c->next_off &&
      off <= c->next_off + VIEW_SEQ_SLACK)
    c->seq += len;
  else
    c->seq = 0;
  if (off + len > c->next_off || !c->seq)
    c->next_off = off + len;
  int seq = c->seq >= VIEW_AHEAD_AFTER;
  pthread_mutex_unlock(&c->lock);
  return seq;
}

/* After a read that reached slab k: queue the units after it when the
 * reader goes in sequence. */
static void ahead_plan(struct engine *e, const struct znode *n,
                       const struct region *r, const struct region_layout *l,
                       struct view_cursor *c, uint64_t off, size_t len,
                       uint64_t k) {
  if (!c)
    return;
  uint64_t first = (k + 1) * r->per_slab; /* first unit after slab k */
  struct memo_ref *drop[2 * VIEW_AHEAD_MAX];
  int nd = 0;
  (void)off;
  (void)len;
  pthread_mutex_lock(&c->lock);
  /* Units the reader has reached are its own now (its windows). */
  for (int i = 0; i < VIEW_AHEAD_MAX; i++) {
    struct ahead_slot *sl = &c->slot[i];
    if (sl->rl != AHEAD_FREE && (sl->rl < first || !c->seq)) {
      drop[nd++] = sl->unit;
      drop[nd++] = sl->data;
      *sl = (struct ahead_slot){AHEAD_FREE, 0, NULL, NULL};
    }
  }
  if (!e->ahead || c->seq < VIEW_AHEAD_AFTER) {
    pthread_mutex_unlock(&c->lock);
    goto out;
  }
  /* Units larger than the budget are not decoded ahead at all: memory
   * stays within the cache and what readers use. */
  uint64_t depth = c->est ? e->ahead_budget / c->est : 1;
  if (depth > VIEW_AHEAD_MAX)
    depth = VIEW_AHEAD_MAX;
  if (c->ahead_next < first)
    c->ahead_next = first;
  while (c->ahead_next < r->nunits && c->ahead_next < first + depth &&
         memo_pinned(e->memo) < 2 * e->ahead_budget) {
    uint64_t rl = c->ahead_next;
    if (layout_stored(l, rl)) {
      int i = 0;
      while (i < VIEW_AHEAD_MAX && c->slot[i].rl != AHEAD_FREE)
        i++;
      if (i == VIEW_AHEAD_MAX || c->closed)
        break;
      /* The job finds its slot by rl, so the slot is taken first. */
      c->slot[i] = (struct ahead_slot){rl, 0, NULL, NULL};
      if (ahead_submit(e, n, r, rl, c, AHEAD_DATA, NULL, 0) < 0) {
        c->slot[i].rl = AHEAD_FREE;
        break;
      }
    }
    c->ahead_next++;
  }
  pthread_mutex_unlock(&c->lock);
out:
  for (int i = 0; i < nd; i++)
    memo_release(e->memo, drop[i]);
}

/* Remember what a unit read lately costs (sizes the depth). */
static void ahead_note_cost(struct view_cursor *c, size_t cost) {
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->est = cost;
  pthread_mutex_unlock(&c->lock);
}

/* ---- rows: the units of one slab, decoded together ---- */

struct slab_row {
  struct zobj obj;
  uint64_t nunits;
  size_t unit_cost;          /* bytes of its first unit and data */
  struct chunk_text **units; /* references, in slab order */
  struct bytesrc **data;     /* element bytes of variable-length units */
  uint64_t nseg;
  uint64_t *seg_off;  /* nseg+1 text offsets of the row segments */
  uint64_t *seg_uoff; /* where each segment starts in its unit's text */
};

/* Release a row. */
static void row_destroy(struct zobj *o) {
  struct slab_row *w = (struct slab_row *)o;
  for (uint64_t i = 0; i < w->nunits; i++) { /* units NULL: fill failed */
    if (w->units && w->units[i])
      zobj_put(&w->units[i]->obj);
    if (w->data)
      bytesrc_unref(w->data[i]);
  }
  free(w->units);
  free(w->data);
  free(w->seg_off);
  free(w->seg_uoff);
  free(w);
}

/* Rows of elements of the region inside slab k along dimension 0. */
static uint64_t slab_rows0(const struct znode *n, const struct region *r,
                           uint64_t k) {
  uint64_t u = r->lo[0] + k, start = node_unit_start(n, 0, u);
  uint64_t ext = node_unit_ext(n, 0, u);
  return r->ehi[0] - start < ext ? r->ehi[0] - start : ext;
}

/* Segments of slab k: rows of elements times units along the last
 * dimension. */
static int slab_nseg(const struct znode *n, const struct region *r, uint64_t k,
                     uint64_t *nseg) {
  uint64_t rows = slab_rows0(n, r, k);
  for (int d = 1; d < r->ndim - 1; d++)
    if (zmul_u64(rows, r->ehi[d] - r->elo[d], &rows) < 0)
      return -EOVERFLOW;
  return zmul_u64(rows, r->hi[r->ndim - 1] - r->lo[r->ndim - 1], nseg);
}

/* Segment s of slab k: the unit (its index in the slab) and the in-bounds
 * row R of that unit it comes from. */
static uint64_t segment_locate(const struct znode *n, const struct region *r,
                               uint64_t k, uint64_t s, uint64_t *row) {
  int nd = r->ndim;
  uint64_t glast = r->hi[nd - 1] - r->lo[nd - 1];
  uint64_t rr = s / glast;
  uint64_t idx[ZMETA_MAX_DIMS];
  idx[nd - 1] = r->lo[nd - 1] + s % glast;
  /* Region row rr of the slab -> element coordinates a[0..nd-2]. */
  uint64_t a[ZMETA_MAX_DIMS];
  for (int d = nd - 2; d >= 0; d--) {
    uint64_t extent = d == 0 ? slab_rows0(n, r, k) : r->ehi[d] - r->elo[d];
    a[d] = rr % extent;
    rr /= extent;
  }
  a[0] += node_unit_start(n, 0, r->lo[0] + k);
  for (int d = 1; d <= nd - 2; d++)
    a[d] += r->elo[d];
  uint64_t R = 0;
  for (int d = 0; d <= nd - 2; d++) {
    idx[d] = node_unit_of(n, d, a[d]);
    R = R * node_unit_ext(n, d, idx[d]) +
        (a[d] - node_unit_start(n, d, idx[d]));
  }
  *row = R;
  uint64_t i = 0; /* index in the slab: C order over dimensions 1.. */
  for (int d = 1; d < nd; d++)
    i = i * (r->hi[d] - r->lo[d]) + (idx[d] - r->lo[d]);
  return i;
}

/* Unit i of slab k: stored ones decoded through the memo (the row keeps
 * its own reference), the others as fill units. */
static int row_unit(struct region_job *j, struct slab_row *w, uint64_t i,
                    size_t *cost, struct zerr *err) {
  const struct region *r = j->r;
  uint64_t rl = j->k * r->per_slab + i, idx[ZMETA_MAX_DIMS];
  region_unit(r, rl, idx);
  if (!layout_stored(j->l, rl))
    return engine_fill_unit(j->n, idx, &w->units[i], err);
  struct memo_ref *ref, *dref;
  ZTRY(engine_unit(j->e, j->n, idx, &ref, err));
  const struct chunk_text *ct = engine_ref_unit(ref), *rct;
  int rc = engine_unit_src(j->e, j->n, ct, &rct, &w->data[i], &dref, err);
  if (rc == 0) {
    /* the row keeps what it reads from, whatever the cache does */
    w->units[i] = (struct chunk_text *)zobj_get((struct zobj *)&rct->obj);
    *cost += rct->cost + (rct != ct ? ct->cost : 0);
    if (w->data[i] && w->data[i]->mem)
      *cost += (size_t)w->data[i]->size;
  }
  memo_release(j->e->memo, dref);
  memo_release(j->e->memo, ref);
  return rc;
}

/* Have the workers decode the other units of a row while the fill goes
 * through them in order, when they all fit the ahead budget (judged by
 * the first unit's cost, already spent). */
static struct fan *row_fan_out(struct region_job *j, size_t cost0) {
  const struct region *r = j->r;
  struct engine *e = j->e;
  if (!e->ahead || cost0 > e->ahead_budget / (r->per_slab - 1))
    return NULL;
  struct fan *fan = fan_new();
  for (uint64_t i = 1; fan && i < r->per_slab; i++) {
    uint64_t rl = j->k * r->per_slab + i;
    if (layout_stored(j->l, rl) &&
        ahead_submit(e, j->n, r, rl, NULL, AHEAD_DATA, fan, i) < 0)
      break;
  }
  return fan;
}

/* Fill: decode every unit of slab k once and measure its row segments. */
static int row_fill(void *ctx, struct zobj **obj, size_t *cost,
                    struct zerr *err) {
  struct region_job *j = ctx;
  const struct znode *n = j->n;
  const struct region *r = j->r;
  uint64_t nseg;
  if (slab_nseg(n, r, j->k, &nseg) < 0 || nseg > VIEW_MAX_SEGMENTS)
    return zerr_set(err, EFBIG, "array view: too many row segments");
  struct slab_row *w = calloc(1, sizeof *w);
  if (!w)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&w->obj, row_destroy);
  w->nunits = r->per_slab;
  w->units = calloc((size_t)w->nunits, sizeof *w->units);
  w->data = calloc((size_t)w->nunits, sizeof *w->data);
  w->seg_off = malloc(((size_t)nseg + 1) * sizeof *w->seg_off);
  w->seg_uoff = malloc(((size_t)nseg + 1) * sizeof *w->seg_uoff);
  /* Per unit: the next row start, known from its previous segment. */
  uint64_t *next_k = calloc((size_t)w->nunits, sizeof *next_k);
  uint64_t *next_off = calloc((size_t)w->nunits, sizeof *next_off);
  int rc =
      w->units && w->data && w->seg_off && w->seg_uoff && next_k && next_off
          ? 0
          : zerr_set(err, ENOMEM, "out of memory");
  size_t c = sizeof *w + ((size_t)nseg + 1) * 16 + (size_t)w->nunits * 16;
  struct fan *fan = NULL;
  for (uint64_t i = 0; rc == 0 && i < w->nunits; i++) {
    size_t c0 = c;
    if (fan)
      atomic_store(&fan->pos, i);
    rc = engine_check_stop(j->e, err);
    if (rc == 0)
      rc = row_unit(j, w, i, &c, err);
    if (rc == 0 && i == 0) {
      w->unit_cost = c - c0;
      /* a stored first unit tells what the others will cost */
      if (w->nunits > 1 && (w->units[0]->ab || w->units[0]->text))
        fan = row_fan_out(j, w->unit_cost);
    }
    if (rc == 0 && c > j->e->window_cap)
      rc = zerr_set(err, EFBIG,
                    "array view: a row of chunks decodes to more than the "
                    "decode limit of %zu bytes (-o max_decode)",
                    j->e->window_cap);
  }
  fan_done(fan);
  w->nseg = nseg;
  uint64_t pos = 0;
  /* A unit's rows come in increasing order, so each segment's end is
   * found from its start by walking at most one row (or one block). */
  for (uint64_t s = 0; rc == 0 && s < nseg; s++) {
    uint64_t R, i = segment_locate(n, r, j->k, s, &R);
    const struct chunk_text *ct = w->units[i];
    uint64_t wd = ct->ext[r->ndim - 1];
    uint64_t a = text_line_off_from(ct, next_k[i], next_off[i], R * wd);
    uint64_t b = text_line_off_from(ct, R * wd, a, (R + 1) * wd);
    next_k[i] = (R + 1) * wd;
    next_off[i] = b;
    w->seg_off[s] = pos;
    w->seg_uoff[s] = a;
    pos += b - a;
    if (s % 65536 == 65535)
      rc = engine_check_stop(j->e, err);
  }
  free(next_k);
  free(next_off);
  if (rc < 0) {
    zobj_put(&w->obj);
    return rc;
  }
  w->seg_off[nseg] = pos;
  *obj = &w->obj;
  *cost = c;
  return 0;
}

/* ---- reads ---- */

/* Read from the text of unit idx: a fill unit when it is known not to be
 * stored, else decoded through the memo (the cursor keeps what it used). */
static long read_unit(struct engine *e, const struct znode *n,
                      const uint64_t *idx, int stored, uint64_t off, size_t len,
                      char *dst, struct view_cursor *c, int seq,
                      struct zerr *err) {
  if (!stored) {
    struct chunk_text *ct;
    ZTRY(engine_fill_unit(n, idx, &ct, err));
    long got = text_read(ct, NULL, off, len, dst, err);
    zobj_put(&ct->obj);
    return got;
  }
  struct memo_ref *ref, *dref = NULL;
  if (!seq) {
    /* A reader that jumps (tail, a random read) of a unit not decoded
     * yet: through a plain zarrs.vlen index, read just what it shows. */
    struct memo_key k;
    engine_key(&k, ELEVEL_UNIT, n, idx, NULL, 0);
    if (memo_peek(e->memo, &k, &ref))
      memo_release(e->memo, ref);
    else {
      long got = engine_unit_read_direct(e, n, idx, off, len, dst, err);
      if (got != -ENOTSUP)
        return got;
      zerr_clear(err);
    }
  }
  struct memo_key uk;
  engine_key(&uk, ELEVEL_UNIT, n, idx, NULL, 0);
  cursor_room(e, c, &uk);
  ZTRY(engine_unit(e, n, idx, &ref, err));
  const struct chunk_text *ct = engine_ref_unit(ref), *rct;
  struct bytesrc *data = NULL;
  if (ct->ab && !ct->ab->elsize && !ct->ab->data) { /* a deferred section */
    struct memo_key dk;
    engine_key(&dk, ELEVEL_DATA, n, idx, NULL, 0);
    cursor_room(e, c, &dk); /* this unit is pinned by ref */
  }
  long got = engine_unit_src(e, n, ct, &rct, &data, &dref, err);
  if (got == 0)
    got = text_read(rct, data, off, len, dst, err);
  if (got >= 0)
    ahead_note_cost(c, ct->cost + (rct != ct ? rct->cost : 0) +
                           (data && data->mem ? (size_t)data->size : 0));
  bytesrc_unref(data);
  cursor_keep(e, c, dref, 0);
  cursor_keep(e, c, ref, 0);
  return got;
}

/* Read from the text of slab k (offset in_slab) through its row. */
static long read_row(struct engine *e, const struct znode *n,
                     const struct region *r, const struct region_layout *l,
                     uint64_t k, uint64_t in_slab, size_t len, char *dst,
                     struct view_cursor *c, struct zerr *err) {
  struct memo_key key;
  region_key(&key, ELEVEL_ROW, n, r, &k);
  struct region_job j = {e, n, r, l, k};
  struct memo_ref *ref;
  ZTRY(memo_get(e->memo, &key, row_fill, &j, &ref, err));
  const struct slab_row *w = (const struct slab_row *)memo_obj(ref);
  ahead_note_cost(c, w->unit_cost);
  size_t done = 0;
  long rc = 0;
  uint64_t s = zfloor_u64(w->seg_off, w->nseg, in_slab);
  while (done < len && s < w->nseg) {
    uint64_t pos = in_slab + done, R;
    uint64_t i = segment_locate(n, r, k, s, &R);
    const struct chunk_text *ct = w->units[i];
    uint64_t wd = ct->ext[r->ndim - 1];
    uint64_t avail = w->seg_off[s + 1] - pos;
    size_t want = len - done < avail ? len - done : (size_t)avail;
    uint64_t uoff = w->seg_uoff[s] + (pos - w->seg_off[s]);
    long got = text_read_at(ct, w->data[i], R * wd, w->seg_uoff[s], uoff, want,
                            dst + done, err);
    if (got < 0) {
      rc = got;
      break;
    }
    if ((size_t)got != want) {
      rc = zerr_set(err, EIO, "view: chunk shorter than its size");
      break;
    }
    done += want;
    if (want == avail)
      s++;
  }
  cursor_keep(e, c, ref, 0);
  return rc < 0 ? rc : (long)done;
}

/* Read across the slabs of a region. */
static long region_read(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t off, size_t len,
                        char *dst, struct view_cursor *c, struct zerr *err) {
  struct memo_ref *lref;
  ZTRY(layout_get(e, n, r, &lref, err));
  const struct region_layout *l = (const struct region_layout *)memo_obj(lref);
  int seq = cursor_note(c, off, len);
  size_t done = 0;
  long rc = 0;
  uint64_t k = 0;
  while (done < len && off + done < l->total) {
    uint64_t pos = off + done;
    k = slab_find(n, r, l, pos);
    uint64_t s0 = slab_off(n, r, l, k), s1 = slab_off(n, r, l, k + 1);
    size_t want = len - done < s1 - pos ? len - done : (size_t)(s1 - pos);
    long got;
    if (r->per_slab == 1) {
      uint64_t idx[ZMETA_MAX_DIMS];
      region_unit(r, k, idx);
      got = read_unit(e, n, idx, layout_stored(l, k), pos - s0, want,
                      dst + done, c, seq, err);
    } else {
      got = read_row(e, n, r, l, k, pos - s0, want, dst + done, c, err);
    }
    if (got < 0) {
      rc = got;
      break;
    }
    if (got == 0) {
      rc = zerr_set(err, EIO, "view: chunk shorter than its size");
      break;
    }
    done += (size_t)got;
  }
  if (rc == 0 && done)
    ahead_plan(e, n, r, l, c, off, done, k);
  cursor_keep(e, c, lref, 1);
  /* Never a short read on error: the kernel takes a short read as the end
   * of the file, and the reader would see truncated text and no error. */
  return rc < 0 ? rc : (long)done;
}

/* ---- the views ---- */

/* Check that n is an array whose views can be read. */
static int view_check(const struct znode *n, struct zerr *err) {
  if (n->kind == ZNODE_ARRAY && n->chain)
    return 0;
  return zerr_set(err, n->errcode ? n->errcode : EIO, "%s",
                  n->view_error ? n->view_error : "not a readable array");
}

/* Size of chunk idx's view: one unit, or the region of a shard. */
int view_chunk_size(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (!n->shard)
    return engine_unit_size(e, n, idx, size, err);
  struct region r;
  ZTRY(region_of_chunk(n, idx, &r, err));
  return region_size(e, n, &r, size, err);
}

/* See view.h. */
int view_chunk_size_known(struct engine *e, const struct znode *n,
                          const uint64_t *idx, uint64_t *size,
                          struct zerr *err) {
  ZTRY(view_check(n, err));
  struct memo_key k;
  if (n->shard) {
    struct region r;
    ZTRY(region_of_chunk(n, idx, &r, err));
    region_key(&k, ELEVEL_REGION_SIZE, n, &r, NULL);
    return memo_value_peek(e->memo, &k, size);
  }
  engine_key(&k, ELEVEL_UNIT_SIZE, n, idx, NULL, 0);
  if (memo_value_peek(e->memo, &k, size))
    return 1;
  /* zarrs.vlen alone: decoding the unit reads its index, not its data */
  if (!chain_sole_a2b(n->chain, &codec_vlen))
    return 0;
  ZTRY(engine_unit_size(e, n, idx, size, err));
  return 1;
}

/* See view.h. */
int view_array_size_known(struct engine *e, const struct znode *n,
                          uint64_t *size, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0) {
    *size = 0;
    return 1;
  }
  struct region r;
  ZTRY(region_of_array(n, &r, err));
  struct memo_key k;
  region_key(&k, ELEVEL_REGION_SIZE, n, &r, NULL);
  return memo_value_peek(e->memo, &k, size);
}

/* Read from chunk idx's view. */
long view_chunk_read(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t off, size_t len, char *dst,
                     struct view_cursor *c, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (!n->shard)
    return read_unit(e, n, idx, 1, off, len, dst, c, cursor_note(c, off, len),
                     err);
  struct region r;
  ZTRY(region_of_chunk(n, idx, &r, err));
  return region_read(e, n, &r, off, len, dst, c, err);
}

/* Whole-array view size. */
int view_array_size(struct engine *e, const struct znode *n, uint64_t *size,
                    struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0) {
    *size = 0;
    return 0;
  }
  struct region r;
  ZTRY(region_of_array(n, &r, err));
  return region_size(e, n, &r, size, err);
}

/* Read from the whole-array view. */
long view_array_read(struct engine *e, const struct znode *n, uint64_t off,
                     size_t len, char *dst, struct view_cursor *c,
                     struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0)
    return 0;
  struct region r;
  ZTRY(region_of_array(n, &r, err));
  return region_read(e, n, &r, off, len, dst, c, err);
}
