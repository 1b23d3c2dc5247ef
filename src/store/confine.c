/* confine.c - allowed roots and the descriptor pool of targets (see
 * confine.h). */
#define _GNU_SOURCE
#include "confine.h"

#include "../io/fdpool.h"
#include "../net/remote.h"
#include "../net/url.h"
#include "../util/htab.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The roots: the pool's reopen context (owned by the pool, so that a
 * source that outlives the confine can still reopen its target). */
struct confine_roots {
  char **roots; /* resolved absolute paths, no trailing slash (but "/") */
  size_t n, cap;
};

/* Slots of the cache of opened targets: a bound on what it pins (one
 * source each; their descriptors stay within the pool's limit). */
#define CONFINE_CACHE_SLOTS 256

/* A target opened and checked, kept so that opening it again (the next
 * chunk of the same file) costs no system call. */
struct confine_hit {
  char *path;             /* as given to confine_open; NULL: empty slot */
  struct io_stats *stats; /* the source counts into these */
  struct bytesrc *src;    /* one reference: a pool source */
};

/* Direct-mapped by a hash of the path: a new path evicts the one in its
 * slot. A separate allocation, so that confine_open can fill it through
 * the const confine its callers share. */
struct confine_cache {
  pthread_mutex_t lock; /* guards everything below; before the pool's */
  struct confine_hit slot[CONFINE_CACHE_SLOTS];
  size_t entries;
  uint64_t hits;
};

struct confine {
  struct fdpool *pool;         /* descriptors of every target opened */
  struct confine_cache *cache; /* opened targets (see confine.h) */
  struct confine_roots *r;     /* borrowed from pool */
  struct remote *remote;       /* remote targets (borrowed), or NULL */
  char **url_prefixes;         /* -o target_root=URL: explicitly allowed */
  size_t n_url;
  struct url_scope *scope; /* where redirects of targets may lead */
  char **endpoints;        /* -o container_endpoint=URL */
  size_t n_ep;
  int no_remote;  /* -o remote_targets=no */
  int remote_ref; /* the reference itself is remote: no local
                     target at all */
};

/* Free the roots (the pool's context destructor). */
static void roots_free(void *ctx) {
  struct confine_roots *r = ctx;
  if (!r)
    return;
  for (size_t i = 0; i < r->n; i++)
    free(r->roots[i]);
  free(r->roots);
  free(r);
}

static int confine_reopen(void *ctx, const char *path, int *fd, struct stat *st,
                          struct zerr *err);

/* An empty set, with its descriptor pool. */
int confine_new(struct confine **out, struct zerr *err) {
  struct confine *c = calloc(1, sizeof *c);
  struct confine_roots *r = calloc(1, sizeof *r);
  struct confine_cache *cc = calloc(1, sizeof *cc);
  if (!c || !r || !cc) {
    free(c);
    free(r);
    free(cc);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  int rc = fdpool_new(0, confine_reopen, r, roots_free, &c->pool, err);
  if (rc < 0) { /* r was freed by fdpool_new */
    free(c);
    free(cc);
    return rc;
  }
  pthread_mutex_init(&cc->lock, NULL);
  c->cache = cc;
  c->r = r;
  if ((rc = url_scope_new(NULL, 0, 0, NULL, &c->scope, err)) < 0) {
    confine_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* Resolve dir (a path, or a file:///PATH URL) and remember it. */
int confine_add_root(struct confine *c, const char *dir, struct zerr *err) {
  struct confine_roots *rs = c->r;
  const char *given = dir;
  if (!strncmp(dir, "file://", 7)) { /* how Icechunk names local prefixes */
    dir += 7;
    if (dir[0] != '/')
      return zerr_set(err, EINVAL,
                      "allowed root %s: a file:// URL names a host; a "
                      "directory (DIR or file:///DIR) is expected",
                      given);
  } else if (strstr(dir, "://")) {
    return zerr_set(err, EINVAL,
                    "allowed root %s: a directory, or an %s URL prefix, is "
                    "expected",
                    given, remote_url_schemes());
  }
  char *abs = realpath(dir, NULL);
  if (!abs) {
    int e = errno;
    return zerr_set(err, e == ENOENT || zerr_is_transient(e) ? e : EIO,
                    "allowed root %s: %s (a directory is expected)", given,
                    strerror(e));
  }
  struct stat st;
  if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
    free(abs);
    return zerr_set(err, ENOTDIR, "allowed root %s: not a directory", given);
  }
  for (size_t i = 0; i < rs->n; i++)
    if (!strcmp(rs->roots[i], abs)) {
      free(abs);
      return 0;
    }
  if (rs->n == rs->cap) {
    size_t nc = rs->cap ? rs->cap * 2 : 4;
    char **r = realloc(rs->roots, nc * sizeof *r);
    if (!r) {
      free(abs);
      return zerr_set(err, ENOMEM, "out of memory");
    }
    rs->roots = r;
    rs->cap = nc;
  }
  rs->roots[rs->n++] = abs;
  return 0;
}

/* Prefix check on a path boundary. */
static int roots_allow(const struct confine_roots *rs, const char *resolved) {
  for (size_t i = 0; rs && i < rs->n; i++) {
    const char *r = rs->roots[i];
    size_t n = strlen(r);
    if (n == 1 && r[0] == '/')
      return resolved[0] == '/';
    if (!strncmp(resolved, r, n) && (resolved[n] == '\0' || resolved[n] == '/'))
      return 1;
  }
  return 0;
}

/* A failed system call: transient codes kept, the rest EIO. */
static int sys_fail(struct zerr *err, int e, const char *path,
                    const char *what) {
  return zerr_set(err, zerr_is_transient(e) ? e : EIO, "target %s: %s: %s",
                  path, what, strerror(e));
}

/* No /proc: open the path again without blocking (checked by the caller
 * to be the same inode). */
static int reopen_nonblock(void *path, int *fd) {
  *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  return *fd < 0 ? -errno : 0;
}

/* Open first (O_PATH: no side effect, no blocking on a FIFO or device),
 * then check where the descriptor really is and what it is, then reopen
 * that very inode for reading: no race with a symbolic link swapped between
 * a check and the open. Also the pool's reopen callback. */
static int confine_reopen(void *ctx, const char *path, int *fd, struct stat *st,
                          struct zerr *err) {
  const struct confine_roots *rs = ctx;
  int pfd = open(path, O_PATH | O_CLOEXEC);
  if (pfd < 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR)
      return zerr_set(err, ENOENT, "target %s: %s", path, strerror(e));
    return sys_fail(err, e, path, "cannot open");
  }
  char link[64], real[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", pfd);
  ssize_t r = readlink(link, real, sizeof real - 1);
  if (r < 0) {
    int e = errno;
    close(pfd);
    return sys_fail(err, e, path, "cannot resolve");
  }
  real[r] = '\0';
  if (!roots_allow(rs, real)) {
    close(pfd);
    return zerr_set(err, EACCES,
                    "target %s (%s) is outside the allowed roots (add -o "
                    "target_root=DIR to allow it)",
                    path, real);
  }
  int rc = fdpool_open_checked(pfd, reopen_nonblock, (void *)path, fd, st, err);
  close(pfd);
  if (rc < 0)
    zerr_prefix(err, "target %s: ", path);
  return rc;
}

/* The cache slot of a path. */
static struct confine_hit *cache_slot(struct confine_cache *cc,
                                      const char *path) {
  return &cc->slot[htab_hash_str(path) % CONFINE_CACHE_SLOTS];
}

/* A new reference to the source path opened before (same counters), if
 * its descriptor is still open in the pool; NULL otherwise. */
static struct bytesrc *cache_get(struct confine_cache *cc, const char *path,
                                 struct io_stats *stats) {
  struct bytesrc *src = NULL;
  pthread_mutex_lock(&cc->lock);
  struct confine_hit *h = cache_slot(cc, path);
  if (h->path && h->stats == stats && !strcmp(h->path, path) &&
      bytesrc_pool_is_open(h->src)) {
    src = bytesrc_ref(h->src);
    cc->hits++;
  }
  pthread_mutex_unlock(&cc->lock);
  return src;
}

/* Remember src (a new reference) as path's source, evicting the slot's
 * previous entry. Out of memory: just not remembered. */
static void cache_put(struct confine_cache *cc, const char *path,
                      struct io_stats *stats, struct bytesrc *src) {
  char *copy = strdup(path);
  if (!copy)
    return;
  bytesrc_ref(src);
  pthread_mutex_lock(&cc->lock);
  struct confine_hit *h = cache_slot(cc, path), old = *h;
  if (!old.path)
    cc->entries++;
  *h = (struct confine_hit){copy, stats, src};
  pthread_mutex_unlock(&cc->lock);
  free(old.path); /* outside the lock: the unref takes the pool's */
  bytesrc_unref(old.src);
}

/* Drop every entry (confine_free). */
static void cache_free(struct confine_cache *cc) {
  if (!cc)
    return;
  for (size_t i = 0; i < CONFINE_CACHE_SLOTS; i++) {
    free(cc->slot[i].path);
    bytesrc_unref(cc->slot[i].src);
  }
  pthread_mutex_destroy(&cc->lock);
  free(cc);
}

/* Counters of the cache, under its lock. */
void confine_cache_stats(const struct confine *c, size_t *entries,
                         uint64_t *hits) {
  pthread_mutex_lock(&c->cache->lock);
  *entries = c->cache->entries;
  *hits = c->cache->hits;
  pthread_mutex_unlock(&c->cache->lock);
}

/* Open, checked, with one retry after shedding idle descriptors when the
 * table is full; the descriptor goes to the pool. A target opened before
 * whose descriptor the pool still holds comes from the cache. */
int confine_open(const struct confine *c, const char *path,
                 struct io_stats *stats, struct bytesrc **out,
                 struct zerr *err) {
  if (!c)
    return zerr_set(err, EACCES, "target %s: no allowed roots", path);
  if (c->remote_ref)
    return zerr_set(err, EACCES,
                    "target %s: a remote reference cannot read local files",
                    path);
  if ((*out = cache_get(c->cache, path, stats)))
    return 0;
  int fd;
  struct stat st;
  int rc = confine_reopen(c->r, path, &fd, &st, err);
  if (rc == -EMFILE || rc == -ENFILE) {
    fdpool_shed(c->pool);
    rc = confine_reopen(c->r, path, &fd, &st, err);
  }
  if (rc < 0)
    return rc;
  ZTRY(bytesrc_from_pool(c->pool, fd, &st, path, stats, out, err));
  cache_put(c->cache, path, stats, *out);
  return 0;
}

/* ---- remote targets ---- */

void confine_set_remote(struct confine *c, struct remote *r) { c->remote = r; }
void confine_forbid_remote(struct confine *c) { c->no_remote = 1; }
void confine_set_remote_reference(struct confine *c) { c->remote_ref = 1; }

/* Append a copy of s to the list (*list, *n). */
static int push_copy(char ***list, size_t *n, const char *s, struct zerr *err) {
  char **p = realloc(*list, (*n + 1) * sizeof *p);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  *list = p;
  if (!(p[*n] = strdup(s)))
    return zerr_set(err, ENOMEM, "out of memory");
  (*n)++;
  return 0;
}

int confine_add_url_prefix(struct confine *c, const char *prefix,
                           struct zerr *err) {
  if (!remote_is_url(prefix))
    return zerr_set(err, EINVAL, "%s: not an %s URL", prefix,
                    remote_url_schemes());
  ZTRY(push_copy(&c->url_prefixes, &c->n_url, prefix, err));
  struct url_scope *sc;
  ZTRY(confine_scope(c, 0, NULL, &sc, err));
  url_scope_unref(c->scope);
  c->scope = sc;
  return 0;
}

/* A scope of the prefixes named so far. */
int confine_scope(const struct confine *c, int confined, const char *within,
                  struct url_scope **out, struct zerr *err) {
  return url_scope_new((const char *const *)c->url_prefixes, c->n_url, confined,
                       within, out, err);
}

/* Remember an endpoint the user allows containers to name. */
int confine_allow_endpoint(struct confine *c, const char *url,
                           struct zerr *err) {
  if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
    return zerr_set(err, EINVAL,
                    "container_endpoint %s: not an http:// or https:// URL",
                    url);
  return push_copy(&c->endpoints, &c->n_ep, url, err);
}

/* Is url one of the endpoints allowed above? */
int confine_endpoint_allowed(const struct confine *c, const char *url) {
  for (size_t i = 0; c && i < c->n_ep; i++)
    if (url_same_endpoint(c->endpoints[i], url))
      return 1;
  return 0;
}

/* The rule of url.h, where the redirects of targets are checked too. */
int confine_url_matches(const char *prefix, const char *url) {
  return url_under(prefix, url);
}

int confine_check_url(const struct confine *c, const char *url,
                      int *allow_link_local, struct zerr *err) {
  *allow_link_local = 0;
  if (!c)
    return zerr_set(err, EACCES,
                    "target %s: remote targets need a remote context", url);
  if (c->no_remote)
    return zerr_set(err, EACCES,
                    "target %s: remote targets are forbidden "
                    "(-o remote_targets=no)",
                    url);
  for (size_t i = 0; i < c->n_url; i++)
    if (confine_url_matches(c->url_prefixes[i], url))
      *allow_link_local = 1;
  return 0;
}

/* The remote context (borrowed), or NULL. */
struct remote *confine_remote(const struct confine *c) {
  return c ? c->remote : NULL;
}

int confine_open_url(const struct confine *c, const char *url, uint64_t off,
                     uint64_t len, struct io_stats *stats, struct bytesrc **out,
                     struct zerr *err) {
  int ll;
  ZTRY(confine_check_url(c, url, &ll, err));
  if (!c->remote)
    return zerr_set(err, EIO,
                    "target %s: remote targets need a remote "
                    "context",
                    url);
  return remote_open_scoped(c->remote, url, off, len, ll, c->scope, stats, out,
                            err);
}

/* Drop the pool (the roots go with the last source that may reopen). */
void confine_free(struct confine *c) {
  if (!c)
    return;
  cache_free(c->cache);
  fdpool_unref(c->pool);
  for (size_t i = 0; i < c->n_url; i++)
    free(c->url_prefixes[i]);
  free(c->url_prefixes);
  for (size_t i = 0; i < c->n_ep; i++)
    free(c->endpoints[i]);
  free(c->endpoints);
  url_scope_unref(c->scope);
  free(c);
}
