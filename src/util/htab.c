/* htab.c - intrusive chained hash table (see htab.h). */
#include "htab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Round up to a power of two, at least 16. */
static size_t pow2_at_least(size_t n) {
  size_t p = 16;
  while (p < n && p < ((size_t)1 << (sizeof(size_t) * 8 - 2)))
    p <<= 1;
  return p;
}

/* Allocate the bucket array. */
int htab_init(struct htab *t, size_t hint) {
  t->nbuckets = pow2_at_least(hint);
  t->count = 0;
  t->pop_from = 0;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  return t->buckets ? 0 : -ENOMEM;
}

/* Drop the buckets. */
void htab_fini(struct htab *t) {
  free(t->buckets);
  t->buckets = NULL;
  t->nbuckets = t->count = t->pop_from = 0;
}

/* Walk one chain. */
struct htab_node *htab_find(const struct htab *t, uint64_t hash, htab_eq_fn eq,
                            const void *key) {
  for (struct htab_node *n = t->buckets[hash & (t->nbuckets - 1)]; n;
       n = n->next)
    if (n->hash == hash && eq(n, key))
      return n;
  return NULL;
}

/* Double the buckets; on allocation failure keep the old array. */
static void grow(struct htab *t) {
  size_t nb = t->nbuckets * 2;
  struct htab_node **b = calloc(nb, sizeof *b);
  if (!b)
    return;
  for (size_t i = 0; i < t->nbuckets; i++) {
    struct htab_node *n = t->buckets[i];
    while (n) {
      struct htab_node *next = n->next;
      n->next = b[n->hash & (nb - 1)];
      b[n->hash & (nb - 1)] = n;
      n = next;
    }
  }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = nb;
  t->pop_from = 0;
}

/* Push on its chain, growing first when the table is full. */
void htab_insert(struct htab *t, struct htab_node *n) {
  if (t->count >= t->nbuckets)
    grow(t);
  size_t i = n->hash & (t->nbuckets - 1);
  struct htab_node **head = &t->buckets[i];
  n->next = *head;
  *head = n;
  t->count++;
  if (i < t->pop_from)
    t->pop_from = i;
}

/* Unlink from its chain. */
void htab_remove(struct htab *t, struct htab_node *n) {
  struct htab_node **pp = &t->buckets[n->hash & (t->nbuckets - 1)];
  while (*pp != n)
    pp = &(*pp)->next;
  *pp = n->next;
  n->next = NULL;
  t->count--;
}

/* First entry of the first non-empty chain, searched from where the last
 * pop stopped (a scan from bucket 0 each time made teardown of a million
 * entries quadratic: minutes). */
struct htab_node *htab_pop(struct htab *t) {
  for (size_t i = t->pop_from; t->count && i < t->nbuckets; i++)
    if (t->buckets[i]) {
      struct htab_node *n = t->buckets[i];
      t->buckets[i] = n->next;
      n->next = NULL;
      t->count--;
      t->pop_from = i;
      return n;
    }
  return NULL;
}

/* One round of a 64-bit finaliser (splitmix64's). */
static uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/* Eight bytes at a time, then the tail; mixed so that nearby coordinates
 * land in different buckets. */
uint64_t htab_hash_bytes(const void *p, size_t n, uint64_t seed) {
  const uint8_t *b = p;
  uint64_t h = mix64(seed ^ (n * 0x9e3779b97f4a7c15ULL));
  while (n >= 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    h = mix64(h ^ w) + 0x9e3779b97f4a7c15ULL;
    b += 8;
    n -= 8;
  }
  uint64_t w = 0;
  memcpy(&w, b, n);
  return mix64(h ^ w ^ ((uint64_t)n << 56));
}

/* A NUL-terminated string. */
uint64_t htab_hash_str(const char *s) {
  return htab_hash_bytes(s, strlen(s), 0x5a17);
}
