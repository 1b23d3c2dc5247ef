/* fuzz_zfp.c - the zfp and numcodecs.zfpy codecs (streams decoded through
 * libzfp from a zeroed buffer sized for all it may read).
 * Input: a metadata document (zarr.json or .zarray), a NUL byte, then one
 * encoded chunk, decoded with the document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_zfp[] = {"zfp", NULL};

/* One document and chunk. */
FUZZ_TARGET(zfp) {
  fuzz_chunk_run(data, size, want_zfp);
  return 0;
}
