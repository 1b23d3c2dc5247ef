/* check_remote_trust.c - what a remote server may not decide
 * (src/net/http.c, src/net/rversion.c), against two real faultsrv
 * instances on 127.0.0.1 (A, the server asked; B, another): credentials
 * reach only the origin asked for when A redirects to B; a redirect a
 * request's scope forbids is refused before B is asked; an encoded body is
 * refused before any byte lands; a body longer than its Content-Length
 * does not break the next request; an object with no validator is read
 * whole, one version per window, by concurrent readers too; a window too
 * large for that is EIO; an answer that names no version after one that
 * did is EIO; If-Unmodified-Since answered without Last-Modified is EIO. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../../../src/net/http.h"
#include "../../../src/net/remote.h"
#include "../../../src/net/rversion.h"
#include "../../../src/net/url.h"
#include "../testsrv.h"
#include "../testutil.h"

#define FLIP_SIZE 65536u
#define ENDL_SIZE 8192u

static struct testsrv a, b;

/* Byte i of version v of the objects that change. */
static uint8_t pat(uint64_t i, int v) {
  return (uint8_t)(i * 131 + (i >> 8) + (unsigned)v * 77);
}

/* n bytes of version v into dir/name. */
static void put(const char *dir, const char *name, size_t n, int v) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  if (!f)
    abort(); /* in main, before any test */
  for (size_t i = 0; i < n; i++)
    fputc(pat(i, v), f);
  fclose(f);
}

/* Both roots hold "obj" (version 0); A also the flipping objects. */
static void fill(const char *dir) {
  put(dir, "obj", 4096, 0);
  put(dir, "flip", FLIP_SIZE, 0);
  put(dir, "flip.alt", FLIP_SIZE, 1);
  put(dir, "endl", ENDL_SIZE, 0);
  put(dir, "endl.alt", ENDL_SIZE, 1);
}

/* Log lines of s that hold what (and auth, when not NULL). */
static int logged(const struct testsrv *s, const char *what, const char *auth) {
  FILE *f = fopen(s->log, "r");
  int n = 0;
  char l[2048];
  while (f && fgets(l, sizeof l, f))
    n += strstr(l, what) && (!auth || strstr(l, auth));
  if (f)
    fclose(f);
  return n;
}

/* logged(), once at least want lines are there (the server writes its
 * line after the answer: polled, at most 5 s). */
static int logged_at_least(const struct testsrv *s, const char *what,
                           const char *auth, int want) {
  int n = 0;
  for (int i = 0; i < 500 && (n = logged(s, what, auth)) < want; i++)
    nanosleep(&(struct timespec){0, 10000000L}, NULL);
  return n;
}

/* A client with quick retries. */
static struct http_client *client(void) {
  struct http_config c;
  http_config_default(&c);
  c.max_attempts = 3;
  c.backoff_base_ms = 5;
  c.backoff_cap_ms = 50;
  struct http_client *h;
  ck_assert_int_eq(http_client_new(&c, &h, NULL), 0);
  return h;
}

/* A remote context of small blocks and cache (bytes). */
static struct remote *remote_small(size_t cache) {
  struct remote_config c;
  remote_config_default(&c);
  c.block_size = 4096;
  c.max_request = 8192;
  c.cache_size = cache;
  c.http.backoff_base_ms = 5;
  struct remote *r;
  ck_assert_int_eq(remote_new(&c, NULL, &r, NULL), 0);
  return r;
}

START_TEST(redirect_keeps_credentials_home) {
  struct http_client *h = client();
  char url[512];
  snprintf(url, sizeof url, "%s/_f/redir=%s/obj", a.base, b.base + 7);
  struct curl_slist *hdr = curl_slist_append(NULL, "x-amz-security-token: T");
  struct http_req r = {.url = url,
                       .headers = hdr,
                       .aws_sigv4 = "aws:amz:us-east-1:s3",
                       .userpwd = "AKIDTEST:secret"};
  uint8_t buf[4096];
  size_t got;
  struct zerr e = {0};
  ck_assert_int_eq(http_get_range(h, &r, 0, 4096, buf, &got, NULL, &e), 0);
  ck_assert_uint_eq(got, 4096);
  ck_assert_int_eq(buf[100], pat(100, 0));
  ck_assert_int_eq(logged_at_least(&b, "GET /obj", NULL, 1), 1);
  ck_assert_int_eq(logged(&b, "GET /obj", "auth=yes"), 0);
  ck_assert_int_eq(logged_at_least(&a, "redir=", "auth=yes", 1), 1);
  /* a redirect within the origin keeps them */
  snprintf(url, sizeof url, "%s/_f/redir=./obj", a.base);
  ck_assert_int_eq(http_get_range(h, &r, 0, 10, buf, &got, NULL, &e), 0);
  ck_assert_int_eq(logged_at_least(&a, "GET /obj", "auth=yes", 1), 1);
  curl_slist_free_all(hdr);
  http_client_free(h);
}
END_TEST

START_TEST(redirect_outside_scope_refused) {
  struct http_client *h = client();
  char url[512], named[200];
  snprintf(url, sizeof url, "%s/_f/redir=%s/flip", a.base, b.base + 7);
  snprintf(named, sizeof named, "%s/", a.base);
  const char *prefixes[] = {named};
  struct url_scope *sc;
  ck_assert_int_eq(url_scope_new(prefixes, 1, 1, NULL, &sc, NULL), 0);
  struct http_req r = {
      .url = url, .redirect = url_scope_check, .redirect_ud = sc};
  uint8_t buf[16];
  size_t got;
  struct zerr e = {0};
  ck_assert_int_eq(http_get_range(h, &r, 0, 16, buf, &got, NULL, &e), -EACCES);
  ck_assert_msg(strstr(e.msg, "redirected to") && strstr(e.msg, "target_root"),
                "message: %s", e.msg);
  ck_assert_int_eq(logged(&b, "/flip", NULL), 0); /* never asked */
  url_scope_unref(sc);
  http_client_free(h);
}
END_TEST

/* Bytes [0, len) of path on A through h: its result. */
static int get_a(struct http_client *h, const char *path, size_t len,
                 uint8_t *buf, struct zerr *e) {
  char url[512];
  snprintf(url, sizeof url, "%s%s", a.base, path);
  struct http_req r = {.url = url};
  size_t got = 0;
  int rc = http_get_range(h, &r, 0, len, buf, &got, NULL, e);
  ck_assert(rc < 0 || got == len);
  return rc;
}

START_TEST(encoded_body_refused) {
  struct http_client *h = client();
  uint8_t buf[64];
  memset(buf, 0xAA, sizeof buf);
  struct zerr e = {0};
  ck_assert_int_eq(get_a(h, "/_f/gzip/obj", 64, buf, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "Content-Encoding: gzip"), "message: %s", e.msg);
  for (size_t i = 0; i < sizeof buf; i++)
    ck_assert_int_eq(buf[i], 0xAA); /* no byte of it landed */
  http_client_free(h);
}
END_TEST

START_TEST(excess_body_next_request_reads) {
  struct http_client *h = client();
  uint8_t buf[4096];
  struct zerr e = {0};
  /* the same connection, reused: the excess of an answer comes before
   * the next one */
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(get_a(h, "/_f/excess/obj", 4096, buf, &e), 0);
    ck_assert_int_eq(buf[4000], pat(4000, 0));
  }
  http_client_free(h);
}
END_TEST

struct reader {
  struct remote *r;
  const char *url;
  int version; /* 0 or 1: all its bytes were of it; -1 mixed */
  int rc;
};

/* Read the whole object in 4 KiB pieces through a source of its own. */
static void *read_pieces(void *arg) {
  struct reader *rd = arg;
  struct bytesrc *s;
  static _Thread_local uint8_t buf[FLIP_SIZE];
  rd->rc = remote_open(rd->r, rd->url, 0, UINT64_MAX, 0, NULL, &s, NULL);
  if (rd->rc < 0)
    return NULL;
  for (uint64_t o = 0; o < FLIP_SIZE && rd->rc == 0; o += 4096)
    rd->rc = bytesrc_read_range(s, o, 4096, buf + o, NULL);
  bytesrc_unref(s);
  rd->version = buf[1] == pat(1, 0) ? 0 : 1;
  for (uint64_t i = 0; i < FLIP_SIZE; i++)
    if (buf[i] != pat(i, rd->version))
      rd->version = -1;
  return NULL;
}

START_TEST(no_validator_one_version) {
  struct remote *r = remote_small(4u << 20);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/novalid,flip/flip", a.base);
  struct reader rd[6];
  pthread_t t[6];
  for (int i = 0; i < 6; i++) {
    rd[i] = (struct reader){r, url, -2, 0};
    pthread_create(&t[i], NULL, read_pieces, &rd[i]);
  }
  for (int i = 0; i < 6; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(rd[i].rc, 0);
    ck_assert_int_ge(rd[i].version, 0); /* never bytes of two answers */
    ck_assert_int_eq(rd[i].version, rd[0].version); /* one unit for all */
  }
  remote_free(r);
}
END_TEST

START_TEST(no_validator_too_large) {
  struct remote *r = remote_small(128u << 10); /* whole at most 32 KiB */
  char url[512];
  snprintf(url, sizeof url, "%s/_f/novalid/flip", a.base);
  struct bytesrc *s;
  struct zerr e = {0};
  ck_assert_int_eq(remote_open(r, url, 0, UINT64_MAX, 0, NULL, &s, &e), 0);
  uint8_t buf[16];
  ck_assert_int_eq(bytesrc_read_range(s, 0, 16, buf, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "read only whole"), "message: %s", e.msg);
  bytesrc_unref(s);
  remote_free(r);
}
END_TEST

START_TEST(nothing_named_after_etag) {
  struct remote *r = remote_small(4u << 20);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/etag,endless,flip/endl", a.base);
  struct bytesrc *s0, *s1;
  struct zerr e = {0};
  uint8_t buf[4096];
  ck_assert_int_eq(remote_open(r, url, 0, 4096, 0, NULL, &s0, &e), 0);
  ck_assert_int_eq(bytesrc_read_range(s0, 0, 4096, buf, &e), 0);
  ck_assert_int_eq(buf[7], pat(7, 0));
  ck_assert_int_eq(remote_open(r, url, 4096, 4096, 0, NULL, &s1, &e), 0);
  ck_assert_int_eq(bytesrc_read_range(s1, 0, 4096, buf, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "changed"), "message: %s", e.msg);
  bytesrc_unref(s0);
  bytesrc_unref(s1);
  remote_free(r);
}
END_TEST

START_TEST(last_modified_uncheckable) {
  struct remote *r = remote_small(4u << 20);
  char url[512];
  snprintf(url, sizeof url, "%s/_f/novalid/obj", a.base);
  struct bytesrc *s;
  struct zerr e = {0};
  ck_assert_int_eq(remote_open(r, url, 0, 4, 0, NULL, &s, &e), 0);
  ck_assert_int_eq(rversion_pin(s, NULL, 4000000000u, &e), 0);
  uint8_t buf[4];
  ck_assert_int_eq(bytesrc_read_range(s, 0, 4, buf, &e), -EIO);
  ck_assert_msg(strstr(e.msg, "cannot be checked"), "message: %s", e.msg);
  bytesrc_unref(s);
  remote_free(r);
}
END_TEST

int main(void) {
  if (testsrv_start(&b, "trust-b", fill, "--log-auth") < 0)
    return testsrv_missing("check_remote_trust");
  if (testsrv_start(&a, "trust-a", fill, "--log-auth") < 0) {
    testsrv_stop(&b);
    return testsrv_missing("check_remote_trust");
  }
  Suite *s = suite_create("remote_trust");
  TCase *tc = tcase_create("trust");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, redirect_keeps_credentials_home);
  tcase_add_test(tc, redirect_outside_scope_refused);
  tcase_add_test(tc, encoded_body_refused);
  tcase_add_test(tc, excess_body_next_request_reads);
  tcase_add_test(tc, no_validator_one_version);
  tcase_add_test(tc, no_validator_too_large);
  tcase_add_test(tc, nothing_named_after_etag);
  tcase_add_test(tc, last_modified_uncheckable);
  suite_add_tcase(s, tc);
  int rc = testutil_run(s);
  testsrv_stop(&a);
  testsrv_stop(&b);
  return rc;
}
