/* json2.c - the numcodecs `json2` object codec (V2 filter id `json2`,
 * V3 name `json2` or `numcodecs.json2`), read as an array->bytes codec
 * for object arrays shown as strings.
 *
 * numcodecs' JSON codec writes a chunk as one JSON document:
 *   [ item, item, ..., "<dtype>", [shape...] ]
 * where the items are the chunk's elements as nested lists (numpy's
 * tolist(): one nesting level per dimension), then the dtype string
 * (usually "|O") and the shape. Python's encoder may write NaN, Infinity
 * and -Infinity, so this file has its own small JSON scanner (no tree is
 * built: values are validated and located, then copied).
 *
 * Decoding gives the same variable-length form vlen-utf8 gives (n+1
 * offsets and the concatenated bytes, in memory): a string item is its
 * UTF-8 text (escapes resolved; a lone surrogate becomes U+FFFD), any
 * other item is its JSON text with insignificant whitespace removed
 * (`1`, `null`, `[1,2]`, `{"a":1}`). */
#include "codec.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../src/buf.h"

#define JSON2_MAX_DEPTH 512 /* nesting deeper than this is refused */

/* A value's byte range in the document and whether it is a string. */
struct json2_span {
  size_t a, b;
  int is_string;
};

/* Skip JSON whitespace. */
static size_t json2_ws(const uint8_t *p, size_t i, size_t n) {
  while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r'))
    i++;
  return i;
}

/* Hex digit value or -1. */
static int json2_hex(uint8_t c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Scan a string starting at p[*i] == '"'; *i ends after the closing quote.
 * Control characters are refused (Python's strict mode). */
static int json2_string(const uint8_t *p, size_t *i, size_t n,
                        struct zerr *err) {
  size_t k = *i + 1;
  while (k < n && p[k] != '"') {
    if (p[k] < 0x20)
      return zerr_set(err, EIO,
                      "json2: control character in a string at "
                      "byte %zu",
                      k);
    if (p[k] == '\\') {
      if (k + 1 >= n)
        break;
      uint8_t e = p[k + 1];
      if (e == 'u') {
        for (int d = 0; d < 4; d++)
          if (k + 2 + d >= n || json2_hex(p[k + 2 + d]) < 0)
            return zerr_set(err, EIO, "json2: bad \\u escape at byte %zu", k);
        k += 6;
        continue;
      }
      if (!strchr("\"\\/bfnrt", e) || e == 0)
        return zerr_set(err, EIO, "json2: bad escape at byte %zu", k);
      k += 2;
      continue;
    }
    k++;
  }
  if (k >= n)
    return zerr_set(err, EIO, "json2: unterminated string at byte %zu", *i);
  *i = k + 1;
  return 0;
}

/* Scan a number (JSON grammar) or NaN / Infinity / -Infinity. */
static int json2_number(const uint8_t *p, size_t *i, size_t n,
                        struct zerr *err) {
  size_t k = *i, start = *i;
  if (n - k >= 3 && !memcmp(p + k, "NaN", 3)) {
    *i = k + 3;
    return 0;
  }
  if (k < n && p[k] == '-')
    k++;
  if (n - k >= 8 && !memcmp(p + k, "Infinity", 8)) {
    *i = k + 8;
    return 0;
  }
  if (k < n && p[k] == '0') {
    k++;
  } else if (k < n && p[k] >= '1' && p[k] <= '9') {
    while (k < n && p[k] >= '0' && p[k] <= '9')
      k++;
  } else {
    return zerr_set(err, EIO, "json2: invalid value at byte %zu", start);
  }
  if (k < n && p[k] == '.') {
    k++;
    if (k >= n || p[k] < '0' || p[k] > '9')
      return zerr_set(err, EIO, "json2: bad number at byte %zu", start);
    while (k < n && p[k] >= '0' && p[k] <= '9')
      k++;
  }
  if (k < n && (p[k] == 'e' || p[k] == 'E')) {
    k++;
    if (k < n && (p[k] == '+' || p[k] == '-'))
      k++;
    if (k >= n || p[k] < '0' || p[k] > '9')
      return zerr_set(err, EIO, "json2: bad number at byte %zu", start);
    while (k < n && p[k] >= '0' && p[k] <= '9')
      k++;
  }
  *i = k;
  return 0;
}

/* Scan one value starting at p[*i] (no leading whitespace); *i ends after
 * it. Containers are walked with an explicit stack, so hostile nesting
 * cannot overflow the C stack. */
static int json2_value(const uint8_t *p, size_t *i, size_t n,
                       struct zerr *err) {
  char stack[JSON2_MAX_DEPTH]; /* '[' or '{' */
  int depth = 0;
  size_t k = *i;
  for (;;) {
    /* A value. */
    k = json2_ws(p, k, n);
    if (k >= n)
      return zerr_set(err, EIO, "json2: document ends inside a value");
    uint8_t c = p[k];
    if (c == '[' || c == '{') {
      if (depth == JSON2_MAX_DEPTH)
        return zerr_set(err, EIO, "json2: nesting deeper than %d levels",
                        JSON2_MAX_DEPTH);
      stack[depth++] = (char)c;
      k = json2_ws(p, k + 1, n);
      if (k < n && p[k] == (c == '[' ? ']' : '}')) {
        depth--;
        k++;
      } else {
        if (c == '{') {
          if (k >= n || p[k] != '"')
            return zerr_set(err, EIO, "json2: object key expected at byte %zu",
                            k);
          ZTRY(json2_string(p, &k, n, err));
          k = json2_ws(p, k, n);
          if (k >= n || p[k] != ':')
            return zerr_set(err, EIO, "json2: ':' expected at byte %zu", k);
          k++;
        }
        continue; /* the first member's value */
      }
    } else if (c == '"') {
      ZTRY(json2_string(p, &k, n, err));
    } else if (n - k >= 4 && !memcmp(p + k, "true", 4)) {
      k += 4;
    } else if (n - k >= 5 && !memcmp(p + k, "false", 5)) {
      k += 5;
    } else if (n - k >= 4 && !memcmp(p + k, "null", 4)) {
      k += 4;
    } else {
      ZTRY(json2_number(p, &k, n, err));
    }
    /* After a value: close containers or move to the next member. */
    for (;;) {
      if (depth == 0) {
        *i = k;
        return 0;
      }
      k = json2_ws(p, k, n);
      char top = stack[depth - 1];
      if (k < n && p[k] == (top == '[' ? ']' : '}')) {
        depth--;
        k++;
        continue;
      }
      if (k >= n || p[k] != ',')
        return zerr_set(err, EIO, "json2: ',' or '%c' expected at byte %zu",
                        top == '[' ? ']' : '}', k);
      k = json2_ws(p, k + 1, n);
      if (top == '{') {
        if (k >= n || p[k] != '"')
          return zerr_set(err, EIO, "json2: object key expected at byte %zu",
                          k);
        ZTRY(json2_string(p, &k, n, err));
        k = json2_ws(p, k, n);
        if (k >= n || p[k] != ':')
          return zerr_set(err, EIO, "json2: ':' expected at byte %zu", k);
        k++;
      }
      break;
    }
  }
}

/* The items of the list spanning p[a, b) (which must start with '['),
 * appended to `items` (a capped buffer of struct json2_span). */
static int json2_list(const uint8_t *p, size_t a, size_t b, struct zbuf *items,
                      struct zerr *err) {
  if (a >= b || p[a] != '[')
    return zerr_set(err, EIO, "json2: a list was expected at byte %zu", a);
  size_t k = json2_ws(p, a + 1, b);
  if (k < b && p[k] == ']')
    return 0;
  for (;;) {
    struct json2_span s = {k, k, k < b && p[k] == '"'};
    ZTRY(json2_value(p, &k, b, err));
    s.b = k;
    ZTRY(zbuf_append(items, &s, sizeof s, err));
    k = json2_ws(p, k, b);
    if (k < b && p[k] == ']')
      return 0;
    if (k >= b || p[k] != ',')
      return zerr_set(err, EIO, "json2: ',' or ']' expected at byte %zu", k);
    k = json2_ws(p, k + 1, b);
  }
}

/* Append one code point as UTF-8. */
static void json2_put_utf8(uint8_t *o, size_t *len, uint32_t c) {
  if (c < 0x80) {
    o[(*len)++] = (uint8_t)c;
  } else if (c < 0x800) {
    o[(*len)++] = (uint8_t)(0xc0 | c >> 6);
    o[(*len)++] = (uint8_t)(0x80 | (c & 0x3f));
  } else if (c < 0x10000) {
    o[(*len)++] = (uint8_t)(0xe0 | c >> 12);
    o[(*len)++] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
    o[(*len)++] = (uint8_t)(0x80 | (c & 0x3f));
  } else {
    o[(*len)++] = (uint8_t)(0xf0 | c >> 18);
    o[(*len)++] = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
    o[(*len)++] = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
    o[(*len)++] = (uint8_t)(0x80 | (c & 0x3f));
  }
}

/* The 4 hex digits at p (already validated). */
static uint32_t json2_u4(const uint8_t *p) {
  return (uint32_t)(json2_hex(p[0]) << 12 | json2_hex(p[1]) << 8 |
                    json2_hex(p[2]) << 4 | json2_hex(p[3]));
}

/* Unescape the validated string p[a, b) (quotes included) into o; never
 * longer than the escaped text. */
static void json2_unescape(const uint8_t *p, size_t a, size_t b, uint8_t *o,
                           size_t *len) {
  for (size_t k = a + 1; k < b - 1;) {
    if (p[k] != '\\') {
      o[(*len)++] = p[k++];
      continue;
    }
    uint8_t e = p[k + 1];
    if (e != 'u') {
      static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      o[(*len)++] = (uint8_t)to[strchr(from, e) - from];
      k += 2;
      continue;
    }
    uint32_t c = json2_u4(p + k + 2);
    k += 6;
    if (c >= 0xd800 && c < 0xdc00 && k + 6 <= b - 1 && p[k] == '\\' &&
        p[k + 1] == 'u') {
      uint32_t lo = json2_u4(p + k + 2);
      if (lo >= 0xdc00 && lo < 0xe000) {
        c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
        k += 6;
      }
    }
    if (c >= 0xd800 && c < 0xe000)
      c = 0xfffd; /* a lone surrogate has no UTF-8 form */
    json2_put_utf8(o, len, c);
  }
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
  size_t k = json2_ws(p, s->a + 1, s->b);
  if (p[s->a] != '[')
    return zerr_set(err, EIO, "json2: the last item (shape) is not a list");
  while (k < s->b && p[k] != ']') {
    uint64_t v = 0;
    size_t d0 = k;
    while (k < s->b && p[k] >= '0' && p[k] <= '9') {
      if (v > (UINT64_MAX - 9) / 10)
        return zerr_set(err, EIO, "json2: shape value too large");
      v = v * 10 + (uint64_t)(p[k++] - '0');
    }
    if (k == d0 || *ndim == ZMETA_MAX_DIMS)
      return zerr_set(err, EIO,
                      "json2: the shape must be a list of at most %d "
                      "non-negative integers",
                      ZMETA_MAX_DIMS);
    if (zmul_u64(*count, v, count) < 0)
      return zerr_set(err, EIO, "json2: shape overflows");
    shape[(*ndim)++] = v;
    k = json2_ws(p, k, s->b);
    if (k < s->b && p[k] == ',')
      k = json2_ws(p, k + 1, s->b);
    else if (k >= s->b || p[k] != ']')
      return zerr_set(err, EIO, "json2: the shape must be a list of integers");
  }
  return 0;
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
      rc = zerr_set(err, EIO,
                    "json2: a nested list has %zu items, the shape says %llu",
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

/* Parse the document and build offsets + data for n elements. */
static int json2_parse(const uint8_t *p, size_t size, uint64_t n,
                       const struct codec_env *env, struct abytes *a,
                       struct zerr *err) {
  struct zbuf top, leaves;
  zbuf_init(&top, env->max_decoded);
  zbuf_init(&leaves, env->max_decoded);
  uint8_t *data = NULL;
  uint64_t *off = NULL;
  size_t k = json2_ws(p, 0, size);
  int rc = 0;
  if (k >= size || p[k] != '[') {
    rc = zerr_set(err, EIO, "json2: the chunk is not a JSON list");
    goto out;
  }
  size_t end = k;
  rc = json2_value(p, &end, size, err);
  if (rc == 0 && json2_ws(p, end, size) != size)
    rc = zerr_set(err, EIO, "json2: trailing bytes after the JSON list");
  if (rc == 0)
    rc = json2_list(p, k, end, &top, err);
  if (rc < 0)
    goto out;
  const struct json2_span *it = (const struct json2_span *)top.data;
  size_t nt = top.len / sizeof *it;
  if (nt < 2 || !it[nt - 2].is_string) {
    rc = zerr_set(err, EIO,
                  "json2: the list does not end with a dtype string and a "
                  "shape");
    goto out;
  }
  uint64_t shape[ZMETA_MAX_DIMS], count;
  int ndim;
  rc = json2_shape(p, &it[nt - 1], shape, &ndim, &count, err);
  if (rc < 0)
    goto out;
  if (count != n) {
    rc = zerr_set(err, EIO,
                  "json2: the shape holds %llu elements, expected "
                  "%llu",
                  (unsigned long long)count, (unsigned long long)n);
    goto out;
  }
  uint64_t want_top = ndim == 0 ? 1 : shape[0];
  if (nt - 2 != want_top) {
    rc = zerr_set(err, EIO, "json2: %zu items for a shape of %llu", nt - 2,
                  (unsigned long long)want_top);
    goto out;
  }
  rc =
      json2_flatten(p, it, nt - 2, shape, ndim, env->max_decoded, &leaves, err);
  if (rc < 0)
    goto out;
  const struct json2_span *lv = (const struct json2_span *)leaves.data;
  if (leaves.len / sizeof *lv != n) {
    rc = zerr_set(err, EIO, "json2: %zu elements, expected %llu",
                  leaves.len / sizeof *lv, (unsigned long long)n);
    goto out;
  }
  /* count == n leaves; each output is no longer than its JSON text. */
  if ((n + 1) * sizeof(uint64_t) > env->max_decoded) {
    rc = zerr_set(err, EFBIG, "json2: %llu offsets exceed the decode limit",
                  (unsigned long long)n + 1);
    goto out;
  }
  off = malloc((size_t)(n + 1) * sizeof *off);
  data = malloc(size ? size : 1);
  if (!off || !data) {
    rc = zerr_set(err, ENOMEM, "json2: out of memory");
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
    rc = zerr_set(err, ENOMEM, "json2: out of memory");
    goto out;
  }
  a->offsets = off;
  off = NULL;
out:
  free(off);
  free(data);
  zbuf_free(&top);
  zbuf_free(&leaves);
  return rc;
}

/* Accept numcodecs' JSON configuration; only the text encoding matters for
 * decoding and it must be UTF-8. */
static int json2_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  static const char *const allowed[] = {
      "encoding",  "skipkeys", "ensure_ascii", "check_circular", "allow_nan",
      "sort_keys", "indent",   "separators",   "strict",         NULL};
  ZTRY(codec_cfg_only(config, "json2", allowed, err));
  const char *enc;
  int rc = codec_cfg_str(config, "encoding", 0, "utf-8", &enc, err);
  if (rc < 0) {
    zerr_prefix(err, "json2: ");
    return rc;
  }
  if (strcasecmp(enc, "utf-8") && strcasecmp(enc, "utf8"))
    return zerr_set(err, ENOTSUP, "json2: text encoding '%s' is unsupported",
                    enc);
  const struct dtype *dt = &decoded->dtype;
  if (!dtype_is_variable(dt))
    return zerr_set(err, dt->kind == DT_UNSUPPORTED ? ENOTSUP : EIO,
                    "json2: data type '%s' is not variable-length", dt->name);
  *state = NULL;
  return 0;
}

/* No state. */
static void json2_destroy(void *state) { (void)state; }

/* Load the chunk (bounded) and parse it. */
static int json2_decode(const void *state, const struct codec_spec *spec,
                        struct bytesrc *in, const struct codec_env *env,
                        struct abytes **out, struct zerr *err) {
  (void)state;
  struct bytesrc *mem;
  ZTRY(codec_load_input(in, env, "json2", &mem, err));
  struct abytes *a = abytes_alloc();
  if (!a) {
    bytesrc_unref(mem);
    return zerr_set(err, ENOMEM, "json2: out of memory");
  }
  a->n = spec->nelem;
  a->elsize = 0;
  int rc = json2_parse(mem->mem, (size_t)mem->size, spec->nelem, env, a, err);
  bytesrc_unref(mem);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  a->data_len = a->offsets[a->n];
  *out = a;
  return 0;
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
