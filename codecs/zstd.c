/* zstd.c - the `zstd` bytes->bytes codec: decompress one or more
 * concatenated Zstandard frames into memory, never past env->max_decoded.
 *
 * A frame that records its content size is decompressed straight into a
 * buffer of exactly that size (after checking it against the cap): in one
 * call, or for a large frame in steps of input with zstd writing into the
 * whole buffer (its "stable output buffer" mode, so no window copy); a
 * frame without one (streaming writers) is decompressed in steps into a
 * capped buffer. */
#include "codec.h"

#include <stdlib.h>
/* ZSTD_d_stableOutBuffer is in the experimental part of the API (stable
 * since 1.4.4; Debian's libzstd is 1.5). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

#include "../src/util/buf.h"
#include "dstream.h"

/* Validate {"level": int, "checksum": bool}; decoding needs neither. */
static int zstd_create(json_t *config, const struct codec_spec *decoded,
                       void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"level", "checksum", NULL};
  ZTRY(codec_cfg_only(config, "zstd", allowed, err));
  long long level;
  int rc = codec_cfg_int(config, "level", 0, 0, &level, err);
  if (rc < 0) {
    zerr_prefix(err, "zstd: ");
    return rc;
  }
  json_t *ck = config ? json_object_get(config, "checksum") : NULL;
  if (ck && !json_is_boolean(ck))
    return zerr_set(err, EIO,
                    "zstd: configuration key 'checksum' must be a "
                    "boolean");
  *state = NULL;
  return 0;
}

/* No state to free. */
static void zstd_destroy(void *state) { (void)state; }

/* Output per streaming step: between steps a shutdown is noticed. */
#define ZSTD_SLICE ((size_t)8 << 20)
/* Frames larger than this are streamed in slices even when their size is
 * known, so that one huge frame cannot hold up a shutdown. */
#define ZSTD_ONE_SHOT_MAX ((size_t)16 << 20)

/* One frame whose decompressed size is unknown (or large): stream it. */
static int zstd_stream_frame(ZSTD_DCtx *dctx, const uint8_t *src, size_t len,
                             struct zbuf *b, const struct codec_env *env,
                             struct zerr *err) {
  size_t r = ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  if (ZSTD_isError(r))
    return zerr_set(err, EIO, "zstd: %s", ZSTD_getErrorName(r));
  ZSTD_inBuffer zin = {src, len, 0};
  for (;;) {
    ZTRY(codec_check_stop(env, err));
    if (b->len == b->cap) {
      size_t room = b->max - b->len;
      if (room == 0)
        return zerr_set(err, EFBIG,
                        "zstd: decompressed data exceeds the decode limit of "
                        "%zu bytes",
                        b->max);
      size_t step = ZSTD_DStreamOutSize();
      ZTRY(zbuf_reserve(b, room < step ? room : step, err));
    }
    size_t out_room = b->cap - b->len;
    ZSTD_outBuffer zout = {b->data + b->len,
                           out_room < ZSTD_SLICE ? out_room : ZSTD_SLICE, 0};
    r = ZSTD_decompressStream(dctx, &zout, &zin);
    b->len += zout.pos;
    if (ZSTD_isError(r))
      return zerr_set(err, EIO, "zstd: corrupt or truncated frame (%s)",
                      ZSTD_getErrorName(r));
    if (r == 0)
      return 0; /* frame complete and flushed */
    if (zin.pos == zin.size && zout.pos < zout.size)
      return zerr_set(err, EIO, "zstd: corrupt or truncated frame");
  }
}

/* Compressed input per step of a large frame of known size: between
 * steps a shutdown is noticed (1 MiB decodes in a few milliseconds). */
#define ZSTD_IN_SLICE ((size_t)1 << 20)

/* One large frame of known size csize into b (room reserved): zstd writes
 * into the final buffer itself, fed a slice of input per call. */
static int zstd_stable_frame(ZSTD_DCtx *dctx, const uint8_t *src, size_t len,
                             size_t csize, struct zbuf *b,
                             const struct codec_env *env, struct zerr *err) {
  size_t r = ZSTD_DCtx_reset(dctx, ZSTD_reset_session_only);
  if (!ZSTD_isError(r))
    r = ZSTD_DCtx_setParameter(dctx, ZSTD_d_stableOutBuffer, 1);
  if (ZSTD_isError(r))
    return zerr_set(err, EIO, "zstd: %s", ZSTD_getErrorName(r));
  ZSTD_outBuffer zout = {b->data + b->len, csize, 0};
  ZSTD_inBuffer zin = {src, 0, 0};
  int rc = 0;
  for (;;) {
    if ((rc = codec_check_stop(env, err)) < 0)
      break;
    zin.size = len - zin.pos < ZSTD_IN_SLICE ? len : zin.pos + ZSTD_IN_SLICE;
    r = ZSTD_decompressStream(dctx, &zout, &zin);
    if (ZSTD_isError(r)) {
      rc = zerr_set(err, EIO, "zstd: corrupt or truncated frame (%s)",
                    ZSTD_getErrorName(r));
      break;
    }
    if (r == 0)
      break; /* frame complete */
    if (zin.pos == len) {
      rc = zerr_set(err, EIO, "zstd: corrupt or truncated frame");
      break;
    }
  }
  /* The context decodes other frames next, maybe without a known size. */
  ZSTD_DCtx_setParameter(dctx, ZSTD_d_stableOutBuffer, 0);
  if (rc == 0 && zout.pos != csize)
    rc = zerr_set(err, EIO, "zstd: frame decoded to %zu bytes, header says %zu",
                  zout.pos, csize);
  if (rc == 0)
    b->len += csize;
  return rc;
}

/* Walk the frames one by one. */
static int zstd_frames(ZSTD_DCtx *dctx, const uint8_t *src, size_t size,
                       struct zbuf *b, const struct codec_env *env,
                       struct zerr *err) {
  size_t pos = 0;
  while (pos < size) {
    const uint8_t *p = src + pos;
    size_t rem = size - pos;
    size_t flen = ZSTD_findFrameCompressedSize(p, rem);
    if (ZSTD_isError(flen))
      return zerr_set(err, EIO, "zstd: corrupt or truncated frame (%s)",
                      ZSTD_getErrorName(flen));
    unsigned long long csize = ZSTD_getFrameContentSize(p, flen);
    if (csize == ZSTD_CONTENTSIZE_ERROR)
      return zerr_set(err, EIO, "zstd: corrupt frame header");
    if (csize == ZSTD_CONTENTSIZE_UNKNOWN) {
      ZTRY(zstd_stream_frame(dctx, p, flen, b, env, err));
    } else if (csize > ZSTD_ONE_SHOT_MAX && csize <= b->max - b->len) {
      ZTRY(zbuf_reserve(b, (size_t)csize, err));
      ZTRY(zstd_stable_frame(dctx, p, flen, (size_t)csize, b, env, err));
    } else {
      if (csize > b->max - b->len)
        return zerr_set(err, EFBIG,
                        "zstd: frame of %llu decompressed bytes exceeds the "
                        "decode limit of %zu bytes",
                        csize, b->max);
      ZTRY(zbuf_reserve(b, (size_t)csize, err));
      /* An empty frame reserves nothing: the buffer may still be NULL,
       * and NULL + 0 is undefined (UBSan, found by fuzz_sharding). */
      uint8_t none;
      uint8_t *dst = b->data ? b->data + b->len : &none;
      size_t r = ZSTD_decompressDCtx(dctx, dst, (size_t)csize, p, flen);
      if (ZSTD_isError(r))
        return zerr_set(err, EIO, "zstd: corrupt or truncated frame (%s)",
                        ZSTD_getErrorName(r));
      if (r != csize)
        return zerr_set(err, EIO,
                        "zstd: frame decoded to %zu bytes, header says %llu", r,
                        csize);
      b->len += r;
    }
    pos += flen;
  }
  return 0;
}

/* Decompress `in` into a new memory source. */
static int zstd_decode(const void *state, struct bytesrc *in,
                       const struct codec_env *env, struct bytesrc **out,
                       struct zerr *err) {
  (void)state;
  struct bytesrc *src;
  int rc = codec_load_input(in, env, "zstd", &src, err);
  if (rc < 0)
    return rc;
  if (src->size == 0) {
    bytesrc_unref(src);
    return zerr_set(err, EIO, "zstd: corrupt or truncated frame (empty input)");
  }
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  if (!dctx) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "zstd: out of memory");
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  rc = zstd_frames(dctx, src->mem, (size_t)src->size, &b, env, err);
  ZSTD_freeDCtx(dctx);
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&b);
    return rc;
  }
  return codec_output_from_buf(&b, "zstd", out, err);
}

const struct codec_impl codec_zstd = {
    .name = "zstd",
    .kind = CODEC_B2B,
    .create = zstd_create,
    .destroy = zstd_destroy,
    .decode_bytes = zstd_decode,
    .stream = &dstream_zstd,
};
