/* fuse_ops.c - FUSE operations over the namespace and the engine.
 * Read-only: everything that would change the store fails with EROFS. */
#include "fuse_ops.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../src/log.h"
#include "engine.h"
#include "namespace.h"
#include "view.h"

/* An open file: its entry, and for raw files the open byte source, for
 * views the reader's cursor (what it read last stays decoded). */
struct zfs_file {
  struct ns_entry ent;
  struct bytesrc *raw;     /* owned reference; NULL for views */
  struct view_cursor *cur; /* owned; views only (may be NULL) */
};

/* The mount context. */
static struct zfs_fuse_ctx *ctx(void) {
  return fuse_get_context()->private_data;
}

/* The one place where internal errors become FUSE errors. Data problems of
 * every kind (corrupt, unsupported, too large) are EIO to the reader;
 * running out of descriptors is ENFILE (the daemon's table, not the
 * reader's), a shutdown in progress EINTR. */
int zfs_errno(int rc) {
  switch (rc) {
  case -ENOENT:
  case -ENOTDIR:
  case -ENOMEM:
  case -EROFS:
  case -EACCES:
  case -ENAMETOOLONG:
  case -EINTR:
  case -ENFILE:
    return rc;
  case -EMFILE:
    return -ENFILE;
  case -EINVAL:
    return -ENOENT; /* an invalid key names nothing */
  default:
    return -EIO;
  }
}

/* Set up kernel caching: the store is immutable while mounted. */
static void *zfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  (void)conn;
  struct zfs_fuse_ctx *c = fuse_get_context()->private_data;
  cfg->kernel_cache = 1;
  cfg->attr_timeout = c->cfg.attr_timeout;
  cfg->entry_timeout = c->cfg.attr_timeout;
  cfg->negative_timeout = c->cfg.attr_timeout;
  cfg->nullpath_ok = 0;
  cfg->use_ino = 0;
  return c;
}

/* Fill a stat for an entry. */
static void fill_stat(const struct ns_entry *ent, uint64_t size,
                      struct stat *st) {
  memset(st, 0, sizeof *st);
  if (ent->kind == NS_DIR) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = (off_t)size;
    st->st_blocks = (blkcnt_t)((size + 511) / 512);
  }
  st->st_blksize = 128 * 1024;
  st->st_uid = getuid();
  st->st_gid = getgid();
  st->st_atime = st->st_mtime = st->st_ctime = ctx()->mount_time;
}

/* Log a failure the engine did not already report (through the engine's
 * log, so a repeated failure is one line). */
static void log_fs_error(const char *path, const struct zerr *err) {
  if (err->code != EINTR)
    engine_log(ctx()->engine, *path == '/' ? path + 1 : path, err->msg);
}

/* stat: resolve, then size. */
static int zfs_getattr(const char *path, struct stat *st,
                       struct fuse_file_info *fi) {
  (void)fi;
  struct engine *e = ctx()->engine;
  struct ns_entry *ent = malloc(sizeof *ent);
  if (!ent)
    return -ENOMEM;
  struct zerr err = {0};
  int rc = ns_resolve(e, path, ent, &err);
  /* "No such file" is an answer; a failure to find out (a server failing)
   * is said in the log (sizes log their failures where they decode). */
  if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR && rc != -ENAMETOOLONG)
    log_fs_error(path, &err);
  uint64_t size = 0;
  if (rc == 0)
    rc = ns_size(e, ent, &size, &err);
  if (rc == 0)
    fill_stat(ent, size, st);
  free(ent);
  return rc < 0 ? zfs_errno(rc) : 0;
}

/* Directory listing context for the fill callback. */
struct fill_ctx {
  void *buf;
  fuse_fill_dir_t filler;
};

/* Pass one name to FUSE. */
static int fill_one(void *ud, const char *name, int is_dir) {
  struct fill_ctx *f = ud;
  struct stat st;
  memset(&st, 0, sizeof st);
  st.st_mode = is_dir ? S_IFDIR | 0555 : S_IFREG | 0444;
  return f->filler(f->buf, name, &st, 0, 0);
}

/* readdir: no sizes here, so listings never decode anything. */
static int zfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
                       off_t offset, struct fuse_file_info *fi,
                       enum fuse_readdir_flags flags) {
  (void)offset;
  (void)fi;
  (void)flags;
  filler(buf, ".", NULL, 0, 0);
  filler(buf, "..", NULL, 0, 0);
  struct fill_ctx f = {buf, filler};
  struct zerr err = {0};
  int rc = ns_list(ctx()->engine, path, fill_one, &f, &err);
  if (rc < 0 && rc != -ENOENT)
    log_fs_error(path, &err);
  return rc < 0 ? zfs_errno(rc) : 0;
}

/* open: read-only; raw files keep their byte source open. */
static int zfs_open(const char *path, struct fuse_file_info *fi) {
  if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC))
    return -EROFS;
  struct engine *e = ctx()->engine;
  struct zfs_file *f = calloc(1, sizeof *f);
  if (!f)
    return -ENOMEM;
  struct zerr err = {0};
  int rc = ns_resolve(e, path, &f->ent, &err);
  if (rc == 0 && f->ent.kind == NS_DIR)
    rc = -EISDIR;
  if (rc == 0 && f->ent.kind == NS_RAW) {
    rc = store_get(e->store, f->ent.key, &f->raw, &err);
    if (rc < 0 && rc != -ENOENT)
      log_fs_error(path, &err);
  }
  if (rc == 0 && f->ent.kind != NS_RAW)
    f->cur = view_cursor_new(); /* NULL only costs re-decoding */
  if (rc < 0) {
    free(f);
    return rc == -EISDIR ? rc : zfs_errno(rc);
  }
  fi->fh = (uint64_t)(uintptr_t)f;
  if (f->ent.kind != NS_RAW && e->lazy_sizes) {
    /* Lazy sizes: stat may have said 0 (and the kernel may still hold
     * that), so every read comes to us and ends where the text does. */
    fi->direct_io = 1;
    return 0;
  }
  fi->keep_cache = 1; /* immutable: page cache stays valid across opens */
  return 0;
}

/* read: raw bytes or rendered text. */
static int zfs_read(const char *path, char *buf, size_t size, off_t off,
                    struct fuse_file_info *fi) {
  struct zfs_file *f = (struct zfs_file *)(uintptr_t)fi->fh;
  struct zerr err = {0};
  if (off < 0)
    return -EINVAL;
  if (f->raw) {
    uint64_t total = f->raw->size;
    if ((uint64_t)off >= total)
      return 0;
    if (size > total - (uint64_t)off)
      size = (size_t)(total - (uint64_t)off);
    int rc = bytesrc_read_range(f->raw, (uint64_t)off, size, buf, &err);
    if (rc < 0) {
      log_fs_error(path, &err);
      return zfs_errno(rc);
    }
    return (int)size;
  }
  long n = ns_read_view(ctx()->engine, &f->ent, (uint64_t)off, size, buf,
                        f->cur, &err);
  return n < 0 ? zfs_errno((int)n) : (int)n;
}

/* Close: drop what open took. */
static int zfs_release(const char *path, struct fuse_file_info *fi) {
  (void)path;
  struct zfs_file *f = (struct zfs_file *)(uintptr_t)fi->fh;
  if (f) {
    bytesrc_unref(f->raw);
    view_cursor_free(ctx()->engine, f->cur);
    free(f);
  }
  return 0;
}

/* Read-only file system statistics. */
static int zfs_statfs(const char *path, struct statvfs *st) {
  (void)path;
  memset(st, 0, sizeof *st);
  st->f_bsize = 4096;
  st->f_frsize = 4096;
  st->f_namemax = 255;
  st->f_flag = ST_RDONLY;
  return 0;
}

/* Writes of any kind. */
static int zfs_access(const char *path, int mask) {
  if (mask & W_OK)
    return -EROFS;
  struct ns_entry *ent = malloc(sizeof *ent);
  if (!ent)
    return -ENOMEM;
  int rc = ns_resolve(ctx()->engine, path, ent, NULL);
  free(ent);
  return rc < 0 ? zfs_errno(rc) : 0;
}

static int ro_mknod(const char *p, mode_t m, dev_t d) {
  (void)p, (void)m, (void)d;
  return -EROFS;
}
static int ro_mkdir(const char *p, mode_t m) {
  (void)p, (void)m;
  return -EROFS;
}
static int ro_unlink(const char *p) {
  (void)p;
  return -EROFS;
}
static int ro_symlink(const char *a, const char *b) {
  (void)a, (void)b;
  return -EROFS;
}
static int ro_rename(const char *a, const char *b, unsigned int fl) {
  (void)a, (void)b, (void)fl;
  return -EROFS;
}
static int ro_chmod(const char *p, mode_t m, struct fuse_file_info *fi) {
  (void)p, (void)m, (void)fi;
  return -EROFS;
}
static int ro_chown(const char *p, uid_t u, gid_t g,
                    struct fuse_file_info *fi) {
  (void)p, (void)u, (void)g, (void)fi;
  return -EROFS;
}
static int ro_truncate(const char *p, off_t o, struct fuse_file_info *fi) {
  (void)p, (void)o, (void)fi;
  return -EROFS;
}
static int ro_write(const char *p, const char *b, size_t s, off_t o,
                    struct fuse_file_info *fi) {
  (void)p, (void)b, (void)s, (void)o, (void)fi;
  return -EROFS;
}
static int ro_create(const char *p, mode_t m, struct fuse_file_info *fi) {
  (void)p, (void)m, (void)fi;
  return -EROFS;
}
static int ro_utimens(const char *p, const struct timespec tv[2],
                      struct fuse_file_info *fi) {
  (void)p, (void)tv, (void)fi;
  return -EROFS;
}
static int ro_setxattr(const char *p, const char *n, const char *v, size_t s,
                       int f) {
  (void)p, (void)n, (void)v, (void)s, (void)f;
  return -EROFS;
}
static int ro_removexattr(const char *p, const char *n) {
  (void)p, (void)n;
  return -EROFS;
}
static int ro_link(const char *a, const char *b) {
  (void)a, (void)b;
  return -EROFS;
}

static const struct fuse_operations zfs_ops = {
    .init = zfs_init,
    .getattr = zfs_getattr,
    .readdir = zfs_readdir,
    .open = zfs_open,
    .read = zfs_read,
    .release = zfs_release,
    .statfs = zfs_statfs,
    .access = zfs_access,
    .mknod = ro_mknod,
    .mkdir = ro_mkdir,
    .unlink = ro_unlink,
    .rmdir = ro_unlink,
    .symlink = ro_symlink,
    .rename = ro_rename,
    .link = ro_link,
    .chmod = ro_chmod,
    .chown = ro_chown,
    .truncate = ro_truncate,
    .write = ro_write,
    .create = ro_create,
    .utimens = ro_utimens,
    .setxattr = ro_setxattr,
    .removexattr = ro_removexattr,
};

/* The table. */
const struct fuse_operations *zfs_operations(void) { return &zfs_ops; }
