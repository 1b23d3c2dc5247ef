/* ns_dir.h - directory listings of the namespace: a directory listed
 * once into a compact table and read by position (FUSE readdir offsets).
 * The names are those fs/namespace/namespace.h resolves, by the same rules
 * (ns_view_name, ns_place_of, ns_stored_file). FUSE-free; no lock: a
 * listing is immutable once made. */
#ifndef ZARRFS_NS_DIR_H
#define ZARRFS_NS_DIR_H

#include <stddef.h>
#include <stdint.h>

#include "namespace.h"

/* A directory's listing, made once and then read by position (FUSE
 * readdir offsets): the store's children (sorted by name, each name once),
 * the child nodes only consolidated metadata names, values.txt, then the
 * K.txt views. Listing reads no chunk and decodes nothing (it lists the
 * store and looks up learned sizes). Immutable once made but for the
 * chunk views' sizes ns_dir_attr_learn keeps in it; 24 bytes plus the name
 * per entry. */
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
                        would take a read or a decode, but by
                        ns_dir_attr_learn. */
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
/* ns_dir_attr for name i (de from ns_dir_get), and for a chunk view still
 * without attributes, its size learned as stat learns it (decoding the
 * chunk, or reading its index), when the chunk's decoded bytes fit in
 * *budget (taken from it); what is learned is kept in the listing (the
 * next ns_dir_get of i has it). For a caller about to stat every name (ls
 * -l): one readdirplus then does the work a LOOKUP a name would. A
 * failure leaves the name without attributes (its stat says why). Safe
 * while other threads read the listing or learn its names. */
void ns_dir_attr_learn(struct ns_dir *d, size_t i, struct ns_dirent *de,
                       uint64_t *budget);
/* Free; NULL-safe. */
void ns_dir_free(struct ns_dir *d);

#endif
