/* check_conformance_zarrs.c - every array of the zarrs fixtures
 * (../shared/fixtures/zarrs: everything under snapshots/supported/regular,
 * synthesized_vlen and tests_data) read through the engine's values.txt
 * and compared with the values zarrs/EXPECTED.md gives, generated here from
 * its rules (element i of an 8x24 snapshot: str_%04d, bytes as hex, i,
 * i*0.5, bool, null for optional; cities.csv; the lists of section 3).
 *
 * Each array must either equal its expected text exactly, or be refused
 * with an error that says "unsupported" and names a codec or data type of
 * ALLOWED_REFUSALS below. Anything else (wrong values, another error, an
 * array without expected values, an array the walk through the namespace
 * did not reach) fails. Arrays are found on disk (every zarr.json of an
 * array, every .zarray without a zarr.json) and through ns_list from each
 * store's root; both counts must agree. */
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#if ZFS_WITH_ZFP
#include <zfp.h>
#endif

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

/* snprintf into an array, asserting that nothing was cut. */
#define FMT(buf, ...)                                                          \
  ck_assert_int_lt(snprintf(buf, sizeof buf, __VA_ARGS__), (int)sizeof buf)

/* Codecs and data types that may be refused instead of decoded: an error
 * counts as a proper refusal when it contains "unsupported" and one of
 * these names in single quotes. Only codecs with no C library in Debian
 * stay here (numcodecs.pcodec, zarrs.gdeflate); shrink this list as codecs
 * land, and the test then demands their exact values. */
static const char *const ALLOWED_REFUSALS[] = {
    "numcodecs.pcodec",
    "zarrs.gdeflate",
    NULL,
};

/* ---- expected text ---- */

/* A growable text buffer (test only: allocation failure aborts). */
struct text {
  char *p;
  size_t n, cap;
};

/* Append printf output. */
static void tx_printf(struct text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void tx_printf(struct text *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(t->p + t->n, t->cap - t->n, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(w, 0);
    if ((size_t)w < t->cap - t->n) {
      t->n += (size_t)w;
      return;
    }
    t->cap = t->cap * 2 + (size_t)w + 64;
    t->p = realloc(t->p, t->cap);
    ck_assert_ptr_nonnull(t->p);
  }
}

/* Append bytes as lowercase hex and a newline. */
static void tx_hexline(struct text *t, const uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    tx_printf(t, "%02x", b[i]);
  tx_printf(t, "\n");
}

/* Append a present optional string's line by the text contract's rule (docs/reference.md): a backslash
 * in front of text that would read as missing ("null", "[null]", ...) or
 * that starts with a backslash. (zarrs' values, str_NNNN, never need it:
 * the rule is applied anyway so that the expectation states it.) */
static void tx_optional_string(struct text *t, const char *v) {
  size_t n = strlen(v), k = strspn(v, "[");
  int missing_form = n == 2 * k + 4 && !strncmp(v + k, "null", 4) &&
                     strspn(v + k + 4, "]") == k;
  tx_printf(t, "%s%s\n", v[0] == '\\' || missing_form ? "\\" : "", v);
}

/* Expected text of an 8x24 snapshot store of dtype directory dt; codec is
 * the codec directory (fixedscaleoffset rounds floats half away from
 * zero: element i stores round(i*0.5) = (i+1)/2). 0 when dt is unknown. */
static int expect_snapshot(const char *dt, const char *codec, struct text *t) {
  int fso = !strcmp(codec, "numcodecs.fixedscaleoffset");
  for (int i = 0; i < 192; i++) {
    if (!strcmp(dt, "string")) {
      tx_printf(t, "str_%04d\n", i % 10000);
    } else if (!strcmp(dt, "bytes")) {
      uint8_t b[8];
      memset(b, i % 256, sizeof b);
      tx_hexline(t, b, (size_t)(i % 8 + 1));
    } else if (!strcmp(dt, "zarrs.optional(string)")) {
      char v[16];
      FMT(v, "str_%04d", i % 10000);
      if (i % 4 == 3)
        tx_printf(t, "null\n");
      else
        tx_optional_string(t, v);
    } else if (!strcmp(dt, "zarrs.optional(uint8)")) {
      if (i % 4 == 3)
        tx_printf(t, "null\n");
      else
        tx_printf(t, "%d\n", i % 256);
    } else if (!strcmp(dt, "bool")) {
      tx_printf(t, "%s\n", i % 2 ? "true" : "false");
    } else if (!strcmp(dt, "uint8")) {
      tx_printf(t, "%d\n", i % 256);
    } else if (!strcmp(dt, "uint16")) {
      tx_printf(t, "%d\n", i % 65536);
    } else if (!strcmp(dt, "int32")) {
      tx_printf(t, "%d\n", i);
    } else if (!strcmp(dt, "float32") || !strcmp(dt, "float64")) {
      if (fso)
        tx_printf(t, "%d\n", (i + 1) / 2);
      else if (i % 2)
        tx_printf(t, "%d.5\n", i / 2);
      else
        tx_printf(t, "%d\n", i / 2);
    } else {
      return 0;
    }
  }
  return 1;
}

/* Append each string of a NULL-terminated list as a line. */
static void tx_lines(struct text *t, const char *const *s) {
  for (; *s; s++)
    tx_printf(t, "%s\n", *s);
}

/* Append the integers lo..hi-1, one a line. */
static void tx_range(struct text *t, int lo, int hi) {
  for (int i = lo; i < hi; i++)
    tx_printf(t, "%d\n", i);
}

/* Append a whole file. */
static void tx_file(struct text *t, const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
    if (t->n + n + 1 > t->cap) {
      t->cap = (t->n + n + 1) * 2;
      t->p = realloc(t->p, t->cap);
      ck_assert_ptr_nonnull(t->p);
    }
    memcpy(t->p + t->n, buf, n);
    t->n += n;
  }
  fclose(f);
  if (t->n && t->p[t->n - 1] != '\n')
    tx_printf(t, "\n");
}

/* Does s end with suffix? */
static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && !strcmp(s + a - b, suffix);
}

/* Does s start with prefix? */
static int starts_with(const char *s, const char *prefix) {
  return !strncmp(s, prefix, strlen(prefix));
}

/* The expected text of the array at rel (path below zarrs/): filled into t,
 * or *repeat > 1 when t is one line repeated that many times. 0 when the
 * array is not known. */
static int expect_array(const char *zarrs, const char *rel, struct text *t,
                        uint64_t *repeat) {
  *repeat = 1;
  static const char snap[] = "snapshots/supported/regular/";
  if (starts_with(rel, snap)) { /* <dtype>/<set>/<codec>/<id> */
    char dt[256], set[64], codec[256];
    if (sscanf(rel + strlen(snap), "%255[^/]/%63[^/]/%255[^/]/", dt, set,
               codec) != 3)
      return 0;
    return expect_snapshot(dt, codec, t);
  }
  if (starts_with(rel, "synthesized_vlen/")) {
    if (!strcmp(rel, "synthesized_vlen/empty_data_and_missing_chunk.zarr")) {
      tx_printf(t, "\n\na\n\nfill\nfill\n");
      return 1;
    }
    return expect_snapshot("string", "", t);
  }
  char csv[4096];
  FMT(csv, "%s/tests_data/cities.csv", zarrs);
  if (!strcmp(rel, "tests_data/v3/cities.zarr") ||
      !strcmp(rel, "tests_data/zarr_python_compat/cities_v3.zarr") ||
      !strcmp(rel, "tests_data/zarr_python_compat/cities_v2.zarr")) {
    tx_file(t, csv);
    return 1;
  }
  if (!strcmp(rel, "tests_data/zarr_python_compat/v3_bytes.zarr")) {
    static const char *const s[] = {"New York", "Los Angeles", "Chicago"};
    for (int i = 0; i < 3; i++)
      tx_hexline(t, (const uint8_t *)s[i], strlen(s[i]));
    return 1;
  }
  if (!strcmp(rel, "tests_data/zarr_python_compat/str_v2_fv_0.zarr") ||
      !strcmp(rel, "tests_data/zarr_python_compat/str_v2_fv_null.zarr")) {
    tx_printf(t, "a\nbb\n\n\n\n");
    return 1;
  }
  if (!strcmp(rel, "tests_data/issue_287.zarr/meta/collection")) {
    static const char *const s[] = {"collection_a", "collection_b",
                                    "collection_c", NULL};
    tx_lines(t, s);
    return 1;
  }
  if (!strcmp(rel, "tests_data/issue_287.zarr/meta/bbox")) {
    for (int k = 10; k <= 30; k += 10)
      tx_printf(t, "POLYGON ((%d -%d, %d %d, -%d %d, -%d -%d, %d -%d))\n", k, k,
                k, k, k, k, k, k, k, k);
    return 1;
  }
  if (!strcmp(rel, "tests_data/issue_287.zarr/meta/date")) {
    /* numpy's ISO 8601 text of datetime64[ms] 1672531200000 + k days. */
    static const char *const s[] = {"2023-01-01T00:00:00.000",
                                    "2023-01-02T00:00:00.000",
                                    "2023-01-03T00:00:00.000", NULL};
    tx_lines(t, s);
    return 1;
  }
  if (starts_with(rel, "tests_data/zarr_python_compat/fixed_length_utf32_")) {
    static const char *const s[] = {"abc", "\xf0\x9f\x8e\x89", "hi", "te", "",
                                    NULL};
    tx_lines(t, s);
    return 1;
  }
  if (!strcmp(rel, "tests_data/sharded_array_write_read.zarr/group/array")) {
    tx_range(t, 0, 64);
    return 1;
  }
  if (!strcmp(rel, "tests_data/array_write_read.zarr/group/array")) {
    static const char *const s[] = {
        "nan",  "nan",  "nan",  "nan",  "0.1",  "0.1",  "-0.6", "0.1",  "nan",
        "nan",  "nan",  "nan",  "0.1",  "0.1",  "-1.6", "0.1",  "nan",  "nan",
        "nan",  "nan",  "0.1",  "0.1",  "-2.6", "0.1",  "nan",  "nan",  "nan",
        "nan",  "-3.4", "-3.5", "-3.6", "0.1",  "1",    "1",    "1",    "-4.3",
        "-4.4", "-4.5", "-4.6", "1.1",  "1",    "1",    "1",    "-5.3", "-5.4",
        "-5.5", "-5.6", "1.1",  "1",    "1",    "1",    "1",    "1.1",  "1.1",
        "-6.6", "1.1",  "1",    "1",    "1",    "1",    "-7.4", "-7.5", "-7.6",
        "-7.7", NULL};
    tx_lines(t, s);
    return 1;
  }
  /* The 10x10 float32 family: 0..99. */
  if ((starts_with(rel, "tests_data/v2/array_") ||
       starts_with(rel, "tests_data/v3/array_") ||
       starts_with(rel, "tests_data/v3_zarr_python/array_")) &&
      ends_with(rel, ".zarr") && !strstr(rel, "optional")) {
    tx_range(t, 0, 100);
    return 1;
  }
  if (!strcmp(rel, "tests_data/zarr_python_compat/adler32.zarr") ||
      !strcmp(rel, "tests_data/zarr_python_compat/fletcher32.zarr")) {
    tx_range(t, 0, 10000);
    return 1;
  }
  if (!strcmp(rel, "tests_data/zarr_python_compat/bool_v2_fv_null.zarr")) {
    tx_printf(t, "true\nfalse\nfalse\nfalse\nfalse\n");
    return 1;
  }
  if (!strcmp(rel, "tests_data/zarr_python_compat/int_v2_fv_null.zarr")) {
    tx_printf(t, "42\n123\n0\n0\n0\n");
    return 1;
  }
  if (!strcmp(rel, "tests_data/zarr_python_compat/float_v2_fv_null.zarr")) {
    tx_printf(t, "3.14\n2.71\n0\n0\n0\n");
    return 1;
  }
  if (!strcmp(rel, "tests_data/v3/array_optional.zarr/array")) {
    static const char *const s[] = {
        "0", "null", "2",    "3",  "null", "5",    "null", "7", "8",
        "9", "null", "null", "12", "null", "null", "null", NULL};
    tx_lines(t, s);
    return 1;
  }
  if (!strcmp(rel, "tests_data/v3/array_optional_nested.zarr/array")) {
    /* Option<Option<u8>>: None is null, Some(None) is [null] (zarrs' JSON
     * form), Some(Some(v)) is v; chunk c/1/0 is missing (fill Some(None)). */
    static const char *const s[] = {
        "null",   "[null]", "2",      "3",      "null", "5",
        "null",   "7",      "[null]", "[null]", "null", "null",
        "[null]", "[null]", "null",   "null",   NULL};
    tx_lines(t, s);
    return 1;
  }
  if (!strcmp(rel, "tests_data/hierarchy.zarr/a/baz") ||
      !strcmp(rel, "tests_data/hierarchy.zarr/a/foo")) {
    tx_printf(t, "nan\n"); /* no chunks: 10000 x 1000 NaN fills */
    *repeat = 10000000;
    return 1;
  }
  return 0;
}

/* ---- reading and judging ---- */

struct tally {
  int matched, refused, failed, on_disk, walked;
};

/* Is err a refusal the allow-list accepts, or that of a codec whose
 * library the build was configured without? */
static int allowed_refusal(const char *msg) {
  if (testutil_is_without(msg))
    return 1;
  if (!strstr(msg, "unsupported"))
    return 0;
  for (const char *const *a = ALLOWED_REFUSALS; *a; a++) {
    char quoted[128], param[128]; /* 'name' or 'name(inner)' */
    FMT(quoted, "'%s'", *a);
    FMT(param, "'%s(", *a);
    if (strstr(msg, quoted) || strstr(msg, param))
      return 1;
  }
  return 0;
}

/* Compare the array's values.txt with the expected text, streaming. */
static void check_array(struct engine *e, const char *zarrs, const char *rel,
                        const char *path, struct tally *ty) {
  struct text want = {0};
  uint64_t repeat;
  ty->walked++;
  if (!expect_array(zarrs, rel, &want, &repeat)) {
    printf("check_conformance_zarrs: %s: FAIL: no expected values\n", rel);
    ty->failed++;
    free(want.p);
    return;
  }
  char vpath[4200];
  FMT(vpath, "/%s%svalues.txt", path, *path ? "/" : "");
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  int rc = ns_resolve(e, vpath, &ent, &err);
  if (rc == 0)
    rc = ns_size(e, &ent, &size, &err);
  uint64_t total = want.n * repeat, off = 0;
  static char buf[1 << 20];
  const char *why = NULL;
  if (rc == 0 && size != total)
    why = "size differs";
  while (rc == 0 && !why && off < size) {
    size_t n = size - off < sizeof buf ? (size_t)(size - off) : sizeof buf;
    long got = ns_read_view(e, &ent, off, n, buf, NULL, &err);
    if (got <= 0) {
      rc = got < 0 ? (int)got : -EIO;
      break;
    }
    for (long k = 0; k < got; k++)
      if (buf[k] != want.p[(off + (uint64_t)k) % want.n]) {
        why = "values differ";
        uint64_t at = off + (uint64_t)k, line = 0;
        for (uint64_t q = 0; q < at; q++)
          line += want.p[q % want.n] == '\n';
        printf("check_conformance_zarrs: %s: line %llu differs\n", rel,
               (unsigned long long)line + 1);
        break;
      }
    off += (uint64_t)got;
  }
  if (rc < 0) {
    if (allowed_refusal(err.msg)) {
      ty->refused++;
      if (getenv("ZT_VERBOSE"))
        printf("check_conformance_zarrs: %s: refused: %s\n", rel, err.msg);
    } else {
      printf("check_conformance_zarrs: %s: FAIL: error not allowed: %s\n", rel,
             err.msg);
      ty->failed++;
    }
  } else if (why) {
    printf("check_conformance_zarrs: %s: FAIL: %s (size %llu, want %llu)\n",
           rel, why, (unsigned long long)size, (unsigned long long)total);
    ty->failed++;
  } else {
    ty->matched++;
  }
  free(want.p);
}

/* ns_list callback: collect directory names. */
struct dirs {
  char **v;
  size_t n, cap;
};

/* Remember a directory entry. */
static int dirs_add(void *ud, const char *name, int is_dir) {
  struct dirs *d = ud;
  if (!is_dir)
    return 0;
  if (d->n == d->cap) {
    d->cap = d->cap ? 2 * d->cap : 16;
    d->v = realloc(d->v, d->cap * sizeof *d->v);
    ck_assert_ptr_nonnull(d->v);
  }
  d->v[d->n++] = strdup(name);
  return 0;
}

/* Walk a store through the namespace: every array is checked, groups and
 * plain directories are entered, nothing below an array is. */
static void walk_store(struct engine *e, const char *zarrs, const char *srel,
                       const char *path, struct tally *ty) {
  const struct znode *n = node_get(e->nodes, path);
  if (n->kind == ZNODE_ARRAY || n->kind == ZNODE_BROKEN) {
    char rel[4096];
    FMT(rel, "%s%s%s", srel, *path ? "/" : "", path);
    check_array(e, zarrs, rel, path, ty);
    return;
  }
  struct dirs d = {0};
  struct zerr err = {0};
  ck_assert_msg(ns_list(e, path, dirs_add, &d, &err) == 0, "%s/%s: %s", srel,
                path, err.msg);
  for (size_t i = 0; i < d.n; i++) {
    char child[4096];
    FMT(child, "%s%s%s", path, *path ? "/" : "", d.v[i]);
    walk_store(e, zarrs, srel, child, ty);
    free(d.v[i]);
  }
  free(d.v);
}

/* Does dir hold file name? */
static int has_file(const char *dir, const char *name) {
  char p[4200];
  struct stat st;
  FMT(p, "%s/%s", dir, name);
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Is dir's zarr.json an array? (a plain text search is enough here) */
static int v3_is_array(const char *dir) {
  char p[4200];
  FMT(p, "%s/zarr.json", dir);
  FILE *f = fopen(p, "rb");
  if (!f)
    return 0;
  static char buf[1 << 16];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *nt = strstr(buf, "\"node_type\"");
  return nt && strstr(nt, "\"array\"") &&
         (!strstr(nt, "\"group\"") ||
          strstr(nt, "\"array\"") < strstr(nt, "\"group\""));
}

/* Count the arrays on disk below dir (an array's own subdirectories are
 * chunks, not nodes). */
static int count_disk_arrays(const char *dir) {
  if (has_file(dir, "zarr.json") ? v3_is_array(dir) : has_file(dir, ".zarray"))
    return 1;
  DIR *d = opendir(dir);
  if (!d)
    return 0;
  int count = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.' && (!de->d_name[1] || !strcmp(de->d_name, "..")))
      continue;
    char p[4200];
    struct stat st;
    FMT(p, "%s/%s", dir, de->d_name);
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode))
      count += count_disk_arrays(p);
  }
  closedir(d);
  return count;
}

/* Find store roots below dir (rel below zarrs/): the first directories
 * holding zarr.json, .zarray or .zgroup; walk each through an engine. */
static void find_stores(const char *zarrs, const char *rel, struct tally *ty) {
  char dir[4200];
  FMT(dir, "%s/%s", zarrs, rel);
  if (has_file(dir, "zarr.json") || has_file(dir, ".zarray") ||
      has_file(dir, ".zgroup")) {
    struct zerr err = {0};
    struct store *s;
    ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
    struct engine_config cfg = {256u << 20, 1u << 30, 1 << 16, 0, 0};
    struct engine *e;
    ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
    walk_store(e, zarrs, rel, "", ty);
    engine_free(e);
    return;
  }
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "%s", dir);
  struct dirent *de;
  char **names = NULL;
  size_t n = 0;
  while ((de = readdir(d))) {
    char p[4200];
    struct stat st;
    FMT(p, "%s/%s", dir, de->d_name);
    if (de->d_name[0] == '.' || stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
      continue;
    names = realloc(names, (n + 1) * sizeof *names);
    names[n++] = strdup(de->d_name);
  }
  closedir(d);
  for (size_t i = 0; i < n; i++) {
    char sub[4200];
    FMT(sub, "%s/%s", rel, names[i]);
    find_stores(zarrs, sub, ty);
    free(names[i]);
  }
  free(names);
}

START_TEST(every_zarrs_array) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  char zarrs[4096];
  FMT(zarrs, "%s/zarrs", fx);
  static const char *const roots[] = {"snapshots/supported/regular",
                                      "synthesized_vlen", "tests_data"};
  struct tally ty = {0};
  for (size_t i = 0; i < sizeof roots / sizeof *roots; i++) {
    char dir[4200];
    FMT(dir, "%s/%s", zarrs, roots[i]);
    ty.on_disk += count_disk_arrays(dir);
    find_stores(zarrs, roots[i], &ty);
  }
  printf("check_conformance_zarrs: %d arrays on disk, %d reached: "
         "%d decoded+matched, %d refused-as-allowed, %d failed\n",
         ty.on_disk, ty.walked, ty.matched, ty.refused, ty.failed);
  ck_assert_int_ge(ty.on_disk, 270);
  ck_assert_int_eq(ty.walked, ty.on_disk);
  ck_assert_int_eq(ty.matched + ty.refused + ty.failed, ty.walked);
  ck_assert_int_eq(ty.failed, 0);
}
END_TEST

/* ---- zfp: an independent decode with libzfp ---- */
#if ZFS_WITH_ZFP

/* Decode one zfp chunk file with libzfp alone (not codecs/zfp.c): a
 * header (zfpy) or the reversible mode (zarrs' snapshots), a 2-D field of
 * nx x ny values of type t into out. The file is copied into a zeroed
 * buffer with room to spare, as libzfp reads whole words. */
static void zfp_direct(const char *path, int header, zfp_type t, size_t nx,
                       size_t ny, void *out) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "%s", path);
  static uint8_t buf[1 << 16];
  memset(buf, 0, sizeof buf);
  size_t len = fread(buf, 1, sizeof buf / 2, f);
  fclose(f);
  ck_assert_uint_gt(len, 0);
  bitstream *bs = stream_open(buf, sizeof buf);
  zfp_stream *zs = zfp_stream_open(bs);
  zfp_field *field = zfp_field_2d(out, t, nx, ny);
  if (header) {
    zfp_field *hf = zfp_field_alloc();
    ck_assert_uint_gt(zfp_read_header(zs, hf, ZFP_HEADER_FULL), 0);
    ck_assert_int_eq(hf->type, t);
    ck_assert_uint_eq(hf->nx, nx);
    ck_assert_uint_eq(hf->ny, ny);
    zfp_field_free(hf);
  } else {
    zfp_stream_set_reversible(zs);
  }
  size_t used = zfp_decompress(zs, field);
  ck_assert_msg(used > 0 && used <= len, "%s: libzfp used %zu of %zu bytes",
                path, used, len);
  zfp_field_free(field);
  zfp_stream_close(zs);
  stream_close(bs);
}

/* The zfpy stores (fixed-accuracy, tolerance 0.01: lossy): what libzfp
 * itself decodes from every chunk is exactly 0..99, the values the main
 * test demands of values.txt, so zarrfs shows libzfp's decode. */
START_TEST(zfpy_independent_decode) {
  static const struct {
    const char *store, *sep;
  } stores[] = {{"tests_data/v2/array_zfpy_C.zarr", "."},
                {"tests_data/v3/array_zfpy.zarr", "."},
                {"tests_data/v3_zarr_python/array_zfpy.zarr", "/"}};
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  for (size_t k = 0; k < sizeof stores / sizeof *stores; k++)
    for (int ci = 0; ci < 2; ci++)
      for (int cj = 0; cj < 2; cj++) {
        char path[4200];
        FMT(path, "%s/zarrs/%s/%s%d%s%d", fx, stores[k].store,
            strcmp(stores[k].sep, "/") ? "" : "c/", ci, stores[k].sep, cj);
        float v[25];
        zfp_direct(path, 1, zfp_type_float, 5, 5, v);
        for (int r = 0; r < 5; r++)
          for (int c = 0; c < 5; c++)
            ck_assert_msg(
                v[r * 5 + c] == (float)((5 * ci + r) * 10 + 5 * cj + c),
                "%s: element %d,%d is %.9g", path, r, c, (double)v[r * 5 + c]);
      }
}
END_TEST

/* zarrs' reversible snapshots: libzfp's own decode of every chunk (uint8
 * and uint16 demoted from int32 by hand: (v >> 23) + 0x80, (v >> 15) +
 * 0x8000) is the generation rule, which values.txt must show. */
START_TEST(zfp_snapshots_independent_decode) {
  static const char *const types[] = {"uint8", "uint16", "int32", "float32",
                                      "float64"};
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  int seen = 0;
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    char dir[4200];
    FMT(dir, "%s/zarrs/snapshots/supported/regular/%s/a2b/zfp(reversible)", fx,
        types[k]);
    DIR *d = opendir(dir);
    ck_assert_msg(d != NULL, "%s", dir);
    struct dirent *de;
    while ((de = readdir(d))) {
      if (de->d_name[0] == '.')
        continue;
      for (int ci = 0; ci < 2; ci++)
        for (int cj = 0; cj < 4; cj++) {
          char path[4400];
          FMT(path, "%s/%s/c/%d/%d", dir, de->d_name, ci, cj);
          int f64 = !strcmp(types[k], "float64");
          zfp_type t = f64                            ? zfp_type_double
                       : !strcmp(types[k], "float32") ? zfp_type_float
                                                      : zfp_type_int32;
          union {
            int32_t i[24];
            float f[24];
            double d[24];
          } v;
          zfp_direct(path, 0, t, 6, 4, &v);
          for (int e = 0; e < 24; e++) {
            int i = (4 * ci + e / 6) * 24 + 6 * cj + e % 6;
            double got = f64                           ? v.d[e]
                         : t == zfp_type_float         ? (double)v.f[e]
                         : !strcmp(types[k], "uint8")  ? (v.i[e] >> 23) + 0x80
                         : !strcmp(types[k], "uint16") ? (v.i[e] >> 15) + 0x8000
                                                       : v.i[e];
            int u8 = !strcmp(types[k], "uint8");
            double want = t != zfp_type_int32 ? i * 0.5 : u8 ? i % 256 : i;
            ck_assert_msg(got == want, "%s: element %d is %.17g, want %.17g",
                          path, e, got, want);
          }
        }
      seen++;
    }
    closedir(d);
  }
  ck_assert_int_eq(seen, 7);
}
END_TEST
#endif /* ZFS_WITH_ZFP */

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("conformance_zarrs");
  TCase *tc = tcase_create("fixtures");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, every_zarrs_array);
  if (*ZFS_WITHOUT)
    testutil_skip_without("check_conformance_zarrs", ZFS_WITHOUT,
                          "the values of arrays that need it (refused)");
#if ZFS_WITH_ZFP
  tcase_add_test(tc, zfpy_independent_decode);
  tcase_add_test(tc, zfp_snapshots_independent_decode);
#endif
  testutil_add_fixture_tcase(s, tc, "check_conformance_zarrs");
  return testutil_run(s);
}
