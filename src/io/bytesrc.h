/* bytesrc.h - byte sources: something with a size and ranged reads.
 *
 * Every byte zarrfs serves comes out of a byte source: a local file, a
 * memory buffer, a sub-range of another source (an inner chunk of a
 * shard), or a remote object (src/net/remote.h). Codecs take a source and return a source, so a
 * codec that does not transform bytes (`bytes` on uint8, the data section of
 * a `zarrs.vlen` chunk) can hand back a sub-range and a later read touches
 * only the bytes it needs.
 *
 * Sources are reference counted and immutable, so they can be shared between
 * FUSE threads without locks. Functions that return a source return a new
 * reference that the caller must drop with bytesrc_unref(). */
#ifndef ZARRFS_BYTESRC_H
#define ZARRFS_BYTESRC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* I/O counters of a store; shared by all sources it opens (atomics). */
struct io_stats {
  _Atomic uint64_t bytes_read; /* bytes read from files/network */
  _Atomic uint64_t reads;      /* read calls issued */
  _Atomic uint64_t opens;      /* objects opened for reading: the first
                                  open of a source and every reopen of a
                                  pooled one (real open() calls) */
};

struct bytesrc;

struct bytesrc_ops {
  /* Read exactly len bytes at off (the caller has checked the bounds). */
  int (*read)(struct bytesrc *s, uint64_t off, size_t len, void *dst,
              struct zerr *err);
  /* Release implementation state (called once when refs reach zero). */
  void (*destroy)(struct bytesrc *s);
};

struct bytesrc {
  const struct bytesrc_ops *ops;
  uint64_t size;      /* total bytes */
  const uint8_t *mem; /* non-NULL when all bytes are in memory */
  _Atomic long refs;
  uint64_t version; /* what names these bytes, or 0: unknown. A file's:
                       bytesrc_version_of_stat of the stat it was opened
                       with; a window's: its parent's and the window
                       (bytesrc_version_sub); set by whoever makes the
                       source, before it is shared. Two sources with one
                       non-zero version hold the same bytes, unless
                       something rewrote a file and forged its times
                       (the persistent index, src/store/sizeindex.h, keys
                       records by it and checks them by decoding) */
};

struct stat;
/* The version of a file's bytes from its stat: a digest of its device,
 * inode, size, modification and change times (a change time moves on
 * every write, and neither touch(1), cp -p, rsync -t nor tar can set
 * it). Never 0. */
uint64_t bytesrc_version_of_stat(const struct stat *st);
/* The version of window [off, off+len) of bytes of version parent (0
 * when that is 0). */
uint64_t bytesrc_version_sub(uint64_t parent, uint64_t off, uint64_t len);

/* Read len bytes at off into dst; a range past the end is -EIO. */
int bytesrc_read_range(struct bytesrc *s, uint64_t off, size_t len, void *dst,
                       struct zerr *err);
/* Take another reference; returns s. NULL-safe. */
struct bytesrc *bytesrc_ref(struct bytesrc *s);
/* Drop a reference; NULL-safe. */
void bytesrc_unref(struct bytesrc *s);

/* Open a local file for ranged reads. Counters in stats (may be NULL) are
 * bumped by every read. Returns a new reference in *out. The source holds
 * its descriptor for its whole life (for tools and tests; stores use
 * bytesrc_from_pool). Never blocks: a FIFO, socket or device is refused
 * with -EIO. A missing file is -ENOENT; transient codes (EMFILE, ENFILE,
 * ENOMEM, ...) are kept; other failures are -EIO. */
int bytesrc_open_file(const char *path, struct io_stats *stats,
                      struct bytesrc **out, struct zerr *err);

struct fdpool;
/* A file source that does not own a descriptor: it keeps the file's
 * identity and name, and borrows a descriptor from pool (src/io/fdpool.h) for
 * each read, so a cached source costs no descriptor. fd is an open
 * descriptor of the regular file that st (its fstat) describes, already
 * checked by the caller; it passes to the pool, also on failure. name
 * (copied) is what the pool's reopen callback gets when the pool closed
 * the descriptor meanwhile; a reopened file that is not the same dev/ino
 * fails the read with -EIO "file replaced while mounted", a full
 * descriptor table with -EMFILE/-ENFILE (transient). Counts one open in
 * stats (may be NULL), and one per reopen. Returns a new reference. */
int bytesrc_from_pool(struct fdpool *pool, int fd, const struct stat *st,
                      const char *name, struct io_stats *stats,
                      struct bytesrc **out, struct zerr *err);
/* Is s a pool source (bytesrc_from_pool) whose pool holds its descriptor
 * open right now, so that a read costs no open? A hint for caches of
 * sources (src/store/confine.c): the pool may close it the next moment. */
int bytesrc_pool_is_open(const struct bytesrc *s);
/* Wrap malloc'd memory; takes ownership of data (freed with free()).
 * data may be NULL when len is 0. Returns NULL on allocation failure (and
 * then frees data). */
struct bytesrc *bytesrc_from_mem(void *data, size_t len);
/* The malloc'd buffer of a source made by bytesrc_from_mem, taken out of
 * it when the caller's reference is the only one (nobody else can be
 * reading it): the caller owns the buffer (free()) and *len is its size;
 * the source is left empty (size 0) and still needs its unref. NULL, and
 * nothing changed, for a shared source or any other kind. For a decoder
 * that can work in place on its input (codecs/vlen_interleaved.c). */
void *bytesrc_take_mem(struct bytesrc *s, size_t *len);
/* Wrap memory owned by someone else that outlives the source. */
struct bytesrc *bytesrc_from_static(const void *data, size_t len);
/* A window [off, off+len) of parent (takes its own reference to parent).
 * Fails with -EIO when the window does not fit. */
int bytesrc_sub(struct bytesrc *parent, uint64_t off, uint64_t len,
                struct bytesrc **out, struct zerr *err);
/* All bytes of s in memory: returns s itself (new ref) if it already is,
 * otherwise reads it into a new memory source. Sources larger than max
 * fail with -EFBIG. */
int bytesrc_load(struct bytesrc *s, size_t max, struct bytesrc **out,
                 struct zerr *err);

#endif
