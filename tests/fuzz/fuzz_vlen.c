/* fuzz_vlen.c - the zarrs.vlen codec (index and data sections, their codec
 * chains, the direct index reads). Input: a metadata document (zarr.json or
 * .zarray), a NUL byte, then one encoded chunk, decoded with the document's
 * chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_vlen[] = {"zarrs.vlen", NULL};

/* One document and chunk. */
FUZZ_TARGET(vlen) {
  fuzz_chunk_run(data, size, want_vlen);
  return 0;
}
