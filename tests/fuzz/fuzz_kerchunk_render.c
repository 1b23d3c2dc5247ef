/* fuzz_kerchunk_render.c - kerchunk url templates: {{name}} substitution
 * and the {{expr}} integer expressions of `gen` (+ - * // / % parentheses,
 * unary minus; division by zero and overflow must be errors).
 * Input: TEMPLATES NUL TEMPLATE, TEMPLATES a JSON object (may be empty). */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/store/kerchunk.h"

/* One template, with variables i, j and big. */
FUZZ_TARGET(kerchunk_render) {
  const uint8_t *nul = memchr(data, '\0', size);
  size_t tlen = nul ? (size_t)(nul - data) : 0;
  struct zerr err = {0};
  json_t *templates =
      tlen ? json_loadb((const char *)data, tlen, 0, NULL) : NULL;
  char *tmpl =
      nul ? fuzz_strndup(nul + 1, size - tlen - 1) : fuzz_strndup(data, size);
  static const char *const names[] = {"i", "j", "big"};
  static const int64_t vals[] = {3, -7, INT64_MAX};
  char *out = NULL;
  if (tmpl && kerchunk_render(tmpl, templates, names, vals, 3, &out, &err) == 0)
    free(out);
  free(tmpl);
  json_decref(templates);
  return 0;
}
