/* zkey.h - the one rule for store keys: which key strings may name an
 * object of a store at all. Pure; no state, no allocation. Used by every
 * store backend, by manifest and kerchunk parsers and by consolidated
 * metadata, so a key that could escape a store is refused wherever it is
 * first seen. */
#ifndef ZARRFS_ZKEY_H
#define ZARRFS_ZKEY_H

/* Reject keys that could escape the store: "..", "." or empty segments,
 * a leading '/', NUL bytes. Returns 0 or -EINVAL. */
int zkey_valid(const char *key);

#endif
