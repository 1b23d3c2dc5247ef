/* parquet.c - flat Parquet tables read column by column (see parquet.h). */
#include "parquet.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "pqmeta.h"
#include "pqpage.h"

/* Schema groups nested deeper than this are refused. */
#define PQ_MAX_NEST 64

/* A leaf of the schema: a column. */
struct pq_leaf {
  struct pq_str top; /* the name of its top-level ancestor (itself) */
  int depth;         /* elements on its path below the root */
  int type;          /* enum pq_ptype */
  int max_def, max_rep;
};

struct parquet_file {
  const uint8_t *data;
  size_t meta_start; /* where the footer begins: pages lie below */
  struct parquet_limits lim;
  struct pq_footer *ft;
  uint32_t nleaves;
  struct pq_leaf *leaves;
};

void parquet_limits_default(struct parquet_limits *l) {
  l->max_footer = 16u << 20;
  l->max_page = 16u << 20;
  l->max_rows = 1u << 22;
  l->max_bytes = 256u << 20;
}

/* Little-endian loads. */
static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p) {
  return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* Walk the schema element *i and its children, adding leaves. */
static int walk(struct parquet_file *f, uint32_t *i, int depth, int def,
                int rep, struct pq_str top, struct zerr *err) {
  const struct pq_footer *ft = f->ft;
  if (*i >= ft->nschema)
    return zerr_set(err, EIO, "schema: num_children runs past the %u elements",
                    ft->nschema);
  if (depth > PQ_MAX_NEST)
    return zerr_set(err, EIO, "schema nested deeper than %d", PQ_MAX_NEST);
  const struct pq_schema_el *el = &ft->schema[(*i)++];
  if (depth == 1)
    top = el->name;
  def += el->repetition == PQ_OPTIONAL;
  rep += el->repetition == PQ_REPEATED;
  if (el->num_children == 0) {
    if (el->type < 0)
      return zerr_set(err, EIO, "schema: leaf '%.*s' without a type",
                      (int)el->name.len, el->name.p);
    struct pq_leaf *l = &f->leaves[f->nleaves++];
    l->top = top;
    l->depth = depth;
    l->type = el->type;
    l->max_def = def;
    l->max_rep = rep;
    return 0;
  }
  for (int32_t c = 0; c < el->num_children; c++)
    ZTRY(walk(f, i, depth + 1, def, rep, top, err));
  return 0;
}

/* The schema's leaves, and the row groups checked against them. */
static int check_extents(struct parquet_file *f, struct zerr *err) {
  const struct pq_footer *ft = f->ft;
  if (!(f->leaves = calloc(ft->nschema, sizeof *f->leaves)))
    return zerr_set(err, ENOMEM, "out of memory");
  uint32_t i = 1;
  const struct pq_schema_el *root = &ft->schema[0];
  for (int32_t c = 0; c < root->num_children; c++)
    ZTRY(walk(f, &i, 1, 0, 0, root->name, err));
  if (i != ft->nschema)
    return zerr_set(err, EIO, "schema: %u elements, the tree holds %u",
                    ft->nschema, i);
  uint64_t rows = 0;
  for (uint32_t g = 0; g < ft->nrg; g++) {
    const struct pq_row_group *rg = &ft->rgs[g];
    if (rg->ncols != f->nleaves)
      return zerr_set(err, EIO, "row group %u has %u columns, the schema %u", g,
                      rg->ncols, f->nleaves);
    for (uint32_t c = 0; c < rg->ncols; c++) {
      const struct pq_chunk *ch = &rg->cols[c];
      const struct pq_leaf *l = &f->leaves[c];
      if (ch->type != l->type || (int)ch->npath != l->depth ||
          ch->path0.len != l->top.len ||
          memcmp(ch->path0.p, l->top.p, l->top.len))
        return zerr_set(
            err, EIO, "row group %u column %u does not match the schema", g, c);
    }
    rows += (uint64_t)rg->num_rows; /* each < 2^63, at most 65536 */
    if (rows > f->lim.max_rows)
      return zerr_set(err, EIO, "more than %llu rows",
                      (unsigned long long)f->lim.max_rows);
  }
  if (rows != (uint64_t)ft->num_rows)
    return zerr_set(err, EIO, "row groups hold %llu rows, the footer says %lld",
                    (unsigned long long)rows, (long long)ft->num_rows);
  return 0;
}

int parquet_open(const uint8_t *data, size_t len,
                 const struct parquet_limits *lim, struct parquet_file **out,
                 struct zerr *err) {
  if (len < 12 || memcmp(data, "PAR1", 4))
    return zerr_set(err, EIO, "not a Parquet file (no PAR1 at its start)");
  if (!memcmp(data + len - 4, "PARE", 4))
    return zerr_set(err, EIO, "encrypted Parquet files are not supported");
  if (memcmp(data + len - 4, "PAR1", 4))
    return zerr_set(err, EIO, "not a Parquet file (no PAR1 at its end)");
  uint32_t flen = le32(data + len - 8);
  if (flen > len - 12)
    return zerr_set(err, EIO, "footer of %u bytes in a file of %zu", flen, len);
  struct parquet_file *f = calloc(1, sizeof *f);
  if (!f)
    return zerr_set(err, ENOMEM, "out of memory");
  f->data = data;
  f->meta_start = len - 8 - flen;
  if (lim)
    f->lim = *lim;
  else
    parquet_limits_default(&f->lim);
  int rc = flen > f->lim.max_footer
               ? zerr_set(err, EIO, "footer of %u bytes (at most %zu)", flen,
                          f->lim.max_footer)
               : pqmeta_footer(data + f->meta_start, flen, &f->ft, err);
  if (rc == 0)
    rc = check_extents(f, err);
  if (rc < 0) {
    parquet_close(f);
    return rc;
  }
  *out = f;
  return 0;
}

void parquet_close(struct parquet_file *f) {
  if (!f)
    return;
  pqmeta_footer_free(f->ft);
  free(f->leaves);
  free(f);
}

uint64_t parquet_num_rows(const struct parquet_file *f) {
  return (uint64_t)f->ft->num_rows;
}

int parquet_column(const struct parquet_file *f, const char *name) {
  size_t n = strlen(name);
  for (uint32_t i = 0; i < f->nleaves; i++)
    if (f->leaves[i].depth == 1 && f->leaves[i].top.len == n &&
        !memcmp(f->leaves[i].top.p, name, n))
      return (int)i;
  return -1;
}

void parquet_col_free(struct parquet_col *c) {
  if (!c)
    return;
  free(c->isnull);
  free(c->ints);
  free(c->off);
  free(c->bytes);
  free(c);
}

/* A dictionary: values of a PLAIN dictionary page. */
struct dict {
  int have;
  uint32_t n;
  uint8_t *page;    /* the decompressed page (owned) */
  int64_t *ints;    /* INT32, INT64 */
  uint32_t *bstart; /* BYTE_ARRAY: offset in page */
  uint32_t *blen;   /* and length */
};

/* Reading one column chunk. */
struct chunk_rd {
  const struct parquet_file *f;
  const struct pq_leaf *leaf;
  const struct pq_chunk *ch;
  struct parquet_col *c;
  struct zbuf bytes; /* BYTE_ARRAY values */
  uint64_t row;      /* next row of c to fill */
  struct dict d;
};

/* The next PLAIN value at *pos of [v, v+vlen). */
static int plain_next(int type, const uint8_t *v, size_t vlen, size_t *pos,
                      int64_t *iv, const uint8_t **bp, uint32_t *blen,
                      struct zerr *err) {
  size_t left = vlen - *pos;
  if (type == PQ_INT32 || type == PQ_INT64) {
    size_t w = type == PQ_INT32 ? 4 : 8;
    if (left < w)
      return zerr_set(err, EIO, "PLAIN values end early");
    *iv = w == 4 ? (int64_t)(int32_t)le32(v + *pos) : (int64_t)le64(v + *pos);
    *pos += w;
    return 0;
  }
  if (left < 4 || le32(v + *pos) > left - 4)
    return zerr_set(err, EIO, "PLAIN BYTE_ARRAY values end early");
  *blen = le32(v + *pos);
  *bp = v + *pos + 4;
  *pos += 4 + (size_t)*blen;
  return 0;
}

/* A dictionary page (decompressed into page, taken over). */
static int read_dict(struct chunk_rd *rd, const struct pq_page *pg,
                     uint8_t *page, struct zerr *err) {
  struct dict *d = &rd->d;
  char nb[16];
  d->page = page;
  d->have = 1;
  if (pg->encoding != PQ_PLAIN && pg->encoding != PQ_PLAIN_DICTIONARY)
    return zerr_set(err, EIO, "dictionary page in encoding %s",
                    pqmeta_encoding_name(pg->encoding, nb));
  size_t len = (size_t)pg->uncompressed_size;
  /* Every value takes 4 bytes at least. */
  if ((size_t)pg->num_values > len / 4)
    return zerr_set(err, EIO, "dictionary of %ld values in %zu bytes",
                    (long)pg->num_values, len);
  d->n = (uint32_t)pg->num_values;
  int ints = rd->leaf->type != PQ_BYTE_ARRAY;
  size_t n1 = (size_t)d->n + 1;
  if (ints)
    d->ints = malloc(n1 * sizeof *d->ints);
  else if ((d->bstart = malloc(n1 * sizeof *d->bstart)))
    d->blen = malloc(n1 * sizeof *d->blen);
  if (ints ? !d->ints : !d->blen)
    return zerr_set(err, ENOMEM, "out of memory");
  size_t pos = 0;
  for (uint32_t i = 0; i < d->n; i++) {
    int64_t iv = 0;
    const uint8_t *bp = NULL;
    uint32_t bl = 0;
    ZTRY(plain_next(rd->leaf->type, page, len, &pos, &iv, &bp, &bl, err));
    if (ints) {
      d->ints[i] = iv;
    } else {
      d->bstart[i] = (uint32_t)(bp - page);
      d->blen[i] = bl;
    }
  }
  return 0;
}

/* Store row rd->row: null, or an integer, or bytes. */
static int put_row(struct chunk_rd *rd, int null, int64_t iv, const uint8_t *bp,
                   size_t bl, struct zerr *err) {
  struct parquet_col *c = rd->c;
  uint64_t r = rd->row++;
  c->isnull[r] = (uint8_t)null;
  if (c->type != PQ_BYTE_ARRAY) {
    c->ints[r] = null ? 0 : iv;
    return 0;
  }
  int rc = !null && bl ? zbuf_append(&rd->bytes, bp, bl, err) : 0;
  if (rc == -EFBIG) /* the limit is a fact about the file */
    return zerr_set(err, EIO, "values larger than %zu bytes",
                    rd->f->lim.max_bytes);
  if (rc < 0)
    return rc;
  c->off[r + 1] = rd->bytes.len;
  return 0;
}

/* The values of a data page: nv rows whose levels are lev (NULL: none is
 * null), nonnull of them with values in [v, v+vlen). */
static int page_values(struct chunk_rd *rd, const struct pq_page *pg,
                       const uint32_t *lev, size_t nv, size_t nonnull,
                       const uint8_t *v, size_t vlen, struct zerr *err) {
  char nb[16];
  int type = rd->leaf->type, rc = 0;
  uint32_t maxd = (uint32_t)rd->leaf->max_def;
  uint32_t *idx = NULL;
  int dict =
      pg->encoding == PQ_PLAIN_DICTIONARY || pg->encoding == PQ_RLE_DICTIONARY;
  if (!dict && pg->encoding != PQ_PLAIN)
    return zerr_set(err, EIO, "data page in encoding %s is not supported",
                    pqmeta_encoding_name(pg->encoding, nb));
  if (dict && nonnull) {
    if (!rd->d.have)
      return zerr_set(err, EIO, "dictionary-encoded page without a dictionary");
    if (vlen < 1)
      return zerr_set(err, EIO, "dictionary indices missing");
    if (!(idx = malloc(nonnull * sizeof *idx)))
      return zerr_set(err, ENOMEM, "out of memory");
    rc = pqpage_rle(v + 1, vlen - 1, v[0], idx, nonnull, NULL, err);
  }
  size_t pos = 0, k = 0;
  for (size_t i = 0; i < nv && rc == 0; i++) {
    if (lev && lev[i] != maxd) {
      rc = put_row(rd, 1, 0, NULL, 0, err);
      continue;
    }
    int64_t iv = 0;
    const uint8_t *bp = NULL;
    uint32_t bl = 0;
    if (dict) {
      uint32_t j = idx[k++];
      if (j >= rd->d.n) {
        rc = zerr_set(err, EIO, "dictionary index %u of %u values", j, rd->d.n);
        break;
      }
      if (type == PQ_BYTE_ARRAY) {
        bp = rd->d.page + rd->d.bstart[j];
        bl = rd->d.blen[j];
      } else {
        iv = rd->d.ints[j];
      }
    } else {
      rc = plain_next(type, v, vlen, &pos, &iv, &bp, &bl, err);
      if (rc < 0)
        break;
    }
    rc = put_row(rd, 0, iv, bp, bl, err);
  }
  free(idx);
  return rc;
}

/* Definition levels: n values from [p, p+len) into *out (malloc'd), and
 * the count of non-null ones. */
static int def_levels(const struct chunk_rd *rd, const uint8_t *p, size_t len,
                      size_t n, uint32_t **out, size_t *nonnull,
                      struct zerr *err) {
  uint32_t maxd = (uint32_t)rd->leaf->max_def;
  uint32_t *lev = malloc((n ? n : 1) * sizeof *lev);
  if (!lev)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = pqpage_rle(p, len, pqpage_bit_width(maxd), lev, n, NULL, err);
  size_t k = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (lev[i] > maxd)
      rc = zerr_set(err, EIO, "definition level %u above %u", lev[i], maxd);
    k += lev[i] == maxd;
  }
  if (rc < 0) {
    free(lev);
    return rc;
  }
  *out = lev;
  *nonnull = k;
  return 0;
}

/* A data page (v1 or v2) whose compressed body is [body, body+clen). */
static int read_data(struct chunk_rd *rd, const struct pq_page *pg,
                     const uint8_t *body, uint64_t left, struct zerr *err) {
  char nb[16];
  size_t nv = (size_t)pg->num_values;
  size_t clen = (size_t)pg->compressed_size,
         ulen = (size_t)pg->uncompressed_size;
  if (nv > left)
    return zerr_set(err, EIO, "page of %zu values, %llu rows left", nv,
                    (unsigned long long)left);
  int codec = rd->ch->codec, maxd = rd->leaf->max_def;
  uint8_t *page = NULL;
  uint32_t *lev = NULL;
  const uint8_t *lp = NULL, *v;
  size_t llen = 0, vlen, nonnull = nv;
  int rc = 0;
  if (pg->type == PQ_DATA_PAGE) {
    if (!(page = malloc(ulen ? ulen : 1)))
      return zerr_set(err, ENOMEM, "out of memory");
    rc = pqpage_decompress(codec, body, clen, page, ulen, err);
    v = page;
    vlen = ulen;
    if (rc == 0 && maxd > 0) {
      if (pg->def_encoding != PQ_RLE)
        rc = zerr_set(err, EIO, "definition levels in encoding %s",
                      pqmeta_encoding_name(pg->def_encoding, nb));
      else if (ulen < 4 || le32(page) > ulen - 4)
        rc = zerr_set(err, EIO, "definition levels run past the page");
      else {
        lp = page + 4;
        llen = le32(page);
        v = lp + llen;
        vlen = ulen - 4 - llen;
      }
    }
  } else {
    size_t lv = (size_t)pg->def_len + (size_t)pg->rep_len;
    if (pg->rep_len)
      return zerr_set(err, EIO, "repetition levels in a flat column");
    if (pg->def_len && !maxd)
      return zerr_set(err, EIO, "definition levels in a required column");
    if (lv > clen || lv > ulen)
      return zerr_set(err, EIO, "levels of %zu bytes in a page of %zu", lv,
                      clen);
    lp = body;
    llen = (size_t)pg->def_len;
    v = body + lv;
    vlen = clen - lv;
    if (pg->is_compressed) {
      if (!(page = malloc(ulen - lv ? ulen - lv : 1)))
        return zerr_set(err, ENOMEM, "out of memory");
      rc = pqpage_decompress(codec, v, vlen, page, ulen - lv, err);
      v = page;
      vlen = ulen - lv;
    } else if (vlen != ulen - lv) {
      rc = zerr_set(err, EIO,
                    "uncompressed v2 page of %zu bytes, header "
                    "says %zu",
                    clen, ulen);
    }
  }
  if (rc == 0 && maxd > 0)
    rc = def_levels(rd, lp, llen, nv, &lev, &nonnull, err);
  if (rc == 0 && pg->type == PQ_DATA_PAGE_V2 &&
      (size_t)pg->num_nulls != nv - nonnull)
    rc = zerr_set(err, EIO, "page says %ld nulls, its levels %zu",
                  (long)pg->num_nulls, nv - nonnull);
  if (rc == 0)
    rc = page_values(rd, pg, lev, nv, nonnull, v, vlen, err);
  free(lev);
  free(page);
  return rc;
}

/* The pages of one column chunk, rows rows of the column from rd->row. */
static int read_chunk(struct chunk_rd *rd, uint64_t rows, struct zerr *err) {
  const struct pq_chunk *ch = rd->ch;
  const struct parquet_file *f = rd->f;
  if (ch->external)
    return zerr_set(err, EIO, "column data in another file");
  if (!pqpage_codec_supported(ch->codec)) /* its refusal names the codec */
    return pqpage_decompress(ch->codec, NULL, 0, NULL, 0, err);
  uint64_t start = (uint64_t)ch->data_page_offset, end;
  if (ch->dictionary_page_offset > 0 &&
      (uint64_t)ch->dictionary_page_offset < start)
    start = (uint64_t)ch->dictionary_page_offset;
  if (start < 4 || start > f->meta_start ||
      (uint64_t)ch->total_compressed_size > f->meta_start - start)
    return zerr_set(err, EIO, "pages at %llu (%lld bytes) outside the data",
                    (unsigned long long)start,
                    (long long)ch->total_compressed_size);
  end = start + (uint64_t)ch->total_compressed_size;
  uint64_t left = rows, pos = start;
  int seen_data = 0;
  while (left > 0) {
    struct pq_page pg;
    if (pos >= end)
      return zerr_set(err, EIO, "pages end after %llu of %llu rows",
                      (unsigned long long)(rows - left),
                      (unsigned long long)rows);
    ZTRY(pqmeta_page(f->data + pos, (size_t)(end - pos), &pg, err));
    uint64_t body = pos + pg.header_len;
    if ((uint64_t)pg.compressed_size > end - body)
      return zerr_set(err, EIO, "page at %llu runs past its column chunk",
                      (unsigned long long)pos);
    if ((size_t)pg.uncompressed_size > f->lim.max_page ||
        (size_t)pg.compressed_size > f->lim.max_page)
      return zerr_set(err, EIO, "page at %llu larger than %zu bytes",
                      (unsigned long long)pos, f->lim.max_page);
    if (pg.type == PQ_DICTIONARY_PAGE) {
      if (seen_data || rd->d.have)
        return zerr_set(err, EIO, "a second or late dictionary page");
      uint8_t *page = malloc(pg.uncompressed_size ? pg.uncompressed_size : 1);
      if (!page)
        return zerr_set(err, ENOMEM, "out of memory");
      int rc = pqpage_decompress(ch->codec, f->data + body,
                                 (size_t)pg.compressed_size, page,
                                 (size_t)pg.uncompressed_size, err);
      if (rc < 0) {
        free(page);
        return rc;
      }
      ZTRY(read_dict(rd, &pg, page, err));
    } else if (pg.type == PQ_DATA_PAGE || pg.type == PQ_DATA_PAGE_V2) {
      ZTRY(read_data(rd, &pg, f->data + body, left, err));
      left -= (uint64_t)pg.num_values;
      seen_data = 1;
    } else if (pg.type != PQ_INDEX_PAGE) {
      return zerr_set(err, EIO, "page of unknown type %ld", (long)pg.type);
    }
    pos = body + (uint64_t)pg.compressed_size;
  }
  return 0;
}

/* Free a dictionary's parts. */
static void dict_clear(struct dict *d) {
  free(d->page);
  free(d->ints);
  free(d->bstart);
  free(d->blen);
  memset(d, 0, sizeof *d);
}

/* A new empty column of n rows. */
static struct parquet_col *col_new(int type, uint64_t n) {
  struct parquet_col *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->type = type;
  c->n = n;
  c->isnull = calloc(n ? n : 1, 1);
  if (type == PQ_BYTE_ARRAY)
    c->off = calloc(n + 1, sizeof *c->off);
  else
    c->ints = calloc(n ? n : 1, sizeof *c->ints);
  if (!c->isnull || (!c->off && !c->ints)) {
    parquet_col_free(c);
    return NULL;
  }
  return c;
}

int parquet_read(const struct parquet_file *f, int col,
                 struct parquet_col **out, struct zerr *err) {
  char nb[16];
  if (col < 0 || (uint32_t)col >= f->nleaves)
    return zerr_set(err, EINVAL, "no column %d", col);
  const struct pq_leaf *l = &f->leaves[col];
  const char *tn = pqmeta_type_name(l->type, nb);
  if (l->depth != 1 || l->max_rep > 0)
    return zerr_set(err, EIO,
                    "column '%.*s': nested or repeated columns are "
                    "not supported",
                    (int)l->top.len, l->top.p);
  if (l->type != PQ_INT32 && l->type != PQ_INT64 && l->type != PQ_BYTE_ARRAY)
    return zerr_set(err, EIO, "column '%.*s': type %s is not supported",
                    (int)l->top.len, l->top.p, tn);
  struct parquet_col *c = col_new(l->type, parquet_num_rows(f));
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  struct chunk_rd rd = {.f = f, .leaf = l, .c = c};
  zbuf_init(&rd.bytes, f->lim.max_bytes);
  int rc = 0;
  for (uint32_t g = 0; g < f->ft->nrg && rc == 0; g++) {
    rd.ch = &f->ft->rgs[g].cols[col];
    rc = read_chunk(&rd, (uint64_t)f->ft->rgs[g].num_rows, err);
    dict_clear(&rd.d);
    if (rc < 0)
      zerr_prefix(err, "column '%.*s', row group %u: ", (int)l->top.len,
                  l->top.p, g);
  }
  c->bytes = zbuf_steal(&rd.bytes, &c->nbytes);
  if (rc == 0 && !c->bytes && l->type == PQ_BYTE_ARRAY &&
      !(c->bytes = malloc(1))) /* never NULL: callers add offsets to it */
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc < 0) {
    parquet_col_free(c);
    return rc;
  }
  *out = c;
  return 0;
}
