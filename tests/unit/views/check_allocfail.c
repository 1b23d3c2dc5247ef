/* check_allocfail.c - the allocation-failure sweep: for the
 * mount-and-read path of a few small stores (open the store, build the
 * engine, list every directory, stat and read every file: raw keys and
 * text views, sequentially with a cursor and once from the middle without
 * one), fail the Nth allocation for every N (tests/unit/views/allocfail.h) until a
 * run makes fewer than N allocations.
 *
 * Every run must end in a result identical to the run without failures:
 * a call that meets the injected failure must fail with a negative errno
 * (ENOMEM is counted; others are listed), and that same call, made again,
 * must succeed, since a failed allocation is transient and nothing may
 * remember it; every later call must give the same bytes as without the
 * failure. A crash fails the test; a leak fails it under ASan
 * (LeakSanitizer at exit: every run frees everything it made).
 *
 * ZARRFS_ALLOCFAIL_STRIDE=k tries every kth N only (default 1: every N);
 * ZARRFS_ALLOCFAIL_FROM=n starts at N = n (to debug one failure: with
 * CK_FORK=no, CK_RUN_CASE=<target> and a breakpoint on allocfail_hit). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/namespace/ns_dir.h"
#include "../../../fs/views/view.h"
#include "../../../src/json/jdup.h"
#include "../../../src/store/confine.h"
#include "../../../src/store/store.h"
#include "../../../src/util/log.h"
#include "allocfail.h"
#include "../testutil.h"

#define PIECE 4096 /* bytes per read call */

/* What a run saw, one line per fact; compared with the failure-free run. */
struct transcript {
  char *text; /* allocfail_raw_malloc'd, NUL-terminated */
  size_t len, cap;
};

/* One store to sweep. */
struct target {
  const char *name;
  char dir[2048];      /* local store root, or the reference file's directory */
  char refs[4096];     /* kerchunk reference file ("" for a local store) */
  const char *walk[4]; /* directories to walk (NULL-terminated) */
};

/* One run of the path. */
struct run {
  struct transcript tr;
  long injected;    /* calls that met the injected failure */
  long enomem;      /* ... and failed with -ENOMEM */
  char other[1024]; /* ... or with another code: the first such reason */
  int bad_code;     /* a failure that was not a negative errno */
};

/* Check's assertions allocate (in fork mode a passing one sends its
 * location to the parent), so code that runs armed checks with this. */
static void need(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "check_allocfail: %s\n", what);
    abort();
  }
}

/* Append a line to the transcript (never counted as an allocation). */
static void tr_printf(struct transcript *t, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(t->text ? t->text + t->len : NULL,
                      t->text ? t->cap - t->len : 0, fmt, ap);
    va_end(ap);
    need(n >= 0, "vsnprintf failed");
    if (t->text && t->len + (size_t)n < t->cap) {
      t->len += (size_t)n;
      return;
    }
    size_t cap = t->cap ? t->cap * 2 : 4096;
    while (cap <= t->len + (size_t)n)
      cap *= 2;
    char *p = allocfail_raw_realloc(t->text, cap);
    need(p != NULL, "out of memory (transcript)");
    t->text = p;
    t->cap = cap;
  }
}

/* FNV-1a of len bytes. */
static uint64_t fnv1a(const char *p, size_t len) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (uint8_t)p[i]) * 1099511628211ull;
  return h;
}

/* A call returned rc < 0. Returns 1 when the injected failure happened
 * during that call (injected_before: whether it had happened before the
 * call) and the call should be made again; else records the error in the
 * transcript and returns 0. */
static int retry(struct run *r, int injected_before, long rc, const char *what,
                 const struct zerr *err) {
  if (!injected_before && allocfail_failed()) {
    r->injected++;
    if (rc == -ENOMEM)
      r->enomem++;
    else if (rc < 0 && rc > -4096 && !r->other[0])
      snprintf(r->other, sizeof r->other, "%s: %s (%ld)", what, err->msg, rc);
    if (rc >= 0 || rc <= -4096)
      r->bad_code = 1;
    return 1;
  }
  tr_printf(&r->tr, "%s: error %ld: %s\n", what, rc, err->msg);
  return 0;
}

/* Call expr (an int or long result) until it succeeds or fails for a
 * reason other than the injected allocation failure; rc gets the result. */
#define CALL(r, rc, what, err, expr)                                           \
  do {                                                                         \
    int before_;                                                               \
    do {                                                                       \
      before_ = allocfail_failed();                                            \
      zerr_clear(&(err));                                                      \
      (rc) = (expr);                                                           \
    } while ((rc) < 0 && retry((r), before_, (long)(rc), (what), &(err)));     \
  } while (0)

/* Open the target's store and engine; 0 or a negative errno. */
static int open_engine(const struct target *t, struct engine **e,
                       struct confine **c, struct zerr *err) {
  struct store *s;
  int rc;
  *e = NULL;
  *c = NULL;
  if (t->refs[0]) {
    if ((rc = confine_new(c, err)) < 0)
      return rc;
    if ((rc = confine_add_root(*c, t->dir, err)) < 0 ||
        (rc = store_open_refs(t->refs, *c, &s, err)) < 0) {
      confine_free(*c);
      *c = NULL;
      return rc;
    }
  } else if ((rc = store_open_local(t->dir, &s, err)) < 0) {
    return rc;
  }
  struct engine_config cfg = {64u << 20, 1u << 28, 1 << 12, 0, 0, 0};
  if ((rc = engine_new(s, &cfg, e, err)) < 0) {
    confine_free(*c);
    *c = NULL;
  }
  return rc;
}

/* Read all of a raw file into buf (size bytes). */
static int read_raw(struct engine *e, const struct ns_entry *ent, char *buf,
                    uint64_t size, struct run *r, const char *path) {
  struct zerr err;
  struct bytesrc *src = NULL;
  int rc;
  CALL(r, rc, path, err, store_get(e->store, ent->key, &src, &err));
  if (rc < 0)
    return rc;
  if (src->size != size)
    tr_printf(&r->tr, "%s: source size %llu\n", path,
              (unsigned long long)src->size);
  for (uint64_t off = 0; off < size && rc == 0; off += PIECE) {
    size_t n = size - off < PIECE ? (size_t)(size - off) : PIECE;
    CALL(r, rc, path, err, bytesrc_read_range(src, off, n, buf + off, &err));
  }
  bytesrc_unref(src);
  return rc;
}

/* Read all of a view into buf (size bytes) with a cursor, as an open file
 * does, then 64 bytes from the middle without one (as a random reader). */
static int read_view(struct engine *e, const struct ns_entry *ent, char *buf,
                     uint64_t size, struct run *r, const char *path) {
  struct zerr err;
  struct view_cursor *cur = view_cursor_new(); /* NULL: no windows */
  long n = 0;
  uint64_t off = 0;
  while (off < size) {
    CALL(r, n, path, err,
         ns_read_view(e, ent, off, PIECE, buf + off, cur, &err));
    if (n <= 0)
      break;
    off += (uint64_t)n;
  }
  view_cursor_free(e, cur);
  if (n < 0)
    return (int)n;
  if (off != size) {
    tr_printf(&r->tr, "%s: short read at %llu\n", path,
              (unsigned long long)off);
    return -EIO;
  }
  char mid[64];
  uint64_t at = size / 2;
  CALL(r, n, path, err, ns_read_view(e, ent, at, sizeof mid, mid, NULL, &err));
  if (n >= 0 && ((uint64_t)n != (size - at < 64 ? size - at : 64) ||
                 memcmp(mid, buf + at, (size_t)n)))
    tr_printf(&r->tr, "%s: middle read differs (%ld bytes)\n", path, n);
  return 0;
}

/* Stat and read one file; record its kind, size and contents' hash. */
static void visit_file(struct engine *e, const char *path,
                       const struct ns_dirent *de, struct run *r) {
  struct zerr err;
  struct ns_entry ent;
  int rc;
  uint64_t size = 0;
  CALL(r, rc, path, err, ns_resolve(e, path, &ent, &err));
  if (rc < 0)
    return;
  CALL(r, rc, path, err, ns_size(e, &ent, &size, &err));
  if (rc < 0)
    return;
  if (de->kind != ent.kind ||
      (de->attr && ent.kind == NS_RAW && de->size != size))
    tr_printf(&r->tr, "%s: listed as kind %d size %llu\n", path, de->kind,
              (unsigned long long)de->size);
  char *buf = allocfail_raw_malloc(size + 1);
  need(buf != NULL, "out of memory (file buffer)");
  if (ent.kind == NS_RAW)
    rc = read_raw(e, &ent, buf, size, r, path);
  else
    rc = read_view(e, &ent, buf, size, r, path);
  if (rc == 0)
    tr_printf(&r->tr, "F %s kind %d size %llu fnv %016llx\n", path, ent.kind,
              (unsigned long long)size,
              (unsigned long long)fnv1a(buf, (size_t)size));
  free(buf);
}

/* List a directory, then visit its files and directories in order. */
static void visit_dir(struct engine *e, const char *path, struct run *r) {
  struct zerr err;
  struct ns_dir *d = NULL;
  int rc;
  CALL(r, rc, path, err, ns_dir_open(e, path, &d, &err));
  if (rc < 0)
    return;
  size_t count = ns_dir_count(d);
  tr_printf(&r->tr, "D %s %zu\n", path, count);
  for (size_t i = 0; i < count; i++) {
    struct ns_dirent de;
    ns_dir_get(d, i, &de);
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", strcmp(path, "/") ? path : "",
             de.name);
    if (de.kind == NS_DIR)
      visit_dir(e, child, r);
    else
      visit_file(e, child, &de, r);
  }
  ns_dir_free(d);
}

/* The whole path once: open, walk, free. */
static void run_path(const struct target *t, struct run *r) {
  struct zerr err;
  struct engine *e = NULL;
  struct confine *c = NULL;
  int rc;
  CALL(r, rc, "open", err, open_engine(t, &e, &c, &err));
  if (rc < 0)
    return;
  for (int i = 0; t->walk[i]; i++)
    visit_dir(e, t->walk[i], r);
  engine_free(e);
  confine_free(c);
}

/* First line where a and b differ (for the failure message). */
static const char *first_diff(const char *a, const char *b) {
  const char *line = a;
  for (; *a && *a == *b; a++, b++)
    if (*a == '\n')
      line = a + 1;
  return line;
}

/* Sweep every N (or every stride-th) for one target. */
static void sweep(const struct target *t) {
  const char *s = getenv("ZARRFS_ALLOCFAIL_STRIDE");
  long stride = s && atol(s) > 0 ? atol(s) : 1;
  s = getenv("ZARRFS_ALLOCFAIL_FROM");
  long from = s && atol(s) > 0 ? atol(s) : 1;
  struct run ref = {0};
  allocfail_arm(0);
  run_path(t, &ref);
  allocfail_disarm();
  long total = allocfail_count();
  ck_assert_ptr_nonnull(ref.tr.text);
  ck_assert_msg(!strstr(ref.tr.text, ": error"), "%s without failures:\n%s",
                t->name, ref.tr.text);
  ck_assert_msg(total >= 50, "%s: only %ld allocations counted", t->name,
                total);
  long runs = 0, injected = 0, enomem = 0, files = 0;
  char other[1200] = "";
  for (const char *p = ref.tr.text; p; p = strchr(p, '\n'))
    files += !strncmp(*p == '\n' ? ++p : p, "F ", 2);
  for (long n = from;; n += stride) {
    struct run r = {0};
    allocfail_arm(n);
    run_path(t, &r);
    allocfail_disarm();
    if (!allocfail_failed()) {
      free(r.tr.text);
      break;
    }
    runs++;
    ck_assert_msg(n <= 4 * total + 1000, "%s: runs do not end", t->name);
    const char *got = r.tr.text ? r.tr.text : "";
    if (strcmp(got, ref.tr.text)) {
      const char *g = first_diff(got, ref.tr.text);
      const char *w = ref.tr.text + (g - got);
      ck_abort_msg("%s: allocation %ld failed: got \"%.*s\", want \"%.*s\"",
                   t->name, n, (int)strcspn(g, "\n"), g, (int)strcspn(w, "\n"),
                   w);
    }
    ck_assert_msg(!r.bad_code, "%s: allocation %ld: not a negative errno",
                  t->name, n);
    ck_assert_msg(r.injected <= 1, "%s: allocation %ld: %ld calls failed",
                  t->name, n, r.injected);
    injected += r.injected;
    enomem += r.enomem;
    if (r.other[0] && !other[0])
      snprintf(other, sizeof other, "allocation %ld: %s", n, r.other);
    free(r.tr.text);
  }
  printf("check_allocfail: %s: %ld files, %ld allocations, %ld runs (stride "
         "%ld); %ld calls failed, %ld with ENOMEM%s%s\n",
         t->name, files, total, runs, stride, injected, enomem,
         other[0] ? "; first other: " : "", other);
  ck_assert_int_ge(runs, (total - from) / stride);
  free(ref.tr.text);
}

/* A target under the fixtures; 0 when the fixtures are not there. */
static int fixture_target(struct target *t, const char *name, const char *rel,
                          const char *refs) {
  const char *fx = testutil_fixtures();
  if (!fx)
    return 0;
  memset(t, 0, sizeof *t);
  t->name = name;
  snprintf(t->dir, sizeof t->dir, "%s/%s", fx, rel);
  if (refs)
    snprintf(t->refs, sizeof t->refs, "%s/%s", t->dir, refs);
  t->walk[0] = "/";
  return 1;
}

/* Sweep a fixture store, or say it is skipped. */
static void sweep_fixture(const char *name, const char *rel, const char *refs) {
  struct target t;
  if (!fixture_target(&t, name, rel, refs)) {
    const char *ci = getenv("CI");
    ck_assert_msg(!(ci && !strcmp(ci, "true")),
                  "fixtures missing under CI=true");
    printf("check_allocfail: %s: fixtures not found: skipping\n", name);
    return;
  }
  sweep(&t);
}

START_TEST(zarrs_vlen) {
  sweep_fixture("zarrs.vlen (V3)",
                "zarrs/snapshots/supported/regular/string/a2b/zarrs.vlen/"
                "90309b49b72f0ea7",
                NULL);
}
END_TEST

START_TEST(sharded_vlen) {
  sweep_fixture("sharding_indexed with zarrs.vlen inner chunks",
                "zarrs/synthesized_vlen/sharded_inner_vlen.zarr", NULL);
}
END_TEST

START_TEST(vlen_gzip_zstd) {
  sweep_fixture("zarrs.vlen [bytes,crc32c,gzip] + zstd",
                "zarrs/synthesized_vlen/start_u64_crc32c_gzip_outer_zstd.zarr",
                NULL);
}
END_TEST

START_TEST(v2_gzip) {
  sweep_fixture("V2 gzip", "zarrs/tests_data/v2/array_gzip_C.zarr", NULL);
}
END_TEST

START_TEST(kerchunk_refs) {
  sweep_fixture("kerchunk refs_v1", "kerchunk/refs", "refs_v1.json");
}
END_TEST

/* The example store mkstore.c wrote (in the source tree: runs without the
 * fixtures): a sharded vlen array, a 2-D numeric array with missing
 * chunks, a V3 vlen array with its index at the end. */
START_TEST(example_store) {
  const char *src = getenv("ZARRFS_SRCDIR");
  struct target t = {.name = "examples/example.zarr"};
  snprintf(t.dir, sizeof t.dir, "%s/examples/example.zarr",
           src && *src ? src : "..");
  struct stat st;
  ck_assert_msg(stat(t.dir, &st) == 0, "%s missing", t.dir);
  t.walk[0] = "/obs_names_sharded";
  t.walk[1] = "/matrix";
  t.walk[2] = "/flags";
  sweep(&t);
}
END_TEST

/* The duplicate-key scan (src/json/jdup.c) on its own: it allocates with
 * malloc only (the JSON lexer, no jansson), so check_nomem's jansson
 * injection cannot reach it. Every failing N gives -ENOMEM and frees what
 * it made (LeakSanitizer); the first N it does not reach gives both
 * duplicated keys, decoded. */
START_TEST(jdup_keys_sweep) {
  static const char text[] =
      "{\"version\":1,\"refs\":{\"a\":\"x\",\"b\":\"y\",\"\\u0061\":"
      "\"z\",\"b\":\"w\",\"c\":[1,{\"a\":NaN}]}}";
  long n;
  for (n = 1;; n++) {
    char **keys = NULL;
    size_t nk = 0;
    struct zerr err = {0};
    allocfail_arm(n);
    int rc = jdup_keys(text, sizeof text - 1, "refs", 0, &keys, &nk, &err);
    int failed = allocfail_failed();
    allocfail_disarm();
    if (failed) {
      ck_assert_msg(rc == -ENOMEM && err.code == ENOMEM, "N=%ld: rc %d '%s'", n,
                    rc, err.msg);
      ck_assert_ptr_null(keys);
      continue;
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(nk, 2);
    ck_assert_str_eq(keys[0], "a");
    ck_assert_str_eq(keys[1], "b");
    jdup_free(keys, nk);
    break;
  }
  ck_assert_int_gt(n, 2); /* some allocation was made to fail */
}
END_TEST

/* ZARRFS_ALLOCFAIL_STORE=dir: sweep that local store too (any store, to
 * look for more; not part of the default run). */
START_TEST(store_from_env) {
  struct target t = {.name = getenv("ZARRFS_ALLOCFAIL_STORE")};
  snprintf(t.dir, sizeof t.dir, "%s", t.name);
  t.walk[0] = "/";
  sweep(&t);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("allocfail");
  /* One case per store, so CK_RUN_CASE picks one. */
  const struct {
    const char *name;
    const TTest *test;
  } cases[] = {
      {"zarrs_vlen", zarrs_vlen},         {"sharded_vlen", sharded_vlen},
      {"vlen_gzip_zstd", vlen_gzip_zstd}, {"v2_gzip", v2_gzip},
      {"kerchunk_refs", kerchunk_refs},   {"example_store", example_store},
      {"jdup_keys", jdup_keys_sweep},
  };
  if (getenv("ZARRFS_ALLOCFAIL_STORE")) {
    TCase *tc = tcase_create("store_from_env");
    tcase_set_timeout(tc, 3600);
    tcase_add_test(tc, store_from_env);
    suite_add_tcase(s, tc);
  }
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    if (!ZFS_WITH_BLOSC && !strcmp(cases[i].name, "kerchunk_refs")) {
      /* refs_v1.json's arrays are blosc-compressed */
      testutil_skip_without("check_allocfail", "blosc", "kerchunk_refs");
      continue;
    }
    TCase *tc = tcase_create(cases[i].name);
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return testutil_run(s);
}
