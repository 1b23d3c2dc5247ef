/* fuse_ops.h - the FUSE operation table of zarrfs: the only code (with
 * src/main.c) that sees libfuse. Each operation resolves the path through
 * the namespace, calls the engine, and maps the result to an errno in one
 * place (zfs_errno). The engine is the fuse private_data. */
#ifndef ZARRFS_FUSE_OPS_H
#define ZARRFS_FUSE_OPS_H

#define FUSE_USE_VERSION 312
#include <fuse.h>

/* Timeouts for the kernel's attribute and entry caches, in seconds. The
 * store is immutable while mounted, so they can be long. */
struct zfs_fuse_config {
  double attr_timeout;
};

/* The operations; private_data must be a struct zfs_fuse_ctx. */
const struct fuse_operations *zfs_operations(void);

/* What fuse_ops needs at run time (owned by main). */
struct zfs_fuse_ctx {
  struct engine *engine;
  struct zfs_fuse_config cfg;
  long mount_time;
};

/* Map an internal negative errno to the one FUSE returns (negative). */
int zfs_errno(int rc);

#endif
