/* fuse_ctx.c - what the FUSE operations share (see fuse_ctx.h): open
 * files and directories, the inode table's life, replies, attributes,
 * logging, and abandoning a request (INTERRUPT). Split from fuse_ops.c,
 * which calls into it, never the other way. */
#include "fuse_ctx.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/util/cancel.h"
#include "../src/util/log.h"
#include "engine/engine.h"
#include "engine/stats.h"
#include "namespace/ns_dir.h"
#include "namespace/zfs_errno.h"
#include "views/view.h"

/* Free an open file or directory (unlinked already). */
void fuse_ctx_handle_free(struct engine *e, struct zfs_handle *h) {
  if (h->is_dir) {
    struct zfs_dir *d = (struct zfs_dir *)h;
    ns_dir_free(d->list);
    free(d);
  } else {
    struct zfs_file *f = (struct zfs_file *)h;
    bytesrc_unref(f->raw);
    view_cursor_free(e, f->cur);
    free(f->text);
    free(f);
  }
}

/* inodes_free's callback: an open handle of engine ctx. */
static void handle_free_cb(void *ctx, struct zfs_handle *h) {
  fuse_ctx_handle_free(ctx, h);
}

/* See fuse_ops.h. */
int zfs_inodes_new(struct zfs_inodes **out) { return inodes_new(out); }

/* See fuse_ops.h. */
void zfs_inodes_free(struct zfs_inodes *t, struct engine *e) {
  inodes_free(t, handle_free_cb, e);
}

/* The mount context of a request. */
struct zfs_fuse_ctx *fuse_ctx_of(fuse_req_t req) {
  return fuse_req_userdata(req);
}

/* Reply with errno errnum (positive), counted by kind in the mount's
 * statistics: every error reply goes through here. */
void fuse_ctx_reply_err(fuse_req_t req, int errnum) {
  stats_error(&fuse_ctx_of(req)->engine->stats, errnum);
  fuse_reply_err(req, errnum);
}

/* Reply with an internal error. */
void fuse_ctx_reply_rc(fuse_req_t req, int rc) {
  fuse_ctx_reply_err(req, -zfs_errno(rc));
}

/* Fill a stat for a name of this kind and size. */
void fuse_ctx_fill_stat(const struct zfs_fuse_ctx *c, enum ns_kind kind,
                        uint64_t size, int64_t mtime, fuse_ino_t ino,
                        struct stat *st) {
  memset(st, 0, sizeof *st);
  if (kind == NS_DIR) {
    st->st_mode = S_IFDIR | (0555 & ~c->cfg.dmask);
    st->st_nlink = 2;
  } else {
    st->st_mode = S_IFREG | (0444 & ~c->cfg.fmask);
    st->st_nlink = 1;
    st->st_size = (off_t)size;
    st->st_blocks = (blkcnt_t)((size + 511) / 512);
  }
  st->st_ino = ino;
  st->st_blksize = 1024 * 1024;
  st->st_uid = c->uid;
  st->st_gid = c->gid;
  /* the store's time where it knows one, else the mount's */
  if (mtime == STORE_MTIME_UNKNOWN) {
    st->st_mtim.tv_sec = c->mount_time;
  } else {
    st->st_mtim.tv_sec = (time_t)(mtime / 1000000000);
    st->st_mtim.tv_nsec = (long)(mtime % 1000000000);
    if (st->st_mtim.tv_nsec < 0) { /* before 1970: % keeps the sign */
      st->st_mtim.tv_nsec += 1000000000;
      st->st_mtim.tv_sec--;
    }
  }
  st->st_atim = st->st_ctim = st->st_mtim;
}

/* Log a failure the engine did not already report (through the engine's
 * log, so a repeated failure is one line). */
void fuse_ctx_log_error(struct zfs_fuse_ctx *c, const char *key,
                        const struct zerr *err) {
  if (err->code != EINTR)
    engine_log(c->engine, key, err->msg);
}

/* For a debug line: "N bytes" (rc >= 0, the size or count n), else
 * what the error is. */
const char *fuse_ctx_dbg_result(long rc, long long n, char *buf, size_t cap) {
  if (rc < 0)
    return strerror((int)-rc);
  snprintf(buf, cap, "%lld bytes", n);
  return buf;
}

/* ---- abandoning a request (INTERRUPT) ----
 * The kernel waits for an answer it has sent even after SIGKILL, only
 * sending INTERRUPT: a request that may run long holds a token
 * (src/util/cancel.h) from work_begin to work_end, which the interrupt
 * raises; the engine's loops, waits, transfers and decodes then give up
 * with -EINTR. libfuse reads INTERRUPT on a free worker (not with -s). */

/* libfuse's interrupt callback, on another thread: the reader gave up. */
static void on_interrupt(fuse_req_t req, void *tok) {
  (void)req;
  cancel_raise(tok);
}

/* From here to work_end, req's work is abandoned when req is interrupted
 * (also when it was before this: libfuse calls back at once). */
void fuse_ctx_work_begin(fuse_req_t req, struct cancel *tok) {
  cancel_init(tok);
  cancel_enter(tok);
  fuse_req_interrupt_func(req, on_interrupt, tok);
}

/* Before the reply: no callback is running or will run after this (libfuse
 * holds the request's lock while it calls back), so tok may go. */
void fuse_ctx_work_end(fuse_req_t req) {
  fuse_req_interrupt_func(req, NULL, NULL);
  cancel_leave(NULL);
}

/* Times a request's work is done again after another request's
 * abandonment reached it (work_again). */
#define WORK_RETRIES 8

/* Did rc (-EINTR) come from another request's abandonment (a fill it
 * waited for, given up by its reader), not tok's or the shutdown? Then do
 * the work again: what was abandoned is transient, and forgotten. */
int fuse_ctx_work_again(const struct zfs_fuse_ctx *c, const struct cancel *tok,
                        long rc, int *tries) {
  return rc == -EINTR && !cancel_raised(tok) && !engine_stopping(c->engine) &&
         (*tries)++ < WORK_RETRIES;
}

/* Resolve a store key and size it: the attributes stat shows. "No such
 * file" is an answer; a failure to find out (a server failing) is said in
 * the log (sizes log their failures where they decode). */
int fuse_ctx_stat_key(struct zfs_fuse_ctx *c, const char *key, fuse_ino_t ino,
                      uint64_t wait_ns, struct stat *st, int *unknown) {
  struct ns_entry *ent = malloc(sizeof *ent);
  if (!ent)
    return -ENOMEM;
  struct zerr err = {0};
  int rc = ns_resolve(c->engine, key, ent, &err);
  if (rc < 0 && rc != -ENOENT && rc != -ENOTDIR && rc != -ENAMETOOLONG)
    fuse_ctx_log_error(c, key, &err);
  uint64_t size = 0;
  struct engine_req rq; /* the watchdog says when sizing runs long */
  engine_req_begin(c->engine, &rq, key, 0, ENGINE_REQ_SIZE);
  *unknown = 0;
  if (rc == 0 &&
      (rc = ns_size_within(c->engine, ent, wait_ns, &size, &err)) > 0) {
    *unknown = 1; /* 0 shown until learned: asked again every time */
    rc = 0;
  }
  engine_req_end(c->engine, &rq);
  if (rc == 0)
    fuse_ctx_fill_stat(c, ent->kind, size, ent->mtime, ino, st);
  free(ent);
  return rc;
}