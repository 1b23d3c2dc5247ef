/* presence.h - which chunks of an array the store holds, learned from its
 * listings instead of one probe per chunk.
 *
 * A never-written or sparse array can have far more chunk positions than
 * stored chunks (10^12 positions, 3 chunks): views need to know which are
 * stored, so that the rest is shown as the fill value by arithmetic. The
 * scan lists the array's chunk directories once (following the array's
 * key encoding: `c/1/2`, `c.1.2`, `1.2`, `1/2`) and keeps the sorted
 * linear chunk indices. An entry that exists but cannot be served (a FIFO,
 * a link leaving the store: STORE_OTHER) counts as stored, so reading it
 * fails loudly instead of showing the fill value.
 *
 * The result is immutable and reference counted (a memo object). FUSE-free. */
#ifndef ZARRFS_PRESENCE_H
#define ZARRFS_PRESENCE_H

#include <stdatomic.h>
#include <stdint.h>

#include "../util/memo.h"
#include "../zarr/meta.h"
#include "store.h"

struct presence {
  struct zobj obj;
  int complete;   /* 1: the listing covered every chunk key; 0: the store
                     cannot list this array (then every chunk may exist) */
  uint64_t n;     /* stored chunks */
  uint64_t *lin;  /* their linear indices (C order over the chunk grid),
                     sorted, distinct */
  uint64_t bytes; /* complete: the sum of the listed sizes of the stored
                     chunks (a key listed twice counts twice), or
                     STORE_SIZE_UNKNOWN when a listing did not give one */
};

/* Scan the chunk keys of array m stored under prefix ("" = root). At most
 * max_chunks are kept (-EFBIG beyond); stop (may be NULL) ends a long scan
 * with -EINTR. A store that cannot list the array gives complete = 0 (not
 * an error). New reference in *out. */
int presence_scan(struct store *s, const char *prefix, const struct zmeta *m,
                  uint64_t max_chunks, const atomic_int *stop,
                  struct presence **out, struct zerr *err);

/* Bytes held. */
size_t presence_cost(const struct presence *p);

#endif
