/* remote.c - remote objects as byte sources over one block cache, with
 * single flight, runs of blocks per request, parallel fetches and
 * read-ahead (see remote.h): the context, read-ahead and the byte source.
 * Blocks in flight and the workers are in rflight.c, hosts that ignore
 * Range in rstream.c, object versions in rversion.c, fetching ahead
 * across objects in rprefetch.c, the keys and cached blocks in rblock.c;
 * the structs they share are in remote_int.h. This file is their top:
 * it calls them, none calls it (rprefetch.c reaches remote_open through
 * the struct rprefetch_up given to it; tests/calls.sh).
 *
 * Locks: remote.lock (the work queue, taken in rflight.c; a leaf; quit
 * is set here), remote.flock and rsrc.vlock are initialised here, taken
 * in rflight.c and rversion.c. */
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
#include "url.h"

/* Read-ahead requests in flight per source at most. */
#define RA_PER_SOURCE 4
/* Reads of at least this many blocks are large reads (rflight.c). */
#define DIRECT_MIN_BLOCKS 8
/* Sizes (and absences) of objects remembered. */
#define REMOTE_MAX_SIZES (1u << 20)

void remote_config_default(struct remote_config *c) {
  memset(c, 0, sizeof *c);
  http_config_default(&c->http);
  c->cache_size = 256u << 20;
  c->block_size = 64u << 10;
  c->max_request = 8u << 20;
  c->readahead = 32u << 20;
  c->workers = 4;
}

const char *remote_url_schemes(void) {
  return "http://, https://, s3://, gs:// or az://";
}

int remote_set_clouds(struct remote *r, struct s3_config *gs,
                      struct azure_config *az, struct zerr *err) {
  r->gs = gs;
  r->az = az;
  if (gs) {
    ZTRY(s3_signing_new(gs, &r->gs_sign, err));
    r->have_gs_sign = 1;
  }
  return 0;
}

const struct s3_config *remote_gcs(const struct remote *r) { return r->gs; }
const struct azure_config *remote_azure(const struct remote *r) {
  return r->az;
}

struct http_client *remote_http(struct remote *r) {
  return r->http;
}
const struct s3_config *remote_s3(const struct remote *r) { return r->s3; }
/* The settings (borrowed). */
const struct remote_config *remote_config_of(const struct remote *r) {
  return &r->cfg;
}
uint64_t remote_requests(const struct remote *r) {
  return http_requests(r->http);
}

/* ---- read-ahead ---- */

/* Queue read-ahead of a run (a hint: dropped when the queue is full). */
static void ra_submit(struct rsrc *s, uint64_t block, uint32_t n) {
  (void)remote_job_submit(s, block, n, NULL, NULL, 0, 0);
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
    return rversion_changed(s, err);
  int rc = rversion_needs_whole(s) ? RV_WHOLE
                                   : rsrc_read_blocks(bs_, off, len, dst, err);
  if (rc == RV_WHOLE) { /* never bytes of two answers: one of them all */
    atomic_store(&s->whole, 1);
    zerr_clear(err);
    rc = rversion_read_whole(s, off, len, dst, err);
  }
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
    int rc =
        rflight_large_read(s, o, len, dst, rprefetch_hinted(r, &s->key), err);
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
  url_scope_unref(s->scope);
  free(s->url);
  free(s->req_url);
  free(s);
}

static const struct bytesrc_ops rsrc_ops = {rsrc_read, rsrc_destroy};

/* The az:// URL an https://ACCOUNT.blob.core.windows.net URL of the
 * configured Azure endpoint names (malloc'd), or NULL: only those carry
 * the Azure credentials. */
static char *azure_own(struct remote *r, const char *url) {
  char *az = NULL;
  if (r->az && !strncmp(url, "https://", 8) &&
      azure_url_to_az(r->az, url, &az) == 1)
    return az;
  return NULL;
}

/* The request URL of url: itself for http(s), the endpoint URL of an
 * s3://, gs:// or az:// one. */
int remote_request_url(struct remote *r, const char *url, char **out,
                       struct zerr *err) {
  int s3 = !strncmp(url, "s3://", 5), gs = !strncmp(url, "gs://", 5);
  char *own = azure_own(r, url);
  if (own || !strncmp(url, "az://", 5)) {
    if (!r->az) {
      free(own);
      return zerr_set(err, EIO, "%s: az:// URLs need Azure settings", url);
    }
    char *container, *blob;
    int rc = azure_parse_url(own ? own : url, &container, &blob, err);
    free(own);
    if (rc < 0)
      return rc;
    rc = azure_object_url(r->az, container, blob, out, err);
    free(container);
    free(blob);
    return rc;
  }
  if (!s3 && !gs) {
    if (!(*out = strdup(url)))
      return zerr_set(err, ENOMEM, "out of memory");
    return 0;
  }
  const struct s3_config *c = s3 ? r->s3 : r->gs;
  if (!c)
    return zerr_set(err, EIO, "%s: %s URLs need %s settings", url,
                    s3 ? "s3://" : "gs://", s3 ? "S3" : "Cloud Storage");
  char *bucket, *key;
  ZTRY(s3_parse_url(url, &bucket, &key, err));
  int rc = s3_object_url(c, bucket, key, out, err);
  free(bucket);
  free(key);
  return rc;
}

/* Fill a request for req_url (signed as url's service says: S3 and Cloud
 * Storage with SigV4 when signing is on, Azure with Shared Key). */
static void request_init(struct remote *r, const char *url, const char *req_url,
                         const char *log_url, int allow_link_local,
                         struct http_req *q) {
  memset(q, 0, sizeof *q);
  q->url = req_url;
  q->log_url = log_url;
  q->allow_link_local = allow_link_local;
  const struct s3_signing *sg = NULL;
  if (!strncmp(url, "s3://", 5) && r->have_sign)
    sg = &r->sign;
  else if (!strncmp(url, "gs://", 5) && r->have_gs_sign)
    sg = &r->gs_sign;
  if (sg) {
    q->headers = sg->headers;
    q->aws_sigv4 = sg->sigv4;
    q->userpwd = sg->userpwd;
  }
  char *own = NULL;
  if (r->az && (!strncmp(url, "az://", 5) || (own = azure_own(r, url)))) {
    q->headers = azure_headers(r->az);
    q->signer = azure_signer(r->az);
  }
  free(own);
}

void remote_store_request(struct remote *r, const char *store_url,
                          const char *req_url, const char *log_url,
                          struct http_req *q) {
  request_init(r, store_url, req_url, log_url, 0, q);
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
  int rc = rflight_get_block(f->r, f->req, &bk, 0, 0, 1, NULL, &obj, &cost,
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

/* url for messages, with the endpoint req_url asks when it is another
 * (s3://B/K at a custom endpoint: "s3://B/K (http://127.0.0.1:9000)"):
 * its scheme, host and port only, no credentials, no query. malloc'd. */
static char *named_at(const char *url, const char *req_url) {
  const char *h = strstr(req_url, "://");
  if (!h || !strncmp(url, req_url, (size_t)(h - req_url) + 3))
    return strdup(url); /* the URL itself is asked (http, https) */
  h += 3;
  size_t n = strcspn(h, "/?#");
  const char *at = memchr(h, '@', n); /* user info never goes in a line */
  size_t skip = at ? (size_t)(at + 1 - h) : 0;
  char *out = NULL;
  if (asprintf(&out, "%s (%.*s%.*s)", url, (int)(h - req_url), req_url,
               (int)(n - skip), h + skip) < 0)
    return NULL;
  return out;
}

int remote_open(struct remote *r, const char *url, uint64_t off, uint64_t len,
                int allow_link_local, struct io_stats *stats,
                struct bytesrc **out, struct zerr *err) {
  return remote_open_scoped(r, url, off, len, allow_link_local, NULL, stats,
                            out, err);
}

int remote_open_scoped(struct remote *r, const char *url, uint64_t off,
                       uint64_t len, int allow_link_local,
                       struct url_scope *scope, struct io_stats *stats,
                       struct bytesrc **out, struct zerr *err) {
  if (!remote_is_url(url))
    return zerr_set(err, EIO, "%s: not an %s URL", url, remote_url_schemes());
  struct rsrc *s = calloc(1, sizeof *s);
  if (!s || !(s->url = strdup(url))) {
    free(s);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  pthread_mutex_init(&s->vlock, NULL);
  int rc = remote_request_url(r, url, &s->req_url, err);
  char *named = rc == 0 ? named_at(url, s->req_url) : NULL;
  if (rc == 0 && !named)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    rsrc_destroy(&s->base);
    return rc;
  }
  free(s->url);
  s->url = named;
  s->r = r;
  s->stats = stats;
  request_init(r, url, s->req_url, s->url, allow_link_local, &s->req);
  if (scope) {
    s->scope = url_scope_ref(scope);
    s->req.redirect = url_scope_check;
    s->req.redirect_ud = scope;
  }
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
    return zerr_set(err, EIO, "%s: not an %s URL", url, remote_url_schemes());
  char *req_url;
  ZTRY(remote_request_url(r, url, &req_url, err));
  struct http_req q;
  request_init(r, url, req_url, url, 0, &q);
  int rc = http_get_all(r->http, &q, max, out, len, err);
  free(req_url);
  return rc;
}

/* ---- context ---- */

/* remote.c's functions that rprefetch.c, below it, calls back. */
static const struct rprefetch_up prefetch_up = {remote_open,
                                                remote_request_url};

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
  /* The quarter of -o connections that fetching ahead across objects
   * leaves to readers is theirs: the parts of a large read and what is
   * fetched beside it run at once. */
  if (r->cfg.workers > 0 && r->cfg.workers < r->cfg.http.max_conns / 4)
    r->cfg.workers = r->cfg.http.max_conns / 4;
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
  struct memo_config mc = {r->cfg.cache_size, REMOTE_MAX_SIZES, &r->stop, 0, 0};
  if (rc == 0)
    rc = http_client_new(&r->cfg.http, &r->http, err);
  if (rc == 0)
    rc = memo_new(&mc, &r->memo, err);
  if (rc == 0 && r->cfg.workers > 0 &&
      !(r->threads = calloc((size_t)r->cfg.workers, sizeof *r->threads)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && rprefetch_new(r, &prefetch_up) < 0)
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
   * -EINTR); their threads are joined. */
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
  if (r->have_gs_sign)
    s3_signing_free(&r->gs_sign);
  s3_config_free(r->gs);
  azure_config_free(r->az);
  pthread_cond_destroy(&r->more);
  pthread_mutex_destroy(&r->lock);
  pthread_cond_destroy(&r->sgone);
  pthread_mutex_destroy(&r->slock);
  pthread_cond_destroy(&r->fdone);
  pthread_mutex_destroy(&r->flock);
  free(r);
}
