/* rowband.h - reading a slab of several units in *bands*, and what rows
 * (fs/views/row.h) and bands share: the segments of a slab (one row of elements
 * of one unit each) and its units pinned one at a time.
 *
 * A row holds every unit of its slab decoded at once. When that would
 * hold more than the cache (a row the cache holds costs what the cache
 * would) and more than ROWBAND_ROW_MAX (within the slack of the memory
 * bound, cache_size + 64 MiB), the slab is read in bands instead: runs of
 * consecutive segments of at most ROWBAND_TEXT_MAX bytes of text. A
 * band's text is made by visiting the slab's units one at a time (those
 * in the cache first, the workers decoding the next ones meanwhile),
 * each decoded, its stretch of the band rendered, and let go; so memory
 * is about one band and one unit, and the price is each unit decoded
 * once per band (and once for the slab's map: where each segment's text
 * starts, made the same way before the first band). Maps and bands are
 * memo objects (ELEVEL_ROW, under tags of their own), pinned by the
 * cursor of each reader of the slab as rows are, so readers of one band
 * share it; a failed unit fails the map or the band (EIO, remembered),
 * never a short or wrong text.
 *
 * No lock of its own: the memo's and the pool's, never held across a
 * call out. */
#ifndef ZARRFS_ROWBAND_H
#define ZARRFS_ROWBAND_H

#include <stdint.h>

#include "../engine/region.h"

/* Largest segment table of one slab (entries). */
#define ROWBAND_MAX_SEGMENTS (64u << 20)
/* Half of the slack of the memory bound (cache_size + 64 MiB): slabs of
 * less text than this are read through their row at once, even cold. */
#define ROWBAND_SLACK (32u << 20)
/* The largest row held whole beyond the cache: below it bands spare
 * little, since a reader may hold two at a band change (the one it reads
 * and the next its kernel read-ahead already asks for), 36 MiB. */
#define ROWBAND_ROW_MAX (48u << 20)

/* Text the bands a reader holds take at once, at most (more only when
 * one segment is longer): under a third of the slack of the memory bound
 * (cache_size + 64 MiB), leaving the rest to the unit being visited, the
 * decoding around it and reads the kernel delivers late. A band larger than the cache is let go by its
 * reader's cursor before the next one is made (cursor_room), so a reader
 * holds one band and bands may be that large; else its cursor may hold
 * its last three and the one being made, so bands take a quarter. */
#define ROWBAND_TEXT_MAX (18u << 20)

/* Segments of slab k of region r (rows of elements of the slab times its
 * units along the last dimension) into *nseg; -EOVERFLOW. */
int rowband_nseg(const struct znode *n, const struct region *r, uint64_t k,
                 uint64_t *nseg);
/* Segment s of slab k: returns the unit (its index in the slab) and sets
 * *row to the in-bounds row of that unit the segment is. */
uint64_t rowband_locate(const struct znode *n, const struct region *r,
                        uint64_t k, uint64_t s, uint64_t *row);

/* Unit i of slab k (layout l) with what its text is read from: *ct a new
 * reference, *data a new reference or NULL, *ref and *dref pins or NULL
 * (a missing unit is a fill unit, nothing pinned). Release all with
 * rowband_unit_unpin. */
int rowband_unit_pin(struct engine *e, const struct znode *n,
                     const struct region *r, const struct region_layout *l,
                     uint64_t k, uint64_t i, struct chunk_text **ct,
                     struct bytesrc **data, struct memo_ref **ref,
                     struct memo_ref **dref, struct zerr *err);
/* Let go of what rowband_unit_pin gave (each may be NULL). */
void rowband_unit_unpin(struct engine *e, struct chunk_text *ct,
                        struct bytesrc *data, struct memo_ref *ref,
                        struct memo_ref *dref);

/* Is slab k read in bands: would its row hold more than a row may? Its
 * start and end must be known in l. */
int rowband_wanted(const struct engine *e, const struct znode *n,
                   const struct region *r, const struct region_layout *l,
                   uint64_t k);

/* Read q->len bytes at q->off of slab k's text in bands into q->dst;
 * q->c (may be NULL) keeps the slab's map and the last band pinned.
 * Returns the bytes read (short only at the end of the slab) or a
 * negative errno. */
long rowband_read(const struct read_req *q, const struct region *r,
                  const struct region_layout *l, uint64_t k);

#endif
