/* store_local.c - a store backed by a local directory: key "a/c/0" is the
 * file ROOT/a/c/0.
 *
 * Confinement: every key is resolved beneath the root directory
 * (openat2 RESOLVE_BENEATH; on kernels without openat2, the resolved path
 * is checked against the root), so a symbolic link inside the store can
 * never make the mount serve a file outside what the user mounted. */
#define _GNU_SOURCE /* O_PATH */
#include "store.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct store_local {
  struct store base;
  char *root;  /* absolute, resolved, no trailing slash */
  int root_fd; /* O_PATH descriptor of root */
};

/* Is path (resolved) the root or below it? */
static int under_root(const struct store_local *l, const char *path) {
  size_t n = strlen(l->root);
  return !strncmp(path, l->root, n) &&
         (path[n] == '\0' || path[n] == '/' || (n == 1 && l->root[0] == '/'));
}

/* Open key (relative; "" is the root) beneath the root with flags. */
static int open_beneath(struct store_local *l, const char *key, int flags,
                        int *out, struct zerr *err) {
  const char *rel = *key ? key : ".";
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (uint64_t)(flags | O_CLOEXEC);
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  int fd = (int)syscall(SYS_openat2, l->root_fd, rel, &how, sizeof how);
  if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
    /* No openat2 (old kernel or seccomp): open, then check where we are. */
    fd = openat(l->root_fd, rel, flags | O_CLOEXEC);
    if (fd >= 0) {
      char link[64], real[4096];
      snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
      ssize_t r = readlink(link, real, sizeof real - 1);
      if (r < 0 || (real[r] = '\0', !under_root(l, real))) {
        close(fd);
        fd = -1;
        errno = EXDEV;
      }
    }
  }
  if (fd < 0) {
    int e = errno;
    if (e == EXDEV || e == ELOOP)
      return zerr_set(err, EACCES,
                      "refusing a symbolic link that leaves the store");
    return zerr_set(err, e == ENOENT || e == ENOTDIR ? ENOENT : EIO, "%s",
                    strerror(e));
  }
  *out = fd;
  return 0;
}

/* Open the key's file. */
static int local_get(struct store *s, const char *key, struct bytesrc **out,
                     struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  int fd;
  ZTRY(open_beneath(l, key, O_RDONLY, &fd, err));
  return bytesrc_from_fd(fd, &s->stats, out, err);
}

/* Type and size of a key. */
static int local_stat(struct store *s, const char *key,
                      enum store_entry_type *type, uint64_t *size,
                      struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  int fd;
  ZTRY(open_beneath(l, key, O_PATH, &fd, err));
  struct stat st;
  int rc = fstat(fd, &st);
  close(fd);
  if (rc < 0)
    return zerr_set(err, EIO, "%s", strerror(errno));
  if (S_ISDIR(st.st_mode))
    *type = STORE_DIR;
  else if (S_ISREG(st.st_mode))
    *type = STORE_FILE;
  else
    return zerr_set(err, ENOENT, "not a file or directory");
  *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
  return 0;
}

/* Read the directory; skip what is not a file or directory, and links
 * that leave the store. */
static int local_list(struct store *s, const char *prefix, store_list_cb cb,
                      void *ud, struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  int fd;
  ZTRY(open_beneath(l, prefix, O_RDONLY | O_DIRECTORY, &fd, err));
  DIR *d = fdopendir(fd);
  if (!d) {
    close(fd);
    return zerr_set(err, EIO, "cannot list: %s", strerror(errno));
  }
  int dfd = dirfd(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    struct stat st;
    if (de->d_type == DT_LNK || de->d_type == DT_UNKNOWN) {
      char key[4096];
      int n = *prefix ? snprintf(key, sizeof key, "%s/%s", prefix, de->d_name)
                      : snprintf(key, sizeof key, "%s", de->d_name);
      int lfd;
      if (n < 0 || (size_t)n >= sizeof key ||
          open_beneath(l, key, O_PATH, &lfd, NULL) < 0)
        continue;
      int rc = fstat(lfd, &st);
      close(lfd);
      if (rc < 0)
        continue;
    } else if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
      continue;
    }
    enum store_entry_type t;
    if (S_ISDIR(st.st_mode))
      t = STORE_DIR;
    else if (S_ISREG(st.st_mode))
      t = STORE_FILE;
    else
      continue;
    if (cb(ud, de->d_name, t, t == STORE_FILE ? (uint64_t)st.st_size : 0))
      break;
  }
  closedir(d);
  return 0;
}

/* Close the root and free. */
static void local_destroy(struct store *s) {
  struct store_local *l = (struct store_local *)s;
  close(l->root_fd);
  free(l->root);
  free(s->location);
  free(l);
}

static const struct store_ops local_ops = {local_get, local_stat, local_list,
                                           local_destroy};

/* Resolve root and check it is a readable directory. */
int store_open_local(const char *root, struct store **out, struct zerr *err) {
  char *abs = realpath(root, NULL);
  if (!abs)
    return zerr_set(err, errno == ENOENT ? ENOENT : EIO, "%s: %s", root,
                    strerror(errno));
  int fd = open(abs, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    free(abs);
    return zerr_set(err, e == ENOTDIR ? ENOTDIR : EIO, "%s: %s", root,
                    strerror(e));
  }
  struct store_local *l = calloc(1, sizeof *l);
  char *loc = strdup(abs);
  if (!l || !loc) {
    free(l);
    free(loc);
    free(abs);
    close(fd);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  l->base.ops = &local_ops;
  l->base.location = loc;
  l->root = abs;
  l->root_fd = fd;
  *out = &l->base;
  return 0;
}
