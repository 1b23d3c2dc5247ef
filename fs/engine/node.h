/* node.h - the node table: each store prefix's metadata (zarr.json, or
 * .zarray/.zgroup), parsed once, with the array's codec chain, decode unit
 * and text form, kept for the table's life; and the hierarchy's
 * consolidated metadata (src/zarr/consolidated.h), so a hierarchy is
 * served without reading per-node metadata and lists even where the store
 * cannot.
 *
 * A node is looked up in the consolidated tables of its ancestor groups
 * from the root down; the outermost table that lists it wins (zarr-python
 * consolidates at the root; nested groups inside its table carry empty
 * tables). Nothing below an array is a node. With no_consolidated no
 * table is read and every node's own metadata is.
 *
 * The table (struct node_table, private to node.c) is an object of its
 * own: the engine holds one (struct engine.nodes), made by vnode_table_new
 * over the engine's store, log and decode settings. Its storage is behind
 * its own lock, a leaf: loading a node (store reads, ancestors' nodes,
 * logging) runs without it. Nodes are immutable once made. Also the names
 * derived from a node: chunk keys and memo keys. Needs nothing of the
 * engine (fs/engine/engine.h), which sits above it. FUSE-free. */
#ifndef ZARRFS_NODE_H
#define ZARRFS_NODE_H

#include <stdatomic.h>
#include <stdint.h>

#include "../../codecs/chain.h"
#include "../../src/store/store.h"
#include "../../src/util/logonce.h"
#include "../../src/util/memo.h"
#include "../../src/zarr/consolidated.h"
#include "../../src/zarr/meta.h"
#include "../text/text.h"

enum znode_kind {
  ZNODE_NONE = 0, /* no zarr.json here */
  ZNODE_GROUP,
  ZNODE_ARRAY,  /* zarr.json parsed as an array (views may still fail) */
  ZNODE_BROKEN, /* zarr.json present but unusable */
};

struct cfvars; /* src/zarr/cfvars.h */

/* A node, immutable once created; lives as long as its table.
 *
 * Arrays are decoded in *units*: a unit is a chunk, except when the chain
 * reports inner chunks (a shard's: codecs/chain.h, chain_inner), where a
 * unit is one inner chunk of a shard (so a read decodes the shard index
 * and only the inner chunks it needs).
 * Unit coordinates index the unit grid; chunk coordinates the chunk grid;
 * per[d] units make one chunk along dimension d (at most, in a grid with
 * listed chunk edges). Units are uspec.shape[d] long along d, except when
 * they are the chunks of a dimension with listed edges (form.edge[d]): see
 * node_unit_start and the functions after it. */
struct znode {
  enum znode_kind kind;
  char *path;             /* store prefix: "" for the root, else "a/b" */
  int zarr_format;        /* 3 (zarr.json), 2 (.zarray, .zgroup), or 0: no
                             metadata found, so neither is known */
  struct zmeta *meta;     /* arrays: parsed metadata */
  struct chain *chain;    /* arrays: NULL when views cannot work */
  char *view_error;       /* why views fail (logged once); NULL if they work */
  struct codec_spec spec; /* decoded representation of one chunk */
  const struct chain *shard;      /* units are inner chunks of shards: the
                                     chain of one (chain_inner; borrowed
                                     from chain), or NULL: units are
                                     chunks */
  struct codec_spec uspec;        /* decoded representation of one unit */
  uint64_t ugrid[ZMETA_MAX_DIMS]; /* units per dimension */
  uint64_t per[ZMETA_MAX_DIMS];   /* units per chunk per dimension */
  struct text_form form;    /* how units become text: the text data type (the
                               data type, or string (numpy U) / bytes (numpy
                               S) for the fixed-width kinds, converted after
                               decoding), the unit shape, the fill text */
  struct text_note note;    /* arrays: told what a unit's text shows in place
                               of its data (fs/text/text.h), logged naming the
                               chunk; form.note of this node and of its
                               views' nodes points here */
  struct zcons *cons;       /* groups: their consolidated metadata (owned), or
                               NULL */
  json_t *attrs;            /* arrays: the attributes (V3
                               `attributes`, V2 .zattrs; owned reference), or
                               NULL */
  uint64_t meta_hash;       /* arrays: a hash of the metadata document (what
                               the persistent index keys units by), or 0 when
                               it could not be made */
  uint64_t attrs_hash;      /* CF and CSV nodes: a hash of the attributes
                               their text is drawn from (the persistent index
                               keys their units by it; a V2 array's .zattrs
                               are not in its .zarray); 0 otherwise */
  const struct znode *cf;   /* arrays whose attributes carry a CF encoding
                               (src/zarr/cf.h): the node of the CF views
                               (values.cf.txt, K.cf.txt), owned by this one.
                               It is this node with form.cf set and its own
                               fill text; being another address it has memo
                               keys of its own. NULL: no CF views */
  const struct znode *base; /* the views' nodes (cf, csv): the array's
                               node they were made from, whose memo keys
                               their decoded bytes share (ELEVEL_DECODED);
                               NULL for every other node */
  uint64_t join;            /* the CF node of a character array (numpy S1
                               whose last dimension xarray stacks:
                               src/zarr/cfvars.h): the length of the
                               strings its characters are joined into. The
                               node is the array seen with that dimension
                               of length 1 and elements |S<join> (its own
                               meta, spec and fill, owned; the chunk grid,
                               keys and units are the array's, one chunk
                               along the last dimension); 0 otherwise */
  _Atomic(struct cfvars *) vars; /* groups: their variables as xarray's
                             decode_cf_variables sees them, made when an
                             array of the group first needs them
                             (fs/engine/vnode.c) and published once: the one
                             field set after a node is made; NULL until
                             then */
  const struct znode *csv; /* arrays of two or more dimensions: the node of
                              rows.csv, owned by this one: this node with
                              form.csv set (and form.cf borrowed from the
                              CF node, if any), strings as their CSV
                              fields, its own fill text and memo keys.
                              NULL: no rows.csv */
  int transient;           /* broken only for now (a server failing, out of
                              memory): not kept in the node table, asked
                              again next time */
  int errcode;             /* transient: the positive errno its views fail
                              with (ENOMEM, ETIMEDOUT, ...); 0: EIO */
  struct znode *next;      /* transient nodes: the table's list */
  /* The one field that changes: bumped (no lock) by node_sizes_changed
   * when a decode contradicts a unit's text size learned before
   * (fs/engine/unit.c); layouts, region sizes and rows are keyed by it
   * (fs/engine/region.c), so none built on the old size is used again. */
  _Atomic uint64_t sizes_gen;
};

/* Unit u along dimension d of array node n: where it starts, its decoded
 * length, its elements inside the array; and the unit holding coordinate
 * x (< shape). */
static inline uint64_t node_unit_start(const struct znode *n, int d,
                                       uint64_t u) {
  return zmeta_axis_start(n->form.edge[d], n->uspec.shape[d], u);
}
static inline uint64_t node_unit_len(const struct znode *n, int d, uint64_t u) {
  return zmeta_axis_len(n->form.edge[d], n->uspec.shape[d], u);
}
static inline uint64_t node_unit_ext(const struct znode *n, int d, uint64_t u) {
  return zmeta_axis_ext(n->form.edge[d], n->uspec.shape[d], n->meta->shape[d],
                        u);
}
static inline uint64_t node_unit_of(const struct znode *n, int d, uint64_t x) {
  return zmeta_axis_of(n->form.edge[d], n->ugrid[d], n->uspec.shape[d], x);
}

/* The units [*lo, *hi) of chunk c along dimension d. */
void node_chunk_units(const struct znode *n, int d, uint64_t c, uint64_t *lo,
                      uint64_t *hi);

/* The decoded representation of chunk cidx: n->spec, or, when chunks
 * differ in shape (listed edges), *tmp filled with this one's shape. */
const struct codec_spec *node_chunk_spec(const struct znode *n,
                                         const uint64_t *cidx,
                                         struct codec_spec *tmp);

struct node_table;

/* A new, empty node table reading metadata from store, logging through
 * log, making fill text with env (all borrowed: they outlive the table).
 * no_consolidated: read no consolidated metadata. *out is the caller's
 * (node_table_free). */
int node_table_new(struct store *store, struct logonce *log,
                   const struct codec_env *env, int no_consolidated,
                   struct node_table **out, struct zerr *err);
/* node_table_new whose arrays have their views' nodes (CF views,
 * rows.csv: vnode.c, which the table then calls back). What the engine
 * makes. */
int vnode_table_new(struct store *store, struct logonce *log,
                    const struct codec_env *env, int no_consolidated,
                    struct node_table **out, struct zerr *err);
/* Free the table and every node of it (no node may be in use); NULL-safe. */
void node_table_free(struct node_table *t);

/* The node at store prefix `path` (borrowed, valid for the table's life).
 * Never fails: a directory without zarr.json is ZNODE_NONE. */
const struct znode *node_get(struct node_table *t, const char *path);

/* The array node whose tree holds store key `key` (the nearest ancestor
 * directory that is an array or broken node), and the key relative to it.
 * NULL when none. */
const struct znode *node_array_of(struct node_table *t, const char *key,
                                  const char **rel);

/* 0 when views of n can be read (an array with a codec chain), else EIO
 * with the reason (the node's view_error). */
int node_check(const struct znode *n, struct zerr *err);

/* Is path (non-empty) a node or a directory on the way to one, according
 * to the consolidated tables of its ancestors? */
int node_cons_is_dir(struct node_table *t, const char *path);

/* The distinct child names of directory path ("" = root) named by the
 * consolidated tables of path and its ancestors, in strcmp order. 0 or
 * -ENOMEM. */
int node_cons_children(struct node_table *t, const char *path,
                       zcons_child_cb cb, void *ud, struct zerr *err);

/* The member names of a group: what the store lists (directories) and
 * consolidated metadata names. */
struct node_members {
  char **v; /* names (owned), sorted in strcmp order, each once */
  size_t n, cap;
  int oom;        /* a name could not be kept */
  char *unlisted; /* why a store that cannot list (plain HTTP) did not
                     list the group (owned), or NULL */
};

/* The members of the group at path ("" = root) into *m (zeroed by the
 * caller; node_members_free, also after a failure). 0, or a transient
 * failure with err set (a listing failing for now, out of memory); a
 * listing failing otherwise leaves the names consolidated metadata
 * gives. */
int node_members_load(struct node_table *t, const char *path,
                      struct node_members *m, struct zerr *err);

/* Free the names of m; NULL-safe. */
void node_members_free(struct node_members *m);

/* Store key of chunk idx of node n (prefix included) into buf. */
int node_chunk_key(const struct znode *n, const uint64_t *idx, char *buf,
                   size_t len);

/* A unit of n turned out to have another text size than the one learned
 * (a record of the persistent index, or a size learned before the store
 * changed): every size of n built on it is made anew (sizes_gen). */
void node_sizes_changed(const struct znode *n);
/* n's sizes_gen now. */
static inline uint64_t node_sizes_gen(const struct znode *n) {
  return atomic_load_explicit(&n->sizes_gen, memory_order_acquire);
}

/* Memo key of kind `level` (a memo level: fs/engine/engine.h's enum
 * engine_level) about node n for coordinates idx (ndim words; none when
 * idx is NULL) plus `extra` words (tags, indexes). */
void node_key(struct memo_key *k, unsigned level, const struct znode *n,
              const uint64_t *idx, const uint64_t *extra, int nextra);

#endif
