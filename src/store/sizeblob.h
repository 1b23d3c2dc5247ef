/* sizeblob.h - region records of the persistent size index: what a mount
 * learned about many units at once (every stored unit's text size of a
 * view), kept so that the next mount lays the whole view out from one
 * read instead of a look-up per unit.
 *
 * A record has the identity of sizeindex.h's (every field must match: the
 * caller's key names the region, its version digests every unit's) and,
 * beside the values, an opaque payload (the caller's encoding of the
 * sizes). One file per record in the index directory,
 * lx2-r<hash of location and key>.idx: magic, a CRC-32 of all that
 * follows it, the lengths, the values, the identity, the payload. It is
 * written whole to a temp file and renamed into place, so a reader finds
 * the old record, the new one, or none; a file that fails any check
 * (torn, corrupt, another identity, too large) is a miss. Files are
 * opened relative to the index's checked directory without following
 * links and used only when plain files of the user nobody else may
 * write (sizeindex.h's trust rules), count in its cap and are evicted with
 * its other files, least recently written first.
 *
 * Thread-safe: no state but the directory (read-only). Failures of the
 * disk never fail a caller. */
#ifndef ZARRFS_SIZEBLOB_H
#define ZARRFS_SIZEBLOB_H

#include <stddef.h>

#include "sizeindex.h"

/* Largest payload kept (bytes; and at most a quarter of the cap). */
#define SIZEBLOB_MAX ((size_t)64 << 20)

/* Remember rec and data (len bytes) for id, replacing the record of the
 * same location and key. 0, or a negative errno the caller may ignore. */
int sizeblob_store(struct sizeindex *x, const struct sizeindex_id *id,
                   const struct sizeindex_rec *rec, const void *data,
                   size_t len);
/* The record of id: 1 with its values in *rec and its payload in *data
 * (malloc'd, owned by the caller) and *len; 0 when there is none (or it
 * cannot be read, or fails a check). NULL x: 0. */
int sizeblob_lookup(struct sizeindex *x, const struct sizeindex_id *id,
                    struct sizeindex_rec *rec, void **data, size_t *len);

#endif
