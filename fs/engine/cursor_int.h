/* cursor_int.h - what cursor.c and cursor_slice.c share: a cursor's
 * fields and limits (see cursor.h; only these two files include it, after
 * cursor.h). */
#ifndef ZARRFS_CURSOR_INT_H
#define ZARRFS_CURSOR_INT_H

#include <pthread.h>
#include <stdlib.h>

#include "region.h"

/* Units, rows and data sections a cursor keeps. */
#define CURSOR_WINDOWS 4
/* Units a reader may have decoded ahead of it (fewer when the ahead
 * budget holds fewer); unit rl's slot is rl % CURSOR_AHEAD_MAX. */
#define CURSOR_AHEAD_MAX 256
/* Bytes read in sequence before decoding ahead starts: `head`, `file`
 * and `tail` read less, and decode nothing they do not show. */
#define CURSOR_AHEAD_AFTER (256u << 10)
/* Reads this close to where the last one ended still count as in
 * sequence (the kernel's read-ahead sends several reads at once). */
#define CURSOR_SEQ_SLACK (4u << 20)
/* Chunks a reader may have named to its store ahead of it (fetched
 * meanwhile by a store with latency), and its first window: the window
 * doubles each time the reader reaches chunks it named, so a reader that
 * keeps up soon has many requests in flight, and one that stops costs
 * little. */
#define CURSOR_PF_MAX 256
#define CURSOR_PF_FIRST 8
/* Bytes of view text one slice job renders (the kernel's largest read, so
 * a reply is one slice), and most slices a reader may have ahead (fewer
 * when the ahead budget holds fewer). */
#define CURSOR_SLICE (1u << 20)
#define CURSOR_SLICES 16
/* Slice buffers a cursor keeps for its next slices once their bytes are
 * served: fresh ones would cost the kernel a page fault and a zeroed
 * page every 4 KiB. */
#define CURSOR_SPARES 4

/* Units one cursor has decoded ahead (or is decoding). */
struct ahead_slot {
  uint64_t rl;           /* region-linear unit; AHEAD_FREE: slot unused */
  int ready;             /* its job is done: the pins below (may be NULL) */
  struct memo_ref *unit; /* the decoded unit */
  struct memo_ref *data; /* its deferred data section, decoded */
};
#define AHEAD_FREE UINT64_MAX

/* A slice's bytes: one reference held by its slot, one by each reply
 * that lends them (cursor_slice_lend). */
struct slice_buf {
  _Atomic int refs;
  char data[];
};

/* A slice of the view's text rendered ahead. */
enum { SLICE_FREE, SLICE_QUEUED, SLICE_RUNNING, SLICE_READY, SLICE_GONE };
struct cursor_slice {
  uint64_t off; /* view offset, a multiple of CURSOR_SLICE */
  uint64_t gen; /* the job it belongs to (a slice let go gets a new one) */
  int state;    /* SLICE_*; GONE: taken by the reader, or failed */
  size_t len;   /* READY: bytes in buf (short at the end of the text) */
  struct slice_buf *buf; /* READY: the slot's reference */
};

struct view_cursor {
  pthread_mutex_t lock;                 /* guards what follows (cursor.h) */
  _Atomic int refs;                     /* the open file's, one per job */
  int closed;                           /* released: jobs drop what they made */
  struct memo_ref *layout;              /* layout last read through */
  struct memo_ref *win[CURSOR_WINDOWS]; /* most recently used first */
  uint64_t next_off;                    /* where the reader's last read ended */
  uint64_t seq;        /* bytes it has read in sequence up to there */
  uint64_t ahead_next; /* next region-linear unit to queue */
  size_t est;          /* cost of a unit lately read */
  atomic_int scan;     /* cursor_note_cost's scan, once set */
  _Atomic uint64_t reached; /* the furthest region-linear unit a reader
                               in sequence reached (cursor_reached): a
                               job queued for a unit before it is stale */
  struct ahead_slot slot[CURSOR_AHEAD_MAX];
  /* Chunks named to the store ahead (store_prefetch), oldest first. */
  uint64_t pf_next; /* next region-linear unit to name */
  uint32_t pf_win;  /* window in units (0: not fetching ahead) */
  uint32_t npf;
  struct cursor_pf {
    uint64_t rl;
    void *hint; /* the store's */
  } pf[CURSOR_PF_MAX];
  /* Slices of text rendered ahead; sl_cond: a job ended (a reader may be
   * waiting for its slice). */
  int renders; /* the last read rendered elements of a large unit */
  uint64_t sl_gen;
  pthread_cond_t sl_cond;
  struct cursor_slice sl[CURSOR_SLICES];
  struct slice_buf *spare[CURSOR_SPARES];
  int nspare;
  void *ext; /* a table reader's state (cursor_ext_swap) */
  void (*ext_free)(struct engine *e, void *p);
};

/* Drop a slice buffer reference (NULL: nothing): the last one keeps it as
 * a spare of an open cursor, or frees it. Not under c's lock
 * (cursor_slice.c). */
void slice_buf_put(struct view_cursor *c, struct slice_buf *b);

/* Drop a reference; the last one frees (everything was released). */
static inline void cursor_unref(struct view_cursor *c) {
  if (atomic_fetch_sub(&c->refs, 1) != 1)
    return;
  pthread_cond_destroy(&c->sl_cond);
  pthread_mutex_destroy(&c->lock);
  free(c);
}

#endif
