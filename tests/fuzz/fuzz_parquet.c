/* fuzz_parquet.c - kerchunk Parquet references: the Parquet reader of
 * src/parquet/ (bounded Thrift footer, page headers, decompression, levels,
 * PLAIN and dictionary values) and the record table of src/store/pqrefs.c,
 * as the store reaches them. An input starting with '{' is a .zmetadata
 * instead: its metadata table, arrays and chunk keys (pqrefs_meta_parse,
 * pqrefs_chunk, pqrefs_chunk_name). Seeds: the record files and .zmetadata
 * of tests/data/parquet-refs/ (parquet-wasm and hyparquet-writer). */
#include "fuzz.h"

#include <stdio.h>
#include <string.h>

#include "../../src/parquet/parquet.h"
#include "../../src/store/pqrefs.h"

/* Every column of the file, whatever its name and type. */
static void read_columns(const uint8_t *data, size_t size) {
  struct parquet_limits lim;
  parquet_limits_default(&lim);
  lim.max_page = 1u << 20;
  lim.max_rows = 1u << 16;
  lim.max_bytes = 4u << 20;
  struct parquet_file *f;
  struct zerr err = {0};
  if (parquet_open(data, size, &lim, &f, &err) < 0)
    return;
  static const char *const names[] = {"path", "offset", "size", "raw"};
  for (int i = 0; i < 4; i++) {
    struct parquet_col *c = NULL;
    int k = parquet_column(f, names[i]);
    if (k >= 0 && parquet_read(f, k, &c, &err) == 0 && c->n &&
        c->type == 6 /* BYTE_ARRAY */)
      (void)c->off[c->n]; /* the last offset is there */
    parquet_col_free(c);
  }
  parquet_close(f);
}

/* The record table: every row looked up. */
static void record(const uint8_t *data, size_t size) {
  struct manifest *m = NULL;
  uint64_t rows = 0;
  struct zerr err = {0};
  if (pqrefs_record(data, size, "f/refs.0.parq", "/base", 4096, &m, &rows,
                    &err) < 0)
    return;
  for (uint64_t i = 0; i < rows; i++) {
    char key[24];
    struct manifest_entry en;
    snprintf(key, sizeof key, "%llu", (unsigned long long)i);
    if (manifest_lookup(m, key, &en) == 0 && en.kind == MF_INLINE && en.length)
      (void)en.data[en.length - 1];
  }
  manifest_free(m);
}

/* A .zmetadata: its arrays' chunk keys both ways. */
static void zmetadata(const uint8_t *data, size_t size) {
  struct pqrefs_meta *m = NULL;
  struct zerr err = {0};
  (void)pqrefs_is_zmetadata((const char *)data, size);
  if (pqrefs_meta_parse((const char *)data, size, &m, &err) < 0)
    return;
  for (size_t i = 0; i < m->nfields && i < 8; i++) {
    const struct pqrefs_field *f = &m->fields[i];
    for (uint64_t n = 0; n < f->nchunks && n < 16; n++) {
      char name[PQREFS_MAX_DIMS * 21 + 1], key[4200];
      pqrefs_chunk_name(f, n, name, sizeof name);
      snprintf(key, sizeof key, "%s%s%s", f->name, *f->name ? "/" : "", name);
      size_t fi;
      uint64_t back;
      (void)pqrefs_chunk(m, key, &fi, &back, &err);
    }
  }
  pqrefs_meta_free(m);
}

/* One record file or .zmetadata. */
FUZZ_TARGET(parquet) {
  if (size && data[0] == '{') {
    zmetadata(data, size);
    return 0;
  }
  read_columns(data, size);
  record(data, size);
  return 0;
}
