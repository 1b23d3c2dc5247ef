/* codec.h - the codec interface (with its optional capability, partial
 * decoding), what a codec decodes into (the spec; the decoded chunk itself
 * is codecs/abytes.h), and the registry that maps codec names (and
 * aliases) to implementations. Only the generic interface: no codec's own
 * API is declared here.
 *
 * A Zarr codec chain is [array->array]* , one array->bytes , [bytes->bytes]*.
 * Decoding runs it backwards:
 *   bytes->bytes codecs turn a byte source into a byte source
 *     (gzip/zstd inflate into memory; crc32c verifies and returns a window);
 *   the array->bytes codec turns a byte source into `struct abytes`
 *     (`bytes` returns a window onto its input when no swap is needed, so
 *     nothing is read until a view asks for a range; `zarrs.vlen` reads the
 *     8-byte length word and the index, and returns the data section as a
 *     lazy byte source when its data codecs allow it);
 *   array->array codecs (transpose) permute abytes (codecs/abytes.h).
 *
 * An array->bytes codec may also offer partial decoding (see "partial
 * decoding" below): answers about an encoded chunk without decoding it
 * whole; inner chunks decoded one at a time; or its elements read in
 * order from a stream. The codecs themselves are reached through the registry
 * (codec_lookup) and the chain (codecs/chain.h), never by name.
 *
 * Codec state is parsed configuration only: immutable after create, shared by
 * all threads. Everything that depends on a particular chunk (its element
 * count, its data length) is passed to decode as a codec_spec. */
#ifndef ZARRFS_CODEC_H
#define ZARRFS_CODEC_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../src/io/bytesrc.h"
#include "../src/util/cancel.h"
#include "../src/util/err.h"
#include "../src/zarr/dtype.h"
#include "../src/zarr/meta.h"

/* What a codec decodes into: the shape and type of the decoded array. */
struct codec_spec {
  int ndim;
  uint64_t shape[ZMETA_MAX_DIMS];
  uint64_t nelem; /* product of shape (checked by whoever fills it) */
  struct dtype dtype;
  const uint8_t *fill; /* borrowed: fill value bytes (see dtype_parse_fill) */
  size_t fill_len;
};

/* Settings every decode sees. */
struct codec_env {
  size_t max_decoded;     /* limit for any in-memory intermediate, in bytes */
  const atomic_int *stop; /* non-zero: long decodes give up with -EINTR (the
                             daemon is shutting down); may be NULL */
  size_t heap_max;        /* buffers smaller than this come from malloc's heaps,
                             which hand a freed block's pages to the next one: a
                             decoder hands none of their pages back early (the
                             next block would fault them in again, zeroed); 0: a
                             decoder may hand back any */
};

/* -EINTR with a reason once the stop flag is up or the calling thread's
 * request is abandoned (src/util/cancel.h), else 0: long decode loops call
 * it between steps. */
static inline int codec_check_stop(const struct codec_env *env,
                                   struct zerr *err) {
  return cancel_check(env->stop, err);
}

struct abytes;       /* a decoded chunk: codecs/abytes.h */
struct chain;        /* a codec chain: codecs/chain.h */
struct dstream_kind; /* a codec's stream decoder: codecs/dstream.h */

enum codec_kind { CODEC_A2A = 1, CODEC_A2B = 2, CODEC_B2B = 3 };

/* ---- partial decoding ----
 *
 * Modelled on zarrs' partial decoders (ArrayPartialDecoderTraits): an
 * array->bytes codec that can read part of an encoded chunk without
 * decoding all of it says what it can (partial_caps) and opens a decoder
 * over one chunk (partial_open) that reads only what it is asked. Callers
 * go through the chain (chain_partial_caps, chain_partial_open and the
 * chain_partial_* readers in codecs/chain.h), which offers it only when
 * the array->bytes codec is the chain's one stage: a bytes->bytes stage
 * (gzip, crc32c) needs its whole input, an array->array stage moves
 * elements. So callers never name a codec.
 *
 * Who offers what: `zarrs.vlen` sizes from the index alone always; offsets
 * read where they lie when its index codecs open partially in turn (a
 * plain `bytes` index, swapped or not); its element bytes as a window when
 * its data codecs are plain `bytes`, else their encoded section, which
 * chain_partial_stream decodes as a stream when one zstd or gzip stage
 * encodes it. `bytes` (fixed-size elements): an
 * element range is a byte range of the chunk, plain unless the stored
 * order must be swapped (then partial_elements swaps what it reads).
 * `sharding_indexed` offers the same kind of access one level up, as
 * inner chunks (below); each inner chunk's chain offers partial decoding
 * in turn.
 *
 * ---- inner chunks ----
 *
 * An array->bytes codec whose chunk is a grid of inner chunks, each
 * encoded on its own and found through an index (`sharding_indexed`),
 * offers them one at a time: the chain of one inner chunk and the inner
 * shape (inner_chain), the index read once (inner_index: 2*n host-order
 * (offset, length) pairs of byte ranges of the chunk, in inner-grid C
 * order, each inside the chunk; (CODEC_INNER_EMPTY, CODEC_INNER_EMPTY)
 * for an inner chunk not stored, which is the fill value), and one inner
 * chunk decoded through it (inner_decode). Callers go through the chain
 * (chain_inner and chain_index_* in codecs/chain.h), which offers it when
 * the codec is the chain's one stage.
 *
 * ---- elements as a stream ----
 *
 * An array->bytes codec that stores each element as a record (its length,
 * then its bytes) one after another, with no index, cannot find element
 * j without walking the ones before it, so it has no partial decoder; but
 * it can read its elements in order from a stream of its encoded bytes
 * without holding them (the interleaved vlen formats): elems_open checks
 * the stream's framing for chunk `spec` and says where the first record
 * starts, elems_len reads the length of the element whose record starts
 * at `at`, elems_read its bytes, elems_next where the next record starts.
 * Callers go through the chain (chain_elems_* in codecs/chain.h), which
 * offers it when one bytes->bytes stage that decodes as a stream (zstd,
 * gzip) follows the codec, and owns that stream. */

/* What chunks of a codec state (or a chain) allow. */
enum codec_partial_cap {
  CODEC_PARTIAL_INDEX = 1 << 0,    /* a whole decode reads the element
                                      offsets and none of the element
                                      bytes: text sizes cost the index */
  CODEC_PARTIAL_OFFSETS = 1 << 1,  /* open + partial_offsets: variable-
                                      length offsets read where they lie */
  CODEC_PARTIAL_ELEMENTS = 1 << 2, /* open + partial_elements: fixed-size
                                      elements read where they lie */
  CODEC_PARTIAL_PLAIN = 1 << 3,    /* with OFFSETS or ELEMENTS: the element
                                      bytes are stored as decoded, so an
                                      open decoder's data is set */
};

/* An index entry of an inner chunk not stored (inner_index). */
#define CODEC_INNER_EMPTY UINT64_MAX

/* A partial decoder over one encoded chunk (chain_partial_open). The
 * first fields are for callers; the rest belong to the codec that opened
 * it. Immutable once open: readers may share it across threads. */
struct codec_partial {
  uint64_t n;           /* elements */
  size_t elsize;        /* > 0: fixed-size elements; 0: variable-length */
  struct bytesrc *data; /* the element bytes when stored plain (a window of
                           the chunk, owned ref), else NULL. Fixed: element
                           i is bytes [i*elsize, (i+1)*elsize); variable:
                           element i is bytes [off[i], off[i+1]) */
  uint64_t data_len;    /* bytes of the element section as stored */
  /* Variable-length with element bytes behind data codecs (data NULL):
   * the encoded element section (owned ref) and the chain that decodes
   * it (borrowed: the codec state's), for chain_partial_stream; else
   * NULL. */
  struct bytesrc *data_enc;
  const struct chain *data_chain;
  /* The codec's own. */
  const struct codec_impl *impl; /* the codec that opened it */
  const void *state;             /* borrowed: its state (outlives p) */
  struct bytesrc *src;           /* owned ref: what it reads from */
  uint64_t base;                 /* offset in src of what it addresses */
  size_t width;                  /* bytes per stored element or offset */
  int swap;                      /* stored order is not host order */
  void *priv;                    /* per-chunk state, or NULL */
};

struct codec_impl {
  const char *name;           /* canonical V3 name */
  const char *const *aliases; /* NULL-terminated list, or NULL */
  enum codec_kind kind;
  /* The library this build was configured without (configure
   * --without-LIB), or NULL: the codec is known by name only, and
   * chain_build refuses it saying so (CODEC_BUILT_WITHOUT). */
  const char *built_without;
  /* Parse and validate `config` (NULL when absent) for arrays of type
   * decoded->dtype. Shape fields of `decoded` are NOT final (they vary per
   * chunk for nested chains) and must not be stored. *state is owned by the
   * codec and released with destroy. */
  int (*create)(json_t *config, const struct codec_spec *decoded, void **state,
                struct zerr *err);
  void (*destroy)(void *state);
  /* CODEC_B2B: decode `in` into a new source *out (caller unrefs). */
  int (*decode_bytes)(const void *state, struct bytesrc *in,
                      const struct codec_env *env, struct bytesrc **out,
                      struct zerr *err);
  /* CODEC_A2B: decode `in` into *out (caller frees) for chunk `spec`. */
  int (*decode_array)(const void *state, const struct codec_spec *spec,
                      struct bytesrc *in, const struct codec_env *env,
                      struct abytes **out, struct zerr *err);
  /* CODEC_A2A: the spec the next codec sees, and the decode that
   * maps the next codec's output back to `decoded` order. */
  int (*encoded_spec)(const void *state, const struct codec_spec *decoded,
                      struct codec_spec *encoded, struct zerr *err);
  int (*decode_a2a)(const void *state, const struct codec_spec *decoded,
                    struct abytes *in, const struct codec_env *env,
                    struct abytes **out, struct zerr *err);
  /* CODEC_A2B, optional: partial decoding (NULL: not capable; see
   * "partial decoding" below). partial_caps says what chunks of this state
   * allow (enum codec_partial_cap bits); partial_open fills *p for the
   * encoded chunk `in` (borrowed; referenced) of chunk `spec`, -ENOTSUP
   * when the state does not allow it; partial_offsets and partial_elements
   * read through an open decoder; partial_close releases p->priv (may be
   * NULL when the codec keeps none). */
  unsigned (*partial_caps)(const void *state);
  int (*partial_open)(const void *state, const struct codec_spec *spec,
                      struct bytesrc *in, struct codec_partial *p,
                      struct zerr *err);
  int (*partial_offsets)(const struct codec_partial *p, uint64_t first,
                         uint64_t count, uint64_t *out, struct zerr *err);
  int (*partial_elements)(const struct codec_partial *p, uint64_t first,
                          uint64_t count, void *out, struct zerr *err);
  void (*partial_close)(struct codec_partial *p);
  /* CODEC_B2B, optional: its output decoded as a stream in a sliding
   * window (codecs/dstream.h); NULL: only whole. */
  const struct dstream_kind *stream;
  /* CODEC_A2B, optional: inner chunks (see "inner chunks" above; NULL:
   * none). inner_chain says whether this state's chunks hold inner chunks
   * (NULL: not) and fills shape (ndim entries); the chain is borrowed (it
   * lives as long as the state). inner_index reads chunk `in`'s index
   * for a chunk of shape spec->shape: *ranges (malloc'd, the caller's)
   * and *n; an index that does not fit, fails its checksum or points
   * outside the chunk is -EIO. inner_decode decodes inner chunk i (the
   * fill value for an empty entry) into *out (the caller's). */
  const struct chain *(*inner_chain)(const void *state, uint64_t *shape);
  int (*inner_index)(const void *state, const struct codec_spec *spec,
                     struct bytesrc *in, const struct codec_env *env,
                     uint64_t **ranges, uint64_t *n, struct zerr *err);
  int (*inner_decode)(const void *state, const struct codec_spec *spec,
                      struct bytesrc *in, const uint64_t *ranges, uint64_t i,
                      const struct codec_env *env, struct abytes **out,
                      struct zerr *err);
  /* CODEC_A2B, optional: elements as a stream (see "elements as a
   * stream" above; NULL: not capable). `s` is the decoded stream of the
   * chunk (borrowed); positions are its byte offsets. elems_open: -EIO
   * when the framing disagrees with spec (messages name the codec). */
  int (*elems_open)(const void *state, const struct codec_spec *spec,
                    struct bytesrc *s, uint64_t *first, struct zerr *err);
  int (*elems_len)(const void *state, struct bytesrc *s, uint64_t at,
                   uint64_t *len, struct zerr *err);
  int (*elems_read)(const void *state, struct bytesrc *s, uint64_t at,
                    uint64_t len, void *dst, struct zerr *err);
  uint64_t (*elems_next)(const void *state, uint64_t at, uint64_t len);
  /* Optional: the sum of the element lengths of a chunk of nelem elements
   * whose decoded stream is `decoded` bytes, when the framing fixes it (no
   * trailing bytes assumed): 0 and *total, or -1 when no such chunk
   * exists. What a stated decoded size claims (chain_elems_stated). */
  int (*elems_total)(const void *state, uint64_t decoded, uint64_t nelem,
                     uint64_t *total);
  /* Optional: step over records in memory: buf[0..len) holds the stream
   * from *at on; from the record at *at (element *k), while *k < nelem
   * and its length lies in buf, add its length to *sum and step *at and
   * *k past it (its bytes need not be in buf). What elems_len and
   * elems_next do a record at a time, without a read each. */
  void (*elems_walk)(const void *state, const uint8_t *buf, size_t len,
                     uint64_t *at, uint64_t *k, uint64_t nelem, uint64_t *sum);
  /* Optional: records walked where they lie in memory, for a reader
   * that takes each element once, in order: buf holds size bytes of the
   * decoded stream from offset base on. Up to max elements from the
   * record at *at (element *k of nelem): each one's bytes' stream offset
   * into start[] and its length into len[]; *at and *k step past them.
   * `whole`: buf is the whole chunk (base 0; chain_records_* in
   * codecs/chain.h), its head is checked with the first call and every
   * record as decode_array checks it: -EIO naming the element (and the
   * codec) when one runs past the end; the elements found, 0 only at
   * nelem. Else buf is a window of the stream (chain_elems_gather): the
   * walk stops, with no error, before the first record not wholly in
   * it. */
  long (*elems_spans)(const void *state, const uint8_t *buf, uint64_t base,
                      size_t size, int whole, uint64_t *at, uint64_t *k,
                      uint64_t nelem, uint64_t *start, uint64_t *len,
                      size_t max, struct zerr *err);
};

/* The entry of a codec whose library (lib, a string) this build was
 * configured without: its names, and nothing to decode with. */
#define CODEC_BUILT_WITHOUT(cname, calias, ckind, lib)                         \
  {                                                                            \
    .name = (cname), .aliases = (calias), .kind = (ckind),                     \
    .built_without = (lib)                                                     \
  }

/* Find a codec by V3 name or alias; NULL if unknown. */
const struct codec_impl *codec_lookup(const char *name);

/* Codecs this build knows, for --version / docs. NULL-terminated. */
const struct codec_impl *const *codec_all(void);

/* Parse one entry of a codecs list: a short-hand string or an object with
 * "name", optional "configuration" (object) and optional "must_understand".
 * Sets *name (borrowed from j), *config (borrowed, or NULL), *optional
 * (1 when must_understand is false). -EIO on a malformed entry. */
int codec_entry_parse(json_t *j, const char **name, json_t **config,
                      int *optional, struct zerr *err);

struct zbuf;

/* Helpers for bytes->bytes codecs. */
/* All of `in` in memory (capped by env->max_decoded); a size above the
 * cap and running out of memory are prefixed with "codec: ", a failure
 * to read `in` is left as its source said it. *out is a new reference. */
int codec_load_input(struct bytesrc *in, const struct codec_env *env,
                     const char *codec, struct bytesrc **out, struct zerr *err);
/* A memory source taking over the storage of a filled buffer (b is reset;
 * on failure its storage is freed). */
int codec_output_from_buf(struct zbuf *b, const char *codec,
                          struct bytesrc **out, struct zerr *err);

/* Inflate all of `in` (as zlib's windowBits wbits says: 15 a zlib stream,
 * 15 + 16 gzip, 15 + 32 either, told by its magic; `members`: decode
 * gzip members after the first too) into a new memory source capped by
 * env->max_decoded; errors are prefixed with "name: ". Shared by gzip and
 * numcodecs.zlib / numcodecs.gzip. */
int codec_inflate(struct bytesrc *in, const struct codec_env *env,
                  const char *name, int wbits, int members,
                  struct bytesrc **out, struct zerr *err);

/* Helpers for codec implementations: read a configuration field. */
/* Integer field; missing -> def (or -EIO when required). */
int codec_cfg_int(json_t *config, const char *key, int required, long long def,
                  long long *out, struct zerr *err);
/* Number field (integer or real); missing -> def. */
int codec_cfg_num(json_t *config, const char *key, int required, double def,
                  double *out, struct zerr *err);
/* String field (borrowed); missing -> def. */
int codec_cfg_str(json_t *config, const char *key, int required,
                  const char *def, const char **out, struct zerr *err);
/* Reject keys not in the NULL-terminated `allowed` list. */
int codec_cfg_only(json_t *config, const char *codec,
                   const char *const *allowed, struct zerr *err);

#endif
