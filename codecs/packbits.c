/* packbits.c - bit packing codecs.
 *
 * `packbits` (array->bytes, zarr-extensions codecs/packbits): every
 * component of every element, in C order, keeps its bits first_bit..
 * last_bit (default: all N bits of the component); those b bits are
 * written LSB-first into one bit sequence (element i at bits [i*k,
 * (i+1)*k), k = components * b, bit j of the sequence is bit j%8 of byte
 * j/8), zero-padded to whole bytes. padding_encoding "first_byte" /
 * "last_byte" adds one byte holding the number of pad bits; "none" (the
 * default) adds nothing. Decoding shifts the bits back to first_bit and
 * sign-extends signed integers from last_bit, zero-extends the rest.
 * Components: bool 1 bit, int2/uint2 2, int4/uint4 4, the other integer
 * and float types (and datetime / timedelta) their little-endian bits,
 * complex numbers two float components.
 *
 * Both spellings in use are accepted: first_bit / last_bit (README, zarrs)
 * and start_bit / end_bit (the registry's schema); padding_encoding
 * first_byte / last_byte and start_byte / end_byte. zarrs writes no
 * padding byte for whole-byte components kept whole (it hands them to the
 * `bytes` codec), so for those a chunk without the padding byte is read
 * too. Where zarrs sign-extends only to the end of the byte holding the
 * sign bit, we follow the spec (the whole component).
 *
 * `numcodecs.packbits` (array->array, numcodecs' PackBits: the Zarr V2
 * filter and zarr-python's V3 name for it): a bool array becomes a 1-D
 * uint8 array of 1 + ceil(n/8) bytes, the first holding the pad-bit count,
 * the rest the bits MSB-first (numpy.packbits order, unlike `packbits`). */
#include "abytes.h"
#include "codec.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"

enum packbits_padding { PB_NONE, PB_FIRST, PB_LAST };

struct packbits_state {
  enum packbits_padding padding;
  unsigned comp_bits; /* N: bits of one component */
  unsigned ncomp;     /* components per element: 2 for complex */
  unsigned first;     /* first bit kept */
  unsigned last;      /* last bit kept (inclusive) */
  int is_signed;      /* sign-extend from `last` */
  size_t elsize;      /* decoded bytes per element */
};

/* Bits per component, components and signedness of a data type; 0 when
 * packbits does not take it. */
static int packbits_components(const struct dtype *dt, unsigned *bits,
                               unsigned *ncomp, int *is_signed) {
  *ncomp = 1;
  *is_signed = 0;
  if (dtype_int_bits(dt, bits, is_signed))
    return 1;
  switch (dt->kind) {
  case DT_BOOL:
    *bits = 1;
    return 1;
  case DT_FLOAT16:
  case DT_BFLOAT16:
  case DT_FLOAT32:
  case DT_FLOAT64:
    *bits = (unsigned)dt->size * 8;
    return 1;
  case DT_DATETIME64:
  case DT_TIMEDELTA64:
    *bits = 64;
    *is_signed = 1;
    return 1;
  case DT_COMPLEX64:
  case DT_COMPLEX128:
    *bits = (unsigned)dt->size * 4;
    *ncomp = 2;
    return 1;
  default:
    return 0;
  }
}

/* A bit index: absent or null gives def; else a non-negative integer. */
static int packbits_bit(json_t *config, const char *key, const char *alt,
                        long long def, long long *out, struct zerr *err) {
  json_t *a = json_object_get(config, key), *b = json_object_get(config, alt);
  if (a && b)
    return zerr_set(err, EIO, "packbits: both '%s' and '%s' are given", key,
                    alt);
  json_t *v = a ? a : b;
  if (!v || json_is_null(v)) {
    *out = def;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0)
    return zerr_set(err, EIO,
                    "packbits: '%s' must be a non-negative integer or null",
                    a ? key : alt);
  *out = (long long)json_integer_value(v);
  return 0;
}

/* Parse the configuration against the array's data type. */
static int packbits_create(json_t *config, const struct codec_spec *decoded,
                           void **state, struct zerr *err) {
  static const char *const allowed[] = {"padding_encoding", "first_bit",
                                        "last_bit",         "start_bit",
                                        "end_bit",          NULL};
  ZTRY(codec_cfg_only(config, "packbits", allowed, err));
  struct packbits_state st = {0};
  const struct dtype *dt = &decoded->dtype;
  if (!packbits_components(dt, &st.comp_bits, &st.ncomp, &st.is_signed))
    return zerr_set(err, EIO, "packbits: data type '%s' is not supported",
                    dt->name);
  const char *pad = NULL;
  json_t *pj = config ? json_object_get(config, "padding_encoding") : NULL;
  if (pj && !json_is_null(pj) && !(pad = json_string_value(pj)))
    return zerr_set(err, EIO, "packbits: 'padding_encoding' must be a string");
  if (!pad || !strcmp(pad, "none"))
    st.padding = PB_NONE;
  else if (!strcmp(pad, "first_byte") || !strcmp(pad, "start_byte"))
    st.padding = PB_FIRST;
  else if (!strcmp(pad, "last_byte") || !strcmp(pad, "end_byte"))
    st.padding = PB_LAST;
  else
    return zerr_set(err, EIO,
                    "packbits: padding_encoding must be \"none\", "
                    "\"first_byte\" or \"last_byte\", not \"%s\"",
                    pad);
  long long first = 0, last = st.comp_bits - 1;
  if (config) {
    ZTRY(packbits_bit(config, "first_bit", "start_bit", 0, &first, err));
    ZTRY(packbits_bit(config, "last_bit", "end_bit", last, &last, err));
  }
  if (first > last)
    return zerr_set(err, EIO, "packbits: first_bit %lld is after last_bit %lld",
                    first, last);
  if (last >= st.comp_bits)
    return zerr_set(err, EIO,
                    "packbits: last_bit %lld is outside the %u-bit "
                    "components of '%s'",
                    last, st.comp_bits, dt->name);
  st.first = (unsigned)first;
  st.last = (unsigned)last;
  st.elsize = dt->size;
  struct packbits_state *p = malloc(sizeof *p);
  if (!p)
    return zerr_set(err, ENOMEM, "packbits: out of memory");
  *p = st;
  *state = p;
  return 0;
}

/* Free the parsed configuration. */
static void packbits_destroy(void *state) { free(state); }

/* n bits (1..64) of p starting at bit `pos`, LSB-first. */
static uint64_t packbits_get(const uint8_t *p, uint64_t pos, unsigned n) {
  const uint8_t *q = p + (pos >> 3);
  unsigned sh = (unsigned)(pos & 7), got = 0;
  uint64_t v = 0;
  while (got < n) {
    v |= (uint64_t)(*q++ >> sh) << got;
    got += 8 - sh;
    sh = 0;
  }
  return n == 64 ? v : v & (((uint64_t)1 << n) - 1);
}

/* Store the low `size` bytes of v at dst in host order. */
static void packbits_put(uint8_t *dst, size_t size, uint64_t v) {
  switch (size) {
  case 1:
    *dst = (uint8_t)v;
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

/* Unpack every component of n elements from the packed bits. */
static void packbits_unpack(const struct packbits_state *st, const uint8_t *src,
                            uint64_t n, uint8_t *dst) {
  unsigned b = st->last - st->first + 1;
  size_t csize = st->elsize / st->ncomp;
  uint64_t ncomp = n * st->ncomp, pos = 0;
  uint64_t sign = (uint64_t)1 << st->last, ext = ~(uint64_t)0 << st->last;
  for (uint64_t c = 0; c < ncomp; c++, pos += b, dst += csize) {
    uint64_t v = packbits_get(src, pos, b) << st->first;
    if (st->is_signed && (v & sign))
      v |= ext;
    packbits_put(dst, csize, v);
  }
}

/* Check the length and the padding byte, then unpack (or, for whole-byte
 * components kept whole on a little-endian host, hand back a window). */
static int packbits_decode(const void *state, const struct codec_spec *spec,
                           struct bytesrc *in, const struct codec_env *env,
                           struct abytes **out, struct zerr *err) {
  const struct packbits_state *st = state;
  uint64_t n = spec->nelem;
  uint64_t k = (uint64_t)st->ncomp * (st->last - st->first + 1);
  uint64_t bits, outsize;
  if (zmul_u64(n, k, &bits) < 0 || zmul_u64(n, st->elsize, &outsize) < 0)
    return zerr_set(err, EFBIG, "packbits: %llu elements overflow",
                    (unsigned long long)n);
  uint64_t packed = bits / 8 + (bits % 8 != 0);
  unsigned pad_bits = (unsigned)(packed * 8 - bits);
  int whole =
      st->comp_bits % 8 == 0 && st->first == 0 && st->last == st->comp_bits - 1;
  int has_pad = st->padding != PB_NONE;
  if (has_pad && whole && in->size == packed)
    has_pad = 0; /* what zarrs writes for these types */
  if (in->size != packed + (uint64_t)has_pad)
    return zerr_set(err, EIO,
                    "packbits: chunk has %llu bytes, expected %llu (%llu "
                    "elements of %llu bits%s)",
                    (unsigned long long)in->size,
                    (unsigned long long)(packed + (uint64_t)has_pad),
                    (unsigned long long)n, (unsigned long long)k,
                    has_pad ? ", plus the padding byte" : "");
  uint64_t data_off = has_pad && st->padding == PB_FIRST ? 1 : 0;
  if (has_pad) {
    uint8_t pb;
    ZTRY(bytesrc_read_range(in, st->padding == PB_FIRST ? 0 : packed, 1, &pb,
                            err));
    if (pb != pad_bits)
      return zerr_set(err, EIO,
                      "packbits: the padding byte says %u bits, expected %u",
                      pb, pad_bits);
  }
  struct abytes *a = abytes_alloc();
  if (!a)
    return zerr_set(err, ENOMEM, "packbits: out of memory");
  a->n = n;
  a->elsize = st->elsize;
#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (whole) { /* the bits are the little-endian bytes themselves */
    int rc = bytesrc_sub(in, data_off, packed, &a->fixed, err);
    if (rc < 0)
      abytes_free(a);
    else
      *out = a;
    return rc;
  }
#endif
  if (outsize > env->max_decoded) {
    abytes_free(a);
    return zerr_set(err, EFBIG,
                    "packbits: %llu decoded bytes exceed the decode limit of "
                    "%zu",
                    (unsigned long long)outsize, env->max_decoded);
  }
  struct bytesrc *src = NULL;
  int rc = codec_load_input(in, env, "packbits", &src, err);
  uint8_t *p = rc == 0 ? malloc(outsize ? (size_t)outsize : 1) : NULL;
  if (rc == 0 && !p)
    rc = zerr_set(err, ENOMEM, "packbits: out of memory");
  if (rc == 0) {
    packbits_unpack(st, src->mem + data_off, n, p);
    a->fixed = bytesrc_from_mem(p, (size_t)outsize);
    if (!a->fixed)
      rc = zerr_set(err, ENOMEM, "packbits: out of memory");
    p = NULL;
  }
  free(p);
  bytesrc_unref(src);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

static const char *const packbits_aliases[] = {NULL};

const struct codec_impl codec_packbits = {
    .name = "packbits",
    .aliases = packbits_aliases,
    .kind = CODEC_A2B,
    .create = packbits_create,
    .destroy = packbits_destroy,
    .decode_array = packbits_decode,
};

/* ---- numcodecs.packbits ---- */

/* No configuration; bool arrays only. */
static int npb_create(json_t *config, const struct codec_spec *decoded,
                      void **state, struct zerr *err) {
  static const char *const allowed[] = {NULL};
  ZTRY(codec_cfg_only(config, "numcodecs.packbits", allowed, err));
  if (decoded->dtype.kind != DT_BOOL)
    return zerr_set(err, EIO,
                    "numcodecs.packbits: data type must be bool, not '%s'",
                    decoded->dtype.name);
  *state = NULL;
  return 0;
}

/* The encoded array: 1-D uint8, the pad count then ceil(n/8) bytes. */
static int npb_spec(const void *state, const struct codec_spec *decoded,
                    struct codec_spec *encoded, struct zerr *err) {
  (void)state, (void)err;
  *encoded = *decoded;
  encoded->ndim = 1;
  encoded->nelem = 1 + decoded->nelem / 8 + (decoded->nelem % 8 != 0);
  encoded->shape[0] = encoded->nelem;
  encoded->dtype = dtype_of(DT_UINT8);
  return 0;
}

/* Check the pad count, then unpack MSB-first into 0/1 bytes. */
static int npb_decode(const void *state, const struct codec_spec *decoded,
                      struct abytes *in, const struct codec_env *env,
                      struct abytes **out, struct zerr *err) {
  (void)state;
  uint64_t n = decoded->nelem;
  unsigned pad = (unsigned)((8 - n % 8) % 8);
  if (in->elsize != 1 || in->n != 1 + n / 8 + (n % 8 != 0))
    return zerr_set(err, EIO,
                    "numcodecs.packbits: %llu packed bytes, expected %llu",
                    (unsigned long long)in->n,
                    (unsigned long long)(1 + n / 8 + (n % 8 != 0)));
  if (n > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "numcodecs.packbits: %llu elements exceed the decode "
                    "limit",
                    (unsigned long long)n);
  struct bytesrc *src;
  ZTRY(codec_load_input(in->fixed, env, "numcodecs.packbits", &src, err));
  if (src->mem[0] != pad) {
    int rc = zerr_set(err, EIO,
                      "numcodecs.packbits: the first byte says %u padding "
                      "bits, expected %u",
                      src->mem[0], pad);
    bytesrc_unref(src);
    return rc;
  }
  uint8_t *p = malloc(n ? (size_t)n : 1);
  if (!p) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "numcodecs.packbits: out of memory");
  }
  for (uint64_t i = 0; i < n; i++)
    p[i] = (uint8_t)(src->mem[1 + i / 8] >> (7 - i % 8) & 1);
  bytesrc_unref(src);
  struct abytes *a = abytes_alloc();
  if (!a) {
    free(p);
    return zerr_set(err, ENOMEM, "numcodecs.packbits: out of memory");
  }
  a->n = n;
  a->elsize = 1;
  a->fixed = bytesrc_from_mem(p, (size_t)n);
  if (!a->fixed) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "numcodecs.packbits: out of memory");
  }
  *out = a;
  return 0;
}

const struct codec_impl codec_numcodecs_packbits = {
    .name = "numcodecs.packbits",
    .kind = CODEC_A2A,
    .create = npb_create,
    .encoded_spec = npb_spec,
    .decode_a2a = npb_decode,
};
