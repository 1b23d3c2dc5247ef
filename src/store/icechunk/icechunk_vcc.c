/* icechunk_vcc.c - the virtual chunk containers of a repository's
 * configuration: each one's url_prefix and its store (the kind, and for
 * S3 stores endpoint_url, region, anonymous, force_path_style), from the
 * spec 2 repo file's FlexBuffers configuration or a spec 1 config.yaml.
 * Every setting is checked before it is kept: an endpoint that is not an
 * http(s) URL or a region with odd characters makes the container
 * unusable (its chunks are refused, never fetched elsewhere). Parsing
 * only, no locks. The icefmt_ prefix is the format module's. */
#define _GNU_SOURCE
#include "icechunk_fmt.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "../../json/flatbuf.h"
#include "icechunk_common.h"

/* The kind of a store named s[0..n): Icechunk's snake case names, or the
 * CamelCase of older writers. */
static enum icefmt_vkind kind_of(const char *s, size_t n) {
  char b[32];
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (k == sizeof b - 1)
      return ICEFMT_VK_OTHER;
    if (s[i] != '_')
      b[k++] = (char)tolower((unsigned char)s[i]);
  }
  b[k] = '\0';
  if (!strcmp(b, "s3") || !strcmp(b, "s3compatible") || !strcmp(b, "tigris") ||
      !strcmp(b, "r2"))
    return ICEFMT_VK_S3;
  if (!strcmp(b, "http"))
    return ICEFMT_VK_HTTP;
  if (!strcmp(b, "localfilesystem"))
    return ICEFMT_VK_LOCAL;
  return ICEFMT_VK_OTHER;
}

/* Is every byte of s[0..n) a visible ASCII character? */
static int visible(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
      return 0;
  return 1;
}

/* endpoint_url s[0..n) ("" or NULL: unset) into v. */
static int set_endpoint(struct icefmt_vstore *v, const char *s, size_t n,
                        struct zerr *err) {
  if (!s || !n)
    return 0;
  if (n > ICEFMT_ENDPOINT_MAX || !visible(s, n) ||
      !((n > 7 && !strncmp(s, "http://", 7)) ||
        (n > 8 && !strncmp(s, "https://", 8)))) {
    v->unusable = "its endpoint_url is not an http:// or https:// URL";
    return 0;
  }
  free(v->endpoint);
  if (!(v->endpoint = strndup(s, n)))
    return zerr_set(err, ENOMEM, "out of memory");
  return 0;
}

/* region s[0..n) ("" or NULL: unset) into v. */
static int set_region(struct icefmt_vstore *v, const char *s, size_t n,
                      struct zerr *err) {
  if (!s || !n)
    return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '-' && s[i] != '_' &&
        s[i] != '.')
      n = ICEFMT_REGION_MAX + 1;
  if (n > ICEFMT_REGION_MAX) {
    v->unusable = "its region is not a region name";
    return 0;
  }
  free(v->region);
  if (!(v->region = strndup(s, n)))
    return zerr_set(err, ENOMEM, "out of memory");
  return 0;
}

/* Free the settings of v. */
static void vstore_clear(struct icefmt_vstore *v) {
  free(v->endpoint);
  free(v->region);
  memset(v, 0, sizeof *v);
}

/* Append the container of url_prefix s[0..n) and store v (taken: its
 * strings belong to r from now on, or are freed on failure). A prefix
 * that is empty or holds a NUL byte names no container. */
static int add_container(struct icefmt_repo *r, const char *s, size_t n,
                         struct icefmt_vstore *v, struct zerr *err) {
  if (!n || memchr(s, '\0', n)) {
    vstore_clear(v);
    return 0;
  }
  char **c = realloc(r->containers, (r->ncontainers + 1) * sizeof *c);
  if (c)
    r->containers = c;
  struct icefmt_vstore *st =
      c ? realloc(r->stores, (r->ncontainers + 1) * sizeof *st) : NULL;
  if (st)
    r->stores = st;
  if (!c || !st || !(c[r->ncontainers] = strndup(s, n))) {
    vstore_clear(v);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  st[r->ncontainers++] = *v;
  memset(v, 0, sizeof *v);
  return 0;
}

/* Free the prefixes and stores; r holds none after. */
void icefmt_containers_free(struct icefmt_repo *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->ncontainers; i++) {
    free(r->containers[i]);
    if (r->stores)
      vstore_clear(&r->stores[i]);
  }
  free(r->containers);
  free(r->stores);
  r->containers = NULL;
  r->stores = NULL;
  r->ncontainers = 0;
}

/* The longest url_prefix that url starts with. */
long icefmt_container_of(const struct icefmt_repo *r, const char *url) {
  long best = -1;
  size_t best_n = 0;
  for (size_t i = 0; i < r->ncontainers; i++) {
    size_t n = strlen(r->containers[i]);
    if (n > best_n && !strncmp(url, r->containers[i], n)) {
      best = (long)i;
      best_n = n;
    }
  }
  return best;
}

/* ---- spec 2: FlexBuffers ---- */

/* A boolean (or integer) value: 1 or 0, -1 when v is neither. */
static int flex_bool(const struct fb_flex *v) {
  int t = fb_flex_type(v);
  if ((t != FB_FLEX_BOOL && t != FB_FLEX_INT && t != FB_FLEX_UINT) ||
      (uint64_t)v->pos + v->width > v->len)
    return -1;
  for (unsigned i = 0; i < v->width; i++)
    if (v->buf[v->pos + i])
      return 1;
  return 0;
}

/* The string of key in map m: 1 with *s and *n, else 0. */
static int flex_str(const struct fb_flex *m, const char *key, const char **s,
                    uint32_t *n) {
  struct fb_flex x;
  struct zerr e = {0};
  return fb_flex_get(m, key, &x, &e) == 1 && fb_flex_string(&x, s, n, &e) == 1;
}

/* The boolean of key in map m (0 when absent or not one). */
static int flex_flag(const struct fb_flex *m, const char *key) {
  struct fb_flex x;
  struct zerr e = {0};
  return fb_flex_get(m, key, &x, &e) == 1 && flex_bool(&x) == 1;
}

/* A container's store: a map of one kind to its settings (or the kind's
 * name alone). */
static int flex_store(const struct fb_flex *store, struct icefmt_vstore *v,
                      struct zerr *err) {
  struct zerr e = {0};
  const char *s;
  uint32_t n;
  if (fb_flex_string(store, &s, &n, &e) == 1) {
    v->kind = kind_of(s, n);
    return 0;
  }
  struct fb_flex conf;
  if (fb_flex_size(store, &n, &e) < 0 || n != 1 ||
      fb_flex_key(store, 0, &s, &n, &e) < 0 ||
      fb_flex_at(store, 0, &conf, &e) < 0) {
    v->unusable = "its store is not one kind of store";
    return 0;
  }
  v->kind = kind_of(s, n);
  if (fb_flex_type(&conf) != FB_FLEX_MAP)
    return 0;
  if (flex_str(&conf, "endpoint_url", &s, &n))
    ZTRY(set_endpoint(v, s, n, err));
  if (flex_str(&conf, "region", &s, &n))
    ZTRY(set_region(v, s, n, err));
  v->anonymous = flex_flag(&conf, "anonymous");
  v->force_path_style = flex_flag(&conf, "force_path_style");
  v->allow_http = flex_flag(&conf, "allow_http");
  return 0;
}

/* Each container of the configuration's virtual_chunk_containers map. */
int icefmt_repo_config(const struct fb_table *t, struct icefmt_repo *r,
                       struct zerr *err) {
  r->containers_known = 1;
  struct fb_vec v;
  struct zerr e2 = {0};
  if (fb_vector(t, 9, 1, 1, &v, &e2) <= 0 || v.n == 0)
    return 0;
  struct fb_flex root, vcc, c, up, store;
  if (fb_flex_root(v.buf + v.pos, v.n, &root, &e2) < 0 ||
      fb_flex_get(&root, "virtual_chunk_containers", &vcc, &e2) <= 0)
    return 0;
  uint32_t n;
  if (fb_flex_size(&vcc, &n, &e2) < 0)
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *s;
    uint32_t sn;
    if (fb_flex_at(&vcc, i, &c, &e2) < 0 ||
        fb_flex_get(&c, "url_prefix", &up, &e2) != 1 ||
        fb_flex_string(&up, &s, &sn, &e2) != 1 || sn == 0)
      continue;
    struct icefmt_vstore vs = {0};
    int rc = 0;
    if (fb_flex_get(&c, "store", &store, &e2) == 1)
      rc = flex_store(&store, &vs, err);
    if (rc == 0)
      rc = add_container(r, s, sn, &vs, err);
    if (rc < 0) {
      vstore_clear(&vs);
      return rc;
    }
  }
  return 0;
}

/* ---- spec 1: config.yaml ---- */

/* A scalar s[0..n) without its quotes; "null" and "~" are none (*n 0). */
static void yaml_scalar(const char **s, size_t *n) {
  if (*n >= 2 && (**s == '"' || **s == '\'') && (*s)[*n - 1] == **s) {
    (*s)++;
    *n -= 2;
  } else if ((*n == 4 && !memcmp(*s, "null", 4)) || (*n == 1 && **s == '~')) {
    *n = 0;
  }
}

/* The container being read from config.yaml. */
struct ycont {
  int open;
  const char *prefix;
  size_t prefix_n;
  struct icefmt_vstore v;
  int store_indent; /* the `store:` line's, -1 when not inside it */
};

/* End the container being read: appended when it had a url_prefix. */
static int ycont_end(struct ycont *c, struct icefmt_repo *r, struct zerr *err) {
  int rc = 0;
  if (c->open && c->prefix)
    rc = add_container(r, c->prefix, c->prefix_n, &c->v, err);
  vstore_clear(&c->v);
  memset(c, 0, sizeof *c);
  c->store_indent = -1;
  return rc;
}

/* One `key: value` line (at indent) of the container c. */
static int ycont_line(struct ycont *c, int indent, const char *q, const char *e,
                      struct zerr *err) {
  const char *colon = memchr(q, ':', (size_t)(e - q));
  if (!colon)
    return 0;
  size_t kn = (size_t)(colon - q);
  const char *val = colon + 1;
  while (val < e && *val == ' ')
    val++;
  size_t vn = (size_t)(e - val);
  if (c->store_indent >= 0 && indent > c->store_indent) {
    yaml_scalar(&val, &vn);
    if (kn == 12 && !memcmp(q, "endpoint_url", 12))
      return set_endpoint(&c->v, val, vn, err);
    if (kn == 6 && !memcmp(q, "region", 6))
      return set_region(&c->v, val, vn, err);
    int flag = vn == 4 && !memcmp(val, "true", 4);
    if (kn == 9 && !memcmp(q, "anonymous", 9))
      c->v.anonymous = flag;
    else if (kn == 16 && !memcmp(q, "force_path_style", 16))
      c->v.force_path_style = flag;
    else if (kn == 10 && !memcmp(q, "allow_http", 10))
      c->v.allow_http = flag;
    return 0;
  }
  c->store_indent = -1;
  if (kn == 10 && !memcmp(q, "url_prefix", 10)) {
    yaml_scalar(&val, &vn);
    c->prefix = vn ? val : NULL;
    c->prefix_n = vn;
  } else if (kn == 5 && !memcmp(q, "store", 5)) {
    c->store_indent = indent;
    if (vn > 1 && *val == '!') {
      const char *k = val + 1, *ke = k;
      while (ke < e && *ke != ' ')
        ke++;
      c->v.kind = kind_of(k, (size_t)(ke - k));
    }
  }
  return 0;
}

/* Line by line: the section, its containers (a map or a list), and
 * each container's keys by indentation. */
int icefmt_config_yaml(const char *text, size_t len, struct icefmt_repo *r,
                       struct zerr *err) {
  r->containers_known = 1;
  const char *p = text, *end = text + len;
  int vi = -1, ci = -1; /* indents: the section's key, a container's key */
  struct ycont c = {0};
  c.store_indent = -1;
  int rc = 0;
  while (p < end && rc == 0) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
      eol = end;
    const char *q = p;
    while (q < eol && *q == ' ')
      q++;
    const char *e = eol;
    while (e > q && (e[-1] == ' ' || e[-1] == '\r' || e[-1] == '\t'))
      e--;
    int indent = (int)(q - p);
    p = eol + 1;
    if (q == e || *q == '#' || indent > 1000)
      continue;
    static const char sect[] = "virtual_chunk_containers:";
    if (vi >= 0 && indent <= vi && !(indent == vi && *q == '-')) {
      rc = ycont_end(&c, r, err);
      vi = ci = -1;
    }
    if (vi < 0) {
      if ((size_t)(e - q) >= sizeof sect - 1 &&
          !memcmp(q, sect, sizeof sect - 1)) {
        vi = indent;
        ci = -1;
      }
      continue;
    }
    if (ci < 0)
      ci = indent;
    if (indent == ci && e - q >= 1 && *q == '-') {
      /* a list of containers (older writers): "- key: value" */
      rc = ycont_end(&c, r, err);
      c.open = 1;
      q++;
      while (q < e && *q == ' ')
        q++;
      if (rc == 0 && q < e)
        rc = ycont_line(&c, indent + 2, q, e, err);
    } else if (indent == ci) {
      rc = ycont_end(&c, r, err); /* "name:": a map of containers */
      c.open = 1;
    } else if (indent > ci && c.open) {
      rc = ycont_line(&c, indent, q, e, err);
    }
  }
  if (rc == 0)
    rc = ycont_end(&c, r, err);
  else
    vstore_clear(&c.v);
  return rc;
}
