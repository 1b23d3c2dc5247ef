/* bytesrc.c - file, memory and window byte sources (see bytesrc.h). */
#include "bytesrc.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

struct file_src {
  struct bytesrc base;
  int fd;
  struct io_stats *stats;
};

/* pread until len bytes arrived; a short file is an error. */
static int file_read(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                     struct zerr *err) {
  struct file_src *f = (struct file_src *)s;
  uint8_t *p = dst;
  while (len) {
    ssize_t n = pread(f->fd, p, len, (off_t)off);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return zerr_set(err, EIO, "read failed: %s", strerror(errno));
    }
    if (n == 0)
      return zerr_set(err, EIO, "file shrank while mounted");
    if (f->stats) {
      atomic_fetch_add_explicit(&f->stats->bytes_read, (uint64_t)n,
                                memory_order_relaxed);
      atomic_fetch_add_explicit(&f->stats->reads, 1, memory_order_relaxed);
    }
    p += n;
    off += (uint64_t)n;
    len -= (size_t)n;
  }
  return 0;
}

/* Close the descriptor. */
static void file_destroy(struct bytesrc *s) {
  struct file_src *f = (struct file_src *)s;
  close(f->fd);
  free(f);
}

static const struct bytesrc_ops file_ops = {file_read, file_destroy};

/* Adopt fd and remember its size. */
int bytesrc_from_fd(int fd, struct io_stats *stats, struct bytesrc **out,
                    struct zerr *err) {
  struct stat st;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return zerr_set(err, EIO, "not a regular file");
  }
  struct file_src *f = calloc(1, sizeof *f);
  if (!f) {
    close(fd);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  f->base.ops = &file_ops;
  f->base.size = (uint64_t)st.st_size;
  atomic_init(&f->base.refs, 1);
  f->fd = fd;
  f->stats = stats;
  if (stats)
    atomic_fetch_add_explicit(&stats->opens, 1, memory_order_relaxed);
  *out = &f->base;
  return 0;
}

/* Open path read-only. */
int bytesrc_open_file(const char *path, struct io_stats *stats,
                      struct bytesrc **out, struct zerr *err) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return zerr_set(err, e == ENOENT ? ENOENT : EIO, "cannot open: %s",
                    strerror(e));
  }
  return bytesrc_from_fd(fd, stats, out, err);
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
