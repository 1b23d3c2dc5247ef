/* transpose.c - the `transpose` array->array codec: the encoded array is the
 * decoded one with its axes permuted (encoded axis i = decoded axis
 * order[i]). Legacy configurations "C" (identity) and "F" (reversed axes,
 * how V2 `order: "F"` maps to V3) are accepted.
 *
 * Decoding permutes whole chunks in memory: fixed-size elements by copying,
 * variable-length ones by rebuilding offsets and data in decoded order. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"

struct transpose_state {
  int ndim;
  int order[ZMETA_MAX_DIMS];
  int identity;
};

/* Free the state. */
static void transpose_destroy(void *state) { free(state); }

/* Parse {"order": [permutation] | "C" | "F"} for arrays of decoded->ndim. */
static int transpose_create(json_t *config, const struct codec_spec *decoded,
                            void **state, struct zerr *err) {
  static const char *const allowed[] = {"order", NULL};
  ZTRY(codec_cfg_only(config, "transpose", allowed, err));
  json_t *o = config ? json_object_get(config, "order") : NULL;
  if (!o)
    return zerr_set(err, EIO, "transpose: missing order");
  struct transpose_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "transpose: out of memory");
  int nd = decoded->ndim;
  st->ndim = nd;
  if (json_is_string(o)) {
    const char *s = json_string_value(o);
    if (strcmp(s, "C") && strcmp(s, "F")) {
      free(st);
      return zerr_set(err, EIO, "transpose: order \"%s\" is not C or F", s);
    }
    for (int i = 0; i < nd; i++)
      st->order[i] = s[0] == 'C' ? i : nd - 1 - i;
  } else if (json_is_array(o) && (int)json_array_size(o) == nd) {
    int seen[ZMETA_MAX_DIMS] = {0};
    for (int i = 0; i < nd; i++) {
      json_t *v = json_array_get(o, (size_t)i);
      json_int_t a = json_is_integer(v) ? json_integer_value(v) : -1;
      if (a < 0 || a >= nd || seen[a]) {
        free(st);
        return zerr_set(err, EIO,
                        "transpose: order is not a permutation of %d axes", nd);
      }
      seen[a] = 1;
      st->order[i] = (int)a;
    }
  } else {
    free(st);
    return zerr_set(err, EIO, "transpose: order must list %d axes", nd);
  }
  st->identity = 1;
  for (int i = 0; i < nd; i++)
    st->identity &= st->order[i] == i;
  *state = st;
  return 0;
}

/* The encoded shape: axes permuted. */
static int transpose_encoded_spec(const void *state,
                                  const struct codec_spec *decoded,
                                  struct codec_spec *encoded,
                                  struct zerr *err) {
  const struct transpose_state *st = state;
  if (decoded->ndim != st->ndim)
    return zerr_set(err, EIO, "transpose: chunk has %d axes, order has %d",
                    decoded->ndim, st->ndim);
  *encoded = *decoded;
  for (int i = 0; i < st->ndim; i++)
    encoded->shape[i] = decoded->shape[st->order[i]];
  return 0;
}

/* For each decoded linear index, the encoded linear index (malloc'd). */
static uint64_t *transpose_map(const struct transpose_state *st,
                               const struct codec_spec *decoded) {
  int nd = st->ndim;
  uint64_t n = decoded->nelem;
  uint64_t *map = malloc((size_t)(n ? n : 1) * sizeof *map);
  if (!map)
    return NULL;
  /* Stride in the encoded array of each decoded axis. */
  uint64_t estride[ZMETA_MAX_DIMS], s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    estride[st->order[i]] = s;
    s *= decoded->shape[st->order[i]];
  }
  uint64_t idx[ZMETA_MAX_DIMS] = {0}, e = 0;
  for (uint64_t k = 0; k < n; k++) {
    map[k] = e;
    for (int d = nd - 1; d >= 0; d--) {
      if (++idx[d] < decoded->shape[d]) {
        e += estride[d];
        break;
      }
      e -= (idx[d] - 1) * estride[d];
      idx[d] = 0;
    }
  }
  return map;
}

/* Permute `in` (encoded order) into decoded C order. */
static int transpose_decode(const void *state, const struct codec_spec *decoded,
                            struct abytes *in, const struct codec_env *env,
                            struct abytes **out, struct zerr *err) {
  const struct transpose_state *st = state;
  uint64_t n = decoded->nelem;
  if (in->n != n)
    return zerr_set(err, EIO, "transpose: %llu elements, expected %llu",
                    (unsigned long long)in->n, (unsigned long long)n);
  uint64_t bytes;
  if (zmul_u64(n, sizeof(uint64_t), &bytes) < 0 || bytes > env->max_decoded)
    return zerr_set(err, EFBIG, "transpose: chunk too large");
  uint64_t *map = transpose_map(st, decoded);
  struct abytes *a = abytes_alloc();
  struct bytesrc *src = NULL;
  uint8_t *p = NULL;
  int rc = 0;
  if (!map || !a) {
    rc = zerr_set(err, ENOMEM, "transpose: out of memory");
    goto fail;
  }
  a->n = n;
  a->elsize = in->elsize;
  if (in->elsize) {
    rc = codec_load_input(in->fixed, env, "transpose", &src, err);
    if (rc < 0)
      goto fail;
    size_t es = in->elsize;
    p = malloc((size_t)src->size ? (size_t)src->size : 1);
    if (!p) {
      rc = zerr_set(err, ENOMEM, "transpose: out of memory");
      goto fail;
    }
    for (uint64_t k = 0; k < n; k++)
      memcpy(p + k * es, src->mem + map[k] * es, es);
    a->fixed = bytesrc_from_mem(p, (size_t)src->size);
    p = NULL;
    if (!a->fixed) {
      rc = zerr_set(err, ENOMEM, "transpose: out of memory");
      goto fail;
    }
  } else {
    struct bytesrc *data;
    rc = chain_load_data(in, env, &data, err);
    if (rc < 0)
      goto fail;
    rc = codec_load_input(data, env, "transpose", &src, err);
    bytesrc_unref(data);
    if (rc < 0)
      goto fail;
    a->offsets = malloc((size_t)(n + 1) * sizeof *a->offsets);
    uint64_t total = in->offsets[n] - in->offsets[0];
    p = malloc((size_t)total ? (size_t)total : 1);
    if (!a->offsets || !p) {
      rc = zerr_set(err, ENOMEM, "transpose: out of memory");
      goto fail;
    }
    uint64_t pos = 0;
    for (uint64_t k = 0; k < n; k++) {
      uint64_t j = map[k], len = in->offsets[j + 1] - in->offsets[j];
      if (pos + len > total) {
        rc = zerr_set(err, EIO, "transpose: element offsets overlap");
        goto fail;
      }
      a->offsets[k] = pos;
      memcpy(p + pos, src->mem + in->offsets[j], (size_t)len);
      pos += len;
    }
    a->offsets[n] = pos;
    a->data = bytesrc_from_mem(p, (size_t)pos);
    p = NULL;
    if (!a->data) {
      rc = zerr_set(err, ENOMEM, "transpose: out of memory");
      goto fail;
    }
  }
  bytesrc_unref(src);
  free(map);
  *out = a;
  return 0;
fail:
  free(p);
  bytesrc_unref(src);
  free(map);
  abytes_free(a);
  return rc;
}

const struct codec_impl codec_transpose = {
    .name = "transpose",
    .kind = CODEC_A2A,
    .create = transpose_create,
    .destroy = transpose_destroy,
    .encoded_spec = transpose_encoded_spec,
    .decode_a2a = transpose_decode,
};
