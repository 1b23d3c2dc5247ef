/* sizeindex_int.h - what the persistent index's two files share: the
 * checked directory and the rules for files in it (sizeindex.c), used by
 * the region records of sizeblob.c. Not for other modules. All of it reads
 * what sizeindex_open set and never changes: no lock. */
#ifndef ZARRFS_SIZEINDEX_INT_H
#define ZARRFS_SIZEINDEX_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

struct sizeindex;    /* sizeindex.h */
struct sizeindex_id; /* sizeindex.h */

/* The index directory, opened and checked once (files are named relative
 * to it). */
int sizeindex_dirfd(const struct sizeindex *x);
/* The cap: bytes of every index file of the directory together. */
uint64_t sizeindex_cap(const struct sizeindex *x);
/* id's identity bytes as records carry them into buf (at least 32 bytes
 * plus its location and key): their length, or 0 when a name is too
 * long. */
size_t sizeindex_id_bytes(const struct sizeindex_id *id, unsigned char *buf);
/* Why a file (st: opened without following links) must not be used, or
 * NULL: a plain file of the user, with one link, nobody else may write. */
const char *sizeindex_unsafe(const struct sizeindex *x, const struct stat *st,
                             char *buf, size_t len);
/* A new temp file for name, created exclusively under a name nobody can
 * guess (in tmp, len bytes): its descriptor, or -1. */
int sizeindex_temp(struct sizeindex *x, const char *name, char *tmp,
                   size_t len);
/* Write len bytes of p to fd whole (a write cut short goes on): 0, or
 * -1. */
int sizeindex_write_all(int fd, const unsigned char *p, size_t len);
/* Remove the least recently written files until all fit the cap. */
void sizeindex_evict(struct sizeindex *x);

#endif
