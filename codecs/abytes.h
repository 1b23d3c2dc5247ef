/* abytes.h - a decoded chunk (struct abytes): what an array->bytes codec
 * returns and array->array codecs permute, with its allocation, release,
 * memory accounting, fill-value chunks and offset validation.
 *
 * A decoded chunk is immutable once returned: views share it read-only
 * across threads. Running the codecs of a deferred data section is the
 * chain's job (chain_load_data, codecs/chain.h), so this module needs no
 * chain. */
#ifndef ZARRFS_ABYTES_H
#define ZARRFS_ABYTES_H

#include <stddef.h>
#include <stdint.h>

#include "../src/io/bytesrc.h"
#include "../src/util/err.h"
#include "codec.h"

struct chain;

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
   * alone answers sizes; chain_load_data runs it when bytes are read. */
  const struct chain *data_chain; /* borrowed: owned by the codec state,
                                     which outlives every decoded chunk */
  struct bytesrc *data_enc;       /* owned ref: the encoded data section */
  uint64_t data_len;              /* decoded length (offsets[n]) */
};

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
/* Make ab's elements variable-length: offsets off (n+1, malloc'd) into
 * the bytes of out, replacing whatever ab held (fixed elements, offsets
 * and data, a deferred data section). Takes off and out whatever the
 * result; what names the conversion in errors. 0 or -ENOMEM. */
int abytes_set_var(struct abytes *ab, uint64_t *off, struct zbuf *out,
                   const char *what, struct zerr *err);
/* Check offsets: non-decreasing and last <= data_size. */
int abytes_check_offsets(const uint64_t *off, uint64_t n, uint64_t data_size,
                         struct zerr *err);

#endif
