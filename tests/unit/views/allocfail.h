/* allocfail.h - a failing allocator for tests, in the style of curl's
 * torture tests: the Nth allocation made by zarrfs code fails.
 *
 * The test program is linked with -Wl,--wrap=malloc,--wrap=calloc,... (see
 * tests/unit/Makefile.inc), so every call to those functions from
 * an object of the link (libzarrfs.a, the test itself) goes to the
 * __wrap_ functions of allocfail.c. jansson's and zlib's allocations are
 * counted too: zarrfs gives them allocators of its own (src/zarr/meta.c's
 * json_set_alloc_funcs, codecs/gzip.c's zalloc), which call malloc. Allocations
 * inside other shared libraries (libc's own, zstd, blosc, bz2, lz4, libcurl)
 * are not counted.
 *
 * Only the Nth allocation fails; the ones after it succeed again, so the
 * code must both fail cleanly and recover (nothing half-made may be kept).
 * Counting is on only between allocfail_arm and allocfail_disarm; the
 * harness's own buffers come from allocfail_raw_malloc (never counted). */
#ifndef ZARRFS_ALLOCFAIL_H
#define ZARRFS_ALLOCFAIL_H

#include <stddef.h>

/* Start counting from zero; allocation number fail_at fails (0: none). */
void allocfail_arm(long fail_at);
/* Stop counting (nothing fails while disarmed). */
void allocfail_disarm(void);
/* Allocations counted since allocfail_arm. */
long allocfail_count(void);
/* Has the armed failure happened? */
int allocfail_failed(void);
/* Called when the injected failure happens (a breakpoint for debuggers). */
void allocfail_hit(void);
/* malloc/realloc that are never counted nor failed (the harness's own). */
void *allocfail_raw_malloc(size_t n);
void *allocfail_raw_realloc(void *p, size_t n);

#endif
