/* fuzz_meta_v3.c - Zarr V3 zarr.json through zmeta_parse (with its lenient
 * JSON reader), then the codec chain and chunk keys it describes. */
#include "fuzz.h"

#include <stdlib.h>

/* One zarr.json document. */
FUZZ_TARGET(meta_v3) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  if (zmeta_parse((const char *)data, size, &m, &err) == 0) {
    fuzz_meta_check(m);
    zmeta_free(m);
  }
  return 0;
}
