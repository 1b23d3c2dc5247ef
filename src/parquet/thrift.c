/* thrift.c - the bounded Thrift compact protocol reader (see thrift.h). */
#include "thrift.h"

#include <stdarg.h>
#include <stdio.h>

/* Names of the types, for messages. */
static const char *type_name(int type) {
  static const char *const names[] = {
      "stop",   "bool",   "bool", "byte", "i16", "i32",    "i64",
      "double", "binary", "list", "set",  "map", "struct", "uuid"};
  return type >= 0 && type < 14 ? names[type] : "unknown";
}

void thrift_init(struct thrift_r *r, const void *data, size_t len,
                 const char *what, struct zerr *err) {
  r->start = r->p = data;
  r->end = r->p + len;
  r->depth = 0;
  r->what = what;
  r->err = err;
}

size_t thrift_pos(const struct thrift_r *r) {
  return (size_t)(r->p - r->start);
}

int thrift_fail(struct thrift_r *r, const char *fmt, ...) {
  char msg[ZERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return zerr_set(r->err, EIO, "%s at byte %zu: %s", r->what, thrift_pos(r),
                  msg);
}

/* An unsigned varint of at most maxbytes bytes (5 for 32 bits, 10 for
 * 64), its value checked to fit bits. */
static int varint(struct thrift_r *r, int maxbytes, int bits, uint64_t *v) {
  uint64_t x = 0;
  for (int i = 0; i < maxbytes; i++) {
    if (r->p >= r->end)
      return thrift_fail(r, "varint runs past the end");
    uint8_t b = *r->p++;
    uint64_t part = (uint64_t)(b & 0x7f);
    if (i * 7 + 7 > bits && (part >> (bits - i * 7)) != 0)
      return thrift_fail(r, "varint does not fit %d bits", bits);
    x |= part << (i * 7);
    if (!(b & 0x80)) {
      *v = x;
      return 0;
    }
  }
  return thrift_fail(r, "varint longer than %d bytes", maxbytes);
}

/* Zigzag decoding. */
static int64_t unzigzag(uint64_t u) {
  return (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
}

/* Fail unless a value has the type the reader wants. */
static int want(struct thrift_r *r, int type, int wanted) {
  if (type == wanted)
    return 0;
  return thrift_fail(r, "value of type %s where %s is expected",
                     type_name(type), type_name(wanted));
}

int thrift_enter(struct thrift_r *r, struct thrift_st *st) {
  if (r->depth >= THRIFT_MAX_DEPTH)
    return thrift_fail(r, "structs nested deeper than %d", THRIFT_MAX_DEPTH);
  r->depth++;
  st->last = 0;
  return 0;
}

void thrift_leave(struct thrift_r *r) {
  if (r->depth > 0)
    r->depth--;
}

int thrift_leave_rc(struct thrift_r *r, int rc) {
  thrift_leave(r);
  return rc;
}

int thrift_field(struct thrift_r *r, struct thrift_st *st, int16_t *id,
                 int *type) {
  if (r->p >= r->end)
    return thrift_fail(r, "struct runs past the end (no stop field)");
  uint8_t h = *r->p++;
  int t = h & 0x0f, delta = h >> 4;
  if (t == THRIFT_STOP) {
    if (delta)
      return thrift_fail(r, "stop field with an id delta");
    return 0;
  }
  if (t > THRIFT_UUID)
    return thrift_fail(r, "unknown field type %d", t);
  int32_t fid;
  if (delta) {
    fid = (int32_t)st->last + delta;
  } else {
    uint64_t u;
    ZTRY(varint(r, 3, 16, &u));
    fid = (int32_t)unzigzag(u);
  }
  if (fid < INT16_MIN || fid > INT16_MAX)
    return thrift_fail(r, "field id %ld out of range", (long)fid);
  st->last = (int16_t)fid;
  *id = (int16_t)fid;
  *type = t;
  return 1;
}

int thrift_i32(struct thrift_r *r, int type, int32_t *v) {
  ZTRY(want(r, type, THRIFT_I32));
  uint64_t u;
  ZTRY(varint(r, 5, 32, &u));
  *v = (int32_t)unzigzag(u);
  return 0;
}

int thrift_i64(struct thrift_r *r, int type, int64_t *v) {
  ZTRY(want(r, type, THRIFT_I64));
  uint64_t u;
  ZTRY(varint(r, 10, 64, &u));
  *v = unzigzag(u);
  return 0;
}

int thrift_bool(struct thrift_r *r, int type, int in_list, int *v) {
  if (type != THRIFT_TRUE && type != THRIFT_FALSE)
    return want(r, type, THRIFT_TRUE);
  if (!in_list) {
    *v = type == THRIFT_TRUE;
    return 0;
  }
  if (r->p >= r->end)
    return thrift_fail(r, "bool runs past the end");
  uint8_t b = *r->p++;
  if (b > 2)
    return thrift_fail(r, "bool element %u", b);
  *v = b == 1;
  return 0;
}

int thrift_binary(struct thrift_r *r, int type, const uint8_t **p,
                  size_t *len) {
  ZTRY(want(r, type, THRIFT_BINARY));
  uint64_t n;
  ZTRY(varint(r, 5, 32, &n));
  if (n > (uint64_t)(r->end - r->p))
    return thrift_fail(r, "binary of %llu bytes runs past the end",
                       (unsigned long long)n);
  *p = r->p;
  *len = (size_t)n;
  r->p += n;
  return 0;
}

int thrift_list(struct thrift_r *r, int type, int *etype, uint32_t *count) {
  if (type != THRIFT_LIST && type != THRIFT_SET)
    return want(r, type, THRIFT_LIST);
  if (r->p >= r->end)
    return thrift_fail(r, "list header runs past the end");
  uint8_t h = *r->p++;
  uint64_t n = h >> 4;
  if (n == 15)
    ZTRY(varint(r, 5, 32, &n));
  int et = h & 0x0f;
  if (et == THRIFT_STOP || et > THRIFT_UUID)
    return thrift_fail(r, "list of unknown element type %d", et);
  /* Every element is at least one byte (a bool, a varint, a stop). */
  if (n > (uint64_t)(r->end - r->p))
    return thrift_fail(r, "list of %llu elements in %zu bytes",
                       (unsigned long long)n, (size_t)(r->end - r->p));
  *etype = et;
  *count = (uint32_t)n;
  return 0;
}

/* Skip n bytes. */
static int skip_bytes(struct thrift_r *r, size_t n) {
  if (n > (size_t)(r->end - r->p))
    return thrift_fail(r, "value runs past the end");
  r->p += n;
  return 0;
}

int thrift_skip(struct thrift_r *r, int type) {
  uint64_t u;
  switch (type) {
  case THRIFT_TRUE:
  case THRIFT_FALSE:
    return 0; /* a field's value is its type; list elements are bytes */
  case THRIFT_BYTE:
    return skip_bytes(r, 1);
  case THRIFT_I16:
    return varint(r, 3, 16, &u);
  case THRIFT_I32:
    return varint(r, 5, 32, &u);
  case THRIFT_I64:
    return varint(r, 10, 64, &u);
  case THRIFT_DOUBLE:
    return skip_bytes(r, 8);
  case THRIFT_UUID:
    return skip_bytes(r, 16);
  case THRIFT_BINARY: {
    const uint8_t *p;
    size_t n;
    return thrift_binary(r, type, &p, &n);
  }
  case THRIFT_LIST:
  case THRIFT_SET: {
    int et;
    uint32_t n;
    ZTRY(thrift_list(r, type, &et, &n));
    if (r->depth >= THRIFT_MAX_DEPTH)
      return thrift_fail(r, "containers nested deeper than %d",
                         THRIFT_MAX_DEPTH);
    r->depth++;
    for (uint32_t i = 0; i < n; i++) {
      int rc = et == THRIFT_TRUE || et == THRIFT_FALSE ? skip_bytes(r, 1)
                                                       : thrift_skip(r, et);
      if (rc < 0) {
        r->depth--;
        return rc;
      }
    }
    r->depth--;
    return 0;
  }
  case THRIFT_MAP: {
    ZTRY(varint(r, 5, 32, &u));
    if (u == 0)
      return 0;
    if (r->p >= r->end)
      return thrift_fail(r, "map header runs past the end");
    uint8_t kv = *r->p++;
    int kt = kv >> 4, vt = kv & 0x0f;
    if (kt == THRIFT_STOP || kt > THRIFT_UUID || vt == THRIFT_STOP ||
        vt > THRIFT_UUID)
      return thrift_fail(r, "map of unknown types %d/%d", kt, vt);
    if (u > (uint64_t)(r->end - r->p) / 2)
      return thrift_fail(r, "map of %llu entries in %zu bytes",
                         (unsigned long long)u, (size_t)(r->end - r->p));
    if (r->depth >= THRIFT_MAX_DEPTH)
      return thrift_fail(r, "containers nested deeper than %d",
                         THRIFT_MAX_DEPTH);
    r->depth++;
    int rc = 0;
    for (uint64_t i = 0; i < u && rc == 0; i++) {
      rc = kt == THRIFT_TRUE || kt == THRIFT_FALSE ? skip_bytes(r, 1)
                                                   : thrift_skip(r, kt);
      if (rc == 0)
        rc = vt == THRIFT_TRUE || vt == THRIFT_FALSE ? skip_bytes(r, 1)
                                                     : thrift_skip(r, vt);
    }
    r->depth--;
    return rc;
  }
  case THRIFT_STRUCT: {
    struct thrift_st st;
    ZTRY(thrift_enter(r, &st));
    int16_t id;
    int t, rc;
    while ((rc = thrift_field(r, &st, &id, &t)) == 1)
      if ((rc = thrift_skip(r, t)) < 0)
        break;
    thrift_leave(r);
    return rc;
  }
  default:
    return thrift_fail(r, "cannot skip a value of type %d", type);
  }
}
