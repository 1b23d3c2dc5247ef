/* gzip.c - the `gzip` bytes->bytes codec: inflate an RFC 1952 stream (zlib
 * streams are accepted too) into memory, never past env->max_decoded. */
#include "codec.h"

#include <limits.h>
#include <stdlib.h>
#include <zlib.h>

#include "../src/util/buf.h"
#include "dstream.h"

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

/* Inflate all of the stream into b, growing it in steps (a small stream
 * never allocates much, a bomb stops at the cap); with `members`, further
 * gzip members after the first are decoded too. */
static int inflate_loop(z_stream *zs, struct zbuf *b, const char *name,
                        int members, const struct codec_env *env,
                        struct zerr *err) {
  for (;;) {
    ZTRY(codec_check_stop(env, err));
    if (b->len == b->cap) {
      size_t room = b->max - b->len;
      if (room == 0)
        return zerr_set(err, EFBIG,
                        "%s: decompressed data exceeds the decode limit of "
                        "%zu bytes",
                        name, b->max);
      ZTRY(zbuf_reserve(b, room < 65536 ? room : 65536, err));
    }
    size_t avail = b->cap - b->len;
    zs->next_out = b->data + b->len;
    zs->avail_out = avail > UINT_MAX ? UINT_MAX : (uInt)avail;
    uInt before = zs->avail_out;
    int rc = inflate(zs, Z_NO_FLUSH);
    b->len += before - zs->avail_out;
    if (rc == Z_STREAM_END) {
      if (!members || zs->avail_in == 0)
        return 0;
      if (inflateReset(zs) != Z_OK)
        return zerr_set(err, EIO, "%s: corrupt or truncated stream", name);
      continue;
    }
    if (rc == Z_OK)
      continue;
    if (rc == Z_BUF_ERROR && zs->avail_out == 0 && zs->avail_in > 0)
      continue; /* output full: grow and go on */
    if (rc == Z_MEM_ERROR)
      return zerr_set(err, ENOMEM, "%s: out of memory", name);
    return zerr_set(err, EIO, "%s: corrupt or truncated stream", name);
  }
}

/* zlib's allocator: ours, so that tests/unit/allocfail.c sees (and can fail)
 * zlib's allocations too. */
static voidpf gzip_zalloc(voidpf opaque, uInt items, uInt size) {
  (void)opaque;
  return calloc(items, size);
}

/* zlib's free. */
static void gzip_zfree(voidpf opaque, voidpf p) {
  (void)opaque;
  free(p);
}

/* Load `in` and inflate it into a new memory source (see codec.h). */
int codec_inflate(struct bytesrc *in, const struct codec_env *env,
                  const char *name, int wbits, int members,
                  struct bytesrc **out, struct zerr *err) {
  struct bytesrc *src;
  int rc = codec_load_input(in, env, name, &src, err);
  if (rc < 0)
    return rc;
  if (src->size == 0) {
    bytesrc_unref(src);
    return zerr_set(err, EIO, "%s: corrupt or truncated stream", name);
  }
  if (src->size > UINT_MAX) {
    unsigned long long sz = src->size;
    bytesrc_unref(src);
    return zerr_set(err, EFBIG,
                    "%s: compressed chunk of %llu bytes is too "
                    "large",
                    name, sz);
  }
  z_stream zs = {0};
  zs.next_in = (Bytef *)src->mem;
  zs.avail_in = (uInt)src->size;
  zs.zalloc = gzip_zalloc;
  zs.zfree = gzip_zfree;
  if (inflateInit2(&zs, wbits) != Z_OK) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "%s: cannot initialise zlib", name);
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  rc = inflate_loop(&zs, &b, name, members, env, err);
  inflateEnd(&zs);
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&b);
    return rc;
  }
  return codec_output_from_buf(&b, name, out, err);
}

/* Inflate `in`; 15 + 32 auto-detects a gzip or zlib header, and further
 * gzip members are decoded too (as gzip.decompress does). */
static int gzip_decode(const void *state, struct bytesrc *in,
                       const struct codec_env *env, struct bytesrc **out,
                       struct zerr *err) {
  (void)state;
  return codec_inflate(in, env, "gzip", 15 + 32, 1, out, err);
}

const struct codec_impl codec_gzip = {
    .name = "gzip",
    .kind = CODEC_B2B,
    .create = gzip_create,
    .destroy = gzip_destroy,
    .decode_bytes = gzip_decode,
    .stream = &dstream_gzip,
};
