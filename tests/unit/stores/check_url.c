/* check_url.c - unit tests of src/net/url.c: URL prefixes on segment
 * boundaries (dot segments, also percent-encoded, match nothing),
 * origins with default ports, where a redirect leads and which schemes
 * it may take, the scope a source's redirects must stay in, link-local
 * addresses, endpoints and log forms. No network. */
#include <errno.h>

#include "../../../src/net/url.h"
#include "../testutil.h"

START_TEST(prefixes) {
  ck_assert(url_under("http://a/b", "http://a/b/c"));
  ck_assert(url_under("http://a/b/", "http://a/b"));
  ck_assert(url_under("HTTP://A/b", "http://a/b/c?x=1"));
  ck_assert(url_under("http://a/", "http://a/b#f"));
  ck_assert(!url_under("http://a/b", "http://a/bc"));
  ck_assert(!url_under("http://a/b", "https://a/b/c"));
  ck_assert(!url_under("http://a", "http://ab/c"));
  ck_assert(!url_under("http://a", "http://a@b/c"));
  ck_assert(!url_under("http://a:80/b", "http://a/b"));
  /* dot segments a server would resolve out of the prefix */
  ck_assert(!url_under("http://a/b", "http://a/b/../c"));
  ck_assert(!url_under("http://a/b", "http://a/b/%2e%2E/c"));
  ck_assert(!url_under("http://a/b", "http://a/b/.%2e"));
  ck_assert(!url_under("http://a/b", "http://a/b/./c"));
  ck_assert(url_under("http://a/b", "http://a/b/..c/.d"));
  ck_assert(url_under("http://a/b", "http://a/b/c?q=/../"));
  ck_assert(!url_under("s3://bkt/", "http://bkt/x"));
}
END_TEST

START_TEST(origins) {
  ck_assert(url_same_origin("http://a/x", "http://A:80/y"));
  ck_assert(url_same_origin("https://a/x", "https://a:443/"));
  ck_assert(!url_same_origin("http://a/x", "https://a/x"));
  ck_assert(!url_same_origin("http://a:8080/", "http://a:8081/"));
  ck_assert(!url_same_origin("http://a/", "http://b/"));
  ck_assert(!url_same_origin("ftp://a/", "ftp://a/"));
  ck_assert(!url_same_origin("not a url", "http://a/"));
  ck_assert(url_same_endpoint("http://e:9000", "http://e:9000/"));
  ck_assert(!url_same_endpoint("http://e:9000/p", "http://e:9000/q"));
  ck_assert(!url_same_endpoint("http://e:9000", "http://f:9000"));
}
END_TEST

/* Where cur redirected to loc leads: the URL, or NULL with the errno. */
static char *target(const char *cur, const char *loc, int *rc) {
  char *out = NULL;
  struct zerr err = {0};
  *rc = url_redirect_target(cur, loc, &out, &err);
  if (*rc < 0) {
    ck_assert(err.msg[0]);
    free(out);
    return NULL;
  }
  return out;
}

START_TEST(redirects) {
  int rc;
  char *u = target("http://a:1/b/c?q", "/x", &rc);
  ck_assert_str_eq(u, "http://a:1/x");
  free(u);
  u = target("http://a:1/b/c", "../d/./e", &rc);
  ck_assert_str_eq(u, "http://a:1/d/e");
  free(u);
  u = target("http://a/b", "https://c/d/../e", &rc);
  ck_assert_str_eq(u, "https://c/e");
  free(u);
  u = target("https://a/b", "https://c/d", &rc);
  ck_assert_str_eq(u, "https://c/d");
  free(u);
  ck_assert_ptr_null(target("https://a/b", "http://a/b", &rc));
  ck_assert_int_eq(rc, -EACCES);
  ck_assert_ptr_null(target("http://a/b", "file:///etc/passwd", &rc));
  ck_assert_int_eq(rc, -EACCES);
  ck_assert_ptr_null(target("http://a/b", "ftp://c/d", &rc));
  ck_assert_int_eq(rc, -EACCES);
  ck_assert_ptr_null(target("http://a/b", "http://[zz/", &rc));
  ck_assert_int_lt(rc, 0);
}
END_TEST

START_TEST(scopes) {
  const char *named[] = {"http://a/allowed/", "http://169.254.1.1/"};
  struct url_scope *open_, *conf, *within;
  struct zerr err = {0};
  int ll = -1;
  ck_assert_int_eq(url_scope_new(named, 2, 0, NULL, &open_, &err), 0);
  ck_assert_int_eq(url_scope_new(named, 2, 1, NULL, &conf, &err), 0);
  ck_assert_int_eq(
      url_scope_new(named, 2, 1, "http://a/allowed/ctr/", &within, &err), 0);
  /* targets: anywhere, link-local under a named prefix */
  ck_assert_int_eq(url_scope_check(open_, "http://elsewhere/x", &ll, &err), 0);
  ck_assert_int_eq(ll, 0);
  ck_assert_int_eq(url_scope_check(open_, "http://169.254.1.1/m", &ll, &err),
                   0);
  ck_assert_int_eq(ll, 1);
  /* virtual chunks: only under a named prefix, and the container */
  ck_assert_int_eq(url_scope_check(conf, "http://elsewhere/x", &ll, &err),
                   -EACCES);
  ck_assert(strstr(err.msg, "-o target_root"));
  ck_assert_int_eq(url_scope_check(conf, "http://a/allowed/y", &ll, &err), 0);
  ck_assert_int_eq(url_scope_check(within, "http://a/allowed/y", &ll, &err),
                   -EACCES);
  ck_assert(strstr(err.msg, "container"));
  ck_assert_int_eq(url_scope_check(within, "http://a/allowed/ctr/z", &ll, &err),
                   0);
  ck_assert_int_eq(
      url_scope_check(within, "http://a/allowed/ctr/../../z", &ll, &err),
      -EACCES);
  struct url_scope *again = url_scope_ref(conf);
  url_scope_unref(conf);
  ck_assert_int_eq(url_scope_check(again, "http://a/allowed/y", &ll, &err), 0);
  url_scope_unref(again);
  url_scope_unref(open_);
  url_scope_unref(within);
  url_scope_unref(NULL);
}
END_TEST

START_TEST(addresses_and_logs) {
  ck_assert(url_ip_link_local("169.254.169.254"));
  ck_assert(url_ip_link_local("::ffff:169.254.0.1"));
  ck_assert(url_ip_link_local("fe80::1"));
  ck_assert(url_ip_link_local("FEB0::1"));
  ck_assert(!url_ip_link_local("fec0::1"));
  ck_assert(!url_ip_link_local("127.0.0.1"));
  ck_assert(!url_ip_link_local("169.25.0.1"));
  char b[32];
  url_for_log("http://h/p?X-Amz-Signature=secret", b, sizeof b);
  ck_assert_str_eq(b, "http://h/p");
  url_for_log("http://h/a-rather-long-path-name-that-goes-on", b, sizeof b);
  ck_assert_int_eq(strlen(b), sizeof b - 1);
  ck_assert(strstr(b, "..."));
}
END_TEST

int main(void) {
  Suite *s = suite_create("url");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, prefixes);
  tcase_add_test(tc, origins);
  tcase_add_test(tc, redirects);
  tcase_add_test(tc, scopes);
  tcase_add_test(tc, addresses_and_logs);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
