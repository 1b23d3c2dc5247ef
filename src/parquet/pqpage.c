/* pqpage.c - page decompression and the RLE/bit-packed hybrid (see
 * pqpage.h). */
#include "config.h"

#include "pqpage.h"

#include <limits.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>
#ifdef HAVE_SNAPPY
#include <snappy-c.h>
#endif

#include "pqmeta.h"

int pqpage_codec_supported(int codec) {
  return codec == PQ_UNCOMPRESSED || codec == PQ_GZIP || codec == PQ_ZSTD
#ifdef HAVE_SNAPPY
         || codec == PQ_SNAPPY
#endif
      ;
}

/* gzip (or zlib) members until outlen bytes are out and the input ends. */
static int inflate_all(const uint8_t *in, size_t n, uint8_t *out, size_t outlen,
                       struct zerr *err) {
  if (n > UINT_MAX || outlen > UINT_MAX)
    return zerr_set(err, EIO, "GZIP page larger than 4 GiB");
  z_stream zs;
  memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, 15 + 32) != Z_OK)
    return zerr_set(err, ENOMEM, "GZIP: out of memory");
  zs.next_in = (Bytef *)in;
  zs.avail_in = (uInt)n;
  zs.next_out = out;
  zs.avail_out = (uInt)outlen;
  int rc = 0;
  for (;;) {
    int zr = inflate(&zs, Z_FINISH);
    if (zr == Z_STREAM_END) {
      if (zs.avail_in == 0)
        break;
      if (inflateReset(&zs) != Z_OK) { /* another member follows */
        rc = zerr_set(err, EIO, "GZIP: bad stream");
        break;
      }
      continue;
    }
    if (zr == Z_MEM_ERROR) {
      rc = zerr_set(err, ENOMEM, "GZIP: out of memory");
    } else if (zr == Z_BUF_ERROR && zs.avail_out == 0) {
      rc = zerr_set(err, EIO, "GZIP page decodes to more than %zu bytes",
                    outlen);
    } else {
      rc = zerr_set(err, EIO, "GZIP: %s",
                    zs.msg ? zs.msg : "truncated or bad stream");
    }
    break;
  }
  size_t got = outlen - zs.avail_out;
  inflateEnd(&zs);
  if (rc == 0 && got != outlen)
    rc = zerr_set(err, EIO, "GZIP page decodes to %zu bytes, header says %zu",
                  got, outlen);
  return rc;
}

int pqpage_decompress(int codec, const uint8_t *in, size_t n, uint8_t *out,
                      size_t outlen, struct zerr *err) {
  char nb[16];
  switch (codec) {
  case PQ_UNCOMPRESSED:
    if (n != outlen)
      return zerr_set(err, EIO,
                      "uncompressed page of %zu bytes, header says %zu", n,
                      outlen);
    if (n)
      memcpy(out, in, n);
    return 0;
  case PQ_GZIP:
    return inflate_all(in, n, out, outlen, err);
  case PQ_ZSTD: {
    size_t got = ZSTD_decompress(out, outlen, in, n);
    if (ZSTD_isError(got))
      return zerr_set(err, EIO, "ZSTD: %s", ZSTD_getErrorName(got));
    if (got != outlen)
      return zerr_set(err, EIO,
                      "ZSTD page decodes to %zu bytes, header says %zu", got,
                      outlen);
    return 0;
  }
#ifdef HAVE_SNAPPY
  case PQ_SNAPPY: {
    size_t want;
    if (snappy_uncompressed_length((const char *)in, n, &want) != SNAPPY_OK)
      return zerr_set(err, EIO, "SNAPPY: bad stream header");
    if (want != outlen)
      return zerr_set(err, EIO,
                      "SNAPPY page decodes to %zu bytes, header says %zu", want,
                      outlen);
    size_t got = outlen;
    if (outlen == 0)
      return 0;
    if (snappy_uncompress((const char *)in, n, (char *)out, &got) !=
            SNAPPY_OK ||
        got != outlen)
      return zerr_set(err, EIO, "SNAPPY: bad stream");
    return 0;
  }
#else
  case PQ_SNAPPY:
    return zerr_set(err, EIO,
                    "codec SNAPPY: this zarrfs was built without libsnappy "
                    "(configure --with-snappy)");
#endif
  default:
    return zerr_set(err, EIO,
                    "codec %s is not supported (UNCOMPRESSED, SNAPPY, GZIP "
                    "and ZSTD are)",
                    pqmeta_codec_name(codec, nb));
  }
}

int pqpage_bit_width(uint32_t max) {
  int w = 0;
  while (w < 32 && (max >> w))
    w++;
  return w;
}

/* A ULEB128 varint of at most 5 bytes (32 bits). */
static int uvarint32(const uint8_t *p, size_t len, size_t *pos, uint32_t *v) {
  uint64_t x = 0;
  for (int i = 0; i < 5; i++) {
    if (*pos >= len)
      return -1;
    uint8_t b = p[(*pos)++];
    x |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      if (x > UINT32_MAX)
        return -1;
      *v = (uint32_t)x;
      return 0;
    }
  }
  return -1;
}

int pqpage_rle(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n,
               size_t *used, struct zerr *err) {
  if (width < 0 || width > 32)
    return zerr_set(err, EIO, "RLE bit width %d (0 to 32)", width);
  size_t pos = 0, done = 0;
  size_t vbytes = ((size_t)width + 7) / 8;
  uint64_t mask = width == 32 ? UINT32_MAX : ((uint64_t)1 << width) - 1;
  while (done < n) {
    uint32_t h;
    if (uvarint32(p, len, &pos, &h) < 0)
      return zerr_set(err, EIO,
                      "RLE runs end after %zu of %zu values (bad run header)",
                      done, n);
    size_t count = h >> 1;
    if (!(h & 1)) { /* a run of one value */
      if (vbytes > len - pos)
        return zerr_set(err, EIO, "RLE run value past the end");
      uint32_t v = 0;
      for (size_t i = 0; i < vbytes; i++)
        v |= (uint32_t)p[pos + i] << (8 * i);
      pos += vbytes;
      if (v > mask)
        return zerr_set(err, EIO, "RLE run value %u wider than %d bits", v,
                        width);
      size_t take = count < n - done ? count : n - done;
      for (size_t i = 0; i < take; i++)
        out[done + i] = v;
      done += take;
      continue;
    }
    /* count groups of 8 bit-packed values, least significant bit first;
     * a last group may be cut short by the end of the data. */
    size_t bytes = count * (size_t)width; /* count < 2^31, width <= 32 */
    size_t avail = len - pos < bytes ? len - pos : bytes;
    size_t values = width ? avail * 8 / (size_t)width : count * 8;
    if (values > count * 8)
      values = count * 8;
    size_t take = values < n - done ? values : n - done;
    if (take < n - done && avail < bytes)
      return zerr_set(err, EIO,
                      "RLE bit-packed run cut short after %zu of %zu values",
                      done + take, n);
    const uint8_t *q = p + pos;
    for (size_t i = 0; i < take; i++) {
      uint64_t bit = (uint64_t)i * (uint64_t)width, v = 0;
      for (int b = 0; b < width; b++, bit++)
        v |= (uint64_t)((q[bit >> 3] >> (bit & 7)) & 1) << b;
      out[done + i] = (uint32_t)v;
    }
    done += take;
    pos += avail;
  }
  if (used)
    *used = pos;
  return 0;
}
