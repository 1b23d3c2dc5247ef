/* check_shard.c - sharded arrays through the engine: inner chunks are the
 * decode unit, so a read of one inner chunk's lines reads the shard index
 * and that inner chunk only (bytes read from the store are counted); C
 * order of shard and array views across empty inner chunks, missing shards
 * and edge shards, 1-D and 2-D; bad shards fail alone. Shards are written
 * here by an independent encoder (bitwise CRC-32C, hand-built indexes). */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

#define EMPTY UINT64_MAX

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

/* Bitwise CRC-32C (Castagnoli), independent of codecs/crc32c.c. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; i++) {
    c ^= p[i];
    for (int k = 0; k < 8; k++)
      c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
  }
  return c ^ 0xFFFFFFFFu;
}

/* Little-endian stores. */
static void le32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}
static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* A growable test buffer (tests abort on allocation failure). */
struct tbuf {
  uint8_t *p;
  size_t len, cap;
};
static void tb_put(struct tbuf *b, const void *d, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2 + 64;
    b->p = realloc(b->p, b->cap);
    ck_assert(b->p != NULL);
  }
  memcpy(b->p + b->len, d, n);
  b->len += n;
}

/* One inner chunk as vlen-utf8: u32 count, then (u32 len, bytes) each. */
static void vlen_utf8(struct tbuf *b, char **vals, size_t n) {
  uint8_t w[4];
  le32(w, (uint32_t)n);
  tb_put(b, w, 4);
  for (size_t i = 0; i < n; i++) {
    le32(w, (uint32_t)strlen(vals[i]));
    tb_put(b, w, 4);
    tb_put(b, vals[i], strlen(vals[i]));
  }
}

/* Finish a shard: inner chunks already in b at offs/lens (EMPTY pairs for
 * empty ones); append the index (+ crc32c when crc) at the end. */
static void shard_finish(struct tbuf *b, const uint64_t *offs,
                         const uint64_t *lens, size_t nin, int crc) {
  size_t start = b->len;
  for (size_t i = 0; i < nin; i++) {
    uint8_t w[16];
    le64(w, offs[i]);
    le64(w + 8, lens[i]);
    tb_put(b, w, 16);
  }
  if (crc) {
    uint8_t w[4];
    le32(w, crc32c_bitwise(b->p + start, b->len - start));
    tb_put(b, w, 4);
  }
}

static const char *SHARD_VLEN_CODECS =
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[%d],"
    "\"codecs\":[{\"name\":\"vlen-utf8\"}],\"index_codecs\":[{\"name\":"
    "\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":"
    "\"crc32c\"}],\"index_location\":\"end\"}}]";

/* Write an array zarr.json. */
static void put_array_meta(const char *prefix, const char *shape,
                           const char *chunks, const char *dtype,
                           const char *fill, const char *codecs) {
  char buf[4096], rel[256];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":%s}},\"chunk_key_encoding\":{"
           "\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":%s,\"codecs\":%s}",
           shape, dtype, chunks, fill, codecs);
  snprintf(rel, sizeof rel, "%s/zarr.json", prefix);
  put_file(rel, buf, strlen(buf));
}

/* Fresh temp store directory. */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-shard-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  const char *g = "{\"zarr_format\":3,\"node_type\":\"group\"}";
  put_file("zarr.json", g, strlen(g));
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* Engine over tmpdir with a cache budget. */
static struct engine *open_engine(size_t cache) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &s, &err), 0);
  struct engine_config cfg = {cache, 1u << 30, 100000};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* Read a whole view in pieces of `step` bytes; NULL (and err) on failure. */
static char *read_view(struct engine *e, const char *path, size_t step,
                       uint64_t *size, struct zerr *err) {
  struct ns_entry ent;
  if (ns_resolve(e, path, &ent, err) < 0 || ns_size(e, &ent, size, err) < 0)
    return NULL;
  char *buf = malloc(*size + 1);
  ck_assert(buf != NULL);
  uint64_t off = 0;
  while (off < *size) {
    long n = ns_read_view(e, &ent, off, step, buf + off, NULL, err);
    if (n <= 0) {
      free(buf);
      return NULL;
    }
    off += (uint64_t)n;
  }
  buf[*size] = '\0';
  return buf;
}

/* ---- a 1-D string array: shape [110], shards of 40, inner chunks of 10.
 * Shard c/0: inner chunk 2 empty (fill), the others stored out of order;
 * shard c/1 missing; shard c/2 is an edge shard: inner chunks 8, 9, 10 in
 * bounds, 11 beyond the array (stored empty). Element i is "v<i>" plus
 * padding that grows with i, so lines differ in length. ---- */

#define S1_N 110
#define S1_SHARD 40
#define S1_INNER 10

/* Value of element i (NULL when it reads as the fill value). */
static const char *s1_value(int i, char *buf, size_t len) {
  if ((i >= 20 && i < 30) || (i >= 40 && i < 80))
    return NULL;
  snprintf(buf, len, "v%d-%.*s", i, i % 13, "abcdefghijklm");
  return buf;
}

/* Write the 1-D store under prefix (with an index checksum). */
static void make_s1(const char *prefix) {
  char codecs[1024];
  snprintf(codecs, sizeof codecs, SHARD_VLEN_CODECS, S1_INNER);
  put_array_meta(prefix, "[110]", "[40]", "string", "\"fill\"", codecs);
  for (int sh = 0; sh < 3; sh++) {
    if (sh == 1)
      continue; /* missing shard */
    struct tbuf b = {0};
    uint64_t offs[4], lens[4];
    /* Store inner chunks in reverse order: the index, not position,
     * says where each one is. */
    for (int c = 3; c >= 0; c--) {
      int base = sh * S1_SHARD + c * S1_INNER;
      if ((sh == 0 && c == 2) || base >= S1_N) {
        offs[c] = lens[c] = EMPTY;
        continue;
      }
      char store[S1_INNER][32], *vals[S1_INNER];
      for (int k = 0; k < S1_INNER; k++) {
        const char *v = s1_value(base + k, store[k], sizeof store[k]);
        vals[k] = v ? store[k] : (char *)"fill";
        if (base + k >= S1_N)
          vals[k] = (char *)"";
      }
      offs[c] = b.len;
      vlen_utf8(&b, vals, S1_INNER);
      lens[c] = b.len - offs[c];
    }
    shard_finish(&b, offs, lens, 4, 1);
    char rel[128];
    snprintf(rel, sizeof rel, "%s/c/%d", prefix, sh);
    put_file(rel, b.p, b.len);
    free(b.p);
  }
}

/* Expected text of elements [a, b). */
static char *s1_text(int a, int b) {
  size_t cap = 64 * (size_t)(b - a) + 1, len = 0;
  char *t = malloc(cap);
  ck_assert(t != NULL);
  for (int i = a; i < b; i++) {
    char v[32];
    const char *s = s1_value(i, v, sizeof v);
    len += (size_t)snprintf(t + len, cap - len, "%s\n", s ? s : "fill");
  }
  t[len] = '\0';
  return t;
}

/* The array view and every shard view equal the expected text, read in
 * several step sizes (offsets fall inside lines and inner chunks). */
START_TEST(shard_1d_views) {
  make_s1("a");
  struct engine *e = open_engine(64u << 20);
  size_t steps[] = {1, 7, 100, 4096};
  for (size_t k = 0; k < 4; k++) {
    struct zerr err = {0};
    uint64_t size;
    char *got = read_view(e, "a/values.txt", steps[k], &size, &err);
    ck_assert_msg(got != NULL, "values.txt: %s", err.msg);
    char *want = s1_text(0, S1_N);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
    got = read_view(e, "a/c/0.txt", steps[k], &size, &err);
    ck_assert_msg(got != NULL, "c/0.txt: %s", err.msg);
    want = s1_text(0, 40);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
    got = read_view(e, "a/c/2.txt", steps[k], &size, &err);
    ck_assert_msg(got != NULL, "c/2.txt: %s", err.msg);
    want = s1_text(80, S1_N);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
  }
  /* A missing shard has no view (no stored key). */
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "a/c/1.txt", &ent, &err), -ENOENT);
  engine_free(e);
}
END_TEST

/* Bytes the store has read so far. */
static uint64_t bytes_read(struct engine *e) {
  return atomic_load(&e->store->stats.bytes_read);
}

/* Size of a stored file under tmpdir. */
static uint64_t file_size(const char *rel) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
  ck_assert_int_eq(stat(path, &st), 0);
  return (uint64_t)st.st_size;
}

/* The partial-decoding promise: once sizes are known (stat), a read of one
 * inner chunk's lines reads the shard index and that inner chunk only,
 * even with a cache too small to keep anything. */
START_TEST(shard_read_touches_one_inner_chunk) {
  /* 16 inner chunks of 2,000 strings each (~30 KB an inner chunk). */
  enum { INNER = 2000, NIN = 16 };
  char codecs[1024];
  snprintf(codecs, sizeof codecs, SHARD_VLEN_CODECS, INNER);
  put_array_meta("big", "[32000]", "[32000]", "string", "\"\"", codecs);
  struct tbuf b = {0};
  uint64_t offs[NIN], lens[NIN];
  static char store[INNER][32];
  char *vals[INNER];
  for (int c = 0; c < NIN; c++) {
    for (int k = 0; k < INNER; k++) {
      snprintf(store[k], sizeof store[k], "row%06d-payload", c * INNER + k);
      vals[k] = store[k];
    }
    offs[c] = b.len;
    vlen_utf8(&b, vals, INNER);
    lens[c] = b.len - offs[c];
  }
  shard_finish(&b, offs, lens, NIN, 1);
  put_file("big/c/0", b.p, b.len);
  free(b.p);
  uint64_t shard = file_size("big/c/0"), index = NIN * 16 + 4;

  struct engine *e = open_engine(1); /* nothing stays in the cache */
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "big/c/0.txt", &ent, &err), 0);
  uint64_t size;
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, 32000 * 18u);
  /* Lines of inner chunk 9: rows 18000.. (18 bytes a line). */
  uint64_t before = bytes_read(e);
  char buf[200];
  long n = ns_read_view(e, &ent, 18000 * 18 + 4, sizeof buf, buf, NULL, &err);
  ck_assert_int_eq(n, sizeof buf);
  ck_assert(memcmp(buf, "18000-payload\nrow018001", 23) == 0);
  uint64_t got = bytes_read(e) - before;
  ck_assert_msg(got <= index + lens[9],
                "read %llu bytes; index %llu + inner chunk %llu (shard %llu)",
                (unsigned long long)got, (unsigned long long)index,
                (unsigned long long)lens[9], (unsigned long long)shard);
  ck_assert_uint_ge(got, lens[9]);

  /* The same through the array view. */
  ck_assert_int_eq(ns_resolve(e, "big/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  before = bytes_read(e);
  n = ns_read_view(e, &ent, 31999 * 18, 17, buf, NULL, &err);
  ck_assert_int_eq(n, 17);
  ck_assert(memcmp(buf, "row031999-payload", 17) == 0);
  got = bytes_read(e) - before;
  ck_assert_msg(got <= index + lens[15], "tail read %llu bytes",
                (unsigned long long)got);
  engine_free(e);
}
END_TEST

/* ---- 2-D uint16: shape [6, 9], shards [4, 6], inner chunks [2, 3];
 * element (r, c) = r*100 + c. Shard (0,0) has inner chunk (1,1) empty
 * (fill 7); shard (1,1) is missing; the edge shards hold inner chunks
 * beyond the array (stored as fill). ---- */

/* Expected value at (r, c). */
static unsigned s2_value(int r, int c) {
  if (r >= 2 && r < 4 && c >= 3 && c < 6)
    return 7; /* empty inner chunk of shard (0,0) */
  if (r >= 4 && c >= 6)
    return 7; /* missing shard (1,1) */
  return (unsigned)(r * 100 + c);
}

/* Write the 2-D store under prefix. */
static void make_s2(const char *prefix) {
  put_array_meta(prefix, "[6,9]", "[4,6]", "uint16", "7",
                 "[{\"name\":\"sharding_indexed\",\"configuration\":{"
                 "\"chunk_shape\":[2,3],\"codecs\":[{\"name\":\"bytes\","
                 "\"configuration\":{\"endian\":\"little\"}}],"
                 "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{"
                 "\"endian\":\"little\"}},{\"name\":\"crc32c\"}]}}]");
  for (int si = 0; si < 2; si++)
    for (int sj = 0; sj < 2; sj++) {
      if (si == 1 && sj == 1)
        continue;
      struct tbuf b = {0};
      uint64_t offs[4], lens[4];
      for (int c = 0; c < 4; c++) {
        int ir = c / 2, ic = c % 2;
        if (si == 0 && sj == 0 && ir == 1 && ic == 1) {
          offs[c] = lens[c] = EMPTY;
          continue;
        }
        offs[c] = b.len;
        for (int r = 0; r < 2; r++)
          for (int k = 0; k < 3; k++) {
            int R = si * 4 + ir * 2 + r, C = sj * 6 + ic * 3 + k;
            unsigned v = (R < 6 && C < 9) ? s2_value(R, C) : 7;
            uint8_t w[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
            tb_put(&b, w, 2);
          }
        lens[c] = b.len - offs[c];
      }
      shard_finish(&b, offs, lens, 4, 1);
      char rel[128];
      snprintf(rel, sizeof rel, "%s/c/%d/%d", prefix, si, sj);
      put_file(rel, b.p, b.len);
      free(b.p);
    }
}

/* Expected text of the box [r0,r1) x [c0,c1) in C order. */
static char *s2_text(int r0, int r1, int c0, int c1) {
  char *t = malloc(4096);
  size_t len = 0;
  for (int r = r0; r < r1; r++)
    for (int c = c0; c < c1; c++)
      len += (size_t)snprintf(t + len, 4096 - len, "%u\n", s2_value(r, c));
  t[len] = '\0';
  return t;
}

/* 2-D: the array view and each shard view in C order across inner chunks
 * (rows of a shard cross two inner chunks), an empty inner chunk, a
 * missing shard and edge shards. */
START_TEST(shard_2d_views) {
  make_s2("m");
  size_t caches[] = {1, 64u << 20};
  for (size_t ci = 0; ci < 2; ci++) {
    struct engine *e = open_engine(caches[ci]);
    size_t steps[] = {1, 5, 4096};
    for (size_t k = 0; k < 3; k++) {
      struct zerr err = {0};
      uint64_t size;
      char *got = read_view(e, "m/values.txt", steps[k], &size, &err);
      ck_assert_msg(got != NULL, "values.txt: %s", err.msg);
      char *want = s2_text(0, 6, 0, 9);
      ck_assert_str_eq(got, want);
      free(got);
      free(want);
      struct {
        const char *path;
        int r0, r1, c0, c1;
      } v[] = {{"m/c/0/0.txt", 0, 4, 0, 6},
               {"m/c/0/1.txt", 0, 4, 6, 9},
               {"m/c/1/0.txt", 4, 6, 0, 6}};
      for (size_t i = 0; i < 3; i++) {
        got = read_view(e, v[i].path, steps[k], &size, &err);
        ck_assert_msg(got != NULL, "%s: %s", v[i].path, err.msg);
        want = s2_text(v[i].r0, v[i].r1, v[i].c0, v[i].c1);
        ck_assert_str_eq(got, want);
        free(got);
        free(want);
      }
    }
    engine_free(e);
  }
}
END_TEST

/* Bad shards fail alone: a lying index entry, a wrong index checksum and
 * a shard shorter than its index give EIO on that shard's view (and on
 * the array view), while the other shards keep reading. */
START_TEST(shard_bad_input_fails_alone) {
  struct {
    const char *name, *why;
  } cases[] = {{"lying", "outside"},
               {"badcrc", "crc32c"},
               {"short", "shorter than"},
               {"inner_truncated", "inner chunk"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char prefix[64], rel[128];
    snprintf(prefix, sizeof prefix, "bad_%s", cases[i].name);
    make_s1(prefix);
    /* Damage shard c/2, leave c/0 intact. */
    snprintf(rel, sizeof rel, "%s/c/2", prefix);
    uint64_t sz = file_size(rel);
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
    FILE *f = fopen(path, "r+b");
    ck_assert(f != NULL);
    uint8_t *b = malloc(sz);
    ck_assert_uint_eq(fread(b, 1, sz, f), sz);
    size_t index = 4 * 16 + 4, at = sz - index;
    if (i == 0 || i == 3) {
      /* Inner chunk 0's entry: offset past the end, or a length that cuts
       * the vlen-utf8 chunk short; fix the checksum so only that lies. */
      if (i == 0)
        le64(b + at, sz + 100);
      else
        le64(b + at + 8, 10);
      le32(b + sz - 4, crc32c_bitwise(b + at, 64));
    } else if (i == 1) {
      b[sz - 1] ^= 0x5a;
    } else {
      rewind(f);
      ck_assert_int_eq(ftruncate(fileno(f), 0), 0);
      sz = 20;
    }
    rewind(f);
    ck_assert_uint_eq(fwrite(b, 1, sz, f), sz);
    fclose(f);
    free(b);

    struct engine *e = open_engine(64u << 20);
    struct zerr err = {0};
    uint64_t size;
    char p2[128];
    snprintf(p2, sizeof p2, "%s/c/2.txt", prefix);
    char *got = read_view(e, p2, 4096, &size, &err);
    ck_assert_msg(got == NULL, "%s: damaged shard read", cases[i].name);
    ck_assert_int_eq(err.code, EIO);
    ck_assert_msg(strstr(err.msg, cases[i].why), "%s: %s", cases[i].name,
                  err.msg);
    snprintf(p2, sizeof p2, "%s/values.txt", prefix);
    ck_assert(read_view(e, p2, 4096, &size, &err) == NULL);
    snprintf(p2, sizeof p2, "%s/c/0.txt", prefix);
    zerr_clear(&err);
    got = read_view(e, p2, 4096, &size, &err);
    ck_assert_msg(got != NULL, "%s: good shard: %s", cases[i].name, err.msg);
    char *want = s1_text(0, 40);
    ck_assert_str_eq(got, want);
    free(got);
    free(want);
    engine_free(e);
  }
}
END_TEST


/* Nested sharding: the outer shard's inner chunks are shards themselves
 * (decoded whole, as one unit each); values in C order. */
START_TEST(shard_nested) {
  put_array_meta(
      "n", "[40]", "[40]", "string", "\"\"",
      "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":"
      "[20],\"codecs\":[{\"name\":\"sharding_indexed\",\"configuration\":{"
      "\"chunk_shape\":[10],\"codecs\":[{\"name\":\"vlen-utf8\"}],"
      "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
      "\"little\"}}],\"index_location\":\"start\"}}],\"index_codecs\":[{"
      "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{"
      "\"name\":\"crc32c\"}]}}]");
  struct tbuf outer = {0};
  uint64_t ooffs[2], olens[2];
  for (int o = 0; o < 2; o++) {
    /* Inner shard, index at the start: 2 entries of 16 bytes, then data. */
    struct tbuf data = {0};
    uint64_t offs[2], lens[2];
    for (int c = 0; c < 2; c++) {
      char store[10][16], *vals[10];
      for (int k = 0; k < 10; k++) {
        snprintf(store[k], sizeof store[k], "n%d", o * 20 + c * 10 + k);
        vals[k] = store[k];
      }
      offs[c] = 32 + data.len;
      vlen_utf8(&data, vals, 10);
      lens[c] = 32 + data.len - offs[c];
    }
    ooffs[o] = outer.len;
    for (int c = 0; c < 2; c++) {
      uint8_t w[16];
      le64(w, offs[c]);
      le64(w + 8, lens[c]);
      tb_put(&outer, w, 16);
    }
    tb_put(&outer, data.p, data.len);
    olens[o] = outer.len - ooffs[o];
    free(data.p);
  }
  shard_finish(&outer, ooffs, olens, 2, 1);
  put_file("n/c/0", outer.p, outer.len);
  free(outer.p);
  struct engine *e = open_engine(64u << 20);
  struct zerr err = {0};
  uint64_t size;
  char *got = read_view(e, "n/values.txt", 3, &size, &err);
  ck_assert_msg(got != NULL, "%s", err.msg);
  char want[512];
  size_t len = 0;
  for (int i = 0; i < 40; i++)
    len += (size_t)snprintf(want + len, sizeof want - len, "n%d\n", i);
  ck_assert_str_eq(got, want);
  free(got);
  engine_free(e);
}
END_TEST

/* Suite. */
static Suite *shard_suite(void) {
  Suite *s = suite_create("shard");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, shard_1d_views);
  tcase_add_test(tc, shard_read_touches_one_inner_chunk);
  tcase_add_test(tc, shard_2d_views);
  tcase_add_test(tc, shard_bad_input_fails_alone);
  tcase_add_test(tc, shard_nested);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(shard_suite());
}
