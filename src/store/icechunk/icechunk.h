/* icechunk.h - an open Icechunk repository, and stores presenting one of
 * its snapshots as a Zarr V3 key space (src/store/icechunk/store_icechunk.c).
 *
 * A repository (struct icechunk) holds the store of its files (a local
 * directory, or a remote store: http(s):// and s3:// read the same way),
 * its refs as loaded at open (a mount is a consistent snapshot: a branch
 * that moves later does not change it), the confine that decides which
 * virtual chunks may be read, and the limits. It is reference counted:
 * every snapshot store opened on it holds a reference, so a tree per
 * snapshot id can be opened and dropped while the repository lives on.
 * Immutable after open: shared by threads without locks.
 *
 * A snapshot store serves, for every node of the snapshot: `zarr.json`
 * (the node's metadata as Icechunk stores it), and for arrays the chunk
 * keys `c/i/j...` (default chunk key encoding with '/'): native chunks as
 * a window of `chunks/ID`, inline chunks from the manifest, virtual chunks
 * through the confine (a local file:// path under an allowed root, or a
 * URL under a prefix the user named with -o target_root=PREFIX and, when
 * the repository lists its virtual chunk containers, under one of them),
 * and a coordinate without a reference is absent (-ENOENT: the fill
 * value). Manifests are loaded on first use, only those whose extents
 * hold the coordinates a read or listing touches, into a memo of the
 * repository (src/util/memo.h, level MEMO_LEVEL_STORE) shared by its
 * snapshot stores and kept within a byte budget. A virtual chunk's
 * checksum is checked against its object, from the first read on: a
 * remote one is pinned to the ETag (If-Match) or to "not modified after"
 * the recorded time (If-Unmodified-Since, and the Last-Modified answered)
 * through rversion_pin (src/net/rversion.h); a local file's ETag is
 * Icechunk's "INODE-MTIME-SIZE" and its mtime may not be after the
 * recorded time (checked when the chunk is opened). A mismatch is -EIO
 * naming the URL and the checksum, never other bytes. */
#ifndef ZARRFS_ICECHUNK_H
#define ZARRFS_ICECHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "../store.h"
#include "icechunk_fmt.h"

struct icechunk;
struct confine;

/* Does s hold an Icechunk repository at its root: a `repo` file starting
 * with Icechunk's magic (spec 2) or `refs/branch.main/ref.json` (spec 1)?
 * 1 yes, 0 no, or a negative errno when s could not tell (err says). */
int icechunk_detect(struct store *s, struct zerr *err);

/* Open the repository whose files s holds (taken: freed with the
 * repository, or at once on failure). Metadata files larger than
 * max_decode, compressed or not, are refused; manifests not in use are
 * kept within budget bytes. c (borrowed, may be NULL: no virtual chunk is
 * read) must outlive the repository. *out holds one reference
 * (icechunk_unref). -ENOENT when s holds no repository. */
int icechunk_open(struct store *s, size_t max_decode, size_t budget,
                  const struct confine *c, struct icechunk **out,
                  struct zerr *err);
/* The refs loaded at open (borrowed). */
const struct icefmt_repo *icechunk_refs(const struct icechunk *ic);
/* The snapshot to show: snapshot (a 20-character id) when given, else
 * ref (a branch, else a tag of that name), else branch main. */
int icechunk_resolve(struct icechunk *ic, const char *ref, const char *snapshot,
                     uint8_t id[12], struct zerr *err);
/* The snapshot of branch (tag 0) or tag (tag 1) name: -ENOENT when there
 * is none (a deleted tag is none). */
int icechunk_ref_id(struct icechunk *ic, const char *name, int tag,
                    uint8_t id[12], struct zerr *err);
/* One snapshot of a history: its id, commit time (microseconds since
 * the epoch, UTC) and message (borrowed for the call). Return non-zero
 * to stop. */
typedef int (*icechunk_log_cb)(void *ud, const uint8_t id[12],
                               uint64_t flushed_at, const char *message);
/* Most snapshots one history (or the list of every snapshot) gives: a
 * history is walked again for each reader, so its work is bounded. */
#define ICECHUNK_HISTORY_MAX 100000
#define ICECHUNK_HISTORY_MAX_TEXT "100,000"
/* What a walk returns when it gave part of what it was asked for, and
 * what it gave stands: err says why, for one log line. */
#define ICECHUNK_PARTIAL 1
/* The ancestry of snapshot id, newest first, id itself included: from the
 * repo file's snapshot list (spec 2: no file read), else by reading each
 * snapshot for its parent (spec 1). ICECHUNK_PARTIAL when it ends early:
 * at the first snapshot met again (the parents loop), after
 * ICECHUNK_HISTORY_MAX snapshots, or (spec 1) at a parent that cannot be
 * read. A negative errno when id itself cannot be read. */
int icechunk_history(struct icechunk *ic, const uint8_t id[12],
                     icechunk_log_cb cb, void *ud, struct zerr *err);
/* Every snapshot the repository offers, each once, in no particular
 * order: spec 2 the repo file's list (no file read), spec 1 every
 * snapshot reachable from a branch or a tag (not a deleted one), read
 * from the snapshot files. cb gets what icechunk_history gives it.
 * ICECHUNK_PARTIAL past ICECHUNK_HISTORY_MAX snapshots, or when a ref's
 * ancestry cannot be read whole (spec 1: the rest is given). */
int icechunk_snapshots(struct icechunk *ic, icechunk_log_cb cb, void *ud,
                       struct zerr *err);
/* Manifest loads so far (fills of the repository's memo, failed ones
 * too): for tests and benchmarks. */
uint64_t icechunk_manifest_loads(const struct icechunk *ic);
/* Take another reference; returns ic. */
struct icechunk *icechunk_ref(struct icechunk *ic);
/* Drop a reference; NULL-safe. */
void icechunk_unref(struct icechunk *ic);

/* The repository s shows a snapshot of (borrowed: s holds a reference),
 * or NULL when s is not an Icechunk snapshot store. */
struct icechunk *icechunk_of_store(const struct store *s);

/* A store of snapshot id of ic (reads snapshots/ID now; takes its own
 * reference to ic). *out owned by the caller (store_free). */
int icechunk_open_snapshot(struct icechunk *ic, const uint8_t id[12],
                           struct store **out, struct zerr *err);

#endif
