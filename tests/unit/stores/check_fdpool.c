/* check_fdpool.c - the descriptor pool (src/io/fdpool.c) and what it is for:
 * file sources that hold no descriptor between reads (src/io/bytesrc.c), so
 * thousands of cached sources stay under a small limit; EMFILE that stays
 * EMFILE (transient, never EIO); only regular files opened, never blocking
 * (src/store/store_local.c, src/store/confine.c); listings that tell "present but
 * unusable" (STORE_OTHER) from absent.
 *
 * Several tests lower RLIMIT_NOFILE: each test runs in its own forked
 * process (forced below), so the limit does not leak into the others. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../../src/io/bytesrc.h"
#include "../../../src/store/confine.h"
#include "../../../src/io/fdpool.h"
#include "../../../src/store/store.h"
#include "../testutil.h"

/* ---- helpers ---- */

/* Open descriptors of this process (entries of /proc/self/fd, without the
 * one that lists them). */
static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    if (de->d_name[0] != '.')
      n++;
  closedir(d);
  return n - 1;
}

/* Lower the soft RLIMIT_NOFILE (this test's process only: Check forks). */
static void set_nofile(rlim_t soft) {
  struct rlimit rl;
  ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  ck_assert_uint_ge(rl.rlim_max, soft);
  rl.rlim_cur = soft;
  ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
}

/* A fresh temporary directory (static storage, one per test process). */
static const char *tmpdir(void) {
  static char dir[64];
  snprintf(dir, sizeof dir, "/tmp/zarrfs-fdpool-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  return dir;
}

/* Remove dir and everything in it. */
static void rmtree(const char *dir) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* The content of file i: distinct text of a varying length. */
static size_t content(int i, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "file %05d:", i);
  for (int k = 0; k < i % 37; k++)
    n += snprintf(buf + n, cap - (size_t)n, "%c", 'a' + (i + k) % 26);
  return (size_t)n;
}

/* Write dir/name with text. */
static void put(const char *dir, const char *name, const char *text,
                size_t len) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
  close(fd);
}

/* Files f00000 .. f(n-1) in dir. */
static void put_files(const char *dir, int n) {
  for (int i = 0; i < n; i++) {
    char name[32], buf[128];
    snprintf(name, sizeof name, "f%05d", i);
    put(dir, name, buf, content(i, buf, sizeof buf));
  }
}

/* Check that src holds the content of file i (read in two pieces). */
static void expect_content(struct bytesrc *src, int i) {
  char want[128], got[128];
  size_t n = content(i, want, sizeof want);
  struct zerr err = {0};
  ck_assert_uint_eq(src->size, n);
  ck_assert_msg(bytesrc_read_range(src, 0, 5, got, &err) == 0, "%d: %s", i,
                err.msg);
  ck_assert_msg(bytesrc_read_range(src, 5, n - 5, got + 5, &err) == 0, "%d: %s",
                i, err.msg);
  ck_assert_msg(!memcmp(got, want, n), "file %d: wrong bytes", i);
}

/* store_get of "f%05d", asserting success. */
static struct bytesrc *get_file(struct store *s, int i) {
  char key[32];
  snprintf(key, sizeof key, "f%05d", i);
  struct bytesrc *b = NULL;
  struct zerr err = {0};
  ck_assert_msg(store_get(s, key, &b, &err) == 0, "%s: %s", key, err.msg);
  return b;
}

/* ---- the pool itself, with a reopen callback that counts ---- */

struct by_path {
  int calls;
};

/* Reopen name (an absolute path) for the pool, counting the calls. */
static int reopen_by_path(void *ctx, const char *name, int *fd, struct stat *st,
                          struct zerr *err) {
  ((struct by_path *)ctx)->calls++;
  *fd = open(name, O_RDONLY | O_CLOEXEC);
  if (*fd < 0)
    return zerr_set(err, errno, "%s: %s", name, strerror(errno));
  fstat(*fd, st);
  return 0;
}

START_TEST(pool_limits_and_use_counts) {
  const char *dir = tmpdir();
  put_files(dir, 10);
  struct by_path bp = {0};
  struct fdpool *p;
  struct zerr err = {0};
  ck_assert_int_eq(fdpool_new(3, reopen_by_path, &bp, NULL, &p, &err), 0);
  int base = count_fds();
  struct fdpool_file *f[10];
  char path[10][128];
  for (int i = 0; i < 10; i++) {
    snprintf(path[i], sizeof path[i], "%s/f%05d", dir, i);
    int fd = open(path[i], O_RDONLY | O_CLOEXEC);
    struct stat st;
    ck_assert_int_eq(fstat(fd, &st), 0);
    ck_assert_int_eq(fdpool_adopt(p, fd, &st, &f[i], &err), 0);
  }
  struct fdpool_stats ps;
  fdpool_get_stats(p, &ps);
  ck_assert_uint_eq(ps.limit, 3);
  ck_assert_uint_eq(ps.open, 3); /* the 7 oldest were closed */
  ck_assert_uint_eq(ps.files, 10);
  ck_assert_int_eq(count_fds(), base + 3);

  /* A closed one is reopened through the callback, by its name. */
  int fd0, re;
  ck_assert_int_eq(fdpool_checkout(f[0], path[0], &fd0, &re, &err), 0);
  ck_assert_int_eq(re, 1);
  ck_assert_int_eq(bp.calls, 1);
  char c;
  ck_assert_int_eq(pread(fd0, &c, 1, 0), 1);
  /* A second checkout of the same file shares the descriptor. */
  int fd0b;
  ck_assert_int_eq(fdpool_checkout(f[0], path[0], &fd0b, &re, &err), 0);
  ck_assert_int_eq(fd0b, fd0);
  ck_assert_int_eq(re, 0);
  /* Descriptors in use are never closed, even far above the limit. */
  int fds[10];
  for (int i = 1; i < 10; i++)
    ck_assert_int_eq(fdpool_checkout(f[i], path[i], &fds[i], &re, &err), 0);
  fdpool_get_stats(p, &ps);
  ck_assert_uint_eq(ps.open, 10);
  ck_assert_uint_eq(ps.idle, 0);
  for (int i = 1; i < 10; i++) {
    ck_assert_int_eq(pread(fds[i], &c, 1, 0), 1);
    fdpool_checkin(f[i]);
  }
  /* Back to the limit once idle; fd0 is still in use (twice) and open. */
  fdpool_get_stats(p, &ps);
  ck_assert_uint_eq(ps.open, 3);
  ck_assert_int_eq(pread(fd0, &c, 1, 0), 1);
  fdpool_checkin(f[0]);
  ck_assert_int_eq(pread(fd0, &c, 1, 0), 1);
  fdpool_checkin(f[0]);
  fdpool_get_stats(p, &ps);
  ck_assert_uint_le(ps.open, 3);
  ck_assert_uint_eq(fdpool_shed(p), ps.open);
  fdpool_get_stats(p, &ps);
  ck_assert_uint_eq(ps.open, 0);
  ck_assert_int_eq(count_fds(), base);

  /* The same dev/ino adopted again shares the entry (and its descriptor). */
  struct fdpool_file *again;
  int fd = open(path[4], O_RDONLY | O_CLOEXEC);
  struct stat st;
  fstat(fd, &st);
  ck_assert_int_eq(fdpool_adopt(p, fd, &st, &again, &err), 0);
  ck_assert_ptr_eq(again, f[4]);
  fd = open(path[4], O_RDONLY | O_CLOEXEC);
  ck_assert_int_eq(fdpool_adopt(p, fd, &st, &again, &err), 0);
  fdpool_get_stats(p, &ps);
  ck_assert_uint_eq(ps.open, 1);
  ck_assert_uint_eq(ps.files, 10);
  ck_assert_int_eq(count_fds(), base + 1);
  fdpool_release(again);
  fdpool_release(again);

  /* A file replaced behind the pool's back fails its reopen with EIO. */
  fdpool_shed(p);
  char tmp[160];
  snprintf(tmp, sizeof tmp, "%s/new", dir);
  put(dir, "new", "other", 5);
  ck_assert_int_eq(rename(tmp, path[5]), 0);
  ck_assert_int_eq(fdpool_checkout(f[5], path[5], &fd, &re, &err), -EIO);
  ck_assert_str_eq(err.msg, "file replaced while mounted");

  /* The pool (and its context) lives until the last entry goes. */
  fdpool_unref(p);
  ck_assert_int_eq(fdpool_checkout(f[6], path[6], &fd, &re, &err), 0);
  fdpool_checkin(f[6]);
  for (int i = 0; i < 10; i++)
    fdpool_release(f[i]);
  ck_assert_int_eq(count_fds(), base);
  fdpool_unref(NULL);
  fdpool_release(NULL);
  rmtree(dir);
}
END_TEST

START_TEST(default_limit_from_rlimit) {
  set_nofile(64);
  ck_assert_uint_eq(fdpool_default_limit(), 16);
  set_nofile(8);
  ck_assert_uint_eq(fdpool_default_limit(), 8);
  set_nofile(4096);
  ck_assert_uint_eq(fdpool_default_limit(), 256);
}
END_TEST

/* ---- stores and confines: many sources, few descriptors ---- */

#define MANY 2000

START_TEST(many_sources_stay_under_limit) {
  /* 200 descriptors in all: holding 2,000 files open would fail. */
  set_nofile(200);
  const char *dir = tmpdir();
  put_files(dir, MANY);
  int base = count_fds();
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  unsigned limit = fdpool_default_limit(); /* 50 */
  ck_assert_uint_eq(limit, 50);
  static struct bytesrc *src[MANY];
  int peak = 0;
  for (int i = 0; i < MANY; i++) {
    src[i] = get_file(s, i);
    if (i % 97 == 0 && count_fds() > peak)
      peak = count_fds();
  }
  ck_assert_int_le(count_fds(), base + 1 + (int)limit); /* + the root */
  ck_assert_int_le(peak, base + 1 + (int)limit);
  uint64_t opens = atomic_load(&s->stats.opens);
  ck_assert_uint_eq(opens, MANY);
  /* Every source still reads its own bytes, mostly through a reopen. */
  for (int i = 0; i < MANY; i++)
    expect_content(src[i], i);
  ck_assert_uint_ge(atomic_load(&s->stats.opens), opens + MANY - limit);
  ck_assert_int_le(count_fds(), base + 1 + (int)limit);
  /* Windows keep working the same way (a vlen data section). */
  struct bytesrc *w;
  ck_assert_int_eq(bytesrc_sub(src[7], 2, 3, &w, &err), 0);
  char b3[4] = {0};
  ck_assert_int_eq(bytesrc_read_range(w, 0, 3, b3, &err), 0);
  ck_assert_str_eq(b3, "le ");
  bytesrc_unref(w);
  /* Sources may be dropped after their store is freed (the pool stays
   * until the last one; reading them then is not allowed: the store owns
   * the counters they bump). */
  store_free(s);
  for (int i = 0; i < MANY; i++)
    bytesrc_unref(src[i]);
  ck_assert_int_eq(count_fds(), base);
  rmtree(dir);
}
END_TEST

START_TEST(same_file_shares_one_descriptor) {
  const char *dir = tmpdir();
  put_files(dir, 2);
  char a[128], b[128];
  snprintf(a, sizeof a, "%s/f00000", dir);
  snprintf(b, sizeof b, "%s/hard", dir);
  ck_assert_int_eq(link(a, b), 0);
  int base = count_fds();
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *src[101];
  for (int i = 0; i < 100; i++)
    src[i] = get_file(s, 0);
  ck_assert_int_eq(store_get(s, "hard", &src[100], &err), 0);
  ck_assert_int_eq(count_fds(), base + 2); /* the root and one file */
  for (int i = 0; i <= 100; i++) {
    expect_content(src[i], 0);
    bytesrc_unref(src[i]);
  }
  ck_assert_int_eq(count_fds(), base + 1);
  store_free(s);
  ck_assert_int_eq(count_fds(), base);
  rmtree(dir);
}
END_TEST

START_TEST(confine_targets_stay_under_limit) {
  set_nofile(200);
  const char *dir = tmpdir();
  put_files(dir, MANY);
  int base = count_fds();
  struct confine *c;
  struct zerr err = {0};
  ck_assert_int_eq(confine_new(&c, &err), 0);
  ck_assert_int_eq(confine_add_root(c, dir, &err), 0);
  struct io_stats st = {0};
  static struct bytesrc *src[MANY];
  for (int i = 0; i < MANY; i++) {
    char p[128];
    snprintf(p, sizeof p, "%s/f%05d", dir, i);
    ck_assert_msg(confine_open(c, p, &st, &src[i], &err) == 0, "%s", err.msg);
  }
  ck_assert_int_le(count_fds(), base + 50);
  confine_free(c); /* sources outlive it (their counters are ours) */
  for (int i = 0; i < MANY; i++) {
    expect_content(src[i], i);
    bytesrc_unref(src[i]);
  }
  ck_assert_uint_gt(atomic_load(&st.opens), MANY);
  ck_assert_int_eq(count_fds(), base);
  rmtree(dir);
}
END_TEST

/* ---- threads ---- */

#define NSRC 300

struct reader {
  struct store *s;
  struct bytesrc **src;
  unsigned seed;
  int churn; /* also open and drop sources of its own */
  int failures;
  char msg[1024];
};

/* Read random sources (and, when churning, get and drop new ones). */
static void *reader_main(void *ud) {
  struct reader *r = ud;
  for (int k = 0; k < 3000 && !r->failures; k++) {
    int i = (int)(rand_r(&r->seed) % NSRC);
    struct bytesrc *b = r->src[i], *own = NULL;
    struct zerr err = {0};
    if (r->churn && k % 3 == 0) {
      char key[32];
      snprintf(key, sizeof key, "f%05d", i);
      if (store_get(r->s, key, &own, &err) < 0) {
        r->failures++;
        snprintf(r->msg, sizeof r->msg, "get %s: %s", key, err.msg);
        break;
      }
      b = own;
    }
    char want[128], got[128];
    size_t n = content(i, want, sizeof want);
    size_t off = (size_t)(rand_r(&r->seed) % n);
    if (bytesrc_read_range(b, off, n - off, got, &err) < 0 ||
        memcmp(got, want + off, n - off)) {
      r->failures++;
      snprintf(r->msg, sizeof r->msg, "file %d at %zu: %s", i, off, err.msg);
    }
    bytesrc_unref(own);
  }
  return NULL;
}

START_TEST(concurrent_readers) {
  set_nofile(64); /* a pool of 16, readers churning through 300 files */
  const char *dir = tmpdir();
  put_files(dir, NSRC);
  int base = count_fds();
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *src[NSRC];
  for (int i = 0; i < NSRC; i++)
    src[i] = get_file(s, i);
  pthread_t th[8];
  struct reader r[8];
  for (int t = 0; t < 8; t++) {
    r[t] = (struct reader){s, src, (unsigned)t * 7919u + 1, t % 2, 0, ""};
    ck_assert_int_eq(pthread_create(&th[t], NULL, reader_main, &r[t]), 0);
  }
  for (int t = 0; t < 8; t++) {
    pthread_join(th[t], NULL);
    ck_assert_msg(r[t].failures == 0, "thread %d: %s", t, r[t].msg);
  }
  ck_assert_int_le(count_fds(), base + 1 + 16);
  for (int i = 0; i < NSRC; i++)
    bytesrc_unref(src[i]);
  store_free(s);
  ck_assert_int_eq(count_fds(), base);
  rmtree(dir);
}
END_TEST

/* ---- a file replaced while mounted ---- */

START_TEST(replaced_file_detected) {
  set_nofile(32); /* a pool of 8 */
  const char *dir = tmpdir();
  put_files(dir, 30);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *src[30];
  for (int i = 0; i < 30; i++)
    src[i] = get_file(s, i); /* f00000's descriptor is long closed */
  char from[128], to[128];
  snprintf(from, sizeof from, "%s/new", dir);
  snprintf(to, sizeof to, "%s/f00000", dir);
  put(dir, "new", "file 00000:XYZ", 11);
  ck_assert_int_eq(rename(from, to), 0);
  char buf[16];
  ck_assert_int_eq(bytesrc_read_range(src[0], 0, 4, buf, &err), -EIO);
  ck_assert_str_eq(err.msg, "file replaced while mounted");
  expect_content(src[1], 1); /* the others are fine */
  struct bytesrc *fresh = get_file(s, 0);
  ck_assert_uint_eq(fresh->size, 11);
  ck_assert_int_eq(bytesrc_read_range(fresh, 0, 11, buf, &err), 0);
  bytesrc_unref(fresh);
  /* A file that vanished is an error of the read, not a crash. */
  snprintf(to, sizeof to, "%s/f00002", dir);
  ck_assert_int_eq(unlink(to), 0);
  for (int i = 3; i < 30; i++) /* push f00002's descriptor out */
    expect_content(src[i], i);
  ck_assert_int_eq(bytesrc_read_range(src[2], 0, 4, buf, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "cannot open again"), "%s", err.msg);
  for (int i = 0; i < 30; i++)
    bytesrc_unref(src[i]);
  store_free(s);
  rmtree(dir);
}
END_TEST

START_TEST(rewritten_in_place_detected) {
  /* The same inode rewritten (new bytes, new mtime): a source made before
   * fails its reads rather than mixing versions; a new one reads the new
   * bytes. */
  const char *dir = tmpdir();
  put_files(dir, 2);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *old = get_file(s, 0);
  expect_content(old, 0);
  char p[256];
  snprintf(p, sizeof p, "%s/f00000", dir);
  int fd = open(p, O_WRONLY);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(pwrite(fd, "FILE", 4, 0), 4);
  struct timespec ts[2] = {{0, UTIME_OMIT}, {0, 0}};
  clock_gettime(CLOCK_REALTIME, &ts[1]);
  ts[1].tv_sec += 10;
  ck_assert_int_eq(futimens(fd, ts), 0);
  close(fd);
  char buf[16];
  ck_assert_int_eq(bytesrc_read_range(old, 0, 4, buf, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "file changed while mounted"), "%s", err.msg);
  struct bytesrc *fresh = get_file(s, 0);
  ck_assert_int_eq(bytesrc_read_range(fresh, 0, 4, buf, &err), 0);
  ck_assert(!memcmp(buf, "FILE", 4));
  struct bytesrc *other = get_file(s, 1);
  expect_content(other, 1);
  bytesrc_unref(old);
  bytesrc_unref(fresh);
  bytesrc_unref(other);
  store_free(s);
  rmtree(dir);
}
END_TEST

/* ---- the confine's cache of opened targets ---- */

/* confine_open of dir/name, asserting success. */
static struct bytesrc *confine_get(struct confine *c, const char *dir,
                                   const char *name, struct io_stats *st) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  struct bytesrc *b = NULL;
  struct zerr err = {0};
  ck_assert_msg(confine_open(c, p, st, &b, &err) == 0, "%s: %s", p, err.msg);
  return b;
}

/* A confine allowing dir, asserting success. */
static struct confine *confine_at(const char *dir) {
  struct confine *c;
  struct zerr err = {0};
  ck_assert_int_eq(confine_new(&c, &err), 0);
  ck_assert_int_eq(confine_add_root(c, dir, &err), 0);
  return c;
}

/* Open and read f00001 .. f(n-1) once each, so that the pool (and the
 * cache) move on from f00000. */
static void push_out(struct confine *c, const char *dir, int n) {
  for (int i = 1; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%05d", i);
    struct bytesrc *b = confine_get(c, dir, name, NULL);
    expect_content(b, i);
    bytesrc_unref(b);
  }
}

START_TEST(confine_cache_hits_and_replaced_file) {
  set_nofile(32); /* a pool of 8 */
  const char *dir = tmpdir();
  put_files(dir, 30);
  struct confine *c = confine_at(dir);
  struct zerr err = {0};
  struct io_stats st = {0};
  struct bytesrc *a = confine_get(c, dir, "f00000", &st);
  struct bytesrc *b = confine_get(c, dir, "f00000", &st);
  size_t entries;
  uint64_t hits;
  confine_cache_stats(c, &entries, &hits);
  ck_assert_uint_eq(entries, 1);
  ck_assert_uint_eq(hits, 1);
  ck_assert_ptr_eq(a, b); /* the same source, no second open */
  ck_assert_uint_eq(atomic_load(&st.opens), 1);
  expect_content(b, 0);
  bytesrc_unref(b);
  /* Other counters: a source of their own. */
  struct io_stats st2 = {0};
  b = confine_get(c, dir, "f00000", &st2);
  ck_assert_ptr_ne(a, b);
  ck_assert_uint_eq(atomic_load(&st2.opens), 1);
  bytesrc_unref(b);

  /* Replaced while the pool holds its descriptor: still the old inode. */
  char from[128], to[128];
  snprintf(from, sizeof from, "%s/new", dir);
  snprintf(to, sizeof to, "%s/f00000", dir);
  put(dir, "new", "file 00000:XYZ", 14);
  ck_assert_int_eq(rename(from, to), 0);
  b = confine_get(c, dir, "f00000", &st2);
  expect_content(b, 0);
  bytesrc_unref(b);
  /* Once the pool closed it: the old source fails as before, and a new
   * open checks the path again and finds the new file. */
  push_out(c, dir, 30);
  char buf[16];
  ck_assert_int_eq(bytesrc_read_range(a, 0, 4, buf, &err), -EIO);
  ck_assert_str_eq(err.msg, "file replaced while mounted");
  b = confine_get(c, dir, "f00000", &st);
  ck_assert_ptr_ne(a, b);
  ck_assert_uint_eq(b->size, 14);
  ck_assert_int_eq(bytesrc_read_range(b, 0, 14, buf, &err), 0);
  ck_assert(!memcmp(buf, "file 00000:XYZ", 14));
  bytesrc_unref(b);
  bytesrc_unref(a);
  confine_free(c);
  rmtree(dir);
}
END_TEST

START_TEST(confine_cache_swapped_link_stays_inside) {
  set_nofile(32); /* a pool of 8 */
  const char *top = tmpdir();
  char dir[128], out[128], link[160], target[160];
  snprintf(dir, sizeof dir, "%s/in", top);
  snprintf(out, sizeof out, "%s/out", top);
  ck_assert_int_eq(mkdir(dir, 0755), 0);
  ck_assert_int_eq(mkdir(out, 0755), 0);
  put_files(dir, 30);
  put(out, "secret", "SECRET", 6);
  snprintf(link, sizeof link, "%s/link", dir);
  ck_assert_int_eq(symlink("f00000", link), 0);
  int base = count_fds();
  struct confine *c = confine_at(dir);
  struct zerr err = {0};
  struct bytesrc *a = confine_get(c, dir, "link", NULL);
  expect_content(a, 0);
  /* Swap the link to point outside: the cached open still names the
   * inode checked before, never the secret. */
  snprintf(target, sizeof target, "%s/secret", out);
  ck_assert_int_eq(unlink(link), 0);
  ck_assert_int_eq(symlink(target, link), 0);
  struct bytesrc *b = confine_get(c, dir, "link", NULL);
  expect_content(b, 0);
  bytesrc_unref(b);
  /* Once the pool closed it: refused like any path outside the roots,
   * and the old source's reopen fails instead of reading the secret. */
  push_out(c, dir, 30);
  b = NULL;
  ck_assert_int_eq(confine_open(c, link, NULL, &b, &err), -EACCES);
  ck_assert_ptr_null(b);
  char buf[8];
  ck_assert_int_eq(bytesrc_read_range(a, 0, 4, buf, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "outside the allowed roots"), "%s", err.msg);
  bytesrc_unref(a);
  confine_free(c);
  ck_assert_int_eq(count_fds(), base);
  rmtree(top);
}
END_TEST

START_TEST(confine_cache_is_bounded) {
  set_nofile(200); /* a pool of 50 */
  const char *dir = tmpdir();
  put_files(dir, 2000);
  int base = count_fds();
  struct confine *c = confine_at(dir);
  struct io_stats st = {0};
  for (int i = 0; i < 2000; i++) {
    char name[32];
    snprintf(name, sizeof name, "f%05d", i);
    struct bytesrc *b = confine_get(c, dir, name, &st);
    expect_content(b, i);
    bytesrc_unref(b);
  }
  size_t entries;
  uint64_t hits;
  confine_cache_stats(c, &entries, &hits);
  ck_assert_uint_gt(entries, 100);
  ck_assert_uint_le(entries, 256);
  ck_assert_uint_eq(hits, 0);
  ck_assert_uint_eq(atomic_load(&st.opens), 2000);
  ck_assert_int_le(count_fds(), base + 50);
  /* The last one is still open in the pool: a hit. */
  struct bytesrc *b = confine_get(c, dir, "f01999", &st);
  confine_cache_stats(c, &entries, &hits);
  ck_assert_uint_eq(hits, 1);
  ck_assert_uint_eq(atomic_load(&st.opens), 2000);
  confine_free(c);
  expect_content(b, 1999); /* outlives the confine */
  bytesrc_unref(b);
  ck_assert_int_eq(count_fds(), base);
  rmtree(dir);
}
END_TEST

struct cache_reader {
  struct confine *c;
  const char *dir;
  int fails;
};

/* Open and read a few paths over and over (the cache under threads). */
static void *cache_reader_main(void *ud) {
  struct cache_reader *r = ud;
  for (int k = 0; k < 3000; k++) {
    int i = (k * 7) % 5;
    char p[128], want[128], got[128];
    snprintf(p, sizeof p, "%s/f%05d", r->dir, i);
    size_t n = content(i, want, sizeof want);
    struct bytesrc *b = NULL;
    struct zerr err = {0};
    if (confine_open(r->c, p, NULL, &b, &err) < 0 || b->size != n ||
        bytesrc_read_range(b, 0, n, got, &err) < 0 || memcmp(got, want, n))
      r->fails++;
    bytesrc_unref(b);
  }
  return NULL;
}

START_TEST(confine_cache_threads) {
  /* The cache is direct-mapped by a hash of the path, and the directory's
   * name is random: two of the five paths may share a slot and take turns
   * in it, whatever the threads do. So the directory is made again until
   * the five paths hold five slots, and hits are counted from there. */
  const char *dir = NULL;
  struct confine *c = NULL;
  size_t entries = 0;
  uint64_t hits0 = 0, hits;
  for (int tries = 0; tries < 50 && entries != 5; tries++) {
    if (c) {
      confine_free(c);
      rmtree(dir);
    }
    dir = tmpdir();
    put_files(dir, 5);
    c = confine_at(dir);
    for (int i = 0; i < 5; i++) {
      char p[128];
      snprintf(p, sizeof p, "%s/f%05d", dir, i);
      struct bytesrc *b = NULL;
      struct zerr err = {0};
      ck_assert_int_eq(confine_open(c, p, NULL, &b, &err), 0);
      bytesrc_unref(b);
    }
    confine_cache_stats(c, &entries, &hits0);
  }
  ck_assert_uint_eq(entries, 5);
  pthread_t th[4];
  struct cache_reader r[4];
  for (int i = 0; i < 4; i++) {
    r[i] = (struct cache_reader){c, dir, 0};
    ck_assert_int_eq(pthread_create(&th[i], NULL, cache_reader_main, &r[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(r[i].fails, 0);
  }
  confine_cache_stats(c, &entries, &hits);
  ck_assert_uint_ge(hits - hits0, 4 * 3000 - 4 * 5);
  confine_free(c);
  rmtree(dir);
}
END_TEST

/* ---- EMFILE is transient ---- */

/* Fill the descriptor table with dup()s; returns how many (*fds malloc'd). */
static int fill_table(int **fds) {
  int cap = 1024, n = 0;
  *fds = malloc(cap * sizeof **fds);
  for (;;) {
    int fd = dup(0);
    if (fd < 0) {
      ck_assert_int_eq(errno, EMFILE);
      return n;
    }
    if (n == cap)
      *fds = realloc(*fds, (size_t)(cap *= 2) * sizeof **fds);
    (*fds)[n++] = fd;
  }
}

/* Close what fill_table opened. */
static void drain_table(int *fds, int n) {
  for (int i = 0; i < n; i++)
    close(fds[i]);
  free(fds);
}

/* Count listed children. */
static int count_cb(void *ud, const char *name, enum store_entry_type t,
                    uint64_t size, int64_t mtime) {
  (void)mtime;
  (void)name, (void)t, (void)size;
  (*(int *)ud)++;
  return 0;
}

START_TEST(emfile_is_transient) {
  set_nofile(64); /* a pool of 16 */
  const char *dir = tmpdir();
  put_files(dir, 300);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  /* 300 files at once under a limit of 64: fine. */
  struct bytesrc *src[300];
  for (int i = 0; i < 300; i++)
    src[i] = get_file(s, i);
  for (int i = 0; i < 300; i++)
    expect_content(src[i], i);

  /* A full table: the store sheds its idle descriptors and retries. */
  int *fds, n = fill_table(&fds);
  ck_assert_int_gt(n, 0);
  struct bytesrc *b = NULL;
  ck_assert_msg(store_get(s, "f00000", &b, &err) == 0, "%s", err.msg);
  expect_content(b, 0);
  bytesrc_unref(b);

  struct confine *c;
  ck_assert_int_eq(confine_new(&c, &err), 0);
  ck_assert_int_eq(confine_add_root(c, dir, &err), 0);

  /* Full again, nothing idle left to shed: EMFILE, never EIO. */
  int *fds2, n2 = fill_table(&fds2);
  zerr_clear(&err);
  ck_assert_int_eq(store_get(s, "f00001", &b, &err), -EMFILE);
  ck_assert_int_eq(err.code, EMFILE);
  ck_assert(zerr_is_transient(err.code));
  char buf[8];
  zerr_clear(&err);
  ck_assert_int_eq(bytesrc_read_range(src[100], 0, 4, buf, &err), -EMFILE);
  ck_assert_int_eq(err.code, EMFILE);
  /* The failed opens above gave back the one slot they had: fill it too. */
  int *fds3, n3 = fill_table(&fds3);
  enum store_entry_type t;
  uint64_t size;
  ck_assert_int_eq(store_stat(s, "f00002", &t, &size, &err), -EMFILE);
  int listed = 0;
  ck_assert_int_eq(store_list(s, "", count_cb, &listed, &err), -EMFILE);
  ck_assert_int_eq(listed, 0);

  /* ... and everything works again once descriptors are free. */
  drain_table(fds3, n3);
  drain_table(fds2, n2);
  drain_table(fds, n);
  for (int i = 0; i < 300; i++)
    expect_content(src[i], i);
  ck_assert_int_eq(store_list(s, "", count_cb, &listed, &err), 0);
  ck_assert_int_eq(listed, 300);

  /* The confine's pool behaves the same. */
  char p[128];
  snprintf(p, sizeof p, "%s/f00003", dir);
  n = fill_table(&fds);
  ck_assert_int_eq(confine_open(c, p, NULL, &b, &err), -EMFILE);
  ck_assert_int_eq(err.code, EMFILE);
  drain_table(fds, n);
  ck_assert_int_eq(confine_open(c, p, NULL, &b, &err), 0);
  expect_content(b, 3);
  bytesrc_unref(b);
  confine_free(c);
  for (int i = 0; i < 300; i++)
    bytesrc_unref(src[i]);
  store_free(s);
  rmtree(dir);
}
END_TEST

/* ---- only regular files; listings say what exists ---- */

struct seen {
  char names[64][32];
  int types[64];
  int n;
};

/* Remember each listed child and its type. */
static int seen_cb(void *ud, const char *name, enum store_entry_type t,
                   uint64_t size, int64_t mtime) {
  (void)mtime;
  (void)size;
  struct seen *s = ud;
  ck_assert_int_lt(s->n, 64);
  snprintf(s->names[s->n], sizeof s->names[0], "%s", name);
  s->types[s->n++] = (int)t;
  return 0;
}

/* The listed type of name, or 0 when it is not listed. */
static int seen_type(const struct seen *s, const char *name) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->names[i], name))
      return s->types[i];
  return 0;
}

/* A bound AF_UNIX socket at path (kept open: fd returned). */
static int make_socket(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  struct sockaddr_un a = {.sun_family = AF_UNIX};
  ck_assert_uint_lt(strlen(path), sizeof a.sun_path);
  strcpy(a.sun_path, path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  return fd;
}

/* A blocked open: fail the test instead of hanging it. */
static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "check_fdpool: opening blocked (FIFO?)\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(3);
}

START_TEST(special_files_refused_and_listed) {
  signal(SIGALRM, on_alarm);
  alarm(20); /* a regression blocks in open(): fail, do not hang */
  const char *dir = tmpdir();
  char p[256], out[64];
  put(dir, "plain", "data", 4);
  snprintf(p, sizeof p, "%s/sub", dir);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/fifo", dir);
  ck_assert_int_eq(mkfifo(p, 0600), 0);
  snprintf(p, sizeof p, "%s/sock", dir);
  int sfd = make_socket(p);
  snprintf(p, sizeof p, "%s/escape", dir);
  ck_assert_int_eq(symlink("/etc/passwd", p), 0);
  snprintf(p, sizeof p, "%s/dangling", dir);
  ck_assert_int_eq(symlink("nothere", p), 0);
  snprintf(p, sizeof p, "%s/tofifo", dir);
  ck_assert_int_eq(symlink("fifo", p), 0);
  snprintf(p, sizeof p, "%s/loop", dir);
  ck_assert_int_eq(symlink("loop", p), 0);
  snprintf(p, sizeof p, "%s/null", dir);
  int have_dev = mknod(p, S_IFCHR | 0666, makedev(1, 3)) == 0;
  if (!have_dev) /* no CAP_MKNOD: a link to one is refused all the same */
    ck_assert_int_eq(symlink("/dev/null", p), 0);
  snprintf(out, sizeof out, "%s", dir);

  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *b;
  static const struct {
    const char *key;
    int rc;
    const char *msg;
  } cases[] = {
      {"fifo", -EIO, "not a regular file (FIFO)"},
      {"tofifo", -EIO, "not a regular file (FIFO)"},
      {"sock", -EIO, "not a regular file (socket)"},
      {"sub", -EIO, "not a regular file (directory)"},
      {"escape", -EACCES, "leaves the store"},
      {"loop", -EACCES, ""},
      {"dangling", -ENOENT, ""},
      {"nothere", -ENOENT, ""},
  };
  for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
    zerr_clear(&err);
    int rc = store_get(s, cases[k].key, &b, &err);
    ck_assert_msg(rc == cases[k].rc, "%s: %d (%s)", cases[k].key, rc, err.msg);
    ck_assert_msg(strstr(err.msg, cases[k].msg), "%s: %s", cases[k].key,
                  err.msg);
  }
  zerr_clear(&err);
  int rc = store_get(s, "null", &b, &err);
  if (have_dev) {
    ck_assert_int_eq(rc, -EIO);
    ck_assert_str_eq(err.msg, "not a regular file (character device)");
  } else {
    ck_assert_int_eq(rc, -EACCES);
  }

  struct seen seen = {0};
  ck_assert_int_eq(store_list(s, "", seen_cb, &seen, &err), 0);
  ck_assert_int_eq(seen_type(&seen, "plain"), STORE_FILE);
  ck_assert_int_eq(seen_type(&seen, "sub"), STORE_DIR);
  ck_assert_int_eq(seen_type(&seen, "fifo"), STORE_OTHER);
  ck_assert_int_eq(seen_type(&seen, "tofifo"), STORE_OTHER);
  ck_assert_int_eq(seen_type(&seen, "sock"), STORE_OTHER);
  ck_assert_int_eq(seen_type(&seen, "escape"), STORE_OTHER);
  ck_assert_int_eq(seen_type(&seen, "loop"), STORE_OTHER);
  ck_assert_int_eq(seen_type(&seen, "null"), STORE_OTHER);
  ck_assert_int_eq(seen_type(&seen, "dangling"), 0); /* absent */
  ck_assert_int_eq(seen.n, 8);

  enum store_entry_type t;
  uint64_t size = 1;
  ck_assert_int_eq(store_stat(s, "fifo", &t, &size, &err), 0);
  ck_assert_int_eq(t, STORE_OTHER);
  ck_assert_uint_eq(size, 0);
  ck_assert_int_eq(store_stat(s, "sock", &t, &size, &err), 0);
  ck_assert_int_eq(t, STORE_OTHER);
  ck_assert_int_eq(store_stat(s, "dangling", &t, &size, &err), -ENOENT);
  ck_assert_int_eq(store_stat(s, "escape", &t, &size, &err), -EACCES);
  ck_assert_int_eq(store_get(s, "plain", &b, &err), 0);
  bytesrc_unref(b);
  store_free(s);

  /* confine_open and bytesrc_open_file never block either. */
  struct confine *c;
  ck_assert_int_eq(confine_new(&c, &err), 0);
  ck_assert_int_eq(confine_add_root(c, dir, &err), 0);
  snprintf(p, sizeof p, "%s/fifo", out);
  ck_assert_int_eq(confine_open(c, p, NULL, &b, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "not a regular file (FIFO)"), "%s", err.msg);
  snprintf(p, sizeof p, "%s/sock", out);
  ck_assert_int_eq(confine_open(c, p, NULL, &b, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "(socket)"), "%s", err.msg);
  confine_free(c);
  snprintf(p, sizeof p, "%s/fifo", out);
  ck_assert_int_eq(bytesrc_open_file(p, NULL, &b, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "(FIFO)"), "%s", err.msg);
  alarm(0);
  close(sfd);
  rmtree(dir);
}
END_TEST

/* ---- no /proc: the reopen by name, non-blocking and checked ---- */

/* Hide /proc in a private mount namespace of this (forked) process. */
static int hide_proc(void) {
  if (unshare(CLONE_NEWNS) < 0)
    return -1;
  /* Private first, so that nothing propagates to the rest of the system. */
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
    return -1;
  if (mount("none", "/proc", "tmpfs", 0, NULL) < 0)
    return -1;
  return access("/proc/self/fd", F_OK) == 0 ? -1 : 0;
}

START_TEST(without_proc) {
  const char *dir = tmpdir();
  put_files(dir, 20);
  char p[256];
  snprintf(p, sizeof p, "%s/fifo", dir);
  ck_assert_int_eq(mkfifo(p, 0600), 0);
  ck_assert_int_eq(hide_proc(), 0);
  signal(SIGALRM, on_alarm);
  alarm(20);
  set_nofile(32); /* a pool of 8: most reads reopen */
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *src[20], *b;
  for (int i = 0; i < 20; i++)
    src[i] = get_file(s, i);
  for (int i = 0; i < 20; i++)
    expect_content(src[i], i);
  ck_assert_int_eq(store_get(s, "fifo", &b, &err), -EIO);
  ck_assert_str_eq(err.msg, "not a regular file (FIFO)");
  /* Replaced by a FIFO: the reopen refuses it (and does not block). */
  char f0[256];
  snprintf(f0, sizeof f0, "%s/f00000", dir);
  ck_assert_int_eq(rename(p, f0), 0);
  ck_assert_int_eq(bytesrc_read_range(src[0], 0, 1, p, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "(FIFO)"), "%s", err.msg);
  /* Replaced by another regular file: the identity check refuses it. */
  snprintf(p, sizeof p, "%s/f00001", dir);
  snprintf(f0, sizeof f0, "%s/f00019", dir);
  ck_assert_int_eq(rename(f0, p), 0);
  ck_assert_int_eq(bytesrc_read_range(src[1], 0, 1, p, &err), -EIO);
  ck_assert_str_eq(err.msg, "file replaced while mounted");
  alarm(0);
  for (int i = 0; i < 20; i++)
    bytesrc_unref(src[i]);
  store_free(s);
  /* /proc back (LeakSanitizer needs it at exit), then clean up. */
  ck_assert_int_eq(umount2("/proc", MNT_DETACH), 0);
  rmtree(dir);
}
END_TEST

/* Can this machine hide /proc in a private mount namespace? Probed in a
 * child, so nothing changes here. */
static int can_hide_proc(void) {
  pid_t pid = fork();
  if (pid == 0)
    _exit(hide_proc() == 0 ? 0 : 1);
  int st;
  return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
         WEXITSTATUS(st) == 0;
}

/* Run every test in its own process; SKIP (77) when one cannot run. */
int main(void) {
  if (access("/proc/self/fd", F_OK) != 0) {
    fprintf(stderr, "SKIP: needs /proc/self/fd to count descriptors\n");
    return 77;
  }
  Suite *s = suite_create("fdpool");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, pool_limits_and_use_counts);
  tcase_add_test(tc, default_limit_from_rlimit);
  tcase_add_test(tc, many_sources_stay_under_limit);
  tcase_add_test(tc, same_file_shares_one_descriptor);
  tcase_add_test(tc, confine_targets_stay_under_limit);
  tcase_add_test(tc, concurrent_readers);
  tcase_add_test(tc, replaced_file_detected);
  tcase_add_test(tc, rewritten_in_place_detected);
  tcase_add_test(tc, confine_cache_hits_and_replaced_file);
  tcase_add_test(tc, confine_cache_swapped_link_stays_inside);
  tcase_add_test(tc, confine_cache_is_bounded);
  tcase_add_test(tc, confine_cache_threads);
  tcase_add_test(tc, emfile_is_transient);
  tcase_add_test(tc, special_files_refused_and_listed);
  int proc_test = can_hide_proc();
  if (proc_test)
    tcase_add_test(tc, without_proc);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_set_fork_status(sr, CK_FORK); /* rlimits stay in their test */
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  if (failed)
    return EXIT_FAILURE;
  if (!proc_test) {
    fprintf(stderr, "SKIP: cannot hide /proc in a mount namespace (needs "
                    "CAP_SYS_ADMIN): the no-/proc reopen was not tested\n");
    return 77;
  }
  return EXIT_SUCCESS;
}
