/* remote.c - remote objects as byte sources over one block cache, with
 * single flight, runs of blocks per request, parallel fetches and
 * read-ahead (see remote.h): the context, the keys, fetching blocks,
 * read-ahead and the byte source. Hosts that ignore Range are in
 * rstream.c, object versions in rversion.c, fetching ahead across
 * objects in rprefetch.c; the structs they share are in remote_int.h.
 *
 * Locks: remote.lock (the work queue; a leaf); remote.flock and
 * rsrc.vlock are initialised here, taken in rflight.c and rversion.c. */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/htab.h"
#include "s3.h"

/* Read-ahead requests in flight per source at most. */
#define RA_PER_SOURCE 4
/* Reads of at least this many blocks are large reads (large_read). */
#define DIRECT_MIN_BLOCKS 8
/* ... and are cut into at least this many parallel parts. */
#define DIRECT_PARTS 4
/* Sizes (and absences) of objects remembered. */
#define REMOTE_MAX_SIZES (1u << 20)

void remote_config_default(struct remote_config *c) {
  memset(c, 0, sizeof *c);
  http_config_default(&c->http);
  c->cache_size = 64u << 20;
  c->block_size = 64u << 10;
  c->max_request = 8u << 20;
  c->readahead = 32u << 20;
  c->workers = 4;
}

int remote_is_url(const char *s) {
  return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) ||
         !strncmp(s, "s3://", 5);
}

struct http_client *remote_http(struct remote *r) {
  return r->http;
}
const struct s3_config *remote_s3(const struct remote *r) { return r->s3; }
uint64_t remote_requests(const struct remote *r) {
  return http_requests(r->http);
}

/* ---- keys ---- */

/* The identity words of url into k (v[2..]): the URL itself when it fits,
 * else its length and two independent 64-bit hashes. */
void remote_url_key(const char *url, uint64_t tag, struct memo_key *k) {
  memset(k, 0, sizeof *k);
  k->level = MEMO_LEVEL_SOURCE;
  size_t n = strlen(url);
  size_t room = (MEMO_KEY_WORDS - 3) * sizeof(uint64_t);
  k->v[1] = tag;
  if (n <= room) {
    k->v[2] = n;
    memcpy(&k->v[3], url, n);
    k->n = (uint8_t)(3 + (n + 7) / 8);
  } else {
    k->v[2] = n | (1ull << 63);
    k->v[3] = htab_hash_bytes(url, n, 0x243f6a8885a308d3ull);
    k->v[4] = htab_hash_bytes(url, n, 0x13198a2e03707344ull);
    k->n = 5;
  }
}

/* Same object? (keys compared without their block word) */
int remote_same_object(const struct memo_key *a, const struct memo_key *b) {
  return a->n == b->n &&
         !memcmp(&a->v[1], &b->v[1], (size_t)(a->n - 1) * sizeof a->v[0]);
}

/* ---- fetching blocks ---- */

/* A cached block is one allocation. */
void remote_rblock_destroy(struct zobj *o) { free(o); }

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
  uint64_t vh = rversion_of(&meta, cond);
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
static int block_via_flight(struct remote *r, const struct http_req *req,
                            const struct memo_key *okey, uint64_t b,
                            uint64_t last, uint32_t n, struct io_stats *stats,
                            struct zobj **obj, size_t *cost, uint64_t *total,
                            struct zerr *err) {
  for (;;) {
    struct rflight *fl;
    struct rblock *blk = NULL;
    int rc = rflight_claim(r, okey, b, last, n, 1, &fl);
    if (rc < 0)
      return zerr_set(err, ENOMEM, "out of memory");
    if (rc == RFLIGHT_JOINED) {
      rc = rflight_wait(r, fl, err);
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

/* memo fill of a block (a run starting there). */
int remote_block_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct fetch *f = ctx;
  struct http_req q;
  char cond[RV_COND_MAX];
  rversion_request(f->s, &q, cond);
  return block_via_flight(f->s->r, &q, &f->s->key, f->block,
                          f->block + f->n - 1, f->n, f->stats, obj, cost, NULL,
                          err);
}

/* Is a block already there (ready)? */
int remote_block_cached(struct remote *r, const struct memo_key *okey,
                        uint64_t block) {
  struct memo_key k = *okey;
  k.v[0] = block;
  struct memo_ref *ref;
  if (!memo_peek(r->memo, &k, &ref))
    return 0;
  memo_release(r->memo, ref);
  return 1;
}

/* Blocks from b on that are missing, up to last (inclusive) and one
 * request's worth. */
uint32_t remote_missing_run(struct remote *r, const struct memo_key *okey,
                            uint64_t b, uint64_t last) {
  uint64_t max = r->cfg.max_request / r->cfg.block_size;
  if (max < 1)
    max = 1;
  uint32_t n = 1;
  while (b + n <= last && n < max && !remote_block_cached(r, okey, b + n))
    n++;
  return n;
}

/* ---- read-ahead ---- */

static void *ra_worker(void *arg);

/* Queue a job: a read-ahead run (fl NULL: a hint, dropped when the queue
 * is full or stopping), or a run a large read claimed (fl, referenced by
 * the job; its reader fetches it itself when the job is refused or not
 * started by then). 0, or -1 when refused. */
static int job_submit(struct rsrc *s, uint64_t block, uint32_t n,
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

/* Queue read-ahead of a run (a hint: dropped when the queue is full). */
static void ra_submit(struct rsrc *s, uint64_t block, uint32_t n) {
  (void)job_submit(s, block, n, NULL, NULL, 0, 0);
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
  *vh = rversion_of(&meta, vcond);
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
  uint64_t z = (f->block + f->n) * bs < o + len ? (f->block + f->n) * bs
                                                : o + len;
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
  uint64_t vh, total = UINT64_MAX;
  char cond[RV_COND_MAX];
  int rc = part_fetch(s, fa, (size_t)(fz - fa), at, stats, &vh, cond, &total,
                      &e);
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
    memcpy(b->data, (edges ? buf - fa : dst - o) + bstart, b->len);
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
    if (j.fl) { /* len 0: fetched ahead, nobody waits (no stats) */
      if (!atomic_exchange(&j.fl->started, 1))
        run_claimed(s, j.fl, j.dst, j.o, j.len, j.len ? s->stats : NULL);
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

/* After a sequential read ending at object offset end: issue read-ahead
 * so that the window ahead of the reader grows (doubling) to readahead. */
static void ra_after(struct rsrc *s, uint64_t end) {
  struct remote *r = s->r;
  size_t bs = r->cfg.block_size;
  uint64_t obj_end = s->win + s->base.size;
  uint64_t w = atomic_load(&s->ra_win);
  w = w ? w * 2 : 2 * bs;
  if (w > r->cfg.readahead)
    w = r->cfg.readahead;
  atomic_store(&s->ra_win, w);
  uint64_t target = end + w < obj_end ? end + w : obj_end;
  uint64_t from = atomic_load(&s->ra_end);
  if (from < end)
    from = end;
  uint64_t max_run = r->cfg.max_request / bs ? r->cfg.max_request / bs : 1;
  while (from < target && atomic_load(&s->ra_inflight) < RA_PER_SOURCE) {
    uint64_t b = from / bs;
    uint64_t last = (target - 1) / bs;
    uint64_t n = last - b + 1;
    if (n > max_run)
      n = max_run;
    if (!remote_block_cached(r, &s->key, b))
      ra_submit(s, b, (uint32_t)n);
    from = (b + n) * bs;
  }
  atomic_store(&s->ra_end, from);
}

/* ---- the byte source ---- */

/* Fetch ahead, into the blocks, the window's bytes from block b on, as
 * many as want (within readahead), in runs of part blocks: what is cached
 * or in flight is left alone, the workers fetch, nobody waits. */
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
  while (b <= last) {
    struct rflight *f;
    uint64_t e;
    if (rflight_covered(r, &s->key, b, 0, &e)) {
      b = e;
      continue;
    }
    int c = rflight_claim(r, &s->key, b, last, part, 0, &f);
    if (c < 0)
      return;
    if (c == RFLIGHT_CACHED) {
      b++;
      continue;
    }
    b = f->block + f->n;
    if (c == RFLIGHT_JOINED) {
      rflight_put(r, f);
      continue;
    }
    if (job_submit(s, 0, 0, f, NULL, 0, 0) < 0) {
      rflight_end(r, f, 1, NULL, UINT64_MAX); /* joiners fetch it */
      return;
    }
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
static int large_read(struct rsrc *s, uint64_t o, size_t len, uint8_t *dst,
                      struct zerr *err) {
  struct remote *r = s->r;
  size_t bs = r->cfg.block_size;
  uint64_t end = o + len, first = o / bs, last = (end - 1) / bs;
  uint64_t nb = last - first + 1;
  uint32_t part = (uint32_t)(r->cfg.max_request / bs);
  if (nb / DIRECT_PARTS < part)
    part = nb / DIRECT_PARTS > 1 ? (uint32_t)(nb / DIRECT_PARTS) : 1;
  uint8_t *to = rprefetch_hinted(r, &s->key) ? NULL : dst;
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
      rflight_ref(r, f); /* ours, to read it after its end */
      if (nown++ > 0)
        (void)job_submit(s, 0, 0, f, to, o, len);
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
      run_claimed(s, runs[i].f, to, o, len, s->stats);
  for (size_t i = 0; i < nr; i++) {
    struct zerr e = {0};
    int frc = rflight_wait(r, runs[i].f, &e);
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
    struct rflight *f =
        ri < nr && runs[ri].f->block <= b ? runs[ri].f : NULL;
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

/* Copy [off, off+len) of the window from blocks, fetching missing runs:
 * runs after the first go to the workers at once so that a large read
 * proceeds in parallel; the caller fetches the first, then waits on or
 * fetches the rest (single flight decides). */
static int rsrc_read_blocks(struct bytesrc *bs_, uint64_t off, size_t len,
                            void *dst, struct zerr *err);

/* Reads of an object that was opened: a refusal (a link-local address) or
 * an object gone since (404) are data errors, EIO with the reason. */
static int rsrc_read(struct bytesrc *bs_, uint64_t off, size_t len, void *dst,
                     struct zerr *err) {
  struct rsrc *s = (struct rsrc *)bs_;
  if (rversion_is_changed(s))
    return zerr_set(err, EIO,
                    "%s: object changed while mounted (a different version "
                    "answered); remount to read the new one",
                    s->url);
  int rc = rsrc_read_blocks(bs_, off, len, dst, err);
  if (rc == -ESTALE)
    rc = rversion_changed(s, err);
  if (rc == -EACCES || rc == -ENOENT) {
    if (err)
      err->code = EIO;
    rc = -EIO;
  }
  return rc;
}

static int rsrc_read_blocks(struct bytesrc *bs_, uint64_t off, size_t len,
                            void *dst, struct zerr *err) {
  struct rsrc *s = (struct rsrc *)bs_;
  struct remote *r = s->r;
  size_t bs = r->cfg.block_size;
  uint64_t o = s->win + off, end = o + len;
  uint64_t first = o / bs, last = (end - 1) / bs;
  int sequential = atomic_exchange(&s->next, off + len) == off && off > 0;
  /* A host that ignores Range: blocks come from one stream of the object
   * (a ranged request would read it from its start every time). */
  int norange = rstream_host_ignores_range(r, s->req_url);

  /* A large read (a whole compressed chunk, a data section) takes what is
   * cached or in flight and fetches the rest in parallel parts. */
  if (!norange && last - first + 1 >= DIRECT_MIN_BLOCKS) {
    int cached = remote_block_cached(r, &s->key, first + 1);
    int rc = large_read(s, o, len, dst, err);
    if (rc == 0 && sequential && cached)
      ra_after(s, end);
    return rc;
  }

  /* Hand the later missing runs of a large read to the workers. */
  if (!norange && last > first && r->threads) {
    uint64_t b = first;
    int k = 0;
    while (b <= last) {
      if (remote_block_cached(r, &s->key, b)) {
        b++;
        continue;
      }
      uint32_t n = remote_missing_run(r, &s->key, b, last);
      if (k++ > 0)
        ra_submit(s, b, n);
      b += n;
    }
  }
  uint8_t *out = dst;
  for (uint64_t b = first; b <= last; b++) {
    struct memo_key k = s->key;
    k.v[0] = b;
    struct memo_ref *ref;
    int rc = 1;
    if (memo_peek(r->memo, &k, &ref))
      rc = 0;
    else if (norange && (rc = rstream_block(s, b, &ref, err)) < 0)
      return rc;
    if (rc) {
      struct fetch f = {s, b, remote_missing_run(r, &s->key, b, last),
                        s->stats};
      if ((rc = memo_get(r->memo, &k, remote_block_fill, &f, &ref, err)) < 0)
        return rc;
    }
    const struct rblock *blk = (const struct rblock *)memo_obj(ref);
    if ((rc = rversion_check(s, blk->vhash, blk->cond, err)) < 0) {
      memo_release(r->memo, ref);
      return rc;
    }
    uint64_t bstart = b * bs;
    uint64_t a = o > bstart ? o : bstart;
    uint64_t z = end < bstart + bs ? end : bstart + bs;
    if (z > bstart + blk->len) {
      memo_release(r->memo, ref);
      return zerr_set(err, EIO,
                      "%s: object ends at %" PRIu64 ", before the %zu bytes "
                      "at %" PRIu64 " it was named with",
                      s->url, bstart + blk->len, len, o);
    }
    memcpy(out + (a - o), blk->data + (a - bstart), (size_t)(z - a));
    memo_release(r->memo, ref);
  }
  if (sequential && !norange)
    ra_after(s, end);
  return 0;
}

static void rsrc_destroy(struct bytesrc *b) {
  struct rsrc *s = (struct rsrc *)b;
  pthread_mutex_destroy(&s->vlock);
  free(s->url);
  free(s->req_url);
  free(s);
}

static const struct bytesrc_ops rsrc_ops = {rsrc_read, rsrc_destroy};

/* The request URL of url: itself for http(s), the S3 endpoint URL of an
 * s3:// one. */
int remote_request_url(struct remote *r, const char *url, char **out,
                       struct zerr *err) {
  if (strncmp(url, "s3://", 5)) {
    if (!(*out = strdup(url)))
      return zerr_set(err, ENOMEM, "out of memory");
    return 0;
  }
  if (!r->s3)
    return zerr_set(err, EIO, "%s: s3:// URLs need S3 settings", url);
  char *bucket, *key;
  ZTRY(s3_parse_url(url, &bucket, &key, err));
  int rc = s3_object_url(r->s3, bucket, key, out, err);
  free(bucket);
  free(key);
  return rc;
}

/* Fill a request for req_url (signed when it is S3 and signing is on). */
static void request_init(struct remote *r, const char *url, const char *req_url,
                         const char *log_url, int allow_link_local,
                         struct http_req *q) {
  memset(q, 0, sizeof *q);
  q->url = req_url;
  q->log_url = log_url;
  q->allow_link_local = allow_link_local;
  if (!strncmp(url, "s3://", 5) && r->have_sign) {
    q->headers = r->sign.headers;
    q->aws_sigv4 = r->sign.sigv4;
    q->userpwd = r->sign.userpwd;
  }
}

void remote_s3_request(struct remote *r, const char *req_url,
                       const char *log_url, struct http_req *q) {
  request_init(r, "s3://", req_url, log_url, 0, q);
}

struct size_fill {
  struct remote *r;
  const struct http_req *req;
  const struct memo_key *okey;
};

/* memo value fill: an object's size, from the first block's response (the
 * block stays cached). */
static int size_fill(void *ctx, uint64_t *value, struct zerr *err) {
  struct size_fill *f = ctx;
  struct zobj *obj = NULL;
  size_t cost;
  uint64_t total = UINT64_MAX;
  struct memo_key bk = *f->okey;
  bk.v[1] = TAG_BLOCK;
  struct memo_ref *ref;
  if (memo_peek(f->r->memo, &bk, &ref)) { /* a reader had it: its size */
    total = ((const struct rblock *)memo_obj(ref))->total;
    memo_release(f->r->memo, ref);
    if (total != UINT64_MAX) {
      *value = total;
      return 0;
    }
  }
  int rc = block_via_flight(f->r, f->req, &bk, 0, 0, 1, NULL, &obj, &cost,
                            &total, err);
  if (rc == -EIO && !obj) {
    /* "nothing at offset 0": an empty object (a 416 for bytes=0-). */
    if (total == 0) {
      zerr_clear(err);
      *value = 0;
      return 0;
    }
    return rc;
  }
  if (rc < 0)
    return rc;
  const struct rblock *b = (const struct rblock *)obj;
  if (total == UINT64_MAX) {
    if (b->len < f->r->cfg.block_size) {
      total = b->len; /* the whole object came */
    } else {
      zobj_put(obj);
      return zerr_set(err, EIO,
                      "%s: the server did not say how large the "
                      "object is",
                      f->req->log_url);
    }
  }
  bk.v[0] = 0;
  memo_put(f->r->memo, &bk, obj, cost);
  *value = total;
  return 0;
}

int remote_open(struct remote *r, const char *url, uint64_t off, uint64_t len,
                int allow_link_local, struct io_stats *stats,
                struct bytesrc **out, struct zerr *err) {
  if (!remote_is_url(url))
    return zerr_set(err, EIO, "%s: not an http://, https:// or s3:// URL", url);
  struct rsrc *s = calloc(1, sizeof *s);
  if (!s || !(s->url = strdup(url))) {
    free(s);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  pthread_mutex_init(&s->vlock, NULL);
  int rc = remote_request_url(r, url, &s->req_url, err);
  if (rc < 0) {
    rsrc_destroy(&s->base);
    return rc;
  }
  s->r = r;
  s->stats = stats;
  request_init(r, url, s->req_url, s->url, allow_link_local, &s->req);
  remote_url_key(s->req_url, TAG_BLOCK, &s->key);
  if (len == UINT64_MAX) {
    struct memo_key sk;
    remote_url_key(s->req_url, TAG_SIZE, &sk);
    struct size_fill f = {r, &s->req, &s->key};
    uint64_t size;
    rc = memo_value(r->memo, &sk, size_fill, &f, &size, err);
    if (rc < 0) {
      rsrc_destroy(&s->base);
      return rc;
    }
    if (off > size) {
      rsrc_destroy(&s->base);
      return zerr_set(err, EIO,
                      "%s: offset %" PRIu64 " is past the end (%" PRIu64
                      " bytes)",
                      url, off, size);
    }
    len = size - off;
  }
  if (off + len < off) {
    rsrc_destroy(&s->base);
    return zerr_set(err, EIO, "%s: range overflows", url);
  }
  s->base.ops = &rsrc_ops;
  s->base.size = len;
  s->base.refs = 1;
  s->win = off;
  *out = &s->base;
  return 0;
}

int remote_read_all(struct remote *r, const char *url, size_t max,
                    uint8_t **out, size_t *len, struct zerr *err) {
  if (!remote_is_url(url))
    return zerr_set(err, EIO, "%s: not an http://, https:// or s3:// URL", url);
  char *req_url;
  ZTRY(remote_request_url(r, url, &req_url, err));
  struct http_req q;
  request_init(r, url, req_url, url, 0, &q);
  int rc = http_get_all(r->http, &q, max, out, len, err);
  free(req_url);
  return rc;
}

/* ---- context ---- */

int remote_new(const struct remote_config *cfg, struct s3_config *s3,
               struct remote **out, struct zerr *err) {
  struct remote *r = calloc(1, sizeof *r);
  if (!r) {
    s3_config_free(s3);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  r->cfg = *cfg;
  if (r->cfg.block_size < 4096)
    r->cfg.block_size = 4096;
  if (r->cfg.max_request < r->cfg.block_size)
    r->cfg.max_request = r->cfg.block_size;
  r->s3 = s3;
  r->cfg.http.stop = &r->stop;
  pthread_mutex_init(&r->lock, NULL);
  pthread_cond_init(&r->more, NULL);
  pthread_mutex_init(&r->slock, NULL);
  pthread_cond_init(&r->sgone, NULL);
  pthread_mutex_init(&r->flock, NULL);
  pthread_cond_init(&r->fdone, NULL);
  int rc = 0;
  if (s3 && !s3_is_anonymous(s3)) {
    rc = s3_signing_new(s3, &r->sign, err);
    r->have_sign = rc == 0;
  } else if (s3) {
    rc = s3_signing_new(s3, &r->sign, err); /* requester-pays header */
    r->have_sign = rc == 0;
  }
  struct memo_config mc = {r->cfg.cache_size, REMOTE_MAX_SIZES, &r->stop};
  if (rc == 0)
    rc = http_client_new(&r->cfg.http, &r->http, err);
  if (rc == 0)
    rc = memo_new(&mc, &r->memo, err);
  if (rc == 0 && r->cfg.workers > 0 &&
      !(r->threads = calloc((size_t)r->cfg.workers, sizeof *r->threads)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && rprefetch_new(r) < 0)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    remote_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

void remote_stop(struct remote *r) {
  if (r)
    atomic_store(&r->stop, 1);
}

void remote_free(struct remote *r) {
  if (!r)
    return;
  atomic_store(&r->stop, 1);
  rprefetch_free(r);
  pthread_mutex_lock(&r->lock);
  r->quit = 1;
  pthread_cond_broadcast(&r->more);
  pthread_mutex_unlock(&r->lock);
  for (int i = 0; i < r->n_threads; i++)
    pthread_join(r->threads[i], NULL);
  /* Streams see the stop flag within 50 ms (or their transfer ends with
   * -EINTR); their threads are detached, so wait for them. */
  rstream_stop_all(r);
  for (; r->qlen; r->qlen--, r->qhead = (r->qhead + 1) % RA_QUEUE) {
    struct job *j = &r->queue[r->qhead];
    if (j->fl) { /* its reader waits for it: end it unless it began */
      if (!atomic_exchange(&j->fl->started, 1)) {
        struct zerr e = {0};
        rflight_end(r, j->fl,
                    zerr_set(&e, EINTR, "interrupted: zarrfs is shutting down"),
                    &e, UINT64_MAX);
      }
      rflight_put(r, j->fl);
    }
    bytesrc_unref(j->src);
  }
  free(r->threads);
  memo_free(r->memo);
  http_client_free(r->http);
  if (r->have_sign)
    s3_signing_free(&r->sign);
  s3_config_free(r->s3);
  pthread_cond_destroy(&r->more);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->sgone);
  pthread_mutex_destroy(&r->slock);
  pthread_cond_destroy(&r->fdone);
  pthread_mutex_destroy(&r->flock);
  free(r);
}
