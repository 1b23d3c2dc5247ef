/* namespace.c - path -> stored object or view (see namespace.h). */
#include "namespace.h"

#include <stdlib.h>
#include <string.h>

#include "hier.h"
#include "view.h"

/* Drop leading slashes: FUSE paths are absolute, store keys are not. */
static const char *path_key(const char *path) {
  while (*path == '/')
    path++;
  return path;
}

/* Split key into parent prefix (into buf) and basename. */
static const char *split_parent(const char *key, char *buf, size_t len) {
  const char *slash = strrchr(key, '/');
  if (!slash) {
    buf[0] = '\0';
    return key;
  }
  size_t n = (size_t)(slash - key);
  if (n >= len)
    n = len - 1;
  memcpy(buf, key, n);
  buf[n] = '\0';
  return slash + 1;
}

/* Does key end with suffix? */
static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !memcmp(s + a - b, suffix, b);
}

/* Resolve stored objects first, then view names. */
/* A store that cannot list (plain HTTP) has no directories of its own:
 * a proper prefix of a chunk key of an array ("c", "c/1" of a 3-D array
 * with `/` separators) is a directory, so that paths to chunks resolve.
 * Probed by completing the prefix with zero indices. */
static int is_chunk_prefix(struct engine *e, const char *key) {
  const char *rel;
  const struct znode *n = engine_array_of(e, key, &rel);
  if (!n || n->kind != ZNODE_ARRAY || !n->meta || !*rel)
    return 0;
  char probe[4096];
  size_t len = strlen(rel);
  if (len + 2 * ZMETA_MAX_DIMS >= sizeof probe)
    return 0;
  memcpy(probe, rel, len + 1);
  uint64_t idx[ZMETA_MAX_DIMS];
  for (int k = 0; k < ZMETA_MAX_DIMS; k++) {
    memcpy(probe + len, "/0", 3);
    len += 2;
    if (zmeta_parse_chunk_key(n->meta, probe, idx) == 0)
      return 1;
  }
  return 0;
}

int ns_resolve(struct engine *e, const char *path, struct ns_entry *ent,
               struct zerr *err) {
  const char *key = path_key(path);
  size_t klen = strlen(key);
  if (klen >= sizeof ent->key)
    return zerr_set(err, ENAMETOOLONG, "path too long");
  memset(ent, 0, offsetof(struct ns_entry, key));
  memcpy(ent->key, key, klen + 1);
  ent->node = NULL;
  ent->raw_size = 0;
  if (!*key) {
    ent->kind = NS_DIR;
    return 0;
  }
  enum store_entry_type t;
  uint64_t size;
  int rc = store_stat(e->store, key, &t, &size, err);
  if (rc == 0) {
    ent->kind = t == STORE_DIR ? NS_DIR : NS_RAW;
    ent->raw_size = size;
    return 0;
  }
  if (rc != -ENOENT && rc != -EINVAL)
    return rc;
  zerr_clear(err);
  if (hier_is_dir(e, key)) { /* a node only consolidated metadata names */
    ent->kind = NS_DIR;
    return 0;
  }
  if (e->store->unlistable && is_chunk_prefix(e, key)) {
    ent->kind = NS_DIR;
    return 0;
  }

  char parent[4096];
  const char *base = split_parent(key, parent, sizeof parent);
  if (!strcmp(base, NS_VALUES_NAME)) {
    const struct znode *n = engine_node(e, parent);
    if (n->kind == ZNODE_ARRAY || n->kind == ZNODE_BROKEN) {
      ent->kind = NS_ARRAY_VIEW;
      ent->node = n;
      return 0;
    }
  }
  if (ends_with(key, NS_VIEW_SUFFIX)) {
    char chunk[4096];
    size_t cl = klen - strlen(NS_VIEW_SUFFIX);
    memcpy(chunk, key, cl);
    chunk[cl] = '\0';
    /* A stored chunk, or one the store holds but cannot serve (a FIFO:
     * its view exists and its reads fail with EIO, as values.txt does). */
    if (store_stat(e->store, chunk, &t, &size, NULL) == 0 && t != STORE_DIR) {
      const char *rel;
      const struct znode *n = engine_array_of(e, chunk, &rel);
      if (n && n->kind == ZNODE_ARRAY &&
          zmeta_parse_chunk_key(n->meta, rel, ent->idx) == 0) {
        ent->kind = NS_CHUNK_VIEW;
        ent->node = n;
        return 0;
      }
    }
  }
  return zerr_set(err, ENOENT, "no such file");
}

/* Stored size, or the view's computed size. */
int ns_size(struct engine *e, const struct ns_entry *ent, uint64_t *size,
            struct zerr *err) {
  switch (ent->kind) {
  case NS_DIR:
    *size = 0;
    return 0;
  case NS_RAW:
    *size = ent->raw_size;
    return 0;
  case NS_CHUNK_VIEW:
    if (e->lazy_sizes) {
      int k = view_chunk_size_known(e, ent->node, ent->idx, size, err);
      if (k == 0)
        *size = 0; /* unknown: the file is read with direct I/O */
      return k < 0 ? k : 0;
    }
    return view_chunk_size(e, ent->node, ent->idx, size, err);
  case NS_ARRAY_VIEW:
    if (e->lazy_sizes) {
      int k = view_array_size_known(e, ent->node, size, err);
      if (k == 0)
        *size = 0;
      return k < 0 ? k : 0;
    }
    return view_array_size(e, ent->node, size, err);
  }
  return zerr_set(err, EIO, "bad entry");
}

/* Dispatch a view read. */
long ns_read_view(struct engine *e, const struct ns_entry *ent, uint64_t off,
                  size_t len, char *dst, struct view_cursor *c,
                  struct zerr *err) {
  if (ent->kind == NS_CHUNK_VIEW)
    return view_chunk_read(e, ent->node, ent->idx, off, len, dst, c, err);
  if (ent->kind == NS_ARRAY_VIEW)
    return view_array_read(e, ent->node, off, len, dst, c, err);
  return zerr_set(err, EIO, "not a view");
}

/* One stored child. */
struct listing_item {
  char *name;
  int is_dir;
};

/* Collected listing of one stored directory, sorted by name. */
struct listing {
  struct listing_item *items;
  size_t n, cap;
  int oom;
};

/* store_list callback: remember each child. Entries the store holds but
 * cannot serve (FIFOs, links leaving the store) are not shown. */
static int listing_add(void *ud, const char *name, enum store_entry_type type,
                       uint64_t size) {
  (void)size;
  struct listing *l = ud;
  if (type != STORE_FILE && type != STORE_DIR)
    return 0;
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 64;
    struct listing_item *ni = realloc(l->items, nc * sizeof *ni);
    if (!ni) {
      l->oom = 1;
      return 1;
    }
    l->items = ni;
    l->cap = nc;
  }
  char *copy = strdup(name);
  if (!copy) {
    l->oom = 1;
    return 1;
  }
  l->items[l->n].name = copy;
  l->items[l->n++].is_dir = type == STORE_DIR;
  return 0;
}

/* Order items by name. */
static int item_cmp(const void *a, const void *b) {
  return strcmp(((const struct listing_item *)a)->name,
                ((const struct listing_item *)b)->name);
}

/* Free a listing. */
static void listing_free(struct listing *l) {
  for (size_t i = 0; i < l->n; i++)
    free(l->items[i].name);
  free(l->items);
}

/* Is name among the stored entries? */
static int listing_has(const struct listing *l, const char *name) {
  if (!l->n)
    return 0;
  struct listing_item probe = {(char *)name, 0};
  return bsearch(&probe, l->items, l->n, sizeof *l->items, item_cmp) != NULL;
}

/* Passes consolidated child names not already listed to the caller. */
struct cons_fill {
  const struct listing *l;
  ns_fill_cb cb;
  void *ud;
  int stop;
};

/* hier_children callback: one child directory, unless stored. */
static int cons_fill_one(void *ud, const char *name) {
  struct cons_fill *cf = ud;
  if (!listing_has(cf->l, name))
    cf->stop = cf->cb(cf->ud, name, 1);
  return cf->stop;
}

/* An unlistable store (plain HTTP) still shows a node's own metadata
 * files: each is one cached GET. */
static void listing_add_metadata(struct engine *e, const char *key,
                                 struct listing *l) {
  static const char *const names[] = {"zarr.json", ".zgroup", ".zarray",
                                      ".zattrs", ".zmetadata"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char k[4096];
    int w = *key ? snprintf(k, sizeof k, "%s/%s", key, names[i])
                 : snprintf(k, sizeof k, "%s", names[i]);
    enum store_entry_type t;
    uint64_t size;
    int found = w > 0 && (size_t)w < sizeof k &&
                store_stat(e->store, k, &t, &size, NULL) == 0 &&
                t == STORE_FILE;
    if (found)
      listing_add(l, names[i], t, size);
    if (i == 0 && found)
      break; /* V3: no V2 names beside it */
  }
}

/* Stored children, consolidated child nodes, then values.txt and K.txt
 * views. */
int ns_list(struct engine *e, const char *path, ns_fill_cb cb, void *ud,
            struct zerr *err) {
  const char *key = path_key(path);
  struct listing l = {0};
  int rc = store_list(e->store, key, listing_add, &l, err);
  if (rc == STORE_LIST_PARTIAL) { /* show what is known; reads say why */
    zerr_clear(err);
    rc = 0;
  }
  if (rc == 0 && l.oom)
    rc = zerr_set(err, ENOMEM, "out of memory listing a directory");
  if (rc < 0 && rc != -ENOMEM &&
      (e->store->unlistable || hier_is_dir(e, key) ||
       engine_node(e, key)->cons)) {
    /* The store cannot list it; consolidated metadata may (an unlistable
     * store shows what metadata names, and views). */
    listing_free(&l);
    memset(&l, 0, sizeof l);
    zerr_clear(err);
    rc = 0;
  }
  if (rc < 0) {
    listing_free(&l);
    return rc;
  }
  if (rc == 0 && e->store->unlistable)
    listing_add_metadata(e, key, &l);
  if (l.n)
    qsort(l.items, l.n, sizeof *l.items, item_cmp);

  int stop = 0;
  for (size_t i = 0; i < l.n && !stop; i++)
    stop = cb(ud, l.items[i].name, l.items[i].is_dir);
  /* Child nodes named by consolidated metadata that the store did not
   * list (a union: each name once). */
  struct cons_fill cf = {&l, cb, ud, stop};
  if (!stop && hier_children(e, key, cons_fill_one, &cf, err) < 0) {
    listing_free(&l);
    return -ENOMEM;
  }
  stop = cf.stop;

  const struct znode *n = engine_node(e, key);
  const char *rel = "";
  if (n->kind != ZNODE_ARRAY && n->kind != ZNODE_BROKEN)
    n = *key ? engine_array_of(e, key, &rel) : NULL;
  if (!stop && n && n->path && !strcmp(n->path, key) &&
      !listing_has(&l, NS_VALUES_NAME))
    stop = cb(ud, NS_VALUES_NAME, 0);
  if (n && n->kind == ZNODE_ARRAY && n->meta) {
    char relkey[4096], view[4096];
    uint64_t idx[ZMETA_MAX_DIMS];
    for (size_t i = 0; i < l.n && !stop; i++) {
      if (l.items[i].is_dir)
        continue;
      int w =
          *rel ? snprintf(relkey, sizeof relkey, "%s/%s", rel, l.items[i].name)
               : snprintf(relkey, sizeof relkey, "%s", l.items[i].name);
      if (w < 0 || (size_t)w >= sizeof relkey)
        continue;
      if (zmeta_parse_chunk_key(n->meta, relkey, idx) != 0)
        continue;
      w = snprintf(view, sizeof view, "%s%s", l.items[i].name, NS_VIEW_SUFFIX);
      if (w < 0 || (size_t)w >= sizeof view || listing_has(&l, view))
        continue;
      stop = cb(ud, view, 0);
    }
  }
  listing_free(&l);
  return 0;
}
