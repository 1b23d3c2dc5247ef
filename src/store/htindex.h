/* htindex.h - the entries of a web server's directory index page (nginx
 * `autoindex on`, Apache's mod_autoindex, `python3 -m http.server`,
 * lighttpd's dir-listing, Caddy's browse), read as rclone's http backend
 * reads them: the href of each <a> element that names one entry right
 * below the listed directory, "NAME" a file and "NAME/" a directory,
 * percent-decoded (and HTML character references in the attribute value
 * decoded first).
 *
 * An href is taken when, resolved against the page's URL, it stays on the
 * same origin (scheme, host and port) and names a child of the page's own
 * path: a relative "NAME" or "./NAME", an absolute path "/DIR/NAME", or a
 * full URL "http://HOST/DIR/NAME". Everything else is not an entry and is
 * never followed: another host or scheme, the parent ("../"), the page
 * itself, a link with a query (Apache's "?C=N;O=D" sort links), anything
 * two or more segments deep, and a name that cannot be a file name (empty,
 * "." or "..", a '/', NUL or control character once decoded, longer than
 * 255 bytes). The same name may come twice (a link and its icon): the
 * caller keeps one.
 *
 * Bounded: one pass over the page (the caller caps its size), at most
 * HTINDEX_MAX_ENTRIES entries, an href of at most HTINDEX_HREF_MAX bytes
 * (a longer one is skipped). Pure: no allocation, no state, thread-safe,
 * FUSE-free. */
#ifndef ZARRFS_HTINDEX_H
#define ZARRFS_HTINDEX_H

#include <stddef.h>

#include "../util/err.h"

/* Entries of one page at most: past them the page is refused (-EFBIG). */
#define HTINDEX_MAX_ENTRIES 1000000
/* Longest href looked at (bytes, as written in the page). */
#define HTINDEX_HREF_MAX 4096

/* One entry: its decoded name (len bytes, NUL-terminated, valid during the
 * call) and whether it is a directory. Non-zero stops the parse. */
typedef int (*htindex_cb)(void *ud, const char *name, size_t len, int is_dir);

/* The entries of page (len bytes) listing the directory at url (a full
 * http(s):// URL ending in '/'), each through cb. 0, cb's non-zero answer
 * when it stopped, or a negative errno: -EINVAL for a url that is not
 * such a URL, -EFBIG past HTINDEX_MAX_ENTRIES entries. */
int htindex_parse(const char *page, size_t len, const char *url, htindex_cb cb,
                  void *ud, struct zerr *err);

#endif
