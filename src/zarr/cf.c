/* cf.c - CF encoding parsed from an array's attributes, and the decoding
 * of one element as xarray's decode_cf gives it (the model, and where it
 * departs, are in cf.h). */
#include "cf.h"
#include "cfmask.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NS_PER_DAY 86400000000000ll
/* The Julian Day Number of 1970-01-01 (Gregorian). */
#define JDN_EPOCH 2440588
/* The first Julian Day Number of the Gregorian calendar (1582-10-15). */
#define JDN_GREGORIAN 2299161

/* ---- calendars ---- */

/* Floor division (b > 0). */
static int64_t fdiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* Days before month m (1..12) in a year of the fixed-length calendars. */
static int64_t days_before(int m, int leap) {
  static const int cum[12] = {0,   31,  59,  90,  120, 151,
                              181, 212, 243, 273, 304, 334};
  return cum[m - 1] + (leap && m > 2);
}

/* Julian Day Number of an astronomical-year date, Gregorian or Julian. */
static int64_t jdn_of(int64_t y, int m, int d, int gregorian) {
  int64_t a = (14 - m) / 12, yy = y + 4800 - a, mm = m + 12 * a - 3;
  int64_t j = d + (153 * mm + 2) / 5 + 365 * yy + fdiv(yy, 4);
  return gregorian ? j - fdiv(yy, 100) + fdiv(yy, 400) - 32045 : j - 32083;
}

/* The astronomical-year date of a Julian Day Number. */
static void date_of_jdn(int64_t j, int gregorian, struct cf_time *t) {
  int64_t b = 0, c;
  if (gregorian) {
    int64_t a = j + 32044;
    b = fdiv(4 * a + 3, 146097);
    c = a - fdiv(146097 * b, 4);
  } else {
    c = j + 32082;
  }
  int64_t d = fdiv(4 * c + 3, 1461);
  int64_t e = c - fdiv(1461 * d, 4);
  int64_t m = fdiv(5 * e + 2, 153);
  t->day = (int)(e - fdiv(153 * m + 2, 5) + 1);
  t->month = (int)(m + 3 - 12 * fdiv(m, 10));
  t->year = 100 * b + d - 4800 + fdiv(m, 10);
}

/* Does the calendar count 1 BC as year -1 (no year zero)? */
static int no_year_zero(enum cf_calendar cal) {
  return cal == CF_CAL_STANDARD || cal == CF_CAL_JULIAN;
}

/* The day number of a date in cal (years as the calendar writes them). */
static int64_t day_of_date(enum cf_calendar cal, int64_t y, int m, int d) {
  if (no_year_zero(cal) && y < 0)
    y += 1; /* astronomical: 1 BC is year 0 */
  switch (cal) {
  case CF_CAL_NOLEAP:
    return y * 365 + days_before(m, 0) + d - 1;
  case CF_CAL_ALL_LEAP:
    return y * 366 + days_before(m, 1) + d - 1;
  case CF_CAL_360:
    return y * 360 + (m - 1) * 30 + d - 1;
  case CF_CAL_JULIAN:
    return jdn_of(y, m, d, 0);
  case CF_CAL_PROLEPTIC:
    return jdn_of(y, m, d, 1);
  default: /* standard: Julian before 1582-10-15 */
    return (y > 1582 || (y == 1582 && (m > 10 || (m == 10 && d >= 15))))
               ? jdn_of(y, m, d, 1)
               : jdn_of(y, m, d, 0);
  }
}

/* The date of a day number of cal (see day_of_date). */
void cf_date_of_day(enum cf_calendar cal, int64_t day, struct cf_time *t) {
  int64_t len = cal == CF_CAL_NOLEAP ? 365 : cal == CF_CAL_ALL_LEAP ? 366 : 360;
  switch (cal) {
  case CF_CAL_NOLEAP:
  case CF_CAL_ALL_LEAP: {
    t->year = fdiv(day, len);
    int64_t doy = day - t->year * len;
    int m = 12;
    while (days_before(m, len == 366) > doy)
      m--;
    t->month = m;
    t->day = (int)(doy - days_before(m, len == 366) + 1);
    return;
  }
  case CF_CAL_360: {
    t->year = fdiv(day, 360);
    int64_t doy = day - t->year * 360;
    t->month = (int)(doy / 30) + 1;
    t->day = (int)(doy % 30) + 1;
    return;
  }
  case CF_CAL_JULIAN:
    date_of_jdn(day, 0, t);
    break;
  case CF_CAL_PROLEPTIC:
    date_of_jdn(day, 1, t);
    break;
  default:
    date_of_jdn(day, day >= JDN_GREGORIAN, t);
    break;
  }
  if (no_year_zero(cal) && t->year <= 0)
    t->year -= 1;
}

/* ---- units and reference dates ---- */

/* One unit name (matched without regard to case, as both readers do):
 * nanoseconds in it, and who reads it. xarray tries pandas first, which
 * takes the name lowercased with a missing plural "s" added (days, hours,
 * minutes, seconds, milliseconds, microseconds, nanoseconds), then
 * cftime's num2date, which takes cftime 1.6's UNIT_CONVERSION_FACTORS
 * (the abbreviations d, h, hr, hrs, min, mins, s, sec, secs, ms, msec,
 * msecs, millisec(s), microsec(s) too, and months in the 360_day calendar
 * only, common_years in noleap / 365_day only; not nanoseconds). A name
 * neither reads (us, ns, weeks, years) is refused, as xarray refuses it.
 * Checked against xarray itself: tests/writers/cf_expect.py. */
static const struct unit_name {
  const char *name;
  int64_t ns;
  int pandas, cftime;
  enum cf_calendar only; /* cftime reads it in this calendar alone (0: any) */
} units_table[] = {
    {"days", NS_PER_DAY, 1, 1, 0},
    {"day", NS_PER_DAY, 1, 1, 0},
    {"d", NS_PER_DAY, 0, 1, 0},
    {"hours", 3600000000000ll, 1, 1, 0},
    {"hour", 3600000000000ll, 1, 1, 0},
    {"hrs", 3600000000000ll, 0, 1, 0},
    {"hr", 3600000000000ll, 0, 1, 0},
    {"h", 3600000000000ll, 0, 1, 0},
    {"minutes", 60000000000ll, 1, 1, 0},
    {"minute", 60000000000ll, 1, 1, 0},
    {"mins", 60000000000ll, 0, 1, 0},
    {"min", 60000000000ll, 0, 1, 0},
    {"seconds", 1000000000ll, 1, 1, 0},
    {"second", 1000000000ll, 1, 1, 0},
    {"secs", 1000000000ll, 0, 1, 0},
    {"sec", 1000000000ll, 0, 1, 0},
    {"s", 1000000000ll, 0, 1, 0},
    {"milliseconds", 1000000ll, 1, 1, 0},
    {"millisecond", 1000000ll, 1, 1, 0},
    {"millisecs", 1000000ll, 0, 1, 0},
    {"millisec", 1000000ll, 0, 1, 0},
    {"msecs", 1000000ll, 0, 1, 0},
    {"msec", 1000000ll, 0, 1, 0},
    {"ms", 1000000ll, 0, 1, 0},
    {"microseconds", 1000ll, 1, 1, 0},
    {"microsecond", 1000ll, 1, 1, 0},
    {"microsecs", 1000ll, 0, 1, 0},
    {"microsec", 1000ll, 0, 1, 0},
    {"nanoseconds", 1, 1, 0, 0},
    {"nanosecond", 1, 1, 0, 0},
    {"months", 30 * NS_PER_DAY, 0, 1, CF_CAL_360},
    {"month", 30 * NS_PER_DAY, 0, 1, CF_CAL_360},
    {"common_years", 365 * NS_PER_DAY, 0, 1, CF_CAL_NOLEAP},
    {"common_year", 365 * NS_PER_DAY, 0, 1, CF_CAL_NOLEAP},
};

/* Does xarray go through pandas for this calendar (a standard one)? */
static int pandas_calendar(enum cf_calendar cal) {
  return cal == CF_CAL_STANDARD || cal == CF_CAL_PROLEPTIC;
}

/* Read an unsigned decimal of 1..maxd digits at *p; -1 if none. */
static int64_t read_num(const char **p, int maxd) {
  int64_t v = 0;
  int n = 0;
  while (n < maxd && isdigit((unsigned char)**p)) {
    v = v * 10 + (**p - '0');
    (*p)++;
    n++;
  }
  return n ? v : -1;
}

/* Parse a reference date as cftime and pandas read it: Y-M-D (year of
 * any length, signed), then optionally [ T]H[:M[:S[.frac]]], then
 * optionally a zone (Z, UTC, GMT, or +-HH[[:]MM]). Into the day number of
 * cal and the nanoseconds since midnight UTC. */
static int parse_ref(const char *s, enum cf_calendar cal, int64_t *day,
                     int64_t *ns) {
  const char *p = s;
  int neg = *p == '-';
  if (*p == '-' || *p == '+')
    p++;
  int64_t y = read_num(&p, 9);
  if (y < 0 || *p++ != '-')
    return -EIO;
  int64_t mo = read_num(&p, 2);
  if (mo < 1 || mo > 12 || *p++ != '-')
    return -EIO;
  int64_t d = read_num(&p, 2);
  int maxd = cal == CF_CAL_360 ? 30 : 31;
  if (d < 1 || d > maxd)
    return -EIO;
  if (neg)
    y = -y;
  int64_t h = 0, mi = 0, sec = 0, frac = 0;
  if (*p == ' ' || *p == 'T') {
    const char *q = p + 1;
    while (*q == ' ')
      q++;
    if (isdigit((unsigned char)*q)) {
      p = q;
      h = read_num(&p, 2);
      if (*p == ':') {
        p++;
        if ((mi = read_num(&p, 2)) < 0)
          return -EIO;
        if (*p == ':') {
          p++;
          if ((sec = read_num(&p, 2)) < 0)
            return -EIO;
          if (*p == '.') {
            p++;
            int64_t scale = 100000000;
            if (!isdigit((unsigned char)*p))
              return -EIO;
            for (; isdigit((unsigned char)*p); p++, scale /= 10)
              frac += (*p - '0') * scale;
          }
        }
      }
      if (h > 24 || mi > 59 || sec > 60)
        return -EIO;
    }
  }
  while (*p == ' ')
    p++;
  int64_t tz = 0; /* minutes east of UTC */
  if (!strcasecmp(p, "Z") || !strcasecmp(p, "UTC") || !strcasecmp(p, "GMT")) {
    p += strlen(p);
  } else if (*p == '+' || *p == '-') {
    int sign = *p++ == '-' ? -1 : 1;
    const char *q = p;
    int64_t hh = read_num(&p, 2);
    if (hh < 0)
      return -EIO;
    int64_t mm = 0;
    if (*p == ':')
      p++;
    if (isdigit((unsigned char)*p))
      mm = read_num(&p, 2);
    if (p - q == 4 || p - q == 5 || p - q <= 2)
      tz = sign * (hh * 60 + mm);
    else
      return -EIO;
  }
  if (*p)
    return -EIO;
  *day = day_of_date(cal, y, (int)mo, (int)d);
  int64_t t = ((h * 60 + mi - tz) * 60 + sec) * 1000000000ll + frac;
  int64_t carry = fdiv(t, NS_PER_DAY);
  *day += carry;
  *ns = t - carry * NS_PER_DAY;
  return 0;
}

/* Parse "UNIT since DATE". */
int cf_parse_units(const char *units, enum cf_calendar cal, int64_t *unit_ns,
                   int *readers, int64_t *ref_day, int64_t *ref_ns) {
  /* xarray: "(.+) since (.+)", the first group greedy: the last " since ". */
  const char *since = NULL;
  for (const char *q = strstr(units, " since "); q;
       q = strstr(q + 1, " since "))
    since = q;
  if (!since || since == units || !since[7])
    return -EIO;
  const char *a = units, *b = since;
  while (a < b && isspace((unsigned char)*a))
    a++;
  while (b > a && isspace((unsigned char)b[-1]))
    b--;
  size_t n = (size_t)(b - a);
  const struct unit_name *u = NULL;
  for (size_t i = 0; i < sizeof units_table / sizeof *units_table; i++)
    if (strlen(units_table[i].name) == n &&
        !strncasecmp(units_table[i].name, a, n))
      u = &units_table[i];
  if (!u)
    return -EIO;
  /* a unit neither reader takes in this calendar: xarray fails */
  int cftime = u->cftime && (!u->only || u->only == cal);
  if (!cftime && !(u->pandas && pandas_calendar(cal)))
    return -EIO;
  char date[128];
  const char *ds = since + 7;
  while (isspace((unsigned char)*ds))
    ds++;
  size_t dl = strlen(ds);
  while (dl && isspace((unsigned char)ds[dl - 1]))
    dl--;
  if (dl == 0 || dl >= sizeof date)
    return -EIO;
  memcpy(date, ds, dl);
  date[dl] = '\0';
  *unit_ns = u->ns;
  *readers = (u->pandas ? CF_READ_PANDAS : 0) | (cftime ? CF_READ_CFTIME : 0);
  return parse_ref(date, cal, ref_day, ref_ns);
}

/* ---- attributes ---- */

/* A number or a list of one number (xarray takes .item() of an array). */
static int json_scalar(json_t *j, double *out) {
  if (json_is_array(j) && json_array_size(j) == 1)
    j = json_array_get(j, 0);
  return cfmask_json_num(j, out);
}

/* Add the fill values of attribute j (a number or a list), NaN left out. */
static int add_fills(struct cf *c, json_t *j, const char *name,
                     struct zerr *err) {
  if (!j || json_is_null(j))
    return 0;
  size_t n = json_is_array(j) ? json_array_size(j) : 1;
  for (size_t i = 0; i < n; i++) {
    double v;
    if (cfmask_json_num(json_is_array(j) ? json_array_get(j, i) : j, &v) < 0)
      return zerr_set(err, EIO, "CF %s is not a number or a list of numbers",
                      name);
    if (isnan(v))
      continue;
    if (c->nfill == CF_MAX_FILL)
      return zerr_set(err, EIO, "CF %s: more than %d fill values", name,
                      CF_MAX_FILL);
    c->fill[c->nfill++] = v;
  }
  return 0;
}

/* The calendar attribute (absent: standard). */
static int parse_calendar(json_t *j, enum cf_calendar *cal, struct zerr *err) {
  static const struct {
    const char *name;
    enum cf_calendar cal;
  } names[] = {{"standard", CF_CAL_STANDARD},
               {"gregorian", CF_CAL_STANDARD},
               {"proleptic_gregorian", CF_CAL_PROLEPTIC},
               {"noleap", CF_CAL_NOLEAP},
               {"365_day", CF_CAL_NOLEAP},
               {"all_leap", CF_CAL_ALL_LEAP},
               {"366_day", CF_CAL_ALL_LEAP},
               {"360_day", CF_CAL_360},
               {"julian", CF_CAL_JULIAN}};
  *cal = CF_CAL_STANDARD;
  if (!j)
    return 0;
  const char *s = json_string_value(j);
  for (size_t i = 0; s && i < sizeof names / sizeof *names; i++)
    if (!strcasecmp(s, names[i].name)) {
      *cal = names[i].cal;
      return 0;
    }
  return zerr_set(err, EIO, "CF calendar %.40s is not one CF names",
                  s ? s : "(not a string)");
}

/* The kinds CF decodes: bool, integers, floats. */
static int cf_kind_ok(enum dtype_kind k) {
  switch (k) {
  case DT_BOOL:
  case DT_INT2:
  case DT_INT4:
  case DT_INT8:
  case DT_INT16:
  case DT_INT32:
  case DT_INT64:
  case DT_UINT2:
  case DT_UINT4:
  case DT_UINT8:
  case DT_UINT16:
  case DT_UINT32:
  case DT_UINT64:
  case DT_FLOAT16:
  case DT_FLOAT32:
  case DT_FLOAT64:
  case DT_COMPLEX64:
  case DT_COMPLEX128:
    return 1;
  default:
    return 0;
  }
}

/* An integer attribute numpy does not see as 16-bit (it then computes a
 * float32 array with it in float64). */
static int wide_int(json_t *j) {
  if (json_is_array(j) && json_array_size(j) == 1)
    j = json_array_get(j, 0);
  if (!json_is_integer(j))
    return 0;
  json_int_t v = json_integer_value(j);
  return v < -32768 || v > 65535;
}

/* The stored type's size in bytes, as numpy sees it. */
static int kind_size(enum dtype_kind k) {
  switch (k) {
  case DT_INT16:
  case DT_UINT16:
  case DT_FLOAT16:
    return 2;
  case DT_INT32:
  case DT_UINT32:
  case DT_FLOAT32:
    return 4;
  case DT_INT64:
  case DT_UINT64:
  case DT_FLOAT64:
    return 8;
  default:
    return 1;
  }
}

/* xarray's `_Unsigned`: "true" reads a signed integer type as the
 * unsigned one of its size, "false" an unsigned one as signed. The kind
 * to read as (k itself when nothing changes). */
static enum dtype_kind unsigned_kind(enum dtype_kind k, const char *u) {
  static const enum dtype_kind pairs[][2] = {{DT_INT8, DT_UINT8},
                                             {DT_INT16, DT_UINT16},
                                             {DT_INT32, DT_UINT32},
                                             {DT_INT64, DT_UINT64}};
  for (size_t i = 0; u && i < sizeof pairs / sizeof *pairs; i++) {
    if (k == pairs[i][0] && !strcmp(u, "true"))
      return pairs[i][1];
    if (k == pairs[i][1] && !strcmp(u, "false"))
      return pairs[i][0];
  }
  return k;
}

/* A fill value cast as numpy casts a Python int to kind k (wrapping);
 * fill values that are not integers are left alone. */
static double wrap_fill(double v, enum dtype_kind k) {
  int bits = 8 * kind_size(k);
  if (v != floor(v))
    return v;
  double span = ldexp(1, bits);
  v = fmod(v, span);
  if (v < 0)
    v += span;
  int is_signed =
      k == DT_INT8 || k == DT_INT16 || k == DT_INT32 || k == DT_INT64;
  return is_signed && v >= span / 2 ? v - span : v;
}

/* xarray's TIME_UNITS, the units it decodes as durations (exact names):
 * nanoseconds in one, and the decimals pandas keeps of a float count's
 * fraction (precision_from_unit). 1 when units is one. */
static int timedelta_unit(const char *units, int64_t *ns, int *digits) {
  static const struct {
    const char *name;
    int64_t ns;
    int digits;
  } t[] = {{"days", NS_PER_DAY, 9},        {"hours", 3600000000000ll, 9},
           {"minutes", 60000000000ll, 9},  {"seconds", 1000000000ll, 9},
           {"milliseconds", 1000000ll, 6}, {"microseconds", 1000ll, 3},
           {"nanoseconds", 1, 0}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(units, t[i].name)) {
      *ns = t[i].ns;
      *digits = t[i].digits;
      return 1;
    }
  return 0;
}

/* Parse the attributes into c. */
static int parse_into(struct cf *c, json_t *attrs, json_t *fill_value,
                      struct zerr *err) {
  json_t *j;
  int any = 0;
  if ((j = json_object_get(attrs, "scale_factor"))) {
    if (json_scalar(j, &c->scale) < 0)
      return zerr_set(err, EIO, "CF scale_factor is not a number");
    c->has_scale = any = 1;
    c->scale_wide = wide_int(j);
  }
  if ((j = json_object_get(attrs, "add_offset"))) {
    if (json_scalar(j, &c->offset) < 0)
      return zerr_set(err, EIO, "CF add_offset is not a number");
    c->has_offset = any = 1;
    c->offset_wide = wide_int(j);
  }
  json_t *fv = json_object_get(attrs, "_FillValue");
  json_t *mv = json_object_get(attrs, "missing_value");
  any |= fv != NULL || mv != NULL;
  ZTRY(add_fills(c, mv, "missing_value", err));
  int nmissing = c->nfill;
  ZTRY(add_fills(c, fv ? fv : fill_value, "_FillValue", err));
  /* _Unsigned changes the type read, and the _FillValue with it (not
   * missing_value: xarray casts only _FillValue). */
  enum dtype_kind as = unsigned_kind(
      c->kind, json_string_value(json_object_get(attrs, "_Unsigned")));
  if (as != c->kind) {
    c->kind = as;
    for (int i = nmissing; i < c->nfill; i++)
      c->fill[i] = wrap_fill(c->fill[i], as);
    any = 1;
  }
  if (!fv && fill_value && !json_is_null(fill_value))
    any = 1;
  double v;
  if ((j = json_object_get(attrs, "valid_range")) && json_is_array(j) &&
      json_array_size(j) == 2 &&
      cfmask_json_num(json_array_get(j, 0), &v) == 0) {
    c->valid_min = v;
    c->has_valid_min = 1;
    if (cfmask_json_num(json_array_get(j, 1), &v) == 0) {
      c->valid_max = v;
      c->has_valid_max = 1;
    }
  }
  if ((j = json_object_get(attrs, "valid_min")) && json_scalar(j, &v) == 0) {
    c->valid_min = v;
    c->has_valid_min = 1;
  }
  if ((j = json_object_get(attrs, "valid_max")) && json_scalar(j, &v) == 0) {
    c->valid_max = v;
    c->has_valid_max = 1;
  }
  const char *dt = json_string_value(json_object_get(attrs, "dtype"));
  if (dt && !strcmp(dt, "bool"))
    c->is_bool = any = 1;
  const char *units = json_string_value(json_object_get(attrs, "units"));
  if (units && timedelta_unit(units, &c->unit_ns, &c->td_digits)) {
    c->is_timedelta = any = 1;
  } else if (units && strstr(units, "since")) {
    ZTRY(parse_calendar(json_object_get(attrs, "calendar"), &c->calendar, err));
    if (cf_parse_units(units, c->calendar, &c->unit_ns, &c->readers,
                       &c->ref_day, &c->ref_ns) < 0)
      return zerr_set(err, EIO,
                      "CF units \"%.80s\" are not UNIT since DATE as xarray "
                      "reads them in this calendar",
                      units);
    c->is_time = any = 1;
  }
  return any;
}

/* Parse the CF encoding. */
int cf_parse(json_t *attrs, json_t *fill_value, const struct dtype *dt,
             struct cf **out, struct zerr *err) {
  *out = NULL;
  if (!cf_kind_ok(dt->kind) || (!json_is_object(attrs) && !fill_value))
    return 0;
  struct cf *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  c->kind = dt->kind;
  json_t *empty = json_is_object(attrs) ? NULL : json_object();
  int rc = dt->kind == DT_COMPLEX64 || dt->kind == DT_COMPLEX128
               ? cfmask_parse_complex(c, empty ? empty : attrs, fill_value, err)
               : parse_into(c, empty ? empty : attrs, fill_value, err);
  json_decref(empty);
  if (rc <= 0) {
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* Free; NULL-safe. */
void cf_free(struct cf *c) { free(c); }

/* ---- decoding ---- */

/* IEEE binary16 to double (exact). */
static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f;
  double m = h & 0x3ff;
  double v = e == 0    ? ldexp(m, -24)
             : e == 31 ? (m ? NAN : INFINITY)
                       : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* The stored element as a number of its own width. */
static void load(const struct cf *c, const void *elem, struct cf_value *v) {
  const uint8_t *p = elem;
  v->kind = CF_NUMBER;
  switch (c->kind) {
  case DT_BOOL:
  case DT_UINT2:
  case DT_UINT4:
  case DT_UINT8:
    v->width = CF_NUM_UINT, v->num.u = p[0];
    return;
  case DT_INT2:
  case DT_INT4:
  case DT_INT8:
    v->width = CF_NUM_INT, v->num.i = (int8_t)p[0];
    return;
  case DT_INT16: {
    int16_t x;
    memcpy(&x, p, 2);
    v->width = CF_NUM_INT, v->num.i = x;
    return;
  }
  case DT_INT32: {
    int32_t x;
    memcpy(&x, p, 4);
    v->width = CF_NUM_INT, v->num.i = x;
    return;
  }
  case DT_INT64:
    v->width = CF_NUM_INT;
    memcpy(&v->num.i, p, 8);
    return;
  case DT_UINT16: {
    uint16_t x;
    memcpy(&x, p, 2);
    v->width = CF_NUM_UINT, v->num.u = x;
    return;
  }
  case DT_UINT32: {
    uint32_t x;
    memcpy(&x, p, 4);
    v->width = CF_NUM_UINT, v->num.u = x;
    return;
  }
  case DT_UINT64:
    v->width = CF_NUM_UINT;
    memcpy(&v->num.u, p, 8);
    return;
  case DT_FLOAT16: {
    uint16_t x;
    memcpy(&x, p, 2);
    v->width = CF_NUM_F16, v->num.d = half_to_double(x);
    return;
  }
  case DT_FLOAT32: {
    float x;
    memcpy(&x, p, 4);
    v->width = CF_NUM_F32, v->num.d = x;
    return;
  }
  case DT_COMPLEX64: {
    float x[2];
    memcpy(x, p, 8);
    v->kind = CF_COMPLEX, v->width = CF_NUM_F32, v->num.d = x[0], v->im = x[1];
    return;
  }
  case DT_COMPLEX128: {
    double x[2];
    memcpy(x, p, 16);
    v->kind = CF_COMPLEX, v->width = CF_NUM_F64, v->num.d = x[0], v->im = x[1];
    return;
  }
  default: {
    double x;
    memcpy(&x, p, 8);
    v->width = CF_NUM_F64, v->num.d = x;
    return;
  }
  }
}

/* Convert v (a number) to float width w, rounding as numpy casts. */
static void to_float(struct cf_value *v, enum cf_num w) {
  double d = v->width == CF_NUM_INT    ? (double)v->num.i
             : v->width == CF_NUM_UINT ? (double)v->num.u
                                       : v->num.d;
  if (w == CF_NUM_F32) {
    if (v->width == CF_NUM_INT)
      d = (float)v->num.i; /* one rounding, int to float32 */
    else if (v->width == CF_NUM_UINT)
      d = (float)v->num.u;
    else
      d = (float)d;
  }
  v->width = w;
  v->num.d = d;
}

/* xarray's maybe_promote: the type a masked value is compared in. */
static enum cf_num promoted(const struct cf *c) {
  if (c->kind == DT_FLOAT16)
    return CF_NUM_F16;
  if (c->kind == DT_FLOAT32)
    return CF_NUM_F32;
  if (c->kind == DT_FLOAT64)
    return CF_NUM_F64;
  return kind_size(c->kind) <= 2 ? CF_NUM_F32 : CF_NUM_F64;
}

/* A value in width w (float16 is compared as float32: its fills are
 * rounded to float32, not to float16). */
static double in_width(double x, enum cf_num w) {
  return w == CF_NUM_F64 ? x : (double)(float)x;
}

/* The time of a count from the reference: pandas first (standard
 * calendars, nanoseconds), else cftime (microseconds). */
static int decode_time(const struct cf *c, struct cf_value *v) {
  int is_float = v->width != CF_NUM_INT && v->width != CF_NUM_UINT;
  if (is_float && isnan(v->num.d)) {
    v->kind = CF_NAT;
    return 0;
  }
  __int128 off = 0; /* ns from the reference */
  int done = 0;
  if ((c->readers & CF_READ_PANDAS) && pandas_calendar(c->calendar)) {
    /* The reference and the result within datetime64[ns]. */
    __int128 ref = (__int128)(c->ref_day - JDN_EPOCH) * NS_PER_DAY + c->ref_ns;
    int ok = ref > INT64_MIN && ref <= INT64_MAX;
    if (ok && !is_float) {
      __int128 x =
          v->width == CF_NUM_INT ? (__int128)v->num.i : (__int128)v->num.u;
      off = x * c->unit_ns;
      ok = off > INT64_MIN && off <= INT64_MAX;
    } else if (ok) {
      /* numpy multiplies float32 by a Python int in float32 only when
       * the int fits 16 bits (microseconds), else in float64. */
      double x = v->width == CF_NUM_F64 || c->unit_ns > 65535
                     ? v->num.d * (double)c->unit_ns
                     : (double)((float)v->num.d * (float)c->unit_ns);
      ok = isfinite(x) && x > -9.2e18 && x < 9.2e18;
      off = ok ? (__int128)(int64_t)x : 0; /* astype(int64): toward zero */
    }
    ok = ok && ref + off > INT64_MIN && ref + off <= INT64_MAX;
    done = ok;
  }
  if (!done && !(c->readers & CF_READ_CFTIME))
    return -ERANGE; /* pandas could not, cftime cannot: xarray fails */
  if (!done) {
    /* cftime: the count as float64, microseconds rounded half-even. */
    double x = v->width == CF_NUM_INT    ? (double)v->num.i
               : v->width == CF_NUM_UINT ? (double)v->num.u
                                         : v->num.d;
    double us = nearbyint(x * (double)(c->unit_ns / 1000));
    if (!isfinite(us) || us <= -9.2233720368547758e18 ||
        us >= 9.2233720368547758e18)
      return -ERANGE;
    off = (__int128)(int64_t)us * 1000;
  }
  __int128 t = (__int128)c->ref_ns + off;
  __int128 days = t / NS_PER_DAY;
  if (t % NS_PER_DAY < 0)
    days--;
  v->kind = CF_TIME;
  v->time.ns = (int64_t)(t - days * NS_PER_DAY);
  cf_date_of_day(c->calendar, c->ref_day + (int64_t)days, &v->time);
  return 0;
}

/* A duration as pandas' to_timedelta makes it from the count (see cf.h):
 * integers exactly, floats as integer part and rounded fraction. */
static int decode_timedelta(const struct cf *c, struct cf_value *v) {
  __int128 ns;
  if (v->width == CF_NUM_INT || v->width == CF_NUM_UINT) {
    if (v->width == CF_NUM_INT && v->num.i == INT64_MIN) {
      v->kind = CF_NAT; /* numpy's NaT as a count */
      return 0;
    }
    ns = (v->width == CF_NUM_INT ? (__int128)v->num.i : (__int128)v->num.u) *
         c->unit_ns;
  } else {
    double d = v->num.d;
    if (isnan(d)) {
      v->kind = CF_NAT;
      return 0;
    }
    if (!(d > -9.2e18 && d < 9.2e18))
      return -ERANGE;
    int64_t base = (int64_t)d; /* astype(int64): toward zero */
    double frac = d - (double)base, scale = 1;
    for (int i = 0; i < c->td_digits; i++)
      scale *= 10;
    if (c->td_digits) /* numpy's round: rint(x * 10^p) / 10^p */
      frac = nearbyint(frac * scale) / scale;
    ns = (__int128)base * c->unit_ns + (int64_t)(frac * (double)c->unit_ns);
  }
  if (ns <= INT64_MIN || ns > INT64_MAX)
    return -ERANGE;
  v->kind = CF_TIMEDELTA;
  v->td = (int64_t)ns;
  return 0;
}

/* Decode one element. */
int cf_decode(const struct cf *c, const void *elem, struct cf_value *out) {
  struct cf_value v = {0};
  load(c, elem, &v);
  if (cfmask_decode(c, &v)) { /* complex values, masked bools */
    *out = v;
    return 0;
  }
  int missing = 0;
  if (c->nfill) {
    enum cf_num w = promoted(c);
    to_float(&v, w);
    double x = in_width(v.num.d, w);
    for (int i = 0; i < c->nfill && !missing; i++)
      missing = x == in_width(c->fill[i], w);
    if (missing)
      v.num.d = NAN;
  }
  if (c->has_scale || c->has_offset) {
    /* xarray's _choose_float_dtype over the (promoted) type. */
    int small_int = v.width == CF_NUM_INT || v.width == CF_NUM_UINT
                        ? kind_size(c->kind) <= 2 && !c->has_offset
                        : 0;
    enum cf_num w = v.width == CF_NUM_F16 || v.width == CF_NUM_F32 || small_int
                        ? CF_NUM_F32
                        : CF_NUM_F64;
    to_float(&v, w);
    if (w == CF_NUM_F32) {
      /* In place on float32: a float (or 16-bit int) operand is rounded
       * to float32 first; a wider int makes numpy compute in float64 and
       * round the result. */
      float f = (float)v.num.d;
      if (c->has_scale)
        f = c->scale_wide ? (float)((double)f * c->scale) : f * (float)c->scale;
      if (c->has_offset)
        f = c->offset_wide ? (float)((double)f + c->offset)
                           : f + (float)c->offset;
      v.num.d = f;
    } else {
      double d = v.num.d;
      if (c->has_scale)
        d = d * c->scale;
      if (c->has_offset)
        d = d + c->offset;
      v.num.d = d;
    }
  }
  if (c->is_time || c->is_timedelta) {
    int rc = c->is_time ? decode_time(c, &v) : decode_timedelta(c, &v);
    if (rc < 0)
      return rc;
  } else if (missing) {
    v.kind = CF_MISSING;
  }
  if (c->is_bool && v.kind == CF_NUMBER) {
    int b = v.width == CF_NUM_INT    ? v.num.i != 0
            : v.width == CF_NUM_UINT ? v.num.u != 0
                                     : v.num.d != 0; /* NaN is true */
    v.kind = CF_BOOL;
    v.b = b;
  } else if (c->is_bool && v.kind == CF_MISSING) {
    v.kind = CF_BOOL;
    v.b = 1;
  }
  *out = v;
  return 0;
}
