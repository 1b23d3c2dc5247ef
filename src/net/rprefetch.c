/* rprefetch.c - fetching ahead across objects (remote_prefetch): hints
 * from readers become jobs on workers of their own, within a share of the
 * cache per reader.
 *
 * Locks: remote_pf.lock (+ the more cond): no request runs under it;
 * dropping a source does (bytesrc_unref takes memo.lock), and workers are
 * started under it (docs/architecture.md, the lock table). */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- fetching ahead across objects (remote_prefetch) ----
 *
 * A reader that goes through many objects in sequence (the chunks of a
 * view) names the next ones before it reaches them; each hint becomes a
 * job that opens the object (its first block, which names its size) and
 * fetches the rest in runs of max_request, the runs queued as jobs of
 * their own so that a large object comes in parallel parts. Workers are
 * most of -o connections, so that the reader's own requests still find a
 * transfer free. Fairness: a worker takes the oldest job of the reader
 * with the fewest jobs running, and no reader holds more than its share
 * of the budget; memory: every hint's bytes are counted (against three
 * quarters of the cache) from the hint until its reader drops it, so fetching
 * ahead never pushes out of the cache what it fetched for a reader still to
 * come. */

/* Jobs queued at most (beyond: refused, a hint). */
#define PF_QUEUE 512
/* Workers at most, and readers fetching ahead at once at most. */
#define PF_THREADS_MAX 64
#define PF_OWNERS 64

/* One reader's share: its hints and the bytes they hold. */
struct pf_owner {
  const void *owner; /* NULL: free slot */
  int hints;         /* hints not dropped */
  int running;       /* jobs on a worker now */
  uint64_t held;     /* bytes charged for its hints */
};

struct remote_hint {
  int refs;         /* the caller's and one per job (remote_pf.lock) */
  int dropped;      /* the caller let go: its jobs do nothing */
  int slot;         /* its owner in remote_pf.owners */
  uint64_t charged; /* bytes counted in remote_pf.held for it */
  int allow_link_local;
  int head_only; /* the first block alone */
  char *url;
  int have_key;                    /* key names the object */
  struct memo_key key;             /* its blocks' key (v[0] 0) */
  struct remote_hint *prev, *next; /* in remote_pf.live while listed */
  int listed;
};

struct pf_job {
  struct remote_hint *h; /* a reference */
  struct bytesrc *src;   /* a run: the opened object (a reference); NULL:
                            open it, then queue its runs */
  uint64_t block;
  uint32_t n;
};

struct remote_pf {
  pthread_mutex_t lock; /* guards everything below */
  pthread_cond_t more;
  struct pf_job q[PF_QUEUE]; /* oldest first */
  int qlen;
  struct pf_owner owners[PF_OWNERS];
  struct remote_hint *live; /* hints of whole objects not dropped */
  pthread_t threads[PF_THREADS_MAX];
  int n_threads, want_threads, started, quit;
  uint64_t budget, held, peak_held;
  int inflight, peak_inflight;
  const struct rprefetch_up *up; /* remote.c's functions (static) */
};

/* The prefetch state of r (workers start at the first hint). */
int rprefetch_new(struct remote *r, const struct rprefetch_up *up) {
  struct remote_pf *pf = calloc(1, sizeof *pf);
  if (!pf)
    return -ENOMEM;
  pthread_mutex_init(&pf->lock, NULL);
  pthread_cond_init(&pf->more, NULL);
  int conns = r->cfg.http.max_conns > 0 ? r->cfg.http.max_conns : 1;
  pf->want_threads = conns - conns / 4;
  if (pf->want_threads > PF_THREADS_MAX)
    pf->want_threads = PF_THREADS_MAX;
  if (pf->want_threads < 1)
    pf->want_threads = 1;
  pf->budget = r->cfg.cache_size / 4 * 3;
  pf->up = up;
  r->pf = pf;
  return 0;
}

/* Drop a hint reference (under pf->lock); 1 when it must be freed. */
static int hint_put_locked(struct remote_hint *h) { return --h->refs == 0; }

/* Free a hint nobody refers to. */
static void hint_free(struct remote_hint *h) {
  if (h) {
    free(h->url);
    free(h);
  }
}

/* Charge extra bytes to hint h when its owner's share and the budget
 * allow (under pf->lock); 1 when charged. */
static int pf_charge(struct remote_pf *pf, struct remote_hint *h,
                     uint64_t extra) {
  struct pf_owner *o = &pf->owners[h->slot];
  int active = 0;
  for (int i = 0; i < PF_OWNERS; i++)
    active += pf->owners[i].owner != NULL;
  uint64_t share = pf->budget / (uint64_t)(active ? active : 1);
  if (h->dropped || pf->held + extra > pf->budget || o->held + extra > share)
    return 0;
  h->charged += extra;
  o->held += extra;
  pf->held += extra;
  if (pf->held > pf->peak_held)
    pf->peak_held = pf->held;
  return 1;
}

/* Queue a job (under pf->lock); 0, or -EAGAIN when the queue is full. */
static int pf_queue_locked(struct remote_pf *pf, struct remote_hint *h,
                           struct bytesrc *src, uint64_t block, uint32_t n) {
  if (pf->quit || pf->qlen == PF_QUEUE)
    return -EAGAIN;
  h->refs++;
  pf->q[pf->qlen++] =
      (struct pf_job){h, src ? bytesrc_ref(src) : NULL, block, n};
  pthread_cond_signal(&pf->more);
  return 0;
}

/* Give back bytes charged to hint h that it will not hold. */
static void pf_uncharge(struct remote_pf *pf, struct remote_hint *h,
                        uint64_t bytes) {
  pthread_mutex_lock(&pf->lock);
  if (!h->dropped) {
    if (bytes > h->charged)
      bytes = h->charged;
    h->charged -= bytes;
    pf->owners[h->slot].held -= bytes;
    pf->held -= bytes;
  }
  pthread_mutex_unlock(&pf->lock);
}

/* Fetch blocks [block, block+n) of src's object into the cache, for hint
 * h. */
static void pf_fetch_run(struct rsrc *s, struct remote_hint *h, uint64_t block,
                         uint32_t n) {
  struct remote *r = s->r;
  for (uint64_t b = block; b < block + n; b++) {
    uint64_t end;
    if (remote_block_cached(r, &s->key, b))
      continue;
    /* Another transfer brings it (a reader's large read; a worker waiting
     * for it would fetch nothing), or a reader had it lately: then the
     * hint holds none of those bytes, and its budget goes to the next. */
    int c = rflight_covered(r, &s->key, b, 1, &end);
    if (c) {
      if (end > block + n)
        end = block + n;
      if (c == 2)
        pf_uncharge(r->pf, h, (end - b) * r->cfg.block_size);
      b = end - 1;
      continue;
    }
    struct memo_key k = s->key;
    k.v[0] = b;
    struct fetch f = {s, b, remote_missing_run(r, &s->key, b, block + n - 1),
                      NULL};
    for (uint32_t i = 1; i < f.n; i++) /* up to what a reader had lately */
      if (rflight_covered(r, &s->key, b + i, 1, &end))
        f.n = i;
    struct memo_ref *ref;
    struct zerr e = {0};
    if (memo_get(r->memo, &k, remote_block_fill, &f, &ref, &e) < 0)
      return; /* the reader meets the failure itself */
    memo_release(r->memo, ref);
    b += f.n - 1;
  }
}

/* Run one job: a run of blocks, or opening an object and queueing its
 * runs (fetched here when the queue is full). */
static void pf_run(struct remote *r, struct pf_job *j) {
  struct remote_pf *pf = r->pf;
  struct remote_hint *h = j->h;
  if (j->src) {
    pf_fetch_run((struct rsrc *)j->src, h, j->block, j->n);
    return;
  }
  struct bytesrc *src;
  struct zerr e = {0};
  if (r->pf->up->open(r, h->url, 0, UINT64_MAX, h->allow_link_local, NULL, &src,
                      &e) < 0)
    return;
  size_t bs = r->cfg.block_size;
  uint64_t nblocks = (src->size + bs - 1) / bs;
  if (nblocks <= 1 || h->head_only) {
    /* What it holds is known now: a small object holds less than the
     * block it was charged for. */
    uint64_t held = src->size < bs ? src->size : bs;
    pthread_mutex_lock(&pf->lock);
    int dropped = h->dropped;
    if (!h->dropped && h->charged > held) {
      pf->owners[h->slot].held -= h->charged - held;
      pf->held -= h->charged - held;
      h->charged = held;
    }
    pthread_mutex_unlock(&pf->lock);
    /* A size known already needed no request: the block itself may have
     * left the cache since. */
    if (!dropped && src->size)
      pf_fetch_run((struct rsrc *)src, h, 0, 1);
  } else {
    pthread_mutex_lock(&pf->lock);
    int ok = h->charged >= nblocks * bs ||
             pf_charge(pf, h, nblocks * bs - h->charged);
    pthread_mutex_unlock(&pf->lock);
    /* The runs of missing blocks, each a job: a block cached already
     * (the end of an index a layout read) splits a run, and the part
     * after it must not wait for the part before. The first block too:
     * a size known already needed no request for it. */
    struct rsrc *rs = (struct rsrc *)src;
    for (uint64_t b = 0; ok && b < nblocks;) {
      if (remote_block_cached(r, &rs->key, b)) {
        b++;
        continue;
      }
      uint32_t n = remote_missing_run(r, &rs->key, b, nblocks - 1);
      pthread_mutex_lock(&pf->lock);
      int rc = h->dropped ? 0 : pf_queue_locked(pf, h, src, b, n);
      pthread_mutex_unlock(&pf->lock);
      if (rc < 0)
        pf_fetch_run(rs, h, b, n);
      b += n;
    }
  }
  bytesrc_unref(src);
}

/* Take h out of the live hints (under pf->lock). */
static void unlist_locked(struct remote_pf *pf, struct remote_hint *h) {
  if (!h->listed)
    return;
  if (h->prev)
    h->prev->next = h->next;
  else
    pf->live = h->next;
  if (h->next)
    h->next->prev = h->prev;
  h->listed = 0;
}

/* Has a reader hinted the whole object okey (a hint not dropped)? */
int rprefetch_hinted(struct remote *r, const struct memo_key *okey) {
  struct remote_pf *pf = r->pf;
  if (!pf)
    return 0;
  int found = 0;
  pthread_mutex_lock(&pf->lock);
  for (struct remote_hint *h = pf->live; h && !found; h = h->next)
    found = remote_same_object(&h->key, okey);
  pthread_mutex_unlock(&pf->lock);
  return found;
}

/* A worker: take the oldest job of the owner with the fewest jobs
 * running, so that readers share the transfers. */
static void *pf_worker(void *arg) {
  struct remote *r = arg;
  struct remote_pf *pf = r->pf;
  pthread_mutex_lock(&pf->lock);
  for (;;) {
    while (!pf->quit && !pf->qlen)
      pthread_cond_wait(&pf->more, &pf->lock);
    if (pf->quit)
      break;
    int best = 0, best_run = pf->owners[pf->q[0].h->slot].running;
    for (int i = 1; i < pf->qlen && best_run > 0; i++) {
      int run = pf->owners[pf->q[i].h->slot].running;
      if (run < best_run) {
        best = i;
        best_run = run;
      }
    }
    struct pf_job j = pf->q[best];
    memmove(pf->q + best, pf->q + best + 1,
            (size_t)(pf->qlen - best - 1) * sizeof pf->q[0]);
    pf->qlen--;
    struct pf_owner *o = &pf->owners[j.h->slot];
    int dropped = j.h->dropped;
    if (!dropped) {
      o->running++;
      if (++pf->inflight > pf->peak_inflight)
        pf->peak_inflight = pf->inflight;
      pthread_mutex_unlock(&pf->lock);
      pf_run(r, &j);
      pthread_mutex_lock(&pf->lock);
      o->running--;
      pf->inflight--;
    }
    bytesrc_unref(j.src);
    if (hint_put_locked(j.h)) {
      pthread_mutex_unlock(&pf->lock);
      hint_free(j.h);
      pthread_mutex_lock(&pf->lock);
    }
  }
  pthread_mutex_unlock(&pf->lock);
  return NULL;
}

int remote_prefetch(struct remote *r, const char *url, int allow_link_local,
                    int head_only, const void *owner,
                    struct remote_hint **out) {
  *out = NULL;
  struct remote_pf *pf = r->pf;
  if (!pf || !owner || !remote_is_url(url))
    return -EINVAL;
  struct remote_hint *h = calloc(1, sizeof *h);
  if (!h || !(h->url = strdup(url))) {
    free(h);
    return -ENOMEM;
  }
  h->refs = 1;
  h->allow_link_local = allow_link_local;
  h->head_only = head_only;
  /* A size known already (a listing, a layout that learned it) is
   * charged whole now, so a hint the budget cannot hold is refused at
   * once and asked again later, rather than fetched in part. */
  uint64_t charge = r->cfg.block_size, size;
  char *req_url;
  struct zerr e = {0};
  if (!head_only && pf->up->request_url(r, url, &req_url, &e) == 0) {
    struct memo_key sk;
    remote_url_key(req_url, TAG_SIZE, &sk);
    if (memo_value_peek(r->memo, &sk, &size) && size > charge)
      charge = (size + charge - 1) / charge * charge;
    /* A reader's large reads of a hinted object go through the blocks,
     * which the hint's jobs fetch and wait on. */
    remote_url_key(req_url, TAG_BLOCK, &h->key);
    h->have_key = 1;
    free(req_url);
  }
  pthread_mutex_lock(&pf->lock);
  /* Workers start at the first hint: the daemon forks after remote_new. */
  while (!pf->started && pf->n_threads < pf->want_threads &&
         pthread_create(&pf->threads[pf->n_threads], NULL, pf_worker, r) == 0)
    pf->n_threads++;
  pf->started = 1;
  int slot = -1, free_slot = -1;
  for (int i = 0; i < PF_OWNERS && slot < 0; i++) {
    if (pf->owners[i].owner == owner)
      slot = i;
    else if (!pf->owners[i].owner && free_slot < 0)
      free_slot = i;
  }
  if (slot < 0 && free_slot >= 0) {
    /* running stays: jobs of the slot's last owner may still run */
    slot = free_slot;
    pf->owners[slot].owner = owner;
    pf->owners[slot].hints = 0;
    pf->owners[slot].held = 0;
  }
  int rc = -EAGAIN;
  if (slot >= 0 && pf->n_threads && pf->qlen < PF_QUEUE) {
    h->slot = slot;
    if (pf_charge(pf, h, charge)) {
      pf->owners[slot].hints++;
      rc = pf_queue_locked(pf, h, NULL, 0, 0);
      if (rc == 0 && h->have_key) {
        h->next = pf->live;
        if (pf->live)
          pf->live->prev = h;
        pf->live = h;
        h->listed = 1;
      }
      if (rc < 0) { /* cannot happen: the queue had room */
        pf->owners[slot].hints--;
        pf->owners[slot].held -= h->charged;
        pf->held -= h->charged;
      }
    }
    if (rc < 0 && !pf->owners[slot].hints)
      pf->owners[slot].owner = NULL;
  }
  pthread_mutex_unlock(&pf->lock);
  if (rc < 0) {
    hint_free(h);
    return rc;
  }
  *out = h;
  return 0;
}

void remote_hint_drop(struct remote *r, struct remote_hint *h) {
  if (!h)
    return;
  struct remote_pf *pf = r->pf;
  if (!pf) { /* the workers are gone, and their references with them */
    hint_free(h);
    return;
  }
  pthread_mutex_lock(&pf->lock);
  struct pf_owner *o = &pf->owners[h->slot];
  h->dropped = 1;
  unlist_locked(pf, h);
  o->held -= h->charged;
  pf->held -= h->charged;
  h->charged = 0;
  if (--o->hints == 0)
    o->owner = NULL;
  int last = hint_put_locked(h);
  pthread_mutex_unlock(&pf->lock);
  if (last)
    hint_free(h);
}

void remote_prefetch_stats(struct remote *r, struct remote_pf_stats *st) {
  struct remote_pf *pf = r->pf;
  pthread_mutex_lock(&pf->lock);
  *st = (struct remote_pf_stats){pf->budget, pf->held,     pf->peak_held,
                                 pf->qlen,   pf->inflight, pf->peak_inflight};
  pthread_mutex_unlock(&pf->lock);
}

/* Stop the workers; jobs still queued are dropped (hints keep their
 * caller's reference). */
void rprefetch_free(struct remote *r) {
  struct remote_pf *pf = r->pf;
  if (!pf)
    return;
  pthread_mutex_lock(&pf->lock);
  pf->quit = 1;
  pthread_cond_broadcast(&pf->more);
  pthread_mutex_unlock(&pf->lock);
  for (int i = 0; i < pf->n_threads; i++)
    pthread_join(pf->threads[i], NULL);
  for (int i = 0; i < pf->qlen; i++) {
    bytesrc_unref(pf->q[i].src);
    if (hint_put_locked(pf->q[i].h))
      hint_free(pf->q[i].h);
  }
  pthread_cond_destroy(&pf->more);
  pthread_mutex_destroy(&pf->lock);
  free(pf);
  r->pf = NULL;
}
