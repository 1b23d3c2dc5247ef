/* textprep.c - decoded elements to their text type, and fill text (see
 * textprep.h). Apart from the engine, so that the engine does not include
 * the renderers. */
#include "textprep.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/util/buf.h"
#include "../../src/util/utf8.h"
#include "../../src/zarr/cf.h"
#include "../../src/zarr/cfmask.h"
#include "csvtext.h"
#include "render.h"
#include "rstruct.h"

static int fixed_strings_to_text(const struct dtype *dt, const struct cf *cf,
                                 struct abytes *ab, const struct codec_env *env,
                                 struct zerr *err);
static int optional_var_to_text(const struct dtype *dt, struct abytes *ab,
                                const struct codec_env *env, struct zerr *err);

/* Conversions that turn decoded elements into the node's text type:
 * fixed-width strings to strings, optional strings and bytes to text,
 * records to their lines; for a CSV form, variable-length elements on to
 * their CSV fields and records to theirs, one element per record. */
int textprep_to_text(const struct dtype *dt, const struct text_form *form,
                     struct abytes *ab, const struct codec_env *env,
                     struct zerr *err) {
  int csv = form->csv;
  if (dt->kind == DT_STRUCT && csv) /* fields quoted one by one */
    return ab->elsize ? rstruct_to_csv(dt, ab, env, err) : 0;
  if (dtype_is_fixed_string(dt))
    ZTRY(fixed_strings_to_text(
        dt, form->cf && form->cf->is_bytes ? form->cf : NULL, ab, env, err));
  else if (dt->kind == DT_STRUCT)
    ZTRY(rstruct_to_text(dt, ab, env, err));
  if (csv) /* bytes as node.c gives them their text type: hex */
    return csvtext_prep(dt,
                        dt->kind == DT_BYTES || (dtype_is_fixed_string(dt) &&
                                                 dt->kind != DT_FIXED_UTF32)
                            ? DT_BYTES
                            : DT_STRING,
                        ab, env, err);
  if (dt->kind == DT_OPTIONAL && !ab->elsize)
    return optional_var_to_text(dt, ab, env, err);
  return 0;
}

/* The text of the fill value, once per node: one fill element through the
 * same conversions and renderers as decoded data, so a missing chunk reads
 * exactly like a stored chunk full of fill values. */
int textprep_fill_text(const struct codec_spec *uspec, const struct dtype *dt,
                       const struct codec_env *env, struct text_form *form,
                       struct zerr *err) {
  struct codec_spec one = *uspec;
  one.nelem = 1;
  for (int d = 0; d < one.ndim; d++)
    one.shape[d] = 1;
  struct abytes *ab;
  ZTRY(abytes_new_fill(&one, env, &ab, err));
  struct bytesrc *src = NULL;
  int rc = textprep_to_text(dt, form, ab, env, err);
  if (rc == 0)
    rc = ab->elsize ? bytesrc_load(ab->fixed, env->max_decoded, &src, err)
                    : chain_load_data(ab, env, &src, err);
  if (rc == 0 && !src->mem) {
    struct bytesrc *mem;
    rc = bytesrc_load(src, env->max_decoded, &mem, err);
    bytesrc_unref(src);
    src = rc == 0 ? mem : NULL;
  }
  char *text = NULL;
  uint64_t len = 0;
  if (rc == 0 && ab->elsize) {
    char tmp[RENDER_FIXED_MAX];
    len = text_render_fixed(form, src->mem, tmp);
    if ((text = malloc(len + 1)))
      memcpy(text, tmp, (size_t)len);
  } else if (rc == 0) {
    uint64_t nbytes = ab->offsets[1] - ab->offsets[0];
    len = render_var_len(&form->dt, nbytes);
    if (len > env->max_decoded)
      rc = zerr_set(err, EFBIG, "fill value text exceeds the decode limit");
    else if ((text = malloc(len + 1)) && form->csv) /* fields as they are */
      memcpy(text, src->mem + ab->offsets[0], (size_t)len);
    else if (text)
      render_var(&form->dt, src->mem + ab->offsets[0], 0, (size_t)len, text);
    if (text && form->dt.kind == DT_STRING) /* as a stored element's text */
      utf8_fix((uint8_t *)text, (size_t)len);
  }
  if (rc == 0 && !text)
    rc = zerr_set(err, ENOMEM, "out of memory");
  bytesrc_unref(src);
  abytes_free(ab);
  if (rc < 0)
    return rc;
  form->fill = text;
  form->fill_len = len;
  return 0;
}

/* Fixed-width strings (numpy U and S) and raw bytes become variable-length
 * elements: NUL padding dropped (not for raw bytes), UTF-32 code units
 * converted to UTF-8 (invalid ones as U+FFFD); S strings that cf (may be
 * NULL) masks become empty, as xarray's NaN shows in a string's text. */
static int fixed_strings_to_text(const struct dtype *dt, const struct cf *cf,
                                 struct abytes *ab, const struct codec_env *env,
                                 struct zerr *err) {
  struct bytesrc *src;
  ZTRY(bytesrc_load(ab->fixed, env->max_decoded, &src, err));
  size_t es = ab->elsize;
  struct zbuf out;
  zbuf_init(&out, env->max_decoded);
  uint64_t *off = malloc((size_t)(ab->n + 1) * sizeof *off);
  int rc = off ? 0 : zerr_set(err, ENOMEM, "out of memory");
  for (uint64_t i = 0; i < ab->n && rc == 0; i++) {
    const uint8_t *e = src->mem + i * es;
    off[i] = out.len;
    size_t len = es;
    if (dt->kind != DT_FIXED_UTF32) { /* S drops NULs, raw bytes keep all */
      while (dt->kind == DT_FIXED_BYTES && len && !e[len - 1])
        len--;
      if (cf && cfmask_bytes_masked(cf, e, len))
        continue;
      rc = zbuf_append(&out, e, len, err);
      continue;
    }
    while (len >= 4 && !memcmp(e + len - 4, "\0\0\0\0", 4))
      len -= 4;
    for (size_t k = 0; k < len && rc == 0; k += 4) {
      uint32_t c;
      memcpy(&c, e + k, 4);
      if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
        c = 0xfffd;
      uint8_t u[UTF8_MAX];
      size_t n = utf8_put(u, c);
      rc = zbuf_append(&out, u, n, err);
    }
  }
  bytesrc_unref(src);
  if (rc < 0) {
    free(off);
    zbuf_free(&out);
    return rc;
  }
  return abytes_set_var(ab, off, &out, "fixed-width string", err);
}

/* Optional strings and bytes become their text, as string elements:
 * a missing value is "null" ("[null]" ... inside present layers, see
 * render_optional_null), a present string its bytes (after a backslash
 * when they would read as missing or start with one: see
 * render_optional_escaped), present bytes their lowercase hex (never
 * ambiguous). An element shorter than the type's depth is missing at
 * the layer its length gives (codecs/optional.c writes one byte 1 per
 * present layer). */
static int optional_var_to_text(const struct dtype *dt, struct abytes *ab,
                                const struct codec_env *env, struct zerr *err) {
  unsigned depth = dt->depth ? dt->depth : 1;
  struct dtype hex = dtype_of(DT_BYTES);
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
    if (len < depth) {
      char t[RENDER_FIXED_MAX];
      rc = zbuf_append(&out, t, render_optional_null((unsigned)len, t), err);
    } else if (dt->inner == DT_BYTES) {
      uint64_t tl = render_var_len(&hex, len - depth);
      if (tl > env->max_decoded - out.len)
        rc = zerr_set(err, EFBIG, "optional bytes: text exceeds the limit");
      else if ((rc = zbuf_reserve(&out, (size_t)tl, err)) == 0) {
        render_var(&hex, src->mem + a + depth, 0, (size_t)tl,
                   (char *)out.data + out.len);
        out.len += (size_t)tl;
      }
    } else {
      const uint8_t *v = src->mem + a + depth;
      size_t vl = (size_t)(len - depth);
      if (render_optional_escaped(v, vl))
        rc = zbuf_append(&out, "\\", 1, err);
      if (rc == 0)
        rc = zbuf_append(&out, v, vl, err);
    }
  }
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&out);
    free(off);
    return rc;
  }
  return abytes_set_var(ab, off, &out, "optional text", err);
}
