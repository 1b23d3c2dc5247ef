/* memfs.c - bench/memfs: "the FUSE limit" of bench/perf.sh.
 *
 * A minimal libfuse3 high-level filesystem that serves one file, read
 * whole into memory before mounting, as /values.txt. Reading it costs the
 * kernel's FUSE round trips and copies and nothing else, so `cat` of it is
 * the floor that any zarrfs view of the same bytes can only approach.
 *
 * It takes the FUSE settings zarrfs takes (fs/main.c, fs/fuse_ops.c):
 * read-only mount, kernel_cache, keep_cache on open, an hour of attribute
 * and entry timeouts, the multi-threaded loop with at most 16 threads, and
 * libfuse's defaults for everything else (max_read, max_pages, splice).
 * When zarrfs changes one of these, change it here too, or the limit is
 * no longer the limit of the same machinery.
 *
 *   memfs [-f] [-s] [-o FUSE-OPTIONS] FILE MOUNTPOINT
 *
 * A failure prints one line and exits 1. */
#define FUSE_USE_VERSION 312
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The one file's name inside the mount. */
#define MEMFS_NAME "values.txt"

/* The served bytes: loaded before the mount, read-only after. */
struct memfs {
  char *data;  /* owned; size bytes */
  size_t size;
  time_t mtime;
};

/* The filesystem's state, from the FUSE context. */
static const struct memfs *memfs_ctx(void) {
  return fuse_get_context()->private_data;
}

/* Load path whole into m; -1 (and a message) on failure. */
static int memfs_load(struct memfs *m, const char *path) {
  int fd = open(path, O_RDONLY);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) < 0) {
    fprintf(stderr, "memfs: %s: %s\n", path, strerror(errno));
    if (fd >= 0)
      close(fd);
    return -1;
  }
  m->size = (size_t)st.st_size;
  m->data = malloc(m->size ? m->size : 1);
  if (!m->data) {
    fprintf(stderr, "memfs: %s: out of memory (%zu bytes)\n", path, m->size);
    close(fd);
    return -1;
  }
  for (size_t done = 0; done < m->size;) {
    ssize_t n = read(fd, m->data + done, m->size - done);
    if (n <= 0) {
      fprintf(stderr, "memfs: %s: %s\n", path,
              n < 0 ? strerror(errno) : "shorter than its size");
      close(fd);
      return -1;
    }
    done += (size_t)n;
  }
  close(fd);
  m->mtime = time(NULL);
  return 0;
}

/* Kernel caching as zarrfs sets it: the content never changes. */
static void *memfs_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
  (void)conn;
  cfg->kernel_cache = 1;
  cfg->attr_timeout = 3600;
  cfg->entry_timeout = 3600;
  cfg->negative_timeout = 3600;
  return fuse_get_context()->private_data;
}

/* stat: the root directory and the one file. */
static int memfs_getattr(const char *path, struct stat *st,
                         struct fuse_file_info *fi) {
  (void)fi;
  const struct memfs *m = memfs_ctx();
  memset(st, 0, sizeof *st);
  if (!strcmp(path, "/")) {
    st->st_mode = S_IFDIR | 0555;
    st->st_nlink = 2;
  } else if (!strcmp(path, "/" MEMFS_NAME)) {
    st->st_mode = S_IFREG | 0444;
    st->st_nlink = 1;
    st->st_size = (off_t)m->size;
    st->st_blocks = (blkcnt_t)((m->size + 511) / 512);
  } else {
    return -ENOENT;
  }
  st->st_blksize = 128 * 1024; /* as zarrfs says */
  st->st_uid = getuid();
  st->st_gid = getgid();
  st->st_atime = st->st_mtime = st->st_ctime = m->mtime;
  return 0;
}

/* readdir: the one name. */
static int memfs_readdir(const char *path, void *buf, fuse_fill_dir_t filler,
                         off_t off, struct fuse_file_info *fi,
                         enum fuse_readdir_flags flags) {
  (void)off, (void)fi, (void)flags;
  if (strcmp(path, "/"))
    return -ENOENT;
  filler(buf, ".", NULL, 0, 0);
  filler(buf, "..", NULL, 0, 0);
  filler(buf, MEMFS_NAME, NULL, 0, 0);
  return 0;
}

/* open: read-only; the page cache stays valid across opens. */
static int memfs_open(const char *path, struct fuse_file_info *fi) {
  if (strcmp(path, "/" MEMFS_NAME))
    return -ENOENT;
  if ((fi->flags & O_ACCMODE) != O_RDONLY)
    return -EROFS;
  fi->keep_cache = 1;
  return 0;
}

/* read: a copy out of memory. */
static int memfs_read(const char *path, char *buf, size_t size, off_t off,
                      struct fuse_file_info *fi) {
  (void)path, (void)fi;
  const struct memfs *m = memfs_ctx();
  if (off < 0)
    return -EINVAL;
  if ((size_t)off >= m->size)
    return 0;
  if (size > m->size - (size_t)off)
    size = m->size - (size_t)off;
  memcpy(buf, m->data + off, size);
  return (int)size;
}

static const struct fuse_operations memfs_ops = {
    .init = memfs_init,
    .getattr = memfs_getattr,
    .readdir = memfs_readdir,
    .open = memfs_open,
    .read = memfs_read,
};

/* The first non-option is FILE; the rest goes to libfuse. */
static int memfs_opt_proc(void *data, const char *arg, int key,
                          struct fuse_args *outargs) {
  (void)outargs;
  const char **file = data;
  if (key == FUSE_OPT_KEY_NONOPT && !*file) {
    *file = arg;
    return 0;
  }
  return 1;
}

/* Parse, load, mount, serve. */
int main(int argc, char **argv) {
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  struct fuse_cmdline_opts opts = {0};
  struct memfs m = {0};
  const char *file = NULL;
  struct fuse *fuse = NULL;
  int status = 1;

  if (fuse_opt_parse(&args, &file, NULL, memfs_opt_proc) < 0 ||
      fuse_parse_cmdline(&args, &opts) != 0)
    goto out;
  if (!file || !opts.mountpoint || opts.show_help) {
    fprintf(stderr, "usage: memfs [-f] [-s] [-o FUSE-OPTIONS] FILE MOUNTPOINT\n");
    goto out;
  }
  if (memfs_load(&m, file) < 0)
    goto out;
  fuse_opt_add_arg(&args, "-oro,subtype=memfs,fsname=memfs");
  fuse = fuse_new(&args, &memfs_ops, sizeof memfs_ops, &m);
  if (!fuse || fuse_mount(fuse, opts.mountpoint) != 0)
    goto out;
  if (fuse_daemonize(opts.foreground) != 0 ||
      fuse_set_signal_handlers(fuse_get_session(fuse)) != 0) {
    fuse_unmount(fuse);
    goto out;
  }
  int rc;
  if (opts.singlethread) {
    rc = fuse_loop(fuse);
  } else {
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(lc, opts.clone_fd);
    fuse_loop_cfg_set_max_threads(lc, opts.max_threads ? opts.max_threads : 16);
    if (opts.max_idle_threads != UINT_MAX)
      fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
    rc = fuse_loop_mt(fuse, lc);
    fuse_loop_cfg_destroy(lc);
  }
  fuse_remove_signal_handlers(fuse_get_session(fuse));
  fuse_unmount(fuse);
  status = rc == 0 || rc == -EINTR ? 0 : 1;
out:
  if (fuse)
    fuse_destroy(fuse);
  fuse_opt_free_args(&args);
  free(opts.mountpoint);
  free(m.data);
  return status;
}
