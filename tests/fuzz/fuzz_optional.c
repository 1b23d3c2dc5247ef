/* fuzz_optional.c - zarrs.optional (a mask and the values of a nullable array).
 * Input: a metadata document (zarr.json or .zarray), a NUL byte, then one
 * encoded chunk, decoded with the document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_optional[] = {"optional", NULL};

/* One document and chunk. */
FUZZ_TARGET(optional) {
  fuzz_chunk_run(data, size, want_optional);
  return 0;
}
