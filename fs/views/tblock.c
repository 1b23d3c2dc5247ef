/* tblock.c - a block of rows of a table rendered (see tblock.h). */
#include "tblock.h"

#include <malloc.h> /* malloc_trim */
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "../../codecs/abytes.h"
#include "../../codecs/chain.h"
#include "../../src/util/buf.h"
#include "../../src/util/utf8.h"
#include "../../src/zarr/cf.h"
#include "../engine/unit.h"
#include "../text/csvfield.h"
#include "../text/render.h"
#include "../text/rnum.h"
#include "../text/rstruct.h"
#include "../text/textprep.h"

/* Tags of the memo keys (ELEVEL_TABLE, owned by a column's node) of what
 * columns decode for tables. */
enum { TAG_RAW = 2, TAG_RECORDS = 3, TAG_NUMBERS = 4 };

/* A column buffer larger than this is let go after its block rather than
 * kept for the next (a block of long strings). */
#define TPINS_KEEP_MAX ((size_t)8 << 20)

/* Bytes a short copy moves at once: a field is copied with one
 * fixed-size move when it is no longer (the buffers it goes between keep
 * that much room past their ends), not through a call of memcpy. */
#define SHORT_COPY 32

/* Copy n bytes, SHORT_COPY at once when n fits (see above). */
static inline void copy_short(char *dst, const char *src, size_t n) {
  if (n <= SHORT_COPY)
    memcpy(dst, src, SHORT_COPY);
  else
    memcpy(dst, src, n);
}

/* ---- what a reader keeps ---- */

/* A column's pin: the unit or chunk its last rows came from. */
struct tpin {
  uint64_t at;           /* that unit or chunk + 1; 0: nothing held */
  struct memo_ref *ref;  /* its memo object */
  struct memo_ref *data; /* a unit's decoded data section (text columns) */
};

struct tpins {
  size_t ncols;
  struct zbuf *f;   /* each column's fields of the block being made */
  uint64_t *ends;   /* where each field ends in its column's buffer */
  size_t nends;     /* entries of ends */
  size_t untrimmed; /* text rendered since the arenas were last trimmed */
  char *scratch;    /* numbers rendered as lines: TBLOCK_ROWS * RNUM_ROOM */
  struct tpin v[];  /* one per column */
};

/* See tblock.h. */
struct tpins *tpins_new(const struct table *t) {
  struct tpins *p = calloc(1, sizeof *p + t->ncols * sizeof p->v[0]);
  if (!p)
    return NULL;
  p->ncols = t->ncols;
  if (!(p->f = calloc(t->ncols ? t->ncols : 1, sizeof *p->f))) {
    free(p);
    return NULL;
  }
  for (size_t c = 0; c < t->ncols; c++)
    zbuf_init(&p->f[c], SIZE_MAX);
  return p;
}

/* Let go of what pin p holds: its reader has moved on, and the unit that
 * comes next is decoded with one unit of the column held, not two. */
static void pin_drop(struct engine *e, struct tpin *p) {
  memo_release(e->memo, p->ref);
  memo_release(e->memo, p->data);
  *p = (struct tpin){0};
}

/* See tblock.h. */
void tpins_free(struct engine *e, struct tpins *p) {
  if (!p)
    return;
  for (size_t c = 0; c < p->ncols; c++) {
    pin_drop(e, &p->v[c]);
    zbuf_free(&p->f[c]);
  }
  free(p->f);
  free(p->ends);
  free(p->scratch);
  free(p);
}

/* The object of unit or chunk `at` of a column: from its pin, else from
 * the memo (key k, fill with ctx), then kept in the pin. A borrowed pin
 * (the tpin's) in *ref. */
static int pin_get(struct engine *e, struct tpin *p, uint64_t at,
                   const struct memo_key *k, memo_fill_fn fill, void *ctx,
                   struct memo_ref **ref, struct zerr *err) {
  if (p->at == at + 1) {
    *ref = p->ref;
    return 0;
  }
  pin_drop(e, p);
  ZTRY(memo_get(e->memo, k, fill, ctx, ref, err));
  p->at = at + 1;
  p->ref = *ref;
  return 0;
}

/* Count a decode (or a failed one) for the statistics and the request. */
static void note_decode(struct engine *e) {
  engine_req_note_unit();
  stats_add(&e->stats.decodes, 1);
}

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
    note_decode(e);
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

/* ---- columns of fixed-size elements: units with their elements ---- */

/* A unit of a column of fixed-size elements decoded for a table: its
 * elements in their text type (host order), in memory. */
struct numunit {
  struct zobj obj;
  struct bytesrc *data; /* n elements of elsize bytes; NULL: the unit is
                           not stored (every row is the fill value) */
  uint64_t n;
  size_t elsize;
};

/* Release a unit. */
static void numunit_destroy(struct zobj *o) {
  struct numunit *u = (struct numunit *)o;
  bytesrc_unref(u->data);
  free(u);
}

/* What a numunit fill needs. */
struct njob {
  struct engine *e;
  const struct znode *n; /* the column's node */
  uint64_t u;            /* the unit */
};

/* Fill: unit u of a column of fixed-size elements, decoded through the
 * array's own chain (a chunk, or an inner chunk of its shard) and turned
 * into the column's text type; nothing is rendered. A data error is
 * logged here, naming the chunk. */
static int numunit_fill(void *ctx, struct zobj **obj, size_t *cost,
                        struct zerr *err) {
  struct njob *j = ctx;
  struct engine *e = j->e;
  const struct znode *n = j->n;
  char key[4096];
  ZTRY(unit_store_key(n, &j->u, key, sizeof key, err));
  struct numunit *nu = calloc(1, sizeof *nu);
  if (!nu)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&nu->obj, numunit_destroy);
  struct unit_job uj = {
      .e = e, .n = n->base ? n->base : n, .idx = &j->u, .key = key};
  struct abytes *ab = NULL;
  int logged = 0;
  int rc = engine_check_stop(e, err);
  if (rc == 0) {
    rc = unit_source(&uj, &ab, &logged, err);
    if (rc < 0 || ab) /* a decode, failed or not (not a fill unit) */
      note_decode(e);
  }
  if (rc == 0 && ab)
    rc = textprep_to_text(&n->meta->dtype, &n->form, ab, &e->env, err);
  if (rc == 0 && ab && ab->elsize != n->form.dt.size)
    rc = zerr_set(err, EIO, "elements of %zu bytes, not %zu", ab->elsize,
                  n->form.dt.size);
  else if (rc == 0 && ab && ab->n < unit_nin(n, &j->u))
    rc = zerr_set(err, EIO, "chunk shorter than its shape");
  if (rc == 0 && ab) {
    nu->n = ab->n;
    nu->elsize = ab->elsize;
    rc = bytesrc_load(ab->fixed, e->env.max_decoded, &nu->data, err);
  }
  abytes_free(ab);
  if (rc < 0) {
    zobj_put(&nu->obj);
    if (!logged)
      unit_log_failure(e, key, err);
    return zerr_prefix(err, "chunk %s: ", key);
  }
  *obj = &nu->obj;
  *cost = sizeof *nu + (nu->data ? (size_t)nu->data->size : 0);
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

/* Is float element p (host order) one of cf's fill values, compared as
 * cf_decode compares them (in the element's own width)? */
static int cf_masked(const struct cf *cf, const uint8_t *p) {
  if (cf->kind == DT_FLOAT32) {
    float v;
    memcpy(&v, p, sizeof v);
    for (int i = 0; i < cf->nfill; i++)
      if (v == (float)cf->fill[i])
        return 1;
    return 0;
  }
  double v;
  memcpy(&v, p, sizeof v);
  for (int i = 0; i < cf->nfill; i++)
    if (v == cf->fill[i])
      return 1;
  return 0;
}

/* Does a CF form only mask floats (no scale, offset, time or flag), so
 * that an element's text is the plain number's, or missing? Such columns
 * (every float array xarray writes, its _FillValue NaN) are rendered as
 * runs of plain numbers. */
static int cf_mask_only(const struct text_form *form) {
  const struct cf *cf = form->cf;
  return (cf->kind == DT_FLOAT32 || cf->kind == DT_FLOAT64) &&
         form->dt.kind == cf->kind && !cf->has_scale && !cf->has_offset &&
         !cf->is_bool && !cf->is_time && !cf->is_timedelta;
}

/* The length of the line at s (a number rnum_run wrote, with RNUM_ROOM
 * bytes of room from its start) into *ll, and whether it is integral
 * (only digits after an optional '-'): 16 bytes at a time with SSE2. */
static inline int line_scan(const char *s, size_t *ll) {
  size_t i = s[0] == '-';
#ifdef __SSE2__
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)s);
  unsigned nl =
      (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')));
  if (nl) {
    __m128i d = _mm_sub_epi8(v, _mm_set1_epi8('0'));
    unsigned dig = (unsigned)_mm_movemask_epi8(
        _mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d));
    unsigned len = (unsigned)__builtin_ctz(nl);
    unsigned need = ((1u << len) - 1) & ~((1u << i) - 1);
    *ll = len;
    return (dig & need) == need;
  }
#endif
  int integral = 1;
  for (; s[i] != '\n'; i++)
    integral &= (unsigned)(s[i] - '0') < 10;
  *ll = i;
  return integral;
}

/* Fields of cnt lines of numbers rendered by rnum_run (s, tl bytes) into
 * f: a float's `nan` empty, an integral float with `.0`, an element that
 * mask (may be NULL) says is missing empty (the elements at p, elsize
 * bytes each); no number needs quotes. */
static int put_lines(struct zbuf *f, const char *s, size_t tl, size_t cnt,
                     int floating, const struct cf *mask, const uint8_t *p,
                     size_t elsize, uint64_t *ends, struct zerr *err) {
  ZTRY(zbuf_reserve(f, tl + 2 * cnt + SHORT_COPY, err));
  char *w = (char *)f->data + f->len, *w0 = (char *)f->data;
  for (size_t q = 0; q < cnt; q++) {
    size_t ll;
    int integral = line_scan(s, &ll);
    if (mask && mask->nfill && cf_masked(mask, p + q * elsize)) {
      /* missing: an empty field */
    } else if (!floating) {
      copy_short(w, s, ll); /* rnum's lines: room past each (RNUM_ROOM) */
      w += ll;
    } else if (!(ll == 3 && s[0] == 'n' && s[1] == 'a' && s[2] == 'n')) {
      copy_short(w, s, ll);
      w += ll;
      if (integral) {
        memcpy(w, ".0", 2);
        w += 2;
      }
    }
    ends[q] = (uint64_t)(w - w0);
    s += ll + 1;
  }
  f->len = (size_t)(w - w0);
  return 0;
}

/* Fields of cnt elements of column c at p (elsize bytes each, its text
 * type) into f: runs of plain numbers rendered as lines at once, any
 * other element (CF-decoded, times, booleans) one by one. */
static int put_numbers(const struct tcol *c, const uint8_t *p, size_t elsize,
                       size_t cnt, struct tpins *t, struct zbuf *f,
                       uint64_t *ends, struct zerr *err) {
  const struct text_form *form = &c->n->form;
  if ((!form->cf || cf_mask_only(form)) && rnum_has(form->dt.kind)) {
    if (!t->scratch && !(t->scratch = malloc((size_t)TBLOCK_ROWS * RNUM_ROOM)))
      return zerr_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < cnt;) {
      size_t k = cnt - i < TBLOCK_ROWS ? cnt - i : TBLOCK_ROWS;
      size_t tl = rnum_run(form->dt.kind, p + i * elsize, k, t->scratch);
      ZTRY(put_lines(f, t->scratch, tl, k, c->floating, form->cf,
                     p + i * elsize, elsize, ends + i, err));
      i += k;
    }
    return 0;
  }
  char buf[RENDER_FIXED_MAX];
  for (size_t i = 0; i < cnt; i++) {
    size_t len = text_render_fixed(form, p + i * elsize, buf);
    ZTRY(put_field(f, buf, len, 1, c->floating, err));
    ends[i] = f->len;
  }
  return 0;
}

/* Fields of rows [r0, r1) of a column of fixed-size elements from its
 * units' elements (pin: the column's); ends[i] is where row r0+i's field
 * ends in f. */
static int fields_number(struct engine *e, const struct tcol *c, uint64_t r0,
                         uint64_t r1, struct tpins *t, struct tpin *pin,
                         struct zbuf *f, uint64_t *ends, struct zerr *err) {
  const struct znode *n = c->n;
  for (uint64_t r = r0; r < r1;) {
    uint64_t u = node_unit_of(n, 0, r), us = node_unit_start(n, 0, u);
    uint64_t hi = us + node_unit_ext(n, 0, u);
    if (hi > r1)
      hi = r1;
    uint64_t tag = TAG_NUMBERS;
    struct memo_key k;
    node_key(&k, ELEVEL_TABLE, n, &u, &tag, 1);
    struct njob j = {e, n, u};
    struct memo_ref *ref;
    ZTRY(pin_get(e, pin, u, &k, numunit_fill, &j, &ref, err));
    const struct numunit *nu = (const struct numunit *)memo_obj(ref);
    size_t cnt = (size_t)(hi - r), at = (size_t)(r - r0);
    if (nu->data) {
      ZTRY(put_numbers(c, nu->data->mem + (r - us) * nu->elsize, nu->elsize,
                       cnt, t, f, ends + at, err));
    } else { /* not stored: the fill value's text, as views show */
      for (size_t q = 0; q < cnt; q++) {
        ZTRY(put_field(f, n->form.fill, (size_t)n->form.fill_len, 1,
                       c->floating, err));
        ends[at + q] = f->len;
      }
    }
    r = hi;
  }
  return 0;
}

/* Fields of rows [r0, r1) of a column from its units' text (one line a
 * row), fields_number's contract. */
static int fields_text(struct engine *e, const struct tcol *c, uint64_t r0,
                       uint64_t r1, struct tpins *t, struct tpin *pin,
                       struct zbuf *f, uint64_t *ends, struct zerr *err) {
  (void)t;
  const struct znode *n = c->n;
  size_t i = 0;
  for (uint64_t r = r0; r < r1;) {
    uint64_t u = node_unit_of(n, 0, r), us = node_unit_start(n, 0, u);
    uint64_t hi = us + node_unit_ext(n, 0, u);
    if (hi > r1)
      hi = r1;
    const struct chunk_text *rct = NULL;
    struct bytesrc *data = NULL;
    struct memo_ref *dpin = NULL;
    char *tmp = NULL;
    int rc = 0;
    if (pin->at != u + 1) {
      pin_drop(e, pin);
      struct memo_ref *ref;
      uint64_t idx[ZMETA_MAX_DIMS] = {u}; /* a joined column: [u, 0] */
      if ((rc = unit_get(e, n, idx, &ref, err)) == 0) {
        pin->at = u + 1;
        pin->ref = ref;
      }
    }
    if (rc == 0)
      rc = unit_src(e, n, unit_of_ref(pin->ref), &rct, &data, &dpin, err);
    if (rc == 0) { /* the section's pin replaces the one kept before */
      memo_release(e->memo, pin->data);
      pin->data = dpin;
      uint64_t ka = r - us, kb = hi - us;
      uint64_t oa = text_line_off(rct, ka);
      uint64_t ob = text_line_off_from(rct, ka, oa, kb);
      size_t tl = (size_t)(ob - oa);
      const char *src = rct->text ? rct->text + oa : NULL;
      if (!src && !(src = tmp = malloc(tl ? tl : 1)))
        rc = zerr_set(err, ENOMEM, "out of memory");
      long got = rc || !tmp ? (long)tl : text_read(rct, data, oa, tl, tmp, err);
      if (rc == 0 && got < 0)
        rc = (int)got;
      else if (rc == 0 && (size_t)got != tl)
        rc = zerr_set(err, EIO, "short text");
      for (size_t p = 0; rc == 0 && p < tl && i < r1 - r0;) {
        const char *nl = memchr(src + p, '\n', tl - p);
        size_t ll = nl ? (size_t)(nl - (src + p)) : tl - p;
        rc = put_field(f, src + p, ll, c->number, c->floating, err);
        ends[i++] = f->len;
        p += ll + 1;
      }
    }
    free(tmp);
    bytesrc_unref(data);
    if (rc < 0)
      return rc;
    if (i != hi - r0)
      return zerr_set(err, EIO, "%s: lines do not match elements", n->path);
    r = hi;
  }
  return 0;
}

/* The chunk of 1-D array n holding row r: its index, first row and end. */
static uint64_t chunk_of_row(const struct znode *n, uint64_t r, uint64_t *cs,
                             uint64_t *ce) {
  const struct zmeta *m = n->meta;
  uint64_t ci = zmeta_axis_of(m->edge[0], m->grid[0], m->chunk[0], r);
  *cs = zmeta_chunk_start(m, 0, ci);
  *ce = *cs + zmeta_chunk_extent(m, 0, ci);
  return ci;
}

/* Fields of rows [r0, r1) of a string or bytes column from its chunks'
 * element bytes (fields_number's contract). */
static int fields_raw(struct engine *e, const struct tcol *c, uint64_t r0,
                      uint64_t r1, struct tpins *t, struct tpin *pin,
                      struct zbuf *f, uint64_t *ends, struct zerr *err) {
  (void)t;
  const struct znode *n = c->n;
  int hex = n->form.dt.kind == DT_BYTES;
  size_t i = 0;
  for (uint64_t r = r0; r < r1;) {
    uint64_t cs, hi, ci = chunk_of_row(n, r, &cs, &hi);
    if (hi > r1)
      hi = r1;
    uint64_t tag = TAG_RAW;
    struct memo_key k;
    node_key(&k, ELEVEL_TABLE, n, &ci, &tag, 1);
    struct rjob j = {e, n, ci, 0};
    struct memo_ref *ref;
    ZTRY(pin_get(e, pin, ci, &k, rawchunk_fill, &j, &ref, err));
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
    if (rc < 0)
      return rc;
    r = hi;
  }
  return 0;
}

/* Fields of rows [r0, r1) of a column that shows one field of a 1-D
 * structured array, from its chunks' records (fields_number's
 * contract). */
static int fields_struct(struct engine *e, const struct tcol *c, uint64_t r0,
                         uint64_t r1, struct tpins *t, struct tpin *pin,
                         struct zbuf *f, uint64_t *ends, struct zerr *err) {
  (void)t;
  const struct znode *n = c->n;
  const struct dtype_field *fd = c->field;
  enum rstruct_csv kind = rstruct_field_csv(fd);
  struct zbuf tmp;
  zbuf_init(&tmp, e->env.max_decoded);
  size_t i = 0;
  int rc = 0;
  for (uint64_t r = r0; rc == 0 && r < r1;) {
    uint64_t cs, hi, ci = chunk_of_row(n, r, &cs, &hi);
    if (hi > r1)
      hi = r1;
    uint64_t tag = TAG_RECORDS;
    struct memo_key k;
    node_key(&k, ELEVEL_TABLE, n, &ci, &tag, 1);
    struct rjob j = {e, n, ci, 1};
    struct memo_ref *ref;
    if ((rc = pin_get(e, pin, ci, &k, rawchunk_fill, &j, &ref, err)) < 0)
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
    r = hi;
  }
  zbuf_free(&tmp);
  return rc;
}

/* The fields of a column: how they are made. */
typedef int (*fields_fn)(struct engine *e, const struct tcol *c, uint64_t r0,
                         uint64_t r1, struct tpins *t, struct tpin *pin,
                         struct zbuf *f, uint64_t *ends, struct zerr *err);

/* How column c's fields are made. */
static fields_fn fields_of(const struct tcol *c) {
  if (c->field)
    return fields_struct;
  if (c->raw)
    return fields_raw;
  /* a joined column's elements are characters: its text */
  return c->number && !c->n->join ? fields_number : fields_text;
}

/* The rows [r0, r0+nr) of the block from the columns' fields in t (with
 * the header first when given) into *out. */
static int rows_write(struct engine *e, const struct table *t,
                      const struct tpins *p, size_t nr, int header, char **out,
                      size_t *len, struct zerr *err) {
  size_t nc = t->ncols;
  uint64_t total = header ? t->header_len : 0;
  for (size_t c = 0; c < nc; c++)
    total += p->f[c].len + nr; /* fields, commas and the newline */
  if (nc == 1)
    total += 2 * (uint64_t)nr; /* room for "" in empty rows */
  if (total > e->env.max_decoded)
    return zerr_set(err, EFBIG, "a block of the table is too large");
  char *text = malloc((size_t)total + SHORT_COPY);
  if (!text)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t w = 0;
  if (header) {
    memcpy(text, t->header, t->header_len);
    w = t->header_len;
  }
  for (size_t i = 0; i < nr; i++) {
    for (size_t c = 0; c < nc; c++) {
      const uint64_t *ends = p->ends + c * nr;
      uint64_t s = i ? ends[i - 1] : 0, z = ends[i];
      if (c)
        text[w++] = ',';
      else if (nc == 1 && z == s) {
        memcpy(text + w, "\"\"", 2);
        w += 2;
      }
      if (z > s) /* a column of empty fields has no bytes at all */
        copy_short(text + w, (const char *)p->f[c].data + s, (size_t)(z - s));
      w += (size_t)(z - s);
    }
    text[w++] = '\n';
  }
  *out = text;
  *len = w;
  return 0;
}

/* Text a reader renders between two trims of the malloc arenas. */
#define TPINS_TRIM_BYTES ((size_t)8 << 20)

/* A reader rendered len more bytes. The blocks it rendered before, and
 * the units it let go, are freed (when the cache drops them) into the
 * arenas of whichever threads made them (16 FUSE threads, each its own
 * arena), which keep those pages: the daemon grew by 40 MB in a pass
 * over 10^7 rows at cache_size=16M, past its bound. Every
 * TPINS_TRIM_BYTES of text they are handed back: a few milliseconds
 * beside the 100 ms or more that text takes to render, whatever the
 * size of the chunks. */
static void pins_trim(struct tpins *p, size_t len) {
  p->untrimmed += len;
  if (p->untrimmed < TPINS_TRIM_BYTES)
    return;
  p->untrimmed = 0;
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

/* tblock_render of the first `rows` rows of block b alone (the header
 * too in block 0). */
static int tblock_render_rows(struct engine *e, const struct table *t,
                              uint64_t b, uint64_t rows, struct tpins *pins,
                              char **out, size_t *len, struct zerr *err) {
  uint64_t r0 = b * TBLOCK_ROWS,
           r1 = r0 + (rows < TBLOCK_ROWS ? rows : TBLOCK_ROWS);
  if (r1 > t->nrows)
    r1 = t->nrows;
  size_t nr = r0 < r1 ? (size_t)(r1 - r0) : 0, nc = t->ncols;
  struct tpins *own = NULL, *p = pins;
  if (!p && !(p = own = tpins_new(t)))
    return zerr_set(err, ENOMEM, "out of memory");
  if (p->ncols != nc) {
    tpins_free(e, own);
    return zerr_set(err, EINVAL, "pins of another table");
  }
  int rc = 0;
  if (p->nends < nc * nr + 1) {
    uint64_t *ends = realloc(p->ends, (nc * nr + 1) * sizeof *ends);
    if (ends) {
      p->ends = ends;
      p->nends = nc * nr + 1;
    } else {
      rc = zerr_set(err, ENOMEM, "out of memory");
    }
  }
  for (size_t c = 0; c < nc; c++) {
    p->f[c].len = 0;
    p->f[c].max = e->env.max_decoded;
  }
  for (size_t c = 0; rc == 0 && c < nc && nr; c++) {
    const struct tcol *col = &t->cols[c];
    rc = fields_of(col)(e, col, r0, r1, p, &p->v[c], &p->f[c], p->ends + c * nr,
                        err);
    if (rc == 0) /* copy_short reads that far past a field */
      rc = zbuf_reserve(&p->f[c], SHORT_COPY, err);
  }
  if (rc == 0)
    rc = rows_write(e, t, p, nr, b == 0, out, len, err);
  for (size_t c = 0; c < nc; c++)
    if (p->f[c].cap > TPINS_KEEP_MAX)
      zbuf_free(&p->f[c]);
  if (rc == 0 && pins)
    pins_trim(pins, *len);
  tpins_free(e, own);
  return rc;
}

/* See tblock.h. */
int tblock_render(struct engine *e, const struct table *t, uint64_t b,
                  struct tpins *pins, char **out, size_t *len,
                  struct zerr *err) {
  return tblock_render_rows(e, t, b, TBLOCK_ROWS, pins, out, len, err);
}

/* See tblock.h. The most rows that render, by halving. */
long tblock_before_failure(struct engine *e, const struct table *t, uint64_t b,
                           uint64_t at, size_t len, char *dst,
                           struct zerr *err) {
  uint64_t lo = 0, hi = TBLOCK_ROWS + 1; /* rows that render; that do not */
  char *text = NULL;
  size_t tl = 0;
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    char *o = NULL;
    size_t ol = 0;
    struct zerr e2 = {0};
    if (tblock_render_rows(e, t, b, mid, NULL, &o, &ol, &e2) == 0) {
      free(text);
      text = o;
      tl = ol;
      lo = mid;
    } else {
      free(o);
      hi = mid;
    }
  }
  long got = 0;
  if (text && at < tl) {
    got = (long)(tl - at < len ? tl - at : len);
    memcpy(dst, text + at, (size_t)got);
  }
  free(text);
  return got ? got : zerr_set(err, EIO, "table: nothing before the failure");
}

/* See tblock.h. */
int tblock_header_make(struct table *t, struct zerr *err) {
  size_t len = 1;
  for (size_t i = 0; i < t->ncols; i++)
    len += csvfield_len(t->cols[i].name, strlen(t->cols[i].name)) + 1;
  if (!(t->header = malloc(len)))
    return zerr_set(err, ENOMEM, "out of memory");
  size_t w = 0;
  for (size_t i = 0; i < t->ncols; i++) {
    if (i)
      t->header[w++] = ',';
    w += csvfield_put(t->cols[i].name, strlen(t->cols[i].name), t->header + w);
  }
  if (t->ncols == 1 && w == 0) {
    memcpy(t->header, "\"\"", 2);
    w = 2;
  }
  t->header[w++] = '\n';
  t->header_len = w;
  return 0;
}
