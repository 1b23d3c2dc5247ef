/* fuse_ops.c - FUSE low-level operations over the namespace and the
 * engine. Read-only: everything that would change the store fails with
 * EROFS.
 *
 * Why the low-level API: libfuse's path API (3.14) keeps a listing read
 * with offset 0 as a linked list and walks it from its head for every
 * reply (11 s for `ls` of 2,000,000 names), and keeps its nodes in slabs
 * of one page, mapped and unmapped one by one: forgetting 200,000 names
 * (cache pressure, unmount) took 6 s of munmap and TLB shootdowns. Here a
 * listing is read by position from its table (fs/namespace/namespace.h), and
 * the inode table (fs/namespace/inodes.c) is one hash table of ordinary
 * allocations. What every operation shares (the open files, replies,
 * attributes, INTERRUPT) is in fuse_ctx.c, below this file. */
#include "fuse_ops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../src/util/cancel.h"
#include "../src/util/log.h"
#include "engine/engine.h"
#include "engine/stats.h"
#include "namespace/inodes.h"
#include "namespace/namespace.h"
#include "namespace/ns_dir.h"
#include "namespace/zfs_errno.h"
#include "views/info.h"
#include "views/view.h"

/* ---- operations ---- */

/* The handshake: libfuse already asks for readdirplus (auto),
 * asynchronous reads and the largest requests (max_write 1 MiB, so
 * max_pages 256, the kernel's limit); we ask for the read-ahead main set
 * up, so page-cache reads come in requests that large too. */
static void zfs_init(void *userdata, struct fuse_conn_info *conn) {
  const struct zfs_fuse_ctx *c = userdata;
  if (c->cfg.max_readahead > conn->max_readahead)
    conn->max_readahead = c->cfg.max_readahead;
}

/* lookup: the entry with its attributes; "no such file" is cached too. */
static void zfs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_request(&c->engine->stats, STATS_LOOKUP);
  struct zfs_inode *p = inodes_get(c->inodes, parent);
  if (!p) {
    fuse_ctx_reply_err(req, ESTALE);
    return;
  }
  char path[4096];
  long len = ns_join(p->path, p->len, name, path, sizeof path);
  struct fuse_entry_param e;
  memset(&e, 0, sizeof e);
  struct cancel tok;
  int rc = (int)len, tries = 0, unknown = 0;
  fuse_ctx_work_begin(req, &tok);
  do
    rc = len < 0 ? (int)len
                 : fuse_ctx_stat_key(c, path, 0, c->cfg.size_wait_ns, &e.attr,
                                     &unknown);
  while (fuse_ctx_work_again(c, &tok, rc, &tries));
  fuse_ctx_work_end(req);
  char db[32];
  engine_debug(
      c->engine, ENGINE_DEBUG_REQUEST, "lookup /%s: %s", len < 0 ? name : path,
      fuse_ctx_dbg_result(rc, (long long)e.attr.st_size, db, sizeof db));
  if (rc == -ENOENT) { /* a negative entry: the kernel remembers it */
    stats_error(&c->engine->stats, ENOENT);
    e.ino = 0;
    e.entry_timeout = c->cfg.attr_timeout;
    fuse_reply_entry(req, &e);
    return;
  }
  if (rc < 0) {
    fuse_ctx_reply_rc(req, rc);
    return;
  }
  e.ino = inodes_ref(c->inodes, path, (size_t)len);
  if (!e.ino) {
    fuse_ctx_reply_err(req, ENOMEM);
    return;
  }
  e.attr.st_ino = e.ino;
  e.attr_timeout = unknown ? 0 : c->cfg.attr_timeout;
  e.entry_timeout = c->cfg.attr_timeout;
  if (fuse_reply_entry(req, &e) == -ENOENT) /* the lookup was interrupted */
    inodes_forget(c->inodes, e.ino, 1);
}

/* forget: the kernel dropped nlookup references (counted: a request
 * count is only comparable while the kernel keeps what it was told). */
static void zfs_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_add(&c->engine->stats.forgets, 1);
  inodes_forget(c->inodes, ino, nlookup);
  fuse_reply_none(req);
}

/* Many forgets in one request (cache pressure, unmount). */
static void zfs_forget_multi(fuse_req_t req, size_t count,
                             struct fuse_forget_data *forgets) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_add(&c->engine->stats.forgets, count);
  for (size_t i = 0; i < count; i++)
    inodes_forget(c->inodes, forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

/* stat: resolve, then size. Asked of an open text made whole (the kernel
 * sends its handle, e.g. to seek to its end): that open's text's size,
 * not kept (another open has another text). A size not known in time
 * (size_wait) shows 0 and is asked for again by the next stat; but a stat
 * through an open file (the kernel's lseek to SEEK_END: tail, less) waits
 * for the exact size, since its caller looks for where the text ends;
 * with lazy sizes too, for values.txt (whose unknown size the kernel
 * caches for no time, so that the seek comes here). */
static void zfs_getattr(fuse_req_t req, fuse_ino_t ino,
                        struct fuse_file_info *fi) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_request(&c->engine->stats, STATS_GETATTR);
  struct zfs_inode *in = inodes_get(c->inodes, ino);
  if (!in) {
    fuse_ctx_reply_err(req, ESTALE);
    return;
  }
  struct stat st;
  const struct zfs_file *f =
      fi ? (const struct zfs_file *)(uintptr_t)fi->fh : NULL;
  if (f && !f->h.is_dir && f->text) {
    fuse_ctx_fill_stat(c, f->ent.kind, f->text_len, f->ent.mtime, ino, &st);
    fuse_reply_attr(req, &st, 0);
    return;
  }
  struct cancel tok;
  int rc, tries = 0, unknown = 0;
  if (f && !f->h.is_dir && f->direct && f->ent.kind == NS_ARRAY_VIEW) {
    /* Lazy sizes too: the size is learned as a first stat of exact sizes
     * learns it (every unit on the workers at once), so `tail` reads the
     * end of the text rather than all of it in 8 KiB direct reads. A
     * unit that fails leaves the size unknown: 0, as stat says. */
    struct engine *ve = f->ent.eng ? f->ent.eng : c->engine;
    struct zerr err = {0};
    uint64_t size = 0;
    struct engine_req rq; /* the watchdog says when sizing runs long */
    fuse_ctx_work_begin(req, &tok);
    engine_req_begin(c->engine, &rq, in->path, 0, ENGINE_REQ_SIZE);
    do {
      zerr_clear(&err);
      rc = view_array_size(ve, f->ent.node, &size, &err);
    } while (fuse_ctx_work_again(c, &tok, rc, &tries));
    engine_req_end(c->engine, &rq);
    fuse_ctx_work_end(req);
    if (rc == -EINTR) {
      fuse_ctx_reply_rc(req, rc);
      return;
    }
    if (rc == 0) {
      fuse_ctx_fill_stat(c, NS_ARRAY_VIEW, size, f->ent.mtime, ino, &st);
      fuse_reply_attr(req, &st, c->cfg.attr_timeout);
      return;
    }
    tries = 0;
  }
  uint64_t wait = fi ? UINT64_MAX : c->cfg.size_wait_ns;
  fuse_ctx_work_begin(req, &tok);
  do
    rc = fuse_ctx_stat_key(c, in->path, ino, wait, &st, &unknown);
  while (fuse_ctx_work_again(c, &tok, rc, &tries));
  fuse_ctx_work_end(req);
  char db[32];
  engine_debug(c->engine, ENGINE_DEBUG_REQUEST, "stat /%s: %s", in->path,
               fuse_ctx_dbg_result(rc, rc < 0 ? 0 : (long long)st.st_size, db,
                                   sizeof db));
  if (rc < 0)
    fuse_ctx_reply_rc(req, rc);
  else
    fuse_reply_attr(req, &st, unknown ? 0 : c->cfg.attr_timeout);
}

/* opendir: the listing waits for the first readdir. */
static void zfs_opendir(fuse_req_t req, fuse_ino_t ino,
                        struct fuse_file_info *fi) {
  (void)ino;
  struct zfs_dir *d = calloc(1, sizeof *d);
  if (!d) {
    fuse_ctx_reply_err(req, ENOMEM);
    return;
  }
  atomic_init(&d->refs, 1);
  struct zfs_inodes *t = fuse_ctx_of(req)->inodes;
  inodes_handle_add(t, &d->h, 1);
  fi->fh = (uint64_t)(uintptr_t)d;
  if (fuse_reply_open(req, fi) == -ENOENT) { /* interrupted */
    inodes_handle_del(t, &d->h);
    free(d);
  }
}

/* Decoded bytes one readdirplus reply may decode to learn chunk views'
 * sizes (ns_dir_attr_learn), and as many again after it for the next
 * one: a reply stays short, and what is past it is learned by the
 * LOOKUPs of its names, as before. */
#define DIR_LEARN_BUDGET ((uint64_t)64 << 20)

/* Drop a reference to an open directory; the last frees it. */
static void dir_put(struct engine *e, struct zfs_dir *d) {
  if (atomic_fetch_sub(&d->refs, 1) == 1)
    fuse_ctx_handle_free(e, &d->h);
}

/* de (name i of the listing; its path, len bytes) without attributes:
 * learn them within *budget (budget 0: memo look-ups only), said to the
 * watchdog as a stat's sizing. */
static void dir_attr(struct zfs_fuse_ctx *c, const struct zfs_dir *d, size_t i,
                     const char *path, long len, struct ns_dirent *de,
                     uint64_t *budget) {
  if (de->attr)
    return;
  if (!*budget || len < 0) {
    ns_dir_attr(c->engine, d->list, de);
    return;
  }
  struct engine_req rq; /* the watchdog says when sizing runs long */
  engine_req_begin(c->engine, &rq, path, 0, ENGINE_REQ_SIZE);
  ns_dir_attr_learn(d->list, i, de, budget);
  engine_req_end(c->engine, &rq);
}

/* After a reply that learned sizes up to position pos: learn those of
 * the next count names (the next reply's, about) while the kernel and
 * the caller take this one, so that the two work at once. From the last
 * name back: the next reply learns from its first name on what is not
 * learned yet, so the two meet in the middle rather than queue on the
 * same chunks. Holds a reference to d, dropped here; dir (dl bytes) is
 * the directory's path. */
static void dir_learn_ahead(struct zfs_fuse_ctx *c, struct zfs_dir *d,
                            const char *dir, size_t dl, uint64_t pos,
                            uint64_t count) {
  uint64_t budget = DIR_LEARN_BUDGET, n = ns_dir_count(d->list);
  uint64_t end = pos - 2 + count < n ? pos - 2 + count : n;
  char path[4096];
  for (uint64_t i = end; i-- > pos - 2 && budget;) {
    if (engine_stopping(c->engine))
      break;
    struct ns_dirent de;
    ns_dir_get(d->list, i, &de);
    if (de.attr || de.kind != NS_CHUNK_VIEW)
      continue;
    dir_attr(c, d, i, path, ns_join(dir, dl, de.name, path, sizeof path), &de,
             &budget);
  }
  dir_put(c->engine, d);
}

/* Names from position off on, each with the next position as its offset,
 * as many as fit in size bytes. With plus, directories, stored files whose
 * size the listing gave and views whose size is learned carry their
 * attributes and an inode (the kernel then needs no LOOKUP for them);
 * others go without (ino 0: the kernel looks them up when asked). A
 * listing reads no chunk and decodes nothing.
 *
 * A readdirplus past the first reply learns chunk views' sizes (within
 * DIR_LEARN_BUDGET), then those of the next reply's names: the kernel
 * (readdirplus auto, libfuse's default) sends one there only when names
 * of the directory were stat'ed since its last reply, so the caller stats
 * every name (ls -l, du) and would have the same chunks decoded by a
 * LOOKUP each, a round trip a name. The first reply learns nothing: plain
 * ls reads it too. */
static void dir_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi, int plus) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_request(&c->engine->stats, STATS_READDIR);
  struct zfs_dir *d = (struct zfs_dir *)(uintptr_t)fi->fh;
  struct zfs_inode *in = inodes_get(c->inodes, ino);
  if (!in) {
    fuse_ctx_reply_err(req, ESTALE);
    return;
  }
  int rc = 0, tries = 0;
  struct cancel tok;
  fuse_ctx_work_begin(req, &tok);
  while (!d->list) {
    struct zerr err = {0};
    rc = ns_dir_open(c->engine, in->path, &d->list, &err);
    if (rc == 0 || !fuse_ctx_work_again(c, &tok, rc, &tries)) {
      if (rc < 0 && rc != -ENOENT)
        fuse_ctx_log_error(c, in->path, &err);
      break;
    }
  }
  /* The reply's buffer is this call's own: once the kernel has the
   * reply, the directory may be released (and d freed) by another thread
   * while fuse_reply_buf is still returning. */
  char *buf = rc == 0 ? malloc(size ? size : 1) : NULL;
  if (rc == 0 && !buf)
    rc = -ENOMEM;
  if (rc < 0) {
    fuse_ctx_work_end(req);
    fuse_ctx_reply_rc(req, rc);
    return;
  }
  size_t used = 0;
  uint64_t n = ns_dir_count(d->list) + 2, pos;
  uint64_t budget = plus && off > 0 ? DIR_LEARN_BUDGET : 0, none = 0;
  char path[4096];
  for (pos = off < 0 ? 0 : (uint64_t)off; pos < n; pos++) {
    struct ns_dirent de = {pos ? ".." : ".", NS_DIR, 0, 0, STORE_MTIME_UNKNOWN};
    if (pos >= 2)
      ns_dir_get(d->list, pos - 2, &de);
    char *p = buf + used;
    size_t room = size - used, w;
    long len =
        pos >= 2 ? ns_join(in->path, in->len, de.name, path, sizeof path) : -1;
    if (!plus) {
      struct stat st = {0};
      st.st_ino =
          len >= 0 ? inodes_stable_ino(path, (size_t)len) : INODES_UNKNOWN;
      st.st_mode = de.kind == NS_DIR ? S_IFDIR : S_IFREG;
      w = fuse_add_direntry(req, p, room, de.name, &st, (off_t)pos + 1);
      if (w > room)
        break; /* full: the kernel asks again from pos */
      used += w;
      continue;
    }
    struct fuse_entry_param e;
    memset(&e, 0, sizeof e);
    if (fuse_add_direntry_plus(req, NULL, 0, de.name, NULL, 0) > room)
      break; /* full: no inode is taken for a name not sent */
    if (budget && cancel_raised(&tok))
      budget = 0; /* abandoned: the names go without what is not known */
    if (pos >= 2)
      dir_attr(c, d, pos - 2, path, len, &de, budget ? &budget : &none);
    if (pos >= 2 && de.attr && len >= 0 &&
        (e.ino = inodes_ref(c->inodes, path, (size_t)len))) {
      fuse_ctx_fill_stat(c, de.kind, de.size, de.mtime, e.ino, &e.attr);
      e.attr_timeout = c->cfg.attr_timeout;
      e.entry_timeout = c->cfg.attr_timeout;
    } else {
      e.ino = 0; /* no attributes: the kernel looks the name up itself */
      e.attr.st_ino =
          len >= 0 ? inodes_stable_ino(path, (size_t)len) : INODES_UNKNOWN;
      e.attr.st_mode = de.kind == NS_DIR ? S_IFDIR : S_IFREG;
    }
    used += fuse_add_direntry_plus(req, p, room, de.name, &e, (off_t)pos + 1);
  }
  /* Learning ahead holds d and its own copy of the directory's path (the
   * kernel may forget the directory once it is released). */
  uint64_t from = off < 0 ? 0 : (uint64_t)off;
  int ahead = budget && pos < n && pos > from && in->len < sizeof path;
  size_t dl = in->len;
  if (ahead) {
    memcpy(path, in->path, dl + 1);
    atomic_fetch_add(&d->refs, 1);
  }
  /* A reply that cannot be sent (interrupted) leaves inodes the kernel
   * never saw: they stay until unmount, as in libfuse. */
  fuse_ctx_work_end(req);
  engine_debug(c->engine, ENGINE_DEBUG_REQUEST,
               "readdir /%s from %lld: %llu names", in->path, (long long)off,
               (unsigned long long)(pos - (off < 0 ? 0 : (uint64_t)off)));
  fuse_reply_buf(req, buf, used);
  free(buf);
  if (ahead)
    dir_learn_ahead(c, d, path, dl, pos, pos - from);
}

/* readdir and readdirplus. */
static void zfs_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                        struct fuse_file_info *fi) {
  dir_read(req, ino, size, off, fi, 0);
}
static void zfs_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
                            off_t off, struct fuse_file_info *fi) {
  dir_read(req, ino, size, off, fi, 1);
}

/* releasedir: drop the listing. */
static void zfs_releasedir(fuse_req_t req, fuse_ino_t ino,
                           struct fuse_file_info *fi) {
  (void)ino;
  struct zfs_dir *d = (struct zfs_dir *)(uintptr_t)fi->fh;
  if (d) {
    inodes_handle_del(fuse_ctx_of(req)->inodes, &d->h);
    dir_put(fuse_ctx_of(req)->engine, d);
  }
  fuse_reply_err(req, 0);
}

/* What an open of path needs (f is zeroed): the entry, a raw file's byte
 * source; *direct when stat may not give its size (ns_read_direct). */
static int open_file(struct zfs_fuse_ctx *c, const char *path,
                     struct zfs_file *f, int *direct) {
  struct zerr err = {0};
  int rc = ns_resolve(c->engine, path, &f->ent, &err);
  if (rc == 0 && f->ent.kind == NS_DIR)
    rc = -EISDIR;
  if (rc == 0 && f->ent.kind == NS_RAW) {
    rc = store_get(f->ent.eng->store, f->ent.key, &f->raw, &err);
    if (rc < 0 && rc != -ENOENT)
      fuse_ctx_log_error(c, path, &err);
  }
  if (rc == 0 && ns_text_whole(&f->ent)) { /* one snapshot per open */
    rc = ns_text(c->engine, &f->ent, &f->text, &f->text_len, &err);
    if (rc < 0 && rc != -EINTR)
      fuse_ctx_log_error(c, path, &err);
  }
  if (rc < 0)
    return rc;
  struct zerr derr = {0};
  *direct = ns_read_direct(c->engine, &f->ent, &derr);
  if (*direct == -EINTR) { /* abandoned: no answer, or another try */
    bytesrc_unref(f->raw);
    f->raw = NULL;
    free(f->text);
    f->text = NULL;
    return -EINTR;
  }
  return 0;
}

/* open: read-only; raw files keep their byte source open. */
static void zfs_open(fuse_req_t req, fuse_ino_t ino,
                     struct fuse_file_info *fi) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_request(&c->engine->stats, STATS_OPEN);
  if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
    fuse_ctx_reply_err(req, EROFS);
    return;
  }
  struct zfs_inode *in = inodes_get(c->inodes, ino);
  if (!in) {
    fuse_ctx_reply_err(req, ESTALE);
    return;
  }
  struct engine *e = c->engine;
  struct zfs_file *f = calloc(1, sizeof *f);
  if (!f) {
    fuse_ctx_reply_err(req, ENOMEM);
    return;
  }
  struct cancel tok;
  int rc, direct = 0, tries = 0;
  fuse_ctx_work_begin(req, &tok);
  do
    rc = open_file(c, in->path, f, &direct);
  while (fuse_ctx_work_again(c, &tok, rc, &tries));
  fuse_ctx_work_end(req);
  engine_debug(c->engine, ENGINE_DEBUG_REQUEST, "open /%s: %s", in->path,
               rc < 0       ? strerror(-rc)
               : direct > 0 ? "direct I/O"
                            : "cached");
  if (rc == 0 && f->ent.kind != NS_RAW)
    f->cur = view_cursor_new(); /* NULL only costs re-decoding */
  if (rc < 0) {
    free(f);
    fuse_ctx_reply_rc(req, rc);
    return;
  }
  inodes_handle_add(c->inodes, &f->h, 0);
  fi->fh = (uint64_t)(uintptr_t)f;
  if (direct > 0) {
    /* Lazy sizes (or a values.txt or D.csv whose size stat defers): stat
     * may have said 0 (and the kernel may still hold that), so every read
     * comes to us and ends where the text does. The statistics: size 0,
     * and each open its own text. */
    fi->direct_io = 1;
    f->direct = 1;
  } else {
    fi->keep_cache = 1; /* immutable: page cache stays valid across opens */
  }
  if (fuse_reply_open(req, fi) == -ENOENT) { /* interrupted */
    inodes_handle_del(c->inodes, &f->h);
    fuse_ctx_handle_free(e, &f->h);
  }
}

/* Read size bytes at off of open file f into buf (or lend them): the
 * bytes read, or a negative errno. */
static long read_file(struct zfs_fuse_ctx *c, struct zfs_file *f, uint64_t off,
                      size_t size, char *buf, struct view_lend *lend,
                      struct zerr *err) {
  if (f->raw) {
    int rc = bytesrc_read_range(f->raw, off, size, buf, err);
    if (rc < 0)
      fuse_ctx_log_error(c, f->ent.key, err);
    return rc < 0 ? rc : (long)size;
  }
  if (f->text)
    return (long)ns_text_read(f->text, f->text_len, off, size, buf);
  if (f->ent.kind == NS_ARRAY_VIEW || f->ent.kind == NS_CHUNK_VIEW) {
    /* ns_read_view's dispatch, for the two views whose text may be
     * replied from where it lies (a unit's whole text, a slice) */
    struct engine *ve = f->ent.eng ? f->ent.eng : c->engine;
    return f->ent.kind == NS_ARRAY_VIEW
               ? view_array_read_lend(ve, f->ent.node, off, size, buf, f->cur,
                                      lend, err)
               : view_chunk_read_lend(ve, f->ent.node, f->ent.idx, off, size,
                                      buf, f->cur, lend, err);
  }
  return ns_read_view(c->engine, &f->ent, off, size, buf, f->cur, err);
}

/* read: raw bytes or rendered text. */
static void zfs_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                     struct fuse_file_info *fi) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  stats_request(&c->engine->stats, STATS_READ);
  struct zfs_file *f = (struct zfs_file *)(uintptr_t)fi->fh;
  struct zerr err = {0};
  if (off < 0) {
    fuse_ctx_reply_err(req, EINVAL);
    return;
  }
  if (f->raw) {
    uint64_t total = f->raw->size;
    if ((uint64_t)off >= total) {
      fuse_reply_buf(req, NULL, 0);
      return;
    }
    if (size > total - (uint64_t)off)
      size = (size_t)(total - (uint64_t)off);
  }
  char *buf = malloc(size ? size : 1);
  if (!buf) {
    fuse_ctx_reply_err(req, ENOMEM);
    return;
  }
  long n;
  struct view_lend lend = {0}; /* bytes a view lent rather than copied */
  struct engine_req rq;        /* the watchdog says when it runs long */
  const struct zfs_inode *in = inodes_get(c->inodes, ino); /* open: held */
  struct cancel tok;
  int tries = 0;
  fuse_ctx_work_begin(req, &tok);
  engine_req_begin(c->engine, &rq, in ? in->path : f->ent.key, (uint64_t)off,
                   size);
  do {
    n = read_file(c, f, (uint64_t)off, size, buf, &lend, &err);
  } while (fuse_ctx_work_again(c, &tok, n, &tries));
  /* With direct I/O a short read is not the end: the text before a unit
   * that fails (a bad chunk) goes out, the next read fails at it. */
  if (n < 0 && f->direct && !f->raw)
    n = ns_read_before_failure(c->engine, &f->ent, (uint64_t)off, size, buf, n);
  engine_req_end(c->engine, &rq);
  fuse_ctx_work_end(req);
  char db[32];
  engine_debug(c->engine, ENGINE_DEBUG_REQUEST, "read /%s: %zu at %lld: %s",
               in ? in->path : f->ent.key, size, (long long)off,
               fuse_ctx_dbg_result(n, n, db, sizeof db));
  /* Once replied, the file may be closed and freed by another thread
   * before this one goes on: nothing of f is touched after the reply (a
   * lent slice holds its cursor). */
  struct view_cursor *cur = f->cur;
  if (n < 0) {
    fuse_ctx_reply_rc(req, (int)n);
  } else {
    stats_add(&c->engine->stats.bytes_served, (uint64_t)n);
    fuse_reply_buf(req, lend.bytes ? lend.bytes : buf, (size_t)n);
  }
  view_lend_return(cur, &lend);
  free(buf);
}

/* Close: drop what open took. */
static void zfs_release(fuse_req_t req, fuse_ino_t ino,
                        struct fuse_file_info *fi) {
  (void)ino;
  struct zfs_file *f = (struct zfs_file *)(uintptr_t)fi->fh;
  if (f) {
    inodes_handle_del(fuse_ctx_of(req)->inodes, &f->h);
    fuse_ctx_handle_free(fuse_ctx_of(req)->engine, &f->h);
  }
  fuse_reply_err(req, 0);
}

/* Read-only file system statistics: the blocks the store's files hold
 * where a bounded walk knows them (a local store), else 0. */
static void zfs_statfs(fuse_req_t req, fuse_ino_t ino) {
  (void)ino;
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  int state = 0;
  if (__atomic_compare_exchange_n(&c->usage_state, &state, 3, 0,
                                  __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    /* this request walks; one that comes meanwhile shows 0 */
    uint64_t b = 0, f = 0;
    int known = ns_store_usage(c->engine, &b, &f) == 0;
    c->usage_bytes = b;
    c->usage_files = f;
    state = known ? 1 : 2;
    __atomic_store_n(&c->usage_state, state, __ATOMIC_RELEASE);
  }
  int known = state == 1;
  struct statvfs st;
  memset(&st, 0, sizeof st);
  st.f_bsize = 4096;
  st.f_frsize = 4096;
  st.f_namemax = 255;
  st.f_flag = ST_RDONLY;
  st.f_blocks = known ? (fsblkcnt_t)((c->usage_bytes + 4095) / 4096) : 0;
  st.f_files = known ? (fsfilcnt_t)c->usage_files : 0;
  fuse_reply_statfs(req, &st);
}

/* access: writes never; otherwise the name must exist. */
static void zfs_access(fuse_req_t req, fuse_ino_t ino, int mask) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  if (mask & W_OK) {
    fuse_ctx_reply_err(req, EROFS);
    return;
  }
  struct zfs_inode *in = inodes_get(c->inodes, ino);
  if (!in) {
    fuse_ctx_reply_err(req, ESTALE);
    return;
  }
  struct ns_entry *ent = malloc(sizeof *ent);
  if (!ent) {
    fuse_ctx_reply_err(req, ENOMEM);
    return;
  }
  struct cancel tok;
  int rc, tries = 0;
  fuse_ctx_work_begin(req, &tok);
  do
    rc = ns_resolve(c->engine, in->path, ent, NULL);
  while (fuse_ctx_work_again(c, &tok, rc, &tries));
  fuse_ctx_work_end(req);
  free(ent);
  fuse_ctx_reply_err(req, rc < 0 ? -zfs_errno(rc) : 0);
}

/* The node an inode's path names when it is a directory (an array, a
 * group, or a directory without metadata: ZNODE_NONE), else NULL with
 * *rc set (0 for a file: it simply has no attributes). */
static const struct znode *xattr_node(fuse_req_t req, fuse_ino_t ino, int *rc) {
  struct zfs_fuse_ctx *c = fuse_ctx_of(req);
  struct zfs_inode *in = inodes_get(c->inodes, ino);
  *rc = 0;
  if (!in) {
    *rc = -ESTALE;
    return NULL;
  }
  struct ns_entry *ent = malloc(sizeof *ent);
  if (!ent) {
    *rc = -ENOMEM;
    return NULL;
  }
  const struct znode *n = NULL;
  *rc = ns_resolve(c->engine, in->path, ent, NULL);
  if (*rc == 0 && ent->kind == NS_DIR)
    n = node_get(ent->eng->nodes, ent->key);
  free(ent);
  return n;
}

/* Reply as getxattr and listxattr do, then free value: the error rc
 * (ENODATA: no such attribute), else value's size when the caller asks
 * (size 0), ERANGE when it does not fit, else value (len bytes). */
static void reply_xattr(fuse_req_t req, int rc, size_t size, char *value,
                        size_t len) {
  if (rc < 0)
    fuse_ctx_reply_err(req, rc == -ENODATA || rc == -ESTALE || rc == -ENOMEM
                                ? -rc
                                : -zfs_errno(rc));
  else if (size == 0)
    fuse_reply_xattr(req, len);
  else if (size < len)
    fuse_ctx_reply_err(req, ERANGE);
  else
    fuse_reply_buf(req, value ? value : "", len);
  free(value);
}

/* getxattr (name) and listxattr (name NULL): user.zarr.* on array and
 * group directories (fs/views/info.c). */
static void xattr_request(fuse_req_t req, fuse_ino_t ino, const char *name,
                          size_t size) {
  /* Off (the default): ENOSYS, after which the kernel asks no more, so ls
   * -l costs no request per file for security.selinux and the ACLs. */
  if (!fuse_ctx_of(req)->cfg.xattrs) {
    fuse_ctx_reply_err(req, ENOSYS);
    return;
  }
  /* On: answer other names at once, without resolving the path. */
  if (name && strncmp(name, "user.zarr.", 10)) {
    fuse_ctx_reply_err(req, ENODATA);
    return;
  }
  int rc;
  struct cancel tok;
  fuse_ctx_work_begin(req, &tok);
  const struct znode *n = xattr_node(req, ino, &rc);
  fuse_ctx_work_end(req);
  char *v = NULL;
  size_t len = 0;
  if (n)
    rc = name ? info_xattr(n, name, &v, &len) : info_xattr_names(n, &v, &len);
  else if (rc == 0 && name)
    rc = -ENODATA; /* a file, or a directory without metadata */
  reply_xattr(req, rc, size, v, len);
}

static void zfs_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                         size_t size) {
  xattr_request(req, ino, name, size);
}

static void zfs_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  xattr_request(req, ino, NULL, size);
}

/* Everything that would write. */
static void ro_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
                       int to_set, struct fuse_file_info *fi) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode, dev_t rdev) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
                     mode_t mode) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_unlink(fuse_req_t req, fuse_ino_t parent, const char *name) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
                       const char *name) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
                      fuse_ino_t newparent, const char *newname,
                      unsigned int flags) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
                    const char *newname) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
                     size_t size, off_t off, struct fuse_file_info *fi) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_create(fuse_req_t req, fuse_ino_t parent, const char *name,
                      mode_t mode, struct fuse_file_info *fi) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
                        const char *value, size_t size, int flags) {
  fuse_ctx_reply_err(req, EROFS);
}
static void ro_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name) {
  fuse_ctx_reply_err(req, EROFS);
}

static const struct fuse_lowlevel_ops zfs_ops = {
    .init = zfs_init,
    .lookup = zfs_lookup,
    .forget = zfs_forget,
    .forget_multi = zfs_forget_multi,
    .getattr = zfs_getattr,
    .opendir = zfs_opendir,
    .readdir = zfs_readdir,
    .readdirplus = zfs_readdirplus,
    .releasedir = zfs_releasedir,
    .open = zfs_open,
    .read = zfs_read,
    .release = zfs_release,
    .statfs = zfs_statfs,
    .access = zfs_access,
    .setattr = ro_setattr,
    .mknod = ro_mknod,
    .mkdir = ro_mkdir,
    .unlink = ro_unlink,
    .rmdir = ro_unlink,
    .symlink = ro_symlink,
    .rename = ro_rename,
    .link = ro_link,
    .write = ro_write,
    .create = ro_create,
    .setxattr = ro_setxattr,
    .getxattr = zfs_getxattr,
    .listxattr = zfs_listxattr,
    .removexattr = ro_removexattr,
};

/* The table. */
const struct fuse_lowlevel_ops *zfs_operations(void) { return &zfs_ops; }
