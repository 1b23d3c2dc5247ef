/* check_flatbuf.c - unit tests of the verified flatbuffers reader
 * (src/json/flatbuf.c) on buffers built by hand: every kind of field of a
 * good buffer, then hostile buffers (offsets out of range, misaligned,
 * vtables too short, tables too large, huge vector and string lengths, a
 * string without its NUL, a self-pointing offset, chains deeper than the
 * limit), each refused with a reason and no read outside the buffer;
 * then a FlexBuffers map, good and damaged. */
#include <stdlib.h>
#include <string.h>

#include "../../../src/json/flatbuf.h"
#include "../testutil.h"

/* A forward writer of little-endian bytes, for building test buffers. */
struct fbw {
  uint8_t b[4096];
  uint32_t n;
};

/* Pad with zeros to a multiple of a; the new end. */
static uint32_t w_align(struct fbw *w, unsigned a) {
  while (w->n % a)
    w->b[w->n++] = 0;
  return w->n;
}

/* Append v in n little-endian bytes; its position. */
static uint32_t w_put(struct fbw *w, uint64_t v, unsigned n) {
  uint32_t at = w->n;
  for (unsigned i = 0; i < n; i++)
    w->b[w->n++] = (uint8_t)(v >> (8 * i));
  return at;
}

/* Overwrite 4 bytes at pos. */
static void w_set32(struct fbw *w, uint32_t pos, uint32_t v) {
  for (unsigned i = 0; i < 4; i++)
    w->b[pos + i] = (uint8_t)(v >> (8 * i));
}

/* Point the uoffset at pos to target. */
static void w_uoff(struct fbw *w, uint32_t pos, uint32_t target) {
  w_set32(w, pos, target - pos);
}

/* A vtable of n slots (offsets given) for a table of tlen bytes; its
 * position. */
static uint32_t w_vtable(struct fbw *w, uint16_t tlen, unsigned n,
                         const uint16_t *slots) {
  uint32_t at = w_align(w, 2);
  w_put(w, 4 + 2 * n, 2);
  w_put(w, tlen, 2);
  for (unsigned i = 0; i < n; i++)
    w_put(w, slots[i], 2);
  return at;
}

/* Positions of the good buffer's pieces. */
struct good {
  uint32_t root, vt, t, str, vec, nested, tvec, svec;
};

/* Table T with fields: 0 u32 7, 1 string "hello", 2 [u32] {1,2,3}, 3
 * table N (field 0 u32 99), 4/5 union (type 2, value N), 6 u64, 7 struct
 * of 12 bytes, 8 [table] {N, N}, 9 [string] {"a", "bc"}. */
static void build_good(struct fbw *w, struct good *g) {
  memset(w, 0, sizeof *w);
  g->root = w_put(w, 0, 4);
  w_put(w, 0, 4); /* file identifier slot */
  uint16_t slots[10] = {4, 8, 12, 16, 20, 24, 32, 40, 52, 56};
  g->vt = w_vtable(w, 60, 10, slots);
  w_align(w, 8);
  g->t = w->n;
  w_put(w, g->t - g->vt, 4);
  w_put(w, 7, 4);              /* +4 f0 */
  w_put(w, 0, 4);              /* +8 f1 string */
  w_put(w, 0, 4);              /* +12 f2 vector */
  w_put(w, 0, 4);              /* +16 f3 table */
  w_put(w, 2, 4);              /* +20 f4 union type (1 byte) + pad */
  w_put(w, 0, 4);              /* +24 f5 union value */
  w_put(w, 0, 4);              /* +28 pad */
  w_put(w, 1ull << 40, 8);     /* +32 f6 u64 */
  for (int i = 0; i < 12; i++) /* +40 f7 struct */
    w_put(w, (uint64_t)i + 1, 1);
  w_put(w, 0, 4); /* +52 f8 */
  w_put(w, 0, 4); /* +56 f9 */
  w_align(w, 4);
  g->str = w_put(w, 5, 4);
  memcpy(w->b + w->n, "hello", 6);
  w->n += 6;
  w_align(w, 4);
  g->vec = w_put(w, 3, 4);
  w_put(w, 1, 4);
  w_put(w, 2, 4);
  w_put(w, 3, 4);
  g->tvec = w_put(w, 2, 4); /* uoffsets point forward: before N */
  uint32_t e0 = w_put(w, 0, 4), e1 = w_put(w, 0, 4);
  uint16_t nslot[1] = {4};
  uint32_t nvt = w_vtable(w, 8, 1, nslot);
  w_align(w, 4);
  g->nested = w_put(w, 0, 4);
  w_set32(w, g->nested, g->nested - nvt);
  w_put(w, 99, 4);
  w_uoff(w, e0, g->nested);
  w_uoff(w, e1, g->nested);
  g->svec = w_put(w, 2, 4);
  uint32_t s0 = w_put(w, 0, 4), s1 = w_put(w, 0, 4);
  w_align(w, 4);
  uint32_t a = w_put(w, 1, 4);
  memcpy(w->b + w->n, "a\0\0\0", 4);
  w->n += 4;
  uint32_t bc = w_put(w, 2, 4);
  memcpy(w->b + w->n, "bc\0\0", 4);
  w->n += 4;
  w_uoff(w, s0, a);
  w_uoff(w, s1, bc);
  w_set32(w, g->root, g->t);
  w_uoff(w, g->t + 8, g->str);
  w_uoff(w, g->t + 12, g->vec);
  w_uoff(w, g->t + 16, g->nested);
  w_uoff(w, g->t + 24, g->nested);
  w_uoff(w, g->t + 52, g->tvec);
  w_uoff(w, g->t + 56, g->svec);
}

START_TEST(good_buffer) {
  struct fbw w;
  struct good g;
  build_good(&w, &g);
  struct zerr err = {0};
  struct fb_table t, n;
  ck_assert_int_eq(fb_root(w.b, w.n, &t, &err), 0);
  uint64_t v;
  ck_assert_int_eq(fb_scalar(&t, 0, 4, 0, &v, &err), 0);
  ck_assert_uint_eq(v, 7);
  ck_assert_int_eq(fb_scalar(&t, 6, 8, 0, &v, &err), 0);
  ck_assert_uint_eq(v, 1ull << 40);
  ck_assert_int_eq(fb_scalar(&t, 30, 4, 1234, &v, &err), 0); /* absent */
  ck_assert_uint_eq(v, 1234);
  ck_assert(fb_has(&t, 9) && !fb_has(&t, 10) && !fb_has(&t, 1000));
  const char *s;
  uint32_t sn;
  ck_assert_int_eq(fb_string(&t, 1, &s, &sn, &err), 1);
  ck_assert_uint_eq(sn, 5);
  ck_assert_str_eq(s, "hello");
  ck_assert_int_eq(fb_string(&t, 11, &s, &sn, &err), 0);
  ck_assert_ptr_null(s);
  struct fb_vec vec;
  ck_assert_int_eq(fb_vector(&t, 2, 4, 4, &vec, &err), 1);
  ck_assert_uint_eq(vec.n, 3);
  ck_assert_uint_eq(fb_le32(fb_vec_at(&vec, 2)), 3);
  ck_assert_ptr_null(fb_vec_at(&vec, 3));
  ck_assert_int_eq(fb_vector(&t, 12, 4, 4, &vec, &err), 0);
  ck_assert_uint_eq(vec.n, 0);
  ck_assert_int_eq(fb_table(&t, 3, &n, &err), 1);
  ck_assert_int_eq(n.depth, 1);
  ck_assert_int_eq(fb_scalar(&n, 0, 4, 0, &v, &err), 0);
  ck_assert_uint_eq(v, 99);
  uint8_t ty;
  ck_assert_int_eq(fb_union(&t, 4, &ty, &n, &err), 1);
  ck_assert_uint_eq(ty, 2);
  ck_assert_int_eq(fb_scalar(&n, 0, 4, 0, &v, &err), 0);
  ck_assert_uint_eq(v, 99);
  const uint8_t *st;
  ck_assert_int_eq(fb_struct(&t, 7, 12, 1, &st, &err), 1);
  ck_assert_uint_eq(st[0], 1);
  ck_assert_uint_eq(st[11], 12);
  ck_assert_int_eq(fb_vector(&t, 8, 4, 4, &vec, &err), 1);
  ck_assert_int_eq(fb_vec_table(&vec, 1, &n, &err), 0);
  ck_assert_int_eq(fb_scalar(&n, 0, 4, 0, &v, &err), 0);
  ck_assert_uint_eq(v, 99);
  ck_assert_int_lt(fb_vec_table(&vec, 2, &n, &err), 0);
  ck_assert_int_eq(fb_vector(&t, 9, 4, 4, &vec, &err), 1);
  ck_assert_int_eq(fb_vec_string(&vec, 1, &s, &sn, &err), 0);
  ck_assert_str_eq(s, "bc");
  /* A field read as the wrong (larger) size runs past the table. */
  ck_assert_int_lt(fb_struct(&t, 9, 12, 1, &st, &err), 0);
}
END_TEST

/* Expect the accessor chain on w (after a corruption) to fail with a
 * message containing want. */
static void expect_bad(struct fbw *w, int which, const char *want) {
  struct zerr err = {0};
  struct fb_table t, n;
  struct fb_vec v;
  const char *s;
  uint32_t sn;
  uint64_t x;
  int rc = fb_root(w->b, w->n, &t, &err);
  if (rc == 0) {
    switch (which) {
    case 0:
      break;
    case 1:
      rc = fb_string(&t, 1, &s, &sn, &err);
      break;
    case 2:
      rc = fb_vector(&t, 2, 4, 4, &v, &err);
      break;
    case 3:
      rc = fb_table(&t, 3, &n, &err);
      break;
    case 4:
      rc = fb_scalar(&t, 6, 8, 0, &x, &err);
      break;
    case 5:
      rc = fb_vector(&t, 9, 4, 4, &v, &err);
      if (rc >= 0)
        rc = fb_vec_string(&v, 1, &s, &sn, &err);
      break;
    case 6:
      rc = fb_scalar(&t, 0, 4, 0, &x, &err);
      break;
    }
  }
  ck_assert_msg(rc < 0, "case %d (%s) was accepted", which, want);
  ck_assert_int_eq(err.code, EIO);
  ck_assert_msg(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

START_TEST(hostile_buffers) {
  struct fbw w;
  struct good g;
  /* The root. */
  build_good(&w, &g);
  w.n = 6;
  expect_bad(&w, 0, "only 6 bytes");
  build_good(&w, &g);
  w_set32(&w, 0, w.n + 4);
  expect_bad(&w, 0, "out of bounds");
  build_good(&w, &g);
  w_set32(&w, 0, g.t + 2);
  expect_bad(&w, 0, "misaligned");
  /* The vtable: far away, too short, odd, running past the end. */
  build_good(&w, &g);
  w_set32(&w, g.t, 0x80000000u);
  expect_bad(&w, 0, "vtable");
  build_good(&w, &g);
  w_set32(&w, g.t, (uint32_t) - (int32_t)(w.n + 64));
  expect_bad(&w, 0, "vtable");
  build_good(&w, &g);
  w.b[g.vt] = 2;
  w.b[g.vt + 1] = 0;
  expect_bad(&w, 0, "bad length 2");
  build_good(&w, &g);
  w.b[g.vt] = 7;
  expect_bad(&w, 0, "bad length 7");
  build_good(&w, &g);
  w.b[g.vt] = 0xfe;
  w.b[g.vt + 1] = 0xff;
  expect_bad(&w, 0, "bad length");
  /* The table's size. */
  build_good(&w, &g);
  w.b[g.vt + 2] = 0xff;
  w.b[g.vt + 3] = 0xff;
  expect_bad(&w, 0, "bad size");
  /* A field slot past the table's inline size. */
  build_good(&w, &g);
  w.b[g.vt + 4] = 200;
  expect_bad(&w, 6, "outside the table");
  /* A misaligned 8-byte field. */
  build_good(&w, &g);
  w.b[g.vt + 4 + 12] = 36;
  expect_bad(&w, 4, "misaligned");
  /* A string: offset past the end, huge length, no NUL. */
  build_good(&w, &g);
  w_set32(&w, g.t + 8, 0xfffffff0u);
  expect_bad(&w, 1, "past the end");
  build_good(&w, &g);
  w_set32(&w, g.str, 0xffffffffu);
  expect_bad(&w, 1, "past the end");
  build_good(&w, &g);
  w.b[g.str + 4 + 5] = 'x';
  expect_bad(&w, 1, "not terminated");
  build_good(&w, &g);
  w_set32(&w, g.str, w.n - g.str - 4); /* ends exactly at the end */
  expect_bad(&w, 1, "not terminated");
  /* A vector: huge length, misaligned body. */
  build_good(&w, &g);
  w_set32(&w, g.vec, 0x40000000u);
  expect_bad(&w, 2, "past the end");
  build_good(&w, &g);
  w_set32(&w, g.t + 12, g.vec + 2 - (g.t + 12));
  expect_bad(&w, 2, "misaligned");
  /* A string inside a vector of strings, pointing outside. */
  build_good(&w, &g);
  w_set32(&w, g.svec + 8, 0x7ffffff0u);
  expect_bad(&w, 5, "past the end");
  /* A table offset of 0: the field points at itself. */
  build_good(&w, &g);
  w_set32(&w, g.t + 16, 0);
  expect_bad(&w, 3, "vtable");
  /* A union with a type and no value. */
  build_good(&w, &g);
  w.b[g.vt + 4 + 10] = 0;
  w.b[g.vt + 4 + 11] = 0;
  struct zerr err = {0};
  struct fb_table t, n;
  uint8_t ty;
  ck_assert_int_eq(fb_root(w.b, w.n, &t, &err), 0);
  ck_assert_int_lt(fb_union(&t, 4, &ty, &n, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.msg, "no value"));
}
END_TEST

START_TEST(depth_limit) {
  /* A chain of tables, each field 0 pointing to the next: the reader
   * counts levels and stops at FB_MAX_DEPTH, whatever the chain. */
  static struct fbw w;
  memset(&w, 0, sizeof w);
  w_put(&w, 0, 4);
  w_put(&w, 0, 4);
  uint16_t slot[1] = {4};
  uint32_t vt = w_vtable(&w, 8, 1, slot);
  w_align(&w, 4);
  uint32_t first = w.n, prev = 0;
  for (int i = 0; i < FB_MAX_DEPTH + 10; i++) {
    uint32_t t = w_put(&w, 0, 4);
    w_set32(&w, t, t - vt);
    uint32_t f = w_put(&w, 0, 4);
    if (prev)
      w_uoff(&w, prev, t);
    prev = f;
  }
  w_uoff(&w, prev, first); /* the last one: uoffsets only go forward */
  w_set32(&w, 0, first);
  struct zerr err = {0};
  struct fb_table t, n;
  ck_assert_int_eq(fb_root(w.b, w.n, &t, &err), 0);
  int levels = 0, rc;
  while ((rc = fb_table(&t, 0, &n, &err)) == 1) {
    t = n;
    levels++;
  }
  ck_assert_int_lt(rc, 0);
  ck_assert_int_eq(levels, FB_MAX_DEPTH);
  ck_assert_ptr_nonnull(strstr(err.msg, "deeper"));
}
END_TEST

START_TEST(random_corruption) {
  /* Every single-byte change of the good buffer: the accessors either
   * answer or fail, never read outside (run under the sanitizers). */
  struct fbw w;
  struct good g;
  build_good(&w, &g);
  uint32_t n = w.n;
  for (uint32_t i = 0; i < n; i++) {
    for (int v = 0; v < 256; v += 51) {
      build_good(&w, &g);
      w.b[i] = (uint8_t)v;
      uint8_t *copy = malloc(n); /* exact size, so ASan sees overreads */
      memcpy(copy, w.b, n);
      struct zerr err = {0};
      struct fb_table t, x;
      struct fb_vec vec;
      const char *s;
      uint32_t sn;
      uint64_t u;
      uint8_t ty;
      const uint8_t *st;
      if (fb_root(copy, n, &t, &err) == 0) {
        for (unsigned id = 0; id < 12; id++) {
          fb_scalar(&t, id, 4, 0, &u, &err);
          fb_scalar(&t, id, 8, 0, &u, &err);
          fb_struct(&t, id, 12, 1, &st, &err);
          fb_string(&t, id, &s, &sn, &err);
          if (fb_vector(&t, id, 4, 4, &vec, &err) == 1)
            for (uint32_t k = 0; k < vec.n && k < 4; k++) {
              fb_vec_table(&vec, k, &x, &err);
              fb_vec_string(&vec, k, &s, &sn, &err);
            }
          if (fb_table(&t, id, &x, &err) == 1)
            fb_scalar(&x, 0, 4, 0, &u, &err);
          fb_union(&t, id, &ty, &x, &err);
        }
      }
      free(copy);
    }
  }
}
END_TEST

/* {"a": "xy", "b": 7} as FlexBuffers, widths of 1 byte. */
static const uint8_t flex_map[] = {
    'a',    0,      'b', 0, /* keys */
    2,      'x',    'y', 0, /* string of 2 at 5 */
    2,      9,      8,      /* keys vector at 9: offsets back to the keys */
    2,      1,      2,      /* map: keys offset, keys width, size */
    9,      7,              /* values at 14: the string (offset), 7 */
    5 << 2, 1 << 2,         /* their types: string, int */
    4,      9 << 2, 1};     /* root: offset to the map, type map, width 1 */

START_TEST(flexbuffers) {
  struct zerr err = {0};
  struct fb_flex root, v;
  const char *s;
  uint32_t n;
  ck_assert_int_eq(fb_flex_root(flex_map, sizeof flex_map, &root, &err), 0);
  ck_assert_int_eq(fb_flex_type(&root), FB_FLEX_MAP);
  ck_assert_int_eq(fb_flex_size(&root, &n, &err), 0);
  ck_assert_uint_eq(n, 2);
  ck_assert_int_eq(fb_flex_key(&root, 1, &s, &n, &err), 0);
  ck_assert_str_eq(s, "b");
  ck_assert_int_eq(fb_flex_get(&root, "a", &v, &err), 1);
  ck_assert_int_eq(fb_flex_string(&v, &s, &n, &err), 1);
  ck_assert_str_eq(s, "xy");
  ck_assert_int_eq(fb_flex_get(&root, "b", &v, &err), 1);
  ck_assert_int_eq(fb_flex_type(&v), FB_FLEX_INT);
  ck_assert_int_eq(fb_flex_string(&v, &s, &n, &err), 0);
  ck_assert_int_eq(fb_flex_get(&root, "c", &v, &err), 0);
  ck_assert_int_eq(fb_flex_get(&v, "a", &v, &err), 0); /* not a map */
  /* Hostile: each byte changed to each of a few values; answers only. */
  uint8_t b[sizeof flex_map];
  for (size_t i = 0; i < sizeof b; i++)
    for (int x = 0; x < 256; x += 17) {
      memcpy(b, flex_map, sizeof b);
      b[i] = (uint8_t)x;
      uint8_t *copy = malloc(sizeof b);
      memcpy(copy, b, sizeof b);
      if (fb_flex_root(copy, sizeof b, &root, &err) == 0 &&
          fb_flex_size(&root, &n, &err) == 0) {
        for (uint32_t k = 0; k < n && k < 4; k++) {
          fb_flex_key(&root, k, &s, &n, &err);
          if (fb_flex_at(&root, k, &v, &err) == 0)
            fb_flex_string(&v, &s, &n, &err);
        }
        fb_flex_get(&root, "a", &v, &err);
      }
      free(copy);
    }
  memcpy(b, flex_map, sizeof b);
  b[14] = 200; /* the string's offset points before the buffer */
  ck_assert_int_eq(fb_flex_root(b, sizeof b, &root, &err), 0);
  ck_assert_int_eq(fb_flex_get(&root, "a", &v, &err), 1);
  ck_assert_int_eq(fb_flex_string(&v, &s, &n, &err), -EIO);
  memcpy(b, flex_map, sizeof b);
  b[13] = 250; /* a map size past the end */
  ck_assert_int_eq(fb_flex_root(b, sizeof b, &root, &err), 0);
  ck_assert_int_eq(fb_flex_size(&root, &n, &err), -EIO);
  memcpy(b, flex_map, sizeof b);
  b[7] = 'z'; /* the string loses its NUL */
  ck_assert_int_eq(fb_flex_root(b, sizeof b, &root, &err), 0);
  ck_assert_int_eq(fb_flex_get(&root, "a", &v, &err), 1);
  ck_assert_int_eq(fb_flex_string(&v, &s, &n, &err), -EIO);
  ck_assert_int_eq(fb_flex_root(b, 2, &root, &err), -EIO);
}
END_TEST

int main(void) {
  Suite *s = suite_create("flatbuf");
  TCase *tc = tcase_create("flatbuf");
  tcase_add_test(tc, good_buffer);
  tcase_add_test(tc, hostile_buffers);
  tcase_add_test(tc, depth_limit);
  tcase_add_test(tc, random_corruption);
  tcase_add_test(tc, flexbuffers);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
