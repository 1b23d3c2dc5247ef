/* region.c - the boxes of units views read (see region.h). */
#include "region.h"

#include <string.h>

/* Derived counts of a region whose unit range is set; -EFBIG when they do
 * not fit in 64 bits. */
static int region_finish(const struct znode *n, struct region *r,
                         struct zerr *err) {
  int nd = r->ndim;
  r->per_slab = 1;
  r->total_elems = 1;
  uint64_t rest = 1; /* elements across dimensions 1.. */
  for (int d = 0; d < nd; d++) {
    r->elo[d] = node_unit_start(n, d, r->lo[d]);
    /* a unit inside the grid starts inside the array */
    r->ehi[d] = r->hi[d] < n->ugrid[d] ? node_unit_start(n, d, r->hi[d])
                                       : n->meta->shape[d];
    if (d && zmul_u64(r->per_slab, r->hi[d] - r->lo[d], &r->per_slab) < 0)
      return zerr_set(err, EFBIG, "view: too many chunks");
    if (d)
      rest *= r->ehi[d] - r->elo[d]; /* <= the array's element count */
    r->total_elems *= r->ehi[d] - r->elo[d];
  }
  r->nslabs = nd ? r->hi[0] - r->lo[0] : 1;
  if (zmul_u64(r->nslabs, r->per_slab, &r->nunits) < 0)
    return zerr_set(err, EFBIG, "view: too many chunks");
  r->row_elems = rest;
  return 0;
}

/* The region of every unit. */
int region_of_array(const struct znode *n, struct region *r, struct zerr *err) {
  memset(r, 0, sizeof *r);
  r->ndim = n->meta->ndim;
  for (int d = 0; d < r->ndim; d++)
    r->hi[d] = n->ugrid[d];
  return region_finish(n, r, err);
}

/* The region of one chunk's units. */
int region_of_chunk(const struct znode *n, const uint64_t *idx,
                    struct region *r, struct zerr *err) {
  memset(r, 0, sizeof *r);
  r->ndim = n->meta->ndim;
  r->is_chunk = 1;
  for (int d = 0; d < r->ndim; d++) {
    if (idx[d] >= n->meta->grid[d])
      return zerr_set(err, ENOENT, "chunk outside the grid");
    r->cidx[d] = idx[d];
    node_chunk_units(n, d, idx[d], &r->lo[d], &r->hi[d]);
  }
  return region_finish(n, r, err);
}

/* See region.h: the node's sizes generation now. */
void region_key(struct memo_key *k, enum engine_level level,
                const struct znode *n, const struct region *r,
                const uint64_t *slab) {
  region_key_gen(k, level, n, r, slab, node_sizes_gen(n));
}

/* Keyed by the node, the kind of view (and its chunk), the slab and the
 * generation of the node's sizes. */
void region_key_gen(struct memo_key *k, enum engine_level level,
                    const struct znode *n, const struct region *r,
                    const uint64_t *slab, uint64_t gen) {
  int w = 0;
  k->level = (uint8_t)level;
  k->owner = n;
  k->v[w++] = (uint64_t)r->is_chunk;
  if (r->is_chunk)
    for (int d = 0; d < r->ndim; d++)
      k->v[w++] = r->cidx[d];
  if (slab)
    k->v[w++] = *slab;
  k->v[w++] = gen;
  k->n = (uint8_t)w;
}
