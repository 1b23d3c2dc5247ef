/* tmember.c - a group's members as tables see them (see tmember.h). */
#include "tmember.h"

#include <stdlib.h>
#include <string.h>

#include "table.h"

/* Add a member name; non-zero (stop) when out of memory. */
static int mem_add(struct tmembers *m, const char *name) {
  if (m->n == m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 16;
    struct tmember *p = realloc(m->v, nc * sizeof *p);
    if (!p)
      return m->oom = 1;
    m->v = p;
    m->cap = nc;
  }
  if (!(m->v[m->n].name = strdup(name)))
    return m->oom = 1;
  m->v[m->n].n = NULL;
  m->v[m->n].dim = NULL;
  m->n++;
  return 0;
}

/* store_list callback: directories may be members. */
static int mem_stored(void *ud, const char *name, enum store_entry_type type,
                      uint64_t size, int64_t mtime) {
  (void)size;
  (void)mtime;
  return type == STORE_DIR ? mem_add(ud, name) : 0;
}

/* node_cons_children callback: members consolidated metadata names. */
static int mem_cons(void *ud, const char *name) { return mem_add(ud, name); }

/* qsort: members in strcmp order of their names. */
static int mem_cmp(const void *a, const void *b) {
  return strcmp(((const struct tmember *)a)->name,
                ((const struct tmember *)b)->name);
}

/* See tmember.h. */
void tmember_free(struct tmembers *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->n; i++)
    free(m->v[i].name);
  free(m->v);
}

/* The dimension name of n when it is a readable 1-D array with one that
 * may name a file (V3 `dimension_names`, else V2 `_ARRAY_DIMENSIONS`),
 * else NULL. */
static const char *dim_of(const struct znode *n) {
  if (n->kind != ZNODE_ARRAY || !n->meta || !n->chain || n->meta->ndim != 1)
    return NULL;
  json_t *d = json_object_get(n->meta->root, "dimension_names");
  if (!d && n->attrs)
    d = json_object_get(n->attrs, "_ARRAY_DIMENSIONS");
  const char *s = json_string_value(json_array_get(d, 0));
  if (!s || !*s || strlen(s) > TABLE_NAME_MAX || strchr(s, '/'))
    return NULL;
  return s;
}

/* See tmember.h. */
int tmember_load(struct engine *e, const struct znode *g, struct tmembers *m,
                 struct zerr *err) {
  const char *path = g->path ? g->path : "";
  int rc = store_list(e->store, path, mem_stored, m, err);
  if (rc < 0 && zerr_is_transient(-rc))
    return rc;
  zerr_clear(err); /* what the store cannot list, metadata may name */
  if (node_cons_children(e->nodes, path, mem_cons, m, err) < 0 || m->oom)
    return zerr_set(err, ENOMEM, "out of memory listing a group");
  if (m->n)
    qsort(m->v, m->n, sizeof *m->v, mem_cmp);
  size_t w = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (w && !strcmp(m->v[w - 1].name, m->v[i].name)) {
      free(m->v[i].name);
      continue;
    }
    m->v[w++] = m->v[i];
  }
  m->n = w;
  for (size_t i = 0; i < m->n; i++) {
    char child[4096];
    int cl = snprintf(child, sizeof child, "%s%s%s", path, *path ? "/" : "",
                      m->v[i].name);
    if (cl < 0 || (size_t)cl >= sizeof child)
      continue;
    const struct znode *c = node_get(e->nodes, child);
    if (c->transient) /* a column missing for now: no table without it */
      return zerr_set(err, c->errcode ? c->errcode : EIO, "%s: %s", child,
                      c->view_error ? c->view_error : "metadata not loaded");
    if ((m->v[i].dim = dim_of(c)))
      m->v[i].n = c;
  }
  return 0;
}
