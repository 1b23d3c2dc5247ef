/* utf8.c - UTF-8 and hex digits (see utf8.h). */
#include "utf8.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

size_t utf8_put(uint8_t *o, uint32_t c) {
  if (c < 0x80) {
    o[0] = (uint8_t)c;
    return 1;
  }
  if (c < 0x800) {
    o[0] = (uint8_t)(0xc0 | c >> 6);
    o[1] = (uint8_t)(0x80 | (c & 0x3f));
    return 2;
  }
  if (c < 0x10000) {
    o[0] = (uint8_t)(0xe0 | c >> 12);
    o[1] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
    o[2] = (uint8_t)(0x80 | (c & 0x3f));
    return 3;
  }
  o[0] = (uint8_t)(0xf0 | c >> 18);
  o[1] = (uint8_t)(0x80 | (c >> 12 & 0x3f));
  o[2] = (uint8_t)(0x80 | (c >> 6 & 0x3f));
  o[3] = (uint8_t)(0x80 | (c & 0x3f));
  return 4;
}

size_t utf8_valid(const uint8_t *p, const uint8_t *end) {
  unsigned c = p[0];
  size_t n;
  uint32_t min;
  if (c < 0x80)
    return 1;
  if (c >= 0xc2 && c <= 0xdf)
    n = 2, min = 0x80;
  else if (c >= 0xe0 && c <= 0xef)
    n = 3, min = 0x800;
  else if (c >= 0xf0 && c <= 0xf4)
    n = 4, min = 0x10000;
  else
    return 0;
  if ((size_t)(end - p) < n)
    return 0;
  uint32_t v = c & (0x3fu >> (n - 1));
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80)
      return 0;
    v = v << 6 | (p[i] & 0x3fu);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return 0;
  return n;
}

/* ASCII runs skipped a vector (or a word) at a time; then byte by byte. */
const uint8_t *utf8_skip_ascii(const uint8_t *p, const uint8_t *end, int also) {
  /* 0x80 matches nothing ASCII: "no extra byte" costs no branch */
  uint8_t c = also >= 0 && also < 0x80 ? (uint8_t)also : 0x80;
#ifdef __SSE2__
  const __m128i cc = _mm_set1_epi8((char)c);
  while (end - p >= 32) {
    __m128i a = _mm_loadu_si128((const __m128i *)p);
    __m128i b = _mm_loadu_si128((const __m128i *)(p + 16));
    /* the high bit of a byte: not ASCII, or the byte looked for */
    unsigned m =
        (unsigned)_mm_movemask_epi8(_mm_or_si128(a, _mm_cmpeq_epi8(a, cc))) |
        (unsigned)_mm_movemask_epi8(_mm_or_si128(b, _mm_cmpeq_epi8(b, cc)))
            << 16;
    if (m)
      return p + __builtin_ctz(m);
    p += 32;
  }
#else
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  while (end - p >= 8) {
    uint64_t w, x;
    memcpy(&w, p, 8);
    x = w ^ (ones * c); /* a zero byte where w holds c */
    if ((w | ((x - ones) & ~x)) & highs)
      break; /* the bytes below find which */
    p += 8;
  }
#endif
  while (p < end && *p < 0x80 && *p != c)
    p++;
  return p;
}

/* Back to the nearest byte that is not a continuation byte, if it starts a
 * sequence that reaches p. */
const uint8_t *utf8_seq_start(const uint8_t *lo, const uint8_t *hi,
                              const uint8_t *p) {
  for (const uint8_t *q = p; q > lo && p - q < 3;) {
    q--;
    if ((*q & 0xc0) != 0x80) {
      size_t n = utf8_valid(q, hi);
      return n && q + n > p ? q : NULL;
    }
  }
  return NULL;
}

/* Every byte of a run of non-ASCII bytes judged in order from the
 * string's start; ASCII between runs skipped fast. */
size_t utf8_fix(uint8_t *s, size_t n) {
  uint8_t *p = s, *end = s + n;
  size_t bad = 0;
  while ((p = (uint8_t *)utf8_skip_ascii(p, end, -1)) < end) {
    while (p < end && *p >= 0x80) {
      size_t k = utf8_valid(p, end);
      if (k) {
        p += k;
      } else {
        *p++ = UTF8_BAD_BYTE;
        bad++;
      }
    }
  }
  return bad;
}

/* A code point no line of text should hold raw: controls, separators. */
static int shown_escaped(uint32_t c) {
  return c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029;
}

/* See utf8.h. */
int utf8_needs_quotes(const char *s, int name) {
  const uint8_t *p = (const uint8_t *)s, *end = p + strlen(s);
  if (*p == '"' || (name && (p == end || *p == ' ' || end[-1] == ' ')))
    return 1;
  while (p < end) {
    size_t n = utf8_valid(p, end);
    if (!n)
      return 1;
    const uint8_t *q = p;
    if (shown_escaped(utf8_next(&q, end)) ||
        (name && n == 1 && strchr("\"\\:,()=", *p)))
      return 1;
    p += n;
  }
  return 0;
}

/* See utf8.h. */
char *utf8_quote(const char *s) {
  size_t len = strlen(s);
  char *out = malloc(6 * len + 3); /* \u00XX at most per byte */
  if (!out)
    return NULL;
  const uint8_t *p = (const uint8_t *)s, *end = p + len;
  size_t o = 0;
  out[o++] = '"';
  while (p < end) {
    const uint8_t *q = p;
    uint32_t c = utf8_valid(p, end) ? utf8_next(&q, end) : 0xfffd;
    const char *e = c == '"'    ? "\\\""
                    : c == '\\' ? "\\\\"
                    : c == '\b' ? "\\b"
                    : c == '\f' ? "\\f"
                    : c == '\n' ? "\\n"
                    : c == '\r' ? "\\r"
                    : c == '\t' ? "\\t"
                                : NULL;
    if (e) {
      memcpy(out + o, e, 2);
      o += 2;
    } else if (shown_escaped(c) || c == 0xfffd) {
      o += (size_t)snprintf(out + o, 7, "\\u%04x", (unsigned)c);
    } else {
      memcpy(out + o, p, (size_t)(q - p));
      o += (size_t)(q - p);
    }
    p = q > p ? q : p + 1; /* a byte that is not UTF-8: one \ufffd */
  }
  out[o++] = '"';
  out[o] = '\0';
  return out;
}

uint32_t utf8_next(const uint8_t **p, const uint8_t *end) {
  const uint8_t *s = *p;
  size_t n = utf8_valid(s, end);
  if (n == 0) {
    /* Skip the lead byte and the continuation bytes that followed it, so
     * one broken sequence gives one U+FFFD. */
    s++;
    if (s[-1] >= 0xc0)
      for (int i = 0; i < 3 && s < end && (*s & 0xc0) == 0x80; i++)
        s++;
    *p = s;
    return 0xfffd;
  }
  uint32_t c = n == 1 ? s[0] : s[0] & (0x3fu >> (n - 1));
  for (size_t i = 1; i < n; i++)
    c = c << 6 | (s[i] & 0x3fu);
  *p = s + n;
  return c;
}

int hex_digit(int c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}
