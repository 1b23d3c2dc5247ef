/* cursor.h - per-open-file cursors and decoding ahead.
 *
 * A cursor belongs to one open file of a view. It keeps pinned the layout
 * and the last units, rows and data sections its reader used (its
 * windows), so a sequential reader never decodes the same unit twice even
 * with a tiny cache budget; the bytes kept this way by all cursors
 * together stay under engine.window_cap. It also tells whether its reader
 * goes through the view in sequence, and then has the engine's workers
 * (src/util/pool.h) decode the units after the one being read, held in
 * its slots until the reader reaches them (at most the engine's ahead
 * budget divided by the cost of the units read lately, and 256); small
 * units go in runs, one job for as many as cost 256 KiB lately.
 *
 * On a store with latency (store_prefetch: remote stores) the cursor
 * also names the chunks from the one being read on to the store, which
 * fetches them in parallel meanwhile: a window of chunks that starts at 4
 * and doubles each time the reader reaches chunks it named (at most 256),
 * back to nothing on a seek; the store bounds the bytes all hints hold
 * (a part of its cache, an equal share per reader) and refuses hints
 * beyond, which are asked again after the next read. The first read of
 * an open file near its start (cat's read at 0, or the kernel's
 * read-ahead read that overtook it) names the chunks under it before it
 * is served, so each comes whole in one round trip. Local stores are
 * untouched. Size jobs name the starts of their units the same way.
 *
 * Fills that go through many units (a layout learning sizes, a row
 * decoding its units) hand units to the workers too, through a fan: a
 * record of how far the fill has come, so a job the fill has overtaken
 * does nothing. Jobs are hints: a full queue or a failure only means the
 * reader or the fill decodes itself (and sees the failure).
 *
 * A reader in sequence whose text is rendered as it reads, at a cost
 * beyond a copy (numbers of units whose text is not kept whole, bytes as
 * hex; the caller says so, cursor_note_renders), in units of several
 * slices, also has the workers render the next slices of the view's
 * text, each CURSOR_SLICE bytes, into buffers the cursor holds until the
 * reader copies or lends them: rendering runs on the other cores while
 * the reader replies. A slice the reader reaches while a worker renders
 * it is waited for; one still queued the reader renders itself. The
 * slices' bytes (with spares, at most the ahead budget, plus those lent
 * to replies in flight) are outside the memo.
 *
 * Ownership: a cursor is reference counted (the open file's reference,
 * one per queued job); cursor_free drops the file's and releases every
 * pin, and jobs still running release what they make.
 *
 * Locks: struct view_cursor.lock guards its windows, sequence state and
 * slots. It is NOT a leaf: under it, cursor_ahead_plan reads the memo's
 * pinned bytes (the memo's lock), queues jobs (the pool's lock) and names
 * chunks to the store (store_prefetch: the remote's prefetch lock); all
 * are leaves, and nothing takes a cursor lock while holding them. Pins are
 * released only after the cursor lock is dropped. A worker's job takes
 * its cursor's lock alone, before and after decoding, never during. A
 * reader waits for a slice being rendered on the cursor's condition
 * variable (under its lock) holding nothing else: no pin, no fill. */
#ifndef ZARRFS_CURSOR_H
#define ZARRFS_CURSOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "region.h"

struct view_cursor;

/* A cursor for one open file (NULL on allocation failure: reads then work
 * without one). */
struct view_cursor *cursor_new(void);
/* Release everything the cursor keeps and drop the file's reference;
 * NULL-safe. */
void cursor_free(struct engine *e, struct view_cursor *c);

/* Hand pin r over to cursor c (NULL r: nothing; NULL c: r is released):
 * kept as its layout (is_layout) or as its newest window. */
void cursor_keep(struct engine *e, struct view_cursor *c, struct memo_ref *r,
                 int is_layout);
/* What a reader of a view the cursor does not know keeps between reads
 * (a table's pins and position, fs/views/table.c), owned by the cursor
 * while it is there (cursor_free frees it with free_fn). Swapped in and
 * out: returns what the caller owns now. A take (p NULL) returns the
 * state, or NULL when there is none or another read of the file has it;
 * a put returns what another read put meanwhile, or p itself when c is
 * NULL or closed (the caller frees either with its free_fn). */
void *cursor_ext_swap(struct view_cursor *c, void *p,
                      void (*free_fn)(struct engine *e, void *p));

/* About to decode what key names: make room in the cache by dropping c's
 * windows when the pins exceed it (NULL c: nothing). */
void cursor_room(struct engine *e, struct view_cursor *c,
                 const struct memo_key *key);
/* Note a read of [off, off+len) about to be served; 1 when its reader
 * goes through the view in sequence (NULL c: 0). */
int cursor_note(struct view_cursor *c, uint64_t off, size_t len);
/* Remember what a unit read lately costs in bytes (sizes the depth of
 * decoding ahead); NULL c: nothing. `scan` (once set, kept): the reader
 * goes through a view larger than the cache keeps for its own sake
 * (unit_passing): it keeps its newest two windows only, and has at most
 * one run of units per worker, plus one, decoded ahead (what keeps the
 * workers busy), so a cat holds its working set rather than a quarter of
 * the cache ahead and four windows behind. */
void cursor_note_cost(struct view_cursor *c, size_t cost, int scan);
/* Before a read at pos of region r's text is served (slab k the first it
 * reads): when it is near the start (cat's first read, or the kernel's
 * read-ahead beside it) and the first of its file to get here, name the
 * units of slab k to a store with latency (NULL c: nothing). */
void cursor_ahead_start(struct engine *e, const struct znode *n,
                        const struct region *r, const struct region_layout *l,
                        struct view_cursor *c, uint64_t pos, uint64_t k);
/* After a read that reached slab k of region r (layout l): queue the
 * units after it when the reader goes in sequence, and let go of those
 * it has passed. With `reading`: before the reader decodes slab k, so the
 * units after it decode meanwhile (slab k's stay held; nothing on a store
 * with latency, whose chunks are named to it after the read). */
void cursor_ahead_plan(struct engine *e, const struct znode *n,
                       const struct region *r, const struct region_layout *l,
                       struct view_cursor *c, uint64_t k, int reading);

/* A reader in sequence has reached region-linear unit rl (it reads it
 * now): a job queued for an earlier unit of c no longer decodes it (the
 * reader has it, or had it and let it go). A jump (cursor_note) starts
 * over. NULL c: nothing. */
void cursor_reached(struct view_cursor *c, uint64_t rl);

/* A view a slice job renders from (copied into the job): read() renders
 * view bytes [off, off+len) into dst with no cursor, returning the bytes
 * (short only at the end) or a negative errno. e and n outlive the jobs
 * (the engine drains its pool before it frees nodes). */
struct cursor_view {
  long (*read)(const struct cursor_view *v, uint64_t off, size_t len, char *dst,
               struct zerr *err);
  struct engine *e;
  const struct znode *n;
  uint64_t idx[ZMETA_MAX_DIMS]; /* a chunk view's chunk */
};

/* Whether the reader's last read rendered elements (1) of a unit of
 * `size` bytes of text, or copied text made whole already (0): slices pay
 * only for the former, in units of several slices (many small units are
 * better decoded ahead unit by unit). NULL c: nothing. */
void cursor_note_renders(struct view_cursor *c, int renders, uint64_t size);
/* Copy view bytes from off on (at most len) out of a slice the workers
 * rendered, waiting for one being rendered; the bytes copied, 0 when no
 * slice holds off (the caller reads it itself). NULL c: 0. */
size_t cursor_slice_read(struct view_cursor *c, uint64_t off, size_t len,
                         char *dst);
/* Lend view bytes from off on out of a slice (waiting as
 * cursor_slice_read does) when it holds all len of them, or all that is
 * left of the text: a pointer to them, their count in *n, and *hold to
 * give back with cursor_slice_return once they are replied (it holds a
 * reference to c until then); NULL when no
 * slice holds them. NULL c: NULL. */
const char *cursor_slice_lend(struct view_cursor *c, uint64_t off, size_t len,
                              size_t *n, void **hold);
/* Give back what cursor_slice_lend lent (hold). */
void cursor_slice_return(struct view_cursor *c, void *hold);
/* After a read of [off, end) in sequence: queue the slices after it (and
 * let go of those the reader has passed). NULL c: nothing. */
void cursor_slice_plan(struct engine *e, struct view_cursor *c,
                       const struct cursor_view *v, uint64_t off, uint64_t end);
/* How many slices the workers have rendered in this process. */
uint64_t cursor_sliced(void);

/* How many units the workers have rendered whole in this process: units
 * a job (decoding ahead of a reader, or learning sizes for a layout)
 * found undecoded and left as their text in the memo. A reader going in
 * sequence then copies text made on the other cores. */
uint64_t cursor_rendered(void);

/* A fill (a layout, a row) that has workers decode its units ahead of
 * it: how far it has come itself. A job for a unit the fill has passed
 * is stale (the fill decoded that unit) and does nothing: with a small
 * cache it would decode it a second time. */
struct cursor_fan {
  _Atomic int refs;     /* the fill's and one per job */
  _Atomic uint64_t pos; /* units before this one are done */
};

/* A new fan, owned by the fill (NULL: fan out nothing). */
struct cursor_fan *cursor_fan_new(void);
/* The fill has come to its unit at; NULL-safe. */
static inline void cursor_fan_at(struct cursor_fan *f, uint64_t at) {
  if (f)
    atomic_store(&f->pos, at);
}
/* The fill is done: every job of it is stale now; drops the fill's
 * reference. NULL-safe. */
void cursor_fan_done(struct cursor_fan *f);
/* Drop a reference (a job's); NULL-safe. */
void cursor_fan_unref(struct cursor_fan *f);
/* Queue decoding unit rl of region r and its data, place `at` of fill
 * fan's list; 0, or negative when the pool refused (a hint). */
int cursor_ahead_unit(struct engine *e, const struct znode *n,
                      const struct region *r, uint64_t rl,
                      struct cursor_fan *fan, uint64_t at);
/* Queue learning the sizes of units run[0..nrun) of region r, places
 * at.. of fill fan's list, as one job; 0, or negative when refused. */
int cursor_ahead_sizes(struct engine *e, const struct znode *n,
                       const struct region *r, struct cursor_fan *fan,
                       uint64_t at, const uint64_t *run, uint32_t nrun);

#endif
