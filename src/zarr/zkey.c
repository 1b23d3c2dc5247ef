/* zkey.c - store key validity (see zkey.h). */
#include "zkey.h"

#include <errno.h>
#include <string.h>

/* Refuse keys that could name something outside the store. */
int zkey_valid(const char *key) {
  if (!key || !*key || key[0] == '/')
    return -EINVAL;
  const char *seg = key;
  for (;;) {
    const char *end = strchr(seg, '/');
    size_t n = end ? (size_t)(end - seg) : strlen(seg);
    if (n == 0 || (n == 1 && seg[0] == '.') ||
        (n == 2 && seg[0] == '.' && seg[1] == '.'))
      return -EINVAL;
    if (!end)
      return 0;
    seg = end + 1;
  }
}
