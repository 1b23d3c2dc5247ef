/* rblock.c - the bottom of the remote module: the memo keys of remote
 * objects and the questions about their cached blocks that every other
 * file of it asks (remote.c, rflight.c, rprefetch.c, rstream.c,
 * rversion.c all call down to here; this file calls none of them:
 * tests/calls.sh). */
#include "remote.h"
#include "remote_int.h"

#include <stdlib.h>
#include <string.h>

#include "../util/htab.h"

/* Is s a URL the remote layer reads (see remote.h)? */
int remote_is_url(const char *s) {
  return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8) ||
         !strncmp(s, "s3://", 5) || !strncmp(s, "gs://", 5) ||
         !strncmp(s, "az://", 5);
}

/* ---- keys ---- */

/* The identity words of url into k (v[2..]): the URL itself when it fits,
 * else its length and two independent 64-bit hashes. */
void remote_url_key(const char *url, uint64_t tag, struct memo_key *k) {
  memset(k, 0, sizeof *k);
  k->level = MEMO_LEVEL_SOURCE;
  size_t n = strlen(url);
  size_t room = (MEMO_KEY_WORDS - 3) * sizeof(uint64_t);
  k->v[1] = tag;
  if (n <= room) {
    k->v[2] = n;
    memcpy(&k->v[3], url, n);
    k->n = (uint8_t)(3 + (n + 7) / 8);
  } else {
    k->v[2] = n | (1ull << 63);
    k->v[3] = htab_hash_bytes(url, n, 0x243f6a8885a308d3ull);
    k->v[4] = htab_hash_bytes(url, n, 0x13198a2e03707344ull);
    k->n = 5;
  }
}

/* Same object? (keys compared without their block word) */
int remote_same_object(const struct memo_key *a, const struct memo_key *b) {
  return a->n == b->n &&
         !memcmp(&a->v[1], &b->v[1], (size_t)(a->n - 1) * sizeof a->v[0]);
}

/* ---- fetching blocks ---- */

/* A cached block is one allocation. */
void remote_rblock_destroy(struct zobj *o) { free(o); }

/* Is a block already there (ready)? */
int remote_block_cached(struct remote *r, const struct memo_key *okey,
                        uint64_t block) {
  struct memo_key k = *okey;
  k.v[0] = block;
  /* A block whose fill is running counts: the fill's transfer may have
   * ended (and left the flights) before the memo holds the block, and a
   * claim in that moment would ask the server for it again. */
  return memo_present(r->memo, &k);
}

/* Blocks from b on that are missing, up to last (inclusive) and one
 * request's worth. */
uint32_t remote_missing_run(struct remote *r, const struct memo_key *okey,
                            uint64_t b, uint64_t last) {
  uint64_t max = r->cfg.max_request / r->cfg.block_size;
  if (max < 1)
    max = 1;
  uint32_t n = 1;
  while (b + n <= last && n < max && !remote_block_cached(r, okey, b + n))
    n++;
  return n;
}
