/* check_nomem.c - out of memory is ENOMEM, never a data error. jansson's
 * allocations are made to fail at the Nth (zjson_set_malloc); each parser
 * of JSON metadata (zarr.json, .zarray with its V2 -> V3 codec list,
 * .zmetadata, kerchunk references with templates) is
 * run for N = 0, 1, 2, ... until it succeeds: every failure on the way
 * must be -ENOMEM with err.code ENOMEM, never -EIO ("invalid metadata") or
 * a silently different result. Then the engine over a small store: a
 * lookup, a listing or a read that meets the failure fails with ENOMEM
 * (never EIO, never "no such file"), and the same engine serves the right
 * text once memory is back: nothing was remembered as broken. */
#include <jansson.h>
#include <stdatomic.h>
#include <string.h>

#include "../../../src/zarr/consolidated.h"
#include "../../../src/store/kerchunk.h"
#include "../../../src/json/zjson.h"
#include "../../../src/util/log.h"
#include "../../../src/zarr/meta.h"
#include "../teststore.h"
#include "../testutil.h"

/* Allocations left before the failing one (-1: never fail). */
static long budget = -1;
static int failed; /* an allocation was refused */

/* jansson's malloc: refuse once the budget is spent. */
static void *fail_malloc(size_t n) {
  if (budget == 0) {
    failed = 1;
    return NULL;
  }
  if (budget > 0)
    budget--;
  return malloc(n);
}

/* A parser under test: 0 on success, or a negative errno. */
typedef int (*parse_fn)(const char *text, struct zerr *err);

static int run_zarr_json(const char *text, struct zerr *err) {
  struct zmeta *m = NULL;
  int rc = zmeta_parse(text, strlen(text), &m, err);
  zmeta_free(m);
  return rc;
}

static int run_zarray(const char *text, struct zerr *err) {
  struct zmeta *m = NULL;
  int rc = zmeta_parse_v2(text, strlen(text), &m, err);
  /* transpose, delta, bytes, zlib: none silently lost */
  if (rc == 0 && json_array_size(m->codecs) != 4)
    rc = zerr_set(err, EIO, "%zu codecs, want 4", json_array_size(m->codecs));
  zmeta_free(m);
  return rc;
}

static int run_zmetadata(const char *text, struct zerr *err) {
  struct zcons *c = NULL;
  int rc = zcons_parse_v2(text, strlen(text), &c, err);
  zcons_free(c);
  return rc;
}

static int run_kerchunk(const char *text, struct zerr *err) {
  struct manifest *m = NULL;
  int rc = kerchunk_load_mem(text, strlen(text), "refs.json", "/data", &m, err);
  manifest_free(m);
  return rc;
}

static const struct nomem_case {
  const char *name;
  parse_fn fn;
  const char *text;
} cases[] = {
    {"zarr.json", run_zarr_json,
     "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10,20],"
     "\"data_type\":\"float64\",\"chunk_grid\":{\"name\":\"regular\","
     "\"configuration\":{\"chunk_shape\":[5,5]}},\"chunk_key_encoding\":"
     "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}},"
     "\"fill_value\":\"NaN\",\"codecs\":[{\"name\":\"bytes\","
     "\"configuration\":{\"endian\":\"little\"}},{\"name\":\"zstd\","
     "\"configuration\":{\"level\":3,\"checksum\":false}}],"
     "\"attributes\":{\"a\":[1,2,3],\"b\":{\"c\":\"d\"}}}"},
    {"zarr.json with bare NaN", run_zarr_json,
     "{\"zarr_format\":3,\"node_type\":\"group\",\"attributes\":{\"x\":NaN}}"},
    {".zarray", run_zarray,
     "{\"zarr_format\":2,\"shape\":[10,20],\"chunks\":[5,5],\"dtype\":\"<f8\","
     "\"fill_value\":0,\"order\":\"F\",\"filters\":[{\"id\":\"delta\","
     "\"dtype\":\"<f8\"}],\"compressor\":{\"id\":\"zlib\",\"level\":1}}"},
    {".zmetadata", run_zmetadata,
     "{\"zarr_consolidated_format\":1,\"metadata\":{\".zgroup\":"
     "{\"zarr_format\":2},\"a/.zarray\":{\"zarr_format\":2,\"shape\":[4],"
     "\"chunks\":[2],\"dtype\":\"<i4\",\"fill_value\":0,\"order\":\"C\","
     "\"filters\":null,\"compressor\":null},\"a/.zattrs\":{\"k\":1}}}"},
    {"kerchunk v1", run_kerchunk,
     "{\"version\":1,\"templates\":{\"u\":\"data.bin\"},\"gen\":[],"
     "\"refs\":{\".zgroup\":\"{\\\"zarr_format\\\":2}\","
     "\"a/.zarray\":\"{\\\"zarr_format\\\":2,\\\"shape\\\":[4],\\\"chunks\\\":"
     "[2],\\\"dtype\\\":\\\"<i4\\\",\\\"fill_value\\\":0,\\\"order\\\":"
     "\\\"C\\\",\\\"filters\\\":null,\\\"compressor\\\":null}\","
     "\"a/0\":[\"{{u}}\",0,8],\"a/1\":[\"{{u}}\",8,8],"
     "\"a/2\":[\"{{u}}\",1e400,8]}}"},
};

START_TEST(enomem_never_a_data_error) {
  const struct nomem_case *c = &cases[_i];
  struct zerr err = {0};
  zjson_set_malloc(NULL);
  budget = -1;
  ck_assert_msg(c->fn(c->text, &err) == 0, "%s: %s", c->name, err.msg);
  int refused = 0;
  for (long n = 0; n < 100000; n++) {
    zerr_clear(&err);
    budget = n;
    failed = 0;
    zjson_set_malloc(fail_malloc);
    int rc = c->fn(c->text, &err);
    zjson_set_malloc(NULL);
    budget = -1;
    if (!failed) { /* the budget was enough: done */
      ck_assert_msg(rc == 0, "%s: %s", c->name, err.msg);
      ck_assert_int_gt(refused, 0); /* the loop did test something */
      return;
    }
    /* an allocation failed: the parse may still have worked around it
     * (a lenient retry), but a failure must say ENOMEM */
    if (rc != 0) {
      ck_assert_msg(rc == -ENOMEM && err.code == ENOMEM,
                    "%s, allocation %ld failing: rc %d, '%s'", c->name, n, rc,
                    err.msg);
      refused++;
    }
  }
  ck_abort_msg("%s: never succeeded", c->name);
}
END_TEST

/* ---- the engine: nothing broken is remembered ---- */

static char store_dir[64];

/* A group holding a 1-D int32 array "a" of two chunks: 1 2 | 3 4. */
static void make_store(void) {
  snprintf(store_dir, sizeof store_dir, "/tmp/zarrfs-nomem-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(store_dir));
  static const char root[] = "{\"zarr_format\":3,\"node_type\":\"group\"}";
  static const char arr[] =
      "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
      "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":\"regular\","
      "\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":"
      "{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[{\"name\":"
      "\"bytes\",\"configuration\":{\"endian\":\"little\"}}]}";
  static const int32_t c0[] = {1, 2}, c1[] = {3, 4};
  ts_put_file(store_dir, "zarr.json", root, sizeof root - 1);
  ts_put_file(store_dir, "a/zarr.json", arr, sizeof arr - 1);
  ts_put_file(store_dir, "a/c/0", c0, sizeof c0);
  ts_put_file(store_dir, "a/c/1", c1, sizeof c1);
}

/* Remove the store. */
static void remove_store(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", store_dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Count the names of a listing. */
static int count_name(void *ud, const char *name, int is_dir) {
  (void)name;
  (void)is_dir;
  (*(int *)ud)++;
  return 0;
}

/* What each engine operation is, and what it gives with enough memory. */
static const struct engine_case {
  const char *path;
  int list;         /* 1: list path; 0: read its text */
  const char *text; /* the text, or the number of names listed */
} engine_cases[] = {
    {"a/values.txt", 0, "1\n2\n3\n4\n"},
    {"a/c/1.txt", 0, "3\n4\n"},
    {"a/c", 1, "4"}, /* 0, 1, 0.txt, 1.txt */
    {"a", 1, "4"},   /* c, zarr.json, values.txt, info.txt */
};

/* Run one case; 0 when it gave the right result. */
static int engine_run(struct engine *e, const struct engine_case *c,
                      struct zerr *err) {
  if (c->list) {
    int n = 0;
    ZTRY(ns_list(e, c->path, count_name, &n, err));
    ck_assert_int_eq(n, atoi(c->text));
    return 0;
  }
  char *text = ts_view_text(e, c->path, 3, err);
  if (!text)
    return -err->code;
  ck_assert_str_eq(text, c->text);
  free(text);
  return 0;
}

START_TEST(engine_enomem_is_not_remembered) {
  const struct engine_case *c = &engine_cases[_i];
  make_store();
  int refused = 0;
  for (long n = 0; n < 100000; n++) {
    struct engine *e = ts_open_engine(store_dir);
    struct zerr err = {0};
    budget = n;
    failed = 0;
    zjson_set_malloc(fail_malloc);
    int rc = engine_run(e, c, &err);
    zjson_set_malloc(NULL);
    budget = -1;
    int was_failing = failed;
    if (rc != 0) {
      ck_assert_msg(rc == -ENOMEM && err.code == ENOMEM,
                    "%s, allocation %ld failing: rc %d, '%s'", c->path, n, rc,
                    err.msg);
      refused++;
    }
    /* memory is back: the same engine serves it right */
    zerr_clear(&err);
    ck_assert_msg(engine_run(e, c, &err) == 0, "%s after allocation %ld: %s",
                  c->path, n, err.msg);
    engine_free(e);
    if (!was_failing) {
      ck_assert_int_gt(refused, 0); /* the loop did test something */
      remove_store();
      return;
    }
  }
  remove_store();
  ck_abort_msg("%s: never succeeded", c->path);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR); /* the engine's log lines on stderr */
  Suite *s = suite_create("nomem");
  TCase *tc = tcase_create("json");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, enomem_never_a_data_error, 0,
                      (int)(sizeof cases / sizeof *cases));
  suite_add_tcase(s, tc);
  TCase *te = tcase_create("engine");
  tcase_set_timeout(te, 120);
  tcase_add_loop_test(te, engine_enomem_is_not_remembered, 0,
                      (int)(sizeof engine_cases / sizeof *engine_cases));
  suite_add_tcase(s, te);
  return testutil_run(s);
}
