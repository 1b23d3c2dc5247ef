/* engine.h - the read engine of one mount: the store, the node table
 * (parsed zarr.json + codec chain per array), and decoded units behind the
 * memo (src/memo.h).
 *
 * Everything here is FUSE-free so tests and a future command-line front end
 * drive the same code. The engine is the daemon's context: it owns every
 * piece of shared mutable state (the memo, the node table), each behind its
 * own lock.
 *
 * Errors that come from the data (corrupt chunk, bad metadata, unsupported
 * codec) are logged here, where the store path and key are known; the memo
 * remembers them, so the same failure seen again is answered without a new
 * line. */
#ifndef ZARRFS_ENGINE_H
#define ZARRFS_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../codecs/chain.h"
#include "../src/consolidated.h"
#include "../src/htab.h"
#include "../src/logonce.h"
#include "../src/memo.h"
#include "../src/pool.h"
#include "../src/meta.h"
#include "../src/store.h"
#include "text.h"

/* Memo levels of what the engine and the views cache. The wait rule of
 * memo.h holds because a fill of each level only asks for lower ones:
 * a unit reads its shard's index; a unit size decodes the unit; a layout
 * reads presence and unit sizes; a region size reads its layout; a row
 * decodes its units and their data. */
/* Level 1 (MEMO_LEVEL_SOURCE) is the byte sources' own. */
enum engine_level {
  ELEVEL_SHARD_INDEX = MEMO_LEVEL_SOURCE + 1, /* a shard's decoded index */
  ELEVEL_UNIT = 3,        /* a decoded unit with its text layout */
  ELEVEL_DATA = 4,        /* a unit's deferred data section, decoded */
  ELEVEL_UNIT_SIZE = 5,   /* value: a unit's text size */
  ELEVEL_PRESENCE = 6,    /* which chunks of an array are stored */
  ELEVEL_LAYOUT = 7,      /* a region's text layout (view.c) */
  ELEVEL_REGION_SIZE = 8, /* value: a region's text size (view.c) */
  ELEVEL_ROW = 9,         /* a row of units of a region (view.c) */
};

enum znode_kind {
  ZNODE_NONE = 0, /* no zarr.json here */
  ZNODE_GROUP,
  ZNODE_ARRAY,  /* zarr.json parsed as an array (views may still fail) */
  ZNODE_BROKEN, /* zarr.json present but unusable */
};

struct shard_state;

/* A node, immutable once created; lives as long as the engine.
 *
 * Arrays are decoded in *units*: a unit is a chunk, except when the codecs
 * are `sharding_indexed` alone, where a unit is one inner chunk of a shard
 * (so a read decodes the shard index and only the inner chunks it needs).
 * Unit coordinates index the unit grid; chunk coordinates the chunk grid;
 * per[d] units make one chunk along dimension d. */
struct znode {
  enum znode_kind kind;
  char *path;             /* store prefix: "" for the root, else "a/b" */
  struct zmeta *meta;     /* arrays: parsed metadata */
  struct chain *chain;    /* arrays: NULL when views cannot work */
  char *view_error;       /* why views fail (logged once); NULL if they work */
  struct codec_spec spec; /* decoded representation of one chunk */
  const struct shard_state *shard; /* units are inner chunks (borrowed from
                                      chain), or NULL: units are chunks */
  struct codec_spec uspec;         /* decoded representation of one unit */
  uint64_t ugrid[ZMETA_MAX_DIMS];  /* units per dimension */
  uint64_t per[ZMETA_MAX_DIMS];    /* units per chunk per dimension */
  struct text_form form; /* how units become text: the text data type (the
                            data type, or string (numpy U) / bytes (numpy
                            S) for the fixed-width kinds, converted after
                            decoding), the unit shape, the fill text */
  struct zcons *cons;    /* groups: their consolidated metadata (owned), or
                            NULL (see fs/hier.h) */
  int transient;         /* broken only for now (a server failing, out of
                            memory), or no slot for it: not kept in the
                            node table, asked again next time */
  struct znode *next;    /* transient nodes: the engine's list */
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
};

struct engine {
  struct store *store; /* owned */
  struct memo *memo;   /* every cached thing (see enum engine_level) */
  struct codec_env env;
  size_t window_cap;          /* bytes open files may keep pinned */
  size_t render_max;          /* largest unit text kept rendered whole */
  struct pool *ahead;         /* decode-ahead workers (fs/view.c), or NULL */
  size_t ahead_budget;        /* bytes a reader may have decoded ahead */
  size_t cache_size;          /* the memo's budget (engine_config) */
  pthread_mutex_t nodes_lock; /* guards nodes (leaf lock) */
  struct htab nodes;          /* path -> struct znode, for the engine's life */
  struct znode *transient;    /* nodes whose metadata failed to load for
                                 now (guarded by nodes_lock; freed with the
                                 engine: callers borrow nodes for its life) */
  int no_consolidated;        /* from engine_config */
  int lazy_sizes;             /* from engine_config */
  struct logonce *log;        /* every line goes through it: once per key
                                 and reason, repeats summarised */
  atomic_int stopping; /* set by engine_stop (signal-safe); long loops and
                          waits check it and give up with -EINTR */
};

/* Create an engine over store (takes ownership of store, also on failure). */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err);
/* Free; NULL-safe. No pin may be outstanding. */
void engine_free(struct engine *e);

/* The node at store prefix `path` (borrowed, valid for the engine's life).
 * Never fails: a directory without zarr.json is ZNODE_NONE. */
const struct znode *engine_node(struct engine *e, const char *path);

/* The array node whose tree holds store key `key` (the nearest ancestor
 * directory that is an array or broken node), and the key relative to it.
 * NULL when none. */
const struct znode *engine_array_of(struct engine *e, const char *key,
                                    const char **rel);

/* Decoded unit `idx` of array node n, read from the store (a missing chunk
 * or an empty inner chunk gives a fill unit). Returns a pin on the memo
 * entry (memo_release); the unit is engine_ref_unit(*out). */
int engine_unit(struct engine *e, const struct znode *n, const uint64_t *idx,
                struct memo_ref **out, struct zerr *err);
/* The unit behind a pin from engine_unit (borrowed while pinned). */
static inline struct chunk_text *engine_ref_unit(const struct memo_ref *r) {
  return (struct chunk_text *)memo_obj(r);
}
/* Fill unit idx of n, for a unit known to be missing: no store access, no
 * element data (new reference; zobj_put). */
int engine_fill_unit(const struct znode *n, const uint64_t *idx,
                     struct chunk_text **out, struct zerr *err);

/* What to read a decoded unit's text from. Fill units, fixed-size
 * elements and units rendered whole: the unit itself (*rct = ct, *data
 * NULL). Variable-length elements with their bytes at hand (uncompressed
 * zarrs.vlen data): *rct = ct and *data those bytes (a read fetches only
 * what it shows). Deferred data sections are decoded once (single-flight,
 * in the memo) and, when the text fits render_max, rendered whole: then
 * *rct is that rendered unit and *data NULL; else *rct = ct and *data the
 * decoded bytes. *data is a new reference; *pin (or NULL) keeps the memo
 * entry *rct or *data came from; the caller releases it (a reader's
 * window keeps it) after the last use. */
int engine_unit_src(struct engine *e, const struct znode *n,
                    const struct chunk_text *ct, const struct chunk_text **rct,
                    struct bytesrc **data, struct memo_ref **pin,
                    struct zerr *err);

/* Read text [off, off+len) of unit idx straight through its plain
 * zarrs.vlen index and data (unit_direct in engine.c): only the offsets
 * and element bytes the range shows are read, nothing is decoded whole or
 * cached. -ENOTSUP when the unit is not like that (or not stored): read
 * it the usual way. For readers not going through in sequence (`tail`,
 * random reads) of units not decoded yet. */
long engine_unit_read_direct(struct engine *e, const struct znode *n,
                             const uint64_t *idx, uint64_t off, size_t len,
                             char *dst, struct zerr *err);

/* Text size of unit idx, learned once and remembered: from the ends of a
 * plain zarrs.vlen index when it has one, else by decoding the unit. */
int engine_unit_size(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t *size, struct zerr *err);

/* Which chunks of array n are stored (a pin; the object is a struct
 * presence from src/presence.h). */
int engine_presence(struct engine *e, const struct znode *n,
                    struct memo_ref **out, struct zerr *err);

/* Memo key of kind `level` about node n for coordinates idx (ndim words;
 * none when idx is NULL) plus `extra` words (tags, indexes). */
void engine_key(struct memo_key *k, enum engine_level level,
                const struct znode *n, const uint64_t *idx,
                const uint64_t *extra, int nextra);

/* In-bounds elements of unit idx of n (edge units hold fewer). */
uint64_t engine_unit_nin(const struct znode *n, const uint64_t *idx);

/* Store key of chunk idx of node n (prefix included) into buf. */
int engine_chunk_key(const struct znode *n, const uint64_t *idx, char *buf,
                     size_t len);

/* Ask every long operation to stop (shutdown): loops and waits return
 * -EINTR soon after. Async-signal-safe (one atomic store). */
void engine_stop(struct engine *e);
/* Has engine_stop been called? */
int engine_stopping(const struct engine *e);
/* -EINTR with a reason once stopping, else 0: for long loops. */
int engine_check_stop(struct engine *e, struct zerr *err);

/* Fills run for memo level `level` (decodes, layouts, rows...): tests
 * count work with it. */
uint64_t engine_fills(const struct engine *e, enum engine_level level);

/* Log one line about key (store location prepended), once per key and
 * reason: repeats are counted and summarised at most once a minute. */
void engine_log(struct engine *e, const char *key, const char *msg);

#endif
