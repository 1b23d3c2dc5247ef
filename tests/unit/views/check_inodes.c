/* check_inodes.c - the inode table: a path's number is its stable hash,
 * found back by number and by path while looked up, counted per lookup,
 * freed by the last forget and given the same number again; many paths at
 * once keep distinct numbers; open handles are freed with the table. */
#include <stdint.h>
#include <stdio.h>

#include "../../../fs/namespace/inodes.h"
#include "../testutil.h"

/* Path i (static storage of the caller's buffer). */
static const char *path_of(char *buf, size_t cap, int i) {
  snprintf(buf, cap, "d/%d.txt", i);
  return buf;
}

START_TEST(ref_get_forget) {
  struct zfs_inodes *t;
  ck_assert_int_eq(inodes_new(&t), 0);
  struct zfs_inode *root = inodes_get(t, INODES_ROOT);
  ck_assert_ptr_nonnull(root);
  ck_assert_uint_eq(root->len, 0);
  ck_assert_uint_eq(inodes_ref(t, "", 0), INODES_ROOT);

  const char *p = "a/b/c";
  uint64_t ino = inodes_ref(t, p, strlen(p));
  ck_assert_uint_eq(ino, inodes_stable_ino(p, strlen(p)));
  ck_assert_uint_ne(ino, INODES_ROOT);
  ck_assert_uint_ne(ino, INODES_UNKNOWN);
  ck_assert_uint_eq(inodes_ref(t, p, strlen(p)), ino); /* a second lookup */
  struct zfs_inode *in = inodes_get(t, ino);
  ck_assert_ptr_nonnull(in);
  ck_assert_str_eq(in->path, p);
  ck_assert_uint_eq(in->nlookup, 2);
  inodes_forget(t, ino, 1);
  ck_assert_ptr_nonnull(inodes_get(t, ino));
  inodes_forget(t, ino, 1); /* the last: freed */
  ck_assert_ptr_null(inodes_get(t, ino));
  ck_assert_uint_eq(inodes_ref(t, p, strlen(p)), ino); /* the same again */
  inodes_forget(t, ino, 5);                            /* more than held */
  ck_assert_ptr_null(inodes_get(t, ino));
  inodes_forget(t, ino, 1); /* a number no longer held: nothing */
  inodes_forget(t, INODES_ROOT, 1);
  ck_assert_ptr_eq(inodes_get(t, INODES_ROOT), root);
  inodes_free(t, NULL, NULL);
  inodes_free(NULL, NULL, NULL);
}
END_TEST

START_TEST(many_paths) {
  enum { N = 200000 };
  struct zfs_inodes *t;
  ck_assert_int_eq(inodes_new(&t), 0);
  uint64_t *ino = malloc(N * sizeof *ino);
  ck_assert_ptr_nonnull(ino);
  char buf[64];
  for (int i = 0; i < N; i++) {
    const char *p = path_of(buf, sizeof buf, i);
    ino[i] = inodes_ref(t, p, strlen(p));
    ck_assert_uint_eq(ino[i], inodes_stable_ino(p, strlen(p)));
  }
  for (int i = 0; i < N; i++) { /* each found back, by number and by path */
    struct zfs_inode *in = inodes_get(t, ino[i]);
    ck_assert_ptr_nonnull(in);
    ck_assert_str_eq(in->path, path_of(buf, sizeof buf, i));
    ck_assert_uint_eq(inodes_ref(t, in->path, in->len), ino[i]);
  }
  for (int i = 0; i < N; i += 2) /* half forgotten (two lookups each) */
    inodes_forget(t, ino[i], 2);
  for (int i = 0; i < N; i++)
    ck_assert((inodes_get(t, ino[i]) != NULL) == (i % 2 == 1));
  free(ino);
  inodes_free(t, NULL, NULL); /* the rest freed with the table */
}
END_TEST

/* inodes_free's callback: count the handles freed. */
static void count_free(void *ctx, struct zfs_handle *h) {
  (*(int *)ctx)++;
  free(h);
}

START_TEST(handles_freed_with_table) {
  struct zfs_inodes *t;
  ck_assert_int_eq(inodes_new(&t), 0);
  struct zfs_handle *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
  ck_assert(a && b);
  inodes_handle_add(t, a, 1);
  inodes_handle_add(t, b, 0);
  inodes_handle_del(t, a); /* released: the table does not free it */
  int freed = 0;
  inodes_free(t, count_free, &freed);
  ck_assert_int_eq(freed, 1);
  free(a);
}
END_TEST

int main(void) {
  Suite *s = suite_create("inodes");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, ref_get_forget);
  tcase_add_test(tc, many_paths);
  tcase_add_test(tc, handles_freed_with_table);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
