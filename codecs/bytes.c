/* bytes.c - the `bytes` array->bytes codec (legacy name `endian`): fixed-size
 * elements in C order, little or big endian.
 *
 * When the stored order is the host order the decoded array is the input
 * itself: decode returns a new reference to the input source and reads
 * nothing, so a view that needs ten elements reads ten elements. Only a
 * byte swap forces the chunk into memory.
 *
 * Experimental: on a variable-length type (`string`, `bytes`/`binary`) the
 * chunk is read in the ZEP0007 draft layout:
 *   n+1 int32 LE offsets | zero padding to a multiple of 64 bytes | data
 * Element i is data[off[i], off[i+1]). Like zarrs.vlen this is index-first:
 * decoding reads only the offsets (and padding) and returns the data as a
 * window, so a view reads just the element bytes it renders. Bytes after
 * off[n] are ignored. `endian`, if given, is not used for this layout.
 *
 * `zarrs.optional` types are refused: their values need the zarrs.optional
 * codec (a presence mask), which `bytes` cannot express. */
#include "abytes.h"
#include "codec.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"

struct bytes_state {
  int draft; /* variable-length type: the ZEP0007 draft layout */
  size_t elsize;
  int swap;    /* stored order differs from host order */
  size_t unit; /* bytes reversed together (see dtype_swap_unit) */
};

/* Parse {"endian": "little"|"big"}; endian may be omitted for 1-byte
 * types only, as in the spec and zarrs. */
static int bytes_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  static const char *const allowed[] = {"endian", NULL};
  ZTRY(codec_cfg_only(config, "bytes", allowed, err));
  const char *endian;
  int rc = codec_cfg_str(config, "endian", 0, NULL, &endian, err);
  if (rc < 0) {
    zerr_prefix(err, "bytes: ");
    return rc;
  }
  int big;
  if (!endian)
    big = -1;
  else if (!strcmp(endian, "little"))
    big = 0;
  else if (!strcmp(endian, "big"))
    big = 1;
  else
    return zerr_set(err, EIO,
                    "bytes: 'endian' must be \"little\" or \"big\", not \"%s\"",
                    endian);
  const struct dtype *dt = &decoded->dtype;
  if (dtype_is_variable(dt)) {
    struct bytes_state *st = calloc(1, sizeof *st);
    if (!st)
      return zerr_set(err, ENOMEM, "bytes: out of memory");
    st->draft = 1;
    *state = st;
    return 0;
  }
  if (dt->kind == DT_OPTIONAL)
    return zerr_set(err, ENOTSUP,
                    "bytes: data type '%s' is unsupported (optional types "
                    "need the zarrs.optional codec)",
                    dt->name);
  if (dt->size == 0)
    return zerr_set(err, ENOTSUP, "bytes: data type '%s' is not supported",
                    dt->name);
  size_t unit = dtype_swap_unit(dt);
  if (unit > 1 && big < 0)
    return zerr_set(err, EIO,
                    "bytes: configuration 'endian' is required for the "
                    "multi-byte type '%s'",
                    dt->name);
  struct bytes_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "bytes: out of memory");
  st->elsize = dt->size;
  st->unit = unit;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  st->swap = unit > 1 && big == 0;
#else
  st->swap = unit > 1 && big == 1;
#endif
  *state = st;
  return 0;
}

/* Free the parsed configuration. */
static void bytes_destroy(void *state) { free(state); }

/* Reverse each element in place. */
static void bytes_swap(uint8_t *p, size_t n, size_t elsize) {
  for (size_t i = 0; i < n; i++, p += elsize) {
    switch (elsize) {
    case 2: {
      uint16_t v;
      memcpy(&v, p, 2);
      v = __builtin_bswap16(v);
      memcpy(p, &v, 2);
      break;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      v = __builtin_bswap32(v);
      memcpy(p, &v, 4);
      break;
    }
    case 8: {
      uint64_t v;
      memcpy(&v, p, 8);
      v = __builtin_bswap64(v);
      memcpy(p, &v, 8);
      break;
    }
    default:
      for (size_t a = 0, b = elsize - 1; a < b; a++, b--) {
        uint8_t t = p[a];
        p[a] = p[b];
        p[b] = t;
      }
    }
  }
}

#define BYTES_DRAFT_ALIGN 64

/* The ZEP0007 draft layout: read and check the offsets (and the padding,
 * which must be zero: non-zero padding means the chunk holds more offsets
 * than the array's chunk shape says), then window the data. */
static int bytes_decode_draft(const struct codec_spec *spec, struct bytesrc *in,
                              const struct codec_env *env, struct abytes **out,
                              struct zerr *err) {
  uint64_t n = spec->nelem, n1, hdr, padded, obytes;
  if (zadd_u64(n, 1, &n1) < 0 || zmul_u64(n1, 4, &hdr) < 0 ||
      zadd_u64(hdr, BYTES_DRAFT_ALIGN - 1, &padded) < 0 ||
      zmul_u64(n1, sizeof(uint64_t), &obytes) < 0)
    return zerr_set(err, EFBIG, "bytes: %llu elements overflow the offsets",
                    (unsigned long long)n);
  padded -= padded % BYTES_DRAFT_ALIGN;
  if (in->size < padded)
    return zerr_set(err, EIO,
                    "bytes: chunk of %llu bytes is too short for the %llu "
                    "offsets of %llu elements (draft string layout)",
                    (unsigned long long)in->size, (unsigned long long)n1,
                    (unsigned long long)n);
  if (padded > env->max_decoded || obytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "bytes: %llu offsets exceed the decode limit of %zu bytes",
                    (unsigned long long)n1, env->max_decoded);
  uint8_t *raw = malloc((size_t)padded);
  uint64_t *off = malloc((size_t)obytes);
  struct abytes *a = abytes_alloc();
  int rc = raw && off && a ? 0 : zerr_set(err, ENOMEM, "bytes: out of memory");
  if (rc == 0) {
    rc = bytesrc_read_range(in, 0, (size_t)padded, raw, err);
    if (rc < 0)
      zerr_prefix(err, "bytes: ");
  }
  for (uint64_t i = 0; i < n1 && rc == 0; i++) {
    const uint8_t *q = raw + i * 4;
    int32_t v = (int32_t)((uint32_t)q[0] | (uint32_t)q[1] << 8 |
                          (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24);
    if (v < 0)
      rc = zerr_set(err, EIO, "bytes: offset %llu is negative (%d)",
                    (unsigned long long)i, v);
    off[i] = (uint64_t)v;
  }
  for (uint64_t i = hdr; i < padded && rc == 0; i++)
    if (raw[i])
      rc = zerr_set(err, EIO,
                    "bytes: non-zero padding after the %llu offsets (the "
                    "chunk holds more elements than its shape)",
                    (unsigned long long)n1);
  uint64_t dlen = in->size - padded;
  if (rc == 0) {
    rc = abytes_check_offsets(off, n, dlen, err);
    if (rc < 0)
      zerr_prefix(err, "bytes: ");
  }
  if (rc == 0)
    rc = bytesrc_sub(in, padded, dlen, &a->data, err);
  free(raw);
  if (rc < 0) {
    free(off);
    abytes_free(a);
    return rc;
  }
  a->n = n;
  a->elsize = 0;
  a->offsets = off;
  a->data_len = off[n];
  *out = a;
  return 0;
}

/* Check the size, then hand back the input (no swap) or a swapped copy. */
static int bytes_decode(const void *state, const struct codec_spec *spec,
                        struct bytesrc *in, const struct codec_env *env,
                        struct abytes **out, struct zerr *err) {
  const struct bytes_state *st = state;
  if (st->draft)
    return bytes_decode_draft(spec, in, env, out, err);
  uint64_t want;
  if (zmul_u64(spec->nelem, st->elsize, &want) < 0)
    return zerr_set(err, EFBIG, "bytes: %llu elements of %zu bytes overflow",
                    (unsigned long long)spec->nelem, st->elsize);
  if (in->size != want)
    return zerr_set(err, EIO,
                    "bytes: chunk has %llu bytes, expected %llu (%llu "
                    "elements of %zu bytes)",
                    (unsigned long long)in->size, (unsigned long long)want,
                    (unsigned long long)spec->nelem, st->elsize);
  struct abytes *a = abytes_alloc();
  if (!a)
    return zerr_set(err, ENOMEM, "bytes: out of memory");
  a->n = spec->nelem;
  a->elsize = st->elsize;
  if (!st->swap) {
    a->fixed = bytesrc_ref(in);
    *out = a;
    return 0;
  }
  /* The swap needs every byte: read straight into the buffer we return. */
  if (want > env->max_decoded) {
    abytes_free(a);
    return zerr_set(err, EFBIG,
                    "bytes: chunk of %llu bytes exceeds the decode limit of "
                    "%zu",
                    (unsigned long long)want, env->max_decoded);
  }
  uint8_t *p = malloc(want ? (size_t)want : 1);
  if (!p) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "bytes: out of memory for %llu bytes",
                    (unsigned long long)want);
  }
  int rc = bytesrc_read_range(in, 0, (size_t)want, p, err);
  if (rc < 0) {
    free(p);
    abytes_free(a);
    zerr_prefix(err, "bytes: ");
    return rc;
  }
  bytes_swap(p, (size_t)(spec->nelem * (st->elsize / st->unit)), st->unit);
  a->fixed = bytesrc_from_mem(p, (size_t)want);
  if (!a->fixed) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "bytes: out of memory");
  }
  *out = a;
  return 0;
}

/* ---- partial decoding (see codec.h) ---- */

/* Fixed-size elements open partially (element ranges are byte ranges),
 * plain unless swapped; the draft string layout does not. */
static unsigned bytes_partial_caps(const void *state) {
  const struct bytes_state *st = state;
  if (st->draft)
    return 0;
  return CODEC_PARTIAL_ELEMENTS | (st->swap ? 0 : CODEC_PARTIAL_PLAIN);
}

/* Check the chunk's size; nothing is read. */
static int bytes_partial_open(const void *state, const struct codec_spec *spec,
                              struct bytesrc *in, struct codec_partial *p,
                              struct zerr *err) {
  const struct bytes_state *st = state;
  if (st->draft)
    return zerr_set(err, ENOTSUP,
                    "bytes: the draft string layout cannot be "
                    "read partially");
  uint64_t want;
  if (zmul_u64(spec->nelem, st->elsize, &want) < 0 || in->size != want)
    return zerr_set(err, EIO,
                    "bytes: chunk has %llu bytes, expected %llu elements of "
                    "%zu bytes",
                    (unsigned long long)in->size,
                    (unsigned long long)spec->nelem, st->elsize);
  p->n = spec->nelem;
  p->elsize = st->elsize;
  p->data_len = want;
  p->width = st->elsize;
  p->swap = st->swap;
  p->src = bytesrc_ref(in);
  if (!st->swap)
    p->data = bytesrc_ref(in);
  return 0;
}

/* Read elements where they lie and put them in host order. */
static int bytes_partial_elements(const struct codec_partial *p, uint64_t first,
                                  uint64_t count, void *out, struct zerr *err) {
  const struct bytes_state *st = p->state;
  if (first > p->n || count > p->n - first)
    return zerr_set(err, EIO, "bytes: elements past the chunk");
  if (!count)
    return 0;
  int rc = bytesrc_read_range(p->src, p->base + first * p->width,
                              (size_t)(count * p->width), out, err);
  if (rc < 0)
    return zerr_prefix(err, "bytes: ");
  if (p->swap)
    bytes_swap(out, (size_t)(count * (st->elsize / st->unit)), st->unit);
  return 0;
}

static const char *const bytes_aliases[] = {"endian", NULL};

const struct codec_impl codec_bytes = {
    .name = "bytes",
    .aliases = bytes_aliases,
    .kind = CODEC_A2B,
    .create = bytes_create,
    .destroy = bytes_destroy,
    .decode_array = bytes_decode,
    .partial_caps = bytes_partial_caps,
    .partial_open = bytes_partial_open,
    .partial_elements = bytes_partial_elements,
};
