/* fuzz_meta_v2.c - Zarr V2 .zarray through zmeta_parse_v2 (dtype, order,
 * filters and compressor turned into a V3 codec list), then that chain and
 * the chunk keys. */
#include "fuzz.h"

#include <stdlib.h>

/* One .zarray document. */
FUZZ_TARGET(meta_v2) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  if (zmeta_parse_v2((const char *)data, size, &m, &err) == 0) {
    fuzz_meta_check(m);
    zmeta_free(m);
  }
  return 0;
}
