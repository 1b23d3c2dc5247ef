/* fuzz_strtext.c - string elements made text (fs/text/render.c,
 * src/util/utf8.c): their newlines as spaces and their bytes that are not UTF-8
 * as '?'. The input is the elements' bytes; its first byte seeds their lengths.
 * Every way of making the text must give the bytes of a reference written here
 * from Unicode's table of well-formed sequences (a mismatch aborts):
 * render_str_fix in place, render_var_run over the whole and over ranges
 * handed only the range's bytes and their context, utf8_fix per element.
 * Then utf8_quote of each element must be a JSON string that jansson
 * reads back (the element itself when it is UTF-8). */
#include "fuzz.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/text/render.h"
#include "../../src/util/utf8.h"

/* Elements at most (the lengths come from a small generator). */
#define STRTEXT_MAX 64

/* Length of the well-formed sequence at p[0, n), 0 if none (Unicode
 * 3.9, Table 3-7): the reference, apart from src/util/utf8.c. */
static size_t ref_len(const uint8_t *p, size_t n) {
  unsigned b = p[0], lo = 0x80, hi = 0xbf;
  size_t len;
  if (b < 0x80)
    return 1;
  if (b >= 0xc2 && b <= 0xdf)
    len = 2;
  else if (b >= 0xe0 && b <= 0xef)
    len = 3, lo = b == 0xe0 ? 0xa0 : 0x80, hi = b == 0xed ? 0x9f : 0xbf;
  else if (b >= 0xf0 && b <= 0xf4)
    len = 4, lo = b == 0xf0 ? 0x90 : 0x80, hi = b == 0xf4 ? 0x8f : 0xbf;
  else
    return 0;
  if (len > n || p[1] < lo || p[1] > hi)
    return 0;
  for (size_t i = 2; i < len; i++)
    if (p[i] < 0x80 || p[i] > 0xbf)
      return 0;
  return len;
}

/* One element's text, by the reference. */
static void ref_text(const uint8_t *s, size_t n, char *out) {
  for (size_t i = 0; i < n;) {
    size_t k = ref_len(s + i, n - i);
    if (!k) {
      out[i++] = '?';
      continue;
    }
    for (size_t j = 0; j < k; j++, i++)
      out[i] = s[i] == '\n' ? ' ' : (char)s[i];
  }
}

/* Check every way against the reference. */
FUZZ_TARGET(strtext) {
  if (size < 1)
    return 0;
  uint32_t seed = data[0];
  const uint8_t *bytes = data + 1;
  size_t nbytes = size - 1;
  uint64_t eo[STRTEXT_MAX + 1];
  uint64_t n = 0, base = 5; /* offsets need not start at 0 */
  eo[0] = base;
  while (n < STRTEXT_MAX && eo[n] - base < nbytes) {
    seed = seed * 1103515245u + 12345u;
    uint64_t len = (seed >> 16) % 24;
    if (len > nbytes - (eo[n] - base))
      len = nbytes - (eo[n] - base);
    eo[n + 1] = eo[n] + len;
    n++;
  }
  /* the elements may stop short of the bytes (at STRTEXT_MAX of them) */
  size_t tsize = (size_t)(eo[n] - base) + (size_t)n;
  char *want = malloc(tsize + 1), *got = malloc(tsize + 1);
  uint8_t *copy = malloc(nbytes + 1);
  if (!want || !got || !copy)
    goto out;
  for (uint64_t j = 0, t = 0; j < n; j++) {
    size_t l = (size_t)(eo[j + 1] - eo[j]);
    ref_text(bytes + (eo[j] - base), l, want + t);
    want[t + l] = '\n';
    t += l + 1;
  }
  /* in place, newlines left out */
  memcpy(copy, bytes, nbytes);
  render_str_fix(eo, n, copy);
  for (uint64_t j = 0, t = 0; j < n; j++) {
    size_t l = (size_t)(eo[j + 1] - eo[j]);
    if (memcmp(copy + (eo[j] - base), want + t, l))
      abort();
    t += l + 1;
  }
  /* per element */
  for (uint64_t j = 0, t = 0; j < n; j++) {
    size_t l = (size_t)(eo[j + 1] - eo[j]);
    memcpy(copy, bytes + (eo[j] - base), l);
    utf8_fix(copy, l);
    for (size_t i = 0; i < l; i++)
      if (copy[i] != (want[t + i] == ' ' && bytes[eo[j] - base + i] == '\n'
                          ? '\n'
                          : (uint8_t)want[t + i]))
        abort();
    t += l + 1;
  }
  /* runs over ranges, each handed just its bytes and their context */
  struct dtype dt = dtype_of(DT_STRING);
  for (int r = 0; r < 8; r++) {
    seed = seed * 1103515245u + 12345u;
    uint64_t off = tsize ? (seed >> 8) % (tsize + 1) : 0;
    uint64_t end = off + (r == 0 ? tsize : (seed >> 20) % 40);
    if (end > tsize)
      end = tsize;
    /* source bytes the range covers, and 3 of each element either side */
    uint64_t sa = eo[n], sb = eo[0];
    for (uint64_t j = 0, q = 0; j < n; j++) {
      uint64_t l = eo[j + 1] - eo[j];
      if (q < end && q + l > off && l) {
        uint64_t a = off > q ? off - q : 0, b = end - q < l ? end - q : l;
        if (a < b) {
          uint64_t x = eo[j] + a, y = eo[j] + b;
          x = x - eo[j] > RENDER_UTF8_CONTEXT ? x - RENDER_UTF8_CONTEXT : eo[j];
          y = eo[j + 1] - y > RENDER_UTF8_CONTEXT ? y + RENDER_UTF8_CONTEXT
                                                  : eo[j + 1];
          sa = x < sa ? x : sa;
          sb = y > sb ? y : sb;
        }
      }
      q += l + 1;
    }
    if (sb < sa)
      sa = sb = eo[0];
    memcpy(copy, bytes + (sa - base), (size_t)(sb - sa));
    memset(got, '#', tsize + 1);
    render_var_run(&dt, eo, 0, n, 0, copy, sa, sb - sa, off, end, got);
    if (memcmp(got, want + off, (size_t)(end - off)) || got[end - off] != '#')
      abort();
  }
  /* quoted, each element reads back as JSON */
  for (uint64_t j = 0; j < n; j++) {
    size_t l = (size_t)(eo[j + 1] - eo[j]);
    char *s = malloc(l + 1);
    if (!s)
      break;
    memcpy(s, bytes + (eo[j] - base), l);
    s[l] = '\0';
    size_t sl = strlen(s); /* up to a NUL */
    memcpy(copy, s, sl);
    int valid = utf8_fix(copy, sl) == 0;
    char *q = utf8_quote(s);
    json_t *v = q ? json_loads(q, JSON_DECODE_ANY, NULL) : NULL;
    if (q && (!json_is_string(v) || (valid && strcmp(json_string_value(v), s))))
      abort();
    json_decref(v);
    free(q);
    free(s);
  }
out:
  free(want);
  free(got);
  free(copy);
  return 0;
}
