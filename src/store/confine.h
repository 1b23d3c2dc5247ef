/* confine.h - the allowed roots of manifest and reference targets.
 *
 * A chunk manifest or kerchunk reference names files anywhere on the
 * machine; zarrfs serves only those under a root the user allowed: the
 * directory holding the manifest or reference file, the store root, and
 * each `-o target_root=DIR`. Roots are resolved (realpath) when added.
 * confine_open opens the target first and then checks the real path of the
 * open descriptor, so `..`, symbolic links and a link swapped after a check
 * cannot reach outside. The roots are immutable once the mount starts
 * serving: shared by FUSE threads without locks.
 *
 * Opened targets are cached: a kerchunk reference names the same target
 * file for every chunk, and the checks above cost four system calls.
 * confine_open remembers the source of each path it opened (bounded: 256
 * paths, direct-mapped by a hash of the path, a new path evicts the one in
 * its slot; behind a lock of its own, taken before the pool's) and, while
 * the pool still holds that source's descriptor open, answers the same
 * path (and io_stats) with another reference to it, with no system call.
 * The rule: a path that passed the checks keeps naming the inode it named
 * then for as long as the pool keeps that descriptor. That inode was under
 * a root when checked, so a link swapped afterwards changes nothing it
 * reaches; once the pool closes the descriptor, the next confine_open
 * checks the path again from scratch, and every reopen by the pool goes
 * through the same checks and must find the same dev/ino ("file replaced
 * while mounted", EIO). A file replaced meanwhile is thus seen as it was
 * (its old inode, through the held descriptor) until then. io_stats opens
 * count real open() calls only, so a cached open counts none.
 *
 * Targets are read through one descriptor pool (src/io/fdpool.h) owned by the
 * confine: a byte source of a target holds no descriptor between reads, so
 * cached chunks of a manifest cost none. Sources may outlive the confine
 * (the pool and the roots stay until the last one is gone); the io_stats
 * given to confine_open must outlive their reads. */
#ifndef ZARRFS_CONFINE_H
#define ZARRFS_CONFINE_H

#include "../io/bytesrc.h"
#include "../util/err.h"

struct confine;

/* An empty set of roots. *out is owned by the caller (confine_free). */
int confine_new(struct confine **out, struct zerr *err);
/* Allow dir and everything below it; dir must exist (resolved here) and
 * be a directory; a file:///DIR URL names DIR. Adding a root twice is
 * harmless. */
int confine_add_root(struct confine *c, const char *dir, struct zerr *err);
/* Open the local file at absolute path for ranged reads (counters in
 * stats, may be NULL). Opened O_PATH first, so it never blocks. A path
 * outside every root is -EACCES with a reason naming the resolved path and
 * saying to add `-o target_root=DIR`; a missing file -ENOENT; not a regular
 * file -EIO ("not a regular file (FIFO)"); a full descriptor table
 * -EMFILE/-ENFILE after one retry (transient codes are kept). A NULL c
 * allows nothing (-EACCES). */
int confine_open(const struct confine *c, const char *path,
                 struct io_stats *stats, struct bytesrc **out,
                 struct zerr *err);
/* ---- remote targets (http://, https://, s3://) ----
 * Allowed by default, read through r (borrowed; set before serving). A
 * link-local or cloud-metadata address (169.254.0.0/16, fe80::/10) is
 * refused by the transport unless the URL lies under a prefix the user
 * named (-o target_root=URL). -o remote_targets=no forbids them all (for
 * untrusted reference files). A reference or manifest that was itself
 * fetched from a URL may read no local file at all. */
struct remote;
void confine_set_remote(struct confine *c, struct remote *r);
/* The remote context set above (borrowed), or NULL. */
struct remote *confine_remote(const struct confine *c);
/* Allow url prefix explicitly (link-local addresses included). */
int confine_add_url_prefix(struct confine *c, const char *prefix,
                           struct zerr *err);
/* -o remote_targets=no. */
void confine_forbid_remote(struct confine *c);
/* The reference is remote: refuse every local target. */
void confine_set_remote_reference(struct confine *c);
/* May url be read? 0 and *allow_link_local (1 when under a named
 * prefix), or -EACCES with the reason. */
int confine_check_url(const struct confine *c, const char *url,
                      int *allow_link_local, struct zerr *err);
/* Does url lie under prefix (a path boundary; scheme and host
 * case-insensitive)? For the check above and the tests. */
int confine_url_matches(const char *prefix, const char *url);
/* Open bytes [off, off+len) of url (len UINT64_MAX: the whole object)
 * after confine_check_url. Its redirects are checked the same way: a
 * target at a link-local address needs a named prefix (url.h). */
int confine_open_url(const struct confine *c, const char *url, uint64_t off,
                     uint64_t len, struct io_stats *stats, struct bytesrc **out,
                     struct zerr *err);
/* A new scope (url.h; the caller's reference) of the URL prefixes named:
 * confined, redirects may lead only under them (and under within, when
 * not NULL). For sources that must stay under a named prefix (Icechunk
 * virtual chunks). */
struct url_scope;
int confine_scope(const struct confine *c, int confined, const char *within,
                  struct url_scope **out, struct zerr *err);

/* ---- S3 endpoints a repository may name ----
 * An Icechunk virtual chunk container may name its own S3 endpoint_url;
 * the user's credentials go there only when the user allowed it with -o
 * container_endpoint=URL (or configured that endpoint). */
int confine_allow_endpoint(struct confine *c, const char *url,
                           struct zerr *err);
/* Did the user allow endpoint url (same origin and path)? c may be NULL. */
int confine_endpoint_allowed(const struct confine *c, const char *url);

/* The cache of opened targets: paths held now (at most 256) and opens it
 * answered. For tests and logs. */
void confine_cache_stats(const struct confine *c, size_t *entries,
                         uint64_t *hits);

/* Free; NULL-safe. Byte sources it opened stay readable. */
void confine_free(struct confine *c);

#endif
