/* dtype.h - Zarr data types and their fill values.
 *
 * A data type is parsed once from metadata into a small value struct. Fixed
 * size types hold elements in host byte order once decoded (the `bytes`
 * codec swaps); variable-size types (`string`, `bytes`) hold raw bytes. */
#ifndef ZARRFS_DTYPE_H
#define ZARRFS_DTYPE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

enum dtype_kind {
  DT_UNSUPPORTED = 0, /* parsed, but not supported: views fail, raw keys work */
  DT_BOOL,
  DT_INT8,
  DT_INT16,
  DT_INT32,
  DT_INT64,
  DT_UINT8,
  DT_UINT16,
  DT_UINT32,
  DT_UINT64,
  DT_FLOAT16,
  DT_FLOAT32,
  DT_FLOAT64,
  DT_DATETIME64,  /* numpy.datetime64: int64 counts of `unit` since
                    1970-01-01T00:00, INT64_MIN is NaT; shown as ISO 8601 */
  DT_FIXED_UTF32, /* fixed_length_utf32 / numpy U: size/4 code points,
                    NUL padded; shown as UTF-8 text */
  DT_FIXED_BYTES, /* numpy S: size bytes, NUL padded; shown as text */
  DT_STRING,      /* variable length UTF-8 */
  DT_BYTES,       /* variable length binary (`bytes`, `binary`,
                     `variable_length_bytes`) */
  DT_COMPLEX64,   /* two float32: real, imaginary */
  DT_COMPLEX128,  /* two float64: real, imaginary */
  DT_BFLOAT16,    /* the upper 16 bits of a float32 */
  DT_TIMEDELTA64, /* numpy.timedelta64: int64 counts of `unit`, INT64_MIN
                     is NaT; shown as an ISO 8601 duration */
  DT_RAW,         /* r<N>, raw_bytes, numpy V: size opaque bytes; shown as
                     hex of every byte */
  DT_INT2,        /* zarrs extensions: one byte per element in memory */
  DT_INT4,        /* (signed: sign-extended to the byte) */
  DT_UINT2,
  DT_UINT4,
  DT_OPTIONAL, /* zarrs.optional (`depth` layers) of a numeric kind, of
                  string or bytes. Fixed-size inner: the inner element's
                  bytes then one byte, 0 for a missing value (all zero);
                  size is the inner size + 1, per layer. Variable inner
                  (size 0): a missing value has no bytes, a present one is
                  the byte 1 then the inner element's bytes (per layer, so
                  an element shorter than `depth` bytes is missing at that
                  layer). Shown as null ([null] when missing inside a
                  present layer) */
  DT_STRUCT,   /* numpy structured (record) type of Zarr V2: the fields
                  `st` describes (src/zarr/dtype_struct.h), each in its
                  own byte order; size is the item size. Decoded elements
                  keep the stored bytes (nothing is swapped) */
};

/* Most zarrs.optional layers a data type may have. */
#define DTYPE_OPTIONAL_MAX_DEPTH 8

/* Units of numpy.datetime64 (the values numpy uses for them). */
enum dtype_time_unit {
  DTU_Y = 0,
  DTU_M,
  DTU_W,
  DTU_D,
  DTU_h,
  DTU_m,
  DTU_s,
  DTU_ms,
  DTU_us,
  DTU_ns
};

struct dtype_struct; /* dtype_struct.h */

struct dtype {
  enum dtype_kind kind;
  size_t size;   /* bytes per element; 0 for variable-length kinds */
  char name[64]; /* the name as written in metadata (for messages) */
  enum dtype_time_unit unit;     /* DT_DATETIME64, DT_TIMEDELTA64: the unit of
                                    one count */
  int64_t scale;                 /* the same: units per count (>= 1) */
  enum dtype_kind inner;         /* DT_OPTIONAL: the kind of a present value
                                    of the innermost layer (unit and scale above
                                    are its) */
  unsigned depth;                /* DT_OPTIONAL: layers (0 is read as 1) */
  const struct dtype_struct *st; /* DT_STRUCT: the fields (borrowed from
                                    the owner of the parsed metadata,
                                    struct zmeta) */
};

/* Parse a V3 `data_type` value (short-hand string or {"name": ...}). An
 * unknown name is not an error: kind is DT_UNSUPPORTED and name says which. A
 * value that is neither a string nor an object with a string name is -EIO. */
int dtype_parse_v3(json_t *j, struct dtype *out, struct zerr *err);

/* Kind and size from a numpy type string of Zarr V2 ("<i4", "|b1",
 * ">M8[ns]", "<U5", "|S3", "|V4"); *endian is 'l', 'b' or 0 (a single
 * byte, or a type without byte order). A string that names no type we
 * hold gives DT_UNSUPPORTED named by the string (never an error). */
void dtype_parse_numpy(const char *s, struct dtype *dt, char *endian);

/* The descriptor for a known kind (used for vlen index/data chains). */
struct dtype dtype_of(enum dtype_kind kind);

/* True for string/bytes. */
int dtype_is_variable(const struct dtype *dt);

/* True when decoded elements are variable-length: string, bytes, and
 * zarrs.optional of them (the codecs for string/bytes check
 * dtype_is_variable instead, so they refuse optional types). */
int dtype_has_var_elements(const struct dtype *dt);

/* Parse a numpy time unit ("D", "s", "ms", ...): 0, or -1 if unknown. */
int dtype_time_unit_parse(const char *s, enum dtype_time_unit *out);

/* Bytes that a byte-order swap reverses together: 4 for UTF-32 code
 * units, 1 for byte strings and raw bytes, half the size for complex
 * numbers, the element size otherwise. */
size_t dtype_swap_unit(const struct dtype *dt);

/* True for the fixed-width kinds that views show as variable-length text:
 * numpy U (as UTF-8), numpy S / null_terminated_bytes and raw bytes (as
 * hex). */
int dtype_is_fixed_string(const struct dtype *dt);

/* The type of a present value of a DT_OPTIONAL type: its inner type, a
 * DT_OPTIONAL of one layer fewer when nested. */
struct dtype dtype_optional_inner(const struct dtype *dt);

/* Integer kinds: 1 and the value width in bits (2 for int2, 64 for
 * uint64), *is_signed set; 0 for every other kind. */
int dtype_int_bits(const struct dtype *dt, unsigned *bits, int *is_signed);

/* An integer literal too long for int64, which zjson_loadb hands over as
 * a string of digits (an optional '-' then decimal digits; JavaScript
 * writes 1e20 as 100000002004087730000), as Python's float() reads the
 * int: *out correctly rounded. 0, or -1 when s is no such literal or
 * overflows a double (Python: OverflowError). */
int dtype_int_literal(const char *s, double *out);

/* Parse a V3 fill_value for dt into freshly malloc'd bytes (*out, *out_len,
 * owned by the caller): for fixed-size kinds dt->size bytes in host order;
 * for string the UTF-8 bytes; for bytes the decoded bytes (base64 string or
 * array of 0..255 integers). Accepts "NaN", "Infinity", "-Infinity" and
 * "0x..." bit patterns for floats (also for each part of a complex
 * [re, im]); base64 or an integer array for raw and fixed bytes; "NaT" or
 * an integer for datetime / timedelta. For DT_UNSUPPORTED returns 0 with
 * no bytes. A value that does not fit the type is -EIO. */
int dtype_parse_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                     size_t *out_len, struct zerr *err);

/* dtype_parse_fill for the fill_value of V2 metadata (not null): the same,
 * except a numpy S type, read as zarr-python 2 reads it: base64 when the
 * text decodes as Python's b64decode decodes it, else the text's own
 * bytes (kerchunk writes " " for netCDF char arrays: NULs); integers and
 * booleans as their Python text; cut to the width. */
int dtype_parse_fill_v2(const struct dtype *dt, json_t *fill, uint8_t **out,
                        size_t *out_len, struct zerr *err);

#endif
