/* tmember.h - a group's members as fs/table.c sees them: the names
 * node_members_load gives (listed or in consolidated metadata, in name
 * order, each once), each with its node when it is an array that may be
 * a column (tmember_dim). Holds no lock of its own; FUSE-free. */
#ifndef ZARRFS_TMEMBER_H
#define ZARRFS_TMEMBER_H

#include "../engine/engine.h"
#include "../engine/node.h"

/* Longest dimension name tmember_dim gives (fs/table.h's TABLE_NAME_MAX:
 * its bytes go into memo keys). */
#define TMEMBER_DIM_MAX 255

/* A member of the group: its name (owned by the list; a taker sets it to
 * NULL), and its node when tmember_dim gives it a dimension name (else n
 * and dim are NULL). */
struct tmember {
  char *name;
  const struct znode *n;
  const char *dim; /* borrowed from n's metadata */
};

/* The members: zero-initialised before tmember_load, freed with
 * tmember_free (also after a failed load). */
struct tmembers {
  struct tmember *v;
  size_t n;
};

/* The dimension name of n when it is a readable 1-D array with one that
 * may name a file (V3 `dimension_names`, else V2 `_ARRAY_DIMENSIONS`),
 * or a 2-D character array whose characters xarray joins into strings
 * (struct znode.join: a column of those strings, along its first
 * dimension), else NULL (also when longer than TMEMBER_DIM_MAX or
 * holding a slash). Borrowed from n's metadata. */
const char *tmember_dim(const struct znode *n);

/* The members of group g into m. 0, or a transient failure (a member
 * broken for now, out of memory). */
int tmember_load(struct engine *e, const struct znode *g, struct tmembers *m,
                 struct zerr *err);
/* The dimension names of m's members, each once, in strcmp order, into
 * *out (malloc'd, the caller's to free; the names borrowed, valid while m
 * is): their count, or -ENOMEM. */
long tmember_dims(const struct tmembers *m, const char ***out,
                  struct zerr *err);
/* Free the names and the list; NULL-safe. */
void tmember_free(struct tmembers *m);

#endif
