/* presence.c - stored chunks of an array from store listings (see
 * presence.h). */
#include "presence.h"

#include "../util/cancel.h"
#include "../util/zmath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Release a scan. */
static void presence_destroy(struct zobj *o) {
  struct presence *p = (struct presence *)o;
  free(p->lin);
  free(p);
}

/* One directory level's children, collected before descending (so no
 * listing is open while a deeper one runs). */
struct names {
  char **v;
  size_t n, cap;
  int oom;
};

/* A scan in progress. */
struct scan {
  struct store *s;
  const struct zmeta *m;
  const atomic_int *stop;
  uint64_t max;
  uint64_t *lin;
  uint64_t n, cap;
  uint64_t bytes; /* listed sizes of the stored chunks, or
                     STORE_SIZE_UNKNOWN */
  int rc;         /* first failure */
  struct zerr *err;
  struct names *dirs; /* children of the directory being listed */
  const char *rel;    /* that directory, relative to the array */
  size_t rel_len;     /* its length */
  int want_dirs;
};

/* Linear index of chunk coordinates (fits: meta checks the chunk count). */
static uint64_t chunk_linear(const struct zmeta *m, const uint64_t *idx) {
  uint64_t lin = 0;
  for (int d = 0; d < m->ndim; d++)
    lin = lin * m->grid[d] + idx[d];
  return lin;
}

/* Remember a stored chunk. */
static int scan_add(struct scan *sc, uint64_t lin) {
  if (sc->n == sc->cap) {
    if (sc->n >= sc->max) {
      sc->rc = zerr_set(sc->err, EFBIG,
                        "more than %llu stored chunks: too many to index",
                        (unsigned long long)sc->max);
      return 1;
    }
    uint64_t nc = sc->cap ? sc->cap * 2 : 256;
    if (nc > sc->max)
      nc = sc->max;
    uint64_t *v = realloc(sc->lin, (size_t)nc * sizeof *v);
    if (!v) {
      sc->rc = zerr_set(sc->err, ENOMEM, "out of memory");
      return 1;
    }
    sc->lin = v;
    sc->cap = nc;
  }
  sc->lin[sc->n++] = lin;
  return 0;
}

/* Is name a decimal coordinate? */
static int is_coord(const char *name) {
  if (!*name)
    return 0;
  for (const char *p = name; *p; p++)
    if (*p < '0' || *p > '9')
      return 0;
  return 1;
}

/* store_list callback: files (and unusable entries) that parse as chunk
 * keys are stored chunks; directories that can hold chunk keys are kept
 * for the next level. */
static int scan_entry(void *ud, const char *name, enum store_entry_type type,
                      uint64_t size, int64_t mtime) {
  (void)mtime;
  struct scan *sc = ud;
  if (cancel_stopped(sc->stop)) { /* shutdown, or its reader gave up */
    sc->rc = cancel_check(sc->stop, sc->err);
    return 1;
  }
  /* rel/name, joined by hand: a listing of 10^6 keys calls this 10^6
   * times, and snprintf cost more than the rest of the scan */
  char key[4096];
  size_t rl = sc->rel_len, nl = strlen(name);
  if (rl + (rl ? 1 : 0) + nl >= sizeof key)
    return 0;
  memcpy(key, sc->rel, rl);
  key[rl] = '/';
  memcpy(key + rl + (rl ? 1 : 0), name, nl + 1);
  if (type == STORE_DIR) {
    if (!sc->want_dirs)
      return 0;
    /* V3 keys descend through "c" first, then coordinates. */
    int ok = sc->m->key_encoding == ZMETA_KEY_DEFAULT && !*sc->rel
                 ? !strcmp(name, "c")
                 : is_coord(name);
    if (!ok)
      return 0;
    struct names *d = sc->dirs;
    if (d->n == d->cap) {
      size_t nc = d->cap ? d->cap * 2 : 16;
      char **v = realloc(d->v, nc * sizeof *v);
      if (!v) {
        d->oom = 1;
        return 1;
      }
      d->v = v;
      d->cap = nc;
    }
    if (!(d->v[d->n] = strdup(name))) {
      d->oom = 1;
      return 1;
    }
    d->n++;
    return 0;
  }
  uint64_t idx[ZMETA_MAX_DIMS];
  if (zmeta_parse_chunk_key(sc->m, key, idx) != 0)
    return 0;
  if (sc->bytes != STORE_SIZE_UNKNOWN)
    sc->bytes = type == STORE_FILE && size < STORE_SIZE_UNKNOWN - sc->bytes
                    ? sc->bytes + size
                    : STORE_SIZE_UNKNOWN;
  return scan_add(sc, chunk_linear(sc->m, idx));
}

/* Directory levels a chunk key can have below the array. */
static int key_depth(const struct zmeta *m) {
  if (m->key_sep != '/' || m->ndim == 0)
    return 0;
  return m->key_encoding == ZMETA_KEY_DEFAULT ? m->ndim : m->ndim - 1;
}

/* List directory rel (relative to the array at prefix) and its chunk
 * subdirectories, depth levels down. A missing directory holds nothing. */
static int scan_dir(struct scan *sc, const char *prefix, const char *rel,
                    int depth) {
  char dir[4096];
  int w = *prefix ? snprintf(dir, sizeof dir, "%s%s%s", prefix, *rel ? "/" : "",
                             rel)
                  : snprintf(dir, sizeof dir, "%s", rel);
  if (w < 0 || (size_t)w >= sizeof dir)
    return 0;
  struct names dirs = {0};
  sc->dirs = &dirs;
  sc->rel = rel;
  sc->rel_len = strlen(rel);
  sc->want_dirs = depth > 0;
  struct zerr lerr = {0};
  int rc = store_list(sc->s, dir, scan_entry, sc, &lerr);
  if (rc == STORE_LIST_PARTIAL) { /* unknown keys: "absent" would lie */
    *sc->err = lerr;
    rc = -EIO;
  } else if (rc == 0 && dirs.oom)
    rc = zerr_set(sc->err, ENOMEM, "out of memory");
  else if (rc == -ENOENT || rc == -ENOTDIR || rc == -EINVAL)
    rc = 0; /* nothing stored there */
  else if (rc < 0)
    *sc->err = lerr;
  if (rc == 0)
    rc = sc->rc;
  for (size_t i = 0; i < dirs.n && rc == 0; i++) {
    char sub[4096];
    w = *rel ? snprintf(sub, sizeof sub, "%s/%s", rel, dirs.v[i])
             : snprintf(sub, sizeof sub, "%s", dirs.v[i]);
    if (w > 0 && (size_t)w < sizeof sub)
      rc = scan_dir(sc, prefix, sub, depth - 1);
  }
  for (size_t i = 0; i < dirs.n; i++)
    free(dirs.v[i]);
  free(dirs.v);
  return rc;
}

/* See presence.h. */
int presence_scan(struct store *s, const char *prefix, const struct zmeta *m,
                  uint64_t max_chunks, const atomic_int *stop,
                  struct presence **out, struct zerr *err) {
  struct presence *p = calloc(1, sizeof *p);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&p->obj, presence_destroy);
  /* Can the store list the array at all? (Consolidated metadata may name
   * arrays a store cannot list.) */
  enum store_entry_type t;
  uint64_t sz;
  if (s->unlistable || (*prefix && store_stat(s, prefix, &t, &sz, NULL) < 0)) {
    p->complete = 0;
    *out = p;
    return 0;
  }
  struct scan sc = {
      .s = s, .m = m, .stop = stop, .max = max_chunks, .err = err};
  int rc = scan_dir(&sc, prefix, "", key_depth(m));
  if (rc < 0) {
    free(sc.lin);
    zobj_put(&p->obj);
    return rc;
  }
  zsort_u64(sc.lin, sc.n);
  uint64_t k = 0;
  for (uint64_t i = 0; i < sc.n; i++) /* a key listed twice counts once */
    if (!k || sc.lin[i] != sc.lin[k - 1])
      sc.lin[k++] = sc.lin[i];
  p->complete = 1;
  p->n = k;
  p->bytes = sc.bytes;
  p->lin = sc.lin;
  *out = p;
  return 0;
}

/* Memory held. */
size_t presence_cost(const struct presence *p) {
  return sizeof *p + (size_t)p->n * sizeof(uint64_t);
}
