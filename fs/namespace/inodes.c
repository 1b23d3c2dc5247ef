/* inodes.c - the inode table of a mount (see inodes.h). */
#include "inodes.h"

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/util/htab.h"

/* Every inode but the root is in by_path, hashed by its path's stable
 * number (inodes_stable_ino): that is its number too, so by_path also
 * finds an inode by number, in one table (one probe a name for readdirplus
 * of millions). An inode whose number is not its path's stable one (two
 * live paths of one hash, about one chance in 2^63 a pair) is also in
 * moved, by number. */
struct zfs_inodes {
  pthread_mutex_t lock; /* guards both tables and every nlookup (a leaf
                           lock: nothing else is taken under it) */
  struct htab by_path;
  struct htab moved;
  struct zfs_inode *root;
  pthread_mutex_t open_lock; /* guards the open list (a leaf lock) */
  struct zfs_handle open;    /* the list's head: open handles */
};

/* Link h into the open list. */
void inodes_handle_add(struct zfs_inodes *t, struct zfs_handle *h, int is_dir) {
  h->is_dir = is_dir;
  pthread_mutex_lock(&t->open_lock);
  h->next = t->open.next;
  h->prev = &t->open;
  t->open.next->prev = h;
  t->open.next = h;
  pthread_mutex_unlock(&t->open_lock);
}

/* Unlink h from the open list. */
void inodes_handle_del(struct zfs_inodes *t, struct zfs_handle *h) {
  pthread_mutex_lock(&t->open_lock);
  h->prev->next = h->next;
  h->next->prev = h->prev;
  pthread_mutex_unlock(&t->open_lock);
}

/* The inode of a moved / by_path table node. */
static struct zfs_inode *inode_of_ino(const struct htab_node *n) {
  return (struct zfs_inode *)((char *)n - offsetof(struct zfs_inode, by_ino));
}
static struct zfs_inode *inode_of_path(const struct htab_node *n) {
  return (struct zfs_inode *)((char *)n - offsetof(struct zfs_inode, by_path));
}

/* Table equality callbacks: by number in moved, by number and by path in
 * by_path. */
static int ino_eq(const struct htab_node *n, const void *key) {
  return inode_of_ino(n)->ino == *(const uint64_t *)key;
}
static int path_ino_eq(const struct htab_node *n, const void *key) {
  return inode_of_path(n)->ino == *(const uint64_t *)key;
}
static int path_eq(const struct htab_node *n, const void *key) {
  return !strcmp(inode_of_path(n)->path, key);
}

/* A new inode for path (len bytes), not in any table yet. */
static struct zfs_inode *inode_alloc(const char *path, size_t len) {
  struct zfs_inode *in = malloc(sizeof *in + len + 1);
  if (!in)
    return NULL;
  memset(in, 0, sizeof *in);
  in->len = len;
  memcpy(in->path, path, len + 1);
  return in;
}

/* See inodes.h. */
int inodes_new(struct zfs_inodes **out) {
  struct zfs_inodes *t = calloc(1, sizeof *t);
  if (!t)
    return -ENOMEM;
  if (htab_init(&t->by_path, 1024) < 0 || htab_init(&t->moved, 16) < 0 ||
      !(t->root = inode_alloc("", 0))) {
    htab_fini(&t->by_path);
    htab_fini(&t->moved);
    free(t);
    return -ENOMEM;
  }
  pthread_mutex_init(&t->lock, NULL);
  pthread_mutex_init(&t->open_lock, NULL);
  t->open.next = t->open.prev = &t->open;
  t->root->ino = INODES_ROOT; /* in no table: never looked up, never
                                 forgotten */
  *out = t;
  return 0;
}

/* See inodes.h. */
void inodes_free(struct zfs_inodes *t, inodes_handle_free_fn free_handle,
                 void *ctx) {
  if (!t)
    return;
  while (t->open.next != &t->open) {
    struct zfs_handle *h = t->open.next;
    t->open.next = h->next;
    free_handle(ctx, h);
  }
  pthread_mutex_destroy(&t->open_lock);
  struct htab_node *n;
  while ((n = htab_pop(&t->by_path)))
    free(inode_of_path(n));
  htab_fini(&t->by_path);
  htab_fini(&t->moved);
  free(t->root);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

/* The live inode numbered ino (not the root), or NULL. Under t->lock. */
static struct zfs_inode *ino_find(struct zfs_inodes *t, uint64_t ino) {
  struct htab_node *n = htab_find(&t->by_path, ino, path_ino_eq, &ino);
  if (n)
    return inode_of_path(n);
  n = t->moved.count ? htab_find(&t->moved, ino, ino_eq, &ino) : NULL;
  return n ? inode_of_ino(n) : NULL;
}

/* The inode of a number the kernel holds (so it exists: the kernel sends
 * no request for an inode it has forgotten). NULL only for a number never
 * given out. */
struct zfs_inode *inodes_get(struct zfs_inodes *t, uint64_t ino) {
  if (ino == INODES_ROOT)
    return t->root;
  pthread_mutex_lock(&t->lock);
  struct zfs_inode *in = ino_find(t, ino);
  pthread_mutex_unlock(&t->lock);
  return in;
}

/* The inode number of the store path [path, path+len): a hash of the path,
 * so the same on every mount of the store (find -inum, backups and
 * `ls -i` agree across mounts), in 63 bits and never 0, INODES_ROOT or
 * INODES_UNKNOWN. Two live paths with the same hash (about one chance
 * in 2^63 per pair) get the next free number: see inode_ref. */
uint64_t inodes_stable_ino(const char *path, size_t len) {
  uint64_t h = htab_hash_bytes(path, len, 0x1a0de5) >> 1;
  if (h <= INODES_ROOT || h == INODES_UNKNOWN)
    h += 2;
  return h;
}

/* Is ino free (no live inode has it)? Under t->lock. */
static int ino_free(struct zfs_inodes *t, uint64_t ino) {
  return ino > INODES_ROOT && ino != INODES_UNKNOWN && !ino_find(t, ino);
}

/* A path looked up in by_path; alone is cleared by every other path of
 * the same hash met on the way. */
struct path_probe {
  const char *path;
  int alone;
};

/* by_path equality for a path_probe. */
static int probe_eq(const struct htab_node *n, const void *key) {
  struct path_probe *p = (struct path_probe *)key;
  if (path_eq(n, p->path))
    return 1;
  p->alone = 0;
  return 0;
}

/* The live inode of path (h: its stable number, the hash by_path keeps),
 * or NULL; *alone set when no other live path hashes to h, so that the
 * number h is free (a path numbered otherwise is counted in t->moved).
 * Under t->lock. */
static struct zfs_inode *path_find(struct zfs_inodes *t, uint64_t h,
                                   const char *path, int *alone) {
  struct path_probe p = {path, t->moved.count == 0};
  struct htab_node *n = htab_find(&t->by_path, h, probe_eq, &p);
  *alone = p.alone;
  return n ? inode_of_path(n) : NULL;
}

/* One more lookup of path: its inode (made on the first), or 0 without
 * memory. */
uint64_t inodes_ref(struct zfs_inodes *t, const char *path, size_t len) {
  if (!len)
    return INODES_ROOT;
  uint64_t h = inodes_stable_ino(path, len);
  int alone;
  pthread_mutex_lock(&t->lock);
  struct zfs_inode *in = path_find(t, h, path, &alone);
  if (!in) {
    pthread_mutex_unlock(&t->lock); /* allocate outside the lock */
    struct zfs_inode *fresh = inode_alloc(path, len);
    if (!fresh)
      return 0;
    pthread_mutex_lock(&t->lock);
    in = path_find(t, h, path, &alone); /* made meanwhile? */
    if (in) {
      free(fresh);
    } else {
      in = fresh;
      in->ino = h;
      if (!alone)
        while (!ino_free(t, in->ino)) /* a hash collision: the next free */
          in->ino = (in->ino + 1) & (UINT64_MAX >> 1);
      in->by_path.hash = h;
      htab_insert(&t->by_path, &in->by_path);
      if (in->ino != h) {
        in->by_ino.hash = in->ino;
        htab_insert(&t->moved, &in->by_ino);
      }
    }
  }
  in->nlookup++;
  uint64_t ino = in->ino;
  pthread_mutex_unlock(&t->lock);
  return ino;
}

/* See inodes.h. */
uint64_t inodes_find(struct zfs_inodes *t, const char *path) {
  size_t len = strlen(path);
  if (!len)
    return INODES_ROOT;
  int alone;
  pthread_mutex_lock(&t->lock);
  struct zfs_inode *in =
      path_find(t, inodes_stable_ino(path, len), path, &alone);
  uint64_t ino = in ? in->ino : 0;
  pthread_mutex_unlock(&t->lock);
  return ino;
}

/* The kernel forgot n lookups of ino; the last one frees it. */
void inodes_forget(struct zfs_inodes *t, uint64_t ino, uint64_t n) {
  if (ino == INODES_ROOT)
    return;
  pthread_mutex_lock(&t->lock);
  struct zfs_inode *in = ino_find(t, ino);
  if (in)
    in->nlookup = n < in->nlookup ? in->nlookup - n : 0;
  if (in && !in->nlookup) {
    if (in->ino != in->by_path.hash)
      htab_remove(&t->moved, &in->by_ino);
    htab_remove(&t->by_path, &in->by_path);
  } else {
    in = NULL;
  }
  pthread_mutex_unlock(&t->lock);
  free(in);
}
