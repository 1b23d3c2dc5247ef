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
 * and waiters give up with -EINTR when the engine stops).
 *
 * Sizes the persistent index claimed are used as learned (a `stat` of a
 * second mount decodes nothing), and checked before any text placed by
 * them is read (layout_check): a claim that is wrong is replaced by the
 * truth, and every layout of the node made before is dropped (it is
 * keyed by the node's sizes generation, fs/node.h), so a reader goes on
 * from the same offset on a new layout, whose text up to there is the
 * same. */
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
/* A reader in sequence is at stored unit `at` of layout l (of region
 * r): have the workers learn the sizes of the stored units after the
 * known ones, up to half the engine's ahead budget of text past `at`, in
 * runs (one job each, queued once: the layout remembers how far it has
 * queued). The units they decode stay in the cache for the reader, and
 * the reader's own learning (layout_reach) finds their sizes: the
 * decoding goes on while the reader copies text, each unit decoded once.
 * Nothing for a layout without an ahead fan (few units, a store with
 * latency, no workers), units too small to be worth a job, or a full
 * queue (asked again after the next read). */
void layout_ahead(struct engine *e, const struct znode *n,
                  const struct region *r, struct region_layout *l,
                  uint64_t at);
/* Check the sizes layout l took from the persistent index (claims, see
 * fs/unit.h) for the stored units before `upto` (those are known): each
 * is decoded, or passed over as a stream, unless this mount knows its
 * size already (a read in sequence decodes them anyway). 0 when every
 * size before upto is the truth; 1 when l is out of date (a size it
 * holds was wrong: said and corrected; or the node's sizes changed
 * meanwhile): take a new layout (layout_get) and look again; or a
 * negative errno. No byte placed by a size not checked goes out: whoever
 * reads text at an offset calls this for the units that placed it before
 * it hands it on, as mode says. The one exception is a layout made whole
 * from a region record (fs/views/lsize.h: keyed by every unit's version
 * at once): a reader that jumped (LAYOUT_CHECK_JUMP: tail, a random read)
 * checks the claims from stored unit `from` on, the ones it reads, and
 * takes those it jumped over as stat does (each is checked when its unit
 * is read), so that a tail of a second mount decodes what it shows, not
 * the whole view. */
enum layout_check_mode {
  LAYOUT_CHECK_ORDER, /* a reader in order: a claim or two at a time */
  LAYOUT_CHECK_JUMP,  /* a reader that jumped: the workers decode a run of
                         claims beside it */
};
int layout_check(struct engine *e, const struct znode *n,
                 const struct region *r, struct region_layout *l, uint64_t upto,
                 enum layout_check_mode mode, uint64_t from, struct zerr *err);
/* Learn every size of layout l: l->total is then set. Many units are
 * learned in bulk on every core (fs/views/lsize.h). */
int layout_complete(struct engine *e, const struct znode *n,
                    const struct region *r, struct region_layout *l,
                    struct zerr *err);
/* layout_complete by a deadline (CLOCK_MONOTONIC ns, 0: none): 0 when
 * every size is known, 1 when not in time (at the deadline, or at once
 * when the rest would take longer: the sizes learned so far are kept), or
 * a negative errno. */
int layout_complete_within(struct engine *e, const struct znode *n,
                           const struct region *r, struct region_layout *l,
                           uint64_t deadline, struct zerr *err);
/* Stored units of region r (what its size would need learned). */
int layout_stored_count(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t *np, struct zerr *err);
/* Text size of region r, remembered among the learned sizes (it outlives
 * the layout). */
int layout_size(struct engine *e, const struct znode *n, const struct region *r,
                uint64_t *size, struct zerr *err);

#endif
