/* reshape.c - array->array codecs that change the shape but not the order
 * of elements: `reshape` (registered extension; {"shape": [...]}, each entry
 * a size, -1 for the one inferred size, or a list of decoded axes whose
 * sizes multiply) and `zarrs.squeeze` (drops axes of size 1). Decoding hands
 * the elements through unchanged; only the shape the next codec sees
 * differs. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"

struct reshape_state {
  json_t *shape; /* owned: the configured shape; NULL for squeeze */
};

/* Free the state. */
static void reshape_destroy(void *state) {
  struct reshape_state *st = state;
  if (st)
    json_decref(st->shape);
  free(st);
}

/* reshape: {"shape": [...]} with at most ZMETA_MAX_DIMS entries. */
static int reshape_create(json_t *config, const struct codec_spec *decoded,
                          void **state, struct zerr *err) {
  static const char *const allowed[] = {"shape", NULL};
  (void)decoded;
  ZTRY(codec_cfg_only(config, "reshape", allowed, err));
  json_t *shape = config ? json_object_get(config, "shape") : NULL;
  if (!json_is_array(shape) || json_array_size(shape) > ZMETA_MAX_DIMS)
    return zerr_set(err, EIO, "reshape: shape must be a list of sizes");
  struct reshape_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "reshape: out of memory");
  st->shape = json_incref(shape);
  *state = st;
  return 0;
}

/* squeeze: no configuration. */
static int squeeze_create(json_t *config, const struct codec_spec *decoded,
                          void **state, struct zerr *err) {
  static const char *const allowed[] = {NULL};
  (void)decoded;
  ZTRY(codec_cfg_only(config, "zarrs.squeeze", allowed, err));
  struct reshape_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "zarrs.squeeze: out of memory");
  *state = st;
  return 0;
}

/* The shape after reshape; the element count must not change. */
static int reshape_spec(const void *state, const struct codec_spec *decoded,
                        struct codec_spec *encoded, struct zerr *err) {
  const struct reshape_state *st = state;
  *encoded = *decoded;
  size_t n = json_array_size(st->shape);
  int infer = -1;
  uint64_t known = 1;
  encoded->ndim = (int)n;
  for (size_t i = 0; i < n; i++) {
    json_t *v = json_array_get(st->shape, i);
    uint64_t size = 1;
    if (json_is_integer(v) && json_integer_value(v) == -1 && infer < 0) {
      infer = (int)i;
      continue;
    } else if (json_is_integer(v) && json_integer_value(v) > 0) {
      size = (uint64_t)json_integer_value(v);
    } else if (json_is_array(v)) {
      for (size_t k = 0; k < json_array_size(v); k++) {
        json_t *ax = json_array_get(v, k);
        json_int_t a = json_is_integer(ax) ? json_integer_value(ax) : -1;
        if (a < 0 || a >= decoded->ndim)
          return zerr_set(err, EIO, "reshape: axis out of range");
        size *= decoded->shape[a];
      }
    } else {
      return zerr_set(err, EIO, "reshape: bad shape entry %zu", i);
    }
    encoded->shape[i] = size;
    if (zmul_u64(known, size, &known) < 0)
      return zerr_set(err, EIO, "reshape: shape overflows");
  }
  if (infer >= 0) {
    if (known == 0 || decoded->nelem % known)
      return zerr_set(err, EIO, "reshape: cannot infer the -1 size");
    encoded->shape[infer] = decoded->nelem / known;
    known = decoded->nelem;
  }
  if (known != decoded->nelem)
    return zerr_set(err, EIO,
                    "reshape: %llu elements cannot take shape of "
                    "%llu",
                    (unsigned long long)decoded->nelem,
                    (unsigned long long)known);
  return 0;
}

/* The shape after dropping axes of size 1. */
static int squeeze_spec(const void *state, const struct codec_spec *decoded,
                        struct codec_spec *encoded, struct zerr *err) {
  (void)state, (void)err;
  *encoded = *decoded;
  int nd = 0;
  for (int d = 0; d < decoded->ndim; d++)
    if (decoded->shape[d] != 1)
      encoded->shape[nd++] = decoded->shape[d];
  encoded->ndim = nd;
  return 0;
}

/* Same elements, same order: a copy holding its own references. */
static int passthrough_decode(const void *state,
                              const struct codec_spec *decoded,
                              struct abytes *in, const struct codec_env *env,
                              struct abytes **out, struct zerr *err) {
  (void)state, (void)decoded, (void)env;
  struct abytes *a = abytes_alloc();
  if (!a)
    return zerr_set(err, ENOMEM, "out of memory");
  *a = *in;
  a->fixed = bytesrc_ref(in->fixed);
  a->data = bytesrc_ref(in->data);
  a->data_enc = bytesrc_ref(in->data_enc);
  a->offsets = NULL;
  if (in->offsets) {
    size_t bytes = (size_t)(in->n + 1) * sizeof *a->offsets;
    a->offsets = malloc(bytes);
    if (!a->offsets) {
      abytes_free(a);
      return zerr_set(err, ENOMEM, "out of memory");
    }
    memcpy(a->offsets, in->offsets, bytes);
  }
  *out = a;
  return 0;
}

const struct codec_impl codec_reshape = {
    .name = "reshape",
    .kind = CODEC_A2A,
    .create = reshape_create,
    .destroy = reshape_destroy,
    .encoded_spec = reshape_spec,
    .decode_a2a = passthrough_decode,
};

const struct codec_impl codec_squeeze = {
    .name = "zarrs.squeeze",
    .kind = CODEC_A2A,
    .create = squeeze_create,
    .destroy = reshape_destroy,
    .encoded_spec = squeeze_spec,
    .decode_a2a = passthrough_decode,
};
