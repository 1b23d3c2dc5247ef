/* store.h - a Zarr store: maps keys to byte sources and lists children.
 *
 * Keys are relative, '/'-separated ("", "zarr.json", "a/c/0/1"). Every
 * backend lives behind this interface in its own file (store_local.c,
 * store_remote.c for HTTP and S3, store_refs.c and store_vzarr.c for
 * manifests). Stores are immutable after open and safe to use from many
 * threads. */
#ifndef ZARRFS_STORE_H
#define ZARRFS_STORE_H

#include <errno.h>
#include <stdint.h>

#include "../io/bytesrc.h"
#include "../util/err.h"
#include "../zarr/zkey.h"

struct store;

/* What a key is. STORE_OTHER: the key exists but cannot be served (a FIFO,
 * socket or device; in listings also a symbolic link that leaves the store
 * or loops). It is never an absent key: store_get of it fails with -EIO
 * (or -EACCES for a link that leaves the store), never -ENOENT. Directory
 * listings shown to users leave it out; code that learns from a listing
 * which chunks exist must count it as present (a read then fails with EIO),
 * never as missing (which would show the fill value). A dangling symbolic
 * link is absent: not listed, -ENOENT. */
enum store_entry_type { STORE_FILE = 1, STORE_DIR = 2, STORE_OTHER = 3 };

/* A listed file's size, when the listing cannot tell it (store_stat can). */
#define STORE_SIZE_UNKNOWN UINT64_MAX

/* A modification time the store does not know (HTTP and S3 objects,
 * chunks served from a VirtualiZarr manifest). */
#define STORE_MTIME_UNKNOWN INT64_MIN

/* Called once per child by store_list (size: bytes for STORE_FILE, else
 * 0; STORE_SIZE_UNKNOWN for a file whose size the listing does not know
 * without opening it, such as a whole-file kerchunk reference; mtime:
 * nanoseconds since the epoch, or STORE_MTIME_UNKNOWN); return non-zero
 * to stop. */
typedef int (*store_list_cb)(void *ud, const char *name,
                             enum store_entry_type type, uint64_t size,
                             int64_t mtime);

struct store_ops {
  int (*get)(struct store *s, const char *key, struct bytesrc **out,
             struct zerr *err);
  int (*stat)(struct store *s, const char *key, enum store_entry_type *type,
              uint64_t *size, int64_t *mtime, struct zerr *err);
  int (*list)(struct store *s, const char *prefix, store_list_cb cb, void *ud,
              struct zerr *err);
  void (*destroy)(struct store *s);
};

/* Optional operations of stores with latency (struct store.ahead): start
 * fetching key's object ahead for owner (a reader), see store_prefetch;
 * and let go of such a hint. */
struct store_ahead_ops {
  int (*prefetch)(struct store *s, const char *key, const void *owner,
                  int flags, void **hint);
  void (*drop)(struct store *s, void *hint);
};

struct store {
  const struct store_ops *ops;
  char *location;        /* for messages: the path or URL mounted (owned) */
  struct io_stats stats; /* bytes this store read */
  int unlistable;        /* 1: store_list cannot list directories (plain
                            HTTP): a directory exists only where metadata
                            or a chunk key implies it */
  int remote;            /* 1: a look-up the store cannot answer from its
                            caches is a request over the network (HTTP,
                            S3): fs/namespace/namespace.c asks it about no name
                            zarrfs makes up */
  const struct store_ahead_ops *ahead; /* NULL: nothing is fetched ahead
                                          (local files) */
  /* Optional (NULL: store_version asks store_get's source): the size and
   * version of key's bytes, the same as its store_get source would
   * carry, found more cheaply (a local file: its stat, no descriptor
   * kept). */
  int (*version)(struct store *s, const char *key, uint64_t *size,
                 uint64_t *version, struct zerr *err);
  /* Optional (NULL: -ENOTSUP): one version naming the bytes of every key
   * under a prefix at once, found without a look-up per key (a reference
   * table and its target files). */
  int (*prefix_version)(struct store *s, const char *prefix,
                        uint64_t *version, struct zerr *err);
};

/* Open a local directory. *out is owned by the caller (store_free). Its
 * byte sources share one descriptor pool (src/io/fdpool.h, default limit
 * from RLIMIT_NOFILE at this call). A source may be dropped after the
 * store is freed, but not read (it counts into the store's stats). */
int store_open_local(const char *root, struct store **out, struct zerr *err);

struct confine;
struct remote;
/* Open a kerchunk reference file (version 0 or 1) as a store whose key
 * space is the reference keys (src/store/store_refs.c). confine (borrowed, must
 * outlive the store) decides which local targets may be read. */
int store_open_refs(const char *path, const struct confine *c,
                    struct store **out, struct zerr *err);
/* A kerchunk reference file at an http(s):// or s3:// URL, fetched whole
 * (at most 2 GiB) through r (borrowed, outlives the store). Relative
 * targets resolve against the URL's directory; the reference may read no
 * local file (c is marked so). */
int store_open_refs_url(struct remote *r, const char *url, struct confine *c,
                        struct store **out, struct zerr *err);
/* Wrap a local store so that arrays with the `chunk-manifest-json` storage
 * transformer serve their chunk keys from their manifest.json
 * (src/store/store_vzarr.c). Takes ownership of inner (returned as it is when
 * no array has a manifest; freed at once on failure); confine is borrowed and
 * must outlive the store. */
int store_wrap_vzarr(struct store *inner, const struct confine *c,
                     struct store **out, struct zerr *err);

/* Open the remote store at url: http(s)://HOST/PATH (no listing: see
 * unlistable) or s3://BUCKET/PREFIX (listed with ListObjectsV2). r is
 * borrowed and must outlive the store. Listings and sizes are cached for
 * the mount's life (src/store/store_remote.c). */
int store_open_remote(struct remote *r, const char *url, struct store **out,
                      struct zerr *err);
/* Count the reads of a store of store_open_remote into to (the stats of a
 * store wrapping it, which must outlive it); other stores: no effect. */
void store_remote_count_into(struct store *st, struct io_stats *to);

/* Open the Icechunk repository whose files inner holds (a local or
 * remote store; taken over, freed with the store or at once on failure)
 * as the store of one snapshot: snapshot (a 20-character id) when given,
 * else branch or tag ref, else branch main (src/store/icechunk/icechunk.h says
 * what it serves). Metadata files above max_decode bytes are refused; unused
 * manifests are kept within budget bytes; confine (borrowed, may be NULL:
 * no virtual chunk) must outlive the store. */
int store_open_icechunk(struct store *inner, const char *ref,
                        const char *snapshot, size_t max_decode, size_t budget,
                        const struct confine *c, struct store **out,
                        struct zerr *err);

/* Byte source of an object (new reference); -ENOENT when absent. Only
 * regular files are served and opening never blocks: anything else is
 * -EIO ("not a regular file (FIFO)"). Transient failures keep their codes
 * (-EMFILE, -ENFILE, -ENOMEM, -EAGAIN, -EINTR: zerr_is_transient), every
 * other failure to read an existing key is -EIO or -EACCES. Sources of
 * local files hold no descriptor between reads (src/io/fdpool.h). */
int store_get(struct store *s, const char *key, struct bytesrc **out,
              struct zerr *err);
/* Type and size of a key; -ENOENT when absent. A FIFO, socket or device
 * is STORE_OTHER (size 0); a symbolic link that leaves the store -EACCES. */
int store_stat(struct store *s, const char *key, enum store_entry_type *type,
               uint64_t *size, struct zerr *err);
/* store_stat with the key's modification time (nanoseconds since the
 * epoch: a local file's mtime, a kerchunk reference file's for all its
 * keys; STORE_MTIME_UNKNOWN where the store does not know it). */
int store_stat_time(struct store *s, const char *key,
                    enum store_entry_type *type, uint64_t *size, int64_t *mtime,
                    struct zerr *err);
/* The size and version of key's bytes (struct bytesrc.version: what
 * names them, so that two equal versions promise equal bytes), without
 * reading them: what the persistent size index keys a chunk's record
 * by. A local file: its device, inode, size, modification and change
 * times; a kerchunk or VirtualiZarr range: its target file's and the
 * range; an Icechunk chunk: its chunk file's and its range. -ENOTSUP
 * where no version is known (remote objects, inline bytes), -ENOENT when
 * absent. A store that gives its sources versions answers with the same
 * ones, so a chunk's record learned from its decoded source is found
 * again by this. */
int store_version(struct store *s, const char *key, uint64_t *size,
                  uint64_t *version, struct zerr *err);
/* One version for the bytes of every key under prefix ("" the whole
 * store, else keys prefix + "/..."), such that an equal version promises
 * equal keys with equal bytes: what a record about many keys at once is
 * keyed by (fs/lsize.c). -ENOTSUP where the store has no cheaper way
 * than a version per key (store_version). */
int store_prefix_version(struct store *s, const char *prefix,
                         uint64_t *version, struct zerr *err);
/* store_list's answer when it listed what it could but some entries are
 * unknown (a VirtualiZarr array whose manifest cannot be read: its chunk
 * keys are missing from the listing); err says why. A directory listing
 * can show the rest; whoever infers "absent" from a listing must not. */
#define STORE_LIST_PARTIAL 1

/* Immediate children of prefix ("" = root), in no particular order,
 * including STORE_OTHER entries (see enum store_entry_type). A transient
 * failure fails the listing (never a listing with entries left out).
 * Returns 0, STORE_LIST_PARTIAL, or a negative errno. */
int store_list(struct store *s, const char *prefix, store_list_cb cb, void *ud,
               struct zerr *err);
/* Read a whole (small) object into malloc'd memory (*out, *len, owned by
 * caller), refusing objects above max bytes. */
int store_read_all(struct store *s, const char *key, size_t max, uint8_t **out,
                   size_t *len, struct zerr *err);
/* Free; NULL-safe. */
void store_free(struct store *s);

/* store_prefetch flags: fetch only the object's start (what learning its
 * size needs), not the whole object. */
#define STORE_PREFETCH_HEAD 1

/* A reader about to go through keys in sequence names one it will read
 * soon (owner: any pointer naming the reader), so that a store with
 * latency fetches it meanwhile (the whole object, or with
 * STORE_PREFETCH_HEAD its first block). 0 and a hint in *hint (the caller's,
 * let go with store_prefetch_drop once read or no longer wanted; the bytes it
 * holds count against the store's budget until then); -EAGAIN when that
 * budget or the reader's share of it is full (try again after dropping
 * hints); -ENOTSUP for stores that fetch nothing ahead. Never blocks on
 * the store. */
static inline int store_prefetch(struct store *s, const char *key,
                                 const void *owner, int flags, void **hint) {
  *hint = NULL;
  if (!s->ahead)
    return -ENOTSUP;
  return s->ahead->prefetch(s, key, owner, flags, hint);
}
/* Let go of a hint of store_prefetch; NULL-safe. */
static inline void store_prefetch_drop(struct store *s, void *hint) {
  if (hint && s->ahead)
    s->ahead->drop(s, hint);
}

#endif
