/* chain.h - a Zarr codec chain: build it from a `codecs` list once per array,
 * then decode chunks with it from any thread.
 *
 * The chain is immutable after chain_build; chain_decode and partial
 * decoding (chain_partial_open) may be called concurrently. It is also used
 * recursively: `zarrs.vlen` builds chains for its index (1-D uint32/uint64) and
 * data (1-D uint8), `sharding_indexed` for its inner chunks. */
#ifndef ZARRFS_CHAIN_H
#define ZARRFS_CHAIN_H

#include "abytes.h"
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

/* The element bytes of a variable-length decoded chunk: a new reference
 * to a->data, or its deferred data section decoded now through
 * a->data_chain (a new source the caller owns; its length is checked
 * against a->data_len). */
int chain_load_data(const struct abytes *a, const struct codec_env *env,
                    struct bytesrc **out, struct zerr *err);

/* ---- partial decoding (see codec.h) ---- */

/* What chunks of this chain allow without a whole decode (enum
 * codec_partial_cap bits): the array->bytes codec's, when it is the
 * chain's only stage; else 0. */
unsigned chain_partial_caps(const struct chain *c);

/* Open a partial decoder *p over encoded chunk `chunk` (borrowed;
 * referenced) of chunk `spec`: reads the chunk's framing only. -ENOTSUP
 * (p zeroed) when the chain cannot (another stage, or the codec's state
 * does not allow it: see chain_partial_caps); -EIO when the framing is
 * wrong. Close it with chain_partial_close, also after a failure. */
int chain_partial_open(const struct chain *c, const struct codec_spec *spec,
                       struct bytesrc *chunk, struct codec_partial *p,
                       struct zerr *err);

/* Variable-length: offsets first .. first+count-1 (first+count <= n+1)
 * in host order into out, checked non-decreasing and, when the element
 * bytes are plain, inside them (a lying index is -EIO, never bytes from
 * elsewhere). -ENOTSUP for fixed-size elements. */
int chain_partial_offsets(const struct codec_partial *p, uint64_t first,
                          uint64_t count, uint64_t *out, struct zerr *err);

/* Fixed-size: elements first .. first+count-1 (first+count <= n) in host
 * order into out (count*elsize bytes). -ENOTSUP for variable-length. */
int chain_partial_elements(const struct codec_partial *p, uint64_t first,
                           uint64_t count, void *out, struct zerr *err);

/* Fixed-size, plain: the byte range of p->data holding elements first ..
 * first+count-1 (*off, *len). -ENOTSUP when the elements are variable-
 * length or not stored plain; -EIO past the chunk. */
int chain_partial_range(const struct codec_partial *p, uint64_t first,
                        uint64_t count, uint64_t *off, uint64_t *len,
                        struct zerr *err);

/* Variable-length, element bytes behind data codecs (p->data NULL): a
 * byte source of the `size` decoded element bytes (the last offset, which
 * the caller has read) that decodes them as a stream in a sliding window
 * (codecs/dstream.h: a reader in order holds a few MiB, a read before the
 * window restarts the stream). A new reference; errors are prefixed with
 * "zarrs.vlen data: ". -ENOTSUP when the data codecs cannot stream
 * (anything but plain bytes under one zstd or gzip stage). */
int chain_partial_stream(const struct codec_partial *p, uint64_t size,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err);

/* How chain c's whole encoded chunk decodes as a stream: the stream kind
 * of its one bytes->bytes codec when c is an array->bytes codec (*a2b,
 * borrowed) followed by exactly that codec, with no array->array stage;
 * else NULL. */
const struct dstream_kind *chain_stream_kind(const struct chain *c,
                                             const struct codec_impl **a2b);

/* Release an open (or failed, or zeroed) partial decoder. */
void chain_partial_close(struct codec_partial *p);

/* Free; NULL-safe. */
void chain_free(struct chain *c);

#endif
