/* parquet.h - a small verified reader of flat Parquet files held in
 * memory: the columns of a table, read whole.
 *
 * What it reads: top-level REQUIRED or OPTIONAL columns of physical type
 * INT32, INT64 or BYTE_ARRAY, in any number of row groups, from data pages
 * v1 and v2 in PLAIN or dictionary encoding (PLAIN_DICTIONARY,
 * RLE_DICTIONARY, a PLAIN dictionary page), definition levels in the
 * RLE/bit-packed hybrid, pages uncompressed or compressed with SNAPPY,
 * GZIP or ZSTD. Anything else (another type, encoding or codec, nested or
 * repeated columns, encrypted files, column data in other files) is
 * refused with -EIO and a reason naming it. What kerchunk's Parquet
 * references need (src/store/pqrefs.h), read the way pandas writes them
 * with fastparquet or pyarrow.
 *
 * Trust: the file is untrusted. The footer is parsed by a bounded Thrift
 * reader (thrift.h, pqmeta.h) and every offset, size and count is checked
 * against the file, the page and the limits before use; decompressed
 * pages must come out at exactly their stated size, which the limits cap.
 * A bad file is an error, never a crash, a read outside the buffer or an
 * unbounded allocation.
 *
 * Ownership: parquet_open borrows the file bytes, which must outlive the
 * struct parquet_file (and may be freed after parquet_close); columns read
 * are owned by the caller. Immutable after open: reads may run from
 * several threads. */
#ifndef ZARRFS_PARQUET_H
#define ZARRFS_PARQUET_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* What one file may cost. */
struct parquet_limits {
  size_t max_footer; /* bytes of the footer */
  size_t max_page;   /* bytes of one page, compressed or not */
  uint64_t max_rows; /* rows of the file */
  size_t max_bytes;  /* bytes of BYTE_ARRAY values of one column read */
};

/* Defaults: 16 MiB footers and pages, 2^22 rows, 256 MiB of values. */
void parquet_limits_default(struct parquet_limits *l);

struct parquet_file;

/* Parse the footer of the len bytes at data (borrowed) and check its
 * schema and row groups against each other. *out is owned by the caller
 * (parquet_close). -EIO with the reason, -ENOMEM. */
int parquet_open(const uint8_t *data, size_t len,
                 const struct parquet_limits *lim, struct parquet_file **out,
                 struct zerr *err);
/* Free; NULL-safe. */
void parquet_close(struct parquet_file *f);

/* Rows of the table. */
uint64_t parquet_num_rows(const struct parquet_file *f);

/* The index of the top-level column named name, or -1 when the table has
 * none. */
int parquet_column(const struct parquet_file *f, const char *name);

/* A column read whole: n rows; isnull[i] is 1 for a null. INT32 and INT64
 * values are in ints (0 at nulls); BYTE_ARRAY row i is bytes
 * [off[i], off[i+1]) (empty at nulls). */
struct parquet_col {
  int type; /* enum pq_ptype: PQ_INT32, PQ_INT64 or PQ_BYTE_ARRAY */
  uint64_t n;
  uint8_t *isnull;
  int64_t *ints;  /* INT32, INT64 */
  uint64_t *off;  /* BYTE_ARRAY: n + 1 offsets */
  uint8_t *bytes; /* BYTE_ARRAY values (never NULL) */
  size_t nbytes;
};

/* Read column col (parquet_column) of every row group. *out is owned by
 * the caller (parquet_col_free). -EIO naming the column and the reason. */
int parquet_read(const struct parquet_file *f, int col,
                 struct parquet_col **out, struct zerr *err);
/* Free; NULL-safe. */
void parquet_col_free(struct parquet_col *c);

#endif
