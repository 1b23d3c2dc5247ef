/* fdpool.h - a bounded pool of open file descriptors.
 *
 * Decoded chunks live in the cache for a long time and keep windows onto
 * the file sources they came from, so a file source cannot own a
 * descriptor for its whole life: 20,000 cached chunks would pin 20,000
 * descriptors and the mount would die of EMFILE. Instead a file source
 * keeps the file's identity (st_dev, st_ino) and the name to reopen it by,
 * and borrows a descriptor from the pool for each read:
 *
 *   fdpool_adopt     the first open (done and checked by the store) hands
 *                    its descriptor to the pool and returns the pool's file
 *                    entry; sources of the same file (same dev/ino) share
 *                    one entry and so one descriptor;
 *   fdpool_checkout  a descriptor for one read (reopened through the
 *                    pool's reopen callback when the pool closed it; a
 *                    reopened file whose dev/ino differ fails with EIO
 *                    "file replaced while mounted");
 *   fdpool_checkin   the read is done; the descriptor becomes idle;
 *   fdpool_release   a source is gone; the entry (and its descriptor) goes
 *                    with the last one.
 *
 * A descriptor checked out (use count > 0) is never closed, so a pread in
 * another thread never sees its descriptor vanish. Idle descriptors beyond
 * the limit are closed, least recently used first; descriptors in use may
 * briefly take the pool above its limit (by at most the number of reads in
 * flight). The default limit is clamp(RLIMIT_NOFILE soft limit / 4, 8, 256)
 * at fdpool_new: a mount has two pools (the local store's and the allowed
 * roots' for manifest targets), which leaves half the table to FUSE, the
 * log and everything else.
 *
 * EMFILE/ENFILE are transient: when a reopen meets them the pool closes its
 * idle descriptors (fdpool_shed) and tries once more; if that fails too the
 * code is returned as it is (never EIO; see zerr_is_transient).
 *
 * Locking: one mutex per pool, a leaf lock. Nothing else is taken while it
 * is held, and the reopen callback runs without it (so it may block on the
 * file system without stalling other readers; it must not call back into
 * the pool). Every function here is thread-safe.
 *
 * Lifetime: the pool is reference counted. Its creator holds one reference,
 * every file entry holds one, so the pool (and the reopen context it owns)
 * outlives every source that still needs it, whatever order the store and
 * the cache are freed in. (A store's sources still count into the store's
 * io_stats: they may be dropped, not read, after the store is freed.) */
#ifndef ZARRFS_FDPOOL_H
#define ZARRFS_FDPOOL_H

#include <stdint.h>
#include <sys/stat.h>

#include "../util/err.h"

struct fdpool;
struct fdpool_file;

/* Open name again for reading. Must not block (open O_PATH first, refuse
 * what is not a regular file, then reopen: fdpool_open_checked), and must
 * apply the same confinement checks as the first open. Fills *fd (owned by
 * the caller) and *st (its fstat). Same error convention as everything
 * else: 0 or a negative errno, transient codes kept. Called without the
 * pool lock; must not call into the pool. */
typedef int (*fdpool_reopen_fn)(void *ctx, const char *name, int *fd,
                                struct stat *st, struct zerr *err);

/* The default limit: clamp(RLIMIT_NOFILE soft limit / 4, 8, 256) (256 when
 * the soft limit is infinite or cannot be read). */
unsigned fdpool_default_limit(void);

/* A new pool holding at most limit idle descriptors (0: the default).
 * reopen(ctx, ...) opens files again; ctx is owned by the pool from now on
 * and freed with ctx_free (may be NULL) when the last reference goes, also
 * when fdpool_new fails. *out is a new reference (fdpool_unref). */
int fdpool_new(unsigned limit, fdpool_reopen_fn reopen, void *ctx,
               void (*ctx_free)(void *ctx), struct fdpool **out,
               struct zerr *err);
/* Drop a reference; the last one closes the pool's descriptors and frees
 * the context. NULL-safe. */
void fdpool_unref(struct fdpool *p);

/* Hand fd, an open descriptor of the regular file st describes (its
 * fstat), to the pool. *out is the file entry (one reference, dropped with
 * fdpool_release). When the pool already has an entry for the same
 * dev/ino, it is shared and fd is closed if the entry has a descriptor.
 * fd belongs to the pool from now on, also on failure (closed). */
int fdpool_adopt(struct fdpool *p, int fd, const struct stat *st,
                 struct fdpool_file **out, struct zerr *err);
/* Drop a reference to a file entry; NULL-safe. */
void fdpool_release(struct fdpool_file *f);
/* A descriptor of f for one read, reopened (through name, and counted in
 * *reopened = 1) when the pool had closed it. Every successful checkout
 * must be followed by exactly one fdpool_checkin. */
int fdpool_checkout(struct fdpool_file *f, const char *name, int *fd,
                    int *reopened, struct zerr *err);
/* Does the pool hold f's descriptor open right now (a read of f would
 * cost no open)? A hint: the pool may close it the next moment. */
int fdpool_file_is_open(struct fdpool_file *f);
/* The read of a checkout is done. */
void fdpool_checkin(struct fdpool_file *f);
/* Close every idle descriptor (used on EMFILE/ENFILE before a retry).
 * Returns how many were closed. */
unsigned fdpool_shed(struct fdpool *p);

/* A snapshot of a pool's counters (for tests and logs). */
struct fdpool_stats {
  unsigned limit;   /* idle descriptors kept at most */
  unsigned open;    /* descriptors held now (idle and in use) */
  unsigned idle;    /* of which idle */
  uint64_t files;   /* file entries (distinct dev/ino with sources) */
  uint64_t reopens; /* descriptors opened again by checkouts */
  uint64_t closes;  /* descriptors closed to stay under the limit or shed */
};
void fdpool_get_stats(struct fdpool *p, struct fdpool_stats *out);

/* ---- opening without blocking ---- */

/* A short name of a file type for messages: "FIFO", "socket", "character
 * device", "block device", "directory", "symbolic link", "regular file". */
const char *fdpool_type_name(mode_t mode);

/* Open for reading the file an O_PATH descriptor pfd names, without ever
 * blocking: fstat pfd and refuse anything but a regular file (-EIO "not a
 * regular file (FIFO)"), then reopen that very inode through
 * /proc/self/fd/N. When /proc is unavailable, fallback(fctx, &fd) must
 * open the same name with O_RDONLY | O_NONBLOCK (and its usual
 * confinement); the result must be the same regular file (dev/ino) or it
 * is refused with -EIO. Fills *fd (owned by the caller) and *st. pfd stays
 * open (the caller closes it). Transient errors keep their code; other
 * failures are -EIO with the reason. */
int fdpool_open_checked(int pfd, int (*fallback)(void *fctx, int *fd),
                        void *fctx, int *fd, struct stat *st, struct zerr *err);

#endif
