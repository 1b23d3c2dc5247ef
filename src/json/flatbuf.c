/* flatbuf.c - checked accessors over a flatbuffer (see flatbuf.h). All
 * positions are computed in 64 bits and compared with the buffer length
 * before any load. */
#include "flatbuf.h"

#include <string.h>

/* Little-endian 16-bit load. */
uint16_t fb_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* Little-endian 32-bit load. */
uint32_t fb_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Little-endian 64-bit load. */
uint64_t fb_le64(const uint8_t *p) {
  return (uint64_t)fb_le32(p) | (uint64_t)fb_le32(p + 4) << 32;
}

/* Check a table at pos and fill *out (depth given by the caller). */
static int table_at(const uint8_t *buf, uint32_t len, uint64_t pos, int depth,
                    struct fb_table *out, struct zerr *err) {
  if (depth > FB_MAX_DEPTH)
    return zerr_set(err, EIO, "flatbuffer: tables nested deeper than %d",
                    FB_MAX_DEPTH);
  if (pos % 4 || pos + 4 > len)
    return zerr_set(err, EIO,
                    "flatbuffer: table at %llu is out of bounds "
                    "or misaligned",
                    (unsigned long long)pos);
  int32_t so = (int32_t)fb_le32(buf + pos);
  int64_t vt = (int64_t)pos - so;
  if (vt < 0 || vt % 2 || (uint64_t)vt + 4 > len)
    return zerr_set(err, EIO,
                    "flatbuffer: vtable of table at %llu is out "
                    "of bounds or misaligned",
                    (unsigned long long)pos);
  uint16_t vtlen = fb_le16(buf + vt), tlen = fb_le16(buf + vt + 2);
  if (vtlen < 4 || vtlen % 2 || (uint64_t)vt + vtlen > len)
    return zerr_set(err, EIO,
                    "flatbuffer: vtable of table at %llu has a "
                    "bad length %u",
                    (unsigned long long)pos, vtlen);
  if (tlen < 4 || pos + tlen > len)
    return zerr_set(err, EIO, "flatbuffer: table at %llu has a bad size %u",
                    (unsigned long long)pos, tlen);
  *out = (struct fb_table){buf,   len,  (uint32_t)pos, (uint32_t)vt,
                           vtlen, tlen, depth};
  return 0;
}

/* The root table: the uoffset at 0, checked like every other. */
int fb_root(const uint8_t *buf, size_t len, struct fb_table *out,
            struct zerr *err) {
  if (len > FB_MAX_SIZE)
    return zerr_set(err, EIO, "flatbuffer: larger than 2 GiB");
  if (len < 8)
    return zerr_set(err, EIO, "flatbuffer: only %zu bytes", len);
  return table_at(buf, (uint32_t)len, fb_le32(buf), 0, out, err);
}

/* The field's offset inside the table, 0 when absent. */
static uint16_t field_off(const struct fb_table *t, unsigned id) {
  uint64_t slot = 4 + 2 * (uint64_t)id;
  if (slot + 2 > t->vtlen)
    return 0;
  return fb_le16(t->buf + t->vt + slot);
}

/* A field is present when its vtable slot exists and is not 0. */
int fb_has(const struct fb_table *t, unsigned id) {
  return field_off(t, id) != 0;
}

/* Position of a present field of size bytes aligned to align, checked. */
static int field_pos(const struct fb_table *t, unsigned id, unsigned size,
                     unsigned align, uint32_t *pos, struct zerr *err) {
  uint16_t fo = field_off(t, id);
  if (!fo)
    return 0;
  uint64_t p = (uint64_t)t->pos + fo;
  if ((uint64_t)fo + size > t->tlen || p + size > t->len)
    return zerr_set(err, EIO,
                    "flatbuffer: field %u of table at %u lies "
                    "outside the table",
                    id, t->pos);
  if (align > 1 && p % align)
    return zerr_set(err, EIO,
                    "flatbuffer: field %u of table at %u is "
                    "misaligned",
                    id, t->pos);
  *pos = (uint32_t)p;
  return 1;
}

/* A scalar field, aligned to its size, inside the table. */
int fb_scalar(const struct fb_table *t, unsigned id, unsigned size,
              uint64_t def, uint64_t *out, struct zerr *err) {
  uint32_t p = 0;
  int rc = field_pos(t, id, size, size, &p, err);
  if (rc <= 0) {
    *out = def;
    return rc;
  }
  switch (size) {
  case 1:
    *out = t->buf[p];
    break;
  case 2:
    *out = fb_le16(t->buf + p);
    break;
  case 4:
    *out = fb_le32(t->buf + p);
    break;
  case 8:
    *out = fb_le64(t->buf + p);
    break;
  default:
    return zerr_set(err, EINVAL, "flatbuffer: scalar of %u bytes", size);
  }
  return 0;
}

/* An inline struct field, inside the table and aligned. */
int fb_struct(const struct fb_table *t, unsigned id, unsigned size,
              unsigned align, const uint8_t **out, struct zerr *err) {
  uint32_t p = 0;
  *out = NULL;
  int rc = field_pos(t, id, size, align, &p, err);
  if (rc <= 0)
    return rc;
  *out = t->buf + p;
  return 1;
}

/* Follow the uoffset stored at p (already checked to lie in the buffer). */
static int follow(const uint8_t *buf, uint32_t len, uint32_t p, uint64_t *to,
                  struct zerr *err) {
  if (p % 4)
    return zerr_set(err, EIO, "flatbuffer: offset at %u is misaligned", p);
  uint64_t target = (uint64_t)p + fb_le32(buf + p);
  if (target >= len)
    return zerr_set(err, EIO,
                    "flatbuffer: offset at %u points past the end "
                    "(%llu of %u)",
                    p, (unsigned long long)target, len);
  *to = target;
  return 0;
}

/* Follow a table field one level down (depth counted). */
int fb_table(const struct fb_table *t, unsigned id, struct fb_table *out,
             struct zerr *err) {
  uint32_t p = 0;
  int rc = field_pos(t, id, 4, 4, &p, err);
  if (rc <= 0)
    return rc;
  uint64_t to;
  ZTRY(follow(t->buf, t->len, p, &to, err));
  ZTRY(table_at(t->buf, t->len, to, t->depth + 1, out, err));
  return 1;
}

/* Check a vector whose length prefix is at pos. */
static int vec_at(const uint8_t *buf, uint32_t len, uint64_t pos, unsigned elem,
                  unsigned align, int depth, struct fb_vec *out,
                  struct zerr *err) {
  if (pos % 4 || pos + 4 > len)
    return zerr_set(err, EIO,
                    "flatbuffer: vector at %llu is out of bounds "
                    "or misaligned",
                    (unsigned long long)pos);
  uint32_t n = fb_le32(buf + pos);
  uint64_t body = pos + 4;
  if ((uint64_t)n * elem > len - body) /* n < 2^32, elem small: no wrap */
    return zerr_set(err, EIO,
                    "flatbuffer: vector at %llu claims %u "
                    "elements of %u bytes, past the end",
                    (unsigned long long)pos, n, elem);
  if (align > 1 && body % align)
    return zerr_set(err, EIO, "flatbuffer: vector at %llu is misaligned",
                    (unsigned long long)pos);
  *out = (struct fb_vec){buf, len, (uint32_t)body, n, elem, depth};
  return 0;
}

/* Follow a vector field and check its whole body. */
int fb_vector(const struct fb_table *t, unsigned id, unsigned elem,
              unsigned align, struct fb_vec *out, struct zerr *err) {
  *out = (struct fb_vec){t->buf, t->len, 0, 0, elem, t->depth};
  if (elem == 0)
    return zerr_set(err, EINVAL, "flatbuffer: vector of empty elements");
  uint32_t p = 0;
  int rc = field_pos(t, id, 4, 4, &p, err);
  if (rc <= 0)
    return rc;
  uint64_t to;
  ZTRY(follow(t->buf, t->len, p, &to, err));
  ZTRY(vec_at(t->buf, t->len, to, elem, align, t->depth, out, err));
  return 1;
}

/* Element i, or NULL past the end. */
const uint8_t *fb_vec_at(const struct fb_vec *v, uint32_t i) {
  if (i >= v->n)
    return NULL;
  return v->buf + v->pos + (uint64_t)i * v->elem;
}

/* Follow the uoffset of element i to its table. */
int fb_vec_table(const struct fb_vec *v, uint32_t i, struct fb_table *out,
                 struct zerr *err) {
  if (i >= v->n || v->elem != 4)
    return zerr_set(err, EIO, "flatbuffer: table %u of a vector of %u", i,
                    v->n);
  uint64_t to;
  ZTRY(follow(v->buf, v->len, v->pos + 4 * i, &to, err));
  return table_at(v->buf, v->len, to, v->depth + 1, out, err);
}

/* Check a string whose length prefix is at pos. */
static int string_at(const uint8_t *buf, uint32_t len, uint64_t pos,
                     const char **s, uint32_t *n, struct zerr *err) {
  struct fb_vec v = {0};
  ZTRY(vec_at(buf, len, pos, 1, 1, 0, &v, err));
  if ((uint64_t)v.pos + v.n >= len || buf[v.pos + v.n] != 0)
    return zerr_set(err, EIO,
                    "flatbuffer: string at %llu is not "
                    "terminated",
                    (unsigned long long)pos);
  *s = (const char *)buf + v.pos;
  *n = v.n;
  return 0;
}

/* Follow a string field: length, bytes and NUL inside the buffer. */
int fb_string(const struct fb_table *t, unsigned id, const char **s,
              uint32_t *n, struct zerr *err) {
  *s = NULL;
  *n = 0;
  uint32_t p = 0;
  int rc = field_pos(t, id, 4, 4, &p, err);
  if (rc <= 0)
    return rc;
  uint64_t to;
  ZTRY(follow(t->buf, t->len, p, &to, err));
  ZTRY(string_at(t->buf, t->len, to, s, n, err));
  return 1;
}

/* Follow the uoffset of element i to its string. */
int fb_vec_string(const struct fb_vec *v, uint32_t i, const char **s,
                  uint32_t *n, struct zerr *err) {
  if (i >= v->n || v->elem != 4)
    return zerr_set(err, EIO, "flatbuffer: string %u of a vector of %u", i,
                    v->n);
  uint64_t to;
  ZTRY(follow(v->buf, v->len, v->pos + 4 * i, &to, err));
  return string_at(v->buf, v->len, to, s, n, err);
}

/* A union: the type slot, then the value slot after it. */
int fb_union(const struct fb_table *t, unsigned id, uint8_t *type,
             struct fb_table *out, struct zerr *err) {
  uint64_t ty;
  ZTRY(fb_scalar(t, id, 1, 0, &ty, err));
  *type = (uint8_t)ty;
  if (ty == 0)
    return 0;
  int rc = fb_table(t, id + 1, out, err);
  if (rc == 0)
    return zerr_set(err, EIO,
                    "flatbuffer: union field %u of table at %u has "
                    "type %u but no value",
                    id, t->pos, *type);
  return rc < 0 ? rc : 1;
}
