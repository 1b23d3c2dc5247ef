/* layout.h - the layout of a region (struct region_layout, fs/region.h):
 * where each slab's text starts, from the sizes of the units the store
 * holds, and so the region's text size.
 *
 * Building a layout takes every unit as the fill value first (text size
 * (fill text + 1) x elements: arithmetic), then learns each stored unit's
 * size once (for units whose chain reads its index partially, only that index), with the
 * workers learning the sizes of the units after the one it waits for
 * (cursor_ahead_sizes). It costs 16 bytes per stored unit and nothing per
 * missing one. Layouts and sizes are memo objects and values (levels
 * ELEVEL_LAYOUT and ELEVEL_REGION_SIZE), so concurrent readers build one
 * once. No lock of its own: the memo's and the pool's, never held across
 * a call out. */
#ifndef ZARRFS_LAYOUT_H
#define ZARRFS_LAYOUT_H

#include <stdint.h>

#include "region.h"

/* The layout of region r: a pin in *out (memo_release it; the layout is
 * memo_obj(*out), immutable). */
int layout_get(struct engine *e, const struct znode *n, const struct region *r,
               struct memo_ref **out, struct zerr *err);
/* Text size of region r, remembered among the learned sizes (it outlives
 * the layout). */
int layout_size(struct engine *e, const struct znode *n, const struct region *r,
                uint64_t *size, struct zerr *err);

#endif
