/* engine.h - the read engine of one mount, and the daemon's context: the
 * store, the memo (src/util/memo.h) and its levels, the limits, the
 * decode-ahead workers, the log, the shutdown flag, and the node table.
 *
 * The engine is a composition: engine_new and engine_free build and tear
 * down its parts, and the jobs live in modules of their own:
 *   fs/engine/node.c    the node table (metadata, consolidated metadata,
 *                       keys): an object of its own, below the engine,
 *                       which holds one
 *   fs/engine/unit.c    decoded units through the memo (shard indexes,
 *                       data sections, direct reads through partial
 *                       decoders, sizes, presence), taking the engine as
 *                       its context
 *   fs/text/textprep.c  decoded elements to their text type, fill text
 * Only the node table's header is included here (by engine.c); the others
 * include this one, so the include graph has no circle. The few helpers
 * they need from the context (engine_log, engine_stopping,
 * engine_check_stop) are inline here.
 *
 * Everything here is FUSE-free so tests and a future command-line front end
 * drive the same code. The engine owns every piece of shared mutable state
 * (the memo, the node table), each behind its own lock: the memo's (in
 * src/util/memo.c) and the node table's (in fs/engine/node.c), both leaves. The
 * other fields are set by engine_new and read-only after it, except
 * `stopping` and `stats` (atomics, no lock) and the table of requests in
 * flight with its watchdog (reqs_lock, a leaf).
 *
 * Errors that come from the data (corrupt chunk, bad metadata, unsupported
 * codec) are logged by the modules that meet them, through engine_log, where
 * the store path and key are known; the memo remembers them, so the same
 * failure seen again is answered without a new line. */
#ifndef ZARRFS_ENGINE_H
#define ZARRFS_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../../codecs/chain.h"
#include "../../src/store/sizeindex.h"
#include "../../src/store/store.h"
#include "../../src/util/cancel.h"
#include "../../src/util/log.h"
#include "../../src/util/logonce.h"
#include "../../src/util/lograte.h"
#include "../../src/util/memo.h"
#include "../../src/util/pool.h"
#include "../../src/zarr/meta.h"
#include "stats.h"

/* Memo levels of what the engine and the views cache. The wait rule of
 * memo.h holds because a fill of each level only asks for lower ones:
 * a unit reads its shard's index, a unit its decoded bytes (which read
 * the shard's index); a unit size decodes the unit; a layout
 * reads presence and unit sizes; a region size reads its layout; a row
 * decodes its units and their data; a table block reads its columns'
 * units (and its string chunks); a table layout renders its blocks; a
 * group's info.txt lists the store and reads metadata (levels 1, 2). */
/* Level 1 (MEMO_LEVEL_SOURCE) is the byte sources' own, level 2
 * (MEMO_LEVEL_STORE) the stores'. */
enum engine_level {
  ELEVEL_SHARD_INDEX = MEMO_LEVEL_STORE + 1, /* a shard's decoded index
                                                (unit.c) */
  ELEVEL_DECODED = 4,       /* a unit's bytes out of the codec chain,
                               shared by the views of one array (keyed by
                               the array's own node; unit.c) */
  ELEVEL_UNIT = 5,          /* a decoded unit with its text layout (unit.c) */
  ELEVEL_DATA = 6,          /* a unit's deferred data section, decoded
                               (unit.c) */
  ELEVEL_UNIT_SIZE = 7,     /* value: a unit's text size (unit.c) */
  ELEVEL_PRESENCE = 8,      /* which chunks of an array are stored (unit.c) */
  ELEVEL_LAYOUT = 9,        /* a region's text layout (view.c) */
  ELEVEL_REGION_SIZE = 10,   /* value: a region's text size (view.c) */
  ELEVEL_ROW = 11,          /* a row of units of a region (view.c) */
  ELEVEL_TABLE = 12,        /* a group's table D.csv: its columns
                               (table.c); a string column's chunk decoded
                               with its bytes as stored (tblock.c) */
  ELEVEL_TABLE_BLOCK = 13,  /* a block of rows of a table, rendered
                               (table.c, tblock.c) */
  ELEVEL_TABLE_LAYOUT = 14, /* where each block of a table starts; as
                               values, each block's size and the table's
                               (table.c) */
  ELEVEL_INFO = 15,         /* a group's info.txt (info.c); an Icechunk
                               ref's log text (history.c) */
};

struct engine_config {
  size_t cache_size;     /* memo byte budget (unpinned decoded data) */
  size_t max_decoded;    /* largest in-memory intermediate, bytes; also the
                            cap of what open files keep pinned together */
  size_t size_table_max; /* learned sizes kept */
  int no_consolidated;   /* -o consolidated=no: ignore consolidated metadata
                            (zarr.json consolidated_metadata, .zmetadata) and
                            read every node's own metadata */
  int lazy_sizes;        /* -o sizes=lazy: stat shows a view's size only
                            when known without decoding data (else 0; see
                            ns_size) */
  int decode_threads;    /* -o decode_threads: workers decoding ahead of
                            sequential readers and across rows (0: none) */
  int views;             /* -o views: where the text views are (enum
                            engine_views) */
};

/* Where the text views are (fs/namespace/namespace.c). */
enum engine_views {
  ENGINE_VIEWS_BESIDE = 0, /* K.txt beside chunk K, values.txt in arrays */
  ENGINE_VIEWS_TREE,       /* the store untouched; the views in a tree of
                              their own under /.text */
  ENGINE_VIEWS_NONE,       /* the store untouched, no views */
};

struct icechunk;
struct engine_sub;
struct znode;

/* One FUSE request in flight (engine_req_begin to engine_req_end), on the
 * stack of the thread serving it and linked into its engine's table so
 * the watchdog can say when it runs long. Fields other than units are
 * written before it is linked and read under engine.reqs_lock. */
struct engine_req {
  struct engine_req *prev, *next; /* the table (engine.reqs_lock) */
  const char *what;               /* borrowed: the path or key read */
  uint64_t off;                   /* where the read starts */
  uint64_t len;                   /* bytes asked for, or ENGINE_REQ_SIZE */
  uint64_t start_ns;              /* CLOCK_MONOTONIC at begin */
  atomic_ullong units;            /* no lock: units decoded for it */
  int logged;                     /* the watchdog said so (reqs_lock) */
};

/* engine_req_begin's len for a request that learns a file's size (a
 * lookup or a stat) rather than reading it. */
#define ENGINE_REQ_SIZE UINT64_MAX

/* How long a stat may spend learning the size of a large table before it
 * shows 0 (fs/table.h): with the block a fresh `head` then reads, well
 * under a second. */
#define ENGINE_TABLE_LEARN_NS (300000000ull)

/* How long a remembered data failure (a bad chunk, and every size or
 * layout it failed) answers before it is tried again: a chunk repaired
 * while mounted is read after at most this; one still bad is decoded
 * again (its log line is not repeated: logonce). */
#define ENGINE_FAIL_KEEP_NS (5000000000ull)

/* A request running this long gets one info line (engine_req_begin). */
#define ENGINE_SLOW_REQUEST_NS (5000000000ull)

/* Sub-engines kept at once per mount (one per Icechunk snapshot shown
 * under /.zarrfs): each is a node table and a snapshot's node list, and
 * lives as long as the mount (open files borrow its nodes). */
#define ENGINE_SUBS_MAX 256

/* The engine. Fields set by engine_new are read-only after it; what
 * changes lives behind a lock of its own (each a leaf, so no order
 * between them) or is atomic. */
struct engine {
  struct store *store;      /* owned; thread-safe itself (its own locks) */
  struct memo *memo;        /* owned: every cached thing (see enum
                               engine_level), guarded by the memo's own lock
                               (src/util/memo.c) */
  struct codec_env env;     /* read-only */
  size_t window_cap;        /* read-only: bytes open files may keep
                               pinned */
  size_t render_max;        /* read-only: largest unit text kept rendered
                               whole */
  struct pool *ahead;       /* owned: decode-ahead workers (fs/views/view.c), or
                               NULL; guarded by the pool's own lock */
  size_t ahead_budget;      /* read-only: bytes a reader may have decoded
                               ahead */
  int ahead_settle;         /* tests only, set before the first read: a
                               reader waits for the workers after queuing
                               (engine_ahead_settle) */
  size_t cache_size;        /* read-only: the memo's budget */
  struct node_table *nodes; /* owned: the node table (fs/engine/node.h), guarded
                               by the table's own lock (fs/engine/node.c) */
  int no_consolidated;      /* read-only, from engine_config */
  int lazy_sizes;           /* read-only, from engine_config */
  int views;                /* read-only, from engine_config (enum
                               engine_views) */
  struct logonce *log;      /* owned: every line goes through it, once per
                               key and reason, repeats summarised; guarded
                               by its own lock (src/util/logonce.c) */
  struct lograte *debug;    /* owned: debug lines, at most
                               ENGINE_DEBUG_PER_SEC a second (the rest
                               summarised); its own lock
                               (src/util/lograte.c) */
  atomic_int stopping;      /* no lock: set by engine_stop (signal-safe);
                               long loops and waits check it and give up
                               with -EINTR */
  struct zfs_stats stats;   /* no lock: live counters (fs/engine/stats.h),
                               relaxed atomics */
  struct engine_config cfg; /* read-only: what engine_new was given */
  struct icechunk *ic;      /* read-only: the Icechunk repository the
                               store shows a snapshot of (one reference),
                               or NULL */
  struct engine *parent;    /* read-only: NULL for a mount's engine; for a
                               sub-engine (engine_sub) the engine whose
                               memo, log and workers it borrows */
  pthread_mutex_t subs_lock; /* guards subs and nsubs (a leaf: held only
                                to look up and insert) */
  struct engine_sub *subs;   /* the sub-engines made so far, owned */
  size_t nsubs;
  pthread_mutex_t reqs_lock; /* guards reqs, watch_started, watch_quit
                                and each request's logged (a leaf: lines
                                are written after it is dropped) */
  pthread_cond_t reqs_cond;  /* wakes the watchdog to quit */
  struct engine_req *reqs;   /* requests in flight (not owned) */
  int watch_started;         /* the watchdog thread runs (started by the
                                first request: after the daemon forked) */
  int watch_quit;
  pthread_t watchdog;
  uint64_t slow_ns;          /* ENGINE_SLOW_REQUEST_NS (reqs_lock: tests
                                change it) */
  uint64_t idle_ns;          /* when the last request ended (reqs_lock) */
  int trimmed;               /* malloc_trim ran since then (reqs_lock) */
  uint64_t idle_trim_ns;     /* ENGINE_IDLE_TRIM_NS (reqs_lock: tests
                                change it) */
  _Atomic uint64_t trims;    /* idle trims done (for tests) */
  struct sizeindex *sizeidx; /* owned: the persistent size index
                         (src/store/sizeindex.h), or NULL (none, or
                         a remote store); set by engine_set_index
                         before the first request; guarded by its
                         own lock */
  /* Called when a unit's text turned out longer than the size learned
   * for it (fs/engine/unit.c, unit_size_wrong; a mount's engine only): the
   * kernel may hold a size of n's views that ends too early, and whoever
   * told it (fs/main.c: the FUSE session) has it ask again. NULL: nobody
   * to tell (the CLI reads to the end). Set before the first request,
   * read-only after. */
  void (*size_grew)(void *ud, const struct znode *n, const uint64_t *idx);
  void *size_grew_ud;

  /* read-only: how long a stat may learn a deferred table's size
   * (fs/table.h); tests change it before the first request */
  uint64_t table_learn_ns;
};

/* Create an engine over store (takes ownership of store, also on failure). */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err);
/* Free; NULL-safe. No pin may be outstanding. */
void engine_free(struct engine *e);

/* The engine of Icechunk snapshot id of e's repository (e->ic must be
 * set), made on first use (its snapshot file read then) and kept until e
 * is freed: a node table over that snapshot's store, sharing e's memo,
 * log, workers and limits. *out is borrowed from e. -ENFILE past
 * ENGINE_SUBS_MAX snapshots, -ENOENT when the snapshot does not exist. */
int engine_sub(struct engine *e, const uint8_t id[12], struct engine **out,
               struct zerr *err);
/* Give the engine the persistent size index sizeidx (taken over; NULL:
 * none). Only before the engine serves anything. */
void engine_set_index(struct engine *e, struct sizeindex *sizeidx);

/* Note that the calling thread serves request r (on its stack, alive
 * until engine_req_end) reading len bytes at off of what (borrowed), or
 * learning its size (len ENGINE_REQ_SIZE):
 * when it runs longer than e->slow_ns, a watchdog thread (one per mount,
 * waking once a second) logs one info line naming it, how long, and how
 * many units it decoded so far. Requests to a sub-engine go to the
 * mount's table. */
void engine_req_begin(struct engine *e, struct engine_req *r, const char *what,
                      uint64_t off, uint64_t len);
/* The request is answered: unlink it. */
void engine_req_end(struct engine *e, struct engine_req *r);
/* Count one unit decoded for the request the calling thread serves (none:
 * nothing happens). No lock. */
void engine_req_note_unit(void);

/* Ask every long operation to stop (shutdown): loops and waits return
 * -EINTR soon after. Async-signal-safe (one atomic store). */
void engine_stop(struct engine *e);
/* Has engine_stop been called, or was the request the calling thread
 * serves abandoned (its reader gave up: src/util/cancel.h)? Checked by
 * long loops and waits. */
static inline int engine_stopping(const struct engine *e) {
  return atomic_load_explicit(&e->stopping, memory_order_relaxed) ||
         (e->parent &&
          atomic_load_explicit(&e->parent->stopping, memory_order_relaxed)) ||
         cancel_requested();
}
/* -EINTR with a reason once stopping, else 0: for long loops. */
static inline int engine_check_stop(struct engine *e, struct zerr *err) {
  if (!engine_stopping(e))
    return 0;
  int rc = cancel_check(NULL, err); /* the request, else the shutdown */
  return rc ? rc : zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
}

/* Fills run for memo level `level` (decodes, layouts, rows...): tests
 * count work with it. */
uint64_t engine_fills(const struct engine *e, enum engine_level level);

/* What a debug line tells of (counted apart when lines are left out). */
enum engine_debug_kind {
  ENGINE_DEBUG_REQUEST, /* a request served: what, where, how much */
  ENGINE_DEBUG_CACHE,   /* a unit found in the cache, or not */
  ENGINE_DEBUG_DECODE,  /* a unit decoded: its key, bytes, time */
};
/* Debug lines shown a second at most (-o log_level=debug): enough to
 * follow what a reader does, few enough to read. */
#define ENGINE_DEBUG_PER_SEC 20
/* Is the debug level on? (Then build what engine_debug says.) */
static inline int engine_debugging(void) { return zlog_enabled(ZLOG_DEBUG); }
/* One debug line of kind k, within the mount's rate (its summary says
 * what was left out); nothing when the level is not debug. */
void engine_debug(struct engine *e, enum engine_debug_kind k, const char *fmt,
                  ...) __attribute__((format(printf, 3, 4)));

/* Tests only (e->ahead_settle): wait until the workers finished what the
 * reader just queued, so that a test asserts what they did with no race
 * against the reader (no timing, no retries). The caller holds no lock. */
static inline void engine_ahead_settle(struct engine *e) {
  if (e->ahead && e->ahead_settle)
    pool_wait_idle(e->ahead);
}

/* Log one line about key (store location prepended), once per key and
 * reason: repeats are counted and summarised at most once a minute. */
static inline void engine_log(struct engine *e, const char *key,
                              const char *msg) {
  logonce_log(e->log, ZLOG_ERR, e->store->location, key, msg);
}

#endif
