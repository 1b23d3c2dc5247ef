/* render.c - element -> text (see render.h).
 *
 * This is the hot path of `cat` on numeric arrays, so the numeric path
 * calls nothing that allocates or looks at the locale (no printf, no
 * strtod): integers and every float's digits come from fs/text/dtoa.c
 * (Schubfach for float64/float32, its exact search for float16 and
 * bfloat16 and for render_float_exact, the reference check_dtoa compares
 * Schubfach with); this file lays the digits out as text.
 * Only datetime fields use snprintf, with integer conversions alone.
 *
 * Float format: the fewest significant digits that read back to the same
 * value at the element's own width (float16/32/64), written plainly when
 * the decimal exponent x of the first digit is in [-4, 16) and as
 * d.ddde+XX otherwise, like Python's repr without a trailing ".0". Any NaN
 * is "nan"; infinities are "inf" / "-inf"; negative zero is "-0".
 *
 * Complex numbers: both parts in that float format at the part's width,
 * the imaginary part always signed, then "j" ("1+2j", "0.5-1.5j",
 * "nan+infj", "1-0j"): numpy's repr without the parentheses, and the real
 * part is always written (Python writes 1j for 0+1j).
 *
 * numpy.timedelta64: an ISO 8601 duration, "-" first when negative. Units
 * Y, M, W, D give "P<n>Y", "P<n>M", "P<n>W", "P<n>D"; the sub-day units are
 * split into days and time, leaving out zero fields ("P1DT2H3M4.007S",
 * "PT0.5S", "PT0S" for zero), the fraction of a second without trailing
 * zeros. NaT is "NaT". With 128-bit integers every scaled count is shown
 * exactly; without them a count past 64 bits is fmt_time_count's text.
 *
 * numpy.datetime64: see fmt_datetime. A value whose instant overflows
 * 64 bits of the base unit (count x scale_factor, or x 7 for weeks, or
 * 1970 + years) is shown as "COUNT[SCALEUNIT]", never as a wrapped date.
 *
 * zarrs.optional: "null" for a missing value, else the inner type's text;
 * in nested optional types a value missing inside k present layers is
 * "null" in k pairs of brackets ("[null]" for Some(None), zarrs' JSON form).
 * Optional strings and bytes are converted to text before rendering
 * (fs/text/textprep.c), with render_optional_null for the missing ones. No
 * present value may read as a missing one: numbers, bools, dates and hex
 * never do; a string that would, or that starts with the backslash used to
 * mark it, gets a backslash in front (render_optional_escaped), so a line
 * that starts with one is always a present string. */
#include "render.h"

#include <stdio.h> /* snprintf for datetime fields */
#include <string.h>

#include "../../src/util/utf8.h"
#include "dtoa.h"
#include "rnum.h"

_Static_assert(RNUM_ROOM <= RENDER_RUN_ROOM, "a number's line fits its room");

/* ---- integers ---- */

/* Unsigned decimal into buf (at least 20 bytes); returns the length. */
static inline size_t fmt_u64(uint64_t v, char *buf) { return dtoa_u64(v, buf); }

/* Signed decimal; INT64_MIN is negated in unsigned arithmetic. The sign
 * is handled without a branch (signs of real data are often a coin toss):
 * '-' is always written, and the digits overwrite it when v >= 0. */
static size_t fmt_i64(int64_t v, char *buf) {
  size_t neg = v < 0;
  uint64_t mag = (uint64_t)v;
  mag = neg ? (uint64_t)0 - mag : mag;
  buf[0] = '-';
  return neg + fmt_u64(mag, buf + neg);
}

/* The widest unsigned integer: scaled timedeltas may pass 64 bits. */
#ifdef __SIZEOF_INT128__
typedef unsigned __int128 render_umax;
#else
typedef uint64_t render_umax;
#endif

/* ---- floats ---- */

/* IEEE-754 binary layouts we render. */
struct fmt_bits {
  int mant_bits; /* stored mantissa bits */
  int exp_bits;  /* exponent field bits */
};

/* Copy n <= 16 bytes as two overlapping fixed-size copies: inline, with
 * a branch that the lengths of real data predict well (memcpy's size
 * dispatch mispredicted about one value in four). */
static inline void copy16(char *dst, const char *src, size_t n) {
  if (n >= 8) {
    memcpy(dst, src, 8);
    memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    memcpy(dst, src, 4);
    memcpy(dst + n - 4, src + n - 4, 4);
  } else if (n) {
    dst[0] = src[0];
    dst[n / 2] = src[n / 2];
    dst[n - 1] = src[n - 1];
  }
}

/* The same for n <= 17; 16 and 17 (common: all significant digits) take
 * one path. */
static inline void copy17(char *dst, const char *src, size_t n) {
  if (n >= 16) {
    memcpy(dst, src, 16);
    memcpy(dst + n - 16, src + n - 16, 16);
  } else {
    copy16(dst, src, n);
  }
}

/* Lay out digits d[0..n) with first-digit exponent x into buf; d holds
 * '0' from d[n] to d[DTOA_DIGITS_MAX - 1] (the integer part's padding).
 * Writes exactly the text (nothing past it). */
static size_t place_digits(const char *d, int n, int x, int neg, char *buf) {
  size_t o = (size_t)neg;
  buf[0] = '-'; /* overwritten when not negative (no branch on the sign) */
  if (x >= 16 || x < -4) { /* d.ddde+XX; de+XX for one digit */
    buf[o++] = d[0];
    if (n > 1) {
      buf[o++] = '.';
      copy16(buf + o, d + 1, (size_t)n - 1);
      o += (size_t)n - 1;
    }
    buf[o++] = 'e';
    buf[o++] = x < 0 ? '-' : '+';
    /* Two or three exponent digits; the hundreds digit is written either
     * way and overwritten when there is none (no branch: exponents of
     * mixed data straddle 100 unpredictably). */
    unsigned ax = (unsigned)(x < 0 ? -x : x); /* at most 324 */
    buf[o] = (char)('0' + ax / 100);
    o += ax >= 100;
    memcpy(buf + o, dtoa_pairs + 2 * (ax % 100), 2);
    return o + 2;
  }
  if (x < 0) { /* "0.", -x-1 zeros, the digits */
    buf[o++] = '0';
    buf[o++] = '.';
    for (int i = -1; i > x; i--)
      buf[o++] = '0';
    copy17(buf + o, d, (size_t)n);
    return o + (size_t)n;
  }
  /* Integer part: x + 1 <= 16 digits, the '0' padding past the
   * significant ones included; then the rest as the fraction. */
  copy16(buf + o, d, (size_t)x + 1);
  o += (size_t)x + 1;
  if (n > x + 1) {
    buf[o++] = '.';
    copy16(buf + o, d + x + 1, (size_t)(n - x - 1));
    o += (size_t)(n - x - 1);
  }
  return o;
}

/* Render the IEEE value with the given bit pattern and format; `exact`
 * uses the big-integer search for every width (render_float_exact). */
static size_t fmt_float_as(uint64_t bits, struct fmt_bits l, int exact,
                           char *buf) {
  int mb = l.mant_bits, eb = l.exp_bits;
  int bias = (1 << (eb - 1)) - 1;
  int neg = (int)(bits >> (mb + eb)) & 1;
  int ef = (int)(bits >> mb) & ((1 << eb) - 1);
  uint64_t m = bits & (((uint64_t)1 << mb) - 1);
  if (ef == (1 << eb) - 1) {
    if (m) {
      memcpy(buf, "nan", 3);
      return 3;
    }
    if (neg) {
      memcpy(buf, "-inf", 4);
      return 4;
    }
    memcpy(buf, "inf", 3);
    return 3;
  }
  if (ef == 0 && m == 0) {
    if (neg) {
      memcpy(buf, "-0", 2);
      return 2;
    }
    buf[0] = '0';
    return 1;
  }
  int min_e = 1 - bias - mb;
  uint64_t f = ef ? m | (uint64_t)1 << mb : m;
  int e = ef ? ef - bias - mb : min_e;
  /* Integral values with a gap of at most 1 are exactly their integer
   * (no shorter digits can lie within half a unit): the common case of
   * counts stored as floats needs no search. */
  if (e <= 0 && e > -64 && (f & (((uint64_t)1 << -e) - 1)) == 0) {
    size_t o = 0;
    if (neg)
      buf[o++] = '-';
    return o + fmt_u64(f >> -e, buf + o);
  }
  char d[DTOA_EXACT_MAX];
  int x10, n;
  if (!exact && mb == 52) {
    n = dtoa_shortest_f64(bits, d, &x10);
  } else if (!exact && mb == 23) {
    n = dtoa_shortest_f32((uint32_t)bits, d, &x10);
  } else {
    n = dtoa_shortest_exact(f, e, mb + 1, min_e, d, &x10);
  }
  return place_digits(d, n, x10, neg, buf);
}

/* Render the IEEE value with the given bit pattern and format. */
static size_t fmt_float(uint64_t bits, struct fmt_bits l, char *buf) {
  return fmt_float_as(bits, l, 0, buf);
}

/* The float text by the exact search alone. */
size_t render_float_exact(uint64_t bits, int mant_bits, int exp_bits,
                          char *buf) {
  return fmt_float_as(bits, (struct fmt_bits){mant_bits, exp_bits}, 1, buf);
}

/* Floor division and modulo for a positive divisor. */
static int64_t floordiv(int64_t a, int64_t b, int64_t *mod) {
  int64_t q = a / b, r = a % b;
  if (r < 0) {
    q--;
    r += b;
  }
  *mod = r;
  return q;
}

/* Civil date of a day count since 1970-01-01 (proleptic Gregorian), for
 * every int64 day count: near INT64_MAX the count is moved back 2,000
 * years (5 cycles of 146,097 days) so the shift below cannot overflow. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d) {
  int64_t years = 0;
  if (z > INT64_MAX - 719468) {
    z -= 5 * 146097;
    years = 2000;
  }
  z += 719468;
  int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  *d = (int)(doy - (153 * mp + 2) / 5 + 1);
  *m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *y = yoe + era * 400 + (*m <= 2) + years;
}

/* numpy's names of the time units, by enum dtype_time_unit. */
static const char *const time_unit_names[] = {"Y", "M", "W",  "D",  "h",
                                              "m", "s", "ms", "us", "ns"};

/* A time value no date or duration can show (its count of the base unit
 * overflows 64 bits): the stored count, then the scaled unit in numpy's
 * notation in brackets ("5[1000000000000Y]", "-3[D]"). numpy itself
 * multiplies without a check and prints a wrapped date. */
static size_t fmt_time_count(const struct dtype *dt, int64_t v, char *buf) {
  size_t o = fmt_i64(v, buf);
  buf[o++] = '[';
  if (dt->scale != 1)
    o += fmt_i64(dt->scale, buf + o);
  const char *u = time_unit_names[dt->unit];
  size_t n = strlen(u);
  memcpy(buf + o, u, n);
  o += n;
  buf[o++] = ']';
  return o;
}

/* ISO 8601 text of a numpy.datetime64 value, as numpy prints it: as many
 * fields as the unit has ("2023-01-01", "2023-01-01T00:00:00.000"), the
 * year in at least 4 digits, NaT; fmt_time_count when the instant
 * overflows 64 bits of the base unit. */
static size_t fmt_datetime(const struct dtype *dt, int64_t v, char *buf) {
  if (v == INT64_MIN) {
    memcpy(buf, "NaT", 3);
    return 3;
  }
  int64_t t; /* count of the unscaled unit since 1970 */
  if (__builtin_mul_overflow(v, dt->scale, &t))
    return fmt_time_count(dt, v, buf);
  int64_t y, rem, days, in_day = 0;
  int m = 1, d = 1;
  int n;
  switch (dt->unit) {
  case DTU_Y:
    if (__builtin_add_overflow(t, 1970, &y))
      return fmt_time_count(dt, v, buf);
    return (size_t)snprintf(buf, RENDER_FIXED_MAX, "%04lld", (long long)y);
  case DTU_M:
    y = 1970 + floordiv(t, 12, &rem);
    return (size_t)snprintf(buf, RENDER_FIXED_MAX, "%04lld-%02d", (long long)y,
                            (int)rem + 1);
  case DTU_W:
  case DTU_D:
    if (__builtin_mul_overflow(t, dt->unit == DTU_W ? 7 : 1, &days))
      return fmt_time_count(dt, v, buf);
    civil_from_days(days, &y, &m, &d);
    return (size_t)snprintf(buf, RENDER_FIXED_MAX, "%04lld-%02d-%02d",
                            (long long)y, m, d);
  default:
    break;
  }
  /* Sub-day units: split into days and the count within the day. */
  static const int64_t per_day[] = {
      0, 0, 0, 0, 24, 1440, 86400, 86400000LL, 86400000000LL, 86400000000000LL};
  static const int frac_digits[] = {0, 0, 0, 0, 0, 0, 0, 3, 6, 9};
  days = floordiv(t, per_day[dt->unit], &in_day);
  civil_from_days(days, &y, &m, &d);
  int64_t per_sec = per_day[dt->unit] / 86400; /* 0 for h, m */
  n = snprintf(buf, RENDER_FIXED_MAX, "%04lld-%02d-%02d", (long long)y, m, d);
  if (dt->unit == DTU_h)
    return (size_t)(n + snprintf(buf + n, RENDER_FIXED_MAX - n, "T%02d",
                                 (int)in_day));
  if (dt->unit == DTU_m)
    return (size_t)(n + snprintf(buf + n, RENDER_FIXED_MAX - n, "T%02d:%02d",
                                 (int)(in_day / 60), (int)(in_day % 60)));
  int64_t secs = in_day / per_sec, frac = in_day % per_sec;
  n += snprintf(buf + n, RENDER_FIXED_MAX - n, "T%02d:%02d:%02d",
                (int)(secs / 3600), (int)(secs / 60 % 60), (int)(secs % 60));
  if (frac_digits[dt->unit])
    n += snprintf(buf + n, RENDER_FIXED_MAX - n, ".%0*lld",
                  frac_digits[dt->unit], (long long)frac);
  return (size_t)n;
}

/* Decimal of a value that may exceed 64 bits. */
static size_t fmt_umax(render_umax v, char *buf) {
  if (v <= UINT64_MAX)
    return fmt_u64((uint64_t)v, buf);
  char tmp[40];
  size_t i = sizeof tmp;
  while (v) {
    tmp[--i] = (char)('0' + (unsigned)(v % 10));
    v /= 10;
  }
  memcpy(buf, tmp + i, sizeof tmp - i);
  return sizeof tmp - i;
}

/* ISO 8601 duration of a numpy.timedelta64 value (see the file comment). */
static size_t fmt_timedelta(const struct dtype *dt, int64_t v, char *buf) {
  if (v == INT64_MIN) {
    memcpy(buf, "NaT", 3);
    return 3;
  }
  size_t o = 0;
  if (v < 0)
    buf[o++] = '-';
  buf[o++] = 'P';
  uint64_t mag = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  render_umax total = (render_umax)mag * (uint64_t)dt->scale;
#ifndef __SIZEOF_INT128__
  if (mag && total / mag != (uint64_t)dt->scale)
    return fmt_time_count(dt, v, buf); /* beyond 64 bits */
#endif
  static const char calendar[] = "YMWD";
  if (dt->unit <= DTU_D) {
    o += fmt_umax(total, buf + o);
    buf[o++] = calendar[dt->unit];
    return o;
  }
  /* Counts of the unit per day, hour, minute and second (0: none). */
  static const uint64_t per[][4] = {
      {24, 1, 0, 0},
      {1440, 60, 1, 0},
      {86400, 3600, 60, 1},
      {86400000ull, 3600000ull, 60000ull, 1000ull},
      {86400000000ull, 3600000000ull, 60000000ull, 1000000ull},
      {86400000000000ull, 3600000000000ull, 60000000000ull, 1000000000ull}};
  static const int frac_digits[] = {0, 0, 0, 3, 6, 9};
  int u = (int)dt->unit - (int)DTU_h;
  render_umax days = total / per[u][0];
  uint64_t rem = (uint64_t)(total % per[u][0]);
  uint64_t hours = rem / per[u][1];
  rem %= per[u][1];
  uint64_t mins = per[u][2] ? rem / per[u][2] : 0;
  rem = per[u][2] ? rem % per[u][2] : 0;
  uint64_t secs = per[u][3] ? rem / per[u][3] : 0;
  uint64_t frac = per[u][3] ? rem % per[u][3] : 0;
  if (days) {
    o += fmt_umax(days, buf + o);
    buf[o++] = 'D';
  }
  if (!hours && !mins && !secs && !frac) {
    if (!days) {
      memcpy(buf + o, "T0S", 3);
      o += 3;
    }
    return o;
  }
  buf[o++] = 'T';
  if (hours) {
    o += fmt_u64(hours, buf + o);
    buf[o++] = 'H';
  }
  if (mins) {
    o += fmt_u64(mins, buf + o);
    buf[o++] = 'M';
  }
  if (secs || frac) {
    o += fmt_u64(secs, buf + o);
    if (frac) {
      int nd = frac_digits[u];
      char d[9];
      for (int i = nd - 1; i >= 0; i--, frac /= 10)
        d[i] = (char)('0' + frac % 10);
      while (nd > 0 && d[nd - 1] == '0')
        nd--;
      buf[o++] = '.';
      memcpy(buf + o, d, (size_t)nd);
      o += (size_t)nd;
    }
    buf[o++] = 'S';
  }
  return o;
}

/* "RE+IMj" / "RE-IMj" from the two parts' bit patterns. */
static size_t fmt_complex(uint64_t re, uint64_t im, struct fmt_bits l,
                          char *buf) {
  char t[RENDER_FIXED_MAX];
  size_t n = fmt_float(re, l, buf);
  size_t m = fmt_float(im, l, t);
  if (t[0] != '-')
    buf[n++] = '+';
  memcpy(buf + n, t, m);
  n += m;
  buf[n++] = 'j';
  return n;
}

/* Render one fixed-size element. */
size_t render_fixed(const struct dtype *dt, const void *elem, char *buf) {
  switch (dt->kind) {
  case DT_BOOL:
    if (*(const uint8_t *)elem) {
      memcpy(buf, "true", 4);
      return 4;
    }
    memcpy(buf, "false", 5);
    return 5;
  case DT_INT8:
    return fmt_i64(*(const int8_t *)elem, buf);
  case DT_INT16: {
    int16_t v;
    memcpy(&v, elem, 2);
    return fmt_i64(v, buf);
  }
  case DT_INT32: {
    int32_t v;
    memcpy(&v, elem, 4);
    return fmt_i64(v, buf);
  }
  case DT_INT64: {
    int64_t v;
    memcpy(&v, elem, 8);
    return fmt_i64(v, buf);
  }
  case DT_UINT8:
    return fmt_u64(*(const uint8_t *)elem, buf);
  case DT_UINT16: {
    uint16_t v;
    memcpy(&v, elem, 2);
    return fmt_u64(v, buf);
  }
  case DT_UINT32: {
    uint32_t v;
    memcpy(&v, elem, 4);
    return fmt_u64(v, buf);
  }
  case DT_UINT64: {
    uint64_t v;
    memcpy(&v, elem, 8);
    return fmt_u64(v, buf);
  }
  case DT_DATETIME64: {
    int64_t v;
    memcpy(&v, elem, 8);
    return fmt_datetime(dt, v, buf);
  }
  case DT_FLOAT16: {
    uint16_t v;
    memcpy(&v, elem, 2);
    return fmt_float(v, (struct fmt_bits){10, 5}, buf);
  }
  case DT_FLOAT32: {
    uint32_t v;
    memcpy(&v, elem, 4);
    return fmt_float(v, (struct fmt_bits){23, 8}, buf);
  }
  case DT_FLOAT64: {
    uint64_t v;
    memcpy(&v, elem, 8);
    return fmt_float(v, (struct fmt_bits){52, 11}, buf);
  }
  case DT_BFLOAT16: {
    uint16_t v;
    memcpy(&v, elem, 2);
    return fmt_float(v, (struct fmt_bits){7, 8}, buf);
  }
  case DT_COMPLEX64: {
    uint32_t v[2];
    memcpy(v, elem, 8);
    return fmt_complex(v[0], v[1], (struct fmt_bits){23, 8}, buf);
  }
  case DT_COMPLEX128: {
    uint64_t v[2];
    memcpy(v, elem, 16);
    return fmt_complex(v[0], v[1], (struct fmt_bits){52, 11}, buf);
  }
  case DT_TIMEDELTA64: {
    int64_t v;
    memcpy(&v, elem, 8);
    return fmt_timedelta(dt, v, buf);
  }
  case DT_OPTIONAL: {
    /* Peel present layers; the first missing one is null, bracketed once
     * per present layer around it. */
    struct dtype cur = *dt;
    for (unsigned level = 0; cur.kind == DT_OPTIONAL && cur.size; level++) {
      if (!((const uint8_t *)elem)[cur.size - 1])
        return render_optional_null(level, buf);
      cur = dtype_optional_inner(&cur);
    }
    return cur.kind == DT_OPTIONAL ? 0 : render_fixed(&cur, elem, buf);
  }
  case DT_INT2: /* as stored: the decoders sign-extend */
  case DT_INT4:
    return fmt_i64(*(const int8_t *)elem, buf);
  case DT_UINT2:
  case DT_UINT4:
    return fmt_u64(*(const uint8_t *)elem, buf);
  default:
    return 0;
  }
}

/* Lines of a run: numbers by fs/text/rnum.c, other kinds element by element. */
size_t render_fixed_run(const struct dtype *dt, const void *src, size_t n,
                        char *dst) {
  if (rnum_has(dt->kind))
    return rnum_run(dt->kind, src, n, dst);
  const unsigned char *s = src;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    o += render_fixed(dt, s + i * dt->size, dst + o);
    dst[o++] = '\n';
  }
  return o;
}

/* Bytes of a run's lines (see render.h). */
size_t render_fixed_run_size(const struct dtype *dt, const void *src,
                             size_t n) {
  if (rnum_has(dt->kind))
    return rnum_size(dt->kind, src, n);
  const unsigned char *s = src;
  size_t o = 0;
  char buf[RENDER_FIXED_MAX];
  for (size_t i = 0; i < n; i++)
    o += render_fixed(dt, s + i * dt->size, buf) + 1;
  return o;
}

/* "null" inside `level` pairs of brackets. */
size_t render_optional_null(unsigned level, char *buf) {
  if (level > RENDER_OPTIONAL_MAX_LEVEL)
    level = RENDER_OPTIONAL_MAX_LEVEL;
  memset(buf, '[', level);
  memcpy(buf + level, "null", 4);
  memset(buf + level + 4, ']', level);
  return 2 * (size_t)level + 4;
}

/* "null" in k bracket pairs, or a leading backslash: see render.h. */
int render_optional_escaped(const uint8_t *s, size_t n) {
  if (n && s[0] == '\\')
    return 1;
  size_t k = 0;
  while (k < n && s[k] == '[')
    k++;
  if (n != 2 * k + 4 || memcmp(s + k, "null", 4))
    return 0;
  for (size_t i = k + 4; i < n; i++)
    if (s[i] != ']')
      return 0;
  return 1;
}

/* Text length of a variable element: hex doubles bytes. */
uint64_t render_var_len(const struct dtype *dt, uint64_t nbytes) {
  return dt->kind == DT_BYTES ? 2 * nbytes : nbytes;
}

/* Source byte of a text position. */
uint64_t render_var_src_off(const struct dtype *dt, uint64_t text_off) {
  return dt->kind == DT_BYTES ? text_off / 2 : text_off;
}

/* Render [text_off, text_off+len) of a variable element. */
void render_var(const struct dtype *dt, const uint8_t *src, uint64_t text_off,
                size_t len, char *dst) {
  if (dt->kind == DT_BYTES) {
    static const char hex[] = "0123456789abcdef";
    size_t i = 0;
    if (len && (text_off & 1)) { /* starts on a low nibble */
      dst[i++] = hex[*src++ & 15];
    }
    for (; i + 1 < len; i += 2, src++) {
      dst[i] = hex[*src >> 4];
      dst[i + 1] = hex[*src & 15];
    }
    if (i < len) /* ends on a high nibble */
      dst[i] = hex[*src >> 4];
    return;
  }
  /* Strings: copy, then turn newline bytes into spaces so a line is
   * always one element. Short strings (the common case) go byte by byte:
   * cheaper than the two library calls; back to front, like memmove, so
   * that text made in place (dst at or after src) is right. */
  if (len < 32) {
    for (size_t i = len; i-- > 0;)
      dst[i] = src[i] == '\n' ? ' ' : (char)src[i];
    return;
  }
  memmove(dst, src, len);
  char *p = dst, *end = dst + len;
  while (p < end && (p = memchr(p, '\n', (size_t)(end - p))))
    *p++ = ' ';
}

/* ---- runs of variable-length elements ---- */

/* The element of [ja, jb) that holds source byte x (eo[ja] <= x <
 * eo[jb]): the last j with eo[j] <= x, so empty elements are passed. */
static uint64_t run_elem_of(const uint64_t *eo, uint64_t ja, uint64_t jb,
                            uint64_t x) {
  uint64_t lo = ja, hi = jb; /* eo[lo] <= x < eo[hi] */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (eo[mid] <= x)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Hex lines of a run of byte elements, element by element (each byte
 * becomes two characters, so there is no long piece to copy). */
static void run_hex(const struct dtype *dt, const uint64_t *eo, uint64_t ja,
                    uint64_t jb, uint64_t tpos, const uint8_t *src,
                    uint64_t sbase, uint64_t off, uint64_t end, char *dst) {
  uint64_t q = tpos;
  for (uint64_t j = ja; j < jb && q < end; j++) {
    uint64_t tl = render_var_len(dt, eo[j + 1] - eo[j]);
    uint64_t a = off > q ? off - q : 0;
    uint64_t b = end - q < tl + 1 ? end - q : tl + 1;
    uint64_t tb = b < tl ? b : tl;
    if (a < tb)
      render_var(dt, src + (eo[j] + render_var_src_off(dt, a) - sbase), a,
                 (size_t)(tb - a), dst + (q + a - off));
    if (a <= tl && b == tl + 1)
      dst[q + tl - off] = '\n';
    q += tl + 1;
  }
}

/* ---- strings as UTF-8 text ---- */

/* Where the walk over a run's bytes says what a byte's text is instead of
 * the byte: `c` for byte x of element e. */
typedef void (*str_put_fn)(void *ctx, uint64_t x, uint64_t e, char c);

/* Walk source bytes [x0, x1) of string elements [ja, jb) (src and sbase,
 * slen as render_var_run has them), telling put of every newline (' ')
 * and every byte that is not part of a well-formed UTF-8 sequence of its
 * element ('?'): ASCII runs skipped fast, non-ASCII runs judged in order,
 * the first byte of a run that starts inside a sequence judged by the
 * bytes before it (utf8_seq_start). Returns the count of the latter. */
static uint64_t str_walk(const uint64_t *eo, uint64_t ja, uint64_t jb,
                         const uint8_t *src, uint64_t sbase, uint64_t slen,
                         uint64_t x0, uint64_t x1, str_put_fn put, void *ctx) {
  const uint8_t *p = src + (x0 - sbase), *pe = src + (x1 - sbase);
  uint64_t e = ja, bad = 0;
  int known = 0; /* e is the element of the last byte told */
  while ((p = utf8_skip_ascii(p, pe, '\n')) < pe) {
    uint64_t x = (uint64_t)(p - src) + sbase;
    if (!known || x >= eo[e + 1]) { /* x < eo[jb]: a later element */
      e = run_elem_of(eo, known ? e + 1 : ja, jb, x);
      known = 1;
    }
    if (*p == '\n') {
      put(ctx, x, e, ' ');
      p++;
      continue;
    }
    /* the element's bytes at hand */
    const uint8_t *lo = src + (eo[e] > sbase ? eo[e] - sbase : 0);
    const uint8_t *hi =
        src + (eo[e + 1] - sbase < slen ? eo[e + 1] - sbase : slen);
    if ((*p & 0xc0) == 0x80) { /* inside a sequence begun before? */
      const uint8_t *q = utf8_seq_start(lo, hi, p);
      if (q)
        p = q + utf8_valid(q, hi);
    }
    while (p < pe && p < hi && *p >= 0x80) {
      size_t k = utf8_valid(p, hi);
      if (k) {
        p += k;
        continue;
      }
      put(ctx, (uint64_t)(p - src) + sbase, e, UTF8_BAD_BYTE);
      bad++;
      p++;
    }
  }
  return bad;
}

/* render_str_fix's put: the byte itself becomes its text. */
static void put_in_place(void *ctx, uint64_t x, uint64_t e, char c) {
  (void)e;
  ((uint8_t *)ctx)[x] = (uint8_t)c;
}

/* See render.h. */
uint64_t render_str_fix(const uint64_t *eo, uint64_t n, uint8_t *buf) {
  if (!n || eo[n] == eo[0])
    return 0;
  return str_walk(eo, 0, n, buf, eo[0], eo[n] - eo[0], eo[0], eo[n],
                  put_in_place, buf - eo[0]);
}

/* What render_var_run's put needs: where each byte's text lies. */
struct run_put {
  const uint64_t *eo;
  uint64_t ja, tpos, off, tend;
  char *dst;
  uint64_t bad; /* bytes not UTF-8 inside [off, tend) */
};

/* render_var_run's put: the byte's text position, written when in range. */
static void put_in_run(void *ctx, uint64_t x, uint64_t e, char c) {
  struct run_put *r = ctx;
  uint64_t t = r->tpos + (x - r->eo[r->ja]) + (e - r->ja);
  if (t >= r->off && t < r->tend) {
    r->dst[t - r->off] = c;
    r->bad += c != ' ';
  }
}

/* Lines of a run (see render.h). Strings: the lines wholly inside the
 * range are copied 32 bytes at a time where both sides have room (the
 * next line overwrites what lies past each one), the cut lines at either
 * end byte-exact; then the newlines and the bytes that are not UTF-8 of
 * the copied source are found by one scan (str_walk, usually finding
 * nothing) and their text written. */
uint64_t render_var_run(const struct dtype *dt, const uint64_t *eo, uint64_t ja,
                        uint64_t jb, uint64_t tpos, const uint8_t *src,
                        uint64_t sbase, uint64_t slen, uint64_t off,
                        uint64_t end, char *dst) {
  if (ja >= jb || tpos >= end)
    return 0;
  if (dt->kind == DT_BYTES) {
    run_hex(dt, eo, ja, jb, tpos, src, sbase, off, end, dst);
    return 0;
  }
  uint64_t tend = tpos + (eo[jb] - eo[ja]) + (jb - ja);
  if (tend > end)
    tend = end;
  if (tend <= off)
    return 0;
  char *dlim = dst + (tend - off);
  uint64_t q = tpos, j = ja;
  /* lines that end before the range */
  while (j < jb && q + (eo[j + 1] - eo[j]) + 1 <= off) {
    q += eo[j + 1] - eo[j] + 1;
    j++;
  }
  uint64_t s_first = eo[j] + (off > q ? off - q : 0); /* first source byte */
  uint64_t s_last = s_first;                          /* past the last */
  if (q < off) { /* the line the range starts inside */
    uint64_t tl = eo[j + 1] - eo[j], a = off - q;
    uint64_t b = tend - q < tl + 1 ? tend - q : tl + 1;
    uint64_t tb = b < tl ? b : tl;
    if (a < tb)
      memcpy(dst, src + (eo[j] + a - sbase), (size_t)(tb - a));
    if (b == tl + 1)
      dst[tl - a] = '\n';
    s_last = eo[j] + (a > tb ? a : tb);
    q += tl + 1;
    j++;
  }
  char *o = dst + (q > off ? q - off : 0);
  if (j < jb && o < dlim) {
    const uint8_t *s = src + (eo[j] - sbase), *send = src + slen;
    for (; j < jb; j++) {
      size_t n = (size_t)(eo[j + 1] - eo[j]);
      if (n + 1 > (size_t)(dlim - o))
        break;
      if (n <= 32 && dlim - o >= 32 && send - s >= 32) {
        memcpy(o, s, 16);
        memcpy(o + 16, s + 16, 16);
      } else {
        memcpy(o, s, n);
      }
      o[n] = '\n';
      o += n + 1;
      s += n;
    }
    if (j < jb && o < dlim) { /* the line the range ends inside */
      memcpy(o, s, (size_t)(dlim - o));
      s += dlim - o;
    }
    s_last = (uint64_t)(s - src) + sbase;
  }
  /* newlines of the elements: spaces; bytes that are not UTF-8: '?' */
  if (s_first >= s_last)
    return 0;
  struct run_put r = {eo, ja, tpos, off, tend, dst, 0};
  str_walk(eo, ja, jb, src, sbase, slen, s_first, s_last, put_in_run, &r);
  return r.bad;
}
