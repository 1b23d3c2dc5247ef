/* memo.c - single-flight, budgeted, pinnable memo (see memo.h).
 *
 * An entry is in the hash table from the moment its fill starts until it
 * is evicted (or, for a transient failure or an object too large to keep,
 * until its fill ends or its last pin goes). An entry out of the table but
 * still pinned is "dead": it is freed at its last unpin. Unpinned ready
 * objects and remembered failures sit on the object LRU (byte budget);
 * ready values sit on the value LRU (count bound) whatever their pins,
 * since a value is copied out under the lock. */
#define _GNU_SOURCE /* PTHREAD_MUTEX_ADAPTIVE_NP */
#include "memo.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cancel.h"
#include "htab.h"

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

enum { M_PENDING = 0, M_READY, M_FAILED };
enum { LRU_NONE = 0, LRU_OBJ, LRU_VAL, LRU_SCAN };

/* How long a waiter sleeps before looking at the stop flag again. */
#define MEMO_WAIT_SLICE_NS 50000000L

struct memo_entry {
  struct htab_node hn;
  struct memo_entry *prev, *next; /* LRU links; next also chains victims */
  uint8_t state;                  /* M_PENDING, M_READY, M_FAILED */
  uint8_t is_value;
  uint8_t lru; /* which list it is on */
  uint8_t in_table;
  uint8_t scan;   /* memo_scan: kept unpinned within scan_budget only */
  uint8_t waited; /* M_PENDING: a thread sleeps on cond for it */
  uint32_t pins;
  int code;           /* M_FAILED: positive errno */
  char *msg;          /* M_FAILED: the reason (owned) */
  uint64_t failed_ns; /* M_FAILED: when (CLOCK_MONOTONIC) */
  struct zobj *obj;   /* M_READY object: the memo's reference */
  uint64_t value;     /* M_READY value */
  size_t cost;        /* bytes charged (objects, failures) */
  uint8_t level, n;
  const void *owner;
  uint64_t v[]; /* n words */
};

struct lru {
  struct memo_entry *head, *tail; /* head: most recently used */
  size_t count;
};

struct memo {
  pthread_mutex_t lock; /* guards everything below but fills (leaf lock) */
  pthread_cond_t cond;  /* broadcast when a fill someone waits for ends */
  struct htab tab;
  struct lru objs, vals, scans;
  size_t used, pinned, budget, max_values;
  uint64_t fail_keep_ns;         /* memo_config.fail_keep_ns */
  size_t scan_used, scan_budget; /* the scans list's bytes, and its bound */
  const atomic_int *stop;
  _Atomic uint64_t fills[MEMO_MAX_LEVEL + 1];
  _Atomic uint64_t hits;  /* lookups answered from the table (memo_hits) */
  _Atomic uint64_t waits; /* ...of them, those that waited for a fill */
};

/* The level of the fill running on this thread (0: none): the bug guard of
 * the wait rule. Per thread and only set during a fill, so not shared
 * state. */
static _Thread_local unsigned memo_level_now;

/* Hash the used part of a key. */
static uint64_t key_hash(const struct memo_key *k) {
  uint64_t h = htab_hash_bytes(&k->owner, sizeof k->owner,
                               (uint64_t)k->level << 8 | k->n);
  return htab_hash_bytes(k->v, (size_t)k->n * sizeof k->v[0], h);
}

/* htab equality: same level, owner and words. */
static int key_eq(const struct htab_node *hn, const void *key) {
  const struct memo_entry *e = (const struct memo_entry *)hn;
  const struct memo_key *k = key;
  return e->level == k->level && e->n == k->n && e->owner == k->owner &&
         !memcmp(e->v, k->v, (size_t)k->n * sizeof k->v[0]);
}

/* A new memo. */
int memo_new(const struct memo_config *cfg, struct memo **out,
             struct zerr *err) {
  struct memo *m = calloc(1, sizeof *m);
  if (!m || htab_init(&m->tab, 1024) < 0) {
    free(m);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&m->cond, &ca);
  pthread_condattr_destroy(&ca);
  /* Every unit a reader or a worker touches takes this lock several
   * times for a few hundred nanoseconds: spin a little before sleeping,
   * or each contended take is a futex call and two thread switches
   * (glibc's adaptive kind; elsewhere a plain mutex). */
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
#ifdef PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
  pthread_mutex_init(&m->lock, &ma);
  pthread_mutexattr_destroy(&ma);
  m->budget = cfg->budget;
  m->scan_budget = cfg->scan_budget;
  m->max_values = cfg->max_values ? cfg->max_values : 1;
  m->stop = cfg->stop;
  m->fail_keep_ns = cfg->fail_keep_ns;
  *out = m;
  return 0;
}

/* Release an entry's contents and the entry (no lock held). */
static void entry_destroy(struct memo_entry *e) {
  zobj_put(e->obj);
  free(e->msg);
  free(e);
}

/* Free everything. */
void memo_free(struct memo *m) {
  if (!m)
    return;
  struct htab_node *hn;
  while ((hn = htab_pop(&m->tab)))
    entry_destroy((struct memo_entry *)hn);
  htab_fini(&m->tab);
  pthread_cond_destroy(&m->cond);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

/* ---- LRU lists (lock held) ---- */

/* The list an entry belongs on. */
static struct lru *lru_of(struct memo *m, int which) {
  return which == LRU_VAL ? &m->vals : which == LRU_SCAN ? &m->scans : &m->objs;
}

/* Put e at the head of list `which`. */
static void lru_push(struct memo *m, struct memo_entry *e, int which) {
  struct lru *l = lru_of(m, which);
  e->prev = NULL;
  e->next = l->head;
  if (l->head)
    l->head->prev = e;
  l->head = e;
  if (!l->tail)
    l->tail = e;
  l->count++;
  e->lru = (uint8_t)which;
  if (which != LRU_VAL)
    m->used += e->cost;
  if (which == LRU_SCAN)
    m->scan_used += e->cost;
}

/* Take e off its list. */
static void lru_unlink(struct memo *m, struct memo_entry *e) {
  if (e->lru == LRU_NONE)
    return;
  struct lru *l = lru_of(m, e->lru);
  if (e->prev)
    e->prev->next = e->next;
  else
    l->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    l->tail = e->prev;
  l->count--;
  if (e->lru != LRU_VAL)
    m->used -= e->cost;
  if (e->lru == LRU_SCAN)
    m->scan_used -= e->cost;
  e->prev = e->next = NULL;
  e->lru = LRU_NONE;
}

/* Mark as recently used. */
static void lru_touch(struct memo *m, struct memo_entry *e) {
  int which = e->lru;
  if (which != LRU_NONE) {
    lru_unlink(m, e);
    lru_push(m, e, which);
  }
}

/* Take e out of the table; unpinned entries join the victims (freed after
 * the lock is dropped), pinned ones die at their last unpin. */
static void drop_locked(struct memo *m, struct memo_entry *e,
                        struct memo_entry **victims) {
  lru_unlink(m, e);
  if (e->in_table) {
    htab_remove(&m->tab, &e->hn);
    e->in_table = 0;
  }
  if (!e->pins) {
    e->next = *victims;
    *victims = e;
  }
}

/* Evict least recently used entries until both bounds hold. Pinned
 * objects count against the byte budget too: what readers use right now
 * leaves that much less room for what they may use again, so memory stays
 * near the budget (above it only while pins alone exceed it). */
static void evict_locked(struct memo *m, struct memo_entry **victims) {
  while (m->scan_used > m->scan_budget && m->scans.tail)
    drop_locked(m, m->scans.tail, victims);
  /* what a scan passed goes before what was kept for its own sake */
  while (m->used + m->pinned > m->budget && m->scans.tail)
    drop_locked(m, m->scans.tail, victims);
  while (m->used + m->pinned > m->budget && m->objs.tail)
    drop_locked(m, m->objs.tail, victims);
  while (m->vals.count > m->max_values && m->vals.tail)
    drop_locked(m, m->vals.tail, victims);
}

/* Free victims outside the lock (destructors may be slow). */
static void free_victims(struct memo_entry *v) {
  while (v) {
    struct memo_entry *next = v->next;
    entry_destroy(v);
    v = next;
  }
}

/* One more pin: a ready object leaves the LRU and counts as pinned. */
static void pin_locked(struct memo *m, struct memo_entry *e) {
  if (!e->pins && e->state == M_READY && !e->is_value) {
    lru_unlink(m, e);
    m->pinned += e->cost;
  }
  e->pins++;
}

/* One pin less; at zero the entry goes where its state says. */
static void unpin_locked(struct memo *m, struct memo_entry *e,
                         struct memo_entry **victims) {
  if (--e->pins)
    return;
  if (e->state == M_READY && !e->is_value)
    m->pinned -= e->cost;
  if (!e->in_table) { /* dead: nobody can find it any more */
    e->next = *victims;
    *victims = e;
    return;
  }
  if (e->state == M_READY && e->is_value)
    return; /* already on the value list */
  int scan = e->state == M_READY && e->scan;
  if (e->state == M_READY && e->cost > (scan ? m->scan_budget : m->budget)) {
    drop_locked(m, e, victims); /* too large to keep unpinned */
    return;
  }
  /* a ready object or a remembered failure */
  lru_push(m, e, scan ? LRU_SCAN : LRU_OBJ);
  evict_locked(m, victims);
}

/* ---- fills ---- */

/* Sleep until e's fill ends; -EINTR when the stop flag is raised, or the
 * calling thread's request is abandoned (cancel.h), first. */
static int wait_filled(struct memo *m, struct memo_entry *e) {
  while (e->state == M_PENDING) {
    if (cancel_stopped(m->stop))
      return -EINTR;
    e->waited = 1;
    cancel_sleep(&m->cond, &m->lock, CLOCK_MONOTONIC, MEMO_WAIT_SLICE_NS);
  }
  return 0;
}

/* CLOCK_MONOTONIC now, in nanoseconds. */
static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Has remembered failure e answered for long enough (fail_keep_ns)? */
static int failure_expired(const struct memo *m, const struct memo_entry *e) {
  return m->fail_keep_ns && now_ns() - e->failed_ns >= m->fail_keep_ns;
}

/* Copy a remembered failure to the caller. */
static int failure_of(const struct memo_entry *e, struct zerr *err) {
  return zerr_set(err, e->code, "%s", e->msg ? e->msg : "failed");
}

/* The wait rule (memo.h): a fill may only wait for lower levels. */
static int check_level(const struct memo_key *k, struct zerr *err) {
  if (k->n > MEMO_KEY_WORDS || k->level == 0 || k->level > MEMO_MAX_LEVEL)
    return zerr_set(err, EINVAL, "memo: malformed key (bug)");
  if (memo_level_now && k->level >= memo_level_now)
    return zerr_set(err, EDEADLK,
                    "memo: a fill of level %u waited for level %u (bug)",
                    memo_level_now, (unsigned)k->level);
  return 0;
}

/* A new pending entry for k, pinned once by its filler, in the table. */
static struct memo_entry *begin_fill_locked(struct memo *m,
                                            const struct memo_key *k,
                                            uint64_t h, int is_value) {
  struct memo_entry *e = calloc(1, sizeof *e + (size_t)k->n * sizeof k->v[0]);
  if (!e)
    return NULL;
  e->hn.hash = h;
  e->level = k->level;
  e->n = k->n;
  e->owner = k->owner;
  memcpy(e->v, k->v, (size_t)k->n * sizeof k->v[0]);
  e->is_value = (uint8_t)is_value;
  e->pins = 1;
  e->in_table = 1;
  htab_insert(&m->tab, &e->hn);
  return e;
}

/* Record the outcome of a fill (lock held) and wake the waiters. A
 * transient failure leaves the table at once so the next caller retries. */
static void end_fill_locked(struct memo *m, struct memo_entry *e, int rc,
                            const struct zerr *ferr,
                            struct memo_entry **victims) {
  if (rc == 0) {
    e->state = M_READY;
    if (e->is_value) {
      lru_push(m, e, LRU_VAL);
      evict_locked(m, victims);
    } else {
      m->pinned += e->cost; /* the filler's pin */
    }
  } else {
    e->state = M_FAILED;
    e->failed_ns = now_ns();
    e->code = -rc;
    e->msg = strdup(ferr->msg);
    e->cost = sizeof *e + (e->msg ? strlen(e->msg) : 0);
    if (zerr_is_transient(e->code)) {
      htab_remove(&m->tab, &e->hn);
      e->in_table = 0;
    }
  }
  /* Only a fill someone waits for wakes the sleepers: a broadcast for
   * every fill (200,000 small units in a `cat`, decoded by the workers
   * while the reader waits for one of them) woke the reader for each
   * and put it back to sleep, a futex call and two thread switches. */
  if (e->waited)
    pthread_cond_broadcast(&m->cond);
}

/* Run a fill with the level guard set. */
static int run_fill(struct memo *m, const struct memo_key *k, int is_value,
                    memo_fill_fn ofill, memo_value_fn vfill, void *ctx,
                    struct memo_entry *e, struct zerr *ferr) {
  unsigned saved = memo_level_now;
  memo_level_now = k->level;
  struct zobj *obj = NULL;
  size_t cost = 0;
  uint64_t value = 0;
  int rc = is_value ? vfill(ctx, &value, ferr) : ofill(ctx, &obj, &cost, ferr);
  memo_level_now = saved;
  atomic_fetch_add_explicit(&m->fills[k->level], 1, memory_order_relaxed);
  if (rc < 0) {
    zobj_put(obj);
    if (!ferr->code)
      zerr_set(ferr, -rc, "failed");
    return rc;
  }
  if (!is_value && !obj)
    return zerr_set(ferr, EIO, "memo: fill returned no object (bug)");
  e->obj = obj;
  e->cost = cost + sizeof *e;
  e->value = value;
  return 0;
}

/* The shared body of memo_get and memo_value. On success an object entry
 * stays pinned (returned in *pinned); a value is copied to *value. */
static int memo_lookup_or_fill(struct memo *m, const struct memo_key *k,
                               int is_value, memo_fill_fn ofill,
                               memo_value_fn vfill, void *ctx,
                               struct memo_entry **pinned, uint64_t *value,
                               struct zerr *err) {
  ZTRY(check_level(k, err));
  uint64_t h = key_hash(k);
  struct memo_entry *victims = NULL;
  pthread_mutex_lock(&m->lock);
  struct memo_entry *e = (struct memo_entry *)htab_find(&m->tab, h, key_eq, k);
  if (e && e->is_value != is_value) {
    pthread_mutex_unlock(&m->lock);
    return zerr_set(err, EINVAL, "memo: key used as object and value (bug)");
  }
  if (e && e->state == M_FAILED && failure_expired(m, e)) {
    drop_locked(m, e, &victims); /* tried again: filled below */
    e = NULL;
  }
  if (e)
    atomic_fetch_add_explicit(&m->hits, 1, memory_order_relaxed);
  if (e && e->state == M_FAILED) {
    lru_touch(m, e);
    int rc = failure_of(e, err);
    pthread_mutex_unlock(&m->lock);
    return rc;
  }
  if (e) {
    pin_locked(m, e);
    if (e->state == M_PENDING)
      atomic_fetch_add_explicit(&m->waits, 1, memory_order_relaxed);
    if (wait_filled(m, e) < 0) {
      unpin_locked(m, e, &victims);
      pthread_mutex_unlock(&m->lock);
      free_victims(victims);
      int rc = cancel_check(m->stop, err);
      return rc ? rc : zerr_set(err, EINTR, "interrupted");
    }
  } else {
    e = begin_fill_locked(m, k, h, is_value);
    if (!e) {
      pthread_mutex_unlock(&m->lock);
      return zerr_set(err, ENOMEM, "out of memory");
    }
    pthread_mutex_unlock(&m->lock);
    struct zerr ferr = {0};
    int rc = run_fill(m, k, is_value, ofill, vfill, ctx, e, &ferr);
    pthread_mutex_lock(&m->lock);
    end_fill_locked(m, e, rc, &ferr, &victims);
  }
  int rc = 0;
  if (e->state == M_FAILED) {
    rc = failure_of(e, err);
  } else if (is_value) {
    lru_touch(m, e);
    *value = e->value;
  } else {
    *pinned = e;
    e = NULL; /* the caller's pin now */
  }
  if (e)
    unpin_locked(m, e, &victims);
  pthread_mutex_unlock(&m->lock);
  free_victims(victims);
  return rc;
}

/* See memo.h. */
int memo_get(struct memo *m, const struct memo_key *k, memo_fill_fn fill,
             void *ctx, struct memo_ref **out, struct zerr *err) {
  struct memo_entry *e = NULL;
  ZTRY(memo_lookup_or_fill(m, k, 0, fill, NULL, ctx, &e, NULL, err));
  *out = (struct memo_ref *)e;
  return 0;
}

/* Ready and an object: pin it. */
int memo_peek(struct memo *m, const struct memo_key *k, struct memo_ref **out) {
  if (k->n > MEMO_KEY_WORDS)
    return 0;
  uint64_t h = key_hash(k);
  pthread_mutex_lock(&m->lock);
  struct memo_entry *e = (struct memo_entry *)htab_find(&m->tab, h, key_eq, k);
  int found = e && !e->is_value && e->state == M_READY;
  if (found) {
    pin_locked(m, e);
    *out = (struct memo_ref *)e;
  }
  pthread_mutex_unlock(&m->lock);
  return found;
}

/* An object there or being filled (a failure remembered is not). */
int memo_present(struct memo *m, const struct memo_key *k) {
  if (k->n > MEMO_KEY_WORDS)
    return 0;
  uint64_t h = key_hash(k);
  pthread_mutex_lock(&m->lock);
  struct memo_entry *e = (struct memo_entry *)htab_find(&m->tab, h, key_eq, k);
  int found =
      e && !e->is_value && (e->state == M_READY || e->state == M_PENDING);
  pthread_mutex_unlock(&m->lock);
  return found;
}

/* The object behind a pin. */
struct zobj *memo_obj(const struct memo_ref *r) {
  return ((const struct memo_entry *)r)->obj;
}

/* The bytes charged for a pinned object. */
size_t memo_cost(const struct memo_ref *r) {
  return ((const struct memo_entry *)r)->cost;
}

/* Unpin. */
void memo_release(struct memo *m, struct memo_ref *r) {
  if (!r)
    return;
  struct memo_entry *victims = NULL;
  pthread_mutex_lock(&m->lock);
  unpin_locked(m, (struct memo_entry *)r, &victims);
  pthread_mutex_unlock(&m->lock);
  free_victims(victims);
}

/* See memo.h. */
void memo_scan(struct memo *m, struct memo_ref *r) {
  if (!r)
    return;
  pthread_mutex_lock(&m->lock);
  ((struct memo_entry *)r)->scan = 1; /* pinned: on no list yet */
  pthread_mutex_unlock(&m->lock);
}

/* See memo.h. */
int memo_value(struct memo *m, const struct memo_key *k, memo_value_fn fill,
               void *ctx, uint64_t *out, struct zerr *err) {
  return memo_lookup_or_fill(m, k, 1, NULL, fill, ctx, NULL, out, err);
}

/* Insert or update a ready value; leave pending fills alone. */
void memo_value_put(struct memo *m, const struct memo_key *k, uint64_t v) {
  if (k->n > MEMO_KEY_WORDS || k->level == 0 || k->level > MEMO_MAX_LEVEL)
    return;
  uint64_t h = key_hash(k);
  struct memo_entry *victims = NULL;
  pthread_mutex_lock(&m->lock);
  struct memo_entry *e = (struct memo_entry *)htab_find(&m->tab, h, key_eq, k);
  if (!e) {
    e = begin_fill_locked(m, k, h, 1);
    if (e) {
      e->pins = 0;
      e->state = M_READY;
      e->value = v;
      lru_push(m, e, LRU_VAL);
      evict_locked(m, &victims);
    }
  } else if (e->is_value && e->state == M_READY) {
    e->value = v;
    lru_touch(m, e);
  }
  pthread_mutex_unlock(&m->lock);
  free_victims(victims);
}

/* Insert a ready object if the key is absent; otherwise drop obj. */
void memo_put(struct memo *m, const struct memo_key *k, struct zobj *obj,
              size_t cost) {
  if (k->n > MEMO_KEY_WORDS || k->level == 0 || k->level > MEMO_MAX_LEVEL) {
    zobj_put(obj);
    return;
  }
  uint64_t h = key_hash(k);
  struct memo_entry *victims = NULL;
  pthread_mutex_lock(&m->lock);
  struct memo_entry *e = (struct memo_entry *)htab_find(&m->tab, h, key_eq, k);
  if (!e && (e = begin_fill_locked(m, k, h, 0))) {
    e->pins = 0;
    e->state = M_READY;
    e->obj = obj;
    obj = NULL;
    e->cost = cost + sizeof *e;
    if (e->cost > m->budget) {
      drop_locked(m, e, &victims);
    } else {
      lru_push(m, e, LRU_OBJ);
      evict_locked(m, &victims);
    }
  }
  pthread_mutex_unlock(&m->lock);
  free_victims(victims);
  zobj_put(obj);
}

/* Known value? */
int memo_value_peek(struct memo *m, const struct memo_key *k, uint64_t *out) {
  if (k->n > MEMO_KEY_WORDS)
    return 0;
  uint64_t h = key_hash(k);
  pthread_mutex_lock(&m->lock);
  struct memo_entry *e = (struct memo_entry *)htab_find(&m->tab, h, key_eq, k);
  int found = e && e->is_value && e->state == M_READY;
  if (found) {
    *out = e->value;
    lru_touch(m, e);
  }
  pthread_mutex_unlock(&m->lock);
  return found;
}

/* Bytes on the scans list. */
size_t memo_scan_used(struct memo *m) {
  pthread_mutex_lock(&m->lock);
  size_t u = m->scan_used;
  pthread_mutex_unlock(&m->lock);
  return u;
}

/* Bytes on the object LRU. */
size_t memo_used(struct memo *m) {
  pthread_mutex_lock(&m->lock);
  size_t u = m->used;
  pthread_mutex_unlock(&m->lock);
  return u;
}

/* See memo.h. */
void memo_hold(struct memo *m, long add) {
  struct memo_entry *victims = NULL;
  pthread_mutex_lock(&m->lock);
  if (add < 0 && (size_t)-add > m->pinned)
    add = -(long)m->pinned; /* (a caller's bug: never below zero) */
  m->pinned += (size_t)add;
  if (add > 0)
    evict_locked(m, &victims);
  pthread_mutex_unlock(&m->lock);
  free_victims(victims);
}

/* Bytes of pinned ready objects. */
size_t memo_pinned(struct memo *m) {
  pthread_mutex_lock(&m->lock);
  size_t p = m->pinned;
  pthread_mutex_unlock(&m->lock);
  return p;
}

/* Fill counter of a level. */
/* See memo.h. */
uint64_t memo_hits(const struct memo *m) {
  return atomic_load_explicit(&m->hits, memory_order_relaxed);
}

/* See memo.h. */
uint64_t memo_waits(const struct memo *m) {
  return atomic_load_explicit(&m->waits, memory_order_relaxed);
}

uint64_t memo_fills(const struct memo *m, unsigned level) {
  return level <= MEMO_MAX_LEVEL
             ? atomic_load_explicit(&m->fills[level], memory_order_relaxed)
             : 0;
}
