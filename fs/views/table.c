/* table.c - a group's tables D.csv (see table.h). */
#include "table.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/util/zmath.h"
#include "../../src/zarr/cf.h"
#include "../../src/zarr/dtype_struct.h"
#include "../engine/cursor.h"
#include "../engine/region.h"
#include "layout.h"
#include "lsize.h"
#include "tblock.h"
#include "tmember.h"

int table_takes(const struct znode *n, const char *dim, uint64_t nrows) {
  const char *d = tmember_dim(n);
  return d && !strcmp(d, dim) && n->meta->shape[0] == nrows;
}

/* ---- the table: its columns ---- */

/* Release a table. */
static void table_destroy(struct zobj *o) {
  struct table *t = (struct table *)o;
  for (size_t i = 0; i < t->ncols; i++)
    free(t->cols[i].name);
  free(t->cols);
  free(t->header);
  free(t);
}

/* The dimension of table file `file` ("D.csv") into dim (TABLE_NAME_MAX+1
 * bytes); 0 when it names none. */
static int dim_of_file(const char *file, char *dim) {
  size_t fl = strlen(file), sl = strlen(TABLE_SUFFIX);
  if (fl <= sl || memcmp(file + fl - sl, TABLE_SUFFIX, sl) ||
      fl - sl > TABLE_NAME_MAX)
    return 0;
  memcpy(dim, file, fl - sl);
  dim[fl - sl] = '\0';
  return 1;
}

/* Memo key of kind `level` about table dim of group g: word0 (a tag, or a
 * block number) then the name's bytes, NUL-padded. */
static void table_key(struct memo_key *k, unsigned level, const struct znode *g,
                      const char *dim, uint64_t word0) {
  uint64_t w[MEMO_KEY_WORDS] = {0};
  size_t dl = strlen(dim);
  w[0] = word0;
  memcpy(w + 1, dim, dl);
  node_key(k, level, g, NULL, w, 1 + (int)((dl + 8) / 8));
}

/* What a table fill needs. */
struct tjob {
  struct engine *e;
  const struct znode *g;
  const char *dim;
};

/* Add column c of member mb. */
static void col_set(struct tcol *c, const struct tmember *mb) {
  const struct znode *n = mb->n->cf ? mb->n->cf : mb->n;
  const struct cf *cf = n->form.cf;
  enum dtype_kind k = n->form.dt.kind;
  c->n = n;
  /* strings from their chunks' bytes; joined characters from their text */
  c->raw = (k == DT_STRING || k == DT_BYTES) && !n->join;
  c->number = !c->raw && n->form.dt.size > 0;
  /* CF: unpacked or masked values are floats in xarray (cf.h) */
  c->floating = cf ? !cf->is_time && !cf->is_bool &&
                         (dtype_kind_is_float(cf->kind) || cf->has_scale ||
                          cf->has_offset || cf->nfill > 0)
                   : dtype_kind_is_float(k);
}

/* Columns of a member: one per leaf field of a structured array. */
static size_t member_cols(const struct tmember *mb) {
  const struct dtype *dt = &mb->n->meta->dtype;
  return dt->kind == DT_STRUCT && dt->st ? dt->st->nfields : 1;
}

/* Add the columns of structured member mb at c, named ARRAY.FIELD; the
 * number added, or -ENOMEM with err set. */
static int col_set_fields(struct tcol *c, const struct tmember *mb,
                          struct zerr *err) {
  const struct dtype_struct *st = mb->n->meta->dtype.st;
  size_t nl = strlen(mb->name);
  for (size_t k = 0; k < st->nfields; k++) {
    const struct dtype_field *fd = &st->fields[k];
    size_t fl = strlen(fd->name);
    char *name = malloc(nl + fl + 2);
    if (!name)
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy(name, mb->name, nl);
    name[nl] = '.';
    memcpy(name + nl + 1, fd->name, fl + 1);
    c[k] = (struct tcol){.name = name, .n = mb->n, .field = fd};
  }
  return (int)st->nfields;
}

/* Fill: the columns of table dim of g. -ENOENT when no array runs along
 * dim. */
static int table_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct tjob *j = ctx;
  struct tmembers m = {0};
  struct table *t = NULL;
  int rc = tmember_load(j->e, j->g, &m, err);
  size_t coord = SIZE_MAX, first = SIZE_MAX, ncols = 0;
  for (size_t i = 0; rc == 0 && i < m.n; i++) {
    if (!m.v[i].n || strcmp(m.v[i].dim, j->dim))
      continue;
    if (first == SIZE_MAX)
      first = i;
    if (!strcmp(m.v[i].name, j->dim))
      coord = i;
  }
  if (rc == 0 && first == SIZE_MAX)
    rc = zerr_set(err, ENOENT, "no such file");
  uint64_t nrows = 0;
  size_t maxcols = 0;
  for (size_t i = 0; rc == 0 && i < m.n; i++)
    if (m.v[i].n && !strcmp(m.v[i].dim, j->dim))
      maxcols += member_cols(&m.v[i]);
  if (rc == 0) {
    nrows = m.v[coord != SIZE_MAX ? coord : first].n->meta->shape[0];
    t = calloc(1, sizeof *t);
    if (t)
      t->cols = calloc(maxcols, sizeof *t->cols);
    if (!t || !t->cols) {
      free(t);
      t = NULL;
      rc = zerr_set(err, ENOMEM, "out of memory");
    } else {
      zobj_init(&t->obj, table_destroy);
      t->nrows = nrows;
    }
  }
  for (size_t p = 0; rc == 0 && p <= m.n; p++) {
    size_t i = p == 0 ? coord : p - 1; /* the coordinate, then the rest */
    if (i == SIZE_MAX || (p && i == coord) || !m.v[i].n ||
        !table_takes(m.v[i].n, j->dim, nrows))
      continue;
    if (m.v[i].n->meta->dtype.kind == DT_STRUCT && m.v[i].n->meta->dtype.st) {
      int k = col_set_fields(&t->cols[ncols], &m.v[i], err);
      if (k < 0) {
        for (size_t q = ncols; q < maxcols; q++)
          free(t->cols[q].name); /* calloc'd: NULL past those made */
        rc = k;
        break;
      }
      t->ncols = ncols += (size_t)k;
      continue;
    }
    col_set(&t->cols[ncols], &m.v[i]);
    t->cols[ncols].name = m.v[i].name;
    m.v[i].name = NULL; /* taken */
    t->ncols = ++ncols;
  }
  if (rc == 0)
    rc = tblock_header_make(t, err);
  tmember_free(&m);
  if (rc < 0) {
    if (t)
      zobj_put(&t->obj);
    return rc;
  }
  *obj = &t->obj;
  *cost = sizeof *t + t->ncols * sizeof *t->cols + t->header_len;
  return 0;
}

/* Table `file` of g: a pin (memo_release) whose object is a struct table;
 * -ENOENT when there is none. */
static int table_get(struct engine *e, const struct znode *g, const char *file,
                     struct memo_ref **out, struct zerr *err) {
  char dim[TABLE_NAME_MAX + 1];
  if (g->kind != ZNODE_GROUP || !dim_of_file(file, dim))
    return zerr_set(err, ENOENT, "no such file");
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE, g, dim, 1);
  struct tjob j = {e, g, dim};
  return memo_get(e->memo, &k, table_fill, &j, out, err);
}

/* ---- blocks ---- */

/* A block of rows, rendered. */
struct block_text {
  struct zobj obj;
  char *text;
  size_t len;
};

/* Release a block. */
static void block_destroy(struct zobj *o) {
  struct block_text *b = (struct block_text *)o;
  free(b->text);
  free(b);
}

/* What a block fill needs. */
struct bjob {
  struct engine *e;
  const struct znode *g;
  const char *dim;
  const struct table *t;
  uint64_t b;
  struct tpins *pins; /* the reader's (may be NULL) */
};

/* Tag of the value keys of block sizes (word0 = TAG + block): above the
 * layout's and the size's tags. */
#define BSIZE_TAG 16

/* Block b's text size when learned: 1 and *size, else 0. */
static int bsize_peek(struct engine *e, const struct znode *g, const char *dim,
                      uint64_t b, uint64_t *size) {
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, BSIZE_TAG + b);
  return memo_value_peek(e->memo, &k, size);
}

/* Fill: block j->b rendered; its size is learned on the way (a value that
 * outlives the block in the memo). */
static int block_fill(void *ctx, struct zobj **obj, size_t *cost,
                      struct zerr *err) {
  struct bjob *j = ctx;
  struct block_text *b = calloc(1, sizeof *b);
  if (!b)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&b->obj, block_destroy);
  int rc = engine_check_stop(j->e, err);
  if (rc == 0)
    rc = tblock_render(j->e, j->t, j->b, j->pins, &b->text, &b->len, err);
  if (rc < 0) {
    zobj_put(&b->obj);
    return rc;
  }
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, j->g, j->dim, BSIZE_TAG + j->b);
  memo_value_put(j->e->memo, &k, b->len);
  *obj = &b->obj;
  *cost = sizeof *b + b->len;
  return 0;
}

/* Block b of table t (dim of g), rendered with the reader's pins (may be
 * NULL) when it is not in the memo: a pin whose object is a struct
 * block_text. */
static int block_get(struct engine *e, const struct znode *g, const char *dim,
                     const struct table *t, uint64_t b, struct tpins *pins,
                     struct memo_ref **out, struct zerr *err) {
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_BLOCK, g, dim, b);
  struct bjob j = {e, g, dim, t, b, pins};
  return memo_get(e->memo, &k, block_fill, &j, out, err);
}

/* Block b's size: learned, else by rendering it (with pins). */
static int block_size(struct engine *e, const struct znode *g, const char *dim,
                      const struct table *t, uint64_t b, struct tpins *pins,
                      uint64_t *size, struct zerr *err) {
  if (bsize_peek(e, g, dim, b, size))
    return 0;
  struct memo_ref *ref;
  ZTRY(engine_check_stop(e, err));
  ZTRY(block_get(e, g, dim, t, b, pins, &ref, err));
  *size = ((const struct block_text *)memo_obj(ref))->len;
  memo_release(e->memo, ref);
  return 0;
}

/* ---- the layout ---- */

/* Where each block starts: off[nblk] is the table's size. */
struct table_layout {
  struct zobj obj;
  uint64_t nblk;
  uint64_t off[];
};

/* Release a layout. */
static void table_layout_destroy(struct zobj *o) { free(o); }

/* What a layout fill needs. */
struct ljob {
  struct engine *e;
  const struct znode *g;
  const char *dim;
  const struct table *t;
};

/* Blocks of t: the header is in block 0 even without rows. */
static uint64_t table_nblk(const struct table *t) {
  return t->nrows ? (t->nrows - 1) / TBLOCK_ROWS + 1 : 1;
}

/* The size of table t (dim of g) is known: kept as a value (tag 2), which
 * outlives the table's blocks and layout in the memo, and its block sizes
 * (off: where each block starts, else the learned ones, when every one
 * is) in the persistent index for the next mount's stat. The one place a
 * table's size is learned, by a layout, a reader reaching the end, or a
 * stat's bounded learning. */
static void table_size_learned(struct engine *e, const struct znode *g,
                               const char *dim, const struct table *t,
                               const uint64_t *off, uint64_t size) {
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, 2);
  memo_value_put(e->memo, &k, size);
  uint64_t nb = table_nblk(t);
  uint64_t *sz = e->sizeidx ? malloc((size_t)nb * sizeof *sz) : NULL;
  int ok = sz != NULL;
  for (uint64_t b = 0; ok && b < nb; b++)
    ok = off ? (sz[b] = off[b + 1] - off[b], 1)
             : bsize_peek(e, g, dim, b, &sz[b]);
  if (ok)
    lsize_table_keep(e, g, dim, t, sz, nb);
  free(sz);
}

/* Tag of the value key of a table's size claimed by the persistent
 * index's record (fs/views/lsize.h), not learned by this mount. */
#define CLAIM_TAG 4

/* The size of t (dim of g) as its record in the persistent index claims
 * it: 1 and *size (and remembered as a claim), else 0. */
static int table_claim(struct engine *e, const struct znode *g, const char *dim,
                       const struct table *t, uint64_t *size) {
  int ok = lsize_table_claim(e, g, dim, t, table_nblk(t), size);
  if (ok) {
    struct memo_key k;
    table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, CLAIM_TAG);
    memo_value_put(e->memo, &k, *size);
  }
  return ok;
}

/* Fill: render every block not learned yet once (in order, each column's
 * unit pinned from one block to the next), keep where each starts; the
 * size is also kept as a value, which outlives the layout in the memo. */
static int table_layout_fill(void *ctx, struct zobj **obj, size_t *cost,
                             struct zerr *err) {
  struct ljob *j = ctx;
  uint64_t nb = table_nblk(j->t);
  struct table_layout *l =
      malloc(sizeof *l + (size_t)(nb + 1) * sizeof *l->off);
  if (!l)
    return zerr_set(err, ENOMEM, "out of memory");
  zobj_init(&l->obj, table_layout_destroy);
  l->nblk = nb;
  l->off[0] = 0;
  struct tpins *pins = tpins_new(j->t);
  int rc = 0;
  for (uint64_t b = 0; rc == 0 && b < nb; b++) {
    uint64_t bs;
    rc = block_size(j->e, j->g, j->dim, j->t, b, pins, &bs, err);
    l->off[b + 1] = l->off[b] + bs;
  }
  tpins_free(j->e, pins);
  if (rc < 0) {
    zobj_put(&l->obj);
    return rc;
  }
  table_size_learned(j->e, j->g, j->dim, j->t, l->off, l->off[nb]);
  *obj = &l->obj;
  *cost = sizeof *l + (size_t)(nb + 1) * sizeof *l->off;
  return 0;
}

/* ---- tables whose every row is the same ---- */

/* Tag of the value key of a table's row length (word0): 0 when rows
 * differ, else the length of every row + 1. */
#define ROWLEN_TAG 3

/* Fill: when no column has a stored chunk (each shows its fill value on
 * every row: a never-written array of 2^40 elements), every row is the
 * same, so the table's size and where each block starts are arithmetic,
 * learned from block 0 alone. A structured column is left out of this
 * (its fill records are rendered chunk by chunk), as is one whose
 * presence cannot be listed. */
static int rowlen_fill(void *ctx, uint64_t *value, struct zerr *err) {
  const struct ljob *j = ctx;
  const struct table *t = j->t;
  *value = 0;
  for (size_t c = 0; c < t->ncols; c++) {
    struct region r;
    uint64_t np = 1;
    int rc = t->cols[c].field ? 0 : region_of_array(t->cols[c].n, &r, err);
    if (rc == 0 && !t->cols[c].field)
      rc = layout_stored_count(j->e, t->cols[c].n, &r, &np, err);
    if (rc < 0 && zerr_is_transient(-rc))
      return rc;
    zerr_clear(err); /* rendered rows will say what fails */
    if (rc < 0 || np)
      return 0;
  }
  uint64_t rows = t->nrows < TBLOCK_ROWS ? t->nrows : TBLOCK_ROWS;
  struct memo_ref *ref;
  if (!rows)
    return 0;
  ZTRY(block_get(j->e, j->g, j->dim, t, 0, NULL, &ref, err));
  uint64_t body = ((const struct block_text *)memo_obj(ref))->len;
  memo_release(j->e->memo, ref);
  body -= t->header_len;
  if (body % rows == 0)
    *value = body / rows + 1;
  return 0;
}

/* The length of every row of t (dim of g) when they are all the same,
 * else 0. */
static int table_row_len(struct engine *e, const struct znode *g,
                         const char *dim, const struct table *t, uint64_t *len,
                         struct zerr *err) {
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, ROWLEN_TAG);
  struct ljob j = {e, g, dim, t};
  uint64_t v;
  ZTRY(memo_value(e->memo, &k, rowlen_fill, &j, &v, err));
  *len = v ? v - 1 : 0;
  return 0;
}

/* Size of t whose rows are each rl bytes; 0 when it does not fit 64 bits
 * (nothing that long can be shown: the size is then learned as others'). */
static uint64_t uniform_size(const struct table *t, uint64_t rl) {
  uint64_t body;
  if (zmul_u64(t->nrows, rl, &body) < 0 || body > UINT64_MAX - t->header_len)
    return 0;
  return t->header_len + body;
}

/* The table and its layout: two pins (release both). */
static int table_open(struct engine *e, const struct znode *g, const char *file,
                      char *dim, struct memo_ref **tref, struct memo_ref **lref,
                      struct zerr *err) {
  ZTRY(table_get(e, g, file, tref, err));
  dim_of_file(file, dim);
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, 1);
  struct ljob j = {e, g, dim, (const struct table *)memo_obj(*tref)};
  int rc = memo_get(e->memo, &k, table_layout_fill, &j, lref, err);
  if (rc < 0)
    memo_release(e->memo, *tref);
  return rc;
}

/* ---- the API ---- */

int table_list(struct engine *e, const struct znode *g, table_name_cb cb,
               void *ud, struct zerr *err) {
  if (g->kind != ZNODE_GROUP)
    return 0;
  struct tmembers m = {0};
  const char **d = NULL;
  long nd = 0;
  int rc = tmember_load(e, g, &m, err);
  if (rc == 0 && (nd = tmember_dims(&m, &d, err)) < 0)
    rc = (int)nd;
  for (long i = 0; rc == 0 && i < nd; i++) {
    char file[TABLE_NAME_MAX + sizeof TABLE_SUFFIX];
    snprintf(file, sizeof file, "%s%s", d[i], TABLE_SUFFIX);
    if (cb(ud, file))
      break;
  }
  free(d);
  tmember_free(&m);
  return rc;
}

/* Table `file` of g: 1 and its rows in *nrows (may be NULL), 0 when g
 * has no such table, or a transient failure. */
static int table_find(struct engine *e, const struct znode *g, const char *file,
                      uint64_t *nrows, struct zerr *err) {
  struct memo_ref *ref;
  int rc = table_get(e, g, file, &ref, err);
  if (rc == -ENOENT) {
    zerr_clear(err);
    return 0;
  }
  if (rc < 0)
    return rc;
  if (nrows)
    *nrows = ((const struct table *)memo_obj(ref))->nrows;
  memo_release(e->memo, ref);
  return 1;
}

int table_rows(struct engine *e, const struct znode *g, const char *dim,
               uint64_t *nrows, struct zerr *err) {
  char file[TABLE_NAME_MAX + sizeof TABLE_SUFFIX];
  if (!*dim || strlen(dim) > TABLE_NAME_MAX || strchr(dim, '/'))
    return 0;
  snprintf(file, sizeof file, "%s%s", dim, TABLE_SUFFIX);
  return table_find(e, g, file, nrows, err);
}

int table_exists(struct engine *e, const struct znode *g, const char *file,
                 struct zerr *err) {
  return table_find(e, g, file, NULL, err);
}

/* The table of file, and its arithmetic size (0: not arithmetic): a pin
 * in *tref (release it). */
static int table_uniform(struct engine *e, const struct znode *g,
                         const char *file, char *dim, struct memo_ref **tref,
                         uint64_t *usize, struct zerr *err) {
  ZTRY(table_get(e, g, file, tref, err));
  dim_of_file(file, dim);
  const struct table *t = (const struct table *)memo_obj(*tref);
  uint64_t rl;
  int rc = table_row_len(e, g, dim, t, &rl, err);
  if (rc < 0)
    memo_release(e->memo, *tref);
  else
    *usize = rl ? uniform_size(t, rl) : 0;
  return rc;
}

int table_size(struct engine *e, const struct znode *g, const char *file,
               uint64_t *size, struct zerr *err) {
  char dim[TABLE_NAME_MAX + 1];
  struct memo_ref *tref, *lref;
  uint64_t usize;
  ZTRY(table_uniform(e, g, file, dim, &tref, &usize, err));
  memo_release(e->memo, tref);
  if (usize) {
    *size = usize;
    return 0;
  }
  ZTRY(table_open(e, g, file, dim, &tref, &lref, err));
  const struct table_layout *l = (const struct table_layout *)memo_obj(lref);
  *size = l->off[l->nblk];
  memo_release(e->memo, lref);
  memo_release(e->memo, tref);
  return 0;
}

int table_size_deferred(struct engine *e, const struct znode *g,
                        const char *file, struct zerr *err) {
  char dim[TABLE_NAME_MAX + 1];
  struct memo_ref *tref;
  uint64_t usize, fields, v;
  ZTRY(table_uniform(e, g, file, dim, &tref, &usize, err));
  const struct table *t = (const struct table *)memo_obj(tref);
  int big = zmul_u64(t->nrows, t->ncols ? t->ncols : 1, &fields) < 0 ||
            fields > TABLE_EXACT_FIELDS;
  memo_release(e->memo, tref);
  /* a size the index claims: shown, and read with direct I/O, so that
   * the text read is the truth even where the claim is not */
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, 2);
  if (!usize && !memo_value_peek(e->memo, &k, &v)) {
    table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, CLAIM_TAG);
    if (memo_value_peek(e->memo, &k, &v))
      return 1;
  }
  return !usize && big;
}

static int table_learn(struct engine *e, const struct znode *g, const char *dim,
                       const struct table *t, uint64_t *size, struct zerr *err);

int table_size_stat(struct engine *e, const struct znode *g, const char *file,
                    uint64_t *size, struct zerr *err) {
  int k = table_size_known(e, g, file, size, err);
  if (k != 0)
    return k < 0 ? k : 0;
  char dim[TABLE_NAME_MAX + 1];
  struct memo_ref *tref;
  ZTRY(table_get(e, g, file, &tref, err));
  dim_of_file(file, dim);
  const struct table *t = (const struct table *)memo_obj(tref);
  if (table_claim(e, g, dim, t, size)) /* the next mount: the index's */
    k = 1;
  else if ((k = table_size_deferred(e, g, file, err)) == 0) {
    memo_release(e->memo, tref);
    return table_size(e, g, file, size, err);
  } else if (k > 0) {
    /* deferred: what a bounded time learns, else 0 (unknown; the file is
     * read with direct I/O) */
    if ((k = table_learn(e, g, dim, t, size, err)) == 0)
      *size = 0;
  }
  memo_release(e->memo, tref);
  return k < 0 ? k : 0;
}

int table_size_known(struct engine *e, const struct znode *g, const char *file,
                     uint64_t *size, struct zerr *err) {
  (void)err;
  char dim[TABLE_NAME_MAX + 1];
  if (g->kind != ZNODE_GROUP || !dim_of_file(file, dim))
    return 0;
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, 2);
  if (memo_value_peek(e->memo, &k, size))
    return 1;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, CLAIM_TAG);
  if (memo_value_peek(e->memo, &k, size))
    return 1; /* the persistent index's claim */
  /* every row the same, found out already: arithmetic */
  struct memo_ref *tref;
  uint64_t rl;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, ROWLEN_TAG);
  if (!memo_value_peek(e->memo, &k, &rl) || rl <= 1)
    return 0;
  table_key(&k, ELEVEL_TABLE, g, dim, 1);
  if (!memo_peek(e->memo, &k, &tref))
    return 0;
  *size = uniform_size((const struct table *)memo_obj(tref), rl - 1);
  memo_release(e->memo, tref);
  return *size != 0;
}

/* ---- reads ---- */

/* What an open table file keeps in its cursor between reads
 * (cursor_ext_swap): its columns' pins, and the last block it read and
 * where that starts, so a reader in order finds its next block from
 * there rather than from the nearest remembered start. */
struct treader {
  struct tpins *pins;
  struct memo_ref *blk; /* block b, pinned: the next read most often
                           starts in it (NULL: none) */
  uint64_t b, start;    /* block b starts at start; b == UINT64_MAX: none */
};

/* Free a reader's state (cursor_ext_swap's free_fn). */
static void treader_free(struct engine *e, void *p) {
  struct treader *r = p;
  memo_release(e->memo, r->blk);
  tpins_free(e, r->pins);
  free(r);
}

/* Copy from block b on, which starts at `start`, into dst: up to len
 * bytes at off (>= start), rendering blocks with pins; first (taken
 * over, or NULL) is block b pinned already. The bytes copied; *last
 * (the caller's) pins the last block read, *lb and *ls say which and
 * where it starts. When the copy runs past the last block, the table's
 * size is learned. */
static long read_blocks(struct engine *e, const struct znode *g,
                        const char *dim, const struct table *t,
                        struct tpins *pins, uint64_t b, uint64_t start,
                        struct memo_ref *first, uint64_t off, size_t len,
                        char *dst, struct memo_ref **last, uint64_t *lb,
                        uint64_t *ls, struct zerr *err) {
  uint64_t nb = table_nblk(t);
  size_t done = 0;
  *last = NULL;
  for (; b < nb && done < len; b++) {
    struct memo_ref *bref = first;
    first = NULL;
    int rc = bref ? 0 : block_get(e, g, dim, t, b, pins, &bref, err);
    if (rc < 0) {
      memo_release(e->memo, *last);
      *last = NULL;
      return rc;
    }
    const struct block_text *bl = (const struct block_text *)memo_obj(bref);
    if (off + done < start + bl->len) {
      size_t in = (size_t)(off + done - start), n = bl->len - in;
      if (n > len - done)
        n = len - done;
      memcpy(dst + done, bl->text + in, n);
      done += n;
    }
    memo_release(e->memo, *last);
    *last = bref;
    *lb = b;
    *ls = start;
    start += bl->len;
  }
  memo_release(e->memo, first);
  if (b == nb && done < len) /* the end: the size is known now */
    table_size_learned(e, g, dim, t, NULL, start);
  return (long)done;
}

/* Blocks between two remembered block starts (walk_blocks). */
#define WALK_STRIDE 64
/* Tag of the value keys of remembered block starts (word0 = TAG | block). */
#define START_TAG (UINT64_C(1) << 63)

/* From block *k starting at *pos (both known), leap over the remembered
 * starts of later blocks that lie at or before off. */
static void walk_leap(struct engine *e, const struct znode *g, const char *dim,
                      const struct table *t, uint64_t off, uint64_t *k,
                      uint64_t *pos) {
  uint64_t nb = table_nblk(t), cs;
  struct memo_key ck;
  for (uint64_t q = (*k / WALK_STRIDE + 1) * WALK_STRIDE; q < nb;
       q += WALK_STRIDE) {
    table_key(&ck, ELEVEL_TABLE_LAYOUT, g, dim, START_TAG | q);
    if (!memo_value_peek(e->memo, &ck, &cs) || cs > off)
      break;
    *k = q;
    *pos = cs;
  }
}

/* Where the block holding off starts, by block sizes learned so far
 * (blocks not learned yet are rendered, with pins): for readers that
 * come before any layout, so `head` renders the first blocks only. The
 * walk starts at block k, which starts at pos, then leaps over
 * remembered starts: the start of every WALK_STRIDE-th block is
 * remembered on the way, so a reader going through a long table walks
 * from the nearest one, not from the first block. *b is the block count
 * when off lies past the end (the table's size is then learned). With a
 * deadline (stats_now_ns; 0: none) the walk stops once past it: 1, with
 * *b and *start the block it reached; else 0. *held (the caller's, may
 * be NULL) pins block *b when the walk rendered it. */
static int walk_blocks(struct engine *e, const struct znode *g, const char *dim,
                       const struct table *t, struct tpins *pins, uint64_t k,
                       uint64_t pos, uint64_t off, uint64_t deadline,
                       uint64_t *b, uint64_t *start, struct memo_ref **held,
                       struct zerr *err) {
  uint64_t nb = table_nblk(t);
  int late = 0;
  *held = NULL;
  walk_leap(e, g, dim, t, off, &k, &pos);
  for (; k < nb; k++) {
    uint64_t bs;
    if (k && k % WALK_STRIDE == 0) {
      struct memo_key ck;
      table_key(&ck, ELEVEL_TABLE_LAYOUT, g, dim, START_TAG | k);
      memo_value_put(e->memo, &ck, pos);
    }
    if (deadline && stats_now_ns() > deadline) {
      late = 1;
      break;
    }
    struct memo_ref *ref = NULL;
    if (!bsize_peek(e, g, dim, k, &bs)) {
      *b = k; /* where a failure stops it */
      *start = pos;
      ZTRY(engine_check_stop(e, err));
      ZTRY(block_get(e, g, dim, t, k, pins, &ref, err));
      bs = ((const struct block_text *)memo_obj(ref))->len;
    }
    if (off < pos + bs) { /* the reader's block: kept for its read */
      *held = ref;
      break;
    }
    memo_release(e->memo, ref);
    pos += bs;
  }
  if (k == nb)
    table_size_learned(e, g, dim, t, NULL, pos);
  *b = k;
  *start = pos;
  return late;
}

long table_read(struct engine *e, const struct znode *g, const char *file,
                uint64_t off, size_t len, char *dst, struct view_cursor *c,
                struct zerr *err) {
  char dim[TABLE_NAME_MAX + 1];
  struct memo_ref *tref, *lref = NULL;
  ZTRY(table_get(e, g, file, &tref, err));
  dim_of_file(file, dim);
  const struct table *t = (const struct table *)memo_obj(tref);
  struct treader *rd = cursor_ext_swap(c, NULL, NULL);
  struct memo_ref *first = NULL;
  if (!rd && (rd = malloc(sizeof *rd))) { /* NULL: read without pins */
    rd->blk = NULL;
    rd->b = UINT64_MAX;
    rd->start = 0;
    if (!(rd->pins = tpins_new(t))) {
      free(rd);
      rd = NULL;
    }
  }
  struct memo_key k;
  table_key(&k, ELEVEL_TABLE_LAYOUT, g, dim, 1);
  uint64_t b = 0, start = 0, rl;
  int rc = table_row_len(e, g, dim, t, &rl, err);
  uint64_t usize = rc == 0 && rl ? uniform_size(t, rl) : 0;
  if (rc == 0 && usize) { /* block b > 0 starts after b * TBLOCK_ROWS rows */
    uint64_t bl = TBLOCK_ROWS * rl;
    b = off < t->header_len + bl ? 0 : (off - t->header_len) / bl;
    start = b ? t->header_len + b * bl : 0;
    if (off >= usize) {
      b = table_nblk(t);
      start = usize;
    }
  } else if (rc == 0 && memo_peek(e->memo, &k, &lref)) {
    /* the last block starting at or before off */
    const struct table_layout *l = (const struct table_layout *)memo_obj(lref);
    uint64_t lo = zfloor_u64(l->off, l->nblk, off);
    b = off < l->off[l->nblk] ? lo : l->nblk;
    start = l->off[b < l->nblk ? b : l->nblk];
    memo_release(e->memo, lref);
  } else if (rc == 0) {
    uint64_t k0 = 0, p0 = 0; /* from the reader's last block when before */
    if (rd && rd->b != UINT64_MAX && rd->start <= off) {
      k0 = rd->b;
      p0 = rd->start;
    }
    rc = walk_blocks(e, g, dim, t, rd ? rd->pins : NULL, k0, p0, off, 0, &b,
                     &start, &first, err);
  }
  if (!first && rd && rd->blk && rd->b == b) { /* the block it read last */
    first = rd->blk;
    rd->blk = NULL;
  }
  uint64_t lb = UINT64_MAX, ls = 0;
  struct memo_ref *last = NULL;
  long n = rc < 0 ? rc
                  : read_blocks(e, g, dim, t, rd ? rd->pins : NULL, b, start,
                                first, off, len, dst, &last, &lb, &ls, err);
  if (rc < 0)
    memo_release(e->memo, first);
  if (rd && last) {
    memo_release(e->memo, rd->blk);
    rd->blk = last;
    rd->b = lb;
    rd->start = ls;
  } else {
    memo_release(e->memo, last);
  }
  struct treader *old = cursor_ext_swap(c, rd, treader_free);
  if (old)
    treader_free(e, old);
  memo_release(e->memo, tref);
  return n;
}

/* See table.h. The block that fails is where a walk to off stops. */
long table_read_before_failure(struct engine *e, const struct znode *g,
                               const char *file, uint64_t off, size_t len,
                               char *dst, struct zerr *err) {
  char dim[TABLE_NAME_MAX + 1];
  struct memo_ref *tref, *held = NULL;
  ZTRY(table_get(e, g, file, &tref, err));
  dim_of_file(file, dim);
  const struct table *t = (const struct table *)memo_obj(tref);
  uint64_t b = 0, start = 0;
  long rc =
      walk_blocks(e, g, dim, t, NULL, 0, 0, off, 0, &b, &start, &held, err);
  memo_release(e->memo, held);
  if (rc >= 0) /* off's block renders: nothing failed before off */
    rc = zerr_set(err, EIO, "table: no failure before the offset");
  else if (rc != -EINTR && off >= start)
    rc = tblock_before_failure(e, t, b, off - start, len, dst, err);
  memo_release(e->memo, tref);
  return rc;
}

/* Bytes the decoded columns and the text of t take, about (8 and 16 a
 * field): whether a stat's learning leaves them in the cache for the
 * reader that follows. */
static uint64_t table_bytes_guess(const struct table *t) {
  uint64_t fields;
  if (zmul_u64(t->nrows, t->ncols ? t->ncols : 1, &fields) < 0 ||
      fields > UINT64_MAX / 24)
    return UINT64_MAX;
  return fields * 24;
}

/* A stat's bounded learning of deferred table t's size: blocks walked in
 * order (each column's unit pinned from one block to the next) for at
 * most e->table_learn_ns, from where an earlier stat or reader stopped
 * (remembered block starts and sizes), when its columns and text fit
 * half the cache, so the reader that follows finds what was decoded
 * rather than decode it again. 1 with *size when the walk reached the
 * end, 0 when it stopped before (or did not start), or a negative errno. */
static int table_learn(struct engine *e, const struct znode *g, const char *dim,
                       const struct table *t, uint64_t *size,
                       struct zerr *err) {
  if (!e->table_learn_ns || table_bytes_guess(t) > e->cache_size / 2)
    return 0;
  struct tpins *pins = tpins_new(t);
  uint64_t b, start;
  struct memo_ref *held;
  int rc =
      walk_blocks(e, g, dim, t, pins, 0, 0, UINT64_MAX,
                  stats_now_ns() + e->table_learn_ns, &b, &start, &held, err);
  memo_release(e->memo, held);
  tpins_free(e, pins);
  if (rc != 0)
    return rc < 0 ? rc : 0;
  *size = start;
  return 1;
}
