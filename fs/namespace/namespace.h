/* namespace.h - which path is what: a stored directory or file (served
 * byte-identical), a chunk's text view (K.txt beside stored chunk K), an
 * array's whole view (values.txt inside the array directory), the same
 * two decoded as CF says (K.cf.txt, values.cf.txt: only for an array whose
 * attributes carry a CF encoding, struct znode.cf), an array's rows as
 * CSV (rows.csv beside values.txt in arrays of two or more dimensions,
 * struct znode.csv), an array's
 * description (info.txt beside values.txt, fs/views/info.h), or the mount's
 * live counters (/.zarrfs/stats, fs/engine/stats.h: every placement of the
 * views, never listed), and in a group a table D.csv per dimension of its 1-D
 * arrays (fs/views/table.h). A stored key always wins over a view name that
 * collides with it. Entries the store holds but cannot serve (STORE_OTHER:
 * FIFOs, sockets, devices, links leaving the store) are left out of listings;
 * named directly, they and their views resolve, and reading them fails with
 * EIO. FUSE-free. */
#ifndef ZARRFS_NAMESPACE_H
#define ZARRFS_NAMESPACE_H

#include <stdint.h>

#include "../engine/engine.h"
#include "../engine/node.h"

#define NS_VALUES_NAME "values.txt"
#define NS_CF_VALUES_NAME "values.cf.txt" /* CF-decoded values.txt */
#define NS_CF_VIEW_SUFFIX ".cf.txt"       /* K.cf.txt: CF-decoded K.txt */
#define NS_ROWS_NAME "rows.csv"           /* an N-D array's rows as CSV */
#define NS_INFO_NAME "info.txt"
#define NS_STATS_DIR ".zarrfs" /* at the root, not listed */
#define NS_STATS_NAME "stats"  /* in it */
#define NS_TEXT_DIR ".text"    /* -o views=tree: the root of the text tree */
#define NS_VIEW_SUFFIX ".txt"
/* The longest name the mount shows (NAME_MAX, what statfs says): a
 * longer one is left out of listings (one log line a directory) and does
 * not resolve (-ENAMETOOLONG), whatever the store holds. */
#define NS_NAME_MAX 255

enum ns_kind {
  NS_DIR = 1,
  NS_RAW,
  NS_CHUNK_VIEW,
  NS_ARRAY_VIEW,
  NS_INFO_VIEW, /* info.txt: node is the array (or broken node) */
  NS_STATS,     /* /.zarrfs/stats: new text on every open (ns_text), size
                   0 (read it without trusting its size: direct I/O) */
  NS_HISTORY,   /* /.zarrfs/log/...: a ref's history (fs/namespace/history.h) */
  NS_TABLE,     /* D.csv in a group: node is the group (fs/views/table.h) */
};

struct ns_entry {
  enum ns_kind kind;
  struct engine *eng;           /* the engine that serves it (borrowed): the one
                                   resolved with, or a sub-engine of it for a path
                                   inside a history tree
                                   (fs/namespace/history.h); key, node and
                                   reads belong to it */
  char key[4096];               /* store key (raw, dir) or array path (views) */
  const struct znode *node;     /* views: the array (borrowed from engine);
                                   CF views: the array's CF node (its cf);
                                   rows.csv: its CSV node (its csv) */
  uint64_t idx[ZMETA_MAX_DIMS]; /* chunk views: chunk coordinates */
  uint64_t raw_size;            /* raw files: stored size */
  int64_t mtime; /* nanoseconds since the epoch (stored entries: the
                    store's time; K.txt: chunk K's; values.txt: the
                    array metadata's), or STORE_MTIME_UNKNOWN */
};

/* Resolve a path ("/a/c/0.txt" or "a/c/0.txt"); -ENOENT when nothing is
 * there, -ENAMETOOLONG for a name longer than NS_NAME_MAX in it. */
int ns_resolve(struct engine *e, const char *path, struct ns_entry *ent,
               struct zerr *err);

/* Size of the file an entry names (0 for directories). With lazy sizes
 * (engine_config.lazy_sizes) a view's size is reported only when known
 * without decoding element data, else 0: such files must be read without
 * trusting their size (direct I/O), as /proc files are. */
int ns_size(struct engine *e, const struct ns_entry *ent, uint64_t *size,
            struct zerr *err);
/* ns_size waiting at most wait_ns for a view's size to be learned
 * (UINT64_MAX: as long as it takes; fs/views/lsize.h stops at once when it
 * would take longer): 1 when it is not known in time (*size 0: shown so,
 * read with direct I/O, until a reader or a longer wait learns it), 0
 * when *size is the size, or a negative errno. */
int ns_size_within(struct engine *e, const struct ns_entry *ent,
                   uint64_t wait_ns, uint64_t *size, struct zerr *err);

/* 1 when a file must be read without trusting the size stat gives (the
 * kernel reads past it only with direct I/O): with lazy sizes every view,
 * /.zarrfs/stats, a values.txt or D.csv whose size stat defers; 0 else;
 * or a negative errno (-EINTR: abandoned). */
int ns_read_direct(struct engine *e, const struct ns_entry *ent,
                   struct zerr *err);

/* 1 when ent's text is made whole (info.txt, /.zarrfs/stats, the ref
 * logs): an open makes it once (ns_text) and serves every read of that
 * open from it, so a reader sees one snapshot, not pieces of texts made
 * at different moments (the statistics change with every request). */
int ns_text_whole(const struct ns_entry *ent);

/* The whole text of such an entry into *text (malloc'd, the caller's;
 * *len bytes). 0 or a negative errno. */
int ns_text(struct engine *e, const struct ns_entry *ent, char **text,
            size_t *len, struct zerr *err);

/* Copy bytes [off, off+len) of text (tl bytes) into dst: how many (0 at
 * or past its end). */
size_t ns_text_read(const char *text, size_t tl, uint64_t off, size_t len,
                    char *dst);

struct view_cursor;
/* Read from a view entry (not raw: raw reads go through a byte source the
 * caller keeps open). c is the open file's cursor (fs/views/view.h), or NULL.
 * Returns bytes read or a negative errno. */
long ns_read_view(struct engine *e, const struct ns_entry *ent, uint64_t off,
                  size_t len, char *dst, struct view_cursor *c,
                  struct zerr *err);

/* After a read of view ent at off failed with rc (the failure logged
 * where it was understood): the bytes before the unit that failed, read
 * into dst (len bytes at most), when there are some and rc is a data
 * error (a bad chunk), else rc. For a file opened with direct I/O only:
 * the kernel takes any other short read as the end of the file. */
long ns_read_before_failure(struct engine *e, const struct ns_entry *ent,
                            uint64_t off, size_t len, char *dst, long rc);

/* Directory path dir (dl bytes, "" the root) joined with name into buf
 * (cap bytes): the child's path and its length, or -ENAMETOOLONG. */
long ns_join(const char *dir, size_t dl, const char *name, char *buf,
             size_t cap);

/* What statfs shows of the store: the bytes and files under a local
 * store's directory (one bounded walk); -1 when unknown (not a directory,
 * a walk that fails, a tree of more than 200,000 entries). */
int ns_store_usage(struct engine *e, uint64_t *bytes, uint64_t *files);

/* Called once per directory entry; return non-zero to stop. */
typedef int (*ns_fill_cb)(void *ud, const char *name, int is_dir);

/* List a directory: stored entries plus the views that belong there
 * (ns_dir_open, then each name in its order). */
int ns_list(struct engine *e, const char *path, ns_fill_cb cb, void *ud,
            struct zerr *err);

/* What a path shows (-o views): the store and the views beside it, the
 * store alone, or (under NS_TEXT_DIR with views=tree) the directories and
 * the views without the stored files. */
enum ns_place { NS_PLACE_BESIDE, NS_PLACE_PLAIN, NS_PLACE_TEXT };

/* The rules a listing shares with resolving (fs/namespace/ns_dir.c lists
 * exactly the names ns_resolve resolves): */
/* Does key end with suffix? */
int ns_ends_with(const char *s, const char *suffix);
/* Does name (len bytes) end with suffix? */
int ns_has_suffix(const char *name, size_t len, const char *suffix);
/* key below NS_STATS_DIR and a history shown there: its path below it,
 * else NULL. */
const char *ns_history_rel(struct engine *e, const char *key);
/* The layout at *key, moving *key past NS_TEXT_DIR in the text tree. */
enum ns_place ns_place_of(struct engine *e, const char **key);
/* Drop leading slashes: FUSE paths are absolute, store keys are not. */
const char *ns_path_key(const char *path);
/* Is /.zarrfs the mount's own (the statistics)? Not when the store holds
 * a key of that name at its root: the stored key wins (logged once).
 * A remote store is not asked: there the name is always the mount's. */
int ns_stats_dir_ours(struct engine *e);
/* Is the store key dir/name (name alone at the root) a file? Then its
 * size and time. */
int ns_stored_file(struct engine *e, const char *dir, const char *name,
                   uint64_t *size, int64_t *mtime);
/* Is name (a file name in array n's directory rel, "" or "x/") a view of
 * n: values.txt, values.cf.txt, rows.csv and info.txt in the array's own
 * directory, or K.txt or K.cf.txt for a chunk key K (whose coordinates go
 * to idx)? 1 for values.txt or info.txt, 2 for K.txt, 3 for
 * values.cf.txt, 4 for K.cf.txt (the CF views only when n has them), 5
 * for rows.csv (only when n has it), else 0. */
int ns_view_name(const struct znode *n, const char *rel, const char *name,
                 size_t len, uint64_t *idx);

/* The paths (store-relative, as the inode table keeps them) of the views
 * whose size depends on unit idx of view node n: its whole view
 * (values.txt, values.cf.txt or rows.csv) and its chunk's view (K.txt,
 * K.cf.txt), in the mount's layout of views; cb(ud, path) for each. */
void ns_unit_view_paths(struct engine *e, const struct znode *n,
                        const uint64_t *idx,
                        void (*cb)(void *ud, const char *path), void *ud);

#endif
