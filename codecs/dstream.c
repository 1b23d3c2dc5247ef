/* dstream.c - a bytes->bytes codec's output decoded as a stream in a
 * sliding window, as a byte source (see dstream.h): the window, the
 * compressed input read a slice at a time, and the two decoders behind
 * it (zstd's streaming API, zlib's inflate). */
#include "dstream.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <zlib.h>
/* ZSTD_estimateDStreamSize_fromFrame is in the experimental part of the
 * API (stable since 1.3; Debian's libzstd is 1.5). */
#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>

struct dstream;

/* ---- memory ----
 *
 * The window, the input slice and zstd's buffers are mapped, not taken
 * from malloc: a stream is made by one FUSE thread and freed by another,
 * and malloc would keep its megabytes resident in the arena of whichever
 * thread freed them (and raise its own threshold for mapping, so that
 * later buffers of every thread stay in arenas too). Unmapped, they go
 * back to the system as soon as the stream goes. */

/* Allocations at least this large are mapped. */
#define DS_MAP_MIN ((size_t)64 << 10)

/* n bytes of fresh pages, or NULL. */
static void *ds_map(size_t n) {
  void *p =
      mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

/* Give back what ds_map returned (NULL: nothing). */
static void ds_unmap(void *p, size_t n) {
  if (p)
    munmap(p, n);
}

/* zstd's allocator: large blocks mapped, small ones from malloc, the
 * size kept in a header (zstd's free does not pass it). */
static void *ds_zalloc(void *opaque, size_t size) {
  (void)opaque;
  size_t n = size + 16;
  if (n < size)
    return NULL;
  uint8_t *p = n >= DS_MAP_MIN ? ds_map(n) : malloc(n);
  if (!p)
    return NULL;
  memcpy(p, &n, sizeof n);
  return p + 16;
}

/* zstd's free. */
static void ds_zfree(void *opaque, void *addr) {
  (void)opaque;
  if (!addr)
    return;
  uint8_t *p = (uint8_t *)addr - 16;
  size_t n;
  memcpy(&n, p, sizeof n);
  if (n >= DS_MAP_MIN)
    ds_unmap(p, n);
  else
    free(p);
}

struct dstream_kind {
  const char *name; /* the codec, for messages */
  /* Bytes the decoder's state takes for a stream starting with head[0..n). */
  size_t (*state_cost)(const uint8_t *head, size_t n);
  /* The decoded size head[0..n) states, or UINT64_MAX (NULL: none). */
  uint64_t (*stated)(const uint8_t *head, size_t n);
  /* Make s->dec ready for the start of the stream (create it, or reset). */
  int (*start)(struct dstream *s, struct zerr *err);
  /* Decode from s->in[s->in_pos..s->in_len) (advancing in_pos) into
   * out[0..cap): *made bytes; *boundary when a frame or member ended. */
  int (*step)(struct dstream *s, uint8_t *out, size_t cap, size_t *made,
              int *boundary, struct zerr *err);
  /* Release s->dec (NULL: nothing) and set it NULL. */
  void (*stop)(struct dstream *s);
};

struct dstream {
  struct bytesrc src;   /* first: what callers hold */
  pthread_mutex_t lock; /* guards everything below */
  const struct dstream_kind *kind;
  struct bytesrc *enc;  /* owned ref: the compressed input */
  struct codec_env env; /* its stop flag is borrowed */
  void *dec;            /* the decoder, or NULL (not started, or done) */
  int member_end;       /* inflate: a member ended; reset before going on */
  int started;          /* decoded from the start at least once */
  int broken;           /* the last read failed: the next one restarts */
  uint8_t *inbuf;       /* DSTREAM_IN bytes of input (enc not in memory) */
  const uint8_t *in;    /* the input at hand: inbuf or enc->mem */
  size_t in_len, in_pos;
  uint64_t enc_pos; /* the next byte of enc to read */
  int ended;        /* all input used, at the end of a frame or member */
  uint8_t *buf;     /* decoded bytes [base, base+fill) */
  size_t cap, fill;
  uint64_t base;
  uint64_t restarts, decoded;
  size_t cost;
};

/* ---- zstd ---- */

/* zstd's own estimate from the frame header (window size), else for an
 * 8 MiB window (zstd's usual largest). */
static size_t zst_cost(const uint8_t *head, size_t n) {
  size_t c = ZSTD_estimateDStreamSize_fromFrame(head, n);
  return ZSTD_isError(c) ? ZSTD_estimateDStreamSize((size_t)8 << 20) : c;
}

/* The first frame's content size, when its header has one. */
static uint64_t zst_stated(const uint8_t *head, size_t n) {
  unsigned long long c = ZSTD_getFrameContentSize(head, n);
  return c == ZSTD_CONTENTSIZE_UNKNOWN || c == ZSTD_CONTENTSIZE_ERROR
             ? UINT64_MAX
             : (uint64_t)c;
}

/* A new context, or the old one reset. */
static int zst_start(struct dstream *s, struct zerr *err) {
  static const ZSTD_customMem mem = {ds_zalloc, ds_zfree, NULL};
  if (!s->dec && !(s->dec = ZSTD_createDCtx_advanced(mem)))
    return zerr_set(err, ENOMEM, "zstd: out of memory");
  size_t r = ZSTD_DCtx_reset(s->dec, ZSTD_reset_session_only);
  if (ZSTD_isError(r))
    return zerr_set(err, EIO, "zstd: %s", ZSTD_getErrorName(r));
  return 0;
}

/* One call of ZSTD_decompressStream: it goes on into the next frame by
 * itself. */
static int zst_step(struct dstream *s, uint8_t *out, size_t cap, size_t *made,
                    int *boundary, struct zerr *err) {
  ZSTD_inBuffer zin = {s->in, s->in_len, s->in_pos};
  ZSTD_outBuffer zout = {out, cap, 0};
  size_t r = ZSTD_decompressStream(s->dec, &zout, &zin);
  s->in_pos = zin.pos;
  *made = zout.pos;
  if (ZSTD_isError(r))
    return zerr_set(err, EIO, "zstd: corrupt or truncated frame (%s)",
                    ZSTD_getErrorName(r));
  *boundary = r == 0;
  return 0;
}

/* Free the context. */
static void zst_stop(struct dstream *s) {
  ZSTD_freeDCtx(s->dec);
  s->dec = NULL;
}

const struct dstream_kind dstream_zstd = {"zstd",    zst_cost, zst_stated,
                                          zst_start, zst_step, zst_stop};

/* ---- gzip (zlib's inflate) ---- */

/* A z_stream and its 32 KiB window. */
static size_t gz_cost(const uint8_t *head, size_t n) {
  (void)head;
  (void)n;
  return sizeof(z_stream) + ((size_t)48 << 10);
}

/* A new inflater (15 + 32: gzip or zlib header, as codec gzip), or the
 * old one reset. */
static int gz_start(struct dstream *s, struct zerr *err) {
  s->member_end = 0;
  if (s->dec)
    return inflateReset(s->dec) == Z_OK
               ? 0
               : zerr_set(err, EIO, "gzip: cannot reset zlib");
  z_stream *zs = calloc(1, sizeof *zs);
  if (!zs)
    return zerr_set(err, ENOMEM, "gzip: out of memory");
  if (inflateInit2(zs, 15 + 32) != Z_OK) {
    free(zs);
    return zerr_set(err, ENOMEM, "gzip: cannot initialise zlib");
  }
  s->dec = zs;
  return 0;
}

/* One call of inflate; after a member's end, further members follow (as
 * gzip.decompress and the whole decode take them). */
static int gz_step(struct dstream *s, uint8_t *out, size_t cap, size_t *made,
                   int *boundary, struct zerr *err) {
  z_stream *zs = s->dec;
  if (s->member_end) {
    if (inflateReset(zs) != Z_OK)
      return zerr_set(err, EIO, "gzip: corrupt or truncated stream");
    s->member_end = 0;
  }
  size_t avail = s->in_len - s->in_pos;
  zs->next_in = (Bytef *)(s->in + s->in_pos);
  zs->avail_in = avail > UINT_MAX ? UINT_MAX : (uInt)avail;
  zs->next_out = out;
  zs->avail_out = cap > UINT_MAX ? UINT_MAX : (uInt)cap;
  uInt ai = zs->avail_in, ao = zs->avail_out;
  int rc = inflate(zs, Z_NO_FLUSH);
  s->in_pos += ai - zs->avail_in;
  *made = ao - zs->avail_out;
  if (rc == Z_STREAM_END) {
    *boundary = 1;
    s->member_end = 1;
    return 0;
  }
  if (rc == Z_OK || (rc == Z_BUF_ERROR && zs->avail_in == 0))
    return 0; /* Z_BUF_ERROR: it wants more input */
  if (rc == Z_MEM_ERROR)
    return zerr_set(err, ENOMEM, "gzip: out of memory");
  return zerr_set(err, EIO, "gzip: corrupt or truncated stream");
}

/* End and free the inflater. */
static void gz_stop(struct dstream *s) {
  if (!s->dec)
    return;
  inflateEnd(s->dec);
  free(s->dec);
  s->dec = NULL;
}

const struct dstream_kind dstream_gzip = {"gzip",   gz_cost, NULL,
                                          gz_start, gz_step, gz_stop};

/* ---- the window ---- */

/* Is all of the input used? */
static int ds_input_done(const struct dstream *s) {
  return s->in_pos == s->in_len && s->enc_pos == s->enc->size;
}

/* Back to the start of the stream, nothing decoded. */
static int ds_restart(struct dstream *s, struct zerr *err) {
  if (s->started)
    s->restarts++;
  s->started = 1;
  s->broken = 0;
  s->ended = 0;
  s->base = 0;
  s->fill = 0;
  s->in_pos = 0;
  if (s->enc->mem) {
    s->in = s->enc->mem;
    s->in_len = (size_t)s->enc->size;
    s->enc_pos = s->enc->size;
  } else {
    if (!s->inbuf && !(s->inbuf = ds_map(DSTREAM_IN)))
      return zerr_set(err, ENOMEM, "%s: out of memory", s->kind->name);
    s->in = s->inbuf;
    s->in_len = 0;
    s->enc_pos = 0;
  }
  if (!s->buf) {
    s->cap = DSTREAM_BACK + DSTREAM_AHEAD;
    if (!(s->buf = ds_map(s->cap)))
      return zerr_set(err, ENOMEM, "%s: out of memory", s->kind->name);
  }
  return s->kind->start(s, err);
}

/* Decode at least one byte into out[0..cap) (cap > 0), unless the stream
 * ends first (then s->ended): *made bytes. */
static int ds_produce(struct dstream *s, uint8_t *out, size_t cap, size_t *made,
                      struct zerr *err) {
  *made = 0;
  for (;;) {
    ZTRY(codec_check_stop(&s->env, err));
    if (s->in_pos == s->in_len && s->enc_pos < s->enc->size) {
      uint64_t left = s->enc->size - s->enc_pos;
      size_t n = left < DSTREAM_IN ? (size_t)left : DSTREAM_IN;
      ZTRY(bytesrc_read_range(s->enc, s->enc_pos, n, s->inbuf, err));
      s->enc_pos += n;
      s->in_len = n;
      s->in_pos = 0;
    }
    size_t in_was = s->in_pos, got = 0;
    int boundary = 0;
    ZTRY(s->kind->step(s, out + *made, cap - *made, &got, &boundary, err));
    *made += got;
    if (boundary && ds_input_done(s)) {
      s->ended = 1;
      return 0;
    }
    if (*made)
      return 0;
    if (!boundary && s->in_pos == in_was && (ds_input_done(s) || !got)) {
      /* A stream opened without its decoded size (UINT64_MAX) says only
       * where it stopped. */
      unsigned long long at = s->base + s->fill + *made;
      if (s->src.size == UINT64_MAX)
        return zerr_set(err, EIO,
                        "%s: corrupt or truncated stream (it stops after "
                        "%llu decoded bytes)",
                        s->kind->name, at);
      return zerr_set(err, EIO,
                      "%s: corrupt or truncated stream (it stops after %llu "
                      "of %llu bytes)",
                      s->kind->name, at, (unsigned long long)s->src.size);
    }
  }
}

/* Room to decode into: drop what lies more than DSTREAM_BACK before off,
 * or grow the buffer when a read needs more than it holds. */
static int ds_room(struct dstream *s, uint64_t off, uint64_t end,
                   struct zerr *err) {
  uint64_t keep = off > DSTREAM_BACK ? off - DSTREAM_BACK : 0;
  if (keep < s->base)
    keep = s->base;
  if (keep > s->base + s->fill)
    keep = s->base + s->fill;
  size_t drop = (size_t)(keep - s->base);
  if (drop) {
    memmove(s->buf, s->buf + drop, s->fill - drop);
    s->base = keep;
    s->fill -= drop;
    return 0;
  }
  uint64_t need = end - s->base;
  if (need > s->env.max_decoded)
    return zerr_set(err, EFBIG,
                    "%s: a read of %llu bytes exceeds the decode limit",
                    s->kind->name, (unsigned long long)(end - off));
  uint8_t *nb = ds_map((size_t)need);
  if (!nb)
    return zerr_set(err, ENOMEM, "%s: out of memory", s->kind->name);
  memcpy(nb, s->buf, s->fill);
  ds_unmap(s->buf, s->cap);
  s->buf = nb;
  s->cap = (size_t)need;
  return 0;
}

/* Have the window hold [off, end): decoding forward (or from the start)
 * to it. A stream that ends before `end` fails, unless `upto` (then the
 * window ends where the stream does). */
static int ds_decode_to(struct dstream *s, uint64_t off, uint64_t end, int upto,
                        struct zerr *err) {
  uint64_t size = s->src.size;
  if (s->broken || !s->started || off < s->base ||
      (!s->dec && end > s->base + s->fill))
    ZTRY(ds_restart(s, err));
  while (s->base + s->fill < end) {
    if (s->ended && upto)
      return 0;
    if (s->ended)
      return zerr_set(err, EIO,
                      "%s: stream ends after %llu bytes, %llu expected",
                      s->kind->name, (unsigned long long)(s->base + s->fill),
                      (unsigned long long)size);
    if (s->fill == s->cap)
      ZTRY(ds_room(s, off, end, err));
    size_t room = s->cap - s->fill, made;
    if (room > size - (s->base + s->fill))
      room = (size_t)(size - (s->base + s->fill));
    ZTRY(ds_produce(s, s->buf + s->fill, room, &made, err));
    s->fill += made;
    s->decoded += made;
  }
  return 0;
}

/* Serve [off, off+len) from the window, decoding forward (or from the
 * start) to it; at the end of the output, check that the stream ends
 * there too, then let go of the decoder (the window stays). */
static int ds_read_locked(struct dstream *s, uint64_t off, size_t len,
                          void *dst, struct zerr *err) {
  uint64_t end = off + len, size = s->src.size;
  ZTRY(ds_decode_to(s, off, end, 0, err));
  memcpy(dst, s->buf + (off - s->base), len);
  if (end == size && s->dec) {
    if (!s->ended) {
      uint8_t extra[64];
      size_t made;
      ZTRY(ds_produce(s, extra, sizeof extra, &made, err));
      if (made)
        return zerr_set(err, EIO, "%s: stream decodes to more than %llu bytes",
                        s->kind->name, (unsigned long long)size);
    }
    s->kind->stop(s); /* the reader is through: its window is what stays */
    ds_unmap(s->inbuf, DSTREAM_IN);
    s->inbuf = NULL;
  }
  return 0;
}

/* ds_read_locked's, stopping where the stream ends (*got < max) rather
 * than failing there. */
static int ds_upto_locked(struct dstream *s, uint64_t off, size_t max,
                          void *dst, size_t *got, struct zerr *err) {
  uint64_t size = s->src.size, end = size - off < max ? size : off + max;
  if (off > size)
    end = off;
  ZTRY(ds_decode_to(s, off, end, 1, err));
  uint64_t have = s->base + s->fill;
  *got = off >= have ? 0 : (size_t)((end < have ? end : have) - off);
  if (*got)
    memcpy(dst, s->buf + (off - s->base), *got);
  return 0;
}

/* See dstream.h. */
int dstream_read_upto(struct bytesrc *b, uint64_t off, size_t max, void *dst,
                      size_t *got, struct zerr *err) {
  *got = 0;
  if (!dstream_is(b))
    return zerr_set(err, ENOTSUP, "not a stream");
  struct dstream *s = (struct dstream *)b;
  pthread_mutex_lock(&s->lock);
  int rc = ds_upto_locked(s, off, max, dst, got, err);
  if (rc < 0)
    s->broken = 1;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* bytesrc read: one reader at a time. */
static int ds_read(struct bytesrc *b, uint64_t off, size_t len, void *dst,
                   struct zerr *err) {
  struct dstream *s = (struct dstream *)b;
  pthread_mutex_lock(&s->lock);
  int rc = ds_read_locked(s, off, len, dst, err);
  if (rc < 0)
    s->broken = 1;
  pthread_mutex_unlock(&s->lock);
  return rc;
}

/* bytesrc destroy. */
static void ds_destroy(struct bytesrc *b) {
  struct dstream *s = (struct dstream *)b;
  s->kind->stop(s);
  bytesrc_unref(s->enc);
  ds_unmap(s->inbuf, DSTREAM_IN);
  ds_unmap(s->buf, s->cap);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

static const struct bytesrc_ops ds_ops = {ds_read, ds_destroy};

/* See dstream.h. */
int dstream_open(const struct dstream_kind *kind, struct bytesrc *enc,
                 uint64_t size, const struct codec_env *env,
                 struct bytesrc **out, struct zerr *err) {
  uint8_t head[32];
  size_t hn = enc->size < sizeof head ? (size_t)enc->size : sizeof head;
  ZTRY(bytesrc_read_range(enc, 0, hn, head, err));
  struct dstream *s = calloc(1, sizeof *s);
  if (!s)
    return zerr_set(err, ENOMEM, "%s: out of memory", kind->name);
  if (pthread_mutex_init(&s->lock, NULL) != 0) {
    free(s);
    return zerr_set(err, ENOMEM, "%s: out of memory", kind->name);
  }
  s->src.ops = &ds_ops;
  s->src.size = size;
  s->src.mem = NULL;
  atomic_init(&s->src.refs, 1);
  s->kind = kind;
  s->enc = bytesrc_ref(enc);
  s->env = *env;
  s->cost = sizeof *s + DSTREAM_BACK + DSTREAM_AHEAD +
            (enc->mem ? 0 : DSTREAM_IN) + kind->state_cost(head, hn);
  *out = &s->src;
  return 0;
}

/* See dstream.h. */
int dstream_stated_size(const struct dstream_kind *kind, struct bytesrc *enc,
                        uint64_t *size, struct zerr *err) {
  if (!kind || !kind->stated)
    return 0;
  uint8_t head[32]; /* a frame header is at most 18 bytes */
  size_t hn = enc->size < sizeof head ? (size_t)enc->size : sizeof head;
  ZTRY(bytesrc_read_range(enc, 0, hn, head, err));
  *size = kind->stated(head, hn);
  return *size != UINT64_MAX;
}

/* See dstream.h. */
int dstream_is(const struct bytesrc *s) { return s && s->ops == &ds_ops; }

/* See dstream.h. */
size_t dstream_cost(const struct bytesrc *s) {
  return dstream_is(s) ? ((const struct dstream *)s)->cost : 0;
}

/* Read a counter under the stream's lock. */
static uint64_t ds_counter(const struct bytesrc *b, int which) {
  if (!dstream_is(b))
    return 0;
  struct dstream *s = (struct dstream *)b;
  pthread_mutex_lock(&s->lock);
  uint64_t v = which ? s->decoded : s->restarts;
  pthread_mutex_unlock(&s->lock);
  return v;
}

/* See dstream.h. */
uint64_t dstream_restarts(const struct bytesrc *s) { return ds_counter(s, 0); }

/* See dstream.h. */
uint64_t dstream_decoded(const struct bytesrc *s) { return ds_counter(s, 1); }
