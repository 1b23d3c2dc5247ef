/* fuzz_htindex.c - directory index pages of web servers
 * (src/store/htindex.c): one input read as the page of two directories,
 * every entry checked to be a single file name. */
#include "fuzz.h"

#include <string.h>

#include "../../src/store/htindex.h"

/* An entry is one name: never empty, never a '/', never "." or "..". */
static int fz_entry(void *ud, const char *name, size_t len, int is_dir) {
  if (!len || len > 255 || strlen(name) != len || memchr(name, '/', len) ||
      !strcmp(name, ".") || !strcmp(name, ".."))
    __builtin_trap();
  *(size_t *)ud += len + (size_t)is_dir;
  return 0;
}

/* One page, listed as the root of a host and as a directory below it. */
FUZZ_TARGET(htindex) {
  size_t seen = 0;
  struct zerr err = {0};
  htindex_parse((const char *)data, size, "http://h/", fz_entry, &seen, &err);
  htindex_parse((const char *)data, size, "https://h:8443/data/store/",
                fz_entry, &seen, &err);
  return 0;
}
