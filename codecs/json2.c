/* json2.c - the numcodecs JSON object codecs, read as array->bytes codecs
 * for object arrays shown as strings: `json2` (V2 filter id `json2`, V3
 * name `json2` or `numcodecs.json2`) and its predecessor `json` (V2
 * filter id `json`, numcodecs' LegacyJSON, which zarr-python 2 wrote
 * before numcodecs 0.6; V3 alias `numcodecs.json`).
 *
 * Both write a chunk as one JSON document holding the chunk's elements as
 * nested lists (numpy's tolist(): one nesting level per dimension):
 *   json2: [ item, item, ..., "|O", [shape...] ]
 *   json:  [ item, item, ..., "|O" ]
 * The dtype string must be "|O" (zarr-python refuses an object codec that
 * gives anything but objects). json has no shape: like numpy, the shape
 * is read from the nesting, as deep as the chunk has dimensions, and every
 * list must have the length the first one at its level has; its element
 * count must be the chunk's (zarr-python then reshapes to the chunk shape,
 * so only the count is compared, as for json2's shape). An item that is
 * itself a list below that depth is one element (numpy would nest further
 * and zarr-python fail). Python's encoder may write NaN, Infinity
 * and -Infinity, so values are checked and located with the JSON lexer
 * and its relaxations for Python (no tree is built), then copied.
 *
 * Decoding gives the same variable-length form vlen-utf8 gives (n+1
 * offsets and the concatenated bytes, in memory): a string item is its
 * UTF-8 text (escapes resolved; a lone surrogate becomes U+FFFD), any
 * other item is its JSON text with insignificant whitespace removed
 * (`1`, `null`, `[1,2]`, `{"a":1}`). */
#include "abytes.h"
#include "codec.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../src/util/buf.h"
#include "../src/util/zmath.h"
#include "../src/json/jlex.h"

/* A value's byte range in the document and whether it is a string. */
struct json2_span {
  size_t a, b;
  int is_string;
};

/* The lexer over p[a, b): Python's json module writes NaN, Infinity and
 * lone surrogates. */
static void json2_lex(struct jlex *l, const uint8_t *p, size_t a, size_t b,
                      struct zerr *err) {
  jlex_init(l, (const char *)p + a, b - a, JLEX_NONFINITE | JLEX_LONE_SURROGATE,
            err);
}

/* Where the lexer is, as an offset into p. */
static size_t json2_at(const struct jlex *l, const uint8_t *p) {
  return (size_t)((const uint8_t *)l->p - p);
}

/* The two layouts (see the file comment). */
enum json2_layout { JSON2_WITH_SHAPE, JSON2_LEGACY };

/* The items of the list spanning p[a, b) (which must start with '['),
 * appended to `items` (a capped buffer of struct json2_span). */
static int json2_list(const uint8_t *p, size_t a, size_t b, struct zbuf *items,
                      struct zerr *err) {
  if (a >= b || p[a] != '[')
    return zerr_set(err, EIO, "a list was expected at byte %zu", a);
  struct jlex l;
  json2_lex(&l, p, a, b, err);
  int more = jlex_open(&l, '[');
  while (more > 0) {
    struct json2_span s = {0, 0, jlex_peek(&l) == '"'};
    s.a = json2_at(&l, p);
    ZTRY(jlex_skip(&l));
    s.b = json2_at(&l, p);
    ZTRY(zbuf_append(items, &s, sizeof s, err));
    more = jlex_next(&l, '[');
  }
  return more < 0 ? more : 0;
}

/* Unescape the validated string p[a, b) (quotes included) into o; never
 * longer than the escaped text. A lone surrogate becomes U+FFFD. */
static void json2_unescape(const uint8_t *p, size_t a, size_t b, uint8_t *o,
                           size_t *len) {
  struct jlex_str s = {(const char *)p + a + 1, b - a - 2, 0};
  s.escaped = memchr(s.body, '\\', s.len) != NULL;
  *len += jlex_unescape(&s, (char *)o + *len);
}

/* Copy the validated value p[a, b) without whitespace outside strings. */
static void json2_compact(const uint8_t *p, size_t a, size_t b, uint8_t *o,
                          size_t *len) {
  int in_str = 0;
  for (size_t k = a; k < b; k++) {
    uint8_t c = p[k];
    if (in_str) {
      o[(*len)++] = c;
      if (c == '\\')
        o[(*len)++] = p[++k];
      else if (c == '"')
        in_str = 0;
    } else if (c == '"') {
      in_str = 1;
      o[(*len)++] = c;
    } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
      o[(*len)++] = c;
    }
  }
}

/* Parse the shape item: a list of non-negative integers; *count is their
 * product. */
static int json2_shape(const uint8_t *p, const struct json2_span *s,
                       uint64_t *shape, int *ndim, uint64_t *count,
                       struct zerr *err) {
  *ndim = 0;
  *count = 1;
  if (p[s->a] != '[')
    return zerr_set(err, EIO, "the last item (shape) is not a list");
  struct jlex l;
  json2_lex(&l, p, s->a, s->b, err);
  int more = jlex_open(&l, '[');
  while (more > 0) {
    struct jlex_num v;
    char c = jlex_peek(&l);
    if (c < '0' || c > '9' || jlex_number(&l, &v) < 0 || !v.fits_u64 ||
        *ndim == ZMETA_MAX_DIMS)
      return zerr_set(err, EIO,
                      "the shape must be a list of at most %d "
                      "non-negative integers",
                      ZMETA_MAX_DIMS);
    if (zmul_u64(*count, v.mag, count) < 0)
      return zerr_set(err, EIO, "shape overflows");
    shape[(*ndim)++] = v.mag;
    more = jlex_next(&l, '[');
  }
  return more < 0 ? more : 0;
}

/* Flatten nested lists of `items` (the top level) along shape[1..ndim)
 * into `leaves`. */
static int json2_flatten(const uint8_t *p, const struct json2_span *items,
                         size_t nitems, const uint64_t *shape, int ndim,
                         size_t max, struct zbuf *leaves, struct zerr *err) {
  if (ndim <= 1)
    return zbuf_append(leaves, items, nitems * sizeof *items, err);
  for (size_t i = 0; i < nitems; i++) {
    struct zbuf sub;
    zbuf_init(&sub, max);
    int rc = json2_list(p, items[i].a, items[i].b, &sub, err);
    size_t m = sub.len / sizeof(struct json2_span);
    if (rc == 0 && m != shape[1])
      rc =
          zerr_set(err, EIO, "a nested list has %zu items, the shape says %llu",
                   m, (unsigned long long)shape[1]);
    if (rc == 0)
      rc = json2_flatten(p, (const struct json2_span *)sub.data, m, shape + 1,
                         ndim - 1, max, leaves, err);
    zbuf_free(&sub);
    if (rc < 0)
      return rc;
  }
  return 0;
}

/* The legacy layout's shape: ndim levels of nesting, each as long as the
 * first list at its level (json2_flatten checks the others); *count is the
 * product. */
static int json2_nested_shape(const uint8_t *p, const struct json2_span *items,
                              size_t nitems, int ndim, size_t max,
                              uint64_t *shape, uint64_t *count,
                              struct zerr *err) {
  struct json2_span first = nitems ? items[0] : (struct json2_span){0, 0, 0};
  *count = ndim ? nitems : 1;
  if (ndim)
    shape[0] = nitems;
  for (int d = 1; d < ndim; d++) {
    shape[d] = 0;
    if (shape[d - 1] == 0)
      continue;
    struct zbuf sub;
    zbuf_init(&sub, max);
    int rc = json2_list(p, first.a, first.b, &sub, err);
    shape[d] = sub.len / sizeof first;
    if (shape[d])
      memcpy(&first, sub.data, sizeof first);
    zbuf_free(&sub);
    ZTRY(rc);
    if (zmul_u64(*count, shape[d], count) < 0)
      return zerr_set(err, EIO, "the nested lists hold too many elements");
  }
  return 0;
}

/* The dtype item: numpy's object type, the only one zarr-python accepts
 * from an object codec. */
static int json2_dtype(const uint8_t *p, const struct json2_span *s,
                       struct zerr *err) {
  char t[16];
  size_t len = 0;
  if (s->b - s->a <= sizeof t)
    json2_unescape(p, s->a, s->b, (uint8_t *)t, &len);
  if (len != 2 || memcmp(t, "|O", 2))
    return zerr_set(err, EIO, "the dtype item is not \"|O\" (object)");
  return 0;
}

/* The top-level items of the whole document p[0, size) into `top`. */
static int json2_top(const uint8_t *p, size_t size, struct zbuf *top,
                     struct zerr *err) {
  struct jlex l;
  json2_lex(&l, p, 0, size, err);
  if (jlex_peek(&l) != '[')
    return zerr_set(err, EIO, "the chunk is not a JSON list");
  size_t k = json2_at(&l, p);
  ZTRY(jlex_skip(&l));
  size_t end = json2_at(&l, p);
  if (!jlex_at_end(&l))
    return zerr_set(err, EIO, "trailing bytes after the JSON list");
  return json2_list(p, k, end, top, err);
}

/* The elements of the document in C order: the items before the dtype
 * (and shape), flattened along the shape, into `leaves`. */
static int json2_leaves(const uint8_t *p, size_t size,
                        const struct codec_spec *spec, enum json2_layout layout,
                        size_t max, struct zbuf *leaves, struct zerr *err) {
  struct zbuf top;
  zbuf_init(&top, max);
  int rc = json2_top(p, size, &top, err);
  const struct json2_span *it = (const struct json2_span *)top.data;
  size_t nt = top.len / sizeof *it, tail = layout == JSON2_LEGACY ? 1 : 2;
  uint64_t shape[ZMETA_MAX_DIMS] = {0}, count = 0;
  int ndim = spec->ndim;
  if (rc == 0 && (nt < tail || !it[nt - tail].is_string))
    rc = zerr_set(err, EIO, "the list does not end with a dtype string%s",
                  tail == 2 ? " and a shape" : "");
  if (rc == 0)
    rc = json2_dtype(p, &it[nt - tail], err);
  if (rc == 0 && layout == JSON2_LEGACY)
    rc = json2_nested_shape(p, it, nt - 1, ndim, max, shape, &count, err);
  else if (rc == 0)
    rc = json2_shape(p, &it[nt - 1], shape, &ndim, &count, err);
  if (rc == 0 && count != spec->nelem)
    rc = zerr_set(err, EIO, "the %s holds %llu elements, expected %llu",
                  tail == 2 ? "shape" : "nesting", (unsigned long long)count,
                  (unsigned long long)spec->nelem);
  uint64_t want_top = ndim == 0 ? 1 : shape[0];
  if (rc == 0 && nt - tail != want_top)
    rc = zerr_set(err, EIO, "%zu items for a shape of %llu", nt - tail,
                  (unsigned long long)want_top);
  if (rc == 0)
    rc = json2_flatten(p, it, nt - tail, shape, ndim, max, leaves, err);
  if (rc == 0 && leaves->len / sizeof *it != spec->nelem)
    rc = zerr_set(err, EIO, "%zu elements, expected %llu",
                  leaves->len / sizeof *it, (unsigned long long)spec->nelem);
  zbuf_free(&top);
  return rc;
}

/* Parse the document and build offsets + data for the chunk's elements. */
static int json2_parse(const uint8_t *p, size_t size,
                       const struct codec_spec *spec, enum json2_layout layout,
                       const struct codec_env *env, struct abytes *a,
                       struct zerr *err) {
  uint64_t n = spec->nelem;
  struct zbuf leaves;
  zbuf_init(&leaves, env->max_decoded);
  uint8_t *data = NULL;
  uint64_t *off = NULL;
  int rc = json2_leaves(p, size, spec, layout, env->max_decoded, &leaves, err);
  if (rc < 0)
    goto out;
  const struct json2_span *lv = (const struct json2_span *)leaves.data;
  /* n leaves; each output is no longer than its JSON text. */
  if ((n + 1) * sizeof(uint64_t) > env->max_decoded) {
    rc = zerr_set(err, EFBIG, "%llu offsets exceed the decode limit",
                  (unsigned long long)n + 1);
    goto out;
  }
  off = malloc((size_t)(n + 1) * sizeof *off);
  data = malloc(size + 1); /* + 1: the NUL jlex_unescape writes */
  if (!off || !data) {
    rc = zerr_set(err, ENOMEM, "out of memory");
    goto out;
  }
  size_t len = 0;
  off[0] = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (lv[i].is_string)
      json2_unescape(p, lv[i].a, lv[i].b, data, &len);
    else
      json2_compact(p, lv[i].a, lv[i].b, data, &len);
    off[i + 1] = len;
  }
  a->data = bytesrc_from_mem(data, len);
  data = NULL; /* freed by bytesrc_from_mem on failure */
  if (!a->data) {
    rc = zerr_set(err, ENOMEM, "out of memory");
    goto out;
  }
  a->offsets = off;
  off = NULL;
out:
  free(off);
  free(data);
  zbuf_free(&leaves);
  return rc;
}

/* Accept numcodecs' JSON configuration (the same for both codecs); only
 * the text encoding matters for decoding and it must be UTF-8. */
static int json2_create_as(json_t *config, const struct codec_spec *decoded,
                           const char *name, struct zerr *err) {
  static const char *const allowed[] = {
      "encoding",  "skipkeys", "ensure_ascii", "check_circular", "allow_nan",
      "sort_keys", "indent",   "separators",   "strict",         NULL};
  ZTRY(codec_cfg_only(config, name, allowed, err));
  const char *enc;
  int rc = codec_cfg_str(config, "encoding", 0, "utf-8", &enc, err);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
    return rc;
  }
  if (strcasecmp(enc, "utf-8") && strcasecmp(enc, "utf8"))
    return zerr_set(err, ENOTSUP, "%s: text encoding '%s' is unsupported", name,
                    enc);
  const struct dtype *dt = &decoded->dtype;
  if (!dtype_is_variable(dt))
    return zerr_set(err, dt->kind == DT_UNSUPPORTED ? ENOTSUP : EIO,
                    "%s: data type '%s' is not variable-length", name,
                    dt->name);
  return 0;
}

/* json2's configuration; no state. */
static int json2_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  *state = NULL;
  return json2_create_as(config, decoded, "json2", err);
}

/* The legacy json codec's configuration; no state. */
static int json2_legacy_create(json_t *config, const struct codec_spec *decoded,
                               void **state, struct zerr *err) {
  *state = NULL;
  return json2_create_as(config, decoded, "json", err);
}

/* No state. */
static void json2_destroy(void *state) { (void)state; }

/* Load the chunk (bounded) and parse it in the given layout; errors are
 * named as the codec `name`'s. */
static int json2_decode_as(const struct codec_spec *spec, struct bytesrc *in,
                           const struct codec_env *env,
                           enum json2_layout layout, const char *name,
                           struct abytes **out, struct zerr *err) {
  struct bytesrc *mem;
  ZTRY(codec_load_input(in, env, name, &mem, err));
  struct abytes *a = abytes_alloc();
  if (!a) {
    bytesrc_unref(mem);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  a->n = spec->nelem;
  a->elsize = 0;
  int rc = json2_parse(mem->mem, (size_t)mem->size, spec, layout, env, a, err);
  bytesrc_unref(mem);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
    abytes_free(a);
    return rc;
  }
  a->data_len = a->offsets[a->n];
  *out = a;
  return 0;
}

/* [items..., "|O", shape]. */
static int json2_decode(const void *state, const struct codec_spec *spec,
                        struct bytesrc *in, const struct codec_env *env,
                        struct abytes **out, struct zerr *err) {
  (void)state;
  return json2_decode_as(spec, in, env, JSON2_WITH_SHAPE, "json2", out, err);
}

/* [items..., "|O"]. */
static int json2_legacy_decode(const void *state, const struct codec_spec *spec,
                               struct bytesrc *in, const struct codec_env *env,
                               struct abytes **out, struct zerr *err) {
  (void)state;
  return json2_decode_as(spec, in, env, JSON2_LEGACY, "json", out, err);
}

static const char *const json2_aliases[] = {"numcodecs.json2", NULL};

const struct codec_impl codec_json2 = {
    .name = "json2",
    .aliases = json2_aliases,
    .kind = CODEC_A2B,
    .create = json2_create,
    .destroy = json2_destroy,
    .decode_array = json2_decode,
};

static const char *const json2_legacy_aliases[] = {"numcodecs.json", NULL};

const struct codec_impl codec_json = {
    .name = "json",
    .aliases = json2_legacy_aliases,
    .kind = CODEC_A2B,
    .create = json2_legacy_create,
    .destroy = json2_destroy,
    .decode_array = json2_legacy_decode,
};
