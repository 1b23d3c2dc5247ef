/* source.h - SOURCE, from the command line to an open store: a local
 * check before anything starts, the remote context, the roots references
 * may read, and the store itself. FUSE-free. Every refusal is one line
 * "zarrfs: ..." on stderr and a return of -1, as the README describes. */
#ifndef ZARRFS_SOURCE_H
#define ZARRFS_SOURCE_H

#include "cli.h"
#include "../net/remote.h"
#include "../store/store.h"

struct confine;

/* Refuse a local SOURCE that does not exist, cannot be read, or is a
 * directory with no zarr.json, .zgroup or .zarray at its root (a regular
 * file is a reference file, checked when opened). A URL is checked when
 * its store opens. 0 when fine. */
int source_check(const char *source);

/* The remote context of cfg's remote and S3 options (S3 settings also from
 * the environment and ~/.aws). *out is owned by the caller (remote_free). */
int source_remote_new(const struct cli_config *cfg, struct remote **out);

/* Open cfg->source as a store: a URL ending in .json is a remote kerchunk
 * reference file, another URL a remote store (refused unless its root holds
 * Zarr metadata), a regular file a local reference file, a directory a
 * local store; stores are wrapped for VirtualiZarr manifests. The roots
 * references may read (*confine, owned by the caller, set even when the
 * store fails: confine_free) are the reference file's directory or the
 * store root, and every -o target_root; remote (borrowed) serves remote
 * reads. Both must outlive the store, which is owned by the caller
 * (store_free, or handed to the engine). */
int source_open(const struct cli_config *cfg, struct remote *remote,
                struct confine **confine, struct store **out);

#endif
