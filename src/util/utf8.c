/* utf8.c - UTF-8 and hex digits (see utf8.h). */
#include "utf8.h"

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
