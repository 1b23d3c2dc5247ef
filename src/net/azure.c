/* azure.c - Azure Blob Storage settings, URLs, Shared Key signing and
 * listings (see azure.h). HMAC-SHA256 is OpenSSL's (libcrypto, which
 * libcurl links already). */
#define _GNU_SOURCE
#include "azure.h"

#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../util/base64.h"
#include "xlist.h"

/* Azurite's documented development account (its README), for
 * UseDevelopmentStorage=true. */
#define AZ_DEV_ACCOUNT "devstoreaccount1"
#define AZ_DEV_KEY                                                             \
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/" \
  "KBHBeksoGMGw=="
#define AZ_DEV_ENDPOINT "http://127.0.0.1:10000/" AZ_DEV_ACCOUNT
#define AZ_HOST_SUFFIX ".blob.core.windows.net"
/* Longest storage account name (Azure: 3-24 lowercase letters and
 * digits). */
#define AZ_ACCOUNT_MAX 64

struct azure_config {
  char *account; /* "" when unknown */
  uint8_t *key;  /* the decoded account key, or NULL */
  size_t klen;
  char *sas;                  /* a SAS token (no leading '?'), or NULL */
  char *endpoint;             /* no trailing '/' */
  struct curl_slist *headers; /* x-ms-version */
  struct http_signer signer;
};

static const char *env(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static void wipe_free(void *p, size_t n) {
  if (p) {
    explicit_bzero(p, n);
    free(p);
  }
}

/* ---- the connection string ---- */

struct conn {
  char *account, *key, *endpoint, *sas, *proto, *suffix;
  int dev;
};

static void conn_free(struct conn *k) {
  char **f[] = {&k->account, &k->key,   &k->endpoint,
                &k->sas,     &k->proto, &k->suffix};
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    if (*f[i])
      wipe_free(*f[i], strlen(*f[i]));
}

/* "Name=value;Name=value": values may hold '=' (base64 keys end with
 * it), so each splits at its first '='. -EINVAL for a part without one;
 * names not used here are ignored. */
static int conn_parse(const char *cs, struct conn *k, struct zerr *err) {
  const char *p = cs;
  while (*p) {
    size_t n = strcspn(p, ";");
    const char *eq = memchr(p, '=', n);
    if (n && !eq)
      return zerr_set(err, EINVAL,
                      "AZURE_STORAGE_CONNECTION_STRING: a part without '=' "
                      "(want Name=value;...)");
    if (n) {
      size_t nl = (size_t)(eq - p);
      char **dst = NULL;
      static const char *const names[] = {"AccountName",
                                          "AccountKey",
                                          "BlobEndpoint",
                                          "SharedAccessSignature",
                                          "DefaultEndpointsProtocol",
                                          "EndpointSuffix"};
      char **slots[] = {&k->account, &k->key,   &k->endpoint,
                        &k->sas,     &k->proto, &k->suffix};
      for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (nl == strlen(names[i]) && !strncasecmp(p, names[i], nl))
          dst = slots[i];
      if (nl == 21 && !strncasecmp(p, "UseDevelopmentStorage", 21))
        k->dev = n - nl - 1 == 4 && !strncasecmp(eq + 1, "true", 4);
      if (dst) {
        if (*dst)
          wipe_free(*dst, strlen(*dst));
        if (!(*dst = strndup(eq + 1, n - nl - 1)))
          return zerr_set(err, ENOMEM, "out of memory");
      }
    }
    p += n + (p[n] == ';');
  }
  return 0;
}

/* ---- config ---- */

/* The account an endpoint names: "X" of https://X.blob..., else the first
 * segment of its path (Azurite's path-style http://HOST:PORT/ACCOUNT). */
static char *endpoint_account(const char *ep) {
  const char *h = strstr(ep, "://");
  if (!h)
    return NULL;
  h += 3;
  size_t hl = strcspn(h, "/");
  const char *dot = memchr(h, '.', hl);
  if (dot && hl - (size_t)(dot - h) >= 6 && !strncmp(dot, ".blob.", 6))
    return strndup(h, (size_t)(dot - h));
  if (h[hl] == '/' && h[hl + 1])
    return strndup(h + hl + 1, strcspn(h + hl + 1, "/"));
  return NULL;
}

/* The signer's entry point (see http_signer). */
static int az_sign(const void *ud, const char *url, const char *range,
                   const char *cond, struct curl_slist **hdrs,
                   struct zerr *err);

int azure_config_load(const struct azure_options *o, struct azure_config **out,
                      struct zerr *err) {
  struct azure_config *c = calloc(1, sizeof *c);
  struct conn k = {0};
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = 0;
  const char *cs = env("AZURE_STORAGE_CONNECTION_STRING");
  if (cs)
    rc = conn_parse(cs, &k, err);
  const char *acct = k.dev       ? AZ_DEV_ACCOUNT
                     : k.account ? k.account
                                 : env("AZURE_STORAGE_ACCOUNT");
  const char *key = k.dev   ? AZ_DEV_KEY
                    : k.key ? k.key
                            : env("AZURE_STORAGE_KEY");
  const char *sas = k.sas ? k.sas : env("AZURE_STORAGE_SAS_TOKEN");
  const char *ep = o->endpoint && *o->endpoint ? o->endpoint
                   : k.dev                     ? AZ_DEV_ENDPOINT
                                               : k.endpoint;
  char *made = NULL, *from_ep = NULL;
  /* A SOURCE naming another account than the environment's: that
   * account, at its own endpoint, without the environment's secrets. */
  if (o->account && *o->account && (!acct || strcmp(acct, o->account))) {
    acct = o->account;
    key = sas = NULL;
    ep = NULL;
  }
  if (o->account && *o->account && o->sas && *o->sas)
    sas = o->sas;
  if (rc == 0 && !ep && acct) {
    if (asprintf(&made, "%s://%s.blob.%s", k.proto ? k.proto : "https", acct,
                 k.suffix ? k.suffix : "core.windows.net") < 0) {
      made = NULL;
      rc = zerr_set(err, ENOMEM, "out of memory");
    }
    ep = made;
  }
  if (rc == 0 && ep && strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8))
    rc = zerr_set(err, EINVAL,
                  "Azure endpoint %s: not an http:// or https:// URL", ep);
  if (rc == 0 && !acct && ep)
    acct = from_ep = endpoint_account(ep);
  if (rc == 0 && !(c->account = strdup(acct ? acct : "")))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && ep && (c->endpoint = strdup(ep))) {
    size_t n = strlen(c->endpoint);
    while (n > 8 && c->endpoint[n - 1] == '/')
      c->endpoint[--n] = '\0';
  }
  if (rc == 0 && ep && !c->endpoint)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && !o->anonymous && key) {
    if (zbase64_decode(key, strlen(key), &c->key, &c->klen) < 0 || !c->klen)
      rc = zerr_set(err, EINVAL,
                    "the Azure account key (AZURE_STORAGE_KEY or the "
                    "connection string's AccountKey) is not base64");
    else if (!*c->account)
      rc = zerr_set(err, EINVAL,
                    "an Azure account key without an account name: set "
                    "AZURE_STORAGE_ACCOUNT");
  }
  if (rc == 0 && !o->anonymous && !c->key && sas) {
    if (*sas == '?')
      sas++;
    if (!(c->sas = strdup(sas)))
      rc = zerr_set(err, ENOMEM, "out of memory");
  }
  struct curl_slist *h =
      rc == 0 ? curl_slist_append(NULL, "x-ms-version: " AZURE_API_VERSION)
              : NULL;
  if (rc == 0 && !h)
    rc = zerr_set(err, ENOMEM, "out of memory");
  c->headers = h;
  c->signer = (struct http_signer){az_sign, c};
  free(made);
  free(from_ep);
  conn_free(&k);
  if (rc < 0) {
    azure_config_free(c);
    return rc;
  }
  *out = c;
  return 0;
}

void azure_config_free(struct azure_config *c) {
  if (!c)
    return;
  free(c->account);
  wipe_free(c->key, c->klen);
  if (c->sas)
    wipe_free(c->sas, strlen(c->sas));
  free(c->endpoint);
  curl_slist_free_all(c->headers);
  free(c);
}

int azure_is_anonymous(const struct azure_config *c) {
  return !c->key && !c->sas;
}

const char *azure_account(const struct azure_config *c) { return c->account; }

struct curl_slist *azure_headers(const struct azure_config *c) {
  return c->headers;
}

const struct http_signer *azure_signer(const struct azure_config *c) {
  return c->key ? &c->signer : NULL;
}

/* ---- URLs ---- */

int azure_parse_url(const char *url, char **container, char **blob,
                    struct zerr *err) {
  if (strncmp(url, "az://", 5))
    return zerr_set(err, EINVAL, "%s: not an az:// URL", url);
  return s3_split_url(url, "container", container, blob, err);
}

int azure_url_account(const char *url, char *acct, size_t n,
                      const char **rest) {
  if (strncmp(url, "https://", 8))
    return 0;
  const char *h = url + 8;
  size_t hl = strcspn(h, "/?#");
  size_t sl = strlen(AZ_HOST_SUFFIX);
  const char *dot = memchr(h, '.', hl);
  if (!dot || dot == h || (size_t)(dot - h) >= n ||
      hl - (size_t)(dot - h) != sl || strncasecmp(dot, AZ_HOST_SUFFIX, sl))
    return 0;
  memcpy(acct, h, (size_t)(dot - h));
  acct[dot - h] = '\0';
  *rest = h[hl] == '/' ? h + hl + 1 : h + hl;
  return 1;
}

int azure_url_to_az(const struct azure_config *c, const char *url, char **az) {
  char acct[AZ_ACCOUNT_MAX];
  const char *rest;
  if (!c->endpoint || !azure_url_account(url, acct, sizeof acct, &rest))
    return 0;
  size_t hl = (size_t)(rest - url);
  while (hl && url[hl - 1] == '/')
    hl--;
  /* Only the configured endpoint's own URLs (credentials go nowhere
   * else). */
  if (strlen(c->endpoint) != hl || strncasecmp(c->endpoint, url, hl) ||
      strcmp(acct, c->account))
    return 0;
  size_t rl = strcspn(rest, "?#");
  return asprintf(az, "az://%.*s", (int)rl, rest) < 0 ? -1 : 1;
}

int azure_object_url(const struct azure_config *c, const char *container,
                     const char *blob, char **url, struct zerr *err) {
  if (!c->endpoint)
    return zerr_set(err, EINVAL,
                    "az://%s: no Azure storage account: set "
                    "AZURE_STORAGE_ACCOUNT or AZURE_STORAGE_CONNECTION_STRING, "
                    "or -o endpoint=URL",
                    container);
  size_t cap = strlen(c->endpoint) + 3 * (strlen(container) + strlen(blob)) +
               (c->sas ? strlen(c->sas) : 0) + 4;
  char *out = malloc(cap);
  if (!out)
    return zerr_set(err, ENOMEM, "out of memory");
  char *o = stpcpy(out, c->endpoint);
  *o++ = '/';
  o = s3_pct_encode(o, container, 0);
  *o++ = '/';
  o = s3_pct_encode(o, blob, 1);
  if (c->sas) {
    *o++ = '?';
    strcpy(o, c->sas);
  }
  *url = out;
  return 0;
}

int azure_list_url(const struct azure_config *c, const char *container,
                   const char *prefix, const char *delimiter,
                   const char *marker, int max_results, char **url,
                   struct zerr *err) {
  if (!c->endpoint)
    return azure_object_url(c, container, "", url, err); /* its refusal */
  size_t cap = strlen(c->endpoint) + 3 * strlen(container) +
               3 * strlen(prefix) + 3 * (delimiter ? strlen(delimiter) : 0) +
               3 * (marker ? strlen(marker) : 0) +
               (c->sas ? strlen(c->sas) : 0) + 128;
  char *out = malloc(cap);
  if (!out)
    return zerr_set(err, ENOMEM, "out of memory");
  char *o = stpcpy(out, c->endpoint);
  *o++ = '/';
  o = s3_pct_encode(o, container, 0);
  o = stpcpy(o, "?comp=list");
  if (delimiter)
    o = s3_query_add(o, "&delimiter=", delimiter);
  if (marker)
    o = s3_query_add(o, "&marker=", marker);
  o += sprintf(o, "&maxresults=%d&prefix=", max_results);
  o = s3_pct_encode(o, prefix, 0);
  o = stpcpy(o, "&restype=container");
  if (c->sas) {
    *o++ = '&';
    strcpy(o, c->sas);
  }
  *url = out;
  return 0;
}

/* ---- Shared Key ---- */

int azure_hmac_b64(const uint8_t *key, size_t klen, const char *msg,
                   char out[45]) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int ml = 0;
  if (!HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg,
            strlen(msg), mac, &ml) ||
      ml != 32)
    return -EIO;
  EVP_EncodeBlock((unsigned char *)out, mac, 32);
  explicit_bzero(mac, sizeof mac);
  return 0;
}

/* Decode %XX escapes of n bytes of s into o (NUL-terminated). */
static void pct_decode(char *o, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '%' && i + 2 < n && isxdigit((unsigned char)s[i + 1]) &&
        isxdigit((unsigned char)s[i + 2])) {
      char hx[3] = {s[i + 1], s[i + 2], 0};
      *o++ = (char)strtol(hx, NULL, 16);
      i += 2;
    } else {
      *o++ = s[i];
    }
  }
  *o = '\0';
}

static int qcmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int azure_string_to_sign(const char *account, const char *url,
                         const char *range, const char *cond, const char *date,
                         const char *version, char **out, struct zerr *err) {
  const char *h = strstr(url, "://");
  h = h ? h + 3 : url;
  const char *path = h + strcspn(h, "/?");
  size_t pl = strcspn(path, "?#");
  const char *q = path[pl] == '?' ? path + pl + 1 : "";
  size_t ql = strcspn(q, "#");
  /* The query as "name:value" lines: names lower-cased, values decoded,
   * sorted (zarrfs never repeats a parameter). */
  size_t nq = 0;
  for (size_t i = 0; i < ql; i++)
    nq += q[i] == '&';
  nq += ql > 0;
  char **lines = calloc(nq ? nq : 1, sizeof *lines);
  char *im = NULL, *ius = NULL;
  int rc = lines ? 0 : zerr_set(err, ENOMEM, "out of memory");
  size_t n = 0;
  for (const char *p = q; rc == 0 && p < q + ql;) {
    size_t l = strcspn(p, "&#");
    if (l > (size_t)(q + ql - p))
      l = (size_t)(q + ql - p);
    const char *eq = memchr(p, '=', l);
    size_t nl = eq ? (size_t)(eq - p) : l;
    char *line = l ? malloc(l + 2) : NULL;
    if (l && !line) {
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    if (line) {
      pct_decode(line, p, nl);
      for (char *c = line; *c; c++)
        *c = (char)tolower((unsigned char)*c);
      size_t at = strlen(line);
      line[at++] = ':';
      pct_decode(line + at, eq ? eq + 1 : p + l, eq ? l - nl - 1 : 0);
      lines[n++] = line;
    }
    p += l + 1;
  }
  if (rc == 0 && cond) {
    const char *v = strchr(cond, ':');
    v = v ? v + 1 + strspn(v + 1, " ") : "";
    if (!strncasecmp(cond, "If-Match:", 9))
      im = strdup(v);
    else if (!strncasecmp(cond, "If-Unmodified-Since:", 20))
      ius = strdup(v);
  }
  if (n > 1)
    qsort(lines, n, sizeof *lines, qcmp);
  size_t cap = strlen(account) + pl + 512 + (range ? strlen(range) : 0) +
               (im ? strlen(im) : 0) + (ius ? strlen(ius) : 0) + strlen(date) +
               strlen(version);
  for (size_t i = 0; i < n; i++)
    cap += strlen(lines[i]) + 1;
  char *s = rc == 0 ? malloc(cap) : NULL;
  if (rc == 0 && !s)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0) {
    /* VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
     * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since,
     * Range; then the x-ms- headers sorted; then the resource. */
    char *o = s + sprintf(s, "GET\n\n\n\n\n\n\n\n%s\n\n%s\n%s\n", im ? im : "",
                          ius ? ius : "", range ? range : "");
    o += sprintf(o, "x-ms-date:%s\nx-ms-version:%s\n/%s%.*s", date, version,
                 account, (int)pl, path);
    for (size_t i = 0; i < n; i++) {
      *o++ = '\n';
      o = stpcpy(o, lines[i]);
    }
    *out = s;
  }
  for (size_t i = 0; i < n; i++)
    free(lines[i]);
  free(lines);
  free(im);
  free(ius);
  return rc;
}

/* An RFC 1123 date of now, in English whatever the locale. */
static void http_date(char out[40]) {
  static const char *const wd[] = {"Sun", "Mon", "Tue", "Wed",
                                   "Thu", "Fri", "Sat"};
  static const char *const mo[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d GMT", wd[tm.tm_wday % 7],
           tm.tm_mday, mo[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour,
           tm.tm_min, tm.tm_sec);
}

static int az_sign(const void *ud, const char *url, const char *range,
                   const char *cond, struct curl_slist **hdrs,
                   struct zerr *err) {
  const struct azure_config *c = ud;
  char date[40], sig[45];
  http_date(date);
  char *sts = NULL;
  ZTRY(azure_string_to_sign(c->account, url, range, cond, date,
                            AZURE_API_VERSION, &sts, err));
  int rc = azure_hmac_b64(c->key, c->klen, sts, sig);
  free(sts);
  if (rc < 0)
    return zerr_set(err, EIO, "Shared Key signing failed");
  char *auth = NULL, *dh = NULL;
  int ok =
      asprintf(&auth, "Authorization: SharedKey %s:%s", c->account, sig) >= 0 &&
      asprintf(&dh, "x-ms-date: %s", date) >= 0;
  struct curl_slist *t = ok ? curl_slist_append(*hdrs, dh) : NULL;
  if (t) {
    *hdrs = t;
    t = curl_slist_append(*hdrs, auth);
    if (t)
      *hdrs = t;
  }
  free(dh);
  free(auth);
  return t ? 0 : zerr_set(err, ENOMEM, "out of memory");
}

/* ---- List Blobs ---- */

int azure_list_parse(const char *xml, size_t len, const struct s3_list_cbs *cb,
                     void *ud, char **next_marker, struct zerr *err) {
  int truncated;
  return xlist_parse(XLIST_AZURE, "Azure listing", xml, len, cb, ud, &truncated,
                     next_marker, err);
}
