/* stats.h - the live counters of a mount, shown in /.zarrfs/stats: the
 * requests served by kind, the bytes served, the decodes and their time,
 * and the errors replied by kind. With them, the text shows the store's
 * own counters (struct io_stats: bytes read from files and servers) and
 * the memo's (hits, fills).
 *
 * The counters live in the engine (struct engine.stats), the daemon's
 * context: no global state. This module needs nothing of the engine:
 * stats_text is given the counters it shows. Each is a relaxed atomic add, with
 * no lock on any path, so counting costs nothing measurable; a reader sees each
 * counter as of some moment, not all of them at one instant. FUSE-free. */
#ifndef ZARRFS_STATS_H
#define ZARRFS_STATS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* What a request was. */
enum stats_req {
  STATS_LOOKUP,
  STATS_GETATTR,
  STATS_READDIR, /* readdir and readdirplus */
  STATS_OPEN,
  STATS_READ,
  STATS_REQ_KINDS
};

/* Errors replied, by errno. */
enum stats_err {
  STATS_EIO,
  STATS_ENOENT, /* also negative lookups (the name does not exist) */
  STATS_ENOMEM,
  STATS_EINTR,
  STATS_EOTHER,
  STATS_ERR_KINDS
};

struct zfs_stats {
  _Atomic uint64_t requests[STATS_REQ_KINDS];
  _Atomic uint64_t bytes_served; /* read replies, bytes */
  _Atomic uint64_t decodes;      /* chunks (inner chunks) decoded */
  _Atomic uint64_t decode_ns;    /* time spent decoding them */
  _Atomic uint64_t named_ahead;  /* chunks named whole to a store with
                                    latency ahead of a reader (cursor.h) */
  _Atomic uint64_t forgets;      /* inodes the kernel forgot (FORGET and
                                    BATCH_FORGET): it dropped its entries
                                    for those names (memory pressure,
                                    drop_caches), so their next stat is a
                                    LOOKUP again, whatever a listing gave */
  _Atomic uint64_t errors[STATS_ERR_KINDS];
};

/* Add n to counter c (relaxed: a count, ordering nothing). */
static inline void stats_add(_Atomic uint64_t *c, uint64_t n) {
  atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Count a request of kind k. */
static inline void stats_request(struct zfs_stats *s, enum stats_req k) {
  stats_add(&s->requests[k], 1);
}

/* Count an error replied as errnum (positive). */
void stats_error(struct zfs_stats *s, int errnum);

/* Monotonic nanoseconds, for decode_ns. */
uint64_t stats_now_ns(void);

struct io_stats;
struct memo;
/* The text of /.zarrfs/stats, "name value" a line, into *out (malloc'd,
 * *len bytes): the counters s, the store's io (src/io/bytesrc.h) and the
 * memo's (src/util/memo.h). 0 or -ENOMEM. */
int stats_text(const struct zfs_stats *s, const struct io_stats *io,
               struct memo *memo, char **out, size_t *len);

#endif
