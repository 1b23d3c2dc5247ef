/* http.h - the HTTP transport of remote stores: ranged and whole GETs over
 * libcurl, with connection reuse, time bounds, retries and validation.
 *
 * One client per mount. It owns a pool of curl easy handles sharing one
 * connection cache, DNS cache and TLS session cache (a curl share with a
 * lock per data kind), so connections are reused across requests and FUSE
 * threads; HTTP/2 is negotiated where the server offers it (TLS ALPN).
 *
 * Every request is bounded: a connect timeout, a stall timeout (no byte for
 * stall_ms fails the attempt) and a total bound per operation across all
 * its attempts (op_ms). Failures that may pass (5xx, 429, 408, timeouts,
 * resets, short bodies) are retried with exponential backoff and full
 * jitter, honouring Retry-After. After the last attempt the result is
 * -ETIMEDOUT (transient: never remembered by the caches, EIO at the FUSE
 * boundary) with a message naming the URL (no credentials), the status or
 * curl error and the attempt count. Waits and transfers end with -EINTR
 * once the stop flag is set.
 *
 * A request may carry a precondition (http_req.cond): a 412 answer is
 * -ESTALE, the object changed. Responses report their validators (ETag,
 * Last-Modified) and whether a range request was answered whole.
 *
 * Redirects are followed here, not by libcurl (at most 5), each target
 * checked before it is asked: http may lead to https, https only to
 * https; the request's own check (http_req.redirect) decides whether the
 * target lies where the request may go. Credentials (SigV4, the shared
 * headers, the signer's) go only to the origin of the URL asked for: a
 * redirect to another host, port or scheme is followed without them; a
 * redirect within it is signed for its own URL. Connections to
 * link-local addresses (169.254.0.0/16, fe80::/10, where cloud metadata
 * services live) are refused unless the request allows them
 * (http_req.allow_link_local for its URL, the redirect check for a
 * target), checked on the address actually connected.
 *
 * Every request says `Accept-Encoding: identity`, and an answer whose
 * body is encoded anyway (Content-Encoding: gzip, ...) is refused before
 * any of its bytes is used: they are not the object's.
 *
 * Thread-safe: any number of threads may issue requests at once; at most
 * max_conns transfers run at the same time (the rest wait their turn). */
#ifndef ZARRFS_HTTP_H
#define ZARRFS_HTTP_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

struct curl_slist;

struct http_config {
  long connect_ms;      /* connect (incl. TLS handshake) bound; default 10 s */
  long stall_ms;        /* no byte for this long fails an attempt; 30 s */
  long op_ms;           /* total bound of one operation, all attempts; 60 s */
  int max_attempts;     /* attempts per operation; default 6 */
  long backoff_base_ms; /* first backoff cap; default 100 ms */
  long backoff_cap_ms;  /* largest backoff; default 10 s */
  int max_conns;        /* transfers at once; default 32 */
  const atomic_int *stop; /* non-zero: give up with -EINTR; may be NULL */
};

/* Fill *c with the defaults above. */
void http_config_default(struct http_config *c);

/* Signs each attempt of a request whose signature covers headers that
 * vary per attempt (Azure Shared Key: the date, the Range, the
 * precondition). sign appends the headers to send (x-ms-date,
 * Authorization, ...) to *hdrs, given the request URL, its Range value
 * ("bytes=A-B", NULL for a plain GET) and its precondition line (or
 * NULL); 0, or a negative errno with err set. ud is borrowed. */
struct http_signer {
  int (*sign)(const void *ud, const char *url, const char *range,
              const char *cond, struct curl_slist **hdrs, struct zerr *err);
  const void *ud;
};

/* What one request needs besides its range. All borrowed for the call. */
struct http_req {
  const char *url;            /* absolute; path and query already encoded */
  const char *log_url;        /* for messages (no credentials); NULL = url */
  struct curl_slist *headers; /* extra headers, may be NULL */
  const char *aws_sigv4;      /* CURLOPT_AWS_SIGV4 ("aws:amz:REGION:s3") or
                                 NULL for an unsigned request */
  const char *userpwd;        /* "ACCESS_KEY:SECRET" for aws_sigv4; never
                                 logged */
  int allow_link_local;       /* 1: the user named this address explicitly */
  const char *cond;           /* a precondition header line ("If-Match: ..."
                                 or "If-Unmodified-Since: ..."), or NULL */
  const struct http_signer *signer; /* per-attempt signing, or NULL */
  /* May a redirect lead to url (absolute, normalised)? 0 and in
   * *allow_link_local whether its address may be link-local, or a
   * negative errno with the reason (the request fails with it). NULL:
   * anywhere the scheme rule allows, link-local only at the origin of
   * url when allow_link_local. */
  int (*redirect)(const void *ud, const char *url, int *allow_link_local,
                  struct zerr *err);
  const void *redirect_ud; /* for redirect; borrowed */
};

/* What a response said about the object, besides its bytes. */
struct http_meta {
  uint64_t total;    /* the object's size, UINT64_MAX when not named */
  int whole;         /* a range request answered 200: the server ignores
                        Range */
  char etag[128];    /* ETag ("" when absent or too long) */
  char modified[64]; /* Last-Modified ("" when absent) */
};

/* Receives a streamed body: n bytes at object offset off, in order from
 * 0 (a retry starts again at 0). Returns 0 to go on, 1 to end the
 * transfer (it has what it wants), or a negative errno to fail it (err
 * set). */
typedef int (*http_sink_fn)(void *ud, uint64_t off, const uint8_t *p, size_t n,
                            const struct http_meta *m, struct zerr *err);

struct http_client;

/* A client. *out is owned by the caller (http_client_free). Calls
 * curl_global_init once per process (not thread-safe: call from main
 * before starting threads). */
int http_client_new(const struct http_config *cfg, struct http_client **out,
                    struct zerr *err);
/* Free; NULL-safe. No request may be running. */
void http_client_free(struct http_client *c);

/* Bytes [off, off+len) of the object at r->url into dst. Sends
 * `Range: bytes=off-(off+len-1)`; a 206 is accepted only with a matching
 * Content-Range; a 200 (a server that ignores ranges: meta->whole) is
 * read from its start and cut to the range (then the transfer is
 * abandoned). A range that runs past the end of the object gives the
 * bytes up to the end: *got (may be less than len only then). meta (may
 * be NULL) gets the object's size when the response names it, and its
 * validators. A 416 for off >= size is *got = 0 and meta->total = size.
 * Errors: 404 (and 410) -ENOENT; 403 and 401 -EACCES; 412 (r->cond
 * failed: the object changed) -ESTALE; other 4xx -EIO; after retries
 * -ETIMEDOUT; stop -EINTR; refused address or redirect -EACCES. */
int http_get_range(struct http_client *c, const struct http_req *r,
                   uint64_t off, size_t len, void *dst, size_t *got,
                   struct http_meta *meta, struct zerr *err);

/* The whole object at r->url, streamed to sink as it arrives (no Range
 * header). Bounded by the stall time per attempt, not by the total
 * operation time (the sink may pace a long transfer). Same errors as
 * http_get_range, and the sink's. */
int http_get_stream(struct http_client *c, const struct http_req *r,
                    http_sink_fn sink, void *ud, struct zerr *err);

/* A whole (small) object: malloc'd into *out (NUL-terminated, not
 * counted in *len; caller frees). Refuses bodies above max with -EFBIG.
 * Same errors as http_get_range. */
int http_get_all(struct http_client *c, const struct http_req *r, size_t max,
                 uint8_t **out, size_t *len, struct zerr *err);

/* Requests sent (attempts, including retries): for tests and benchmarks. */
uint64_t http_requests(const struct http_client *c);

#endif
