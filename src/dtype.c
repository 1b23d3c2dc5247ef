/* dtype.c - Zarr data types and their fill values (see dtype.h).
 *
 * Names follow the V3 core spec and zarr-extensions; fill values follow
 * the spec's JSON encodings plus the leniencies real writers need (null /
 * 0 as an empty string, integral reals for integers, 64-bit integers that
 * zjson_loadb had to carry as digit strings). Fixed-size fills are stored
 * in host byte order, like decoded elements. */
#include "dtype.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dtype_name {
  const char *name;
  enum dtype_kind kind;
  size_t size;
};

/* Every name we know, including aliases; the first name of a kind is the
 * one dtype_of reports. */
static const struct dtype_name dtype_names[] = {
    {"bool", DT_BOOL, 1},       {"int8", DT_INT8, 1},
    {"int16", DT_INT16, 2},     {"int32", DT_INT32, 4},
    {"int64", DT_INT64, 8},     {"uint8", DT_UINT8, 1},
    {"uint16", DT_UINT16, 2},   {"uint32", DT_UINT32, 4},
    {"uint64", DT_UINT64, 8},   {"float16", DT_FLOAT16, 2},
    {"float32", DT_FLOAT32, 4}, {"float64", DT_FLOAT64, 8},
    {"string", DT_STRING, 0},   {"bytes", DT_BYTES, 0},
    {"binary", DT_BYTES, 0},    {"variable_length_bytes", DT_BYTES, 0},
};

#define DTYPE_NNAMES (sizeof dtype_names / sizeof *dtype_names)

/* Descriptor for a kind (fixed-width strings have no intrinsic size). */
struct dtype dtype_of(enum dtype_kind kind) {
  struct dtype d;
  memset(&d, 0, sizeof d);
  d.kind = kind;
  for (size_t i = 0; i < DTYPE_NNAMES; i++)
    if (dtype_names[i].kind == kind) {
      d.size = dtype_names[i].size;
      snprintf(d.name, sizeof d.name, "%s", dtype_names[i].name);
      break;
    }
  return d;
}

/* "ms" -> DTU_ms; -1 for units we do not show (ps, fs, as, generic). */
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

/* Byte-order unit: a UTF-32 string swaps per code unit, not as a whole. */
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

/* Short-hand string or {"name": ..., "configuration": {...}}. */
int dtype_parse_v3(json_t *j, struct dtype *out, struct zerr *err) {
  const char *name = NULL;
  json_t *cfg = NULL;
  if (json_is_string(j)) {
    name = json_string_value(j);
  } else if (json_is_object(j) && json_is_string(json_object_get(j, "name"))) {
    name = json_string_value(json_object_get(j, "name"));
    cfg = json_object_get(j, "configuration");
    if (cfg && !json_is_object(cfg))
      return zerr_set(err, EIO, "data_type configuration must be an object");
  }
  if (!name)
    return zerr_set(err, EIO,
                    "data_type must be a string or an object with a name");
  memset(out, 0, sizeof *out);
  snprintf(out->name, sizeof out->name, "%s", name);
  if (!strcmp(name, "numpy.datetime64")) {
    /* Units we cannot show leave the type unsupported, not the node. */
    const char *unit =
        json_string_value(cfg ? json_object_get(cfg, "unit") : NULL);
    json_t *sf = cfg ? json_object_get(cfg, "scale_factor") : NULL;
    if (!unit || dtype_time_unit_parse(unit, &out->unit) < 0 ||
        (sf && (!json_is_integer(sf) || json_integer_value(sf) < 1)))
      return 0;
    out->kind = DT_DATETIME64;
    out->size = 8;
    out->scale = sf ? (int64_t)json_integer_value(sf) : 1;
    return 0;
  }
  if (!strcmp(name, "fixed_length_utf32")) {
    /* length_bytes is 4 per code point; the cap keeps a hostile value
     * from sizing huge buffers. */
    json_t *lb = cfg ? json_object_get(cfg, "length_bytes") : NULL;
    if (!json_is_integer(lb) || json_integer_value(lb) <= 0 ||
        json_integer_value(lb) % 4 || json_integer_value(lb) > (1 << 20))
      return zerr_set(err, EIO,
                      "fixed_length_utf32: length_bytes must be a "
                      "positive multiple of 4 (at most 1 MiB)");
    out->kind = DT_FIXED_UTF32;
    out->size = (size_t)json_integer_value(lb);
    return 0;
  }
  /* Unknown names stay DT_UNSUPPORTED: the node still lists, views fail. */
  for (size_t i = 0; i < DTYPE_NNAMES; i++)
    if (!strcmp(dtype_names[i].name, name)) {
      out->kind = dtype_names[i].kind;
      out->size = dtype_names[i].size;
      break;
    }
  return 0;
}

/* -EIO "fill_value V is not a valid T", V as compact JSON (cut short). */
static int fill_error(const struct dtype *dt, json_t *fill, struct zerr *err) {
  char *s = fill ? json_dumps(fill, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  int rc = zerr_set(err, EIO, "fill_value %.80s is not a valid %s",
                    s ? s : "(missing)", dt->name);
  free(s);
  return rc;
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

/* Store the low dt->size bytes of an integer or bit pattern in host
 * order. */
static void store_bits(size_t size, uint64_t v, uint8_t *dst) {
  switch (size) {
  case 1:
    dst[0] = (uint8_t)v;
    break;
  case 2: {
    uint16_t x = (uint16_t)v;
    memcpy(dst, &x, 2);
    break;
  }
  case 4: {
    uint32_t x = (uint32_t)v;
    memcpy(dst, &x, 4);
    break;
  }
  default:
    memcpy(dst, &v, 8);
    break;
  }
}

/* Float fill: number, "NaN", "Infinity", "-Infinity", or "0x<bits>" with
 * exactly 2 * size hex digits (the only way to write other NaNs). */
static int parse_float_fill(const struct dtype *dt, json_t *fill, uint8_t *dst,
                            struct zerr *err) {
  double v;
  if (json_is_number(fill)) {
    v = json_number_value(fill);
  } else if (json_is_string(fill)) {
    const char *s = json_string_value(fill);
    if (!strcmp(s, "NaN")) {
      /* The canonical quiet NaN, whatever the C library's NAN is. */
      store_bits(dt->size,
                 dt->size == 2   ? 0x7e00u
                 : dt->size == 4 ? 0x7fc00000u
                                 : 0x7ff8000000000000ull,
                 dst);
      return 0;
    }
    if (!strcmp(s, "Infinity")) {
      v = INFINITY;
    } else if (!strcmp(s, "-Infinity")) {
      v = -INFINITY;
    } else if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
               strlen(s + 2) == dt->size * 2) {
      uint64_t bits = 0;
      for (const char *p = s + 2; *p; p++) {
        int h = hexval(*p);
        if (h < 0)
          return fill_error(dt, fill, err);
        bits = bits << 4 | (uint64_t)h;
      }
      store_bits(dt->size, bits, dst);
      return 0;
    } else {
      return fill_error(dt, fill, err);
    }
  } else {
    return fill_error(dt, fill, err);
  }
  /* Narrowing rounds half to even, as the spec asks; a finite value that
   * overflows the narrower type is not a value of that type. */
  if (dt->size == 2) {
    _Float16 h = (_Float16)v;
    if (isinf(h) && !isinf(v))
      return fill_error(dt, fill, err);
    memcpy(dst, &h, 2);
  } else if (dt->size == 4) {
    float f = (float)v;
    if (isinf(f) && !isinf(v))
      return fill_error(dt, fill, err);
    memcpy(dst, &f, 4);
  } else {
    memcpy(dst, &v, 8);
  }
  return 0;
}

/* Decimal digits with an optional leading '-' (nothing else) into a
 * magnitude; 0 on success, -1 on anything else or overflow. */
static int parse_decimal(const char *s, uint64_t *mag, int *neg) {
  *neg = *s == '-';
  s += *neg;
  if (!*s)
    return -1;
  uint64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    unsigned d = (unsigned)(*s - '0');
    if (v > (UINT64_MAX - d) / 10)
      return -1;
    v = v * 10 + d;
  }
  *mag = v;
  return 0;
}

/* Integer fill within the type's range. Accepts JSON integers, reals with
 * an integral value (some writers emit 0.0), and, for 64-bit kinds, the
 * digit strings zjson_loadb uses for integers beyond int64. */
static int parse_int_fill(const struct dtype *dt, json_t *fill, uint8_t *dst,
                          struct zerr *err) {
  int is_signed = dt->kind >= DT_INT8 && dt->kind <= DT_INT64;
  uint64_t mag;
  int neg;
  if (json_is_integer(fill)) {
    json_int_t v = json_integer_value(fill);
    neg = v < 0;
    mag = neg ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  } else if (json_is_real(fill)) {
    double d = json_real_value(fill);
    if (d != floor(d) || fabs(d) > 9007199254740992.0)
      return fill_error(dt, fill, err);
    neg = d < 0;
    mag = (uint64_t)fabs(d);
  } else if (json_is_string(fill) && dt->size == 8) {
    if (parse_decimal(json_string_value(fill), &mag, &neg) < 0)
      return fill_error(dt, fill, err);
  } else {
    return fill_error(dt, fill, err);
  }
  unsigned bits = (unsigned)dt->size * 8;
  if (is_signed) {
    uint64_t lim = (uint64_t)1 << (bits - 1); /* |min|; max is lim - 1 */
    if (neg ? mag > lim : mag >= lim)
      return fill_error(dt, fill, err);
  } else {
    if ((neg && mag) || (bits < 64 && mag >> bits))
      return fill_error(dt, fill, err);
  }
  store_bits(dt->size, neg ? (uint64_t)0 - mag : mag, dst);
  return 0;
}

/* Value of a base64 character (standard alphabet) or -1. */
static int b64val(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/* Standard base64 into fresh bytes. Padding may be present or left out,
 * but only at the end; a lone trailing character (6 bits) is refused. */
static int base64_decode(const struct dtype *dt, json_t *fill, uint8_t **out,
                         size_t *out_len, struct zerr *err) {
  const char *s = json_string_value(fill);
  size_t n = json_string_length(fill);
  size_t pad = 0;
  while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
    pad++;
  size_t nd = n - pad; /* data characters */
  if ((pad && n % 4) || nd % 4 == 1)
    return fill_error(dt, fill, err);
  uint8_t *p = malloc(nd / 4 * 3 + 3);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t len = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < nd; i++) {
    int v = b64val(s[i]);
    if (v < 0) {
      free(p);
      return fill_error(dt, fill, err);
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
  c &= extra ? (0x3fu >> extra) : 0x7fu;
  for (int i = 0; i < extra; i++) {
    if (s >= end || (*s & 0xc0) != 0x80) {
      *p = s;
      return 0xfffd;
    }
    c = c << 6 | (*s++ & 0x3fu);
  }
  *p = s;
  return c;
}

/* Is this the null or 0 that legacy writers use for "empty"? */
static int is_legacy_empty(json_t *fill) {
  return json_is_null(fill) ||
         (json_is_integer(fill) && json_integer_value(fill) == 0);
}

/* Fill of a fixed-width string, NUL padded and cut at the width: for
 * UTF-32 the JSON string as code units in host order; for numpy S the
 * bytes of its base64 text (zarr-python 2 writes S fills as base64). */
static int fixed_string_fill(const struct dtype *dt, json_t *fill,
                             uint8_t **out, size_t *out_len, struct zerr *err) {
  if (!json_is_string(fill) && !is_legacy_empty(fill))
    return fill_error(dt, fill, err);
  uint8_t *p = calloc(1, dt->size);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  if (json_is_string(fill) && dt->kind == DT_FIXED_BYTES) {
    uint8_t *raw;
    size_t n;
    int rc = base64_decode(dt, fill, &raw, &n, err);
    if (rc < 0) {
      free(p);
      return rc;
    }
    memcpy(p, raw, n < dt->size ? n : dt->size);
    free(raw);
  } else if (json_is_string(fill)) {
    const uint8_t *s = (const uint8_t *)json_string_value(fill);
    const uint8_t *end = s + json_string_length(fill);
    for (size_t pos = 0; s < end && pos + 4 <= dt->size; pos += 4) {
      uint32_t c = utf8_next(&s, end);
      memcpy(p + pos, &c, 4);
    }
  }
  *out = p;
  *out_len = dt->size;
  return 0;
}

/* An empty variable-length fill: one byte allocated so that *out is a
 * real pointer, length 0. */
static int empty_fill(uint8_t **out, struct zerr *err) {
  *out = malloc(1);
  return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
}

/* Fill of a variable-length string: the UTF-8 bytes. */
static int string_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                       size_t *out_len, struct zerr *err) {
  if (is_legacy_empty(fill))
    return empty_fill(out, err);
  if (!json_is_string(fill))
    return fill_error(dt, fill, err);
  size_t n = json_string_length(fill);
  *out = malloc(n + 1);
  if (!*out)
    return zerr_set(err, ENOMEM, "out of memory");
  memcpy(*out, json_string_value(fill), n);
  *out_len = n;
  return 0;
}

/* Fill of variable-length bytes: base64 text or an array of 0..255. */
static int bytes_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                      size_t *out_len, struct zerr *err) {
  if (is_legacy_empty(fill))
    return empty_fill(out, err);
  if (json_is_string(fill))
    return base64_decode(dt, fill, out, out_len, err);
  if (!json_is_array(fill))
    return fill_error(dt, fill, err);
  size_t n = json_array_size(fill);
  uint8_t *p = malloc(n + 1);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(fill, i);
    if (!json_is_integer(v) || json_integer_value(v) < 0 ||
        json_integer_value(v) > 255) {
      free(p);
      return fill_error(dt, fill, err);
    }
    p[i] = (uint8_t)json_integer_value(v);
  }
  *out = p;
  *out_len = n;
  return 0;
}

/* Fill of numpy.datetime64: an int64 count, "NaT" (INT64_MIN), or null
 * (V2 writers; read as 0 like other null fills). */
static int datetime_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                         size_t *out_len, struct zerr *err) {
  int64_t v;
  if (json_is_string(fill) && !strcmp(json_string_value(fill), "NaT"))
    v = INT64_MIN;
  else if (json_is_integer(fill))
    v = (int64_t)json_integer_value(fill);
  else if (json_is_null(fill))
    v = 0;
  else
    return fill_error(dt, fill, err);
  *out = malloc(8);
  if (!*out)
    return zerr_set(err, ENOMEM, "out of memory");
  memcpy(*out, &v, 8);
  *out_len = 8;
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
  case DT_STRING:
    return string_fill(dt, fill, out, out_len, err);
  case DT_BYTES:
    return bytes_fill(dt, fill, out, out_len, err);
  case DT_FIXED_UTF32:
  case DT_FIXED_BYTES:
    return fixed_string_fill(dt, fill, out, out_len, err);
  case DT_DATETIME64:
    return datetime_fill(dt, fill, out, out_len, err);
  default:
    break;
  }
  if (dt->size == 0 || dt->size > 8)
    return zerr_set(err, EIO, "data type %s has no fixed size", dt->name);
  uint8_t *p = calloc(1, dt->size);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc;
  if (dt->kind == DT_BOOL) {
    rc = json_is_boolean(fill) ? 0 : fill_error(dt, fill, err);
    p[0] = json_is_true(fill);
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
