/* zmath.h - arithmetic on 64-bit numbers: overflow-checked operations
 * (inline: they sit in the decoders' size computations) and sorted arrays
 * (chunk indexes, text offsets). Pure functions, thread-safe. */
#ifndef ZARRFS_ZMATH_H
#define ZARRFS_ZMATH_H

#include <errno.h>
#include <stdint.h>

/* a * b with overflow check: returns 0 and sets *out, or -EOVERFLOW. */
static inline int zmul_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (__builtin_mul_overflow(a, b, out))
    return -EOVERFLOW;
  return 0;
}

/* a + b with overflow check. */
static inline int zadd_u64(uint64_t a, uint64_t b, uint64_t *out) {
  if (__builtin_add_overflow(a, b, out))
    return -EOVERFLOW;
  return 0;
}

/* Sort a[0..n) ascending. */
void zsort_u64(uint64_t *a, uint64_t n);
/* How many of the sorted a[0..n) are below x (the first index i with
 * a[i] >= x). */
uint64_t zrank_u64(const uint64_t *a, uint64_t n, uint64_t x);
/* The last index i < n with a[i] <= x, for a sorted a with a[0] <= x (0
 * when n is 0 or 1). */
uint64_t zfloor_u64(const uint64_t *a, uint64_t n, uint64_t x);

#endif
