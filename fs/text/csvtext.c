/* csvtext.c - CSV fields of rows.csv (see csvtext.h): the text contract's
 * and the CF views' renderers with missing values left empty, strings
 * quoted as RFC 4180 asks. */
#include "csvtext.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/util/buf.h"
#include "cftext.h"
#include "csvfield.h"
#include "render.h"

_Static_assert(CSVTEXT_MAX <= RENDER_FIXED_MAX && CFTEXT_MAX <= CSVTEXT_MAX,
               "a field fits a render buffer");

/* Is the text render_fixed wrote for dt a missing value: NaT, or a
 * zarrs.optional null at some layer ("null", "[null]", ...)? A present
 * number is never "null" nor starts with a bracket. */
static int fixed_missing(const struct dtype *dt, const char *t, size_t n) {
  if (n == 3 && !memcmp(t, "NaT", 3))
    return 1;
  return dt->kind == DT_OPTIONAL &&
         ((n == 4 && !memcmp(t, "null", 4)) || (n && t[0] == '['));
}

/* A decoded element's field: masked values and NaT empty. */
size_t csvtext_cf(const struct cf_value *v, char *buf) {
  if (v->kind == CF_MISSING || v->kind == CF_NAT ||
      (v->kind == CF_COMPLEX && isnan(v->num.d) && isnan(v->im)))
    return 0;
  return cftext_render(v, buf);
}

/* One fixed-size element's field. */
size_t csvtext_fixed(const struct cf *cf, const struct dtype *dt,
                     const void *elem, char *buf) {
  struct cf_value v;
  if (cf && cf_decode(cf, elem, &v) == 0)
    return csvtext_cf(&v, buf);
  /* no CF encoding, or a time beyond what xarray holds: the stored value,
   * as values.cf.txt shows it */
  size_t n = render_fixed(dt, elem, buf);
  return fixed_missing(dt, buf, n) ? 0 : n;
}

/* Variable-length elements to their fields. */
int csvtext_prep(const struct dtype *dt, enum dtype_kind kind,
                 struct abytes *ab, const struct codec_env *env,
                 struct zerr *err) {
  if (ab->elsize)
    return 0;
  /* zarrs.optional: a value shorter than the type's depth is missing at
   * some layer (codecs/optional.c writes one byte 1 per present layer) */
  unsigned depth = 0;
  int hex = kind == DT_BYTES;
  if (dt->kind == DT_OPTIONAL) {
    depth = dt->depth ? dt->depth : 1;
    hex = dt->inner == DT_BYTES;
  }
  struct dtype bytes = dtype_of(DT_BYTES);
  struct bytesrc *loaded = NULL, *src = NULL;
  ZTRY(chain_load_data(ab, env, &loaded, err));
  int rc = bytesrc_load(loaded, env->max_decoded, &src, err);
  bytesrc_unref(loaded);
  if (rc < 0)
    return rc;
  uint64_t *off = malloc((size_t)(ab->n + 1) * sizeof *off);
  if (!off)
    rc = zerr_set(err, ENOMEM, "out of memory");
  struct zbuf out;
  zbuf_init(&out, env->max_decoded);
  for (uint64_t i = 0; i < ab->n && rc == 0; i++) {
    uint64_t a = ab->offsets[i], len = ab->offsets[i + 1] - a;
    off[i] = out.len;
    if (len <= depth)
      continue; /* missing, or an empty value: an empty field */
    const uint8_t *v = src->mem + a + depth;
    uint64_t vl = len - depth;
    uint64_t tl = hex ? render_var_len(&bytes, vl)
                      : csvfield_len((const char *)v, (size_t)vl);
    if (tl > env->max_decoded - out.len)
      rc = zerr_set(err, EFBIG, "CSV text exceeds the decode limit");
    else if ((rc = zbuf_reserve(&out, (size_t)tl, err)) == 0) {
      char *d = (char *)out.data + out.len;
      if (hex)
        render_var(&bytes, v, 0, (size_t)tl, d);
      else
        csvfield_put((const char *)v, (size_t)vl, d);
      out.len += (size_t)tl;
    }
  }
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&out);
    free(off);
    return rc;
  }
  return abytes_set_var(ab, off, &out, "CSV text", err);
}

/* Skip n fields: a quoted one ends at the quote that is not doubled, any
 * other at the first separator. */
uint64_t csvtext_skip(const char *t, uint64_t size, uint64_t pos, uint64_t n) {
  for (; n && pos < size; n--) {
    if (t[pos] == '"') {
      for (pos++;;) {
        const char *q = memchr(t + pos, '"', (size_t)(size - pos));
        if (!q)
          return size;
        pos = (uint64_t)(q - t) + 1;
        if (pos < size && t[pos] == '"') {
          pos++; /* a doubled quote inside the field */
          continue;
        }
        break;
      }
    } else {
      while (pos < size && t[pos] != ',' && t[pos] != '\n')
        pos++;
    }
    pos++; /* the separator */
  }
  return pos < size ? pos : size;
}
