/* cfmask.h - CF masks of the values xarray masks but does not unpack
 * (src/zarr/cf.h gives the model): complex numbers, which xarray keeps
 * complex (a masked one is nan+nanj; a fill [re, im] is one value; no
 * scale_factor, add_offset nor time units), bools, which xarray makes
 * objects (a masked one is NaN, the others stay True and False), and
 * strings: numpy S arrays and character arrays xarray joins into strings
 * (src/zarr/cfvars.h), whose masked values views show empty.
 *
 * Pure functions; the struct cf they fill is cf.h's, immutable once
 * made and shared read-only between threads. */
#ifndef ZARRFS_CFMASK_H
#define ZARRFS_CFMASK_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "cftype.h"

/* A number of a CF attribute: a JSON number, "NaN", "Infinity",
 * "-Infinity" (what Zarr writes for non-finite floats), or an integer
 * literal beyond int64 that zjson carried as digits
 * (dtype_int_literal); booleans are 0 and 1. 0, or -1 when j is none of
 * these. */
int cfmask_json_num(json_t *j, double *out);

/* The encoding of a complex array into c (cf_parse's): its fill values
 * from _FillValue (else fill_value) and missing_value. 1 when any
 * applies, 0 when none, -EIO when malformed or when scale_factor,
 * add_offset or time units would need decoding. */
int cfmask_parse_complex(struct cf *c, json_t *attrs, json_t *fill_value,
                         struct zerr *err);

/* For cf_decode: when v (loaded from an element of c's type) is a complex
 * value or a bool that c masks, mask it (v becomes nan+nanj, CF_MISSING
 * or CF_BOOL) and return 1; else 0 (decoded as a number). */
int cfmask_decode(const struct cf *c, struct cf_value *v);

/* The CF encoding of a numpy S array, or of a character array whose
 * characters xarray joins (joined), as xarray decodes it: strings equal
 * to a _FillValue or missing_value (strings of the attributes; else, when
 * xarray_fill, the array's own fill bytes `fill`, as xarray's Zarr
 * backend reads it) are masked; `_Encoding` decodes the bytes as text,
 * which changes nothing in what the views show. *out is NULL when nothing
 * applies (none of these, not joined); else the caller's (cf_free,
 * src/zarr/cf.h). A
 * fill longer than CF_MAX_BFILL bytes, or too many, is -EIO. */
int cfmask_parse_bytes(json_t *attrs, const uint8_t *fill, size_t fill_len,
                       int xarray_fill, int joined, struct cf **out,
                       struct zerr *err);

/* Is string s (n bytes; trailing NULs do not count, as numpy compares)
 * masked by c (made by cfmask_parse_bytes)? */
int cfmask_bytes_masked(const struct cf *c, const uint8_t *s, size_t n);

#endif
