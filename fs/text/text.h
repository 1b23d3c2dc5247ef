/* text.h - the text of one decoded unit (a chunk, or an inner chunk of a
 * shard): where each in-bounds element's line starts, and ranged rendering.
 *
 * Layouts are compact: the text offset of every TEXT_BLOCK-th in-bounds
 * element is stored (8 bytes per TEXT_BLOCK elements), and an element's
 * offset inside its block is recomputed from the element lengths (a vlen
 * offset difference, or one render of a fixed-size element). A fill unit
 * (a missing chunk, an empty inner chunk) holds no element data and no
 * layout at all: every line is the node's fill text, so offsets are
 * arithmetic whatever the unit's size.
 *
 * Pure functions over immutable data, FUSE-free, thread-safe. */
#ifndef ZARRFS_TEXT_H
#define ZARRFS_TEXT_H

#include <stdatomic.h>
#include <stdint.h>

#include "../../codecs/chain.h"
#include "../../src/util/memo.h"
#include "csvtext.h"
#include "render.h"

struct cf;   /* src/zarr/cf.h */
struct pool; /* src/util/pool.h */

/* In-bounds elements per stored layout offset. */
#define TEXT_BLOCK 64

/* What a unit's text shows in place of what its data held (bits): */
enum text_note_what {
  TEXT_NOTE_UTF8 = 1,     /* string bytes that are not UTF-8, shown as '?'
                             (fs/text/render.h: sizes stay the bytes' count) */
  TEXT_NOTE_CF_RANGE = 2, /* CF times or durations beyond what xarray
                             represents, shown as the stored number */
};

/* The words said of each (one enum text_note_what bit): what a log line
 * shows after the chunk's key. */
const char *text_note_msg(unsigned what);

/* Where the text layer says what a unit's text shows in place of what its
 * data held: fn is told each enum text_note_what at most once per unit
 * text (struct chunk_text), with the unit's coordinates. The node table
 * sets one per array node (fs/engine/node.c), which logs it naming the chunk's
 * store key, once per key and reason (src/util/logonce.h). fn may be
 * called from several threads at once. */
struct text_note {
  void (*fn)(const struct text_note *note, const uint64_t *idx, unsigned what);
  const void *ctx; /* fn's own */
};

/* How a node's units become text (borrowed from the node; lives as long
 * as the engine). */
struct text_form {
  struct dtype dt; /* the text data type (see struct znode) */
  int ndim;
  uint64_t shape[ZMETA_MAX_DIMS];       /* unit shape */
  const uint64_t *edge[ZMETA_MAX_DIMS]; /* units along d of irregular
                                           lengths (the chunks of a grid
                                           with listed edges): their prefix
                                           sums (borrowed from the node's
                                           metadata); NULL: shape[d] each */
  char *fill;          /* the fill value's text (owned by the node) */
  uint64_t fill_len;   /* bytes of fill, without the newline */
  const struct cf *cf; /* the CF views' form (values.cf.txt): elements
                          decoded as src/zarr/cf.h says and written by
                          fs/text/cftext.h (owned by the node); NULL: the text
                          contract's own rendering of dt */
  int csv;             /* rows.csv's form: each element its CSV field
                          (fs/text/csvtext.h), followed by ',' or, for the last
                          element of a row, '\n'; variable-length elements
                          arrive as their fields (textprep), of type string.
                          0: one element per line */
  uint64_t row_len;    /* csv: the array's length along its last dimension */
  size_t elem_fields;  /* csv: CSV fields per element (a record's leaf
                          fields); 0: one */
  const struct text_note *note; /* told what the text shows in place of the
                                   data (borrowed from the node); NULL:
                                   nobody is told */
  const uint64_t *note_idx;     /* the unit the note names, for a form of
                                   a window of a unit's elements
                                   (fs/engine/unitwin.c: its units' own
                                   coordinates are the window's); NULL:
                                   each unit's own coordinates */
};

/* A unit ready for text views (reference-counted; zobj_put). */
struct chunk_text {
  struct zobj obj;
  const struct text_form *form; /* borrowed */
  struct abytes *ab;            /* decoded elements in unit C order; NULL
                                   for a fill unit and once rendered */
  char *text;                   /* the whole text, rendered once
                                   (text_render_all), or NULL */
  uint64_t *idx;          /* unit coordinates (form->ndim, in dims below) */
  uint64_t *ext;          /* in-bounds extent per dimension (likewise) */
  uint64_t nin;           /* in-bounds elements */
  uint64_t size;          /* text bytes (every line with its '\n') */
  uint64_t *blk;          /* text offset of in-bounds element b*TEXT_BLOCK */
  uint64_t nblk;          /* entries of blk */
  size_t cost;            /* bytes held: elements, offsets, layout */
  _Atomic unsigned noted; /* enum text_note_what bits told already (the
                             one field a reader changes) */
  uint64_t dims[];        /* idx then ext, form->ndim each: a million cached 1-D
                             units of kerchunk would spend 500 MB on 32 each */
};

/* A fill unit idx of a node whose units have shape form->shape (or the
 * lengths form->edge lists) inside an array of shape `shape` (new
 * reference in *out). -EFBIG when its text would not fit in 63 bits. */
int text_fill_unit(const struct text_form *form, const uint64_t *shape,
                   const uint64_t *idx, struct chunk_text **out,
                   struct zerr *err);

/* Lay out unit idx from its chunk's records in memory (codecs/chain.h:
 * strings one after another, each behind its length), its text made over
 * them in one pass, for a unit of strings (no CSV, no CF) whose in-bounds
 * box is linear and whose chunk fits render_max: 1 and *out (a new
 * reference; rec's buffer taken), 0 when the unit is not such (nothing
 * changed: lay it out from the decoded chunk), or a negative errno (a
 * record that is wrong, named; EINTR when stop is set; rec left to the
 * caller). Bytes that are not UTF-8 and newlines inside strings are shown
 * as text_layout shows them. */
int text_layout_records(const struct text_form *form, const uint64_t *shape,
                        const uint64_t *idx, struct chain_records *rec,
                        size_t render_max, const atomic_int *stop,
                        struct chunk_text **out, struct zerr *err);

/* Lay out decoded unit idx (takes ownership of ab, freed on failure):
 * in-bounds extents, text size, block offsets. Fixed-size elements are
 * loaded into memory (capped by max_bytes); their text, rendered to be
 * measured, is kept whole when it fits in render_max bytes (0: never),
 * and the elements are then dropped; idle workers of helpers (may be
 * NULL) render parts of a long run (fs/text/rsplit.h). stop (may be NULL)
 * makes a long layout give up with -EINTR. New reference in *out. */
int text_layout(const struct text_form *form, const uint64_t *shape,
                const uint64_t *idx, struct abytes *ab, size_t max_bytes,
                size_t render_max, struct pool *helpers, const atomic_int *stop,
                struct chunk_text **out, struct zerr *err);

/* The text size of unit idx of decoded elements ab (taken over, as by
 * text_layout) into *size, keeping nothing: numbers rendered a block at a
 * time on the stack and counted, anything else laid out as text_layout
 * would and let go. For learning sizes of more units than the cache
 * holds. */
int text_measure(const struct text_form *form, const uint64_t *shape,
                 const uint64_t *idx, struct abytes *ab, size_t max_bytes,
                 const atomic_int *stop, uint64_t *size, struct zerr *err);

/* Render the whole text of a laid-out unit into memory once, and drop its
 * decoded elements: reads then copy bytes. data is the unit's element
 * bytes for variable-length units (NULL for fixed-size ones). Worth it
 * when the text is not much larger than the elements and is read whole
 * (a view's reader, or a row); the caller decides by size. */
int text_render_all(struct chunk_text *ct, struct bytesrc *data,
                    struct zerr *err);

/* A copy of a laid-out unit with its text rendered whole (new reference
 * in *out), for a unit whose element bytes come apart from it (data: a
 * decoded data section, or bytes not in memory, read slice by slice;
 * max_bytes is unused). Strings in memory that are the caller's alone
 * (bytesrc_take_mem) become the text where they lie: data is then left
 * empty, still to be released by the caller. */
int text_render_copy(const struct chunk_text *ct, struct bytesrc *data,
                     size_t max_bytes, struct chunk_text **out,
                     struct zerr *err);

/* Write the text of one fixed-size element (form->dt.size bytes in host
 * order) into buf (RENDER_FIXED_MAX bytes, fs/text/render.h); returns its
 * length. CF forms decode it first; a time beyond what xarray can hold
 * (cf_decode's -ERANGE) is written as the stored number (a unit's text
 * then tells its form's note, TEXT_NOTE_CF_RANGE). */
size_t text_render_fixed(const struct text_form *form, const void *elem,
                         char *buf);

/* Text bytes (no newline) of a variable-length element of nbytes bytes of
 * text data type dt: what a reader of raw offsets (a partial decoder of
 * a variable-length chunk) needs to place lines without rendering. */
uint64_t text_var_len(const struct dtype *dt, uint64_t nbytes);

/* Text offset where in-bounds element k's line starts (k <= nin). */
uint64_t text_line_off(const struct chunk_text *ct, uint64_t k);
/* The same, knowing where an earlier element k0 <= k starts (off0): walks
 * forward from there when that is shorter than a block. */
uint64_t text_line_off_from(const struct chunk_text *ct, uint64_t k0,
                            uint64_t off0, uint64_t k);

/* Render text bytes [off, off+len) of unit ct into dst. data is the unit's
 * element bytes for variable-length units (unit_src), NULL
 * otherwise. Returns the bytes written (short only at the end of the
 * text) or a negative errno. */
long text_read(const struct chunk_text *ct, struct bytesrc *data, uint64_t off,
               size_t len, char *dst, struct zerr *err);
/* text_read, for a caller that knows in-bounds element k starts at text
 * offset kpos: when off == kpos no search is needed (row segments). */
long text_read_at(const struct chunk_text *ct, struct bytesrc *data, uint64_t k,
                  uint64_t kpos, uint64_t off, size_t len, char *dst,
                  struct zerr *err);

/* ---- Inside fs/text only: what text.c (unit objects, the walk, layouts,
 * line offsets) and textread.c (ranged rendering, above it: it calls
 * text.c, never the other way) share. Nothing outside fs/text/ uses
 * these. ---- */

/* Tell ct's form's note, once per unit text, what its text shows in place
 * of its data (an enum text_note_what bit). */
void text_tell(const struct chunk_text *ct, unsigned what);
/* A CF form's element text (the stored value when xarray could not hold
 * it, told through ct's note; ct may be NULL). */
size_t text_form_cf(const struct chunk_text *ct, const struct text_form *form,
                    const void *elem, char *buf);
/* One fixed-size element's text (ct: the unit, told of what is not
 * decoded; may be NULL): the plain rendering stays one predictable
 * branch away, so values.txt costs what it did. */
static inline size_t text_form_fixed(const struct chunk_text *ct,
                                     const struct text_form *form,
                                     const void *elem, char *buf) {
  if (__builtin_expect(form->cf == NULL && !form->csv, 1))
    return render_fixed(&form->dt, elem, buf);
  if (form->cf)
    return text_form_cf(ct, form, elem, buf);
  return csvtext_fixed(NULL, &form->dt, elem, buf);
}

/* Bytes of a unit object itself (with its coordinates and extents). */
size_t text_unit_base_cost(const struct text_form *form);
/* An empty unit object of form (NULL: out of memory). */
struct chunk_text *text_unit_alloc(const struct text_form *form);

/* An in-bounds element k and its index j in unit C order. */
struct text_it {
  uint64_t k, j;
  uint64_t c[ZMETA_MAX_DIMS];      /* coordinates inside the in-bounds box */
  uint64_t stride[ZMETA_MAX_DIMS]; /* of the unit, C order */
};

/* Position the walk at in-bounds element k. */
void text_it_init(struct text_it *it, const struct chunk_text *ct, uint64_t k);
/* Step to the next in-bounds element (an odometer over the box). */
static inline void text_it_next(struct text_it *it,
                                const struct chunk_text *ct) {
  it->k++;
  for (int d = ct->form->ndim - 1; d >= 0; d--) {
    if (++it->c[d] < ct->ext[d]) {
      it->j += it->stride[d];
      return;
    }
    it->j -= (ct->ext[d] - 1) * it->stride[d];
    it->c[d] = 0;
  }
}

/* The byte after an element of a CSV unit whose last coordinate in the
 * unit's in-bounds box is c: '\n' when it ends its row, else ','. */
char text_csv_end(const struct chunk_text *ct, uint64_t c);
/* The byte after the element at walk it: a newline, or a CSV separator. */
static inline char text_it_end(const struct chunk_text *ct,
                               const struct text_it *it) {
  if (__builtin_expect(!ct->form->csv, 1))
    return '\n';
  return text_csv_end(ct, it->c[ct->form->ndim - 1]);
}

/* Text length (no newline) of element j of a unit with element data. */
uint64_t text_elem_len(const struct chunk_text *ct, uint64_t j);
/* Is in-bounds element k element k of the unit (a walk needs no
 * coordinates)? */
int text_inb_linear(const struct chunk_text *ct);
/* A variable-length unit in a linear box (lines placed from the offsets
 * alone)? */
int text_var_linear(const struct chunk_text *ct);
/* Text offset of the line of element j of a run of consecutive elements
 * whose first, ja, starts at tpos. */
static inline uint64_t text_run_line_off(const struct chunk_text *ct,
                                         uint64_t ja, uint64_t tpos,
                                         uint64_t j) {
  const uint64_t *eo = ct->ab->offsets;
  return tpos + render_var_len(&ct->form->dt, eo[j] - eo[ja]) + (j - ja);
}

/* Elements that follow the walk's one in unit order without a gap. */
uint64_t text_run_left(const struct chunk_text *ct, const struct text_it *it,
                       int linear);
/* Move the walk n >= 1 elements on. */
void text_it_skip(struct text_it *it, const struct chunk_text *ct, uint64_t n);

/* Can ct's strings become its text where they lie (text.c says when)? */
int text_in_place_fits(const struct chunk_text *ct);
/* Turn buf (the unit's element bytes from offset 0; taken, freed on
 * failure) into the unit's text in place (*out, tsize bytes), with the
 * block offsets into blk. */
int text_expand_in_place(const struct chunk_text *ct, char *buf, uint64_t tsize,
                         uint64_t *blk, const atomic_int *stop, char **out,
                         struct zerr *err);

#endif
