/* fdpool.c - a bounded pool of open file descriptors shared by the file
 * sources of one owner (see fdpool.h). */
#define _GNU_SOURCE /* O_PATH */
#include "fdpool.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define FDPOOL_MIN 8
#define FDPOOL_MAX 256

/* One file (dev/ino) that live sources read. All fields but pool, dev and
 * ino are guarded by pool->lock. */
struct fdpool_file {
  struct fdpool *pool; /* one reference held by the entry */
  dev_t dev;
  ino_t ino;
  int fd;                          /* -1 while closed */
  unsigned use;                    /* checkouts in flight: fd must stay open */
  unsigned long refs;              /* sources holding the entry */
  int idle;                        /* on the LRU list (fd open, use 0) */
  struct fdpool_file *hnext;       /* hash chain */
  struct fdpool_file *prev, *next; /* LRU list, oldest first */
};

struct fdpool {
  pthread_mutex_t lock; /* leaf lock: guards everything below */
  unsigned limit;       /* idle descriptors beyond this are closed */
  unsigned nopen;       /* descriptors held (idle and in use) */
  unsigned nidle;
  struct fdpool_file **buckets; /* by dev/ino */
  size_t nbuckets, nfiles;
  struct fdpool_file *oldest, *newest; /* idle descriptors */
  uint64_t reopens, closes;
  _Atomic long refs;
  fdpool_reopen_fn reopen; /* immutable after fdpool_new */
  void *ctx;
  void (*ctx_free)(void *ctx);
};

/* Is rc a full descriptor table (worth a retry after fdpool_shed)? */
static int table_full(int rc) { return rc == -EMFILE || rc == -ENFILE; }

/* A quarter of the soft descriptor limit, within [8, 256]. */
unsigned fdpool_default_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
    return FDPOOL_MAX;
  rlim_t q = rl.rlim_cur / 4;
  if (q < FDPOOL_MIN)
    return FDPOOL_MIN;
  return q > FDPOOL_MAX ? FDPOOL_MAX : (unsigned)q;
}

/* A new pool owning ctx. */
int fdpool_new(unsigned limit, fdpool_reopen_fn reopen, void *ctx,
               void (*ctx_free)(void *ctx), struct fdpool **out,
               struct zerr *err) {
  struct fdpool *p = calloc(1, sizeof *p);
  size_t nb = 64;
  struct fdpool_file **b = calloc(nb, sizeof *b);
  if (!p || !b) {
    free(p);
    free(b);
    if (ctx_free)
      ctx_free(ctx);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  pthread_mutex_init(&p->lock, NULL);
  p->limit = limit ? limit : fdpool_default_limit();
  p->buckets = b;
  p->nbuckets = nb;
  atomic_init(&p->refs, 1);
  p->reopen = reopen;
  p->ctx = ctx;
  p->ctx_free = ctx_free;
  *out = p;
  return 0;
}

/* One more reference (a file entry's); returns p. */
static struct fdpool *fdpool_ref(struct fdpool *p) {
  if (p)
    atomic_fetch_add_explicit(&p->refs, 1, memory_order_relaxed);
  return p;
}

/* The last reference: no file entry is left (each holds a reference), so
 * there is no descriptor either. */
void fdpool_unref(struct fdpool *p) {
  if (!p || atomic_fetch_sub_explicit(&p->refs, 1, memory_order_acq_rel) != 1)
    return;
  free(p->buckets);
  pthread_mutex_destroy(&p->lock);
  if (p->ctx_free)
    p->ctx_free(p->ctx);
  free(p);
}

/* Bucket of a dev/ino (a 64-bit mix: inode numbers are often sequential). */
static size_t bucket_of(const struct fdpool *p, dev_t dev, ino_t ino) {
  uint64_t h = (uint64_t)ino * 0x9e3779b97f4a7c15ull ^ (uint64_t)dev;
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 29;
  return (size_t)(h & (p->nbuckets - 1));
}

/* Double the hash table when it is fuller than one entry per bucket;
 * under the lock. On allocation failure the table just stays as it is. */
static void maybe_grow(struct fdpool *p) {
  if (p->nfiles < p->nbuckets || p->nbuckets > SIZE_MAX / 2 / sizeof(void *))
    return;
  size_t nb = p->nbuckets * 2;
  struct fdpool_file **b = calloc(nb, sizeof *b);
  if (!b)
    return;
  struct fdpool_file **old = p->buckets;
  size_t on = p->nbuckets;
  p->buckets = b;
  p->nbuckets = nb;
  for (size_t i = 0; i < on; i++)
    for (struct fdpool_file *f = old[i], *nx; f; f = nx) {
      nx = f->hnext;
      size_t k = bucket_of(p, f->dev, f->ino);
      f->hnext = b[k];
      b[k] = f;
    }
  free(old);
}

/* Take f off the idle list; under the lock. */
static void lru_unlink(struct fdpool *p, struct fdpool_file *f) {
  if (!f->idle)
    return;
  if (f->prev)
    f->prev->next = f->next;
  else
    p->oldest = f->next;
  if (f->next)
    f->next->prev = f->prev;
  else
    p->newest = f->prev;
  f->prev = f->next = NULL;
  f->idle = 0;
  p->nidle--;
}

/* Put f at the young end of the idle list; under the lock. */
static void lru_push(struct fdpool *p, struct fdpool_file *f) {
  f->prev = p->newest;
  f->next = NULL;
  if (p->newest)
    p->newest->next = f;
  else
    p->oldest = f;
  p->newest = f;
  f->idle = 1;
  p->nidle++;
}

/* Close f's idle descriptor; under the lock. close() of a regular file
 * opened read-only does not block, so it is done in place. */
static void close_idle(struct fdpool *p, struct fdpool_file *f) {
  lru_unlink(p, f);
  close(f->fd);
  f->fd = -1;
  p->nopen--;
  p->closes++;
}

/* Close the oldest idle descriptors until the pool holds at most its
 * limit (descriptors in use are never closed); under the lock. */
static void trim(struct fdpool *p) {
  while (p->nopen > p->limit && p->oldest)
    close_idle(p, p->oldest);
}

/* Mark f in use; under the lock, f->fd open. */
static void take(struct fdpool_file *f) {
  lru_unlink(f->pool, f);
  f->use++;
}

/* Find or make the entry of st's dev/ino and give it fd. */
int fdpool_adopt(struct fdpool *p, int fd, const struct stat *st,
                 struct fdpool_file **out, struct zerr *err) {
  /* Allocated before locking: most adopts are of a file not yet known. */
  struct fdpool_file *nf = calloc(1, sizeof *nf);
  int extra = -1;
  pthread_mutex_lock(&p->lock);
  size_t k = bucket_of(p, st->st_dev, st->st_ino);
  struct fdpool_file *f = p->buckets[k];
  while (f && (f->dev != st->st_dev || f->ino != st->st_ino))
    f = f->hnext;
  if (f) {
    f->refs++;
    if (f->fd < 0) { /* closed by the pool: keep the fresh descriptor */
      f->fd = fd;
      p->nopen++;
      lru_push(p, f);
    } else {
      extra = fd;
    }
  } else if (nf) {
    f = nf;
    nf = NULL;
    f->pool = fdpool_ref(p);
    f->dev = st->st_dev;
    f->ino = st->st_ino;
    f->fd = fd;
    f->refs = 1;
    f->hnext = p->buckets[k];
    p->buckets[k] = f;
    p->nfiles++;
    p->nopen++;
    lru_push(p, f);
    maybe_grow(p);
  } else {
    extra = fd;
  }
  if (f)
    trim(p);
  pthread_mutex_unlock(&p->lock);
  free(nf);
  if (extra >= 0)
    close(extra);
  if (!f)
    return zerr_set(err, ENOMEM, "out of memory");
  *out = f;
  return 0;
}

/* Drop a source's reference; the last one closes and frees the entry. */
void fdpool_release(struct fdpool_file *f) {
  if (!f)
    return;
  struct fdpool *p = f->pool;
  pthread_mutex_lock(&p->lock);
  if (--f->refs > 0) {
    pthread_mutex_unlock(&p->lock);
    return;
  }
  struct fdpool_file **pp = &p->buckets[bucket_of(p, f->dev, f->ino)];
  while (*pp != f)
    pp = &(*pp)->hnext;
  *pp = f->hnext;
  p->nfiles--;
  if (f->fd >= 0) { /* no source left, so no checkout either: idle */
    lru_unlink(p, f);
    close(f->fd);
    p->nopen--;
  }
  pthread_mutex_unlock(&p->lock);
  free(f);
  fdpool_unref(p); /* after unlocking: it may free the lock */
}

/* The entry's descriptor, reopened (and checked) when it was closed. */
int fdpool_checkout(struct fdpool_file *f, const char *name, int *fd,
                    int *reopened, struct zerr *err) {
  struct fdpool *p = f->pool;
  *reopened = 0;
  pthread_mutex_lock(&p->lock);
  if (f->fd >= 0) {
    take(f);
    *fd = f->fd;
    pthread_mutex_unlock(&p->lock);
    return 0;
  }
  pthread_mutex_unlock(&p->lock);
  /* Closed by the pool: open again, outside the lock. */
  int nfd;
  struct stat st;
  int rc = p->reopen(p->ctx, name, &nfd, &st, err);
  if (table_full(rc)) { /* transient: make room, try once more */
    fdpool_shed(p);
    rc = p->reopen(p->ctx, name, &nfd, &st, err);
  }
  if (rc < 0) {
    /* The source exists: a file gone or changed since is a data error
     * (never ENOENT, which would read as an absent key), unless the
     * failure passes (a full table, no memory). */
    if (zerr_is_transient(-rc))
      return rc;
    zerr_prefix(err, "cannot open again: ");
    if (err)
      err->code = EIO;
    return -EIO;
  }
  if (st.st_dev != f->dev || st.st_ino != f->ino) {
    close(nfd);
    return zerr_set(err, EIO, "file replaced while mounted");
  }
  *reopened = 1;
  int extra = -1;
  pthread_mutex_lock(&p->lock);
  if (f->fd >= 0) { /* another reader reopened it meanwhile */
    extra = nfd;
  } else {
    f->fd = nfd;
    p->nopen++;
    p->reopens++;
  }
  take(f);
  *fd = f->fd;
  pthread_mutex_unlock(&p->lock);
  if (extra >= 0)
    close(extra);
  return 0;
}

/* Is f's descriptor open now? Read under the lock. */
int fdpool_file_is_open(struct fdpool_file *f) {
  struct fdpool *p = f->pool;
  pthread_mutex_lock(&p->lock);
  int open_now = f->fd >= 0;
  pthread_mutex_unlock(&p->lock);
  return open_now;
}

/* One read less; an unused descriptor becomes idle, then trim. */
void fdpool_checkin(struct fdpool_file *f) {
  struct fdpool *p = f->pool;
  pthread_mutex_lock(&p->lock);
  if (--f->use == 0 && f->fd >= 0)
    lru_push(p, f);
  trim(p);
  pthread_mutex_unlock(&p->lock);
}

/* Close every idle descriptor. */
unsigned fdpool_shed(struct fdpool *p) {
  unsigned n = 0;
  pthread_mutex_lock(&p->lock);
  while (p->oldest) {
    close_idle(p, p->oldest);
    n++;
  }
  pthread_mutex_unlock(&p->lock);
  return n;
}

/* Counters, read under the lock. */
void fdpool_get_stats(struct fdpool *p, struct fdpool_stats *out) {
  pthread_mutex_lock(&p->lock);
  out->limit = p->limit;
  out->open = p->nopen;
  out->idle = p->nidle;
  out->files = p->nfiles;
  out->reopens = p->reopens;
  out->closes = p->closes;
  pthread_mutex_unlock(&p->lock);
}

/* ---- opening without blocking ---- */

/* Name of a file type for messages. */
const char *fdpool_type_name(mode_t mode) {
  switch (mode & S_IFMT) {
  case S_IFIFO:
    return "FIFO";
  case S_IFSOCK:
    return "socket";
  case S_IFCHR:
    return "character device";
  case S_IFBLK:
    return "block device";
  case S_IFDIR:
    return "directory";
  case S_IFLNK:
    return "symbolic link";
  case S_IFREG:
    return "regular file";
  default:
    return "unknown file type";
  }
}

/* A failed system call as a result: transient codes kept, the rest EIO. */
static int sys_fail(struct zerr *err, int e, const char *what) {
  return zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s: %s", what,
                  strerror(e));
}

/* Check pfd is a regular file, then reopen that inode for reading. */
int fdpool_open_checked(int pfd, int (*fallback)(void *fctx, int *fd),
                        void *fctx, int *fd, struct stat *st,
                        struct zerr *err) {
  struct stat pst;
  if (fstat(pfd, &pst) < 0)
    return sys_fail(err, errno, "cannot stat");
  if (!S_ISREG(pst.st_mode))
    return zerr_set(err, EIO, "not a regular file (%s)",
                    fdpool_type_name(pst.st_mode));
  /* The magic link names the inode pfd holds, not a path that could have
   * been swapped since: this opens exactly what was checked. */
  char link[64];
  snprintf(link, sizeof link, "/proc/self/fd/%d", pfd);
  int nfd = open(link, O_RDONLY | O_CLOEXEC | O_NOCTTY);
  if (nfd < 0 && errno == ENOENT) {
    /* No /proc: open the name again, non-blocking so that a FIFO swapped
     * in meanwhile cannot hang us, and check below that it is the same
     * regular file. */
    int rc = fallback ? fallback(fctx, &nfd) : -ENOENT;
    if (rc < 0)
      return rc == -ENOENT ? zerr_set(err, ENOENT, "vanished while opening")
                           : sys_fail(err, -rc, "cannot open");
  } else if (nfd < 0) {
    return sys_fail(err, errno, "cannot open");
  }
  if (fstat(nfd, st) < 0) {
    int e = errno;
    close(nfd);
    return sys_fail(err, e, "cannot stat");
  }
  if (!S_ISREG(st->st_mode) || st->st_dev != pst.st_dev ||
      st->st_ino != pst.st_ino) {
    close(nfd);
    return zerr_set(err, EIO, "file replaced while opening");
  }
  *fd = nfd;
  return 0;
}
