/* render.c - element -> text (see render.h). Hand-written integer
 * formatting and a shortest-round-trip float search keep it fast and
 * independent of the locale. */
#include "render.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Unsigned decimal into buf; returns the length. */
static size_t fmt_u64(uint64_t v, char *buf) {
  char tmp[24];
  size_t n = 0;
  do {
    tmp[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  for (size_t i = 0; i < n; i++)
    buf[i] = tmp[n - 1 - i];
  return n;
}

/* Signed decimal. */
static size_t fmt_i64(int64_t v, char *buf) {
  if (v < 0) {
    buf[0] = '-';
    return 1 + fmt_u64((uint64_t)0 - (uint64_t)v, buf + 1);
  }
  return fmt_u64((uint64_t)v, buf);
}

/* printf %.*e into buf with '.' as the decimal point whatever the locale. */
static int fmt_e(char *buf, size_t len, int prec, double v) {
  int n = snprintf(buf, len, "%.*e", prec, v);
  for (int i = 0; i < n; i++)
    if (buf[i] == ',')
      buf[i] = '.';
  return n;
}

/* Does text read back to exactly v at the given width (16, 32, 64 bits)? */
static int round_trips(const char *text, double v, int bits) {
  double back = strtod(text, NULL);
  if (bits == 16)
    return (_Float16)back == (_Float16)v;
  if (bits == 32)
    return (float)back == (float)v;
  return back == v;
}

/* Shortest text that reads back to exactly v at width `bits`:
 * the fewest significant digits that round-trip, written plain when the
 * decimal exponent is in [-4, 16) and as d.ddde+XX otherwise (Python's repr
 * without the trailing ".0"). */
static size_t fmt_float(double v, int bits, char *buf) {
  if (isnan(v)) {
    memcpy(buf, "nan", 3);
    return 3;
  }
  if (isinf(v)) {
    if (v < 0) {
      memcpy(buf, "-inf", 4);
      return 4;
    }
    memcpy(buf, "inf", 3);
    return 3;
  }
  /* Integral values below 1e15 are exact in decimal: no search needed. */
  if (v == floor(v) && fabs(v) < 1e15 && !(v == 0 && signbit(v)))
    return fmt_i64((int64_t)v, buf);
  char tmp[64];
  int maxp = bits == 16 ? 5 : bits == 32 ? 9 : 17, p;
  for (p = 1; p < maxp; p++) {
    fmt_e(tmp, sizeof tmp, p - 1, v);
    if (round_trips(tmp, v, bits))
      break;
  }
  int n = fmt_e(tmp, sizeof tmp, p - 1, v);
  const char *e = strchr(tmp, 'e');
  int exp10 = e ? atoi(e + 1) : 0;
  if (exp10 >= -4 && exp10 < 16) {
    int frac = p - 1 - exp10;
    n = snprintf(tmp, sizeof tmp, "%.*f", frac > 0 ? frac : 0, v);
    for (int i = 0; i < n; i++)
      if (tmp[i] == ',')
        tmp[i] = '.';
  }
  memcpy(buf, tmp, (size_t)n);
  return (size_t)n;
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
  case DT_FLOAT16: {
    _Float16 v;
    memcpy(&v, elem, 2);
    return fmt_float((double)v, 16, buf);
  }
  case DT_FLOAT32: {
    float v;
    memcpy(&v, elem, 4);
    return fmt_float(v, 32, buf);
  }
  case DT_FLOAT64: {
    double v;
    memcpy(&v, elem, 8);
    return fmt_float(v, 64, buf);
  }
  default:
    return 0;
  }
}

/* Text length of a variable element. */
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
    uint64_t t = text_off;
    for (size_t i = 0; i < len; i++, t++) {
      uint8_t b = src[t / 2 - text_off / 2];
      dst[i] = hex[(t & 1) ? (b & 15) : (b >> 4)];
    }
    return;
  }
  /* Strings: copy, then turn newline bytes into spaces. */
  memcpy(dst, src, len);
  char *p = dst, *end = dst + len;
  while ((p = memchr(p, '\n', (size_t)(end - p))))
    *p++ = ' ';
}
