/* buf.h - growable byte buffer with a hard upper bound.
 *
 * Every growable buffer in zarrfs is created with a maximum size: decoding a
 * corrupt or hostile chunk can never make the daemon allocate without bound.
 * Growing past `max` fails with -EFBIG; a failed allocation with -ENOMEM. */
#ifndef ZARRFS_BUF_H
#define ZARRFS_BUF_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

struct zbuf {
  uint8_t *data; /* owned; NULL until the first growth */
  size_t len;    /* bytes in use */
  size_t cap;    /* bytes allocated */
  size_t max;    /* hard cap on len */
};

/* Start an empty buffer that may grow to at most max bytes. */
void zbuf_init(struct zbuf *b, size_t max);
/* Make room for `extra` more bytes. */
int zbuf_reserve(struct zbuf *b, size_t extra, struct zerr *err);
/* Append n bytes. */
int zbuf_append(struct zbuf *b, const void *p, size_t n, struct zerr *err);
/* Ask for transparent huge pages behind the 2 MiB pages inside [p, p+n)
 * when n is at least 4 MiB (a hint; nothing happens below that, or where
 * the kernel says no). For buffers of megabytes that are written whole:
 * one fault per 2 MiB instead of 512. zbuf_reserve does it for its own. */
void zbuf_prefer_huge(void *p, size_t n);
/* Hand the storage to the caller (who frees it with free()); b is reset.
 * Returns NULL (and *len = 0) for an empty buffer. */
uint8_t *zbuf_steal(struct zbuf *b, size_t *len);
/* Release the storage; NULL-safe. */
void zbuf_free(struct zbuf *b);

#endif
