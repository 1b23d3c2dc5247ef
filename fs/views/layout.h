/* layout.h - the layout of a region (struct region_layout, fs/engine/region.h):
 * where each slab's text starts, from the sizes of the units the store
 * holds, and so the region's text size.
 *
 * A layout takes every unit as the fill value first (text size (fill
 * text + 1) x elements: arithmetic), then learns stored units' sizes in
 * C order only as far as a reader needs them (for units whose chain reads
 * its index partially, only that index): a read at offset X waits for the
 * sizes of the slabs up to X, never for all of them, with the workers
 * learning the sizes of the units after the one it waits for
 * (cursor_ahead_sizes). The total is known once every size is. It costs
 * 16 bytes per stored unit and nothing per missing one. Layouts and sizes
 * are memo objects and values (levels ELEVEL_LAYOUT and
 * ELEVEL_REGION_SIZE), so concurrent readers share one; one of them
 * learns sizes while the others wait for it on the layout's condition
 * (region_layout.grow is a leaf lock, never held while sizes are learned,
 * and waiters give up with -EINTR when the engine stops). */
#ifndef ZARRFS_LAYOUT_H
#define ZARRFS_LAYOUT_H

#include <stdint.h>

#include "../engine/region.h"

/* The layout of region r: a pin in *out (memo_release it; the layout is
 * memo_obj(*out); its sizes are learned by layout_reach and
 * layout_complete). */
int layout_get(struct engine *e, const struct znode *n, const struct region *r,
               struct memo_ref **out, struct zerr *err);
/* Learn sizes of layout l (of region r) until the slab whose text holds
 * offset pos has a known start and end, or every size is known. *ended:
 * the slabs whose end is known (r->nslabs when all are: pos may then be
 * past l->total). */
int layout_reach(struct engine *e, const struct znode *n,
                 const struct region *r, struct region_layout *l, uint64_t pos,
                 uint64_t *ended, struct zerr *err);
/* Learn every size of layout l: l->total is then set. */
int layout_complete(struct engine *e, const struct znode *n,
                    const struct region *r, struct region_layout *l,
                    struct zerr *err);
/* Stored units of region r (what its size would need learned). */
int layout_stored_count(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t *np, struct zerr *err);
/* Text size of region r, remembered among the learned sizes (it outlives
 * the layout). */
int layout_size(struct engine *e, const struct znode *n, const struct region *r,
                uint64_t *size, struct zerr *err);

#endif
