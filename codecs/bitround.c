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
 * Not modelled: zarrs rounds the fill value too before it reaches the next
 * codec; a shard's empty inner chunk is filled here with the array's fill
 * value as written in the metadata. */
#include "codec.h"

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
  *state = NULL;
  return 0;
}

/* No state. */
static void bitround_destroy(void *state) { (void)state; }

/* Same shape and type. */
static int bitround_spec(const void *state, const struct codec_spec *decoded,
                         struct codec_spec *encoded, struct zerr *err) {
  (void)state, (void)err;
  *encoded = *decoded;
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
