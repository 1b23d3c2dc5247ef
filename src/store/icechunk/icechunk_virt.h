/* icechunk_virt.h - the virtual chunks of an Icechunk repository
 * (src/store/icechunk/icechunk_virt.c), for store_icechunk.c alone.
 *
 * A virtual chunk is read only when its URL lies under one of the
 * repository's virtual chunk containers (the one with the longest
 * url_prefix) and under a prefix the user allowed (the confine): a
 * file:// path through the confine's roots, an http(s):// or s3:// URL
 * through the confine's remote context, or, for an s3:// URL whose
 * container's store names its own endpoint_url, region, anonymous access
 * or path style, through a remote context of that container's (made on
 * first use, credentials as for every s3:// source; an endpoint or a
 * region given as an option wins). Its checksum is checked against the
 * object from the first read on (see icechunk.h). Thread-safe. */
#ifndef ZARRFS_ICECHUNK_VIRT_H
#define ZARRFS_ICECHUNK_VIRT_H

#include "../../io/bytesrc.h"
#include "../../util/err.h"
#include "icechunk_fmt.h"

struct confine;
struct icevirt;

/* The virtual chunk reader of repository r (borrowed) through c
 * (borrowed, may be NULL: no virtual chunk is read); both must outlive
 * it. *out owned by the caller (icevirt_free). */
int icevirt_new(const struct icefmt_repo *r, const struct confine *c,
                struct icevirt **out, struct zerr *err);
/* Free, with the containers' remote contexts; NULL-safe. */
void icevirt_free(struct icevirt *v);
/* The bytes of virtual chunk c into *out (a new reference); counters in
 * stats. Refusals are -EACCES naming the URL and why. */
int icevirt_open(struct icevirt *v, const struct icefmt_chunk *c,
                 struct io_stats *stats, struct bytesrc **out,
                 struct zerr *err);

#endif
