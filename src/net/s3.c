/* s3.c - S3 settings, URLs, signing material and listings (see s3.h). */
#define _GNU_SOURCE
#include "s3.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <expat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct s3_config {
  char *akid, *secret, *token; /* NULL when anonymous */
  char *region;
  char *endpoint; /* no trailing '/', or NULL for AWS */
  int requester_pays;
  int named_endpoint, named_region; /* given as options (s3_config_derive) */
};

/* ---- small helpers ---- */

static char *dup_or_null(const char *s) { return s && *s ? strdup(s) : NULL; }

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static void wipe_free(char *s) {
  if (s) {
    explicit_bzero(s, strlen(s));
    free(s);
  }
}

/* Append the percent-encoding of s to o (NUL-terminated, room checked by
 * the caller: 3 bytes per input byte); '/' kept when keep_slash. */
static char *pct(char *o, const char *s, int keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~' ||
        (keep_slash && *p == '/')) {
      *o++ = (char)*p;
    } else {
      *o++ = '%';
      *o++ = hex[*p >> 4];
      *o++ = hex[*p & 15];
    }
  }
  *o = '\0';
  return o;
}

/* ---- INI files (~/.aws/credentials, ~/.aws/config) ---- */

struct profile {
  char *akid, *secret, *token, *region, *endpoint;
};

static void profile_free(struct profile *p) {
  wipe_free(p->akid);
  wipe_free(p->secret);
  wipe_free(p->token);
  free(p->region);
  free(p->endpoint);
}

/* Trim spaces at both ends in place. */
static char *trim(char *s) {
  while (isspace((unsigned char)*s))
    s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1]))
    s[--n] = '\0';
  return s;
}

/* Read section `want` of an INI file into p (keys not already set). In the
 * config file a section is "[profile NAME]" (or "[default]"). */
static void ini_read(const char *path, const char *want, int config,
                     struct profile *p) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f)
    return;
  char line[4096];
  int in = 0;
  while (fgets(line, sizeof line, f)) {
    char *l = trim(line);
    if (!*l || *l == '#' || *l == ';')
      continue;
    if (*l == '[') {
      char *e = strchr(l, ']');
      if (!e)
        continue;
      *e = '\0';
      char *name = trim(l + 1);
      if (config && strcmp(name, "default")) {
        if (strncmp(name, "profile", 7) || !isspace((unsigned char)name[7])) {
          in = 0;
          continue;
        }
        name = trim(name + 7);
      }
      in = !strcmp(name, want);
      continue;
    }
    char *eq = strchr(l, '=');
    if (!in || !eq)
      continue;
    *eq = '\0';
    char *k = trim(l), *v = trim(eq + 1);
    char **dst = !strcmp(k, "aws_access_key_id")       ? &p->akid
                 : !strcmp(k, "aws_secret_access_key") ? &p->secret
                 : !strcmp(k, "aws_session_token")     ? &p->token
                 : !strcmp(k, "region")                ? &p->region
                 : !strcmp(k, "endpoint_url")          ? &p->endpoint
                                                       : NULL;
    if (dst && !*dst && *v)
      *dst = strdup(v);
  }
  explicit_bzero(line, sizeof line);
  fclose(f);
}

/* The files of profile name. */
static void profile_load(const char *name, struct profile *p) {
  const char *home = env("HOME");
  char *cred = NULL, *conf = NULL;
  const char *c1 = env("AWS_SHARED_CREDENTIALS_FILE");
  const char *c2 = env("AWS_CONFIG_FILE");
  if (!c1 && home && asprintf(&cred, "%s/.aws/credentials", home) < 0)
    cred = NULL;
  if (!c2 && home && asprintf(&conf, "%s/.aws/config", home) < 0)
    conf = NULL;
  ini_read(c1 ? c1 : cred, name, 0, p);
  ini_read(c2 ? c2 : conf, name, 1, p);
  free(cred);
  free(conf);
}

/* ---- config ---- */

int s3_config_load(const struct s3_options *o, struct s3_config **out,
                   struct zerr *err) {
  struct s3_config *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  struct profile p = {0};
  const char *pname =
      o->profile && *o->profile ? o->profile : env("AWS_PROFILE");
  profile_load(pname ? pname : "default", &p);
  int nomem = 0; /* credentials lost for lack of memory: not anonymous */
  if (!o->no_sign_request) {
    if (env("AWS_ACCESS_KEY_ID") && env("AWS_SECRET_ACCESS_KEY")) {
      c->akid = strdup(env("AWS_ACCESS_KEY_ID"));
      c->secret = strdup(env("AWS_SECRET_ACCESS_KEY"));
      c->token = dup_or_null(env("AWS_SESSION_TOKEN"));
      nomem = !c->akid || !c->secret || (env("AWS_SESSION_TOKEN") && !c->token);
    } else if (p.akid && p.secret) {
      c->akid = strdup(p.akid);
      c->secret = strdup(p.secret);
      c->token = dup_or_null(p.token);
      nomem = !c->akid || !c->secret || (p.token && *p.token && !c->token);
    }
  }
  const char *region = o->region && *o->region     ? o->region
                       : env("AWS_REGION")         ? env("AWS_REGION")
                       : env("AWS_DEFAULT_REGION") ? env("AWS_DEFAULT_REGION")
                       : p.region                  ? p.region
                                                   : "us-east-1";
  const char *ep = o->endpoint && *o->endpoint  ? o->endpoint
                   : env("AWS_ENDPOINT_URL_S3") ? env("AWS_ENDPOINT_URL_S3")
                   : env("AWS_ENDPOINT_URL")    ? env("AWS_ENDPOINT_URL")
                                                : p.endpoint;
  c->region = strdup(region);
  c->requester_pays = o->requester_pays;
  c->named_endpoint = o->endpoint && *o->endpoint;
  c->named_region = o->region && *o->region;
  int rc = 0;
  if (ep) {
    if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
      rc = zerr_set(err, EINVAL,
                    "S3 endpoint %s: not an http:// or https:// URL", ep);
    } else if ((c->endpoint = strdup(ep))) {
      size_t n = strlen(c->endpoint);
      while (n > 8 && c->endpoint[n - 1] == '/')
        c->endpoint[--n] = '\0';
    }
  }
  profile_free(&p);
  if (rc == 0 && (nomem || !c->region || (ep && !c->endpoint)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    s3_config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* A copy of base with the container's endpoint, region and anonymity. */
int s3_config_derive(const struct s3_config *base, const char *endpoint,
                     const char *region, int anonymous, struct s3_config **out,
                     struct zerr *err) {
  if (endpoint && strncmp(endpoint, "http://", 7) &&
      strncmp(endpoint, "https://", 8))
    return zerr_set(err, EINVAL,
                    "S3 endpoint %s: not an http:// or https:// URL", endpoint);
  struct s3_config *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  *c = *base;
  c->akid = c->secret = c->token = c->region = c->endpoint = NULL;
  if (!anonymous && base->akid) {
    c->akid = strdup(base->akid);
    c->secret = strdup(base->secret);
    c->token = dup_or_null(base->token);
  }
  const char *ep =
      base->named_endpoint || !endpoint ? base->endpoint : endpoint;
  c->region = strdup(base->named_region || !region ? base->region : region);
  if (ep && (c->endpoint = strdup(ep))) {
    size_t n = strlen(c->endpoint);
    while (n > 8 && c->endpoint[n - 1] == '/')
      c->endpoint[--n] = '\0';
  }
  if (!c->region || (ep && !c->endpoint) ||
      (!anonymous && base->akid &&
       (!c->akid || !c->secret || (base->token && !c->token)))) {
    s3_config_free(c);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = c;
  return 0;
}

void s3_config_free(struct s3_config *c) {
  if (!c)
    return;
  wipe_free(c->akid);
  wipe_free(c->secret);
  wipe_free(c->token);
  free(c->region);
  free(c->endpoint);
  free(c);
}

int s3_is_anonymous(const struct s3_config *c) { return !c->akid; }

/* The configured endpoint, and whether an option named it. */
const char *s3_endpoint(const struct s3_config *c, int *option) {
  *option = c->named_endpoint;
  return c->endpoint;
}

/* ---- URLs ---- */

int s3_parse_url(const char *url, char **bucket, char **key, struct zerr *err) {
  if (strncmp(url, "s3://", 5))
    return zerr_set(err, EINVAL, "%s: not an s3:// URL", url);
  const char *b = url + 5, *slash = strchr(b, '/');
  size_t bl = slash ? (size_t)(slash - b) : strlen(b);
  if (!bl)
    return zerr_set(err, EINVAL, "%s: no bucket named", url);
  *bucket = strndup(b, bl);
  *key = strdup(slash ? slash + 1 : "");
  if (!*bucket || !*key) {
    free(*bucket);
    free(*key);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  return 0;
}

/* The URL up to (not including) the object key: "E/BUCKET/" path-style,
 * "https://BUCKET.s3.R.amazonaws.com/" virtual-hosted. */
static char *bucket_base(const struct s3_config *c, const char *bucket) {
  char *out = NULL, enc[3 * 256 + 1];
  if (strlen(bucket) > 255)
    return NULL;
  pct(enc, bucket, 0);
  int r;
  if (c->endpoint)
    r = asprintf(&out, "%s/%s/", c->endpoint, enc);
  else if (strchr(bucket, '.')) /* TLS names cannot hold the dots */
    r = asprintf(&out, "https://s3.%s.amazonaws.com/%s/", c->region, enc);
  else
    r = asprintf(&out, "https://%s.s3.%s.amazonaws.com/", enc, c->region);
  return r < 0 ? NULL : out;
}

int s3_object_url(const struct s3_config *c, const char *bucket,
                  const char *key, char **url, struct zerr *err) {
  char *base = bucket_base(c, bucket);
  char *out = base ? malloc(strlen(base) + 3 * strlen(key) + 1) : NULL;
  if (!out) {
    free(base);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  char *o = stpcpy(out, base);
  pct(o, key, 1);
  free(base);
  *url = out;
  return 0;
}

int s3_list_url(const struct s3_config *c, const char *bucket,
                const char *prefix, const char *delimiter, const char *token,
                int max_keys, char **url, struct zerr *err) {
  char *base = bucket_base(c, bucket);
  size_t cap = (base ? strlen(base) : 0) + 3 * strlen(prefix) +
               3 * (delimiter ? strlen(delimiter) : 0) +
               3 * (token ? strlen(token) : 0) + 128;
  char *out = base ? malloc(cap) : NULL;
  if (!out) {
    free(base);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  /* Path-style list requests go to ".../BUCKET" (no trailing '/'). */
  char *o = stpcpy(out, base);
  if (c->endpoint || strchr(bucket, '.'))
    *--o = '\0';
  free(base);
  /* Sorted by name: continuation-token, delimiter, encoding-type,
   * list-type, max-keys, prefix (libcurl 7.88 signs the query as given).
   * encoding-type=url: keys come percent-encoded, so a key holding a
   * character XML 1.0 cannot carry does not break the page. */
  *o++ = '?';
  if (token) {
    o = stpcpy(o, "continuation-token=");
    o = pct(o, token, 0);
    *o++ = '&';
  }
  if (delimiter) {
    o = stpcpy(o, "delimiter=");
    o = pct(o, delimiter, 0);
    *o++ = '&';
  }
  o +=
      sprintf(o, "encoding-type=url&list-type=2&max-keys=%d&prefix=", max_keys);
  pct(o, prefix, 0);
  *url = out;
  return 0;
}

/* ---- signing material ---- */

int s3_signing_new(const struct s3_config *c, struct s3_signing *out,
                   struct zerr *err) {
  memset(out, 0, sizeof *out);
  char *tok = NULL;
  int ok = 1;
  if (c->akid) {
    ok = asprintf(&out->sigv4, "aws:amz:%s:s3", c->region) >= 0 &&
         asprintf(&out->userpwd, "%s:%s", c->akid, c->secret) >= 0;
    struct curl_slist *h =
        ok ? curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD")
           : NULL;
    ok = ok && h;
    out->headers = h;
    if (ok && c->token) {
      ok = asprintf(&tok, "x-amz-security-token: %s", c->token) >= 0 &&
           (h = curl_slist_append(out->headers, tok));
      if (tok) {
        explicit_bzero(tok, strlen(tok));
        free(tok);
      }
      if (ok)
        out->headers = h;
    }
  }
  if (ok && c->requester_pays) {
    struct curl_slist *h =
        curl_slist_append(out->headers, "x-amz-request-payer: requester");
    ok = h != NULL;
    if (ok)
      out->headers = h;
  }
  if (!ok) {
    s3_signing_free(out);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  return 0;
}

void s3_signing_free(struct s3_signing *s) {
  curl_slist_free_all(s->headers); /* the token header too */
  free(s->sigv4);
  wipe_free(s->userpwd);
  memset(s, 0, sizeof *s);
}

/* ---- ListObjectsV2 ---- */

/* An entry of one page, delivered after the whole page is parsed (the
 * <EncodingType> that says how to read keys may come after them). */
struct lp_entry {
  char *key; /* as in the XML */
  uint64_t size;
  int is_prefix;
};

struct lp {
  XML_Parser xp;
  int depth;
  int in_contents, in_prefixes, is_error;
  char *text; /* character data of the current element */
  size_t tlen, tcap;
  int text_nul;
  char *key, *cp; /* Contents/Key, CommonPrefixes/Prefix */
  uint64_t size;
  int truncated, url_encoded;
  char *token;
  char *code, *message; /* an <Error> */
  struct lp_entry *e;
  size_t n, cap;
  int stop; /* -ENOMEM / -EIO */
};

static void lp_start(void *ud, const XML_Char *name, const XML_Char **attrs) {
  (void)attrs;
  struct lp *p = ud;
  p->depth++;
  p->tlen = 0;
  p->text_nul = 0;
  if (p->depth == 1 && !strcmp(name, "Error"))
    p->is_error = 1;
  if (p->depth == 2 && !strcmp(name, "Contents")) {
    p->in_contents = 1;
    free(p->key);
    p->key = NULL;
    p->size = 0;
  }
  if (p->depth == 2 && !strcmp(name, "CommonPrefixes")) {
    p->in_prefixes = 1;
    free(p->cp);
    p->cp = NULL;
  }
}

static void lp_chars(void *ud, const XML_Char *s, int len) {
  struct lp *p = ud;
  if (p->tlen + (size_t)len + 1 > p->tcap) {
    size_t cap = p->tcap ? p->tcap : 256;
    while (cap < p->tlen + (size_t)len + 1)
      cap *= 2;
    char *t = realloc(p->text, cap);
    if (!t) {
      p->stop = -ENOMEM;
      XML_StopParser(p->xp, XML_FALSE);
      return;
    }
    p->text = t;
    p->tcap = cap;
  }
  if (memchr(s, '\0', (size_t)len))
    p->text_nul = 1;
  memcpy(p->text + p->tlen, s, (size_t)len);
  p->tlen += (size_t)len;
  p->text[p->tlen] = '\0';
}

/* The text of the element that just ended (malloc'd). */
static char *lp_text(struct lp *p) {
  return strndup(p->text ? p->text : "", p->tlen);
}

/* Keep an entry of the page (its key taken over). */
static void lp_keep(struct lp *p, char **key, uint64_t size, int is_prefix) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 64;
    struct lp_entry *e = realloc(p->e, cap * sizeof *e);
    if (!e) {
      p->stop = -ENOMEM;
      XML_StopParser(p->xp, XML_FALSE);
      return;
    }
    p->e = e;
    p->cap = cap;
  }
  p->e[p->n++] = (struct lp_entry){*key, size, is_prefix};
  *key = NULL;
}

static void lp_end(void *ud, const XML_Char *name) {
  struct lp *p = ud;
  int d = p->depth--;
  if (p->stop)
    return;
  char **dst = NULL;
  if (d == 3 && p->in_contents && !strcmp(name, "Key"))
    dst = &p->key;
  else if (d == 3 && p->in_prefixes && !strcmp(name, "Prefix"))
    dst = &p->cp;
  else if (d == 2 && !strcmp(name, "NextContinuationToken"))
    dst = &p->token;
  else if (d == 2 && p->is_error && !strcmp(name, "Code"))
    dst = &p->code;
  else if (d == 2 && p->is_error && !strcmp(name, "Message"))
    dst = &p->message;
  if (dst) {
    if (p->text_nul && dst != &p->message) {
      p->stop = -EIO;
      XML_StopParser(p->xp, XML_FALSE);
      return;
    }
    free(*dst);
    if (!(*dst = lp_text(p))) {
      p->stop = -ENOMEM;
      XML_StopParser(p->xp, XML_FALSE);
    }
    return;
  }
  if (d == 3 && p->in_contents && !strcmp(name, "Size"))
    p->size = strtoull(p->text ? p->text : "0", NULL, 10);
  else if (d == 2 && !strcmp(name, "IsTruncated"))
    p->truncated = p->tlen == 4 && !strncmp(p->text, "true", 4);
  else if (d == 2 && !strcmp(name, "EncodingType"))
    p->url_encoded = p->tlen == 3 && !strncmp(p->text, "url", 3);
  if (d == 2 && !strcmp(name, "Contents")) {
    p->in_contents = 0;
    if (p->key)
      lp_keep(p, &p->key, p->size, 0);
  } else if (d == 2 && !strcmp(name, "CommonPrefixes")) {
    p->in_prefixes = 0;
    if (p->cp)
      lp_keep(p, &p->cp, 0, 1);
  }
}

/* Decode S3's url encoding of a key in place (%XX, '+' a space, as
 * botocore's unquote_plus). 0, or -1 for a bad escape or a NUL byte. */
static int url_decode(char *s) {
  char *o = s;
  for (const char *p = s; *p; p++) {
    if (*p == '+') {
      *o++ = ' ';
    } else if (*p == '%') {
      if (!isxdigit((unsigned char)p[1]) || !isxdigit((unsigned char)p[2]))
        return -1;
      char hx[3] = {p[1], p[2], 0};
      char c = (char)strtol(hx, NULL, 16);
      if (!c)
        return -1;
      *o++ = c;
      p += 2;
    } else {
      *o++ = *p;
    }
  }
  *o = '\0';
  return 0;
}

int s3_list_parse(const char *xml, size_t len, const struct s3_list_cbs *cb,
                  void *ud, int *truncated, char **next_token,
                  struct zerr *err) {
  *truncated = 0;
  *next_token = NULL;
  struct lp p = {0};
  if (len > (size_t)INT32_MAX)
    return zerr_set(err, EIO, "S3 listing: response too large");
  p.xp = XML_ParserCreate("UTF-8");
  if (!p.xp)
    return zerr_set(err, ENOMEM, "out of memory");
  XML_SetUserData(p.xp, &p);
  XML_SetElementHandler(p.xp, lp_start, lp_end);
  XML_SetCharacterDataHandler(p.xp, lp_chars);
  enum XML_Status st = XML_Parse(p.xp, xml, (int)len, XML_TRUE);
  int rc = 0;
  if (p.stop == -ENOMEM)
    rc = zerr_set(err, ENOMEM, "out of memory");
  else if (p.stop == -EIO)
    rc = zerr_set(err, EIO, "S3 listing: a key contains a NUL byte");
  else if (st != XML_STATUS_OK)
    rc = zerr_set(err, EIO, "S3 listing: malformed XML: %s (line %lu)",
                  XML_ErrorString(XML_GetErrorCode(p.xp)),
                  (unsigned long)XML_GetCurrentLineNumber(p.xp));
  else if (p.is_error)
    rc = zerr_set(err, EIO, "S3 error %s: %s", p.code ? p.code : "?",
                  p.message ? p.message : "");
  XML_ParserFree(p.xp);
  for (size_t i = 0; i < p.n && rc == 0; i++) {
    struct lp_entry *e = &p.e[i];
    char *raw = NULL;
    if (p.url_encoded) {
      if (!(raw = strdup(e->key))) {
        rc = zerr_set(err, ENOMEM, "out of memory");
        break;
      }
      if (url_decode(e->key) < 0) {
        if (cb->skip)
          rc = cb->skip(ud, raw, "a NUL byte or a bad %-escape");
        free(raw);
        continue;
      }
    }
    if (e->is_prefix)
      rc = cb->prefix ? cb->prefix(ud, e->key, raw ? raw : e->key) : 0;
    else
      rc = cb->obj ? cb->obj(ud, e->key, raw ? raw : e->key, e->size) : 0;
    free(raw);
  }
  if (rc == 0) {
    *truncated = p.truncated;
    *next_token = p.token;
    p.token = NULL;
  }
  for (size_t i = 0; i < p.n; i++)
    free(p.e[i].key);
  free(p.e);
  free(p.text);
  free(p.key);
  free(p.cp);
  free(p.token);
  free(p.code);
  free(p.message);
  return rc;
}
