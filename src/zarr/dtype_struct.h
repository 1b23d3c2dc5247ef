/* dtype_struct.h - numpy structured (record) data types of Zarr V2.
 *
 * zarr-python 2 writes a structured `dtype` as numpy's `descr`: a list of
 * [name, type] or [name, type, shape] fields, type being a numpy type
 * string or, for a nested record, a list of the same form; fields follow
 * each other without gaps (padding is written as a field of its own, an
 * empty name with a `|V<n>` type, which numpy names f<index> as it reads).
 *
 * The description flattens the tree into its leaf fields, in field order:
 * a nested field's leaves are named by their path ("pos.x"), a subarray of
 * records repeats the record's leaves per index ("pts[1].x"), and a
 * subarray of a scalar type stays one field with a shape. Each leaf knows
 * its byte offset in the element and its own byte order.
 *
 * Parsed once with the array's metadata, then immutable and shared
 * read-only between threads. */
#ifndef ZARRFS_DTYPE_STRUCT_H
#define ZARRFS_DTYPE_STRUCT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "dtype.h"

/* Limits that keep a hostile .zarray from sizing huge tables: nesting
 * levels of records, leaf fields in all, bytes per element, dimensions of
 * a subarray. */
#define DSTRUCT_MAX_DEPTH 8
#define DSTRUCT_MAX_FIELDS 4096
#define DSTRUCT_MAX_ITEMSIZE (1u << 20)
#define DSTRUCT_MAX_SUBDIMS 8

/* One leaf field. */
struct dtype_field {
  char *name;       /* path from the top, "a", "pos.x", "pts[1].x" (owned by the
                       dtype_struct) */
  char typestr[24]; /* the numpy type string as written ("<f8") */
  struct dtype type; /* a scalar type: bool, integers, floats, complex,
                        datetime64/timedelta64, numpy S, U or V */
  char endian;       /* 'l', 'b', or 0 (a single byte or a byte string) */
  size_t offset;     /* bytes from the start of the element */
  int ndim;          /* subarray dimensions; 0 for a scalar field */
  uint64_t shape[DSTRUCT_MAX_SUBDIMS];
  uint64_t count; /* values of the field: the product of shape, 1 for a
                     scalar field */
};

struct dtype_struct {
  size_t nfields;             /* leaf fields, at least 1 */
  struct dtype_field *fields; /* in field order (owned) */
  size_t itemsize;            /* bytes per element: the sum of the fields */
};

/* Parse a V2 structured dtype (the JSON list). On success *st is a new
 * description owned by the caller (dtype_struct_free) and *out a
 * DT_STRUCT type of its item size whose st points at it (borrowed).
 * Malformed or hostile lists (too deep, too many fields, too large, a
 * name used twice, a type we cannot show, an object field) are -EIO or
 * -ENOTSUP with a message naming the field. */
int dtype_struct_parse(json_t *descr, struct dtype *out,
                       struct dtype_struct **st, struct zerr *err);

/* Free; NULL-safe. */
void dtype_struct_free(struct dtype_struct *st);

#endif
