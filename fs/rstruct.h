/* rstruct.h - the text of structured (record) elements.
 *
 * One element is one line: its leaf fields (src/zarr/dtype_struct.h) in
 * field order, separated by a tab. A field is written by the text
 * contract of its own type (fs/render.h), read in its own byte order;
 * numpy S and V fields as lowercase hex like bytes (S without its
 * trailing NULs), U fields as UTF-8 without their trailing NULs, with a
 * tab or newline in them shown as a space so that a line keeps its
 * columns. A subarray field is its values in C order separated by one
 * space. No newline is written.
 *
 * Pure functions over the caller's bytes, FUSE-free, thread-safe. Called
 * by the text preparation (fs/textprep.c), which turns a structured unit
 * into string elements, one per record. */
#ifndef ZARRFS_RSTRUCT_H
#define ZARRFS_RSTRUCT_H

#include <stdio.h>

#include "../codecs/chain.h"
#include "../src/util/buf.h"
#include "../src/zarr/dtype_struct.h"

/* Append the text of field f of the record at elem (the record's stored
 * bytes) to out. */
int rstruct_field(const struct dtype_field *f, const uint8_t *elem,
                  struct zbuf *out, struct zerr *err);

/* Append the line of the record at elem (dt->size stored bytes of a
 * DT_STRUCT type) to out, without its newline. */
int rstruct_element(const struct dtype *dt, const uint8_t *elem,
                    struct zbuf *out, struct zerr *err);

/* Turn a decoded unit of records (fixed-size elements, ab owned by the
 * caller) into string elements, one line of text each, in place; the
 * text is capped by env->max_decoded (-EFBIG beyond). */
int rstruct_to_text(const struct dtype *dt, struct abytes *ab,
                    const struct codec_env *env, struct zerr *err);

/* Write the fields of a DT_STRUCT type for info.txt: "item_size: N",
 * then "fields:" and one line per leaf field, indented by two spaces:
 * "  NAME: TYPE[ shape [D0, D1]] at OFFSET". */
void rstruct_describe(FILE *f, const struct dtype *dt);

#endif
