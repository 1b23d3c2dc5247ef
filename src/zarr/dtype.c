/* dtype.c - Zarr data types and their fill values (see dtype.h).
 *
 * Names follow the V3 core spec and zarr-extensions, plus the names
 * zarr-python (raw_bytes, null_terminated_bytes, variable_length_bytes)
 * and zarrs (int2/int4/uint2/uint4, zarrs.optional) write; fill values
 * follow the spec's JSON encodings plus the leniencies real writers need
 * (null / 0 as an empty string, integral reals for integers, 64-bit
 * integers that zjson_loadb had to carry as digit strings, base64 or
 * integer arrays for fixed bytes). Fixed-size fills are stored in host
 * byte order, like decoded elements. */
#include "dtype.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/base64.h"
#include "../util/utf8.h"

struct dtype_name {
  const char *name;
  enum dtype_kind kind;
  size_t size;
};

/* Every name we know, including aliases; the first name of a kind is the
 * one dtype_of reports. */
static const struct dtype_name dtype_names[] = {
    {"bool", DT_BOOL, 1},           {"int8", DT_INT8, 1},
    {"int16", DT_INT16, 2},         {"int32", DT_INT32, 4},
    {"int64", DT_INT64, 8},         {"uint8", DT_UINT8, 1},
    {"uint16", DT_UINT16, 2},       {"uint32", DT_UINT32, 4},
    {"uint64", DT_UINT64, 8},       {"float16", DT_FLOAT16, 2},
    {"float32", DT_FLOAT32, 4},     {"float64", DT_FLOAT64, 8},
    {"string", DT_STRING, 0},       {"bytes", DT_BYTES, 0},
    {"binary", DT_BYTES, 0},        {"variable_length_bytes", DT_BYTES, 0},
    {"complex64", DT_COMPLEX64, 8}, {"complex128", DT_COMPLEX128, 16},
    {"bfloat16", DT_BFLOAT16, 2},   {"int2", DT_INT2, 1},
    {"int4", DT_INT4, 1},           {"uint2", DT_UINT2, 1},
    {"uint4", DT_UINT4, 1},
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

/* Byte-order unit: a UTF-32 string swaps per code unit, a complex number
 * per part, opaque bytes not at all. */
size_t dtype_swap_unit(const struct dtype *dt) {
  switch (dt->kind) {
  case DT_FIXED_UTF32:
    return 4;
  case DT_FIXED_BYTES:
  case DT_RAW:
  case DT_STRUCT:
    return 1;
  case DT_COMPLEX64:
  case DT_COMPLEX128:
    return dt->size / 2;
  default:
    return dt->size;
  }
}

/* numpy U and S, and raw bytes. */
int dtype_is_fixed_string(const struct dtype *dt) {
  return dt->kind == DT_FIXED_UTF32 || dt->kind == DT_FIXED_BYTES ||
         dt->kind == DT_RAW;
}

/* Width and signedness of the integer kinds. */
int dtype_int_bits(const struct dtype *dt, unsigned *bits, int *is_signed) {
  static const struct {
    enum dtype_kind kind;
    unsigned bits;
    int is_signed;
  } t[] = {{DT_INT2, 2, 1},    {DT_INT4, 4, 1},    {DT_INT8, 8, 1},
           {DT_INT16, 16, 1},  {DT_INT32, 32, 1},  {DT_INT64, 64, 1},
           {DT_UINT2, 2, 0},   {DT_UINT4, 4, 0},   {DT_UINT8, 8, 0},
           {DT_UINT16, 16, 0}, {DT_UINT32, 32, 0}, {DT_UINT64, 64, 0}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (t[i].kind == dt->kind) {
      *bits = t[i].bits;
      *is_signed = t[i].is_signed;
      return 1;
    }
  return 0;
}

/* The type of a present value of an optional type. */
struct dtype dtype_optional_inner(const struct dtype *dt) {
  if (dt->depth > 1) { /* one layer less; the name loses its outer layer */
    struct dtype in = *dt;
    in.depth--;
    in.size = dt->size ? dt->size - 1 : 0;
    const char *open = strchr(dt->name, '(');
    size_t len = open ? strlen(open + 1) : 0;
    if (len && open[len] == ')')
      len--;
    snprintf(in.name, sizeof in.name, "%.*s", (int)len, open ? open + 1 : "");
    return in;
  }
  struct dtype in = dtype_of(dt->inner);
  in.size = dt->size ? dt->size - 1 : 0;
  in.unit = dt->unit;
  in.scale = dt->scale;
  return in;
}

/* Kinds an optional type may wrap: the fixed-size ones rendered element by
 * element (not the fixed-width strings, which views convert first), string,
 * bytes, and optional types (nested, up to DTYPE_OPTIONAL_MAX_DEPTH). */
static int optional_inner_ok(const struct dtype *in) {
  unsigned bits;
  int is_signed;
  switch (in->kind) {
  case DT_OPTIONAL:
    return (in->depth ? in->depth : 1) < DTYPE_OPTIONAL_MAX_DEPTH;
  case DT_STRING:
  case DT_BYTES:
  case DT_BOOL:
  case DT_FLOAT16:
  case DT_BFLOAT16:
  case DT_FLOAT32:
  case DT_FLOAT64:
  case DT_COMPLEX64:
  case DT_COMPLEX128:
  case DT_DATETIME64:
  case DT_TIMEDELTA64:
    return 1;
  default:
    return dtype_int_bits(in, &bits, &is_signed);
  }
}

/* length_bytes of a configuration: a positive multiple of `multiple`, at
 * most 1 MiB (the cap keeps a hostile value from sizing huge buffers). */
static int length_bytes(const char *name, json_t *cfg, long multiple,
                        size_t *out, struct zerr *err) {
  json_t *lb = cfg ? json_object_get(cfg, "length_bytes") : NULL;
  if (!json_is_integer(lb) || json_integer_value(lb) <= 0 ||
      json_integer_value(lb) % multiple || json_integer_value(lb) > (1 << 20))
    return zerr_set(err, EIO,
                    "%s: length_bytes must be a positive multiple of %ld "
                    "(at most 1 MiB)",
                    name, multiple);
  *out = (size_t)json_integer_value(lb);
  return 0;
}

/* "r<N>": raw bits, N a positive multiple of 8 without leading zeros.
 * Returns 1 (and sets dt) when the name has that shape, 0 when it is some
 * other name, or -EIO for an N that is not a valid width. */
static int parse_raw_bits(const char *name, struct dtype *dt,
                          struct zerr *err) {
  if (name[0] != 'r' || name[1] < '1' || name[1] > '9')
    return 0;
  uint64_t n = 0;
  for (const char *p = name + 1; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    n = n * 10 + (uint64_t)(*p - '0');
    if (n > (8u << 20))
      return zerr_set(err, EIO, "%s: at most %u bits", name, 8u << 20);
  }
  if (n % 8)
    return zerr_set(err, EIO, "%s: the bit count must be a multiple of 8",
                    name);
  dt->kind = DT_RAW;
  dt->size = (size_t)(n / 8);
  return 1;
}

/* string and bytes. */
int dtype_is_variable(const struct dtype *dt) {
  return dt->kind == DT_STRING || dt->kind == DT_BYTES;
}

/* string, bytes and optional of them. */
int dtype_has_var_elements(const struct dtype *dt) {
  return dtype_is_variable(dt) ||
         (dt->kind == DT_OPTIONAL &&
          (dt->inner == DT_STRING || dt->inner == DT_BYTES));
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
  if (!strcmp(name, "numpy.datetime64") || !strcmp(name, "numpy.timedelta64")) {
    /* Units we cannot show leave the type unsupported, not the node. */
    const char *unit =
        json_string_value(cfg ? json_object_get(cfg, "unit") : NULL);
    json_t *sf = cfg ? json_object_get(cfg, "scale_factor") : NULL;
    if (!unit || dtype_time_unit_parse(unit, &out->unit) < 0 ||
        (sf && (!json_is_integer(sf) || json_integer_value(sf) < 1)))
      return 0;
    out->kind = name[6] == 'd' ? DT_DATETIME64 : DT_TIMEDELTA64;
    out->size = 8;
    out->scale = sf ? (int64_t)json_integer_value(sf) : 1;
    return 0;
  }
  if (!strcmp(name, "fixed_length_utf32")) {
    ZTRY(length_bytes(name, cfg, 4, &out->size, err));
    out->kind = DT_FIXED_UTF32; /* 4 bytes per code point */
    return 0;
  }
  if (!strcmp(name, "null_terminated_bytes") || !strcmp(name, "raw_bytes")) {
    /* zarr-python's names for numpy S<n> and V<n>. */
    ZTRY(length_bytes(name, cfg, 1, &out->size, err));
    out->kind = name[0] == 'n' ? DT_FIXED_BYTES : DT_RAW;
    return 0;
  }
  if (!strcmp(name, "zarrs.optional") || !strcmp(name, "optional")) {
    /* The configuration is the inner data type ("optional" is the name
     * zarrs used before 0.23). Inner types we cannot hold leave the type
     * unsupported, named with the inner type. */
    if (!cfg || !json_is_string(json_object_get(cfg, "name")))
      return zerr_set(err, EIO, "%s: configuration must name a data type",
                      name);
    struct dtype in;
    ZTRY(dtype_parse_v3(cfg, &in, err));
    snprintf(out->name, sizeof out->name, "%.14s(%.40s)", name, in.name);
    if (optional_inner_ok(&in)) {
      int nested = in.kind == DT_OPTIONAL;
      out->kind = DT_OPTIONAL;
      out->size = in.size ? in.size + 1 : 0; /* 0: variable inner */
      out->inner = nested ? in.inner : in.kind;
      out->depth = nested ? (in.depth ? in.depth : 1) + 1 : 1;
      out->unit = in.unit;
      out->scale = in.scale;
    }
    return 0;
  }
  int raw = parse_raw_bits(name, out, err);
  if (raw != 0)
    return raw < 0 ? raw : 0;
  /* Unknown names stay DT_UNSUPPORTED: the node still lists, views fail. */
  for (size_t i = 0; i < DTYPE_NNAMES; i++)
    if (!strcmp(dtype_names[i].name, name)) {
      out->kind = dtype_names[i].kind;
      out->size = dtype_names[i].size;
      break;
    }
  return 0;
}

/* numpy type strings: byte order, kind letter, item size. */
void dtype_parse_numpy(const char *s, struct dtype *dt, char *endian) {
  memset(dt, 0, sizeof *dt);
  snprintf(dt->name, sizeof dt->name, "%s", s);
  *endian = s[0] == '<' ? 'l' : s[0] == '>' ? 'b' : 0;
  if (!s[0] || !s[1])
    return;
  char k = s[1];
  int size = atoi(s + 2);
  static const struct {
    char k;
    int size;
    enum dtype_kind kind;
  } map[] = {
      {'b', 1, DT_BOOL},      {'i', 1, DT_INT8},       {'i', 2, DT_INT16},
      {'i', 4, DT_INT32},     {'i', 8, DT_INT64},      {'u', 1, DT_UINT8},
      {'u', 2, DT_UINT16},    {'u', 4, DT_UINT32},     {'u', 8, DT_UINT64},
      {'f', 2, DT_FLOAT16},   {'f', 4, DT_FLOAT32},    {'f', 8, DT_FLOAT64},
      {'c', 8, DT_COMPLEX64}, {'c', 16, DT_COMPLEX128}};
  if ((k == 'M' || k == 'm') && s[2] == '8' && s[3] == '[') {
    char unit[8] = "";
    const char *close = strchr(s + 4, ']');
    if (close && close - (s + 4) < (long)sizeof unit) {
      memcpy(unit, s + 4, (size_t)(close - (s + 4)));
      if (!close[1] && dtype_time_unit_parse(unit, &dt->unit) == 0) {
        dt->kind = k == 'M' ? DT_DATETIME64 : DT_TIMEDELTA64;
        dt->size = 8;
        dt->scale = 1;
      }
    }
    return;
  }
  if ((k == 'U' || k == 'S' || k == 'V') && size > 0 && size <= (1 << 18)) {
    dt->kind = k == 'U' ? DT_FIXED_UTF32 : k == 'S' ? DT_FIXED_BYTES : DT_RAW;
    dt->size = (size_t)size * (k == 'U' ? 4 : 1);
    if (k != 'U')
      *endian = 0;
    return;
  }
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (map[i].k == k && map[i].size == size) {
      dt->kind = map[i].kind;
      dt->size = (size_t)size;
      if (size == 1)
        *endian = 0;
      return;
    }
}

/* -EIO "fill_value V is not a valid T", V as compact JSON (cut short). */
static int fill_error(const struct dtype *dt, json_t *fill, struct zerr *err) {
  char *s = fill ? json_dumps(fill, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
  int rc = zerr_set(err, EIO, "fill_value %.80s is not a valid %s",
                    s ? s : "(missing)", dt->name);
  free(s);
  return rc;
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

/* IEEE layouts a float fill can take. */
enum fill_float { FF_F16, FF_BF16, FF_F32, FF_F64 };

/* v rounded (half to even) to bfloat16's 8 significant bits, overflow to
 * infinity; the bit pattern. Scaling by powers of two is exact, so one
 * rounding happens, in nearbyint. */
/* double -> IEEE binary16, rounding half to even. In software, like
 * bf16 below: clang 14 on x86-64 (the fuzzing build) has no _Float16. */
static uint16_t f16_from_double(double v) {
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  if (isnan(v))
    return sign | 0x7e00;
  double a = fabs(v);
  if (isinf(a) || a == 0)
    return sign | (a == 0 ? 0 : 0x7c00);
  int ex;
  (void)frexp(a, &ex);                   /* a = m * 2^ex, m in [0.5, 1) */
  int q = ex - 11 < -24 ? -24 : ex - 11; /* quantum; 2^-24 below normal */
  double r = ldexp(nearbyint(ldexp(a, -q)), q);
  if (r >= 0x1p16)
    return sign | 0x7c00;
  if (r < 0x1p-14) /* subnormal (1024 quanta is the least normal: same) */
    return sign | (uint16_t)ldexp(r, 24);
  double m = frexp(r, &ex); /* r = m * 2^ex; biased exponent ex + 14 */
  return sign | (uint16_t)((ex + 14) << 10) | (uint16_t)(ldexp(m, 11) - 1024);
}

static uint16_t bf16_from_double(double v) {
  if (isnan(v))
    return 0x7fc0;
  uint16_t sign = signbit(v) ? 0x8000 : 0;
  double a = fabs(v);
  if (isinf(a) || a == 0)
    return sign | (a == 0 ? 0 : 0x7f80);
  int ex;
  (void)frexp(a, &ex);                   /* a = m * 2^ex, m in [0.5, 1) */
  int q = ex - 8 < -133 ? -133 : ex - 8; /* quantum; 2^-133 below normal */
  double r = ldexp(nearbyint(ldexp(a, -q)), q);
  if (r >= 0x1p128)
    return sign | 0x7f80;
  float f = (float)r; /* exact: 8 significant bits within float's range */
  uint32_t b;
  memcpy(&b, &f, 4);
  return sign | (uint16_t)(b >> 16 & 0x7fff);
}

/* Is s an optional '-' then decimal digits (an integer literal)? */
static int is_digit_string(const char *s) {
  s += *s == '-';
  if (!*s)
    return 0;
  while (*s >= '0' && *s <= '9')
    s++;
  return !*s;
}

/* See dtype.h: strtod rounds correctly, as Python's int -> float does. */
int dtype_int_literal(const char *s, double *out) {
  if (!is_digit_string(s))
    return -1;
  errno = 0;
  *out = strtod(s, NULL);
  return errno == ERANGE && isinf(*out) ? -1 : 0;
}

/* One float in fill form: number, "NaN", "Infinity", "-Infinity",
 * "0x<bits>" with exactly 2 * size hex digits (the only way to write other
 * NaNs), or a string of decimal digits (an integer literal too long for
 * int64, as JavaScript writes 1e20: 100000002004087730000; zjson_loadb
 * hands those over as strings), rounded as Python's float() rounds an int
 * and then narrowed like any number; into *bits. 0, or -1 when v is none
 * of these or a finite number overflows the format. */
static int float_fill_bits(enum fill_float ff, json_t *v, uint64_t *bits) {
  static const size_t size[] = {2, 2, 4, 8};
  /* The canonical quiet NaNs, whatever the C library's NAN is. */
  static const uint64_t qnan[] = {0x7e00u, 0x7fc0u, 0x7fc00000u,
                                  0x7ff8000000000000ull};
  double d;
  if (json_is_number(v)) {
    d = json_number_value(v);
  } else if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "NaN")) {
      *bits = qnan[ff];
      return 0;
    }
    if (!strcmp(s, "Infinity")) {
      d = INFINITY;
    } else if (!strcmp(s, "-Infinity")) {
      d = -INFINITY;
    } else if (is_digit_string(s)) {
      if (dtype_int_literal(s, &d) < 0)
        return -1; /* OverflowError: int too large to convert to float */
    } else if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X') &&
               strlen(s + 2) == size[ff] * 2) {
      uint64_t b = 0;
      for (const char *p = s + 2; *p; p++) {
        int h = hex_digit((unsigned char)*p);
        if (h < 0)
          return -1;
        b = b << 4 | (uint64_t)h;
      }
      *bits = b;
      return 0;
    } else {
      return -1;
    }
  } else {
    return -1;
  }
  /* Narrowing rounds half to even, as the spec asks; a finite value that
   * overflows the narrower type is not a value of that type. */
  switch (ff) {
  case FF_F16:
    *bits = f16_from_double(d);
    return (*bits & 0x7fff) == 0x7c00 && !isinf(d) ? -1 : 0;
  case FF_BF16:
    *bits = bf16_from_double(d);
    return (*bits & 0x7fff) == 0x7f80 && !isinf(d) ? -1 : 0;
  case FF_F32: {
    float f = (float)d;
    uint32_t b;
    if (isinf(f) && !isinf(d))
      return -1;
    memcpy(&b, &f, 4);
    *bits = b;
    return 0;
  }
  default:
    memcpy(bits, &d, 8);
    return 0;
  }
}

/* Float fill (float16, bfloat16, float32, float64) or complex fill
 * ([re, im], each part a float fill of half the size). */
static int parse_float_fill(const struct dtype *dt, json_t *fill, uint8_t *dst,
                            struct zerr *err) {
  uint64_t bits;
  switch (dt->kind) {
  case DT_COMPLEX64:
  case DT_COMPLEX128: {
    enum fill_float ff = dt->kind == DT_COMPLEX64 ? FF_F32 : FF_F64;
    size_t half = dt->size / 2;
    if (!json_is_array(fill) || json_array_size(fill) != 2)
      return fill_error(dt, fill, err);
    for (size_t i = 0; i < 2; i++) {
      if (float_fill_bits(ff, json_array_get(fill, i), &bits) < 0)
        return fill_error(dt, fill, err);
      store_bits(half, bits, dst + i * half);
    }
    return 0;
  }
  default:
    break;
  }
  enum fill_float ff = dt->kind == DT_FLOAT16    ? FF_F16
                       : dt->kind == DT_BFLOAT16 ? FF_BF16
                       : dt->kind == DT_FLOAT32  ? FF_F32
                                                 : FF_F64;
  if (float_fill_bits(ff, fill, &bits) < 0)
    return fill_error(dt, fill, err);
  store_bits(dt->size, bits, dst);
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
  unsigned bits;
  int is_signed;
  if (!dtype_int_bits(dt, &bits, &is_signed))
    return fill_error(dt, fill, err);
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
  if (is_signed) {
    uint64_t lim = (uint64_t)1 << (bits - 1); /* |min|; max is lim - 1 */
    if (neg ? mag > lim : mag >= lim)
      return fill_error(dt, fill, err);
  } else {
    if ((neg && mag) || (bits < 64 && mag >> bits))
      return fill_error(dt, fill, err);
  }
  /* Two's complement in dt->size bytes: int2 / int4 sign-extend to the
   * byte they live in. */
  store_bits(dt->size, neg ? (uint64_t)0 - mag : mag, dst);
  return 0;
}

/* Standard base64 of a JSON string into fresh bytes (src/util/buf.h). */
static int base64_decode(const struct dtype *dt, json_t *fill, uint8_t **out,
                         size_t *out_len, struct zerr *err) {
  int rc = zbase64_decode(json_string_value(fill), json_string_length(fill),
                          out, out_len);
  if (rc == -ENOMEM)
    return zerr_set(err, ENOMEM, "out of memory");
  return rc < 0 ? fill_error(dt, fill, err) : 0;
}

/* Is this the null or 0 that legacy writers use for "empty"? */
static int is_legacy_empty(json_t *fill) {
  return json_is_null(fill) ||
         (json_is_integer(fill) && json_integer_value(fill) == 0);
}

/* An array of integers 0..255 as fresh bytes (malloc'd, caller owns). */
static int int_array_bytes(const struct dtype *dt, json_t *fill, uint8_t **out,
                           size_t *out_len, struct zerr *err) {
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

/* Fill of a fixed-width string, NUL padded and cut at the width: for
 * UTF-32 the JSON string as code units in host order; for numpy S /
 * null_terminated_bytes the bytes of its base64 text (zarr-python writes
 * S fills as base64) or of an array of 0..255. */
static int fixed_string_fill(const struct dtype *dt, json_t *fill,
                             uint8_t **out, size_t *out_len, struct zerr *err) {
  int bytes_array = dt->kind == DT_FIXED_BYTES && json_is_array(fill);
  if (!json_is_string(fill) && !is_legacy_empty(fill) && !bytes_array)
    return fill_error(dt, fill, err);
  uint8_t *p = calloc(1, dt->size);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  if ((json_is_string(fill) || bytes_array) && dt->kind == DT_FIXED_BYTES) {
    uint8_t *raw;
    size_t n;
    int rc = json_is_string(fill) ? base64_decode(dt, fill, &raw, &n, err)
                                  : int_array_bytes(dt, fill, &raw, &n, err);
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
  return int_array_bytes(dt, fill, out, out_len, err);
}

/* Fill of raw bytes (r<N>, raw_bytes, numpy V): exactly size bytes, as an
 * array of 0..255 (the spec's r<N> form) or base64 (zarr-python's). */
static int raw_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                    size_t *out_len, struct zerr *err) {
  if (!json_is_string(fill) && !json_is_array(fill))
    return fill_error(dt, fill, err);
  ZTRY(json_is_string(fill) ? base64_decode(dt, fill, out, out_len, err)
                            : int_array_bytes(dt, fill, out, out_len, err));
  if (*out_len != dt->size) {
    free(*out);
    *out = NULL;
    *out_len = 0;
    return fill_error(dt, fill, err);
  }
  return 0;
}

/* Fill of an optional type: null is a missing value (fixed: all zero;
 * variable: no bytes); [x] (zarrs' form) or a bare x (earlier writers) is
 * the present value x of the inner type: fixed, the inner fill then the
 * byte 1; variable, the byte 1 then the inner fill. A one-element array
 * that is not a valid [x] is tried as a bare value (bytes as [0..255]). */
static int optional_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                         size_t *out_len, struct zerr *err) {
  int var = dt->size == 0;
  size_t size = var ? 0 : dt->size;
  uint8_t *ib = NULL;
  size_t il = 0;
  if (!json_is_null(fill)) {
    struct dtype in = dtype_optional_inner(dt);
    int rc = -EIO;
    if (json_is_array(fill) && json_array_size(fill) == 1)
      rc = dtype_parse_fill(&in, json_array_get(fill, 0), &ib, &il, err);
    if (rc < 0 && rc != -ENOMEM)
      rc = dtype_parse_fill(&in, fill, &ib, &il, err);
    if (rc < 0)
      return rc;
    if (var)
      size = il + 1;
  }
  uint8_t *p = calloc(1, size ? size : 1);
  if (!p) {
    free(ib);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  if (!json_is_null(fill) && var) {
    p[0] = 1;
    if (il)
      memcpy(p + 1, ib, il);
  } else if (!json_is_null(fill)) {
    memcpy(p, ib, il < size - 1 ? il : size - 1);
    p[size - 1] = 1;
  }
  free(ib);
  *out = p;
  *out_len = size;
  return 0;
}

/* Fill of numpy.datetime64 / timedelta64: an int64 count, "NaT"
 * (INT64_MIN), or null (V2 writers; read as 0 like other null fills). */
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

/* Fill of a numpy S type in V2 metadata, as zarr-python 2.13 reads it
 * (Metadata2.decode_fill_value, then numpy's cast to S<size>): a string
 * is ASCII (else refused), decoded as base64.b64decode decodes it when
 * it can be (zbase64_decode_python) and taken as its own bytes when it
 * cannot (kerchunk's " " for netCDF char arrays is base64 of nothing:
 * NULs); an integer is its decimal digits, true and false "True" and
 * "False"; the bytes cut to the width and NUL padded. A real is refused
 * (numpy would write its Python repr). */
static int v2_bytes_fill(const struct dtype *dt, json_t *fill, uint8_t **out,
                         size_t *out_len, struct zerr *err) {
  char num[32];
  const char *s;
  size_t n;
  if (json_is_string(fill)) {
    s = json_string_value(fill);
    n = json_string_length(fill);
    for (size_t i = 0; i < n; i++)
      if ((unsigned char)s[i] > 127)
        return fill_error(dt, fill, err);
  } else if (json_is_integer(fill)) {
    n = (size_t)snprintf(num, sizeof num, "%lld",
                         (long long)json_integer_value(fill));
    s = num;
  } else if (json_is_boolean(fill)) {
    s = json_is_true(fill) ? "True" : "False";
    n = strlen(s);
  } else {
    return fill_error(dt, fill, err);
  }
  uint8_t *raw = NULL, *p = calloc(1, dt->size ? dt->size : 1);
  size_t rn = 0;
  int rc = p && json_is_string(fill) ? zbase64_decode_python(s, n, &raw, &rn)
                                     : -EINVAL;
  if (!p || rc == -ENOMEM) {
    free(p);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  const void *src = rc == 0 ? (const void *)raw : s;
  size_t len = rc == 0 ? rn : n;
  memcpy(p, src, len < dt->size ? len : dt->size);
  free(raw);
  *out = p;
  *out_len = dt->size;
  return 0;
}

/* Parse a V2 fill_value for dt. */
int dtype_parse_fill_v2(const struct dtype *dt, json_t *fill, uint8_t **out,
                        size_t *out_len, struct zerr *err) {
  if (dt->kind != DT_FIXED_BYTES)
    return dtype_parse_fill(dt, fill, out, out_len, err);
  *out = NULL;
  *out_len = 0;
  return v2_bytes_fill(dt, fill, out, out_len, err);
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
  case DT_TIMEDELTA64:
    return datetime_fill(dt, fill, out, out_len, err);
  case DT_RAW:
  case DT_STRUCT: /* zarr-python 2: base64 of the record's stored bytes */
    return raw_fill(dt, fill, out, out_len, err);
  case DT_OPTIONAL:
    return optional_fill(dt, fill, out, out_len, err);
  default:
    break;
  }
  if (dt->size == 0 || dt->size > 16)
    return zerr_set(err, EIO, "data type %s has no fixed size", dt->name);
  uint8_t *p = calloc(1, dt->size);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc;
  if (dt->kind == DT_BOOL) {
    rc = json_is_boolean(fill) ? 0 : fill_error(dt, fill, err);
    p[0] = json_is_true(fill);
  } else if (dt->kind == DT_FLOAT16 || dt->kind == DT_FLOAT32 ||
             dt->kind == DT_FLOAT64 || dt->kind == DT_BFLOAT16 ||
             dt->kind == DT_COMPLEX64 || dt->kind == DT_COMPLEX128) {
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
