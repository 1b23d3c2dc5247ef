/* kerchunk.h - kerchunk reference files (version 0 and 1) into a manifest
 * table (src/store/manifest.h).
 *
 * Version 0 is a flat object key -> value; version 1 is
 * {"version": 1, "templates": {...}, "gen": [...], "refs": {...}}. A value
 * is inline text (the UTF-8 bytes of the string, NULs allowed),
 * "base64:DATA", [url] (a whole file) or [url, offset, length]; urls may
 * use {{name}} templates; `gen` entries expand {{expr}} integer
 * expressions over their dimensions, at most 50,000,000 keys in all:
 * every entry's count is summed before any key is made, so a file asking
 * for more is refused in work and memory bounded by its own size. Relative urls are relative to the
 * reference file's directory. A malformed value makes only its key fail
 * (MF_BAD: EIO with the reason on read), so does a url with a NUL byte
 * inside, also one a template brings ("target path contains a NUL byte");
 * a key that could escape the tree ("..", empty segments, NUL) is left out
 * with a warning. A key written
 * twice fails with EIO ("duplicate key"); a `refs` key that `gen` also
 * makes wins over the generated one.
 *
 * No DOM of the refs: a streaming scanner walks the object in the file's
 * text (validating it as strictly as jansson; a raw NUL byte outside a
 * string is refused), decoding keys and the common values ("text",
 * [url], [url, int, int]) in place; version, templates, gen and values of
 * other shapes go through jansson. 1,000,000 entries load in ~0.3 s with
 * a peak of ~110 MB (the text plus the table). */
#ifndef ZARRFS_KERCHUNK_H
#define ZARRFS_KERCHUNK_H

#include <stdint.h>

#include "../util/err.h"
#include "manifest.h"

/* Load path. *out is owned by the caller (manifest_free). A file that is
 * not a JSON object of references is -EIO with the reason. */
int kerchunk_load(const char *path, struct manifest **out, struct zerr *err);

/* Parse a reference file already in memory: text is NUL-terminated (len
 * bytes before the NUL), name names it in messages, and relative targets
 * resolve against base (a directory, or the URL of the directory of a
 * remote reference file). */
int kerchunk_load_mem(const char *text, size_t len, const char *name,
                      const char *base, struct manifest **out,
                      struct zerr *err);

/* Render a template string: {{name}} from templates (a JSON object, may be
 * NULL), {{expr}} an integer expression (+ - * // / % parentheses, unary
 * minus) over the variables names[i] = vals[i]. *out is malloc'd (caller
 * frees). A result with a NUL byte inside (from a template value) is
 * -EINVAL. Exposed for the unit tests. */
int kerchunk_render(const char *tmpl, const void *templates,
                    const char *const *names, const int64_t *vals, int nvars,
                    char **out, struct zerr *err);

#endif
