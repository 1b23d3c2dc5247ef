/* icechunk_snap.c - Icechunk snapshots: the node tree of one commit (groups
 * and arrays, their zarr.json, shapes and the manifests covering their
 * chunks), checked for canonical paths and one node per path. Parsing only,
 * no locks; a struct icefmt_snapshot belongs to whoever parsed or loaded
 * it. Field numbers are the slots of the .fbs schemas of
 * icechunk-format/flatbuffers/ (a union takes two: its type, then its
 * value); spec 1 files use a prefix of the same tables. The icefmt_ prefix
 * is the format module's across its files (icechunk_fmt.c,
 * icechunk_common.c, icechunk_repo.c, icechunk_snap.c,
 * icechunk_manifest.c). */
#define _GNU_SOURCE
#include "icechunk_fmt.h"

#include <stdlib.h>
#include <string.h>

#include "../../json/flatbuf.h"
#include "icechunk_common.h"

/* Is p[0..n) a canonical node path ("/", "/a", "/a/b")? */
static int path_ok(const char *p, size_t n) {
  if (n == 0 || p[0] != '/' || memchr(p, '\0', n))
    return 0;
  if (n == 1)
    return 1;
  if (p[n - 1] == '/')
    return 0;
  const char *seg = p + 1, *end = p + n;
  while (seg <= end) {
    const char *sl = memchr(seg, '/', (size_t)(end - seg));
    size_t len = (size_t)((sl ? sl : end) - seg);
    if (len == 0 || (len == 1 && seg[0] == '.') ||
        (len == 2 && seg[0] == '.' && seg[1] == '.'))
      return 0;
    if (!sl)
      break;
    seg = sl + 1;
  }
  return 1;
}

/* Array data of a node: shape, manifests and their extents. */
static int parse_array(const struct fb_table *a, struct icefmt_node *nd,
                       struct zerr *err) {
  struct fb_vec v;
  int rc;
  if (fb_has(a, 3)) { /* spec 2: shape_v2 */
    ZTRY(fb_vector(a, 3, 4, 4, &v, err));
    if (v.n > ICEFMT_MAX_NDIM)
      return zerr_set(err, EIO, "%u dimensions", v.n);
    nd->ndim = v.n;
    nd->shape = calloc(v.n ? v.n : 1, sizeof *nd->shape);
    if (!nd->shape)
      return zerr_set(err, ENOMEM, "out of memory");
    for (uint32_t i = 0; i < v.n; i++) {
      struct fb_table d;
      ZTRY(fb_vec_table(&v, i, &d, err));
      ZTRY(fb_scalar(&d, 0, 8, 0, &nd->shape[i], err));
    }
  } else {
    rc = fb_vector(a, 0, 16, 8, &v, err);
    if (rc <= 0)
      return rc < 0 ? rc : zerr_set(err, EIO, "array without a shape");
    if (v.n > ICEFMT_MAX_NDIM)
      return zerr_set(err, EIO, "%u dimensions", v.n);
    nd->ndim = v.n;
    nd->shape = calloc(v.n ? v.n : 1, sizeof *nd->shape);
    if (!nd->shape)
      return zerr_set(err, ENOMEM, "out of memory");
    for (uint32_t i = 0; i < v.n; i++)
      nd->shape[i] = fb_le64(fb_vec_at(&v, i));
  }
  rc = fb_vector(a, 2, 4, 4, &v, err);
  if (rc < 0)
    return rc;
  nd->mrefs = calloc(v.n ? v.n : 1, sizeof *nd->mrefs);
  if (!nd->mrefs)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    struct icefmt_mref *m = &nd->mrefs[i];
    struct fb_table t;
    struct fb_vec ev;
    const uint8_t *id;
    ZTRY(fb_vec_table(&v, i, &t, err));
    ZTRY(fb_struct(&t, 0, 12, 1, &id, err));
    if (!id)
      return zerr_set(err, EIO, "manifest ref %u without an id", i);
    memcpy(m->id, id, 12);
    ZTRY(fb_vector(&t, 1, 8, 4, &ev, err));
    if (ev.n != nd->ndim)
      return zerr_set(err, EIO,
                      "manifest ref %u has %u extents for %u "
                      "dimensions",
                      i, ev.n, nd->ndim);
    m->from = calloc(2 * (size_t)(ev.n ? ev.n : 1), sizeof *m->from);
    if (!m->from)
      return zerr_set(err, ENOMEM, "out of memory");
    m->to = m->from + ev.n;
    nd->nmrefs = i + 1;
    for (uint32_t d = 0; d < ev.n; d++) {
      const uint8_t *e = fb_vec_at(&ev, d);
      m->from[d] = fb_le32(e);
      m->to[d] = fb_le32(e + 4);
      if (m->from[d] > m->to[d])
        return zerr_set(err, EIO, "manifest ref %u: extent %u..%u", i,
                        m->from[d], m->to[d]);
    }
  }
  return 0;
}

/* One node. */
static int parse_node(const struct fb_table *t, struct icefmt_node *nd,
                      struct zerr *err) {
  const uint8_t *id;
  const char *s;
  uint32_t sn;
  ZTRY(fb_struct(t, 0, 8, 1, &id, err));
  if (!id)
    return zerr_set(err, EIO, "node without an id");
  memcpy(nd->id, id, 8);
  ZTRY(fb_string(t, 1, &s, &sn, err));
  if (!s || !path_ok(s, sn))
    return zerr_set(err, EIO, "node path '%.*s' is not canonical",
                    s ? (int)(sn > 200 ? 200 : sn) : 0, s ? s : "");
  if (!(nd->path = strndup(s, sn)))
    return zerr_set(err, ENOMEM, "out of memory");
  struct fb_vec ud;
  int rc = fb_vector(t, 2, 1, 1, &ud, err);
  if (rc <= 0)
    return rc < 0 ? rc
                  : zerr_set(err, EIO, "node %s has no metadata", nd->path);
  if (!(nd->user_data = malloc((size_t)ud.n + 1)))
    return zerr_set(err, ENOMEM, "out of memory");
  memcpy(nd->user_data, ud.buf + ud.pos, ud.n);
  nd->user_data[ud.n] = '\0';
  nd->user_len = ud.n;
  uint8_t ty;
  struct fb_table data;
  rc = fb_union(t, 3, &ty, &data, err);
  if (rc < 0)
    return zerr_prefix(err, "node %s: ", nd->path);
  if (ty == 2)
    return 0;
  if (ty != 1)
    return zerr_set(err, EIO, "node %s: node data of type %u", nd->path, ty);
  nd->is_array = 1;
  rc = parse_array(&data, nd, err);
  return rc < 0 ? zerr_prefix(err, "node %s: ", nd->path) : 0;
}

/* Nodes by path (byte order: the snapshot's own order). */
static int node_cmp(const void *a, const void *b) {
  return strcmp(((const struct icefmt_node *)a)->path,
                ((const struct icefmt_node *)b)->path);
}

/* The body of icefmt_snapshot_parse. */
static int snapshot_fill(const uint8_t *fb, size_t len,
                         struct icefmt_snapshot *sn, struct zerr *err) {
  struct fb_table t;
  const uint8_t *id;
  const char *s;
  uint32_t n;
  ZTRY(fb_root(fb, len, &t, err));
  ZTRY(fb_struct(&t, 0, 12, 1, &id, err));
  if (!id)
    return zerr_set(err, EIO, "snapshot without an id");
  memcpy(sn->id, id, 12);
  ZTRY(fb_struct(&t, 1, 12, 1, &id, err));
  if (id) {
    sn->has_parent = 1;
    memcpy(sn->parent, id, 12);
  }
  ZTRY(fb_scalar(&t, 3, 8, 0, &sn->flushed_at, err));
  ZTRY(fb_string(&t, 4, &s, &n, err));
  if (!(sn->message = icefmt_dup_text(s ? s : "", n)))
    return zerr_set(err, ENOMEM, "out of memory");
  struct fb_vec v;
  int rc = fb_vector(&t, 2, 4, 4, &v, err);
  if (rc <= 0)
    return rc < 0 ? rc : zerr_set(err, EIO, "snapshot without nodes");
  sn->nodes = calloc(v.n ? v.n : 1, sizeof *sn->nodes);
  if (!sn->nodes)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    struct fb_table nt;
    ZTRY(fb_vec_table(&v, i, &nt, err));
    sn->nnodes = i + 1;
    ZTRY(parse_node(&nt, &sn->nodes[i], err));
  }
  if (sn->nnodes > 1)
    qsort(sn->nodes, sn->nnodes, sizeof *sn->nodes, node_cmp);
  for (size_t i = 1; i < sn->nnodes; i++)
    if (!strcmp(sn->nodes[i - 1].path, sn->nodes[i].path))
      return zerr_set(err, EIO, "node %s listed twice", sn->nodes[i].path);
  return 0;
}

/* A snapshot flatbuffer into a struct icefmt_snapshot. */
int icefmt_snapshot_parse(const uint8_t *fb, size_t len,
                          struct icefmt_snapshot **out, struct zerr *err) {
  struct icefmt_snapshot *sn = calloc(1, sizeof *sn);
  if (!sn)
    return zerr_set(err, ENOMEM, "out of memory");
  int rc = snapshot_fill(fb, len, sn, err);
  if (rc < 0) {
    icefmt_snapshot_free(sn);
    return rc;
  }
  *out = sn;
  return 0;
}

/* snapshots/ID through the store, checked to hold that id. */
int icefmt_snapshot_load(struct store *s, const uint8_t id[12],
                         size_t max_decode, struct icefmt_snapshot **out,
                         struct zerr *err) {
  char key[16 + ICEFMT_ID_CHARS];
  memcpy(key, "snapshots/", 10);
  icefmt_id_encode(id, 12, key + 10);
  uint8_t *fb;
  size_t len;
  ZTRY(icefmt_read_file(s, key, ICEFMT_SNAPSHOT, max_decode, &fb, &len, err));
  int rc = icefmt_snapshot_parse(fb, len, out, err);
  free(fb);
  if (rc < 0)
    return zerr_prefix(err, "%s: ", key);
  if (memcmp((*out)->id, id, 12)) {
    icefmt_snapshot_free(*out);
    *out = NULL;
    return zerr_set(err, EIO, "%s: holds another snapshot's id", key);
  }
  return 0;
}

/* Free the nodes; NULL-safe. */
void icefmt_snapshot_free(struct icefmt_snapshot *sn) {
  if (!sn)
    return;
  for (size_t i = 0; i < sn->nnodes; i++) {
    struct icefmt_node *nd = &sn->nodes[i];
    free(nd->path);
    free(nd->user_data);
    free(nd->shape);
    for (size_t k = 0; k < nd->nmrefs; k++)
      free(nd->mrefs[k].from);
    free(nd->mrefs);
  }
  free(sn->nodes);
  free(sn->message);
  free(sn);
}
