/* rversion.h - the version a remote source reads, named ahead by whoever
 * opens it: a manifest that recorded the object's ETag or last
 * modification time (an Icechunk virtual chunk reference) pins the
 * source to that version, so that even its first read fails when the
 * object no longer matches.
 *
 * A pinned source asks for its version on every request (If-Match with
 * the ETag, If-Unmodified-Since with the time), checks what the server
 * answers (the ETag, or a Last-Modified not after the time: servers that
 * ignore preconditions are caught too), and keeps its blocks apart from
 * those of other versions of the URL: a source pinned to a stale version
 * fails alone, while another one of the same URL pinned to the current
 * version, or not pinned at all, reads on. A mismatch is -EIO whose
 * message names the URL and the checksum. */
#ifndef ZARRFS_RVERSION_H
#define ZARRFS_RVERSION_H

#include <stdint.h>

#include "../io/bytesrc.h"
#include "../util/err.h"

/* Pin src, a byte source remote_open (or confine_open_url) has just
 * returned and nobody has read yet, to etag (quotes optional; NULL or ""
 * for none) or else to "not modified after" last_modified (seconds since
 * the epoch, UTC; 0 for none). Neither: nothing to pin, 0. -EINVAL when
 * the ETag cannot be sent in a header (control characters, too long). */
int rversion_pin(struct bytesrc *src, const char *etag, uint32_t last_modified,
                 struct zerr *err);

/* An HTTP date (IMF-fixdate "Sun, 06 Nov 1994 08:49:37 GMT", RFC 850 or
 * asctime) as seconds since the epoch into *secs: 0, or -EINVAL. */
int rversion_parse_date(const char *s, int64_t *secs);
/* secs (years 1970 to 9999) as an IMF-fixdate into out (at least 32
 * bytes). */
void rversion_format_date(int64_t secs, char *out);
/* Do two ETags name the same version (surrounding quotes ignored, a weak
 * one equal only to a weak one)? */
int rversion_etag_same(const char *a, const char *b);

#endif
