/* chain.h - a Zarr codec chain: build it from a `codecs` list once per array,
 * then decode chunks with it from any thread.
 *
 * The chain is immutable after chain_build; chain_decode and partial
 * decoding (chain_partial_open) may be called concurrently. It is also used
 * recursively: `zarrs.vlen` builds chains for its index (1-D uint32/uint64) and
 * data (1-D uint8), `sharding_indexed` for its inner chunks.
 *
 * Besides whole decodes, the chain reports what access its chunks allow,
 * so callers never name a codec: partial decoding (offsets and elements
 * read where they lie), inner chunks decoded one at a time, and elements
 * read in order from a stream. */
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

/* Release an open (or failed, or zeroed) partial decoder. */
void chain_partial_close(struct codec_partial *p);

/* ---- inner chunks (see codec.h) ----
 *
 * A chain whose one stage is an array->bytes codec holding a grid of
 * inner chunks (`sharding_indexed` alone) decodes them one at a time: the
 * caller reads a chunk's index once (chain_index_read, and may keep it),
 * then decodes only the inner chunks it needs (chain_inner_decode) or
 * takes their encoded bytes (chain_index_range) to the inner chain. */

struct chain_index; /* a chunk's index of its inner chunks (opaque) */

/* The chain that decodes one inner chunk of c's chunks (borrowed: lives
 * as long as c), with the inner shape (ndim entries) in shape; NULL when
 * c's chunks hold no inner chunks. */
const struct chain *chain_inner(const struct chain *c, uint64_t *shape);

/* Read and check the index of chunk `chunk` (borrowed) of chunk `spec`
 * (its shape: the inner shape must divide it) into *out (the caller's:
 * chain_index_free). A chunk shorter than its index, a bad checksum or an
 * entry outside the chunk is -EIO; -ENOTSUP when chain_inner is NULL. */
int chain_index_read(const struct chain *c, const struct codec_spec *spec,
                     struct bytesrc *chunk, const struct codec_env *env,
                     struct chain_index **out, struct zerr *err);

/* Inner chunks the index lists. */
uint64_t chain_index_count(const struct chain_index *x);

/* Bytes the index holds, for charging it to a cache. */
size_t chain_index_cost(const struct chain_index *x);

/* Inner chunk i's (C order, i < chain_index_count) byte range of its
 * chunk: 1 and *off, *len (inside the chunk: checked on reading), or 0
 * when it is not stored (it is the fill value). */
int chain_index_range(const struct chain_index *x, uint64_t i, uint64_t *off,
                      uint64_t *len);

/* Decode inner chunk i of chunk `chunk` (borrowed; the one x was read
 * from) of chunk `spec`: the fill value when not stored, else the inner
 * chain over its range. *out (the caller's) has the inner shape. */
int chain_inner_decode(const struct chain *c, const struct codec_spec *spec,
                       struct bytesrc *chunk, const struct chain_index *x,
                       uint64_t i, const struct codec_env *env,
                       struct abytes **out, struct zerr *err);

/* Free; NULL-safe. */
void chain_index_free(struct chain_index *x);

/* ---- elements as a stream (see codec.h) ----
 *
 * A chunk whose elements are records one after another (no index) behind
 * one zstd or gzip stage is read in order from a stream the reader owns
 * (codecs/dstream.h: a sliding window of a few MiB; a read before the
 * window restarts the stream): the reader keeps positions, asks an
 * element's length, reads its bytes and steps to the next. An open
 * stream has mutable state behind a mutex (dstream.h): callers share it
 * under their own lock to keep positions meaningful. */

struct chain_elems; /* an open element stream (opaque) */

/* Where a reader of an element stream stands: element k, whose record
 * starts at `at` (the codec's offset in the decoded stream: callers keep
 * it and compare k, nothing else). */
struct chain_elem_pos {
  uint64_t k, at;
};

/* Can chain c's chunks be read as an element stream (chain_elems_open)? */
int chain_elems_capable(const struct chain *c);

/* The sum of the element lengths of chunk `chunk` (borrowed) of chunk
 * `spec`, from the decoded size its stream's header states and the
 * format's framing, without decoding: 1 and *total, 0 when the header
 * states no size (or the chain cannot stream elements, or the size fits
 * no such chunk), or a negative errno when the chunk cannot be read. A
 * claim, to be checked by a decode (dstream_stated_size). */
int chain_elems_stated(const struct chain *c, const struct codec_spec *spec,
                       struct bytesrc *chunk, uint64_t *total,
                       struct zerr *err);

/* Open chunk `chunk` (borrowed; referenced) of chunk `spec` as an element
 * stream *out (the caller's: chain_elems_close) and check its framing;
 * *first is where element 0 stands. The decoded size is not stored: the
 * stream is read only as far as the elements reach. -ENOTSUP when
 * chain_elems_capable is 0; -EIO when the framing disagrees with spec
 * (the message names the codec). */
int chain_elems_open(const struct chain *c, const struct codec_spec *spec,
                     struct bytesrc *chunk, const struct codec_env *env,
                     struct chain_elems **out, struct chain_elem_pos *first,
                     struct zerr *err);

/* The length in bytes of the element at p. */
int chain_elems_len(struct chain_elems *s, const struct chain_elem_pos *p,
                    uint64_t *len, struct zerr *err);

/* The len bytes (its length) of the element at p into dst. */
int chain_elems_read(struct chain_elems *s, const struct chain_elem_pos *p,
                     uint64_t len, void *dst, struct zerr *err);

/* Step p past its element of len bytes. */
void chain_elems_step(const struct chain_elems *s, struct chain_elem_pos *p,
                      uint64_t len);

/* Step p to element n (n >= p->k), adding the lengths of the elements
 * passed to *sum: the stream read in blocks, the records walked where
 * they lie (the codec's elems_walk; else a length read at a time). A
 * stream that ends before a length fails as chain_elems_len does; the
 * last element's bytes are not checked (chain_elems_check). */
int chain_elems_sum(struct chain_elems *s, struct chain_elem_pos *p, uint64_t n,
                    uint64_t *sum, struct zerr *err);

/* Copy the bytes of the elements from p on (at most max, stopping at
 * element n) back to back into dst (cap bytes), their lengths into len:
 * a block of the stream read at once and its records walked where they
 * lie (the codec's elems_spans), where a read each took the stream's
 * lock twice an element. The elements copied, p stepped past them; 0
 * when the next one does not fit in cap, its record is not wholly in the
 * block or the codec cannot walk (read it alone: chain_elems_len, which
 * also says why when the stream ends there); or a negative errno. */
long chain_elems_gather(struct chain_elems *s, struct chain_elem_pos *p,
                        uint64_t n, size_t max, uint8_t *dst, size_t cap,
                        uint64_t *len, struct zerr *err);

/* Are the bytes of every element before p in the stream (a stream that
 * ends early fails here)? 0 or negative. */
int chain_elems_check(struct chain_elems *s, const struct chain_elem_pos *p,
                      struct zerr *err);

/* Bytes an open stream may hold at once, for charging it to a cache. */
size_t chain_elems_cost(const struct chain_elems *s);

/* Close; NULL-safe. */
void chain_elems_close(struct chain_elems *s);

/* ---- elements as records in memory (see codec.h, elems_spans) ----
 *
 * A chunk whose elements are records one after another, decoded whole
 * into a buffer the caller owns instead of into an abytes, for a reader
 * that takes each element once, in order, where it lies (a unit's text
 * made in place): it spares the compact copy of the element bytes and
 * their offsets that chain_decode builds. */

/* A chunk's records in memory: buf (malloc'd, size bytes; the caller's
 * until chain_records_free or chain_records_abytes) and where the walk
 * stands. The rest is the walk's: callers read buf, size and n only. */
struct chain_stage;

struct chain_records {
  uint8_t *buf;
  size_t size;
  uint64_t n;  /* elements in the chunk */
  uint64_t at; /* the walk: next record's offset, and its element */
  uint64_t k;
  const struct chain_stage *a2b; /* borrowed from the chain */
};

/* Can chain c's chunks be decoded into records (chain_records_decode)?
 * One array->bytes codec with elems_spans behind at least one
 * bytes->bytes stage (a chunk stored plain is read where it lies). */
int chain_records_capable(const struct chain *c);

/* Decode chunk `encoded` (borrowed) of chunk `spec` through its
 * bytes->bytes stages into *out (zeroed first; free it with
 * chain_records_free). -ENOTSUP when chain_records_capable is 0. */
int chain_records_decode(const struct chain *c, const struct codec_spec *spec,
                         struct bytesrc *encoded, const struct codec_env *env,
                         struct chain_records *out, struct zerr *err);

/* The next records of r (see codec.h, elems_spans): up to max elements'
 * offsets in r->buf and lengths. The elements found, 0 at the end, or
 * -EIO naming the element whose record is wrong. */
long chain_records_next(struct chain_records *r, uint64_t *start, uint64_t *len,
                        size_t max, struct zerr *err);

/* r's chunk decoded as chain_decode would have, from its buffer (taken:
 * r is left empty, whatever the result), for a reader the records do
 * not suit after all. */
int chain_records_abytes(struct chain_records *r, const struct codec_spec *spec,
                         const struct codec_env *env, struct abytes **out,
                         struct zerr *err);

/* Free r's buffer (r zeroed); NULL-safe. */
void chain_records_free(struct chain_records *r);

/* Free; NULL-safe. */
void chain_free(struct chain *c);

#endif
