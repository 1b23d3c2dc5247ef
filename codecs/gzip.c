/* gzip.c - the `gzip` bytes->bytes codec: inflate an RFC 1952 stream (zlib
 * streams are accepted too) into memory, never past env->max_decoded.
 * Whole chunks are inflated by libdeflate (whole-buffer decoding, about
 * twice zlib's speed); the streamed form (dstream.c) stays zlib's. */
#include "codec.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

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

/* libdeflate's allocator: ours, so that tests/unit/views/allocfail.c sees (and
 * can fail) its allocations too. */
static void *gzip_malloc(size_t n) { return malloc(n); }

/* libdeflate's free. */
static void gzip_free(void *p) { free(p); }

/* Output room every thread has beside its decompressor: a chunk whose
 * input is at most a quarter of it is inflated there first and copied out
 * at its size (a 64 KiB block taken and shrunk for each 4 KB chunk was
 * 2-3% of a `cat` of 200,000 of them, in malloc). Static thread storage:
 * no allocation to fail or to free, and pages only a thread that
 * inflates touches. */
#define GZIP_SCRATCH ((size_t)64 << 10)
static _Thread_local uint8_t gzip_out[GZIP_SCRATCH];

/* Each thread keeps the decompressor it used last (about 10 KiB, which
 * libdeflate zeroes when it makes one: a third of inflating a 4 KiB
 * chunk), freed when the thread ends. Set up once per process: the
 * library's allocator and the key. */
static pthread_once_t gzip_once = PTHREAD_ONCE_INIT;
static pthread_key_t gzip_key;
static int gzip_key_ok;

/* Free a thread's decompressor (the key's destructor). */
static void gzip_key_free(void *d) { libdeflate_free_decompressor(d); }

/* The process-wide settings (pthread_once). */
static void gzip_init(void) {
  libdeflate_set_memory_allocator(gzip_malloc, gzip_free);
  gzip_key_ok = pthread_key_create(&gzip_key, gzip_key_free) == 0;
}

/* This thread's decompressor (taken: gzip_put it back), or NULL without
 * memory. */
static struct libdeflate_decompressor *gzip_take(void) {
  pthread_once(&gzip_once, gzip_init);
  struct libdeflate_decompressor *d =
      gzip_key_ok ? pthread_getspecific(gzip_key) : NULL;
  if (d) {
    pthread_setspecific(gzip_key, NULL);
    return d;
  }
  return libdeflate_alloc_decompressor();
}

/* Give a decompressor back to this thread (freed when it has one). */
static void gzip_put(struct libdeflate_decompressor *d) {
  if (!gzip_key_ok || pthread_getspecific(gzip_key) ||
      pthread_setspecific(gzip_key, d) != 0)
    libdeflate_free_decompressor(d);
}

/* The wrapper of the member at p (n bytes): gzip when asked for, or when
 * auto-detecting (wbits & 32, as zlib does) and it starts with gzip's
 * magic; else zlib. */
static int member_is_gzip(const uint8_t *p, size_t n, int wbits) {
  if (wbits & 16)
    return 1;
  return (wbits & 32) && n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* Room to decode n bytes of input into at first: four times the input
 * (chunks of measured data seldom compress more), at least 64 KiB, or
 * the size a lone gzip member says it has; never past max. */
static size_t first_room(const uint8_t *p, size_t n, int gzip, size_t max) {
  size_t room = n > SIZE_MAX / 4 ? SIZE_MAX : 4 * n;
  if (room < 65536)
    room = 65536;
  if (gzip && n >= 18) {
    uint32_t isize = (uint32_t)p[n - 4] | (uint32_t)p[n - 3] << 8 |
                     (uint32_t)p[n - 2] << 16 | (uint32_t)p[n - 1] << 24;
    if (isize >= room / 4 && isize < room * 4)
      room = (size_t)isize + 64; /* a hint only: it may be a lie */
  }
  return room < max ? room : max;
}

/* Decode every member of p (n bytes) into b: whole-buffer inflates
 * (libdeflate), each retried in a buffer four times larger while the
 * output does not fit (a bomb stops at the cap); with `members`, further
 * members after the first are decoded too, else what follows the first
 * stream is ignored (as zlib's inflate does). */
static int inflate_all(struct libdeflate_decompressor *d, const uint8_t *p,
                       size_t n, int wbits, int members, struct zbuf *b,
                       const char *name, const struct codec_env *env,
                       struct zerr *err) {
  ZTRY(zbuf_reserve(b, first_room(p, n, member_is_gzip(p, n, wbits), b->max),
                    err));
  size_t at = 0;
  while (at < n) {
    ZTRY(codec_check_stop(env, err));
    int gz = member_is_gzip(p + at, n - at, wbits);
    size_t used = 0, got = 0;
    enum libdeflate_result r =
        gz ? libdeflate_gzip_decompress_ex(d, p + at, n - at, b->data + b->len,
                                           b->cap - b->len, &used, &got)
           : libdeflate_zlib_decompress_ex(d, p + at, n - at, b->data + b->len,
                                           b->cap - b->len, &used, &got);
    if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
      if (b->cap == b->max)
        return zerr_set(err, EFBIG,
                        "%s: decompressed data exceeds the decode limit of "
                        "%zu bytes",
                        name, b->max);
      size_t more =
          b->cap - b->len < SIZE_MAX / 4 ? 4 * (b->cap - b->len) : SIZE_MAX;
      if (more > b->max - b->len)
        more = b->max - b->len;
      ZTRY(zbuf_reserve(b, more, err));
      continue; /* this member again, with more room */
    }
    if (r != LIBDEFLATE_SUCCESS)
      return zerr_set(err, EIO, "%s: corrupt or truncated stream", name);
    b->len += got;
    at += used;
    if (!members)
      break;
  }
  return 0;
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
  struct libdeflate_decompressor *d = gzip_take();
  if (!d) {
    bytesrc_unref(src);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  struct zbuf b;
  zbuf_init(&b, env->max_decoded);
  const uint8_t *p = src->mem;
  size_t n = (size_t)src->size;
  rc = 1; /* not inflated yet */
  if (first_room(p, n, member_is_gzip(p, n, wbits), b.max) <= GZIP_SCRATCH) {
    /* one member that fits the thread's room: copied out at its size;
     * anything else (more room, more members, a corrupt stream) is done
     * again by inflate_all, which says what went wrong */
    size_t used = 0, got = 0;
    size_t cap = GZIP_SCRATCH < b.max ? GZIP_SCRATCH : b.max;
    enum libdeflate_result r =
        member_is_gzip(p, n, wbits)
            ? libdeflate_gzip_decompress_ex(d, p, n, gzip_out, cap, &used, &got)
            : libdeflate_zlib_decompress_ex(d, p, n, gzip_out, cap, &used,
                                            &got);
    if (r == LIBDEFLATE_SUCCESS && got && (!members || used == n))
      rc = zbuf_append(&b, gzip_out, got, err);
  }
  if (rc > 0)
    rc = inflate_all(d, p, n, wbits, members, &b, name, env, err);
  gzip_put(d);
  bytesrc_unref(src);
  /* the room left over goes back (a guess may have been generous) */
  if (rc == 0 && b.cap - b.len > 4096 + b.len / 8) {
    uint8_t *q = realloc(b.data, b.len ? b.len : 1);
    if (q) {
      b.data = q;
      b.cap = b.len ? b.len : 1;
    }
  }
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
