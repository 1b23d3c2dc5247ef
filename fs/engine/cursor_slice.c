/* cursor_slice.c - slices of a view's text rendered ahead of a reader by
 * the engine's workers, held in its cursor (see cursor.h). */
#include <string.h>

#include "../../src/util/pool.h"
#include "cursor.h"
#include "cursor_int.h"

/* ---- slices of text rendered ahead ---- */

/* Slices the workers rendered (cursor_sliced). */
static _Atomic uint64_t slices_made;

/* One slice to render. */
struct slice_job {
  struct view_cursor *c; /* holds a reference */
  struct cursor_view v;
  int i;        /* its slot */
  uint64_t gen; /* the slot's generation when queued */
  uint64_t off;
};

/* The slot still waiting for job j, or NULL. */
static struct cursor_slice *slice_of(struct slice_job *j) {
  struct cursor_slice *sl = &j->c->sl[j->i];
  return !j->c->closed && sl->gen == j->gen ? sl : NULL;
}

/* A worker's job: render the slice unless the reader took it or moved
 * on, then hand it to the cursor (a failure: the reader reads the bytes
 * itself and sees it). */
static void slice_run(void *arg, int cancelled) {
  struct slice_job *j = arg;
  struct view_cursor *c = j->c;
  int go = 0;
  pthread_mutex_lock(&c->lock);
  struct cursor_slice *sl = slice_of(j);
  if (sl && sl->state == SLICE_QUEUED) {
    go = !cancelled && !engine_stopping(j->v.e);
    sl->state = go ? SLICE_RUNNING : SLICE_GONE;
  }
  struct slice_buf *buf = go && c->nspare ? c->spare[--c->nspare] : NULL;
  pthread_mutex_unlock(&c->lock);
  if (go && !buf && (buf = malloc(sizeof *buf + CURSOR_SLICE)))
    atomic_init(&buf->refs, 1);
  long got = -ENOMEM;
  if (buf) {
    struct zerr err = {0};
    got = j->v.read(&j->v, j->off, CURSOR_SLICE, buf->data, &err);
  }
  if (go) {
    pthread_mutex_lock(&c->lock);
    if ((sl = slice_of(j)) && sl->state == SLICE_RUNNING) {
      sl->state = got > 0 ? SLICE_READY : SLICE_GONE;
      if (got > 0) {
        sl->buf = buf;
        sl->len = (size_t)got;
        buf = NULL;
        atomic_fetch_add_explicit(&slices_made, 1, memory_order_relaxed);
      }
    }
    pthread_cond_broadcast(&c->sl_cond);
    pthread_mutex_unlock(&c->lock);
  }
  slice_buf_put(c, buf);
  cursor_unref(c);
  free(j);
}

/* See cursor_int.h. */
void slice_buf_put(struct view_cursor *c, struct slice_buf *b) {
  if (!b || atomic_fetch_sub(&b->refs, 1) != 1)
    return;
  pthread_mutex_lock(&c->lock);
  if (!c->closed && c->nspare < CURSOR_SPARES) {
    atomic_init(&b->refs, 1);
    c->spare[c->nspare++] = b;
    b = NULL;
  }
  pthread_mutex_unlock(&c->lock);
  free(b);
}

/* See cursor.h. */
void cursor_note_renders(struct view_cursor *c, int renders, uint64_t size) {
  if (!c)
    return;
  pthread_mutex_lock(&c->lock);
  c->renders = renders && size >= 2 * (uint64_t)CURSOR_SLICE;
  pthread_mutex_unlock(&c->lock);
}

/* The slot whose slice holds view offset off, or NULL. */
static struct cursor_slice *slice_find(struct view_cursor *c, uint64_t off) {
  for (int i = 0; i < CURSOR_SLICES; i++) {
    struct cursor_slice *sl = &c->sl[i];
    if (sl->state != SLICE_FREE && sl->off <= off &&
        off - sl->off < CURSOR_SLICE)
      return sl;
  }
  return NULL;
}

/* The slice holding view offset off, once rendered (waiting while a
 * worker renders it; one still queued is the reader's now): a reference
 * to its buffer and the bytes from off on in *n, or NULL. */
static struct slice_buf *slice_at(struct view_cursor *c, uint64_t off,
                                  size_t *n) {
  struct slice_buf *b = NULL;
  pthread_mutex_lock(&c->lock);
  struct cursor_slice *sl;
  while ((sl = slice_find(c, off)) && sl->state == SLICE_RUNNING)
    pthread_cond_wait(&c->sl_cond, &c->lock);
  if (sl && sl->state == SLICE_QUEUED) {
    sl->state = SLICE_GONE; /* quicker rendered here than waited for */
  } else if (sl && sl->state == SLICE_READY && off - sl->off < sl->len) {
    *n = sl->len - (size_t)(off - sl->off);
    b = sl->buf;
    atomic_fetch_add(&b->refs, 1);
  }
  pthread_mutex_unlock(&c->lock);
  return b;
}

/* See cursor.h. */
size_t cursor_slice_read(struct view_cursor *c, uint64_t off, size_t len,
                         char *dst) {
  size_t n = 0;
  struct slice_buf *b = c ? slice_at(c, off, &n) : NULL;
  if (!b)
    return 0;
  n = n < len ? n : len;
  memcpy(dst, b->data + (off % CURSOR_SLICE), n);
  slice_buf_put(c, b);
  return n;
}

/* See cursor.h. */
const char *cursor_slice_lend(struct view_cursor *c, uint64_t off, size_t len,
                              size_t *n, void **hold) {
  size_t have = 0;
  struct slice_buf *b = c ? slice_at(c, off, &have) : NULL;
  if (!b)
    return NULL;
  /* all of the read, or all that is left of the text */
  if (have < len && off % CURSOR_SLICE + have == CURSOR_SLICE) {
    slice_buf_put(c, b);
    return NULL;
  }
  *n = have < len ? have : len;
  *hold = b;
  atomic_fetch_add(&c->refs, 1); /* the reply may outlive the open file */
  return b->data + (off % CURSOR_SLICE);
}

/* See cursor.h. */
void cursor_slice_return(struct view_cursor *c, void *hold) {
  if (c) {
    slice_buf_put(c, hold);
    cursor_unref(c);
  }
}

/* See cursor.h. Slices start after the read's end (or a later read's,
 * already under way), at slice boundaries, and are kept until the reader
 * is CURSOR_SEQ_SLACK past them: the kernel has several reads in flight,
 * which come out of order (a read 3 MiB on may come before its elders).
 * All slots together stay within the ahead budget. */
void cursor_slice_plan(struct engine *e, struct view_cursor *c,
                       const struct cursor_view *v, uint64_t off,
                       uint64_t end) {
  if (!c || !e->ahead || e->store->ahead)
    return; /* a store with latency: its chunks are named ahead instead */
  uint64_t depth = e->ahead_budget / CURSOR_SLICE;
  depth = depth < CURSOR_SLICES ? depth : CURSOR_SLICES;
  struct slice_buf *drop[CURSOR_SLICES];
  int nd = 0;
  pthread_mutex_lock(&c->lock);
  int on =
      c->renders && c->seq >= CURSOR_AHEAD_AFTER && depth >= 2 && !c->closed;
  uint64_t lo = off > CURSOR_SEQ_SLACK ? off - CURSOR_SEQ_SLACK : 0;
  uint64_t used = 0;
  for (int i = 0; i < CURSOR_SLICES; i++) {
    struct cursor_slice *sl = &c->sl[i];
    if (sl->state == SLICE_FREE)
      continue;
    if (on && sl->off + CURSOR_SLICE > lo) {
      used++;
      continue;
    }
    if (sl->state == SLICE_READY)
      drop[nd++] = sl->buf;
    *sl = (struct cursor_slice){.gen = ++c->sl_gen}; /* its job: let go */
  }
  used += (uint64_t)c->nspare; /* spares count against the budget too */
  /* not below a read that has started (it renders its bytes itself) */
  uint64_t from = c->next_off > end ? c->next_off : end;
  uint64_t next = (from + CURSOR_SLICE - 1) / CURSOR_SLICE * CURSOR_SLICE;
  for (uint64_t hi = end + depth * CURSOR_SLICE;
       on && next < hi && used < depth; next += CURSOR_SLICE) {
    if (slice_find(c, next))
      continue; /* queued already */
    int i = 0;
    while (i < CURSOR_SLICES && c->sl[i].state != SLICE_FREE)
      i++;
    struct slice_job *j = i < CURSOR_SLICES ? malloc(sizeof *j) : NULL;
    if (!j)
      break;
    struct cursor_slice *sl = &c->sl[i];
    *j = (struct slice_job){c, *v, i, ++c->sl_gen, next};
    *sl = (struct cursor_slice){next, j->gen, SLICE_QUEUED, 0, NULL};
    atomic_fetch_add(&c->refs, 1);
    if (pool_submit(e->ahead, slice_run, j) < 0) {
      atomic_fetch_sub(&c->refs, 1);
      *sl = (struct cursor_slice){.gen = ++c->sl_gen};
      free(j);
      break;
    }
    used++;
  }
  pthread_mutex_unlock(&c->lock);
  for (int i = 0; i < nd; i++)
    slice_buf_put(c, drop[i]);
}

/* See cursor.h. */
uint64_t cursor_sliced(void) {
  return atomic_load_explicit(&slices_made, memory_order_relaxed);
}
