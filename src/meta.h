/* meta.h - one in-memory description of a Zarr node, parsed from zarr.json.
 *
 * Parsed once, then immutable: shared read-only between FUSE threads.
 * Problems are split in two:
 *   - metadata that is malformed or contradictory (bad shape, chunk shape 0,
 *     unknown field without must_understand:false, overflowing counts) makes
 *     zmeta_parse fail: the node cannot be decoded at all;
 *   - an unknown data type is not a parse failure: the node is an array with
 *     dtype.kind == DT_UNSUPPORTED; its views fail later with a clear reason.
 *     Unknown codecs are found when the codec chain is built. */
#ifndef ZARRFS_META_H
#define ZARRFS_META_H

#include <jansson.h>
#include <stdint.h>

#include "dtype.h"
#include "err.h"

#define ZMETA_MAX_DIMS 32

enum zmeta_node { ZMETA_GROUP = 1, ZMETA_ARRAY = 2 };
enum zmeta_key_encoding { ZMETA_KEY_DEFAULT = 1, ZMETA_KEY_V2 = 2 };

struct zmeta {
  enum zmeta_node node;
  /* Arrays only below this line. */
  int ndim;                       /* 0 for a scalar array */
  uint64_t shape[ZMETA_MAX_DIMS]; /* array shape */
  uint64_t chunk[ZMETA_MAX_DIMS]; /* regular chunk grid; every entry > 0 */
  uint64_t grid[ZMETA_MAX_DIMS];  /* chunks per dimension: ceil(shape/chunk) */
  uint64_t nelem;                 /* product of shape (checked) */
  uint64_t chunk_nelem;           /* product of chunk (checked) */
  uint64_t nchunks;               /* product of grid (checked) */
  struct dtype dtype;
  uint8_t *fill; /* owned; see dtype_parse_fill */
  size_t fill_len;
  enum zmeta_key_encoding key_encoding;
  char key_sep;   /* '/' or '.' */
  json_t *codecs; /* owned reference: the `codecs` list */
  json_t *root;   /* owned reference: the whole document */
};

/* Parse zarr.json text (len bytes; need not be NUL-terminated). Accepts the
 * lenient forms legacy writers produce (bare NaN/Infinity tokens). On
 * success *out is a new object owned by the caller (zmeta_free). */
int zmeta_parse(const char *text, size_t len, struct zmeta **out,
                struct zerr *err);

/* Parse a Zarr V2 `.zarray` document into the same description: the V2
 * dtype, order, filters and compressor become an equivalent V3 codec list
 * (order "F" -> transpose, `|O` + vlen-* filter -> that array->bytes codec,
 * other dtypes -> bytes with the dtype's endianness, filters and compressor
 * -> bytes->bytes codecs named as zarr-python names them in V3). Keys use
 * the v2 encoding with dimension_separator. */
int zmeta_parse_v2(const char *text, size_t len, struct zmeta **out,
                   struct zerr *err);

/* Free; NULL-safe. */
void zmeta_free(struct zmeta *m);

/* Write the store key of chunk `idx` (ndim coordinates) relative to the
 * array's own prefix into buf ("c/1/0", "c.1.0", "1.0", "c", "0").
 * Returns the length, or -ENAMETOOLONG. */
int zmeta_chunk_key(const struct zmeta *m, const uint64_t *idx, char *buf,
                    size_t buflen);

/* Parse a chunk key (relative to the array) back into coordinates. Returns
 * 0 and fills idx when key names an in-grid chunk, -ENOENT otherwise. */
int zmeta_parse_chunk_key(const struct zmeta *m, const char *key,
                          uint64_t *idx);

/* Clear, then ask, whether a jansson allocation failed in this thread
 * since (jansson reports some as syntax errors): a parse that failed with
 * zjson_oom_seen() set failed for want of memory (ENOMEM, transient). */
void zjson_oom_clear(void);
int zjson_oom_seen(void);

/* Parse JSON text leniently (bare NaN, Infinity, -Infinity become strings
 * "NaN", "Infinity", "-Infinity"); NUL bytes in strings are allowed.
 * Returns a new reference or NULL with err set. */
json_t *zjson_loadb(const char *text, size_t len, struct zerr *err);

#endif
