/* check_remote.c - the HTTP transport (src/net/http.c) and remote byte sources
 * (src/net/remote.c) against a real server on 127.0.0.1:
 * tests/integration/faultsrv, the project's fault-injecting server, started
 * here on an ephemeral port. Counts come from the client (http_requests) and
 * the server's log. Also objects that change while read (versions), a server
 * that ignores Range (one stream per object), and the S3 listing parser
 * (src/net/s3.c). Without the server binary the suite skips (exit 77), under
 * CI=true it fails. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../src/net/http.h"
#include "../../../src/net/remote.h"
#include "../../../src/net/remote_int.h" /* RSTREAM_THREAD_NAME */
#include "../../../src/net/s3.h"
#include "../testsrv.h"
#include "../testutil.h"

#define OBJ_SIZE 300000u

static struct testsrv srv;
static char *const root = srv.root, *const base = srv.base,
                   *const logpath = srv.log;

static uint8_t pattern(uint64_t i) { return (uint8_t)(i * 131 + (i >> 8)); }

/* The root the server starts with: "obj" (OBJ_SIZE bytes of pattern) and
 * "small" (5 bytes). */
static void fill_root(const char *dir) {
  char p[400];
  snprintf(p, sizeof p, "%s/obj", dir);
  FILE *f = fopen(p, "wb");
  for (uint64_t i = 0; i < OBJ_SIZE; i++)
    fputc(pattern(i), f);
  fclose(f);
  snprintf(p, sizeof p, "%s/small", dir);
  f = fopen(p, "wb");
  fputs("hello", f);
  fclose(f);
}

/* A client with quick retries. */
static struct http_client *client(int attempts, long stall_ms, long op_ms,
                                  const atomic_int *stop) {
  struct http_config c;
  http_config_default(&c);
  c.max_attempts = attempts;
  c.backoff_base_ms = 5;
  c.backoff_cap_ms = 50;
  c.stall_ms = stall_ms;
  c.op_ms = op_ms;
  c.stop = stop;
  struct http_client *h;
  ck_assert_int_eq(http_client_new(&c, &h, NULL), 0);
  return h;
}

/* Range [off, off+len) of url; returns rc, fills got/total. */
static int get(struct http_client *h, const char *path, uint64_t off,
               size_t len, uint8_t *buf, size_t *got, uint64_t *total,
               struct zerr *err) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", base, path);
  struct http_req r = {.url = url};
  struct http_meta m;
  int rc = http_get_range(h, &r, off, len, buf, got, &m, err);
  if (total)
    *total = rc == 0 ? m.total : UINT64_MAX;
  return rc;
}

static void check_pattern(const uint8_t *b, uint64_t off, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != pattern(off + i))
      ck_abort_msg("byte %zu of the range at %llu differs", i,
                   (unsigned long long)off);
}

START_TEST(test_range_ok) {
  struct http_client *h = client(3, 5000, 20000, NULL);
  uint8_t buf[5000];
  size_t got;
  uint64_t total;
  struct zerr e = {0};
  ck_assert_int_eq(get(h, "/obj", 1000, 5000, buf, &got, &total, &e), 0);
  ck_assert_uint_eq(got, 5000);
  ck_assert_uint_eq(total, OBJ_SIZE);
  check_pattern(buf, 1000, got);
  /* past the end: the bytes up to the end */
  ck_assert_int_eq(get(h, "/obj", OBJ_SIZE - 100, 5000, buf, &got, &total, &e),
                   0);
  ck_assert_uint_eq(got, 100);
  check_pattern(buf, OBJ_SIZE - 100, got);
  /* at the end: nothing, and the size */
  ck_assert_int_eq(get(h, "/obj", OBJ_SIZE, 10, buf, &got, &total, &e), 0);
  ck_assert_uint_eq(got, 0);
  ck_assert_uint_eq(total, OBJ_SIZE);
  /* absent */
  ck_assert_int_eq(get(h, "/nothere", 0, 10, buf, &got, &total, &e), -ENOENT);
  ck_assert_uint_eq(http_requests(h), 4);
  http_client_free(h);
}
END_TEST

START_TEST(test_norange) {
  /* A server that ignores Range: the answer is cut to the range. */
  struct http_client *h = client(3, 5000, 20000, NULL);
  uint8_t buf[3000];
  size_t got;
  uint64_t total;
  struct zerr e = {0};
  ck_assert_int_eq(
      get(h, "/_f/norange/obj", 70000, 3000, buf, &got, &total, &e), 0);
  ck_assert_uint_eq(got, 3000);
  check_pattern(buf, 70000, got);
  ck_assert_uint_eq(total, OBJ_SIZE);
  ck_assert_int_eq(get(h, "/_f/norange/small", 2, 10, buf, &got, &total, &e),
                   0);
  ck_assert_uint_eq(got, 3);
  ck_assert(!memcmp(buf, "llo", 3));
  http_client_free(h);
}
END_TEST

START_TEST(test_retry_then_ok) {
  struct http_client *h = client(4, 5000, 20000, NULL);
  uint8_t buf[100];
  size_t got;
  struct zerr e = {0};
  ck_assert_int_eq(get(h, "/_f/500x2/obj", 10, 100, buf, &got, NULL, &e), 0);
  check_pattern(buf, 10, 100);
  ck_assert_uint_eq(http_requests(h), 3); /* 500, 500, 206 */
  /* 429 with Retry-After: 1, then served */
  ck_assert_int_eq(get(h, "/_f/429/obj", 10, 100, buf, &got, NULL, &e), 0);
  check_pattern(buf, 10, 100);
  ck_assert_uint_eq(http_requests(h), 5);
  http_client_free(h);
}
END_TEST

START_TEST(test_fail_after_retries) {
  struct http_client *h = client(3, 5000, 20000, NULL);
  uint8_t buf[100];
  size_t got;
  struct zerr e = {0};
  ck_assert_int_eq(get(h, "/_f/503/obj", 0, 100, buf, &got, NULL, &e),
                   -ETIMEDOUT);
  ck_assert_msg(strstr(e.msg, "HTTP 503") && strstr(e.msg, "3 attempts"),
                "message: %s", e.msg);
  ck_assert_uint_eq(http_requests(h), 3);

  http_client_free(h);
}
END_TEST

START_TEST(test_short_reset_stall) {
  struct http_client *h = client(2, 400, 20000, NULL);
  static uint8_t buf[OBJ_SIZE];
  size_t got;
  struct zerr e = {0};
  ck_assert_int_eq(get(h, "/_f/short/obj", 0, 100000, buf, &got, NULL, &e),
                   -ETIMEDOUT);
  ck_assert_msg(strstr(e.msg, "2 attempts"), "message: %s", e.msg);
  memset(&e, 0, sizeof e);
  ck_assert_int_eq(get(h, "/_f/reset/obj", 0, 100000, buf, &got, NULL, &e),
                   -ETIMEDOUT);
  memset(&e, 0, sizeof e);
  time_t t0 = time(NULL);
  ck_assert_int_eq(get(h, "/_f/stall/obj", 0, 100000, buf, &got, NULL, &e),
                   -ETIMEDOUT);
  ck_assert_msg(strstr(e.msg, "stalled"), "message: %s", e.msg);
  ck_assert_int_lt(time(NULL) - t0, 15); /* bounded, not a hang */
  /* the server still serves after all that */
  ck_assert_int_eq(get(h, "/obj", 0, 1000, buf, &got, NULL, &e), 0);
  check_pattern(buf, 0, 1000);
  http_client_free(h);
}
END_TEST

static atomic_int stop_flag;

/* Raise the stop flag once client arg's request is under way (counted
 * just before the transfer starts: the server stalls its headers, so the
 * stop lands in the transfer); at most 10 s of polling, never a fixed
 * wait. Raised earlier, the answer is -EINTR all the same. */
static void *raise_stop(void *arg) {
  const struct http_client *h = arg;
  for (int i = 0; i < 5000 && http_requests(h) < 1; i++)
    nanosleep(&(struct timespec){0, 2000000L}, NULL);
  atomic_store(&stop_flag, 1);
  return NULL;
}

START_TEST(test_stop_interrupts) {
  atomic_store(&stop_flag, 0);
  struct http_client *h = client(5, 60000, 120000, &stop_flag);
  pthread_t t;
  pthread_create(&t, NULL, raise_stop, h);
  uint8_t buf[100];
  size_t got;
  struct zerr e = {0};
  time_t t0 = time(NULL);
  ck_assert_int_eq(get(h, "/_f/stallhdr/obj", 0, 100, buf, &got, NULL, &e),
                   -EINTR);
  ck_assert_int_lt(time(NULL) - t0, 10);
  pthread_join(t, NULL);
  http_client_free(h);
}
END_TEST

/* ---- remote byte sources ---- */

static struct remote *remote_make(size_t block) {
  struct remote_config c;
  remote_config_default(&c);
  c.block_size = block;
  c.max_request = 4 * block;
  c.http.backoff_base_ms = 5;
  struct remote *r;
  ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
  return r;
}

START_TEST(test_remote_blocks) {
  struct remote *r = remote_make(4096);
  char url[512];
  snprintf(url, sizeof url, "%s/obj", base);
  struct bytesrc *s;
  struct zerr e = {0};
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
  ck_assert_uint_eq(s->size, OBJ_SIZE);
  ck_assert_uint_eq(remote_requests(r), 1); /* the size came with block 0 */
  uint8_t buf[100];
  ck_assert_int_eq(bytesrc_read_range(s, 10, 100, buf, &e), 0);
  check_pattern(buf, 10, 100);
  ck_assert_uint_eq(remote_requests(r), 1); /* block 0 was cached */
  /* a second source of the same URL shares blocks and the size */
  struct bytesrc *s2;
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s2, &e), 0);
  ck_assert_int_eq(bytesrc_read_range(s2, 2000, 100, buf, &e), 0);
  check_pattern(buf, 2000, 100);
  ck_assert_uint_eq(remote_requests(r), 1);
  /* a window of the object (a manifest range) */
  struct bytesrc *w;
  ck_assert_int_eq(remote_open(r, url, 150000, 20000, 0, NULL, &w, &e), 0);
  ck_assert_uint_eq(w->size, 20000);
  static uint8_t big[OBJ_SIZE];
  ck_assert_int_eq(bytesrc_read_range(w, 0, 20000, big, &e), 0);
  check_pattern(big, 150000, 20000);
  /* a large read: direct, in parallel parts */
  ck_assert_int_eq(bytesrc_read_range(s, 0, OBJ_SIZE, big, &e), 0);
  check_pattern(big, 0, OBJ_SIZE);
  /* a window past the object's end fails with EIO, naming the URL */
  struct bytesrc *bad;
  ck_assert_int_eq(remote_open(r, url, OBJ_SIZE - 10, 100, 0, NULL, &bad, &e),
                   0);
  ck_assert_int_eq(bytesrc_read_range(bad, 0, 100, buf, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "/obj"), "message: %s", e.msg);
  /* absent objects */
  snprintf(url, sizeof url, "%s/nothere", base);
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &bad, &e),
                   -ENOENT);
  uint64_t n = remote_requests(r);
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &bad, &e),
                   -ENOENT);
  ck_assert_uint_eq(remote_requests(r), n); /* absence remembered */
  bytesrc_unref(s);
  bytesrc_unref(s2);
  bytesrc_unref(w);
  bytesrc_unref(bad);
  remote_free(r);
}
END_TEST

struct par {
  struct bytesrc *s;
  int rc;
};

static void *par_read(void *arg) {
  struct par *p = arg;
  uint8_t buf[1000];
  p->rc = bytesrc_read_range(p->s, 50000, 1000, buf, NULL);
  if (p->rc == 0)
    for (int i = 0; i < 1000; i++)
      if (buf[i] != pattern(50000 + (uint64_t)i))
        p->rc = -EIO;
  return NULL;
}

START_TEST(test_remote_single_flight) {
  /* Eight readers of one block over a slow server: one transfer. */
  struct remote *r = remote_make(4096);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/lat=300/obj", base);
  struct bytesrc *s;
  ck_assert_int_eq(remote_open(r, url, 0, OBJ_SIZE, 0, NULL, &s, NULL), 0);
  ck_assert_uint_eq(remote_requests(r), 0); /* size given: no request */
  pthread_t t[8];
  struct par p[8];
  for (int i = 0; i < 8; i++) {
    p[i].s = s;
    pthread_create(&t[i], NULL, par_read, &p[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(p[i].rc, 0);
  }
  ck_assert_uint_eq(remote_requests(r), 1);
  bytesrc_unref(s);
  remote_free(r);
}
END_TEST

/* The server log's size now (where this test's lines start). */
static long server_log_end(void) {
  struct stat st;
  return stat(logpath, &st) == 0 ? (long)st.st_size : 0;
}

/* Has the server logged, from byte from of its log on, a request whose
 * line holds what? Waits up to 10 s: read-ahead runs on worker threads,
 * whose turn may come late on a loaded machine. */
static int server_logged(long from, const char *what) {
  for (int i = 0; i < 1000; i++) {
    FILE *f = fopen(logpath, "r");
    char line[512];
    int found = 0;
    if (f && fseek(f, from, SEEK_SET) != 0) {
      fclose(f);
      f = NULL;
    }
    while (f && !found && fgets(line, sizeof line, f))
      found = strstr(line, what) != NULL;
    if (f)
      fclose(f);
    if (found)
      return 1;
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  }
  return 0;
}

/* Read [off, off+n) of url through a new source, whose first read is
 * never sequential (so it starts no read-ahead of its own). */
static void read_fresh(struct remote *r, const char *url, uint64_t off,
                       size_t n) {
  struct bytesrc *s;
  uint8_t buf[4096];
  ck_assert_int_eq(remote_open(r, url, 0, OBJ_SIZE, 0, NULL, &s, NULL), 0);
  ck_assert_int_eq(bytesrc_read_range(s, off, n, buf, NULL), 0);
  check_pattern(buf, off, n);
  bytesrc_unref(s);
}

START_TEST(test_remote_readahead) {
  /* Three sequential reads of one block each (blocks 0, 1, 2): the third
   * asks the workers for blocks 4-6 as one run, which the reader never
   * asks for. How many requests the reader makes depends on whether the
   * workers ran before it, so what is checked is the state once they are
   * done: the server saw that run, and blocks 4-6 then cost no request. */
  struct remote *r = remote_make(4096);
  char url[512];
  snprintf(url, sizeof url, "%s/obj", base);
  long log_from = server_log_end();
  struct bytesrc *s;
  ck_assert_int_eq(remote_open(r, url, 0, OBJ_SIZE, 0, NULL, &s, NULL), 0);
  uint8_t buf[4096];
  for (uint64_t off = 0; off < 3 * sizeof buf; off += sizeof buf) {
    ck_assert_int_eq(bytesrc_read_range(s, off, sizeof buf, buf, NULL), 0);
    check_pattern(buf, off, sizeof buf);
  }
  ck_assert_msg(server_logged(log_from, "GET /obj bytes=16384-28671 "),
                "no read-ahead of blocks 4-6 reached the server");
  /* The run's fill is in the memo (pending or ready) since before its
   * request: block 4 waits for it, and blocks 5 and 6 came with it. */
  uint64_t n = remote_requests(r);
  read_fresh(r, url, 4 * 4096, 4096);
  read_fresh(r, url, 6 * 4096, 4096);
  read_fresh(r, url, 5 * 4096, 4096);
  ck_assert_uint_eq(remote_requests(r), n);
  /* The rest of the object, sequentially, with read-ahead in play. */
  for (uint64_t off = 3 * sizeof buf; off < OBJ_SIZE; off += sizeof buf) {
    size_t len = OBJ_SIZE - off < sizeof buf ? OBJ_SIZE - off : sizeof buf;
    ck_assert_int_eq(bytesrc_read_range(s, off, len, buf, NULL), 0);
    check_pattern(buf, off, len);
  }
  bytesrc_unref(s);
  remote_free(r);
}
END_TEST

/* Bytes the server sent for requests whose path holds pat (its log). */
static uint64_t served_bytes(const char *pat) {
  FILE *f = fopen(logpath, "r");
  ck_assert_ptr_nonnull(f);
  char line[2048];
  uint64_t sum = 0;
  while (fgets(line, sizeof line, f)) {
    char *sp = strrchr(line, ' ');
    if (strstr(line, pat) && sp)
      sum += strtoull(sp + 1, NULL, 10);
  }
  fclose(f);
  return sum;
}

/* Lines of the server's log whose request holds pat. */
static uint64_t served_answers(const char *pat) {
  FILE *f = fopen(logpath, "r");
  ck_assert_ptr_nonnull(f);
  char line[2048];
  uint64_t n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, pat) != NULL;
  fclose(f);
  return n;
}

/* served_bytes once the server has logged every one of the nreq requests
 * the client made for pat and at least want bytes (it logs an answer
 * after its last byte is sent, so a client may have them all before the
 * line is written), or after 5 s: then whatever it says. With every
 * request logged, no late extra answer can follow: no fixed settle. */
static uint64_t served_settled(const char *pat, uint64_t want, uint64_t nreq) {
  for (int i = 0; i < 2500 && (served_bytes(pat) < want ||
                               served_answers(pat) < nreq);
       i++)
    nanosleep(&(struct timespec){0, 2000000L}, NULL);
  return served_bytes(pat);
}

/* Write OBJ_SIZE bytes of pattern (xor x) to root/name. */
static void write_obj(const char *name, uint8_t x) {
  char p[400];
  snprintf(p, sizeof p, "%s/%s", root, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  for (uint64_t i = 0; i < OBJ_SIZE; i++)
    fputc(pattern(i) ^ x, f);
  fclose(f);
}

/* Move root/name's mtime a second past what it was: the etag mode's ETag
 * (size and mtime) changes with no wait for the clock to move. */
static void bump_mtime(const char *name) {
  char p[400];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", root, name);
  ck_assert_int_eq(stat(p, &st), 0);
  struct timespec t[2] = {st.st_atim, st.st_mtim};
  t[1].tv_sec++;
  ck_assert_int_eq(utimensat(AT_FDCWD, p, t, 0), 0);
}

START_TEST(test_changed_every_request) {
  /* A server that names a new version (ETag) on every answer and ignores
   * If-Match: the second answer shows the object changed; every read of
   * it fails from then on, and no read mixes versions. */
  struct remote *r = remote_make(4096);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/etagreq/obj", base);
  struct bytesrc *s, *s2;
  struct zerr e = {0};
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
  uint8_t buf[1000];
  ck_assert_int_eq(bytesrc_read_range(s, 10, 100, buf, &e), 0); /* block 0 */
  check_pattern(buf, 10, 100);
  ck_assert_int_eq(bytesrc_read_range(s, 100000, 1000, buf, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "changed while mounted") && strstr(e.msg, "/obj"),
                "message: %s", e.msg);
  memset(&e, 0, sizeof e);
  ck_assert_int_eq(bytesrc_read_range(s, 10, 100, buf, &e), -EIO);
  /* another source of the object: also refused */
  ck_assert_int_eq(remote_open(r, url, 0, OBJ_SIZE, 0, NULL, &s2, &e), 0);
  ck_assert_int_eq(bytesrc_read_range(s2, 10, 100, buf, &e), -EIO);
  bytesrc_unref(s);
  bytesrc_unref(s2);
  remote_free(r);
}
END_TEST

START_TEST(test_changed_412) {
  /* An object rewritten between two reads, on a server that honours
   * If-Match: a 412, then EIO for every read (small and large), never
   * bytes of both versions. */
  write_obj("chg", 0);
  struct remote *r = remote_make(4096);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/etag/chg", base);
  struct bytesrc *s;
  struct zerr e = {0};
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
  static uint8_t big[OBJ_SIZE];
  ck_assert_int_eq(bytesrc_read_range(s, 0, 100, big, &e), 0);
  check_pattern(big, 0, 100);
  write_obj("chg", 0x5a);
  bump_mtime("chg"); /* a new ETag, whatever the clock's granularity */
  ck_assert_int_eq(bytesrc_read_range(s, 0, OBJ_SIZE, big, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "changed while mounted"), "message: %s", e.msg);
  memset(&e, 0, sizeof e);
  ck_assert_int_eq(bytesrc_read_range(s, 200000, 100, big, &e), -EIO);
  ck_assert_int_eq(bytesrc_read_range(s, 0, 100, big, &e), -EIO);
  bytesrc_unref(s);
  remote_free(r);
  /* The same object unchanged on that server: If-Match passes. */
  r = remote_make(4096);
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
  ck_assert_int_eq(bytesrc_read_range(s, 0, 100, big, &e), 0);
  ck_assert_int_eq(bytesrc_read_range(s, 0, OBJ_SIZE, big, &e), 0);
  for (uint64_t i = 0; i < OBJ_SIZE; i++)
    ck_assert_uint_eq(big[i], pattern(i) ^ 0x5a);
  bytesrc_unref(s);
  remote_free(r);
}
END_TEST

/* A file of size zero bytes (sparse) named name in the server's root,
 * its path in p; open for writing (the caller closes it). */
static FILE *sparse_file(const char *name, uint64_t size, char *p, size_t n) {
  snprintf(p, n, "%s/%s", root, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(ftruncate(fileno(f), (off_t)size), 0);
  return f;
}

START_TEST(test_norange_linear) {
  /* A server that ignores Range, a 512 MiB object read whole in 128 KiB
   * reads through a 64 MiB cache: one stream, at most twice the object
   * fetched (a ranged request per block would read it from 0 each time). */
  const uint64_t size = 512ull << 20;
  char p[400];
  FILE *f = sparse_file("big", size, p, sizeof p);
  for (uint64_t k = 0; k < 16; k++) { /* markers to find again */
    uint64_t at = k * (size / 16) + k * 4099;
    fseeko(f, (off_t)at, SEEK_SET);
    fwrite(&at, sizeof at, 1, f);
  }
  fclose(f);
  struct remote_config c;
  remote_config_default(&c);
  c.http.backoff_base_ms = 5;
  struct remote *r;
  ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/norange/big", base);
  struct bytesrc *s;
  struct zerr e = {0};
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
  ck_assert_uint_eq(s->size, size);
  static uint8_t buf[128 << 10];
  for (uint64_t off = 0; off < size; off += sizeof buf) {
    ck_assert_msg(bytesrc_read_range(s, off, sizeof buf, buf, &e) == 0,
                  "read at %llu: %s", (unsigned long long)off, e.msg);
    for (uint64_t k = 0; k < 16; k++) {
      uint64_t at = k * (size / 16) + k * 4099, v;
      if (at >= off && at + 8 <= off + sizeof buf) {
        memcpy(&v, buf + (at - off), 8);
        ck_assert_uint_eq(v, at);
      }
    }
  }
  uint64_t sent = served_bytes("/_f/norange/big");
  fprintf(stderr, "norange: %llu bytes served for a %llu-byte object\n",
          (unsigned long long)sent, (unsigned long long)size);
  ck_assert_msg(sent <= 2 * size, "%llu bytes served for a %llu-byte object",
                (unsigned long long)sent, (unsigned long long)size);
  bytesrc_unref(s);
  remote_free(r);
  unlink(p);
}
END_TEST

/* Threads of this process now named `name` (/proc/self/task/N/comm). */
static int tasks_named(const char *name) {
  DIR *d = opendir("/proc/self/task");
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *de; (de = readdir(d));) {
    char p[300], comm[64] = "";
    snprintf(p, sizeof p, "/proc/self/task/%s/comm", de->d_name);
    FILE *f = de->d_name[0] != '.' ? fopen(p, "r") : NULL;
    if (!f)
      continue;
    if (fgets(comm, sizeof comm, f))
      comm[strcspn(comm, "\n")] = '\0';
    fclose(f);
    n += !strcmp(comm, name);
  }
  closedir(d);
  return n;
}

START_TEST(test_stream_threads_joined) {
  /* The threads of streams (hosts that ignore Range) are gone when
   * remote_free returns: a thread still in its exit when the daemon's
   * exit runs the libraries' destructors (OpenSSL's at exit, its
   * per-thread state at a thread's end) is a crash after unmount.
   * Streams stopped mid-object and streams ended. Found by their name,
   * not by counting threads: a runtime's own (TSan's) come and go. */
  char p[400];
  fclose(sparse_file("joinbig", 64ull << 20, p, sizeof p));
  for (int round = 0; round < 20; round++) {
    struct remote_config c;
    remote_config_default(&c);
    c.http.backoff_base_ms = 5;
    c.readahead = 1 << 20; /* the stream waits a window ahead of us */
    struct remote *r;
    ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
    char url[512];
    snprintf(url, sizeof url, "%s/_f/norange/%s", base,
             round % 2 ? "joinbig" : "small");
    struct bytesrc *s;
    struct zerr e = {0};
    ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
    uint8_t buf[4096];
    ck_assert_int_eq(bytesrc_read_range(s, 0, 5, buf, &e), 0);
    /* the host is known to ignore Range now: this read is a stream's */
    if (round % 2) {
      ck_assert_int_eq(bytesrc_read_range(s, 3 << 20, 4096, buf, &e), 0);
      /* its stream is a window ahead of us, waiting: running */
      ck_assert_int_ge(tasks_named(RSTREAM_THREAD_NAME), 1);
    }
    bytesrc_unref(s);
    remote_free(r);
    ck_assert_int_eq(tasks_named(RSTREAM_THREAD_NAME), 0);
  }
  unlink(p);
}
END_TEST

/* ---- S3 listings ---- */

struct seen_keys {
  char got[16][64];
  int n, skipped;
};

/* Record an object or a prefix as "o:KEY|RAW" / "p:KEY|RAW". */
static int seen_obj(void *ud, const char *key, const char *raw, uint64_t size) {
  struct seen_keys *k = ud;
  (void)size;
  snprintf(k->got[k->n++], sizeof k->got[0], "o:%s|%s", key, raw);
  return 0;
}

static int seen_prefix(void *ud, const char *key, const char *raw) {
  struct seen_keys *k = ud;
  snprintf(k->got[k->n++], sizeof k->got[0], "p:%s|%s", key, raw);
  return 0;
}

static int seen_skip(void *ud, const char *raw, const char *why) {
  struct seen_keys *k = ud;
  (void)why;
  snprintf(k->got[k->n++], sizeof k->got[0], "skip:%s", raw);
  k->skipped++;
  return 0;
}

START_TEST(test_s3_list_decoding) {
  static const struct s3_list_cbs cbs = {seen_obj, seen_prefix, seen_skip};
  /* <EncodingType> after the keys, as S3 sends it: keys decoded (%XX, '+'
   * a space), NUL bytes and bad escapes handed to skip. */
  const char *enc =
      "<ListBucketResult><IsTruncated>true</IsTruncated>"
      "<Contents><Key>d/a+b%2Bc%01</Key><Size>3</Size></Contents>"
      "<Contents><Key>d/nul%00</Key><Size>1</Size></Contents>"
      "<Contents><Key>d/bad%zz</Key><Size>1</Size></Contents>"
      "<CommonPrefixes><Prefix>d/sub%20dir/</Prefix></CommonPrefixes>"
      "<EncodingType>url</EncodingType>"
      "<NextContinuationToken>t+1</NextContinuationToken>"
      "</ListBucketResult>";
  struct seen_keys k = {0};
  int trunc;
  char *tok;
  struct zerr e = {0};
  ck_assert_int_eq(s3_list_parse(enc, strlen(enc), &cbs, &k, &trunc, &tok, &e),
                   0);
  ck_assert_int_eq(k.n, 4);
  ck_assert_str_eq(k.got[0], "o:d/a b+c\001|d/a+b%2Bc%01");
  ck_assert_str_eq(k.got[1], "skip:d/nul%00");
  ck_assert_str_eq(k.got[2], "skip:d/bad%zz");
  ck_assert_str_eq(k.got[3], "p:d/sub dir/|d/sub%20dir/");
  ck_assert_int_eq(trunc, 1);
  ck_assert_str_eq(tok, "t+1"); /* tokens are never encoded */
  free(tok);
  /* Without <EncodingType> keys are taken as they are. */
  const char *raw = "<ListBucketResult><IsTruncated>false</IsTruncated>"
                    "<Contents><Key>d/a+b%2B</Key><Size>3</Size></Contents>"
                    "</ListBucketResult>";
  memset(&k, 0, sizeof k);
  ck_assert_int_eq(s3_list_parse(raw, strlen(raw), &cbs, &k, &trunc, &tok, &e),
                   0);
  ck_assert_int_eq(k.n, 1);
  ck_assert_str_eq(k.got[0], "o:d/a+b%2B|d/a+b%2B");
  ck_assert_ptr_null(tok);
  /* The request asks for the encoding, its query sorted by name. */
  struct s3_options o = {.endpoint = "http://127.0.0.1:9",
                         .no_sign_request = 1};
  struct s3_config *c;
  ck_assert_int_eq(s3_config_load(&o, &c, &e), 0);
  char *url;
  ck_assert_int_eq(s3_list_url(c, "b", "p q/", "/", "t+1", 1000, &url, &e), 0);
  ck_assert_str_eq(url, "http://127.0.0.1:9/b?continuation-token=t%2B1&"
                        "delimiter=%2F&encoding-type=url&list-type=2&"
                        "max-keys=1000&prefix=p%20q%2F");
  free(url);
  s3_config_free(c);
}
END_TEST

/* ---- fetching ahead across objects (remote_prefetch) ---- */

/* Write n small objects root/NAMEi of size bytes each. */
static void write_objs(const char *name, int n, size_t size) {
  for (int i = 0; i < n; i++) {
    char p[400];
    snprintf(p, sizeof p, "%s/%s%d", root, name, i);
    FILE *f = fopen(p, "wb");
    ck_assert_ptr_nonnull(f);
    for (size_t k = 0; k < size; k++)
      fputc(pattern(k + (uint64_t)i), f);
    fclose(f);
  }
}

/* Wait until no prefetch job is queued or running (at most 60 s). */
static void prefetch_idle(struct remote *r, struct remote_pf_stats *st) {
  for (int i = 0; i < 6000; i++) {
    remote_prefetch_stats(r, st);
    if (!st->queued && !st->inflight)
      return;
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  }
  ck_abort_msg("prefetch jobs still running after 60 s");
}

/* Requests whose path holds pat, in the order the server logged them:
 * a string of the owner letters found at that position (A or B). */
static void served_order(const char *pa, const char *pb, char *out, size_t n) {
  FILE *f = fopen(logpath, "r");
  ck_assert_ptr_nonnull(f);
  char line[2048];
  size_t k = 0;
  while (fgets(line, sizeof line, f) && k + 1 < n) {
    if (strstr(line, pa))
      out[k++] = 'A';
    else if (strstr(line, pb))
      out[k++] = 'B';
  }
  out[k] = '\0';
  fclose(f);
}

START_TEST(test_prefetch_parallel) {
  /* Hints for 16 objects behind 300 ms of latency each are fetched at
   * once (more than one request in flight), and the reads that follow
   * find every byte cached: no request of their own. */
  write_objs("pfa", 16, 1000);
  struct remote *r = remote_make(4096);
  struct remote_hint *h[16];
  int owner;
  char url[512];
  for (int i = 0; i < 16; i++) {
    snprintf(url, sizeof url, "%s/_f/lat=300/pfa%d", base, i);
    ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &owner, &h[i]), 0);
  }
  struct remote_pf_stats st;
  prefetch_idle(r, &st);
  ck_assert_int_gt(st.peak_inflight, 1);
  ck_assert_uint_eq(remote_requests(r), 16);
  uint8_t buf[1000];
  for (int i = 0; i < 16; i++) {
    snprintf(url, sizeof url, "%s/_f/lat=300/pfa%d", base, i);
    struct bytesrc *s;
    ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, NULL), 0);
    ck_assert_uint_eq(s->size, sizeof buf);
    ck_assert_int_eq(bytesrc_read_range(s, 0, sizeof buf, buf, NULL), 0);
    for (size_t k = 0; k < sizeof buf; k++)
      ck_assert_uint_eq(buf[k], pattern(k + (uint64_t)i));
    bytesrc_unref(s);
    remote_hint_drop(r, h[i]);
  }
  ck_assert_uint_eq(remote_requests(r), 16); /* all from the cache */
  remote_prefetch_stats(r, &st);
  ck_assert_uint_eq(st.held, 0);
  remote_free(r);
}
END_TEST

START_TEST(test_prefetch_bounded) {
  /* Hints for far more than the cache holds: what they hold never
   * exceeds the budget (within the cache), objects beyond it are fetched
   * only in part or refused, and bytes come back to the budget as the
   * reader drops its hints. */
  write_objs("pfb", 12, OBJ_SIZE);
  struct remote_config c;
  remote_config_default(&c);
  c.block_size = 4096;
  c.max_request = 4 * 4096;
  c.cache_size = 1u << 20;
  struct remote *r;
  ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
  struct remote_hint *h[12] = {0};
  int owner, accepted = 0;
  char url[512];
  for (int i = 0; i < 12; i++) {
    snprintf(url, sizeof url, "%s/pfb%d", base, i);
    int rc = remote_prefetch(r, url, 0, 0, &owner, &h[i]);
    ck_assert(rc == 0 || rc == -EAGAIN);
    accepted += rc == 0;
    struct remote_pf_stats st;
    remote_prefetch_stats(r, &st);
    ck_assert_uint_le(st.held, st.budget);
  }
  ck_assert_int_gt(accepted, 1);
  struct remote_pf_stats st;
  prefetch_idle(r, &st);
  ck_assert_uint_le(st.budget, c.cache_size);
  ck_assert_uint_le(st.peak_held, st.budget);
  ck_assert_uint_gt(st.peak_held, OBJ_SIZE); /* at least one whole object */
  /* Fetched: at most what the budget holds, plus one block per hint. */
  uint64_t sent = served_bytes("/pfb");
  ck_assert_uint_le(sent, st.budget + 12 * 4096);
  for (int i = 0; i < 12; i++)
    remote_hint_drop(r, h[i]);
  remote_prefetch_stats(r, &st);
  ck_assert_uint_eq(st.held, 0);
  /* Room again: a new hint is taken. */
  struct remote_hint *again;
  snprintf(url, sizeof url, "%s/pfb11", base);
  ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &owner, &again), 0);
  prefetch_idle(r, &st);
  remote_hint_drop(r, again);
  remote_free(r);
}
END_TEST

START_TEST(test_prefetch_fair) {
  /* Two readers, one naming 24 objects before the other names its 24,
   * with 3 workers: once the second's jobs are queued it is served beside
   * the first (a worker takes a job of the reader with the fewest
   * running), not after the first's 24. Checked on the order in the
   * server's log, whatever the moment the second's jobs arrive: the
   * first B comes before the last A, and from there on no long run of A
   * keeps B waiting (first in, first out gives 24 A, then 24 B). */
  write_objs("pfc", 24, 500);
  write_objs("pfd", 24, 500);
  struct remote_config c;
  remote_config_default(&c);
  c.block_size = 4096;
  c.http.max_conns = 4; /* 3 prefetch workers */
  struct remote *r;
  ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
  struct remote_hint *ha[24], *hb[24];
  int a, b;
  char url[512];
  for (int i = 0; i < 24; i++) {
    snprintf(url, sizeof url, "%s/_f/lat=100/pfc%d", base, i);
    ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &a, &ha[i]), 0);
  }
  for (int i = 0; i < 24; i++) {
    snprintf(url, sizeof url, "%s/_f/lat=100/pfd%d", base, i);
    ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &b, &hb[i]), 0);
  }
  struct remote_pf_stats st;
  prefetch_idle(r, &st);
  char order[64];
  served_order("/pfc", "/pfd", order, sizeof order);
  ck_assert_int_eq((int)strlen(order), 48);
  int first_b = (int)(strchr(order, 'B') - order);
  int last_a = (int)(strrchr(order, 'A') - order);
  ck_assert_msg(first_b < last_a, "served in the order %s", order);
  int run = 0, longest = 0;
  for (int i = first_b; i <= last_a; i++) {
    run = order[i] == 'A' ? run + 1 : 0;
    if (run > longest)
      longest = run;
  }
  ck_assert_msg(longest <= 6, "served in the order %s", order);
  for (int i = 0; i < 24; i++) {
    remote_hint_drop(r, ha[i]);
    remote_hint_drop(r, hb[i]);
  }
  remote_free(r);
}
END_TEST

/* Read all of url (size bytes, named; object i of write_objs) in one read
 * and check it. */
static void read_whole(struct remote *r, const char *url, size_t size, int i) {
  struct bytesrc *s;
  uint8_t *buf = malloc(size);
  ck_assert_ptr_nonnull(buf);
  ck_assert_int_eq(remote_open(r, url, 0, size, 0, NULL, &s, NULL), 0);
  ck_assert_int_eq(bytesrc_read_range(s, 0, size, buf, NULL), 0);
  for (size_t k = 0; k < size; k++)
    if (buf[k] != pattern(k + (uint64_t)i))
      ck_abort_msg("%s: byte %zu differs", url, k);
  bytesrc_unref(s);
  free(buf);
}

START_TEST(test_large_read_joins_prefetch) {
  /* A large read of an object a reader hinted takes the blocks the
   * prefetch is bringing (its first block, its runs of max_request in
   * flight or queued) and fetches only what nobody fetches: every byte of
   * the object is served once. Three moments: the read starts while the
   * prefetch asks for the first block; once some runs are in flight
   * (3 workers, 4 runs); and before the hint (the prefetch then leaves
   * alone the blocks the read just had). */
  const size_t size = 4u << 20;
  write_objs("lrj", 3, size);
  struct remote_config c;
  remote_config_default(&c);
  c.block_size = 64u << 10;
  c.max_request = 1u << 20;
  c.http.max_conns = 4; /* 3 prefetch workers */
  struct remote *r;
  ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
  int owner;
  char url[512];
  struct remote_hint *h;
  struct remote_pf_stats st;

  snprintf(url, sizeof url, "%s/_f/lat=200/lrj0", base);
  uint64_t before = remote_requests(r);
  ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &owner, &h), 0);
  read_whole(r, url, size, 0);
  prefetch_idle(r, &st);
  remote_hint_drop(r, h);
  ck_assert_uint_eq(served_settled("/lrj0", size, remote_requests(r) - before),
                    size);

  snprintf(url, sizeof url, "%s/_f/lat=200/lrj1", base);
  before = remote_requests(r);
  ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &owner, &h), 0);
  for (int i = 0; i < 500 && remote_requests(r) < before + 4; i++)
    nanosleep(&(struct timespec){0, 2000000L}, NULL);
  ck_assert_uint_ge(remote_requests(r), before + 4); /* head + 3 runs */
  read_whole(r, url, size, 1);
  prefetch_idle(r, &st);
  remote_hint_drop(r, h);
  ck_assert_uint_eq(served_settled("/lrj1", size, remote_requests(r) - before),
                    size);

  snprintf(url, sizeof url, "%s/_f/lat=200/lrj2", base);
  before = remote_requests(r);
  read_whole(r, url, size, 2);
  ck_assert_int_eq(remote_prefetch(r, url, 0, 0, &owner, &h), 0);
  prefetch_idle(r, &st);
  remote_hint_drop(r, h);
  ck_assert_uint_eq(served_settled("/lrj2", size, remote_requests(r) - before),
                    size);
  remote_free(r);
}
END_TEST

int main(void) {
  if (testsrv_start(&srv, "check-remote", fill_root, NULL) < 0)
    return testsrv_missing("check_remote");
  Suite *s = suite_create("remote");
  TCase *tc = tcase_create("http");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_range_ok);
  tcase_add_test(tc, test_norange);
  tcase_add_test(tc, test_retry_then_ok);
  tcase_add_test(tc, test_fail_after_retries);
  tcase_add_test(tc, test_short_reset_stall);
  tcase_add_test(tc, test_stop_interrupts);
  tcase_add_test(tc, test_remote_blocks);
  tcase_add_test(tc, test_remote_single_flight);
  tcase_add_test(tc, test_remote_readahead);
  tcase_add_test(tc, test_changed_every_request);
  tcase_add_test(tc, test_changed_412);
  tcase_add_test(tc, test_norange_linear);
  tcase_add_test(tc, test_stream_threads_joined);
  tcase_add_test(tc, test_s3_list_decoding);
  tcase_add_test(tc, test_prefetch_parallel);
  tcase_add_test(tc, test_prefetch_bounded);
  tcase_add_test(tc, test_prefetch_fair);
  tcase_add_test(tc, test_large_read_joins_prefetch);
  suite_add_tcase(s, tc);
  int rc = testutil_run(s);
  testsrv_stop(&srv);
  return rc;
}
