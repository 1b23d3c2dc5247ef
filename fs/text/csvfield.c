/* csvfield.c - values as RFC 4180 fields (see csvfield.h). */
#include "csvfield.h"

#include <string.h>

/* A comma, a quote, CR or LF: what makes a field need quotes. */
static int special(char c) {
  return c == ',' || c == '"' || c == '\r' || c == '\n';
}

int csvfield_needs_quotes(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (special(s[i]))
      return 1;
  return 0;
}

size_t csvfield_len(const char *s, size_t n) {
  if (!csvfield_needs_quotes(s, n))
    return n;
  size_t q = 0;
  for (size_t i = 0; i < n; i++)
    q += s[i] == '"';
  return n + q + 2;
}

size_t csvfield_put(const char *s, size_t n, char *dst) {
  if (!csvfield_needs_quotes(s, n)) {
    memcpy(dst, s, n);
    return n;
  }
  size_t w = 0;
  dst[w++] = '"';
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"')
      dst[w++] = '"';
    dst[w++] = s[i];
  }
  dst[w++] = '"';
  return w;
}

int csvfield_is_missing(const char *s, size_t n) {
  return (n == 3 && !memcmp(s, "nan", 3)) || (n == 3 && !memcmp(s, "NaT", 3)) ||
         (n == 8 && !memcmp(s, "nan+nanj", 8));
}

int csvfield_float_integral(const char *s, size_t n) {
  size_t i = n && s[0] == '-';
  if (i == n)
    return 0;
  for (; i < n; i++)
    if (s[i] < '0' || s[i] > '9')
      return 0;
  return 1;
}

size_t csvfield_hex(const uint8_t *b, size_t n, char *dst) {
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    dst[2 * i] = hex[b[i] >> 4];
    dst[2 * i + 1] = hex[b[i] & 15];
  }
  return 2 * n;
}
