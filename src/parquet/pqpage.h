/* pqpage.h - the byte-level decoders of Parquet pages: decompression of a
 * page body into a buffer of exactly the size its header states
 * (uncompressed, SNAPPY, GZIP, ZSTD; any other codec is refused by name),
 * and the RLE/bit-packed hybrid of levels and dictionary indices.
 *
 * Every decoder reads only the input range it is given and writes only
 * the output it is given; a size that does not come out exactly as stated
 * is an error (-EIO with the reason). Pure: no locks, no state. */
#ifndef ZARRFS_PQPAGE_H
#define ZARRFS_PQPAGE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* Decompress in[0, n) with codec (enum pq_codec) into out[0, outlen): the
 * stream must decode to exactly outlen bytes. UNCOMPRESSED requires
 * n == outlen. -EIO naming the codec when it is not supported (or, for
 * SNAPPY, when zarrfs was built without libsnappy) or the data is bad. */
int pqpage_decompress(int codec, const uint8_t *in, size_t n, uint8_t *out,
                      size_t outlen, struct zerr *err);

/* Is codec one pqpage_decompress reads? */
int pqpage_codec_supported(int codec);

/* Decode n values of bit width width (0..32) of an RLE/bit-packed hybrid
 * from [p, p+len) into out; *used (may be NULL) gets the bytes read. Runs
 * past n values are cut; fewer than n values in the input is -EIO. */
int pqpage_rle(const uint8_t *p, size_t len, int width, uint32_t *out, size_t n,
               size_t *used, struct zerr *err);

/* Bits needed for values 0..max. */
int pqpage_bit_width(uint32_t max);

#endif
