/* check_zstream.c - a bytes->bytes codec's output read as a stream in a
 * sliding window (codecs/dstream.c): zstd (several frames) and gzip
 * (several members), over input in memory and in a file, read in order,
 * with overlapping and reordered reads, far ahead, and backwards (a
 * restart); corrupt, truncated, short and long streams fail with the
 * codec's name and never give bytes the stream does not hold; through a
 * zarrs.vlen chunk's partial decoder (chain_partial_stream); the element
 * bytes a vlen-utf8 chunk's zstd frame header states (chain_elems_stated),
 * and none where it states no size; reads that stop where a stream of
 * unknown size ends (dstream_read_upto). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "codecs/chain.h"
#include "codecs/dstream.h"

/* Decoded bytes of the test streams: more than the window holds. */
#define ZN ((size_t)9 << 20)

static uint8_t *plain; /* ZN bytes, compressible but not constant */

/* Fill plain once. */
static void make_plain(void) {
  if (plain)
    return;
  plain = malloc(ZN);
  ck_assert(plain);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < ZN; i++) {
    if (i % 64 == 0) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
    }
    plain[i] = (uint8_t)('a' + (x >> (i % 64 / 8 * 8)) % 26);
  }
}

/* plain [0, n) as zstd frames of `per` decoded bytes each; *len set. */
static uint8_t *zstd_frames(size_t n, size_t per, size_t *len) {
  size_t cap = ZSTD_compressBound(n) + 64 * (n / per + 1), at = 0;
  uint8_t *z = malloc(cap);
  ck_assert(z);
  for (size_t o = 0; o < n; o += per) {
    size_t k = n - o < per ? n - o : per;
    size_t r = ZSTD_compress(z + at, cap - at, plain + o, k, 3);
    ck_assert(!ZSTD_isError(r));
    at += r;
  }
  *len = at;
  return z;
}

/* plain [0, n) as gzip members of `per` decoded bytes each. */
static uint8_t *gzip_members(size_t n, size_t per, size_t *len) {
  size_t cap = n + n / 100 + 4096 * (n / per + 1), at = 0;
  uint8_t *z = malloc(cap);
  ck_assert(z);
  for (size_t o = 0; o < n; o += per) {
    size_t k = n - o < per ? n - o : per;
    z_stream zs = {0};
    ck_assert_int_eq(
        deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = plain + o;
    zs.avail_in = (uInt)k;
    zs.next_out = z + at;
    zs.avail_out = (uInt)(cap - at);
    ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    at += zs.total_out;
    deflateEnd(&zs);
  }
  *len = at;
  return z;
}

static const struct codec_env env = {(size_t)1 << 30, NULL, 0};

/* Read [off, off+len) of s and compare with plain. */
static void expect(struct bytesrc *s, uint64_t off, size_t len) {
  uint8_t *b = malloc(len ? len : 1);
  struct zerr err = {0};
  ck_assert(b);
  ck_assert_msg(bytesrc_read_range(s, off, len, b, &err) == 0, "at %llu: %s",
                (unsigned long long)off, err.msg);
  ck_assert_msg(!memcmp(b, plain + off, len), "bytes at %llu differ",
                (unsigned long long)off);
  free(b);
}

/* A read that must fail with -EIO naming `name`. */
static void expect_fail(struct bytesrc *s, uint64_t off, size_t len,
                        const char *name) {
  uint8_t *b = malloc(len);
  struct zerr err = {0};
  ck_assert(b);
  int rc = bytesrc_read_range(s, off, len, b, &err);
  ck_assert_msg(rc == -EIO, "at %llu: rc %d", (unsigned long long)off, rc);
  ck_assert_msg(strstr(err.msg, name) != NULL, "message: %s", err.msg);
  free(b);
}

/* The read patterns, on a stream of ZN bytes. */
static void patterns(struct bytesrc *s) {
  ck_assert_uint_eq(s->size, ZN);
  /* in order, in kernel-sized reads: no restart, each byte decoded once */
  for (uint64_t off = 0; off < ZN; off += 131072)
    expect(s, off, ZN - off < 131072 ? ZN - off : 131072);
  ck_assert_uint_eq(dstream_restarts(s), 0);
  ck_assert_uint_eq(dstream_decoded(s), ZN);
  /* backwards: from the start again */
  expect(s, 1000, 5000);
  ck_assert_uint_eq(dstream_restarts(s), 1);
  /* reordered and overlapping reads (read-ahead) inside the back window */
  expect(s, 3 << 20, 131072);
  expect(s, (3 << 20) - 131072, 131072);
  expect(s, (3 << 20) - 65536, 262144);
  expect(s, (3 << 20) + 131072, 131072);
  expect(s, (3 << 20) - DSTREAM_BACK + 1, 4096);
  ck_assert_uint_eq(dstream_restarts(s), 1);
  /* far ahead, a read larger than the window, then the end */
  expect(s, 5 << 20, 100);
  expect(s, (5 << 20) + 200, DSTREAM_BACK + DSTREAM_AHEAD + 12345);
  expect(s, ZN - 10, 10);
  ck_assert_uint_eq(dstream_restarts(s), 1);
  /* past the end of the window: restart */
  expect(s, 0, 1);
  ck_assert_uint_eq(dstream_restarts(s), 2);
  ck_assert(dstream_cost(s) >= DSTREAM_BACK + DSTREAM_AHEAD);
}

START_TEST(zstd_frames_in_memory_and_file) {
  make_plain();
  size_t zl;
  uint8_t *z = zstd_frames(ZN, 3 << 20, &zl);
  struct zerr err = {0};
  struct bytesrc *in = bytesrc_from_static(z, zl), *s;
  ck_assert_int_eq(dstream_open(&dstream_zstd, in, ZN, &env, &s, &err), 0);
  ck_assert(dstream_is(s) && !s->mem);
  patterns(s);
  bytesrc_unref(s);
  bytesrc_unref(in);
  /* the input in a file: read a slice at a time */
  char path[] = "/tmp/zarrfs-zstream-XXXXXX";
  int fd = mkstemp(path);
  ck_assert(fd >= 0);
  ck_assert(write(fd, z, zl) == (ssize_t)zl);
  close(fd);
  ck_assert_int_eq(bytesrc_open_file(path, NULL, &in, &err), 0);
  ck_assert_int_eq(dstream_open(&dstream_zstd, in, ZN, &env, &s, &err), 0);
  bytesrc_unref(in); /* the stream holds its own */
  patterns(s);
  bytesrc_unref(s);
  unlink(path);
  free(z);
}
END_TEST

START_TEST(gzip_several_members) {
  make_plain();
  size_t zl;
  uint8_t *z = gzip_members(ZN, 4 << 20, &zl);
  struct zerr err = {0};
  struct bytesrc *in = bytesrc_from_static(z, zl), *s;
  ck_assert_int_eq(dstream_open(&dstream_gzip, in, ZN, &env, &s, &err), 0);
  patterns(s);
  bytesrc_unref(s);
  bytesrc_unref(in);
  free(z);
}
END_TEST

/* Open kind over z[0, zl) claiming `size` decoded bytes. */
static struct bytesrc *open_over(const struct dstream_kind *kind,
                                 const uint8_t *z, size_t zl, uint64_t size,
                                 struct bytesrc **in) {
  struct zerr err = {0};
  struct bytesrc *s;
  *in = bytesrc_from_static(z, zl);
  ck_assert_int_eq(dstream_open(kind, *in, size, &env, &s, &err), 0);
  return s;
}

START_TEST(bad_streams_fail) {
  make_plain();
  const struct dstream_kind *kinds[] = {&dstream_zstd, &dstream_gzip};
  const char *names[] = {"zstd", "gzip"};
  for (int k = 0; k < 2; k++) {
    size_t zl;
    uint8_t *z = k ? gzip_members(ZN, ZN, &zl) : zstd_frames(ZN, ZN, &zl);
    struct bytesrc *in, *s;
    /* truncated: the bytes before the cut are right, the end fails */
    s = open_over(kinds[k], z, zl / 2, ZN, &in);
    expect(s, 0, 65536);
    expect_fail(s, ZN - 4096, 4096, names[k]);
    expect_fail(s, ZN - 4096, 4096, names[k]); /* and again, restarted */
    expect(s, 0, 10);
    bytesrc_unref(s);
    bytesrc_unref(in);
    /* truncated, its size unknown: the message says where it stopped and
     * no size */
    s = open_over(kinds[k], z, zl / 2, UINT64_MAX, &in);
    {
      uint8_t b[4096];
      struct zerr err = {0};
      ck_assert_int_eq(bytesrc_read_range(s, ZN - 4096, 4096, b, &err), -EIO);
      ck_assert_msg(strstr(err.msg, "decoded bytes") != NULL &&
                        strstr(err.msg, "18446744073709551615") == NULL,
                    "message: %s", err.msg);
    }
    bytesrc_unref(s);
    bytesrc_unref(in);
    /* shorter than its size says */
    s = open_over(kinds[k], z, zl, ZN + 1, &in);
    expect_fail(s, ZN - 100, 101, names[k]);
    bytesrc_unref(s);
    bytesrc_unref(in);
    /* longer than its size says: found at the end */
    s = open_over(kinds[k], z, zl, ZN - 1, &in);
    expect(s, 0, 4096);
    expect_fail(s, ZN - 101, 100, names[k]);
    bytesrc_unref(s);
    bytesrc_unref(in);
    /* a corrupt header, and trailing garbage after the last frame */
    uint8_t *bad = malloc(zl + 8);
    memcpy(bad, z, zl);
    bad[0] ^= 0x5a;
    s = open_over(kinds[k], bad, zl, ZN, &in);
    expect_fail(s, 0, 100, names[k]);
    bytesrc_unref(s);
    bytesrc_unref(in);
    memcpy(bad, z, zl);
    memcpy(bad + zl, "garbage!", 8);
    s = open_over(kinds[k], bad, zl + 8, ZN, &in);
    expect(s, 0, 100);
    expect_fail(s, ZN - 100, 100, names[k]);
    bytesrc_unref(s);
    bytesrc_unref(in);
    /* nothing at all */
    s = open_over(kinds[k], bad, 0, 10, &in);
    expect_fail(s, 0, 10, names[k]);
    bytesrc_unref(s);
    bytesrc_unref(in);
    free(bad);
    free(z);
  }
}
END_TEST

/* Little-endian u64. */
static void le64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

START_TEST(vlen_chunk_streams_its_data) {
  make_plain();
  /* 1000 elements of 1,000 bytes, zstd data; and the same with gzip */
  const char *codecs[] = {
      "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
      "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
      "\"data_codecs\":[{\"name\":\"bytes\"},{\"name\":\"zstd\"}],"
      "\"index_data_type\":\"uint64\"}}]",
      "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
      "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
      "\"data_codecs\":[{\"name\":\"bytes\"},{\"name\":\"gzip\"}],"
      "\"index_data_type\":\"uint64\"}}]",
      "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
      "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
      "\"data_codecs\":[{\"name\":\"bytes\"},{\"name\":\"zstd\"},{\"name\":"
      "\"crc32c\"}],\"index_data_type\":\"uint64\"}}]"};
  const size_t n = 1000, dl = n * 1000;
  for (int c = 0; c < 3; c++) {
    size_t zl;
    uint8_t *z = c == 1 ? gzip_members(dl, dl, &zl) : zstd_frames(dl, dl, &zl);
    size_t L = 8 * (n + 1), total = 8 + L + zl + 4;
    uint8_t *chunk = malloc(total);
    le64(chunk, L);
    for (size_t i = 0; i <= n; i++)
      le64(chunk + 8 + 8 * i, i * 1000);
    memcpy(chunk + 8 + L, z, zl);
    if (c == 2) /* crc32c's checksum: not streamed, so any four bytes */
      memset(chunk + 8 + L + zl, 0, 4);
    else
      total -= 4;
    json_error_t jerr;
    json_t *j = json_loads(codecs[c], 0, &jerr);
    ck_assert(j);
    struct codec_spec spec;
    memset(&spec, 0, sizeof spec);
    spec.ndim = 1;
    spec.shape[0] = n;
    spec.nelem = n;
    spec.dtype = dtype_of(DT_STRING);
    struct chain *ch;
    struct zerr err = {0};
    ck_assert_msg(chain_build(j, &spec, &ch, &err) == 0, "%s", err.msg);
    ck_assert(chain_partial_caps(ch) & CODEC_PARTIAL_OFFSETS);
    struct bytesrc *in = bytesrc_from_static(chunk, total), *s = NULL;
    struct codec_partial p;
    ck_assert_msg(chain_partial_open(ch, &spec, in, &p, &err) == 0, "%s",
                  err.msg);
    ck_assert(p.data == NULL);
    int rc = chain_partial_stream(&p, dl, &env, &s, &err);
    chain_partial_close(&p);
    if (c == 2) {
      ck_assert_int_eq(rc, -ENOTSUP); /* two stages: decoded whole */
    } else {
      ck_assert_msg(rc == 0, "%s", err.msg);
      expect(s, 0, dl);
      expect(s, 500000, 1000);
      bytesrc_unref(s);
    }
    bytesrc_unref(in);
    chain_free(ch);
    json_decref(j);
    free(chunk);
    free(z);
  }
}
END_TEST

/* A stream opened without its size: reads up to the end give what is
 * there, past it nothing, and the window is not lost to them. */
START_TEST(read_upto_stops_at_the_end) {
  make_plain();
  size_t zl, n = (size_t)5 << 20, got;
  uint8_t *z = zstd_frames(n, 3 << 20, &zl), *buf = malloc((size_t)1 << 20);
  struct zerr err = {0};
  struct bytesrc *in = bytesrc_from_static(z, zl), *s;
  ck_assert_int_eq(dstream_open(&dstream_zstd, in, UINT64_MAX, &env, &s, &err),
                   0);
  ck_assert_int_eq(dstream_read_upto(s, 0, 1 << 20, buf, &got, &err), 0);
  ck_assert_uint_eq(got, 1 << 20);
  ck_assert(!memcmp(buf, plain, got));
  ck_assert_int_eq(dstream_read_upto(s, n - 1000, 1 << 20, buf, &got, &err), 0);
  ck_assert_uint_eq(got, 1000);
  ck_assert(!memcmp(buf, plain + n - 1000, got));
  ck_assert_int_eq(dstream_read_upto(s, n + 7, 100, buf, &got, &err), 0);
  ck_assert_uint_eq(got, 0);
  ck_assert_int_eq(dstream_read_upto(s, n - 10, 10, buf, &got, &err), 0);
  ck_assert_uint_eq(got, 10);
  ck_assert_int_eq(bytesrc_read_range(s, n - 500, 500, buf, &err), 0);
  ck_assert(!memcmp(buf, plain + n - 500, 500));
  ck_assert_uint_eq(dstream_restarts(s), 0);
  ck_assert_int_eq(dstream_read_upto(in, 0, 10, buf, &got, &err), -ENOTSUP);
  bytesrc_unref(s);
  bytesrc_unref(in);
  free(buf);
  free(z);
}
END_TEST

/* A vlen-utf8 chain of n strings behind `b2b` (a codec's JSON). */
static struct chain *utf8_chain(const char *b2b, uint64_t n,
                                struct codec_spec *spec) {
  char js[256];
  snprintf(js, sizeof js, "[{\"name\":\"vlen-utf8\"},%s]", b2b);
  json_error_t jerr;
  json_t *j = json_loads(js, 0, &jerr);
  ck_assert(j);
  memset(spec, 0, sizeof *spec);
  spec->ndim = 1;
  spec->shape[0] = n;
  spec->nelem = n;
  spec->dtype = dtype_of(DT_STRING);
  struct chain *ch;
  struct zerr err = {0};
  ck_assert_msg(chain_build(j, spec, &ch, &err) == 0, "%s", err.msg);
  json_decref(j);
  return ch;
}

START_TEST(utf8_elems_stated_by_the_frame) {
  /* 3 strings of 5, 0 and 7 bytes: 12 element bytes in 28 */
  static const uint8_t raw[28] = "\3\0\0\0\5\0\0\0hello\0\0\0\0"
                                 "\7\0\0\0abcdefg";
  uint8_t z[256];
  struct codec_spec spec;
  struct zerr err = {0};
  uint64_t total = 0;
  /* one-shot (numcodecs): the content size is in the header */
  size_t zl = ZSTD_compress(z, sizeof z, raw, sizeof raw, 3);
  ck_assert(!ZSTD_isError(zl));
  struct bytesrc *in = bytesrc_from_static(z, zl);
  struct chain *ch = utf8_chain("{\"name\":\"zstd\"}", 3, &spec);
  ck_assert_int_eq(chain_elems_stated(ch, &spec, in, &total, &err), 1);
  ck_assert_uint_eq(total, 12);
  chain_free(ch);
  /* more elements than the stated size can frame: no claim */
  ch = utf8_chain("{\"name\":\"zstd\"}", 7, &spec);
  ck_assert_int_eq(chain_elems_stated(ch, &spec, in, &total, &err), 0);
  chain_free(ch);
  bytesrc_unref(in);
  /* streamed without a content size: none stated */
  ZSTD_CCtx *cc = ZSTD_createCCtx();
  ck_assert(cc);
  ZSTD_CCtx_setParameter(cc, ZSTD_c_contentSizeFlag, 0);
  ZSTD_inBuffer ib = {raw, sizeof raw, 0};
  ZSTD_outBuffer ob = {z, sizeof z, 0};
  ck_assert_uint_eq(ZSTD_compressStream2(cc, &ob, &ib, ZSTD_e_end), 0);
  ZSTD_freeCCtx(cc);
  in = bytesrc_from_static(z, ob.pos);
  ch = utf8_chain("{\"name\":\"zstd\"}", 3, &spec);
  ck_assert_int_eq(chain_elems_stated(ch, &spec, in, &total, &err), 0);
  chain_free(ch);
  bytesrc_unref(in);
  /* gzip states none up front */
  uLongf gl = sizeof z;
  ck_assert_int_eq(compress2(z, &gl, raw, sizeof raw, 6), Z_OK);
  in = bytesrc_from_static(z, gl);
  ch = utf8_chain("{\"name\":\"gzip\"}", 3, &spec);
  ck_assert_int_eq(chain_elems_stated(ch, &spec, in, &total, &err), 0);
  chain_free(ch);
  bytesrc_unref(in);
}
END_TEST

/* The suite. */
static Suite *zstream_suite(void) {
  Suite *s = suite_create("zstream");
  TCase *tc = tcase_create("zstream");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, zstd_frames_in_memory_and_file);
  tcase_add_test(tc, gzip_several_members);
  tcase_add_test(tc, bad_streams_fail);
  tcase_add_test(tc, vlen_chunk_streams_its_data);
  tcase_add_test(tc, utf8_elems_stated_by_the_frame);
  tcase_add_test(tc, read_upto_stops_at_the_end);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) {
  SRunner *sr = srunner_create(zstream_suite());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  free(plain);
  return failed ? 1 : 0;
}
