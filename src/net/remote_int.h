/* remote_int.h - what remote.c, rflight.c, rstream.c, rversion.c and
 * rprefetch.c share: the context, a remote source, a cached block, and the
 * functions one calls in another. Private to src/net: nothing outside includes
 * it. Include remote.h before it: remote.c and remote.h are one module, so
 * including remote.h here would close a circle in the include graph. */
#ifndef ZARRFS_REMOTE_INT_H
#define ZARRFS_REMOTE_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "../util/memo.h"
#include "azure.h"
#include "s3.h"

/* Read-ahead jobs queued at most (beyond: dropped, it is only a hint). */
#define RA_QUEUE 64
/* Key tags: a block of an object, the size of an object, "the object
 * changed while mounted". */
#define TAG_BLOCK 0x424c4bu
#define TAG_SIZE 0x53495au
#define TAG_CHANGED 0x434847u
#define TAG_VERSION 0x564552u
/* A window read whole in one request (rversion_read_whole); the
 * window's length is in the tag's upper bits. */
#define TAG_WHOLE 0x57484cu
/* What a read of blocks returns when it met an object that names no
 * version but its size (or none): the source must be read whole
 * (rversion_read_whole). Never leaves src/net. */
#define RV_WHOLE (-EXDEV)
/* Longest precondition header kept ("If-Match: ETAG"). */
#define RV_COND_MAX 200
/* Hosts remembered as ignoring Range. */
#define NORANGE_HOSTS 64
/* Objects of such hosts streamed at once (more readers fall back to
 * ranged requests, answered whole and cut). */
#define STREAMS_MAX 4
/* The name of a stream's thread (at most 15 bytes). */
#define RSTREAM_THREAD_NAME "zarrfs-stream"

/* A job of the workers: a read-ahead run, or a run a large read claimed
 * (fl, a reference; dst: where its bytes go, NULL: into the blocks). */
struct job {
  struct bytesrc *src; /* a reference, dropped when done */
  uint64_t block;      /* read-ahead: first block */
  uint32_t n;          /* read-ahead: blocks */
  struct rflight *fl;
  uint8_t *dst;
  uint64_t o, len; /* dst: the object bytes that go there */
};

/* A run of blocks one transfer is bringing (rflight.c). Those who need
 * them join it and wait, then take the blocks from it. A flight that
 * brings bytes straight into a reader's buffer makes its whole blocks
 * for its joiners only when it has some. */
struct cancel; /* src/util/cancel.h */

struct rflight {
  struct rflight *next; /* in remote.flights while open */
  struct memo_key key;  /* the object (v[0] 0) */
  uint64_t block;       /* first block */
  uint32_t n;           /* blocks */
  int refs, joiners;    /* under remote.flock */
  int open;             /* in the table: may be joined */
  int done, rc;         /* finished, and how */
  struct zerr err;
  /* A large read's run: its reader's token (that reader waits for the
   * run), which whoever runs it enters (src/util/cancel.h); else NULL. */
  struct cancel *cancel;
  uint64_t total;       /* the object's size the answer named, or UINT64_MAX */
  atomic_int started;   /* its fetch began (a worker or its reader) */
  int delivered;        /* straight into a reader's buffer: remembered */
  struct rblock *blk[]; /* n entries once done (NULL: not brought whole) */
};
/* Runs brought straight into readers' buffers remembered (rflight.c). */
#define RFLIGHT_DELIVERED 64
struct rdelivered {
  struct memo_key key; /* the object (v[0] 0) */
  uint64_t block;
  uint32_t n;
};
#define RFLIGHT_CLAIMED 0
#define RFLIGHT_JOINED 1
#define RFLIGHT_CACHED 2

struct rstream;
struct remote_pf;

struct remote {
  struct remote_config cfg;
  struct http_client *http;
  struct s3_config *s3; /* owned, may be NULL */
  struct s3_signing sign;
  int have_sign;
  struct s3_config *gs; /* Cloud Storage (gs://): owned, may be NULL */
  struct s3_signing gs_sign;
  int have_gs_sign;
  struct azure_config *az; /* Azure (az://): owned, may be NULL */
  struct memo *memo;       /* blocks (objects) and sizes (values) */
  atomic_int stop;
  /* read-ahead workers */
  pthread_mutex_t lock; /* guards the queue and quit (a leaf) */
  pthread_cond_t more;
  struct job queue[RA_QUEUE];
  int qhead, qlen, quit, started;
  pthread_t *threads;
  int n_threads;
  /* hosts that ignore Range, and the streams reading their objects */
  pthread_mutex_t slock; /* guards hosts, streams, n_streams, sthreads;
                          takes rstream.lock and rsrc.vlock (leaves)
                          under it, nothing else (rstream.c) */
  pthread_cond_t sgone;  /* a stream thread ended */
  char hosts[NORANGE_HOSTS][128];
  int n_hosts;
  struct rstream *streams[STREAMS_MAX];
  int n_streams; /* stream threads running */
  /* Stream threads to join: each is joined before its record is taken
   * again and in rstream_stop_all. A detached thread could still be in
   * its exit (the libraries' per-thread destructors) after the remote
   * was freed, while the daemon's exit ran the libraries' own. */
  struct {
    pthread_t t;
    int used;  /* a thread was started with this record */
    int ended; /* ...and ran its last line under slock */
  } sthreads[STREAMS_MAX];
  /* blocks in flight (rflight.c) */
  pthread_mutex_t flock; /* guards flights and every rflight's fields */
  pthread_cond_t fdone;  /* a flight ended */
  struct rflight *flights;
  struct rdelivered delivered[RFLIGHT_DELIVERED]; /* a ring */
  uint64_t ndelivered;                            /* ever recorded */
  /* fetching ahead of readers (rprefetch.c) */
  struct remote_pf *pf;
};

/* A fetched block: data[len], len < block_size only at the object's end.
 * vhash identifies the version it came from (0: unknown), cond is the
 * precondition that asks for that version ("" when none can). */
struct rblock {
  struct zobj obj;
  size_t len;
  uint64_t total; /* the object's size its answer named, or UINT64_MAX */
  uint64_t vhash;
  char cond[RV_COND_MAX];
  uint8_t data[];
};

/* A remote byte source: a window of an object. */
struct rsrc {
  struct bytesrc base;
  struct remote *r;
  char *url;     /* as named (messages) */
  char *req_url; /* what is requested (s3:// resolved) */
  struct http_req req;
  uint64_t win; /* window start in the object */
  struct io_stats *stats;
  struct memo_key key;     /* object identity: v[0] block, v[1] tag, v[2..] */
  _Atomic uint64_t next;   /* where the last read ended (window) */
  _Atomic uint64_t ra_end; /* object offset read-ahead was issued to */
  _Atomic uint64_t ra_win; /* current read-ahead window (bytes) */
  _Atomic int ra_inflight;
  /* The version this source reads: learned from the first answer that
   * names one, asked for (If-Match, If-Unmodified-Since) from then on. */
  pthread_mutex_t vlock; /* guards have_v, vhash, cond (a leaf) */
  int have_v;
  uint64_t vhash;
  char cond[RV_COND_MAX];
  atomic_int changed;
  atomic_int whole; /* read whole: its object names no version */
  /* Pinned ahead (rversion_pin): the checksum for messages ("" when not
   * pinned); cond then asks for it from the first request. */
  char pin[RV_COND_MAX];
  struct url_scope *scope; /* where redirects may lead (a reference), or
                              NULL: anywhere (http.h) */
};

/* A fill of block runs: blocks [block, block+n) of s's object, the first
 * the fill's result. */
struct fetch {
  struct rsrc *s;
  uint64_t block; /* first block of the run */
  uint32_t n;     /* blocks in the run */
  struct io_stats *stats;
};

/* ---- rblock.c (the bottom: every file here calls it, it calls none) ---- */

/* The memo key of url with tag (TAG_BLOCK, TAG_SIZE): the URL's identity
 * words in v[2..], v[0] (the block) 0. */
void remote_url_key(const char *url, uint64_t tag, struct memo_key *k);

/* Same object? (keys compared without their block word) */
int remote_same_object(const struct memo_key *a, const struct memo_key *b);

/* zobj destructor of a struct rblock. */
void remote_rblock_destroy(struct zobj *o);

/* Is a block of object okey there, or being filled (someone brings it)? */
int remote_block_cached(struct remote *r, const struct memo_key *okey,
                        uint64_t block);

/* Blocks from b on that are missing, up to last (inclusive) and one
 * request's worth. */
uint32_t remote_missing_run(struct remote *r, const struct memo_key *okey,
                            uint64_t b, uint64_t last);

/* ---- remote.c (the top: it calls every file here, none calls it) ---- */

/* The request URL of url into *out (the caller frees it): itself for
 * http(s), the S3 endpoint URL of an s3:// one. */
int remote_request_url(struct remote *r, const char *url, char **out,
                       struct zerr *err);

/* ---- rversion.c ---- */

/* The version a response to req (may be NULL) names as a hash (0: none;
 * a value no version has when the answer contradicts the precondition
 * req carried), and in cond (RV_COND_MAX) the precondition that asks for
 * it ("" when none can). */
uint64_t rversion_of(const struct http_meta *m, const struct http_req *req,
                     char *cond);

/* The object of s changed while mounted: remembered for every source of
 * it; returns -EIO with the reason in err. */
int rversion_changed(struct rsrc *s, struct zerr *err);

/* Is s's object known to have changed? */
int rversion_is_changed(struct rsrc *s);

/* Bytes of version vh (cond asks for it) are about to be used by s: 0,
 * -EIO when the object changed, or RV_WHOLE when its answer named no
 * version but the size (or none): bytes of several answers may not be
 * spliced then. */
int rversion_check(struct rsrc *s, uint64_t vh, const char *cond,
                   struct zerr *err);

/* s's request into q, asking for the version it reads once it knows one
 * (cond: room for the header, RV_COND_MAX; q points into it). */
void rversion_request(struct rsrc *s, struct http_req *q, char *cond);

/* Must s be read whole (its object names no version but its size)? */
int rversion_needs_whole(struct rsrc *s);

/* Bytes [off, off+len) of s's window from one answer holding the whole
 * window (one request, kept in the block cache): for objects that name
 * no version. -EIO when the window is more than a quarter of the
 * cache. */
int rversion_read_whole(struct rsrc *s, uint64_t off, size_t len, void *dst,
                        struct zerr *err);

/* ---- rstream.c ---- */

/* Does url's host ignore Range? */
int rstream_host_ignores_range(struct remote *r, const char *url);

/* url's host answered a range request with the whole object: remember
 * it (one log line per host). */
void rstream_host_mark_norange(struct remote *r, const char *url,
                               const char *log_url);

/* Block b of s from a stream of its object: 0 with a pin in *ref; 1 when
 * the stream cannot give it (the caller asks for the range); a failure
 * that concerns the object itself. */
int rstream_block(struct rsrc *s, uint64_t b, struct memo_ref **ref,
                  struct zerr *err);

/* End every stream of r and wait for their threads (remote_free). */
void rstream_stop_all(struct remote *r);

/* ---- rprefetch.c ---- */

/* What rprefetch.c calls in remote.c, above it: given down by remote_new
 * so that calls go one way (remote.c -> rprefetch.c, tests/calls.sh). */
struct rprefetch_up {
  /* remote_open */
  int (*open)(struct remote *r, const char *url, uint64_t off, uint64_t len,
              int allow_link_local, struct io_stats *stats,
              struct bytesrc **out, struct zerr *err);
  /* remote_request_url */
  int (*request_url)(struct remote *r, const char *url, char **out,
                     struct zerr *err);
};

/* The prefetch state of r (workers start at the first hint), calling
 * remote.c through up (borrowed: static); 0 or -ENOMEM. */
int rprefetch_new(struct remote *r, const struct rprefetch_up *up);

/* Stop the prefetch workers and free their state; NULL-safe state. */
void rprefetch_free(struct remote *r);

/* Has a reader hinted the whole object okey (a hint not dropped)? */
int rprefetch_hinted(struct remote *r, const struct memo_key *okey);

/* ---- rflight.c ---- */

/* memo fill of a block (a run starting there); ctx is a struct fetch. */
int remote_block_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err);

/* Queue a job for the workers: a read-ahead run of s's object (fl NULL: a
 * hint, dropped when the queue is full), or claimed run fl (referenced by
 * the job; dst, o, len as for rflight_run_claimed; its reader waits for
 * it). 0, or -1 when refused. */
int remote_job_submit(struct rsrc *s, uint64_t block, uint32_t n,
                      struct rflight *fl, uint8_t *dst, uint64_t o,
                      uint64_t len);

/* Claim blocks from b on (up to last, at most max of them) of object okey:
 * RFLIGHT_JOINED with *out another transfer bringing b (a reference),
 * RFLIGHT_CACHED when b is cached (unless ignore_cache), else
 * RFLIGHT_CLAIMED with *out a new flight of the run of blocks that are
 * neither cached nor in flight (its owner must rflight_end it), or -ENOMEM. */
int rflight_claim(struct remote *r, const struct memo_key *okey, uint64_t b,
                  uint64_t last, uint32_t max, int ignore_cache,
                  struct rflight **out);

/* Close f to newcomers; 1 when someone joined it. */
int rflight_close(struct remote *r, struct rflight *f);

/* The owner's end of f: rc (err when negative), the object size the
 * answer named (UINT64_MAX: none), f->blk filled by the owner (the
 * references are f's). Wakes the waiters; drops the owner's reference. */
void rflight_end(struct remote *r, struct rflight *f, int rc,
                 const struct zerr *err, uint64_t total);

/* Wait until f is done; its result (err set when negative). may_leave:
 * -EINTR as soon as the calling thread's request is abandoned (then f
 * must not be read: drop the reference). */
int rflight_wait(struct remote *r, struct rflight *f, int may_leave,
                 struct zerr *err);

/* Block b of a finished flight (borrowed while f is held), or NULL. */
struct rblock *rflight_block(struct rflight *f, uint64_t b);

/* Take an extra reference to f. */
void rflight_ref(struct remote *r, struct rflight *f);

/* Drop a reference; the last frees f and its blocks. NULL-safe. */
void rflight_put(struct remote *r, struct rflight *f);

/* Block b of object okey for a memo fill (a new reference in *obj): from
 * a transfer bringing it already, else fetched with request req and the
 * blocks after it up to last (at most n, none cached or in flight) in one
 * GET. total (may be NULL): the object's size the answer named. */
int rflight_get_block(struct remote *r, const struct http_req *req,
                      const struct memo_key *okey, uint64_t b, uint64_t last,
                      uint32_t n, struct io_stats *stats, struct zobj **obj,
                      size_t *cost, uint64_t *total, struct zerr *err);

/* Fetch run f that a large read of object bytes [o, o+len) of s claimed,
 * and end it: dst NULL, into the blocks; else into the reader's buffer
 * dst (object offset o). */
void rflight_run_claimed(struct rsrc *s, struct rflight *f, uint8_t *dst,
                         uint64_t o, uint64_t len, struct io_stats *stats);

/* Read object bytes [o, o+len) of s (many blocks) into dst: blocks cached
 * or in flight taken, the missing runs fetched in parallel parts. */
int rflight_large_read(struct rsrc *s, uint64_t o, size_t len, uint8_t *dst,
                       int hinted, struct zerr *err);

/* Is block b of okey in flight? 1 and in *end the block after that
 * flight. delivered: also a block a reader's large read brought straight
 * into its buffer lately (2, and the end of that run). */
int rflight_covered(struct remote *r, const struct memo_key *okey, uint64_t b,
                    int delivered, uint64_t *end);

#endif
