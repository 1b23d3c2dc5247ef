/* info.c - an array or group in words (see info.h). */
#define _GNU_SOURCE /* open_memstream */
#include "info.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/json/zjson.h"
#include "../src/store/presence.h"
#include "node.h"
#include "unit.h"

#define XATTR_PREFIX "user.zarr."

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

/* See info.h. */
int info_format(const struct znode *n, const struct info_counts *counts,
                char **out, size_t *len) {
  *out = NULL;
  *len = 0;
  FILE *f = open_memstream(out, len);
  if (!f)
    return -ENOMEM;
  int oom = 0;
  fprintf(f, "path: /%s\n", n->path ? n->path : "");
  if (n->kind == ZNODE_BROKEN) {
    fprintf(f, "node_type: broken\nerror: %s\n",
            n->view_error ? n->view_error : "unusable metadata");
    return stream_done(f, out, len, oom);
  }
  const struct zmeta *m = n->meta;
  json_t *root = root_of(n);
  fprintf(f, "node_type: %s\n", n->kind == ZNODE_ARRAY ? "array" : "group");
  put_json(f, "zarr_format", json_object_get(root, "zarr_format"), &oom);
  if (n->kind == ZNODE_ARRAY && m) {
    fputs("shape: ", f);
    put_dims(f, m->shape, m->ndim, ", ");
    fprintf(f, "\ndata_type: %s\nchunk_shape: ", m->dtype.name);
    put_dims(f, m->chunk, m->ndim, ", ");
    fputc('\n', f);
    if (m->irregular) /* chunk_shape above is then the largest */
      fprintf(f, "chunk_grid: %s (chunk_shape: the largest)\n", m->grid_name);
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
    put_json(f, "dimension_names", json_object_get(root, "dimension_names"),
             &oom);
    put_counts(f, m, counts);
    if (n->view_error)
      fprintf(f, "views: no (%s)\n", n->view_error);
    else
      fprintf(f, "views: yes\n");
  }
  json_t *attrs = json_object_get(root, "attributes");
  if (json_is_object(attrs))
    fprintf(f, "attributes: %zu\n", json_object_size(attrs));
  return stream_done(f, out, len, oom);
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

/* See info.h: the counts, then the text. */
int info_text(struct engine *e, const struct znode *n, char **out, size_t *len,
              struct zerr *err) {
  struct info_counts c = {0};
  char why[sizeof err->msg];
  if (n->kind == ZNODE_ARRAY && n->meta)
    ZTRY(gather_counts(e, n, &c, why, sizeof why, err));
  int rc = info_format(n, n->kind == ZNODE_ARRAY ? &c : NULL, out, len);
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
    if (json_object_get(root, "dimension_names"))
      names[k++] = "dimension_names";
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
  int json = 1;
  if (!strcmp(a, "node_type"))
    json = 0, fputs(n->kind == ZNODE_ARRAY ? "array" : "group", f);
  else if (!strcmp(a, "shape"))
    json = 0, put_dims(f, m->shape, m->ndim, ",");
  else if (!strcmp(a, "chunks") && m->irregular) /* no one shape */
    s = zjson_dump(json_object_get(root, "chunk_grid"));
  else if (!strcmp(a, "chunks"))
    json = 0, put_dims(f, m->chunk, m->ndim, ",");
  else if (!strcmp(a, "data_type"))
    json = 0, fputs(m->dtype.name, f);
  else if (!strcmp(a, "codecs"))
    s = zjson_dump(m->codecs);
  else if (!strcmp(a, "metadata"))
    s = zjson_dump(root);
  else /* zarr_format, fill_value, dimension_names: as written */
    s = zjson_dump(json_object_get(root, a));
  if (s)
    fputs(s, f);
  free(s);
  return json && !s; /* listed, so present: only memory was missing */
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
