/* check_packbits.c - the `packbits` and `numcodecs.packbits` codecs, and
 * `zarrs.optional` (whose mask zarrs packs with packbits):
 * hand-computed chunks for every kind of component, round trips against
 * a reference packer written here for random types, bit ranges and
 * padding encodings, a table of bad configurations and bad chunks (each
 * EIO with a message naming the problem), stores built here and read
 * through the engine (V3 packbits, a V2 packbits filter, and the new data
 * types with the bytes codec), and the zarrs snapshot stores that use
 * packbits or zarrs.optional, compared with the values of zarrs/EXPECTED.md
 * sections 1 and 3. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../codecs/chain.h"
#include "../../codecs/codec.h"
#include "../../fs/engine/engine.h"
#include "../../fs/namespace/namespace.h"
#include "../../src/util/log.h"
#include "testcodec.h"
#include "teststore.h"
#include "testutil.h"

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
  struct codec_env env = {1u << 26, NULL};
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

/* ---- stores read through the engine ---- */

/* A V3 array document: 1-D shape n, one chunk of c. */
static void put_array(const char *dir, const char *name, int n, int c,
                      const char *dtype, const char *fill, const char *codecs) {
  char doc[2048], key[512];
  snprintf(doc, sizeof doc,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":%s,\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":%s,\"codecs\":%s}",
           n, dtype, c, fill, codecs);
  snprintf(key, sizeof key, "%s/zarr.json", name);
  ts_put_file(dir, key, doc, strlen(doc));
}

START_TEST(stores_through_engine) {
  char dir[] = "/tmp/check_packbits.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ts_put_file(dir, "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}",
              37);
  /* int4 packed, first_byte padding; chunk 1 missing (fill -3). */
  put_array(dir, "i4", 6, 3, "\"int4\"", "-3",
            "[{\"name\":\"packbits\",\"configuration\":{\"padding_encoding\":"
            "\"first_byte\"}}]");
  ts_put_file(dir, "i4/c/0", "\x04\x78\x0f", 3);
  /* uint2 with the bytes codec: one byte per element (as zarrs stores). */
  put_array(dir, "u2", 3, 3, "\"uint2\"", "0", "[\"bytes\"]");
  ts_put_file(dir, "u2/c/0", "\x03\x00\x02", 3);
  /* complex64, complex128, bfloat16, timedelta64 with bytes. */
  put_array(dir, "c8", 3, 3, "\"complex64\"", "[\"NaN\",\"-Infinity\"]",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}]");
  ts_put_file(dir, "c8/c/0",
              "\x3f\x80\x00\x00\x40\x00\x00\x00"
              "\x3f\x00\x00\x00\xbf\xc0\x00\x00"
              "\x80\x00\x00\x00\x80\x00\x00\x00",
              24);
  put_array(dir, "c16", 2, 1, "\"complex128\"", "[0.25,\"0x7ff0000000000000\"]",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]");
  ts_put_file(dir, "c16/c/0", "\0\0\0\0\0\0\xf8\x3f\0\0\0\0\0\0\0\0",
              16); /* 1.5 + 0j */
  put_array(dir, "bf", 2, 2, "\"bfloat16\"", "\"0x7fc0\"",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]");
  ts_put_file(dir, "bf/c/0", "\xcd\x3d\x80\xbf", 4); /* 0.1, -1 */
  put_array(dir, "td", 4, 4,
            "{\"name\":\"numpy.timedelta64\",\"configuration\":{\"unit\":"
            "\"ms\",\"scale_factor\":1}}",
            "\"NaT\"",
            "[{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}]");
  int64_t td[4] = {93784007, -1500, 0, INT64_MIN};
  ts_put_file(dir, "td/c/0", td, sizeof td);
  /* raw bytes (r24, raw_bytes) and null_terminated_bytes: hex. */
  put_array(dir, "r24", 3, 2, "\"r24\"", "[1,2,255]", "[\"bytes\"]");
  ts_put_file(dir, "r24/c/0", "\0\0\0\xab\x00\xcd", 6);
  put_array(dir, "rb", 2, 2,
            "{\"name\":\"raw_bytes\",\"configuration\":{\"length_bytes\":2}}",
            "\"AAE=\"", "[\"bytes\"]");
  ts_put_file(dir, "rb/c/0", "\x10\x00\x00\x00", 4);
  put_array(dir, "nt", 3, 3,
            "{\"name\":\"null_terminated_bytes\",\"configuration\":"
            "{\"length_bytes\":3}}",
            "\"YQ==\"", "[\"bytes\"]");
  ts_put_file(dir, "nt/c/0", "ab\0\0\0\0a\0b", 9);
  /* V2: bool with the numcodecs packbits filter, zlib-free; and <c8. */
  const char v2[] = "{\"zarr_format\":2,\"shape\":[10],\"chunks\":[10],"
                    "\"dtype\":\"|b1\",\"fill_value\":false,\"order\":\"C\","
                    "\"filters\":[{\"id\":\"packbits\"}],\"compressor\":null}";
  ts_put_file(dir, "v2b/.zarray", v2, strlen(v2));
  ts_put_file(dir, "v2b/0", "\x06\x81\xc0", 3); /* 1000 0001 11 */
  const char v2c[] = "{\"zarr_format\":2,\"shape\":[1],\"chunks\":[1],"
                     "\"dtype\":\">c8\",\"fill_value\":[\"NaN\",0],"
                     "\"order\":\"C\",\"filters\":null,\"compressor\":null}";
  ts_put_file(dir, "v2c/.zarray", v2c, strlen(v2c));
  ts_put_file(dir, "v2c/0", "\xbf\x80\x00\x00\x00\x00\x00\x00", 8);
  const char v2m[] = "{\"zarr_format\":2,\"shape\":[3],\"chunks\":[3],"
                     "\"dtype\":\"<m8[s]\",\"fill_value\":null,"
                     "\"order\":\"C\",\"filters\":null,\"compressor\":null}";
  ts_put_file(dir, "v2m/.zarray", v2m, strlen(v2m));
  int64_t m8[3] = {90061, 59, -86400};
  ts_put_file(dir, "v2m/0", m8, sizeof m8);
  const char v2v[] = "{\"zarr_format\":2,\"shape\":[2],\"chunks\":[2],"
                     "\"dtype\":\"|V3\",\"fill_value\":\"AAAA\","
                     "\"order\":\"C\",\"filters\":null,\"compressor\":null}";
  ts_put_file(dir, "v2v/.zarray", v2v, strlen(v2v));
  ts_put_file(dir, "v2v/0", "\x00\x01\x02\xfd\xfe\xff", 6);

  static const struct {
    const char *path, *want;
  } t[] = {
      {"/i4/values.txt", "-8\n7\n-1\n-3\n-3\n-3\n"},
      {"/i4/c/0.txt", "-8\n7\n-1\n"},
      {"/u2/values.txt", "3\n0\n2\n"},
      {"/c8/values.txt", "1+2j\n0.5-1.5j\n-0-0j\n"},
      {"/c16/values.txt", "1.5+0j\n0.25+infj\n"},
      {"/bf/values.txt", "0.1\n-1\n"},
      {"/td/values.txt", "P1DT2H3M4.007S\n-PT1.5S\nPT0S\nNaT\n"},
      {"/r24/values.txt", "000000\nab00cd\n0102ff\n"},
      {"/rb/values.txt", "1000\n0000\n"},
      {"/nt/values.txt", "6162\n\n610062\n"},
      {"/v2b/values.txt", "true\nfalse\nfalse\nfalse\nfalse\nfalse\nfalse\n"
                          "true\ntrue\ntrue\n"},
      {"/v2c/values.txt", "-1+0j\n"},
      {"/v2m/values.txt", "P1DT1H1M1S\nPT59S\n-P1D\n"},
      {"/v2v/values.txt", "000102\nfdfeff\n"},
  };
  struct engine *e = ts_open_engine(dir);
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, t[i].path, 1 << 16, &err);
    ck_assert_msg(got != NULL, "%s: %s", t[i].path, err.msg);
    ck_assert_msg(!strcmp(got, t[i].want), "%s: got '%s', want '%s'", t[i].path,
                  got, t[i].want);
    free(got);
  }
  engine_free(e);
  /* A corrupt packed chunk is an EIO for that view, not wrong values. */
  ts_put_file(dir, "i4/c/1", "\x09\x00\x00", 3);
  e = ts_open_engine(dir);
  struct zerr err = {0};
  char *got = ts_view_text(e, "/i4/c/1.txt", 1 << 16, &err);
  ck_assert_ptr_null(got);
  ck_assert_int_eq(err.code, EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "padding byte says 9"));
  engine_free(e);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* ---- the zarrs snapshots (EXPECTED.md section 1) ---- */

/* Expected text of the 8x24 snapshot array of dtype dir dt. */
static char *snapshot_text(const char *dt) {
  char *out = malloc(192 * 16), *p = out;
  for (int i = 0; i < 192; i++) {
    if (!strcmp(dt, "bool"))
      p += sprintf(p, "%s\n", i % 2 ? "true" : "false");
    else if (!strcmp(dt, "uint8"))
      p += sprintf(p, "%d\n", i % 256);
    else if (!strcmp(dt, "float32") || !strcmp(dt, "float64"))
      p += sprintf(p, "%g\n", i * 0.5);
    else /* uint16, int32 */
      p += sprintf(p, "%d\n", i);
  }
  return out;
}

START_TEST(zarrs_snapshots) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  static const char *const dts[] = {"bool",  "uint8",   "uint16",
                                    "int32", "float32", "float64"};
  int stores = 0;
  for (size_t d = 0; d < sizeof dts / sizeof *dts; d++) {
    char base[4200];
    snprintf(base, sizeof base,
             "%s/zarrs/snapshots/supported/regular/%s/a2b/packbits", fx,
             dts[d]);
    DIR *dir = opendir(base);
    ck_assert_msg(dir != NULL, "%s missing", base);
    char *want = snapshot_text(dts[d]);
    struct dirent *de;
    while ((de = readdir(dir))) {
      if (de->d_name[0] == '.')
        continue;
      char sp[4500];
      snprintf(sp, sizeof sp, "%s/%s", base, de->d_name);
      struct engine *e = ts_open_engine(sp);
      struct zerr err = {0};
      char *got = ts_view_text(e, "/values.txt", 1 << 16, &err);
      ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
      ck_assert_msg(!strcmp(got, want), "%s: values differ", sp);
      free(got);
      got = ts_view_text(e, "/c/1/3.txt", 1 << 16,
                         &err); /* rows 4..7, cols 18..23 */
      ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
      char *line = got;
      for (int r = 4; r < 8; r++)
        for (int c = 18; c < 24; c++) {
          char *nl = strchr(line, '\n');
          ck_assert_ptr_nonnull(nl);
          const char *w = want;
          for (int k = 0; k < r * 24 + c; k++)
            w = strchr(w, '\n') + 1;
          ck_assert_msg(!strncmp(line, w, (size_t)(nl - line + 1)),
                        "%s: c/1/3 element (%d,%d)", sp, r, c);
          line = nl + 1;
        }
      ck_assert_str_eq(line, "");
      free(got);
      engine_free(e);
      stores++;
    }
    closedir(dir);
    free(want);
  }
  printf("check_packbits: %d zarrs packbits snapshot stores match\n", stores);
  ck_assert_int_ge(stores, 8);
}
END_TEST

START_TEST(zarrs_optional_stores) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  /* EXPECTED.md section 1: null when i % 4 == 3, else i % 256. */
  char *want = malloc(192 * 8), *p = want;
  for (int i = 0; i < 192; i++)
    p += i % 4 == 3 ? sprintf(p, "null\n") : sprintf(p, "%d\n", i % 256);
  static const char *const sets[] = {"a2b", "a2a", "b2b"};
  int stores = 0, refused = 0, without = 0;
  for (size_t k = 0; k < 3; k++) {
    char base[4200];
    snprintf(base, sizeof base,
             "%s/zarrs/snapshots/supported/regular/zarrs.optional(uint8)/%s",
             fx, sets[k]);
    DIR *codecs = opendir(base);
    ck_assert_msg(codecs != NULL, "%s missing", base);
    struct dirent *cd;
    while ((cd = readdir(codecs))) {
      if (cd->d_name[0] == '.')
        continue;
      char cdir[4500];
      snprintf(cdir, sizeof cdir, "%s/%s", base, cd->d_name);
      DIR *ids = opendir(cdir);
      ck_assert_ptr_nonnull(ids);
      struct dirent *id;
      while ((id = readdir(ids))) {
        if (id->d_name[0] == '.')
          continue;
        char sp[4800];
        snprintf(sp, sizeof sp, "%s/%s", cdir, id->d_name);
        struct engine *e = ts_open_engine(sp);
        struct zerr err = {0};
        char *got = ts_view_text(e, "/values.txt", 1 << 16, &err);
        if (!got && testutil_is_without(err.msg)) { /* main said so */
          without++;
          engine_free(e);
          continue;
        }
        if (strstr(cd->d_name, "gdeflate")) { /* not supported: refused */
          ck_assert_ptr_null(got);
          ck_assert_ptr_nonnull(strstr(err.msg, "unsupported codec"));
          refused++;
        } else {
          ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
          ck_assert_msg(!strcmp(got, want), "%s: values differ", sp);
          stores++;
        }
        free(got);
        engine_free(e);
      }
      closedir(ids);
    }
    closedir(codecs);
  }
  free(want);
  printf("check_packbits: %d zarrs.optional(uint8) stores match, %d refused\n",
         stores, refused);
  ck_assert_int_ge(stores + without, 11);
  ck_assert_int_eq(refused, 1);

  /* tests_data: the legacy `optional` name, a missing chunk (fill null);
   * the nested optional (Some(None) shown as [null]) and an optional
   * string store (check_optional.c and check_conformance_zarrs.c test
   * them in full). */
  char sp[4200];
  snprintf(sp, sizeof sp, "%s/zarrs/tests_data/v3/array_optional.zarr", fx);
  struct engine *e = ts_open_engine(sp);
  struct zerr err = {0};
  char *got = ts_view_text(e, "/array/values.txt", 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
  ck_assert_str_eq(got, "0\nnull\n2\n3\nnull\n5\nnull\n7\n8\n9\nnull\nnull\n"
                        "12\nnull\nnull\nnull\n");
  free(got);
  engine_free(e);
  snprintf(sp, sizeof sp, "%s/zarrs/tests_data/v3/array_optional_nested.zarr",
           fx);
  e = ts_open_engine(sp);
  got = ts_view_text(e, "/array/values.txt", 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
  ck_assert_str_eq(got, "null\n[null]\n2\n3\nnull\n5\nnull\n7\n[null]\n"
                        "[null]\nnull\nnull\n[null]\n[null]\nnull\nnull\n");
  free(got);
  engine_free(e);
  snprintf(sp, sizeof sp,
           "%s/zarrs/snapshots/supported/regular/zarrs.optional(string)/a2b/"
           "zarrs.optional/a7bd47f9d1021087",
           fx);
  e = ts_open_engine(sp);
  got = ts_view_text(e, "/values.txt", 1 << 16, &err);
  ck_assert_msg(got != NULL, "%s: %s", sp, err.msg);
  ck_assert_int_eq(strncmp(got, "str_0000\nstr_0001\nstr_0002\nnull\n", 32), 0);
  free(got);
  engine_free(e);
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
  tcase_add_test(tc, stores_through_engine);
  tcase_add_test(tc, optional_chunks);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 120);
  tcase_add_test(fx, zarrs_snapshots);
  tcase_add_test(fx, zarrs_optional_stores);
  testutil_add_fixture_tcase(s, fx, "check_packbits");
  if (*ZFS_WITHOUT && testutil_fixtures())
    testutil_skip_without("check_packbits", ZFS_WITHOUT,
                          "the fixture stores that need it");
  return testutil_run(s);
}
