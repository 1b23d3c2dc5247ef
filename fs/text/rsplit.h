/* rsplit.h - the lines of a long run of fixed-size elements rendered by
 * several threads: the caller renders the first part, idle workers of a
 * pool the others, each into a buffer of its own, and the caller appends
 * their texts in order (fs/text/text.c, when a unit is rendered whole).
 *
 * A run is split only as many ways as the pool has idle workers, plus
 * the caller: in a pipeline that keeps every worker busy (a `cat` decoding
 * ahead) nothing is split, and the parts' copies are not paid for.
 *
 * A part is a job on the pool, queued before its decode-ahead hints. No
 * thread ever waits for a part nobody has started: the caller renders
 * any part still queued when it gets to it. So a busy pool costs nothing
 * but the part's copy, and the last chunk of a `cat` is rendered on
 * every core instead of one.
 *
 * Also owns struct tbuf, the bounded growing buffer a whole unit's text is
 * rendered into.
 *
 * Ownership: an rsplit (rsplit_start) holds the parts' buffers until
 * rsplit_end frees it and them; the elements and the layout offsets it is
 * given stay the caller's, and must live until rsplit_end. */
#ifndef ZARRFS_RSPLIT_H
#define ZARRFS_RSPLIT_H

#include <stddef.h>
#include <stdint.h>

#include "../../src/util/pool.h"
#include "../../src/zarr/dtype.h"

/* A growing text buffer for a layout that renders as it measures. */
struct tbuf {
  char *p;
  size_t len, cap, max; /* max: give up beyond it (p freed, NULL) */
};

/* Room for n more bytes at b->p + b->len, or NULL: over b->max or out of
 * memory, and then the buffer is freed (b->p NULL). */
char *tbuf_room(struct tbuf *b, size_t n);

/* Elements a run must have at least, per part, to be split. */
#define RSPLIT_MIN_PART 65536

struct rsplit;

/* Ways to split a run on pool now: its idle workers and the caller (1:
 * do not split; pool may be NULL). */
int rsplit_ways(struct pool *pool);

/* Hand the tail of the run of elements [k0, n) (element size elsize at
 * src, rendered as dt's lines) to pool in at most ways - 1 parts (at
 * most 3) that start at multiples of `block` elements; *kend receives
 * where the parts start (the caller renders [k0, *kend) itself). Returns
 * NULL with *kend = n when the run is too short to split that way, pool
 * is NULL, or memory is short: the caller then renders it all. A part
 * records, at blk[b] for each block b it renders, its text offset
 * relative to the part's start. */
struct rsplit *rsplit_start(struct pool *pool, int ways, const struct dtype *dt,
                            const unsigned char *src, size_t elsize,
                            uint64_t k0, uint64_t n, uint64_t block,
                            uint64_t *blk, uint64_t *kend);

/* Finish: every part rendered (here, if no worker started it), then in
 * order each part's text appended to tb while it has room (tb->p NULL
 * once it has none) and its blocks' offsets made absolute from *pos,
 * which advances by the part's text. Frees rs. */
void rsplit_end(struct rsplit *rs, struct tbuf *tb, uint64_t *blk,
                uint64_t *pos);

/* Parts a pool's worker has rendered in this process (for tests and
 * statistics: the caller rendered the others). */
uint64_t rsplit_helped(void);

#endif
