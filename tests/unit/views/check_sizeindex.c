/* check_sizeindex.c - the persistent size index: round trip across opens,
 * no record for an identity that differs in any field, misses (never a
 * wrong record, never a crash) from corrupted, truncated and concurrently
 * written files, the size cap, and nothing planted in the directory (a
 * symbolic link, a FIFO, a file others may write, a directory that is not
 * safe) is ever written through. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/store/sizeindex.h"
#include "../../../src/store/store.h"
#include "../testutil.h"

/* A fresh directory for one test (static storage). */
static const char *tmpdir(void) {
  static char d[64];
  snprintf(d, sizeof d, "/tmp/check_sizeindex.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d));
  return d;
}

/* The one index file of dir (static storage), or NULL; region records
 * (lx2-r*, src/store/sizeblob.h) are files of their own, not this. */
static const char *index_file(const char *dir) {
  static char p[512];
  DIR *d = opendir(dir);
  struct dirent *de;
  const char *found = NULL;
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "lx", 2) && strstr(de->d_name, ".idx") &&
        !strstr(de->d_name, ".tmp") && strncmp(de->d_name, "lx2-r", 5)) {
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      found = p;
    }
  if (d)
    closedir(d);
  return found;
}

/* Identity number i of location loc (key built in kb). */
static struct sizeindex_id ident(const char *loc, char *kb, size_t kl, int i) {
  snprintf(kb, kl, "arr/c/%d/0", i);
  return (struct sizeindex_id){loc,
                               kb,
                               1000 + (uint64_t)i,
                               1700000000123456789,
                               0xfeedull * (uint64_t)(i + 1),
                               1};
}

/* The record every test stores for identity i. */
static struct sizeindex_rec rec_of(int i) {
  return (struct sizeindex_rec){(uint64_t)i * 977 + 5, (uint64_t)i + 1};
}

/* Does id i look up as its own record, or as a miss (never another)? */
static int check_i(struct sizeindex *x, const char *loc, int i) {
  char kb[64];
  struct sizeindex_id id = ident(loc, kb, sizeof kb, i);
  struct sizeindex_rec r;
  if (!sizeindex_lookup(x, &id, &r))
    return 0;
  struct sizeindex_rec want = rec_of(i);
  ck_assert_uint_eq(r.text_size, want.text_size);
  ck_assert_uint_eq(r.lines, want.lines);
  return 1;
}

START_TEST(round_trip) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  char kb[64];
  for (int i = 0; i < 100; i++) {
    struct sizeindex_id id = ident("/data/a.zarr", kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    ck_assert_int_eq(sizeindex_store(x, &id, &r), 0);
  }
  for (int i = 0; i < 100; i++)
    ck_assert(check_i(x, "/data/a.zarr", i));
  /* records of this mount's own are not records to look up: it knows
   * them (a first mount asks nothing), also once a batch is written */
  ck_assert(!sizeindex_has_records(x, "/data/a.zarr"));
  for (int i = 100; i < 2000; i++) {
    struct sizeindex_id id = ident("/data/a.zarr", kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    ck_assert_int_eq(sizeindex_store(x, &id, &r), 0);
  }
  ck_assert(!sizeindex_has_records(x, "/data/a.zarr"));
  ck_assert(!check_i(x, "/data/b.zarr", 3)); /* another location */
  sizeindex_close(x);
  /* another mount: from the file */
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  ck_assert(sizeindex_has_records(x, "/data/a.zarr"));
  for (int i = 0; i < 2000; i++)
    ck_assert(check_i(x, "/data/a.zarr", i));
  /* a record equal to the known one is not written again */
  struct stat st0, st1;
  ck_assert_int_eq(stat(index_file(d), &st0), 0);
  struct sizeindex_id id = ident("/data/a.zarr", kb, sizeof kb, 7);
  struct sizeindex_rec r = rec_of(7);
  ck_assert_int_eq(sizeindex_store(x, &id, &r), 0);
  ck_assert_int_eq(stat(index_file(d), &st1), 0);
  ck_assert_int_eq(st0.st_size, st1.st_size);
  sizeindex_close(x);
  sizeindex_close(NULL);
}
END_TEST

START_TEST(identity_mismatch) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  char kb[64];
  struct sizeindex_id id = ident("/s", kb, sizeof kb, 1);
  struct sizeindex_rec r = rec_of(1), got;
  ck_assert_int_eq(sizeindex_store(x, &id, &r), 0);
  ck_assert(sizeindex_lookup(x, &id, &got));
  for (int f = 0; f < 5; f++) {
    struct sizeindex_id o = id;
    char kb2[80];
    switch (f) {
    case 0:
      o.obj_size++;
      break;
    case 1:
      o.version++;
      break;
    case 2:
      o.chain_hash ^= 1;
      break;
    case 3:
      o.rules++;
      break;
    case 4:
      snprintf(kb2, sizeof kb2, "%s.", kb);
      o.key = kb2;
      break;
    }
    ck_assert_msg(!sizeindex_lookup(x, &o, &got), "field %d", f);
  }
  /* a stale record is replaced by the new identity's */
  struct sizeindex_id n = id;
  n.version += 1000;
  struct sizeindex_rec r2 = {12345, 2};
  ck_assert_int_eq(sizeindex_store(x, &n, &r2), 0);
  ck_assert(!sizeindex_lookup(x, &id, &got));
  ck_assert(sizeindex_lookup(x, &n, &got));
  ck_assert_uint_eq(got.text_size, 12345);
  sizeindex_close(x);
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  ck_assert(!sizeindex_lookup(x, &id, &got)); /* also from the file */
  ck_assert(sizeindex_lookup(x, &n, &got));
  ck_assert_uint_eq(got.text_size, 12345);
  sizeindex_close(x);
}
END_TEST

/* Write N records, then damage the file with f, reopen: every lookup is
 * its own record or a miss; returns the hits. */
static int damaged(void (*f)(const char *path, off_t size)) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  char kb[64];
  for (int i = 0; i < 200; i++) {
    struct sizeindex_id id = ident("/s", kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    ck_assert_int_eq(sizeindex_store(x, &id, &r), 0);
  }
  sizeindex_close(x);
  struct stat st;
  ck_assert_int_eq(stat(index_file(d), &st), 0);
  f(index_file(d), st.st_size);
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  int hits = 0;
  for (int i = 0; i < 200; i++)
    hits += check_i(x, "/s", i);
  /* and it still takes new records */
  struct sizeindex_id id = ident("/s", kb, sizeof kb, 500);
  struct sizeindex_rec r = rec_of(500);
  ck_assert_int_eq(sizeindex_store(x, &id, &r), 0);
  sizeindex_close(x);
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  ck_assert(check_i(x, "/s", 500));
  sizeindex_close(x);
  return hits;
}

/* Cut the file in the middle of a record. */
static void truncate_mid(const char *path, off_t size) {
  ck_assert_int_eq(truncate(path, size - 7), 0);
}
/* Flip bytes all over the file (seeded, reproducible). */
static void corrupt(const char *path, off_t size) {
  int fd = open(path, O_RDWR);
  unsigned s = 12345;
  for (int k = 0; k < 60; k++) {
    s = s * 1103515245u + 12345u;
    off_t at = (off_t)(s % (unsigned)size);
    unsigned char b;
    ck_assert_int_eq(pread(fd, &b, 1, at), 1);
    b ^= (unsigned char)(1u << (s >> 28 & 7));
    ck_assert_int_eq(pwrite(fd, &b, 1, at), 1);
  }
  close(fd);
}
/* Garbage over the first half, then a torn copy of a record. */
static void garbage(const char *path, off_t size) {
  int fd = open(path, O_RDWR);
  char junk[4096];
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (char)(i * 31 + 7);
  memcpy(junk + 100, "LXr1", 4); /* a marker with nothing good behind */
  for (off_t at = 0; at < size / 2; at += (off_t)sizeof junk)
    ck_assert_int_gt(pwrite(fd, junk, sizeof junk, at), 0);
  char tail[20];
  ck_assert_int_eq(pread(fd, tail, sizeof tail, size - 90),
                   (ssize_t)sizeof tail);
  ck_assert_int_eq(pwrite(fd, tail, sizeof tail, size), (ssize_t)sizeof tail);
  close(fd);
}
/* Empty the file. */
static void empty(const char *path, off_t size) {
  ck_assert_int_eq(truncate(path, 0), 0);
}

START_TEST(damaged_files) {
  int h = damaged(truncate_mid);
  ck_assert_int_eq(h, 199); /* only the torn one lost */
  h = damaged(corrupt);
  ck_assert_int_lt(h, 200);
  ck_assert_int_gt(h, 100); /* resynchronised after each damage */
  h = damaged(garbage);
  ck_assert_int_gt(h, 50);
  ck_assert_int_eq(damaged(empty), 0);
}
END_TEST

/* Writer i of the concurrency tests: its own records, and a look at
 * everybody's. */
struct writer {
  const char *dir;
  int base;
  int threads; /* 1: several threads share one index */
  struct sizeindex *shared;
};

/* Store 300 records from base on, checking lookups on the way. */
static void *write_many(void *arg) {
  struct writer *w = arg;
  struct zerr err = {0};
  struct sizeindex *x = w->shared;
  if (!x && sizeindex_open(w->dir, 1 << 20, &x, &err) < 0)
    return (void *)1;
  char kb[64];
  for (int i = w->base; i < w->base + 300; i++) {
    struct sizeindex_id id = ident("/s", kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    sizeindex_store(x, &id, &r);
    for (int k = 0; k < 1200; k += 97)
      check_i(x, "/s", k); /* own record or a miss */
  }
  if (!w->shared)
    sizeindex_close(x);
  return NULL;
}

START_TEST(concurrent_processes) {
  const char *d = tmpdir();
  pid_t pids[4];
  for (int p = 0; p < 4; p++) {
    pids[p] = fork();
    ck_assert_int_ge(pids[p], 0);
    if (pids[p] == 0) {
      struct writer w = {d, p * 300, 0, NULL};
      _exit(write_many(&w) ? 1 : 0);
    }
  }
  for (int p = 0; p < 4; p++) {
    int status;
    ck_assert_int_eq(waitpid(pids[p], &status, 0), pids[p]);
    ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 1 << 20, &x, &err), 0);
  int hits = 0;
  for (int i = 0; i < 1200; i++)
    hits += check_i(x, "/s", i);
  ck_assert_int_eq(hits, 1200); /* whole appends do not interleave */
  sizeindex_close(x);
}
END_TEST

START_TEST(concurrent_threads_and_compaction) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct sizeindex *x;
  /* a small cap: the writers compact each other's file all along */
  ck_assert_int_eq(sizeindex_open(d, 16384, &x, &err), 0);
  /* another process on the same directory meanwhile (forked before the
   * threads start: a fork among threads may copy a held allocator lock) */
  pid_t pid = fork();
  if (pid == 0) {
    struct sizeindex *y;
    struct zerr e2 = {0};
    if (sizeindex_open(d, 16384, &y, &e2) < 0)
      _exit(1);
    struct writer wy = {d, 2000, 1, y};
    write_many(&wy);
    sizeindex_close(y);
    _exit(0);
  }
  pthread_t t[4];
  struct writer w[4];
  for (int i = 0; i < 4; i++) {
    w[i] = (struct writer){d, i * 300, 1, x};
    ck_assert_int_eq(pthread_create(&t[i], NULL, write_many, &w[i]), 0);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  int status;
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  ck_assert_uint_le(sizeindex_dir_bytes(d), 16384);
  int hits = 0;
  for (int i = 0; i < 1200; i++)
    hits += check_i(x, "/s", i);
  ck_assert_int_gt(hits, 0);
  sizeindex_close(x);
}
END_TEST

START_TEST(cap_holds) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct sizeindex *x;
  const uint64_t cap = 64 << 10;
  ck_assert_int_eq(sizeindex_open(d, cap, &x, &err), 0);
  char kb[64], loc[64];
  for (int i = 0; i < 20000; i++) {
    struct sizeindex_id id = ident("/big", kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    sizeindex_store(x, &id, &r);
    ck_assert_uint_le(sizeindex_dir_bytes(d), cap);
  }
  for (int i = 19700; i < 20000; i++) /* the newest are kept */
    ck_assert_msg(check_i(x, "/big", i), "record %d", i);
  ck_assert(!check_i(x, "/big", 0));
  /* files of many locations: opening evicts the oldest past the cap */
  for (int l = 0; l < 8; l++) {
    snprintf(loc, sizeof loc, "/loc%d", l);
    for (int i = 0; i < 300; i++) {
      struct sizeindex_id id = ident(loc, kb, sizeof kb, i);
      struct sizeindex_rec r = rec_of(i);
      sizeindex_store(x, &id, &r);
    }
  }
  sizeindex_close(x);
  ck_assert_int_eq(sizeindex_open(d, cap, &x, &err), 0);
  ck_assert_uint_le(sizeindex_dir_bytes(d), cap);
  ck_assert(check_i(x, "/loc7", 299)); /* the newest file stays */
  sizeindex_close(x);
}
END_TEST

START_TEST(unusable_directory) {
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_lt(sizeindex_open("/proc/self/nonexistent/x", 0, &x, &err), 0);
  ck_assert_ptr_null(x);
}
END_TEST

/* A file of `len` bytes of 'v' at path. */
static void put_victim(const char *path, size_t len) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  for (size_t i = 0; i < len; i++)
    fputc('v', f);
  fclose(f);
}

/* Is the file at path still `len` bytes of 'v'? */
static int victim_intact(const char *path, size_t len) {
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = 0;
  int c, ok = 1;
  while ((c = fgetc(f)) != EOF) {
    ok &= c == 'v';
    n++;
  }
  fclose(f);
  return ok && n == len;
}

/* Store records 0..n-1 of location loc in a fresh index of d (cap). */
static void store_n(const char *d, uint64_t cap, const char *loc, int from,
                    int n) {
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, cap, &x, &err), 0);
  char kb[64];
  for (int i = from; i < from + n; i++) {
    struct sizeindex_id id = ident(loc, kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    sizeindex_store(x, &id, &r);
  }
  sizeindex_close(x);
}

START_TEST(planted_link_not_followed) {
  const char *d = tmpdir();
  store_n(d, 0, "/s", 0, 10);
  char file[512], victim[512];
  snprintf(file, sizeof file, "%s", index_file(d));
  snprintf(victim, sizeof victim, "%s.victim", d);
  put_victim(victim, 100);
  ck_assert_int_eq(unlink(file), 0);
  ck_assert_int_eq(symlink(victim, file), 0);
  /* look-ups miss, stores are no-ops: the link is never written through */
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  for (int i = 0; i < 10; i++)
    ck_assert(!check_i(x, "/s", i));
  char kb[64];
  for (int i = 10; i < 400; i++) {
    struct sizeindex_id id = ident("/s", kb, sizeof kb, i);
    struct sizeindex_rec r = rec_of(i);
    sizeindex_store(x, &id, &r);
  }
  sizeindex_close(x);
  ck_assert(victim_intact(victim, 100));
  struct stat st;
  ck_assert_int_eq(lstat(file, &st), 0);
  ck_assert(S_ISLNK(st.st_mode)); /* left alone */
}
END_TEST

START_TEST(planted_files_refused) {
  /* a FIFO (never blocks), a file others may write, one with another
   * link: none is read or written */
  for (int kind = 0; kind < 3; kind++) {
    const char *d = tmpdir();
    store_n(d, 0, "/s", 0, 10);
    char file[512], other[512];
    snprintf(file, sizeof file, "%s", index_file(d));
    snprintf(other, sizeof other, "%s.other", d);
    if (kind == 0) {
      ck_assert_int_eq(unlink(file), 0);
      ck_assert_int_eq(mkfifo(file, 0600), 0);
    } else if (kind == 1) {
      ck_assert_int_eq(chmod(file, 0666), 0);
    } else {
      ck_assert_int_eq(link(file, other), 0);
    }
    struct stat st0, st1;
    ck_assert_int_eq(lstat(file, &st0), 0);
    struct zerr err = {0};
    struct sizeindex *x;
    ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
    for (int i = 0; i < 10; i++)
      ck_assert_msg(!check_i(x, "/s", i), "kind %d record %d", kind, i);
    char kb[64];
    struct sizeindex_id id = ident("/s", kb, sizeof kb, 77);
    struct sizeindex_rec r = rec_of(77);
    sizeindex_store(x, &id, &r);
    sizeindex_close(x);
    ck_assert_int_eq(lstat(file, &st1), 0);
    ck_assert_int_eq(st0.st_size, st1.st_size);
    ck_assert_int_eq(st0.st_ino, st1.st_ino);
  }
}
END_TEST

START_TEST(compaction_temp_not_followed) {
  /* links where a compaction's temp file could be looked for: the names
   * of format 1 and 2 with this process's pid */
  const char *d = tmpdir();
  store_n(d, 16384, "/s", 0, 5);
  char name[300], link_path[700], victim[512];
  snprintf(name, sizeof name, "%s", strrchr(index_file(d), '/') + 1);
  const char *hash = strchr(name, '-') + 1;
  snprintf(victim, sizeof victim, "%s.victim", d);
  put_victim(victim, 100);
  const char *prefixes[] = {"lx-", "lx2-"};
  for (int p = 0; p < 2; p++) {
    snprintf(link_path, sizeof link_path, "%s/%s%s.%ld.tmp", d, prefixes[p],
             hash, (long)getpid());
    ck_assert_int_eq(symlink(victim, link_path), 0);
  }
  store_n(d, 16384, "/s", 5, 2000); /* compacts many times */
  ck_assert(victim_intact(victim, 100));
  ck_assert_uint_le(sizeindex_dir_bytes(d), 16384);
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 16384, &x, &err), 0);
  ck_assert(check_i(x, "/s", 2004)); /* the newest kept */
  sizeindex_close(x);
}
END_TEST

/* sizeindex_open(dir) refuses: -EPERM, the message names dir and `why`. */
static void refused(const char *dir, const char *why) {
  struct zerr err = {0};
  struct sizeindex *x = NULL;
  ck_assert_int_eq(sizeindex_open(dir, 0, &x, &err), -EPERM);
  ck_assert_ptr_null(x);
  ck_assert_msg(strstr(err.msg, dir) && strstr(err.msg, why), "%s", err.msg);
}

START_TEST(unsafe_directories) {
  char dir[600], sub[700];
  /* writable by group or others */
  snprintf(dir, sizeof dir, "%s", tmpdir());
  ck_assert_int_eq(chmod(dir, 0770), 0);
  refused(dir, "writable by group or others");
  ck_assert_int_eq(chmod(dir, 0777), 0);
  refused(dir, "writable by group or others");
  /* a directory above writable by others (not sticky) */
  snprintf(sub, sizeof sub, "%s/idx", dir);
  ck_assert_int_eq(mkdir(sub, 0700), 0);
  refused(sub, "writable by others");
  /* ... but sticky, as /tmp is: used */
  ck_assert_int_eq(chmod(dir, 01777), 0);
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(sub, 0, &x, &err), 0);
  sizeindex_close(x);
  /* made by the index: mode 0700 */
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  ck_assert_int_eq(sizeindex_open(sub, 0, &x, &err), 0);
  sizeindex_close(x);
  struct stat st;
  ck_assert_int_eq(stat(sub, &st), 0);
  ck_assert_uint_eq(st.st_mode & 0777, 0700);
  /* another user's (only root can make one) */
  if (geteuid() == 0) {
    snprintf(dir, sizeof dir, "%s", tmpdir());
    ck_assert_int_eq(chown(dir, 54321, 54321), 0);
    refused(dir, "owned by uid 54321");
  }
  /* nothing of the refused directories was written */
  ck_assert_uint_eq(sizeindex_dir_bytes(dir), 0);
}
END_TEST

START_TEST(old_format_removed) {
  const char *d = tmpdir();
  char p[600];
  snprintf(p, sizeof p, "%s/lx-0123456789abcdef.idx", d);
  put_victim(p, 4096);
  struct zerr err = {0};
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(d, 0, &x, &err), 0);
  sizeindex_close(x);
  struct stat st;
  ck_assert_int_ne(stat(p, &st), 0); /* a file of format 1: gone */
}
END_TEST

/* ---- records that lie, through the engine ---- */

#define LIE_CHUNKS 64
/* Value j of chunk c: texts of many lengths. */
static int32_t lie_value(int c, int j) {
  static const int32_t mod[] = {10, 1000, 7, 100000, 1000000000, 97, 3, 50000};
  int32_t v = (int32_t)(((uint32_t)c * 7919u + (uint32_t)j * 104729u) %
                        (uint32_t)mod[c % 8]);
  return (c + j) % 3 ? v : -v;
}

/* A V2 int32 array t of LIE_CHUNKS chunks of 4 in dir; its text into
 * *text (malloc'd), its length returned. */
static size_t lie_store(const char *dir, char **text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/t", dir);
  ck_assert_int_eq(mkdir(p, 0700), 0);
  snprintf(p, sizeof p, "%s/.zgroup", dir);
  FILE *f = fopen(p, "w");
  fputs("{\"zarr_format\": 2}", f);
  fclose(f);
  snprintf(p, sizeof p, "%s/t/.zarray", dir);
  f = fopen(p, "w");
  fprintf(f,
          "{\"zarr_format\": 2, \"shape\": [%d], \"chunks\": [4], "
          "\"dtype\": \"<i4\", \"compressor\": null, \"filters\": null, "
          "\"fill_value\": 0, \"order\": \"C\"}",
          LIE_CHUNKS * 4);
  fclose(f);
  char *t = malloc(LIE_CHUNKS * 4 * 13 + 1);
  size_t len = 0;
  for (int c = 0; c < LIE_CHUNKS; c++) {
    snprintf(p, sizeof p, "%s/t/%d", dir, c);
    f = fopen(p, "wb");
    for (int j = 0; j < 4; j++) {
      int32_t v = lie_value(c, j); /* little-endian hosts only, as zarrfs */
      fwrite(&v, 4, 1, f);
      len += (size_t)sprintf(t + len, "%d\n", (int)v);
    }
    fclose(f);
  }
  *text = t;
  return len;
}

/* An engine over dir with the index in idx (4 decode-ahead workers). */
static struct engine *lie_engine(const char *dir, const char *idx) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct engine_config cfg = {.cache_size = 64 << 20,
                              .max_decoded = 1u << 30,
                              .size_table_max = 100000,
                              .decode_threads = 4};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  struct sizeindex *x;
  ck_assert_int_eq(sizeindex_open(idx, 0, &x, &err), 0);
  engine_set_index(e, x);
  return e;
}

/* Add delta to the text size of key's records in the index file path
 * (their CRC made good); how many. */
static int lie(const char *path, const char *key, int64_t delta) {
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  static unsigned char b[1 << 20];
  size_t n = fread(b, 1, sizeof b, f), kl = strlen(key);
  int count = 0;
  for (size_t i = 0; i + 60 <= n;) {
    uint32_t len;
    uint16_t ll, k;
    memcpy(&len, b + i + 4, 4);
    if (memcmp(b + i, "LXr", 3) || len < 60 || i + len > n) {
      i++;
      continue;
    }
    memcpy(&ll, b + i + 32, 2);
    memcpy(&k, b + i + 34, 2);
    if (k == kl && !memcmp(b + i + 60 + ll, key, kl)) {
      uint64_t ts;
      memcpy(&ts, b + i + 12, 8);
      ts += (uint64_t)delta;
      memcpy(b + i + 12, &ts, 8);
      uint32_t crc = (uint32_t)crc32(0L, b + i + 12, len - 12);
      memcpy(b + i + 8, &crc, 4);
      count++;
    }
    i += len;
  }
  rewind(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
  return count;
}

/* What the lying-record readers share. */
struct lie_reader {
  struct engine *e;
  const char *text;
  size_t len;
  int random; /* 0: reads it all in order; else random offsets */
  unsigned seed;
};

/* One reader: every byte it gets is the text's at that offset; a reader
 * in order gets the whole text, no more. */
static void *lie_read(void *arg) {
  struct lie_reader *r = arg;
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(r->e, "t/values.txt", &ent, &err), 0);
  char buf[700];
  if (!r->random) {
    uint64_t off = 0;
    long got;
    while ((got = ns_read_view(r->e, &ent, off, 333, buf, NULL, &err)) > 0) {
      ck_assert_uint_le(off + (uint64_t)got, r->len);
      ck_assert(!memcmp(buf, r->text + off, (size_t)got));
      off += (uint64_t)got;
    }
    ck_assert_msg(got == 0, "%s", err.msg);
    ck_assert_uint_eq(off, r->len);
    return NULL;
  }
  for (int k = 0; k < 300; k++) {
    r->seed = r->seed * 1103515245u + 12345u;
    uint64_t off = (r->seed >> 4) % r->len;
    size_t want = 1 + (r->seed >> 20) % sizeof buf;
    long got = ns_read_view(r->e, &ent, off, want, buf, NULL, &err);
    size_t exp = want < r->len - off ? want : r->len - off;
    ck_assert_msg(got == (long)exp, "at %llu: %ld of %zu (%s)",
                  (unsigned long long)off, got, exp, err.msg);
    ck_assert(!memcmp(buf, r->text + off, exp));
  }
  return NULL;
}

START_TEST(lying_records_never_cut_nor_pad) {
  const char *d = tmpdir();
  char store[600], idx[600], *text;
  snprintf(store, sizeof store, "%s/s", d);
  snprintf(idx, sizeof idx, "%s/idx", d);
  ck_assert_int_eq(mkdir(store, 0700), 0);
  size_t len = lie_store(store, &text);
  /* a first engine learns every size */
  struct engine *e = lie_engine(store, idx);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "t/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, len);
  engine_free(e);
  /* records of four chunks lie, longer and shorter; the view's region
   * record (fs/lsize.h) holds the truth, so it goes: the chunks' own
   * records are what the next engine finds */
  DIR *dd = opendir(idx);
  struct dirent *de;
  while (dd && (de = readdir(dd)))
    if (!strncmp(de->d_name, "lx2-r", 5))
      ck_assert_int_eq(unlinkat(dirfd(dd), de->d_name, 0), 0);
  if (dd)
    closedir(dd);
  const char *keys[] = {"t/5", "t/20", "t/21", "t/63"};
  const int64_t delta[] = {-3, 4, -1, 11};
  int64_t sum = 0;
  for (int k = 0; k < 4; k++) {
    ck_assert_int_ge(lie(index_file(idx), keys[k], delta[k]), 1);
    sum += delta[k];
  }
  /* the next engine says the claimed size, then serves only the truth to
   * readers in order and at random offsets at once */
  e = lie_engine(store, idx);
  ck_assert_int_eq(ns_resolve(e, "t/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, (uint64_t)((int64_t)len + sum));
  pthread_t th[4];
  struct lie_reader rd[4];
  for (int t = 0; t < 4; t++) {
    rd[t] = (struct lie_reader){e, text, len, t >= 2, 77u + (unsigned)t};
    ck_assert_int_eq(pthread_create(&th[t], NULL, lie_read, &rd[t]), 0);
  }
  for (int t = 0; t < 4; t++)
    pthread_join(th[t], NULL);
  ck_assert_int_eq(ns_resolve(e, "t/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, len); /* then the truth */
  engine_free(e);
  /* and the records were replaced by the truth */
  e = lie_engine(store, idx);
  ck_assert_int_eq(ns_resolve(e, "t/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, len);
  engine_free(e);
  free(text);
}
END_TEST

int main(void) {
  Suite *s = suite_create("sizeindex");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, identity_mismatch);
  tcase_add_test(tc, damaged_files);
  tcase_add_test(tc, concurrent_processes);
  tcase_add_test(tc, concurrent_threads_and_compaction);
  tcase_add_test(tc, cap_holds);
  tcase_add_test(tc, unusable_directory);
  tcase_add_test(tc, planted_link_not_followed);
  tcase_add_test(tc, planted_files_refused);
  tcase_add_test(tc, compaction_temp_not_followed);
  tcase_add_test(tc, unsafe_directories);
  tcase_add_test(tc, old_format_removed);
  tcase_add_test(tc, lying_records_never_cut_nor_pad);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
