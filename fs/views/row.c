/* row.c - rows: the units of one slab decoded together, and reads
 * through them (see row.h). */
#include "row.h"

#include <stdlib.h>

#include "../../src/util/zmath.h"
#include "../engine/cursor.h"
#include "rowband.h"

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
  if (rowband_nseg(n, r, j->k, &nseg) < 0 || nseg > ROWBAND_MAX_SEGMENTS)
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
    uint64_t R, i = rowband_locate(n, r, j->k, s, &R);
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

/* Where each of its rows starts in the text of every unit of a slab,
 * learned one unit at a time (a cold read's map of the slab). */
struct row_map {
  uint64_t **roff; /* per unit: rows+1 text offsets, or NULL: not yet */
  uint64_t nunits;
};

/* Free a row map. */
static void row_map_free(struct row_map *m) {
  for (uint64_t i = 0; m->roff && i < m->nunits; i++)
    free(m->roff[i]);
  free(m->roff);
}

/* The row starts of unit i of slab k into m (decoding it if it is not in
 * the cache; nothing is kept pinned). */
static int cold_rows(const struct read_req *q, const struct region *r,
                     const struct region_layout *l, uint64_t k, uint64_t i,
                     struct row_map *m) {
  if (m->roff[i])
    return 0;
  struct chunk_text *ct;
  struct bytesrc *data;
  struct memo_ref *ref, *dref;
  ZTRY(rowband_unit_pin(q->e, q->n, r, l, k, i, &ct, &data, &ref, &dref,
                        q->err));
  uint64_t wd = ct->ext[r->ndim - 1], rows = wd ? ct->nin / wd : 0;
  uint64_t *o = malloc((size_t)(rows + 1) * sizeof *o);
  if (o) {
    o[0] = 0;
    for (uint64_t R = 0; R < rows; R++)
      o[R + 1] = text_line_off_from(ct, R * wd, o[R], (R + 1) * wd);
  }
  rowband_unit_unpin(q->e, ct, data, ref, dref);
  if (!o)
    return zerr_set(q->err, ENOMEM, "out of memory");
  m->roff[i] = o;
  return 0;
}

/* What a cold read holds of one unit of the slab while it reads. */
struct cold_pin {
  struct chunk_text *ct; /* NULL: not held */
  struct bytesrc *data;
  struct memo_ref *ref, *dref;
};

/* A read of slab k by a reader not going through it in sequence, with
 * its row not built: the segments before the read are measured one unit
 * at a time (none kept), and only the units the read shows are held, so a
 * cold read of a wide slab decodes and holds the units of the rows it
 * shows rather than every unit of the slab at once. */
static long row_read_cold(const struct read_req *q, const struct region *r,
                          const struct region_layout *l, uint64_t k) {
  uint64_t nseg;
  if (rowband_nseg(q->n, r, k, &nseg) < 0 || nseg > ROWBAND_MAX_SEGMENTS)
    return zerr_set(q->err, EFBIG, "array view: too many row segments");
  struct row_map m = {calloc((size_t)r->per_slab, sizeof(uint64_t *)),
                      r->per_slab};
  struct cold_pin *pin = calloc((size_t)r->per_slab, sizeof *pin);
  int rc = m.roff && pin ? 0 : zerr_set(q->err, ENOMEM, "out of memory");
  uint64_t pos = 0, s = 0, R = 0, i = 0, seglen = 0;
  /* The segment holding q->off. */
  for (; rc == 0 && s < nseg; s++, pos += seglen) {
    i = rowband_locate(q->n, r, k, s, &R);
    if ((rc = cold_rows(q, r, l, k, i, &m)) < 0)
      break;
    seglen = m.roff[i][R + 1] - m.roff[i][R];
    if (pos + seglen > q->off)
      break;
    if (s % 65536 == 65535 && (rc = engine_check_stop(q->e, q->err)) < 0)
      break;
  }
  size_t done = 0;
  while (rc == 0 && done < q->len && s < nseg) {
    i = rowband_locate(q->n, r, k, s, &R);
    if ((rc = cold_rows(q, r, l, k, i, &m)) < 0)
      break;
    uint64_t a = m.roff[i][R], b = m.roff[i][R + 1];
    uint64_t at = q->off + done - pos; /* inside the segment */
    size_t want =
        q->len - done < b - a - at ? q->len - done : (size_t)(b - a - at);
    struct cold_pin *p = &pin[i];
    if (!p->ct &&
        (rc = rowband_unit_pin(q->e, q->n, r, l, k, i, &p->ct, &p->data,
                               &p->ref, &p->dref, q->err)) < 0)
      break;
    uint64_t wd = p->ct->ext[r->ndim - 1];
    long got = text_read_at(p->ct, p->data, R * wd, a, a + at, want,
                            q->dst + done, q->err);
    if (got < 0) {
      rc = (int)got;
      break;
    }
    if ((size_t)got != want) {
      rc = zerr_set(q->err, EIO, "view: chunk shorter than its size");
      break;
    }
    done += want;
    if (at + want == b - a) {
      pos += b - a;
      s++;
    }
  }
  for (uint64_t u = 0; pin && u < r->per_slab; u++)
    rowband_unit_unpin(q->e, pin[u].ct, pin[u].data, pin[u].ref, pin[u].dref);
  free(pin);
  row_map_free(&m);
  return rc < 0 ? rc : (long)done;
}

/* Tag of the memo value saying slab k was read cold once already. */
#define ROW_COLD_TAG 0x636f6c64u

/* Is a cold read of slab k worth reading unit by unit: a slab whose row
 * would hold a large share of the memory bound, of units small enough
 * that the few a read shows stay in the cache, so a reader that goes on
 * builds its row from them rather than decoding them again? */
static int row_cold_fits(const struct engine *e, const struct znode *n,
                         const struct region *r, const struct region_layout *l,
                         uint64_t k) {
  uint64_t text = region_slab_off(n, r, l, k + 1) - region_slab_off(n, r, l, k);
  uint64_t unit = text / r->per_slab; /* about a unit's decoded cost */
  return text >= ROWBAND_SLACK && 2 * unit <= e->cache_size;
}

/* Read through slab k's row: the segments of its units in turn (or in
 * bands, fs/views/rowband.h). */
long row_read(const struct read_req *q, const struct region *r,
              const struct region_layout *l, uint64_t k) {
  struct memo_key key;
  region_key(&key, ELEVEL_ROW, q->n, r, &k);
  struct row_job j = {q->e, q->n, r, l, k};
  struct memo_ref *ref;
  /* The first read of a slab out of sequence reads just the units it
   * shows; a reader that comes back (random readers, a reader turning
   * sequential) has the row built, so its units are decoded once per
   * pass rather than once per read. */
  if (!q->seq && row_cold_fits(q->e, q->n, r, l, k)) {
    struct memo_key ck = key;
    uint64_t seen;
    ck.v[ck.n++] = ROW_COLD_TAG;
    if (memo_peek(q->e->memo, &key, &ref))
      memo_release(q->e->memo, ref);
    else if (!memo_value_peek(q->e->memo, &ck, &seen)) {
      memo_value_put(q->e->memo, &ck, 1);
      return row_read_cold(q, r, l, k);
    }
  }
  /* A row that would hold more than a row may: the slab in bands. */
  if (key.n + 2 <= MEMO_KEY_WORDS && rowband_wanted(q->e, q->n, r, l, k))
    return rowband_read(q, r, l, k);
  ZTRY(memo_get(q->e->memo, &key, row_fill, &j, &ref, q->err));
  const struct slab_row *w = (const struct slab_row *)memo_obj(ref);
  cursor_note_cost(q->c, w->unit_cost, 0);
  size_t done = 0;
  long rc = 0;
  uint64_t s = zfloor_u64(w->seg_off, w->nseg, q->off);
  while (done < q->len && s < w->nseg) {
    uint64_t pos = q->off + done, R;
    uint64_t i = rowband_locate(q->n, r, k, s, &R);
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
