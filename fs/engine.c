/* engine.c - nodes, decoded chunks, the cache around them, and the single
 * place where data errors are logged (see engine.h). */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/sharding.h"
#include "../src/buf.h"
#include "../src/log.h"
#include "hier.h"
#include "render.h"

/* Node table entries beyond this are not remembered when they are plain
 * directories (chunk directories of huge grids must not grow the table). */
#define ENGINE_MAX_NODES 1000000
#define ENGINE_NODE_BUCKETS 4096
#define ENGINE_MAX_META (64u << 20)

struct node_slot {
  struct node_slot *next;
  struct znode *node;
};

/* A decode in progress: other threads wanting the same chunk wait for it
 * rather than decoding it again (readahead sends parallel reads). */
struct flight {
  struct flight *next;
  char key[];
};

/* A remembered failure: the same error is answered without a new log line. */
struct err_obj {
  struct zobj obj;
  int code;
  char msg[ZERR_MSG_MAX];
};

/* FNV-1a of a path. */
static uint64_t path_hash(const char *k) {
  uint64_t h = 1469598103934665603ULL;
  for (; *k; k++)
    h = (h ^ (uint8_t)*k) * 1099511628211ULL;
  return h;
}

/* Log one line naming the store and key. */
void engine_log(struct engine *e, const char *key, const char *msg) {
  zlog(ZLOG_ERR, "%s: %s: %s", e->store->location, *key ? key : ".", msg);
}

/* Signal-safe: one lock-free atomic store. */
void engine_stop(struct engine *e) {
  atomic_store_explicit(&e->stopping, 1, memory_order_relaxed);
}

/* Checked by long loops. */
int engine_stopping(const struct engine *e) {
  return atomic_load_explicit(&e->stopping, memory_order_relaxed);
}

/* Build the engine. */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e)
    return zerr_set(err, ENOMEM, "out of memory");
  e->store = store;
  e->cache = zcache_new(cfg->cache_size);
  e->sizes = zsizes_new(cfg->size_table_max ? cfg->size_table_max : 1 << 20);
  e->node_nbuckets = ENGINE_NODE_BUCKETS;
  e->node_buckets = calloc(e->node_nbuckets, sizeof *e->node_buckets);
  e->env.max_decoded = cfg->max_decoded;
  e->no_consolidated = cfg->no_consolidated;
  if (!e->cache || !e->sizes || !e->node_buckets) {
    zcache_free(e->cache);
    zsizes_free(e->sizes);
    free(e->node_buckets);
    free(e);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  pthread_mutex_init(&e->nodes_lock, NULL);
  pthread_mutex_init(&e->flight_lock, NULL);
  pthread_cond_init(&e->flight_cond, NULL);
  *out = e;
  return 0;
}

/* Free one node; NULL-safe. */
static void znode_free(struct znode *n) {
  if (!n)
    return;
  chain_free(n->chain);
  zmeta_free(n->meta);
  zcons_free(n->cons);
  free(n->view_error);
  free(n->path);
  free(n);
}

/* Free everything; NULL-safe. */
void engine_free(struct engine *e) {
  if (!e)
    return;
  for (size_t i = 0; i < e->node_nbuckets; i++) {
    struct node_slot *s = e->node_buckets[i];
    while (s) {
      struct node_slot *nx = s->next;
      znode_free(s->node);
      free(s);
      s = nx;
    }
  }
  free(e->node_buckets);
  zcache_free(e->cache);
  zsizes_free(e->sizes);
  store_free(e->store);
  pthread_mutex_destroy(&e->nodes_lock);
  pthread_mutex_destroy(&e->flight_lock);
  pthread_cond_destroy(&e->flight_cond);
  free(e);
}

/* Join a prefix and a name into a store key. */
static int key_join(char *buf, size_t len, const char *prefix,
                    const char *name) {
  int n = *prefix ? snprintf(buf, len, "%s/%s", prefix, name)
                  : snprintf(buf, len, "%s", name);
  return (n < 0 || (size_t)n >= len) ? -ENAMETOOLONG : n;
}

/* Record why an array's views cannot work, and say it once. */
static void node_set_error(struct engine *e, struct znode *n, const char *key,
                           const char *msg) {
  n->view_error = strdup(msg);
  engine_log(e, key, msg);
}

/* Decide the decode unit of an array node (see struct znode): inner chunks
 * when the codecs are sharding_indexed alone, else whole chunks. */
static int node_set_units(struct znode *n, struct zerr *err) {
  const struct zmeta *m = n->meta;
  n->uspec = n->spec;
  n->shard = shard_of_chain(n->chain);
  for (int d = 0; d < m->ndim; d++)
    n->per[d] = 1;
  if (n->shard) {
    uint64_t inner[ZMETA_MAX_DIMS];
    shard_inner_shape(n->shard, inner);
    n->uspec.nelem = 1;
    for (int d = 0; d < m->ndim; d++) {
      if (m->chunk[d] % inner[d])
        return zerr_set(err, EIO,
                        "sharding_indexed: inner chunk shape does not "
                        "divide the shard shape");
      n->per[d] = m->chunk[d] / inner[d];
      n->uspec.shape[d] = inner[d];
      n->uspec.nelem *= inner[d];
    }
  }
  for (int d = 0; d < m->ndim; d++) {
    uint64_t u = n->uspec.shape[d];
    n->ugrid[d] = m->shape[d] / u + (m->shape[d] % u != 0);
  }
  return 0;
}

/* Read and interpret path/zarr.json. */
static struct znode *node_load(struct engine *e, const char *path) {
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
   * (fs/hier.c); an entry that does not parse falls back to the node's own
   * files. */
  enum zcons_kind ck;
  char ckey[4096];
  const char *ctext = hier_node_doc(e, path, &len, &ck, ckey, sizeof ckey);
  if (ctext) {
    which = ck == ZCONS_V3 ? 0 : ck == ZCONS_V2_ARRAY ? 1 : 2;
    if (key_join(key, sizeof key, path, names[which]) < 0)
      return n;
    if (which == 2) {
      n->kind = ZNODE_GROUP;
      hier_load_group(e, n, key, 1);
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
      engine_log(e, ckey, msg);
      zerr_clear(&err);
    }
  }
  if (!from_cons) {
    for (which = 0; which < 3; which++) {
      if (key_join(key, sizeof key, path, names[which]) < 0)
        return n; /* ZNODE_NONE */
      rc = store_read_all(e->store, key, ENGINE_MAX_META, &text, &len, &err);
      if (rc != -ENOENT && rc != -ENOTDIR && rc != -EINVAL)
        break;
    }
    if (which == 3)
      return n;
    if (rc < 0) {
      n->kind = ZNODE_BROKEN;
      node_set_error(e, n, key, err.msg);
      return n;
    }
    if (which == 0) {
      rc = zmeta_parse((const char *)text, len, &n->meta, &err);
    } else if (which == 1) {
      rc = zmeta_parse_v2((const char *)text, len, &n->meta, &err);
    } else {
      n->kind = ZNODE_GROUP; /* .zgroup: only its .zmetadata matters */
      free(text);
      hier_load_group(e, n, key, 0);
      return n;
    }
    free(text);
  }
  if (rc < 0) {
    n->kind = ZNODE_BROKEN;
    char msg[ZERR_MSG_MAX + 32];
    /* Unsupported (a chunk grid, a key encoding) is not invalid. */
    snprintf(msg, sizeof msg, "%s%s",
             rc == -ENOTSUP ? "" : "invalid metadata: ", err.msg);
    node_set_error(e, n, key, msg);
    return n;
  }
  if (n->meta->node == ZMETA_GROUP) {
    n->kind = ZNODE_GROUP;
    hier_load_group(e, n, key, from_cons);
    return n;
  }
  n->kind = ZNODE_ARRAY;
  struct zmeta *m = n->meta;
  n->spec.ndim = m->ndim;
  memcpy(n->spec.shape, m->chunk, sizeof m->chunk);
  n->spec.nelem = m->chunk_nelem;
  n->spec.dtype = m->dtype;
  n->text_dtype = m->dtype.kind == DT_FIXED_UTF32    ? dtype_of(DT_STRING)
                  : dtype_is_fixed_string(&m->dtype) ? dtype_of(DT_BYTES)
                                                     : m->dtype;
  if (m->dtype.kind == DT_OPTIONAL && dtype_has_var_elements(&m->dtype))
    n->text_dtype = dtype_of(DT_STRING); /* see optional_var_to_text */
  n->spec.fill = m->fill;
  n->spec.fill_len = m->fill_len;
  if (m->dtype.kind == DT_UNSUPPORTED) {
    char msg[128];
    snprintf(msg, sizeof msg, "unsupported data type '%s'", m->dtype.name);
    node_set_error(e, n, key, msg);
    return n;
  }
  if (chain_build(m->codecs, &n->spec, &n->chain, &err) < 0) {
    n->chain = NULL;
    node_set_error(e, n, key, err.msg);
    return n;
  }
  if (node_set_units(n, &err) < 0) {
    chain_free(n->chain);
    n->chain = NULL;
    node_set_error(e, n, key, err.msg);
  }
  return n;
}

/* Cached node lookup; loads on first use. */
const struct znode *engine_node(struct engine *e, const char *path) {
  static const struct znode none = {.kind = ZNODE_NONE, .path = ""};
  uint64_t h = path_hash(path);
  size_t b = h % e->node_nbuckets;
  pthread_mutex_lock(&e->nodes_lock);
  for (struct node_slot *s = e->node_buckets[b]; s; s = s->next)
    if (!strcmp(s->node->path, path)) {
      pthread_mutex_unlock(&e->nodes_lock);
      return s->node;
    }
  pthread_mutex_unlock(&e->nodes_lock);

  /* Load outside the lock: it reads the store. Two threads may race to
   * load the same node; the first insert wins, the other copy is freed. */
  struct znode *n = node_load(e, path);
  if (!n)
    return &none;
  pthread_mutex_lock(&e->nodes_lock);
  for (struct node_slot *s = e->node_buckets[b]; s; s = s->next)
    if (!strcmp(s->node->path, path)) {
      pthread_mutex_unlock(&e->nodes_lock);
      znode_free(n);
      return s->node;
    }
  if (n->kind == ZNODE_NONE && e->node_count >= ENGINE_MAX_NODES) {
    pthread_mutex_unlock(&e->nodes_lock);
    znode_free(n);
    return &none;
  }
  struct node_slot *s = malloc(sizeof *s);
  if (!s) {
    pthread_mutex_unlock(&e->nodes_lock);
    znode_free(n);
    return &none;
  }
  s->node = n;
  s->next = e->node_buckets[b];
  e->node_buckets[b] = s;
  e->node_count++;
  pthread_mutex_unlock(&e->nodes_lock);
  return n;
}

/* Walk the ancestors of key from the root down to the first array. */
const struct znode *engine_array_of(struct engine *e, const char *key,
                                    const char **rel) {
  char prefix[4096];
  size_t klen = strlen(key);
  if (klen >= sizeof prefix)
    return NULL;
  size_t pos = 0;
  for (;;) {
    memcpy(prefix, key, pos);
    prefix[pos] = '\0';
    const struct znode *n = engine_node(e, prefix);
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
int engine_chunk_key(const struct znode *n, const uint64_t *idx, char *buf,
                     size_t len) {
  char rel[1024];
  int r = zmeta_chunk_key(n->meta, idx, rel, sizeof rel);
  if (r < 0)
    return r;
  return key_join(buf, len, n->path, rel);
}

/* The chunk holding unit idx, and the unit's C-order index inside it. */
static uint64_t unit_chunk(const struct znode *n, const uint64_t *idx,
                           uint64_t *cidx) {
  uint64_t inner = 0;
  for (int d = 0; d < n->meta->ndim; d++) {
    cidx[d] = idx[d] / n->per[d];
    inner = inner * n->per[d] + idx[d] % n->per[d];
  }
  return inner;
}

/* Cache-key name of a unit. */
int engine_unit_key(const struct znode *n, const uint64_t *idx, char *buf,
                    size_t len) {
  uint64_t cidx[ZMETA_MAX_DIMS];
  uint64_t inner = unit_chunk(n, idx, cidx);
  int r = engine_chunk_key(n, cidx, buf, len);
  if (r < 0 || !n->shard)
    return r;
  int k =
      snprintf(buf + r, len - (size_t)r, "#%llu", (unsigned long long)inner);
  return (k < 0 || (size_t)k >= len - (size_t)r) ? -ENAMETOOLONG : r + k;
}

/* ---- chunk_text ---- */

/* Release a decoded chunk. */
static void chunk_text_destroy(struct zobj *o) {
  struct chunk_text *ct = (struct chunk_text *)o;
  abytes_free(ct->ab);
  free(ct->line_off);
  free(ct);
}

/* Release a remembered error. */
static void err_obj_destroy(struct zobj *o) { free(o); }

/* Compute in-bounds extents and the text offsets of every in-bounds
 * element, in chunk C order. */
static int chunk_text_layout(struct engine *e, const struct znode *n,
                             struct chunk_text *ct, struct zerr *err) {
  const struct zmeta *m = n->meta;
  const uint64_t *unit = n->uspec.shape;
  const struct dtype *dt = &n->text_dtype;
  int nd = m->ndim;
  uint64_t nin = 1;
  for (int d = 0; d < nd; d++) {
    uint64_t start = ct->idx[d] * unit[d];
    ct->ext[d] = m->shape[d] - start < unit[d] ? m->shape[d] - start : unit[d];
    nin *= ct->ext[d];
  }
  ct->nin = nin;
  struct abytes *ab = ct->ab;
  if (ab->n != n->uspec.nelem)
    return zerr_set(err, EIO, "decoded %llu elements, expected %llu",
                    (unsigned long long)ab->n,
                    (unsigned long long)n->uspec.nelem);
  if (ab->elsize) {
    if (ab->elsize != dt->size)
      return zerr_set(err, EIO, "decoded element size %zu, expected %zu",
                      ab->elsize, dt->size);
    /* Numeric text lengths need every element: keep the bytes in memory. */
    struct bytesrc *mem;
    ZTRY(bytesrc_load(ab->fixed, e->env.max_decoded, &mem, err));
    bytesrc_unref(ab->fixed);
    ab->fixed = mem;
  }
  uint64_t nbytes;
  if (zmul_u64(nin + 1, sizeof(uint64_t), &nbytes) < 0 ||
      nbytes > e->env.max_decoded)
    return zerr_set(err, EFBIG, "chunk has too many elements");
  ct->line_off = malloc((size_t)nbytes);
  if (!ct->line_off)
    return zerr_set(err, ENOMEM, "out of memory");

  /* Strides of the chunk in C order. */
  uint64_t stride[ZMETA_MAX_DIMS];
  uint64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    stride[d] = s;
    s *= unit[d];
  }
  uint64_t w = nd ? ct->ext[nd - 1] : 1;
  uint64_t rows = w ? nin / w : 0;
  uint64_t cnt[ZMETA_MAX_DIMS] = {0};
  uint64_t pos = 0, k = 0;
  char tmp[RENDER_FIXED_MAX];
  for (uint64_t r = 0; r < rows; r++) {
    uint64_t base = 0;
    for (int d = 0; d < nd - 1; d++)
      base += cnt[d] * stride[d];
    for (uint64_t c = 0; c < w; c++, k++) {
      uint64_t j = base + c;
      ct->line_off[k] = pos;
      uint64_t len;
      if (ab->elsize)
        len = render_fixed(dt, ab->fixed->mem + j * ab->elsize, tmp);
      else
        len = render_var_len(dt, ab->offsets[j + 1] - ab->offsets[j]);
      pos += len + 1;
    }
    for (int d = nd - 2; d >= 0; d--) {
      if (++cnt[d] < ct->ext[d])
        break;
      cnt[d] = 0;
    }
  }
  ct->line_off[nin] = pos;
  ct->cost = sizeof *ct + (size_t)nbytes + abytes_mem_cost(ab);
  return 0;
}

/* Fixed-width strings (numpy U and S) and raw bytes become variable-length
 * elements: NUL padding dropped (not for raw bytes), UTF-32 code units
 * converted to UTF-8 (invalid ones as U+FFFD). */
static int fixed_strings_to_text(const struct dtype *dt, struct abytes *ab,
                                 const struct codec_env *env,
                                 struct zerr *err) {
  struct bytesrc *src;
  ZTRY(bytesrc_load(ab->fixed, env->max_decoded, &src, err));
  size_t es = ab->elsize;
  struct zbuf out;
  zbuf_init(&out, env->max_decoded);
  uint64_t *off = malloc((size_t)(ab->n + 1) * sizeof *off);
  int rc = off ? 0 : zerr_set(err, ENOMEM, "out of memory");
  for (uint64_t i = 0; i < ab->n && rc == 0; i++) {
    const uint8_t *e = src->mem + i * es;
    off[i] = out.len;
    size_t len = es;
    if (dt->kind != DT_FIXED_UTF32) { /* S drops NULs, raw bytes keep all */
      while (dt->kind == DT_FIXED_BYTES && len && !e[len - 1])
        len--;
      rc = zbuf_append(&out, e, len, err);
      continue;
    }
    while (len >= 4 && !memcmp(e + len - 4, "\0\0\0\0", 4))
      len -= 4;
    for (size_t k = 0; k < len && rc == 0; k += 4) {
      uint32_t c;
      memcpy(&c, e + k, 4);
      if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        c = 0xfffd;
      uint8_t u[4];
      size_t n;
      if (c < 0x80) {
        u[0] = (uint8_t)c;
        n = 1;
      } else if (c < 0x800) {
        u[0] = (uint8_t)(0xc0 | c >> 6);
        u[1] = (uint8_t)(0x80 | (c & 0x3f));
        n = 2;
      } else if (c < 0x10000) {
        u[0] = (uint8_t)(0xe0 | c >> 12);
        u[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
        u[2] = (uint8_t)(0x80 | (c & 0x3f));
        n = 3;
      } else {
        u[0] = (uint8_t)(0xf0 | c >> 18);
        u[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
        u[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
        u[3] = (uint8_t)(0x80 | (c & 0x3f));
        n = 4;
      }
      rc = zbuf_append(&out, u, n, err);
    }
  }
  bytesrc_unref(src);
  if (rc < 0) {
    free(off);
    zbuf_free(&out);
    return rc;
  }
  off[ab->n] = out.len;
  struct bytesrc *data;
  rc = codec_output_from_buf(&out, "fixed-width string", &data, err);
  if (rc < 0) {
    free(off);
    return rc;
  }
  bytesrc_unref(ab->fixed);
  ab->fixed = NULL;
  ab->elsize = 0;
  ab->offsets = off;
  ab->data = data;
  return 0;
}

/* Optional strings and bytes become their text, as string elements:
 * a missing value is "null" ("[null]" ... inside present layers, see
 * render_optional_null), a present string its bytes, present bytes their
 * lowercase hex. An element shorter than the type's depth is missing at
 * the layer its length gives (codecs/optional.c writes one byte 1 per
 * present layer). */
static int optional_var_to_text(const struct dtype *dt, struct abytes *ab,
                                const struct codec_env *env, struct zerr *err) {
  unsigned depth = dt->depth ? dt->depth : 1;
  struct dtype hex = dtype_of(DT_BYTES);
  struct bytesrc *loaded = NULL, *src = NULL;
  ZTRY(abytes_load_data(ab, env, &loaded, err));
  int rc = bytesrc_load(loaded, env->max_decoded, &src, err);
  bytesrc_unref(loaded);
  if (rc < 0)
    return rc;
  uint64_t *off = malloc((size_t)(ab->n + 1) * sizeof *off);
  if (!off)
    rc = zerr_set(err, ENOMEM, "out of memory");
  struct zbuf out;
  zbuf_init(&out, env->max_decoded);
  for (uint64_t i = 0; i < ab->n && rc == 0; i++) {
    uint64_t a = ab->offsets[i], len = ab->offsets[i + 1] - a;
    off[i] = out.len;
    if (len < depth) {
      char t[RENDER_FIXED_MAX];
      rc = zbuf_append(&out, t, render_optional_null((unsigned)len, t), err);
    } else if (dt->inner == DT_BYTES) {
      uint64_t tl = render_var_len(&hex, len - depth);
      if (tl > env->max_decoded - out.len)
        rc = zerr_set(err, EFBIG, "optional bytes: text exceeds the limit");
      else if ((rc = zbuf_reserve(&out, (size_t)tl, err)) == 0) {
        render_var(&hex, src->mem + a + depth, 0, (size_t)tl,
                   (char *)out.data + out.len);
        out.len += (size_t)tl;
      }
    } else {
      rc = zbuf_append(&out, src->mem + a + depth, (size_t)(len - depth), err);
    }
  }
  bytesrc_unref(src);
  if (rc == 0) {
    off[ab->n] = out.len;
    struct bytesrc *data;
    rc = codec_output_from_buf(&out, "optional text", &data, err);
    if (rc == 0) {
      free(ab->offsets);
      bytesrc_unref(ab->data);
      bytesrc_unref(ab->data_enc);
      ab->offsets = off;
      ab->data = data;
      ab->data_enc = NULL;
      ab->data_chain = NULL;
      ab->data_len = 0;
      return 0;
    }
  }
  zbuf_free(&out);
  free(off);
  return rc;
}

/* A shard's decoded index in the cache ("I:" entries). */
struct shard_index_obj {
  struct zobj obj;
  uint64_t *index; /* 2*nin (offset, nbytes) pairs; NULL: shard missing,
                      every inner chunk is the fill value */
  uint64_t nin;
};

/* Release a cached shard index. */
static void shard_index_destroy(struct zobj *o) {
  struct shard_index_obj *si = (struct shard_index_obj *)o;
  free(si->index);
  free(si);
}

static int flight_begin(struct engine *e, const char *ckey);
static void flight_end(struct engine *e, const char *ckey);
static int cached_error(struct engine *e, const char *ekey, struct zerr *err);
static void remember_error(struct engine *e, const char *ekey,
                           const struct zerr *err);

/* The index of shard `key` (cached, single-flight). A failure is logged
 * here, once per shard, and *logged set so callers do not log it again. */
static int shard_index_get(struct engine *e, const struct znode *n,
                           const char *key, struct shard_index_obj **out,
                           int *logged, struct zerr *err) {
  char ikey[4100], ekey[4100];
  snprintf(ikey, sizeof ikey, "I:%s", key);
  snprintf(ekey, sizeof ekey, "E:I:%s", key);
  for (;;) {
    struct zobj *o = zcache_get(e->cache, ikey);
    if (o) {
      *out = (struct shard_index_obj *)o;
      return 0;
    }
    int rc = cached_error(e, ekey, err);
    if (rc < 0) {
      *logged = 1;
      return rc;
    }
    if (flight_begin(e, ikey))
      break;
  }
  struct shard_index_obj *si = calloc(1, sizeof *si);
  int rc = si ? 0 : zerr_set(err, ENOMEM, "out of memory");
  struct bytesrc *src = NULL;
  if (rc == 0) {
    zobj_init(&si->obj, shard_index_destroy);
    rc = store_get(e->store, key, &src, err);
  }
  if (rc == -ENOENT) {
    zerr_clear(err);
    rc = 0;
  } else if (rc == 0) {
    rc = shard_index_read(n->shard, &n->spec, src, &e->env, &si->index,
                          &si->nin, err);
  }
  bytesrc_unref(src);
  if (rc < 0) {
    engine_log(e, key, err->msg);
    *logged = 1;
    remember_error(e, ekey, err);
    if (si)
      zobj_put(&si->obj);
  } else {
    zcache_put(e->cache, ikey, &si->obj,
               sizeof *si + (size_t)si->nin * 2 * sizeof(uint64_t));
    *out = si;
  }
  flight_end(e, ikey);
  return rc;
}

/* Decode the encoded bytes of unit idx: a whole chunk from the store (or
 * the fill value), or one inner chunk of shard `key` through its index. */
static int unit_decode_bytes(struct engine *e, const struct znode *n,
                             const uint64_t *idx, const char *key,
                             struct abytes **out, int *logged,
                             struct zerr *err) {
  struct bytesrc *src = NULL;
  if (!n->shard) {
    int rc = store_get(e->store, key, &src, err);
    if (rc == -ENOENT) {
      zerr_clear(err);
      return abytes_new_fill(&n->spec, out, err);
    }
    if (rc == 0)
      rc = chain_decode(n->chain, &n->spec, src, &e->env, out, err);
    bytesrc_unref(src);
    return rc;
  }
  uint64_t cidx[ZMETA_MAX_DIMS];
  uint64_t inner = unit_chunk(n, idx, cidx);
  struct shard_index_obj *si;
  ZTRY(shard_index_get(e, n, key, &si, logged, err));
  int rc;
  if (!si->index) {
    rc = abytes_new_fill(&n->uspec, out, err);
  } else {
    rc = store_get(e->store, key, &src, err);
    if (rc == 0)
      rc = shard_inner_decode(n->shard, &n->spec, src, si->index, inner,
                              &e->env, out, err);
    bytesrc_unref(src);
  }
  zobj_put(&si->obj);
  return rc;
}

/* Decode unit idx (its chunk's store key is `key`) and lay out its text. */
static int unit_decode(struct engine *e, const struct znode *n,
                       const uint64_t *idx, const char *key,
                       struct chunk_text **out, int *logged, struct zerr *err) {
  struct chunk_text *ct = calloc(1, sizeof *ct);
  if (!ct)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&ct->obj, chunk_text_destroy);
  memcpy(ct->idx, idx, sizeof(uint64_t) * (size_t)n->meta->ndim);
  int rc = unit_decode_bytes(e, n, idx, key, &ct->ab, logged, err);
  if (rc == 0 && dtype_is_fixed_string(&n->meta->dtype))
    rc = fixed_strings_to_text(&n->meta->dtype, ct->ab, &e->env, err);
  else if (rc == 0 && n->meta->dtype.kind == DT_OPTIONAL && !ct->ab->elsize)
    rc = optional_var_to_text(&n->meta->dtype, ct->ab, &e->env, err);
  if (rc == 0)
    rc = chunk_text_layout(e, n, ct, err);
  if (rc < 0) {
    zobj_put(&ct->obj);
    return rc;
  }
  *out = ct;
  return 0;
}

/* Wait while another thread decodes key; 1 when we must decode it. */
static int flight_begin(struct engine *e, const char *ckey) {
  pthread_mutex_lock(&e->flight_lock);
  for (;;) {
    struct flight *f = e->flights;
    while (f && strcmp(f->key, ckey))
      f = f->next;
    if (!f)
      break;
    pthread_cond_wait(&e->flight_cond, &e->flight_lock);
    pthread_mutex_unlock(&e->flight_lock);
    return 0; /* someone finished: look in the cache again */
  }
  size_t kl = strlen(ckey);
  struct flight *nf = malloc(sizeof *nf + kl + 1);
  if (nf) {
    memcpy(nf->key, ckey, kl + 1);
    nf->next = e->flights;
    e->flights = nf;
  }
  pthread_mutex_unlock(&e->flight_lock);
  return 1;
}

/* Mark key done and wake waiters. */
static void flight_end(struct engine *e, const char *ckey) {
  pthread_mutex_lock(&e->flight_lock);
  for (struct flight **pp = &e->flights; *pp; pp = &(*pp)->next)
    if (!strcmp((*pp)->key, ckey)) {
      struct flight *f = *pp;
      *pp = f->next;
      free(f);
      break;
    }
  pthread_cond_broadcast(&e->flight_cond);
  pthread_mutex_unlock(&e->flight_lock);
}

/* Answer from a remembered error, if any. */
static int cached_error(struct engine *e, const char *ekey, struct zerr *err) {
  struct zobj *o = zcache_get(e->cache, ekey);
  if (!o)
    return 0;
  struct err_obj *eo = (struct err_obj *)o;
  int rc = zerr_set(err, eo->code, "%s", eo->msg);
  zobj_put(o);
  return rc;
}

/* Remember an error (small cost) so a retry is answered silently. */
static void remember_error(struct engine *e, const char *ekey,
                           const struct zerr *err) {
  /* Only data errors are permanent; ENOMEM and friends may pass. */
  if (err->code != EIO && err->code != ENOTSUP && err->code != EFBIG)
    return;
  struct err_obj *eo = calloc(1, sizeof *eo);
  if (!eo)
    return;
  zobj_init(&eo->obj, err_obj_destroy);
  eo->code = err->code;
  memcpy(eo->msg, err->msg, sizeof eo->msg);
  zcache_put(e->cache, ekey, &eo->obj, sizeof *eo + strlen(ekey));
  zobj_put(&eo->obj);
}

/* The store key of unit idx's chunk (for log lines) and the unit's cache
 * name. */
static int unit_names(const struct znode *n, const uint64_t *idx, char *key,
                      char *ukey, size_t len, struct zerr *err) {
  uint64_t cidx[ZMETA_MAX_DIMS];
  unit_chunk(n, idx, cidx);
  if (engine_chunk_key(n, cidx, key, len) < 0 ||
      engine_unit_key(n, idx, ukey, len) < 0)
    return zerr_set(err, ENAMETOOLONG, "chunk key too long");
  return 0;
}

/* Cached, single-flight unit decode. */
int engine_unit(struct engine *e, const struct znode *n, const uint64_t *idx,
                struct chunk_text **out, struct zerr *err) {
  if (n->kind != ZNODE_ARRAY || !n->chain)
    return zerr_set(err, EIO, "%s",
                    n->view_error ? n->view_error : "not a readable array");
  for (int d = 0; d < n->meta->ndim; d++)
    if (idx[d] >= n->ugrid[d])
      return zerr_set(err, ENOENT, "chunk outside the grid");
  char key[4096], ukey[4096], ckey[4100], ekey[4100];
  ZTRY(unit_names(n, idx, key, ukey, sizeof key, err));
  snprintf(ckey, sizeof ckey, "C:%s", ukey);
  snprintf(ekey, sizeof ekey, "E:%s", ukey);
  for (;;) {
    struct zobj *o = zcache_get(e->cache, ckey);
    if (o) {
      *out = (struct chunk_text *)o;
      return 0;
    }
    ZTRY(cached_error(e, ekey, err));
    if (flight_begin(e, ckey))
      break;
  }
  struct chunk_text *ct = NULL;
  int logged = 0;
  int rc = unit_decode(e, n, idx, key, &ct, &logged, err);
  if (rc < 0) {
    if (!logged)
      engine_log(e, key, err->msg);
    zerr_prefix(err, "chunk %s: ", key);
    remember_error(e, ekey, err);
  } else {
    zcache_put(e->cache, ckey, &ct->obj, ct->cost);
    char skey[4100];
    snprintf(skey, sizeof skey, "S:%s", ukey);
    zsizes_put(e->sizes, skey, ct->line_off[ct->nin]);
    *out = ct;
  }
  flight_end(e, ckey);
  return rc;
}

/* A decoded data section in the cache. */
struct data_obj {
  struct zobj obj;
  struct bytesrc *src;
};

/* Release a cached data section. */
static void data_obj_destroy(struct zobj *o) {
  struct data_obj *d = (struct data_obj *)o;
  bytesrc_unref(d->src);
  free(d);
}

/* Element bytes, decoding a deferred data section once. */
int engine_unit_data(struct engine *e, const struct znode *n,
                     const struct chunk_text *ct, struct bytesrc **out,
                     struct zerr *err) {
  if (ct->ab->data) {
    *out = bytesrc_ref(ct->ab->data);
    return 0;
  }
  char key[4096], ukey[4096], dkey[4100], ekey[4100];
  ZTRY(unit_names(n, ct->idx, key, ukey, sizeof key, err));
  snprintf(dkey, sizeof dkey, "D:%s", ukey);
  snprintf(ekey, sizeof ekey, "F:%s", ukey);
  for (;;) {
    struct zobj *o = zcache_get(e->cache, dkey);
    if (o) {
      *out = bytesrc_ref(((struct data_obj *)o)->src);
      zobj_put(o);
      return 0;
    }
    ZTRY(cached_error(e, ekey, err));
    if (flight_begin(e, dkey))
      break;
  }
  struct bytesrc *src = NULL;
  int rc = abytes_load_data(ct->ab, &e->env, &src, err);
  if (rc < 0) {
    engine_log(e, key, err->msg);
    zerr_prefix(err, "chunk %s: ", key);
    remember_error(e, ekey, err);
  } else {
    struct data_obj *d = calloc(1, sizeof *d);
    if (d) {
      zobj_init(&d->obj, data_obj_destroy);
      d->src = bytesrc_ref(src);
      zcache_put(e->cache, dkey, &d->obj, sizeof *d + (size_t)src->size);
      zobj_put(&d->obj);
    }
    *out = src;
  }
  flight_end(e, dkey);
  return rc;
}

/* Size from the table, or decode once to learn it. */
int engine_unit_size(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t *size, struct zerr *err) {
  char ukey[4096], skey[4100];
  if (engine_unit_key(n, idx, ukey, sizeof ukey) < 0)
    return zerr_set(err, ENAMETOOLONG, "chunk key too long");
  snprintf(skey, sizeof skey, "S:%s", ukey);
  if (zsizes_get(e->sizes, skey, size))
    return 0;
  struct chunk_text *ct;
  ZTRY(engine_unit(e, n, idx, &ct, err));
  *size = ct->line_off[ct->nin];
  zobj_put(&ct->obj);
  return 0;
}
