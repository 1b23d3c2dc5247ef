/* table.h - a group's tables: for every dimension name D of the group's
 * 1-D arrays (V3 `dimension_names`, V2 `_ARRAY_DIMENSIONS`), the file
 * D.csv (RFC 4180, UTF-8): a header row of column names, then one row per
 * index along D. The columns: the coordinate array named D first (when
 * the group has one along D), then every other 1-D array along D in name
 * order. The table has as many rows as D is long: the coordinate's
 * length, or without a coordinate the first such array's (in name
 * order); 1-D arrays along D of another length, and arrays whose views
 * cannot be read, are left out. Values are those of values.cf.txt where
 * the array has CF attributes (src/zarr/cf.h), else of values.txt, each
 * written as fs/text/csvfield.h says; strings are the bytes as stored
 * (newlines kept), bytes hex. A row of one empty field is written `""`,
 * so that readers that skip blank lines do not drop it. A 1-D structured
 * array gives one column per leaf field, named ARRAY.FIELD (fs/text/rstruct.h),
 * at the array's place in the order.
 *
 * The text is rendered in blocks of TBLOCK_ROWS rows (fs/views/tblock.h), each
 * a memo object (ELEVEL_TABLE_BLOCK) made from its columns' units, whose size
 * is learned as a value when it is rendered. Blocks are rendered in order by
 * one reader at a time with its pins (struct tpins: each column's unit kept
 * from one block to the next; an open file keeps them in its cursor between
 * reads, with the block it read last), so a pass over the table decodes each
 * chunk once whatever the cache's size, and holds one unit per column. The
 * layout (where every block starts, ELEVEL_TABLE_LAYOUT) renders each block not
 * learned yet and keeps only their sizes, so memory stays within the memo's
 * budget whatever the table's length. A read uses the layout when there is one,
 * else walks the learned block sizes from its reader's last block or the
 * nearest remembered start, rendering only the blocks it reaches (`head` costs
 * the first block). The exact size needs every block rendered once,
 * unless no column has a stored chunk: then every row is the same (each
 * column's fill value) and the size and where each block starts are
 * arithmetic, learned from block 0 (a never-written array of 2^40
 * elements costs one block). With lazy sizes it is shown once known.
 * With exact sizes, a table that is not arithmetic and has more than
 * TABLE_EXACT_FIELDS fields is deferred: read with direct I/O, and its
 * stat shows the size once known, else what a bounded learning finds
 * (table_size_stat), else 0, so no stat waits long on a table.
 *
 * Members are what the store lists and consolidated metadata names; each
 * member's metadata is read once (the node table). Dimension names longer
 * than TABLE_NAME_MAX bytes, empty, or holding '/' have no table. Holds
 * no lock of its own (the memo's); FUSE-free. */
#ifndef ZARRFS_TABLE_H
#define ZARRFS_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "../engine/engine.h"
#include "../engine/node.h"
#include "tmember.h"

struct view_cursor;

#define TABLE_SUFFIX ".csv"
/* Longest dimension name with a table (its bytes go into memo keys). */
#define TABLE_NAME_MAX TMEMBER_DIM_MAX

/* Called once per table file name ("D.csv"); non-zero stops. */
typedef int (*table_name_cb)(void *ud, const char *file);

/* The table files of group g, in strcmp order of their dimension names.
 * 0, or a transient failure (-ENOMEM, -EINTR, ...). */
int table_list(struct engine *e, const struct znode *g, table_name_cb cb,
               void *ud, struct zerr *err);

/* Is `file` ("D.csv") a table of group g? 1, 0, or a transient failure. */
int table_exists(struct engine *e, const struct znode *g, const char *file,
                 struct zerr *err);

/* The rows of D.csv for dimension dim of group g: 1 and *nrows when g
 * has that table, 0 when it has none, or a transient failure. What
 * info.txt says a dimension's size is, so that the two agree where
 * arrays give a name several lengths (kerchunk's phony_dim_N). */
int table_rows(struct engine *e, const struct znode *g, const char *dim,
               uint64_t *nrows, struct zerr *err);

/* Is array n (a member of the group) a column of the table of dim with
 * nrows rows: 1-D along dim, views readable, that long? */
int table_takes(const struct znode *n, const char *dim, uint64_t nrows);

/* Exact size of table `file` of g: arithmetic when every row is the same
 * (no column has a stored chunk), else by rendering every block once. */
int table_size(struct engine *e, const struct znode *g, const char *file,
               uint64_t *size, struct zerr *err);

/* Fields (rows x columns) of the largest table whose exact size stat
 * renders whatever it takes (table_size_deferred): a few hundred
 * milliseconds on a loaded core. */
#define TABLE_EXACT_FIELDS ((uint64_t)1 << 18)

/* With exact sizes: 1 when the table is read with direct I/O (as with
 * lazy sizes) and stat shows its size only once known, because its size
 * is not arithmetic and rendering the whole table would take more than
 * TABLE_EXACT_FIELDS fields: the work a lookup may do is bounded. 0 when
 * stat computes it; or a negative errno. */
int table_size_deferred(struct engine *e, const struct znode *g,
                        const char *file, struct zerr *err);

/* The size stat shows with exact sizes: the exact size, or for a deferred
 * table the size once known, else what a bounded learning finds: blocks
 * rendered in order for at most engine.table_learn_ns (resuming where
 * the last one stopped), when the table's columns and text fit half the
 * cache (so a reader after it finds them decoded); else 0. */
int table_size_stat(struct engine *e, const struct znode *g, const char *file,
                    uint64_t *size, struct zerr *err);

/* Lazy sizes: 1 and *size when the size is known already (learned, or
 * arithmetic and found so), 0 when it is not (nothing rendered), or a
 * negative errno. */
int table_size_known(struct engine *e, const struct znode *g, const char *file,
                     uint64_t *size, struct zerr *err);

/* After a read of table `file` at off failed (a bad chunk in a column):
 * the bytes at off before the first row that fails (its block rendered
 * in part, kept nowhere), or a negative errno when there are none. For a
 * file read with direct I/O (fs/namespace/namespace.h). */
long table_read_before_failure(struct engine *e, const struct znode *g,
                               const char *file, uint64_t off, size_t len,
                               char *dst, struct zerr *err);

/* Read up to len bytes at off of table `file` of g into dst; returns the
 * bytes read (short only at the end) or a negative errno. c (may be
 * NULL) is the open file's cursor: it keeps the reader's pins and
 * position between reads (cursor_ext_swap). */
long table_read(struct engine *e, const struct znode *g, const char *file,
                uint64_t off, size_t len, char *dst, struct view_cursor *c,
                struct zerr *err);

#endif
