/* textread.c - ranged rendering of a laid-out unit's text (see text.h:
 * text_read, text_read_at, text_render_all, text_render_copy): finding
 * the element whose line holds an offset, and rendering fill units,
 * fixed-size elements and runs of strings into the caller's buffer.
 * Above text.c (unit objects, the walk over in-bounds elements, layouts),
 * which it calls, never the other way (tests/calls.sh). */
#include "text.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/util/zmath.h"
#include "render.h"

/* Text rendered per read when rendering from bytes not in memory. */
#define TEXT_RENDER_SLICE (1u << 20)

/* Every line of a variable-length unit whose element bytes are all in
 * memory, rendered into dst (ct->size bytes): run by run, no search. */
static void render_var_lines(const struct chunk_text *ct,
                             const struct bytesrc *data, char *dst) {
  const struct dtype *dt = &ct->form->dt;
  const uint64_t *eo = ct->ab->offsets;
  int linear = text_inb_linear(ct);
  uint64_t pos = 0, bad = 0;
  struct text_it it;
  text_it_init(&it, ct, 0);
  while (it.k < ct->nin) {
    uint64_t n = text_run_left(ct, &it, linear), ja = it.j;
    uint64_t next = text_run_line_off(ct, ja, pos, ja + n);
    bad += render_var_run(dt, eo, ja, ja + n, pos, data->mem, 0, data->size, 0,
                          ct->size, dst);
    pos = next;
    text_it_skip(&it, ct, n);
  }
  if (bad)
    text_tell(ct, TEXT_NOTE_UTF8);
}

/* The element whose line holds text offset off (< size): the walk is left
 * at it and *start receives its line's offset. */
static void text_find(const struct chunk_text *ct, uint64_t off,
                      struct text_it *it, uint64_t *start) {
  if (text_var_linear(ct)) { /* the last line starting at or before off */
    uint64_t lo = 0, hi = ct->nin - 1;
    while (lo < hi) {
      uint64_t mid = hi - (hi - lo) / 2;
      if (text_run_line_off(ct, 0, 0, mid) <= off)
        lo = mid;
      else
        hi = mid - 1;
    }
    text_it_init(it, ct, lo);
    *start = text_run_line_off(ct, 0, 0, lo);
    return;
  }
  uint64_t lo = zfloor_u64(ct->blk, ct->nblk, off); /* its block */
  uint64_t pos = ct->blk[lo];
  text_it_init(it, ct, lo * TEXT_BLOCK);
  for (;;) {
    uint64_t l = text_elem_len(ct, it->j) + 1;
    if (pos + l > off || it->k + 1 >= ct->nin)
      break;
    pos += l;
    text_it_next(it, ct);
  }
  *start = pos;
}

/* A fill unit: the fill text and its newline, repeated. */
static void read_fill(const struct chunk_text *ct, uint64_t off, uint64_t end,
                      char *dst) {
  const char *f = ct->form->fill;
  uint64_t flen = ct->form->fill_len, line = flen + 1;
  uint64_t p = off % line, k = off / line;
  int last = ct->form->ndim - 1;
  while (off < end) {
    uint64_t n = line - p < end - off ? line - p : end - off;
    uint64_t body = p < flen ? (flen - p < n ? flen - p : n) : 0;
    memcpy(dst, f + p, (size_t)body);
    if (body < n) /* n - body is 1: the newline ends the piece */
      dst[body] = ct->form->csv ? text_csv_end(ct, k % ct->ext[last]) : '\n';
    dst += n;
    off += n;
    p = 0;
    k++;
  }
}

/* Fixed-size elements: render each, copy the part inside [off, end). */
static void read_fixed(const struct chunk_text *ct, struct text_it *it,
                       uint64_t pos, uint64_t off, uint64_t end, char *dst) {
  const struct abytes *ab = ct->ab;
  char tmp[RENDER_FIXED_MAX + 1];
  while (pos < end) {
    size_t n =
        text_form_fixed(ct, ct->form, ab->fixed->mem + it->j * ab->elsize, tmp);
    tmp[n] = text_it_end(ct, it);
    uint64_t a = off > pos ? off - pos : 0;
    uint64_t b = end - pos < n + 1 ? end - pos : n + 1;
    memcpy(dst + (pos + a - off), tmp + a, (size_t)(b - a));
    pos += n + 1;
    text_it_next(it, ct);
  }
}

/* Variable-length elements [it, ...) that are consecutive in the unit:
 * find where the run leaves the range by a search over the offsets, fetch
 * the source bytes the request needs with one ranged read, render the run
 * (render_var_run). Advances it and *pos past the run's part in range. */
static int read_var_run(const struct chunk_text *ct, struct bytesrc *data,
                        struct text_it *it, uint64_t *pos, uint64_t off,
                        uint64_t end, char *dst, struct zerr *err) {
  const struct dtype *dt = &ct->form->dt;
  const uint64_t *eo = ct->ab->offsets;
  uint64_t start = *pos, ja = it->j;
  uint64_t lo = ja + 1, hi = ja + text_run_left(ct, it, text_inb_linear(ct));
  while (lo < hi) { /* the first line starting at or past end, or hi */
    uint64_t mid = lo + (hi - lo) / 2;
    if (text_run_line_off(ct, ja, start, mid) >= end)
      hi = mid;
    else
      lo = mid + 1;
  }
  uint64_t jb = lo, jl = jb - 1;
  uint64_t p = text_run_line_off(ct, ja, start, jb);
  uint64_t last_start = text_run_line_off(ct, ja, start, jl);
  uint64_t last_tl = render_var_len(dt, eo[jl + 1] - eo[jl]);

  uint64_t first_tl = render_var_len(dt, eo[ja + 1] - eo[ja]);
  uint64_t a0 = off > start ? off - start : 0;
  uint64_t src_a = eo[ja] + (a0 < first_tl ? render_var_src_off(dt, a0)
                                           : eo[ja + 1] - eo[ja]);
  uint64_t hi_t = end - last_start < last_tl ? end - last_start : last_tl;
  uint64_t src_b =
      hi_t ? eo[jl] + render_var_src_off(dt, hi_t - 1) + 1 : eo[jl];
  if (src_b < src_a)
    src_b = src_a;
  if (dt->kind != DT_BYTES) { /* strings: bytes are judged with neighbours */
    src_a -= src_a - eo[ja] < RENDER_UTF8_CONTEXT ? src_a - eo[ja]
                                                  : RENDER_UTF8_CONTEXT;
    src_b += eo[jb] - src_b < RENDER_UTF8_CONTEXT ? eo[jb] - src_b
                                                  : RENDER_UTF8_CONTEXT;
  }
  const uint8_t *src;
  uint64_t sbase = src_a, slen = src_b - src_a;
  uint8_t *buf = NULL;
  if (data->mem) {
    src = data->mem;
    sbase = 0;
    slen = data->size;
  } else {
    size_t n = (size_t)slen;
    if (!(buf = malloc(n ? n : 1)))
      return zerr_set(err, ENOMEM, "out of memory");
    int rc = bytesrc_read_range(data, src_a, n, buf, err);
    if (rc < 0) {
      free(buf);
      return rc;
    }
    src = buf;
  }
  if (render_var_run(dt, eo, ja, jb, start, src, sbase, slen, off, end, dst))
    text_tell(ct, TEXT_NOTE_UTF8);
  free(buf);
  text_it_skip(it, ct, jb - ja);
  *pos = p;
  return 0;
}

/* Render [off, end) starting from the walk at `it`, whose line starts at
 * pos <= off. */
static long read_from(const struct chunk_text *ct, struct bytesrc *data,
                      struct text_it *it, uint64_t pos, uint64_t off,
                      uint64_t end, char *dst, struct zerr *err) {
  if (ct->ab->elsize) {
    read_fixed(ct, it, pos, off, end, dst);
    return (long)(end - off);
  }
  if (!data)
    return zerr_set(err, EIO, "view: element bytes missing");
  while (pos < end)
    ZTRY(read_var_run(ct, data, it, &pos, off, end, dst, err));
  return (long)(end - off);
}

/* See text.h. */
long text_read(const struct chunk_text *ct, struct bytesrc *data, uint64_t off,
               size_t len, char *dst, struct zerr *err) {
  if (off >= ct->size || len == 0)
    return 0;
  uint64_t end = ct->size - off < len ? ct->size : off + len;
  if (ct->text) {
    memcpy(dst, ct->text + off, (size_t)(end - off));
    return (long)(end - off);
  }
  if (!ct->ab) {
    read_fill(ct, off, end, dst);
    return (long)(end - off);
  }
  struct text_it it;
  uint64_t pos;
  text_find(ct, off, &it, &pos);
  return read_from(ct, data, &it, pos, off, end, dst, err);
}

/* See text.h. */
long text_read_at(const struct chunk_text *ct, struct bytesrc *data, uint64_t k,
                  uint64_t kpos, uint64_t off, size_t len, char *dst,
                  struct zerr *err) {
  if (!ct->ab || off != kpos || k >= ct->nin)
    return text_read(ct, data, off, len, dst, err); /* text: a copy */
  if (off >= ct->size || len == 0)
    return 0;
  uint64_t end = ct->size - off < len ? ct->size : off + len;
  struct text_it it;
  text_it_init(&it, ct, k);
  return read_from(ct, data, &it, kpos, off, end, dst, err);
}

/* See text.h. */
int text_render_all(struct chunk_text *ct, struct bytesrc *data,
                    struct zerr *err) {
  if (!ct->ab || ct->text)
    return 0;
  char *t = malloc(ct->size ? (size_t)ct->size : 1);
  if (!t)
    return zerr_set(err, ENOMEM, "out of memory");
  long got = (long)ct->size;
  if (data && data->mem && !ct->ab->elsize)
    render_var_lines(ct, data, t);
  else
    got = text_read(ct, data, 0, (size_t)ct->size, t, err);
  if (got < 0) {
    free(t);
    return (int)got;
  }
  if ((uint64_t)got != ct->size) {
    free(t);
    return zerr_set(err, EIO, "chunk text shorter than its layout");
  }
  size_t elems = abytes_mem_cost(ct->ab);
  abytes_free(ct->ab);
  ct->ab = NULL;
  ct->text = t;
  ct->cost = ct->cost - elems + (size_t)ct->size;
  return 0;
}

/* See text.h. */
int text_render_copy(const struct chunk_text *ct, struct bytesrc *data,
                     size_t max_bytes, struct chunk_text **out,
                     struct zerr *err) {
  (void)max_bytes;
  struct chunk_text *t = text_unit_alloc(ct->form);
  int rc = t ? 0 : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0) {
    memcpy(t->dims, ct->dims, 2 * (size_t)ct->form->ndim * sizeof *t->dims);
    t->nin = ct->nin;
    t->size = ct->size;
    t->nblk = ct->nblk;
    t->blk = malloc((size_t)(ct->nblk ? ct->nblk : 1) * sizeof *t->blk);
    if (!t->blk)
      rc = zerr_set(err, ENOMEM, "out of memory");
  }
  /* Decoded strings that are nobody else's become the text in place. */
  char *buf = NULL;
  size_t have;
  if (rc == 0 && data && data->mem && text_in_place_fits(ct) &&
      ct->size == ct->ab->offsets[ct->nin] + ct->nin &&
      (buf = bytesrc_take_mem(data, &have)))
    rc = text_expand_in_place(ct, buf, ct->size, t->blk, NULL, &t->text, err);
  if (rc == 0 && !buf && !(t->text = malloc(ct->size ? (size_t)ct->size : 1)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && !buf) {
    memcpy(t->blk, ct->blk, (size_t)ct->nblk * sizeof *t->blk);
    /* Bytes not in memory are read a slice at a time: each read takes
     * just the source bytes of its slice, into a small buffer. */
    size_t slice = data && !data->mem ? TEXT_RENDER_SLICE : (size_t)ct->size;
    if (data && data->mem && ct->ab && !ct->ab->elsize) {
      render_var_lines(ct, data, t->text);
      slice = 0; /* done */
    }
    for (uint64_t off = 0; rc == 0 && slice && off < ct->size; off += slice) {
      size_t n = ct->size - off < slice ? (size_t)(ct->size - off) : slice;
      long got = text_read(ct, data, off, n, t->text + off, err);
      if (got >= 0 && (size_t)got != n)
        got = zerr_set(err, EIO, "chunk text shorter than its layout");
      rc = got < 0 ? (int)got : 0;
    }
  }
  if (rc < 0) {
    if (t)
      zobj_put(&t->obj);
    return rc;
  }
  t->cost =
      text_unit_base_cost(t->form) + (size_t)t->nblk * 8 + (size_t)t->size;
  *out = t;
  return 0;
}
