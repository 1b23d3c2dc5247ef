/* zmath.c - sorted arrays of 64-bit numbers (see zmath.h). */
#include "zmath.h"

#include <stdlib.h>

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
