/* ustream.c - units of strings whose chain reads their elements in order
 * from a stream (codecs/chain.h: chain_elems_*; the interleaved vlen
 * formats behind zstd or gzip), too large for the cache, read as the
 * reader advances (ustream.h), and their text sizes by one pass over the
 * stream (unit.h: unit_stream_windowed, unit_size_streamed).
 *
 * One direction: unitwin.c calls ustream.c, ustream.c calls unit.c, never
 * the other way (tests/calls.sh). */
#include "ustream.h"

#include <stdlib.h>
#include <string.h>

#include <pthread.h>

/* ---- units of strings streamed in order ----
 *
 * Some string formats have no index (each element a length and its
 * bytes), so no partial decoder; the chain reads their elements in order
 * from a stream instead (chain_elems_open: it owns the decompressing
 * stream and parses the format), as the reader advances; the text of a
 * read is rendered from just the elements it shows. A read before the
 * parse position starts again from a mark (a recent read's first
 * element) or from the chunk's start. */

/* Where the parse stands: element p.k at the stream's position p, its
 * line at text offset tpos. */
struct ucur {
  struct chain_elem_pos p;
  uint64_t tpos;
};

/* Marks kept: the first elements of the latest reads, so that reads a
 * little out of order (read-ahead, FUSE threads) need no restart. */
#define USTREAM_MARKS 8

/* A streamed unit (memo object at ELEVEL_DATA under its own tag): the
 * stream, where it starts, the parse position and marks, under a
 * mutex. */
struct ustream_obj {
  struct zobj obj;
  pthread_mutex_t lock;
  struct chain_elems *ds;
  struct ucur start;
  struct ucur cur;
  struct ucur mark[USTREAM_MARKS];
  unsigned nmark;
};

/* Are n's units strings whose chain streams their elements, with linear
 * text? */
static int unit_streamed(const struct znode *n, const uint64_t *idx) {
  const struct chain *c = n->shard ? n->shard : n->chain;
  return chain_elems_capable(c) && unit_linear_text(n, idx);
}

/* Open unit j->idx's chunk as an element stream (*out, starting at
 * *start): 1, 0 when not stored, or negative. The chain checks the
 * chunk's framing against the unit's element count. */
static int ustream_open(struct unit_job *j, struct chain_elems **out,
                        struct ucur *start, struct zerr *err) {
  struct bytesrc *enc;
  const struct chain *c;
  int rc = unit_encoded(j, &enc, &c, err);
  if (rc <= 0)
    return rc;
  struct codec_spec tmp; /* an inner chunk's is the unit's, not its shard's */
  const struct codec_spec *spec =
      j->n->shard ? &j->n->uspec : node_chunk_spec(j->n, j->idx, &tmp);
  rc = chain_elems_open(c, spec, enc, &j->e->env, out, &start->p, err);
  bytesrc_unref(enc);
  start->tpos = 0;
  return rc < 0 ? rc : 1;
}

/* The length of the element at c. */
static int ustream_len(struct chain_elems *ds, const struct ucur *c,
                       uint64_t *len, struct zerr *err) {
  return chain_elems_len(ds, &c->p, len, err);
}

/* Step c past its element of len bytes. */
static void ustream_step(const struct chain_elems *ds, const struct dtype *dt,
                         struct ucur *c, uint64_t len) {
  chain_elems_step(ds, &c->p, len);
  c->tpos += text_var_len(dt, len) + 1;
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

/* See ustream.h. A missing chunk is left to the decode, which knows its
 * fill. */
int ustream_size_stated(struct engine *e, const struct znode *n,
                        const uint64_t *idx, uint64_t *value) {
  if (!unit_streamed(n, idx))
    return -1;
  char key[4096];
  struct zerr err = {0};
  if (unit_store_key(n, idx, key, sizeof key, &err) < 0)
    return -1;
  struct unit_job j = {e, n, idx, key, NULL, 0, 0, 0, 0};
  struct bytesrc *enc;
  const struct chain *c;
  if (unit_encoded(&j, &enc, &c, &err) <= 0)
    return -1;
  struct codec_spec tmp; /* an inner chunk's is the unit's, not its shard's */
  const struct codec_spec *spec =
      n->shard ? &n->uspec : node_chunk_spec(n, idx, &tmp);
  uint64_t nin = unit_nin(n, idx), total;
  /* every element in bounds: the text is each one's line */
  int rc =
      spec->nelem == nin ? chain_elems_stated(c, spec, enc, &total, &err) : 0;
  bytesrc_unref(enc);
  if (rc <= 0)
    return -1;
  uint64_t t = text_var_len(&n->form.dt, total);
  if (t < total || t + nin < t || t + nin >= UNIT_SIZE_CLAIM)
    return -1;
  *value = (t + nin) | UNIT_SIZE_CLAIM;
  return 0;
}

/* See unit.h. */
int unit_size_streamed(struct engine *e, const struct znode *n,
                       const uint64_t *idx, uint64_t *value, struct zerr *err) {
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct unit_job j = {e, n, idx, key, NULL, 0, 0, 0, 0};
  struct chain_elems *ds;
  struct ucur c;
  int rc = ustream_open(&j, &ds, &c, err);
  if (rc <= 0)
    return rc < 0 ? rc : 1; /* a fill unit: the whole decode knows its size */
  /* The lengths alone, walked where they lie in blocks of the stream (a
   * read of each length through the stream's lock was half the pass);
   * the text is linear in them: a line per element. The stream stops
   * with the engine (its env's stop flag). */
  uint64_t nin = unit_nin(n, idx), sum = 0;
  rc = chain_elems_sum(ds, &c.p, nin, &sum, err);
  if (rc == 0)
    rc = engine_check_stop(e, err);
  /* the last element's bytes are there: the parse reads them */
  if (rc == 0)
    rc = chain_elems_check(ds, &c.p, err);
  chain_elems_close(ds);
  if (rc < 0)
    return rc;
  *value = text_var_len(&n->form.dt, sum) + nin;
  return 0;
}

/* Release a streamed unit. */
static void ustream_destroy(struct zobj *o) {
  struct ustream_obj *u = (struct ustream_obj *)o;
  chain_elems_close(u->ds);
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
    rc = ustream_open(j, &u->ds, &u->start, err);
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
  u->cur = u->start;
  *obj = &u->obj;
  *cost = sizeof *u + chain_elems_cost(u->ds);
  return 0;
}

/* Elements rendered per step of a streamed read, and the bytes their
 * buffer starts with (room for a batch of short strings, so that blocks
 * of the stream are copied whole; it grows for long ones). */
#define USTREAM_BATCH 4096
#define USTREAM_BUF ((size_t)64 << 10)

/* Render elements from c on (their lines cover text [c->tpos, ...)) into
 * dst for text [off, off+len), off >= c->tpos, at most USTREAM_BATCH of
 * them: *got bytes; c advances past the elements whose lines end within
 * the range, or to the element holding the range's end. */
static int ustream_batch(struct engine *e, const struct znode *n,
                         const uint64_t *idx, uint64_t nin,
                         struct chain_elems *ds, struct ucur *c, uint64_t off,
                         size_t len, char *dst, size_t *got, struct zerr *err) {
  const struct dtype *dt = &n->form.dt;
  uint64_t *o = malloc((2 * USTREAM_BATCH + 1) * sizeof *o);
  uint64_t *glen = o ? o + USTREAM_BATCH + 1 : NULL; /* gathered lengths */
  size_t cap = USTREAM_BUF, used = 0;
  uint8_t *buf = malloc(cap);
  int rc = o && buf ? 0 : zerr_set(err, ENOMEM, "out of memory");
  struct ucur s = *c, q = *c, prev = *c;
  uint64_t b = 0, end = off + len;
  if (o)
    o[0] = 0;
  while (rc == 0 && b < USTREAM_BATCH && q.p.k < nin && q.tpos < end) {
    /* Elements a block of the stream holds, copied at once; those past
     * the range's end are dropped (q stepped again from p0, arithmetic). */
    struct chain_elem_pos p0 = q.p;
    long g = chain_elems_gather(ds, &q.p, nin, USTREAM_BATCH - b, buf + used,
                                cap - used, glen, err);
    if (g < 0) {
      rc = (int)g;
      break;
    }
    if (g > 0) {
      q.p = p0;
      for (long i = 0; i < g && b < USTREAM_BATCH && q.tpos < end; i++) {
        used += (size_t)glen[i];
        o[++b] = used;
        prev = q;
        ustream_step(ds, dt, &q, glen[i]);
      }
      continue;
    }
    /* one element alone: it outgrows buf, or its record the block */
    uint64_t l;
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
      rc = chain_elems_read(ds, &q.p, l, buf + used, err);
    if (rc < 0)
      break;
    used += l;
    o[++b] = used;
    prev = q;
    ustream_step(ds, dt, &q, l);
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
  struct ucur c = u->start;
  if (u->cur.tpos <= off)
    c = u->cur;
  else
    for (unsigned i = 0; i < u->nmark && i < USTREAM_MARKS; i++)
      if (u->mark[i].tpos <= off && u->mark[i].tpos >= c.tpos)
        c = u->mark[i];
  /* Skip to the element whose line holds off. */
  int rc = 0;
  while (rc == 0 && c.p.k < nin) {
    uint64_t l;
    rc = ustream_len(u->ds, &c, &l, err);
    if (rc == 0 && c.tpos + text_var_len(&n->form.dt, l) + 1 > off)
      break;
    if (rc == 0)
      ustream_step(u->ds, &n->form.dt, &c, l);
  }
  if (rc < 0)
    return rc;
  if (c.p.k < nin)
    u->mark[u->nmark++ % USTREAM_MARKS] = c;
  size_t done = 0;
  while (done < len && c.p.k < nin) {
    size_t got;
    ZTRY(ustream_batch(e, n, idx, nin, u->ds, &c, off + done, len - done,
                       dst + done, &got, err));
    done += got;
  }
  u->cur = c;
  return (long)done;
}

/* See ustream.h. */
long ustream_read(struct engine *e, const struct znode *n, const uint64_t *idx,
                  uint64_t off, size_t len, char *dst, struct memo_ref **pin,
                  struct zerr *err) {
  if (!unit_stream_windowed(e, n, idx))
    return -ENOTSUP;
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  static const uint64_t tag = 0x75746638737472ull; /* apart from wdata */
  struct memo_key k;
  node_key(&k, ELEVEL_DATA, n, idx, &tag, 1);
  struct unit_job j = {e, n, idx, key, NULL, 0, 0, 0, 0};
  ZTRY(memo_get(e->memo, &k, ustream_fill, &j, pin, err));
  struct ustream_obj *u = (struct ustream_obj *)memo_obj(*pin);
  pthread_mutex_lock(&u->lock);
  long got =
      ustream_read_locked(e, n, idx, unit_nin(n, idx), u, off, len, dst, err);
  if (got < 0) /* the stream is broken there: start over next time */
    u->cur = u->start, u->nmark = 0;
  pthread_mutex_unlock(&u->lock);
  if (got < 0) {
    unit_log_failure(e, key, err);
    zerr_prefix(err, "chunk %s: ", key);
  }
  return got;
}
