/* fuzz_url.c - what src/net/url.c decides about URLs a server or a
 * repository hands out: prefixes, origins, redirect targets, scopes.
 *
 * The input is three lines, PREFIX, URL and LOCATION (a redirect of URL).
 * Checked: a URL under a prefix has the prefix's scheme and authority and
 * no dot segment; origins compare symmetrically; a redirect target that
 * is accepted is an absolute http(s) URL, https when URL was, and itself
 * passes the same prefix rule as any URL; a confined scope of PREFIX
 * agrees with url_under. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../../src/net/url.h"

/* The n-th line of data (a NUL-terminated copy; "" past the end). */
static char *line(const uint8_t *data, size_t size, int n) {
  const uint8_t *p = data, *end = data + size;
  for (; n > 0 && p < end; n--) {
    const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
    p = nl ? nl + 1 : end;
  }
  const uint8_t *nl = memchr(p, '\n', (size_t)(end - p));
  size_t len = (size_t)((nl ? nl : end) - p);
  char *s = malloc(len + 1);
  if (!s)
    abort();
  memcpy(s, p, len);
  s[len] = '\0';
  return s;
}

/* Does the path of url (after its authority, before its query) hold a
 * segment "." or ".."? (The literal forms only: an oracle of its own.) */
static int literal_dot_segment(const char *url) {
  const char *p = strstr(url, "://");
  if (!p)
    return 0;
  p += 3 + strcspn(p + 3, "/?#");
  size_t end = strcspn(p, "?#");
  for (size_t i = 0; i < end; i++) {
    if (p[i] != '/')
      continue;
    size_t n = strcspn(p + i + 1, "/?#");
    if ((n == 1 && p[i + 1] == '.') ||
        (n == 2 && p[i + 1] == '.' && p[i + 2] == '.'))
      return 1;
  }
  return 0;
}

FUZZ_TARGET(url) {
  if (size > 8192)
    return 0;
  char *prefix = line(data, size, 0), *url = line(data, size, 1),
       *loc = line(data, size, 2);
  if (url_under(prefix, url)) {
    const char *ps = strstr(prefix, "://");
    if (!ps || strncasecmp(prefix, url, (size_t)(ps - prefix)))
      abort(); /* another scheme */
    if (literal_dot_segment(url))
      abort(); /* a server would resolve it out of the prefix */
  }
  if (url_same_origin(prefix, url) != url_same_origin(url, prefix))
    abort();
  struct zerr err = {0};
  char *to = NULL;
  if (url_redirect_target(url, loc, &to, &err) == 0) {
    if (strncmp(to, "http://", 7) && strncmp(to, "https://", 8))
      abort();
    if (!strncmp(url, "https://", 8) && strncmp(to, "https://", 8))
      abort();
    (void)url_under(prefix, to);
    (void)url_same_origin(url, to);
    struct url_scope *sc;
    const char *named[] = {prefix};
    if (url_scope_new(named, 1, 1, NULL, &sc, &err) == 0) {
      int ll = -1;
      int rc = url_scope_check(sc, to, &ll, &err);
      if ((rc == 0) != url_under(prefix, to) || (rc == 0 && ll != 1))
        abort();
      url_scope_unref(sc);
    }
  }
  free(to);
  char shown[64];
  url_for_log(url, shown, sizeof shown);
  if (strlen(shown) >= sizeof shown)
    abort();
  (void)url_ip_link_local(loc);
  free(prefix);
  free(url);
  free(loc);
  return 0;
}
