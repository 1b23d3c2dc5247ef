/* fuzz_listxml.c - the listing pages of object stores (src/net/xlist.c):
 * one input read as an S3 ListObjectsV2 page and as an Azure List Blobs
 * page, every entry delivered through the callbacks. */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/net/azure.h"
#include "../../src/net/s3.h"

/* Touch what a listing hands over, as the store does. */
static int fz_obj(void *ud, const char *key, const char *raw, uint64_t size) {
  *(size_t *)ud += strlen(key) + strlen(raw) + (size_t)(size & 1);
  return 0;
}
static int fz_prefix(void *ud, const char *prefix, const char *raw) {
  *(size_t *)ud += strlen(prefix) + strlen(raw);
  return 0;
}
static int fz_skip(void *ud, const char *raw, const char *why) {
  *(size_t *)ud += strlen(raw) + strlen(why);
  return 0;
}

/* One page, both dialects. */
FUZZ_TARGET(listxml) {
  static const struct s3_list_cbs cbs = {fz_obj, fz_prefix, fz_skip};
  size_t seen = 0;
  int truncated;
  char *next = NULL;
  struct zerr err = {0};
  if (s3_list_parse((const char *)data, size, &cbs, &seen, &truncated, &next,
                    &err) == 0)
    free(next);
  next = NULL;
  if (azure_list_parse((const char *)data, size, &cbs, &seen, &next, &err) == 0)
    free(next);
  return 0;
}
