/* cursor.c - per-open-file cursors: the pins a reader keeps, whether it
 * reads in sequence, and the units decoded ahead of it (see cursor.h). */
#include "cursor.h"
#include "cursor_int.h"

#include <pthread.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h> /* malloc_trim */
#endif
#include <string.h>

#include "../../src/util/pool.h"

/* Released pins of at least this many bytes are handed back to the system
 * at once (cursor_room). */
#define CURSOR_TRIM_MIN ((size_t)4 << 20)
/* A reader's units queued as one job: consecutive units whose cost
 * lately adds up to this many bytes, at most CURSOR_RUN_MAX of them. */
#define CURSOR_RUN_BYTES (256u << 10)
#define CURSOR_RUN_MAX 32
/* Largest slab of text (bytes) named whole at a read from its start. */
#define CURSOR_START_MAX ((uint64_t)64 << 20)

/* ---- cursors ---- */

/* An empty cursor. */
struct view_cursor *cursor_new(void) {
  struct view_cursor *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->sl_cond, NULL);
  atomic_init(&c->refs, 1);
  for (int i = 0; i < CURSOR_AHEAD_MAX; i++)
    c->slot[i].rl = AHEAD_FREE;
  return c;
}
/* Unpin everything and drop the file's reference; jobs still running for
 * this cursor keep it alive and release what they make. */
void cursor_free(struct engine *e, struct view_cursor *c) {
  if (!c)
    return;
  struct memo_ref *drop[2 * CURSOR_AHEAD_MAX + CURSOR_WINDOWS + 1];
  int nd = 0;
  pthread_mutex_lock(&c->lock);
  c->closed = 1;
  drop[nd++] = c->layout;
  c->layout = NULL;
  for (int i = 0; i < CURSOR_WINDOWS; i++) {
    drop[nd++] = c->win[i];
    c->win[i] = NULL;
  }
  for (int i = 0; i < CURSOR_AHEAD_MAX; i++) {
    drop[nd++] = c->slot[i].unit;
    drop[nd++] = c->slot[i].data;
    c->slot[i] = (struct ahead_slot){AHEAD_FREE, 0, NULL, NULL};
  }
  uint32_t npf = c->npf;
  c->npf = 0;
  struct slice_buf *sdrop[CURSOR_SLICES + CURSOR_SPARES];
  int ns = 0;
  for (int i = 0; i < CURSOR_SLICES; i++) {
    if (c->sl[i].state == SLICE_READY)
      sdrop[ns++] = c->sl[i].buf;
    c->sl[i] = (struct cursor_slice){.gen = ++c->sl_gen};
  }
  while (c->nspare)
    sdrop[ns++] = c->spare[--c->nspare];
  void *ext = c->ext; /* no swap keeps one once closed */
  c->ext = NULL;
  pthread_mutex_unlock(&c->lock);
  if (ext)
    c->ext_free(e, ext);
  for (int i = 0; i < ns; i++) /* closed: none is kept */
    slice_buf_put(c, sdrop[i]);
  for (int i = 0; i < nd; i++)
    memo_release(e->memo, drop[i]);
  /* No job touches pf[]: it is the file's alone now. */
  for (uint32_t i = 0; i < npf; i++)
    store_prefetch_drop(e->store, c->pf[i].hint);
  cursor_unref(c);
}

/* See cursor.h. */
void *cursor_ext_swap(struct view_cursor *c, void *p,
                      void (*free_fn)(struct engine *e, void *p)) {
  if (!c)
    return p;
  pthread_mutex_lock(&c->lock);
  void *old = c->closed && p ? p : c->ext; /* closed: p is not kept */
  if (old != p) {
    c->ext = p;
    c->ext_free = free_fn;
  }
  pthread_mutex_unlock(&c->lock);
  return old;
}

/* Drop a cursor's windows beyond the first `keep`. */
static void cursor_trim(struct engine *e, struct view_cursor *c, int keep) {
  struct memo_ref *drop[CURSOR_WINDOWS] = {0};
  pthread_mutex_lock(&c->lock);
  for (int i = keep; i < CURSOR_WINDOWS; i++) {
    drop[i] = c->win[i];
    c->win[i] = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < CURSOR_WINDOWS; i++)
    memo_release(e->memo, drop[i]);
}

/* Hand a pin over to the cursor: it keeps it as its layout or its newest
 * window (dropping the oldest), or, with no cursor, it is released. When
 * everything pinned exceeds the window cap the cursor lets go of its older
 * windows, then of all of them. */
void cursor_keep(struct engine *e, struct view_cursor *c, struct memo_ref *r,
                 int is_layout) {
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
    while (i < CURSOR_WINDOWS && c->win[i] != r)
      i++;
    if (i < CURSOR_WINDOWS)
      drop = r; /* kept already: our own pin is extra */
    else
      drop = c->win[i = CURSOR_WINDOWS - 1];
    memmove(c->win + 1, c->win, (size_t)i * sizeof c->win[0]);
    c->win[0] = r;
  }
  pthread_mutex_unlock(&c->lock);
  memo_release(e->memo, drop);
  /* Readers use their newest one or two windows; older ones only spare
   * a decode when the cache cannot hold them, so they go first when
   * everything pinned outgrows the cache, and all go past the cap. */
  size_t pinned = memo_pinned(e->memo);
  if (pinned > e->cache_size || atomic_load(&c->scan)) {
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
void cursor_room(struct engine *e, struct view_cursor *c,
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
  if (before > after && before - after >= CURSOR_TRIM_MIN)
    malloc_trim(0);
#else
  (void)before;
#endif
}

/* ---- decoding ahead ----
 *
 * A reader going through a view in sequence has the units after the one
 * it reads decoded by the engine's workers (src/util/pool.h) meanwhile, so it
 * finds them ready: decoding runs in parallel with the kernel's copying
 * and on every core. The cursor keeps those units pinned until the reader
 * passes them; how many is bounded by the engine's ahead budget (a part of
 * the cache) divided by the cost of the units read lately. A row of
 * units is likewise decoded by the workers together (fs/views/row.c). Jobs are
 * hints: a full queue or a failure only means the reader decodes itself
 * (and sees the failure, logged once by the engine). */

/* What a job does with its unit: learn its size (decoding it only when
 * the size needs that), decode it, or decode it and its deferred data. */
enum { AHEAD_SIZE, AHEAD_UNIT, AHEAD_DATA };

/* One unit to decode ahead. */
struct ahead_job {
  struct engine *e;
  const struct znode *n;
  struct region r;
  uint64_t rl;            /* region-linear unit */
  struct view_cursor *c;  /* holds a reference; NULL: release at once */
  int what;               /* AHEAD_SIZE, AHEAD_UNIT or AHEAD_DATA */
  struct cursor_fan *fan; /* a fill's progress (a reference), or NULL */
  uint64_t at;            /* this unit's place in that fill */
  uint32_t nrun;          /* AHEAD_SIZE: units run[0..nrun) at places at.. */
  void **hints;           /* AHEAD_SIZE: the store's hints for them (NULL
                             entries: none), in the same allocation */
  uint64_t run[];
};

/* Let go of the store hint of the job's k-th unit (learned or skipped). */
static void ahead_hint_drop(struct ahead_job *j, uint32_t k) {
  if (j->hints && j->hints[k]) {
    store_prefetch_drop(j->e->store, j->hints[k]);
    j->hints[k] = NULL;
  }
}

/* Units whose text the workers made whole (cursor_rendered). */
static _Atomic uint64_t ahead_rendered;

/* Decode a unit (and its deferred data) into the memo; pins in *u, *d.
 * Units the job found undecoded and left rendered whole are counted. */
static void ahead_decode(struct ahead_job *j, uint64_t rl, struct memo_ref **u,
                         struct memo_ref **d) {
  struct zerr err = {0};
  uint64_t idx[ZMETA_MAX_DIMS], size;
  region_unit(&j->r, rl, idx);
  if (j->what == AHEAD_SIZE) {
    /* Last unit first, as runs of units are decoded (ahead_run): the
     * fill learns the run's first units itself, going forward, and meets
     * the job once. In C order the fill caught up with the job at every
     * unit and slept until the job had learned it (one worker and archive
     * K: 157,000 context switches in a `cat`, slower than no worker). */
    for (uint32_t k = j->nrun; k-- > 0;) {
      /* Passed by the fill (which learned it) or the fill stopped. */
      if (atomic_load(&j->fan->pos) > j->at + k) {
        ahead_hint_drop(j, k);
        continue;
      }
      region_unit(&j->r, j->run[k], idx);
      zerr_clear(&err);
      uint64_t made = unit_made_whole();
      if (unit_size(j->e, j->n, idx, &size, &err) == 0 &&
          unit_made_whole() != made)
        atomic_fetch_add_explicit(&ahead_rendered, 1, memory_order_relaxed);
      ahead_hint_drop(j, k);
    }
    return;
  }
  uint64_t made = unit_made_whole(); /* read in windows: never whole */
  if (unit_windowed(j->e, j->n, idx) ||
      unit_get(j->e, j->n, idx, u, &err) < 0) {
    *u = NULL;
    return;
  }
  const struct chunk_text *ct = unit_of_ref(*u), *rct;
  struct bytesrc *src = NULL;
  /* a reader in sequence reads it all: decode its data too */
  if (j->what == AHEAD_DATA &&
      unit_src(j->e, j->n, ct, &rct, &src, d, &err) == 0)
    bytesrc_unref(src);
  if (unit_made_whole() != made)
    atomic_fetch_add_explicit(&ahead_rendered, 1, memory_order_relaxed);
}

/* Is unit rl still wanted by c's reader (its slot still waits for it)? */
static int ahead_wanted(struct view_cursor *c, uint64_t rl) {
  pthread_mutex_lock(&c->lock);
  const struct ahead_slot *sl = &c->slot[rl % CURSOR_AHEAD_MAX];
  /* (a unit the reader reached in a read still going on keeps its slot
   * until that read ends, but the reader has it: decoded again here, it
   * would be a second decode once the reader let it go) */
  int wanted = !c->closed && sl->rl == rl && !sl->ready &&
               rl >= atomic_load(&c->reached);
  pthread_mutex_unlock(&c->lock);
  return wanted;
}

/* Hand the pins of unit rl to c's slot for it (or let them go when the
 * reader moved on or closed the file). */
static void ahead_hand(struct engine *e, struct view_cursor *c, uint64_t rl,
                       struct memo_ref *u, struct memo_ref *d) {
  pthread_mutex_lock(&c->lock);
  struct ahead_slot *sl = &c->slot[rl % CURSOR_AHEAD_MAX];
  if (!c->closed && sl->rl == rl && !sl->ready) {
    sl->ready = 1;
    sl->unit = u;
    sl->data = d;
    u = d = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  memo_release(e->memo, u);
  memo_release(e->memo, d);
}

/* A worker's job: decode, then hand the pins to the cursor's slots. A
 * reader's job decodes a run of units in turn (one job and one wakeup for
 * many small units), each only while still wanted: a reader that moved
 * on, closed its file or a mount that stops ends it at the next unit. */
static void ahead_run(void *arg, int cancelled) {
  struct ahead_job *j = arg;
  struct view_cursor *c = j->c;
  int wanted = !cancelled && !engine_stopping(j->e);
  if (wanted && j->fan) /* the last unit of a run is still ahead */
    wanted = atomic_load(&j->fan->pos) <= j->at + (j->nrun ? j->nrun - 1 : 0);
  if (j->what == AHEAD_SIZE || !c) {
    struct memo_ref *u = NULL, *d = NULL;
    if (wanted)
      ahead_decode(j, j->rl, &u, &d);
    memo_release(j->e->memo, u);
    memo_release(j->e->memo, d);
  }
  /* Last unit first: a reader that catches up decodes the run's first
   * units itself, meeting the job once, instead of waiting behind it for
   * each unit (a wakeup a unit, what runs are to save). */
  for (uint32_t k = j->nrun; c && k-- > 0;) {
    struct memo_ref *u = NULL, *d = NULL;
    wanted = wanted && !engine_stopping(j->e);
    if (wanted && ahead_wanted(c, j->run[k]))
      ahead_decode(j, j->run[k], &u, &d);
    ahead_hand(j->e, c, j->run[k], u, d);
  }
  cursor_fan_unref(j->fan);
  for (uint32_t k = 0; j->hints && k < j->nrun; k++)
    ahead_hint_drop(j, k);
  if (c)
    cursor_unref(c);
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
    for (uint32_t k = 0; j->hints && k < j->nrun; k++)
      ahead_hint_drop(j, k);
    free(j);
  }
  return rc;
}

/* Queue units run[0..nrun) of region r as one job; 0, or negative when
 * the pool refused. */
static int ahead_submit(struct engine *e, const struct znode *n,
                        const struct region *r, const uint64_t *run,
                        uint32_t nrun, struct view_cursor *c, int what,
                        struct cursor_fan *fan, uint64_t at) {
  struct ahead_job *j = malloc(sizeof *j + nrun * sizeof j->run[0]);
  if (!j)
    return -ENOMEM;
  *j = (struct ahead_job){e, n, *r, run[0], c, what, fan, at, nrun, NULL};
  memcpy(j->run, run, nrun * sizeof *run);
  return ahead_queue(j);
}

/* A fill's unit: decoded with its data, for the fill to find. */
int cursor_ahead_unit(struct engine *e, const struct znode *n,
                      const struct region *r, uint64_t rl,
                      struct cursor_fan *fan, uint64_t at) {
  return ahead_submit(e, n, r, &rl, 1, NULL, AHEAD_DATA, fan, at);
}

/* Queue learning the sizes of units run[0..nrun), places at.. of fill
 * fan's list. A store with latency is told about their starts first, so
 * that it fetches them all at once while the job learns them in turn
 * (units of shards share their shard: not named). */
int cursor_ahead_sizes(struct engine *e, const struct znode *n,
                       const struct region *r, struct cursor_fan *fan,
                       uint64_t at, const uint64_t *run, uint32_t nrun) {
  struct ahead_job *j =
      malloc(sizeof *j + nrun * (sizeof j->run[0] + sizeof(void *)));
  if (!j)
    return -ENOMEM;
  *j = (struct ahead_job){.e = e,
                          .n = n,
                          .r = *r,
                          .rl = run[0],
                          .what = AHEAD_SIZE,
                          .fan = fan,
                          .at = at,
                          .nrun = nrun};
  memcpy(j->run, run, nrun * sizeof *run);
  if (e->store->ahead && !n->shard) {
    j->hints = (void **)(j->run + nrun);
    for (uint32_t k = 0; k < nrun; k++) {
      uint64_t idx[ZMETA_MAX_DIMS];
      char key[1024];
      j->hints[k] = NULL;
      region_unit(r, run[k], idx);
      if (node_chunk_key(n, idx, key, sizeof key) >= 0)
        (void)store_prefetch(e->store, key, fan, STORE_PREFETCH_HEAD,
                             &j->hints[k]);
    }
  }
  return ahead_queue(j);
}

/* Note a read of [off, off+len) about to be served: is its reader going
 * through the view in sequence (then the units after are decoded ahead)? */
int cursor_note(struct view_cursor *c, uint64_t off, size_t len) {
  if (!c)
    return 0;
  pthread_mutex_lock(&c->lock);
  /* In sequence: near where the last read ended (reads overlap and come
   * out of order under the kernel's read-ahead). */
  if (off + CURSOR_SEQ_SLACK >= c->next_off &&
      off <= c->next_off + CURSOR_SEQ_SLACK)
    c->seq += len;
  else
    c->seq = 0;
  if (!c->seq) /* a jump: what it reached says nothing any more */
    atomic_store(&c->reached, 0);
  if (off + len > c->next_off || !c->seq)
    c->next_off = off + len;
  int seq = c->seq >= CURSOR_AHEAD_AFTER;
  pthread_mutex_unlock(&c->lock);
  return seq;
}

/* Let go of the hints for units before `first` (all of them after a
 * seek: seq 0), into drop[]; returns how many the reader passed. */
static uint32_t pf_passed(struct view_cursor *c, uint64_t first, void **drop,
                          uint32_t *nd) {
  uint32_t keep = 0, reached = 0;
  for (uint32_t i = 0; i < c->npf; i++) {
    if (c->seq && c->pf[i].rl >= first) {
      c->pf[keep++] = c->pf[i];
      continue;
    }
    drop[(*nd)++] = c->pf[i].hint;
    reached += c->seq != 0;
  }
  c->npf = keep;
  if (!c->seq) { /* a seek: start small again */
    c->pf_win = 0;
    c->pf_next = 0;
  }
  return reached;
}

/* Name to a store with latency the chunks from the one being read on
 * (units from `first`), so they are fetched (in parallel, by the store)
 * before the reader and the decode-ahead get to them; the window grows while
 * the reader keeps up and stops where the store's budget says so (-EAGAIN:
 * tried again after the next read). Units of shards share their shard: not
 * named. */
static void pf_plan(struct engine *e, const struct znode *n,
                    const struct region *r, const struct region_layout *l,
                    struct view_cursor *c, uint64_t first, uint32_t reached) {
  if (!e->store->ahead || n->shard || r->is_chunk || c->closed)
    return;
  if (!c->pf_win)
    c->pf_win = CURSOR_PF_FIRST;
  else if (reached && c->pf_win < CURSOR_PF_MAX)
    c->pf_win = 2 * c->pf_win < CURSOR_PF_MAX ? 2 * c->pf_win : CURSOR_PF_MAX;
  if (c->pf_next < first)
    c->pf_next = first;
  while (c->pf_next < r->nunits && c->pf_next < first + c->pf_win &&
         c->npf < CURSOR_PF_MAX) {
    uint64_t rl = c->pf_next, idx[ZMETA_MAX_DIMS];
    char key[1024];
    if (region_stored(l, rl)) {
      region_unit(r, rl, idx);
      void *hint;
      if (node_chunk_key(n, idx, key, sizeof key) < 0 ||
          store_prefetch(e->store, key, c, 0, &hint) < 0)
        break;
      c->pf[c->npf++] = (struct cursor_pf){rl, hint};
      stats_add(&e->stats.named_ahead, 1);
    }
    c->pf_next++;
  }
}

/* A read near the start of a view is how `cat` begins: the units of the
 * slab it reads (k) are named to the store before the read is served, so
 * that each comes whole in one round trip rather than as its head, its
 * index and its first window one after another. Near, not at: cat's
 * first read and the kernel's read-ahead after it come together and in
 * either order, and the first to get here names (a read-ahead read that
 * got here first used to decode chunk 0 in windows before the read at 0
 * named it: three round trips, not one). The window of units after them
 * opens once the reader proves sequential (cursor_ahead_plan). */
void cursor_ahead_start(struct engine *e, const struct znode *n,
                        const struct region *r, const struct region_layout *l,
                        struct view_cursor *c, uint64_t pos, uint64_t k) {
  if (!c || pos >= CURSOR_SEQ_SLACK)
    return;
  /* A slab of text larger than this is left to the sequential window: a
   * `head` of its view would otherwise fetch all of it. */
  if (region_slab_off(n, r, l, k + 1) - region_slab_off(n, r, l, k) >
      CURSOR_START_MAX)
    return;
  pthread_mutex_lock(&c->lock);
  /* Nothing named since the file was opened or its reader last jumped
   * (pf_passed): this is the first read of a beginning. */
  if (!c->npf && !c->pf_win && !c->pf_next) {
    c->pf_win =
        r->per_slab < CURSOR_PF_MAX ? (uint32_t)r->per_slab : CURSOR_PF_MAX;
    pf_plan(e, n, r, l, c, k * r->per_slab, 0);
    c->pf_win = 0; /* the sequential window starts as always */
  }
  pthread_mutex_unlock(&c->lock);
}

/* After a read that reached slab k (or before one reads it): queue the
 * units after it when the reader goes in sequence. */
void cursor_ahead_plan(struct engine *e, const struct znode *n,
                       const struct region *r, const struct region_layout *l,
                       struct view_cursor *c, uint64_t k, int reading) {
  /* A store with latency has the chunks named to it after the read
   * (pf_plan); a decode queued before would fetch them beside that. */
  if (!c || (reading && e->store->ahead))
    return;
  uint64_t first = (k + 1) * r->per_slab; /* first unit after slab k */
  /* units before this one the reader has passed */
  uint64_t passed = reading ? k * r->per_slab : first;
  struct memo_ref *drop[2 * CURSOR_AHEAD_MAX];
  void *pdrop[CURSOR_PF_MAX];
  int nd = 0;
  uint32_t npd = 0;
  pthread_mutex_lock(&c->lock);
  /* Units the reader has reached are its own now (its windows). */
  for (int i = 0; i < CURSOR_AHEAD_MAX; i++) {
    struct ahead_slot *sl = &c->slot[i];
    if (sl->rl != AHEAD_FREE && (sl->rl < passed || !c->seq)) {
      drop[nd++] = sl->unit;
      drop[nd++] = sl->data;
      *sl = (struct ahead_slot){AHEAD_FREE, 0, NULL, NULL};
    }
  }
  /* The unit being read stays named: a large one is still being read. */
  uint32_t reached = reading ? 0 : pf_passed(c, k * r->per_slab, pdrop, &npd);
  if (c->seq < CURSOR_AHEAD_AFTER) {
    pthread_mutex_unlock(&c->lock);
    goto out;
  }
  if (!reading)
    pf_plan(e, n, r, l, c, k * r->per_slab, reached);
  if (!e->ahead) {
    pthread_mutex_unlock(&c->lock);
    goto out;
  }
  /* Units larger than the budget are not decoded ahead at all: memory
   * stays within the cache and what readers use. Before a unit's cost
   * is known (the reader is still decoding its first), one unit per
   * worker: with one, the other workers idled until the first unit was
   * done (a fifth of a 10-chunk cat's wall on two cores); the pinned
   * bound below still holds. */
  uint64_t depth =
      c->est ? e->ahead_budget / c->est : (uint64_t)pool_threads(e->ahead);
  if (depth > CURSOR_AHEAD_MAX)
    depth = CURSOR_AHEAD_MAX;
  /* Small units go to the workers in runs (one job, one wakeup each):
   * as many as cost CURSOR_RUN_BYTES lately. */
  uint64_t per_job = c->est ? CURSOR_RUN_BYTES / c->est : 1;
  per_job = per_job < 1                ? 1
            : per_job > CURSOR_RUN_MAX ? CURSOR_RUN_MAX
                                       : per_job;
  uint64_t run[CURSOR_RUN_MAX];
  uint32_t nrun = 0;
  /* A scanning reader (cursor_note_cost) has one run per worker, plus
   * one, decoded ahead: what keeps the workers busy, in bytes a run's
   * budget each (a unit each when units are larger than that). */
  uint64_t scan_depth = ((uint64_t)pool_threads(e->ahead) + 1) * per_job;
  if (atomic_load(&c->scan) && depth > scan_depth)
    depth = scan_depth;
  if (c->ahead_next < first)
    c->ahead_next = first;
  for (;;) {
    uint64_t rl = c->ahead_next;
    int more = rl < r->nunits && rl < first + depth && !c->closed &&
               memo_pinned(e->memo) < 2 * e->ahead_budget;
    int take = more && region_stored(l, rl);
    /* The job finds its slot by rl (slot rl % CURSOR_AHEAD_MAX), so the
     * slot is taken first; one still held (a row's units, wider than the
     * slots) stops the run. */
    if (take && c->slot[rl % CURSOR_AHEAD_MAX].rl != AHEAD_FREE)
      more = take = 0;
    if (take)
      c->slot[(run[nrun++] = rl) % CURSOR_AHEAD_MAX] =
          (struct ahead_slot){rl, 0, NULL, NULL};
    if (nrun && (nrun == per_job || !more)) {
      if (ahead_submit(e, n, r, run, nrun, c, AHEAD_DATA, NULL, 0) < 0) {
        for (uint32_t i = 0; i < nrun; i++) /* asked again next time */
          c->slot[run[i] % CURSOR_AHEAD_MAX].rl = AHEAD_FREE;
        c->ahead_next = run[0];
        break;
      }
      nrun = 0;
    }
    if (!more)
      break;
    c->ahead_next++;
  }
  pthread_mutex_unlock(&c->lock);
out:
  for (int i = 0; i < nd; i++)
    memo_release(e->memo, drop[i]);
  for (uint32_t i = 0; i < npd; i++)
    store_prefetch_drop(e->store, pdrop[i]);
}

/* See cursor.h. */
void cursor_reached(struct view_cursor *c, uint64_t rl) {
  if (!c)
    return;
  uint64_t r = atomic_load(&c->reached);
  while (r < rl && !atomic_compare_exchange_weak(&c->reached, &r, rl))
    ;
}

/* Remember what a unit read lately costs (sizes the depth). */
void cursor_note_cost(struct view_cursor *c, size_t cost, int scan) {
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->est = cost;
  atomic_fetch_or(&c->scan, scan);
  pthread_mutex_unlock(&c->lock);
}

/* See cursor.h. */
uint64_t cursor_rendered(void) {
  return atomic_load_explicit(&ahead_rendered, memory_order_relaxed);
}
