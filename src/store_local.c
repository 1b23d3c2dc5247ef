/* store_local.c - a store backed by a local directory: key "a/c/0" is the
 * file ROOT/a/c/0. */
#include "store.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct store_local {
  struct store base;
  char *root; /* absolute, no trailing slash */
};

/* Join root and key into buf. */
static int local_path(struct store_local *l, const char *key, char *buf,
                      size_t len, struct zerr *err) {
  int n = *key ? snprintf(buf, len, "%s/%s", l->root, key)
               : snprintf(buf, len, "%s", l->root);
  if (n < 0 || (size_t)n >= len)
    return zerr_set(err, ENAMETOOLONG, "path too long");
  return 0;
}

/* Open the key's file. */
static int local_get(struct store *s, const char *key, struct bytesrc **out,
                     struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  char path[4096];
  ZTRY(local_path(l, key, path, sizeof path, err));
  return bytesrc_open_file(path, &s->stats, out, err);
}

/* stat the key's file or directory. */
static int local_stat(struct store *s, const char *key,
                      enum store_entry_type *type, uint64_t *size,
                      struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  char path[4096];
  ZTRY(local_path(l, key, path, sizeof path, err));
  struct stat st;
  if (stat(path, &st) < 0)
    return zerr_set(err, errno == ENOENT || errno == ENOTDIR ? ENOENT : EIO,
                    "%s", strerror(errno));
  if (S_ISDIR(st.st_mode))
    *type = STORE_DIR;
  else if (S_ISREG(st.st_mode))
    *type = STORE_FILE;
  else
    return zerr_set(err, ENOENT, "not a file or directory");
  *size = S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
  return 0;
}

/* Read the directory; skip anything that is not a file or directory. */
static int local_list(struct store *s, const char *prefix, store_list_cb cb,
                      void *ud, struct zerr *err) {
  struct store_local *l = (struct store_local *)s;
  char path[4096];
  ZTRY(local_path(l, prefix, path, sizeof path, err));
  DIR *d = opendir(path);
  if (!d)
    return zerr_set(err, errno == ENOENT || errno == ENOTDIR ? ENOENT : EIO,
                    "cannot list: %s", strerror(errno));
  int dfd = dirfd(d);
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
      continue;
    struct stat st;
    if (fstatat(dfd, de->d_name, &st, 0) < 0)
      continue;
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

/* Free the root string and the struct. */
static void local_destroy(struct store *s) {
  struct store_local *l = (struct store_local *)s;
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
  struct stat st;
  if (stat(abs, &st) < 0 || !S_ISDIR(st.st_mode)) {
    free(abs);
    return zerr_set(err, ENOTDIR, "%s: not a directory", root);
  }
  struct store_local *l = calloc(1, sizeof *l);
  char *loc = strdup(abs);
  if (!l || !loc) {
    free(l);
    free(loc);
    free(abs);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  l->base.ops = &local_ops;
  l->base.location = loc;
  l->root = abs;
  *out = &l->base;
  return 0;
}
