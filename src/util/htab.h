/* htab.h - the one hash table of zarrfs: intrusive, chained, growable.
 *
 * Used by the memo (decoded data, layouts, learned sizes: src/util/memo.c) and
 * by the engine's node table. The caller embeds a struct htab_node in its
 * entry, computes the hash, and supplies an equality callback; the table
 * never allocates entries and never frees them. Not thread-safe: each
 * owner guards its table with a lock of its own (named in its struct).
 *
 * Growth doubles the bucket array when entries outnumber buckets; a failed
 * growth (out of memory) keeps the table working with longer chains. */
#ifndef ZARRFS_HTAB_H
#define ZARRFS_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab_node {
  struct htab_node *next; /* chain */
  uint64_t hash;
};

struct htab {
  struct htab_node **buckets;
  size_t nbuckets; /* a power of two */
  size_t count;
  size_t pop_from; /* htab_pop: every bucket below this one is empty */
};

/* An empty table with about `hint` buckets. 0 or -ENOMEM. */
int htab_init(struct htab *t, size_t hint);
/* Free the bucket array (not the entries); NULL-safe on a zeroed table. */
void htab_fini(struct htab *t);

/* Does entry n hold `key`? (n->hash already matched.) */
typedef int (*htab_eq_fn)(const struct htab_node *n, const void *key);

/* The entry with this hash for which eq(entry, key) holds, or NULL. */
struct htab_node *htab_find(const struct htab *t, uint64_t hash, htab_eq_fn eq,
                            const void *key);
/* Insert n (n->hash set by the caller); duplicates are the caller's
 * business. Never fails. */
void htab_insert(struct htab *t, struct htab_node *n);
/* Unlink n, which must be in the table. */
void htab_remove(struct htab *t, struct htab_node *n);
/* Unlink and return any one entry (for teardown), or NULL when empty.
 * Popping every entry costs O(entries + buckets) in all. */
struct htab_node *htab_pop(struct htab *t);

/* Hashes: 64-bit, good enough to spread typed keys and paths. */
uint64_t htab_hash_bytes(const void *p, size_t n, uint64_t seed);
uint64_t htab_hash_str(const char *s);

#endif
