/* manifest.c - the compact chunk-reference table (see manifest.h). */
#define _GNU_SOURCE /* qsort_r */
#include "manifest.h"

#include "../util/zmath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One entry: 32 bytes, no pointers, so a million cost 32 MB. */
struct mf_rec {
  uint64_t key;    /* offset of the NUL-terminated key in the key arena */
  uint64_t offset; /* RANGE: target offset; INLINE/BAD: arena offset */
  uint64_t length; /* RANGE/INLINE/BAD: bytes; WHOLE: UINT64_MAX */
  uint32_t path;   /* RANGE/WHOLE: interned path id */
  uint32_t kind;   /* enum manifest_kind */
};

/* A growable byte arena. */
struct arena {
  char *p;
  size_t n, cap;
};

struct manifest {
  struct mf_rec *recs; /* sorted by key, unique */
  uint64_t n;
  struct arena keys, data, paths;
  uint64_t *path_off; /* id -> offset in paths */
  uint32_t npaths;
};

struct manifest_builder {
  struct manifest m; /* recs unsorted until finish */
  uint64_t cap;      /* of m.recs */
  uint32_t path_cap; /* of m.path_off */
  uint32_t *hash;    /* open addressing: path id + 1, 0 = empty */
  uint32_t hash_cap; /* power of two */
  char *last_raw;    /* the path last interned, as given, and its id: */
  uint32_t last_id;  /* references mostly repeat one target */
  char *base;        /* absolute base directory */
};

/* Append len bytes (plus a NUL when nul) and return the offset. */
static int arena_put(struct arena *a, const void *src, size_t len, int nul,
                     uint64_t *off, struct zerr *err) {
  size_t need = len + (nul ? 1 : 0);
  if (a->n + need > a->cap) {
    size_t nc = a->cap ? a->cap : 4096;
    while (nc < a->n + need)
      nc *= 2;
    char *p = realloc(a->p, nc);
    if (!p)
      return zerr_set(err, ENOMEM, "manifest: out of memory");
    a->p = p;
    a->cap = nc;
  }
  *off = a->n;
  if (len)
    memcpy(a->p + a->n, src, len);
  if (nul)
    a->p[a->n + len] = '\0';
  a->n += need;
  return 0;
}

/* New builder with base_dir for relative targets. */
int manifest_builder_new(const char *base_dir, struct manifest_builder **out,
                         struct zerr *err) {
  struct manifest_builder *b = calloc(1, sizeof *b);
  if (!b || !(b->base = strdup(base_dir ? base_dir : "."))) {
    free(b);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = b;
  return 0;
}

/* FNV-1a. */
static uint32_t hash_str(const char *s) {
  uint32_t h = 2166136261u;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 16777619u;
  return h;
}

/* Make room for one more path in the hash (load <= 1/2). */
static int hash_grow(struct manifest_builder *b, struct zerr *err) {
  if ((uint64_t)(b->m.npaths + 1) * 2 <= b->hash_cap)
    return 0;
  uint32_t nc = b->hash_cap ? b->hash_cap * 2 : 64;
  uint32_t *h = calloc(nc, sizeof *h);
  if (!h)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t id = 0; id < b->m.npaths; id++) {
    uint32_t i = hash_str(b->m.paths.p + b->m.path_off[id]) & (nc - 1);
    while (h[i])
      i = (i + 1) & (nc - 1);
    h[i] = id + 1;
  }
  free(b->hash);
  b->hash = h;
  b->hash_cap = nc;
  return 0;
}

static int intern_resolved(struct manifest_builder *b, const char *path,
                           uint32_t *id, struct zerr *err);

/* Resolve a target (relative to base, file:// stripped; URLs with another
 * scheme kept) and intern it. */
static int intern_path(struct manifest_builder *b, const char *path,
                       uint32_t *id, struct zerr *err) {
  if (b->last_raw && !strcmp(b->last_raw, path)) {
    *id = b->last_id;
    return 0;
  }
  free(b->last_raw);
  b->last_raw = strdup(path);
  if (!b->last_raw)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = intern_resolved(b, path, id, err);
  if (rc < 0) {
    free(b->last_raw);
    b->last_raw = NULL;
    return rc;
  }
  b->last_id = *id;
  return 0;
}

/* base (a URL: "scheme://host/dir", no trailing '/') joined with the
 * relative reference rel, dot segments resolved (RFC 3986 5.2.4), never
 * above the host's root; malloc'd or NULL. */
char *manifest_url_join(const char *base, const char *rel) {
  const char *hs = strstr(base, "://");
  if (!hs)
    return NULL;
  hs += 3;
  size_t root = (size_t)(hs - base) + strcspn(hs, "/?#");
  size_t bq = strcspn(base, "?#"); /* the base's query is not inherited */
  char *out = malloc(bq + strlen(rel) + 3);
  if (!out)
    return NULL;
  memcpy(out, base, bq);
  size_t n = bq;
  while (n > root && out[n - 1] == '/')
    n--;
  const char *p = rel;
  while (*p) {
    size_t seg = strcspn(p, "/");
    int last = p[seg] == '\0';
    if (seg == 1 && p[0] == '.') {
      /* nothing */
    } else if (seg == 2 && p[0] == '.' && p[1] == '.') {
      while (n > root && out[n - 1] != '/')
        n--;
      if (n > root)
        n--; /* the '/' too */
    } else if (seg) {
      out[n++] = '/';
      memcpy(out + n, p, seg);
      n += seg;
    }
    p += seg + !last;
  }
  out[n] = '\0';
  return out;
}

/* Resolve and intern (see intern_path). */
static int intern_resolved(struct manifest_builder *b, const char *path,
                           uint32_t *id, struct zerr *err) {
  char *full = NULL;
  if (!strncmp(path, "file://", 7))
    path += 7;
  if (!*path)
    return zerr_set(err, EINVAL, "empty target path");
  if (path[0] != '/' && !strstr(path, "://")) {
    if (strstr(b->base, "://")) /* a remote reference: a URL too */
      full = manifest_url_join(b->base, path);
    else if (asprintf(&full, "%s/%s", b->base, path) < 0)
      full = NULL;
    if (!full)
      return zerr_set(err, ENOMEM, "out of memory");
    path = full;
  }
  int grown = hash_grow(b, err);
  if (grown < 0) {
    free(full);
    return grown;
  }
  uint32_t i = hash_str(path) & (b->hash_cap - 1);
  while (b->hash[i]) {
    uint32_t cand = b->hash[i] - 1;
    if (!strcmp(b->m.paths.p + b->m.path_off[cand], path)) {
      *id = cand;
      free(full);
      return 0;
    }
    i = (i + 1) & (b->hash_cap - 1);
  }
  if (b->m.npaths == b->path_cap) {
    uint32_t nc = b->path_cap ? b->path_cap * 2 : 16;
    uint64_t *p = realloc(b->m.path_off, nc * sizeof *p);
    if (!p) {
      free(full);
      return zerr_set(err, ENOMEM, "out of memory");
    }
    b->m.path_off = p;
    b->path_cap = nc;
  }
  uint64_t off;
  int rc = arena_put(&b->m.paths, path, strlen(path), 1, &off, err);
  free(full);
  ZTRY(rc);
  b->m.path_off[b->m.npaths] = off;
  b->hash[i] = b->m.npaths + 1;
  *id = b->m.npaths++;
  return 0;
}

/* Append a record for key; fills the key and kind. */
static int add_rec(struct manifest_builder *b, const char *key,
                   enum manifest_kind kind, struct mf_rec **out,
                   struct zerr *err) {
  if (zkey_valid(key) < 0)
    return zerr_set(err, EINVAL,
                    "refusing key '%s' (empty segment, '.', '..' or a "
                    "leading '/')",
                    key);
  if (b->m.n >= UINT32_MAX)
    return zerr_set(err, EFBIG, "manifest: too many entries");
  if (b->m.n == b->cap) {
    uint64_t nc = b->cap ? b->cap * 2 : 1024;
    struct mf_rec *r = realloc(b->m.recs, nc * sizeof *r);
    if (!r)
      return zerr_set(err, ENOMEM, "manifest: out of memory");
    b->m.recs = r;
    b->cap = nc;
  }
  struct mf_rec *r = &b->m.recs[b->m.n];
  memset(r, 0, sizeof *r);
  ZTRY(arena_put(&b->m.keys, key, strlen(key), 1, &r->key, err));
  r->kind = kind;
  b->m.n++;
  *out = r;
  return 0;
}

int manifest_add_range(struct manifest_builder *b, const char *key,
                       const char *path, uint64_t offset, uint64_t length,
                       struct zerr *err) {
  uint32_t id;
  uint64_t end;
  if (zadd_u64(offset, length, &end) < 0)
    return zerr_set(err, EINVAL, "%s: offset + length overflows", key);
  ZTRY(intern_path(b, path, &id, err));
  struct mf_rec *r;
  ZTRY(add_rec(b, key, MF_RANGE, &r, err));
  r->path = id;
  r->offset = offset;
  r->length = length;
  return 0;
}

int manifest_add_whole(struct manifest_builder *b, const char *key,
                       const char *path, struct zerr *err) {
  uint32_t id;
  ZTRY(intern_path(b, path, &id, err));
  struct mf_rec *r;
  ZTRY(add_rec(b, key, MF_WHOLE, &r, err));
  r->path = id;
  r->length = UINT64_MAX;
  return 0;
}

int manifest_add_inline(struct manifest_builder *b, const char *key,
                        const void *data, size_t len, struct zerr *err) {
  struct mf_rec *r;
  ZTRY(add_rec(b, key, MF_INLINE, &r, err));
  r->length = len;
  return arena_put(&b->m.data, data, len, 0, &r->offset, err);
}

int manifest_add_missing(struct manifest_builder *b, const char *key,
                         struct zerr *err) {
  struct mf_rec *r;
  return add_rec(b, key, MF_MISSING, &r, err);
}

int manifest_add_bad(struct manifest_builder *b, const char *key,
                     const char *reason, struct zerr *err) {
  struct mf_rec *r;
  ZTRY(add_rec(b, key, MF_BAD, &r, err));
  r->length = strlen(reason);
  return arena_put(&b->m.data, reason, r->length, 1, &r->offset, err);
}

/* Order by key, then by insertion (seq lives in the path field's place
 * during sorting: see finish). */
static int rec_cmp(const void *a, const void *b, void *ud) {
  const struct manifest_builder *bu = ud;
  const uint32_t ia = *(const uint32_t *)a, ib = *(const uint32_t *)b;
  int c = strcmp(bu->m.keys.p + bu->m.recs[ia].key,
                 bu->m.keys.p + bu->m.recs[ib].key);
  return c ? c : (ia > ib) - (ia < ib);
}

/* Sort an index, keep the last of each key, reorder the records. */
int manifest_builder_finish(struct manifest_builder *b, struct manifest **out,
                            uint64_t *duplicates, struct zerr *err) {
  uint64_t n = b->m.n, dup = 0;
  uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);
  struct mf_rec *sorted = malloc((n ? n : 1) * sizeof *sorted);
  struct manifest *m = calloc(1, sizeof *m);
  if (!idx || !sorted || !m) {
    free(idx);
    free(sorted);
    free(m);
    manifest_builder_free(b);
    return zerr_set(err, ENOMEM, "manifest: out of memory");
  }
  for (uint64_t i = 0; i < n; i++)
    idx[i] = (uint32_t)i;
  qsort_r(idx, n, sizeof *idx, rec_cmp, b);
  uint64_t k = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (i + 1 < n && !strcmp(b->m.keys.p + b->m.recs[idx[i]].key,
                             b->m.keys.p + b->m.recs[idx[i + 1]].key)) {
      dup++; /* a later one of the same key follows: it wins */
      continue;
    }
    sorted[k++] = b->m.recs[idx[i]];
  }
  free(idx);
  *m = b->m;
  free(m->recs);
  m->recs = sorted;
  m->n = k;
  memset(&b->m, 0, sizeof b->m);
  manifest_builder_free(b);
  if (duplicates)
    *duplicates = dup;
  *out = m;
  return 0;
}

void manifest_builder_free(struct manifest_builder *b) {
  if (!b)
    return;
  free(b->m.recs);
  free(b->m.keys.p);
  free(b->m.data.p);
  free(b->m.paths.p);
  free(b->m.path_off);
  free(b->hash);
  free(b->base);
  free(b->last_raw);
  free(b);
}

/* Key of record i. */
static const char *key_at(const struct manifest *m, uint64_t i) {
  return m->keys.p + m->recs[i].key;
}

/* First record whose key is >= key (strcmp order). */
static uint64_t lower_bound(const struct manifest *m, const char *key) {
  uint64_t lo = 0, hi = m->n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (strcmp(key_at(m, mid), key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Fill out from record i. */
static void entry_of(const struct manifest *m, uint64_t i,
                     struct manifest_entry *out) {
  const struct mf_rec *r = &m->recs[i];
  memset(out, 0, sizeof *out);
  out->kind = (enum manifest_kind)r->kind;
  out->length = r->length;
  if (r->kind == MF_RANGE || r->kind == MF_WHOLE) {
    out->path = m->paths.p + m->path_off[r->path];
    out->offset = r->kind == MF_RANGE ? r->offset : 0;
  } else if (r->kind == MF_INLINE || r->kind == MF_BAD) {
    /* A table whose inline entries are all empty has no arena: NULL + 0
     * is undefined (UBSan, fuzz_manifest), so point at "" instead. */
    const uint8_t *base =
        m->data.p ? (const uint8_t *)m->data.p : (const uint8_t *)"";
    out->data = base + r->offset;
  }
}

int manifest_lookup(const struct manifest *m, const char *key,
                    struct manifest_entry *out) {
  uint64_t i = lower_bound(m, key);
  if (i >= m->n || strcmp(key_at(m, i), key))
    return -ENOENT;
  entry_of(m, i, out);
  return 0;
}

/* prefix + "/" (or "" for the root) into buf; -ENAMETOOLONG when too long. */
static int dir_prefix(const char *prefix, char *buf, size_t cap) {
  size_t n = strlen(prefix);
  if (n + 2 > cap)
    return -ENAMETOOLONG;
  memcpy(buf, prefix, n);
  if (n)
    buf[n++] = '/';
  buf[n] = '\0';
  return (int)n;
}

int manifest_is_dir(const struct manifest *m, const char *prefix) {
  char p[4096];
  int pl = dir_prefix(prefix, p, sizeof p);
  if (pl < 0)
    return 0;
  if (!pl)
    return 1; /* the root always is */
  uint64_t i = lower_bound(m, p);
  return i < m->n && !strncmp(key_at(m, i), p, (size_t)pl);
}

int manifest_list(const struct manifest *m, const char *prefix, int64_t mtime,
                  store_list_cb cb, void *ud, struct zerr *err) {
  char p[4096], name[4096];
  int pl = dir_prefix(prefix, p, sizeof p);
  if (pl < 0)
    return zerr_set(err, ENAMETOOLONG, "key too long");
  uint64_t i = lower_bound(m, p);
  while (i < m->n) {
    const char *k = key_at(m, i);
    if (strncmp(k, p, (size_t)pl))
      break;
    const char *rest = k + pl, *slash = strchr(rest, '/');
    if (!slash) {
      const struct mf_rec *r = &m->recs[i];
      uint64_t size = r->kind == MF_WHOLE ? STORE_SIZE_UNKNOWN
                      : r->kind == MF_BAD ? 0
                                          : r->length;
      if (r->kind != MF_MISSING && cb(ud, rest, STORE_FILE, size, mtime))
        return 0;
      i++;
      continue;
    }
    size_t cl = (size_t)(slash - rest);
    /* A name too long for the buffer is still listed (the listing's
     * user leaves out what no file system can name, and says so): the
     * rest of the directory must not fail with it. */
    char *up =
        (size_t)pl + cl + 2 > sizeof name ? malloc((size_t)pl + cl + 2) : name;
    if (!up)
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy(up, rest, cl);
    up[cl] = '\0';
    int stop = cb(ud, up, STORE_DIR, 0, mtime);
    /* Jump past the subtree: every key under p+name+"/" sorts before
     * p+name+"0" ('0' follows '/'). */
    memcpy(up, p, (size_t)pl);
    memcpy(up + pl, rest, cl);
    up[(size_t)pl + cl] = '0';
    up[(size_t)pl + cl + 1] = '\0';
    uint64_t j = stop ? i : lower_bound(m, up);
    if (up != name)
      free(up);
    if (stop)
      return 0;
    i = j > i ? j : i + 1;
  }
  return 0;
}

/* Is path a URL with a scheme (not a local file)? */
static int is_remote(const char *path) { return strstr(path, "://") != NULL; }

int manifest_open(const struct manifest *m, const struct manifest_entry *en,
                  const struct confine *c, struct io_stats *stats,
                  struct bytesrc **out, struct zerr *err) {
  (void)m;
  switch (en->kind) {
  case MF_INLINE: {
    struct bytesrc *s = bytesrc_from_static(en->data, en->length);
    if (!s)
      return zerr_set(err, ENOMEM, "out of memory");
    *out = s;
    return 0;
  }
  case MF_MISSING:
    return zerr_set(err, ENOENT, "missing chunk");
  case MF_BAD:
    return zerr_set(err, EIO, "%s", (const char *)en->data);
  case MF_RANGE:
  case MF_WHOLE:
    break;
  }
  struct bytesrc *f;
  int orc;
  if (is_remote(en->path)) {
    /* The window itself: the object's size is not needed (a read past
     * its end fails naming the URL). */
    orc = confine_open_url(c, en->path, en->kind == MF_RANGE ? en->offset : 0,
                           en->kind == MF_RANGE ? en->length : UINT64_MAX,
                           stats, out, err);
    if (orc < 0 && !zerr_is_transient(-orc)) {
      if (err)
        err->code = EIO;
      return -EIO;
    }
    return orc;
  }
  orc = confine_open(c, en->path, stats, &f, err);
  if (orc < 0) {
    /* A listed key whose target fails is a data error, unless the failure
     * passes (a full descriptor table, no memory): that code is kept so
     * that the engine does not remember it. */
    if (zerr_is_transient(-orc))
      return orc;
    if (err)
      err->code = EIO;
    return -EIO;
  }
  if (en->kind == MF_WHOLE) {
    *out = f;
    return 0;
  }
  uint64_t end;
  if (zadd_u64(en->offset, en->length, &end) < 0 || end > f->size) {
    int rc =
        zerr_set(err, EIO,
                 "reference [%s, %llu, %llu] runs past the end of the "
                 "target (%llu bytes)",
                 en->path, (unsigned long long)en->offset,
                 (unsigned long long)en->length, (unsigned long long)f->size);
    bytesrc_unref(f);
    return rc;
  }
  int rc = bytesrc_sub(f, en->offset, en->length, out, err);
  bytesrc_unref(f);
  return rc;
}

/* Mix v into digest h. */
static uint64_t mix64(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

/* See manifest.h. */
int manifest_digest(const struct manifest *m, const char *prefix,
                    const struct confine *c, uint64_t *out, struct zerr *err) {
  char p[4096];
  int pl = dir_prefix(prefix, p, sizeof p);
  if (pl < 0)
    return zerr_set(err, ENAMETOOLONG, "key too long");
  uint8_t *seen = calloc((size_t)m->npaths / 8 + 1, 1);
  if (!seen)
    return zerr_set(err, ENOMEM, "out of memory");
  uint64_t h = 0x6d616e6966657374ull;
  for (uint64_t i = lower_bound(m, p); i < m->n; i++) {
    const char *k = key_at(m, i);
    if (strncmp(k, p, (size_t)pl))
      break;
    const struct mf_rec *r = &m->recs[i];
    for (const char *q = k; *q; q++)
      h = (h ^ (unsigned char)*q) * 0x100000001b3ull;
    h = mix64(mix64(mix64(h, r->kind), r->offset), r->length);
    if (r->kind == MF_RANGE || r->kind == MF_WHOLE) {
      h = mix64(h, r->path);
      seen[r->path / 8] |= (uint8_t)(1u << (r->path % 8));
    } else if (r->kind == MF_INLINE || r->kind == MF_BAD) {
      const unsigned char *d = (const unsigned char *)m->data.p + r->offset;
      for (uint64_t b = 0; b < r->length; b++)
        h = (h ^ d[b]) * 0x100000001b3ull;
    }
  }
  int rc = 0;
  for (uint32_t id = 0; rc == 0 && id < m->npaths; id++) {
    if (!(seen[id / 8] >> (id % 8) & 1))
      continue;
    const char *path = m->paths.p + m->path_off[id];
    if (is_remote(path)) {
      rc = zerr_set(err, ENOTSUP, "a remote target has no version");
      break;
    }
    struct bytesrc *b = NULL;
    struct zerr e2 = {0};
    int orc = confine_open(c, path, NULL, &b, &e2);
    if (orc < 0 && zerr_is_transient(-orc))
      rc = zerr_set(err, -orc, "%s", e2.msg);
    uint64_t v = orc == 0 ? b->version : 0;
    if (orc == 0 && !v)
      rc = zerr_set(err, ENOTSUP, "a target without a version");
    h = mix64(mix64(h, id), orc == 0 ? v : UINT64_MAX);
    bytesrc_unref(b);
  }
  free(seen);
  if (rc < 0)
    return rc;
  *out = h ? h : 1;
  return 0;
}

uint64_t manifest_count(const struct manifest *m) { return m ? m->n : 0; }

size_t manifest_bytes(const struct manifest *m) {
  if (!m)
    return 0;
  return m->n * sizeof *m->recs + m->keys.cap + m->data.cap + m->paths.cap +
         m->npaths * sizeof *m->path_off;
}

void manifest_free(struct manifest *m) {
  if (!m)
    return;
  free(m->recs);
  free(m->keys.p);
  free(m->data.p);
  free(m->paths.p);
  free(m->path_off);
  free(m);
}
