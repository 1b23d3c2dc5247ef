/* vlen_interleaved.c - `vlen-utf8`, `vlen-bytes`, `vlen-array` and
 * `zarrs.vlen_v2`: four names for one numcodecs-compatible format,
 *   u32 LE count (== n) | n x ( u32 LE len | len bytes )
 * (see shared/reference/zarrs-vlen.md section 2.2).
 *
 * Lengths are interleaved with the data, so there is no way to find element
 * j without walking the ones before it: decoding loads the chunk and builds
 * a compact offsets + data pair that views can index directly. */
#include "codec.h"

#include <stdlib.h>
#include <string.h>

#include "../src/buf.h"

/* The state is the codec's name, for messages; it is static, never freed. */

/* Shared create: configuration absent or {}, variable-length type. */
static int vli_create(const char *name, json_t *config,
                      const struct codec_spec *decoded, void **state,
                      struct zerr *err) {
  if (config && (!json_is_object(config) || json_object_size(config) != 0))
    return zerr_set(err, EIO, "%s: configuration must be empty", name);
  const struct dtype *dt = &decoded->dtype;
  if (!dtype_is_variable(dt))
    return zerr_set(err, dt->kind == DT_UNSUPPORTED ? ENOTSUP : EIO,
                    "%s: data type '%s' is not variable-length", name,
                    dt->name);
  *state = (void *)name;
  return 0;
}

/* Per-name wrappers, so messages say which name the metadata used. */
static int vli_create_utf8(json_t *c, const struct codec_spec *d, void **s,
                           struct zerr *e) {
  return vli_create("vlen-utf8", c, d, s, e);
}
static int vli_create_bytes(json_t *c, const struct codec_spec *d, void **s,
                            struct zerr *e) {
  return vli_create("vlen-bytes", c, d, s, e);
}
static int vli_create_array(json_t *c, const struct codec_spec *d, void **s,
                            struct zerr *e) {
  return vli_create("vlen-array", c, d, s, e);
}
static int vli_create_v2(json_t *c, const struct codec_spec *d, void **s,
                         struct zerr *e) {
  return vli_create("zarrs.vlen_v2", c, d, s, e);
}

/* Nothing to free: the state is a string literal. */
static void vli_destroy(void *state) { (void)state; }

/* Little-endian u32 at p. */
static uint32_t vli_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Walk every length once to bounds-check and size the data, then copy.
 * Trailing bytes after element n-1 are ignored, as numcodecs and zarrs do. */
static int vli_parse(const char *name, const uint8_t *p, size_t size,
                     uint64_t n, const struct codec_env *env, struct abytes *a,
                     struct zerr *err) {
  if (size < 4)
    return zerr_set(err, EIO,
                    "%s: chunk of %zu bytes is too short for the 4-byte "
                    "header",
                    name, size);
  uint32_t count = vli_le32(p);
  if (count != n)
    return zerr_set(err, EIO, "%s: header says %u elements, chunk has %llu",
                    name, count, (unsigned long long)n);
  /* Each element needs at least its 4-byte length. */
  if (n > (size - 4) / 4)
    return zerr_set(err, EIO,
                    "%s: chunk of %zu bytes is too short for %llu element "
                    "lengths",
                    name, size, (unsigned long long)n);
  uint64_t obytes = (n + 1) * sizeof(uint64_t); /* n < size/4: no overflow */
  if (obytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "%s: %llu offsets exceed the decode limit of %zu bytes",
                    name, (unsigned long long)n + 1, env->max_decoded);
  uint64_t *off = malloc((size_t)obytes);
  if (!off)
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  size_t pos = 4, total = 0;
  off[0] = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (size - pos < 4) {
      free(off);
      return zerr_set(err, EIO,
                      "%s: element %llu length header runs past the end of "
                      "the chunk",
                      name, (unsigned long long)i);
    }
    uint32_t len = vli_le32(p + pos);
    pos += 4;
    if (len > size - pos) {
      free(off);
      return zerr_set(err, EIO,
                      "%s: element %llu length %u runs past the end of the "
                      "chunk",
                      name, (unsigned long long)i, len);
    }
    pos += len;
    total += len; /* total <= pos <= size */
    off[i + 1] = total;
  }
  uint8_t *data = malloc(total ? total : 1);
  if (!data) {
    free(off);
    return zerr_set(err, ENOMEM, "%s: out of memory for %zu bytes", name,
                    total);
  }
  pos = 4;
  for (uint64_t i = 0; i < n; i++) {
    size_t len = (size_t)(off[i + 1] - off[i]);
    memcpy(data + off[i], p + pos + 4, len);
    pos += 4 + len;
  }
  a->data = bytesrc_from_mem(data, total);
  if (!a->data) {
    free(off);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  a->offsets = off;
  return 0;
}

/* Load the chunk (bounded) and parse it into a compact abytes. */
static int vli_decode(const void *state, const struct codec_spec *spec,
                      struct bytesrc *in, const struct codec_env *env,
                      struct abytes **out, struct zerr *err) {
  const char *name = state;
  struct bytesrc *mem;
  int rc = bytesrc_load(in, env->max_decoded, &mem, err);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
    return rc;
  }
  struct abytes *a = abytes_alloc();
  if (!a) {
    bytesrc_unref(mem);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  a->n = spec->nelem;
  a->elsize = 0;
  rc = vli_parse(name, mem->mem, (size_t)mem->size, spec->nelem, env, a, err);
  bytesrc_unref(mem);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

const struct codec_impl codec_vlen_utf8 = {
    .name = "vlen-utf8",
    .kind = CODEC_A2B,
    .create = vli_create_utf8,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
};

const struct codec_impl codec_vlen_bytes = {
    .name = "vlen-bytes",
    .kind = CODEC_A2B,
    .create = vli_create_bytes,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
};

const struct codec_impl codec_vlen_array = {
    .name = "vlen-array",
    .kind = CODEC_A2B,
    .create = vli_create_array,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
};

static const char *const vli_v2_aliases[] = {
    "https://codec.zarrs.dev/array_to_bytes/vlen_v2", NULL};

const struct codec_impl codec_vlen_v2 = {
    .name = "zarrs.vlen_v2",
    .aliases = vli_v2_aliases,
    .kind = CODEC_A2B,
    .create = vli_create_v2,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
};
