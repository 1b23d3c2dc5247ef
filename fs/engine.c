/* engine.c - the engine's composition: its memo, log, workers and node
 * table, built and freed together (see engine.h). */
#include "engine.h"

#include <stdlib.h>
#include <string.h>

#include "../src/store/icechunk.h"
#include "node.h"

/* One sub-engine of the table, by snapshot id. */
struct engine_sub {
  uint8_t id[12];
  struct engine *e;
};

/* Signal-safe: one lock-free atomic store. */
void engine_stop(struct engine *e) {
  atomic_store_explicit(&e->stopping, 1, memory_order_relaxed);
}

/* Work counter of a memo level. */
uint64_t engine_fills(const struct engine *e, enum engine_level level) {
  return memo_fills(e->memo, level);
}

/* Hold the index, replacing none. */
void engine_set_index(struct engine *e, struct lxindex *lx) {
  lxindex_close(e->lx);
  e->lx = lx;
}

/* Build the engine. */
int engine_new(struct store *store, const struct engine_config *cfg,
               struct engine **out, struct zerr *err) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e) {
    store_free(store);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  atomic_init(&e->stopping, 0);
  pthread_mutex_init(&e->subs_lock, NULL);
  e->cfg = *cfg;
  e->ic = icechunk_of_store(store);
  if (e->ic)
    icechunk_ref(e->ic);
  struct memo_config mc = {cfg->cache_size,
                           cfg->size_table_max ? cfg->size_table_max : 1 << 20,
                           &e->stopping};
  e->store = store;
  e->env.max_decoded = cfg->max_decoded;
  e->env.stop = &e->stopping;
  int rc = memo_new(&mc, &e->memo, err);
  if (rc == 0)
    rc = logonce_new(LOGONCE_DEFAULT_KEYS, LOGONCE_DEFAULT_SECS, &e->log, err);
  if (rc == 0)
    rc = node_table_new(store, e->log, &e->env, cfg->no_consolidated, &e->nodes,
                        err);
  if (rc < 0) {
    node_table_free(e->nodes);
    logonce_free(e->log);
    memo_free(e->memo);
    icechunk_unref(e->ic);
    pthread_mutex_destroy(&e->subs_lock);
    free(e);
    store_free(store);
    return rc;
  }
  e->window_cap = cfg->max_decoded;
  /* A unit's text is kept whole up to an eighth of the cache (so a view
   * of several units still fits it), never above the decode limit. */
  e->render_max = cfg->cache_size / 8 < cfg->max_decoded ? cfg->cache_size / 8
                                                         : cfg->max_decoded;
  e->no_consolidated = cfg->no_consolidated;
  e->lazy_sizes = cfg->lazy_sizes;
  e->views = cfg->views;
  /* Decode-ahead holds at most a quarter of the cache pinned per reader.
   * No pool (no threads, or none could be made) only means no decoding
   * ahead. */
  e->ahead_budget = cfg->cache_size / 4;
  e->cache_size = cfg->cache_size;
  if (cfg->decode_threads > 0)
    e->ahead = pool_new(cfg->decode_threads, 4 * cfg->decode_threads + 64);
  *out = e;
  return 0;
}

/* What a sub-engine owns: its node table and its store (the memo, log
 * and workers are its parent's). Called after the parent's memo is gone. */
static void sub_free(struct engine *s) {
  node_table_free(s->nodes);
  store_free(s->store);
  icechunk_unref(s->ic);
  pthread_mutex_destroy(&s->subs_lock);
  free(s);
}

/* Free everything; NULL-safe. */
void engine_free(struct engine *e) {
  if (!e)
    return;
  if (e->parent) {
    sub_free(e);
    return;
  }
  /* First the jobs (they pin memo entries), then the memo (cached units
   * borrow node forms, the sub-engines' too), then the node tables. */
  engine_stop(e);
  pool_free(e->ahead);
  memo_free(e->memo);
  for (size_t i = 0; i < e->nsubs; i++)
    sub_free(e->subs[i].e);
  free(e->subs);
  node_table_free(e->nodes);
  store_free(e->store);
  icechunk_unref(e->ic);
  lxindex_close(e->lx);
  logonce_free(e->log); /* prints the repeats not summarised yet */
  pthread_mutex_destroy(&e->subs_lock);
  free(e);
}

/* A sub-engine over store (taken): the parent's memo, log, workers and
 * limits, a node table of its own. */
static int sub_new(struct engine *p, struct store *store, struct engine **out,
                   struct zerr *err) {
  struct engine *e = calloc(1, sizeof *e);
  if (!e) {
    store_free(store);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  atomic_init(&e->stopping, 0);
  pthread_mutex_init(&e->subs_lock, NULL);
  e->parent = p;
  e->store = store;
  e->cfg = p->cfg;
  e->ic = icechunk_ref(p->ic);
  e->memo = p->memo;
  e->env = p->env;
  e->log = p->log;
  e->ahead = p->ahead;
  e->window_cap = p->window_cap;
  e->render_max = p->render_max;
  e->ahead_budget = p->ahead_budget;
  e->cache_size = p->cache_size;
  e->no_consolidated = p->no_consolidated;
  e->lazy_sizes = p->lazy_sizes;
  e->views = p->views;
  int rc = node_table_new(store, e->log, &e->env, e->no_consolidated,
                          &e->nodes, err);
  if (rc < 0) {
    e->nodes = NULL;
    sub_free(e);
    return rc;
  }
  *out = e;
  return 0;
}

/* Look up under the lock; open the snapshot outside it (a read), then
 * insert unless another thread did meanwhile. */
int engine_sub(struct engine *e, const uint8_t id[12], struct engine **out,
               struct zerr *err) {
  if (!e->ic || e->parent)
    return zerr_set(err, ENOENT, "no such file");
  pthread_mutex_lock(&e->subs_lock);
  for (size_t i = 0; i < e->nsubs; i++)
    if (!memcmp(e->subs[i].id, id, 12)) {
      *out = e->subs[i].e;
      pthread_mutex_unlock(&e->subs_lock);
      return 0;
    }
  size_t n = e->nsubs;
  pthread_mutex_unlock(&e->subs_lock);
  if (n >= ENGINE_SUBS_MAX)
    return zerr_set(err, ENFILE,
                    "more than %d snapshots shown since the mount: "
                    "remount to see others",
                    ENGINE_SUBS_MAX);
  struct store *st;
  ZTRY(icechunk_open_snapshot(e->ic, id, &st, err));
  struct engine *s = NULL;
  ZTRY(sub_new(e, st, &s, err));
  pthread_mutex_lock(&e->subs_lock);
  for (size_t i = 0; i < e->nsubs; i++)
    if (!memcmp(e->subs[i].id, id, 12)) {
      *out = e->subs[i].e;
      pthread_mutex_unlock(&e->subs_lock);
      sub_free(s); /* another thread made it first; ours was never used */
      return 0;
    }
  if (!e->subs) {
    e->subs = calloc(ENGINE_SUBS_MAX, sizeof *e->subs);
    if (!e->subs) {
      pthread_mutex_unlock(&e->subs_lock);
      sub_free(s);
      return zerr_set(err, ENOMEM, "out of memory");
    }
  }
  if (e->nsubs >= ENGINE_SUBS_MAX) {
    pthread_mutex_unlock(&e->subs_lock);
    sub_free(s);
    return zerr_set(err, ENFILE,
                    "more than %d snapshots shown since the mount: "
                    "remount to see others",
                    ENGINE_SUBS_MAX);
  }
  memcpy(e->subs[e->nsubs].id, id, 12);
  e->subs[e->nsubs++].e = s;
  *out = s;
  pthread_mutex_unlock(&e->subs_lock);
  return 0;
}
