/* confine.c - allowed roots and the descriptor pool of targets (see
 * confine.h). */
#define _GNU_SOURCE
#include "confine.h"

#include "fdpool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

struct confine {
  struct fdpool *pool;     /* descriptors of every target opened */
  struct confine_roots *r; /* borrowed from pool */
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
  if (!c || !r) {
    free(c);
    free(r);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  int rc = fdpool_new(0, confine_reopen, r, roots_free, &c->pool, err);
  if (rc < 0) { /* r was freed by fdpool_new */
    free(c);
    return rc;
  }
  c->r = r;
  *out = c;
  return 0;
}

/* Resolve dir and remember it. */
int confine_add_root(struct confine *c, const char *dir, struct zerr *err) {
  struct confine_roots *rs = c->r;
  char *abs = realpath(dir, NULL);
  if (!abs)
    return zerr_set(err, errno == ENOENT ? ENOENT : EIO, "allowed root %s: %s",
                    dir, strerror(errno));
  struct stat st;
  if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
    free(abs);
    return zerr_set(err, ENOTDIR, "allowed root %s: not a directory", dir);
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

/* Prefix check on a path boundary. */
int confine_allows(const struct confine *c, const char *resolved) {
  return c ? roots_allow(c->r, resolved) : 0;
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
                    "allow_root=DIR to allow it)",
                    path, real);
  }
  int rc = fdpool_open_checked(pfd, reopen_nonblock, (void *)path, fd, st, err);
  close(pfd);
  if (rc < 0)
    zerr_prefix(err, "target %s: ", path);
  return rc;
}

/* Open, checked, with one retry after shedding idle descriptors when the
 * table is full; the descriptor goes to the pool. */
int confine_open(const struct confine *c, const char *path,
                 struct io_stats *stats, struct bytesrc **out,
                 struct zerr *err) {
  if (!c)
    return zerr_set(err, EACCES, "target %s: no allowed roots", path);
  int fd;
  struct stat st;
  int rc = confine_reopen(c->r, path, &fd, &st, err);
  if (rc == -EMFILE || rc == -ENFILE) {
    fdpool_shed(c->pool);
    rc = confine_reopen(c->r, path, &fd, &st, err);
  }
  if (rc < 0)
    return rc;
  return bytesrc_from_pool(c->pool, fd, &st, path, stats, out, err);
}

/* Drop the pool (the roots go with the last source that may reopen). */
void confine_free(struct confine *c) {
  if (!c)
    return;
  fdpool_unref(c->pool);
  free(c);
}
