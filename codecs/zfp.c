/* zfp.c - `zfp` (zarrs; aliases `zarrs.zfp` and its URL) and
 * `numcodecs.zfpy` (V2 compressor id `zfpy`), array->bytes codecs whose
 * chunks are zfp streams, decoded through libzfp.
 *
 * `zfp` stores a bare stream; the configuration gives the mode: `mode`
 * "fixed_rate" (`rate`), "fixed_precision" (`precision`),
 * "fixed_accuracy" (`tolerance`), "reversible", or "expert" (`minbits`,
 * `maxbits`, `maxprec`, `minexp`). Old zarrs wrote `write_header`: true
 * puts zfp's full header in front, as zfpy does. Like zarrs, fixed-rate
 * mode sets the rate for 3-D blocks (zfp_stream_set_rate(..., 3, 0))
 * whatever the chunk's dimensionality: the bits per block follow that.
 *
 * `numcodecs.zfpy` streams begin with zfp's full header (magic, field
 * metadata, mode), which is what decodes them; the configuration (`mode`
 * 2 to 5 with `rate`/`precision`/`tolerance`, -1 for unused) is only
 * checked. The header's type and sizes must be the chunk's.
 *
 * The chunk shape maps to zfp's sizes last dimension first (nx is the
 * fastest-varying one): [a, b] is nx = b, ny = a. Chunks of more than 4
 * dimensions drop their dimensions of size 1 (zarr-extensions' rule);
 * 1 to 4 dimensions are used as they are. Types: int32, int64, float32,
 * float64 directly; numpy.datetime64/timedelta64 as int64; int8, uint8,
 * int16, uint16 promoted to int32 and uint32, uint64 clamped to int32 and
 * int64, the way zarrs and zfp's zfp_promote_* / zfp_demote_* do it.
 *
 * libzfp reads its stream a word at a time without checking the end of the
 * buffer. A stream is therefore copied into a zeroed buffer large enough
 * for everything a decoder can read for this field and mode, and a decode
 * that used more words than the chunk has is an error (truncated stream).
 * Without libzfp (configure --without-zfp) the names alone remain, refused
 * by chain_build. */
#include "config.h"

#include "abytes.h"
#include "codec.h"

#if ZFS_WITH_ZFP
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <zfp.h>

#include "../src/util/zmath.h"

/* How a zfp value becomes an element of the array's type. */
enum zfp_promo {
  ZP_NONE, /* the zfp type is the array's type */
  ZP_I8,   /* int8 << 23 */
  ZP_U8,   /* (uint8 - 0x80) << 23 */
  ZP_I16,  /* int16 << 15 */
  ZP_U16,  /* (uint16 - 0x8000) << 15 */
  ZP_U32,  /* min(uint32, INT32_MAX) */
  ZP_U64,  /* min(uint64, INT64_MAX) */
};

struct zfp_state {
  const char *name; /* "zfp" or "numcodecs.zfpy", for messages */
  int header;       /* the stream starts with zfp's full header */
  zfp_mode mode;    /* without a header: the mode and its parameters */
  double rate, tolerance;
  unsigned precision, minbits, maxbits, maxprec;
  int minexp;
  zfp_type ztype; /* what zfp decodes */
  enum zfp_promo promo;
  size_t elsize; /* bytes of a decoded element of the array */
};

/* The zfp type and promotion for an array type; 0 when zfp cannot hold
 * it. */
static int zfp_type_for(enum dtype_kind k, zfp_type *t, enum zfp_promo *p) {
  static const struct {
    enum dtype_kind kind;
    zfp_type type;
    enum zfp_promo promo;
  } map[] = {
      {DT_INT32, zfp_type_int32, ZP_NONE},
      {DT_INT64, zfp_type_int64, ZP_NONE},
      {DT_FLOAT32, zfp_type_float, ZP_NONE},
      {DT_FLOAT64, zfp_type_double, ZP_NONE},
      {DT_DATETIME64, zfp_type_int64, ZP_NONE},
      {DT_TIMEDELTA64, zfp_type_int64, ZP_NONE},
      {DT_INT8, zfp_type_int32, ZP_I8},
      {DT_UINT8, zfp_type_int32, ZP_U8},
      {DT_INT16, zfp_type_int32, ZP_I16},
      {DT_UINT16, zfp_type_int32, ZP_U16},
      {DT_UINT32, zfp_type_int32, ZP_U32},
      {DT_UINT64, zfp_type_int64, ZP_U64},
  };
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (map[i].kind == k) {
      *t = map[i].type;
      *p = map[i].promo;
      return 1;
    }
  return 0;
}

/* An integer member within [lo, hi]. */
static int zfp_cfg_range(json_t *config, const char *key, long long lo,
                         long long hi, long long *out, struct zerr *err) {
  ZTRY(codec_cfg_int(config, key, 1, 0, out, err));
  if (*out < lo || *out > hi)
    return zerr_set(err, EIO, "'%s' is %lld, not in %lld..%lld", key, *out, lo,
                    hi);
  return 0;
}

/* The `zfp` configuration: the mode and its parameters. */
static int zfp_parse_v3(json_t *config, struct zfp_state *st,
                        struct zerr *err) {
  static const char *const allowed[] = {
      "mode",    "rate",    "precision", "tolerance",    "minbits",
      "maxbits", "maxprec", "minexp",    "write_header", NULL};
  ZTRY(codec_cfg_only(config, "zfp", allowed, err));
  const char *mode;
  ZTRY(codec_cfg_str(config, "mode", 1, NULL, &mode, err));
  json_t *wh = json_object_get(config, "write_header");
  if (wh && !json_is_boolean(wh))
    return zerr_set(err, EIO, "'write_header' must be a boolean");
  st->header = json_is_true(wh);
  long long v, w, x, y;
  if (!strcmp(mode, "reversible")) {
    st->mode = zfp_mode_reversible;
  } else if (!strcmp(mode, "fixed_rate")) {
    st->mode = zfp_mode_fixed_rate;
    ZTRY(codec_cfg_num(config, "rate", 1, 0, &st->rate, err));
    if (!(st->rate > 0 && st->rate <= 64))
      return zerr_set(err, EIO, "'rate' must be in (0, 64], not %g", st->rate);
  } else if (!strcmp(mode, "fixed_precision")) {
    st->mode = zfp_mode_fixed_precision;
    ZTRY(zfp_cfg_range(config, "precision", 0, ZFP_MAX_PREC, &v, err));
    st->precision = (unsigned)v;
  } else if (!strcmp(mode, "fixed_accuracy")) {
    st->mode = zfp_mode_fixed_accuracy;
    ZTRY(codec_cfg_num(config, "tolerance", 1, 0, &st->tolerance, err));
    if (!(st->tolerance >= 0 && isfinite(st->tolerance)))
      return zerr_set(err, EIO, "'tolerance' must be a finite number >= 0");
  } else if (!strcmp(mode, "expert")) {
    st->mode = zfp_mode_expert;
    ZTRY(zfp_cfg_range(config, "minbits", 0, ZFP_MAX_BITS, &v, err));
    ZTRY(zfp_cfg_range(config, "maxbits", v, ZFP_MAX_BITS, &w, err));
    ZTRY(zfp_cfg_range(config, "maxprec", 1, ZFP_MAX_PREC, &x, err));
    ZTRY(zfp_cfg_range(config, "minexp", ZFP_MIN_EXP, 1023, &y, err));
    st->minbits = (unsigned)v;
    st->maxbits = (unsigned)w;
    st->maxprec = (unsigned)x;
    st->minexp = (int)y;
  } else {
    return zerr_set(err, EIO,
                    "unknown mode '%s' (fixed_rate, fixed_precision, "
                    "fixed_accuracy, reversible, expert)",
                    mode);
  }
  return 0;
}

/* The `numcodecs.zfpy` configuration: checked, the header decodes. */
static int zfp_parse_zfpy(json_t *config, struct zfp_state *st,
                          struct zerr *err) {
  static const char *const allowed[] = {
      "mode", "rate", "precision", "tolerance", "compression_kwargs", NULL};
  ZTRY(codec_cfg_only(config, "numcodecs.zfpy", allowed, err));
  long long mode;
  ZTRY(zfp_cfg_range(config, "mode", 2, 5, &mode, err));
  double rate = -1, tol = -1, prec = -1;
  ZTRY(codec_cfg_num(config, "rate", 0, -1, &rate, err));
  ZTRY(codec_cfg_num(config, "precision", 0, -1, &prec, err));
  ZTRY(codec_cfg_num(config, "tolerance", 0, -1, &tol, err));
  json_t *kw = json_object_get(config, "compression_kwargs");
  if (kw && !json_is_object(kw))
    return zerr_set(err, EIO, "'compression_kwargs' must be an object");
  if ((mode == 2 && !(rate > 0)) || (mode == 3 && !(prec >= 0)) ||
      (mode == 4 && !(tol >= 0)))
    return zerr_set(err, EIO,
                    "mode %lld lacks its rate, precision or "
                    "tolerance",
                    mode);
  st->header = 1;
  return 0;
}

/* Parse either codec's configuration for the array's type. */
static int zfp_create_common(json_t *config, const struct codec_spec *decoded,
                             const char *name, void **state, struct zerr *err) {
  struct zfp_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  st->name = name;
  int rc = strcmp(name, "zfp") ? zfp_parse_zfpy(config, st, err)
                               : zfp_parse_v3(config, st, err);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
  } else if (!zfp_type_for(decoded->dtype.kind, &st->ztype, &st->promo) ||
             decoded->dtype.size == 0) {
    rc = zerr_set(err, ENOTSUP, "codec '%s' is unsupported for data type '%s'",
                  name, decoded->dtype.name);
  } else if (!st->header && st->mode == zfp_mode_fixed_accuracy &&
             st->ztype != zfp_type_float && st->ztype != zfp_type_double) {
    rc = zerr_set(err, ENOTSUP,
                  "codec '%s' is unsupported in fixed_accuracy mode for "
                  "data type '%s' (integers have no accuracy mode)",
                  name, decoded->dtype.name);
  }
  if (rc < 0) {
    free(st);
    return rc;
  }
  st->elsize = decoded->dtype.size;
  *state = st;
  return 0;
}

/* `zfp`. */
static int zfp_create(json_t *config, const struct codec_spec *decoded,
                      void **state, struct zerr *err) {
  return zfp_create_common(config, decoded, "zfp", state, err);
}

/* `numcodecs.zfpy`. */
static int zfpy_create(json_t *config, const struct codec_spec *decoded,
                       void **state, struct zerr *err) {
  return zfp_create_common(config, decoded, "numcodecs.zfpy", state, err);
}

/* Free the parsed configuration. */
static void zfp_destroy(void *state) { free(state); }

/* zfp's sizes for a chunk shape (n[0] = nx); the number of them (1-4), or
 * 0 when more than 4 dimensions are longer than 1. */
static int zfp_sizes(const struct codec_spec *spec, size_t n[4]) {
  int d = 0;
  n[0] = n[1] = n[2] = n[3] = 0;
  if (spec->ndim >= 1 && spec->ndim <= 4) {
    for (int i = spec->ndim - 1; i >= 0; i--)
      n[d++] = (size_t)spec->shape[i];
    return d;
  }
  for (int i = spec->ndim - 1; i >= 0; i--) {
    if (spec->shape[i] == 1)
      continue;
    if (d == 4)
      return 0;
    n[d++] = (size_t)spec->shape[i];
  }
  if (d == 0)
    n[d++] = 1; /* a single element: a 1-D field of one */
  return d;
}

/* Set the stream's mode from the configuration (no header). */
static int zfp_set_mode(const struct zfp_state *st, zfp_stream *zs,
                        struct zerr *err) {
  switch (st->mode) {
  case zfp_mode_reversible:
    zfp_stream_set_reversible(zs);
    return 0;
  case zfp_mode_fixed_rate:
    zfp_stream_set_rate(zs, st->rate, st->ztype, 3, zfp_false);
    return 0;
  case zfp_mode_fixed_precision:
    zfp_stream_set_precision(zs, st->precision);
    return 0;
  case zfp_mode_fixed_accuracy:
    zfp_stream_set_accuracy(zs, st->tolerance);
    return 0;
  case zfp_mode_expert:
    if (zfp_stream_set_params(zs, st->minbits, st->maxbits, st->maxprec,
                              st->minexp))
      return 0;
    return zerr_set(err, EIO, "%s: libzfp rejects the expert parameters",
                    st->name);
  default:
    return zerr_set(err, EIO, "%s: no mode", st->name);
  }
}

/* Bytes a decoder may read for `dims`-D field n of type t with the
 * stream's parameters, header included, whole words: per block the
 * larger of minbits (fixed-rate padding) and what the embedded coder can
 * consume (exponent and precision bits, then per bit plane the bits of
 * every value and the group tests), which a garbage stream can reach.
 * -EFBIG when it does not fit in limit. */
static int zfp_read_bound(const zfp_stream *zs, zfp_type t, int dims,
                          const size_t n[4], size_t limit, size_t *out,
                          struct zerr *err) {
  uint64_t blocks = 1, bits, total;
  for (int i = 0; i < dims; i++)
    if (zmul_u64(blocks, ((uint64_t)n[i] + 3) / 4, &blocks) < 0)
      return zerr_set(err, EFBIG, "zfp: too many blocks");
  uint64_t values = 1ull << (2 * dims);
  uint64_t prec = t == zfp_type_int32 || t == zfp_type_float ? 32 : 64;
  uint64_t per = 64 + values * (prec + 2) + prec;
  if (zs->minbits > per)
    per = zs->minbits;
  uint64_t word = stream_word_bits;
  if (zmul_u64(blocks, per, &bits) < 0 ||
      bits > UINT64_MAX - ZFP_HEADER_MAX_BITS - 3 * word)
    return zerr_set(err, EFBIG, "zfp: too many blocks");
  total = (bits + ZFP_HEADER_MAX_BITS + 3 * word) / word * word / 8;
  if (total > limit)
    return zerr_set(err, EFBIG,
                    "zfp: decoding needs %llu bytes, over the limit of %zu",
                    (unsigned long long)total, limit);
  *out = (size_t)total;
  return 0;
}

/* Check the header's field against the chunk's. */
static int zfp_check_header(const struct zfp_state *st, const zfp_field *hf,
                            const size_t n[4], struct zerr *err) {
  if (hf->type != st->ztype || hf->nx != n[0] || hf->ny != n[1] ||
      hf->nz != n[2] || hf->nw != n[3])
    return zerr_set(err, EIO,
                    "%s: the stream's header describes type %d of %zux%zux"
                    "%zux%zu (nx..nw), the chunk is type %d of %zux%zux%zux%zu",
                    st->name, (int)hf->type, hf->nx, hf->ny, hf->nz, hf->nw,
                    (int)st->ztype, n[0], n[1], n[2], n[3]);
  return 0;
}

/* Demote decoded zfp values in place to the array's type (the output never
 * grows, so a forward pass reads each value before it is overwritten). */
static void zfp_demote(enum zfp_promo p, uint8_t *buf, uint64_t n) {
  for (uint64_t i = 0; i < n; i++) {
    int32_t v;
    int64_t w;
    if (p == ZP_U64) {
      memcpy(&w, buf + 8 * i, 8);
      uint64_t u = w < 0 ? 0 : (uint64_t)w;
      memcpy(buf + 8 * i, &u, 8);
      continue;
    }
    memcpy(&v, buf + 4 * i, 4);
    switch (p) {
    case ZP_I8: {
      int32_t s = v >> 23;
      int8_t o = (int8_t)(s < -128 ? -128 : s > 127 ? 127 : s);
      memcpy(buf + i, &o, 1);
      break;
    }
    case ZP_U8: {
      int32_t s = (v >> 23) + 0x80;
      buf[i] = (uint8_t)(s < 0 ? 0 : s > 0xff ? 0xff : s);
      break;
    }
    case ZP_I16: {
      int32_t s = v >> 15;
      int16_t o = (int16_t)(s < -32768 ? -32768 : s > 32767 ? 32767 : s);
      memcpy(buf + 2 * i, &o, 2);
      break;
    }
    case ZP_U16: {
      int32_t s = (v >> 15) + 0x8000;
      uint16_t o = (uint16_t)(s < 0 ? 0 : s > 0xffff ? 0xffff : s);
      memcpy(buf + 2 * i, &o, 2);
      break;
    }
    case ZP_U32: {
      uint32_t o = v < 0 ? 0 : (uint32_t)v;
      memcpy(buf + 4 * i, &o, 4);
      break;
    }
    default:
      return;
    }
  }
}

/* A zfp field over out for the chunk's sizes. */
static zfp_field *zfp_make_field(void *out, zfp_type t, int dims,
                                 const size_t n[4]) {
  switch (dims) {
  case 1:
    return zfp_field_1d(out, t, n[0]);
  case 2:
    return zfp_field_2d(out, t, n[0], n[1]);
  case 3:
    return zfp_field_3d(out, t, n[0], n[1], n[2]);
  default:
    return zfp_field_4d(out, t, n[0], n[1], n[2], n[3]);
  }
}

/* The libzfp objects of one decode; zfp_run_free releases them. */
struct zfp_run {
  uint8_t *buf; /* the stream, zero-padded to the read bound */
  bitstream *bs;
  zfp_stream *zs;
  zfp_field *field, *hfield;
};

/* Release; safe on a zeroed struct. */
static void zfp_run_free(struct zfp_run *r) {
  if (r->field)
    zfp_field_free(r->field);
  if (r->hfield)
    zfp_field_free(r->hfield);
  if (r->zs) /* libzfp's close functions do not all take NULL */
    zfp_stream_close(r->zs);
  if (r->bs)
    stream_close(r->bs);
  free(r->buf);
}

/* (Re)build r's bit stream over len bytes of src, zero-padded to cap. */
static int zfp_run_buffer(struct zfp_run *r, const uint8_t *src, size_t len,
                          size_t cap, const char *name, struct zerr *err) {
  if (r->bs)
    stream_close(r->bs);
  r->bs = NULL;
  free(r->buf);
  r->buf = calloc(1, cap);
  if (r->buf)
    r->bs = stream_open(r->buf, cap);
  if (!r->bs)
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  memcpy(r->buf, src, len < cap ? len : cap);
  zfp_stream_set_bit_stream(r->zs, r->bs);
  return 0;
}

/* Decode the whole stream `src` (len bytes) into out (n values of the zfp
 * type, sizes zn in dims dimensions). */
static int zfp_run(const struct zfp_state *st, const uint8_t *src, size_t len,
                   void *out, int dims, const size_t zn[4],
                   const struct codec_env *env, struct zerr *err) {
  struct zfp_run r = {0};
  int rc = 0;
  size_t word = stream_word_bits / 8;
  size_t have = len / word * word + (len % word ? word : 0);
  size_t first = have + 4 * word, bound = 0;
  r.zs = zfp_stream_open(NULL);
  r.field = zfp_make_field(out, st->ztype, dims, zn);
  r.hfield = st->header ? zfp_field_alloc() : NULL;
  if (!r.zs || !r.field || (st->header && !r.hfield))
    rc = zerr_set(err, ENOMEM, "%s: out of memory", st->name);
  if (rc == 0)
    rc = zfp_run_buffer(&r, src, len, first, st->name, err);
  size_t hbits = 0;
  if (rc == 0 && st->header) {
    hbits = zfp_read_header(r.zs, r.hfield, ZFP_HEADER_FULL);
    if (!hbits || hbits > (uint64_t)len * 8)
      rc = zerr_set(err, EIO, "%s: no valid zfp header", st->name);
    else
      rc = zfp_check_header(st, r.hfield, zn, err);
  } else if (rc == 0) {
    rc = zfp_set_mode(st, r.zs, err);
  }
  if (rc == 0)
    rc = zfp_read_bound(r.zs, st->ztype, dims, zn, env->max_decoded, &bound,
                        err);
  if (rc == 0 && bound > first) { /* room for all a decoder may read */
    rc = zfp_run_buffer(&r, src, len, bound, st->name, err);
    if (rc == 0)
      stream_rseek(r.bs, hbits);
  }
  if (rc == 0) {
    size_t used = zfp_decompress(r.zs, r.field);
    if (used == 0)
      rc = zerr_set(err, EIO, "%s: libzfp could not decode the stream",
                    st->name);
    else if (used > (bound > first ? bound : first))
      /* The read bound is wrong: say so loudly rather than quietly. */
      rc = zerr_set(err, EIO, "%s: libzfp read %zu bytes, past its buffer",
                    st->name, used);
    else if (used > have)
      rc = zerr_set(err, EIO,
                    "%s: truncated stream: decoding needs %zu bytes, the "
                    "chunk has %zu",
                    st->name, used, len);
  }
  zfp_run_free(&r);
  return rc;
}

/* Decode a chunk: load it, run libzfp, demote to the array's type. */
static int zfp_decode(const void *state, const struct codec_spec *spec,
                      struct bytesrc *in, const struct codec_env *env,
                      struct abytes **out, struct zerr *err) {
  const struct zfp_state *st = state;
  size_t zn[4];
  int dims = zfp_sizes(spec, zn);
  if (!dims)
    return zerr_set(err, ENOTSUP,
                    "codec '%s' is unsupported for chunks with more than 4 "
                    "dimensions longer than 1",
                    st->name);
  uint64_t n = spec->nelem, bytes;
  size_t zsize = zfp_type_size(st->ztype);
  if (zmul_u64(n, zsize, &bytes) < 0 || bytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "%s: %llu elements exceed the decode limit of %zu bytes",
                    st->name, (unsigned long long)n, env->max_decoded);
  if (in->size == 0 || n == 0)
    return zerr_set(err, EIO, "%s: empty chunk", st->name);
  struct bytesrc *src;
  ZTRY(codec_load_input(in, env, st->name, &src, err));
  uint8_t *buf = malloc(bytes ? (size_t)bytes : 1);
  struct abytes *a = abytes_alloc();
  int rc = 0;
  if (!buf || !a)
    rc = zerr_set(err, ENOMEM, "%s: out of memory", st->name);
  if (rc == 0)
    rc = zfp_run(st, src->mem, (size_t)src->size, buf, dims, zn, env, err);
  bytesrc_unref(src);
  if (rc == 0) {
    zfp_demote(st->promo, buf, n);
    a->n = n;
    a->elsize = st->elsize;
    a->fixed = bytesrc_from_mem(buf, (size_t)(n * st->elsize));
    if (!a->fixed)
      rc = zerr_set(err, ENOMEM, "%s: out of memory", st->name);
    buf = NULL; /* the source owns it now, or freed it */
  }
  if (rc < 0) {
    free(buf);
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}
#endif /* ZFS_WITH_ZFP */

static const char *const zfp_aliases[] = {
    "zarrs.zfp", "https://codec.zarrs.dev/array_to_bytes/zfp", NULL};
static const char *const zfpy_aliases[] = {
    "https://codec.zarrs.dev/array_to_bytes/zfpy", NULL};

#if ZFS_WITH_ZFP
const struct codec_impl codec_zfp = {
    .name = "zfp",
    .aliases = zfp_aliases,
    .kind = CODEC_A2B,
    .create = zfp_create,
    .destroy = zfp_destroy,
    .decode_array = zfp_decode,
};

const struct codec_impl codec_numcodecs_zfpy = {
    .name = "numcodecs.zfpy",
    .aliases = zfpy_aliases,
    .kind = CODEC_A2B,
    .create = zfpy_create,
    .destroy = zfp_destroy,
    .decode_array = zfp_decode,
};
#else
const struct codec_impl codec_zfp =
    CODEC_BUILT_WITHOUT("zfp", zfp_aliases, CODEC_A2B, "zfp");
const struct codec_impl codec_numcodecs_zfpy =
    CODEC_BUILT_WITHOUT("numcodecs.zfpy", zfpy_aliases, CODEC_A2B, "zfp");
#endif
