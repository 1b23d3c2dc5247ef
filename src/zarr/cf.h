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
#include "dtype.h"

/* Fill and missing values compared at most (more are refused). */
#define CF_MAX_FILL 16

enum cf_calendar {
  CF_CAL_STANDARD = 1, /* standard, gregorian: Julian before 1582-10-15 */
  CF_CAL_PROLEPTIC,    /* proleptic_gregorian */
  CF_CAL_NOLEAP,       /* noleap, 365_day */
  CF_CAL_ALL_LEAP,     /* all_leap, 366_day */
  CF_CAL_360,          /* 360_day: twelve months of 30 days */
  CF_CAL_JULIAN        /* julian */
};

/* The width of a decoded number: integers as stored, floats as xarray's
 * dtype (float16 data left unscaled and unmasked stays float16). */
enum cf_num { CF_NUM_INT = 1, CF_NUM_UINT, CF_NUM_F16, CF_NUM_F32, CF_NUM_F64 };

enum cf_kind {
  CF_NUMBER = 1, /* num below */
  CF_MISSING,    /* masked: xarray's NaN */
  CF_TIME,       /* time below */
  CF_NAT,        /* a missing time */
  CF_BOOL,       /* b below */
  CF_TIMEDELTA   /* td below */
};

/* A calendar date and time: year (no year zero in the standard and
 * julian calendars: 1 BC is -1), month 1..12, day 1..31 (1..30 in
 * 360_day), and the nanoseconds since midnight. */
struct cf_time {
  int64_t year;
  int month, day;
  int64_t ns; /* 0 .. 86399999999999 */
};

/* One decoded element. */
struct cf_value {
  enum cf_kind kind;
  enum cf_num width; /* CF_NUMBER */
  union {
    int64_t i;  /* CF_NUM_INT */
    uint64_t u; /* CF_NUM_UINT */
    double d;   /* floats, the value exactly (float32 widened) */
  } num;
  struct cf_time time; /* CF_TIME */
  int b;               /* CF_BOOL: 0 or 1 */
  int64_t td;          /* CF_TIMEDELTA: nanoseconds (never INT64_MIN) */
};

struct cf {
  enum dtype_kind kind; /* the stored type */
  int has_scale, has_offset;
  double scale, offset;
  int scale_wide, offset_wide; /* integers wider than 16 bits (numpy then
                                  scales float32 data in float64) */
  int nfill; /* _FillValue and missing_value values (NaN left out) */
  double fill[CF_MAX_FILL];
  /* valid_min / valid_max (or valid_range): parsed, not applied. */
  int has_valid_min, has_valid_max;
  double valid_min, valid_max;
  int is_bool; /* dtype: "bool" */
  /* Times, when is_time. */
  int is_time;
  enum cf_calendar calendar;
  int64_t unit_ns; /* nanoseconds in one unit */
  int readers;     /* CF_READ_* bits: who reads the unit in the calendar */
  int64_t ref_day; /* the reference date's day number in calendar */
  int64_t ref_ns;  /* and its nanoseconds since midnight (UTC) */
  /* Timedeltas, when is_timedelta: unit_ns above is the unit. */
  int is_timedelta;
  int td_digits; /* decimals a float count's fraction is rounded to */
};

/* Parse the CF encoding of an array of type dt from its attributes (a JSON
 * object: V3 `attributes`, V2 `.zattrs`; NULL is none). fill_value is the
 * array's own fill value (JSON, may be NULL): xarray's Zarr backend reads
 * it as _FillValue when the attributes have none, so pass it to decode as
 * xarray does, NULL to decode the attributes alone. *out is NULL when
 * nothing applies (no CF attribute, or a type CF does not decode: only
 * bool, integers and floats are); else a new object owned by the caller
 * (cf_free). A malformed encoding (scale_factor a string, a bad reference
 * date, an unknown calendar, too many fill values) is -EIO with the
 * reason: the values cannot be decoded as xarray would. */
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
