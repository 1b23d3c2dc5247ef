/* bitround.c - `bitround` (array->array; aliases `numcodecs.bitround` and
 * zarrs' URL name; V2 filter id `bitround`): the writer rounded each
 * float's mantissa to `keepbits` bits (integers: keepbits bits from the
 * most significant set bit). The rounded values are ordinary values of the
 * array's type, so reading is the identity: the decoded chunk shares its
 * input's bytes.
 *
 * The configuration is still checked so that a store we would misread is
 * refused: `keepbits` must be an integer from 0 to the mantissa width of a
 * float type (numcodecs' limit; the zarr-extensions spec says "at least
 * 1", numcodecs writes 0 too), and from 0 to 64 for integer types (zarrs
 * writes keepbits 10 on uint8 arrays: a value of the type's width or more
 * rounds nothing). Data types: those zarrs rounds - int8..int64,
 * uint8..uint64, float16, bfloat16, float32, float64, complex64,
 * complex128, numpy.datetime64 and numpy.timedelta64; others are refused.
 *
 * The fill value is the one thing rounded here: zarrs hands the next codec
 * the rounded fill, so an empty inner chunk of a shard after bitround
 * holds the rounded value (a missing chunk of the array keeps the fill
 * value as written). */
#include "abytes.h"
#include "codec.h"

#include <stdlib.h>
#include <string.h>

struct bitround_state {
  uint8_t efill[16]; /* the rounded fill value, for the next codec */
  size_t efill_len;
};

/* zarrs' rounding of the low `width` bits of v: keep `keep` of the `max`
 * bits below the top, round half to even, saturate at all ones. */
static uint64_t bitround_bits(uint64_t v, unsigned keep, unsigned max,
                              unsigned width) {
  if (keep >= max)
    return v;
  uint64_t all = width == 64 ? UINT64_MAX : (UINT64_C(1) << width) - 1;
  unsigned mb = max - keep;
  uint64_t mask = (all >> mb) << mb;
  uint64_t add = ((v >> mb) & 1) + ((UINT64_C(1) << (mb - 1)) - 1);
  v = v > all - add ? all : v + add;
  return v & mask;
}

/* Round n values of `width` bits at p in place: floats keep `keep` of
 * `mant` mantissa bits; integers (mant 0) keep `keep` bits from their
 * most significant set bit. */
static void bitround_values(uint8_t *p, size_t n, unsigned width, unsigned keep,
                            unsigned mant) {
  for (size_t i = 0; i < n; i++) {
    uint8_t *q = p + i * (width / 8);
    uint8_t v8;
    uint16_t v16;
    uint32_t v32;
    uint64_t v = 0;
    switch (width) { /* host order, whatever the host */
    case 8:
      memcpy(&v8, q, 1), v = v8;
      break;
    case 16:
      memcpy(&v16, q, 2), v = v16;
      break;
    case 32:
      memcpy(&v32, q, 4), v = v32;
      break;
    default:
      memcpy(&v, q, 8);
    }
    unsigned max = mant;
    if (!mant)
      for (max = width; max > 0 && !(v >> (max - 1) & 1); max--)
        ;
    v = bitround_bits(v, keep, max, width);
    v8 = (uint8_t)v, v16 = (uint16_t)v, v32 = (uint32_t)v;
    memcpy(q,
           width == 8    ? (void *)&v8
           : width == 16 ? (void *)&v16
           : width == 32 ? (void *)&v32
                         : (void *)&v,
           width / 8);
  }
}

/* Mantissa bits of a float kind (complex: of each part), 0 for others. */
static unsigned bitround_mantissa_bits(enum dtype_kind k) {
  switch (k) {
  case DT_FLOAT16:
    return 10;
  case DT_BFLOAT16:
    return 7;
  case DT_FLOAT32:
  case DT_COMPLEX64:
    return 23;
  case DT_FLOAT64:
  case DT_COMPLEX128:
    return 52;
  default:
    return 0;
  }
}

/* Is k an integer kind bitround takes (the 2- and 4-bit zarrs types are
 * not among them)? */
static int bitround_int_kind(enum dtype_kind k) {
  switch (k) {
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT8:
  case DT_UINT16:
  case DT_UINT32:
  case DT_UINT64:
  case DT_DATETIME64:
  case DT_TIMEDELTA64:
    return 1;
  default:
    return 0;
  }
}

/* Check {"keepbits"} against the array's type; no state. */
static int bitround_create(json_t *config, const struct codec_spec *decoded,
                           void **state, struct zerr *err) {
  static const char *const allowed[] = {"keepbits", NULL};
  ZTRY(codec_cfg_only(config, "bitround", allowed, err));
  long long keep;
  int rc = codec_cfg_int(config, "keepbits", 1, 0, &keep, err);
  if (rc < 0) {
    zerr_prefix(err, "bitround: ");
    return rc;
  }
  enum dtype_kind k = decoded->dtype.kind;
  unsigned mant = bitround_mantissa_bits(k);
  if ((!mant && !bitround_int_kind(k)) || decoded->dtype.size == 0)
    return zerr_set(err, ENOTSUP,
                    "codec 'bitround' is unsupported for data type '%s'",
                    decoded->dtype.name);
  long long max = mant ? mant : 64;
  if (keep < 0 || keep > max)
    return zerr_set(err, EIO,
                    "bitround: keepbits %lld is out of range for data type "
                    "'%s' (0 to %lld)",
                    keep, decoded->dtype.name, max);
  struct bitround_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "bitround: out of memory");
  size_t sz = decoded->dtype.size;
  if (decoded->fill && decoded->fill_len == sz && sz <= sizeof st->efill) {
    int cplx = k == DT_COMPLEX64 || k == DT_COMPLEX128;
    memcpy(st->efill, decoded->fill, sz);
    st->efill_len = sz;
    bitround_values(st->efill, cplx ? 2 : 1, (unsigned)(cplx ? sz * 4 : sz * 8),
                    (unsigned)keep, mant);
  }
  *state = st;
  return 0;
}

/* Free the rounded fill. */
static void bitround_destroy(void *state) { free(state); }

/* Same shape and type; the rounded fill. */
static int bitround_spec(const void *state, const struct codec_spec *decoded,
                         struct codec_spec *encoded, struct zerr *err) {
  (void)err;
  const struct bitround_state *st = state;
  *encoded = *decoded;
  if (st->efill_len) {
    encoded->fill = st->efill;
    encoded->fill_len = st->efill_len;
  }
  return 0;
}

/* The identity: a new chunk sharing the input's bytes (no copy). */
static int bitround_decode(const void *state, const struct codec_spec *decoded,
                           struct abytes *in, const struct codec_env *env,
                           struct abytes **out, struct zerr *err) {
  (void)state, (void)env;
  if (in->elsize != decoded->dtype.size || !in->fixed)
    return zerr_set(err, EIO,
                    "bitround: input has %zu-byte elements, expected %zu",
                    in->elsize, decoded->dtype.size);
  struct abytes *a = abytes_alloc();
  if (!a)
    return zerr_set(err, ENOMEM, "bitround: out of memory");
  a->n = in->n;
  a->elsize = in->elsize;
  a->fixed = bytesrc_ref(in->fixed);
  *out = a;
  return 0;
}

static const char *const bitround_aliases[] = {
    "numcodecs.bitround", "https://codec.zarrs.dev/array_to_array/bitround",
    "https://codec.zarrs.dev/array_to_bytes/bitround", NULL};

const struct codec_impl codec_bitround = {
    .name = "bitround",
    .aliases = bitround_aliases,
    .kind = CODEC_A2A,
    .create = bitround_create,
    .destroy = bitround_destroy,
    .encoded_spec = bitround_spec,
    .decode_a2a = bitround_decode,
};
