/* dtype.c - Zarr V3 data types and fill values (see dtype.h). */
#include "dtype.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct dtype_name {
  const char *name;
  enum dtype_kind kind;
  size_t size;
};

static const struct dtype_name dtype_names[] = {
    {"bool", DT_BOOL, 1},       {"int8", DT_INT8, 1},
    {"int16", DT_INT16, 2},     {"int32", DT_INT32, 4},
    {"int64", DT_INT64, 8},     {"uint8", DT_UINT8, 1},
    {"uint16", DT_UINT16, 2},   {"uint32", DT_UINT32, 4},
    {"uint64", DT_UINT64, 8},   {"float32", DT_FLOAT32, 4},
    {"float16", DT_FLOAT16, 2}, {"float64", DT_FLOAT64, 8},
    {"string", DT_STRING, 0},   {"bytes", DT_BYTES, 0},
    {"binary", DT_BYTES, 0},    {"variable_length_bytes", DT_BYTES, 0},
};

/* Descriptor for a kind. */
struct dtype dtype_of(enum dtype_kind kind) {
  struct dtype d;
  memset(&d, 0, sizeof d);
  d.kind = kind;
  for (size_t i = 0; i < sizeof dtype_names / sizeof *dtype_names; i++)
    if (dtype_names[i].kind == kind) {
      d.size = dtype_names[i].size;
      snprintf(d.name, sizeof d.name, "%s", dtype_names[i].name);
      break;
    }
  return d;
}

/* "ms" -> DTU_ms; -1 for units we do not show. */
int dtype_time_unit_parse(const char *s, enum dtype_time_unit *out) {
  static const char *const names[] = {"Y", "M", "W",  "D",  "h",
                                      "m", "s", "ms", "us", "ns"};
  for (int i = 0; i < 10; i++)
    if (!strcmp(s, names[i])) {
      *out = (enum dtype_time_unit)i;
      return 0;
    }
  return -1;
}

/* Byte-order unit. */
size_t dtype_swap_unit(const struct dtype *dt) {
  if (dt->kind == DT_FIXED_UTF32)
    return 4;
  if (dt->kind == DT_FIXED_BYTES)
    return 1;
  return dt->size;
}

/* numpy U and S. */
int dtype_is_fixed_string(const struct dtype *dt) {
  return dt->kind == DT_FIXED_UTF32 || dt->kind == DT_FIXED_BYTES;
}

/* string and bytes. */
int dtype_is_variable(const struct dtype *dt) {
  return dt->kind == DT_STRING || dt->kind == DT_BYTES;
}

/* Short-hand string or {"name": ...}. */
int dtype_parse_v3(json_t *j, struct dtype *out, struct zerr *err) {
  const char *name = NULL;
  if (json_is_string(j))
    name = json_string_value(j);
  else if (json_is_object(j) && json_is_string(json_object_get(j, "name")))
    name = json_string_value(json_object_get(j, "name"));
  if (!name)
    return zerr_set(err, EIO,
                    "data_type must be a string or an object with "
                    "a name");
  memset(out, 0, sizeof *out);
  if (!strcmp(name, "numpy.datetime64")) {
    json_t *cfg =
        json_is_object(j) ? json_object_get(j, "configuration") : NULL;
    const char *unit =
        json_string_value(cfg ? json_object_get(cfg, "unit") : NULL);
    json_t *sf = cfg ? json_object_get(cfg, "scale_factor") : NULL;
    snprintf(out->name, sizeof out->name, "%s", name);
    if (!unit || dtype_time_unit_parse(unit, &out->unit) < 0 ||
        (sf && (!json_is_integer(sf) || json_integer_value(sf) < 1))) {
      out->kind = DT_UNSUPPORTED; /* e.g. ps, fs, as: views refuse it */
      return 0;
    }
    out->kind = DT_DATETIME64;
    out->size = 8;
    out->scale = sf ? (int64_t)json_integer_value(sf) : 1;
    return 0;
  }
  if (!strcmp(name, "fixed_length_utf32")) {
    json_t *cfg =
        json_is_object(j) ? json_object_get(j, "configuration") : NULL;
    json_t *lb = cfg ? json_object_get(cfg, "length_bytes") : NULL;
    if (!json_is_integer(lb) || json_integer_value(lb) <= 0 ||
        json_integer_value(lb) % 4 || json_integer_value(lb) > (1 << 20))
      return zerr_set(err, EIO,
                      "fixed_length_utf32: length_bytes must be a "
                      "positive multiple of 4");
    out->kind = DT_FIXED_UTF32;
    out->size = (size_t)json_integer_value(lb);
    snprintf(out->name, sizeof out->name, "%s", name);
    return 0;
  }
  for (size_t i = 0; i < sizeof dtype_names / sizeof *dtype_names; i++)
    if (!strcmp(dtype_names[i].name, name)) {
      out->kind = dtype_names[i].kind;
      out->size = dtype_names[i].size;
      break;
    }
  snprintf(out->name, sizeof out->name, "%s", name);
  return 0;
}

/* Value of one hex digit or -1. */
static int hexval(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Float fill: number, "NaN", "Infinity", "-Infinity", "0x<bits>". */
static int parse_float_fill(const struct dtype *dt, json_t *fill, uint8_t *dst,
                            struct zerr *err) {
  double v;
  if (json_is_number(fill)) {
    v = json_number_value(fill);
  } else if (json_is_string(fill)) {
    const char *s = json_string_value(fill);
    if (!strcmp(s, "NaN")) {
      v = NAN;
    } else if (!strcmp(s, "Infinity")) {
      v = INFINITY;
    } else if (!strcmp(s, "-Infinity")) {
      v = -INFINITY;
    } else if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      size_t nd = strlen(s + 2);
      if (nd != dt->size * 2)
        return zerr_set(err, EIO,
                        "fill_value %s is not a %zu-digit bit "
                        "pattern for %s",
                        s, dt->size * 2, dt->name);
      uint64_t bits = 0;
      for (size_t i = 0; i < nd; i++) {
        int h = hexval(s[2 + i]);
        if (h < 0)
          return zerr_set(err, EIO, "fill_value %s is not valid hex", s);
        bits = bits << 4 | (uint64_t)h;
      }
      if (dt->size == 2) {
        uint16_t b16 = (uint16_t)bits;
        memcpy(dst, &b16, 2);
      } else if (dt->size == 4) {
        uint32_t b32 = (uint32_t)bits;
        memcpy(dst, &b32, 4);
      } else {
        memcpy(dst, &bits, 8);
      }
      return 0;
    } else {
      return zerr_set(err, EIO, "fill_value \"%s\" is not a valid %s", s,
                      dt->name);
    }
  } else {
    return zerr_set(err, EIO, "fill_value is not a valid %s", dt->name);
  }
  if (dt->size == 2) {
    _Float16 h = (_Float16)v;
    uint16_t b = 0x7e00;
    if (!isnan(v))
      memcpy(&b, &h, 2);
    memcpy(dst, &b, 2);
  } else if (dt->size == 4) {
    float f = (float)v;
    if (isnan(v)) {
      uint32_t b = 0x7fc00000u;
      memcpy(dst, &b, 4);
    } else {
      memcpy(dst, &f, 4);
    }
  } else {
    if (isnan(v)) {
      uint64_t b = 0x7ff8000000000000ull;
      memcpy(dst, &b, 8);
    } else {
      memcpy(dst, &v, 8);
    }
  }
  return 0;
}

/* Integer fill within the type's range. */
static int parse_int_fill(const struct dtype *dt, json_t *fill, uint8_t *dst,
                          struct zerr *err) {
  int is_signed = dt->kind >= DT_INT8 && dt->kind <= DT_INT64;
  if (json_is_string(fill) && dt->size == 8) {
    /* A 64-bit value written as digits (see zjson_loadb). */
    const char *s = json_string_value(fill);
    char *end;
    errno = 0;
    uint64_t u =
        is_signed ? (uint64_t)strtoll(s, &end, 10) : strtoull(s, &end, 10);
    if (errno || end == s || *end || (!is_signed && s[0] == '-'))
      return zerr_set(err, EIO, "fill_value \"%s\" is not a valid %s", s,
                      dt->name);
    memcpy(dst, &u, 8);
    return 0;
  }
  if (json_is_real(fill)) {
    double d = json_real_value(fill);
    if (d != floor(d) || fabs(d) > 9007199254740992.0)
      return zerr_set(err, EIO, "fill_value %g is not a valid %s", d, dt->name);
    fill = json_integer((json_int_t)d);
  } else {
    json_incref(fill);
  }
  if (!json_is_integer(fill)) {
    json_decref(fill);
    return zerr_set(err, EIO, "fill_value is not a valid %s", dt->name);
  }
  json_int_t v = json_integer_value(fill);
  json_decref(fill);
  unsigned bits = (unsigned)dt->size * 8;
  if (is_signed) {
    if (bits < 64) {
      long long lo = -(1ll << (bits - 1)), hi = (1ll << (bits - 1)) - 1;
      if (v < lo || v > hi)
        return zerr_set(err, EIO, "fill_value %lld is out of range for %s",
                        (long long)v, dt->name);
    }
  } else {
    if (v < 0 || (bits < 64 && (unsigned long long)v >> bits))
      return zerr_set(err, EIO, "fill_value %lld is out of range for %s",
                      (long long)v, dt->name);
  }
  uint64_t u = (uint64_t)v;
  memcpy(dst, &u, dt->size); /* little-endian host: low bytes first */
  return 0;
}

/* Base64 (standard alphabet, padding optional) into malloc'd bytes. */
static int base64_decode(const char *s, uint8_t **out, size_t *out_len,
                         struct zerr *err) {
  size_t n = strlen(s);
  uint8_t *p = malloc(n / 4 * 3 + 3);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t len = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    int v;
    if (c >= 'A' && c <= 'Z')
      v = c - 'A';
    else if (c >= 'a' && c <= 'z')
      v = c - 'a' + 26;
    else if (c >= '0' && c <= '9')
      v = c - '0' + 52;
    else if (c == '+')
      v = 62;
    else if (c == '/')
      v = 63;
    else if (c == '=')
      break;
    else {
      free(p);
      return zerr_set(err, EIO, "fill_value is not valid base64");
    }
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      p[len++] = (uint8_t)(acc >> bits);
    }
  }
  *out = p;
  *out_len = len;
  return 0;
}

/* Next code point of UTF-8 text (invalid bytes give U+FFFD). */
static uint32_t utf8_next(const uint8_t **p, const uint8_t *end) {
  const uint8_t *s = *p;
  uint32_t c = *s++;
  int extra = c >= 0xf0 ? 3 : c >= 0xe0 ? 2 : c >= 0xc0 ? 1 : 0;
  if (c >= 0x80 && !extra) {
    *p = s;
    return 0xfffd;
  }
  c &= extra ? (0x3f >> extra) : 0x7f;
  for (int i = 0; i < extra; i++) {
    if (s >= end || (*s & 0xc0) != 0x80) {
      *p = s;
      return 0xfffd;
    }
    c = c << 6 | (*s++ & 0x3f);
  }
  *p = s;
  return c;
}

/* Fill of a fixed-width string: the JSON string, NUL padded, as UTF-32 code
 * units in host order or as raw bytes. null and 0 mean empty. */
static int fixed_string_fill(const struct dtype *dt, json_t *fill,
                             uint8_t **out, size_t *out_len, struct zerr *err) {
  uint8_t *p = calloc(1, dt->size);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  const uint8_t *s = (const uint8_t *)"", *end;
  if (json_is_string(fill))
    s = (const uint8_t *)json_string_value(fill);
  else if (!json_is_null(fill) &&
           !(json_is_integer(fill) && json_integer_value(fill) == 0)) {
    free(p);
    return zerr_set(err, EIO, "fill_value is not a valid %s", dt->name);
  }
  end = s + (json_is_string(fill) ? json_string_length(fill) : 0);
  size_t pos = 0;
  while (s < end) {
    if (dt->kind == DT_FIXED_BYTES) {
      if (pos >= dt->size)
        break;
      p[pos++] = *s++;
    } else {
      uint32_t c = utf8_next(&s, end);
      if (pos + 4 > dt->size)
        break;
      memcpy(p + pos, &c, 4);
      pos += 4;
    }
  }
  *out = p;
  *out_len = dt->size;
  return 0;
}

/* Parse fill_value for dt. */
int dtype_parse_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                     size_t *out_len, struct zerr *err) {
  *out = NULL;
  *out_len = 0;
  switch (dt->kind) {
  case DT_UNSUPPORTED:
    return 0;
  case DT_STRING: {
    if (json_is_null(fill) ||
        (json_is_integer(fill) && json_integer_value(fill) == 0)) {
      *out = malloc(1);
      return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
    }
    if (!json_is_string(fill))
      return zerr_set(err, EIO, "fill_value is not a valid string");
    size_t n = json_string_length(fill);
    *out = malloc(n + 1);
    if (!*out)
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy(*out, json_string_value(fill), n);
    *out_len = n;
    return 0;
  }
  case DT_FIXED_UTF32:
  case DT_FIXED_BYTES:
    return fixed_string_fill(dt, fill, out, out_len, err);
  case DT_DATETIME64: {
    int64_t v;
    if (json_is_string(fill) && !strcmp(json_string_value(fill), "NaT"))
      v = INT64_MIN;
    else if (json_is_integer(fill))
      v = (int64_t)json_integer_value(fill);
    else if (json_is_null(fill))
      v = 0;
    else
      return zerr_set(err, EIO, "fill_value is not a valid numpy.datetime64");
    *out = malloc(8);
    if (!*out)
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy(*out, &v, 8);
    *out_len = 8;
    return 0;
  }
  case DT_BYTES:
    if (json_is_null(fill)) {
      *out = malloc(1);
      return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
    }
    if (json_is_string(fill))
      return base64_decode(json_string_value(fill), out, out_len, err);
    if (json_is_array(fill)) {
      size_t n = json_array_size(fill);
      uint8_t *p = malloc(n + 1);
      if (!p)
        return zerr_set(err, ENOMEM, "out of memory");
      for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(fill, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 ||
            json_integer_value(v) > 255) {
          free(p);
          return zerr_set(err, EIO, "fill_value is not a valid bytes value");
        }
        p[i] = (uint8_t)json_integer_value(v);
      }
      *out = p;
      *out_len = n;
      return 0;
    }
    return zerr_set(err, EIO, "fill_value is not a valid bytes value");
  default:
    break;
  }
  uint8_t *p = calloc(1, dt->size);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc;
  if (dt->kind == DT_BOOL) {
    if (json_is_boolean(fill)) {
      p[0] = json_is_true(fill);
      rc = 0;
    } else {
      rc = zerr_set(err, EIO, "fill_value is not a valid bool");
    }
  } else if (dt->kind == DT_FLOAT16 || dt->kind == DT_FLOAT32 ||
             dt->kind == DT_FLOAT64) {
    rc = parse_float_fill(dt, fill, p, err);
  } else {
    rc = parse_int_fill(dt, fill, p, err);
  }
  if (rc < 0) {
    free(p);
    return rc;
  }
  *out = p;
  *out_len = dt->size;
  return 0;
}
