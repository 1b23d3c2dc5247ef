/* cancel.h - abandoning the work of one request: its reader went away (a
 * FUSE INTERRUPT, which the kernel sends when the process waiting for the
 * answer gets a signal, SIGKILL included), so whatever the request still
 * waits for or computes is of no use.
 *
 * A token (struct cancel) belongs to one request, on the stack of the
 * thread that serves it. That thread makes it its current token
 * (cancel_enter) until the request is answered (cancel_leave); another
 * thread raises it (cancel_raise). Long loops, waits, transfers and
 * decodes below ask whether the calling thread's request was abandoned
 * (cancel_requested, or cancel_stopped and cancel_check beside a shutdown
 * flag) and give up with -EINTR. The token is the thread's, so no
 * parameter carries it through every layer, and nothing below the FUSE
 * glue (fs/fuse_ops.c) knows of FUSE. A worker doing part of a request's
 * work that the request waits for (a remote run fetched into its reader's
 * buffer) enters that request's token while it does.
 *
 * What is abandoned is only ever transient: a fill that gave up this way
 * fails with -EINTR, which the memo passes to its waiters and forgets
 * (zerr_is_transient), so another request computes it again.
 *
 * No lock: the flag is atomic; the current token is thread-local. */
#ifndef ZARRFS_CANCEL_H
#define ZARRFS_CANCEL_H

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "err.h"

/* One request's token. */
struct cancel {
  atomic_int raised; /* set once by cancel_raise, never cleared */
};

/* A token not raised. */
void cancel_init(struct cancel *c);
/* Abandon c's request. Any thread; async-signal-safe (one atomic store). */
void cancel_raise(struct cancel *c);
/* Is c raised? NULL: no. */
int cancel_raised(const struct cancel *c);
/* Make c (NULL: none) the calling thread's token; the one it replaces, for
 * cancel_leave. c must outlive the time until cancel_leave. */
struct cancel *cancel_enter(struct cancel *c);
/* Back to prev (what the matching cancel_enter returned). */
void cancel_leave(struct cancel *prev);
/* The calling thread's token, or NULL. */
struct cancel *cancel_current(void);
/* Was the calling thread's request abandoned? */
int cancel_requested(void);
/* Is the shutdown flag stop (NULL: none) raised, or the calling thread's
 * request abandoned? */
int cancel_stopped(const atomic_int *stop);
/* -EINTR with the reason (shutdown, or the request abandoned) when
 * cancel_stopped(stop), else 0. */
int cancel_check(const atomic_int *stop, struct zerr *err);

/* Sleep on cond (lock held, clock the cond's clock) for at most ns
 * nanoseconds (< 1 s): the slice between two looks at a stop flag and the
 * token, in waits that must end when either is raised. */
void cancel_sleep(pthread_cond_t *cond, pthread_mutex_t *lock, clockid_t clock,
                  long ns);

#endif
