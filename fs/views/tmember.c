/* tmember.c - a group's members as tables see them (see tmember.h). */
#include "tmember.h"

#include <stdlib.h>
#include <string.h>

/* See tmember.h. */
void tmember_free(struct tmembers *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->n; i++)
    free(m->v[i].name);
  free(m->v);
}

/* See tmember.h. */
const char *tmember_dim(const struct znode *n) {
  if (n->kind != ZNODE_ARRAY || !n->meta || !n->chain ||
      (n->meta->ndim != 1 && !(n->meta->ndim == 2 && n->cf && n->cf->join)))
    return NULL;
  json_t *d = json_object_get(n->meta->root, "dimension_names");
  if (!d && n->attrs)
    d = json_object_get(n->attrs, "_ARRAY_DIMENSIONS");
  const char *s = json_string_value(json_array_get(d, 0));
  if (!s || !*s || strlen(s) > TMEMBER_DIM_MAX || strchr(s, '/'))
    return NULL;
  return s;
}

/* See tmember.h. */
int tmember_load(struct engine *e, const struct znode *g, struct tmembers *m,
                 struct zerr *err) {
  const char *path = g->path ? g->path : "";
  struct node_members names = {0};
  int rc = node_members_load(e->nodes, path, &names, err);
  if (rc == 0 && !(m->v = calloc(names.n ? names.n : 1, sizeof *m->v)))
    rc = zerr_set(err, ENOMEM, "out of memory listing a group");
  if (rc < 0) {
    node_members_free(&names);
    return rc;
  }
  for (size_t i = 0; i < names.n; i++) /* the names change hands */
    m->v[m->n++].name = names.v[i];
  free(names.v);
  free(names.unlisted);
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
    if ((m->v[i].dim = tmember_dim(c)))
      m->v[i].n = c;
  }
  return 0;
}

/* qsort: names in strcmp order. */
static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* See tmember.h. */
long tmember_dims(const struct tmembers *m, const char ***out,
                  struct zerr *err) {
  const char **v = calloc(m->n + 1, sizeof *v);
  size_t n = 0, w = 0;
  *out = v;
  if (!v)
    return zerr_set(err, ENOMEM, "out of memory");
  for (size_t i = 0; i < m->n; i++)
    if (m->v[i].n)
      v[n++] = m->v[i].dim;
  if (n)
    qsort(v, n, sizeof *v, str_cmp);
  for (size_t i = 0; i < n; i++)
    if (!i || strcmp(v[w - 1], v[i]))
      v[w++] = v[i];
  return (long)w;
}
