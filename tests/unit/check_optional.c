/* check_optional.c - `zarrs.optional` over strings and bytes, nested
 * optional types, and their text: chunks built here and decoded through
 * the chain (the decoded representation of src/zarr/dtype.h), a table of bad
 * chunks (each EIO with a message naming the problem), data type and fill
 * value parsing, and stores built here and read through the engine (null,
 * [null], a present string "null", newlines, hex, missing chunks, empty
 * inner chunks of a shard, ranged reads). The fixed-size path is covered
 * by check_packbits.c, the zarrs fixtures by check_conformance_zarrs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../codecs/chain.h"
#include "../../fs/engine/engine.h"
#include "../../fs/namespace/namespace.h"
#include "../../fs/text/render.h"
#include "../../src/util/log.h"
#include "teststore.h"
#include "testutil.h"

/* ---- building chunks ---- */

/* A growable byte buffer (test only: allocation failure aborts). */
struct bb {
  uint8_t p[4096];
  size_t n;
};

/* Append n bytes. */
static void bb_put(struct bb *b, const void *p, size_t n) {
  ck_assert_uint_le(b->n + n, sizeof b->p);
  memcpy(b->p + b->n, p, n);
  b->n += n;
}

/* Append a little-endian integer of w bytes. */
static void bb_le(struct bb *b, uint64_t v, int w) {
  for (int i = 0; i < w; i++) {
    uint8_t c = (uint8_t)(v >> (8 * i));
    bb_put(b, &c, 1);
  }
}

/* vlen-utf8 / vlen-bytes: u32 count, then u32 length and bytes each. */
static struct bb vlen(int count, const char *const *s) {
  struct bb b = {.n = 0};
  bb_le(&b, (uint64_t)count, 4);
  for (int i = 0; i < count; i++) {
    bb_le(&b, strlen(s[i]), 4);
    bb_put(&b, s[i], strlen(s[i]));
  }
  return b;
}

/* A zarrs.optional chunk: the two lengths, the mask, the data. */
static struct bb opt_chunk(const void *mask, size_t mlen, const void *data,
                           size_t dlen) {
  struct bb b = {.n = 0};
  bb_le(&b, mlen, 8);
  bb_le(&b, dlen, 8);
  bb_put(&b, mask, mlen);
  bb_put(&b, data, dlen);
  return b;
}

/* The codecs of an optional type: packbits mask, data_codecs `data`. */
static void opt_codecs(char *buf, size_t len, const char *data) {
  snprintf(buf, len,
           "[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
           "[{\"name\":\"packbits\"}],\"data_codecs\":%s}}]",
           data);
}

/* A data type from its JSON text. */
static struct dtype dtype_from(const char *json) {
  json_t *j = json_loads(json, JSON_DECODE_ANY, NULL);
  ck_assert_ptr_nonnull(j);
  struct dtype dt;
  struct zerr err = {0};
  ck_assert_msg(dtype_parse_v3(j, &dt, &err) == 0, "%s", err.msg);
  json_decref(j);
  return dt;
}

static const char OPT_STR[] =
    "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"string\","
    "\"configuration\":{}}}";
static const char OPT_BYTES[] =
    "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"bytes\"}}";
static const char OPT_OPT_U8[] =
    "{\"name\":\"optional\",\"configuration\":{\"name\":\"optional\","
    "\"configuration\":{\"name\":\"uint8\",\"configuration\":{}}}}";
static const char OPT_OPT_STR[] =
    "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":"
    "\"zarrs.optional\",\"configuration\":{\"name\":\"string\"}}}";

/* Decode one chunk of n elements of dt with the codecs `json`. */
static int decode(const char *json, struct dtype dt, uint64_t n,
                  const struct bb *enc, struct abytes **out, struct zerr *err) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = n;
  s.nelem = n;
  s.dtype = dt;
  json_t *j = json_loads(json, 0, NULL);
  ck_assert_msg(j != NULL, "bad test JSON %s", json);
  struct chain *c = NULL;
  *out = NULL;
  int rc = chain_build(j, &s, &c, err);
  json_decref(j);
  if (rc < 0)
    return rc;
  struct bytesrc *src = bytesrc_from_static(enc->p, enc->n);
  struct codec_env env = {1u << 24, NULL};
  rc = chain_decode(c, &s, src, &env, out, err);
  bytesrc_unref(src);
  chain_free(c);
  return rc;
}

/* Decode and compare variable-length elements with want[0..n) (lengths
 * given, since they hold NUL and \1 bytes). */
static void expect_var(const char *json, struct dtype dt, const struct bb *enc,
                       uint64_t n, const char *const *want,
                       const size_t *wlen) {
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(decode(json, dt, n, enc, &a, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(a->n, n);
  ck_assert_uint_eq(a->elsize, 0);
  ck_assert_ptr_nonnull(a->data);
  for (uint64_t i = 0; i < n; i++) {
    uint64_t o = a->offsets[i], l = a->offsets[i + 1] - o;
    ck_assert_msg(l == wlen[i], "element %llu: %llu bytes, want %zu",
                  (unsigned long long)i, (unsigned long long)l, wlen[i]);
    uint8_t got[64];
    ck_assert_int_eq(bytesrc_read_range(a->data, o, (size_t)l, got, &err), 0);
    ck_assert_msg(!memcmp(got, want[i], wlen[i]), "element %llu differs",
                  (unsigned long long)i);
  }
  abytes_free(a);
}

/* ---- decoding through the chain ---- */

START_TEST(decode_strings_and_bytes) {
  char codecs[512];
  opt_codecs(codecs, sizeof codecs, "[\"vlen-utf8\"]");
  /* Mask 1,0,1,1,0 (0x0d): "ab", missing, "", "null", missing. */
  static const char *const present[] = {"ab", "", "null"};
  struct bb d = vlen(3, present);
  struct bb c = opt_chunk("\x0d", 1, d.p, d.n);
  static const char *const want[] = {"\1ab", "", "\1", "\1null", ""};
  static const size_t wlen[] = {3, 0, 1, 5, 0};
  expect_var(codecs, dtype_from(OPT_STR), &c, 5, want, wlen);
  /* Nothing present: an empty data section, every element empty. */
  struct bb none = opt_chunk("\0", 1, "", 0);
  static const char *const empty[] = {"", ""};
  static const size_t zero[] = {0, 0};
  expect_var(codecs, dtype_from(OPT_STR), &none, 2, empty, zero);
  /* Optional bytes through vlen-bytes, then a b2b codec around it all. */
  char bcodecs[512];
  opt_codecs(bcodecs, sizeof bcodecs, "[\"vlen-bytes\"]");
  static const char *const raw[] = {"\x01\x02", "\xff"};
  struct bb bd = vlen(2, raw);
  struct bb bc = opt_chunk("\x05", 1, bd.p, bd.n);
  static const char *const bwant[] = {"\1\x01\x02", "", "\1\xff"};
  static const size_t bwlen[] = {3, 0, 2};
  expect_var(bcodecs, dtype_from(OPT_BYTES), &bc, 3, bwant, bwlen);
}
END_TEST

START_TEST(decode_nested) {
  /* zarrs' tests_data/v3/array_optional_nested.zarr chunk c/0/0:
   * None, Some(None), None, Some(Some(5)). */
  static const uint8_t fixture[] = {1, 0, 0, 0, 0,    0, 0, 0, 18, 0, 0, 0,
                                    0, 0, 0, 0, 0x0a, 1, 0, 0, 0,  0, 0, 0,
                                    0, 1, 0, 0, 0,    0, 0, 0, 0,  2, 5};
  struct bb c = {.n = 0};
  bb_put(&c, fixture, sizeof fixture);
  struct dtype dt = dtype_from(OPT_OPT_U8);
  ck_assert_int_eq(dt.kind, DT_OPTIONAL);
  ck_assert_uint_eq(dt.depth, 2);
  ck_assert_uint_eq(dt.size, 3);
  char inner[256], codecs[512];
  opt_codecs(inner, sizeof inner, "[{\"name\":\"bytes\"}]");
  opt_codecs(codecs, sizeof codecs, inner);
  struct abytes *a;
  struct zerr err = {0};
  ck_assert_msg(decode(codecs, dt, 4, &c, &a, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(a->elsize, 3);
  static const uint8_t want[] = {0, 0, 0, 0, 0, 1, 0, 0, 0, 5, 1, 1};
  ck_assert_int_eq(memcmp(a->fixed->mem, want, sizeof want), 0);
  /* The text of each element. */
  static const char *const text[] = {"null", "[null]", "null", "5"};
  for (int i = 0; i < 4; i++) {
    char buf[RENDER_FIXED_MAX];
    size_t n = render_fixed(&dt, a->fixed->mem + 3 * i, buf);
    ck_assert_msg(n == strlen(text[i]) && !memcmp(buf, text[i], n),
                  "element %d: '%.*s'", i, (int)n, buf);
  }
  abytes_free(a);

  /* optional(optional(string)): None, Some(None), Some(Some("x")),
   * Some(Some("")). Outer mask 0b1110, inner mask 0b110 over 3. */
  static const char *const xs[] = {"x", ""};
  struct bb id = vlen(2, xs);
  struct bb ic = opt_chunk("\x06", 1, id.p, id.n);
  struct bb oc = opt_chunk("\x0e", 1, ic.p, ic.n);
  char sinner[256], scodecs[512];
  opt_codecs(sinner, sizeof sinner, "[\"vlen-utf8\"]");
  opt_codecs(scodecs, sizeof scodecs, sinner);
  static const char *const swant[] = {"", "\1", "\1\1x", "\1\1"};
  static const size_t swlen[] = {0, 1, 3, 2};
  struct dtype sdt = dtype_from(OPT_OPT_STR);
  ck_assert_uint_eq(sdt.depth, 2);
  ck_assert_uint_eq(sdt.size, 0);
  ck_assert_int_eq(dtype_has_var_elements(&sdt), 1);
  ck_assert_int_eq(dtype_is_variable(&sdt), 0);
  expect_var(scodecs, sdt, &oc, 4, swant, swlen);
}
END_TEST

/* Bad chunks: EIO (never a crash or wrong bytes), and a message that
 * names the problem. */
START_TEST(bad_chunks) {
  char str[512], str_bytes_mask[512], nested[512], inner[256];
  opt_codecs(str, sizeof str, "[\"vlen-utf8\"]");
  snprintf(str_bytes_mask, sizeof str_bytes_mask,
           "[{\"name\":\"zarrs.optional\",\"configuration\":{\"mask_codecs\":"
           "[{\"name\":\"bytes\"}],\"data_codecs\":[\"vlen-utf8\"]}}]");
  opt_codecs(inner, sizeof inner, "[\"vlen-utf8\"]");
  opt_codecs(nested, sizeof nested, inner);
  static const char *const two[] = {"a", "b"};
  static const char *const three[] = {"a", "b", "c"};
  struct bb v2 = vlen(2, two), v3 = vlen(3, three);
  struct bb corrupt = v2; /* second length runs past the end */
  corrupt.p[9] = 0x40;
  struct bb inner_short = opt_chunk("\x03", 1, v2.p, v2.n);
  inner_short.n -= 1; /* inner chunk one byte short of its header's sum */
  struct bb ok_inner = opt_chunk("\x03", 1, v2.p, v2.n);
  struct bb cut = opt_chunk("\x07", 1, v3.p, v3.n);
  cut.n -= 2; /* the header promises two bytes more */
  struct {
    const char *codecs;
    const char *dtype;
    uint64_t n;
    struct bb enc;
    const char *says;
  } bad[] = {
      /* Header and lengths. */
      {str, OPT_STR, 3, {.p = {1, 0, 0}, .n = 3}, "16-byte header"},
      {str, OPT_STR, 3, cut, "do not fill"},
      /* Consistent lengths, but the data section is cut short. */
      {str, OPT_STR, 3, opt_chunk("\x07", 1, v3.p, v3.n - 1), "data"},
      {str,
       OPT_STR,
       3,
       {.p = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2}, .n = 17},
       "do not fill"},
      /* Mask shorter than the chunk: packbits needs 2 bytes for 12. */
      {str, OPT_STR, 12, opt_chunk("\x07", 1, v3.p, v3.n), "mask: packbits"},
      /* A bytes-encoded mask with 3 of 4 bytes. */
      {str_bytes_mask, OPT_STR, 4, opt_chunk("\1\1\1", 3, v3.p, v3.n),
       "mask: bytes"},
      /* Data count != present values: 3 present, 2 stored, and back. */
      {str, OPT_STR, 3, opt_chunk("\x07", 1, v2.p, v2.n),
       "header says 2 elements, chunk has 3"},
      {str, OPT_STR, 3, opt_chunk("\x03", 1, v3.p, v3.n),
       "header says 3 elements, chunk has 2"},
      /* A corrupt element length inside the data section. */
      {str, OPT_STR, 2, opt_chunk("\x03", 1, corrupt.p, corrupt.n), "data"},
      /* Nothing present, yet data bytes. */
      {str, OPT_STR, 2, opt_chunk("\0", 1, v2.p, v2.n), "no value is present"},
      /* Nested: the inner chunk's lengths lie; the inner mask is short. */
      {nested, OPT_OPT_STR, 2,
       opt_chunk("\x03", 1, inner_short.p, inner_short.n), "do not fill"},
      {nested, OPT_OPT_STR, 2, opt_chunk("\x03", 1, "\0\0", 2),
       "16-byte header"},
      /* The inner optional chunk holds 9 values: its 1-byte mask is
       * short. */
      {nested, OPT_OPT_STR, 9, opt_chunk("\xff\x01", 2, ok_inner.p, ok_inner.n),
       "zarrs.optional data: zarrs.optional mask"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct abytes *a = NULL;
    struct zerr err = {0};
    int rc = decode(bad[i].codecs, dtype_from(bad[i].dtype), bad[i].n,
                    &bad[i].enc, &a, &err);
    if (getenv("ZT_VERBOSE"))
      printf("check_optional: bad case %zu: %s\n", i, err.msg);
    ck_assert_msg(rc == -EIO, "case %zu: rc %d (%s)", i, rc, err.msg);
    ck_assert_ptr_null(a);
    ck_assert_msg(
        strstr(err.msg, bad[i].says) && strstr(err.msg, "zarrs.optional"),
        "case %zu: message '%s' does not say '%s'", i, err.msg, bad[i].says);
  }
}
END_TEST

/* Every truncation and every single-byte change of valid chunks decodes
 * to a well-formed result or fails with EIO; never a crash (ASan build). */
START_TEST(mutations) {
  char str[512], inner[256], nested[512], u8in[256], nested_u8[512];
  opt_codecs(str, sizeof str, "[\"vlen-utf8\"]");
  opt_codecs(inner, sizeof inner, "[\"vlen-utf8\"]");
  opt_codecs(nested, sizeof nested, inner);
  opt_codecs(u8in, sizeof u8in, "[{\"name\":\"bytes\"}]");
  opt_codecs(nested_u8, sizeof nested_u8, u8in);
  static const char *const v[] = {"ab", "", "null"};
  struct bb d = vlen(3, v);
  struct bb ic = opt_chunk("\x0d", 1, d.p, d.n);
  struct bb oc = opt_chunk("\x0f", 1, ic.p, ic.n);
  struct bb ui = opt_chunk("\x05", 1, "\x07\x09", 2);
  struct bb u = opt_chunk("\x0b", 1, ui.p, ui.n);
  struct {
    const char *codecs, *dtype;
    uint64_t n;
    struct bb enc;
  } ok[] = {{str, OPT_STR, 4, opt_chunk("\x0b", 1, d.p, d.n)},
            {nested, OPT_OPT_STR, 4, oc},
            {nested_u8, OPT_OPT_U8, 4, u}};
  static const uint8_t xors[] = {0x01, 0x80, 0xff};
  int decoded = 0, failed = 0;
  for (size_t c = 0; c < sizeof ok / sizeof *ok; c++) {
    struct dtype dt = dtype_from(ok[c].dtype);
    for (size_t pos = 0; pos <= ok[c].enc.n; pos++)
      for (size_t x = 0; x < 4; x++) {
        struct bb m = ok[c].enc;
        if (x == 3)
          m.n = pos; /* truncated */
        else if (pos < m.n)
          m.p[pos] ^= xors[x];
        else
          continue;
        struct abytes *a = NULL;
        struct zerr err = {0};
        int rc = decode(ok[c].codecs, dt, ok[c].n, &m, &a, &err);
        if (rc < 0) {
          ck_assert_msg(rc == -EIO || rc == -EFBIG, "rc %d: %s", rc, err.msg);
          ck_assert_ptr_null(a);
          failed++;
          continue;
        }
        ck_assert_uint_eq(a->n, ok[c].n);
        if (!a->elsize)
          for (uint64_t i = 0; i < a->n; i++)
            ck_assert(a->offsets[i] <= a->offsets[i + 1] &&
                      a->offsets[i + 1] <= a->data->size);
        abytes_free(a);
        decoded++;
      }
  }
  ck_assert_int_gt(decoded, 0);
  ck_assert_int_gt(failed, 0);
}
END_TEST

/* ---- data types and fill values ---- */

/* Parse fill JSON for the data type JSON; the bytes into out. */
static int fill_of(const char *dtype, const char *fill, uint8_t *out,
                   size_t *len, struct zerr *err) {
  struct dtype dt = dtype_from(dtype);
  json_t *j = json_loads(fill, JSON_DECODE_ANY, NULL);
  ck_assert_ptr_nonnull(j);
  uint8_t *p = NULL;
  int rc = dtype_parse_fill(&dt, j, &p, len, err);
  json_decref(j);
  if (rc == 0) {
    ck_assert_uint_le(*len, 64);
    memcpy(out, p, *len);
  }
  free(p);
  return rc;
}

START_TEST(types_and_fills) {
  static const char U8[] =
      "{\"name\":\"zarrs.optional\",\"configuration\":{\"name\":\"uint8\"}}";
  static const struct {
    const char *dtype, *fill;
    const char *bytes;
    size_t len;
  } ok[] = {
      {U8, "null", "\0\0", 2},
      {U8, "7", "\7\1", 2},   /* bare value (earlier writers) */
      {U8, "[7]", "\7\1", 2}, /* zarrs' form */
      {OPT_OPT_U8, "null", "\0\0\0", 3},
      {OPT_OPT_U8, "[null]", "\0\0\1", 3},
      {OPT_OPT_U8, "[[5]]", "\5\1\1", 3},
      {OPT_OPT_U8, "5", "\5\1\1", 3},
      {OPT_STR, "null", "", 0},
      {OPT_STR, "[\"ab\"]", "\1ab", 3},
      {OPT_STR, "\"ab\"", "\1ab", 3},
      {OPT_OPT_STR, "[null]", "\1", 1},
      {OPT_OPT_STR, "[[\"\"]]", "\1\1", 2},
      {OPT_BYTES, "[[1,2]]", "\1\1\2", 3},
      {OPT_BYTES, "[255]", "\1\xff", 2}, /* no valid [x]: bare bytes */
  };
  for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
    uint8_t got[64];
    size_t len;
    struct zerr err = {0};
    ck_assert_msg(fill_of(ok[i].dtype, ok[i].fill, got, &len, &err) == 0,
                  "case %zu: %s", i, err.msg);
    ck_assert_msg(len == ok[i].len && !memcmp(got, ok[i].bytes, len),
                  "case %zu: %zu bytes", i, len);
  }
  static const struct {
    const char *dtype, *fill;
  } bad[] = {
      {U8, "\"x\""}, {U8, "[1,2]"}, {U8, "300"}, {OPT_OPT_U8, "[[[1]]]"}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    uint8_t got[64];
    size_t len;
    struct zerr err = {0};
    ck_assert_msg(fill_of(bad[i].dtype, bad[i].fill, got, &len, &err) == -EIO,
                  "bad case %zu accepted", i);
  }
  /* Eight layers are the most we hold; nine leave the type unsupported. */
  char deep[1024] = "{\"name\":\"uint8\"}";
  for (int layers = 1; layers <= 9; layers++) {
    char t[1100];
    snprintf(t, sizeof t, "{\"name\":\"zarrs.optional\",\"configuration\":%s}",
             deep);
    ck_assert_uint_lt(strlen(t), sizeof deep);
    memcpy(deep, t, strlen(t) + 1);
    struct dtype dt = dtype_from(deep);
    ck_assert_int_eq(dt.kind, layers <= 8 ? DT_OPTIONAL : DT_UNSUPPORTED);
    if (layers <= 8) {
      ck_assert_uint_eq(dt.depth, (unsigned)layers);
      ck_assert_uint_eq(dt.size, 1u + (unsigned)layers);
    }
    if (layers == 8) { /* missing inside seven present layers; present */
      uint8_t el[9] = {42, 0, 1, 1, 1, 1, 1, 1, 1};
      char buf[RENDER_FIXED_MAX];
      size_t n = render_fixed(&dt, el, buf);
      ck_assert_int_eq((int)n, 18);
      ck_assert_int_eq(memcmp(buf, "[[[[[[[null]]]]]]]", 18), 0);
      el[1] = 1;
      n = render_fixed(&dt, el, buf);
      ck_assert_int_eq((int)n, 2);
      ck_assert_int_eq(memcmp(buf, "42", 2), 0);
    }
  }
  /* The inner type of a nested one is one layer less. */
  struct dtype oo = dtype_from(OPT_OPT_STR);
  struct dtype o = dtype_optional_inner(&oo);
  ck_assert_int_eq(o.kind, DT_OPTIONAL);
  ck_assert_uint_eq(o.depth, 1);
  ck_assert_str_eq(o.name, "zarrs.optional(string)");
  ck_assert_int_eq(dtype_optional_inner(&o).kind, DT_STRING);
}
END_TEST

/* ---- stores through the engine ---- */

/* A V3 1-D array document: shape n, chunk c. */
static void put_array(const char *dir, const char *name, int n, int c,
                      const char *dtype, const char *fill, const char *codecs) {
  char doc[4096], key[512];
  snprintf(doc, sizeof doc,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":%s,\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":%s,\"codecs\":%s}",
           n, dtype, c, fill, codecs);
  snprintf(key, sizeof key, "%s/zarr.json", name);
  ts_put_file(dir, key, doc, strlen(doc));
}

/* The view's text equals want, whole and in 1- and 3-byte reads. */
static void expect_view(struct engine *e, const char *path, const char *want) {
  static const size_t steps[] = {1 << 16, 1, 3};
  for (size_t k = 0; k < 3; k++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, path, steps[k], &err);
    ck_assert_msg(got != NULL, "%s: %s", path, err.msg);
    ck_assert_msg(!strcmp(got, want), "%s (step %zu):\n%s\nwant:\n%s", path,
                  steps[k], got, want);
    free(got);
  }
}

START_TEST(stores_through_engine) {
  char dir[] = "/tmp/check_optional.XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  ts_put_file(dir, "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}",
              37);
  char codecs[512], bcodecs[512];
  opt_codecs(codecs, sizeof codecs, "[\"vlen-utf8\"]");
  opt_codecs(bcodecs, sizeof bcodecs, "[\"vlen-bytes\"]");

  /* Optional strings: "ab", null, "null", "x\ny", "" in chunk 0; chunk 1
   * missing (fill null). */
  put_array(dir, "s", 8, 5, OPT_STR, "null", codecs);
  static const char *const sv[] = {"ab", "null", "x\ny", ""};
  struct bb sd = vlen(4, sv);
  struct bb sc = opt_chunk("\x1d", 1, sd.p, sd.n);
  ts_put_file(dir, "s/c/0", sc.p, sc.n);
  /* The same with a present fill "null" (zarrs' [x] form) for the missing
   * chunk: escaped like a stored "null". */
  put_array(dir, "sf", 7, 5, OPT_STR, "[\"null\"]", codecs);
  ts_put_file(dir, "sf/c/0", sc.p, sc.n);
  /* Present strings that read as missing or start with the escape, next
   * to a missing value and look-alikes that are left as they are. */
  put_array(dir, "esc", 10, 10, OPT_STR, "null", codecs);
  static const char *const ev[] = {"\\x",   "[null]", "null",
                                   "nul",   "\\null", "[[null]]",
                                   "[null", "null]",  ""};
  struct bb ed = vlen(9, ev);
  struct bb ec = opt_chunk("\xf7\x03", 2, ed.p, ed.n);
  ts_put_file(dir, "esc/c/0", ec.p, ec.n);
  /* Optional bytes: hex, null. */
  put_array(dir, "b", 3, 3, OPT_BYTES, "null", bcodecs);
  static const char *const bv[] = {"\x01\xab", ""};
  struct bb bd = vlen(2, bv);
  struct bb bc = opt_chunk("\x05", 1, bd.p, bd.n);
  ts_put_file(dir, "b/c/0", bc.p, bc.n);
  /* optional(optional(string)), fill Some(None): the missing chunk shows
   * [null]. */
  char inner[256], ncodecs[512];
  opt_codecs(inner, sizeof inner, "[\"vlen-utf8\"]");
  opt_codecs(ncodecs, sizeof ncodecs, inner);
  put_array(dir, "n", 6, 3, OPT_OPT_STR, "[null]", ncodecs);
  static const char *const nv[] = {"null"};
  struct bb nd = vlen(1, nv);
  struct bb nic = opt_chunk("\x02", 1, nd.p, nd.n);
  struct bb noc = opt_chunk("\x06", 1, nic.p, nic.n);
  ts_put_file(dir, "n/c/0", noc.p, noc.n);
  /* Sharded: one shard of two inner chunks of 2; the second is empty. */
  char sh[1024];
  snprintf(sh, sizeof sh,
           "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":"
           "[2],\"codecs\":%s,\"index_codecs\":[{\"name\":\"bytes\","
           "\"configuration\":{\"endian\":\"little\"}}],\"index_location\":"
           "\"end\"}}]",
           codecs);
  put_array(dir, "sh", 4, 4, OPT_STR, "null", sh);
  static const char *const shv[] = {"q"};
  struct bb shd = vlen(1, shv);
  struct bb shc = opt_chunk("\x02", 1, shd.p, shd.n);
  struct bb shard = shc;
  bb_le(&shard, 0, 8);
  bb_le(&shard, shc.n, 8);
  bb_le(&shard, UINT64_MAX, 8);
  bb_le(&shard, UINT64_MAX, 8);
  ts_put_file(dir, "sh/c/0", shard.p, shard.n);
  /* A string codec straight on an optional type, and a corrupt chunk. */
  put_array(dir, "wrong", 2, 2, OPT_STR, "null", "[\"vlen-utf8\"]");
  ts_put_file(dir, "wrong/c/0", sd.p, sd.n);
  put_array(dir, "corrupt", 3, 3, OPT_STR, "null", codecs);
  struct bb cc = opt_chunk("\x07", 1, sd.p, sd.n);
  ts_put_file(dir, "corrupt/c/0", cc.p, cc.n);

  struct engine *e = ts_open_engine(dir);
  expect_view(e, "/s/values.txt",
              "ab\nnull\n\\null\nx y\n\nnull\nnull\nnull\n");
  expect_view(e, "/s/c/0.txt", "ab\nnull\n\\null\nx y\n\n");
  expect_view(e, "/sf/values.txt", "ab\nnull\n\\null\nx y\n\n\\null\n\\null\n");
  expect_view(e, "/esc/values.txt",
              "\\\\x\n\\[null]\n\\null\nnull\nnul\n\\\\null\n\\[[null]]\n"
              "[null\nnull]\n\n");
  expect_view(e, "/b/values.txt", "01ab\nnull\n\n");
  expect_view(e, "/n/values.txt",
              "null\n[null]\n\\null\n[null]\n[null]\n[null]\n");
  expect_view(e, "/sh/values.txt", "null\nq\nnull\nnull\n");
  static const char *const broken[] = {"/wrong/values.txt",
                                       "/corrupt/values.txt"};
  static const char *const says[] = {"not variable-length",
                                     "header says 4 elements, chunk has 3"};
  for (int i = 0; i < 2; i++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, broken[i], 1 << 16, &err);
    ck_assert_ptr_null(got);
    ck_assert_msg(strstr(err.msg, says[i]), "%s: %s", broken[i], err.msg);
  }
  engine_free(e);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The suite. */
static Suite *optional_suite(void) {
  Suite *s = suite_create("optional");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, decode_strings_and_bytes);
  tcase_add_test(tc, decode_nested);
  tcase_add_test(tc, bad_chunks);
  tcase_add_test(tc, mutations);
  tcase_add_test(tc, types_and_fills);
  tcase_add_test(tc, stores_through_engine);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(optional_suite());
}
