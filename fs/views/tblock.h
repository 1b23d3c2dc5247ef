/* tblock.h - one block of rows of a table D.csv (fs/views/table.h) rendered:
 * each column's fields made from its units, then the rows written field
 * by field as fs/text/csvfield.h says. A column of fixed-size elements
 * (numbers, times, booleans) renders its fields straight from the
 * unit's decoded elements (memo level ELEVEL_TABLE): only the rows of
 * the block are rendered, never a unit's whole text, so the first block
 * costs one decode per column and no more. Strings and bytes come from
 * their chunks decoded with their element bytes as stored (ELEVEL_TABLE,
 * so newlines stay newlines); a structured array gives one column per
 * leaf field, each read from its chunks' records (fs/text/rstruct.h); any
 * other column reads the text of its units (fs/engine/unit.h). Also the table's
 * description that fs/views/table.c makes and this module reads.
 *
 * A reader going through a table renders its blocks one after another
 * with one struct tpins: the unit or chunk each column read last stays
 * pinned there (outside the cache's budget, as what a reader uses right
 * now), so the next block finds it decoded whatever the cache's size and
 * every chunk is decoded once per pass over the table; a pin is let go
 * before its column's next unit is decoded, so a reader holds one unit
 * per column. Holds no lock of its own (the memo's); FUSE-free. */
#ifndef ZARRFS_TBLOCK_H
#define ZARRFS_TBLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/engine.h"
#include "../engine/node.h"

struct dtype_field;

/* Rows rendered together. */
#define TBLOCK_ROWS 4096

/* A column of a table. */
struct tcol {
  char *name;
  const struct znode *n; /* the node whose text the column shows: the
                            array's CF node when it has one */
  int raw;               /* strings and bytes: the element bytes as stored,
                            read from chunks decoded for the table */
  int number;            /* fixed-size elements: `nan` and `NaT` are empty */
  int floating;          /* values are floats (as xarray decodes them):
                            integral ones get `.0` */
  const struct dtype_field *field; /* a field of a 1-D structured array
                                     (borrowed from n's metadata): the
                                     column shows it, read from chunks'
                                     records; NULL otherwise */
};

/* A table: its rows, its columns in order, its header row (a memo
 * object, immutable once made). */
struct table {
  struct zobj obj;
  uint64_t nrows;
  size_t ncols;
  struct tcol *cols;
  char *header; /* the header row, with its newline */
  size_t header_len;
};

/* What one reader keeps between the blocks it renders (see above): a
 * pin per column and the buffers a block is made in. Used by one thread
 * at a time. */
struct tpins;

/* Pins for the columns of t (NULL when out of memory: blocks are then
 * rendered without keeping anything). Owned by the caller (tpins_free). */
struct tpins *tpins_new(const struct table *t);
/* Release every pin and buffer; NULL-safe. */
void tpins_free(struct engine *e, struct tpins *p);

/* Write block b of t (rows [b*TBLOCK_ROWS, ...), the header first in
 * block 0) into *out (malloc'd, the caller's; *len bytes). pins (may be
 * NULL) are the reader's: what the columns read is kept there. A chunk
 * that fails to decode is logged, naming its key. */
int tblock_render(struct engine *e, const struct table *t, uint64_t b,
                  struct tpins *pins, char **out, size_t *len,
                  struct zerr *err);

/* The bytes at `at` of block b's text before its first row that fails
 * (its first rows rendered alone, kept nowhere) into dst (len at most):
 * how many, or -EIO when none. */
long tblock_before_failure(struct engine *e, const struct table *t, uint64_t b,
                           uint64_t at, size_t len, char *dst,
                           struct zerr *err);

/* The header row of t (its column names as CSV fields, with its newline)
 * into t->header (owned by t): 0, or -ENOMEM with err set. */
int tblock_header_make(struct table *t, struct zerr *err);

#endif
