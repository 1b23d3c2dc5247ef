/* rflight.c - blocks in flight, and the reads that fetch runs of blocks
 * through them: every fetch of a run of blocks claims them here first, so
 * that a reader or a prefetch worker that needs a block another transfer
 * is bringing waits for that transfer and takes the block from it,
 * instead of asking the server for the same bytes again. Large reads
 * (rflight_large_read) take what is cached or in flight and fetch the
 * missing runs in parallel parts. The workers (remote_job_submit) run
 * read-ahead and claimed runs through the flights too.
 *
 * Locks: remote.lock (the workers' queue; a leaf); remote.flock (a leaf but for
 * memo_peek, whose memo lock it may take under it; the memo never calls back
 * into this file); no request runs under it. */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../util/cancel.h"

/* Large reads are cut into at least this many parallel parts. */
#define DIRECT_PARTS 4

/* The open flight of okey that holds block b (under r->flock), or NULL. */
static struct rflight *
covering_locked(struct remote *r, const struct memo_key *okey, uint64_t b) {
  for (struct rflight *f = r->flights; f; f = f->next)
    if (f->block <= b && b < f->block + f->n &&
        remote_same_object(&f->key, okey))
      return f;
  return NULL;
}

/* Claim blocks from b on (up to last, at most max of them) of object okey:
 * RFLIGHT_JOINED with *out another transfer bringing b (a reference),
 * RFLIGHT_CACHED when b is cached (unless ignore_cache), else
 * RFLIGHT_CLAIMED with *out a new flight of the run of blocks that are
 * neither cached nor in flight (its owner must rflight_end it), or -ENOMEM. */
int rflight_claim(struct remote *r, const struct memo_key *okey, uint64_t b,
                  uint64_t last, uint32_t max, int ignore_cache,
                  struct rflight **out) {
  *out = NULL;
  if (max < 1)
    max = 1;
  pthread_mutex_lock(&r->flock);
  struct rflight *f = covering_locked(r, okey, b);
  if (f) {
    f->refs++;
    f->joiners++;
    pthread_mutex_unlock(&r->flock);
    *out = f;
    return RFLIGHT_JOINED;
  }
  if (!ignore_cache && remote_block_cached(r, okey, b)) {
    pthread_mutex_unlock(&r->flock);
    return RFLIGHT_CACHED;
  }
  uint32_t n = 1;
  while (b + n <= last && n < max && !covering_locked(r, okey, b + n) &&
         !remote_block_cached(r, okey, b + n))
    n++;
  f = calloc(1, sizeof *f + n * sizeof f->blk[0]);
  if (!f) {
    pthread_mutex_unlock(&r->flock);
    return -ENOMEM;
  }
  f->key = *okey;
  f->key.v[0] = 0;
  f->block = b;
  f->n = n;
  f->refs = 1;
  f->open = 1;
  f->total = UINT64_MAX;
  f->next = r->flights;
  r->flights = f;
  pthread_mutex_unlock(&r->flock);
  *out = f;
  return RFLIGHT_CLAIMED;
}

/* Take f out of the table (under r->flock): nobody joins it from now. */
static void unlink_locked(struct remote *r, struct rflight *f) {
  if (!f->open)
    return;
  for (struct rflight **p = &r->flights; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      break;
    }
  f->open = 0;
}

/* Free f (no reference left). */
static void flight_free(struct rflight *f) {
  for (uint32_t i = 0; i < f->n; i++)
    if (f->blk[i])
      zobj_put(&f->blk[i]->obj);
  free(f);
}

/* Close f to newcomers; 1 when someone joined it (and waits for its
 * blocks). */
int rflight_close(struct remote *r, struct rflight *f) {
  pthread_mutex_lock(&r->flock);
  unlink_locked(r, f);
  int joined = f->joiners > 0;
  pthread_mutex_unlock(&r->flock);
  return joined;
}

/* The owner's end of f: rc (err when negative), the object size the
 * answer named (UINT64_MAX: none), and f->blk filled by the owner (the
 * references are f's). Wakes the waiters; drops the owner's reference. */
void rflight_end(struct remote *r, struct rflight *f, int rc,
                 const struct zerr *err, uint64_t total) {
  pthread_mutex_lock(&r->flock);
  unlink_locked(r, f);
  if (rc == 0 && f->delivered) {
    struct rdelivered *d = &r->delivered[r->ndelivered++ % RFLIGHT_DELIVERED];
    d->key = f->key;
    d->block = f->block;
    d->n = f->n;
  }
  f->rc = rc;
  if (rc < 0 && err)
    f->err = *err;
  f->total = total;
  f->done = 1;
  pthread_cond_broadcast(&r->fdone);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&r->flock);
  if (last)
    flight_free(f);
}

/* Wait until f is done; its result (err set when negative). The owner
 * always ends its flights (a transfer gives up with -EINTR on stop). With
 * may_leave, the wait also ends (-EINTR, f untouched after) once the
 * calling thread's request is abandoned (src/util/cancel.h), looking every
 * 50 ms: f goes on for whoever else waits for it. */
int rflight_wait(struct remote *r, struct rflight *f, int may_leave,
                 struct zerr *err) {
  pthread_mutex_lock(&r->flock);
  while (!f->done) {
    if (!may_leave) {
      pthread_cond_wait(&r->fdone, &r->flock);
      continue;
    }
    if (cancel_requested()) {
      pthread_mutex_unlock(&r->flock);
      return cancel_check(NULL, err);
    }
    cancel_sleep(&r->fdone, &r->flock, CLOCK_REALTIME, 50000000L);
  }
  int rc = f->rc;
  if (rc < 0 && err)
    *err = f->err;
  pthread_mutex_unlock(&r->flock);
  return rc;
}

/* Block b of a finished flight f (borrowed while f is held), or NULL when
 * f did not bring it whole. */
struct rblock *rflight_block(struct rflight *f, uint64_t b) {
  if (!f->done || b < f->block || b >= f->block + f->n)
    return NULL;
  return f->blk[b - f->block];
}

/* Take an extra reference to f (its owner's or a joiner's). */
void rflight_ref(struct remote *r, struct rflight *f) {
  pthread_mutex_lock(&r->flock);
  f->refs++;
  pthread_mutex_unlock(&r->flock);
}

/* Drop a reference; the last frees f and its blocks. NULL-safe. */
void rflight_put(struct remote *r, struct rflight *f) {
  if (!f)
    return;
  pthread_mutex_lock(&r->flock);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&r->flock);
  if (last)
    flight_free(f);
}

/* Is block b of okey in flight? 1 and in *end the first block after that
 * flight. delivered: also a block that a reader's large read had brought
 * straight into its buffer lately (what it decoded is cached above: a
 * prefetch of it would fetch bytes nobody reads): 2 and the end of that
 * run. */
int rflight_covered(struct remote *r, const struct memo_key *okey, uint64_t b,
                    int delivered, uint64_t *end) {
  pthread_mutex_lock(&r->flock);
  struct rflight *f = covering_locked(r, okey, b);
  int found = f != NULL;
  if (f)
    *end = f->block + f->n;
  uint64_t nd =
      r->ndelivered < RFLIGHT_DELIVERED ? r->ndelivered : RFLIGHT_DELIVERED;
  for (uint64_t i = 0; delivered && !found && i < nd; i++) {
    const struct rdelivered *d = &r->delivered[i];
    if (d->block <= b && b < d->block + d->n &&
        remote_same_object(&d->key, okey)) {
      found = 2;
      *end = d->block + d->n;
    }
  }
  pthread_mutex_unlock(&r->flock);
  return found;
}

/* ---- fetching runs of blocks through flights ---- */

/* One GET for blocks [block, block+n) of the object into blk[0..n) (new
 * references; a run cut short by the object's end yields fewer, shorter
 * blocks, the rest NULL). A first block beyond the end is -EIO. */
static int fetch_blocks(struct remote *r, const struct http_req *req,
                        uint64_t block, uint32_t n, struct io_stats *stats,
                        struct rblock **blk, uint64_t *total,
                        struct zerr *err) {
  size_t bs = r->cfg.block_size;
  size_t want = (size_t)n * bs;
  uint8_t *buf = malloc(want);
  if (!buf)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t got;
  struct http_meta meta;
  int rc =
      http_get_range(r->http, req, block * bs, want, buf, &got, &meta, err);
  if (rc < 0) {
    free(buf);
    return rc;
  }
  if (total)
    *total = meta.total;
  /* A 200 to a range that ends inside the object: Range ignored (some
   * servers answer 200 only when the range runs past the end). */
  if (meta.whole && meta.total != UINT64_MAX && block * bs + want < meta.total)
    rstream_host_mark_norange(r, req->url, req->log_url);
  char cond[RV_COND_MAX];
  uint64_t vh = rversion_of(&meta, req, cond);
  if (stats) {
    atomic_fetch_add_explicit(&stats->bytes_read, got, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats->reads, 1, memory_order_relaxed);
  }
  if (got == 0) {
    free(buf);
    return zerr_set(err, EIO,
                    "%s: nothing at offset %" PRIu64 " (the object is shorter)",
                    req->log_url, (uint64_t)(block * bs));
  }
  for (uint32_t i = 0; i < n && (size_t)i * bs < got; i++) {
    size_t len = got - (size_t)i * bs < bs ? got - (size_t)i * bs : bs;
    struct rblock *b = malloc(sizeof *b + len);
    if (!b) {
      if (i == 0) {
        free(buf);
        return zerr_set(err, ENOMEM, "out of memory");
      }
      break; /* the blocks after the first are by-products */
    }
    zobj_init(&b->obj, remote_rblock_destroy);
    b->len = len;
    b->total = meta.total;
    b->vhash = vh;
    memcpy(b->cond, cond, sizeof cond);
    memcpy(b->data, buf + (size_t)i * bs, len);
    blk[i] = b;
  }
  free(buf);
  return 0;
}

/* Fetch the blocks of claimed flight f with request req, put them in the
 * memo (all but block skip, which a memo fill returns itself: a new
 * reference in *skipped when asked) and end f. total (may be NULL): the
 * object's size the answer named. */
static int flight_fetch(struct remote *r, const struct http_req *req,
                        struct rflight *f, uint64_t skip,
                        struct io_stats *stats, struct rblock **skipped,
                        uint64_t *total, struct zerr *err) {
  uint64_t tot = UINT64_MAX;
  int rc = fetch_blocks(r, req, f->block, f->n, stats, f->blk, &tot, err);
  if (total)
    *total = tot;
  for (uint32_t i = 0; rc == 0 && i < f->n; i++) {
    struct rblock *b = f->blk[i];
    if (!b)
      continue;
    zobj_get(&b->obj); /* the memo's or the caller's; f keeps its own */
    if (f->block + i == skip && skipped) {
      *skipped = b;
      continue;
    }
    struct memo_key k = f->key;
    k.v[0] = f->block + i;
    memo_put(r->memo, &k, &b->obj, sizeof *b + b->len);
  }
  rflight_end(r, f, rc, err, tot);
  return rc;
}

/* Block b of object okey for a memo fill (a new reference in *obj): taken
 * from a transfer bringing it already, else fetched with the blocks after
 * it up to last (at most n, none cached or in flight) in one request. total
 * (may be NULL): the object's size the answer named. */
int rflight_get_block(struct remote *r, const struct http_req *req,
                      const struct memo_key *okey, uint64_t b, uint64_t last,
                      uint32_t n, struct io_stats *stats, struct zobj **obj,
                      size_t *cost, uint64_t *total, struct zerr *err) {
  for (;;) {
    struct rflight *fl;
    struct rblock *blk = NULL;
    int rc = rflight_claim(r, okey, b, last, n, 1, &fl);
    if (rc < 0)
      return zerr_set(err, ENOMEM, "out of memory");
    if (rc == RFLIGHT_JOINED) {
      rc = rflight_wait(r, fl, 1, err);
      if (rc == -EINTR && cancel_requested()) { /* left: fl may still run */
        rflight_put(r, fl);
        return rc;
      }
      if (total)
        *total = fl->total;
      if (rc == 0 && (blk = rflight_block(fl, b)))
        zobj_get(&blk->obj);
      rflight_put(r, fl);
      if (rc < 0)
        return rc;
      if (!blk) /* it brought part of b only: fetch b */
        continue;
    } else {
      ZTRY(flight_fetch(r, req, fl, b, stats, &blk, total, err));
    }
    *obj = &blk->obj;
    *cost = sizeof *blk + blk->len;
    return 0;
  }
}

/* Fetch object bytes [o, o+n) straight into dst; the object must hold
 * them all. The version they are of in *vh and cond (RV_COND_MAX), the
 * object's size the answer named in *total. */
static int part_fetch(struct rsrc *s, uint64_t o, size_t n, uint8_t *dst,
                      struct io_stats *stats, uint64_t *vh, char *vcond,
                      uint64_t *total, struct zerr *err) {
  size_t got;
  struct http_meta meta;
  struct http_req q;
  char cond[RV_COND_MAX];
  rversion_request(s, &q, cond);
  ZTRY(http_get_range(s->r->http, &q, o, n, dst, &got, &meta, err));
  *total = meta.total;
  if (meta.whole && meta.total != UINT64_MAX && o + n < meta.total)
    rstream_host_mark_norange(s->r, q.url, q.log_url);
  *vh = rversion_of(&meta, &q, vcond);
  ZTRY(rversion_check(s, *vh, vcond, err));
  if (stats) {
    atomic_fetch_add_explicit(&stats->bytes_read, got, memory_order_relaxed);
    atomic_fetch_add_explicit(&stats->reads, 1, memory_order_relaxed);
  }
  if (got != n)
    return zerr_set(err, EIO,
                    "%s: object ends at %" PRIu64 ", before the %zu bytes at "
                    "%" PRIu64 " it was named with",
                    s->url, o + got, n, o);
  return 0;
}

/* Fetch run f that a large read of object bytes [o, o+len) claimed, and
 * end it: dst NULL, into the blocks (and the memo); else straight into
 * the reader's buffer dst (object offset o), whole blocks made of those
 * bytes only for readers that joined f meanwhile. */
static void run_claimed(struct rsrc *s, struct rflight *f, uint8_t *dst,
                        uint64_t o, uint64_t len, struct io_stats *stats) {
  struct remote *r = s->r;
  struct zerr e = {0};
  if (!dst) {
    struct http_req q;
    char cond[RV_COND_MAX];
    rversion_request(s, &q, cond);
    (void)flight_fetch(r, &q, f, UINT64_MAX, stats, NULL, NULL, &e);
    return;
  }
  size_t bs = r->cfg.block_size;
  uint64_t a = f->block * bs > o ? f->block * bs : o;
  uint64_t z =
      (f->block + f->n) * bs < o + len ? (f->block + f->n) * bs : o + len;
  /* A run that holds only part of its first or last block fetches them
   * whole (through a buffer of its own) and caches them: the read next
   * to this one needs the rest of those blocks. */
  uint64_t fa = f->block * bs, fz = (f->block + f->n) * bs;
  uint64_t wend = s->win + s->base.size;
  if (fz > wend)
    fz = wend > z ? wend : z;
  int edges = fa < a || fz > z;
  uint8_t *buf = edges ? malloc(fz - fa) : NULL;
  if (!buf) {
    edges = 0;
    fa = a;
    fz = z;
  }
  uint8_t *at = edges ? buf : dst + (a - o);
  uint64_t vh = 0, total = UINT64_MAX;
  char cond[RV_COND_MAX] = "";
  int rc =
      part_fetch(s, fa, (size_t)(fz - fa), at, stats, &vh, cond, &total, &e);
  if (rc == 0 && edges)
    memcpy(dst + (a - o), buf + (a - fa), z - a);
  f->delivered = 1;
  if (rc == 0 && total != UINT64_MAX) { /* an open of it needs no request */
    struct memo_key sk;
    remote_url_key(s->req_url, TAG_SIZE, &sk);
    memo_value_put(r->memo, &sk, total);
  }
  int joined = rc == 0 && rflight_close(r, f);
  for (uint32_t i = 0; rc == 0 && i < f->n; i++) {
    uint64_t bstart = (f->block + i) * bs, bend = bstart + bs;
    if (total != UINT64_MAX && bend > total)
      bend = total; /* the object's last block is short */
    int edge = bstart < a || bend > z;
    if (bstart < fa || bend > fz || bend <= bstart || (!joined && !edge))
      continue; /* not brought whole, or nobody needs it as a block */
    struct rblock *b = malloc(sizeof *b + (bend - bstart));
    if (!b)
      break; /* the joiners fetch it themselves */
    zobj_init(&b->obj, remote_rblock_destroy);
    b->len = bend - bstart;
    b->total = total;
    b->vhash = vh;
    memcpy(b->cond, cond, sizeof cond);
    memcpy(b->data, edges ? buf + (bstart - fa) : dst + (bstart - o), b->len);
    f->blk[i] = b;
    if (edge) {
      struct memo_key k = f->key;
      k.v[0] = f->block + i;
      zobj_get(&b->obj);
      memo_put(r->memo, &k, &b->obj, sizeof *b + b->len);
    }
  }
  free(buf);
  rflight_end(r, f, rc, &e, total);
}

/* run_claimed, under the token of the reader waiting for f (a large
 * read's run, f->cancel): a worker gives up when that reader does. */
void rflight_run_claimed(struct rsrc *s, struct rflight *f, uint8_t *dst,
                         uint64_t o, uint64_t len, struct io_stats *stats) {
  struct cancel *tok = f->cancel; /* f may be gone after its end */
  struct cancel *prev = tok ? cancel_enter(tok) : NULL;
  run_claimed(s, f, dst, o, len, stats);
  if (tok)
    cancel_leave(prev);
}

/* Fetch ahead, into the blocks, the window's bytes from block b on, as
 * many as want (within readahead), in runs of part blocks queued as
 * read-ahead: a worker claims a run only when it starts it (so nobody
 * waits for a run still queued), and leaves alone what is cached or in
 * flight by then. */
static void look_ahead(struct rsrc *s, uint64_t b, uint64_t want,
                       uint32_t part) {
  struct remote *r = s->r;
  size_t bs = r->cfg.block_size;
  uint64_t wend = s->win + s->base.size;
  if (want > r->cfg.readahead)
    want = r->cfg.readahead;
  if (b * bs >= wend)
    return;
  uint64_t last = (b * bs + want < wend ? b * bs + want : wend) - 1;
  last /= bs;
  for (; b <= last; b += part) {
    uint32_t n = last - b + 1 < part ? (uint32_t)(last - b + 1) : part;
    if (remote_job_submit(s, b, n, NULL, NULL, 0, 0) < 0)
      return;
  }
}

/* One run of a large read: a flight it joined or claimed (own). */
struct lrun {
  struct rflight *f; /* a reference */
  int own;
};

/* Read object bytes [o, o+len) (many blocks) into dst, each block from
 * where it already is or is coming: the cache, or a transfer in flight
 * (a prefetch run, another reader's) that the read joins and waits for.
 * Only the runs nobody has are fetched, in parts of max_request (at least
 * DIRECT_PARTS of them) in parallel: into the blocks when a reader hinted
 * the object (its prefetch would fetch them again otherwise), else
 * straight into dst, no copy and no eviction of what is cached. */
int rflight_large_read(struct rsrc *s, uint64_t o, size_t len, uint8_t *dst,
                       int hinted, struct zerr *err) {
  struct remote *r = s->r;
  size_t bs = r->cfg.block_size;
  uint64_t end = o + len, first = o / bs, last = (end - 1) / bs;
  uint64_t nb = last - first + 1;
  uint32_t part = (uint32_t)(r->cfg.max_request / bs);
  if (nb / DIRECT_PARTS < part)
    part = nb / DIRECT_PARTS > 1 ? (uint32_t)(nb / DIRECT_PARTS) : 1;
  uint8_t *to = hinted ? NULL : dst;
  struct lrun *runs = malloc(nb * sizeof *runs);
  if (!runs)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t nr = 0, nown = 0;
  int rc = 0;
  for (uint64_t b = first; b <= last;) {
    struct rflight *f;
    int c = rflight_claim(r, &s->key, b, last, part, 0, &f);
    if (c < 0) {
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    if (c == RFLIGHT_CACHED) {
      b++;
      continue;
    }
    if (c == RFLIGHT_CLAIMED) {
      f->cancel = cancel_current(); /* whoever runs it gives up with us */
      rflight_ref(r, f);            /* ours, to read it after its end */
      if (nown++ > 0)
        (void)remote_job_submit(s, 0, 0, f, to, o, len);
    }
    runs[nr++] = (struct lrun){f, c == RFLIGHT_CLAIMED};
    b = f->block + f->n;
  }
  /* The rest of the window after a large read of an object nobody
   * hinted, when it is no larger than the read and a sixteenth of the
   * cache, is asked for now, beside it: a unit decoded from an index
   * reads the data after it next, one round trip later otherwise. */
  uint64_t rest = s->win + s->base.size > (last + 1) * bs
                      ? s->win + s->base.size - (last + 1) * bs
                      : 0;
  if (to && rc == 0 && rest && rest <= len && rest <= r->cfg.cache_size / 16)
    look_ahead(s, last + 1, rest, part);
  /* Our runs no worker has started: fetched here (a claimed run is never
   * left waiting behind other work). */
  for (size_t i = 0; i < nr; i++)
    if (runs[i].own && !atomic_exchange(&runs[i].f->started, 1))
      rflight_run_claimed(s, runs[i].f, to, o, len, s->stats);
  for (size_t i = 0; i < nr; i++) {
    struct zerr e = {0};
    int frc = rflight_wait(r, runs[i].f, 0, &e); /* they may fill dst */
    if (frc < 0 && !rc) {
      rc = frc;
      if (err)
        *err = e;
    }
  }
  size_t ri = 0;
  for (uint64_t b = first; rc == 0 && b <= last; b++) {
    while (ri < nr && runs[ri].f->block + runs[ri].f->n <= b)
      ri++;
    struct rflight *f = ri < nr && runs[ri].f->block <= b ? runs[ri].f : NULL;
    if (f && runs[ri].own && to)
      continue; /* already in dst, its version checked */
    struct memo_key k = s->key;
    k.v[0] = b;
    struct memo_ref *ref = NULL;
    const struct rblock *blk = f ? rflight_block(f, b) : NULL;
    if (!blk) { /* evicted since, or brought in part: fetch it */
      struct fetch ft = {s, b, remote_missing_run(r, &s->key, b, last),
                         s->stats};
      if (!memo_peek(r->memo, &k, &ref) &&
          (rc = memo_get(r->memo, &k, remote_block_fill, &ft, &ref, err)) < 0)
        break;
      blk = (const struct rblock *)memo_obj(ref);
    }
    rc = rversion_check(s, blk->vhash, blk->cond, err);
    uint64_t bstart = b * bs;
    uint64_t a = o > bstart ? o : bstart;
    uint64_t z = end < bstart + bs ? end : bstart + bs;
    if (rc == 0 && z > bstart + blk->len)
      rc = zerr_set(err, EIO,
                    "%s: object ends at %" PRIu64 ", before the %zu bytes "
                    "at %" PRIu64 " it was named with",
                    s->url, bstart + blk->len, len, o);
    if (rc == 0)
      memcpy(dst + (a - o), blk->data + (a - bstart), (size_t)(z - a));
    memo_release(r->memo, ref);
  }
  for (size_t i = 0; i < nr; i++)
    rflight_put(r, runs[i].f);
  free(runs);
  if (rc < 0 && err && !err->code)
    zerr_set(err, -rc, "remote read failed");
  return rc;
}

/* ---- the workers: read-ahead runs and claimed runs ---- */

/* memo fill of a block (a run starting there). */
int remote_block_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct fetch *f = ctx;
  struct http_req q;
  char cond[RV_COND_MAX];
  rversion_request(f->s, &q, cond);
  return rflight_get_block(f->s->r, &q, &f->s->key, f->block,
                           f->block + f->n - 1, f->n, f->stats, obj, cost, NULL,
                           err);
}

static void *ra_worker(void *arg);

/* Queue a job: a read-ahead run (fl NULL: a hint, dropped when the queue
 * is full or stopping), or a run a large read claimed (fl, referenced by
 * the job; its reader fetches it itself when the job is refused or not
 * started by then). 0, or -1 when refused. */
int remote_job_submit(struct rsrc *s, uint64_t block, uint32_t n,
                      struct rflight *fl, uint8_t *dst, uint64_t o,
                      uint64_t len) {
  struct remote *r = s->r;
  if (!r->threads)
    return -1;
  pthread_mutex_lock(&r->lock);
  /* Workers start at the first job, not in remote_new: the daemon forks
   * (fuse_daemonize) after the context is made, and a fork keeps no
   * threads. */
  while (!r->started && r->n_threads < r->cfg.workers &&
         pthread_create(&r->threads[r->n_threads], NULL, ra_worker, r) == 0)
    r->n_threads++;
  r->started = 1;
  if (r->quit || r->qlen == RA_QUEUE || !r->n_threads) {
    pthread_mutex_unlock(&r->lock);
    return -1;
  }
  struct job *j = &r->queue[(r->qhead + r->qlen) % RA_QUEUE];
  *j = (struct job){bytesrc_ref(&s->base), block, n, fl, dst, o, len};
  if (fl)
    rflight_ref(r, fl);
  r->qlen++;
  if (!fl)
    atomic_fetch_add(&s->ra_inflight, 1);
  pthread_cond_signal(&r->more);
  pthread_mutex_unlock(&r->lock);
  return 0;
}

/* A worker: fetch queued runs into the cache (no stats: the counters may
 * belong to a store already gone), or a run a reader claimed (its reader
 * waits for it, counters alive). */
static void *ra_worker(void *arg) {
  struct remote *r = arg;
  for (;;) {
    pthread_mutex_lock(&r->lock);
    while (!r->quit && !r->qlen)
      pthread_cond_wait(&r->more, &r->lock);
    if (r->quit) {
      pthread_mutex_unlock(&r->lock);
      return NULL;
    }
    struct job j = r->queue[r->qhead];
    r->qhead = (r->qhead + 1) % RA_QUEUE;
    r->qlen--;
    pthread_mutex_unlock(&r->lock);
    struct rsrc *s = (struct rsrc *)j.src;
    if (j.fl) {
      if (!atomic_exchange(&j.fl->started, 1))
        rflight_run_claimed(s, j.fl, j.dst, j.o, j.len, s->stats);
      rflight_put(r, j.fl);
      bytesrc_unref(j.src);
      continue;
    }
    struct memo_key k = s->key;
    k.v[0] = j.block;
    struct fetch f = {s, j.block, j.n, NULL};
    struct memo_ref *ref;
    struct zerr e = {0};
    uint64_t end;
    /* A block in flight is someone's already: read-ahead never waits. */
    if (!remote_block_cached(r, &s->key, j.block) &&
        !rflight_covered(r, &s->key, j.block, 0, &end) &&
        memo_get(r->memo, &k, remote_block_fill, &f, &ref, &e) == 0)
      memo_release(r->memo, ref);
    atomic_fetch_sub(&s->ra_inflight, 1);
    bytesrc_unref(j.src);
  }
}
