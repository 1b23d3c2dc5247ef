/* check_rect.c - arrays on rectangular and rectilinear chunk grids through
 * the engine: chunks of different shapes (each decoded at its own shape),
 * values.txt in C order across irregular edges, chunk views of each
 * stored chunk, missing chunks as the fill value, a rectilinear chunk that
 * overshoots the array, shards of different shapes holding inner chunks,
 * a transpose codec and zarrs.vlen strings at each chunk's own shape, and
 * reads in pieces of every size. Chunks and the expected text are made
 * here from the listed edges alone (a linear scan, not src/zarr/meta.c). */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../teststore.h"
#include "../testutil.h"

#define RC_MAX_DIMS 3
#define RC_MAX_EDGES 10

static char tmpdir[64];

/* One array: its grid as JSON and the same grid as explicit lengths. */
struct rcase {
  const char *path; /* array directory */
  const char *grid; /* chunk_grid JSON */
  int nd;
  uint64_t shape[RC_MAX_DIMS];
  int nedge[RC_MAX_DIMS];                   /* chunks along each dimension */
  uint64_t edge[RC_MAX_DIMS][RC_MAX_EDGES]; /* their decoded lengths */
  int f64;                                  /* float64, else int32 */
  int str;             /* string (zarrs.vlen, plain index) with fill "" */
  int transpose;       /* 2-D: a transpose [1,0] codec, chunks in F order */
  const char *fill;    /* fill_value JSON (and text) */
  uint64_t missing[4]; /* linear chunks not stored */
  int nmissing;
  uint64_t inner[RC_MAX_DIMS]; /* sharded: inner chunk shape; 0: not */
};

/* Where chunk c starts along dimension d (a scan of the lengths). */
static uint64_t rc_start(const struct rcase *k, int d, int c) {
  uint64_t s = 0;
  for (int i = 0; i < c; i++)
    s += k->edge[d][i];
  return s;
}

/* The chunk holding coordinate x along d. */
static int rc_chunk_of(const struct rcase *k, int d, uint64_t x) {
  int c = 0;
  while (rc_start(k, d, c + 1) <= x)
    c++;
  return c;
}

/* Is chunk (linear index lin) stored? */
static int rc_stored(const struct rcase *k, uint64_t lin) {
  for (int i = 0; i < k->nmissing; i++)
    if (k->missing[i] == lin)
      return 0;
  return 1;
}

/* Linear chunk index of chunk coordinates. */
static uint64_t rc_lin(const struct rcase *k, const int *c) {
  uint64_t lin = 0;
  for (int d = 0; d < k->nd; d++)
    lin = lin * (uint64_t)k->nedge[d] + (uint64_t)c[d];
  return lin;
}

/* The text of element at coordinates x (its value: from the element's
 * linear index), into buf. */
static void rc_elem_text(const struct rcase *k, const uint64_t *x, char *buf) {
  uint64_t lin = 0;
  for (int d = 0; d < k->nd; d++)
    lin = lin * k->shape[d] + x[d];
  if (k->str)
    snprintf(buf, 32, "s%llu%s", (unsigned long long)lin,
             lin % 4 ? "" : "\xc3\xa9"); /* some multi-byte */
  else if (k->f64)
    snprintf(buf, 32, "%g", (double)lin * 1.5 - 2.25); /* exact, short */
  else
    snprintf(buf, 32, "%lld", (long long)lin * 3 - 7);
}

/* Element bytes of the value at x (little-endian host assumed by CI). */
static size_t rc_elem_bytes(const struct rcase *k, const uint64_t *x,
                            int inside, uint8_t *out) {
  uint64_t lin = 0;
  for (int d = 0; d < k->nd; d++)
    lin = lin * k->shape[d] + x[d];
  if (k->str) {
    if (!inside)
      return (size_t)snprintf((char *)out, 32, "zz");
    rc_elem_text(k, x, (char *)out);
    return strlen((char *)out);
  }
  if (k->f64) {
    double v = inside ? (double)lin * 1.5 - 2.25 : 12345.0;
    memcpy(out, &v, 8);
    return 8;
  }
  int32_t v = inside ? (int32_t)lin * 3 - 7 : 99999;
  memcpy(out, &v, 4);
  return 4;
}

/* Walk the box lo + [0, n) in C order, calling fn with coordinates. */
static void rc_walk(int nd, const uint64_t *lo, const uint64_t *n,
                    void (*fn)(void *, const uint64_t *), void *ud) {
  uint64_t total = 1, x[RC_MAX_DIMS];
  for (int d = 0; d < nd; d++)
    total *= n[d];
  for (uint64_t i = 0; i < total; i++) {
    uint64_t r = i;
    for (int d = nd - 1; d >= 0; d--) {
      x[d] = lo[d] + r % n[d];
      r /= n[d];
    }
    fn(ud, x);
  }
}

/* Text being built by a walk. */
struct rc_text {
  const struct rcase *k;
  char *p;
  size_t len, cap;
  int raw;        /* bytes instead of text */
  uint64_t *offs; /* raw strings: where each element ends, or NULL */
  size_t noffs;
};

/* Append the text (or bytes) of element x. */
static void rc_put(void *ud, const uint64_t *x) {
  struct rc_text *t = ud;
  char buf[32];
  size_t n;
  if (t->raw) {
    int inside = 1;
    for (int d = 0; d < t->k->nd; d++)
      inside &= x[d] < t->k->shape[d];
    n = rc_elem_bytes(t->k, x, inside, (uint8_t *)buf);
  } else {
    int c[RC_MAX_DIMS];
    for (int d = 0; d < t->k->nd; d++)
      c[d] = rc_chunk_of(t->k, d, x[d]);
    if (rc_stored(t->k, rc_lin(t->k, c)))
      rc_elem_text(t->k, x, buf);
    else
      snprintf(buf, sizeof buf, "%s", t->k->str ? "" : t->k->fill);
    n = strlen(buf);
    buf[n++] = '\n';
  }
  if (t->len + n + 1 > t->cap) {
    t->cap = 2 * (t->len + n + 1);
    t->p = realloc(t->p, t->cap);
    ck_assert_ptr_nonnull(t->p);
  }
  memcpy(t->p + t->len, buf, n);
  t->len += n;
  if (t->offs)
    t->offs[t->noffs++] = t->len;
  t->p[t->len] = '\0';
}

/* rc_put of a 2-D element whose coordinates come swapped. */
static void rc_put_swapped(void *ud, const uint64_t *x) {
  uint64_t y[2] = {x[1], x[0]};
  rc_put(ud, y);
}

/* Coordinates of linear chunk lin. */
static void rc_coords(const struct rcase *k, uint64_t lin, int *c) {
  for (int d = k->nd - 1; d >= 0; d--) {
    c[d] = (int)(lin % (uint64_t)k->nedge[d]);
    lin /= (uint64_t)k->nedge[d];
  }
}

/* Number of chunks. */
static uint64_t rc_nchunks(const struct rcase *k) {
  uint64_t n = 1;
  for (int d = 0; d < k->nd; d++)
    n *= (uint64_t)k->nedge[d];
  return n;
}

/* The store key of chunk c ("c/1/2"). */
static void rc_key(const struct rcase *k, const int *c, char *buf, size_t n) {
  size_t o = (size_t)snprintf(buf, n, "%s/c", k->path);
  for (int d = 0; d < k->nd; d++)
    o += (size_t)snprintf(buf + o, n - o, "/%d", c[d]);
}

/* One unsharded chunk: its decoded box, outside elements as junk. */
static void rc_write_chunk(const struct rcase *k, const int *c) {
  uint64_t lo[RC_MAX_DIMS], n[RC_MAX_DIMS];
  for (int d = 0; d < k->nd; d++) {
    lo[d] = rc_start(k, d, c[d]);
    n[d] = k->edge[d][c[d]];
  }
  struct rc_text t = {k, NULL, 0, 0, 1, NULL, 0};
  uint64_t total = 1;
  for (int d = 0; d < k->nd; d++)
    total *= n[d];
  if (k->str) { /* offsets[0] = 0, then where each element ends */
    t.offs = calloc(total + 1, sizeof *t.offs);
    ck_assert_ptr_nonnull(t.offs);
    t.noffs = 1;
  }
  if (k->transpose) { /* stored in F order: the last dimension outer */
    uint64_t tlo[2] = {lo[1], lo[0]}, tn[2] = {n[1], n[0]};
    rc_walk(2, tlo, tn, rc_put_swapped, &t);
  } else {
    rc_walk(k->nd, lo, n, rc_put, &t);
  }
  char key[256];
  rc_key(k, c, key, sizeof key);
  if (k->str) { /* zarrs.vlen: u64 index length, the index, the bytes */
    size_t ilen = 8 * (total + 1);
    uint8_t *b = malloc(8 + ilen + t.len + 1);
    ck_assert_ptr_nonnull(b);
    uint64_t L = ilen;
    memcpy(b, &L, 8); /* little-endian host */
    memcpy(b + 8, t.offs, ilen);
    memcpy(b + 8 + ilen, t.p, t.len);
    ts_put_file(tmpdir, key, b, 8 + ilen + t.len);
    free(b);
  } else {
    ts_put_file(tmpdir, key, t.p, t.len);
  }
  free(t.offs);
  free(t.p);
}

/* One shard: its inner chunks (the last one empty), then the index. */
static void rc_write_shard(const struct rcase *k, const int *c) {
  uint64_t lo[RC_MAX_DIMS], per[RC_MAX_DIMS], nin = 1;
  for (int d = 0; d < k->nd; d++) {
    lo[d] = rc_start(k, d, c[d]);
    per[d] = k->edge[d][c[d]] / k->inner[d];
    nin *= per[d];
  }
  struct rc_text t = {k, NULL, 0, 0, 1, NULL, 0};
  uint64_t *index = calloc(nin * 2, sizeof *index);
  ck_assert_ptr_nonnull(index);
  for (uint64_t i = 0; i < nin; i++) {
    uint64_t r = i, ilo[RC_MAX_DIMS];
    for (int d = k->nd - 1; d >= 0; d--) {
      ilo[d] = lo[d] + r % per[d] * k->inner[d];
      r /= per[d];
    }
    if (i == nin - 1 && nin > 1) {
      index[2 * i] = index[2 * i + 1] = UINT64_MAX; /* empty: fill */
      continue;
    }
    index[2 * i] = t.len;
    rc_walk(k->nd, ilo, k->inner, rc_put, &t);
    index[2 * i + 1] = t.len - index[2 * i];
  }
  t.p = realloc(t.p, t.len + nin * 16);
  ck_assert_ptr_nonnull(t.p);
  memcpy(t.p + t.len, index, nin * 16); /* little-endian host */
  char key[256];
  rc_key(k, c, key, sizeof key);
  ts_put_file(tmpdir, key, t.p, t.len + nin * 16);
  free(t.p);
  free(index);
}

/* zarr.json and the stored chunks of case k. */
static void rc_write(const struct rcase *k) {
  char meta[2048], rel[256], shape[128] = "[", codecs[1024];
  for (int d = 0; d < k->nd; d++)
    snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%llu",
             d ? "," : "", (unsigned long long)k->shape[d]);
  strcat(shape, "]");
  const char *bytes = "{\"name\":\"bytes\",\"configuration\":{\"endian\":"
                      "\"little\"}}";
  if (k->inner[0]) {
    char inner[64] = "[";
    for (int d = 0; d < k->nd; d++)
      snprintf(inner + strlen(inner), sizeof inner - strlen(inner), "%s%llu",
               d ? "," : "", (unsigned long long)k->inner[d]);
    strcat(inner, "]");
    snprintf(codecs, sizeof codecs,
             "[{\"name\":\"sharding_indexed\",\"configuration\":{"
             "\"chunk_shape\":%s,\"codecs\":[%s],\"index_codecs\":[%s],"
             "\"index_location\":\"end\"}}]",
             inner, bytes, bytes);
  } else if (k->transpose) {
    snprintf(codecs, sizeof codecs,
             "[{\"name\":\"transpose\",\"configuration\":{\"order\":[1,0]}},"
             "%s]",
             bytes);
  } else if (k->str) {
    snprintf(codecs, sizeof codecs,
             "[{\"name\":\"zarrs.vlen\",\"configuration\":{"
             "\"index_codecs\":[%s],\"data_codecs\":[{\"name\":\"bytes\"}],"
             "\"index_data_type\":\"uint64\",\"index_location\":"
             "\"start\"}}]",
             bytes);
  } else {
    snprintf(codecs, sizeof codecs, "[%s]", bytes);
  }
  snprintf(meta, sizeof meta,
           "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":%s,"
           "\"data_type\":\"%s\",\"chunk_grid\":%s,\"chunk_key_encoding\":"
           "{\"name\":\"default\"},\"fill_value\":%s,\"codecs\":%s}",
           shape,
           k->str   ? "string"
           : k->f64 ? "float64"
                    : "int32",
           k->grid, k->fill, codecs);
  snprintf(rel, sizeof rel, "%s/zarr.json", k->path);
  ts_put_file(tmpdir, rel, meta, strlen(meta));
  for (uint64_t lin = 0; lin < rc_nchunks(k); lin++) {
    int c[RC_MAX_DIMS];
    rc_coords(k, lin, c);
    if (!rc_stored(k, lin))
      continue;
    if (k->inner[0])
      rc_write_shard(k, c);
    else
      rc_write_chunk(k, c);
  }
}

/* Compare a view's text with want, read in pieces of several sizes. */
static void rc_expect(struct engine *e, const char *path, const char *want) {
  static const size_t steps[] = {1, 3, 7, 64, 1 << 20};
  /* byte-by-byte reads of small views only (sanitizer builds are slow) */
  size_t first = strlen(want) > 4096 ? 2 : 0;
  for (size_t i = first; i < sizeof steps / sizeof steps[0]; i++) {
    struct zerr err = {0};
    char *got = ts_view_text(e, path, steps[i], &err);
    ck_assert_msg(got != NULL, "%s: %s", path, err.msg);
    ck_assert_msg(!strcmp(got, want), "%s (step %zu):\n%s\nwant:\n%s", path,
                  steps[i], got, want);
    free(got);
  }
}

/* Mount-free checks of case k: values.txt, every stored chunk's view, and
 * no view for a missing chunk. */
static void rc_check(const struct rcase *k) {
  rc_write(k);
  struct engine *e = ts_open_engine(tmpdir);
  char path[320];
  uint64_t zero[RC_MAX_DIMS] = {0};
  struct rc_text t = {k, NULL, 0, 0, 0, NULL, 0};
  rc_walk(k->nd, zero, k->shape, rc_put, &t);
  snprintf(path, sizeof path, "/%s/values.txt", k->path);
  rc_expect(e, path, t.p ? t.p : "");
  free(t.p);
  for (uint64_t lin = 0; lin < rc_nchunks(k); lin++) {
    int c[RC_MAX_DIMS];
    uint64_t lo[RC_MAX_DIMS], n[RC_MAX_DIMS];
    rc_coords(k, lin, c);
    for (int d = 0; d < k->nd; d++) {
      lo[d] = rc_start(k, d, c[d]);
      n[d] = k->edge[d][c[d]];
      if (lo[d] + n[d] > k->shape[d])
        n[d] = k->shape[d] - lo[d];
    }
    char key[256];
    rc_key(k, c, key, sizeof key);
    snprintf(path, sizeof path, "/%s.txt", key);
    if (!rc_stored(k, lin)) {
      struct ns_entry ent;
      struct zerr err = {0};
      ck_assert_msg(ns_resolve(e, path, &ent, &err) == -ENOENT, "%s", path);
      continue;
    }
    struct rc_text ct = {k, NULL, 0, 0, 0, NULL, 0};
    rc_walk(k->nd, lo, n, rc_put, &ct);
    rc_expect(e, path, ct.p);
    free(ct.p);
  }
  engine_free(e);
}

/* Fresh temp store directory. */
static void setup(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/zarrfs-rect-XXXXXX");
  ck_assert(mkdtemp(tmpdir) != NULL);
  ts_put_file(tmpdir, "zarr.json",
              "{\"zarr_format\":3,\"node_type\":\"group\"}", 37);
}

/* Remove the temp store. */
static void teardown(void) {
  testutil_rmtree(tmpdir);
}

/* The unsharded cases. */
static const struct rcase CASES[] = {
    /* 2-D int32, both dimensions listed, two chunks missing */
    {.path = "a",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[[2,3],[3,1,3]]}}",
     .nd = 2,
     .shape = {5, 7},
     .nedge = {2, 3},
     .edge = {{2, 3}, {3, 1, 3}},
     .fill = "-1",
     .missing = {2, 4},
     .nmissing = 2},
    /* 2-D float64, the first dimension regular (an integer: a padded edge
     * chunk), the second listed */
    {.path = "g/f",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[4,[1,5,2]]}}",
     .nd = 2,
     .shape = {10, 8},
     .nedge = {3, 3},
     .edge = {{4, 4, 4}, {1, 5, 2}},
     .f64 = 1,
     .fill = "0.5",
     .missing = {0, 7},
     .nmissing = 2},
    /* 1-D rectilinear with runs and a last chunk that overshoots the
     * array (decoded at its declared length, shown only inside) */
    {.path = "r",
     .grid = "{\"name\":\"rectilinear\",\"configuration\":{\"kind\":"
             "\"inline\",\"chunk_shapes\":[[[2,3],1,[5,2]]]}}",
     .nd = 1,
     .shape = {10},
     .nedge = {5},
     .edge = {{2, 2, 2, 1, 5}},
     .fill = "42",
     .missing = {1},
     .nmissing = 1},
    /* zarrs' documented configuration ([[5,5,5,15,15,20,35],10] over
     * 100 x 100) */
    {.path = "zarrs_doc",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[[5,5,5,15,15,20,35],10]}}",
     .nd = 2,
     .shape = {100, 100},
     .nedge = {7, 10},
     .edge = {{5, 5, 5, 15, 15, 20, 35},
              {10, 10, 10, 10, 10, 10, 10, 10, 10, 10}},
     .fill = "-5",
     .missing = {0, 31, 69},
     .nmissing = 3},
    /* zarrs' rectangular_array_write_read example grid ([[1,2,3,2],4] over
     * 8 x 8) */
    {.path = "group/array",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[[1,2,3,2],4]}}",
     .nd = 2,
     .shape = {8, 8},
     .nedge = {4, 2},
     .edge = {{1, 2, 3, 2}, {4, 4}},
     .f64 = 1,
     .fill = "0.5",
     .missing = {3},
     .nmissing = 1},
    /* a transpose codec: each chunk transposed at its own shape */
    {.path = "tr",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[[1,4],[2,3]]}}",
     .nd = 2,
     .shape = {5, 5},
     .nedge = {2, 2},
     .edge = {{1, 4}, {2, 3}},
     .transpose = 1,
     .fill = "9",
     .missing = {2},
     .nmissing = 1},
    /* strings (zarrs.vlen with a plain index: reads that jump go
     * straight to the offsets they show), both dimensions listed */
    {.path = "s2",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[[2,3],[1,3]]}}",
     .nd = 2,
     .shape = {5, 4},
     .nedge = {2, 2},
     .edge = {{2, 3}, {1, 3}},
     .str = 1,
     .fill = "\"\"",
     .missing = {1},
     .nmissing = 1},
    /* strings on a rectilinear axis whose last chunk overshoots */
    {.path = "s1",
     .grid = "{\"name\":\"rectilinear\",\"configuration\":{\"kind\":"
             "\"inline\",\"chunk_shapes\":[[3,4]]}}",
     .nd = 1,
     .shape = {5},
     .nedge = {2},
     .edge = {{3, 4}},
     .str = 1,
     .fill = "\"\"",
     .nmissing = 0},
    /* 3-D: the middle dimension listed, the others regular */
    {.path = "t",
     .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
             "[2,[1,2,1],2]}}",
     .nd = 3,
     .shape = {3, 4, 3},
     .nedge = {2, 3, 2},
     .edge = {{2, 2}, {1, 2, 1}, {2, 2}},
     .fill = "0",
     .missing = {5},
     .nmissing = 1},
};

/* Case _i of CASES. */
START_TEST(listed_grid_case) { rc_check(&CASES[_i]); }
END_TEST

/* Shards of different shapes ([2,4] rows x 4) holding 2x2 inner chunks
 * (the last of each shard empty), one shard missing. */
START_TEST(rect_sharded) {
  struct rcase k = {
      .path = "s",
      .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
              "[[2,4,2],4]}}",
      .nd = 2,
      .shape = {8, 4},
      .nedge = {3, 1},
      .edge = {{2, 4, 2}, {4}},
      .fill = "-3",
      .missing = {2},
      .nmissing = 1,
      .inner = {2, 2},
  };
  rc_write(&k);
  struct engine *e = ts_open_engine(tmpdir);
  /* Expected: rows 0-1 shard 0 (inner (0,1) empty: cols 2-3 fill), rows
   * 2-5 shard 1 (inner (1,1) empty: rows 4-5 cols 2-3), rows 6-7 missing. */
  char want[1024] = "", line[32];
  for (uint64_t i = 0; i < 8; i++)
    for (uint64_t j = 0; j < 4; j++) {
      int fill = i >= 6 || (i < 2 && j >= 2) || (i >= 4 && j >= 2);
      if (fill)
        snprintf(line, sizeof line, "-3\n");
      else
        snprintf(line, sizeof line, "%lld\n", (long long)(i * 4 + j) * 3 - 7);
      strcat(want, line);
    }
  rc_expect(e, "/s/values.txt", want);
  /* Shard 1's view: rows 2-5 in C order. */
  char *p = want;
  p[0] = '\0';
  for (uint64_t i = 2; i < 6; i++)
    for (uint64_t j = 0; j < 4; j++) {
      if (i >= 4 && j >= 2)
        snprintf(line, sizeof line, "-3\n");
      else
        snprintf(line, sizeof line, "%lld\n", (long long)(i * 4 + j) * 3 - 7);
      strcat(want, line);
    }
  rc_expect(e, "/s/c/1/0.txt", want);
  engine_free(e);
}
END_TEST

/* A shard whose length along a listed dimension the inner chunk does not
 * divide: views refused with a reason, raw keys still served. */
START_TEST(rect_sharded_indivisible) {
  struct rcase k = {
      .path = "bad",
      .grid = "{\"name\":\"rectangular\",\"configuration\":{\"chunk_shape\":"
              "[[2,3]]}}",
      .nd = 1,
      .shape = {5},
      .nedge = {2},
      .edge = {{2, 3}},
      .fill = "0",
      .missing = {0, 1},
      .nmissing = 2,
      .inner = {2},
  };
  rc_write(&k);
  struct engine *e = ts_open_engine(tmpdir);
  struct zerr err = {0};
  char *t = ts_view_text(e, "/bad/values.txt", 4096, &err);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(err.msg, "inner chunk shape does not divide"), "%s",
                err.msg);
  engine_free(e);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rect");
  TCase *tc = tcase_create("grids");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_loop_test(tc, listed_grid_case, 0,
                      (int)(sizeof CASES / sizeof CASES[0]));
  tcase_add_test(tc, rect_sharded);
  tcase_add_test(tc, rect_sharded_indivisible);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
