/* check_vlen.c - unit tests for `zarrs.vlen` (every layout and config
 * form, offsets that lie), and every malformed input of the variable-length
 * codecs (vlen-utf8 too) as a table of cases; all through the codec chain
 * (codecs/chain.h). The interleaved vlen-utf8 family:
 * check_vlen_interleaved.c; partial reads and decoders:
 * check_vlen_partial.c; real chunks of the shared zarrs fixtures:
 * check_vlen_fixtures.c; the text of decoded units:
 * tests/unit/text/check_textvar.c. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../testutil.h"
#include "testvlen.h"

/* ---- zarrs.vlen ---- */

START_TEST(test_vlen_formats) {
  /* Every combination of index type, endianness, location, index crc32c
   * and gzip data. */
  for (int m = 0; m < 32; m++) {
    struct venc o = {m & 1, !!(m & 2), !!(m & 4), !!(m & 8), !!(m & 16), 0};
    char json[1024];
    venc_json(&o, "zarrs.vlen", json, sizeof json);
    size_t len;
    uint8_t *enc = venc_chunk(&o, sample, NSAMPLE, &len);
    struct abytes *a;
    struct zerr err = {0};
    int rc = run(json, NSAMPLE, enc, len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
    check_strings(a, sample, NSAMPLE);
    ck_assert_uint_eq(a->offsets[0], 0);
    abytes_free(a);
    free(enc);
  }
}
END_TEST

START_TEST(test_vlen_start_u64_bytes) {
  /* Exactly the worked example of zarrs-vlen.md 1.3, smaller. */
  static const uint8_t chunk[] = {24, 0, 0, 0, 0,   0,   0,   0, /* L */
                                  0,  0, 0, 0, 0,   0,   0,   0,   3,  0,
                                  0,  0, 0, 0, 0,   0,   5,   0,   0,  0,
                                  0,  0, 0, 0, 'f', 'o', 'o', 'h', 'i'};
  const char *json = "[{\"name\":\"zarrs.vlen\",\"configuration\":{"
                     "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":"
                     "{\"endian\":\"little\"}}],\"data_codecs\":[{\"name\":"
                     "\"bytes\"}],\"index_data_type\":\"uint64\","
                     "\"index_location\":\"start\"}}]";
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run(json, 2, chunk, sizeof chunk, MAXDEC, &a, &err), 0);
  static const char *const want[] = {"foo", "hi"};
  check_strings(a, want, 2);
  /* the data is a window onto the chunk, not a copy */
  ck_assert_ptr_eq(a->data->mem, chunk + 32);
  abytes_free(a);
}
END_TEST

START_TEST(test_vlen_empty_data) {
  static const char *const empty[] = {"", "", ""};
  for (int m = 0; m < 4; m++) {
    /* gzip data codec: zarrs writes 0 data bytes, not a gzip stream */
    struct venc o = {m & 1, 0, !!(m & 2), 0, 1, 0};
    char json[1024];
    venc_json(&o, "zarrs.vlen", json, sizeof json);
    size_t len;
    uint8_t *enc = venc_chunk(&o, empty, 3, &len);
    ck_assert_uint_eq(len, 8 + 4 * (o.u32 ? 4 : 8));
    struct abytes *a;
    struct zerr err = {0};
    int rc = run(json, 3, enc, len, MAXDEC, &a, &err);
    ck_assert_msg(rc == 0, "%s: %s", json, err.msg);
    check_strings(a, empty, 3);
    ck_assert_uint_eq(a->data->size, 0);
    abytes_free(a);
    free(enc);
  }
  /* Anything in the data section is ignored when the last offset is 0:
   * not gunzipped, not checked. */
  static const uint8_t junk[] = {16, 0, 0, 0, 0,   0,   0,   0,  0, 0,
                                 0,  0, 0, 0, 0,   0,   0,   0,  0, 0,
                                 0,  0, 0, 0, 'j', 'u', 'n', 'k'};
  struct venc o = {0, 0, 0, 0, 1, 0};
  char json[1024];
  venc_json(&o, "zarrs.vlen", json, sizeof json);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run(json, 1, junk, sizeof junk, MAXDEC, &a, &err), 0);
  ck_assert_uint_eq(a->offsets[1], 0);
  abytes_free(a);
}
END_TEST

START_TEST(test_vlen_offsets_absolute) {
  /* offsets[0] need not be 0: bytes before it are unreferenced, and equal
   * offsets make empty elements. */
  static const uint8_t chunk[] = {
      32, 0, 0, 0, 0, 0, 0, 0, 2,   0,   0,   0,   0,   0,  0, 0,
      3,  0, 0, 0, 0, 0, 0, 0, 3,   0,   0,   0,   0,   0,  0, 0,
      6,  0, 0, 0, 0, 0, 0, 0, 'x', 'x', 'a', 'b', 'c', 'd'};
  const char *json = "[{\"name\":\"vlen\",\"configuration\":{"
                     "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":"
                     "{\"endian\":\"little\"}}],\"data_codecs\":[\"bytes\"],"
                     "\"index_data_type\":\"uint64\"}}]";
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_eq(run(json, 3, chunk, sizeof chunk, MAXDEC, &a, &err), 0);
  static const char *const want[] = {"a", "", "bcd"};
  check_strings(a, want, 3);
  ck_assert_uint_eq(a->offsets[0], 2);
  abytes_free(a);
}
END_TEST

START_TEST(test_vlen_config_forms) {
  /* V0 (no index_location) means start; all three names work. */
  static const char *const names[] = {
      "zarrs.vlen", "https://codec.zarrs.dev/array_to_bytes/vlen", "vlen"};
  for (size_t k = 0; k < 3; k++)
    for (int v0 = 0; v0 < 2; v0++) {
      struct venc o = {0, 0, 0, 0, 0, v0};
      char json[1024];
      venc_json(&o, names[k], json, sizeof json);
      size_t len;
      uint8_t *enc = venc_chunk(&o, sample, NSAMPLE, &len);
      struct abytes *a;
      struct zerr err = {0};
      ck_assert_msg(run(json, NSAMPLE, enc, len, MAXDEC, &a, &err) == 0,
                    "%s: %s", json, err.msg);
      check_strings(a, sample, NSAMPLE);
      abytes_free(a);
      free(enc);
    }
  /* A V0 config reading an "end" chunk does not silently succeed. */
  struct venc end = {0, 0, 1, 0, 0, 0}, v0 = {0, 0, 0, 0, 0, 1};
  char json[1024];
  venc_json(&v0, "zarrs.vlen", json, sizeof json);
  size_t len;
  uint8_t *enc = venc_chunk(&end, sample, NSAMPLE, &len);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_int_lt(run(json, NSAMPLE, enc, len, MAXDEC, &a, &err), 0);
  free(enc);
}
END_TEST

START_TEST(test_vlen_config_errors) {
#define IC                                                                     \
  "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":{"                  \
  "\"endian\":\"little\"}}]"
#define DC "\"data_codecs\":[\"bytes\"]"
#define VL(cfg) "[{\"name\":\"zarrs.vlen\",\"configuration\":{" cfg "}}]"
  static const struct {
    const char *json;
    enum dtype_kind kind;
    int rc;
    const char *msg;
  } cases[] = {
      {VL(IC "," DC ",\"index_data_type\":\"uint64\",\"extra\":1"), DT_STRING,
       -EIO, "zarrs.vlen: unknown configuration key 'extra'"},
      {VL(IC "," DC ",\"index_data_type\":\"uint64\",\"must_understand\":"
             "false"),
       DT_STRING, -EIO, "unknown configuration key 'must_understand'"},
      {VL(IC "," DC), DT_STRING, -EIO, "'index_data_type'"},
      {VL(DC ",\"index_data_type\":\"uint64\""), DT_STRING, -EIO,
       "'index_codecs'"},
      {VL(IC ",\"index_data_type\":\"uint64\""), DT_STRING, -EIO,
       "'data_codecs'"},
      {VL(IC "," DC ",\"index_data_type\":\"uint16\""), DT_STRING, -EIO,
       "index_data_type must be"},
      {VL(IC "," DC ",\"index_data_type\":64"), DT_STRING, -EIO,
       "'index_data_type' must be a string"},
      {VL(IC "," DC ",\"index_data_type\":\"uint64\",\"index_location\":"
             "\"middle\""),
       DT_STRING, -EIO, "index_location must be"},
      {"[{\"name\":\"zarrs.vlen\"}]", DT_STRING, -EIO,
       "configuration is required"},
      {"[\"zarrs.vlen\"]", DT_BYTES, -EIO, "configuration is required"},
      {VL("\"index_codecs\":[]," DC ",\"index_data_type\":\"uint64\""),
       DT_STRING, -EIO, "zarrs.vlen index_codecs: missing array->bytes"},
      {VL("\"index_codecs\":[\"bytes\"]," DC ",\"index_data_type\":\"uint32\""),
       DT_STRING, -EIO,
       "index_codecs: bytes: configuration 'endian' is "
       "required"},
      {VL("\"index_codecs\":\"bytes\"," DC ",\"index_data_type\":\"uint32\""),
       DT_STRING, -EIO, "must be a list"},
      {VL(IC ",\"data_codecs\":[\"bytes\",\"blosc2x\"],\"index_data_type\":"
             "\"uint64\""),
       DT_STRING, -ENOTSUP, "data_codecs: unsupported codec 'blosc2x'"},
      {VL(IC ",\"data_codecs\":[\"gzip\",\"bytes\"],\"index_data_type\":"
             "\"uint64\""),
       DT_STRING, -EIO, "must come after"},
      {VL(IC "," DC ",\"index_data_type\":\"uint64\""), DT_INT32, -EIO,
       "not variable-length"},
      {"[{\"name\":\"vlen-utf8\",\"configuration\":{\"a\":1}}]", DT_STRING,
       -EIO, "vlen-utf8: configuration must be empty"},
      {"[{\"name\":\"zarrs.vlen_v2\",\"configuration\":{\"x\":[]}}]", DT_BYTES,
       -EIO, "zarrs.vlen_v2: configuration must be empty"},
      {"[\"vlen-bytes\"]", DT_UINT8, -EIO, "not variable-length"},
  };
#undef IC
#undef DC
#undef VL
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct codec_spec s = tc_spec1(cases[i].kind, 4);
    struct chain *c = NULL;
    struct zerr err = {0};
    int rc = tc_build(cases[i].json, &s, &c, &err);
    ck_assert_msg(rc == cases[i].rc, "%s: rc %d want %d (%s)", cases[i].json,
                  rc, cases[i].rc, err.msg);
    ck_assert_ptr_null(c);
    ck_assert_msg(strstr(err.msg, cases[i].msg), "%s: message '%s' lacks '%s'",
                  cases[i].json, err.msg, cases[i].msg);
  }
}
END_TEST

/* ---- bad input, as data ---- */

#define U32(x)                                                                 \
  (uint8_t)((x)&0xff), (uint8_t)(((x) >> 8) & 0xff),                           \
      (uint8_t)(((x) >> 16) & 0xff), (uint8_t)(((x) >> 24) & 0xff)
#define U64(x)                                                                 \
  U32((uint64_t)(x)&0xffffffffu), U32(((uint64_t)(x) >> 32) & 0xffffffffu)
#define BYTES(...)                                                             \
  (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

#define CFG(idx, dat, itype, loc)                                              \
  "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[" idx        \
  "],\"data_codecs\":[" dat "],\"index_data_type\":\"" itype                   \
  "\",\"index_location\":\"" loc "\"}}]"
#define LE "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}"
#define START_U64 CFG(LE, "\"bytes\"", "uint64", "start")
#define END_U64 CFG(LE, "\"bytes\"", "uint64", "end")
#define START_U32 CFG(LE, "\"bytes\"", "uint32", "start")
#define GZIP_DATA CFG(LE, "\"bytes\",\"gzip\"", "uint64", "start")
#define CRC_INDEX CFG(LE ",\"crc32c\"", "\"bytes\"", "uint64", "start")
#define UTF8 "[\"vlen-utf8\"]"

struct bad_case {
  const char *name;
  const char *codecs;
  uint64_t n;
  const uint8_t *bytes;
  size_t len;
  size_t max; /* 0: MAXDEC */
  int err;
  const char *msg;
};

START_TEST(test_bad_inputs) {
  const struct bad_case cases[] = {
      {"chunk shorter than 8 bytes", START_U64, 1, BYTES(1, 2, 3, 4, 5), 0, EIO,
       "zarrs.vlen: chunk of 5 bytes is shorter than the 8-byte"},
      {"empty chunk", END_U64, 1, (const uint8_t[]){0}, 0, 0, EIO,
       "shorter than the 8-byte"},
      {"index length larger than the chunk (start)", START_U64, 1,
       BYTES(U64(1000), U64(0), U64(0)), 0, EIO,
       "zarrs.vlen: index length 1000 exceeds chunk size 24"},
      {"index length larger than the chunk (end)", END_U64, 1,
       BYTES(U64(0), U64(0), U64(17)), 0, EIO,
       "index length 17 exceeds chunk size 24"},
      {"index length 2^64-1", START_U64, 1,
       BYTES(U64(UINT64_MAX), U64(0), U64(0)), 0, EIO, "exceeds chunk size 24"},
      {"offsets that decrease", START_U64, 3,
       BYTES(U64(32), U64(0), U64(3), U64(2), U64(4), 'a', 'b', 'c', 'd'), 0,
       EIO, "zarrs.vlen: offsets decrease at element 1 (3 then 2)"},
      {"offset past the data", START_U64, 2,
       BYTES(U64(24), U64(0), U64(9), U64(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "offsets decrease at element 1 (9 then 4)"},
      {"first offset past the data", START_U64, 1,
       BYTES(U64(16), U64(7), U64(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "offsets decrease at element 0 (7 then 4)"},
      {"data shorter than last offset", START_U64, 2,
       BYTES(U64(24), U64(0), U64(2), U64(10), 'a', 'b', 'c', 'd'), 0, EIO,
       "zarrs.vlen: data length 4 disagrees with last offset 10"},
      {"data longer than last offset", END_U64, 2,
       BYTES('a', 'b', 'c', 'd', U64(0), U64(2), U64(3), U64(24)), 0, EIO,
       "data length 4 disagrees with last offset 3"},
      {"gzip data shorter than last offset", GZIP_DATA, 1,
       BYTES(U64(16), U64(0), U64(10), 0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00,
             0x00, 0x00, 0x03, 0x4b, 0x4c, 0x4a, 0x4e, 0x01, 0x00, 0x11, 0xcd,
             0x82, 0xed, 0x04, 0x00, 0x00, 0x00),
       0, EIO, "zarrs.vlen data: bytes: chunk has 4 bytes, expected 10"},
      {"gzip data corrupt", GZIP_DATA, 1,
       BYTES(U64(16), U64(0), U64(4), 'n', 'o', 't', 'g', 'z'), 0, EIO,
       "zarrs.vlen data: gzip: corrupt or truncated stream"},
      {"index with a missing offset", START_U64, 2,
       BYTES(U64(16), U64(0), U64(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "zarrs.vlen index: bytes: chunk has 16 bytes, expected 24"},
      {"index with a stray byte", START_U64, 1,
       BYTES(U64(17), U64(0), U64(1), 0, 'a'), 0, EIO,
       "chunk has 17 bytes, expected 16"},
      {"uint32 index with wrong count", START_U32, 2,
       BYTES(U64(8), U32(0), U32(4), 'a', 'b', 'c', 'd'), 0, EIO,
       "chunk has 8 bytes, expected 12"},
      {"element count n+1 overflows", START_U64, UINT64_MAX,
       BYTES(U64(8), U64(0)), 0, EFBIG, "overflow"},
      {"element count (n+1)*8 overflows", START_U64, (uint64_t)1 << 61,
       BYTES(U64(8), U64(0)), 0, EFBIG, "overflow"},
      {"uint32 index (n+1)*8 overflows", START_U32, UINT64_MAX / 4,
       BYTES(U64(8), U64(0)), 0, EFBIG, "overflow"},
      {"index larger than the decode limit", START_U64, (uint64_t)1 << 40,
       BYTES(U64(8), U64(0)), 0, EFBIG, "decode limit"},
      {"index offsets over a small limit", START_U64, 3,
       BYTES(U64(32), U64(0), U64(0), U64(0), U64(0)), 16, EFBIG,
       "decode limit"},
      {"crc32c index mismatch", CRC_INDEX, 1,
       BYTES(U64(20), U64(0), U64(1), U32(0xdeadbeef), 'a'), 0, EIO,
       "zarrs.vlen index: crc32c: checksum mismatch (stored deadbeef"},
      {"crc32c index too short", CRC_INDEX, 1, BYTES(U64(2), 0, 0, 'a'), 0, EIO,
       "crc32c: chunk of 2 bytes is shorter"},
      {"vlen-utf8 count mismatch", UTF8, 2,
       BYTES(U32(3), U32(1), 'a', U32(1), 'b', U32(1), 'c'), 0, EIO,
       "vlen-utf8: header says 3 elements, chunk has 2"},
      {"vlen-utf8 count for a huge n", UTF8, UINT64_MAX, BYTES(U32(0)), 0, EIO,
       "header says 0 elements"},
      {"vlen-utf8 element length runs past the buffer", UTF8, 2,
       BYTES(U32(2), U32(1), 'a', U32(100), 'b'), 0, EIO,
       "vlen-utf8: element 1 length 100 runs past the end of the chunk"},
      {"vlen-utf8 element length 2^32-1", UTF8, 2,
       BYTES(U32(2), U32(0xffffffffu), 'a', U32(1), 'b'), 0, EIO,
       "element 0 length 4294967295 runs past"},
      {"vlen-utf8 length header runs past", UTF8, 2,
       BYTES(U32(2), U32(3), 'a', 'b', 'c', 'x', 'x', 'x'), 0, EIO,
       "element 1 length header runs past"},
      {"vlen-utf8 too short for the lengths", UTF8, 2,
       BYTES(U32(2), U32(1), 'a'), 0, EIO, "too short for 2 element lengths"},
      {"vlen-utf8 huge count, tiny chunk", UTF8, 0xffffffffu,
       BYTES(U32(0xffffffffu), U32(0)), 0, EIO, "too short for 4294967295"},
      {"vlen-utf8 truncated header", UTF8, 1, BYTES(1, 0), 0, EIO,
       "vlen-utf8: chunk of 2 bytes is too short for the 4-byte header"},
      {"vlen-utf8 empty chunk", UTF8, 1, (const uint8_t[]){0}, 0, 0, EIO,
       "too short for the 4-byte header"},
      {"vlen-utf8 offsets over a small limit", UTF8, 1,
       BYTES(U32(1), U32(1), 'a'), 8, EFBIG, "decode limit"},
      /* HDF5 vlen strings by byte range: the heap IDs h5py wrote for
       * ['hello', '', 'a'] and ['ab', 'cd', (unwritten)] */
      {"HDF5 heap references", UTF8, 3,
       BYTES(U32(5), U64(3496), U32(10), U32(0), U64(3496), U32(9), U32(1),
             U64(3496), U32(8)),
       0, EIO,
       "vlen-utf8: the chunk holds 3 HDF5 variable-length references (16 "
       "bytes each), not the strings: they live in the HDF5 file's global "
       "heap, so the references must inline them"},
      {"HDF5 heap references, one unwritten", "[\"vlen-bytes\"]", 3,
       BYTES(U32(2), U64(3496), U32(12), U32(2), U64(3496), U32(11), U32(0),
             U64(0), U32(0)),
       0, EIO, "vlen-bytes: the chunk holds 3 HDF5 variable-length"},
      {"16 bytes an element, not heap IDs", UTF8, 1,
       BYTES(U32(7), U32(3), 'a', 'b', 'c', U32(0), 'x'), 0, EIO,
       "vlen-utf8: header says 7 elements, chunk has 1"},
      {"vlen-bytes count mismatch", "[\"vlen-bytes\"]", 1,
       BYTES(U32(0), U32(1), 'a'), 0, EIO, "vlen-bytes: header says 0"},
      {"zarrs.vlen_v2 truncated element", "[\"zarrs.vlen_v2\"]", 1,
       BYTES(U32(1), U32(5), 'a', 'b'), 0, EIO,
       "zarrs.vlen_v2: element 0 length 5 runs past"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const struct bad_case *c = &cases[i];
    struct abytes *a = NULL;
    struct zerr err = {0};
    int rc = run(c->codecs, c->n, c->bytes, c->len, c->max ? c->max : MAXDEC,
                 &a, &err);
    ck_assert_msg(rc == -c->err, "%s: rc %d, want %d (%s)", c->name, rc,
                  -c->err, err.msg);
    ck_assert_msg(a == NULL, "%s: output despite error", c->name);
    ck_assert_msg(err.code == c->err && strstr(err.msg, c->msg),
                  "%s: message '%s' lacks '%s'", c->name, err.msg, c->msg);
    ck_assert_msg(!strchr(err.msg, '\n'), "%s: multi-line message", c->name);
  }
}
END_TEST

START_TEST(test_check_offsets) {
  static const uint64_t ok[] = {0, 0, 3, 3, 7};
  static const uint64_t dec[] = {0, 4, 3, 7};
  static const uint64_t past[] = {1, 2, 9};
  struct zerr err = {0};
  ck_assert_int_eq(abytes_check_offsets(ok, 4, 7, &err), 0);
  ck_assert_int_eq(abytes_check_offsets(ok, 4, 100, &err), 0);
  ck_assert_int_eq(abytes_check_offsets(ok, 4, 6, &err), -EIO);
  ck_assert(strstr(err.msg, "last offset 7 lies past the data (6 bytes)"));
  ck_assert_int_eq(abytes_check_offsets(dec, 3, 7, &err), -EIO);
  ck_assert(strstr(err.msg, "offsets decrease at element 1"));
  ck_assert_int_eq(abytes_check_offsets(past, 2, 8, &err), -EIO);
  static const uint64_t one[] = {10};
  ck_assert_int_eq(abytes_check_offsets(one, 0, 10, &err), 0);
}
END_TEST

/* Assemble the suite. */

static Suite *vlen_suite(void) {
  Suite *s = suite_create("vlen");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_vlen_formats);
  tcase_add_test(tc, test_vlen_start_u64_bytes);
  tcase_add_test(tc, test_vlen_empty_data);
  tcase_add_test(tc, test_vlen_offsets_absolute);
  tcase_add_test(tc, test_vlen_config_forms);
  tcase_add_test(tc, test_vlen_config_errors);
  tcase_add_test(tc, test_bad_inputs);
  tcase_add_test(tc, test_check_offsets);
  suite_add_tcase(s, tc);
  return s;
}

/* Run the suite. */
int main(void) { return testutil_run(vlen_suite()); }
