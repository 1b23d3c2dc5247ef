/* flatbuf.h - a small verified reader of flatbuffers (Icechunk's metadata
 * files), without generated code.
 *
 * Every accessor checks what it follows before it reads: a table's
 * soffset, its vtable (inside the buffer, 2-aligned, at least 4 bytes,
 * field slots inside the vtable), each field (inside the table's inline
 * size, aligned to its size), each uoffset (4-aligned, pointing inside
 * the buffer), each vector and string (length prefix inside the buffer,
 * elements and a string's NUL terminator inside it too, no overflow), so
 * no byte of file data indexes memory unchecked. A hostile buffer is
 * -EIO with a reason ("flatbuffer: ..."); callers prefix the file name.
 *
 * Handles (struct fb_table, struct fb_vec) are small values pointing into
 * the caller's buffer (borrowed: it must outlive them). Each table reached
 * from another counts one level; past FB_MAX_DEPTH levels the access
 * fails, so a circular chain of offsets cannot make a walker loop. Buffers
 * above FB_MAX_SIZE (2 GiB - 1, the flatbuffers limit) are refused. */
#ifndef ZARRFS_FLATBUF_H
#define ZARRFS_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

#define FB_MAX_DEPTH 64
#define FB_MAX_SIZE 0x7fffffffu

/* A checked table: pos is its start, vt its vtable. */
struct fb_table {
  const uint8_t *buf;
  uint32_t len;   /* buffer length */
  uint32_t pos;   /* table start (its soffset) */
  uint32_t vt;    /* vtable start */
  uint16_t vtlen; /* vtable bytes */
  uint16_t tlen;  /* table inline bytes */
  int depth;      /* tables followed from the root */
};

/* A checked vector: n elements of elem bytes from pos. */
struct fb_vec {
  const uint8_t *buf;
  uint32_t len;
  uint32_t pos;  /* first element */
  uint32_t n;    /* element count */
  uint32_t elem; /* element size */
  int depth;     /* of the table holding it */
};

/* Little-endian loads from a checked pointer. */
uint16_t fb_le16(const uint8_t *p);
uint32_t fb_le32(const uint8_t *p);
uint64_t fb_le64(const uint8_t *p);

/* The root table of buf[0..len). */
int fb_root(const uint8_t *buf, size_t len, struct fb_table *out,
            struct zerr *err);

/* Is field id present (a non-zero vtable slot)? */
int fb_has(const struct fb_table *t, unsigned id);

/* Unsigned scalar field of size bytes (1, 2, 4, 8); def when absent. A
 * signed field is read with the same size and cast by the caller. */
int fb_scalar(const struct fb_table *t, unsigned id, unsigned size,
              uint64_t def, uint64_t *out, struct zerr *err);

/* Inline struct field of size bytes, aligned to align: *out points at its
 * bytes. Returns 1 present, 0 absent (*out NULL), or a negative errno. */
int fb_struct(const struct fb_table *t, unsigned id, unsigned size,
              unsigned align, const uint8_t **out, struct zerr *err);

/* Table field (also a union's value). 1 present, 0 absent, <0 error. */
int fb_table(const struct fb_table *t, unsigned id, struct fb_table *out,
             struct zerr *err);

/* String field: *s points at n bytes followed by a NUL (the bytes may
 * hold NULs of their own: callers that need C strings check). 1 present,
 * 0 absent (*s NULL, *n 0), <0 error. */
int fb_string(const struct fb_table *t, unsigned id, const char **s,
              uint32_t *n, struct zerr *err);

/* Vector field of elem-byte elements (scalars, structs; 4 for tables and
 * strings) whose body is aligned to align. 1 present, 0 absent (an empty
 * vector), <0 error. */
int fb_vector(const struct fb_table *t, unsigned id, unsigned elem,
              unsigned align, struct fb_vec *out, struct zerr *err);

/* Element i of v (i < v->n, checked): its bytes. NULL when out of range. */
const uint8_t *fb_vec_at(const struct fb_vec *v, uint32_t i);
/* Table element i of a vector of tables. */
int fb_vec_table(const struct fb_vec *v, uint32_t i, struct fb_table *out,
                 struct zerr *err);
/* String element i of a vector of strings. */
int fb_vec_string(const struct fb_vec *v, uint32_t i, const char **s,
                  uint32_t *n, struct zerr *err);

/* A union field: type byte at slot id, value table at slot id + 1 (how
 * flatbuffers lays out `u: U`). *type 0 (NONE) leaves out untouched and
 * returns 0; otherwise returns 1 with the value table. */
int fb_union(const struct fb_table *t, unsigned id, uint8_t *type,
             struct fb_table *out, struct zerr *err);

/* ---- FlexBuffers (schema-less, Icechunk's repository configuration) ----
 * The same rules: every offset, width and length is checked before it is
 * followed; values nested deeper than FB_MAX_DEPTH are refused. */

/* Types of a FlexBuffers value (those a reader of maps needs named). */
enum fb_flex_type {
  FB_FLEX_NULL = 0,
  FB_FLEX_INT = 1,
  FB_FLEX_UINT = 2,
  FB_FLEX_FLOAT = 3,
  FB_FLEX_KEY = 4,
  FB_FLEX_STRING = 5,
  FB_FLEX_MAP = 9,
  FB_FLEX_VECTOR = 10,
  FB_FLEX_BOOL = 26,
};

/* A value: the slot holding it (pos, width bytes) and its packed type. */
struct fb_flex {
  const uint8_t *buf;
  uint32_t len;
  uint32_t pos;   /* the slot */
  uint8_t width;  /* bytes of the slot: 1, 2, 4 or 8 */
  uint8_t packed; /* type << 2 | log2 of the child's width */
  int depth;
};

/* The type of a value (enum fb_flex_type, or another FlexBuffers type). */
int fb_flex_type(const struct fb_flex *v);
/* The root value of buf[0..len). */
int fb_flex_root(const uint8_t *buf, size_t len, struct fb_flex *out,
                 struct zerr *err);
/* Elements of a map or an untyped vector. */
int fb_flex_size(const struct fb_flex *v, uint32_t *n, struct zerr *err);
/* Element i of a map or an untyped vector. */
int fb_flex_at(const struct fb_flex *v, uint32_t i, struct fb_flex *out,
               struct zerr *err);
/* Key i of a map: *s NUL-terminated, *n its length. */
int fb_flex_key(const struct fb_flex *map, uint32_t i, const char **s,
                uint32_t *n, struct zerr *err);
/* The value of key in a map: 1 found, 0 not (or not a map), <0 error. */
int fb_flex_get(const struct fb_flex *map, const char *key, struct fb_flex *out,
                struct zerr *err);
/* A string or key value: 1 with *s (NUL-terminated) and *n, 0 when v is
 * another type, <0 error. */
int fb_flex_string(const struct fb_flex *v, const char **s, uint32_t *n,
                   struct zerr *err);

#endif
