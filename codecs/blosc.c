/* blosc.c - the `blosc` bytes->bytes codec (alias `numcodecs.blosc`):
 * c-blosc 1.x frames, decoded only as far as reads need them.
 *
 * The 16-byte frame header records the compressor, the shuffle mode, the
 * type size, the block size and the decompressed length, so decoding needs
 * nothing from the configuration (the frame header is trusted over the
 * metadata); create only checks that the configuration is well formed.
 *
 * A frame is a header, one start offset per block, then the blocks, each
 * compressed on its own. Decoding validates the header and the block
 * starts (every block inside the frame) and returns:
 *   - for a plain copy (BLOSC_MEMCPYED), a window onto the frame: nothing
 *     is decompressed, a read reads just its range;
 *   - for a frame of several blocks decompressing to more than 256 KiB, a
 *     lazy source: a read decompresses only the blocks it touches (each
 *     one read alone from the frame), so zarrs.vlen over blosc reads its
 *     index and then one data range, not the whole chunk; a read of the
 *     whole output decodes the frame in one go;
 *   - otherwise, the whole output decompressed into memory at once.
 * Memory stays bounded: the output size is checked against
 * env->max_decoded before anything is allocated; the lazy source holds the
 * block table and one decoded block. Decompression runs with
 * blosc_decompress_ctx, which keeps no global state and is safe to call
 * from many threads at once. Without libblosc (configure --without-blosc)
 * the names alone remain, refused by chain_build. */
#include "config.h"

#include "codec.h"

static const char *const zblosc_aliases[] = {"numcodecs.blosc", NULL};

#if ZFS_WITH_BLOSC
#include <blosc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../src/util/buf.h"

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

/* ---- frame layout ---- */

/* Frames decompressing to at most this many bytes are decoded whole at
 * once: splitting them saves little and costs a read per block. */
#define ZBLOSC_LAZY_MIN ((uint32_t)256 * 1024)
/* A one-block frame's prefix: the 16-byte header and one block start. */
#define ZBLOSC_MINI_HDR (BLOSC_MIN_HEADER_LENGTH + 4)

/* A validated frame: its header and, unless it is a plain copy, where the
 * compressed bytes of every block lie. */
struct zblosc_frame {
  uint8_t hdr[BLOSC_MIN_HEADER_LENGTH];
  uint32_t nbytes, blocksize, cbytes, nblocks;
  int memcpyed;
  uint32_t *start, *end; /* per block, [start, end) in the frame (malloc) */
};

/* Little-endian u32 at p. */
static uint32_t zblosc_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

/* Store v little-endian at p. */
static void zblosc_put32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* Order of block starts, for qsort. */
struct zblosc_order {
  uint32_t start, block;
};

/* Compare two block starts. */
static int zblosc_cmp(const void *a, const void *b) {
  uint32_t x = ((const struct zblosc_order *)a)->start;
  uint32_t y = ((const struct zblosc_order *)b)->start;
  return x < y ? -1 : x > y;
}

/* Free the block table; the struct itself is the caller's. */
static void zblosc_frame_clear(struct zblosc_frame *f) {
  free(f->start);
  free(f->end);
  f->start = f->end = NULL;
}

/* Read and check the header and the block starts of the frame in `in`.
 * Blocks are stored back to back (in any order: c-blosc's threads append
 * them as they finish), so a block ends where the next start (in offset
 * order) begins, the last one at the end of the frame. */
static int zblosc_frame_read(struct bytesrc *in, const struct codec_env *env,
                             struct zblosc_frame *f, struct zerr *err) {
  memset(f, 0, sizeof *f);
  size_t nbytes = 0, cbytes = 0, blocksize = 0;
  if (in->size < BLOSC_MIN_HEADER_LENGTH)
    return zerr_set(err, EIO, "blosc: corrupt header (chunk of %llu bytes)",
                    (unsigned long long)in->size);
  int rc = bytesrc_read_range(in, 0, BLOSC_MIN_HEADER_LENGTH, f->hdr, err);
  if (rc < 0) {
    zerr_prefix(err, "blosc: ");
    return rc;
  }
  if (blosc_cbuffer_validate(f->hdr, (size_t)in->size, &nbytes) < 0)
    return zerr_set(err, EIO, "blosc: corrupt header");
  blosc_cbuffer_sizes(f->hdr, &nbytes, &cbytes, &blocksize);
  if (cbytes != in->size || cbytes > INT32_MAX)
    return zerr_set(err, EIO,
                    "blosc: corrupt header (frame of %zu bytes in a chunk of "
                    "%llu bytes)",
                    cbytes, (unsigned long long)in->size);
  uint8_t version = f->hdr[0], flags = f->hdr[2], typesize = f->hdr[3];
  if (version == 0 || version > BLOSC_VERSION_FORMAT)
    return zerr_set(err, EIO,
                    "blosc: corrupt header (unknown format version "
                    "%u)",
                    version);
  if ((flags & 0x08) || (flags >> 5) > BLOSC_ZSTD_FORMAT)
    return zerr_set(err, EIO, "blosc: corrupt header (unknown flags 0x%02x)",
                    flags);
  if (nbytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "blosc: frame of %zu decompressed bytes exceeds the "
                    "decode limit of %zu bytes",
                    nbytes, env->max_decoded);
  f->nbytes = (uint32_t)nbytes;
  f->cbytes = (uint32_t)cbytes;
  f->blocksize = (uint32_t)blocksize;
  f->memcpyed = (flags & BLOSC_MEMCPYED) != 0;
  if (nbytes == 0)
    return 0;
  if (f->memcpyed) {
    if (cbytes != nbytes + BLOSC_MIN_HEADER_LENGTH)
      return zerr_set(err, EIO,
                      "blosc: corrupt header (a plain copy of %zu bytes in a "
                      "frame of %zu)",
                      nbytes, cbytes);
    return 0;
  }
  if (typesize == 0 || blocksize == 0 || blocksize > BLOSC_MAX_BLOCKSIZE)
    return zerr_set(err, EIO,
                    "blosc: corrupt header (type size %u, block size %zu)",
                    typesize, blocksize);
  uint64_t nblocks = (nbytes + blocksize - 1) / blocksize;
  uint64_t data0 = BLOSC_MIN_HEADER_LENGTH + 4 * nblocks;
  if (data0 > cbytes)
    return zerr_set(err, EIO,
                    "blosc: corrupt header (%llu block starts do not fit in a "
                    "frame of %zu bytes)",
                    (unsigned long long)nblocks, cbytes);
  if (nblocks * sizeof(struct zblosc_order) > env->max_decoded)
    return zerr_set(err, EFBIG, "blosc: %llu blocks exceed the decode limit",
                    (unsigned long long)nblocks);
  f->nblocks = (uint32_t)nblocks;
  uint8_t *raw = malloc((size_t)(4 * nblocks));
  struct zblosc_order *ord = malloc((size_t)nblocks * sizeof *ord);
  f->start = malloc((size_t)nblocks * sizeof *f->start);
  f->end = malloc((size_t)nblocks * sizeof *f->end);
  if (!raw || !ord || !f->start || !f->end) {
    rc = zerr_set(err, ENOMEM, "blosc: out of memory for %llu blocks",
                  (unsigned long long)nblocks);
    goto out;
  }
  rc = bytesrc_read_range(in, BLOSC_MIN_HEADER_LENGTH, (size_t)(4 * nblocks),
                          raw, err);
  if (rc < 0) {
    zerr_prefix(err, "blosc: ");
    goto out;
  }
  for (uint32_t j = 0; j < f->nblocks; j++) {
    uint32_t s = zblosc_le32(raw + 4 * (size_t)j);
    if (s < data0 || s >= cbytes) {
      rc = zerr_set(err, EIO,
                    "blosc: block %u starts at %u, outside the frame's data "
                    "(%llu..%zu)",
                    j, s, (unsigned long long)data0, cbytes);
      goto out;
    }
    f->start[j] = s;
    ord[j].start = s;
    ord[j].block = j;
  }
  qsort(ord, (size_t)nblocks, sizeof *ord, zblosc_cmp);
  for (uint32_t k = 0; k < f->nblocks; k++) {
    uint32_t next = k + 1 < f->nblocks ? ord[k + 1].start : f->cbytes;
    if (next == ord[k].start) {
      rc = zerr_set(err, EIO,
                    "blosc: blocks %u and %u start at the same "
                    "offset %u",
                    ord[k].block, ord[k + 1].block, next);
      goto out;
    }
    f->end[ord[k].block] = next;
  }
out:
  free(raw);
  free(ord);
  if (rc < 0)
    zblosc_frame_clear(f);
  return rc;
}

/* Decompress block b of the frame in `in` into dst (room for blocksize
 * bytes, as c-blosc demands even for a short last block): the block's
 * compressed bytes are read alone and given to c-blosc as a one-block
 * frame with the same header fields, so it decodes them exactly as it
 * would inside the whole frame (same block size, same short-last-block
 * rule, same split and shuffle flags). */
static int zblosc_block(const struct zblosc_frame *f, struct bytesrc *in,
                        uint32_t b, uint8_t *dst, struct zerr *err) {
  uint32_t bs = f->blocksize;
  uint32_t bsize = b + 1 == f->nblocks && f->nbytes % bs ? f->nbytes % bs : bs;
  uint32_t clen = f->end[b] - f->start[b];
  size_t mlen = (size_t)ZBLOSC_MINI_HDR + clen;
  uint8_t *mini = malloc(mlen);
  if (!mini)
    return zerr_set(err, ENOMEM, "blosc: out of memory");
  memcpy(mini, f->hdr, BLOSC_MIN_HEADER_LENGTH);
  zblosc_put32(mini + 4, bsize);
  zblosc_put32(mini + 12, (uint32_t)mlen);
  zblosc_put32(mini + 16, ZBLOSC_MINI_HDR);
  int rc =
      bytesrc_read_range(in, f->start[b], clen, mini + ZBLOSC_MINI_HDR, err);
  if (rc < 0) {
    free(mini);
    zerr_prefix(err, "blosc: ");
    return rc;
  }
  int n = blosc_decompress_ctx(mini, dst, bs, 1);
  free(mini);
  if (n < 0 || (uint32_t)n != bsize)
    return zerr_set(err, EIO,
                    "blosc: block %u is corrupt or truncated (decompression "
                    "returned %d)",
                    b, n);
  return 0;
}

/* Decompress the whole frame (in memory) into dst of f->nbytes bytes. */
static int zblosc_whole(const struct zblosc_frame *f, const uint8_t *frame,
                        uint8_t *dst, struct zerr *err) {
  int n = blosc_decompress_ctx(frame, dst, f->nbytes, 1);
  if (n < 0 || (uint32_t)n != f->nbytes)
    return zerr_set(err, EIO,
                    "blosc: corrupt or truncated frame (decompression "
                    "returned %d)",
                    n);
  return 0;
}

/* ---- the lazy output: blocks decompressed when read ---- */

struct zblosc_lazy {
  struct bytesrc base;
  struct bytesrc *in; /* the frame (owned reference) */
  struct zblosc_frame f;
  size_t max_decoded;
  pthread_mutex_t lock; /* guards cached/cache (a leaf lock) */
  uint32_t cached;      /* block held in cache, or UINT32_MAX */
  uint8_t *cache;       /* blocksize bytes (malloc), or NULL */
};

/* Copy [off, off+len) of the output: a read of everything decodes the
 * frame at once; otherwise each touched block is decoded on its own, the
 * last partly read one kept for the next read (sequential readers cross
 * block edges all the time). */
static int zblosc_lazy_read(struct bytesrc *s, uint64_t off, size_t len,
                            void *dst, struct zerr *err) {
  struct zblosc_lazy *z = (struct zblosc_lazy *)s;
  const struct zblosc_frame *f = &z->f;
  uint8_t *out = dst;
  if (off == 0 && len == f->nbytes) {
    struct bytesrc *frame;
    int rc =
        codec_load_input(z->in, &(struct codec_env){z->max_decoded, NULL, 0},
                         "blosc", &frame, err);
    if (rc == 0)
      rc = zblosc_whole(f, frame->mem, out, err);
    bytesrc_unref(frame);
    return rc;
  }
  uint32_t bs = f->blocksize;
  uint64_t end = off + len;
  for (uint32_t b = (uint32_t)(off / bs); (uint64_t)b * bs < end; b++) {
    uint64_t b0 = (uint64_t)b * bs;
    uint64_t b1 = b0 + bs < f->nbytes ? b0 + bs : f->nbytes;
    uint64_t lo = off > b0 ? off : b0, hi = end < b1 ? end : b1;
    uint8_t *to = out + (lo - off);
    if (lo == b0 && hi == b0 + bs) { /* a whole full-size block */
      ZTRY(zblosc_block(f, z->in, b, to, err));
      continue;
    }
    pthread_mutex_lock(&z->lock);
    int hit = z->cached == b;
    if (hit)
      memcpy(to, z->cache + (lo - b0), (size_t)(hi - lo));
    pthread_mutex_unlock(&z->lock);
    if (hit)
      continue;
    uint8_t *blk = malloc(bs);
    if (!blk)
      return zerr_set(err, ENOMEM, "blosc: out of memory for a %u-byte block",
                      bs);
    int rc = zblosc_block(f, z->in, b, blk, err);
    if (rc < 0) {
      free(blk);
      return rc;
    }
    memcpy(to, blk + (lo - b0), (size_t)(hi - lo));
    pthread_mutex_lock(&z->lock);
    free(z->cache);
    z->cache = blk;
    z->cached = b;
    pthread_mutex_unlock(&z->lock);
  }
  return 0;
}

/* Release the frame, the block table and the cached block. */
static void zblosc_lazy_destroy(struct bytesrc *s) {
  struct zblosc_lazy *z = (struct zblosc_lazy *)s;
  bytesrc_unref(z->in);
  zblosc_frame_clear(&z->f);
  free(z->cache);
  pthread_mutex_destroy(&z->lock);
  free(z);
}

static const struct bytesrc_ops zblosc_lazy_ops = {
    .read = zblosc_lazy_read,
    .destroy = zblosc_lazy_destroy,
};

/* Decode: a plain copy is a window onto the frame; a small or one-block
 * frame is decompressed at once; anything else becomes a lazy source that
 * decompresses only the blocks a read touches. */
static int zblosc_decode(const void *state, struct bytesrc *in,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  (void)state;
  struct zblosc_frame f;
  ZTRY(zblosc_frame_read(in, env, &f, err));
  if (f.nbytes == 0) {
    *out = bytesrc_from_static(NULL, 0);
    return *out ? 0 : zerr_set(err, ENOMEM, "blosc: out of memory");
  }
  if (f.memcpyed)
    return bytesrc_sub(in, BLOSC_MIN_HEADER_LENGTH, f.nbytes, out, err);
  if (f.nblocks > 1 && f.nbytes > ZBLOSC_LAZY_MIN) {
    struct zblosc_lazy *z = calloc(1, sizeof *z);
    if (!z) {
      zblosc_frame_clear(&f);
      return zerr_set(err, ENOMEM, "blosc: out of memory");
    }
    z->base.ops = &zblosc_lazy_ops;
    z->base.size = f.nbytes;
    atomic_init(&z->base.refs, 1);
    z->in = bytesrc_ref(in);
    z->f = f;
    z->max_decoded = env->max_decoded;
    z->cached = UINT32_MAX;
    pthread_mutex_init(&z->lock, NULL);
    *out = &z->base;
    return 0;
  }
  struct bytesrc *src;
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  int rc = codec_load_input(in, env, "blosc", &src, err);
  if (rc == 0) {
    rc = zbuf_reserve(&b, f.nbytes, err);
    if (rc == 0)
      rc = zblosc_whole(&f, src->mem, b.data, err);
    bytesrc_unref(src);
  }
  zblosc_frame_clear(&f);
  if (rc < 0) {
    zbuf_free(&b);
    return rc;
  }
  b.len = f.nbytes;
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
#else
const struct codec_impl codec_blosc =
    CODEC_BUILT_WITHOUT("blosc", zblosc_aliases, CODEC_B2B, "blosc");
#endif
