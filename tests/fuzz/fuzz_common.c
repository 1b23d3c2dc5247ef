/* fuzz_common.c - the chunk and metadata drivers the fuzz targets share
 * (see fuzz.h): they call the library the way fs/engine/engine.c does. */
#define _GNU_SOURCE
#include "fuzz.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../../codecs/chain.h"
#include "../../fs/text/text.h"
#include "../../src/util/log.h"

/* A NUL-terminated copy of the input. */
char *fuzz_strndup(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (s) {
    memcpy(s, data, size);
    s[size] = '\0';
  }
  return s;
}

/* zarr.json first, then .zarray, as the engine tries a node's metadata. */
struct zmeta *fuzz_meta_parse(const char *text, size_t len) {
  struct zmeta *m = NULL;
  struct zerr err = {0};
  if (zmeta_parse(text, len, &m, &err) == 0)
    return m;
  if (zmeta_parse_v2(text, len, &m, &err) == 0)
    return m;
  return NULL;
}

/* The decoded spec of a whole chunk of array m (as the engine fills it). */
static void fuzz_spec(const struct zmeta *m, struct codec_spec *s) {
  memset(s, 0, sizeof *s);
  s->ndim = m->ndim;
  memcpy(s->shape, m->chunk, sizeof m->chunk);
  s->nelem = m->chunk_nelem;
  s->dtype = m->dtype;
  s->fill = m->fill;
  s->fill_len = m->fill_len;
}

/* Chain and chunk keys of an array's metadata. */
void fuzz_meta_check(const struct zmeta *m) {
  if (m->node != ZMETA_ARRAY)
    return;
  struct codec_spec s;
  fuzz_spec(m, &s);
  struct chain *c;
  struct zerr err = {0};
  if (chain_build(m->codecs, &s, &c, &err) == 0)
    chain_free(c);
  char key[256];
  uint64_t idx[ZMETA_MAX_DIMS] = {0};
  for (int d = 0; d < m->ndim; d++)
    idx[d] = m->grid[d] ? m->grid[d] - 1 : 0;
  if (m->nchunks > 0 && zmeta_chunk_key(m, idx, key, sizeof key) >= 0 &&
      zmeta_parse_chunk_key(m, key, idx) != 0)
    abort(); /* a key we wrote must read back */
}

/* Read every byte of src (as a view rendering it would), in pieces. */
static void fuzz_read_all(struct bytesrc *src) {
  char buf[4096];
  struct zerr err = {0};
  for (uint64_t off = 0; src && off < src->size; off += sizeof buf) {
    size_t n =
        src->size - off < sizeof buf ? (size_t)(src->size - off) : sizeof buf;
    if (bytesrc_read_range(src, off, n, buf, &err) < 0)
      return;
  }
}

/* What a view does with a decoded unit: load and read its bytes. */
static void fuzz_use_abytes(const struct abytes *a,
                            const struct codec_env *env) {
  struct zerr err = {0};
  if (a->elsize) {
    fuzz_read_all(a->fixed);
    return;
  }
  struct bytesrc *d;
  if (chain_load_data(a, env, &d, &err) == 0) {
    fuzz_read_all(d);
    bytesrc_unref(d);
  }
}

/* The engine's direct path: a partial decoder over the chunk, its
 * offsets or elements read in pieces. */
static void fuzz_partial(const struct chain *c, const struct codec_spec *s,
                         struct bytesrc *chunk) {
  if (!chain_partial_caps(c))
    return;
  struct codec_partial d;
  struct zerr err = {0};
  uint64_t n = s->nelem;
  if (chain_partial_open(c, s, chunk, &d, &err) == 0) {
    uint64_t off[64];
    for (uint64_t first = 0; !d.elsize && first <= n; first += 64) {
      uint64_t k = n + 1 - first < 64 ? n + 1 - first : 64;
      if (chain_partial_offsets(&d, first, k, off, &err) < 0)
        break;
    }
    uint8_t el[512];
    uint64_t per = d.elsize && d.elsize <= sizeof el ? sizeof el / d.elsize : 0;
    for (uint64_t first = 0; per && first < n; first += per) {
      uint64_t k = n - first < per ? n - first : per;
      if (chain_partial_elements(&d, first, k, el, &err) < 0)
        break;
    }
    fuzz_read_all(d.data);
  }
  chain_partial_close(&d);
}

/* The engine's unit path for a chain that is sharding_indexed alone. */
static void fuzz_shard(const struct chain *c, const struct codec_spec *s,
                       struct bytesrc *shard, const struct codec_env *env) {
  uint64_t inner[ZMETA_MAX_DIMS];
  if (!chain_inner(c, inner))
    return;
  struct chain_index *index = NULL;
  struct zerr err = {0};
  if (chain_index_read(c, s, shard, env, &index, &err) < 0)
    return;
  for (uint64_t i = 0; i < chain_index_count(index) && i < 4096; i++) {
    struct abytes *a = NULL;
    if (chain_inner_decode(c, s, shard, index, i, env, &a, &err) == 0) {
      fuzz_use_abytes(a, env);
      abytes_free(a);
    }
  }
  chain_index_free(index);
}

/* Does text name one of the wanted codecs? */
static int fuzz_wanted(const char *text, const char *const *want) {
  if (!want)
    return 1;
  for (; *want; want++)
    if (strstr(text, *want))
      return 1;
  return 0;
}

/* A 1-D string unit's text made from its records (text_layout_records)
 * is the text of its decoded elements (text_layout, then rendered whole
 * if it was not): a copy of a (left to the caller) is laid out. */
static void fuzz_records_text(const struct chain *c, const struct codec_spec *s,
                              struct bytesrc *src, const struct codec_env *env,
                              const struct abytes *a) {
  if (s->ndim != 1 || s->dtype.kind != DT_STRING || !a->offsets || !a->data ||
      !a->data->mem)
    return;
  struct text_form form;
  memset(&form, 0, sizeof form);
  form.dt = s->dtype;
  form.ndim = 1;
  form.shape[0] = s->shape[0];
  form.fill = (char *)"";
  uint64_t shape[1] = {s->shape[0]}, idx[1] = {0};
  size_t olen = (size_t)(a->n + 1) * sizeof *a->offsets;
  size_t dlen = (size_t)a->data->size;
  struct abytes *b = abytes_alloc();
  uint64_t *off = malloc(olen);
  uint8_t *data = malloc(dlen ? dlen : 1);
  if (!b || !off || !data) {
    free(b);
    free(off);
    free(data);
    return;
  }
  memcpy(off, a->offsets, olen);
  memcpy(data, a->data->mem, dlen);
  b->n = a->n;
  b->offsets = off;
  b->data = bytesrc_from_mem(data, dlen);
  struct chunk_text *want = NULL, *got = NULL;
  struct zerr err = {0};
  if (!b->data || text_layout(&form, shape, idx, b, env->max_decoded,
                              env->max_decoded, NULL, NULL, &want, &err) < 0)
    return; /* b is freed either way */
  if (!want->text && text_render_all(want, want->ab->data, &err) < 0) {
    zobj_put(&want->obj);
    return;
  }
  struct chain_records r;
  if (chain_records_decode(c, s, src, env, &r, &err) < 0)
    abort(); /* it decoded once */
  int rc = text_layout_records(&form, shape, idx, &r, env->max_decoded, NULL,
                               &got, &err);
  if (rc < 0 ||
      (rc == 1 && (got->size != want->size ||
                   memcmp(got->text, want->text, (size_t)want->size))))
    abort(); /* the two texts differ */
  if (rc == 1)
    zobj_put(&got->obj);
  chain_records_free(&r);
  zobj_put(&want->obj);
}

/* Records walked in memory (chain_records_*) agree with the whole
 * decode: the same elements where it succeeds, a failure where its
 * records are wrong; walked in batches of an odd size. */
static void fuzz_records(const struct chain *c, const struct codec_spec *s,
                         struct bytesrc *src, const struct codec_env *env,
                         const struct abytes *a, int rc) {
  if (!chain_records_capable(c))
    return;
  struct chain_records r;
  struct zerr err = {0};
  if (chain_records_decode(c, s, src, env, &r, &err) < 0) {
    if (rc == 0)
      abort(); /* the same stages decoded it */
    return;
  }
  uint64_t start[7], len[7], k = 0;
  long m;
  while ((m = chain_records_next(&r, start, len, 7, &err)) > 0)
    for (long i = 0; i < m; i++, k++) {
      if (start[i] > r.size || len[i] > r.size - start[i])
        abort(); /* a span outside the chunk */
      if (rc == 0 && a && a->offsets && a->data && a->data->mem &&
          (a->offsets[k + 1] - a->offsets[k] != len[i] ||
           memcmp(a->data->mem + a->offsets[k], r.buf + start[i],
                  (size_t)len[i])))
        abort(); /* another element than the decode's */
    }
  if ((rc == 0 && (m < 0 || k != s->nelem)) || (rc == -EIO && m == 0))
    abort(); /* the walk and the decode disagree */
  chain_records_free(&r);
  if (rc == 0 && a)
    fuzz_records_text(c, s, src, env, a);
}

/* METADATA NUL CHUNK through the chain of METADATA. */
void fuzz_chunk_run(const uint8_t *data, size_t size, const char *const *want) {
  const uint8_t *nul = memchr(data, '\0', size);
  if (!nul)
    return;
  size_t mlen = (size_t)(nul - data);
  char *text = fuzz_strndup(data, mlen);
  if (!text)
    return;
  struct zmeta *m = NULL;
  if (fuzz_wanted(text, want))
    m = fuzz_meta_parse(text, mlen);
  free(text);
  if (!m || m->node != ZMETA_ARRAY || m->chunk_nelem > FUZZ_MAX_NELEM) {
    zmeta_free(m);
    return;
  }
  struct codec_spec s;
  fuzz_spec(m, &s);
  struct chain *c;
  struct zerr err = {0};
  if (chain_build(m->codecs, &s, &c, &err) < 0) {
    zmeta_free(m);
    return;
  }
  /* A copy of exactly the chunk's bytes, so ASan sees any read past it. */
  size_t clen = size - mlen - 1;
  uint8_t *chunk = malloc(clen ? clen : 1);
  if (chunk) {
    memcpy(chunk, nul + 1, clen);
    struct bytesrc *src = bytesrc_from_static(chunk, clen);
    struct codec_env env = {FUZZ_MAX_DECODED, NULL, 0};
    struct abytes *a = NULL;
    int rc = chain_decode(c, &s, src, &env, &a, &err);
    fuzz_records(c, &s, src, &env, a, rc);
    if (rc == 0) {
      fuzz_use_abytes(a, &env);
      abytes_free(a);
    }
    fuzz_partial(c, &s, src);
    fuzz_shard(c, &s, src, &env);
    bytesrc_unref(src);
    free(chunk);
  }
  chain_free(c);
  zmeta_free(m);
}

static char fuzz_dir[4096];

/* nftw callback: remove one entry. */
static int fuzz_rm(const char *path, const struct stat *st, int flag,
                   struct FTW *ftw) {
  return remove(path);
}

/* atexit: remove the private directory. */
static void fuzz_tmpdir_remove(void) {
  if (*fuzz_dir)
    nftw(fuzz_dir, fuzz_rm, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's private directory. */
const char *fuzz_tmpdir(void) {
  if (*fuzz_dir)
    return fuzz_dir;
  if (!getenv("FUZZ_VERBOSE"))
    zlog_setup(0, (enum zlog_level)0);
  const char *t = getenv("TMPDIR");
  snprintf(fuzz_dir, sizeof fuzz_dir, "%s/zarrfs-fuzz.XXXXXX",
           t && *t ? t : "/tmp");
  if (!mkdtemp(fuzz_dir)) {
    *fuzz_dir = '\0';
    return NULL;
  }
  atexit(fuzz_tmpdir_remove);
  return fuzz_dir;
}

/* Write one file. */
int fuzz_put_file(const char *dir, const char *rel, const void *data,
                  size_t len) {
  char path[8192];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  int ok = fwrite(data, 1, len, f) == len;
  return fclose(f) == 0 && ok ? 0 : -1;
}
