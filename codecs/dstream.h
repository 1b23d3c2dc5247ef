/* dstream.h - the output of a bytes->bytes codec (zstd, gzip) decoded as a
 * stream in a sliding window, offered as a byte source: a reader going
 * through the output in order holds a few MiB (the window, a slice of
 * compressed input, the decoder's own state), never the whole output.
 *
 * The source keeps its decoder positioned where the last read ended, and
 * the decoded bytes from DSTREAM_BACK before that read's start on. A read
 * inside that window is a copy; a read further on decodes forward to it
 * (discarding what falls behind the window); a read before the window
 * restarts the stream from its start (correct, and as costly as decoding
 * up to the read again). Unlike other sources it has mutable state: a
 * mutex inside it serialises reads, so it may still be shared between
 * threads, but readers at far apart places make it restart again and
 * again.
 *
 * The compressed input is read DSTREAM_IN bytes at a time through its own
 * source (held whole only when that source is in memory already). A
 * stream that ends before `size` bytes, decodes to more, or is corrupt
 * fails the read with -EIO and "NAME: ..." (NAME: the codec); no read ever
 * gets bytes the stream does not hold there. A codec offers this through
 * its codec_impl's `stream` (codecs/codec.h); callers go through the
 * chain (chain_partial_stream, codecs/chain.h). */
#ifndef ZARRFS_DSTREAM_H
#define ZARRFS_DSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "codec.h"

/* How a codec decodes as a stream (opaque; one per codec). */
struct dstream_kind;
/* Zstandard: one or more concatenated frames. */
extern const struct dstream_kind dstream_zstd;
/* zlib's inflate of gzip members (or a zlib stream), as codec `gzip`. */
extern const struct dstream_kind dstream_gzip;

/* Decoded bytes kept behind the start of the last read: the kernel's
 * read-ahead sends overlapping and slightly reordered reads. */
#define DSTREAM_BACK ((size_t)1 << 20)
/* Room for decoding ahead of the window: the buffer starts at
 * DSTREAM_BACK + DSTREAM_AHEAD and grows only for a read larger than
 * that (up to env->max_decoded). */
#define DSTREAM_AHEAD ((size_t)2 << 20)
/* Compressed bytes read from the input per step. */
#define DSTREAM_IN ((size_t)256 << 10)

/* A byte source of the `size` bytes that codec kind decodes from enc
 * (borrowed; the source takes its own reference). Reads the first bytes
 * of enc (a frame header) to size the decoder; decodes nothing yet.
 * env is copied (its stop flag must outlive the source). *out is a new
 * reference (bytesrc_unref). */
int dstream_open(const struct dstream_kind *kind, struct bytesrc *enc,
                 uint64_t size, const struct codec_env *env,
                 struct bytesrc **out, struct zerr *err);

/* The decoded size the start of enc states (zstd: the first frame's
 * content size, which one-shot compressors such as numcodecs' write; gzip
 * states none up front): 1 and *size, 0 when it states none (or enc is
 * not such a stream), or a negative errno when enc cannot be read. A
 * claim only: more frames may follow, the stream may be corrupt. */
int dstream_stated_size(const struct dstream_kind *kind, struct bytesrc *enc,
                        uint64_t *size, struct zerr *err);

/* Read up to max bytes of stream source s from off into dst: *got bytes,
 * fewer than max only where the stream ends (0 at or past its end),
 * where bytesrc_read_range would fail. A corrupt stream still fails.
 * -ENOTSUP when s is not a stream source. */
int dstream_read_upto(struct bytesrc *s, uint64_t off, size_t max, void *dst,
                      size_t *got, struct zerr *err);

/* Is s a source made by dstream_open? */
int dstream_is(const struct bytesrc *s);
/* Bytes a stream source may hold at once (its buffers and its decoder's
 * state), for charging it to a cache; 0 for any other source. */
size_t dstream_cost(const struct bytesrc *s);
/* Times s restarted from the start of its stream (a read before its
 * window), and decoded bytes it produced in all; 0 for other sources. */
uint64_t dstream_restarts(const struct bytesrc *s);
uint64_t dstream_decoded(const struct bytesrc *s);

#endif
