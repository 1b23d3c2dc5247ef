/* textprep.h - text preparation: decoded elements turned into the element
 * type a node's text is rendered from, and the fill value's text.
 *
 * Fixed-width strings (numpy U and S) and raw bytes become variable-length
 * strings or bytes (UTF-32 converted to UTF-8), optional strings and bytes
 * become their text, structured records their lines (fs/text/rstruct.h); a
 * node's fill text is one fill element through those same conversions
 * and the renderers (fs/text/render.h), so a missing chunk reads exactly like
 * a stored chunk full of fill values.
 *
 * Owns no state and takes no lock: pure functions over the caller's
 * decoded elements, FUSE-free, thread-safe. Sits beside the text layouts
 * (fs/text/text.h), below the node table (fs/engine/node.c, fill text) and the
 * unit decoder (fs/engine/unit.c, every decoded unit). */
#ifndef ZARRFS_TEXTPREP_H
#define ZARRFS_TEXTPREP_H

#include "../../codecs/chain.h"
#include "text.h"

/* Convert decoded elements of an array of data type dt, in place, into
 * their text type for a node of form `form` (see struct znode.form):
 * fixed-width strings to strings or bytes (a CF form's masked strings
 * empty: src/zarr/cfmask.h), optional strings and bytes and
 * records to text; other types are left as they are. A CSV form
 * (struct text_form.csv): variable-length elements become their CSV
 * fields instead (fs/text/csvtext.h). ab stays owned by the caller. */
int textprep_to_text(const struct dtype *dt, const struct text_form *form,
                     struct abytes *ab, const struct codec_env *env,
                     struct zerr *err);

/* Set form->fill and form->fill_len (owned by the form's node, free()) to
 * the text of one fill element of units described by uspec, of an array
 * of data type dt; form->dt must be set already. */
int textprep_fill_text(const struct codec_spec *uspec, const struct dtype *dt,
                       const struct codec_env *env, struct text_form *form,
                       struct zerr *err);

#endif
