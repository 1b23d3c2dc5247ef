/* ufixed.c - units of fixed-size elements read by ranges in windows (see
 * ufixed.h). A unit's windows are UFIXED_WIN bytes of elements each; a
 * window's text is the text of a 1-D unit of just its elements under the
 * node's form, which is the unit's own text there (one line an element,
 * in C order, every dimension but the first whole). */
#include <stdlib.h>
#include <string.h>

#include "../../codecs/abytes.h"
#include "../../src/util/zmath.h"
#include "ufixed.h"

/* Element bytes per window: one ranged read, and the text a read renders
 * at most beyond what it shows. */
#define UFIXED_WIN (1u << 20)
#define UFIXED_WIN_MIN (64u << 10)
/* The smallest cache that takes the window path for a chunk that a whole
 * decode could hold (ufixed_windowed). */
#define UFIXED_CACHE_MIN (16u << 20)

/* Memo tags (ELEVEL_DATA, under the unit's key): apart from unitwin.c's
 * and ustream.c's. */
#define UFIXED_TAG_TABLE 0x75666978746162ull /* "ufixtab" */
#define UFIXED_TAG_WIN 0x75666978776e64ull   /* "ufixwnd" */

/* A unit's windows: where each one's text starts (memo object). */
struct ufix_table {
  struct zobj obj;
  uint64_t nin;     /* in-bounds elements */
  uint64_t per;     /* elements a window */
  uint64_t nwin;    /* windows */
  uint64_t toff[];  /* nwin+1: text offset of window w; toff[nwin] is the
                       unit's text size */
};

/* See ufixed.h. */
int ufixed_windowed(const struct engine *e, const struct znode *n,
                    const uint64_t *idx) {
  if (n->kind != ZNODE_ARRAY || !n->chain || n->shard || n->form.csv ||
      !(chain_partial_caps(n->chain) & CODEC_PARTIAL_ELEMENTS))
    return 0;
  const struct dtype *dt = &n->meta->dtype;
  if (!dt->size || dt->size != n->form.dt.size || dt->kind != n->form.dt.kind ||
      dtype_is_fixed_string(dt) || dt->kind == DT_STRUCT ||
      dt->kind == DT_OPTIONAL || dt->kind == DT_UNSUPPORTED)
    return 0;
  /* the bytes a whole decode holds: the chunk's, in bounds or not */
  uint64_t bytes = dt->size;
  for (int d = 0; d < n->meta->ndim; d++) {
    if (d && node_unit_ext(n, d, idx[d]) < node_unit_len(n, d, idx[d]))
      return 0;
    bytes *= node_unit_len(n, d, idx[d]);
  }
  /* Past max_decode always (a whole decode is refused). Past a quarter
   * of the cache only in a cache that keeps the window table and a window
   * between reads: in a smaller one (mount_scale.sh: 75 MB in 64 KiB)
   * the table is let go with each window and every read learned it
   * again, eight times slower than the whole decode it replaced. */
  return bytes >= UNIT_WINDOW_MIN &&
         ((bytes > e->cache_size / 4 && e->cache_size >= UFIXED_CACHE_MIN) ||
          bytes > e->env.max_decoded);
}

/* Read elements [first, first+count) of the open chunk d into a 1-D
 * unit of form f1 (whose shape this sets): its text size only (*size,
 * keeping nothing) when out is NULL, else the unit laid out with its
 * text rendered whole and the elements let go (*out, new reference; it
 * borrows f1, which must outlive it). */
static int ufix_window(struct engine *e, const uint64_t *idx,
                       const struct codec_partial *d, uint64_t first,
                       uint64_t count, struct text_form *f1,
                       struct chunk_text **out, uint64_t *size,
                       struct zerr *err) {
  size_t nb = (size_t)(count * d->elsize);
  void *buf = malloc(nb ? nb : 1);
  struct abytes *ab = abytes_alloc();
  int rc = buf && ab ? chain_partial_elements(d, first, count, buf, err)
                     : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && !(ab->fixed = bytesrc_from_mem(buf, nb)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    free(buf);
    abytes_free(ab);
    return rc;
  }
  ab->n = count;
  ab->elsize = d->elsize;
  f1->ndim = 1;
  f1->shape[0] = count;
  f1->edge[0] = NULL;
  f1->note_idx = idx; /* what its text shows is said of this unit */
  uint64_t zero = 0;
  if (!out)
    return text_measure(f1, &count, &zero, ab, e->env.max_decoded,
                        &e->stopping, size, err);
  return text_layout(f1, &count, &zero, ab, e->env.max_decoded, SIZE_MAX,
                     NULL, &e->stopping, out, err);
}

/* Release a window table. */
static void ufix_table_destroy(struct zobj *o) { free(o); }

/* Fill: the table of unit j->idx's windows, by one pass of ranged reads
 * (-ENOTSUP when the chunk is not stored: the fill unit is read the
 * usual way). */
static int ufix_table_fill(void *ctx, struct zobj **obj, size_t *cost,
                           struct zerr *err) {
  struct unit_job *j = ctx;
  struct engine *e = j->e;
  struct codec_partial d;
  int rc = unit_partial_open(e, j->n, j->idx, &d, err);
  if (rc == 0)
    return zerr_set(err, ENOTSUP, "not stored");
  if (rc < 0) {
    unit_log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  /* windows of UFIXED_WIN bytes, smaller in a small cache (a window's
   * text is a few times its bytes, and is kept while it is read) */
  size_t win = e->cache_size / 16 < UFIXED_WIN ? e->cache_size / 16
                                               : UFIXED_WIN;
  if (win < UFIXED_WIN_MIN)
    win = UFIXED_WIN_MIN;
  uint64_t nin = unit_nin(j->n, j->idx), per = win / d.elsize;
  if (!per)
    per = 1;
  uint64_t nwin = (nin + per - 1) / per;
  struct ufix_table *t = calloc(1, sizeof *t + (nwin + 1) * sizeof t->toff[0]);
  rc = t ? 0 : zerr_set(err, ENOMEM, "out of memory");
  if (t) {
    zobj_init(&t->obj, ufix_table_destroy);
    t->nin = nin, t->per = per, t->nwin = nwin;
  }
  if (rc == 0 && nin > d.n)
    rc = zerr_set(err, EIO, "chunk holds %llu elements, the unit %llu",
                  (unsigned long long)d.n, (unsigned long long)nin);
  for (uint64_t w = 0; rc == 0 && w < nwin; w++) {
    uint64_t first = w * per, cnt = nin - first < per ? nin - first : per;
    uint64_t sz = 0;
    struct text_form f1 = j->n->form;
    rc = engine_check_stop(e, err);
    if (rc == 0)
      rc = ufix_window(e, j->idx, &d, first, cnt, &f1, NULL, &sz, err);
    if (rc == 0)
      t->toff[w + 1] = t->toff[w] + sz;
  }
  chain_partial_close(&d);
  if (rc < 0) {
    if (t)
      zobj_put(&t->obj);
    unit_log_failure(e, j->key, err);
    return zerr_prefix(err, "chunk %s: ", j->key);
  }
  engine_req_note_unit();
  stats_add(&e->stats.decodes, 1);
  *obj = &t->obj;
  *cost = sizeof *t + (nwin + 1) * sizeof t->toff[0];
  return 0;
}

/* Unit idx's window table (pinned in *pin), learned once. */
static int ufix_table(struct engine *e, const struct znode *n,
                      const uint64_t *idx, const char *key,
                      struct memo_ref **pin, struct zerr *err) {
  static const uint64_t tag = UFIXED_TAG_TABLE;
  struct memo_key k;
  node_key(&k, ELEVEL_DATA, n, idx, &tag, 1);
  struct unit_job j = {e, n, idx, key, NULL, 0, 0, 0, 0};
  return memo_get(e->memo, &k, ufix_table_fill, &j, pin, err);
}

/* See ufixed.h. */
int ufixed_size(struct engine *e, const struct znode *n, const uint64_t *idx,
                uint64_t *size, struct zerr *err) {
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct memo_ref *pin;
  int rc = ufix_table(e, n, idx, key, &pin, err);
  if (rc == -ENOTSUP) {
    zerr_clear(err);
    return 1;
  }
  if (rc < 0)
    return rc;
  const struct ufix_table *t = (const struct ufix_table *)memo_obj(pin);
  *size = t->toff[t->nwin];
  memo_release(e->memo, pin);
  return 0;
}

/* One window of a unit rendered (memo object): its own form, which the
 * unit borrows. */
struct ufix_win {
  struct zobj obj;
  struct text_form form;
  struct chunk_text *ct;
};

/* Release a rendered window. */
static void ufix_win_destroy(struct zobj *o) {
  struct ufix_win *w = (struct ufix_win *)o;
  if (w->ct)
    zobj_put(&w->ct->obj);
  free(w);
}

/* A window fill's job. */
struct ufix_wjob {
  struct unit_job j;
  uint64_t first, count; /* its elements */
  uint64_t size;         /* its text size as the table has it */
};

/* Fill: render one window from one ranged read. */
static int ufix_win_fill(void *ctx, struct zobj **obj, size_t *cost,
                         struct zerr *err) {
  struct ufix_wjob *wj = ctx;
  struct engine *e = wj->j.e;
  struct ufix_win *w = calloc(1, sizeof *w);
  if (!w)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&w->obj, ufix_win_destroy);
  w->form = wj->j.n->form;
  struct codec_partial d;
  int rc = unit_partial_open(e, wj->j.n, wj->j.idx, &d, err);
  if (rc == 0) /* gone since the table was made */
    rc = zerr_set(err, EIO, "no longer stored");
  if (rc > 0)
    rc = ufix_window(e, wj->j.idx, &d, wj->first, wj->count, &w->form, &w->ct,
                     NULL, err);
  chain_partial_close(&d);
  if (rc == 0 && w->ct->size != wj->size)
    rc = zerr_set(err, EIO, "window text changed size since it was measured");
  if (rc < 0) {
    zobj_put(&w->obj);
    unit_log_failure(e, wj->j.key, err);
    return zerr_prefix(err, "chunk %s: ", wj->j.key);
  }
  *obj = &w->obj;
  *cost = sizeof *w + w->ct->cost;
  return 0;
}

/* See ufixed.h. */
long ufixed_read(struct engine *e, const struct znode *n, const uint64_t *idx,
                 uint64_t off, size_t len, char *dst, struct memo_ref **pin,
                 struct zerr *err) {
  *pin = NULL;
  if (!ufixed_windowed(e, n, idx))
    return -ENOTSUP;
  char key[4096];
  ZTRY(unit_store_key(n, idx, key, sizeof key, err));
  struct memo_ref *tpin;
  ZTRY(ufix_table(e, n, idx, key, &tpin, err));
  const struct ufix_table *t = (const struct ufix_table *)memo_obj(tpin);
  uint64_t total = t->toff[t->nwin];
  if (off >= total || !len) {
    memo_release(e->memo, tpin);
    return 0;
  }
  if (len > total - off)
    len = (size_t)(total - off);
  /* the window whose text holds off: toff[w] <= off < toff[w+1] */
  uint64_t lo = zfloor_u64(t->toff, t->nwin, off);
  size_t done = 0;
  int rc = 0;
  for (uint64_t w = lo; rc == 0 && done < len && w < t->nwin; w++) {
    uint64_t first = w * t->per;
    struct ufix_wjob wj = {{e, n, idx, key, NULL, 0, 0, 0, 0},
                           first,
                           t->nin - first < t->per ? t->nin - first : t->per,
                           t->toff[w + 1] - t->toff[w]};
    uint64_t tag[2] = {UFIXED_TAG_WIN, w};
    struct memo_key k;
    node_key(&k, ELEVEL_DATA, n, idx, tag, 2);
    if (*pin)
      memo_release(e->memo, *pin);
    *pin = NULL;
    rc = memo_get(e->memo, &k, ufix_win_fill, &wj, pin, err);
    if (rc < 0)
      break;
    const struct ufix_win *win = (const struct ufix_win *)memo_obj(*pin);
    uint64_t at = off + done - t->toff[w];
    long got = text_read(win->ct, NULL, at, len - done, dst + done, err);
    if (got < 0)
      rc = (int)got;
    else if (got == 0)
      rc = zerr_set(err, EIO, "window %llu shows no text",
                    (unsigned long long)w);
    else
      done += (size_t)got;
  }
  memo_release(e->memo, tpin);
  if (rc < 0)
    return rc;
  return (long)done;
}
