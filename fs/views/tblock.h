/* tblock.h - one block of rows of a table D.csv (fs/views/table.h) rendered:
 * each column's fields read from its units (fs/engine/unit.h: the text of
 * values.txt or values.cf.txt, one line a row) or, for strings and bytes,
 * from its chunks decoded with their element bytes as stored (memo level
 * ELEVEL_TABLE, so newlines stay newlines), then the rows written field
 * by field as fs/text/csvfield.h says. A structured array gives one column per
 * leaf field, each read from its chunks' records (fs/text/rstruct.h). Also the
 * table's description that fs/views/table.c makes and this module reads. Holds
 * no lock of its own (the memo's); FUSE-free. */
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

/* Write block b of t (rows [b*TBLOCK_ROWS, ...), the header first in
 * block 0) into *out (malloc'd, the caller's; *len bytes). A chunk that
 * fails to decode is logged, naming its key. */
int tblock_render(struct engine *e, const struct table *t, uint64_t b,
                  char **out, size_t *len, struct zerr *err);

#endif
