/* inodes.h - the inode table of a mount: which store path each inode
 * number the kernel holds names, how many lookups of it the kernel has not
 * forgotten, and the list of open files and directories.
 *
 * The root (INODES_ROOT, the store's root) lives as long as the table;
 * every other path from its first lookup (or the first readdirplus entry
 * that carries it) until the kernel forgets every lookup of it. A path's
 * inode number is a hash of the path, the same on every mount of the store
 * (and in readdir's d_ino). FUSE-free: numbers are the kernel's 64-bit
 * inode numbers, so fs/fuse_ops.c uses the table directly and the unit
 * tests can drive it.
 *
 * Locks: the table's lock guards its hash tables and every lookup count;
 * the open lock guards the open list. Both are leaves; neither is held
 * while a caller resolves a path or replies. */
#ifndef ZARRFS_INODES_H
#define ZARRFS_INODES_H

#include <stddef.h>
#include <stdint.h>

#include "../../src/util/htab.h"

/* The root's number (FUSE_ROOT_ID) and the d_ino of a name the kernel
 * holds no inode for (as libfuse's path API). */
#define INODES_ROOT 1u
#define INODES_UNKNOWN 0xffffffffu

/* A path the kernel holds. Lives until the kernel forgets every lookup of
 * it (the root: as long as the table). */
struct zfs_inode {
  struct htab_node by_ino;  /* in zfs_inodes.moved, when ino is not the
                               path's stable number */
  struct htab_node by_path; /* in zfs_inodes.by_path (hash: the path's
                               stable number) */
  uint64_t ino;
  uint64_t nlookup; /* lookups the kernel has not forgotten */
  size_t len;       /* of path */
  char path[];      /* the store key ("" for the root) */
};

/* An open file or directory (the first member of struct zfs_file and
 * struct zfs_dir), linked into zfs_inodes.open from open to release: the
 * kernel sends no release for what is still open when the session ends,
 * and those handles are freed with the table. */
struct zfs_handle {
  struct zfs_handle *prev, *next;
  int is_dir;
};

struct zfs_inodes;

/* A new table holding only the root. *out is owned by the caller
 * (inodes_free). 0 or -ENOMEM. */
int inodes_new(struct zfs_inodes **out);

/* Frees one open file or directory still linked when the table goes. */
typedef void (*inodes_handle_free_fn)(void *ctx, struct zfs_handle *h);
/* Free the table, every inode, and every handle still open (the kernel
 * sends no release for what is open when the session ends), each through
 * free_handle(ctx, h). Only after the session: no request may run.
 * NULL-safe. */
void inodes_free(struct zfs_inodes *t, inodes_handle_free_fn free_handle,
                 void *ctx);

/* Link h (is_dir: a directory) into the open list, or unlink it. */
void inodes_handle_add(struct zfs_inodes *t, struct zfs_handle *h,
                       int is_dir);
void inodes_handle_del(struct zfs_inodes *t, struct zfs_handle *h);

/* The inode of a number the kernel holds (borrowed: valid until the
 * kernel forgets it); NULL only for a number never given out. */
struct zfs_inode *inodes_get(struct zfs_inodes *t, uint64_t ino);
/* One more lookup of path [path, path+len): its number (the inode is made
 * on the first), or 0 without memory. */
uint64_t inodes_ref(struct zfs_inodes *t, const char *path, size_t len);
/* The number of path (NUL-terminated) while the kernel holds it, else 0;
 * takes no lookup. */
uint64_t inodes_find(struct zfs_inodes *t, const char *path);
/* The kernel forgot n lookups of ino; the last one frees it. */
void inodes_forget(struct zfs_inodes *t, uint64_t ino, uint64_t n);
/* The number a path gets when no other live path has the same hash: what
 * readdir shows as d_ino. */
uint64_t inodes_stable_ino(const char *path, size_t len);

#endif
