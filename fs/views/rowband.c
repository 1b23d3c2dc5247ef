/* rowband.c - slabs read in bands, and what rows and bands share: the
 * segments of a slab and its units pinned one at a time (see rowband.h). */
#include "rowband.h"

#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#include "../../src/util/zmath.h"
#include "../engine/cursor.h"

/* Rows of elements of the region inside slab k along dimension 0. */
static uint64_t slab_rows0(const struct znode *n, const struct region *r,
                           uint64_t k) {
  uint64_t u = r->lo[0] + k, start = node_unit_start(n, 0, u);
  uint64_t ext = node_unit_ext(n, 0, u);
  return r->ehi[0] - start < ext ? r->ehi[0] - start : ext;
}

/* See rowband.h. */
int rowband_nseg(const struct znode *n, const struct region *r, uint64_t k,
                 uint64_t *nseg) {
  uint64_t rows = slab_rows0(n, r, k);
  for (int d = 1; d < r->ndim - 1; d++)
    if (zmul_u64(rows, r->ehi[d] - r->elo[d], &rows) < 0)
      return -EOVERFLOW;
  return zmul_u64(rows, r->hi[r->ndim - 1] - r->lo[r->ndim - 1], nseg);
}

/* See rowband.h. */
uint64_t rowband_locate(const struct znode *n, const struct region *r,
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

/* See rowband.h. */
int rowband_unit_pin(struct engine *e, const struct znode *n,
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

/* See rowband.h. */
void rowband_unit_unpin(struct engine *e, struct chunk_text *ct,
                        struct bytesrc *data, struct memo_ref *ref,
                        struct memo_ref *dref) {
  if (ct)
    zobj_put(&ct->obj);
  bytesrc_unref(data);
  memo_release(e->memo, dref);
  memo_release(e->memo, ref);
}

/* ---- bands ---- */

/* Tags of the memo keys of a banded slab's map and of its bands. */
#define ROWBAND_MAP_TAG 0x6d6170u
#define ROWBAND_TAG 0x62616e64u
/* Units a band fill has the workers decode ahead of it, at most. */
#define ROWBAND_AHEAD 2

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
  size_t hold;      /* bytes the visit builds outside the memo (a band's
                       text): counted against the cache after the cached
                       units are visited (band_hold) */
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

/* After a pass over a slab's units: what their decodes freed sits in the
 * malloc arenas of whichever threads decoded them (the readers' and the
 * workers'), and would stay in the resident set beside the band being
 * read (up to 36 MB more on the 20-chunk row of bench/memory.sh): hand it
 * back, once per pass, a few milliseconds beside a pass's decodes. */
static void rowband_trim(void) {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
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
    g->at[rowband_locate(j->n, j->r, j->k, s, &R) + 2]++;
  for (uint64_t u = 2; u < nu + 2; u++)
    g->at[u] += g->at[u - 1];
  for (uint64_t s = s0; s < s1; s++) {
    uint64_t i = rowband_locate(j->n, j->r, j->k, s, &R), p = g->at[i + 1]++;
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
 * at the cost of the units visited so far, at most ROWBAND_AHEAD. */
static void band_ahead(const struct band_job *j, const struct band_group *g,
                       unsigned char *seen, uint64_t i,
                       struct cursor_fan **fan) {
  const struct region *r = j->r;
  size_t cost = g->unit_cost;
  if (!j->e->ahead || !cost || cost > j->e->ahead_budget)
    return;
  uint64_t depth = j->e->ahead_budget / cost;
  if (depth > ROWBAND_AHEAD)
    depth = ROWBAND_AHEAD;
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
    seen[u] = 2;
  }
}

/* Bytes of g->hold to count against the cache (memo_hold) once the units
 * it holds have been visited: all of it, less room for the unit being
 * visited and those the workers decode ahead (which the memo must keep
 * until they are visited). A band being made is then paid from the cache,
 * not beside a cache full of units the band does not need any more: a
 * band of 18 MiB with a 16 MiB cache held both at once. */
static size_t band_hold(const struct band_job *j, const struct band_group *g) {
  size_t cost = g->unit_cost;
  if (j->m && j->m->unit_cost > cost)
    cost = j->m->unit_cost;
  size_t room = (ROWBAND_AHEAD + 1) * cost, budget = j->e->cache_size;
  if (!g->hold || room >= budget)
    return 0;
  return g->hold < budget - room ? g->hold : budget - room;
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
  size_t held = 0;
  for (int pass = 0; rc == 0 && pass < 2; pass++) {
    if (pass == 1 && (held = band_hold(j, g)) > 0)
      memo_hold(j->e->memo, (long)held);
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
      rc = rowband_unit_pin(j->e, j->n, j->r, j->l, j->k, i, &ct, &data, &ref,
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
      rowband_unit_unpin(j->e, ct, data, ref, dref);
      seen[i] = 1;
    }
  }
  if (held)
    memo_hold(j->e->memo, -(long)held);
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
  if (rowband_nseg(j->n, j->r, j->k, &nseg) < 0 || nseg > ROWBAND_MAX_SEGMENTS)
    return zerr_set(err, EFBIG, "array view: too many row segments");
  struct band_map *m = calloc(1, sizeof *m);
  if (!m)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&m->obj, band_map_destroy);
  m->nseg = nseg;
  m->seg_off = malloc(((size_t)nseg + 1) * sizeof *m->seg_off);
  m->seg_uoff = malloc(((size_t)nseg + 1) * sizeof *m->seg_uoff);
  struct band_group g = {.visit = band_measure, .ctx = m};
  int rc = m->seg_off && m->seg_uoff ? band_group_make(j, 0, nseg, &g, err)
                                     : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0)
    rc = band_visit(j, &g, err);
  band_group_free(&g);
  rowband_trim();
  m->unit_cost = g.unit_cost;
  /* lengths to offsets; bands cut greedily at `cut` */
  uint64_t pos = 0, inband = 0, nband = 0, maxseg = 0;
  for (uint64_t s = 0; rc == 0 && s < nseg; s++)
    maxseg = m->seg_off[s] > maxseg ? m->seg_off[s] : maxseg;
  uint64_t cut = ROWBAND_TEXT_MAX - (maxseg < ROWBAND_TEXT_MAX ? maxseg : 0) >
                         j->e->cache_size
                     ? ROWBAND_TEXT_MAX
                     : ROWBAND_TEXT_MAX / 4;
  /* open files keep what they read only within the decode limit */
  if (cut > j->e->window_cap / 4)
    cut = j->e->window_cap / 4 ? j->e->window_cap / 4 : 1;
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
  struct band_group g = {.visit = band_render, .ctx = t, .hold = (size_t)size};
  int rc = t->text ? band_group_make(j, s0, s1, &g, err)
                   : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0)
    rc = band_visit(j, &g, err);
  band_group_free(&g);
  rowband_trim();
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

/* See rowband.h. Would slab k's row hold more than a row may: its units
 * decoded (guessed: the text when units keep their text whole or hold
 * strings, else their elements, edge units at their whole shape, and
 * layouts) beyond both the cache (a row the cache holds costs what the
 * cache would) and ROWBAND_ROW_MAX? Then the slab is read in bands. */
int rowband_wanted(const struct engine *e, const struct znode *n,
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
  uint64_t hold =
      e->cache_size > ROWBAND_ROW_MAX ? e->cache_size : ROWBAND_ROW_MAX;
  return guess > hold;
}

/* Read [pos, pos+len) of band j->b straight from its units, one segment
 * at a time (each unit pinned only while its segment is read): for a
 * read in sequence of a band its reader has left (the kernel's read-ahead
 * delivers reads slightly out of order), so the band is not made again
 * beside the next one. Returns the bytes read or a negative errno. */
static long band_read_direct(const struct band_job *j, uint64_t pos, size_t len,
                             char *dst, struct zerr *err) {
  const struct band_map *m = j->m;
  uint64_t s = zfloor_u64(m->seg_off, m->nseg, pos), R;
  size_t done = 0;
  while (done < len && s < m->nseg) {
    uint64_t at = pos + done - m->seg_off[s];
    uint64_t seglen = m->seg_off[s + 1] - m->seg_off[s];
    size_t want = len - done < seglen - at ? len - done : (size_t)(seglen - at);
    uint64_t i = rowband_locate(j->n, j->r, j->k, s, &R);
    struct chunk_text *ct;
    struct bytesrc *data;
    struct memo_ref *ref, *dref;
    ZTRY(rowband_unit_pin(j->e, j->n, j->r, j->l, j->k, i, &ct, &data, &ref,
                          &dref, err));
    uint64_t wd = ct->ext[j->r->ndim - 1], a = m->seg_uoff[s];
    long got =
        want ? text_read_at(ct, data, R * wd, a, a + at, want, dst + done, err)
             : 0;
    rowband_unit_unpin(j->e, ct, data, ref, dref);
    if (got < 0)
      return got;
    if ((size_t)got != want)
      return zerr_set(err, EIO, "view: chunk shorter than its size");
    done += want;
    s++;
  }
  return (long)done;
}

/* See rowband.h. Slab k in bands: its map (where each segment's text comes
 * from, made by visiting its units one at a time), then each band the read
 * crosses, rendered by visiting its units one at a time again. The
 * reader's cursor keeps the map and the last band pinned. */
long rowband_read(const struct read_req *q, const struct region *r,
                  const struct region_layout *l, uint64_t k) {
  struct memo_key mk;
  region_key(&mk, ELEVEL_ROW, q->n, r, &k);
  mk.v[mk.n++] = ROWBAND_MAP_TAG;
  struct band_job j = {q->e, q->n, r, l, k, NULL, 0};
  struct memo_ref *mref, *bref = NULL;
  cursor_room(q->e, q->c, &mk); /* the rows and bands it passed go */
  ZTRY(memo_get(q->e->memo, &mk, band_map_fill, &j, &mref, q->err));
  j.m = (const struct band_map *)memo_obj(mref);
  cursor_note_cost(q->c, j.m->unit_cost, 0);
  size_t done = 0;
  long rc = 0;
  while (done < q->len) {
    uint64_t pos = q->off + done;
    if (pos >= j.m->seg_off[j.m->nseg])
      break; /* the end of the slab */
    struct memo_key bk = mk;
    bk.v[bk.n - 1] = ROWBAND_TAG;
    bk.v[bk.n++] = j.b = band_find(j.m, pos);
    memo_release(q->e->memo, bref); /* a band the read has passed */
    bref = NULL;
    uint64_t start = j.m->seg_off[j.m->band_seg[j.b]];
    uint64_t end = j.m->seg_off[j.m->band_seg[j.b + 1]];
    size_t want =
        q->len - done < end - pos ? q->len - done : (size_t)(end - pos);
    struct memo_key nk = bk; /* the next band */
    nk.v[nk.n - 1] = j.b + 1;
    if (q->seq && j.b + 1 < j.m->nband && !memo_present(q->e->memo, &bk) &&
        memo_present(q->e->memo, &nk)) {
      long got = band_read_direct(&j, pos, want, q->dst + done, q->err);
      if (got < 0) {
        rc = got;
        break;
      }
      done += (size_t)got;
      continue;
    }
    cursor_room(q->e, q->c, &bk);
    if ((rc = memo_get(q->e->memo, &bk, band_text_fill, &j, &bref, q->err)) <
        0) {
      bref = NULL;
      break;
    }
    const struct band_text *t = (const struct band_text *)memo_obj(bref);
    memcpy(q->dst + done, t->text + (pos - start), want);
    done += want;
  }
  cursor_keep(q->e, q->c, mref, 0);
  cursor_keep(q->e, q->c, bref, 0);
  return rc < 0 ? rc : (long)done;
}
