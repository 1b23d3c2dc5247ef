/* view.h - the text views: a chunk's view (K.txt) and an array's view
 * (values.txt). Sizes and reads, FUSE-free.
 *
 * Both views walk a *region* (fs/engine/region.h): a box of units read in C
 * order of their elements (the array view: every unit; a chunk view: the
 * chunk's one unit, or the inner chunks of a shard). Slab k of a region
 * holds the units whose first coordinate is lo[0]+k. A region's layout
 * (fs/views/layout.h) knows where each slab's text starts from the stored
 * units' sizes alone; units the store does not hold are the fill value,
 * and their text is arithmetic, so a sparse or never-written array costs
 * nothing per missing chunk.
 *
 * A slab of one unit (1-D arrays, and N-D arrays whose units span the
 * trailing dimensions) is read from that unit's text. A slab of several
 * units interleaves them row by row, so it is read through a *row*
 * (fs/views/row.h): every unit of the slab decoded once, so that each unit is
 * decoded once per pass over the slab and never once per row of elements.
 *
 * Reads go through the memo (src/util/memo.h). A reader may pass a cursor
 * (one per open file, fs/engine/cursor.h): it keeps what that reader used
 * pinned and has the units after it decoded ahead. This module holds no lock of
 * its own. */
#ifndef ZARRFS_VIEW_H
#define ZARRFS_VIEW_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/unit.h"

struct view_cursor;

/* A cursor for one open file (NULL on allocation failure: reads then work
 * without one). */
struct view_cursor *view_cursor_new(void);
/* Release everything the cursor keeps, and free it; NULL-safe. */
void view_cursor_free(struct engine *e, struct view_cursor *c);

/* Size of the text view of chunk idx. */
int view_chunk_size(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, struct zerr *err);
/* Read up to len bytes at off of chunk idx's view into dst; returns the
 * number of bytes (short only at the end of the view) or a negative errno.
 * c may be NULL. */
long view_chunk_read(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t off, size_t len, char *dst,
                     struct view_cursor *c, struct zerr *err);

/* Lazy sizes: 1 and *size when the size of chunk idx's view is known
 * without decoding element data (already learned, or a unit whose chain
 * reads its index partially: one small read), 0 when it is not (nothing
 * was decoded), or a negative errno. */
int view_chunk_size_known(struct engine *e, const struct znode *n,
                          const uint64_t *idx, uint64_t *size,
                          struct zerr *err);
/* Likewise for the whole-array view: known once learned (or empty). */
int view_array_size_known(struct engine *e, const struct znode *n,
                          uint64_t *size, struct zerr *err);

/* Size of the whole-array view of node n. */
int view_array_size(struct engine *e, const struct znode *n, uint64_t *size,
                    struct zerr *err);
/* With exact sizes: 1 when the whole-array view's size is not known now
 * (its stat would have to learn it: the view is then read with direct
 * I/O, and its reader learns the sizes as it goes), 0 when it is (or its
 * units' indexes give it cheaply), or a negative errno. */
int view_array_size_deferred(struct engine *e, const struct znode *n,
                             struct zerr *err);
/* The size stat shows for the whole-array view with exact sizes: learned
 * on every core, waiting at most wait_ns (UINT64_MAX: as long as it
 * takes; fs/views/lsize.h: not at all when it would take longer). 0 with the
 * exact size; 1 with *size 0 when it is not known in time (the sizes
 * learned so far are kept, so a later stat goes on from there); or a
 * negative errno. */
int view_array_size_stat(struct engine *e, const struct znode *n,
                         uint64_t wait_ns, uint64_t *size, struct zerr *err);
/* Read from the whole-array view (same contract as view_chunk_read). */
long view_array_read(struct engine *e, const struct znode *n, uint64_t off,
                     size_t len, char *dst, struct view_cursor *c,
                     struct zerr *err);

/* Bytes a read lent rather than copied into dst: the text of a unit
 * rendered whole, or a slice the cursor's workers rendered ahead. */
struct view_lend {
  const char *bytes; /* NULL: nothing lent (the bytes are in dst) */
  struct zobj *obj;  /* a reference to the unit holding them, or NULL */
  void *slice;       /* the cursor's slice holding them, or NULL */
};

/* view_chunk_read and view_array_read that may lend the bytes (lend
 * non-NULL): lend->bytes then points at them, held until
 * view_lend_return (a lent slice holds a reference to its cursor, so the
 * return may come after the file's cursor was freed). */
long view_chunk_read_lend(struct engine *e, const struct znode *n,
                          const uint64_t *idx, uint64_t off, size_t len,
                          char *dst, struct view_cursor *c,
                          struct view_lend *lend, struct zerr *err);
long view_array_read_lend(struct engine *e, const struct znode *n, uint64_t off,
                          size_t len, char *dst, struct view_cursor *c,
                          struct view_lend *lend, struct zerr *err);
/* Give back what a read lent (NULL-safe; lend is cleared). */
void view_lend_return(struct view_cursor *c, struct view_lend *lend);

#endif
