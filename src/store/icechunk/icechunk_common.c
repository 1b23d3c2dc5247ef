/* icechunk_common.c - what the parsers of Icechunk's repo info, refs,
 * snapshots and manifests share (see icechunk_common.h). No locks; what
 * it returns is the caller's. The icefmt_ prefix is the format module's
 * across its files. */
#define _GNU_SOURCE
#include "icechunk_common.h"

#include <stdlib.h>

#include "../store.h"

/* A malloc'd copy of n bytes with NUL bytes shown as spaces. */
char *icefmt_dup_text(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p)
    return NULL;
  for (size_t i = 0; i < n; i++)
    p[i] = s[i] ? s[i] : ' ';
  p[n] = '\0';
  return p;
}

/* Read a whole metadata file of type want and decode its payload. */
int icefmt_read_file(struct store *s, const char *key, enum icefmt_type want,
                     size_t max_decode, uint8_t **fb, size_t *len,
                     struct zerr *err) {
  uint8_t *raw;
  size_t n;
  int rc = store_read_all(s, key, max_decode, &raw, &n, err);
  if (rc < 0)
    return zerr_prefix(err, "%s: ", key);
  rc = icefmt_decode(raw, n, want, max_decode, fb, len, NULL, err);
  free(raw);
  return rc < 0 ? zerr_prefix(err, "%s: ", key) : 0;
}
