/* fuse_ops.h - the FUSE operation table of zarrfs: the only code (with
 * fs/main.c) that sees libfuse. It uses the low-level API: the kernel's
 * inode numbers map to store paths in a table of our own (struct
 * zfs_inodes), so that listing a million names costs one pass and a few
 * hundred replies, and every inode is an ordinary allocation. Each
 * operation resolves the path through the namespace, calls the engine, and
 * maps the result to an errno in one place (fs/namespace/zfs_errno.c). The
 * session's userdata is a struct zfs_fuse_ctx. */
#ifndef ZARRFS_FUSE_OPS_H
#define ZARRFS_FUSE_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdint.h>

/* Timeouts for the kernel's attribute and entry caches, in seconds (the
 * store is immutable while mounted, so they can be long), and the kernel
 * read-ahead asked for in the FUSE handshake. */
struct zfs_fuse_config {
  double attr_timeout;
  unsigned max_readahead; /* bytes; the kernel takes the smaller of this and
                             its own (main raises that first: see
                             -o kernel_readahead); 0 keeps the kernel's */
  int xattrs;             /* -o xattr: user.zarr.* extended attributes on
                             array and group directories; off, getxattr
                             answers ENOSYS once and the kernel stops
                             asking (ls -l then costs no request per file
                             for security.selinux and the ACLs) */
  unsigned fmask, dmask;  /* -o umask, fmask, dmask: permission bits taken
                             from every file (0444) and directory (0555) */
  uint64_t size_wait_ns;  /* -o size_wait: how long a lookup or stat waits
                             for a view's size (ns_size_within); one not
                             known by then shows 0, cached for no time */
};

struct zfs_inodes;
struct engine;

/* What fuse_ops needs at run time (owned by main). */
struct zfs_fuse_ctx {
  struct engine *engine;
  struct zfs_fuse_config cfg;
  long mount_time;
  uid_t uid; /* the owner every file shows (once: not a syscall per stat) */
  gid_t gid;
  struct zfs_inodes *inodes; /* zfs_inodes_new; freed by main after the
                                session */
  /* What statfs shows of a local store: its bytes and files, from one
   * bounded walk by the first statfs (the fields below are written by
   * that request before usage_state leaves 3, read after). */
  int usage_state; /* 0 not walked, 3 walking, 1 known, 2 unknown
                      (atomic) */
  uint64_t usage_bytes, usage_files;
};

/* The operations; the session's userdata must be a struct zfs_fuse_ctx. */
const struct fuse_lowlevel_ops *zfs_operations(void);

/* The inode table: the root (FUSE_ROOT_ID, the store's root) and every
 * path the kernel holds (looked up, or listed with its attributes by
 * readdirplus) until it forgets it. A path's inode number is a hash of
 * it, the same on every mount of the store (and in readdir's d_ino). *out is
 * owned by the caller (zfs_inodes_free). 0 or -ENOMEM. */
int zfs_inodes_new(struct zfs_inodes **out);
/* Free the table, every inode, and every file or directory still open
 * (the kernel sends no release for what is open when the session ends;
 * e is the engine their cursors belong to, still alive). Only after the
 * session: no request may run. NULL-safe. */
void zfs_inodes_free(struct zfs_inodes *t, struct engine *e);

#endif
