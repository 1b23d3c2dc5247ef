/* jdup.h - duplicate keys of one JSON object, which a DOM parser (jansson)
 * silently folds into the last one. Reference files and manifests must
 * report a duplicated key instead of serving whichever came last.
 *
 * A light scan over the text with the JSON lexer (no DOM): it walks the
 * top-level object, or the object that is the value of its member
 * `member`, and counts or collects that object's keys. Keys are compared
 * decoded, as the DOM compares them ("a" and "\u0061" are one key). */
#ifndef ZARRFS_JDUP_H
#define ZARRFS_JDUP_H

#include <stddef.h>

#include "../util/err.h"

/* The keys that occur more than once in the object (decoded, each once):
 * *out is a malloc'd array of malloc'd strings (jdup_free), *n its length.
 * expected is the number of distinct keys the DOM saw: when the scan
 * counts as many, nothing is collected (the common, cheap case). Text that
 * does not scan gives *n = 0 (the DOM parser reported it already). */
int jdup_keys(const char *text, size_t len, const char *member, size_t expected,
              char ***out, size_t *n, struct zerr *err);
/* Free what jdup_keys returned; NULL-safe. */
void jdup_free(char **keys, size_t n);

#endif
