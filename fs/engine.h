/* engine.h - the read engine of one mount: the store, the node table
 * (parsed zarr.json + codec chain per array), and decoded chunks behind the
 * byte-budgeted cache.
 *
 * Everything here is FUSE-free so tests and a future command-line front end
 * drive the same code. The engine is the daemon's context: it owns every
 * piece of shared mutable state (caches, tables), each behind its own lock.
 *
 * Errors that come from the data (corrupt chunk, bad metadata, unsupported
 * codec) are logged once, here, where the store path and key are known; the
 * same failure seen again is answered from the cache without a new line. */
#ifndef ZARRFS_ENGINE_H
#define ZARRFS_ENGINE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../codecs/chain.h"
#include "../src/cache.h"
#include "../src/consolidated.h"
#include "../src/meta.h"
#include "../src/store.h"

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
  struct dtype text_dtype; /* how views render elements: the data type, or
                              string (numpy U) / bytes (numpy S) for the
                              fixed-width kinds, converted after decoding */
  struct zcons *cons;      /* groups: their consolidated metadata (owned), or
                              NULL (see fs/hier.h) */
};

struct engine_config {
  size_t cache_size;     /* decoded-data cache budget, bytes */
  size_t max_decoded;    /* largest in-memory intermediate, bytes */
  size_t size_table_max; /* entries in the learned-size table */
  int no_consolidated;   /* -o consolidated=no: ignore consolidated metadata
                            (zarr.json consolidated_metadata, .zmetadata) and
                            read every node's own metadata */
};

struct engine {
  struct store *store;  /* owned */
  struct zcache *cache; /* decoded chunks, layouts, errors */
  struct zsizes *sizes; /* learned view sizes */
  struct codec_env env;
  pthread_mutex_t nodes_lock;      /* guards the node table (leaf lock) */
  struct node_slot **node_buckets; /* chained hash: path -> znode */
  size_t node_nbuckets, node_count;
  pthread_mutex_t flight_lock; /* guards the in-flight list (leaf lock) */
  pthread_cond_t flight_cond;
  struct flight *flights;
  int no_consolidated; /* from engine_config */
  atomic_int stopping; /* set by engine_stop (signal-safe); long loops and
                          waits check it and give up with -EINTR */
};

/* Create an engine over store (takes ownership of store). */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err);
/* Free; NULL-safe. */
void engine_free(struct engine *e);

/* The node at store prefix `path` (borrowed, valid for the engine's life).
 * Never fails: a directory without zarr.json is ZNODE_NONE. */
const struct znode *engine_node(struct engine *e, const char *path);

/* The array node whose tree holds store key `key` (the nearest ancestor
 * directory that is an array or broken node), and the key relative to it.
 * NULL when none. */
const struct znode *engine_array_of(struct engine *e, const char *key,
                                    const char **rel);

/* A decoded unit ready for text views (reference-counted; zobj_put). */
struct chunk_text {
  struct zobj obj;
  struct abytes *ab;            /* decoded elements (in unit C order) */
  uint64_t idx[ZMETA_MAX_DIMS]; /* unit coordinates */
  uint64_t ext[ZMETA_MAX_DIMS]; /* in-bounds extent per dimension */
  uint64_t nin;                 /* in-bounds elements */
  uint64_t *line_off;           /* nin+1 text offsets of in-bounds elements */
  size_t cost;
};

/* Decoded unit `idx` of array node n (missing chunks and empty inner chunks
 * give the fill value). Returns a new reference in *out. */
int engine_unit(struct engine *e, const struct znode *n, const uint64_t *idx,
                struct chunk_text **out, struct zerr *err);

/* The element bytes of a variable-length decoded unit (new reference):
 * its data source, or, when its data codecs were deferred, the decoded data
 * section from the cache (decoding it once, single-flight). */
int engine_unit_data(struct engine *e, const struct znode *n,
                     const struct chunk_text *ct, struct bytesrc **out,
                     struct zerr *err);

/* Text size of unit idx, from the learned-size table when known. */
int engine_unit_size(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t *size, struct zerr *err);

/* Cache-key name of unit idx: its chunk's store key, plus "#<inner chunk>"
 * for inner chunks of a shard. Returns the length or -ENAMETOOLONG. */
int engine_unit_key(const struct znode *n, const uint64_t *idx, char *buf,
                    size_t len);

/* Store key of chunk idx of node n (prefix included) into buf. */
int engine_chunk_key(const struct znode *n, const uint64_t *idx, char *buf,
                     size_t len);

/* Ask every long operation to stop (shutdown): loops and waits return
 * -EINTR soon after. Async-signal-safe (one atomic store). */
void engine_stop(struct engine *e);
/* Has engine_stop been called? */
int engine_stopping(const struct engine *e);

/* Log one line about key (store location prepended). */
void engine_log(struct engine *e, const char *key, const char *msg);

#endif
