/* url.c - URL prefixes, origins, redirect targets and log forms (see
 * url.h). */
#define _GNU_SOURCE
#include "url.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Is the path segment s[0..n) "." or "..", literally or with its dots
 * percent-encoded ("%2e", "%2E")? */
static int dot_segment(const char *s, size_t n) {
  size_t dots = 0;
  for (size_t i = 0; i < n;) {
    if (s[i] == '.') {
      i++;
    } else if (n - i >= 3 && s[i] == '%' && s[i + 1] == '2' &&
               (s[i + 2] == 'e' || s[i + 2] == 'E')) {
      i += 3;
    } else {
      return 0;
    }
    dots++;
  }
  return dots == 1 || dots == 2;
}

/* Does the path p (up to its query or fragment) hold a dot segment? */
static int has_dot_segment(const char *p) {
  size_t end = strcspn(p, "?#");
  for (size_t i = 0; i < end;) {
    size_t n = strcspn(p + i, "/?#");
    if (i + n > end)
      n = end - i;
    if (n && dot_segment(p + i, n))
      return 1;
    i += n + 1;
  }
  return 0;
}

/* Scheme and authority compared without regard to case, then the path on
 * a segment boundary. */
int url_under(const char *prefix, const char *url) {
  const char *ps = strstr(prefix, "://"), *us = strstr(url, "://");
  if (!ps || !us)
    return 0;
  const char *ph = ps + 3, *uh = us + 3;
  size_t pa = strcspn(ph, "/"), ua = strcspn(uh, "/?#");
  if (ps - prefix != us - url ||
      strncasecmp(prefix, url, (size_t)(ps - prefix)) || pa != ua ||
      strncasecmp(ph, uh, pa))
    return 0;
  const char *pp = ph + pa, *up = uh + ua;
  if (has_dot_segment(up))
    return 0;
  size_t n = strlen(pp);
  if (n && pp[n - 1] == '/')
    n--;
  return !strncmp(pp, up, n) &&
         (up[n] == '\0' || up[n] == '/' || up[n] == '?' || up[n] == '#');
}

/* The scheme, host and port of url (port with its scheme's default), each
 * malloc'd by libcurl; 0 or -1. */
static int origin_of(const char *url, char **scheme, char **host, char **port) {
  *scheme = *host = *port = NULL;
  CURLU *u = curl_url();
  int ok =
      u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_SCHEME, scheme, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_HOST, host, 0) == CURLUE_OK &&
      curl_url_get(u, CURLUPART_PORT, port, CURLU_DEFAULT_PORT) == CURLUE_OK;
  curl_url_cleanup(u);
  if (!ok || (strcasecmp(*scheme, "http") && strcasecmp(*scheme, "https"))) {
    curl_free(*scheme);
    curl_free(*host);
    curl_free(*port);
    *scheme = *host = *port = NULL;
    return -1;
  }
  return 0;
}

/* Scheme, host and port, each compared. */
int url_same_origin(const char *a, const char *b) {
  char *sa, *ha, *pa, *sb, *hb, *pb;
  if (origin_of(a, &sa, &ha, &pa) < 0)
    return 0;
  int same = 0;
  if (origin_of(b, &sb, &hb, &pb) == 0) {
    same = !strcasecmp(sa, sb) && !strcasecmp(ha, hb) && !strcmp(pa, pb);
    curl_free(sb);
    curl_free(hb);
    curl_free(pb);
  }
  curl_free(sa);
  curl_free(ha);
  curl_free(pa);
  return same;
}

/* libcurl resolves a relative reference against the URL a handle holds,
 * and removes dot segments. */
static int url_resolve(const char *base, const char *location, char **out,
                       struct zerr *err) {
  *out = NULL;
  char shown[160];
  url_for_log(location, shown, sizeof shown);
  CURLU *u = curl_url();
  if (!u)
    return zerr_set(err, ENOMEM, "out of memory");
  char *abs = NULL;
  int ok = curl_url_set(u, CURLUPART_URL, base, 0) == CURLUE_OK &&
           curl_url_set(u, CURLUPART_URL, location, CURLU_NON_SUPPORT_SCHEME) ==
               CURLUE_OK &&
           curl_url_get(u, CURLUPART_URL, &abs, 0) == CURLUE_OK;
  curl_url_cleanup(u);
  if (!ok) {
    curl_free(abs);
    return zerr_set(err, EINVAL, "a redirect to '%s', which is not a URL",
                    shown);
  }
  *out = strdup(abs);
  curl_free(abs);
  return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
}

/* Up to the query or fragment, cut to fit. */
void url_for_log(const char *url, char *out, size_t n) {
  size_t l = strcspn(url, "?#");
  if (l + 1 > n && n > 4)
    snprintf(out, n, "%.*s...", (int)(n - 4), url);
  else
    snprintf(out, n, "%.*s", (int)l, url);
}

/* Resolved, then the scheme rule: http may lead to https, https only to
 * https, nothing else. */
int url_redirect_target(const char *cur, const char *location, char **out,
                        struct zerr *err) {
  ZTRY(url_resolve(cur, location, out, err));
  const char *why = NULL;
  if (strncmp(*out, "http://", 7) && strncmp(*out, "https://", 8))
    why = "not an http:// or https:// URL";
  else if (!strncmp(cur, "https://", 8) && strncmp(*out, "https://", 8))
    why = "from https to plain http";
  if (!why)
    return 0;
  return zerr_set(err, EACCES, "%s", why);
}

/* 169.254.0.0/16, its IPv4-mapped form, fe80::/10. */
int url_ip_link_local(const char *ip) {
  if (!strncmp(ip, "169.254.", 8))
    return 1;
  if (!strncasecmp(ip, "::ffff:169.254.", 15))
    return 1;
  if (!strncasecmp(ip, "fe", 2) && ip[2] && ip[3]) {
    char c = (char)(ip[2] | 0x20);
    if ((c == '8' || c == '9' || c == 'a' || c == 'b') && ip[3] != ':')
      return 1;
  }
  return 0;
}

/* The path of url after its authority, up to its query (into out[n]). */
static void path_of(const char *url, char *out, size_t n) {
  const char *p = strstr(url, "://");
  p = p ? p + 3 + strcspn(p + 3, "/?#") : url;
  size_t l = strcspn(p, "?#");
  while (l && p[l - 1] == '/')
    l--;
  snprintf(out, n, "%.*s", (int)l, p);
}

/* One origin, and the paths equal but for trailing slashes. */
int url_same_endpoint(const char *a, const char *b) {
  char pa[1024], pb[1024];
  path_of(a, pa, sizeof pa);
  path_of(b, pb, sizeof pb);
  return url_same_origin(a, b) && !strcmp(pa, pb);
}

struct url_scope {
  atomic_int refs;
  int confined;
  char *within; /* or NULL */
  size_t n;
  char *prefixes[]; /* n of them */
};

/* Copies of everything it names. */
int url_scope_new(const char *const *prefixes, size_t n, int confined,
                  const char *within, struct url_scope **out,
                  struct zerr *err) {
  struct url_scope *sc = calloc(1, sizeof *sc + n * sizeof sc->prefixes[0]);
  if (!sc)
    return zerr_set(err, ENOMEM, "out of memory");
  atomic_init(&sc->refs, 1);
  sc->confined = confined;
  int ok = !within || (sc->within = strdup(within));
  for (; ok && sc->n < n; sc->n++)
    ok = (sc->prefixes[sc->n] = strdup(prefixes[sc->n])) != NULL;
  if (!ok) {
    url_scope_unref(sc);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = sc;
  return 0;
}

struct url_scope *url_scope_ref(struct url_scope *sc) {
  if (sc)
    atomic_fetch_add(&sc->refs, 1);
  return sc;
}

void url_scope_unref(struct url_scope *sc) {
  if (!sc || atomic_fetch_sub(&sc->refs, 1) != 1)
    return;
  for (size_t i = 0; i < sc->n; i++)
    free(sc->prefixes[i]);
  free(sc->within);
  free(sc);
}

/* Under a named prefix: link-local allowed; confined: nowhere else. */
int url_scope_check(const void *ud, const char *url, int *allow_link_local,
                    struct zerr *err) {
  const struct url_scope *sc = ud;
  int under = 0;
  for (size_t i = 0; i < sc->n && !under; i++)
    under = url_under(sc->prefixes[i], url);
  *allow_link_local = under;
  if (sc->confined && !under)
    return zerr_set(err, EACCES,
                    "not under a prefix allowed with -o target_root=PREFIX");
  if (sc->confined && sc->within && !url_under(sc->within, url))
    return zerr_set(err, EACCES, "not under the virtual chunk container %s",
                    sc->within);
  return 0;
}
