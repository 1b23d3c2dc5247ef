/* check_window.c - units larger than the cache read in windows, and the
 * watchdog of requests in flight, driven without a mount: a zarrs.vlen
 * chunk of 200,000 strings whose offsets alone would take more than a
 * quarter of a 1 MiB cache is read exactly, in sequence and at random
 * offsets, without ever being decoded whole (no unit fill), with plain
 * element bytes and behind zstd or gzip (the element bytes streamed once
 * per reader; a stream cut short reads right up to the cut and then fails
 * naming the chunk); the same strings in vlen-utf8 (no index) behind zstd,
 * as a chunk and as the inner chunk of a shard, and behind gzip, read
 * exactly in order, at random and backwards without a whole decode, and
 * failing with EIO naming the chunk when cut short; such a chunk the cache
 * decodes whole sized from its zstd frame's content size, a claim its
 * decode checks (trailing bytes: too large, put right); a request running
 * longer than the engine's threshold is flagged once and counts the units
 * decoded for it. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../../../src/util/log.h"
#include "../../../src/util/logonce.h"
#include "../teststore.h"
#include "../testutil.h"
#include "viewread.h"

static char tmpdir[64];

/* Strings of the chunk. */
#define WN 200000

/* Little-endian u64. */
static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

/* The array's zarr.json: one chunk of WN strings, data codecs `data`. */
static void put_meta(const char *name, const char *data) {
  char buf[1024], rel[64];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":\"\",\"codecs\":[{\"name\":\"zarrs.vlen\","
           "\"configuration\":{\"index_codecs\":[{\"name\":\"bytes\","
           "\"configuration\":{\"endian\":\"little\"}}],\"data_codecs\":%s,"
           "\"index_data_type\":\"uint64\",\"index_location\":\"start\"}}]}",
           WN, WN, data);
  snprintf(rel, sizeof rel, "%s/zarr.json", name);
  ts_put_file(tmpdir, rel, buf, strlen(buf));
}

/* Write array `name` (codec 0: data plain, 1: zstd, 2: gzip) and return its
 * expected text (caller frees) and length. Element i: 0 to 30 bytes, some with
 * a newline (shown as a space). */
static char *put_array(const char *name, int codec, size_t *tlen) {
  size_t L = 8 * ((size_t)WN + 1), cap = 8 + L + (size_t)WN * 31;
  uint8_t *chunk = malloc(cap);
  char *data = malloc((size_t)WN * 31), *text = malloc((size_t)WN * 32);
  ck_assert(chunk && data && text);
  size_t dl = 0, tl = 0;
  le64(chunk, L);
  for (size_t i = 0; i < WN; i++) {
    le64(chunk + 8 + 8 * i, dl);
    size_t l = (i * 7919) % 31;
    for (size_t c = 0; c < l; c++) {
      char ch = (c + i) % 13 == 5 ? '\n' : (char)('a' + (c * 5 + i) % 26);
      data[dl + c] = ch;
      text[tl + c] = ch == '\n' ? ' ' : ch;
    }
    dl += l;
    tl += l;
    text[tl++] = '\n';
  }
  le64(chunk + 8 + 8 * (size_t)WN, dl);
  size_t len = 8 + L;
  if (codec == 2) { /* gzip (here a zlib stream, which gzip accepts) */
    uLongf zl = (uLongf)(cap - len);
    ck_assert_int_eq(compress2(chunk + len, &zl, (const Bytef *)data, dl, 6),
                     Z_OK);
    len += zl;
    put_meta(name, "[{\"name\":\"bytes\"},{\"name\":\"gzip\"}]");
  } else if (codec == 1) {
    size_t zl = ZSTD_compress(chunk + len, cap - len, data, dl, 3);
    ck_assert(!ZSTD_isError(zl));
    len += zl;
    put_meta(name, "[{\"name\":\"bytes\"},{\"name\":\"zstd\"}]");
  } else {
    memcpy(chunk + len, data, dl);
    len += dl;
    put_meta(name, "[{\"name\":\"bytes\"}]");
  }
  char rel[64];
  snprintf(rel, sizeof rel, "%s/c/0", name);
  ts_put_file(tmpdir, rel, chunk, len);
  free(chunk);
  free(data);
  *tlen = tl;
  return text;
}

/* Fresh temp store directory. */
static void setup(void) { ts_new_v3_group(tmpdir, sizeof tmpdir, "window"); }

/* Remove the temp store. */
static void teardown(void) { testutil_rmtree(tmpdir); }

/* An engine over tmpdir with a 1 MiB cache. */
static struct engine *open_engine(void) {
  struct engine_config cfg = {1u << 20, 1u << 30, 1000};
  return ts_engine(tmpdir, &cfg);
}

START_TEST(plain_bytes_never_decoded_whole) {
  size_t wlen;
  char *want = put_array("p", 0, &wlen);
  struct engine *e = open_engine();
  vr_read_seq(e, "/p/values.txt", 131072, want, wlen);
  vr_read_seq(e, "/p/c/0.txt", 4093, want, wlen);
  vr_read_random(e, "/p/values.txt", want, wlen, 5000);
  /* Offsets and bytes read where they lie: no unit, no data section. */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_DATA), 0);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(zstd_bytes_decoded_once_per_reader) {
  size_t wlen;
  char *want = put_array("z", 1, &wlen);
  struct engine *e = open_engine();
  vr_read_seq(e, "/z/values.txt", 131072, want, wlen);
  /* The element bytes (more than the cache) decoded once for the reader,
   * kept by its cursor; the offsets never loaded whole. */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_DATA), 1);
  vr_read_seq(e, "/z/c/0.txt", 4093, want, wlen);
  vr_read_random(e, "/z/values.txt", want, wlen, 5000);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(gzip_bytes_streamed) {
  size_t wlen;
  char *want = put_array("g", 2, &wlen);
  struct engine *e = open_engine();
  vr_read_seq(e, "/g/values.txt", 131072, want, wlen);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_DATA), 1);
  vr_read_seq(e, "/g/c/0.txt", 65536, want, wlen);
  vr_read_random(e, "/g/values.txt", want, wlen, 5000);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(zstd_cut_short_fails_naming_the_chunk) {
  size_t wlen;
  char *want = put_array("t", 1, &wlen);
  /* Cut the compressed element bytes short (their last block). */
  char path[128];
  snprintf(path, sizeof path, "%s/t/c/0", tmpdir);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(truncate(path, st.st_size - 8), 0);
  struct engine *e = open_engine();
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/t/values.txt", &ent, &err), 0);
  struct view_cursor *c = view_cursor_new();
  char buf[65536];
  /* The element bytes are streamed: what lies before the cut reads right. */
  long n = ns_read_view(e, &ent, 0, sizeof buf, buf, c, &err);
  ck_assert_msg(n == (long)sizeof buf, "%ld: %s", n, err.msg);
  ck_assert(!memcmp(buf, want, sizeof buf));
  /* The end fails, naming the chunk and the codec, and never reads
   * bytes from elsewhere. */
  for (int i = 0; i < 2; i++) {
    zerr_clear(&err);
    memset(buf, 0, sizeof buf);
    n = ns_read_view(e, &ent, wlen - 4096, 4096, buf, i ? NULL : c, &err);
    ck_assert_int_eq(n, -EIO);
    ck_assert_msg(strstr(err.msg, "t/c/0") && strstr(err.msg, "zstd"), "%s",
                  err.msg);
  }
  view_cursor_free(e, c);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

/* Write array `name` of WN strings in vlen-utf8 behind zstd (gzip when
 * gz), as one chunk, or (shard 1) as the one inner chunk of a shard, or
 * (shard 2) as the first of two inner chunks of a shard (the second empty:
 * WN fill strings), with its compressed bytes cut short by `cut` bytes and
 * `pad` zero bytes after the last element (ignored, as numcodecs does);
 * return the expected text (caller frees) and its length. The strings are
 * put_array's, but for every 40,000th (from element 39,999), `big` bytes
 * long when big is not 0. */
static char *put_utf8(const char *name, int shard, int gz, size_t cut,
                      size_t pad, size_t big, size_t *tlen) {
  size_t cap = 4 + (size_t)WN * 35 + 5 * big;
  uint8_t *raw = malloc(cap), *z = malloc(ZSTD_compressBound(cap) + 32);
  char *text = malloc((size_t)WN * 33 + 5 * big);
  ck_assert(raw && z && text);
  size_t rl = 4, tl = 0;
  for (int b = 0; b < 4; b++)
    raw[b] = (uint8_t)((uint32_t)WN >> (8 * b));
  for (size_t i = 0; i < WN; i++) {
    size_t l = big && i % 40000 == 39999 ? big : (i * 7919) % 31;
    for (int b = 0; b < 4; b++)
      raw[rl + b] = (uint8_t)(l >> (8 * b));
    rl += 4;
    for (size_t c = 0; c < l; c++) {
      char ch = (c + i) % 13 == 5 ? '\n' : (char)('a' + (c * 5 + i) % 26);
      raw[rl++] = (uint8_t)ch;
      text[tl++] = ch == '\n' ? ' ' : ch;
    }
    text[tl++] = '\n';
  }
  memset(raw + rl, 0, pad);
  rl += pad;
  size_t zl;
  if (gz) { /* a zlib stream, which gzip accepts */
    uLongf gl = (uLongf)ZSTD_compressBound(cap);
    ck_assert_int_eq(compress2(z, &gl, raw, rl, 6), Z_OK);
    zl = gl;
  } else {
    zl = ZSTD_compress(z, ZSTD_compressBound(cap), raw, rl, 3);
    ck_assert(!ZSTD_isError(zl));
  }
  ck_assert(zl > cut);
  zl -= cut;
  const char *inner = gz ? "[{\"name\":\"vlen-utf8\"},{\"name\":\"gzip\"}]"
                         : "[{\"name\":\"vlen-utf8\"},{\"name\":\"zstd\"}]";
  char codecs[512], buf[1024], rel[64];
  if (shard) { /* the index after the inner chunk: offset 0, zl bytes */
    snprintf(codecs, sizeof codecs,
             "[{\"name\":\"sharding_indexed\",\"configuration\":{"
             "\"chunk_shape\":[%d],\"codecs\":%s,\"index_codecs\":[{\"name\":"
             "\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
             "\"index_location\":\"end\"}}]",
             WN, inner);
    le64(z + zl, 0);
    le64(z + zl + 8, zl);
    if (shard == 2) { /* the second inner chunk: empty */
      le64(z + zl + 16, UINT64_MAX);
      le64(z + zl + 24, UINT64_MAX);
      memset(text + tl, '\n', WN);
      tl += WN;
    }
  } else
    snprintf(codecs, sizeof codecs, "%s", inner);
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":\"\",\"codecs\":%s}",
           WN * (shard == 2 ? 2 : 1), WN * (shard == 2 ? 2 : 1), codecs);
  snprintf(rel, sizeof rel, "%s/zarr.json", name);
  ts_put_file(tmpdir, rel, buf, strlen(buf));
  snprintf(rel, sizeof rel, "%s/c/0", name);
  ts_put_file(tmpdir, rel, z, zl + 16 * (size_t)shard);
  free(raw);
  free(z);
  *tlen = tl;
  return text;
}

/* Read view `path` from its end backwards in pieces of step bytes
 * through one cursor and compare with want. */
static void read_back(struct engine *e, const char *path, size_t step,
                      const char *want, size_t wlen) {
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
  char *buf = malloc(step);
  struct view_cursor *c = view_cursor_new();
  for (uint64_t end = wlen; end > 0;) {
    uint64_t off = end > step ? end - step : 0;
    long n = ns_read_view(e, &ent, off, (size_t)(end - off), buf, c, &err);
    ck_assert_msg(n == (long)(end - off), "%s at %llu: %s", path,
                  (unsigned long long)off, err.msg);
    ck_assert_msg(!memcmp(buf, want + off, (size_t)n), "%s at %llu differs",
                  path, (unsigned long long)off);
    end = off;
  }
  view_cursor_free(e, c);
  free(buf);
}

START_TEST(utf8_streamed_in_order) {
  /* zstd as a chunk, zstd in a shard, gzip as a chunk */
  for (int v = 0; v < 3; v++) {
    size_t wlen;
    const char *name = v == 0 ? "uc" : v == 1 ? "us" : "ug";
    char *want = put_utf8(name, v == 1, v == 2, 0, 0, 0, &wlen), path[64];
    struct engine *e = open_engine();
    snprintf(path, sizeof path, "/%s/values.txt", name);
    vr_read_seq(e, path, 131072, want, wlen);
    /* Parsed as the stream advanced: never decoded whole. */
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_DATA), 1);
    vr_read_seq(e, path, 4093, want, wlen);
    vr_read_random(e, path, want, wlen, 5000);
    read_back(e, path, 65536, want, wlen);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
    ck_assert_uint_eq(memo_pinned(e->memo), 0);
    engine_free(e);
    free(want);
  }
}
END_TEST

/* Strings longer than a read's buffer and than a block of the stream
 * (100 KB, every 40,000th) among short ones, read in windows: the short
 * ones gathered a block at a time, the long ones alone, in order, at
 * random and backwards. */
START_TEST(utf8_streamed_long_strings) {
  size_t wlen;
  char *want = put_utf8("ul", 0, 0, 0, 0, 100003, &wlen);
  struct engine *e = open_engine();
  vr_read_seq(e, "/ul/values.txt", 131072, want, wlen);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0); /* in windows */
  vr_read_seq(e, "/ul/values.txt", 4093, want, wlen);
  vr_read_random(e, "/ul/values.txt", want, wlen, 300000);
  read_back(e, "/ul/values.txt", 65536, want, wlen);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

/* An inner chunk of a shard holding more than one is streamed too: its
 * element count is the inner chunk's, not the shard's. */
START_TEST(utf8_streamed_inner_chunk_of_two) {
  size_t wlen;
  char *want = put_utf8("u2", 2, 0, 0, 0, 0, &wlen);
  struct engine *e = open_engine();
  vr_read_seq(e, "/u2/values.txt", 131072, want, wlen);
  ck_assert_uint_ge(engine_fills(e, ELEVEL_DATA), 1); /* streamed */
  read_back(e, "/u2/values.txt", 65536, want, wlen);
  vr_read_random(e, "/u2/values.txt", want, wlen, 5000);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

START_TEST(utf8_zstd_cut_short_fails_naming_the_chunk) {
  size_t wlen;
  char *want = put_utf8("ut", 1, 0, 8, 0, 0, &wlen);
  struct engine *e = open_engine();
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/ut/values.txt", &ent, &err), 0);
  struct view_cursor *c = view_cursor_new();
  char buf[4096];
  /* The size pass reaches the cut: no exact size, no text. */
  long n = ns_read_view(e, &ent, 0, sizeof buf, buf, c, &err);
  ck_assert_int_eq(n, -EIO);
  ck_assert_msg(strstr(err.msg, "ut/c/0") && strstr(err.msg, "zstd"), "%s",
                err.msg);
  /* The size pass's error is the unit's: no whole decode is tried (it
   * could hold up to max_decoded to say the same). */
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  view_cursor_free(e, c);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(want);
}
END_TEST

/* A vlen-utf8 + zstd chunk the cache decodes whole: its text size is
 * claimed from the frame's content size, with no decode (a first `stat`
 * costs a frame header, and the `cat` after it decodes the chunk once);
 * the decode checks the claim. Trailing bytes after the last element
 * (which the format ignores) make the claim too large: the text read is
 * still exact, ends where the truth does, and the size is put right. */
START_TEST(utf8_size_claimed_from_the_frame) {
  struct engine_config cfg = {64u << 20, 1u << 30, 1000};
  for (size_t pad = 0; pad <= 4; pad += 4) {
    size_t wlen;
    char *want = put_utf8(pad ? "up" : "uf", 0, 0, 0, pad, 0, &wlen);
    const char *path = pad ? "/up/values.txt" : "/uf/values.txt";
    struct engine *e = ts_engine(tmpdir, &cfg);
    struct ns_entry ent;
    struct zerr err = {0};
    uint64_t size;
    ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
    ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(size, wlen + pad); /* the claim */
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
    char *buf = malloc(wlen + pad + 65536);
    struct view_cursor *c = view_cursor_new();
    uint64_t got = 0;
    for (long n;
         (n = ns_read_view(e, &ent, got, 65536, buf + got, c, &err)) > 0;)
      got += (uint64_t)n;
    ck_assert_msg(got == wlen && !memcmp(buf, want, wlen), "%s: %llu of %zu",
                  path, (unsigned long long)got, wlen);
    ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 1);
    ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
    ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
    ck_assert_uint_eq(size, wlen); /* the truth */
    view_cursor_free(e, c);
    vr_read_random(e, path, want, wlen, 5000);
    ck_assert_uint_eq(memo_pinned(e->memo), 0);
    engine_free(e);
    free(buf);
    free(want);
  }
}
END_TEST

/* Lines logged that name a chunk (the test's sink). */
struct named {
  const char *key;
  int lines;
};

/* The sink: count the lines naming the key. */
static void named_sink(void *ud, enum zlog_level lvl, const char *line) {
  (void)lvl;
  struct named *c = ud;
  c->lines += strstr(line, c->key) != NULL;
}

/* Strings in vlen-utf8 behind zstd, decoded whole by the cache (their
 * text made over the chunk's records), three chunks of 1,000 of which
 * chunk 1's element 500 has a length that runs past the chunk: chunk 0
 * reads exactly, the read that reaches chunk 1 fails with EIO naming it
 * (one log line), and what lies before it still reads. */
START_TEST(utf8_records_bad_chunk_closes_only_itself) {
  enum { C = 1000 };
  char *text[3];
  size_t tlen[3];
  for (int ch = 0; ch < 3; ch++) {
    uint8_t raw[4 + C * 24];
    text[ch] = malloc(C * 21);
    size_t rl = 4, tl = 0;
    for (int b = 0; b < 4; b++)
      raw[b] = (uint8_t)((uint32_t)C >> (8 * b));
    for (int i = 0; i < C; i++) {
      char s[24];
      int l = snprintf(s, sizeof s, "s%d-%d%s", ch, i, i % 3 ? "" : "\n\xff");
      uint32_t len = ch == 1 && i == 500 ? 1u << 20 : (uint32_t)l;
      for (int b = 0; b < 4; b++)
        raw[rl + b] = (uint8_t)(len >> (8 * b));
      memcpy(raw + rl + 4, s, (size_t)l);
      rl += 4 + (size_t)l;
      for (int k = 0; k < l; k++)
        text[ch][tl++] = s[k] == '\n' ? ' ' : s[k] == '\xff' ? '?' : s[k];
      text[ch][tl++] = '\n';
    }
    tlen[ch] = tl;
    uint8_t z[sizeof raw + 1024];
    size_t zl = ZSTD_compress(z, sizeof z, raw, rl, 3);
    ck_assert(!ZSTD_isError(zl));
    char rel[64];
    snprintf(rel, sizeof rel, "ub/c/%d", ch);
    ts_put_file(tmpdir, rel, z, zl);
  }
  char buf[1024];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
           "\"fill_value\":\"\",\"codecs\":[{\"name\":\"vlen-utf8\"},"
           "{\"name\":\"zstd\"}]}",
           3 * C, C);
  ts_put_file(tmpdir, "ub/zarr.json", buf, strlen(buf));
  struct engine_config cfg = {64u << 20, 1u << 30, 1000};
  struct engine *e = ts_engine(tmpdir, &cfg);
  struct named log = {"ub/c/1", 0};
  logonce_set_sink(e->log, named_sink, &log);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/ub/values.txt", &ent, &err), 0);
  char *got = malloc(tlen[0] + 4096);
  struct view_cursor *c = view_cursor_new();
  uint64_t at = 0;
  long n;
  /* (a read across the end of chunk 0 fails whole: a short read would
   * tell the kernel the file ends there) */
  while (
      at < tlen[0] &&
      (n = ns_read_view(e, &ent, at, tlen[0] - at < 4096 ? tlen[0] - at : 4096,
                        got + at, c, &err)) > 0)
    at += (uint64_t)n;
  ck_assert_msg(at >= tlen[0], "%llu: %s", (unsigned long long)at, err.msg);
  ck_assert(!memcmp(got, text[0], tlen[0]));
  /* the read that reaches chunk 1 */
  n = ns_read_view(e, &ent, tlen[0], 4096, got, c, &err);
  ck_assert_int_eq(n, -EIO);
  ck_assert_msg(strstr(err.msg, "ub/c/1") && strstr(err.msg, "element 500"),
                "%s", err.msg);
  ck_assert_int_eq(log.lines, 1);
  view_cursor_free(e, c);
  /* the view still serves what lies before the bad chunk */
  n = ns_read_view(e, &ent, tlen[0] - 100, 100, got, NULL, &err);
  ck_assert_msg(n == 100, "%ld: %s", n, err.msg);
  ck_assert(!memcmp(got, text[0] + tlen[0] - 100, 100));
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  free(got);
  for (int ch = 0; ch < 3; ch++)
    free(text[ch]);
}
END_TEST

/* Wait (up to 5 s, in steps) until e has done `n` idle trims; the count. */
static uint64_t trims_reach(struct engine *e, uint64_t n) {
  for (int i = 0; i < 50 && atomic_load(&e->trims) < n; i++) {
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return atomic_load(&e->trims);
}

/* Memory goes back to the system when the daemon is idle: once no request
 * is in flight for idle_trim_ns, the watchdog trims malloc's heaps, once
 * per idle spell, never while a request runs. */
START_TEST(idle_trim_once_per_spell) {
  struct engine *e = open_engine();
  pthread_mutex_lock(&e->reqs_lock);
  e->idle_trim_ns = 1;
  pthread_mutex_unlock(&e->reqs_lock);
  struct engine_req r;
  engine_req_begin(e, &r, "a/values.txt", 0, 4096); /* starts the watchdog */
  struct timespec ts = {1, 500 * 1000 * 1000}; /* a watchdog pass or more */
  nanosleep(&ts, NULL);
  ck_assert_uint_eq(atomic_load(&e->trims), 0); /* busy: none */
  engine_req_end(e, &r);
  ck_assert_uint_eq(trims_reach(e, 1), 1);
  nanosleep(&ts, NULL);
  ck_assert_uint_eq(atomic_load(&e->trims), 1); /* the same spell: once */
  engine_req_begin(e, &r, "a/values.txt", 0, 4096);
  engine_req_end(e, &r);
  ck_assert_uint_eq(trims_reach(e, 2), 2); /* a new spell */
  engine_free(e);
}
END_TEST

START_TEST(slow_request_flagged_once) {
  struct engine *e = open_engine();
  pthread_mutex_lock(&e->reqs_lock); /* the watchdog reads it */
  e->slow_ns = 1;                    /* every request is slow */
  pthread_mutex_unlock(&e->reqs_lock);
  struct engine_req r, quick;
  engine_req_begin(e, &r, "a/values.txt", 0, 4096);
  engine_req_note_unit();
  engine_req_note_unit();
  engine_req_end(e, &r);
  ck_assert_uint_eq(atomic_load(&r.units), 2);
  engine_req_begin(e, &r, "a/values.txt", 0, 4096);
  int logged = 0;
  for (int i = 0; i < 40 && !logged; i++) { /* the watchdog wakes each 1 s */
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&e->reqs_lock);
    logged = r.logged;
    pthread_mutex_unlock(&e->reqs_lock);
  }
  ck_assert_int_eq(logged, 1);
  engine_req_end(e, &r);
  /* Out of the table: nothing notes to it any more. */
  engine_req_note_unit();
  ck_assert_uint_eq(atomic_load(&r.units), 0);
  pthread_mutex_lock(&e->reqs_lock);
  e->slow_ns = ENGINE_SLOW_REQUEST_NS;
  pthread_mutex_unlock(&e->reqs_lock);
  engine_req_begin(e, &quick, "b", 0, 1);
  engine_req_end(e, &quick);
  ck_assert_int_eq(quick.logged, 0);
  engine_free(e); /* joins the watchdog */
}
END_TEST

/* The suite. */
static Suite *window_suite(void) {
  Suite *s = suite_create("window");
  TCase *tc = tcase_create("window");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, plain_bytes_never_decoded_whole);
  tcase_add_test(tc, zstd_bytes_decoded_once_per_reader);
  tcase_add_test(tc, gzip_bytes_streamed);
  tcase_add_test(tc, zstd_cut_short_fails_naming_the_chunk);
  tcase_add_test(tc, utf8_streamed_in_order);
  tcase_add_test(tc, utf8_streamed_inner_chunk_of_two);
  tcase_add_test(tc, utf8_streamed_long_strings);
  tcase_add_test(tc, utf8_zstd_cut_short_fails_naming_the_chunk);
  tcase_add_test(tc, utf8_size_claimed_from_the_frame);
  tcase_add_test(tc, utf8_records_bad_chunk_closes_only_itself);
  tcase_add_test(tc, slow_request_flagged_once);
  tcase_add_test(tc, idle_trim_once_per_spell);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  zlog_setup(0, ZLOG_ERR); /* the watchdog's info line is not news here */
  SRunner *sr = srunner_create(window_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
