/* remote.h - remote objects (http://, https://, s3://, gs://, az:// URLs)
 * as byte sources, with one block cache for the whole mount.
 *
 * A remote byte source is a window of a remote object. Its reads go
 * through a block cache (a memo of its own, src/util/memo.h): objects are cut
 * into aligned blocks (block_size), a read fetches the blocks it lacks as
 * contiguous runs (one ranged GET per run of up to max_request bytes, runs
 * fetched in parallel), concurrent readers of a block share one transfer
 * (single flight), and nearby ranges of one object fall in the same blocks
 * (block_size is the coalescing gap). Blocks are keyed by the object's URL,
 * so every source of one URL shares them. Every request for a run of
 * blocks claims them first; whoever needs one meanwhile (a reader, a
 * prefetch worker) waits for that request and takes its bytes, so no
 * range is fetched twice while in flight or cached.
 *
 * Large reads (8 blocks or more) take what is cached or in flight and
 * fetch the missing runs in parallel parts: into the blocks when a reader
 * hinted the object (remote_prefetch), else straight into the caller's
 * buffer (edge blocks whole and cached); the rest of a small object after
 * such a read is fetched beside it.
 *
 * Sequential reads of a source (each read starting where the last ended)
 * start read-ahead on a small worker pool: the window grows from one block
 * to readahead bytes, with at most a few requests in flight per source and
 * `workers` overall. Read-ahead blocks live in the same budget
 * (cache_size), which does not grow with the number of open files.
 *
 * Sizes: a window's size is given by whoever names it (a manifest entry, a
 * listing); opening a whole object of unknown size costs one GET of its
 * first block, whose Content-Range names the size (no HEAD request), and
 * that block stays cached. Learned sizes (and absences) are remembered by
 * URL for the mount's life.
 *
 * Versions: the first answer about an object that names a version (ETag,
 * else Last-Modified, else its size) fixes the version the mount reads;
 * later requests ask for it (If-Match, If-Unmodified-Since), every block
 * carries the version it came from, and a 412 or another version makes
 * every read of the object fail with -EIO "object changed while mounted":
 * a read never returns bytes of two versions.
 *
 * Hosts that ignore Range (a 200 with the whole object to a range that
 * ends inside it) are remembered, with one log line each; their objects
 * are then read by one stream per object from its start into the blocks,
 * paced by the readers (at most a window of min(readahead, cache_size/4)
 * ahead), so reading an object whole costs one transfer, not one per
 * block. At most 4 such streams run at once; a stream nobody reads from
 * for 5 s ends.
 *
 * Thread-safe; immutable configuration. */
#ifndef ZARRFS_REMOTE_H
#define ZARRFS_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "../io/bytesrc.h"
#include "../util/err.h"
#include "http.h"

struct s3_config;

struct remote_config {
  struct http_config http;
  size_t cache_size;  /* block cache budget; default 64 MiB */
  size_t block_size;  /* block and first-request size; default 64 KiB */
  size_t max_request; /* largest single GET; default 8 MiB */
  size_t readahead;   /* largest read-ahead window per source; 32 MiB */
  int workers;        /* read-ahead and large-read threads; default 4, at
                         least a quarter of http.max_conns (0: none) */
};

/* Fill *c with the defaults above (and http_config_default). */
void remote_config_default(struct remote_config *c);

struct remote;

/* A remote context. s3 (may be NULL: s3:// URLs are then refused) is
 * taken over (freed with the context). *out is owned by the caller
 * (remote_free). */
int remote_new(const struct remote_config *cfg, struct s3_config *s3,
               struct remote **out, struct zerr *err);
/* Stop the workers and free; NULL-safe. Sources may outlive the context
 * only if they are not read after it (as with store byte sources). */
void remote_free(struct remote *r);
/* Make every wait and transfer give up with -EINTR (async-signal-safe:
 * one atomic store; for the shutdown handler). */
void remote_stop(struct remote *r);

/* Is s an http://, https://, s3://, gs:// or az:// URL? */
int remote_is_url(const char *s);
/* Those schemes, for messages ("http://, https://, ... and az://"). */
const char *remote_url_schemes(void);

struct azure_config;
/* The settings of Cloud Storage (gs:// URLs) and Azure Blob Storage
 * (az:// URLs, and https://ACCOUNT.blob.core.windows.net URLs of the
 * configured endpoint), either NULL (those URLs are then refused): taken
 * over, freed with r. Call before any request. */
int remote_set_clouds(struct remote *r, struct s3_config *gs,
                      struct azure_config *az, struct zerr *err);

/* Open bytes [off, off+len) of the object at url as a byte source. len
 * UINT64_MAX: the whole object from off, size learned from the first
 * response (one GET, cached). A window is not checked against the
 * object's size until read (a read past the end is -EIO naming the URL).
 * allow_link_local: the user named this address explicitly (http.h).
 * Counters in stats (may be NULL) count bytes and reads of this source.
 * Errors: an absent object -ENOENT, forbidden -EACCES, transient
 * -ETIMEDOUT / -EINTR / -ENOMEM, else -EIO. New reference in *out. */
int remote_open(struct remote *r, const char *url, uint64_t off, uint64_t len,
                int allow_link_local, struct io_stats *stats,
                struct bytesrc **out, struct zerr *err);

/* remote_open whose redirects are checked against scope (a reference
 * taken; NULL: anywhere, as remote_open): kerchunk and manifest targets,
 * Icechunk virtual chunks (url.h). */
struct url_scope;
int remote_open_scoped(struct remote *r, const char *url, uint64_t off,
                       uint64_t len, int allow_link_local,
                       struct url_scope *scope, struct io_stats *stats,
                       struct bytesrc **out, struct zerr *err);

/* A whole small object (metadata, a manifest, a reference file) into
 * malloc'd memory (NUL-terminated, not counted in *len), refusing objects
 * above max with -EFBIG. Same errors as remote_open. */
int remote_read_all(struct remote *r, const char *url, size_t max,
                    uint8_t **out, size_t *len, struct zerr *err);

/* The transport and S3 settings, for stores that issue their own requests
 * (S3 listings). Borrowed. */
struct http_client *remote_http(struct remote *r);
const struct s3_config *remote_s3(const struct remote *r);
/* The settings r was made with (borrowed): for another context alike. */
const struct remote_config *remote_config_of(const struct remote *r);

const struct s3_config *remote_gcs(const struct remote *r);
const struct azure_config *remote_azure(const struct remote *r);

/* A request to req_url signed as objects of store_url's service are (for
 * listings: "s3://...", "gs://...", "az://..."): req_url and log_url are
 * borrowed and must outlive *q. Unsigned when access is anonymous. */
void remote_store_request(struct remote *r, const char *store_url,
                          const char *req_url, const char *log_url,
                          struct http_req *q);

/* Fetching ahead across objects: a reader going through objects in
 * sequence names the ones it will read next. Each hint becomes a job on
 * the prefetch workers (three quarters of -o connections): the object's
 * first block (which names its size), then the rest in runs of
 * max_request fetched in parallel, into the block cache. Memory: from the
 * hint until remote_hint_drop, the hint's bytes count against a budget
 * of three quarters of the cache, and one owner (a reader) holds at most an
 * equal share of it among the owners holding hints; hints beyond are refused.
 * Blocks a reader's large read fetched straight into its buffer lately are
 * skipped by the hint's jobs and given back from its charge.
 * Fairness: a free worker takes the oldest job of the owner with the
 * fewest jobs running. A hint is only a hint: failures are left for the
 * reader to meet. */
struct remote_hint;

/* Fetch the whole object at url ahead for owner (any non-NULL pointer
 * naming one reader); head_only: only its first block (which names its
 * size). 0 and a hint in *out (the caller's, dropped with
 * remote_hint_drop), or -EAGAIN (the budget, the owner's share or the
 * queue is full: try again once the reader has moved on), -EINVAL,
 * -ENOMEM. */
int remote_prefetch(struct remote *r, const char *url, int allow_link_local,
                    int head_only, const void *owner, struct remote_hint **out);
/* The reader reached the object or moved away: its bytes stop counting
 * (they stay cached), its jobs not started do nothing. NULL-safe. */
void remote_hint_drop(struct remote *r, struct remote_hint *h);

/* What fetching ahead holds now (for tests and pacing). */
struct remote_pf_stats {
  uint64_t budget;    /* bytes hints may hold in all */
  uint64_t held;      /* bytes held by hints now */
  uint64_t peak_held; /* most ever held */
  int queued;         /* jobs waiting */
  int inflight;       /* jobs running */
  int peak_inflight;  /* most ever running at once */
};
/* Fill *st with what fetching ahead holds now. */
void remote_prefetch_stats(struct remote *r, struct remote_pf_stats *st);

/* Requests so far (http_requests of the client). */
uint64_t remote_requests(const struct remote *r);

#endif
