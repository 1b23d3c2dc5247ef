/* vlen.c - the `zarrs.vlen` array->bytes codec for variable-length types.
 *
 * Chunk format (see shared/reference/zarrs-vlen.md section 1):
 *   start:  L(u64 LE) | IDX | DAT        end:  DAT | IDX | L(u64 LE)
 * IDX is the n+1 offsets encoded by index_codecs; DAT the element bytes
 * encoded by data_codecs (absent when there are no data bytes).
 *
 * Decoding reads the 8-byte length word, then the index through its chain,
 * and hands the data section back as a byte source: with data_codecs =
 * [bytes] that is a window onto the chunk, so nothing of the data section
 * is read until a view asks for a range of it.
 *
 * Partial decoding (see codec.h): sizes come from the index alone; with a
 * plain index (index_codecs [bytes]) a chunk opens without reading it,
 * and single offsets are read where they lie through the index chain's
 * own partial decoder, so a unit's text size needs two of them and a
 * ranged read only those it shows, never the whole index. */
#include "chain.h"

#include <stdlib.h>
#include <string.h>

#include "../src/util/zmath.h"

struct vlen_state {
  struct chain *index_chain; /* 1-D uint32/uint64 [n+1] */
  struct chain *data_chain;  /* 1-D uint8 [data_len] */
  size_t index_size;         /* 4 or 8 */
  int at_end;                /* index_location == "end" */
};

static const uint8_t vlen_zero_fill[8];

/* Free both chains. */
static void vlen_destroy(void *state) {
  struct vlen_state *st = state;
  if (!st)
    return;
  chain_free(st->index_chain);
  chain_free(st->data_chain);
  free(st);
}

/* A 1-D spec of `kind` with a zero fill; the length is set per chunk. */
static struct codec_spec vlen_spec_1d(enum dtype_kind kind, uint64_t len) {
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = len;
  s.nelem = len;
  s.dtype = dtype_of(kind);
  s.fill = vlen_zero_fill;
  s.fill_len = s.dtype.size;
  return s;
}

/* Parse V0 (no index_location: start) or V0_1; both reject unknown keys
 * and neither has defaults for the other three keys. */
static int vlen_create(json_t *config, const struct codec_spec *decoded,
                       void **state, struct zerr *err) {
  static const char *const allowed[] = {
      "index_codecs", "data_codecs", "index_data_type", "index_location", NULL};
  const struct dtype *dt = &decoded->dtype;
  if (!dtype_is_variable(dt))
    return zerr_set(err, dt->kind == DT_UNSUPPORTED ? ENOTSUP : EIO,
                    "zarrs.vlen: data type '%s' is not variable-length",
                    dt->name);
  if (!config)
    return zerr_set(err, EIO, "zarrs.vlen: configuration is required");
  ZTRY(codec_cfg_only(config, "zarrs.vlen", allowed, err));
  const char *itype, *loc;
  int rc = codec_cfg_str(config, "index_data_type", 1, NULL, &itype, err);
  if (rc == 0)
    rc = codec_cfg_str(config, "index_location", 0, "start", &loc, err);
  if (rc < 0) {
    zerr_prefix(err, "zarrs.vlen: ");
    return rc;
  }
  enum dtype_kind ikind;
  if (!strcmp(itype, "uint32"))
    ikind = DT_UINT32;
  else if (!strcmp(itype, "uint64"))
    ikind = DT_UINT64;
  else
    return zerr_set(err, EIO,
                    "zarrs.vlen: index_data_type must be \"uint32\" or "
                    "\"uint64\", not \"%s\"",
                    itype);
  int at_end;
  if (!strcmp(loc, "start"))
    at_end = 0;
  else if (!strcmp(loc, "end"))
    at_end = 1;
  else
    return zerr_set(err, EIO,
                    "zarrs.vlen: index_location must be \"start\" or \"end\", "
                    "not \"%s\"",
                    loc);
  json_t *ic = json_object_get(config, "index_codecs");
  json_t *dc = json_object_get(config, "data_codecs");
  if (!ic || !dc)
    return zerr_set(err, EIO,
                    "zarrs.vlen: missing required configuration key '%s'",
                    ic ? "data_codecs" : "index_codecs");

  struct vlen_state *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "zarrs.vlen: out of memory");
  st->at_end = at_end;
  struct codec_spec ispec = vlen_spec_1d(ikind, 1);
  struct codec_spec dspec = vlen_spec_1d(DT_UINT8, 1);
  st->index_size = ispec.dtype.size;
  rc = chain_build(ic, &ispec, &st->index_chain, err);
  if (rc < 0) {
    vlen_destroy(st);
    zerr_prefix(err, "zarrs.vlen index_codecs: ");
    return rc;
  }
  rc = chain_build(dc, &dspec, &st->data_chain, err);
  if (rc < 0) {
    vlen_destroy(st);
    zerr_prefix(err, "zarrs.vlen data_codecs: ");
    return rc;
  }
  *state = st;
  return 0;
}

/* Decode IDX into n+1 host-order uint64 offsets (malloc'd, *out). */
static int vlen_index_decode(const struct vlen_state *st, uint64_t n,
                             struct bytesrc *idx, const struct codec_env *env,
                             uint64_t **out, struct zerr *err) {
  uint64_t n1, obytes;
  if (zadd_u64(n, 1, &n1) < 0 || zmul_u64(n1, sizeof(uint64_t), &obytes) < 0)
    return zerr_set(err, EFBIG, "zarrs.vlen: %llu elements overflow the index",
                    (unsigned long long)n);
  if (obytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "zarrs.vlen: index of %llu offsets exceeds the decode "
                    "limit of %zu bytes",
                    (unsigned long long)n1, env->max_decoded);
  struct codec_spec ispec =
      vlen_spec_1d(st->index_size == 4 ? DT_UINT32 : DT_UINT64, n1);
  struct abytes *ia = NULL;
  int rc = chain_decode(st->index_chain, &ispec, idx, env, &ia, err);
  if (rc < 0) {
    zerr_prefix(err, "zarrs.vlen index: ");
    return rc;
  }
  if (ia->elsize != st->index_size) {
    size_t got = ia->elsize;
    abytes_free(ia);
    return zerr_set(err, EIO, "zarrs.vlen: index decoded to %zu-byte elements",
                    got);
  }
  uint64_t *off = malloc((size_t)obytes);
  if (!off) {
    abytes_free(ia);
    return zerr_set(err, ENOMEM, "zarrs.vlen: out of memory for %llu offsets",
                    (unsigned long long)n1);
  }
  /* n1 * index_size <= obytes, checked above. */
  rc =
      bytesrc_read_range(ia->fixed, 0, (size_t)(n1 * st->index_size), off, err);
  abytes_free(ia);
  if (rc < 0) {
    free(off);
    zerr_prefix(err, "zarrs.vlen index: ");
    return rc;
  }
  if (st->index_size == 4) {
    /* Widen in place from the back: slot i overwrites only u32 slots 2i and
     * 2i+1, which are >= i and already consumed. */
    const uint8_t *raw = (const uint8_t *)off;
    for (uint64_t i = n1; i-- > 0;) {
      uint32_t v;
      memcpy(&v, raw + i * 4, 4);
      off[i] = v;
    }
  }
  *out = off;
  return 0;
}

/* The index length word of a chunk (its first or last 8 bytes, LE). */
static int vlen_index_len(const struct vlen_state *st, struct bytesrc *in,
                          uint64_t *L, struct zerr *err) {
  uint64_t size = in->size;
  if (size < 8)
    return zerr_set(err, EIO,
                    "zarrs.vlen: chunk of %llu bytes is shorter than the "
                    "8-byte index length",
                    (unsigned long long)size);
  uint8_t word[8];
  int rc = bytesrc_read_range(in, st->at_end ? size - 8 : 0, 8, word, err);
  if (rc < 0)
    return zerr_prefix(err, "zarrs.vlen: ");
  *L = 0;
  for (int i = 7; i >= 0; i--)
    *L = *L << 8 | word[i];
  return 0;
}

/* Read the length word, split into windows, decode index then data. */
static int vlen_decode(const void *state, const struct codec_spec *spec,
                       struct bytesrc *in, const struct codec_env *env,
                       struct abytes **out, struct zerr *err) {
  const struct vlen_state *st = state;
  uint64_t size = in->size, L;
  int rc = vlen_index_len(st, in, &L, err);
  if (rc < 0)
    return rc;
  uint64_t main_len = size - 8;
  if (L > main_len)
    return zerr_set(err, EIO,
                    "zarrs.vlen: index length %llu exceeds chunk size %llu",
                    (unsigned long long)L, (unsigned long long)size);
  uint64_t idx_off = st->at_end ? main_len - L : 8;
  uint64_t dat_off = st->at_end ? 0 : 8 + L;
  uint64_t dat_len = main_len - L;

  struct bytesrc *idx = NULL, *dat = NULL;
  uint64_t *off = NULL;
  struct abytes *a = NULL;
  uint64_t n = spec->nelem;
  rc = bytesrc_sub(in, idx_off, L, &idx, err);
  if (rc == 0)
    rc = bytesrc_sub(in, dat_off, dat_len, &dat, err);
  if (rc == 0)
    rc = vlen_index_decode(st, n, idx, env, &off, err);
  if (rc < 0)
    goto out;

  uint64_t data_len = off[n];
  struct bytesrc *data = NULL;
  if (data_len == 0) {
    /* zarrs skips the data codecs entirely for an empty data section. */
    data = bytesrc_from_static(NULL, 0);
    if (!data) {
      rc = zerr_set(err, ENOMEM, "zarrs.vlen: out of memory");
      goto out;
    }
  } else if (chain_is_passthrough(st->data_chain)) {
    /* [bytes]: the data section is the element bytes; keep the window so
     * a view reads only the ranges it renders. */
    if (dat_len != data_len) {
      rc = zerr_set(err, EIO,
                    "zarrs.vlen: data length %llu disagrees with last "
                    "offset %llu",
                    (unsigned long long)dat_len, (unsigned long long)data_len);
      goto out;
    }
    data = bytesrc_ref(dat);
  }
  /* Otherwise (gzip, zstd, ...) decoding is deferred: sizes come from the
   * index alone; chain_load_data decodes when bytes are read. */
  rc = abytes_check_offsets(off, n, data_len, err);
  if (rc < 0) {
    bytesrc_unref(data);
    zerr_prefix(err, "zarrs.vlen: ");
    goto out;
  }
  a = abytes_alloc();
  if (!a) {
    bytesrc_unref(data);
    rc = zerr_set(err, ENOMEM, "zarrs.vlen: out of memory");
    goto out;
  }
  a->n = n;
  a->elsize = 0;
  a->offsets = off;
  a->data = data;
  a->data_len = data_len;
  if (!data) {
    a->data_chain = st->data_chain;
    a->data_enc = bytesrc_ref(dat);
  }
  off = NULL;
  *out = a;
out:
  free(off);
  bytesrc_unref(idx);
  bytesrc_unref(dat);
  return rc;
}

/* ---- partial decoding (see codec.h) ---- */

/* Sizes from the index always; offsets where they lie when the index
 * chain reads its elements partially; element bytes plain when the data
 * codecs are plain. */
static unsigned vlen_partial_caps(const void *state) {
  const struct vlen_state *st = state;
  unsigned caps = CODEC_PARTIAL_INDEX;
  if (chain_partial_caps(st->index_chain) & CODEC_PARTIAL_ELEMENTS) {
    caps |= CODEC_PARTIAL_OFFSETS;
    if (chain_is_passthrough(st->data_chain))
      caps |= CODEC_PARTIAL_PLAIN;
  }
  return caps;
}

/* Read the length word, check that the index holds n+1 offsets, and open
 * the index chain's partial decoder over the index (p->priv). */
static int vlen_partial_open(const void *state, const struct codec_spec *spec,
                             struct bytesrc *in, struct codec_partial *p,
                             struct zerr *err) {
  const struct vlen_state *st = state;
  uint64_t n = spec->nelem, size = in->size, L;
  ZTRY(vlen_index_len(st, in, &L, err));
  uint64_t n1, want;
  if (zadd_u64(n, 1, &n1) < 0 || zmul_u64(n1, st->index_size, &want) < 0 ||
      L != want || L > size - 8)
    return zerr_set(err, EIO,
                    "zarrs.vlen: index of %llu bytes does not hold %llu "
                    "offsets of %zu bytes in a chunk of %llu bytes",
                    (unsigned long long)L, (unsigned long long)n + 1,
                    st->index_size, (unsigned long long)size);
  struct codec_partial *ip = calloc(1, sizeof *ip);
  if (!ip)
    return zerr_set(err, ENOMEM, "zarrs.vlen: out of memory");
  p->priv = ip;
  p->n = n;
  p->data_len = size - 8 - L;
  p->width = st->index_size;
  p->src = bytesrc_ref(in);
  struct bytesrc *idx = NULL;
  struct codec_spec ispec =
      vlen_spec_1d(st->index_size == 4 ? DT_UINT32 : DT_UINT64, n1);
  int rc = bytesrc_sub(in, st->at_end ? size - 8 - L : 8, L, &idx, err);
  if (rc == 0) {
    rc = chain_partial_open(st->index_chain, &ispec, idx, ip, err);
    if (rc < 0)
      zerr_prefix(err, "zarrs.vlen index: ");
  }
  bytesrc_unref(idx);
  if (rc == 0 && ip->elsize != st->index_size)
    rc = zerr_set(err, EIO, "zarrs.vlen: index has %zu-byte elements",
                  ip->elsize);
  if (rc == 0 && chain_is_passthrough(st->data_chain))
    rc = bytesrc_sub(in, st->at_end ? 0 : 8 + L, p->data_len, &p->data, err);
  else if (rc == 0) {
    rc =
        bytesrc_sub(in, st->at_end ? 0 : 8 + L, p->data_len, &p->data_enc, err);
    p->data_chain = st->data_chain;
  }
  return rc;
}

/* Read offsets through the index's decoder and widen them, checking
 * order and, with plain element bytes, that they stay inside them. */
static int vlen_partial_offsets(const struct codec_partial *p, uint64_t first,
                                uint64_t count, uint64_t *out,
                                struct zerr *err) {
  const struct codec_partial *ip = p->priv;
  if (first > p->n || count > p->n + 1 - first)
    return zerr_set(err, EIO, "zarrs.vlen: offsets past the index");
  if (!count)
    return 0;
  /* Read into the tail of out, widen forwards into its head. */
  uint8_t *raw = (uint8_t *)out + count * (sizeof *out - p->width);
  ZTRY(chain_partial_elements(ip, first, count, raw, err));
  for (uint64_t i = 0; i < count; i++) {
    uint64_t v;
    if (p->width == 4) {
      uint32_t w;
      memcpy(&w, raw + i * 4, 4);
      v = w;
    } else {
      memcpy(&v, raw + i * 8, 8);
    }
    out[i] = v;
    if ((i && v < out[i - 1]) || (p->data && v > p->data_len))
      return zerr_set(err, EIO,
                      "zarrs.vlen: offset %llu (%llu) is out of order or "
                      "past the data section",
                      (unsigned long long)(first + i), (unsigned long long)v);
  }
  return 0;
}

/* Close the index's decoder. */
static void vlen_partial_close(struct codec_partial *p) {
  struct codec_partial *ip = p->priv;
  if (!ip)
    return;
  chain_partial_close(ip);
  free(ip);
  p->priv = NULL;
}

static const char *const vlen_aliases[] = {
    "https://codec.zarrs.dev/array_to_bytes/vlen", "vlen", NULL};

/* Registered in codecs/registry.c. */
const struct codec_impl codec_vlen = {
    .name = "zarrs.vlen",
    .aliases = vlen_aliases,
    .kind = CODEC_A2B,
    .create = vlen_create,
    .destroy = vlen_destroy,
    .decode_array = vlen_decode,
    .partial_caps = vlen_partial_caps,
    .partial_open = vlen_partial_open,
    .partial_offsets = vlen_partial_offsets,
    .partial_close = vlen_partial_close,
};
