/* check_packbits.c - the `packbits` and `numcodecs.packbits` codecs, and
 * `zarrs.optional` (whose mask zarrs packs with packbits):
 * hand-computed chunks for every kind of component, round trips against
 * a reference packer written here for random types, bit ranges and
 * padding encodings, a table of bad configurations and bad chunks (each
 * EIO with a message naming the problem), all through the codec chain
 * (codecs/chain.h). Stores of these codecs and the zarrs snapshot stores,
 * read through the engine: tests/unit/views/check_packbits_stores.c. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../codecs/chain.h"
#include "../../../codecs/codec.h"
#include "../../../src/util/log.h"
#include "../testcodec.h"
#include "../testutil.h"

/* Build a chain from JSON text and decode one chunk with it; returns the
 * first failure of build or decode. */
static int decode(const char *json, const struct codec_spec *spec,
                  const void *enc, size_t len, struct abytes **out,
                  struct zerr *err) {
  json_error_t je;
  json_t *j = json_loads(json, 0, &je);
  ck_assert_msg(j != NULL, "bad test JSON: %s", je.text);
  struct chain *c = NULL;
  *out = NULL;
  int rc = chain_build(j, spec, &c, err);
  json_decref(j);
  if (rc < 0)
    return rc;
  struct bytesrc *src = bytesrc_from_static(enc, len);
  struct codec_env env = {1u << 26, NULL, 0};
  rc = chain_decode(c, spec, src, &env, out, err);
  bytesrc_unref(src);
  chain_free(c);
  return rc;
}

/* Decode and compare the decoded bytes with want (n elements). */
static void expect(const char *json, struct dtype dt, uint64_t n,
                   const void *enc, size_t len, const void *want) {
  struct codec_spec s = tc_spec_1d(dt, n);
  struct abytes *a;
  struct zerr err = {0};
  int rc = decode(json, &s, enc, len, &a, &err);
  ck_assert_msg(rc == 0, "%s on %s: %s", json, dt.name, err.msg);
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, dt.size);
  size_t nb = (size_t)(n * dt.size);
  uint8_t *got = malloc(nb + 1);
  ck_assert_int_eq(bytesrc_read_range(a->fixed, 0, nb, got, &err), 0);
  ck_assert_msg(!memcmp(got, want, nb), "%s on %s: wrong bytes", json, dt.name);
  free(got);
  abytes_free(a);
}

static const char PB[] = "[\"packbits\"]";
static const char PB_FIRST[] =
    "[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
    "\"first_byte\"}}]";
static const char PB_LAST[] =
    "[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
    "\"last_byte\"}}]";

START_TEST(hand_computed) {
  /* bool 1,0,0,1,1: bits 0, 3, 4 set; 3 pad bits. */
  const uint8_t b5[] = {1, 0, 0, 1, 1};
  expect(PB, dtype_of(DT_BOOL), 5, "\x19", 1, b5);
  expect(PB_FIRST, dtype_of(DT_BOOL), 5, "\x03\x19", 2, b5);
  expect(PB_LAST, dtype_of(DT_BOOL), 5, "\x19\x03", 2, b5);
  expect("[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
         "\"start_byte\"}}]",
         dtype_of(DT_BOOL), 5, "\x03\x19", 2, b5);
  expect("[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
         "\"end_byte\",\"first_bit\":null,\"last_bit\":null}}]",
         dtype_of(DT_BOOL), 5, "\x19\x03", 2, b5);
  /* bool 9 elements: a second byte; 8 elements: no pad bits. */
  const uint8_t b9[] = {0, 0, 0, 0, 0, 0, 0, 1, 1};
  expect(PB_FIRST, dtype_of(DT_BOOL), 9, "\x07\x80\x01", 3, b9);
  expect(PB_LAST, dtype_of(DT_BOOL), 8, "\x80\x00", 2, b9);
  /* uint2 0,1,2,3,3: 0b11100100, then 0b11. */
  expect(PB, dtype_of(DT_UINT2), 5, "\xe4\x03", 2, "\0\1\2\3\3");
  /* int2 -2,-1,0,1: 10 11 00 01 -> 0b01001110; sign-extended bytes. */
  expect(PB, dtype_of(DT_INT2), 4, "\x4e", 1, "\xfe\xff\x00\x01");
  /* int4 -8, 7, -1 and uint4 10, 5. */
  expect(PB_FIRST, dtype_of(DT_INT4), 3, "\x04\x78\x0f", 3, "\xf8\x07\xff");
  expect(PB, dtype_of(DT_UINT4), 2, "\x5a", 1, "\x0a\x05");
  /* int16 bits 4..11: stored 0xff, 0x05 -> -1 << 4, 5 << 4. */
  int16_t i16[] = {-16, 80};
  expect("[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":4,"
         "\"last_bit\":11}}]",
         dtype_of(DT_INT16), 2, "\xff\x05", 2, i16);
  /* The schema spelling of the same range. */
  expect("[{\"name\":\"packbits\",\"configuration\":{\"start_bit\":4,"
         "\"end_bit\":11}}]",
         dtype_of(DT_INT16), 2, "\xff\x05", 2, i16);
  /* int32 bits 0..7: the sign extends over the whole component (zarrs
   * extends only to the end of the byte; the spec says N bits). */
  int32_t i32[] = {-128, 127};
  expect("[{\"name\":\"packbits\",\"configuration\":{\"last_bit\":7}}]",
         dtype_of(DT_INT32), 2, "\x80\x7f", 2, i32);
  /* uint16 bits 8..15: zero-extended below first_bit. */
  uint16_t u16[] = {0x1200, 0xff00};
  expect("[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":8}}]",
         dtype_of(DT_UINT16), 2, "\x12\xff", 2, u16);
  /* 3-bit uint8 fields cross byte boundaries: 5, 2, 7 -> 101 010 111. */
  expect("[{\"name\":\"packbits\",\"configuration\":{\"last_bit\":2}}]",
         dtype_of(DT_UINT8), 3, "\xd5\x01", 2, "\5\2\7");
  /* float32 whole: the little-endian bytes, with the padding byte (spec)
   * or without it (what zarrs writes). */
  float f[] = {1.5f, -2.0f};
  expect(PB, dtype_of(DT_FLOAT32), 2, "\x00\x00\xc0\x3f\x00\x00\x00\xc0", 8, f);
  expect(PB_FIRST, dtype_of(DT_FLOAT32), 2,
         "\x00\x00\x00\xc0\x3f\x00\x00\x00\xc0", 9, f);
  expect(PB_LAST, dtype_of(DT_FLOAT32), 2, "\x00\x00\xc0\x3f\x00\x00\x00\xc0",
         8, f);
  /* complex64, top 16 bits of each part: re 1.5, im -2. */
  uint32_t c64[] = {0x3fc00000u, 0xc0000000u};
  expect("[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":16}}]",
         dtype_of(DT_COMPLEX64), 1, "\xc0\x3f\x00\xc0", 4, c64);
  /* bfloat16 and int64 whole. */
  uint16_t bf[] = {0x3f80, 0xc040};
  expect(PB, dtype_of(DT_BFLOAT16), 2, "\x80\x3f\x40\xc0", 4, bf);
  int64_t i64[] = {-2};
  expect(PB, dtype_of(DT_INT64), 1, "\xfe\xff\xff\xff\xff\xff\xff\xff", 8, i64);
  /* Zero elements: nothing, or just the padding byte. */
  expect(PB, dtype_of(DT_BOOL), 0, "", 0, "");
  expect(PB_FIRST, dtype_of(DT_INT4), 0, "\0", 1, "");
}
END_TEST

/* One random configuration for the reference packer. */
struct ref_cfg {
  struct dtype dt;
  unsigned bits, ncomp, first, last;
  int is_signed, padding; /* 0 none, 1 first, 2 last */
};

/* The reference: components LSB-first, padding byte as configured. */
static size_t ref_pack(const struct ref_cfg *c, const uint8_t *in, uint64_t n,
                       uint8_t *out) {
  unsigned b = c->last - c->first + 1;
  size_t csize = c->dt.size / c->ncomp;
  uint64_t total = n * c->ncomp * b, packed = (total + 7) / 8;
  size_t off = c->padding == 1;
  memset(out, 0, packed + 2);
  uint64_t pos = 0;
  for (uint64_t i = 0; i < n * c->ncomp; i++) {
    uint64_t v = 0;
    memcpy(&v, in + i * csize, csize); /* little-endian host */
    for (unsigned k = 0; k < b; k++, pos++)
      if (v >> (c->first + k) & 1)
        out[off + pos / 8] |= (uint8_t)(1u << (pos % 8));
  }
  if (c->padding)
    out[c->padding == 1 ? 0 : packed] = (uint8_t)(packed * 8 - total);
  return (size_t)packed + (c->padding != 0);
}

/* What decoding must give for one component value. */
static uint64_t ref_expect(const struct ref_cfg *c, uint64_t v) {
  unsigned b = c->last - c->first + 1;
  uint64_t mask = b == 64 ? ~(uint64_t)0 : (((uint64_t)1 << b) - 1);
  uint64_t r = (v >> c->first & mask) << c->first;
  if (c->is_signed && (r >> c->last & 1))
    r |= ~(uint64_t)0 << c->last;
  return r;
}

START_TEST(round_trips) {
  static const struct {
    enum dtype_kind kind;
    unsigned bits, ncomp;
    int is_signed;
  } types[] = {{DT_BOOL, 1, 1, 0},       {DT_INT2, 2, 1, 1},
               {DT_UINT2, 2, 1, 0},      {DT_INT4, 4, 1, 1},
               {DT_UINT4, 4, 1, 0},      {DT_INT8, 8, 1, 1},
               {DT_UINT16, 16, 1, 0},    {DT_INT32, 32, 1, 1},
               {DT_INT64, 64, 1, 1},     {DT_UINT64, 64, 1, 0},
               {DT_FLOAT32, 32, 1, 0},   {DT_BFLOAT16, 16, 1, 0},
               {DT_COMPLEX64, 32, 2, 0}, {DT_COMPLEX128, 64, 2, 0}};
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int iter = 0; iter < 600; iter++) {
    struct ref_cfg c;
    size_t t = (size_t)iter % (sizeof types / sizeof *types);
    c.dt = dtype_of(types[t].kind);
    c.bits = types[t].bits;
    c.ncomp = types[t].ncomp;
    c.is_signed = types[t].is_signed;
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    c.padding = (int)(s % 3);
    /* Half the cases keep every bit; the rest a random range. */
    c.first = 0;
    c.last = c.bits - 1;
    if (iter % 2) {
      c.first = (unsigned)(s >> 8) % c.bits;
      c.last = c.first + (unsigned)(s >> 20) % (c.bits - c.first);
    }
    uint64_t n = (s >> 32) % 37;
    size_t csize = c.dt.size / c.ncomp;
    uint8_t in[37 * 16], want[37 * 16], enc[37 * 16 + 2];
    for (uint64_t i = 0; i < n * c.ncomp; i++) {
      s ^= s << 13, s ^= s >> 7, s ^= s << 17;
      uint64_t v = s;
      if (c.bits < 8) /* valid values only: sign-extended small ints */
        v = ref_expect(&(struct ref_cfg){.first = 0,
                                         .last = c.bits - 1,
                                         .is_signed = c.is_signed},
                       v);
      memcpy(in + i * csize, &v, csize);
      uint64_t e = ref_expect(&c, v);
      memcpy(want + i * csize, &e, csize);
    }
    size_t len = ref_pack(&c, in, n, enc);
    char json[256];
    static const char *const pads[] = {"none", "first_byte", "last_byte"};
    snprintf(json, sizeof json,
             "[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
             "\"%s\",\"first_bit\":%u,\"last_bit\":%u}}]",
             pads[c.padding], c.first, c.last);
    expect(json, c.dt, n, enc, len, want);
  }
}
END_TEST

/* A bad configuration or chunk and a word its message must contain. */
struct bad_case {
  const char *json;
  enum dtype_kind kind;
  size_t size; /* for kinds dtype_of does not size */
  uint64_t n;
  const char *enc;
  size_t len;
  const char *says;
};

START_TEST(bad_input_table) {
  static const struct bad_case t[] = {
      /* Chunks that do not fit the metadata. */
      {"[\"packbits\"]", DT_BOOL, 0, 9, "\xff", 1, "expected 2"},
      {"[\"packbits\"]", DT_BOOL, 0, 9, "\xff\x01\x00", 3, "expected 2"},
      {"[\"packbits\"]", DT_INT4, 0, 3, "", 0, "has 0 bytes"},
      {"[\"packbits\"]", DT_UINT16, 0, 2, "\1\2\3", 3, "expected 4"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
       "\"first_byte\"}}]",
       DT_BOOL, 0, 5, "\x19", 1, "padding byte"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
       "\"first_byte\"}}]",
       DT_BOOL, 0, 5, "\x08\x19", 2, "padding byte says 8"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
       "\"last_byte\"}}]",
       DT_BOOL, 0, 5, "\x19\x02", 2, "expected 3"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
       "\"first_byte\"}}]",
       DT_FLOAT32, 0, 1, "\x01\0\0\0\0", 5, "padding byte says 1"},
      /* Bad configurations. */
      {"[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":5,"
       "\"last_bit\":3}}]",
       DT_INT8, 0, 1, "\0", 1, "after last_bit"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"last_bit\":8}}]", DT_INT8,
       0, 1, "\0", 1, "outside"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":4}}]", DT_INT4,
       0, 1, "\0", 1, "after last_bit"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":-1}}]",
       DT_INT8, 0, 1, "\0", 1, "non-negative"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"last_bit\":\"7\"}}]",
       DT_INT8, 0, 1, "\0", 1, "last_bit"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"first_bit\":0,"
       "\"start_bit\":0}}]",
       DT_INT8, 0, 1, "\0", 1, "both"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
       "\"middle\"}}]",
       DT_BOOL, 0, 1, "\0", 1, "padding_encoding"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":1}}]",
       DT_BOOL, 0, 1, "\0", 1, "padding_encoding"},
      {"[{\"name\":\"packbits\",\"configuration\":{\"bits\":1}}]", DT_BOOL, 0,
       1, "\0", 1, "unknown configuration key 'bits'"},
      /* Types packbits does not take. */
      {"[\"packbits\"]", DT_STRING, 0, 1, "\0", 1, "not supported"},
      {"[\"packbits\"]", DT_BYTES, 0, 1, "\0", 1, "not supported"},
      {"[\"packbits\"]", DT_RAW, 2, 1, "\0\0", 2, "not supported"},
      {"[\"packbits\"]", DT_FIXED_UTF32, 4, 1, "\0\0\0\0", 4, "not supported"},
      /* numcodecs.packbits: bool only, pad count checked, length checked. */
      {"[\"numcodecs.packbits\",\"bytes\"]", DT_BOOL, 0, 4, "\x03\x90", 2,
       "says 3 padding bits, expected 4"},
      {"[\"numcodecs.packbits\",\"bytes\"]", DT_BOOL, 0, 4, "\x04", 1,
       "expected 2"},
      {"[\"numcodecs.packbits\",\"bytes\"]", DT_BOOL, 0, 4, "\x04\x90\x00", 3,
       "expected 2"},
      {"[\"numcodecs.packbits\",\"bytes\"]", DT_UINT8, 0, 4, "\x04\x90", 2,
       "must be bool"},
      {"[{\"name\":\"numcodecs.packbits\",\"configuration\":{\"x\":1}},"
       "\"bytes\"]",
       DT_BOOL, 0, 4, "\x04\x90", 2, "unknown configuration key"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct dtype dt = dtype_of(t[i].kind);
    if (t[i].size) {
      dt.size = t[i].size;
      snprintf(dt.name, sizeof dt.name, "%s",
               t[i].kind == DT_RAW ? "r16" : "fixed_length_utf32");
    }
    struct codec_spec s = tc_spec_1d(dt, t[i].n);
    struct abytes *a = NULL;
    struct zerr err = {0};
    int rc = decode(t[i].json, &s, t[i].enc, t[i].len, &a, &err);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, t[i].says) != NULL,
                  "case %zu: message '%s' does not say '%s'", i, err.msg,
                  t[i].says);
    ck_assert_msg(strstr(err.msg, "packbits") || strstr(err.msg, "bytes:"),
                  "case %zu: message '%s' does not name the codec", i, err.msg);
  }
}
END_TEST

START_TEST(numcodecs_packbits) {
  /* numcodecs' own example: [T, F, F, T] -> [4, 144] (MSB first). */
  const uint8_t want[] = {1, 0, 0, 1};
  expect("[\"numcodecs.packbits\",\"bytes\"]", dtype_of(DT_BOOL), 4, "\x04\x90",
         2, want);
  const uint8_t w9[] = {1, 1, 0, 0, 0, 0, 0, 1, 1};
  expect("[{\"name\":\"numcodecs.packbits\",\"configuration\":{}},"
         "{\"name\":\"bytes\"},{\"name\":\"crc32c\"}]",
         dtype_of(DT_BOOL), 9, "\x07\xc1\x80\xe1\x58\x14\x81", 7, w9);
  expect("[\"numcodecs.packbits\",\"bytes\"]", dtype_of(DT_BOOL), 0, "\0", 1,
         "");
}
END_TEST

/* ---- zarrs.optional ---- */

/* An optional type parsed from its zarr.json form. */
static struct dtype optional_of(const char *inner) {
  char doc[256];
  snprintf(doc, sizeof doc,
           "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"%s\","
           "\"configuration\":{}}}",
           inner);
  json_t *j = json_loads(doc, 0, NULL);
  struct dtype dt;
  struct zerr err = {0};
  ck_assert_int_eq(dtype_parse_v3(j, &dt, &err), 0);
  json_decref(j);
  return dt;
}

static const char OPT[] =
    "[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
    "[{\"name\":\"packbits\"}],\"data_codecs\":[{\"name\":\"bytes\","
    "\"configuration\":{\"endian\":\"little\"}}]}}]";

START_TEST(optional_chunks) {
  struct dtype i16 = optional_of("int16");
  ck_assert_int_eq(i16.kind, DT_OPTIONAL);
  ck_assert_uint_eq(i16.size, 3);
  /* mask 1,0,1 (0x05), present values -2, 7. */
  expect(OPT, i16, 3,
         "\1\0\0\0\0\0\0\0\4\0\0\0\0\0\0\0"
         "\x05"
         "\xfe\xff\x07\x00",
         21, "\xfe\xff\x01\0\0\0\x07\x00\x01");
  /* Nothing present: an empty data section. */
  expect(OPT, i16, 2, "\1\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 17, "\0\0\0\0\0\0");
  /* The legacy name, a gzip-free b2b after it, a float inner type. */
  struct dtype f32 = optional_of("float32");
  expect("[{\"name\":\"optional\",\"configuration\":{\"mask_codecs\":"
         "[\"packbits\"],\"data_codecs\":[{\"name\":\"bytes\","
         "\"configuration\":{\"endian\":\"little\"}}]}},\"crc32c\"]",
         f32, 1,
         "\1\0\0\0\0\0\0\0\4\0\0\0\0\0\0\0\x01\x00\x00\xc0\x3f"
         "\x2c\xda\x2d\x52",
         25, "\x00\x00\xc0\x3f\x01");

  /* Bad chunks and configurations: EIO naming the problem. */
  static const struct {
    const char *json;
    uint64_t n;
    const char *enc;
    size_t len;
    const char *says;
  } bad[] = {
      {OPT, 3, "\1\0\0\0\0\0\0\0", 8, "16-byte header"},
      {OPT, 3, "\1\0\0\0\0\0\0\0\4\0\0\0\0\0\0\0\x05\xfe\xff\x07", 20,
       "do not fill"},
      {OPT, 3, "\xff\xff\xff\xff\xff\xff\xff\xff\2\0\0\0\0\0\0\0\x05", 17,
       "do not fill"},
      {OPT, 3, "\1\0\0\0\0\0\0\0\2\0\0\0\0\0\0\0\x05\xfe\xff", 19,
       "data: bytes: chunk has 2 bytes, expected 4"},
      {OPT, 3, "\2\0\0\0\0\0\0\0\4\0\0\0\0\0\0\0\x05\0\xfe\xff\x07\0", 22,
       "mask: packbits"},
      {OPT, 2, "\1\0\0\0\0\0\0\0\2\0\0\0\0\0\0\0\x00\x01\x02", 19,
       "no value is present"},
      {"[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
       "[\"packbits\"]}}]",
       1, "", 0, "data_codecs"},
      {"[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
       "[\"packbits\"],\"data_codecs\":[\"bytes\"],\"x\":1}}]",
       1, "", 0, "unknown configuration key"},
      {"[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
       "[\"gzip\"],\"data_codecs\":[\"bytes\"]}}]",
       1, "", 0, "mask_codecs: codec 'gzip'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct codec_spec s = tc_spec_1d(i16, bad[i].n);
    struct abytes *a = NULL;
    struct zerr err = {0};
    int rc = decode(bad[i].json, &s, bad[i].enc, bad[i].len, &a, &err);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(a);
    ck_assert_msg(strstr(err.msg, bad[i].says) && strstr(err.msg, "optional"),
                  "case %zu: message '%s' does not say '%s'", i, err.msg,
                  bad[i].says);
  }
  /* The codec on a type that is not optional. */
  struct codec_spec s = tc_spec_1d(dtype_of(DT_UINT8), 1);
  struct abytes *a = NULL;
  struct zerr err = {0};
  ck_assert_int_eq(decode(OPT, &s, "", 0, &a, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "not an optional type"));
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("packbits");
  TCase *tc = tcase_create("packbits");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, hand_computed);
  tcase_add_test(tc, round_trips);
  tcase_add_test(tc, bad_input_table);
  tcase_add_test(tc, numcodecs_packbits);
  tcase_add_test(tc, optional_chunks);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
