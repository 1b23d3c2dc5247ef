/* zfs_errno.h - the one place where internal results become the errno a
 * reader of the mount sees. FUSE-free (fs/fuse_ops.c replies with it), so
 * the mapping is unit-tested without a mount (tests/unit/views/check_errno.c). */
#ifndef ZARRFS_ZFS_ERRNO_H
#define ZARRFS_ZFS_ERRNO_H

/* Map an internal result (a negative errno) to the one FUSE returns
 * (negative). Kept as they are: ENOENT, ENOTDIR, EISDIR, ENOMEM, EROFS,
 * EACCES, ENAMETOOLONG, EINTR, ENFILE. EMFILE is ENFILE (the daemon's descriptor
 * table, not the reader's); EINVAL is ENOENT (an invalid key names
 * nothing); everything else (corrupt, unsupported, too large, timed out)
 * is EIO. */
int zfs_errno(int rc);

#endif
