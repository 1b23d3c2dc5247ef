/* codec.h - the codec interface, the decoded-array representation, and the
 * registry that maps codec names (and aliases) to implementations.
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
 *   array->array codecs (transpose, issue 3) permute abytes.
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
#include "../src/zarr/dtype.h"
#include "../src/util/err.h"
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
};

/* -EINTR with a reason once the stop flag is up, else 0: long decode loops
 * call it between steps. */
static inline int codec_check_stop(const struct codec_env *env,
                                   struct zerr *err) {
  if (env->stop && atomic_load_explicit(env->stop, memory_order_relaxed))
    return zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
  return 0;
}

/* A decoded chunk: n elements in C order of the spec's shape. */
struct abytes {
  uint64_t n;
  size_t elsize;         /* > 0: fixed-size elements; 0: variable-length */
  struct bytesrc *fixed; /* fixed: n*elsize bytes in host order (owned ref) */
  uint64_t *offsets;     /* variable: n+1 absolute offsets into data, owned
                            (malloc); validated non-decreasing and
                            offsets[n] <= data->size */
  struct bytesrc *data;  /* variable: element bytes (owned ref; may be lazy);
                            NULL while the data section is deferred */
  /* Variable, deferred: the data section still has to go through its data
   * codecs (gzip, zstd, ...). Decoding it is postponed so that the index
   * alone answers sizes; abytes_load_data runs it when bytes are read. */
  const struct chain *data_chain; /* borrowed: owned by the codec state,
                                     which outlives every decoded chunk */
  struct bytesrc *data_enc;       /* owned ref: the encoded data section */
  uint64_t data_len;              /* decoded length (offsets[n]) */
};

struct chain;

/* The element bytes of a variable-length chunk: a new reference to
 * a->data, or the deferred data section decoded now (a new source the
 * caller owns; its length is checked against data_len). */
int abytes_load_data(const struct abytes *a, const struct codec_env *env,
                     struct bytesrc **out, struct zerr *err);

/* Free a decoded chunk; NULL-safe. */
void abytes_free(struct abytes *a);
/* Bytes of memory a decoded chunk holds (for cache budgets). */
size_t abytes_mem_cost(const struct abytes *a);
/* A chunk of spec->nelem copies of the fill value, materialised (an empty
 * inner chunk of a shard decoded whole). Capped by env->max_decoded: -EFBIG
 * beyond. Views never call this: their missing chunks are arithmetic. */
int abytes_new_fill(const struct codec_spec *spec, const struct codec_env *env,
                    struct abytes **out, struct zerr *err);
/* Allocate an empty abytes (all fields zero) or NULL. */
struct abytes *abytes_alloc(void);
/* Check offsets: non-decreasing and last <= data_size. */
int abytes_check_offsets(const uint64_t *off, uint64_t n, uint64_t data_size,
                         struct zerr *err);

enum codec_kind { CODEC_A2A = 1, CODEC_A2B = 2, CODEC_B2B = 3 };

struct codec_impl {
  const char *name;           /* canonical V3 name */
  const char *const *aliases; /* NULL-terminated list, or NULL */
  enum codec_kind kind;
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
  /* CODEC_A2A (issue 3): the spec the next codec sees, and the decode that
   * maps the next codec's output back to `decoded` order. */
  int (*encoded_spec)(const void *state, const struct codec_spec *decoded,
                      struct codec_spec *encoded, struct zerr *err);
  int (*decode_a2a)(const void *state, const struct codec_spec *decoded,
                    struct abytes *in, const struct codec_env *env,
                    struct abytes **out, struct zerr *err);
};

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
/* All of `in` in memory (capped by env->max_decoded); errors are prefixed
 * with "codec: ". *out is a new reference. */
int codec_load_input(struct bytesrc *in, const struct codec_env *env,
                     const char *codec, struct bytesrc **out, struct zerr *err);
/* A memory source taking over the storage of a filled buffer (b is reset;
 * on failure its storage is freed). */
int codec_output_from_buf(struct zbuf *b, const char *codec,
                          struct bytesrc **out, struct zerr *err);

/* zlib's inflate over all of `in` (windowBits wbits; `members`: decode
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

/* zarrs.vlen (codecs/vlen.c): named here because views ask whether a
 * chain is only this codec, whose index alone gives a unit's text size. */
extern const struct codec_impl codec_vlen;

/* bytes (codecs/bytes.c), for codecs that address elements stored by it
 * directly (a zarrs.vlen index): does a state of it swap byte order? */
extern const struct codec_impl codec_bytes;
int bytes_state_swaps(const void *state);

/* Direct access to a zarrs.vlen chunk whose index is stored plain
 * (index_codecs [bytes]): single offsets are read where they lie, so a
 * unit's text size needs two of them and a ranged read only those it
 * shows, never the whole index. */
struct vlen_direct {
  struct bytesrc *chunk; /* owned reference */
  uint64_t n;            /* elements */
  uint64_t idx_off;      /* chunk offset of offset 0 */
  size_t isz;            /* 4 or 8 bytes per offset */
  int swap;              /* stored order is not host order */
  struct bytesrc *data;  /* the element bytes when data_codecs are
                            [bytes] (a window of chunk, owned), else NULL */
  uint64_t data_len;     /* bytes of the data section as stored */
};
/* Open chunk (borrowed; referenced) of n elements of a chain that is
 * zarrs.vlen alone. -ENOTSUP when the chain or its index is not plain;
 * -EIO when the chunk's framing is wrong. */
int vlen_direct_open(const struct chain *chain, uint64_t n,
                     struct bytesrc *chunk, struct vlen_direct *d,
                     struct zerr *err);
/* Can chains like this be opened directly (no chunk read)? *plain_data:
 * are the element bytes stored plain too? */
int vlen_direct_ok(const struct chain *chain, int *plain_data);
/* Release; safe on a zeroed or closed struct. */
void vlen_direct_close(struct vlen_direct *d);
/* Offsets first .. first+count-1 (first+count <= n+1) in host order,
 * checked non-decreasing and within the data section when it is plain
 * (a lying index gives -EIO, never bytes from elsewhere). */
int vlen_direct_offsets(const struct vlen_direct *d, uint64_t first,
                        uint64_t count, uint64_t *out, struct zerr *err);

#endif
