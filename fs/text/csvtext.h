/* csvtext.h - the fields of rows.csv (RFC 4180, UTF-8): one element of an
 * array as one CSV field.
 *   numbers, bool, times  as the text contract writes them (fs/text/render.h),
 *            or, for an array with a CF encoding, as values.cf.txt does
 *            (fs/text/cftext.h)
 *   missing  an empty field: a value CF masks (fill value, _FillValue,
 *            missing_value), NaT, a zarrs.optional null at any layer
 *   string   its UTF-8 bytes as they are; in double quotes when they hold
 *            a comma, a double quote, CR or LF, each double quote doubled
 *            and every other byte (newlines too) kept exactly, but for a
 *            byte that is not part of a well-formed UTF-8 sequence, shown
 *            as '?' (by the text layer, fs/text/text.c, as in values.txt)
 *   bytes    lowercase hex, two characters per byte (never quoted)
 *   record   one field per leaf field, a comma between two (made by
 *            fs/text/rstruct.h before the text layer: one element that holds
 *            several fields, counted by the form's elem_fields)
 * A field is followed by ',' or, for the last element of a row, '\n': the
 * text layer writes those (fs/text/text.c). Variable-length elements are turned
 * into their fields once, when their unit is decoded (csvtext_prep), so
 * the text layer copies them as they are.
 *
 * Owns no state and takes no lock: functions over the caller's data (only
 * csvtext_prep allocates, the fields it hands to the caller's ab),
 * FUSE-free, thread-safe. Sits beside fs/text/cftext.h, below the text layouts
 * (fs/text/text.c) and the text preparation (fs/text/textprep.c). */
#ifndef ZARRFS_CSVTEXT_H
#define ZARRFS_CSVTEXT_H

#include <stddef.h>
#include <stdint.h>

#include "../../codecs/chain.h"
#include "../../src/zarr/cf.h"

/* Longest field of one fixed-size element (it fits a render buffer,
 * RENDER_FIXED_MAX of fs/text/render.h). */
#define CSVTEXT_MAX 64

/* Write the field of one fixed-size element of data type dt (dt->size
 * bytes in host order) into buf (CSVTEXT_MAX bytes, not NUL-terminated),
 * decoded through cf first when cf is not NULL (borrowed); returns its
 * length, 0 for a missing value. */
size_t csvtext_fixed(const struct cf *cf, const struct dtype *dt,
                     const void *elem, char *buf);

/* The field of a CF-decoded element into buf (as csvtext_fixed): 0 for a
 * masked value or NaT. */
size_t csvtext_cf(const struct cf_value *v, char *buf);

/* Turn the variable-length elements of ab (decoded elements of an array of
 * data type dt, fixed-width strings already converted to strings or bytes
 * of kind `kind`: DT_STRING or DT_BYTES) into their fields, in place: ab
 * then holds its fields as string elements in memory (capped by
 * env->max_decoded). Fixed-size elements are left as they are. ab stays
 * owned by the caller. */
int csvtext_prep(const struct dtype *dt, enum dtype_kind kind,
                 struct abytes *ab, const struct codec_env *env,
                 struct zerr *err);

/* The offset of the field `n` fields after the one starting at pos in a
 * text of `size` bytes made of fields each followed by one separator
 * (',' or '\n'); size when the text ends first. */
uint64_t csvtext_skip(const char *t, uint64_t size, uint64_t pos, uint64_t n);

#endif
