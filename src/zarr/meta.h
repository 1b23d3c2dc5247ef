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

#include "../util/err.h"
#include "dtype.h"

#define ZMETA_MAX_DIMS 32

enum zmeta_node { ZMETA_GROUP = 1, ZMETA_ARRAY = 2 };
enum zmeta_key_encoding { ZMETA_KEY_DEFAULT = 1, ZMETA_KEY_V2 = 2 };

struct zmeta {
  enum zmeta_node node;
  /* Arrays only below this line. */
  int ndim;                       /* 0 for a scalar array */
  uint64_t shape[ZMETA_MAX_DIMS]; /* array shape */
  uint64_t chunk[ZMETA_MAX_DIMS]; /* chunk length per dimension (> 0); along
                                     a dimension with edge[d], the largest */
  uint64_t grid[ZMETA_MAX_DIMS];  /* chunks per dimension: ceil(shape/chunk),
                                     or the listed chunks that start inside
                                     the array */
  uint64_t nelem;                 /* product of shape (checked) */
  uint64_t chunk_nelem;           /* product of chunk (checked): no chunk
                                     holds more elements */
  uint64_t nchunks;               /* product of grid (checked) */
  /* Rectangular and rectilinear grids: along a dimension whose chunk edge
   * lengths are listed, grid[d]+1 prefix sums (chunk i spans
   * [edge[d][i], edge[d][i+1]); the last may end past shape[d] in a
   * rectilinear grid), owned; NULL: chunks of chunk[d] along d. */
  uint64_t *edge[ZMETA_MAX_DIMS];
  int irregular;         /* some edge[d] is set: chunks differ in shape */
  const char *grid_name; /* "regular", "rectangular" or "rectilinear"
                            (static) */
  struct dtype dtype;
  struct dtype_struct *st; /* owned: the fields of a structured dtype
                              (dtype.st), or NULL */
  uint8_t *fill;           /* owned; see dtype_parse_fill */
  size_t fill_len;
  enum zmeta_key_encoding key_encoding;
  char key_sep;      /* '/' or '.' */
  json_t *codecs;    /* owned reference: the `codecs` list */
  json_t *root;      /* owned reference: the whole document */
  unsigned defaults; /* ZMETA_DEFAULT_*: what was read as zarrita reads it
                        (the node loader logs it once per array) */
};

/* zarrita's defaults, taken where the V3 document leaves them out:
 * "codecs": [] is read as [bytes] little-endian; "fill_value": null of a
 * numeric or bool type as 0 / false, NaN for floats. */
enum zmeta_default {
  ZMETA_DEFAULT_CODECS = 1u << 0,
  ZMETA_DEFAULT_FILL = 1u << 1
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

/* Listed chunk edges kept at most, over all dimensions of an array. */
#define ZMETA_MAX_EDGES (1u << 20)

/* One dimension of a chunk (or unit) grid: chunks of `len` elements, or,
 * when edge is not NULL, the chunks whose prefix sums edge lists. Where
 * chunk i starts: */
static inline uint64_t zmeta_axis_start(const uint64_t *edge, uint64_t len,
                                        uint64_t i) {
  return edge ? edge[i] : i * len;
}

/* The decoded length of chunk i (a regular grid pads its last chunk). */
static inline uint64_t zmeta_axis_len(const uint64_t *edge, uint64_t len,
                                      uint64_t i) {
  return edge ? edge[i + 1] - edge[i] : len;
}

/* The elements of chunk i inside an axis of `shape` elements. */
static inline uint64_t zmeta_axis_ext(const uint64_t *edge, uint64_t len,
                                      uint64_t shape, uint64_t i) {
  uint64_t start = zmeta_axis_start(edge, len, i);
  uint64_t l = zmeta_axis_len(edge, len, i);
  return shape - start < l ? shape - start : l;
}

/* The chunk holding coordinate x (inside the axis) of an axis of n chunks:
 * a division, or a binary search of the edges. */
uint64_t zmeta_axis_of(const uint64_t *edge, uint64_t n, uint64_t len,
                       uint64_t x);

/* The same for chunk i along dimension d of array m. */
static inline uint64_t zmeta_chunk_start(const struct zmeta *m, int d,
                                         uint64_t i) {
  return zmeta_axis_start(m->edge[d], m->chunk[d], i);
}
static inline uint64_t zmeta_chunk_len(const struct zmeta *m, int d,
                                       uint64_t i) {
  return zmeta_axis_len(m->edge[d], m->chunk[d], i);
}
static inline uint64_t zmeta_chunk_extent(const struct zmeta *m, int d,
                                          uint64_t i) {
  return zmeta_axis_ext(m->edge[d], m->chunk[d], m->shape[d], i);
}
static inline uint64_t zmeta_chunk_of(const struct zmeta *m, int d,
                                      uint64_t x) {
  return zmeta_axis_of(m->edge[d], m->grid[d], m->chunk[d], x);
}

/* Write the store key of chunk `idx` (ndim coordinates) relative to the
 * array's own prefix into buf ("c/1/0", "c.1.0", "1.0", "c", "0").
 * Returns the length, or -ENAMETOOLONG. */
int zmeta_chunk_key(const struct zmeta *m, const uint64_t *idx, char *buf,
                    size_t buflen);

/* Parse a chunk key (relative to the array) back into coordinates. Returns
 * 0 and fills idx when key names an in-grid chunk, -ENOENT otherwise. */
int zmeta_parse_chunk_key(const struct zmeta *m, const char *key,
                          uint64_t *idx);

#endif
