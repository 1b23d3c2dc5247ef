/* gzip.c - the `gzip` bytes->bytes codec: inflate an RFC 1952 stream (zlib
 * streams are accepted too) into memory, never past env->max_decoded. */
#include "codec.h"

#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

#include "../src/buf.h"

/* Validate {"level": int}; decoding needs nothing from it. */
static int gzip_create(json_t *config, const struct codec_spec *decoded,
                       void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"level", NULL};
  ZTRY(codec_cfg_only(config, "gzip", allowed, err));
  long long level;
  int rc = codec_cfg_int(config, "level", 0, 0, &level, err);
  if (rc < 0) {
    zerr_prefix(err, "gzip: ");
    return rc;
  }
  *state = NULL;
  return 0;
}

/* No state to free. */
static void gzip_destroy(void *state) { (void)state; }

/* Grow the output in steps: a small stream never allocates much, a bomb
 * stops at the cap. */
static int gzip_inflate(z_stream *zs, struct zbuf *b, struct zerr *err) {
  for (;;) {
    if (b->len == b->cap) {
      size_t room = b->max - b->len;
      if (room == 0)
        return zerr_set(err, EFBIG,
                        "gzip: decompressed data exceeds the decode limit of "
                        "%zu bytes",
                        b->max);
      ZTRY(zbuf_reserve(b, room < 65536 ? room : 65536, err));
    }
    size_t avail = b->cap - b->len;
    zs->next_out = b->data + b->len;
    zs->avail_out = avail > UINT_MAX ? UINT_MAX : (uInt)avail;
    uInt before = zs->avail_out;
    int rc = inflate(zs, Z_NO_FLUSH);
    b->len += before - zs->avail_out;
    if (rc == Z_STREAM_END) {
      if (zs->avail_in == 0)
        return 0;
      /* Another gzip member follows (gzip.decompress accepts these). */
      if (inflateReset(zs) != Z_OK)
        return zerr_set(err, EIO, "gzip: corrupt or truncated stream");
      continue;
    }
    if (rc == Z_OK)
      continue;
    if (rc == Z_BUF_ERROR && zs->avail_out == 0 && zs->avail_in > 0)
      continue; /* output full: grow and go on */
    if (rc == Z_MEM_ERROR)
      return zerr_set(err, ENOMEM, "gzip: out of memory");
    return zerr_set(err, EIO, "gzip: corrupt or truncated stream");
  }
}

/* Inflate `in` into a new memory source. */
static int gzip_decode(const void *state, struct bytesrc *in,
                       const struct codec_env *env, struct bytesrc **out,
                       struct zerr *err) {
  (void)state;
  struct bytesrc *src;
  int rc = codec_load_input(in, env, "gzip", &src, err);
  if (rc < 0)
    return rc;
  if (src->size == 0) {
    bytesrc_unref(src);
    return zerr_set(err, EIO, "gzip: corrupt or truncated stream");
  }
  if (src->size > UINT_MAX) {
    bytesrc_unref(src);
    return zerr_set(err, EFBIG,
                    "gzip: compressed chunk of %llu bytes is too "
                    "large",
                    (unsigned long long)src->size);
  }
  z_stream zs = {0};
  zs.next_in = (Bytef *)src->mem;
  zs.avail_in = (uInt)src->size;
  /* 15 + 32: auto-detect the gzip or zlib header. */
  if (inflateInit2(&zs, 15 + 32) != Z_OK) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "gzip: cannot initialise zlib");
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  rc = gzip_inflate(&zs, &b, err);
  inflateEnd(&zs);
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&b);
    return rc;
  }
  return codec_output_from_buf(&b, "gzip", out, err);
}

const struct codec_impl codec_gzip = {
    .name = "gzip",
    .kind = CODEC_B2B,
    .create = gzip_create,
    .destroy = gzip_destroy,
    .decode_bytes = gzip_decode,
};
