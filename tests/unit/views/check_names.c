/* check_names.c - no store look-up for a name zarrfs makes up, through the
 * engine and the namespace, no mount: a counting store (a local directory
 * dressed as plain HTTP: remote, unlistable) records every key it is
 * asked about while values.txt, info.txt, K.txt, /.zarrfs and names below
 * them are resolved, sized and listed, for a V3 array, a V2 array and a
 * V3 group; none of them may reach it, nor a V2 name of a V3 node or the
 * reverse. A stored key of a made-up name is not served there. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/namespace/ns_dir.h"
#include "../testutil.h"

static char tmpdir[64];

/* Keys asked about, one per line. */
static char asked[1 << 16];

/* A local store seen as a remote one, recording each key it is asked. */
struct cstore {
  struct store base;
  struct store *inner;
};

/* Record key (with the operation's letter). */
static void note(char op, const char *key) {
  size_t l = strlen(asked);
  snprintf(asked + l, sizeof asked - l, "%c %s\n", op, key);
}

/* Forward get. */
static int c_get(struct store *s, const char *key, struct bytesrc **out,
                 struct zerr *err) {
  note('g', key);
  return store_get(((struct cstore *)s)->inner, key, out, err);
}

/* Forward stat. */
static int c_stat(struct store *s, const char *key, enum store_entry_type *t,
                  uint64_t *size, int64_t *mtime, struct zerr *err) {
  note('s', key);
  return store_stat_time(((struct cstore *)s)->inner, key, t, size, mtime, err);
}

/* No listing, as plain HTTP. */
static int c_list(struct store *s, const char *prefix, store_list_cb cb,
                  void *ud, struct zerr *err) {
  (void)s, (void)cb, (void)ud;
  note('l', prefix);
  return zerr_set(err, ENOTSUP, "HTTP stores cannot be listed");
}

/* Free the wrapper and the local store. */
static void c_destroy(struct store *s) {
  store_free(((struct cstore *)s)->inner);
  free(s->location);
  free(s);
}

static const struct store_ops c_ops = {c_get, c_stat, c_list, c_destroy};

/* An engine (lazy sizes, as remote mounts) over tmpdir through a counting
 * store. */
static struct engine *open_counting(void) {
  struct cstore *c = calloc(1, sizeof *c);
  struct zerr err = {0};
  ck_assert_ptr_nonnull(c);
  ck_assert_int_eq(store_open_local(tmpdir, &c->inner, &err), 0);
  c->base.ops = &c_ops;
  c->base.location = strdup("http://127.0.0.1:1/t.zarr");
  c->base.remote = 1;
  c->base.unlistable = 1;
  struct engine_config cfg = {.cache_size = 64u << 20,
                              .max_decoded = 1u << 28,
                              .size_table_max = 1 << 12,
                              .lazy_sizes = 1};
  struct engine *e;
  ck_assert_int_eq(engine_new(&c->base, &cfg, &e, &err), 0);
  asked[0] = '\0';
  return e;
}

/* A fresh store directory. */
static void dir_new(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/check_names.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

/* Remove it. */
static void dir_rm(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Write text under tmpdir, creating parent directories. */
static void put(const char *rel, const char *text) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
  for (char *p = path + strlen(tmpdir) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "%s", path);
  ck_assert_uint_eq(fwrite(text, 1, strlen(text), f), strlen(text));
  fclose(f);
}

/* The text of a view read to its end (lazy sizes: its size may be 0). */
static void view_text(struct engine *e, const char *path, char *buf,
                      size_t cap) {
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
  size_t off = 0;
  long n;
  while ((n = ns_read_view(e, &ent, off, cap - 1 - off, buf + off, NULL,
                           &err)) > 0)
    off += (size_t)n;
  ck_assert_int_eq(n, 0);
  buf[off] = '\0';
}

static const char v3_array[] =
    "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[4],"
    "\"data_type\":\"uint8\",\"chunk_grid\":{\"name\":\"regular\","
    "\"configuration\":{\"chunk_shape\":[2]}},\"chunk_key_encoding\":"
    "{\"name\":\"default\"},\"fill_value\":0,\"codecs\":[{\"name\":"
    "\"bytes\"}]}";
static const char v2_array[] =
    "{\"zarr_format\":2,\"shape\":[4],\"chunks\":[2],\"dtype\":\"|u1\","
    "\"compressor\":null,\"fill_value\":0,\"order\":\"C\",\"filters\":null}";

/* Resolve path and, when it resolves, size it: the errno (0, ENOENT...). */
static int touch(struct engine *e, const char *path, enum ns_kind *kind) {
  struct ns_entry ent;
  struct zerr err = {0};
  int rc = ns_resolve(e, path, &ent, &err);
  if (rc == 0) {
    uint64_t size;
    ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
    if (kind)
      *kind = ent.kind;
  }
  return -rc;
}

/* Does a line of asked end with suffix (a key's tail)? */
static int asked_for(const char *pat) { return strstr(asked, pat) != NULL; }

/* The operations of the test on array directory dir ("" or "a/"). */
static void run_ops(struct engine *e, const char *dir, const char *chunk) {
  char p[256];
  enum ns_kind k;
  struct ns_dir *d;
  struct zerr err = {0};
  snprintf(p, sizeof p, "/%s", dir);
  ck_assert_int_eq(ns_dir_open(e, p, &d, &err), 0);
  ns_dir_free(d);
  snprintf(p, sizeof p, "/%svalues.txt", dir);
  ck_assert_int_eq(touch(e, p, &k), 0);
  ck_assert_int_eq(k, NS_ARRAY_VIEW);
  snprintf(p, sizeof p, "/%sinfo.txt", dir);
  ck_assert_int_eq(touch(e, p, &k), 0);
  ck_assert_int_eq(k, NS_INFO_VIEW);
  snprintf(p, sizeof p, "/%s%s.txt", dir, chunk);
  ck_assert_int_eq(touch(e, p, &k), 0);
  ck_assert_int_eq(k, NS_CHUNK_VIEW);
  snprintf(p, sizeof p, "/%svalues.txt/zarr.json", dir);
  ck_assert_int_eq(touch(e, p, NULL), ENOENT);
  snprintf(p, sizeof p, "/%s%s.txt/.zarray", dir, chunk);
  ck_assert_int_eq(touch(e, p, NULL), ENOENT);
  ck_assert_int_eq(touch(e, "/.zarrfs", &k), 0);
  ck_assert_int_eq(k, NS_DIR);
  ck_assert_int_eq(touch(e, "/.zarrfs/stats", &k), 0);
  ck_assert_int_eq(k, NS_STATS);
  ck_assert_int_eq(ns_dir_open(e, "/.zarrfs", &d, &err), 0);
  ns_dir_free(d);
}

/* No key asked about is a made-up name or below one. */
static void assert_none_made_up(void) {
  ck_assert_msg(!asked_for("values.txt"), "asked:\n%s", asked);
  ck_assert_msg(!asked_for("info.txt"), "asked:\n%s", asked);
  ck_assert_msg(!asked_for(".txt"), "asked:\n%s", asked);
  ck_assert_msg(!asked_for(".zarrfs"), "asked:\n%s", asked);
}

START_TEST(v3_array_root) {
  dir_new();
  put("zarr.json", v3_array);
  put("c/0", "\1\2");
  struct engine *e = open_counting();
  run_ops(e, "", "c/0");
  assert_none_made_up();
  ck_assert_msg(!asked_for(".zarray") && !asked_for(".zgroup") &&
                    !asked_for(".zattrs") && !asked_for(".zmetadata"),
                "a V3 node asked for V2 names:\n%s", asked);
  ck_assert_msg(!asked_for("c/zarr.json") && !asked_for("c/0/zarr.json"),
                "below an array asked for node metadata:\n%s", asked);
  /* a chunk view of a chunk not stored: asked for the chunk only */
  asked[0] = '\0';
  ck_assert_int_eq(touch(e, "/c/1.txt", NULL), ENOENT);
  assert_none_made_up();
  ck_assert_msg(strstr(asked, " c/1\n"), "asked:\n%s", asked);
  engine_free(e);
  dir_rm();
}
END_TEST

START_TEST(v2_array_root) {
  dir_new();
  put(".zarray", v2_array);
  put("0", "\1\2");
  put("1", "\3\4");
  struct engine *e = open_counting();
  run_ops(e, "", "0");
  assert_none_made_up();
  /* the root is probed V3 first (its format is not known yet); nothing
   * after .zarray is found asks for zarr.json */
  const char *z = strstr(asked, "zarr.json");
  ck_assert_msg(!z || !strstr(z + 1, "zarr.json"), "asked:\n%s", asked);
  const char *za = strstr(asked, ".zarray");
  ck_assert_msg(!za || !strstr(za, "zarr.json"), "asked:\n%s", asked);
  engine_free(e);
  dir_rm();
}
END_TEST

START_TEST(v3_group) {
  dir_new();
  put("zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
  put("a/zarr.json", v3_array);
  put("a/c/0", "\1\2");
  struct engine *e = open_counting();
  enum ns_kind k;
  ck_assert_int_eq(touch(e, "/a", &k), 0);
  ck_assert_int_eq(k, NS_DIR);
  run_ops(e, "a/", "c/0");
  assert_none_made_up();
  ck_assert_msg(!strstr(asked, " a\n"),
                "asked for the group's child by its "
                "own name:\n%s",
                asked);
  ck_assert_msg(!asked_for(".zarray") && !asked_for(".zgroup"),
                "V3 nodes asked for V2 names:\n%s", asked);
  engine_free(e);
  dir_rm();
}
END_TEST

START_TEST(stored_made_up_name_not_served) {
  dir_new();
  put("zarr.json", v3_array);
  put("c/0", "\1\2");
  put("values.txt", "stored\n");
  put(".zarrfs", "stored\n");
  struct engine *e = open_counting();
  enum ns_kind k;
  ck_assert_int_eq(touch(e, "/values.txt", &k), 0);
  ck_assert_int_eq(k, NS_ARRAY_VIEW);
  ck_assert_int_eq(touch(e, "/.zarrfs", &k), 0);
  ck_assert_int_eq(k, NS_DIR);
  char text[64];
  view_text(e, "/values.txt", text, sizeof text);
  ck_assert_str_eq(text, "1\n2\n0\n0\n");
  assert_none_made_up();
  engine_free(e);
  dir_rm();
}
END_TEST

int main(void) {
  Suite *s = suite_create("names");
  TCase *tc = tcase_create("names");
  tcase_add_test(tc, v3_array_root);
  tcase_add_test(tc, v2_array_root);
  tcase_add_test(tc, v3_group);
  tcase_add_test(tc, stored_made_up_name_not_served);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
