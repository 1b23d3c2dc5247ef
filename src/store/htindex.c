/* htindex.c - the entries of a directory index page (see htindex.h).
 *
 * Not an HTML parser: a scan for "<a" tags (comments skipped), their
 * attributes read as HTML writes them (quoted with ' or ", or unquoted),
 * and of those the href. What an href names is decided by plain string
 * rules on the page's URL, never by fetching anything. */
#include "htindex.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "../util/utf8.h"

/* ASCII lower case. */
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c; }

/* Does s[0, n) start with word (ASCII, any case)? */
static int starts_ci(const char *s, size_t n, const char *word) {
  size_t w = strlen(word);
  if (n < w)
    return 0;
  for (size_t i = 0; i < w; i++)
    if (lower(s[i]) != word[i])
      return 0;
  return 1;
}

/* HTML white space. */
static int space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}

/* The value of a hex digit, or -1. */
static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  c = lower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Code point cp as UTF-8 into out (room for 4): its length, 0 when it is
 * not one (a surrogate, past U+10FFFF, NUL). */
static size_t put_cp(uint32_t cp, char *out) {
  if (!cp || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
    return 0;
  return utf8_put((uint8_t *)out, cp);
}

/* An attribute value v[0, n) with its character references decoded (the
 * five named ones servers write, and numeric ones) into out (cap bytes):
 * its length, or (size_t)-1 when it does not fit. A reference that is
 * none of these stays as written. */
static size_t unescape(const char *v, size_t n, char *out, size_t cap) {
  static const struct {
    const char *name;
    char c;
  } named[] = {{"amp;", '&'},
               {"lt;", '<'},
               {"gt;", '>'},
               {"quot;", '"'},
               {"apos;", '\''}};
  size_t o = 0;
  for (size_t i = 0; i < n;) {
    char tmp[4];
    size_t tl = 1, used = 1;
    tmp[0] = v[i];
    if (v[i] == '&' && i + 1 < n && v[i + 1] == '#') {
      size_t j = i + 2;
      int hex = j < n && lower(v[j]) == 'x';
      j += (size_t)hex;
      uint32_t cp = 0;
      size_t digits = 0;
      for (; j < n && digits < 8; j++, digits++) {
        int d =
            hex ? hexval(v[j]) : (v[j] >= '0' && v[j] <= '9' ? v[j] - '0' : -1);
        if (d < 0)
          break;
        cp = cp * (hex ? 16 : 10) + (uint32_t)d;
      }
      size_t ul = digits && j < n && v[j] == ';' ? put_cp(cp, tmp) : 0;
      if (ul) {
        tl = ul;
        used = j + 1 - i;
      }
    } else if (v[i] == '&') {
      for (size_t k = 0; k < sizeof named / sizeof *named; k++) {
        size_t nl = strlen(named[k].name);
        if (n - i - 1 >= nl && !memcmp(v + i + 1, named[k].name, nl)) {
          tmp[0] = named[k].c;
          used = nl + 1;
          break;
        }
      }
    }
    if (o + tl > cap)
      return (size_t)-1;
    memcpy(out + o, tmp, tl);
    o += tl;
    i += used;
  }
  return o;
}

/* The path of the page's URL (from the '/' after its host; it ends with
 * '/'). 0, or -1 when url is not an http(s) URL of a directory. */
static int split_url(const char *url, const char **path) {
  if (!starts_ci(url, strlen(url), "http://") &&
      !starts_ci(url, strlen(url), "https://"))
    return -1;
  const char *h = strstr(url, "://") + 3;
  const char *p = strchr(h, '/');
  size_t n = strlen(url);
  if (!p || p == h || url[n - 1] != '/' || strpbrk(url, "?#"))
    return -1;
  *path = p;
  return 0;
}

/* What href (decoded, n bytes) names below the page at url: the entry's
 * text before decoding (into *rel, *rl) and whether it is a directory;
 * 0 when it names no entry. */
static int resolve(const char *href, size_t n, const char *url,
                   const char *path, const char **rel, size_t *rl,
                   int *is_dir) {
  size_t ul = strlen(url), pl = strlen(path);
  const char *h = strstr(url, "://") + 1; /* "//host..." */
  size_t hl = (size_t)(path - h);
  const char *r;
  if (n >= ul && !memcmp(href, url, ul)) {
    r = href + ul; /* the full URL */
  } else if (n >= 2 && href[0] == '/' && href[1] == '/') {
    if (n < hl + pl || memcmp(href, h, hl) || memcmp(href + hl, path, pl))
      return 0; /* another host, or outside the directory */
    r = href + hl + pl;
  } else if (n >= 1 && href[0] == '/') {
    if (n < pl || memcmp(href, path, pl))
      return 0;
    r = href + pl;
  } else {
    size_t c = strcspn(href, ":/?#");
    if (c < n && href[c] == ':')
      return 0; /* a scheme: another origin (mailto:, javascript:, ftp:) */
    r = href;
    while ((size_t)(href + n - r) >= 2 && r[0] == '.' && r[1] == '/')
      r += 2;
  }
  size_t left = (size_t)(href + n - r);
  size_t q = 0;
  while (q < left && r[q] != '?' && r[q] != '#')
    q++;
  if (q < left && r[q] == '?')
    return 0; /* a query: a sort link, a search, not an entry */
  if (!q)
    return 0; /* the directory itself */
  *is_dir = r[q - 1] == '/';
  q -= (size_t)*is_dir;
  if (!q || memchr(r, '/', q))
    return 0; /* deeper than one segment, or "//" */
  *rel = r;
  *rl = q;
  return 1;
}

/* Percent-decode s[0, n) into out (room for n + 1): its length, or
 * (size_t)-1 when it is no file name (a bad escape, a '/', NUL or a
 * control character, "." or "..", longer than 255 bytes). */
static size_t decode_name(const char *s, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c == '%') {
      int a = i + 2 < n ? hexval(s[i + 1]) : -1;
      int b = i + 2 < n ? hexval(s[i + 2]) : -1;
      if (a < 0 || b < 0)
        return (size_t)-1;
      c = (unsigned char)(a * 16 + b);
      i += 2;
    }
    if (c < 0x20 || c == 0x7f || c == '/')
      return (size_t)-1;
    out[o++] = (char)c;
  }
  out[o] = '\0';
  if (!o || o > 255 || !strcmp(out, ".") || !strcmp(out, ".."))
    return (size_t)-1;
  return o;
}

/* The href of the tag whose attributes start at *pp (after "<a"), moving
 * *pp past the tag's '>': 1 and the value (v, vl) when there is one and
 * the tag ends (a tag cut by the page's end is none). */
static int tag_href(const char **pp, const char *end, const char **v,
                    size_t *vl) {
  const char *p = *pp;
  int found = 0;
  while (p < end && *p != '>') {
    while (p < end && (space(*p) || *p == '/'))
      p++;
    const char *name = p;
    while (p < end && !space(*p) && *p != '=' && *p != '>' && *p != '/')
      p++;
    size_t nl = (size_t)(p - name);
    if (!nl && p < end && *p == '=') { /* "=" starts a name in HTML */
      p++;
      continue;
    }
    while (p < end && space(*p))
      p++;
    if (p >= end || *p != '=') {
      if (p < end && *p != '>' && p == name)
        p++; /* a stray character: step over it */
      continue;
    }
    p++;
    while (p < end && space(*p))
      p++;
    const char *val = p;
    size_t len;
    if (p < end && (*p == '"' || *p == '\'')) {
      char q = *p++;
      val = p;
      while (p < end && *p != q)
        p++;
      len = (size_t)(p - val);
      if (p < end)
        p++;
    } else {
      while (p < end && !space(*p) && *p != '>')
        p++;
      len = (size_t)(p - val);
    }
    if (!found && nl == 4 && starts_ci(name, nl, "href")) {
      *v = val;
      *vl = len;
      found = 1;
    }
  }
  *pp = p < end ? p + 1 : end;
  return found && p < end;
}

int htindex_parse(const char *page, size_t len, const char *url, htindex_cb cb,
                  void *ud, struct zerr *err) {
  const char *path;
  if (split_url(url, &path) < 0)
    return zerr_set(err, EINVAL, "%s: not the URL of a directory", url);
  const char *p = page, *end = page + len;
  size_t entries = 0;
  while (p < end) {
    const char *lt = memchr(p, '<', (size_t)(end - p));
    if (!lt)
      break;
    p = lt + 1;
    if (starts_ci(p, (size_t)(end - p), "!--")) { /* a comment */
      const char *c = p + 3;
      while (c + 2 < end && !(c[0] == '-' && c[1] == '-' && c[2] == '>'))
        c++;
      p = c + 2 < end ? c + 3 : end;
      continue;
    }
    if (p + 1 >= end || lower(p[0]) != 'a' ||
        !(space(p[1]) || p[1] == '>' || p[1] == '/'))
      continue;
    p++;
    const char *v = NULL;
    size_t vl = 0;
    if (!tag_href(&p, end, &v, &vl) || vl > HTINDEX_HREF_MAX)
      continue;
    char href[HTINDEX_HREF_MAX + 1], name[HTINDEX_HREF_MAX + 1];
    size_t hl = unescape(v, vl, href, HTINDEX_HREF_MAX);
    if (hl == (size_t)-1)
      continue;
    href[hl] = '\0';
    const char *rel;
    size_t rl, nl;
    int is_dir;
    if (!resolve(href, hl, url, path, &rel, &rl, &is_dir) ||
        (nl = decode_name(rel, rl, name)) == (size_t)-1)
      continue;
    if (++entries > HTINDEX_MAX_ENTRIES)
      return zerr_set(err, EFBIG, "%s: more than %d entries in the index page",
                      url, HTINDEX_MAX_ENTRIES);
    int stop = cb(ud, name, nl, is_dir);
    if (stop)
      return stop;
  }
  return 0;
}
