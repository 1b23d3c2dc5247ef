/* sizeindex.h - the persistent size index: what a mount learned about a
 * stored object's text (its size, its line count), kept on disk so that
 * the next mount of the same store answers without decoding.
 *
 * A record is keyed by its identity: the store location, the key (with
 * whatever the caller appends to tell units of one object apart), the
 * stored object's size and version (what names its bytes: the store's,
 * src/store/store.h store_version), a hash of what turns the bytes into
 * text (the caller's: the array's metadata) and the text rules version. A
 * lookup returns a record only when every field is equal; a record for
 * the same location and key with another identity is stale and is
 * replaced by the next store. A record is a claim: the caller checks it
 * against the truth whenever it decodes (fs/unit.c).
 *
 * On disk: one file per store location in the index directory,
 * lx2-<hash of the location>.idx, a sequence of records, each carrying its
 * length and a CRC-32, appended in batches (up to 64 KiB, a quarter of
 * the cap) by one O_APPEND write each: records learned are kept in memory
 * (and found by lookups) until their batch is full or the index closes,
 * so a daemon that dies loses at most a batch (learned again next time);
 * a lookup that misses reads what other mounts appended at most every
 * 50 ms. Files of format 1 (lx-*.idx) are removed when an index opens. A
 * record that
 * is torn (a crash, a full disk), corrupt or interleaved fails its check
 * and is skipped (the reader resynchronises on the next record marker):
 * a damaged file gives misses, never a wrong record. Several mounts may
 * share a directory: appends take a shared flock, a compaction an
 * exclusive one and replaces the file by rename (a temp file written
 * whole first); an appender whose file was replaced reopens it.
 *
 * Size: each file is bounded by the cap: a store that would pass it
 * first compacts the file to the newest records filling half the cap.
 * Opening the index removes the least recently written files until all
 * of them fit the cap together.
 *
 * Trust (what ssh and gpg ask of their directories): the directory must
 * be the user's (the effective uid's) and writable by nobody else, and
 * every directory above it owned by the user or root and not writable by
 * others unless sticky; otherwise sizeindex_open refuses it, saying which
 * and why (the mount then runs without an index). Files are named
 * relative to the directory opened once, opened without following
 * symbolic links and used only when they are plain files of the user
 * that nobody else may write, with one link; anything else in their place
 * is refused with one log line (that location then has no index) and
 * never written through. A compaction's temp file has a name nobody can
 * guess and is created exclusively. Directories it makes have mode 0700.
 *
 * Thread-safe (one lock per index, held across its file I/O). Failures
 * of the disk never fail a caller: a store that cannot write is a no-op,
 * a lookup that cannot read is a miss. */
#ifndef ZARRFS_SIZEINDEX_H
#define ZARRFS_SIZEINDEX_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* The default cap, bytes of every index file of a directory together. */
#define SIZEINDEX_DEFAULT_CAP (64ull << 20)

/* Who a record is about: every field must match for a lookup to hit. */
struct sizeindex_id {
  const char *location; /* the store (borrowed); at most 65535 bytes */
  const char *key;      /* the object and unit (borrowed); likewise */
  uint64_t obj_size;    /* the stored object's size */
  uint64_t version;     /* what names its bytes (store_version) */
  uint64_t chain_hash;  /* what makes its text: codecs, data type, fill */
  uint32_t rules;       /* the text rules version of the writer */
};

/* What was learned. */
struct sizeindex_rec {
  uint64_t text_size; /* text bytes */
  uint64_t lines;     /* text lines */
};

struct sizeindex;

/* Open (creating it, mode 0700) the index in dir, bounded by cap bytes
 * (0: SIZEINDEX_DEFAULT_CAP); -EPERM (err naming dir and why) when dir is
 * not safe to use (see above). Evicts whole files past the cap. *out
 * owned by the caller (sizeindex_close). */
int sizeindex_open(const char *dir, uint64_t cap, struct sizeindex **out,
                   struct zerr *err);
/* The record of id into *out: 1, or 0 when there is none (or the file
 * cannot be read). */
int sizeindex_lookup(struct sizeindex *x, const struct sizeindex_id *id,
                     struct sizeindex_rec *out);
/* Does the index hold any record of location read from its file (read
 * at most every 50 ms): one of an earlier mount or of another mount, not
 * one this mount stored? A caller whose look-ups cost something (a stat
 * of the object for its version) skips them when not: a first mount,
 * even after it stored records of its own (it knows those sizes
 * already). NULL-safe (0). */
int sizeindex_has_records(struct sizeindex *x, const char *location);
/* Remember rec for id (a record equal to the one known is not written
 * again). 0, or a negative errno the caller may ignore. */
int sizeindex_store(struct sizeindex *x, const struct sizeindex_id *id,
                    const struct sizeindex_rec *rec);
/* Close; NULL-safe. */
void sizeindex_close(struct sizeindex *x);

/* Bytes of the index files of dir together (tests: the cap holds). */
uint64_t sizeindex_dir_bytes(const char *dir);

#endif
