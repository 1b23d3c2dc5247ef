/* cfmask.c - the CF masks of values xarray masks but does not unpack:
 * complex numbers, bools and strings (see cfmask.h). */
#include "cfmask.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"

/* See cfmask.h. */
int cfmask_json_num(json_t *j, double *out) {
  if (json_is_integer(j)) {
    *out = (double)json_integer_value(j);
  } else if (json_is_real(j)) {
    *out = json_real_value(j);
  } else if (json_is_boolean(j)) {
    *out = json_is_true(j);
  } else if (json_is_string(j)) {
    const char *s = json_string_value(j);
    if (!strcmp(s, "NaN"))
      *out = NAN;
    else if (!strcmp(s, "Infinity"))
      *out = INFINITY;
    else if (!strcmp(s, "-Infinity"))
      *out = -INFINITY;
    else if (dtype_int_literal(s, out) < 0) /* digits zjson carried */
      return -1;
  } else {
    return -1;
  }
  return 0;
}

/* Are a value and a fill equal in the value's width (a complex64's parts
 * compared as float32, as numpy compares them)? */
static int same(double x, double fill, int f32) {
  return f32 ? (float)x == (float)fill : x == fill;
}

/* Add the fill values of attribute j of a complex array: a [re, im] pair
 * is one value (zarr-python's complex fill), a number re + 0j, a list of
 * either several; a value with a NaN part never compares equal (left
 * out). */
static int add_cfills(struct cf *c, json_t *j, const char *name,
                      struct zerr *err) {
  if (!j || json_is_null(j))
    return 0;
  int pair = json_is_array(j) && json_array_size(j) == 2 &&
             !json_is_array(json_array_get(j, 0));
  size_t n = json_is_array(j) && !pair ? json_array_size(j) : 1;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_is_array(j) && !pair ? json_array_get(j, i) : j;
    double re, im = 0;
    int ok = json_is_array(e) && json_array_size(e) == 2
                 ? cfmask_json_num(json_array_get(e, 0), &re) == 0 &&
                       cfmask_json_num(json_array_get(e, 1), &im) == 0
                 : cfmask_json_num(e, &re) == 0;
    if (!ok)
      return zerr_set(err, EIO,
                      "CF %s is not a complex number or a list "
                      "of them",
                      name);
    if (isnan(re) || isnan(im))
      continue;
    if (c->nfill == CF_MAX_FILL)
      return zerr_set(err, EIO, "CF %s: more than %d fill values", name,
                      CF_MAX_FILL);
    c->fill_im[c->nfill] = im;
    c->fill[c->nfill++] = re;
  }
  return 0;
}

/* A complex array's encoding: its fill values only (see cfmask.h). */
int cfmask_parse_complex(struct cf *c, json_t *attrs, json_t *fill_value,
                         struct zerr *err) {
  static const char *const refused[] = {"scale_factor", "add_offset"};
  for (size_t i = 0; i < 2; i++)
    if (json_object_get(attrs, refused[i]))
      return zerr_set(err, EIO, "CF %s on a complex array is not decoded",
                      refused[i]);
  const char *units = json_string_value(json_object_get(attrs, "units"));
  if (units && strstr(units, "since"))
    return zerr_set(err, EIO,
                    "CF time units on a complex array are not "
                    "decoded");
  json_t *fv = json_object_get(attrs, "_FillValue");
  json_t *mv = json_object_get(attrs, "missing_value");
  ZTRY(add_cfills(c, mv, "missing_value", err));
  ZTRY(add_cfills(c, fv ? fv : fill_value, "_FillValue", err));
  return fv || mv || (fill_value && !json_is_null(fill_value));
}

/* See cfmask.h: xarray keeps complex values complex and makes bools
 * objects; a masked one is NaN (nan+nanj), the others stay as they are,
 * each compared with the fills as it is (numpy: True == 1). */
int cfmask_decode(const struct cf *c, struct cf_value *v) {
  if (v->kind != CF_COMPLEX &&
      (c->kind != DT_BOOL || !c->nfill || c->has_scale || c->has_offset ||
       c->is_time || c->is_timedelta))
    return 0;
  int f32 = v->width == CF_NUM_F32;
  double re = v->kind == CF_COMPLEX ? v->num.d : (double)v->num.u;
  int missing = 0;
  for (int i = 0; i < c->nfill && !missing; i++)
    missing = v->kind == CF_COMPLEX
                  ? same(re, c->fill[i], f32) && same(v->im, c->fill_im[i], f32)
                  : re == c->fill[i];
  if (v->kind == CF_COMPLEX && missing)
    v->num.d = v->im = NAN;
  else if (v->kind != CF_COMPLEX)
    v->kind = missing ? CF_MISSING : CF_BOOL, v->b = v->num.u != 0;
  return 1;
}

/* Add the string fill values of attribute j (a string or a list of
 * them; other values never equal a string: left out), trailing NULs
 * dropped. */
static int add_bfills(struct cf *c, json_t *j, const char *name,
                      struct zerr *err) {
  size_t n = json_is_array(j) ? json_array_size(j) : j ? 1 : 0;
  for (size_t i = 0; i < n; i++) {
    json_t *e = json_is_array(j) ? json_array_get(j, i) : j;
    if (!json_is_string(e))
      continue;
    size_t len = json_string_length(e);
    const char *s = json_string_value(e);
    while (len && !s[len - 1])
      len--;
    if (len > CF_MAX_BFILL)
      return zerr_set(err, EIO, "CF %s longer than %d bytes", name,
                      CF_MAX_BFILL);
    if (c->nbfill == CF_MAX_FILL)
      return zerr_set(err, EIO, "CF %s: more than %d fill values", name,
                      CF_MAX_FILL);
    memcpy(c->bfill[c->nbfill], s, len);
    c->bfill_len[c->nbfill++] = len;
  }
  return 0;
}

/* Parse the CF encoding of strings (see cfmask.h). */
int cfmask_parse_bytes(json_t *attrs, const uint8_t *fill, size_t fill_len,
                       int xarray_fill, int joined, struct cf **out,
                       struct zerr *err) {
  *out = NULL;
  json_t *fv = json_object_get(attrs, "_FillValue");
  json_t *mv = json_object_get(attrs, "missing_value");
  int enc = json_object_get(attrs, "_Encoding") != NULL;
  while (fill && fill_len && !fill[fill_len - 1])
    fill_len--;
  int own = !fv && xarray_fill && fill;
  if (!fv && !mv && !enc && !own && !joined)
    return 0;
  struct cf *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  c->kind = DT_FIXED_BYTES;
  c->is_bytes = 1;
  int rc = add_bfills(c, mv, "missing_value", err);
  if (rc == 0)
    rc = add_bfills(c, fv, "_FillValue", err);
  if (rc == 0 && own && fill_len > CF_MAX_BFILL)
    rc = zerr_set(err, EIO, "fill_value longer than %d bytes", CF_MAX_BFILL);
  else if (rc == 0 && own && c->nbfill == CF_MAX_FILL)
    rc = zerr_set(err, EIO, "more than %d fill values", CF_MAX_FILL);
  else if (rc == 0 && own) {
    memcpy(c->bfill[c->nbfill], fill, fill_len);
    c->bfill_len[c->nbfill++] = fill_len;
  }
  if (rc < 0) {
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* Is a string masked? */
int cfmask_bytes_masked(const struct cf *c, const uint8_t *s, size_t n) {
  while (n && !s[n - 1])
    n--;
  for (int i = 0; i < c->nbfill; i++)
    if (c->bfill_len[i] == n && !memcmp(c->bfill[i], s, n))
      return 1;
  return 0;
}
