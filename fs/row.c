/* row.c - rows: the units of one slab decoded together, and reads
 * through them (see row.h). */
#include "row.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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

/* Unit i of slab k with what its text is read from (a pin on each, data a
 * new reference or NULL): row_unit's look-up without a row. */
static int slab_unit_pin(struct engine *e, const struct znode *n,
                         const struct region *r, const struct region_layout *l,
                         uint64_t k, uint64_t i, struct chunk_text **ct,
                         struct bytesrc **data, struct memo_ref **ref,
                         struct memo_ref **dref, struct zerr *err) {
  uint64_t rl = k * r->per_slab + i, idx[ZMETA_MAX_DIMS];
  region_unit(r, rl, idx);
  *ref = *dref = NULL;
  *data = NULL;
  if (!region_stored(l, rl))
    return unit_new_fill(n, idx, ct, err);
  ZTRY(unit_get(e, n, idx, ref, err));
  const struct chunk_text *rct;
  int rc = unit_src(e, n, unit_of_ref(*ref), &rct, data, dref, err);
  if (rc < 0) {
    memo_release(e->memo, *ref);
    *ref = NULL;
    return rc;
  }
  *ct = (struct chunk_text *)zobj_get((struct zobj *)&rct->obj);
  return 0;
}

/* Let go of what slab_unit_pin gave. */
static void slab_unit_unpin(struct engine *e, struct chunk_text *ct,
                            struct bytesrc *data, struct memo_ref *ref,
                            struct memo_ref *dref) {
  if (ct)
    zobj_put(&ct->obj);
  bytesrc_unref(data);
  memo_release(e->memo, dref);
  memo_release(e->memo, ref);
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
  ZTRY(slab_unit_pin(q->e, q->n, r, l, k, i, &ct, &data, &ref, &dref, q->err));
  uint64_t wd = ct->ext[r->ndim - 1], rows = wd ? ct->nin / wd : 0;
  uint64_t *o = malloc((size_t)(rows + 1) * sizeof *o);
  if (o) {
    o[0] = 0;
    for (uint64_t R = 0; R < rows; R++)
      o[R + 1] = text_line_off_from(ct, R * wd, o[R], (R + 1) * wd);
  }
  slab_unit_unpin(q->e, ct, data, ref, dref);
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
  if (slab_nseg(q->n, r, k, &nseg) < 0 || nseg > ROW_MAX_SEGMENTS)
    return zerr_set(q->err, EFBIG, "array view: too many row segments");
  struct row_map m = {calloc((size_t)r->per_slab, sizeof(uint64_t *)),
                      r->per_slab};
  struct cold_pin *pin = calloc((size_t)r->per_slab, sizeof *pin);
  int rc = m.roff && pin ? 0 : zerr_set(q->err, ENOMEM, "out of memory");
  uint64_t pos = 0, s = 0, R = 0, i = 0, seglen = 0;
  /* The segment holding q->off. */
  for (; rc == 0 && s < nseg; s++, pos += seglen) {
    i = segment_locate(q->n, r, k, s, &R);
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
    i = segment_locate(q->n, r, k, s, &R);
    if ((rc = cold_rows(q, r, l, k, i, &m)) < 0)
      break;
    uint64_t a = m.roff[i][R], b = m.roff[i][R + 1];
    uint64_t at = q->off + done - pos; /* inside the segment */
    size_t want =
        q->len - done < b - a - at ? q->len - done : (size_t)(b - a - at);
    struct cold_pin *p = &pin[i];
    if (!p->ct && (rc = slab_unit_pin(q->e, q->n, r, l, k, i, &p->ct, &p->data,
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
    slab_unit_unpin(q->e, pin[u].ct, pin[u].data, pin[u].ref, pin[u].dref);
  free(pin);
  row_map_free(&m);
  return rc < 0 ? rc : (long)done;
}

/* ---- bands: slabs whose row would hold more than a row may ---- */

/* Slabs of less text than this are read through their row at once: a row
 * that size is within the slack of the memory bound (cache + 64 MiB). */
#define ROW_COLD_MIN (32u << 20)

/* Text the bands a reader holds take at once, at most (more only when
 * one segment is longer): a third of the slack of the memory bound
 * (cache_size + 64 MiB), leaving the rest to the unit being visited and
 * the decoding around it. A band larger than the cache is let go by its
 * reader's cursor before the next one is made (cursor_room), so a reader
 * holds one band and bands may be that large; else its cursor may hold
 * its last three and the one being made, so bands take a quarter. */
#define ROW_BAND_MAX (20u << 20)
/* Tags of the memo keys of a banded slab's map and of its bands. */
#define ROW_MAP_TAG 0x6d6170u
#define ROW_BAND_TAG 0x62616e64u
/* Units a band fill has the workers decode ahead of it, at most. */
#define ROW_BAND_AHEAD 2

/* Where each segment of a banded slab's text comes from, and the bands
 * its segments are cut into (a memo object at ELEVEL_ROW). */
struct band_map {
  struct zobj obj;
  uint64_t nseg, nband;
  uint64_t *seg_off;  /* nseg+1 text offsets of the segments in the slab */
  uint64_t *seg_uoff; /* nseg: where each starts in its unit's text */
  uint64_t *band_seg; /* nband+1: the first segment of each band */
  size_t unit_cost;   /* bytes of the costliest unit visited */
};

/* One band's text, rendered (a memo object at ELEVEL_ROW). */
struct band_text {
  struct zobj obj;
  uint64_t size;
  char *text;
};

/* What a map or band fill needs. */
struct band_job {
  struct engine *e;
  const struct znode *n;
  const struct region *r;
  const struct region_layout *l;
  uint64_t k;               /* the slab */
  const struct band_map *m; /* band fills: the slab's map (pinned by the
                               reader whose fill runs) */
  uint64_t b;               /* band fills: which band */
};

/* Segments [s0, s1) of a slab grouped by unit, and what visiting a unit
 * does with its run of them (seg[x], whose unit row is row[x]). */
struct band_group {
  uint64_t *seg, *row;
  uint64_t *at; /* per_slab+2: unit i's run is seg[at[i]..at[i+1]) */
  int (*visit)(const struct band_job *j, void *ctx, const struct chunk_text *ct,
               struct bytesrc *data, const uint64_t *seg, const uint64_t *row,
               uint64_t cnt, struct zerr *err);
  void *ctx;
  size_t unit_cost; /* out: bytes of the costliest unit visited */
};

/* Release a map. */
static void band_map_destroy(struct zobj *o) {
  struct band_map *m = (struct band_map *)o;
  free(m->seg_off);
  free(m->seg_uoff);
  free(m->band_seg);
  free(m);
}

/* Release a band. */
static void band_text_destroy(struct zobj *o) {
  struct band_text *t = (struct band_text *)o;
  free(t->text);
  free(t);
}

/* Free what band_group_make made. */
static void band_group_free(struct band_group *g) {
  free(g->seg);
  free(g->row);
  free(g->at);
}

/* Group segments [s0, s1) of slab j->k by unit (a counting sort: each
 * unit's run ascending, so its rows come in increasing order). */
static int band_group_make(const struct band_job *j, uint64_t s0, uint64_t s1,
                           struct band_group *g, struct zerr *err) {
  uint64_t ns = s1 - s0, nu = j->r->per_slab, R;
  g->seg = malloc((size_t)(ns ? ns : 1) * sizeof *g->seg);
  g->row = malloc((size_t)(ns ? ns : 1) * sizeof *g->row);
  g->at = calloc((size_t)nu + 2, sizeof *g->at);
  if (!g->seg || !g->row || !g->at)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint64_t s = s0; s < s1; s++)
    g->at[segment_locate(j->n, j->r, j->k, s, &R) + 2]++;
  for (uint64_t u = 2; u < nu + 2; u++)
    g->at[u] += g->at[u - 1];
  for (uint64_t s = s0; s < s1; s++) {
    uint64_t i = segment_locate(j->n, j->r, j->k, s, &R), p = g->at[i + 1]++;
    g->seg[p] = s;
    g->row[p] = R;
  }
  return 0;
}

/* Is stored unit rl of the region in the memo (or being decoded)? */
static int band_unit_cached(const struct band_job *j, uint64_t rl) {
  uint64_t idx[ZMETA_MAX_DIMS];
  struct memo_key uk;
  region_unit(j->r, rl, idx);
  node_key(&uk, ELEVEL_UNIT, j->n, idx, NULL, 0);
  return memo_present(j->e->memo, &uk);
}

/* Have the workers decode the units of g after slab unit i (not cached,
 * not visited) while this fill visits i: as many as the ahead budget holds
 * at the cost of the units visited so far, at most ROW_BAND_AHEAD. */
static void band_ahead(const struct band_job *j, const struct band_group *g,
                       const unsigned char *seen, uint64_t i,
                       struct cursor_fan **fan) {
  const struct region *r = j->r;
  size_t cost = g->unit_cost;
  if (!j->e->ahead || !cost || cost > j->e->ahead_budget)
    return;
  uint64_t depth = j->e->ahead_budget / cost;
  if (depth > ROW_BAND_AHEAD)
    depth = ROW_BAND_AHEAD;
  if (!*fan && !(*fan = cursor_fan_new()))
    return;
  cursor_fan_at(*fan, i);
  for (uint64_t u = i + 1, got = 0; u < r->per_slab && got < depth; u++) {
    uint64_t rl = j->k * r->per_slab + u;
    if (seen[u] == 1 || g->at[u] == g->at[u + 1] || !region_stored(j->l, rl))
      continue;
    got++;
    if (seen[u] == 2 || band_unit_cached(j, rl))
      continue; /* queued already, or there */
    if (cursor_ahead_unit(j->e, j->n, r, rl, *fan, u) < 0)
      return;
    ((unsigned char *)seen)[u] = 2;
  }
}

/* Visit the units of slab j->k that hold segments of g, one at a time,
 * each pinned only while visited: those in the memo first (a pass takes
 * what the pass before it left there), then the others in slab order,
 * the workers decoding the next ones meanwhile. */
static int band_visit(const struct band_job *j, struct band_group *g,
                      struct zerr *err) {
  uint64_t nu = j->r->per_slab;
  unsigned char *seen = calloc((size_t)nu, 1); /* 1 visited, 2 queued */
  if (!seen)
    return zerr_set(err, ENOMEM, "out of memory");
  struct cursor_fan *fan = NULL;
  int rc = 0;
  for (int pass = 0; rc == 0 && pass < 2; pass++) {
    for (uint64_t i = 0; rc == 0 && i < nu; i++) {
      uint64_t rl = j->k * nu + i;
      if (seen[i] == 1 || g->at[i] == g->at[i + 1])
        continue;
      if (pass == 0 && region_stored(j->l, rl) && !band_unit_cached(j, rl))
        continue;
      if (pass == 1)
        band_ahead(j, g, seen, i, &fan);
      if ((rc = engine_check_stop(j->e, err)) < 0)
        break;
      struct chunk_text *ct;
      struct bytesrc *data;
      struct memo_ref *ref, *dref;
      rc = slab_unit_pin(j->e, j->n, j->r, j->l, j->k, i, &ct, &data, &ref,
                         &dref, err);
      if (rc < 0)
        break;
      size_t cost =
          ct->cost +
          (ref && unit_of_ref(ref) != ct ? unit_of_ref(ref)->cost : 0) +
          (data && data->mem ? (size_t)data->size : 0);
      if (cost > g->unit_cost)
        g->unit_cost = cost;
      rc = g->visit(j, g->ctx, ct, data, g->seg + g->at[i], g->row + g->at[i],
                    g->at[i + 1] - g->at[i], err);
      slab_unit_unpin(j->e, ct, data, ref, dref);
      seen[i] = 1;
    }
  }
  cursor_fan_done(fan);
  free(seen);
  return rc;
}

/* Measure a unit's segments: their lengths (into seg_off, summed later)
 * and starts in its text. */
static int band_measure(const struct band_job *j, void *ctx,
                        const struct chunk_text *ct, struct bytesrc *data,
                        const uint64_t *seg, const uint64_t *row, uint64_t cnt,
                        struct zerr *err) {
  struct band_map *m = ctx;
  uint64_t wd = ct->ext[j->r->ndim - 1], k0 = 0, off0 = 0;
  (void)data;
  for (uint64_t x = 0; x < cnt; x++) {
    uint64_t a = text_line_off_from(ct, k0, off0, row[x] * wd);
    uint64_t b = text_line_off_from(ct, row[x] * wd, a, (row[x] + 1) * wd);
    m->seg_off[seg[x]] = b - a;
    m->seg_uoff[seg[x]] = a;
    k0 = (row[x] + 1) * wd;
    off0 = b;
    if (x % 65536 == 65535)
      ZTRY(engine_check_stop(j->e, err));
  }
  return 0;
}

/* Fill: a banded slab's map, its units visited one at a time. */
static int band_map_fill(void *ctx, struct zobj **obj, size_t *cost,
                         struct zerr *err) {
  struct band_job *j = ctx;
  uint64_t nseg;
  if (slab_nseg(j->n, j->r, j->k, &nseg) < 0 || nseg > ROW_MAX_SEGMENTS)
    return zerr_set(err, EFBIG, "array view: too many row segments");
  struct band_map *m = calloc(1, sizeof *m);
  if (!m)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&m->obj, band_map_destroy);
  m->nseg = nseg;
  m->seg_off = malloc(((size_t)nseg + 1) * sizeof *m->seg_off);
  m->seg_uoff = malloc(((size_t)nseg + 1) * sizeof *m->seg_uoff);
  struct band_group g = {NULL, NULL, NULL, band_measure, m, 0};
  int rc = m->seg_off && m->seg_uoff ? band_group_make(j, 0, nseg, &g, err)
                                     : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0)
    rc = band_visit(j, &g, err);
  band_group_free(&g);
  m->unit_cost = g.unit_cost;
  /* lengths to offsets; bands cut greedily at `cut` */
  uint64_t pos = 0, inband = 0, nband = 0, maxseg = 0;
  for (uint64_t s = 0; rc == 0 && s < nseg; s++)
    maxseg = m->seg_off[s] > maxseg ? m->seg_off[s] : maxseg;
  uint64_t cut =
      ROW_BAND_MAX - (maxseg < ROW_BAND_MAX ? maxseg : 0) > j->e->cache_size
          ? ROW_BAND_MAX
          : ROW_BAND_MAX / 4;
  for (uint64_t s = 0; rc == 0 && s < nseg; s++) {
    uint64_t len = m->seg_off[s];
    if (s == 0 || (inband && inband + len > cut)) {
      nband++;
      inband = 0;
    }
    inband += len;
    m->seg_off[s] = pos;
    pos += len;
  }
  uint64_t text = region_slab_off(j->n, j->r, j->l, j->k + 1) -
                  region_slab_off(j->n, j->r, j->l, j->k);
  if (rc == 0 && pos != text)
    rc = zerr_set(err, EIO,
                  "array view: a row of chunks holds %" PRIu64
                  " bytes of text, its chunks' sizes said %" PRIu64,
                  pos, text);
  if (rc == 0) {
    m->seg_off[nseg] = pos;
    m->nband = nband;
    m->band_seg = malloc(((size_t)nband + 1) * sizeof *m->band_seg);
    if (!m->band_seg)
      rc = zerr_set(err, ENOMEM, "out of memory");
  }
  for (uint64_t s = 0, b = 0; rc == 0 && s < nseg; s++) {
    uint64_t len = m->seg_off[s + 1] - m->seg_off[s];
    if (s == 0 || (inband && inband + len > cut)) {
      m->band_seg[b++] = s;
      inband = 0;
    }
    inband += len;
  }
  if (rc < 0) {
    zobj_put(&m->obj);
    return rc;
  }
  m->band_seg[nband] = nseg;
  *obj = &m->obj;
  *cost = sizeof *m + ((size_t)nseg * 2 + (size_t)nband + 3) * sizeof(uint64_t);
  return 0;
}

/* Render a unit's segments of the band into its text. */
static int band_render(const struct band_job *j, void *ctx,
                       const struct chunk_text *ct, struct bytesrc *data,
                       const uint64_t *seg, const uint64_t *row, uint64_t cnt,
                       struct zerr *err) {
  struct band_text *t = ctx;
  const struct band_map *m = j->m;
  uint64_t wd = ct->ext[j->r->ndim - 1];
  uint64_t base = m->seg_off[m->band_seg[j->b]];
  for (uint64_t x = 0; x < cnt; x++) {
    uint64_t s = seg[x], a = m->seg_uoff[s];
    size_t want = (size_t)(m->seg_off[s + 1] - m->seg_off[s]);
    if (!want)
      continue;
    long got = text_read_at(ct, data, row[x] * wd, a, a, want,
                            t->text + (m->seg_off[s] - base), err);
    if (got < 0)
      return (int)got;
    if ((size_t)got != want)
      return zerr_set(err, EIO, "view: chunk shorter than its size");
  }
  return 0;
}

/* Fill: band j->b of a banded slab, its units visited one at a time. */
static int band_text_fill(void *ctx, struct zobj **obj, size_t *cost,
                          struct zerr *err) {
  struct band_job *j = ctx;
  const struct band_map *m = j->m;
  uint64_t s0 = m->band_seg[j->b], s1 = m->band_seg[j->b + 1];
  uint64_t size = m->seg_off[s1] - m->seg_off[s0];
  if (size > j->e->window_cap)
    return zerr_set(err, EFBIG,
                    "array view: a band of a row of chunks holds more "
                    "than the decode limit of %zu bytes (-o max_decode)",
                    j->e->window_cap);
  struct band_text *t = calloc(1, sizeof *t);
  if (!t)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&t->obj, band_text_destroy);
  t->size = size;
  t->text = malloc(size ? (size_t)size : 1);
  struct band_group g = {NULL, NULL, NULL, band_render, t, 0};
  int rc = t->text ? band_group_make(j, s0, s1, &g, err)
                   : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0)
    rc = band_visit(j, &g, err);
  band_group_free(&g);
  if (rc < 0) {
    zobj_put(&t->obj);
    return rc;
  }
  *obj = &t->obj;
  *cost = sizeof *t + (size_t)size;
  return 0;
}

/* The band of map m whose text holds slab offset pos (< the slab's end). */
static uint64_t band_find(const struct band_map *m, uint64_t pos) {
  uint64_t lo = 0, hi = m->nband; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (m->seg_off[m->band_seg[mid]] <= pos)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Would slab k's row hold more than a row may: its units decoded
 * (guessed: the text when units keep their text whole or hold strings,
 * else their elements, edge units at their whole shape, and layouts)
 * beyond both the cache (a row the cache holds costs what the cache
 * would) and ROW_COLD_MIN (within the slack of the bound)? Then the slab
 * is read in bands. */
static int row_banded(const struct engine *e, const struct znode *n,
                      const struct region *r, const struct region_layout *l,
                      uint64_t k) {
  uint64_t text = region_slab_off(n, r, l, k + 1) - region_slab_off(n, r, l, k);
  uint64_t guess = text, elems = r->per_slab;
  int fits = 1;
  for (int d = 0; d < r->ndim; d++)
    fits &= zmul_u64(elems, node_unit_len(n, d, r->lo[d] + (d ? 0 : k)),
                     &elems) == 0;
  if (n->form.dt.size && text / r->per_slab > e->render_max)
    guess = !fits || zmul_u64(elems, n->form.dt.size, &guess) < 0
                ? UINT64_MAX
                : guess + elems / 8;
  uint64_t hold = e->cache_size > ROW_COLD_MIN ? e->cache_size : ROW_COLD_MIN;
  return guess > hold;
}

/* Read slab k in bands: its map (where each segment's text comes from,
 * made by visiting its units one at a time), then each band the read
 * crosses, rendered by visiting its units one at a time again. The
 * reader's cursor keeps the map and the last band pinned. */
static long row_read_bands(const struct read_req *q, const struct region *r,
                           const struct region_layout *l, uint64_t k) {
  struct memo_key mk;
  region_key(&mk, ELEVEL_ROW, q->n, r, &k);
  mk.v[mk.n++] = ROW_MAP_TAG;
  struct band_job j = {q->e, q->n, r, l, k, NULL, 0};
  struct memo_ref *mref, *bref = NULL;
  ZTRY(memo_get(q->e->memo, &mk, band_map_fill, &j, &mref, q->err));
  j.m = (const struct band_map *)memo_obj(mref);
  cursor_note_cost(q->c, j.m->unit_cost);
  size_t done = 0;
  long rc = 0;
  while (done < q->len) {
    uint64_t pos = q->off + done;
    if (pos >= j.m->seg_off[j.m->nseg])
      break; /* the end of the slab */
    struct memo_key bk = mk;
    bk.v[bk.n - 1] = ROW_BAND_TAG;
    bk.v[bk.n++] = j.b = band_find(j.m, pos);
    memo_release(q->e->memo, bref); /* a band the read has passed */
    cursor_room(q->e, q->c, &bk);
    if ((rc = memo_get(q->e->memo, &bk, band_text_fill, &j, &bref, q->err)) <
        0) {
      bref = NULL;
      break;
    }
    const struct band_text *t = (const struct band_text *)memo_obj(bref);
    uint64_t start = j.m->seg_off[j.m->band_seg[j.b]];
    uint64_t avail = start + t->size - pos;
    size_t want = q->len - done < avail ? q->len - done : (size_t)avail;
    memcpy(q->dst + done, t->text + (pos - start), want);
    done += want;
  }
  cursor_keep(q->e, q->c, mref, 0);
  cursor_keep(q->e, q->c, bref, 0);
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
  return text >= ROW_COLD_MIN && 2 * unit <= e->cache_size;
}

/* Read through slab k's row: the segments of its units in turn. */
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
  if (key.n + 2 <= MEMO_KEY_WORDS && row_banded(q->e, q->n, r, l, k))
    return row_read_bands(q, r, l, k);
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
