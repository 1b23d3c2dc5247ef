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
