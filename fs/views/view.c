/* view.c - sizes and ranged reads of chunk views and array views (see
 * view.h for the model): a read finds the slabs of its region in the
 * layout and reads each through its unit (a slab of one unit) or its row
 * (fs/views/row.c). */
#include "view.h"

#include <string.h>

#include "../../codecs/chain.h"
#include "../engine/cursor.h"
#include "../engine/region.h"
#include "layout.h"
#include "lsize.h"
#include "row.h"

/* See view.h. */
struct view_cursor *view_cursor_new(void) {
  return cursor_new();
}

/* See view.h. */
void view_cursor_free(struct engine *e, struct view_cursor *c) {
  cursor_free(e, c);
}

/* ---- reads ---- */

/* Read from the text of unit idx: a fill unit when it is known not to be
 * stored, else decoded through the memo (the cursor keeps what it used).
 * With lend: a read inside text rendered whole is lent, not copied. */
static long read_unit(const struct read_req *q, const uint64_t *idx, int stored,
                      struct view_lend *lend) {
  struct engine *e = q->e;
  const struct znode *n = q->n;
  struct view_cursor *c = q->c;
  uint64_t off = q->off;
  size_t len = q->len;
  char *dst = q->dst;
  struct zerr *err = q->err;
  if (!stored) {
    struct chunk_text *ct;
    ZTRY(unit_new_fill(n, idx, &ct, err));
    long got = text_read(ct, NULL, off, len, dst, err);
    zobj_put(&ct->obj);
    return got;
  }
  struct memo_ref *ref, *dref = NULL;
  /* A unit too large to decode whole within the cache: read in windows
   * that follow the reader (unit_windowed), nothing decoded ahead. Its
   * text ends where its size says: a size the persistent index claimed
   * is checked first (a decode checks the others). */
  long wgot = -ENOTSUP;
  if (unit_windowed(e, n, idx)) {
    uint64_t size;
    int claim;
    ZTRY(unit_size_claim(e, n, idx, &size, &claim, err));
    int vr = claim ? unit_size_verify(e, n, idx, size, err) : 0;
    if (vr < 0)
      return vr;
    wgot = unit_read_window(e, n, idx, off, len, dst, &dref, err);
  }
  if (wgot != -ENOTSUP) {
    cursor_note_cost(c, SIZE_MAX, 0);
    cursor_keep(e, c, dref, 0);
    return wgot;
  }
  zerr_clear(err);
  if (!q->seq) {
    /* A reader that jumps (tail, a random read) of a unit not decoded
     * yet: through a partial decoder, read just what it shows. */
    struct memo_key k;
    node_key(&k, ELEVEL_UNIT, n, idx, NULL, 0);
    if (memo_peek(e->memo, &k, &ref))
      memo_release(e->memo, ref);
    else {
      long got = unit_read_direct(e, n, idx, off, len, dst, err);
      if (got != -ENOTSUP)
        return got;
      zerr_clear(err);
    }
  }
  struct memo_key uk;
  node_key(&uk, ELEVEL_UNIT, n, idx, NULL, 0);
  cursor_room(e, c, &uk);
  ZTRY(unit_get(e, n, idx, &ref, err));
  const struct chunk_text *ct = unit_of_ref(ref), *rct;
  struct bytesrc *data = NULL;
  if (ct->ab && !ct->ab->elsize && !ct->ab->data) { /* a deferred section */
    struct memo_key dk;
    node_key(&dk, ELEVEL_DATA, n, idx, NULL, 0);
    cursor_room(e, c, &dk); /* this unit is pinned by ref */
  }
  long got = unit_src(e, n, ct, &rct, &data, &dref, err);
  if (got == 0 && lend && rct->text && off < rct->size &&
      len <= rct->size - off) {
    got = (long)len;
    lend->bytes = rct->text + off;
    lend->obj = zobj_get((struct zobj *)&rct->obj);
  } else if (got == 0) {
    got = text_read(rct, data, off, len, dst, err);
  }
  /* Elements rendered at a cost beyond a copy (numbers, bytes as hex),
   * not text copied: slices rendered by the workers pay. Strings read
   * where they lie render at about the speed of the copy, and their
   * slices cost more CPU than they spared on two cores. */
  if (got > 0)
    cursor_note_renders(c,
                        !rct->text && rct->ab &&
                            (rct->ab->elsize || rct->form->dt.kind == DT_BYTES),
                        rct->size);
  int scan = got >= 0 && q->seq && unit_passing(e, n, ref, dref);
  if (got >= 0)
    cursor_note_cost(c,
                     ct->cost + (rct != ct ? rct->cost : 0) +
                         (data && data->mem ? (size_t)data->size : 0),
                     scan);
  bytesrc_unref(data);
  cursor_keep(e, c, dref, 0);
  cursor_keep(e, c, ref, 0);
  return got;
}

/* How a read checks the sizes claimed before its text (layout_check): a
 * reader that jumped has the workers help; the others (in order, a slice
 * rendered ahead) go through a claim or two. */
static enum layout_check_mode check_mode(const struct read_req *q) {
  return q->seq ? LAYOUT_CHECK_ORDER : LAYOUT_CHECK_JUMP;
}

/* Layouts a read may find out of date (a size claimed by the persistent
 * index, then contradicted) before it gives up: each one corrects a
 * unit's size, and a store that keeps changing is not read forever. */
#define VIEW_LAYOUT_RETRIES 64

/* One pass of region_read over layout l: the bytes read (or a negative
 * errno), the last slab in *k, in *upto the stored units whose sizes
 * placed them (every one when it met the end of the text), and in *from
 * the first stored unit it read (UINT64_MAX when it read none). */
static long region_pass(const struct read_req *q, const struct region *r,
                        struct region_layout *l, struct view_lend *lend,
                        uint64_t *k, uint64_t *from, uint64_t *upto) {
  struct engine *e = q->e;
  const struct znode *n = q->n;
  struct read_req u = *q; /* the part inside one slab */
  size_t done = 0;
  *upto = 0;
  *from = UINT64_MAX;
  while (done < q->len) {
    uint64_t pos = q->off + done, ended;
    ZTRY(layout_reach(e, n, r, l, pos, &ended, q->err));
    if (ended == r->nslabs && pos >= l->total) {
      *upto = l->np; /* the end of the text: every size says where */
      break;
    }
    *k = region_slab_find(n, r, l, ended, pos);
    *upto = region_rank(l, (*k + 1) * r->per_slab);
    if (*from == UINT64_MAX)
      *from = region_rank(l, *k * r->per_slab);
    /* a reader that jumped into sizes of a region record checks the
     * claims of what it reads first: the decode that checks a claim
     * keeps no per-chunk record (a tail of a second mount reads its last
     * chunks, not the per-chunk index); a wrong one: read again */
    if (l->from_record && check_mode(q) == LAYOUT_CHECK_JUMP) {
      int c = layout_check(e, n, r, l, *upto, LAYOUT_CHECK_JUMP,
                           region_rank(l, *k * r->per_slab), q->err);
      if (c != 0)
        return c < 0 ? c : (long)done;
    }
    if (!done)
      cursor_ahead_start(e, n, r, l, q->c, pos, *k);
    if (!done && u.seq) { /* its units after decode while this one does */
      cursor_ahead_plan(e, n, r, l, q->c, *k, 1);
      layout_ahead(e, n, r, l, region_rank(l, *k * r->per_slab));
    }
    engine_ahead_settle(e);
    if (u.seq)
      cursor_reached(q->c, *k * r->per_slab);
    uint64_t s0 = region_slab_off(n, r, l, *k);
    uint64_t s1 = region_slab_off(n, r, l, *k + 1);
    u.off = pos - s0;
    u.len = q->len - done < s1 - pos ? q->len - done : (size_t)(s1 - pos);
    u.dst = q->dst + done;
    long got;
    if (r->per_slab == 1) {
      uint64_t idx[ZMETA_MAX_DIMS];
      region_unit(r, *k, idx);
      /* lent only when this unit holds the whole read */
      got = read_unit(&u, idx, region_stored(l, *k),
                      !done && u.len == q->len ? lend : NULL);
    } else {
      got = row_read(&u, r, l, *k);
    }
    if (got < 0)
      return got;
    if (got == 0)
      return zerr_set(q->err, EIO, "view: chunk shorter than its size");
    done += (size_t)got;
  }
  return (long)done;
}

/* Read across the slabs of a region (q->off: in the region's text). The
 * layout learns sizes only up to the slabs the read reaches. Before the
 * text goes out, the sizes the persistent index claimed for the units
 * that placed it are checked (layout_check; the read's own units were
 * checked by their decode): when one is wrong (or the node's sizes
 * changed meanwhile), the read is made again on a new layout, whose text
 * before that unit is the same. Checking after the read, not before it,
 * lets readers of the same text (the kernel's read-ahead, the slices)
 * decode their units at once and wait only for the check. With lend: a
 * read inside one unit's text rendered whole is lent (read_unit). */
static long region_read(const struct read_req *q, const struct region *r,
                        struct view_lend *lend) {
  struct engine *e = q->e;
  const struct znode *n = q->n;
  struct memo_ref *lref;
  ZTRY(layout_get(e, n, r, &lref, q->err));
  struct region_layout *l = (struct region_layout *)memo_obj(lref);
  long rc;
  uint64_t k = 0, from, upto;
  for (int tries = 0;; tries++) {
    rc = region_pass(q, r, l, lend, &k, &from, &upto);
    int stale = node_sizes_gen(n) != l->gen;
    if (from > upto)
      from = upto; /* it read no unit: nothing of its own to check */
    if (!stale && (rc >= 0 || !zerr_is_transient((int)-rc))) {
      int c = layout_check(e, n, r, l, upto, check_mode(q), from, q->err);
      if (c < 0) {
        rc = c;
        break;
      }
      stale = c;
    }
    if (!stale)
      break;
    if (lend && lend->obj) { /* placed by a wrong size: not lent */
      zobj_put(lend->obj);
      *lend = (struct view_lend){0};
    }
    zerr_clear(q->err);
    memo_release(e->memo, lref);
    if (tries == VIEW_LAYOUT_RETRIES)
      return zerr_set(q->err, EIO, "view: chunk sizes keep changing");
    ZTRY(layout_get(e, n, r, &lref, q->err));
    l = (struct region_layout *)memo_obj(lref);
  }
  if (rc > 0)
    cursor_ahead_plan(e, n, r, l, q->c, k, 0);
  engine_ahead_settle(e);
  cursor_keep(e, q->c, lref, 1);
  /* Never a short read on error: the kernel takes a short read as the end
   * of the file, and the reader would see truncated text and no error. */
  return rc;
}

/* ---- reads through slices ---- */

/* A view's bytes read with the caller's cursor (lend: may be lent). */
typedef long (*view_read_fn)(const struct read_req *q,
                             const struct cursor_view *v,
                             struct view_lend *lend);

/* Read q->len bytes of a view at q->off: what the workers rendered ahead
 * is lent (lend non-NULL and one slice holds it all) or copied, the rest
 * read by `read`; then slices after it are queued for a reader in
 * sequence. */
static long read_sliced(struct read_req *q, const struct cursor_view *v,
                        view_read_fn read, struct view_lend *lend) {
  q->seq = cursor_note(q->c, q->off, q->len);
  size_t done = 0, n;
  if (lend && (lend->bytes =
                   cursor_slice_lend(q->c, q->off, q->len, &n, &lend->slice))) {
    if (q->seq)
      cursor_slice_plan(q->e, q->c, v, q->off, q->off + n);
    engine_ahead_settle(q->e);
    return (long)n;
  }
  while (done < q->len && (n = cursor_slice_read(q->c, q->off + done,
                                                 q->len - done, q->dst + done)))
    done += n;
  long got = 0;
  if (done < q->len) {
    struct read_req rest = *q;
    rest.off += done;
    rest.len -= done;
    rest.dst += done;
    got = read(&rest, v, done ? NULL : lend);
  }
  if (got < 0)
    return got;
  if (q->seq)
    cursor_slice_plan(q->e, q->c, v, q->off, q->off + done + (size_t)got);
  engine_ahead_settle(q->e);
  return (long)done + got;
}

/* ---- the views ---- */

/* Check that n is an array whose views can be read. */
static int view_check(const struct znode *n, struct zerr *err) {
  if (n->kind == ZNODE_ARRAY && n->chain)
    return 0;
  return zerr_set(err, n->errcode ? n->errcode : EIO, "%s",
                  n->view_error ? n->view_error : "not a readable array");
}

/* Size of chunk idx's view: one unit, or the region of a shard. */
int view_chunk_size(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (!n->shard)
    return unit_size(e, n, idx, size, err);
  struct region r;
  ZTRY(region_of_chunk(n, idx, &r, err));
  return layout_size(e, n, &r, size, err);
}

/* See view.h. */
int view_chunk_size_known(struct engine *e, const struct znode *n,
                          const uint64_t *idx, uint64_t *size,
                          struct zerr *err) {
  ZTRY(view_check(n, err));
  struct memo_key k;
  if (n->shard) {
    struct region r;
    ZTRY(region_of_chunk(n, idx, &r, err));
    region_key(&k, ELEVEL_REGION_SIZE, n, &r, NULL);
    return memo_value_peek(e->memo, &k, size);
  }
  node_key(&k, ELEVEL_UNIT_SIZE, n, idx, NULL, 0);
  if (memo_value_peek(e->memo, &k, size)) {
    *size &= ~UNIT_SIZE_CLAIM;
    return 1;
  }
  /* decoding the unit reads its index, not its data */
  if (!(chain_partial_caps(n->chain) & CODEC_PARTIAL_INDEX) || n->form.csv)
    return 0;
  ZTRY(unit_size(e, n, idx, size, err));
  return 1;
}

/* See view.h. */
int view_array_size_known(struct engine *e, const struct znode *n,
                          uint64_t *size, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0) {
    *size = 0;
    return 1;
  }
  struct region r;
  ZTRY(region_of_array(n, &r, err));
  struct memo_key k;
  region_key(&k, ELEVEL_REGION_SIZE, n, &r, NULL);
  return memo_value_peek(e->memo, &k, size);
}

/* A chunk view's bytes (view_read_fn). */
static long chunk_read(const struct read_req *q, const struct cursor_view *v,
                       struct view_lend *lend) {
  if (!q->n->shard)
    return read_unit(q, v->idx, 1, lend);
  struct region r;
  ZTRY(region_of_chunk(q->n, v->idx, &r, q->err));
  return region_read(q, &r, lend);
}

/* A slice of a chunk view (cursor_view.read): read as in sequence (the
 * unit decoded whole through the memo, not through a partial decoder). */
static long chunk_slice(const struct cursor_view *v, uint64_t off, size_t len,
                        char *dst, struct zerr *err) {
  struct read_req q = {v->e, v->n, NULL, 1, off, len, dst, err};
  return chunk_read(&q, v, NULL);
}

/* See view.h. */
long view_chunk_read_lend(struct engine *e, const struct znode *n,
                          const uint64_t *idx, uint64_t off, size_t len,
                          char *dst, struct view_cursor *c,
                          struct view_lend *lend, struct zerr *err) {
  if (lend)
    *lend = (struct view_lend){0};
  ZTRY(view_check(n, err));
  struct read_req q = {e, n, c, 0, off, len, dst, err};
  struct cursor_view v = {chunk_slice, e, n, {0}};
  memcpy(v.idx, idx, (size_t)n->meta->ndim * sizeof *idx);
  return read_sliced(&q, &v, chunk_read, lend);
}

/* Read from chunk idx's view. */
long view_chunk_read(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t off, size_t len, char *dst,
                     struct view_cursor *c, struct zerr *err) {
  return view_chunk_read_lend(e, n, idx, off, len, dst, c, NULL, err);
}

/* Whole-array view size. */
int view_array_size(struct engine *e, const struct znode *n, uint64_t *size,
                    struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0) {
    *size = 0;
    return 0;
  }
  struct region r;
  ZTRY(region_of_array(n, &r, err));
  return layout_size(e, n, &r, size, err);
}

/* See view.h. */
int view_array_size_deferred(struct engine *e, const struct znode *n,
                             struct zerr *err) {
  uint64_t size;
  int k = view_array_size_known(e, n, &size, err);
  if (k != 0)
    return k < 0 ? k : 0;
  return !unit_sizes_from_index(n); /* those are cheap: stat learns them */
}

/* See view.h. */
int view_array_size_stat(struct engine *e, const struct znode *n,
                         uint64_t wait_ns, uint64_t *size, struct zerr *err) {
  int k = view_array_size_known(e, n, size, err);
  if (k != 0)
    return k < 0 ? k : 0;
  if (wait_ns == UINT64_MAX || unit_sizes_from_index(n))
    return view_array_size(e, n, size, err);
  struct region r;
  ZTRY(region_of_array(n, &r, err));
  struct memo_ref *ref;
  ZTRY(layout_get(e, n, &r, &ref, err));
  struct region_layout *l = (struct region_layout *)memo_obj(ref);
  uint64_t now = lsize_now_ns();
  uint64_t deadline = wait_ns > UINT64_MAX - now ? 0 : now + wait_ns;
  int rc = layout_complete_within(e, n, &r, l, deadline ? deadline : 1, err);
  *size = rc == 0 ? l->total : 0;
  memo_release(e->memo, ref);
  return rc;
}

/* The whole-array view's bytes (view_read_fn). */
static long array_read(const struct read_req *q, const struct cursor_view *v,
                       struct view_lend *lend) {
  (void)v;
  struct region r;
  ZTRY(region_of_array(q->n, &r, q->err));
  return region_read(q, &r, lend);
}

/* A slice of the whole-array view (cursor_view.read), read as in
 * sequence. */
static long array_slice(const struct cursor_view *v, uint64_t off, size_t len,
                        char *dst, struct zerr *err) {
  struct read_req q = {v->e, v->n, NULL, 1, off, len, dst, err};
  return array_read(&q, v, NULL);
}

/* See view.h. */
long view_array_read_lend(struct engine *e, const struct znode *n, uint64_t off,
                          size_t len, char *dst, struct view_cursor *c,
                          struct view_lend *lend, struct zerr *err) {
  if (lend)
    *lend = (struct view_lend){0};
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0)
    return 0;
  struct read_req q = {e, n, c, 0, off, len, dst, err};
  struct cursor_view v = {array_slice, e, n, {0}};
  return read_sliced(&q, &v, array_read, lend);
}

/* Read from the whole-array view. */
long view_array_read(struct engine *e, const struct znode *n, uint64_t off,
                     size_t len, char *dst, struct view_cursor *c,
                     struct zerr *err) {
  return view_array_read_lend(e, n, off, len, dst, c, NULL, err);
}

/* See view.h. */
void view_lend_return(struct view_cursor *c, struct view_lend *lend) {
  if (!lend)
    return;
  if (lend->obj)
    zobj_put(lend->obj);
  if (lend->slice)
    cursor_slice_return(c, lend->slice);
  *lend = (struct view_lend){0};
}
