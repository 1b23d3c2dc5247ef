/* store_vzarr.c - VirtualiZarr chunk manifests: a store decorator over the
 * local store. An array whose zarr.json carries the storage transformer
 * {"name": "chunk-manifest-json", "configuration": {"manifest":
 * "./manifest.json"}} takes its chunks from that manifest: {"0.0.0":
 * {"path", "offset", "length"}, ...}, exposed under the array's own chunk
 * key encoding ("c/0/0/0", "c.0.0.0", "0.0.0", ...). A missing entry or
 * path "" is a missing chunk (fill value); {"path": "__inlined__", "data":
 * BASE64} is inline bytes. Target paths are relative to the manifest, or
 * absolute, or file:// URLs, read only under the allowed roots; so is
 * manifest.json itself (zarr.json may name any path). The manifest and its
 * targets may be http(s)://, s3://, gs:// or az:// URLs (read through the
 * confine's remote context, under its rules for remote targets: those of
 * kerchunk references, redirects included); a manifest named by a URL
 * names no local file, and over a remote store, relative paths are URLs
 * too, resolved against the array's URL and the manifest's (dot segments
 * removed, never above the host's root), and no local file may be named.
 *
 * In such an array the chunk key space ("c", "c/...", "c.i.j"; v2 keys:
 * names starting with a digit) is the manifest's alone: a stray chunk file
 * beside it is neither listed nor served. zarr.json, manifest.json and
 * any other stored file stay visible as they are.
 *
 * Arrays are found at open by walking group directories only (an array's
 * directory is never descended, so chunk trees cost nothing), and in the
 * consolidated metadata of the zarr.json documents read on the way. A
 * store that cannot be listed (plain HTTP) is walked at its root only;
 * its other arrays are found when their zarr.json is read through this
 * store (the engine reads a node's metadata before its chunks), at no
 * extra request. Each
 * manifest is parsed on first use, under the array's mutex, into the
 * compact table of src/store/manifest.h. A manifest that cannot be read makes
 * that array's chunk keys fail with EIO and the reason (also a missing
 * configuration.manifest, a manifest URL of another scheme, a chunk key
 * without one index
 * per dimension); everything else keeps serving. Duplicate keys in a
 * manifest fail that key with EIO (jdup.h) rather than keeping the last,
 * and so does a target path with a NUL byte inside (never truncated). A
 * transient failure to read a manifest (EMFILE, ENOMEM) is not remembered:
 * the next access loads it again. */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json/jdup.h"
#include "../json/zjson.h"
#include "../net/remote.h"
#include "../util/base64.h"
#include "../util/log.h"
#include "../zarr/meta.h"
#include "manifest.h"
#include "store.h"

#define VZ_MAX_DEPTH 32
#define VZ_MAX_META (16u << 20)

/* One array with a chunk manifest (allocated alone: its address is stable
 * while the registry grows). */
struct vz_array {
  char *prefix;   /* store key of the array directory ("" = root) */
  char *manifest; /* absolute path of manifest.json */
  char sep;       /* chunk key separator */
  int v2;         /* v2 encoding: no "c" prefix */
  int ndim;       /* from shape; -1 when unknown (the engine reports it) */
  pthread_mutex_t lock;
  int loaded;         /* under lock: 1 once tried */
  struct manifest *m; /* NULL when loading failed */
  char why[512];      /* the failure */
};

struct store_vzarr {
  struct store base;
  struct store *inner; /* owned */
  const struct confine *c;
  char *root; /* absolute path or URL of the store root */
  int lazy;   /* inner cannot list: arrays learned as their zarr.json is
                 read */
  pthread_rwlock_t alock; /* guards arrays, n, cap (not the arrays) */
  struct vz_array **arrays;
  size_t n, cap;
};

/* The array at prefix, or NULL; under alock. */
static struct vz_array *vz_at(const struct store_vzarr *v, const char *prefix) {
  for (size_t i = 0; i < v->n; i++)
    if (!strcmp(v->arrays[i]->prefix, prefix))
      return v->arrays[i];
  return NULL;
}

/* Free one array. */
static void vz_array_free(struct vz_array *a) {
  if (!a)
    return;
  manifest_free(a->m);
  free(a->prefix);
  free(a->manifest);
  pthread_mutex_destroy(&a->lock);
  free(a);
}

/* Register a (taken over): freed instead when an array at its prefix is
 * known already. */
static int vz_add(struct store_vzarr *v, struct vz_array *a, struct zerr *err) {
  pthread_rwlock_wrlock(&v->alock);
  int rc = 0;
  struct vz_array **na = v->arrays;
  size_t nc = v->cap;
  int known = vz_at(v, a->prefix) != NULL;
  if (!known && v->n == v->cap) {
    nc = v->cap ? v->cap * 2 : 4;
    na = realloc(v->arrays, nc * sizeof *na);
  }
  if (known) {
    vz_array_free(a);
  } else if (!na) {
    vz_array_free(a);
    rc = zerr_set(err, ENOMEM, "out of memory");
  } else {
    v->arrays = na;
    v->cap = nc;
    v->arrays[v->n++] = a;
  }
  pthread_rwlock_unlock(&v->alock);
  return rc;
}

/* The manifest's location: as named when absolute (a path or a URL),
 * else relative to the array's directory (a URL join over a remote
 * store). malloc'd or NULL. */
static char *vz_manifest_at(const struct store_vzarr *v, const char *prefix,
                            const char *mpath) {
  char *out = NULL;
  if (mpath[0] == '/' || remote_is_url(mpath))
    return strdup(mpath);
  if (strstr(v->root, "://")) {
    char *dir = NULL;
    if (asprintf(&dir, "%s%s%s", v->root, *prefix ? "/" : "", prefix) < 0)
      return NULL;
    out = manifest_url_join(dir, mpath);
    free(dir);
    return out;
  }
  if (asprintf(&out, "%s%s%s/%s", v->root, *prefix ? "/" : "", prefix, mpath) <
      0)
    return NULL;
  return out;
}

/* Does this node document name the manifest transformer? Registers the
 * array. */
static int vz_parse_node(struct store_vzarr *v, const char *prefix,
                         json_t *root, int *is_array, struct zerr *err) {
  *is_array = !strcmp(
      json_string_value(json_object_get(root, "node_type")) ?: "", "array");
  json_t *st = json_object_get(root, "storage_transformers"), *t;
  size_t i;
  const char *mpath = NULL;
  int named = 0;     /* the transformer is there, with or without a manifest */
  int mpath_nul = 0; /* the manifest path has a NUL byte inside */
  json_array_foreach(st, i, t) {
    if (!json_is_object(t) ||
        strcmp(json_string_value(json_object_get(t, "name")) ?: "",
               "chunk-manifest-json"))
      continue;
    named = 1;
    json_t *jm =
        json_object_get(json_object_get(t, "configuration"), "manifest");
    mpath = json_string_value(jm);
    mpath_nul = mpath && strlen(mpath) != json_string_length(jm);
  }
  if (!*is_array || !named)
    return 0;
  /* Without a usable manifest path the array's chunks fail with the
   * reason (never the fill value in silence). */
  const char *why = NULL;
  if (!mpath || !*mpath) {
    why = "storage transformer chunk-manifest-json names no manifest "
          "(configuration.manifest)";
    mpath = "manifest.json";
  } else if (mpath_nul) {
    why = "the manifest path contains a NUL byte";
  } else if (strstr(mpath, "://") && strncmp(mpath, "file://", 7) &&
             !remote_is_url(mpath)) {
    why = "manifest URL scheme not supported (http, https, s3, gs, az)";
  }
  json_t *cke = json_object_get(root, "chunk_key_encoding");
  const char *ename =
      json_string_value(json_object_get(cke, "name")) ?: "default";
  const char *sep = json_string_value(
      json_object_get(json_object_get(cke, "configuration"), "separator"));
  int v2 = !strcmp(ename, "v2");
  struct vz_array *a = calloc(1, sizeof *a);
  if (!a)
    return zerr_set(err, ENOMEM, "out of memory");
  if (!strncmp(mpath, "file://", 7))
    mpath += 7;
  a->prefix = strdup(prefix);
  a->manifest = vz_manifest_at(v, prefix, mpath);
  a->sep = sep && *sep ? sep[0] : (v2 ? '.' : '/');
  a->v2 = v2;
  json_t *shape = json_object_get(root, "shape");
  a->ndim = json_is_array(shape) ? (int)json_array_size(shape) : -1;
  pthread_mutex_init(&a->lock, NULL);
  if (!a->prefix || !a->manifest) {
    vz_array_free(a);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  if (why) {
    a->loaded = 1;
    snprintf(a->why, sizeof a->why, "%s%szarr.json: %s", prefix,
             *prefix ? "/" : "", why);
  }
  return vz_add(v, a, err);
}

/* The arrays a V3 group's consolidated metadata describes (REL: DOC, REL
 * relative to the group at prefix). */
static int vz_consolidated(struct store_vzarr *v, const char *prefix,
                           json_t *root, struct zerr *err) {
  json_t *md = json_object_get(json_object_get(root, "consolidated_metadata"),
                               "metadata");
  const char *rel;
  json_t *doc;
  json_object_foreach(md, rel, doc) {
    if (!json_is_object(doc) || !*rel || strstr(rel, "..") || rel[0] == '/')
      continue;
    char *p = NULL;
    if (asprintf(&p, "%s%s%s", prefix, *prefix ? "/" : "", rel) < 0)
      return zerr_set(err, ENOMEM, "out of memory");
    int is_array;
    int rc = vz_parse_node(v, p, doc, &is_array, err);
    free(p);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* A zarr.json document at prefix: its array, or the arrays its
 * consolidated metadata names. */
static int vz_parse_array(struct store_vzarr *v, const char *prefix,
                          const char *text, size_t len, int *is_array,
                          struct zerr *err) {
  struct zerr je = {0};
  *is_array = 0;
  json_t *root = zjson_loadb(text, len, &je);
  if (!root) /* bad metadata is not ours to judge: the engine reports it */
    return je.code == ENOMEM ? zerr_set(err, ENOMEM, "%s: %s", prefix, je.msg)
                             : 0;
  int rc = vz_parse_node(v, prefix, root, is_array, err);
  if (rc == 0 && !*is_array)
    rc = vz_consolidated(v, prefix, root, err);
  json_decref(root);
  return rc;
}

/* A store that cannot be listed: when key is a node's zarr.json outside
 * every known array, learn the array it may describe (its bytes are
 * cached by the read that asked for it). */
static void vz_learn(struct store_vzarr *v, const char *key) {
  size_t n = strlen(key);
  if (!v->lazy || n < 9 || strcmp(key + n - 9, "zarr.json") ||
      (n > 9 && key[n - 10] != '/'))
    return;
  char *dir = strndup(key, n > 9 ? n - 10 : 0);
  if (!dir)
    return;
  pthread_rwlock_rdlock(&v->alock);
  int known = vz_at(v, dir) != NULL;
  for (size_t i = 0; i < v->n && !known; i++) {
    size_t pl = strlen(v->arrays[i]->prefix);
    known = !pl || (!strncmp(dir, v->arrays[i]->prefix, pl) && dir[pl] == '/');
  }
  pthread_rwlock_unlock(&v->alock);
  uint8_t *text;
  size_t len;
  struct zerr e = {0};
  int is_array;
  if (!known &&
      store_read_all(v->inner, key, VZ_MAX_META, &text, &len, &e) == 0) {
    if (vz_parse_array(v, dir, (const char *)text, len, &is_array, &e) < 0)
      zlog(ZLOG_WARN, "%s: %s", key, e.msg);
    free(text);
  }
  free(dir);
}

/* Walk dir (a store key) for arrays: read its zarr.json; descend groups
 * and plain directories, never arrays or V2 arrays. */
struct walk {
  struct store_vzarr *v;
  const char *dir;
  int depth;
  struct zerr *err;
  int rc;
};

static int vz_walk(struct store_vzarr *v, const char *dir, int depth,
                   struct zerr *err);

/* List callback: descend into subdirectories (files and STORE_OTHER
 * entries are no nodes to walk). */
static int vz_walk_child(void *ud, const char *name, enum store_entry_type type,
                         uint64_t size, int64_t mtime) {
  (void)size;
  (void)mtime;
  struct walk *w = ud;
  if (type != STORE_DIR)
    return 0;
  char *sub;
  if (asprintf(&sub, "%s%s%s", w->dir, *w->dir ? "/" : "", name) < 0) {
    w->rc = zerr_set(w->err, ENOMEM, "out of memory");
    return 1;
  }
  w->rc = vz_walk(w->v, sub, w->depth + 1, w->err);
  free(sub);
  return w->rc != 0;
}

static int vz_walk(struct store_vzarr *v, const char *dir, int depth,
                   struct zerr *err) {
  if (depth > VZ_MAX_DEPTH)
    return 0;
  char key[4200];
  struct zerr e2 = {0};
  uint8_t *text;
  size_t len;
  /* zarr.json first, as nodes are read (fs/engine/node.c): a V3 node is asked
   * about no V2 file (over HTTP each is a request). */
  snprintf(key, sizeof key, "%s%szarr.json", dir, *dir ? "/" : "");
  int rrc = store_read_all(v->inner, key, VZ_MAX_META, &text, &len, &e2);
  if (rrc == 0) {
    int is_array = 0;
    int rc = vz_parse_array(v, dir, (const char *)text, len, &is_array, err);
    free(text);
    if (rc || is_array)
      return rc;
  } else if (rrc == -ENOMEM) { /* not "no manifest here" */
    return zerr_set(err, ENOMEM, "%s: %s", key, e2.msg);
  } else {
    snprintf(key, sizeof key, "%s%s.zarray", dir, *dir ? "/" : "");
    enum store_entry_type ty;
    uint64_t sz;
    if (store_stat(v->inner, key, &ty, &sz, &e2) == 0)
      return 0; /* a V2 array: nothing below is a node */
  }
  if (v->lazy) /* no listing: arrays are learned as they are read */
    return 0;
  struct walk w = {v, dir, depth, err, 0};
  if (store_list(v->inner, dir, vz_walk_child, &w, &e2) == -ENOMEM && !w.rc)
    return zerr_set(err, ENOMEM, "%s: %s", dir, e2.msg);
  return w.rc;
}

/* Translate a manifest key "i.j.k" into the array's chunk key: one index
 * per dimension. A 0-d array has one chunk whatever its key says
 * (VirtualiZarr ignores it): "c", or "0" with v2 keys. */
static int vz_key(const struct vz_array *a, const char *mkey, char *out,
                  size_t cap) {
  size_t o = 0;
  if (a->ndim == 0) {
    snprintf(out, cap, "%s", a->v2 ? "0" : "c");
    return 0;
  }
  int dims = 0;
  if (!a->v2) {
    if (cap < 2)
      return -1;
    out[o++] = 'c';
  }
  const char *p = mkey;
  int first = 1;
  while (*p) {
    if (!isdigit((unsigned char)*p))
      return -1;
    if (!first || !a->v2) {
      if (o + 1 >= cap)
        return -1;
      out[o++] = a->sep;
    }
    while (isdigit((unsigned char)*p)) {
      if (o + 1 >= cap)
        return -1;
      out[o++] = *p++;
    }
    if (*p == '.' && p[1])
      p++;
    else if (*p)
      return -1;
    first = 0;
    dims++;
  }
  if (a->ndim > 0 && dims != a->ndim)
    return -1;
  if (first && a->v2) /* 0-d with v2 keys */
    out[o++] = '0';
  out[o] = '\0';
  return 0;
}

/* A non-negative JSON integer. */
static int vz_u64(json_t *j, uint64_t *out) {
  if (!json_is_integer(j) || json_integer_value(j) < 0)
    return -1;
  *out = (uint64_t)json_integer_value(j);
  return 0;
}

/* Read the manifest file, which must lie under an allowed root like its
 * targets (zarr.json may name any path). *text is NUL-terminated. */
static int vz_read_manifest(const struct vz_array *a, const struct confine *c,
                            char **text, size_t *tlen, struct zerr *err) {
  struct bytesrc *src;
  int rc =
      remote_is_url(a->manifest)
          ? confine_open_url(c, a->manifest, 0, UINT64_MAX, NULL, &src, err)
          : confine_open(c, a->manifest, NULL, &src, err);
  if (rc < 0) {
    zerr_prefix(err, "manifest %s: ", a->manifest);
    return zerr_is_transient(-rc) ? rc : (err->code = EIO, -EIO);
  }
  if (src->size >= SIZE_MAX) {
    bytesrc_unref(src);
    return zerr_set(err, EIO, "manifest %s: too large", a->manifest);
  }
  *tlen = (size_t)src->size;
  *text = malloc(*tlen + 1);
  if (!*text) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "manifest %s: out of memory", a->manifest);
  }
  rc = *tlen ? bytesrc_read_range(src, 0, *tlen, *text, err) : 0;
  bytesrc_unref(src);
  if (rc < 0) {
    free(*text);
    *text = NULL;
    zerr_prefix(err, "manifest %s: ", a->manifest);
    return zerr_is_transient(-rc) ? rc : (err->code = EIO, -EIO);
  }
  (*text)[*tlen] = '\0';
  return 0;
}

/* Parse the manifest into a table (keys in the array's encoding). */
static int vz_load(const struct vz_array *a, const struct confine *c,
                   struct manifest **out, struct zerr *err) {
  json_error_t je;
  char *text = NULL;
  size_t tlen = 0;
  int lrc = vz_read_manifest(a, c, &text, &tlen, err);
  if (lrc < 0)
    return lrc;
  /* NULs allowed in strings, so that a path with one is seen (and its key
   * marked bad) rather than failing the whole manifest. */
  zjson_watch();
  json_t *root = json_loadb(text ? text : "", tlen, JSON_ALLOW_NUL, &je);
  if (!root) {
    free(text);
    if (zjson_nomem())
      return zerr_set(err, ENOMEM, "manifest %s: out of memory", a->manifest);
    return zerr_set(err, EIO, "manifest %s: not valid JSON: %s (line %d)",
                    a->manifest, je.text, je.line);
  }
  char **dups = NULL;
  size_t nd = 0;
  lrc =
      json_is_object(root)
          ? jdup_keys(text, tlen, NULL, json_object_size(root), &dups, &nd, err)
          : 0;
  free(text);
  if (lrc < 0) {
    json_decref(root);
    return lrc;
  }
  if (!json_is_object(root)) {
    json_decref(root);
    return zerr_set(err, EIO, "manifest %s: must be an object", a->manifest);
  }
  char *dir = strdup(a->manifest);
  if (!dir) {
    jdup_free(dups, nd);
    json_decref(root);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *strrchr(dir, '/') = '\0';
  struct manifest_builder *b = NULL;
  int rc = manifest_builder_new(*dir ? dir : "/", &b, err);
  free(dir);
  const char *mkey;
  json_t *e;
  char key[512], why[512];
  if (rc == 0) {
    json_object_foreach(root, mkey, e) {
      if (vz_key(a, mkey, key, sizeof key) < 0) {
        rc = zerr_set(err, EIO,
                      "manifest %s: bad chunk key '%s' (want %d indices "
                      "joined by '.')",
                      a->manifest, mkey, a->ndim);
        break;
      }
      json_t *path = json_object_get(e, "path"),
             *data = json_object_get(e, "data");
      uint64_t off, len;
      if (json_is_string(data)) {
        uint8_t *raw;
        size_t n;
        int brc = zbase64_decode(json_string_value(data),
                                 json_string_length(data), &raw, &n);
        if (brc == 0) {
          rc = manifest_add_inline(b, key, raw, n, err);
          free(raw);
        } else {
          snprintf(why, sizeof why, "manifest %s: entry '%s': bad base64 data",
                   a->manifest, mkey);
          rc = manifest_add_bad(b, key, why, err);
        }
      } else if (!json_is_string(path)) {
        snprintf(why, sizeof why, "manifest %s: entry '%s' has no path",
                 a->manifest, mkey);
        rc = manifest_add_bad(b, key, why, err);
      } else if (strlen(json_string_value(path)) != json_string_length(path)) {
        snprintf(why, sizeof why, "manifest %s: entry '%s': %s", a->manifest,
                 mkey, MANIFEST_NUL_REASON);
        rc = manifest_add_bad(b, key, why, err);
      } else if (!*json_string_value(path)) {
        rc = manifest_add_missing(b, key, err);
      } else if (!strcmp(json_string_value(path), "__inlined__")) {
        snprintf(why, sizeof why,
                 "manifest %s: entry '%s' is inlined but has no data",
                 a->manifest, mkey);
        rc = manifest_add_bad(b, key, why, err);
      } else if (vz_u64(json_object_get(e, "offset"), &off) < 0 ||
                 vz_u64(json_object_get(e, "length"), &len) < 0) {
        snprintf(why, sizeof why,
                 "manifest %s: entry '%s': offset and length must be "
                 "non-negative integers",
                 a->manifest, mkey);
        rc = manifest_add_bad(b, key, why, err);
      } else if (remote_is_url(a->manifest) &&
                 (json_string_value(path)[0] == '/' ||
                  !strncmp(json_string_value(path), "file://", 7))) {
        /* as a reference file fetched from a URL: no local file */
        snprintf(why, sizeof why,
                 "manifest %s: entry '%s': a remote reference cannot read "
                 "local files",
                 a->manifest, mkey);
        rc = manifest_add_bad(b, key, why, err);
      } else {
        rc = manifest_add_range(b, key, json_string_value(path), off, len, err);
      }
      if (rc)
        break;
    }
  }
  for (size_t i = 0; i < nd && rc == 0; i++)
    if (vz_key(a, dups[i], key, sizeof key) == 0) {
      snprintf(why, sizeof why,
               "manifest %s: entry '%s' appears more than once (duplicate "
               "key)",
               a->manifest, dups[i]);
      rc = manifest_add_bad(b, key, why, err);
    }
  jdup_free(dups, nd);
  json_decref(root);
  if (rc) {
    manifest_builder_free(b);
    return rc;
  }
  return manifest_builder_finish(b, out, NULL, err);
}

/* The array whose directory holds key (key strictly below its prefix);
 * *rel is the key relative to it. */
static struct vz_array *vz_find(struct store_vzarr *v, const char *key,
                                const char **rel) {
  struct vz_array *a = NULL;
  pthread_rwlock_rdlock(&v->alock);
  for (size_t i = 0; i < v->n && !a; i++) {
    const char *p = v->arrays[i]->prefix;
    size_t n = strlen(p);
    if (!n) {
      *rel = key;
      a = v->arrays[i];
    } else if (!strncmp(key, p, n) && key[n] == '/') {
      *rel = key + n + 1;
      a = v->arrays[i];
    }
  }
  pthread_rwlock_unlock(&v->alock);
  return a;
}

/* The array's table, loading it once; NULL with *rc and err filled on
 * failure (-EIO, remembered; or a transient code, not remembered). */
static struct manifest *vz_table(const struct store_vzarr *v,
                                 struct vz_array *a, int *rc,
                                 struct zerr *err) {
  pthread_mutex_lock(&a->lock);
  if (!a->loaded) {
    struct zerr e = {0};
    int lrc = vz_load(a, v->c, &a->m, &e);
    if (lrc < 0 && zerr_is_transient(-lrc)) {
      /* A full descriptor table or no memory says nothing about the
       * manifest: not remembered, the next access tries again. */
      a->m = NULL;
      pthread_mutex_unlock(&a->lock);
      *rc = zerr_set(err, -lrc, "%s", e.msg);
      return NULL;
    }
    if (lrc < 0) {
      a->m = NULL;
      snprintf(a->why, sizeof a->why, "%s", e.msg);
      /* Once per array: later reads of its chunks fail with this reason,
       * which some paths (sizes) do not log. */
      zlog(ZLOG_ERR, "%s/%s: %s", a->prefix, "zarr.json", e.msg);
    }
    a->loaded = 1;
  }
  struct manifest *m = a->m;
  pthread_mutex_unlock(&a->lock);
  if (!m)
    *rc = zerr_set(err, EIO, "%s", a->why);
  return m;
}

/* Is rel (relative to the array) in the chunk key space, which only the
 * manifest fills ("c", "c/...", "c.0.1"; v2 keys: a leading digit)? A
 * stray chunk file beside the manifest is never served. */
static int vz_chunkish(const struct vz_array *a, const char *rel) {
  if (a->v2)
    return isdigit((unsigned char)rel[0]);
  return rel[0] == 'c' && (rel[1] == '\0' || rel[1] == a->sep);
}

static int vz_get(struct store *s, const char *key, struct bytesrc **out,
                  struct zerr *err) {
  struct store_vzarr *v = (struct store_vzarr *)s;
  const char *rel;
  struct vz_array *a = vz_find(v, key, &rel);
  if (!a || !vz_chunkish(a, rel)) {
    int rc = store_get(v->inner, key, out, err);
    if (rc == 0)
      vz_learn(v, key);
    return rc;
  }
  int rc;
  struct manifest *m = vz_table(v, a, &rc, err);
  if (!m)
    return rc;
  struct manifest_entry en;
  if (manifest_lookup(m, rel, &en) < 0 || en.kind == MF_MISSING)
    return zerr_set(err, ENOENT, "missing chunk");
  return manifest_open(m, &en, v->c, &s->stats, out, err);
}

static int vz_stat(struct store *s, const char *key,
                   enum store_entry_type *type, uint64_t *size, int64_t *mtime,
                   struct zerr *err) {
  struct store_vzarr *v = (struct store_vzarr *)s;
  const char *rel;
  struct vz_array *a = vz_find(v, key, &rel);
  if (!a || !vz_chunkish(a, rel))
    return store_stat_time(v->inner, key, type, size, mtime, err);
  int rc;
  struct manifest *m = vz_table(v, a, &rc, err);
  if (!m)
    return rc;
  struct manifest_entry en;
  if (manifest_lookup(m, rel, &en) == 0 && en.kind != MF_MISSING) {
    *type = STORE_FILE;
    *size = en.kind == MF_BAD ? 0 : en.length;
    return 0;
  }
  if (manifest_is_dir(m, rel)) {
    *type = STORE_DIR;
    *size = 0;
    return 0;
  }
  return zerr_set(err, ENOENT, "missing chunk");
}

/* The inner listing of an array directory minus its chunk key space
 * (entries of every type, STORE_OTHER included, pass through as they
 * are). */
struct vz_merge {
  const struct vz_array *a;
  store_list_cb cb;
  void *ud;
};

static int vz_merge_cb(void *ud, const char *name, enum store_entry_type t,
                       uint64_t size, int64_t mtime) {
  struct vz_merge *mg = ud;
  if (vz_chunkish(mg->a, name))
    return 0;
  return mg->cb(mg->ud, name, t, size, mtime);
}

static int vz_list(struct store *s, const char *prefix, store_list_cb cb,
                   void *ud, struct zerr *err) {
  struct store_vzarr *v = (struct store_vzarr *)s;
  const char *rel = NULL;
  struct vz_array *a = NULL;
  pthread_rwlock_rdlock(&v->alock); /* the array directory itself */
  a = vz_at(v, prefix);
  pthread_rwlock_unlock(&v->alock);
  if (a)
    rel = "";
  else
    a = vz_find(v, prefix, &rel);
  if (!a || (*rel && !vz_chunkish(a, rel)))
    return store_list(v->inner, prefix, cb, ud, err);
  if (*rel) { /* a directory of chunk keys: the manifest's only */
    int rc;
    struct manifest *m = vz_table(v, a, &rc, err);
    if (!m)
      return rc;
    if (!manifest_is_dir(m, rel))
      return zerr_set(err, ENOENT, "no such directory");
    return manifest_list(m, rel, STORE_MTIME_UNKNOWN, cb, ud, err);
  }
  /* The array directory: the manifest's top names (none when it cannot be
   * read: its chunk reads say why) and the stored files beside them. */
  struct zerr me = {0};
  int trc = 0;
  struct manifest *m = vz_table(v, a, &trc, &me);
  if (!m && zerr_is_transient(-trc)) /* never a listing short of chunks */
    return zerr_set(err, -trc, "%s", me.msg);
  if (m)
    ZTRY(manifest_list(m, "", STORE_MTIME_UNKNOWN, cb, ud, err));
  struct vz_merge mg = {a, cb, ud};
  ZTRY(store_list(v->inner, prefix, vz_merge_cb, &mg, err));
  if (m)
    return 0;
  zerr_set(err, EIO, "%s", me.msg); /* the chunk keys are unknown */
  return STORE_LIST_PARTIAL;
}

static void vz_destroy(struct store *s) {
  struct store_vzarr *v = (struct store_vzarr *)s;
  for (size_t i = 0; i < v->n; i++)
    vz_array_free(v->arrays[i]);
  free(v->arrays);
  pthread_rwlock_destroy(&v->alock);
  free(v->root);
  store_free(v->inner);
  free(s->location);
  free(v);
}

static const struct store_ops vz_ops = {vz_get, vz_stat, vz_list, vz_destroy};

/* Fetching ahead: the inner store's, for keys no manifest serves. */
static int vz_prefetch(struct store *s, const char *key, const void *owner,
                       int flags, void **hint) {
  struct store_vzarr *v = (struct store_vzarr *)s;
  const char *rel;
  struct vz_array *a = vz_find(v, key, &rel);
  if (a && vz_chunkish(a, rel))
    return -ENOTSUP;
  return store_prefetch(v->inner, key, owner, flags, hint);
}

/* Let go of a hint (only the inner store makes them). */
static void vz_prefetch_drop(struct store *s, void *hint) {
  store_prefetch_drop(((struct store_vzarr *)s)->inner, hint);
}

static const struct store_ahead_ops vz_ahead_ops = {vz_prefetch,
                                                    vz_prefetch_drop};

int store_wrap_vzarr(struct store *inner, const struct confine *c,
                     struct store **out, struct zerr *err) {
  struct store_vzarr *v = calloc(1, sizeof *v);
  if (!v || !(v->root = strdup(inner->location)) ||
      !(v->base.location = strdup(inner->location))) {
    if (v)
      free(v->root);
    free(v);
    store_free(inner);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  v->base.ops = &vz_ops;
  v->base.remote = inner->remote;
  v->base.unlistable = v->lazy = inner->unlistable;
  v->base.ahead = inner->ahead ? &vz_ahead_ops : NULL;
  pthread_rwlock_init(&v->alock, NULL);
  v->inner = inner;
  v->c = c;
  int rc = vz_walk(v, "", 0, err);
  if (rc < 0) {
    vz_destroy(&v->base);
    return rc;
  }
  if (v->n == 0 && !v->lazy) { /* nothing virtual: the plain store */
    v->inner = NULL;
    pthread_rwlock_destroy(&v->alock);
    free(v->arrays);
    free(v->root);
    free(v->base.location);
    free(v);
    *out = inner;
    return 0;
  }
  /* The inner store's reads are this store's (/.zarrfs/stats). */
  store_remote_count_into(inner, &v->base.stats);
  *out = &v->base;
  return 0;
}
