/* optional.c - the `zarrs.optional` array->bytes codec (zarrs; also under
 * its earlier name `optional`) for optional fixed-size types, optional
 * strings and bytes, and nested optional types.
 *
 * Chunk format, as zarrs writes it:
 *   mask_len (u64 LE) | data_len (u64 LE) | MASK | DATA
 * MASK is the chunk's bool array (non-zero: the value is present) encoded
 * by mask_codecs (zarrs uses packbits); DATA is only the present values, in
 * C order, as a 1-D array of the inner type encoded by data_codecs (for a
 * nested optional type, another zarrs.optional), and is empty when no value
 * is present. Decoding expands them into the DT_OPTIONAL representation
 * (src/zarr/dtype.h): fixed-size inner types give elements of the inner bytes
 * then one presence byte; variable-size ones give elements that are empty
 * when missing and the byte 1 then the inner element's bytes when present.
 *
 * The whole chunk is decoded at once (no partial decoding): the mask and
 * the data section are separate encodings, and element j's place in the
 * data section depends on the mask of every element before it. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/buf.h"
#include "../src/util/zmath.h"

struct optional_state {
  struct chain *mask_chain; /* bool, the chunk's shape */
  struct chain *data_chain; /* 1-D inner type, one per present value */
  struct dtype inner;
  int var; /* the inner type has variable-length elements */
};

/* Zero fill of the inner type: a fixed value of zeros, or a missing value
 * of a nested optional type. The largest inner size: complex128 (16 bytes)
 * plus one byte per nested layer. */
static const uint8_t optional_zero[16 + DTYPE_OPTIONAL_MAX_DEPTH];

/* Free both chains. */
static void optional_destroy(void *state) {
  struct optional_state *st = state;
  if (!st)
    return;
  chain_free(st->mask_chain);
  chain_free(st->data_chain);
  free(st);
}

/* The spec of the present values: 1-D, n of the inner type, zero fill
 * (empty for variable-length types). */
static struct codec_spec optional_data_spec(const struct optional_state *st,
                                            uint64_t n) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = n;
  s.nelem = n;
  s.dtype = st->inner;
  s.fill = optional_zero;
  s.fill_len = st->var ? 0 : st->inner.size;
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
  st->var = dtype_has_var_elements(&st->inner);
  if (!st->var &&
      (st->inner.size == 0 || st->inner.size > sizeof optional_zero)) {
    optional_destroy(st);
    return zerr_set(err, ENOTSUP, "zarrs.optional: unsupported data type '%s'",
                    decoded->dtype.name);
  }
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

/* Decode part [off, off+len) of in through chain c for spec s (*out: a new
 * abytes of exactly s->nelem elements, fixed ones of elsize bytes in
 * memory, or variable ones when elsize is 0). */
static int optional_part(const struct chain *c, const struct codec_spec *s,
                         struct bytesrc *in, uint64_t off, uint64_t len,
                         size_t elsize, const struct codec_env *env,
                         const char *what, struct abytes **out,
                         struct zerr *err) {
  struct bytesrc *part = NULL, *mem = NULL;
  struct abytes *a = NULL;
  int rc = bytesrc_sub(in, off, len, &part, err);
  if (rc == 0)
    rc = chain_decode(c, s, part, env, &a, err);
  if (rc == 0 && a->elsize != elsize)
    rc = zerr_set(err, EIO, "decoded %s elements, expected %s",
                  a->elsize ? "fixed-size" : "variable-length",
                  elsize ? "fixed-size" : "variable-length");
  if (rc == 0 && elsize)
    rc = bytesrc_load(a->fixed, env->max_decoded, &mem, err);
  if (rc == 0 && mem) {
    bytesrc_unref(a->fixed);
    a->fixed = mem;
  }
  if (rc < 0) {
    zerr_prefix(err, "zarrs.optional %s: ", what);
    abytes_free(a);
    a = NULL;
  }
  bytesrc_unref(part);
  *out = a;
  return rc;
}

/* Expand present fixed-size values: inner bytes then a presence byte. */
static int optional_expand_fixed(const struct optional_state *st,
                                 const uint8_t *mask, uint64_t n,
                                 const struct abytes *data,
                                 const struct codec_env *env, struct abytes *a,
                                 struct zerr *err) {
  size_t isize = st->inner.size;
  uint64_t outsize;
  if (zmul_u64(n, isize + 1, &outsize) < 0 || outsize > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "zarrs.optional: %llu elements exceed the decode limit",
                    (unsigned long long)n);
  uint8_t *p = calloc(1, outsize ? (size_t)outsize : 1);
  if (!p)
    return zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
  const uint8_t *src = data ? data->fixed->mem : NULL;
  uint8_t *dst = p;
  for (uint64_t i = 0; i < n; i++, dst += isize + 1) {
    if (!mask[i])
      continue; /* missing: all zero */
    memcpy(dst, src, isize);
    dst[isize] = 1;
    src += isize;
  }
  a->elsize = isize + 1;
  a->fixed = bytesrc_from_mem(p, (size_t)outsize);
  return a->fixed ? 0 : zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
}

/* Expand present variable-length values: missing ones empty, present ones
 * the byte 1 then their bytes. */
static int optional_expand_var(const uint8_t *mask, uint64_t n,
                               const struct abytes *data,
                               const struct codec_env *env, struct abytes *a,
                               struct zerr *err) {
  struct bytesrc *src = NULL;
  if (data) {
    struct bytesrc *loaded = NULL;
    ZTRY(chain_load_data(data, env, &loaded, err));
    int rc = bytesrc_load(loaded, env->max_decoded, &src, err);
    bytesrc_unref(loaded);
    if (rc < 0)
      return rc;
    if (data->offsets[data->n] > src->size) {
      bytesrc_unref(src);
      return zerr_set(err, EIO,
                      "zarrs.optional data: offsets end past the %llu "
                      "decoded bytes",
                      (unsigned long long)src->size);
    }
  }
  uint64_t nofs;
  int rc = 0;
  if (zadd_u64(n, 1, &nofs) < 0 || zmul_u64(nofs, 8, &nofs) < 0 ||
      nofs > env->max_decoded)
    rc = zerr_set(err, EFBIG,
                  "zarrs.optional: %llu elements exceed the decode limit",
                  (unsigned long long)n);
  uint64_t *off = rc == 0 ? malloc((size_t)nofs) : NULL;
  if (rc == 0 && !off)
    rc = zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
  struct zbuf out;
  zbuf_init(&out, env->max_decoded);
  static const uint8_t one = 1;
  uint64_t k = 0; /* next present value */
  for (uint64_t i = 0; i < n && rc == 0; i++) {
    off[i] = out.len;
    if (!mask[i])
      continue;
    uint64_t a0 = data->offsets[k], a1 = data->offsets[k + 1];
    k++;
    rc = zbuf_append(&out, &one, 1, err);
    if (rc == 0)
      rc = zbuf_append(&out, src->mem + a0, (size_t)(a1 - a0), err);
  }
  bytesrc_unref(src);
  if (rc == 0) {
    off[n] = out.len;
    rc = codec_output_from_buf(&out, "zarrs.optional", &a->data, err);
  }
  zbuf_free(&out);
  if (rc < 0) {
    free(off);
    return rc;
  }
  a->elsize = 0;
  a->offsets = off;
  return 0;
}

/* Read the two lengths, decode the mask, then the present values, and
 * expand them to the chunk's elements. */
static int optional_decode(const void *state, const struct codec_spec *spec,
                           struct bytesrc *in, const struct codec_env *env,
                           struct abytes **out, struct zerr *err) {
  const struct optional_state *st = state;
  uint64_t n = spec->nelem, hdr[2], total;
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
  struct codec_spec ms = optional_mask_spec(spec);
  struct abytes *mask = NULL, *data = NULL;
  ZTRY(optional_part(st->mask_chain, &ms, in, 16, hdr[0], 1, env, "mask", &mask,
                     err));
  const uint8_t *m = mask->fixed->mem;
  uint64_t present = 0;
  for (uint64_t i = 0; i < n; i++)
    present += m[i] != 0;
  int rc = 0;
  if (present) {
    struct codec_spec ds = optional_data_spec(st, present);
    rc = optional_part(st->data_chain, &ds, in, 16 + hdr[0], hdr[1],
                       st->var ? 0 : st->inner.size, env, "data", &data, err);
  } else if (hdr[1]) {
    rc = zerr_set(err, EIO,
                  "zarrs.optional: no value is present but the data section "
                  "has %llu bytes",
                  (unsigned long long)hdr[1]);
  }
  struct abytes *a = rc == 0 ? abytes_alloc() : NULL;
  if (rc == 0 && !a)
    rc = zerr_set(err, ENOMEM, "zarrs.optional: out of memory");
  if (rc == 0) {
    a->n = n;
    rc = st->var ? optional_expand_var(m, n, data, env, a, err)
                 : optional_expand_fixed(st, m, n, data, env, a, err);
  }
  abytes_free(mask);
  abytes_free(data);
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
