/* sharding.h - reading a `sharding_indexed` shard one inner chunk at a time.
 *
 * The codec itself (codecs/sharding.c, registered as an array->bytes codec)
 * can decode a whole shard. When a chain is that codec alone, the engine
 * instead treats every inner chunk as its own decode unit: it reads the
 * shard's index once (cached), then only the inner chunks a read needs.
 * Everything here is immutable codec state plus pure functions: safe from
 * any thread. */
#ifndef ZARRFS_SHARDING_H
#define ZARRFS_SHARDING_H

#include "chain.h"

struct shard_state;

/* The sharding state of chain c when c is exactly one sharding_indexed
 * codec (no array->array or bytes->bytes stage around it), else NULL.
 * Borrowed: lives as long as the chain. */
const struct shard_state *shard_of_chain(const struct chain *c);

/* The codec chain of the inner chunks (borrowed: lives as long as st). */
const struct chain *shard_inner_chain(const struct shard_state *st);

/* The inner chunk shape (ndim entries of the array) into inner. */
void shard_inner_shape(const struct shard_state *st, uint64_t *inner);

/* Read and decode the index of a shard whose decoded shape is spec->shape:
 * *out is 2*nin host-order uint64 (offset, nbytes) pairs in inner-grid C
 * order, malloc'd and owned by the caller; *nin the inner chunk count.
 * A shard shorter than its index, a bad checksum, or an index entry that
 * points outside the shard is -EIO. */
int shard_index_read(const struct shard_state *st,
                     const struct codec_spec *spec, struct bytesrc *shard,
                     const struct codec_env *env, uint64_t **out, uint64_t *nin,
                     struct zerr *err);

/* Is inner chunk c empty (the index marks it absent: it is the fill
 * value)? index comes from shard_index_read. */
int shard_inner_is_empty(const uint64_t *index, uint64_t c);

/* Decode inner chunk c (C-order index within the shard) using an index
 * from shard_index_read: the fill value for an empty entry, else the
 * inner codecs over a window of the shard. *out (caller frees) has the
 * inner chunk shape. */
int shard_inner_decode(const struct shard_state *st,
                       const struct codec_spec *spec, struct bytesrc *shard,
                       const uint64_t *index, uint64_t c,
                       const struct codec_env *env, struct abytes **out,
                       struct zerr *err);

#endif
