/* rsplit.c - a run's lines rendered in parts across a pool (see rsplit.h). */
#include "rsplit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "render.h"

/* Most parts of one run: past a few, the copies cost more than the idle
 * cores give back. */
#define RSPLIT_MAX_PARTS 4

/* Where a part is: queued, taken by a worker or by the caller, done. */
enum { PART_QUEUED, PART_TAKEN, PART_DONE };

/* Parts rendered by a worker (rsplit_helped). */
static atomic_ullong helped;

struct rsplit_part {
  struct rsplit *rs;
  uint64_t k0, k1; /* its elements */
  char *text;      /* owned: its lines (room for k1 - k0 of them) */
  size_t len;      /* bytes of text */
  atomic_int state;
};

struct rsplit {
  pthread_mutex_t lock; /* with done: a part finished */
  pthread_cond_t done;
  atomic_int refs; /* the caller's, and one per part queued on the pool */
  const struct dtype *dt;
  const unsigned char *src;
  size_t elsize;
  uint64_t block;
  uint64_t *blk; /* the caller's layout offsets */
  int nparts;
  struct rsplit_part part[RSPLIT_MAX_PARTS];
};

/* See rsplit.h. */
char *tbuf_room(struct tbuf *b, size_t n) {
  if (!b->p)
    return NULL;
  if (b->len + n > b->cap) {
    size_t cap = b->cap * 2 > b->len + n ? b->cap * 2 : b->len + n;
    char *p = cap <= b->max ? realloc(b->p, cap) : NULL;
    if (!p) { /* over the limit, or no memory: stay lazy */
      free(b->p);
      b->p = NULL;
      return NULL;
    }
    b->p = p;
    b->cap = cap;
  }
  return b->p + b->len;
}

/* Drop a reference; the last one frees the split and the parts' texts. */
static void rsplit_unref(struct rsplit *rs) {
  if (atomic_fetch_sub(&rs->refs, 1) != 1)
    return;
  for (int i = 0; i < rs->nparts; i++)
    free(rs->part[i].text);
  pthread_cond_destroy(&rs->done);
  pthread_mutex_destroy(&rs->lock);
  free(rs);
}

/* Render part p, a block at a time (its blocks' offsets into rs->blk). */
static void part_render(struct rsplit_part *p) {
  struct rsplit *rs = p->rs;
  size_t o = 0;
  for (uint64_t k = p->k0; k < p->k1; k += rs->block) {
    size_t m = p->k1 - k < rs->block ? (size_t)(p->k1 - k) : (size_t)rs->block;
    rs->blk[k / rs->block] = o;
    o += render_fixed_run(rs->dt, rs->src + k * rs->elsize, m, p->text + o);
  }
  p->len = o;
}

/* The pool's job: render the part unless the caller took it first. */
static void part_job(void *arg, int cancelled) {
  struct rsplit_part *p = arg;
  struct rsplit *rs = p->rs;
  int want = PART_QUEUED;
  if (!cancelled &&
      atomic_compare_exchange_strong(&p->state, &want, PART_TAKEN)) {
    part_render(p);
    atomic_fetch_add(&helped, 1);
    pthread_mutex_lock(&rs->lock);
    atomic_store(&p->state, PART_DONE);
    pthread_cond_broadcast(&rs->done);
    pthread_mutex_unlock(&rs->lock);
  }
  rsplit_unref(rs);
}

/* See rsplit.h. */
struct rsplit *rsplit_start(struct pool *pool, int ways, const struct dtype *dt,
                            const unsigned char *src, size_t elsize,
                            uint64_t k0, uint64_t n, uint64_t block,
                            uint64_t *blk, uint64_t *kend) {
  *kend = n;
  if (!pool || !block || k0 >= n || k0 % block)
    return NULL;
  uint64_t parts = (n - k0) / RSPLIT_MIN_PART;
  if (ways > RSPLIT_MAX_PARTS)
    ways = RSPLIT_MAX_PARTS;
  if (parts > (uint64_t)(ways > 0 ? ways : 1))
    parts = (uint64_t)(ways > 0 ? ways : 1);
  if (parts < 2)
    return NULL;
  struct rsplit *rs = calloc(1, sizeof *rs);
  if (!rs)
    return NULL;
  pthread_mutex_init(&rs->lock, NULL);
  pthread_cond_init(&rs->done, NULL);
  atomic_init(&rs->refs, 1);
  rs->dt = dt;
  rs->src = src;
  rs->elsize = elsize;
  rs->block = block;
  rs->blk = blk;
  /* the caller's share first, then the parts, cut at blocks */
  uint64_t per = ((n - k0) / parts + block - 1) / block * block;
  for (uint64_t k = k0 + per; k < n; k += per) {
    struct rsplit_part *p = &rs->part[rs->nparts++];
    p->rs = rs;
    p->k0 = k;
    p->k1 = n - k < per ? n : k + per;
    atomic_init(&p->state, PART_QUEUED);
    /* pages are touched only as the lines are written */
    if (!(p->text = malloc((size_t)(p->k1 - p->k0) * RENDER_RUN_ROOM))) {
      rsplit_unref(rs);
      return NULL;
    }
  }
  for (int i = 0; i < rs->nparts; i++) {
    atomic_fetch_add(&rs->refs, 1);
    if (pool_submit_first(pool, part_job, &rs->part[i]) < 0)
      atomic_fetch_sub(&rs->refs, 1); /* the caller renders it */
  }
  *kend = rs->part[0].k0;
  return rs;
}

/* See rsplit.h. */
int rsplit_ways(struct pool *pool) {
  if (!pool)
    return 1;
  int idle = pool_threads(pool) - pool_busy(pool);
  return idle > 0 ? idle + 1 : 1;
}

/* See rsplit.h. */
void rsplit_end(struct rsplit *rs, struct tbuf *tb, uint64_t *blk,
                uint64_t *pos) {
  for (int i = 0; i < rs->nparts; i++) {
    struct rsplit_part *p = &rs->part[i];
    int want = PART_QUEUED;
    if (atomic_compare_exchange_strong(&p->state, &want, PART_TAKEN)) {
      part_render(p);
      atomic_store(&p->state, PART_DONE);
    } else {
      pthread_mutex_lock(&rs->lock);
      while (atomic_load(&p->state) != PART_DONE)
        pthread_cond_wait(&rs->done, &rs->lock);
      pthread_mutex_unlock(&rs->lock);
    }
    char *d = tbuf_room(tb, p->len);
    if (d) {
      memcpy(d, p->text, p->len);
      tb->len += p->len;
    }
    free(p->text); /* as soon as copied: less held at once */
    p->text = NULL;
    for (uint64_t k = p->k0; k < p->k1; k += rs->block)
      blk[k / rs->block] += *pos;
    *pos += p->len;
  }
  rsplit_unref(rs);
}

/* See rsplit.h. */
uint64_t rsplit_helped(void) { return atomic_load(&helped); }
