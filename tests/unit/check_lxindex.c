/* check_lxindex.c - the persistent layout index: round trip across opens,
 * no record for an identity that differs in any field, misses (never a
 * wrong record, never a crash) from corrupted, truncated and concurrently
 * written files, and the size cap. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../src/store/lxindex.h"
#include "testutil.h"

/* A fresh directory for one test (static storage). */
static const char *tmpdir(void) {
  static char d[64];
  snprintf(d, sizeof d, "/tmp/check_lxindex.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d));
  return d;
}

/* The one index file of dir (static storage), or NULL. */
static const char *index_file(const char *dir) {
  static char p[512];
  DIR *d = opendir(dir);
  struct dirent *de;
  const char *found = NULL;
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "lx2-", 4)) {
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      found = p;
    }
  if (d)
    closedir(d);
  return found;
}

/* Identity number i of location loc (key built in kb). */
static struct lxindex_id ident(const char *loc, char *kb, size_t kl, int i) {
  snprintf(kb, kl, "arr/c/%d/0", i);
  return (struct lxindex_id){loc,
                             kb,
                             1000 + (uint64_t)i,
                             1700000000123456789,
                             0xfeedull * (uint64_t)(i + 1),
                             1};
}

/* The record every test stores for identity i. */
static struct lxindex_rec rec_of(int i) {
  return (struct lxindex_rec){(uint64_t)i * 977 + 5, (uint64_t)i + 1};
}

/* Does id i look up as its own record, or as a miss (never another)? */
static int check_i(struct lxindex *x, const char *loc, int i) {
  char kb[64];
  struct lxindex_id id = ident(loc, kb, sizeof kb, i);
  struct lxindex_rec r;
  if (!lxindex_lookup(x, &id, &r))
    return 0;
  struct lxindex_rec want = rec_of(i);
  ck_assert_uint_eq(r.text_size, want.text_size);
  ck_assert_uint_eq(r.lines, want.lines);
  return 1;
}

START_TEST(round_trip) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct lxindex *x;
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  char kb[64];
  for (int i = 0; i < 100; i++) {
    struct lxindex_id id = ident("/data/a.zarr", kb, sizeof kb, i);
    struct lxindex_rec r = rec_of(i);
    ck_assert_int_eq(lxindex_store(x, &id, &r), 0);
  }
  for (int i = 0; i < 100; i++)
    ck_assert(check_i(x, "/data/a.zarr", i));
  ck_assert(!check_i(x, "/data/b.zarr", 3)); /* another location */
  lxindex_close(x);
  /* another mount: from the file */
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  for (int i = 0; i < 100; i++)
    ck_assert(check_i(x, "/data/a.zarr", i));
  /* a record equal to the known one is not written again */
  struct stat st0, st1;
  ck_assert_int_eq(stat(index_file(d), &st0), 0);
  struct lxindex_id id = ident("/data/a.zarr", kb, sizeof kb, 7);
  struct lxindex_rec r = rec_of(7);
  ck_assert_int_eq(lxindex_store(x, &id, &r), 0);
  ck_assert_int_eq(stat(index_file(d), &st1), 0);
  ck_assert_int_eq(st0.st_size, st1.st_size);
  lxindex_close(x);
  lxindex_close(NULL);
}
END_TEST

START_TEST(identity_mismatch) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct lxindex *x;
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  char kb[64];
  struct lxindex_id id = ident("/s", kb, sizeof kb, 1);
  struct lxindex_rec r = rec_of(1), got;
  ck_assert_int_eq(lxindex_store(x, &id, &r), 0);
  ck_assert(lxindex_lookup(x, &id, &got));
  for (int f = 0; f < 5; f++) {
    struct lxindex_id o = id;
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
    ck_assert_msg(!lxindex_lookup(x, &o, &got), "field %d", f);
  }
  /* a stale record is replaced by the new identity's */
  struct lxindex_id n = id;
  n.version += 1000;
  struct lxindex_rec r2 = {12345, 2};
  ck_assert_int_eq(lxindex_store(x, &n, &r2), 0);
  ck_assert(!lxindex_lookup(x, &id, &got));
  ck_assert(lxindex_lookup(x, &n, &got));
  ck_assert_uint_eq(got.text_size, 12345);
  lxindex_close(x);
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  ck_assert(!lxindex_lookup(x, &id, &got)); /* also from the file */
  ck_assert(lxindex_lookup(x, &n, &got));
  ck_assert_uint_eq(got.text_size, 12345);
  lxindex_close(x);
}
END_TEST

/* Write N records, then damage the file with f, reopen: every lookup is
 * its own record or a miss; returns the hits. */
static int damaged(void (*f)(const char *path, off_t size)) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct lxindex *x;
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  char kb[64];
  for (int i = 0; i < 200; i++) {
    struct lxindex_id id = ident("/s", kb, sizeof kb, i);
    struct lxindex_rec r = rec_of(i);
    ck_assert_int_eq(lxindex_store(x, &id, &r), 0);
  }
  lxindex_close(x);
  struct stat st;
  ck_assert_int_eq(stat(index_file(d), &st), 0);
  f(index_file(d), st.st_size);
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  int hits = 0;
  for (int i = 0; i < 200; i++)
    hits += check_i(x, "/s", i);
  /* and it still takes new records */
  struct lxindex_id id = ident("/s", kb, sizeof kb, 500);
  struct lxindex_rec r = rec_of(500);
  ck_assert_int_eq(lxindex_store(x, &id, &r), 0);
  lxindex_close(x);
  ck_assert_int_eq(lxindex_open(d, 0, &x, &err), 0);
  ck_assert(check_i(x, "/s", 500));
  lxindex_close(x);
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
  struct lxindex *shared;
};

/* Store 300 records from base on, checking lookups on the way. */
static void *write_many(void *arg) {
  struct writer *w = arg;
  struct zerr err = {0};
  struct lxindex *x = w->shared;
  if (!x && lxindex_open(w->dir, 1 << 20, &x, &err) < 0)
    return (void *)1;
  char kb[64];
  for (int i = w->base; i < w->base + 300; i++) {
    struct lxindex_id id = ident("/s", kb, sizeof kb, i);
    struct lxindex_rec r = rec_of(i);
    lxindex_store(x, &id, &r);
    for (int k = 0; k < 1200; k += 97)
      check_i(x, "/s", k); /* own record or a miss */
  }
  if (!w->shared)
    lxindex_close(x);
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
  struct lxindex *x;
  ck_assert_int_eq(lxindex_open(d, 1 << 20, &x, &err), 0);
  int hits = 0;
  for (int i = 0; i < 1200; i++)
    hits += check_i(x, "/s", i);
  ck_assert_int_eq(hits, 1200); /* whole appends do not interleave */
  lxindex_close(x);
}
END_TEST

START_TEST(concurrent_threads_and_compaction) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct lxindex *x;
  /* a small cap: the writers compact each other's file all along */
  ck_assert_int_eq(lxindex_open(d, 16384, &x, &err), 0);
  /* another process on the same directory meanwhile (forked before the
   * threads start: a fork among threads may copy a held allocator lock) */
  pid_t pid = fork();
  if (pid == 0) {
    struct lxindex *y;
    struct zerr e2 = {0};
    if (lxindex_open(d, 16384, &y, &e2) < 0)
      _exit(1);
    struct writer wy = {d, 2000, 1, y};
    write_many(&wy);
    lxindex_close(y);
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
  ck_assert_uint_le(lxindex_dir_bytes(d), 16384);
  int hits = 0;
  for (int i = 0; i < 1200; i++)
    hits += check_i(x, "/s", i);
  ck_assert_int_gt(hits, 0);
  lxindex_close(x);
}
END_TEST

START_TEST(cap_holds) {
  const char *d = tmpdir();
  struct zerr err = {0};
  struct lxindex *x;
  const uint64_t cap = 64 << 10;
  ck_assert_int_eq(lxindex_open(d, cap, &x, &err), 0);
  char kb[64], loc[64];
  for (int i = 0; i < 20000; i++) {
    struct lxindex_id id = ident("/big", kb, sizeof kb, i);
    struct lxindex_rec r = rec_of(i);
    lxindex_store(x, &id, &r);
    ck_assert_uint_le(lxindex_dir_bytes(d), cap);
  }
  for (int i = 19700; i < 20000; i++) /* the newest are kept */
    ck_assert_msg(check_i(x, "/big", i), "record %d", i);
  ck_assert(!check_i(x, "/big", 0));
  /* files of many locations: opening evicts the oldest past the cap */
  for (int l = 0; l < 8; l++) {
    snprintf(loc, sizeof loc, "/loc%d", l);
    for (int i = 0; i < 300; i++) {
      struct lxindex_id id = ident(loc, kb, sizeof kb, i);
      struct lxindex_rec r = rec_of(i);
      lxindex_store(x, &id, &r);
    }
  }
  lxindex_close(x);
  ck_assert_int_eq(lxindex_open(d, cap, &x, &err), 0);
  ck_assert_uint_le(lxindex_dir_bytes(d), cap);
  ck_assert(check_i(x, "/loc7", 299)); /* the newest file stays */
  lxindex_close(x);
}
END_TEST

START_TEST(unusable_directory) {
  struct zerr err = {0};
  struct lxindex *x;
  ck_assert_int_lt(lxindex_open("/proc/self/nonexistent/x", 0, &x, &err), 0);
  ck_assert_ptr_null(x);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lxindex");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, round_trip);
  tcase_add_test(tc, identity_mismatch);
  tcase_add_test(tc, damaged_files);
  tcase_add_test(tc, concurrent_processes);
  tcase_add_test(tc, concurrent_threads_and_compaction);
  tcase_add_test(tc, cap_holds);
  tcase_add_test(tc, unusable_directory);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
