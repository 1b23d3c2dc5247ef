/* cancel.c - abandoning the work of one request (see cancel.h). */
#include "cancel.h"

#include <errno.h>
#include <stddef.h>

/* The token of the request the calling thread serves, or NULL. */
static _Thread_local struct cancel *cancel_cur;

/* Not raised. */
void cancel_init(struct cancel *c) { atomic_init(&c->raised, 0); }

/* One relaxed store: signal-safe, and nothing else is published with it. */
void cancel_raise(struct cancel *c) {
  atomic_store_explicit(&c->raised, 1, memory_order_relaxed);
}

/* A relaxed load. */
int cancel_raised(const struct cancel *c) {
  return c && atomic_load_explicit(&c->raised, memory_order_relaxed);
}

/* Swap the thread's token. */
struct cancel *cancel_enter(struct cancel *c) {
  struct cancel *prev = cancel_cur;
  cancel_cur = c;
  return prev;
}

/* Restore the thread's token. */
void cancel_leave(struct cancel *prev) { cancel_cur = prev; }

/* The thread's token. */
struct cancel *cancel_current(void) {
  return cancel_cur;
}

/* The thread's token, raised? */
int cancel_requested(void) { return cancel_raised(cancel_cur); }

/* Shutdown or abandoned. */
int cancel_stopped(const atomic_int *stop) {
  return (stop && atomic_load_explicit(stop, memory_order_relaxed)) ||
         cancel_requested();
}

/* The reason says which. */
int cancel_check(const atomic_int *stop, struct zerr *err) {
  if (stop && atomic_load_explicit(stop, memory_order_relaxed))
    return zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
  if (cancel_requested())
    return zerr_set(err, EINTR, "interrupted: its reader gave up");
  return 0;
}

/* A timed wait to now + ns on clock. */
void cancel_sleep(pthread_cond_t *cond, pthread_mutex_t *lock, clockid_t clock,
                  long ns) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  ts.tv_nsec += ns;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  pthread_cond_timedwait(cond, lock, &ts);
}
