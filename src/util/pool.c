/* pool.c - worker threads over a bounded job queue (see pool.h). */
#include "pool.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

struct pool_job {
  pool_fn fn;
  void *arg;
};

struct pool {
  pthread_mutex_t lock; /* guards everything below (leaf lock) */
  pthread_cond_t more;  /* a job was queued, or quit was set */
  pthread_cond_t idle;  /* the queue is empty and no job runs */
  struct pool_job *queue;
  int cap, head, len;
  int running; /* jobs taken by a worker and not finished */
  int quit;
  int started; /* threads were started (once) */
  int nthreads, want;
  pthread_t *threads;
};

struct pool *pool_new(int threads, int queue) {
  if (threads < 1)
    threads = 1;
  if (threads > 64)
    threads = 64;
  if (queue < 1)
    queue = 1;
  struct pool *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->queue = calloc((size_t)queue, sizeof *p->queue);
  p->threads = calloc((size_t)threads, sizeof *p->threads);
  if (!p->queue || !p->threads) {
    free(p->queue);
    free(p->threads);
    free(p);
    return NULL;
  }
  p->cap = queue;
  p->want = threads;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->more, NULL);
  pthread_cond_init(&p->idle, NULL);
  return p;
}

/* A worker: take jobs until quit. */
static void *pool_worker(void *arg) {
  struct pool *p = arg;
  pthread_mutex_lock(&p->lock);
  for (;;) {
    while (!p->len && !p->quit)
      pthread_cond_wait(&p->more, &p->lock);
    if (p->quit)
      break;
    struct pool_job j = p->queue[p->head];
    p->head = (p->head + 1) % p->cap;
    p->len--;
    p->running++;
    pthread_mutex_unlock(&p->lock);
    j.fn(j.arg, 0);
    pthread_mutex_lock(&p->lock);
    if (!--p->running && !p->len)
      pthread_cond_broadcast(&p->idle);
  }
  pthread_mutex_unlock(&p->lock);
  return NULL;
}

void pool_free(struct pool *p) {
  if (!p)
    return;
  pthread_mutex_lock(&p->lock);
  p->quit = 1;
  pthread_cond_broadcast(&p->more);
  pthread_mutex_unlock(&p->lock);
  for (int i = 0; i < p->nthreads; i++)
    pthread_join(p->threads[i], NULL);
  /* No worker is left: the queue is ours. */
  for (; p->len; p->len--, p->head = (p->head + 1) % p->cap)
    p->queue[p->head].fn(p->queue[p->head].arg, 1);
  pthread_cond_destroy(&p->more);
  pthread_cond_destroy(&p->idle);
  pthread_mutex_destroy(&p->lock);
  free(p->queue);
  free(p->threads);
  free(p);
}

/* Queue fn(arg) at the tail, or at the head when first. */
static int pool_queue(struct pool *p, pool_fn fn, void *arg, int first) {
  pthread_mutex_lock(&p->lock);
  if (!p->started) {
    p->started = 1;
    while (p->nthreads < p->want &&
           pthread_create(&p->threads[p->nthreads], NULL, pool_worker, p) == 0)
      p->nthreads++;
  }
  int rc = p->quit                            ? -ESHUTDOWN
           : !p->nthreads || p->len == p->cap ? -EAGAIN
                                              : 0;
  if (rc == 0) {
    if (first)
      p->head = (p->head + p->cap - 1) % p->cap;
    p->queue[first ? p->head : (p->head + p->len) % p->cap] =
        (struct pool_job){fn, arg};
    p->len++;
    pthread_cond_signal(&p->more);
  }
  pthread_mutex_unlock(&p->lock);
  return rc;
}

int pool_submit(struct pool *p, pool_fn fn, void *arg) {
  return pool_queue(p, fn, arg, 0);
}

int pool_submit_first(struct pool *p, pool_fn fn, void *arg) {
  return pool_queue(p, fn, arg, 1);
}

int pool_threads(const struct pool *p) { return p->want; }

int pool_busy(struct pool *p) {
  pthread_mutex_lock(&p->lock);
  int n = p->len + p->running;
  pthread_mutex_unlock(&p->lock);
  return n;
}

/* Tests only: the queue drained and every job finished (jobs a job queues
 * included), so a test asserts what the workers did without timing. A
 * job that waits would wait for itself: from a worker it returns at once. */
void pool_wait_idle(struct pool *p) {
  pthread_mutex_lock(&p->lock);
  int worker = 0;
  for (int i = 0; i < p->nthreads; i++)
    worker |= pthread_equal(p->threads[i], pthread_self());
  while (!worker && ((p->len && p->nthreads) || p->running))
    pthread_cond_wait(&p->idle, &p->lock);
  pthread_mutex_unlock(&p->lock);
}
