/* check_optional.c - `zarrs.optional` over strings and bytes and nested
 * optional types: chunks built here and decoded through the chain (the
 * decoded representation of src/zarr/dtype.h), a table of bad chunks (each
 * EIO with a message naming the problem), data type and fill value
 * parsing. Stores read through the engine:
 * tests/unit/views/check_optional_stores.c; the elements' text:
 * tests/unit/text/check_render.c. The fixed-size path is covered by
 * check_packbits.c, the zarrs fixtures by check_conformance_zarrs.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../codecs/chain.h"
#include "../../../src/util/log.h"
#include "../testchunk.h"
#include "../testutil.h"

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
  struct codec_env env = {1u << 24, NULL, 0};
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

/* The suite. */
static Suite *optional_suite(void) {
  Suite *s = suite_create("optional");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, decode_strings_and_bytes);
  tcase_add_test(tc, decode_nested);
  tcase_add_test(tc, bad_chunks);
  tcase_add_test(tc, mutations);
  tcase_add_test(tc, types_and_fills);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(optional_suite());
}
