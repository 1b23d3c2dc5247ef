/* cursor_fan.c - fans: the progress of fills that have workers decode
 * ahead of them, shared by the fill and its jobs (see cursor.h). */
#include <stdlib.h>

#include "cursor.h"

/* See cursor.h. */
struct cursor_fan *cursor_fan_new(void) {
  struct cursor_fan *f = malloc(sizeof *f);
  if (f) {
    atomic_init(&f->refs, 1);
    atomic_init(&f->pos, 0);
  }
  return f;
}

/* See cursor.h. */
void cursor_fan_unref(struct cursor_fan *f) {
  if (f && atomic_fetch_sub(&f->refs, 1) == 1)
    free(f);
}

/* See cursor.h. */
void cursor_fan_done(struct cursor_fan *f) {
  if (f)
    atomic_store(&f->pos, UINT64_MAX);
  cursor_fan_unref(f);
}
