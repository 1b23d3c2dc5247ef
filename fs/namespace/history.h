/* history.h - the history of an Icechunk mount as files, below the
 * control directory /.zarrfs (fs/namespace/namespace.c routes there):
 *   branches/NAME/, tags/NAME/  the tree at that ref (as loaded at mount)
 *   snapshots/ID/               the tree at any snapshot the repository
 *                               lists (spec 2: its list; spec 1: every
 *                               snapshot reachable from a ref)
 *   log/branch.NAME.txt, log/tag.NAME.txt
 *                               the ref's ancestry, newest first, one
 *                               "ID<TAB>TIME<TAB>MESSAGE" line each
 * A tree is served by a sub-engine of the mount's engine (engine_sub),
 * made when a path first enters it: listing snapshots/ reads no snapshot
 * file, entering one reads that snapshot alone. Only a mount's engine of
 * an Icechunk repository has these names. FUSE-free. */
#ifndef ZARRFS_HISTORY_H
#define ZARRFS_HISTORY_H

#include <stddef.h>

#include "../engine/engine.h"

/* What a path below /.zarrfs is. */
enum history_kind {
  HISTORY_DIR = 1, /* a directory of the history tree itself */
  HISTORY_LOG,     /* a log/ file */
  HISTORY_TREE,    /* inside a ref's or a snapshot's tree */
};

/* Does e show a history (an Icechunk repository, a mount's engine)? */
int history_shown(const struct engine *e);

/* What rel (a path below /.zarrfs, "" for it, no leading slash) is: a
 * history_kind, or -ENOENT when nothing is there (also when it names no
 * history at all: the caller goes on with its own names). For
 * HISTORY_TREE, *sub (borrowed from e) serves the tree and *rest (inside
 * rel) is the path in it ("" for its root). */
int history_resolve(struct engine *e, const char *rel, struct engine **sub,
                    const char **rest, struct zerr *err);

/* Called once per name of a history directory; non-zero stops. */
typedef int (*history_name_cb)(void *ud, const char *name, int is_dir);
/* The names of history directory rel (HISTORY_DIR): for "" the four
 * directories, for the others the refs, the snapshot ids or the logs. */
int history_list(struct engine *e, const char *rel, history_name_cb cb,
                 void *ud, struct zerr *err);

/* Largest log text (bytes): a longer history shows its newest lines that
 * fit, and says once in the mount's log where it was cut. */
#define HISTORY_LOG_MAX (16 << 20)

/* The text of log file rel (HISTORY_LOG): *text owned by the caller
 * (free). Made once per snapshot and kept in the engine's memo. At most
 * ICECHUNK_HISTORY_MAX lines, HISTORY_LOG_MAX bytes, each message cut at
 * ICEFMT_LOG_MESSAGE_MAX; a history that loops stops before the first
 * snapshot met again. Each early end is one line in the mount's log. */
int history_log_text(struct engine *e, const char *rel, char **text,
                     size_t *len, struct zerr *err);

#endif
