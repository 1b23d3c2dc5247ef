/* testzfp.h - the tests' own zfp writer, shared by the codec test that
 * decodes its streams through the chain (tests/unit/codecs/check_zfp.c)
 * and the store test that reads them through the engine
 * (tests/unit/views/check_zfp_stores.c): zarrs' compression modes and a
 * libzfp encode in each. Header-only, test code only; empty without zfp. */
#ifndef ZARRFS_TESTZFP_H
#define ZARRFS_TESTZFP_H

#include "config.h"
#if ZFS_WITH_ZFP
#include <check.h>
#include <stdlib.h>
#include <zfp.h>

/* A compression mode as zarrs' `zfp` configuration names it. */
struct tmode {
  const char *json; /* the configuration object */
  zfp_mode mode;
  double param; /* rate, precision or tolerance */
};

static const struct tmode tmodes[] = {
    {"{\"mode\":\"reversible\"}", zfp_mode_reversible, 0},
    {"{\"mode\":\"fixed_rate\",\"rate\":10.5}", zfp_mode_fixed_rate, 10.5},
    {"{\"mode\":\"fixed_precision\",\"precision\":13}",
     zfp_mode_fixed_precision, 13},
    {"{\"mode\":\"fixed_accuracy\",\"tolerance\":0.05}",
     zfp_mode_fixed_accuracy, 0.05},
    {"{\"mode\":\"expert\",\"minbits\":1,\"maxbits\":300,\"maxprec\":19,"
     "\"minexp\":-6}",
     zfp_mode_expert, 0},
};

/* Set a stream's mode as zarrs does. */
static inline void set_mode(zfp_stream *zs, const struct tmode *m, zfp_type t) {
  switch (m->mode) {
  case zfp_mode_reversible:
    zfp_stream_set_reversible(zs);
    break;
  case zfp_mode_fixed_rate:
    zfp_stream_set_rate(zs, m->param, t, 3, zfp_false);
    break;
  case zfp_mode_fixed_precision:
    zfp_stream_set_precision(zs, (unsigned)m->param);
    break;
  case zfp_mode_fixed_accuracy:
    zfp_stream_set_accuracy(zs, m->param);
    break;
  default:
    ck_assert(zfp_stream_set_params(zs, 1, 300, 19, -6));
  }
}

/* A field over data for zfp sizes n (nx first) in dims dimensions. */
static inline zfp_field *make_field(void *data, zfp_type t, int dims,
                             const size_t n[4]) {
  switch (dims) {
  case 1:
    return zfp_field_1d(data, t, n[0]);
  case 2:
    return zfp_field_2d(data, t, n[0], n[1]);
  case 3:
    return zfp_field_3d(data, t, n[0], n[1], n[2]);
  default:
    return zfp_field_4d(data, t, n[0], n[1], n[2], n[3]);
  }
}

/* Compress data with libzfp (with zfp's full header when asked); the
 * stream's length, *out malloc'd. */
static inline size_t encode(void *data, zfp_type t, int dims, const size_t n[4],
                     const struct tmode *m, int header, uint8_t **out) {
  zfp_field *f = make_field(data, t, dims, n);
  zfp_stream *zs = zfp_stream_open(NULL);
  set_mode(zs, m, t);
  size_t cap = zfp_stream_maximum_size(zs, f);
  *out = calloc(1, cap);
  bitstream *bs = stream_open(*out, cap);
  zfp_stream_set_bit_stream(zs, bs);
  zfp_stream_rewind(zs);
  if (header)
    ck_assert_uint_gt(zfp_write_header(zs, f, ZFP_HEADER_FULL), 0);
  size_t len = zfp_compress(zs, f);
  ck_assert_uint_gt(len, 0);
  stream_close(bs);
  zfp_stream_close(zs);
  zfp_field_free(f);
  return len;
}
#endif

#endif
