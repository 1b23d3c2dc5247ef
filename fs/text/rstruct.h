/* rstruct.h - the text of structured (record) elements.
 *
 * One element is one line: its leaf fields (src/zarr/dtype_struct.h) in
 * field order, separated by a tab. A field is written by the text
 * contract of its own type (fs/text/render.h), read in its own byte order;
 * numpy S and V fields as lowercase hex like bytes (S without its
 * trailing NULs), U fields as UTF-8 without their trailing NULs, with a
 * tab or newline in them shown as a space so that a line keeps its
 * columns. A subarray field is its values in C order separated by one
 * space. No newline is written.
 *
 * Pure functions over the caller's bytes, FUSE-free, thread-safe. Called
 * by the text preparation (fs/text/textprep.c), which turns a structured unit
 * into string elements, one per record (its line, or for rows.csv its CSV
 * fields), and by the tables (fs/views/tblock.c), one column per field. */
#ifndef ZARRFS_RSTRUCT_H
#define ZARRFS_RSTRUCT_H

#include <stdio.h>

#include "../../codecs/chain.h"
#include "../../src/util/buf.h"
#include "../../src/zarr/dtype_struct.h"

/* Append the text of field f of the record at elem (the record's stored
 * bytes) to out. */
int rstruct_field(const struct dtype_field *f, const uint8_t *elem,
                  struct zbuf *out, struct zerr *err);

/* Append the text of field f as rstruct_field does, but a U field's
 * text as stored: tabs and newlines kept (for CSV, which quotes them). */
int rstruct_field_raw(const struct dtype_field *f, const uint8_t *elem,
                      struct zbuf *out, struct zerr *err);

/* What a field's text is as a CSV value: text (U, quoted when needed),
 * hex (S, V), a scalar float (whose `nan` may be missing and whose
 * integral values may take `.0`), or another number, bool, time or a
 * subarray of numbers. */
enum rstruct_csv {
  RSTRUCT_CSV_TEXT,
  RSTRUCT_CSV_HEX,
  RSTRUCT_CSV_FLOAT,
  RSTRUCT_CSV_NUMBER
};
enum rstruct_csv rstruct_field_csv(const struct dtype_field *f);

/* Append the fields of the record at elem as CSV fields of rows.csv
 * (fs/text/csvtext.h), a comma between two and none after the last: each as
 * rstruct_field_raw writes it, a scalar `NaT` as an empty field, text in
 * double quotes when it holds a comma, a quote, CR or LF (fs/text/csvfield.h).
 * tmp is the caller's scratch buffer. */
int rstruct_csv_element(const struct dtype *dt, const uint8_t *elem,
                        struct zbuf *tmp, struct zbuf *out, struct zerr *err);

/* Append the line of the record at elem (dt->size stored bytes of a
 * DT_STRUCT type) to out, without its newline. */
int rstruct_element(const struct dtype *dt, const uint8_t *elem,
                    struct zbuf *out, struct zerr *err);

/* Turn a decoded unit of records (fixed-size elements, ab owned by the
 * caller) into string elements, one line of text each, in place; the
 * text is capped by env->max_decoded (-EFBIG beyond). */
int rstruct_to_text(const struct dtype *dt, struct abytes *ab,
                    const struct codec_env *env, struct zerr *err);

/* As rstruct_to_text, but each record becomes its CSV fields
 * (rstruct_csv_element): one string element that already holds its
 * quotes and the commas between its fields, copied as it is by the text
 * layer of rows.csv. */
int rstruct_to_csv(const struct dtype *dt, struct abytes *ab,
                   const struct codec_env *env, struct zerr *err);

/* Write the fields of a DT_STRUCT type for info.txt: "item_size: N",
 * then "fields:" and one line per leaf field, indented by two spaces:
 * "  NAME: TYPE[ shape [D0, D1]] at OFFSET", a NAME or TYPE that could
 * break or bend its line written as a JSON string (utf8_needs_quotes).
 * 0, or -ENOMEM. */
int rstruct_describe(FILE *f, const struct dtype *dt);

#endif
