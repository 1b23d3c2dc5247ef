/* buf.c - capped growable buffers and overflow-checked arithmetic. */
#include "buf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Start empty with a maximum size. */
void zbuf_init(struct zbuf *b, size_t max) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->max = max;
}

/* Grow geometrically, never past max. */
int zbuf_reserve(struct zbuf *b, size_t extra, struct zerr *err) {
  if (extra > b->max || b->len > b->max - extra)
    return zerr_set(err, EFBIG, "buffer would exceed its limit of %zu bytes",
                    b->max);
  size_t need = b->len + extra;
  if (need <= b->cap)
    return 0;
  size_t ncap = b->cap ? b->cap : 4096;
  while (ncap < need)
    ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
  if (ncap > b->max)
    ncap = b->max;
  uint8_t *p = realloc(b->data, ncap ? ncap : 1);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory growing a buffer to %zu bytes",
                    ncap);
  b->data = p;
  b->cap = ncap;
  return 0;
}

/* Copy n bytes to the end. */
int zbuf_append(struct zbuf *b, const void *p, size_t n, struct zerr *err) {
  ZTRY(zbuf_reserve(b, n, err));
  if (n)
    memcpy(b->data + b->len, p, n);
  b->len += n;
  return 0;
}

/* Give the storage away. */
uint8_t *zbuf_steal(struct zbuf *b, size_t *len) {
  uint8_t *p = b->data;
  *len = b->len;
  if (!p && b->len == 0) {
    b->cap = 0;
    return NULL;
  }
  b->data = NULL;
  b->len = b->cap = 0;
  return p;
}

/* Free storage; NULL-safe. */
void zbuf_free(struct zbuf *b) {
  if (!b)
    return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* Checked multiply. */
int zmul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (__builtin_mul_overflow(a, b, out))
    return -EOVERFLOW;
  return 0;
}

/* Checked add. */
int zadd_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (__builtin_add_overflow(a, b, out))
    return -EOVERFLOW;
  return 0;
}

/* Value of a base64 character (standard alphabet) or -1. */
static int b64val(char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '+')
    return 62;
  if (c == '/')
    return 63;
  return -1;
}

/* Standard base64 into fresh bytes. Padding may be present or left out,
 * but only at the end; a lone trailing character (6 bits) is refused. */
int zbase64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len) {
  size_t pad = 0;
  while (pad < 2 && n > pad && s[n - 1 - pad] == '=')
    pad++;
  size_t nd = n - pad; /* data characters */
  if ((pad && n % 4) || nd % 4 == 1)
    return -EINVAL;
  uint8_t *p = malloc(nd / 4 * 3 + 3);
  if (!p)
    return -ENOMEM;
  size_t len = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < nd; i++) {
    int v = b64val(s[i]);
    if (v < 0) {
      free(p);
      return -EINVAL;
    }
    acc = acc << 6 | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      p[len++] = (uint8_t)(acc >> bits);
    }
  }
  *out = p;
  *out_len = len;
  return 0;
}

/* Read a whole file (at most max bytes) into malloc'd memory. */
int zread_file(const char *path, size_t max, char **out, size_t *len,
               struct zerr *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return zerr_set(err,
                    errno == ENOENT || zerr_is_transient(errno) ? errno : EIO,
                    "%s", strerror(errno));
  struct zbuf b;
  zbuf_init(&b, max);
  char chunk[1 << 16];
  size_t n;
  int rc = 0;
  while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
    rc = zbuf_append(&b, chunk, n, err);
  if (rc == 0 && ferror(f))
    rc = zerr_set(err, EIO, "read error");
  fclose(f);
  if (rc) {
    zbuf_free(&b);
    return rc;
  }
  *out = (char *)zbuf_steal(&b, len);
  return 0;
}

/* qsort comparison of two uint64_t. */
static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Ascending. */
void zsort_u64(uint64_t *a, uint64_t n) {
  if (n > 1)
    qsort(a, (size_t)n, sizeof *a, u64_cmp);
}

/* Lower bound by binary search. */
uint64_t zrank_u64(const uint64_t *a, uint64_t n, uint64_t x) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (a[mid] < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Last element not above x: one before the first element above it. */
uint64_t zfloor_u64(const uint64_t *a, uint64_t n, uint64_t x) {
  uint64_t lo = 0, hi = n;
  while (lo < hi) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (a[mid] <= x)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo ? lo - 1 : 0;
}
