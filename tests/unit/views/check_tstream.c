/* check_tstream.c - a group's table D.csv streamed (fs/views/table.h,
 * fs/views/tblock.h): a pass over a table decodes each stored chunk once
 * whatever the cache's size, and a stat of a large table does bounded
 * work; driven through the engine without a mount.
 *
 * The store: a V2 group along dimension r of R rows in chunks of C, with
 * four columns of the kinds a table renders differently: the int64
 * coordinate r (runs of plain numbers), a float64 v with NaN fill and
 * some NaN (a CF mask only: plain numbers, masked ones empty), an int16
 * c packed with scale_factor (CF-decoded one by one, in float32), and
 * vlen-utf8 strings s with commas (their bytes as stored, quoted). Each
 * table's text is compared with the text built here. Every chunk is
 * larger than the 64 KiB cache, which is the case that decoded a chunk
 * once per block of rows before: a pass then read the store 20 to 100
 * times over. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../teststore.h"
#include "../testutil.h"

static char tmpdir[64];

/* A V2 array g/NAME of n rows in chunks of `chunk` along r. */
static void put_array(const char *g, const char *name, uint64_t n,
                      uint64_t chunk, const char *dtype, const char *fill,
                      const char *filters, const char *attrs) {
  char buf[1024], rel[128];
  snprintf(buf, sizeof buf,
           "{\"zarr_format\":2,\"shape\":[%llu],\"chunks\":[%llu],"
           "\"dtype\":\"%s\",\"fill_value\":%s,\"order\":\"C\","
           "\"compressor\":null,\"filters\":%s}",
           (unsigned long long)n, (unsigned long long)chunk, dtype, fill,
           filters);
  snprintf(rel, sizeof rel, "%s/%s/.zarray", g, name);
  ts_put_file(tmpdir, rel, buf, strlen(buf));
  snprintf(buf, sizeof buf, "{\"_ARRAY_DIMENSIONS\":[\"r\"]%s%s}",
           *attrs ? "," : "", attrs);
  snprintf(rel, sizeof rel, "%s/%s/.zattrs", g, name);
  ts_put_file(tmpdir, rel, buf, strlen(buf));
}

/* Is row i's v missing (NaN)? */
static int v_nan(uint64_t i) { return i % 7 == 3; }
/* Row i's string. */
static void s_of(uint64_t i, char *buf, size_t len) {
  snprintf(buf, len, i % 11 == 0 ? "a,%llu" : "s%llu", (unsigned long long)i);
}

/* Group g: the table of the file comment, R rows in chunks of C. The
 * expected text of g/r.csv into *want (caller frees). */
static void put_group(const char *g, uint64_t R, uint64_t C, char **want,
                      size_t *wlen) {
  char rel[128];
  snprintf(rel, sizeof rel, "%s/.zgroup", g);
  ts_put_file(tmpdir, rel, "{\"zarr_format\":2}", 17);
  put_array(g, "r", R, C, "<i8", "null", "null", "");
  put_array(g, "v", R, C, "<f8", "\"NaN\"", "null", "");
  put_array(g, "c", R, C, "<i2", "-32768", "null",
            "\"scale_factor\":0.5,\"_FillValue\":-32768");
  put_array(g, "s", R, C, "|O", "null", "[{\"id\":\"vlen-utf8\"}]", "");
  size_t cap = 64 + R * 64;
  char *text = malloc(cap);
  size_t w = (size_t)snprintf(text, cap, "r,c,s,v\n");
  int64_t *r = malloc(C * 8);
  double *v = malloc(C * 8);
  int16_t *c = malloc(C * 2);
  uint8_t *s = malloc(4 + C * 32);
  for (uint64_t k = 0; k * C < R; k++) {
    uint64_t n = R - k * C < C ? R - k * C : C;
    size_t sw = 4;
    uint32_t cnt = (uint32_t)C;
    memcpy(s, &cnt, 4);
    for (uint64_t j = 0; j < C; j++) { /* an edge chunk is full-sized */
      uint64_t i = k * C + j;
      r[j] = (int64_t)i;
      v[j] = v_nan(i) ? NAN : (double)i * 0.5;
      c[j] = (int16_t)(i % 1000);
      char sb[32];
      s_of(i, sb, sizeof sb);
      uint32_t l = (uint32_t)strlen(sb);
      memcpy(s + sw, &l, 4);
      memcpy(s + sw + 4, sb, l);
      sw += 4 + l;
      if (j >= n)
        continue;
      w += (size_t)snprintf(text + w, cap - w, "%llu,", (unsigned long long)i);
      w += (size_t)snprintf(text + w, cap - w, "%u.%s,", (unsigned)(c[j] / 2),
                            c[j] % 2 ? "5" : "0");
      w += (size_t)snprintf(text + w, cap - w, i % 11 == 0 ? "\"%s\"," : "%s,",
                            sb);
      if (!v_nan(i))
        w += (size_t)snprintf(text + w, cap - w, "%llu.%s",
                              (unsigned long long)(i / 2), i % 2 ? "5" : "0");
      text[w++] = '\n';
    }
    snprintf(rel, sizeof rel, "%s/r/%llu", g, (unsigned long long)k);
    ts_put_file(tmpdir, rel, r, C * 8);
    snprintf(rel, sizeof rel, "%s/v/%llu", g, (unsigned long long)k);
    ts_put_file(tmpdir, rel, v, C * 8);
    snprintf(rel, sizeof rel, "%s/c/%llu", g, (unsigned long long)k);
    ts_put_file(tmpdir, rel, c, C * 2);
    snprintf(rel, sizeof rel, "%s/s/%llu", g, (unsigned long long)k);
    ts_put_file(tmpdir, rel, s, sw);
  }
  free(r);
  free(v);
  free(c);
  free(s);
  *want = text;
  *wlen = w;
}

/* Rows and chunk length of the large table (R * 4 fields: more than
 * TABLE_EXACT_FIELDS) and of the small one (fewer). */
#define BIG_R 300000u
#define BIG_C 50000u
#define SMALL_R 60000u
#define SMALL_C 10000u

static char *big_want, *small_want;
static size_t big_len, small_len;

/* The store (see the file comment). */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-tstream-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  put_group("big", BIG_R, BIG_C, &big_want, &big_len);
  put_group("small", SMALL_R, SMALL_C, &small_want, &small_len);
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
  free(big_want);
  free(small_want);
}

/* An engine over tmpdir with a cache of `cache` bytes. */
static struct engine *open_engine(size_t cache) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &s, &err), 0);
  struct engine_config cfg = {cache, 1u << 30, 1000, 0, 0, 0, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* Read table `path` from offset 0 to its end in reads of `step` bytes
 * with one cursor, as a reader in order does (its size may be 0 in stat:
 * read until a read returns nothing), and compare with want. */
static void read_pass(struct engine *e, const char *path, size_t step,
                      const char *want, size_t wlen) {
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == 0, "%s", err.msg);
  struct view_cursor *cur = view_cursor_new();
  char *got = malloc(wlen + step);
  size_t off = 0;
  for (;;) {
    long n = ns_read_view(e, &ent, off, step, got + off, cur, &err);
    ck_assert_msg(n >= 0, "%s at %zu: %s", path, off, err.msg);
    if (n == 0)
      break;
    off += (size_t)n;
    if (off > wlen)
      break;
  }
  view_cursor_free(e, cur);
  size_t d = 0;
  while (d < off && d < wlen && got[d] == want[d])
    d++;
  size_t from = d > 40 ? d - 40 : 0;
  ck_assert_msg(d == wlen && off == wlen,
                "%s: the text differs at %zu of %zu: got '%.80s' want '%.80s'",
                path, d, wlen, got + from, want + from);
  free(got);
}

/* Chunks decoded so far. */
static uint64_t decodes(struct engine *e) {
  return atomic_load(&e->stats.decodes);
}

/* The size stat gives path. */
static uint64_t stat_size(struct engine *e, const char *path, int *direct) {
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size = 1;
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == 0, "%s", err.msg);
  ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
  *direct = ns_read_direct(e, &ent, &err);
  return size;
}

/* A large table with a cache smaller than one chunk: stat shows 0 at once
 * (nothing rendered, read with direct I/O), a reader in order gets the
 * whole text decoding every chunk once (4 columns x 6 chunks), and the
 * size is known once it reached the end. A second pass decodes them once
 * more. Before: stat rendered the whole table, decoding a chunk per
 * block of rows (a few hundred decodes) before the first byte. */
START_TEST(large_pass_decodes_each_chunk_once) {
  struct engine *e = open_engine(64u << 10);
  int direct;
  ck_assert_uint_eq(stat_size(e, "big/r.csv", &direct), 0);
  ck_assert_int_eq(direct, 1);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 0);
  ck_assert_uint_eq(decodes(e), 0);
  read_pass(e, "big/r.csv", 128u << 10, big_want, big_len);
  ck_assert_uint_eq(decodes(e), 4 * (BIG_R / BIG_C));
  ck_assert_uint_eq(stat_size(e, "big/r.csv", &direct), big_len);
  read_pass(e, "big/r.csv", 4096, big_want, big_len);
  ck_assert_uint_eq(decodes(e), 8 * (BIG_R / BIG_C));
  engine_free(e);
}
END_TEST

/* The head of a large table, fresh: one chunk of each column decoded
 * and one block rendered, whatever the table's length. */
START_TEST(large_head_reads_first_chunks) {
  struct engine *e = open_engine(64u << 10);
  int direct;
  ck_assert_uint_eq(stat_size(e, "big/r.csv", &direct), 0);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "big/r.csv", &ent, &err), 0);
  char buf[100];
  ck_assert_int_eq(ns_read_view(e, &ent, 0, sizeof buf, buf, NULL, &err),
                   (long)sizeof buf);
  ck_assert(!memcmp(buf, big_want, sizeof buf));
  ck_assert_uint_eq(decodes(e), 4);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 1);
  engine_free(e);
}
END_TEST

/* A table small enough for stat to render (exact size, page cache) with
 * a cache smaller than one chunk: stat's pass decodes every chunk once,
 * and so does a reader's. */
START_TEST(small_exact_pass_decodes_each_chunk_once) {
  struct engine *e = open_engine(64u << 10);
  int direct;
  ck_assert_uint_eq(stat_size(e, "small/r.csv", &direct), small_len);
  ck_assert_int_eq(direct, 0);
  uint64_t chunks = 4 * (SMALL_R / SMALL_C);
  ck_assert_uint_eq(decodes(e), chunks);
  read_pass(e, "small/r.csv", 128u << 10, small_want, small_len);
  ck_assert_uint_eq(decodes(e), 2 * chunks);
  engine_free(e);
}
END_TEST

/* A large table whose columns fit half the cache: stat learns its size
 * by a walk in bounded time (given all the time it needs here), its
 * blocks and chunks left in the cache for the reader, which decodes
 * nothing more. With no time at all, stat shows 0 and renders nothing. */
START_TEST(large_stat_learns_in_bounded_time) {
  struct engine *e = open_engine(256u << 20);
  e->table_learn_ns = 600ull * 1000000000;
  int direct;
  ck_assert_uint_eq(stat_size(e, "big/r.csv", &direct), big_len);
  ck_assert_int_eq(direct, 1); /* deferred: direct I/O whatever stat said */
  uint64_t chunks = 4 * (BIG_R / BIG_C);
  ck_assert_uint_eq(decodes(e), chunks);
  read_pass(e, "big/r.csv", 128u << 10, big_want, big_len);
  ck_assert_uint_eq(decodes(e), chunks);
  engine_free(e);
  e = open_engine(256u << 20);
  e->table_learn_ns = 0;
  ck_assert_uint_eq(stat_size(e, "big/r.csv", &direct), 0);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_TABLE_BLOCK), 0);
  engine_free(e);
}
END_TEST

/* The suite. */
static Suite *tstream_suite(void) {
  Suite *s = suite_create("tstream");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, large_pass_decodes_each_chunk_once);
  tcase_add_test(tc, large_head_reads_first_chunks);
  tcase_add_test(tc, small_exact_pass_decodes_each_chunk_once);
  tcase_add_test(tc, large_stat_learns_in_bounded_time);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return testutil_run(tstream_suite()); }
