/* rstream.c - hosts that ignore Range: the hosts known to ignore it
 * (learned from a whole answer to a range request), and one stream per
 * object of theirs, read once from its start by a thread of its own into
 * the block cache, paced by its readers.
 *
 * Locks: remote.slock (guards hosts, streams, n_streams, sthreads) and
 * under it one stream's rstream.lock (a leaf); a stream is set up under
 * remote.slock, which takes rsrc.vlock (a leaf) for the version it asks
 * for.
 *
 * Threads: a stream's thread is joinable, joined before its record is
 * taken again and when the remote stops (rstream_stop_all), so no thread
 * of a stream outlives remote_free. */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/log.h"

/* A stream nobody reads from for this long ends (its connection is
 * freed; a later read starts the object again). */
#define STREAM_IDLE_MS 5000

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
  int trec; /* its thread's record in remote.sthreads */
};

/* Monotonic milliseconds: a stream's idle clock. */
static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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
int rstream_host_ignores_range(struct remote *r, const char *url) {
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
void rstream_host_mark_norange(struct remote *r, const char *url,
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
    zobj_init(&b->obj, remote_rblock_destroy);
    b->len = st->fill;
    b->total = total;
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
    uint64_t vh = rversion_of(m, &st->req, cond);
    if (!st->vhash) {
      st->vhash = vh;
      memcpy(st->cond, cond, sizeof cond);
    } else if (vh && vh != st->vhash) {
      return rversion_changed(st->s, err);
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
  /* named for top -H, perf and the test that no stream outlives its
   * remote (check_remote) */
  pthread_setname_np(pthread_self(), RSTREAM_THREAD_NAME);
  struct remote *r = st->s->r;
  struct zerr e = {0};
  int rc = http_get_stream(r->http, &st->req, stream_sink, st, &e);
  if (rc == -ESTALE)
    rc = rversion_changed(st->s, &e);
  pthread_mutex_lock(&st->lock);
  st->done = 1;
  st->rc = rc;
  st->err = e;
  pthread_cond_broadcast(&st->moved);
  pthread_mutex_unlock(&st->lock);
  pthread_mutex_lock(&r->slock);
  int listed = 0, trec = st->trec;
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
  r->sthreads[trec].ended = 1; /* joined by whoever takes the record */
  pthread_cond_broadcast(&r->sgone);
  pthread_mutex_unlock(&r->slock);
  return NULL;
}

/* Join the stream threads that ran their last line (under r->slock,
 * which they no longer take: the join waits only for their exit), so
 * their records can be taken again. */
static void stream_reap(struct remote *r) {
  for (int i = 0; i < STREAMS_MAX; i++)
    if (r->sthreads[i].used && r->sthreads[i].ended) {
      pthread_join(r->sthreads[i].t, NULL);
      r->sthreads[i].used = r->sthreads[i].ended = 0;
    }
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
    if (!remote_same_object(&st->key, &s->key))
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
    rversion_request(s, &st->req, st->req_cond);
    if (st->req.cond)
      st->req.cond = st->req_cond;
    pthread_mutex_lock(&s->vlock);
    st->vhash = s->have_v ? s->vhash : 0;
    memcpy(st->cond, s->cond, sizeof st->cond);
    pthread_mutex_unlock(&s->vlock);
    /* A record for its thread: those not ended are the n_streams
     * running, fewer than STREAMS_MAX, so one is free once the ended
     * ones are joined. */
    stream_reap(r);
    int rec = 0;
    while (rec < STREAMS_MAX && r->sthreads[rec].used)
      rec++;
    st->trec = rec;
    if (rec < STREAMS_MAX &&
        pthread_create(&r->sthreads[rec].t, NULL, stream_main, st) == 0) {
      r->sthreads[rec].used = 1;
      r->streams[free_slot] = st;
      r->n_streams++;
    } else {
      st->refs = 1;
      stream_put(st);
      st = NULL;
    }
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
int rstream_block(struct rsrc *s, uint64_t b, struct memo_ref **ref,
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
  if (rc < 0 && (rversion_is_changed(s) || rc == -ENOENT || rc == -EACCES)) {
    if (err)
      *err = e;
    return rc;
  }
  return 1;
}

/* End every stream of r and join their threads. */
void rstream_stop_all(struct remote *r) {
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
  stream_reap(r); /* every one has ended */
  pthread_mutex_unlock(&r->slock);
}
