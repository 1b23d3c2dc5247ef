/* fuzz_msgpack.c - the numcodecs msgpack2 object codec (codecs/msgpack.c,
 * its own bounded MessagePack decoder). Input: a metadata document
 * (zarr.json or .zarray), a NUL byte, then one encoded chunk, decoded with
 * the document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_msgpack[] = {"msgpack2", NULL};

/* One document and chunk. */
FUZZ_TARGET(msgpack) {
  fuzz_chunk_run(data, size, want_msgpack);
  return 0;
}
