/* blosc.c - the `blosc` bytes->bytes codec (alias `numcodecs.blosc`):
 * decompress one c-blosc 1.x frame into memory, never past
 * env->max_decoded.
 *
 * The 16-byte frame header records the compressor, the shuffle mode, the
 * type size and the decompressed length, so decoding needs nothing from the
 * configuration; create only checks that it is well formed. The frame is
 * validated (blosc_cbuffer_validate) before a single output byte is
 * allocated, and decompression runs with blosc_decompress_ctx, which keeps
 * no global state and is safe to call from many threads at once. */
#include "codec.h"

#include <blosc.h>
#include <stdlib.h>
#include <string.h>

#include "../src/buf.h"

static const char *const zblosc_aliases[] = {"numcodecs.blosc", NULL};

/* Check "shuffle": a V3 string or a numcodecs integer (-1 auto .. 2). */
static int zblosc_check_shuffle(json_t *config, struct zerr *err) {
  json_t *v = config ? json_object_get(config, "shuffle") : NULL;
  if (!v)
    return 0;
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    if (!strcmp(s, "noshuffle") || !strcmp(s, "shuffle") ||
        !strcmp(s, "bitshuffle"))
      return 0;
    return zerr_set(err, EIO, "blosc: unknown shuffle mode '%s'", s);
  }
  if (json_is_integer(v)) {
    json_int_t i = json_integer_value(v);
    if (i >= -1 && i <= 2)
      return 0;
    return zerr_set(err, EIO, "blosc: unknown shuffle mode %lld", (long long)i);
  }
  return zerr_set(err, EIO,
                  "blosc: configuration key 'shuffle' must be a string or "
                  "an integer");
}

/* Validate {"cname", "clevel", "shuffle", "typesize", "blocksize"}; all
 * optional, since the frame header drives decoding. */
static int zblosc_create(json_t *config, const struct codec_spec *decoded,
                         void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"cname",    "clevel",    "shuffle",
                                        "typesize", "blocksize", NULL};
  ZTRY(codec_cfg_only(config, "blosc", allowed, err));
  const char *cname;
  long long clevel, typesize, blocksize;
  int rc = codec_cfg_str(config, "cname", 0, "lz4", &cname, err);
  if (rc == 0)
    rc = codec_cfg_int(config, "clevel", 0, 5, &clevel, err);
  if (rc == 0)
    rc = codec_cfg_int(config, "typesize", 0, 1, &typesize, err);
  if (rc == 0)
    rc = codec_cfg_int(config, "blocksize", 0, 0, &blocksize, err);
  if (rc < 0) {
    zerr_prefix(err, "blosc: ");
    return rc;
  }
  if (clevel < 0 || clevel > 9)
    return zerr_set(err, EIO, "blosc: clevel %lld is outside 0..9", clevel);
  if (typesize < 0 || blocksize < 0)
    return zerr_set(err, EIO,
                    "blosc: typesize and blocksize must not be "
                    "negative");
  ZTRY(zblosc_check_shuffle(config, err));
  *state = NULL;
  return 0;
}

/* No state to free. */
static void zblosc_destroy(void *state) { (void)state; }

/* Decompress `in` into a new memory source. */
static int zblosc_decode(const void *state, struct bytesrc *in,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  (void)state;
  struct bytesrc *src;
  int rc = codec_load_input(in, env, "blosc", &src, err);
  if (rc < 0)
    return rc;
  size_t csize = (size_t)src->size;
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (csize < BLOSC_MIN_HEADER_LENGTH ||
      blosc_cbuffer_validate(src->mem, csize, &nbytes) < 0) {
    bytesrc_unref(src);
    return zerr_set(err, EIO, "blosc: corrupt header");
  }
  blosc_cbuffer_sizes(src->mem, &nbytes, &cbytes, &blocksize);
  if (cbytes != csize) {
    bytesrc_unref(src);
    return zerr_set(err, EIO,
                    "blosc: corrupt header (frame of %zu bytes in a chunk of "
                    "%zu bytes)",
                    cbytes, csize);
  }
  if (nbytes > env->max_decoded) {
    bytesrc_unref(src);
    return zerr_set(err, EFBIG,
                    "blosc: frame of %zu decompressed bytes exceeds the "
                    "decode limit of %zu bytes",
                    nbytes, env->max_decoded);
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  if (nbytes > 0) {
    rc = zbuf_reserve(&b, nbytes, err);
    if (rc < 0) {
      bytesrc_unref(src);
      zbuf_free(&b);
      return rc;
    }
    int n = blosc_decompress_ctx(src->mem, b.data, nbytes, 1);
    if (n < 0 || (size_t)n != nbytes) {
      bytesrc_unref(src);
      zbuf_free(&b);
      return zerr_set(err, EIO,
                      "blosc: corrupt or truncated frame (decompression "
                      "returned %d)",
                      n);
    }
    b.len = nbytes;
  }
  bytesrc_unref(src);
  return codec_output_from_buf(&b, "blosc", out, err);
}

const struct codec_impl codec_blosc = {
    .name = "blosc",
    .aliases = zblosc_aliases,
    .kind = CODEC_B2B,
    .create = zblosc_create,
    .destroy = zblosc_destroy,
    .decode_bytes = zblosc_decode,
};
