/* icechunk_common.h - what the parsers of the Icechunk format module
 * (icechunk_repo.c, icechunk_snap.c, icechunk_manifest.c) share and
 * nothing outside the module includes. */
#ifndef ZARRFS_ICECHUNK_COMMON_H
#define ZARRFS_ICECHUNK_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include "icechunk_fmt.h"

/* Most dimensions an array may have here. */
#define ICEFMT_MAX_NDIM 64

/* A malloc'd copy of s[0..n) (caller frees) with NUL bytes shown as
 * spaces; NULL without memory. */
char *icefmt_dup_text(const char *s, size_t n);
/* Read the whole metadata file key of type want through s and decode its
 * payload: *fb malloc'd (caller frees), *len its length. Errors carry the
 * key; -ENOENT passes through. */
int icefmt_read_file(struct store *s, const char *key, enum icefmt_type want,
                     size_t max_decode, uint8_t **fb, size_t *len,
                     struct zerr *err);

/* The virtual chunk containers of a spec 2 repo info table t (its
 * configuration, a FlexBuffers map in slot 9), appended to r. A
 * configuration that cannot be read names no container. */
struct fb_table;
int icefmt_repo_config(const struct fb_table *t, struct icefmt_repo *r,
                       struct zerr *err);

#endif
