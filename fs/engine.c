/* engine.c - nodes, decoded units through the memo, and the single place
 * where data errors are logged (see engine.h). */
#include "engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../codecs/sharding.h"
#include "../src/buf.h"
#include "../src/log.h"
#include "../src/presence.h"
#include "hier.h"
#include "render.h"

/* Node table entries beyond this are not remembered when they are plain
 * directories (chunk directories of huge grids must not grow the table). */
#define ENGINE_MAX_NODES 1000000
#define ENGINE_MAX_META (64u << 20)

/* A node table entry, keyed by the node's path. */
struct node_slot {
  struct htab_node hn;
  struct znode *node;
};

/* Log one line naming the store and key, deduplicated. */
void engine_log(struct engine *e, const char *key, const char *msg) {
  logonce_log(e->log, ZLOG_ERR, e->store->location, key, msg);
}

/* Signal-safe: one lock-free atomic store. */
void engine_stop(struct engine *e) {
  atomic_store_explicit(&e->stopping, 1, memory_order_relaxed);
}

/* Checked by long loops. */
int engine_stopping(const struct engine *e) {
  return atomic_load_explicit(&e->stopping, memory_order_relaxed);
}

/* The error long loops return once stopping. */
int engine_check_stop(struct engine *e, struct zerr *err) {
  return engine_stopping(e)
             ? zerr_set(err, EINTR, "interrupted: zarrfs is shutting down")
             : 0;
}

/* Work counter of a memo level. */
uint64_t engine_fills(const struct engine *e, enum engine_level level) {
  return memo_fills(e->memo, level);
}

/* Build the engine. */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e || htab_init(&e->nodes, 4096) < 0) {
    free(e);
    store_free(store);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  atomic_init(&e->stopping, 0);
  struct memo_config mc = {cfg->cache_size,
                           cfg->size_table_max ? cfg->size_table_max : 1 << 20,
                           &e->stopping};
  int rc = memo_new(&mc, &e->memo, err);
  if (rc == 0)
    rc = logonce_new(LOGONCE_DEFAULT_KEYS, LOGONCE_DEFAULT_SECS, &e->log, err);
  if (rc < 0) {
    memo_free(e->memo);
    htab_fini(&e->nodes);
    free(e);
    store_free(store);
    return rc;
  }
  e->store = store;
  e->env.max_decoded = cfg->max_decoded;
  e->env.stop = &e->stopping;
  e->window_cap = cfg->max_decoded;
  /* A unit's text is kept whole up to an eighth of the cache (so a view
   * of several units still fits it), never above the decode limit. */
  e->render_max = cfg->cache_size / 8 < cfg->max_decoded ? cfg->cache_size / 8
                                                         : cfg->max_decoded;
  e->no_consolidated = cfg->no_consolidated;
  e->lazy_sizes = cfg->lazy_sizes;
  /* Decode-ahead holds at most a quarter of the cache pinned per reader.
   * No pool (no threads, or none could be made) only means no decoding
   * ahead. */
  e->ahead_budget = cfg->cache_size / 4;
  e->cache_size = cfg->cache_size;
  if (cfg->decode_threads > 0)
    e->ahead = pool_new(cfg->decode_threads, 4 * cfg->decode_threads + 64);
  pthread_mutex_init(&e->nodes_lock, NULL);
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
  free(n->form.fill);
  free(n->view_error);
  free(n->path);
  free(n);
}

/* Free everything; NULL-safe. */
void engine_free(struct engine *e) {
  if (!e)
    return;
  /* First the jobs (they pin memo entries), then the memo (cached units
   * borrow node forms). */
  engine_stop(e);
  pool_free(e->ahead);
  memo_free(e->memo);
  struct htab_node *hn;
  while ((hn = htab_pop(&e->nodes))) {
    struct node_slot *s = (struct node_slot *)hn;
    znode_free(s->node);
    free(s);
  }
  htab_fini(&e->nodes);
  while (e->transient) {
    struct znode *n = e->transient;
    e->transient = n->next;
    znode_free(n);
  }
  store_free(e->store);
  logonce_free(e->log); /* prints the repeats not summarised yet */
  pthread_mutex_destroy(&e->nodes_lock);
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

static int fixed_strings_to_text(const struct dtype *dt, struct abytes *ab,
                                 const struct codec_env *env, struct zerr *err);
static int optional_var_to_text(const struct dtype *dt, struct abytes *ab,
                                const struct codec_env *env, struct zerr *err);

/* Conversions that turn decoded elements into the node's text type:
 * fixed-width strings to strings, optional strings and bytes to text. */
static int to_text_type(const struct znode *n, struct abytes *ab,
                        const struct codec_env *env, struct zerr *err) {
  if (dtype_is_fixed_string(&n->meta->dtype))
    return fixed_strings_to_text(&n->meta->dtype, ab, env, err);
  if (n->meta->dtype.kind == DT_OPTIONAL && !ab->elsize)
    return optional_var_to_text(&n->meta->dtype, ab, env, err);
  return 0;
}

/* The text of the fill value, once per node: one fill element through the
 * same conversions and renderers as decoded data, so a missing chunk reads
 * exactly like a stored chunk full of fill values. */
static int node_fill_text(const struct engine *e, struct znode *n,
                          struct zerr *err) {
  struct codec_spec one = n->uspec;
  one.nelem = 1;
  for (int d = 0; d < one.ndim; d++)
    one.shape[d] = 1;
  struct abytes *ab;
  ZTRY(abytes_new_fill(&one, &e->env, &ab, err));
  struct bytesrc *src = NULL;
  int rc = to_text_type(n, ab, &e->env, err);
  if (rc == 0)
    rc = ab->elsize ? bytesrc_load(ab->fixed, e->env.max_decoded, &src, err)
                    : abytes_load_data(ab, &e->env, &src, err);
  if (rc == 0 && !src->mem) {
    struct bytesrc *mem;
    rc = bytesrc_load(src, e->env.max_decoded, &mem, err);
    bytesrc_unref(src);
    src = rc == 0 ? mem : NULL;
  }
  char *text = NULL;
  uint64_t len = 0;
  if (rc == 0 && ab->elsize) {
    char tmp[RENDER_FIXED_MAX];
    len = render_fixed(&n->form.dt, src->mem, tmp);
    if ((text = malloc(len + 1)))
      memcpy(text, tmp, (size_t)len);
  } else if (rc == 0) {
    uint64_t nbytes = ab->offsets[1] - ab->offsets[0];
    len = render_var_len(&n->form.dt, nbytes);
    if (len > e->env.max_decoded)
      rc = zerr_set(err, EFBIG, "fill value text exceeds the decode limit");
    else if ((text = malloc(len + 1)))
      render_var(&n->form.dt, src->mem + ab->offsets[0], 0, (size_t)len, text);
  }
  if (rc == 0 && !text)
    rc = zerr_set(err, ENOMEM, "out of memory");
  bytesrc_unref(src);
  abytes_free(ab);
  if (rc < 0)
    return rc;
  n->form.fill = text;
  n->form.fill_len = len;
  return 0;
}

/* How units become text: type, unit shape, fill text. */
static int node_set_form(const struct engine *e, struct znode *n,
                         struct zerr *err) {
  n->form.ndim = n->meta->ndim;
  memcpy(n->form.shape, n->uspec.shape, sizeof n->form.shape);
  return node_fill_text(e, n, err);
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
      n->transient = zerr_is_transient(-rc);
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
    n->transient = zerr_is_transient(-rc);
    char msg[ZERR_MSG_MAX + 32];
    /* Unsupported (a chunk grid, a key encoding) is not invalid, nor is
     * a parse that ran out of memory. */
    snprintf(msg, sizeof msg, "%s%s",
             rc == -ENOTSUP || n->transient ? "" : "invalid metadata: ",
             err.msg);
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
  n->form.dt = m->dtype.kind == DT_FIXED_UTF32    ? dtype_of(DT_STRING)
               : dtype_is_fixed_string(&m->dtype) ? dtype_of(DT_BYTES)
                                                  : m->dtype;
  if (m->dtype.kind == DT_OPTIONAL && dtype_has_var_elements(&m->dtype))
    n->form.dt = dtype_of(DT_STRING); /* see optional_var_to_text */
  n->spec.fill = m->fill;
  n->spec.fill_len = m->fill_len;
  if (m->dtype.kind == DT_UNSUPPORTED) {
    char msg[128];
    snprintf(msg, sizeof msg, "unsupported data type '%s'", m->dtype.name);
    node_set_error(e, n, key, msg);
    return n;
  }
  if ((rc = chain_build(m->codecs, &n->spec, &n->chain, &err)) < 0) {
    n->chain = NULL;
    n->transient = zerr_is_transient(-rc);
    node_set_error(e, n, key, err.msg);
    return n;
  }
  if ((rc = node_set_units(n, &err)) < 0 ||
      (rc = node_set_form(e, n, &err)) < 0) {
    n->transient = zerr_is_transient(-rc);
    chain_free(n->chain);
    n->chain = NULL;
    n->shard = NULL;
    node_set_error(e, n, key, err.msg);
  }
  return n;
}

/* htab equality: the slot's node has this path. */
static int node_eq(const struct htab_node *hn, const void *key) {
  return !strcmp(((const struct node_slot *)hn)->node->path, key);
}

/* Cached node lookup; loads on first use (outside the lock: loading reads
 * the store and ancestors' nodes; two threads may load the same node, and
 * the first to insert wins). */
const struct znode *engine_node(struct engine *e, const char *path) {
  static const struct znode none = {.kind = ZNODE_NONE, .path = ""};
  uint64_t h = htab_hash_str(path);
  pthread_mutex_lock(&e->nodes_lock);
  struct node_slot *s =
      (struct node_slot *)htab_find(&e->nodes, h, node_eq, path);
  pthread_mutex_unlock(&e->nodes_lock);
  if (s)
    return s->node;
  struct znode *n = node_load(e, path);
  if (!n)
    return &none;
  struct node_slot *ns = n->transient ? NULL : malloc(sizeof *ns);
  if (!ns)
    n->transient = 1; /* kept for the engine's life, but not found again */
  pthread_mutex_lock(&e->nodes_lock);
  if (n->transient) { /* not remembered: the next lookup loads again */
    n->next = e->transient;
    e->transient = n;
    pthread_mutex_unlock(&e->nodes_lock);
    return n;
  }
  s = (struct node_slot *)htab_find(&e->nodes, h, node_eq, path);
  if (s || (n->kind == ZNODE_NONE && e->nodes.count >= ENGINE_MAX_NODES)) {
    pthread_mutex_unlock(&e->nodes_lock);
    znode_free(n);
    free(ns);
    return s ? s->node : &none;
  }
  s = ns;
  s->hn.hash = h;
  s->node = n;
  htab_insert(&e->nodes, &s->hn);
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

/* ---- memo keys ---- */

/* See engine.h. */
void engine_key(struct memo_key *k, enum engine_level level,
                const struct znode *n, const uint64_t *idx,
                const uint64_t *extra, int nextra) {
  int nd = n->meta && idx ? n->meta->ndim : 0;
  k->level = (uint8_t)level;
  k->owner = n;
  k->n = (uint8_t)(nd + nextra);
  if (nd)
    memcpy(k->v, idx, (size_t)nd * sizeof *idx);
  if (nextra)
    memcpy(k->v + nd, extra, (size_t)nextra * sizeof *extra);
}

/* The store key of unit idx's chunk (for log lines). */
static int unit_store_key(const struct znode *n, const uint64_t *idx, char *key,
                          size_t len, struct zerr *err) {
  uint64_t cidx[ZMETA_MAX_DIMS];
  unit_chunk(n, idx, cidx);
  if (engine_chunk_key(n, cidx, key, len) < 0)
    return zerr_set(err, ENAMETOOLONG, "chunk key too long");
  return 0;
}

/* Log a failure of key, unless it is the shutdown interrupting us. */
static void log_failure(struct engine *e, const char *key,
                        const struct zerr *err) {
  if (err->code != EINTR)
    engine_log(e, key, err->msg);
}

/* Can views of n be read at all? */
static int node_check(const struct znode *n, struct zerr *err) {
  if (n->kind == ZNODE_ARRAY && n->chain)
    return 0;
  return zerr_set(err, EIO, "%s",
                  n->view_error ? n->view_error : "not a readable array");
}

/* ---- shard indexes ---- */

/* A shard's decoded index (memo object). */
struct shard_index_obj {
  struct zobj obj;
  uint64_t *index; /* 2*nin (offset, nbytes) pairs; NULL: shard missing,
                      every inner chunk is the fill value */
  uint64_t nin;
};

/* Release a shard index. */
static void shard_index_destroy(struct zobj *o) {
  struct shard_index_obj *si = (struct shard_index_obj *)o;
  free(si->index);
  free(si);
}

/* What a fill needs to know about its unit or chunk. */
struct unit_job {
  struct engine *e;
  const struct znode *n;
  const uint64_t *idx; /* unit coordinates (chunk coordinates for indexes) */
  const char *key;     /* the chunk's store key */
  const struct chunk_text *ct; /* data fills: the unit */
};

/* Fill: read and check a shard's index; a failure is logged here, once per
 * shard, not once per inner chunk. */
static int shard_index_fill(void *ctx, struct zobj **obj, size_t *cost,
                            struct zerr *err) {
  struct unit_job *j = ctx;
  struct shard_index_obj *si = calloc(1, sizeof *si);
  if (!si)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&si->obj, shard_index_destroy);
  struct bytesrc *src = NULL;
  int rc = store_get(j->e->store, j->key, &src, err);
  if (rc == -ENOENT) {
    zerr_clear(err);
    rc = 0;
  } else if (rc == 0) {
    rc = shard_index_read(j->n->shard, &j->n->spec, src, &j->e->env, &si->index,
                          &si->nin, err);
  }
  bytesrc_unref(src);
  if (rc < 0) {
    log_failure(j->e, j->key, err);
    zobj_put(&si->obj);
    return rc;
  }
  *obj = &si->obj;
  *cost = sizeof *si + (size_t)si->nin * 2 * sizeof(uint64_t);
  return 0;
}

/* ---- units ---- */

/* The encoded bytes of unit idx decoded: a whole chunk from the store, or
 * one inner chunk of its shard through the shard's index. *out is NULL
 * when the unit is the fill value (missing chunk, missing shard, empty
 * inner chunk). *logged is set when the failure was already logged. */
static int unit_source(struct unit_job *j, struct abytes **out, int *logged,
                       struct zerr *err) {
  struct engine *e = j->e;
  const struct znode *n = j->n;
  struct bytesrc *src = NULL;
  *out = NULL;
  if (!n->shard) {
    int rc = store_get(e->store, j->key, &src, err);
    if (rc == -ENOENT) {
      zerr_clear(err);
      return 0;
    }
    if (rc == 0)
      rc = chain_decode(n->chain, &n->spec, src, &e->env, out, err);
    bytesrc_unref(src);
    return rc;
  }
  uint64_t cidx[ZMETA_MAX_DIMS];
  uint64_t inner = unit_chunk(n, j->idx, cidx);
  struct memo_key k;
  engine_key(&k, ELEVEL_SHARD_INDEX, n, cidx, NULL, 0);
  struct unit_job ij = {e, n, cidx, j->key, NULL};
  struct memo_ref *ref;
  int rc = memo_get(e->memo, &k, shard_index_fill, &ij, &ref, err);
  if (rc < 0) {
    *logged = 1;
    return rc;
  }
  const struct shard_index_obj *si =
      (const struct shard_index_obj *)memo_obj(ref);
  if (si->index && !shard_inner_is_empty(si->index, inner)) {
    rc = store_get(e->store, j->key, &src, err);
    if (rc == 0)
      rc = shard_inner_decode(n->shard, &n->spec, src, si->index, inner,
                              &e->env, out, err);
    bytesrc_unref(src);
  }
  memo_release(e->memo, ref);
  return rc;
}

/* Fill: decode unit idx and lay out its text; learn its size on the way.
 * A failure is logged here (naming the chunk's store key). */
static int unit_fill(void *ctx, struct zobj **obj, size_t *cost,
                     struct zerr *err) {
  struct unit_job *j = ctx;
  struct engine *e = j->e;
  const struct znode *n = j->n;
  struct abytes *ab = NULL;
  struct chunk_text *ct = NULL;
  int logged = 0;
  int rc = engine_check_stop(e, err);
  if (rc == 0)
    rc = unit_source(j, &ab, &logged, err);
  if (rc == 0 && !ab)
    rc = engine_fill_unit(n, j->idx, &ct, err);
  else if (rc == 0 && (rc = to_text_type(n, ab, &e->env, err)) == 0) {
    int var_mem = !ab->elsize && ab->data && ab->data->mem;
    struct bytesrc *data = var_mem ? bytesrc_ref(ab->data) : NULL;
    rc = text_layout(&n->form, n->meta->shape, j->idx, ab, e->env.max_decoded,
                     e->render_max, &e->stopping, &ct, err);
    ab = NULL; /* taken by text_layout */
    /* Strings decoded into memory: their text is about their size, so
     * keep the text instead (reads become copies). Deferred or lazy data
     * sections (zarrs.vlen) stay as they are: a read fetches only what it
     * needs. */
    if (rc == 0 && var_mem && ct->size <= e->render_max &&
        (rc = text_render_all(ct, data, err)) < 0)
      zobj_put(&ct->obj);
    bytesrc_unref(data);
  }
  abytes_free(ab);
  if (rc < 0) {
    if (!logged)
      log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  struct memo_key sk;
  engine_key(&sk, ELEVEL_UNIT_SIZE, n, j->idx, NULL, 0);
  memo_value_put(e->memo, &sk, ct->size);
  *obj = &ct->obj;
  *cost = ct->cost;
  return 0;
}

/* A unit inside the grid of a readable array? */
static int unit_check(const struct znode *n, const uint64_t *idx,
                      struct zerr *err) {
  ZTRY(node_check(n, err));
  for (int d = 0; d < n->meta->ndim; d++)
    if (idx[d] >= n->ugrid[d])
      return zerr_set(err, ENOENT, "chunk outside the grid");
  return 0;
}

/* Memoised unit decode. */
int engine_unit(struct engine *e, const struct znode *n, const uint64_t *idx,
                struct memo_ref **out, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct memo_key k;
  engine_key(&k, ELEVEL_UNIT, n, idx, NULL, 0);
  struct unit_job j = {e, n, idx, key, NULL};
  return memo_get(e->memo, &k, unit_fill, &j, out, err);
}

/* A fill unit: arithmetic text, nothing read. */
int engine_fill_unit(const struct znode *n, const uint64_t *idx,
                     struct chunk_text **out, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  return text_fill_unit(&n->form, n->meta->shape, idx, out, err);
}

/* A variable-length unit's element bytes, decoded (memo object): its
 * text rendered whole when that fits render_max, else the bytes. */
struct data_obj {
  struct zobj obj;
  struct bytesrc *src;     /* the element bytes, or NULL */
  struct chunk_text *text; /* the unit rendered (a reference), or NULL */
};

/* Release a data section. */
static void data_obj_destroy(struct zobj *o) {
  struct data_obj *d = (struct data_obj *)o;
  bytesrc_unref(d->src);
  if (d->text)
    zobj_put(&d->text->obj);
  free(d);
}

/* Fill: run a unit's deferred data codecs, and render the text whole
 * when it fits. */
static int data_fill(void *ctx, struct zobj **obj, size_t *cost,
                     struct zerr *err) {
  struct unit_job *j = ctx;
  struct engine *e = j->e;
  struct data_obj *d = calloc(1, sizeof *d);
  if (!d)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&d->obj, data_obj_destroy);
  int rc = engine_check_stop(e, err);
  if (rc == 0)
    rc = abytes_load_data(j->ct->ab, &e->env, &d->src, err);
  if (rc == 0 && j->ct->size <= e->render_max &&
      (rc = text_render_copy(j->ct, d->src, e->env.max_decoded, &d->text,
                             err)) == 0) {
    bytesrc_unref(d->src);
    d->src = NULL;
  }
  if (rc < 0) {
    zobj_put(&d->obj);
    log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  *obj = &d->obj;
  *cost = sizeof *d + (d->text ? d->text->cost
                               : d->src->mem ? (size_t)d->src->size : 0);
  return 0;
}

/* See engine.h. */
int engine_unit_src(struct engine *e, const struct znode *n,
                    const struct chunk_text *ct, const struct chunk_text **rct,
                    struct bytesrc **data, struct memo_ref **pin,
                    struct zerr *err) {
  *rct = ct;
  *data = NULL;
  *pin = NULL;
  if (!ct->ab || ct->ab->elsize)
    return 0; /* a fill unit, fixed-size elements, or rendered already */
  if (ct->ab->data) {
    /* Bytes at hand (uncompressed zarrs.vlen): a read takes the few it
     * needs straight into its buffer, which beats a copy of the whole. */
    *data = bytesrc_ref(ct->ab->data);
    return 0;
  }
  char key[4096];
  ZTRY(unit_store_key(n, ct->idx, key, sizeof key, err));
  struct memo_key k;
  engine_key(&k, ELEVEL_DATA, n, ct->idx, NULL, 0);
  struct unit_job j = {e, n, ct->idx, key, ct};
  struct memo_ref *ref;
  ZTRY(memo_get(e->memo, &k, data_fill, &j, &ref, err));
  const struct data_obj *d = (const struct data_obj *)memo_obj(ref);
  if (d->text)
    *rct = d->text;
  else
    *data = bytesrc_ref(d->src);
  *pin = ref;
  return 0;
}

/* ---- units read through a plain zarrs.vlen index ---- */

/* Are the units of n zarrs.vlen chunks with a plain index whose text is
 * linear in their offsets (strings and bytes: a line is k bytes per
 * element byte plus its newline), with their in-bounds elements first
 * (every dimension but the first whole)? *plain_data: element bytes are
 * stored plain too. */
static int unit_direct(const struct znode *n, const uint64_t *idx,
                       int *plain_data) {
  if (n->shard || !vlen_direct_ok(n->chain, plain_data))
    return 0;
  if (n->form.dt.kind != DT_STRING && n->form.dt.kind != DT_BYTES)
    return 0;
  for (int d = 1; d < n->meta->ndim; d++)
    if ((idx[d] + 1) * n->uspec.shape[d] > n->meta->shape[d])
      return 0;
  return 1;
}

/* See engine.h. */
uint64_t engine_unit_nin(const struct znode *n, const uint64_t *idx) {
  uint64_t nin = 1;
  for (int d = 0; d < n->meta->ndim; d++) {
    uint64_t u = n->uspec.shape[d], start = idx[d] * u;
    nin *= n->meta->shape[d] - start < u ? n->meta->shape[d] - start : u;
  }
  return nin;
}

/* Open unit idx directly: 1 and *d (close it), 0 when the chunk is not
 * stored, or negative. */
static int direct_open(struct engine *e, const struct znode *n,
                       const uint64_t *idx, struct vlen_direct *d,
                       struct zerr *err) {
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct bytesrc *src;
  int rc = store_get(e->store, key, &src, err);
  if (rc == -ENOENT) {
    zerr_clear(err);
    return 0;
  }
  if (rc < 0)
    return rc;
  rc = vlen_direct_open(n->chain, n->uspec.nelem, src, d, err);
  bytesrc_unref(src);
  return rc < 0 ? rc : 1;
}

/* A unit's text size from the first and the last in-bounds offsets: -1
 * when that cannot be done (then the unit is decoded). */
static int unit_size_direct(struct engine *e, const struct znode *n,
                            const uint64_t *idx, uint64_t *value) {
  int plain;
  if (!unit_direct(n, idx, &plain))
    return -1;
  struct zerr err = {0};
  struct vlen_direct d;
  uint64_t nin = engine_unit_nin(n, idx), o0, on;
  int rc = direct_open(e, n, idx, &d, &err);
  if (rc == 0) { /* not stored: the fill value */
    *value = nin * (n->form.fill_len + 1);
    return 0;
  }
  if (rc > 0) {
    rc = vlen_direct_offsets(&d, 0, 1, &o0, &err);
    if (rc == 0)
      rc = vlen_direct_offsets(&d, nin, 1, &on, &err);
    vlen_direct_close(&d);
  }
  if (rc < 0 || on < o0)
    return -1; /* the decode says what is wrong, once */
  *value = render_var_len(&n->form.dt, on - o0) + nin;
  return 0;
}

/* Elements rendered per step of a direct read. */
#define DIRECT_BATCH 65536
/* Below this many candidates the search reads them all at once. */
#define DIRECT_SCAN 4096

/* See engine.h. */
long engine_unit_read_direct(struct engine *e, const struct znode *n,
                             const uint64_t *idx, uint64_t off, size_t len,
                             char *dst, struct zerr *err) {
  int plain;
  if (!unit_direct(n, idx, &plain) || !plain)
    return -ENOTSUP;
  uint64_t total;
  ZTRY(engine_unit_size(e, n, idx, &total, err));
  if (off >= total || !len)
    return 0;
  if (len > total - off)
    len = (size_t)(total - off);
  struct vlen_direct d;
  int rc = direct_open(e, n, idx, &d, err);
  if (rc <= 0)
    return rc == 0 ? -ENOTSUP : rc; /* a fill unit: the usual way */
  const struct dtype *dt = &n->form.dt;
  uint64_t nin = engine_unit_nin(n, idx), o0;
  uint64_t *o = malloc((DIRECT_BATCH + 1) * sizeof *o);
  rc = o ? vlen_direct_offsets(&d, 0, 1, &o0, err)
         : zerr_set(err, ENOMEM, "out of memory");
  /* The element whose line holds off: line k starts at
   * render_var_len(o[k] - o[0]) + k, which grows with k. */
  uint64_t lo = 0, hi = nin; /* line lo starts <= off; line hi > off */
  while (rc == 0 && hi - lo > 1) {
    if (hi - lo <= DIRECT_SCAN) {
      uint64_t cnt = hi - lo;
      rc = vlen_direct_offsets(&d, lo, cnt, o, err);
      uint64_t i = 1;
      while (rc == 0 && i < cnt && o[i] >= o0 &&
             render_var_len(dt, o[i] - o0) + lo + i <= off)
        i++;
      hi = (lo += i - 1) + 1;
      break;
    }
    uint64_t mid = lo + (hi - lo) / 2, om;
    rc = vlen_direct_offsets(&d, mid, 1, &om, err);
    if (rc == 0 && om < o0)
      rc = zerr_set(err, EIO, "zarrs.vlen: offset %llu is out of order",
                    (unsigned long long)mid);
    if (rc == 0 && render_var_len(dt, om - o0) + mid <= off)
      lo = mid;
    else
      hi = mid;
  }
  /* Render from element lo on, a batch of elements at a time, through a
   * small unit of just those elements. */
  size_t done = 0;
  uint64_t k = lo;
  /* Batches sized by the bytes still wanted (at the unit's mean line
   * length, plus a margin): a read takes about the offsets it shows. */
  uint64_t mean = total / (nin ? nin : 1) + 1;
  while (rc == 0 && done < len && k < nin) {
    uint64_t b = (len - done) / mean + 16;
    if (b > DIRECT_BATCH)
      b = DIRECT_BATCH;
    if (b > nin - k)
      b = nin - k;
    rc = vlen_direct_offsets(&d, k, b + 1, o, err);
    if (rc < 0 || o[0] < o0)
      break;
    uint64_t kpos = render_var_len(dt, o[0] - o0) + k;
    struct text_form f1 = n->form;
    f1.ndim = 1;
    f1.shape[0] = b;
    struct abytes *ab = abytes_alloc();
    uint64_t *offs = malloc((size_t)(b + 1) * sizeof *offs);
    if (!ab || !offs) {
      abytes_free(ab);
      free(offs);
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    memcpy(offs, o, (size_t)(b + 1) * sizeof *offs);
    ab->n = b;
    ab->offsets = offs;
    ab->data = bytesrc_ref(d.data);
    ab->data_len = o[b];
    struct chunk_text *ct;
    uint64_t zero = 0;
    rc = text_layout(&f1, &b, &zero, ab, e->env.max_decoded, 0, &e->stopping,
                     &ct, err);
    if (rc < 0)
      break;
    uint64_t at = off + done; /* >= kpos */
    long got = text_read(ct, d.data, at - kpos, len - done, dst + done, err);
    zobj_put(&ct->obj);
    if (got < 0) {
      rc = (int)got;
      break;
    }
    done += (size_t)got;
    k += b;
  }
  free(o);
  vlen_direct_close(&d);
  if (rc == 0 && done != len)
    rc = zerr_set(err, EIO, "zarrs.vlen: index and sizes disagree");
  if (rc < 0) {
    char key[4096];
    if (unit_store_key(n, idx, key, sizeof key, err) == 0)
      log_failure(e, key, err);
    return rc;
  }
  return (long)done;
}

/* Fill: a unit's text size: from a plain zarrs.vlen index's ends, or by
 * decoding the unit (which keeps it for the reads that follow). */
static int unit_size_fill(void *ctx, uint64_t *value, struct zerr *err) {
  struct unit_job *j = ctx;
  if (unit_size_direct(j->e, j->n, j->idx, value) == 0)
    return 0;
  struct memo_ref *ref;
  ZTRY(engine_unit(j->e, j->n, j->idx, &ref, err));
  *value = engine_ref_unit(ref)->size;
  memo_release(j->e->memo, ref);
  return 0;
}

/* Size from the memo's values, or decode once to learn it. */
int engine_unit_size(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t *size, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  struct memo_key k;
  engine_key(&k, ELEVEL_UNIT_SIZE, n, idx, NULL, 0);
  struct unit_job j = {e, n, idx, NULL, NULL};
  return memo_value(e->memo, &k, unit_size_fill, &j, size, err);
}

/* Fill: list the array's stored chunks. */
static int presence_fill(void *ctx, struct zobj **obj, size_t *cost,
                         struct zerr *err) {
  struct unit_job *j = ctx;
  struct presence *p;
  int rc = presence_scan(j->e->store, j->n->path, j->n->meta,
                         j->e->env.max_decoded / sizeof(uint64_t),
                         &j->e->stopping, &p, err);
  if (rc < 0) {
    log_failure(j->e, *j->n->path ? j->n->path : ".", err);
    return zerr_prefix(err, "listing chunks: ");
  }
  *obj = &p->obj;
  *cost = presence_cost(p);
  return 0;
}

/* Memoised presence scan. */
int engine_presence(struct engine *e, const struct znode *n,
                    struct memo_ref **out, struct zerr *err) {
  ZTRY(node_check(n, err));
  struct memo_key k;
  engine_key(&k, ELEVEL_PRESENCE, n, NULL, NULL, 0);
  struct unit_job j = {e, n, NULL, NULL, NULL};
  return memo_get(e->memo, &k, presence_fill, &j, out, err);
}
