/* fuzz_json2.c - the numcodecs json2 and legacy json object codecs.
 * Input: a metadata document (zarr.json or .zarray), a NUL byte, then one
 * encoded chunk, decoded with the document's chain (fuzz_chunk_run). */
#include "fuzz.h"

static const char *const want_json2[] = {"json2", "\"json\"", NULL};

/* One document and chunk. */
FUZZ_TARGET(json2) {
  fuzz_chunk_run(data, size, want_json2);
  return 0;
}
