/* fuzz_namespace.c - the path namespace (fs/namespace/namespace.c): which path
 * is a directory, a stored key, a chunk view (K.txt) or an array view
 * (values.txt), with the chunk key parsing behind it; then what stat,
 * readdir and read do with the entry. Input: a path (up to its first NUL).
 * The store is a small fixed tree (V3 group, numeric and string arrays, a
 * V2 array) in the private directory; an engine is made per input. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../fs/engine/engine.h"
#include "../../fs/namespace/namespace.h"
#include "../../fs/namespace/ns_dir.h"
#include "../../src/store/store.h"

#define I32(v) v, 0, 0, 0

static const char arr_json[] =
    "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[3,4],"
    "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":\"regular\","
    "\"configuration\":{\"chunk_shape\":[2,2]}},\"chunk_key_encoding\":{"
    "\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
    "\"fill_value\":-1,\"codecs\":[{\"name\":\"bytes\",\"configuration\":{"
    "\"endian\":\"little\"}}]}";
static const char str_json[] =
    "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[3],"
    "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
    "\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":{"
    "\"name\":\"default\",\"configuration\":{\"separator\":\".\"}},"
    "\"fill_value\":\"\",\"codecs\":[{\"name\":\"vlen-utf8\"}]}";
static const char v2_zarray[] =
    "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[2],\"dtype\":\"<i2\","
    "\"compressor\":null,\"fill_value\":0,\"filters\":null,\"order\":\"C\"}";
static const char group_json[] =
    "{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":{}}";
static const uint8_t chunk_i32[16] = {I32(1), I32(2), I32(3), I32(4)};
static const uint8_t chunk_str[] = {I32(2), I32(1), 'a', I32(2), 'b', '\n'};
static const uint8_t chunk_i16[4] = {7, 0, 8, 0};

/* The store directory, made once; NULL when it cannot be made. */
static const char *store_dir(void) {
  static char dir[4200];
  static int made;
  const char *t = fuzz_tmpdir();
  if (!t || made)
    return t ? dir : NULL;
  snprintf(dir, sizeof dir, "%s/ns", t);
  static const char *const dirs[] = {"",        "arr", "arr/c", "arr/c/0",
                                     "arr/c/1", "s",   "v2",    "grp"};
  char p[4300];
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++) {
    snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
    if (mkdir(p, 0755) < 0)
      return NULL;
  }
  if (fuzz_put_file(dir, "zarr.json", group_json, sizeof group_json - 1) ||
      fuzz_put_file(dir, "grp/zarr.json", group_json, sizeof group_json - 1) ||
      fuzz_put_file(dir, "arr/zarr.json", arr_json, sizeof arr_json - 1) ||
      fuzz_put_file(dir, "arr/c/0/0", chunk_i32, sizeof chunk_i32) ||
      fuzz_put_file(dir, "arr/c/1/1", chunk_i32, sizeof chunk_i32) ||
      fuzz_put_file(dir, "s/zarr.json", str_json, sizeof str_json - 1) ||
      fuzz_put_file(dir, "s/c.0", chunk_str, sizeof chunk_str) ||
      fuzz_put_file(dir, "v2/.zarray", v2_zarray, sizeof v2_zarray - 1) ||
      fuzz_put_file(dir, "v2/0", chunk_i16, sizeof chunk_i16))
    return NULL;
  made = 1;
  return dir;
}

/* stat, then readdir or two reads, as the FUSE layer would. */
static void use_entry(struct engine *e, const struct ns_entry *ent,
                      const char *path) {
  struct zerr err = {0};
  uint64_t size = 0;
  if (ns_size(e, ent, &size, &err) < 0)
    return;
  if (ent->kind == NS_DIR) {
    struct ns_dir *d;
    if (ns_dir_open(e, path, &d, &err) == 0) {
      for (size_t i = 0; i < ns_dir_count(d); i++) {
        struct ns_dirent de;
        ns_dir_get(d, i, &de);
      }
      ns_dir_free(d);
    }
  } else if (ent->kind == NS_CHUNK_VIEW || ent->kind == NS_ARRAY_VIEW) {
    char buf[256];
    ns_read_view(e, ent, 0, sizeof buf, buf, NULL, &err);
    if (size > 8)
      ns_read_view(e, ent, size - 8, 8, buf, NULL, &err);
  }
}

/* One path. */
FUZZ_TARGET(namespace) {
  const char *dir = store_dir();
  if (!dir || size > 4096)
    return 0;
  char *path = fuzz_strndup(data, size);
  struct store *s;
  struct zerr err = {0};
  if (!path || store_open_local(dir, &s, &err) < 0) {
    free(path);
    return 0;
  }
  struct engine_config cfg = {16u << 20, FUZZ_MAX_DECODED, 1 << 10, 0, 0, 0};
  struct engine *e;
  if (engine_new(s, &cfg, &e, &err) == 0) {
    struct ns_entry *ent = malloc(sizeof *ent);
    if (ent && ns_resolve(e, path, ent, &err) == 0)
      use_entry(e, ent, path);
    free(ent);
    engine_free(e);
  }
  free(path);
  return 0;
}
