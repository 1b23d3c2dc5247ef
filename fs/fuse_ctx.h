/* fuse_ctx.h - what the FUSE glue's operations (fs/fuse_ops.c) share:
 * the mount's context (struct zfs_fuse_ctx, the session's userdata), the
 * inode table's life, the open files and directories, and the plumbing
 * of a request: error replies (counted), the attributes stat shows, error
 * logging, and abandoning a request when the kernel interrupts it. Like
 * fuse_ops.h it sees libfuse; only fs/ 's top includes it. Nothing here
 * calls an operation (tests/calls.sh): fuse_ops.c calls down into it. */
#ifndef ZARRFS_FUSE_CTX_H
#define ZARRFS_FUSE_CTX_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <sys/stat.h>

#include "../src/util/err.h"
#include "namespace/inodes.h"
#include "namespace/namespace.h"

struct cancel;
struct zfs_inodes;
struct engine;

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

/* An open file: its entry, and for raw files the open byte source, for
 * views the reader's cursor (what it read last stays decoded), for a text
 * made whole (ns_text_whole: info.txt, /.zarrfs/stats, the ref logs) the
 * text made at open, which every read of this open serves. */
struct zfs_file {
  struct zfs_handle h; /* first: the open list */
  struct ns_entry ent;
  struct bytesrc *raw;     /* owned reference; NULL for views */
  struct view_cursor *cur; /* owned; views only (may be NULL) */
  char *text;              /* owned; a text made whole, else NULL */
  size_t text_len;
  int direct; /* opened with direct I/O: a short read is not the end */
};

/* An open directory: its listing, made by the first readdir and read by
 * position after. No lock: the kernel sends one readdir at a time per open
 * directory (getdents holds the file's position lock until the reply is
 * in), and releasedir only after the last one. Nothing touches it after a
 * reply unless it holds a reference (learning ahead, which only reads the
 * listing): the reply may be the moment it is released (so replies are
 * built in buffers of their own). */
struct zfs_dir {
  struct zfs_handle h; /* first: the open list */
  struct ns_dir *list;
  atomic_int refs; /* the open directory's, and each learning ahead's */
};

/* Free an open file or directory (unlinked already). */
void fuse_ctx_handle_free(struct engine *e, struct zfs_handle *h);

/* The mount context of a request. */
struct zfs_fuse_ctx *fuse_ctx_of(fuse_req_t req);
/* Reply with errno errnum (positive), counted in the mount's statistics. */
void fuse_ctx_reply_err(fuse_req_t req, int errnum);
/* Reply with an internal error (a negative errno, mapped by zfs_errno). */
void fuse_ctx_reply_rc(fuse_req_t req, int rc);
/* Fill a stat for a name of this kind, size and time (ns). */
void fuse_ctx_fill_stat(const struct zfs_fuse_ctx *c, enum ns_kind kind,
                        uint64_t size, int64_t mtime, fuse_ino_t ino,
                        struct stat *st);
/* Log a failure the engine did not already report. */
void fuse_ctx_log_error(struct zfs_fuse_ctx *c, const char *key,
                        const struct zerr *err);
/* For a debug line: "N bytes", else what the error rc is (in buf). */
const char *fuse_ctx_dbg_result(long rc, long long n, char *buf, size_t cap);

/* From work_begin to work_end, req's work is abandoned when the kernel
 * interrupts it (tok is raised; the engine gives up with -EINTR). */
void fuse_ctx_work_begin(fuse_req_t req, struct cancel *tok);
void fuse_ctx_work_end(fuse_req_t req);
/* Should the work that gave rc be done again (another request's
 * abandonment reached it, not tok's)? Counts *tries. */
int fuse_ctx_work_again(const struct zfs_fuse_ctx *c, const struct cancel *tok,
                        long rc, int *tries);
/* Resolve a store key and size it (waiting at most wait_ns): the
 * attributes stat shows; *unknown when the size is not known yet. */
int fuse_ctx_stat_key(struct zfs_fuse_ctx *c, const char *key, fuse_ino_t ino,
                      uint64_t wait_ns, struct stat *st, int *unknown);

#endif
