/* cache.h - a byte-budgeted LRU cache of decoded data, shared by all FUSE
 * threads, and a small table of learned view sizes.
 *
 * Values are reference-counted objects (struct zobj embedded first in the
 * cached type). zcache_get returns a new reference the caller drops with
 * zobj_put; eviction only drops the cache's own reference, so a value in use
 * by a reader stays valid until that reader is done.
 *
 * Lock order: a cache's mutex is a leaf lock; no callback runs under it
 * except zobj destruction, which takes no other lock. */
#ifndef ZARRFS_CACHE_H
#define ZARRFS_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct zobj {
  _Atomic long refs;
  void (*destroy)(struct zobj *o); /* frees the containing object */
};

/* Initialise with one reference held by the caller. */
void zobj_init(struct zobj *o, void (*destroy)(struct zobj *));
/* New reference; returns o. NULL-safe. */
struct zobj *zobj_get(struct zobj *o);
/* Drop a reference; NULL-safe. */
void zobj_put(struct zobj *o);

struct zcache;

/* Cache holding at most budget bytes (by the cost callers declare). */
struct zcache *zcache_new(size_t budget);
/* Free the cache and drop its references; NULL-safe. */
void zcache_free(struct zcache *c);
/* Look up key; returns a new reference or NULL. */
struct zobj *zcache_get(struct zcache *c, const char *key);
/* Insert (or replace) key -> o with the given cost; the cache takes its own
 * reference (the caller keeps theirs). Entries larger than the whole budget
 * are not kept. */
void zcache_put(struct zcache *c, const char *key, struct zobj *o, size_t cost);
/* Bytes currently charged, and the budget. */
size_t zcache_used(struct zcache *c);
size_t zcache_budget(struct zcache *c);

struct zsizes;
/* A table key -> uint64 (learned view sizes) holding at most max_entries;
 * the oldest entries go first. Thread-safe. */
struct zsizes *zsizes_new(size_t max_entries);
void zsizes_free(struct zsizes *t);
/* 1 and *val when known, 0 otherwise. */
int zsizes_get(struct zsizes *t, const char *key, uint64_t *val);
void zsizes_put(struct zsizes *t, const char *key, uint64_t val);

#endif
