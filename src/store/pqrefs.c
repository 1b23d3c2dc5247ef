/* pqrefs.c - .zmetadata and record files of kerchunk Parquet references
 * (see pqrefs.h): the metadata table, the arrays' chunk grids, chunk keys,
 * and record files turned into tables of references. */
#define _GNU_SOURCE
#include "pqrefs.h"

#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json/jlex.h"
#include "../json/zjson.h"
#include "../parquet/parquet.h"
#include "../parquet/pqmeta.h"
#include "../util/log.h"

int pqrefs_is_zmetadata(const char *text, size_t len) {
  struct zerr err = {0};
  struct jlex l;
  int rs = 0, md = 0;
  jlex_init(&l, text, len, JLEX_NONFINITE | JLEX_LONE_SURROGATE, &err);
  if (jlex_peek(&l) != '{')
    return 0;
  int more = jlex_open(&l, '{');
  while (more == 1) {
    struct jlex_str k;
    if (jlex_key(&l, &k) < 0)
      return 0;
    char c = jlex_peek(&l);
    if (k.len == 11 && !memcmp(k.body, "record_size", 11))
      rs = c == '-' || isdigit((unsigned char)c);
    else if (k.len == 8 && !memcmp(k.body, "metadata", 8))
      md = c == '{';
    if (jlex_skip(&l) < 0)
      return 0;
    more = jlex_next(&l, '{');
  }
  return more == 0 && rs && md;
}

/* The grid of an array from its .zarray text. */
static void field_grid(struct pqrefs_field *f, const char *text, size_t len) {
  struct zerr e = {0};
  json_t *j = zjson_loadb(text, len, &e);
  json_t *shape = json_object_get(j, "shape"),
         *chunks = json_object_get(j, "chunks");
  const char *sep =
      json_string_value(json_object_get(j, "dimension_separator"));
  size_t n = json_array_size(shape);
  f->sep = '.';
  f->nchunks = 1;
  if (!json_is_array(shape) || !json_is_array(chunks) ||
      json_array_size(chunks) != n || n > PQREFS_MAX_DIMS) {
    snprintf(f->why, sizeof f->why,
             "%s/.zarray: shape and chunks are not arrays of one length "
             "(at most %d)",
             f->name, PQREFS_MAX_DIMS);
  } else if (sep && strcmp(sep, ".")) {
    snprintf(f->why, sizeof f->why,
             "%s/.zarray: dimension_separator \"%s\": Parquet references "
             "name chunks i.j.k",
             f->name, sep);
  }
  f->ndim = (int)n;
  for (size_t i = 0; i < n && !f->why[0]; i++) {
    json_t *s = json_array_get(shape, i), *c = json_array_get(chunks, i);
    json_int_t sv = json_integer_value(s), cv = json_integer_value(c);
    if (!json_is_integer(s) || !json_is_integer(c) || sv < 0 || cv <= 0) {
      snprintf(f->why, sizeof f->why,
               "%s/.zarray: shape and chunks must be non-negative and "
               "positive integers",
               f->name);
      break;
    }
    f->grid[i] =
        (uint64_t)sv / (uint64_t)cv + ((uint64_t)sv % (uint64_t)cv != 0);
    if (f->grid[i] && f->nchunks > (UINT64_C(1) << 62) / f->grid[i]) {
      snprintf(f->why, sizeof f->why, "%s/.zarray: more than 2^62 chunks",
               f->name);
      break;
    }
    f->nchunks *= f->grid[i];
  }
  if (f->why[0])
    f->nchunks = 0;
  json_decref(j);
}

/* Add an array named by the key of its .zarray (klen bytes before
 * "/.zarray", 0 for a root array). */
static int add_field(struct pqrefs_meta *m, const char *key, size_t klen,
                     const char *doc, size_t dlen, struct zerr *err) {
  struct pqrefs_field *nf =
      realloc(m->fields, (m->nfields + 1) * sizeof *m->fields);
  if (!nf)
    return zerr_set(err, ENOMEM, "out of memory");
  m->fields = nf;
  struct pqrefs_field *f = &nf[m->nfields];
  memset(f, 0, sizeof *f);
  if (!(f->name = strndup(key, klen)))
    return zerr_set(err, ENOMEM, "out of memory");
  m->nfields++;
  field_grid(f, doc, dlen);
  return 0;
}

/* The "metadata" object: each member's value text as a document. */
static int read_docs(struct pqrefs_meta *m, struct jlex *l,
                     struct manifest_builder *b, struct zerr *err) {
  char *key = NULL;
  size_t cap = 0, klen;
  int rc = 0, more = jlex_open(l, '{');
  while (more == 1 && rc == 0) {
    if (jlex_peek(l) != '"') {
      rc = jlex_fail(l, "string expected");
      break;
    }
    if ((rc = jlex_string_dup(l, &key, &cap, &klen)) < 0 ||
        (rc = jlex_eat(l, ':') ? 0 : jlex_fail(l, "':' expected")) < 0)
      break;
    jlex_ws(l);
    const char *v = l->p;
    if ((rc = jlex_skip(l)) < 0)
      break;
    size_t vlen = (size_t)(l->p - v);
    if (strlen(key) != klen || zkey_valid(key) < 0) {
      zlog(ZLOG_WARN,
           ".zmetadata: metadata key '%s' left out (not a "
           "valid store key)",
           key);
    } else {
      rc = manifest_add_inline(b, key, v, vlen, err);
      size_t kl = strlen(key);
      if (rc == 0 && kl >= 7 && !strcmp(key + kl - 7, ".zarray") &&
          (kl == 7 || key[kl - 8] == '/'))
        rc = add_field(m, key, kl == 7 ? 0 : kl - 8, v, vlen, err);
    }
    if (rc == 0)
      more = jlex_next(l, '{');
  }
  free(key);
  return rc < 0 ? rc : more < 0 ? more : 0;
}

int pqrefs_meta_parse(const char *text, size_t len, struct pqrefs_meta **out,
                      struct zerr *err) {
  struct pqrefs_meta *m = calloc(1, sizeof *m);
  struct manifest_builder *b = NULL;
  if (!m)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = manifest_builder_new("/", &b, err);
  struct jlex l;
  jlex_init(&l, text, len, JLEX_NONFINITE | JLEX_LONE_SURROGATE, err);
  int seen_md = 0, seen_rs = 0;
  int more = rc == 0 && jlex_peek(&l) == '{'
                 ? jlex_open(&l, '{')
                 : (rc = rc ? rc : jlex_fail(&l, "not an object"));
  while (rc == 0 && more == 1) {
    struct jlex_str k;
    if ((rc = jlex_key(&l, &k)) < 0)
      break;
    if (k.len == 8 && !memcmp(k.body, "metadata", 8) && !seen_md &&
        jlex_peek(&l) == '{') {
      rc = read_docs(m, &l, b, err);
      seen_md = 1;
    } else if (k.len == 11 && !memcmp(k.body, "record_size", 11)) {
      struct jlex_num num = {0};
      jlex_ws(&l);
      rc = jlex_number(&l, &num);
      if (rc == 0 && (!num.integer || num.neg || !num.fits_u64 ||
                      num.mag == 0 || num.mag > PQREFS_MAX_RECORD_SIZE))
        rc = zerr_set(err, EIO, "record_size %.*s (1 to %u)", (int)num.len,
                      num.text, PQREFS_MAX_RECORD_SIZE);
      m->record_size = num.mag;
      seen_rs = 1;
    } else {
      rc = jlex_skip(&l);
    }
    if (rc == 0)
      more = jlex_next(&l, '{');
  }
  if (rc == 0 && more < 0)
    rc = more;
  if (rc == 0 && (!seen_md || !seen_rs))
    rc = zerr_set(err, EIO, "no \"metadata\" object or no record_size");
  if (rc == 0) {
    rc = manifest_builder_finish(b, &m->docs, NULL, err);
    b = NULL;
  }
  manifest_builder_free(b);
  if (rc < 0) {
    zerr_prefix(err, ".zmetadata: ");
    pqrefs_meta_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

void pqrefs_meta_free(struct pqrefs_meta *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->nfields; i++)
    free(m->fields[i].name);
  free(m->fields);
  manifest_free(m->docs);
  free(m);
}

/* A canonical decimal (no sign, no leading zero) of rest, up to stop or
 * the end: its value and length, or -1. */
static int dec(const char *p, char stop, uint64_t *v, size_t *len) {
  size_t n = 0;
  uint64_t x = 0;
  while (p[n] && p[n] != stop) {
    if (!isdigit((unsigned char)p[n]) || (n == 1 && p[0] == '0') ||
        x > (UINT64_MAX - 9) / 10)
      return -1;
    x = x * 10 + (uint64_t)(p[n] - '0');
    n++;
  }
  if (!n)
    return -1;
  *v = x;
  *len = n;
  return 0;
}

int pqrefs_chunk(const struct pqrefs_meta *m, const char *key, size_t *field,
                 uint64_t *n, struct zerr *err) {
  for (size_t i = 0; i < m->nfields; i++) {
    const struct pqrefs_field *f = &m->fields[i];
    size_t fl = strlen(f->name);
    const char *rest = key;
    if (fl) {
      if (strncmp(key, f->name, fl) || key[fl] != '/')
        continue;
      rest = key + fl + 1;
    }
    if (rest[0] == '.' || !*rest) /* .zarray, .zattrs: metadata */
      return 0;
    if (f->why[0])
      return zerr_set(err, EIO, "%s", f->why);
    uint64_t num = 0, c;
    size_t len;
    int d = 0;
    for (const char *p = rest;; d++) {
      if (dec(p, f->sep, &c, &len) < 0 || d >= (f->ndim ? f->ndim : 1))
        return fl ? zerr_set(err, ENOENT, "not a chunk key") : 0;
      uint64_t g = f->ndim ? f->grid[d] : 1;
      if (c >= g)
        return zerr_set(err, ENOENT, "chunk outside the grid");
      num = num * g + c; /* < nchunks <= 2^62 */
      p += len;
      if (!*p)
        break;
      p++;
    }
    if (d + 1 != (f->ndim ? f->ndim : 1))
      return fl ? zerr_set(err, ENOENT, "not a chunk key") : 0;
    *field = i;
    *n = num;
    return 1;
  }
  return 0;
}

void pqrefs_chunk_name(const struct pqrefs_field *f, uint64_t n, char *out,
                       size_t cap) {
  if (f->ndim == 0) {
    snprintf(out, cap, "0");
    return;
  }
  uint64_t idx[PQREFS_MAX_DIMS];
  for (int d = f->ndim - 1; d >= 0; d--) {
    idx[d] = n % f->grid[d];
    n /= f->grid[d];
  }
  size_t o = 0;
  out[0] = '\0';
  for (int d = 0; d < f->ndim && o < cap; d++)
    o += (size_t)snprintf(out + o, cap - o, "%s%llu", d ? "." : "",
                          (unsigned long long)idx[d]);
}

/* The columns of a record file (absent ones NULL). */
struct rec_cols {
  struct parquet_col *path, *offset, *size, *raw;
};

/* Read column name when the file has it; checks its type. */
static int rec_col(const struct parquet_file *f, const char *name, int bytes,
                   struct parquet_col **out, struct zerr *err) {
  int i = parquet_column(f, name);
  *out = NULL;
  if (i < 0)
    return 0;
  ZTRY(parquet_read(f, i, out, err));
  if (((*out)->type == PQ_BYTE_ARRAY) != bytes)
    return zerr_set(err, EIO, "column '%s' is not of type %s", name,
                    bytes ? "BYTE_ARRAY" : "INT64 or INT32");
  return 0;
}

/* One row into the builder. */
static int rec_row(struct manifest_builder *b, const struct rec_cols *c,
                   uint64_t i, const char *name, struct zerr *err) {
  char key[24], why[512];
  snprintf(key, sizeof key, "%llu", (unsigned long long)i);
  if (c->raw && !c->raw->isnull[i])
    return manifest_add_inline(b, key, c->raw->bytes + c->raw->off[i],
                               (size_t)(c->raw->off[i + 1] - c->raw->off[i]),
                               err);
  if (!c->path || c->path->isnull[i])
    return 0; /* missing */
  const char *p = (const char *)c->path->bytes + c->path->off[i];
  size_t plen = (size_t)(c->path->off[i + 1] - c->path->off[i]);
  int ho = c->offset && !c->offset->isnull[i],
      hs = c->size && !c->size->isnull[i];
  int64_t off = ho ? c->offset->ints[i] : 0, sz = hs ? c->size->ints[i] : 0;
  const char *bad = NULL;
  if (!plen)
    bad = "empty path";
  else if (memchr(p, '\0', plen))
    bad = MANIFEST_NUL_REASON;
  else if (ho != hs)
    bad = "offset or size is null, not both";
  else if (off < 0 || sz < 0)
    bad = "negative offset or size";
  if (bad) {
    snprintf(why, sizeof why, "%s row %llu: %s", name, (unsigned long long)i,
             bad);
    return manifest_add_bad(b, key, why, err);
  }
  char *path = strndup(p, plen);
  if (!path)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = off == 0 && sz == 0 ? manifest_add_whole(b, key, path, err)
                               : manifest_add_range(b, key, path, (uint64_t)off,
                                                    (uint64_t)sz, err);
  free(path);
  return rc;
}

int pqrefs_record(const uint8_t *data, size_t len, const char *name,
                  const char *base, uint64_t max_rows, struct manifest **out,
                  uint64_t *rows, struct zerr *err) {
  struct parquet_limits lim;
  parquet_limits_default(&lim);
  lim.max_rows = max_rows;
  struct parquet_file *f = NULL;
  struct rec_cols c = {0};
  struct manifest_builder *b = NULL;
  int rc = parquet_open(data, len, &lim, &f, err);
  if (rc == 0)
    rc = rec_col(f, "path", 1, &c.path, err);
  if (rc == 0)
    rc = rec_col(f, "offset", 0, &c.offset, err);
  if (rc == 0)
    rc = rec_col(f, "size", 0, &c.size, err);
  if (rc == 0)
    rc = rec_col(f, "raw", 1, &c.raw, err);
  if (rc == 0 && !c.path && !c.raw)
    rc = zerr_set(err, EIO, "neither a path nor a raw column");
  if (rc == 0)
    rc = manifest_builder_new(base, &b, err);
  uint64_t n = rc == 0 ? parquet_num_rows(f) : 0;
  for (uint64_t i = 0; i < n && rc == 0; i++)
    rc = rec_row(b, &c, i, name, err);
  parquet_col_free(c.path);
  parquet_col_free(c.offset);
  parquet_col_free(c.size);
  parquet_col_free(c.raw);
  parquet_close(f);
  if (rc == 0) {
    rc = manifest_builder_finish(b, out, NULL, err);
    b = NULL;
  }
  manifest_builder_free(b);
  if (rc < 0) {
    if (rc == -EINVAL) /* a fact about the file, as every other refusal */
      rc = -EIO;
    if (err && rc == -EIO)
      err->code = EIO;
    zerr_prefix(err, "%s: ", name);
    return rc;
  }
  *rows = n;
  return 0;
}
