/* zjson.h - jansson under zarrfs' rules: every JSON tree (metadata,
 * consolidated tables, a reference's odd values) is loaded and dumped
 * here, so that out of memory is told from bad input everywhere.
 *
 * The allocation watcher is process-wide (jansson's allocator is): it is
 * installed at program start, before any thread runs; the failure flag
 * is per thread. No lock. */
#ifndef ZARRFS_ZJSON_H
#define ZARRFS_ZJSON_H

#include <jansson.h>
#include <stddef.h>

#include "../util/err.h"

/* Parse JSON text leniently (bare NaN, Infinity, -Infinity become strings
 * "NaN", "Infinity", "-Infinity"); NUL bytes in strings are allowed.
 * Returns a new reference, or NULL with err set: ENOMEM when out of
 * memory, else EIO (not valid JSON). */
json_t *zjson_loadb(const char *text, size_t len, struct zerr *err);

/* Compact JSON text of j (any value), NUL-terminated, owned by the caller;
 * NULL when j is NULL or memory ran out. Not json_dumps: out of memory,
 * jansson's own dump can leave an object key out and still succeed (seen
 * in tests/unit/views/check_allocfail.c), so text made for a stat and for a later
 * read, or metadata re-parsed from it, could differ. json_dumpb writes
 * into our buffer, where nothing can fail; its own allocations (the loop
 * check) fail the whole dump. */
char *zjson_dump(json_t *j);

/* Out of memory inside jansson. jansson often reports a failed allocation
 * as a syntax error ("string or '}' expected"), so every allocation it
 * makes goes through a watcher (installed process-wide at program start):
 * zjson_watch() starts watching on this thread, and zjson_nomem() then
 * says whether an allocation failed since. A parse that fails while
 * zjson_nomem() is 1 failed for lack of memory, not on bad input. */
void zjson_watch(void);
int zjson_nomem(void);
/* Tests: let jansson allocate through fn (NULL: malloc again). */
void zjson_set_malloc(void *(*fn)(size_t));

#endif
