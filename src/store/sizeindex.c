/* sizeindex.c - the persistent size index: records appended to one file
 * per store location, each checked by its CRC, read into a hash table
 * (see sizeindex.h). */
#define _GNU_SOURCE /* memmem, asprintf */
#include "sizeindex.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "../util/htab.h"
#include "../util/log.h"
#include "sizeindex_int.h"

/* Record format: magic, total length, CRC-32 of what follows the CRC,
 * text size, lines, then the identity: rules, location length, key
 * length, object size, version, chain hash, location, key. Host byte
 * order. Format 2 (the version in place of format 1's mtime): a record
 * of another format never passes the magic, and the files of format 1
 * (lx-*.idx) are removed when an index opens. */
static const char lx_magic[4] = {'L', 'X', 'r', '2'};
#define LX_PREFIX "lx2-"    /* this format's files */
#define LX_OLD_PREFIX "lx-" /* format 1's */
#define LX_HEAD 12
#define LX_VALS 16
#define LX_IDFIX 32
#define LX_MIN (LX_HEAD + LX_VALS + LX_IDFIX)
#define LX_MAX (LX_MIN + 2 * 65535)

/* Records learned are kept in memory and appended together, at most this
 * many bytes at once (and a quarter of the cap): a mount learning a
 * million small units writes a few thousand times, not a million. Those
 * not written yet when the daemon dies are learned again next time. */
#define LX_PEND_MAX (64u << 10)

/* A look-up that misses reads what other mounts appended at most this
 * often (ns): a miss is one fstat, not a system call a unit learned. */
#define LX_RELOAD_NS 50000000ull

/* A known record: its identity bytes (as on disk) and values. */
struct lx_ent {
  struct htab_node hn; /* hash of location and key */
  uint64_t seq;        /* insertion order: newest kept by a compaction */
  struct sizeindex_rec rec;
  size_t idlen;
  unsigned char id[]; /* identity bytes */
};

struct sizeindex {
  pthread_mutex_t lock; /* guards every field below and the file I/O */
  char *dir;
  int dirfd; /* dir, opened and checked once: every file is named
                relative to it, so a path swapped later is never followed */
  uid_t uid; /* whose files are used: the effective user's */
  uint64_t cap;
  char *loc;       /* the location whose file is loaded, or NULL */
  char *name;      /* its file's name in dir */
  char *path;      /* dir/name, for log lines */
  char *refused;   /* the last file refused (logged once), or NULL */
  int fd;          /* open O_APPEND, or -1 */
  ino_t ino;       /* fd's inode */
  uint64_t parsed; /* bytes of fd read into the table */
  uint64_t seq;
  struct htab tab;     /* struct lx_ent by location and key (and those
                          pending) */
  unsigned char *pend; /* records of the loaded location not written yet
                          (LX_PEND_MAX bytes), NULL without memory */
  size_t pend_len;
  unsigned char *scratch; /* one record being built (LX_MAX bytes) */
  uint64_t loaded_ns;     /* when the file was last read (CLOCK_MONOTONIC) */
  uint64_t file_recs;     /* records read from the file into the table
                             (those this mount stored and never read back
                             are not): what sizeindex_has_records asks */
};

/* CLOCK_MONOTONIC in nanoseconds. */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Where location and key sit in identity bytes. */
static void id_names(const unsigned char *id, const unsigned char **names,
                     size_t *len) {
  uint16_t ll, kl;
  memcpy(&ll, id + 4, 2);
  memcpy(&kl, id + 6, 2);
  *names = id + LX_IDFIX;
  *len = (size_t)ll + kl;
}

/* Hash of the location and key of identity bytes (what a record
 * replaces). */
static uint64_t id_hash(const unsigned char *id) {
  const unsigned char *names;
  size_t len;
  id_names(id, &names, &len);
  uint16_t ll;
  memcpy(&ll, id + 4, 2);
  return htab_hash_bytes(names, len, ll);
}

/* Same location and key? */
static int ent_eq(const struct htab_node *n, const void *key) {
  const struct lx_ent *e = (const struct lx_ent *)n;
  const unsigned char *a, *b;
  size_t la, lb;
  id_names(e->id, &a, &la);
  id_names(key, &b, &lb);
  return la == lb && !memcmp(e->id + 4, (const unsigned char *)key + 4, 4) &&
         !memcmp(a, b, la);
}

/* Serialise id into buf (LX_MAX - LX_HEAD - LX_VALS bytes at least):
 * its length, or 0 when a name is too long. */
static size_t id_bytes(const struct sizeindex_id *id, unsigned char *buf) {
  size_t ll = strlen(id->location), kl = strlen(id->key);
  if (ll > 65535 || kl > 65535)
    return 0;
  uint16_t l16 = (uint16_t)ll, k16 = (uint16_t)kl;
  memcpy(buf, &id->rules, 4);
  memcpy(buf + 4, &l16, 2);
  memcpy(buf + 6, &k16, 2);
  memcpy(buf + 8, &id->obj_size, 8);
  memcpy(buf + 16, &id->version, 8);
  memcpy(buf + 24, &id->chain_hash, 8);
  memcpy(buf + LX_IDFIX, id->location, ll);
  memcpy(buf + LX_IDFIX + ll, id->key, kl);
  return LX_IDFIX + ll + kl;
}

/* Put a record in the table in place of old, the entry of the same
 * location and key found under hash h (NULL: there is none). */
static void tab_replace(struct sizeindex *x, struct lx_ent *old, uint64_t h,
                        const unsigned char *id, size_t idlen,
                        const struct sizeindex_rec *rec) {
  if (old) {
    htab_remove(&x->tab, &old->hn);
    free(old);
  }
  struct lx_ent *e = malloc(sizeof *e + idlen);
  if (!e)
    return; /* a miss later, nothing worse */
  e->hn.hash = h;
  e->seq = ++x->seq;
  e->rec = *rec;
  e->idlen = idlen;
  memcpy(e->id, id, idlen);
  htab_insert(&x->tab, &e->hn);
}

/* Put a record in the table, replacing the one of the same location and
 * key. */
static void tab_put(struct sizeindex *x, const unsigned char *id, size_t idlen,
                    const struct sizeindex_rec *rec) {
  uint64_t h = id_hash(id);
  tab_replace(x, (struct lx_ent *)htab_find(&x->tab, h, ent_eq, id), h, id,
              idlen, rec);
}

/* Forget every record. */
static void tab_clear(struct sizeindex *x) {
  struct htab_node *n;
  while ((n = htab_pop(&x->tab)))
    free(n);
}

/* Is a whole, checked record at p (avail bytes)? Its length, 0 when p
 * holds a record not complete yet, -1 when p holds no record. */
static long rec_check(const unsigned char *p, size_t avail) {
  if (avail < LX_HEAD)
    return memcmp(p, lx_magic, avail < 4 ? avail : 4) ? -1 : 0;
  if (memcmp(p, lx_magic, 4))
    return -1;
  uint32_t len, crc;
  memcpy(&len, p + 4, 4);
  memcpy(&crc, p + 8, 4);
  if (len < LX_MIN || len > LX_MAX)
    return -1;
  if (len > avail) /* the tail being written, unless a record follows */
    return memmem(p + 1, avail - 1, lx_magic, 4) ? -1 : 0;
  uint16_t ll, kl;
  memcpy(&ll, p + LX_HEAD + LX_VALS + 4, 2);
  memcpy(&kl, p + LX_HEAD + LX_VALS + 6, 2);
  if ((size_t)LX_MIN + ll + kl != len)
    return -1;
  if (crc32(0L, p + LX_HEAD, len - LX_HEAD) != crc)
    return -1;
  return (long)len;
}

/* Put the records of buf (got bytes) into the table: the bytes taken. A
 * record at the end that is not complete yet is left (for the next call);
 * anything that is not a record is skipped. from_file: buf was read from
 * the file (counted in file_recs), not this mount's pending records. */
static size_t parse_records(struct sizeindex *x, const unsigned char *buf,
                            size_t got, int from_file) {
  size_t p = 0;
  while (p < got) {
    long len = rec_check(buf + p, got - p);
    if (len > 0) {
      struct sizeindex_rec rec;
      memcpy(&rec.text_size, buf + p + LX_HEAD, 8);
      memcpy(&rec.lines, buf + p + LX_HEAD + 8, 8);
      tab_put(x, buf + p + LX_HEAD + LX_VALS, (size_t)len - LX_HEAD - LX_VALS,
              &rec);
      x->file_recs += (uint64_t)from_file;
      p += (size_t)len;
      continue;
    }
    if (len == 0)
      break; /* the tail being written, or torn: looked at again later */
    /* not a record: on to the next marker */
    const unsigned char *m = memmem(buf + p + 1, got - p - 1, lx_magic, 4);
    p = m ? (size_t)(m - buf) : got;
  }
  return p;
}

/* Read the records of the file from x->parsed on into the table. A
 * record at the end that is not complete yet is left for the next call;
 * anything that is not a record is skipped. */
static void load_more(struct sizeindex *x) {
  struct stat st;
  x->loaded_ns = now_ns();
  if (x->fd < 0 || fstat(x->fd, &st) < 0 || (uint64_t)st.st_size <= x->parsed)
    return;
  size_t n = (size_t)((uint64_t)st.st_size - x->parsed);
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf)
    return;
  size_t got = 0;
  while (got < n) {
    ssize_t r = pread(x->fd, buf + got, n - got, (off_t)(x->parsed + got));
    if (r < 0 && errno == EINTR)
      continue;
    if (r <= 0)
      break;
    got += (size_t)r;
  }
  x->parsed += parse_records(x, buf, got, 1);
  free(buf);
}

/* Close the loaded file and forget its records. */
static void file_drop(struct sizeindex *x) {
  if (x->fd >= 0)
    close(x->fd);
  x->fd = -1;
  x->parsed = 0;
  x->file_recs = 0;
  tab_clear(x);
}

/* Why a file or directory st of ours must not be used (a symbolic link
 * is refused before: O_NOFOLLOW), or NULL: it is a plain file (a
 * directory when dir) of the user, which nobody else may write. */
static const char *unsafe_reason(const struct stat *st, uid_t uid, int dir,
                                 char *buf, size_t len) {
  if (dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
    return dir ? "not a directory" : "not a regular file";
  if (st->st_uid != uid) {
    snprintf(buf, len, "owned by uid %lu, not by uid %lu",
             (unsigned long)st->st_uid, (unsigned long)uid);
    return buf;
  }
  if (st->st_mode & 022) {
    snprintf(buf, len, "writable by group or others (mode %04o)",
             (unsigned)(st->st_mode & 07777));
    return buf;
  }
  if (!dir && st->st_nlink != 1)
    return "has other hard links";
  return NULL;
}

/* Say once (per file, until another is refused) why x->path is not used. */
static void refuse(struct sizeindex *x, const char *why) {
  if (x->refused && !strcmp(x->refused, x->path))
    return;
  free(x->refused);
  x->refused = strdup(x->path);
  zlog(ZLOG_WARN,
       "index cache file %s: %s: not used (sizes are learned by "
       "decoding)",
       x->path, why);
}

/* (Re)open the file x->name of the directory (creating it if create) and
 * read it; the records pending stay in the table. The file is opened
 * without following a symbolic link and used only when it is a plain
 * file of the user that nobody else may write: a file planted in its
 * place is refused (logged once), never written through. */
static void file_open(struct sizeindex *x, int create) {
  file_drop(x);
  x->fd = openat(x->dirfd, x->name,
                 O_RDWR | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK |
                     O_NOCTTY | (create ? O_CREAT : 0),
                 0600);
  struct stat st;
  char buf[96];
  const char *why = NULL;
  if (x->fd < 0 && errno == ELOOP)
    why = "a symbolic link";
  else if (x->fd >= 0 && fstat(x->fd, &st) < 0)
    why = strerror(errno);
  else if (x->fd >= 0)
    why = unsafe_reason(&st, x->uid, 0, buf, sizeof buf);
  if (why) {
    refuse(x, why);
    if (x->fd >= 0)
      close(x->fd);
    x->fd = -1;
    return;
  }
  if (x->fd >= 0)
    x->ino = st.st_ino;
  load_more(x);
  parse_records(x, x->pend, x->pend_len, 0);
}

/* The inode now at x->name (not following a link), or 0 when none. */
static ino_t name_ino(const struct sizeindex *x) {
  struct stat st;
  return fstatat(x->dirfd, x->name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_ino
                                                                   : 0;
}

static void pend_flush(struct sizeindex *x);

/* Make location's file the loaded one (created if create: a look-up
 * makes no file). 0, or -1 when it cannot be (or is not there: looked
 * for again at most every LX_RELOAD_NS, not once a unit). */
static int use_location(struct sizeindex *x, const char *location, int create) {
  if (x->loc && !strcmp(x->loc, location)) {
    if (x->fd < 0 && (create || now_ns() - x->loaded_ns >= LX_RELOAD_NS))
      file_open(x, create);
    return x->fd >= 0 ? 0 : -1;
  }
  pend_flush(x); /* the records pending are the old location's */
  free(x->loc);
  free(x->name);
  free(x->path);
  x->name = x->path = NULL;
  char name[32];
  snprintf(name, sizeof name, LX_PREFIX "%016llx.idx",
           (unsigned long long)htab_hash_str(location));
  x->loc = strdup(location);
  x->name = strdup(name);
  if (!x->loc || !x->name || asprintf(&x->path, "%s/%s", x->dir, name) < 0) {
    free(x->loc);
    free(x->name);
    x->loc = x->name = x->path = NULL;
    file_drop(x);
    return -1;
  }
  file_open(x, create);
  return x->fd >= 0 ? 0 : -1;
}

/* Has the file been replaced (another mount's compaction)? Then reopen. */
static void follow_rename(struct sizeindex *x) {
  if (name_ino(x) != x->ino)
    file_open(x, 1);
}

/* See sizeindex_int.h. */
int sizeindex_write_all(int fd, const unsigned char *p, size_t len) {
  while (len) {
    ssize_t w = write(fd, p, len);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* Build a record of identity bytes id and rec into out (LX_MAX bytes):
 * its length. */
static size_t rec_build(unsigned char *out, const unsigned char *id,
                        size_t idlen, const struct sizeindex_rec *rec) {
  uint32_t len = (uint32_t)(LX_HEAD + LX_VALS + idlen);
  memcpy(out, lx_magic, 4);
  memcpy(out + 4, &len, 4);
  memcpy(out + LX_HEAD, &rec->text_size, 8);
  memcpy(out + LX_HEAD + 8, &rec->lines, 8);
  memmove(out + LX_HEAD + LX_VALS, id, idlen);
  uint32_t crc = (uint32_t)crc32(0L, out + LX_HEAD, len - LX_HEAD);
  memcpy(out + 8, &crc, 4);
  return len;
}

/* A record of a compaction's sort: its age beside it, so that sorting
 * reads no record. */
struct lx_aged {
  uint64_t seq;
  struct lx_ent *e;
};

/* Newer first. */
static int ent_newer(const void *a, const void *b) {
  uint64_t sa = ((const struct lx_aged *)a)->seq;
  uint64_t sb = ((const struct lx_aged *)b)->seq;
  return sa < sb ? 1 : sa > sb ? -1 : 0;
}

/* Bytes of records a compaction writes at once. */
#define LX_COMPACT_BUF (256u << 10)

/* A new temp file beside x->name for a compaction, named in tmp (len
 * bytes) with a part nobody can guess and created exclusively (never a
 * file or link that is there already): its descriptor, or -1. */
static int temp_create(struct sizeindex *x, const char *name, char *tmp,
                       size_t len) {
  for (int tries = 0; tries < 8; tries++) {
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
      r = now_ns() ^ ((uint64_t)(uintptr_t)x << 16) ^ (uint64_t)tries;
    snprintf(tmp, len, "%s.%ld.%016llx.tmp", name, (long)getpid(),
             (unsigned long long)r);
    int fd = openat(
        x->dirfd, tmp,
        O_RDWR | O_APPEND | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 || errno != EEXIST)
      return fd;
  }
  return -1;
}

/* Replace the file (locked exclusively by the caller through x->fd) by
 * its newest records filling at most half the cap, those pending among
 * them (the newest, and at most half the cap): written to a temp file,
 * then renamed over it. Then the index holds the new file (x->fd, which
 * the lock went with) and the table its records only. 1 when it was
 * replaced, 0 when nothing changed. */
static int compact(struct sizeindex *x) {
  load_more(x);
  size_t n = x->tab.count, k = 0;
  struct lx_aged *v = malloc((n ? n : 1) * sizeof *v);
  unsigned char *out = malloc(LX_COMPACT_BUF + LX_MAX);
  char tmp[96];
  if (!v || !out) {
    free(v);
    free(out);
    return 0;
  }
  for (size_t b = 0; b < x->tab.nbuckets; b++)
    for (struct htab_node *h = x->tab.buckets[b]; h; h = h->next) {
      struct lx_ent *e = (struct lx_ent *)h;
      v[k++] = (struct lx_aged){e->seq, e};
    }
  qsort(v, k, sizeof *v, ent_newer);
  int fd = temp_create(x, x->name, tmp, sizeof tmp);
  int ok = fd >= 0;
  /* the newest that fit, written oldest first (the order a later load
   * and compaction take as their age) */
  uint64_t total = 0;
  size_t keep = 0, used = 0;
  while (keep < k && total + LX_HEAD + LX_VALS + v[keep].e->idlen <= x->cap / 2)
    total += LX_HEAD + LX_VALS + v[keep++].e->idlen;
  for (size_t i = keep; ok && i-- > 0;) {
    const struct lx_ent *e = v[i].e;
    used += rec_build(out + used, e->id, e->idlen, &e->rec);
    if (used >= LX_COMPACT_BUF || i == 0) {
      ok = sizeindex_write_all(fd, out, used) == 0;
      used = 0;
    }
  }
  struct stat st;
  if (ok &&
      (fstat(fd, &st) < 0 || renameat(x->dirfd, tmp, x->dirfd, x->name) < 0))
    ok = 0;
  if (!ok && fd >= 0) {
    unlinkat(x->dirfd, tmp, 0);
    close(fd);
  } else if (ok) { /* the old file's lock goes with its descriptor */
    close(x->fd);
    x->fd = fd;
    x->ino = st.st_ino;
    x->parsed = total;
    for (size_t i = keep; i < k; i++) {
      htab_remove(&x->tab, &v[i].e->hn);
      free(v[i].e);
    }
  }
  free(out);
  free(v);
  return ok;
}

/* Append the records pending as one write (whole appends do not
 * interleave), compacting the file first when they would take it past
 * the cap. Under x->lock. They stay in the table whatever happens: a
 * failure only leaves them to be learned again by the next mount. */
static void pend_flush(struct sizeindex *x) {
  size_t len = x->pend_len;
  for (int tries = 0; len && x->fd >= 0 && tries < 3; tries++) {
    if (flock(x->fd, LOCK_SH) < 0)
      break;
    struct stat st;
    if (name_ino(x) != x->ino) {
      flock(x->fd, LOCK_UN); /* replaced: append to the new file */
      file_open(x, 1);
      continue;
    }
    if (fstat(x->fd, &st) == 0 && (uint64_t)st.st_size + len > x->cap) {
      /* the shared lock becomes exclusive: not atomically, so whoever
       * got in between may have compacted already (looked at again) */
      int compacted = 0;
      flock(x->fd, LOCK_UN);
      if (flock(x->fd, LOCK_EX) == 0 && name_ino(x) == x->ino &&
          fstat(x->fd, &st) == 0 && (uint64_t)st.st_size + len > x->cap)
        compacted = compact(x);
      if (compacted)
        break; /* the records pending are in the new file */
      flock(x->fd, LOCK_UN);
      follow_rename(x);
      continue;
    }
    uint64_t at = (uint64_t)st.st_size;
    int ok = sizeindex_write_all(x->fd, x->pend, len) == 0;
    /* nobody appended meanwhile: no need to read these records back */
    if (ok && x->parsed == at && fstat(x->fd, &st) == 0 &&
        (uint64_t)st.st_size == at + len)
      x->parsed = at + len;
    flock(x->fd, LOCK_UN);
    break;
  }
  x->pend_len = 0;
}

/* A directory stream of dirfd's directory (its own descriptor), or NULL. */
static DIR *dir_stream(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  if (!d && fd >= 0)
    close(fd);
  return d;
}

/* Remove the least recently written index files of the directory (and
 * temp files of compactions that died) until the rest fit cap together,
 * and the files of format 1 at once. Only regular files are counted or
 * removed. */
static void evict_files(int dirfd, uint64_t cap) {
  for (;;) {
    DIR *d = dir_stream(dirfd);
    if (!d)
      return;
    uint64_t total = 0;
    char oldest[300] = "";
    struct timespec ot = {0, 0};
    struct dirent *de;
    while ((de = readdir(d))) {
      size_t l = strlen(de->d_name);
      struct stat st;
      int ours = !strncmp(de->d_name, LX_PREFIX, strlen(LX_PREFIX));
      int old = !strncmp(de->d_name, LX_OLD_PREFIX, strlen(LX_OLD_PREFIX));
      /* index files, and temp files a compaction left behind */
      if ((!ours && !old) || l > 250 ||
          fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
          !S_ISREG(st.st_mode))
        continue;
      if (old) { /* records no reader of format 2 takes */
        unlinkat(dirfd, de->d_name, 0);
        continue;
      }
      total += (uint64_t)st.st_size;
      if (!*oldest || st.st_mtim.tv_sec < ot.tv_sec ||
          (st.st_mtim.tv_sec == ot.tv_sec && st.st_mtim.tv_nsec < ot.tv_nsec)) {
        ot = st.st_mtim;
        snprintf(oldest, sizeof oldest, "%s", de->d_name);
      }
    }
    int removed = total > cap && *oldest && unlinkat(dirfd, oldest, 0) == 0;
    closedir(d);
    if (!removed)
      return;
  }
}

/* See sizeindex.h. */
uint64_t sizeindex_dir_bytes(const char *dir) {
  DIR *d = opendir(dir);
  uint64_t total = 0;
  struct dirent *de;
  while (d && (de = readdir(d))) {
    struct stat st;
    if (!strncmp(de->d_name, LX_PREFIX, strlen(LX_PREFIX)) &&
        fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
        S_ISREG(st.st_mode))
      total += (uint64_t)st.st_size;
  }
  if (d)
    closedir(d);
  return total;
}

/* mkdir -p, what it makes with mode 0700 (the XDG base directory rule). */
static int mkdirs(const char *dir) {
  char *p = strdup(dir);
  if (!p)
    return -ENOMEM;
  for (char *s = p + 1;; s++) {
    int end = !*s;
    if (*s == '/' || end) {
      *s = 0;
      if (mkdir(p, 0700) < 0 && errno != EEXIST) {
        int e = errno;
        free(p);
        return -e;
      }
      if (end)
        break;
      *s = '/';
    }
  }
  free(p);
  return 0;
}

/* Is every directory above real (a resolved path, cut up in place) safe,
 * as ssh and gpg ask of theirs: owned by the user or root, and writable
 * by nobody else unless sticky (/tmp), so that nobody else can put
 * another directory in the index's place? NULL, or why not (in buf).
 * Group-writable directories above are let be: many systems give each
 * user a group of their own. */
static const char *parents_unsafe(char *real, uid_t uid, char *buf,
                                  size_t len) {
  for (char *s = strrchr(real, '/'); s; s = strrchr(real, '/')) {
    s[s == real] = 0; /* the parent ("/" for a child of the root) */
    struct stat st;
    if (stat(real, &st) < 0) {
      snprintf(buf, len, "%s: %s", real, strerror(errno));
      return buf;
    }
    if (st.st_uid != uid && st.st_uid != 0) {
      snprintf(buf, len, "%s above it is owned by uid %lu", real,
               (unsigned long)st.st_uid);
      return buf;
    }
    if ((st.st_mode & 002) && !(st.st_mode & S_ISVTX)) {
      snprintf(buf, len, "%s above it is writable by others (mode %04o)", real,
               (unsigned)(st.st_mode & 07777));
      return buf;
    }
    if (s == real)
      break;
  }
  return NULL;
}

/* Make and open the index directory dir, refusing one that is not safe
 * (see sizeindex.h): its descriptor in *fd, or a negative errno (-EPERM
 * for a refusal) with err naming dir and the reason. */
static int dir_open(const char *dir, uid_t uid, int *fd, struct zerr *err) {
  int rc = mkdirs(dir);
  if (rc < 0)
    return zerr_set(err, -rc, "index cache %s: %s", dir, strerror(-rc));
  *fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (*fd < 0)
    return zerr_set(err, errno, "index cache %s: %s", dir, strerror(errno));
  struct stat st, rst;
  char buf[512], *real = realpath(dir, NULL);
  int e = errno;
  const char *why = NULL;
  if (!real)
    rc = zerr_set(err, e, "index cache %s: %s", dir, strerror(e));
  else if (fstat(*fd, &st) < 0)
    why = strerror(errno);
  else if (!(why = unsafe_reason(&st, uid, 1, buf, sizeof buf)) &&
           (stat(real, &rst) < 0 || rst.st_dev != st.st_dev ||
            rst.st_ino != st.st_ino))
    why = "replaced while being checked";
  else if (!why)
    why = parents_unsafe(real, uid, buf, sizeof buf);
  if (why)
    rc = zerr_set(err, EPERM, "index cache %s: %s: not used", dir, why);
  free(real);
  if (rc < 0) {
    close(*fd);
    *fd = -1;
  }
  return rc;
}

/* See sizeindex.h. */
int sizeindex_open(const char *dir, uint64_t cap, struct sizeindex **out,
                   struct zerr *err) {
  *out = NULL;
  if (!cap)
    cap = SIZEINDEX_DEFAULT_CAP;
  uid_t uid = geteuid();
  int dfd;
  ZTRY(dir_open(dir, uid, &dfd, err));
  struct sizeindex *x = calloc(1, sizeof *x);
  if (!x || !(x->dir = strdup(dir)) || !(x->pend = malloc(LX_PEND_MAX)) ||
      !(x->scratch = malloc(LX_MAX)) || htab_init(&x->tab, 64) < 0) {
    if (x) {
      free(x->dir);
      free(x->pend);
      free(x->scratch);
    }
    free(x);
    close(dfd);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  pthread_mutex_init(&x->lock, NULL);
  x->dirfd = dfd;
  x->uid = uid;
  x->cap = cap;
  x->fd = -1;
  evict_files(dfd, cap);
  *out = x;
  return 0;
}

/* See sizeindex.h. */
int sizeindex_lookup(struct sizeindex *x, const struct sizeindex_id *id,
                     struct sizeindex_rec *out) {
  int hit = 0;
  pthread_mutex_lock(&x->lock);
  unsigned char *ib = x->scratch;
  size_t il = id_bytes(id, ib);
  if (il && use_location(x, id->location, 0) == 0) {
    for (int pass = 0; pass < 2 && !hit; pass++) {
      if (pass && now_ns() - x->loaded_ns < LX_RELOAD_NS)
        break;
      if (pass) /* a miss: what other mounts added since */
        load_more(x);
      const struct lx_ent *e =
          (const struct lx_ent *)htab_find(&x->tab, id_hash(ib), ent_eq, ib);
      if (e && e->idlen == il && !memcmp(e->id, ib, il)) {
        *out = e->rec;
        hit = 1;
      }
    }
  }
  pthread_mutex_unlock(&x->lock);
  return hit;
}

/* See sizeindex.h. */
int sizeindex_has_records(struct sizeindex *x, const char *location) {
  if (!x)
    return 0;
  pthread_mutex_lock(&x->lock);
  int has = 0;
  if (use_location(x, location, 0) == 0 ||
      (x->loc && !strcmp(x->loc, location))) {
    if (!x->file_recs && x->fd >= 0 && now_ns() - x->loaded_ns >= LX_RELOAD_NS)
      load_more(x); /* what other mounts added since */
    /* only records read from the file: a look-up of one this mount
     * stored would find what the mount knows already (its memo), so a
     * first mount, storing a record per unit it decodes, asks nothing */
    has = x->file_recs > 0;
  }
  pthread_mutex_unlock(&x->lock);
  return has;
}

/* See sizeindex.h. */
int sizeindex_store(struct sizeindex *x, const struct sizeindex_id *id,
                    const struct sizeindex_rec *rec) {
  int rc = 0;
  pthread_mutex_lock(&x->lock);
  unsigned char *buf = x->scratch, *ib = buf + LX_HEAD + LX_VALS;
  size_t il = id_bytes(id, ib);
  if (!il) {
    rc = -ENAMETOOLONG;
    goto out;
  }
  if (use_location(x, id->location, 1) < 0) {
    rc = -EIO;
    goto out;
  }
  uint64_t h = id_hash(ib);
  struct lx_ent *e = (struct lx_ent *)htab_find(&x->tab, h, ent_eq, ib);
  if (e && e->idlen == il && !memcmp(e->id, ib, il) &&
      e->rec.text_size == rec->text_size && e->rec.lines == rec->lines)
    goto out; /* known already */
  size_t len = rec_build(buf, ib, il, rec);
  if (len > x->cap / 2) {
    rc = -EFBIG;
    goto out;
  }
  /* a batch stays under a quarter of the cap, so that a compaction keeps
   * it whole (a record larger than that is a batch of its own) */
  size_t batch = x->cap / 4 < LX_PEND_MAX ? (size_t)(x->cap / 4) : LX_PEND_MAX;
  if (x->pend_len && x->pend_len + len > batch) {
    pend_flush(x); /* (may compact or reload the table: e may be gone) */
    e = (struct lx_ent *)htab_find(&x->tab, h, ent_eq, ib);
  }
  /* before a flush: a compaction keeps it; e found once, not again */
  tab_replace(x, e, h, ib, il, rec);
  if (len > LX_PEND_MAX - x->pend_len) { /* larger than any batch */
    unsigned char *p = x->pend;
    x->pend = buf;
    x->pend_len = len;
    pend_flush(x);
    x->pend = p;
  } else {
    memcpy(x->pend + x->pend_len, buf, len);
    x->pend_len += len;
  }
  if (x->pend_len >= batch)
    pend_flush(x);
out:
  pthread_mutex_unlock(&x->lock);
  return rc;
}

/* See sizeindex.h. */
void sizeindex_close(struct sizeindex *x) {
  if (!x)
    return;
  pthread_mutex_lock(&x->lock);
  pend_flush(x);
  pthread_mutex_unlock(&x->lock);
  file_drop(x);
  htab_fini(&x->tab);
  pthread_mutex_destroy(&x->lock);
  free(x->loc);
  free(x->name);
  free(x->path);
  free(x->refused);
  free(x->dir);
  close(x->dirfd);
  free(x->pend);
  free(x->scratch);
  free(x);
}

/* ---- shared with sizeblob.c (sizeindex_int.h) ---- */

/* See sizeindex_int.h. */
int sizeindex_dirfd(const struct sizeindex *x) { return x->dirfd; }

/* See sizeindex_int.h. */
uint64_t sizeindex_cap(const struct sizeindex *x) { return x->cap; }

/* See sizeindex_int.h. */
size_t sizeindex_id_bytes(const struct sizeindex_id *id, unsigned char *buf) {
  return id_bytes(id, buf);
}

/* See sizeindex_int.h. */
const char *sizeindex_unsafe(const struct sizeindex *x, const struct stat *st,
                             char *buf, size_t len) {
  return unsafe_reason(st, x->uid, 0, buf, len);
}

/* See sizeindex_int.h. */
int sizeindex_temp(struct sizeindex *x, const char *name, char *tmp,
                   size_t len) {
  return temp_create(x, name, tmp, len);
}

/* See sizeindex_int.h. */
void sizeindex_evict(struct sizeindex *x) { evict_files(x->dirfd, x->cap); }
