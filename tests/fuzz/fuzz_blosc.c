/* fuzz_blosc.c - the blosc codec (V3 blosc, V2 compressor blosc): frame header,
 * blocks, shuffles. Input: a metadata document (zarr.json or .zarray), a NUL
 * byte, then one encoded chunk, decoded with the document's chain
 * (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_blosc[] = {"blosc", NULL};

/* One document and chunk. */
FUZZ_TARGET(blosc) {
  fuzz_chunk_run(data, size, want_blosc);
  return 0;
}
