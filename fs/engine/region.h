/* region.h - regions of units: the box of units a view reads, in C order
 * of its elements, and the lookups in a region's layout (which units are
 * stored, where each slab's text starts). The layout itself is built by
 * fs/views/layout.c; a read of a region is described by struct read_req.
 *
 * Slab k of a region holds the units whose first coordinate is lo[0]+k.
 * Pure functions on what the caller passes: no allocation, no lock. The
 * lookups are inline: reads call them for every slab they cross. */
#ifndef ZARRFS_REGION_H
#define ZARRFS_REGION_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../../src/util/zmath.h"
#include "unit.h"

struct view_cursor;
struct cursor_fan; /* fs/engine/cursor.h */

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

/* Where each slab's text starts, from the stored units' sizes: every unit
 * is first taken as the fill value (arithmetic), then corrected by the
 * difference each stored unit makes. Made by layout_get (fs/views/layout.h)
 * knowing which units are stored and none of their sizes; the sizes are
 * learned in C order as readers need them (layout_reach), so the layout
 * knows a prefix of the stored units: p_cum[i] is set for i < known, and
 * is never changed once set. known only grows (release store after the
 * p_cum it covers, acquire load before reading them), so readers use the
 * prefix without a lock; one thread at a time extends it (`learning`,
 * under `grow`), the others wait on `grown`. */
struct region_layout {
  struct zobj obj;
  uint64_t line;   /* bytes of a fill line (fill text + newline) */
  uint64_t np;     /* stored units */
  uint64_t *p_lin; /* their region-linear indices, sorted; NULL when every
                      unit of the region is listed (p_lin[i] == i) */
  int64_t *p_cum;  /* sum of (size - fill size) of stored units 0..i */
  _Atomic uint64_t known; /* stored units whose p_cum is set */
  uint64_t total;         /* text size of the region, once known == np */
  pthread_mutex_t grow;   /* guards learning (a leaf: never held while
                             sizes are learned) */
  pthread_cond_t grown;   /* broadcast when a thread stops learning */
  int learning;           /* a thread is extending known */
  uint64_t gen;           /* the generation of the node's sizes it was
                             made in (node_sizes_gen); once the node's
                             moves on, a size it holds may be wrong and
                             readers take a new layout */
  /* Sizes the persistent index claimed (fs/engine/unit.h, UNIT_SIZE_CLAIM):
   * which stored units' sizes are claims, one bit each, set by the
   * learner before `known` covers them (NULL without an index: no
   * claims); the first of them (UINT64_MAX: none); and how many stored
   * units from the start have no claim left unchecked (layout_check). */
  _Atomic uint8_t *claimed;
  _Atomic uint64_t first_claim;
  _Atomic uint64_t checked;
  int from_record; /* every size came from a region record (fs/views/lsize.h):
                      set before the layout is shared */
  /* Sizes learned ahead of a reader in sequence (layout_ahead,
   * fs/views/layout.h): the workers' jobs go through this fan (its pos:
   * the stored unit the reader is at; NULL: none are queued), and the
   * stored units before ahead_to were queued. */
  struct cursor_fan *ahead_fan;
  _Atomic uint64_t ahead_to;
};

/* Stored units whose sizes are known (acquire: their p_cum may be read). */
static inline uint64_t region_known(const struct region_layout *l) {
  return atomic_load_explicit(&l->known, memory_order_acquire);
}

/* One read of a view's text: who reads, and the bytes wanted. off is
 * relative to the text the callee reads (a unit's, a slab's, the view's). */
struct read_req {
  struct engine *e;
  const struct znode *n;
  struct view_cursor *c; /* the reader's cursor (fs/engine/cursor.h), or NULL */
  int seq;               /* the reader goes through the view in sequence */
  uint64_t off;          /* where the read starts */
  size_t len;            /* bytes wanted */
  char *dst;             /* where they go (len bytes) */
  struct zerr *err;
};

/* The region of the whole array; -EFBIG when its counts do not fit in 64
 * bits. */
int region_of_array(const struct znode *n, struct region *r, struct zerr *err);
/* The region of chunk idx (its units inside the array); -ENOENT outside
 * the grid. */
int region_of_chunk(const struct znode *n, const uint64_t *idx,
                    struct region *r, struct zerr *err);
/* Memo key of something about region r (with an optional slab index),
 * in the present generation of n's sizes (node_sizes_gen): a layout or
 * size made before a unit's size was contradicted is not found again. */
void region_key(struct memo_key *k, enum engine_level level,
                const struct znode *n, const struct region *r,
                const uint64_t *slab);
/* The same in generation gen (what a layout was made in). */
void region_key_gen(struct memo_key *k, enum engine_level level,
                    const struct znode *n, const struct region *r,
                    const uint64_t *slab, uint64_t gen);

/* Unit coordinates of region-linear unit rl (C order over the box). */
static inline void region_unit(const struct region *r, uint64_t rl,
                               uint64_t *idx) {
  for (int d = r->ndim - 1; d >= 0; d--) {
    uint64_t span = r->hi[d] - r->lo[d];
    idx[d] = r->lo[d] + rl % span;
    rl /= span;
  }
}

/* Stored units with a region-linear index below x. */
static inline uint64_t region_rank(const struct region_layout *l, uint64_t x) {
  if (!l->p_lin)
    return x < l->np ? x : l->np;
  return zrank_u64(l->p_lin, l->np, x);
}

/* Is region-linear unit rl stored? */
static inline int region_stored(const struct region_layout *l, uint64_t rl) {
  uint64_t r = region_rank(l, rl);
  return r < l->np && (!l->p_lin || l->p_lin[r] == rl);
}

/* Slabs whose text start is known when the sizes of the first `known`
 * stored units are: slab k's start is known for k < the result (it counts
 * the end, slab nslabs, once every size is known). */
static inline uint64_t region_starts_known(const struct region *r,
                                           const struct region_layout *l,
                                           uint64_t known) {
  if (known >= l->np)
    return r->nslabs + 1;
  uint64_t next = l->p_lin ? l->p_lin[known] : known; /* first unknown */
  return next / r->per_slab + 1;
}

/* Text offset where slab k starts (k == nslabs: the end); its start must
 * be known (region_starts_known). */
static inline uint64_t region_slab_off(const struct znode *n,
                                       const struct region *r,
                                       const struct region_layout *l,
                                       uint64_t k) {
  if (k >= r->nslabs)
    return l->total;
  uint64_t rank = region_rank(l, k * r->per_slab);
  /* rows of the region before the slab (slabs may differ in height) */
  uint64_t rows = r->ndim ? node_unit_start(n, 0, r->lo[0] + k) - r->elo[0] : 0;
  __int128 off = (__int128)l->line * ((__int128)rows * r->row_elems) +
                 (rank ? l->p_cum[rank - 1] : 0);
  return (uint64_t)off;
}

/* The slab among the first `ended` (slabs whose end is known) whose text
 * holds offset pos (below the end of slab ended - 1). */
static inline uint64_t region_slab_find(const struct znode *n,
                                        const struct region *r,
                                        const struct region_layout *l,
                                        uint64_t ended, uint64_t pos) {
  uint64_t lo = 0, hi = ended; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (region_slab_off(n, r, l, mid) <= pos)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

#endif
