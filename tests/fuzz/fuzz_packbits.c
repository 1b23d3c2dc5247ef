/* fuzz_packbits.c - the packbits codec (bit-packed booleans and integers).
 * Input: a metadata document (zarr.json or .zarray), a NUL byte, then one
 * encoded chunk, decoded with the document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_packbits[] = {"packbits", NULL};

/* One document and chunk. */
FUZZ_TARGET(packbits) {
  fuzz_chunk_run(data, size, want_packbits);
  return 0;
}
