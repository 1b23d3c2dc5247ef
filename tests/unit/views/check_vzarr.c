/* check_vzarr.c - VirtualiZarr manifest stores (src/store/store_vzarr.c) read
 * through the engine without FUSE:
 *  - a plain store and its virtual copy (every chunk at a scattered offset
 *    inside one blob, manifest.json with relative, absolute and file://
 *    paths, an omitted entry, a `path: ""` entry, an inlined entry; default
 *    "/" and "." encodings, the v2 encoding, a 0-d array) show the same
 *    tree, and every raw key and every view is the same, byte for byte;
 *  - bad input, one array per case (table): each fails only its own key
 *    with EIO and a reason (also a NUL byte inside a target path or the
 *    manifest path), the other keys keep reading; escapes through
 *    `..` and a symlink read once their root is allowed;
 *  - a small read of the view of a large chunk reads little of it;
 *  - eight threads making the first reads of the same arrays at once. */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../src/store/confine.h"
#include "../../../src/store/store.h"
#include "../../../src/util/log.h"
#include "../teststore.h"
#include "../testutil.h"

static char T[256]; /* temp root: plain/ virt/ blobs/ outside/ bad/ big/ */

/* Path under T (static buffer, one at a time per slot). */
static const char *tp(int slot, const char *rel) {
  static char b[4][4096];
  snprintf(b[slot], sizeof b[slot], "%s/%s", T, rel);
  return b[slot];
}

static void setup(void) {
  snprintf(T, sizeof T, "/tmp/zarrfs-vzarr-XXXXXX");
  ck_assert(mkdtemp(T) != NULL);
  const char *dirs[] = {"plain", "virt", "blobs", "outside", "bad", "big"};
  for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
    ck_assert_int_eq(mkdir(tp(0, dirs[i]), 0755), 0);
}

static void teardown(void) {
  testutil_rmtree(T);
}

static void put_text(const char *dir, const char *rel, const char *text) {
  ts_put_file(tp(3, dir), rel, text, strlen(text));
}

/* Append gap filler bytes and then data to blob; return data's offset. */
static uint64_t blob_append(const char *blob, size_t gap, const void *data,
                            size_t len) {
  FILE *f = fopen(blob, "ab");
  ck_assert_ptr_nonnull(f);
  for (size_t i = 0; i < gap; i++)
    fputc((int)(0xA5 ^ i), f);
  long off = ftell(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  fclose(f);
  return (uint64_t)off;
}

/* A V3 zarr.json with the transformer and the given encoding. */
static void array_meta(char *buf, size_t cap, const char *shape,
                       const char *chunks, const char *dtype,
                       const char *encoding) {
  snprintf(buf, cap,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":%s}},\"chunk_key_encoding\":%s,"
           "\"fill_value\":7,\"codecs\":[{\"name\":\"bytes\",\"configuration\""
           ":{\"endian\":\"little\"}}],\"storage_transformers\":[{\"name\":"
           "\"chunk-manifest-json\",\"configuration\":{\"manifest\":\"./"
           "manifest.json\"}}]}",
           shape, dtype, chunks, encoding);
}

/* How a chunk is referenced in the virtual copy. */
enum how { REL, ABS, URL, INLINE, EMPTY_PATH, OMITTED };

struct arr {
  const char *path, *shape, *chunks, *dtype, *enc;
  int ndim;
  int grid[3];
  int esize;                                    /* element size */
  int celems;                                   /* elements per chunk */
  const char *(*key)(const int *idx, int ndim); /* plain chunk key */
};

/* Chunk key helpers: "c/i/j/k", "c.i.j", "i.j" (v2 "."), "c" (0-d). */
static const char *key_slash(const int *idx, int n) {
  static char b[64];
  size_t o = (size_t)snprintf(b, sizeof b, "c");
  for (int i = 0; i < n; i++)
    o += (size_t)snprintf(b + o, sizeof b - o, "/%d", idx[i]);
  return b;
}
static const char *key_dot(const int *idx, int n) {
  static char b[64];
  size_t o = (size_t)snprintf(b, sizeof b, "c");
  for (int i = 0; i < n; i++)
    o += (size_t)snprintf(b + o, sizeof b - o, ".%d", idx[i]);
  return b;
}
static const char *key_v2(const int *idx, int n) {
  static char b[64];
  size_t o = 0;
  b[0] = '\0';
  for (int i = 0; i < n; i++)
    o += (size_t)snprintf(b + o, sizeof b - o, "%s%d", i ? "." : "", idx[i]);
  return n ? b : "0";
}

static const char *SLASH =
    "{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}}";
static const char *DOT =
    "{\"name\":\"default\",\"configuration\":{\"separator\":\".\"}}";
static const char *V2DOT =
    "{\"name\":\"v2\",\"configuration\":{\"separator\":\".\"}}";

static const struct arr ARRS[] = {
    {"g/a3",
     "[4,6,5]",
     "[2,3,5]",
     "int32",
     NULL,
     3,
     {2, 2, 1},
     4,
     30,
     key_slash},
    {"b2", "[5,7]", "[2,3]", "uint16", NULL, 2, {3, 3, 1}, 2, 6, key_dot},
    {"g/h/v2", "[7]", "[4]", "int16", NULL, 1, {2, 1, 1}, 2, 4, key_v2},
    {"s0", "[]", "[]", "int32", NULL, 0, {1, 1, 1}, 4, 1, key_slash},
};

/* Build plain/ and virt/ from ARRS. Each chunk's reference style cycles
 * through REL, ABS, URL, INLINE, EMPTY_PATH, OMITTED. */
static void build_pair(void) {
  const char *encs[] = {SLASH, DOT, V2DOT, SLASH};
  const char *blob = tp(1, "blobs/blob.bin");
  put_text("plain", "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
  put_text("virt", "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
  put_text("plain", "g/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"group\"}");
  put_text("virt", "g/zarr.json",
           "{\"zarr_format\":3,\"node_type\":\"group\"}");
  int style = 0;
  for (size_t a = 0; a < sizeof ARRS / sizeof *ARRS; a++) {
    const struct arr *r = &ARRS[a];
    char meta[2048], rel[512];
    array_meta(meta, sizeof meta, r->shape, r->chunks, r->dtype, encs[a]);
    snprintf(rel, sizeof rel, "%s/zarr.json", r->path);
    put_text("plain", rel, meta); /* same bytes: the plain store never */
    put_text("virt", rel, meta);  /* wraps, so its transformer is inert */
    char man[16384];
    size_t mo = (size_t)snprintf(man, sizeof man, "{");
    int n = r->grid[0] * r->grid[1] * r->grid[2];
    for (int c = 0; c < n; c++) {
      int idx[3] = {c / (r->grid[1] * r->grid[2]), c / r->grid[2] % r->grid[1],
                    c % r->grid[2]};
      uint8_t data[256];
      size_t len = (size_t)(r->esize * r->celems);
      for (size_t i = 0; i < len; i++)
        data[i] = (uint8_t)(a * 61 + (size_t)c * 17 + i * 3);
      enum how h = (enum how)(style++ % 6);
      char mkey[64] = "";
      for (int d = 0; d < r->ndim; d++)
        snprintf(mkey + strlen(mkey), sizeof mkey - strlen(mkey), "%s%d",
                 d ? "." : "", idx[d]);
      if (r->ndim == 0)
        snprintf(mkey, sizeof mkey, "0"); /* VirtualiZarr ignores it */
      if (h == OMITTED)
        continue;
      const char *sep = mo > 1 ? "," : "";
      if (h == EMPTY_PATH) {
        mo += (size_t)snprintf(man + mo, sizeof man - mo,
                               "%s\"%s\":{\"path\":\"\",\"offset\":0,"
                               "\"length\":0}",
                               sep, mkey);
        continue;
      }
      snprintf(rel, sizeof rel, "%s/%s", r->path, r->key(idx, r->ndim));
      ts_put_file(tp(0, "plain"), rel, data, len);
      if (h == INLINE) {
        static const char *b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq"
                                 "rstuvwxyz0123456789+/";
        char enc[512];
        size_t eo = 0;
        for (size_t i = 0; i < len; i += 3) {
          uint32_t v = (uint32_t)data[i] << 16;
          if (i + 1 < len)
            v |= (uint32_t)data[i + 1] << 8;
          if (i + 2 < len)
            v |= data[i + 2];
          enc[eo++] = b64[v >> 18 & 63];
          enc[eo++] = b64[v >> 12 & 63];
          enc[eo++] = i + 1 < len ? b64[v >> 6 & 63] : '=';
          enc[eo++] = i + 2 < len ? b64[v & 63] : '=';
        }
        enc[eo] = '\0';
        mo += (size_t)snprintf(man + mo, sizeof man - mo,
                               "%s\"%s\":{\"path\":\"__inlined__\",\"offset\":"
                               "0,\"length\":%zu,\"data\":\"%s\"}",
                               sep, mkey, len, enc);
        continue;
      }
      uint64_t off =
          blob_append(blob, (size_t)(c * 37 + a * 101 + 5), data, len);
      char target[4200];
      int depth = 1;
      for (const char *p = r->path; *p; p++)
        depth += *p == '/';
      if (h == REL) {
        target[0] = '\0';
        for (int d = 0; d < depth + 1; d++)
          strcat(target, "../");
        strcat(target, "blobs/blob.bin");
      } else {
        snprintf(target, sizeof target, "%s%s", h == URL ? "file://" : "",
                 blob);
      }
      mo += (size_t)snprintf(man + mo, sizeof man - mo,
                             "%s\"%s\":{\"path\":\"%s\",\"offset\":%llu,"
                             "\"length\":%zu}",
                             sep, mkey, target, (unsigned long long)off, len);
    }
    snprintf(man + mo, sizeof man - mo, "}");
    snprintf(rel, sizeof rel, "%s/manifest.json", r->path);
    put_text("virt", rel, man);
  }
  /* Stray chunk files where the manifest has no entry: never served. */
  put_text("virt", "b2/c.0.1", "stray");
  put_text("virt", "b2/c.2.1", "stray");
}

/* A store over dir wrapped for manifests, roots: dir, blobs/ and extra. */
static struct store *open_virt(const char *dir, const char *extra,
                               struct confine **c) {
  struct zerr err = {0};
  ck_assert_int_eq(confine_new(c, &err), 0);
  ck_assert_msg(confine_add_root(*c, dir, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(confine_add_root(*c, tp(2, "blobs"), &err), 0);
  if (extra)
    ck_assert_int_eq(confine_add_root(*c, extra, &err), 0);
  struct store *s;
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  ck_assert_msg(store_wrap_vzarr(s, *c, &s, &err) == 0, "%s", err.msg);
  return s;
}

static struct engine *engine_over(struct store *s) {
  struct engine_config cfg = {16u << 20, 1u << 28, 1 << 12, 0, 0};
  struct engine *e;
  struct zerr err = {0};
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* Sorted names of a namespace directory (newline-joined, "/" after dirs). */
struct names {
  char *v[256];
  int dir[256];
  int n;
};
static int names_cb(void *ud, const char *name, int is_dir) {
  struct names *ns = ud;
  ck_assert_int_lt(ns->n, 256);
  ns->dir[ns->n] = is_dir;
  ns->v[ns->n++] = strdup(name);
  return 0;
}
static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The whole content of a namespace file (raw or view); caller frees. */
static char *ns_content(struct engine *e, const char *path, uint64_t *len,
                        struct zerr *err) {
  struct ns_entry ent;
  if (ns_resolve(e, path, &ent, err) < 0)
    return NULL;
  if (ent.kind == NS_RAW) {
    uint8_t *d;
    size_t n;
    if (store_read_all(e->store, ent.key, 1u << 26, &d, &n, err) < 0)
      return NULL;
    *len = n;
    return (char *)d;
  }
  char *t = ts_view_text(e, path, 37, err);
  if (t)
    *len = strlen(t);
  return t;
}

/* Compare dir path in both engines recursively; count files compared. */
static int compare_tree(struct engine *pe, struct engine *ve, const char *path,
                        int *files) {
  struct names a = {0}, b = {0};
  struct zerr err = {0};
  ck_assert_msg(ns_list(pe, path, names_cb, &a, &err) == 0, "%s", err.msg);
  ck_assert_msg(ns_list(ve, path, names_cb, &b, &err) == 0, "%s: %s", path,
                err.msg);
  /* The virtual side also shows manifest.json. */
  for (int i = 0; i < b.n; i++)
    if (!strcmp(b.v[i], "manifest.json")) {
      free(b.v[i]);
      b.v[i] = b.v[--b.n];
      b.dir[i] = b.dir[b.n];
      i--;
    }
  qsort(a.v, (size_t)a.n, sizeof *a.v, cmp_str);
  qsort(b.v, (size_t)b.n, sizeof *b.v, cmp_str);
  ck_assert_msg(a.n == b.n, "%s: %d entries vs %d", path, a.n, b.n);
  for (int i = 0; i < a.n; i++) {
    ck_assert_str_eq(a.v[i], b.v[i]);
    char sub[4200];
    snprintf(sub, sizeof sub, "%s/%s", strcmp(path, "/") ? path : "", a.v[i]);
    struct ns_entry ent;
    ck_assert_msg(ns_resolve(pe, sub, &ent, &err) == 0, "%s", sub);
    if (ent.kind == NS_DIR) {
      compare_tree(pe, ve, sub, files);
    } else {
      uint64_t la = 0, lb = 0;
      char *ca = ns_content(pe, sub, &la, &err);
      ck_assert_msg(ca != NULL, "plain %s: %s", sub, err.msg);
      char *cb = ns_content(ve, sub, &lb, &err);
      ck_assert_msg(cb != NULL, "virt %s: %s", sub, err.msg);
      ck_assert_msg(la == lb && !memcmp(ca, cb, la), "%s differs", sub);
      uint64_t sz;
      ck_assert_int_eq(ns_resolve(ve, sub, &ent, &err), 0);
      ck_assert_int_eq(ns_size(ve, &ent, &sz, &err), 0);
      ck_assert_uint_eq(sz, lb);
      free(ca);
      free(cb);
      (*files)++;
    }
  }
  for (int i = 0; i < a.n; i++)
    free(a.v[i]);
  for (int i = 0; i < b.n; i++)
    free(b.v[i]);
  return 0;
}

/* build_pair, then an engine over each side (*c: the virtual side's). */
static void open_pair(struct engine **pe, struct engine **ve,
                      struct confine **c) {
  build_pair();
  struct store *ps;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tp(0, "plain"), &ps, &err), 0);
  *pe = engine_over(ps);
  *ve = engine_over(open_virt(tp(0, "virt"), NULL, c));
}

START_TEST(virtual_equals_plain) {
  struct engine *pe, *ve;
  struct confine *c;
  struct zerr err = {0};
  open_pair(&pe, &ve, &c);
  int files = 0;
  compare_tree(pe, ve, "/", &files);
  ck_assert_int_ge(files, 30);
  /* The missing chunks are absent, not errors; the values show fill. */
  struct store *vs = ve->store;
  struct bytesrc *b;
  enum store_entry_type ty;
  uint64_t sz;
  const char *absent[] = {"b2/c.0.0", "b2/c.0.1", "b2/c.2.0", "b2/c.2.1"};
  for (int i = 0; i < 4; i++) { /* path "" and omitted entries */
    ck_assert_int_eq(store_get(vs, absent[i], &b, &err), -ENOENT);
    ck_assert_int_eq(store_stat(vs, absent[i], &ty, &sz, &err), -ENOENT);
  }
  ck_assert_int_eq(store_get(vs, "b2/c.0.2", &b, &err), 0);
  bytesrc_unref(b);
  ck_assert_int_eq(store_stat(vs, "g/a3/c/1", &ty, &sz, &err), 0);
  ck_assert_int_eq(ty, STORE_DIR);
  ck_assert_int_eq(store_stat(vs, "g/h/v2/manifest.json", &ty, &sz, &err), 0);
  ck_assert_int_eq(ty, STORE_FILE);
  engine_free(pe);
  engine_free(ve);
  confine_free(c);
}
END_TEST

/* One bad-input case: an array [4] of int32 in chunks [2] whose chunk 0 is
 * good and whose chunk 1 entry is the text given (or the whole manifest
 * when whole is set); the reason must contain want. */
struct bad_case {
  const char *name;
  const char *entry1;              /* manifest text of chunk 1's entry */
  int whole;                       /* entry1 is the whole manifest text */
  const char *want;                /* substring of the reason */
  int outside;                     /* reads once outside/ is an allowed root */
  const char *meta_from, *meta_to; /* a change to zarr.json */
};

static const struct bad_case BAD[] = {
    {"notjson", "{\"0\": {\"path\": ", 1, "not valid JSON", 0, NULL, NULL},
    {"notobject", "[1, 2]", 1, "must be an object", 0, NULL, NULL},
    {"negoff", "{\"path\":\"GOOD\",\"offset\":-5,\"length\":8}", 0,
     "non-negative integers", 0, NULL, NULL},
    {"fraclen", "{\"path\":\"GOOD\",\"offset\":0,\"length\":8.5}", 0,
     "non-negative integers", 0, NULL, NULL},
    {"strlen", "{\"path\":\"GOOD\",\"offset\":0,\"length\":\"8\"}", 0,
     "non-negative integers", 0, NULL, NULL},
    {"nopath", "{\"offset\":0,\"length\":8}", 0, "has no path", 0, NULL, NULL},
    {"pastend", "{\"path\":\"GOOD\",\"offset\":60,\"length\":8}", 0,
     "past the end", 0, NULL, NULL},
    {"noblob",
     "{\"path\":\"../../blobs/nothing.bin\",\"offset\":0,"
     "\"length\":8}",
     0, "nothing.bin", 0, NULL, NULL},
    {"dotdot", "{\"path\":\"../../outside/x.bin\",\"offset\":0,\"length\":8}",
     0, "target_root", 1, NULL, NULL},
    {"symlink",
     "{\"path\":\"../../blobs/link.bin\",\"offset\":0,"
     "\"length\":8}",
     0, "target_root", 1, NULL, NULL},
    {"rank", "{\"0.0\":{\"path\":\"GOOD\",\"offset\":0,\"length\":8}}", 1,
     "bad chunk key", 0, NULL, NULL},
    {"inl", "{\"path\":\"__inlined__\",\"offset\":0,\"length\":8}", 0,
     "inlined but has no data", 0, NULL, NULL},
    {"noman", "{}", 1, "names no manifest", 0, "\"manifest\":", "\"x\":"},
    {"remote", "{}", 1, "remote targets need a remote context", 0,
     "./manifest.json", "s3://bucket/manifest.json"},
    {"badb64", "{\"path\":\"__inlined__\",\"data\":\"!!!\"}", 0, "base64", 0,
     NULL, NULL},
    /* A NUL inside a path fails its key, never truncating the path (which
     * would read good.bin). */
    {"nulpath", "{\"path\":\"GOOD\\u0000.txt\",\"offset\":0,\"length\":8}", 0,
     "target path contains a NUL byte", 0, NULL, NULL},
    {"nulman", "{}", 1, "manifest path contains a NUL byte", 0,
     "./manifest.json", "./manifest.json\\u0000.x"},
};

/* bad/<name>: the arrays of BAD; blobs/good.bin holds 64 bytes. */
static void build_bad(void) {
  uint8_t data[64];
  for (int i = 0; i < 64; i++)
    data[i] = (uint8_t)(i * 5 + 1);
  ts_put_file(tp(0, "blobs"), "good.bin", data, 64);
  ts_put_file(tp(0, "outside"), "x.bin", data, 64);
  ck_assert_int_eq(symlink(tp(0, "outside/x.bin"), tp(1, "blobs/link.bin")), 0);
  put_text("bad", "zarr.json", "{\"zarr_format\":3,\"node_type\":\"group\"}");
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
    char meta[2048], rel[256], man[1024], e1[512];
    array_meta(meta, sizeof meta, "[4]", "[2]", "int32", SLASH);
    if (BAD[i].meta_from) {
      char *p = strstr(meta, BAD[i].meta_from), tail[2048];
      ck_assert_ptr_nonnull(p);
      snprintf(tail, sizeof tail, "%s", p + strlen(BAD[i].meta_from));
      snprintf(p, sizeof meta - (size_t)(p - meta), "%s%s", BAD[i].meta_to,
               tail);
    }
    snprintf(rel, sizeof rel, "%s/zarr.json", BAD[i].name);
    put_text("bad", rel, meta);
    snprintf(e1, sizeof e1, "%s", BAD[i].entry1);
    char *g = strstr(e1, "GOOD");
    if (g) {
      char tail[512];
      snprintf(tail, sizeof tail, "%s", g + 4);
      snprintf(g, sizeof e1 - (size_t)(g - e1), "../../blobs/good.bin%s", tail);
    }
    if (BAD[i].whole)
      snprintf(man, sizeof man, "%s", e1);
    else
      snprintf(man, sizeof man,
               "{\"0\":{\"path\":\"../../blobs/good.bin\",\"offset\":8,"
               "\"length\":8},\"1\":%s}",
               e1);
    snprintf(rel, sizeof rel, "%s/manifest.json", BAD[i].name);
    put_text("bad", rel, man);
  }
  /* Duplicate keys: reported as an error on that key, not folded. */
  char meta[2048];
  array_meta(meta, sizeof meta, "[4]", "[2]", "int32", SLASH);
  put_text("bad", "dup/zarr.json", meta);
  put_text("bad", "dup/manifest.json",
           "{\"0\":{\"path\":\"../../blobs/good.bin\",\"offset\":8,"
           "\"length\":8},\"1\":{\"path\":\"../../blobs/good.bin\",\"offset\":"
           "0,\"length\":8},\"1\":{\"path\":\"../../blobs/good.bin\","
           "\"offset\":16,\"length\":8}}");
  /* A manifest outside the allowed roots (an absolute path in zarr.json)
   * is not read, though its targets are allowed. */
  char far[4200], *p = strstr(meta, "./manifest.json");
  ck_assert_ptr_nonnull(p);
  snprintf(far, sizeof far, "%.*s%s%s", (int)(p - meta), meta,
           tp(0, "outside/manifest.json"), p + strlen("./manifest.json"));
  put_text("bad", "farman/zarr.json", far);
  snprintf(far, sizeof far,
           "{\"0\":{\"path\":\"%s\",\"offset\":8,\"length\":8}}",
           tp(0, "blobs/good.bin"));
  put_text("outside", "manifest.json", far);
}

/* Read key through the store: 0 and the 8 good bytes, or the error. */
static int read_key(struct store *s, const char *key, struct zerr *err) {
  uint8_t *d;
  size_t n;
  zerr_clear(err);
  int rc = store_read_all(s, key, 1 << 20, &d, &n, err);
  if (rc == 0)
    free(d);
  return rc;
}

START_TEST(bad_input_fails_alone) {
  build_bad();
  struct confine *c;
  struct engine *e = engine_over(open_virt(tp(0, "bad"), NULL, &c));
  struct zerr err = {0};
  char key[256];
  for (int pass = 0; pass < 2; pass++) /* the second from the caches */
    for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
      const struct bad_case *bc = &BAD[i];
      snprintf(key, sizeof key, "%s/c/1", bc->name);
      int rc = read_key(e->store, key, &err);
      ck_assert_msg(rc == -EIO, "%s: rc %d (%s)", bc->name, rc, err.msg);
      ck_assert_msg(strstr(err.msg, bc->want) != NULL, "%s: '%s'", bc->name,
                    err.msg);
      if (bc->whole) /* names the file at fault */
        ck_assert_msg(strstr(err.msg, ".json") != NULL, "%s: '%s'", bc->name,
                      err.msg);
      /* The view of the bad chunk fails too, with the same reason. */
      snprintf(key, sizeof key, "/%s/c/1.txt", bc->name);
      char *t = ts_view_text(e, key, 64, &err);
      ck_assert_msg(t == NULL, "%s: view of a bad chunk read", bc->name);
      /* Its metadata and (unless the manifest is broken) chunk 0 read. */
      snprintf(key, sizeof key, "%s/zarr.json", bc->name);
      ck_assert_int_eq(read_key(e->store, key, &err), 0);
      snprintf(key, sizeof key, "%s/c/0", bc->name);
      rc = read_key(e->store, key, &err);
      ck_assert_msg(rc == (bc->whole ? -EIO : 0), "%s: chunk 0 rc %d (%s)",
                    bc->name, rc, err.msg);
      if (!bc->whole) {
        snprintf(key, sizeof key, "/%s/c/0.txt", bc->name);
        t = ts_view_text(e, key, 64, &err);
        ck_assert_msg(t != NULL, "%s: %s", bc->name, err.msg);
        free(t);
      }
    }
  ck_assert_int_eq(read_key(e->store, "dup/c/0", &err), 0);
  ck_assert_int_eq(read_key(e->store, "dup/c/1", &err), -EIO);
  ck_assert_msg(strstr(err.msg, "duplicate") != NULL, "%s", err.msg);
  ck_assert_int_eq(read_key(e->store, "farman/c/0", &err), -EIO);
  ck_assert_msg(strstr(err.msg, "target_root") != NULL, "%s", err.msg);
  engine_free(e);
  confine_free(c);
  /* With outside/ allowed, the escapes read the bytes. */
  e = engine_over(open_virt(tp(0, "bad"), tp(1, "outside"), &c));
  for (size_t i = 0; i < sizeof BAD / sizeof *BAD; i++) {
    snprintf(key, sizeof key, "%s/c/1", BAD[i].name);
    int rc = read_key(e->store, key, &err);
    ck_assert_msg(rc == (BAD[i].outside ? 0 : -EIO), "%s: rc %d (%s)",
                  BAD[i].name, rc, err.msg);
  }
  ck_assert_msg(read_key(e->store, "farman/c/0", &err) == 0, "%s", err.msg);
  engine_free(e);
  confine_free(c);
}
END_TEST

static const char *VLEN_CODECS =
    "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{\"name\":"
    "\"bytes\",\"configuration\":{\"endian\":\"little\"}}],\"data_codecs\":[{"
    "\"name\":\"bytes\"}],\"index_data_type\":\"uint64\",\"index_location\":"
    "\"start\"}}]";

static void le64(uint8_t *b, uint64_t v) {
  for (int i = 0; i < 8; i++)
    b[i] = (uint8_t)(v >> (8 * i));
}

START_TEST(small_read_reads_little) {
  /* One chunk of 4096 strings of 2 KiB (8 MiB) inside a blob. */
  enum { N = 4096, L = 2048 };
  size_t len = 8 + 8 * (N + 1) + (size_t)N * L;
  uint8_t *chunk = malloc(len);
  ck_assert_ptr_nonnull(chunk);
  le64(chunk, 8 * (N + 1));
  for (int i = 0; i <= N; i++)
    le64(chunk + 8 + 8 * i, (uint64_t)i * L);
  uint8_t *d = chunk + 8 + 8 * (N + 1);
  for (int i = 0; i < N; i++) {
    memset(d + (size_t)i * L, 'a' + i % 26, L);
    d[(size_t)i * L] = 'A' + i % 26;
  }
  uint64_t off = blob_append(tp(0, "blobs/big.bin"), 12345, chunk, len);
  free(chunk);
  char meta[2048], man[4400];
  snprintf(meta, sizeof meta,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%d],"
           "\"data_type\":\"string\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%d]}},\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":\"\",\"codecs\":%s,"
           "\"storage_transformers\":[{\"name\":\"chunk-manifest-json\","
           "\"configuration\":{\"manifest\":\"./manifest.json\"}}]}",
           N, N, VLEN_CODECS);
  put_text("big", "zarr.json", meta);
  snprintf(man, sizeof man,
           "{\"0\":{\"path\":\"file://%s\",\"offset\":%llu,\"length\":%zu}}",
           tp(0, "blobs/big.bin"), (unsigned long long)off, len);
  put_text("big", "manifest.json", man);
  struct confine *c;
  struct engine *e = engine_over(open_virt(tp(0, "big"), NULL, &c));
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_msg(ns_resolve(e, "/c/0.txt", &ent, &err) == 0, "%s", err.msg);
  uint64_t size;
  ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(size, (uint64_t)N * (L + 1));
  char buf[200];
  ck_assert_int_eq(ns_read_view(e, &ent, size - 200, 200, buf, NULL, &err),
                   200);
  ck_assert_int_eq(buf[199], '\n');
  ck_assert_int_eq(buf[0], 'a' + (N - 1) % 26);
  uint64_t total = atomic_load(&e->store->stats.bytes_read);
  ck_assert_msg(total > 0 && total < 256u * 1024,
                "read %llu bytes of a %zu-byte chunk",
                (unsigned long long)total, len);
  engine_free(e);
  confine_free(c);
}
END_TEST

/* One of the concurrent readers: the views of every array of ARRS, read
 * from an engine whose manifests nobody has read yet. */
struct vreader {
  struct engine *e;
  char *got[sizeof ARRS / sizeof *ARRS];
  uint64_t len[sizeof ARRS / sizeof *ARRS];
};

/* Read every array's values.txt (threads: no Check calls here). */
static void *vreader_run(void *p) {
  struct vreader *r = p;
  for (size_t a = 0; a < sizeof ARRS / sizeof *ARRS; a++) {
    char path[256];
    struct zerr err = {0};
    snprintf(path, sizeof path, "/%s/values.txt", ARRS[a].path);
    r->got[a] = ns_content(r->e, path, &r->len[a], &err);
  }
  return NULL;
}

/* Eight readers make the first reads of the same virtual arrays at once:
 * the manifest tables are built lazily, under their lock, and every
 * reader sees the plain store's bytes (.ci/run runs this under
 * ThreadSanitizer). */
START_TEST(concurrent_first_reads) {
  struct engine *pe, *ve;
  struct confine *c;
  struct zerr err = {0};
  open_pair(&pe, &ve, &c);
  struct vreader r[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].e = ve;
    ck_assert_int_eq(pthread_create(&t[i], NULL, vreader_run, &r[i]), 0);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  for (size_t a = 0; a < sizeof ARRS / sizeof *ARRS; a++) {
    char path[256];
    uint64_t len = 0;
    snprintf(path, sizeof path, "/%s/values.txt", ARRS[a].path);
    char *want = ns_content(pe, path, &len, &err);
    ck_assert_msg(want != NULL, "plain %s: %s", path, err.msg);
    for (int i = 0; i < 8; i++) {
      ck_assert_msg(r[i].got[a] != NULL, "reader %d: %s failed", i, path);
      ck_assert_msg(r[i].len[a] == len && !memcmp(r[i].got[a], want, len),
                    "reader %d: %s differs", i, path);
      free(r[i].got[a]);
    }
    free(want);
  }
  engine_free(pe);
  engine_free(ve);
  confine_free(c);
}
END_TEST

/* A store that cannot list (as plain HTTP): its arrays are learned as
 * their zarr.json is read, by eight readers at once, and every reader sees
 * the plain store's bytes (.ci/run runs this under ThreadSanitizer). */
START_TEST(unlistable_learns_arrays) {
  struct engine *pe, *ve;
  struct confine *c;
  struct zerr err = {0};
  build_pair();
  struct store *ps, *vs;
  ck_assert_int_eq(store_open_local(tp(0, "plain"), &ps, &err), 0);
  pe = engine_over(ps);
  ck_assert_int_eq(confine_new(&c, &err), 0);
  ck_assert_int_eq(confine_add_root(c, tp(0, "virt"), &err), 0);
  ck_assert_int_eq(confine_add_root(c, tp(2, "blobs"), &err), 0);
  ck_assert_int_eq(store_open_local(tp(0, "virt"), &vs, &err), 0);
  vs->unlistable = 1; /* what plain HTTP says */
  ck_assert_msg(store_wrap_vzarr(vs, c, &vs, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(vs->unlistable, 1);
  /* Before any zarr.json is read, no array is known: a chunk key is the
   * (absent) stored file. */
  struct bytesrc *b;
  ck_assert_int_eq(store_get(vs, "b2/c.0.2", &b, &err), -ENOENT);
  ve = engine_over(vs);
  struct vreader r[8];
  pthread_t t[8];
  for (int i = 0; i < 8; i++) {
    memset(&r[i], 0, sizeof r[i]);
    r[i].e = ve;
    ck_assert_int_eq(pthread_create(&t[i], NULL, vreader_run, &r[i]), 0);
  }
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  for (size_t a = 0; a < sizeof ARRS / sizeof *ARRS; a++) {
    char path[256];
    uint64_t len = 0;
    snprintf(path, sizeof path, "/%s/values.txt", ARRS[a].path);
    char *want = ns_content(pe, path, &len, &err);
    ck_assert_msg(want != NULL, "plain %s: %s", path, err.msg);
    for (int i = 0; i < 8; i++) {
      ck_assert_msg(r[i].got[a] != NULL, "reader %d: %s failed", i, path);
      ck_assert_msg(r[i].len[a] == len && !memcmp(r[i].got[a], want, len),
                    "reader %d: %s differs", i, path);
      free(r[i].got[a]);
    }
    free(want);
  }
  /* Now learned: the chunk comes from the manifest. */
  ck_assert_int_eq(store_get(vs, "b2/c.0.2", &b, &err), 0);
  bytesrc_unref(b);
  engine_free(pe);
  engine_free(ve);
  confine_free(c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("vzarr");
  TCase *tc = tcase_create("vzarr");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, virtual_equals_plain);
  tcase_add_test(tc, bad_input_fails_alone);
  tcase_add_test(tc, small_read_reads_little);
  tcase_add_test(tc, concurrent_first_reads);
  tcase_add_test(tc, unlistable_learns_arrays);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(suite());
}
