/* chain.c - build a codec chain from a `codecs` list and run it backwards to
 * decode a chunk (see chain.h).
 *
 * What each codec's create() sees: array->array codecs and the array->bytes
 * codec get the spec of the array they decode into (the array's spec,
 * mapped through every earlier array->array codec); bytes->bytes codecs get
 * the spec the array->bytes codec decodes into, so codecs like blosc can
 * default their typesize from the element size. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"
#include "dstream.h"

struct chain_stage {
  const struct codec_impl *impl;
  void *state; /* owned; released with impl->destroy */
};

struct chain {
  size_t n_a2a;
  struct chain_stage *a2a; /* in list (encode) order */
  struct chain_stage a2b;
  size_t n_b2b;
  struct chain_stage *b2b; /* in list (encode) order */
};

/* Release every created stage; NULL-safe. */
void chain_free(struct chain *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n_a2a; i++)
    if (c->a2a[i].impl->destroy)
      c->a2a[i].impl->destroy(c->a2a[i].state);
  if (c->a2b.impl && c->a2b.impl->destroy)
    c->a2b.impl->destroy(c->a2b.state);
  for (size_t i = 0; i < c->n_b2b; i++)
    if (c->b2b[i].impl->destroy)
      c->b2b[i].impl->destroy(c->b2b[i].state);
  free(c->a2a);
  free(c->b2b);
  free(c);
}

/* Create one stage, prefixing its errors with the codec name. */
static int chain_stage_create(const struct codec_impl *impl, json_t *config,
                              const struct codec_spec *decoded,
                              struct chain_stage *st, struct zerr *err) {
  st->impl = impl;
  st->state = NULL;
  int rc = impl->create ? impl->create(config, decoded, &st->state, err) : 0;
  if (rc < 0)
    st->impl = NULL;
  return rc;
}

static const char *const chain_kind_names[] = {"?", "array->array",
                                               "array->bytes", "bytes->bytes"};

/* Two passes: first resolve names and check the order (so a bad list is
 * reported before any codec parses its configuration), then create. */
int chain_build(json_t *codecs, const struct codec_spec *decoded,
                struct chain **out, struct zerr *err) {
  if (!json_is_array(codecs))
    return zerr_set(err, EIO, "'codecs' must be a list");
  size_t len = json_array_size(codecs);
  const struct codec_impl **impls = calloc(len ? len : 1, sizeof *impls);
  if (!impls)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = 0;
  size_t n_a2a = 0, n_b2b = 0;
  const char *a2b_name = NULL;
  for (size_t i = 0; i < len; i++) {
    const char *name;
    json_t *config;
    int optional;
    rc = codec_entry_parse(json_array_get(codecs, i), &name, &config, &optional,
                           err);
    if (rc < 0)
      goto out;
    const struct codec_impl *impl = codec_lookup(name);
    if (!impl) {
      if (optional)
        continue; /* must_understand: false lets a reader skip it */
      rc = zerr_set(err, ENOTSUP, "unsupported codec '%s'", name);
      goto out;
    }
    if (impl->built_without) {
      if (optional)
        continue;
      rc = zerr_set(err, ENOTSUP,
                    "codec '%s': zarrfs was built without %s "
                    "(configure --with-%s)",
                    name, impl->built_without, impl->built_without);
      goto out;
    }
    const char *kind = chain_kind_names[impl->kind];
    if (impl->kind == CODEC_A2A && a2b_name) {
      rc = zerr_set(err, EIO,
                    "codec '%s' (%s) must come before the array->bytes "
                    "codec '%s'",
                    name, kind, a2b_name);
      goto out;
    }
    if (impl->kind == CODEC_A2B && a2b_name) {
      rc = zerr_set(err, EIO, "more than one array->bytes codec ('%s', '%s')",
                    a2b_name, name);
      goto out;
    }
    if (impl->kind == CODEC_B2B && !a2b_name) {
      rc = zerr_set(err, EIO,
                    "codec '%s' (%s) must come after the array->bytes codec",
                    name, kind);
      goto out;
    }
    if (impl->kind == CODEC_A2B)
      a2b_name = name;
    impls[i] = impl;
    n_a2a += impl->kind == CODEC_A2A;
    n_b2b += impl->kind == CODEC_B2B;
  }
  if (!a2b_name) {
    rc = zerr_set(err, EIO, "missing array->bytes codec");
    goto out;
  }

  struct chain *c = calloc(1, sizeof *c);
  if (c) {
    c->a2a = calloc(n_a2a ? n_a2a : 1, sizeof *c->a2a);
    c->b2b = calloc(n_b2b ? n_b2b : 1, sizeof *c->b2b);
  }
  if (!c || !c->a2a || !c->b2b) {
    chain_free(c);
    rc = zerr_set(err, ENOMEM, "out of memory");
    goto out;
  }
  struct codec_spec cur = *decoded;
  for (size_t i = 0; i < len && rc == 0; i++) {
    if (!impls[i])
      continue;
    const char *name;
    json_t *config;
    int optional;
    codec_entry_parse(json_array_get(codecs, i), &name, &config, &optional,
                      NULL);
    switch (impls[i]->kind) {
    case CODEC_A2A: {
      struct chain_stage *st = &c->a2a[c->n_a2a];
      rc = chain_stage_create(impls[i], config, &cur, st, err);
      if (rc < 0)
        break;
      c->n_a2a++;
      struct codec_spec next;
      rc = impls[i]->encoded_spec(st->state, &cur, &next, err);
      if (rc == 0)
        cur = next;
      break;
    }
    case CODEC_A2B:
      rc = chain_stage_create(impls[i], config, &cur, &c->a2b, err);
      break;
    case CODEC_B2B:
      rc = chain_stage_create(impls[i], config, &cur, &c->b2b[c->n_b2b], err);
      if (rc == 0)
        c->n_b2b++;
      break;
    }
  }
  if (rc < 0) {
    chain_free(c);
    goto out;
  }
  *out = c;
out:
  free(impls);
  return rc;
}

/* Output of an array->bytes or array->array step must be what the spec
 * promised, or views would index past it. */
static int chain_check_abytes(const struct abytes *a,
                              const struct codec_spec *spec, const char *codec,
                              struct zerr *err) {
  if (a->n != spec->nelem)
    return zerr_set(err, EIO, "%s: decoded %llu elements, expected %llu", codec,
                    (unsigned long long)a->n, (unsigned long long)spec->nelem);
  if (a->elsize) {
    uint64_t want;
    if (!a->fixed || zmul_u64(a->n, a->elsize, &want) < 0 ||
        a->fixed->size != want)
      return zerr_set(err, EIO, "%s: decoded byte count does not match", codec);
  } else if (!a->offsets || (!a->data && !a->data_enc)) {
    return zerr_set(err, EIO, "%s: decoded no offsets or data", codec);
  }
  return 0;
}

/* encoded (borrowed) through the bytes->bytes stages, last first: a new
 * reference in *out (encoded itself with none). */
static int chain_run_b2b(const struct chain *c, struct bytesrc *encoded,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  struct bytesrc *cur = bytesrc_ref(encoded);
  int rc = 0;
  for (size_t i = c->n_b2b; i-- > 0 && rc == 0;) {
    struct bytesrc *next = NULL;
    rc = c->b2b[i].impl->decode_bytes(c->b2b[i].state, cur, env, &next, err);
    bytesrc_unref(cur);
    cur = rc == 0 ? next : NULL;
  }
  *out = cur;
  return rc;
}

/* b2b in reverse, then a2b, then a2a in reverse. */
int chain_decode(const struct chain *c, const struct codec_spec *spec,
                 struct bytesrc *encoded, const struct codec_env *env,
                 struct abytes **out, struct zerr *err) {
  /* Specs seen by each a2a stage and by the a2b codec, for this chunk. */
  struct codec_spec one[2];
  struct codec_spec *specs = one;
  if (c->n_a2a + 1 > 2) {
    specs = calloc(c->n_a2a + 1, sizeof *specs);
    if (!specs)
      return zerr_set(err, ENOMEM, "out of memory");
  }
  int rc = 0;
  specs[0] = *spec;
  for (size_t i = 0; i < c->n_a2a && rc == 0; i++)
    rc = c->a2a[i].impl->encoded_spec(c->a2a[i].state, &specs[i], &specs[i + 1],
                                      err);

  struct bytesrc *cur = NULL;
  if (rc == 0)
    rc = chain_run_b2b(c, encoded, env, &cur, err);
  struct abytes *a = NULL;
  if (rc == 0) {
    const struct codec_spec *s = &specs[c->n_a2a];
    rc = c->a2b.impl->decode_array(c->a2b.state, s, cur, env, &a, err);
    if (rc == 0)
      rc = chain_check_abytes(a, s, c->a2b.impl->name, err);
  }
  bytesrc_unref(cur);
  /* decode_a2a borrows its input; the chain frees it. */
  for (size_t i = c->n_a2a; i-- > 0 && rc == 0;) {
    struct abytes *next = NULL;
    rc = c->a2a[i].impl->decode_a2a(c->a2a[i].state, &specs[i], a, env, &next,
                                    err);
    abytes_free(a);
    a = rc == 0 ? next : NULL;
    if (rc == 0)
      rc = chain_check_abytes(a, &specs[i], c->a2a[i].impl->name, err);
  }
  if (specs != one)
    free(specs);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* ---- elements as records in memory ---- */

/* See chain.h. */
int chain_records_capable(const struct chain *c) {
  return c && !c->n_a2a && c->n_b2b && c->a2b.impl->elems_spans;
}

/* See chain.h. */
int chain_records_decode(const struct chain *c, const struct codec_spec *spec,
                         struct bytesrc *encoded, const struct codec_env *env,
                         struct chain_records *out, struct zerr *err) {
  *out = (struct chain_records){0};
  if (!chain_records_capable(c))
    return zerr_set(err, ENOTSUP, "elements are not records");
  struct bytesrc *cur;
  int rc = chain_run_b2b(c, encoded, env, &cur, err);
  if (rc < 0)
    return rc;
  /* The decoded bytes are ours alone (a stage's new buffer), else a
   * copy: the caller writes over them. */
  size_t size = 0;
  uint8_t *buf = bytesrc_take_mem(cur, &size);
  if (!buf) {
    struct bytesrc *mem;
    rc = bytesrc_load(cur, env->max_decoded, &mem, err);
    if (rc == 0) {
      size = (size_t)mem->size;
      if ((buf = malloc(size ? size : 1)))
        memcpy(buf, mem->mem, size);
      else
        rc = zerr_set(err, ENOMEM, "out of memory for %zu bytes", size);
      bytesrc_unref(mem);
    }
  }
  bytesrc_unref(cur);
  if (rc < 0)
    return rc;
  *out = (struct chain_records){buf, size, spec->nelem, 0, 0, &c->a2b};
  return 0;
}

/* See chain.h. */
long chain_records_next(struct chain_records *r, uint64_t *start, uint64_t *len,
                        size_t max, struct zerr *err) {
  return r->a2b->impl->elems_spans(r->a2b->state, r->buf, 0, r->size, 1, &r->at,
                                   &r->k, r->n, start, len, max, err);
}

/* See chain.h. */
int chain_records_abytes(struct chain_records *r, const struct codec_spec *spec,
                         const struct codec_env *env, struct abytes **out,
                         struct zerr *err) {
  const struct chain_stage *a2b = r->a2b;
  struct bytesrc *mem = bytesrc_from_mem(r->buf, r->size);
  *r = (struct chain_records){0};
  if (!mem)
    return zerr_set(err, ENOMEM, "out of memory");
  struct abytes *a = NULL;
  int rc = a2b->impl->decode_array(a2b->state, spec, mem, env, &a, err);
  if (rc == 0)
    rc = chain_check_abytes(a, spec, a2b->impl->name, err);
  bytesrc_unref(mem);
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* See chain.h. */
void chain_records_free(struct chain_records *r) {
  if (!r)
    return;
  free(r->buf);
  *r = (struct chain_records){0};
}

/* Only the array->bytes codec: byte ranges map straight through. */
int chain_is_passthrough(const struct chain *c) {
  return c && c->n_b2b == 0 && c->n_a2a == 0;
}

/* Run the deferred data codecs (see chain.h). */
int chain_load_data(const struct abytes *a, const struct codec_env *env,
                    struct bytesrc **out, struct zerr *err) {
  if (a->data) {
    *out = bytesrc_ref(a->data);
    return 0;
  }
  if (!a->data_chain || !a->data_enc)
    return zerr_set(err, EIO, "chunk has no data section");
  struct codec_spec dspec;
  memset(&dspec, 0, sizeof dspec);
  dspec.ndim = 1;
  dspec.shape[0] = a->data_len;
  dspec.nelem = a->data_len;
  dspec.dtype = dtype_of(DT_UINT8);
  static const uint8_t zero = 0;
  dspec.fill = &zero;
  dspec.fill_len = 1;
  struct abytes *da = NULL;
  int rc = chain_decode(a->data_chain, &dspec, a->data_enc, env, &da, err);
  if (rc < 0)
    return zerr_prefix(err, "zarrs.vlen data: ");
  if (da->elsize != 1 || !da->fixed || da->fixed->size != a->data_len) {
    unsigned long long got = da->fixed ? da->fixed->size : 0;
    abytes_free(da);
    return zerr_set(err, EIO,
                    "zarrs.vlen: data length %llu disagrees with last offset "
                    "%llu",
                    got, (unsigned long long)a->data_len);
  }
  *out = bytesrc_ref(da->fixed);
  abytes_free(da);
  return 0;
}

/* ---- partial decoding ---- */

/* See chain.h. */
unsigned chain_partial_caps(const struct chain *c) {
  if (!c || c->n_a2a || c->n_b2b || !c->a2b.impl->partial_caps)
    return 0;
  return c->a2b.impl->partial_caps(c->a2b.state);
}

/* See chain.h. */
int chain_partial_open(const struct chain *c, const struct codec_spec *spec,
                       struct bytesrc *chunk, struct codec_partial *p,
                       struct zerr *err) {
  memset(p, 0, sizeof *p);
  unsigned want = CODEC_PARTIAL_OFFSETS | CODEC_PARTIAL_ELEMENTS;
  if (!(chain_partial_caps(c) & want))
    return zerr_set(err, ENOTSUP, "%s: chunks cannot be read partially",
                    c && c->a2b.impl ? c->a2b.impl->name : "chain");
  p->impl = c->a2b.impl;
  p->state = c->a2b.state;
  int rc = p->impl->partial_open(p->state, spec, chunk, p, err);
  if (rc < 0)
    chain_partial_close(p);
  return rc;
}

/* See chain.h. */
int chain_partial_offsets(const struct codec_partial *p, uint64_t first,
                          uint64_t count, uint64_t *out, struct zerr *err) {
  if (!p->impl || p->elsize || !p->impl->partial_offsets)
    return zerr_set(err, ENOTSUP, "no variable-length offsets to read");
  return p->impl->partial_offsets(p, first, count, out, err);
}

/* See chain.h. */
int chain_partial_elements(const struct codec_partial *p, uint64_t first,
                           uint64_t count, void *out, struct zerr *err) {
  if (!p->impl || !p->elsize || !p->impl->partial_elements)
    return zerr_set(err, ENOTSUP, "no fixed-size elements to read");
  return p->impl->partial_elements(p, first, count, out, err);
}

/* See chain.h. */
int chain_partial_range(const struct codec_partial *p, uint64_t first,
                        uint64_t count, uint64_t *off, uint64_t *len,
                        struct zerr *err) {
  if (!p->elsize || !p->data)
    return zerr_set(err, ENOTSUP, "elements are not stored plain");
  if (first > p->n || count > p->n - first)
    return zerr_set(err, EIO, "elements %llu..+%llu past the chunk (%llu)",
                    (unsigned long long)first, (unsigned long long)count,
                    (unsigned long long)p->n);
  *off = first * p->elsize; /* <= n * elsize: the chunk's size */
  *len = count * p->elsize;
  return 0;
}

/* See chain.h. */
int chain_partial_stream(const struct codec_partial *p, uint64_t size,
                         const struct codec_env *env, struct bytesrc **out,
                         struct zerr *err) {
  const struct chain *c = p->data_chain;
  /* One stage that streams, over elements stored plain (`bytes` on
   * uint8): its output is the element bytes. */
  if (!p->data_enc || !c || c->n_a2a || c->n_b2b != 1 ||
      !c->b2b[0].impl->stream || !c->a2b.impl->partial_caps ||
      !(c->a2b.impl->partial_caps(c->a2b.state) & CODEC_PARTIAL_PLAIN))
    return zerr_set(err, ENOTSUP, "element bytes cannot be streamed");
  int rc =
      dstream_open(c->b2b[0].impl->stream, p->data_enc, size, env, out, err);
  return rc < 0 ? zerr_prefix(err, "zarrs.vlen data: ") : 0;
}

/* See chain.h. */
void chain_partial_close(struct codec_partial *p) {
  if (p->impl && p->impl->partial_close)
    p->impl->partial_close(p);
  bytesrc_unref(p->data);
  bytesrc_unref(p->data_enc);
  bytesrc_unref(p->src);
  memset(p, 0, sizeof *p);
}

/* ---- inner chunks ---- */

struct chain_index {
  uint64_t n;
  uint64_t *ranges; /* 2*n (offset, length); CODEC_INNER_EMPTY pairs */
};

/* See chain.h. */
const struct chain *chain_inner(const struct chain *c, uint64_t *shape) {
  if (!c || c->n_a2a || c->n_b2b || !c->a2b.impl->inner_chain)
    return NULL;
  return c->a2b.impl->inner_chain(c->a2b.state, shape);
}

/* See chain.h. */
int chain_index_read(const struct chain *c, const struct codec_spec *spec,
                     struct bytesrc *chunk, const struct codec_env *env,
                     struct chain_index **out, struct zerr *err) {
  uint64_t shape[ZMETA_MAX_DIMS];
  if (!chain_inner(c, shape))
    return zerr_set(err, ENOTSUP, "chunks hold no inner chunks");
  struct chain_index *x = calloc(1, sizeof *x);
  if (!x)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = c->a2b.impl->inner_index(c->a2b.state, spec, chunk, env, &x->ranges,
                                    &x->n, err);
  if (rc < 0) {
    free(x);
    return rc;
  }
  *out = x;
  return 0;
}

/* See chain.h. */
uint64_t chain_index_count(const struct chain_index *x) { return x->n; }

/* See chain.h. */
size_t chain_index_cost(const struct chain_index *x) {
  return sizeof *x + (size_t)x->n * 2 * sizeof(uint64_t);
}

/* See chain.h. */
int chain_index_range(const struct chain_index *x, uint64_t i, uint64_t *off,
                      uint64_t *len) {
  if (x->ranges[2 * i] == CODEC_INNER_EMPTY &&
      x->ranges[2 * i + 1] == CODEC_INNER_EMPTY)
    return 0;
  *off = x->ranges[2 * i];
  *len = x->ranges[2 * i + 1];
  return 1;
}

/* See chain.h. */
int chain_inner_decode(const struct chain *c, const struct codec_spec *spec,
                       struct bytesrc *chunk, const struct chain_index *x,
                       uint64_t i, const struct codec_env *env,
                       struct abytes **out, struct zerr *err) {
  uint64_t shape[ZMETA_MAX_DIMS];
  if (!chain_inner(c, shape))
    return zerr_set(err, ENOTSUP, "chunks hold no inner chunks");
  if (i >= x->n)
    return zerr_set(err, EIO, "inner chunk %llu past the index (%llu)",
                    (unsigned long long)i, (unsigned long long)x->n);
  return c->a2b.impl->inner_decode(c->a2b.state, spec, chunk, x->ranges, i, env,
                                   out, err);
}

/* See chain.h. */
void chain_index_free(struct chain_index *x) {
  if (!x)
    return;
  free(x->ranges);
  free(x);
}

/* ---- elements as a stream ---- */

struct chain_elems {
  const struct codec_impl *impl; /* the array->bytes codec */
  const void *state;             /* borrowed: its state */
  struct bytesrc *src;           /* owned: the decoded stream */
};

/* See chain.h. */
int chain_elems_capable(const struct chain *c) {
  return c && !c->n_a2a && c->n_b2b == 1 && c->b2b[0].impl->stream &&
         c->a2b.impl->elems_open;
}

/* See chain.h. */
int chain_elems_stated(const struct chain *c, const struct codec_spec *spec,
                       struct bytesrc *chunk, uint64_t *total,
                       struct zerr *err) {
  if (!chain_elems_capable(c) || !c->a2b.impl->elems_total)
    return 0;
  uint64_t decoded;
  int rc = dstream_stated_size(c->b2b[0].impl->stream, chunk, &decoded, err);
  if (rc <= 0)
    return rc;
  return c->a2b.impl->elems_total(c->a2b.state, decoded, spec->nelem, total) ==
         0;
}

/* See chain.h. */
int chain_elems_open(const struct chain *c, const struct codec_spec *spec,
                     struct bytesrc *chunk, const struct codec_env *env,
                     struct chain_elems **out, struct chain_elem_pos *first,
                     struct zerr *err) {
  if (!chain_elems_capable(c))
    return zerr_set(err, ENOTSUP, "elements cannot be streamed");
  struct chain_elems *s = calloc(1, sizeof *s);
  if (!s)
    return zerr_set(err, ENOMEM, "out of memory");
  s->impl = c->a2b.impl;
  s->state = c->a2b.state;
  int rc = dstream_open(c->b2b[0].impl->stream, chunk, UINT64_MAX, env, &s->src,
                        err);
  first->k = 0;
  if (rc == 0)
    rc = s->impl->elems_open(s->state, spec, s->src, &first->at, err);
  if (rc < 0) {
    chain_elems_close(s);
    return rc;
  }
  *out = s;
  return 0;
}

/* See chain.h. */
int chain_elems_len(struct chain_elems *s, const struct chain_elem_pos *p,
                    uint64_t *len, struct zerr *err) {
  return s->impl->elems_len(s->state, s->src, p->at, len, err);
}

/* See chain.h. */
int chain_elems_read(struct chain_elems *s, const struct chain_elem_pos *p,
                     uint64_t len, void *dst, struct zerr *err) {
  return s->impl->elems_read(s->state, s->src, p->at, len, dst, err);
}

/* See chain.h. */
void chain_elems_step(const struct chain_elems *s, struct chain_elem_pos *p,
                      uint64_t len) {
  p->at = s->impl->elems_next(s->state, p->at, len);
  p->k++;
}

/* Stream bytes chain_elems_sum reads at a time: some 10,000 records of
 * short strings a read, well inside the stream's window. */
#define CHAIN_WALK_BLOCK ((size_t)256 << 10)

/* See chain.h. */
int chain_elems_sum(struct chain_elems *s, struct chain_elem_pos *p, uint64_t n,
                    uint64_t *sum, struct zerr *err) {
  uint8_t *buf = s->impl->elems_walk ? malloc(CHAIN_WALK_BLOCK) : NULL;
  int rc = 0;
  while (rc == 0 && p->k < n) {
    uint64_t k0 = p->k, len;
    size_t got = 0;
    if (buf)
      rc = dstream_read_upto(s->src, p->at, CHAIN_WALK_BLOCK, buf, &got, err);
    if (rc == 0 && got)
      s->impl->elems_walk(s->state, buf, got, &p->at, &p->k, n, sum);
    if (rc < 0 || p->k > k0)
      continue;
    /* no whole length in the block (or no walk): one record at a time,
     * which also says why when the stream ends there */
    rc = chain_elems_len(s, p, &len, err);
    if (rc == 0) {
      *sum += len;
      chain_elems_step(s, p, len);
    }
  }
  free(buf);
  return rc;
}

/* Records gather at most this many elements a call (their places kept
 * on the heap meanwhile). */
#define CHAIN_GATHER_MAX 4096

/* See chain.h. */
long chain_elems_gather(struct chain_elems *s, struct chain_elem_pos *p,
                        uint64_t n, size_t max, uint8_t *dst, size_t cap,
                        uint64_t *len, struct zerr *err) {
  if (!s->impl->elems_spans || !max || p->k >= n)
    return 0;
  if (max > CHAIN_GATHER_MAX)
    max = CHAIN_GATHER_MAX;
  /* What max elements of cap bytes can take with their framing (a few
   * bytes an element): a larger block would be read for nothing. */
  size_t want =
      cap < CHAIN_WALK_BLOCK - 16 * max ? cap + 16 * max : CHAIN_WALK_BLOCK;
  uint8_t *blk = malloc(want);
  uint64_t *start = malloc(max * sizeof *start);
  size_t got = 0;
  int rc = blk && start ? 0 : zerr_set(err, ENOMEM, "out of memory");
  if (rc == 0)
    rc = dstream_read_upto(s->src, p->at, want, blk, &got, err);
  long m = 0, e = 0;
  if (rc == 0) {
    uint64_t at = p->at, k = p->k;
    m = s->impl->elems_spans(s->state, blk, p->at, got, 0, &at, &k, n, start,
                             len, max, err);
    rc = m < 0 ? (int)m : 0;
  }
  /* the elements that fit, copied out and stepped past */
  for (size_t used = 0; rc == 0 && e < m && len[e] <= cap - used; e++) {
    memcpy(dst + used, blk + (start[e] - p->at), (size_t)len[e]);
    used += (size_t)len[e];
  }
  for (long i = 0; i < e; i++)
    chain_elems_step(s, p, len[i]);
  free(start);
  free(blk);
  return rc < 0 ? rc : e;
}

/* See chain.h. */
int chain_elems_check(struct chain_elems *s, const struct chain_elem_pos *p,
                      struct zerr *err) {
  if (!p->k) /* no element before p */
    return 0;
  uint8_t last;
  return bytesrc_read_range(s->src, p->at - 1, 1, &last, err);
}

/* See chain.h. */
size_t chain_elems_cost(const struct chain_elems *s) {
  return dstream_cost(s->src);
}

/* See chain.h. */
void chain_elems_close(struct chain_elems *s) {
  if (!s)
    return;
  bytesrc_unref(s->src);
  free(s);
}
