/* testcodec.h - helpers shared by the codec unit tests: a 1-D spec and a
 * chain built from JSON text. Header-only, test code only (a bad test JSON
 * literal fails the test at once). */
#ifndef ZARRFS_TESTCODEC_H
#define ZARRFS_TESTCODEC_H

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <string.h>

#include "../../codecs/chain.h"

static const uint8_t testcodec_zero_fill[16];

/* A 1-D spec of n elements of dt with a zero fill. */
static inline struct codec_spec tc_spec_1d(struct dtype dt, uint64_t n) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = n;
  s.nelem = n;
  s.dtype = dt;
  s.fill = testcodec_zero_fill;
  s.fill_len = dt.size;
  return s;
}

/* Build a chain from JSON text; chain_build's result (*out NULL on error). */
static inline int tc_build(const char *json, const struct codec_spec *spec,
                           struct chain **out, struct zerr *err) {
  json_error_t je;
  json_t *j = json_loads(json, 0, &je);
  ck_assert_msg(j != NULL, "bad test JSON %s: %s", json, je.text);
  *out = NULL;
  int rc = chain_build(j, spec, out, err);
  json_decref(j);
  return rc;
}

#endif
