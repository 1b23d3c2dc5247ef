/* layout.c - a region's layout and text size (see layout.h). */
#include "layout.h"

#include <stdlib.h>
#include <time.h>

#include "../../src/store/presence.h"
#include "../../src/util/pool.h"
#include "../engine/cursor.h"
#include "lsize.h"

/* Units handled between looks at the stop flag. */
#define LAYOUT_STOP_EVERY 256
/* A job that learns sizes for a layout covers a run of units whose text
 * adds up to about this much (judged by the first unit), at most
 * LAYOUT_RUN_MAX units: a job per 16-byte chunk costs more in wake-ups than
 * the chunk's decoding. Units whose text is smaller than LAYOUT_RUN_TEXT /
 * LAYOUT_RUN_MAX (256 bytes) are not fanned out at all: measured on 2 cores
 * (100,000 kerchunk chunks of 4 int32), the fill alone learned them in
 * 0.9-1.1 s, runs of 256 units took 1.2-1.7 s, a job a unit 2.2-2.5 s. */
#define LAYOUT_RUN_TEXT (64u << 10)
#define LAYOUT_RUN_MAX 256
/* A reader that needs more of a layout has it learn a quarter of what is
 * known more, at least LAYOUT_STEP_MIN units (the first byte of a view
 * waits for that many) and at most LAYOUT_STEP_MAX (a sequential reader
 * keeps the units whose sizes were learned ahead of it in the cache). */
#define LAYOUT_STEP_MIN 256
#define LAYOUT_STEP_MAX 4096
/* Units learned between two publications of the known prefix. */
#define LAYOUT_PUBLISH_EVERY 64
/* Claims a check makes alone; a run longer than this goes to the workers
 * too (layout_check). */
#define LAYOUT_CHECK_ALONE 4

/* What layout and size fills need. */
struct layout_job {
  struct engine *e;
  const struct znode *n;
  const struct region *r;
  uint64_t gen; /* layout fills: the node's sizes generation keyed by */
};

/* Release a layout. */
static void layout_destroy(struct zobj *o) {
  struct region_layout *l = (struct region_layout *)o;
  free(l->p_lin);
  free(l->p_cum);
  free((void *)l->claimed);
  cursor_fan_done(l->ahead_fan); /* jobs still queued do nothing */
  pthread_mutex_destroy(&l->grow);
  pthread_cond_destroy(&l->grown);
  free(l);
}

/* The stored units of an array region from the store's listing: chunks
 * are units, or each stored shard brings its inner chunks. *lin is NULL
 * (every unit counts as stored) when the store cannot list the array. */
static int layout_stored_units(struct layout_job *j, uint64_t **lin,
                               uint64_t *np, struct zerr *err) {
  const struct znode *n = j->n;
  const struct region *r = j->r;
  uint64_t max = j->e->env.max_decoded / (2 * sizeof(uint64_t));
  *lin = NULL;
  *np = r->nunits;
  if (r->is_chunk) /* a chunk view exists only for a stored chunk */
    goto dense;
  struct memo_ref *pref;
  ZTRY(unit_presence(j->e, n, &pref, err));
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
    int named = r->is_chunk && node_chunk_key(n, r->cidx, key, sizeof key) >= 0;
    engine_log(j->e, named ? key : *n->path ? n->path : ".", err->msg);
    return -EFBIG;
  }
  return 0;
}

/* Sizes are learned by decoding: have the workers decode the next few
 * units whose sizes are unknown while the fill waits for unit i, so a
 * first `stat` uses every core. The units decoded stay in the cache for
 * the reads that usually follow. Small units go in runs of consecutive
 * ones, a job each (LAYOUT_RUN_TEXT). */
static void layout_fan_out(struct layout_job *j, const struct region_layout *l,
                           uint64_t i, uint64_t *queued,
                           struct cursor_fan *fan) {
  struct engine *e = j->e;
  if (!e->ahead || !fan)
    return;
  cursor_fan_at(fan, i);
  /* As many units as the ahead budget holds, judged by the size of the
   * first one's text (this thread learned it first, alone). */
  if (i == 0)
    return;
  uint64_t jobs = 2 * (uint64_t)pool_threads(e->ahead) + 2, size0, run = 1;
  struct memo_key k0;
  uint64_t idx0[ZMETA_MAX_DIMS];
  region_unit(j->r, l->p_lin ? l->p_lin[0] : 0, idx0);
  node_key(&k0, ELEVEL_UNIT_SIZE, j->n, idx0, NULL, 0);
  int known0 = memo_value_peek(e->memo, &k0, &size0) && size0;
  size0 &= ~UNIT_SIZE_CLAIM;
  if (known0 && size0 < LAYOUT_RUN_TEXT / LAYOUT_RUN_MAX)
    return; /* cheaper here than handed over */
  if (known0 && size0 < LAYOUT_RUN_TEXT / 2)
    run = LAYOUT_RUN_TEXT / size0;
  uint64_t win = jobs * run;
  if (known0 && e->ahead_budget / size0 < win)
    win = e->ahead_budget / size0;
  if (*queued <= i)
    *queued = i + 1;                          /* unit i is this thread's own */
  uint64_t ahead = atomic_load(&l->ahead_to); /* queued by layout_ahead */
  if (*queued < ahead)
    *queued = ahead;
  while (*queued < l->np && *queued <= i + win) {
    /* Units [*queued, *queued + nrun), those of unknown size among them
     * (all of a run: its job skips what it finds known). */
    uint64_t rls[LAYOUT_RUN_MAX];
    uint32_t nrun = 0, unknown = 0;
    for (; nrun < run && *queued + nrun < l->np; nrun++) {
      uint64_t at = *queued + nrun, size, idx[ZMETA_MAX_DIMS];
      struct memo_key k;
      rls[nrun] = l->p_lin ? l->p_lin[at] : at;
      region_unit(j->r, rls[nrun], idx);
      node_key(&k, ELEVEL_UNIT_SIZE, j->n, idx, NULL, 0);
      unknown += !memo_value_peek(e->memo, &k, &size);
    }
    if (unknown &&
        cursor_ahead_sizes(e, j->n, j->r, fan, *queued, rls, nrun) < 0)
      break;
    *queued += nrun;
  }
  engine_ahead_settle(e);
}

/* The text size once the sizes of every stored unit are known (cum:
 * their differences from the fill); -EFBIG past 2^63. */
static int layout_total(const struct region *r, const struct region_layout *l,
                        __int128 cum, uint64_t *total, struct zerr *err) {
  __int128 t = (__int128)l->line * r->total_elems + cum;
  if (t < 0 || t > INT64_MAX)
    return zerr_set(err, EFBIG, "view: text exceeds 2^63 bytes");
  *total = (uint64_t)t;
  return 0;
}

/* Every size is known: publish the total (before `known`, which readers
 * load first) and remember it among the learned sizes, where it outlives
 * the layout and answers lazy stats. */
static void layout_finish(struct layout_job *j, struct region_layout *l,
                          uint64_t total) {
  l->total = total;
  atomic_store_explicit(&l->known, l->np, memory_order_release);
  struct memo_key sk;
  region_key_gen(&sk, ELEVEL_REGION_SIZE, j->n, j->r, NULL, l->gen);
  memo_value_put(j->e->memo, &sk, total);
  lsize_keep(j->e, j->n, j->r, l); /* for the next mount */
}

/* Sum the differences lsize_fill or lsize_load left in p_cum from `from`
 * on, up to the first unit not learned, and publish them (*upto: the
 * units known now); all of them: the total too. */
static int layout_sum(struct layout_job *j, struct region_layout *l,
                      uint64_t from, uint64_t *upto, struct zerr *err) {
  __int128 cum = from ? l->p_cum[from - 1] : 0;
  uint64_t i = from;
  int rc = 0;
  for (; i < l->np && l->p_cum[i] != LSIZE_UNSET; i++) {
    cum += l->p_cum[i];
    if (cum > INT64_MAX || cum < -(__int128)INT64_MAX) {
      rc = zerr_set(err, EFBIG, "view: text exceeds 2^63 bytes");
      break;
    }
    l->p_cum[i] = (int64_t)cum;
  }
  *upto = i;
  if (rc == 0 && i == l->np) {
    uint64_t total = 0;
    rc = layout_total(j->r, l, cum, &total, err);
    if (rc == 0)
      layout_finish(j, l, total);
  } else if (i > from) {
    atomic_store_explicit(&l->known, i, memory_order_release);
  }
  return rc;
}

/* Wait until no thread learns sizes of l, then take the turn: 1 (this
 * thread learns: l->learning set), 0 when the first `target` sizes are
 * known meanwhile, 2 when the deadline (CLOCK_MONOTONIC ns, 0: none)
 * came first, -EINTR when the engine stops. No lock is held while sizes
 * are learned: waiters wait on l->grown, looking at the stop flag every
 * 100 ms. */
static int layout_turn(struct engine *e, struct region_layout *l,
                       uint64_t target, uint64_t deadline, struct zerr *err) {
  int rc = 1;
  pthread_mutex_lock(&l->grow);
  while (rc == 1 && region_known(l) < target && l->learning) {
    if (deadline && lsize_now_ns() >= deadline) {
      rc = 2;
      break;
    }
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000;
    if (until.tv_nsec >= 1000000000) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&l->grown, &l->grow, &until);
    if (engine_stopping(e))
      rc = engine_check_stop(e, err);
  }
  if (rc == 1 && region_known(l) >= target)
    rc = 0;
  if (rc == 1)
    l->learning = 1;
  pthread_mutex_unlock(&l->grow);
  return rc;
}

/* Learn the sizes of stored units from `known` up to `target` (at most
 * np), in C order, the workers learning those after the one this thread
 * waits for. One thread at a time (layout_turn); the others wait and find
 * the prefix grown. */
static int layout_learn(struct layout_job *j, struct region_layout *l,
                        uint64_t target, struct zerr *err) {
  const struct znode *n = j->n;
  const struct region *r = j->r;
  if (target > l->np)
    target = l->np;
  int rc = layout_turn(j->e, l, target, 0, err);
  if (rc <= 0)
    return rc;
  rc = 0;
  uint64_t i = region_known(l);
  __int128 cum = i ? l->p_cum[i - 1] : 0;
  uint64_t queued = i; /* units before this one went to the workers */
  struct cursor_fan *fan =
      j->e->ahead && target - i > 1 ? cursor_fan_new() : NULL;
  for (uint64_t from = i; rc == 0 && i < target; i++) {
    if ((i == from || i % LAYOUT_STOP_EVERY == 0) &&
        (rc = engine_check_stop(j->e, err)) < 0)
      break;
    layout_fan_out(j, l, i, &queued, fan);
    /* A reader in sequence (layout_ahead queued for it) that learns a
     * step of up to LAYOUT_STEP_MAX units here moves the workers' window
     * with it: else it ends where the read began, and past it the
     * workers had only the few units layout_fan_out gives, ran dry and
     * slept between them while this thread waited for theirs (archive K:
     * 16,000 sleeps of the workers for want of a job in one `cat`). */
    if (i > from && i % LAYOUT_PUBLISH_EVERY == 0 &&
        atomic_load(&l->ahead_to) > 0)
      layout_ahead(j->e, n, r, l, i);
    uint64_t idx[ZMETA_MAX_DIMS], size;
    int claim = 0;
    region_unit(r, l->p_lin ? l->p_lin[i] : i, idx);
    rc = unit_size_claim(j->e, n, idx, &size, &claim, err);
    if (rc == 0 && claim && l->claimed) { /* checked before it is read */
      atomic_fetch_or_explicit(&l->claimed[i / 8], (uint8_t)(1u << (i % 8)),
                               memory_order_relaxed);
      if (i < atomic_load_explicit(&l->first_claim, memory_order_relaxed))
        atomic_store_explicit(&l->first_claim, i, memory_order_relaxed);
    }
    if (rc == 0)
      cum += (__int128)size - (__int128)l->line * unit_nin(n, idx);
    if (rc == 0 && (cum > INT64_MAX || cum < -(__int128)INT64_MAX))
      rc = zerr_set(err, EFBIG, "view: text exceeds 2^63 bytes");
    if (rc < 0)
      break;
    l->p_cum[i] = (int64_t)cum;
    if (i + 1 < l->np &&
        ((i + 1) % LAYOUT_PUBLISH_EVERY == 0 || i + 1 == target))
      atomic_store_explicit(&l->known, i + 1, memory_order_release);
  }
  cursor_fan_done(fan);
  if (rc == 0 && i == l->np) {
    uint64_t total = 0;
    rc = layout_total(r, l, cum, &total, err);
    if (rc == 0)
      layout_finish(j, l, total);
  } else if (i > 0 && i < l->np) {
    atomic_store_explicit(&l->known, i, memory_order_release); /* kept */
  }
  pthread_mutex_lock(&l->grow);
  l->learning = 0;
  pthread_cond_broadcast(&l->grown);
  pthread_mutex_unlock(&l->grow);
  return rc;
}

/* Fill: a region's layout, knowing which units are stored and none of
 * their sizes yet (a region without stored units is complete at once). */
static int layout_fill(void *ctx, struct zobj **obj, size_t *cost,
                       struct zerr *err) {
  struct layout_job *j = ctx;
  const struct znode *n = j->n;
  struct region_layout *l = calloc(1, sizeof *l);
  if (!l)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&l->obj, layout_destroy);
  pthread_mutex_init(&l->grow, NULL);
  pthread_cond_init(&l->grown, NULL);
  atomic_init(&l->known, 0);
  atomic_init(&l->first_claim, UINT64_MAX);
  atomic_init(&l->checked, 0);
  atomic_init(&l->ahead_to, 0);
  l->gen = j->gen;
  l->line = n->form.fill_len + 1;
  int rc = layout_stored_units(j, &l->p_lin, &l->np, err);
  if (rc == 0 && !(l->p_cum = malloc((size_t)(l->np ? l->np : 1) * 8)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  /* the persistent index may claim sizes: which ones, a bit each */
  if (rc == 0 && j->e->sizeidx &&
      !(l->claimed = calloc((size_t)(l->np / 8 + 1), 1)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  uint64_t total = 0;
  if (rc == 0 && l->np == 0 &&
      (rc = layout_total(j->r, l, 0, &total, err)) == 0)
    layout_finish(j, l, total);
  /* every size at once from the persistent index's region record */
  uint64_t upto;
  if (rc == 0 && l->np && lsize_load(j->e, n, j->r, l)) {
    l->from_record = 1;
    if (layout_sum(j, l, 0, &upto, err) < 0 || upto < l->np) {
      zerr_clear(err); /* does not add up: learned by decoding */
      l->from_record = 0;
      atomic_store_explicit(&l->known, 0, memory_order_release);
      if (l->claimed)
        for (uint64_t b = 0; b < l->np / 8 + 1; b++)
          atomic_store_explicit(&l->claimed[b], 0, memory_order_relaxed);
      atomic_store_explicit(&l->first_claim, UINT64_MAX, memory_order_relaxed);
    }
  }
  /* a view of many units still to learn: readers in sequence have the
   * workers learn sizes ahead of them (layout_ahead); not on a store with
   * latency, whose chunks its cursors name to it as they go */
  if (rc == 0 && j->e->ahead && !j->e->store->ahead &&
      l->np - region_known(l) >= LSIZE_MIN)
    l->ahead_fan = cursor_fan_new(); /* NULL: none */
  if (rc < 0) {
    zobj_put(&l->obj);
    return rc;
  }
  *obj = &l->obj;
  *cost = sizeof *l + (size_t)l->np * (l->p_lin ? 16 : 8) +
          (l->claimed ? (size_t)(l->np / 8 + 1) : 0);
  return 0;
}

/* The layout of region r (a pin). */
int layout_get(struct engine *e, const struct znode *n, const struct region *r,
               struct memo_ref **out, struct zerr *err) {
  struct memo_key k;
  uint64_t gen = node_sizes_gen(n);
  region_key_gen(&k, ELEVEL_LAYOUT, n, r, NULL, gen);
  struct layout_job j = {e, n, r, gen};
  return memo_get(e->memo, &k, layout_fill, &j, out, err);
}

/* Stored unit i's text size as layout l has it. */
static uint64_t layout_unit_size(const struct znode *n,
                                 const struct region_layout *l, uint64_t i,
                                 const uint64_t *idx) {
  int64_t d = l->p_cum[i] - (i ? l->p_cum[i - 1] : 0);
  return (uint64_t)((__int128)l->line * unit_nin(n, idx) + d);
}

/* See layout.h. */
void layout_ahead(struct engine *e, const struct znode *n,
                  const struct region *r, struct region_layout *l,
                  uint64_t at) {
  struct cursor_fan *fan = l->ahead_fan;
  uint64_t known = region_known(l);
  if (!fan || known == 0 || known >= l->np || at >= l->np)
    return;
  /* units the reader has passed are known: a job skips them (concurrent
   * readers of one file, the kernel's read-ahead: the furthest counts) */
  uint64_t p = atomic_load(&fan->pos);
  while (p < at && !atomic_compare_exchange_weak(&fan->pos, &p, at))
    ;
  /* the units' text, judged by the last one known, in runs as
   * layout_fan_out makes them; units too small to be worth a job are
   * learned by the reader (layout_learn) */
  uint64_t idx[ZMETA_MAX_DIMS];
  region_unit(r, l->p_lin ? l->p_lin[known - 1] : known - 1, idx);
  uint64_t size = layout_unit_size(n, l, known - 1, idx), run = 1;
  if (size < LAYOUT_RUN_TEXT / LAYOUT_RUN_MAX)
    return;
  if (size < LAYOUT_RUN_TEXT / 2)
    run = LAYOUT_RUN_TEXT / size;
  /* half the ahead budget of text past the reader: the units decoded
   * for their sizes are kept for it, and the cache holds them */
  uint64_t win = e->ahead_budget / 2 / size;
  uint64_t to = l->np - at > win ? at + win : l->np;
  for (;;) {
    uint64_t from = atomic_load(&l->ahead_to), start = from;
    if (start < known)
      start = known;
    if (start >= to)
      break;
    uint64_t end = to - start < run ? to : start + run;
    if (!atomic_compare_exchange_weak(&l->ahead_to, &from, end))
      continue; /* another reader of the layout queued meanwhile */
    uint64_t rls[LAYOUT_RUN_MAX];
    for (uint64_t i = start; i < end; i++)
      rls[i - start] = l->p_lin ? l->p_lin[i] : i;
    if (cursor_ahead_sizes(e, n, r, fan, start, rls, (uint32_t)(end - start)) <
        0) {
      /* the queue is full: asked again after the next read */
      atomic_compare_exchange_strong(&l->ahead_to, &end, start);
      break;
    }
  }
  engine_ahead_settle(e);
}

/* Is stored unit i's size in l a claim? */
static int layout_claimed(const struct region_layout *l, uint64_t i) {
  return (atomic_load_explicit(&l->claimed[i / 8], memory_order_relaxed) >>
          (i % 8)) &
         1;
}

/* A run of stored units a worker decodes so that a check finds them
 * decoded (the memo keeps them for the read that follows). */
struct check_job {
  struct engine *e;
  const struct znode *n;
  struct region r;
  struct region_layout *l; /* a reference */
  uint64_t from, to;       /* stored units [from, to) */
};

/* Worker: decode the run's claimed units (each fill checks its claim). */
static void check_run(void *arg, int cancelled) {
  struct check_job *j = arg;
  for (uint64_t i = j->from; !cancelled && i < j->to && !engine_stopping(j->e);
       i++) {
    uint64_t idx[ZMETA_MAX_DIMS];
    struct memo_ref *ref;
    struct zerr err = {0};
    if (!layout_claimed(j->l, i))
      continue;
    region_unit(&j->r, j->l->p_lin ? j->l->p_lin[i] : i, idx);
    if (!unit_windowed(j->e, j->n, idx) && /* (checked by a pass) */
        unit_get(j->e, j->n, idx, &ref, &err) == 0)
      memo_release(j->e->memo, ref);
  }
  zobj_put(&j->l->obj);
  free(j);
}

/* Have the workers decode the claims after stored unit i (*queued: the
 * units handed out so far) in runs, as layout_fan_out has them learn
 * sizes: a run's text about LAYOUT_RUN_TEXT (judged by unit i's), a job
 * per worker and two more ahead, nothing for units too small to be worth
 * a job. So checking a long run of claims (a `tail` of a second mount)
 * uses every core. */
static void check_fan_out(struct engine *e, const struct znode *n,
                          const struct region *r, struct region_layout *l,
                          uint64_t i, uint64_t upto, uint64_t *queued) {
  if (!e->ahead)
    return;
  uint64_t idx[ZMETA_MAX_DIMS];
  region_unit(r, l->p_lin ? l->p_lin[i] : i, idx);
  uint64_t size = layout_unit_size(n, l, i, idx), run = 1;
  if (size < LAYOUT_RUN_TEXT / LAYOUT_RUN_MAX)
    return; /* cheaper here than handed over */
  if (size < LAYOUT_RUN_TEXT / 2)
    run = LAYOUT_RUN_TEXT / size;
  uint64_t win = (2 * (uint64_t)pool_threads(e->ahead) + 2) * run;
  if (e->ahead_budget / size < win)
    win = e->ahead_budget / size;
  if (*queued <= i)
    *queued = i + 1; /* unit i is the caller's own */
  while (*queued < upto && *queued <= i + win) {
    struct check_job *j = malloc(sizeof *j);
    if (!j)
      return;
    uint64_t to = upto - *queued < run ? upto : *queued + run;
    *j = (struct check_job){e, n, *r, l, *queued, to};
    zobj_get(&l->obj);
    if (pool_submit(e->ahead, check_run, j) < 0) { /* j is the worker's */
      zobj_put(&l->obj);
      free(j);
      return;
    }
    *queued = to;
  }
}

/* See layout.h. */
int layout_check(struct engine *e, const struct znode *n,
                 const struct region *r, struct region_layout *l, uint64_t upto,
                 enum layout_check_mode mode, uint64_t from, struct zerr *err) {
  if (upto > region_known(l))
    upto = region_known(l); /* (the caller's are known) */
  uint64_t i = atomic_load_explicit(&l->checked, memory_order_acquire);
  uint64_t first = atomic_load_explicit(&l->first_claim, memory_order_relaxed);
  if (i < first)
    i = first;
  /* a reader that jumped over sizes of a region record (fs/views/lsize.h)
   * checks what it reads, not what it jumped over: those claims are kept
   * as stat takes them, each checked when its unit is read */
  int skipped = mode == LAYOUT_CHECK_JUMP && l->from_record && from > i;
  if (skipped)
    i = from;
  /* a reader in order checks a unit or two at a time, decoded ahead by
   * its cursor (and its slices render behind those decodes); one that
   * jumped has a run of them: the workers help */
  uint64_t queued =
      mode == LAYOUT_CHECK_JUMP && upto - i > LAYOUT_CHECK_ALONE ? i : upto;
  for (uint64_t i0 = i; i < upto; i++) {
    if (!layout_claimed(l, i))
      continue;
    if ((i - i0) % LAYOUT_STOP_EVERY == 0)
      ZTRY(engine_check_stop(e, err));
    check_fan_out(e, n, r, l, i, upto, &queued);
    uint64_t idx[ZMETA_MAX_DIMS];
    region_unit(r, l->p_lin ? l->p_lin[i] : i, idx);
    int rc = unit_size_verify(e, n, idx, layout_unit_size(n, l, i, idx), err);
    if (rc != 0)
      return rc;
    if (node_sizes_gen(n) != l->gen)
      return 1; /* another unit's size was wrong meanwhile */
  }
  /* no claim before upto is left unchecked: say so (never backwards) */
  uint64_t c = atomic_load_explicit(&l->checked, memory_order_relaxed);
  while (!skipped && c < upto &&
         !atomic_compare_exchange_weak_explicit(
             &l->checked, &c, upto, memory_order_acq_rel, memory_order_relaxed))
    ;
  int stale = node_sizes_gen(n) != l->gen;
  /* every claim held: the whole view's sizes are the truth, for the
   * next mount's region record (made once: c moved to np just now) */
  if (!stale && !skipped && c < l->np && upto == l->np &&
      region_known(l) == l->np)
    lsize_keep(e, n, r, l);
  return stale;
}

/* See layout.h. */
int layout_reach(struct engine *e, const struct znode *n,
                 const struct region *r, struct region_layout *l, uint64_t pos,
                 uint64_t *ended, struct zerr *err) {
  struct layout_job j = {e, n, r, 0};
  for (;;) {
    uint64_t known = region_known(l);
    if (known >= l->np) {
      *ended = r->nslabs;
      return 0;
    }
    /* Slab s-1's start is known, its end is not: the slabs before it
     * are whole, and enough when it starts past pos. */
    uint64_t s = region_starts_known(r, l, known);
    if (region_slab_off(n, r, l, s - 1) > pos) {
      *ended = s - 1;
      return 0;
    }
    uint64_t step = known / 4;
    step = step < LAYOUT_STEP_MIN   ? LAYOUT_STEP_MIN
           : step > LAYOUT_STEP_MAX ? LAYOUT_STEP_MAX
                                    : step;
    int rc = layout_learn(&j, l, known + step, err);
    if (rc < 0 &&
        (rc == -EINTR || zerr_is_transient(-rc) || region_known(l) <= known))
      return rc;
    /* A unit past the ones this read needs failed (a bad chunk): the
     * sizes before it are kept, and they may place pos already; the
     * read that reaches that unit fails there, not this one. */
    if (rc < 0)
      zerr_clear(err);
  }
}

/* See layout.h. */
int layout_complete(struct engine *e, const struct znode *n,
                    const struct region *r, struct region_layout *l,
                    struct zerr *err) {
  int rc = layout_complete_within(e, n, r, l, 0, err);
  return rc > 0 ? engine_check_stop(e, err) : rc;
}

/* See layout.h. */
int layout_complete_within(struct engine *e, const struct znode *n,
                           const struct region *r, struct region_layout *l,
                           uint64_t deadline, struct zerr *err) {
  struct layout_job j = {e, n, r, 0};
  if (region_known(l) >= l->np)
    return 0;
  if (l->np - region_known(l) < LSIZE_MIN && !deadline)
    return layout_learn(&j, l, l->np, err);
  int rc = layout_turn(e, l, l->np, deadline, err);
  if (rc <= 0)
    return rc;
  if (rc == 2)
    return 1; /* another thread learns them: not in time */
  uint64_t from = region_known(l), fail_at, upto = from;
  rc = lsize_fill(e, n, r, l, from, deadline, &fail_at, err);
  if (rc == 0)
    rc = layout_sum(&j, l, from, &upto, err);
  if (rc == 0 && upto < l->np && fail_at == upto)
    rc = -err->code; /* the unit where the sizes stop failed */
  pthread_mutex_lock(&l->grow);
  l->learning = 0;
  pthread_cond_broadcast(&l->grown);
  pthread_mutex_unlock(&l->grow);
  if (rc == 0 && upto < l->np && engine_stopping(e))
    rc = engine_check_stop(e, err);
  return rc < 0 ? rc : upto < l->np;
}

/* Fill: a region's text size, from its layout with every size learned. */
static int layout_size_fill(void *ctx, uint64_t *value, struct zerr *err) {
  struct layout_job *j = ctx;
  struct memo_ref *ref;
  ZTRY(layout_get(j->e, j->n, j->r, &ref, err));
  struct region_layout *l = (struct region_layout *)memo_obj(ref);
  int rc = layout_complete(j->e, j->n, j->r, l, err);
  if (rc == 0)
    *value = l->total;
  memo_release(j->e->memo, ref);
  return rc;
}

/* Text size of a region, remembered among the learned sizes. */
int layout_size(struct engine *e, const struct znode *n, const struct region *r,
                uint64_t *size, struct zerr *err) {
  struct memo_key k;
  region_key(&k, ELEVEL_REGION_SIZE, n, r, NULL);
  struct layout_job j = {e, n, r, 0};
  return memo_value(e->memo, &k, layout_size_fill, &j, size, err);
}

/* See layout.h. */
int layout_stored_count(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t *np,
                        struct zerr *err) {
  struct memo_ref *ref;
  ZTRY(layout_get(e, n, r, &ref, err));
  *np = ((const struct region_layout *)memo_obj(ref))->np;
  memo_release(e->memo, ref);
  return 0;
}
