/* mountpoint.h - checks of MOUNTPOINT before mounting, and the kernel's
 * read-ahead of the mount once made. FUSE-free: reads
 * /proc/self/mountinfo and writes /sys/class/bdi. */
#ifndef ZARRFS_MOUNTPOINT_H
#define ZARRFS_MOUNTPOINT_H

/* Refuse MOUNTPOINT mnt, with one line "zarrfs: ..." on stderr and -1,
 * when it does not exist, is not a directory, is already the mount point
 * of a FUSE file system (mounting again would stack a second mount), or is
 * a stale FUSE mount or inside one (its daemon died); the line names the
 * fusermount3 command that cleans up. A mount point of another type (an
 * empty tmpfs) is fine; so is a system without mountinfo. A directory
 * with entries is refused too (the mount would hide them) unless
 * allow_nonempty. 0 when fine. */
int mountpoint_check(const char *mnt, int allow_nonempty);

/* Set the kernel's read-ahead of the FUSE mount at mnt to bytes (rounded
 * up to KiB), so that sequential reads through the page cache reach the
 * daemon as requests of up to that size: the FUSE handshake can lower the
 * kernel's read-ahead but never raise it. Needs root; a failure changes
 * nothing else and is logged at debug level. */
void mountpoint_set_readahead(const char *mnt, unsigned long long bytes);

#endif
