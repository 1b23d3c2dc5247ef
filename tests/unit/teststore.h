/* teststore.h - helpers shared by the unit tests that build small stores
 * on disk and read them through the engine without FUSE: write a file
 * (with its parent directories) or a V3 1-D array's metadata, open an
 * engine over a directory, read a
 * view's whole text. Header-only, test code only (failures abort the test). */
#ifndef ZARRFS_TESTSTORE_H
#define ZARRFS_TESTSTORE_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../fs/engine/engine.h"
#include "../../fs/namespace/namespace.h"
#include "../../src/store/store.h"

/* Write len bytes to dir/rel, creating parent directories. */
static inline void ts_put_file(const char *dir, const char *rel,
                               const void *data, size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  for (char *p = path + strlen(dir) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "%s", path);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

/* Write the zarr.json of a V3 1-D array `name` under dir: shape n, chunks
 * of c, data type, fill value and codecs given as JSON text. */
static inline void ts_put_v3_1d(const char *dir, const char *name, int n,
                                int c, const char *dtype, const char *fill,
                                const char *codecs) {
  char doc[4096], key[512];
  snprintf(doc, sizeof doc,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":%s,\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":%s,\"codecs\":%s}",
           n, dtype, c, fill, codecs);
  ck_assert_uint_lt(strlen(doc), sizeof doc - 1);
  snprintf(key, sizeof key, "%s/zarr.json", name);
  ts_put_file(dir, key, doc, strlen(doc));
}

/* An engine over a local directory with cfg; the test fails if either
 * cannot be opened. */
static inline struct engine *ts_engine(const char *dir,
                                       const struct engine_config *cfg) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_msg(store_open_local(dir, &s, &err) == 0, "%s", err.msg);
  struct engine *e;
  ck_assert_msg(engine_new(s, cfg, &e, &err) == 0, "%s", err.msg);
  return e;
}

/* An engine over a local directory (a 64 MiB cache). */
static inline struct engine *ts_open_engine(const char *dir) {
  struct engine_config cfg = {64u << 20, 1u << 28, 1 << 12, 0, 0};
  return ts_engine(dir, &cfg);
}

/* A fresh temporary directory /tmp/zarrfs-TAG-XXXXXX in dir (cap bytes)
 * holding a V3 group's zarr.json: the root of a test store. */
static inline void ts_new_v3_group(char *dir, size_t cap, const char *tag) {
  int n = snprintf(dir, cap, "/tmp/zarrfs-%s-XXXXXX", tag);
  ck_assert(n > 0 && (size_t)n < cap && mkdtemp(dir) != NULL);
  const char *g = "{\"zarr_format\":3,\"node_type\":\"group\"}";
  ts_put_file(dir, "zarr.json", g, strlen(g));
}

/* The whole text of a view (a path in the mount's namespace), read in
 * pieces of step bytes; caller frees. NULL when it fails, with err set. */
static inline char *ts_view_text(struct engine *e, const char *path,
                                 size_t step, struct zerr *err) {
  struct ns_entry ent;
  uint64_t size;
  if (ns_resolve(e, path, &ent, err) < 0 || ns_size(e, &ent, &size, err) < 0)
    return NULL;
  char *text = malloc(size + 1);
  ck_assert_ptr_nonnull(text);
  uint64_t off = 0;
  while (off < size) {
    long n = ns_read_view(e, &ent, off, step, text + off, NULL, err);
    if (n <= 0) {
      free(text);
      return NULL;
    }
    off += (uint64_t)n;
  }
  text[off] = '\0';
  return text;
}

#endif
