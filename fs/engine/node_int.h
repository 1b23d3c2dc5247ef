/* node_int.h - the node table's insides, shared by node.c and vnode.c
 * (the views' nodes of an array) and by no one else.
 *
 * Lock order: node_table.lock is a leaf; loading a node (store reads,
 * ancestors' nodes, logging) runs without it. */
#ifndef ZARRFS_NODE_INT_H
#define ZARRFS_NODE_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>

#include "../../src/util/err.h"
#include "../../src/util/htab.h"
#include "../../src/zarr/consolidated.h"

struct codec_env;
struct logonce;
struct store;
struct zmeta;
struct znode;

/* Largest metadata document read. */
#define NODE_MAX_META (64u << 20)

/* The node table (see node.h). */
/* What node.c calls in vnode.c, above it: vnode_table_new hands it down,
 * so that calls go one way (vnode.c -> node.c; tests/calls.sh). */
struct node_views {
  /* vnode_set_cf, vnode_set_csv, vnode_free */
  int (*set_cf)(struct node_table *t, struct znode *n, const char *key,
                struct zerr *err);
  int (*set_csv)(struct node_table *t, struct znode *n, const char *key,
                 struct zerr *err);
  void (*free)(struct znode *n);
};

struct node_table {
  /* vnode.c's (static); NULL (node_table_new alone): no views' nodes */
  const struct node_views *views;
  struct store *store;         /* borrowed: where metadata is read */
  struct logonce *log;         /* borrowed: where failures are said */
  const struct codec_env *env; /* borrowed: decode settings (fill text) */
  int no_consolidated;         /* ignore consolidated metadata */
  pthread_mutex_t lock;        /* guards nodes and transient */
  struct htab nodes;           /* path -> struct node_slot (guarded by
                                  lock); nodes live as long as the table */
  struct znode *transient;     /* nodes not remembered (transient failures,
                                  a full table, no memory for a slot),
                                  guarded by lock; freed with the table,
                                  since callers borrow nodes for its life */
};

/* Log one line about key (store location prepended), once per reason. */
void node_log(struct node_table *t, const char *key, const char *msg);

/* Join a prefix and a name into a store key; its length, or
 * -ENAMETOOLONG. */
int node_key_join(char *buf, size_t len, const char *prefix, const char *name);

/* The consolidated document of the node at store prefix path (non-empty),
 * looked up in its ancestors' tables: its text (borrowed; lives as long
 * as the table), length and kind; the store key of the document that
 * consolidated it goes to src_key. NULL when no table lists path. */
const char *node_cons_doc(struct node_table *t, const char *path, size_t *len,
                          enum zcons_kind *kind, char *src_key, size_t src_cap);

/* The metadata and attributes of the array at path, without making its
 * node (nothing logged, no chain built): *meta (zmeta_free) and *attrs
 * (a new reference, or NULL), both NULL when path is no array that
 * parses. 0, or a transient failure with err set. */
int node_peek(struct node_table *t, const char *path, struct zmeta **meta,
              json_t **attrs, struct zerr *err);

/* vnode.c: give array n (whose metadata key is key) the node of its CF
 * views, when it has some (struct znode.cf). 0, or a transient failure
 * with err set. */
int vnode_set_cf(struct node_table *t, struct znode *n, const char *key,
                 struct zerr *err);

/* vnode.c: give an array of two or more dimensions the node of rows.csv
 * (struct znode.csv). 0, or -ENOMEM with err set. */
int vnode_set_csv(struct node_table *t, struct znode *n, const char *key,
                  struct zerr *err);

/* vnode.c: free the CF views' node c of an array; NULL-safe. */
void vnode_free_cf(struct znode *c);

/* vnode.c: free what the views' nodes of n and a group's variables
 * (struct znode.vars) hold; NULL-safe. */
void vnode_free(struct znode *n);

#endif
