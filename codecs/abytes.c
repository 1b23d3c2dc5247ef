/* abytes.c - the decoded-chunk representation (struct abytes): allocation,
 * release, memory accounting, fill-value chunks and offset validation. */
#include "abytes.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/buf.h"
#include "../src/util/zmath.h"

/* Zeroed abytes; the caller fills it in. */
struct abytes *abytes_alloc(void) {
  return calloc(1, sizeof(struct abytes));
}

/* Drop both sources and the offsets; NULL-safe. */
void abytes_free(struct abytes *a) {
  if (!a)
    return;
  bytesrc_unref(a->fixed);
  bytesrc_unref(a->data);
  bytesrc_unref(a->data_enc);
  free(a->offsets);
  free(a);
}

/* Only bytes held in memory count: a lazy window onto a file costs nothing
 * until a view loads it. A window onto memory shares its parent's buffer,
 * so counting the window's size is an estimate, not an exact figure. */
size_t abytes_mem_cost(const struct abytes *a) {
  if (!a)
    return 0;
  size_t cost = sizeof *a;
  if (a->offsets)
    cost += (size_t)(a->n + 1) * sizeof(uint64_t);
  if (a->fixed && a->fixed->mem)
    cost += (size_t)a->fixed->size;
  if (a->data && a->data->mem)
    cost += (size_t)a->data->size;
  return cost;
}

/* Repeat `fill` n times into one malloc'd buffer (*total bytes, at most
 * max). */
static int abytes_repeat(const uint8_t *fill, size_t fill_len, uint64_t n,
                         size_t max, uint8_t **out, size_t *total,
                         struct zerr *err) {
  uint64_t bytes;
  if (zmul_u64(n, fill_len, &bytes) < 0 || bytes > max)
    return zerr_set(err, EFBIG,
                    "fill chunk of %llu elements exceeds the decode limit of "
                    "%zu bytes",
                    (unsigned long long)n, max);
  uint8_t *p = malloc(bytes ? (size_t)bytes : 1);
  if (!p)
    return zerr_set(err, ENOMEM, "out of memory for a %llu-byte fill chunk",
                    (unsigned long long)bytes);
  if (fill_len == 1)
    memset(p, fill[0], (size_t)bytes);
  else if (fill_len > 0) {
    /* Double the filled prefix each round: log(n) memcpy calls. */
    memcpy(p, fill, fill_len);
    size_t done = fill_len;
    while (done < (size_t)bytes) {
      size_t k = done < (size_t)bytes - done ? done : (size_t)bytes - done;
      memcpy(p + done, p, k);
      done += k;
    }
  }
  *out = p;
  *total = (size_t)bytes;
  return 0;
}

/* A missing chunk: spec->nelem copies of the fill value. Fixed types get
 * n*size bytes; variable types get n equal slices of one data buffer. */
int abytes_new_fill(const struct codec_spec *spec, const struct codec_env *env,
                    struct abytes **out, struct zerr *err) {
  uint64_t n = spec->nelem;
  int variable = dtype_has_var_elements(&spec->dtype);
  if (!variable && spec->dtype.size == 0)
    return zerr_set(err, ENOTSUP, "data type '%s' is not supported",
                    spec->dtype.name);
  if (!variable && spec->fill_len != spec->dtype.size)
    return zerr_set(err, EIO,
                    "fill value has %zu bytes, data type '%s' needs %zu",
                    spec->fill_len, spec->dtype.name, spec->dtype.size);
  if (spec->fill_len && !spec->fill)
    return zerr_set(err, EIO, "fill value bytes are missing");
  uint64_t nofs = 0;
  if (variable &&
      (zadd_u64(n, 1, &nofs) < 0 ||
       zmul_u64(nofs, sizeof(uint64_t), &nofs) < 0 || nofs > env->max_decoded))
    return zerr_set(err, EFBIG, "fill chunk of %llu elements is too large",
                    (unsigned long long)n);

  struct abytes *a = abytes_alloc();
  if (!a)
    return zerr_set(err, ENOMEM, "out of memory");
  a->n = n;
  a->elsize = variable ? 0 : spec->dtype.size;
  uint8_t *p = NULL;
  size_t total = 0;
  int rc = abytes_repeat(spec->fill, spec->fill_len, n, env->max_decoded, &p,
                         &total, err);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  struct bytesrc *src = bytesrc_from_mem(p, total);
  if (!src) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  if (!variable) {
    a->fixed = src;
    *out = a;
    return 0;
  }
  a->data = src;
  a->offsets = malloc((size_t)nofs);
  if (!a->offsets) {
    abytes_free(a);
    return zerr_set(err, ENOMEM, "out of memory for %llu offsets",
                    (unsigned long long)n + 1);
  }
  for (uint64_t i = 0; i <= n; i++)
    a->offsets[i] = i * spec->fill_len;
  *out = a;
  return 0;
}

/* The only invariants views rely on: element j is off[j]..off[j+1] and
 * lies inside the data. off[0] need not be 0 (zarrs accepts that). */
int abytes_check_offsets(const uint64_t *off, uint64_t n, uint64_t data_size,
                         struct zerr *err) {
  for (uint64_t i = 0; i < n; i++)
    if (off[i + 1] < off[i])
      return zerr_set(err, EIO,
                      "offsets decrease at element %llu (%llu then %llu)",
                      (unsigned long long)i, (unsigned long long)off[i],
                      (unsigned long long)off[i + 1]);
  if (off[n] > data_size)
    return zerr_set(err, EIO,
                    "last offset %llu lies past the data (%llu bytes)",
                    (unsigned long long)off[n], (unsigned long long)data_size);
  return 0;
}

int abytes_set_var(struct abytes *ab, uint64_t *off, struct zbuf *out,
                   const char *what, struct zerr *err) {
  struct bytesrc *data;
  off[ab->n] = out->len;
  int rc = codec_output_from_buf(out, what, &data, err);
  if (rc < 0) {
    free(off);
    return rc;
  }
  bytesrc_unref(ab->fixed);
  free(ab->offsets);
  bytesrc_unref(ab->data);
  bytesrc_unref(ab->data_enc);
  ab->fixed = NULL;
  ab->elsize = 0;
  ab->offsets = off;
  ab->data = data;
  ab->data_enc = NULL;
  ab->data_chain = NULL;
  ab->data_len = 0;
  return 0;
}
