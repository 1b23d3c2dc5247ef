/* cftext.c - CF-decoded elements as text: numbers through the text
 * contract's renderer (fs/text/render.c), times in ISO 8601. */
#include "cftext.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "render.h"

/* The binary16 bits of a double that float16 holds exactly. */
static uint16_t half_bits(double d) {
  uint16_t sign = signbit(d) ? 0x8000 : 0;
  d = fabs(d);
  if (isnan(d))
    return 0x7e00 | sign;
  if (isinf(d))
    return 0x7c00 | sign;
  if (d < ldexp(1, -14)) /* subnormal: a multiple of 2^-24 */
    return sign | (uint16_t)ldexp(d, 24);
  int e;
  double m = frexp(d, &e); /* d = m * 2^e, m in [0.5, 1) */
  return sign | (uint16_t)((e + 14) << 10) | (uint16_t)((m * 2 - 1) * 1024);
}

/* A number in its own width, through render_fixed. */
static size_t render_number(const struct cf_value *v, char *buf) {
  switch (v->width) {
  case CF_NUM_INT: {
    struct dtype dt = dtype_of(DT_INT64);
    return render_fixed(&dt, &v->num.i, buf);
  }
  case CF_NUM_UINT: {
    struct dtype dt = dtype_of(DT_UINT64);
    return render_fixed(&dt, &v->num.u, buf);
  }
  case CF_NUM_F16: {
    struct dtype dt = dtype_of(DT_FLOAT16);
    uint16_t h = half_bits(v->num.d);
    return render_fixed(&dt, &h, buf);
  }
  case CF_NUM_F32: {
    struct dtype dt = dtype_of(DT_FLOAT32);
    float f = (float)v->num.d;
    return render_fixed(&dt, &f, buf);
  }
  default: {
    struct dtype dt = dtype_of(DT_FLOAT64);
    return render_fixed(&dt, &v->num.d, buf);
  }
  }
}

/* A complex number as values.txt writes one of its width (render.c). */
static size_t render_complex(const struct cf_value *v, char *buf) {
  if (v->width == CF_NUM_F32) {
    struct dtype dt = dtype_of(DT_COMPLEX64);
    float p[2] = {(float)v->num.d, (float)v->im};
    return render_fixed(&dt, p, buf);
  }
  struct dtype dt = dtype_of(DT_COMPLEX128);
  double p[2] = {v->num.d, v->im};
  return render_fixed(&dt, p, buf);
}

/* A time: date, time of day, and the fraction in its fewest digits. */
static size_t render_time(const struct cf_time *t, char *buf) {
  int64_t s = t->ns / 1000000000, frac = t->ns % 1000000000;
  char tmp[128];
  int n = snprintf(tmp, sizeof tmp, "%s%04lld-%02d-%02dT%02d:%02d:%02d",
                   t->year < 0 ? "-" : "",
                   (long long)(t->year < 0 ? -t->year : t->year), t->month,
                   t->day, (int)(s / 3600), (int)(s / 60 % 60), (int)(s % 60));
  if (n < 0 || n > CFTEXT_MAX - 11)
    return 0; /* cannot happen: a year has at most 19 digits */
  memcpy(buf, tmp, (size_t)n);
  if (frac) {
    char digits[9];
    for (int i = 8; i >= 0; i--, frac /= 10)
      digits[i] = (char)('0' + frac % 10);
    int len = 9;
    while (digits[len - 1] == '0')
      len--;
    buf[n++] = '.';
    memcpy(buf + n, digits, (size_t)len);
    n += len;
  }
  return (size_t)n;
}

/* One element's text. */
size_t cftext_render(const struct cf_value *v, char *buf) {
  switch (v->kind) {
  case CF_NUMBER:
    return render_number(v, buf);
  case CF_MISSING:
    memcpy(buf, "nan", 3);
    return 3;
  case CF_TIME:
    return render_time(&v->time, buf);
  case CF_NAT:
    memcpy(buf, "NaT", 3);
    return 3;
  case CF_TIMEDELTA: {
    struct dtype dt = dtype_of(DT_TIMEDELTA64);
    dt.size = 8;
    dt.unit = DTU_ns;
    dt.scale = 1;
    return render_fixed(&dt, &v->td, buf);
  }
  case CF_COMPLEX:
    return render_complex(v, buf);
  case CF_BOOL:
    if (v->b) {
      memcpy(buf, "true", 4);
      return 4;
    }
    memcpy(buf, "false", 5);
    return 5;
  }
  return 0;
}
