/* unit.h - decoded units of an array node through the memo: a unit's
 * decode (a chunk from the store, or one inner chunk of a shard through its
 * memoised index), its text layout, its deferred data section, its text
 * size, direct reads through partial decoders, and which chunks are
 * stored (presence). unit.c decodes units whole; unitwin.c reads them
 * through their partial decoder (direct reads, windows).
 *
 * Owns no state of its own and takes no lock: what it caches lives in the
 * engine's memo (levels ELEVEL_SHARD_INDEX, ELEVEL_UNIT, ELEVEL_DATA,
 * ELEVEL_UNIT_SIZE, ELEVEL_PRESENCE of fs/engine/engine.h), whose lock is taken
 * inside memo.c only. Each fill asks only for lower levels (memo.h's wait
 * rule). A data error is logged here, once, naming the chunk's store key.
 * FUSE-free. */
#ifndef ZARRFS_UNIT_H
#define ZARRFS_UNIT_H

#include <stddef.h>
#include <stdint.h>

#include "../../codecs/abytes.h"
#include "../../src/util/memo.h"
#include "../text/text.h"
#include "engine.h"
#include "node.h"

/* Decoded unit `idx` of array node n, read from the store (a missing chunk
 * or an empty inner chunk gives a fill unit). Returns a pin on the memo
 * entry (memo_release); the unit is unit_of_ref(*out). */
int unit_get(struct engine *e, const struct znode *n, const uint64_t *idx,
             struct memo_ref **out, struct zerr *err);
/* The unit behind a pin from unit_get (borrowed while pinned). */
static inline struct chunk_text *unit_of_ref(const struct memo_ref *r) {
  return (struct chunk_text *)memo_obj(r);
}
/* Fill unit idx of n, for a unit known to be missing: no store access, no
 * element data (new reference; zobj_put). */
int unit_new_fill(const struct znode *n, const uint64_t *idx,
                  struct chunk_text **out, struct zerr *err);

/* What to read a decoded unit's text from. Fill units, fixed-size
 * elements and units rendered whole: the unit itself (*rct = ct, *data
 * NULL). Variable-length elements with their bytes at hand (uncompressed
 * data sections): *rct = ct and *data those bytes (a read fetches only
 * what it shows). Deferred data sections are decoded once (single-flight,
 * in the memo) and, when the text fits render_max, rendered whole: then
 * *rct is that rendered unit and *data NULL; else *rct = ct and *data the
 * decoded bytes. *data is a new reference; *pin (or NULL) keeps the memo
 * entry *rct or *data came from; the caller releases it (a reader's
 * window keeps it) after the last use. */
int unit_src(struct engine *e, const struct znode *n,
             const struct chunk_text *ct, const struct chunk_text **rct,
             struct bytesrc **data, struct memo_ref **pin, struct zerr *err);

/* Read text [off, off+len) of unit idx straight through its partial
 * decoder (codecs/chain.h: offsets read where they
 * lie, element bytes stored plain; unit_direct in unit.c): only the offsets
 * and element bytes the range shows are read, nothing is decoded whole or
 * cached. -ENOTSUP when the unit is not like that (or not stored): read
 * it the usual way. For readers not going through in sequence (`tail`,
 * random reads) of units not decoded yet. */
long unit_read_direct(struct engine *e, const struct znode *n,
                      const uint64_t *idx, uint64_t off, size_t len, char *dst,
                      struct zerr *err);

/* How many units the calling thread's decodes have left with their text
 * whole, so far: a worker that compares it before and after a job knows
 * what the job rendered without looking the units up in the memo. */
uint64_t unit_made_whole(void);

/* Is unit idx read in windows rather than decoded whole: a string unit
 * whose offsets the chain reads where they lie, so large that a whole
 * decode's offsets and layout would take more than a quarter of the
 * cache (and at least UNIT_WINDOW_MIN bytes)? Then every read, in
 * sequence or not, goes through unit_read_window and memory follows the
 * reader instead of the unit's size. So is a string unit in vlen-utf8 (or
 * vlen-bytes, zarrs.vlen_v2: no index) behind one zstd or gzip stage, by
 * the same rule: it is parsed as a stream as the reader advances. */
int unit_windowed(const struct engine *e, const struct znode *n,
                  const uint64_t *idx);
#define UNIT_WINDOW_MIN (1u << 20)

/* A reader in sequence is done with unit pin `ref` (and its data pin
 * `dref`; either may be NULL) of a view whose text is more than the
 * cache keeps for its own sake (the unit's cost times the view's units
 * past a quarter of cache_size, lsize's rule for keeping nothing while
 * learning sizes): mark them passed through (memo_scan), so what the
 * reader has passed is let go within the memo's scan budget and its
 * memory reused by the units after it, instead of each unit kept and the
 * daemon grown by fresh (zeroed) pages up to cache_size. 1 when marked,
 * else 0. */
int unit_passing(struct engine *e, const struct znode *n, struct memo_ref *ref,
                 struct memo_ref *dref);

/* Read text [off, off+len) of a unit that unit_windowed says is read in
 * windows: offsets and (plain) element bytes read where they lie for just
 * the range. Element bytes behind zstd or gzip are decoded as a stream
 * in a sliding window (codecs/dstream.h; memoised at ELEVEL_DATA, charged
 * its few MiB) that stays where the last read ended: a reader in order
 * decodes each byte once, a read before the window restarts the stream.
 * Behind other data codecs they are decoded whole once, without the
 * offsets. *pin keeps what was decoded or the stream (NULL when nothing
 * is pinned; the caller releases it, a reader's window keeps it). The
 * text is never rendered whole. Returns the bytes read or a negative
 * errno (-ENOTSUP: read it the usual way); a failure names the chunk.
 * A vlen-utf8 unit is decoded as a stream and its elements parsed in
 * order (memoised at ELEVEL_DATA with the parse position and the first
 * elements of recent reads); a read before those restarts the stream. */
long unit_read_window(struct engine *e, const struct znode *n,
                      const uint64_t *idx, uint64_t off, size_t len, char *dst,
                      struct memo_ref **pin, struct zerr *err);

/* The bytes the memo charges for unit idx while it holds it decoded, or 0
 * when it does not (never decodes, never waits): what keeping a unit
 * costs, which its text size alone does not say (fs/views/lsize.c). */
size_t unit_held_cost(struct engine *e, const struct znode *n,
                      const uint64_t *idx);

/* Text size of unit idx, learned once and remembered: from the ends of
 * its index read partially when its chain allows it, else from the
 * persistent index (a claim, see below), else by decoding the unit. A
 * vlen-utf8 unit read in windows: by one streaming pass over its element
 * lengths. */
int unit_size(struct engine *e, const struct znode *n, const uint64_t *idx,
              uint64_t *size, struct zerr *err);
/* unit_size, and whether the size is a claim of the persistent index
 * (src/store/sizeindex.h) that no decode of this mount has checked yet.
 *
 * The rule: a record is a claim, the decode is the truth. A claim is
 * used as a size (stat, ls -l, a layout's offsets), never to cut or pad
 * a text: every decode of a unit checks the size known for it (claimed
 * or learned) against the text it made, and a layout checks the claims
 * it holds before it places a byte after them (layout_check). A size
 * found wrong is replaced by the truth (the record too), said once in
 * the log, and every layout, region size and row of the node made on it
 * is dropped (node_sizes_changed). A reader goes on from where it was on
 * a new layout (the text before the wrong unit is the same), and when
 * the text grew the kernel, which may hold the old size and would stop
 * there, is told to ask again (engine.size_grew); when it shrank, the
 * read that ends early makes the kernel take the shorter size. */
int unit_size_claim(struct engine *e, const struct znode *n,
                    const uint64_t *idx, uint64_t *size, int *claim,
                    struct zerr *err);
/* unit_size_claim for a caller learning more units than the cache
 * holds (fs/views/lsize.c): a unit decoded to learn its size is measured and
 * let go (text_measure), not kept in the memo. With `record` its size is
 * recorded on its own in the persistent index, as a kept decode's is (a
 * region too small for a region record); without, the region's record
 * holds it. The size is remembered as unit_size's. */
int unit_size_measure(struct engine *e, const struct znode *n,
                      const uint64_t *idx, int record, uint64_t *size,
                      int *claim, struct zerr *err);
/* The size `claimed` of unit idx checked against the truth: its size as
 * this mount knows it, or else a decode (a pass over the stream of a unit
 * read in windows). 0 when it holds; 1 when it does not (said, the unit's
 * size and record replaced, the node's sizes made anew); or a negative
 * errno (the unit's failure, logged). */
int unit_size_verify(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t claimed, struct zerr *err);
/* The version of the text rules (how elements become text): a record of
 * the persistent index written under other rules is never used. Raise it
 * with any change to the bytes of a unit's text. */
#define UNIT_TEXT_RULES 3u /* 3: rows.csv numbers as D.csv writes them */
/* What makes n's units' text, as the persistent index keys records by:
 * a hash of the metadata document, the fill text and a CF or CSV view's
 * attributes. */
uint64_t unit_text_hash(const struct znode *n);

/* A unit's learned size (ELEVEL_UNIT_SIZE value) with this bit set is a
 * claim of the persistent index no decode has checked yet. */
#define UNIT_SIZE_CLAIM (1ull << 63)

/* Do the text sizes of n's units come from their indexes alone
 * (codec.h's CODEC_PARTIAL_INDEX: no element byte read), so that a view's
 * exact size costs each unit's index ends rather than its data? */
int unit_sizes_from_index(const struct znode *n);

/* Learn the text size of every unit of n (unit_size) with up to
 * UNIT_SIZES_THREADS look-ups at once, for a store whose reads are
 * requests (each unit's index ends are then fetched in parallel rather
 * than one after another). A unit that fails is left unlearned: the
 * caller's own unit_size says why. 0, or -EINTR when stopping, -ENOMEM. */
int unit_sizes_prefetch(struct engine *e, const struct znode *n,
                        struct zerr *err);
#define UNIT_SIZES_THREADS 16

/* Which chunks of array n are stored (a pin; the object is a struct
 * presence from src/store/presence.h). */
int unit_presence(struct engine *e, const struct znode *n,
                  struct memo_ref **out, struct zerr *err);

/* In-bounds elements of unit idx of n (edge units hold fewer). */
uint64_t unit_nin(const struct znode *n, const uint64_t *idx);

/* ---- unit.c's, for unitwin.c above it (the partial-decoder side, and
 * the text sizes); unit.c never calls unitwin.c ---- */

/* Is unit idx's text linear in its elements' byte lengths (strings and
 * bytes, not CSV fields, which are quoted: a line is k bytes per element
 * byte plus its newline), with its in-bounds elements first (every
 * dimension but the first whole)? What reading a unit by its lengths,
 * without decoding it whole, needs. */
int unit_linear_text(const struct znode *n, const uint64_t *idx);

/* What a fill needs to know about its unit or chunk. */
struct unit_job {
  struct engine *e;
  const struct znode *n;
  const uint64_t *idx; /* unit coordinates (chunk coordinates for indexes) */
  const char *key;     /* the chunk's store key */
  const struct chunk_text *ct;    /* data fills: the unit */
  uint64_t src_size, src_version; /* set by unit_source: the size and
                                     version (struct bytesrc) of the
                                     object it decoded, 0 when unknown */
  uint64_t claim; /* a size claimed for the unit (UNIT_SIZE_CLAIM set) by
                     a region record, checked as the memo's would be;
                     0: none */
  int filled;     /* set by unit_fill: it ran, and checked the claim */
};

/* A unit inside the grid of a readable array? 0 or -EINVAL. */
int unit_check(const struct znode *n, const uint64_t *idx, struct zerr *err);

struct sizeindex_id;
/* What the persistent index (src/store/sizeindex.h) knows unit idx by, into
 * *id (its key in key, len bytes): the store's location, the chunk's key
 * (and the inner chunk's place in its shard), the stored object's size and
 * version (those of the source a decode read, or 0 to ask the store,
 * store_version), what makes the text and the text rules. 0, or -1 when
 * the unit is not indexed (no index, a remote store, no metadata hash, an
 * object without a version: inline or remote bytes). */
int unit_ident(struct engine *e, const struct znode *n, const uint64_t *idx,
               uint64_t size, uint64_t version, char *key, size_t len,
               struct sizeindex_id *id);

/* unit_get with a claim of its size (0: none; a region record's, checked
 * by the decode as the memo's would be); *filled: whether this call's
 * decode checked it. */
int unit_get_claimed(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t claim, struct memo_ref **out,
                     int *filled, struct zerr *err);

/* A decode found unit idx's text to be `truth` bytes where `known` (a
 * learned size, UNIT_SIZE_CLAIM set when the persistent index claimed
 * it) was taken before: one log line, the node's sizes made anew, and the
 * kernel told to ask again when the text grew (the caller puts the truth
 * and its record). */
void unit_size_wrong(struct engine *e, const struct znode *n,
                     const uint64_t *idx, const char *key, uint64_t known,
                     uint64_t truth);

/* Unit j->idx's text size (*value) by a decode that keeps nothing
 * (unit_size_measure): unit_fill's decode and text preparation, then
 * text_measure; with `record`, the size of a decode goes to the
 * persistent index. A missing chunk is the fill unit's size. A failure is
 * logged here. */
int unit_measure(struct unit_job *j, int record, uint64_t *value,
                 struct zerr *err);

/* The store key of unit idx's chunk (for log lines) into key (len
 * bytes); -ENAMETOOLONG when it does not fit. */
int unit_store_key(const struct znode *n, const uint64_t *idx, char *key,
                   size_t len, struct zerr *err);

/* Log a failure of key, unless it is the shutdown interrupting us. */
void unit_log_failure(struct engine *e, const char *key,
                      const struct zerr *err);

/* The encoded bytes of unit j->idx decoded: a whole chunk from the store,
 * or one inner chunk of its shard through the shard's index. *out (the
 * caller's; abytes_free) is NULL when the unit is the fill value (missing
 * chunk, missing shard, empty inner chunk). *logged is set when the
 * failure was already logged. */
int unit_source(struct unit_job *j, struct abytes **out, int *logged,
                struct zerr *err);

/* The encoded bytes of unit j->idx as stored (*out, a new reference): the
 * chunk, or the inner chunk's range of its shard; *chain (borrowed) is the
 * chain that decodes them. 1, 0 when the unit is the fill value (nothing
 * stored), or negative. */
int unit_encoded(struct unit_job *j, struct bytesrc **out,
                 const struct chain **chain, struct zerr *err);

/* Is unit idx read by streaming its elements (a string chunk without an
 * index, behind zstd or gzip, too large to decode whole)? Its size then
 * costs a pass over the stream, which the persistent index saves. */
int unit_stream_windowed(const struct engine *e, const struct znode *n,
                         const uint64_t *idx);

/* Open the partial decoder (codecs/chain.h) of unit idx's chunk (not an
 * inner chunk: n->shard is NULL): 1 and *d, 0 when the chunk is not
 * stored, or negative; close *d (zeroed first) with chain_partial_close
 * whatever the answer. */
int unit_partial_open(struct engine *e, const struct znode *n,
                      const uint64_t *idx, struct codec_partial *d,
                      struct zerr *err);

/* A unit's text size from the first and the last in-bounds offsets of
 * its partial decoder: 0, or -1 when that cannot be done (then the unit
 * is decoded, and that decode says what is wrong). */
int unit_size_direct(struct engine *e, const struct znode *n,
                     const uint64_t *idx, uint64_t *value);

/* A streamed unit's (unit_stream_windowed) text size, by one pass over
 * the stream's element lengths: 0; 1 when the unit is not stored (the
 * fill value: the usual decode knows its size); or a negative errno, a
 * corrupt or truncated stream among them, which is the unit's error (a
 * whole decode of it would hold up to max_decoded to say the same). */
int unit_size_streamed(struct engine *e, const struct znode *n,
                       const uint64_t *idx, uint64_t *value, struct zerr *err);

#endif
