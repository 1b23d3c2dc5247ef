/* fuzz_sharding.c - sharding_indexed: the shard index (checksum, entries),
 * inner chunks one at a time, and whole shards. Input: a metadata document
 * (zarr.json or .zarray), a NUL byte, then one encoded chunk, decoded with the
 * document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_sharding[] = {"sharding_indexed", NULL};

/* One document and chunk. */
FUZZ_TARGET(sharding) {
  fuzz_chunk_run(data, size, want_sharding);
  return 0;
}
