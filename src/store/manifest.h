/* manifest.h - a compact, immutable table of chunk references: key ->
 * (target path, offset, length), whole target file, inline bytes, or
 * missing. The one in-memory form of kerchunk reference files
 * (src/store/kerchunk.h) and VirtualiZarr manifest.json files (store_vzarr.c).
 *
 * Built once through a builder, then frozen: entries sorted by key, keys in
 * one arena, target paths interned (one copy per distinct path), 64-bit
 * offsets and lengths in arrays, inline bytes in an arena. No JSON DOM is
 * kept. Lookup is a binary search; listing the children of a prefix walks
 * the sorted range and jumps past each child's subtree by binary search, so
 * listing a directory costs O(children * log n). Immutable after
 * manifest_builder_finish: shared by FUSE threads without locks. */
#ifndef ZARRFS_MANIFEST_H
#define ZARRFS_MANIFEST_H

#include <stddef.h>
#include <stdint.h>

#include "../io/bytesrc.h"
#include "confine.h"
#include "../util/err.h"
#include "store.h"

struct manifest;
struct manifest_builder;

enum manifest_kind {
  MF_RANGE = 1,   /* bytes [offset, offset+length) of target path */
  MF_WHOLE = 2,   /* the whole target file (length unknown until opened) */
  MF_INLINE = 3,  /* bytes held in the table */
  MF_MISSING = 4, /* listed as absent: the chunk is the fill value */
  MF_BAD = 5,     /* a malformed reference: reading it fails with EIO and
                     the reason (data, length bytes of text) */
};

/* One entry, as manifest_lookup returns it. Pointers are borrowed and live
 * as long as the manifest. */
struct manifest_entry {
  enum manifest_kind kind;
  const char *path;    /* MF_RANGE, MF_WHOLE: absolute local path or URL */
  uint64_t offset;     /* MF_RANGE */
  uint64_t length;     /* MF_RANGE, MF_INLINE; MF_WHOLE: UINT64_MAX */
  const uint8_t *data; /* MF_INLINE */
};

/* base (a URL: "scheme://host/dir", no trailing '/') joined with a
 * relative reference, dot segments resolved, never above the host's root
 * (malloc'd, NULL without memory). Exposed for the tests. */
char *manifest_url_join(const char *base, const char *rel);

/* A builder. base_dir (an absolute directory, or the URL of the directory
 * of a remote reference) resolves relative target paths; file://
 * URLs become local paths; http(s)://, s3://, gs:// URLs are kept as they
 * are (remote). *out is owned by the caller (manifest_builder_free unless
 * finished). */
int manifest_builder_new(const char *base_dir, struct manifest_builder **out,
                         struct zerr *err);
/* Add an entry; the builder copies key, path and data. Keys are checked
 * with zkey_valid (-EINVAL with a reason naming the key). */
int manifest_add_range(struct manifest_builder *b, const char *key,
                       const char *path, uint64_t offset, uint64_t length,
                       struct zerr *err);
int manifest_add_whole(struct manifest_builder *b, const char *key,
                       const char *path, struct zerr *err);
int manifest_add_inline(struct manifest_builder *b, const char *key,
                        const void *data, size_t len, struct zerr *err);
int manifest_add_missing(struct manifest_builder *b, const char *key,
                         struct zerr *err);
/* The reason of a target path or URL with a NUL byte inside: the builder
 * takes C strings, so parsers that see string lengths (JSON) check for it
 * and add the key with manifest_add_bad(..., MANIFEST_NUL_REASON) instead
 * of a silently truncated path. */
#define MANIFEST_NUL_REASON "target path contains a NUL byte"
/* A key whose reference is malformed: listed, and its reads fail with EIO
 * and this reason (so one bad entry does not stop the mount). */
int manifest_add_bad(struct manifest_builder *b, const char *key,
                     const char *reason, struct zerr *err);
/* Sort and freeze. Duplicate keys: the last one added wins, and
 * *duplicates (may be NULL) counts the entries dropped. Frees b (also on
 * failure). *out is owned by the caller (manifest_free). */
int manifest_builder_finish(struct manifest_builder *b, struct manifest **out,
                            uint64_t *duplicates, struct zerr *err);
/* Free an unfinished builder; NULL-safe. */
void manifest_builder_free(struct manifest_builder *b);

/* The entry of key: 0, or -ENOENT when the table does not name it. */
int manifest_lookup(const struct manifest *m, const char *key,
                    struct manifest_entry *out);
/* Is prefix ("" = root) a directory of the key space (some key below it)? */
int manifest_is_dir(const struct manifest *m, const char *prefix);
/* Immediate children of prefix, each once: files with their length
 * (MF_WHOLE: STORE_SIZE_UNKNOWN, its size is learned by opening it;
 * MF_BAD: 0; MF_MISSING entries are not listed) and directories. */
int manifest_list(const struct manifest *m, const char *prefix, int64_t mtime,
                  store_list_cb cb, void *ud, struct zerr *err);
/* Open an entry's bytes: inline data, or the target through confine (a
 * window for MF_RANGE, checked against the target's size: a range past the
 * end is -EIO naming the path, offset, length and size). A listed key is
 * data, so every failure is -EIO with the reason (a missing target, one
 * outside the allowed roots, not a regular file, a remote target that
 * failed), except transient ones, which keep their
 * code (-EMFILE, -ENFILE, -ENOMEM, ...: zerr_is_transient). MF_MISSING is
 * -ENOENT. The source holds no descriptor between reads (the confine's
 * pool lends one). */
int manifest_open(const struct manifest *m, const struct manifest_entry *en,
                  const struct confine *c, struct io_stats *stats,
                  struct bytesrc **out, struct zerr *err);
/* A digest of every entry under prefix ("" = all; else keys prefix +
 * "/...") and of the version of every local target they name (opened
 * through c, as a read would: the confine keeps them): two equal digests
 * promise the same keys with the same bytes. -ENOTSUP when an entry names
 * a remote target (no version known without a request); a target that
 * cannot be opened counts as absent. Costs a pass over those entries, no
 * look-up per key. */
int manifest_digest(const struct manifest *m, const char *prefix,
                    const struct confine *c, uint64_t *out, struct zerr *err);
/* Number of entries and bytes held (for logs and the benchmark). */
uint64_t manifest_count(const struct manifest *m);
size_t manifest_bytes(const struct manifest *m);
/* Free; NULL-safe. */
void manifest_free(struct manifest *m);

#endif
