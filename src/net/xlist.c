/* xlist.c - listing pages of S3 and Azure Blob Storage (see xlist.h). */
#define _GNU_SOURCE
#include "xlist.h"

#include <ctype.h>
#include <errno.h>
#include <expat.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Where the elements of a dialect are: an entry (an object) and a prefix
 * entry at depth edepth, their name one level below, the size of an
 * object at sdepth; the token and the truncation flag at depth 2. */
struct xdialect {
  int edepth, sdepth;
  const char *entry, *pentry, *key, *pkey, *size, *token, *truncated;
  int plus_space; /* '+' is a space in encoded keys (S3, as botocore) */
};

static const struct xdialect dialects[] = {
    [XLIST_S3] = {2, 3, "Contents", "CommonPrefixes", "Key", "Prefix", "Size",
                  "NextContinuationToken", "IsTruncated", 1},
    [XLIST_AZURE] = {3, 5, "Blob", "BlobPrefix", "Name", "Name",
                     "Content-Length", "NextMarker", NULL, 0},
};

/* An entry of one page, delivered after the whole page is parsed (S3's
 * <EncodingType> that says how to read keys may come after them). */
struct lp_entry {
  char *key; /* as in the XML */
  uint64_t size;
  int is_prefix, encoded;
};

struct lp {
  const struct xdialect *d;
  XML_Parser xp;
  int depth;
  int in_contents, in_prefixes, is_error;
  char *text; /* character data of the current element */
  size_t tlen, tcap;
  int text_nul;
  char *key, *cp;                /* the entry's name, the prefix entry's name */
  int key_enc, cp_enc, name_enc; /* Azure: Encoded="true" */
  uint64_t size;
  int truncated, url_encoded;
  char *token;
  char *code, *message; /* an <Error> */
  struct lp_entry *e;
  size_t n, cap;
  int stop; /* -ENOMEM / -EIO */
};

static void lp_start(void *ud, const XML_Char *name, const XML_Char **attrs) {
  struct lp *p = ud;
  const struct xdialect *d = p->d;
  p->depth++;
  p->tlen = 0;
  p->text_nul = 0;
  p->name_enc = 0;
  for (int i = 0; attrs && attrs[i]; i += 2)
    if (!strcmp(attrs[i], "Encoded") && !strcmp(attrs[i + 1], "true"))
      p->name_enc = 1;
  if (p->depth == 1 && !strcmp(name, "Error"))
    p->is_error = 1;
  if (p->depth == d->edepth && !strcmp(name, d->entry)) {
    p->in_contents = 1;
    free(p->key);
    p->key = NULL;
    p->size = 0;
  }
  if (p->depth == d->edepth && !strcmp(name, d->pentry)) {
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
static void lp_keep(struct lp *p, char **key, uint64_t size, int is_prefix,
                    int encoded) {
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
  p->e[p->n++] = (struct lp_entry){*key, size, is_prefix, encoded};
  *key = NULL;
}

static void lp_end(void *ud, const XML_Char *name) {
  struct lp *p = ud;
  const struct xdialect *d = p->d;
  int dp = p->depth--;
  if (p->stop)
    return;
  char **dst = NULL;
  if (dp == d->edepth + 1 && p->in_contents && !strcmp(name, d->key)) {
    dst = &p->key;
    p->key_enc = p->name_enc;
  } else if (dp == d->edepth + 1 && p->in_prefixes && !strcmp(name, d->pkey)) {
    dst = &p->cp;
    p->cp_enc = p->name_enc;
  } else if (dp == 2 && !strcmp(name, d->token)) {
    dst = &p->token;
  } else if (dp == 2 && p->is_error && !strcmp(name, "Code")) {
    dst = &p->code;
  } else if (dp == 2 && p->is_error && !strcmp(name, "Message")) {
    dst = &p->message;
  }
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
  if (dp == d->sdepth && p->in_contents && !strcmp(name, d->size))
    p->size = strtoull(p->text ? p->text : "0", NULL, 10);
  else if (dp == 2 && d->truncated && !strcmp(name, d->truncated))
    p->truncated = p->tlen == 4 && !strncmp(p->text, "true", 4);
  else if (dp == 2 && !strcmp(name, "EncodingType"))
    p->url_encoded = p->tlen == 3 && !strncmp(p->text, "url", 3);
  if (dp == d->edepth && !strcmp(name, d->entry)) {
    p->in_contents = 0;
    if (p->key)
      lp_keep(p, &p->key, p->size, 0, p->key_enc);
  } else if (dp == d->edepth && !strcmp(name, d->pentry)) {
    p->in_prefixes = 0;
    if (p->cp)
      lp_keep(p, &p->cp, 0, 1, p->cp_enc);
  }
}

/* Decode the url encoding of a key in place (%XX; '+' a space when
 * plus_space, as botocore's unquote_plus). 0, or -1 for a bad escape or a
 * NUL byte. */
static int url_decode(char *s, int plus_space) {
  char *o = s;
  for (const char *p = s; *p; p++) {
    if (*p == '+' && plus_space) {
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

int xlist_parse(enum xlist_dialect dialect, const char *what, const char *xml,
                size_t len, const struct s3_list_cbs *cb, void *ud,
                int *truncated, char **next, struct zerr *err) {
  *truncated = 0;
  *next = NULL;
  struct lp p = {.d = &dialects[dialect]};
  if (len > (size_t)INT32_MAX)
    return zerr_set(err, EIO, "%s: response too large", what);
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
    rc = zerr_set(err, EIO, "%s: a key contains a NUL byte", what);
  else if (st != XML_STATUS_OK)
    rc = zerr_set(err, EIO, "%s: malformed XML: %s (line %lu)", what,
                  XML_ErrorString(XML_GetErrorCode(p.xp)),
                  (unsigned long)XML_GetCurrentLineNumber(p.xp));
  else if (p.is_error)
    rc = zerr_set(err, EIO, "%s: error %s: %s", what, p.code ? p.code : "?",
                  p.message ? p.message : "");
  XML_ParserFree(p.xp);
  for (size_t i = 0; i < p.n && rc == 0; i++) {
    struct lp_entry *e = &p.e[i];
    char *raw = NULL;
    if (p.url_encoded || e->encoded) {
      if (!(raw = strdup(e->key))) {
        rc = zerr_set(err, ENOMEM, "out of memory");
        break;
      }
      if (url_decode(e->key, p.d->plus_space) < 0) {
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
    /* Azure: a non-empty NextMarker is the only sign of more pages. */
    if (!p.d->truncated)
      p.truncated = p.token && *p.token;
    *truncated = p.truncated;
    if (p.token && *p.token) {
      *next = p.token;
      p.token = NULL;
    }
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
