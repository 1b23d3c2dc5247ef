/* check_conformance.c - every array of the stores other implementations
 * wrote (zarrita, zarr-python V3, zarr-python V2; ../shared/fixtures) read
 * through the engine's values.txt and compared with their expected.json:
 * integers and strings as text, floats by their bits at the array's width
 * (any NaN matches a "NaN"), strings with '\n' shown as ' '. Nothing may be
 * refused or differ. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/json/zjson.h"
#include "../../../src/store/confine.h"
#include "../../../src/store/store.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

/* Float width of a data type name or numpy dtype string (0: not float). */
static int float_bits(const char *dt) {
  if (!strcmp(dt, "float16") || strstr(dt, "f2"))
    return 16;
  if (!strcmp(dt, "float32") || strstr(dt, "f4"))
    return 32;
  if (!strcmp(dt, "float64") || strstr(dt, "f8"))
    return 64;
  return 0;
}

/* Does our text for a float equal the expected value / bit pattern? */
static int float_matches(const char *text, int bits, json_t *want,
                         json_t *want_bits) {
  double d = strtod(text, NULL);
  const char *ws = json_string_value(want);
  if (ws && !strcmp(ws, "NaN"))
    return isnan(d);
  const char *hex = json_string_value(want_bits);
  if (!hex)
    return 0;
  unsigned long long wb = strtoull(hex, NULL, 16), gb;
  if (bits == 16) {
    _Float16 h = (_Float16)d;
    uint16_t b;
    memcpy(&b, &h, 2);
    gb = b;
  } else if (bits == 32) {
    float f = strtof(text, NULL);
    uint32_t b;
    memcpy(&b, &f, 4);
    gb = b;
  } else {
    uint64_t b;
    memcpy(&b, &d, 8);
    gb = b;
  }
  if (isnan(d)) { /* our NaN matches an expected NaN of any payload */
    if (bits == 16)
      return (wb & 0x7c00) == 0x7c00 && (wb & 0x03ff);
    if (bits == 32)
      return (wb & 0x7f800000u) == 0x7f800000u && (wb & 0x007fffffu);
    return (wb & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
           (wb & 0x000fffffffffffffull);
  }
  return gb == wb;
}

/* Expected text of a non-float value. */
static void expected_text(json_t *v, char *buf, size_t len) {
  if (json_is_null(v))
    snprintf(buf, len, "%s", "");
  else if (json_is_true(v))
    snprintf(buf, len, "true");
  else if (json_is_false(v))
    snprintf(buf, len, "false");
  else if (json_is_integer(v))
    snprintf(buf, len, "%lld", (long long)json_integer_value(v));
  else if (json_is_string(v)) {
    size_t n = json_string_length(v);
    if (n >= len)
      n = len - 1;
    memcpy(buf, json_string_value(v), n);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
      if (buf[i] == '\n')
        buf[i] = ' ';
  } else {
    snprintf(buf, len, "?");
  }
}

/* Compare every array of root["arrays"] with the store s (taken);
 * returns the failures. */
static int check_arrays(struct store *s, json_t *root, const char *store,
                        int *arrays);

/* Load an expected-values file with the lenient loader. */
static json_t *load_expected(const char *fx, const char *expected) {
  char epath[4096];
  snprintf(epath, sizeof epath, "%s/%s", fx, expected);
  /* The lenient loader: uint64 values beyond int64 come as digit strings. */
  FILE *f = fopen(epath, "rb");
  ck_assert_msg(f != NULL, "%s", epath);
  fseek(f, 0, SEEK_END);
  long flen = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *ftext = malloc((size_t)flen + 1);
  ck_assert_uint_eq(fread(ftext, 1, (size_t)flen, f), (size_t)flen);
  fclose(f);
  struct zerr err = {0};
  json_t *root = zjson_loadb(ftext, (size_t)flen, &err);
  free(ftext);
  ck_assert_msg(root != NULL, "%s: %s", epath, err.msg);
  return root;
}

/* Compare one store with its expected file; returns the failures. */
static int check_set(const char *fx, const char *store, const char *expected,
                     int *arrays) {
  char spath[4096];
  snprintf(spath, sizeof spath, "%s/%s", fx, store);
  json_t *root = load_expected(fx, expected);
  struct zerr err = {0};
  struct store *s;
  ck_assert_int_eq(store_open_local(spath, &s, &err), 0);
  int failures = check_arrays(s, root, store, arrays);
  json_decref(root);
  return failures;
}

/* Every kerchunk reference file named by kerchunk/expected_refs.json,
 * mounted as a reference store; returns the failures. */
static int check_refs(const char *fx, int *arrays) {
  json_t *root = load_expected(fx, "kerchunk/expected_refs.json");
  const char *file;
  json_t *set;
  int failures = 0, files = 0;
  json_object_foreach(json_object_get(root, "files"), file, set) {
    char rpath[4096], rdir[4096];
    snprintf(rpath, sizeof rpath, "%s/kerchunk/%s", fx, file);
    snprintf(rdir, sizeof rdir, "%s", rpath);
    *strrchr(rdir, '/') = '\0';
    struct zerr err = {0};
    struct confine *c;
    ck_assert_int_eq(confine_new(&c, &err), 0);
    ck_assert_msg(confine_add_root(c, rdir, &err) == 0, "%s", err.msg);
    struct store *s;
    ck_assert_msg(store_open_refs(rpath, c, &s, &err) == 0, "%s: %s", rpath,
                  err.msg);
    failures += check_arrays(s, set, file, arrays);
    confine_free(c);
    files++;
  }
  ck_assert_int_ge(files, 5);
  json_decref(root);
  return failures;
}

static int check_arrays(struct store *s, json_t *root, const char *store,
                        int *arrays) {
  struct zerr err = {0};
  struct engine_config cfg = {256u << 20, 1u << 30, 1 << 16, 0, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  int failures = 0;
  size_t i;
  json_t *a;
  json_array_foreach(json_object_get(root, "arrays"), i, a) {
    const char *path = json_string_value(json_object_get(a, "path"));
    json_t *dtj = json_object_get(a, "data_type");
    if (!dtj)
      dtj = json_object_get(a, "dtype");
    const char *dt = json_is_string(dtj) ? json_string_value(dtj) : "";
    json_t *values = json_object_get(a, "values");
    json_t *bits = json_object_get(a, "bits");
    int fbits = float_bits(dt);
    (*arrays)++;
    char vpath[4200];
    snprintf(vpath, sizeof vpath, "/%s/values.txt", path);
    struct ns_entry ent;
    uint64_t size;
    zerr_clear(&err);
    if (ns_resolve(e, vpath, &ent, &err) < 0 ||
        ns_size(e, &ent, &size, &err) < 0) {
      if (testutil_is_without(err.msg))
        continue; /* main said so */
      printf("check_conformance: %s/%s: refused: %s\n", store, path, err.msg);
      failures++;
      continue;
    }
    char *text = malloc(size + 1);
    uint64_t off = 0;
    while (off < size) {
      long n = ns_read_view(e, &ent, off, 1 << 17, text + off, NULL, &err);
      if (n <= 0)
        break;
      off += (uint64_t)n;
    }
    text[off] = '\0';
    if (off != size) {
      printf("check_conformance: %s/%s: read failed: %s\n", store, path,
             err.msg);
      failures++;
      free(text);
      continue;
    }
    char *line = text;
    size_t k;
    json_t *v;
    int bad = 0;
    json_array_foreach(values, k, v) {
      char *nl = memchr(line, '\n', (size_t)(text + off - line));
      if (!nl) {
        printf("check_conformance: %s/%s: only %zu lines\n", store, path, k);
        bad = 1;
        break;
      }
      *nl = '\0';
      int ok;
      size_t wcap = (json_is_string(v) ? json_string_length(v) : 0) + 64;
      char *want = malloc(wcap);
      if (fbits && !json_is_null(v)) {
        ok = float_matches(line, fbits, v, json_array_get(bits, k));
        snprintf(want, wcap, "bits %s",
                 json_string_value(json_array_get(bits, k)) ?: "?");
      } else if (json_is_string(v) &&
                 memchr(json_string_value(v), 0, json_string_length(v))) {
        /* Embedded NUL: compare by length. */
        size_t wl = json_string_length(v);
        expected_text(v, want, wcap);
        ok = (size_t)(nl - line) == wl && !memcmp(line, want, wl);
      } else {
        expected_text(v, want, wcap);
        ok = !strcmp(line, want);
      }
      if (!ok) {
        printf("check_conformance: %s/%s[%zu]: got '%.60s', want '%.60s'\n",
               store, path, k, line, want);
        free(want);
        bad = 1;
        break;
      }
      free(want);
      line = nl + 1;
    }
    if (!bad && line != text + off) {
      printf("check_conformance: %s/%s: extra lines\n", store, path);
      bad = 1;
    }
    failures += bad;
    free(text);
  }
  engine_free(e);
  return failures;
}

START_TEST(other_implementations) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  static const char *const sets[][2] = {
      {"zarrita/v3_zarrita.zarr", "zarrita/expected.json"},
      {"zarr-python-v3/v3_zarr_python_fixtures.zarr",
       "zarr-python-v3/expected_v3_fixtures.json"},
      {"zarr-python-v2/v2_python.zarr", "zarr-python-v2/expected_v2.json"},
  };
  int failures = 0, arrays = 0;
  for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
    failures += check_set(fx, sets[i][0], sets[i][1], &arrays);
  failures += check_refs(fx, &arrays);
  printf("check_conformance: %d arrays, %d failed\n", arrays, failures);
  ck_assert_int_ge(arrays, 200);
  ck_assert_int_eq(failures, 0);
}
END_TEST

START_TEST(own_fixtures) {
  /* The same checks on the V2 store and kerchunk references the tests
   * make themselves (tests/writers/own_fixtures.py, zarr-python 2): a
   * fresh clone without ../shared/fixtures runs these. */
  const char *fx = testutil_own_fixtures();
  ck_assert_ptr_nonnull(fx);
  int arrays = 0;
  int failures = check_set(fx, "zarr-python-v2/v2_python.zarr",
                           "zarr-python-v2/expected_v2.json", &arrays);
  failures += check_refs(fx, &arrays);
  printf("check_conformance: own fixtures: %d arrays, %d failed\n", arrays,
         failures);
  ck_assert_int_ge(arrays, 50);
  ck_assert_int_eq(failures, 0);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("conformance");
  TCase *own = tcase_create("own");
  tcase_set_timeout(own, 300);
  tcase_add_test(own, own_fixtures);
  testutil_add_own_tcase(s, own, "check_conformance");
  TCase *tc = tcase_create("fixtures");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, other_implementations);
  testutil_add_fixture_tcase(s, tc, "check_conformance");
  if (*ZFS_WITHOUT && testutil_fixtures())
    testutil_skip_without("check_conformance", ZFS_WITHOUT,
                          "the fixture stores that need it");
  return testutil_run(s);
}
