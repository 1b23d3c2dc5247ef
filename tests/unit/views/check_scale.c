/* check_scale.c - reads finish at real size, with bounded work and memory,
 * driven through the engine without FUSE:
 *   - 2-D shapes of real stores: (1000, 30000) int32 chunks
 *     (1000, 1000) zstd (Zarr V2), and (1000, 1500) float64 chunks
 *     (128, 100) zstd; read sequentially and by 16 concurrent readers in
 *     random order, with the default budget and with 64 KiB, counting
 *     unit decodes (memo fills) against the number of chunks;
 *   - a slab whose row of units would not fit is read in bands: the
 *     pins stay near one band, the text is exact at band and slab edges,
 *     two readers share it;
 *   - text layouts cost far less than 8 bytes per element;
 *   - missing chunks cost nothing: a never-written array of 10^18
 *     elements answers size and tail at once, [10^7] with chunk [1] too,
 *     a 1 MB string fill stays unmaterialised under max_decode;
 *   - engine_stop ends a long layout with -EINTR. */
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"
#include "../teststore.h"
#include "../testutil.h"

static char tmpdir[256];
/* The big 2-D stores, written once for their test case. */
static char bigdir[256];

/* Fresh temp directory. */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-scale-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
}

/* Remove it. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* An engine over dir with this budget. */
static struct engine *engine_at(const char *dir, size_t cache,
                                size_t max_decode) {
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct engine_config cfg = {cache, max_decode, 1 << 20, 0, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(s, &cfg, &e, &err), 0);
  return e;
}

/* An engine over tmpdir. */
static struct engine *engine_with(size_t cache, size_t max_decode) {
  return engine_at(tmpdir, cache, max_decode);
}

/* ---- a 2-D numeric array writer (V2, zstd, C order) ---- */

enum num_kind { NUM_I32, NUM_F64 };

struct grid2 {
  const char *name;
  enum num_kind kind;
  uint64_t shape[2], chunk[2];
};

/* Element (i, j): integers with both signs; floats k/8 (exact, short). */
static int64_t elem_int(uint64_t i, uint64_t j, const struct grid2 *g) {
  uint64_t lin = i * g->shape[1] + j;
  return (int64_t)((lin * 2654435761u) % 2000003) - 1000001;
}

/* Text of element (i, j) as zarrfs renders it. */
static size_t elem_text(const struct grid2 *g, uint64_t i, uint64_t j,
                        char *out) {
  int64_t v = elem_int(i, j, g);
  if (g->kind == NUM_I32) { /* by hand: sprintf dominated the test time */
    char tmp[24];
    int n = 0;
    uint64_t u = v < 0 ? (uint64_t)-v : (uint64_t)v;
    do {
      tmp[n++] = (char)('0' + u % 10);
      u /= 10;
    } while (u);
    size_t k = 0;
    if (v < 0)
      out[k++] = '-';
    while (n)
      out[k++] = tmp[--n];
    out[k++] = '\n';
    return k;
  }
  /* v/8 exactly: up to three decimals, trailing zeros dropped. */
  int n = sprintf(out, "%.3f", (double)v / 8);
  while (out[n - 1] == '0')
    n--;
  if (out[n - 1] == '.')
    n--;
  if (n == 2 && !memcmp(out, "-0", 2)) {
    out[0] = '0';
    n = 1;
  }
  out[n++] = '\n';
  return (size_t)n;
}

/* Write DIR/name/.zarray and every chunk (full edge chunks, as zarr-python
 * writes them). */
static void grid2_write_at(const char *dir, const struct grid2 *g) {
  char rel[512], meta[1024];
  snprintf(meta, sizeof meta,
           "{\"zarr_format\": 2, \"shape\": [%" PRIu64 ", %" PRIu64
           "], \"chunks\": [%" PRIu64 ", %" PRIu64 "], \"dtype\": \"%s\", "
           "\"compressor\": {\"id\": \"zstd\", \"level\": 1}, "
           "\"fill_value\": 0, \"order\": \"C\", \"filters\": null, "
           "\"dimension_separator\": \".\"}",
           g->shape[0], g->shape[1], g->chunk[0], g->chunk[1],
           g->kind == NUM_I32 ? "<i4" : "<f8");
  snprintf(rel, sizeof rel, "%s/.zarray", g->name);
  ts_put_file(dir, rel, meta, strlen(meta));
  size_t es = g->kind == NUM_I32 ? 4 : 8;
  size_t n = (size_t)(g->chunk[0] * g->chunk[1]) * es;
  uint8_t *raw = malloc(n);
  size_t cap = ZSTD_compressBound(n);
  uint8_t *z = malloc(cap);
  for (uint64_t ci = 0; ci * g->chunk[0] < g->shape[0]; ci++)
    for (uint64_t cj = 0; cj * g->chunk[1] < g->shape[1]; cj++) {
      memset(raw, 0, n);
      for (uint64_t a = 0; a < g->chunk[0]; a++)
        for (uint64_t b = 0; b < g->chunk[1]; b++) {
          uint64_t i = ci * g->chunk[0] + a, j = cj * g->chunk[1] + b;
          if (i >= g->shape[0] || j >= g->shape[1])
            continue;
          int64_t v = elem_int(i, j, g);
          uint8_t *p = raw + (a * g->chunk[1] + b) * es;
          if (g->kind == NUM_I32) {
            int32_t x = (int32_t)v;
            memcpy(p, &x, 4); /* little-endian host */
          } else {
            double x = (double)v / 8;
            memcpy(p, &x, 8);
          }
        }
      size_t zn = ZSTD_compress(z, cap, raw, n, 1);
      ck_assert(!ZSTD_isError(zn));
      snprintf(rel, sizeof rel, "%s/%" PRIu64 ".%" PRIu64, g->name, ci, cj);
      ts_put_file(dir, rel, z, zn);
    }
  free(raw);
  free(z);
}

/* In the per-test directory. */
static void grid2_write(const struct grid2 *g) { grid2_write_at(tmpdir, g); }

/* What a view must show: a literal text, or a grid's text generated on
 * demand from the offsets where its rows of elements start (the wide
 * array's text is 250 MB: too much to hold in a test), and where each
 * block of EXPECT_BLK elements starts, so that a read generates about
 * its own bytes rather than its row's up to it (a row of the banded
 * array is 1 MB of text: 128 KiB reads spent most of band_reads, and
 * under ThreadSanitizer more than its timeout, generating expectations). */
#define EXPECT_BLK 256
struct expect {
  const char *text;      /* literal, or NULL */
  const struct grid2 *g; /* generated */
  uint64_t *row_off;     /* g->shape[0]+1 offsets */
  uint64_t *blk_off;     /* of element k*EXPECT_BLK (row-major), per k */
  uint64_t nblk;
  uint64_t len;
};

/* The expected text of a grid. */
static void expect_grid(struct expect *x, const struct grid2 *g) {
  memset(x, 0, sizeof *x);
  x->g = g;
  x->row_off = malloc((size_t)(g->shape[0] + 1) * sizeof *x->row_off);
  x->nblk = (g->shape[0] * g->shape[1] + EXPECT_BLK - 1) / EXPECT_BLK;
  x->blk_off = malloc((size_t)(x->nblk + 1) * sizeof *x->blk_off);
  char t[64];
  uint64_t pos = 0, lin = 0;
  for (uint64_t i = 0; i < g->shape[0]; i++) {
    x->row_off[i] = pos;
    for (uint64_t j = 0; j < g->shape[1]; j++, lin++) {
      if (lin % EXPECT_BLK == 0)
        x->blk_off[lin / EXPECT_BLK] = pos;
      pos += elem_text(g, i, j, t);
    }
  }
  x->row_off[g->shape[0]] = pos;
  x->len = pos;
}

/* Free what expect_grid made. */
static void expect_free(struct expect *x) {
  free(x->row_off);
  free(x->blk_off);
}

/* Expected bytes [off, off+len) into out. */
static void expect_range(const struct expect *x, uint64_t off, size_t len,
                         char *out) {
  if (x->text) {
    memcpy(out, x->text + off, len);
    return;
  }
  uint64_t lo = 0, hi = x->nblk;
  while (hi - lo > 1) {
    uint64_t mid = (lo + hi) / 2;
    if (x->blk_off[mid] <= off)
      lo = mid;
    else
      hi = mid;
  }
  uint64_t pos = x->blk_off[lo], end = off + len, w = x->g->shape[1];
  uint64_t i = lo * EXPECT_BLK / w, j = lo * EXPECT_BLK % w;
  char t[64];
  for (; pos < end && i < x->g->shape[0]; j = 0, i++)
    for (; j < w && pos < end; j++) {
      size_t n = elem_text(x->g, i, j, t);
      for (size_t b = 0; b < n; b++, pos++)
        if (pos >= off && pos < end)
          out[pos - off] = t[b];
    }
}

/* Resolve a view and its size. */
static void view_open(struct engine *e, const char *path, struct ns_entry *ent,
                      uint64_t *size) {
  struct zerr err = {0};
  ck_assert_msg(ns_resolve(e, path, ent, &err) == 0, "%s: %s", path, err.msg);
  ck_assert_msg(ns_size(e, ent, size, &err) == 0, "%s: %s", path, err.msg);
}

/* The most bytes pinned after any read_cmp of this process (each test
 * runs in a process of its own; readers run in threads). */
static atomic_size_t pinned_peak;

/* Read [off, off+len) through a cursor and compare with the expectation. */
static void read_cmp(struct engine *e, const struct ns_entry *ent,
                     struct view_cursor *c, uint64_t off, size_t len,
                     const struct expect *x) {
  char *buf = malloc(len), *want = malloc(len);
  struct zerr err = {0};
  size_t done = 0;
  while (done < len) {
    long n = ns_read_view(e, ent, off + done, len - done, buf + done, c, &err);
    ck_assert_msg(n > 0, "read at %" PRIu64 ": %s", off + done, err.msg);
    done += (size_t)n;
  }
  size_t pinned = memo_pinned(e->memo), peak = atomic_load(&pinned_peak);
  while (pinned > peak &&
         !atomic_compare_exchange_weak(&pinned_peak, &peak, pinned))
    ;
  expect_range(x, off, len, want);
  ck_assert_msg(!memcmp(buf, want, len),
                "bytes differ in [%" PRIu64 ", +%zu)", off, len);
  free(buf);
  free(want);
}

/* Sequential 128 KiB reads of the whole view, as cat does. */
static void read_sequential(struct engine *e, const char *path,
                            const struct expect *x) {
  struct ns_entry ent;
  uint64_t size;
  view_open(e, path, &ent, &size);
  ck_assert_uint_eq(size, x->len);
  struct view_cursor *c = view_cursor_new();
  for (uint64_t off = 0; off < size; off += 131072)
    read_cmp(e, &ent, c, off,
             (size_t)(size - off < 131072 ? size - off : 131072), x);
  view_cursor_free(e, c);
}

/* 16 readers, each with its own cursor (its own open file), share the
 * 128 KiB pieces of a view in a shuffled order. */
struct rreader {
  struct engine *e;
  const struct ns_entry *ent;
  const struct expect *x;
  const uint64_t *pieces;
  uint64_t npieces, size;
  int id;
};

/* Take every 16th piece of the shuffled list. */
static void *rreader_run(void *p) {
  struct rreader *r = p;
  struct view_cursor *c = view_cursor_new();
  for (uint64_t i = (uint64_t)r->id; i < r->npieces; i += 16) {
    uint64_t off = r->pieces[i] * 131072;
    size_t len = (size_t)(r->size - off < 131072 ? r->size - off : 131072);
    read_cmp(r->e, r->ent, c, off, len, r->x);
  }
  view_cursor_free(r->e, c);
  return NULL;
}

/* Read a view once, by 16 concurrent readers in random order. */
static void read_random16(struct engine *e, const char *path,
                          const struct expect *x) {
  struct ns_entry ent;
  uint64_t size;
  view_open(e, path, &ent, &size);
  ck_assert_uint_eq(size, x->len);
  uint64_t np = (size + 131071) / 131072;
  uint64_t *pieces = malloc(np * sizeof *pieces);
  for (uint64_t i = 0; i < np; i++)
    pieces[i] = i;
  srand(12345);
  for (uint64_t i = np; i > 1; i--) {
    uint64_t j = (uint64_t)rand() % i, t = pieces[i - 1];
    pieces[i - 1] = pieces[j];
    pieces[j] = t;
  }
  pthread_t t[16];
  struct rreader r[16];
  for (int i = 0; i < 16; i++) {
    r[i] = (struct rreader){e, &ent, x, pieces, np, size, i};
    pthread_create(&t[i], NULL, rreader_run, &r[i]);
  }
  for (int i = 0; i < 16; i++)
    pthread_join(t[i], NULL);
  free(pieces);
}

static const struct grid2 WIDE = {"wide", NUM_I32, {1000, 30000}, {1000, 1000}};
static const struct grid2 FLOATS = {"floats", NUM_F64, {1000, 1500},
                                   {128, 100}};

/* Their expected texts (row offsets), computed once too. */
static struct expect wide_x, floats_x;

/* Once for the 2-D test case (in the parent process: unchecked; the
 * forked tests inherit the stores and the offsets). */
static void big_setup(void) {
  snprintf(bigdir, sizeof bigdir, "/tmp/zarrfs-scale-big-XXXXXX");
  if (!mkdtemp(bigdir))
    abort();
  grid2_write_at(bigdir, &WIDE);
  grid2_write_at(bigdir, &FLOATS);
  expect_grid(&wide_x, &WIDE);
  expect_grid(&floats_x, &FLOATS);
}

/* The expectation of one of the two big grids. */
static const struct expect *big_expect(const struct grid2 *g) {
  return g == &WIDE ? &wide_x : &floats_x;
}

/* Remove the big stores. */
static void big_teardown(void) {
  testutil_rmtree(bigdir);
  expect_free(&wide_x);
  expect_free(&floats_x);
}

/* Chunks of a grid. */
static uint64_t nchunks(const struct grid2 *g) {
  return ((g->shape[0] + g->chunk[0] - 1) / g->chunk[0]) *
         ((g->shape[1] + g->chunk[1] - 1) / g->chunk[1]);
}

/* Text of a band when the cache is smaller (fs/views/rowband.h:
 * ROWBAND_TEXT_MAX). */
#define BAND_TEXT (18u << 20)

/* One configuration of the 2-D checks: stat, then a read pattern, with
 * the number of unit decodes bounded by `factor` times the chunks;
 * factor 0: a grid whose row of units does not fit, read in bands, where
 * every decode belongs to learning sizes or to a band or map made. */
static void grid2_check(const struct grid2 *g, size_t cache, int random16,
                        uint64_t factor) {
  const struct expect *x = big_expect(g);
  struct engine *e = engine_at(bigdir, cache, 1u << 30);
  atomic_store(&pinned_peak, 0);
  char path[256];
  snprintf(path, sizeof path, "/%s/values.txt", g->name);
  if (random16)
    read_random16(e, path, x);
  else
    read_sequential(e, path, x);
  /* every decode: to learn a size (kept as a unit, or measured and let
   * go: fs/lsize.h) or to read */
  uint64_t decodes = atomic_load(&e->stats.decodes);
  if (getenv("ZARRFS_TEST_VERBOSE"))
    printf("%s cache=%zu %s: %" PRIu64 " unit decodes, %" PRIu64
           " chunks, %" PRIu64 " rows built\n",
           g->name, cache, random16 ? "random16" : "sequential", decodes,
           nchunks(g), engine_fills(e, ELEVEL_ROW));
  uint64_t bound = factor * nchunks(g);
  if (!factor) { /* one slab: sizes, then per band (and map) made */
    bound = (1 + engine_fills(e, ELEVEL_ROW)) * nchunks(g);
    ck_assert_uint_ge(engine_fills(e, ELEVEL_ROW), 2);
    if (!random16) { /* a pass: the map, then each band once */
      ck_assert_uint_le(engine_fills(e, ELEVEL_ROW),
                        2 + x->len / (BAND_TEXT - (1u << 20)));
      ck_assert_uint_le(atomic_load(&pinned_peak), BAND_TEXT + (8u << 20));
    }
  }
  ck_assert_msg(decodes <= bound,
                "%s, cache %zu, %s: %" PRIu64 " unit decodes for %" PRIu64
                " chunks",
                g->name, cache, random16 ? "16 random readers" : "sequential",
                decodes, nchunks(g));
  /* Pinned data went back to the budget once the readers closed. */
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  ck_assert_uint_le(memo_used(e->memo), cache);
  engine_free(e);
}

/* The same 16 random readers on a smaller grid, with a 64 KiB budget (rows
 * built, evicted and rebuilt while other readers wait for them): the case
 * .ci/run runs under ThreadSanitizer, where the real sizes take too long
 * (CK_EXCLUDE_TAGS=big). */
START_TEST(small_random16_64k) {
  static const struct grid2 small = {"small", NUM_F64, {400, 600}, {64, 50}};
  grid2_write(&small);
  struct expect x;
  expect_grid(&x, &small);
  struct engine *e = engine_with(64u << 10, 1u << 30);
  read_random16(e, "/small/values.txt", &x);
  uint64_t decodes = engine_fills(e, ELEVEL_UNIT);
  ck_assert_msg(decodes <= 4 * nchunks(&small), "%" PRIu64 " unit decodes",
                decodes);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  expect_free(&x);
}
END_TEST

/* head -c 4096 of the wide array used to take minutes with the default
 * budget: a row of its units did not fit the cache and every row of
 * elements decoded every chunk again. */
START_TEST(wide_head_default_cache) {
  struct engine *e = engine_at(bigdir, 256u << 20, 1u << 30);
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/wide/values.txt", &ent, &err), 0);
  struct view_cursor *c = view_cursor_new();
  read_cmp(e, &ent, c, 0, 4096, &wide_x);
  ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT), nchunks(&WIDE));
  view_cursor_free(e, c);
  engine_free(e);
}
END_TEST

/* Lazy sizes (-o sizes=lazy, the remote default): stat of values.txt and
 * of a chunk view decodes nothing and says 0; reads are still exact, and
 * afterwards values.txt's size is known. */
START_TEST(wide_lazy_sizes) {
  struct store *st;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(bigdir, &st, &err), 0);
  struct engine_config cfg = {256u << 20, 1u << 30, 1 << 20, 0, 1};
  struct engine *e;
  ck_assert_int_eq(engine_new(st, &cfg, &e, &err), 0);
  struct ns_entry ent, cent;
  uint64_t size = 1;
  view_open(e, "/wide/values.txt", &ent, &size);
  ck_assert_uint_eq(size, 0);
  size = 1;
  view_open(e, "/wide/0.3.txt", &cent, &size);
  ck_assert_uint_eq(size, 0);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  struct view_cursor *c = view_cursor_new();
  read_cmp(e, &ent, c, 0, 4096, &wide_x);
  /* past the end: nothing (a direct-I/O reader stops there) */
  char b[16];
  ck_assert_int_eq(ns_read_view(e, &ent, wide_x.len + 5, sizeof b, b, c,
                                &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, wide_x.len);
  view_cursor_free(e, c);
  engine_free(e);
}
END_TEST

/* Each unit decoded once per pass with the default budget (its row fits
 * the cache). With 64 KiB the row of 30 units (120 MB of elements) does
 * not fit: read in bands of 18 MiB of text, each unit decoded once to
 * learn sizes, once for the map of the slab and once per band. */
START_TEST(wide_sequential_default) { grid2_check(&WIDE, 256u << 20, 0, 1); }
END_TEST
START_TEST(wide_sequential_64k) { grid2_check(&WIDE, 64u << 10, 0, 0); }
END_TEST
START_TEST(wide_random16_64k) { grid2_check(&WIDE, 64u << 10, 1, 0); }
END_TEST
START_TEST(floats_sequential_1m) { grid2_check(&FLOATS, 1u << 20, 0, 2); }
END_TEST
START_TEST(floats_sequential_64k) { grid2_check(&FLOATS, 64u << 10, 0, 2); }
END_TEST
START_TEST(floats_random16_default) {
  grid2_check(&FLOATS, 256u << 20, 1, 1);
}
END_TEST
/* A row of the float grid (15 units) is larger than these caches, so
 * it is dropped as soon as no reader holds it, and 16 readers at random
 * slabs rebuild rows as their timing falls: 9 to 18 rows for 8 slabs in
 * runs on a loaded 2-core VM (each row 15 decodes). The bound says the
 * work stays a small multiple of the chunks, not how lucky a run is. */
START_TEST(floats_random16_1m) { grid2_check(&FLOATS, 1u << 20, 1, 4); }
END_TEST
START_TEST(floats_random16_64k) { grid2_check(&FLOATS, 64u << 10, 1, 4); }
END_TEST

/* A single 128 KiB read at a random offset decodes one row of units (15
 * chunks), not rows x chunks, even with a 1 MiB budget. */
START_TEST(floats_one_read_1m) {
  struct engine *e = engine_at(bigdir, 1u << 20, 1u << 30);
  struct ns_entry ent;
  uint64_t size;
  view_open(e, "/floats/values.txt", &ent, &size);
  /* each chunk decoded once for the size (measured and let go: the text
   * would not stay in the cache) */
  ck_assert_uint_eq(atomic_load(&e->stats.decodes), nchunks(&FLOATS));
  uint64_t after_stat = engine_fills(e, ELEVEL_UNIT);
  read_cmp(e, &ent, NULL, size / 2, 131072, &floats_x);
  ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT) - after_stat, 2 * 15);
  engine_free(e);
}
END_TEST

/* ---- layouts ---- */

/* A 7.5M-element uint8 chunk: its layout costs 1/8 byte per element (the
 * 75M-element chunk of the report needed 600 MB of offsets). */
START_TEST(layout_is_compact) {
  const uint64_t N = 7500000;
  char meta[512];
  snprintf(meta, sizeof meta,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%" PRIu64
           "],\"data_type\":\"uint8\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%" PRIu64 "]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":0,"
           "\"codecs\":[{\"name\":\"bytes\"}]}",
           N, N);
  ts_put_file(tmpdir, "u8/zarr.json", meta, strlen(meta));
  uint8_t *raw = malloc(N);
  for (uint64_t i = 0; i < N; i++)
    raw[i] = (uint8_t)(i * 7);
  ts_put_file(tmpdir, "u8/c/0", raw, N);
  /* A 64M cache keeps unit text only up to 8M: this 27 MB text stays a
   * layout over the elements; with 256M (32M) it is kept rendered, and
   * then costs its text and the block offsets, nothing more. */
  for (int big = 0; big < 2; big++) {
    struct engine *e = engine_with(big ? 256u << 20 : 64u << 20, 1u << 30);
    const struct znode *n = node_get(e->nodes, "u8");
    uint64_t idx[1] = {0};
    struct memo_ref *ref;
    struct zerr err = {0};
    ck_assert_int_eq(unit_get(e, n, idx, &ref, &err), 0);
    const struct chunk_text *ct = unit_of_ref(ref);
    ck_assert_int_eq(ct->text != NULL, big);
    ck_assert_uint_le(ct->cost, (big ? ct->size : N) + N / 8 + 4096);
    /* The text is right at both ends and in the middle. */
    char buf[64];
    ck_assert_int_eq(text_read(ct, NULL, 0, 8, buf, &err), 8);
    ck_assert(!memcmp(buf, "0\n7\n14\n2", 8));
    uint64_t k = N - 1; /* last element: (k*7) mod 256 */
    char last[8];
    int ll = sprintf(last, "%u\n", (unsigned)(uint8_t)(k * 7));
    ck_assert_int_eq(
        text_read(ct, NULL, ct->size - (uint64_t)ll, 64, buf, &err), ll);
    ck_assert(!memcmp(buf, last, (size_t)ll));
    /* Line starts agree between the two forms. */
    ck_assert_uint_eq(text_line_off(ct, 3), 7);
    ck_assert_uint_eq(text_line_off(ct, N - 1), ct->size - (uint64_t)ll);
    ck_assert_uint_eq(text_line_off_from(ct, 1, 2, 3), 7);
    memo_release(e->memo, ref);
    engine_free(e);
  }
  free(raw);
}
END_TEST

/* ---- missing chunks ---- */

/* A V3 array zarr.json with one dimension. */
static void put_array_1d(const char *name, const char *dtype, uint64_t shape,
                         uint64_t chunk, const char *fill) {
  char meta[1024], rel[256];
  snprintf(meta, sizeof meta,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[%" PRIu64
           "],\"data_type\":\"%s\",\"chunk_grid\":{\"name\":\"regular\","
           "\"configuration\":{\"chunk_shape\":[%" PRIu64 "]}},"
           "\"chunk_key_encoding\":{\"name\":\"default\"},\"fill_value\":%s,"
           "\"codecs\":[{\"name\":\"bytes\",\"configuration\":{\"endian\":"
           "\"little\"}}]}",
           shape, dtype, chunk, fill);
  snprintf(rel, sizeof rel, "%s/zarr.json", name);
  ts_put_file(tmpdir, rel, meta, strlen(meta));
}

/* Size and tail of a never-written array without decoding anything. */
static void never_written(const char *name, uint64_t shape, uint64_t chunk) {
  put_array_1d(name, "int16", shape, chunk, "-7");
  struct engine *e = engine_with(64u << 10, 64u << 20);
  char path[256];
  snprintf(path, sizeof path, "/%s/values.txt", name);
  struct ns_entry ent;
  uint64_t size;
  view_open(e, path, &ent, &size);
  ck_assert_uint_eq(size, shape * 3); /* "-7\n" */
  char buf[64];
  struct zerr err = {0};
  ck_assert_int_eq(ns_read_view(e, &ent, size - 7, 64, buf, NULL, &err), 7);
  ck_assert(!memcmp(buf, "\n-7\n-7\n", 7));
  ck_assert_int_eq(ns_read_view(e, &ent, 1, 4, buf, NULL, &err), 4);
  ck_assert(!memcmp(buf, "7\n-7", 4));
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 0);
  ck_assert_uint_le(memo_used(e->memo), 64u << 10);
  engine_free(e);
}

START_TEST(never_written_1e18_one_chunk) {
  never_written("huge", 1000000000000000000ull, 1000000000000000000ull);
}
END_TEST
START_TEST(never_written_1e18_many_chunks) {
  never_written("many", 1000000000000000000ull, 1000000);
}
END_TEST
START_TEST(never_written_1e7_chunk_1) { never_written("tiny", 10000000, 1); }
END_TEST

/* A sparse array: three stored chunks among 10^12; sizes are fill
 * arithmetic plus the stored chunks' differences, reads land right. */
START_TEST(sparse_reads) {
  put_array_1d("sp", "int16", 1000000000000ull, 4, "0");
  int16_t c0[4] = {1, -2, 300, 4}, c5[4] = {-1000, 5, 6, 7},
          clast[4] = {9, 9, 9, 9};
  ts_put_file(tmpdir, "sp/c/0", c0, 8);
  ts_put_file(tmpdir, "sp/c/5", c5, 8);
  ts_put_file(tmpdir, "sp/c/249999999999", clast, 8);
  struct engine *e = engine_with(64u << 10, 64u << 20);
  struct ns_entry ent;
  uint64_t size;
  view_open(e, "/sp/values.txt", &ent, &size);
  /* fill "0\n" = 2 bytes; chunk 0 text "1\n-2\n300\n4\n" = 11 (8 more);
   * chunk 5 "-1000\n5\n6\n7\n" = 12 (4 more); last "9\n" x4 = 8 (0) */
  ck_assert_uint_eq(size, 2000000000000ull + 3 + 4);
  char buf[80];
  struct zerr err = {0};
  ck_assert_int_eq(ns_read_view(e, &ent, 0, 11, buf, NULL, &err), 11);
  ck_assert(!memcmp(buf, "1\n-2\n300\n4\n", 11));
  /* chunk 5 starts after chunks 0..4: 11 + 4*8 */
  ck_assert_int_eq(ns_read_view(e, &ent, 43 - 2, 16, buf, NULL, &err), 16);
  ck_assert(!memcmp(buf, "0\n-1000\n5\n6\n7\n0\n", 16));
  ck_assert_int_eq(ns_read_view(e, &ent, size - 10, 80, buf, NULL, &err), 10);
  ck_assert(!memcmp(buf, "0\n9\n9\n9\n9\n", 10));
  ck_assert_uint_eq(engine_fills(e, ELEVEL_UNIT), 3);
  engine_free(e);
}
END_TEST

/* A string array with a 1 MB fill value and chunk_shape [10^18]: nothing
 * is materialised (max_decode 64M), the text is right. */
START_TEST(big_string_fill) {
  size_t fl = 1u << 20;
  char *fill = malloc(fl + 3);
  fill[0] = '"';
  for (size_t i = 0; i < fl; i++)
    fill[1 + i] = (char)('a' + i % 26);
  fill[fl + 1] = '"';
  fill[fl + 2] = '\0';
  char *meta = malloc(fl + 1024);
  int w = sprintf(meta,
                  "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[2000],"
                  "\"data_type\":\"string\",\"chunk_grid\":{\"name\":"
                  "\"regular\",\"configuration\":{\"chunk_shape\":[1000]}},"
                  "\"chunk_key_encoding\":{\"name\":\"default\"},"
                  "\"fill_value\":%s,\"codecs\":[{\"name\":\"vlen-utf8\"}]}",
                  fill);
  ts_put_file(tmpdir, "s/zarr.json", meta, (size_t)w);
  w = sprintf(meta,
              "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":"
              "[1000000000000000000],\"data_type\":\"string\",\"chunk_grid\":"
              "{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":"
              "[1000000000000000000]}},\"chunk_key_encoding\":{\"name\":"
              "\"default\"},\"fill_value\":\"ab\",\"codecs\":[{\"name\":"
              "\"vlen-utf8\"}]}");
  ts_put_file(tmpdir, "h/zarr.json", meta, (size_t)w);
  struct engine *e = engine_with(64u << 10, 64u << 20);
  struct ns_entry ent;
  uint64_t size;
  view_open(e, "/s/values.txt", &ent, &size);
  ck_assert_uint_eq(size, 2000 * (uint64_t)(fl + 1));
  char *buf = malloc(fl + 2);
  struct zerr err = {0};
  uint64_t off = 1234 * (uint64_t)(fl + 1) - 1; /* newline, then a fill */
  ck_assert_int_eq(ns_read_view(e, &ent, off, fl + 2, buf, NULL, &err),
                   (long)(fl + 2));
  ck_assert_int_eq(buf[0], '\n');
  ck_assert(!memcmp(buf + 1, fill + 1, fl));
  ck_assert_int_eq(buf[fl + 1], '\n');
  view_open(e, "/h/values.txt", &ent, &size);
  ck_assert_uint_eq(size, 3000000000000000000ull);
  ck_assert_int_eq(ns_read_view(e, &ent, size - 5, 64, buf, NULL, &err), 5);
  ck_assert(!memcmp(buf, "b\nab\n", 5));
  ck_assert_uint_le(memo_used(e->memo) + memo_pinned(e->memo), 64u << 10);
  engine_free(e);
  free(buf);
  free(meta);
  free(fill);
}
END_TEST

/* A 2-D array with missing chunks inside rows of units. */
START_TEST(rows_with_missing_chunks) {
  struct grid2 g = {"holes", NUM_I32, {10, 9}, {4, 2}};
  grid2_write(&g);
  /* Remove chunks (0,1) and (2,4): their elements become fill 0. */
  char path[512];
  snprintf(path, sizeof path, "%s/holes/0.1", tmpdir);
  ck_assert_int_eq(unlink(path), 0);
  snprintf(path, sizeof path, "%s/holes/2.4", tmpdir);
  ck_assert_int_eq(unlink(path), 0);
  char *fixed = malloc(g.shape[0] * g.shape[1] * 16), *q = fixed;
  for (uint64_t i = 0; i < g.shape[0]; i++)
    for (uint64_t j = 0; j < g.shape[1]; j++) {
      char t[32];
      size_t n = elem_text(&g, i, j, t);
      int hole = (i / 4 == 0 && j / 2 == 1) || (i / 4 == 2 && j / 2 == 4);
      if (hole) {
        memcpy(q, "0\n", 2);
        q += 2;
      } else {
        memcpy(q, t, n);
        q += n;
      }
    }
  struct engine *e = engine_with(4096, 1u << 30);
  struct expect x = {.text = fixed, .len = (uint64_t)(q - fixed)};
  read_sequential(e, "/holes/values.txt", &x);
  ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT), 2 * (15 - 2));
  engine_free(e);
  free(fixed);
}
END_TEST

/* ---- special files ---- */

/* A chunk key that is a FIFO: views that need it fail at once with EIO
 * (never blocking, never the fill value), the others keep serving; the
 * listing of the chunk directory leaves it out. */
START_TEST(fifo_chunk_fails_fast) {
  put_array_1d("f", "int16", 8, 4, "0");
  int16_t c0[4] = {1, 2, 3, 4};
  ts_put_file(tmpdir, "f/c/0", c0, 8);
  char path[512];
  snprintf(path, sizeof path, "%s/f/c/1", tmpdir);
  ck_assert_int_eq(mkfifo(path, 0644), 0);
  alarm(20); /* a regression would block in open(): fail instead */
  struct engine *e = engine_with(64u << 10, 64u << 20);
  struct ns_entry ent;
  uint64_t size;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, "/f/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EIO);
  ck_assert_msg(strstr(err.msg, "FIFO") != NULL, "%s", err.msg);
  ck_assert_int_eq(ns_resolve(e, "/f/c/1.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EIO);
  ck_assert_int_eq(ns_resolve(e, "/f/c/0.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), 0);
  ck_assert_uint_eq(size, 8);
  engine_free(e);
  alarm(0);
}
END_TEST

/* ---- shutdown ---- */

/* A store over a local one whose gets stop at a gate: the get numbered
 * gate_at waits (10 s at most) until the test opens the gate, so the test
 * knows a layout is under way, and far from its end, when it stops it. */
struct gated_store {
  struct store base;
  struct store *inner;
  pthread_mutex_t lock;
  pthread_cond_t cond;
  int gets, gate_at, reached, open;
};

/* A get: through the gate, then the inner store's. */
static int gated_get(struct store *s, const char *key, struct bytesrc **out,
                     struct zerr *err) {
  struct gated_store *g = (struct gated_store *)s;
  pthread_mutex_lock(&g->lock);
  if (++g->gets == g->gate_at) {
    g->reached = 1;
    pthread_cond_broadcast(&g->cond);
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (!g->open && pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0)
      ;
  }
  pthread_mutex_unlock(&g->lock);
  return g->inner->ops->get(g->inner, key, out, err);
}

static int gated_stat(struct store *s, const char *key,
                      enum store_entry_type *type, uint64_t *size,
                      int64_t *mtime, struct zerr *err) {
  struct gated_store *g = (struct gated_store *)s;
  return g->inner->ops->stat(g->inner, key, type, size, mtime, err);
}

static int gated_list(struct store *s, const char *prefix, store_list_cb cb,
                      void *ud, struct zerr *err) {
  struct gated_store *g = (struct gated_store *)s;
  return g->inner->ops->list(g->inner, prefix, cb, ud, err);
}

static void gated_destroy(struct store *s) {
  struct gated_store *g = (struct gated_store *)s;
  store_free(g->inner);
  pthread_cond_destroy(&g->cond);
  pthread_mutex_destroy(&g->lock);
  free(g->base.location);
  free(g);
}

static const struct store_ops gated_ops = {gated_get, gated_stat, gated_list,
                                           gated_destroy};

/* The stopper: wait (10 s at most) until the layout is at the gate, stop
 * the engine, open the gate. */
struct stopper {
  struct gated_store *g;
  struct engine *e;
  int reached;
};

static void *stop_at_gate(void *p) {
  struct stopper *st = p;
  struct gated_store *g = st->g;
  pthread_mutex_lock(&g->lock);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  while (!g->reached && pthread_cond_timedwait(&g->cond, &g->lock, &until) == 0)
    ;
  st->reached = g->reached;
  engine_stop(st->e);
  g->open = 1;
  pthread_cond_broadcast(&g->cond);
  pthread_mutex_unlock(&g->lock);
  return NULL;
}

/* A layout over 20,000 stored chunks is interrupted by engine_stop (which
 * comes while it waits for its 100th chunk); then, on a fresh engine, a
 * read learns the sizes before it only: 0..19999, one a line, 108,890 B. */
START_TEST(stop_interrupts_layout) {
  put_array_1d("m", "int16", 20000, 1, "0");
  for (int i = 0; i < 20000; i++) {
    char rel[64];
    int16_t v = (int16_t)i;
    snprintf(rel, sizeof rel, "m/c/%d", i);
    ts_put_file(tmpdir, rel, &v, 2);
  }
  struct gated_store *g = calloc(1, sizeof *g);
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &g->inner, &err), 0);
  g->base.ops = &gated_ops;
  g->base.location = strdup(tmpdir);
  pthread_mutex_init(&g->lock, NULL);
  pthread_cond_init(&g->cond, NULL);
  struct engine_config cfg = {64u << 10, 64u << 20, 1 << 20, 0, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(&g->base, &cfg, &e, &err), 0);
  struct ns_entry ent;
  ck_assert_int_eq(ns_resolve(e, "/m/values.txt", &ent, &err), 0);
  pthread_mutex_lock(&g->lock);
  g->gate_at = g->gets + 100; /* metadata read so far: 100 gets on */
  pthread_mutex_unlock(&g->lock);
  struct stopper st = {g, e, 0};
  pthread_t t;
  pthread_create(&t, NULL, stop_at_gate, &st);
  uint64_t size;
  int rc = ns_size(e, &ent, &size, &err);
  pthread_join(t, NULL);
  ck_assert_msg(st.reached, "the layout never reached the gate");
  ck_assert_int_eq(rc, -EINTR);
  ck_assert_msg(engine_fills(e, ELEVEL_UNIT) < 20000,
                "the layout ran to the end");
  /* After a stop every wait and long loop refuses at once. */
  ck_assert_int_eq(ns_size(e, &ent, &size, &err), -EINTR);
  engine_free(e);
  e = engine_with(1u << 20, 64u << 20);
  char buf[16];
  ck_assert_int_eq(ns_resolve(e, "/m/values.txt", &ent, &err), 0);
  ck_assert_int_eq(ns_read_view(e, &ent, 0, 8, buf, NULL, &err), 8);
  ck_assert(!memcmp(buf, "0\n1\n2\n3\n", 8));
  ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT), 512);
  ck_assert_int_eq(view_array_size_known(e, ent.node, &size, &err), 0);
  ck_assert_int_eq(ns_read_view(e, &ent, 108884, 16, buf, NULL, &err), 6);
  ck_assert(!memcmp(buf, "19999\n", 6));
  ck_assert_int_eq(view_array_size_known(e, ent.node, &size, &err), 1);
  ck_assert_uint_eq(size, 108890);
  engine_free(e);
}
END_TEST

/* Two slabs of 20 units whose rows would hold 56 MB of elements each
 * (the second's chunks hold 10 rows inside the array, 100 as stored),
 * beyond both a 1 MiB cache and what a row may hold: 104 MB of text,
 * then 10 MB. */
static const struct grid2 BANDED = {
    "banded", NUM_I32, {110, 140000}, {100, 7000}};

/* Two readers at once, each in sequence with its own cursor. */
struct breader {
  struct engine *e;
  const struct expect *x;
};

/* Read the banded view from start to end. */
static void *breader_run(void *p) {
  struct breader *b = p;
  read_sequential(b->e, "/banded/values.txt", b->x);
  return NULL;
}

/* The banded slab, one reader: a cat keeps about one band pinned (not the
 * row) and decodes each unit once per band; reads at odd offsets across
 * band and slab edges and the tail show the same bytes. No thread: left
 * out under ThreadSanitizer with the other real-size cases (tag "big"),
 * where band_two_readers runs. */
START_TEST(band_reads) {
  grid2_write(&BANDED);
  struct expect x;
  expect_grid(&x, &BANDED);
  struct engine *e = engine_with(1u << 20, 1u << 30);
  atomic_store(&pinned_peak, 0);
  read_sequential(e, "/banded/values.txt", &x);
  ck_assert_uint_le(atomic_load(&pinned_peak), BAND_TEXT + (8u << 20));
  uint64_t bands = 1 + x.row_off[100] / (BAND_TEXT - (1u << 20));
  ck_assert_uint_ge(engine_fills(e, ELEVEL_ROW), 3); /* maps, bands */
  ck_assert_uint_le(engine_fills(e, ELEVEL_ROW), 2 + bands + 2);
  /* sizes (40 units), then per slab its map and each band (20 each) */
  ck_assert_uint_le(engine_fills(e, ELEVEL_UNIT),
                    40 + 20 * (1 + bands) + 20 * 2);
  struct ns_entry ent;
  uint64_t size;
  view_open(e, "/banded/values.txt", &ent, &size);
  struct view_cursor *c = view_cursor_new();
  for (uint64_t b = 1; b <= bands; b++) { /* around each band's end */
    uint64_t off = b * BAND_TEXT - (1u << 20) + 7;
    if (off < size) {
      read_cmp(e, &ent, NULL, off,
               (size_t)(size - off < 1048579 ? size - off : 1048579), &x);
      read_cmp(e, &ent, c, off - 4093, 8191, &x);
    }
  }
  read_cmp(e, &ent, c, x.row_off[100] - 5003, 10007, &x); /* the slab edge */
  read_cmp(e, &ent, NULL, size - 4097, 4097, &x);         /* the tail */
  view_cursor_free(e, c);
  /* A reader in sequence into the second band lets the first go; a late
   * read of the first (as the kernel's read-ahead delivers them) is read
   * from its units, without making the band again. */
  c = view_cursor_new();
  for (uint64_t off = BAND_TEXT - (1u << 20); off < BAND_TEXT + (1u << 20);
       off += 131072)
    read_cmp(e, &ent, c, off, 131072, &x);
  uint64_t made = engine_fills(e, ELEVEL_ROW);
  read_cmp(e, &ent, c, BAND_TEXT - (3u << 20) + 5, 131072, &x);
  ck_assert_uint_eq(engine_fills(e, ELEVEL_ROW), made);
  view_cursor_free(e, c);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  engine_free(e);
  expect_free(&x);
}
END_TEST

/* The banded slab, two readers at once, with workers decoding the next
 * units of each band (a 16 MiB cache: each unit fits the ahead budget),
 * show the same bytes; a chunk gone bad after its size was learned fails
 * the reads with EIO. */
START_TEST(band_two_readers) {
  grid2_write(&BANDED);
  struct expect x;
  expect_grid(&x, &BANDED);
  struct store *st;
  struct zerr serr = {0};
  ck_assert_int_eq(store_open_local(tmpdir, &st, &serr), 0);
  struct engine_config cfg = {16u << 20, 1u << 30, 1 << 20, 0, 0, 2, 0};
  struct engine *e;
  ck_assert_int_eq(engine_new(st, &cfg, &e, &serr), 0);
  pthread_t t[2];
  struct breader br = {e, &x};
  for (int i = 0; i < 2; i++)
    pthread_create(&t[i], NULL, breader_run, &br);
  for (int i = 0; i < 2; i++)
    pthread_join(t[i], NULL);
  ck_assert_uint_eq(memo_pinned(e->memo), 0);
  /* chunk 0.7 rewritten with garbage in place once its size is known */
  char path[512], junk[4096];
  snprintf(path, sizeof path, "%s/banded/0.7", tmpdir);
  FILE *f = fopen(path, "r+");
  ck_assert_ptr_nonnull(f);
  memset(junk, 0x5a, sizeof junk);
  ck_assert_uint_eq(fwrite(junk, 1, sizeof junk, f), sizeof junk);
  fclose(f);
  struct ns_entry ent;
  uint64_t size;
  view_open(e, "/banded/values.txt", &ent, &size);
  struct zerr err = {0};
  char buf[4096];
  struct view_cursor *c = view_cursor_new();
  ck_assert_int_eq(ns_read_view(e, &ent, 0, sizeof buf, buf, c, &err), -EIO);
  ck_assert_int_eq(
      ns_read_view(e, &ent, x.row_off[50] + 3, sizeof buf, buf, NULL, &err),
      -EIO);
  view_cursor_free(e, c);
  engine_free(e);
  expect_free(&x);
}
END_TEST

int main(void) {
  Suite *s = suite_create("scale");
  TCase *big = tcase_create("2-D at real size");
  tcase_set_tags(big, "big"); /* CK_EXCLUDE_TAGS=big leaves it out */
  tcase_add_unchecked_fixture(big, big_setup, big_teardown);
  tcase_set_timeout(big, 600);
  tcase_add_test(big, wide_head_default_cache);
  tcase_add_test(big, wide_lazy_sizes);
  tcase_add_test(big, wide_sequential_default);
  tcase_add_test(big, wide_sequential_64k);
  tcase_add_test(big, wide_random16_64k);
  tcase_add_test(big, floats_sequential_1m);
  tcase_add_test(big, floats_sequential_64k);
  tcase_add_test(big, floats_random16_default);
  tcase_add_test(big, floats_random16_1m);
  tcase_add_test(big, floats_random16_64k);
  tcase_add_test(big, floats_one_read_1m);
  suite_add_tcase(s, big);
  TCase *mem = tcase_create("memory");
  tcase_add_checked_fixture(mem, setup, teardown);
  tcase_set_timeout(mem, 300);
  tcase_add_test(mem, layout_is_compact);
  tcase_add_test(mem, never_written_1e18_one_chunk);
  tcase_add_test(mem, never_written_1e18_many_chunks);
  tcase_add_test(mem, never_written_1e7_chunk_1);
  tcase_add_test(mem, sparse_reads);
  tcase_add_test(mem, big_string_fill);
  tcase_add_test(mem, rows_with_missing_chunks);
  tcase_add_test(mem, stop_interrupts_layout);
  tcase_add_test(mem, fifo_chunk_fails_fast);
  tcase_add_test(mem, small_random16_64k);
  suite_add_tcase(s, mem);
  /* 3.5 s of CPU, some 60 s under ThreadSanitizer: 600 s leaves room for
   * a loaded machine (CI runs two TSan tests on two cores). */
  TCase *two = tcase_create("bands, two readers");
  tcase_add_checked_fixture(two, setup, teardown);
  tcase_set_timeout(two, 600);
  tcase_add_test(two, band_two_readers);
  suite_add_tcase(s, two);
  TCase *bands = tcase_create("bands at real size");
  tcase_set_tags(bands, "big");
  tcase_add_checked_fixture(bands, setup, teardown);
  tcase_set_timeout(bands, 300);
  tcase_add_test(bands, band_reads);
  suite_add_tcase(s, bands);
  return testutil_run(s);
}
