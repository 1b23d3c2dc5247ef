/* confine.c - allowed roots (see confine.h). */
#define _GNU_SOURCE
#include "confine.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct confine {
  char **roots; /* resolved absolute paths, no trailing slash (but "/") */
  size_t n, cap;
};

/* An empty set. */
int confine_new(struct confine **out, struct zerr *err) {
  *out = calloc(1, sizeof **out);
  return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
}

/* Resolve dir and remember it. */
int confine_add_root(struct confine *c, const char *dir, struct zerr *err) {
  char *abs = realpath(dir, NULL);
  if (!abs)
    return zerr_set(err, errno == ENOENT ? ENOENT : EIO, "allowed root %s: %s",
                    dir, strerror(errno));
  struct stat st;
  if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
    free(abs);
    return zerr_set(err, ENOTDIR, "allowed root %s: not a directory", dir);
  }
  for (size_t i = 0; i < c->n; i++)
    if (!strcmp(c->roots[i], abs)) {
      free(abs);
      return 0;
    }
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 4;
    char **r = realloc(c->roots, nc * sizeof *r);
    if (!r) {
      free(abs);
      return zerr_set(err, ENOMEM, "out of memory");
    }
    c->roots = r;
    c->cap = nc;
  }
  c->roots[c->n++] = abs;
  return 0;
}

/* Prefix check on a path boundary. */
int confine_allows(const struct confine *c, const char *resolved) {
  for (size_t i = 0; c && i < c->n; i++) {
    const char *r = c->roots[i];
    size_t n = strlen(r);
    if (n == 1 && r[0] == '/')
      return resolved[0] == '/';
    if (!strncmp(resolved, r, n) && (resolved[n] == '\0' || resolved[n] == '/'))
      return 1;
  }
  return 0;
}

/* Open first (O_PATH: no side effect, no blocking on a FIFO or device),
 * then check where the descriptor really is and what it is, then reopen
 * that very inode for reading: no race with a symbolic link swapped between
 * a check and the open. */
int confine_open(const struct confine *c, const char *path,
                 struct io_stats *stats, struct bytesrc **out,
                 struct zerr *err) {
  int pfd = open(path, O_PATH | O_CLOEXEC);
  if (pfd < 0) {
    int e = errno;
    return zerr_set(err, e == ENOENT || e == ENOTDIR ? ENOENT : EIO,
                    "target %s: %s", path, strerror(e));
  }
  char link[64], real[PATH_MAX];
  snprintf(link, sizeof link, "/proc/self/fd/%d", pfd);
  ssize_t r = readlink(link, real, sizeof real - 1);
  if (r < 0) {
    close(pfd);
    return zerr_set(err, EIO, "target %s: cannot resolve: %s", path,
                    strerror(errno));
  }
  real[r] = '\0';
  if (!confine_allows(c, real)) {
    close(pfd);
    return zerr_set(err, EACCES,
                    "target %s (%s) is outside the allowed roots (add -o "
                    "allow_root=DIR to allow it)",
                    path, real);
  }
  struct stat st;
  if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(pfd);
    return zerr_set(err, EIO, "target %s: not a regular file", path);
  }
  int fd = open(link, O_RDONLY | O_CLOEXEC);
  int e = errno;
  close(pfd);
  if (fd < 0)
    return zerr_set(err, EIO, "target %s: %s", path, strerror(e));
  return bytesrc_from_fd(fd, stats, out, err);
}

/* Free the roots. */
void confine_free(struct confine *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n; i++)
    free(c->roots[i]);
  free(c->roots);
  free(c);
}
