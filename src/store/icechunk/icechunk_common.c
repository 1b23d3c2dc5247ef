/* icechunk_common.c - what the parsers of Icechunk's repo info, refs,
 * snapshots and manifests share (see icechunk_common.h), and the id set
 * history walks keep (icechunk_fmt.h). No locks; what it returns is the
 * caller's. The icefmt_ prefix is the format module's across its files. */
#define _GNU_SOURCE
#include "icechunk_common.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../util/htab.h"
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

/* The slot of id in s: where it is, or the empty one where it would go. */
static size_t idset_slot(const struct icefmt_idset *s, const uint8_t id[12]) {
  size_t mask = s->nslots - 1;
  size_t i = (size_t)htab_hash_bytes(id, 12, s->seed) & mask;
  while (s->slots[i] && memcmp(s->ids[s->slots[i] - 1], id, 12))
    i = (i + 1) & mask;
  return i;
}

/* Twice the slots (at most half full), every id placed again. */
static int idset_grow(struct icefmt_idset *s) {
  size_t ns = s->nslots ? 2 * s->nslots : 64;
  uint32_t *v = ns <= UINT32_MAX ? calloc(ns, sizeof *v) : NULL;
  if (!v)
    return -ENOMEM;
  if (!s->nslots) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    s->seed = (uint64_t)(uintptr_t)v ^ (uint64_t)ts.tv_nsec ^
              ((uint64_t)ts.tv_sec << 32);
  }
  free(s->slots);
  s->slots = v;
  s->nslots = ns;
  for (size_t k = 0; k < s->n; k++)
    s->slots[idset_slot(s, s->ids[k])] = (uint32_t)(k + 1);
  return 0;
}

/* Open addressing, linear probing, kept at most half full. */
int icefmt_idset_add(struct icefmt_idset *s, const uint8_t id[12]) {
  if (s->nslots && s->slots[idset_slot(s, id)])
    return 0;
  if (2 * (s->n + 1) > s->nslots && idset_grow(s) < 0)
    return -ENOMEM;
  if (s->n == s->idcap) {
    size_t nc = s->idcap ? 2 * s->idcap : 64;
    uint8_t(*v)[12] = realloc(s->ids, nc * sizeof *v);
    if (!v)
      return -ENOMEM;
    s->ids = v;
    s->idcap = nc;
  }
  memcpy(s->ids[s->n], id, 12);
  s->slots[idset_slot(s, id)] = (uint32_t)(s->n + 1);
  s->n++;
  return 1;
}

/* Free both arrays. */
void icefmt_idset_free(struct icefmt_idset *s) {
  if (!s)
    return;
  free(s->ids);
  free(s->slots);
  memset(s, 0, sizeof *s);
}
