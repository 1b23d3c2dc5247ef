/* check_lsize.c - exact sizes at any chunk count (fs/lsize.c, issue 34
 * item 3): a view of more than 65,536 stored chunks has its exact size in
 * stat (a983859 showed 0); sizes are learned keeping nothing when the
 * view's text would not stay in the cache; a stat bounded in time gives
 * 0 and learns on; the next engine over the same index lays the view out
 * from one region record without decoding, and a tail decodes what it
 * shows; a view of too few chunks for a region record finds each
 * measured size on its own; a region record that lies serves the truth to a
 * reader in order and is replaced; a table's size is kept too.
 *
 * The store: a kerchunk reference set of N chunks of one int32 each, all
 * ranges of one data file (as a netCDF file's chunks are), written here. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../../../src/store/confine.h"
#include "../../../src/store/sizeindex.h"
#include "../../../src/store/store.h"
#include "../testutil.h"

/* Chunks of the big array: past a983859's 65,536. */
#define BIG 70000

/* A new temp directory (static storage). */
static const char *tmpdir(void) {
  static char d[64];
  snprintf(d, sizeof d, "/tmp/check_lsize.XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(d));
  return d;
}

/* Element i's value: texts of 1 to 10 characters. */
static int32_t value_of(uint64_t i) {
  return (int32_t)((i * 2654435761u) % 1000000007u) / (int32_t)(1 + i % 7);
}

/* A reference set in dir: array `a` of n chunks of 1 int32 (data.bin),
 * group attributes, and 1-D arrays `x` and `y` of 20,000 elements in
 * chunks of 1,000 along dimension `obs` (a table obs.csv). *text: a's
 * values.txt (malloc'd); its length returned. */
static size_t write_refs(const char *dir, uint64_t n, char **text) {
  char p[1024];
  snprintf(p, sizeof p, "%s/data.bin", dir);
  FILE *d = fopen(p, "wb");
  snprintf(p, sizeof p, "%s/refs.json", dir);
  FILE *r = fopen(p, "w");
  ck_assert(d && r);
  fprintf(r, "{\"version\": 1, \"refs\": {\".zgroup\": \"{\\\"zarr_format\\\": "
             "2}\", ");
  fprintf(
      r,
      "\"a/.zarray\": \"{\\\"zarr_format\\\": 2, \\\"shape\\\": [%llu], "
      "\\\"chunks\\\": [1], \\\"dtype\\\": \\\"<i4\\\", \\\"compressor\\\": "
      "null, \\\"filters\\\": null, \\\"fill_value\\\": 0, \\\"order\\\": "
      "\\\"C\\\"}\"",
      (unsigned long long)n);
  char *t = malloc((size_t)n * 12 + 1);
  size_t len = 0;
  uint64_t off = 0;
  for (uint64_t i = 0; i < n; i++) {
    int32_t v = value_of(i); /* little-endian hosts, as zarrfs */
    fwrite(&v, 4, 1, d);
    fprintf(r, ", \"a/%llu\": [\"data.bin\", %llu, 4]", (unsigned long long)i,
            (unsigned long long)off);
    off += 4;
    len += (size_t)sprintf(t + len, "%d\n", (int)v);
  }
  const char *cols[] = {"x", "y"};
  for (int c = 0; c < 2; c++) {
    fprintf(r,
            ", \"%s/.zarray\": \"{\\\"zarr_format\\\": 2, \\\"shape\\\": "
            "[20000], \\\"chunks\\\": [1000], \\\"dtype\\\": \\\"<i4\\\", "
            "\\\"compressor\\\": null, \\\"filters\\\": null, "
            "\\\"fill_value\\\": 0, \\\"order\\\": \\\"C\\\"}\", "
            "\"%s/.zattrs\": \"{\\\"_ARRAY_DIMENSIONS\\\": [\\\"obs\\\"]}\"",
            cols[c], cols[c]);
    for (int k = 0; k < 20; k++) {
      for (int i = 0; i < 1000; i++) {
        int32_t v = value_of((uint64_t)(c * 20000 + k * 1000 + i));
        fwrite(&v, 4, 1, d);
      }
      fprintf(r, ", \"%s/%d\": [\"data.bin\", %llu, 4000]", cols[c], k,
              (unsigned long long)off);
      off += 4000;
    }
  }
  fprintf(r, "}}\n");
  fclose(d);
  fclose(r);
  t[len] = '\0';
  *text = t;
  return len;
}

/* An engine over dir's references, the index in idx (NULL: none), cache
 * bytes of cache and 2 decode-ahead workers; its confine in *c. */
static struct engine *refs_engine(const char *dir, const char *idx,
                                  size_t cache, struct confine **c) {
  struct zerr err = {0};
  char p[1024];
  snprintf(p, sizeof p, "%s/refs.json", dir);
  ck_assert_int_eq(confine_new(c, &err), 0);
  ck_assert_msg(confine_add_root(*c, dir, &err) == 0, "%s", err.msg);
  struct store *s;
  ck_assert_msg(store_open_refs(p, *c, &s, &err) == 0, "%s", err.msg);
  struct engine_config cfg = {.cache_size = cache,
                              .max_decoded = 1u << 30,
                              .size_table_max = 1u << 20,
                              .decode_threads = 2};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  if (idx) {
    struct sizeindex *x;
    ck_assert_msg(sizeindex_open(idx, 0, &x, &err) == 0, "%s", err.msg);
    engine_set_index(e, x);
  }
  return e;
}

/* Free an engine and its confine. */
static void refs_close(struct engine *e, struct confine *c) {
  engine_free(e);
  confine_free(c);
}

/* Chunks decoded so far. */
static uint64_t decodes(struct engine *e) {
  return atomic_load(&e->stats.decodes);
}

/* Read [off, off+len) of path in order through one cursor-less reader
 * and compare with text. */
static void read_cmp(struct engine *e, const char *path, const char *text,
                     uint64_t off, uint64_t len) {
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
  char *buf = malloc(len ? len : 1);
  uint64_t done = 0;
  while (done < len) {
    long n =
        ns_read_view(e, &ent, off + done, len - done, buf + done, NULL, &err);
    ck_assert_msg(n > 0, "read at %llu: %s", (unsigned long long)(off + done),
                  err.msg);
    done += (uint64_t)n;
  }
  ck_assert(!memcmp(buf, text + off, len));
  free(buf);
}

/* The size of path (exact: as long as it takes). */
static uint64_t size_of(struct engine *e, const char *path) {
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
  ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
  return size;
}

/* More than 65,536 stored chunks: stat gives the exact size (a983859:
 * 0, the view lazy), learned decoding each chunk once and keeping none
 * of them when the text would not stay in the cache. */
START_TEST(exact_past_65536_chunks) {
  const char *d = tmpdir();
  char *text;
  size_t len = write_refs(d, BIG, &text);
  struct confine *c;
  struct engine *e = refs_engine(d, NULL, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len);
  ck_assert_uint_eq(decodes(e), BIG);
  ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT), 1); /* kept: the first */
  ck_assert_uint_le(memo_used(e->memo), 256u << 10);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  read_cmp(e, "a/values.txt", text, len - 1000, 1000);
  read_cmp(e, "a/values.txt", text, 0, len);
  refs_close(e, c);
  free(text);
}
END_TEST

/* A stat that may wait for no time answers "not known" (0) and keeps
 * what it learned; one that waits gives the exact size, and then a stat
 * that may not wait gives it too. */
START_TEST(bounded_stat_learns_on) {
  const char *d = tmpdir();
  char *text;
  size_t len = write_refs(d, BIG, &text);
  struct confine *c;
  struct engine *e = refs_engine(d, NULL, 64u << 20, &c);
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size = 1;
  ck_assert_int_eq(ns_resolve(e, "a/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size_within(e, &ent, 0, &size, &err), 1);
  ck_assert_uint_eq(size, 0);
  ck_assert_uint_lt(decodes(e), BIG); /* it did not learn them all */
  ck_assert_int_eq(ns_read_direct(e, &ent, &err), 1);
  ck_assert_int_eq(ns_size_within(e, &ent, UINT64_MAX, &size, &err), 0);
  ck_assert_uint_eq(size, len);
  ck_assert_uint_eq(decodes(e), BIG); /* each once, whatever was waited */
  ck_assert_int_eq(ns_size_within(e, &ent, 0, &size, &err), 0);
  ck_assert_uint_eq(size, len);
  ck_assert_int_eq(ns_read_direct(e, &ent, &err), 0);
  refs_close(e, c);
  free(text);
}
END_TEST

/* The next engine over the same index: the size at once from the region
 * record, nothing decoded; a read of the end decodes only the chunks it
 * shows; a reader in order gets the whole text. */
START_TEST(next_mount_from_region_record) {
  const char *d = tmpdir();
  char idx[600], *text;
  snprintf(idx, sizeof idx, "%s/idx", d);
  size_t len = write_refs(d, BIG, &text);
  struct confine *c;
  struct engine *e = refs_engine(d, idx, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len);
  refs_close(e, c);
  e = refs_engine(d, idx, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len);
  ck_assert_uint_eq(decodes(e), 0);
  read_cmp(e, "a/values.txt", text, len - 30, 30); /* tail */
  ck_assert_uint_le(decodes(e), 8);
  read_cmp(e, "a/values.txt", text, 0, len);
  refs_close(e, c);
  free(text);
}
END_TEST

/* A view of fewer chunks than a region record takes (20 < LSIZE_MIN)
 * whose text would not stay in the cache: its sizes are measured and let
 * go, each recorded on its own in the index, so the next engine knows
 * them without a decode (main before this kept none: every mount decoded
 * every chunk to learn the size, then again to read it). */
START_TEST(next_mount_small_measured) {
  const char *d = tmpdir();
  char idx[600], *text;
  snprintf(idx, sizeof idx, "%s/idx", d);
  write_refs(d, 100, &text);
  struct confine *c;
  struct engine *e = refs_engine(d, idx, 256u << 10, &c);
  /* as a lookup learns it: on every core, within a time (lsize_fill) */
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size = 0;
  ck_assert_int_eq(ns_resolve(e, "x/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size_within(e, &ent, 600000000000ull, &size, &err), 0);
  ck_assert_uint_gt(size, (256u << 10) / 4); /* measured, not kept */
  ck_assert_uint_eq(decodes(e), 20);
  /* most measured and let go: only the first few are kept, for the cat
   * that usually follows a stat (lsize's keep_to) */
  ck_assert_uint_lt(engine_fills(e, ELEVEL_UNIT), 20);
  refs_close(e, c);
  e = refs_engine(d, idx, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "x/values.txt"), size);
  ck_assert_uint_eq(decodes(e), 0);
  refs_close(e, c);
  free(text);
}
END_TEST

/* The region record file of idx (static storage). */
static const char *region_file(const char *idx) {
  static char p[1024];
  DIR *dd = opendir(idx);
  struct dirent *de;
  const char *found = NULL;
  while (dd && (de = readdir(dd)))
    if (!strncmp(de->d_name, "lx2-r", 5) && !strstr(de->d_name, ".tmp")) {
      snprintf(p, sizeof p, "%s/%s", idx, de->d_name);
      found = p;
    }
  if (dd)
    closedir(dd);
  return found;
}

/* Make the region record of file say every size is one byte longer than
 * it is (its payload: zigzag varints of differences, the first the first
 * size; one byte each here), its total and CRC made good. */
static void lie_region(const char *file) {
  FILE *f = fopen(file, "r+b");
  ck_assert_ptr_nonnull(f);
  unsigned char b[1 << 20];
  size_t n = fread(b, 1, sizeof b, f);
  uint32_t il;
  uint64_t plen, total;
  memcpy(&plen, b + 8, 8);
  memcpy(&total, b + 16, 8);
  memcpy(&il, b + 32, 4);
  ck_assert_uint_eq(n, 36 + il + plen);
  unsigned char *pay = b + 36 + il;
  ck_assert_uint_lt(pay[0], 0x7e); /* the first size: +1 is 2 in zigzag */
  pay[0] += 2;
  total += BIG; /* the others follow the first */
  memcpy(b + 16, &total, 8);
  uint32_t crc = (uint32_t)crc32(0L, b + 8, (uInt)(n - 8));
  memcpy(b + 4, &crc, 4);
  rewind(f);
  ck_assert_uint_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* A region record that claims more than the truth: stat says the claim;
 * a reader in order gets exactly the text; then stat says the truth, and
 * the next engine finds the record replaced. */
START_TEST(lying_region_record_in_order_truth) {
  const char *d = tmpdir();
  char idx[600], *text;
  snprintf(idx, sizeof idx, "%s/idx", d);
  size_t len = write_refs(d, BIG, &text);
  struct confine *c;
  struct engine *e = refs_engine(d, idx, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len);
  refs_close(e, c);
  const char *rf = region_file(idx);
  ck_assert_ptr_nonnull(rf);
  lie_region(rf);
  e = refs_engine(d, idx, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len + BIG);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "a/values.txt", &ent, &err), 0);
  char *buf = malloc(len + BIG);
  uint64_t off = 0;
  long got;
  while ((got = ns_read_view(e, &ent, off, 4096, buf + off, NULL, &err)) > 0)
    off += (uint64_t)got;
  ck_assert_msg(got == 0, "%s", err.msg);
  ck_assert_uint_eq(off, len);
  ck_assert(!memcmp(buf, text, len));
  free(buf);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len);
  refs_close(e, c);
  e = refs_engine(d, idx, 256u << 10, &c);
  ck_assert_uint_eq(size_of(e, "a/values.txt"), len);
  refs_close(e, c);
  free(text);
}
END_TEST

/* A table's size is kept by the index too: the next engine's stat of
 * obs.csv renders no block, and the table is read with direct I/O (its
 * size a claim), giving the same text. */
START_TEST(table_size_kept) {
  const char *d = tmpdir();
  char idx[600], *text;
  snprintf(idx, sizeof idx, "%s/idx", d);
  write_refs(d, 100, &text);
  free(text);
  struct confine *c;
  struct engine *e = refs_engine(d, idx, 64u << 20, &c);
  uint64_t size = size_of(e, "obs.csv");
  struct zerr err = {0};
  char *t1 = NULL;
  {
    struct ns_entry ent;
    ck_assert_int_eq(ns_resolve(e, "obs.csv", &ent, &err), 0);
    t1 = malloc(size);
    uint64_t off = 0;
    long n;
    while (off < size && (n = ns_read_view(e, &ent, off, size - off, t1 + off,
                                           NULL, &err)) > 0)
      off += (uint64_t)n;
    ck_assert_uint_eq(off, size);
  }
  refs_close(e, c);
  e = refs_engine(d, idx, 64u << 20, &c);
  struct ns_entry ent;
  uint64_t s2;
  ck_assert_int_eq(ns_resolve(e, "obs.csv", &ent, &err), 0);
  ck_assert_int_eq(ns_size_within(e, &ent, 0, &s2, &err), 0);
  ck_assert_uint_eq(s2, size);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 0);
  ck_assert_int_eq(ns_read_direct(e, &ent, &err), 1);
  read_cmp(e, "obs.csv", t1, 0, size);
  refs_close(e, c);
  free(t1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("lsize");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, exact_past_65536_chunks);
  tcase_add_test(tc, bounded_stat_learns_on);
  tcase_add_test(tc, next_mount_from_region_record);
  tcase_add_test(tc, next_mount_small_measured);
  tcase_add_test(tc, lying_region_record_in_order_truth);
  tcase_add_test(tc, table_size_kept);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
