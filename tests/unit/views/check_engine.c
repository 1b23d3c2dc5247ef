/* check_engine.c - the engine and the text views driven without a mount:
 * partial decoding (bytes read from the store are counted), C order of
 * array views across edge chunks, fill values, ranged reads at every
 * offset, concurrent readers, and data errors that leave the rest
 * readable. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/info.h"
#include "../../../fs/views/view.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

static char tmpdir[64];

/* Write a file under tmpdir, creating parent directories. */
static void put_file(const char *rel, const void *data, size_t len) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
  for (char *p = path + strlen(tmpdir) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

/* Write text. */
static void put_text(const char *rel, const char *text) {
  put_file(rel, text, strlen(text));
}

/* Little-endian u64. */
static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* Encode strings as a zarrs.vlen chunk (index at start, uint64, bytes). */
static uint8_t *vlen_chunk(char **s, size_t n, size_t *len) {
  size_t data = 0;
  for (size_t i = 0; i < n; i++)
    data += strlen(s[i]);
  size_t L = 8 * (n + 1);
  *len = 8 + L + data;
  uint8_t *b = malloc(*len);
  le64(b, L);
  uint64_t off = 0;
  uint8_t *d = b + 8 + L;
  for (size_t i = 0; i < n; i++) {
    le64(b + 8 + 8 * i, off);
    memcpy(d + off, s[i], strlen(s[i]));
    off += strlen(s[i]);
  }
  le64(b + 8 + 8 * n, off);
  return b;
}

static const char *VLEN_CODECS =
    "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{\"name\":"
    "\"bytes\",\"configuration\":{\"endian\":\"little\"}}],\"data_codecs\":[{"
    "\"name\":\"bytes\"}],\"index_data_type\":\"uint64\",\"index_location\":"
    "\"start\"}}]";

/* Write an array zarr.json. */
static void put_array_meta(const char *prefix, const char *shape,
                           const char *chunks, const char *dtype,
                           const char *fill, const char *codecs) {
  char buf[2048], rel[256];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":%s}},\"chunk_key_encoding\":{"
           "\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":%s,\"codecs\":%s}",
           shape, dtype, chunks, fill, codecs);
  snprintf(rel, sizeof rel, "%s%szarr.json", prefix, *prefix ? "/" : "");
  put_text(rel, buf);
}

/* Fresh temp store directory. */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-engine-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_text("zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* Engine over tmpdir. */
static struct engine *open_engine(size_t cache) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &s, &err), 0);
  struct engine_config cfg = {cache, 1u << 30, 1000};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* Read a whole view through ns_* in pieces of `step` bytes. */
static char *read_all(struct engine *e, const char *path, size_t step,
                      uint64_t *size) {
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == 0, "%s: %s", path, err.msg);
  ck_assert_msg(ns_size(e, &ent, size, &err) == 0, "%s: %s", path, err.msg);
  char *buf = malloc(*size + 1);
  uint64_t off = 0;
  while (off < *size) {
    long n = ns_read_view(e, &ent, off, step, buf + off, NULL, &err);
    ck_assert_msg(n > 0, "%s at %llu: %s", path, (unsigned long long)off,
                  err.msg);
    off += (uint64_t)n;
  }
  buf[*size] = '\0';
  return buf;
}

/* The 2-D string array: element (r,c) is "e<r*7+c>", one with a newline. */
static void make_strings_2d(void) {
  put_array_meta("s2", "[5,7]", "[2,3]", "string", "\"\"", VLEN_CODECS);
  for (int ci = 0; ci < 3; ci++)
    for (int cj = 0; cj < 3; cj++) {
      char *vals[6], tmp[6][16];
      for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++) {
          int gr = ci * 2 + r, gc = cj * 3 + c;
          if (gr < 5 && gc < 7)
            snprintf(tmp[r * 3 + c], 16, gr == 1 && gc == 1 ? "x\ny" : "e%d",
                     gr * 7 + gc);
          else
            snprintf(tmp[r * 3 + c], 16, "OUTSIDE");
          vals[r * 3 + c] = tmp[r * 3 + c];
        }
      size_t len;
      uint8_t *b = vlen_chunk(vals, 6, &len);
      char key[64];
      snprintf(key, sizeof key, "s2/c/%d/%d", ci, cj);
      put_file(key, b, len);
      free(b);
    }
}

/* Expected text of s2/values.txt. */
static char *expected_strings_2d(void) {
  char *out = malloc(1024);
  size_t pos = 0;
  for (int i = 0; i < 35; i++)
    pos += (size_t)sprintf(out + pos, i == 8 ? "x y\n" : "e%d\n", i);
  return out;
}

/* zstd of p[0..n) (one frame with its size); caller frees. */
static uint8_t *zstd_of(const void *p, size_t n, size_t *out) {
  size_t cap = ZSTD_compressBound(n);
  uint8_t *o = malloc(cap);
  *out = ZSTD_compress(o, cap, p, n, 3);
  ck_assert(!ZSTD_isError(*out));
  return o;
}

/* String i of the in-memory text tests: 0 to 80 bytes, some newlines. */
static void mem_string(size_t i, char *buf) {
  size_t l = (i * 37) % 9 == 0 ? 33 + i % 48 : (i * 7) % 17;
  for (size_t c = 0; c < l; c++)
    buf[c] = (char)((c + i) % 11 == 3 ? '\n' : 'a' + (c * 3 + i) % 26);
  buf[l] = '\0';
}

START_TEST(strings_in_memory_text) {
  /* vlen-utf8 + zstd (the text made where the decompressed chunk lies),
   * 1-D with a short last chunk and 2-D with edge chunks in both
   * dimensions, and zarrs.vlen with zstd data (rendered from the data
   * section): every view equals the strings with newlines as spaces. */
  enum { N = 1001, C = 300 };
  put_array_meta("u1", "[1001]", "[300]", "string", "\"\"",
                 "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]");
  put_array_meta(
      "z1", "[1001]", "[300]", "string", "\"\"",
      "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
      "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
      "\"data_codecs\":[{\"name\":\"bytes\"},{\"name\":\"zstd\"}],"
      "\"index_data_type\":\"uint64\",\"index_location\":\"start\"}}]");
  put_array_meta("u2", "[5,7]", "[2,3]", "string", "\"\"",
                 "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]");
  char *want1 = malloc(N * 82), *w = want1, s[96];
  for (size_t c = 0; c * C < N; c++) {
    size_t n = C, raw = 4, data = 0; /* a last chunk is whole on disk */
    uint8_t *il = malloc(4 + n * 84), *dat = malloc(n * 84 + 1);
    uint64_t *offs = malloc((n + 1) * sizeof *offs);
    il[0] = (uint8_t)n, il[1] = (uint8_t)(n >> 8), il[2] = il[3] = 0;
    offs[0] = 0;
    for (size_t k = 0; k < n; k++) {
      size_t i = c * C + k;
      mem_string(i, s);
      size_t l = strlen(s);
      for (int b = 0; b < 4; b++)
        il[raw + (size_t)b] = (uint8_t)(l >> (8 * b));
      memcpy(il + raw + 4, s, l);
      raw += 4 + l;
      memcpy(dat + data, s, l);
      data += l;
      offs[k + 1] = data;
      if (i < N) {
        for (size_t q = 0; q < l; q++)
          *w++ = s[q] == '\n' ? ' ' : s[q];
        *w++ = '\n';
      }
    }
    char key[64];
    size_t zl;
    uint8_t *z = zstd_of(il, raw, &zl);
    snprintf(key, sizeof key, "u1/c/%zu", c);
    put_file(key, z, zl);
    free(z);
    z = zstd_of(dat, data, &zl);
    size_t L = 8 * (n + 1);
    uint8_t *ch = malloc(8 + L + zl);
    le64(ch, L);
    for (size_t k = 0; k <= n; k++)
      le64(ch + 8 + 8 * k, offs[k]);
    memcpy(ch + 8 + L, z, zl);
    snprintf(key, sizeof key, "z1/c/%zu", c);
    put_file(key, ch, 8 + L + zl);
    free(ch);
    free(z);
    free(offs);
    free(dat);
    free(il);
  }
  *w = '\0';
  /* 2-D: element (r,c) is mem_string(r*7+c), "OUTSIDE" out of bounds */
  char *want2 = malloc(35 * 82);
  w = want2;
  for (int i = 0; i < 35; i++) {
    mem_string((size_t)i, s);
    for (char *q = s; *q; q++)
      *w++ = *q == '\n' ? ' ' : *q;
    *w++ = '\n';
  }
  *w = '\0';
  for (int ci = 0; ci < 3; ci++)
    for (int cj = 0; cj < 3; cj++) {
      uint8_t il[2048];
      size_t raw = 4;
      il[0] = 6, il[1] = il[2] = il[3] = 0;
      for (int r = 0; r < 2; r++)
        for (int cc = 0; cc < 3; cc++) {
          int gr = ci * 2 + r, gc = cj * 3 + cc;
          if (gr < 5 && gc < 7)
            mem_string((size_t)(gr * 7 + gc), s);
          else
            strcpy(s, "OUTSIDE");
          size_t l = strlen(s);
          for (int b = 0; b < 4; b++)
            il[raw + (size_t)b] = (uint8_t)(l >> (8 * b));
          memcpy(il + raw + 4, s, l);
          raw += 4 + l;
        }
      size_t zl;
      uint8_t *z = zstd_of(il, raw, &zl);
      char key[64];
      snprintf(key, sizeof key, "u2/c/%d/%d", ci, cj);
      put_file(key, z, zl);
      free(z);
    }
  static const size_t steps[] = {1, 7, 4096, 1 << 20};
  for (size_t t = 0; t < sizeof steps / sizeof steps[0]; t++) {
    struct engine *e = open_engine(64u << 20); /* fresh: decoded anew */
    uint64_t size;
    char *got = read_all(e, "/u1/values.txt", steps[t], &size);
    ck_assert_uint_eq(size, strlen(want1));
    ck_assert_msg(!memcmp(got, want1, size), "u1, step %zu", steps[t]);
    free(got);
    got = read_all(e, "/z1/values.txt", steps[t], &size);
    ck_assert_uint_eq(size, strlen(want1));
    ck_assert_msg(!memcmp(got, want1, size), "z1, step %zu", steps[t]);
    free(got);
    got = read_all(e, "/u2/values.txt", steps[t], &size);
    ck_assert_uint_eq(size, strlen(want2));
    ck_assert_msg(!memcmp(got, want2, size), "u2, step %zu", steps[t]);
    free(got);
    engine_free(e);
  }
  free(want2);
  free(want1);
}
END_TEST

START_TEST(array_view_c_order_2d) {
  make_strings_2d();
  struct engine *e = open_engine(1 << 20);
  char *want = expected_strings_2d();
  for (size_t step = 1; step <= 64; step = step * 2 + 1) {
    uint64_t size;
    char *got = read_all(e, "/s2/values.txt", step, &size);
    ck_assert_uint_eq(size, strlen(want));
    ck_assert_str_eq(got, want);
    free(got);
  }
  /* The edge chunk (2,2) holds only element (4,6). */
  uint64_t size;
  char *got = read_all(e, "/s2/c/2/2.txt", 5, &size);
  ck_assert_str_eq(got, "e34\n");
  free(got);
  got = read_all(e, "/s2/c/0/0.txt", 3, &size);
  ck_assert_str_eq(got, "e0\ne1\ne2\ne7\nx y\ne9\n");
  free(got);
  free(want);
  engine_free(e);
}
END_TEST

/* The 5x7 int32 array n in 2x3 chunks, fill 42: element (r,c) is
 * -(r*7+c); chunk c/1/1 is missing. */
static void make_numeric(void) {
  put_array_meta("n", "[5,7]", "[2,3]", "int32", "42",
                 "[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
                 "\"little\"}}]");
  for (int ci = 0; ci < 3; ci++)
    for (int cj = 0; cj < 3; cj++) {
      if (ci == 1 && cj == 1)
        continue; /* missing: fill 42 */
      int32_t v[6];
      for (int r = 0; r < 2; r++)
        for (int c = 0; c < 3; c++)
          v[r * 3 + c] = -((ci * 2 + r) * 7 + (cj * 3 + c));
      char key[64];
      snprintf(key, sizeof key, "n/c/%d/%d", ci, cj);
      put_file(key, v, sizeof v);
    }
}

START_TEST(numeric_fill_and_edges) {
  make_numeric();
  struct engine *e = open_engine(1 << 20);
  char want[1024];
  size_t pos = 0;
  for (int r = 0; r < 5; r++)
    for (int c = 0; c < 7; c++) {
      int missing = r / 2 == 1 && c / 3 == 1;
      pos += (size_t)sprintf(want + pos, "%d\n", missing ? 42 : -(r * 7 + c));
    }
  uint64_t size;
  char *got = read_all(e, "/n/values.txt", 7, &size);
  ck_assert_str_eq(got, want);
  free(got);
  engine_free(e);
}
END_TEST

START_TEST(partial_decoding_reads_little) {
  /* One chunk of 32768 strings of about 2 KiB: 64 MiB of data, 256 KiB of
   * index. stat + reading the last 200 bytes must read under 1 MiB. */
  enum { N = 32768 };
  put_array_meta("", "[32768]", "[32768]", "string", "\"\"", VLEN_CODECS);
  char path[256];
  snprintf(path, sizeof path, "%s/c", tmpdir);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/c/0", tmpdir);
  FILE *f = fopen(path, "wb");
  uint8_t w[8];
  le64(w, 8 * (N + 1));
  fwrite(w, 1, 8, f);
  uint64_t off = 0;
  static char elem[2100];
  for (int i = 0; i <= N; i++) {
    le64(w, off);
    fwrite(w, 1, 8, f);
    if (i < N)
      off += 2040 + (uint64_t)(i % 17);
  }
  uint64_t text_size = off + N;
  char tail_want[4096];
  size_t tail_len = 0;
  for (int i = 0; i < N; i++) {
    size_t n = 2040 + (size_t)(i % 17);
    memset(elem, 'a' + i % 26, n);
    snprintf(elem, 16, "row-%06d-", i);
    elem[strlen(elem)] = 'z';
    fwrite(elem, 1, n, f);
    if (i >= N - 1) {
      memcpy(tail_want, elem, n);
      tail_want[n] = '\n';
      tail_len = n + 1;
    }
  }
  fclose(f);
  struct engine *e = open_engine(256u << 20);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/c/0.txt", &ent, &err), 0);
  uint64_t size;
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, text_size);
  uint64_t after_stat = atomic_load(&e->store->stats.bytes_read);
  ck_assert_uint_le(after_stat, 8 + 8 * (N + 1) + 4096);
  char buf[200];
  ck_assert_int_eq(ns_read_view(e, &ent, size - 200, 200, buf, NULL, &err),
                   200);
  ck_assert_int_eq(memcmp(buf, tail_want + tail_len - 200, 200), 0);
  uint64_t total = atomic_load(&e->store->stats.bytes_read);
  ck_assert_msg(total < (1u << 20), "read %llu bytes",
                (unsigned long long)total);
  /* The array view of the same data: same size, same tail, still cheap. */
  ck_assert_int_eq(ns_resolve(e, "/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, text_size);
  ck_assert_int_eq(ns_read_view(e, &ent, size - 200, 200, buf, NULL, &err),
                   200);
  ck_assert_int_eq(memcmp(buf, tail_want + tail_len - 200, 200), 0);
  total = atomic_load(&e->store->stats.bytes_read);
  ck_assert_msg(total < (1u << 20), "read %llu bytes",
                (unsigned long long)total);
  engine_free(e);
}
END_TEST

START_TEST(compressed_data_size_from_index) {
  /* zarrs.vlen with data_codecs [bytes, zstd]: stat needs the index only;
   * the data section is decompressed when text is read. */
  enum { N = 4096 };
  put_array_meta("z", "[4096]", "[4096]", "string", "\"\"",
                 "[{\"name\":\"zarrs.vlen\",\"configuration\":{"
                 "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{"
                 "\"endian\":\"little\"}}],\"data_codecs\":[{\"name\":"
                 "\"bytes\"},{\"name\":\"zstd\"}],\"index_data_type\":"
                 "\"uint64\",\"index_location\":\"start\"}}]");
  static char data[N * 16];
  static uint8_t chunk[8 + 8 * (N + 1) + N * 16 + 1024];
  static char want[N * 17];
  size_t dl = 0, wl = 0;
  le64(chunk, 8 * (N + 1));
  for (int i = 0; i < N; i++) {
    le64(chunk + 8 + 8 * i, dl);
    int w = sprintf(data + dl, "item%d", i * 7);
    memcpy(want + wl, data + dl, (size_t)w);
    want[wl + (size_t)w] = '\n';
    wl += (size_t)w + 1;
    dl += (size_t)w;
  }
  le64(chunk + 8 + 8 * N, dl);
  size_t hdr = 8 + 8 * (N + 1);
  size_t zl = ZSTD_compress(chunk + hdr, sizeof chunk - hdr, data, dl, 3);
  ck_assert(!ZSTD_isError(zl));
  put_file("z/c/0", chunk, hdr + zl);
  struct engine *e = open_engine(1 << 20);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "/z/c/0.txt", &ent, &err), 0);
  uint64_t meta = atomic_load(&e->store->stats.bytes_read); /* zarr.json */
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, wl);
  /* The index is plain: the length word and its two end offsets. */
  ck_assert_uint_eq(atomic_load(&e->store->stats.bytes_read), meta + 8 + 16);
  free(read_all(e, "/z/c/0.txt", 1000, &size));
  char *got = read_all(e, "/z/values.txt", 333, &size);
  ck_assert_int_eq(memcmp(got, want, wl), 0);
  free(got);
  /* Reading decoded the chunk once (index and compressed section), not
   * once per read. */
  ck_assert_uint_eq(atomic_load(&e->store->stats.bytes_read),
                    meta + 8 + 16 + hdr + zl);
  engine_free(e);
}
END_TEST

START_TEST(error_is_never_a_short_read) {
  /* Chunk 1's compressed data is corrupt; its size is known from the index.
   * A read of values.txt spanning both chunks must fail, not return the
   * first chunk's text as if it were the end of the file. */
  put_array_meta("zz", "[8]", "[4]", "string", "\"\"",
                 "[{\"name\":\"zarrs.vlen\",\"configuration\":{"
                 "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{"
                 "\"endian\":\"little\"}}],\"data_codecs\":[{\"name\":"
                 "\"bytes\"},{\"name\":\"zstd\"}],\"index_data_type\":"
                 "\"uint64\",\"index_location\":\"start\"}}]");
  for (int c = 0; c < 2; c++) {
    uint8_t chunk[8 + 40 + 256];
    le64(chunk, 40);
    for (int i = 0; i <= 4; i++)
      le64(chunk + 8 + 8 * i, (uint64_t)(4 * i));
    size_t zl = ZSTD_compress(chunk + 48, 256, "aaaabbbbccccdddd", 16, 3);
    ck_assert(!ZSTD_isError(zl));
    if (c == 1)
      memset(chunk + 48 + 4, 0x5a, zl - 4);
    char key[32];
    snprintf(key, sizeof key, "zz/c/%d", c);
    put_file(key, chunk, 48 + zl);
  }
  struct engine *e = open_engine(1 << 20);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "/zz/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, 40);
  char buf[64];
  ck_assert_int_eq(ns_read_view(e, &ent, 0, sizeof buf, buf, NULL, &err), -EIO);
  ck_assert_int_eq(ns_read_view(e, &ent, 0, 20, buf, NULL, &err), 20);
  ck_assert_int_eq(memcmp(buf, "aaaa\nbbbb\ncccc\ndddd\n", 20), 0);
  engine_free(e);
}
END_TEST

struct reader_arg {
  struct engine *e;
  const char *path;
  const char *want;
  int seed;
  int failures;
};

/* Random ranged reads compared with the expected text. */
static void *reader(void *p) {
  struct reader_arg *a = p;
  struct ns_entry ent;
  struct zerr err = {0};
  if (ns_resolve(a->e, a->path, &ent, &err) < 0) {
    a->failures++;
    return NULL;
  }
  size_t wl = strlen(a->want);
  unsigned s = (unsigned)a->seed;
  char buf[256];
  for (int i = 0; i < 3000; i++) {
    s = s * 1103515245u + 12345u;
    size_t off = (s >> 8) % wl;
    size_t len = 1 + (s >> 4) % 200;
    long n = ns_read_view(a->e, &ent, off, len, buf, NULL, &err);
    size_t exp = wl - off < len ? wl - off : len;
    if (n != (long)exp || memcmp(buf, a->want + off, exp) != 0)
      a->failures++;
  }
  return NULL;
}

START_TEST(eight_concurrent_readers) {
  make_strings_2d();
  put_array_meta("f", "[1000]", "[64]", "float64", "\"NaN\"",
                 "[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
                 "\"little\"}}]");
  char *fwant = malloc(1000 * 32);
  size_t pos = 0;
  for (int c = 0; c < 16; c++) {
    double v[64];
    for (int i = 0; i < 64; i++)
      v[i] = (c * 64 + i) * 0.25;
    char key[32];
    snprintf(key, sizeof key, "f/c/%d", c);
    if (c != 5)
      put_file(key, v, sizeof v);
  }
  for (int i = 0; i < 1000; i++) {
    if (i / 64 == 5)
      pos += (size_t)sprintf(fwant + pos, "nan\n");
    else
      pos += (size_t)sprintf(fwant + pos, "%.17g\n", i * 0.25);
  }
  /* i*0.25 prints exactly with %.17g only when short; use %g instead. */
  pos = 0;
  for (int i = 0; i < 1000; i++)
    pos +=
        (size_t)sprintf(fwant + pos, i / 64 == 5 ? "nan\n" : "%g\n", i * 0.25);
  char *swant = expected_strings_2d();
  struct engine *e = open_engine(4096); /* tiny cache: forces evictions */
  pthread_t t[8];
  struct reader_arg a[8];
  for (int i = 0; i < 8; i++) {
    a[i] = (struct reader_arg){e, i % 2 ? "/f/values.txt" : "/s2/values.txt",
                               i % 2 ? fwant : swant, i + 1, 0};
    pthread_create(&t[i], NULL, reader, &a[i]);
  }
  for (int i = 0; i < 8; i++) {
    pthread_join(t[i], NULL);
    ck_assert_int_eq(a[i].failures, 0);
  }
  ck_assert_uint_le(memo_used(e->memo), 4096);
  free(fwant);
  free(swant);
  engine_free(e);
}
END_TEST

START_TEST(corrupt_chunk_fails_rest_serves) {
  make_strings_2d();
  /* Chunk c/0/1: offsets that decrease. */
  uint8_t bad[8 + 56 + 4];
  le64(bad, 56);
  uint64_t offs[7] = {0, 2, 1, 3, 4, 4, 4};
  for (int i = 0; i < 7; i++)
    le64(bad + 8 + 8 * i, offs[i]);
  memcpy(bad + 64, "abcd", 4);
  put_file("s2/c/0/1", bad, sizeof bad);
  struct engine *e = open_engine(1 << 20);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/s2/c/0/1.txt", &ent, &err), 0);
  uint64_t size;
  /* The index is plain: its two ends give the size (they look right);
   * every read, jumping or in sequence, finds the disorder. */
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  char buf[64];
  struct view_cursor *c = view_cursor_new();
  for (int i = 0; i < 2; i++) {
    zerr_clear(&err);
    ck_assert_int_eq(ns_read_view(e, &ent, 0, sizeof buf, buf, NULL, &err),
                     -EIO);
    ck_assert_msg(strstr(err.msg, "out of order") != NULL, "%s", err.msg);
    zerr_clear(&err);
    ck_assert_int_eq(ns_read_view(e, &ent, 0, sizeof buf, buf, c, &err), -EIO);
  }
  view_cursor_free(e, c);
  /* Decoded whole, the chunk fails, and that is remembered. */
  struct memo_ref *ref;
  uint64_t idx[2] = {0, 1};
  zerr_clear(&err);
  ck_assert_int_eq(unit_get(e, node_get(e->nodes, "s2"), idx, &ref, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "s2/c/0/1") != NULL, "%s", err.msg);
  ck_assert_int_eq(ns_resolve(e, "/s2/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  zerr_clear(&err);
  char *all = malloc(size);
  ck_assert_int_eq(ns_read_view(e, &ent, 0, size, all, NULL, &err), -EIO);
  free(all);
  char *got = read_all(e, "/s2/c/1/1.txt", 4, &size);
  ck_assert_str_eq(got, "e17\ne18\ne19\ne24\ne25\ne26\n");
  free(got);
  engine_free(e);
}
END_TEST

START_TEST(unknown_codec_and_dtype) {
  put_array_meta("u", "[4]", "[4]", "int8", "0", "[{\"name\":\"frobnicate\"}]");
  put_text("u/c/0", "xxxx");
  put_array_meta("d", "[4]", "[4]", "float8_e4m3", "0",
                 "[{\"name\":\"bytes\"}]");
  put_text("d/c/0", "xxxx");
  put_text("b/zarr.json", "{\"zarr_format\":3,\"node_type\":\"array\"");
  struct engine *e = open_engine(1 << 20);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "/u/c/0", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  ck_assert_int_eq(ns_resolve(e, "/u/c/0.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "frobnicate") != NULL, "%s", err.msg);
  ck_assert_int_eq(ns_resolve(e, "/d/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "float8_e4m3") != NULL, "%s", err.msg);
  ck_assert_int_eq(ns_resolve(e, "/b/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EIO);
  ck_assert_int_eq(ns_resolve(e, "/b/zarr.json", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  ck_assert_int_eq(ns_resolve(e, "/nope.txt", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, "/values.txt", &ent, &err), -ENOENT);
  engine_free(e);
}
END_TEST

/* Collect listing names into one string. */
static int collect(void *ud, const char *name, int is_dir) {
  char *s = ud;
  strcat(s, name);
  strcat(s, is_dir ? "/ " : " ");
  return 0;
}

START_TEST(listing_and_collisions) {
  make_strings_2d();
  put_text("s2/c/0/1.txt", "stored wins\n"); /* collides with a view */
  struct engine *e = open_engine(1 << 20);
  char names[1024] = "";
  struct zerr err = {0};
  ck_assert_int_eq(ns_list(e, "/s2", collect, names, &err), 0);
  ck_assert_str_eq(names, "c/ zarr.json values.txt rows.csv info.txt ");
  names[0] = '\0';
  ck_assert_int_eq(ns_list(e, "/s2/c/0", collect, names, &err), 0);
  ck_assert_str_eq(names, "0 1 1.txt 2 0.txt 2.txt ");
  uint64_t size;
  char *got = read_all(e, "/s2/c/0/0.txt", 100, &size);
  free(got);
  struct ns_entry ent;
  ck_assert_int_eq(ns_resolve(e, "/s2/c/0/1.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  engine_free(e);
}
END_TEST

/* The value of line "name value" in a stats text, or -1. */
static long long stat_of(const char *text, const char *name) {
  char pat[64];
  snprintf(pat, sizeof pat, "\n%s ", name);
  const char *p = strstr(text, pat);
  if (!p && !strncmp(text, pat + 1, strlen(pat + 1)))
    p = text - 1;
  return p ? atoll(p + strlen(pat)) : -1;
}

/* info.txt: its exact text and size from the metadata and the listing;
 * the same text without a listing says "unknown"; a stored info.txt wins;
 * groups have none. */
START_TEST(info_txt) {
  make_numeric();
  struct engine *e = open_engine(1 << 20);
  static const char *const want =
      "path: /n\nnode_type: array\nzarr_format: 3\nshape: [5, 7]\n"
      "data_type: int32\nchunk_shape: [2, 3]\nchunks: 9 (3 x 3)\n"
      "chunk_key_encoding: default, separator '/'\nfill_value: 42\n"
      "codecs: [{\"name\":\"bytes\",\"configuration\":{\"endian\":"
      "\"little\"}}]\nstored_chunks: 8\nmissing_chunks: 1\n"
      "bytes_stored: 192\nviews: yes\n";
  uint64_t size;
  char *got = read_all(e, "/n/info.txt", 5, &size);
  ck_assert_str_eq(got, want);
  ck_assert_uint_eq(size, strlen(want));
  free(got);
  /* The pure formatter: unknown counts, and counts past the grid. */
  const struct znode *n = node_get(e->nodes, "n");
  struct info_counts c = {0, 0, 0, "the store cannot list the array"};
  char *text;
  size_t len;
  ck_assert_int_eq(info_format(n, &c, &text, &len), 0);
  ck_assert_ptr_nonnull(strstr(text, "\nstored_chunks: unknown (the store "
                                     "cannot list the array)\nmissing_chunks:"
                                     " unknown\nbytes_stored: unknown\n"));
  free(text);
  c = (struct info_counts){1, 3, STORE_SIZE_UNKNOWN, NULL};
  ck_assert_int_eq(info_format(n, &c, &text, &len), 0);
  ck_assert_ptr_nonnull(strstr(text, "\nstored_chunks: 3\nmissing_chunks: "
                                     "6\nbytes_stored: unknown\n"));
  ck_assert_uint_eq(len, strlen(text));
  free(text);
  struct ns_entry ent;
  struct zerr err = {0};
  /* A group's info.txt summarises it (ncdump -h). */
  ck_assert_int_eq(ns_resolve(e, "/info.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_INFO_VIEW);
  got = read_all(e, "/info.txt", 7, &size);
  ck_assert_msg(strstr(got, "node_type: group\n") &&
                    strstr(got, "variables: ") && strstr(got, "groups: "),
                "%s", got);
  free(got);
  engine_free(e);
  /* A store that cannot list (as plain HTTP): the counts are unknown. */
  e = open_engine(1 << 20);
  e->store->unlistable = 1;
  got = read_all(e, "/n/info.txt", 64, &size);
  ck_assert_ptr_nonnull(strstr(got, "\nstored_chunks: unknown (the store "
                                    "cannot list the array)\n"));
  free(got);
  engine_free(e);
  put_text("n/info.txt", "mine\n");
  e = open_engine(1 << 20);
  ck_assert_int_eq(ns_resolve(e, "/n/info.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  e->views = ENGINE_VIEWS_TREE; /* the text tree: the view, not the file */
  ck_assert_int_eq(ns_resolve(e, "/.text/n/info.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_INFO_VIEW);
  e->views = ENGINE_VIEWS_NONE;
  ck_assert_int_eq(ns_resolve(e, "/n/info.txt", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  engine_free(e);
}
END_TEST

/* /.zarrfs/stats: the engine's counters, new on every read, in every
 * layout, unlisted; a stored .zarrfs wins. */
START_TEST(stats_file) {
  make_numeric();
  struct engine *e = open_engine(1 << 20);
  uint64_t size;
  char *before = read_all(e, "/.zarrfs/stats", 64, &size);
  ck_assert_uint_eq(size, 0); /* read without trusting the size */
  free(before);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/.zarrfs/stats", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_STATS);
  char buf[4096];
  long n = ns_read_view(e, &ent, 0, sizeof buf - 1, buf, NULL, &err);
  ck_assert_int_gt(n, 0);
  buf[n] = '\0';
  ck_assert_int_eq(stat_of(buf, "decodes"), 0);
  ck_assert_int_eq(stat_of(buf, "store_bytes_read"), 0);
  ck_assert_int_eq(stat_of(buf, "errors_eio"), 0);
  char *all = read_all(e, "/n/values.txt", 100, &size);
  free(all);
  all = read_all(e, "/n/c/0/0.txt", 100, &size); /* decoded already */
  free(all);
  n = ns_read_view(e, &ent, 0, sizeof buf - 1, buf, NULL, &err);
  ck_assert_int_gt(n, 0);
  buf[n] = '\0';
  ck_assert_int_eq(stat_of(buf, "decodes"), 8);
  ck_assert_int_ge(stat_of(buf, "store_bytes_read"), 8 * 24);
  ck_assert_int_ge(stat_of(buf, "cache_hits"), 1);
  ck_assert_int_ge(stat_of(buf, "cache_misses"), 8);
  ck_assert_int_eq(stat_of(buf, "requests"), 0); /* no FUSE here */
  /* A piece from an offset. */
  char piece[8];
  ck_assert_int_eq(ns_read_view(e, &ent, 3, 5, piece, NULL, &err), 5);
  ck_assert_int_eq(memcmp(piece, buf + 3, 5), 0);
  /* Every layout; never listed. */
  for (int v = ENGINE_VIEWS_BESIDE; v <= ENGINE_VIEWS_NONE; v++) {
    e->views = v;
    ck_assert_int_eq(ns_resolve(e, "/.zarrfs/stats", &ent, &err), 0);
    ck_assert_int_eq(ent.kind, NS_STATS);
    ck_assert_int_eq(ns_resolve(e, "/.zarrfs", &ent, &err), 0);
    ck_assert_int_eq(ent.kind, NS_DIR);
    char names[1024] = "";
    ck_assert_int_eq(ns_list(e, "/", collect, names, &err), 0);
    ck_assert_ptr_null(strstr(names, ".zarrfs"));
    names[0] = '\0';
    ck_assert_int_eq(ns_list(e, "/.zarrfs", collect, names, &err), 0);
    ck_assert_str_eq(names, "stats ");
  }
  ck_assert_int_eq(ns_resolve(e, "/.zarrfs/other", &ent, &err), -ENOENT);
  ck_assert_int_eq(ns_resolve(e, "/n/.zarrfs/stats", &ent, &err), -ENOENT);
  engine_free(e);
  put_text(".zarrfs", "stored\n");
  e = open_engine(1 << 20);
  ck_assert_int_eq(ns_resolve(e, "/.zarrfs", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  ck_assert_int_eq(ns_resolve(e, "/.zarrfs/stats", &ent, &err), -ENOENT);
  engine_free(e);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("engine");
  TCase *tc = tcase_create("views");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, array_view_c_order_2d);
  tcase_add_test(tc, strings_in_memory_text);
  tcase_add_test(tc, numeric_fill_and_edges);
  tcase_add_test(tc, partial_decoding_reads_little);
  tcase_add_test(tc, eight_concurrent_readers);
  tcase_add_test(tc, compressed_data_size_from_index);
  tcase_add_test(tc, error_is_never_a_short_read);
  tcase_add_test(tc, corrupt_chunk_fails_rest_serves);
  tcase_add_test(tc, unknown_codec_and_dtype);
  tcase_add_test(tc, listing_and_collisions);
  tcase_add_test(tc, info_txt);
  tcase_add_test(tc, stats_file);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
