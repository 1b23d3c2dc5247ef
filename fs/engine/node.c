/* node.c - the node table: each store prefix's metadata loaded once and
 * kept for the table's life, with the hierarchy's consolidated metadata
 * (see node.h). */
#include "node.h"
#include "node_int.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/json/zjson.h"
#include "../../src/util/log.h"
#include "../../src/util/logonce.h"
#include "../text/textprep.h"

/* Node table entries beyond this are not remembered when they are plain
 * directories (chunk directories of huge grids must not grow the table). */
#define NODE_MAX_NODES 1000000

/* A node table entry, keyed by the node's path. */
struct node_slot {
  struct htab_node hn;
  struct znode *node;
};

/* See node.h. */
int node_table_new(struct store *store, struct logonce *log,
                   const struct codec_env *env, int no_consolidated,
                   struct node_table **out, struct zerr *err) {
  struct node_table *t = calloc(1, sizeof *t);
  if (!t || htab_init(&t->nodes, 4096) < 0) {
    free(t);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  t->store = store;
  t->log = log;
  t->env = env;
  t->no_consolidated = no_consolidated;
  pthread_mutex_init(&t->lock, NULL);
  *out = t;
  return 0;
}

/* Log one line about key (store location prepended), once per reason. */
void node_log(struct node_table *t, const char *key, const char *msg) {
  logonce_log(t->log, ZLOG_ERR, t->store->location, key, msg);
}

/* Free one node of t; NULL-safe. */
static void znode_free(struct node_table *t, struct znode *n) {
  if (!n)
    return;
  if (t->views)
    t->views->free(n);
  json_decref(n->attrs);
  chain_free(n->chain);
  zmeta_free(n->meta);
  zcons_free(n->cons);
  free(n->form.fill);
  free(n->view_error);
  free(n->path);
  free(n);
}

/* Free every node of the table (no one may hold a node any more);
 * NULL-safe. */
void node_table_free(struct node_table *t) {
  if (!t)
    return;
  struct htab_node *hn;
  while ((hn = htab_pop(&t->nodes))) {
    struct node_slot *s = (struct node_slot *)hn;
    znode_free(t, s->node);
    free(s);
  }
  htab_fini(&t->nodes);
  while (t->transient) {
    struct znode *n = t->transient;
    t->transient = n->next;
    znode_free(t, n);
  }
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* Join a prefix and a name into a store key. */
int node_key_join(char *buf, size_t len, const char *prefix, const char *name) {
  int n = *prefix ? snprintf(buf, len, "%s/%s", prefix, name)
                  : snprintf(buf, len, "%s", name);
  return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : n;
}

/* Record why an array's views cannot work, and say it once. A transient
 * code (out of memory, a server failing) breaks the node only for now. */
static void node_set_error(struct node_table *t, struct znode *n,
                           const char *key, int code, const char *msg) {
  n->view_error = strdup(msg);
  if (zerr_is_transient(code)) {
    n->transient = 1;
    n->errcode = code;
  }
  node_log(t, key, msg);
}

/* Does inner (> 0) divide every chunk of dimension d? */
static int node_divides(const struct zmeta *m, int d, uint64_t inner) {
  if (!m->edge[d])
    return m->chunk[d] % inner == 0;
  for (uint64_t i = 0; i < m->grid[d]; i++)
    if (zmeta_chunk_len(m, d, i) % inner)
      return 0;
  return 1;
}

/* Decide the decode unit of an array node (see struct znode): inner chunks
 * when the chain reports them (codecs/chain.h: chain_inner), else whole
 * chunks. */
static int node_set_units(struct znode *n, struct zerr *err) {
  const struct zmeta *m = n->meta;
  uint64_t inner[ZMETA_MAX_DIMS];
  n->uspec = n->spec;
  n->shard = chain_inner(n->chain, inner);
  for (int d = 0; d < m->ndim; d++) {
    n->per[d] = 1;
    /* units are chunks: listed edges make them irregular */
    n->form.edge[d] = n->shard ? NULL : m->edge[d];
  }
  if (n->shard) {
    n->uspec.nelem = 1;
    for (int d = 0; d < m->ndim; d++) {
      if (!node_divides(m, d, inner[d]))
        return zerr_set(err, EIO,
                        "inner chunk shape does not divide the shard "
                        "shape");
      n->per[d] = m->chunk[d] / inner[d];
      n->uspec.shape[d] = inner[d];
      n->uspec.nelem *= inner[d];
    }
  }
  for (int d = 0; d < m->ndim; d++) {
    uint64_t u = n->uspec.shape[d];
    n->ugrid[d] =
        n->form.edge[d] ? m->grid[d] : m->shape[d] / u + (m->shape[d] % u != 0);
  }
  return 0;
}

/* See node.h. */
void node_chunk_units(const struct znode *n, int d, uint64_t c, uint64_t *lo,
                      uint64_t *hi) {
  if (!n->shard) {
    *lo = c;
    *hi = c + 1;
    return;
  }
  const struct zmeta *m = n->meta;
  uint64_t u = n->uspec.shape[d];
  *lo = zmeta_chunk_start(m, d, c) / u;
  *hi = *lo + zmeta_chunk_len(m, d, c) / u;
  if (*hi > n->ugrid[d])
    *hi = n->ugrid[d];
}

/* See node.h. */
const struct codec_spec *node_chunk_spec(const struct znode *n,
                                         const uint64_t *cidx,
                                         struct codec_spec *tmp) {
  const struct zmeta *m = n->meta;
  if (!m->irregular)
    return &n->spec;
  *tmp = n->spec;
  tmp->nelem = 1;
  for (int d = 0; d < m->ndim; d++) {
    tmp->shape[d] = zmeta_chunk_len(m, d, cidx[d]);
    tmp->nelem *= tmp->shape[d]; /* <= chunk_nelem */
  }
  return tmp;
}

/* The note of array nodes (fs/text/text.h): what a unit's text shows in
 * place of its data, logged once per chunk key and reason. */
static void node_note(const struct text_note *note, const uint64_t *idx,
                      unsigned what) {
  const struct znode *n =
      (const struct znode *)((const char *)note - offsetof(struct znode, note));
  const struct node_table *t = note->ctx;
  uint64_t cidx[ZMETA_MAX_DIMS]; /* units may be inner chunks of a shard */
  for (int d = 0; d < n->meta->ndim; d++)
    cidx[d] = n->shard ? zmeta_chunk_of(n->meta, d, idx[d] * n->uspec.shape[d])
                       : idx[d];
  char key[4096];
  if (node_chunk_key(n, cidx, key, sizeof key) >= 0)
    logonce_note(t->log, ZLOG_WARN, t->store->location, key,
                 text_note_msg(what));
}

/* How units become text: type, unit shape, fill text, the note. */
static int node_set_form(const struct node_table *t, struct znode *n,
                         struct zerr *err) {
  n->note = (struct text_note){node_note, t};
  n->form.note = &n->note;
  n->form.ndim = n->meta->ndim;
  memcpy(n->form.shape, n->uspec.shape, sizeof n->form.shape);
  return textprep_fill_text(&n->uspec, &n->meta->dtype, t->env, &n->form, err);
}

/* The attributes of the V2 array at path: its .zattrs (NULL when absent;
 * a malformed one is logged, when log, and left out). 0, or a transient
 * failure (out of memory, a server failing), with err set. */
static int node_read_zattrs(struct node_table *t, const char *path, int log,
                            json_t **out, struct zerr *err) {
  *out = NULL;
  char akey[4096];
  if (node_key_join(akey, sizeof akey, path, ".zattrs") < 0)
    return 0;
  uint8_t *text = NULL;
  size_t len;
  int rc = store_read_all(t->store, akey, NODE_MAX_META, &text, &len, err);
  if (rc < 0 && zerr_is_transient(-rc))
    return rc;
  zerr_clear(err);
  if (rc < 0)
    return 0; /* no .zattrs: no attributes */
  json_t *a = zjson_loadb((const char *)text, len, err);
  free(text);
  if (!a && err->code == ENOMEM)
    return -ENOMEM;
  zerr_clear(err);
  if (!json_is_object(a)) {
    json_decref(a);
    if (log)
      node_log(t, akey, "attributes ignored: not a JSON object");
    return 0;
  }
  *out = a;
  return 0;
}

/* The attributes of array n: V3 `attributes` of its zarr.json, V2 its
 * .zattrs (none when absent; a malformed one is logged and left out).
 * 0, or a transient failure (out of memory, a server failing) that breaks
 * the node for now, with err set. */
static int node_set_attrs(struct node_table *t, struct znode *n,
                          struct zerr *err) {
  if (n->zarr_format == 3) {
    json_t *a = n->meta ? json_object_get(n->meta->root, "attributes") : NULL;
    n->attrs = json_is_object(a) ? json_incref(a) : NULL;
    return 0;
  }
  return node_read_zattrs(t, n->path, 1, &n->attrs, err);
}

/* See node_int.h: the metadata of an array without making its node (no
 * log, no chain), from consolidated metadata or the store. */
int node_peek(struct node_table *t, const char *path, struct zmeta **meta,
              json_t **attrs, struct zerr *err) {
  static const char *const names[] = {"zarr.json", ".zarray"};
  *meta = NULL;
  *attrs = NULL;
  size_t len;
  enum zcons_kind ck;
  char ckey[4096], key[4096];
  const char *ctext = node_cons_doc(t, path, &len, &ck, ckey, sizeof ckey);
  int rc = -ENOENT, v3 = 1;
  if (ctext && (ck == ZCONS_V3 || ck == ZCONS_V2_ARRAY)) {
    v3 = ck == ZCONS_V3;
    rc = v3 ? zmeta_parse(ctext, len, meta, err)
            : zmeta_parse_v2(ctext, len, meta, err);
  }
  for (int which = 0; rc == -ENOENT && which < 2; which++) {
    uint8_t *text = NULL;
    if (node_key_join(key, sizeof key, path, names[which]) < 0)
      return 0;
    rc = store_read_all(t->store, key, NODE_MAX_META, &text, &len, err);
    if (rc == 0) {
      v3 = which == 0;
      rc = v3 ? zmeta_parse((const char *)text, len, meta, err)
              : zmeta_parse_v2((const char *)text, len, meta, err);
    } else if (rc != -ENOENT && rc != -ENOTDIR && rc != -EINVAL) {
      break;
    }
    free(text);
  }
  if (rc == 0 && (*meta)->node != ZMETA_ARRAY)
    rc = -ENOENT;
  if (rc == 0 && v3) {
    json_t *a = json_object_get((*meta)->root, "attributes");
    *attrs = json_is_object(a) ? json_incref(a) : NULL;
  } else if (rc == 0) {
    rc = node_read_zattrs(t, path, 0, attrs, err);
  }
  if (rc < 0) {
    zmeta_free(*meta);
    *meta = NULL;
    if (zerr_is_transient(-rc))
      return rc;
    zerr_clear(err); /* not an array that can be read: not a variable */
  }
  return 0;
}

/* A hash of the metadata document as compact JSON with sorted keys, made
 * once per array rather than once per unit the persistent index looks up
 * (0: no memory to dump it). */
static uint64_t meta_hash_of(const struct zmeta *m) {
  char *doc =
      m->root ? json_dumps(m->root, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  if (!doc)
    return 0;
  uint64_t h = htab_hash_bytes(doc, strlen(doc), 0x6c78696e646578ull);
  free(doc);
  return h;
}

/* ---- hierarchies through consolidated metadata ---- */

/* Largest .zmetadata read, as for any node metadata. */
#define HIER_MAX_ZMETADATA (64u << 20)

/* Called for each group with a table covering a path; rel is the path
 * relative to that group. */
typedef void (*hier_visit_fn)(void *ud, const struct znode *g, const char *rel);

/* Visit the groups with a table above path (and path itself when self)
 * from the root down. Returns 1, and the visits must be discarded, when one
 * of those nodes is an array or broken: nothing below an array is a node
 * (whatever a table says), and an array has no child nodes. */
static int hier_walk(struct node_table *t, const char *path, int self,
                     hier_visit_fn fn, void *ud) {
  size_t plen = strlen(path), pos = 0;
  char prefix[4096];
  if (t->no_consolidated || plen >= sizeof prefix)
    return 1;
  for (;;) {
    int is_self = pos == plen;
    if (is_self && !self)
      return 0;
    memcpy(prefix, path, pos);
    prefix[pos] = '\0';
    const struct znode *g = node_get(t, prefix);
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

/* What node_cons_doc looks for and finds. */
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

/* The consolidated document of the node at store prefix path (non-empty),
 * looked up in its ancestors' tables: its text (borrowed; lives as long as
 * the table), length and kind; the store key of the document that
 * consolidated it ("zarr.json", "g/.zmetadata") goes to src_key. NULL when
 * no table lists path. */
const char *node_cons_doc(struct node_table *t, const char *path, size_t *len,
                          enum zcons_kind *kind, char *src_key,
                          size_t src_cap) {
  if (!*path)
    return NULL;
  struct doc_find f = {0};
  if (hier_walk(t, path, 0, doc_visit, &f) || !f.text)
    return NULL;
  *len = f.len;
  *kind = f.kind;
  const char *name = f.group->meta ? "zarr.json" : ".zmetadata";
  snprintf(src_key, src_cap, "%s%s%s", f.group->path, *f.group->path ? "/" : "",
           name);
  return f.text;
}

/* Give group node n (whose metadata key is key) its own table: the V3
 * document's consolidated_metadata, or for a V2 group whose metadata came
 * from the store its .zmetadata. A malformed table is logged (one line,
 * naming the key and the reason) and ignored. */
static void hier_load_group(struct node_table *t, struct znode *n,
                            const char *key, int from_consolidated) {
  if (t->no_consolidated)
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
    rc = store_read_all(t->store, zkey, HIER_MAX_ZMETADATA, &text, &len, &err);
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
      n->errcode = -rc;
      return;
    }
    char msg[ZERR_MSG_MAX + 64];
    snprintf(msg, sizeof msg,
             "consolidated metadata ignored (per-node metadata is used): %s",
             err.msg);
    node_log(t, key, msg);
  }
}

/* Does any table name rel as a directory? */
static void dir_visit(void *ud, const struct znode *g, const char *rel) {
  int *found = ud;
  *found |= zcons_has_dir(g->cons, rel);
}

/* Named by an ancestor's table? */
int node_cons_is_dir(struct node_table *t, const char *path) {
  int found = 0;
  return *path && !hier_walk(t, path, 0, dir_visit, &found) && found;
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
int node_cons_children(struct node_table *t, const char *path,
                       zcons_child_cb cb, void *ud, struct zerr *err) {
  struct names l = {.err = err};
  int blocked = hier_walk(t, path, 1, children_visit, &l), rc = 0;
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

/* ---- a group's members ---- */

/* Add a member name; non-zero (stop) when out of memory. */
static int members_add(struct node_members *m, const char *name) {
  if (m->n == m->cap) {
    size_t nc = m->cap ? 2 * m->cap : 16;
    char **p = realloc(m->v, nc * sizeof *p);
    if (!p)
      return m->oom = 1;
    m->v = p;
    m->cap = nc;
  }
  if (!(m->v[m->n] = strdup(name)))
    return m->oom = 1;
  m->n++;
  return 0;
}

/* store_list callback: directories may be members. */
static int members_stored(void *ud, const char *name,
                          enum store_entry_type type, uint64_t size,
                          int64_t mtime) {
  (void)size;
  (void)mtime;
  return type == STORE_DIR ? members_add(ud, name) : 0;
}

/* node_cons_children callback: members consolidated metadata names. */
static int members_cons(void *ud, const char *name) {
  return members_add(ud, name);
}

/* qsort: names in strcmp order. */
static int members_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* See node.h. */
int node_members_load(struct node_table *t, const char *path,
                      struct node_members *m, struct zerr *err) {
  int rc = store_list(t->store, path, members_stored, m, err);
  if (rc < 0 && zerr_is_transient(-rc))
    return rc;
  if (rc < 0 && t->store->unlistable && !(m->unlisted = strdup(err->msg)))
    m->oom = 1;
  zerr_clear(err); /* what the store cannot list, metadata may name */
  if (node_cons_children(t, path, members_cons, m, err) < 0 || m->oom)
    return zerr_set(err, ENOMEM, "out of memory listing a group");
  if (m->n)
    qsort(m->v, m->n, sizeof *m->v, members_cmp);
  size_t w = 0;
  for (size_t i = 0; i < m->n; i++) {
    if (w && !strcmp(m->v[w - 1], m->v[i])) {
      free(m->v[i]);
      continue;
    }
    m->v[w++] = m->v[i];
  }
  m->n = w;
  return 0;
}

/* See node.h. */
void node_members_free(struct node_members *m) {
  if (!m)
    return;
  for (size_t i = 0; i < m->n; i++)
    free(m->v[i]);
  free(m->v);
  free(m->unlisted);
  m->unlisted = NULL;
  m->v = NULL;
  m->n = m->cap = 0;
}

/* ---- the table ---- */

/* Which metadata names node_load reads at path: [*first, *last) of
 * zarr.json, .zarray, .zgroup. Where each look-up is a request (a remote
 * store), none below an array (nothing there is a node), zarr.json alone
 * for a node whose parent is a V3 node, and the V2 names alone for one
 * whose parent is a V2 node: a hierarchy is of one format (the remote
 * store's own directory test assumes it too). Elsewhere every name is
 * read, V3 first. */
static void node_formats(struct node_table *t, const char *path, int *first,
                         int *last) {
  const char *slash = strrchr(path, '/'), *rel;
  if (!t->store->remote || !*path)
    return;
  if (node_array_of(t, path, &rel)) {
    *first = *last = 0;
    return;
  }
  char parent[4096];
  size_t pl = slash ? (size_t)(slash - path) : 0;
  if (pl >= sizeof parent)
    return;
  memcpy(parent, path, pl);
  parent[pl] = '\0';
  int f = node_get(t, parent)->zarr_format;
  if (f == 3)
    *last = 1;
  else if (f == 2)
    *first = 1;
}

/* Read and interpret path/zarr.json. */
static struct znode *node_load(struct node_table *t, const char *path) {
  struct znode *n = calloc(1, sizeof *n);
  if (!n)
    return NULL;
  n->path = strdup(path);
  if (!n->path) {
    free(n);
    return NULL;
  }
  /* V3 first, then V2 (.zarray, .zgroup), as zarr-python looks. */
  static const char *const names[] = {"zarr.json", ".zarray", ".zgroup"};
  char key[4096];
  uint8_t *text = NULL;
  size_t len;
  struct zerr err = {0};
  int rc = -ENOENT, which = 0, from_cons = 0;
  /* An ancestor group's consolidated metadata, when it lists this node
   * (node_cons_doc); an entry that does not parse falls back to the
   * node's own files. */
  enum zcons_kind ck;
  char ckey[4096];
  const char *ctext = node_cons_doc(t, path, &len, &ck, ckey, sizeof ckey);
  if (ctext) {
    which = ck == ZCONS_V3 ? 0 : ck == ZCONS_V2_ARRAY ? 1 : 2;
    n->zarr_format = which == 0 ? 3 : 2;
    if (node_key_join(key, sizeof key, path, names[which]) < 0)
      return n;
    if (which == 2) {
      n->kind = ZNODE_GROUP;
      hier_load_group(t, n, key, 1);
      return n;
    }
    rc = which == 0 ? zmeta_parse(ctext, len, &n->meta, &err)
                    : zmeta_parse_v2(ctext, len, &n->meta, &err);
    from_cons = rc == 0 || rc == -ENOTSUP;
    if (!from_cons) {
      char msg[ZERR_MSG_MAX + 4200];
      snprintf(msg, sizeof msg,
               "consolidated metadata of '%s' ignored (per-node metadata is "
               "used): %s",
               path, err.msg);
      node_log(t, ckey, msg);
      zerr_clear(&err);
    }
  }
  if (!from_cons) {
    int first = 0, last = 3;
    node_formats(t, path, &first, &last);
    for (which = first; which < last; which++) {
      if (node_key_join(key, sizeof key, path, names[which]) < 0)
        return n; /* ZNODE_NONE */
      rc = store_read_all(t->store, key, NODE_MAX_META, &text, &len, &err);
      if (rc != -ENOENT && rc != -ENOTDIR && rc != -EINVAL)
        break;
    }
    if (which == last)
      return n;
    n->zarr_format = which == 0 ? 3 : 2;
    if (rc < 0) {
      n->kind = ZNODE_BROKEN;
      node_set_error(t, n, key, -rc, err.msg);
      return n;
    }
    if (which == 0) {
      rc = zmeta_parse((const char *)text, len, &n->meta, &err);
    } else if (which == 1) {
      rc = zmeta_parse_v2((const char *)text, len, &n->meta, &err);
    } else {
      n->kind = ZNODE_GROUP; /* .zgroup: only its .zmetadata matters */
      free(text);
      hier_load_group(t, n, key, 0);
      return n;
    }
    free(text);
  }
  if (rc < 0) {
    n->kind = ZNODE_BROKEN;
    char msg[ZERR_MSG_MAX + 32];
    /* Unsupported (a chunk grid, a key encoding) is not invalid. */
    snprintf(msg, sizeof msg, "%s%s",
             rc == -ENOTSUP || zerr_is_transient(-rc) ? ""
                                                      : "invalid metadata: ",
             err.msg);
    node_set_error(t, n, key, -rc, msg);
    return n;
  }
  if (n->meta->defaults)
    logonce_log(
        t->log, ZLOG_INFO, t->store->location, key,
        n->meta->defaults == ZMETA_DEFAULT_FILL
            ? "fill_value null read as zarrita reads it (0, NaN)"
        : n->meta->defaults == ZMETA_DEFAULT_CODECS
            ? "codecs [] read as zarrita reads it ([bytes] little-endian)"
            : "codecs [] and fill_value null read as zarrita reads "
              "them ([bytes] little-endian; 0, NaN)");
  if (n->meta->node == ZMETA_GROUP) {
    n->kind = ZNODE_GROUP;
    hier_load_group(t, n, key, from_cons);
    return n;
  }
  n->kind = ZNODE_ARRAY;
  if (node_set_attrs(t, n, &err) < 0) {
    node_set_error(t, n, key, err.code, err.msg);
    return n;
  }
  struct zmeta *m = n->meta;
  n->meta_hash = meta_hash_of(m);
  n->spec.ndim = m->ndim;
  memcpy(n->spec.shape, m->chunk, sizeof m->chunk);
  n->spec.nelem = m->chunk_nelem;
  n->spec.dtype = m->dtype;
  n->form.dt = m->dtype.kind == DT_FIXED_UTF32    ? dtype_of(DT_STRING)
               : dtype_is_fixed_string(&m->dtype) ? dtype_of(DT_BYTES)
                                                  : m->dtype;
  if ((m->dtype.kind == DT_OPTIONAL && dtype_has_var_elements(&m->dtype)) ||
      m->dtype.kind == DT_STRUCT)
    n->form.dt = dtype_of(DT_STRING); /* see textprep_to_text */
  n->spec.fill = m->fill;
  n->spec.fill_len = m->fill_len;
  if (m->dtype.kind == DT_UNSUPPORTED) {
    char msg[128];
    snprintf(msg, sizeof msg, "unsupported data type '%s'", m->dtype.name);
    node_set_error(t, n, key, ENOTSUP, msg);
    return n;
  }
  if (chain_build(m->codecs, &n->spec, &n->chain, &err) < 0) {
    n->chain = NULL;
    node_set_error(t, n, key, err.code, err.msg);
    return n;
  }
  if (node_set_units(n, &err) < 0 || node_set_form(t, n, &err) < 0) {
    chain_free(n->chain);
    n->chain = NULL;
    n->shard = NULL;
    node_set_error(t, n, key, err.code, err.msg);
    return n;
  }
  if (t->views && (t->views->set_cf(t, n, key, &err) < 0 ||
                   t->views->set_csv(t, n, key, &err) < 0))
    node_set_error(t, n, key, err.code, err.msg);
  return n;
}

/* htab equality: the slot's node has this path. */
static int node_eq(const struct htab_node *hn, const void *key) {
  return !strcmp(((const struct node_slot *)hn)->node->path, key);
}

/* Cached node lookup; loads on first use (outside the lock: loading reads
 * the store and ancestors' nodes; two threads may load the same node, and
 * the first to insert wins). */
const struct znode *node_get(struct node_table *t, const char *path) {
  static const struct znode none = {.kind = ZNODE_NONE, .path = ""};
  /* A node that could not even be allocated: broken for now, never "no
   * such node" (its views fail with ENOMEM, the next lookup tries again). */
  static const struct znode nomem = {.kind = ZNODE_BROKEN,
                                     .view_error = (char *)"out of memory",
                                     .transient = 1,
                                     .errcode = ENOMEM};
  uint64_t h = htab_hash_str(path);
  pthread_mutex_lock(&t->lock);
  struct node_slot *s =
      (struct node_slot *)htab_find(&t->nodes, h, node_eq, path);
  pthread_mutex_unlock(&t->lock);
  if (s)
    return s->node;
  struct znode *n = node_load(t, path);
  if (!n)
    return &nomem;
  pthread_mutex_lock(&t->lock);
  if (n->transient) { /* not remembered: the next lookup loads again */
    n->next = t->transient;
    t->transient = n;
    pthread_mutex_unlock(&t->lock);
    return n;
  }
  s = (struct node_slot *)htab_find(&t->nodes, h, node_eq, path);
  if (s || (n->kind == ZNODE_NONE && t->nodes.count >= NODE_MAX_NODES)) {
    pthread_mutex_unlock(&t->lock);
    znode_free(t, n);
    return s ? s->node : &none;
  }
  s = malloc(sizeof *s);
  if (!s) { /* not remembered, as a transient node (freed with the table) */
    n->next = t->transient;
    t->transient = n;
    pthread_mutex_unlock(&t->lock);
    return n;
  }
  s->hn.hash = h;
  s->node = n;
  htab_insert(&t->nodes, &s->hn);
  pthread_mutex_unlock(&t->lock);
  return n;
}

/* Walk the ancestors of key from the root down to the first array. */
const struct znode *node_array_of(struct node_table *t, const char *key,
                                  const char **rel) {
  char prefix[4096];
  size_t klen = strlen(key);
  if (klen >= sizeof prefix)
    return NULL;
  size_t pos = 0;
  for (;;) {
    memcpy(prefix, key, pos);
    prefix[pos] = '\0';
    const struct znode *n = node_get(t, prefix);
    if (n->kind == ZNODE_ARRAY || n->kind == ZNODE_BROKEN) {
      *rel = key + pos + (pos ? 1 : 0);
      return n;
    }
    const char *slash = strchr(key + pos + (pos ? 1 : 0), '/');
    if (!slash)
      return NULL;
    pos = (size_t)(slash - key);
  }
}

/* Store key of a chunk, with the array's prefix. */
int node_chunk_key(const struct znode *n, const uint64_t *idx, char *buf,
                   size_t len) {
  char rel[1024];
  int r = zmeta_chunk_key(n->meta, idx, rel, sizeof rel);
  if (r < 0)
    return r;
  return node_key_join(buf, len, n->path, rel);
}

/* ---- memo keys ---- */

/* See node.h. */
void node_key(struct memo_key *k, unsigned level, const struct znode *n,
              const uint64_t *idx, const uint64_t *extra, int nextra) {
  int nd = n->meta && idx ? n->meta->ndim : 0;
  k->level = (uint8_t)level;
  k->owner = n;
  k->n = (uint8_t)(nd + nextra);
  if (nd)
    memcpy(k->v, idx, (size_t)nd * sizeof *idx);
  if (nextra)
    memcpy(k->v + nd, extra, (size_t)nextra * sizeof *extra);
}

/* See node.h. Nodes are shared read-only but for this counter, which is
 * atomic. */
void node_sizes_changed(const struct znode *n) {
  atomic_fetch_add_explicit(&((struct znode *)n)->sizes_gen, 1,
                            memory_order_acq_rel);
}

/* Can views of n be read at all? */
int node_check(const struct znode *n, struct zerr *err) {
  if (n->kind == ZNODE_ARRAY && n->chain)
    return 0;
  return zerr_set(err, n->errcode ? n->errcode : EIO, "%s",
                  n->view_error ? n->view_error : "not a readable array");
}
