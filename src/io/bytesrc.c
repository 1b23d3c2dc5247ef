/* bytesrc.c - file, pooled file, memory and window byte sources (see
 * bytesrc.h). */
#define _GNU_SOURCE /* O_PATH */
#include "bytesrc.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../util/htab.h"
#include "fdpool.h"

/* See bytesrc.h. */
uint64_t bytesrc_version_of_stat(const struct stat *st) {
  uint64_t f[7] = {(uint64_t)st->st_dev,          (uint64_t)st->st_ino,
                   (uint64_t)st->st_size,         (uint64_t)st->st_mtim.tv_sec,
                   (uint64_t)st->st_mtim.tv_nsec, (uint64_t)st->st_ctim.tv_sec,
                   (uint64_t)st->st_ctim.tv_nsec};
  uint64_t h = htab_hash_bytes(f, sizeof f, 0x6c78766572ull);
  return h ? h : 1;
}

/* See bytesrc.h. */
uint64_t bytesrc_version_sub(uint64_t parent, uint64_t off, uint64_t len) {
  if (!parent)
    return 0;
  uint64_t f[3] = {parent, off, len};
  uint64_t h = htab_hash_bytes(f, sizeof f, 0x6c78737562ull);
  return h ? h : 1;
}

/* Bounds-checked read through the ops table. */
int bytesrc_read_range(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                       struct zerr *err) {
  if (off > s->size || len > s->size - off)
    return zerr_set(err, EIO,
                    "read of %zu bytes at offset %llu runs past the end (%llu "
                    "bytes)",
                    len, (unsigned long long)off, (unsigned long long)s->size);
  if (len == 0)
    return 0;
  if (s->mem) {
    memcpy(dst, s->mem + off, len);
    return 0;
  }
  return s->ops->read(s, off, len, dst, err);
}

/* New reference. */
struct bytesrc *bytesrc_ref(struct bytesrc *s) {
  if (s)
    atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
  return s;
}

/* Drop a reference, destroying on the last one. */
void bytesrc_unref(struct bytesrc *s) {
  if (!s)
    return;
  if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1)
    s->ops->destroy(s);
}

/* ---- local files ---- */

/* A failed system call as a result: transient codes kept, the rest EIO. */
static int sys_fail(struct zerr *err, int e, const char *what) {
  return zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s: %s", what,
                  strerror(e));
}

/* pread until len bytes arrived; a short file is an error. */
static int pread_all(int fd, uint64_t off, size_t len, void *dst,
                     struct io_stats *stats, struct zerr *err) {
  uint8_t *p = dst;
  while (len) {
    ssize_t n = pread(fd, p, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return sys_fail(err, errno, "read failed");
    }
    if (n == 0)
      return zerr_set(err, EIO, "file shrank while mounted");
    if (stats) {
      atomic_fetch_add_explicit(&stats->bytes_read, (uint64_t)n,
                                memory_order_relaxed);
      atomic_fetch_add_explicit(&stats->reads, 1, memory_order_relaxed);
    }
    p += n;
    off += (uint64_t)n;
    len -= (size_t)n;
  }
  return 0;
}

/* One more real open() in stats (may be NULL). */
static void count_open(struct io_stats *stats) {
  if (stats)
    atomic_fetch_add_explicit(&stats->opens, 1, memory_order_relaxed);
}

struct file_src {
  struct bytesrc base;
  int fd;
  struct io_stats *stats;
};

/* Read through the owned descriptor. */
static int file_read(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                     struct zerr *err) {
  struct file_src *f = (struct file_src *)s;
  return pread_all(f->fd, off, len, dst, f->stats, err);
}

/* Close the descriptor. */
static void file_destroy(struct bytesrc *s) {
  struct file_src *f = (struct file_src *)s;
  close(f->fd);
  free(f);
}

static const struct bytesrc_ops file_ops = {file_read, file_destroy};

/* Adopt fd, an open descriptor of a regular file (closed with the source,
 * or at once on failure), and remember its size. */
static int bytesrc_from_fd(int fd, struct io_stats *stats, struct bytesrc **out,
                           struct zerr *err) {
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    return sys_fail(err, e, "cannot stat");
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return zerr_set(err, EIO, "not a regular file (%s)",
                    fdpool_type_name(st.st_mode));
  }
  struct file_src *f = calloc(1, sizeof *f);
  if (!f) {
    close(fd);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  f->base.ops = &file_ops;
  f->base.size = (uint64_t)st.st_size;
  f->base.version = bytesrc_version_of_stat(&st);
  atomic_init(&f->base.refs, 1);
  f->fd = fd;
  f->stats = stats;
  count_open(stats);
  *out = &f->base;
  return 0;
}

/* Reopen a path by name without blocking (no /proc: see
 * fdpool_open_checked). */
static int reopen_path_nonblock(void *path, int *fd) {
  *fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  return *fd < 0 ? -errno : 0;
}

/* Open path read-only: O_PATH first, so a FIFO never blocks us. */
int bytesrc_open_file(const char *path, struct io_stats *stats,
                      struct bytesrc **out, struct zerr *err) {
  int pfd = open(path, O_PATH | O_CLOEXEC);
  if (pfd < 0) {
    int e = errno;
    return e == ENOENT || e == ENOTDIR
               ? zerr_set(err, ENOENT, "cannot open: %s", strerror(e))
               : sys_fail(err, e, "cannot open");
  }
  int fd;
  struct stat st;
  int rc = fdpool_open_checked(pfd, reopen_path_nonblock, (void *)path, &fd,
                               &st, err);
  close(pfd);
  if (rc < 0)
    return rc;
  return bytesrc_from_fd(fd, stats, out, err);
}

/* ---- pooled files ---- */

struct pool_src {
  struct bytesrc base;
  struct fdpool_file *file; /* one reference */
  struct io_stats *stats;
  struct timespec mtime; /* the version read: size (base.size) and mtime */
  char name[]; /* for the pool's reopen callback */
};

/* Borrow a descriptor for this one read. */
static int pool_read(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                     struct zerr *err) {
  struct pool_src *ps = (struct pool_src *)s;
  int fd, reopened;
  ZTRY(fdpool_checkout(ps->file, ps->name, &fd, &reopened, err));
  if (reopened)
    count_open(ps->stats);
  int rc = pread_all(fd, off, len, dst, ps->stats, err);
  /* A file rewritten in place (same inode) since the source was made:
   * these bytes may be of the new version, what was decoded before of the
   * old one; fail rather than splice them. Checked after the read, so a
   * write during it is caught too. */
  struct stat now;
  if (rc == 0 && fstat(fd, &now) == 0 &&
      ((uint64_t)now.st_size != ps->base.size ||
       now.st_mtim.tv_sec != ps->mtime.tv_sec ||
       now.st_mtim.tv_nsec != ps->mtime.tv_nsec))
    rc = zerr_set(err, EIO,
                  "file changed while mounted (size or modification time); "
                  "remount to read the new version");
  fdpool_checkin(ps->file);
  return rc;
}

/* Give the file entry back to the pool. */
static void pool_destroy(struct bytesrc *s) {
  struct pool_src *ps = (struct pool_src *)s;
  fdpool_release(ps->file);
  free(ps);
}

static const struct bytesrc_ops pool_ops = {pool_read, pool_destroy};

/* A source reading through pool. */
int bytesrc_from_pool(struct fdpool *pool, int fd, const struct stat *st,
                      const char *name, struct io_stats *stats,
                      struct bytesrc **out, struct zerr *err) {
  size_t nl = strlen(name) + 1, sz;
  if (__builtin_add_overflow(sizeof(struct pool_src), nl, &sz)) {
    close(fd);
    return zerr_set(err, ENAMETOOLONG, "name too long");
  }
  struct pool_src *ps = calloc(1, sz);
  if (!ps) {
    close(fd);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  count_open(stats);
  int rc = fdpool_adopt(pool, fd, st, &ps->file, err);
  if (rc < 0) {
    free(ps);
    return rc;
  }
  memcpy(ps->name, name, nl);
  ps->base.ops = &pool_ops;
  ps->base.size = (uint64_t)st->st_size;
  ps->base.version = bytesrc_version_of_stat(st);
  ps->mtime = st->st_mtim;
  atomic_init(&ps->base.refs, 1);
  ps->stats = stats;
  *out = &ps->base;
  return 0;
}

/* Only pool sources have a pool descriptor. */
int bytesrc_pool_is_open(const struct bytesrc *s) {
  if (!s || s->ops != &pool_ops)
    return 0;
  return fdpool_file_is_open(((const struct pool_src *)s)->file);
}

/* ---- memory ---- */

struct mem_src {
  struct bytesrc base;
  void *owned; /* freed on destroy; NULL for static memory */
};

/* Memory sources are served by bytesrc_read_range directly. */
static int mem_read(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                    struct zerr *err) {
  (void)err;
  memcpy(dst, s->mem + off, len);
  return 0;
}

/* Free owned memory. */
static void mem_destroy(struct bytesrc *s) {
  struct mem_src *m = (struct mem_src *)s;
  free(m->owned);
  free(m);
}

static const struct bytesrc_ops mem_ops = {mem_read, mem_destroy};

static const uint8_t empty_mem[1];

/* Build a memory source, owned or borrowed. */
static struct bytesrc *mem_new(const void *data, void *owned, size_t len) {
  struct mem_src *m = calloc(1, sizeof *m);
  if (!m) {
    free(owned);
    return NULL;
  }
  m->base.ops = &mem_ops;
  m->base.size = len;
  m->base.mem = data ? data : empty_mem;
  atomic_init(&m->base.refs, 1);
  m->owned = owned;
  return &m->base;
}

/* Take ownership of malloc'd memory. */
struct bytesrc *bytesrc_from_mem(void *data, size_t len) {
  return mem_new(data, data, len);
}

/* Steal an owned buffer from its only holder. */
void *bytesrc_take_mem(struct bytesrc *s, size_t *len) {
  if (!s || s->ops != &mem_ops ||
      atomic_load_explicit(&s->refs, memory_order_acquire) != 1)
    return NULL;
  struct mem_src *m = (struct mem_src *)s;
  void *p = m->owned;
  if (!p)
    return NULL;
  *len = (size_t)s->size;
  m->owned = NULL;
  s->mem = empty_mem;
  s->size = 0;
  return p;
}

/* Borrow memory that outlives the source. */
struct bytesrc *bytesrc_from_static(const void *data, size_t len) {
  return mem_new(data, NULL, len);
}

/* ---- windows ---- */

struct sub_src {
  struct bytesrc base;
  struct bytesrc *parent;
  uint64_t off;
};

/* Shift into the parent. */
static int sub_read(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                    struct zerr *err) {
  struct sub_src *w = (struct sub_src *)s;
  return bytesrc_read_range(w->parent, w->off + off, len, dst, err);
}

/* Drop the parent. */
static void sub_destroy(struct bytesrc *s) {
  struct sub_src *w = (struct sub_src *)s;
  bytesrc_unref(w->parent);
  free(w);
}

static const struct bytesrc_ops sub_ops = {sub_read, sub_destroy};

/* Window onto parent. */
int bytesrc_sub(struct bytesrc *parent, uint64_t off, uint64_t len,
                struct bytesrc **out, struct zerr *err) {
  if (off > parent->size || len > parent->size - off)
    return zerr_set(err, EIO, "range %llu+%llu lies outside a %llu-byte object",
                    (unsigned long long)off, (unsigned long long)len,
                    (unsigned long long)parent->size);
  struct sub_src *w = calloc(1, sizeof *w);
  if (!w)
    return zerr_set(err, ENOMEM, "out of memory");
  w->base.ops = &sub_ops;
  w->base.size = len;
  w->base.version = bytesrc_version_sub(parent->version, off, len);
  w->base.mem = parent->mem ? parent->mem + off : NULL;
  atomic_init(&w->base.refs, 1);
  w->parent = bytesrc_ref(parent);
  w->off = off;
  *out = &w->base;
  return 0;
}

/* Bring a whole source into memory. */
int bytesrc_load(struct bytesrc *s, size_t max, struct bytesrc **out,
                 struct zerr *err) {
  if (s->mem) {
    *out = bytesrc_ref(s);
    return 0;
  }
  if (s->size > max)
    return zerr_set(err, EFBIG,
                    "object of %llu bytes exceeds the decode limit of %zu",
                    (unsigned long long)s->size, max);
  size_t n = (size_t)s->size;
  uint8_t *p = malloc(n ? n : 1);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory loading %zu bytes", n);
  int rc = bytesrc_read_range(s, 0, n, p, err);
  if (rc < 0) {
    free(p);
    return rc;
  }
  struct bytesrc *m = bytesrc_from_mem(p, n);
  if (!m)
    return zerr_set(err, ENOMEM, "out of memory");
  *out = m;
  return 0;
}
