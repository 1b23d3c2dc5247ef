/* rstruct.c - structured elements as text (see rstruct.h): every field
 * copied out of the record, put in host byte order and handed to the
 * renderer of its own type. */
#include "rstruct.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/util/utf8.h"
#include "csvfield.h"
#include "render.h"

/* Is a field stored in the other byte order than the host's? */
static int field_swapped(const struct dtype_field *f) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return f->endian == 'l';
#else
  return f->endian == 'b';
#endif
}

/* Reverse each run of `unit` bytes of p[0, n). */
static void swap_units(uint8_t *p, size_t n, size_t unit) {
  for (size_t a = 0; unit > 1 && a + unit <= n; a += unit)
    for (size_t i = 0, j = unit - 1; i < j; i++, j--) {
      uint8_t t = p[a + i];
      p[a + i] = p[a + j];
      p[a + j] = t;
    }
}

/* Lowercase hex of n bytes. */
static int put_hex(const uint8_t *v, size_t n, struct zbuf *out,
                   struct zerr *err) {
  static const struct dtype hex = {.kind = DT_BYTES};
  ZTRY(zbuf_reserve(out, 2 * n, err));
  render_var(&hex, v, 0, 2 * n, (char *)out->data + out->len);
  out->len += 2 * n;
  return 0;
}

/* numpy U: UTF-32 code units in the field's order, trailing NULs dropped,
 * invalid units as U+FFFD, tab and newline as a space unless raw. */
static int put_utf32(const struct dtype_field *f, const uint8_t *v, int raw,
                     struct zbuf *out, struct zerr *err) {
  size_t len = f->type.size;
  while (len >= 4 && !memcmp(v + len - 4, "\0\0\0\0", 4))
    len -= 4;
  for (size_t k = 0; k < len; k += 4) {
    uint8_t cu[4];
    memcpy(cu, v + k, 4);
    if (field_swapped(f))
      swap_units(cu, 4, 4);
    uint32_t c;
    memcpy(&c, cu, 4);
    if (c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
      c = 0xfffd;
    if (!raw && (c == '\t' || c == '\n'))
      c = ' ';
    uint8_t u[UTF8_MAX];
    ZTRY(zbuf_append(out, u, utf8_put(u, c), err));
  }
  return 0;
}

/* One value of a field (v points at its type.size stored bytes). */
static int put_value(const struct dtype_field *f, const uint8_t *v, int raw,
                     struct zbuf *out, struct zerr *err) {
  size_t n = f->type.size;
  switch (f->type.kind) {
  case DT_FIXED_BYTES:
    while (n && !v[n - 1])
      n--;
    return put_hex(v, n, out, err);
  case DT_RAW:
    return put_hex(v, n, out, err);
  case DT_FIXED_UTF32:
    return put_utf32(f, v, raw, out, err);
  default:
    break;
  }
  uint64_t tmp[2]; /* the widest scalar, complex128, aligned */
  if (n > sizeof tmp)
    return zerr_set(err, EIO, "field '%s': %zu-byte values", f->name, n);
  memcpy(tmp, v, n);
  if (field_swapped(f))
    swap_units((uint8_t *)tmp, n, dtype_swap_unit(&f->type));
  char buf[RENDER_FIXED_MAX];
  return zbuf_append(out, buf, render_fixed(&f->type, tmp, buf), err);
}

/* Every value of the field, a space between two. */
static int field_values(const struct dtype_field *f, const uint8_t *elem,
                        int raw, struct zbuf *out, struct zerr *err) {
  const uint8_t *v = elem + f->offset;
  for (uint64_t i = 0; i < f->count; i++, v += f->type.size) {
    if (i)
      ZTRY(zbuf_append(out, " ", 1, err));
    ZTRY(put_value(f, v, raw, out, err));
  }
  return 0;
}

/* A field as its line shows it. */
int rstruct_field(const struct dtype_field *f, const uint8_t *elem,
                  struct zbuf *out, struct zerr *err) {
  return field_values(f, elem, 0, out, err);
}

/* A field with its U text as stored (tabs and newlines kept). */
int rstruct_field_raw(const struct dtype_field *f, const uint8_t *elem,
                      struct zbuf *out, struct zerr *err) {
  return field_values(f, elem, 1, out, err);
}

/* See rstruct.h: a field's kind of CSV value. */
enum rstruct_csv rstruct_field_csv(const struct dtype_field *f) {
  switch (f->type.kind) {
  case DT_FIXED_UTF32:
    return RSTRUCT_CSV_TEXT;
  case DT_FIXED_BYTES:
  case DT_RAW:
    return RSTRUCT_CSV_HEX;
  case DT_FLOAT16:
  case DT_FLOAT32:
  case DT_FLOAT64:
  case DT_BFLOAT16:
    return f->count == 1 ? RSTRUCT_CSV_FLOAT : RSTRUCT_CSV_NUMBER;
  default:
    return RSTRUCT_CSV_NUMBER;
  }
}

/* The fields, a tab between two. */
int rstruct_element(const struct dtype *dt, const uint8_t *elem,
                    struct zbuf *out, struct zerr *err) {
  const struct dtype_struct *st = dt->st;
  for (size_t i = 0; i < st->nfields; i++) {
    if (i)
      ZTRY(zbuf_append(out, "\t", 1, err));
    ZTRY(rstruct_field(&st->fields[i], elem, out, err));
  }
  return 0;
}

/* The CSV fields of the record at elem, a comma between two: each field
 * as rstruct_field_raw writes it, a scalar NaT empty, quoted as RFC 4180
 * asks (fs/text/csvfield.h); tmp is scratch. */
int rstruct_csv_element(const struct dtype *dt, const uint8_t *elem,
                        struct zbuf *tmp, struct zbuf *out, struct zerr *err) {
  const struct dtype_struct *st = dt->st;
  for (size_t i = 0; i < st->nfields; i++) {
    const struct dtype_field *f = &st->fields[i];
    if (i)
      ZTRY(zbuf_append(out, ",", 1, err));
    tmp->len = 0;
    ZTRY(field_values(f, elem, 1, tmp, err));
    const char *s = (const char *)tmp->data;
    size_t n = tmp->len;
    if (rstruct_field_csv(f) != RSTRUCT_CSV_TEXT && n == 3 &&
        !memcmp(s, "NaT", 3))
      continue;
    size_t fl = csvfield_len(s, n);
    ZTRY(zbuf_reserve(out, fl, err));
    out->len += csvfield_put(s, n, (char *)out->data + out->len);
  }
  return 0;
}

/* Records to text elements, as the fixed-width strings become strings in
 * fs/text/textprep.c: the element bytes are replaced by offsets and text (each
 * record's line, or with csv its CSV fields). */
static int records_to(const struct dtype *dt, int csv, struct abytes *ab,
                      const struct codec_env *env, struct zerr *err) {
  if (!dt->st || ab->elsize != dt->size)
    return zerr_set(err, EIO, "structured elements of %zu bytes, not %zu",
                    ab->elsize, dt->size);
  struct bytesrc *src;
  ZTRY(bytesrc_load(ab->fixed, env->max_decoded, &src, err));
  struct zbuf out, tmp;
  zbuf_init(&out, env->max_decoded);
  zbuf_init(&tmp, env->max_decoded);
  uint64_t *off = malloc((size_t)(ab->n + 1) * sizeof *off);
  int rc = off ? 0 : zerr_set(err, ENOMEM, "out of memory");
  for (uint64_t i = 0; i < ab->n && rc == 0; i++) {
    const uint8_t *e = src->mem + i * ab->elsize;
    off[i] = out.len;
    rc = csv ? rstruct_csv_element(dt, e, &tmp, &out, err)
             : rstruct_element(dt, e, &out, err);
  }
  zbuf_free(&tmp);
  bytesrc_unref(src);
  if (rc < 0) {
    zbuf_free(&out);
    free(off);
    return rc;
  }
  return abytes_set_var(ab, off, &out, "structured", err);
}

/* Records to lines. */
int rstruct_to_text(const struct dtype *dt, struct abytes *ab,
                    const struct codec_env *env, struct zerr *err) {
  return records_to(dt, 0, ab, env, err);
}

/* Records to their CSV fields. */
int rstruct_to_csv(const struct dtype *dt, struct abytes *ab,
                   const struct codec_env *env, struct zerr *err) {
  return records_to(dt, 1, ab, env, err);
}

/* The field table of info.txt. */
int rstruct_describe(FILE *f, const struct dtype *dt) {
  const struct dtype_struct *st = dt->st;
  if (!st)
    return 0;
  fprintf(f, "item_size: %zu\nfields:\n", st->itemsize);
  for (size_t i = 0; i < st->nfields; i++) {
    const struct dtype_field *fl = &st->fields[i];
    /* names from the store: quoted when they could break the line */
    int qn = utf8_needs_quotes(fl->name, 1),
        qt = utf8_needs_quotes(fl->typestr, 0);
    char *name = qn ? utf8_quote(fl->name) : NULL;
    char *type = qt ? utf8_quote(fl->typestr) : NULL;
    if ((qn && !name) || (qt && !type)) {
      free(name);
      free(type);
      return -ENOMEM;
    }
    fprintf(f, "  %s: %s", name ? name : fl->name, type ? type : fl->typestr);
    free(name);
    free(type);
    for (int d = 0; d < fl->ndim; d++)
      fprintf(f, "%s%llu", d ? ", " : " shape [",
              (unsigned long long)fl->shape[d]);
    fprintf(f, "%s at %zu\n", fl->ndim ? "]" : "", fl->offset);
  }
  return 0;
}
