/* store.c - backend-independent store functions (see store.h). */
#include "store.h"

#include <stdlib.h>
#include <string.h>

/* Dispatch to the backend. */
int store_get(struct store *s, const char *key, struct bytesrc **out,
              struct zerr *err) {
  if (zkey_valid(key) < 0)
    return zerr_set(err, EINVAL, "invalid key");
  return s->ops->get(s, key, out, err);
}

/* Dispatch to the backend. */
int store_stat(struct store *s, const char *key, enum store_entry_type *type,
               uint64_t *size, struct zerr *err) {
  if (*key && zkey_valid(key) < 0)
    return zerr_set(err, EINVAL, "invalid key");
  int64_t mtime;
  return s->ops->stat(s, key, type, size, &mtime, err);
}

/* Dispatch to the backend. */
int store_stat_time(struct store *s, const char *key,
                    enum store_entry_type *type, uint64_t *size, int64_t *mtime,
                    struct zerr *err) {
  *mtime = STORE_MTIME_UNKNOWN;
  if (*key && zkey_valid(key) < 0)
    return zerr_set(err, EINVAL, "invalid key");
  return s->ops->stat(s, key, type, size, mtime, err);
}

/* The backend's version, or its source's. */
int store_version(struct store *s, const char *key, uint64_t *size,
                  uint64_t *version, struct zerr *err) {
  if (zkey_valid(key) < 0)
    return zerr_set(err, EINVAL, "invalid key");
  if (s->version)
    return s->version(s, key, size, version, err);
  struct bytesrc *b;
  ZTRY(s->ops->get(s, key, &b, err));
  *size = b->size;
  *version = b->version;
  bytesrc_unref(b);
  return *version ? 0 : zerr_set(err, ENOTSUP, "no version known");
}

/* The backend's, when it has one. */
int store_prefix_version(struct store *s, const char *prefix,
                         uint64_t *version, struct zerr *err) {
  if (!s->prefix_version)
    return zerr_set(err, ENOTSUP, "no version of many keys at once");
  return s->prefix_version(s, prefix, version, err);
}

/* Dispatch to the backend. */
int store_list(struct store *s, const char *prefix, store_list_cb cb, void *ud,
               struct zerr *err) {
  if (*prefix && zkey_valid(prefix) < 0)
    return zerr_set(err, EINVAL, "invalid key");
  return s->ops->list(s, prefix, cb, ud, err);
}

/* Whole small object into memory. */
int store_read_all(struct store *s, const char *key, size_t max, uint8_t **out,
                   size_t *len, struct zerr *err) {
  struct bytesrc *src;
  ZTRY(store_get(s, key, &src, err));
  if (src->size > max) {
    bytesrc_unref(src);
    return zerr_set(err, EFBIG, "object is larger than %zu bytes", max);
  }
  size_t n = (size_t)src->size;
  uint8_t *p = malloc(n + 1);
  if (!p) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  int rc = bytesrc_read_range(src, 0, n, p, err);
  bytesrc_unref(src);
  if (rc < 0) {
    free(p);
    return rc;
  }
  p[n] = '\0'; /* convenience for text parsers; not counted in *len */
  *out = p;
  *len = n;
  return 0;
}

/* Free via the backend; NULL-safe. */
void store_free(struct store *s) {
  if (s)
    s->ops->destroy(s);
}
