/* check_hierarchy.c - hierarchies through the engine and the namespace, no
 * mount: consolidated metadata (V3 consolidated_metadata, V2 .zmetadata)
 * used for node metadata and listings, and ignored with no_consolidated;
 * malformed tables (one log line, then per-node metadata); 0-d and
 * zero-size arrays; a refused chunk grid; the nested groups
 * of zarrs' hierarchy.zarr; the consolidated fixtures of zarr-python.
 *
 * Generated stores differ on purpose between consolidated and per-node
 * metadata (shape, fill value), so each result shows which one was used. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/json/zjson.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

static char tmpdir[64];

/* A fresh empty store directory. */
static void store_dir_new(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/check_hierarchy.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* Remove the store directory. */
static void store_dir_rm(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Write a file under tmpdir, creating parent directories. */
static void put_file(const char *rel, const void *data, size_t len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
  for (char *p = path + strlen(tmpdir) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write %s", path);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
}

/* Write text. */
static void put_text(const char *rel, const char *text) {
  put_file(rel, text, strlen(text));
}

/* Write int32 values little-endian. */
static void put_i32(const char *rel, const int32_t *v, size_t n) {
  uint8_t b[64];
  for (size_t i = 0; i < n; i++)
    for (int k = 0; k < 4; k++)
      b[4 * i + k] = (uint8_t)((uint32_t)v[i] >> (8 * k));
  put_file(rel, b, 4 * n);
}

/* A V3 int32 array document (shape and chunk as JSON lists). */
static const char *v3_arr(char *buf, size_t len, const char *shape,
                          const char *chunk, int fill, const char *keys) {
  snprintf(buf, len,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":%s}},\"chunk_key_encoding\":"
           "{\"name\":\"%s\"},\"fill_value\":%d,\"codecs\":[{\"name\":"
           "\"bytes\",\"configuration\":{\"endian\":\"little\"}}]}",
           shape, chunk, keys, fill);
  return buf;
}

/* A V2 <i4 .zarray document. */
static const char *v2_arr(char *buf, size_t len, const char *shape,
                          const char *chunk, int fill) {
  snprintf(buf, len,
           "{\"zarr_format\":2,\"shape\":%s,\"chunks\":%s,\"dtype\":\"<i4\","
           "\"compressor\":null,\"fill_value\":%d,\"order\":\"C\","
           "\"filters\":null}",
           shape, chunk, fill);
  return buf;
}

static const char *GROUP = "{\"zarr_format\":3,\"node_type\":\"group\"}";

/* An engine over tmpdir (or dir when given). */
static struct engine *open_engine(const char *dir, int no_consolidated) {
  struct zerr err = {0};
  struct store *s;
  ck_assert_int_eq(store_open_local(dir ? dir : tmpdir, &s, &err), 0);
  struct engine_config cfg = {64u << 20, 1u << 30, 1 << 16, no_consolidated, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* The whole text of a view or raw file at path (malloc'd), or NULL with
 * *rc the error. */
static char *read_path(struct engine *e, const char *path, int *rc,
                       struct zerr *err) {
  struct ns_entry ent;
  uint64_t size;
  zerr_clear(err);
  if ((*rc = ns_resolve(e, path, &ent, err)) < 0 ||
      (*rc = ns_size(e, &ent, &size, err)) < 0)
    return NULL;
  ck_assert_msg(ent.kind == NS_ARRAY_VIEW || ent.kind == NS_CHUNK_VIEW,
                "%s is not a view", path);
  char *text = malloc(size + 1);
  uint64_t off = 0;
  while (off < size) {
    long n = ns_read_view(e, &ent, off, size - off, text + off, NULL, err);
    if (n < 0) {
      *rc = (int)n;
      free(text);
      return NULL;
    }
    ck_assert_int_gt(n, 0);
    off += (uint64_t)n;
  }
  text[off] = '\0';
  *rc = 0;
  return text;
}

/* Assert that view path reads exactly want. */
static void expect_view(struct engine *e, const char *path, const char *want) {
  struct zerr err = {0};
  int rc;
  char *got = read_path(e, path, &rc, &err);
  ck_assert_msg(got != NULL, "%s: %d %s", path, rc, err.msg);
  ck_assert_msg(!strcmp(got, want), "%s: got '%s', want '%s'", path, got, want);
  free(got);
}

/* Assert that path does not exist. */
static void expect_absent(struct engine *e, const char *path) {
  struct zerr err = {0};
  struct ns_entry ent;
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == -ENOENT,
                "%s should not exist", path);
}

/* Collected directory names. */
struct names {
  char *v[256];
  int n;
};

/* ns_list callback. */
static int names_add(void *ud, const char *name, int is_dir) {
  (void)is_dir;
  struct names *l = ud;
  ck_assert_int_lt(l->n, 256);
  l->v[l->n++] = strdup(name);
  return 0;
}

/* Order names by strcmp. */
static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Assert that directory path lists exactly want (names sorted, one space
 * between; duplicates would show). */
static void expect_list(struct engine *e, const char *path, const char *want) {
  struct names l = {0};
  struct zerr err = {0};
  ck_assert_msg(ns_list(e, path, names_add, &l, &err) == 0, "%s: %s", path,
                err.msg);
  qsort(l.v, (size_t)l.n, sizeof *l.v, str_cmp);
  char got[4096] = "";
  for (int i = 0; i < l.n; i++) {
    if (i)
      strcat(got, " ");
    strncat(got, l.v[i], sizeof got - strlen(got) - 2);
    free(l.v[i]);
  }
  ck_assert_msg(!strcmp(got, want), "ls %s: got '%s', want '%s'", path, got,
                want);
}

/* ---- log capture: zlog writes whole lines to fd 2 ---- */

static int cap_fd = -1, cap_saved = -1;

/* Send fd 2 to a temporary file. */
static void cap_begin(void) {
  char tmpl[] = "/tmp/check_hierarchy_log.XXXXXX";
  cap_fd = mkstemp(tmpl);
  ck_assert_int_ge(cap_fd, 0);
  unlink(tmpl);
  fflush(stderr);
  cap_saved = dup(2);
  dup2(cap_fd, 2);
}

/* Restore fd 2; return what was logged (malloc'd) and its line count. */
static char *cap_end(int *lines) {
  dup2(cap_saved, 2);
  close(cap_saved);
  off_t n = lseek(cap_fd, 0, SEEK_END);
  char *text = malloc((size_t)n + 1);
  ck_assert_int_eq(pread(cap_fd, text, (size_t)n, 0), n);
  text[n] = '\0';
  close(cap_fd);
  *lines = 0;
  for (char *p = text; *p; p++)
    *lines += *p == '\n';
  return text;
}

/* ---- consolidated metadata ---- */

/* The V3 store of the consolidated tests: per-node and consolidated
 * metadata disagree on purpose. */
static void write_v3_store(void) {
  char a[1024], b[1024], c[1024], d[1024], v2[1024], root[8192];
  snprintf(
      root, sizeof root,
      "{\"zarr_format\":3,\"node_type\":\"group\",\"consolidated_metadata\":"
      "{\"kind\":\"inline\",\"must_understand\":false,\"metadata\":{"
      "\"arr\":%s,\"grp\":%s,\"grp/ghost\":%s,\"half\":%s,"
      "\"deep/x/arr2\":%s,\"v2arr\":%s,\"arr/inner\":%s}}}",
      v3_arr(a, sizeof a, "[2]", "[2]", 7, "default"), GROUP,
      v3_arr(b, sizeof b, "[3]", "[3]", 5, "default"),
      v3_arr(c, sizeof c, "[2]", "[2]", 0, "default"),
      v3_arr(d, sizeof d, "[1]", "[1]", 3, "default"),
      v2_arr(v2, sizeof v2, "[2]", "[2]", 6), GROUP);
  put_text("zarr.json", root);
  /* Per-node: arr says shape [4], fill 0; half has a chunk but no
   * zarr.json; grp/ghost, deep/ and v2arr/ do not exist at all; extra/ is
   * not in the table. */
  put_text("arr/zarr.json", v3_arr(a, sizeof a, "[4]", "[4]", 0, "default"));
  put_text("grp/zarr.json", GROUP);
  int32_t half[2] = {1, 2};
  put_i32("half/c/0", half, 2);
  put_text("extra/zarr.json", GROUP);
}

START_TEST(v3_consolidated_used) {
  store_dir_new();
  write_v3_store();
  struct engine *e = open_engine(NULL, 0);
  ck_assert_ptr_nonnull(node_get(e->nodes, "")->cons);
  uint64_t opens = e->store->stats.opens;
  /* Node metadata comes from the table: no per-node file is opened. */
  ck_assert_int_eq(node_get(e->nodes, "arr")->kind, ZNODE_ARRAY);
  ck_assert_int_eq(node_get(e->nodes, "grp/ghost")->kind, ZNODE_ARRAY);
  ck_assert_int_eq(node_get(e->nodes, "v2arr")->kind, ZNODE_ARRAY);
  ck_assert_uint_eq(e->store->stats.opens, opens);
  expect_view(e, "/arr/values.txt", "7\n7\n");
  expect_view(e, "/grp/ghost/values.txt", "5\n5\n5\n");
  expect_view(e, "/half/values.txt", "1\n2\n");
  expect_view(e, "/half/c/0.txt", "1\n2\n");
  expect_view(e, "/deep/x/arr2/values.txt", "3\n");
  expect_view(e, "/v2arr/values.txt", "6\n6\n");
  /* Listings: the union of the store and the table, each name once. */
  expect_list(e, "/", "arr deep extra grp half info.txt v2arr zarr.json");
  expect_list(e, "/grp", "ghost info.txt zarr.json");
  expect_list(e, "/grp/ghost", "info.txt values.txt");
  expect_list(e, "/deep", "x");
  expect_list(e, "/deep/x", "arr2");
  expect_list(e, "/half", "c info.txt values.txt");
  expect_list(e, "/half/c", "0 0.txt");
  /* Nothing below an array is a node, whatever the table says. */
  expect_list(e, "/arr", "info.txt values.txt zarr.json");
  expect_absent(e, "/arr/inner");
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/grp/ghost", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_DIR);
  ck_assert_int_eq(ns_resolve(e, "/deep/x", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_DIR);
  /* Raw metadata is still the stored file, byte for byte. */
  ck_assert_int_eq(ns_resolve(e, "/arr/zarr.json", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  struct stat st;
  char p[256];
  snprintf(p, sizeof p, "%s/arr/zarr.json", tmpdir);
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_uint_eq(ent.raw_size, (uint64_t)st.st_size);
  expect_absent(e, "/grp/ghost/zarr.json");
  expect_absent(e, "/nothere");
  expect_absent(e, "/grp/nothere");
  engine_free(e);

  /* consolidated=no: per-node metadata only. */
  e = open_engine(NULL, 1);
  ck_assert_ptr_null(node_get(e->nodes, "")->cons);
  expect_view(e, "/arr/values.txt", "0\n0\n0\n0\n");
  expect_absent(e, "/grp/ghost");
  expect_absent(e, "/grp/ghost/values.txt");
  expect_absent(e, "/half/values.txt");
  expect_absent(e, "/v2arr");
  expect_list(e, "/", "arr extra grp half info.txt zarr.json");
  expect_list(e, "/grp", "info.txt zarr.json");
  expect_list(e, "/half", "c");
  engine_free(e);
  store_dir_rm();
}
END_TEST

START_TEST(v2_zmetadata_used) {
  store_dir_new();
  char a[1024], b[1024], zm[4096];
  put_text(".zgroup", "{\"zarr_format\":2}");
  snprintf(zm, sizeof zm,
           "{\"zarr_consolidated_format\":1,\"metadata\":{"
           "\".zgroup\":{\"zarr_format\":2},\".zattrs\":{},"
           "\"arr/.zarray\":%s,\"arr/.zattrs\":{\"x\":1},"
           "\"sub/.zgroup\":{\"zarr_format\":2},\"sub/ghost/.zarray\":%s}}",
           v2_arr(a, sizeof a, "[2]", "[2]", 9),
           v2_arr(b, sizeof b, "[1]", "[1]", 4));
  put_text(".zmetadata", zm);
  put_text("arr/.zarray", v2_arr(a, sizeof a, "[3]", "[3]", 0));
  put_text("sub/.zgroup", "{\"zarr_format\":2}");
  struct engine *e = open_engine(NULL, 0);
  ck_assert_ptr_nonnull(node_get(e->nodes, "")->cons);
  uint64_t opens = e->store->stats.opens;
  ck_assert_int_eq(node_get(e->nodes, "arr")->kind, ZNODE_ARRAY);
  ck_assert_int_eq(node_get(e->nodes, "sub")->kind, ZNODE_GROUP);
  ck_assert_uint_eq(e->store->stats.opens, opens);
  expect_view(e, "/arr/values.txt", "9\n9\n");
  expect_view(e, "/sub/ghost/values.txt", "4\n");
  expect_list(e, "/", ".zgroup .zmetadata arr info.txt sub");
  expect_list(e, "/sub", ".zgroup ghost info.txt");
  expect_list(e, "/sub/ghost", "info.txt values.txt");
  engine_free(e);

  e = open_engine(NULL, 1);
  expect_view(e, "/arr/values.txt", "0\n0\n0\n");
  expect_absent(e, "/sub/ghost");
  expect_list(e, "/sub", ".zgroup info.txt");
  engine_free(e);
  store_dir_rm();
}
END_TEST

/* Malformed consolidated metadata: the mount goes on with per-node
 * metadata, and one line names the key and the reason. */
static const struct {
  int v2;           /* 0: root zarr.json member text; 1: .zmetadata text */
  const char *text; /* the member / the .zmetadata document */
  const char *want; /* in the log line */
} BAD_TABLES[] = {
    {0, "5", "consolidated_metadata must be an object"},
    {0, "[]", "consolidated_metadata must be an object"},
    {0, "{\"kind\":\"other\",\"metadata\":{}}", "kind must be \"inline\""},
    {0, "{\"metadata\":{}}", "kind must be \"inline\""},
    {0, "{\"kind\":\"inline\",\"metadata\":[]}", "metadata must be an object"},
    {0, "{\"kind\":\"inline\"}", "metadata must be an object"},
    {0, "{\"kind\":\"inline\",\"metadata\":{\"arr\":3}}",
     "consolidated entry 'arr': not an object"},
    {0,
     "{\"kind\":\"inline\",\"metadata\":{\"../x\":{\"zarr_format\":3,"
     "\"node_type\":\"group\"}}}",
     "'../x': invalid node path"},
    {0,
     "{\"kind\":\"inline\",\"metadata\":{\"a//b\":{\"zarr_format\":3,"
     "\"node_type\":\"group\"}}}",
     "'a//b': invalid node path"},
    {0,
     "{\"kind\":\"inline\",\"metadata\":{\"a/\":{\"zarr_format\":3,"
     "\"node_type\":\"group\"}}}",
     "'a/': invalid node path"},
    {0, "{\"kind\":\"inline\",\"metadata\":{\"arr\":{\"zarr_format\":4}}}",
     "'arr': zarr_format must be 2 or 3"},
    {0,
     "{\"kind\":\"inline\",\"metadata\":{\"arr\":{\"zarr_format\":3,"
     "\"node_type\":\"banana\"}}}",
     "'arr': node_type must be"},
    /* A well-formed table with a bad entry: that node falls back. */
    {0,
     "{\"kind\":\"inline\",\"metadata\":{\"arr\":{\"zarr_format\":3,"
     "\"node_type\":\"array\",\"shape\":[-1]}}}",
     "consolidated metadata of 'arr' ignored"},
    {0,
     "{\"kind\":\"inline\",\"metadata\":{\"arr\":{\"zarr_format\":2,"
     "\"shape\":[2]}}}",
     "consolidated metadata of 'arr' ignored"},
    {1, "not json", "consolidated metadata ignored"},
    {1, "[1,2]", ".zmetadata is not a JSON object"},
    {1, "{\"zarr_consolidated_format\":2,\"metadata\":{}}",
     "zarr_consolidated_format must be 1"},
    {1, "{\"metadata\":{}}", "zarr_consolidated_format must be 1"},
    {1, "{\"zarr_consolidated_format\":1,\"metadata\":5}",
     "metadata must be an object"},
    {1, "{\"zarr_consolidated_format\":1,\"metadata\":{\"arr/.zarray\":5}}",
     "'arr/.zarray': not an object"},
    {1, "{\"zarr_consolidated_format\":1,\"metadata\":{\"a//.zarray\":{}}}",
     "'a//.zarray': invalid key"},
    {1, "{\"zarr_consolidated_format\":1,\"metadata\":{\"x.zarray\":{}}}",
     "'x.zarray': invalid key"},
    {1,
     "{\"zarr_consolidated_format\":1,\"metadata\":{\"arr/.zarray\":{"
     "\"zarr_format\":2}}}",
     "consolidated metadata of 'arr' ignored"},
};

START_TEST(malformed_tables) {
  const int i = _i;
  store_dir_new();
  char a[1024], root[4096];
  if (BAD_TABLES[i].v2) {
    put_text(".zgroup", "{\"zarr_format\":2}");
    put_text(".zmetadata", BAD_TABLES[i].text);
    put_text("arr/.zarray", v2_arr(a, sizeof a, "[2]", "[2]", 0));
  } else {
    snprintf(root, sizeof root,
             "{\"zarr_format\":3,\"node_type\":\"group\","
             "\"consolidated_metadata\":%s}",
             BAD_TABLES[i].text);
    put_text("zarr.json", root);
    put_text("arr/zarr.json", v3_arr(a, sizeof a, "[2]", "[2]", 0, "default"));
  }
  cap_begin();
  struct engine *e = open_engine(NULL, 0);
  expect_view(e, "/arr/values.txt", "0\n0\n");
  expect_view(e, "/arr/values.txt", "0\n0\n");
  expect_list(e, "/",
              BAD_TABLES[i].v2 ? ".zgroup .zmetadata arr info.txt"
                               : "arr info.txt zarr.json");
  engine_free(e);
  int lines;
  char *log = cap_end(&lines);
  const char *key = BAD_TABLES[i].v2 ? ": .zmetadata: " : ": zarr.json: ";
  ck_assert_msg(lines == 1 && strstr(log, BAD_TABLES[i].want) &&
                    strstr(log, key),
                "case %d: want one line with '%s' and '%s', got %d: %s", i, key,
                BAD_TABLES[i].want, lines, log);
  free(log);
  store_dir_rm();
}
END_TEST

/* ---- 0-d and zero-size arrays, an unsupported grid ---- */

START_TEST(scalar_and_empty_arrays) {
  store_dir_new();
  char a[1024];
  put_text("zarr.json", GROUP);
  int32_t v = -7;
  put_text("s0/zarr.json", v3_arr(a, sizeof a, "[]", "[]", 0, "default"));
  put_i32("s0/c", &v, 1);
  v = 42;
  put_text("s0v2/zarr.json", v3_arr(a, sizeof a, "[]", "[]", 0, "v2"));
  put_i32("s0v2/0", &v, 1);
  put_text("s0fill/zarr.json", v3_arr(a, sizeof a, "[]", "[]", 3, "default"));
  put_text("z1/zarr.json", v3_arr(a, sizeof a, "[0]", "[2]", 1, "default"));
  int32_t stray[2] = {5, 6};
  put_i32("z1/c/0", stray, 2); /* outside the (empty) grid */
  put_text("z2/zarr.json", v3_arr(a, sizeof a, "[3,0]", "[2,2]", 1, "default"));
  put_text("v2s/.zarray", v2_arr(a, sizeof a, "[]", "[]", 0));
  v = 11;
  put_i32("v2s/0", &v, 1);
  put_text("v2z/.zarray", v2_arr(a, sizeof a, "[0,4]", "[2,2]", 0));

  struct engine *e = open_engine(NULL, 0);
  expect_view(e, "/s0/values.txt", "-7\n");
  expect_view(e, "/s0/c.txt", "-7\n");
  expect_list(e, "/s0", "c c.txt info.txt values.txt zarr.json");
  expect_view(e, "/s0v2/values.txt", "42\n");
  expect_view(e, "/s0v2/0.txt", "42\n");
  expect_list(e, "/s0v2", "0 0.txt info.txt values.txt zarr.json");
  expect_view(e, "/s0fill/values.txt", "3\n");
  expect_list(e, "/s0fill", "info.txt values.txt zarr.json");
  expect_view(e, "/z1/values.txt", "");
  expect_list(e, "/z1", "c info.txt values.txt zarr.json");
  expect_list(e, "/z1/c", "0");
  expect_absent(e, "/z1/c/0.txt");
  expect_view(e, "/z2/values.txt", "");
  expect_view(e, "/v2s/values.txt", "11\n");
  expect_list(e, "/v2s", ".zarray 0 0.txt info.txt values.txt");
  expect_view(e, "/v2z/values.txt", "");
  expect_view(e, "/v2z/rows.csv", "");
  expect_list(e, "/v2z", ".zarray info.txt rows.csv values.txt");
  engine_free(e);
  store_dir_rm();
}
END_TEST

START_TEST(unknown_grid_refused) {
  store_dir_new();
  put_text("zarr.json", GROUP);
  put_text("rect/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[5],"
           "\"data_type\":\"int32\",\"chunk_grid\":{\"name\":"
           "\"zarrs.regular_bounded\",\"configuration\":{\"chunk_shape\":"
           "[2]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
           "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
           "\"little\"}}]}");
  int32_t v[2] = {1, 2};
  put_i32("rect/c/0", v, 2);
  cap_begin();
  struct engine *e = open_engine(NULL, 0);
  struct ns_entry ent;
  struct zerr err = {0};
  /* The array mounts, its raw keys are served. */
  ck_assert_int_eq(ns_resolve(e, "/rect/zarr.json", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  ck_assert_int_eq(ns_resolve(e, "/rect/c/0", &ent, &err), 0);
  ck_assert_int_eq(ent.kind, NS_RAW);
  ck_assert_uint_eq(ent.raw_size, 8);
  expect_list(e, "/rect", "c info.txt values.txt zarr.json");
  /* Its views fail with EIO naming the grid, every time. */
  for (int k = 0; k < 3; k++) {
    int rc;
    char *t = read_path(e, "/rect/values.txt", &rc, &err);
    ck_assert_ptr_null(t);
    ck_assert_int_eq(rc, -EIO);
    ck_assert_msg(strstr(err.msg, "unsupported chunk grid "
                                  "'zarrs.regular_bounded'"),
                  "%s", err.msg);
  }
  expect_absent(e, "/rect/c/0.txt");
  engine_free(e);
  int lines;
  char *log = cap_end(&lines);
  ck_assert_msg(lines == 1 &&
                    strstr(log, "rect/zarr.json: unsupported chunk grid "
                                "'zarrs.regular_bounded'\n"),
                "%d lines: %s", lines, log);
  free(log);
  store_dir_rm();
}
END_TEST

/* ---- fixtures ---- */

/* The fixtures directory; the tests that call it run only when it exists
 * (testutil_add_fixture_tcase). */
static const char *fixtures(void) {
  const char *fx = testutil_fixtures();
  ck_assert_ptr_nonnull(fx);
  return fx;
}

/* Print the node tree below path as zarrs' hierarchy test shows it. */
static void tree(struct engine *e, const char *path, int depth, char *out,
                 size_t cap) {
  struct names l = {0};
  struct zerr err = {0};
  ck_assert_int_eq(ns_list(e, path, names_add, &l, &err), 0);
  qsort(l.v, (size_t)l.n, sizeof *l.v, str_cmp);
  for (int i = 0; i < l.n; i++) {
    char child[1024];
    snprintf(child, sizeof child, "%s%s%s", path, *path ? "/" : "", l.v[i]);
    const struct znode *n = node_get(e->nodes, child);
    size_t o = strlen(out);
    if (n->kind == ZNODE_GROUP) {
      snprintf(out + o, cap - o, "%*s%s\n", 2 * depth, "", l.v[i]);
      tree(e, child, depth + 1, out, cap);
    } else if (n->kind == ZNODE_ARRAY) {
      o += (size_t)snprintf(out + o, cap - o, "%*s%s [", 2 * depth, "", l.v[i]);
      for (int d = 0; d < n->meta->ndim; d++)
        o += (size_t)snprintf(out + o, cap - o, "%s%llu", d ? ", " : "",
                              (unsigned long long)n->meta->shape[d]);
      snprintf(out + o, cap - o, "] %s\n", n->meta->dtype.name);
    }
    free(l.v[i]);
  }
}

START_TEST(zarrs_hierarchy_tree) {
  const char *fx = fixtures();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/zarrs/tests_data/hierarchy.zarr", fx);
  for (int nc = 0; nc < 2; nc++) {
    struct engine *e = open_engine(dir, nc);
    char out[4096] = "/\n";
    tree(e, "", 1, out, sizeof out);
    ck_assert_str_eq(out, "/\n"
                          "  a\n"
                          "    baz [10000, 1000] float64\n"
                          "    foo [10000, 1000] float64\n"
                          "  b\n");
    engine_free(e);
  }
}
END_TEST

/* Every node a fixture's table lists gets, with consolidated metadata and
 * without opening a file, the same metadata its own file holds; and the
 * group lists the same children either way. */
static void check_fixture_table(const char *store, const char *group,
                                size_t want_nodes) {
  const char *fx = fixtures();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/%s", fx, store);
  struct engine *ec = open_engine(dir, 0), *ep = open_engine(dir, 1);
  const struct znode *g = node_get(ec->nodes, group);
  ck_assert_ptr_nonnull(g->cons);
  ck_assert_uint_eq(zcons_count(g->cons), want_nodes);
  ck_assert_ptr_null(node_get(ep->nodes, group)->cons);
  /* The node paths, from the table's own document. */
  json_t *doc =
      g->meta ? json_incref(json_object_get(
                    json_object_get(g->meta->root, "consolidated_metadata"),
                    "metadata"))
              : NULL;
  if (!doc) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s%s.zmetadata", dir, group, *group ? "/" : "");
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    static char text[1 << 20];
    size_t tl = fread(text, 1, sizeof text, f);
    fclose(f);
    struct zerr zerr = {0};
    json_t *zm = zjson_loadb(text, tl, &zerr); /* bare NaN tokens */
    ck_assert_msg(zm != NULL, "%s", zerr.msg);
    doc = json_incref(json_object_get(zm, "metadata"));
    json_decref(zm);
  }
  size_t nodes = 0;
  const char *k;
  json_t *v;
  uint64_t opens = ec->store->stats.opens;
  json_object_foreach(doc, k, v) {
    char rel[1024];
    snprintf(rel, sizeof rel, "%s", k);
    size_t kl = strlen(rel);
    if (!g->meta) { /* V2 keys: "a/b/.zarray", "a/.zgroup" */
      if (kl < 8 || (strcmp(rel + kl - 8, "/.zarray") &&
                     strcmp(rel + kl - 8, "/.zgroup")))
        continue;
      rel[kl - 8] = '\0';
    }
    char path[2048];
    snprintf(path, sizeof path, "%s%s%s", group, *group ? "/" : "", rel);
    const struct znode *a = node_get(ec->nodes, path), *b = node_get(ep->nodes, path);
    ck_assert_msg(a->kind == b->kind && a->kind != ZNODE_NONE, "%s", path);
    if (a->kind == ZNODE_ARRAY)
      ck_assert_msg(json_equal(a->meta->root, b->meta->root), "%s", path);
    nodes++;
  }
  ck_assert_uint_eq(nodes, want_nodes);
  ck_assert_uint_eq(ec->store->stats.opens, opens);
  json_decref(doc);
  struct names la = {0}, lb = {0};
  struct zerr err = {0};
  ck_assert_int_eq(ns_list(ec, group, names_add, &la, &err), 0);
  ck_assert_int_eq(ns_list(ep, group, names_add, &lb, &err), 0);
  ck_assert_int_eq(la.n, lb.n);
  for (int i = 0; i < la.n; i++) {
    ck_assert_str_eq(la.v[i], lb.v[i]);
    free(la.v[i]);
    free(lb.v[i]);
  }
  engine_free(ec);
  engine_free(ep);
}

START_TEST(fixture_tables) {
  check_fixture_table("zarr-python-v3/v3_zarr_python_fixtures.zarr",
                      "consolidated", 4);
  check_fixture_table("zarr-python-v2/v2_python.zarr", "", 85);
}
END_TEST

START_TEST(fixture_scalar_and_empty) {
  const char *fx = fixtures();
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/zarrita/v3_zarrita.zarr", fx);
  struct engine *e = open_engine(dir, 0);
  expect_view(e, "/nd/int32_scalar_0d/values.txt", "-7\n");
  expect_view(e, "/nd/int32_scalar_0d/c.txt", "-7\n");
  expect_list(e, "/nd/int32_scalar_0d",
              "c c.txt info.txt values.txt zarr.json");
  expect_view(e, "/nd/float64_scalar_0d/values.txt", "-1234.5678\n");
  expect_view(e, "/nd/int32_zero_size/values.txt", "");
  expect_list(e, "/nd/int32_zero_size", "info.txt values.txt zarr.json");
  expect_view(e, "/nd/float32_zero_size_2d/values.txt", "");
  engine_free(e);
  snprintf(dir, sizeof dir, "%s/zarr-python-v2/v2_python.zarr", fx);
  e = open_engine(dir, 0);
  expect_view(e, "/misc/scalar_0d_f8/values.txt", "-1234.5678\n");
  expect_view(e, "/misc/scalar_0d_f8/0.txt", "-1234.5678\n");
  expect_view(e, "/misc/scalar_0d_be_i4/values.txt", "-7\n");
  expect_view(e, "/misc/zero_size/values.txt", "");
  engine_free(e);
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("hier");
  TCase *tc = tcase_create("hier");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, v3_consolidated_used);
  tcase_add_test(tc, v2_zmetadata_used);
  tcase_add_loop_test(tc, malformed_tables, 0,
                      (int)(sizeof BAD_TABLES / sizeof *BAD_TABLES));
  tcase_add_test(tc, scalar_and_empty_arrays);
  tcase_add_test(tc, unknown_grid_refused);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 60);
  tcase_add_test(fx, zarrs_hierarchy_tree);
  tcase_add_test(fx, fixture_tables);
  tcase_add_test(fx, fixture_scalar_and_empty);
  testutil_add_fixture_tcase(s, fx, "check_hierarchy");
  return testutil_run(s);
}
