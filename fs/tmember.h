/* tmember.h - a group's members as fs/table.c sees them: every name the
 * store lists or consolidated metadata names, in name order, each once,
 * with its node when it is a readable 1-D array whose dimension name may
 * name a table file. Holds no lock of its own; FUSE-free. */
#ifndef ZARRFS_TMEMBER_H
#define ZARRFS_TMEMBER_H

#include "engine.h"
#include "node.h"

/* A member of the group: its name (owned by the list; a taker sets it to
 * NULL), and its node when it is a readable 1-D array with a dimension
 * name (else n and dim are NULL). */
struct tmember {
  char *name;
  const struct znode *n;
  const char *dim; /* borrowed from n's metadata */
};

/* The members: zero-initialised before tmember_load, freed with
 * tmember_free (also after a failed load). */
struct tmembers {
  struct tmember *v;
  size_t n, cap;
  int oom;
};

/* The members of group g into m. 0, or a transient failure (a member
 * broken for now, out of memory). */
int tmember_load(struct engine *e, const struct znode *g, struct tmembers *m,
                 struct zerr *err);
/* Free the names and the list; NULL-safe. */
void tmember_free(struct tmembers *m);

#endif
