/* pqrefs.h - kerchunk references in Parquet: fsspec's LazyReferenceMapper
 * format, what kerchunk and VirtualiZarr write for large reference sets.
 *
 *   ROOT/.zmetadata          {"metadata": {KEY: DOC, ...}, "record_size": R}
 *   ROOT/FIELD/refs.N.parq   references of array FIELD, chunks N*R ...
 *
 * The metadata documents (".zgroup", "FIELD/.zarray", ...) are served as
 * the text of their value in .zmetadata (what fsspec's json.dumps gives
 * for a .zmetadata fsspec wrote). The references' own files (.zmetadata,
 * which is no consolidated metadata: it has no zarr_consolidated_format,
 * and the record files) are not keys of the store: its key space is the
 * Zarr store they describe, as for kerchunk JSON references.
 * Chunk key FIELD/i.j.k is chunk number n, the C-order ravel of (i, j, k)
 * over the grid ceil(shape / chunks) (a 0-d array has chunk 0, key "0");
 * its reference is row n % R of FIELD/refs.{n / R}.parq, read with the
 * Parquet reader of src/parquet/: `raw` not null is the chunk's bytes;
 * else a null `path` is a missing chunk (fill value); else offset 0 and
 * size 0 is the whole object at path (as are absent offset and size
 * columns); else bytes [offset, offset + size) of path. A record file that
 * does not exist holds only missing chunks; a row the file does not have
 * is an error. Paths resolve as kerchunk JSON targets do (relative to the
 * root, file:// URLs, http(s) and s3 URLs) and are read under the same
 * confinement (src/store/confine.h). A malformed row fails its chunk only.
 *
 * The store (store_pqrefs.c) reads record files through the store that
 * holds the folder (local, HTTP or S3) when a chunk in them is first
 * needed, keeps their tables in a memo of its own (src/util/memo.h, level
 * MEMO_LEVEL_STORE) within a byte budget, and lists an array's chunk keys
 * by reading its record files one at a time. */
#ifndef ZARRFS_PQREFS_H
#define ZARRFS_PQREFS_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "manifest.h"
#include "store.h"

/* Largest record_size accepted (rows of one record file). */
#define PQREFS_MAX_RECORD_SIZE (1u << 22)
/* Dimensions of an array. */
#define PQREFS_MAX_DIMS 32

/* An array of the references. */
struct pqrefs_field {
  char *name;                     /* "a", "g/b"; "" for a root array (owned) */
  int ndim;                       /* dimensions (0: one chunk, key "0") */
  uint64_t grid[PQREFS_MAX_DIMS]; /* chunks along each dimension */
  uint64_t nchunks;
  char sep;      /* the chunk key separator ('.') */
  char why[256]; /* non-empty: every key of its chunks fails with this */
};

/* A parsed .zmetadata. Immutable: shared by threads without locks. */
struct pqrefs_meta {
  uint64_t record_size;
  struct manifest *docs; /* metadata keys -> their text */
  struct pqrefs_field *fields;
  size_t nfields;
};

/* Is text (the content of a .zmetadata) a Parquet reference root: a JSON
 * object with an integer "record_size" and a "metadata" object? */
int pqrefs_is_zmetadata(const char *text, size_t len);

/* Parse .zmetadata (len bytes of text). *out is owned by the caller
 * (pqrefs_meta_free). -EIO with the reason. */
int pqrefs_meta_parse(const char *text, size_t len, struct pqrefs_meta **out,
                      struct zerr *err);
/* Free; NULL-safe. */
void pqrefs_meta_free(struct pqrefs_meta *m);

/* Is key a chunk key of an array? 1 with the array's index and the chunk
 * number; 0 when it is not below an array or names no chunk; -ENOENT for
 * a chunk key outside the grid; -EIO (err: the array's why) for a key
 * below an array whose chunks cannot be served. */
int pqrefs_chunk(const struct pqrefs_meta *m, const char *key, size_t *field,
                 uint64_t *n, struct zerr *err);
/* The key of chunk n relative to its array ("3.0.1"; "0" when 0-d). */
void pqrefs_chunk_name(const struct pqrefs_field *f, uint64_t n, char *out,
                       size_t cap);

/* A record file's references as a table keyed by row number ("0", "1",
 * ...), missing rows not listed; *rows gets the file's row count. name
 * names the file in messages; base (an absolute directory or a URL)
 * resolves relative paths. A file of more than max_rows rows, or not
 * Parquet, is -EIO with the reason. *out is owned by the caller. */
int pqrefs_record(const uint8_t *data, size_t len, const char *name,
                  const char *base, uint64_t max_rows, struct manifest **out,
                  uint64_t *rows, struct zerr *err);

/* When inner (a local or remote store, taken over) holds Parquet
 * references at its root, the store of them in *out and 1; else *out =
 * inner and 0. Record tables are kept within budget bytes; record files
 * above max_file bytes are refused. confine (borrowed) must outlive the
 * store. On failure inner is freed. */
int store_wrap_pqrefs(struct store *inner, const struct confine *c,
                      size_t budget, size_t max_file, struct store **out,
                      struct zerr *err);

/* Record files loaded so far by a store of store_wrap_pqrefs (fills of
 * its memo, failed ones and absent files included): for tests and logs. */
uint64_t store_pqrefs_loads(const struct store *s);

#endif
