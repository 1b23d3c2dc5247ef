/* tblock.c - a block of rows of a table rendered (see tblock.h). */
#include "tblock.h"

#include <stdlib.h>
#include <string.h>

#include "../../codecs/abytes.h"
#include "../../codecs/chain.h"
#include "../../src/util/buf.h"
#include "../../src/util/utf8.h"
#include "../engine/unit.h"
#include "../text/csvfield.h"
#include "../text/rstruct.h"
#include "../text/textprep.h"

/* ---- string and bytes columns: chunks with their element bytes ---- */

/* A chunk of a string or bytes array decoded for a table: the element
 * bytes as stored (the views' units show newlines as spaces). For a
 * structured array, its records as stored (fixed-size elements), the
 * fill records when the chunk is not stored. */
struct rawchunk {
  struct zobj obj;
  struct abytes *ab;    /* NULL: the chunk is not stored (the fill value) */
  struct bytesrc *data; /* ab's element bytes (records: in memory) */
};

/* Release a raw chunk. */
static void rawchunk_destroy(struct zobj *o) {
  struct rawchunk *r = (struct rawchunk *)o;
  bytesrc_unref(r->data);
  abytes_free(r->ab);
  free(r);
}

/* What a raw chunk fill needs. */
struct rjob {
  struct engine *e;
  const struct znode *n;
  uint64_t c;  /* the chunk */
  int records; /* a structured array: keep the records */
};

/* Fill: chunk c of a 1-D string or bytes array, decoded with its bytes.
 * A data error is logged here, naming the chunk. */
static int rawchunk_fill(void *ctx, struct zobj **obj, size_t *cost,
                         struct zerr *err) {
  struct rjob *j = ctx;
  struct engine *e = j->e;
  const struct znode *n = j->n;
  char key[4096];
  if (node_chunk_key(n, &j->c, key, sizeof key) < 0)
    return zerr_set(err, ENAMETOOLONG, "chunk key too long");
  struct rawchunk *r = calloc(1, sizeof *r);
  if (!r)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&r->obj, rawchunk_destroy);
  struct bytesrc *src = NULL;
  int rc = engine_check_stop(e, err);
  if (rc == 0)
    rc = store_get(e->store, key, &src, err);
  struct codec_spec tmp;
  if (rc == -ENOENT && !j->records) {
    zerr_clear(err);
    *obj = &r->obj;
    *cost = sizeof *r;
    return 0;
  } else if (rc == -ENOENT) {
    zerr_clear(err);
    rc = abytes_new_fill(node_chunk_spec(n, &j->c, &tmp), &e->env, &r->ab, err);
  } else if (rc == 0) {
    rc = chain_decode(n->chain, node_chunk_spec(n, &j->c, &tmp), src, &e->env,
                      &r->ab, err);
  }
  bytesrc_unref(src);
  if (rc == 0 && j->records) {
    if (r->ab->elsize != n->meta->dtype.size)
      rc = zerr_set(err, EIO, "records of %zu bytes, not %zu", r->ab->elsize,
                    n->meta->dtype.size);
    else
      rc = bytesrc_load(r->ab->fixed, e->env.max_decoded, &r->data, err);
  } else if (rc == 0) {
    rc = textprep_to_text(&n->meta->dtype, &n->form, r->ab, &e->env, err);
    if (rc == 0 && r->ab->elsize)
      rc = zerr_set(err, EIO, "elements are not of variable length");
    if (rc == 0)
      rc = chain_load_data(r->ab, &e->env, &r->data, err);
  }
  if (rc < 0) {
    zobj_put(&r->obj);
    if (!zerr_is_transient(-rc))
      engine_log(e, key, err->msg);
    return zerr_prefix(err, "chunk %s: ", key);
  }
  *obj = &r->obj;
  *cost = sizeof *r + abytes_mem_cost(r->ab) +
          (r->data->mem ? (size_t)r->data->size : 0);
  return 0;
}

/* ---- fields of a block ---- */

/* Append s[0, n) as a field (empty when a number's text says missing;
 * `.0` after an integral float). */
static int put_field(struct zbuf *f, const char *s, size_t n, int number,
                     int floating, struct zerr *err) {
  if (number && csvfield_is_missing(s, n))
    return 0;
  int point = floating && csvfield_float_integral(s, n);
  size_t fl = csvfield_len(s, n);
  ZTRY(zbuf_reserve(f, fl + 2, err));
  f->len += csvfield_put(s, n, (char *)f->data + f->len);
  if (point) {
    memcpy(f->data + f->len, ".0", 2);
    f->len += 2;
  }
  return 0;
}

/* Append bytes b[0, n) as a field: hex, or a string as it is. */
static int put_raw(struct zbuf *f, const uint8_t *b, size_t n, int hex,
                   struct zerr *err) {
  if (!hex)
    return put_field(f, (const char *)b, n, 0, 0, err);
  if (n > SIZE_MAX / 2)
    return zerr_set(err, EFBIG, "element too large");
  ZTRY(zbuf_reserve(f, 2 * n, err));
  f->len += csvfield_hex(b, n, (char *)f->data + f->len);
  return 0;
}

/* Fields of rows [r0, r1) of a column from its units' text (one line a
 * row); ends[i] is where row r0+i's field ends in f. */
static int fields_text(struct engine *e, const struct tcol *c, uint64_t r0,
                       uint64_t r1, struct zbuf *f, uint64_t *ends,
                       struct zerr *err) {
  const struct znode *n = c->n;
  size_t i = 0;
  for (uint64_t r = r0; r < r1;) {
    uint64_t u = node_unit_of(n, 0, r), us = node_unit_start(n, 0, u);
    uint64_t hi = us + node_unit_ext(n, 0, u);
    if (hi > r1)
      hi = r1;
    struct memo_ref *ref = NULL, *pin = NULL;
    const struct chunk_text *rct = NULL;
    struct bytesrc *data = NULL;
    char *tmp = NULL;
    uint64_t idx[ZMETA_MAX_DIMS] = {u}; /* a joined column: [u, 0] */
    int rc = unit_get(e, n, idx, &ref, err);
    if (rc == 0)
      rc = unit_src(e, n, unit_of_ref(ref), &rct, &data, &pin, err);
    if (rc == 0) {
      uint64_t ka = r - us, kb = hi - us;
      uint64_t oa = text_line_off(rct, ka);
      uint64_t ob = text_line_off_from(rct, ka, oa, kb);
      size_t tl = (size_t)(ob - oa);
      if (!(tmp = malloc(tl ? tl : 1)))
        rc = zerr_set(err, ENOMEM, "out of memory");
      long got = rc ? rc : text_read(rct, data, oa, tl, tmp, err);
      if (rc == 0 && got < 0)
        rc = (int)got;
      else if (rc == 0 && (size_t)got != tl)
        rc = zerr_set(err, EIO, "short text");
      for (size_t p = 0; rc == 0 && p < tl && i < r1 - r0;) {
        const char *nl = memchr(tmp + p, '\n', tl - p);
        size_t ll = nl ? (size_t)(nl - (tmp + p)) : tl - p;
        rc = put_field(f, tmp + p, ll, c->number, c->floating, err);
        ends[i++] = f->len;
        p += ll + 1;
      }
    }
    free(tmp);
    bytesrc_unref(data);
    memo_release(e->memo, pin);
    memo_release(e->memo, ref);
    if (rc < 0)
      return rc;
    if (i != hi - r0)
      return zerr_set(err, EIO, "%s: lines do not match elements", n->path);
    r = hi;
  }
  return 0;
}

/* Fields of rows [r0, r1) of a string or bytes column from its chunks'
 * element bytes (fields_text's contract). */
static int fields_raw(struct engine *e, const struct tcol *c, uint64_t r0,
                      uint64_t r1, struct zbuf *f, uint64_t *ends,
                      struct zerr *err) {
  const struct znode *n = c->n;
  const struct zmeta *m = n->meta;
  int hex = n->form.dt.kind == DT_BYTES;
  size_t i = 0;
  for (uint64_t r = r0; r < r1;) {
    uint64_t ci = zmeta_axis_of(m->edge[0], m->grid[0], m->chunk[0], r);
    uint64_t cs = zmeta_chunk_start(m, 0, ci);
    uint64_t hi = cs + zmeta_chunk_extent(m, 0, ci);
    if (hi > r1)
      hi = r1;
    uint64_t tag = 2;
    struct memo_key k;
    node_key(&k, ELEVEL_TABLE, n, &ci, &tag, 1);
    struct rjob j = {e, n, ci, 0};
    struct memo_ref *ref;
    ZTRY(memo_get(e->memo, &k, rawchunk_fill, &j, &ref, err));
    const struct rawchunk *ch = (const struct rawchunk *)memo_obj(ref);
    uint64_t ka = r - cs, kb = hi - cs;
    int rc = 0;
    uint8_t *tmp = NULL;
    if (!ch->ab) { /* not stored: the fill value's text, as views show */
      for (uint64_t k2 = ka; rc == 0 && k2 < kb; k2++) {
        rc = put_field(f, n->form.fill, (size_t)n->form.fill_len, 0, 0, err);
        ends[i++] = f->len;
      }
    } else if (kb > ch->ab->n) {
      rc = zerr_set(err, EIO, "%s: chunk shorter than its shape", n->path);
    } else {
      const uint64_t *off = ch->ab->offsets;
      uint64_t a = off[ka], b = off[kb];
      const uint8_t *p = ch->data->mem ? ch->data->mem + a : NULL;
      if (!p && b - a > (uint64_t)e->env.max_decoded)
        rc = zerr_set(err, EFBIG, "%s: elements too large", n->path);
      else if (!p && !(p = tmp = malloc(b > a ? (size_t)(b - a) : 1)))
        rc = zerr_set(err, ENOMEM, "out of memory");
      else if (tmp)
        rc = bytesrc_read_range(ch->data, a, (size_t)(b - a), tmp, err);
      size_t bad = 0;
      for (uint64_t k2 = ka; rc == 0 && k2 < kb; k2++) {
        size_t at = f->len;
        rc = put_raw(f, p + (off[k2] - a), (size_t)(off[k2 + 1] - off[k2]), hex,
                     err);
        if (rc == 0 && !hex) /* bytes that are not UTF-8: '?', as views */
          bad += utf8_fix(f->data + at, f->len - at);
        ends[i++] = f->len;
      }
      uint64_t u0, u1; /* said of the chunk, as its views say it */
      node_chunk_units(n, 0, ci, &u0, &u1);
      if (bad && n->form.note)
        n->form.note->fn(n->form.note, &u0, TEXT_NOTE_UTF8);
    }
    free(tmp);
    memo_release(e->memo, ref);
    if (rc < 0)
      return rc;
    r = hi;
  }
  return 0;
}

/* Fields of rows [r0, r1) of a column that shows one field of a 1-D
 * structured array, from its chunks' records (fields_text's contract). */
static int fields_struct(struct engine *e, const struct tcol *c, uint64_t r0,
                         uint64_t r1, struct zbuf *f, uint64_t *ends,
                         struct zerr *err) {
  const struct znode *n = c->n;
  const struct zmeta *m = n->meta;
  const struct dtype_field *fd = c->field;
  enum rstruct_csv kind = rstruct_field_csv(fd);
  struct zbuf tmp;
  zbuf_init(&tmp, e->env.max_decoded);
  size_t i = 0;
  int rc = 0;
  for (uint64_t r = r0; rc == 0 && r < r1;) {
    uint64_t ci = zmeta_axis_of(m->edge[0], m->grid[0], m->chunk[0], r);
    uint64_t cs = zmeta_chunk_start(m, 0, ci);
    uint64_t hi = cs + zmeta_chunk_extent(m, 0, ci);
    if (hi > r1)
      hi = r1;
    uint64_t tag = 3;
    struct memo_key k;
    node_key(&k, ELEVEL_TABLE, n, &ci, &tag, 1);
    struct rjob j = {e, n, ci, 1};
    struct memo_ref *ref;
    if ((rc = memo_get(e->memo, &k, rawchunk_fill, &j, &ref, err)) < 0)
      break;
    const struct rawchunk *ch = (const struct rawchunk *)memo_obj(ref);
    uint64_t ka = r - cs, kb = hi - cs;
    if (kb > ch->ab->n)
      rc = zerr_set(err, EIO, "%s: chunk shorter than its shape", n->path);
    for (uint64_t k2 = ka; rc == 0 && k2 < kb; k2++) {
      tmp.len = 0;
      rc =
          rstruct_field_raw(fd, ch->data->mem + k2 * ch->ab->elsize, &tmp, err);
      if (rc == 0)
        rc = put_field(f, (const char *)tmp.data, tmp.len,
                       kind == RSTRUCT_CSV_FLOAT || kind == RSTRUCT_CSV_NUMBER,
                       kind == RSTRUCT_CSV_FLOAT, err);
      ends[i++] = f->len;
    }
    memo_release(e->memo, ref);
    r = hi;
  }
  zbuf_free(&tmp);
  return rc;
}

/* See tblock.h. */
int tblock_render(struct engine *e, const struct table *t, uint64_t b,
                  char **out, size_t *len, struct zerr *err) {
  uint64_t r0 = b * TBLOCK_ROWS, r1 = r0 + TBLOCK_ROWS;
  if (r1 > t->nrows)
    r1 = t->nrows;
  size_t nr = r0 < r1 ? (size_t)(r1 - r0) : 0, nc = t->ncols;
  struct zbuf *f = calloc(nc, sizeof *f);
  uint64_t *ends = calloc(nc * nr + 1, sizeof *ends);
  int rc = f && ends ? 0 : zerr_set(err, ENOMEM, "out of memory");
  for (size_t c = 0; c < nc && f; c++)
    zbuf_init(&f[c], e->env.max_decoded);
  for (size_t c = 0; rc == 0 && c < nc && nr; c++) {
    const struct tcol *col = &t->cols[c];
    rc = (col->field ? fields_struct
          : col->raw ? fields_raw
                     : fields_text)(e, col, r0, r1, &f[c], ends + c * nr, err);
  }
  uint64_t total = b == 0 ? t->header_len : 0;
  for (size_t c = 0; rc == 0 && c < nc; c++)
    total += f[c].len + nr; /* fields, commas and the newline */
  if (rc == 0 && nc == 1)
    total += 2 * (uint64_t)nr; /* room for "" in empty rows */
  char *text = NULL;
  if (rc == 0 && total > e->env.max_decoded)
    rc = zerr_set(err, EFBIG, "a block of the table is too large");
  else if (rc == 0 && !(text = malloc(total ? (size_t)total : 1)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  size_t w = 0;
  if (rc == 0 && b == 0) {
    memcpy(text, t->header, t->header_len);
    w = t->header_len;
  }
  for (size_t i = 0; rc == 0 && i < nr; i++) {
    for (size_t c = 0; c < nc; c++) {
      uint64_t s = i ? ends[c * nr + i - 1] : 0, z = ends[c * nr + i];
      if (c)
        text[w++] = ',';
      else if (nc == 1 && z == s) {
        memcpy(text + w, "\"\"", 2);
        w += 2;
      }
      if (z > s) /* a column of empty fields has no bytes at all */
        memcpy(text + w, f[c].data + s, (size_t)(z - s));
      w += (size_t)(z - s);
    }
    text[w++] = '\n';
  }
  for (size_t c = 0; c < nc && f; c++)
    zbuf_free(&f[c]);
  free(f);
  free(ends);
  if (rc < 0) {
    free(text);
    return rc;
  }
  *out = text;
  *len = w;
  return 0;
}
