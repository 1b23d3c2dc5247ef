/* row.c - rows: the units of one slab decoded together, and reads
 * through them (see row.h). */
#include "row.h"

#include <stdlib.h>

#include "../src/util/zmath.h"
#include "cursor.h"

/* Largest segment table of one row of units (entries). */
#define ROW_MAX_SEGMENTS (64u << 20)

/* What a row fill needs. */
struct row_job {
  struct engine *e;
  const struct znode *n;
  const struct region *r;
  const struct region_layout *l;
  uint64_t k; /* the slab */
};

struct slab_row {
  struct zobj obj;
  uint64_t nunits;
  size_t unit_cost;          /* bytes of its first unit and data */
  struct chunk_text **units; /* references, in slab order */
  struct bytesrc **data;     /* element bytes of variable-length units */
  uint64_t nseg;
  uint64_t *seg_off;  /* nseg+1 text offsets of the row segments */
  uint64_t *seg_uoff; /* where each segment starts in its unit's text */
};

/* Release a row. */
static void row_destroy(struct zobj *o) {
  struct slab_row *w = (struct slab_row *)o;
  for (uint64_t i = 0; i < w->nunits; i++) { /* units NULL: fill failed */
    if (w->units && w->units[i])
      zobj_put(&w->units[i]->obj);
    if (w->data)
      bytesrc_unref(w->data[i]);
  }
  free(w->units);
  free(w->data);
  free(w->seg_off);
  free(w->seg_uoff);
  free(w);
}

/* Rows of elements of the region inside slab k along dimension 0. */
static uint64_t slab_rows0(const struct znode *n, const struct region *r,
                           uint64_t k) {
  uint64_t u = r->lo[0] + k, start = node_unit_start(n, 0, u);
  uint64_t ext = node_unit_ext(n, 0, u);
  return r->ehi[0] - start < ext ? r->ehi[0] - start : ext;
}

/* Segments of slab k: rows of elements times units along the last
 * dimension. */
static int slab_nseg(const struct znode *n, const struct region *r, uint64_t k,
                     uint64_t *nseg) {
  uint64_t rows = slab_rows0(n, r, k);
  for (int d = 1; d < r->ndim - 1; d++)
    if (zmul_u64(rows, r->ehi[d] - r->elo[d], &rows) < 0)
      return -EOVERFLOW;
  return zmul_u64(rows, r->hi[r->ndim - 1] - r->lo[r->ndim - 1], nseg);
}

/* Segment s of slab k: the unit (its index in the slab) and the in-bounds
 * row R of that unit it comes from. */
static uint64_t segment_locate(const struct znode *n, const struct region *r,
                               uint64_t k, uint64_t s, uint64_t *row) {
  int nd = r->ndim;
  uint64_t glast = r->hi[nd - 1] - r->lo[nd - 1];
  uint64_t rr = s / glast;
  uint64_t idx[ZMETA_MAX_DIMS];
  idx[nd - 1] = r->lo[nd - 1] + s % glast;
  /* Region row rr of the slab -> element coordinates a[0..nd-2]. */
  uint64_t a[ZMETA_MAX_DIMS];
  for (int d = nd - 2; d >= 0; d--) {
    uint64_t extent = d == 0 ? slab_rows0(n, r, k) : r->ehi[d] - r->elo[d];
    a[d] = rr % extent;
    rr /= extent;
  }
  a[0] += node_unit_start(n, 0, r->lo[0] + k);
  for (int d = 1; d <= nd - 2; d++)
    a[d] += r->elo[d];
  uint64_t R = 0;
  for (int d = 0; d <= nd - 2; d++) {
    idx[d] = node_unit_of(n, d, a[d]);
    R = R * node_unit_ext(n, d, idx[d]) +
        (a[d] - node_unit_start(n, d, idx[d]));
  }
  *row = R;
  uint64_t i = 0; /* index in the slab: C order over dimensions 1.. */
  for (int d = 1; d < nd; d++)
    i = i * (r->hi[d] - r->lo[d]) + (idx[d] - r->lo[d]);
  return i;
}

/* Unit i of slab k: stored ones decoded through the memo (the row keeps
 * its own reference), the others as fill units. */
static int row_unit(struct row_job *j, struct slab_row *w, uint64_t i,
                    size_t *cost, struct zerr *err) {
  const struct region *r = j->r;
  uint64_t rl = j->k * r->per_slab + i, idx[ZMETA_MAX_DIMS];
  region_unit(r, rl, idx);
  if (!region_stored(j->l, rl))
    return unit_new_fill(j->n, idx, &w->units[i], err);
  struct memo_ref *ref, *dref;
  ZTRY(unit_get(j->e, j->n, idx, &ref, err));
  const struct chunk_text *ct = unit_of_ref(ref), *rct;
  int rc = unit_src(j->e, j->n, ct, &rct, &w->data[i], &dref, err);
  if (rc == 0) {
    /* the row keeps what it reads from, whatever the cache does */
    w->units[i] = (struct chunk_text *)zobj_get((struct zobj *)&rct->obj);
    *cost += rct->cost + (rct != ct ? ct->cost : 0);
    if (w->data[i] && w->data[i]->mem)
      *cost += (size_t)w->data[i]->size;
  }
  memo_release(j->e->memo, dref);
  memo_release(j->e->memo, ref);
  return rc;
}

/* Have the workers decode the other units of a row while the fill goes
 * through them in order, when they all fit the ahead budget (judged by
 * the first unit's cost, already spent). */
static struct cursor_fan *row_fan_out(struct row_job *j, size_t cost0) {
  const struct region *r = j->r;
  struct engine *e = j->e;
  if (!e->ahead || cost0 > e->ahead_budget / (r->per_slab - 1))
    return NULL;
  struct cursor_fan *fan = cursor_fan_new();
  for (uint64_t i = 1; fan && i < r->per_slab; i++) {
    uint64_t rl = j->k * r->per_slab + i;
    if (region_stored(j->l, rl) &&
        cursor_ahead_unit(e, j->n, r, rl, fan, i) < 0)
      break;
  }
  return fan;
}

/* Fill: decode every unit of slab k once and measure its row segments. */
static int row_fill(void *ctx, struct zobj **obj, size_t *cost,
                    struct zerr *err) {
  struct row_job *j = ctx;
  const struct znode *n = j->n;
  const struct region *r = j->r;
  uint64_t nseg;
  if (slab_nseg(n, r, j->k, &nseg) < 0 || nseg > ROW_MAX_SEGMENTS)
    return zerr_set(err, EFBIG, "array view: too many row segments");
  struct slab_row *w = calloc(1, sizeof *w);
  if (!w)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&w->obj, row_destroy);
  w->nunits = r->per_slab;
  w->units = calloc((size_t)w->nunits, sizeof *w->units);
  w->data = calloc((size_t)w->nunits, sizeof *w->data);
  w->seg_off = malloc(((size_t)nseg + 1) * sizeof *w->seg_off);
  w->seg_uoff = malloc(((size_t)nseg + 1) * sizeof *w->seg_uoff);
  /* Per unit: the next row start, known from its previous segment. */
  uint64_t *next_k = calloc((size_t)w->nunits, sizeof *next_k);
  uint64_t *next_off = calloc((size_t)w->nunits, sizeof *next_off);
  int rc =
      w->units && w->data && w->seg_off && w->seg_uoff && next_k && next_off
          ? 0
          : zerr_set(err, ENOMEM, "out of memory");
  size_t c = sizeof *w + ((size_t)nseg + 1) * 16 + (size_t)w->nunits * 16;
  struct cursor_fan *fan = NULL;
  for (uint64_t i = 0; rc == 0 && i < w->nunits; i++) {
    size_t c0 = c;
    cursor_fan_at(fan, i);
    rc = engine_check_stop(j->e, err);
    if (rc == 0)
      rc = row_unit(j, w, i, &c, err);
    if (rc == 0 && i == 0) {
      w->unit_cost = c - c0;
      /* a stored first unit tells what the others will cost */
      if (w->nunits > 1 && (w->units[0]->ab || w->units[0]->text))
        fan = row_fan_out(j, w->unit_cost);
    }
    if (rc == 0 && c > j->e->window_cap)
      rc = zerr_set(err, EFBIG,
                    "array view: a row of chunks decodes to more than the "
                    "decode limit of %zu bytes (-o max_decode)",
                    j->e->window_cap);
  }
  cursor_fan_done(fan);
  w->nseg = nseg;
  uint64_t pos = 0;
  /* A unit's rows come in increasing order, so each segment's end is
   * found from its start by walking at most one row (or one block). */
  for (uint64_t s = 0; rc == 0 && s < nseg; s++) {
    uint64_t R, i = segment_locate(n, r, j->k, s, &R);
    const struct chunk_text *ct = w->units[i];
    uint64_t wd = ct->ext[r->ndim - 1];
    uint64_t a = text_line_off_from(ct, next_k[i], next_off[i], R * wd);
    uint64_t b = text_line_off_from(ct, R * wd, a, (R + 1) * wd);
    next_k[i] = (R + 1) * wd;
    next_off[i] = b;
    w->seg_off[s] = pos;
    w->seg_uoff[s] = a;
    pos += b - a;
    if (s % 65536 == 65535)
      rc = engine_check_stop(j->e, err);
  }
  free(next_k);
  free(next_off);
  if (rc < 0) {
    zobj_put(&w->obj);
    return rc;
  }
  w->seg_off[nseg] = pos;
  *obj = &w->obj;
  *cost = c;
  return 0;
}

/* Read through slab k's row: the segments of its units in turn. */
long row_read(const struct read_req *q, const struct region *r,
              const struct region_layout *l, uint64_t k) {
  struct memo_key key;
  region_key(&key, ELEVEL_ROW, q->n, r, &k);
  struct row_job j = {q->e, q->n, r, l, k};
  struct memo_ref *ref;
  ZTRY(memo_get(q->e->memo, &key, row_fill, &j, &ref, q->err));
  const struct slab_row *w = (const struct slab_row *)memo_obj(ref);
  cursor_note_cost(q->c, w->unit_cost);
  size_t done = 0;
  long rc = 0;
  uint64_t s = zfloor_u64(w->seg_off, w->nseg, q->off);
  while (done < q->len && s < w->nseg) {
    uint64_t pos = q->off + done, R;
    uint64_t i = segment_locate(q->n, r, k, s, &R);
    const struct chunk_text *ct = w->units[i];
    uint64_t wd = ct->ext[r->ndim - 1];
    uint64_t avail = w->seg_off[s + 1] - pos;
    size_t want = q->len - done < avail ? q->len - done : (size_t)avail;
    uint64_t uoff = w->seg_uoff[s] + (pos - w->seg_off[s]);
    long got = text_read_at(ct, w->data[i], R * wd, w->seg_uoff[s], uoff, want,
                            q->dst + done, q->err);
    if (got < 0) {
      rc = got;
      break;
    }
    if ((size_t)got != want) {
      rc = zerr_set(q->err, EIO, "view: chunk shorter than its size");
      break;
    }
    done += want;
    if (want == avail)
      s++;
  }
  cursor_keep(q->e, q->c, ref, 0);
  return rc < 0 ? rc : (long)done;
}
