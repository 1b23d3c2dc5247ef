/* cfvars.h - what xarray's decode_cf_variables learns of a variable from
 * the other variables of its group before decoding it (xarray 2023.01,
 * xarray/conventions.py), for the CF views (src/zarr/cf.h):
 *   - bounds (_update_bounds_attributes): a variable whose `units` hold
 *     "since" and whose `bounds` names another variable gives that one
 *     its `units` and, when it has one, its `calendar`, where that one
 *     has none of its own (setdefault: the first such variable in name
 *     order, the order of a Zarr group's arrays, wins), so `time_bnds`
 *     decodes as the times of `time`;
 *   - character arrays (stackable): an array of one-byte strings (numpy
 *     S1) whose last dimension no variable is named after, and which every
 *     variable using it has as its last dimension with a numpy S type, is
 *     a character array: xarray joins each run along that dimension into
 *     one string (CharacterArrayCoder).
 * A variable is an array of the group with dimension names (V3
 * `dimension_names`, V2 `_ARRAY_DIMENSIONS`): xarray reads no other.
 *
 * Built once per group from its arrays' metadata, immutable, shared
 * read-only between threads; pure (no I/O). */
#ifndef ZARRFS_CFVARS_H
#define ZARRFS_CFVARS_H

#include <jansson.h>
#include <stddef.h>

#include "../util/err.h"

/* One array of the group, as its metadata gives it (borrowed). */
struct cfvar_in {
  const char *name; /* its name in the group */
  json_t *dims;     /* dimension names (a JSON list), or NULL: no variable */
  int is_bytes;     /* a numpy S type (fixed-length bytes) */
  json_t *attrs;    /* its attributes (an object), or NULL */
};

struct cfvars;

/* The group's variables from its n arrays (any order): *out is the
 * caller's (cfvars_free). 0 or -ENOMEM. */
int cfvars_new(const struct cfvar_in *v, size_t n, struct cfvars **out,
               struct zerr *err);

/* Free; NULL-safe. */
void cfvars_free(struct cfvars *cv);

/* The attributes variable `name` is decoded with: attrs (borrowed, may be
 * NULL) with the units and calendar a time variable bounded by it gives
 * where it has none. *out is a new reference when something was added,
 * else NULL (decode with attrs as they are). 0 or -ENOMEM. */
int cfvars_attrs(const struct cfvars *cv, const char *name, json_t *attrs,
                 json_t **out, struct zerr *err);

/* Is dimension dim stackable (see above): a character array with it as
 * its last dimension is joined into strings? */
int cfvars_stackable(const struct cfvars *cv, const char *dim);

#endif
