/* icechunk_manifest.c - Icechunk manifests: the chunk references of arrays
 * (native, inline, virtual), checked to be sorted by node id and chunk
 * coordinates, then found by binary search or walked in order. Parsing
 * only, no locks; a struct icefmt_manifest belongs to whoever parsed or
 * loaded it and owns its flatbuffer, which the references it hands out
 * borrow. Field numbers are the slots of the .fbs schemas of
 * icechunk-format/flatbuffers/ (a union takes two: its type, then its
 * value); spec 1 files use a prefix of the same tables. The icefmt_ prefix
 * is the format module's across its files (icechunk_fmt.c,
 * icechunk_common.c, icechunk_repo.c, icechunk_snap.c,
 * icechunk_manifest.c). */
#define _GNU_SOURCE
#include "icechunk_fmt.h"

#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "../../json/flatbuf.h"
#include "icechunk_common.h"

/* One array's references inside a manifest. */
struct mf_array {
  uint8_t node[8];
  struct fb_vec refs;
  uint32_t ndim;
};

struct icefmt_manifest {
  uint8_t id[12];
  uint8_t *fb; /* owned */
  size_t len;
  struct mf_array *arrays;
  uint32_t narrays;
  uint64_t count;
  const uint8_t *dict; /* location dictionary, inside fb */
  uint32_t dict_len;
  uint8_t compression; /* of compressed_location: 0 none, 1 zstd */
};

/* Coordinates of a reference (ndim of them) into c; the count in *nd. */
static int ref_index(const struct fb_table *r, uint32_t *c, uint32_t *nd,
                     struct zerr *err) {
  struct fb_vec v;
  int rc = fb_vector(r, 0, 4, 4, &v, err);
  if (rc <= 0)
    return rc < 0 ? rc : zerr_set(err, EIO, "chunk reference without index");
  if (v.n > ICEFMT_MAX_NDIM)
    return zerr_set(err, EIO, "chunk index of %u dimensions", v.n);
  for (uint32_t i = 0; i < v.n; i++)
    c[i] = fb_le32(fb_vec_at(&v, i));
  *nd = v.n;
  return 0;
}

/* Order of two coordinate lists of n dimensions. */
static int coord_cmp(const uint32_t *a, const uint32_t *b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* The kind of a reference, checking exactly one is given. */
static int ref_kind(const struct fb_table *r, enum icefmt_chunk_kind *k,
                    struct zerr *err) {
  int inl = fb_has(r, 1), nat = fb_has(r, 4),
      vir = fb_has(r, 5) || fb_has(r, 8);
  if (inl + nat + vir != 1)
    return zerr_set(err, EIO, "chunk reference is %s",
                    inl + nat + vir ? "of several kinds"
                                    : "of no kind (inline, native or "
                                      "virtual)");
  *k = inl ? ICEFMT_INLINE : nat ? ICEFMT_NATIVE : ICEFMT_VIRTUAL;
  return 0;
}

/* Check every reference of one array: indexes of one length, sorted,
 * one kind each, ranges that do not overflow. */
static int check_array(struct icefmt_manifest *m, struct mf_array *a,
                       struct zerr *err) {
  uint32_t prev[ICEFMT_MAX_NDIM], cur[ICEFMT_MAX_NDIM];
  for (uint32_t i = 0; i < a->refs.n; i++) {
    struct fb_table r;
    uint32_t nd;
    ZTRY(fb_vec_table(&a->refs, i, &r, err));
    ZTRY(ref_index(&r, cur, &nd, err));
    if (i == 0)
      a->ndim = nd;
    else if (nd != a->ndim)
      return zerr_set(err, EIO,
                      "chunk reference %u has %u coordinates, "
                      "the first %u",
                      i, nd, a->ndim);
    else if (coord_cmp(prev, cur, nd) >= 0)
      return zerr_set(err, EIO, "chunk references not sorted at %u", i);
    enum icefmt_chunk_kind k;
    ZTRY(ref_kind(&r, &k, err));
    if (k != ICEFMT_INLINE) {
      uint64_t off, len;
      ZTRY(fb_scalar(&r, 2, 8, 0, &off, err));
      ZTRY(fb_scalar(&r, 3, 8, 0, &len, err));
      if (off + len < off)
        return zerr_set(err, EIO,
                        "chunk reference %u: offset + length "
                        "overflows",
                        i);
    }
    memcpy(prev, cur, nd * sizeof *cur);
    m->count++;
  }
  return 0;
}

/* The body of icefmt_manifest_parse. */
static int manifest_fill(struct icefmt_manifest *m, struct zerr *err) {
  struct fb_table t;
  ZTRY(fb_root(m->fb, m->len, &t, err));
  const uint8_t *id;
  ZTRY(fb_struct(&t, 0, 12, 1, &id, err));
  if (!id)
    return zerr_set(err, EIO, "manifest without an id");
  memcpy(m->id, id, 12);
  struct fb_vec v;
  int rc = fb_vector(&t, 1, 4, 4, &v, err);
  if (rc <= 0)
    return rc < 0 ? rc : zerr_set(err, EIO, "manifest without arrays");
  struct fb_vec dict;
  ZTRY(fb_vector(&t, 2, 1, 1, &dict, err));
  m->dict = dict.n ? dict.buf + dict.pos : NULL;
  m->dict_len = dict.n;
  uint64_t alg;
  ZTRY(fb_scalar(&t, 3, 1, 1, &alg, err));
  if (alg > 1)
    return zerr_set(err, EIO, "unknown location compression %u", (unsigned)alg);
  m->compression = (uint8_t)alg;
  m->arrays = calloc(v.n ? v.n : 1, sizeof *m->arrays);
  if (!m->arrays)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    struct mf_array *a = &m->arrays[i];
    struct fb_table at;
    const uint8_t *node;
    ZTRY(fb_vec_table(&v, i, &at, err));
    ZTRY(fb_struct(&at, 0, 8, 1, &node, err));
    if (!node)
      return zerr_set(err, EIO, "array %u without a node id", i);
    memcpy(a->node, node, 8);
    if (i && memcmp(m->arrays[i - 1].node, a->node, 8) >= 0)
      return zerr_set(err, EIO, "arrays not sorted by node id at %u", i);
    rc = fb_vector(&at, 1, 4, 4, &a->refs, err);
    if (rc <= 0)
      return rc < 0 ? rc : zerr_set(err, EIO, "array %u without refs", i);
    char nid[ICEFMT_NODE_ID_CHARS + 1];
    icefmt_id_encode(a->node, 8, nid);
    if ((rc = check_array(m, a, err)) < 0)
      return zerr_prefix(err, "node %s: ", nid);
    m->narrays = i + 1;
  }
  return 0;
}

/* Check a manifest whole once, then keep its buffer for lookups. */
int icefmt_manifest_parse(uint8_t *fb, size_t len, struct icefmt_manifest **out,
                          struct zerr *err) {
  struct icefmt_manifest *m = calloc(1, sizeof *m);
  if (!m) {
    free(fb);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  m->fb = fb;
  m->len = len;
  int rc = manifest_fill(m, err);
  if (rc < 0) {
    icefmt_manifest_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

/* manifests/ID through the store. */
int icefmt_manifest_load(struct store *s, const uint8_t id[12],
                         size_t max_decode, struct icefmt_manifest **out,
                         struct zerr *err) {
  char key[16 + ICEFMT_ID_CHARS];
  memcpy(key, "manifests/", 10);
  icefmt_id_encode(id, 12, key + 10);
  uint8_t *fb;
  size_t len;
  ZTRY(icefmt_read_file(s, key, ICEFMT_MANIFEST, max_decode, &fb, &len, err));
  int rc = icefmt_manifest_parse(fb, len, out, err);
  if (rc < 0)
    return zerr_prefix(err, "%s: ", key);
  if (memcmp((*out)->id, id, 12)) {
    icefmt_manifest_free(*out);
    *out = NULL;
    return zerr_set(err, EIO, "%s: holds another manifest's id", key);
  }
  return 0;
}

/* The array of node in m, or NULL. */
static const struct mf_array *find_array(const struct icefmt_manifest *m,
                                         const uint8_t node[8]) {
  uint32_t lo = 0, hi = m->narrays;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = memcmp(m->arrays[mid].node, node, 8);
    if (c == 0)
      return &m->arrays[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* Copy a location of n bytes (no NUL inside) into out. */
static int set_location(char *out, const char *s, size_t n, struct zerr *err) {
  if (n == 0 || n >= ICEFMT_URL_MAX || memchr(s, '\0', n))
    return zerr_set(err, EIO,
                    "virtual chunk location is empty, too long or "
                    "holds a NUL byte");
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

/* Fill out from the reference table r. */
static int ref_decode(const struct icefmt_manifest *m, const struct fb_table *r,
                      struct icefmt_chunk *out, struct zerr *err) {
  ZTRY(ref_kind(r, &out->kind, err));
  ZTRY(fb_scalar(r, 2, 8, 0, &out->offset, err));
  ZTRY(fb_scalar(r, 3, 8, 0, &out->length, err));
  out->data = NULL;
  out->location[0] = out->etag[0] = '\0';
  out->last_modified = 0;
  struct fb_vec v;
  if (out->kind == ICEFMT_INLINE) {
    ZTRY(fb_vector(r, 1, 1, 1, &v, err));
    out->data = v.buf + v.pos;
    out->offset = 0;
    out->length = v.n;
    return 0;
  }
  if (out->kind == ICEFMT_NATIVE) {
    const uint8_t *id;
    ZTRY(fb_struct(r, 4, 12, 1, &id, err));
    memcpy(out->chunk_id, id, 12);
    return 0;
  }
  const char *s;
  uint32_t n;
  if (fb_has(r, 5)) {
    ZTRY(fb_string(r, 5, &s, &n, err));
    ZTRY(set_location(out->location, s, n, err));
  } else {
    ZTRY(fb_vector(r, 8, 1, 1, &v, err));
    if (m->compression == 0) {
      ZTRY(set_location(out->location, (const char *)v.buf + v.pos, v.n, err));
    } else {
      ZSTD_DCtx *d = ZSTD_createDCtx();
      if (!d)
        return zerr_set(err, ENOMEM, "out of memory");
      size_t got =
          ZSTD_decompress_usingDict(d, out->location, ICEFMT_URL_MAX - 1,
                                    v.buf + v.pos, v.n, m->dict, m->dict_len);
      ZSTD_freeDCtx(d);
      if (ZSTD_isError(got))
        return zerr_set(err, EIO, "compressed virtual chunk location: %s",
                        ZSTD_getErrorName(got));
      char tmp[ICEFMT_URL_MAX];
      memcpy(tmp, out->location, got);
      ZTRY(set_location(out->location, tmp, got, err));
    }
  }
  ZTRY(fb_string(r, 6, &s, &n, err));
  if (s) {
    if (n >= ICEFMT_ETAG_MAX || memchr(s, '\0', n))
      return zerr_set(err, EIO,
                      "virtual chunk checksum ETag too long or "
                      "holds a NUL byte");
    memcpy(out->etag, s, n);
    out->etag[n] = '\0';
  }
  uint64_t lm;
  ZTRY(fb_scalar(r, 7, 4, 0, &lm, err));
  out->last_modified = (uint32_t)lm;
  return 0;
}

/* Binary search of the node, then of its sorted coordinates. */
int icefmt_manifest_find(const struct icefmt_manifest *m, const uint8_t node[8],
                         const uint32_t *coord, uint32_t ndim,
                         struct icefmt_chunk *out, struct zerr *err) {
  const struct mf_array *a = find_array(m, node);
  if (!a || a->ndim != ndim || a->refs.n == 0)
    return zerr_set(err, ENOENT, "no such chunk");
  uint32_t lo = 0, hi = a->refs.n, c[ICEFMT_MAX_NDIM];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2, nd;
    struct fb_table r;
    ZTRY(fb_vec_table(&a->refs, mid, &r, err));
    ZTRY(ref_index(&r, c, &nd, err));
    int cmp = nd == ndim ? coord_cmp(c, coord, ndim) : 1;
    if (cmp == 0)
      return ref_decode(m, &r, out, err);
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return zerr_set(err, ENOENT, "no such chunk");
}

/* Every reference of a node in coordinate order. */
int icefmt_manifest_each(const struct icefmt_manifest *m, const uint8_t node[8],
                         icefmt_chunk_cb cb, void *ud, struct zerr *err) {
  const struct mf_array *a = find_array(m, node);
  if (!a)
    return 0;
  uint32_t c[ICEFMT_MAX_NDIM];
  for (uint32_t i = 0; i < a->refs.n; i++) {
    struct fb_table r;
    uint32_t nd;
    uint64_t len;
    ZTRY(fb_vec_table(&a->refs, i, &r, err));
    ZTRY(ref_index(&r, c, &nd, err));
    if (fb_has(&r, 1)) {
      struct fb_vec v;
      ZTRY(fb_vector(&r, 1, 1, 1, &v, err));
      len = v.n;
    } else {
      ZTRY(fb_scalar(&r, 3, 8, 0, &len, err));
    }
    if (cb(ud, c, nd, len))
      break;
  }
  return 0;
}

/* How many arrays. */
uint32_t icefmt_manifest_narrays(const struct icefmt_manifest *m) {
  return m->narrays;
}

/* Node id of array i. */
const uint8_t *icefmt_manifest_node(const struct icefmt_manifest *m,
                                    uint32_t i) {
  return i < m->narrays ? m->arrays[i].node : NULL;
}

/* How many chunk references. */
uint64_t icefmt_manifest_count(const struct icefmt_manifest *m) {
  return m->count;
}

/* Memory held. */
size_t icefmt_manifest_bytes(const struct icefmt_manifest *m) {
  return m->len + (size_t)m->narrays * sizeof *m->arrays + sizeof *m;
}

/* Free the buffer and the index; NULL-safe. */
void icefmt_manifest_free(struct icefmt_manifest *m) {
  if (!m)
    return;
  free(m->fb);
  free(m->arrays);
  free(m);
}
