/* rversion.c - the version of a remote object: the validator met first
 * (ETag, Last-Modified, size) is remembered per URL in the remote memo,
 * asked for with a precondition (If-Match, If-Unmodified-Since) from then
 * on, and a different one marks the object changed while mounted. A
 * source pinned ahead (rversion.h) knows its version before any answer.
 *
 * An object whose server names no validator (its size at most) cannot be
 * held to one version across requests: its sources are read whole, each
 * window in one request kept as one unit in the block cache, so that no
 * read splices bytes of two answers; a change of size is still caught.
 *
 * Locks: rsrc.vlock (a leaf: guards have_v, vhash, cond of a source); the
 * remote memo's lock through memo_value (nothing held meanwhile). */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../util/htab.h"
#include "rversion.h"

/* An answer that contradicts the precondition its request carried, and
 * one that cannot be checked against it (If-Unmodified-Since answered
 * with no Last-Modified): never a real version (those are odd). A
 * version named by a validator has bit 1 clear, one named by the size
 * alone has it set. */
#define RV_STALE 2u
#define RV_UNCHECKABLE 4u
#define RV_VALIDATED(h) (((h) | 1) & ~(uint64_t)2)
#define RV_SIZE_ONLY(h) ((h) | 3)

/* The tag of an ETag without its quotes into *p, *n; *weak when W/. */
static void etag_parts(const char *e, const char **p, size_t *n, int *weak) {
  *weak = !strncmp(e, "W/", 2);
  if (*weak)
    e += 2;
  size_t len = strlen(e);
  if (len >= 2 && e[0] == '"' && e[len - 1] == '"') {
    e++;
    len -= 2;
  }
  *p = e;
  *n = len;
}

/* The version hash of an ETag (quotes aside). */
static uint64_t etag_hash(const char *e) {
  const char *p;
  size_t n;
  int weak;
  etag_parts(e, &p, &n, &weak);
  return RV_VALIDATED(htab_hash_bytes(p, n, weak ? 0x57544147u : 0x45544147u));
}

/* Same tag, quotes aside, and both weak or both strong. */
int rversion_etag_same(const char *a, const char *b) {
  const char *pa, *pb;
  size_t na, nb;
  int wa, wb;
  etag_parts(a, &pa, &na, &wa);
  etag_parts(b, &pb, &nb, &wb);
  return wa == wb && na == nb && !memcmp(pa, pb, na);
}

static const char wdays[7][4] = {"Sun", "Mon", "Tue", "Wed",
                                 "Thu", "Fri", "Sat"};
static const char months[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* Days from 1970-01-01 to y-m-d (proleptic Gregorian, m 1..12). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* The month of a three-letter name, 1..12, or 0. */
static int month_of(const char *s) {
  for (int i = 0; i < 12; i++)
    if (!strncasecmp(s, months[i], 3))
      return i + 1;
  return 0;
}

/* The three forms of RFC 9110, GMT only. */
int rversion_parse_date(const char *s, int64_t *secs) {
  char mon[4] = "", tz[4] = "";
  int d, y, hh, mm, ss;
  const char *comma = strchr(s, ',');
  if (comma) {
    const char *p = comma + 1;
    /* IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", or RFC 850
     * "Sunday, 06-Nov-94 08:49:37 GMT" */
    if (sscanf(p, " %2d %3[A-Za-z] %4d %2d:%2d:%2d %3s", &d, mon, &y, &hh, &mm,
               &ss, tz) != 7) {
      if (sscanf(p, " %2d-%3[A-Za-z]-%2d %2d:%2d:%2d %3s", &d, mon, &y, &hh,
                 &mm, &ss, tz) != 7)
        return -EINVAL;
      y += y < 70 ? 2000 : 1900;
    }
    if (strcmp(tz, "GMT") && strcmp(tz, "UTC"))
      return -EINVAL;
  } else if (sscanf(s, "%*3[A-Za-z] %3[A-Za-z] %2d %2d:%2d:%2d %4d", mon, &d,
                    &hh, &mm, &ss, &y) != 6) {
    return -EINVAL; /* asctime "Sun Nov  6 08:49:37 1994" */
  }
  int m = month_of(mon);
  if (!m || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60 || y < 1970 ||
      hh < 0 || mm < 0 || ss < 0)
    return -EINVAL;
  *secs = ((days_from_civil(y, m, d) * 24 + hh) * 60 + mm) * 60 + ss;
  return 0;
}

/* IMF-fixdate by the civil calendar (no locale, no time zone). */
void rversion_format_date(int64_t secs, char *out) {
  int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  int64_t rem = secs - days * 86400;
  /* civil_from_days */
  int64_t z = days + 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int d = (int)(doy - (153 * mp + 2) / 5 + 1);
  int m = (int)(mp < 10 ? mp + 3 : mp - 9);
  int64_t y = yoe + era * 400 + (m <= 2);
  int wd = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
  snprintf(out, 32, "%s, %02d %s %04d %02d:%02d:%02d GMT", wdays[wd], d,
           months[m - 1], (int)(y % 10000), (int)(rem / 3600),
           (int)(rem / 60 % 60), (int)(rem % 60));
}

/* Does answer m contradict the precondition req asked with (RV_STALE), or
 * give nothing to check it by (RV_UNCHECKABLE)? A server that ignores
 * If-Match or If-Unmodified-Since answers a version it was not asked for;
 * one that names no Last-Modified cannot have evaluated
 * If-Unmodified-Since (RFC 9110 13.1.4). 0: it agrees. */
static uint64_t contradicts(const struct http_meta *m,
                            const struct http_req *req) {
  if (!req || !req->cond)
    return 0;
  static const char im[] = "If-Match: ", ius[] = "If-Unmodified-Since: ";
  if (!strncmp(req->cond, im, sizeof im - 1))
    return !m->etag[0] ||
                   !rversion_etag_same(m->etag, req->cond + sizeof im - 1)
               ? RV_STALE
               : 0;
  if (!strncmp(req->cond, ius, sizeof ius - 1)) {
    int64_t want, got;
    if (!m->modified[0])
      return RV_UNCHECKABLE;
    if (rversion_parse_date(req->cond + sizeof ius - 1, &want) == 0 &&
        rversion_parse_date(m->modified, &got) == 0 && got > want)
      return RV_STALE;
  }
  return 0;
}

/* The version a response names (ETag, else Last-Modified, else the size)
 * as a hash (0: none; RV_STALE: not the version req asked for), and in
 * cond the precondition that asks for it ("" when none can: a weak ETag,
 * the size). */
uint64_t rversion_of(const struct http_meta *m, const struct http_req *req,
                     char *cond) {
  cond[0] = '\0';
  uint64_t no = contradicts(m, req);
  if (no)
    return no;
  if (m->etag[0]) {
    if (strncmp(m->etag, "W/", 2))
      snprintf(cond, RV_COND_MAX, "If-Match: %s", m->etag);
    return etag_hash(m->etag);
  }
  if (m->modified[0]) {
    snprintf(cond, RV_COND_MAX, "If-Unmodified-Since: %s", m->modified);
    return RV_VALIDATED(
        htab_hash_bytes(m->modified, strlen(m->modified), 0x4c4d4f44u));
  }
  if (m->total != UINT64_MAX)
    return RV_SIZE_ONLY(
        htab_hash_bytes(&m->total, sizeof m->total, 0x53495a45u));
  return 0;
}

/* Remember that s's object changed (or cannot be checked): every read of
 * any source of it fails from now on. */
static void mark_changed(struct rsrc *s) {
  atomic_store(&s->changed, 1);
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_CHANGED;
  memo_value_put(s->r->memo, &k, 1);
}

/* An answer without the Last-Modified its If-Unmodified-Since needs: the
 * version cannot be checked, so none of it is used. */
static int uncheckable(struct rsrc *s, struct zerr *err) {
  mark_changed(s);
  if (s->pin[0])
    return zerr_set(err, EIO,
                    "%s: the server names no Last-Modified, so the checksum "
                    "its reference recorded (%s) cannot be checked",
                    s->url, s->pin);
  return zerr_set(err, EIO,
                  "%s: the server no longer names the object's "
                  "Last-Modified: it may have changed while mounted; remount "
                  "to read it again",
                  s->url);
}

/* The object of s changed while mounted: remembered for every source of
 * it, and every read of it fails from now on. */
int rversion_changed(struct rsrc *s, struct zerr *err) {
  mark_changed(s);
  if (s->pin[0])
    return zerr_set(err, EIO,
                    "%s: the object does not match the checksum its "
                    "reference recorded (%s)",
                    s->url, s->pin);
  return zerr_set(err, EIO,
                  "%s: object changed while mounted (a different version "
                  "answered); remount to read the new one",
                  s->url);
}

/* Is s's object known to have changed? */
int rversion_is_changed(struct rsrc *s) {
  if (atomic_load(&s->changed))
    return 1;
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_CHANGED;
  uint64_t v;
  if (memo_value_peek(s->r->memo, &k, &v) && v) {
    atomic_store(&s->changed, 1);
    return 1;
  }
  return 0;
}

/* memo value fill: the version met first becomes the object's. */
static int version_fill(void *ctx, uint64_t *value, struct zerr *err) {
  (void)err;
  *value = *(const uint64_t *)ctx;
  return 0;
}

/* Does s's object have a version already (its own, or one a source of
 * the same object met)? */
static int version_known(struct rsrc *s, uint64_t *vh) {
  pthread_mutex_lock(&s->vlock);
  int have = s->have_v;
  *vh = s->vhash;
  pthread_mutex_unlock(&s->vlock);
  if (have)
    return 1;
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_VERSION;
  return memo_value_peek(s->r->memo, &k, vh);
}

/* Must s be read whole: its object's version is named by its size
 * alone? */
int rversion_needs_whole(struct rsrc *s) {
  uint64_t vh;
  return atomic_load(&s->whole) ||
         (version_known(s, &vh) && (vh & 3) == 3 && vh != RV_STALE);
}

/* rversion_check; whole: the bytes are a window read in one request, so
 * an answer that names no validator is used (and one that names nothing
 * at all, while the object has no version yet). */
static int check(struct rsrc *s, uint64_t vh, const char *cond, int whole,
                 struct zerr *err) {
  uint64_t known;
  if (vh == RV_STALE)
    return rversion_changed(s, err);
  if (vh == RV_UNCHECKABLE)
    return uncheckable(s, err);
  if (!vh) {
    if (version_known(s, &known))
      return rversion_changed(s, err);
    return whole ? 0
                 : zerr_set(err, -RV_WHOLE,
                            "%s: the server names no version: read whole",
                            s->url);
  }
  pthread_mutex_lock(&s->vlock);
  int have = s->have_v;
  uint64_t mine = s->vhash;
  pthread_mutex_unlock(&s->vlock);
  if (!have) {
    struct memo_key k = s->key;
    k.v[0] = 0;
    k.v[1] = TAG_VERSION;
    int rc = memo_value(s->r->memo, &k, version_fill, &vh, &mine, err);
    if (rc < 0)
      return rc;
    pthread_mutex_lock(&s->vlock);
    if (!s->have_v) {
      s->have_v = 1;
      s->vhash = mine;
    }
    mine = s->vhash;
    pthread_mutex_unlock(&s->vlock);
  }
  if (mine != vh)
    return rversion_changed(s, err);
  pthread_mutex_lock(&s->vlock);
  if (!s->cond[0] && cond[0])
    snprintf(s->cond, sizeof s->cond, "%s", cond);
  pthread_mutex_unlock(&s->vlock);
  if ((vh & 3) == 3 && !whole)
    return zerr_set(err, -RV_WHOLE,
                    "%s: the server names no version but the size: read whole",
                    s->url);
  return 0;
}

/* Bytes of version vh (cond asks for it) are about to be used by s. The
 * object's version is the first one any of its sources met (remembered
 * by URL, with the sizes); another one means the object changed. */
int rversion_check(struct rsrc *s, uint64_t vh, const char *cond,
                   struct zerr *err) {
  return check(s, vh, cond, 0, err);
}

/* memo fill of a whole window: one request, its version checked. */
static int whole_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct rsrc *s = ctx;
  size_t n = (size_t)s->base.size, got = 0;
  struct rblock *b = malloc(sizeof *b + n);
  if (!b)
    return zerr_set(err, ENOMEM, "out of memory");
  struct http_req q;
  char cond[RV_COND_MAX];
  struct http_meta meta;
  rversion_request(s, &q, cond);
  int rc = http_get_range(s->r->http, &q, s->win, n, b->data, &got, &meta, err);
  if (rc == 0 && got != n)
    rc = zerr_set(err, EIO,
                  "%s: object ends at %" PRIu64 ", before the %zu bytes at "
                  "%" PRIu64 " it was named with",
                  s->url, s->win + got, n, s->win);
  if (rc == 0 && s->stats) {
    atomic_fetch_add_explicit(&s->stats->bytes_read, got, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->stats->reads, 1, memory_order_relaxed);
  }
  /* The caller checks the answer's version (rversion_read_whole): a check
   * here could fill the version's memo value from inside this fill, a
   * wait of a fill for its own level (memo.h: EDEADLK). */
  if (rc == 0)
    b->vhash = rversion_of(&meta, &q, b->cond);
  if (rc < 0) {
    free(b);
    return rc;
  }
  zobj_init(&b->obj, remote_rblock_destroy);
  b->len = n;
  b->total = meta.total;
  *obj = &b->obj;
  *cost = sizeof *b + n;
  return 0;
}

/* The window of s in one request, kept whole in the block cache (keyed
 * by the window's start and length), then copied from. */
int rversion_read_whole(struct rsrc *s, uint64_t off, size_t len, void *dst,
                        struct zerr *err) {
  uint64_t size = s->base.size, cap = s->r->cfg.cache_size / 4;
  if (size > cap || size >= (1ull << 40))
    return zerr_set(err, EIO,
                    "%s: the server names no version of the object (no ETag "
                    "or Last-Modified), so it is read only whole, in one "
                    "request, and its %" PRIu64 " bytes are more than a "
                    "quarter of -o remote_cache (%" PRIu64 ")",
                    s->url, size, cap);
  struct memo_key k = s->key;
  k.v[0] = s->win;
  k.v[1] = TAG_WHOLE | size << 24;
  struct memo_ref *ref;
  ZTRY(memo_get(s->r->memo, &k, whole_fill, s, &ref, err));
  const struct rblock *b = (const struct rblock *)memo_obj(ref);
  int rc = check(s, b->vhash, b->cond, 1, err);
  if (rc == 0)
    memcpy(dst, b->data + off, len);
  memo_release(s->r->memo, ref);
  return rc;
}

/* s's request, asking for the version it reads once it knows one (cond:
 * room for the header, RV_COND_MAX). */
void rversion_request(struct rsrc *s, struct http_req *q, char *cond) {
  *q = s->req;
  pthread_mutex_lock(&s->vlock);
  if ((s->have_v || s->pin[0]) && s->cond[0]) {
    memcpy(cond, s->cond, RV_COND_MAX);
    q->cond = cond;
  }
  pthread_mutex_unlock(&s->vlock);
}

/* A precondition value may not hold control characters (header
 * injection) and must fit the header room. */
static int header_safe(const char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
      return 0;
  return 1;
}

/* Seed s's version (an ETag) or its precondition (a time) before any
 * request, under a key of its own. */
int rversion_pin(struct bytesrc *src, const char *etag, uint32_t last_modified,
                 struct zerr *err) {
  struct rsrc *s = (struct rsrc *)src;
  char desc[RV_COND_MAX], cond[RV_COND_MAX];
  uint64_t vh = 0;
  if (etag && etag[0]) {
    const char *p;
    size_t n;
    int weak;
    etag_parts(etag, &p, &n, &weak);
    if (n > RV_COND_MAX - 32 || !header_safe(p, n) || memchr(p, '"', n))
      return zerr_set(err, EINVAL, "%s: unusable ETag checksum", s->url);
    snprintf(desc, sizeof desc, "ETag %s\"%.*s\"", weak ? "W/" : "", (int)n, p);
    /* a weak tag never satisfies If-Match: compared on the answer */
    if (weak)
      cond[0] = '\0';
    else
      snprintf(cond, sizeof cond, "If-Match: \"%.*s\"", (int)n, p);
    vh = etag_hash(etag);
  } else if (last_modified) {
    char date[32];
    rversion_format_date(last_modified, date);
    snprintf(desc, sizeof desc, "last modified %s", date);
    snprintf(cond, sizeof cond, "If-Unmodified-Since: %s", date);
  } else {
    return 0;
  }
  /* Blocks of this version stay apart from those of the URL's others. */
  size_t n = strlen(s->req_url);
  s->key.v[2] = n | (1ull << 63) | (1ull << 62);
  s->key.v[3] = htab_hash_bytes(s->req_url, n, 0x243f6a8885a308d3ull);
  s->key.v[4] = htab_hash_bytes(s->req_url, n, 0x13198a2e03707344ull);
  s->key.v[5] = htab_hash_bytes(desc, strlen(desc), 0x50494e00u);
  s->key.n = 6;
  pthread_mutex_lock(&s->vlock);
  memcpy(s->pin, desc, sizeof s->pin);
  memcpy(s->cond, cond, sizeof s->cond);
  if (vh) {
    s->have_v = 1;
    s->vhash = vh;
  }
  pthread_mutex_unlock(&s->vlock);
  return 0;
}
