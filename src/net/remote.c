/* remote.c - remote objects as byte sources over one block cache, with
 * single flight, runs of blocks per request, parallel fetches and
 * read-ahead (see remote.h). */
#define _GNU_SOURCE
#include "remote.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/htab.h"
#include "../util/log.h"
#include "../util/memo.h"
#include "s3.h"

/* Read-ahead jobs queued at most (beyond: dropped, it is only a hint). */
#define RA_QUEUE 64
/* Read-ahead requests in flight per source at most. */
#define RA_PER_SOURCE 4
/* Reads of at least this many blocks bypass the blocks (direct_read). */
#define DIRECT_MIN_BLOCKS 8
/* ... and are cut into at least this many parallel parts. */
#define DIRECT_PARTS 4
/* Sizes (and absences) of objects remembered. */
#define REMOTE_MAX_SIZES (1u << 20)
/* Key tags: a block of an object, the size of an object, "the object
 * changed while mounted". */
#define TAG_BLOCK 0x424c4bu
#define TAG_SIZE 0x53495au
#define TAG_CHANGED 0x434847u
#define TAG_VERSION 0x564552u
/* Longest precondition header kept ("If-Match: ETAG"). */
#define RV_COND_MAX 200
/* Hosts remembered as ignoring Range. */
#define NORANGE_HOSTS 64
/* Objects of such hosts streamed at once (more readers fall back to
 * ranged requests, answered whole and cut). */
#define STREAMS_MAX 4
/* A stream nobody reads from for this long ends (its connection is
 * freed; a later read starts the object again). */
#define STREAM_IDLE_MS 5000

/* A part of a large read fetched straight into the reader's buffer; the
 * reader waits for all its parts (its buffer must outlive them). */
struct part_set {
  pthread_mutex_t lock;
  pthread_cond_t done;
  int left; /* parts not finished */
  int rc;   /* first failure */
  struct zerr err;
};

struct job {
  struct bytesrc *src; /* a reference, dropped when done */
  uint64_t block;      /* read-ahead: first block; part: object offset */
  uint32_t n;          /* read-ahead: blocks; part: bytes */
  uint8_t *dst;        /* part: where the bytes go (NULL: read-ahead) */
  struct part_set *set;
};

struct rstream;
struct remote_pf;
static int pf_new(struct remote *r);
static void pf_free(struct remote *r);
static void pf_wait(struct remote *r, const struct memo_key *okey,
                    uint64_t first, uint64_t last);

struct remote {
  struct remote_config cfg;
  struct http_client *http;
  struct s3_config *s3; /* owned, may be NULL */
  struct s3_signing sign;
  int have_sign;
  struct memo *memo; /* blocks (objects) and sizes (values) */
  atomic_int stop;
  /* read-ahead workers */
  pthread_mutex_t lock; /* guards the queue and quit */
  pthread_cond_t more;
  struct job queue[RA_QUEUE];
  int qhead, qlen, quit, started;
  pthread_t *threads;
  int n_threads;
  /* hosts that ignore Range, and the streams reading their objects */
  pthread_mutex_t slock; /* guards hosts, streams, n_streams; takes
                          rstream.lock under it, nothing else */
  pthread_cond_t sgone;  /* a stream thread ended */
  char hosts[NORANGE_HOSTS][128];
  int n_hosts;
  struct rstream *streams[STREAMS_MAX];
  int n_streams; /* stream threads running */
  /* fetching ahead of readers (the prefetch section) */
  struct remote_pf *pf;
};

/* A fetched block: data[len], len < block_size only at the object's end.
 * vhash identifies the version it came from (0: unknown), cond is the
 * precondition that asks for that version ("" when none can). */
struct rblock {
  struct zobj obj;
  size_t len;
  uint64_t vhash;
  char cond[RV_COND_MAX];
  uint8_t data[];
};

/* A remote byte source: a window of an object. */
struct rsrc {
  struct bytesrc base;
  struct remote *r;
  char *url;     /* as named (messages) */
  char *req_url; /* what is requested (s3:// resolved) */
  struct http_req req;
  uint64_t win; /* window start in the object */
  struct io_stats *stats;
  struct memo_key key;     /* object identity: v[0] block, v[1] tag, v[2..] */
  _Atomic uint64_t next;   /* where the last read ended (window) */
  _Atomic uint64_t ra_end; /* object offset read-ahead was issued to */
  _Atomic uint64_t ra_win; /* current read-ahead window (bytes) */
  _Atomic int ra_inflight;
  /* The version this source reads: learned from the first answer that
   * names one, asked for (If-Match, If-Unmodified-Since) from then on. */
  pthread_mutex_t vlock; /* guards have_v, vhash, cond (a leaf) */
  int have_v;
  uint64_t vhash;
  char cond[RV_COND_MAX];
  atomic_int changed;
};

/* An object of a host that ignores Range, read once from its start by a
 * thread of its own into the blocks, paced by its readers. Lock order:
 * remote.slock before rstream.lock. */
struct rstream {
  struct rsrc *s;       /* a reference (its request and key) */
  struct memo_key key;  /* the object (v[0] unused) */
  pthread_mutex_t lock; /* guards the fields below (a leaf) */
  pthread_cond_t moved; /* pos, done or want changed */
  uint64_t pos;         /* object bytes delivered as blocks */
  uint64_t want;        /* readers wait for bytes up to here */
  int64_t last_want_ms; /* when a reader last asked */
  int done, quit, refs;
  int rc;
  struct zerr err;
  /* the block being filled (stream thread only) */
  uint8_t *buf;
  size_t fill;
  uint64_t vhash;
  char cond[RV_COND_MAX];
  struct http_req req;
  char req_cond[RV_COND_MAX];
};

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

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- versions ---- */

/* The version a response names (ETag, else Last-Modified, else the size)
 * as a hash (0: none), and in cond the precondition that asks for it
 * ("" when none can: a weak ETag, the size). */
static uint64_t version_of(const struct http_meta *m, char *cond) {
  cond[0] = '\0';
  if (m->etag[0]) {
    if (strncmp(m->etag, "W/", 2))
      snprintf(cond, RV_COND_MAX, "If-Match: %s", m->etag);
    return htab_hash_bytes(m->etag, strlen(m->etag), 0x45544147u) | 1;
  }
  if (m->modified[0]) {
    snprintf(cond, RV_COND_MAX, "If-Unmodified-Since: %s", m->modified);
    return htab_hash_bytes(m->modified, strlen(m->modified), 0x4c4d4f44u) | 1;
  }
  if (m->total != UINT64_MAX)
    return htab_hash_bytes(&m->total, sizeof m->total, 0x53495a45u) | 1;
  return 0;
}

/* The object of s changed while mounted: remembered for every source of
 * it, and every read of it fails from now on. */
static int object_changed(struct rsrc *s, struct zerr *err) {
  atomic_store(&s->changed, 1);
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_CHANGED;
  memo_value_put(s->r->memo, &k, 1);
  return zerr_set(err, EIO,
                  "%s: object changed while mounted (a different version "
                  "answered); remount to read the new one",
                  s->url);
}

/* Is s's object known to have changed? */
static int is_changed(struct rsrc *s) {
  if (atomic_load(&s->changed))
    return 1;
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_CHANGED;
  uint64_t v;
  if (memo_value_peek(s->r->memo, &k, &v) && v) {
    atomic_store(&s->changed, 1);
    return 1;
  }
  return 0;
}

/* memo value fill: the version met first becomes the object's. */
static int version_fill(void *ctx, uint64_t *value, struct zerr *err) {
  (void)err;
  *value = *(const uint64_t *)ctx;
  return 0;
}

/* Bytes of version vh (cond asks for it) are about to be used by s. The
 * object's version is the first one any of its sources met (remembered
 * by URL, with the sizes); another one means the object changed. */
static int version_check(struct rsrc *s, uint64_t vh, const char *cond,
                         struct zerr *err) {
  if (!vh)
    return 0;
  pthread_mutex_lock(&s->vlock);
  int have = s->have_v;
  uint64_t mine = s->vhash;
  pthread_mutex_unlock(&s->vlock);
  if (!have) {
    struct memo_key k = s->key;
    k.v[0] = 0;
    k.v[1] = TAG_VERSION;
    int rc = memo_value(s->r->memo, &k, version_fill, &vh, &mine, err);
    if (rc < 0)
      return rc;
    pthread_mutex_lock(&s->vlock);
    if (!s->have_v) {
      s->have_v = 1;
      s->vhash = mine;
    }
    mine = s->vhash;
    pthread_mutex_unlock(&s->vlock);
  }
  if (mine != vh)
    return object_changed(s, err);
  pthread_mutex_lock(&s->vlock);
  if (!s->cond[0] && cond[0])
    snprintf(s->cond, sizeof s->cond, "%s", cond);
  pthread_mutex_unlock(&s->vlock);
  return 0;
}

/* s's request, asking for the version it reads once it knows one (cond:
 * room for the header, RV_COND_MAX). */
static void request_for(struct rsrc *s, struct http_req *q, char *cond) {
  *q = s->req;
  pthread_mutex_lock(&s->vlock);
  if (s->have_v && s->cond[0]) {
    memcpy(cond, s->cond, RV_COND_MAX);
    q->cond = cond;
  }
  pthread_mutex_unlock(&s->vlock);
}

/* ---- hosts that ignore Range ---- */

/* The scheme and authority of url ("http://host:port"), at most n-1
 * bytes. */
static void host_of(const char *url, char *out, size_t n) {
  const char *p = strstr(url, "://");
  size_t l = p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : strlen(url);
  snprintf(out, n, "%.*s", (int)l, url);
}

/* Does url's host ignore Range? */
static int host_ignores_range(struct remote *r, const char *url) {
  char h[128];
  host_of(url, h, sizeof h);
  pthread_mutex_lock(&r->slock);
  int found = 0;
  for (int i = 0; i < r->n_hosts && !found; i++)
    found = !strcmp(r->hosts[i], h);
  pthread_mutex_unlock(&r->slock);
  return found;
}

/* url's host answered a range request with the whole object: remember
 * it (one log line per host). */
static void host_mark_norange(struct remote *r, const char *url,
                              const char *log_url) {
  char h[128];
  host_of(url, h, sizeof h);
  pthread_mutex_lock(&r->slock);
  int found = 0;
  for (int i = 0; i < r->n_hosts && !found; i++)
    found = !strcmp(r->hosts[i], h);
  if (!found && r->n_hosts < NORANGE_HOSTS)
    memcpy(r->hosts[r->n_hosts++], h, sizeof h);
  pthread_mutex_unlock(&r->slock);
  if (!found)
    zlog(ZLOG_WARN,
         "%s: the server ignores Range (it answered the whole object): "
         "objects of %s are read once, from their start, into the block "
         "cache",
         log_url, h);
}

/* ---- keys ---- */

/* The identity words of url into k (v[2..]): the URL itself when it fits,
 * else its length and two independent 64-bit hashes. */
static void url_key(const char *url, uint64_t tag, struct memo_key *k) {
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

/* ---- fetching blocks ---- */

static void rblock_destroy(struct zobj *o) { free(o); }

struct fetch {
  struct rsrc *s;
  uint64_t block; /* first block of the run */
  uint32_t n;     /* blocks in the run */
  struct io_stats *stats;
};

/* One GET for blocks [block, block+n) of the object; the first is the fill's
 * result, the rest go into the memo as by-products. A run cut short by the
 * object's end yields fewer (shorter) blocks; a first block beyond the end
 * is -EIO. */
static int fetch_run(struct remote *r, const struct http_req *req,
                     const struct memo_key *okey, uint64_t block, uint32_t n,
                     struct io_stats *stats, struct zobj **obj, size_t *cost,
                     uint64_t *total, struct zerr *err) {
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
    host_mark_norange(r, req->url, req->log_url);
  char cond[RV_COND_MAX];
  uint64_t vh = version_of(&meta, cond);
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
  struct rblock *first = NULL;
  for (uint32_t i = 0; i < n && (size_t)i * bs < got; i++) {
    size_t len = got - (size_t)i * bs < bs ? got - (size_t)i * bs : bs;
    struct rblock *b = malloc(sizeof *b + len);
    if (!b) {
      if (!first) {
        free(buf);
        return zerr_set(err, ENOMEM, "out of memory");
      }
      break; /* by-products are optional */
    }
    zobj_init(&b->obj, rblock_destroy);
    b->len = len;
    b->vhash = vh;
    memcpy(b->cond, cond, sizeof cond);
    memcpy(b->data, buf + (size_t)i * bs, len);
    if (i == 0) {
      first = b;
    } else {
      struct memo_key k = *okey;
      k.v[0] = block + i;
      memo_put(r->memo, &k, &b->obj, sizeof *b + len);
    }
  }
  free(buf);
  *obj = &first->obj;
  *cost = sizeof *first + first->len;
  return 0;
}

/* memo fill of a block (a run starting there). */
static int block_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct fetch *f = ctx;
  struct http_req q;
  char cond[RV_COND_MAX];
  request_for(f->s, &q, cond);
  return fetch_run(f->s->r, &q, &f->s->key, f->block, f->n, f->stats, obj, cost,
                   NULL, err);
}

/* Is a block already there (ready)? */
static int block_cached(struct remote *r, const struct memo_key *okey,
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
static uint32_t missing_run(struct remote *r, const struct memo_key *okey,
                            uint64_t b, uint64_t last) {
  uint64_t max = r->cfg.max_request / r->cfg.block_size;
  if (max < 1)
    max = 1;
  uint32_t n = 1;
  while (b + n <= last && n < max && !block_cached(r, okey, b + n))
    n++;
  return n;
}

/* ---- read-ahead ---- */

static void *ra_worker(void *arg);

/* Queue a job (a hint: dropped when the queue is full or stopping). */
static int job_submit(struct rsrc *s, uint64_t block, uint32_t n, uint8_t *dst,
                      struct part_set *set) {
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
  j->src = bytesrc_ref(&s->base);
  j->block = block;
  j->n = n;
  j->dst = dst;
  j->set = set;
  r->qlen++;
  if (!dst)
    atomic_fetch_add(&s->ra_inflight, 1);
  pthread_cond_signal(&r->more);
  pthread_mutex_unlock(&r->lock);
  return 0;
}

/* Queue read-ahead of a run (a hint: dropped when the queue is full). */
static void ra_submit(struct rsrc *s, uint64_t block, uint32_t n) {
  (void)job_submit(s, block, n, NULL, NULL);
}

/* Fetch object bytes [o, o+n) straight into dst; the object must hold
 * them all. */
static int part_fetch(struct rsrc *s, uint64_t o, size_t n, uint8_t *dst,
                      struct io_stats *stats, struct zerr *err) {
  size_t got;
  struct http_meta meta;
  struct http_req q;
  char cond[RV_COND_MAX], vcond[RV_COND_MAX];
  request_for(s, &q, cond);
  ZTRY(http_get_range(s->r->http, &q, o, n, dst, &got, &meta, err));
  if (meta.whole && meta.total != UINT64_MAX && o + n < meta.total)
    host_mark_norange(s->r, q.url, q.log_url);
  ZTRY(version_check(s, version_of(&meta, vcond), vcond, err));
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

/* One part finished (rc, err) in set. */
static void part_done(struct part_set *set, int rc, const struct zerr *err) {
  pthread_mutex_lock(&set->lock);
  if (rc < 0 && !set->rc) {
    set->rc = rc;
    set->err = *err;
  }
  set->left--;
  pthread_cond_broadcast(&set->done);
  pthread_mutex_unlock(&set->lock);
}

/* A worker: fetch queued runs into the cache (no stats: the counters may
 * belong to a store already gone). */
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
    if (j.dst) {
      struct zerr e = {0};
      int rc = part_fetch(s, j.block, j.n, j.dst, NULL, &e);
      part_done(j.set, rc, &e);
      bytesrc_unref(j.src);
      continue;
    }
    struct memo_key k = s->key;
    k.v[0] = j.block;
    struct fetch f = {s, j.block, j.n, NULL};
    struct memo_ref *ref;
    struct zerr e = {0};
    if (!block_cached(r, &s->key, j.block) &&
        memo_get(r->memo, &k, block_fill, &f, &ref, &e) == 0)
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
    if (!block_cached(r, &s->key, b))
      ra_submit(s, b, (uint32_t)n);
    from = (b + n) * bs;
  }
  atomic_store(&s->ra_end, from);
}

/* ---- streams (hosts that ignore Range) ---- */

/* How far a stream may run ahead of what its readers asked for. */
static uint64_t stream_window(const struct remote *r) {
  uint64_t w = r->cfg.readahead;
  if (w > r->cfg.cache_size / 4)
    w = r->cfg.cache_size / 4;
  if (w < 2 * r->cfg.block_size)
    w = 2 * r->cfg.block_size;
  return w;
}

/* Drop a reference to a stream (the last frees it). */
static void stream_put(struct rstream *st) {
  pthread_mutex_lock(&st->lock);
  int last = --st->refs == 0;
  pthread_mutex_unlock(&st->lock);
  if (!last)
    return;
  bytesrc_unref(&st->s->base);
  free(st->buf);
  pthread_cond_destroy(&st->moved);
  pthread_mutex_destroy(&st->lock);
  free(st);
}

/* Hand the filled block over to the cache and its waiters; then wait
 * while the stream is a window ahead of its readers. 0, or 1 to end the
 * transfer (stopping, or nobody reads any more). */
static int stream_emit(struct rstream *st, uint64_t total) {
  struct remote *r = st->s->r;
  size_t bs = r->cfg.block_size;
  struct rblock *b = malloc(sizeof *b + st->fill);
  if (b) {
    zobj_init(&b->obj, rblock_destroy);
    b->len = st->fill;
    b->vhash = st->vhash;
    memcpy(b->cond, st->cond, sizeof b->cond);
    memcpy(b->data, st->buf, st->fill);
    struct memo_key k = st->key;
    pthread_mutex_lock(&st->lock);
    k.v[0] = st->pos / bs;
    pthread_mutex_unlock(&st->lock);
    memo_put(r->memo, &k, &b->obj, sizeof *b + st->fill);
  }
  uint64_t window = stream_window(r);
  pthread_mutex_lock(&st->lock);
  st->pos += st->fill;
  st->fill = 0;
  if (total != UINT64_MAX && st->pos >= total)
    st->done = 1;
  pthread_cond_broadcast(&st->moved);
  int end = 0;
  while (!st->done && st->pos >= st->want + window) {
    if (st->quit || atomic_load(&r->stop) ||
        now_ms() - st->last_want_ms > STREAM_IDLE_MS) {
      end = 1;
      break;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&st->moved, &st->lock, &ts);
  }
  pthread_mutex_unlock(&st->lock);
  return end;
}

/* The body of a streamed object, cut into blocks. A retry starts again
 * at 0: bytes already delivered are skipped. */
static int stream_sink(void *ud, uint64_t off, const uint8_t *p, size_t n,
                       const struct http_meta *m, struct zerr *err) {
  struct rstream *st = ud;
  size_t bs = st->s->r->cfg.block_size;
  pthread_mutex_lock(&st->lock);
  int quit = st->quit;
  pthread_mutex_unlock(&st->lock);
  if (quit)
    return 1;
  if (off == 0) {
    char cond[RV_COND_MAX];
    uint64_t vh = version_of(m, cond);
    if (!st->vhash) {
      st->vhash = vh;
      memcpy(st->cond, cond, sizeof cond);
    } else if (vh && vh != st->vhash) {
      return object_changed(st->s, err);
    }
  }
  if (!n) /* the end of the object */
    return st->fill ? stream_emit(st, off) : 0;
  pthread_mutex_lock(&st->lock);
  uint64_t have = st->pos + st->fill;
  pthread_mutex_unlock(&st->lock);
  if (off + n <= have)
    return 0;
  size_t skip = (size_t)(have - off);
  p += skip;
  n -= skip;
  while (n) {
    size_t k = bs - st->fill < n ? bs - st->fill : n;
    memcpy(st->buf + st->fill, p, k);
    st->fill += k;
    p += k;
    n -= k;
    if (st->fill == bs && stream_emit(st, m->total))
      return 1;
  }
  return 0;
}

/* A stream's thread: the whole transfer, then wake everyone. */
static void *stream_main(void *arg) {
  struct rstream *st = arg;
  struct remote *r = st->s->r;
  struct zerr e = {0};
  int rc = http_get_stream(r->http, &st->req, stream_sink, st, &e);
  if (rc == -ESTALE)
    rc = object_changed(st->s, &e);
  pthread_mutex_lock(&st->lock);
  st->done = 1;
  st->rc = rc;
  st->err = e;
  pthread_cond_broadcast(&st->moved);
  pthread_mutex_unlock(&st->lock);
  pthread_mutex_lock(&r->slock);
  int listed = 0;
  for (int i = 0; i < STREAMS_MAX; i++)
    if (r->streams[i] == st) {
      r->streams[i] = NULL;
      listed = 1;
    }
  pthread_mutex_unlock(&r->slock);
  if (listed)
    stream_put(st); /* the table's reference */
  stream_put(st);   /* the thread's */
  pthread_mutex_lock(&r->slock);
  r->n_streams--;
  pthread_cond_broadcast(&r->sgone);
  pthread_mutex_unlock(&r->slock);
  return NULL;
}

/* Same object? (keys compared without their block word) */
static int same_object(const struct memo_key *a, const struct memo_key *b) {
  return a->n == b->n &&
         !memcmp(&a->v[1], &b->v[1], (size_t)(a->n - 1) * sizeof a->v[0]);
}

/* The stream that will deliver block b of s's object (a new reference),
 * started when there is none or when it has passed b and the block is
 * gone; NULL when every stream slot is taken, or when the block is there
 * after all (*ref pinned). */
static struct rstream *stream_for(struct rsrc *s, uint64_t b,
                                  struct memo_ref **ref) {
  struct remote *r = s->r;
  uint64_t at = b * r->cfg.block_size;
  struct memo_key k = s->key;
  k.v[0] = b;
  *ref = NULL;
  pthread_mutex_lock(&r->slock);
  int free_slot = -1;
  for (int i = 0; i < STREAMS_MAX; i++) {
    struct rstream *st = r->streams[i];
    if (!st) {
      if (free_slot < 0)
        free_slot = i;
      continue;
    }
    if (!same_object(&st->key, &s->key))
      continue;
    pthread_mutex_lock(&st->lock);
    int usable = !st->done && st->pos <= at;
    if (usable)
      st->refs++;
    pthread_mutex_unlock(&st->lock);
    if (usable) {
      pthread_mutex_unlock(&r->slock);
      return st;
    }
    /* Passed b: delivered since the caller looked, or evicted (then the
     * object is read again from its start). */
    if (memo_peek(r->memo, &k, ref)) {
      pthread_mutex_unlock(&r->slock);
      return NULL;
    }
    pthread_mutex_lock(&st->lock);
    st->quit = 1;
    pthread_cond_broadcast(&st->moved);
    pthread_mutex_unlock(&st->lock);
    r->streams[i] = NULL;
    stream_put(st); /* the table's reference */
    if (free_slot < 0)
      free_slot = i;
  }
  struct rstream *st = NULL;
  if (free_slot >= 0 && r->n_streams < STREAMS_MAX &&
      (st = calloc(1, sizeof *st)) && (st->buf = malloc(r->cfg.block_size))) {
    st->s = s;
    bytesrc_ref(&s->base);
    st->key = s->key;
    st->key.v[0] = 0;
    pthread_mutex_init(&st->lock, NULL);
    pthread_cond_init(&st->moved, NULL);
    st->refs = 3; /* the table, the thread, the caller */
    st->last_want_ms = now_ms();
    request_for(s, &st->req, st->req_cond);
    if (st->req.cond)
      st->req.cond = st->req_cond;
    pthread_mutex_lock(&s->vlock);
    st->vhash = s->have_v ? s->vhash : 0;
    memcpy(st->cond, s->cond, sizeof st->cond);
    pthread_mutex_unlock(&s->vlock);
    pthread_attr_t at_;
    pthread_attr_init(&at_);
    pthread_attr_setdetachstate(&at_, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &at_, stream_main, st) == 0) {
      r->streams[free_slot] = st;
      r->n_streams++;
    } else {
      st->refs = 1;
      stream_put(st);
      st = NULL;
    }
    pthread_attr_destroy(&at_);
  } else if (st) {
    free(st);
    st = NULL;
  }
  pthread_mutex_unlock(&r->slock);
  return st;
}

/* Block b of s from a stream of its object: waits until the stream
 * delivered it. 0 with a pin in *ref; 1 when the stream cannot give it
 * (no slot, ended early, evicted at once: the caller asks for the
 * range); a failure that concerns the object itself (changed, gone). */
static int stream_block(struct rsrc *s, uint64_t b, struct memo_ref **ref,
                        struct zerr *err) {
  struct remote *r = s->r;
  struct memo_key k = s->key;
  k.v[0] = b;
  if (memo_peek(r->memo, &k, ref))
    return 0;
  struct rstream *st = stream_for(s, b, ref);
  if (!st)
    return *ref ? 0 : 1;
  uint64_t end = (b + 1) * r->cfg.block_size;
  pthread_mutex_lock(&st->lock);
  if (st->want < end)
    st->want = end;
  st->last_want_ms = now_ms();
  pthread_cond_broadcast(&st->moved);
  while (!st->done && st->pos < end) {
    if (atomic_load(&r->stop))
      break;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&st->moved, &st->lock, &ts);
    st->last_want_ms = now_ms();
  }
  int rc = st->done ? st->rc : 0;
  struct zerr e = st->err;
  pthread_mutex_unlock(&st->lock);
  stream_put(st);
  if (atomic_load(&r->stop))
    return zerr_set(err, EINTR, "%s: interrupted: zarrfs is shutting down",
                    s->url);
  if (memo_peek(r->memo, &k, ref))
    return 0;
  if (rc < 0 && (is_changed(s) || rc == -ENOENT || rc == -EACCES)) {
    if (err)
      *err = e;
    return rc;
  }
  return 1;
}

/* ---- the byte source ---- */

/* Read object bytes [o, o+len) into dst in parts of max_request, the
 * parts after the first on the workers. */
static int direct_read(struct rsrc *s, uint64_t o, size_t len, void *dst,
                       struct zerr *err) {
  struct remote *r = s->r;
  size_t part = r->cfg.max_request;
  /* At least a few parts in parallel for mid-size reads. */
  if (len / DIRECT_PARTS < part)
    part = len / DIRECT_PARTS > r->cfg.block_size ? len / DIRECT_PARTS
                                                  : r->cfg.block_size;
  struct part_set set = {.left = 0};
  pthread_mutex_init(&set.lock, NULL);
  pthread_cond_init(&set.done, NULL);
  uint8_t *out = dst;
  int rc = 0;
  size_t first_n = len < part ? len : part;
  for (size_t at = first_n; at < len; at += part) {
    size_t n = len - at < part ? len - at : part;
    pthread_mutex_lock(&set.lock);
    set.left++;
    pthread_mutex_unlock(&set.lock);
    if (job_submit(s, o + at, (uint32_t)n, out + at, &set) < 0) {
      pthread_mutex_lock(&set.lock);
      set.left--;
      pthread_mutex_unlock(&set.lock);
      struct zerr e = {0};
      int prc = part_fetch(s, o + at, n, out + at, s->stats, &e);
      if (prc < 0 && !rc) {
        rc = prc;
        if (err)
          *err = e;
      }
    }
  }
  struct zerr e = {0};
  int frc = part_fetch(s, o, first_n, out, s->stats, &e);
  if (frc < 0 && !rc) {
    rc = frc;
    if (err)
      *err = e;
  }
  pthread_mutex_lock(&set.lock);
  while (set.left)
    pthread_cond_wait(&set.done, &set.lock);
  pthread_mutex_unlock(&set.lock);
  if (!rc && set.rc) {
    rc = set.rc;
    if (err)
      *err = set.err;
  }
  pthread_cond_destroy(&set.done);
  pthread_mutex_destroy(&set.lock);
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
  if (is_changed(s))
    return zerr_set(err, EIO,
                    "%s: object changed while mounted (a different version "
                    "answered); remount to read the new one",
                    s->url);
  int rc = rsrc_read_blocks(bs_, off, len, dst, err);
  if (rc == -ESTALE)
    rc = object_changed(s, err);
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
  int norange = host_ignores_range(r, s->req_url);
  /* Blocks being fetched ahead right now: wait for them rather than
   * asking for the same bytes again. */
  pf_wait(r, &s->key, first, last);

  /* A large read of bytes not cached (a whole compressed chunk, a data
   * section) goes straight into the caller's buffer, in parts fetched in
   * parallel: no copy through blocks, no eviction of what is cached. The
   * unit it feeds is cached above, so sharing it through blocks would buy
   * nothing. */
  if (!norange && last - first + 1 >= DIRECT_MIN_BLOCKS &&
      !block_cached(r, &s->key, first + 1))
    return direct_read(s, o, len, dst, err);

  /* Hand the later missing runs of a large read to the workers. */
  if (!norange && last > first && r->threads) {
    uint64_t b = first;
    int k = 0;
    while (b <= last) {
      if (block_cached(r, &s->key, b)) {
        b++;
        continue;
      }
      uint32_t n = missing_run(r, &s->key, b, last);
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
    else if (norange && (rc = stream_block(s, b, &ref, err)) < 0)
      return rc;
    if (rc) {
      struct fetch f = {s, b, missing_run(r, &s->key, b, last), s->stats};
      if ((rc = memo_get(r->memo, &k, block_fill, &f, &ref, err)) < 0)
        return rc;
    }
    const struct rblock *blk = (const struct rblock *)memo_obj(ref);
    if ((rc = version_check(s, blk->vhash, blk->cond, err)) < 0) {
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
static int request_url(struct remote *r, const char *url, char **out,
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
  int rc = fetch_run(f->r, f->req, &bk, 0, 1, NULL, &obj, &cost, &total, err);
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
  int rc = request_url(r, url, &s->req_url, err);
  if (rc < 0) {
    rsrc_destroy(&s->base);
    return rc;
  }
  s->r = r;
  s->stats = stats;
  request_init(r, url, s->req_url, s->url, allow_link_local, &s->req);
  url_key(s->req_url, TAG_BLOCK, &s->key);
  if (len == UINT64_MAX) {
    struct memo_key sk;
    url_key(s->req_url, TAG_SIZE, &sk);
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
  ZTRY(request_url(r, url, &req_url, err));
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
  if (rc == 0 && pf_new(r) < 0)
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
  pf_free(r);
  pthread_mutex_lock(&r->lock);
  r->quit = 1;
  pthread_cond_broadcast(&r->more);
  pthread_mutex_unlock(&r->lock);
  for (int i = 0; i < r->n_threads; i++)
    pthread_join(r->threads[i], NULL);
  /* Streams see the stop flag within 50 ms (or their transfer ends with
   * -EINTR); their threads are detached, so wait for the count. */
  pthread_mutex_lock(&r->slock);
  for (int i = 0; i < STREAMS_MAX; i++)
    if (r->streams[i]) {
      pthread_mutex_lock(&r->streams[i]->lock);
      r->streams[i]->quit = 1;
      pthread_cond_broadcast(&r->streams[i]->moved);
      pthread_mutex_unlock(&r->streams[i]->lock);
    }
  while (r->n_streams)
    pthread_cond_wait(&r->sgone, &r->slock);
  pthread_mutex_unlock(&r->slock);
  for (; r->qlen; r->qlen--, r->qhead = (r->qhead + 1) % RA_QUEUE) {
    struct job *j = &r->queue[r->qhead];
    if (j->dst) { /* its reader is waiting: end it */
      struct zerr e = {0};
      part_done(j->set,
                zerr_set(&e, EINTR,
                         "interrupted: zarrfs is "
                         "shutting down"),
                &e);
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
  free(r);
}

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
};

struct pf_job {
  struct remote_hint *h; /* a reference */
  struct bytesrc *src;   /* a run: the opened object (a reference); NULL:
                            open it, then queue its runs */
  uint64_t block;
  uint32_t n;
};

struct remote_pf {
  pthread_mutex_t lock; /* guards everything below; a leaf */
  pthread_cond_t more;
  struct pf_job q[PF_QUEUE]; /* oldest first */
  int qlen;
  struct pf_owner owners[PF_OWNERS];
  /* What each worker fetches now (a run's object and blocks; n 0: none),
   * for readers that need those blocks (pf_wait). */
  struct pf_running {
    const struct memo_key *key; /* the run's source's, alive meanwhile */
    uint64_t block;
    uint32_t n;
  } running[PF_THREADS_MAX];
  pthread_cond_t ran; /* a run ended */
  int slots;          /* entries of running[] handed to workers */
  pthread_t threads[PF_THREADS_MAX];
  int n_threads, want_threads, started, quit;
  uint64_t budget, held, peak_held;
  int inflight, peak_inflight;
};

/* The prefetch state of r (workers start at the first hint). */
static int pf_new(struct remote *r) {
  struct remote_pf *pf = calloc(1, sizeof *pf);
  if (!pf)
    return -ENOMEM;
  pthread_mutex_init(&pf->lock, NULL);
  pthread_cond_init(&pf->more, NULL);
  pthread_cond_init(&pf->ran, NULL);
  int conns = r->cfg.http.max_conns > 0 ? r->cfg.http.max_conns : 1;
  pf->want_threads = conns - conns / 4;
  if (pf->want_threads > PF_THREADS_MAX)
    pf->want_threads = PF_THREADS_MAX;
  if (pf->want_threads < 1)
    pf->want_threads = 1;
  pf->budget = r->cfg.cache_size / 4 * 3;
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

/* Fetch blocks [block, block+n) of src's object into the cache. */
static void pf_fetch_run(struct rsrc *s, uint64_t block, uint32_t n) {
  struct remote *r = s->r;
  for (uint64_t b = block; b < block + n; b++) {
    if (block_cached(r, &s->key, b))
      continue;
    struct memo_key k = s->key;
    k.v[0] = b;
    struct fetch f = {s, b, missing_run(r, &s->key, b, block + n - 1), NULL};
    struct memo_ref *ref;
    struct zerr e = {0};
    if (memo_get(r->memo, &k, block_fill, &f, &ref, &e) < 0)
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
    pf_fetch_run((struct rsrc *)j->src, j->block, j->n);
    return;
  }
  struct bytesrc *src;
  struct zerr e = {0};
  if (remote_open(r, h->url, 0, UINT64_MAX, h->allow_link_local, NULL, &src,
                  &e) < 0)
    return;
  size_t bs = r->cfg.block_size;
  uint64_t nblocks = (src->size + bs - 1) / bs;
  if (nblocks <= 1 || h->head_only) {
    /* What it holds is known now: a small object holds less than the
     * block it was charged for. */
    uint64_t held = src->size < bs ? src->size : bs;
    pthread_mutex_lock(&pf->lock);
    if (!h->dropped && h->charged > held) {
      pf->owners[h->slot].held -= h->charged - held;
      pf->held -= h->charged - held;
      h->charged = held;
    }
    pthread_mutex_unlock(&pf->lock);
  } else {
    pthread_mutex_lock(&pf->lock);
    int ok = h->charged >= nblocks * bs ||
             pf_charge(pf, h, nblocks * bs - h->charged);
    pthread_mutex_unlock(&pf->lock);
    /* The runs of missing blocks, each a job: a block cached already
     * (the end of an index a layout read) splits a run, and the part
     * after it must not wait for the part before. */
    struct rsrc *rs = (struct rsrc *)src;
    for (uint64_t b = 1; ok && b < nblocks;) {
      if (block_cached(r, &rs->key, b)) {
        b++;
        continue;
      }
      uint32_t n = missing_run(r, &rs->key, b, nblocks - 1);
      pthread_mutex_lock(&pf->lock);
      int rc = h->dropped ? 0 : pf_queue_locked(pf, h, src, b, n);
      pthread_mutex_unlock(&pf->lock);
      if (rc < 0)
        pf_fetch_run(rs, b, n);
      b += n;
    }
  }
  bytesrc_unref(src);
}

/* Wait until no worker fetches blocks [first, last] of object okey. */
static void pf_wait(struct remote *r, const struct memo_key *okey,
                    uint64_t first, uint64_t last) {
  struct remote_pf *pf = r->pf;
  if (!pf)
    return;
  pthread_mutex_lock(&pf->lock);
  for (;;) {
    int busy = 0;
    for (int i = 0; i < pf->slots && !busy; i++) {
      const struct pf_running *w = &pf->running[i];
      busy = w->n && w->block <= last && first < w->block + w->n &&
             same_object(w->key, okey);
    }
    if (!busy || pf->quit || atomic_load(&r->stop))
      break;
    pthread_cond_wait(&pf->ran, &pf->lock);
  }
  pthread_mutex_unlock(&pf->lock);
}

/* A worker: take the oldest job of the owner with the fewest jobs
 * running, so that readers share the transfers. */
static void *pf_worker(void *arg) {
  struct remote *r = arg;
  struct remote_pf *pf = r->pf;
  pthread_mutex_lock(&pf->lock);
  int me = pf->slots++; /* this worker's entry in running[] */
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
      if (j.src)
        pf->running[me] =
            (struct pf_running){&((struct rsrc *)j.src)->key, j.block, j.n};
      pthread_mutex_unlock(&pf->lock);
      pf_run(r, &j);
      pthread_mutex_lock(&pf->lock);
      pf->running[me].n = 0;
      pthread_cond_broadcast(&pf->ran);
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
  if (!head_only && request_url(r, url, &req_url, &e) == 0) {
    struct memo_key sk;
    url_key(req_url, TAG_SIZE, &sk);
    if (memo_value_peek(r->memo, &sk, &size) && size > charge)
      charge = (size + charge - 1) / charge * charge;
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
static void pf_free(struct remote *r) {
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
  pthread_cond_destroy(&pf->ran);
  pthread_mutex_destroy(&pf->lock);
  free(pf);
  r->pf = NULL;
}
