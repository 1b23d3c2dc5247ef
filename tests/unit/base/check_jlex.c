/* check_jlex.c - unit tests of the JSON lexer (src/json/jlex.c) and the shared
 * text codings (src/util/utf8.c): strings (escapes, surrogate pairs, lone
 * surrogates with and without the relaxation, UTF-8, control characters),
 * decoding, numbers (grammar, the 64-bit boundary, NaN and Infinity),
 * whole values (literals, nesting to the limit and past it), member walks,
 * the end of the text (a NUL byte is not the end), and UTF-8 encoding,
 * checking and decoding at every boundary. */
#include <stdlib.h>
#include <string.h>

#include "../../../src/json/jlex.h"
#include "../../../src/util/utf8.h"
#include "../testutil.h"

/* Lex one string token text (with its quotes) with flags: 0 and the
 * decoded bytes in out (*n), or the error. */
static int lex_string(const char *text, unsigned flags, char *out, size_t *n,
                      struct zerr *err) {
  struct jlex l;
  jlex_init(&l, text, strlen(text), flags, err);
  struct jlex_str s;
  int rc = jlex_string(&l, &s);
  if (rc == 0) {
    ck_assert_msg(l.p == l.end, "%s: stopped early", text);
    *n = jlex_unescape(&s, out);
    ck_assert_uint_le(*n, s.len);
  }
  return rc;
}

START_TEST(strings) {
  static const struct {
    const char *text;
    unsigned flags;
    const char *want; /* decoded, or NULL: refused */
    size_t want_len;
    const char *msg; /* part of the refusal */
  } t[] = {
      {"\"\"", 0, "", 0, NULL},
      {"\"plain ascii\"", 0, "plain ascii", 11, NULL},
      {"\"q\\\"\\\\\\/\\b\\f\\n\\r\\t\"", 0, "q\"\\/\b\f\n\r\t", 9, NULL},
      {"\"\\u00e9\\u20AC\"", 0, "\xc3\xa9\xe2\x82\xac", 5, NULL},
      {"\"\\ud83d\\ude00\"", 0, "\xf0\x9f\x98\x80", 4, NULL},
      {"\"a\\u0000b\"", 0, "a\0b", 3, NULL},
      {"\"\xc3\xa9\xf0\x9f\x98\x80\"", 0, "\xc3\xa9\xf0\x9f\x98\x80", 6, NULL},
      /* lone surrogates: refused strictly, U+FFFD when relaxed */
      {"\"\\ud800x\"", 0, NULL, 0, "surrogate"},
      {"\"\\udc00\"", 0, NULL, 0, "surrogate"},
      {"\"\\ud800\\u0041\"", 0, NULL, 0, "surrogate"},
      {"\"\\ud800x\"", JLEX_LONE_SURROGATE, "\xef\xbf\xbdx", 4, NULL},
      {"\"\\udc00\\ud800\"", JLEX_LONE_SURROGATE, "\xef\xbf\xbd\xef\xbf\xbd", 6,
       NULL},
      /* bad escapes, control characters, bad UTF-8, no end */
      {"\"\\x\"", 0, NULL, 0, "invalid escape"},
      {"\"\\u12\"", 0, NULL, 0, "\\u escape"},
      {"\"\\u12G4\"", 0, NULL, 0, "\\u escape"},
      {"\"a\nb\"", 0, NULL, 0, "control character"},
      {"\"\xc0\x80\"", 0, NULL, 0, "UTF-8"},         /* overlong NUL */
      {"\"\xed\xa0\x80\"", 0, NULL, 0, "UTF-8"},     /* raw surrogate */
      {"\"\xf4\x90\x80\x80\"", 0, NULL, 0, "UTF-8"}, /* beyond U+10FFFF */
      {"\"\xe2\x82\"", 0, NULL, 0, "UTF-8"},         /* cut short */
      {"\"\x80\"", 0, NULL, 0, "UTF-8"},
      {"\"abc", 0, NULL, 0, "unterminated"},
      {"\"abc\\", 0, NULL, 0, "unterminated"},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char out[64];
    size_t n = 0;
    struct zerr err = {0};
    int rc = lex_string(t[i].text, t[i].flags, out, &n, &err);
    if (t[i].want) {
      ck_assert_msg(rc == 0, "case %zu: %s", i, err.msg);
      ck_assert_msg(n == t[i].want_len && !memcmp(out, t[i].want, n),
                    "case %zu: %zu bytes", i, n);
      ck_assert_int_eq(out[n], 0);
    } else {
      ck_assert_msg(rc == -EIO, "case %zu: rc %d", i, rc);
      ck_assert_msg(strstr(err.msg, t[i].msg) &&
                        strstr(err.msg, "not valid JSON"),
                    "case %zu: '%s' lacks '%s'", i, err.msg, t[i].msg);
    }
  }
}
END_TEST

/* jlex_string_dup grows one buffer across calls. */
START_TEST(string_dup_reuses) {
  const char *text = "\"short\" \"a much longer string than the first one\"";
  struct jlex l;
  struct zerr err = {0};
  jlex_init(&l, text, strlen(text), 0, &err);
  char *buf = NULL;
  size_t cap = 0, n;
  ck_assert_int_eq(jlex_string_dup(&l, &buf, &cap, &n), 0);
  ck_assert_str_eq(buf, "short");
  jlex_ws(&l);
  ck_assert_int_eq(jlex_string_dup(&l, &buf, &cap, &n), 0);
  ck_assert_str_eq(buf, "a much longer string than the first one");
  ck_assert_uint_eq(n, strlen(buf));
  ck_assert_int_eq(jlex_at_end(&l), 1);
  free(buf);
}
END_TEST

START_TEST(numbers) {
  static const struct {
    const char *text;
    unsigned flags;
    int ok, integer, neg, nonfinite, fits;
    uint64_t mag;
    size_t len; /* the token's length */
  } t[] = {
      {"0", 0, 1, 1, 0, 0, 1, 0, 1},
      {"-0", 0, 1, 1, 1, 0, 1, 0, 2},
      {"42,", 0, 1, 1, 0, 0, 1, 42, 2},
      {"18446744073709551615", 0, 1, 1, 0, 0, 1, UINT64_MAX, 20},
      {"18446744073709551616", 0, 1, 1, 0, 0, 0, 0, 20},
      {"-9223372036854775808", 0, 1, 1, 1, 0, 1, 9223372036854775808ull, 20},
      {"1.5", 0, 1, 0, 0, 0, 0, 0, 3},
      {"-2e-3]", 0, 1, 0, 1, 0, 0, 0, 5},
      {"1E+10", 0, 1, 0, 0, 0, 0, 0, 5},
      {"NaN", JLEX_NONFINITE, 1, 0, 0, 1, 0, 0, 3},
      {"-Infinity", JLEX_NONFINITE, 1, 0, 1, 1, 0, 0, 9},
      {"Infinity", JLEX_NONFINITE, 1, 0, 0, 1, 0, 0, 8},
      {"NaN", 0, 0, 0, 0, 0, 0, 0, 0},
      {"-NaN", JLEX_NONFINITE, 0, 0, 0, 0, 0, 0, 0},
      {"01", 0, 0, 0, 0, 0, 0, 0, 0},
      {"1.", 0, 0, 0, 0, 0, 0, 0, 0},
      {"1e", 0, 0, 0, 0, 0, 0, 0, 0},
      {"-", 0, 0, 0, 0, 0, 0, 0, 0},
      {".5", 0, 0, 0, 0, 0, 0, 0, 0},
      {"+1", 0, 0, 0, 0, 0, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    struct jlex l;
    struct zerr err = {0};
    jlex_init(&l, t[i].text, strlen(t[i].text), t[i].flags, &err);
    struct jlex_num n;
    int rc = jlex_number(&l, &n);
    if (!t[i].ok) {
      ck_assert_msg(rc == -EIO, "case %zu (%s): accepted", i, t[i].text);
      continue;
    }
    ck_assert_msg(rc == 0, "case %zu: %s", i, err.msg);
    ck_assert_msg(n.integer == t[i].integer && n.neg == t[i].neg &&
                      n.nonfinite == t[i].nonfinite &&
                      n.fits_u64 == t[i].fits && n.len == t[i].len &&
                      n.text == t[i].text,
                  "case %zu (%s)", i, t[i].text);
    if (t[i].fits)
      ck_assert_msg(n.mag == t[i].mag, "case %zu", i);
    ck_assert_ptr_eq(l.p, t[i].text + t[i].len);
  }
}
END_TEST

/* Whole values: what jlex_skip accepts as one complete document. */
static int whole(const char *text, size_t len, unsigned flags) {
  struct jlex l;
  struct zerr err = {0};
  jlex_init(&l, text, len, flags, &err);
  return jlex_skip(&l) == 0 && jlex_at_end(&l);
}

START_TEST(values) {
  static const struct {
    const char *text;
    unsigned flags;
    int ok;
  } t[] = {
      {"true", 0, 1},
      {" false ", 0, 1},
      {"null", 0, 1},
      {"[]", 0, 1},
      {"{}", 0, 1},
      {"{\"a\": [1, {\"b\": null}], \"c\": \"}\"}", 0, 1},
      {"[1, 2,]", 0, 0},
      {"[1 2]", 0, 0},
      {"{\"a\" 1}", 0, 0},
      {"{1: 2}", 0, 0},
      {"{\"a\": 1,}", 0, 0},
      {"[", 0, 0},
      {"tru", 0, 0},
      {"nul", 0, 0},
      {"[NaN]", 0, 0},
      {"[NaN, -Infinity]", JLEX_NONFINITE, 1},
      {"1 2", 0, 0},
      {"", 0, 0},
      {"   ", 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    ck_assert_msg(whole(t[i].text, strlen(t[i].text), t[i].flags) == t[i].ok,
                  "case %zu: %s", i, t[i].text);
  /* A NUL byte after the value is text, not the end. */
  ck_assert_int_eq(whole("{}\0", 3, 0), 0);
  ck_assert_int_eq(whole("{}", 3 - 1, 0), 1);
  /* Nesting: the limit is accepted, one more refused. */
  for (int extra = 0; extra <= 1; extra++) {
    size_t depth = JLEX_MAX_DEPTH + (size_t)extra;
    char *deep = malloc(2 * depth);
    memset(deep, '[', depth);
    memset(deep + depth, ']', depth);
    struct jlex l;
    struct zerr err = {0};
    jlex_init(&l, deep, 2 * depth, 0, &err);
    int rc = jlex_skip(&l);
    if (extra) {
      ck_assert_int_eq(rc, -EIO);
      ck_assert_ptr_nonnull(strstr(err.msg, "nested too deeply"));
    } else {
      ck_assert_int_eq(rc, 0);
    }
    free(deep);
  }
}
END_TEST

/* Walking members: keys decoded, values skipped, the brackets eaten. */
START_TEST(walks) {
  const char *text = "{\"k\\u0031\": [1, [2]], \"k2\": {}} [] {\"x\": }";
  struct jlex l;
  struct zerr err = {0};
  jlex_init(&l, text, strlen(text), 0, &err);
  int more = jlex_open(&l, '{');
  const char *want[] = {"k1", "k2"};
  size_t k = 0;
  while (more > 0) {
    struct jlex_str key;
    ck_assert_int_eq(jlex_key(&l, &key), 0);
    char out[16];
    jlex_unescape(&key, out);
    ck_assert_str_eq(out, want[k++]);
    ck_assert_int_eq(jlex_skip(&l), 0);
    more = jlex_next(&l, '{');
  }
  ck_assert_int_eq(more, 0);
  ck_assert_uint_eq(k, 2);
  ck_assert_int_eq(jlex_open(&l, '['), 0); /* empty, and closed */
  ck_assert_int_eq(jlex_open(&l, '{'), 1);
  ck_assert_int_eq(jlex_key(&l, NULL), 0);
  ck_assert_int_eq(jlex_skip(&l), -EIO); /* a value is missing */
  ck_assert_ptr_nonnull(strstr(err.msg, "invalid value"));
  /* the line of the failure is named */
  jlex_init(&l, "{\n\n  x", 6, 0, &err);
  ck_assert_int_eq(jlex_open(&l, '{'), 1);
  ck_assert_int_eq(jlex_key(&l, NULL), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "(line 3)"));
}
END_TEST

START_TEST(utf8_codings) {
  /* every length boundary, encoded, checked and decoded back */
  static const uint32_t cps[] = {0,      0x7f,    0x80,    0x7ff,
                                 0x800,  0xd7ff,  0xe000,  0xfffd,
                                 0xffff, 0x10000, 0x1f600, 0x10ffff};
  static const size_t lens[] = {1, 1, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4};
  for (size_t i = 0; i < sizeof cps / sizeof *cps; i++) {
    uint8_t b[UTF8_MAX];
    size_t n = utf8_put(b, cps[i]);
    ck_assert_uint_eq(n, lens[i]);
    ck_assert_uint_eq(utf8_valid(b, b + n), n);
    ck_assert_uint_eq(utf8_valid(b, b + n - 1), n == 1 ? 1 : 0);
    const uint8_t *p = b;
    ck_assert_uint_eq(utf8_next(&p, b + n), cps[i]);
    ck_assert_ptr_eq(p, b + n);
  }
  /* ill-formed: one U+FFFD per broken sequence, never past the end */
  static const uint8_t bad[] = {0xe2, 0x82, 'A', 0x80, 0xc0, 0x80, 0xf0};
  const uint8_t *p = bad, *end = bad + sizeof bad;
  uint32_t got[8];
  size_t k = 0;
  while (p < end && k < 8)
    got[k++] = utf8_next(&p, end);
  static const uint32_t want[] = {0xfffd, 'A', 0xfffd, 0xfffd, 0xfffd};
  ck_assert_uint_eq(k, 5);
  for (size_t i = 0; i < k; i++)
    ck_assert_uint_eq(got[i], want[i]);
  /* hex digits */
  ck_assert_int_eq(hex_digit('0'), 0);
  ck_assert_int_eq(hex_digit('9'), 9);
  ck_assert_int_eq(hex_digit('a'), 10);
  ck_assert_int_eq(hex_digit('F'), 15);
  ck_assert_int_eq(hex_digit('g'), -1);
  ck_assert_int_eq(hex_digit('/'), -1);
  ck_assert_int_eq(hex_digit(0), -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("jlex");
  TCase *tc = tcase_create("jlex");
  tcase_add_test(tc, strings);
  tcase_add_test(tc, string_dup_reuses);
  tcase_add_test(tc, numbers);
  tcase_add_test(tc, values);
  tcase_add_test(tc, walks);
  tcase_add_test(tc, utf8_codings);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
