/* zmath.c - sorted arrays of 64-bit numbers (see zmath.h). */
#include "zmath.h"

#include <stdlib.h>
#include <string.h>

/* qsort comparison of two uint64_t. */
static int u64_cmp(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* Ascending. */
void zsort_u64(uint64_t *a, uint64_t n) {
  if (n < 256) {
    if (n > 1)
      qsort(a, (size_t)n, sizeof *a, u64_cmp);
    return;
  }
  /* An LSD radix sort by 11-bit digits, skipping the digits every value
   * shares (chunk indices of a listing: two or three passes for 10^6), so
   * a listing of 10^6 keys sorts in milliseconds rather than the 10^8
   * compares of qsort; without memory for the copy, qsort. */
  uint64_t all_or = 0, all_and = ~(uint64_t)0;
  for (uint64_t i = 0; i < n; i++) {
    all_or |= a[i];
    all_and &= a[i];
  }
  uint64_t vary = all_or ^ all_and;
  uint64_t *tmp = n <= SIZE_MAX / sizeof *a ? malloc((size_t)n * sizeof *a)
                                            : NULL;
  if (!tmp) {
    qsort(a, (size_t)n, sizeof *a, u64_cmp);
    return;
  }
  uint64_t *src = a, *dst = tmp;
  for (int shift = 0; shift < 64; shift += 11) {
    if (!((vary >> shift) & 0x7ff))
      continue;
    uint64_t count[2048] = {0};
    for (uint64_t i = 0; i < n; i++)
      count[(src[i] >> shift) & 0x7ff]++;
    uint64_t at = 0;
    for (int d = 0; d < 2048; d++) {
      uint64_t c = count[d];
      count[d] = at;
      at += c;
    }
    for (uint64_t i = 0; i < n; i++)
      dst[count[(src[i] >> shift) & 0x7ff]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  if (src != a)
    memcpy(a, src, (size_t)n * sizeof *a);
  free(tmp);
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
