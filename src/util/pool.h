/* pool.h - a fixed set of worker threads running queued jobs: the engine's
 * decode-ahead (fs/views/view.c) runs on it.
 *
 * Jobs are hints: pool_submit refuses (-EAGAIN) when the queue is full, and
 * the caller then does the work itself or not at all. Each job runs exactly
 * once: fn(arg, 0) on a worker, or fn(arg, 1) ("cancelled": free what arg
 * holds, do no work) for jobs still queued when the pool is freed. A job
 * owns its arg.
 *
 * Threads start at the first submit, not in pool_new: the daemon forks
 * (fuse_daemonize) after its context is made, and a fork keeps no threads.
 *
 * Lock: struct pool.lock guards the queue and the flags; it is a leaf lock
 * (never held while a job runs). */
#ifndef ZARRFS_POOL_H
#define ZARRFS_POOL_H

typedef void (*pool_fn)(void *arg, int cancelled);

struct pool;

/* A pool of `threads` workers (1..64) and a queue of `queue` jobs (>= 1).
 * NULL on allocation failure. */
struct pool *pool_new(int threads, int queue);
/* Cancel the queued jobs, wait for the running ones, free. NULL-safe. */
void pool_free(struct pool *p);
/* Queue fn(arg): 0, or -EAGAIN (queue full, or no thread could be
 * started) and -ESHUTDOWN (being freed), in which case fn is not called and
 * arg stays the caller's. */
int pool_submit(struct pool *p, pool_fn fn, void *arg);
/* pool_submit, but the job is taken before every job already queued: the
 * part of a job in progress that an idle worker may help with. */
int pool_submit_first(struct pool *p, pool_fn fn, void *arg);
/* Workers (the configured number). */
int pool_threads(const struct pool *p);
/* Jobs queued or running now (a snapshot, for pacing and tests). */
int pool_busy(struct pool *p);

#endif
