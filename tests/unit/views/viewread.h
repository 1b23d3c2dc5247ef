/* viewread.h - reading a view of an engine through the namespace and
 * comparing it with the text it must show: whole in steps through one
 * cursor, and at pseudo-random offsets without one (the tests of units
 * read in windows: check_window.c, check_bigraw.c). */
#ifndef ZARRFS_TESTS_VIEWREAD_H
#define ZARRFS_TESTS_VIEWREAD_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../../../fs/engine/engine.h"
#include "../../../fs/namespace/namespace.h"
#include "../../../fs/views/view.h"

/* Read view `path` whole in pieces of step bytes through one cursor and
 * compare with want. */
static inline void vr_read_seq(struct engine *e, const char *path,
                               size_t step, const char *want, size_t wlen) {
  struct ns_entry ent;
  struct zerr err = {0};
  uint64_t size;
  ck_assert_msg(ns_resolve(e, path, &ent, &err) == 0, "%s", err.msg);
  ck_assert_msg(ns_size(e, &ent, &size, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(size, wlen);
  char *buf = malloc(step);
  struct view_cursor *c = view_cursor_new();
  for (uint64_t off = 0; off < size;) {
    long n = ns_read_view(e, &ent, off, step, buf, c, &err);
    ck_assert_msg(n > 0, "%s at %llu: %s", path, (unsigned long long)off,
                  err.msg);
    ck_assert_msg(!memcmp(buf, want + off, (size_t)n), "%s at %llu differs",
                  path, (unsigned long long)off);
    off += (uint64_t)n;
  }
  view_cursor_free(e, c);
  free(buf);
}

/* 40 reads of 1 to maxlen bytes at pseudo-random offsets (the first: the
 * last 200 bytes), each without a cursor, compared with want. */
static inline void vr_read_random(struct engine *e, const char *path,
                                  const char *want, size_t wlen,
                                  size_t maxlen) {
  struct ns_entry ent;
  struct zerr err = {0};
  ck_assert_int_eq(ns_resolve(e, path, &ent, &err), 0);
  char *buf = malloc(maxlen);
  ck_assert(buf);
  uint64_t x = 12345;
  for (int i = 0; i < 40; i++) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t off = i == 0 ? wlen - 200 : (x >> 20) % wlen;
    size_t len = 1 + (size_t)((x >> 8) % maxlen);
    size_t exp = wlen - off < len ? (size_t)(wlen - off) : len;
    long n = ns_read_view(e, &ent, off, len, buf, NULL, &err);
    ck_assert_msg(n == (long)exp, "at %llu: %ld of %zu (%s)",
                  (unsigned long long)off, n, exp, err.msg);
    ck_assert_msg(!memcmp(buf, want + off, exp), "at %llu differs",
                  (unsigned long long)off);
  }
  free(buf);
}

#endif
