/* numcodecs.c - the numcodecs bytes->bytes codecs zarr-python and zarrs
 * write under `numcodecs.<id>` names: zlib, gzip, zstd, bz2, lz4, shuffle,
 * and the adler32, crc32, crc32c and fletcher32 checksums.
 *
 * Byte formats are numcodecs' (src/numcodecs/, the .py and .pyx files):
 *   zlib   a zlib stream (RFC 1950);
 *   gzip   one or more gzip members (RFC 1952);
 *   zstd   Zstandard frames, decoded by the `zstd` codec;
 *   bz2    one or more bzip2 streams;
 *   lz4    4-byte little-endian decompressed size, then a raw LZ4 block;
 *   shuffle  byte planes of `elementsize`-byte elements;
 *   adler32, crc32  a 4-byte little-endian checksum of the payload at the
 *          start (default) or end (`location`);
 *   crc32c the same with CRC-32C, at the end by default;
 *   fletcher32  a 4-byte little-endian Fletcher-32 at the end.
 * Every decompressor writes into a buffer capped at env->max_decoded.
 * Checksum codecs return the payload as a window onto the loaded chunk.
 * bz2 and lz4 need their libraries: without one (configure --without-bz2,
 * --without-lz4) its codec's name alone remains, refused by chain_build. */
#include "config.h"

#include "codec.h"

#if ZFS_WITH_BZ2
#include <bzlib.h>
#endif
#include <limits.h>
#if ZFS_WITH_LZ4
#include <lz4.h>
#endif
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "../src/util/buf.h"

extern const struct codec_impl codec_zstd;
extern const struct codec_impl codec_crc32c;

/* Parsed configuration of the codecs that have one that matters. */
struct nc_state {
  int at_end;         /* checksum codecs: checksum after the payload */
  size_t elementsize; /* shuffle */
};

/* Little-endian 32-bit word at p. */
static uint32_t nc_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Accept only `allowed` keys and an optional integer "level". */
static int nc_create_level(json_t *config, const char *name,
                           const char *const *allowed, void **state,
                           struct zerr *err) {
  ZTRY(codec_cfg_only(config, name, allowed, err));
  long long level;
  int rc = codec_cfg_int(config, "level", 0, 0, &level, err);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
    return rc;
  }
  *state = NULL;
  return 0;
}

/* No state, or a malloc'd struct nc_state. */
static void nc_destroy(void *state) { free(state); }

/* ---- zlib and gzip ---- */

/* numcodecs.zlib: {"level": int}. */
static int nczlib_create(json_t *config, const struct codec_spec *decoded,
                         void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"level", NULL};
  return nc_create_level(config, "numcodecs.zlib", allowed, state, err);
}

/* Inflate a zlib stream (windowBits 15, as zlib.decompress). */
static int nczlib_decode(const void *state, struct bytesrc *in,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  (void)state;
  return codec_inflate(in, env, "numcodecs.zlib", 15, 0, out, err);
}

/* numcodecs.gzip: {"level": int}. */
static int ncgzip_create(json_t *config, const struct codec_spec *decoded,
                         void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"level", NULL};
  return nc_create_level(config, "numcodecs.gzip", allowed, state, err);
}

/* Inflate gzip members (windowBits 15 + 16: gzip wrapper only). */
static int ncgzip_decode(const void *state, struct bytesrc *in,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  (void)state;
  return codec_inflate(in, env, "numcodecs.gzip", 15 + 16, 1, out, err);
}

/* ---- zstd: the `zstd` codec under its numcodecs name ---- */

/* Same configuration as `zstd` ({"level", "checksum"}). */
static int nczstd_create(json_t *config, const struct codec_spec *decoded,
                         void **state, struct zerr *err) {
  return codec_zstd.create(config, decoded, state, err);
}

/* Release through the zstd codec. */
static void nczstd_destroy(void *state) { codec_zstd.destroy(state); }

/* Decode through the zstd codec. */
static int nczstd_decode(const void *state, struct bytesrc *in,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  return codec_zstd.decode_bytes(state, in, env, out, err);
}

/* ---- bz2 ---- */
#if ZFS_WITH_BZ2

/* numcodecs.bz2: {"level": int}. */
static int ncbz2_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"level", NULL};
  return nc_create_level(config, "numcodecs.bz2", allowed, state, err);
}

/* Decompress every bzip2 stream in src into b (bz2.decompress accepts
 * concatenated streams). */
static int ncbz2_loop(const uint8_t *src, size_t len, struct zbuf *b,
                      const struct codec_env *env, struct zerr *err) {
  size_t pos = 0;
  while (pos < len) {
    bz_stream bs;
    memset(&bs, 0, sizeof bs);
    int rc = BZ2_bzDecompressInit(&bs, 0, 0);
    if (rc != BZ_OK)
      return zerr_set(err, rc == BZ_MEM_ERROR ? ENOMEM : EIO,
                      "numcodecs.bz2: cannot initialise libbz2");
    bs.next_in = (char *)(src + pos);
    bs.avail_in = (unsigned)(len - pos);
    for (;;) {
      if ((rc = codec_check_stop(env, err)) < 0) {
        BZ2_bzDecompressEnd(&bs);
        return rc;
      }
      if (b->len == b->cap) {
        size_t room = b->max - b->len;
        if (room == 0) {
          BZ2_bzDecompressEnd(&bs);
          return zerr_set(err, EFBIG,
                          "numcodecs.bz2: decompressed data exceeds the "
                          "decode limit of %zu bytes",
                          b->max);
        }
        rc = zbuf_reserve(b, room < 65536 ? room : 65536, err);
        if (rc < 0) {
          BZ2_bzDecompressEnd(&bs);
          return rc;
        }
      }
      size_t avail = b->cap - b->len;
      bs.next_out = (char *)(b->data + b->len);
      bs.avail_out = avail > UINT_MAX ? UINT_MAX : (unsigned)avail;
      unsigned before = bs.avail_out;
      rc = BZ2_bzDecompress(&bs);
      b->len += before - bs.avail_out;
      if (rc == BZ_STREAM_END)
        break;
      if (rc == BZ_OK) {
        /* All input consumed, room left, no end of stream: truncated. */
        if (bs.avail_in == 0 && bs.avail_out > 0) {
          BZ2_bzDecompressEnd(&bs);
          return zerr_set(err, EIO,
                          "numcodecs.bz2: corrupt or truncated stream");
        }
        continue;
      }
      BZ2_bzDecompressEnd(&bs);
      if (rc == BZ_MEM_ERROR)
        return zerr_set(err, ENOMEM, "numcodecs.bz2: out of memory");
      return zerr_set(err, EIO, "numcodecs.bz2: corrupt or truncated stream");
    }
    pos = len - bs.avail_in;
    BZ2_bzDecompressEnd(&bs);
  }
  return 0;
}

/* Decompress `in` into a new memory source. */
static int ncbz2_decode(const void *state, struct bytesrc *in,
                        const struct codec_env *env, struct bytesrc **out,
                        struct zerr *err) {
  (void)state;
  struct bytesrc *src;
  int rc = codec_load_input(in, env, "numcodecs.bz2", &src, err);
  if (rc < 0)
    return rc;
  if (src->size == 0) {
    bytesrc_unref(src);
    return zerr_set(err, EIO, "numcodecs.bz2: corrupt or truncated stream");
  }
  if (src->size > UINT_MAX) {
    unsigned long long sz = src->size;
    bytesrc_unref(src);
    return zerr_set(err, EFBIG,
                    "numcodecs.bz2: compressed chunk of %llu bytes is too "
                    "large",
                    sz);
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  rc = ncbz2_loop(src->mem, (size_t)src->size, &b, env, err);
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&b);
    return rc;
  }
  return codec_output_from_buf(&b, "numcodecs.bz2", out, err);
}
#endif /* ZFS_WITH_BZ2 */

/* ---- lz4 ---- */
#if ZFS_WITH_LZ4

/* numcodecs.lz4: {"acceleration": int}. */
static int nclz4_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"acceleration", NULL};
  ZTRY(codec_cfg_only(config, "numcodecs.lz4", allowed, err));
  long long acc;
  int rc = codec_cfg_int(config, "acceleration", 0, 1, &acc, err);
  if (rc < 0) {
    zerr_prefix(err, "numcodecs.lz4: ");
    return rc;
  }
  *state = NULL;
  return 0;
}

/* Read the 4-byte size, then decompress the raw block into exactly that
 * many bytes. */
static int nclz4_decode(const void *state, struct bytesrc *in,
                        const struct codec_env *env, struct bytesrc **out,
                        struct zerr *err) {
  (void)state;
  struct bytesrc *src;
  int rc = codec_load_input(in, env, "numcodecs.lz4", &src, err);
  if (rc < 0)
    return rc;
  if (src->size < 4) {
    unsigned long long sz = src->size;
    bytesrc_unref(src);
    return zerr_set(err, EIO,
                    "numcodecs.lz4: chunk of %llu bytes is shorter than the "
                    "4-byte size header",
                    sz);
  }
  uint32_t n = nc_le32(src->mem);
  size_t clen = (size_t)src->size - 4;
  if (n > env->max_decoded || n > INT_MAX) {
    bytesrc_unref(src);
    return zerr_set(err, EFBIG,
                    "numcodecs.lz4: block of %u decompressed bytes exceeds "
                    "the decode limit of %zu bytes",
                    n, env->max_decoded);
  }
  if (clen > INT_MAX) {
    bytesrc_unref(src);
    return zerr_set(err, EFBIG, "numcodecs.lz4: compressed chunk is too large");
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  if (n > 0) {
    rc = zbuf_reserve(&b, n, err);
    if (rc < 0) {
      bytesrc_unref(src);
      zbuf_free(&b);
      return rc;
    }
    int r = LZ4_decompress_safe((const char *)src->mem + 4, (char *)b.data,
                                (int)clen, (int)n);
    if (r < 0 || (uint32_t)r != n) {
      bytesrc_unref(src);
      zbuf_free(&b);
      return zerr_set(err, EIO,
                      "numcodecs.lz4: corrupt or truncated block (%d of %u "
                      "bytes decoded)",
                      r, n);
    }
    b.len = n;
  }
  bytesrc_unref(src);
  return codec_output_from_buf(&b, "numcodecs.lz4", out, err);
}
#endif /* ZFS_WITH_LZ4 */

/* ---- shuffle ---- */

/* numcodecs.shuffle: {"elementsize": int >= 1} (numcodecs default 4). */
static int ncshuffle_create(json_t *config, const struct codec_spec *decoded,
                            void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {"elementsize", NULL};
  ZTRY(codec_cfg_only(config, "numcodecs.shuffle", allowed, err));
  long long es;
  int rc = codec_cfg_int(config, "elementsize", 0, 4, &es, err);
  if (rc < 0) {
    zerr_prefix(err, "numcodecs.shuffle: ");
    return rc;
  }
  if (es < 1 || es > (1 << 20))
    return zerr_set(err, EIO,
                    "numcodecs.shuffle: elementsize %lld is outside "
                    "1..1048576",
                    es);
  struct nc_state *s = calloc(1, sizeof *s);
  if (!s)
    return zerr_set(err, ENOMEM, "numcodecs.shuffle: out of memory");
  s->elementsize = (size_t)es;
  *state = s;
  return 0;
}

/* Elements of es bytes from their count-byte planes at s into d: byte k
 * of element j was stored at k * count + j. */
static void unshuffle_any(const uint8_t *s, size_t count, size_t es,
                          uint8_t *d) {
  for (size_t k = 0; k < es; k++) {
    const uint8_t *plane = s + k * count;
    for (size_t j = 0; j < count; j++)
      d[j * es + k] = plane[j];
  }
}

/* unshuffle_any for 4-byte elements (float32, int32: the common case, a
 * netCDF variable's shuffle filter): 16 elements at a time by byte and
 * word interleaves where SSE2 is, the rest one by one. */
static void unshuffle4(const uint8_t *s, size_t count, uint8_t *d) {
  const uint8_t *p0 = s, *p1 = s + count, *p2 = s + 2 * count,
                *p3 = s + 3 * count;
  size_t j = 0;
#ifdef __SSE2__
  for (; j + 16 <= count; j += 16) {
    __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(p0 + j));
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p1 + j));
    __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(p2 + j));
    __m128i e = _mm_loadu_si128((const __m128i *)(const void *)(p3 + j));
    __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
    __m128i ce0 = _mm_unpacklo_epi8(c, e), ce1 = _mm_unpackhi_epi8(c, e);
    __m128i *o = (__m128i *)(void *)(d + 4 * j);
    _mm_storeu_si128(o, _mm_unpacklo_epi16(ab0, ce0));
    _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(ab0, ce0));
    _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(ab1, ce1));
    _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(ab1, ce1));
  }
#endif
  for (; j < count; j++) {
    d[4 * j] = p0[j];
    d[4 * j + 1] = p1[j];
    d[4 * j + 2] = p2[j];
    d[4 * j + 3] = p3[j];
  }
}

/* unshuffle_any for 8-byte elements (float64, int64): two passes of the
 * 4-byte interleave, 16 elements at a time where SSE2 is. */
static void unshuffle8(const uint8_t *s, size_t count, uint8_t *d) {
  size_t j = 0;
#ifdef __SSE2__
  const uint8_t *p[8];
  for (int k = 0; k < 8; k++)
    p[k] = s + (size_t)k * count;
  for (; j + 16 <= count; j += 16) {
    __m128i v[8];
    for (int k = 0; k < 8; k++)
      v[k] = _mm_loadu_si128((const __m128i *)(const void *)(p[k] + j));
    /* bytes 0-1, 2-3, 4-5, 6-7 paired, then words, then dwords */
    __m128i b0[8], b1[8];
    for (int k = 0; k < 4; k++) {
      b0[2 * k] = _mm_unpacklo_epi8(v[2 * k], v[2 * k + 1]);
      b0[2 * k + 1] = _mm_unpackhi_epi8(v[2 * k], v[2 * k + 1]);
    }
    for (int h = 0; h < 2; h++) { /* elements 0-7, then 8-15 */
      __m128i w01 = _mm_unpacklo_epi16(b0[h], b0[2 + h]);
      __m128i w23 = _mm_unpackhi_epi16(b0[h], b0[2 + h]);
      __m128i w45 = _mm_unpacklo_epi16(b0[4 + h], b0[6 + h]);
      __m128i w67 = _mm_unpackhi_epi16(b0[4 + h], b0[6 + h]);
      b1[4 * h] = _mm_unpacklo_epi32(w01, w45);
      b1[4 * h + 1] = _mm_unpackhi_epi32(w01, w45);
      b1[4 * h + 2] = _mm_unpacklo_epi32(w23, w67);
      b1[4 * h + 3] = _mm_unpackhi_epi32(w23, w67);
    }
    __m128i *o = (__m128i *)(void *)(d + 8 * j);
    for (int k = 0; k < 8; k++)
      _mm_storeu_si128(o + k, b1[k]);
  }
#endif
  if (j < count) {
    for (size_t k = 0; k < 8; k++) {
      const uint8_t *plane = s + k * count;
      for (size_t i = j; i < count; i++)
        d[i * 8 + k] = plane[i];
    }
  }
}

/* Undo the byte shuffle: byte k of element j was stored at k*count + j.
 * Bytes past the last whole element were stored as they are. */
static int ncshuffle_decode(const void *state, struct bytesrc *in,
                            const struct codec_env *env, struct bytesrc **out,
                            struct zerr *err) {
  const struct nc_state *st = state;
  size_t es = st->elementsize;
  struct bytesrc *src;
  int rc = codec_load_input(in, env, "numcodecs.shuffle", &src, err);
  if (rc < 0)
    return rc;
  size_t len = (size_t)src->size;
  if (es == 1 || len < es) {
    *out = src; /* nothing to undo */
    return 0;
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  rc = zbuf_reserve(&b, len, err);
  if (rc < 0) {
    bytesrc_unref(src);
    zbuf_free(&b);
    return rc;
  }
  size_t count = len / es;
  const uint8_t *s = src->mem;
  uint8_t *d = b.data;
  if (es == 4)
    unshuffle4(s, count, d);
  else if (es == 8)
    unshuffle8(s, count, d);
  else
    unshuffle_any(s, count, es, d);
  memcpy(d + count * es, s + count * es, len - count * es);
  b.len = len;
  bytesrc_unref(src);
  return codec_output_from_buf(&b, "numcodecs.shuffle", out, err);
}

/* ---- checksums ---- */

/* Parse {"location": "start"|"end"} with the given default. */
static int nc_create_location(json_t *config, const char *name, int def_end,
                              void **state, struct zerr *err) {
  static const char *const allowed[] = {"location", NULL};
  ZTRY(codec_cfg_only(config, name, allowed, err));
  const char *loc;
  int rc = codec_cfg_str(config, "location", 0, def_end ? "end" : "start", &loc,
                         err);
  if (rc < 0) {
    zerr_prefix(err, "%s: ", name);
    return rc;
  }
  int at_end;
  if (!strcmp(loc, "start"))
    at_end = 0;
  else if (!strcmp(loc, "end"))
    at_end = 1;
  else
    return zerr_set(err, EIO,
                    "%s: location must be \"start\" or \"end\", not '%s'", name,
                    loc);
  struct nc_state *s = calloc(1, sizeof *s);
  if (!s)
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  s->at_end = at_end;
  *state = s;
  return 0;
}

/* Which checksum a codec computes. */
enum nc_sum { NC_ADLER32, NC_CRC32, NC_FLETCHER32 };

/* Fletcher-32 over big-endian 16-bit words, as numcodecs' _fletcher32
 * (HDF5/netCDF). An odd trailing byte is summed as the high byte of a
 * final word only when `odd_byte` is set: numcodecs does so, zarrs does not
 * (it tests the remaining word count, always 0, instead of the length). */
static uint32_t nc_fletcher32(const uint8_t *p, size_t len, int odd_byte) {
  uint32_t sum1 = 0, sum2 = 0;
  size_t words = len / 2;
  while (words) {
    size_t t = words < 360 ? words : 360;
    words -= t;
    while (t--) {
      sum1 += (uint32_t)p[0] << 8 | p[1];
      p += 2;
      sum2 += sum1;
    }
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  if ((len & 1) && odd_byte) {
    sum1 += (uint32_t)p[0] << 8;
    sum2 += sum1;
    sum1 = (sum1 & 0xffff) + (sum1 >> 16);
    sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  }
  sum1 = (sum1 & 0xffff) + (sum1 >> 16);
  sum2 = (sum2 & 0xffff) + (sum2 >> 16);
  return sum2 << 16 | sum1;
}

/* Verify a 4-byte little-endian checksum at the start or end of `in` and
 * return the payload window. */
static int nc_checksum_decode(struct bytesrc *in, const struct codec_env *env,
                              const char *name, enum nc_sum kind, int at_end,
                              struct bytesrc **out, struct zerr *err) {
  struct bytesrc *src;
  int rc = codec_load_input(in, env, name, &src, err);
  if (rc < 0)
    return rc;
  if (src->size < 4) {
    unsigned long long sz = src->size;
    bytesrc_unref(src);
    return zerr_set(err, EIO,
                    "%s: chunk of %llu bytes is shorter than the 4-byte "
                    "checksum",
                    name, sz);
  }
  size_t n = (size_t)src->size - 4;
  size_t off = at_end ? 0 : 4;
  const uint8_t *payload = src->mem + off;
  uint32_t stored = nc_le32(at_end ? src->mem + n : src->mem);
  uint32_t computed;
  int ok;
  if (kind == NC_FLETCHER32) {
    /* Accept both variants: they differ only for odd lengths, where
     * zarrs-written chunks match the zarrs one and numcodecs-written
     * chunks the numcodecs one (zarrs-vlen.md section 6 item 10). */
    computed = nc_fletcher32(payload, n, 0);
    ok = stored == computed;
    if (!ok && (n & 1)) {
      computed = nc_fletcher32(payload, n, 1);
      ok = stored == computed;
    }
  } else {
    /* zlib's running checksums take uInt lengths: feed them in pieces. */
    uLong c =
        kind == NC_ADLER32 ? adler32(0L, Z_NULL, 0) : crc32(0L, Z_NULL, 0);
    const uint8_t *p = payload;
    size_t left = n;
    while (left) {
      uInt step = left > 0x40000000u ? 0x40000000u : (uInt)left;
      c = kind == NC_ADLER32 ? adler32(c, p, step) : crc32(c, p, step);
      p += step;
      left -= step;
    }
    computed = (uint32_t)c;
    ok = stored == computed;
  }
  if (!ok) {
    bytesrc_unref(src);
    return zerr_set(err, EIO,
                    "%s: checksum mismatch (stored %08x, computed %08x)", name,
                    stored, computed);
  }
  rc = bytesrc_sub(src, off, n, out, err);
  bytesrc_unref(src);
  return rc;
}

/* numcodecs.adler32: {"location"}, default "start". */
static int ncadler32_create(json_t *config, const struct codec_spec *decoded,
                            void **state, struct zerr *err) {
  (void)decoded;
  return nc_create_location(config, "numcodecs.adler32", 0, state, err);
}

/* Verify and strip the Adler-32. */
static int ncadler32_decode(const void *state, struct bytesrc *in,
                            const struct codec_env *env, struct bytesrc **out,
                            struct zerr *err) {
  const struct nc_state *st = state;
  return nc_checksum_decode(in, env, "numcodecs.adler32", NC_ADLER32,
                            st->at_end, out, err);
}

/* numcodecs.crc32: {"location"}, default "start". */
static int nccrc32_create(json_t *config, const struct codec_spec *decoded,
                          void **state, struct zerr *err) {
  (void)decoded;
  return nc_create_location(config, "numcodecs.crc32", 0, state, err);
}

/* Verify and strip the zlib CRC-32. */
static int nccrc32_decode(const void *state, struct bytesrc *in,
                          const struct codec_env *env, struct bytesrc **out,
                          struct zerr *err) {
  const struct nc_state *st = state;
  return nc_checksum_decode(in, env, "numcodecs.crc32", NC_CRC32, st->at_end,
                            out, err);
}

/* numcodecs.fletcher32: no configuration. */
static int ncfletcher32_create(json_t *config, const struct codec_spec *decoded,
                               void **state, struct zerr *err) {
  (void)decoded;
  static const char *const allowed[] = {NULL};
  ZTRY(codec_cfg_only(config, "numcodecs.fletcher32", allowed, err));
  *state = NULL;
  return 0;
}

/* Verify and strip the trailing Fletcher-32. */
static int ncfletcher32_decode(const void *state, struct bytesrc *in,
                               const struct codec_env *env,
                               struct bytesrc **out, struct zerr *err) {
  (void)state;
  return nc_checksum_decode(in, env, "numcodecs.fletcher32", NC_FLETCHER32, 1,
                            out, err);
}

/* numcodecs.crc32c: {"location"}, default "end". */
static int nccrc32c_create(json_t *config, const struct codec_spec *decoded,
                           void **state, struct zerr *err) {
  (void)decoded;
  return nc_create_location(config, "numcodecs.crc32c", 1, state, err);
}

/* At the end this is exactly `crc32c`; at the start, move the checksum to
 * the end in a copy and let `crc32c` verify it. */
static int nccrc32c_decode(const void *state, struct bytesrc *in,
                           const struct codec_env *env, struct bytesrc **out,
                           struct zerr *err) {
  const struct nc_state *st = state;
  int rc;
  if (st->at_end) {
    rc = codec_crc32c.decode_bytes(NULL, in, env, out, err);
    if (rc < 0)
      zerr_prefix(err, "numcodecs.");
    return rc;
  }
  struct bytesrc *src;
  rc = codec_load_input(in, env, "numcodecs.crc32c", &src, err);
  if (rc < 0)
    return rc;
  if (src->size < 4) {
    unsigned long long sz = src->size;
    bytesrc_unref(src);
    return zerr_set(err, EIO,
                    "numcodecs.crc32c: chunk of %llu bytes is shorter than "
                    "the 4-byte checksum",
                    sz);
  }
  size_t len = (size_t)src->size;
  uint8_t *m = malloc(len);
  if (!m) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "numcodecs.crc32c: out of memory");
  }
  memcpy(m, src->mem + 4, len - 4);
  memcpy(m + len - 4, src->mem, 4);
  bytesrc_unref(src);
  struct bytesrc *moved = bytesrc_from_mem(m, len);
  if (!moved) {
    free(m);
    return zerr_set(err, ENOMEM, "numcodecs.crc32c: out of memory");
  }
  rc = codec_crc32c.decode_bytes(NULL, moved, env, out, err);
  bytesrc_unref(moved);
  if (rc < 0)
    zerr_prefix(err, "numcodecs.");
  return rc;
}

const struct codec_impl codec_numcodecs_zlib = {
    .name = "numcodecs.zlib",
    .kind = CODEC_B2B,
    .create = nczlib_create,
    .destroy = nc_destroy,
    .decode_bytes = nczlib_decode,
};

const struct codec_impl codec_numcodecs_gzip = {
    .name = "numcodecs.gzip",
    .kind = CODEC_B2B,
    .create = ncgzip_create,
    .destroy = nc_destroy,
    .decode_bytes = ncgzip_decode,
};

const struct codec_impl codec_numcodecs_zstd = {
    .name = "numcodecs.zstd",
    .kind = CODEC_B2B,
    .create = nczstd_create,
    .destroy = nczstd_destroy,
    .decode_bytes = nczstd_decode,
};

#if ZFS_WITH_BZ2
const struct codec_impl codec_numcodecs_bz2 = {
    .name = "numcodecs.bz2",
    .kind = CODEC_B2B,
    .create = ncbz2_create,
    .destroy = nc_destroy,
    .decode_bytes = ncbz2_decode,
};
#else
const struct codec_impl codec_numcodecs_bz2 =
    CODEC_BUILT_WITHOUT("numcodecs.bz2", NULL, CODEC_B2B, "bz2");
#endif

#if ZFS_WITH_LZ4
const struct codec_impl codec_numcodecs_lz4 = {
    .name = "numcodecs.lz4",
    .kind = CODEC_B2B,
    .create = nclz4_create,
    .destroy = nc_destroy,
    .decode_bytes = nclz4_decode,
};
#else
const struct codec_impl codec_numcodecs_lz4 =
    CODEC_BUILT_WITHOUT("numcodecs.lz4", NULL, CODEC_B2B, "lz4");
#endif

const struct codec_impl codec_numcodecs_shuffle = {
    .name = "numcodecs.shuffle",
    .kind = CODEC_B2B,
    .create = ncshuffle_create,
    .destroy = nc_destroy,
    .decode_bytes = ncshuffle_decode,
};

const struct codec_impl codec_numcodecs_adler32 = {
    .name = "numcodecs.adler32",
    .kind = CODEC_B2B,
    .create = ncadler32_create,
    .destroy = nc_destroy,
    .decode_bytes = ncadler32_decode,
};

const struct codec_impl codec_numcodecs_crc32 = {
    .name = "numcodecs.crc32",
    .kind = CODEC_B2B,
    .create = nccrc32_create,
    .destroy = nc_destroy,
    .decode_bytes = nccrc32_decode,
};

const struct codec_impl codec_numcodecs_crc32c = {
    .name = "numcodecs.crc32c",
    .kind = CODEC_B2B,
    .create = nccrc32c_create,
    .destroy = nc_destroy,
    .decode_bytes = nccrc32c_decode,
};

const struct codec_impl codec_numcodecs_fletcher32 = {
    .name = "numcodecs.fletcher32",
    .kind = CODEC_B2B,
    .create = ncfletcher32_create,
    .destroy = nc_destroy,
    .decode_bytes = ncfletcher32_decode,
};
