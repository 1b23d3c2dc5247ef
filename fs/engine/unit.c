/* unit.c - decoded units through the memo, and the failures met decoding
 * them, logged once (see unit.h). The bottom of the unit module: it never
 * calls unitwin.c, which reads units partially and learns their sizes on
 * top of it (tests/calls.sh). */
#include "unit.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/store/presence.h"
#include "../../src/store/sizeindex.h"
#include "../../src/util/htab.h"
#include "../text/textprep.h"

/* The chunk holding unit idx, and the unit's C-order index inside it. */
static uint64_t unit_chunk(const struct znode *n, const uint64_t *idx,
                           uint64_t *cidx) {
  const struct zmeta *m = n->meta;
  uint64_t inner = 0;
  for (int d = 0; d < m->ndim; d++) {
    if (!n->shard) { /* units are chunks */
      cidx[d] = idx[d];
      continue;
    }
    /* inner chunks: uniform, and each chunk holds a whole number */
    uint64_t u = n->uspec.shape[d], x = idx[d] * u;
    cidx[d] = zmeta_chunk_of(m, d, x);
    uint64_t per = zmeta_chunk_len(m, d, cidx[d]) / u;
    inner = inner * per + (x - zmeta_chunk_start(m, d, cidx[d])) / u;
  }
  return inner;
}

/* See unit.h. */
int unit_store_key(const struct znode *n, const uint64_t *idx, char *key,
                   size_t len, struct zerr *err) {
  uint64_t cidx[ZMETA_MAX_DIMS];
  unit_chunk(n, idx, cidx);
  if (node_chunk_key(n, cidx, key, len) < 0)
    return zerr_set(err, ENAMETOOLONG, "chunk key too long");
  return 0;
}

/* What the persistent index knows unit idx by, into *id (its key in key,
 * len bytes): the store's location, the chunk's key (and the inner
 * chunk's place in its shard), the stored object's size and version (what
 * names its bytes: those of the source a decode read, or 0 to ask the
 * store, store_version), what makes the text (the metadata document, the
 * fill text, a CF or CSV view's attributes) and the text rules. 0, or -1
 * when the unit is not indexed (no index, a remote store, no metadata
 * hash, an object without a version: inline or remote bytes). */
int unit_ident(struct engine *e, const struct znode *n, const uint64_t *idx,
               uint64_t size, uint64_t version, char *key, size_t len,
               struct sizeindex_id *id) {
  if (!e->sizeidx || e->store->remote || !n->meta || !n->meta->root ||
      !n->meta_hash)
    return -1;
  struct zerr err = {0};
  if (unit_store_key(n, idx, key, len, &err) < 0 ||
      (!version && store_version(e->store, key, &size, &version, &err) < 0))
    return -1;
  if (n->shard) { /* which inner chunk of the shard */
    size_t at = strlen(key);
    for (int d = 0; d < n->meta->ndim; d++) {
      int w = snprintf(key + at, len - at, "%c%llu", d ? ',' : '#',
                       (unsigned long long)idx[d]);
      if (w < 0 || (size_t)w >= len - at)
        return -1;
      at += (size_t)w;
    }
  }
  *id = (struct sizeindex_id){
      e->store->location, key, size, version, unit_text_hash(n),
      UNIT_TEXT_RULES};
  return 0;
}

/* See unit.h. */
uint64_t unit_text_hash(const struct znode *n) {
  /* What makes the text: the whole metadata document (codecs, data type,
   * fill value, shape) and the fill text drawn from it. */
  uint64_t h = n->meta_hash;
  if (n->form.fill)
    h = htab_hash_bytes(n->form.fill, n->form.fill_len, h);
  /* a CF or CSV view's units: text of their own from the same chunk and
   * the attributes */
  if (n->form.cf || n->form.csv) {
    h = htab_hash_bytes(n->form.csv ? "csv" : "cf", n->form.csv ? 3 : 2, h);
    h = htab_hash_bytes(&n->attrs_hash, sizeof n->attrs_hash, h);
  }
  return h;
}

/* A decode (or a pass over a stream) found unit idx's text to be `truth`
 * bytes where `known` (a learned size, UNIT_SIZE_CLAIM set when the
 * persistent index or the chunk's stream header claimed it) was taken
 * before. The unit's size is the truth from now on (the caller puts it,
 * and its record); here: one log line, the node's sizes made anew
 * (fs/node.h, node_sizes_changed: every layout, region size and row built
 * on the old size is dropped), and when the text grew, whoever may have
 * told the kernel the old size is told to ask again (engine.size_grew): a
 * reader whose file size is the old one would stop there. A text that
 * shrank needs nothing: the read that ends it early makes the kernel take
 * the shorter size. */
void unit_size_wrong(struct engine *e, const struct znode *n,
                     const uint64_t *idx, const char *key, uint64_t known,
                     uint64_t truth) {
  char msg[200];
  snprintf(msg, sizeof msg,
           "text is %llu bytes where %llu were %s: sizes learned again",
           (unsigned long long)truth,
           (unsigned long long)(known & ~UNIT_SIZE_CLAIM),
           known & UNIT_SIZE_CLAIM
               ? "claimed by the size index (its record is replaced) or "
                 "by the chunk's stream header"
               : "learned before (the chunk changed while mounted?)");
  engine_log(e, key, msg);
  node_sizes_changed(n);
  if (truth > (known & ~UNIT_SIZE_CLAIM) && !e->parent && e->size_grew)
    e->size_grew(e->size_grew_ud, n, idx);
}

/* See unit.h. */
void unit_log_failure(struct engine *e, const char *key,
                      const struct zerr *err) {
  if (err->code != EINTR)
    engine_log(e, key, err->msg);
}

/* ---- shard indexes ---- */

/* A shard's decoded index (memo object). */
struct uindex_obj {
  struct zobj obj;
  struct chain_index *index; /* NULL: shard missing, every inner chunk is
                                the fill value */
};

/* Release a shard index. */
static void uindex_destroy(struct zobj *o) {
  struct uindex_obj *si = (struct uindex_obj *)o;
  chain_index_free(si->index);
  free(si);
}

/* Fill: read and check a shard's index; a failure is logged here, once per
 * shard, not once per inner chunk. */
static int uindex_fill(void *ctx, struct zobj **obj, size_t *cost,
                       struct zerr *err) {
  struct unit_job *j = ctx;
  struct uindex_obj *si = calloc(1, sizeof *si);
  if (!si)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&si->obj, uindex_destroy);
  struct bytesrc *src = NULL;
  int rc = store_get(j->e->store, j->key, &src, err);
  if (rc == -ENOENT) {
    zerr_clear(err);
    rc = 0;
  } else if (rc == 0) {
    struct codec_spec tmp;
    rc = chain_index_read(j->n->chain, node_chunk_spec(j->n, j->idx, &tmp), src,
                          &j->e->env, &si->index, err);
  }
  bytesrc_unref(src);
  if (rc < 0) {
    unit_log_failure(j->e, j->key, err);
    zobj_put(&si->obj);
    return rc;
  }
  *obj = &si->obj;
  *cost = sizeof *si + (si->index ? chain_index_cost(si->index) : 0);
  return 0;
}

/* ---- units ---- */

/* The index of the shard holding unit j->idx, pinned in *ref: the
 * shard's chunk coordinates in cidx, the unit's place in it in *inner. */
static int unit_shard_index(struct unit_job *j, uint64_t *cidx, uint64_t *inner,
                            struct memo_ref **ref, struct zerr *err) {
  *inner = unit_chunk(j->n, j->idx, cidx);
  struct memo_key k;
  node_key(&k, ELEVEL_SHARD_INDEX, j->n, cidx, NULL, 0);
  struct unit_job ij = {j->e, j->n, cidx, j->key, NULL, 0, 0, 0, 0};
  return memo_get(j->e->memo, &k, uindex_fill, &ij, ref, err);
}

/* The stored object of unit j (not sharded) in *out, a new reference,
 * its size and version noted in j; NULL when the chunk is missing. */
static int unit_fetch(struct unit_job *j, struct bytesrc **out,
                      struct zerr *err) {
  *out = NULL;
  int rc = store_get(j->e->store, j->key, out, err);
  if (rc == -ENOENT) {
    zerr_clear(err);
    return 0;
  }
  if (rc < 0)
    return rc;
  j->src_size = (*out)->size;
  j->src_version = (*out)->version;
  return 0;
}

/* See unit.h. */
int unit_source(struct unit_job *j, struct abytes **out, int *logged,
                struct zerr *err) {
  struct engine *e = j->e;
  const struct znode *n = j->n;
  struct bytesrc *src = NULL;
  *out = NULL;
  if (!n->shard) {
    int rc = unit_fetch(j, &src, err);
    struct codec_spec tmp;
    if (rc == 0 && src)
      rc = chain_decode(n->chain, node_chunk_spec(n, j->idx, &tmp), src,
                        &e->env, out, err);
    bytesrc_unref(src);
    return rc;
  }
  uint64_t cidx[ZMETA_MAX_DIMS], inner;
  struct memo_ref *ref;
  int rc = unit_shard_index(j, cidx, &inner, &ref, err);
  if (rc < 0) {
    *logged = 1;
    return rc;
  }
  const struct uindex_obj *si = (const struct uindex_obj *)memo_obj(ref);
  uint64_t off, len;
  if (si->index && chain_index_range(si->index, inner, &off, &len)) {
    rc = store_get(e->store, j->key, &src, err);
    struct codec_spec tmp;
    if (rc == 0) { /* the shard's: records name the inner chunk in the key */
      j->src_size = src->size;
      j->src_version = src->version;
    }
    if (rc == 0)
      rc = chain_inner_decode(n->chain, node_chunk_spec(n, cidx, &tmp), src,
                              si->index, inner, &e->env, out, err);
    bytesrc_unref(src);
  }
  memo_release(e->memo, ref);
  return rc;
}

/* See unit.h. */
int unit_encoded(struct unit_job *j, struct bytesrc **out,
                 const struct chain **chain, struct zerr *err) {
  struct engine *e = j->e;
  const struct znode *n = j->n;
  struct bytesrc *src = NULL;
  *out = NULL;
  *chain = n->shard ? n->shard : n->chain;
  int rc = store_get(e->store, j->key, &src, err);
  if (rc == -ENOENT) {
    zerr_clear(err);
    return 0;
  }
  if (rc < 0 || !n->shard) {
    *out = src;
    return rc < 0 ? rc : 1;
  }
  uint64_t cidx[ZMETA_MAX_DIMS], inner;
  struct memo_ref *ref;
  rc = unit_shard_index(j, cidx, &inner, &ref, err);
  if (rc == 0) {
    const struct uindex_obj *si = (const struct uindex_obj *)memo_obj(ref);
    uint64_t off, len;
    if (si->index && chain_index_range(si->index, inner, &off, &len))
      rc = bytesrc_sub(src, off, len, out, err);
    memo_release(e->memo, ref);
  }
  bytesrc_unref(src);
  return rc < 0 ? rc : *out != NULL;
}

/* ---- decoded bytes shared by the views of one array ---- */

/* A unit's bytes out of the codec chain (memo object, ELEVEL_DECODED),
 * before any view's text preparation; NULL ab: the fill value. */
struct decoded_obj {
  struct zobj obj;
  struct abytes *ab;
  uint64_t src_size, src_version; /* of the object decoded (unit_job) */
};

/* Release decoded bytes. */
static void decoded_destroy(struct zobj *o) {
  struct decoded_obj *d = (struct decoded_obj *)o;
  abytes_free(d->ab);
  free(d);
}

/* A decoded_fill's job: whether it ran tells the unit fill that a decode
 * happened for it (the stats count decodes, not views). */
struct decoded_job {
  struct unit_job j; /* of the array's own node */
  int filled;
};

/* Fill: decode a unit of the array's own node once for all its views,
 * logging a failure here. */
static int decoded_fill(void *ctx, struct zobj **obj, size_t *cost,
                        struct zerr *err) {
  struct decoded_job *dj = ctx;
  struct unit_job *j = &dj->j;
  struct decoded_obj *d = calloc(1, sizeof *d);
  if (!d)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&d->obj, decoded_destroy);
  dj->filled = 1;
  int logged = 0;
  int rc = engine_check_stop(j->e, err);
  if (rc == 0)
    rc = unit_source(j, &d->ab, &logged, err);
  if (rc < 0) {
    if (!logged)
      unit_log_failure(j->e, j->key, err);
    zobj_put(&d->obj);
    return rc;
  }
  d->src_size = j->src_size;
  d->src_version = j->src_version;
  *obj = &d->obj;
  *cost = sizeof *d + abytes_mem_cost(d->ab);
  return 0;
}

/* unit_source for the unit fill of a view's node: the views of an array
 * with CF views (values.txt, values.cf.txt and rows.csv, each read as
 * the array's data is looked at both ways) share its decoded bytes, so a
 * chunk goes through the codec chain once. *out is the unit's own
 * abytes, sharing the entry's buffers by reference (text preparation
 * replaces a buffer rather than write into it, and a shared buffer is
 * never turned into text in place). A unit's cost counts the buffers it
 * holds, shared or not, so memory stays within the budget whichever of
 * the two entries is evicted first; the price is that the shared bytes
 * take budget twice while both entries are cached, which is why arrays
 * without CF views (whose rows.csv is seldom read beside values.txt)
 * keep one entry per unit. *fresh: a decode ran here. */
static int unit_decoded(struct unit_job *j, struct abytes **out, int *logged,
                        int *fresh, struct zerr *err) {
  const struct znode *base = j->n->base ? j->n->base : j->n;
  *out = NULL;
  *fresh = 1;
  if (!base->cf) /* see above */
    return unit_source(j, out, logged, err);
  struct memo_key k;
  node_key(&k, ELEVEL_DECODED, base, j->idx, NULL, 0);
  struct decoded_job dj = {{j->e, base, j->idx, j->key, NULL, 0, 0, 0, 0}, 0};
  struct memo_ref *ref;
  int rc = memo_get(j->e->memo, &k, decoded_fill, &dj, &ref, err);
  *fresh = dj.filled;
  if (rc < 0) {
    *logged = 1;
    return rc;
  }
  const struct decoded_obj *dobj = (const struct decoded_obj *)memo_obj(ref);
  const struct abytes *ab = dobj->ab;
  j->src_size = dobj->src_size;
  j->src_version = dobj->src_version;
  struct abytes *c = ab ? abytes_alloc() : NULL;
  if (ab && c) {
    *c = *ab;
    c->fixed = bytesrc_ref(ab->fixed);
    c->data = bytesrc_ref(ab->data);
    c->data_enc = bytesrc_ref(ab->data_enc);
    c->offsets = NULL;
    size_t olen = (size_t)(ab->n + 1) * sizeof *c->offsets;
    if (ab->offsets && (c->offsets = malloc(olen)))
      memcpy(c->offsets, ab->offsets, olen);
  }
  memo_release(j->e->memo, ref);
  if (ab && (!c || (ab->offsets && !c->offsets))) {
    abytes_free(c);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *out = c;
  return 0;
}

/* The decoded characters of a unit of a character array seen by its
 * joined node n (struct znode.join): each run along the last dimension
 * becomes one |S<join> element, the bytes as they lie. */
static int unit_join(const struct znode *n, struct abytes *ab,
                     struct zerr *err) {
  if (ab->elsize != 1 || !ab->fixed || ab->n != n->uspec.nelem * n->join)
    return zerr_set(err, EIO, "a character chunk of %llu elements, not %llu",
                    (unsigned long long)ab->n,
                    (unsigned long long)(n->uspec.nelem * n->join));
  ab->elsize = (size_t)n->join;
  ab->n = n->uspec.nelem;
  return 0;
}

/* Record the text size a decode of j's object learned in the persistent
 * index, keyed by the version of the bytes decoded (none when unknown). A
 * failure only means it is learned again next time. */
static void unit_record(const struct unit_job *j, uint64_t size,
                        uint64_t lines) {
  char ikey[4096];
  struct sizeindex_id id;
  if (j->src_version &&
      unit_ident(j->e, j->n, j->idx, j->src_size, j->src_version, ikey,
                 sizeof ikey, &id) == 0) {
    struct sizeindex_rec rec = {size, lines};
    sizeindex_store(j->e->sizeidx, &id, &rec);
  }
}

/* A unit of strings whose chunk is records one after another (vlen-utf8
 * behind zstd, say) has its text made over the records where the
 * decode left them (text_layout_records): one pass where a decode into
 * an abytes and its layout take two, and no offsets. 1 when the unit is
 * not such (nothing read); else 0 with *ct (made), or *ab (the records
 * did not suit the text after all: decoded as ever), or neither (the
 * chunk is missing: a fill unit), or a negative errno. */
static int unit_records(struct unit_job *j, struct abytes **ab,
                        struct chunk_text **ct, struct zerr *err) {
  struct engine *e = j->e;
  const struct znode *n = j->n;
  if (n->base || n->cf || n->shard || n->join || !e->render_max ||
      n->meta->dtype.kind != DT_STRING || !chain_records_capable(n->chain))
    return 1;
  struct bytesrc *src;
  int rc = unit_fetch(j, &src, err);
  if (rc < 0 || !src)
    return rc; /* missing: a fill unit */
  struct codec_spec tmp;
  const struct codec_spec *spec = node_chunk_spec(n, j->idx, &tmp);
  struct chain_records r;
  rc = chain_records_decode(n->chain, spec, src, &e->env, &r, err);
  bytesrc_unref(src);
  if (rc == 0)
    rc = text_layout_records(&n->form, n->meta->shape, j->idx, &r,
                             e->render_max, &e->stopping, ct, err);
  if (rc == 0)
    rc = chain_records_abytes(&r, spec, &e->env, ab, err);
  chain_records_free(&r);
  return rc < 0 ? rc : 0;
}

/* Units this thread's decodes left with their text whole (unit_made_whole). */
static _Thread_local uint64_t unit_whole_here;

/* See unit.h. */
uint64_t unit_made_whole(void) { return unit_whole_here; }

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
  uint64_t t0 = stats_now_ns();
  int rc = engine_check_stop(e, err);
  int fresh = 1;
  if (rc == 0 && (rc = unit_records(j, &ab, &ct, err)) == 1)
    rc = unit_decoded(j, &ab, &logged, &fresh, err);
  int decoded = rc == 0 && (ab || ct);
  if (fresh && (rc < 0 || ab || ct)) { /* a decode (not a fill unit) */
    engine_req_note_unit();
    stats_add(&e->stats.decodes, 1);
    stats_add(&e->stats.decode_ns, stats_now_ns() - t0);
  }
  if (rc == 0 && ct) {
    /* made from the chunk's records */
  } else if (rc == 0 && !ab)
    rc = unit_new_fill(n, j->idx, &ct, err);
  else if (rc == 0 && (!n->join || (rc = unit_join(n, ab, err)) == 0) &&
           (rc = textprep_to_text(&n->meta->dtype, &n->form, ab, &e->env,
                                  err)) == 0) {
    int var_mem = !ab->elsize && ab->data && ab->data->mem;
    /* (no reference of ours to ab->data: text_layout may turn a buffer
     * that is the unit's alone into its text in place) */
    rc = text_layout(&n->form, n->meta->shape, j->idx, ab, e->env.max_decoded,
                     e->render_max, e->ahead, &e->stopping, &ct, err);
    ab = NULL; /* taken by text_layout */
    /* Strings decoded into memory: their text is about their size, so
     * keep the text instead (reads become copies); text_layout has done
     * so where it could. Deferred or lazy data sections stay as they
     * are: a read fetches only what it needs. */
    if (rc == 0 && var_mem && !ct->text && ct->ab &&
        ct->size <= e->render_max &&
        (rc = text_render_all(ct, ct->ab->data, err)) < 0)
      zobj_put(&ct->obj);
  }
  abytes_free(ab);
  if (rc < 0) {
    if (!logged)
      unit_log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  struct memo_key sk;
  node_key(&sk, ELEVEL_UNIT_SIZE, n, j->idx, NULL, 0);
  /* The size known already (from the persistent index, the index ends, a
   * pass over a stream or another decode) is checked against the truth:
   * a size that is wrong is replaced, never believed (unit_size_wrong).
   * A size learned by a decode, or contradicted, goes to the persistent
   * index, keyed by the version of the bytes just decoded; one that came
   * from there and holds is there already. */
  uint64_t known;
  int had = memo_value_peek(e->memo, &sk, &known);
  if (!had && j->claim) { /* a region record's claim: held, nothing kept */
    had = 1;
    known = j->claim;
  }
  j->filled = 1;
  if (decoded && had && (known & ~UNIT_SIZE_CLAIM) != ct->size)
    unit_size_wrong(e, n, j->idx, j->key, known, ct->size);
  memo_value_put(e->memo, &sk, ct->size);
  if (decoded && (!had || (known & ~UNIT_SIZE_CLAIM) != ct->size))
    unit_record(j, ct->size, ct->nin);
  if (fresh)
    engine_debug(e, ENGINE_DEBUG_DECODE,
                 "decode %s: %llu bytes of text in %.1f ms", j->key,
                 (unsigned long long)ct->size,
                 (double)(stats_now_ns() - t0) / 1e6);
  unit_whole_here += ct->text != NULL;
  *obj = &ct->obj;
  *cost = ct->cost;
  return 0;
}

/* A unit inside the grid of a readable array? */
int unit_check(const struct znode *n, const uint64_t *idx, struct zerr *err) {
  ZTRY(node_check(n, err));
  for (int d = 0; d < n->meta->ndim; d++)
    if (idx[d] >= n->ugrid[d])
      return zerr_set(err, ENOENT, "chunk outside the grid");
  return 0;
}

/* See unit.h. */
int unit_get_claimed(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t claim, struct memo_ref **out,
                     int *filled, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct memo_key k;
  node_key(&k, ELEVEL_UNIT, n, idx, NULL, 0);
  struct unit_job j = {e, n, idx, key, NULL, 0, 0, claim, 0};
  if (engine_debugging()) /* the cache's decision, as it is about to be */
    engine_debug(e, ENGINE_DEBUG_CACHE, "cache: %s: %s", key,
                 memo_present(e->memo, &k) ? "in the cache"
                                           : "not in the cache, decoding");
  int rc = memo_get(e->memo, &k, unit_fill, &j, out, err);
  *filled = j.filled;
  return rc;
}

/* Memoised unit decode. */
int unit_get(struct engine *e, const struct znode *n, const uint64_t *idx,
             struct memo_ref **out, struct zerr *err) {
  int filled;
  return unit_get_claimed(e, n, idx, 0, out, &filled, err);
}

/* A fill unit: arithmetic text, nothing read. */
int unit_new_fill(const struct znode *n, const uint64_t *idx,
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
    rc = chain_load_data(j->ct->ab, &e->env, &d->src, err);
  if (rc == 0 && j->ct->size <= e->render_max &&
      (rc = text_render_copy(j->ct, d->src, e->env.max_decoded, &d->text,
                             err)) == 0) {
    bytesrc_unref(d->src);
    d->src = NULL;
  }
  if (rc < 0) {
    zobj_put(&d->obj);
    unit_log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  *obj = &d->obj;
  *cost = sizeof *d + (d->text       ? d->text->cost
                       : d->src->mem ? (size_t)d->src->size
                                     : 0);
  return 0;
}

/* See unit.h. */
int unit_src(struct engine *e, const struct znode *n,
             const struct chunk_text *ct, const struct chunk_text **rct,
             struct bytesrc **data, struct memo_ref **pin, struct zerr *err) {
  *rct = ct;
  *data = NULL;
  *pin = NULL;
  if (!ct->ab || ct->ab->elsize)
    return 0; /* a fill unit, fixed-size elements, or rendered already */
  if (ct->ab->data) {
    /* Bytes at hand (an uncompressed data section): a read takes the few it
     * needs straight into its buffer, which beats a copy of the whole. */
    *data = bytesrc_ref(ct->ab->data);
    return 0;
  }
  char key[4096];
  ZTRY(unit_store_key(n, ct->idx, key, sizeof key, err));
  struct memo_key k;
  node_key(&k, ELEVEL_DATA, n, ct->idx, NULL, 0);
  struct unit_job j = {e, n, ct->idx, key, ct, 0, 0, 0, 0};
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

/* See unit.h. */
int unit_measure(struct unit_job *j, int record, uint64_t *value,
                 struct zerr *err) {
  struct engine *e = j->e;
  const struct znode *n = j->n;
  char key[4096];
  ZTRY(unit_store_key(n, j->idx, key, sizeof key, err));
  struct unit_job dj = *j;
  dj.key = key;
  struct abytes *ab = NULL;
  int logged = 0, fresh = 1;
  uint64_t t0 = stats_now_ns();
  int rc = engine_check_stop(e, err);
  if (rc == 0)
    rc = unit_decoded(&dj, &ab, &logged, &fresh, err);
  if (fresh && (rc < 0 || ab)) { /* a decode (not a fill unit) */
    engine_req_note_unit();
    stats_add(&e->stats.decodes, 1);
    stats_add(&e->stats.decode_ns, stats_now_ns() - t0);
  }
  if (rc == 0 && !ab) {
    struct chunk_text *ct;
    if ((rc = unit_new_fill(n, j->idx, &ct, err)) == 0) {
      *value = ct->size;
      zobj_put(&ct->obj);
    }
  } else if (rc == 0 && (rc = textprep_to_text(&n->meta->dtype, &n->form, ab,
                                               &e->env, err)) == 0) {
    rc = text_measure(&n->form, n->meta->shape, j->idx, ab, e->env.max_decoded,
                      &e->stopping, value, err);
    ab = NULL; /* taken by text_measure */
    if (rc == 0 && record)
      unit_record(&dj, *value, unit_nin(n, j->idx));
  }
  abytes_free(ab);
  if (rc < 0) {
    if (!logged)
      unit_log_failure(e, key, err);
    return zerr_prefix(err, "chunk %s: ", key);
  }
  return 0;
}

/* See unit.h. */
int unit_passing(struct engine *e, const struct znode *n, struct memo_ref *ref,
                 struct memo_ref *dref) {
  if (!ref)
    return 0;
  const struct chunk_text *ct = unit_of_ref(ref);
  long double units = 1;
  for (int d = 0; d < n->meta->ndim; d++)
    units *= n->ugrid[d];
  size_t cost = ct->cost;
  if (dref)
    cost += memo_cost(dref);
  if ((long double)cost * units <= (long double)e->cache_size / 4)
    return 0;
  memo_scan(e->memo, ref);
  memo_scan(e->memo, dref);
  return 1;
}

/* See unit.h. */
size_t unit_held_cost(struct engine *e, const struct znode *n,
                      const uint64_t *idx) {
  struct memo_key k;
  node_key(&k, ELEVEL_UNIT, n, idx, NULL, 0);
  struct memo_ref *r;
  if (!memo_peek(e->memo, &k, &r))
    return 0;
  size_t c = memo_cost(r);
  memo_release(e->memo, r);
  return c;
}

/* See unit.h. */
int unit_partial_open(struct engine *e, const struct znode *n,
                      const uint64_t *idx, struct codec_partial *d,
                      struct zerr *err) {
  memset(d, 0, sizeof *d);
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
  struct codec_spec tmp; /* the unit's own: units may differ in shape */
  rc = chain_partial_open(n->chain, node_chunk_spec(n, idx, &tmp), src, d, err);
  bytesrc_unref(src);
  return rc < 0 ? rc : 1;
}

/* See unit.h. */
int unit_linear_text(const struct znode *n, const uint64_t *idx) {
  if (n->form.csv ||
      (n->form.dt.kind != DT_STRING && n->form.dt.kind != DT_BYTES))
    return 0;
  for (int d = 1; d < n->meta->ndim; d++)
    if (node_unit_ext(n, d, idx[d]) < node_unit_len(n, d, idx[d]))
      return 0;
  return 1;
}

/* See unit.h. */
uint64_t unit_nin(const struct znode *n, const uint64_t *idx) {
  uint64_t nin = 1;
  for (int d = 0; d < n->meta->ndim; d++)
    nin *= node_unit_ext(n, d, idx[d]);
  return nin;
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
    unit_log_failure(j->e, *j->n->path ? j->n->path : ".", err);
    return zerr_prefix(err, "listing chunks: ");
  }
  *obj = &p->obj;
  *cost = presence_cost(p);
  return 0;
}

/* Memoised presence scan. */
int unit_presence(struct engine *e, const struct znode *n,
                  struct memo_ref **out, struct zerr *err) {
  ZTRY(node_check(n, err));
  struct memo_key k;
  node_key(&k, ELEVEL_PRESENCE, n, NULL, NULL, 0);
  struct unit_job j = {e, n, NULL, NULL, NULL, 0, 0, 0, 0};
  return memo_get(e->memo, &k, presence_fill, &j, out, err);
}
