/* hparse.c - Content-Range values and S3 error codes (see hparse.h). */
#include "hparse.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* "bytes a-b/T" or "bytes * /T" (no space), after leading spaces. */
int hparse_content_range(const char *v, uint64_t *start, uint64_t *end,
                         uint64_t *total) {
  while (*v == ' ')
    v++;
  if (strncasecmp(v, "bytes ", 6))
    return 0;
  v += 6;
  unsigned long long a, b, t;
  if (v[0] == '*') {
    if (sscanf(v, "*/%llu", &t) != 1)
      return 0;
    *total = t;
    return 2;
  }
  int n = 0;
  if (sscanf(v, "%llu-%llu/%n", &a, &b, &n) != 2 || n <= 0)
    return 0;
  *start = a;
  *end = b;
  *total = v[n] == '*' ? UINT64_MAX : strtoull(v + n, NULL, 10);
  return 1;
}

/* Between <Code> and </Code>. */
void hparse_error_code(const char *body, size_t len, char *out, size_t n) {
  out[0] = '\0';
  const char *s = len ? strstr(body, "<Code>") : NULL;
  if (!s)
    return;
  s += 6;
  const char *e = strstr(s, "</Code>");
  if (!e || (size_t)(e - s) >= n - 3)
    return;
  snprintf(out, n, " (%.*s)", (int)(e - s), s);
}
