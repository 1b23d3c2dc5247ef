/* fuzz_jdup.c - the duplicate-key scanner over JSON text (src/json/jdup.c), as
 * kerchunk (member "refs") and VirtualiZarr manifests (top level) use it. */
#include "fuzz.h"

#include <jansson.h>

#include "../../src/json/jdup.h"

/* One document, scanned at the top level and in its "refs" member. */
FUZZ_TARGET(jdup) {
  static const char *const members[] = {NULL, "refs"};
  for (int k = 0; k < 2; k++) {
    char **keys = NULL;
    size_t n = 0;
    struct zerr err = {0};
    /* expected 0: every key is collected, the expensive path */
    if (jdup_keys((const char *)data, size, members[k], 0, &keys, &n, &err) ==
        0)
      jdup_free(keys, n);
  }
  return 0;
}
