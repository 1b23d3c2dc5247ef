/* delta.c - `numcodecs.delta` (array->array; V2 filter id `delta`): the
 * stored array holds the first element followed by differences between
 * neighbours of the flattened chunk. Decoding is a running sum in the
 * array's own type (integers wrap, as numpy's do). `dtype` may be a V3 name
 * ("int32") or a numpy string ("<i4"); `astype`, when given, must equal it:
 * changing the stored type is not supported. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

/* Kind of a V3 name or numpy dtype string (DT_UNSUPPORTED if neither;
 * *oom set when that is only for want of memory). */
static enum dtype_kind delta_kind(const char *s, int *oom) {
  struct dtype dt;
  json_t *j = json_string(s);
  enum dtype_kind k = DT_UNSUPPORTED;
  if (!j)
    *oom = 1;
  if (j && dtype_parse_v3(j, &dt, NULL) == 0)
    k = dt.kind;
  json_decref(j);
  if (k != DT_UNSUPPORTED || !s[0] || !strchr("<>|=", s[0]))
    return k;
  static const struct {
    const char *np;
    enum dtype_kind kind;
  } np[] = {{"i1", DT_INT8},   {"i2", DT_INT16},  {"i4", DT_INT32},
            {"i8", DT_INT64},  {"u1", DT_UINT8},  {"u2", DT_UINT16},
            {"u4", DT_UINT32}, {"u8", DT_UINT64}, {"f4", DT_FLOAT32},
            {"f8", DT_FLOAT64}};
  for (size_t i = 0; i < sizeof np / sizeof *np; i++)
    if (!strcmp(s + 1, np[i].np))
      return np[i].kind;
  return DT_UNSUPPORTED;
}

/* Check dtype/astype against the array's type. */
static int delta_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  static const char *const allowed[] = {"dtype", "astype", NULL};
  ZTRY(codec_cfg_only(config, "numcodecs.delta", allowed, err));
  const char *dts, *ast;
  ZTRY(codec_cfg_str(config, "dtype", 1, NULL, &dts, err));
  ZTRY(codec_cfg_str(config, "astype", 0, dts, &ast, err));
  int oom = 0;
  enum dtype_kind k = delta_kind(dts, &oom), ka = delta_kind(ast, &oom);
  enum dtype_kind want = decoded->dtype.kind;
  if (oom)
    return zerr_set(err, ENOMEM, "numcodecs.delta: out of memory");
  if (k == DT_UNSUPPORTED || k != want || ka != k || want == DT_BOOL ||
      want == DT_FLOAT16 || decoded->dtype.size == 0)
    return zerr_set(err, ENOTSUP,
                    "numcodecs.delta: dtype '%s' / astype '%s' on a %s array "
                    "is not supported",
                    dts, ast, decoded->dtype.name);
  *state = NULL;
  return 0;
}

/* No state. */
static void delta_destroy(void *state) { (void)state; }

/* Same shape. */
static int delta_spec(const void *state, const struct codec_spec *decoded,
                      struct codec_spec *encoded, struct zerr *err) {
  (void)state, (void)err;
  *encoded = *decoded;
  return 0;
}

#define DELTA_SUM(T)                                                           \
  do {                                                                         \
    T acc = 0, v;                                                              \
    for (uint64_t i = 0; i < n; i++) {                                         \
      memcpy(&v, p + i * sizeof(T), sizeof(T));                                \
      acc = i ? (T)(acc + v) : v;                                              \
      memcpy(p + i * sizeof(T), &acc, sizeof(T));                              \
    }                                                                          \
  } while (0)

/* Running sum into a new buffer. */
static int delta_decode(const void *state, const struct codec_spec *decoded,
                        struct abytes *in, const struct codec_env *env,
                        struct abytes **out, struct zerr *err) {
  (void)state;
  struct bytesrc *src;
  ZTRY(codec_load_input(in->fixed, env, "numcodecs.delta", &src, err));
  size_t len = (size_t)src->size;
  uint8_t *p = malloc(len ? len : 1);
  struct abytes *a = abytes_alloc();
  if (!p || !a) {
    free(p);
    abytes_free(a);
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "numcodecs.delta: out of memory");
  }
  memcpy(p, src->mem, len);
  bytesrc_unref(src);
  uint64_t n = in->n;
  switch (decoded->dtype.kind) {
  case DT_INT8:
    DELTA_SUM(uint8_t);
    break;
  case DT_UINT8:
    DELTA_SUM(uint8_t);
    break;
  case DT_INT16:
    DELTA_SUM(uint16_t);
    break;
  case DT_UINT16:
    DELTA_SUM(uint16_t);
    break;
  case DT_INT32:
    DELTA_SUM(uint32_t);
    break;
  case DT_UINT32:
    DELTA_SUM(uint32_t);
    break;
  case DT_INT64:
    DELTA_SUM(uint64_t);
    break;
  case DT_UINT64:
    DELTA_SUM(uint64_t);
    break;
  case DT_FLOAT32:
    DELTA_SUM(float);
    break;
  case DT_FLOAT64:
    DELTA_SUM(double);
    break;
  default:
    break;
  }
  a->n = n;
  a->elsize = in->elsize;
  a->fixed = bytesrc_from_mem(p, len);
  if (!a->fixed) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "numcodecs.delta: out of memory");
  }
  *out = a;
  return 0;
}

const struct codec_impl codec_delta = {
    .name = "numcodecs.delta",
    .kind = CODEC_A2A,
    .create = delta_create,
    .destroy = delta_destroy,
    .encoded_spec = delta_spec,
    .decode_a2a = delta_decode,
};
