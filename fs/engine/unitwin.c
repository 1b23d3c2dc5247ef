/* unitwin.c - units of strings read through their partial decoder: reads
 * that take only the offsets and element bytes they show, and units too
 * large for the cache read in windows that follow the reader (see
 * unit.h: unit_read_direct, unit_windowed, unit_read_window); units of
 * interleaved strings (vlen-utf8) too large for the cache parsed as a
 * stream as the reader advances; and the text sizes of units (unit_size,
 * unit_sizes_prefetch), which come from the partial decoder when they can
 * and from unit.c's whole decode when not.
 *
 * One direction: unitwin.c calls unit.c (the unit's store key, encoded
 * bytes and whole decode), never the other way (tests/calls.sh). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <pthread.h>

#include "../../codecs/dstream.h"
#include "../../codecs/sharding.h"
#include "../../src/store/lxindex.h"
#include "../../src/store/presence.h"
#include "unit.h"

static long ustream_read(struct engine *e, const struct znode *n,
                         const uint64_t *idx, uint64_t off, size_t len,
                         char *dst, struct memo_ref **pin, struct zerr *err);

/* ---- units read through a partial decoder ---- */

/* Is unit idx's text linear in its elements' byte lengths (strings and
 * bytes, not CSV fields, which are quoted: a line is k bytes per element
 * byte plus its newline), with its in-bounds elements first (every
 * dimension but the first whole)? What reading a unit by its lengths,
 * without decoding it whole, needs. */
static int unit_linear_text(const struct znode *n, const uint64_t *idx) {
  if (n->form.csv ||
      (n->form.dt.kind != DT_STRING && n->form.dt.kind != DT_BYTES))
    return 0;
  for (int d = 1; d < n->meta->ndim; d++)
    if (node_unit_ext(n, d, idx[d]) < node_unit_len(n, d, idx[d]))
      return 0;
  return 1;
}

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
uint64_t unit_nin(const struct znode *n, const uint64_t *idx) {
  uint64_t nin = 1;
  for (int d = 0; d < n->meta->ndim; d++)
    nin *= node_unit_ext(n, d, idx[d]);
  return nin;
}

/* Open unit idx's partial decoder: 1 and *d (close it), 0 when the chunk
 * is not stored, or negative. */
static int direct_open(struct engine *e, const struct znode *n,
                       const uint64_t *idx, struct codec_partial *d,
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
  struct codec_spec tmp; /* the unit's own: units may differ in shape */
  rc = chain_partial_open(n->chain, node_chunk_spec(n, idx, &tmp), src, d, err);
  bytesrc_unref(src);
  return rc < 0 ? rc : 1;
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
  int rc = direct_open(e, n, idx, &d, &err);
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
  int rc = direct_open(e, n, idx, &d, err);
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
    return unit_stream_windowed(e, n, idx);
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
  int rc = direct_open(j->e, j->n, j->idx, &d, err);
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
    return ustream_read(e, n, idx, off, len, dst, pin, err);
  if (plain)
    return direct_read(e, n, idx, off, len, dst, NULL, err);
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  static const uint64_t tag = 0x77696e646f77ull; /* apart from data_obj */
  struct memo_key k;
  node_key(&k, ELEVEL_DATA, n, idx, &tag, 1);
  struct unit_job j = {e, n, idx, key, NULL};
  ZTRY(memo_get(e->memo, &k, wdata_fill, &j, pin, err));
  const struct wdata_obj *w = (const struct wdata_obj *)memo_obj(*pin);
  long got = direct_read(e, n, idx, off, len, dst, w->src, err);
  if (got < 0 && got != -ENOTSUP)
    zerr_prefix(err, "chunk %s: ", key);
  return got;
}

/* ---- units of interleaved strings streamed in order ----
 *
 * vlen-utf8 and its aliases (codecs/vlen_interleaved.c) store a u32 LE
 * count, then each element as a u32 LE length and its bytes: no index, so
 * no partial decoder. Behind one zstd or gzip stage the chunk is decoded
 * as a stream (codecs/dstream.h) and its elements parsed in order as the
 * reader advances; the text of a read is rendered from just the elements
 * it shows. A read before the parse position starts again from a mark (a
 * recent read's first element) or from the chunk's start. */

/* Where the parse stands: element k's header at stream byte pos, its line
 * at text offset tpos. */
struct ucur {
  uint64_t k, pos, tpos;
};

/* Marks kept: the first elements of the latest reads, so that reads a
 * little out of order (read-ahead, FUSE threads) need no restart. */
#define USTREAM_MARKS 8

/* A streamed unit (memo object at ELEVEL_DATA under its own tag): the
 * stream, the parse position and marks, under a mutex. */
struct ustream_obj {
  struct zobj obj;
  pthread_mutex_t lock;
  struct bytesrc *ds;
  struct ucur cur;
  struct ucur mark[USTREAM_MARKS];
  unsigned nmark;
};

/* Is a2b one of the interleaved vlen formats? */
static int ustream_codec(const struct codec_impl *a2b) {
  static const char *const names[] = {"vlen-utf8", "vlen-bytes",
                                      "zarrs.vlen_v2"};
  for (size_t i = 0; a2b && i < sizeof names / sizeof *names; i++)
    if (!strcmp(a2b->name, names[i]))
      return 1;
  return 0;
}

/* Are n's units interleaved strings behind one streaming codec, with
 * linear text? */
static int unit_streamed(const struct znode *n, const uint64_t *idx) {
  const struct chain *c = n->shard ? shard_inner_chain(n->shard) : n->chain;
  const struct codec_impl *a2b;
  return c && chain_stream_kind(c, &a2b) && ustream_codec(a2b) &&
         unit_linear_text(n, idx);
}

/* Open unit j->idx's chunk as a stream (*out) and check its count: 1, 0
 * when not stored, or negative. */
static int ustream_open(struct unit_job *j, struct bytesrc **out,
                        struct zerr *err) {
  struct bytesrc *enc;
  const struct chain *c;
  const struct codec_impl *a2b;
  int rc = unit_encoded(j, &enc, &c, err);
  if (rc <= 0)
    return rc;
  /* The decoded size is not stored: the stream is read only as far as
   * the elements reach, and a stream ending before that fails. */
  rc = dstream_open(chain_stream_kind(c, &a2b), enc, UINT64_MAX, &j->e->env,
                    out, err);
  bytesrc_unref(enc);
  if (rc < 0)
    return rc;
  uint8_t h[4];
  struct codec_spec tmp;
  uint64_t want = node_chunk_spec(j->n, j->idx, &tmp)->nelem;
  rc = bytesrc_read_range(*out, 0, 4, h, err);
  uint32_t count = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
                   (uint32_t)h[3] << 24;
  if (rc == 0 && count != want)
    rc = zerr_set(err, EIO, "%s: header says %u elements, chunk has %llu",
                  a2b->name, count, (unsigned long long)want);
  if (rc < 0) {
    bytesrc_unref(*out);
    *out = NULL;
    return rc;
  }
  return 1;
}

/* The length of the element at c->pos (its u32 LE header). */
static int ustream_len(struct bytesrc *ds, const struct ucur *c, uint32_t *len,
                       struct zerr *err) {
  uint8_t h[4];
  ZTRY(bytesrc_read_range(ds, c->pos, 4, h, err));
  *len = (uint32_t)h[0] | (uint32_t)h[1] << 8 | (uint32_t)h[2] << 16 |
         (uint32_t)h[3] << 24;
  return 0;
}

/* Step c past its element of len bytes. */
static void ustream_step(const struct dtype *dt, struct ucur *c, uint32_t len) {
  c->pos += 4 + (uint64_t)len;
  c->tpos += text_var_len(dt, len) + 1;
  c->k++;
}

/* Is unit idx streamed and too large to decode whole (unit_windowed's
 * rule: 9 bytes an element past a quarter of the cache)? */
/* See unit.h. */
int unit_stream_windowed(const struct engine *e, const struct znode *n,
                         const uint64_t *idx) {
  uint64_t held = unit_nin(n, idx) * 9;
  return unit_streamed(n, idx) && held >= UNIT_WINDOW_MIN &&
         held > e->cache_size / 4;
}

/* See unit.h. */
int unit_size_streamed(struct engine *e, const struct znode *n,
                       const uint64_t *idx, uint64_t *value, struct zerr *err) {
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct unit_job j = {e, n, idx, key, NULL};
  struct bytesrc *ds;
  int rc = ustream_open(&j, &ds, err);
  if (rc <= 0)
    return rc < 0 ? rc : 1; /* a fill unit: the whole decode knows its size */
  uint64_t nin = unit_nin(n, idx);
  struct ucur c = {0, 4, 0};
  while (rc >= 0 && c.k < nin) {
    uint32_t len;
    rc = ustream_len(ds, &c, &len, err);
    if (rc == 0)
      ustream_step(&n->form.dt, &c, len);
    if (rc == 0 && (c.k & 0xffff) == 0)
      rc = engine_check_stop(e, err);
  }
  /* the last element's bytes are there: the parse reads them */
  if (rc == 0 && c.pos > 4)
    rc = bytesrc_read_range(ds, c.pos - 1, 1, (uint8_t[1]){0}, err);
  bytesrc_unref(ds);
  if (rc < 0)
    return rc;
  *value = c.tpos;
  return 0;
}

/* Release a streamed unit. */
static void ustream_destroy(struct zobj *o) {
  struct ustream_obj *u = (struct ustream_obj *)o;
  bytesrc_unref(u->ds);
  pthread_mutex_destroy(&u->lock);
  free(u);
}

/* Fill: open unit j->idx as a stream (not stored: -ENOTSUP, read it the
 * usual way). */
static int ustream_fill(void *ctx, struct zobj **obj, size_t *cost,
                        struct zerr *err) {
  struct unit_job *j = ctx;
  struct ustream_obj *u = calloc(1, sizeof *u);
  if (!u)
    return zerr_set(err, ENOMEM, "out of memory");
  if (pthread_mutex_init(&u->lock, NULL) != 0) {
    free(u);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  zobj_init(&u->obj, ustream_destroy);
  int rc = engine_check_stop(j->e, err);
  if (rc == 0)
    rc = ustream_open(j, &u->ds, err);
  if (rc == 0)
    rc = zerr_set(err, ENOTSUP, "not stored");
  if (rc < 0) {
    zobj_put(&u->obj);
    if (rc == -ENOTSUP)
      return rc;
    unit_log_failure(j->e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  engine_req_note_unit();
  stats_add(&j->e->stats.decodes, 1);
  u->cur = (struct ucur){0, 4, 0};
  *obj = &u->obj;
  *cost = sizeof *u + dstream_cost(u->ds);
  return 0;
}

/* Elements rendered per step of a streamed read. */
#define USTREAM_BATCH 4096

/* Render elements from c on (their lines cover text [c->tpos, ...)) into
 * dst for text [off, off+len), off >= c->tpos, at most USTREAM_BATCH of
 * them: *got bytes; c advances past the elements whose lines end within
 * the range, or to the element holding the range's end. */
static int ustream_batch(struct engine *e, const struct znode *n,
                         const uint64_t *idx, uint64_t nin, struct bytesrc *ds,
                         struct ucur *c, uint64_t off, size_t len, char *dst,
                         size_t *got, struct zerr *err) {
  const struct dtype *dt = &n->form.dt;
  uint64_t *o = malloc((USTREAM_BATCH + 1) * sizeof *o);
  size_t cap = 4096, used = 0;
  uint8_t *buf = malloc(cap);
  int rc = o && buf ? 0 : zerr_set(err, ENOMEM, "out of memory");
  struct ucur s = *c, q = *c, prev = *c;
  uint64_t b = 0, end = off + len;
  if (o)
    o[0] = 0;
  while (rc == 0 && b < USTREAM_BATCH && q.k < nin && q.tpos < end) {
    uint32_t l;
    rc = ustream_len(ds, &q, &l, err);
    if (rc == 0 && used + l > cap) {
      size_t nc = cap;
      while (used + l > nc)
        nc *= 2;
      uint8_t *nb = nc > e->env.max_decoded ? NULL : realloc(buf, nc);
      if (!nb)
        rc = zerr_set(err, ENOMEM, "out of memory for %zu bytes", nc);
      else {
        buf = nb;
        cap = nc;
      }
    }
    if (rc == 0)
      rc = bytesrc_read_range(ds, q.pos + 4, l, buf + used, err);
    if (rc < 0)
      break;
    used += l;
    o[++b] = used;
    prev = q;
    ustream_step(dt, &q, l);
  }
  struct abytes *ab = NULL;
  if (rc == 0 && b) {
    ab = abytes_alloc();
    uint8_t *fit = realloc(buf, used ? used : 1);
    if (fit)
      buf = fit;
    if (ab)
      ab->data = bytesrc_from_mem(buf, used);
    if (!ab || !ab->data)
      rc = zerr_set(err, ENOMEM, "out of memory");
    else
      buf = NULL;
  }
  *got = 0;
  if (rc == 0 && b) {
    struct text_form f1 = n->form;
    f1.ndim = 1;
    f1.shape[0] = b;
    f1.edge[0] = NULL;
    f1.note_idx = idx; /* what its text shows is said of this unit */
    ab->n = b;
    ab->offsets = o;
    o = NULL;
    ab->data_len = used;
    struct chunk_text *ct;
    uint64_t zero = 0;
    rc = text_layout(&f1, &b, &zero, ab, e->env.max_decoded, 0, NULL,
                     &e->stopping, &ct, err);
    ab = NULL; /* the layout owns it now */
    if (rc == 0) {
      uint64_t want = (q.tpos < end ? q.tpos : end) - off;
      long r =
          text_read(ct, ct->ab->data, off - s.tpos, (size_t)want, dst, err);
      zobj_put(&ct->obj);
      if (r < 0)
        rc = (int)r;
      else if ((uint64_t)r != want)
        rc = zerr_set(err, EIO, "text of %llu elements is short",
                      (unsigned long long)b);
      else
        *got = (size_t)r;
    }
  }
  abytes_free(ab);
  free(o);
  free(buf);
  if (rc == 0)
    *c = q.tpos > end ? prev : q;
  return rc;
}

/* Read text [off, off+len) of streamed unit u (locked): from the parse
 * position, a mark, or the start, whichever is the latest at or before
 * off. */
static long ustream_read_locked(struct engine *e, const struct znode *n,
                                const uint64_t *idx, uint64_t nin,
                                struct ustream_obj *u, uint64_t off, size_t len,
                                char *dst, struct zerr *err) {
  struct ucur c = {0, 4, 0};
  if (u->cur.tpos <= off)
    c = u->cur;
  else
    for (unsigned i = 0; i < u->nmark && i < USTREAM_MARKS; i++)
      if (u->mark[i].tpos <= off && u->mark[i].tpos >= c.tpos)
        c = u->mark[i];
  /* Skip to the element whose line holds off. */
  int rc = 0;
  while (rc == 0 && c.k < nin) {
    uint32_t l;
    rc = ustream_len(u->ds, &c, &l, err);
    if (rc == 0 && c.tpos + text_var_len(&n->form.dt, l) + 1 > off)
      break;
    if (rc == 0)
      ustream_step(&n->form.dt, &c, l);
  }
  if (rc < 0)
    return rc;
  if (c.k < nin)
    u->mark[u->nmark++ % USTREAM_MARKS] = c;
  size_t done = 0;
  while (done < len && c.k < nin) {
    size_t got;
    ZTRY(ustream_batch(e, n, idx, nin, u->ds, &c, off + done, len - done,
                       dst + done, &got, err));
    done += got;
  }
  u->cur = c;
  return (long)done;
}

/* Read text of unit idx when it is streamed (unit_stream_windowed):
 * -ENOTSUP otherwise or when it is not stored. */
static long ustream_read(struct engine *e, const struct znode *n,
                         const uint64_t *idx, uint64_t off, size_t len,
                         char *dst, struct memo_ref **pin, struct zerr *err) {
  if (!unit_stream_windowed(e, n, idx))
    return -ENOTSUP;
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  static const uint64_t tag = 0x75746638737472ull; /* apart from wdata */
  struct memo_key k;
  node_key(&k, ELEVEL_DATA, n, idx, &tag, 1);
  struct unit_job j = {e, n, idx, key, NULL};
  ZTRY(memo_get(e->memo, &k, ustream_fill, &j, pin, err));
  struct ustream_obj *u = (struct ustream_obj *)memo_obj(*pin);
  pthread_mutex_lock(&u->lock);
  long got =
      ustream_read_locked(e, n, idx, unit_nin(n, idx), u, off, len, dst, err);
  if (got < 0) /* the stream is broken there: start over next time */
    u->cur = (struct ucur){0, 4, 0}, u->nmark = 0;
  pthread_mutex_unlock(&u->lock);
  if (got < 0) {
    unit_log_failure(e, key, err);
    zerr_prefix(err, "chunk %s: ", key);
  }
  return got;
}

/* Fill: a unit's text size: from the ends of an index read partially, from
 * the persistent index, or by decoding the unit (which keeps it for the
 * reads that follow, and stores its size in the persistent index). */
static int unit_size_fill(void *ctx, uint64_t *value, struct zerr *err) {
  struct unit_job *j = ctx;
  /* Index ends cost a read or two, before the persistent index is even
   * loaded; a streamed unit's size costs a pass over the whole stream,
   * after it. */
  int streamed = unit_stream_windowed(j->e, j->n, j->idx);
  if (!streamed && unit_size_direct(j->e, j->n, j->idx, value) == 0)
    return 0;
  char ikey[4096];
  struct lxindex_id id;
  struct lxindex_rec rec;
  int have_id = unit_ident(j->e, j->n, j->idx, ikey, sizeof ikey, &id) == 0;
  if (have_id && lxindex_lookup(j->e->lx, &id, &rec) &&
      rec.lines == unit_nin(j->n, j->idx)) {
    *value = rec.text_size;
    return 0;
  }
  int rc = streamed ? unit_size_streamed(j->e, j->n, j->idx, value, err) : 1;
  if (rc == 0) {
    rec = (struct lxindex_rec){*value, unit_nin(j->n, j->idx)};
    if (have_id)
      lxindex_store(j->e->lx, &id, &rec); /* a failure: learned again */
    return 0;
  }
  if (rc < 0) {
    char key[4096];
    if (unit_store_key(j->n, j->idx, key, sizeof key, &(struct zerr){0}) < 0)
      return rc;
    unit_log_failure(j->e, key, err);
    return zerr_prefix(err, "chunk %s: ", key);
  }
  struct memo_ref *ref;
  ZTRY(unit_get(j->e, j->n, j->idx, &ref, err));
  *value = unit_of_ref(ref)->size;
  memo_release(j->e->memo, ref);
  return 0;
}

/* Size from the memo's values, or decode once to learn it. */
int unit_size(struct engine *e, const struct znode *n, const uint64_t *idx,
              uint64_t *size, struct zerr *err) {
  ZTRY(unit_check(n, idx, err));
  struct memo_key k;
  node_key(&k, ELEVEL_UNIT_SIZE, n, idx, NULL, 0);
  struct unit_job j = {e, n, idx, NULL, NULL};
  return memo_value(e->memo, &k, unit_size_fill, &j, size, err);
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
