/* optional.c - the `zarrs.optional` array->bytes codec (zarrs; also under
 * its earlier name `optional`) for optional fixed-size types.
 *
 * Chunk layout, as zarrs writes it:
 *   mask_len (u64 LE) | data_len (u64 LE) | MASK | DATA
 * MASK is the chunk's bool array (non-zero: the value is present) encoded
 * by mask_codecs (zarrs uses packbits); DATA is only the present values, in
 * C order, as a 1-D array of the inner type encoded by data_codecs, and is
 * empty when no value is present. Decoding expands them into elements of
 * the inner type's bytes followed by one presence byte (see DT_OPTIONAL).
 * Optional variable-length types (strings, bytes) are not supported. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/buf.h"

struct optional_state {
  struct chain *mask_chain; /* bool, the chunk's shape */
  struct chain *data_chain; /* 1-D inner type, one per present value */
  struct dtype inner;
};

static const uint8_t optional_zero[16];

/* Free both chains. */
static void optional_destroy(void *state) {
  struct optional_state *st = state;
  if (!st)
    return;
  chain_free(st->mask_chain);
  chain_free(st->data_chain);
  free(st);
}

/* The spec of the present values: 1-D, n of the inner type, zero fill. */
static struct codec_spec optional_data_spec(const struct optional_state *st,
                                            uint64_t n) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = n;
  s.nelem = n;
  s.dtype = st->inner;
  s.fill = optional_zero;
  s.fill_len = st->inner.size;
  return s;
}

/* The spec of the mask: the chunk's shape, bool, fill false. */
static struct codec_spec optional_mask_spec(const struct codec_spec *decoded) {
  struct codec_spec s = *decoded;
  s.dtype = dtype_of(DT_BOOL);
  s.fill = optional_zero;
  s.fill_len = 1;
  return s;
}

/* {"mask_codecs": [...], "data_codecs": [...]}, both required. */
static int optional_create(json_t *config, const struct codec_spec *decoded,
                           void **state, struct zerr *err) {
  static const char *const allowed[] = {"mask_codecs", "data_codecs", NULL};
  if (decoded->dtype.kind != DT_OPTIONAL)
    return zerr_set(err, EIO,
                    "zarrs.optional: data type '%s' is not an optional type",
                    decoded->dtype.name);
  ZTRY(codec_cfg_only(config, "zarrs.optional", allowed, err));
  json_t *mc = config ? json_object_get(config, "mask_codecs") : NULL;
  json_t *dc = config ? json_object_get(config, "data_codecs") : NULL;
  if (!mc || !dc)
    return zerr_set(err, EIO,
                    "zarrs.optional: missing required configuration key '%s'",
                    mc ? "data_codecs" : "mask_codecs");
  struct optional_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
  st->inner = dtype_optional_inner(&decoded->dtype);
  struct codec_spec ms = optional_mask_spec(decoded);
  struct codec_spec ds = optional_data_spec(st, 1);
  int rc = chain_build(mc, &ms, &st->mask_chain, err);
  if (rc < 0) {
    zerr_prefix(err, "zarrs.optional mask_codecs: ");
  } else if ((rc = chain_build(dc, &ds, &st->data_chain, err)) < 0) {
    zerr_prefix(err, "zarrs.optional data_codecs: ");
  }
  if (rc < 0) {
    optional_destroy(st);
    return rc;
  }
  *state = st;
  return 0;
}

/* Decode part [off, off+len) of in through chain c for spec s into memory
 * (*out: a new reference to exactly s->nelem elements). */
static int optional_part(const struct chain *c, const struct codec_spec *s,
                         struct bytesrc *in, uint64_t off, uint64_t len,
                         const struct codec_env *env, const char *what,
                         struct bytesrc **out, struct zerr *err) {
  struct bytesrc *part = NULL;
  struct abytes *a = NULL;
  int rc = bytesrc_sub(in, off, len, &part, err);
  if (rc == 0)
    rc = chain_decode(c, s, part, env, &a, err);
  if (rc == 0)
    rc = bytesrc_load(a->fixed, env->max_decoded, out, err);
  if (rc < 0)
    zerr_prefix(err, "zarrs.optional %s: ", what);
  abytes_free(a);
  bytesrc_unref(part);
  return rc;
}

/* Read the two lengths, decode the mask, then the present values, and
 * interleave them with presence bytes. */
static int optional_decode(const void *state, const struct codec_spec *spec,
                           struct bytesrc *in, const struct codec_env *env,
                           struct abytes **out, struct zerr *err) {
  const struct optional_state *st = state;
  uint64_t n = spec->nelem, hdr[2], total, outsize;
  if (in->size < 16)
    return zerr_set(err, EIO,
                    "zarrs.optional: chunk of %llu bytes is shorter than its "
                    "16-byte header",
                    (unsigned long long)in->size);
  uint8_t h[16];
  ZTRY(bytesrc_read_range(in, 0, 16, h, err));
  for (int i = 0; i < 2; i++) {
    hdr[i] = 0;
    for (int b = 7; b >= 0; b--)
      hdr[i] = hdr[i] << 8 | h[i * 8 + b];
  }
  if (zadd_u64(hdr[0], hdr[1], &total) < 0 || zadd_u64(total, 16, &total) < 0 ||
      total != in->size)
    return zerr_set(err, EIO,
                    "zarrs.optional: mask (%llu bytes) and data (%llu bytes) "
                    "do not fill the %llu-byte chunk",
                    (unsigned long long)hdr[0], (unsigned long long)hdr[1],
                    (unsigned long long)in->size);
  size_t isize = st->inner.size;
  if (zmul_u64(n, isize + 1, &outsize) < 0 || outsize > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "zarrs.optional: %llu elements exceed the decode limit",
                    (unsigned long long)n);
  struct codec_spec ms = optional_mask_spec(spec);
  struct bytesrc *mask = NULL, *data = NULL;
  ZTRY(optional_part(st->mask_chain, &ms, in, 16, hdr[0], env, "mask", &mask,
                     err));
  uint64_t present = 0;
  for (uint64_t i = 0; i < n; i++)
    present += mask->mem[i] != 0;
  int rc = 0;
  if (present) {
    struct codec_spec ds = optional_data_spec(st, present);
    rc = optional_part(st->data_chain, &ds, in, 16 + hdr[0], hdr[1], env,
                       "data", &data, err);
  } else if (hdr[1]) {
    rc = zerr_set(err, EIO,
                  "zarrs.optional: no value is present but the data section "
                  "has %llu bytes",
                  (unsigned long long)hdr[1]);
  }
  uint8_t *p = rc == 0 ? calloc(1, outsize ? (size_t)outsize : 1) : NULL;
  if (rc == 0 && !p)
    rc = zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
  if (rc == 0) {
    const uint8_t *src = present ? data->mem : NULL;
    uint8_t *dst = p;
    for (uint64_t i = 0; i < n; i++, dst += isize + 1) {
      if (!mask->mem[i])
        continue; /* missing: all zero */
      memcpy(dst, src, isize);
      dst[isize] = 1;
      src += isize;
    }
  }
  bytesrc_unref(mask);
  bytesrc_unref(data);
  struct abytes *a = rc == 0 ? abytes_alloc() : NULL;
  if (rc == 0 && a) {
    a->n = n;
    a->elsize = isize + 1;
    a->fixed = bytesrc_from_mem(p, (size_t)outsize);
    p = NULL;
  }
  if (rc == 0 && (!a || !a->fixed))
    rc = zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
  free(p);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

static const char *const optional_aliases[] = {"optional", NULL};

const struct codec_impl codec_optional = {
    .name = "zarrs.optional",
    .aliases = optional_aliases,
    .kind = CODEC_A2B,
    .create = optional_create,
    .destroy = optional_destroy,
    .decode_array = optional_decode,
};
