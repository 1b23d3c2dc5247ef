/* store_remote.c - a store over HTTP(S), S3, Cloud Storage or Azure Blob
 * Storage (see store.h).
 *
 * Keys map to URLs under the store's base: http(s)://HOST/PATH/KEY (the
 * key percent-encoded), s3://BUCKET/PREFIX/KEY, gs://BUCKET/PREFIX/KEY or
 * az://CONTAINER/PREFIX/KEY. Objects are byte sources
 * of src/net/remote.c: opening one costs one GET of its first block, which
 * names its size and stays cached, so no HEAD request is ever sent.
 *
 * S3 and Cloud Storage directories are listed with ListObjectsV2
 * (delimiter '/', 1,000 keys per request, continuation tokens,
 * encoding-type=url), Azure ones with List Blobs (delimiter '/', 1,000
 * per request, NextMarker); a listing is
 * cached (a memo of the store's own, by byte budget) and answers later
 * stats of its children without a request, so `ls -l` of a chunk
 * directory costs the listing only. A listing cannot run forever nor
 * grow without bound: a continuation token the server gave before, more
 * than 10,000 pages, more than 2,000,000 entries or 64 MiB of them, or
 * more than ten times -o timeout in all, fails it with -EIO. A key that cannot
 * be a file name (a control character, "." or "..", an empty segment, a segment
 * over 255 bytes, a NUL byte) is skipped with one log line; the rest is listed.
 *
 * Plain HTTP has no listing protocol: the store is marked unlistable, a
 * key is a file when a GET finds it, and a directory when it holds Zarr
 * metadata (zarr.json, .zgroup, .zarray); chunk directories are implied
 * by the array's key encoding (fs/namespace/namespace.c). A directory is listed
 * from the server's index page of it (DIR/: nginx autoindex, Apache,
 * python -m http.server), read as rclone's http backend reads it
 * (src/store/htindex.h), one GET cached as S3 listings are. A server
 * may leave names out of such a page (nginx hides dot files), so the
 * store stays unlistable: a listing adds names, its silence proves no key
 * absent. A directory without an index page (404, 403, a root page
 * listing nothing, one too large) is remembered as such: store_list says
 * -ENOTSUP with the reason, and the namespace shows what metadata names.
 *
 * With anonymous S3 access a missing key answers 403 when the bucket
 * does not allow listing: for metadata probes (zarr.json, .zattrs, ...)
 * that is an absent key, for anything else an error. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../net/azure.h"
#include "../net/remote.h"
#include "../net/s3.h"
#include "../util/buf.h"
#include "../util/htab.h"
#include "../util/log.h"
#include "../util/memo.h"
#include "htindex.h"
#include "store.h"

/* Listing cache budget (bytes of names). */
#define LIST_BUDGET (64u << 20)
/* Largest listing page body. */
#define LIST_PAGE_MAX (16u << 20)
/* Keys asked for per ListObjectsV2 page. */
#define STORE_REMOTE_LIST_KEYS 1000
/* Pages of one directory's listing at most (10 million entries): beyond,
 * the listing fails rather than running on. */
#define STORE_REMOTE_LIST_PAGES 10000
/* Entries of one directory's listing at most, and the bytes they take
 * (names and table, what the listing cache could hold at most). */
#define STORE_REMOTE_LIST_ENTRIES 2000000
#define STORE_REMOTE_LIST_BYTES LIST_BUDGET
/* A listing takes at most this many times -o timeout (a request's bound). */
#define STORE_REMOTE_LIST_TIME_FACTOR 10
/* Longest name a listed key may give (NAME_MAX of Linux file systems). */
#define STORE_REMOTE_NAME_MAX 255
#define TAG_LIST 0x4c4953u

struct store_remote {
  struct store base;
  struct remote *r; /* borrowed */
  char *base_url;   /* no trailing '/' ("s3://b/p" or "http://h/p") */
  int s3;           /* a bucket store with listings: s3, gs or az */
  int az;           /* Azure: List Blobs rather than ListObjectsV2 */
  const struct s3_config *s3c; /* S3 or Cloud Storage settings (s3, !az) */
  char *bucket, *prefix;       /* bucket or container; prefix "" or ending in
                                  '/' */
  struct memo *lists;
  atomic_int stop_never;  /* the memo's stop flag (remote stops transfers) */
  atomic_int root_v3;     /* HTTP: 0 unknown, 1 a V3 root, 2 not */
  struct io_stats *count; /* where reads count: base.stats, or the
                             store wrapping this one */
};

/* A cached listing of one directory, sorted by name. */
struct rlisting {
  struct zobj obj;
  char *none; /* HTTP: why the directory has no index page (owned), or
                 NULL: listed */
  size_t n;
  struct rentry {
    char *name; /* into arena */
    enum store_entry_type type;
    uint64_t size;
  } * e;
  char *arena;
};

/* ---- keys and URLs ---- */

/* Percent-encode a key for an HTTP path ('/' kept). */
static char *pct_key(const char *key) {
  static const char hex[] = "0123456789ABCDEF";
  size_t n = strlen(key);
  char *o = malloc(3 * n + 1), *p = o;
  if (!o)
    return NULL;
  for (const unsigned char *k = (const unsigned char *)key; *k; k++) {
    if ((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') ||
        (*k >= '0' && *k <= '9') || strchr("-._~/", *k)) {
      *p++ = (char)*k;
    } else {
      *p++ = '%';
      *p++ = hex[*k >> 4];
      *p++ = hex[*k & 15];
    }
  }
  *p = '\0';
  return o;
}

/* The URL of key (malloc'd). */
static char *key_url(const struct store_remote *s, const char *key) {
  char *enc = s->s3 ? strdup(key) : pct_key(key);
  char *url = NULL;
  if (enc && asprintf(&url, "%s/%s", s->base_url, enc) < 0)
    url = NULL;
  free(enc);
  return url;
}

/* Is the last segment of key a metadata name a reader probes for? */
static int is_meta_probe(const char *key) {
  const char *b = strrchr(key, '/');
  b = b ? b + 1 : key;
  return !strcmp(b, "zarr.json") || !strcmp(b, ".zattrs") ||
         !strcmp(b, ".zgroup") || !strcmp(b, ".zarray") ||
         !strcmp(b, ".zmetadata");
}

/* ---- listings (S3) ---- */

static void rlisting_destroy(struct zobj *o) {
  struct rlisting *l = (struct rlisting *)o;
  free(l->e);
  free(l->arena);
  free(l->none);
  free(l);
}

/* Growing listing under construction. */
struct lbuild {
  struct rentry *e;
  size_t n, cap;
  struct zbuf names; /* name bytes, NUL-separated */
  const char *pfx;   /* the listed prefix */
  size_t strip;      /* its bytes */
  const char *where; /* "s3://BUCKET/PREFIX" (gs://, az://) for log lines */
  int oom;
  int full; /* more entries, or bytes, than a listing may hold */
};

/* Why name (one path segment, n bytes) cannot be a file name, or NULL. */
static const char *bad_name(const char *name, size_t n) {
  if (!n)
    return "an empty path segment";
  if (n > STORE_REMOTE_NAME_MAX)
    return "a path segment over 255 bytes";
  if ((n == 1 && name[0] == '.') ||
      (n == 2 && name[0] == '.' && name[1] == '.'))
    return "a '.' or '..' path segment";
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
      return "a control character";
  return NULL;
}

/* Log that a listed key is skipped, naming it as it came (control
 * characters escaped, long keys cut). */
static void lb_skip(const struct lbuild *b, const char *raw, const char *why) {
  char shown[200];
  size_t o = 0, n = strlen(raw);
  for (size_t i = 0; i < n && o + 5 < sizeof shown - 4; i++) {
    unsigned char c = (unsigned char)raw[i];
    if (c < 0x20 || c == 0x7f || c == '\\')
      o += (size_t)snprintf(shown + o, sizeof shown - o, "\\x%02x", c);
    else
      shown[o++] = (char)c;
    if (i + 1 < n && o + 5 >= sizeof shown - 4) {
      memcpy(shown + o, "...", 3);
      o += 3;
    }
  }
  shown[o] = '\0';
  zlog(ZLOG_WARN, "%s: listing: skipped key '%s': %s", b->where, shown, why);
}

static int lb_add(struct lbuild *b, const char *full, const char *raw,
                  enum store_entry_type t, uint64_t size) {
  if (strncmp(full, b->pfx, b->strip)) {
    lb_skip(b, raw, "not under the prefix listed");
    return 0;
  }
  const char *name = full + b->strip;
  size_t n = strlen(name);
  if (t == STORE_DIR && n && name[n - 1] == '/')
    n--;
  if (!n && t == STORE_FILE)
    return 0; /* the directory's own marker object */
  if (memchr(name, '/', n))
    return 0; /* a stray below the directory */
  const char *why = bad_name(name, n);
  if (why) {
    lb_skip(b, raw, why);
    return 0;
  }
  if (b->n >= STORE_REMOTE_LIST_ENTRIES ||
      (b->n + 1) * sizeof *b->e + b->names.len + n + 1 >
          STORE_REMOTE_LIST_BYTES) {
    b->full = 1; /* a server that lists forever: stop the page here */
    return 1;
  }
  if (b->n == b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 256;
    struct rentry *e = realloc(b->e, cap * sizeof *e);
    if (!e) {
      b->oom = 1;
      return 1;
    }
    b->e = e;
    b->cap = cap;
  }
  b->e[b->n].name = (char *)(uintptr_t)b->names.len; /* offset for now */
  b->e[b->n].type = t;
  b->e[b->n].size = size;
  if (zbuf_append(&b->names, name, n, NULL) < 0 ||
      zbuf_append(&b->names, "", 1, NULL) < 0) {
    b->oom = 1;
    return 1;
  }
  b->n++;
  return 0;
}

/* A listed object: a file. */
static int lb_obj(void *ud, const char *key, const char *raw, uint64_t size) {
  return lb_add(ud, key, raw, STORE_FILE, size);
}

/* A listed common prefix: a directory. */
static int lb_prefix(void *ud, const char *prefix, const char *raw) {
  return lb_add(ud, prefix, raw, STORE_DIR, 0);
}

/* A key the listing could not decode: skipped, said once. */
static int lb_bad(void *ud, const char *raw, const char *why) {
  lb_skip(ud, raw, why);
  return 0;
}

static const struct s3_list_cbs lb_cbs = {lb_obj, lb_prefix, lb_bad};

/* The request URL of one listing page of prefix pfx after token (NULL:
 * the first), as the store's service lists. */
static int list_page_url(const struct store_remote *s, const char *pfx,
                         const char *token, char **url, struct zerr *err) {
  if (s->az)
    return azure_list_url(remote_azure(s->r), s->bucket, pfx, "/", token,
                          STORE_REMOTE_LIST_KEYS, url, err);
  return s3_list_url(s->s3c, s->bucket, pfx, "/", token, STORE_REMOTE_LIST_KEYS,
                     url, err);
}

/* One listing page into b: *truncated when more follow, *token the next
 * page's token or marker. */
static int list_page_parse(const struct store_remote *s, const uint8_t *body,
                           size_t blen, struct lbuild *b, int *truncated,
                           char **token, struct zerr *err) {
  if (s->az) {
    int rc = azure_list_parse((const char *)body, blen, &lb_cbs, b, token, err);
    *truncated = rc == 0 && *token;
    return rc;
  }
  return s3_list_parse((const char *)body, blen, &lb_cbs, b, truncated, token,
                       err);
}

static int rentry_cmp(const void *a, const void *b) {
  return strcmp(((const struct rentry *)a)->name,
                ((const struct rentry *)b)->name);
}

struct list_fill {
  struct store_remote *s;
  const char *dir; /* key of the directory ("" = root) */
};

/* Monotonic milliseconds: the bound of a listing. */
static int64_t list_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The listing b built (taken over and freed here) as a memo object, or
 * rc when it failed; none: why the directory has no index page (taken
 * over), b then empty. */
static int lb_finish(struct lbuild *b, int rc, char *none, struct zobj **obj,
                     size_t *cost, struct zerr *err) {
  struct rlisting *l = rc < 0 ? NULL : calloc(1, sizeof *l);
  if (!l) {
    free(b->e);
    zbuf_free(&b->names);
    free(none);
    return rc < 0 ? rc : zerr_set(err, ENOMEM, "out of memory");
  }
  zobj_init(&l->obj, rlisting_destroy);
  l->none = none;
  l->n = b->n;
  l->e = b->e;
  l->arena = (char *)b->names.data;
  for (size_t i = 0; i < l->n; i++)
    l->e[i].name = l->arena + (uintptr_t)l->e[i].name;
  if (l->n)
    qsort(l->e, l->n, sizeof *l->e, rentry_cmp);
  /* A name both an object and a prefix ("a" and "a/..."), or an index
   * page's link and its icon: one entry, the directory winning, as on a
   * file system that cannot hold both. */
  size_t w = 0;
  for (size_t i = 0; i < l->n; i++) {
    if (w && !strcmp(l->e[w - 1].name, l->e[i].name)) {
      if (l->e[i].type == STORE_DIR)
        l->e[w - 1] = l->e[i];
      continue;
    }
    l->e[w++] = l->e[i];
  }
  l->n = w;
  *obj = &l->obj;
  *cost = b->names.len + l->n * sizeof *l->e + sizeof *l +
          (none ? strlen(none) + 1 : 0);
  return 0;
}

/* htindex callback: an entry of an index page ("NAME/" a directory; a
 * file's size is not read from the page). */
static int idx_entry(void *ud, const char *name, size_t len, int is_dir) {
  (void)len;
  return lb_add(ud, name, name, is_dir ? STORE_DIR : STORE_FILE,
                is_dir ? 0 : STORE_SIZE_UNKNOWN);
}

/* A plain-HTTP directory's listing: its index page (the URL of dir with a
 * trailing '/'), parsed by htindex. No page (404, 403), one too large, or
 * one naming no entry is remembered as the directory having no index
 * (rlisting.none); any other failure is not remembered. Below the root
 * an empty page is an empty listing (nginx leaves dot files out: a V2
 * array without chunks lists nothing). */
static int index_fill(struct store_remote *s, const char *dir,
                      struct zobj **obj, size_t *cost, struct zerr *err) {
  char *enc = pct_key(dir), *url = NULL, *log_url = NULL;
  if (!enc || asprintf(&url, "%s/%s%s", s->base_url, enc, *dir ? "/" : "") < 0)
    url = NULL;
  free(enc);
  if (!url || asprintf(&log_url, "%s (index)", url) < 0) {
    free(url);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  struct lbuild b = {.pfx = "", .where = url};
  zbuf_init(&b.names, SIZE_MAX);
  struct http_req q;
  remote_store_request(s->r, s->base_url, url, log_url, &q);
  q.allow_link_local = 1; /* the store the user named */
  uint8_t *body = NULL;
  size_t blen = 0;
  struct zerr e = {0};
  int rc = http_get_all(remote_http(s->r), &q, LIST_PAGE_MAX, &body, &blen, &e);
  char *none = NULL;
  if (rc == -ENOENT || rc == -EACCES || rc == -EFBIG) {
    if (asprintf(&none, "no directory index (%s)", e.msg) < 0)
      none = NULL, rc = zerr_set(err, ENOMEM, "out of memory");
    else
      rc = 0;
  } else if (rc < 0) {
    rc = zerr_set(err, -rc, "%s", e.msg);
  } else {
    rc = htindex_parse((const char *)body, blen, url, idx_entry, &b, &e);
    const char *why = rc == -EFBIG || b.full     ? "too many entries"
                      : rc == 0 && !b.n && !*dir ? "the page names no entry"
                                                 : NULL;
    if (why) {
      b.n = 0; /* none: the entries read are dropped */
      if (asprintf(&none, "no directory index (%s: %s)", url, why) < 0)
        none = NULL, rc = zerr_set(err, ENOMEM, "out of memory");
      else
        rc = 0;
    } else if (rc > 0 || b.oom) {
      rc = zerr_set(err, ENOMEM, "out of memory");
    } else if (rc < 0) {
      rc = zerr_set(err, -rc, "%s", e.msg);
    }
  }
  free(body);
  free(url);
  free(log_url);
  return lb_finish(&b, rc, none, obj, cost, err);
}

/* memo fill: every page of a directory's listing. */
static int list_fill(void *ctx, struct zobj **obj, size_t *cost,
                     struct zerr *err) {
  struct list_fill *f = ctx;
  struct store_remote *s = f->s;
  if (!s->s3)
    return index_fill(s, f->dir, obj, cost, err);
  char *pfx = NULL;
  if (asprintf(&pfx, "%s%s%s", s->prefix, f->dir, *f->dir ? "/" : "") < 0)
    return zerr_set(err, ENOMEM, "out of memory");
  char *where = NULL;
  if (asprintf(&where, "%.5s%s/%s", s->base_url, s->bucket, pfx) < 0) {
    free(pfx);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  struct lbuild b = {.pfx = pfx, .strip = strlen(pfx), .where = where};
  zbuf_init(&b.names, SIZE_MAX);
  char *token = NULL;
  /* Brent's cycle detection over the tokens: a server that hands out a
   * token it gave before (the same one forever, or a loop of them) is
   * caught within twice the loop's length, in constant memory. */
  char *mark = NULL;
  unsigned long power = 1, lam = 0, pages = 0;
  int rc = 0;
  int64_t limit_ms = (int64_t)remote_config_of(s->r)->http.op_ms *
                     STORE_REMOTE_LIST_TIME_FACTOR;
  int64_t start_ms = list_now_ms();
  do {
    if (pages && list_now_ms() - start_ms > limit_ms) {
      rc = zerr_set(err, EIO,
                    "%s: listing: still truncated after %.1f s (%lu pages; "
                    "at most ten times -o timeout): refusing to list further",
                    where, (double)(list_now_ms() - start_ms) / 1000.0, pages);
      break;
    }
    if (++pages > STORE_REMOTE_LIST_PAGES) {
      rc = zerr_set(err, EIO,
                    "%s: listing: still truncated after %d pages (%d keys "
                    "per page): refusing to list further",
                    where, STORE_REMOTE_LIST_PAGES, STORE_REMOTE_LIST_KEYS);
      break;
    }
    char *url = NULL, *log_url = NULL;
    rc = list_page_url(s, pfx, token, &url, err);
    if (rc < 0)
      break;
    if (asprintf(&log_url, "%s (list)", where) < 0) {
      free(url);
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    struct http_req q;
    remote_store_request(s->r, s->base_url, url, log_url, &q);
    q.allow_link_local = 1; /* the store the user named */
    uint8_t *body;
    size_t blen;
    rc = http_get_all(remote_http(s->r), &q, LIST_PAGE_MAX, &body, &blen, err);
    free(url);
    free(log_url);
    if (rc < 0)
      break;
    int truncated = 0;
    if (token) {
      if (!mark || lam == power) {
        free(mark);
        mark = token;
        power *= 2;
        lam = 0;
      } else {
        free(token);
      }
      lam++;
    }
    token = NULL;
    rc = list_page_parse(s, body, blen, &b, &truncated, &token, err);
    free(body);
    if (b.full) {
      rc = zerr_set(err, EIO,
                    "%s: listing: more than %d entries or %u MiB of them "
                    "(after %lu pages): refusing to list further",
                    where, STORE_REMOTE_LIST_ENTRIES,
                    STORE_REMOTE_LIST_BYTES >> 20, pages);
      break;
    }
    if (rc > 0 || b.oom) {
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    if (rc < 0)
      break;
    if (!truncated) {
      free(token);
      token = NULL;
    } else if (!token) {
      rc = zerr_set(err, EIO,
                    "%s: listing: truncated without a continuation token",
                    where);
      break;
    } else if (mark && !strcmp(token, mark)) {
      rc = zerr_set(err, EIO,
                    "%s: listing: the server repeated a continuation token "
                    "(after %lu pages): the listing would never end",
                    where, pages);
      break;
    }
  } while (token);
  free(mark);
  free(where);
  free(token);
  free(pfx);
  return lb_finish(&b, rc, NULL, obj, cost, err);
}

/* The memo key of a directory's listing. */
static int list_key(const char *dir, struct memo_key *k) {
  memset(k, 0, sizeof *k);
  k->level = MEMO_LEVEL_SOURCE;
  size_t n = strlen(dir);
  if (n > (MEMO_KEY_WORDS - 2) * 8) {
    k->v[0] = TAG_LIST | (1ull << 40);
    k->v[1] = htab_hash_bytes(dir, n, 0x452821e638d01377ull);
    k->v[2] = htab_hash_bytes(dir, n, 0xbe5466cf34e90c6cull) ^ n;
    k->n = 3;
    return 0;
  }
  k->v[0] = TAG_LIST;
  k->v[1] = n;
  memcpy(&k->v[2], dir, n);
  k->n = (uint8_t)(2 + (n + 7) / 8);
  return 0;
}

/* The listing of dir, fetched when not cached. */
static int listing_get(struct store_remote *s, const char *dir,
                       struct memo_ref **ref, struct zerr *err) {
  struct memo_key k;
  list_key(dir, &k);
  struct list_fill f = {s, dir};
  return memo_get(s->lists, &k, list_fill, &f, ref, err);
}

/* The entry name in listing l, or NULL. */
static const struct rentry *listing_find(const struct rlisting *l,
                                         const char *name) {
  size_t lo = 0, hi = l->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(l->e[mid].name, name);
    if (!c)
      return &l->e[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* ---- store operations ---- */

static int remote_get(struct store *st, const char *key, struct bytesrc **out,
                      struct zerr *err) {
  struct store_remote *s = (struct store_remote *)st;
  char *url = key_url(s, key);
  if (!url)
    return zerr_set(err, ENOMEM, "out of memory");
  /* The user named this store: its own address is allowed even when it
   * is link-local (only targets named by references are refused). */
  int rc = remote_open(s->r, url, 0, UINT64_MAX, 1, s->count, out, err);
  free(url);
  if (rc == -EACCES && s->s3 &&
      (s->az ? azure_is_anonymous(remote_azure(s->r))
             : s3_is_anonymous(s->s3c)) &&
      is_meta_probe(key)) {
    zerr_clear(err);
    rc = zerr_set(err, ENOENT, "no such key (403 to anonymous access)");
  }
  return rc;
}

/* Is dir a directory: S3 - anything listed below it; HTTP - Zarr
 * metadata in it. */
static int remote_is_dir(struct store_remote *s, const char *dir,
                         struct zerr *err) {
  if (s->s3) {
    struct memo_ref *ref;
    ZTRY(listing_get(s, dir, &ref, err));
    int any = ((const struct rlisting *)memo_obj(ref))->n > 0;
    memo_release(s->lists, ref);
    return any;
  }
  static const char *const names[] = {"zarr.json", ".zgroup", ".zarray"};
  /* A V3 hierarchy has no V2 nodes inside: one probe per name then. */
  int v = atomic_load(&s->root_v3);
  if (!v) {
    struct bytesrc *b;
    v = remote_get(&s->base, "zarr.json", &b, NULL) == 0 ? 1 : 2;
    if (v == 1)
      bytesrc_unref(b);
    atomic_store(&s->root_v3, v);
  }
  for (size_t i = 0; i < (v == 1 ? 1 : sizeof names / sizeof *names); i++) {
    char *k = NULL;
    if (asprintf(&k, "%s/%s", dir, names[i]) < 0)
      return zerr_set(err, ENOMEM, "out of memory");
    struct bytesrc *b;
    struct zerr e = {0};
    int rc = remote_get(&s->base, k, &b, &e);
    free(k);
    if (rc == 0) {
      bytesrc_unref(b);
      return 1;
    }
    if (rc != -ENOENT)
      return zerr_set(err, -rc, "%s", e.msg);
  }
  return 0;
}

/* key's type and size from its parent's listing when that is cached
 * (after a readdir): 0, -ENOENT, or 1 when the listing cannot tell. Over
 * plain HTTP it tells only that a name is a directory (a GET of it would
 * find its index page, a file): the rest is asked. */
static int listed_stat(struct store_remote *s, const char *key,
                       enum store_entry_type *type, uint64_t *size,
                       struct zerr *err) {
  char parent[4096];
  const char *slash = strrchr(key, '/');
  size_t pl = slash ? (size_t)(slash - key) : 0;
  if (pl >= sizeof parent)
    return zerr_set(err, ENAMETOOLONG, "key too long");
  memcpy(parent, key, pl);
  parent[pl] = '\0';
  struct memo_key k;
  list_key(parent, &k);
  struct memo_ref *ref;
  if (!memo_peek(s->lists, &k, &ref))
    return 1;
  const struct rentry *en = listing_find((const struct rlisting *)memo_obj(ref),
                                         slash ? slash + 1 : key);
  int known = s->s3 || (en && en->type == STORE_DIR);
  if (en) {
    *type = en->type;
    *size = en->size;
  }
  memo_release(s->lists, ref);
  if (!known)
    return 1;
  return en ? 0 : zerr_set(err, ENOENT, "no such key");
}

static int remote_stat(struct store *st, const char *key,
                       enum store_entry_type *type, uint64_t *size,
                       int64_t *mtime, struct zerr *err) {
  *mtime = STORE_MTIME_UNKNOWN;
  struct store_remote *s = (struct store_remote *)st;
  *size = 0;
  if (!*key) {
    *type = STORE_DIR;
    return 0;
  }
  int lrc = listed_stat(s, key, type, size, err);
  if (lrc <= 0)
    return lrc;
  struct bytesrc *b;
  struct zerr e = {0};
  int rc = remote_get(st, key, &b, &e);
  if (rc == 0) {
    *type = STORE_FILE;
    *size = b->size;
    bytesrc_unref(b);
    return 0;
  }
  /* A directory answers 404, or 403 (S3 without ListBucket, a web server
   * refusing a directory index after its redirect to KEY/). */
  if ((rc != -ENOENT && rc != -EACCES) || is_meta_probe(key))
    return zerr_set(err, -rc, "%s", e.msg);
  int frc = rc;
  rc = remote_is_dir(s, key, err);
  if (rc < 0)
    return rc;
  if (rc) {
    *type = STORE_DIR;
    return 0;
  }
  /* Plain HTTP: a 403 is most likely a refused directory index (KEY/),
   * and directories are not known there: absent (a read of the key still
   * says 403). */
  if (!s->s3)
    frc = ENOENT == -frc ? frc : -ENOENT;
  return zerr_set(err, -frc, "%s", e.msg);
}

static int remote_list(struct store *st, const char *prefix, store_list_cb cb,
                       void *ud, struct zerr *err) {
  struct store_remote *s = (struct store_remote *)st;
  struct memo_ref *ref;
  ZTRY(listing_get(s, prefix, &ref, err));
  const struct rlisting *l = (const struct rlisting *)memo_obj(ref);
  if (l->none || (*prefix && !l->n && s->s3)) {
    int rc = l->none ? zerr_set(err, ENOTSUP, "%s", l->none)
                     : zerr_set(err, ENOENT, "no such directory");
    memo_release(s->lists, ref);
    return rc;
  }
  for (size_t i = 0; i < l->n; i++)
    if (cb(ud, l->e[i].name, l->e[i].type, l->e[i].size, STORE_MTIME_UNKNOWN))
      break;
  memo_release(s->lists, ref);
  return 0;
}

/* Fetch key's object ahead for a reader (the same URL and address rules
 * as remote_get). */
static int remote_prefetch_key(struct store *st, const char *key,
                               const void *owner, int flags, void **hint) {
  struct store_remote *s = (struct store_remote *)st;
  char *url = key_url(s, key);
  if (!url)
    return -ENOMEM;
  struct remote_hint *h;
  int rc =
      remote_prefetch(s->r, url, 1, !!(flags & STORE_PREFETCH_HEAD), owner, &h);
  free(url);
  *hint = rc == 0 ? h : NULL;
  return rc;
}

/* Let go of a hint of remote_prefetch_key. */
static void remote_prefetch_drop(struct store *st, void *hint) {
  struct store_remote *s = (struct store_remote *)st;
  remote_hint_drop(s->r, hint);
}

static void remote_destroy(struct store *st) {
  struct store_remote *s = (struct store_remote *)st;
  memo_free(s->lists);
  free(s->base_url);
  free(s->bucket);
  free(s->prefix);
  free(st->location);
  free(s);
}

static const struct store_ops remote_ops = {remote_get, remote_stat,
                                            remote_list, remote_destroy};
static const struct store_ahead_ops remote_ahead_ops = {remote_prefetch_key,
                                                        remote_prefetch_drop};

void store_remote_count_into(struct store *st, struct io_stats *to) {
  if (st->ops == &remote_ops)
    ((struct store_remote *)st)->count = to;
}

int store_open_remote(struct remote *r, const char *url, struct store **out,
                      struct zerr *err) {
  if (!remote_is_url(url))
    return zerr_set(err, EINVAL, "%s: not an %s URL", url,
                    remote_url_schemes());
  struct store_remote *s = calloc(1, sizeof *s);
  if (!s)
    return zerr_set(err, ENOMEM, "out of memory");
  s->base.ops = &remote_ops;
  s->base.remote = 1;
  s->base.ahead = &remote_ahead_ops;
  s->count = &s->base.stats;
  s->r = r;
  int rc = 0;
  size_t n = strlen(url);
  while (n > 0 && url[n - 1] == '/' && !(n >= 3 && url[n - 2] == '/'))
    n--;
  if (!(s->base.location = strndup(url, n)) || !(s->base_url = strndup(url, n)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  int gs = !strncmp(url, "gs://", 5);
  s->az = !strncmp(url, "az://", 5);
  if (rc == 0 && (s->az || gs || !strncmp(url, "s3://", 5))) {
    s->s3 = 1;
    s->s3c = gs ? remote_gcs(r) : remote_s3(r);
    if (s->az ? !remote_azure(r) : !s->s3c)
      rc = zerr_set(err, EINVAL, "%s: %s settings missing", url,
                    s->az ? "Azure"
                    : gs  ? "Cloud Storage"
                          : "S3");
    char *key = NULL;
    if (rc == 0)
      rc = s->az ? azure_parse_url(s->base_url, &s->bucket, &key, err)
                 : s3_parse_url(s->base_url, &s->bucket, &key, err);
    if (rc == 0 && !*s->bucket)
      rc = zerr_set(err, EINVAL, "%s: no bucket named", url);
    if (rc == 0 && asprintf(&s->prefix, "%s%s", key, *key ? "/" : "") < 0) {
      s->prefix = NULL;
      rc = zerr_set(err, ENOMEM, "out of memory");
    }
    free(key);
  } else {
    s->base.unlistable = 1;
  }
  struct memo_config mc = {LIST_BUDGET, 1, &s->stop_never, 0, 0};
  if (rc == 0)
    rc = memo_new(&mc, &s->lists, err);
  if (rc < 0) {
    remote_destroy(&s->base);
    return rc;
  }
  *out = &s->base;
  return 0;
}
