/* chain.h - a Zarr codec chain: build it from a `codecs` list once per array,
 * then decode chunks with it from any thread.
 *
 * The chain is immutable after chain_build; chain_decode may be called
 * concurrently. It is also used recursively: `zarrs.vlen` builds chains for
 * its index (1-D uint32/uint64) and data (1-D uint8), `sharding_indexed` for
 * its inner chunks. */
#ifndef ZARRFS_CHAIN_H
#define ZARRFS_CHAIN_H

#include "codec.h"

struct chain;

/* Build from a JSON list of codecs for arrays described by `decoded` (only
 * dtype, fill and ndim are used at build time). Unknown codecs fail with
 * -ENOTSUP and "unsupported codec 'NAME'" unless marked must_understand:
 * false, in which case they are skipped. Order is checked: a2a*, one a2b,
 * b2b*. On success *out is owned by the caller (chain_free). */
int chain_build(json_t *codecs, const struct codec_spec *decoded,
                struct chain **out, struct zerr *err);

/* Decode one encoded chunk (`encoded`, borrowed) for chunk `spec` into a new
 * abytes owned by the caller. */
int chain_decode(const struct chain *c, const struct codec_spec *spec,
                 struct bytesrc *encoded, const struct codec_env *env,
                 struct abytes **out, struct zerr *err);

/* True when the chain is just an array->bytes codec with no bytes->bytes
 * stage (so byte ranges of the output map to ranges of the input). */
int chain_is_passthrough(const struct chain *c);

/* The state of the array->bytes codec when it is `impl` and the chain has
 * no other stage; NULL otherwise. Borrowed: lives as long as the chain. */
const void *chain_sole_a2b(const struct chain *c,
                           const struct codec_impl *impl);

/* Free; NULL-safe. */
void chain_free(struct chain *c);

#endif
