/* mkstore.c - zarrfs-mkstore: an independent Zarr V3 (and V2) writer for the
 * example store, the benchmark and scale-test stores and the bad-input test
 * store.
 *
 * It shares no code with zarrfs (it links zlib and libzstd only), so the
 * tests check zarrfs against bytes that zarrfs did not write itself, and a
 * bug in a shared helper cannot hide on both sides. Byte layouts follow
 * shared/reference/zarrs-vlen.md sections 1-2 (zarrs.vlen, vlen-utf8) and
 * zarr-formats.md sections 1 and 5 (zarr.json, .zarray, chunk keys).
 *
 *   zarrfs-mkstore example DIR
 *   zarrfs-mkstore bigstrings DIR --count N --chunk C [--strlen L]
 *                  [--data zstd|none] [--index start|end]
 *                  [--plain FILE] [--zst FILE]
 *                  [--shard INNER] [--inner vlen|utf8]
 *                  [--fill-len F] [--missing K]
 *   zarrfs-mkstore numeric DIR --shape A[,B...] --chunk a[,b...]
 *                  [--dtype uint8|int32|int64|float64] [--codec none|zstd|gzip]
 *                  [--format 3|2] [--sep .|/] [--fill V] [--missing K]
 *                  [--plain FILE]
 *   zarrfs-mkstore badinput DIR
 *
 * Every chunk is streamed: element bytes are generated on demand (twice:
 * once for the index, once for the data) and pushed through streaming
 * zstd/gzip/crc32c encoders, so memory stays a few hundred KiB whatever
 * the chunk or array size. Output is deterministic, byte for byte. Any
 * failure prints one line and exits 1: this is a one-shot tool, so there
 * is nothing to keep alive. */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

/* Longest path this tool builds. */
#define MK_PATH_MAX 4096
/* Largest single element of a string source: bounds every scratch buffer. */
#define MK_ELEM_MAX ((size_t)1 << 20)
/* Staging buffer for offsets and for encoder output. */
#define MK_STAGE 65536

/* ---- errors, allocation, files ---- */

/* Print one line and exit 1; every failure of this tool ends here. */
static void die(const char *fmt, ...)
    __attribute__((noreturn, format(printf, 1, 2)));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("zarrfs-mkstore: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* malloc that never returns NULL; the caller owns and frees the block. */
static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    die("out of memory (%zu bytes)", n);
  return p;
}

/* snprintf that refuses to truncate: a cut path would write elsewhere. */
static void fmt(char *out, size_t cap, const char *f, ...)
    __attribute__((format(printf, 3, 4)));
static void fmt(char *out, size_t cap, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int w = vsnprintf(out, cap, f, ap);
  va_end(ap);
  if (w < 0 || (size_t)w >= cap)
    die("string too long: %.60s...", out);
}

/* mkdir -p: path and every parent, existing ones are fine. */
static void mkdirs(const char *path) {
  char p[MK_PATH_MAX];
  fmt(p, sizeof p, "%s", path);
  for (char *s = p + 1;; s++) {
    if (*s == '/' || *s == '\0') {
      char c = *s;
      *s = '\0';
      if (mkdir(p, 0755) < 0 && errno != EEXIST)
        die("mkdir %s: %s", p, strerror(errno));
      *s = c;
      if (!c)
        break;
    }
  }
}

/* An output file, with its name kept for error messages. */
struct wfile {
  FILE *f;
  char path[MK_PATH_MAX];
  char *mem;      /* open_memstream buffer (memory files only) */
  size_t mem_len; /* its length, valid after wfile_close */
};

/* Create dir/rel (parents too) for writing; wfile_close finishes it. */
static void wfile_create(struct wfile *w, const char *dir, const char *rel) {
  memset(w, 0, sizeof *w);
  fmt(w->path, sizeof w->path, "%s/%s", dir, rel);
  char parent[MK_PATH_MAX];
  fmt(parent, sizeof parent, "%s", w->path);
  char *slash = strrchr(parent, '/');
  if (slash && slash != parent) {
    *slash = '\0';
    mkdirs(parent);
  }
  w->f = fopen(w->path, "wb");
  if (!w->f)
    die("%s: %s", w->path, strerror(errno));
  /* Large buffer: the benchmark stores are written in small pieces. */
  setvbuf(w->f, NULL, _IOFBF, 1 << 20);
}

/* Open a file by its full path (the --plain and --zst outputs); "-" is
 * standard output, so a test can stream the expected text into cmp. */
static void wfile_open_path(struct wfile *w, const char *path) {
  memset(w, 0, sizeof *w);
  fmt(w->path, sizeof w->path, "%s", path);
  w->f = strcmp(path, "-") ? fopen(path, "wb") : stdout;
  if (!w->f)
    die("%s: %s", path, strerror(errno));
  setvbuf(w->f, NULL, _IOFBF, 1 << 20);
}

/* A file in memory, for chunks that badinput corrupts before storing. */
static void wfile_memory(struct wfile *w) {
  memset(w, 0, sizeof *w);
  fmt(w->path, sizeof w->path, "<memory>");
  w->f = open_memstream(&w->mem, &w->mem_len);
  if (!w->f)
    die("open_memstream: %s", strerror(errno));
}

/* Flush and close; a write error anywhere in the file is reported here. */
static void wfile_close(struct wfile *w) {
  int failed = ferror(w->f);
  if (fclose(w->f) != 0 || failed)
    die("%s: write failed: %s", w->path, strerror(errno));
  w->f = NULL;
}

/* Write n bytes. */
static void wfile_write(struct wfile *w, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, w->f) != n)
    die("%s: write failed: %s", w->path, strerror(errno));
}

/* Write a NUL-terminated string. */
static void wfile_puts(struct wfile *w, const char *s) {
  wfile_write(w, s, strlen(s));
}

/* printf into the file. */
static void wfile_printf(struct wfile *w, const char *f, ...)
    __attribute__((format(printf, 2, 3)));
static void wfile_printf(struct wfile *w, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int rc = vfprintf(w->f, f, ap);
  va_end(ap);
  if (rc < 0)
    die("%s: write failed: %s", w->path, strerror(errno));
}

/* Write a whole small file dir/rel in one go. */
static void put_file(const char *dir, const char *rel, const void *p,
                     size_t n) {
  struct wfile w;
  wfile_create(&w, dir, rel);
  wfile_write(&w, p, n);
  wfile_close(&w);
}

/* Store v as w bytes, little endian (w <= 8). */
static void le_store(uint8_t *out, uint64_t v, int w) {
  for (int i = 0; i < w; i++)
    out[i] = (uint8_t)(v >> (8 * i));
}

/* Write v as w little-endian bytes. */
static void wfile_le(struct wfile *f, uint64_t v, int w) {
  uint8_t t[8];
  le_store(t, v, w);
  wfile_write(f, t, (size_t)w);
}

/* ---- bytes->bytes codecs, streaming ---- */

/* The data codecs this writer can put after an array->bytes codec. */
enum data_codec { DATA_BYTES, DATA_ZSTD, DATA_GZIP, DATA_CRC32C };

/* The JSON of one bytes->bytes codec (empty for none), ", "-prefixed. */
static const char *data_codec_json(enum data_codec c) {
  switch (c) {
  case DATA_ZSTD:
    return ", {\"name\": \"zstd\", \"configuration\": "
           "{\"level\": 3, \"checksum\": false}}";
  case DATA_GZIP:
    return ", {\"name\": \"gzip\", \"configuration\": {\"level\": 5}}";
  case DATA_CRC32C:
    return ", {\"name\": \"crc32c\"}";
  case DATA_BYTES:
    break;
  }
  return "";
}

/* A bytes->bytes codec applied while writing: bytes go in through
 * sink_write and come out encoded into out (and tee, when set). Levels are
 * fixed (zstd 3, gzip 5) to match data_codec_json. */
struct sink {
  struct wfile *out;
  struct wfile *tee; /* optional copy of the encoded bytes (--zst) */
  enum data_codec codec;
  ZSTD_CCtx *zc;
  z_stream gz;
  uint32_t crc;
  uint32_t crc_table[256];
  uint8_t *stage; /* encoder output, MK_STAGE bytes */
};

/* Emit encoded bytes to the file and the tee. */
static void sink_emit(struct sink *s, const void *p, size_t n) {
  wfile_write(s->out, p, n);
  if (s->tee)
    wfile_write(s->tee, p, n);
}

/* Start an encoded stream of exactly `size` input bytes (zstd records it
 * in the frame header, as zarrs' one-shot encoder does). */
static void sink_open(struct sink *s, struct wfile *out, enum data_codec c,
                      uint64_t size, struct wfile *tee) {
  memset(s, 0, sizeof *s);
  s->out = out;
  s->tee = tee;
  s->codec = c;
  s->stage = xmalloc(MK_STAGE);
  if (c == DATA_ZSTD) {
    s->zc = ZSTD_createCCtx();
    if (!s->zc)
      die("ZSTD_createCCtx failed");
    size_t rc = ZSTD_CCtx_setParameter(s->zc, ZSTD_c_compressionLevel, 3);
    if (!ZSTD_isError(rc))
      rc = ZSTD_CCtx_setPledgedSrcSize(s->zc, size);
    if (ZSTD_isError(rc))
      die("zstd setup: %s", ZSTD_getErrorName(rc));
  } else if (c == DATA_GZIP) {
    /* windowBits 15 + 16: the gzip wrapper (mtime 0), not zlib's. */
    if (deflateInit2(&s->gz, 5, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
        Z_OK)
      die("deflateInit2 failed");
  } else if (c == DATA_CRC32C) {
    for (uint32_t i = 0; i < 256; i++) {
      uint32_t v = i;
      for (int k = 0; k < 8; k++)
        v = (v >> 1) ^ (0x82F63B78u & (0u - (v & 1)));
      s->crc_table[i] = v;
    }
    s->crc = 0xFFFFFFFFu;
  }
}

/* Run zstd over input (NULL at the end) until it has taken all of it. */
static void sink_zstd(struct sink *s, const void *p, size_t n,
                      ZSTD_EndDirective end) {
  ZSTD_inBuffer in = {p, n, 0};
  for (;;) {
    ZSTD_outBuffer o = {s->stage, MK_STAGE, 0};
    size_t left = ZSTD_compressStream2(s->zc, &o, &in, end);
    if (ZSTD_isError(left))
      die("zstd: %s", ZSTD_getErrorName(left));
    sink_emit(s, s->stage, o.pos);
    if (end == ZSTD_e_end ? left == 0 : in.pos == in.size)
      return;
  }
}

/* Run deflate over input until it has taken all of it (or finished). */
static void sink_gzip(struct sink *s, const void *p, size_t n, int flush) {
  s->gz.next_in = (Bytef *)(uintptr_t)p;
  s->gz.avail_in = (uInt)n;
  for (;;) {
    s->gz.next_out = s->stage;
    s->gz.avail_out = MK_STAGE;
    int rc = deflate(&s->gz, flush);
    if (rc == Z_STREAM_ERROR)
      die("deflate failed");
    sink_emit(s, s->stage, MK_STAGE - s->gz.avail_out);
    if (flush == Z_FINISH ? rc == Z_STREAM_END
                          : s->gz.avail_in == 0 && s->gz.avail_out != 0)
      return;
  }
}

/* Feed bytes to the encoder. */
static void sink_write(struct sink *s, const void *p, size_t n) {
  const uint8_t *b = p;
  switch (s->codec) {
  case DATA_ZSTD:
    sink_zstd(s, p, n, ZSTD_e_continue);
    break;
  case DATA_GZIP:
    /* deflate counts in uInt: feed huge inputs in slices. */
    for (size_t done = 0; done < n;) {
      size_t k = n - done > (1u << 30) ? (1u << 30) : n - done;
      sink_gzip(s, b + done, k, Z_NO_FLUSH);
      done += k;
    }
    break;
  case DATA_CRC32C:
    for (size_t i = 0; i < n; i++)
      s->crc = (s->crc >> 8) ^ s->crc_table[(s->crc ^ b[i]) & 0xFF];
    sink_emit(s, p, n);
    break;
  case DATA_BYTES:
    sink_emit(s, p, n);
    break;
  }
}

/* Finish the stream (frame end, gzip trailer, checksum) and free it. */
static void sink_close(struct sink *s) {
  if (s->codec == DATA_ZSTD) {
    sink_zstd(s, NULL, 0, ZSTD_e_end);
    ZSTD_freeCCtx(s->zc);
  } else if (s->codec == DATA_GZIP) {
    sink_gzip(s, NULL, 0, Z_FINISH);
    deflateEnd(&s->gz);
  } else if (s->codec == DATA_CRC32C) {
    uint8_t t[4]; /* crc32c appends the checksum, little endian */
    le_store(t, s->crc ^ 0xFFFFFFFFu, 4);
    sink_emit(s, t, 4);
  }
  free(s->stage);
  s->stage = NULL;
}

/* ---- string sources ---- */

/* A read-only source of string elements, generated on demand so that no
 * chunk is ever held in memory. Elements at or past count are padding:
 * the fill value, as Zarr writers store the outside of edge chunks. */
struct strsrc {
  uint64_t count; /* elements in the array */
  size_t max_len; /* no element is longer (sizes the scratch buffer) */
  /* Write element i (< count) into out, return its length. */
  size_t (*get)(const void *ctx, uint64_t i, char *out);
  /* Optional: the length of element i without building it (speed). */
  size_t (*len)(const void *ctx, uint64_t i);
  const void *ctx;
  const char *fill; /* fill value: padding and missing chunks */
};

/* Element i of src into scratch (max_len bytes); returns its length. */
static size_t strsrc_get(const struct strsrc *s, uint64_t i, char *scratch) {
  size_t n;
  if (i >= s->count) {
    n = strlen(s->fill);
    memcpy(scratch, s->fill, n);
  } else {
    n = s->get(s->ctx, i, scratch);
  }
  if (n > s->max_len)
    die("element %" PRIu64 " is %zu bytes, more than %zu", i, n, s->max_len);
  return n;
}

/* Length of element i of src. */
static size_t strsrc_len(const struct strsrc *s, uint64_t i, char *scratch) {
  if (i < s->count && s->len)
    return s->len(s->ctx, i);
  return strsrc_get(s, i, scratch);
}

/* Write elements [first, first+n) as text: one per line, '\n' inside an
 * element shown as ' ' (so each element stays one line), as zarrfs does. */
static void text_strings(struct wfile *w, const struct strsrc *s,
                         uint64_t first, uint64_t n, int as_fill,
                         char *scratch) {
  for (uint64_t i = first; i < first + n; i++) {
    size_t len;
    if (as_fill) {
      len = strlen(s->fill);
      memcpy(scratch, s->fill, len);
    } else {
      len = strsrc_get(s, i, scratch);
    }
    for (size_t k = 0; k < len; k++)
      if (scratch[k] == '\n')
        scratch[k] = ' ';
    scratch[len] = '\n';
    wfile_write(w, scratch, len + 1);
  }
}

/* ---- array->bytes codecs for strings ---- */

/* A zarrs.vlen configuration (index codecs are always [bytes little]). */
struct vlen_cfg {
  int index_end;        /* index_location "end" (else "start") */
  int index_u32;        /* index_data_type uint32 (else uint64) */
  enum data_codec data; /* data_codecs [bytes] plus this */
};

/* The codecs JSON list of a zarrs.vlen array. */
static void vlen_codecs_json(char *out, size_t cap, const struct vlen_cfg *c) {
  fmt(out, cap,
      "[{\"name\": \"zarrs.vlen\", \"configuration\": {"
      "\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
      "{\"endian\": \"little\"}}], "
      "\"data_codecs\": [{\"name\": \"bytes\"}%s], "
      "\"index_data_type\": \"%s\", \"index_location\": \"%s\"}}]",
      data_codec_json(c->data), c->index_u32 ? "uint32" : "uint64",
      c->index_end ? "end" : "start");
}

/* Write the n+1 offsets of elements [first, first+n), little endian. */
static void vlen_write_index(struct wfile *out, const struct vlen_cfg *c,
                             const struct strsrc *s, uint64_t first, uint64_t n,
                             char *scratch) {
  int w = c->index_u32 ? 4 : 8;
  uint8_t stage[MK_STAGE];
  size_t used = 0;
  uint64_t off = 0;
  for (uint64_t i = 0; i <= n; i++) {
    if (used + 8 > sizeof stage) {
      wfile_write(out, stage, used);
      used = 0;
    }
    le_store(stage + used, off, w);
    used += (size_t)w;
    if (i < n)
      off += strsrc_len(s, first + i, scratch);
  }
  wfile_write(out, stage, used);
}

/* Write elements [first, first+n) as one zarrs.vlen chunk:
 *   start: u64le(L) | index | data      end: data | index | u64le(L)
 * where L is the byte length of the index. An empty data part is stored
 * as 0 bytes without running the data codecs (zarrs does the same). tee,
 * if set, receives a copy of the encoded data part. */
static void vlen_write_chunk(struct wfile *out, const struct vlen_cfg *c,
                             const struct strsrc *s, uint64_t first, uint64_t n,
                             char *scratch, struct wfile *tee) {
  uint64_t data_len = 0;
  for (uint64_t i = 0; i < n; i++) {
    size_t len = strsrc_len(s, first + i, scratch);
    if (data_len > UINT64_MAX - len)
      die("chunk data size overflows");
    data_len += len;
  }
  if (c->index_u32 && data_len > UINT32_MAX)
    die("index offsets are too large for a uint32 index_data_type");
  if (n >= UINT64_MAX / 8)
    die("chunk too large");
  uint64_t index_len = (n + 1) * (c->index_u32 ? 4 : 8);

  if (!c->index_end) {
    wfile_le(out, index_len, 8);
    vlen_write_index(out, c, s, first, n, scratch);
  }
  if (data_len) {
    struct sink k;
    sink_open(&k, out, c->data, data_len, tee);
    for (uint64_t i = 0; i < n; i++)
      sink_write(&k, scratch, strsrc_get(s, first + i, scratch));
    sink_close(&k);
  }
  if (c->index_end) {
    vlen_write_index(out, c, s, first, n, scratch);
    wfile_le(out, index_len, 8);
  }
}

/* Write elements [first, first+n) as one vlen-utf8 chunk (u32le count,
 * then u32le length and bytes per element), through the outer codec. */
static void vlen_utf8_write_chunk(struct wfile *out, enum data_codec outer,
                                  const struct strsrc *s, uint64_t first,
                                  uint64_t n, char *scratch) {
  if (n > UINT32_MAX)
    die("vlen-utf8 chunk of %" PRIu64 " elements: count must fit u32", n);
  uint64_t total = 4;
  for (uint64_t i = 0; i < n; i++)
    total += 4 + strsrc_len(s, first + i, scratch);
  struct sink k;
  uint8_t t[4];
  sink_open(&k, out, outer, total, NULL);
  le_store(t, n, 4);
  sink_write(&k, t, 4);
  for (uint64_t i = 0; i < n; i++) {
    size_t len = strsrc_get(s, first + i, scratch);
    le_store(t, len, 4);
    sink_write(&k, t, 4);
    sink_write(&k, scratch, len);
  }
  sink_close(&k);
}

/* ---- sharding_indexed ---- */

/* How the inner chunks of a shard are encoded. */
struct inner_cfg {
  int utf8;              /* vlen-utf8 + outer, else zarrs.vlen */
  struct vlen_cfg vlen;  /* zarrs.vlen configuration */
  enum data_codec outer; /* vlen-utf8: the bytes->bytes codec after it */
};

/* The codecs list of one (inner or unsharded) string chunk. */
static void inner_codecs_json(char *out, size_t cap,
                              const struct inner_cfg *c) {
  if (c->utf8)
    fmt(out, cap, "[{\"name\": \"vlen-utf8\"}%s]", data_codec_json(c->outer));
  else
    vlen_codecs_json(out, cap, &c->vlen);
}

/* The codecs list of a 1-D sharded string array: sharding_indexed with
 * inner chunks of `inner` elements, index [bytes LE, crc32c] at the end (the
 * zarr-python defaults). */
static void shard_codecs_json(char *out, size_t cap, uint64_t inner,
                              const struct inner_cfg *c) {
  char ic[1024];
  inner_codecs_json(ic, sizeof ic, c);
  fmt(out, cap,
      "[{\"name\": \"sharding_indexed\", \"configuration\": {"
      "\"chunk_shape\": [%" PRIu64 "], \"codecs\": %s, \"index_codecs\": ["
      "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}, "
      "{\"name\": \"crc32c\"}], \"index_location\": \"end\"}}]",
      inner, ic);
}

/* Write one inner (or unsharded) chunk of elements [first, first+n). */
static void inner_write_chunk(struct wfile *out, const struct inner_cfg *c,
                              const struct strsrc *s, uint64_t first,
                              uint64_t n, char *scratch) {
  if (c->utf8)
    vlen_utf8_write_chunk(out, c->outer, s, first, n, scratch);
  else
    vlen_write_chunk(out, &c->vlen, s, first, n, scratch, NULL);
}

/* Write a shard of `per` inner chunks of `inner` elements starting at
 * element `first`: the inner chunks one after another, then the index of
 * (offset, nbytes) u64le pairs and its crc32c. Inner chunks wholly past the
 * array's end are not stored (the empty marker, as zarr-python does). */
static void shard_write(struct wfile *out, const struct inner_cfg *c,
                        const struct strsrc *s, uint64_t first, uint64_t per,
                        uint64_t inner, char *scratch) {
  uint64_t *pairs = xmalloc(sizeof(uint64_t) * 2 * per);
  off_t start = ftello(out->f);
  for (uint64_t k = 0; k < per; k++) {
    uint64_t f = first + k * inner;
    if (f >= s->count) {
      pairs[2 * k] = pairs[2 * k + 1] = UINT64_MAX;
      continue;
    }
    off_t a = ftello(out->f);
    inner_write_chunk(out, c, s, f, inner, scratch);
    off_t b = ftello(out->f);
    if (a < 0 || b < 0 || start < 0)
      die("%s: cannot tell the file position", out->path);
    pairs[2 * k] = (uint64_t)(a - start);
    pairs[2 * k + 1] = (uint64_t)(b - a);
  }
  struct sink k;
  sink_open(&k, out, DATA_CRC32C, 16 * per, NULL);
  for (uint64_t i = 0; i < 2 * per; i++) {
    uint8_t t[8];
    le_store(t, pairs[i], 8);
    sink_write(&k, t, 8);
  }
  sink_close(&k);
  free(pairs);
}

/* ---- metadata ---- */

/* Chunk key encodings as JSON. */
#define KEY_DEFAULT_SLASH                                                      \
  "{\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}"
#define KEY_DEFAULT_DOT                                                        \
  "{\"name\": \"default\", \"configuration\": {\"separator\": \".\"}}"
#define KEY_V2_DOT                                                             \
  "{\"name\": \"v2\", \"configuration\": {\"separator\": \".\"}}"
#define KEY_V2_SLASH                                                           \
  "{\"name\": \"v2\", \"configuration\": {\"separator\": \"/\"}}"

/* How an array names its chunks (zarr-formats.md 1.5). */
struct keyenc {
  const char *json;
  int v2;   /* "v2": no "c" prefix */
  char sep; /* '/' or '.' */
};

/* The store key of the chunk at grid index idx[0..ndim), relative to the
 * array: default "c/1/2" or "c.1.2", v2 "1.2" or "1/2". */
static void chunk_key(char *out, size_t cap, const struct keyenc *k, int ndim,
                      const uint64_t *idx) {
  size_t used = 0;
  out[0] = '\0';
  if (!k->v2) {
    fmt(out, cap, "c");
    used = 1;
  }
  for (int d = 0; d < ndim; d++) {
    int with_sep = !k->v2 || d > 0; /* v2 has no separator before index 0 */
    fmt(out + used, cap - used, "%.*s%" PRIu64, with_sep, &k->sep, idx[d]);
    used += strlen(out + used);
  }
}

/* A JSON list of ndim integers. */
static void json_dims(char *out, size_t cap, int ndim, const uint64_t *v) {
  size_t used = 0;
  fmt(out, cap, "[");
  used = 1;
  for (int d = 0; d < ndim; d++) {
    fmt(out + used, cap - used, "%s%" PRIu64, d ? ", " : "", v[d]);
    used += strlen(out + used);
  }
  fmt(out + used, cap - used, "]");
}

/* What an array zarr.json says. */
struct array_meta {
  int ndim;
  const uint64_t *shape, *chunk;
  const char *dtype;       /* data_type */
  const char *fill_json;   /* fill_value, as JSON */
  const char *keyenc;      /* chunk_key_encoding, as JSON */
  const char *codecs;      /* codecs list, as JSON */
  const char *description; /* attributes.description, plain ASCII */
};

/* Write the array's zarr.json at dir/rel ("" for the root). */
static void write_array_meta(const char *dir, const char *rel,
                             const struct array_meta *m) {
  char shape[256], chunk[256], path[MK_PATH_MAX];
  json_dims(shape, sizeof shape, m->ndim, m->shape);
  json_dims(chunk, sizeof chunk, m->ndim, m->chunk);
  fmt(path, sizeof path, "%s%szarr.json", rel, *rel ? "/" : "");
  struct wfile w;
  wfile_create(&w, dir, path);
  wfile_printf(&w,
               "{\n"
               "  \"zarr_format\": 3,\n"
               "  \"node_type\": \"array\",\n"
               "  \"shape\": %s,\n"
               "  \"data_type\": \"%s\",\n"
               "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
               "{\"chunk_shape\": %s}},\n"
               "  \"chunk_key_encoding\": %s,\n"
               "  \"fill_value\": %s,\n"
               "  \"codecs\": %s,\n"
               "  \"attributes\": {",
               shape, m->dtype, chunk, m->keyenc, m->fill_json, m->codecs);
  if (m->description)
    wfile_printf(&w, "\"description\": \"%s\"", m->description);
  wfile_puts(&w, "}\n}\n");
  wfile_close(&w);
}

/* Write a group zarr.json at dir/rel with an optional description. */
static void write_group_meta(const char *dir, const char *rel,
                             const char *description) {
  char path[MK_PATH_MAX];
  fmt(path, sizeof path, "%s%szarr.json", rel, *rel ? "/" : "");
  struct wfile w;
  wfile_create(&w, dir, path);
  wfile_puts(&w, "{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n"
                 "  \"attributes\": {");
  if (description)
    wfile_printf(&w, "\"description\": \"%s\"", description);
  wfile_puts(&w, "}\n}\n");
  wfile_close(&w);
}

/* ---- example: string arrays ---- */

/* Open the expected text of array `name` (a path below the store root:
 * "obs/cell_type" becomes expdir/obs/cell_type.txt); expdir NULL: a
 * memory file that expected_close discards. */
static void expected_create(struct wfile *w, const char *expdir,
                            const char *name) {
  char rel[MK_PATH_MAX];
  if (!expdir) {
    wfile_memory(w);
    return;
  }
  fmt(rel, sizeof rel, "%s.txt", name);
  wfile_create(w, expdir, rel);
}

/* Close an expected text opened by expected_create. */
static void expected_close(struct wfile *w) {
  wfile_close(w);
  free(w->mem);
}

/* A 1-D string array of the example store. */
struct str_array {
  const char *name;
  uint64_t chunk;
  const struct keyenc *key;
  int utf8;              /* vlen-utf8 + outer codec, else zarrs.vlen */
  struct vlen_cfg vlen;  /* zarrs.vlen configuration */
  enum data_codec outer; /* vlen-utf8: the bytes->bytes codec after it */
  uint64_t missing;      /* chunk not written (UINT64_MAX: none) */
  uint64_t inner;        /* > 0: chunks are shards of inner chunks */
  const struct strsrc *src;
  const char *description;
};

/* Write a string array, its chunks and expdir/<name>.txt (expdir NULL:
 * no expected text). */
static void example_strings(const char *dir, const char *expdir,
                            const struct str_array *a) {
  const struct strsrc *s = a->src;
  char codecs[2048], fill[256];
  const struct inner_cfg ic = {a->utf8, a->vlen, a->outer};
  if (a->inner)
    shard_codecs_json(codecs, sizeof codecs, a->inner, &ic);
  else
    inner_codecs_json(codecs, sizeof codecs, &ic);
  fmt(fill, sizeof fill, "\"%s\"", s->fill); /* fills here are plain ASCII */
  struct array_meta m = {1,    &s->count,    &a->chunk, "string",
                         fill, a->key->json, codecs,    a->description};
  write_array_meta(dir, a->name, &m);

  char *scratch = xmalloc(s->max_len + 1);
  char rel[MK_PATH_MAX], key[256];
  struct wfile text;
  expected_create(&text, expdir, a->name);
  uint64_t nchunks = (s->count + a->chunk - 1) / a->chunk;
  for (uint64_t c = 0; c < nchunks; c++) {
    uint64_t first = c * a->chunk;
    uint64_t valid = s->count - first < a->chunk ? s->count - first : a->chunk;
    text_strings(&text, s, first, valid, c == a->missing, scratch);
    if (c == a->missing)
      continue;
    chunk_key(key, sizeof key, a->key, 1, &c);
    fmt(rel, sizeof rel, "%s/%s", a->name, key);
    struct wfile w;
    wfile_create(&w, dir, rel);
    if (a->inner)
      shard_write(&w, &ic, s, first, a->chunk / a->inner, a->inner, scratch);
    else
      inner_write_chunk(&w, &ic, s, first, a->chunk, scratch);
    wfile_close(&w);
  }
  expected_close(&text);
  free(scratch);
}

/* Copy a C string into out; a helper for the generators below. */
static size_t emit(char *out, const char *s) {
  size_t n = strlen(s);
  memcpy(out, s, n);
  return n;
}

/* City-like names: prefix + city + suffix picked through a bijection of
 * i, so all 1000 differ; a few fixed values test the text rules (UTF-8,
 * a newline, an empty string at a chunk's last slot, UTF-8 in the edge
 * chunk). */
static size_t city_name(const void *ctx, uint64_t i, char *out) {
  (void)ctx;
  static const char *const city[] = {
      "Tokyo",   "Jakarta", "Delhi",      "Manila",  "Mumbai",  "Seoul",
      "Cairo",   "Dhaka",   "Bangkok",    "Moscow",  "Lagos",   "Lima",
      "Karachi", "Osaka",   "Chengdu",    "Tehran",  "Bogota",  "Luanda",
      "Madrid",  "Nairobi", "Baghdad",    "Riyadh",  "Toronto", "Sydney",
      "Berlin",  "Algiers", "Casablanca", "Kabul",   "Quito",   "Accra",
      "Dakar",   "Hanoi",   "Santiago",   "Caracas", "Havana",  "Rome",
      "Athens",  "Lisbon",  "Vienna",     "Oslo"};
  static const char *const pre[] = {"",       "North ", "South ", "East ",
                                    "West ",  "New ",   "Old ",   "Port ",
                                    "Upper ", "Lower "};
  static const char *const suf[] = {
      "",         " Heights", " Springs",  " Bay",  " Falls",
      " Harbour", " Hills",   " Junction", " Park", " Valley"};
  switch (i) {
  case 7:
    return emit(out, "Z\xc3\xbcrich"); /* Zürich */
  case 299:
    return 0; /* empty, last element of chunk 0 */
  case 301:
    return emit(out, "Stratford-upon-Avon\nWarwickshire");
  case 950:
    return emit(out, "Krak\xc3\xb3w"); /* Kraków, in the edge chunk */
  }
  uint64_t j = (i * 7919) % 4000; /* 7919 is prime: a bijection mod 4000 */
  size_t n = emit(out, pre[j / 40 % 10]);
  n += emit(out + n, city[j % 40]);
  return n + emit(out + n, suf[j / 400]);
}

/* Gene-like names (prefix and number through a bijection of i), with one
 * UTF-8 value and an empty last element. */
static size_t gene_name(const void *ctx, uint64_t i, char *out) {
  (void)ctx;
  static const char *const pre[] = {"BRCA", "TP",  "MYC",   "EGFR", "KRAS",
                                    "CD",   "IL",  "HOX",   "SOX",  "PAX",
                                    "FOXP", "WNT", "NOTCH", "HLA-", "COL",
                                    "KRT",  "ZNF", "SLC",   "ABCB", "MAPK"};
  if (i == 999)
    return 0;
  if (i == 640)
    return emit(out, "SNCA (\xce\xb1-synuclein)"); /* α */
  uint64_t j = (i * 7919) % 2000;
  size_t n = emit(out, pre[j % 20]);
  return n + (size_t)sprintf(out + n, "%" PRIu64, j / 20 + 1);
}

/* Categorical cell-type labels (some UTF-8), picked by a hash of i so
 * that `sort | uniq -c` has something to count. */
static size_t cell_label(const void *ctx, uint64_t i, char *out) {
  (void)ctx;
  static const char *const label[] = {
      "CD4+ T cell",    "CD8+ T cell",    "B cell",
      "NK cell",        "CD14+ monocyte", "CD16+ monocyte",
      "dendritic cell", "plasma cell",    "\xce\xb3\xce\xb4 T cell", /* γδ */
      "megakaryocyte",  "erythrocyte",    "na\xc3\xafve B cell"};    /* ï */
  uint64_t h = (i * 2654435761u) >> 11;
  return emit(out, label[h % 12]);
}

/* ---- example: fixed-size arrays ---- */

/* Element types of the fixed-size example arrays. */
enum num_type { NUM_BOOL, NUM_INT32, NUM_FLOAT64 };

/* A fixed-size array of the example store (at most 2-D). */
struct num_array {
  const char *name;
  enum num_type type;
  int ndim;
  uint64_t shape[2], chunk[2];
  int big_endian;
  enum data_codec data;
  const struct keyenc *key;
  double (*value)(uint64_t flat); /* element at C-order index flat */
  double fill;
  const char *fill_json;
  uint64_t missing; /* C-order chunk index not written (UINT64_MAX: none) */
  const char *description;
};

/* Shortest text that reads back as the same double, laid out as zarrfs
 * (and Python's repr) do: plain when the first digit's decimal exponent is
 * in [-4, 16), else d.ddde+XX; no trailing ".0". "0.5", "-3", "nan". */
static void double_text(char *out, size_t cap, double v) {
  char e[64];
  if (isnan(v) || isinf(v)) {
    fmt(out, cap, "%s", isnan(v) ? "nan" : v < 0 ? "-inf" : "inf");
    return;
  }
  for (int p = 1; p <= 17; p++) {
    fmt(e, sizeof e, "%.*e", p - 1, v);
    if (strtod(e, NULL) == v)
      break;
  }
  char *ep = strchr(e, 'e');
  int x = atoi(ep + 1);
  if (x < -4 || x >= 16) {
    fmt(out, cap, "%s", e);
    return;
  }
  /* Plain layout of the digits d1 d2 ... with d1 at 10^x (x < 16, so at
   * most 4 + 17 + 16 characters). */
  char t[64];
  size_t used = 0;
  const char *q = e;
  if (*q == '-')
    t[used++] = *q++;
  if (x < 0) {
    t[used++] = '0';
    t[used++] = '.';
    for (int k = -1; k > x; k--)
      t[used++] = '0';
  }
  for (int k = 0; q < ep || k <= x; k++) {
    if (x >= 0 && k == x + 1)
      t[used++] = '.';
    if (q < ep && *q == '.')
      q++;
    t[used++] = q < ep ? *q++ : '0';
  }
  t[used] = '\0';
  fmt(out, cap, "%s", t);
}

/* One element as the text view shows it. */
static void num_text(char *out, size_t cap, enum num_type t, double v) {
  if (t == NUM_BOOL)
    fmt(out, cap, "%s", v != 0 ? "true" : "false");
  else if (t == NUM_INT32)
    fmt(out, cap, "%" PRId32, (int32_t)v);
  else
    double_text(out, cap, v);
}

/* One element as stored bytes: returns its size. */
static size_t num_bytes(uint8_t *out, enum num_type t, int big, double v) {
  uint64_t bits;
  size_t w;
  if (t == NUM_BOOL) {
    out[0] = v != 0;
    return 1;
  }
  if (t == NUM_INT32) {
    bits = (uint32_t)(int32_t)v;
    w = 4;
  } else if (isnan(v)) {
    bits = 0x7ff8000000000000u; /* the canonical NaN "NaN" stands for */
    w = 8;
  } else {
    memcpy(&bits, &v, 8);
    w = 8;
  }
  for (size_t i = 0; i < w; i++)
    out[big ? w - 1 - i : i] = (uint8_t)(bits >> (8 * i));
  return w;
}

/* Write a fixed-size array, its chunks (edge chunks at full size, the
 * outside filled) and expdir/<name>.txt (expdir NULL: none). */
static void example_numbers(const char *dir, const char *expdir,
                            const struct num_array *a) {
  static const char *const dtype[] = {"bool", "int32", "float64"};
  char codecs[512], rel[MK_PATH_MAX], key[256], line[64];
  fmt(codecs, sizeof codecs, "[{\"name\": \"bytes\"%s}%s]",
      a->type == NUM_BOOL ? ""
      : a->big_endian     ? ", \"configuration\": {\"endian\": \"big\"}"
                          : ", \"configuration\": {\"endian\": \"little\"}",
      data_codec_json(a->data));
  struct array_meta m = {a->ndim,      a->shape,     a->chunk, dtype[a->type],
                         a->fill_json, a->key->json, codecs,   a->description};
  write_array_meta(dir, a->name, &m);

  /* The whole-array text, C order over the array (not chunk by chunk). */
  uint64_t rows = a->ndim == 2 ? a->shape[0] : 1;
  uint64_t cols = a->shape[a->ndim - 1];
  uint64_t crow = a->ndim == 2 ? a->chunk[0] : 1;
  uint64_t ccol = a->chunk[a->ndim - 1];
  uint64_t grid_cols = (cols + ccol - 1) / ccol;
  uint64_t grid_rows = (rows + crow - 1) / crow;
  struct wfile text;
  expected_create(&text, expdir, a->name);
  for (uint64_t r = 0; r < rows; r++)
    for (uint64_t c = 0; c < cols; c++) {
      int missing = (r / crow) * grid_cols + c / ccol == a->missing;
      num_text(line, sizeof line, a->type,
               missing ? a->fill : a->value(r * cols + c));
      wfile_printf(&text, "%s\n", line);
    }
  expected_close(&text);

  for (uint64_t gr = 0; gr < grid_rows; gr++)
    for (uint64_t gc = 0; gc < grid_cols; gc++) {
      if (gr * grid_cols + gc == a->missing)
        continue;
      uint64_t idx[2] = {gr, gc};
      chunk_key(key, sizeof key, a->key, a->ndim, a->ndim == 2 ? idx : idx + 1);
      fmt(rel, sizeof rel, "%s/%s", a->name, key);
      struct wfile w;
      struct sink k;
      wfile_create(&w, dir, rel);
      uint64_t item = a->type == NUM_BOOL ? 1 : a->type == NUM_INT32 ? 4 : 8;
      sink_open(&k, &w, a->data, crow * ccol * item, NULL);
      for (uint64_t r = gr * crow; r < (gr + 1) * crow; r++)
        for (uint64_t c = gc * ccol; c < (gc + 1) * ccol; c++) {
          uint8_t b[8];
          double v = r < rows && c < cols ? a->value(r * cols + c) : a->fill;
          sink_write(&k, b, num_bytes(b, a->type, a->big_endian, v));
        }
      sink_close(&k);
      wfile_close(&w);
    }
}

/* matrix: i * 0.5 - 3 over the flat index. */
static double matrix_value(uint64_t i) { return (double)i * 0.5 - 3; }

/* counts: signed values that need real byte swapping, int32 extremes at
 * both ends. */
static double counts_value(uint64_t i) {
  if (i == 0)
    return INT32_MIN;
  if (i == 19)
    return INT32_MAX;
  return ((double)i * (double)i - 50) * 1000;
}

/* flags: every third element is true. */
static double flags_value(uint64_t i) { return i % 3 == 0; }

/* The example store: a group of six arrays and their EXPECTED texts. */
static void cmd_example(const char *dir) {
  static const struct keyenc slash = {KEY_DEFAULT_SLASH, 0, '/'};
  static const struct keyenc dot = {KEY_DEFAULT_DOT, 0, '.'};
  static const struct keyenc v2dot = {KEY_V2_DOT, 1, '.'};
  static const struct keyenc v2slash = {KEY_V2_SLASH, 1, '/'};
  const struct strsrc cities = {
      .count = 1000, .max_len = 64, .get = city_name, .fill = ""};
  const struct strsrc genes = {
      .count = 1000, .max_len = 64, .get = gene_name, .fill = ""};
  const struct strsrc labels = {
      .count = 500, .max_len = 64, .get = cell_label, .fill = "unknown"};
  const struct str_array strs[] = {
      {.name = "names_start",
       .chunk = 300,
       .key = &slash,
       .vlen = {.index_end = 0, .index_u32 = 0, .data = DATA_BYTES},
       .missing = UINT64_MAX,
       .src = &cities,
       .description = "city names; zarrs.vlen, uint64 index at the start, "
                      "data [bytes]"},
      {.name = "names_end",
       .chunk = 250,
       .key = &dot,
       .vlen = {.index_end = 1, .index_u32 = 1, .data = DATA_ZSTD},
       .missing = UINT64_MAX,
       .src = &genes,
       .description = "gene names; zarrs.vlen, uint32 index at the end, data "
                      "[bytes, zstd]"},
      {.name = "labels_utf8",
       .chunk = 128,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = 2,
       .src = &labels,
       .description = "cell-type labels; vlen-utf8 + zstd; chunk c/2 is not "
                      "stored and reads as the fill value"},
      {.name = "obs_names_sharded",
       .chunk = 400,
       .inner = 50,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = UINT64_MAX,
       .src = &genes,
       .description = "gene names as anndata 0.13 writes strings: "
                      "sharding_indexed shards of 400, inner chunks of 50 in "
                      "vlen-utf8 + zstd, index at the end with crc32c"},
  };
  const struct num_array nums[] = {
      {.name = "matrix",
       .type = NUM_FLOAT64,
       .ndim = 2,
       .shape = {7, 5},
       .chunk = {3, 2},
       .data = DATA_GZIP,
       .key = &slash,
       .value = matrix_value,
       .fill = NAN,
       .fill_json = "\"NaN\"",
       .missing = 4, /* c/1/1 in the 3 x 3 grid */
       .description = "i * 0.5 - 3 in C order; chunk c/1/1 is not stored "
                      "(NaN)"},
      {.name = "counts",
       .type = NUM_INT32,
       .ndim = 1,
       .shape = {20},
       .chunk = {8},
       .big_endian = 1,
       .data = DATA_BYTES,
       .key = &v2dot,
       .value = counts_value,
       .fill = 0,
       .fill_json = "0",
       .missing = UINT64_MAX,
       .description = "big-endian int32, v2 chunk keys"},
      {.name = "flags",
       .type = NUM_BOOL,
       .ndim = 1,
       .shape = {10},
       .chunk = {10},
       .data = DATA_BYTES,
       .key = &v2slash,
       .value = flags_value,
       .fill = 0,
       .fill_json = "false",
       .missing = UINT64_MAX,
       .description = "booleans, one chunk"},
  };
  mkdirs(dir);
  write_group_meta(dir, "",
                   "zarrfs example store: string arrays in zarrs.vlen (index "
                   "at the start and at the end) and vlen-utf8, and numeric "
                   "arrays; EXPECTED/ holds each array's values.txt");
  char expdir[MK_PATH_MAX];
  fmt(expdir, sizeof expdir, "%s/EXPECTED", dir);
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    example_strings(dir, expdir, &strs[i]);
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    example_numbers(dir, expdir, &nums[i]);
}

/* ---- cells: the tutorial's single-cell-style store ---- */

/* The shape of the tutorial store: 3,000 cells from four donors, 100
 * genes, laid out as anndata writes a Zarr V3 store (obs and var groups of
 * columns, X a cells x genes matrix). */
#define CELLS_N 3000
#define GENES_N 100
#define CELL_TYPES 8

/* Cell types, with how many cells in 100 have each (a PBMC-like mix). */
static const struct {
  const char *name;
  unsigned per100;
} CELL_TYPE[CELL_TYPES] = {
    {"CD4+ T cell", 30},   {"CD14+ monocyte", 20},
    {"CD8+ T cell", 15},   {"B cell", 12},
    {"NK cell", 10},       {"CD16+ monocyte", 6},
    {"dendritic cell", 4}, {"\xce\xb3\xce\xb4 T cell", 3}, /* γδ */
};

/* A mixing hash of (a, b): the generators below are functions of the
 * index, so the store is the same byte for byte on every run. */
static uint64_t cells_hash(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9e3779b97f4a7c15u ^ (b + 0x632be59bd9b4e5ffu);
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9u;
  return x ^ x >> 29;
}

/* The cell type of cell i, drawn with the weights of CELL_TYPE. */
static unsigned cells_type(uint64_t i) {
  unsigned r = (unsigned)(cells_hash(i, 1) % 100), t = 0;
  while (r >= CELL_TYPE[t].per100)
    r -= CELL_TYPE[t++].per100;
  return t;
}

/* obs/_index: 10x-style barcodes, 16 bases and "-1". The bases spell
 * (i * odd + c) mod 2^32, a bijection of i: no two cells share one. */
static size_t cells_barcode(const void *ctx, uint64_t i, char *out) {
  (void)ctx;
  static const char base[] = "ACGT";
  uint32_t x = (uint32_t)i * 0x9e3779b1u + 0x7f4a7c15u;
  for (int k = 15; k >= 0; k--, x >>= 2)
    out[k] = base[x & 3];
  return 16 + emit(out + 16, "-1");
}

/* obs/cell_type. */
static size_t cells_type_name(const void *ctx, uint64_t i, char *out) {
  (void)ctx;
  return emit(out, CELL_TYPE[cells_type(i)].name);
}

/* obs/donor: cells come in donor blocks, as a concatenation leaves them. */
static size_t cells_donor(const void *ctx, uint64_t i, char *out) {
  (void)ctx;
  static const char *const donor[] = {"donor-A", "donor-B", "donor-C",
                                      "donor-D"};
  return emit(out, donor[i * 4 / CELLS_N]);
}

/* var/_index: gene symbols; the first 2 * CELL_TYPES are the marker genes
 * of the cell types (two each), the rest housekeeping-like names. */
static size_t cells_gene(const void *ctx, uint64_t g, char *out) {
  (void)ctx;
  static const char *const marker[2 * CELL_TYPES] = {
      "IL7R", "CCR7", "CD14",   "LYZ",   "CD8A",   "CD8B", "MS4A1", "CD79A",
      "GNLY", "NKG7", "FCGR3A", "MS4A7", "FCER1A", "CST3", "TRDC",  "TRGC1"};
  if (g < 2 * CELL_TYPES)
    return emit(out, marker[g]);
  static const char *const fam[] = {"RPL",   "RPS",  "MT-ND", "EEF1A", "ACTB",
                                    "GAPDH", "TMSB", "HLA-D", "ZNF",   "SLC"};
  return (size_t)sprintf(out, "%s%" PRIu64, fam[g % 10], g / 10 + 1);
}

/* var/gene_ids: Ensembl-style identifiers. */
static size_t cells_gene_id(const void *ctx, uint64_t g, char *out) {
  (void)ctx;
  return (size_t)sprintf(out, "ENSG%011" PRIu64,
                         100000 + cells_hash(g, 3) % 200000 * 10);
}

/* X[i, g]: mostly zeros; a cell's two marker genes are high. */
static double cells_count(uint64_t i, uint64_t g) {
  uint64_t h = cells_hash(i * GENES_N + g, 4);
  double v = h % 10 < 7 ? 0 : (double)(h >> 8 & 3);
  if (g < 2 * CELL_TYPES && g / 2 == cells_type(i))
    v += 5 + (double)(h >> 16 & 15);
  return v;
}

/* X over its flat C-order index. */
static double cells_x(uint64_t flat) {
  return cells_count(flat / GENES_N, flat % GENES_N);
}

/* obs/n_genes: the genes a cell expresses (non-zero in its row of X). */
static double cells_n_genes(uint64_t i) {
  unsigned n = 0;
  for (uint64_t g = 0; g < GENES_N; g++)
    n += cells_count(i, g) != 0;
  return n;
}

/* The tutorial store: obs and var groups of columns and the matrix X;
 * with expdir, the text of each values.txt there (expdir/obs/donor.txt). */
static void cmd_cells(const char *dir, const char *expdir) {
  static const struct keyenc slash = {KEY_DEFAULT_SLASH, 0, '/'};
  const struct strsrc barcodes = {
      .count = CELLS_N, .max_len = 32, .get = cells_barcode, .fill = ""};
  const struct strsrc types = {
      .count = CELLS_N, .max_len = 32, .get = cells_type_name, .fill = ""};
  const struct strsrc donors = {
      .count = CELLS_N, .max_len = 16, .get = cells_donor, .fill = ""};
  const struct strsrc genes = {
      .count = GENES_N, .max_len = 16, .get = cells_gene, .fill = ""};
  const struct strsrc gene_ids = {
      .count = GENES_N, .max_len = 16, .get = cells_gene_id, .fill = ""};
  const struct str_array strs[] = {
      {.name = "obs/_index",
       .chunk = 1000,
       .inner = 100,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = UINT64_MAX,
       .src = &barcodes,
       .description = "cell barcodes; sharding_indexed shards of 1000, "
                      "inner chunks of 100 in vlen-utf8 + zstd"},
      {.name = "obs/cell_type",
       .chunk = 1000,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = UINT64_MAX,
       .src = &types,
       .description = "annotated cell type"},
      {.name = "obs/donor",
       .chunk = 1000,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = UINT64_MAX,
       .src = &donors,
       .description = "donor of each cell"},
      {.name = "var/_index",
       .chunk = GENES_N,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = UINT64_MAX,
       .src = &genes,
       .description = "gene symbols"},
      {.name = "var/gene_ids",
       .chunk = GENES_N,
       .key = &slash,
       .utf8 = 1,
       .outer = DATA_ZSTD,
       .missing = UINT64_MAX,
       .src = &gene_ids,
       .description = "Ensembl gene identifiers"},
  };
  const struct num_array nums[] = {
      {.name = "X",
       .type = NUM_INT32,
       .ndim = 2,
       .shape = {CELLS_N, GENES_N},
       .chunk = {500, 25},
       .data = DATA_ZSTD,
       .key = &slash,
       .value = cells_x,
       .fill = 0,
       .fill_json = "0",
       .missing = UINT64_MAX,
       .description = "counts, cells x genes"},
      {.name = "obs/n_genes",
       .type = NUM_INT32,
       .ndim = 1,
       .shape = {CELLS_N},
       .chunk = {1000},
       .data = DATA_ZSTD,
       .key = &slash,
       .value = cells_n_genes,
       .fill = 0,
       .fill_json = "0",
       .missing = UINT64_MAX,
       .description = "genes with a non-zero count in the cell"},
  };
  mkdirs(dir);
  write_group_meta(dir, "",
                   "a single-cell-style store: obs (cells) and var (genes) "
                   "columns, and the counts matrix X");
  write_group_meta(dir, "obs", "one column per cell annotation");
  write_group_meta(dir, "var", "one column per gene annotation");
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    example_strings(dir, expdir, &strs[i]);
  for (size_t i = 0; i < sizeof nums / sizeof *nums; i++)
    example_numbers(dir, expdir, &nums[i]);
}

/* ---- bigstrings ---- */

/* Length of "row-<i>-", the start of every big element. */
static size_t big_prefix_len(uint64_t i) {
  size_t digits = 1;
  for (uint64_t v = i; v >= 10; v /= 10)
    digits++;
  return 5 + digits;
}

/* Length of big element i: L-8..L+8, never shorter than its prefix. */
static size_t big_len(const void *ctx, uint64_t i) {
  size_t L = *(const size_t *)ctx;
  size_t n = L + (size_t)(i * 7919 % 17);
  n = n > 8 ? n - 8 : 0;
  size_t p = big_prefix_len(i);
  return n < p ? p : n;
}

/* Big element i: "row-<i>-" then letters, ASCII, no newline, so that
 * `grep row-123456-` finds exactly element 123456. */
static size_t big_elem(const void *ctx, uint64_t i, char *out) {
  size_t n = big_len(ctx, i);
  size_t p = (size_t)sprintf(out, "row-%" PRIu64 "-", i);
  for (size_t k = p; k < n; k++)
    out[k] = (char)('a' + (i + k) % 26);
  return n;
}

/* Parse a non-negative decimal option value. */
static uint64_t parse_u64(const char *opt, const char *s) {
  char *end;
  if (*s < '0' || *s > '9')
    die("%s: not a number: '%s'", opt, s);
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (*end || errno)
    die("%s: not a number: '%s'", opt, s);
  return v;
}

/* The --fill-len fill value: "fill-" then letters that never repeat with a
 * short period (so a misplaced range shows), n bytes, no JSON escapes. The
 * caller frees it. */
static char *big_fill(size_t n) {
  char *f = xmalloc(n + 1);
  for (size_t k = 0; k < n; k++)
    f[k] = k < 5 ? "fill-"[k] : (char)('a' + (k * 7 + k / 26) % 26);
  f[n] = '\0';
  return f;
}

/* Is chunk c one that --missing K leaves out (every K-th: K-1, 2K-1, ...;
 * K = 1 writes no chunk, K = 0 writes all)? */
static int chunk_missing(uint64_t c, uint64_t every) {
  return every && (c + 1) % every == 0;
}

/* One array of N strings of about L bytes at DIR itself, chunk by chunk;
 * memory does not grow with N or C. DIR "-" writes no store, only the
 * --plain text. */
static void cmd_bigstrings(const char *dir, int argc, char **argv) {
  const char *plain = NULL, *zst = NULL;
  uint64_t count = 0, chunk = 0, L = 40, inner = 0, fill_len = 0, missing = 0;
  struct vlen_cfg cfg = {0, 0, DATA_BYTES};
  int utf8 = 0;
  for (int i = 0; i < argc; i += 2) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      die("option %s needs a value", o);
    if (!strcmp(o, "--count"))
      count = parse_u64(o, v);
    else if (!strcmp(o, "--chunk"))
      chunk = parse_u64(o, v);
    else if (!strcmp(o, "--strlen"))
      L = parse_u64(o, v);
    else if (!strcmp(o, "--data") && (!strcmp(v, "zstd") || !strcmp(v, "none")))
      cfg.data = !strcmp(v, "zstd") ? DATA_ZSTD : DATA_BYTES;
    else if (!strcmp(o, "--index") &&
             (!strcmp(v, "start") || !strcmp(v, "end")))
      cfg.index_end = !strcmp(v, "end");
    else if (!strcmp(o, "--shard"))
      inner = parse_u64(o, v);
    else if (!strcmp(o, "--inner") &&
             (!strcmp(v, "vlen") || !strcmp(v, "utf8")))
      utf8 = !strcmp(v, "utf8");
    else if (!strcmp(o, "--plain"))
      plain = v;
    else if (!strcmp(o, "--zst"))
      zst = v;
    else if (!strcmp(o, "--fill-len"))
      fill_len = parse_u64(o, v);
    else if (!strcmp(o, "--missing"))
      missing = parse_u64(o, v);
    else
      die("bad option %s %s", o, v);
  }
  if (!count || !chunk)
    die("bigstrings needs --count N and --chunk C, both > 0");
  if (L > MK_ELEM_MAX)
    die("--strlen %" PRIu64 " is too large (max %zu)", L, MK_ELEM_MAX);
  if (fill_len > MK_ELEM_MAX)
    die("--fill-len %" PRIu64 " is too large (max %zu)", fill_len, MK_ELEM_MAX);
  int store = strcmp(dir, "-") != 0;
  if (zst && (cfg.data != DATA_ZSTD || inner || utf8))
    die("--zst needs --data zstd, zarrs.vlen and no --shard");
  if (inner && chunk % inner)
    die("--shard %" PRIu64 " must divide --chunk %" PRIu64, inner, chunk);
  /* vlen-utf8 takes --data as its outer codec. */
  const struct inner_cfg ic = {utf8, cfg, utf8 ? cfg.data : DATA_BYTES};

  size_t Lz = (size_t)L;
  char *fill = big_fill((size_t)fill_len);
  /* Longest element: L + 8 or the prefix (at most 25 bytes), or the fill
   * (padding and missing chunks). */
  const struct strsrc s = {.count = count,
                           .max_len = Lz + 8 + 32 > fill_len ? Lz + 8 + 32
                                                             : (size_t)fill_len,
                           .get = big_elem,
                           .len = big_len,
                           .ctx = &Lz,
                           .fill = fill};
  char codecs[2048];
  if (inner)
    shard_codecs_json(codecs, sizeof codecs, inner, &ic);
  else
    inner_codecs_json(codecs, sizeof codecs, &ic);
  static const struct keyenc slash = {KEY_DEFAULT_SLASH, 0, '/'};
  char *fill_json = xmalloc(fill_len + 3);
  sprintf(fill_json, "\"%s\"", fill);
  struct array_meta m = {
      1,         &count,     &chunk, "string",
      fill_json, slash.json, codecs, "zarrfs-mkstore bigstrings: row-<i>-..."};
  if (store) {
    mkdirs(dir);
    write_array_meta(dir, "", &m);
  }

  struct wfile pf, zf;
  if (plain)
    wfile_open_path(&pf, plain);
  if (zst)
    wfile_open_path(&zf, zst);
  char *scratch = xmalloc(s.max_len + 1);
  uint64_t nchunks = count / chunk + (count % chunk != 0);
  for (uint64_t c = 0; c < nchunks; c++) {
    char key[64];
    uint64_t first = c * chunk;
    int skip = chunk_missing(c, missing);
    chunk_key(key, sizeof key, &slash, 1, &c);
    if (store && !skip) {
      struct wfile w;
      wfile_create(&w, dir, key);
      if (inner)
        shard_write(&w, &ic, &s, first, chunk / inner, inner, scratch);
      else if (utf8)
        inner_write_chunk(&w, &ic, &s, first, chunk, scratch);
      else
        vlen_write_chunk(&w, &cfg, &s, first, chunk, scratch, zst ? &zf : NULL);
      wfile_close(&w);
    }
    if (plain)
      text_strings(&pf, &s, first,
                   count - first < chunk ? count - first : chunk, skip,
                   scratch);
  }
  free(scratch);
  free(fill_json);
  free(fill);
  if (plain)
    wfile_close(&pf);
  if (zst)
    wfile_close(&zf);
}

/* ---- numeric: N-D fixed-size arrays of any size ---- */

/* Most dimensions of a numeric array. */
#define ND_DIMS_MAX 8

/* Element types of numeric arrays. */
enum nd_type { ND_UINT8, ND_INT32, ND_INT64, ND_FLOAT64 };

/* Names (V3 data_type, V2 dtype) and sizes of the nd_type values. */
static const struct {
  const char *v3, *v2;
  size_t size;
} ND_TYPES[] = {{"uint8", "|u1", 1},
                {"int32", "<i4", 4},
                {"int64", "<i8", 8},
                {"float64", "<f8", 8}};

/* A numeric array as `numeric` writes it. */
struct nd_array {
  enum nd_type type;
  int ndim;
  uint64_t shape[ND_DIMS_MAX], chunk[ND_DIMS_MAX];
  uint64_t grid[ND_DIMS_MAX]; /* chunks along each dimension */
  int64_t fill_i;             /* fill value (integer types) */
  double fill_f;              /* fill value (float64) */
  uint64_t missing;           /* every K-th chunk not written (0: none) */
};

/* Integer element at C-order index i: small and large magnitudes of both
 * signs, the type's extremes now and then (uint8 covers 0..255 evenly, in
 * runs that compress, like the 75M-element chunk). */
static int64_t nd_int_value(enum nd_type t, uint64_t i) {
  if (t == ND_UINT8)
    return (int64_t)((i + i / 256 * 3) % 256);
  if (i % 1000003 == 0)
    return t == ND_INT32 ? INT32_MIN : INT64_MIN;
  if (i % 1000003 == 1)
    return t == ND_INT32 ? INT32_MAX : INT64_MAX;
  if (i % 7 == 3) /* up to 7 digits, negative */
    return -(int64_t)(i % 2000003);
  if (t == ND_INT64 && i % 7 == 5) /* beyond 32 bits */
    return (int64_t)(i * 0x9E3779B97F4A7C15u >> 1) * (i % 2 ? -1 : 1);
  return (int64_t)(i % 20011) - 10005; /* a ramp through zero */
}

/* Float element at C-order index i: values whose shortest text is short
 * (0.1 steps, halves, integers) or long (thirds, reciprocals), tiny and
 * huge exponents (1e-05, 1e+20 layouts), -0, nan, inf and -inf. */
static double nd_float_value(uint64_t i) {
  switch (i % 10007) {
  case 5:
    return NAN;
  case 6:
    return INFINITY;
  case 7:
    return -INFINITY;
  case 8:
    return -0.0;
  }
  double x = (double)i;
  switch (i % 8) {
  case 0:
    return (double)(i % 20011) * 0.1 - 1000; /* "-999.9", "0.3" */
  case 1:
    return -x / 3; /* 16-17 digits */
  case 2:
    return x * 1e-9; /* "3.2e-06" and plain "0.0012" */
  case 3:
    return x * 1e13 + 0.5; /* crosses 1e16: "1.2e+19" layouts */
  case 4:
    return x * 0.5 - 3; /* "-3", "0.5" */
  case 5:
    return (double)((int64_t)(i % 2001) - 1000); /* integers: "100" */
  case 6:
    return 1 / (x + 1); /* reciprocals */
  default:
    return -(double)(i % 1000 + 1) * 1e-300; /* near the bottom: "-3e-298" */
  }
}

/* Decimal text of v into out (at least 21 bytes); returns its length.
 * Hand-written: printf is the bottleneck on 75M-element texts. */
static size_t nd_itoa(char *out, int64_t v) {
  char t[24];
  size_t n = 0, len = 0;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do {
    t[n++] = (char)('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0)
    out[len++] = '-';
  while (n)
    out[len++] = t[--n];
  return len;
}

/* Text of element i (or of the fill value) into out (64 bytes), newline
 * included; returns its length. */
static size_t nd_text(char *out, const struct nd_array *a, uint64_t i,
                      int fill) {
  size_t n;
  if (a->type == ND_FLOAT64) {
    double_text(out, 64, fill ? a->fill_f : nd_float_value(i));
    n = strlen(out);
  } else {
    n = nd_itoa(out, fill ? a->fill_i : nd_int_value(a->type, i));
  }
  out[n] = '\n';
  return n + 1;
}

/* Stored bytes of element i (or of the fill value), little endian; NaN as
 * the canonical quiet NaN. Returns the element size. */
static size_t nd_bytes(uint8_t *out, const struct nd_array *a, uint64_t i,
                       int fill) {
  uint64_t bits;
  if (a->type == ND_FLOAT64) {
    double v = fill ? a->fill_f : nd_float_value(i);
    if (isnan(v))
      bits = 0x7ff8000000000000u;
    else
      memcpy(&bits, &v, 8);
  } else {
    bits = (uint64_t)(fill ? a->fill_i : nd_int_value(a->type, i));
  }
  le_store(out, bits, (int)ND_TYPES[a->type].size);
  return ND_TYPES[a->type].size;
}

/* Parse "A,B,C" into v (1..ND_DIMS_MAX values); returns the count. */
static int parse_dims(const char *opt, const char *s, uint64_t *v) {
  char buf[512], *save = NULL;
  int n = 0;
  fmt(buf, sizeof buf, "%s", s);
  for (char *tok = strtok_r(buf, ",", &save); tok;
       tok = strtok_r(NULL, ",", &save)) {
    if (n == ND_DIMS_MAX)
      die("%s: more than %d dimensions", opt, ND_DIMS_MAX);
    v[n++] = parse_u64(opt, tok);
  }
  if (!n)
    die("%s: no dimensions in '%s'", opt, s);
  return n;
}

/* Parse --fill for the array's type (integers in range; floats also
 * nan, inf, -inf) and set the fill value. */
static void nd_parse_fill(struct nd_array *a, const char *s) {
  char *end;
  errno = 0;
  if (a->type == ND_FLOAT64) {
    a->fill_f = strtod(s, &end);
    if (*s == '\0' || *end || errno == ERANGE)
      die("--fill: not a float64: '%s'", s);
    return;
  }
  long long v = strtoll(s, &end, 10);
  int64_t lo = a->type == ND_UINT8   ? 0
               : a->type == ND_INT32 ? INT32_MIN
                                     : INT64_MIN;
  int64_t hi = a->type == ND_UINT8   ? 255
               : a->type == ND_INT32 ? INT32_MAX
                                     : INT64_MAX;
  if (*s == '\0' || *end || errno || v < lo || v > hi)
    die("--fill: not a %s: '%s'", ND_TYPES[a->type].v3, s);
  a->fill_i = v;
}

/* The fill value as JSON, the way zarr-python writes it: integers plain;
 * floats as Python's repr ("0.0", "-0.25", "1e+20") or "NaN", "Infinity",
 * "-Infinity" (the same in V2 and V3). */
static void nd_fill_json(char *out, size_t cap, const struct nd_array *a) {
  if (a->type != ND_FLOAT64) {
    fmt(out, cap, "%" PRId64, a->fill_i);
    return;
  }
  double v = a->fill_f;
  if (isnan(v) || isinf(v)) {
    fmt(out, cap, "\"%s\"",
        isnan(v) ? "NaN"
        : v < 0  ? "-Infinity"
                 : "Infinity");
    return;
  }
  double_text(out, cap, v);
  if (!strpbrk(out, ".e")) /* repr keeps ".0": 100.0, -0.0 */
    fmt(out + strlen(out), cap - strlen(out), ".0");
}

/* Write a JSON list of ndim integers, one a line, as Python's json.dumps
 * with indent=4 lays it out at nesting depth 1. */
static void zarray_dims(struct wfile *w, int ndim, const uint64_t *v) {
  wfile_puts(w, "[\n");
  for (int d = 0; d < ndim; d++)
    wfile_printf(w, "        %" PRIu64 "%s\n", v[d], d + 1 < ndim ? "," : "");
  wfile_puts(w, "    ]");
}

/* Write DIR/.zarray as zarr-python 2.13 does (json.dumps, indent 4, keys
 * sorted, no final newline). */
static void nd_write_zarray(const char *dir, const struct nd_array *a,
                            enum data_codec codec, char sep) {
  char fill[64];
  nd_fill_json(fill, sizeof fill, a);
  struct wfile w;
  wfile_create(&w, dir, ".zarray");
  wfile_puts(&w, "{\n    \"chunks\": ");
  zarray_dims(&w, a->ndim, a->chunk);
  if (codec == DATA_ZSTD)
    wfile_puts(&w, ",\n    \"compressor\": {\n        \"id\": \"zstd\",\n"
                   "        \"level\": 3\n    },\n");
  else if (codec == DATA_GZIP)
    wfile_puts(&w, ",\n    \"compressor\": {\n        \"id\": \"gzip\",\n"
                   "        \"level\": 5\n    },\n");
  else
    wfile_puts(&w, ",\n    \"compressor\": null,\n");
  wfile_printf(&w,
               "    \"dimension_separator\": \"%c\",\n"
               "    \"dtype\": \"%s\",\n"
               "    \"fill_value\": %s,\n"
               "    \"filters\": null,\n"
               "    \"order\": \"C\",\n"
               "    \"shape\": ",
               sep, ND_TYPES[a->type].v2, fill);
  zarray_dims(&w, a->ndim, a->shape);
  wfile_puts(&w, ",\n    \"zarr_format\": 2\n}");
  wfile_close(&w);
}

/* Write DIR/zarr.json: the bytes codec (little endian) and the data codec,
 * default chunk keys with separator sep. */
static void nd_write_zarr_json(const char *dir, const struct nd_array *a,
                               enum data_codec codec, const char *keyenc) {
  char codecs[512], fill[64];
  fmt(codecs, sizeof codecs, "[{\"name\": \"bytes\"%s}%s]",
      a->type == ND_UINT8 ? ""
                          : ", \"configuration\": {\"endian\": \"little\"}",
      data_codec_json(codec));
  nd_fill_json(fill, sizeof fill, a);
  struct array_meta m = {a->ndim, a->shape, a->chunk, ND_TYPES[a->type].v3,
                         fill,    keyenc,   codecs,   "zarrfs-mkstore numeric"};
  write_array_meta(dir, "", &m);
}

/* Write chunk c (C-order grid index) at its full chunk shape, the outside
 * of edge chunks filled, through the data codec: one row of the chunk
 * (its last dimension) at a time through a staging buffer. */
static void nd_write_chunk(const char *dir, const struct nd_array *a,
                           const struct keyenc *k, enum data_codec codec,
                           uint64_t c) {
  int nd = a->ndim, last = nd - 1;
  uint64_t g[ND_DIMS_MAX], stride[ND_DIMS_MAX], elems = 1;
  for (int d = last; d >= 0; d--) {
    g[d] = c % a->grid[d];
    c /= a->grid[d];
    stride[d] = d == last ? 1 : stride[d + 1] * a->shape[d + 1];
    if (__builtin_mul_overflow(elems, a->chunk[d], &elems))
      die("chunk of more than 2^64 elements");
  }
  uint64_t nbytes;
  if (__builtin_mul_overflow(elems, (uint64_t)ND_TYPES[a->type].size, &nbytes))
    die("chunk of more than 2^64 bytes");
  char key[512];
  chunk_key(key, sizeof key, k, nd, g);
  struct wfile w;
  struct sink s;
  wfile_create(&w, dir, key);
  sink_open(&s, &w, codec, nbytes, NULL);
  uint8_t *stage = xmalloc(MK_STAGE);
  size_t used = 0;
  uint64_t rows = elems / a->chunk[last], l[ND_DIMS_MAX] = {0};
  for (uint64_t r = 0; r < rows; r++) {
    /* l: chunk-local coordinates of this row (all but the last). */
    uint64_t base = 0;
    int inside = 1;
    for (int d = 0; d < last; d++) {
      uint64_t x = g[d] * a->chunk[d] + l[d];
      inside &= x < a->shape[d];
      base += x * stride[d];
    }
    uint64_t x0 = g[last] * a->chunk[last];
    for (uint64_t j = 0; j < a->chunk[last]; j++) {
      if (used + 8 > MK_STAGE) {
        sink_write(&s, stage, used);
        used = 0;
      }
      int in = inside && x0 + j < a->shape[last];
      used += nd_bytes(stage + used, a, in ? base + x0 + j : 0, !in);
    }
    for (int d = last - 1; d >= 0; d--) { /* next row: odometer */
      if (++l[d] < a->chunk[d])
        break;
      l[d] = 0;
    }
  }
  sink_write(&s, stage, used);
  free(stage);
  sink_close(&s);
  wfile_close(&w);
}

/* Write the text values.txt must show: the whole array in C order, one
 * element a line, missing chunks as the fill value; row by row. */
static void nd_write_text(const char *path, const struct nd_array *a) {
  int last = a->ndim - 1;
  uint64_t rows = 1, x[ND_DIMS_MAX] = {0};
  for (int d = 0; d < last; d++)
    rows *= a->shape[d]; /* no overflow: the whole array fits 2^64 */
  if (a->shape[last] == 0)
    rows = 0;
  struct wfile w;
  wfile_open_path(&w, path);
  char *stage = xmalloc(MK_STAGE);
  size_t used = 0;
  uint64_t i = 0; /* C-order index of the element */
  for (uint64_t r = 0; r < rows; r++) {
    uint64_t cg = 0; /* grid index of the row's chunks, last dim aside */
    for (int d = 0; d < last; d++)
      cg = cg * a->grid[d] + x[d] / a->chunk[d];
    for (uint64_t j = 0; j < a->shape[last]; j++, i++) {
      if (used + 64 > MK_STAGE) {
        wfile_write(&w, stage, used);
        used = 0;
      }
      uint64_t c = cg * a->grid[last] + j / a->chunk[last];
      used += nd_text(stage + used, a, i, chunk_missing(c, a->missing));
    }
    for (int d = last - 1; d >= 0; d--) {
      if (++x[d] < a->shape[d])
        break;
      x[d] = 0;
    }
  }
  wfile_write(&w, stage, used);
  free(stage);
  wfile_close(&w);
}

/* One N-D numeric array at DIR itself (V3 zarr.json or V2 .zarray), chunk
 * by chunk; memory does not grow with the array or chunk size. DIR "-"
 * writes no store, only the --plain text. */
static void cmd_numeric(const char *dir, int argc, char **argv) {
  struct nd_array a = {.type = ND_INT32};
  const char *plain = NULL, *fill = NULL, *sep_opt = NULL;
  enum data_codec codec = DATA_BYTES;
  int v2 = 0, nchunk = 0;
  for (int i = 0; i < argc; i += 2) {
    const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      die("option %s needs a value", o);
    if (!strcmp(o, "--dtype")) {
      size_t t = 0;
      while (t < sizeof ND_TYPES / sizeof *ND_TYPES &&
             strcmp(v, ND_TYPES[t].v3))
        t++;
      if (t == sizeof ND_TYPES / sizeof *ND_TYPES)
        die("--dtype: one of uint8, int32, int64, float64, not '%s'", v);
      a.type = (enum nd_type)t;
    } else if (!strcmp(o, "--shape"))
      a.ndim = parse_dims(o, v, a.shape);
    else if (!strcmp(o, "--chunk"))
      nchunk = parse_dims(o, v, a.chunk);
    else if (!strcmp(o, "--codec") && !strcmp(v, "none"))
      codec = DATA_BYTES;
    else if (!strcmp(o, "--codec") && !strcmp(v, "zstd"))
      codec = DATA_ZSTD;
    else if (!strcmp(o, "--codec") && !strcmp(v, "gzip"))
      codec = DATA_GZIP;
    else if (!strcmp(o, "--format") && (!strcmp(v, "2") || !strcmp(v, "3")))
      v2 = !strcmp(v, "2");
    else if (!strcmp(o, "--sep") && (!strcmp(v, ".") || !strcmp(v, "/")))
      sep_opt = v;
    else if (!strcmp(o, "--fill"))
      fill = v;
    else if (!strcmp(o, "--missing"))
      a.missing = parse_u64(o, v);
    else if (!strcmp(o, "--plain"))
      plain = v;
    else
      die("bad option %s %s", o, v);
  }
  if (!a.ndim || nchunk != a.ndim)
    die("numeric needs --shape and --chunk with the same number of "
        "dimensions");
  uint64_t total = 1;
  for (int d = 0; d < a.ndim; d++) {
    if (!a.chunk[d])
      die("--chunk: every chunk length must be > 0");
    if (__builtin_mul_overflow(total, a.shape[d], &total))
      die("--shape: more than 2^64 elements");
    a.grid[d] = a.shape[d] / a.chunk[d] + (a.shape[d] % a.chunk[d] != 0);
  }
  if (fill)
    nd_parse_fill(&a, fill);
  /* V3: default keys, "/" unless --sep; V2: v2 keys, "." unless --sep. */
  char sep = sep_opt ? *sep_opt : v2 ? '.' : '/';
  const struct keyenc k = {
      v2 ? (sep == '.' ? KEY_V2_DOT : KEY_V2_SLASH)
         : (sep == '.' ? KEY_DEFAULT_DOT : KEY_DEFAULT_SLASH),
      v2, sep};
  if (strcmp(dir, "-")) {
    mkdirs(dir);
    if (v2)
      nd_write_zarray(dir, &a, codec, sep);
    else
      nd_write_zarr_json(dir, &a, codec, k.json);
    uint64_t nchunks = total ? 1 : 0;
    for (int d = 0; d < a.ndim; d++)
      nchunks *= a.grid[d]; /* <= total */
    for (uint64_t c = 0; c < nchunks; c++)
      if (!chunk_missing(c, a.missing))
        nd_write_chunk(dir, &a, &k, codec, c);
  }
  if (plain)
    nd_write_text(plain, &a);
}

/* ---- badinput ---- */

/* A string source over a fixed list. */
struct strlist {
  const char *const *v;
  uint64_t n;
};

/* Element i of a fixed list. */
static size_t strlist_get(const void *ctx, uint64_t i, char *out) {
  const struct strlist *l = ctx;
  return emit(out, l->v[i]);
}

/* Encode list as one chunk into memory: zarrs.vlen (cfg) or, when cfg is
 * NULL, plain vlen-utf8. Returns a malloc'd block the caller frees. */
static uint8_t *encode_list(const char *const *v, uint64_t n,
                            const struct vlen_cfg *cfg, size_t *len) {
  const struct strlist l = {v, n};
  const struct strsrc s = {
      .count = n, .max_len = 64, .get = strlist_get, .ctx = &l, .fill = ""};
  char scratch[65];
  struct wfile w;
  wfile_memory(&w);
  if (cfg)
    vlen_write_chunk(&w, cfg, &s, 0, n, scratch, NULL);
  else
    vlen_utf8_write_chunk(&w, DATA_BYTES, &s, 0, n, scratch);
  wfile_close(&w);
  *len = w.mem_len;
  return (uint8_t *)w.mem;
}

/* Encode raw bytes through a data codec into memory (malloc'd). */
static uint8_t *encode_bytes(enum data_codec c, const void *p, size_t n,
                             size_t *len) {
  struct wfile w;
  struct sink k;
  wfile_memory(&w);
  sink_open(&k, &w, c, n, NULL);
  sink_write(&k, p, n);
  sink_close(&k);
  wfile_close(&w);
  *len = w.mem_len;
  return (uint8_t *)w.mem;
}

/* Size of a zstd frame header (RFC 8878 3.1.1), to find the first block;
 * ZSTD_frameHeaderSize is not in libzstd's stable API. */
static size_t zstd_header_size(const uint8_t *p, size_t n) {
  static const size_t dict_size[4] = {0, 1, 2, 4};
  static const size_t fcs_size[4] = {0, 2, 4, 8};
  if (n < 5 || p[0] != 0x28 || p[1] != 0xB5 || p[2] != 0x2F || p[3] != 0xFD)
    die("zstd frame: bad magic");
  uint8_t fhd = p[4];
  int single = (fhd >> 5) & 1;
  size_t fcs = fcs_size[fhd >> 6];
  if (fhd >> 6 == 0 && single)
    fcs = 1;
  return 5 + (single ? 0 : 1) + dict_size[fhd & 3] + fcs;
}

/* The healthy chunk c/0 of every bad-chunk array, and its text view. */
static const char *const GOOD[] = {"a", "bb", "ccc", "dddd"};
#define GOOD_TEXT "a\\nbb\\nccc\\ndddd\\n"
/* The elements the bad chunks c/1 start from: offsets 0,4,8,12,16. */
static const char *const FOUR[] = {"eeee", "ffff", "gggg", "hhhh"};

/* Write one array with a healthy c/0 and the given bad c/1 (shape [8],
 * chunks [4]; cfg NULL means vlen-utf8), and its EXPECTED lines. */
static void bad_chunk_array(const char *dir, struct wfile *exp,
                            const char *name, const struct vlen_cfg *cfg,
                            const uint8_t *bad, size_t badlen,
                            const char *why) {
  static const uint64_t shape = 8, chunk = 4;
  char codecs[1024], rel[MK_PATH_MAX];
  if (cfg)
    vlen_codecs_json(codecs, sizeof codecs, cfg);
  else
    fmt(codecs, sizeof codecs, "[{\"name\": \"vlen-utf8\"}]");
  struct array_meta m = {
      1, &shape, &chunk, "string", "\"\"", KEY_DEFAULT_SLASH, codecs, why};
  write_array_meta(dir, name, &m);
  size_t n;
  uint8_t *good = encode_list(GOOD, 4, cfg, &n);
  fmt(rel, sizeof rel, "%s/c/0", name);
  put_file(dir, rel, good, n);
  free(good);
  fmt(rel, sizeof rel, "%s/c/1", name);
  put_file(dir, rel, bad, badlen);
  wfile_printf(exp, "%s c/1.txt\n%s values.txt\n%s c/0.txt %s\n", name, name,
               name, GOOD_TEXT);
}

/* Write an array whose zarr.json is bad (raw text given) with a stored
 * chunk c/0; its raw keys must still read, the listed views must fail. */
static void bad_meta_array(const char *dir, struct wfile *exp, const char *name,
                           const char *meta, const char *chunk0,
                           const char *must_fail) {
  char rel[MK_PATH_MAX];
  fmt(rel, sizeof rel, "%s/zarr.json", name);
  put_file(dir, rel, meta, strlen(meta));
  fmt(rel, sizeof rel, "%s/c/0", name);
  put_file(dir, rel, chunk0, strlen(chunk0));
  wfile_printf(exp, "%s values.txt\n", name);
  if (must_fail)
    wfile_printf(exp, "%s %s\n", name, must_fail);
  wfile_printf(exp, "%s c/0 %s\n", name, chunk0);
}

/* The bad-input store: one array per case, and EXPECTED.txt. */
static void cmd_badinput(const char *dir) {
  const struct vlen_cfg plain = {0, 0, DATA_BYTES}, gz = {0, 0, DATA_GZIP},
                        zs = {0, 0, DATA_ZSTD}, crc = {0, 0, DATA_CRC32C};
  /* Start layout, u64 index: L at 0, offset k at 8 + 8k, data at 48. */
  enum { OFF0 = 8, DATA0 = 8 + 5 * 8 };
  size_t n, m;
  uint8_t *b, *z;
  struct wfile exp;

  mkdirs(dir);
  write_group_meta(dir, "", "zarrfs-mkstore badinput: one array per bad input");
  wfile_create(&exp, dir, "EXPECTED.txt");
  wfile_puts(&exp,
             "# <array> <file>: reading must fail with EIO\n"
             "# <array> <file> <content>: must read ok, exactly <content> "
             "(\\n escaped)\n");

  b = encode_list(FOUR, 4, &plain, &n);
  b[OFF0 + 2 * 8] = 2; /* offsets 0,4,2,12,16 */
  bad_chunk_array(dir, &exp, "decreasing_offsets", &plain, b, n,
                  "offsets 0,4,2,12,16 decrease");
  b[OFF0 + 2 * 8] = 8;
  b[OFF0 + 4 * 8] = 200; /* offsets 0,4,8,12,200; 16 data bytes */
  bad_chunk_array(dir, &exp, "offset_past_data", &plain, b, n,
                  "last offset 200 past the 16 data bytes");
  free(b);

  b = encode_list(FOUR, 4, &plain, &n);
  le_store(b, 0xFFFF, 8);
  bad_chunk_array(dir, &exp, "index_len_too_big", &plain, b, n,
                  "index length 65535 larger than the chunk");
  le_store(b, UINT64_MAX, 8);
  bad_chunk_array(dir, &exp, "index_len_huge", &plain, b, n,
                  "index length 2^64-1 (overflows 8 + L)");
  le_store(b, 32, 8);
  bad_chunk_array(dir, &exp, "index_len_wrong", &plain, b, n,
                  "index of 4 offsets where 5 are due");
  free(b);

  /* Index 0,4,8,12,16 but the gzip data inflates to 8 bytes. */
  b = encode_list(FOUR, 4, &plain, &n);
  z = encode_bytes(DATA_GZIP, "eeeeffff", 8, &m);
  {
    uint8_t *c = xmalloc(DATA0 + m);
    memcpy(c, b, DATA0);
    memcpy(c + DATA0, z, m);
    bad_chunk_array(dir, &exp, "data_len_mismatch", &gz, c, DATA0 + m,
                    "gzip data inflates to 8 bytes, offsets say 16");
    free(c);
  }
  free(z);
  free(b);

  b = encode_list(FOUR, 4, &gz, &n);
  bad_chunk_array(dir, &exp, "truncated_gzip", &gz, b, DATA0 + (n - DATA0) / 2,
                  "gzip stream cut in half");
  free(b);

  /* Mark the first block of the zstd frame with the reserved block type
   * 3, which every decoder must refuse. */
  b = encode_list(FOUR, 4, &zs, &n);
  {
    size_t fh = zstd_header_size(b + DATA0, n - DATA0);
    if (DATA0 + fh + 3 > n)
      die("zstd frame: no block after the header");
    b[DATA0 + fh] |= 0x06; /* Block_Type bits 1-2 := 3 */
  }
  bad_chunk_array(dir, &exp, "corrupt_zstd", &zs, b, n,
                  "zstd block of the reserved type");
  free(b);

  b = encode_list(FOUR, 4, &crc, &n);
  b[n - 1] ^= 0xFF;
  bad_chunk_array(dir, &exp, "bad_crc32c", &crc, b, n, "crc32c checksum wrong");
  free(b);

  /* vlen-utf8: u32 count, then (u32 len, bytes) per element; element 3's
   * length is at 4 + 3 * (4 + 4). */
  b = encode_list(FOUR, 4, NULL, &n);
  b[4 + 3 * 8] = 0x7F;
  bad_chunk_array(dir, &exp, "utf8_len_overrun", NULL, b, n,
                  "vlen-utf8 element 3 is 127 bytes, 4 remain");
  le_store(b + 4 + 3 * 8, UINT32_MAX, 4);
  bad_chunk_array(dir, &exp, "utf8_len_huge", NULL, b, n,
                  "vlen-utf8 element 3 is 2^32-1 bytes");
  le_store(b + 4 + 3 * 8, 4, 4);
  le_store(b, 5, 4);
  bad_chunk_array(dir, &exp, "utf8_count_mismatch", NULL, b, n,
                  "vlen-utf8 header says 5 elements, the chunk has 4");
  free(b);

  bad_chunk_array(dir, &exp, "short_chunk", &plain, (const uint8_t *)"abc", 3,
                  "chunk of 3 bytes");
  bad_chunk_array(dir, &exp, "empty_chunk", &plain, (const uint8_t *)"", 0,
                  "chunk of 0 bytes");

  /* Metadata that must be refused (views fail, raw keys still read). */
  static const char tail[] =
      "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, "
      "\"codecs\": [{\"name\": \"bytes\"}]}\n";
  char meta[1024];
  fmt(meta, sizeof meta,
      "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": \"x\", "
      "\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\", "
      "\"configuration\": {\"chunk_shape\": [4]}}, %s",
      tail);
  bad_meta_array(dir, &exp, "bad_shape", meta, "rawbytes", NULL);
  fmt(meta, sizeof meta,
      "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8], "
      "\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\", "
      "\"configuration\": {\"chunk_shape\": [0]}}, %s",
      tail);
  bad_meta_array(dir, &exp, "zero_chunk", meta, "rawbytes", NULL);
  fmt(meta, sizeof meta,
      "{\"zarr_format\": 3, \"node_type\": \"array\", \"foo\": 1, "
      "\"shape\": [8], \"data_type\": \"int8\", \"chunk_grid\": {\"name\": "
      "\"regular\", \"configuration\": {\"chunk_shape\": [4]}}, %s",
      tail);
  bad_meta_array(dir, &exp, "unknown_field", meta, "rawbytes", NULL);
  fmt(meta, sizeof meta,
      "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": "
      "[4611686018427387904, 4611686018427387904], \"data_type\": \"int8\", "
      "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
      "{\"chunk_shape\": [1, 1]}}, %s",
      tail);
  bad_meta_array(dir, &exp, "overflow", meta, "rawbytes", NULL);
  /* These two parse; only decoding fails, so the chunk view exists. */
  fmt(meta, sizeof meta,
      "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], "
      "\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\", "
      "\"configuration\": {\"chunk_shape\": [4]}}, \"chunk_key_encoding\": "
      "{\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": "
      "[{\"name\": \"frobnicate\"}]}\n");
  bad_meta_array(dir, &exp, "unknown_codec", meta, "rawbytes", "c/0.txt");
  fmt(meta, sizeof meta,
      "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], "
      "\"data_type\": \"float8_e4m3\", \"chunk_grid\": {\"name\": "
      "\"regular\", \"configuration\": {\"chunk_shape\": [4]}}, %s",
      tail);
  bad_meta_array(dir, &exp, "unknown_dtype", meta, "abcd", "c/0.txt");
  wfile_close(&exp);
}

/* ---- main ---- */

/* Usage text. */
static const char USAGE[] =
    "usage: zarrfs-mkstore example DIR\n"
    "       zarrfs-mkstore bigstrings DIR --count N --chunk C [--strlen L]\n"
    "                      [--data zstd|none] [--index start|end]\n"
    "                      [--plain FILE] [--zst FILE]\n"
    "                      [--shard INNER] [--inner vlen|utf8]\n"
    "                      [--fill-len F] [--missing K]\n"
    "       zarrfs-mkstore numeric DIR --shape A[,B...] --chunk a[,b...]\n"
    "                      [--dtype uint8|int32|int64|float64]\n"
    "                      [--codec none|zstd|gzip] [--format 3|2]\n"
    "                      [--sep .|/] [--fill VALUE] [--missing K]\n"
    "                      [--plain FILE]\n"
    "       zarrfs-mkstore cells DIR [EXPDIR]\n"
    "       zarrfs-mkstore badinput DIR\n"
    "example    the example store (7 arrays) and DIR/EXPECTED/<array>.txt\n"
    "bigstrings N strings of L-8..L+8 bytes (default L 40), \"row-<i>-...\",\n"
    "           zarrs.vlen, C per chunk; --plain writes the text view,\n"
    "           --zst the concatenated zstd data parts (for zstd -dc);\n"
    "           --shard: each chunk a sharding_indexed shard of INNER-element\n"
    "           inner chunks; --inner utf8: vlen-utf8 (+ --data) chunks\n"
    "           --fill-len: a fill value of F bytes; --missing K: every\n"
    "           K-th chunk is not written (1: none is)\n"
    "numeric    an N-D uint8/int32/int64/float64 array (default int32),\n"
    "           values a function of the C-order index; V3 (bytes + codec,\n"
    "           \"c/\" keys) or V2 (.zarray as zarr-python 2.13 writes it);\n"
    "           --fill (default 0), --missing K as above; --plain FILE\n"
    "           writes the text values.txt must show\n"
    "cells      the tutorial's single-cell-style store (obs, var, X);\n"
    "           EXPDIR: each array's values.txt text there\n"
    "badinput   one array per bad input and DIR/EXPECTED.txt\n"
    "DIR \"-\" writes no store (with --plain: only the text); --plain - is\n"
    "stdout\n";

/* Dispatch a subcommand. */
int main(int argc, char **argv) {
  if (argc == 3 && !strcmp(argv[1], "example"))
    cmd_example(argv[2]);
  else if (argc >= 3 && !strcmp(argv[1], "bigstrings"))
    cmd_bigstrings(argv[2], argc - 3, argv + 3);
  else if (argc >= 3 && !strcmp(argv[1], "numeric"))
    cmd_numeric(argv[2], argc - 3, argv + 3);
  else if ((argc == 3 || argc == 4) && !strcmp(argv[1], "cells"))
    cmd_cells(argv[2], argc == 4 ? argv[3] : NULL);
  else if (argc == 3 && !strcmp(argv[1], "badinput"))
    cmd_badinput(argv[2]);
  else if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
    fputs(USAGE, stdout);
  else {
    fputs(USAGE, stderr);
    return 2;
  }
  return 0;
}
