/* lsize.h - a region's unit sizes learned in bulk, and kept whole.
 *
 * Learning (lsize_fill): every worker of the engine's decode-ahead pool
 * and the caller take runs of stored units, in C order, from one counter
 * and learn each unit's text size (the persistent index's claim, the
 * index ends, or a decode). When the region's text would not stay in the
 * cache, a decode keeps nothing (unit_size_measure): memory is a decoded
 * unit per thread, whatever the region's length; a learning with a
 * deadline (a `stat` within size_wait) keeps its first units besides (half
 * the engine's ahead budget; none of less than 256 bytes of text) for the
 * `cat` that usually follows, so that it decodes each unit once. It ends when every size
 * is known, at the caller's deadline, when the engine stops or the
 * caller's request is abandoned, or at once when the time the rest would
 * take (judged from the units learned so far) reaches past the deadline:
 * a caller that may not wait long (a lookup, bounded by -o size_wait)
 * does not wait for a size it cannot have in time.
 *
 * Records (lsize_load, lsize_keep): once a region's sizes are all known,
 * they are kept in the persistent index as one record (src/store/
 * sizeblob.h) keyed by the node's view, what makes its text, and a digest
 * of every stored unit's key and version (store_version): the next mount
 * lays the view out from that one record, a unit changed or added makes
 * it a miss. Loaded sizes are claims, as the index's are (fs/engine/unit.h):
 * each unit read is checked by its decode, and a node whose sizes were
 * contradicted takes no region record again in this mount.
 *
 * No lock of its own: the caller holds the layout's learning turn
 * (fs/views/layout.c); a run's shared state is a mutex and condition of its
 * own (a leaf). */
#ifndef ZARRFS_LSIZE_H
#define ZARRFS_LSIZE_H

#include <stdint.h>

#include "../../src/store/sizeindex.h"
#include "../engine/region.h"

/* Regions with fewer stored units left to learn are learned one by one
 * (fs/views/layout.c), and have no region record. */
#define LSIZE_MIN 64

/* p_cum entries lsize_fill and lsize_load have not set. */
#define LSIZE_UNSET INT64_MIN

/* Learn the sizes of l's stored units from `from` on (the caller holds
 * l's learning turn): l->p_cum[i] becomes unit i's size minus its fill
 * size (a difference, not yet a sum), LSIZE_UNSET where not learned;
 * claimed bits as fs/views/layout.c sets them. deadline_ns: CLOCK_MONOTONIC
 * time to stop at (0: none), and stop at once when the rest would take
 * longer. *fail_at: the first unit that failed (UINT64_MAX: none), its
 * error in err. 0, or a negative errno for the run itself (no memory). */
int lsize_fill(struct engine *e, const struct znode *n, const struct region *r,
               struct region_layout *l, uint64_t from, uint64_t deadline_ns,
               uint64_t *fail_at, struct zerr *err);

/* Fill l->p_cum with every stored unit's size difference (as
 * lsize_fill) from the persistent index's region record of r, marking
 * them claims: 1 when loaded, 0 when there is none (or no index, too few
 * units, a node whose sizes were contradicted). */
int lsize_load(struct engine *e, const struct znode *n, const struct region *r,
               struct region_layout *l);

/* Keep the sizes of complete layout l (p_cum: sums) in the persistent
 * index as r's region record (nothing without an index, or when they
 * came from one). */
void lsize_keep(struct engine *e, const struct znode *n, const struct region *r,
                const struct region_layout *l);

/* What many records share: a version of the bytes of every stored chunk
 * of node n (its store's version of all its keys at once, else a digest
 * of each chunk's, store_version) into *v: 0, or -1 when there is none
 * (a remote store, inline bytes, a listing that is not complete). */
int lsize_node_version(struct engine *e, const struct znode *n, uint64_t *v);
/* Keep n sizes (of units, of a table's blocks) in the persistent index as
 * one record of identity id (src/store/sizeblob.h), with `check` (a number
 * the loader must find equal: the elements they are the text of) and
 * their total. Nothing without an index; a failure is learned again. */
void lsize_keep_sizes(struct engine *e, const struct sizeindex_id *id,
                      uint64_t check, const uint64_t *sizes, uint64_t n);
/* The n sizes of id's record into sizes: 1, or 0 when there is none or
 * it does not add up (other count, check or total). */
int lsize_load_sizes(struct engine *e, const struct sizeindex_id *id,
                     uint64_t check, uint64_t *sizes, uint64_t n);

struct table; /* fs/views/tblock.h */
/* Keep the nb block sizes of table t (dimension dim of group g) in the
 * persistent index, keyed by the version of every column's chunks and
 * what makes its rows' text (nothing without an index or versions). */
void lsize_table_keep(struct engine *e, const struct znode *g, const char *dim,
                      const struct table *t, const uint64_t *sizes,
                      uint64_t nb);
/* The size of table t (nb blocks) as its record in the persistent index
 * claims it: 1 and *size, else 0. */
int lsize_table_claim(struct engine *e, const struct znode *g, const char *dim,
                      const struct table *t, uint64_t nb, uint64_t *size);

/* CLOCK_MONOTONIC now, in nanoseconds. */
uint64_t lsize_now_ns(void);

#endif
