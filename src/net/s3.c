/* s3.c - S3 settings, URLs, signing material and listings (see s3.h). */
#define _GNU_SOURCE
#include "s3.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xlist.h"

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

char *s3_pct_encode(char *o, const char *s, int keep_slash) {
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

char *s3_query_add(char *o, const char *name_eq, const char *value) {
  return s3_pct_encode(stpcpy(o, name_eq), value, 0);
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

/* Cloud Storage's XML API: S3's wire format at its own endpoint, always
 * path-style, HMAC keys signed as SigV4 in region "auto". */
int s3_config_load_gcs(const struct s3_options *o, struct s3_config **out,
                       struct zerr *err) {
  struct s3_config *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  int nomem = 0;
  if (!o->no_sign_request && env("GS_ACCESS_KEY_ID") &&
      env("GS_SECRET_ACCESS_KEY")) {
    c->akid = strdup(env("GS_ACCESS_KEY_ID"));
    c->secret = strdup(env("GS_SECRET_ACCESS_KEY"));
    nomem = !c->akid || !c->secret;
  }
  const char *ep = o->endpoint && *o->endpoint ? o->endpoint
                   : env("CPL_GS_ENDPOINT")    ? env("CPL_GS_ENDPOINT")
                                               : S3_GCS_ENDPOINT;
  c->named_endpoint = c->named_region = 1;
  c->region = strdup("auto");
  int rc = 0;
  if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
    rc = zerr_set(err, EINVAL,
                  "Cloud Storage endpoint %s: not an http:// or https:// URL",
                  ep);
  } else if ((c->endpoint = strdup(ep))) {
    size_t n = strlen(c->endpoint);
    while (n > 8 && c->endpoint[n - 1] == '/')
      c->endpoint[--n] = '\0';
  }
  if (rc == 0 && (nomem || !c->region || !c->endpoint))
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
  if (strncmp(url, "s3://", 5) && strncmp(url, "gs://", 5))
    return zerr_set(err, EINVAL, "%s: not an s3:// or gs:// URL", url);
  return s3_split_url(url, "bucket", bucket, key, err);
}

int s3_split_url(const char *url, const char *noun, char **bucket, char **key,
                 struct zerr *err) {
  const char *b = url + 5, *slash = strchr(b, '/');
  size_t bl = slash ? (size_t)(slash - b) : strlen(b);
  if (!bl)
    return zerr_set(err, EINVAL, "%s: no %s named", url, noun);
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
  s3_pct_encode(enc, bucket, 0);
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
  s3_pct_encode(o, key, 1);
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
  if (token)
    o = stpcpy(s3_query_add(o, "continuation-token=", token), "&");
  if (delimiter)
    o = stpcpy(s3_query_add(o, "delimiter=", delimiter), "&");
  o +=
      sprintf(o, "encoding-type=url&list-type=2&max-keys=%d&prefix=", max_keys);
  s3_pct_encode(o, prefix, 0);
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

int s3_list_parse(const char *xml, size_t len, const struct s3_list_cbs *cb,
                  void *ud, int *truncated, char **next_token,
                  struct zerr *err) {
  return xlist_parse(XLIST_S3, "S3 listing", xml, len, cb, ud, truncated,
                     next_token, err);
}
