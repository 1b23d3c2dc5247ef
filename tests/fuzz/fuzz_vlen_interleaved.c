/* fuzz_vlen_interleaved.c - the interleaved variable-length codecs vlen-utf8,
 * vlen-bytes and vlen-array (V3 codecs or V2 filters). Input: a metadata
 * document (zarr.json or .zarray), a NUL byte, then one encoded chunk, decoded
 * with the document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_vlen_interleaved[] = {"vlen-utf8", "vlen-bytes",
                                                    "vlen-array", NULL};

/* One document and chunk. */
FUZZ_TARGET(vlen_interleaved) {
  fuzz_chunk_run(data, size, want_vlen_interleaved);
  return 0;
}
