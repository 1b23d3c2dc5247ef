/* base64.c - standard base64 decoding (see base64.h). */
#include "base64.h"

#include <errno.h>
#include <stdlib.h>

/* Value of a base64 character (standard alphabet) or -1. */
static int b64val(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/* Standard base64 into fresh bytes. Padding may be present or left out,
 * but only at the end; a lone trailing character (6 bits) is refused. */
int zbase64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len) {
  size_t pad = 0;
  while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
    pad++;
  size_t nd = n - pad; /* data characters */
  if ((pad && n % 4) || nd % 4 == 1)
    return -EINVAL;
  uint8_t *p = malloc(nd / 4 * 3 + 3);
  if (!p)
    return -ENOMEM;
  size_t len = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < nd; i++) {
    int v = b64val(s[i]);
    if (v < 0) {
      free(p);
      return -EINVAL;
    }
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      p[len++] = (uint8_t)(acc >> bits);
    }
  }
  *out = p;
  *out_len = len;
  return 0;
}

/* CPython's binascii_a2b_base64 with strict_mode off, step by step: a pad
 * counts only after two data characters of a quad, and 4 - (quad
 * position) of them end the input; a skipped character resets nothing. */
int zbase64_decode_python(const char *s, size_t n, uint8_t **out,
                          size_t *out_len) {
  uint8_t *p = malloc(n / 4 * 3 + 3);
  if (!p)
    return -ENOMEM;
  size_t len = 0;
  int quad = 0, pads = 0;
  unsigned left = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '=') {
      if (quad >= 2 && quad + ++pads >= 4)
        goto done;
      continue;
    }
    int v = b64val(s[i]);
    if (v < 0)
      continue;
    pads = 0;
    switch (quad) {
    case 0:
      left = (unsigned)v;
      break;
    case 1:
      p[len++] = (uint8_t)(left << 2 | (unsigned)v >> 4);
      left = (unsigned)v & 0x0f;
      break;
    case 2:
      p[len++] = (uint8_t)(left << 4 | (unsigned)v >> 2);
      left = (unsigned)v & 0x03;
      break;
    default:
      p[len++] = (uint8_t)(left << 6 | (unsigned)v);
      break;
    }
    quad = (quad + 1) % 4;
  }
  if (quad != 0) {
    free(p);
    return -EINVAL;
  }
done:
  *out = p;
  *out_len = len;
  return 0;
}
