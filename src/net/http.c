/* http.c - ranged and whole GETs over libcurl with bounds, retries and
 * validation (see http.h). */
#define _GNU_SOURCE
#include "config.h"

#include "hparse.h"
#include "http.h"
#include "url.h"

#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/cancel.h"

/* Redirects followed per request. */
#define HTTP_MAX_REDIRS 5
/* Bytes of an error body kept for the message (an S3 <Error> document). */
#define HTTP_ERRBODY_MAX 2048
/* Longest redirect target followed. */
#define HTTP_LOCATION_MAX 4096

struct http_client {
  struct http_config cfg;
  CURLSH *share;
  pthread_mutex_t share_locks[CURL_LOCK_DATA_LAST];
  pthread_mutex_t lock; /* guards idle, n_idle, running */
  pthread_cond_t slot;  /* a transfer slot freed */
  CURL **idle;          /* easy handles not in use (max_conns of them) */
  int n_idle;
  int running; /* transfers in progress */
  _Atomic uint64_t requests, rng;
};

/* ---- defaults, time ---- */

void http_config_default(struct http_config *c) {
  memset(c, 0, sizeof *c);
  c->connect_ms = 10000;
  c->stall_ms = 30000;
  c->op_ms = 60000;
  c->max_attempts = 6;
  c->backoff_base_ms = 100;
  c->backoff_cap_ms = 10000;
  c->max_conns = 32;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Shutting down, or the calling thread's request abandoned (its reader
 * gave up: src/util/cancel.h). */
static int stopped(const struct http_client *c) {
  return cancel_stopped(c->cfg.stop);
}

/* Sleep ms, in slices, giving up with -EINTR when the stop flag rises. */
static int sleep_ms(const struct http_client *c, int64_t ms) {
  int64_t end = now_ms() + ms;
  for (;;) {
    if (stopped(c))
      return -EINTR;
    int64_t left = end - now_ms();
    if (left <= 0)
      return 0;
    if (left > 50)
      left = 50;
    nanosleep(&(struct timespec){0, (long)left * 1000000L}, NULL);
  }
}

/* A random number (splitmix64 over a shared counter: no lock, no global). */
static uint64_t rnd(struct http_client *c) {
  uint64_t z =
      atomic_fetch_add(&c->rng, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* ---- client ---- */

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a,
                       void *ud) {
  (void)h;
  (void)a;
  struct http_client *c = ud;
  pthread_mutex_lock(&c->share_locks[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *ud) {
  (void)h;
  struct http_client *c = ud;
  pthread_mutex_unlock(&c->share_locks[d]);
}

int http_client_new(const struct http_config *cfg, struct http_client **out,
                    struct zerr *err) {
  if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
    return zerr_set(err, EIO, "libcurl initialisation failed");
  struct http_client *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  c->cfg = *cfg;
  if (c->cfg.max_conns <= 0)
    c->cfg.max_conns = 1;
  if (c->cfg.max_attempts <= 0)
    c->cfg.max_attempts = 1;
  c->idle = calloc((size_t)c->cfg.max_conns, sizeof *c->idle);
  c->share = curl_share_init();
  if (!c->idle || !c->share) {
    curl_share_cleanup(c->share);
    free(c->idle);
    free(c);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_init(&c->share_locks[i], NULL);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->slot, NULL);
  c->rng = (uint64_t)now_ms() ^ (uint64_t)(uintptr_t)c;
  curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
  curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
  curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
  curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
  *out = c;
  return 0;
}

void http_client_free(struct http_client *c) {
  if (!c)
    return;
  for (int i = 0; i < c->n_idle; i++)
    curl_easy_cleanup(c->idle[i]);
  curl_share_cleanup(c->share);
  for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
    pthread_mutex_destroy(&c->share_locks[i]);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->slot);
  free(c->idle);
  free(c);
}

uint64_t http_requests(const struct http_client *c) {
  return atomic_load(&((struct http_client *)c)->requests);
}

/* Take a transfer slot and an easy handle; waits while max_conns run.
 * NULL with *rc set on stop or allocation failure. */
static CURL *handle_take(struct http_client *c, int *rc) {
  pthread_mutex_lock(&c->lock);
  while (c->running >= c->cfg.max_conns) {
    if (stopped(c)) {
      pthread_mutex_unlock(&c->lock);
      *rc = -EINTR;
      return NULL;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 50000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&c->slot, &c->lock, &ts);
  }
  c->running++;
  CURL *h = c->n_idle ? c->idle[--c->n_idle] : NULL;
  pthread_mutex_unlock(&c->lock);
  if (!h && !(h = curl_easy_init())) {
    pthread_mutex_lock(&c->lock);
    c->running--;
    pthread_cond_signal(&c->slot);
    pthread_mutex_unlock(&c->lock);
    *rc = -ENOMEM;
    return NULL;
  }
  /* Reset keeps the handle's connections and caches, drops options. */
  curl_easy_reset(h);
  return h;
}

/* Give a handle back (kept for its connections) and free the slot. */
static void handle_give(struct http_client *c, CURL *h) {
  pthread_mutex_lock(&c->lock);
  if (c->n_idle < c->cfg.max_conns)
    c->idle[c->n_idle++] = h;
  else
    curl_easy_cleanup(h);
  c->running--;
  pthread_cond_signal(&c->slot);
  pthread_mutex_unlock(&c->lock);
}

/* ---- one transfer ---- */

enum xfer_mode { X_RANGE, X_ALL, X_STREAM };

struct xfer {
  struct http_client *c;
  enum xfer_mode mode;
  /* X_RANGE: the range asked for, and where it goes */
  uint64_t off;
  size_t len;
  uint8_t *dst;
  /* X_ALL: a growing buffer up to max */
  uint8_t *buf;
  size_t cap, max;
  /* X_STREAM: where the body goes */
  http_sink_fn sink;
  void *sink_ud;
  int sink_rc; /* the sink's failure */
  struct zerr sink_err;
  struct http_meta meta; /* validators of the final response */
  /* what came back */
  long status;     /* of the last status line (after redirects) */
  int have_crange; /* Content-Range parsed */
  uint64_t cr_start, cr_end, cr_total; /* cr_total UINT64_MAX for '*' */
  uint64_t clen;      /* Content-Length, UINT64_MAX when absent */
  long retry_after_s; /* -1 when absent */
  uint64_t body;      /* body bytes seen (of the final response) */
  size_t got;         /* bytes stored */
  int done;           /* have all we want: the transfer was cut on purpose */
  int bad;            /* the response contradicts the request */
  char why[160];      /* when bad */
  int too_big;        /* X_ALL beyond max */
  int refused;        /* link-local address refused */
  char refused_ip[64];
  int allow_link_local;
  int stalled;
  int64_t last_byte_ms; /* for the stall check */
  char errbody[HTTP_ERRBODY_MAX + 1];
  size_t errlen;
  char location[HTTP_LOCATION_MAX]; /* of a redirect ("" when none) */
  int location_long;                /* it did not fit */
  char encoding[32]; /* a Content-Encoding other than identity, or "" */
  int fresh;         /* the next attempt on a new connection */
  char curl_err[CURL_ERROR_SIZE]; /* libcurl's own words for a failure */
};

/* Header lines: a status line starts a new response (redirects, 100). */
static size_t on_header(char *p, size_t sz, size_t nm, void *ud) {
  struct xfer *x = ud;
  size_t n = sz * nm;
  char line[512];
  size_t l = n < sizeof line - 1 ? n : sizeof line - 1;
  memcpy(line, p, l);
  line[l] = '\0';
  while (l && (line[l - 1] == '\r' || line[l - 1] == '\n'))
    line[--l] = '\0';
  if (!strncmp(line, "HTTP/", 5)) {
    const char *sp = strchr(line, ' ');
    x->status = sp ? strtol(sp + 1, NULL, 10) : 0;
    x->have_crange = 0;
    x->clen = UINT64_MAX;
    x->retry_after_s = -1;
    x->body = 0;
    x->errlen = 0;
    x->meta.etag[0] = x->meta.modified[0] = '\0';
    x->location[0] = x->encoding[0] = '\0';
    x->location_long = 0;
    return n;
  }
  if (n > 9 && !strncasecmp(p, "Location:", 9)) { /* may be long: not line */
    const char *v = p + 9, *e = p + n;
    while (v < e && (*v == ' ' || *v == '\t'))
      v++;
    while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
      e--;
    x->location_long = (size_t)(e - v) >= sizeof x->location;
    if (!x->location_long)
      snprintf(x->location, sizeof x->location, "%.*s", (int)(e - v), v);
    return n;
  }
  char *colon = strchr(line, ':');
  if (!colon)
    return n;
  *colon = '\0';
  const char *v = colon + 1;
  while (*v == ' ' || *v == '\t')
    v++;
  if (!strcasecmp(line, "Content-Range"))
    x->have_crange =
        hparse_content_range(v, &x->cr_start, &x->cr_end, &x->cr_total)
            ?: x->have_crange;
  else if (!strcasecmp(line, "Content-Length"))
    x->clen = strtoull(v, NULL, 10);
  else if (!strcasecmp(line, "Retry-After"))
    x->retry_after_s = strtol(v, NULL, 10); /* seconds; dates ignored */
  else if (!strcasecmp(line, "ETag") && strlen(v) < sizeof x->meta.etag)
    strcpy(x->meta.etag, v);
  else if (!strcasecmp(line, "Last-Modified") &&
           strlen(v) < sizeof x->meta.modified)
    strcpy(x->meta.modified, v);
  else if (!strcasecmp(line, "Content-Encoding") && *v &&
           strcasecmp(v, "identity"))
    snprintf(x->encoding, sizeof x->encoding, "%s", v);
  return n;
}

/* Body bytes. Returning less than given cuts the transfer: on purpose
 * when x->done (we have the range), else an error. */
static size_t on_body(char *p, size_t sz, size_t nm, void *ud) {
  struct xfer *x = ud;
  size_t n = sz * nm;
  x->last_byte_ms = now_ms();
  uint64_t at = x->body; /* offset of p within this response's body */
  x->body += n;
  if (x->status < 200 || x->status >= 300) {
    size_t k = HTTP_ERRBODY_MAX - x->errlen;
    if (k > n)
      k = n;
    memcpy(x->errbody + x->errlen, p, k);
    x->errlen += k;
    return n;
  }
  if (x->encoding[0]) { /* not the object's bytes: none is used */
    x->bad = EIO;
    snprintf(x->why, sizeof x->why,
             "the server sent the object encoded (Content-Encoding: %s), "
             "not its bytes",
             x->encoding);
    return 0;
  }
  if (x->mode == X_STREAM) {
    if (x->status != 200)
      return n; /* judged after the transfer */
    x->meta.total = x->clen;
    int rc =
        x->sink(x->sink_ud, at, (const uint8_t *)p, n, &x->meta, &x->sink_err);
    x->last_byte_ms = now_ms(); /* the sink's pacing is not a stall */
    if (rc == 0)
      return n;
    if (rc > 0)
      x->done = 1;
    else
      x->sink_rc = rc;
    return 0;
  }
  if (x->mode == X_ALL) {
    if (x->got + n > x->max) {
      x->too_big = 1;
      return 0;
    }
    if (x->got + n + 1 > x->cap) {
      size_t cap = x->cap ? x->cap : 65536;
      while (cap < x->got + n + 1)
        cap *= 2;
      uint8_t *b = realloc(x->buf, cap);
      if (!b) {
        snprintf(x->why, sizeof x->why, "out of memory");
        x->bad = ENOMEM;
        return 0;
      }
      x->buf = b;
      x->cap = cap;
    }
    memcpy(x->buf + x->got, p, n);
    x->got += n;
    return n;
  }
  /* X_RANGE. A 206 body starts at cr_start; a 200 body at 0. */
  uint64_t start;
  if (x->status == 206) {
    if (x->have_crange != 1 || x->cr_start != x->off ||
        x->cr_end < x->cr_start || x->cr_end - x->cr_start >= x->len) {
      x->bad = EIO;
      snprintf(x->why, sizeof x->why,
               "206 with a Content-Range that does not match the range asked "
               "for");
      return 0;
    }
    start = x->off;
  } else if (x->status == 200) {
    start = 0;
  } else {
    return n; /* other 2xx: ignored, judged after the transfer */
  }
  uint64_t from = start + at, to = from + n; /* object offsets of p */
  uint64_t want_end = x->off + x->len;
  if (to > x->off && from < want_end) {
    uint64_t a = from > x->off ? from : x->off;
    uint64_t b = to < want_end ? to : want_end;
    memcpy(x->dst + (a - x->off), p + (a - from), (size_t)(b - a));
    x->got = (size_t)(b - x->off);
  }
  if (to >= want_end && x->status == 200) {
    x->done = 1; /* the rest of a whole-object answer is not needed */
    return 0;
  }
  if (to > want_end) {
    x->bad = EIO;
    snprintf(x->why, sizeof x->why, "206 body longer than the range");
    return 0;
  }
  return n;
}

/* Progress: the stop flag and the stall bound (milliseconds). */
static int on_progress(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut,
                       curl_off_t un) {
  (void)dt;
  (void)dn;
  (void)ut;
  (void)un;
  struct xfer *x = ud;
  if (stopped(x->c))
    return 1;
  if (now_ms() - x->last_byte_ms > x->c->cfg.stall_ms) {
    x->stalled = 1;
    return 1;
  }
  return 0;
}

/* Before a request is sent on a connection (new or reused): refuse
 * link-local peers unless allowed. */
static int on_prereq(void *ud, char *conn_primary_ip, char *conn_local_ip,
                     int conn_primary_port, int conn_local_port) {
  (void)conn_local_ip;
  (void)conn_primary_port;
  (void)conn_local_port;
  struct xfer *x = ud;
  if (!x->allow_link_local && conn_primary_ip &&
      url_ip_link_local(conn_primary_ip)) {
    x->refused = 1;
    snprintf(x->refused_ip, sizeof x->refused_ip, "%s", conn_primary_ip);
    return CURL_PREREQFUNC_ABORT;
  }
  return CURL_PREREQFUNC_OK;
}

/* The outcome of one attempt. */
enum verdict { V_OK, V_RETRY, V_FAIL };

/* Forget what an earlier answer (an attempt, a redirect) said. */
static void reset_answer(struct xfer *x) {
  x->status = x->got = x->errlen = 0;
  x->retry_after_s = -1;
  x->body = 0;
  x->done = x->bad = x->too_big = x->refused = x->stalled = x->sink_rc = 0;
  x->have_crange = x->location_long = 0;
  x->clen = UINT64_MAX;
  x->meta.etag[0] = x->meta.modified[0] = '\0';
  x->location[0] = x->encoding[0] = x->curl_err[0] = '\0';
}

/* The headers of one request to url into *out: identity bodies only,
 * the shared headers and the signature (credentials: only at the origin
 * asked for) and the precondition. 0, or a negative errno (err). */
static int hop_headers(const struct http_req *r, const struct xfer *x,
                       const char *url, int creds, struct curl_slist **out,
                       struct zerr *err) {
  struct curl_slist *hdrs =
      curl_slist_append(NULL, "Accept-Encoding: identity");
  for (const struct curl_slist *l = creds ? r->headers : NULL; hdrs && l;
       l = l->next) {
    struct curl_slist *t = curl_slist_append(hdrs, l->data);
    if (!t)
      curl_slist_free_all(hdrs);
    hdrs = t;
  }
  if (hdrs && r->cond) {
    struct curl_slist *t = curl_slist_append(hdrs, r->cond);
    if (!t)
      curl_slist_free_all(hdrs);
    hdrs = t;
  }
  if (!hdrs)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = 0;
  if (creds && r->signer) {
    char rv[80];
    snprintf(rv, sizeof rv, "bytes=%" PRIu64 "-%" PRIu64, x->off,
             x->off + x->len - 1);
    rc = r->signer->sign(r->signer->ud, url, x->mode == X_RANGE ? rv : NULL,
                         r->cond, &hdrs, err);
  }
  if (rc < 0)
    curl_slist_free_all(hdrs);
  *out = rc < 0 ? NULL : hdrs;
  return rc;
}

/* The options of one request to url on h (reset first: a redirect's
 * request carries nothing of the one before). */
static void hop_setup(struct http_client *c, CURL *h, struct xfer *x,
                      const struct http_req *r, const char *url,
                      struct curl_slist *hdrs, int creds, long left) {
  curl_easy_reset(h); /* keeps the connections and caches */
  curl_easy_setopt(h, CURLOPT_URL, url);
  curl_easy_setopt(h, CURLOPT_SHARE, c->share);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L); /* redirect_next */
  curl_easy_setopt(h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, (long)c->cfg.connect_ms);
  /* A stream is paced by its sink: only the stall bound applies. */
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, x->mode == X_STREAM ? 0L : left);
  curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(h, CURLOPT_XFERINFODATA, x);
  curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, on_prereq);
  curl_easy_setopt(h, CURLOPT_PREREQDATA, x);
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, x->curl_err);
  /* No transparent decompression: the bytes must be the object's. */
  curl_easy_setopt(h, CURLOPT_ACCEPT_ENCODING, NULL);
  curl_easy_setopt(h, CURLOPT_USERAGENT, "zarrfs/" PACKAGE_VERSION);
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
  if (x->fresh) /* the last connection carried more than an answer */
    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L);
  if (creds && r->aws_sigv4 && r->userpwd) {
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, r->aws_sigv4);
    curl_easy_setopt(h, CURLOPT_USERPWD, r->userpwd);
  }
  if (x->mode == X_RANGE) {
    char range[64];
    snprintf(range, sizeof range, "%" PRIu64 "-%" PRIu64, x->off,
             x->off + x->len - 1);
    curl_easy_setopt(h, CURLOPT_RANGE, range); /* copied by libcurl */
  }
}

/* After the answer of redirect hop n to cur: 1 when it redirects to a
 * target that may be asked (*next malloc'd; *creds and
 * x->allow_link_local set for it), 0 when it is the answer itself, or a
 * negative errno with the reason. */
static int redirect_next(const struct http_req *r, struct xfer *x,
                         const char *cur, int n, char **next, int *creds,
                         struct zerr *err) {
  long st = x->status;
  if ((st != 301 && st != 302 && st != 303 && st != 307 && st != 308) ||
      (!x->location[0] && !x->location_long))
    return 0;
  const char *lu = r->log_url ? r->log_url : r->url;
  if (x->location_long)
    return zerr_set(err, EIO, "GET %s: a redirect target too long", lu);
  if (n >= HTTP_MAX_REDIRS)
    return zerr_set(err, EIO, "GET %s: more than %d redirects", lu,
                    HTTP_MAX_REDIRS);
  struct zerr e = {0};
  char *to = NULL, shown[200];
  int ll = 0;
  int rc = url_redirect_target(cur, x->location, &to, &e);
  url_for_log(to ? to : x->location, shown, sizeof shown);
  if (rc == 0 && r->redirect)
    rc = r->redirect(r->redirect_ud, to, &ll, &e);
  else if (rc == 0)
    ll = r->allow_link_local && url_same_origin(to, r->url);
  if (rc < 0) {
    free(to);
    return zerr_set(err, -rc, "GET %s: redirected to %s: refused: %s", lu,
                    shown, e.msg);
  }
  x->allow_link_local = ll;
  *creds = url_same_origin(to, r->url);
  *next = to;
  return 1;
}

/* Run one attempt on a fresh handle. Returns the verdict; *rc and err hold
 * the failure (for V_FAIL, and for V_RETRY the reason if it was the last). */
static enum verdict attempt(struct http_client *c, const struct http_req *r,
                            struct xfer *x, int64_t deadline, int *rc,
                            struct zerr *err) {
  const char *lu = r->log_url ? r->log_url : r->url;
  CURL *h = handle_take(c, rc);
  if (!h) {
    zerr_set(err, -*rc, "GET %s: %s", lu,
             *rc == -EINTR ? "interrupted: zarrfs is shutting down"
                           : "out of memory");
    return V_FAIL;
  }
  x->last_byte_ms = now_ms();
  x->allow_link_local = r->allow_link_local;
  const char *url = r->url;
  char *owned = NULL; /* url after a redirect */
  int creds = 1;      /* at the origin asked for */
  CURLcode cc = CURLE_OK;
  for (int hop = 0;; hop++) {
    reset_answer(x);
    struct curl_slist *hdrs;
    struct zerr se = {0};
    if ((*rc = hop_headers(r, x, url, creds, &hdrs, &se)) < 0) {
      handle_give(c, h);
      free(owned);
      zerr_set(err, -*rc, "GET %s: %s", lu, se.msg);
      return V_FAIL;
    }
    int64_t left = deadline - now_ms();
    hop_setup(c, h, x, r, url, hdrs, creds, left < 1 ? 1 : (long)left);
    atomic_fetch_add_explicit(&c->requests, 1, memory_order_relaxed);
    cc = curl_easy_perform(h);
    curl_slist_free_all(hdrs);
    if (cc != CURLE_OK || x->refused)
      break;
    char *next = NULL;
    int go = redirect_next(r, x, url, hop, &next, &creds, err);
    if (go <= 0) {
      if (go < 0) {
        handle_give(c, h);
        free(owned);
        *rc = go;
        return V_FAIL;
      }
      break;
    }
    free(owned);
    url = owned = next;
  }
  handle_give(c, h);
  free(owned);

  if (cc == CURLE_WRITE_ERROR && x->done)
    cc = CURLE_OK; /* cut on purpose: a 200 answer gave the range */
  if (x->refused) {
    *rc = zerr_set(err, EACCES,
                   "GET %s: refused to connect to link-local address %s "
                   "(cloud metadata); name it with -o target_root=URL to "
                   "allow it",
                   lu, x->refused_ip);
    return V_FAIL;
  }
  if (cc == CURLE_ABORTED_BY_CALLBACK && stopped(c)) {
    *rc = zerr_set(err, EINTR, "GET %s: interrupted: zarrfs is shutting down",
                   lu);
    return V_FAIL;
  }
  if (x->sink_rc < 0) {
    *rc = zerr_set(err, -x->sink_rc, "%s", x->sink_err.msg);
    return V_FAIL;
  }
  if (x->bad == ENOMEM) {
    *rc = zerr_set(err, ENOMEM, "GET %s: out of memory", lu);
    return V_FAIL;
  }
  if (x->too_big) {
    *rc = zerr_set(err, EFBIG, "GET %s: object is larger than %zu bytes", lu,
                   x->max);
    return V_FAIL;
  }
  if (x->encoding[0] && x->status >= 200 && x->status < 300) {
    *rc = zerr_set(err, EIO,
                   "GET %s: the server sent the object encoded "
                   "(Content-Encoding: %s), not its bytes",
                   lu, x->encoding);
    return V_FAIL;
  }
  if (cc == CURLE_UNSUPPORTED_PROTOCOL || cc == CURLE_WEIRD_SERVER_REPLY) {
    /* What came is not an answer: the rest of an earlier answer longer
     * than its Content-Length on a reused connection, or not HTTP at
     * all. Tried again on a new connection. */
    x->fresh = 1;
    *rc = zerr_set(err, ETIMEDOUT,
                   "GET %s: the server's answer is not HTTP (%s): an answer "
                   "before it on the same connection may have been longer "
                   "than its Content-Length",
                   lu, x->curl_err[0] ? x->curl_err : curl_easy_strerror(cc));
    return V_RETRY;
  }
  if (cc == CURLE_PARTIAL_FILE && x->mode == X_RANGE && x->status == 206 &&
      x->have_crange == 1 && x->cr_total == 0 && x->got == 0) {
    /* "bytes 0-0/0" with no body: an empty object described with an
     * impossible range (s3rver does this where S3 answers 416). */
    x->have_crange = 2;
    return V_OK;
  }
  if (cc != CURLE_OK) {
    const char *what =
        x->stalled ? "stalled (no data)" : curl_easy_strerror(cc);
    if (x->bad)
      what = x->why;
    switch (cc) {
    case CURLE_URL_MALFORMAT:
    case CURLE_TOO_MANY_REDIRECTS:
    case CURLE_NOT_BUILT_IN:
      *rc = zerr_set(err, EIO, "GET %s: %s", lu, what);
      return V_FAIL;
    default:
      /* timeouts, resets, short bodies, refused connections, bad
       * responses: may pass */
      *rc = zerr_set(err, ETIMEDOUT, "GET %s: %s", lu, what);
      return V_RETRY;
    }
  }
  long st = x->status;
  char code[80];
  if (st == 404 || st == 410) {
    *rc = zerr_set(err, ENOENT, "GET %s: HTTP %ld", lu, st);
    return V_FAIL;
  }
  if (st == 401 || st == 403) {
    hparse_error_code(x->errbody, x->errlen, code, sizeof code);
    *rc = zerr_set(err, EACCES, "GET %s: HTTP %ld%s", lu, st, code);
    return V_FAIL;
  }
  if (st == 412) {
    *rc = zerr_set(err, ESTALE, "GET %s: HTTP 412 (the object changed)", lu);
    return V_FAIL;
  }
  if (st == 408 || st == 429 || st >= 500) {
    hparse_error_code(x->errbody, x->errlen, code, sizeof code);
    *rc = zerr_set(err, ETIMEDOUT, "GET %s: HTTP %ld%s", lu, st, code);
    return V_RETRY;
  }
  if (x->mode == X_RANGE && st == 416) {
    if (x->have_crange == 2 && x->off >= x->cr_total) {
      x->got = 0;
      return V_OK; /* asked from the end: nothing there */
    }
    *rc = zerr_set(err, EIO, "GET %s: HTTP 416 for bytes %" PRIu64 "-", lu,
                   x->off);
    return V_FAIL;
  }
  if (st != 200 && st != 206) {
    *rc = zerr_set(err, EIO, "GET %s: HTTP %ld", lu, st);
    return V_FAIL;
  }
  if (x->mode == X_ALL || x->mode == X_STREAM) {
    if (st != 200) {
      *rc = zerr_set(err, EIO, "GET %s: HTTP %ld to a plain GET", lu, st);
      return V_FAIL;
    }
    if (x->mode == X_STREAM) {
      if (!x->done && x->clen != UINT64_MAX && x->body != x->clen) {
        *rc = zerr_set(err, ETIMEDOUT,
                       "GET %s: short body (%" PRIu64 " of %" PRIu64 " bytes)",
                       lu, x->body, x->clen);
        return V_RETRY;
      }
      if (!x->done) { /* the end: tell the sink (an empty object too) */
        x->meta.total = x->body;
        int src = x->sink(x->sink_ud, x->body, NULL, 0, &x->meta, &x->sink_err);
        if (src < 0) {
          *rc = zerr_set(err, -src, "%s", x->sink_err.msg);
          return V_FAIL;
        }
      }
      return V_OK;
    }
    if (x->clen != UINT64_MAX && x->got != x->clen) {
      *rc = zerr_set(err, ETIMEDOUT,
                     "GET %s: short body (%zu of %" PRIu64 " bytes)", lu,
                     x->got, x->clen);
      return V_RETRY;
    }
    return V_OK;
  }
  /* X_RANGE: judge what came. */
  if (st == 206) {
    if (x->have_crange != 1) {
      *rc = zerr_set(err, EIO, "GET %s: 206 without Content-Range", lu);
      return V_FAIL;
    }
    uint64_t n = x->cr_end - x->cr_start + 1;
    if (x->got != n) {
      *rc = zerr_set(err, ETIMEDOUT,
                     "GET %s: short body (%zu of %" PRIu64 " bytes)", lu,
                     x->got, n);
      return V_RETRY;
    }
    /* Fewer bytes than asked only when the object ends there. */
    if (n < x->len &&
        (x->cr_total == UINT64_MAX || x->cr_end + 1 != x->cr_total)) {
      *rc = zerr_set(err, ETIMEDOUT,
                     "GET %s: server answered %" PRIu64
                     " of %zu bytes before the end of the object",
                     lu, n, x->len);
      return V_RETRY;
    }
    return V_OK;
  }
  /* 200: the whole object from 0; it is complete when cut on purpose or
   * when the body ended and matched its Content-Length. */
  if (!x->done) {
    if (x->clen != UINT64_MAX && x->body != x->clen) {
      *rc = zerr_set(err, ETIMEDOUT, "GET %s: short body", lu);
      return V_RETRY;
    }
    x->cr_total = x->body; /* the object ended before the range did */
  } else {
    x->cr_total = x->clen;
  }
  return V_OK;
}

/* Attempts with backoff until success, a final failure, the attempt limit
 * or the deadline. */
static int run(struct http_client *c, const struct http_req *r, struct xfer *x,
               struct zerr *err) {
  int64_t start = now_ms(), deadline = start + c->cfg.op_ms;
  int rc = 0;
  int n;
  for (n = 1;; n++) {
    struct zerr e = {0};
    enum verdict v = attempt(c, r, x, deadline, &rc, &e);
    if (v == V_OK)
      return 0;
    if (v == V_FAIL) {
      zerr_set(err, -rc, "%s", e.msg);
      return rc;
    }
    int64_t left = deadline - now_ms();
    if (n >= c->cfg.max_attempts || left <= 0) {
      zerr_set(err, ETIMEDOUT, "%s (after %d attempt%s in %.1f s)", e.msg, n,
               n == 1 ? "" : "s", (double)(now_ms() - start) / 1000.0);
      return -ETIMEDOUT;
    }
    /* Full jitter: uniform in [0, min(cap, base * 2^(n-1))]. */
    int64_t cap = c->cfg.backoff_base_ms << (n - 1 < 20 ? n - 1 : 20);
    if (cap > c->cfg.backoff_cap_ms)
      cap = c->cfg.backoff_cap_ms;
    int64_t wait = cap > 0 ? (int64_t)(rnd(c) % (uint64_t)(cap + 1)) : 0;
    if (x->retry_after_s > 0 && x->retry_after_s * 1000 > wait)
      wait = x->retry_after_s * 1000;
    if (wait > left)
      wait = left;
    if (sleep_ms(c, wait) < 0)
      return zerr_set(err, EINTR, "%s: interrupted: zarrfs is shutting down",
                      r->log_url ? r->log_url : r->url);
  }
}

int http_get_range(struct http_client *c, const struct http_req *r,
                   uint64_t off, size_t len, void *dst, size_t *got,
                   struct http_meta *meta, struct zerr *err) {
  if (len == 0) {
    *got = 0;
    if (meta) {
      memset(meta, 0, sizeof *meta);
      meta->total = UINT64_MAX;
    }
    return 0;
  }
  struct xfer x = {.c = c, .mode = X_RANGE, .off = off, .len = len, .dst = dst};
  ZTRY(run(c, r, &x, err));
  *got = x.got;
  if (meta) {
    *meta = x.meta;
    meta->total = x.cr_total;
    meta->whole = x.status == 200;
  }
  return 0;
}

int http_get_stream(struct http_client *c, const struct http_req *r,
                    http_sink_fn sink, void *ud, struct zerr *err) {
  struct xfer x = {.c = c, .mode = X_STREAM, .sink = sink, .sink_ud = ud};
  return run(c, r, &x, err);
}

int http_get_all(struct http_client *c, const struct http_req *r, size_t max,
                 uint8_t **out, size_t *len, struct zerr *err) {
  struct xfer x = {.c = c, .mode = X_ALL, .max = max};
  int rc = run(c, r, &x, err);
  if (rc < 0) {
    free(x.buf);
    return rc;
  }
  if (!x.buf && !(x.buf = malloc(1))) {
    return zerr_set(err, ENOMEM, "out of memory");
  }
  x.buf[x.got] = '\0';
  *out = x.buf;
  *len = x.got;
  return 0;
}
