/* fuzz_jlex.c - the JSON lexer (src/json/jlex.c) against jansson.
 *
 * Each input is one document, lexed as a whole value with every flag set
 * and checked both ways against jansson (JSON_DECODE_ANY|JSON_ALLOW_NUL):
 * what jansson accepts the strict lexer accepts; what the strict lexer
 * accepts jansson accepts unless a number is out of jansson's range. Every
 * string the lexer accepts decodes to well-formed UTF-8 no longer than its
 * text. */
#include "fuzz.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/json/jlex.h"
#include "../../src/util/utf8.h"

/* Check every string token of the text: decoding never lengthens, never
 * makes ill-formed UTF-8, matches jansson's decoding of the same token. */
static void strings(const char *text, size_t size, unsigned flags) {
  struct zerr err;
  struct jlex l;
  jlex_init(&l, text, size, flags, &err);
  while (l.p < l.end) {
    if (*l.p != '"') {
      l.p++;
      continue;
    }
    const char *at = l.p;
    struct jlex_str s;
    if (jlex_string(&l, &s) < 0) {
      l.p = at + 1;
      continue;
    }
    char *out = malloc(s.len + 1);
    if (!out)
      return;
    size_t n = jlex_unescape(&s, out);
    if (n > s.len || out[n])
      abort();
    for (const uint8_t *p = (uint8_t *)out, *e = p + n; p < e;) {
      size_t k = utf8_valid(p, e);
      if (!k)
        abort();
      p += k;
    }
    if (!flags) { /* the same token through jansson decodes the same */
      json_t *j = json_loadb(at, (size_t)(l.p - at),
                             JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
      if (j &&
          (json_string_length(j) != n || memcmp(json_string_value(j), out, n)))
        abort();
      if (!j)
        abort(); /* strict lexer accepted a string jansson refuses */
      json_decref(j);
    }
    free(out);
  }
}

/* Does the text hold a number token jansson may refuse for its range (an
 * integer beyond int64, a real that overflows)? Then only one direction
 * of the comparison holds. */
static int has_big_number(const char *text, size_t size) {
  size_t run = 0;
  for (size_t i = 0; i < size; i++) {
    run = text[i] >= '0' && text[i] <= '9' ? run + 1 : 0;
    if (run >= 19 || ((text[i] == 'e' || text[i] == 'E') && i &&
                      text[i - 1] >= '0' && text[i - 1] <= '9'))
      return 1;
  }
  return 0;
}

/* Does a NUL byte follow a number or a literal (true, false, null) right
 * after its last character? jansson 2.14 reads "[3\0]" as [3] (its token
 * reader stops at the NUL and the NUL is then skipped); the lexer refuses
 * the NUL, as JSON does. Then only the other direction holds. */
static int has_nul_after_token(const char *text, size_t size) {
  for (size_t i = 1; i < size; i++) {
    char c = text[i - 1];
    if (!text[i] && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z')))
      return 1;
  }
  return 0;
}

FUZZ_TARGET(jlex) {
  /* The fixture seeds hold documents of hundreds of KB; the lexer's cases
   * fit in far less, and short inputs keep the executions many. */
  if (size > 16384)
    size = 16384;
  const char *text = (const char *)data;
  struct zerr err;
  struct jlex l;
  /* strict: one value and nothing after it */
  jlex_init(&l, text, size, 0, &err);
  int ok = jlex_skip(&l) == 0 && jlex_at_end(&l);
  /* jansson nests 2048 deep, the lexer 1000: compare short inputs only */
  if (size < 2000) {
    json_t *j = json_loadb(text, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    if (j && !ok && !has_nul_after_token(text, size))
      abort(); /* jansson accepted what the lexer refused */
    if (!j && ok && !has_big_number(text, size))
      abort(); /* the lexer accepted what jansson refused */
    json_decref(j);
  }
  /* the relaxed flags accept at least what strict accepts */
  for (unsigned flags = 1; flags < 4; flags++) {
    jlex_init(&l, text, size, flags, &err);
    int relaxed = jlex_skip(&l) == 0 && jlex_at_end(&l);
    if (ok && !relaxed)
      abort();
  }
  strings(text, size, 0);
  strings(text, size, JLEX_LONE_SURROGATE);
  /* numbers wherever one may start */
  for (size_t i = 0; i < size && i < 4096; i++) {
    char c = text[i];
    if (c != '-' && c != 'N' && c != 'I' && !(c >= '0' && c <= '9'))
      continue;
    jlex_init(&l, text + i, size - i, JLEX_NONFINITE, &err);
    struct jlex_num n;
    if (jlex_number(&l, &n) == 0 &&
        (n.len == 0 || n.len > size - i || (n.fits_u64 && !n.integer)))
      abort();
  }
  return 0;
}
