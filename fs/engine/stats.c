/* stats.c - the live counters of a mount, in words (see stats.h). */
#define _GNU_SOURCE /* open_memstream */
#include "stats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../../src/io/bytesrc.h"
#include "../../src/util/memo.h"

/* See stats.h. */
void stats_error(struct zfs_stats *s, int errnum) {
  enum stats_err k;
  switch (errnum) {
  case EIO:
    k = STATS_EIO;
    break;
  case ENOENT:
    k = STATS_ENOENT;
    break;
  case ENOMEM:
    k = STATS_ENOMEM;
    break;
  case EINTR:
    k = STATS_EINTR;
    break;
  default:
    k = STATS_EOTHER;
  }
  stats_add(&s->errors[k], 1);
}

/* See stats.h. */
uint64_t stats_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Relaxed load of a counter. */
static unsigned long long get(const _Atomic uint64_t *c) {
  return atomic_load_explicit(c, memory_order_relaxed);
}

/* See stats.h. */
int stats_text(const struct zfs_stats *s, const struct io_stats *io,
               struct memo *memo, char **out, size_t *len) {
  static const char *const req[STATS_REQ_KINDS] = {"lookup", "getattr",
                                                   "readdir", "open", "read"};
  static const char *const errs[STATS_ERR_KINDS] = {"eio", "enoent", "enomem",
                                                    "eintr", "other"};
  *out = NULL;
  *len = 0;
  FILE *f = open_memstream(out, len);
  if (!f)
    return -ENOMEM;
  unsigned long long total = 0;
  for (int k = 0; k < STATS_REQ_KINDS; k++)
    total += get(&s->requests[k]);
  fprintf(f, "requests %llu\n", total);
  for (int k = 0; k < STATS_REQ_KINDS; k++)
    fprintf(f, "requests_%s %llu\n", req[k], get(&s->requests[k]));
  fprintf(f, "bytes_served %llu\n", get(&s->bytes_served));
  fprintf(f, "store_bytes_read %llu\n", get(&io->bytes_read));
  fprintf(f, "store_reads %llu\n", get(&io->reads));
  fprintf(f, "store_opens %llu\n", get(&io->opens));
  unsigned long long fills = 0;
  for (unsigned l = 1; l <= MEMO_MAX_LEVEL; l++)
    fills += memo_fills(memo, l);
  fprintf(f, "cache_hits %llu\n", (unsigned long long)memo_hits(memo));
  fprintf(f, "cache_misses %llu\n", fills);
  fprintf(f, "cache_waits %llu\n", (unsigned long long)memo_waits(memo));
  fprintf(f, "cache_bytes %zu\n", memo_used(memo) + memo_pinned(memo));
  fprintf(f, "decodes %llu\n", get(&s->decodes));
  fprintf(f, "decode_ms %llu\n", get(&s->decode_ns) / 1000000u);
  fprintf(f, "store_named_ahead %llu\n", get(&s->named_ahead));
  fprintf(f, "kernel_forgets %llu\n", get(&s->forgets));
  unsigned long long nerr = 0;
  for (int k = 0; k < STATS_ERR_KINDS; k++)
    nerr += get(&s->errors[k]);
  fprintf(f, "errors %llu\n", nerr);
  for (int k = 0; k < STATS_ERR_KINDS; k++)
    fprintf(f, "errors_%s %llu\n", errs[k], get(&s->errors[k]));
  int bad = ferror(f);
  if (fclose(f) != 0 || bad) {
    free(*out);
    *out = NULL;
    return -ENOMEM;
  }
  return 0;
}
