/* info.c - an array or group in words (see info.h). */
#define _GNU_SOURCE /* open_memstream */
#include "info.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/json/zjson.h"
#include "../../src/store/presence.h"
#include "../../src/util/utf8.h"
#include "../engine/engine.h"
#include "../engine/node.h"
#include "../engine/unit.h"
#include "../text/rstruct.h"
#include "table.h"

#define XATTR_PREFIX "user.zarr."

/* s written on a line as a name (name != 0: an attribute, a member, a
 * dimension) or as text (a data type, a path, a reason): as it is, or as
 * a JSON string when it could break or bend its line
 * (utf8_needs_quotes): a name from the store never makes a line of its
 * own nor reads as another field. */
static void put_shown(FILE *f, const char *s, int name, int *oom) {
  if (!utf8_needs_quotes(s, name)) {
    fputs(s, f);
    return;
  }
  char *q = utf8_quote(s);
  if (q)
    fputs(q, f);
  else
    *oom = 1;
  free(q);
}

/* A name on a line (see put_shown). */
static void put_name(FILE *f, const char *s, int *oom) {
  put_shown(f, s, 1, oom);
}

/* Text on a line (see put_shown). */
static void put_text(FILE *f, const char *s, int *oom) {
  put_shown(f, s, 0, oom);
}

/* "[a, b, c]" (sep ", ") or "[a,b,c]" (sep ",") for n numbers. */
static void put_dims(FILE *f, const uint64_t *v, int n, const char *sep) {
  fputc('[', f);
  for (int d = 0; d < n; d++)
    fprintf(f, "%s%llu", d ? sep : "", (unsigned long long)v[d]);
  fputc(']', f);
}

/* "name: <compact JSON>\n" when j is there. */
static void put_json(FILE *f, const char *name, json_t *j, int *oom) {
  char *s = zjson_dump(j);
  if (s)
    fprintf(f, "%s: %s\n", name, s);
  else if (j)
    *oom = 1; /* a line left out would change the text and its size */
  free(s);
}

/* The metadata document of n, or NULL. */
static json_t *root_of(const struct znode *n) {
  return n->meta ? n->meta->root : NULL;
}

/* The dimension names of array n: V3 `dimension_names`, else the
 * `_ARRAY_DIMENSIONS` attribute xarray writes (V2), or NULL. */
static json_t *dims_of(const struct znode *n) {
  json_t *d = json_object_get(root_of(n), "dimension_names");
  if (!d && n->attrs)
    d = json_object_get(n->attrs, "_ARRAY_DIMENSIONS");
  return json_is_array(d) ? d : NULL;
}

/* Is attribute name the dimension list xarray keeps among the
 * attributes (shown as dimension_names instead)? */
static int is_dims_attr(const char *name) {
  return !strcmp(name, "_ARRAY_DIMENSIONS");
}

/* The attributes: "attributes: N", then one "  NAME: <compact JSON>" line
 * each, in the document's order. */
static void put_attrs(FILE *f, json_t *attrs, const char *indent, int *oom) {
  if (!json_is_object(attrs))
    return;
  size_t k = 0;
  const char *name;
  json_t *v;
  json_object_foreach(attrs, name, v) k += !is_dims_attr(name);
  fprintf(f, "%sattributes: %zu\n", indent, k);
  json_object_foreach(attrs, name, v) {
    if (is_dims_attr(name))
      continue;
    char *js = zjson_dump(v);
    if (js) {
      fprintf(f, "%s  ", indent);
      put_name(f, name, oom);
      fprintf(f, ": %s\n", js);
    } else {
      *oom = 1;
    }
    free(js);
  }
}

/* Close a memory stream into *out / *len; -ENOMEM when it failed. */
static int stream_done(FILE *f, char **out, size_t *len, int oom) {
  int bad = ferror(f) || oom;
  if (fclose(f) != 0 || bad) {
    free(*out);
    *out = NULL;
    return -ENOMEM;
  }
  return 0;
}

/* "name: N\n", or "name: unknown\n" for STORE_SIZE_UNKNOWN. */
static void put_count(FILE *f, const char *name, uint64_t v) {
  if (v == STORE_SIZE_UNKNOWN)
    fprintf(f, "%s: unknown\n", name);
  else
    fprintf(f, "%s: %llu\n", name, (unsigned long long)v);
}

/* The stored/missing/bytes lines of an array. */
static void put_counts(FILE *f, const struct zmeta *m,
                       const struct info_counts *c) {
  if (!c)
    return;
  if (!c->known) {
    fprintf(f,
            "stored_chunks: unknown (%s)\nmissing_chunks: unknown\n"
            "bytes_stored: unknown\n",
            c->why ? c->why : "the store cannot list the array");
    return;
  }
  put_count(f, "stored_chunks", c->stored);
  put_count(f, "missing_chunks",
            c->stored <= m->nchunks ? m->nchunks - c->stored : 0);
  put_count(f, "bytes_stored", c->bytes);
}

static void group_summary(FILE *f, struct engine *e, const struct znode *n,
                          int *oom);

/* The text of n into f (closed here): info_format's, and with e a group's
 * summary. */
static int info_write(FILE *f, struct engine *e, const struct znode *n,
                      const struct info_counts *counts, char **out,
                      size_t *len) {
  int oom = 0;
  char *path = NULL;
  if (asprintf(&path, "/%s", n->path ? n->path : "") < 0)
    path = NULL, oom = 1;
  fputs("path: ", f);
  put_text(f, path ? path : "/", &oom);
  fputc('\n', f);
  free(path);
  if (n->kind == ZNODE_BROKEN) {
    fputs("node_type: broken\nerror: ", f);
    put_text(f, n->view_error ? n->view_error : "unusable metadata", &oom);
    fputc('\n', f);
    return stream_done(f, out, len, oom);
  }
  const struct zmeta *m = n->meta;
  json_t *root = root_of(n);
  fprintf(f, "node_type: %s\n", n->kind == ZNODE_ARRAY ? "array" : "group");
  put_json(f, "zarr_format", json_object_get(root, "zarr_format"), &oom);
  if (n->kind == ZNODE_ARRAY && m) {
    fputs("shape: ", f);
    put_dims(f, m->shape, m->ndim, ", ");
    fputs("\ndata_type: ", f);
    put_text(f, m->dtype.name, &oom);
    fputc('\n', f);
    if (m->dtype.kind == DT_STRUCT && rstruct_describe(f, &m->dtype) < 0)
      oom = 1;
    fputs("chunk_shape: ", f);
    put_dims(f, m->chunk, m->ndim, ", ");
    fputc('\n', f);
    if (m->irregular) { /* chunk_shape above is then the largest */
      fputs("chunk_grid: ", f);
      put_text(f, m->grid_name, &oom);
      fputs(" (chunk_shape: the largest)\n", f);
    }
    if (n->shard) {
      fputs("inner_chunk_shape: ", f);
      put_dims(f, n->uspec.shape, m->ndim, ", ");
      fputc('\n', f);
    }
    fprintf(f, "chunks: %llu", (unsigned long long)m->nchunks);
    for (int d = 0; d < m->ndim; d++)
      fprintf(f, "%s%llu", d ? " x " : " (", (unsigned long long)m->grid[d]);
    fprintf(f, "%s\n", m->ndim ? ")" : "");
    fprintf(f, "chunk_key_encoding: %s, separator '%c'\n",
            m->key_encoding == ZMETA_KEY_V2 ? "v2" : "default", m->key_sep);
    put_json(f, "fill_value", json_object_get(root, "fill_value"), &oom);
    put_json(f, "codecs", m->codecs, &oom);
    put_json(f, "dimension_names", dims_of(n), &oom);
    put_counts(f, m, counts);
    if (n->view_error) {
      fputs("views: no (", f);
      put_text(f, n->view_error, &oom);
      fputs(")\n", f);
    } else {
      fprintf(f, "views: yes\n");
    }
  }
  if (n->kind == ZNODE_ARRAY)
    put_attrs(f, n->attrs, "", &oom);
  else if (e)
    group_summary(f, e, n, &oom);
  else
    put_attrs(f, json_object_get(root, "attributes"), "", &oom);
  return stream_done(f, out, len, oom);
}

/* See info.h. */
int info_format(const struct znode *n, const struct info_counts *counts,
                char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  FILE *f = open_memstream(out, len);
  if (!f)
    return -ENOMEM;
  return info_write(f, NULL, n, counts, out, len);
}

/* ---- a group like ncdump -h ---- */

/* A dimension: its name and size (the first array naming it gives it). */
struct dim {
  const char *name; /* borrowed from an array's metadata */
  uint64_t size;
};

/* The group's own attributes: V3 `attributes`, V2 its .zattrs (new
 * reference, or NULL). */
static json_t *group_attrs(struct engine *e, const struct znode *n, int *oom) {
  json_t *a = json_object_get(root_of(n), "attributes");
  if (a)
    return json_incref(a);
  if (n->zarr_format != 2)
    return NULL;
  char key[4096];
  snprintf(key, sizeof key, "%s%s.zattrs", n->path ? n->path : "",
           n->path && *n->path ? "/" : "");
  uint8_t *text = NULL;
  size_t len;
  struct zerr err = {0};
  int rc = store_read_all(e->store, key, 64u << 20, &text, &len, &err);
  if (rc < 0) {
    if (zerr_is_transient(-rc))
      *oom = 1; /* the text would change without saying why */
    return NULL;
  }
  a = zjson_loadb((const char *)text, len, &err);
  free(text);
  if (!a && err.code == ENOMEM)
    *oom = 1;
  if (!json_is_object(a)) {
    json_decref(a);
    return NULL;
  }
  return a;
}

/* One variable (an array member) as ncdump -h shows it: `NAME(DIM, ...)`,
 * then its data type, shape, chunks, codecs, fill value and attributes
 * indented. */
static void put_variable(FILE *f, const char *name, const struct znode *a,
                         int *oom) {
  const struct zmeta *m = a->meta;
  json_t *dims = dims_of(a);
  fputs("  ", f);
  put_name(f, name, oom);
  if (dims && json_array_size(dims) == (size_t)m->ndim && m->ndim) {
    fputc('(', f);
    for (int d = 0; d < m->ndim; d++) {
      const char *dn = json_string_value(json_array_get(dims, (size_t)d));
      fputs(d ? ", " : "", f);
      if (dn)
        put_name(f, dn, oom);
      else
        fputc('?', f);
    }
    fputc(')', f);
  }
  fputs("\n    data_type: ", f);
  put_text(f, m->dtype.name, oom);
  fputs("\n    shape: ", f);
  put_dims(f, m->shape, m->ndim, ", ");
  fputs("\n    chunk_shape: ", f);
  put_dims(f, m->chunk, m->ndim, ", ");
  fputc('\n', f);
  char *s = zjson_dump(m->codecs);
  if (s)
    fprintf(f, "    codecs: %s\n", s);
  else
    *oom = 1;
  free(s);
  json_t *fv = json_object_get(m->root, "fill_value");
  s = fv ? zjson_dump(fv) : NULL;
  if (s)
    fprintf(f, "    fill_value: %s\n", s);
  else if (fv)
    *oom = 1;
  free(s);
  put_attrs(f, a->attrs, "    ", oom);
}

/* Names listed on a line of a dimension at most (then "and N more"). */
#define DIM_LIST_MAX 20

/* A dimension's list line, "    HEAD: a (20), b (no views)" (HEAD: head,
 * then file when not NULL): members with a reason each, at most
 * DIM_LIST_MAX of them; names as put_name writes them. */
struct dim_list {
  FILE *f;
  const char *head, *file;
  size_t shown, more;
  int *oom;
};

/* Add member name with its reason to the list line. */
static void dim_list_add(struct dim_list *l, const char *name,
                         const char *reason) {
  if (l->shown == DIM_LIST_MAX) {
    l->more++;
    return;
  }
  if (l->shown) {
    fputs(", ", l->f);
  } else {
    fputs(l->head, l->f);
    if (l->file) {
      put_name(l->f, l->file, l->oom);
      fputs(": ", l->f);
    }
  }
  put_name(l->f, name, l->oom);
  fprintf(l->f, " (%s)", reason);
  l->shown++;
}

/* End the list line, if it has begun. */
static void dim_list_end(struct dim_list *l) {
  if (l->more)
    fprintf(l->f, ", and %zu more", l->more);
  if (l->shown)
    fputc('\n', l->f);
}

/* One dimension of a group: "  NAME = SIZE", SIZE being the rows of its
 * table NAME.csv when the group has one (the coordinate's length, or the
 * first 1-D array's along it: fs/views/table.h), else the first array's that
 * names it; then the arrays that give it another length, and the 1-D
 * arrays along it that NAME.csv leaves out, with why. */
static void put_dim(FILE *f, struct engine *e, const struct znode *g,
                    struct dim *dm, const struct node_members *k,
                    const struct znode **kn, int *oom) {
  uint64_t rows;
  struct zerr err = {0};
  int has_table = table_rows(e, g, dm->name, &rows, &err);
  if (has_table < 0)
    *oom = 1; /* transient: the text would change without saying why */
  if (has_table > 0)
    dm->size = rows;
  fputs("  ", f);
  put_name(f, dm->name, oom);
  fprintf(f, " = %llu\n", (unsigned long long)dm->size);
  char why[64];
  struct dim_list other = {f, "    other lengths: ", NULL, 0, 0, oom};
  for (size_t i = 0; kn && i < k->n; i++) {
    json_t *dn = kn[i] && kn[i]->kind == ZNODE_ARRAY ? dims_of(kn[i]) : NULL;
    for (int d = 0; dn && d < kn[i]->meta->ndim; d++) {
      const char *name = json_string_value(json_array_get(dn, (size_t)d));
      if (name && !strcmp(name, dm->name) &&
          kn[i]->meta->shape[d] != dm->size) {
        snprintf(why, sizeof why, "%llu",
                 (unsigned long long)kn[i]->meta->shape[d]);
        dim_list_add(&other, k->v[i], why);
        break;
      }
    }
  }
  dim_list_end(&other);
  if (has_table <= 0)
    return;
  char file[TABLE_NAME_MAX + sizeof TABLE_SUFFIX];
  snprintf(file, sizeof file, "%s%s", dm->name, TABLE_SUFFIX);
  struct dim_list out = {f, "    left out of ", file, 0, 0, oom};
  for (size_t i = 0; kn && i < k->n; i++) {
    const struct znode *c = kn[i];
    json_t *dn = c && c->kind == ZNODE_ARRAY ? dims_of(c) : NULL;
    const char *name = json_string_value(json_array_get(dn, 0));
    if (!name || c->meta->ndim != 1 || strcmp(name, dm->name) ||
        table_takes(c, dm->name, dm->size))
      continue;
    if (c->meta->shape[0] != dm->size)
      snprintf(why, sizeof why, "length %llu",
               (unsigned long long)c->meta->shape[0]);
    else
      snprintf(why, sizeof why, "no views");
    dim_list_add(&out, k->v[i], why);
  }
  dim_list_end(&out);
}

/* A group summarised as ncdump -h does: its dimensions with their sizes
 * (from the dimension names of its arrays), each variable, its member
 * groups, then its own attributes. Members are what the store lists and
 * consolidated metadata names. */
static void group_summary(FILE *f, struct engine *e, const struct znode *n,
                          int *oom) {
  struct node_members k = {0};
  const char *path = n->path ? n->path : "";
  struct zerr err = {0};
  /* what the store cannot list, consolidated metadata may */
  if (node_members_load(e->nodes, path, &k, &err) < 0)
    k.oom = 1;
  const struct znode **kn = calloc(k.n ? k.n : 1, sizeof *kn);
  struct dim *dims = calloc(k.n * ZMETA_MAX_DIMS + 1, sizeof *dims);
  size_t ndims = 0, nvars = 0, ngroups = 0;
  if (!kn || !dims)
    k.oom = 1;
  for (size_t i = 0; kn && dims && i < k.n; i++) {
    char child[4096];
    snprintf(child, sizeof child, "%s%s%s", path, *path ? "/" : "", k.v[i]);
    const struct znode *c = node_get(e->nodes, child);
    if (c->transient)
      k.oom = 1; /* a member broken for now: no summary without it */
    if (c->kind == ZNODE_GROUP) {
      kn[i] = c;
      ngroups++;
      continue;
    }
    if (c->kind != ZNODE_ARRAY || !c->meta)
      continue;
    kn[i] = c;
    nvars++;
    json_t *dn = dims_of(c);
    for (int d = 0; dn && d < c->meta->ndim; d++) {
      const char *name = json_string_value(json_array_get(dn, (size_t)d));
      size_t j = 0;
      while (name && j < ndims && strcmp(dims[j].name, name))
        j++;
      if (name && j == ndims)
        dims[ndims++] = (struct dim){name, c->meta->shape[d]};
    }
  }
  fprintf(f, "dimensions: %zu\n", ndims);
  for (size_t j = 0; j < ndims; j++)
    put_dim(f, e, n, &dims[j], &k, kn, oom);
  fprintf(f, "variables: %zu\n", nvars);
  for (size_t i = 0; kn && i < k.n; i++)
    if (kn[i] && kn[i]->kind == ZNODE_ARRAY)
      put_variable(f, k.v[i], kn[i], oom);
  fprintf(f, "groups: %zu\n", ngroups);
  for (size_t i = 0; kn && i < k.n; i++)
    if (kn[i] && kn[i]->kind == ZNODE_GROUP) {
      fputs("  ", f);
      put_name(f, k.v[i], oom);
      fputc('\n', f);
    }
  json_t *ga = group_attrs(e, n, oom);
  if (ga)
    put_attrs(f, ga, "", oom);
  else
    fputs("attributes: 0\n", f);
  json_decref(ga);
  if (k.oom)
    *oom = 1;
  node_members_free(&k);
  free(kn);
  free(dims);
}

/* The counts of array n's stored chunks from its listing: memoised with
 * the views' presence scan, or scanned now where views cannot work (an
 * unsupported codec: the listing still tells what is stored). A transient
 * failure (-EINTR, -ENOMEM, a server timing out) is returned; any other
 * makes the counts unknown, with the reason in why (cap bytes). */
static int gather_counts(struct engine *e, const struct znode *n,
                         struct info_counts *c, char *why, size_t cap,
                         struct zerr *err) {
  struct memo_ref *ref = NULL;
  struct presence *own = NULL;
  struct zerr lerr = {0};
  int rc = n->chain ? unit_presence(e, n, &ref, &lerr)
                    : presence_scan(e->store, n->path, n->meta,
                                    e->env.max_decoded / sizeof(uint64_t),
                                    &e->stopping, &own, &lerr);
  if (rc < 0 && zerr_is_transient(-rc)) {
    if (err)
      *err = lerr;
    return rc;
  }
  const struct presence *p = ref ? (const struct presence *)memo_obj(ref) : own;
  if (rc < 0 || !p->complete) {
    snprintf(why, cap, "%s",
             rc < 0 ? lerr.msg : "the store cannot list the array");
    c->why = why;
  } else {
    c->known = 1;
    c->stored = p->n;
    c->bytes = p->bytes;
  }
  memo_release(e->memo, ref);
  if (own)
    zobj_put(&own->obj);
  return 0;
}

/* A group's text, kept (memo object, ELEVEL_INFO). */
struct info_obj {
  struct zobj obj;
  char *text;
  size_t len;
};

/* Release a kept text. */
static void info_obj_destroy(struct zobj *o) {
  struct info_obj *t = (struct info_obj *)o;
  free(t->text);
  free(t);
}

/* What a group text fill needs. */
struct info_job {
  struct engine *e;
  const struct znode *n;
};

/* Fill: a group's text, made once. */
static int info_fill(void *ctx, struct zobj **obj, size_t *cost,
                     struct zerr *err) {
  struct info_job *j = ctx;
  struct info_obj *t = calloc(1, sizeof *t);
  if (!t)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&t->obj, info_obj_destroy);
  FILE *f = open_memstream(&t->text, &t->len);
  int rc = f ? info_write(f, j->e, j->n, NULL, &t->text, &t->len) : -ENOMEM;
  if (rc < 0) {
    zobj_put(&t->obj);
    return zerr_set(err, -rc, "out of memory");
  }
  *obj = &t->obj;
  *cost = sizeof *t + t->len;
  return 0;
}

/* See info.h: the counts, then the text. */
int info_text(struct engine *e, const struct znode *n, char **out, size_t *len,
              struct zerr *err) {
  if (n->kind == ZNODE_GROUP) {
    /* The store is taken as immutable while mounted (its metadata is read
     * once into the node table): made once, not for every stat and read
     * (a listing and, for V2, a .zattrs read: requests on a remote
     * store). */
    struct memo_key k;
    node_key(&k, ELEVEL_INFO, n, NULL, NULL, 0);
    struct info_job j = {e, n};
    struct memo_ref *ref;
    ZTRY(memo_get(e->memo, &k, info_fill, &j, &ref, err));
    const struct info_obj *t = (const struct info_obj *)memo_obj(ref);
    *out = malloc(t->len + 1);
    if (*out) {
      memcpy(*out, t->text, t->len + 1);
      *len = t->len;
    }
    memo_release(e->memo, ref);
    return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
  }
  struct info_counts c = {0};
  char why[sizeof err->msg];
  if (n->kind == ZNODE_ARRAY && n->meta)
    ZTRY(gather_counts(e, n, &c, why, sizeof why, err));
  *out = NULL;
  *len = 0;
  FILE *f = open_memstream(out, len);
  int rc = f ? info_write(f, e, n, n->kind == ZNODE_ARRAY ? &c : NULL, out, len)
             : -ENOMEM;
  return rc < 0 ? zerr_set(err, -rc, "out of memory") : 0;
}

/* The attributes a node has, in listing order (NULL-ended). */
static void names_of(const struct znode *n, const char **names) {
  size_t k = 0;
  json_t *root = root_of(n);
  if (n->kind == ZNODE_ARRAY || n->kind == ZNODE_GROUP) {
    names[k++] = "node_type";
    if (json_object_get(root, "zarr_format"))
      names[k++] = "zarr_format";
  }
  if (n->kind == ZNODE_ARRAY && n->meta) {
    names[k++] = "shape";
    names[k++] = "data_type";
    names[k++] = "chunks";
    names[k++] = "codecs";
    if (json_object_get(root, "fill_value"))
      names[k++] = "fill_value";
    if (dims_of(n))
      names[k++] = "dimension_names";
    if (json_object_size(n->attrs))
      names[k++] = "attributes";
  }
  if (root)
    names[k++] = "metadata";
  names[k] = NULL;
}

int info_xattr_names(const struct znode *n, char **out, size_t *len) {
  const char *names[16];
  names_of(n, names);
  size_t total = 0;
  for (size_t i = 0; names[i]; i++)
    total += sizeof XATTR_PREFIX - 1 + strlen(names[i]) + 1;
  *out = malloc(total ? total : 1);
  if (!*out)
    return -ENOMEM;
  char *p = *out;
  for (size_t i = 0; names[i]; i++)
    p += sprintf(p, "%s%s", XATTR_PREFIX, names[i]) + 1;
  *len = total;
  return 0;
}

/* The value of attribute a (without the prefix) of n into a stream; 1
 * when it could not be made (out of memory), else 0. */
static int put_value(FILE *f, const struct znode *n, const char *a) {
  const struct zmeta *m = n->meta;
  json_t *root = root_of(n);
  char *s = NULL;
  int json = 1, oom = 0;
  if (!strcmp(a, "node_type"))
    json = 0, fputs(n->kind == ZNODE_ARRAY ? "array" : "group", f);
  else if (!strcmp(a, "shape"))
    json = 0, put_dims(f, m->shape, m->ndim, ",");
  else if (!strcmp(a, "chunks") && m->irregular) /* no one shape */
    s = zjson_dump(json_object_get(root, "chunk_grid"));
  else if (!strcmp(a, "chunks"))
    json = 0, put_dims(f, m->chunk, m->ndim, ",");
  else if (!strcmp(a, "data_type")) /* as info.txt shows it */
    json = 0, put_text(f, m->dtype.name, &oom);
  else if (!strcmp(a, "codecs"))
    s = zjson_dump(m->codecs);
  else if (!strcmp(a, "metadata"))
    s = zjson_dump(root);
  else if (!strcmp(a, "dimension_names"))
    s = zjson_dump(dims_of(n));
  else if (!strcmp(a, "attributes"))
    s = zjson_dump(n->attrs);
  else /* zarr_format, fill_value, dimension_names: as written */
    s = zjson_dump(json_object_get(root, a));
  if (s)
    fputs(s, f);
  free(s);
  return (json && !s) || oom; /* listed, so present: only memory lacked */
}

int info_xattr(const struct znode *n, const char *name, char **out,
               size_t *len) {
  *out = NULL;
  *len = 0;
  if (strncmp(name, XATTR_PREFIX, sizeof XATTR_PREFIX - 1))
    return -ENODATA;
  const char *a = name + sizeof XATTR_PREFIX - 1;
  const char *names[16];
  names_of(n, names);
  size_t i = 0;
  while (names[i] && strcmp(names[i], a))
    i++;
  if (!names[i])
    return -ENODATA;
  FILE *f = open_memstream(out, len);
  if (!f)
    return -ENOMEM;
  int oom = put_value(f, n, a);
  return stream_done(f, out, len, oom);
}
