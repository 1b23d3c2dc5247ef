/* fuzz_manifest.c - VirtualiZarr manifest.json (chunk-manifest-json
 * storage transformer): the manifest parser of src/store/store_vzarr.c reached
 * as the mount reaches it, through a local store wrapped by
 * store_wrap_vzarr, then listings and reads of the chunk keys it makes.
 * Input: the manifest.json text. Targets may only be read under the
 * private directory (which holds a 64-byte blob.bin); remote ones are
 * forbidden. */
#include "fuzz.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "../../src/store/confine.h"
#include "../../src/store/store.h"

static const char zarr_json[] =
    "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4,4],"
    "\"data_type\":\"uint8\",\"chunk_grid\":{\"name\":\"regular\","
    "\"configuration\":{\"chunk_shape\":[2,2]}},\"chunk_key_encoding\":{"
    "\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
    "\"fill_value\":0,\"codecs\":[{\"name\":\"bytes\"}],"
    "\"storage_transformers\":[{\"name\":\"chunk-manifest-json\","
    "\"configuration\":{\"manifest\":\"./manifest.json\"}}]}";

/* The store: a/zarr.json, a/blob.bin; NULL when it cannot be made. */
static const char *store_dir(void) {
  static int made;
  const char *dir = fuzz_tmpdir();
  if (!dir || made)
    return dir;
  char a[4200];
  snprintf(a, sizeof a, "%s/a", dir);
  uint8_t blob[64];
  for (int i = 0; i < 64; i++)
    blob[i] = (uint8_t)i;
  if (mkdir(a, 0755) < 0 ||
      fuzz_put_file(a, "zarr.json", zarr_json, sizeof zarr_json - 1) < 0 ||
      fuzz_put_file(a, "blob.bin", blob, sizeof blob) < 0)
    return NULL;
  made = 1;
  return dir;
}

/* Read key whole (chunks here are at most 8 bytes unless corrupt). */
static void read_key(struct store *s, const char *key) {
  struct bytesrc *src;
  struct zerr err = {0};
  enum store_entry_type t;
  uint64_t sz;
  store_stat(s, key, &t, &sz, &err);
  if (store_get(s, key, &src, &err) == 0) {
    char buf[64];
    if (src->size <= sizeof buf)
      bytesrc_read_range(src, 0, (size_t)src->size, buf, &err);
    bytesrc_unref(src);
  }
}

/* A directory being listed. */
struct listing {
  struct store *s;
  const char *prefix;
};

/* A listed name: read it when it is a file. */
static int get_cb(void *ud, const char *name, enum store_entry_type type,
                  uint64_t size, int64_t mtime) {
  (void)mtime;
  const struct listing *l = ud;
  char key[600];
  snprintf(key, sizeof key, "%s/%s", l->prefix, name);
  if (type == STORE_FILE)
    read_key(l->s, key);
  return 0;
}

/* One manifest.json. */
FUZZ_TARGET(manifest) {
  const char *dir = store_dir();
  char a[4200];
  if (!dir)
    return 0;
  snprintf(a, sizeof a, "%s/a", dir);
  if (fuzz_put_file(a, "manifest.json", data, size) < 0)
    return 0;
  struct confine *c = NULL;
  struct store *local = NULL, *s = NULL;
  struct zerr err = {0};
  if (confine_new(&c, &err) < 0)
    return 0;
  confine_forbid_remote(c);
  /* store_wrap_vzarr owns local from here on, also when it fails */
  if (confine_add_root(c, dir, &err) == 0 &&
      store_open_local(dir, &local, &err) == 0 &&
      store_wrap_vzarr(local, c, &s, &err) == 0) {
    static const char *const rows[] = {"a", "a/c", "a/c/0", "a/c/1"};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
      struct listing l = {s, rows[r]};
      store_list(s, rows[r], get_cb, &l, &err);
    }
    read_key(s, "a/c/0/0");
    read_key(s, "a/c/1/1");
    store_free(s);
  }
  confine_free(c);
  return 0;
}
