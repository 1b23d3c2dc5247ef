/* namespace.c - path -> stored object or view (see namespace.h). */
#define _GNU_SOURCE /* qsort_r */
#include "namespace.h"

#include <fts.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../codecs/chain.h"
#include "../../codecs/codec.h"
#include "../engine/node.h"
#include "../engine/stats.h"
#include "../views/info.h"
#include "../views/table.h"
#include "../views/view.h"
#include "history.h"

/* Drop leading slashes: FUSE paths are absolute, store keys are not. */
const char *ns_path_key(const char *path) {
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
int ns_ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a > b && !memcmp(s + a - b, suffix, b);
}

/* Does the store itself hold NS_TEXT_DIR at its root? Then it wins, as
 * every stored key does, and views=tree has no text tree. */
static int text_dir_stored(struct engine *e) {
  enum store_entry_type t;
  uint64_t size;
  if (e->store->remote)
    return 0; /* a name zarrfs makes up: the store is not asked */
  return store_stat(e->store, NS_TEXT_DIR, &t, &size, NULL) == 0;
}

/* Is /.zarrfs the mount's own (the statistics)? Not when the store holds
 * a key of that name at its root: the stored key wins (logged once).
 * A remote store is not asked: there the name is always the mount's. */
int ns_stats_dir_ours(struct engine *e) {
  enum store_entry_type t;
  uint64_t size;
  if (e->store->remote ||
      store_stat(e->store, NS_STATS_DIR, &t, &size, NULL) != 0)
    return 1;
  logonce_log(e->log, ZLOG_WARN, e->store->location, NS_STATS_DIR,
              "the store holds this key: it is served, and the statistics "
              "(" NS_STATS_DIR "/" NS_STATS_NAME ") are not");
  return 0;
}

/* /.zarrfs or /.zarrfs/stats when they are the mount's: the entry. */
static int resolve_stats(struct engine *e, const char *key,
                         struct ns_entry *ent) {
  size_t dl = strlen(NS_STATS_DIR);
  if (strncmp(key, NS_STATS_DIR, dl) ||
      (key[dl] && strcmp(key + dl, "/" NS_STATS_NAME)) || !ns_stats_dir_ours(e))
    return 0;
  ent->kind = key[dl] ? NS_STATS : NS_DIR;
  return 1;
}

/* The layout at *key, moving *key past NS_TEXT_DIR in the text tree. */
enum ns_place ns_place_of(struct engine *e, const char **key) {
  if (e->views == ENGINE_VIEWS_BESIDE)
    return NS_PLACE_BESIDE;
  if (e->views == ENGINE_VIEWS_NONE)
    return NS_PLACE_PLAIN;
  const char *k = *key;
  size_t tl = strlen(NS_TEXT_DIR);
  if (strncmp(k, NS_TEXT_DIR, tl) || (k[tl] && k[tl] != '/') ||
      text_dir_stored(e))
    return NS_PLACE_PLAIN;
  *key = k[tl] ? k + tl + 1 : k + tl;
  return NS_PLACE_TEXT;
}

/* Resolve stored objects first, then view names. */
/* A store that cannot list (plain HTTP) has no directories of its own:
 * a proper prefix of a chunk key of an array ("c", "c/1" of a 3-D array
 * with `/` separators) is a directory, so that paths to chunks resolve.
 * Probed by completing the prefix with zero indices. */
static int is_chunk_prefix(struct engine *e, const char *key) {
  const char *rel;
  const struct znode *n = node_array_of(e->nodes, key, &rel);
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

/* Is the store key dir/name (name alone at the root) a file? Then its
 * size and time. */
int ns_stored_file(struct engine *e, const char *dir, const char *name,
                   uint64_t *size, int64_t *mtime) {
  char k[4096];
  int w = *dir ? snprintf(k, sizeof k, "%s/%s", dir, name)
               : snprintf(k, sizeof k, "%s", name);
  enum store_entry_type t;
  return w > 0 && (size_t)w < sizeof k &&
         store_stat_time(e->store, k, &t, size, mtime, NULL) == 0 &&
         t == STORE_FILE;
}

/* The time of array n's metadata document (zarr.json, else .zarray; only
 * the one of its format when that is known): what its values.txt shows. */
static int64_t meta_mtime(struct engine *e, const struct znode *n) {
  static const char *const names[] = {"zarr.json", ".zarray"};
  uint64_t size;
  int64_t mtime;
  for (size_t i = 0; i < 2; i++)
    if (!(n->zarr_format == 3 && i == 1) && !(n->zarr_format == 2 && i == 0) &&
        ns_stored_file(e, n->path, names[i], &size, &mtime))
      return mtime;
  return STORE_MTIME_UNKNOWN;
}

/* Is key a node outside every array (a group or an array; its metadata
 * read, or named by consolidated metadata)? Then it is a directory, which
 * over plain HTTP is known without asking for key itself. */
static int node_is_dir(struct engine *e, const char *key) {
  const char *rel;
  if (node_cons_is_dir(e->nodes, key))
    return 1;
  if (node_array_of(e->nodes, key, &rel))
    return 0;
  return node_get(e->nodes, key)->kind != ZNODE_NONE;
}

/* Does name (len bytes) end with suffix? */
int ns_has_suffix(const char *name, size_t len, const char *suffix) {
  size_t sl = strlen(suffix);
  return len > sl && !memcmp(name + len - sl, suffix, sl);
}

/* Is name a view of array n? See namespace.h. */
int ns_view_name(const struct znode *n, const char *rel, const char *name,
                 size_t len, uint64_t *idx) {
  static const size_t sl = sizeof NS_VIEW_SUFFIX - 1;
  if (!*rel &&
      ((len == strlen(NS_VALUES_NAME) && !memcmp(name, NS_VALUES_NAME, len)) ||
       (len == strlen(NS_INFO_NAME) && !memcmp(name, NS_INFO_NAME, len))))
    return 1;
  int cf = n->kind == ZNODE_ARRAY && n->cf;
  if (!*rel && cf && len == strlen(NS_CF_VALUES_NAME) &&
      !memcmp(name, NS_CF_VALUES_NAME, len))
    return 3;
  if (!*rel && n->kind == ZNODE_ARRAY && n->csv &&
      len == strlen(NS_ROWS_NAME) && !memcmp(name, NS_ROWS_NAME, len))
    return 5;
  char k[4096];
  size_t rl = strlen(rel);
  if (n->kind != ZNODE_ARRAY || !n->meta || len <= sl ||
      memcmp(name + len - sl, NS_VIEW_SUFFIX, sl) || rl + len >= sizeof k)
    return 0;
  memcpy(k, rel, rl);
  if (cf && ns_has_suffix(name, len, NS_CF_VIEW_SUFFIX)) {
    size_t cl = len - strlen(NS_CF_VIEW_SUFFIX);
    memcpy(k + rl, name, cl);
    k[rl + cl] = '\0';
    if (zmeta_parse_chunk_key(n->meta, k, idx) == 0)
      return 4;
  }
  memcpy(k + rl, name, len - sl);
  k[rl + len - sl] = '\0';
  return zmeta_parse_chunk_key(n->meta, k, idx) == 0 ? 2 : 0;
}

/* Is chunk key (a store key) stored as a file? 1, 0, or a negative errno
 * (transient failures). Over plain HTTP a GET of it alone: a stat would go
 * on to probe a missing key for directory metadata. */
static int chunk_stored(struct engine *e, const char *chunk, int64_t *mtime,
                        struct zerr *err) {
  enum store_entry_type t;
  uint64_t size;
  int rc;
  if (e->store->unlistable) {
    struct bytesrc *b;
    rc = store_get(e->store, chunk, &b, err);
    if (rc == 0)
      bytesrc_unref(b);
    t = STORE_FILE;
  } else {
    rc = store_stat_time(e->store, chunk, &t, &size, mtime, err);
  }
  if (rc < 0 && zerr_is_transient(-rc))
    return rc;
  zerr_clear(err);
  return rc == 0 && t != STORE_DIR;
}

/* On a remote store, where each look-up is a request, the names zarrfs
 * makes up inside an array are answered from its metadata, the store never
 * asked about them (a stored key of such a name is not served there):
 * values.txt, info.txt, K.txt for a chunk key K (K itself is asked: the
 * view exists when the chunk does), and anything below one of those.
 * 0 with ent filled, 1 when key is not such a name (ask the store), or a
 * negative errno. */
static int resolve_made_up(struct engine *e, const char *key,
                           struct ns_entry *ent, struct zerr *err) {
  const char *rel;
  const struct znode *n = node_array_of(e->nodes, key, &rel);
  if (!n || !*rel)
    return 1;
  uint64_t idx[ZMETA_MAX_DIMS];
  const char *name = rel;
  for (const char *slash; (slash = strchr(name, '/')); name = slash + 1) {
    char dir[4096];
    size_t dl = (size_t)(name - rel);
    if (dl >= sizeof dir)
      return 1;
    memcpy(dir, rel, dl);
    dir[dl] = '\0';
    if (ns_view_name(n, dir, name, (size_t)(slash - name), idx))
      return zerr_set(err, ENOENT, "no such file"); /* below a view */
  }
  char dir[4096];
  size_t dl = (size_t)(name - rel);
  if (dl >= sizeof dir)
    return 1;
  memcpy(dir, rel, dl);
  dir[dl] = '\0';
  int v = ns_view_name(n, dir, name, strlen(name), idx);
  if (v == 0 && e->store->unlistable && !is_chunk_prefix(e, key)) {
    /* Below an array only chunk prefixes are directories: a GET says
     * whether the key is a file, without probing it for metadata. */
    struct bytesrc *b;
    int rc = store_get(e->store, key, &b, err);
    if (rc < 0)
      return rc;
    ent->kind = NS_RAW;
    ent->raw_size = b->size;
    bytesrc_unref(b);
    return 0;
  }
  if (v == 1 || v == 3 || v == 5) {
    ent->kind = strcmp(name, NS_INFO_NAME) ? NS_ARRAY_VIEW : NS_INFO_VIEW;
    ent->node = v == 3 ? n->cf : v == 5 ? n->csv : n;
    ent->mtime = meta_mtime(e, n);
    return 0;
  }
  if (v == 0)
    return 1;
  if (n->errcode) /* broken for now: not "no such file" */
    return zerr_set(err, n->errcode, "%s",
                    n->view_error ? n->view_error : "metadata not loaded");
  char chunk[4096];
  size_t cl = strlen(key) - strlen(v == 4 ? NS_CF_VIEW_SUFFIX : NS_VIEW_SUFFIX);
  memcpy(chunk, key, cl);
  chunk[cl] = '\0';
  int rc = chunk_stored(e, chunk, &ent->mtime, err);
  if (rc < 0)
    return rc;
  if (!rc)
    return zerr_set(err, ENOENT, "no such file");
  ent->kind = NS_CHUNK_VIEW;
  ent->node = v == 4 ? n->cf : n;
  memcpy(ent->idx, idx, sizeof idx);
  return 0;
}

/* ---- the history tree below /.zarrfs (fs/namespace/history.h) ----
 *
 * Paths below /.zarrfs of a mount that shows a history: the tree's own
 * directories and logs are entries of the mount's engine; a path inside a
 * ref's or a snapshot's tree is resolved or listed by its sub-engine. */

/* key below NS_STATS_DIR and a history shown there: its path below it,
 * else NULL. */
const char *ns_history_rel(struct engine *e, const char *key) {
  size_t dl = strlen(NS_STATS_DIR);
  if (!history_shown(e) || strncmp(key, NS_STATS_DIR, dl) ||
      (key[dl] && key[dl] != '/') || !ns_stats_dir_ours(e))
    return NULL;
  return key[dl] ? key + dl + 1 : key + dl;
}

/* 1 when key is not a history name (go on), else as ns_resolve. */
static int resolve_history(struct engine *e, const char *key,
                           struct ns_entry *ent, struct zerr *err) {
  const char *rel = ns_history_rel(e, key);
  if (!rel || !strcmp(rel, NS_STATS_NAME))
    return 1;
  struct engine *sub;
  const char *rest;
  int h = history_resolve(e, rel, &sub, &rest, err);
  if (h < 0)
    return h;
  if (h == HISTORY_TREE)
    return ns_resolve(sub, rest, ent, err);
  ent->kind = h == HISTORY_DIR ? NS_DIR : NS_HISTORY;
  return 0;
}

int ns_resolve(struct engine *e, const char *path, struct ns_entry *ent,
               struct zerr *err) {
  const char *key = ns_path_key(path);
  enum ns_place lay = ns_place_of(e, &key);
  size_t klen = strlen(key);
  if (klen >= sizeof ent->key)
    return zerr_set(err, ENAMETOOLONG, "path too long");
  for (const char *c = key; *c;) { /* names listings leave out */
    size_t cl = strcspn(c, "/");
    if (cl > NS_NAME_MAX)
      return zerr_set(err, ENAMETOOLONG, "a name longer than %d bytes",
                      NS_NAME_MAX);
    c += cl + (c[cl] == '/');
  }
  memset(ent, 0, offsetof(struct ns_entry, key));
  memcpy(ent->key, key, klen + 1);
  ent->eng = e;
  ent->node = NULL;
  ent->raw_size = 0;
  ent->mtime = STORE_MTIME_UNKNOWN;
  if (*key && key == ns_path_key(path)) {
    int h = resolve_history(e, key, ent, err);
    if (h <= 0)
      return h;
  }
  if (*key && key == ns_path_key(path) && resolve_stats(e, key, ent))
    return 0;
  enum store_entry_type t;
  uint64_t size;
  if (!*key) {
    ent->kind = NS_DIR;
    if (store_stat_time(e->store, "", &t, &size, &ent->mtime, NULL) < 0)
      ent->mtime = STORE_MTIME_UNKNOWN;
    return 0;
  }
  if (e->store->remote && lay != NS_PLACE_PLAIN) {
    int mrc = resolve_made_up(e, key, ent, err);
    if (mrc <= 0)
      return mrc;
  }
  if (e->store->unlistable &&
      (is_chunk_prefix(e, key) || node_is_dir(e, key))) {
    ent->kind = NS_DIR; /* no GET of a name that is a directory */
    return 0;
  }
  int rc = store_stat_time(e->store, key, &t, &size, &ent->mtime, err);
  if (rc == 0 && (t == STORE_DIR || lay != NS_PLACE_TEXT)) {
    ent->kind = t == STORE_DIR ? NS_DIR : NS_RAW;
    ent->raw_size = size;
    return 0;
  }
  if (rc < 0 && rc != -ENOENT && rc != -EINVAL)
    return rc;
  zerr_clear(err); /* a stored file in the text tree is hidden */
  ent->mtime = STORE_MTIME_UNKNOWN;
  /* a node only consolidated metadata names */
  if (node_cons_is_dir(e->nodes, key)) {
    ent->kind = NS_DIR;
    return 0;
  }
  if (e->store->unlistable && is_chunk_prefix(e, key)) {
    ent->kind = NS_DIR;
    return 0;
  }
  if (lay == NS_PLACE_PLAIN)
    return zerr_set(err, ENOENT, "no such file");

  char parent[4096];
  const char *base = split_parent(key, parent, sizeof parent);
  if (ns_ends_with(base, TABLE_SUFFIX)) {
    const struct znode *g = node_get(e->nodes, parent);
    int tr = g->kind == ZNODE_GROUP ? table_exists(e, g, base, err) : 0;
    if (tr < 0)
      return tr;
    if (tr) {
      ent->kind = NS_TABLE;
      ent->node = g;
      return 0;
    }
  }
  int is_info = !strcmp(base, NS_INFO_NAME);
  if (is_info || !strcmp(base, NS_VALUES_NAME)) {
    const struct znode *n = node_get(e->nodes, parent);
    if (n->kind == ZNODE_ARRAY || n->kind == ZNODE_BROKEN ||
        (is_info && n->kind == ZNODE_GROUP)) {
      ent->kind = is_info ? NS_INFO_VIEW : NS_ARRAY_VIEW;
      ent->node = n;
      ent->mtime = meta_mtime(e, n);
      return 0;
    }
  }
  if (!strcmp(base, NS_CF_VALUES_NAME) || !strcmp(base, NS_ROWS_NAME)) {
    const struct znode *n = node_get(e->nodes, parent);
    int rows = !strcmp(base, NS_ROWS_NAME);
    const struct znode *v = n->kind != ZNODE_ARRAY ? NULL
                            : rows                 ? n->csv
                                                   : n->cf;
    if (v) {
      ent->kind = NS_ARRAY_VIEW;
      ent->node = v;
      ent->mtime = meta_mtime(e, n);
      return 0;
    }
  }
  for (int cfv = 1; cfv >= 0; cfv--) {
    const char *suffix = cfv ? NS_CF_VIEW_SUFFIX : NS_VIEW_SUFFIX;
    if (!ns_ends_with(key, suffix))
      continue;
    char chunk[4096];
    size_t cl = klen - strlen(suffix);
    memcpy(chunk, key, cl);
    chunk[cl] = '\0';
    /* A stored chunk, or one the store holds but cannot serve (a FIFO:
     * its view exists and its reads fail with EIO, as values.txt does). */
    rc = store_stat_time(e->store, chunk, &t, &size, &ent->mtime, err);
    if (rc < 0 && zerr_is_transient(-rc))
      return rc; /* not "no such file": the kernel would remember that */
    if (rc == 0 && t != STORE_DIR) {
      const char *rel;
      const struct znode *n = node_array_of(e->nodes, chunk, &rel);
      if (n && n->errcode) /* broken for now: not "no such file" */
        return zerr_set(err, n->errcode, "%s",
                        n->view_error ? n->view_error : "metadata not loaded");
      if (n && n->kind == ZNODE_ARRAY && (!cfv || n->cf) &&
          zmeta_parse_chunk_key(n->meta, rel, ent->idx) == 0) {
        ent->kind = NS_CHUNK_VIEW;
        ent->node = cfv ? n->cf : n;
        return 0;
      }
    }
  }
  return zerr_set(err, ENOENT, "no such file");
}

/* A table entry's file name (D.csv). */
static const char *ns_file_of(const struct ns_entry *ent) {
  const char *file = strrchr(ent->key, '/');
  return file ? file + 1 : ent->key;
}

/* A view whose size needs a unit that fails (a bad chunk, a virtual chunk
 * not authorized) keeps the lazy rule: stat shows 0 (asked again every
 * time) and the file is read with direct I/O, so every view stays
 * openable and its reads before that unit return their text; the read
 * that reaches it fails there (logged once where it was decoded). 1 with
 * *size 0 for such a failure (err cleared), else rc. A view that cannot
 * be read at all (its metadata) and an interrupted or transient failure
 * keep their error. */
static int size_or_unknown(int fallback, const struct ns_entry *ent, int rc,
                           uint64_t *size, struct zerr *err) {
  if (!fallback || rc >= 0 || rc == -EINTR || rc == -ENOENT ||
      zerr_is_transient(-rc))
    return rc;
  const struct znode *n = ent->node;
  if (ent->kind != NS_TABLE &&
      (!n || n->kind != ZNODE_ARRAY || !n->chain || n->errcode))
    return rc;
  zerr_clear(err);
  *size = 0;
  return 1;
}

static int size_within(struct engine *e, const struct ns_entry *ent,
                       uint64_t wait_ns, int fallback, uint64_t *size,
                       struct zerr *err);

/* Stored size, or the view's computed size: a view whose size needs a
 * unit that fails is that failure here (`zarrfs stat`), not 0. */
int ns_size(struct engine *e, const struct ns_entry *ent, uint64_t *size,
            struct zerr *err) {
  int rc = size_within(e, ent, UINT64_MAX, 0, size, err);
  return rc > 0 ? 0 : rc;
}

/* See namespace.h. */
int ns_size_within(struct engine *e, const struct ns_entry *ent,
                   uint64_t wait_ns, uint64_t *size, struct zerr *err) {
  return size_within(e, ent, wait_ns, 1, size, err);
}

/* ns_size_within; fallback: a unit that fails makes the size unknown
 * (size_or_unknown), else it is the error. */
static int size_within(struct engine *e, const struct ns_entry *ent,
                       uint64_t wait_ns, int fallback, uint64_t *size,
                       struct zerr *err) {
  if (ent->eng)
    e = ent->eng;
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
      return k < 0 ? size_or_unknown(fallback, ent, k, size, err) : 0;
    }
    return size_or_unknown(fallback, ent,
                           view_chunk_size(e, ent->node, ent->idx, size, err),
                           size, err);
  case NS_ARRAY_VIEW:
    if (e->lazy_sizes) {
      int k = view_array_size_known(e, ent->node, size, err);
      if (k != 0 || !unit_sizes_from_index(ent->node)) {
        if (k == 0)
          *size = 0; /* not known: 0, asked for again by the next stat */
        return k < 0 ? k : k == 0;
      }
      /* Each unit's size is in its index ends: fetch them all at once,
       * then the size is exact (and the layout made of it is kept). */
      int rc = unit_sizes_prefetch(e, ent->node, err);
      if (rc == 0)
        rc = view_array_size(e, ent->node, size, err);
      return size_or_unknown(fallback, ent, rc, size, err);
    }
    return size_or_unknown(
        fallback, ent, view_array_size_stat(e, ent->node, wait_ns, size, err),
        size, err);
  case NS_INFO_VIEW:
  case NS_HISTORY: {
    char *text;
    size_t len;
    ZTRY(ns_text(e, ent, &text, &len, err));
    free(text);
    *size = len;
    return 0;
  }
  case NS_TABLE: {
    const char *file = strrchr(ent->key, '/');
    file = file ? file + 1 : ent->key;
    if (e->lazy_sizes) {
      int k = table_size_known(e, ent->node, file, size, err);
      if (k == 0)
        *size = 0; /* unknown: the file is read with direct I/O */
      return k < 0 ? k : 0;
    }
    int rc = table_size_stat(e, ent->node, file, size, err);
    if (rc < 0)
      return size_or_unknown(fallback, ent, rc, size, err);
    return *size == 0; /* deferred: a table has at least its header */
  }
  case NS_STATS:
    *size = 0; /* it changes with every request: read with direct I/O, each
                  open its own text (ns_text) */
    return 0;
  }
  return zerr_set(err, EIO, "bad entry");
}

/* Is ent a text made whole (info.txt and the files under /.zarrfs are
 * small): what an open keeps, so that its reads are one snapshot. */
int ns_text_whole(const struct ns_entry *ent) {
  return ent->kind == NS_INFO_VIEW || ent->kind == NS_STATS ||
         ent->kind == NS_HISTORY;
}

/* The whole text of an entry ns_text_whole says is one. */
int ns_text(struct engine *e, const struct ns_entry *ent, char **text,
            size_t *len, struct zerr *err) {
  if (ent->eng)
    e = ent->eng;
  *text = NULL;
  *len = 0;
  if (ent->kind == NS_INFO_VIEW)
    return info_text(e, ent->node, text, len, err);
  if (ent->kind == NS_HISTORY)
    return history_log_text(e, ent->key + strlen(NS_STATS_DIR) + 1, text, len,
                            err);
  if (ent->kind != NS_STATS)
    return zerr_set(err, EIO, "not a text");
  if (stats_text(&e->stats, &e->store->stats, e->memo, text, len) < 0)
    return zerr_set(err, ENOMEM, "out of memory");
  return 0;
}

/* Bytes [off, off+len) of text (tl bytes) into dst: how many. */
size_t ns_text_read(const char *text, size_t tl, uint64_t off, size_t len,
                    char *dst) {
  size_t n = off < tl ? tl - (size_t)off : 0;
  if (n > len)
    n = len;
  if (n)
    memcpy(dst, text + off, n);
  return n;
}

/* Bytes [off, off+len) of a text made whole for this read (a reader
 * without an open handle; an open keeps its own, fs/fuse_ops.c). */
static long read_text(struct engine *e, const struct ns_entry *ent,
                      uint64_t off, size_t len, char *dst, struct zerr *err) {
  char *text = NULL;
  size_t tl = 0;
  ZTRY(ns_text(e, ent, &text, &tl, err));
  size_t n = ns_text_read(text, tl, off, len, dst);
  free(text);
  return (long)n;
}

/* Dispatch a view read. */
long ns_read_view(struct engine *e, const struct ns_entry *ent, uint64_t off,
                  size_t len, char *dst, struct view_cursor *c,
                  struct zerr *err) {
  if (ent->eng)
    e = ent->eng;
  if (ent->kind == NS_CHUNK_VIEW)
    return view_chunk_read(e, ent->node, ent->idx, off, len, dst, c, err);
  if (ent->kind == NS_ARRAY_VIEW)
    return view_array_read(e, ent->node, off, len, dst, c, err);
  if (ent->kind == NS_TABLE) {
    const char *file = strrchr(ent->key, '/');
    return table_read(e, ent->node, file ? file + 1 : ent->key, off, len, dst,
                      c, err);
  }
  if (ns_text_whole(ent))
    return read_text(e, ent, off, len, dst, err);
  return zerr_set(err, EIO, "not a view");
}

/* See namespace.h. A read that fails holds no byte of the text after
 * the failure, and one shorter than the failing part reads: the longest
 * read at off that succeeds is found by halving (each failing try is a
 * remembered failure, answered at once and not logged again). */
long ns_read_before_failure(struct engine *e, const struct ns_entry *ent,
                            uint64_t off, size_t len, char *dst, long rc) {
  if (rc >= 0 || rc == -EINTR || rc == -ENOENT || zerr_is_transient((int)-rc) ||
      (ent->kind != NS_ARRAY_VIEW && ent->kind != NS_CHUNK_VIEW &&
       ent->kind != NS_TABLE))
    return rc;
  struct engine *ve = ent->eng ? ent->eng : e;
  if (ent->kind == NS_TABLE) { /* rendered in blocks: by its rows */
    struct zerr err = {0};
    long got = table_read_before_failure(ve, ent->node, ns_file_of(ent), off,
                                         len, dst, &err);
    return got > 0 ? got : rc;
  }
  size_t lo = 0, hi = len; /* lo bytes read; hi do not */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    struct zerr err = {0};
    long got = ns_read_view(e, ent, off, mid, dst, NULL, &err);
    if (got == -EINTR || (got < 0 && zerr_is_transient((int)-got)))
      return got;
    if (got >= 0 && (size_t)got < mid)
      return got; /* the text ends there (it changed meanwhile) */
    if (got >= 0)
      lo = mid;
    else
      hi = mid;
  }
  if (lo == 0)
    return rc;
  struct zerr err = {0};
  long got = ns_read_view(e, ent, off, lo, dst, NULL, &err);
  return got < 0 ? rc : got;
}

/* See namespace.h. */
void ns_unit_view_paths(struct engine *e, const struct znode *n,
                        const uint64_t *idx,
                        void (*cb)(void *ud, const char *path), void *ud) {
  if (e->views == ENGINE_VIEWS_NONE)
    return;
  const char *pre = e->views == ENGINE_VIEWS_TREE ? NS_TEXT_DIR "/" : "";
  const char *name = n->form.csv  ? NS_ROWS_NAME
                     : n->form.cf ? NS_CF_VALUES_NAME
                                  : NS_VALUES_NAME;
  char path[4200], key[4096];
  int w = snprintf(path, sizeof path, "%s%s%s%s", pre, n->path,
                   *n->path ? "/" : "", name);
  if (w > 0 && (size_t)w < sizeof path)
    cb(ud, path);
  if (n->form.csv ||
      unit_store_key(n, idx, key, sizeof key, &(struct zerr){0}) < 0)
    return; /* rows.csv has no chunk views */
  w = snprintf(path, sizeof path, "%s%s%s", pre, key,
               n->form.cf ? NS_CF_VIEW_SUFFIX : NS_VIEW_SUFFIX);
  if (w > 0 && (size_t)w < sizeof path)
    cb(ud, path);
}

/* Which sizes stat may not give: lazy sizes, the statistics, deferred
 * array views and tables. */
int ns_read_direct(struct engine *e, const struct ns_entry *ent,
                   struct zerr *err) {
  if (ent->kind == NS_STATS)
    return 1;
  if (ent->kind == NS_RAW || ent->kind == NS_DIR)
    return 0;
  if (e->lazy_sizes)
    return 1;
  struct engine *ve = ent->eng ? ent->eng : e;
  int rc = 0;
  if (ent->kind == NS_ARRAY_VIEW)
    rc = view_array_size_deferred(ve, ent->node, err);
  else if (ent->kind == NS_TABLE)
    rc = table_size_deferred(ve, ent->node, ns_file_of(ent), err);
  else if (ent->kind != NS_CHUNK_VIEW)
    return 0;
  if (rc != 0)
    return rc;
  /* a size stat gives at once: unless it needs a unit that fails
   * (size_or_unknown), whose file is read with direct I/O too */
  uint64_t size;
  return ns_size_within(e, ent, UINT64_MAX, &size, err);
}

/* Directory path dir (dl bytes) joined with name into buf. */
long ns_join(const char *dir, size_t dl, const char *name, char *buf,
             size_t cap) {
  size_t nl = strlen(name);
  size_t need = dl + (dl ? 1 : 0) + nl;
  if (need >= cap)
    return -ENAMETOOLONG;
  size_t o = 0;
  if (dl) {
    memcpy(buf, dir, dl);
    buf[dl] = '/';
    o = dl + 1;
  }
  memcpy(buf + o, name, nl + 1);
  return (long)need;
}

/* A store walked for statfs has at most this many entries: beyond, its
 * size is left unknown (0) rather than making df wait on a huge tree. */
#define USAGE_MAX_ENTRIES 200000

/* One physical walk (symbolic links not followed) of the store's
 * location, when it is a directory: remote stores and reference files are
 * unknown, their listing or targets would cost requests. */
int ns_store_usage(struct engine *e, uint64_t *bytes, uint64_t *files) {
  const char *dir = e->store->location;
  struct stat st;
  if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
    return -1;
  char *paths[] = {(char *)dir, NULL};
  FTS *fts = fts_open(paths, FTS_PHYSICAL | FTS_NOCHDIR, NULL);
  if (!fts)
    return -1;
  uint64_t n = 0, b = 0, f = 0;
  int rc = 0;
  FTSENT *en;
  while ((en = fts_read(fts))) {
    if (++n > USAGE_MAX_ENTRIES || en->fts_info == FTS_ERR ||
        en->fts_info == FTS_DNR) {
      rc = -1;
      break;
    }
    if (en->fts_info == FTS_F) {
      b += (uint64_t)en->fts_statp->st_size;
      f++;
    }
  }
  fts_close(fts);
  *bytes = b;
  *files = f;
  return rc;
}
