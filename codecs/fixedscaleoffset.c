/* fixedscaleoffset.c - `numcodecs.fixedscaleoffset` (array->array; V2
 * filter id `fixedscaleoffset`): the stored array holds
 * round((x - offset) * scale) as `astype`; decoding computes
 * stored / scale + offset and converts it to `dtype`, the array's type.
 *
 * The arithmetic follows numpy, as numcodecs runs it: with a float32
 * `astype` it is done in float32 (scale and offset rounded to float32
 * first); with any other `astype` (float64 or an integer type) in float64.
 * The result is converted like numpy's astype: floats are rounded to the
 * target float type, integers truncated toward zero. A value that does not
 * fit an integer `dtype` (NaN, infinity, out of range) is an error, not
 * the platform-dependent garbage numpy would produce.
 *
 * `dtype` and `astype` are numpy strings ("<f8", "|u1") or V3 names;
 * `astype` missing or null means `dtype`. Supported: int8..int64,
 * uint8..uint64, float32, float64. */
#include "chain.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"

struct fso_state {
  double scale, offset;
  enum dtype_kind dkind, akind; /* decoded (array) and stored kinds */
  size_t dsize, asize;
  uint8_t efill[8]; /* the fill value as stored (astype), for the next codec */
};

/* Kind of a V3 name or numpy dtype string; DT_UNSUPPORTED for anything
 * else. *order is the numpy byte-order character ('<', '>', '|', '=') or 0
 * for a V3 name. */
static enum dtype_kind fso_kind(const char *s, char *order) {
  static const struct {
    const char *np, *v3;
    enum dtype_kind kind;
  } map[] = {{"i1", "int8", DT_INT8},       {"i2", "int16", DT_INT16},
             {"i4", "int32", DT_INT32},     {"i8", "int64", DT_INT64},
             {"u1", "uint8", DT_UINT8},     {"u2", "uint16", DT_UINT16},
             {"u4", "uint32", DT_UINT32},   {"u8", "uint64", DT_UINT64},
             {"f4", "float32", DT_FLOAT32}, {"f8", "float64", DT_FLOAT64}};
  *order = 0;
  int np = s[0] && strchr("<>|=", s[0]);
  if (np)
    *order = s[0];
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (!strcmp(np ? s + 1 : s, np ? map[i].np : map[i].v3))
      return map[i].kind;
  return DT_UNSUPPORTED;
}

/* Read element i of kind k at p as a double (floats exactly; int64 values
 * rounded to the nearest double, as numpy converts them). */
static double fso_load(enum dtype_kind k, const uint8_t *p) {
  switch (k) {
#define FSO_LOAD(K, T)                                                         \
  case K: {                                                                    \
    T v;                                                                       \
    memcpy(&v, p, sizeof v);                                                   \
    return (double)v;                                                          \
  }
    FSO_LOAD(DT_INT8, int8_t)
    FSO_LOAD(DT_INT16, int16_t)
    FSO_LOAD(DT_INT32, int32_t)
    FSO_LOAD(DT_INT64, int64_t)
    FSO_LOAD(DT_UINT8, uint8_t)
    FSO_LOAD(DT_UINT16, uint16_t)
    FSO_LOAD(DT_UINT32, uint32_t)
    FSO_LOAD(DT_UINT64, uint64_t)
    FSO_LOAD(DT_FLOAT32, float)
    FSO_LOAD(DT_FLOAT64, double)
#undef FSO_LOAD
  default:
    return 0;
  }
}

/* v rounded to float, overflowing to infinity explicitly (IEEE, no UB). */
static float fso_to_float(double v) {
  if (isfinite(v) && fabs(v) > FLT_MAX)
    return v > 0 ? INFINITY : -INFINITY;
  return (float)v;
}

/* Store v as kind k at p, truncating toward zero for integers. Returns -1
 * (nothing written) when v does not fit an integer kind. */
static int fso_store(enum dtype_kind k, double v, uint8_t *p) {
  /* Exclusive bounds: truncation maps (lo, hi) onto the type's range. */
  static const struct {
    enum dtype_kind kind;
    double lo, hi;
  } range[] = {{DT_INT8, -129.0, 128.0},
               {DT_INT16, -32769.0, 32768.0},
               {DT_INT32, -2147483649.0, 2147483648.0},
               {DT_UINT8, -1.0, 256.0},
               {DT_UINT16, -1.0, 65536.0},
               {DT_UINT32, -1.0, 4294967296.0},
               {DT_UINT64, -1.0, 18446744073709551616.0}};
  if (k == DT_FLOAT64) {
    memcpy(p, &v, 8);
    return 0;
  }
  if (k == DT_FLOAT32) {
    float f = fso_to_float(v);
    memcpy(p, &f, 4);
    return 0;
  }
  if (k == DT_INT64) {
    /* -2^63 is exact in double; 2^63 is the first value out of range. */
    if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
      return -1;
    int64_t x = (int64_t)v;
    memcpy(p, &x, 8);
    return 0;
  }
  for (size_t i = 0; i < sizeof range / sizeof *range; i++) {
    if (range[i].kind != k)
      continue;
    if (!(v > range[i].lo && v < range[i].hi))
      return -1;
    switch (k) {
#define FSO_STORE(K, T)                                                        \
  case K: {                                                                    \
    T x = (T)v;                                                                \
    memcpy(p, &x, sizeof x);                                                   \
    return 0;                                                                  \
  }
      FSO_STORE(DT_INT8, int8_t)
      FSO_STORE(DT_INT16, int16_t)
      FSO_STORE(DT_INT32, int32_t)
      FSO_STORE(DT_UINT8, uint8_t)
      FSO_STORE(DT_UINT16, uint16_t)
      FSO_STORE(DT_UINT32, uint32_t)
      FSO_STORE(DT_UINT64, uint64_t)
#undef FSO_STORE
    default:
      return -1;
    }
  }
  return -1;
}

/* One decoded value: stored / scale + offset in numpy's precision. */
static double fso_value(const struct fso_state *st, const uint8_t *p) {
  if (st->akind == DT_FLOAT32) {
    float e;
    memcpy(&e, p, 4);
    float r = e / fso_to_float(st->scale);
    r = r + fso_to_float(st->offset);
    return (double)r;
  }
  return fso_load(st->akind, p) / st->scale + st->offset;
}

/* The stored form of the array's fill value (numcodecs' encode: round half
 * to even, then astype); zero when it does not fit. */
static void fso_encode_fill(struct fso_state *st,
                            const struct codec_spec *decoded) {
  memset(st->efill, 0, sizeof st->efill);
  if (!decoded->fill || decoded->fill_len != st->dsize)
    return;
  double v = fso_load(st->dkind, decoded->fill);
  double e = nearbyint((v - st->offset) * st->scale);
  if (fso_store(st->akind, e, st->efill) < 0)
    memset(st->efill, 0, sizeof st->efill);
}

/* Parse {"offset", "scale", "dtype", "astype"} for the array's type. */
static int fso_create(json_t *config, const struct codec_spec *decoded,
                      void **state, struct zerr *err) {
  static const char *const allowed[] = {"offset", "scale", "dtype", "astype",
                                        NULL};
  static const char *const name = "numcodecs.fixedscaleoffset";
  ZTRY(codec_cfg_only(config, name, allowed, err));
  json_t *off = config ? json_object_get(config, "offset") : NULL;
  json_t *sc = config ? json_object_get(config, "scale") : NULL;
  if (!json_is_number(off) || !json_is_number(sc))
    return zerr_set(err, EIO,
                    "%s: configuration keys 'offset' and 'scale' must be "
                    "numbers",
                    name);
  const char *dts;
  int rc = codec_cfg_str(config, "dtype", 1, NULL, &dts, err);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
    return rc;
  }
  json_t *aj = json_object_get(config, "astype");
  if (aj && !json_is_null(aj) && !json_is_string(aj))
    return zerr_set(err, EIO, "%s: 'astype' must be a string or null", name);
  const char *ast = json_is_string(aj) ? json_string_value(aj) : dts;
  char dord, aord;
  enum dtype_kind dk = fso_kind(dts, &dord), ak = fso_kind(ast, &aord);
  if (dk == DT_UNSUPPORTED || ak == DT_UNSUPPORTED || dk != decoded->dtype.kind)
    return zerr_set(err, ENOTSUP,
                    "%s: dtype '%s' / astype '%s' on a %s array is "
                    "unsupported",
                    name, dts, ast, decoded->dtype.name);
  struct dtype at = dtype_of(ak);
  /* Byte order comes from the array (bytes codec / V2 dtype); a stored type
   * declared in the other order cannot be honoured. */
  if (at.size > 1 && (dord == '<' || dord == '>') &&
      (aord == '<' || aord == '>') && dord != aord)
    return zerr_set(err, ENOTSUP,
                    "%s: astype '%s' in another byte order than dtype '%s' is "
                    "unsupported",
                    name, ast, dts);
  double scale = json_number_value(sc), offset = json_number_value(off);
  if (scale == 0 || !isfinite(scale) || !isfinite(offset))
    return zerr_set(err, EIO, "%s: scale must be a non-zero finite number",
                    name);
  struct fso_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  st->scale = scale;
  st->offset = offset;
  st->dkind = dk;
  st->akind = ak;
  st->dsize = decoded->dtype.size;
  st->asize = at.size;
  fso_encode_fill(st, decoded);
  *state = st;
  return 0;
}

/* Free the parsed configuration. */
static void fso_destroy(void *state) { free(state); }

/* Same shape, stored type `astype`, stored fill. */
static int fso_spec(const void *state, const struct codec_spec *decoded,
                    struct codec_spec *encoded, struct zerr *err) {
  (void)err;
  const struct fso_state *st = state;
  *encoded = *decoded;
  encoded->dtype = dtype_of(st->akind);
  encoded->fill = st->efill;
  encoded->fill_len = st->asize;
  return 0;
}

/* Convert every stored value into a new buffer of the array's type. */
static int fso_decode(const void *state, const struct codec_spec *decoded,
                      struct abytes *in, const struct codec_env *env,
                      struct abytes **out, struct zerr *err) {
  (void)decoded;
  const struct fso_state *st = state;
  static const char *const name = "numcodecs.fixedscaleoffset";
  if (in->elsize != st->asize)
    return zerr_set(err, EIO, "%s: input has %zu-byte elements, expected %zu",
                    name, in->elsize, st->asize);
  uint64_t n = in->n, bytes;
  if (zmul_u64(n, st->dsize, &bytes) < 0 || bytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "%s: %llu elements exceed the decode limit of %zu bytes",
                    name, (unsigned long long)n, env->max_decoded);
  struct bytesrc *src;
  ZTRY(codec_load_input(in->fixed, env, name, &src, err));
  uint8_t *p = malloc(bytes ? (size_t)bytes : 1);
  struct abytes *a = abytes_alloc();
  if (!p || !a) {
    free(p);
    abytes_free(a);
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  for (uint64_t i = 0; i < n; i++) {
    double v = fso_value(st, src->mem + i * st->asize);
    if (fso_store(st->dkind, v, p + i * st->dsize) < 0) {
      free(p);
      abytes_free(a);
      bytesrc_unref(src);
      return zerr_set(err, EIO,
                      "%s: element %llu decodes to %g, which does not fit "
                      "the data type",
                      name, (unsigned long long)i, v);
    }
  }
  bytesrc_unref(src);
  a->n = n;
  a->elsize = st->dsize;
  a->fixed = bytesrc_from_mem(p, (size_t)bytes);
  if (!a->fixed) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  *out = a;
  return 0;
}

const struct codec_impl codec_fixedscaleoffset = {
    .name = "numcodecs.fixedscaleoffset",
    .kind = CODEC_A2A,
    .create = fso_create,
    .destroy = fso_destroy,
    .encoded_spec = fso_spec,
    .decode_a2a = fso_decode,
};
