/* allocfail.c - the failing allocator of allocfail.h: __wrap_ versions of
 * the allocation functions zarrfs calls, counting and failing the Nth. */
#define _GNU_SOURCE
#include "allocfail.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
char *__real_realpath(const char *path, char *resolved);

void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
int __wrap_asprintf(char **out, const char *fmt, ...);
char *__wrap_realpath(const char *path, char *resolved);

static atomic_int af_armed;
static atomic_long af_count;
static atomic_long af_fail_at;
static atomic_int af_failed;

/* Called when the injected failure happens: a place for a breakpoint. */
__attribute__((noinline)) void allocfail_hit(void) { __asm__ volatile(""); }

/* Count one allocation; 1 when it is the one to fail. */
static int af_fail_now(void) {
  if (!atomic_load(&af_armed))
    return 0;
  long n = atomic_fetch_add(&af_count, 1) + 1;
  if (n != atomic_load(&af_fail_at))
    return 0;
  atomic_store(&af_failed, 1);
  allocfail_hit();
  errno = ENOMEM;
  return 1;
}

void *__wrap_malloc(size_t n) {
  return af_fail_now() ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m) {
  return af_fail_now() ? NULL : __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n) {
  return af_fail_now() ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s) {
  return af_fail_now() ? NULL : __real_strdup(s);
}

char *__wrap_strndup(const char *s, size_t n) {
  return af_fail_now() ? NULL : __real_strndup(s, n);
}

int __wrap_asprintf(char **out, const char *fmt, ...) {
  if (af_fail_now())
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int rc = vasprintf(out, fmt, ap);
  va_end(ap);
  return rc;
}

/* realpath allocates only when resolved is NULL. */
char *__wrap_realpath(const char *path, char *resolved) {
  if (!resolved && af_fail_now())
    return NULL;
  return __real_realpath(path, resolved);
}

void allocfail_arm(long fail_at) {
  atomic_store(&af_count, 0);
  atomic_store(&af_failed, 0);
  atomic_store(&af_fail_at, fail_at);
  atomic_store(&af_armed, 1);
}

void allocfail_disarm(void) { atomic_store(&af_armed, 0); }

long allocfail_count(void) { return atomic_load(&af_count); }

int allocfail_failed(void) { return atomic_load(&af_failed); }

void *allocfail_raw_malloc(size_t n) { return __real_malloc(n); }

void *allocfail_raw_realloc(void *p, size_t n) { return __real_realloc(p, n); }
