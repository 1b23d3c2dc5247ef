/* engine.c - the engine's composition: its memo, log, workers and node
 * table, built and freed together (see engine.h). */
#include "engine.h"

#include <stdlib.h>

#include "node.h"

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

/* Free everything; NULL-safe. */
void engine_free(struct engine *e) {
  if (!e)
    return;
  /* First the jobs (they pin memo entries), then the memo (cached units
   * borrow node forms). */
  engine_stop(e);
  pool_free(e->ahead);
  memo_free(e->memo);
  node_table_free(e->nodes);
  store_free(e->store);
  lxindex_close(e->lx);
  logonce_free(e->log); /* prints the repeats not summarised yet */
  free(e);
}
