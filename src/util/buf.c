/* buf.c - capped growable buffers (see buf.h). */
#include "buf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <stdint.h>

/* Buffers this large are backed by transparent huge pages where the
 * kernel allows (madvise, not the process-wide glibc tunable): a decoded
 * chunk of megabytes is written whole, so a 2 MiB page costs one fault
 * instead of 512 and is never left mostly unused. The tunable put every
 * heap of malloc on huge pages too, where a small block touched (a FUSE
 * thread's request buffer) made 2 MiB resident: mount_memory.sh's wide
 * row peaked 10-20 MB higher under load. */
#define ZBUF_HUGE_MIN ((size_t)4 << 20)
#define ZBUF_HUGE_PAGE ((uintptr_t)2 << 20)

/* See buf.h. */
void zbuf_prefer_huge(void *p, size_t n) {
#ifdef MADV_HUGEPAGE
  if (!p || n < ZBUF_HUGE_MIN)
    return;
  uintptr_t a = ((uintptr_t)p + ZBUF_HUGE_PAGE - 1) & ~(ZBUF_HUGE_PAGE - 1);
  uintptr_t e = ((uintptr_t)p + n) & ~(ZBUF_HUGE_PAGE - 1);
  if (e > a)
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* a hint: errors ignored */
#else
  (void)p;
  (void)n;
#endif
}

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
  /* An empty buffer gets what is asked (usually a size known up front: a
   * frame's content): doubling from 4 KiB would round a 19 MB chunk up to
   * 32 MiB, past malloc's mmap threshold, mapped and zeroed afresh each
   * time. */
  size_t ncap = b->cap ? b->cap : need > 4096 ? need : 4096;
  while (ncap < need)
    ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
  if (ncap > b->max)
    ncap = b->max;
  uint8_t *p = realloc(b->data, ncap ? ncap : 1);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory growing a buffer to %zu bytes",
                    ncap);
  zbuf_prefer_huge(p, ncap);
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
