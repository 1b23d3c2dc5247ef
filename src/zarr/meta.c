/* meta.c - parse zarr.json (V3) and .zarray (V2) into struct zmeta (see
 * meta.h), and map chunk coordinates to store keys and back.
 *
 * Validation follows the V3 core spec: anything malformed, contradictory
 * or not understood (a field without must_understand:false, a chunk grid
 * other than regular, rectangular or rectilinear, a storage transformer)
 * refuses the node with a message naming the field; an unknown data type is not
 * refused here (the node lists, its views fail later). */
#include "meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json/zjson.h"
#include "../util/zmath.h"
#include "dtype_struct.h"

/* ---- shared pieces ---- */

/* Free; NULL-safe. */
void zmeta_free(struct zmeta *m) {
  if (!m)
    return;
  free(m->fill);
  dtype_struct_free(m->st);
  for (int d = 0; d < ZMETA_MAX_DIMS; d++)
    free(m->edge[d]);
  json_decref(m->codecs);
  json_decref(m->root);
  free(m);
}

/* An array of at most ZMETA_MAX_DIMS non-negative integers. */
static int parse_dims(json_t *j, const char *what, uint64_t *out, int *nd,
                      struct zerr *err) {
  if (!j)
    return zerr_set(err, EIO, "missing %s", what);
  if (!json_is_array(j))
    return zerr_set(err, EIO, "%s must be an array of integers", what);
  size_t n = json_array_size(j);
  if (n > ZMETA_MAX_DIMS)
    return zerr_set(err, EIO, "%s has %zu dimensions (at most %d)", what, n,
                    ZMETA_MAX_DIMS);
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(j, i);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
      return zerr_set(err, EIO, "%s must hold non-negative integers", what);
    out[i] = (uint64_t)json_integer_value(v);
  }
  *nd = (int)n;
  return 0;
}

/* Grid size and element counts from shape and chunk (ndim each). Counts
 * are capped at 2^62 so that byte sizes derived from them (elements times
 * a small element size, plus offsets) stay well inside 64 bits. */
static int compute_grid(struct zmeta *m, const char *chunk_field,
                        struct zerr *err) {
  uint64_t nelem = 1, cnelem = 1, nchunks = 1;
  if (!m->grid_name)
    m->grid_name = "regular";
  for (int d = 0; d < m->ndim; d++) {
    if (m->chunk[d] == 0)
      return zerr_set(err, EIO, "%s[%d] is 0", chunk_field, d);
    if (!m->edge[d]) /* listed edges: grid[d] is set already */
      m->grid[d] = m->shape[d] / m->chunk[d] + (m->shape[d] % m->chunk[d] != 0);
    if (zmul_u64(nelem, m->shape[d], &nelem) < 0 ||
        zmul_u64(cnelem, m->chunk[d], &cnelem) < 0 ||
        zmul_u64(nchunks, m->grid[d], &nchunks) < 0 || nelem > (1ull << 62) ||
        cnelem > (1ull << 62))
      return zerr_set(err, EIO, "element count overflows");
  }
  m->nelem = nelem;
  m->chunk_nelem = cnelem;
  m->nchunks = nchunks;
  return 0;
}

/* ---- Zarr V3 ---- */

/* Name and configuration of an extension point (short-hand string or
 * object); *config is borrowed and NULL when absent. */
static int ext_point(json_t *j, const char *what, const char **name,
                     json_t **config, struct zerr *err) {
  *config = NULL;
  if (json_is_string(j)) {
    *name = json_string_value(j);
    return 0;
  }
  if (json_is_object(j) && json_is_string(json_object_get(j, "name"))) {
    *name = json_string_value(json_object_get(j, "name"));
    *config = json_object_get(j, "configuration");
    if (*config && !json_is_object(*config))
      return zerr_set(err, EIO, "%s configuration must be an object", what);
    return 0;
  }
  return zerr_set(err, EIO, "%s must be a name or an object with a name", what);
}

/* Is key in the NULL-terminated list? */
static int in_list(const char *key, const char *const *list) {
  for (; *list; list++)
    if (!strcmp(key, *list))
      return 1;
  return 0;
}

/* Is v an object that says "must_understand": false? */
static int may_ignore(json_t *v) {
  return json_is_object(v) &&
         json_is_false(json_object_get(v, "must_understand"));
}

/* Unknown top-level fields refuse the node unless marked ignorable. */
static int check_fields(json_t *root, const char *const *allowed,
                        struct zerr *err) {
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    if (!in_list(key, allowed) && !may_ignore(v))
      return zerr_set(err, EIO, "unknown field '%s' (must_understand)", key);
  }
  json_t *attrs = json_object_get(root, "attributes");
  if (attrs && !json_is_object(attrs))
    return zerr_set(err, EIO, "attributes must be an object");
  return 0;
}

/* The chunk holding coordinate x: the last chunk starting at or before
 * it. */
uint64_t zmeta_axis_of(const uint64_t *edge, uint64_t n, uint64_t len,
                       uint64_t x) {
  if (!edge)
    return x / len;
  uint64_t lo = 0, hi = n; /* edge[lo] <= x; the answer is in [lo, hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (edge[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* How a grid lists its chunk edges along one dimension. */
struct edge_rules {
  const char *what; /* the grid's field, for messages */
  int rle;          /* [value, count] pairs allowed (rectilinear) */
  int exact;        /* the edges must sum to the shape (rectangular); else
                       at least to it, and chunks starting past it are
                       dropped (rectilinear) */
};

/* One edge length from JSON: an integer > 0. */
static int edge_value(json_t *v, const struct edge_rules *r, int d,
                      uint64_t *out, struct zerr *err) {
  if (!json_is_integer(v) || json_integer_value(v) <= 0)
    return zerr_set(err, EIO, "%s[%d]: chunk edge lengths must be integers > 0",
                    r->what, d);
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

/* Walk the edge list of dimension d (length shape): count the chunks that
 * start inside the array and, when out is not NULL, store their prefix
 * sums (count + 1 entries). Refuses a sum that misses the shape, and more
 * than `cap` chunks. */
static int edges_walk(json_t *list, const struct edge_rules *r, int d,
                      uint64_t shape, uint64_t cap, uint64_t *out,
                      uint64_t *count, struct zerr *err) {
  uint64_t sum = 0, n = 0;
  size_t i;
  json_t *v;
  if (out)
    out[0] = 0;
  json_array_foreach(list, i, v) {
    uint64_t len = 1, times = 1;
    if (json_is_array(v) && r->rle) {
      if (json_array_size(v) != 2)
        return zerr_set(err, EIO, "%s[%d]: a run must be [length, count]",
                        r->what, d);
      ZTRY(edge_value(json_array_get(v, 0), r, d, &len, err));
      ZTRY(edge_value(json_array_get(v, 1), r, d, &times, err));
    } else {
      ZTRY(edge_value(v, r, d, &len, err));
    }
    uint64_t room = shape - sum, take; /* sum <= shape here */
    if (r->exact) {
      if (times > room / len)
        return zerr_set(err, EIO,
                        "%s[%d]: chunk edge lengths add up to more than the "
                        "shape %llu",
                        r->what, d, (unsigned long long)shape);
      take = times;
    } else {
      /* the chunks of the run that start inside the array */
      uint64_t need = room / len + (room % len != 0);
      take = times < need ? times : need;
    }
    if (take > cap - n)
      return zerr_set(err, EIO, "%s: more than %u listed chunks", r->what,
                      ZMETA_MAX_EDGES);
    for (uint64_t t = 0; t < take; t++) {
      sum += len; /* < shape + len: no overflow */
      if (out)
        out[n + t + 1] = sum;
    }
    if (sum > shape)
      sum = shape; /* a rectilinear axis ends here: the rest is validated */
    n += take;
  }
  if (sum < shape)
    return zerr_set(err, EIO,
                    "%s[%d]: chunk edge lengths add up to %llu, less than "
                    "the shape %llu",
                    r->what, d, (unsigned long long)sum,
                    (unsigned long long)shape);
  *count = n;
  return 0;
}

/* Listed edges of dimension d into m->edge[d], grid[d] and chunk[d] (the
 * largest). *budget is what the array may still list. */
static int parse_edges(struct zmeta *m, int d, json_t *list,
                       const struct edge_rules *r, uint64_t *budget,
                       struct zerr *err) {
  uint64_t n;
  ZTRY(edges_walk(list, r, d, m->shape[d], *budget, NULL, &n, err));
  m->edge[d] = malloc((size_t)(n + 1) * sizeof(uint64_t));
  if (!m->edge[d])
    return zerr_set(err, ENOMEM, "out of memory");
  ZTRY(edges_walk(list, r, d, m->shape[d], *budget, m->edge[d], &n, err));
  *budget -= n;
  m->grid[d] = n;
  m->irregular = 1;
  m->chunk[d] = 1; /* an empty axis: any length > 0 */
  for (uint64_t i = 0; i < n; i++)
    if (m->edge[d][i + 1] - m->edge[d][i] > m->chunk[d])
      m->chunk[d] = m->edge[d][i + 1] - m->edge[d][i];
  return 0;
}

/* The configuration of a rectangular grid (zarrs, ZEP 0003: "chunk_shape",
 * each entry an integer or a list of edge lengths that sum to the shape)
 * or a rectilinear one (zarr-extensions: "kind": "inline",
 * "chunk_shapes", lists may hold [length, count] runs and overshoot). */
static int parse_listed_grid(struct zmeta *m, const char *name, json_t *cfg,
                             struct zerr *err) {
  int rect = !strcmp(name, "rectangular");
  struct edge_rules r = {rect ? "chunk_shape" : "chunk_shapes", !rect, rect};
  if (!rect) {
    const char *kind =
        cfg ? json_string_value(json_object_get(cfg, "kind")) : NULL;
    if (!kind || strcmp(kind, "inline"))
      return zerr_set(err, ENOTSUP,
                      "rectilinear chunk grid: kind must be \"inline\"");
  }
  json_t *cs = cfg ? json_object_get(cfg, r.what) : NULL;
  if (!json_is_array(cs))
    return zerr_set(err, EIO, "%s chunk grid: missing list %s", name, r.what);
  if (json_array_size(cs) != (size_t)m->ndim)
    return zerr_set(err, EIO, "%s has %zu dimensions, shape has %d", r.what,
                    json_array_size(cs), m->ndim);
  m->grid_name = rect ? "rectangular" : "rectilinear";
  uint64_t budget = ZMETA_MAX_EDGES;
  for (int d = 0; d < m->ndim; d++) {
    json_t *v = json_array_get(cs, (size_t)d);
    if (json_is_array(v))
      ZTRY(parse_edges(m, d, v, &r, &budget, err));
    else if (json_is_integer(v) && json_integer_value(v) > 0)
      m->chunk[d] = (uint64_t)json_integer_value(v);
    else
      return zerr_set(err, EIO,
                      "%s[%d] must be an integer > 0 or a list of edge "
                      "lengths",
                      r.what, d);
  }
  return compute_grid(m, r.what, err);
}

/* chunk_grid: "regular" with a chunk_shape matching shape, or a grid of
 * listed chunk edges (parse_listed_grid). */
static int parse_chunk_grid(struct zmeta *m, json_t *grid, struct zerr *err) {
  const char *name;
  json_t *cfg;
  if (!grid)
    return zerr_set(err, EIO, "missing chunk_grid");
  ZTRY(ext_point(grid, "chunk_grid", &name, &cfg, err));
  if (!strcmp(name, "rectangular") || !strcmp(name, "rectilinear"))
    return parse_listed_grid(m, name, cfg, err);
  if (strcmp(name, "regular"))
    return zerr_set(err, ENOTSUP, "unsupported chunk grid '%s'", name);
  int cnd;
  ZTRY(parse_dims(cfg ? json_object_get(cfg, "chunk_shape") : NULL,
                  "chunk_shape", m->chunk, &cnd, err));
  if (cnd != m->ndim)
    return zerr_set(err, EIO, "chunk_shape has %d dimensions, shape has %d",
                    cnd, m->ndim);
  return compute_grid(m, "chunk_shape", err);
}

/* chunk_key_encoding: "default" (separator "/" unless given) or "v2"
 * (separator "." unless given). */
static int parse_key_encoding(struct zmeta *m, json_t *cke, struct zerr *err) {
  const char *name;
  json_t *cfg;
  if (!cke)
    return zerr_set(err, EIO, "missing chunk_key_encoding");
  ZTRY(ext_point(cke, "chunk_key_encoding", &name, &cfg, err));
  if (!strcmp(name, "default")) {
    m->key_encoding = ZMETA_KEY_DEFAULT;
    m->key_sep = '/';
  } else if (!strcmp(name, "v2")) {
    m->key_encoding = ZMETA_KEY_V2;
    m->key_sep = '.';
  } else {
    return zerr_set(err, ENOTSUP, "unsupported chunk key encoding '%s'", name);
  }
  json_t *sep = cfg ? json_object_get(cfg, "separator") : NULL;
  if (sep) {
    const char *s = json_string_value(sep);
    if (!s || (strcmp(s, "/") && strcmp(s, ".")))
      return zerr_set(err, EIO,
                      "chunk_key_encoding separator must be \"/\" or \".\"");
    m->key_sep = s[0];
  }
  return 0;
}

/* storage_transformers: `chunk-manifest-json` (VirtualiZarr) is served by
 * the store (src/store/store_vzarr.c), so the chunk keys already read through
 * it; any other that must be understood refuses the node. */
static int parse_transformers(json_t *st, struct zerr *err) {
  if (!st)
    return 0;
  if (!json_is_array(st))
    return zerr_set(err, EIO, "storage_transformers must be a list");
  size_t i;
  json_t *t;
  json_array_foreach(st, i, t) {
    if (may_ignore(t))
      continue;
    const char *name;
    json_t *cfg;
    if (ext_point(t, "storage transformer", &name, &cfg, NULL) < 0)
      name = "?";
    if (!strcmp(name, "chunk-manifest-json"))
      continue;
    return zerr_set(err, ENOTSUP, "unsupported storage transformer '%s'", name);
  }
  return 0;
}

/* dimension_names: absent, null, or ndim strings / nulls. */
static int parse_dim_names(const struct zmeta *m, json_t *dn,
                           struct zerr *err) {
  if (!dn || json_is_null(dn))
    return 0;
  if (!json_is_array(dn) || json_array_size(dn) != (size_t)m->ndim)
    return zerr_set(err, EIO, "dimension_names must list %d names", m->ndim);
  size_t i;
  json_t *v;
  json_array_foreach(dn, i, v) {
    if (!json_is_string(v) && !json_is_null(v))
      return zerr_set(err, EIO, "dimension_names must hold strings or null");
  }
  return 0;
}

/* The stand-in for a V3 "fill_value": null of a numeric or bool type (the
 * types whose fill cannot be null otherwise): zarrita writes null and reads
 * it as the type's zero, so it is read as 0 / false, and as NaN for
 * floating point, where NaN is the value that says "nothing written".
 * *applies says whether dt is such a type; a new reference (NULL when
 * out of memory, or when it does not apply). */
static json_t *null_fill_stand_in(const struct dtype *dt, int *applies) {
  *applies = 1;
  switch (dt->kind) {
  case DT_BOOL:
    return json_false();
  case DT_FLOAT16:
  case DT_FLOAT32:
  case DT_FLOAT64:
  case DT_BFLOAT16:
    return json_string("NaN");
  case DT_COMPLEX64:
  case DT_COMPLEX128:
    return json_pack("[ss]", "NaN", "NaN");
  case DT_INT2:
  case DT_INT4:
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT2:
  case DT_UINT4:
  case DT_UINT8:
  case DT_UINT16:
  case DT_UINT32:
  case DT_UINT64:
    return json_integer(0);
  default:
    *applies = 0;
    return NULL;
  }
}

/* fill_value of a V3 array, null read as zarrita reads it (flagged). */
static int parse_v3_fill(struct zmeta *m, json_t *fill, struct zerr *err) {
  int applies = 0;
  json_t *stand_in =
      json_is_null(fill) ? null_fill_stand_in(&m->dtype, &applies) : NULL;
  if (applies && !stand_in)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = dtype_parse_fill(&m->dtype, stand_in ? stand_in : fill, &m->fill,
                            &m->fill_len, err);
  if (stand_in && rc == 0)
    m->defaults |= ZMETA_DEFAULT_FILL;
  json_decref(stand_in);
  return rc;
}

/* zarrita's reading of "codecs": [] (a new reference, NULL when out of
 * memory): the bytes codec, little-endian. */
static json_t *default_codecs(void) {
  return json_pack("[{s:s,s:{s:s}}]", "name", "bytes", "configuration",
                   "endian", "little");
}

/* The array fields of a V3 document. */
static int parse_array(struct zmeta *m, json_t *root, struct zerr *err) {
  static const char *const allowed[] = {
      "zarr_format",     "node_type",
      "shape",           "data_type",
      "chunk_grid",      "chunk_key_encoding",
      "fill_value",      "codecs",
      "attributes",      "storage_transformers",
      "dimension_names", NULL};
  ZTRY(check_fields(root, allowed, err));
  ZTRY(parse_dims(json_object_get(root, "shape"), "shape", m->shape, &m->ndim,
                  err));
  json_t *dt = json_object_get(root, "data_type");
  if (!dt)
    return zerr_set(err, EIO, "missing data_type");
  ZTRY(dtype_parse_v3(dt, &m->dtype, err));
  ZTRY(parse_chunk_grid(m, json_object_get(root, "chunk_grid"), err));
  ZTRY(parse_key_encoding(m, json_object_get(root, "chunk_key_encoding"), err));
  json_t *fill = json_object_get(root, "fill_value");
  if (!fill)
    return zerr_set(err, EIO, "missing fill_value");
  ZTRY(parse_v3_fill(m, fill, err));
  json_t *codecs = json_object_get(root, "codecs");
  if (!json_is_array(codecs))
    return zerr_set(err, EIO, "codecs must be a non-empty list");
  if (json_array_size(codecs) == 0) {
    m->codecs = default_codecs();
    if (!m->codecs)
      return zerr_set(err, ENOMEM, "out of memory");
    m->defaults |= ZMETA_DEFAULT_CODECS;
  } else {
    m->codecs = json_incref(codecs);
  }
  ZTRY(parse_transformers(json_object_get(root, "storage_transformers"), err));
  return parse_dim_names(m, json_object_get(root, "dimension_names"), err);
}

/* Parse zarr.json text. */
int zmeta_parse(const char *text, size_t len, struct zmeta **out,
                struct zerr *err) {
  static const char *const group_fields[] = {
      "zarr_format", "node_type", "attributes", "consolidated_metadata", NULL};
  json_t *root = zjson_loadb(text, len, err);
  if (!root)
    return err && err->code ? -err->code : -EIO;
  struct zmeta *m = calloc(1, sizeof *m);
  if (!m) {
    json_decref(root);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  m->root = root;
  int rc;
  json_t *zf = json_object_get(root, "zarr_format");
  const char *nt = json_string_value(json_object_get(root, "node_type"));
  if (!json_is_object(root)) {
    rc = zerr_set(err, EIO, "metadata is not a JSON object");
  } else if (!json_is_integer(zf) || json_integer_value(zf) != 3) {
    rc = zerr_set(err, EIO, "zarr_format must be 3");
  } else if (!nt) {
    rc = zerr_set(err, EIO, "missing node_type");
  } else if (!strcmp(nt, "group")) {
    m->node = ZMETA_GROUP;
    rc = check_fields(root, group_fields, err);
  } else if (!strcmp(nt, "array")) {
    m->node = ZMETA_ARRAY;
    rc = parse_array(m, root, err);
  } else {
    rc = zerr_set(err, EIO, "node_type must be \"group\" or \"array\"");
  }
  if (rc < 0) {
    zmeta_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

/* ---- chunk keys ---- */

/* Decimal digits of v into buf (up to 20); returns the count. */
static size_t put_u64(char *buf, uint64_t v) {
  char tmp[20];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  return n;
}

/* Build a chunk key. */
int zmeta_chunk_key(const struct zmeta *m, const uint64_t *idx, char *buf,
                    size_t buflen) {
  char tmp[1 + ZMETA_MAX_DIMS * 21];
  size_t o = 0;
  if (m->key_encoding == ZMETA_KEY_DEFAULT) {
    tmp[o++] = 'c';
    for (int d = 0; d < m->ndim; d++) {
      tmp[o++] = m->key_sep;
      o += put_u64(tmp + o, idx[d]);
    }
  } else if (m->ndim == 0) {
    tmp[o++] = '0'; /* V2's key for the one chunk of a scalar */
  } else {
    for (int d = 0; d < m->ndim; d++) {
      if (d)
        tmp[o++] = m->key_sep;
      o += put_u64(tmp + o, idx[d]);
    }
  }
  if (o >= buflen)
    return -ENAMETOOLONG;
  memcpy(buf, tmp, o);
  buf[o] = '\0';
  return (int)o;
}

/* One decimal coordinate without sign or leading zero; advances *p. */
static int parse_coord(const char **p, uint64_t *out) {
  const char *s = *p;
  if (*s < '0' || *s > '9')
    return -1;
  if (*s == '0' && s[1] >= '0' && s[1] <= '9')
    return -1;
  uint64_t v = 0;
  while (*s >= '0' && *s <= '9') {
    if (v > (UINT64_MAX - 9) / 10)
      return -1;
    v = v * 10 + (uint64_t)(*s - '0');
    s++;
  }
  *p = s;
  *out = v;
  return 0;
}

/* Parse a chunk key back into coordinates: the exact spelling
 * zmeta_chunk_key would produce for an in-grid chunk, nothing else. */
int zmeta_parse_chunk_key(const struct zmeta *m, const char *key,
                          uint64_t *idx) {
  const char *p = key;
  if (!p)
    return -ENOENT;
  if (m->key_encoding == ZMETA_KEY_DEFAULT) {
    if (*p++ != 'c')
      return -ENOENT;
    for (int d = 0; d < m->ndim; d++) {
      if (*p++ != m->key_sep)
        return -ENOENT;
      if (parse_coord(&p, &idx[d]) < 0 || idx[d] >= m->grid[d])
        return -ENOENT;
    }
    return *p ? -ENOENT : 0;
  }
  if (m->ndim == 0)
    return strcmp(key, "0") ? -ENOENT : 0;
  for (int d = 0; d < m->ndim; d++) {
    if (d && *p++ != m->key_sep)
      return -ENOENT;
    if (parse_coord(&p, &idx[d]) < 0 || idx[d] >= m->grid[d])
      return -ENOENT;
  }
  return *p ? -ENOENT : 0;
}

/* ---- Zarr V2 ---- */

/* {"name": name, "configuration": the V2 object minus "id"}, or NULL out
 * of memory (never a configuration with a key left out: info.txt and the
 * user.zarr.codecs attribute show it). */
static json_t *v2_codec(const char *name, json_t *v2) {
  json_t *cfg = json_object();
  const char *key;
  json_t *v;
  if (!cfg)
    return NULL;
  json_object_foreach(v2, key, v) {
    if (strcmp(key, "id") && json_object_set(cfg, key, v) < 0) {
      json_decref(cfg);
      return NULL;
    }
  }
  return json_pack("{s:s, s:o}", "name", name, "configuration", cfg);
}

/* The V3 name zarr-python gives a numcodecs compressor or filter id. */
static const char *v2_name(const char *id, char *buf, size_t len) {
  if (!strcmp(id, "blosc") || !strcmp(id, "gzip") || !strcmp(id, "zstd") ||
      !strcmp(id, "crc32c"))
    return id;
  snprintf(buf, len, "numcodecs.%s", id);
  return buf;
}

/* Filters that work on typed arrays (array->array in V3 terms). */
static int v2_is_array_filter(const char *id) {
  return !strcmp(id, "delta") || !strcmp(id, "fixedscaleoffset") ||
         !strcmp(id, "astype") || !strcmp(id, "quantize") ||
         !strcmp(id, "bitround") || !strcmp(id, "categorize") ||
         !strcmp(id, "packbits");
}

/* Build the V3 codec list equivalent to a V2 array. */
static int v2_codecs(struct zmeta *m, json_t *root, const char *dts,
                     char endian, json_t **out, struct zerr *err) {
  zjson_watch(); /* the documents built here are checked at the end */
  json_t *a2a = json_array(), *a2b = NULL, *b2b = json_array();
  json_t *filters = json_object_get(root, "filters");
  json_t *comp = json_object_get(root, "compressor");
  const char *order = json_string_value(json_object_get(root, "order"));
  int rc = 0, nomem = !a2a || !b2b; /* jansson's allocations failed */
  if (order && !strcmp(order, "F") && m->ndim > 1)
    nomem |= json_array_append_new(a2a, json_pack("{s:s, s:{s:s}}", "name",
                                                  "transpose", "configuration",
                                                  "order", "F")) < 0;
  else if (order && strcmp(order, "C") && strcmp(order, "F"))
    rc = zerr_set(err, EIO, "order must be \"C\" or \"F\"");
  size_t nf = json_is_array(filters) ? json_array_size(filters) : 0;
  if (filters && !json_is_null(filters) && !json_is_array(filters))
    rc = zerr_set(err, EIO, "filters must be a list or null");
  for (size_t i = 0; i < nf && rc == 0; i++) {
    json_t *f = json_array_get(filters, i);
    const char *id = json_string_value(json_object_get(f, "id"));
    char buf[128];
    if (!id) {
      rc = zerr_set(err, EIO, "filter without an id");
    } else if (!strncmp(id, "vlen-", 5) && !a2b) {
      a2b = json_pack("{s:s}", "name", id);
      m->dtype = dtype_of(strcmp(id, "vlen-utf8") ? DT_BYTES : DT_STRING);
    } else if ((!strcmp(id, "json2") || !strcmp(id, "json") ||
                !strcmp(id, "msgpack2")) &&
               !a2b) {
      /* numcodecs' JSON and MsgPack object codecs: items shown as strings
       * (json2.c, msgpack.c) */
      a2b = v2_codec(id, f);
      m->dtype = dtype_of(DT_STRING);
    } else if (v2_is_array_filter(id) && !a2b) {
      nomem |= json_array_append_new(
                   a2a, v2_codec(v2_name(id, buf, sizeof buf), f)) < 0;
    } else {
      nomem |= json_array_append_new(
                   b2b, v2_codec(v2_name(id, buf, sizeof buf), f)) < 0;
    }
  }
  /* zfpy (and zarrs' zfp) compress the typed array: in V3 terms they are
   * the array->bytes codec, taking the place of `bytes`. */
  const char *cid = json_string_value(json_object_get(comp, "id"));
  int comp_a2b = cid && (!strcmp(cid, "zfpy") || !strcmp(cid, "zfp"));
  if (rc == 0 && comp_a2b && a2b)
    rc = zerr_set(err, EIO, "compressor '%s' after an object filter", cid);
  else if (rc == 0 && comp_a2b && endian == 'b')
    rc = zerr_set(err, ENOTSUP,
                  "compressor '%s' is unsupported on a big-endian dtype", cid);
  else if (rc == 0 && comp_a2b)
    a2b = v2_codec(strcmp(cid, "zfp") ? "numcodecs.zfpy" : "zfp", comp);
  if (rc == 0 && !a2b) {
    if (!strcmp(dts, "|O")) {
      rc = zerr_set(
          err, EIO,
          "object dtype without a vlen-*, json, json2 or msgpack2 filter");
    } else if (endian) {
      a2b = json_pack("{s:s, s:{s:s}}", "name", "bytes", "configuration",
                      "endian", endian == 'b' ? "big" : "little");
    } else {
      a2b = json_pack("{s:s}", "name", "bytes");
    }
  }
  if (rc == 0 && comp && !json_is_null(comp) && !comp_a2b) {
    const char *id = json_string_value(json_object_get(comp, "id"));
    char buf[128];
    if (!id)
      rc = zerr_set(err, EIO, "compressor without an id");
    else
      nomem |= json_array_append_new(
                   b2b, v2_codec(v2_name(id, buf, sizeof buf), comp)) < 0;
  }
  if (rc == 0 && (nomem || !a2b))
    rc = zerr_set(err, ENOMEM, "out of memory");
  else if (rc < 0 && zjson_nomem()) /* a piece went missing: that is why */
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    json_decref(a2a);
    json_decref(a2b);
    json_decref(b2b);
    return rc;
  }
  nomem =
      json_array_append_new(a2a, a2b) < 0 || json_array_extend(a2a, b2b) < 0;
  json_decref(b2b);
  if (nomem) {
    json_decref(a2a);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = a2a;
  return 0;
}

/* Parse .zarray. */
int zmeta_parse_v2(const char *text, size_t len, struct zmeta **out,
                   struct zerr *err) {
  json_t *root = zjson_loadb(text, len, err);
  if (!root)
    return err && err->code ? -err->code : -EIO;
  struct zmeta *m = calloc(1, sizeof *m);
  if (!m) {
    json_decref(root);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  m->root = root;
  m->node = ZMETA_ARRAY;
  int rc = 0, cnd = 0;
  json_t *zf = json_object_get(root, "zarr_format");
  json_t *dtj = json_object_get(root, "dtype");
  const char *dts = json_is_array(dtj) ? "|V" : json_string_value(dtj);
  char endian = 0;
  if (!json_is_object(root))
    rc = zerr_set(err, EIO, ".zarray is not a JSON object");
  else if (!json_is_integer(zf) || json_integer_value(zf) != 2)
    rc = zerr_set(err, EIO, "zarr_format must be 2");
  else if (!dts)
    rc = zerr_set(err, EIO, "dtype must be a string or a list of fields");
  if (rc == 0)
    rc = parse_dims(json_object_get(root, "shape"), "shape", m->shape, &m->ndim,
                    err);
  if (rc == 0)
    rc = parse_dims(json_object_get(root, "chunks"), "chunks", m->chunk, &cnd,
                    err);
  if (rc == 0 && cnd != m->ndim)
    rc = zerr_set(err, EIO, "chunks has %d dimensions, shape has %d", cnd,
                  m->ndim);
  if (rc == 0)
    rc = compute_grid(m, "chunks", err);
  if (rc == 0) {
    if (json_is_array(dtj)) /* a record: every field in its own order */
      rc = dtype_struct_parse(dtj, &m->dtype, &m->st, err);
    else
      dtype_parse_numpy(dts, &m->dtype, &endian);
  }
  if (rc == 0)
    rc = v2_codecs(m, root, dts, endian, &m->codecs, err);
  m->key_encoding = ZMETA_KEY_V2;
  m->key_sep = '.';
  json_t *sep = json_object_get(root, "dimension_separator");
  if (rc == 0 && sep && !json_is_null(sep)) {
    const char *s = json_string_value(sep);
    if (!s || (strcmp(s, "/") && strcmp(s, ".")))
      rc = zerr_set(err, EIO, "dimension_separator must be \"/\" or \".\"");
    else
      m->key_sep = s[0];
  }
  if (rc == 0 && m->dtype.kind != DT_UNSUPPORTED) {
    json_t *fill = json_object_get(root, "fill_value");
    if (!fill || json_is_null(fill)) {
      /* V2 null fill: zero / false / empty, as zarr-python reads it. */
      m->fill_len = m->dtype.size;
      m->fill = calloc(1, m->fill_len ? m->fill_len : 1);
      if (!m->fill)
        rc = zerr_set(err, ENOMEM, "out of memory");
    } else {
      rc = dtype_parse_fill_v2(&m->dtype, fill, &m->fill, &m->fill_len, err);
    }
  }
  if (rc < 0) {
    zmeta_free(m);
    return rc;
  }
  *out = m;
  return 0;
}
