/* check_bytesrc.c - byte sources, capped buffers, local store keys. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../../../src/util/buf.h"
#include "../../../src/util/zmath.h"
#include "../../../src/io/bytesrc.h"
#include "../../../src/store/store.h"
#include "../testutil.h"

/* Write a temp file with known content; returns its path (static). */
static const char *temp_file(const char *content, size_t len) {
  static char path[64];
  snprintf(path, sizeof path, "/tmp/zarrfs-bytesrc-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, content, len), (ssize_t)len);
  close(fd);
  return path;
}

START_TEST(file_ranges_and_counters) {
  const char *p = temp_file("0123456789", 10);
  struct io_stats st = {0};
  struct bytesrc *s;
  struct zerr err = {0};
  ck_assert_int_eq(bytesrc_open_file(p, &st, &s, &err), 0);
  ck_assert_uint_eq(s->size, 10);
  char buf[16] = {0};
  ck_assert_int_eq(bytesrc_read_range(s, 3, 4, buf, &err), 0);
  ck_assert_str_eq(buf, "3456");
  ck_assert_uint_eq(atomic_load(&st.bytes_read), 4);
  /* Past the end is an error, not a short read. */
  ck_assert_int_eq(bytesrc_read_range(s, 8, 4, buf, &err), -EIO);
  ck_assert(strstr(err.msg, "past the end") != NULL);
  struct bytesrc *w;
  ck_assert_int_eq(bytesrc_sub(s, 2, 5, &w, &err), 0);
  memset(buf, 0, sizeof buf);
  ck_assert_int_eq(bytesrc_read_range(w, 1, 3, buf, &err), 0);
  ck_assert_str_eq(buf, "345");
  ck_assert_int_eq(bytesrc_sub(s, 8, 5, &w, &err) < 0, 1);
  struct bytesrc *m;
  ck_assert_int_eq(bytesrc_load(s, 100, &m, &err), 0);
  ck_assert(m->mem != NULL);
  ck_assert_int_eq(memcmp(m->mem, "0123456789", 10), 0);
  bytesrc_unref(m);
  ck_assert_int_eq(bytesrc_load(s, 5, &m, &err) == -EFBIG, 1);
  bytesrc_unref(w);
  bytesrc_unref(s);
  unlink(p);
}
END_TEST

START_TEST(missing_file_is_enoent) {
  struct bytesrc *s;
  struct zerr err = {0};
  ck_assert_int_eq(bytesrc_open_file("/nonexistent/zarrfs", NULL, &s, &err),
                   -ENOENT);
}
END_TEST

START_TEST(memory_sources) {
  char *p = malloc(3);
  memcpy(p, "abc", 3);
  struct bytesrc *s = bytesrc_from_mem(p, 3);
  struct bytesrc *w;
  ck_assert_int_eq(bytesrc_sub(s, 1, 2, &w, NULL), 0);
  ck_assert(w->mem == s->mem + 1);
  bytesrc_unref(s); /* the window keeps the parent alive */
  char buf[3] = {0};
  ck_assert_int_eq(bytesrc_read_range(w, 0, 2, buf, NULL), 0);
  ck_assert_str_eq(buf, "bc");
  size_t wl;
  ck_assert_ptr_null(bytesrc_take_mem(w, &wl)); /* a window */
  bytesrc_unref(w);
  /* Taking the buffer: only from the sole holder of an owned memory
   * source, which is left empty. */
  char *q = malloc(4);
  memcpy(q, "wxyz", 4);
  struct bytesrc *o = bytesrc_from_mem(q, 4), *st = bytesrc_from_static(q, 4);
  size_t tl = 0;
  ck_assert_ptr_null(bytesrc_take_mem(st, &tl)); /* not owned */
  bytesrc_ref(o);
  ck_assert_ptr_null(bytesrc_take_mem(o, &tl)); /* shared */
  ck_assert_uint_eq(o->size, 4);
  bytesrc_unref(o);
  bytesrc_unref(st);
  ck_assert_ptr_eq(bytesrc_take_mem(o, &tl), q);
  ck_assert_uint_eq(tl, 4);
  ck_assert_uint_eq(o->size, 0);
  ck_assert_ptr_null(bytesrc_take_mem(o, &tl)); /* nothing left */
  bytesrc_unref(o);
  ck_assert(!memcmp(q, "wxyz", 4)); /* still ours */
  free(q);
  struct bytesrc *e = bytesrc_from_mem(NULL, 0);
  ck_assert_uint_eq(e->size, 0);
  bytesrc_unref(e);
  bytesrc_unref(NULL);
}
END_TEST

/* Does the mapping holding address a carry the huge-page advice ("hg" in
 * its VmFlags, /proc/self/smaps)? */
static int advised_huge(const void *a) {
  FILE *f = fopen("/proc/self/smaps", "r");
  ck_assert_ptr_nonnull(f);
  char line[512];
  int in = 0, hg = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') &&
        line[0] != 'V')
      in = (uintptr_t)a >= lo && (uintptr_t)a < hi;
    else if (in && !strncmp(line, "VmFlags:", 8))
      hg = strstr(line, " hg") != NULL;
  }
  fclose(f);
  return hg;
}

/* A buffer of megabytes grown in a zbuf asks for huge pages (a hint the
 * kernel may refuse: checked where it has transparent huge pages); a
 * small one does not. */
START_TEST(big_buffers_advise_huge_pages) {
  struct zerr err = {0};
  struct zbuf big, small;
  zbuf_init(&big, (size_t)64 << 20);
  zbuf_init(&small, (size_t)64 << 20);
  ck_assert_int_eq(zbuf_reserve(&big, (size_t)8 << 20, &err), 0);
  ck_assert_int_eq(zbuf_reserve(&small, (size_t)64 << 10, &err), 0);
  /* an address inside the 2 MiB-aligned interior of the big one */
  uintptr_t mid = ((uintptr_t)big.data + ((uintptr_t)4 << 20)) &
                  ~(((uintptr_t)2 << 20) - 1);
  if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0)
    ck_assert(advised_huge((const void *)mid));
  ck_assert(!advised_huge(small.data));
  memset(big.data, 7, (size_t)8 << 20); /* usable as ever */
  ck_assert_uint_eq(big.data[(8 << 20) - 1], 7);
  zbuf_free(&big);
  zbuf_free(&small);
}
END_TEST

START_TEST(capped_buffer) {
  struct zbuf b;
  zbuf_init(&b, 10);
  ck_assert_int_eq(zbuf_append(&b, "12345", 5, NULL), 0);
  ck_assert_int_eq(zbuf_append(&b, "123456", 6, NULL), -EFBIG);
  ck_assert_int_eq(zbuf_append(&b, "12345", 5, NULL), 0);
  size_t n;
  uint8_t *p = zbuf_steal(&b, &n);
  ck_assert_uint_eq(n, 10);
  free(p);
  zbuf_free(&b);
  uint64_t r;
  ck_assert_int_eq(zmul_u64(1ull << 40, 1ull << 30, &r), -EOVERFLOW);
  ck_assert_int_eq(zadd_u64(UINT64_MAX, 1, &r), -EOVERFLOW);
}
END_TEST

START_TEST(key_validation) {
  ck_assert_int_eq(zkey_valid("a/c/0/1"), 0);
  ck_assert_int_eq(zkey_valid("zarr.json"), 0);
  const char *bad[] = {"",     "/etc/passwd", "a/../b", "..",
                       "a//b", "a/./b",       "a/",     "."};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(zkey_valid(bad[i]) == -EINVAL, "accepted '%s'", bad[i]);
}
END_TEST

/* Count children seen by store_list. */
static int count_cb(void *ud, const char *name, enum store_entry_type t,
                    uint64_t size, int64_t mtime) {
  (void)mtime;
  (void)name, (void)t, (void)size;
  (*(int *)ud)++;
  return 0;
}

START_TEST(local_store) {
  char dir[] = "/tmp/zarrfs-store-XXXXXX";
  ck_assert(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/zarr.json", dir);
  FILE *f = fopen(path, "w");
  fputs("{}", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/sub", dir);
  mkdir(path, 0755);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  enum store_entry_type t;
  uint64_t size;
  ck_assert_int_eq(store_stat(s, "zarr.json", &t, &size, &err), 0);
  ck_assert_int_eq(t, STORE_FILE);
  ck_assert_uint_eq(size, 2);
  ck_assert_int_eq(store_stat(s, "sub", &t, &size, &err), 0);
  ck_assert_int_eq(t, STORE_DIR);
  ck_assert_int_eq(store_stat(s, "nope", &t, &size, &err), -ENOENT);
  ck_assert_int_eq(store_stat(s, "../etc", &t, &size, &err), -EINVAL);
  int n = 0;
  ck_assert_int_eq(store_list(s, "", count_cb, &n, &err), 0);
  ck_assert_int_eq(n, 2);
  uint8_t *text;
  size_t len;
  ck_assert_int_eq(store_read_all(s, "zarr.json", 100, &text, &len, &err), 0);
  ck_assert_str_eq((char *)text, "{}");
  free(text);
  ck_assert_int_eq(store_read_all(s, "zarr.json", 1, &text, &len, &err),
                   -EFBIG);
  store_free(s);
  snprintf(path, sizeof path, "rm -rf %s", dir);
  ck_assert_int_eq(system(path), 0);
  ck_assert_int_eq(store_open_local("/nonexistent/x", &s, &err), -ENOENT);
}
END_TEST

/* Remember listed names ("name!" for STORE_OTHER). */
static int names_cb(void *ud, const char *name, enum store_entry_type t,
                    uint64_t size, int64_t mtime) {
  (void)mtime;
  (void)size;
  strcat(ud, name);
  strcat(ud, t == STORE_OTHER ? "! " : " ");
  return 0;
}

START_TEST(symlinks_stay_inside) {
  char dir[] = "/tmp/zarrfs-links-XXXXXX";
  ck_assert(mkdtemp(dir) != NULL);
  char path[256];
  snprintf(path, sizeof path, "%s/inside", dir);
  FILE *f = fopen(path, "w");
  fputs("ok", f);
  fclose(f);
  snprintf(path, sizeof path, "%s/good", dir);
  ck_assert_int_eq(symlink("inside", path), 0);
  snprintf(path, sizeof path, "%s/escape", dir);
  ck_assert_int_eq(symlink("/etc/passwd", path), 0);
  snprintf(path, sizeof path, "%s/dotdot", dir);
  ck_assert_int_eq(symlink("../../etc", path), 0);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct bytesrc *b;
  ck_assert_int_eq(store_get(s, "good", &b, &err), 0);
  ck_assert_uint_eq(b->size, 2);
  bytesrc_unref(b);
  ck_assert_int_eq(store_get(s, "escape", &b, &err), -EACCES);
  ck_assert(strstr(err.msg, "leaves the store") != NULL);
  enum store_entry_type t;
  uint64_t size;
  ck_assert_int_eq(store_stat(s, "dotdot/passwd", &t, &size, &err), -EACCES);
  char names[256] = "";
  ck_assert_int_eq(store_list(s, "", names_cb, names, &err), 0);
  /* Links that leave the store exist but cannot be served: listed as
   * STORE_OTHER (never mistaken for absent keys), not as files. */
  ck_assert_msg(strstr(names, "escape! ") && strstr(names, "dotdot! ") &&
                    strstr(names, "good ") && strstr(names, "inside "),
                "%s", names);
  store_free(s);
  snprintf(path, sizeof path, "rm -rf %s", dir);
  ck_assert_int_eq(system(path), 0);
}
END_TEST

START_TEST(transient_codes) {
  static const int yes[] = {EMFILE, ENFILE, ENOMEM, EAGAIN, EINTR, ETIMEDOUT};
  static const int no[] = {0, EIO, ENOENT, EACCES, EINVAL, EFBIG, EISDIR};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    ck_assert_msg(zerr_is_transient(yes[i]), "%d", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    ck_assert_msg(!zerr_is_transient(no[i]), "%d", no[i]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("bytesrc");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, file_ranges_and_counters);
  tcase_add_test(tc, missing_file_is_enoent);
  tcase_add_test(tc, memory_sources);
  tcase_add_test(tc, capped_buffer);
  tcase_add_test(tc, key_validation);
  tcase_add_test(tc, local_store);
  tcase_add_test(tc, symlinks_stay_inside);
  tcase_add_test(tc, transient_codes);
  tcase_add_test(tc, big_buffers_advise_huge_pages);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
