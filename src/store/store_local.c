/* store_local.c - a store backed by a local directory: key "a/c/0" is the
 * file ROOT/a/c/0.
 *
 * Confinement: every key is resolved beneath the root directory
 * (openat2 RESOLVE_BENEATH; on kernels without openat2, the resolved path
 * is checked against the root), so a symbolic link inside the store can
 * never make the mount serve a file outside what the user mounted.
 *
 * Only regular files are read, and opening never blocks: a key is opened
 * O_PATH first, checked with fstat (a FIFO, socket or device is refused
 * with EIO naming its type), then that very inode is reopened for reading
 * (fdpool_open_checked). Descriptors are not held by the byte sources: the
 * store's pool (src/io/fdpool.h) lends one for each read and reopens the key
 * when it had closed it, so cached chunks cost no descriptors. */
#define _GNU_SOURCE /* O_PATH */
#include "store.h"

#include "../io/fdpool.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The root, as the pool's reopen context (owned by the pool, so it lives
 * as long as any source that may need to reopen a file). */
struct local_root {
  char *root;  /* absolute, resolved, no trailing slash */
  int root_fd; /* O_PATH descriptor of root */
};

struct store_local {
  struct store base;
  struct fdpool *pool;   /* descriptors of the sources this store made */
  struct local_root *rt; /* borrowed from pool */
};

/* Is path (resolved) the root or below it? */
static int under_root(const struct local_root *r, const char *path) {
  size_t n = strlen(r->root);
  return !strncmp(path, r->root, n) &&
         (path[n] == '\0' || path[n] == '/' || (n == 1 && r->root[0] == '/'));
}

/* openat2 beneath the root, or on kernels without it, openat and a check
 * of where the descriptor landed. -errno on failure (EXDEV: escapes). */
static int openat_beneath(const struct local_root *r, const char *rel,
                          int flags) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (uint64_t)(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = (int)syscall(SYS_openat2, r->root_fd, rel, &how, sizeof how);
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
    /* No openat2 (old kernel or seccomp): open, then check where we are. */
    fd = openat(r->root_fd, rel, flags | O_CLOEXEC);
    if (fd >= 0) {
      char link[64], real[4096];
      snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      ssize_t n = readlink(link, real, sizeof real - 1);
      if (n < 0 || (real[n] = '\0', !under_root(r, real))) {
        close(fd);
        return -EXDEV;
      }
    }
  }
  return fd < 0 ? -errno : fd;
}

/* Open key (relative; "" is the root) beneath the root with flags. A link
 * that leaves the store is -EACCES, a missing key -ENOENT, a transient
 * failure keeps its code, anything else is -EIO. */
static int open_beneath(const struct local_root *r, const char *key, int flags,
                        int *out, struct zerr *err) {
  int fd = openat_beneath(r, *key ? key : ".", flags);
  if (fd < 0) {
    int e = -fd;
    if (e == EXDEV || e == ELOOP)
      return zerr_set(err, EACCES,
                      "refusing a symbolic link that leaves the store");
    if (e == ENOENT || e == ENOTDIR)
      return zerr_set(err, ENOENT, "%s", strerror(e));
    return zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s", strerror(e));
  }
  *out = fd;
  return 0;
}

/* Where fdpool_open_checked's fallback finds the key again. */
struct reopen_key {
  const struct local_root *r;
  const char *key;
};

/* No /proc: reopen the key by name, beneath the root, without blocking. */
static int reopen_nonblock(void *ud, int *fd) {
  const struct reopen_key *k = ud;
  int rc = openat_beneath(k->r, k->key, O_RDONLY | O_NONBLOCK | O_NOCTTY);
  if (rc < 0)
    return rc;
  *fd = rc;
  return 0;
}

/* Open key for reading: O_PATH beneath the root, refuse what is not a
 * regular file (a FIFO would block open(O_RDONLY) until a writer comes),
 * then reopen that very inode. Also the pool's reopen callback. */
static int local_open_read(void *ctx, const char *key, int *fd, struct stat *st,
                           struct zerr *err) {
  const struct local_root *r = ctx;
  int pfd;
  ZTRY(open_beneath(r, key, O_PATH, &pfd, err));
  struct reopen_key k = {r, key};
  int rc = fdpool_open_checked(pfd, reopen_nonblock, &k, fd, st, err);
  close(pfd);
  return rc;
}

/* Close the root and free (the pool's context destructor). */
static void local_root_free(void *ctx) {
  struct local_root *r = ctx;
  if (!r)
    return;
  if (r->root_fd >= 0)
    close(r->root_fd);
  free(r->root);
  free(r);
}

/* Open the key's file and hand its descriptor to the pool. A full
 * descriptor table is transient: close the pool's idle descriptors and try
 * once more; if that fails too, the code stays EMFILE/ENFILE. */
static int local_get(struct store *s, const char *key, struct bytesrc **out,
                     struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  int fd;
  struct stat st;
  int rc = local_open_read(l->rt, key, &fd, &st, err);
  if (rc == -EMFILE || rc == -ENFILE) {
    fdpool_shed(l->pool);
    rc = local_open_read(l->rt, key, &fd, &st, err);
  }
  if (rc < 0)
    return rc;
  return bytesrc_from_pool(l->pool, fd, &st, key, &s->stats, out, err);
}

/* O_PATH descriptor of key, retried once after shedding idle descriptors
 * when the table is full. */
static int open_path_retry(struct store_local *l, const char *key, int flags,
                           int *fd, struct zerr *err) {
  int rc = open_beneath(l->rt, key, flags, fd, err);
  if (rc == -EMFILE || rc == -ENFILE) {
    fdpool_shed(l->pool);
    rc = open_beneath(l->rt, key, flags, fd, err);
  }
  return rc;
}

/* The modification time of a stat result, in nanoseconds. */
static int64_t mtime_of(const struct stat *st) {
  return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* The entry type of a stat result. */
static enum store_entry_type type_of(const struct stat *st) {
  return S_ISDIR(st->st_mode)   ? STORE_DIR
         : S_ISREG(st->st_mode) ? STORE_FILE
                                : STORE_OTHER;
}

/* The stat of key (followed as a read would), without keeping a
 * descriptor. */
static int stat_key(struct store_local *l, const char *key, struct stat *st,
                    struct zerr *err) {
  int fd;
  ZTRY(open_path_retry(l, key, O_PATH, &fd, err));
  int rc = fstat(fd, st);
  int e = errno;
  close(fd);
  if (rc < 0)
    return zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s", strerror(e));
  return 0;
}

/* Type and size of a key. A FIFO, socket or device is STORE_OTHER: it
 * exists, but reading it fails (store_get: -EIO). */
static int local_stat(struct store *s, const char *key,
                      enum store_entry_type *type, uint64_t *size,
                      int64_t *mtime, struct zerr *err) {
  struct stat st;
  ZTRY(stat_key((struct store_local *)s, key, &st, err));
  *type = type_of(&st);
  *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
  *mtime = mtime_of(&st);
  return 0;
}

/* Size and version of a key from its stat: those of the source store_get
 * would make (bytesrc_version_of_stat), without a descriptor kept. */
static int local_version(struct store *s, const char *key, uint64_t *size,
                         uint64_t *version, struct zerr *err) {
  struct stat st;
  ZTRY(stat_key((struct store_local *)s, key, &st, err));
  if (!S_ISREG(st.st_mode))
    return zerr_set(err, EIO, "not a regular file");
  *size = (uint64_t)st.st_size;
  *version = bytesrc_version_of_stat(&st);
  return 0;
}

/* Read the directory. What exists but cannot be served (a FIFO, socket or
 * device, a symbolic link that leaves the store or loops) is listed as
 * STORE_OTHER, so that callers never take it for an absent key; a
 * dangling symbolic link is absent. A transient failure (EMFILE, ENOMEM)
 * fails the whole listing rather than leaving entries out in silence. */
static int local_list(struct store *s, const char *prefix, store_list_cb cb,
                      void *ud, struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  int fd;
  ZTRY(open_path_retry(l, prefix, O_RDONLY | O_DIRECTORY, &fd, err));
  DIR *d = fdopendir(fd);
  if (!d) {
    int e = errno;
    close(fd);
    return zerr_set(err, zerr_is_transient(e) ? e : EIO, "cannot list: %s",
                    strerror(e));
  }
  int dfd = dirfd(d), rc = 0;
  struct dirent *de;
  errno = 0;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    struct stat st;
    enum store_entry_type t;
    if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      int e = errno;
      if (e == ENOENT) /* removed while we list */
        continue;
      rc = zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s: %s", de->d_name,
                    strerror(e));
      break;
    }
    if (S_ISLNK(st.st_mode)) {
      /* Follow the link, confined like every other access. */
      char key[4096];
      int n = *prefix ? snprintf(key, sizeof key, "%s/%s", prefix, de->d_name)
                      : snprintf(key, sizeof key, "%s", de->d_name);
      int lfd;
      struct zerr le = {0};
      int orc = n < 0 || (size_t)n >= sizeof key
                    ? -ENAMETOOLONG
                    : open_path_retry(l, key, O_PATH, &lfd, &le);
      if (orc == -ENOENT)
        continue; /* dangling: absent */
      if (orc < 0 && zerr_is_transient(-orc)) {
        rc = zerr_set(err, -orc, "%s: %s", de->d_name, le.msg);
        break;
      }
      if (orc < 0) { /* leaves the store, loops, too long: unusable */
        t = STORE_OTHER;
        st.st_size = 0;
      } else {
        int src = fstat(lfd, &st), e = errno;
        close(lfd);
        if (src < 0) {
          rc = zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s: %s",
                        de->d_name, strerror(e));
          break;
        }
        t = type_of(&st);
      }
    } else {
      t = type_of(&st);
    }
    if (cb(ud, de->d_name, t, t == STORE_FILE ? (uint64_t)st.st_size : 0,
           t == STORE_OTHER ? STORE_MTIME_UNKNOWN : mtime_of(&st)))
      break;
    errno = 0;
  }
  if (!de && errno && rc == 0)
    rc = zerr_set(err, zerr_is_transient(errno) ? errno : EIO,
                  "cannot list: %s", strerror(errno));
  closedir(d);
  return rc;
}

/* Drop the pool (the root goes with the last source that may reopen). */
static void local_destroy(struct store *s) {
  struct store_local *l = (struct store_local *)s;
  fdpool_unref(l->pool);
  free(s->location);
  free(l);
}

static const struct store_ops local_ops = {local_get, local_stat, local_list,
                                           local_destroy};

/* Resolve root and check it is a readable directory. */
int store_open_local(const char *root, struct store **out, struct zerr *err) {
  char *abs = realpath(root, NULL);
  if (!abs) {
    int e = errno;
    return zerr_set(err,
                    e == ENOENT            ? ENOENT
                    : zerr_is_transient(e) ? e
                                           : EIO,
                    "%s: %s", root, strerror(e));
  }
  int fd = open(abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    free(abs);
    return zerr_set(err,
                    e == ENOTDIR           ? ENOTDIR
                    : zerr_is_transient(e) ? e
                                           : EIO,
                    "%s: %s", root, strerror(e));
  }
  struct store_local *l = calloc(1, sizeof *l);
  struct local_root *r = calloc(1, sizeof *r);
  char *loc = strdup(abs);
  if (!l || !r || !loc) {
    free(l);
    free(r);
    free(loc);
    free(abs);
    close(fd);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  r->root = abs;
  r->root_fd = fd;
  int rc = fdpool_new(0, local_open_read, r, local_root_free, &l->pool, err);
  if (rc < 0) { /* r was freed by fdpool_new */
    free(l);
    free(loc);
    return rc;
  }
  l->base.ops = &local_ops;
  l->base.version = local_version;
  l->base.location = loc;
  l->rt = r;
  *out = &l->base;
  return 0;
}
