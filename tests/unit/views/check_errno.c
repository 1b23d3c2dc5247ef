/* check_errno.c - unit tests of fs/zfs_errno: every internal result a
 * reader can meet maps to the errno docs/reference.md promises (data errors
 * EIO, out of memory ENOMEM, descriptors ENFILE, an invalid key ENOENT, a
 * path of the wrong kind EISDIR or ENOTDIR). A table of cases. */
#include <errno.h>

#include "../../../fs/namespace/zfs_errno.h"
#include "../testutil.h"

/* One internal result and what the reader must see. */
struct errno_case {
  int rc, want;
};

static const struct errno_case cases[] = {
    /* passed through as they are */
    {-ENOENT, -ENOENT},
    {-ENOTDIR, -ENOTDIR},
    {-EISDIR, -EISDIR},
    {-ENOMEM, -ENOMEM},
    {-EROFS, -EROFS},
    {-EACCES, -EACCES},
    {-ENAMETOOLONG, -ENAMETOOLONG},
    {-EINTR, -EINTR},
    {-ENFILE, -ENFILE},
    /* the daemon's descriptor table, not the reader's */
    {-EMFILE, -ENFILE},
    /* an invalid key names nothing */
    {-EINVAL, -ENOENT},
    /* data errors and everything else: EIO */
    {-EIO, -EIO},
    {-EFBIG, -EIO},
    {-EOVERFLOW, -EIO},
    {-ENOTSUP, -EIO},
    {-ERANGE, -EIO},
    {-EDEADLK, -EIO},
    {-ETIMEDOUT, -EIO},
    {-EAGAIN, -EIO},
    {-ECONNRESET, -EIO},
    {-EBADMSG, -EIO},
    {-EPERM, -EIO},
    {-9999, -EIO}, /* not an errno at all */
};

START_TEST(maps_each_case) {
  const struct errno_case *c = &cases[_i];
  ck_assert_msg(zfs_errno(c->rc) == c->want, "zfs_errno(%d) = %d, want %d",
                c->rc, zfs_errno(c->rc), c->want);
}
END_TEST

/* Whatever comes in, what goes out is a negative errno FUSE can send,
 * and mapping twice changes nothing. */
START_TEST(always_negative_and_stable) {
  for (int e = 0; e <= 200; e++) {
    int m = zfs_errno(-e);
    ck_assert_int_lt(m, 0);
    ck_assert_int_eq(zfs_errno(m), m);
  }
  ck_assert_int_eq(zfs_errno(0), -EIO); /* success is never mapped */
}
END_TEST

int main(void) {
  Suite *s = suite_create("errno");
  TCase *tc = tcase_create("zfs_errno");
  tcase_add_loop_test(tc, maps_each_case, 0,
                      (int)(sizeof cases / sizeof *cases));
  tcase_add_test(tc, always_negative_and_stable);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
