/* check_manifest.c - the chunk-reference table (src/store/manifest.c), kerchunk
 * reference files (src/store/kerchunk.c, src/store/store_refs.c) and
 * confinement (src/store/confine.c): lookups, listings, templates and gen
 * expressions, and bad input, each failing only its own key. */
#define _GNU_SOURCE
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/namespace/ns_dir.h"
#include "../../../src/json/jdup.h"
#include "../../../src/store/confine.h"
#include "../../../src/store/kerchunk.h"
#include "../../../src/store/manifest.h"
#include "../../../src/store/store.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

/* A listing collected as "name/" for directories and "name=size". */
struct listing {
  char text[8192];
  int n;
};

static int collect(void *ud, const char *name, enum store_entry_type t,
                   uint64_t size, int64_t mtime) {
  (void)mtime;
  struct listing *l = ud;
  size_t o = strlen(l->text);
  if (t == STORE_DIR)
    snprintf(l->text + o, sizeof l->text - o, "%s/ ", name);
  else if (t == STORE_OTHER) /* present but unusable: never from manifests */
    snprintf(l->text + o, sizeof l->text - o, "%s! ", name);
  else
    snprintf(l->text + o, sizeof l->text - o, "%s=%llu ", name,
             (unsigned long long)size);
  l->n++;
  return 0;
}

/* Write text to dir/name. */
static void put(const char *dir, const char *name, const char *text) {
  char p[4096];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "wb");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

START_TEST(table_lookup_list) {
  struct zerr err = {0};
  struct manifest_builder *b;
  ck_assert_int_eq(manifest_builder_new("/base", &b, &err), 0);
  ck_assert_int_eq(manifest_add_inline(b, "zarr.json", "{}", 2, &err), 0);
  ck_assert_int_eq(manifest_add_range(b, "a/c/0/1", "x.bin", 5, 10, &err), 0);
  ck_assert_int_eq(manifest_add_range(b, "a/c/0/0", "x.bin", 0, 5, &err), 0);
  ck_assert_int_eq(manifest_add_range(b, "a.b", "/abs/y.bin", 1, 2, &err), 0);
  ck_assert_int_eq(manifest_add_whole(b, "a/c/1", "file:///w.bin", &err), 0);
  ck_assert_int_eq(manifest_add_missing(b, "a/c/2", &err), 0);
  ck_assert_int_eq(manifest_add_inline(b, "a/c/0/0", "new", 3, &err), 0);
  ck_assert_int_eq(manifest_add_range(b, "a0", "http://h/z", 0, 4, &err), 0);
  ck_assert_int_eq(manifest_add_inline(b, "a/../x", "", 0, &err), -EINVAL);
  ck_assert_int_eq(manifest_add_inline(b, "a//x", "", 0, &err), -EINVAL);
  struct manifest *m;
  uint64_t dup = 0;
  ck_assert_int_eq(manifest_builder_finish(b, &m, &dup, &err), 0);
  ck_assert_uint_eq(dup, 1);
  ck_assert_uint_eq(manifest_count(m), 7);

  struct manifest_entry en;
  ck_assert_int_eq(manifest_lookup(m, "a/c/0/0", &en), 0);
  ck_assert_int_eq(en.kind, MF_INLINE); /* the last one added wins */
  ck_assert_uint_eq(en.length, 3);
  ck_assert_int_eq(memcmp(en.data, "new", 3), 0);
  ck_assert_int_eq(manifest_lookup(m, "a/c/0/1", &en), 0);
  ck_assert_str_eq(en.path, "/base/x.bin"); /* relative to the base */
  ck_assert_uint_eq(en.offset, 5);
  ck_assert_int_eq(manifest_lookup(m, "a/c/1", &en), 0);
  ck_assert_str_eq(en.path, "/w.bin"); /* file:// stripped */
  ck_assert_int_eq(manifest_lookup(m, "a0", &en), 0);
  ck_assert_str_eq(en.path, "http://h/z"); /* URLs kept */
  ck_assert_int_eq(manifest_lookup(m, "a/c", &en), -ENOENT);
  ck_assert_int_eq(manifest_lookup(m, "nope", &en), -ENOENT);

  ck_assert(manifest_is_dir(m, ""));
  ck_assert(manifest_is_dir(m, "a"));
  ck_assert(manifest_is_dir(m, "a/c/0"));
  ck_assert(!manifest_is_dir(m, "a/c/0/0"));
  ck_assert(!manifest_is_dir(m, "a.b"));

  struct listing l = {0};
  ck_assert_int_eq(manifest_list(m, "", STORE_MTIME_UNKNOWN, collect, &l, &err),
                   0);
  ck_assert_str_eq(l.text, "a.b=2 a/ a0=4 zarr.json=2 ");
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(
      manifest_list(m, "a/c", STORE_MTIME_UNKNOWN, collect, &l, &err), 0);
  /* The missing chunk is not listed; a whole-file reference's size is
   * learned by opening it (STORE_SIZE_UNKNOWN in listings). */
  ck_assert_str_eq(l.text, "0/ 1=18446744073709551615 ");

  /* Reading: remote targets need a remote context (tests/unit/stores/check_remote.c
   * and the mount tests read them), missing entries are ENOENT. */
  ck_assert_int_eq(manifest_lookup(m, "a0", &en), 0);
  struct bytesrc *s = NULL;
  ck_assert_int_eq(manifest_open(m, &en, NULL, NULL, &s, &err), -EIO);
  ck_assert_ptr_nonnull(
      strstr(err.msg, "remote targets need a remote context"));
  manifest_free(m);
}
END_TEST

/* Relative targets of a remote reference resolve against its URL. */
START_TEST(url_join_and_prefixes) {
  static const struct {
    const char *base, *rel, *want;
  } J[] = {
      {"http://h/a/b", "x.bin", "http://h/a/b/x.bin"},
      {"http://h/a/b", "./x.bin", "http://h/a/b/x.bin"},
      {"http://h/a/b", "../x.bin", "http://h/a/x.bin"},
      {"http://h/a/b", "../../../../x.bin", "http://h/x.bin"},
      {"http://h:8080/a", "c/./d/../e.bin", "http://h:8080/a/c/e.bin"},
      {"http://h/a?sig=1", "x", "http://h/a/x"},
      {"s3://bucket", "k/v", "s3://bucket/k/v"},
      {"https://h", "x", "https://h/x"},
  };
  for (size_t i = 0; i < sizeof J / sizeof *J; i++) {
    char *got = manifest_url_join(J[i].base, J[i].rel);
    ck_assert_msg(got && !strcmp(got, J[i].want), "%s + %s: %s", J[i].base,
                  J[i].rel, got ? got : "(null)");
    free(got);
  }
  /* -o allow_root=URL: a path boundary, scheme and host case-insensitive */
  ck_assert(confine_url_matches("http://a/b", "http://a/b/c"));
  ck_assert(confine_url_matches("http://a/b/", "http://a/b/c"));
  ck_assert(confine_url_matches("http://a/b", "http://a/b"));
  ck_assert(confine_url_matches("HTTP://A/b", "http://a/b/c"));
  ck_assert(!confine_url_matches("http://a/b", "http://a/bc"));
  ck_assert(!confine_url_matches("http://a/b", "https://a/b/c"));
  ck_assert(!confine_url_matches("http://a:80/b", "http://a/b/c"));
  ck_assert(!confine_url_matches("http://a", "http://ab/c"));
  ck_assert(confine_url_matches("http://169.254.169.254/",
                                "http://169.254.169.254/latest/x"));
  /* the decision: named prefixes may be link-local; remote_targets=no */
  struct confine *c;
  struct zerr err = {0};
  int ll = -1;
  ck_assert_int_eq(confine_new(&c, &err), 0);
  ck_assert_int_eq(confine_check_url(c, "http://169.254.1.1/x", &ll, &err), 0);
  ck_assert_int_eq(ll, 0);
  ck_assert_int_eq(confine_add_url_prefix(c, "http://169.254.1.1/", &err), 0);
  ck_assert_int_eq(confine_check_url(c, "http://169.254.1.1/x", &ll, &err), 0);
  ck_assert_int_eq(ll, 1);
  ck_assert_int_eq(confine_add_url_prefix(c, "/local/dir", &err), -EINVAL);
  confine_forbid_remote(c);
  ck_assert_int_eq(confine_check_url(c, "http://h/x", &ll, &err), -EACCES);
  ck_assert_ptr_nonnull(strstr(err.msg, "remote_targets=no"));
  /* a remote reference reads no local file */
  confine_set_remote_reference(c);
  struct bytesrc *b;
  ck_assert_int_eq(confine_open(c, "/etc/hostname", NULL, &b, &err), -EACCES);
  ck_assert_ptr_nonnull(strstr(err.msg, "remote reference"));
  confine_free(c);
}
END_TEST

START_TEST(listing_jumps_subtrees) {
  /* 100 directories of 1000 keys: listing the root yields each once. */
  struct zerr err = {0};
  struct manifest_builder *b;
  ck_assert_int_eq(manifest_builder_new("/", &b, &err), 0);
  char key[64];
  for (int d = 0; d < 100; d++)
    for (int k = 0; k < 1000; k++) {
      snprintf(key, sizeof key, "d%d/%d.%d", d, k / 10, k % 10);
      ck_assert_int_eq(manifest_add_range(b, key, "blob", (uint64_t)k, 1, &err),
                       0);
    }
  struct manifest *m;
  ck_assert_int_eq(manifest_builder_finish(b, &m, NULL, &err), 0);
  struct listing l = {0};
  ck_assert_int_eq(manifest_list(m, "", STORE_MTIME_UNKNOWN, collect, &l, &err),
                   0);
  ck_assert_int_eq(l.n, 100);
  memset(&l, 0, sizeof l);
  ck_assert_int_eq(
      manifest_list(m, "d7", STORE_MTIME_UNKNOWN, collect, &l, &err), 0);
  ck_assert_int_eq(l.n, 1000);
  struct manifest_entry en;
  ck_assert_int_eq(manifest_lookup(m, "d42/99.9", &en), 0);
  ck_assert_uint_eq(en.offset, 999);
  /* One interned copy of the path for 100,000 entries. */
  ck_assert_uint_lt(manifest_bytes(m), 100000 * 32 + 2000000);
  manifest_free(m);
}
END_TEST

START_TEST(templates_and_expressions) {
  struct zerr err = {0};
  json_t *t = json_pack("{s:s}", "b", "blob.bin");
  const char *names[] = {"i", "j"};
  int64_t vals[] = {3, -7};
  static const struct {
    const char *in, *want;
  } ok[] = {
      {"{{b}}", "blob.bin"},
      {"x/{{ b }}/y", "x/blob.bin/y"},
      {"{{ 4911 + i * 48 }}", "5055"},
      {"{{i}}.{{j}}", "3.-7"},
      {"{{ (i + 1) * 2 }}", "8"},
      {"{{ j // 2 }}", "-4"}, /* floors like Python */
      {"{{ j % 4 }}", "1"},
      {"{{ 12 / i }}", "4"},
      {"{{ -i - -1 }}", "-2"},
      {"plain", "plain"},
  };
  for (size_t k = 0; k < sizeof ok / sizeof *ok; k++) {
    char *out = NULL;
    ck_assert_msg(kerchunk_render(ok[k].in, t, names, vals, 2, &out, &err) == 0,
                  "%s: %s", ok[k].in, err.msg);
    ck_assert_str_eq(out, ok[k].want);
    free(out);
  }
  static const char *const bad[] = {
      "{{ nope }}",
      "{{ i + }}",
      "{{ (i }}",
      "{{ i / 0 }}",
      "{{ 7 / 2 }}",
      "{{ i",
      "{{ 99999999999999999999 }}",
      "{{ 9223372036854775807 + 1 }}",
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    char *out = NULL;
    ck_assert_msg(kerchunk_render(bad[k], t, names, vals, 2, &out, &err) < 0,
                  "%s accepted", bad[k]);
  }
  json_decref(t);
}
END_TEST

/* Open dir/refs.json with roots dir (+ extra); returns the store. */
static struct store *open_refs(const char *dir, const char *extra,
                               struct confine **c) {
  struct zerr err = {0};
  char p[4096];
  snprintf(p, sizeof p, "%s/refs.json", dir);
  ck_assert_int_eq(confine_new(c, &err), 0);
  ck_assert_int_eq(confine_add_root(*c, dir, &err), 0);
  if (extra)
    ck_assert_int_eq(confine_add_root(*c, extra, &err), 0);
  struct store *s;
  ck_assert_msg(store_open_refs(p, *c, &s, &err) == 0, "%s", err.msg);
  return s;
}

/* Read key fully; returns 0 or the error (message in err). */
static int read_key(struct store *s, const char *key, char *buf, size_t cap,
                    size_t *len, struct zerr *err) {
  struct bytesrc *b;
  int rc = store_get(s, key, &b, err);
  if (rc < 0)
    return rc;
  ck_assert_uint_le(b->size, cap);
  rc = bytesrc_read_range(b, 0, (size_t)b->size, buf, err);
  *len = (size_t)b->size;
  bytesrc_unref(b);
  return rc;
}

START_TEST(references_and_bad_input) {
  char base[] = "/tmp/zarrfs-mf-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  char in[4200], out[4200];
  snprintf(in, sizeof in, "%s/in", base);
  snprintf(out, sizeof out, "%s/out", base);
  ck_assert_int_eq(mkdir(in, 0755), 0);
  ck_assert_int_eq(mkdir(out, 0755), 0);
  put(in, "blob.bin", "0123456789");
  put(out, "secret.bin", "SECRET");
  char link[4300], tgt[4300];
  snprintf(link, sizeof link, "%s/link.bin", in);
  snprintf(tgt, sizeof tgt, "%s/secret.bin", out);
  ck_assert_int_eq(symlink(tgt, link), 0);
  char fifo[4300];
  snprintf(fifo, sizeof fifo, "%s/fifo", in);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0); /* opening it must not block */
  char refs[16384];
  snprintf(refs, sizeof refs,
           "{\"version\": 1, \"templates\": {\"b\": \"blob.bin\"}, \"refs\": {"
           "\"text\": \"a\\u0000b\","
           "\"b64\": \"base64:aGk=\","
           "\"badb64\": \"base64:@@\","
           "\"range\": [\"{{b}}\", 2, 3],"
           "\"whole\": [\"blob.bin\"],"
           "\"fileurl\": [\"file://%s/blob.bin\", 0, 1],"
           "\"past\": [\"blob.bin\", 8, 3],"
           "\"neg\": [\"blob.bin\", -1, 3],"
           "\"frac\": [\"blob.bin\", 0, 1.5],"
           "\"str\": [\"blob.bin\", \"0\", 1],"
           "\"two\": [\"blob.bin\", 0],"
           "\"num\": 5,"
           "\"gone\": [\"nothere.bin\", 0, 1],"
           "\"dotdot\": [\"../out/secret.bin\", 0, 6],"
           "\"symlink\": [\"link.bin\", 0, 6],"
           "\"absolute\": [\"%s/secret.bin\", 0, 6],"
           "\"remote\": [\"s3://bucket/k\", 0, 6],"
           "\"fifo\": [\"fifo\", 0, 1],"
           "\"dir\": [\".\"],"
           "\"a/../escape\": \"x\","
           "\"dup\": \"first\", \"dup\": \"second\""
           "}}",
           in, out);
  put(in, "refs.json", refs);

  struct confine *c;
  struct store *s = open_refs(in, NULL, &c);
  struct zerr err = {0};
  char buf[64];
  size_t len;
  ck_assert_int_eq(read_key(s, "text", buf, sizeof buf, &len, &err), 0);
  ck_assert_uint_eq(len, 3);
  ck_assert_int_eq(memcmp(buf, "a\0b", 3), 0);
  ck_assert_int_eq(read_key(s, "b64", buf, sizeof buf, &len, &err), 0);
  ck_assert_int_eq(memcmp(buf, "hi", len), 0);
  ck_assert_int_eq(read_key(s, "range", buf, sizeof buf, &len, &err), 0);
  ck_assert_int_eq(memcmp(buf, "234", len), 0);
  ck_assert_int_eq(read_key(s, "whole", buf, sizeof buf, &len, &err), 0);
  ck_assert_uint_eq(len, 10);
  ck_assert_int_eq(read_key(s, "fileurl", buf, sizeof buf, &len, &err), 0);
  enum store_entry_type ty;
  uint64_t size;
  ck_assert_int_eq(store_stat(s, "whole", &ty, &size, &err), 0);
  ck_assert_uint_eq(size, 10);
  ck_assert_int_eq(store_stat(s, "a", &ty, &size, &err), -ENOENT);

  static const struct {
    const char *key;
    int rc;
    const char *msg;
  } bad[] = {
      {"badb64", -EIO, "bad base64"},
      {"past", -EIO, "runs past the end"},
      {"neg", -EIO, "non-negative integers"},
      {"frac", -EIO, "non-negative integers"},
      {"str", -EIO, "non-negative integers"},
      {"two", -EIO, "value must be"},
      {"num", -EIO, "value must be"},
      {"gone", -EIO, "nothere.bin"},
      {"dotdot", -EIO, "target_root"},
      {"symlink", -EIO, "target_root"},
      {"absolute", -EIO, "target_root"},
      {"remote", -EIO, "remote targets need a remote context"},
      {"fifo", -EIO, "not a regular file"},
      {"dir", -EIO, "not a regular file"},
      {"dup", -EIO, "duplicate key"},
      {"a/../escape", -EINVAL, ""}, /* refused by every store */
  };
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    zerr_clear(&err);
    int rc = read_key(s, bad[k].key, buf, sizeof buf, &len, &err);
    ck_assert_msg(rc == bad[k].rc, "%s: rc %d (%s)", bad[k].key, rc, err.msg);
    ck_assert_msg(strstr(err.msg, bad[k].msg), "%s: '%s'", bad[k].key, err.msg);
  }
  /* The refused ones leak nothing; the good ones still read after. */
  ck_assert_int_eq(read_key(s, "range", buf, sizeof buf, &len, &err), 0);
  store_free(s);
  confine_free(c);

  /* With -o allow_root=OUT the escaping targets read. */
  s = open_refs(in, out, &c);
  for (const char *const *k =
           (const char *const[]){"dotdot", "symlink", "absolute", NULL};
       *k; k++) {
    ck_assert_msg(read_key(s, *k, buf, sizeof buf, &len, &err) == 0, "%s: %s",
                  *k, err.msg);
    ck_assert_int_eq(memcmp(buf, "SECRET", 6), 0);
  }
  store_free(s);
  confine_free(c);

  /* Not JSON, or not references at all: the whole file is refused. */
  static const char *const notrefs[] = {"{\"a\": ", "[1, 2]",
                                        "{\"version\": 2, \"refs\": {}}",
                                        "{\"version\": 1}"};
  for (size_t k = 0; k < sizeof notrefs / sizeof *notrefs; k++) {
    put(in, "refs.json", notrefs[k]);
    char p[4300];
    snprintf(p, sizeof p, "%s/refs.json", in);
    ck_assert_int_eq(confine_new(&c, &err), 0);
    zerr_clear(&err);
    ck_assert_msg(store_open_refs(p, c, &s, &err) < 0, "%s accepted",
                  notrefs[k]);
    ck_assert(err.msg[0]);
    confine_free(c);
  }
  testutil_rmtree(base);
}
END_TEST

START_TEST(gen_entries) {
  char base[] = "/tmp/zarrfs-gen-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  put(base, "blob.bin", "abcdefghijklmnopqrstuvwxyz");
  put(base, "refs.json",
      "{\"version\": 1, \"templates\": {\"u\": \"blob.bin\"}, \"refs\": {},"
      "\"gen\": [{\"key\": \"g/{{i}}.{{j}}\", \"url\": \"{{u}}\","
      "\"offset\": \"{{ (i * 3 + j) * 2 }}\", \"length\": \"2\","
      "\"dimensions\": {\"i\": {\"stop\": 4}, \"j\": [0, 1, 2]}},"
      "{\"key\": \"w/{{k}}\", \"url\": \"blob.bin\","
      "\"dimensions\": {\"k\": {\"start\": 1, \"stop\": 7, \"step\": 3}}}]}");
  struct confine *c;
  struct store *s = open_refs(base, NULL, &c);
  struct zerr err = {0};
  char buf[64];
  size_t len;
  ck_assert_int_eq(read_key(s, "g/0.0", buf, sizeof buf, &len, &err), 0);
  ck_assert_int_eq(memcmp(buf, "ab", 2), 0);
  ck_assert_int_eq(read_key(s, "g/3.2", buf, sizeof buf, &len, &err), 0);
  ck_assert_int_eq(memcmp(buf, "wx", 2), 0);
  ck_assert_int_eq(read_key(s, "w/4", buf, sizeof buf, &len, &err), 0);
  ck_assert_uint_eq(len, 26);
  ck_assert_int_eq(read_key(s, "w/7", buf, sizeof buf, &len, &err), -ENOENT);
  struct listing l = {0};
  ck_assert_int_eq(store_list(s, "g", collect, &l, &err), 0);
  ck_assert_int_eq(l.n, 12);
  store_free(s);
  confine_free(c);
  testutil_rmtree(base);
}
END_TEST

/* A NUL byte inside a target path or url (written as \u0000, directly or
 * brought by a template, in refs or in gen) makes only its key bad: listed,
 * reads fail with EIO "target path contains a NUL byte"; the path is never
 * cut short at the NUL (which would read blob.bin here). */
START_TEST(nul_in_target_path) {
  char base[] = "/tmp/zarrfs-nul-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  put(base, "blob.bin", "0123456789");
  put(base, "refs.json",
      "{\"version\": 1, \"templates\": {\"n\": \"blob.bin\\u0000x\","
      "\"b\": \"blob.bin\"}, \"refs\": {"
      "\"ok\": [\"blob.bin\", 1, 2],"
      "\"range\": [\"blob.bin\\u0000.txt\", 0, 4],"
      "\"whole\": [\"blob.bin\\u0000\"],"
      "\"tmpl\": [\"{{n}}\", 0, 4],"
      "\"lead\": [\"\\u0000blob.bin\", 0, 4],"
      "\"text\": \"in\\u0000line\"},"
      "\"gen\": [{\"key\": \"g/{{i}}\", \"url\": \"blob.bin\\u0000{{i}}\","
      "\"offset\": \"0\", \"length\": \"1\","
      "\"dimensions\": {\"i\": {\"stop\": 2}}},"
      "{\"key\": \"h/{{i}}\", \"url\": \"{{n}}\","
      "\"dimensions\": {\"i\": [0]}}]}");
  struct confine *c;
  struct store *s = open_refs(base, NULL, &c);
  struct zerr err = {0};
  char buf[64];
  size_t len;
  ck_assert_int_eq(read_key(s, "ok", buf, sizeof buf, &len, &err), 0);
  ck_assert_int_eq(memcmp(buf, "12", 2), 0);
  ck_assert_int_eq(read_key(s, "text", buf, sizeof buf, &len, &err), 0);
  ck_assert_uint_eq(len, 7); /* NULs in inline text are data */
  static const char *const bad[] = {"range", "whole", "tmpl", "lead",
                                    "g/0",   "g/1",   "h/0"};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    zerr_clear(&err);
    int rc = read_key(s, bad[k], buf, sizeof buf, &len, &err);
    ck_assert_msg(rc == -EIO, "%s: rc %d (%s)", bad[k], rc, err.msg);
    ck_assert_msg(strstr(err.msg, "target path contains a NUL byte"),
                  "%s: '%s'", bad[k], err.msg);
  }
  struct listing l = {0};
  ck_assert_int_eq(store_list(s, "", collect, &l, &err), 0);
  ck_assert_msg(strstr(l.text, "range=") && strstr(l.text, "whole=") &&
                    strstr(l.text, "tmpl=") && strstr(l.text, "g/"),
                "%s", l.text);
  store_free(s);
  confine_free(c);

  /* kerchunk_render refuses a result with a NUL inside. */
  const char *tj = "{\"n\": \"a\\u0000b\"}";
  json_t *t = json_loadb(tj, strlen(tj), JSON_ALLOW_NUL, NULL);
  ck_assert_ptr_nonnull(t);
  char *out = NULL;
  ck_assert_int_eq(kerchunk_render("x{{n}}", t, NULL, NULL, 0, &out, &err),
                   -EINVAL);
  ck_assert_ptr_null(out);
  json_decref(t);
  testutil_rmtree(base);
}
END_TEST

/* Load text as dir/refs.json with kerchunk_load. */
static int load_text(const char *dir, const char *text, struct manifest **m,
                     struct zerr *err) {
  put(dir, "refs.json", text);
  char p[4300];
  snprintf(p, sizeof p, "%s/refs.json", dir);
  zerr_clear(err);
  return kerchunk_load(p, m, err);
}

/* gen's keys are counted over every entry before any is made: a file
 * asking for too many in all is refused with the total, before the first
 * entry is expanded (its error, met only while expanding, never comes);
 * 200 entries of 10^6 keys each are refused the same way. */
START_TEST(gen_total_first) {
  char base[] = "/tmp/zarrfs-gentotal-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  struct zerr err = {0};
  struct manifest *m = NULL;
  ck_assert_int_eq(
      load_text(base,
                "{\"version\": 1, \"refs\": {}, \"gen\": ["
                "{\"key\": \"a/{{i}}\", \"url\": \"{{nope}}\","
                "\"dimensions\": {\"i\": [0]}},"
                "{\"key\": \"b/{{i}}\", \"url\": \"x.bin\","
                "\"dimensions\": {\"i\": {\"stop\": 1000000000}}}]}",
                &m, &err),
      -EINVAL);
  ck_assert_msg(strstr(err.msg, "1000000001 keys in all"), "%s", err.msg);
  size_t cap = 200 * 96 + 64, n = 0;
  char *text = malloc(cap);
  n += (size_t)snprintf(text + n, cap - n,
                        "{\"version\": 1, \"refs\": {}, "
                        "\"gen\": [");
  for (int k = 0; k < 200; k++)
    n += (size_t)snprintf(text + n, cap - n,
                          "%s{\"key\": \"a%d/{{i}}\", \"url\": \"x.bin\", "
                          "\"dimensions\": {\"i\": {\"stop\": 1000000}}}",
                          k ? "," : "", k);
  snprintf(text + n, cap - n, "]}");
  ck_assert_int_eq(load_text(base, text, &m, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "200000000 keys in all"), "%s", err.msg);
  free(text);
  /* at the limit, products of several dimensions and lists count too */
  ck_assert_int_eq(load_text(base,
                             "{\"version\": 1, \"refs\": {}, \"gen\": ["
                             "{\"key\": \"a/{{i}}/{{j}}\", \"url\": \"x.bin\","
                             "\"dimensions\": {\"i\": {\"stop\": 50000001}, "
                             "\"j\": [0, 1]}}]}",
                             &m, &err),
                   -EINVAL);
  ck_assert_msg(strstr(err.msg, "100000002 keys in all"), "%s", err.msg);
  /* an empty dimension makes 0 keys, but the values of the others are
   * bounded all the same (they took 480 MB here, 6 GB with 16) */
  ck_assert_int_eq(load_text(base,
                             "{\"version\": 1, \"refs\": {}, \"gen\": ["
                             "{\"key\": \"a/{{i}}{{j}}{{k}}\", \"url\": "
                             "\"x.bin\", \"dimensions\": {\"i\": [], "
                             "\"j\": {\"stop\": 30000000}, "
                             "\"k\": {\"stop\": 30000000}}}]}",
                             &m, &err),
                   -EINVAL);
  ck_assert_msg(strstr(err.msg, "hold 60000000 values"), "%s", err.msg);
  testutil_rmtree(base);
}
END_TEST

/* A gen url template of 2,000 "{{e}}" with e empty renders to "x" but
 * was scanned again for each of 50,000,000 keys (a 10 KB file, minutes:
 * fuzz_kerchunk): each key counts its templates' length against the 2 GiB
 * ceiling, so the entry is refused before any key is made; 100 keys load. */
START_TEST(gen_template_work) {
  char base[] = "/tmp/zarrfs-genwork-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  size_t cap = 11000, n = 0;
  char *text = malloc(cap);
  n += (size_t)snprintf(text + n, cap - n,
                        "{\"version\": 1, \"refs\": {}, \"templates\": "
                        "{\"e\": \"\"}, \"gen\": [{\"key\": \"a/{{i}}\", "
                        "\"url\": \"x");
  for (int k = 0; k < 2000; k++)
    n += (size_t)snprintf(text + n, cap - n, "{{e}}");
  snprintf(text + n, cap - n,
           "\", \"dimensions\": {\"i\": {\"stop\": 50000000}}}]}");
  struct zerr err = {0};
  struct manifest *m = NULL;
  ck_assert_int_eq(load_text(base, text, &m, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "gen entry 0: ") &&
                    strstr(err.msg, "more than 2147483648 bytes"),
                "%s", err.msg);
  char *stop = strstr(text, "50000000");
  memcpy(stop, "100}}}]}", 9);
  ck_assert_msg(load_text(base, text, &m, &err) == 0, "%s", err.msg);
  struct manifest_entry en;
  ck_assert_int_eq(manifest_lookup(m, "a/99", &en), 0);
  manifest_free(m);
  free(text);
  testutil_rmtree(base);
}
END_TEST

/* A gen range across the whole of int64 (fuzz_kerchunk, UBSan: stop -
 * start overflowed an int64_t): counted and expanded in unsigned
 * arithmetic, each value start + i * step exact. */
START_TEST(gen_range_extremes) {
  char base[] = "/tmp/zarrfs-genext-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  struct zerr err = {0};
  struct manifest *m = NULL;
  ck_assert_msg(
      load_text(base,
                "{\"version\": 1, \"refs\": {}, \"gen\": ["
                "{\"key\": \"a/{{i}}\", \"url\": \"x.bin\", \"dimensions\": "
                "{\"i\": {\"start\": -9223372036854775808, "
                "\"stop\": 9223372036854775807, "
                "\"step\": 4611686018427387904}}},"
                "{\"key\": \"b/{{i}}\", \"url\": \"x.bin\", \"dimensions\": "
                "{\"i\": {\"start\": -9223372036854775808, "
                "\"stop\": 9223372036854775807, "
                "\"step\": 9223372036854775807}}}]}",
                &m, &err) == 0,
      "%s", err.msg);
  static const char *const keys[] = {
      "a/-9223372036854775808", "a/-4611686018427387904", "a/0",
      "a/4611686018427387904", "b/-9223372036854775808", "b/-1",
      "b/9223372036854775806"};
  struct manifest_entry en;
  for (size_t k = 0; k < sizeof keys / sizeof *keys; k++)
    ck_assert_msg(manifest_lookup(m, keys[k], &en) == 0, "%s", keys[k]);
  ck_assert_int_ne(manifest_lookup(m, "a/9223372036854775807", &en), 0);
  manifest_free(m);
  testutil_rmtree(base);
}
END_TEST

/* A gen url that renders past 16 KiB (a template value used three times)
 * is refused at its first key, with the reason, instead of rendering
 * 50,000,000 long urls (the fuzzer's timeout, docs/fuzzing.md 8). */
START_TEST(gen_render_cap) {
  char base[] = "/tmp/zarrfs-gencap-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  size_t cap = 7000, n = 0;
  char *text = malloc(cap);
  n += (size_t)snprintf(text + n, cap - n,
                        "{\"version\": 1, \"refs\": {}, \"templates\": "
                        "{\"t\": \"");
  memset(text + n, 'x', 6000);
  n += 6000;
  snprintf(text + n, cap - n,
           "\"}, \"gen\": [{\"key\": \"a/{{i}}\", \"url\": "
           "\"{{t}}{{t}}{{t}}\", \"dimensions\": "
           "{\"i\": {\"stop\": 50000000}}}]}");
  struct zerr err = {0};
  struct manifest *m = NULL;
  ck_assert_int_eq(load_text(base, text, &m, &err), -EINVAL);
  ck_assert_msg(strstr(err.msg, "gen entry 0: ") &&
                    strstr(err.msg, "renders to more than 16384 bytes"),
                "%s", err.msg);
  /* two uses (12,000 bytes) are under the cap and load */
  char *two = strstr(text, "{{t}}{{t}}{{t}}");
  memmove(two + 10, two + 15, strlen(two + 15) + 1);
  char *stop = strstr(text, "50000000");
  memcpy(stop, "3}}}]}", 7);
  ck_assert_msg(load_text(base, text, &m, &err) == 0, "%s", err.msg);
  struct manifest_entry en;
  ck_assert_int_eq(manifest_lookup(m, "a/2", &en), 0);
  manifest_free(m);
  free(text);
  testutil_rmtree(base);
}
END_TEST

/* A directory of a kerchunk store listed for readdir (ns_dir): stored
 * names sorted and each once, values.txt, the views; attributes only where
 * the listing knows them (never a whole-file reference, a view, or a name
 * that is both a key and a prefix), and then exactly what stat says.
 * Listing reads no chunk. */
START_TEST(dir_listing_for_readdir) {
  char base[] = "/tmp/zarrfs-nsdir-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  put(base, "blob.bin", "0123456789abcdef0123456789abcdef");
  put(base, "refs.json",
      "{\"version\": 1, \"refs\": {"
      "\".zgroup\": \"{\\\"zarr_format\\\": 2}\","
      "\"d/.zarray\": \"{\\\"chunks\\\": [4], \\\"compressor\\\": null, "
      "\\\"dtype\\\": \\\"<i4\\\", \\\"fill_value\\\": 0, \\\"filters\\\": "
      "null, \\\"order\\\": \\\"C\\\", \\\"shape\\\": [12], "
      "\\\"zarr_format\\\": 2}\","
      "\"d/1\": [\"blob.bin\", 16, 16],"
      "\"d/0\": [\"blob.bin\", 0, 16],"
      "\"d/2\": [\"blob.bin\"],"
      "\"d/2.txt\": \"stored\","
      "\"d/x.txt\": \"hi\","
      "\"d/sub\": \"both a key and a prefix\","
      "\"d/sub/k\": \"k\"}}");
  struct confine *c;
  struct store *s = open_refs(base, NULL, &c);
  struct engine_config cfg = {64u << 20, 1u << 30, 1 << 16, 0, 0};
  struct engine *e;
  struct zerr err = {0};
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  ck_assert_int_eq(node_get(e->nodes, "d")->kind, ZNODE_ARRAY);
  uint64_t before = atomic_load(&s->stats.bytes_read);

  struct ns_dir *d;
  ck_assert_msg(ns_dir_open(e, "/d", &d, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(atomic_load(&s->stats.bytes_read), before);
  static const struct {
    const char *name;
    enum ns_kind kind;
    int attr;
    uint64_t size;
  } want[] = {
      {".zarray", NS_RAW, 1, 132}, /* the inline text, unescaped */
      {"0", NS_RAW, 1, 16},
      {"1", NS_RAW, 1, 16},
      {"2", NS_RAW, 0, 0}, /* whole file: its size needs an open */
      {"2.txt", NS_RAW, 1, 6},
      {"sub", NS_RAW, 0, 0}, /* a key and a prefix: stat decides */
      {"x.txt", NS_RAW, 1, 2},
      {"values.txt", NS_ARRAY_VIEW, 0, 0},
      {"info.txt", NS_INFO_VIEW, 0, 0},
      {"0.txt", NS_CHUNK_VIEW, 0, 0},
      {"1.txt", NS_CHUNK_VIEW, 0, 0}, /* 2.txt: the stored one hides it */
  };
  size_t nw = sizeof want / sizeof *want;
  ck_assert_uint_eq(ns_dir_count(d), nw);
  for (size_t i = 0; i < nw; i++) {
    struct ns_dirent de;
    ns_dir_get(d, i, &de);
    ck_assert_str_eq(de.name, want[i].name);
    ck_assert_msg(de.kind == want[i].kind && de.attr == want[i].attr,
                  "%s: kind %d attr %d", de.name, de.kind, de.attr);
    if (!de.attr)
      continue;
    ck_assert_uint_eq(de.size, want[i].size);
    /* What readdirplus says must be what stat says. */
    char path[64];
    snprintf(path, sizeof path, "/d/%s", de.name);
    struct ns_entry ent;
    uint64_t size;
    ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
    ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
    ck_assert_int_eq(ent.kind, de.kind);
    ck_assert_uint_eq(size, de.size);
  }
  ns_dir_free(d);
  ck_assert_uint_eq(atomic_load(&s->stats.bytes_read), before);

  /* A view's size once learned (by a stat) is listed with it. */
  struct ns_entry ent;
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, "/d/1.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_gt(size, 0);
  before = atomic_load(&s->stats.bytes_read);
  ck_assert_int_eq(ns_dir_open(e, "/d", &d, &err), 0);
  ck_assert_uint_eq(atomic_load(&s->stats.bytes_read), before);
  struct ns_dirent de;
  ns_dir_get(d, 9, &de);
  ck_assert(!strcmp(de.name, "0.txt") && !de.attr);
  ns_dir_get(d, 10, &de);
  ck_assert(!strcmp(de.name, "1.txt") && de.attr && de.size == size);

  /* ... and learned while the listing is open (as `ls -l` stats
   * values.txt between two readdirplus): ns_dir_attr finds it, reading
   * nothing. */
  ns_dir_get(d, 9, &de);
  ns_dir_attr(e, d, &de);
  ck_assert(!de.attr);
  uint64_t zsize;
  ck_assert_int_eq(ns_resolve(e, "/d/0.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &zsize, &err), 0);
  /* values.txt fails (chunk 2 is 32 bytes): never attributes */
  ck_assert_int_eq(ns_resolve(e, "/d/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EIO);
  before = atomic_load(&s->stats.bytes_read);
  ns_dir_get(d, 9, &de);
  ns_dir_attr(e, d, &de);
  ck_assert(!strcmp(de.name, "0.txt") && de.attr && de.size == zsize);
  ns_dir_get(d, 7, &de);
  ns_dir_attr(e, d, &de);
  ck_assert(!strcmp(de.name, "values.txt") && !de.attr);
  ns_dir_get(d, 2, &de); /* a stored file: as listed */
  ns_dir_attr(e, d, &de);
  ck_assert(!strcmp(de.name, "1") && de.attr && de.size == 16);
  ns_dir_get(d, 3, &de);
  ns_dir_attr(e, d, &de);
  ck_assert(!strcmp(de.name, "2") && !de.attr);
  ck_assert_uint_eq(atomic_load(&s->stats.bytes_read), before);
  ns_dir_free(d);

  /* The root: a stored directory carries its attributes. */
  ck_assert_int_eq(ns_dir_open(e, "/", &d, &err), 0);
  ck_assert_uint_eq(ns_dir_count(d), 3); /* and the group's info.txt */
  ns_dir_get(d, 1, &de);
  ck_assert_str_eq(de.name, "d");
  ck_assert(de.kind == NS_DIR && de.attr);
  ns_dir_free(d);
  ck_assert_int_eq(ns_dir_open(e, "/nope", &d, &err), -ENOENT);
  ns_dir_free(NULL);

  engine_free(e);
  confine_free(c);

  /* Lazy sizes: a chunk view not learned is listed as stat shows it,
   * size 0, and still nothing is read; values.txt is listed without
   * attributes, so that the kernel asks again and a seek to its end
   * (tail) reaches the daemon, which learns the size then. */
  s = open_refs(base, NULL, &c);
  cfg.lazy_sizes = 1;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  ck_assert_int_eq(node_get(e->nodes, "d")->kind, ZNODE_ARRAY);
  before = atomic_load(&s->stats.bytes_read);
  ck_assert_int_eq(ns_dir_open(e, "/d", &d, &err), 0);
  ck_assert_uint_eq(atomic_load(&s->stats.bytes_read), before);
  for (size_t i = 7; i < 11; i++) {
    ns_dir_get(d, i, &de);
    if (de.kind == NS_INFO_VIEW) { /* exact even then: stat renders it */
      ck_assert(!de.attr);
      continue;
    }
    if (!strcmp(de.name, "values.txt")) {
      ck_assert(!de.attr);
      continue;
    }
    ck_assert_msg(de.attr && de.size == 0, "%s", de.name);
  }
  ns_dir_free(d);
  engine_free(e);
  confine_free(c);

  testutil_rmtree(base);
}
END_TEST

/* The streaming scanner: escapes, UTF-8, unusual shapes going through the
 * DOM path, and malformed JSON (each refusing the whole file). */
START_TEST(scanner_syntax) {
  char base[] = "/tmp/zarrfs-scan-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(base));
  put(base, "blob.bin", "0123456789");
  struct zerr err = {0};
  struct manifest *m;
  ck_assert_msg(
      load_text(base,
                " {\"version\":1,\"gen\":[{\"key\":\"g/{{i}}\",\"url\":"
                "\"blob.bin\",\"dimensions\":{\"i\":[0,1]}}],\"refs\":{\n"
                "\"k\\u00e9\": \"\\ud83d\\ude00\\\"\\\\\\/\\b\\f\\n\\r\\t\","
                "\"sp\" : [ \"blob.bin\" ,\n 2 , 3 ] ,"
                "\"huge\": [\"blob.bin\", 0, 99999999999999999999],"
                "\"exp\": [\"blob.bin\", 1e2, 3],"
                "\"four\": [\"blob.bin\", 1, 2, 3],"
                "\"obj\": {\"a\": [true, false, null]},"
                "\"nul\\u0000key\": \"x\","
                "\"g/1\": \"override\""
                "}, \"extra\": [1, -2.5e-3, {}]} \n",
                &m, &err) == 0,
      "%s", err.msg);
  struct manifest_entry en;
  ck_assert_int_eq(manifest_lookup(m, "k\xc3\xa9", &en), 0);
  ck_assert_int_eq(en.kind, MF_INLINE);
  ck_assert_uint_eq(en.length, 12);
  ck_assert_int_eq(memcmp(en.data, "\xf0\x9f\x98\x80\"\\/\b\f\n\r\t", 12), 0);
  ck_assert_int_eq(manifest_lookup(m, "sp", &en), 0);
  ck_assert_int_eq(en.kind, MF_RANGE);
  ck_assert_uint_eq(en.offset, 2);
  ck_assert_uint_eq(en.length, 3);
  static const struct {
    const char *key, *why;
  } bad[] = {{"huge", "out of range"},
             {"exp", "non-negative integers"},
             {"four", "value must be"},
             {"obj", "value must be"}};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    ck_assert_msg(manifest_lookup(m, bad[k].key, &en) == 0, "%s", bad[k].key);
    ck_assert_msg(en.kind == MF_BAD &&
                      strstr((const char *)en.data, bad[k].why),
                  "%s: kind %d", bad[k].key, en.kind);
  }
  ck_assert_int_eq(manifest_lookup(m, "nul", &en), -ENOENT);
  ck_assert_int_eq(manifest_lookup(m, "g/0", &en), 0);
  ck_assert_int_eq(en.kind, MF_WHOLE);
  ck_assert_int_eq(manifest_lookup(m, "g/1", &en), 0); /* refs wins */
  ck_assert_int_eq(en.kind, MF_INLINE);
  ck_assert_uint_eq(manifest_count(m), 8);
  manifest_free(m);

  static const char *const broken[] = {
      "",
      "   ",
      "{} x",
      "{\"a\": \"b}",
      "{\"a\": \"\\x\"}",
      "{\"a\": \"\\udc00\"}",
      "{\"a\": \"\\ud800x\"}",
      "{\"a\": \"\\u12\"}",
      "{\"a\": \"\xff\"}",
      "{\"a\": \"\xc0\xaf\"}",
      "{\"a\": \"\xed\xa0\x80\"}",
      "{\"a\": \"line\nbreak\"}",
      "{\"a\": [\"blob.bin\", 01, 2]}",
      "{\"a\": [\"blob.bin\", 1.,2]}",
      "{\"a\": [\"blob.bin\",]}",
      "{\"a\": 1,}",
      "{\"a\" 1}",
      "{\"a\": tru}",
      "{\"a\": -}",
      "{a: 1}",
      "{\"version\": 1, \"refs\": {\"a\": [}}",
  };
  for (size_t k = 0; k < sizeof broken / sizeof *broken; k++) {
    m = NULL;
    ck_assert_msg(load_text(base, broken[k], &m, &err) == -EIO,
                  "case %zu accepted", k);
    ck_assert_msg(strstr(err.msg, "not valid JSON"), "case %zu: %s", k,
                  err.msg);
    ck_assert_ptr_null(m);
  }
  testutil_rmtree(base);
}
END_TEST

START_TEST(duplicate_keys) {
  struct zerr err = {0};
  static const struct {
    const char *text, *member;
    size_t distinct;
    const char *want; /* the duplicates, space-separated */
  } t[] = {
      {"{\"a\": 1, \"b\": [1, {\"a\": 2}], \"a\": \"x}\\\"\"}", NULL, 2, "a"},
      {"{\"version\": 1, \"refs\": {\"k\": \"{\", \"k\": [], \"j\": {}, "
       "\"j\": 0, \"j\": 1}}",
       "refs", 2, "j k"},
      {"{\"a\": 1, \"b\": 2}", NULL, 2, ""},
      {"{\"a\\u0041\": 1, \"a\\u0041\": 2}", NULL, 1, "aA"},
      /* Compared decoded, as jansson folds them. */
      {"{\"a\": 1, \"\\u0061\": 2, \"b\": NaN}", NULL, 2, "a"},
      {"{\"r\\u0065fs\": {\"k\": 1, \"k\": 2}}", "refs", 1, "k"},
      {"{\"a\": ", NULL, 0, ""}, /* does not scan: nothing */
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    char **d;
    size_t n;
    ck_assert_int_eq(jdup_keys(t[i].text, strlen(t[i].text), t[i].member,
                               t[i].distinct, &d, &n, &err),
                     0);
    char got[256] = "";
    for (size_t k = 0; k < n; k++)
      snprintf(got + strlen(got), sizeof got - strlen(got), "%s%s",
               k ? " " : "", d[k]);
    ck_assert_msg(!strcmp(got, t[i].want), "case %zu: got '%s'", i, got);
    jdup_free(d, n);
  }
}
END_TEST

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  Suite *s = suite_create("manifest");
  TCase *tc = tcase_create("manifest");
  tcase_add_test(tc, table_lookup_list);
  tcase_add_test(tc, listing_jumps_subtrees);
  tcase_add_test(tc, url_join_and_prefixes);
  tcase_add_test(tc, templates_and_expressions);
  tcase_add_test(tc, references_and_bad_input);
  tcase_add_test(tc, gen_entries);
  tcase_add_test(tc, gen_total_first);
  tcase_add_test(tc, gen_render_cap);
  tcase_add_test(tc, gen_range_extremes);
  tcase_add_test(tc, gen_template_work);
  tcase_add_test(tc, duplicate_keys);
  tcase_add_test(tc, scanner_syntax);
  tcase_add_test(tc, nul_in_target_path);
  tcase_add_test(tc, dir_listing_for_readdir);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
