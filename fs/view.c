/* view.c - sizes and ranged reads of chunk views and array views (see
 * view.h for the model). */
#include "view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../src/buf.h"
#include "render.h"

/* Largest segment table of one slab (entries). */
#define VIEW_MAX_SEGMENTS (64u << 20)

/* First in-bounds element whose line ends after off (binary search). */
static uint64_t find_line(const uint64_t *line_off, uint64_t n, uint64_t off) {
  uint64_t lo = 0, hi = n; /* answer in [lo, hi) */
  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    if (line_off[mid] <= off)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

/* Chunk-linear index of in-bounds element k. */
static uint64_t inb_linear(const struct chunk_text *ct,
                           const uint64_t *chunk_shape, int ndim, uint64_t k) {
  uint64_t j = 0, stride = 1;
  for (int d = ndim - 1; d >= 0; d--) {
    uint64_t i = k % ct->ext[d];
    k /= ct->ext[d];
    j += i * stride;
    stride *= chunk_shape[d];
  }
  return j;
}

/* Render the text range [lo, hi) of in-bounds element k (chunk index j). */
static void render_fixed_part(const struct chunk_text *ct,
                              const struct dtype *dt, uint64_t j, uint64_t lo,
                              uint64_t hi, char *dst) {
  char tmp[RENDER_FIXED_MAX + 1];
  size_t n = render_fixed(dt, ct->ab->fixed->mem + j * ct->ab->elsize, tmp);
  tmp[n] = '\n';
  memcpy(dst, tmp + lo, (size_t)(hi - lo));
}

/* Read of a variable-length run: fetch the source bytes of elements
 * [ka, kb) that the request [off, end) needs with one ranged read, then
 * render them. */
static int read_var_run(const struct chunk_text *ct, struct bytesrc *data,
                        const struct dtype *dt, uint64_t ka, uint64_t kb,
                        uint64_t ja, uint64_t off, uint64_t end, char *dst,
                        struct zerr *err) {
  const uint64_t *lo_ = ct->line_off, *eo = ct->ab->offsets;
  uint64_t first_lo = off > lo_[ka] ? off - lo_[ka] : 0;
  uint64_t jl = ja + (kb - 1 - ka);
  uint64_t last_len = lo_[kb] - lo_[kb - 1] - 1; /* text without newline */
  uint64_t last_hi = end - lo_[kb - 1];
  if (last_hi > last_len)
    last_hi = last_len;
  uint64_t src_a = eo[ja] + (first_lo < (lo_[ka + 1] - lo_[ka] - 1)
                                 ? render_var_src_off(dt, first_lo)
                                 : eo[ja + 1] - eo[ja]);
  uint64_t src_b =
      last_hi ? eo[jl] + render_var_src_off(dt, last_hi - 1) + 1 : eo[jl];
  if (src_b < src_a)
    src_b = src_a;
  const uint8_t *src;
  uint8_t *buf = NULL;
  if (data->mem) {
    src = data->mem;
    src_a = 0;
  } else {
    size_t n = (size_t)(src_b - src_a);
    buf = malloc(n ? n : 1);
    if (!buf)
      return zerr_set(err, ENOMEM, "out of memory");
    int rc = bytesrc_read_range(data, src_a, n, buf, err);
    if (rc < 0) {
      free(buf);
      return rc;
    }
    src = buf;
  }
  for (uint64_t k = ka, j = ja; k < kb; k++, j++) {
    uint64_t l0 = lo_[k], l1 = lo_[k + 1];
    uint64_t a = (off > l0 ? off : l0) - l0;
    uint64_t b = (end < l1 ? end : l1) - l0;
    uint64_t tlen = l1 - l0 - 1;
    uint64_t tb = b < tlen ? b : tlen;
    char *out = dst + (l0 + a - off);
    if (a < tb) {
      uint64_t s = eo[j] + render_var_src_off(dt, a) - src_a;
      render_var(dt, src + s, a, (size_t)(tb - a), out);
    }
    if (b == tlen + 1)
      dst[l1 - 1 - off] = '\n';
  }
  free(buf);
  return 0;
}

/* See view.h. */
long view_chunk_text_read(const struct chunk_text *ct, struct bytesrc *data,
                          const struct dtype *dt, const uint64_t *chunk_shape,
                          int ndim, uint64_t off, size_t len, char *dst,
                          struct zerr *err) {
  uint64_t size = ct->line_off[ct->nin];
  if (off >= size || len == 0)
    return 0;
  uint64_t end = size - off < len ? size : off + len;
  uint64_t k = find_line(ct->line_off, ct->nin, off);
  while (k < ct->nin && ct->line_off[k] < end) {
    /* A run: consecutive in-bounds elements that are consecutive in the
     * chunk, so one ranged read covers them. */
    uint64_t ja = inb_linear(ct, chunk_shape, ndim, k);
    uint64_t kb = k + 1;
    uint64_t w = ndim ? ct->ext[ndim - 1] : 1;
    while (kb < ct->nin && ct->line_off[kb] < end) {
      if (kb % w == 0 && inb_linear(ct, chunk_shape, ndim, kb) != ja + (kb - k))
        break;
      kb++;
    }
    if (ct->ab->elsize) {
      for (uint64_t i = k; i < kb; i++) {
        uint64_t l0 = ct->line_off[i], l1 = ct->line_off[i + 1];
        uint64_t a = (off > l0 ? off : l0) - l0;
        uint64_t b = (end < l1 ? end : l1) - l0;
        render_fixed_part(ct, dt, ja + (i - k), a, b, dst + (l0 + a - off));
      }
    } else {
      ZTRY(read_var_run(ct, data, dt, k, kb, ja, off, end, dst, err));
    }
    k = kb;
  }
  return (long)(end - off);
}

/* ---- units ---- */

/* Read from the text of unit idx. */
static long unit_read(struct engine *e, const struct znode *n,
                      const uint64_t *idx, uint64_t off, size_t len, char *dst,
                      struct zerr *err) {
  struct chunk_text *ct;
  ZTRY(engine_unit(e, n, idx, &ct, err));
  struct bytesrc *data = NULL;
  if (!ct->ab->elsize) {
    int rc = engine_unit_data(e, n, ct, &data, err);
    if (rc < 0) {
      zobj_put(&ct->obj);
      return rc;
    }
  }
  long r = view_chunk_text_read(ct, data, &n->text_dtype, n->uspec.shape,
                                n->meta->ndim, off, len, dst, err);
  bytesrc_unref(data);
  zobj_put(&ct->obj);
  return r;
}

/* ---- regions: boxes of units walked in C order of their elements ----
 *
 * The array view is the region of every unit; the view of a shard is the
 * region of its inner chunks. Slab k of a region holds the units whose
 * first coordinate is lo[0]+k. When a slab is one unit, its text is that
 * unit's text; otherwise the rows of the region cut each unit into
 * segments, and a per-slab table maps text offsets to (unit, row). */
struct region {
  int ndim;
  uint64_t lo[ZMETA_MAX_DIMS], hi[ZMETA_MAX_DIMS];   /* unit range */
  uint64_t elo[ZMETA_MAX_DIMS], ehi[ZMETA_MAX_DIMS]; /* element box */
  char name[4200]; /* cache-key stem naming the region */
};

/* Per-region slab sizes. */
struct region_layout {
  struct zobj obj;
  uint64_t nslabs;
  uint64_t *slab_off; /* nslabs+1 */
};

/* Per-slab segment offsets when a slab spans several units. */
struct slab_table {
  struct zobj obj;
  uint64_t nseg;
  uint64_t *seg_off; /* nseg+1 */
};

/* Free a layout. */
static void region_layout_destroy(struct zobj *o) {
  struct region_layout *l = (struct region_layout *)o;
  free(l->slab_off);
  free(l);
}

/* Free a slab table. */
static void slab_table_destroy(struct zobj *o) {
  struct slab_table *t = (struct slab_table *)o;
  free(t->seg_off);
  free(t);
}

/* Fill the element box of r from its unit range. */
static void region_boxes(const struct znode *n, struct region *r) {
  for (int d = 0; d < r->ndim; d++) {
    uint64_t u = n->uspec.shape[d], shape = n->meta->shape[d];
    r->elo[d] = r->lo[d] * u;
    r->ehi[d] = r->hi[d] * u < shape ? r->hi[d] * u : shape;
  }
}

/* The region of the whole array. */
static void region_of_array(const struct znode *n, struct region *r) {
  r->ndim = n->meta->ndim;
  for (int d = 0; d < r->ndim; d++) {
    r->lo[d] = 0;
    r->hi[d] = n->ugrid[d];
  }
  region_boxes(n, r);
  snprintf(r->name, sizeof r->name, "A:%s", n->path);
}

/* The region of chunk idx (its units inside the array). */
static int region_of_chunk(const struct znode *n, const uint64_t *idx,
                           struct region *r, struct zerr *err) {
  r->ndim = n->meta->ndim;
  for (int d = 0; d < r->ndim; d++) {
    if (idx[d] >= n->meta->grid[d])
      return zerr_set(err, ENOENT, "chunk outside the grid");
    r->lo[d] = idx[d] * n->per[d];
    r->hi[d] =
        r->lo[d] + n->per[d] < n->ugrid[d] ? r->lo[d] + n->per[d] : n->ugrid[d];
  }
  region_boxes(n, r);
  char key[4096];
  if (engine_chunk_key(n, idx, key, sizeof key) < 0)
    return zerr_set(err, ENAMETOOLONG, "chunk key too long");
  snprintf(r->name, sizeof r->name, "S:%s", key);
  return 0;
}

/* Units per slab: the product of the unit ranges past dimension 0. */
static uint64_t region_units_per_slab(const struct region *r) {
  uint64_t p = 1;
  for (int d = 1; d < r->ndim; d++)
    p *= r->hi[d] - r->lo[d];
  return p;
}

/* Check that n is an array whose views can be read. */
static int view_check(const struct znode *n, struct zerr *err) {
  if (n->kind == ZNODE_ARRAY && n->chain)
    return 0;
  return zerr_set(err, EIO, "%s",
                  n->view_error ? n->view_error : "not a readable array");
}

/* Sum the unit sizes slab by slab (every unit's size is needed once;
 * learned sizes make this cheap after the first time). */
static int region_layout_get(struct engine *e, const struct znode *n,
                             const struct region *r, struct region_layout **out,
                             struct zerr *err) {
  char key[4300];
  snprintf(key, sizeof key, "L:%s", r->name);
  struct zobj *o = zcache_get(e->cache, key);
  if (o) {
    *out = (struct region_layout *)o;
    return 0;
  }
  int nd = r->ndim;
  uint64_t nslabs = nd ? r->hi[0] - r->lo[0] : 1;
  struct region_layout *l = calloc(1, sizeof *l);
  if (!l)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&l->obj, region_layout_destroy);
  l->nslabs = nslabs;
  l->slab_off = calloc((size_t)nslabs + 1, sizeof *l->slab_off);
  if (!l->slab_off) {
    zobj_put(&l->obj);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  uint64_t per = region_units_per_slab(r);
  uint64_t idx[ZMETA_MAX_DIMS] = {0};
  uint64_t pos = 0;
  for (uint64_t k = 0; k < nslabs; k++) {
    l->slab_off[k] = pos;
    if (nd)
      idx[0] = r->lo[0] + k;
    for (int d = 1; d < nd; d++)
      idx[d] = r->lo[d];
    for (uint64_t c = 0; c < per; c++) {
      uint64_t sz;
      int rc = engine_unit_size(e, n, idx, &sz, err);
      if (rc < 0) {
        zobj_put(&l->obj);
        return rc;
      }
      pos += sz;
      for (int d = nd - 1; d >= 1; d--) {
        if (++idx[d] < r->hi[d])
          break;
        idx[d] = r->lo[d];
      }
    }
  }
  l->slab_off[nslabs] = pos;
  zcache_put(e->cache, key, &l->obj, sizeof *l + (nslabs + 1) * 8);
  *out = l;
  return 0;
}

/* Rows of the region inside slab k (dimension 0 cut to the slab). */
static uint64_t slab_rows0(const struct znode *n, const struct region *r,
                           uint64_t k) {
  uint64_t u = n->uspec.shape[0];
  uint64_t start = (r->lo[0] + k) * u;
  return r->ehi[0] - start < u ? r->ehi[0] - start : u;
}

/* The unit and in-bounds row R of segment s of slab k. */
static void segment_locate(const struct znode *n, const struct region *r,
                           uint64_t k, uint64_t s, uint64_t *idx,
                           uint64_t *row) {
  int nd = r->ndim;
  const uint64_t *unit = n->uspec.shape, *shape = n->meta->shape;
  uint64_t glast = r->hi[nd - 1] - r->lo[nd - 1];
  uint64_t rr = s / glast;
  idx[nd - 1] = r->lo[nd - 1] + s % glast;
  /* Region row rr of the slab -> element coordinates a[0..nd-2]. */
  uint64_t a[ZMETA_MAX_DIMS];
  for (int d = nd - 2; d >= 0; d--) {
    uint64_t extent = d == 0 ? slab_rows0(n, r, k) : r->ehi[d] - r->elo[d];
    a[d] = rr % extent;
    rr /= extent;
  }
  a[0] += (r->lo[0] + k) * unit[0];
  for (int d = 1; d <= nd - 2; d++)
    a[d] += r->elo[d];
  uint64_t R = 0;
  for (int d = 0; d <= nd - 2; d++) {
    idx[d] = a[d] / unit[d];
    uint64_t start = idx[d] * unit[d];
    uint64_t ext = shape[d] - start < unit[d] ? shape[d] - start : unit[d];
    R = R * ext + (a[d] - start);
  }
  *row = R;
}

/* Rows of slab k times units along the last dimension. */
static int slab_nseg(const struct znode *n, const struct region *r, uint64_t k,
                     uint64_t *nseg) {
  uint64_t rows = slab_rows0(n, r, k);
  for (int d = 1; d < r->ndim - 1; d++)
    if (zmul_u64(rows, r->ehi[d] - r->elo[d], &rows) < 0)
      return -EOVERFLOW;
  return zmul_u64(rows, r->hi[r->ndim - 1] - r->lo[r->ndim - 1], nseg);
}

/* Build (or fetch) the segment table of slab k. */
static int slab_table_get(struct engine *e, const struct znode *n,
                          const struct region *r, uint64_t k,
                          struct slab_table **out, struct zerr *err) {
  char key[4300];
  snprintf(key, sizeof key, "T:%s#%llu", r->name, (unsigned long long)k);
  struct zobj *o = zcache_get(e->cache, key);
  if (o) {
    *out = (struct slab_table *)o;
    return 0;
  }
  uint64_t nseg;
  if (slab_nseg(n, r, k, &nseg) < 0 || nseg > VIEW_MAX_SEGMENTS)
    return zerr_set(err, EFBIG, "array view: too many row segments");
  struct slab_table *t = calloc(1, sizeof *t);
  if (!t)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&t->obj, slab_table_destroy);
  t->nseg = nseg;
  t->seg_off = malloc(((size_t)nseg + 1) * sizeof *t->seg_off);
  if (!t->seg_off) {
    zobj_put(&t->obj);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  uint64_t pos = 0;
  for (uint64_t s = 0; s < nseg; s++) {
    uint64_t idx[ZMETA_MAX_DIMS], R;
    segment_locate(n, r, k, s, idx, &R);
    struct chunk_text *ct;
    int rc = engine_unit(e, n, idx, &ct, err);
    if (rc < 0) {
      zobj_put(&t->obj);
      return rc;
    }
    uint64_t w = ct->ext[r->ndim - 1];
    t->seg_off[s] = pos;
    pos += ct->line_off[(R + 1) * w] - ct->line_off[R * w];
    zobj_put(&ct->obj);
  }
  t->seg_off[nseg] = pos;
  zcache_put(e->cache, key, &t->obj, sizeof *t + ((size_t)nseg + 1) * 8);
  *out = t;
  return 0;
}

/* Text size of a region (remembered in the learned-size table). */
static int region_size(struct engine *e, const struct znode *n,
                       const struct region *r, uint64_t *size,
                       struct zerr *err) {
  if (zsizes_get(e->sizes, r->name, size))
    return 0;
  struct region_layout *l;
  ZTRY(region_layout_get(e, n, r, &l, err));
  *size = l->slab_off[l->nslabs];
  zobj_put(&l->obj);
  zsizes_put(e->sizes, r->name, *size);
  return 0;
}

/* Read across slabs and segments of a region. */
static long region_read(struct engine *e, const struct znode *n,
                        const struct region *r, uint64_t off, size_t len,
                        char *dst, struct zerr *err) {
  struct region_layout *l;
  ZTRY(region_layout_get(e, n, r, &l, err));
  uint64_t total = l->slab_off[l->nslabs];
  size_t done = 0;
  int rc = 0;
  int nd = r->ndim;
  int simple = nd <= 1 || region_units_per_slab(r) == 1;
  while (done < len && off + done < total) {
    uint64_t pos = off + done;
    uint64_t k = find_line(l->slab_off, l->nslabs, pos);
    uint64_t in_slab = pos - l->slab_off[k];
    uint64_t idx[ZMETA_MAX_DIMS] = {0};
    uint64_t unit_off, avail;
    if (simple) {
      for (int d = 0; d < nd; d++)
        idx[d] = r->lo[d];
      if (nd)
        idx[0] += k;
      unit_off = in_slab;
      avail = l->slab_off[k + 1] - pos;
    } else {
      struct slab_table *t;
      rc = slab_table_get(e, n, r, k, &t, err);
      if (rc < 0)
        break;
      uint64_t s = find_line(t->seg_off, t->nseg, in_slab);
      uint64_t R;
      segment_locate(n, r, k, s, idx, &R);
      avail = t->seg_off[s + 1] - in_slab;
      uint64_t seg_start = in_slab - t->seg_off[s];
      zobj_put(&t->obj);
      struct chunk_text *ct;
      rc = engine_unit(e, n, idx, &ct, err);
      if (rc < 0)
        break;
      unit_off = ct->line_off[R * ct->ext[nd - 1]] + seg_start;
      zobj_put(&ct->obj);
    }
    size_t want = len - done < avail ? len - done : (size_t)avail;
    if (want == 0)
      break; /* empty slab or segment: find_line never returns those */
    long got = unit_read(e, n, idx, unit_off, want, dst + done, err);
    if (got < 0) {
      rc = (int)got;
      break;
    }
    if (got == 0) {
      rc = zerr_set(err, EIO, "view: chunk shorter than its size");
      break;
    }
    done += (size_t)got;
  }
  zobj_put(&l->obj);
  /* Never a short read on error: the kernel takes a short read as the end
   * of the file, and the reader would see truncated text and no error. */
  if (rc < 0)
    return rc;
  return (long)done;
}

/* ---- the views ---- */

/* Size of chunk idx's view: one unit, or the region of a shard. */
int view_chunk_size(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (!n->shard)
    return engine_unit_size(e, n, idx, size, err);
  struct region r;
  ZTRY(region_of_chunk(n, idx, &r, err));
  return region_size(e, n, &r, size, err);
}

/* Read from chunk idx's view. */
long view_chunk_read(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t off, size_t len, char *dst,
                     struct zerr *err) {
  ZTRY(view_check(n, err));
  if (!n->shard)
    return unit_read(e, n, idx, off, len, dst, err);
  struct region r;
  ZTRY(region_of_chunk(n, idx, &r, err));
  return region_read(e, n, &r, off, len, dst, err);
}

/* Whole-array view size: the sum of every unit's text size. */
int view_array_size(struct engine *e, const struct znode *n, uint64_t *size,
                    struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0) {
    *size = 0;
    return 0;
  }
  struct region r;
  region_of_array(n, &r);
  return region_size(e, n, &r, size, err);
}

/* Read from the whole-array view. */
long view_array_read(struct engine *e, const struct znode *n, uint64_t off,
                     size_t len, char *dst, struct zerr *err) {
  ZTRY(view_check(n, err));
  if (n->meta->nelem == 0)
    return 0;
  struct region r;
  region_of_array(n, &r);
  return region_read(e, n, &r, off, len, dst, err);
}
