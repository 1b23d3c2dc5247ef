/* check_htindex.c - unit tests of src/store/htindex: directory index pages
 * as nginx (autoindex on), python3 -m http.server and Apache write them
 * (captured from the real servers), and pages that try to lead the
 * listing elsewhere: other hosts and schemes, the parent, absolute paths
 * outside the directory, queries, deeper paths, names no file system can
 * hold, comments, broken markup, more entries than allowed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/store/htindex.h"
#include "../testutil.h"

/* The entries of one parse, "name" or "name/" a line. */
struct got {
  char text[8192];
  size_t n;
};

static int collect(void *ud, const char *name, size_t len, int is_dir) {
  struct got *g = ud;
  ck_assert_uint_eq(strlen(name), len);
  size_t at = strlen(g->text);
  snprintf(g->text + at, sizeof g->text - at, "%s%s\n", name,
           is_dir ? "/" : "");
  g->n++;
  return 0;
}

/* Parse page as the listing of url; the entries, one a line. */
static const char *parse(const char *page, const char *url) {
  static struct got g;
  memset(&g, 0, sizeof g);
  struct zerr err = {0};
  ck_assert_int_eq(htindex_parse(page, strlen(page), url, collect, &g, &err),
                   0);
  return g.text;
}

/* nginx 1.22, autoindex on: the parent link, then each entry (dot files
 * left out by nginx itself), names percent-encoded, text escaped. */
START_TEST(nginx_autoindex) {
  const char *page =
      "<html>\r\n<head><title>Index of /store/</title></head>\r\n<body>\r\n"
      "<h1>Index of /store/</h1><hr><pre><a href=\"../\">../</a>\r\n"
      "<a href=\"obs/\">obs/</a>                         02-Dec-2026 07:06  "
      "                 -\r\n"
      "<a href=\"a%20b%26c.txt\">a b&amp;c.txt</a>        02-Dec-2026 07:06 "
      "                  2\r\n"
      "<a href=\"caf%25%C3%A9\">caf%\xc3\xa9</a>          02-Dec-2026 07:06 "
      "                  2\r\n"
      "<a href=\"zarr.json\">zarr.json</a>          02-Dec-2026 07:06       "
      "            3\r\n"
      "</pre><hr></body>\r\n</html>\r\n";
  ck_assert_str_eq(parse(page, "http://127.0.0.1:8080/store/"),
                   "obs/\na b&c.txt\ncaf%\xc3\xa9\nzarr.json\n");
}
END_TEST

/* python3 -m http.server (3.11): a list of relative links, dot files
 * included. */
START_TEST(python_http_server) {
  const char *page =
      "<!DOCTYPE HTML>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<title>Directory listing for /store/</title>\n</head>\n<body>\n"
      "<h1>Directory listing for /store/</h1>\n<hr>\n<ul>\n"
      "<li><a href=\".hidden/\">.hidden/</a></li>\n"
      "<li><a href=\".zgroup\">.zgroup</a></li>\n"
      "<li><a href=\"a%20b%26c.txt\">a b&amp;c.txt</a></li>\n"
      "<li><a href=\"obs/\">obs/</a></li>\n"
      "<li><a href=\"zarr.json\">zarr.json</a></li>\n"
      "</ul>\n<hr>\n</body>\n</html>\n";
  ck_assert_str_eq(parse(page, "http://localhost:8000/store/"),
                   ".hidden/\n.zgroup\na b&c.txt\nobs/\nzarr.json\n");
}
END_TEST

/* Apache's mod_autoindex (FancyIndexing): sort links with queries, the
 * parent as an absolute path, icons without href, upper-case tags,
 * unquoted and single-quoted values, absolute paths of children. */
START_TEST(apache_fancy) {
  const char *page =
      "<!DOCTYPE HTML PUBLIC \"-//W3C//DTD HTML 3.2 Final//EN\">\n<html>\n"
      "<head><title>Index of /data/store</title></head><body>\n"
      "<h1>Index of /data/store</h1>\n<table>\n"
      "<tr><th valign=\"top\"><img src=\"/icons/blank.gif\" alt=\"[ICO]\"></th>"
      "<th><a href=\"?C=N;O=D\">Name</a></th><th><a href=\"?C=M;O=A\">Last "
      "modified</a></th></tr>\n"
      "<tr><td valign=\"top\"><img src=\"/icons/back.gif\" alt=\"[PARENTDIR]\">"
      "</td><td><a href=\"/data/\">Parent Directory</a></td></tr>\n"
      "<tr><td><A HREF=\"c/\">c/</A></td></tr>\n"
      "<tr><td><a class=x href=zarr.json>zarr.json</a></td></tr>\n"
      "<tr><td><a title='x' href='/data/store/values.bin'>v</a></td></tr>\n"
      "<tr><td><a href=\"http://www.example.org:8080/data/store/full\">f</a>"
      "</td></tr>\n"
      "</table>\n<address>Apache/2.4.57 (Debian) Server at 127.0.0.1 Port "
      "80</address>\n</body></html>\n";
  ck_assert_str_eq(parse(page, "http://www.example.org:8080/data/store/"),
                   "c/\nzarr.json\nvalues.bin\nfull\n");
}
END_TEST

/* Links that would lead the listing elsewhere are no entries. */
START_TEST(never_outside) {
  const char *page =
      "<a href=\"../\">up</a><a href=\"../../etc/passwd\">x</a>"
      "<a href=\"/\">root</a><a href=\"/other/x\">abs elsewhere</a>"
      "<a href=\"/data/storeX/y\">a sibling sharing the prefix</a>"
      "<a href=\"http://evil.example/data/store/x\">another host</a>"
      "<a href=\"https://h/data/store/x\">another scheme</a>"
      "<a href=\"http://h:81/data/store/x\">another port</a>"
      "<a href=\"//evil.example/data/store/x\">protocol-relative</a>"
      "<a href=\"//h/data/store/ok1\">protocol-relative, same host</a>"
      "<a href=\"javascript:alert(1)\">js</a><a href=\"mailto:a@b\">m</a>"
      "<a href=\"ftp://h/data/store/x\">ftp</a>"
      "<a href=\"a/b\">deeper</a><a href=\"a/b/\">deeper dir</a>"
      "<a href=\"x?download=1\">query</a><a href=\"?C=N\">sort</a>"
      "<a href=\"#top\">fragment</a><a href=\"\">empty</a>"
      "<a href=\"./\">itself</a><a href=\".\">dot</a><a href=\"..\">dotdot</a>"
      "<a href=\"%2e%2e\">encoded dotdot</a><a href=\"a%2fb\">encoded slash</a>"
      "<a href=\"a%00b\">nul</a><a href=\"a%0ab\">newline</a>"
      "<a href=\"bad%zz\">bad escape</a><a href=\"bad%4\">cut escape</a>"
      "<a href=\"a//\">two slashes</a>"
      "<a href=\"./ok2\">dot slash</a><a href=\"ok3#frag\">a fragment cut</a>";
  ck_assert_str_eq(parse(page, "http://h/data/store/"), "ok1\nok2\nok3\n");
}
END_TEST

/* Character references in href values are decoded first; a name of 255
 * bytes is one, of 256 none. */
START_TEST(references_and_lengths) {
  char page[2048];
  char n255[256], n256[257];
  memset(n255, 'a', 255);
  n255[255] = '\0';
  memset(n256, 'b', 256);
  n256[256] = '\0';
  snprintf(page, sizeof page,
           "<a href=\"x&amp;y\">1</a><a href=\"&#x7a;&#97;\">2</a>"
           "<a href=\"q&quot;&apos;&lt;&gt;\">3</a>"
           "<a href=\"&unknown;\">4</a><a href=\"&#0;\">5</a>"
           "<a href=\"%s\">6</a><a href=\"%s\">7</a>",
           n255, n256);
  char want[512];
  /* "&#0;" is no reference: "&", then a fragment */
  snprintf(want, sizeof want, "x&y\nza\nq\"'<>\n&unknown;\n&\n%s\n", n255);
  ck_assert_str_eq(parse(page, "http://h/d/"), want);
}
END_TEST

/* Comments, other tags, broken markup and a page cut anywhere. */
START_TEST(markup) {
  const char *page =
      "<!-- <a href=\"hidden\">x</a> --><abbr href=\"no\">a</abbr>"
      "<area href=\"no2\"><a\nhref\n=\n\"yes1\"\n>y</a>"
      "<a href=\"yes2\" href=\"no3\">first href wins</a>"
      "<a>no href</a><a name=x>anchor</a><a href=yes3>unquoted</a>"
      "<a = href=\"yes4\">stray</a><a/href=\"yes5\">slash</a>"
      "<a href=\"unterminated";
  ck_assert_str_eq(parse(page, "http://h/d/"),
                   "yes1\nyes2\nyes3\nyes4\nyes5\n");
  /* every prefix of it parses without reading past its end */
  size_t len = strlen(page);
  for (size_t i = 0; i <= len; i++) {
    char *cut = malloc(i ? i : 1);
    memcpy(cut, page, i);
    struct got g = {{0}, 0};
    struct zerr err = {0};
    ck_assert_int_eq(htindex_parse(cut, i, "http://h/d/", collect, &g, &err),
                     0);
    free(cut);
  }
}
END_TEST

/* The page's URL must be an http(s) directory; a callback stops; past
 * HTINDEX_MAX_ENTRIES the page is refused. */
static int stop_at_two(void *ud, const char *name, size_t len, int is_dir) {
  (void)name, (void)len, (void)is_dir;
  return ++*(int *)ud == 2 ? 7 : 0;
}

/* Count entries only. */
static int count_only(void *ud, const char *name, size_t len, int is_dir) {
  (void)name, (void)len, (void)is_dir;
  ++*(size_t *)ud;
  return 0;
}

START_TEST(limits) {
  struct zerr err = {0};
  struct got g = {{0}, 0};
  ck_assert_int_eq(htindex_parse("", 0, "ftp://h/d/", collect, &g, &err),
                   -EINVAL);
  ck_assert_int_eq(htindex_parse("", 0, "http://h/d", collect, &g, &err),
                   -EINVAL);
  ck_assert_int_eq(htindex_parse("", 0, "http://h/d/?x", collect, &g, &err),
                   -EINVAL);
  int n = 0;
  const char *three = "<a href=a>a</a><a href=b>b</a><a href=c>c</a>";
  ck_assert_int_eq(
      htindex_parse(three, strlen(three), "http://h/d/", stop_at_two, &n, &err),
      7);
  ck_assert_int_eq(n, 2);
  const char *one = "<a href=x>";
  size_t ol = strlen(one), total = ol * (HTINDEX_MAX_ENTRIES + 1);
  char *big = malloc(total);
  for (size_t i = 0; i <= HTINDEX_MAX_ENTRIES; i++)
    memcpy(big + i * ol, one, ol);
  int count = 0;
  ck_assert_int_eq(
      htindex_parse(big, total, "http://h/d/", stop_at_two, &count, &err),
      7); /* stopped by the callback first */
  zerr_clear(&err);
  size_t seen = 0;
  ck_assert_int_eq(
      htindex_parse(big, total, "http://h/d/", count_only, &seen, &err),
      -EFBIG);
  ck_assert_uint_eq(seen, HTINDEX_MAX_ENTRIES);
  ck_assert_ptr_nonnull(strstr(err.msg, "more than"));
  free(big);
}
END_TEST

int main(void) {
  Suite *s = suite_create("htindex");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, nginx_autoindex);
  tcase_add_test(tc, python_http_server);
  tcase_add_test(tc, apache_fancy);
  tcase_add_test(tc, never_outside);
  tcase_add_test(tc, references_and_lengths);
  tcase_add_test(tc, markup);
  tcase_add_test(tc, limits);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
