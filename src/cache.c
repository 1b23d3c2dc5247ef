/* cache.c - byte-budgeted LRU of reference-counted objects, and the learned
 * size table (see cache.h). Both are a chained hash table plus an intrusive
 * list, behind one mutex each. */
#include "cache.h"

#include <stdlib.h>
#include <string.h>

/* Start with one reference. */
void zobj_init(struct zobj *o, void (*destroy)(struct zobj *)) {
  atomic_init(&o->refs, 1);
  o->destroy = destroy;
}

/* Another reference. */
struct zobj *zobj_get(struct zobj *o) {
  if (o)
    atomic_fetch_add_explicit(&o->refs, 1, memory_order_relaxed);
  return o;
}

/* Drop one; the last destroys. */
void zobj_put(struct zobj *o) {
  if (o && atomic_fetch_sub_explicit(&o->refs, 1, memory_order_acq_rel) == 1)
    o->destroy(o);
}

/* FNV-1a: keys are short paths. */
static uint64_t key_hash(const char *k) {
  uint64_t h = 1469598103934665603ULL;
  for (; *k; k++)
    h = (h ^ (uint8_t)*k) * 1099511628211ULL;
  return h;
}

/* ---- LRU cache ---- */

struct centry {
  struct centry *hnext;       /* hash chain */
  struct centry *prev, *next; /* LRU list, head = most recent */
  uint64_t hash;
  struct zobj *obj; /* the cache's reference */
  size_t cost;
  char key[];
};

struct zcache {
  pthread_mutex_t lock; /* guards everything below */
  struct centry **buckets;
  size_t nbuckets;
  size_t count;
  struct centry *head, *tail;
  size_t used, budget;
};

/* Allocate with a fixed bucket array (grows by rehash). */
struct zcache *zcache_new(size_t budget) {
  struct zcache *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->nbuckets = 1024;
  c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
  if (!c->buckets) {
    free(c);
    return NULL;
  }
  pthread_mutex_init(&c->lock, NULL);
  c->budget = budget;
  return c;
}

/* Unlink from the LRU list. */
static void lru_unlink(struct zcache *c, struct centry *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    c->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    c->tail = e->prev;
  e->prev = e->next = NULL;
}

/* Put at the head of the LRU list. */
static void lru_push(struct zcache *c, struct centry *e) {
  e->prev = NULL;
  e->next = c->head;
  if (c->head)
    c->head->prev = e;
  c->head = e;
  if (!c->tail)
    c->tail = e;
}

/* Remove e from hash and list; returns its object for release outside the
 * lock (destruction may be slow). */
static struct zobj *entry_remove(struct zcache *c, struct centry *e) {
  struct centry **pp = &c->buckets[e->hash % c->nbuckets];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  lru_unlink(c, e);
  c->used -= e->cost;
  c->count--;
  struct zobj *o = e->obj;
  free(e);
  return o;
}

/* Find an entry (lock held). */
static struct centry *entry_find(struct zcache *c, const char *key,
                                 uint64_t h) {
  for (struct centry *e = c->buckets[h % c->nbuckets]; e; e = e->hnext)
    if (e->hash == h && !strcmp(e->key, key))
      return e;
  return NULL;
}

/* Double the bucket array when chains get long (lock held). */
static void maybe_grow(struct zcache *c) {
  if (c->count < c->nbuckets * 2)
    return;
  size_t nb = c->nbuckets * 2;
  struct centry **b = calloc(nb, sizeof *b);
  if (!b)
    return; /* keep working with longer chains */
  for (size_t i = 0; i < c->nbuckets; i++) {
    struct centry *e = c->buckets[i];
    while (e) {
      struct centry *n = e->hnext;
      e->hnext = b[e->hash % nb];
      b[e->hash % nb] = e;
      e = n;
    }
  }
  free(c->buckets);
  c->buckets = b;
  c->nbuckets = nb;
}

/* Free everything; NULL-safe. */
void zcache_free(struct zcache *c) {
  if (!c)
    return;
  while (c->head)
    zobj_put(entry_remove(c, c->head));
  free(c->buckets);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* Look up and mark as recently used. */
struct zobj *zcache_get(struct zcache *c, const char *key) {
  uint64_t h = key_hash(key);
  pthread_mutex_lock(&c->lock);
  struct centry *e = entry_find(c, key, h);
  struct zobj *o = NULL;
  if (e) {
    lru_unlink(c, e);
    lru_push(c, e);
    o = zobj_get(e->obj);
  }
  pthread_mutex_unlock(&c->lock);
  return o;
}

/* Insert, then evict from the tail until within budget. */
void zcache_put(struct zcache *c, const char *key, struct zobj *o,
                size_t cost) {
  if (cost > c->budget)
    return;
  size_t klen = strlen(key);
  struct centry *ne = malloc(sizeof *ne + klen + 1);
  if (!ne)
    return; /* not caching is always correct */
  memcpy(ne->key, key, klen + 1);
  ne->hash = key_hash(key);
  ne->cost = cost;
  ne->obj = zobj_get(o);

  struct zobj *victims[64];
  int nv = 0;
  pthread_mutex_lock(&c->lock);
  struct centry *old = entry_find(c, key, ne->hash);
  if (old)
    victims[nv++] = entry_remove(c, old);
  maybe_grow(c);
  ne->hnext = c->buckets[ne->hash % c->nbuckets];
  c->buckets[ne->hash % c->nbuckets] = ne;
  lru_push(c, ne);
  c->used += cost;
  c->count++;
  for (;;) {
    while (c->used > c->budget && c->tail != ne && nv < 64)
      victims[nv++] = entry_remove(c, c->tail);
    if (nv < 64 || c->used <= c->budget) {
      pthread_mutex_unlock(&c->lock);
      for (int i = 0; i < nv; i++)
        zobj_put(victims[i]);
      return;
    }
    /* Many small victims: release this batch outside the lock, go on. */
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < nv; i++)
      zobj_put(victims[i]);
    nv = 0;
    pthread_mutex_lock(&c->lock);
    if (!entry_find(c, key, ne->hash)) { /* replaced meanwhile */
      pthread_mutex_unlock(&c->lock);
      return;
    }
  }
}

/* Bytes charged. */
size_t zcache_used(struct zcache *c) {
  pthread_mutex_lock(&c->lock);
  size_t u = c->used;
  pthread_mutex_unlock(&c->lock);
  return u;
}

/* Configured budget. */
size_t zcache_budget(struct zcache *c) { return c->budget; }

/* ---- learned sizes ---- */

struct sentry {
  struct sentry *hnext;
  struct sentry *older, *newer; /* FIFO for eviction */
  uint64_t hash, val;
  char key[];
};

struct zsizes {
  pthread_mutex_t lock; /* guards everything below */
  struct sentry **buckets;
  size_t nbuckets, count, max;
  struct sentry *oldest, *newest;
};

/* Table with room for max_entries. */
struct zsizes *zsizes_new(size_t max_entries) {
  struct zsizes *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->max = max_entries ? max_entries : 1;
  t->nbuckets = 4096;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  if (!t->buckets) {
    free(t);
    return NULL;
  }
  pthread_mutex_init(&t->lock, NULL);
  return t;
}

/* Free all; NULL-safe. */
void zsizes_free(struct zsizes *t) {
  if (!t)
    return;
  struct sentry *e = t->oldest;
  while (e) {
    struct sentry *n = e->newer;
    free(e);
    e = n;
  }
  free(t->buckets);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* Lookup. */
int zsizes_get(struct zsizes *t, const char *key, uint64_t *val) {
  uint64_t h = key_hash(key);
  int found = 0;
  pthread_mutex_lock(&t->lock);
  for (struct sentry *e = t->buckets[h % t->nbuckets]; e; e = e->hnext)
    if (e->hash == h && !strcmp(e->key, key)) {
      *val = e->val;
      found = 1;
      break;
    }
  pthread_mutex_unlock(&t->lock);
  return found;
}

/* Drop the oldest entry (lock held). */
static void sizes_evict(struct zsizes *t) {
  struct sentry *e = t->oldest;
  struct sentry **pp = &t->buckets[e->hash % t->nbuckets];
  while (*pp != e)
    pp = &(*pp)->hnext;
  *pp = e->hnext;
  t->oldest = e->newer;
  if (t->oldest)
    t->oldest->older = NULL;
  else
    t->newest = NULL;
  t->count--;
  free(e);
}

/* Insert or update. */
void zsizes_put(struct zsizes *t, const char *key, uint64_t val) {
  uint64_t h = key_hash(key);
  pthread_mutex_lock(&t->lock);
  for (struct sentry *e = t->buckets[h % t->nbuckets]; e; e = e->hnext)
    if (e->hash == h && !strcmp(e->key, key)) {
      e->val = val;
      pthread_mutex_unlock(&t->lock);
      return;
    }
  size_t klen = strlen(key);
  struct sentry *e = malloc(sizeof *e + klen + 1);
  if (e) {
    if (t->count >= t->max)
      sizes_evict(t);
    memcpy(e->key, key, klen + 1);
    e->hash = h;
    e->val = val;
    e->hnext = t->buckets[h % t->nbuckets];
    t->buckets[h % t->nbuckets] = e;
    e->newer = NULL;
    e->older = t->newest;
    if (t->newest)
      t->newest->newer = e;
    t->newest = e;
    if (!t->oldest)
      t->oldest = e;
    t->count++;
  }
  pthread_mutex_unlock(&t->lock);
}
