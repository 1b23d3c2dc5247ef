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

/* ---- FlexBuffers ---- */

/* Unsigned little-endian load of w bytes (1, 2, 4, 8) at p. */
static uint64_t load_w(const uint8_t *p, unsigned w) {
  switch (w) {
  case 1:
    return p[0];
  case 2:
    return fb_le16(p);
  case 4:
    return fb_le32(p);
  default:
    return fb_le64(p);
  }
}

int fb_flex_type(const struct fb_flex *v) { return v->packed >> 2; }

/* Does the type keep its value in the slot itself? */
static int flex_inline(int type) {
  return type == FB_FLEX_NULL || type == FB_FLEX_INT || type == FB_FLEX_UINT ||
         type == FB_FLEX_FLOAT || type == FB_FLEX_BOOL;
}

/* Where an offset value points: the slot's offset subtracted from it. */
static int flex_target(const struct fb_flex *v, uint64_t *to,
                       struct zerr *err) {
  if ((uint64_t)v->pos + v->width > v->len)
    return zerr_set(err, EIO, "flexbuffer: value at %u past the end", v->pos);
  uint64_t off = load_w(v->buf + v->pos, v->width);
  if (flex_inline(fb_flex_type(v)) || off > v->pos)
    return zerr_set(err, EIO, "flexbuffer: offset at %u points outside",
                    v->pos);
  *to = v->pos - off;
  return 0;
}

int fb_flex_root(const uint8_t *buf, size_t len, struct fb_flex *out,
                 struct zerr *err) {
  if (len > FB_MAX_SIZE || len < 3)
    return zerr_set(err, EIO, "flexbuffer: %zu bytes", len);
  uint8_t w = buf[len - 1];
  if ((w != 1 && w != 2 && w != 4 && w != 8) || (size_t)w + 2 > len)
    return zerr_set(err, EIO, "flexbuffer: root width %u", w);
  *out = (struct fb_flex){buf, (uint32_t)len, (uint32_t)(len - 2 - w),
                          w,   buf[len - 2],  0};
  return 0;
}

/* A map's or vector's element area: its start, count and element width. */
static int flex_elems(const struct fb_flex *v, uint64_t *at, uint32_t *n,
                      unsigned *w, struct zerr *err) {
  int t = fb_flex_type(v);
  if (t != FB_FLEX_MAP && t != FB_FLEX_VECTOR)
    return zerr_set(err, EIO,
                    "flexbuffer: value at %u is not a map or "
                    "vector",
                    v->pos);
  if (v->depth >= FB_MAX_DEPTH)
    return zerr_set(err, EIO, "flexbuffer: nested deeper than %d",
                    FB_MAX_DEPTH);
  uint64_t to;
  ZTRY(flex_target(v, &to, err));
  *w = 1u << (v->packed & 3);
  if (to < *w)
    return zerr_set(err, EIO, "flexbuffer: vector at %u has no size",
                    (unsigned)to);
  uint64_t count = load_w(v->buf + to - *w, *w);
  /* elements, then one type byte each */
  if (count > v->len || to + count * (*w + 1) > v->len)
    return zerr_set(err, EIO,
                    "flexbuffer: vector at %u claims %llu "
                    "elements, past the end",
                    (unsigned)to, (unsigned long long)count);
  *at = to;
  *n = (uint32_t)count;
  return 0;
}

int fb_flex_size(const struct fb_flex *v, uint32_t *n, struct zerr *err) {
  uint64_t at;
  unsigned w;
  return flex_elems(v, &at, n, &w, err);
}

int fb_flex_at(const struct fb_flex *v, uint32_t i, struct fb_flex *out,
               struct zerr *err) {
  uint64_t at;
  uint32_t n;
  unsigned w;
  ZTRY(flex_elems(v, &at, &n, &w, err));
  if (i >= n)
    return zerr_set(err, EIO, "flexbuffer: element %u of %u", i, n);
  *out = (struct fb_flex){v->buf,
                          v->len,
                          (uint32_t)(at + (uint64_t)i * w),
                          (uint8_t)w,
                          v->buf[at + (uint64_t)n * w + i],
                          v->depth + 1};
  return 0;
}

/* A NUL-terminated run starting at p: its length, or -1. */
static int64_t flex_cstr(const uint8_t *buf, uint32_t len, uint64_t p) {
  if (p >= len)
    return -1;
  const uint8_t *z = memchr(buf + p, 0, len - p);
  return z ? (int64_t)(z - (buf + p)) : -1;
}

int fb_flex_key(const struct fb_flex *map, uint32_t i, const char **s,
                uint32_t *n, struct zerr *err) {
  uint64_t at;
  uint32_t cnt;
  unsigned w;
  ZTRY(flex_elems(map, &at, &cnt, &w, err));
  if (fb_flex_type(map) != FB_FLEX_MAP || i >= cnt || at < 3ull * w)
    return zerr_set(err, EIO, "flexbuffer: key %u of a map of %u", i, cnt);
  uint64_t kslot = at - 3ull * w;
  uint64_t koff = load_w(map->buf + kslot, w);
  unsigned kw = (unsigned)load_w(map->buf + at - 2ull * w, w);
  if (koff > kslot || (kw != 1 && kw != 2 && kw != 4 && kw != 8))
    return zerr_set(err, EIO, "flexbuffer: bad keys of the map at %u",
                    (unsigned)at);
  uint64_t keys = kslot - koff;
  if (keys < kw || load_w(map->buf + keys - kw, kw) != cnt ||
      keys + (uint64_t)cnt * kw > map->len)
    return zerr_set(err, EIO,
                    "flexbuffer: keys of the map at %u do not "
                    "match its values",
                    (unsigned)at);
  uint64_t e = keys + (uint64_t)i * kw, ko = load_w(map->buf + e, kw);
  if (ko > e)
    return zerr_set(err, EIO, "flexbuffer: key %u points outside", i);
  int64_t l = flex_cstr(map->buf, map->len, e - ko);
  if (l < 0)
    return zerr_set(err, EIO, "flexbuffer: key %u is not terminated", i);
  *s = (const char *)map->buf + (e - ko);
  *n = (uint32_t)l;
  return 0;
}

int fb_flex_get(const struct fb_flex *map, const char *key, struct fb_flex *out,
                struct zerr *err) {
  if (fb_flex_type(map) != FB_FLEX_MAP)
    return 0;
  uint32_t n;
  ZTRY(fb_flex_size(map, &n, err));
  for (uint32_t i = 0; i < n; i++) { /* maps are small: no binary search */
    const char *k;
    uint32_t kn;
    ZTRY(fb_flex_key(map, i, &k, &kn, err));
    if (!strcmp(k, key)) {
      ZTRY(fb_flex_at(map, i, out, err));
      return 1;
    }
  }
  return 0;
}

int fb_flex_string(const struct fb_flex *v, const char **s, uint32_t *n,
                   struct zerr *err) {
  int t = fb_flex_type(v);
  if (t != FB_FLEX_STRING && t != FB_FLEX_KEY)
    return 0;
  uint64_t to;
  ZTRY(flex_target(v, &to, err));
  if (t == FB_FLEX_KEY) {
    int64_t l = flex_cstr(v->buf, v->len, to);
    if (l < 0)
      return zerr_set(err, EIO, "flexbuffer: key at %u is not terminated",
                      (unsigned)to);
    *s = (const char *)v->buf + to;
    *n = (uint32_t)l;
    return 1;
  }
  unsigned w = 1u << (v->packed & 3);
  if (to < w)
    return zerr_set(err, EIO, "flexbuffer: string at %u has no size",
                    (unsigned)to);
  uint64_t l = load_w(v->buf + to - w, w);
  if (l >= v->len || to + l >= v->len || v->buf[to + l] != 0)
    return zerr_set(err, EIO,
                    "flexbuffer: string at %u runs past the end "
                    "or is not terminated",
                    (unsigned)to);
  *s = (const char *)v->buf + to;
  *n = (uint32_t)l;
  return 1;
}
