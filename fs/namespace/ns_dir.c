/* ns_dir.c - directory listings of the namespace (see ns_dir.h). */
#define _GNU_SOURCE /* qsort_r */
#include "ns_dir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../codecs/chain.h"
#include "../../codecs/codec.h"
#include "../engine/node.h"
#include "../engine/stats.h"
#include "../views/info.h"
#include "../views/table.h"
#include "../views/view.h"
#include "history.h"

/* ---- listings ----
 *
 * A directory is listed once into a compact table (struct ns_dir): the
 * store's children first, sorted by name and each name once, then the
 * names consolidated metadata adds, values.txt and the K.txt views. FUSE
 * reads the table by position (readdir offsets), so a listing of n names
 * costs O(n log n) once per open directory, never once per reply. */

/* One name: 24 bytes; the names live in one arena. A chunk view's size
 * learned after the listing was made (ns_dir_attr_learn) is kept here:
 * size, then attr, stored atomically (attr last, with release), while
 * other threads read the listing. */
struct ns_item {
  uint64_t size; /* with attr: what ns_size says */
  int64_t mtime; /* with attr: see struct ns_entry */
  uint32_t name; /* offset of the NUL-terminated name in names */
  uint8_t kind;  /* enum ns_kind */
  uint8_t attr;  /* 1: kind and size are all that stat says of it */
};

struct ns_dir {
  struct ns_item *items;
  size_t n, cap;
  char *names; /* arena of NUL-terminated names, at most NS_DIR_MAX_NAMES */
  size_t names_len, names_cap;
  size_t nstored;      /* items[0, nstored): the store's, sorted, unique */
  int has_view_suffix; /* some stored name ends with NS_VIEW_SUFFIX */
  int rc;              /* first failure while adding (-ENOMEM, -EFBIG) */
  const struct znode *vnode; /* the array whose views are listed, or NULL
                                (nodes live as long as the engine) */
  struct engine *veng;       /* the engine vnode belongs to (a history
                                tree's sub-engine, or the mount's) */
  char *vrel;                /* the directory below it ("" or "x/"), or NULL */
  size_t nlong;              /* names left out: longer than NS_NAME_MAX */
  size_t long_len;           /* the first one's length */
  char long_head[40];        /* its first bytes, printable (for the log) */
};

/* Names of one listing, in bytes (offsets are 32-bit). */
#define NS_DIR_MAX_NAMES ((size_t)UINT32_MAX)

/* Name of item i. */
static const char *item_name(const struct ns_dir *d, size_t i) {
  return d->names + d->items[i].name;
}

/* Note a name too long for any file system (NAME_MAX, 255 bytes): the
 * kernel fails a whole readdir reply over one such name (EIO past 1,024
 * or 4,095 bytes, as kernels differ), and no tool could name it. */
static void dir_skip_long(struct ns_dir *d, const char *name, size_t len) {
  if (d->nlong++)
    return;
  d->long_len = len;
  size_t k = 0;
  for (; k < sizeof d->long_head - 1; k++) /* the log stays one line */
    d->long_head[k] = name[k] >= 0x20 && name[k] < 0x7f ? name[k] : '?';
  d->long_head[k] = '\0';
}

/* Say once (per directory, through the engine's log) what a listing left
 * out. */
static void dir_log_skipped(struct engine *e, const char *key,
                            const struct ns_dir *d) {
  if (!d->nlong)
    return;
  char msg[256];
  snprintf(msg, sizeof msg,
           "%zu name%s longer than %d bytes left out of the listing (no "
           "file system can name %s); the first: '%s...' (%zu bytes)",
           d->nlong, d->nlong > 1 ? "s" : "", NS_NAME_MAX,
           d->nlong > 1 ? "them" : "it", d->long_head, d->long_len);
  engine_log(e, *key ? key : "/", msg);
}

/* Append a name (len bytes); sets d->rc and returns it on failure. A name
 * longer than NS_NAME_MAX is left out (dir_skip_long). */
static int dir_add(struct ns_dir *d, const char *name, size_t len,
                   enum ns_kind kind, int attr, uint64_t size, int64_t mtime) {
  if (d->rc)
    return d->rc;
  if (len > NS_NAME_MAX) {
    dir_skip_long(d, name, len);
    return 0;
  }
  if (d->names_len + len + 1 > d->names_cap) {
    if (d->names_len + len + 1 > NS_DIR_MAX_NAMES)
      return d->rc = -EFBIG;
    size_t nc = d->names_cap ? d->names_cap : 4096;
    while (nc < d->names_len + len + 1)
      nc *= 2;
    if (nc > NS_DIR_MAX_NAMES)
      nc = NS_DIR_MAX_NAMES;
    char *p = realloc(d->names, nc);
    if (!p)
      return d->rc = -ENOMEM;
    d->names = p;
    d->names_cap = nc;
  }
  if (d->n == d->cap) {
    size_t nc = d->cap ? d->cap * 2 : 64;
    struct ns_item *p = realloc(d->items, nc * sizeof *p);
    if (!p)
      return d->rc = -ENOMEM;
    d->items = p;
    d->cap = nc;
  }
  struct ns_item *it = &d->items[d->n++];
  it->name = (uint32_t)d->names_len;
  it->kind = (uint8_t)kind;
  it->attr = attr ? 1 : 0;
  it->size = attr ? size : 0;
  it->mtime = mtime;
  memcpy(d->names + d->names_len, name, len);
  d->names[d->names_len + len] = '\0';
  d->names_len += len + 1;
  return 0;
}

/* store_list callback: remember each child. Entries the store holds but
 * cannot serve (FIFOs, links leaving the store) are not shown. */
static int dir_add_stored(void *ud, const char *name,
                          enum store_entry_type type, uint64_t size,
                          int64_t mtime) {
  struct ns_dir *d = ud;
  if (type != STORE_FILE && type != STORE_DIR)
    return 0;
  size_t len = strlen(name);
  if (type == STORE_FILE && ns_ends_with(name, NS_VIEW_SUFFIX))
    d->has_view_suffix = 1;
  if (type == STORE_DIR)
    return dir_add(d, name, len, NS_DIR, 1, 0, mtime) != 0;
  return dir_add(d, name, len, NS_RAW, size != STORE_SIZE_UNKNOWN, size,
                 mtime) != 0;
}

/* Order items by name; a file before a directory of the same name. */
static int item_cmp(const void *a, const void *b, void *ud) {
  const struct ns_dir *d = ud;
  const struct ns_item *x = a, *y = b;
  int c = strcmp(d->names + x->name, d->names + y->name);
  return c ? c : (x->kind == NS_DIR) - (y->kind == NS_DIR);
}

/* Sort the stored names (stores list in any order; a sorted one costs a
 * scan) and keep each name once: a name that is both a file and a
 * directory (a kerchunk key and a prefix) is shown once, as stat resolves
 * it, so its attributes are left to stat. */
static void dir_sort_stored(struct ns_dir *d) {
  int sorted = 1;
  for (size_t i = 1; i < d->n && sorted; i++)
    sorted = item_cmp(&d->items[i - 1], &d->items[i], d) <= 0;
  if (!sorted)
    qsort_r(d->items, d->n, sizeof *d->items, item_cmp, d);
  size_t w = 0;
  for (size_t i = 0; i < d->n; i++) {
    if (w && !strcmp(item_name(d, w - 1), item_name(d, i))) {
      d->items[w - 1].attr = 0;
      continue;
    }
    d->items[w++] = d->items[i];
  }
  d->n = w;
  d->nstored = w;
}

/* The first stored item named name (a file sorts before a directory of
 * the same name), or SIZE_MAX. */
static size_t dir_find_stored(const struct ns_dir *d, const char *name) {
  size_t lo = 0, hi = d->nstored;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(item_name(d, mid), name) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < d->nstored && !strcmp(item_name(d, lo), name) ? lo : SIZE_MAX;
}

/* Is name among the stored names? */
static int dir_has_stored(const struct ns_dir *d, const char *name) {
  return dir_find_stored(d, name) != SIZE_MAX;
}

/* The time the listing gave a stored file name, else unknown. */
static int64_t dir_stored_mtime(const struct ns_dir *d, const char *name) {
  size_t i = dir_find_stored(d, name);
  return i != SIZE_MAX && d->items[i].kind == NS_RAW ? d->items[i].mtime
                                                     : STORE_MTIME_UNKNOWN;
}

/* The time of the array metadata document in the listing (zarr.json,
 * else .zarray): what values.txt and info.txt show. */
static int64_t dir_meta_mtime(const struct ns_dir *d) {
  int64_t mtime = dir_stored_mtime(d, "zarr.json");
  return mtime != STORE_MTIME_UNKNOWN ? mtime : dir_stored_mtime(d, ".zarray");
}

/* Adds consolidated child names not already stored. */
struct cons_fill {
  struct ns_dir *d;
  int attr; /* the store listed the directory: the others are directories */
};

/* node_cons_children callback: one child directory, unless stored. */
static int cons_fill_one(void *ud, const char *name) {
  struct cons_fill *cf = ud;
  if (dir_has_stored(cf->d, name))
    return 0;
  return dir_add(cf->d, name, strlen(name), NS_DIR, cf->attr, 0,
                 STORE_MTIME_UNKNOWN) != 0;
}

/* An unlistable store (plain HTTP) still shows a node's own metadata
 * files: each is one cached GET, of the names of the node's format only
 * (a V3 node has zarr.json alone; a V2 array no .zgroup or .zmetadata);
 * a directory that is no node (inside an array, or between groups) has
 * none of them. */
static void dir_add_metadata(struct engine *e, const char *key,
                             struct ns_dir *d) {
  static const char *const names[] = {"zarr.json", ".zgroup", ".zarray",
                                      ".zattrs", ".zmetadata"};
  const struct znode *n = node_get(e->nodes, key);
  if (n->kind == ZNODE_NONE)
    return;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    if ((n->zarr_format == 3 && i > 0) || (n->zarr_format == 2 && i == 0) ||
        (n->zarr_format == 2 && n->kind == ZNODE_ARRAY && (i == 1 || i == 4)) ||
        (n->zarr_format == 2 && n->kind == ZNODE_GROUP && i == 2))
      continue;
    uint64_t size;
    int64_t mtime;
    int found = ns_stored_file(e, key, names[i], &size, &mtime);
    if (found)
      dir_add_stored(d, names[i], STORE_FILE, size, mtime);
    if (i == 0 && found)
      break; /* V3: no V2 names beside it */
  }
}

/* What stat would say of a view's size, if that is known without reading
 * anything: a size already learned (exact or lazy sizes), or with lazy
 * sizes 0 for one not learned. 0 when only stat can tell: a size to
 * compute, or the size of a unit whose chain reads sizes from an index
 * (codec.h's partial decoding), which view_chunk_size_known learns by
 * reading the unit's index. */
static int view_size_cheap(struct engine *e, const struct znode *n,
                           const uint64_t *idx, uint64_t *size) {
  int k;
  if (idx) {
    if (!n->shard && (chain_partial_caps(n->chain) & CODEC_PARTIAL_INDEX))
      return 0;
    k = view_chunk_size_known(e, n, idx, size, NULL);
  } else {
    k = view_array_size_known(e, n, size, NULL);
    if (k == 0)
      return 0; /* lazy: stat says 0 until it is known (each time
                   asked, so that a seek to the end can learn it), or it
                   learns it from the units' indexes */
  }
  if (k < 0 || (k == 0 && !e->lazy_sizes))
    return 0;
  if (k == 0)
    *size = 0; /* lazy: unknown, read with direct I/O */
  return 1;
}

/* The K.txt view (and K.cf.txt, when n has CF views) of every stored file
 * K that is a chunk key of array n (rel: the directory below the array),
 * each unless a stored file of that name hides it. */
static void dir_add_views(struct engine *e, struct ns_dir *d,
                          const struct znode *n, const char *rel) {
  char relkey[4096], view[4096];
  size_t rl = strlen(rel);
  if (rl + 1 >= sizeof relkey)
    return;
  memcpy(relkey, rel, rl);
  if (rl)
    relkey[rl++] = '/';
  relkey[rl] = '\0';
  /* For ns_dir_attr: without it, a view just has no late attributes. */
  if ((d->vrel = strdup(relkey))) {
    d->vnode = n;
    d->veng = e;
  }
  const size_t sl = strlen(NS_VIEW_SUFFIX), csl = strlen(NS_CF_VIEW_SUFFIX);
  uint64_t idx[ZMETA_MAX_DIMS];
  for (size_t i = 0; i < d->nstored && !d->rc; i++) {
    if (d->items[i].kind == NS_DIR)
      continue;
    const char *name = item_name(d, i);
    size_t nl = strlen(name);
    if (rl + nl >= sizeof relkey || nl + sl >= sizeof view)
      continue;
    memcpy(relkey + rl, name, nl + 1);
    if (zmeta_parse_chunk_key(n->meta, relkey, idx) != 0)
      continue;
    memcpy(view, name, nl);
    memcpy(view + nl, NS_VIEW_SUFFIX, sl + 1);
    uint64_t size = 0;
    int attr;
    if (!d->has_view_suffix || !dir_has_stored(d, view)) {
      attr = view_size_cheap(e, n, idx, &size);
      dir_add(d, view, nl + sl, NS_CHUNK_VIEW, attr, size, d->items[i].mtime);
    }
    if (!n->cf || nl + csl >= sizeof view)
      continue;
    memcpy(view + nl, NS_CF_VIEW_SUFFIX, csl + 1);
    if (d->has_view_suffix && dir_has_stored(d, view))
      continue;
    attr = view_size_cheap(e, n->cf, idx, &size);
    dir_add(d, view, nl + csl, NS_CHUNK_VIEW, attr, size, d->items[i].mtime);
  }
}

/* The text tree shows no stored file: drop them (after the views that
 * stored chunks give were added). */
static void dir_drop_files(struct ns_dir *d) {
  size_t w = 0;
  for (size_t i = 0; i < d->n; i++)
    if (d->items[i].kind != NS_RAW)
      d->items[w++] = d->items[i];
  d->n = w;
}

/* On a remote store the names zarrfs makes up inside array n win over
 * stored keys of the same name (resolve_made_up): drop such stored files
 * from the listing of n's directory rel ("" or "x/"), and /.zarrfs at the
 * root, so that a name is listed as it resolves. */
static void dir_drop_made_up(struct ns_dir *d, const struct znode *n,
                             const char *rel, int root) {
  uint64_t idx[ZMETA_MAX_DIMS];
  size_t w = 0, dropped = 0;
  for (size_t i = 0; i < d->n; i++) {
    const char *name = item_name(d, i);
    if (i < d->nstored && ((d->items[i].kind != NS_DIR && n &&
                            ns_view_name(n, rel, name, strlen(name), idx)) ||
                           (root && !strcmp(name, NS_STATS_DIR)))) {
      dropped++;
      continue;
    }
    d->items[w++] = d->items[i];
  }
  d->n = w;
  d->nstored -= dropped;
}

/* What history_dir_add adds to: the listing, and whether its
 * directories are trees (a ref's or a snapshot's). */
struct history_fill {
  struct ns_dir *d;
  int trees;
};

/* One name of a history directory, as a stored one (sorted after). A
 * tree whose commit time the listing does not know goes without
 * attributes: its stat (a LOOKUP) reads the snapshot and says its time,
 * not the mount's. */
static int history_dir_add(void *ud, const char *name, int is_dir,
                           int64_t mtime) {
  const struct history_fill *f = ud;
  int attr = is_dir && (!f->trees || mtime != STORE_MTIME_UNKNOWN);
  return dir_add(f->d, name, strlen(name), is_dir ? NS_DIR : NS_HISTORY, attr,
                 0, mtime) != 0;
}

/* 1 when key is not a history name (go on), else as ns_dir_open. */
static int dir_open_history(struct engine *e, const char *key,
                            struct ns_dir **out, struct zerr *err) {
  const char *rel = ns_history_rel(e, key);
  if (!rel || !strcmp(rel, NS_STATS_NAME))
    return 1;
  struct engine *sub;
  const char *rest;
  int h = history_resolve(e, rel, &sub, &rest, err);
  if (h < 0)
    return h;
  if (h == HISTORY_TREE)
    return ns_dir_open(sub, rest, out, err);
  if (h != HISTORY_DIR)
    return zerr_set(err, ENOTDIR, "not a directory");
  struct ns_dir *d = calloc(1, sizeof *d);
  if (!d)
    return zerr_set(err, ENOMEM, "out of memory listing a directory");
  if (!*rel) /* a failure is kept in d->rc */
    dir_add(d, NS_STATS_NAME, strlen(NS_STATS_NAME), NS_STATS, 1, 0,
            STORE_MTIME_UNKNOWN);
  struct history_fill f = {d, *rel != '\0'};
  int rc = history_list(e, rel, history_dir_add, &f, err);
  if (rc == 0 && d->rc)
    rc = d->rc == -EFBIG
             ? zerr_set(err, EFBIG, "directory listing too large")
             : zerr_set(err, ENOMEM, "out of memory listing a directory");
  if (rc < 0) {
    ns_dir_free(d);
    return rc;
  }
  dir_sort_stored(d);
  dir_log_skipped(e, key, d);
  *out = d;
  return 0;
}

/* Is name a stored directory of the listing? */
static int dir_has_stored_dir(const struct ns_dir *d, const char *name) {
  for (size_t i = 0; i < d->nstored; i++)
    if (d->items[i].kind == NS_DIR && !strcmp(item_name(d, i), name))
      return 1;
  return 0;
}

/* What a group's tables are listed with. */
struct table_fill {
  struct ns_dir *d;
  enum ns_place lay;
};

/* table_list callback: D.csv, unless the store holds that name (a stored
 * file or directory wins, as for every view). */
static int table_fill_one(void *ud, const char *file) {
  struct table_fill *tf = ud;
  if (tf->lay == NS_PLACE_TEXT ? dir_has_stored_dir(tf->d, file)
                               : dir_has_stored(tf->d, file))
    return 0;
  return dir_add(tf->d, file, strlen(file), NS_TABLE, 0, 0,
                 STORE_MTIME_UNKNOWN);
}

/* A directory of a group the store cannot list (why: the store's reason)
 * and no consolidated metadata names the members of: said once, with how
 * to have it listed. Inside an array nothing would list more. */
static void note_unlisted(struct engine *e, const char *key, const char *why) {
  const char *rel;
  const struct znode *n = node_get(e->nodes, key);
  if (n->cons || n->kind == ZNODE_ARRAY || n->kind == ZNODE_BROKEN ||
      (*key && node_cons_is_dir(e->nodes, key)) ||
      node_array_of(e->nodes, key, &rel))
    return;
  char msg[LOGONCE_LINE_MAX];
  snprintf(msg, sizeof msg,
           "not listed (%s): only what metadata names is shown; serve "
           "directory index pages, or consolidate the store's metadata "
           "(zarr.consolidate_metadata) to list every node",
           why);
  logonce_note(e->log, ZLOG_WARN, e->store->location, key, msg);
}

int ns_dir_open(struct engine *e, const char *path, struct ns_dir **out,
                struct zerr *err) {
  const char *key = ns_path_key(path);
  enum ns_place lay = ns_place_of(e, &key);
  struct ns_dir *d = calloc(1, sizeof *d);
  if (!d)
    return zerr_set(err, ENOMEM, "out of memory listing a directory");
  if (key == ns_path_key(path)) {
    int h = dir_open_history(e, key, out, err);
    if (h <= 0) {
      ns_dir_free(d);
      return h;
    }
  }
  if (key == ns_path_key(path) && !strcmp(key, NS_STATS_DIR) &&
      ns_stats_dir_ours(e)) {
    if (dir_add(d, NS_STATS_NAME, strlen(NS_STATS_NAME), NS_STATS, 1, 0,
                STORE_MTIME_UNKNOWN)) {
      ns_dir_free(d);
      return zerr_set(err, ENOMEM, "out of memory listing a directory");
    }
    *out = d;
    return 0;
  }
  int rc = store_list(e->store, key, dir_add_stored, d, err);
  int listed = rc == 0 && !e->store->unlistable;
  if (rc == STORE_LIST_PARTIAL) { /* show what is known; reads say why */
    zerr_clear(err);
    rc = 0;
  }
  if (rc == 0 && d->rc)
    rc = d->rc == -EFBIG
             ? zerr_set(err, EFBIG, "directory listing too large")
             : zerr_set(err, ENOMEM, "out of memory listing a directory");
  if (rc < 0 && rc != -ENOMEM && rc != -EFBIG &&
      (e->store->unlistable || node_cons_is_dir(e->nodes, key) ||
       node_get(e->nodes, key)->cons)) {
    /* The store cannot list it; consolidated metadata may (an unlistable
     * store shows what metadata names, and views). */
    if (e->store->unlistable)
      note_unlisted(e, key, err->msg);
    d->n = 0;
    d->names_len = 0;
    d->rc = 0;
    d->has_view_suffix = 0;
    zerr_clear(err);
    rc = 0;
  }
  if (rc < 0) {
    ns_dir_free(d);
    return rc;
  }
  if (e->store->unlistable)
    dir_add_metadata(e, key, d);
  dir_sort_stored(d);

  /* Child nodes named by consolidated metadata that the store did not
   * list (a union: each name once). */
  struct cons_fill cf = {d, listed};
  if (node_cons_children(e->nodes, key, cons_fill_one, &cf, err) < 0 && !d->rc)
    d->rc = -ENOMEM;

  const struct znode *n = node_get(e->nodes, key);
  const char *rel = "";
  if (n->kind != ZNODE_ARRAY && n->kind != ZNODE_BROKEN)
    n = *key ? node_array_of(e->nodes, key, &rel) : NULL;
  if (lay == NS_PLACE_PLAIN) {
    n = NULL; /* no views */
    if (e->views == ENGINE_VIEWS_TREE && !*key &&
        !dir_has_stored(d, NS_TEXT_DIR))
      dir_add(d, NS_TEXT_DIR, strlen(NS_TEXT_DIR), NS_DIR, 1, 0,
              STORE_MTIME_UNKNOWN);
  } else if (lay == NS_PLACE_TEXT) {
    d->has_view_suffix = 0; /* stored files hide no view: they are hidden */
  }
  if (e->store->remote && lay != NS_PLACE_PLAIN) {
    char vrel[4096];
    size_t rl = strlen(rel);
    if (rl + 2 <= sizeof vrel) {
      memcpy(vrel, rel, rl);
      if (rl)
        vrel[rl++] = '/';
      vrel[rl] = '\0';
      dir_drop_made_up(d, n, vrel, !*key);
    }
  }
  if (n && n->errcode) { /* broken for now (out of memory): no listing
                            without its views */
    rc = zerr_set(err, n->errcode, "%s",
                  n->view_error ? n->view_error : "metadata not loaded");
    ns_dir_free(d);
    return rc;
  }
  if (n && n->path && !strcmp(n->path, key) &&
      !(lay == NS_PLACE_TEXT ? dir_has_stored_dir(d, NS_VALUES_NAME)
                             : dir_has_stored(d, NS_VALUES_NAME))) {
    uint64_t size = 0;
    int attr = n->kind == ZNODE_ARRAY && view_size_cheap(e, n, NULL, &size);
    dir_add(d, NS_VALUES_NAME, strlen(NS_VALUES_NAME), NS_ARRAY_VIEW, attr,
            size, dir_meta_mtime(d));
  }
  if (n && n->kind == ZNODE_ARRAY && n->cf && !strcmp(n->path, key) &&
      !(lay == NS_PLACE_TEXT ? dir_has_stored_dir(d, NS_CF_VALUES_NAME)
                             : dir_has_stored(d, NS_CF_VALUES_NAME))) {
    uint64_t size = 0;
    int attr = view_size_cheap(e, n->cf, NULL, &size);
    dir_add(d, NS_CF_VALUES_NAME, strlen(NS_CF_VALUES_NAME), NS_ARRAY_VIEW,
            attr, size, dir_meta_mtime(d));
  }
  if (n && n->kind == ZNODE_ARRAY && n->csv && !strcmp(n->path, key) &&
      !(lay == NS_PLACE_TEXT ? dir_has_stored_dir(d, NS_ROWS_NAME)
                             : dir_has_stored(d, NS_ROWS_NAME))) {
    uint64_t size = 0;
    int attr = view_size_cheap(e, n->csv, NULL, &size);
    dir_add(d, NS_ROWS_NAME, strlen(NS_ROWS_NAME), NS_ARRAY_VIEW, attr, size,
            dir_meta_mtime(d));
  }
  if (n && n->path && !strcmp(n->path, key) &&
      !(lay == NS_PLACE_TEXT ? dir_has_stored_dir(d, NS_INFO_NAME)
                             : dir_has_stored(d, NS_INFO_NAME)))
    dir_add(d, NS_INFO_NAME, strlen(NS_INFO_NAME), NS_INFO_VIEW, 0, 0,
            dir_meta_mtime(d));
  if (!n && lay != NS_PLACE_PLAIN &&
      node_get(e->nodes, key)->kind == ZNODE_GROUP &&
      !(lay == NS_PLACE_TEXT ? dir_has_stored_dir(d, NS_INFO_NAME)
                             : dir_has_stored(d, NS_INFO_NAME)))
    dir_add(d, NS_INFO_NAME, strlen(NS_INFO_NAME), NS_INFO_VIEW, 0, 0,
            STORE_MTIME_UNKNOWN);
  if (!n && lay != NS_PLACE_PLAIN) {
    struct table_fill tf = {d, lay};
    rc = table_list(e, node_get(e->nodes, key), table_fill_one, &tf, err);
    if (rc < 0) {
      ns_dir_free(d);
      return rc;
    }
  }
  if (n && n->kind == ZNODE_ARRAY && n->meta)
    dir_add_views(e, d, n, rel);
  if (lay == NS_PLACE_TEXT)
    dir_drop_files(d);
  if (d->rc) {
    rc = d->rc == -EFBIG
             ? zerr_set(err, EFBIG, "directory listing too large")
             : zerr_set(err, ENOMEM, "out of memory listing a directory");
    ns_dir_free(d);
    return rc;
  }
  dir_log_skipped(e, key, d);
  if (d->n && d->n < d->cap) { /* it may be kept open for long: fit */
    struct ns_item *p = realloc(d->items, d->n * sizeof *p);
    if (p) {
      d->items = p;
      d->cap = d->n;
    }
  }
  *out = d;
  return 0;
}

size_t ns_dir_count(const struct ns_dir *d) { return d->n; }

void ns_dir_get(const struct ns_dir *d, size_t i, struct ns_dirent *out) {
  const struct ns_item *it = &d->items[i];
  out->name = d->names + it->name;
  out->kind = (enum ns_kind)it->kind;
  out->attr = __atomic_load_n(&it->attr, __ATOMIC_ACQUIRE);
  out->size = __atomic_load_n(&it->size, __ATOMIC_RELAXED);
  out->mtime = it->mtime;
}

/* Decoded bytes reckoned per unit learned beside its data: the read, the
 * decoder's and the memo's work on a unit of a few elements. */
#define NS_DIR_LEARN_UNIT 4096u

/* What learning the size of a unit of n costs against a budget: its
 * decoded bytes (variable-length elements reckoned at 16 bytes) and a
 * unit's own work. */
static uint64_t learn_cost(const struct znode *n) {
  uint64_t item = n->meta->dtype.size ? n->meta->dtype.size : 16;
  uint64_t nelem = n->meta->chunk_nelem;
  if (nelem > (UINT64_MAX - NS_DIR_LEARN_UNIT) / item)
    return UINT64_MAX;
  return nelem * item + NS_DIR_LEARN_UNIT;
}

/* The size stat says for chunk view idx of vn, learned as ns_size learns
 * it (decoding the unit, or with lazy sizes reading its index), its cost
 * (which fits) taken from *budget: 1 and *size, else 0 (a failure: stat
 * says why). */
static int view_size_learn(struct engine *e, const struct znode *vn,
                           const uint64_t *idx, uint64_t *budget,
                           uint64_t *size) {
  *budget -= learn_cost(vn);
  struct zerr err = {0};
  if (!e->lazy_sizes)
    return view_chunk_size(e, vn, idx, size, &err) == 0;
  int k = view_chunk_size_known(e, vn, idx, size, &err);
  if (k == 0)
    *size = 0; /* unknown: read with direct I/O */
  return k >= 0;
}

/* ns_dir_attr, and with budget non-NULL ns_dir_attr_learn. */
static void dir_attr(const struct ns_dir *d, struct ns_dirent *de,
                     uint64_t *budget) {
  if (de->attr || !d->vnode)
    return;
  struct engine *e = d->veng;
  uint64_t idx[ZMETA_MAX_DIMS], size = 0;
  size_t nl = strlen(de->name);
  int cfv = d->vnode->cf && ns_has_suffix(de->name, nl, NS_CF_VIEW_SUFFIX);
  const struct znode *vn = cfv ? d->vnode->cf : d->vnode;
  if (d->vnode->csv && !strcmp(de->name, NS_ROWS_NAME))
    vn = d->vnode->csv;
  if (de->kind == NS_ARRAY_VIEW) {
    de->attr = view_size_cheap(e, vn, NULL, &size);
  } else if (de->kind == NS_CHUNK_VIEW) {
    char key[4096];
    size_t rl = strlen(d->vrel),
           sl = strlen(cfv ? NS_CF_VIEW_SUFFIX : NS_VIEW_SUFFIX);
    if (nl <= sl || rl + nl - sl >= sizeof key)
      return;
    memcpy(key, d->vrel, rl);
    memcpy(key + rl, de->name, nl - sl);
    key[rl + nl - sl] = '\0';
    if (zmeta_parse_chunk_key(d->vnode->meta, key, idx) != 0)
      return;
    /* learning looks the size up first: no separate look-up before */
    int learn = budget && learn_cost(vn) <= *budget;
    de->attr = learn ? view_size_learn(e, vn, idx, budget, &size)
                     : view_size_cheap(e, vn, idx, &size);
  }
  if (de->attr)
    de->size = size;
}

/* A view listed without attributes: its size may have been learned since
 * (values.txt was stat'ed): only memo look-ups, never a decode. The
 * listing's engine serves its views (e is the mount's: a history tree's
 * views are its sub-engine's). */
void ns_dir_attr(struct engine *e, const struct ns_dir *d,
                 struct ns_dirent *de) {
  (void)e;
  dir_attr(d, de, NULL);
}

/* See ns_dir.h. */
void ns_dir_attr_learn(struct ns_dir *d, size_t i, struct ns_dirent *de,
                       uint64_t *budget) {
  dir_attr(d, de, budget);
  struct ns_item *it = &d->items[i];
  if (de->attr && de->kind == NS_CHUNK_VIEW &&
      !__atomic_load_n(&it->attr, __ATOMIC_ACQUIRE)) {
    __atomic_store_n(&it->size, de->size, __ATOMIC_RELAXED);
    __atomic_store_n(&it->attr, 1, __ATOMIC_RELEASE);
  }
}

void ns_dir_free(struct ns_dir *d) {
  if (!d)
    return;
  free(d->vrel);
  free(d->items);
  free(d->names);
  free(d);
}

/* Stored children, consolidated child nodes, then values.txt and K.txt
 * views, through cb. */
int ns_list(struct engine *e, const char *path, ns_fill_cb cb, void *ud,
            struct zerr *err) {
  struct ns_dir *d;
  ZTRY(ns_dir_open(e, path, &d, err));
  for (size_t i = 0; i < d->n; i++)
    if (cb(ud, item_name(d, i), d->items[i].kind == NS_DIR))
      break;
  ns_dir_free(d);
  return 0;
}
