/* thrift.h - a bounded reader of the Thrift compact protocol, the encoding
 * of Parquet's footer (FileMetaData) and page headers.
 *
 * The reader walks a byte range it never leaves: every varint, length,
 * list count and nesting level is checked against what is left and against
 * fixed limits before it is used, so a truncated or lying input is an
 * error (-EIO with a reason naming what was read and where), never a read
 * past the range, a huge allocation or deep recursion. It allocates
 * nothing: strings are borrowed views of the input.
 *
 * A struct is read as a loop of thrift_field calls, each giving a field id
 * and type, until the stop field; the caller reads the fields it knows
 * with the typed readers (which check the type the field says it has) and
 * hands the others to thrift_skip, so fields added by newer writers pass.
 * Pure: no locks, no global state. */
#ifndef ZARRFS_THRIFT_H
#define ZARRFS_THRIFT_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* Compact protocol types (the low nibble of a field header). */
enum thrift_type {
  THRIFT_STOP = 0,
  THRIFT_TRUE = 1, /* a bool field whose value is true */
  THRIFT_FALSE = 2,
  THRIFT_BYTE = 3,
  THRIFT_I16 = 4,
  THRIFT_I32 = 5,
  THRIFT_I64 = 6,
  THRIFT_DOUBLE = 7,
  THRIFT_BINARY = 8,
  THRIFT_LIST = 9,
  THRIFT_SET = 10,
  THRIFT_MAP = 11,
  THRIFT_STRUCT = 12,
  THRIFT_UUID = 13,
};

/* Structs nested deeper than this are refused (Parquet needs 5). */
#define THRIFT_MAX_DEPTH 32

/* A reader over [start, end). what names the input in messages ("footer",
 * "page header"); err (may be NULL) receives the first failure. */
struct thrift_r {
  const uint8_t *start, *p, *end;
  int depth;
  const char *what;
  struct zerr *err;
};

/* The state of one struct being read: the last field id (field headers
 * give ids as deltas from it). */
struct thrift_st {
  int16_t last;
};

/* Start reading len bytes at data. */
void thrift_init(struct thrift_r *r, const void *data, size_t len,
                 const char *what, struct zerr *err);
/* Bytes read so far. */
size_t thrift_pos(const struct thrift_r *r);

/* Enter a struct (checks the nesting limit): 0 or -EIO. Pair with
 * thrift_leave after its stop field. */
int thrift_enter(struct thrift_r *r, struct thrift_st *st);
void thrift_leave(struct thrift_r *r);
/* thrift_leave, then rc (the last thrift_field's result): for the loops
 * that read a struct. */
int thrift_leave_rc(struct thrift_r *r, int rc);
/* The next field of the struct st: 1 and its id and type, 0 at the stop
 * field, or -EIO. */
int thrift_field(struct thrift_r *r, struct thrift_st *st, int16_t *id,
                 int *type);

/* Typed values of a field of type `type` (or a list element of that
 * type): -EIO when the type is not the one asked for, when the varint
 * runs past the end or overflows, or when the value does not fit. */
int thrift_i32(struct thrift_r *r, int type, int32_t *v);
int thrift_i64(struct thrift_r *r, int type, int64_t *v);
/* A bool field (its value is its type) or list element (one byte). */
int thrift_bool(struct thrift_r *r, int type, int in_list, int *v);
/* A binary (or string) value: a view of the input, len bytes. */
int thrift_binary(struct thrift_r *r, int type, const uint8_t **p, size_t *len);
/* A list or set header: its element type and count. The count is checked
 * against the bytes left (every element takes at least one byte). */
int thrift_list(struct thrift_r *r, int type, int *etype, uint32_t *count);
/* Skip a value of the given type (structs and containers whole, within
 * the nesting limit). */
int thrift_skip(struct thrift_r *r, int type);

/* A failure at the reader's position: -EIO, with "WHAT at byte N: " and
 * the reason in r->err. For the readers of the structs built on this. */
int thrift_fail(struct thrift_r *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
