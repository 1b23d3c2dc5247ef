/* hier.c - consolidated metadata seen from the engine (see hier.h). */
#include "hier.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest .zmetadata read, as for any node metadata. */
#define HIER_MAX_ZMETADATA (64u << 20)

/* Called for each group with a table covering a path; rel is the path
 * relative to that group. */
typedef void (*hier_visit_fn)(void *ud, const struct znode *g, const char *rel);

/* Visit the groups with a table above path (and path itself when self)
 * from the root down. Returns 1, and the visits must be discarded, when one
 * of those nodes is an array or broken: nothing below an array is a node
 * (whatever a table says), and an array has no child nodes. */
static int hier_walk(struct engine *e, const char *path, int self,
                     hier_visit_fn fn, void *ud) {
  size_t plen = strlen(path), pos = 0;
  char prefix[4096];
  if (e->no_consolidated || plen >= sizeof prefix)
    return 1;
  for (;;) {
    int is_self = pos == plen;
    if (is_self && !self)
      return 0;
    memcpy(prefix, path, pos);
    prefix[pos] = '\0';
    const struct znode *g = engine_node(e, prefix);
    if (g->kind == ZNODE_ARRAY || g->kind == ZNODE_BROKEN)
      return 1;
    const char *rel = is_self ? "" : path + pos + (pos ? 1 : 0);
    if (g->cons)
      fn(ud, g, rel);
    if (is_self)
      return 0;
    const char *slash = strchr(rel, '/');
    pos = slash ? (size_t)(slash - path) : plen;
  }
}

/* What hier_node_doc looks for and finds. */
struct doc_find {
  const char *text;
  size_t len;
  enum zcons_kind kind;
  const struct znode *group;
};

/* The first (outermost) table that lists rel wins. */
static void doc_visit(void *ud, const struct znode *g, const char *rel) {
  struct doc_find *f = ud;
  if (!f->text) {
    f->text = zcons_node(g->cons, rel, &f->len, &f->kind);
    f->group = g;
  }
}

/* Look path up in its ancestors' tables. */
const char *hier_node_doc(struct engine *e, const char *path, size_t *len,
                          enum zcons_kind *kind, char *src_key,
                          size_t src_cap) {
  if (!*path)
    return NULL;
  struct doc_find f = {0};
  if (hier_walk(e, path, 0, doc_visit, &f) || !f.text)
    return NULL;
  *len = f.len;
  *kind = f.kind;
  const char *name = f.group->meta ? "zarr.json" : ".zmetadata";
  snprintf(src_key, src_cap, "%s%s%s", f.group->path, *f.group->path ? "/" : "",
           name);
  return f.text;
}

/* Parse the group's own table; log and ignore it when malformed. */
void hier_load_group(struct engine *e, struct znode *n, const char *key,
                     int from_consolidated) {
  if (e->no_consolidated)
    return;
  struct zerr err = {0};
  char zkey[4096];
  int rc;
  if (n->meta) {
    rc = zcons_parse_v3(json_object_get(n->meta->root, "consolidated_metadata"),
                        &n->cons, &err);
  } else {
    if (from_consolidated)
      return; /* described by an ancestor's table already */
    int w = snprintf(zkey, sizeof zkey, "%s%s.zmetadata", n->path,
                     *n->path ? "/" : "");
    if (w < 0 || (size_t)w >= sizeof zkey)
      return;
    key = zkey;
    uint8_t *text;
    size_t len;
    rc = store_read_all(e->store, zkey, HIER_MAX_ZMETADATA, &text, &len, &err);
    if (rc == -ENOENT || rc == -ENOTDIR || rc == -EINVAL)
      return;
    if (rc == 0) {
      rc = zcons_parse_v2((const char *)text, len, &n->cons, &err);
      free(text);
    }
  }
  if (rc < 0) {
    n->cons = NULL;
    if (zerr_is_transient(-rc)) { /* out of memory: ask again next time */
      n->transient = 1;
      return;
    }
    char msg[ZERR_MSG_MAX + 64];
    snprintf(msg, sizeof msg,
             "consolidated metadata ignored (per-node metadata is used): %s",
             err.msg);
    engine_log(e, key, msg);
  }
}

/* Does any table name rel as a directory? */
static void dir_visit(void *ud, const struct znode *g, const char *rel) {
  int *found = ud;
  *found |= zcons_has_dir(g->cons, rel);
}

/* Named by an ancestor's table? */
int hier_is_dir(struct engine *e, const char *path) {
  int found = 0;
  return *path && !hier_walk(e, path, 0, dir_visit, &found) && found;
}

/* Child names gathered from every covering table. */
struct names {
  char **v;
  size_t n, cap;
  int oom;
  struct zerr *err;
};

/* Remember one name. */
static int names_add(void *ud, const char *name) {
  struct names *l = ud;
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 16;
    char **nv = realloc(l->v, nc * sizeof *nv);
    if (!nv) {
      l->oom = 1;
      return 1;
    }
    l->v = nv;
    l->cap = nc;
  }
  if (!(l->v[l->n] = strdup(name))) {
    l->oom = 1;
    return 1;
  }
  l->n++;
  return 0;
}

/* Add one table's children of rel. */
static void children_visit(void *ud, const struct znode *g, const char *rel) {
  struct names *l = ud;
  if (!l->oom && zcons_children(g->cons, rel, names_add, l, l->err) < 0)
    l->oom = 1;
}

/* Order names by strcmp. */
static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Union of the covering tables' children, sorted, without duplicates. */
int hier_children(struct engine *e, const char *path, zcons_child_cb cb,
                  void *ud, struct zerr *err) {
  struct names l = {.err = err};
  int blocked = hier_walk(e, path, 1, children_visit, &l), rc = 0;
  if (blocked) {
    /* no child nodes here */
  } else if (l.oom) {
    rc = zerr_set(err, ENOMEM, "out of memory listing consolidated children");
  } else if (l.n) {
    qsort(l.v, l.n, sizeof *l.v, name_cmp);
    for (size_t i = 0; i < l.n; i++)
      if ((!i || strcmp(l.v[i], l.v[i - 1])) && cb(ud, l.v[i]))
        break;
  }
  for (size_t i = 0; i < l.n; i++)
    free(l.v[i]);
  free(l.v);
  return rc;
}
