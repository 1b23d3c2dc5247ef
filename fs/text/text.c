/* text.c - unit text objects, the walk over a unit's in-bounds elements,
 * layouts and line offsets (see text.h). Ranged rendering is textread.c,
 * above this file. */
#include "text.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/util/buf.h"
#include "../../src/util/utf8.h"
#include "../../src/util/zmath.h"
#include "cftext.h"
#include "csvtext.h"
#include "render.h"
#include "rsplit.h"

/* How many elements a layout pass handles between looks at the stop flag. */
#define TEXT_STOP_EVERY 65536

/* Largest text size: st_size is a signed 64-bit number. */
#define TEXT_MAX_SIZE ((uint64_t)INT64_MAX)

/* A CF element's text goes into the buffers sized for render_fixed. */
_Static_assert(CFTEXT_MAX <= RENDER_FIXED_MAX, "CF text fits a render buffer");

/* See text.h. */
const char *text_note_msg(unsigned what) {
  switch (what) {
  case TEXT_NOTE_UTF8:
    return "strings hold bytes that are not UTF-8: each shown as '?'";
  case TEXT_NOTE_CF_RANGE:
    return "CF times beyond what xarray represents: shown as the stored "
           "numbers, not decoded";
  default:
    return "text differs from the data";
  }
}

/* Tell the form's note, once per unit text, what its text shows in place
 * of its data. */
void text_tell(const struct chunk_text *ct, unsigned what) {
  const struct text_note *nt = ct->form->note;
  if (!nt || !what)
    return;
  unsigned had = atomic_fetch_or_explicit((_Atomic unsigned *)&ct->noted, what,
                                          memory_order_relaxed);
  if (!(had & what))
    nt->fn(nt, ct->form->note_idx ? ct->form->note_idx : ct->idx, what);
}

/* A CF form's element: decoded, or the stored value when xarray could not
 * hold it (said through ct's note; ct may be NULL). */
size_t text_form_cf(const struct chunk_text *ct, const struct text_form *form,
                    const void *elem, char *buf) {
  struct cf_value v;
  if (cf_decode(form->cf, elem, &v) == 0)
    return form->csv ? csvtext_cf(&v, buf) : cftext_render(&v, buf);
  if (ct)
    text_tell(ct, TEXT_NOTE_CF_RANGE);
  return form->csv ? csvtext_fixed(NULL, &form->dt, elem, buf)
                   : render_fixed(&form->dt, elem, buf);
}

size_t text_render_fixed(const struct text_form *form, const void *elem,
                         char *buf) {
  return text_form_fixed(NULL, form, elem, buf);
}

/* Release a unit. */
static void chunk_text_destroy(struct zobj *o) {
  struct chunk_text *ct = (struct chunk_text *)o;
  abytes_free(ct->ab);
  free(ct->text);
  free(ct->blk);
  free(ct);
}

/* Bytes of a unit object itself (with its coordinates and extents). */
size_t text_unit_base_cost(const struct text_form *form) {
  return sizeof(struct chunk_text) + 2 * (size_t)form->ndim * sizeof(uint64_t);
}

/* An empty unit object of form (NULL: out of memory). */
struct chunk_text *text_unit_alloc(const struct text_form *form) {
  struct chunk_text *ct = calloc(1, text_unit_base_cost(form));
  if (!ct)
    return NULL;
  zobj_init(&ct->obj, chunk_text_destroy);
  ct->form = form;
  ct->idx = ct->dims;
  ct->ext = ct->dims + form->ndim;
  return ct;
}

/* A unit object for idx with its in-bounds extents. */
static struct chunk_text *unit_new(const struct text_form *form,
                                   const uint64_t *shape, const uint64_t *idx) {
  struct chunk_text *ct = text_unit_alloc(form);
  if (!ct)
    return NULL;
  uint64_t nin = 1;
  for (int d = 0; d < form->ndim; d++) {
    ct->idx[d] = idx[d];
    ct->ext[d] =
        zmeta_axis_ext(form->edge[d], form->shape[d], shape[d], idx[d]);
    nin *= ct->ext[d]; /* <= the unit's element count, checked by meta */
  }
  ct->nin = nin;
  ct->cost = text_unit_base_cost(form);
  return ct;
}

/* See text.h. */
int text_fill_unit(const struct text_form *form, const uint64_t *shape,
                   const uint64_t *idx, struct chunk_text **out,
                   struct zerr *err) {
  struct chunk_text *ct = unit_new(form, shape, idx);
  if (!ct)
    return zerr_set(err, ENOMEM, "out of memory");
  unsigned __int128 size = (unsigned __int128)ct->nin * (form->fill_len + 1);
  if (size > TEXT_MAX_SIZE) {
    zobj_put(&ct->obj);
    return zerr_set(err, EFBIG, "text of a fill chunk exceeds 2^63 bytes");
  }
  ct->size = (uint64_t)size;
  *out = ct;
  return 0;
}

/* ---- walking in-bounds elements ---- */

/* The decoded length of unit ct along dimension d. */
static uint64_t unit_len(const struct chunk_text *ct, int d) {
  return zmeta_axis_len(ct->form->edge[d], ct->form->shape[d], ct->idx[d]);
}

/* Position the walk at in-bounds element k. */
void text_it_init(struct text_it *it, const struct chunk_text *ct, uint64_t k) {
  int nd = ct->form->ndim;
  uint64_t s = 1;
  for (int d = nd - 1; d >= 0; d--) {
    it->stride[d] = s;
    s *= unit_len(ct, d);
  }
  it->k = k;
  it->j = 0;
  for (int d = nd - 1; d >= 0; d--) {
    it->c[d] = k % ct->ext[d];
    k /= ct->ext[d];
    it->j += it->c[d] * it->stride[d];
  }
}

/* The byte after an element of a CSV unit whose last coordinate in the
 * unit's in-bounds box is c: '\n' when it ends its row, else ','. */
char text_csv_end(const struct chunk_text *ct, uint64_t c) {
  int d = ct->form->ndim - 1;
  uint64_t x =
      zmeta_axis_start(ct->form->edge[d], ct->form->shape[d], ct->idx[d]) + c;
  return x + 1 == ct->form->row_len ? '\n' : ',';
}

/* Text length (no newline) of element j of a unit with element data. */
uint64_t text_elem_len(const struct chunk_text *ct, uint64_t j) {
  const struct abytes *ab = ct->ab;
  if (ab->elsize) {
    char tmp[RENDER_FIXED_MAX];
    return text_form_fixed(ct, ct->form, ab->fixed->mem + j * ab->elsize, tmp);
  }
  return render_var_len(&ct->form->dt, ab->offsets[j + 1] - ab->offsets[j]);
}

/* Is in-bounds element k element k of the unit (every dimension but the
 * first whole)? Then a walk needs no coordinates. */
int text_inb_linear(const struct chunk_text *ct) {
  for (int d = 1; d < ct->form->ndim; d++)
    if (ct->ext[d] != unit_len(ct, d))
      return 0;
  return 1;
}

/* Plain numbers in the unit's own order: fixed-size elements of the
 * form's type, neither CF nor CSV, in a linear box. Their lines are
 * rendered (and counted) a block at a time (render_fixed_run). */
static int text_fixed_linear(const struct chunk_text *ct) {
  const struct text_form *form = ct->form;
  return !form->cf && !form->csv && ct->ab && ct->ab->elsize &&
         ct->ab->elsize == form->dt.size && text_inb_linear(ct);
}

/* Variable-length units in a linear box: in-bounds element k is unit
 * element k, and its line starts at text offset
 * render_var_len(eo[k] - eo[0]) + k, known from the offsets alone. */
int text_var_linear(const struct chunk_text *ct) {
  return ct->ab && !ct->ab->elsize && text_inb_linear(ct);
}

/* Elements that follow the walk's one in unit order without a gap: the
 * rest of the unit in a linear box, else the rest of its row. */
uint64_t text_run_left(const struct chunk_text *ct, const struct text_it *it,
                       int linear) {
  int last = ct->form->ndim - 1;
  if (linear || last < 0)
    return ct->nin - it->k;
  return ct->ext[last] - it->c[last];
}

/* Move the walk n >= 1 elements on (to a run's end): inside a row by
 * arithmetic and one odometer step, across rows (a linear box) from the
 * coordinates again. */
void text_it_skip(struct text_it *it, const struct chunk_text *ct, uint64_t n) {
  int last = ct->form->ndim - 1;
  if (last >= 0 && it->c[last] + n <= ct->ext[last]) {
    it->c[last] += n - 1;
    it->j += (n - 1) * it->stride[last];
    it->k += n - 1;
    text_it_next(it, ct);
  } else if (it->k + n < ct->nin) {
    text_it_init(it, ct, it->k + n);
  } else {
    it->j += n;
    it->k += n;
  }
}

/* See text.h. */
uint64_t text_var_len(const struct dtype *dt, uint64_t nbytes) {
  return render_var_len(dt, nbytes);
}

/* ---- layouts ---- */

/* Check the decoded elements against the form and bring fixed-size
 * elements into memory (their text lengths need every byte). */
static int layout_check(struct chunk_text *ct, size_t max_bytes,
                        struct zerr *err) {
  struct abytes *ab = ct->ab;
  uint64_t nelem = 1;
  for (int d = 0; d < ct->form->ndim; d++)
    nelem *= unit_len(ct, d);
  if (ab->n != nelem)
    return zerr_set(err, EIO, "decoded %llu elements, expected %llu",
                    (unsigned long long)ab->n, (unsigned long long)nelem);
  if (!ab->elsize)
    return 0;
  if (ab->elsize != ct->form->dt.size)
    return zerr_set(err, EIO, "decoded element size %zu, expected %zu",
                    ab->elsize, ct->form->dt.size);
  struct bytesrc *mem;
  ZTRY(bytesrc_load(ab->fixed, max_bytes, &mem, err));
  bytesrc_unref(ab->fixed);
  ab->fixed = mem;
  return 0;
}

/* Move n bytes that may overlap: up to 32 by loads made before any store
 * (a library call's size dispatch costs more than a short element). */
static inline void move_short(char *dst, const char *src, size_t n) {
  if (n > 32) {
    memmove(dst, src, n);
  } else if (n >= 16) {
    char a[16], b[16];
    memcpy(a, src, 16);
    memcpy(b, src + n - 16, 16);
    memcpy(dst, a, 16);
    memcpy(dst + n - 16, b, 16);
  } else if (n >= 8) {
    uint64_t a, b;
    memcpy(&a, src, 8);
    memcpy(&b, src + n - 8, 8);
    memcpy(dst, &a, 8);
    memcpy(dst + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, src, 4);
    memcpy(&b, src + n - 4, 4);
    memcpy(dst, &a, 4);
    memcpy(dst + n - 4, &b, 4);
  } else if (n) {
    char a = src[0], b = src[n / 2], c = src[n - 1];
    dst[0] = a;
    dst[n / 2] = b;
    dst[n - 1] = c;
  }
}

/* Elements scanned, then moved, together when strings become their text
 * in place: some 60 KB of ~15-byte strings, well inside a core's cache. */
#define TEXT_EXPAND_RUN 4096

/* Strings whose bytes belong to this unit alone (a chunk decoded just for
 * it) can become their text where they lie: the text of element k starts
 * at its byte offset plus k (one newline per element before it), never
 * before its bytes, so moving the elements from the last to the first,
 * each back to front, overwrites only bytes already moved. This spares a
 * buffer as large as the text, which the kernel would have to zero. It
 * applies to text with a byte per source byte (not hex), offsets from 0
 * and a linear in-bounds box (in-bounds element k is element k). */
int text_in_place_fits(const struct chunk_text *ct) {
  const struct abytes *ab = ct->ab;
  return ab && !ab->elsize && ct->form->dt.kind != DT_BYTES && ab->offsets &&
         !ab->offsets[0] && text_inb_linear(ct);
}

/* Turn buf (malloc'd, the unit's element bytes from offset 0; taken, and
 * freed on failure) into the unit's text in place (*out, tsize bytes),
 * with the block offsets into blk. */
int text_expand_in_place(const struct chunk_text *ct, char *buf, uint64_t tsize,
                         uint64_t *blk, const atomic_int *stop, char **out,
                         struct zerr *err) {
  const uint64_t *eo = ct->ab->offsets;
  uint64_t nin = ct->nin;
  /* grows by the newlines (a remap), or drops bytes past element nin */
  char *t = realloc(buf, tsize ? (size_t)tsize : 1);
  if (!t) {
    free(buf);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  zbuf_prefer_huge(t, (size_t)tsize);
  /* Text is the bytes with newline bytes as spaces and bytes that are not
   * UTF-8 as '?': turn them first and every element then moves as it is.
   * Run by run from the end, each run's scan just before its moves, so
   * the moves find its bytes in the CPU's cache instead of reading the
   * whole unit from memory a second time (a run's bytes lie below where
   * any later element's text goes: eo[k] + k >= eo[k]). */
  uint64_t bad = 0;
  for (uint64_t hi = nin; hi > 0;) {
    uint64_t lo = hi > TEXT_EXPAND_RUN ? hi - TEXT_EXPAND_RUN : 0;
    bad += render_str_fix(eo + lo, hi - lo, (uint8_t *)t + eo[lo]);
    for (uint64_t k = hi; k-- > lo;) {
      if (k % TEXT_STOP_EVERY == 0 && stop &&
          atomic_load_explicit(stop, memory_order_relaxed)) {
        free(t);
        return zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
      }
      uint64_t d = eo[k] + k, l = eo[k + 1] - eo[k];
      t[d + l] = '\n';
      move_short(t + d, t + eo[k], (size_t)l);
      if (k % TEXT_BLOCK == 0)
        blk[k / TEXT_BLOCK] = d;
    }
    hi = lo;
  }
  if (bad)
    text_tell(ct, TEXT_NOTE_UTF8);
  *out = t;
  return 0;
}

/* A unit's strings turned into its text in place (see in_place_fits) when
 * their buffer is the unit's alone: 1 when done (ct->text set, the
 * elements freed), 0 when it does not apply (nothing changed), or a
 * negative errno. */
static int layout_in_place(struct chunk_text *ct, size_t render_max,
                           const atomic_int *stop, struct zerr *err) {
  struct abytes *ab = ct->ab;
  if (!text_in_place_fits(ct) || !ab->data || !ab->data->mem || !render_max)
    return 0;
  const uint64_t *eo = ab->offsets;
  uint64_t nin = ct->nin, tsize = eo[nin] + nin;
  if (tsize > render_max || tsize > TEXT_MAX_SIZE)
    return 0;
  size_t have;
  char *buf = bytesrc_take_mem(ab->data, &have);
  if (!buf)
    return 0;
  ZTRY(text_expand_in_place(ct, buf, tsize, ct->blk, stop, &ct->text, err));
  ct->size = tsize;
  ct->cost =
      text_unit_base_cost(ct->form) + (size_t)ct->nblk * 8 + (size_t)tsize;
  abytes_free(ct->ab);
  ct->ab = NULL;
  return 1;
}

/* A CSV unit of variable-length elements, which arrive as their fields
 * in memory (fs/text/csvtext.h): its text made whole here, fields and
 * separators, so that reads copy and lines are found by csvtext_skip. */
static int layout_csv_fields(struct chunk_text *ct, const atomic_int *stop,
                             struct zerr *err) {
  const struct abytes *ab = ct->ab;
  const uint64_t *eo = ab->offsets;
  if (!ab->data || !ab->data->mem)
    return zerr_set(err, EIO, "view: element bytes missing");
  uint64_t size = 0;
  struct text_it it;
  text_it_init(&it, ct, 0);
  for (uint64_t k = 0; k < ct->nin; k++, text_it_next(&it, ct))
    size += eo[it.j + 1] - eo[it.j] + 1; /* <= data bytes + elements */
  if (size > TEXT_MAX_SIZE)
    return zerr_set(err, EFBIG, "text of a chunk exceeds 2^63 bytes");
  char *t = malloc(size ? (size_t)size : 1);
  if (!t)
    return zerr_set(err, ENOMEM, "out of memory");
  zbuf_prefer_huge(t, (size_t)size);
  uint64_t pos = 0;
  text_it_init(&it, ct, 0);
  for (uint64_t k = 0; k < ct->nin; k++, text_it_next(&it, ct)) {
    if (k % TEXT_BLOCK == 0) {
      ct->blk[k / TEXT_BLOCK] = pos;
      if (k % TEXT_STOP_EVERY == 0 && stop &&
          atomic_load_explicit(stop, memory_order_relaxed)) {
        free(t);
        return zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
      }
    }
    uint64_t l = eo[it.j + 1] - eo[it.j];
    memcpy(t + pos, ab->data->mem + eo[it.j], (size_t)l);
    t[pos + l] = text_it_end(ct, &it);
    pos += l + 1;
  }
  /* fields apart by ASCII separators: checked as one text */
  if (utf8_fix((uint8_t *)t, (size_t)size))
    text_tell(ct, TEXT_NOTE_UTF8);
  ct->text = t;
  ct->size = size;
  ct->cost =
      text_unit_base_cost(ct->form) + (size_t)ct->nblk * 8 + (size_t)size;
  abytes_free(ct->ab);
  ct->ab = NULL;
  return 0;
}

/* A whole unit's text buffer is asked in steps of this size, sized from
 * samples of its text, and kept at that size unless an eighth of it is
 * left over: units of a view have texts of about one size, so the buffer
 * of a unit the reader passed is the one malloc hands to the next. Asking
 * for the longest text the elements could have (32 bytes a float64, where
 * perf.sh's have 13) had malloc carve each new text from memory never used
 * (the freed ones, shrunk to their text, were too small) and the kernel
 * zero it: 90-110 MB of fresh pages in a `cat` of 10M float64. Steps
 * of 2 MiB (huge pages), not 1: with 1 MiB the samples' spread had units
 * of one view ask 13 or 14 MiB, and a freed 13 could not take a 14. */
#define TEXT_BUF_STEP ((size_t)2 << 20)

/* Blocks of a unit whose text is counted to size its buffer, and the
 * elements a unit needs for that (smaller ones ask for the longest text:
 * their buffers come and go in malloc's bins, and the samples would be
 * much of their work). */
#define TEXT_SAMPLES 8
#define TEXT_SAMPLE_MIN 65536

/* n rounded up to TEXT_BUF_STEP (above a step; below, n itself). */
static size_t text_buf_round(size_t n) {
  return n <= TEXT_BUF_STEP ? n
                            : (n + TEXT_BUF_STEP - 1) & ~(TEXT_BUF_STEP - 1);
}

/* Bytes to ask for the text of nin plain elements (size elsize) at mem,
 * whose text is at most `most`: TEXT_SAMPLES blocks spread over them are
 * counted (render_fixed_run_size, no text written), and the densest one's
 * bytes per element, with 1/16 to spare and room for a block's scratch,
 * make the size. A text past it grows (tbuf_room). */
static size_t text_buf_ask(const struct dtype *dt, const unsigned char *mem,
                           size_t elsize, uint64_t nin, size_t most) {
  if (nin < TEXT_SAMPLE_MIN)
    return most;
  size_t dense = 0;
  for (uint64_t i = 0; i < TEXT_SAMPLES; i++) {
    uint64_t k = (nin - TEXT_BLOCK) / (TEXT_SAMPLES - 1) * i;
    size_t l = render_fixed_run_size(dt, mem + k * elsize, TEXT_BLOCK);
    dense = l > dense ? l : dense;
  }
  unsigned __int128 est = (unsigned __int128)nin * dense / TEXT_BLOCK +
                          nin / 16 + (size_t)TEXT_BLOCK * RENDER_RUN_ROOM + 64;
  return est < most ? text_buf_round((size_t)est) : most;
}

/* Whether text_measure_run can count the unit from ab: plain numbers in
 * their own order, all of whose elements are in memory. */
static int text_measurable(const struct chunk_text *ct,
                           const struct abytes *ab) {
  return text_fixed_linear(ct) && ab->fixed && ab->fixed->mem &&
         ab->n >= ct->nin;
}

/* Text sizes of a unit of plain numbers in its own order (text_fixed_linear)
 * a block at a time: ct->blk set, the text's size into *pos. Nothing is
 * written (render_fixed_run_size: the lengths render_fixed_run writes). */
static int text_measure_run(struct chunk_text *ct, const struct dtype *dt,
                            const unsigned char *mem, size_t elsize,
                            const atomic_int *stop, uint64_t *pos,
                            struct zerr *err) {
  uint64_t at = 0;
  for (uint64_t k = 0; k < ct->nin; k += TEXT_BLOCK) {
    if (k % TEXT_STOP_EVERY == 0 && stop &&
        atomic_load_explicit(stop, memory_order_relaxed))
      return zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
    size_t m = ct->nin - k < TEXT_BLOCK ? (size_t)(ct->nin - k) : TEXT_BLOCK;
    if (ct->blk)
      ct->blk[k / TEXT_BLOCK] = at;
    at += render_fixed_run_size(dt, mem + k * elsize, m);
  }
  *pos = at;
  return 0;
}

/* Elements text_layout_records gathers at a time, and the bytes they may
 * take: a run's strings compacted where the core's cache holds them,
 * fixed there (render_str_fix) and placed with their newlines. A longer
 * string goes to its place straight and is fixed there. */
#define TEXT_REC_RUN 4096
#define TEXT_REC_SCRATCH (128u << 10)

/* Place the run gathered in scratch (m strings at local offsets lo, each
 * element's length in len) at text offset *d of t, each with its newline,
 * and the block offsets of elements k.. into blk. */
static void records_place(char *t, uint64_t *d, const uint8_t *scratch,
                          const uint64_t *lo, const uint64_t *len, size_t m,
                          uint64_t k, uint64_t *blk) {
  uint64_t at = *d;
  for (size_t e = 0; e < m; e++, k++) {
    if (k % TEXT_BLOCK == 0)
      blk[k / TEXT_BLOCK] = at;
    move_short(t + at, (const char *)scratch + lo[e], (size_t)len[e]);
    at += len[e];
    t[at++] = '\n';
  }
  *d = at;
}

/* See text.h. The text is written over the records, from the front: the
 * text of the elements before element e (their bytes and a newline each)
 * ends before e's record begins (its length word and every earlier one
 * are at least a byte longer than a newline), so it overwrites only what
 * was read. */
int text_layout_records(const struct text_form *form, const uint64_t *shape,
                        const uint64_t *idx, struct chain_records *rec,
                        size_t render_max, const atomic_int *stop,
                        struct chunk_text **out, struct zerr *err) {
  if (form->csv || form->cf || form->dt.kind != DT_STRING || !render_max ||
      rec->size > render_max || rec->size > TEXT_MAX_SIZE)
    return 0;
  struct chunk_text *ct = unit_new(form, shape, idx);
  if (!ct)
    return zerr_set(err, ENOMEM, "out of memory");
  uint64_t nelem = 1;
  for (int d = 0; d < form->ndim; d++)
    nelem *= unit_len(ct, d);
  if (nelem != rec->n || !text_inb_linear(ct)) {
    zobj_put(&ct->obj); /* the decode says why, or lays it out */
    return 0;
  }
  uint64_t nin = ct->nin, nblk = (nin + TEXT_BLOCK - 1) / TEXT_BLOCK;
  ct->blk = malloc((size_t)(nblk ? nblk : 1) * sizeof *ct->blk);
  /* the records' places and lengths, the run's offsets, the scratch */
  uint64_t *start =
      malloc(3 * (TEXT_REC_RUN + 1) * sizeof *start + TEXT_REC_SCRATCH + 32);
  if (!ct->blk || !start) {
    free(start);
    zobj_put(&ct->obj);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  ct->nblk = nblk;
  uint64_t *len = start + TEXT_REC_RUN + 1, *lo = len + TEXT_REC_RUN + 1;
  uint8_t *scratch = (uint8_t *)(lo + TEXT_REC_RUN + 1);
  char *t = (char *)rec->buf;
  uint64_t d = 0, k = 0, bad = 0;
  int rc = 0;
  for (;;) {
    if (k % TEXT_STOP_EVERY < TEXT_REC_RUN && stop &&
        atomic_load_explicit(stop, memory_order_relaxed)) {
      rc = zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
      break;
    }
    long m = chain_records_next(rec, start, len, TEXT_REC_RUN, err);
    if (m <= 0) {
      rc = (int)m;
      break;
    }
    /* elements past the in-bounds ones are checked, not shown */
    size_t use = k >= nin                ? 0
                 : nin - k < (uint64_t)m ? (size_t)(nin - k)
                                         : (size_t)m;
    for (size_t i = 0; i < use;) {
      size_t j = i;
      uint64_t fill = 0;
      while (j < use && len[j] <= TEXT_REC_SCRATCH - fill) {
        lo[j - i] = fill;
        move_short((char *)scratch + fill, t + start[j], (size_t)len[j]);
        fill += len[j++];
      }
      if (j > i) {
        lo[j - i] = fill;
        bad += render_str_fix(lo, j - i, scratch);
        records_place(t, &d, scratch, lo, len + i, j - i, k + i, ct->blk);
      } else { /* one string longer than the scratch: fixed in place */
        if ((k + i) % TEXT_BLOCK == 0)
          ct->blk[(k + i) / TEXT_BLOCK] = d;
        memmove(t + d, t + start[i], (size_t)len[i]);
        uint64_t eo[2] = {d, d + len[i]};
        bad += render_str_fix(eo, 1, (uint8_t *)t + d);
        d += len[i];
        t[d++] = '\n';
        j = i + 1;
      }
      i = j;
    }
    k += (uint64_t)m;
  }
  free(start);
  if (rc < 0) {
    zobj_put(&ct->obj);
    return rc;
  }
  /* the records' buffer is the text now, its tail let go */
  char *text = realloc(rec->buf, d ? (size_t)d : 1);
  rec->buf = NULL;
  *rec = (struct chain_records){0};
  ct->text = text ? text : t;
  ct->size = d;
  ct->cost = text_unit_base_cost(form) + (size_t)nblk * 8 + (size_t)d;
  if (bad)
    text_tell(ct, TEXT_NOTE_UTF8);
  *out = ct;
  return 1;
}

/* See text.h. */
int text_layout(const struct text_form *form, const uint64_t *shape,
                const uint64_t *idx, struct abytes *ab, size_t max_bytes,
                size_t render_max, struct pool *helpers, const atomic_int *stop,
                struct chunk_text **out, struct zerr *err) {
  struct chunk_text *ct = unit_new(form, shape, idx);
  if (!ct) {
    abytes_free(ab);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  ct->ab = ab;
  int rc = layout_check(ct, max_bytes, err);
  uint64_t nblk = (ct->nin + TEXT_BLOCK - 1) / TEXT_BLOCK;
  if (rc == 0 && nblk > max_bytes / sizeof(uint64_t))
    rc = zerr_set(err, EFBIG, "chunk has too many elements");
  if (rc == 0 && !(ct->blk = malloc((size_t)(nblk ? nblk : 1) * 8)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0 && form->csv && !ab->elsize) {
    ct->nblk = nblk;
    if ((rc = layout_csv_fields(ct, stop, err)) < 0)
      zobj_put(&ct->obj);
    else
      *out = ct;
    return rc;
  }
  if (rc == 0) {
    ct->nblk = nblk;
    int done = layout_in_place(ct, render_max, stop, err);
    if (done < 0) {
      zobj_put(&ct->obj);
      return done;
    }
    if (done) {
      *out = ct;
      return 0;
    }
  }
  /* Fixed-size elements are rendered to be measured: keep the text (one
   * render per element in all) unless it grows past render_max. */
  struct tbuf tb = {NULL, 0, 0, render_max};
  if (rc == 0 && ab->elsize && render_max) {
    /* room for the longest texts (a float64 takes up to ~24 bytes): a
     * buffer that grows would be copied; unused pages are never touched,
     * and the final shrink is a remap */
    size_t guess = (size_t)ct->nin * (3 * form->dt.size + 8) + 64;
    /* Asked with no cap, so that a text the samples put past render_max
     * is known before any of it is written (text_measure_run below); a
     * unit too small to be sampled is rendered up to render_max as ever. */
    int sampled = text_fixed_linear(ct) && ct->nin >= TEXT_SAMPLE_MIN;
    size_t ask = sampled ? text_buf_ask(&form->dt, ab->fixed->mem, ab->elsize,
                                        ct->nin, guess)
                         : guess;
    tb.cap = ask < render_max ? ask : render_max;
    tb.p = !sampled || ask <= render_max ? malloc(tb.cap) : NULL;
    if (sampled) /* sized from the text: about all of it is written */
      zbuf_prefer_huge(tb.p, tb.cap);
  }
  uint64_t pos = 0, k0 = 0;
  /* Plain numbers in order whose text will not be kept: counted a block
   * at a time, none written. Rendering them to be measured (the run
   * below, its tail in parts on the helpers) wrote the whole text into
   * buffers the cache never saw, then let it go: for the 20 units of
   * mount_memory.sh's wide row, 5 MB each beside the unit's 3 MB of
   * elements, on every thread decoding one. */
  if (rc == 0 && !tb.p && text_measurable(ct, ab)) {
    rc = text_measure_run(ct, &form->dt, ab->fixed->mem, ab->elsize, stop, &pos,
                          err);
    k0 = ct->nin;
  }
  if (rc == 0 && text_var_linear(ct)) { /* sizes from the offsets alone */
    for (uint64_t b = 0; b < nblk; b++)
      ct->blk[b] = text_run_line_off(ct, 0, 0, b * TEXT_BLOCK);
    pos = text_run_line_off(ct, 0, 0, ct->nin);
    k0 = ct->nin;
  }
  /* Plain text of a box that is the unit's own order: a block of lines
   * per call, while the room for the block stays inside render_max; a
   * long run's tail in parts on the idle helpers. */
  uint64_t kend = ct->nin;
  struct rsplit *rs = NULL;
  if (rc == 0 && tb.p && text_fixed_linear(ct)) {
    rs = rsplit_start(helpers, rsplit_ways(helpers), &form->dt, ab->fixed->mem,
                      ab->elsize, k0, ct->nin, TEXT_BLOCK, ct->blk, &kend);
    for (; k0 < kend && rc == 0; k0 += TEXT_BLOCK) {
      size_t m = kend - k0 < TEXT_BLOCK ? (size_t)(kend - k0) : TEXT_BLOCK;
      if (tb.len + m * RENDER_RUN_ROOM > tb.max)
        break;
      char *d = tbuf_room(&tb, m * RENDER_RUN_ROOM);
      if (!d)
        break;
      ct->blk[k0 / TEXT_BLOCK] = pos;
      if (k0 % TEXT_STOP_EVERY == 0 && stop &&
          atomic_load_explicit(stop, memory_order_relaxed))
        rc = zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
      size_t l =
          render_fixed_run(&form->dt, ab->fixed->mem + k0 * ab->elsize, m, d);
      tb.len += l;
      pos += l;
    }
  }
  struct text_it it;
  text_it_init(&it, ct, k0 < ct->nin ? k0 : 0);
  for (uint64_t k = k0; rc == 0 && k < kend; k++, text_it_next(&it, ct)) {
    if (k % TEXT_BLOCK == 0) {
      ct->blk[k / TEXT_BLOCK] = pos;
      if (k % TEXT_STOP_EVERY == 0 && stop &&
          atomic_load_explicit(stop, memory_order_relaxed))
        rc = zerr_set(err, EINTR, "interrupted: zarrfs is shutting down");
    }
    if (tb.p) {
      char *d = tbuf_room(&tb, RENDER_FIXED_MAX + 1);
      if (d) {
        size_t l =
            text_form_fixed(ct, form, ab->fixed->mem + it.j * ab->elsize, d);
        d[l] = text_it_end(ct, &it);
        tb.len += l + 1;
        pos += l + 1;
        continue;
      }
    }
    pos += text_elem_len(ct, it.j) + 1;
  }
  if (rs)
    rsplit_end(rs, &tb, ct->blk, &pos);
  if (rc == 0 && pos > TEXT_MAX_SIZE)
    rc = zerr_set(err, EFBIG, "text of a chunk exceeds 2^63 bytes");
  if (rc < 0) {
    free(tb.p);
    zobj_put(&ct->obj);
    return rc;
  }
  ct->nblk = nblk;
  ct->size = pos;
  ct->cost = text_unit_base_cost(form) + (size_t)nblk * 8 + abytes_mem_cost(ab);
  if (tb.p) { /* rendered whole: the elements are not needed any more */
    /* shrunk to its step unless little is left over (see TEXT_BUF_STEP) */
    size_t keep = text_buf_round(tb.len ? tb.len : 1);
    char *t = keep < tb.cap - tb.cap / 8 ? realloc(tb.p, keep) : tb.p;
    ct->text = t ? t : tb.p;
    ct->cost = text_unit_base_cost(form) + (size_t)nblk * 8 + (size_t)ct->size;
    abytes_free(ct->ab);
    ct->ab = NULL;
  }
  *out = ct;
  return 0;
}

/* See text.h. */
int text_measure(const struct text_form *form, const uint64_t *shape,
                 const uint64_t *idx, struct abytes *ab, size_t max_bytes,
                 const atomic_int *stop, uint64_t *size, struct zerr *err) {
  struct chunk_text *ct = unit_new(form, shape, idx);
  if (!ct) {
    abytes_free(ab);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  ct->ab = ab;
  /* Plain numbers in the unit's own order: the lines of a block counted
   * as text_layout's runs would write them (render_fixed_run_size: the
   * same lengths, no text written). */
  if (text_measurable(ct, ab)) {
    uint64_t pos = 0;
    int rc = text_measure_run(ct, &form->dt, ab->fixed->mem, ab->elsize, stop,
                              &pos, err);
    zobj_put(&ct->obj);
    if (rc < 0)
      return rc;
    if (pos > TEXT_MAX_SIZE)
      return zerr_set(err, EFBIG, "text of a chunk exceeds 2^63 bytes");
    *size = pos;
    return 0;
  }
  /* Anything else as a layout that keeps no text. */
  ct->ab = NULL;
  zobj_put(&ct->obj);
  struct chunk_text *lt;
  ZTRY(text_layout(form, shape, idx, ab, max_bytes, 0, NULL, stop, &lt, err));
  *size = lt->size;
  zobj_put(&lt->obj);
  return 0;
}

/* Rendered text: the offset of the line `lines` lines after the one
 * starting at pos (lines hold no newline but their last byte). */
static uint64_t text_walk_lines(const struct chunk_text *ct, uint64_t pos,
                                uint64_t lines) {
  const char *t = ct->text;
  if (ct->form->csv) /* fields may hold newlines; a record is several */
    return csvtext_skip(
        t, ct->size, pos,
        ct->form->elem_fields > 1 ? lines * ct->form->elem_fields : lines);
  for (; lines && pos < ct->size; lines--) {
    const char *nl = memchr(t + pos, '\n', (size_t)(ct->size - pos));
    pos = nl ? (uint64_t)(nl - t) + 1 : ct->size;
  }
  return pos;
}

/* See text.h. */
uint64_t text_line_off(const struct chunk_text *ct, uint64_t k) {
  if (k >= ct->nin)
    return ct->size;
  if (ct->text)
    return text_walk_lines(ct, ct->blk[k / TEXT_BLOCK], k % TEXT_BLOCK);
  if (!ct->ab)
    return k * (ct->form->fill_len + 1);
  if (text_var_linear(ct))
    return text_run_line_off(ct, 0, 0, k);
  uint64_t b = k / TEXT_BLOCK, pos = ct->blk[b];
  struct text_it it;
  text_it_init(&it, ct, b * TEXT_BLOCK);
  for (; it.k < k; text_it_next(&it, ct))
    pos += text_elem_len(ct, it.j) + 1;
  return pos;
}

/* Walk forward from a known element when the distance is under a block. */
uint64_t text_line_off_from(const struct chunk_text *ct, uint64_t k0,
                            uint64_t off0, uint64_t k) {
  if (text_var_linear(ct))
    return text_line_off(ct, k);
  if (!ct->ab || k >= ct->nin || k < k0 || k - k0 >= TEXT_BLOCK)
    return ct->text && k < ct->nin && k >= k0 && k - k0 < TEXT_BLOCK
               ? text_walk_lines(ct, off0, k - k0)
               : text_line_off(ct, k);
  struct text_it it;
  text_it_init(&it, ct, k0);
  for (; it.k < k; text_it_next(&it, ct))
    off0 += text_elem_len(ct, it.j) + 1;
  return off0;
}
