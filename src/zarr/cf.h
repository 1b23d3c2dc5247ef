/* cf.h - CF conventions decoding, as xarray's decode_cf reads an array:
 * packed values unpacked (scale_factor, add_offset, _Unsigned), fill and
 * missing values masked (_FillValue, missing_value), times decoded ("UNIT since
 * DATE" in one of the CF calendars) and xarray's `dtype: bool` flags.
 *
 * The model is xarray 2023.01 with numpy 1.24 and cftime 1.6 (Debian 12),
 * element by element:
 *   - mask before unpack: with a _FillValue or missing_value (scalar or
 *     list; NaN entries dropped) the value is first promoted as xarray
 *     promotes it (integers of 1 or 2 bytes to float32, wider ones to
 *     float64, floats unchanged) and compared in that type;
 *   - unpack in the type xarray chooses: float32 for float32/float16 data
 *     and for 1- or 2-byte integers without add_offset, else float64; in
 *     float32 both the product and the sum are rounded to float32, as
 *     numpy computes a float32 array with a Python float;
 *   - valid_min, valid_max and valid_range are parsed but mask nothing:
 *     xarray does not apply them (its CFMaskCoder reads only _FillValue
 *     and missing_value);
 *   - times: standard, gregorian and proleptic_gregorian go through pandas
 *     when the reference date and the result lie within datetime64[ns]
 *     and pandas knows the unit (nanoseconds; a float count truncated
 *     toward zero after one multiplication in the count's own float
 *     type), else through cftime when it knows the unit (the count as a
 *     float64 rounded half-even to microseconds), else not at all (a
 *     count of nanoseconds beyond datetime64[ns]: -ERANGE); units as
 *     the two read them (cf.c's units_table: `nanoseconds` through pandas
 *     alone, `d`, `hr`, `s`, `ms`... through cftime alone, `months` in
 *     360_day, `common_years` in noleap); the
 *     standard calendar is Julian before 1582-10-15 as in cftime, and
 *     standard and julian have no year zero. xarray chooses pandas or
 *     cftime for a whole array from its extremes; here the choice is made
 *     per value, which differs only below the microsecond;
 *   - `dtype: "bool"`: nonzero (NaN included) is true, as numpy's astype.
 *   - a bool array (and a complex one) masked by _FillValue or
 *     missing_value: xarray promotes it to objects (complex: stays
 *     complex), so a masked value is NaN (nan+nanj) and the others stay
 *     True and False (their complex values); complex arrays are masked
 *     only (a fill [re, im] is one value), scale_factor, add_offset or
 *     time units on them are refused.
 *   - `_Unsigned: "true"` reads a signed integer type as the unsigned
 *     one of its size ("false" the reverse), its _FillValue cast with it.
 *   - timedeltas: `units` exactly one of xarray's TIME_UNITS (days,
 *     hours, minutes, seconds, milliseconds, microseconds, nanoseconds;
 *     no "since") become nanosecond durations as pandas' to_timedelta
 *     makes them: an integer count multiplied exactly; a float count
 *     split into its integer part (toward zero) times the unit, plus the
 *     fraction rounded half-even to 9 decimals (6 for milliseconds, 3 for
 *     microseconds, 0 for nanoseconds) times the unit, truncated; NaN is
 *     NaT. A `dtype: "timedelta64[...]"` attribute (what later xarray
 *     writes beside such units) changes nothing.
 * Not decoded (left to the Zarr values): calendars other than the nine CF
 * names, other unit names without "since"; refused (-EIO, as xarray fails
 * the variable): a "since" unit neither pandas nor cftime reads in its
 * calendar (us, ns, weeks, nanoseconds in noleap, months but in 360_day).
 *
 * A struct cf is parsed once, immutable, and shared read-only between
 * threads; cf_decode is pure. */
#ifndef ZARRFS_CF_H
#define ZARRFS_CF_H

#include <jansson.h>
#include <stdint.h>

#include "../util/err.h"
#include "cftype.h"
#include "dtype.h"

/* Parse the CF encoding of an array of type dt from its attributes (a JSON
 * object: V3 `attributes`, V2 `.zattrs`; NULL is none). fill_value is the
 * array's own fill value (JSON, may be NULL): xarray's Zarr backend reads
 * it as _FillValue when the attributes have none, so pass it to decode as
 * xarray does, NULL to decode the attributes alone. *out is NULL when
 * nothing applies (no CF attribute, or a type CF does not decode: only
 * bool, integers, floats and complex are); else a new object owned by the
 * caller (cf_free). Strings: src/zarr/cfmask.h. A malformed encoding
 * (scale_factor a string, a bad reference date, an unknown calendar, too many
 * fill values) is -EIO with the reason: the values cannot be decoded as xarray
 * would. */
int cf_parse(json_t *attrs, json_t *fill_value, const struct dtype *dt,
             struct cf **out, struct zerr *err);

/* Free; NULL-safe. */
void cf_free(struct cf *c);

/* Decode one element (elem: dt->size bytes in host order, as the text
 * views hold it). 0, or -ERANGE when the time lies beyond what xarray can
 * represent (more than 2^63 microseconds from the reference; a duration
 * past 2^63 nanoseconds). */
int cf_decode(const struct cf *c, const void *elem, struct cf_value *out);

/* Who reads a time unit (struct cf.readers): pandas (the names it knows,
 * in the standard calendars), cftime (its names, in that calendar). */
#define CF_READ_PANDAS 1
#define CF_READ_CFTIME 2

/* Parse "UNIT since DATE" (tests): 0 and the unit in ns, who reads it in
 * calendar cal (CF_READ_* bits), the reference day and ns of day in cal;
 * -EIO when malformed or when neither reader takes the unit in cal. */
int cf_parse_units(const char *units, enum cf_calendar cal, int64_t *unit_ns,
                   int *readers, int64_t *ref_day, int64_t *ref_ns);

/* The date of day number `day` in calendar cal (tests): the Julian Day
 * Number in the standard, proleptic_gregorian and julian calendars, days
 * since 0000-01-01 in the others. */
void cf_date_of_day(enum cf_calendar cal, int64_t day, struct cf_time *t);

#endif
