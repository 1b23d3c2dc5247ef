/* cftype.h - the types of the CF encoding and of a decoded element
 * (src/zarr/cf.h says what they mean and how they are made): shared by
 * cf.c and cfmask.c. Header only. */
#ifndef ZARRFS_CFTYPE_H
#define ZARRFS_CFTYPE_H

#include <stddef.h>
#include <stdint.h>

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
  CF_TIMEDELTA,  /* td below */
  CF_COMPLEX     /* num.d and im, of width F32 or F64; both NaN: masked
                    (xarray's nan+nanj) */
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
  double im;           /* CF_COMPLEX: the imaginary part */
};

/* Longest string fill value compared (a longer one is refused). */
#define CF_MAX_BFILL 64

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
  double fill_im[CF_MAX_FILL]; /* complex kinds: each fill's imaginary
                                  part (fill[] its real part) */
  /* Strings (numpy S arrays, character arrays joined: cfmask.h):
   * a value equal to one of these, trailing NULs aside as numpy
   * compares, is masked. */
  int is_bytes;
  int nbfill;
  size_t bfill_len[CF_MAX_FILL];
  uint8_t bfill[CF_MAX_FILL][CF_MAX_BFILL];
};

#endif
