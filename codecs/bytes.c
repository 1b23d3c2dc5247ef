/* bytes.c - the `bytes` array->bytes codec (legacy name `endian`): fixed-size
 * elements in C order, little or big endian.
 *
 * When the stored order is the host order the decoded array is the input
 * itself: decode returns a new reference to the input source and reads
 * nothing, so a view that needs ten elements reads ten elements. Only a
 * byte swap forces the chunk into memory. */
#include "codec.h"

#include <stdlib.h>
#include <string.h>

#include "../src/buf.h"

struct bytes_state {
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
  if (dtype_is_variable(dt))
    return zerr_set(err, ENOTSUP,
                    "bytes codec on variable-length type '%s' is not "
                    "supported yet",
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

/* Check the size, then hand back the input (no swap) or a swapped copy. */
static int bytes_decode(const void *state, const struct codec_spec *spec,
                        struct bytesrc *in, const struct codec_env *env,
                        struct abytes **out, struct zerr *err) {
  const struct bytes_state *st = state;
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

static const char *const bytes_aliases[] = {"endian", NULL};

const struct codec_impl codec_bytes = {
    .name = "bytes",
    .aliases = bytes_aliases,
    .kind = CODEC_A2B,
    .create = bytes_create,
    .destroy = bytes_destroy,
    .decode_array = bytes_decode,
};
