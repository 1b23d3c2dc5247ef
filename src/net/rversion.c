/* rversion.c - the version of a remote object: the validator met first
 * (ETag, Last-Modified, size) is remembered per URL in the remote memo,
 * asked for with a precondition (If-Match, If-Unmodified-Since) from then
 * on, and a different one marks the object changed while mounted.
 *
 * Locks: rsrc.vlock (a leaf: guards have_v, vhash, cond of a source); the
 * remote memo's lock through memo_value (nothing held meanwhile). */
#define _GNU_SOURCE
#include "remote.h"
#include "remote_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "../util/htab.h"

/* The version a response names (ETag, else Last-Modified, else the size)
 * as a hash (0: none), and in cond the precondition that asks for it
 * ("" when none can: a weak ETag, the size). */
uint64_t rversion_of(const struct http_meta *m, char *cond) {
  cond[0] = '\0';
  if (m->etag[0]) {
    if (strncmp(m->etag, "W/", 2))
      snprintf(cond, RV_COND_MAX, "If-Match: %s", m->etag);
    return htab_hash_bytes(m->etag, strlen(m->etag), 0x45544147u) | 1;
  }
  if (m->modified[0]) {
    snprintf(cond, RV_COND_MAX, "If-Unmodified-Since: %s", m->modified);
    return htab_hash_bytes(m->modified, strlen(m->modified), 0x4c4d4f44u) | 1;
  }
  if (m->total != UINT64_MAX)
    return htab_hash_bytes(&m->total, sizeof m->total, 0x53495a45u) | 1;
  return 0;
}

/* The object of s changed while mounted: remembered for every source of
 * it, and every read of it fails from now on. */
int rversion_changed(struct rsrc *s, struct zerr *err) {
  atomic_store(&s->changed, 1);
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_CHANGED;
  memo_value_put(s->r->memo, &k, 1);
  return zerr_set(err, EIO,
                  "%s: object changed while mounted (a different version "
                  "answered); remount to read the new one",
                  s->url);
}

/* Is s's object known to have changed? */
int rversion_is_changed(struct rsrc *s) {
  if (atomic_load(&s->changed))
    return 1;
  struct memo_key k = s->key;
  k.v[0] = 0;
  k.v[1] = TAG_CHANGED;
  uint64_t v;
  if (memo_value_peek(s->r->memo, &k, &v) && v) {
    atomic_store(&s->changed, 1);
    return 1;
  }
  return 0;
}

/* memo value fill: the version met first becomes the object's. */
static int version_fill(void *ctx, uint64_t *value, struct zerr *err) {
  (void)err;
  *value = *(const uint64_t *)ctx;
  return 0;
}

/* Bytes of version vh (cond asks for it) are about to be used by s. The
 * object's version is the first one any of its sources met (remembered
 * by URL, with the sizes); another one means the object changed. */
int rversion_check(struct rsrc *s, uint64_t vh, const char *cond,
                   struct zerr *err) {
  if (!vh)
    return 0;
  pthread_mutex_lock(&s->vlock);
  int have = s->have_v;
  uint64_t mine = s->vhash;
  pthread_mutex_unlock(&s->vlock);
  if (!have) {
    struct memo_key k = s->key;
    k.v[0] = 0;
    k.v[1] = TAG_VERSION;
    int rc = memo_value(s->r->memo, &k, version_fill, &vh, &mine, err);
    if (rc < 0)
      return rc;
    pthread_mutex_lock(&s->vlock);
    if (!s->have_v) {
      s->have_v = 1;
      s->vhash = mine;
    }
    mine = s->vhash;
    pthread_mutex_unlock(&s->vlock);
  }
  if (mine != vh)
    return rversion_changed(s, err);
  pthread_mutex_lock(&s->vlock);
  if (!s->cond[0] && cond[0])
    snprintf(s->cond, sizeof s->cond, "%s", cond);
  pthread_mutex_unlock(&s->vlock);
  return 0;
}

/* s's request, asking for the version it reads once it knows one (cond:
 * room for the header, RV_COND_MAX). */
void rversion_request(struct rsrc *s, struct http_req *q, char *cond) {
  *q = s->req;
  pthread_mutex_lock(&s->vlock);
  if (s->have_v && s->cond[0]) {
    memcpy(cond, s->cond, RV_COND_MAX);
    q->cond = cond;
  }
  pthread_mutex_unlock(&s->vlock);
}
