/* rflight.c - blocks in flight: every fetch of a run of blocks claims them
 * here first, so that a reader or a prefetch worker that needs a block
 * another transfer is bringing waits for that transfer and takes the
 * block from it, instead of asking the server for the same bytes again.
 *
 * Locks: remote.flock (a leaf but for memo_peek, whose memo lock it may
 * take under it; the memo never calls back into this file). */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The open flight of okey that holds block b (under r->flock), or NULL. */
static struct rflight *covering_locked(struct remote *r,
                                       const struct memo_key *okey,
                                       uint64_t b) {
  for (struct rflight *f = r->flights; f; f = f->next)
    if (f->block <= b && b < f->block + f->n &&
        remote_same_object(&f->key, okey))
      return f;
  return NULL;
}

/* Claim blocks from b on (up to last, at most max of them) of object okey:
 * RFLIGHT_JOINED with *out another transfer bringing b (a reference),
 * RFLIGHT_CACHED when b is cached (unless ignore_cache), else
 * RFLIGHT_CLAIMED with *out a new flight of the run of blocks that are
 * neither cached nor in flight (its owner must rflight_end it), or -ENOMEM. */
int rflight_claim(struct remote *r, const struct memo_key *okey, uint64_t b,
                  uint64_t last, uint32_t max, int ignore_cache,
                  struct rflight **out) {
  *out = NULL;
  if (max < 1)
    max = 1;
  pthread_mutex_lock(&r->flock);
  struct rflight *f = covering_locked(r, okey, b);
  if (f) {
    f->refs++;
    f->joiners++;
    pthread_mutex_unlock(&r->flock);
    *out = f;
    return RFLIGHT_JOINED;
  }
  if (!ignore_cache && remote_block_cached(r, okey, b)) {
    pthread_mutex_unlock(&r->flock);
    return RFLIGHT_CACHED;
  }
  uint32_t n = 1;
  while (b + n <= last && n < max && !covering_locked(r, okey, b + n) &&
         !remote_block_cached(r, okey, b + n))
    n++;
  f = calloc(1, sizeof *f + n * sizeof f->blk[0]);
  if (!f) {
    pthread_mutex_unlock(&r->flock);
    return -ENOMEM;
  }
  f->key = *okey;
  f->key.v[0] = 0;
  f->block = b;
  f->n = n;
  f->refs = 1;
  f->open = 1;
  f->total = UINT64_MAX;
  f->next = r->flights;
  r->flights = f;
  pthread_mutex_unlock(&r->flock);
  *out = f;
  return RFLIGHT_CLAIMED;
}

/* Take f out of the table (under r->flock): nobody joins it from now. */
static void unlink_locked(struct remote *r, struct rflight *f) {
  if (!f->open)
    return;
  for (struct rflight **p = &r->flights; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      break;
    }
  f->open = 0;
}

/* Free f (no reference left). */
static void flight_free(struct rflight *f) {
  for (uint32_t i = 0; i < f->n; i++)
    if (f->blk[i])
      zobj_put(&f->blk[i]->obj);
  free(f);
}

/* Close f to newcomers; 1 when someone joined it (and waits for its
 * blocks). */
int rflight_close(struct remote *r, struct rflight *f) {
  pthread_mutex_lock(&r->flock);
  unlink_locked(r, f);
  int joined = f->joiners > 0;
  pthread_mutex_unlock(&r->flock);
  return joined;
}

/* The owner's end of f: rc (err when negative), the object size the
 * answer named (UINT64_MAX: none), and f->blk filled by the owner (the
 * references are f's). Wakes the waiters; drops the owner's reference. */
void rflight_end(struct remote *r, struct rflight *f, int rc,
                 const struct zerr *err, uint64_t total) {
  pthread_mutex_lock(&r->flock);
  unlink_locked(r, f);
  if (rc == 0 && f->delivered) {
    struct rdelivered *d = &r->delivered[r->ndelivered++ % RFLIGHT_DELIVERED];
    d->key = f->key;
    d->block = f->block;
    d->n = f->n;
  }
  f->rc = rc;
  if (rc < 0 && err)
    f->err = *err;
  f->total = total;
  f->done = 1;
  pthread_cond_broadcast(&r->fdone);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&r->flock);
  if (last)
    flight_free(f);
}

/* Wait until f is done; its result (err set when negative). The owner
 * always ends its flights (a transfer gives up with -EINTR on stop). */
int rflight_wait(struct remote *r, struct rflight *f, struct zerr *err) {
  pthread_mutex_lock(&r->flock);
  while (!f->done)
    pthread_cond_wait(&r->fdone, &r->flock);
  int rc = f->rc;
  if (rc < 0 && err)
    *err = f->err;
  pthread_mutex_unlock(&r->flock);
  return rc;
}

/* Block b of a finished flight f (borrowed while f is held), or NULL when
 * f did not bring it whole. */
struct rblock *rflight_block(struct rflight *f, uint64_t b) {
  if (!f->done || b < f->block || b >= f->block + f->n)
    return NULL;
  return f->blk[b - f->block];
}

/* Take an extra reference to f (its owner's or a joiner's). */
void rflight_ref(struct remote *r, struct rflight *f) {
  pthread_mutex_lock(&r->flock);
  f->refs++;
  pthread_mutex_unlock(&r->flock);
}

/* Drop a reference; the last frees f and its blocks. NULL-safe. */
void rflight_put(struct remote *r, struct rflight *f) {
  if (!f)
    return;
  pthread_mutex_lock(&r->flock);
  int last = --f->refs == 0;
  pthread_mutex_unlock(&r->flock);
  if (last)
    flight_free(f);
}

/* Is block b of okey in flight? 1 and in *end the first block after that
 * flight. delivered: also a block that a reader's large read had brought
 * straight into its buffer lately (what it decoded is cached above: a
 * prefetch of it would fetch bytes nobody reads). */
int rflight_covered(struct remote *r, const struct memo_key *okey, uint64_t b,
                    int delivered, uint64_t *end) {
  pthread_mutex_lock(&r->flock);
  struct rflight *f = covering_locked(r, okey, b);
  int found = f != NULL;
  if (f)
    *end = f->block + f->n;
  uint64_t nd = r->ndelivered < RFLIGHT_DELIVERED ? r->ndelivered
                                                  : RFLIGHT_DELIVERED;
  for (uint64_t i = 0; delivered && !found && i < nd; i++) {
    const struct rdelivered *d = &r->delivered[i];
    if (d->block <= b && b < d->block + d->n &&
        remote_same_object(&d->key, okey)) {
      found = 1;
      *end = d->block + d->n;
    }
  }
  pthread_mutex_unlock(&r->flock);
  return found;
}
