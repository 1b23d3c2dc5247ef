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
/* Hand the storage to the caller (who frees it with free()); b is reset.
 * Returns NULL (and *len = 0) for an empty buffer. */
uint8_t *zbuf_steal(struct zbuf *b, size_t *len);
/* Release the storage; NULL-safe. */
void zbuf_free(struct zbuf *b);

/* a * b with overflow check: returns 0 and sets *out, or -EOVERFLOW. */
int zmul_u64(uint64_t a, uint64_t b, uint64_t *out);
/* a + b with overflow check. */
int zadd_u64(uint64_t a, uint64_t b, uint64_t *out);

/* Sorted arrays of 64-bit numbers (chunk indexes, text offsets). */
/* Sort a[0..n) ascending. */
void zsort_u64(uint64_t *a, uint64_t n);
/* How many of the sorted a[0..n) are below x (the first index i with
 * a[i] >= x). */
uint64_t zrank_u64(const uint64_t *a, uint64_t n, uint64_t x);
/* The last index i < n with a[i] <= x, for a sorted a with a[0] <= x (0
 * when n is 0 or 1). */
uint64_t zfloor_u64(const uint64_t *a, uint64_t n, uint64_t x);

/* Decode n characters of standard base64 (padding optional) into fresh
 * bytes (*out, owned by the caller; free()). -EINVAL on a bad character or
 * length, -ENOMEM. */
int zbase64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len);

/* Read the whole file at path into malloc'd memory (*out, caller frees;
 * NULL when empty), refusing files above max bytes (-EFBIG). */
int zread_file(const char *path, size_t max, char **out, size_t *len,
               struct zerr *err);

#endif
