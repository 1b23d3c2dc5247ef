/* fuse_ops.h - the FUSE operation table of zarrfs: the only code (with
 * fs/main.c) that sees libfuse. It uses the low-level API: the kernel's
 * inode numbers map to store paths in a table of our own (struct
 * zfs_inodes), so that listing a million names costs one pass and a few
 * hundred replies, and every inode is an ordinary allocation. Each
 * operation resolves the path through the namespace, calls the engine, and
 * maps the result to an errno in one place (fs/namespace/zfs_errno.c). The
 * session's userdata is a struct zfs_fuse_ctx (fuse_ctx.h, with what the
 * operations share). */
#ifndef ZARRFS_FUSE_OPS_H
#define ZARRFS_FUSE_OPS_H

#include "fuse_ctx.h"

/* The operations; the session's userdata must be a struct zfs_fuse_ctx. */
const struct fuse_lowlevel_ops *zfs_operations(void);

#endif
