/* url.h - what the network layer decides about URLs: whether one lies
 * under a prefix the user named, whether two share an origin (where
 * credentials may go), where a redirect leads, and a form fit for log
 * lines. Pure functions, no locks; libcurl's URL parser (CURLU) resolves
 * and normalises. */
#ifndef ZARRFS_URL_H
#define ZARRFS_URL_H

#include <stddef.h>

#include "../util/err.h"

/* Does url lie under prefix: same scheme and authority (compared without
 * regard to case), and a path that starts with the prefix's path at a
 * segment boundary ("http://a/b" holds "http://a/b/c" and "http://a/b",
 * not "http://a/bc")? A URL whose path holds a dot segment ("." or "..",
 * also percent-encoded), which a server would resolve out of the prefix,
 * lies under none. 1 or 0. */
int url_under(const char *prefix, const char *url);

/* Do a and b share an origin (scheme, host and port, default ports made
 * explicit; host without regard to case)? 1 or 0; 0 when either is not an
 * absolute http(s) URL. */
int url_same_origin(const char *a, const char *b);

/* Where a redirect from cur to location (absolute or relative, as a
 * Location header gives it) leads: the absolute URL, normalised (dot
 * segments resolved), into *out (malloc'd; the caller frees, also on
 * failure). -EINVAL when it is not a URL, -EACCES when its scheme is not
 * one a redirect may take (http may lead to https, https only to https). */
int url_redirect_target(const char *cur, const char *location, char **out,
                        struct zerr *err);

/* Is ip (an address as text) link-local: 169.254.0.0/16 (also
 * IPv4-mapped), fe80::/10, where cloud metadata services live? */
int url_ip_link_local(const char *ip);

/* url without its query and fragment (a presigned URL's signature never
 * reaches a log line), cut to fit out[n]. */
void url_for_log(const char *url, char *out, size_t n);

/* Do a and b name the same endpoint: one origin and one path (a
 * trailing '/' aside)? 1 or 0. */
int url_same_endpoint(const char *a, const char *b);

/* ---- where a source's redirects may lead ----
 * A scope holds the URL prefixes the user named (-o target_root=URL):
 * a redirect target under one of them may be a link-local address. A
 * confined scope (Icechunk virtual chunks) also lets redirects lead only
 * under those prefixes, and under its `within` prefix (the chunk's
 * container) when it has one. Immutable once made, shared by reference
 * (atomic count): a source holds one for as long as it may be read. */
struct url_scope;

/* A scope of the n prefixes (copied) and within (copied; may be NULL).
 * *out holds one reference (url_scope_unref). */
int url_scope_new(const char *const *prefixes, size_t n, int confined,
                  const char *within, struct url_scope **out, struct zerr *err);
/* Another reference to sc (NULL-safe); returns sc. */
struct url_scope *url_scope_ref(struct url_scope *sc);
/* Drop a reference; the last frees. NULL-safe. */
void url_scope_unref(struct url_scope *sc);
/* The redirect check of http_req for scope ud (a struct url_scope): 0
 * and *allow_link_local, or -EACCES with the reason. */
int url_scope_check(const void *ud, const char *url, int *allow_link_local,
                    struct zerr *err);

#endif
