/* sharding.c - the `sharding_indexed` array->bytes codec: a shard holds a
 * grid of inner chunks, each encoded with its own codec chain, plus an
 * index of (offset, nbytes) pairs, one per inner chunk in C order, at the
 * end (default) or start of the shard. (2^64-1, 2^64-1) marks an empty inner
 * chunk (fill value).
 *
 * Decoding reads the index first (a fixed-size window), then each inner
 * chunk through a window onto the shard. Two ways to use it:
 *   - as a codec (shard_decode): the whole shard assembled in C order, for
 *     chains where sharding is wrapped by other codecs and nested shards;
 *   - one inner chunk at a time, the codec interface's inner chunks
 *     (codec.h; callers go through chain_inner and chain_index_* in
 *     chain.h): the engine reads the index, then decodes only the inner
 *     chunks a view needs.
 * Everything here is immutable codec state plus pure functions: safe from
 * any thread. */
#include "abytes.h"
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/buf.h"
#include "../src/util/zmath.h"

#define SHARD_EMPTY CODEC_INNER_EMPTY

struct shard_state {
  int ndim;
  uint64_t inner[ZMETA_MAX_DIMS]; /* inner chunk shape */
  struct chain *inner_chain;
  struct chain *index_chain;
  uint64_t index_extra; /* bytes the index codecs add (4 per crc32c) */
  int at_start;
};

/* Free the chains. */
static void shard_destroy(void *state) {
  struct shard_state *st = state;
  if (!st)
    return;
  chain_free(st->inner_chain);
  chain_free(st->index_chain);
  free(st);
}

/* The spec of one inner chunk of an array described by `outer`. */
static struct codec_spec inner_spec(const struct shard_state *st,
                                    const struct codec_spec *outer) {
  struct codec_spec s = *outer;
  s.nelem = 1;
  for (int d = 0; d < st->ndim; d++) {
    s.shape[d] = st->inner[d];
    s.nelem *= st->inner[d];
  }
  return s;
}

/* The spec of the index: grid + [2] of uint64. */
static struct codec_spec index_spec(int ndim, const uint64_t *grid) {
  static const uint8_t zero8[8];
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = ndim + 1;
  s.nelem = 2;
  for (int d = 0; d < ndim; d++) {
    s.shape[d] = grid[d];
    s.nelem *= grid[d];
  }
  s.shape[ndim] = 2;
  s.dtype = dtype_of(DT_UINT64);
  s.fill = zero8;
  s.fill_len = 8;
  return s;
}

/* Parse chunk_shape, codecs, index_codecs, index_location. */
static int shard_create(json_t *config, const struct codec_spec *decoded,
                        void **state, struct zerr *err) {
  static const char *const allowed[] = {"chunk_shape", "codecs", "index_codecs",
                                        "index_location", NULL};
  if (!config)
    return zerr_set(err, EIO, "sharding_indexed: configuration is required");
  ZTRY(codec_cfg_only(config, "sharding_indexed", allowed, err));
  json_t *cs = json_object_get(config, "chunk_shape");
  json_t *codecs = json_object_get(config, "codecs");
  json_t *icodecs = json_object_get(config, "index_codecs");
  const char *loc;
  ZTRY(codec_cfg_str(config, "index_location", 0, "end", &loc, err));
  if (strcmp(loc, "end") && strcmp(loc, "start"))
    return zerr_set(err, EIO,
                    "sharding_indexed: index_location must be start or end");
  if (!json_is_array(cs) || (int)json_array_size(cs) != decoded->ndim)
    return zerr_set(err, EIO,
                    "sharding_indexed: chunk_shape must list %d sizes",
                    decoded->ndim);
  if (!json_is_array(codecs) || !json_is_array(icodecs))
    return zerr_set(err, EIO,
                    "sharding_indexed: codecs and index_codecs are required");
  struct shard_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "sharding_indexed: out of memory");
  st->ndim = decoded->ndim;
  st->at_start = !strcmp(loc, "start");
  int rc = 0;
  for (int d = 0; d < st->ndim && rc == 0; d++) {
    json_t *v = json_array_get(cs, (size_t)d);
    if (!json_is_integer(v) || json_integer_value(v) <= 0)
      rc = zerr_set(err, EIO, "sharding_indexed: bad chunk_shape");
    else
      st->inner[d] = (uint64_t)json_integer_value(v);
  }
  /* The index must have a known encoded size: bytes plus crc32c only. */
  for (size_t i = 0; i < json_array_size(icodecs) && rc == 0; i++) {
    const char *name;
    json_t *cfg;
    int optional;
    rc = codec_entry_parse(json_array_get(icodecs, i), &name, &cfg, &optional,
                           err);
    if (rc == 0 && !strcmp(name, "crc32c"))
      st->index_extra += 4;
    else if (rc == 0 && strcmp(name, "bytes"))
      rc = zerr_set(err, ENOTSUP,
                    "sharding_indexed: unsupported index codec '%s'", name);
  }
  if (rc == 0) {
    struct codec_spec is = inner_spec(st, decoded);
    rc = chain_build(codecs, &is, &st->inner_chain, err);
    if (rc < 0)
      zerr_prefix(err, "sharding_indexed codecs: ");
  }
  if (rc == 0) {
    uint64_t one[ZMETA_MAX_DIMS];
    for (int d = 0; d < st->ndim; d++)
      one[d] = 1;
    struct codec_spec xs = index_spec(st->ndim, one);
    rc = chain_build(icodecs, &xs, &st->index_chain, err);
    if (rc < 0)
      zerr_prefix(err, "sharding_indexed index_codecs: ");
  }
  if (rc < 0) {
    shard_destroy(st);
    return rc;
  }
  *state = st;
  return 0;
}

/* Inner chunks per dimension of a shard of shape spec->shape, and their
 * product; the inner shape must divide the shard shape. */
static int shard_grid(const struct shard_state *st,
                      const struct codec_spec *spec, uint64_t *grid,
                      uint64_t *nin, struct zerr *err) {
  uint64_t n = 1;
  for (int d = 0; d < st->ndim; d++) {
    if (spec->shape[d] % st->inner[d])
      return zerr_set(err, EIO,
                      "sharding_indexed: inner chunk shape does not divide "
                      "the shard shape");
    grid[d] = spec->shape[d] / st->inner[d];
    if (zmul_u64(n, grid[d], &n) < 0)
      return zerr_set(err, EFBIG, "sharding_indexed: too many inner chunks");
  }
  *nin = n;
  return 0;
}

/* Decode the index into 2*N host-order uint64 values (malloc'd); every
 * non-empty entry must lie inside the shard. */
static int shard_index(const struct shard_state *st, const uint64_t *grid,
                       uint64_t nin, struct bytesrc *in,
                       const struct codec_env *env, uint64_t **out,
                       struct zerr *err) {
  uint64_t isize;
  if (zmul_u64(nin, 16, &isize) < 0 ||
      zadd_u64(isize, st->index_extra, &isize) < 0 || isize > env->max_decoded)
    return zerr_set(err, EFBIG, "sharding_indexed: index too large");
  if (isize > in->size)
    return zerr_set(err, EIO,
                    "sharding_indexed: shard of %llu bytes is shorter than "
                    "its %llu-byte index",
                    (unsigned long long)in->size, (unsigned long long)isize);
  struct bytesrc *win;
  ZTRY(bytesrc_sub(in, st->at_start ? 0 : in->size - isize, isize, &win, err));
  struct codec_spec xs = index_spec(st->ndim, grid);
  struct abytes *ia = NULL;
  int rc = chain_decode(st->index_chain, &xs, win, env, &ia, err);
  bytesrc_unref(win);
  if (rc < 0)
    return zerr_prefix(err, "sharding_indexed index: ");
  uint64_t *idx = malloc((size_t)isize);
  if (!idx) {
    abytes_free(ia);
    return zerr_set(err, ENOMEM, "sharding_indexed: out of memory");
  }
  rc = bytesrc_read_range(ia->fixed, 0, (size_t)(nin * 16), idx, err);
  abytes_free(ia);
  for (uint64_t c = 0; c < nin && rc == 0; c++) {
    uint64_t off = idx[2 * c], len = idx[2 * c + 1];
    if (off == SHARD_EMPTY && len == SHARD_EMPTY)
      continue;
    if (off > in->size || len > in->size - off)
      rc = zerr_set(err, EIO,
                    "sharding_indexed: inner chunk %llu at %llu+%llu lies "
                    "outside the %llu-byte shard",
                    (unsigned long long)c, (unsigned long long)off,
                    (unsigned long long)len, (unsigned long long)in->size);
  }
  if (rc < 0) {
    free(idx);
    return rc;
  }
  *out = idx;
  return 0;
}

/* Decode inner chunk c (its index entry at idx[2c]) into memory. */
static int shard_inner(const struct shard_state *st,
                       const struct codec_spec *ispec, const uint64_t *idx,
                       uint64_t c, struct bytesrc *in,
                       const struct codec_env *env, struct abytes **out,
                       struct zerr *err) {
  uint64_t off = idx[2 * c], len = idx[2 * c + 1];
  if (off == SHARD_EMPTY && len == SHARD_EMPTY)
    return abytes_new_fill(ispec, env, out, err);
  struct bytesrc *win; /* shard_index checked that it fits */
  ZTRY(bytesrc_sub(in, off, len, &win, err));
  int rc = chain_decode(st->inner_chain, ispec, win, env, out, err);
  bytesrc_unref(win);
  if (rc < 0)
    return zerr_prefix(
        err, "sharding_indexed inner chunk %llu: ", (unsigned long long)c);
  return 0;
}

/* Shard-linear index of element e of inner chunk c. */
static uint64_t shard_pos(const struct shard_state *st,
                          const struct codec_spec *spec, const uint64_t *grid,
                          uint64_t c, uint64_t e) {
  uint64_t ci[ZMETA_MAX_DIMS], ei[ZMETA_MAX_DIMS];
  for (int d = st->ndim - 1; d >= 0; d--) {
    ci[d] = c % grid[d];
    c /= grid[d];
    ei[d] = e % st->inner[d];
    e /= st->inner[d];
  }
  uint64_t pos = 0;
  for (int d = 0; d < st->ndim; d++)
    pos = pos * spec->shape[d] + ci[d] * st->inner[d] + ei[d];
  return pos;
}

/* Read the index, decode every inner chunk, assemble in C order. */
static int shard_decode(const void *state, const struct codec_spec *spec,
                        struct bytesrc *in, const struct codec_env *env,
                        struct abytes **out, struct zerr *err) {
  const struct shard_state *st = state;
  uint64_t grid[ZMETA_MAX_DIMS], nin;
  ZTRY(shard_grid(st, spec, grid, &nin, err));
  uint64_t *idx = NULL;
  ZTRY(shard_index(st, grid, nin, in, env, &idx, err));
  struct codec_spec ispec = inner_spec(st, spec);
  uint64_t n = spec->nelem, per = ispec.nelem;
  int variable = dtype_has_var_elements(&spec->dtype);
  size_t es = spec->dtype.size;
  struct abytes *a = abytes_alloc();
  uint64_t *lens = NULL; /* variable: element lengths in shard order */
  struct zbuf data;
  zbuf_init(&data, env->max_decoded);
  uint8_t *fixed = NULL;
  int rc = 0;
  if (!a) {
    rc = zerr_set(err, ENOMEM, "sharding_indexed: out of memory");
    goto out;
  }
  a->n = n;
  a->elsize = variable ? 0 : es;
  if (variable) {
    lens = calloc((size_t)n + 1, sizeof *lens);
    a->offsets = calloc((size_t)n + 1, sizeof *a->offsets);
    if (!lens || !a->offsets) {
      rc = zerr_set(err, ENOMEM, "sharding_indexed: out of memory");
      goto out;
    }
  } else {
    uint64_t bytes;
    if (zmul_u64(n, es, &bytes) < 0 || bytes > env->max_decoded) {
      rc = zerr_set(err, EFBIG, "sharding_indexed: shard too large");
      goto out;
    }
    fixed = malloc((size_t)bytes ? (size_t)bytes : 1);
    if (!fixed) {
      rc = zerr_set(err, ENOMEM, "sharding_indexed: out of memory");
      goto out;
    }
  }
  /* Variable: first pass learns lengths, second copies bytes; inner chunks
   * are decoded once per pass (cheap compared with holding them all). */
  for (int pass = 0; pass < (variable ? 2 : 1) && rc == 0; pass++) {
    for (uint64_t c = 0; c < nin && rc == 0; c++) {
      struct abytes *ia = NULL;
      rc = shard_inner(st, &ispec, idx, c, in, env, &ia, err);
      if (rc < 0)
        break;
      struct bytesrc *src = NULL;
      if (variable)
        rc = chain_load_data(ia, env, &src, err);
      else
        rc = codec_load_input(ia->fixed, env, "sharding_indexed", &src, err);
      if (rc == 0 && (ia->n != per || (!variable && ia->elsize != es)))
        rc = zerr_set(err, EIO,
                      "sharding_indexed: inner chunk %llu has the "
                      "wrong element count",
                      (unsigned long long)c);
      if (rc == 0 && src->size && !src->mem) {
        bytesrc_unref(src);
        src = NULL;
        rc = zerr_set(err, EIO, "sharding_indexed: inner data not loaded");
      }
      for (uint64_t e = 0; e < per && rc == 0; e++) {
        uint64_t p = shard_pos(st, spec, grid, c, e);
        if (!variable) {
          memcpy(fixed + p * es, src->mem + e * es, es);
        } else if (pass == 0) {
          lens[p] = ia->offsets[e + 1] - ia->offsets[e];
        } else if (lens[p]) {
          memcpy(data.data + a->offsets[p], src->mem + ia->offsets[e],
                 (size_t)lens[p]);
        }
      }
      bytesrc_unref(src);
      abytes_free(ia);
    }
    if (variable && pass == 0 && rc == 0) {
      uint64_t pos = 0;
      for (uint64_t k = 0; k < n; k++) {
        a->offsets[k] = pos;
        pos += lens[k];
      }
      a->offsets[n] = pos;
      rc = zbuf_reserve(&data, (size_t)pos, err);
      data.len = (size_t)pos;
    }
  }
  if (rc == 0 && variable) {
    rc = codec_output_from_buf(&data, "sharding_indexed", &a->data, err);
  } else if (rc == 0) {
    a->fixed = bytesrc_from_mem(fixed, (size_t)(n * es));
    fixed = NULL;
    if (!a->fixed)
      rc = zerr_set(err, ENOMEM, "sharding_indexed: out of memory");
  }
out:
  free(idx);
  free(lens);
  free(fixed);
  zbuf_free(&data);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* The inner chain and shape (codec.h: inner chunks). */
static const struct chain *shard_inner_chain(const void *state,
                                             uint64_t *shape) {
  const struct shard_state *st = state;
  memcpy(shape, st->inner, sizeof(uint64_t) * (size_t)st->ndim);
  return st->inner_chain;
}

/* The index of a shard whose decoded shape is spec->shape (codec.h). */
static int shard_index_read(const void *state, const struct codec_spec *spec,
                            struct bytesrc *shard, const struct codec_env *env,
                            uint64_t **out, uint64_t *nin, struct zerr *err) {
  const struct shard_state *st = state;
  uint64_t grid[ZMETA_MAX_DIMS];
  ZTRY(shard_grid(st, spec, grid, nin, err));
  return shard_index(st, grid, *nin, shard, env, out, err);
}

/* One inner chunk through an index from shard_index_read (codec.h). */
static int shard_inner_decode(const void *state, const struct codec_spec *spec,
                              struct bytesrc *shard, const uint64_t *index,
                              uint64_t c, const struct codec_env *env,
                              struct abytes **out, struct zerr *err) {
  const struct shard_state *st = state;
  struct codec_spec ispec = inner_spec(st, spec);
  return shard_inner(st, &ispec, index, c, shard, env, out, err);
}

const struct codec_impl codec_sharding = {
    .name = "sharding_indexed",
    .kind = CODEC_A2B,
    .create = shard_create,
    .destroy = shard_destroy,
    .decode_array = shard_decode,
    .inner_chain = shard_inner_chain,
    .inner_index = shard_index_read,
    .inner_decode = shard_inner_decode,
};
