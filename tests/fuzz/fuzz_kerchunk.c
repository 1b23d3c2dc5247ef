/* fuzz_kerchunk.c - kerchunk reference files (version 0 and 1): the
 * streaming scanner over the refs object, templates, gen, inline and
 * base64 values, then the frozen table (lookups, listings, inline reads).
 * No target file is opened. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/store/kerchunk.h"

struct list {
  const struct manifest *m;
  const char *dir;
  int depth;
  int budget; /* names left to visit */
};

static void list_dir(const struct manifest *m, const char *dir, int depth,
                     int *budget);

/* One listed name: look it up, read it when inline, list below it. */
static int list_cb(void *ud, const char *name, enum store_entry_type type,
                   uint64_t size, int64_t mtime) {
  (void)mtime;
  struct list *l = ud;
  if (--l->budget < 0)
    return 1;
  char key[1024];
  if (snprintf(key, sizeof key, "%s%s%s", l->dir, *l->dir ? "/" : "", name) >=
      (int)sizeof key)
    return 0;
  struct manifest_entry en;
  if (manifest_lookup(l->m, key, &en) == 0 && en.kind == MF_INLINE) {
    struct bytesrc *src;
    struct zerr err = {0};
    if (manifest_open(l->m, &en, NULL, NULL, &src, &err) == 0) {
      char buf[256];
      size_t n = src->size < sizeof buf ? (size_t)src->size : sizeof buf;
      bytesrc_read_range(src, src->size - n, n, buf, &err);
      bytesrc_unref(src);
    }
  }
  if (manifest_is_dir(l->m, key) && l->depth < 8)
    list_dir(l->m, key, l->depth + 1, &l->budget);
  return 0;
}

/* List dir and below (bounded). */
static void list_dir(const struct manifest *m, const char *dir, int depth,
                     int *budget) {
  struct list l = {m, dir, depth, *budget};
  struct zerr err = {0};
  manifest_list(m, dir, STORE_MTIME_UNKNOWN, list_cb, &l, &err);
  *budget = l.budget;
}

/* One reference file. */
FUZZ_TARGET(kerchunk) {
  char *text = fuzz_strndup(data, size);
  if (!text)
    return 0;
  struct manifest *m = NULL;
  struct zerr err = {0};
  if (kerchunk_load_mem(text, size, "fuzz.json", "/nonexistent", &m, &err) ==
      0) {
    int budget = 4096;
    manifest_count(m);
    list_dir(m, "", 0, &budget);
    manifest_free(m);
  }
  free(text);
  return 0;
}
