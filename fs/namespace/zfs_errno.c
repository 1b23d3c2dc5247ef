/* zfs_errno.c - internal results to the errno a reader sees (see
 * zfs_errno.h). */
#include "zfs_errno.h"

#include <errno.h>

/* The one place where internal errors become FUSE errors. Data problems of
 * every kind (corrupt, unsupported, too large) are EIO to the reader;
 * running out of descriptors is ENFILE (the daemon's table, not the
 * reader's), a shutdown in progress EINTR; a path of the wrong kind
 * (opening a directory, listing a file) keeps EISDIR or ENOTDIR. */
int zfs_errno(int rc) {
  switch (rc) {
  case -ENOENT:
  case -ENOTDIR:
  case -EISDIR:
  case -ENOMEM:
  case -EROFS:
  case -EACCES:
  case -ENAMETOOLONG:
  case -EINTR:
  case -ENFILE:
    return rc;
  case -EMFILE:
    return -ENFILE;
  case -EINVAL:
    return -ENOENT; /* an invalid key names nothing */
  default:
    return -EIO;
  }
}
