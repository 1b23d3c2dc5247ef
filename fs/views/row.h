/* row.h - reading a slab of several units through its *row*.
 *
 * When a slab of a region holds several units, every row of elements
 * crosses every unit of the slab: reading unit by unit per row would
 * decode rows x units times when the units do not all fit the cache. A
 * row is every unit of the slab decoded once (the workers decode the
 * others while the fill goes through them, cursor_ahead_unit), held
 * together with the table of row segments (which unit, which of its text
 * each stretch of the slab's text comes from). A row is a memo object
 * (ELEVEL_ROW), pinned by the cursor of each reader of that slab, so its
 * units are decoded once per pass over the slab whatever the budget; a
 * row larger than the decode limit (engine.window_cap) fails with EFBIG.
 * The first read of a large slab out of sequence holds only the units it
 * shows (the rows before it measured one unit at a time), so a cold read
 * of a wide slab does not hold the whole row. A slab whose row would hold
 * more than a row may is read in bands (fs/views/rowband.h) instead.
 * No lock of its own: the memo's and the pool's, never held across a
 * call out. */
#ifndef ZARRFS_ROW_H
#define ZARRFS_ROW_H

#include <stdint.h>

#include "../engine/region.h"

/* Read q->len bytes at q->off of slab k's text (region r, layout l) into
 * q->dst; q->c (may be NULL) keeps the row pinned. Returns the bytes read
 * (short only at the end of the slab) or a negative errno. */
long row_read(const struct read_req *q, const struct region *r,
              const struct region_layout *l, uint64_t k);

#endif
