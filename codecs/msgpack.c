/* msgpack.c - numcodecs' MsgPack object codec (V2 filter id `msgpack2`,
 * V3 name `msgpack2` or `numcodecs.msgpack2`), read as an array->bytes
 * codec for object arrays shown as strings, as json2.c reads the JSON
 * ones.
 *
 * numcodecs (msgpacks.py) packs a chunk as one MessagePack array:
 *   [ item, item, ..., "|O", [shape...] ]
 * the items nested as numpy's tolist() nests them (one level per
 * dimension), then the dtype string and the shape. The dtype must be "|O"
 * and the shape's element count the chunk's.
 *
 * Decoding gives the variable-length form vlen-utf8 gives (n+1 offsets and
 * the concatenated bytes, in memory), each element's text as json2 gives
 * it where JSON can say it: a str item is its UTF-8 text (a bin item, or a
 * str with `raw`, is lowercase hex: it is bytes); any other item is the
 * compact JSON text Python's json.dumps would write for it: `null`,
 * `true`, integers in decimal, floats as Python's repr (`1.0`, `1e+20`,
 * `NaN`, `Infinity`), lists `[1,"a"]`, maps `{"k":1}` (non-string keys
 * written as strings, bytes inside as hex strings).
 *
 * A decoder of our own, bounded: every length is checked against the
 * bytes left before it is used, nesting is at most MSGPACK_MAX_DEPTH, and
 * the output is a capped buffer (the decode limit). Ext types (msgpack's
 * timestamps, numpy extensions) are refused: numcodecs never writes them.
 * Debian's libmsgpack-c would add a dependency for ~300 lines that would
 * still have to walk its tree the same way. */
#include "abytes.h"
#include "codec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/util/buf.h"
#include "../src/util/zmath.h"

/* Containers nested deeper than this are refused (the walk recurses). */
#define MSGPACK_MAX_DEPTH 256

/* A cursor over the packed bytes [p, end). */
struct mp {
  const uint8_t *p, *end, *start;
  int raw; /* `raw`: str items are bytes */
  struct zerr *err;
};

/* -EIO naming the offset. */
static int mp_fail(struct mp *m, const char *what) {
  return zerr_set(m->err, EIO, "%s at byte %zu", what,
                  (size_t)(m->p - m->start));
}

/* Need n more bytes. */
static int mp_need(struct mp *m, uint64_t n) {
  return (uint64_t)(m->end - m->p) < n ? mp_fail(m, "truncated") : 0;
}

/* A big-endian unsigned integer of n bytes. */
static uint64_t mp_be(struct mp *m, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++)
    v = v << 8 | *m->p++;
  return v;
}

/* What a value is, read from its header (the cursor then at its body). */
enum mp_type {
  MP_NIL,
  MP_BOOL,
  MP_UINT,
  MP_INT,
  MP_FLOAT,
  MP_STR,
  MP_BIN,
  MP_ARRAY,
  MP_MAP
};

struct mp_head {
  enum mp_type type;
  uint64_t u; /* MP_UINT, MP_BOOL; lengths of str, bin, array, map */
  int64_t i;  /* MP_INT (negative) */
  double d;   /* MP_FLOAT */
};

/* Read one header. */
static int mp_head(struct mp *m, struct mp_head *h) {
  ZTRY(mp_need(m, 1));
  uint8_t c = *m->p++;
  int n = 0; /* bytes of length or value that follow */
  if (c <= 0x7f) {
    h->type = MP_UINT, h->u = c;
    return 0;
  }
  if (c >= 0xe0) {
    h->type = MP_INT, h->i = (int8_t)c;
    return 0;
  }
  if ((c & 0xe0) == 0xa0) {
    h->type = MP_STR, h->u = c & 0x1f;
    return mp_need(m, h->u);
  }
  if ((c & 0xf0) == 0x90) {
    h->type = MP_ARRAY, h->u = c & 0x0f;
    return 0;
  }
  if ((c & 0xf0) == 0x80) {
    h->type = MP_MAP, h->u = c & 0x0f;
    return 0;
  }
  switch (c) {
  case 0xc0:
    h->type = MP_NIL;
    return 0;
  case 0xc2:
  case 0xc3:
    h->type = MP_BOOL, h->u = c & 1;
    return 0;
  case 0xc4:
  case 0xc5:
  case 0xc6:
    h->type = MP_BIN, n = 1 << (c - 0xc4);
    break;
  case 0xd9:
  case 0xda:
  case 0xdb:
    h->type = MP_STR, n = 1 << (c - 0xd9);
    break;
  case 0xdc:
  case 0xdd:
    h->type = MP_ARRAY, n = c == 0xdc ? 2 : 4;
    break;
  case 0xde:
  case 0xdf:
    h->type = MP_MAP, n = c == 0xde ? 2 : 4;
    break;
  case 0xcc:
  case 0xcd:
  case 0xce:
  case 0xcf:
    n = 1 << (c - 0xcc);
    ZTRY(mp_need(m, (uint64_t)n));
    h->type = MP_UINT, h->u = mp_be(m, n);
    return 0;
  case 0xd0:
  case 0xd1:
  case 0xd2:
  case 0xd3: {
    n = 1 << (c - 0xd0);
    ZTRY(mp_need(m, (uint64_t)n));
    uint64_t v = mp_be(m, n);
    int sh = 64 - 8 * n; /* sign-extend */
    h->type = MP_INT, h->i = (int64_t)(v << sh) >> sh;
    if (h->i >= 0)
      h->type = MP_UINT, h->u = (uint64_t)h->i;
    return 0;
  }
  case 0xca: {
    ZTRY(mp_need(m, 4));
    uint32_t b = (uint32_t)mp_be(m, 4);
    float f;
    memcpy(&f, &b, 4);
    h->type = MP_FLOAT, h->d = f;
    return 0;
  }
  case 0xcb: {
    ZTRY(mp_need(m, 8));
    uint64_t b = mp_be(m, 8);
    memcpy(&h->d, &b, 8);
    h->type = MP_FLOAT;
    return 0;
  }
  default:
    m->p--;
    return mp_fail(m, c == 0xc1 ? "the never-used byte 0xc1"
                                : "an ext type (numcodecs writes none)");
  }
  ZTRY(mp_need(m, (uint64_t)n));
  h->u = mp_be(m, n);
  /* Bodies of str and bin must be there; a container's items each take a
   * byte at least (a map's two). */
  uint64_t body = h->type == MP_MAP ? h->u * 2 : h->u;
  if (h->type == MP_MAP && h->u > UINT64_MAX / 2)
    return mp_fail(m, "a map longer than the chunk");
  return mp_need(m, body);
}

/* Skip one whole value (checked), depth levels allowed below. */
static int mp_skip(struct mp *m, int depth) {
  struct mp_head h;
  ZTRY(mp_head(m, &h));
  if (h.type == MP_STR || h.type == MP_BIN) {
    m->p += h.u;
    return 0;
  }
  if (h.type != MP_ARRAY && h.type != MP_MAP)
    return 0;
  if (depth <= 0)
    return mp_fail(m, "nesting too deep");
  uint64_t n = h.type == MP_MAP ? h.u * 2 : h.u;
  for (uint64_t i = 0; i < n; i++)
    ZTRY(mp_skip(m, depth - 1));
  return 0;
}

/* Append text. */
static int out_put(struct zbuf *o, const void *p, size_t n, struct zerr *err) {
  return zbuf_append(o, p, n, err);
}

/* Lowercase hex of n bytes, optionally quoted. */
static int out_hex(struct zbuf *o, const uint8_t *p, uint64_t n, int quote,
                   struct zerr *err) {
  static const char hex[] = "0123456789abcdef";
  if (n > SIZE_MAX / 2 - 2)
    return zerr_set(err, EFBIG, "bytes too long");
  ZTRY(zbuf_reserve(o, (size_t)n * 2 + 2, err));
  if (quote)
    o->data[o->len++] = '"';
  for (uint64_t i = 0; i < n; i++) {
    o->data[o->len++] = (uint8_t)hex[p[i] >> 4];
    o->data[o->len++] = (uint8_t)hex[p[i] & 15];
  }
  if (quote)
    o->data[o->len++] = '"';
  return 0;
}

/* A JSON string of UTF-8 text (escaped as json.dumps with ensure_ascii
 * off: quote, backslash and control characters). */
static int out_jstr(struct zbuf *o, const uint8_t *p, uint64_t n,
                    struct zerr *err) {
  ZTRY(out_put(o, "\"", 1, err));
  for (uint64_t i = 0; i < n; i++) {
    uint8_t c = p[i];
    char esc[8];
    int len = 0;
    if (c == '"' || c == '\\')
      len = snprintf(esc, sizeof esc, "\\%c", c);
    else if (c == '\n')
      len = snprintf(esc, sizeof esc, "\\n");
    else if (c == '\r')
      len = snprintf(esc, sizeof esc, "\\r");
    else if (c == '\t')
      len = snprintf(esc, sizeof esc, "\\t");
    else if (c == '\b')
      len = snprintf(esc, sizeof esc, "\\b");
    else if (c == '\f')
      len = snprintf(esc, sizeof esc, "\\f");
    else if (c < 0x20)
      len = snprintf(esc, sizeof esc, "\\u%04x", c);
    if (len)
      ZTRY(out_put(o, esc, (size_t)len, err));
    else
      ZTRY(out_put(o, &c, 1, err));
  }
  return out_put(o, "\"", 1, err);
}

/* A float as Python's repr (and json.dumps) writes it: the shortest
 * digits that read back, plain for a decimal exponent in [-4, 16) with a
 * ".0" when integral, else d.ddde+XX; NaN, Infinity, -Infinity. */
static int out_float(struct zbuf *o, double d, struct zerr *err) {
  char buf[40];
  if (isnan(d))
    return out_put(o, "NaN", 3, err);
  if (isinf(d))
    return d > 0 ? out_put(o, "Infinity", 8, err)
                 : out_put(o, "-Infinity", 9, err);
  int prec = 1;
  for (; prec < 17; prec++) {
    snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
    if (strtod(buf, NULL) == d)
      break;
  }
  snprintf(buf, sizeof buf, "%.*e", prec - 1, d);
  /* buf: [-]D[.DDD]e[+-]XX */
  char digits[20];
  int nd = 0, neg = buf[0] == '-';
  const char *q = buf + neg;
  for (; *q != 'e'; q++)
    if (*q != '.')
      digits[nd++] = *q;
  int x10 = atoi(q + 1);
  while (nd > 1 && digits[nd - 1] == '0')
    nd--;
  char t[48];
  int n = 0;
  if (neg)
    t[n++] = '-';
  if (x10 >= -4 && x10 < 16) {
    if (x10 < 0) {
      t[n++] = '0';
      t[n++] = '.';
      for (int i = 0; i < -x10 - 1; i++)
        t[n++] = '0';
      for (int i = 0; i < nd; i++)
        t[n++] = digits[i];
    } else {
      for (int i = 0; i <= x10; i++)
        t[n++] = i < nd ? digits[i] : '0';
      t[n++] = '.';
      if (nd > x10 + 1)
        for (int i = x10 + 1; i < nd; i++)
          t[n++] = digits[i];
      else
        t[n++] = '0';
    }
  } else {
    t[n++] = digits[0];
    if (nd > 1) {
      t[n++] = '.';
      for (int i = 1; i < nd; i++)
        t[n++] = digits[i];
    }
    n += snprintf(t + n, sizeof t - (size_t)n, "e%c%02d", x10 < 0 ? '-' : '+',
                  x10 < 0 ? -x10 : x10);
  }
  return out_put(o, t, (size_t)n, err);
}

/* One value as JSON text (inside a container when nested: strings
 * quoted), depth levels allowed below. */
static int mp_json(struct mp *m, struct zbuf *o, int nested, int depth) {
  struct mp_head h;
  char num[24];
  ZTRY(mp_head(m, &h));
  switch (h.type) {
  case MP_NIL:
    return out_put(o, "null", 4, m->err);
  case MP_BOOL:
    return h.u ? out_put(o, "true", 4, m->err) : out_put(o, "false", 5, m->err);
  case MP_UINT:
    return out_put(
        o, num,
        (size_t)snprintf(num, sizeof num, "%llu", (unsigned long long)h.u),
        m->err);
  case MP_INT:
    return out_put(o, num,
                   (size_t)snprintf(num, sizeof num, "%lld", (long long)h.i),
                   m->err);
  case MP_FLOAT:
    return out_float(o, h.d, m->err);
  case MP_STR:
  case MP_BIN: {
    const uint8_t *b = m->p;
    m->p += h.u;
    if (h.type == MP_BIN || m->raw)
      return out_hex(o, b, h.u, nested, m->err);
    return nested ? out_jstr(o, b, h.u, m->err)
                  : out_put(o, b, (size_t)h.u, m->err);
  }
  case MP_ARRAY:
  case MP_MAP:
    break;
  }
  if (depth <= 0)
    return mp_fail(m, "nesting too deep");
  int map = h.type == MP_MAP;
  ZTRY(out_put(o, map ? "{" : "[", 1, m->err));
  for (uint64_t i = 0; i < h.u; i++) {
    if (i)
      ZTRY(out_put(o, ",", 1, m->err));
    if (map) {
      /* json.dumps writes a key that is not a string as one */
      size_t at = o->len;
      ZTRY(mp_json(m, o, 1, depth - 1));
      if (o->data[at] != '"') {
        ZTRY(zbuf_reserve(o, 2, m->err));
        memmove(o->data + at + 1, o->data + at, o->len - at);
        o->data[at] = '"';
        o->len++;
        o->data[o->len++] = '"';
      }
      ZTRY(out_put(o, ":", 1, m->err));
    }
    ZTRY(mp_json(m, o, 1, depth - 1));
  }
  return out_put(o, map ? "}" : "]", 1, m->err);
}

/* The state: numcodecs' `raw` (str items are bytes). */
struct msgpack_state {
  int raw;
};

/* Walk the items along the shape, depth d: at the last dimension each
 * item is one element (its text appended, its end offset recorded). */
static int mp_items(struct mp *m, const uint64_t *shape, int ndim, int d,
                    struct zbuf *o, uint64_t *off, uint64_t *k) {
  if (d == ndim) {
    ZTRY(mp_json(m, o, 0, MSGPACK_MAX_DEPTH));
    off[++*k] = o->len;
    return 0;
  }
  struct mp_head h;
  ZTRY(mp_head(m, &h));
  if (h.type != MP_ARRAY || h.u != shape[d])
    return mp_fail(m, "a nested list does not match the shape");
  for (uint64_t i = 0; i < shape[d]; i++)
    ZTRY(mp_items(m, shape, ndim, d + 1, o, off, k));
  return 0;
}

/* Parse the chunk into offsets and text. */
static int msgpack_parse(const uint8_t *p, size_t size, int raw,
                         const struct codec_spec *spec,
                         const struct codec_env *env, struct abytes *a,
                         struct zerr *err) {
  struct mp m = {p, p + size, p, raw, err};
  struct mp_head top;
  ZTRY(mp_head(&m, &top));
  if (top.type != MP_ARRAY || top.u < 2)
    return mp_fail(&m, "the chunk is not a list ending with dtype and shape");
  /* The dtype and the shape come last: skip the items to find them. */
  const uint8_t *items = m.p;
  for (uint64_t i = 0; i + 2 < top.u; i++)
    ZTRY(mp_skip(&m, MSGPACK_MAX_DEPTH));
  struct mp_head h;
  ZTRY(mp_head(&m, &h));
  if (h.type != MP_STR || h.u != 2 || memcmp(m.p, "|O", 2))
    return mp_fail(&m, "the dtype item is not \"|O\" (object)");
  m.p += 2;
  uint64_t shape[ZMETA_MAX_DIMS], count = 1;
  ZTRY(mp_head(&m, &h));
  if (h.type != MP_ARRAY || h.u > ZMETA_MAX_DIMS)
    return mp_fail(&m, "the shape is not a list of at most 32 integers");
  int ndim = (int)h.u;
  for (int d = 0; d < ndim; d++) {
    struct mp_head s;
    ZTRY(mp_head(&m, &s));
    if (s.type != MP_UINT)
      return mp_fail(&m, "the shape is not a list of non-negative integers");
    shape[d] = s.u;
    if (zmul_u64(count, s.u, &count) < 0)
      return zerr_set(err, EIO, "the shape overflows");
  }
  if (m.p != m.end)
    return mp_fail(&m, "trailing bytes after the list");
  if (count != spec->nelem)
    return zerr_set(err, EIO, "the shape holds %llu elements, expected %llu",
                    (unsigned long long)count, (unsigned long long)spec->nelem);
  uint64_t want_top = ndim == 0 ? 1 : shape[0];
  if (top.u - 2 != want_top)
    return zerr_set(err, EIO, "%llu items for a shape of %llu",
                    (unsigned long long)(top.u - 2),
                    (unsigned long long)want_top);
  uint64_t n = spec->nelem;
  if ((n + 1) > env->max_decoded / sizeof(uint64_t))
    return zerr_set(err, EFBIG, "%llu offsets exceed the decode limit",
                    (unsigned long long)n + 1);
  uint64_t *off = malloc((size_t)(n + 1) * sizeof *off);
  if (!off)
    return zerr_set(err, ENOMEM, "out of memory");
  struct zbuf o;
  zbuf_init(&o, env->max_decoded);
  m.p = items;
  off[0] = 0;
  uint64_t k = 0;
  int rc = 0;
  if (ndim == 0) {
    rc = mp_items(&m, shape, 0, 0, &o, off, &k);
  } else {
    for (uint64_t i = 0; rc == 0 && i < shape[0]; i++)
      rc = mp_items(&m, shape, ndim, 1, &o, off, &k);
  }
  size_t len = 0;
  uint8_t *data = rc == 0 ? zbuf_steal(&o, &len) : NULL;
  zbuf_free(&o);
  if (rc == 0 && !data && !(data = malloc(1))) /* no text at all */
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0)
    a->data = bytesrc_from_mem(data, len); /* frees data on failure */
  if (rc == 0 && !a->data)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    free(off);
    return rc;
  }
  a->offsets = off;
  return 0;
}

/* numcodecs' configuration: use_single_float and use_bin_type only
 * change encoding; raw changes what str items are. */
static int msgpack_create(json_t *config, const struct codec_spec *decoded,
                          void **state, struct zerr *err) {
  static const char *const allowed[] = {"use_single_float", "use_bin_type",
                                        "raw", NULL};
  *state = NULL;
  ZTRY(codec_cfg_only(config, "msgpack2", allowed, err));
  json_t *raw = config ? json_object_get(config, "raw") : NULL;
  if (raw && !json_is_boolean(raw))
    return zerr_set(err, EIO, "msgpack2: raw must be true or false");
  const struct dtype *dt = &decoded->dtype;
  if (!dtype_is_variable(dt))
    return zerr_set(err, dt->kind == DT_UNSUPPORTED ? ENOTSUP : EIO,
                    "msgpack2: data type '%s' is not variable-length",
                    dt->name);
  struct msgpack_state *s = calloc(1, sizeof *s);
  if (!s)
    return zerr_set(err, ENOMEM, "msgpack2: out of memory");
  s->raw = json_is_true(raw);
  *state = s;
  return 0;
}

/* Free the state. */
static void msgpack_destroy(void *state) { free(state); }

/* Load the chunk (bounded) and parse it. */
static int msgpack_decode(const void *state, const struct codec_spec *spec,
                          struct bytesrc *in, const struct codec_env *env,
                          struct abytes **out, struct zerr *err) {
  const struct msgpack_state *s = state;
  struct bytesrc *mem;
  ZTRY(codec_load_input(in, env, "msgpack2", &mem, err));
  struct abytes *a = abytes_alloc();
  if (!a) {
    bytesrc_unref(mem);
    return zerr_set(err, ENOMEM, "msgpack2: out of memory");
  }
  a->n = spec->nelem;
  a->elsize = 0;
  int rc = msgpack_parse(mem->mem, (size_t)mem->size, s ? s->raw : 0, spec, env,
                         a, err);
  bytesrc_unref(mem);
  if (rc < 0) {
    zerr_prefix(err, "msgpack2: ");
    abytes_free(a);
    return rc;
  }
  a->data_len = a->offsets[a->n];
  *out = a;
  return 0;
}

static const char *const msgpack_aliases[] = {"numcodecs.msgpack2", NULL};

const struct codec_impl codec_msgpack2 = {
    .name = "msgpack2",
    .aliases = msgpack_aliases,
    .kind = CODEC_A2B,
    .create = msgpack_create,
    .destroy = msgpack_destroy,
    .decode_array = msgpack_decode,
};
