/* unitwin.c - units of strings read through their partial decoder: reads
 * that take only the offsets and element bytes they show, and units too
 * large for the cache read in windows that follow the reader (see
 * unit.h: unit_read_direct, unit_windowed, unit_read_window), those of
 * elements the chain streams (codecs/chain.h: chain_elems_*, the
 * interleaved vlen formats) through ustream.c; and the text sizes of
 * units (unit_size, unit_size_claim, unit_size_verify,
 * unit_sizes_prefetch), which come from the partial decoder when they
 * can, from the persistent index, and from unit.c's whole decode when not.
 *
 * One direction: unitwin.c calls ustream.c and unit.c (the unit's store
 * key, encoded bytes and whole decode), never the other way
 * (tests/calls.sh). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "../../codecs/dstream.h"
#include "../../src/store/presence.h"
#include "../../src/store/sizeindex.h"
#include "ufixed.h"
#include "unit.h"
#include "ustream.h"

/* ---- units read through a partial decoder ---- */

/* Are the units of n chunks whose offsets the chain reads where they lie
 * (codec.h's partial decoding), with linear text? *plain_data: element
 * bytes are stored plain too. */
static int unit_direct(const struct znode *n, const uint64_t *idx,
                       int *plain_data) {
  unsigned caps = n->shard ? 0 : chain_partial_caps(n->chain);
  *plain_data = (caps & CODEC_PARTIAL_PLAIN) != 0;
  return (caps & CODEC_PARTIAL_OFFSETS) && unit_linear_text(n, idx);
}

/* See unit.h. */
int unit_size_direct(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t *value) {
  int plain;
  if (!unit_direct(n, idx, &plain))
    return -1;
  struct zerr err = {0};
  struct codec_partial d;
  uint64_t nin = unit_nin(n, idx), o0, on;
  int rc = unit_partial_open(e, n, idx, &d, &err);
  if (rc == 0) { /* not stored: the fill value */
    *value = nin * (n->form.fill_len + 1);
    return 0;
  }
  if (rc > 0) {
    rc = chain_partial_offsets(&d, 0, 1, &o0, &err);
    /* Element bytes stored plain, all of them in bounds: the last offset
     * is the stored data's length (a whole decode refuses a chunk where
     * it is not), so the far end of the index need not be read. */
    if (rc == 0 && plain && nin == d.n)
      on = d.data_len;
    else if (rc == 0)
      rc = chain_partial_offsets(&d, nin, 1, &on, &err);
    chain_partial_close(&d);
  }
  if (rc < 0 || on < o0)
    return -1; /* the decode says what is wrong, once */
  *value = text_var_len(&n->form.dt, on - o0) + nin;
  return 0;
}

/* Elements rendered per step of a direct read. */
#define DIRECT_BATCH 65536
/* Below this many candidates the search reads them all at once. */
#define DIRECT_SCAN 4096

/* Read text [off, off+len) of unit idx through its partial decoder,
 * the element bytes from `bytes` when given (a decoded data section),
 * else from the decoder's plain window. */
static long direct_read(struct engine *e, const struct znode *n,
                        const uint64_t *idx, uint64_t off, size_t len,
                        char *dst, struct bytesrc *bytes, struct zerr *err) {
  uint64_t total;
  ZTRY(unit_size(e, n, idx, &total, err));
  if (off >= total || !len)
    return 0;
  if (len > total - off)
    len = (size_t)(total - off);
  struct codec_partial d;
  int rc = unit_partial_open(e, n, idx, &d, err);
  if (rc <= 0)
    return rc == 0 ? -ENOTSUP : rc; /* a fill unit: the usual way */
  struct bytesrc *data = bytes ? bytes : d.data;
  if (!data) {
    chain_partial_close(&d);
    return -ENOTSUP;
  }
  const struct dtype *dt = &n->form.dt;
  uint64_t nin = unit_nin(n, idx), o0;
  uint64_t *o = malloc((DIRECT_BATCH + 1) * sizeof *o);
  rc = o ? chain_partial_offsets(&d, 0, 1, &o0, err)
         : zerr_set(err, ENOMEM, "out of memory");
  /* The element whose line holds off: line k starts at
   * text_var_len(o[k] - o[0]) + k, which grows with k. */
  uint64_t lo = 0, hi = nin; /* line lo starts <= off; line hi > off */
  /* First a window of DIRECT_SCAN lines around where the mean line length
   * puts off: lines are much alike, so a read (`tail`) usually finds its
   * line there, in the block or two of offsets it then reads anyway,
   * rather than in a bisection's dozen blocks spread over the index. */
  if (rc == 0 && hi - lo > DIRECT_SCAN) {
    uint64_t g = (uint64_t)((unsigned __int128)off * nin / total);
    uint64_t ws = g > DIRECT_SCAN / 2 ? g - DIRECT_SCAN / 2 : 0;
    uint64_t we = ws + DIRECT_SCAN < nin ? ws + DIRECT_SCAN : nin;
    uint64_t probe[2] = {ws, we};
    for (int i = 0; i < 2 && rc == 0; i++) {
      uint64_t at = probe[i], oa;
      if (at <= lo || at >= hi)
        continue;
      rc = chain_partial_offsets(&d, at, 1, &oa, err);
      if (rc == 0 && oa < o0)
        rc = zerr_set(err, EIO, "%s: offset %llu is out of order", d.impl->name,
                      (unsigned long long)at);
      if (rc == 0 && text_var_len(dt, oa - o0) + at <= off)
        lo = at;
      else if (rc == 0)
        hi = at;
    }
  }
  while (rc == 0 && hi - lo > 1) {
    if (hi - lo <= DIRECT_SCAN) {
      uint64_t cnt = hi - lo;
      rc = chain_partial_offsets(&d, lo, cnt, o, err);
      uint64_t i = 1;
      while (rc == 0 && i < cnt && o[i] >= o0 &&
             text_var_len(dt, o[i] - o0) + lo + i <= off)
        i++;
      hi = (lo += i - 1) + 1;
      break;
    }
    uint64_t mid = lo + (hi - lo) / 2, om;
    rc = chain_partial_offsets(&d, mid, 1, &om, err);
    if (rc == 0 && om < o0)
      rc = zerr_set(err, EIO, "%s: offset %llu is out of order", d.impl->name,
                    (unsigned long long)mid);
    if (rc == 0 && text_var_len(dt, om - o0) + mid <= off)
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
    rc = chain_partial_offsets(&d, k, b + 1, o, err);
    if (rc == 0 && o[b] > data->size) /* checked for plain bytes only */
      rc = zerr_set(err, EIO, "%s: offset %llu past the data section",
                    d.impl->name, (unsigned long long)(k + b));
    if (rc < 0 || o[0] < o0)
      break;
    uint64_t kpos = text_var_len(dt, o[0] - o0) + k;
    struct text_form f1 = n->form;
    f1.ndim = 1;
    f1.shape[0] = b;
    f1.edge[0] = NULL;
    f1.note_idx = idx; /* what its text shows is said of this unit */
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
    ab->data = bytesrc_ref(data);
    ab->data_len = o[b];
    struct chunk_text *ct;
    uint64_t zero = 0;
    rc = text_layout(&f1, &b, &zero, ab, e->env.max_decoded, 0, NULL,
                     &e->stopping, &ct, err);
    if (rc < 0)
      break;
    uint64_t at = off + done; /* >= kpos */
    long got = text_read(ct, data, at - kpos, len - done, dst + done, err);
    zobj_put(&ct->obj);
    if (got < 0) {
      rc = (int)got;
      break;
    }
    done += (size_t)got;
    k += b;
  }
  free(o);
  if (rc == 0 && done != len)
    rc = zerr_set(err, EIO, "%s: index and sizes disagree", d.impl->name);
  chain_partial_close(&d);
  if (rc < 0) {
    char key[4096];
    if (unit_store_key(n, idx, key, sizeof key, err) == 0)
      unit_log_failure(e, key, err);
    return rc;
  }
  return (long)done;
}

/* See unit.h. */
long unit_read_direct(struct engine *e, const struct znode *n,
                      const uint64_t *idx, uint64_t off, size_t len, char *dst,
                      struct zerr *err) {
  int plain;
  if (!unit_direct(n, idx, &plain) || !plain)
    return -ENOTSUP;
  return direct_read(e, n, idx, off, len, dst, NULL, err);
}

/* See unit.h. */
int unit_windowed(const struct engine *e, const struct znode *n,
                  const uint64_t *idx) {
  int plain;
  if (!unit_direct(n, idx, &plain))
    return unit_stream_windowed(e, n, idx) || ufixed_windowed(e, n, idx);
  /* What a whole decode keeps besides the element bytes: 8 bytes of
   * offset and 1/8 byte of layout per element. */
  uint64_t held = unit_nin(n, idx) * 9;
  return held >= UNIT_WINDOW_MIN && held > e->cache_size / 4;
}

/* A unit's element bytes for reads in windows (memo object, at
 * ELEVEL_DATA under its own tag): the bytes only, no offsets. Behind a
 * codec that streams (zstd, gzip), a source decoding them in a sliding
 * window that follows the reader (codecs/dstream.h), which the open file
 * keeps pinned, positioned where its last read ended; behind any other,
 * the bytes decoded whole. */
struct wdata_obj {
  struct zobj obj;
  struct bytesrc *src;
};

/* Release a windowed data section. */
static void wdata_destroy(struct zobj *o) {
  struct wdata_obj *w = (struct wdata_obj *)o;
  bytesrc_unref(w->src);
  free(w);
}

/* Unit j->idx's element bytes as a stream (*out): 1, 0 when its data
 * codecs do not stream (or the chunk is not stored), or negative. Only
 * the chunk's framing and its last offset are read. */
static int wdata_stream(struct unit_job *j, struct bytesrc **out,
                        struct zerr *err) {
  struct codec_partial d;
  int rc = unit_partial_open(j->e, j->n, j->idx, &d, err);
  if (rc <= 0)
    return rc;
  uint64_t last;
  rc = chain_partial_offsets(&d, d.n, 1, &last, err);
  if (rc == 0)
    rc = chain_partial_stream(&d, last, &j->e->env, out, err);
  chain_partial_close(&d);
  if (rc == -ENOTSUP) {
    zerr_clear(err);
    return 0;
  }
  return rc < 0 ? rc : 1;
}

/* Fill: the element bytes as a stream; else decode unit j->idx's chunk,
 * let go of its offsets, then run its deferred data codecs: the offsets
 * and the decoded bytes are never held together. */
static int wdata_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct unit_job *j = ctx;
  struct engine *e = j->e;
  struct wdata_obj *w = calloc(1, sizeof *w);
  if (!w)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&w->obj, wdata_destroy);
  struct abytes *ab = NULL;
  int logged = 0;
  int rc = engine_check_stop(e, err);
  if (rc == 0)
    rc = wdata_stream(j, &w->src, err);
  if (rc > 0) {
    engine_req_note_unit();
    stats_add(&e->stats.decodes, 1);
    rc = 0;
  } else if (rc == 0) {
    rc = unit_source(j, &ab, &logged, err);
    if (rc == 0 && (!ab || ab->elsize))
      rc = zerr_set(err, EIO, "not a variable-length chunk");
    if (rc == 0) {
      engine_req_note_unit();
      stats_add(&e->stats.decodes, 1);
      free(ab->offsets);
      ab->offsets = NULL;
      rc = chain_load_data(ab, &e->env, &w->src, err);
    }
  }
  abytes_free(ab);
  if (rc < 0) {
    zobj_put(&w->obj);
    if (!logged)
      unit_log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  *obj = &w->obj;
  *cost =
      sizeof *w + (w->src->mem ? (size_t)w->src->size : dstream_cost(w->src));
  return 0;
}

/* See unit.h. */
long unit_read_window(struct engine *e, const struct znode *n,
                      const uint64_t *idx, uint64_t off, size_t len, char *dst,
                      struct memo_ref **pin, struct zerr *err) {
  int plain;
  *pin = NULL;
  if (!unit_direct(n, idx, &plain))
    return ufixed_windowed(e, n, idx)
               ? ufixed_read(e, n, idx, off, len, dst, pin, err)
               : ustream_read(e, n, idx, off, len, dst, pin, err);
  if (plain)
    return direct_read(e, n, idx, off, len, dst, NULL, err);
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  static const uint64_t tag = 0x77696e646f77ull; /* apart from data_obj */
  struct memo_key k;
  node_key(&k, ELEVEL_DATA, n, idx, &tag, 1);
  struct unit_job j = {e, n, idx, key, NULL, 0, 0, 0, 0};
  ZTRY(memo_get(e->memo, &k, wdata_fill, &j, pin, err));
  const struct wdata_obj *w = (const struct wdata_obj *)memo_obj(*pin);
  long got = direct_read(e, n, idx, off, len, dst, w->src, err);
  if (got < 0 && got != -ENOTSUP)
    zerr_prefix(err, "chunk %s: ", key);
  return got;
}

/* ---- the units' text sizes ---- */

/* A size fill's job: a unit's, and how a decode learns its size. */
struct size_job {
  struct unit_job j; /* first: the fill takes it as a unit_job */
  int measure;       /* decode to measure, keep nothing
                        (unit_size_measure) */
  int record;        /* and record the size in the persistent index */
};

/* Fill: a unit's text size: from the ends of an index read partially, from
 * the persistent index (a claim: UNIT_SIZE_CLAIM set), or by decoding the
 * unit (which keeps it for the reads that follow, and stores its size in
 * the persistent index). */
static int unit_size_fill(void *ctx, uint64_t *value, struct zerr *err) {
  struct unit_job *j = ctx;
  struct engine *e = j->e;
  /* Index ends cost a read or two, before the persistent index is even
   * loaded; a streamed unit's size costs a pass over the whole stream,
   * after it. */
  int streamed = unit_stream_windowed(e, j->n, j->idx);
  /* fixed-size elements too large to decode whole: a pass of ranged
   * reads (ufixed.h), which also learns where each window's text starts */
  int fixed = !streamed && ufixed_windowed(e, j->n, j->idx);
  if (!streamed && !fixed && unit_size_direct(e, j->n, j->idx, value) == 0)
    return 0;
  char ikey[4096];
  struct sizeindex_id id;
  struct sizeindex_rec rec;
  uint64_t nin = unit_nin(j->n, j->idx);
  /* a look-up costs the object's stat (its version): none while the
   * index knows nothing of this store (a first mount) */
  int have_id = sizeindex_has_records(e->sizeidx, e->store->location) &&
                unit_ident(e, j->n, j->idx, 0, 0, ikey, sizeof ikey, &id) == 0;
  if (have_id && sizeindex_lookup(e->sizeidx, &id, &rec) && rec.lines == nin &&
      rec.text_size < UNIT_SIZE_CLAIM) {
    *value = rec.text_size | UNIT_SIZE_CLAIM;
    return 0;
  }
  /* A chunk whose stream states its decoded size (vlen-utf8 + zstd): its
   * text claimed from that, checked by the decode that reads it, so a
   * first `stat` decodes nothing (it decoded every unit, on one core or
   * two, and kept their text in fresh pages: a fresh mount's `cat` was
   * 45% page clearing) and the reader after it decodes each unit once,
   * on the workers ahead of it. A unit read in windows keeps its pass:
   * checking a claim would be that pass again. */
  if (!streamed && !fixed && ustream_size_stated(e, j->n, j->idx, value) == 0)
    return 0;
  if (streamed || fixed) { /* the version before the pass: a change after
                              it is a new version, never this size under
                              it */
    have_id = have_id ||
              unit_ident(e, j->n, j->idx, 0, 0, ikey, sizeof ikey, &id) == 0;
    int rc = fixed ? ufixed_size(e, j->n, j->idx, value, err)
                   : unit_size_streamed(e, j->n, j->idx, value, err);
    if (rc == 0) {
      rec = (struct sizeindex_rec){*value, nin};
      if (have_id)
        sizeindex_store(e->sizeidx, &id, &rec); /* a failure: learned again */
      return 0;
    }
    if (rc < 0 && fixed)
      return rc; /* logged and named by the pass */
    if (rc < 0) {
      char key[4096];
      if (unit_store_key(j->n, j->idx, key, sizeof key, &(struct zerr){0}) < 0)
        return rc;
      unit_log_failure(e, key, err);
      return zerr_prefix(err, "chunk %s: ", key);
    }
  }
  if (((struct size_job *)ctx)->measure)
    return unit_measure(j, ((struct size_job *)ctx)->record, value, err);
  struct memo_ref *ref;
  ZTRY(unit_get(e, j->n, j->idx, &ref, err));
  *value = unit_of_ref(ref)->size;
  memo_release(e->memo, ref);
  return 0;
}

/* Learn the size of unit j->idx (*value) the way unit_size_claim does;
 * with `measure`, a decode keeps nothing (unit_size_measure). */
static int unit_size_by(struct engine *e, const struct znode *n,
                        const uint64_t *idx, int measure, int record,
                        uint64_t *size, int *claim, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  struct memo_key k;
  node_key(&k, ELEVEL_UNIT_SIZE, n, idx, NULL, 0);
  struct size_job j = {{e, n, idx, NULL, NULL, 0, 0, 0, 0}, measure, record};
  uint64_t v;
  ZTRY(memo_value(e->memo, &k, unit_size_fill, &j, &v, err));
  *claim = (v & UNIT_SIZE_CLAIM) != 0;
  *size = v & ~UNIT_SIZE_CLAIM;
  return 0;
}

/* See unit.h. */
int unit_size_measure(struct engine *e, const struct znode *n,
                      const uint64_t *idx, int record, uint64_t *size,
                      int *claim, struct zerr *err) {
  return unit_size_by(e, n, idx, 1, record, size, claim, err);
}

/* See unit.h. */
int unit_size_claim(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, int *claim,
                    struct zerr *err) {
  return unit_size_by(e, n, idx, 0, 0, size, claim, err);
}

/* Size from the memo's values, or learned once. */
int unit_size(struct engine *e, const struct znode *n, const uint64_t *idx,
              uint64_t *size, struct zerr *err) {
  int claim;
  return unit_size_claim(e, n, idx, size, &claim, err);
}

/* See unit.h. */
int unit_size_verify(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t claimed, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  struct memo_key k;
  node_key(&k, ELEVEL_UNIT_SIZE, n, idx, NULL, 0);
  uint64_t truth;
  int rc = 1, held = memo_value_peek(e->memo, &k, &truth);
  if (held && truth == claimed)
    return 0; /* (the usual answer: checked by a decode ahead) */
  /* a decode that finds the claim in the memo says it is wrong itself */
  int said = held && truth == (claimed | UNIT_SIZE_CLAIM);
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  if (held && !(truth & UNIT_SIZE_CLAIM))
    rc = 0; /* this mount knows it (a decode, the index ends) */
  else if (unit_stream_windowed(e, n, idx) || ufixed_windowed(e, n, idx)) {
    char ikey[4096];
    struct sizeindex_id id;
    int have_id = unit_ident(e, n, idx, 0, 0, ikey, sizeof ikey, &id) == 0;
    int fixed = !unit_stream_windowed(e, n, idx);
    rc = fixed ? ufixed_size(e, n, idx, &truth, err)
               : unit_size_streamed(e, n, idx, &truth, err);
    if (rc < 0 && fixed)
      return rc; /* logged and named by the pass */
    if (rc < 0) {
      unit_log_failure(e, key, err);
      return zerr_prefix(err, "chunk %s: ", key);
    }
    if (rc == 0) {
      memo_value_put(e->memo, &k, truth);
      struct sizeindex_rec rec = {truth, unit_nin(n, idx)};
      if (have_id && truth != claimed)
        sizeindex_store(e->sizeidx, &id, &rec); /* a failure: learned again */
      said = 0;
    }
  }
  if (rc == 1) { /* a decode, which checks what the memo holds itself,
                    or the claim (a region record's: the persistent
                    index has no record of the unit to add) */
    struct memo_ref *ref;
    int filled;
    ZTRY(unit_get_claimed(e, n, idx, held ? 0 : claimed | UNIT_SIZE_CLAIM, &ref,
                          &filled, err));
    said = said || (!held && filled);
    truth = unit_of_ref(ref)->size;
    memo_release(e->memo, ref);
  }
  if (truth == claimed)
    return 0;
  if (!said)
    unit_size_wrong(e, n, idx, key, claimed | UNIT_SIZE_CLAIM, truth);
  return 1;
}

/* See unit.h. */
int unit_sizes_from_index(const struct znode *n) {
  return n->kind == ZNODE_ARRAY && n->chain && !n->shard && !n->form.csv &&
         (chain_partial_caps(n->chain) & CODEC_PARTIAL_INDEX);
}

/* The units of one prefetch, handed out to its threads in C order. */
struct sizes_job {
  struct engine *e;
  const struct znode *n;
  const uint64_t *lin; /* the stored units' linear indices, or NULL: all */
  uint64_t total;      /* units to learn */
  atomic_ullong next;  /* the next one */
};

/* Thread: learn unit sizes until none is left (or the engine stops). */
static void *sizes_worker(void *arg) {
  struct sizes_job *j = arg;
  const struct znode *n = j->n;
  uint64_t i;
  while (!engine_stopping(j->e) &&
         (i = atomic_fetch_add(&j->next, 1)) < j->total) {
    uint64_t idx[ZMETA_MAX_DIMS], r = j->lin ? j->lin[i] : i, size;
    for (int d = n->meta->ndim - 1; d >= 0; d--) {
      idx[d] = r % n->ugrid[d];
      r /= n->ugrid[d];
    }
    struct zerr err = {0};
    unit_size(j->e, n, idx, &size, &err); /* a failure: said by the caller's */
  }
  return NULL;
}

/* See unit.h. */
int unit_sizes_prefetch(struct engine *e, const struct znode *n,
                        struct zerr *err) {
  ZTRY(node_check(n, err));
  if (n->shard)
    return 0; /* units are inner chunks: not the presence's chunks */
  struct memo_ref *pref;
  ZTRY(unit_presence(e, n, &pref, err));
  const struct presence *p = (const struct presence *)memo_obj(pref);
  struct sizes_job j = {.e = e,
                        .n = n,
                        .lin = p->complete ? p->lin : NULL,
                        .total = p->complete ? p->n : n->meta->nchunks};
  atomic_init(&j.next, 0);
  if (j.total > e->env.max_decoded / (2 * sizeof(uint64_t)))
    j.total = 0; /* more than a layout holds: it fails, saying so */
  pthread_t th[UNIT_SIZES_THREADS];
  int nt = 0;
  while (nt < UNIT_SIZES_THREADS && (uint64_t)nt + 1 < j.total &&
         pthread_create(&th[nt], NULL, sizes_worker, &j) == 0)
    nt++;
  sizes_worker(&j); /* this thread takes its share too */
  for (int t = 0; t < nt; t++)
    pthread_join(th[t], NULL);
  memo_release(e->memo, pref);
  return engine_check_stop(e, err);
}
