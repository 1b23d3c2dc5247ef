/* store_pqrefs.c - a store over kerchunk Parquet references (see
 * pqrefs.h): metadata from .zmetadata, chunk keys from record files read
 * through the store that holds them when first needed, their tables kept
 * in a memo of the store's own within a byte budget. Immutable after open
 * apart from the memo (whose lock is its own). */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../net/remote.h"
#include "../util/memo.h"
#include "manifest.h"
#include "pqrefs.h"
#include "store.h"

/* Largest .zmetadata read. */
#define PQ_ZMETADATA_MAX (256u << 20)

struct store_pqrefs {
  struct store base;
  struct store *inner; /* owned: holds .zmetadata and the record files */
  const struct confine *c;
  char *root; /* absolute directory or URL: relative targets */
  struct pqrefs_meta *meta;
  struct memo *memo; /* record tables, by field and record number */
  size_t max_file;
};

/* A record file's table, as the memo holds it. */
struct pq_rec {
  struct zobj o;
  struct manifest *m; /* NULL: the file does not exist (all missing) */
  uint64_t rows;
};

/* Free a record dropped by the memo. */
static void rec_destroy(struct zobj *o) {
  struct pq_rec *r = (struct pq_rec *)o;
  manifest_free(r->m);
  free(r);
}

/* What a fill needs. */
struct rec_fill {
  struct store_pqrefs *s;
  const struct pqrefs_field *f;
  uint64_t record;
};

/* The name of a record file: FIELD/refs.N.parq. */
static void rec_key(const struct pqrefs_field *f, uint64_t record, char *out,
                    size_t cap) {
  snprintf(out, cap, "%s%srefs.%llu.parq", f->name, *f->name ? "/" : "",
           (unsigned long long)record);
}

/* Load a record file for the memo: absent is all missing. */
static int rec_fill_fn(void *ctx, struct zobj **obj, size_t *cost,
                       struct zerr *err) {
  const struct rec_fill *rf = ctx;
  char key[4200];
  rec_key(rf->f, rf->record, key, sizeof key);
  struct pq_rec *r = calloc(1, sizeof *r);
  if (!r)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&r->o, rec_destroy);
  uint8_t *data = NULL;
  size_t len = 0;
  int rc = store_read_all(rf->s->inner, key, rf->s->max_file, &data, &len, err);
  if (rc == 0) {
    rc = pqrefs_record(data, len, key, rf->s->root, rf->s->meta->record_size,
                       &r->m, &r->rows, err);
    free(data);
  } else if (rc == -ENOENT) {
    rc = 0; /* a record file that does not exist: every chunk missing */
  } else {
    zerr_prefix(err, "%s: ", key);
    if (rc == -EFBIG) /* larger than max_decode: a fact about the file */
      rc =
          zerr_set(err, EIO, "%s: larger than %zu bytes", key, rf->s->max_file);
  }
  if (rc < 0) {
    zobj_put(&r->o);
    return rc;
  }
  *obj = &r->o;
  *cost = sizeof *r + (r->m ? manifest_bytes(r->m) : 0);
  return 0;
}

/* Record `record` of array f, pinned (memo_release after use). */
static int rec_get(struct store_pqrefs *s, size_t field, uint64_t record,
                   struct pq_rec **out, struct memo_ref **pin,
                   struct zerr *err) {
  struct memo_key k = {0};
  k.level = MEMO_LEVEL_STORE;
  k.owner = s;
  k.n = 2;
  k.v[0] = field;
  k.v[1] = record;
  struct rec_fill rf = {s, &s->meta->fields[field], record};
  ZTRY(memo_get(s->memo, &k, rec_fill_fn, &rf, pin, err));
  *out = (struct pq_rec *)memo_obj(*pin);
  return 0;
}

/* The entry of chunk n of array field: 0 and *en (valid while *pin is
 * held), -ENOENT for a missing chunk, or the failure. */
static int chunk_entry(struct store_pqrefs *s, size_t field, uint64_t n,
                       struct manifest_entry *en, struct memo_ref **pin,
                       struct zerr *err) {
  uint64_t R = s->meta->record_size;
  struct pq_rec *r;
  ZTRY(rec_get(s, field, n / R, &r, pin, err));
  int rc = 0;
  char key[24];
  snprintf(key, sizeof key, "%llu", (unsigned long long)(n % R));
  if (!r->m) {
    rc = zerr_set(err, ENOENT, "missing chunk (no record file)");
  } else if (n % R >= r->rows) {
    char rk[4200];
    rec_key(&s->meta->fields[field], n / R, rk, sizeof rk);
    rc = zerr_set(err, EIO, "%s has %llu rows, the chunk is row %llu", rk,
                  (unsigned long long)r->rows, (unsigned long long)(n % R));
  } else if (manifest_lookup(r->m, key, en) < 0 || en->kind == MF_MISSING) {
    rc = zerr_set(err, ENOENT, "missing chunk");
  }
  if (rc < 0) {
    memo_release(s->memo, *pin);
    *pin = NULL;
  }
  return rc;
}

/* What key is: 1 a chunk key (*field, *n), 0 a metadata document (*en),
 * or the failure (-ENOENT: neither). */
static int pq_key(const struct store_pqrefs *s, const char *key, size_t *field,
                  uint64_t *n, struct manifest_entry *en, struct zerr *err) {
  int c = pqrefs_chunk(s->meta, key, field, n, err);
  if (c != 0)
    return c;
  if (manifest_lookup(s->meta->docs, key, en) < 0)
    return zerr_set(err, ENOENT, "no such key");
  return 0;
}

static int pq_get(struct store *st, const char *key, struct bytesrc **out,
                  struct zerr *err) {
  struct store_pqrefs *s = (struct store_pqrefs *)st;
  size_t field;
  uint64_t n;
  struct manifest_entry en;
  int c = pq_key(s, key, &field, &n, &en, err);
  if (c < 0)
    return c;
  if (c == 0)
    return manifest_open(s->meta->docs, &en, s->c, &st->stats, out, err);
  struct memo_ref *pin;
  ZTRY(chunk_entry(s, field, n, &en, &pin, err));
  int rc;
  if (en.kind == MF_INLINE) { /* a copy: the table may be evicted */
    void *copy = malloc(en.length ? en.length : 1);
    if (copy && en.length)
      memcpy(copy, en.data, en.length);
    *out = copy ? bytesrc_from_mem(copy, en.length) : NULL;
    rc = *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
  } else {
    rc = manifest_open(NULL, &en, s->c, &st->stats, out, err);
  }
  memo_release(s->memo, pin);
  return rc;
}

/* The size of an entry; a whole object is opened to learn it. */
static int entry_size(struct store_pqrefs *s, const struct manifest_entry *en,
                      uint64_t *size, struct zerr *err) {
  *size = en->kind == MF_RANGE || en->kind == MF_INLINE ? en->length : 0;
  if (en->kind != MF_WHOLE)
    return 0;
  struct bytesrc *b;
  struct zerr e2 = {0};
  /* An unreadable target still stats (size 0); its read fails. A
   * transient failure is no answer: size 0 must not be learned. */
  int orc = manifest_open(NULL, en, s->c, NULL, &b, &e2);
  if (orc == 0) {
    *size = b->size;
    bytesrc_unref(b);
  } else if (zerr_is_transient(-orc)) {
    return zerr_set(err, -orc, "%s", e2.msg);
  }
  return 0;
}

static int pq_stat(struct store *st, const char *key,
                   enum store_entry_type *type, uint64_t *size, int64_t *mtime,
                   struct zerr *err) {
  struct store_pqrefs *s = (struct store_pqrefs *)st;
  size_t field;
  uint64_t n;
  struct manifest_entry en;
  *mtime = STORE_MTIME_UNKNOWN;
  int c = pq_key(s, key, &field, &n, &en, err);
  if (c == 1) {
    struct memo_ref *pin;
    ZTRY(chunk_entry(s, field, n, &en, &pin, err));
    *type = STORE_FILE;
    int rc = entry_size(s, &en, size, err);
    memo_release(s->memo, pin);
    return rc;
  }
  if (c == -ENOENT && manifest_is_dir(s->meta->docs, key)) {
    *type = STORE_DIR;
    *size = 0;
    return 0;
  }
  if (c < 0)
    return c;
  *type = STORE_FILE;
  *size = en.length;
  return 0;
}

/* The chunk keys of array field, record by record; 0, or
 * STORE_LIST_PARTIAL when a record file could not be read (err says
 * why), or a transient failure. */
static int list_chunks(struct store_pqrefs *s, size_t field, store_list_cb cb,
                       void *ud, struct zerr *err) {
  const struct pqrefs_field *f = &s->meta->fields[field];
  uint64_t R = s->meta->record_size;
  uint64_t nrec = f->nchunks / R + (f->nchunks % R != 0);
  int partial = 0;
  for (uint64_t rec = 0; rec < nrec; rec++) {
    struct pq_rec *r;
    struct memo_ref *pin;
    struct zerr e = {0};
    int rc = rec_get(s, field, rec, &r, &pin, &e);
    if (rc < 0) {
      if (zerr_is_transient(-rc)) /* never a listing short of chunks */
        return zerr_set(err, -rc, "%s", e.msg);
      if (!partial)
        zerr_set(err, EIO, "%s", e.msg);
      partial = 1;
      continue;
    }
    uint64_t end = rec * R + R < f->nchunks ? rec * R + R : f->nchunks;
    int stop = 0;
    for (uint64_t n = rec * R; r->m && n < end && !stop; n++) {
      char key[24], name[PQREFS_MAX_DIMS * 21 + 1];
      struct manifest_entry en;
      snprintf(key, sizeof key, "%llu", (unsigned long long)(n - rec * R));
      if (manifest_lookup(r->m, key, &en) < 0 || en.kind == MF_MISSING)
        continue;
      pqrefs_chunk_name(f, n, name, sizeof name);
      uint64_t size = en.kind == MF_WHOLE ? STORE_SIZE_UNKNOWN
                      : en.kind == MF_BAD ? 0
                                          : en.length;
      stop = cb(ud, name, STORE_FILE, size, STORE_MTIME_UNKNOWN);
    }
    memo_release(s->memo, pin);
    if (stop)
      return 0;
  }
  return partial ? STORE_LIST_PARTIAL : 0;
}

static int pq_list(struct store *st, const char *prefix, store_list_cb cb,
                   void *ud, struct zerr *err) {
  struct store_pqrefs *s = (struct store_pqrefs *)st;
  if (*prefix && !manifest_is_dir(s->meta->docs, prefix))
    return zerr_set(err, ENOENT, "no such directory");
  ZTRY(manifest_list(s->meta->docs, prefix, STORE_MTIME_UNKNOWN, cb, ud, err));
  for (size_t i = 0; i < s->meta->nfields; i++) {
    const struct pqrefs_field *f = &s->meta->fields[i];
    if (strcmp(f->name, prefix))
      continue;
    if (f->why[0]) { /* its chunks cannot be listed: say why */
      zerr_set(err, EIO, "%s", f->why);
      return STORE_LIST_PARTIAL;
    }
    return list_chunks(s, i, cb, ud, err);
  }
  return 0;
}

static void pq_destroy(struct store *st) {
  struct store_pqrefs *s = (struct store_pqrefs *)st;
  memo_free(s->memo);
  pqrefs_meta_free(s->meta);
  store_free(s->inner);
  free(s->root);
  free(st->location);
  free(s);
}

static const struct store_ops pq_ops = {pq_get, pq_stat, pq_list, pq_destroy};

uint64_t store_pqrefs_loads(const struct store *st) {
  const struct store_pqrefs *s = (const struct store_pqrefs *)st;
  return memo_fills(s->memo, MEMO_LEVEL_STORE);
}

/* The base of relative targets: the real path of a local root, or the
 * URL without its trailing '/'. */
static char *root_of(const struct store *inner) {
  const char *loc = inner->location;
  if (remote_is_url(loc)) {
    char *u = strndup(loc, strcspn(loc, "?#"));
    size_t n = u ? strlen(u) : 0;
    while (u && n && u[n - 1] == '/')
      u[--n] = '\0';
    return u;
  }
  return realpath(loc, NULL);
}

int store_wrap_pqrefs(struct store *inner, const struct confine *c,
                      size_t budget, size_t max_file, struct store **out,
                      struct zerr *err) {
  uint8_t *text = NULL;
  size_t len = 0;
  struct zerr e = {0};
  *out = inner;
  int rc =
      store_read_all(inner, ".zmetadata", PQ_ZMETADATA_MAX, &text, &len, &e);
  if (rc < 0 && zerr_is_transient(-rc)) {
    store_free(inner);
    *out = NULL;
    return zerr_set(err, -rc, ".zmetadata: %s", e.msg);
  }
  if (rc < 0 || !pqrefs_is_zmetadata((const char *)text, len)) {
    free(text);
    return 0; /* not Parquet references: the caller goes on with inner */
  }
  struct store_pqrefs *s = calloc(1, sizeof *s);
  if (!s) {
    rc = zerr_set(err, ENOMEM, "out of memory");
  } else {
    s->base.ops = &pq_ops;
    s->base.remote = inner->remote;
    s->inner = inner;
    s->c = c;
    s->max_file = max_file;
    inner = NULL;
    struct memo_config mc = {budget, 1, NULL, 0, 0};
    if (!(s->base.location = strdup(s->inner->location)) ||
        !(s->root = root_of(s->inner)))
      rc = zerr_set(err, ENOMEM, "out of memory");
    else if ((rc = memo_new(&mc, &s->memo, err)) == 0)
      rc = pqrefs_meta_parse((const char *)text, len, &s->meta, err);
  }
  free(text);
  if (rc < 0) {
    if (s)
      pq_destroy(&s->base);
    store_free(inner);
    *out = NULL;
    return rc;
  }
  *out = &s->base;
  return 1;
}
