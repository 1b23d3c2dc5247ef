/* mkstore.c - zarrfs-mkstore: an independent Zarr V3 writer (zlib and
 * libzstd only, no zarrfs code) that makes the example store, benchmark
 * stores and test stores, so that tests check zarrfs against bytes it did
 * not write itself.
 *
 *   zarrfs-mkstore example DIR
 *   zarrfs-mkstore bigstrings DIR --count N --strlen L --chunk C
 *                  [--data zstd|none] [--index start|end] [--plain FILE]
 *   zarrfs-mkstore badinput DIR
 *
 * Output is deterministic: the same bytes on every run. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>
#include <zstd.h>

/* Print a message and exit with status 1. */
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("zarrfs-mkstore: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

/* malloc or die. */
static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p)
    die("out of memory (%zu bytes)", n);
  return p;
}

/* mkdir -p for the parents of path (and path itself when dir is set). */
static void mkdirs(const char *path, int dir) {
  char *p = strdup(path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = '\0';
      if (mkdir(p, 0755) < 0 && errno != EEXIST)
        die("mkdir %s: %s", p, strerror(errno));
      *s = '/';
    }
  if (dir && mkdir(p, 0755) < 0 && errno != EEXIST)
    die("mkdir %s: %s", p, strerror(errno));
  free(p);
}

/* Write bytes to dir/rel, creating directories. */
static void put(const char *dir, const char *rel, const void *data,
                size_t len) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  mkdirs(path, 0);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
    die("write %s: %s", path, strerror(errno));
}

/* Write a string. */
static void puts_file(const char *dir, const char *rel, const char *s) {
  put(dir, rel, s, strlen(s));
}

/* Growable byte buffer. */
struct buf {
  uint8_t *p;
  size_t n, cap;
};

/* Append bytes. */
static void bput(struct buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    size_t c = b->cap ? b->cap : 256;
    while (c < b->n + n)
      c *= 2;
    b->p = realloc(b->p, c);
    if (!b->p)
      die("out of memory");
    b->cap = c;
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}

/* Append a little-endian integer of w bytes. */
static void bput_le(struct buf *b, uint64_t v, int w) {
  uint8_t t[8];
  for (int i = 0; i < w; i++)
    t[i] = (uint8_t)(v >> (8 * i));
  bput(b, t, (size_t)w);
}

/* Append a big-endian integer of w bytes. */
static void bput_be(struct buf *b, uint64_t v, int w) {
  uint8_t t[8];
  for (int i = 0; i < w; i++)
    t[i] = (uint8_t)(v >> (8 * (w - 1 - i)));
  bput(b, t, (size_t)w);
}

/* zstd-compress into a new buffer. */
static struct buf zstd_buf(const uint8_t *p, size_t n, int level) {
  struct buf o = {0};
  size_t cap = ZSTD_compressBound(n);
  o.p = xmalloc(cap);
  o.cap = cap;
  o.n = ZSTD_compress(o.p, cap, p, n, level);
  if (ZSTD_isError(o.n))
    die("zstd: %s", ZSTD_getErrorName(o.n));
  return o;
}

/* gzip-compress (gzip wrapper) into a new buffer. */
static struct buf gzip_buf(const uint8_t *p, size_t n, int level) {
  z_stream z;
  memset(&z, 0, sizeof z);
  if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY))
    die("deflateInit2 failed");
  struct buf o = {0};
  o.cap = deflateBound(&z, n) + 32;
  o.p = xmalloc(o.cap);
  z.next_in = (Bytef *)p;
  z.avail_in = (uInt)n;
  z.next_out = o.p;
  z.avail_out = (uInt)o.cap;
  if (deflate(&z, Z_FINISH) != Z_STREAM_END)
    die("deflate failed");
  o.n = z.total_out;
  deflateEnd(&z);
  return o;
}

/* CRC-32C (Castagnoli), bitwise: small inputs only. */
static uint32_t crc32c(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
  }
  return c ^ 0xFFFFFFFFu;
}

/* Options of a zarrs.vlen chunk. */
struct vlen_opts {
  int at_end;     /* index_location end */
  int idx32;      /* uint32 index */
  int data_codec; /* 0 bytes, 1 zstd, 2 gzip, 3 crc32c */
};

/* Encode n elements as a zarrs.vlen chunk. */
static struct buf vlen_encode(const char *const *v, const size_t *len, size_t n,
                              const struct vlen_opts *o) {
  struct buf idx = {0}, data = {0}, out = {0};
  uint64_t off = 0;
  for (size_t i = 0; i <= n; i++) {
    bput_le(&idx, off, o->idx32 ? 4 : 8);
    if (i < n) {
      bput(&data, v[i], len[i]);
      off += len[i];
    }
  }
  struct buf dat = {0};
  if (data.n) {
    if (o->data_codec == 1)
      dat = zstd_buf(data.p, data.n, 3);
    else if (o->data_codec == 2)
      dat = gzip_buf(data.p, data.n, 5);
    else {
      bput(&dat, data.p, data.n);
      if (o->data_codec == 3)
        bput_le(&dat, crc32c(data.p, data.n), 4);
    }
  }
  if (!o->at_end)
    bput_le(&out, idx.n, 8);
  if (!o->at_end)
    bput(&out, idx.p, idx.n);
  bput(&out, dat.p, dat.n);
  if (o->at_end) {
    bput(&out, idx.p, idx.n);
    bput_le(&out, idx.n, 8);
  }
  free(idx.p);
  free(data.p);
  free(dat.p);
  return out;
}

/* Encode n elements as a vlen-utf8 (interleaved) chunk. */
static struct buf vlen_utf8_encode(const char *const *v, const size_t *len,
                                   size_t n) {
  struct buf out = {0};
  bput_le(&out, n, 4);
  for (size_t i = 0; i < n; i++) {
    bput_le(&out, len[i], 4);
    bput(&out, v[i], len[i]);
  }
  return out;
}

/* The codecs JSON of a zarrs.vlen configuration. */
static void vlen_codecs_json(char *buf, size_t n, const struct vlen_opts *o) {
  static const char *data[] = {
      "[{\"name\":\"bytes\"}]",
      "[{\"name\":\"bytes\"},{\"name\":\"zstd\",\"configuration\":{\"level\":3,"
      "\"checksum\":false}}]",
      "[{\"name\":\"bytes\"},{\"name\":\"gzip\",\"configuration\":{\"level\":"
      "5}}]",
      "[{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]"};
  snprintf(buf, n,
           "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
           "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
           "\"data_codecs\":%s,\"index_data_type\":\"%s\",\"index_location\":"
           "\"%s\"}}]",
           data[o->data_codec], o->idx32 ? "uint32" : "uint64",
           o->at_end ? "end" : "start");
}

/* Write an array zarr.json. */
static void put_meta(const char *dir, const char *arr, const char *shape,
                     const char *chunks, const char *dtype, const char *fill,
                     const char *keyenc, const char *codecs) {
  char text[8192], rel[512];
  snprintf(text, sizeof text,
           "{\n  \"zarr_format\": 3,\n  \"node_type\": \"array\",\n"
           "  \"shape\": %s,\n  \"data_type\": \"%s\",\n"
           "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
           "{\"chunk_shape\": %s}},\n  \"chunk_key_encoding\": %s,\n"
           "  \"fill_value\": %s,\n  \"codecs\": %s,\n"
           "  \"attributes\": {}\n}\n",
           shape, dtype, chunks, keyenc, fill, codecs);
  snprintf(rel, sizeof rel, "%s%szarr.json", arr, *arr ? "/" : "");
  puts_file(dir, rel, text);
}

static const char *KEY_SLASH =
    "{\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}";
static const char *KEY_DOT =
    "{\"name\": \"default\", \"configuration\": {\"separator\": \".\"}}";

/* ---- example ---- */

/* Deterministic example strings: name i. */
static void example_name(size_t i, char *out, size_t n) {
  static const char *const base[] = {
      "Tokyo",          "Jakarta",     "Delhi",        "Guangzhou",
      "Mumbai",         "Manila",      "Shanghai",     "Sao Paulo",
      "Seoul",          "Mexico City", "Cairo",        "New York",
      "Dhaka",          "Beijing",     "Kolkata",      "Bangkok",
      "Shenzhen",       "Moscow",      "Buenos Aires", "Lagos",
      "Istanbul",       "Karachi",     "Bangalore",    "Ho Chi Minh City",
      "Osaka",          "Chengdu",     "Tehran",       "Kinshasa",
      "Rio de Janeiro", "Chennai",     "Xi'an",        "Lahore",
      "Chongqing",      "Lima"};
  size_t nb = sizeof base / sizeof *base;
  if (i == 7)
    snprintf(out, n, "Zürich");
  else if (i == 13)
    snprintf(out, n, "two\nlines");
  else if (i == 21)
    snprintf(out, n, "%s", "");
  else
    snprintf(out, n, "%s-%zu", base[i % nb], i);
}

/* Text of one string element as the view shows it. */
static void text_line(struct buf *t, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char c = s[i] == '\n' ? ' ' : s[i];
    bput(t, &c, 1);
  }
  bput(t, "\n", 1);
}

/* A 1-D string array in zarrs.vlen or vlen-utf8 (+zstd). */
static void example_strings(const char *dir, const char *arr, size_t count,
                            size_t chunk, int kind, const struct vlen_opts *o,
                            const char *keyenc, char sep, size_t skip_chunk,
                            const char *fill) {
  char codecs[2048];
  if (kind == 0)
    vlen_codecs_json(codecs, sizeof codecs, o);
  else
    snprintf(codecs, sizeof codecs,
             "[{\"name\": \"vlen-utf8\"}, {\"name\": \"zstd\", "
             "\"configuration\": {\"level\": 3, \"checksum\": false}}]");
  char shape[64], chunks[64], fillj[128];
  snprintf(shape, sizeof shape, "[%zu]", count);
  snprintf(chunks, sizeof chunks, "[%zu]", chunk);
  snprintf(fillj, sizeof fillj, "\"%s\"", fill);
  put_meta(dir, arr, shape, chunks, "string", fillj, keyenc, codecs);
  struct buf text = {0};
  size_t nchunks = (count + chunk - 1) / chunk;
  char **v = xmalloc(chunk * sizeof *v);
  size_t *len = xmalloc(chunk * sizeof *len);
  for (size_t c = 0; c < nchunks; c++) {
    for (size_t k = 0; k < chunk; k++) {
      size_t i = c * chunk + k;
      v[k] = xmalloc(64);
      if (i < count)
        example_name(i, v[k], 64);
      else
        v[k][0] = '\0'; /* edge chunk: padded with empty strings */
      len[k] = strlen(v[k]);
      if (i < count) {
        if (c == skip_chunk)
          text_line(&text, fill, strlen(fill));
        else
          text_line(&text, v[k], len[k]);
      }
    }
    if (c != skip_chunk) {
      struct buf b = kind == 0
                         ? vlen_encode((const char *const *)v, len, chunk, o)
                         : vlen_utf8_encode((const char *const *)v, len, chunk);
      if (kind == 1) {
        struct buf z = zstd_buf(b.p, b.n, 3);
        free(b.p);
        b = z;
      }
      char rel[512];
      snprintf(rel, sizeof rel, "%s/c%c%zu", arr, sep, c);
      put(dir, rel, b.p, b.n);
      free(b.p);
    }
    for (size_t k = 0; k < chunk; k++)
      free(v[k]);
  }
  free(v);
  free(len);
  char rel[512];
  snprintf(rel, sizeof rel, "EXPECTED/%s.txt", arr);
  put(dir, rel, text.p, text.n);
  free(text.p);
}

/* The example store. */
static void cmd_example(const char *dir) {
  mkdirs(dir, 1);
  puts_file(dir, "zarr.json",
            "{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n"
            "  \"attributes\": {\"description\": \"zarrfs example store: "
            "string arrays in zarrs.vlen and vlen-utf8, numeric arrays\"}\n}"
            "\n");
  struct vlen_opts start = {0, 0, 0}, end = {1, 1, 1};
  example_strings(dir, "names_start", 1000, 300, 0, &start, KEY_SLASH, '/',
                  (size_t)-1, "");
  example_strings(dir, "names_end", 1000, 250, 0, &end, KEY_DOT, '.',
                  (size_t)-1, "");
  example_strings(dir, "labels_utf8", 500, 128, 1, NULL, KEY_SLASH, '/', 2,
                  "unknown");

  /* matrix: float64 [7,5] chunks [3,2], gzip, fill NaN, chunk (1,1)
   * missing. */
  put_meta(dir, "matrix", "[7, 5]", "[3, 2]", "float64", "\"NaN\"", KEY_SLASH,
           "[{\"name\": \"bytes\", \"configuration\": {\"endian\": "
           "\"little\"}}, {\"name\": \"gzip\", \"configuration\": {\"level\": "
           "5}}]");
  struct buf text = {0};
  for (int r = 0; r < 7; r++)
    for (int c = 0; c < 5; c++) {
      char line[64];
      if (r / 3 == 1 && c / 2 == 1)
        snprintf(line, sizeof line, "nan\n");
      else
        snprintf(line, sizeof line, "%g\n", (r * 5 + c) * 0.5 - 3);
      bput(&text, line, strlen(line));
    }
  put(dir, "EXPECTED/matrix.txt", text.p, text.n);
  free(text.p);
  for (int ci = 0; ci < 3; ci++)
    for (int cj = 0; cj < 3; cj++) {
      if (ci == 1 && cj == 1)
        continue;
      double v[6];
      for (int r = 0; r < 3; r++)
        for (int c = 0; c < 2; c++) {
          int gr = ci * 3 + r, gc = cj * 2 + c;
          v[r * 2 + c] = (gr < 7 && gc < 5) ? (gr * 5 + gc) * 0.5 - 3 : 0.0;
        }
      struct buf g = gzip_buf((const uint8_t *)v, sizeof v, 5);
      char rel[64];
      snprintf(rel, sizeof rel, "matrix/c/%d/%d", ci, cj);
      put(dir, rel, g.p, g.n);
      free(g.p);
    }

  /* counts: int32 big endian, v2 keys with '.'. */
  put_meta(dir, "counts", "[20]", "[8]", "int32", "0",
           "{\"name\": \"v2\", \"configuration\": {\"separator\": \".\"}}",
           "[{\"name\": \"bytes\", \"configuration\": {\"endian\": \"big\"}}]");
  text = (struct buf){0};
  for (int c = 0; c < 3; c++) {
    struct buf b = {0};
    for (int k = 0; k < 8; k++) {
      int i = c * 8 + k;
      int32_t v = i < 20 ? (i * i - 50) * 1000 : 0;
      bput_be(&b, (uint32_t)v, 4);
      if (i < 20) {
        char line[32];
        snprintf(line, sizeof line, "%d\n", v);
        bput(&text, line, strlen(line));
      }
    }
    char rel[64];
    snprintf(rel, sizeof rel, "counts/%d", c);
    put(dir, rel, b.p, b.n);
    free(b.p);
  }
  put(dir, "EXPECTED/counts.txt", text.p, text.n);
  free(text.p);

  /* flags: bool, one chunk, v2 keys with '/'. */
  put_meta(dir, "flags", "[10]", "[10]", "bool", "false",
           "{\"name\": \"v2\", \"configuration\": {\"separator\": \"/\"}}",
           "[{\"name\": \"bytes\"}]");
  uint8_t f[10];
  text = (struct buf){0};
  for (int i = 0; i < 10; i++) {
    f[i] = (uint8_t)(i % 3 == 0);
    const char *s = f[i] ? "true\n" : "false\n";
    bput(&text, s, strlen(s));
  }
  put(dir, "flags/0", f, sizeof f);
  put(dir, "EXPECTED/flags.txt", text.p, text.n);
  free(text.p);
}

/* ---- bigstrings ---- */

/* Element i of a big store: "row-<i>-" padded to about L bytes. */
static size_t big_elem(size_t i, size_t L, char *out) {
  size_t n = L + (i * 7919) % 17;
  n = n > 8 ? n - 8 : 1;
  int w = snprintf(out, n + 1, "row-%zu-", i);
  for (size_t k = (size_t)w; k < n; k++)
    out[k] = (char)('a' + (i + k) % 26);
  return n < (size_t)w ? (size_t)w : n;
}

/* Parse a size_t option value. */
static size_t num(const char *s) {
  char *e;
  unsigned long long v = strtoull(s, &e, 10);
  if (*e || e == s)
    die("bad number '%s'", s);
  return (size_t)v;
}

/* The large single-array store (memory: one chunk). */
static void cmd_bigstrings(int argc, char **argv) {
  const char *dir = argv[2], *plain = NULL;
  size_t count = 0, strlen_ = 40, chunk = 0;
  struct vlen_opts o = {0, 0, 0};
  for (int i = 3; i < argc; i++) {
    if (i + 1 >= argc)
      die("option %s needs a value", argv[i]);
    if (!strcmp(argv[i], "--count"))
      count = num(argv[++i]);
    else if (!strcmp(argv[i], "--strlen"))
      strlen_ = num(argv[++i]);
    else if (!strcmp(argv[i], "--chunk"))
      chunk = num(argv[++i]);
    else if (!strcmp(argv[i], "--data")) {
      i++;
      o.data_codec = !strcmp(argv[i], "zstd") ? 1 : 0;
    } else if (!strcmp(argv[i], "--index")) {
      i++;
      o.at_end = !strcmp(argv[i], "end");
    } else if (!strcmp(argv[i], "--plain"))
      plain = argv[++i];
    else
      die("unknown option %s", argv[i]);
  }
  if (!count || !chunk)
    die("--count and --chunk are required");
  mkdirs(dir, 1);
  char codecs[2048], shape[64], chunks[64];
  vlen_codecs_json(codecs, sizeof codecs, &o);
  snprintf(shape, sizeof shape, "[%zu]", count);
  snprintf(chunks, sizeof chunks, "[%zu]", chunk);
  put_meta(dir, "", shape, chunks, "string", "\"\"", KEY_SLASH, codecs);
  FILE *pf = plain ? fopen(plain, "wb") : NULL;
  if (plain && !pf)
    die("%s: %s", plain, strerror(errno));
  size_t maxl = strlen_ + 64;
  char *pool = xmalloc(chunk * maxl);
  char **v = xmalloc(chunk * sizeof *v);
  size_t *len = xmalloc(chunk * sizeof *len);
  for (size_t c = 0; c * chunk < count; c++) {
    for (size_t k = 0; k < chunk; k++) {
      size_t i = c * chunk + k;
      v[k] = pool + k * maxl;
      len[k] = i < count ? big_elem(i, strlen_, v[k]) : 0;
      if (pf && i < count) {
        fwrite(v[k], 1, len[k], pf);
        fputc('\n', pf);
      }
    }
    struct buf b = vlen_encode((const char *const *)v, len, chunk, &o);
    char rel[64];
    snprintf(rel, sizeof rel, "c/%zu", c);
    put(dir, rel, b.p, b.n);
    free(b.p);
  }
  if (pf && fclose(pf) != 0)
    die("%s: %s", plain, strerror(errno));
  free(pool);
  free(v);
  free(len);
}

/* ---- badinput ---- */

/* The healthy chunk c/0 of every bad-input array. */
static const char *const GOOD[] = {"a", "bb", "ccc", "dddd"};
static const size_t GOOD_LEN[] = {1, 2, 3, 4};

/* Write one bad-input array: healthy c/0 and the given bad c/1. */
static void bad_array(const char *dir, FILE *exp, const char *arr,
                      const struct vlen_opts *o, const uint8_t *bad,
                      size_t badlen) {
  char codecs[2048], rel[256];
  vlen_codecs_json(codecs, sizeof codecs, o);
  put_meta(dir, arr, "[8]", "[4]", "string", "\"\"", KEY_SLASH, codecs);
  struct buf g = vlen_encode(GOOD, GOOD_LEN, 4, o);
  snprintf(rel, sizeof rel, "%s/c/0", arr);
  put(dir, rel, g.p, g.n);
  free(g.p);
  snprintf(rel, sizeof rel, "%s/c/1", arr);
  put(dir, rel, bad, badlen);
  fprintf(exp, "%s c/1.txt\n%s values.txt\n", arr, arr);
  fprintf(exp, "%s c/0.txt a\\nbb\\nccc\\ndddd\\n\n", arr);
}

/* A vlen-utf8 array with a bad chunk. */
static void bad_utf8_array(const char *dir, FILE *exp, const char *arr,
                           const uint8_t *bad, size_t badlen) {
  char rel[256];
  put_meta(dir, arr, "[8]", "[4]", "string", "\"\"", KEY_SLASH,
           "[{\"name\": \"vlen-utf8\"}]");
  struct buf g = vlen_utf8_encode(GOOD, GOOD_LEN, 4);
  snprintf(rel, sizeof rel, "%s/c/0", arr);
  put(dir, rel, g.p, g.n);
  free(g.p);
  snprintf(rel, sizeof rel, "%s/c/1", arr);
  put(dir, rel, bad, badlen);
  fprintf(exp, "%s c/1.txt\n%s values.txt\n", arr, arr);
  fprintf(exp, "%s c/0.txt a\\nbb\\nccc\\ndddd\\n\n", arr);
}

/* An array whose zarr.json is bad; its views fail, its raw keys serve. */
static void bad_meta(const char *dir, FILE *exp, const char *arr,
                     const char *meta, const char *must_fail) {
  char rel[256];
  snprintf(rel, sizeof rel, "%s/zarr.json", arr);
  puts_file(dir, rel, meta);
  snprintf(rel, sizeof rel, "%s/c/0", arr);
  puts_file(dir, rel, "rawbytes");
  fprintf(exp, "%s %s\n", arr, must_fail);
  fprintf(exp, "%s c/0 rawbytes\n", arr);
}

/* The bad-input store and its EXPECTED.txt. */
static void cmd_badinput(const char *dir) {
  mkdirs(dir, 1);
  puts_file(dir, "zarr.json",
            "{\"zarr_format\": 3, \"node_type\": \"group\"}\n");
  char path[4096];
  snprintf(path, sizeof path, "%s/EXPECTED.txt", dir);
  FILE *exp = fopen(path, "w");
  if (!exp)
    die("%s: %s", path, strerror(errno));
  struct vlen_opts plain = {0, 0, 0}, gz = {0, 0, 2}, zs = {0, 0, 1},
                   crc = {0, 0, 3};
  const char *four[] = {"eeee", "ffff", "gggg", "hhhh"};
  size_t four_len[] = {4, 4, 4, 4};

  /* Offsets that decrease: index 0,4,2,8,16. */
  struct buf b = vlen_encode(four, four_len, 4, &plain);
  b.p[8 + 16] = 2;
  bad_array(dir, exp, "decreasing_offsets", &plain, b.p, b.n);
  /* Last offset past the data. */
  b.p[8 + 16] = 8;
  b.p[8 + 32] = 200;
  bad_array(dir, exp, "offset_past_data", &plain, b.p, b.n);
  free(b.p);
  /* Index length larger than the chunk. */
  b = vlen_encode(four, four_len, 4, &plain);
  b.p[0] = 0xff;
  b.p[1] = 0xff;
  bad_array(dir, exp, "index_len_too_big", &plain, b.p, b.n);
  free(b.p);
  /* gzip data shorter than the last offset says. */
  {
    struct buf idx = {0};
    uint64_t offs[5] = {0, 4, 8, 12, 16};
    for (int i = 0; i < 5; i++)
      bput_le(&idx, offs[i], 8);
    struct buf z = gzip_buf((const uint8_t *)"eeeeffff", 8, 5);
    struct buf c = {0};
    bput_le(&c, idx.n, 8);
    bput(&c, idx.p, idx.n);
    bput(&c, z.p, z.n);
    bad_array(dir, exp, "data_len_mismatch", &gz, c.p, c.n);
    /* Truncated gzip: the good stream cut in half. */
    struct buf z16 = gzip_buf((const uint8_t *)"eeeeffffgggghhhh", 16, 5);
    c.n = 8 + idx.n;
    bput(&c, z16.p, z16.n / 2);
    bad_array(dir, exp, "truncated_gzip", &gz, c.p, c.n);
    free(z16.p);
    free(z.p);
    free(idx.p);
    free(c.p);
  }
  /* Corrupt zstd: flip bytes inside the frame. */
  b = vlen_encode(four, four_len, 4, &zs);
  for (size_t i = 8 + 40 + 4; i < b.n; i++)
    b.p[i] ^= 0x5a;
  bad_array(dir, exp, "corrupt_zstd", &zs, b.p, b.n);
  free(b.p);
  /* Wrong crc32c. */
  b = vlen_encode(four, four_len, 4, &crc);
  b.p[b.n - 1] ^= 0xff;
  bad_array(dir, exp, "bad_crc32c", &crc, b.p, b.n);
  free(b.p);
  /* vlen-utf8 element length past the buffer. */
  b = vlen_utf8_encode(four, four_len, 4);
  b.p[4 + 3 * 8] = 0x7f; /* length of element 3 */
  bad_utf8_array(dir, exp, "utf8_len_overrun", b.p, b.n);
  free(b.p);
  /* Three-byte chunk. */
  bad_array(dir, exp, "short_chunk", &plain, (const uint8_t *)"abc", 3);

  const char *arr_tail =
      "\"chunk_key_encoding\": {\"name\": \"default\"}, \"fill_value\": 0, "
      "\"codecs\": [{\"name\": \"bytes\"}]}";
  char meta[2048];
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": \"x\", "
           "\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\", "
           "\"configuration\": {\"chunk_shape\": [4]}}, %s",
           arr_tail);
  bad_meta(dir, exp, "bad_shape", meta, "values.txt");
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [8], "
           "\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\", "
           "\"configuration\": {\"chunk_shape\": [0]}}, %s",
           arr_tail);
  bad_meta(dir, exp, "zero_chunk", meta, "values.txt");
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"foo\": 1, "
           "\"shape\": [8], \"data_type\": \"int8\", \"chunk_grid\": "
           "{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": "
           "[4]}}, %s",
           arr_tail);
  bad_meta(dir, exp, "unknown_field", meta, "values.txt");
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": "
           "[4611686018427387904, 4611686018427387904], \"data_type\": "
           "\"int8\", \"chunk_grid\": {\"name\": \"regular\", "
           "\"configuration\": {\"chunk_shape\": [1, 1]}}, %s",
           arr_tail);
  bad_meta(dir, exp, "overflow", meta, "values.txt");
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], "
           "\"data_type\": \"int8\", \"chunk_grid\": {\"name\": \"regular\", "
           "\"configuration\": {\"chunk_shape\": [4]}}, \"chunk_key_encoding\":"
           " {\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": "
           "[{\"name\": \"frobnicate\"}]}");
  bad_meta(dir, exp, "unknown_codec", meta, "c/0.txt");
  fprintf(exp, "unknown_codec values.txt\n");
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [4], "
           "\"data_type\": \"float8_e4m3\", \"chunk_grid\": {\"name\": "
           "\"regular\", \"configuration\": {\"chunk_shape\": [4]}}, %s",
           arr_tail);
  bad_meta(dir, exp, "unknown_dtype", meta, "values.txt");
  if (fclose(exp) != 0)
    die("%s: %s", path, strerror(errno));
}

/* Dispatch. */
int main(int argc, char **argv) {
  if (argc >= 3 && !strcmp(argv[1], "example"))
    cmd_example(argv[2]);
  else if (argc >= 3 && !strcmp(argv[1], "bigstrings"))
    cmd_bigstrings(argc, argv);
  else if (argc >= 3 && !strcmp(argv[1], "badinput"))
    cmd_badinput(argv[2]);
  else {
    fprintf(stderr,
            "usage: zarrfs-mkstore example DIR\n"
            "       zarrfs-mkstore bigstrings DIR --count N --strlen L "
            "--chunk C [--data zstd|none] [--index start|end] [--plain FILE]\n"
            "       zarrfs-mkstore badinput DIR\n");
    return 1;
  }
  return 0;
}
