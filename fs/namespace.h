/* namespace.h - which path is what: a stored directory or file (served
 * byte-identical), a chunk's text view (K.txt beside stored chunk K), an
 * array's whole view (values.txt inside the array directory), the same
 * two decoded as CF says (K.cf.txt, values.cf.txt: only for an array whose
 * attributes carry a CF encoding, struct znode.cf), an array's
 * description (info.txt beside values.txt, fs/info.h), or the mount's live
 * counters (/.zarrfs/stats, fs/stats.h: every layout, never listed). A
 * stored key always wins over a view name that collides with it. Entries the
 * store holds but cannot serve (STORE_OTHER: FIFOs, sockets, devices, links
 * leaving the store) are left out of listings; named directly, they and
 * their views resolve, and reading them fails with EIO. FUSE-free. */
#ifndef ZARRFS_NAMESPACE_H
#define ZARRFS_NAMESPACE_H

#include <stdint.h>

#include "engine.h"
#include "node.h"

#define NS_VALUES_NAME "values.txt"
#define NS_CF_VALUES_NAME "values.cf.txt" /* CF-decoded values.txt */
#define NS_CF_VIEW_SUFFIX ".cf.txt"       /* K.cf.txt: CF-decoded K.txt */
#define NS_INFO_NAME "info.txt"
#define NS_STATS_DIR ".zarrfs" /* at the root, not listed */
#define NS_STATS_NAME "stats"  /* in it */
#define NS_TEXT_DIR ".text"    /* -o views=tree: the root of the text tree */
#define NS_VIEW_SUFFIX ".txt"

enum ns_kind {
  NS_DIR = 1,
  NS_RAW,
  NS_CHUNK_VIEW,
  NS_ARRAY_VIEW,
  NS_INFO_VIEW, /* info.txt: node is the array (or broken node) */
  NS_STATS,     /* /.zarrfs/stats: new text on every read, size 0 (read
                   it without trusting its size: direct I/O) */
  NS_HISTORY,   /* /.zarrfs/log/...: a ref's history (fs/history.h) */
};

struct ns_entry {
  enum ns_kind kind;
  struct engine *eng; /* the engine that serves it (borrowed): the one
                         resolved with, or a sub-engine of it for a path
                         inside a history tree (fs/history.h); key, node
                         and reads belong to it */
  char key[4096];               /* store key (raw, dir) or array path (views) */
  const struct znode *node;     /* views: the array (borrowed from engine);
                                   CF views: the array's CF node (its cf) */
  uint64_t idx[ZMETA_MAX_DIMS]; /* chunk views: chunk coordinates */
  uint64_t raw_size;            /* raw files: stored size */
  int64_t mtime; /* nanoseconds since the epoch (stored entries: the
                    store's time; K.txt: chunk K's; values.txt: the
                    array metadata's), or STORE_MTIME_UNKNOWN */
};

/* Resolve a path ("/a/c/0.txt" or "a/c/0.txt"); -ENOENT when nothing is
 * there. */
int ns_resolve(struct engine *e, const char *path, struct ns_entry *ent,
               struct zerr *err);

/* Size of the file an entry names (0 for directories). With lazy sizes
 * (engine_config.lazy_sizes) a view's size is reported only when known
 * without decoding element data, else 0: such files must be read without
 * trusting their size (direct I/O), as /proc files are. */
int ns_size(struct engine *e, const struct ns_entry *ent, uint64_t *size,
            struct zerr *err);

struct view_cursor;
/* Read from a view entry (not raw: raw reads go through a byte source the
 * caller keeps open). c is the open file's cursor (fs/view.h), or NULL.
 * Returns bytes read or a negative errno. */
long ns_read_view(struct engine *e, const struct ns_entry *ent, uint64_t off,
                  size_t len, char *dst, struct view_cursor *c,
                  struct zerr *err);

/* Called once per directory entry; return non-zero to stop. */
typedef int (*ns_fill_cb)(void *ud, const char *name, int is_dir);

/* List a directory: stored entries plus the views that belong there
 * (ns_dir_open, then each name in its order). */
int ns_list(struct engine *e, const char *path, ns_fill_cb cb, void *ud,
            struct zerr *err);

/* A directory's listing, made once and then read by position (FUSE
 * readdir offsets): the store's children (sorted by name, each name once),
 * the child nodes only consolidated metadata names, values.txt, then the
 * K.txt views. Listing reads no chunk and decodes nothing (it lists the
 * store and looks up learned sizes). Immutable once made; about 16 bytes
 * plus the name per entry. */
struct ns_dir;

/* One name of a listing, and what is known of it without any I/O. */
struct ns_dirent {
  const char *name;  /* borrowed from the listing */
  enum ns_kind kind; /* what ns_resolve would say the name is */
  int attr;          /* 1: kind and size are all of the name's stat, as
                        ns_resolve and ns_size would say it now:
                        directories, stored files whose size the store's
                        listing gave, views whose size is already learned
                        (with lazy sizes also those not learned: 0), except
                        chunk views whose chains read sizes from an index
                        (codec.h's partial decoding), whose size is learned
                        by reading the chunk's index. Never set where knowing
                        would take a read or a decode. */
  uint64_t size;     /* NS_RAW with attr: what ns_size would say */
  int64_t mtime;     /* with attr: what ns_resolve would say */
};

/* List path. *out is owned by the caller (ns_dir_free). Fails as a
 * listing does (-ENOENT, -EIO, ...), -ENOMEM, or -EFBIG past 4 GiB of
 * names. */
int ns_dir_open(struct engine *e, const char *path, struct ns_dir **out,
                struct zerr *err);
/* Number of names. */
size_t ns_dir_count(const struct ns_dir *d);
/* Name i (< ns_dir_count) into *out. */
void ns_dir_get(const struct ns_dir *d, size_t i, struct ns_dirent *out);
/* de (from ns_dir_get) without attributes: fill them in when the view's
 * size has been learned since the listing was made (values.txt stat'ed
 * meanwhile), by memo look-ups only, never a read or a decode. So
 * readdirplus spares the kernel a LOOKUP a name. */
void ns_dir_attr(struct engine *e, const struct ns_dir *d,
                 struct ns_dirent *de);
/* Free; NULL-safe. */
void ns_dir_free(struct ns_dir *d);

#endif
