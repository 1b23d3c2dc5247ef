/* memo.h - the one caching mechanism of zarrfs: compute a thing once, share
 * it between threads, keep it within a byte budget, remember why it failed.
 *
 * Every cached thing (decoded units, shard indexes, deferred data sections,
 * chunk presence, view layouts, rows of units, learned sizes) goes through
 * memo_get (objects) or memo_value (64-bit values). One call does lookup,
 * remembered errors, single flight (one thread fills, the others wait for
 * it) and insert. Keys are typed (struct memo_key), not printed strings.
 *
 * Objects. A successful memo_get returns a *pin* (struct memo_ref): while
 * pinned, the entry is in use, stays findable by every thread and is never
 * evicted. memo_release unpins; an unpinned entry goes to an LRU list whose
 * costs, with those of the pinned entries, are kept within the byte budget
 * (entries larger than the whole budget are dropped when unpinned). So
 * memory is the budget, or what readers are using right now (memo_pinned)
 * when that alone is more. Objects are reference counted
 * (struct zobj): a caller may also keep the object itself beyond the pin
 * (zobj_get), e.g. a row of units holding its units; that keeps it alive
 * but not findable.
 *
 * Values (learned text sizes) live in a second LRU bounded by a count, so
 * they outlive the decoded data they were learned from.
 *
 * Failures. A fill that fails with a data error (EIO, ENOTSUP, EFBIG,
 * EACCES, ...) is remembered (its code and message, charged to the budget)
 * so the same request is answered at once and without a new log line;
 * transient failures (zerr_is_transient: ENOMEM, EMFILE, ENFILE, EAGAIN,
 * EINTR, ETIMEDOUT) are passed to the threads that waited for that fill
 * and then forgotten, so the next request tries again. A remembered
 * failure answers for memo_config.fail_keep_ns at most: a lookup after
 * that fills again (a chunk repaired is read; one still bad fails and is
 * remembered anew), so no failure is kept for the memo's whole life.
 *
 * Waiting cannot deadlock. Each key has a level (memo_key.level). The
 * rule: a fill of a key of level L may call memo_get / memo_value only for
 * keys of level < L. Every chain of waits therefore descends strictly and
 * ends at a fill that waits for nothing; the memo's mutex is never held
 * while a fill runs or while a destructor runs. The rule is checked: a
 * violation (a bug) fails with -EDEADLK instead of hanging. Waits also end
 * with -EINTR once the stop flag (memo_config.stop) is set, or the waiting
 * thread's request is abandoned (src/util/cancel.h).
 *
 * Scans. An object marked by memo_scan (what a reader going through more
 * than the cache keeps has passed) waits unpinned on a list of its own,
 * bounded by scan_budget and evicted first.
 *
 * Lock: struct memo.lock guards the table, the LRU and scan lists and every
 * entry's state; it is a leaf lock (no other lock is taken while holding
 * it). */
#ifndef ZARRFS_MEMO_H
#define ZARRFS_MEMO_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

/* ---- reference-counted objects ---- */

struct zobj {
  _Atomic long refs;
  void (*destroy)(struct zobj *o); /* frees the containing object */
};

/* Initialise with one reference held by the caller. */
void zobj_init(struct zobj *o, void (*destroy)(struct zobj *));
/* New reference; returns o. NULL-safe. */
struct zobj *zobj_get(struct zobj *o);
/* Drop a reference; the last one destroys. NULL-safe. */
void zobj_put(struct zobj *o);

/* ---- keys ---- */

/* Words of a key: enough for a kind tag, 32 coordinates and an index. */
#define MEMO_KEY_WORDS 36
/* Levels are 1..MEMO_MAX_LEVEL (0 means "not inside a fill"). The level
 * guard is per thread across every memo, so levels are one order for the
 * whole daemon: level 1 belongs to byte sources (remote blocks and sizes,
 * src/net/remote.c), which every other fill may read. */
#define MEMO_LEVEL_SOURCE 1
/* Level 2 belongs to what stores cache of their own metadata (Icechunk
 * manifests, src/store/icechunk/store_icechunk.c), which reads byte sources and
 * is read by every fill above it. */
#define MEMO_LEVEL_STORE 2
#define MEMO_MAX_LEVEL 15

struct memo_key {
  uint8_t level;     /* what kind of thing, and its place in the wait order */
  uint8_t n;         /* words of v in use */
  const void *owner; /* what it belongs to (an array node), by address */
  uint64_t v[MEMO_KEY_WORDS];
};

/* ---- the memo ---- */

struct memo;
struct memo_ref; /* a pin on an object entry */

struct memo_config {
  size_t budget;          /* bytes of unpinned objects and failures kept */
  size_t max_values;      /* values kept (oldest used go first) */
  const atomic_int *stop; /* non-zero: waits give up with -EINTR; may be
                             NULL */
  uint64_t fail_keep_ns;  /* how long a remembered failure answers (a
                             lookup after that fills again); 0: until
                             evicted */
  size_t scan_budget;     /* bytes of unpinned memo_scan objects kept (part
                             of budget; 0: none kept) */
};

/* A new memo. *out is owned by the caller (memo_free). */
int memo_new(const struct memo_config *cfg, struct memo **out,
             struct zerr *err);
/* Free every entry (no pin may be outstanding); NULL-safe. */
void memo_free(struct memo *m);

/* Compute an object: return a new reference in *obj (the memo takes it
 * over) and the bytes it holds in *cost, or a negative errno with err set.
 * Runs without any memo lock held; may call memo_get / memo_value for keys
 * of lower levels only. */
typedef int (*memo_fill_fn)(void *ctx, struct zobj **obj, size_t *cost,
                            struct zerr *err);

/* The object of key k: cached, being filled by another thread (wait), or
 * filled now by fill(ctx). Returns 0 and a pin in *out (memo_release), or
 * the (possibly remembered) failure. */
int memo_get(struct memo *m, const struct memo_key *k, memo_fill_fn fill,
             void *ctx, struct memo_ref **out, struct zerr *err);
/* Only if already there and ready: 1 and a pin in *out, else 0. Never
 * fills, never waits. */
int memo_peek(struct memo *m, const struct memo_key *k, struct memo_ref **out);
/* 1 when an object is there or a fill of it is running (a memo_get of it
 * would wait rather than fill); never pins, never waits. */
int memo_present(struct memo *m, const struct memo_key *k);
/* The pinned object (borrowed: valid until the pin is released). */
struct zobj *memo_obj(const struct memo_ref *r);
/* The bytes charged for the pinned object (its fill's cost and the
 * entry). */
size_t memo_cost(const struct memo_ref *r);
/* Unpin; NULL-safe. */
void memo_release(struct memo *m, struct memo_ref *r);
/* Mark r's object as passed through by a scan (a reader going through
 * more than the cache should keep): once unpinned it waits on a list of its
 * own, bounded by scan_budget and evicted before any other object, so a
 * scan does not push out what the cache holds for other readers, and the
 * memory of what it passed is freed (and reused) as it goes rather than
 * growing the daemon up to the budget. NULL-safe. */
void memo_scan(struct memo *m, struct memo_ref *r);

/* Count bytes a fill holds outside the memo as pinned (add > 0) or stop
 * counting them (add < 0; give back exactly what was held): the cache
 * makes room at once, evicting unpinned objects, so memory a fill is
 * building (a band's text, before its cost is known to the memo) is paid
 * from the cache rather than on top of it. */
void memo_hold(struct memo *m, long add);

/* Insert a ready object learned as a by-product (a neighbouring block
 * fetched in the same request): takes over the reference obj, which is
 * dropped when the key is already there (ready, pending or failed). Never
 * waits, so any fill may call it. */
void memo_put(struct memo *m, const struct memo_key *k, struct zobj *obj,
              size_t cost);

/* Compute a value (see memo_fill_fn). */
typedef int (*memo_value_fn)(void *ctx, uint64_t *value, struct zerr *err);
/* The value of key k, filled once (single flight) on a miss. */
int memo_value(struct memo *m, const struct memo_key *k, memo_value_fn fill,
               void *ctx, uint64_t *out, struct zerr *err);
/* Record a value learned as a by-product (never waits; a pending fill of
 * the same key is left alone). */
void memo_value_put(struct memo *m, const struct memo_key *k, uint64_t v);
/* 1 and the value when known, else 0. */
int memo_value_peek(struct memo *m, const struct memo_key *k, uint64_t *out);

/* Accounting, for tests, benchmarks and the window cap. */
size_t memo_used(struct memo *m);   /* bytes of unpinned entries */
size_t memo_pinned(struct memo *m); /* bytes of pinned ready objects */
size_t memo_scan_used(struct memo *m); /* bytes of unpinned scan objects
                                          (part of memo_used) */
/* Fills run (successful or not) for keys of this level, since creation. */
uint64_t memo_fills(const struct memo *m, unsigned level);
/* Lookups (memo_get, memo_value) answered from the table since creation:
 * ready, being filled by another thread (waited for) or a remembered
 * failure; every other lookup is a fill (a miss). */
uint64_t memo_hits(const struct memo *m);
/* Of those lookups, the ones that found the fill still running and
 * waited for it (a thread that caught up with a worker) since creation. */
uint64_t memo_waits(const struct memo *m);

#endif
