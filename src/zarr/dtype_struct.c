/* dtype_struct.c - numpy structured data types of Zarr V2 (see
 * dtype_struct.h): the descr list walked depth first into leaf fields,
 * every count and size checked against the limits before it is used. */
#include "dtype_struct.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest path of a leaf field, in bytes. */
#define DSTRUCT_MAX_NAME 256

/* Free; NULL-safe. */
void dtype_struct_free(struct dtype_struct *st) {
  if (!st)
    return;
  for (size_t i = 0; i < st->nfields; i++)
    free(st->fields[i].name);
  free(st->fields);
  free(st);
}

/* The name of field i of a list: the string, the second of a
 * [title, name] pair, or numpy's f<i> for an empty one (padding). NULL
 * when it is none of these. */
static const char *field_name(json_t *f, size_t i, char *buf, size_t len) {
  json_t *n = json_array_get(f, 0);
  if (json_is_array(n) && json_array_size(n) == 2)
    n = json_array_get(n, 1);
  const char *s = json_string_value(n);
  if (s && !s[0]) {
    snprintf(buf, len, "f%zu", i);
    return buf;
  }
  return s;
}

/* The optional shape of a field: an integer or a list of positive
 * integers; *count their product, at most DSTRUCT_MAX_ITEMSIZE. */
static int field_shape(json_t *sh, const char *name, struct dtype_field *lf,
                       struct zerr *err) {
  lf->ndim = 0;
  lf->count = 1;
  if (!sh)
    return 0;
  size_t n = json_is_array(sh) ? json_array_size(sh) : 1;
  if ((!json_is_array(sh) && !json_is_integer(sh)) || n > DSTRUCT_MAX_SUBDIMS)
    return zerr_set(err, EIO,
                    "field '%s': the shape must be an integer or a list of "
                    "at most %d integers",
                    name, DSTRUCT_MAX_SUBDIMS);
  for (size_t d = 0; d < n; d++) {
    json_t *v = json_is_array(sh) ? json_array_get(sh, d) : sh;
    json_int_t x = json_is_integer(v) ? json_integer_value(v) : 0;
    if (x < 1 || (uint64_t)x > DSTRUCT_MAX_ITEMSIZE ||
        lf->count * (uint64_t)x > DSTRUCT_MAX_ITEMSIZE)
      return zerr_set(err, EIO,
                      "field '%s': subarray dimensions must be positive "
                      "integers of at most %u values in all",
                      name, DSTRUCT_MAX_ITEMSIZE);
    lf->shape[lf->ndim++] = (uint64_t)x;
    lf->count *= (uint64_t)x;
  }
  return 0;
}

/* Append a leaf (its name copied). */
static int add_leaf(struct dtype_struct *st, size_t *cap,
                    const struct dtype_field *lf, const char *name,
                    struct zerr *err) {
  if (st->nfields == DSTRUCT_MAX_FIELDS)
    return zerr_set(err, EIO, "structured dtype: more than %d fields",
                    DSTRUCT_MAX_FIELDS);
  if (st->nfields == *cap) {
    size_t nc = *cap ? *cap * 2 : 8;
    struct dtype_field *f = realloc(st->fields, nc * sizeof *f);
    if (!f)
      return zerr_set(err, ENOMEM, "out of memory");
    st->fields = f;
    *cap = nc;
  }
  char *copy = strdup(name);
  if (!copy)
    return zerr_set(err, ENOMEM, "out of memory");
  st->fields[st->nfields] = *lf;
  st->fields[st->nfields++].name = copy;
  return 0;
}

/* A scalar type a field may have: every fixed-size type we show. */
static int leaf_type(const char *ts, const char *name, struct dtype_field *lf,
                     struct zerr *err) {
  dtype_parse_numpy(ts, &lf->type, &lf->endian);
  snprintf(lf->typestr, sizeof lf->typestr, "%s", ts);
  if (ts[0] && ts[1] == 'O')
    return zerr_set(err, ENOTSUP, "field '%s': object fields are not supported",
                    name);
  if (lf->type.kind == DT_UNSUPPORTED || !lf->type.size)
    return zerr_set(err, ENOTSUP, "field '%s': unsupported type '%.40s'", name,
                    ts);
  return 0;
}

struct walk {
  struct dtype_struct *st;
  size_t cap; /* entries allocated in st->fields */
};

static int walk_list(struct walk *w, json_t *list, const char *prefix,
                     size_t base, int depth, size_t *size, struct zerr *err);

/* The path of index c of a subarray of shape lf->shape: "name[1,2]". */
static void index_name(const char *full, const struct dtype_field *lf,
                       uint64_t c, char *buf, size_t len) {
  uint64_t idx[DSTRUCT_MAX_SUBDIMS];
  for (int d = lf->ndim - 1; d >= 0; d--) {
    idx[d] = c % lf->shape[d];
    c /= lf->shape[d];
  }
  int n = snprintf(buf, len, "%s[", full);
  for (int d = 0; d < lf->ndim && n > 0 && (size_t)n < len; d++)
    n += snprintf(buf + n, len - (size_t)n, "%s%llu", d ? "," : "",
                  (unsigned long long)idx[d]);
  if (n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, "]");
}

/* One field of a list at byte offset `at`: a leaf, or a nested record
 * walked once per subarray index. *size gets its bytes. */
static int walk_field(struct walk *w, json_t *f, const char *full, size_t at,
                      int depth, size_t *size, struct zerr *err) {
  struct dtype_field lf;
  memset(&lf, 0, sizeof lf);
  ZTRY(field_shape(json_array_get(f, 2), full, &lf, err));
  json_t *t = json_array_get(f, 1);
  if (json_is_string(t)) {
    ZTRY(leaf_type(json_string_value(t), full, &lf, err));
    if (lf.count > DSTRUCT_MAX_ITEMSIZE / lf.type.size)
      return zerr_set(err, EIO, "field '%s': more than %u bytes", full,
                      DSTRUCT_MAX_ITEMSIZE);
    lf.offset = at;
    *size = (size_t)(lf.count * lf.type.size);
    return add_leaf(w->st, &w->cap, &lf, full, err);
  }
  if (!json_is_array(t))
    return zerr_set(err, EIO,
                    "field '%s': the type must be a string or a list of fields",
                    full);
  size_t sub = 0, pos = 0;
  for (uint64_t c = 0; c < lf.count; c++) {
    char name[DSTRUCT_MAX_NAME + 32];
    if (lf.ndim)
      index_name(full, &lf, c, name, sizeof name);
    else
      snprintf(name, sizeof name, "%s", full);
    if (strlen(name) > DSTRUCT_MAX_NAME)
      return zerr_set(err, EIO, "field '%.64s...': name longer than %d bytes",
                      full, DSTRUCT_MAX_NAME);
    ZTRY(walk_list(w, t, name, at + pos, depth + 1, &sub, err));
    if (sub > DSTRUCT_MAX_ITEMSIZE - pos - at)
      return zerr_set(err, EIO, "field '%s': more than %u bytes", full,
                      DSTRUCT_MAX_ITEMSIZE);
    pos += sub;
  }
  *size = pos;
  return 0;
}

/* A list of fields at byte offset base (names under prefix, depth levels
 * down); *size gets the record's bytes. */
static int walk_list(struct walk *w, json_t *list, const char *prefix,
                     size_t base, int depth, size_t *size, struct zerr *err) {
  if (depth > DSTRUCT_MAX_DEPTH)
    return zerr_set(err, EIO, "structured dtype nested more than %d deep",
                    DSTRUCT_MAX_DEPTH);
  size_t n = json_array_size(list);
  if (!n)
    return zerr_set(err, EIO, "%s%s%s has no fields",
                    prefix[0] ? "field '" : "structured dtype", prefix,
                    prefix[0] ? "'" : "");
  size_t off = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *f = json_array_get(list, i);
    char nbuf[32], full[DSTRUCT_MAX_NAME + 2];
    const char *name =
        json_is_array(f) && json_array_size(f) >= 2 && json_array_size(f) <= 3
            ? field_name(f, i, nbuf, sizeof nbuf)
            : NULL;
    if (!name)
      return zerr_set(err, EIO,
                      "structured dtype: field %zu%s%s must be [name, type] "
                      "or [name, type, shape]",
                      i, prefix[0] ? " of " : "", prefix);
    for (size_t j = 0; j < i; j++) {
      char jbuf[32];
      const char *other =
          field_name(json_array_get(list, j), j, jbuf, sizeof jbuf);
      if (other && !strcmp(other, name))
        return zerr_set(err, EIO,
                        "structured dtype: field name '%.64s' "
                        "appears twice",
                        name);
    }
    int len = snprintf(full, sizeof full, "%s%s%s", prefix,
                       prefix[0] ? "." : "", name);
    if (len < 0 || (size_t)len > DSTRUCT_MAX_NAME)
      return zerr_set(err, EIO, "field '%.64s...': name longer than %d bytes",
                      full, DSTRUCT_MAX_NAME);
    size_t fs = 0;
    ZTRY(walk_field(w, f, full, base + off, depth, &fs, err));
    if (fs > DSTRUCT_MAX_ITEMSIZE - base - off)
      return zerr_set(err, EIO, "structured dtype: more than %u bytes",
                      DSTRUCT_MAX_ITEMSIZE);
    off += fs;
  }
  *size = off;
  return 0;
}

/* Walk the list; the type is named "structured" in messages. */
int dtype_struct_parse(json_t *descr, struct dtype *out,
                       struct dtype_struct **st, struct zerr *err) {
  *st = NULL;
  if (!json_is_array(descr))
    return zerr_set(err, EIO, "a structured dtype must be a list of fields");
  struct walk w = {calloc(1, sizeof *w.st), 0};
  if (!w.st)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t size = 0;
  int rc = walk_list(&w, descr, "", 0, 1, &size, err);
  if (rc < 0) {
    dtype_struct_free(w.st);
    return rc;
  }
  w.st->itemsize = size;
  memset(out, 0, sizeof *out);
  out->kind = DT_STRUCT;
  out->size = size;
  out->st = w.st;
  snprintf(out->name, sizeof out->name, "structured");
  *st = w.st;
  return 0;
}
