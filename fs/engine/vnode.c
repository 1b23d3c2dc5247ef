/* vnode.c - the views' nodes of an array (see node_int.h): the node of
 * its CF views (values.cf.txt, K.cf.txt), decoded as xarray decodes the
 * variable among the other variables of its group (src/zarr/cfvars.h:
 * time bounds take their time's units and calendar, character arrays are
 * joined into strings), and the node of its rows.csv. Above node.c: it
 * calls node.c, which calls it back only through the struct node_views
 * that vnode_table_new hands the table (tests/calls.sh). */
#include "node.h"
#include "node_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/util/log.h"
#include "../../src/util/logonce.h"
#include "../../src/zarr/cf.h"
#include "../../src/zarr/cfmask.h"
#include "../../src/zarr/cfvars.h"
#include "../../src/zarr/dtype_struct.h"
#include "../text/textprep.h"

/* Mixed into the attributes' hash of a joined node, so that the
 * persistent index never takes one's text sizes for the other's. */
#define VNODE_JOIN_SALT 0x6a6f696e6564ull

/* A hash of attributes as compact JSON with sorted keys (0: none, or no
 * memory to dump them: the units are then keyed by the metadata only, as
 * when there are no attributes). */
static uint64_t attrs_hash_of(json_t *attrs) {
  if (!attrs)
    return 0;
  char *doc = json_dumps(attrs, JSON_COMPACT | JSON_SORT_KEYS);
  if (!doc)
    return 0;
  uint64_t h = htab_hash_bytes(doc, strlen(doc), 0x6174747273ull) | 1;
  free(doc);
  return h;
}

/* ---- the variables of a group ---- */

/* The arrays of group path as cfvars_new takes them: *in (n of them,
 * names borrowed from m, attributes owned: in_free), their metadata read
 * without making their nodes (node_peek: a member's own load would ask
 * for the group's variables again). */
static int vm_peek(struct node_table *t, const char *path,
                   const struct node_members *m, struct cfvar_in **in,
                   struct zerr *err) {
  *in = calloc(m->n ? m->n : 1, sizeof **in);
  if (!*in)
    return zerr_set(err, ENOMEM, "out of memory");
  for (size_t i = 0; i < m->n; i++) {
    char child[4096];
    struct zmeta *zm = NULL;
    json_t *attrs = NULL;
    (*in)[i].name = m->v[i];
    if (node_key_join(child, sizeof child, path, m->v[i]) < 0)
      continue;
    ZTRY(node_peek(t, child, &zm, &attrs, err));
    if (!zm)
      continue;
    json_t *d = json_object_get(zm->root, "dimension_names");
    if (!d)
      d = json_object_get(attrs, "_ARRAY_DIMENSIONS");
    (*in)[i].dims = json_incref(d);
    (*in)[i].is_bytes = zm->dtype.kind == DT_FIXED_BYTES;
    (*in)[i].attrs = attrs;
    zmeta_free(zm);
  }
  return 0;
}

/* Free what vm_peek made. */
static void in_free(struct cfvar_in *in, size_t n) {
  for (size_t i = 0; in && i < n; i++) {
    json_decref(in[i].dims);
    json_decref(in[i].attrs);
  }
  free(in);
}

/* The variables of group path (borrowed from its node, NULL when path is
 * no group): made once, by the first array of the group that needs them,
 * and published on the group's node. 0, or a transient failure. */
static int group_vars(struct node_table *t, const char *path,
                      const struct cfvars **out, struct zerr *err) {
  *out = NULL;
  struct znode *g = (struct znode *)node_get(t, path);
  if (g->kind != ZNODE_GROUP)
    return 0;
  struct cfvars *cv = atomic_load_explicit(&g->vars, memory_order_acquire);
  if (cv) {
    *out = cv;
    return 0;
  }
  struct node_members m = {0};
  struct cfvar_in *in = NULL;
  int rc = node_members_load(t, path, &m, err);
  if (rc == 0)
    rc = vm_peek(t, path, &m, &in, err);
  if (rc == 0)
    rc = cfvars_new(in, m.n, &cv, err);
  in_free(in, m.n);
  node_members_free(&m);
  if (rc < 0)
    return rc;
  struct cfvars *none = NULL; /* two arrays may build them: the first wins */
  if (!atomic_compare_exchange_strong_explicit(
          &g->vars, &none, cv, memory_order_acq_rel, memory_order_acquire)) {
    cfvars_free(cv);
    cv = none;
  }
  *out = cv;
  return 0;
}

/* ---- the CF views' node ---- */

/* The dimension name d of array n, or NULL. */
static const char *dim_name(const struct znode *n, int d) {
  json_t *dims = json_object_get(n->meta->root, "dimension_names");
  if (!dims && n->attrs)
    dims = json_object_get(n->attrs, "_ARRAY_DIMENSIONS");
  if (json_array_size(dims) != (size_t)n->meta->ndim)
    return NULL;
  return json_string_value(json_array_get(dims, (size_t)d));
}

/* Make v (a copy of character array n's node) the node of its joined
 * strings (see struct znode.join): its own metadata, one element of
 * |S<len> per run along the last dimension. 0 or -ENOMEM. */
static int vnode_join(struct znode *v, const struct znode *n,
                      struct zerr *err) {
  const struct zmeta *m = n->meta;
  int last = m->ndim - 1;
  uint64_t len = m->shape[last];
  struct zmeta *jm = malloc(sizeof *jm);
  uint8_t *fill = jm ? malloc((size_t)len) : NULL;
  if (!fill) {
    free(jm);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  *jm = *m; /* root, codecs and fields borrowed from n's: not freed here */
  memset(fill, m->fill_len ? m->fill[0] : 0, (size_t)len);
  jm->fill = fill;
  jm->fill_len = (size_t)len;
  jm->shape[last] = jm->chunk[last] = 1;
  jm->nelem /= len;
  jm->chunk_nelem /= len;
  jm->dtype.size = (size_t)len;
  snprintf(jm->dtype.name, sizeof jm->dtype.name, "|S%llu",
           (unsigned long long)len);
  v->meta = jm;
  v->join = len;
  v->spec.shape[last] = 1;
  v->spec.nelem = jm->chunk_nelem;
  v->spec.dtype = jm->dtype;
  v->spec.fill = fill;
  v->spec.fill_len = (size_t)len;
  v->uspec = v->spec;
  v->form.shape[last] = 1;
  return 0;
}

/* May character array n be joined (its last dimension stackable in its
 * group)? 1, 0, or a transient failure. A character dimension split
 * across chunks is logged once: its strings are not joined. */
static int joinable(struct node_table *t, const struct znode *n,
                    const struct cfvars *cv, const char *key) {
  const struct zmeta *m = n->meta;
  int last = m->ndim - 1;
  const char *dim = dim_name(n, last);
  if (!dim || !cfvars_stackable(cv, dim) || !m->shape[last])
    return 0;
  if (m->chunk[last] == m->shape[last] && !n->shard && !m->irregular)
    return 1;
  logonce_log(t->log, ZLOG_WARN, t->store->location, key,
              "character array not joined into strings: its last dimension "
              "is split across chunks");
  return 0;
}

/* The CF encoding of n (decoded with attrs) into *c, or NULL; joined:
 * its characters are joined. A malformed encoding is logged and gives
 * none; 0 or -ENOMEM. */
static int parse_cf(struct node_table *t, const struct znode *n, json_t *attrs,
                    int joined, const char *key, struct cf **c,
                    struct zerr *err) {
  json_t *fill = json_object_get(n->meta->root, "fill_value");
  int xr = json_object_get(n->attrs, "_ARRAY_DIMENSIONS") != NULL;
  /* xarray masks with a V3 array's fill_value only when asked
   * (use_zarr_fill_value_as_mask: off by default for V3, on for V2): a
   * V3 fill_value is mandatory, so it is no _FillValue; the attribute is
   * (xarray writes one). */
  int v3 =
      json_integer_value(json_object_get(n->meta->root, "zarr_format")) == 3;
  int rc;
  if (n->meta->dtype.kind == DT_FIXED_BYTES) {
    /* A variable xarray reads (V2 _ARRAY_DIMENSIONS, V3 dimension_names)
     * shows its strings as text even with nothing to mask, as xarray
     * does: else the same strings would be hex in a V3 manifest and text
     * in a V2 store whose fill_value happens to mask. */
    int var =
        xr || json_is_array(json_object_get(n->meta->root, "dimension_names"));
    rc = cfmask_parse_bytes(attrs, n->meta->fill, n->meta->fill_len,
                            xr && fill && !json_is_null(fill), joined || var, c,
                            err);
  } else {
    rc = cf_parse(attrs, xr ? fill : NULL, &n->meta->dtype, c, err);
    if (rc == 0 && *c && !xr && !v3) {
      cf_free(*c);
      *c = NULL;
      rc = cf_parse(attrs, fill, &n->meta->dtype, c, err);
    }
  }
  if (rc == -ENOMEM)
    return rc;
  if (rc < 0) {
    char msg[ZERR_MSG_MAX + 32];
    snprintf(msg, sizeof msg, "no CF views: %s", err->msg);
    node_log(t, key, msg);
    zerr_clear(err);
    *c = NULL;
  }
  return 0;
}

/* Give array n the node of its CF views when its attributes carry a CF
 * encoding, or when xarray wrote it (`_ARRAY_DIMENSIONS`: xarray keeps a
 * variable's _FillValue in the array's fill_value) and its fill_value
 * masks; a fill_value alone in any other array would give every array CF
 * views. The values are decoded with the array's own fill_value, as
 * xarray's Zarr backend reads it (as _FillValue when the attributes have
 * none), and with what its group's other variables tell (cfvars.h): a
 * time bounds variable with its time's units and calendar, a character
 * array joined into strings. numpy S arrays show their strings as text
 * (masked ones empty). */
int vnode_set_cf(struct node_table *t, struct znode *n, const char *key,
                 struct zerr *err) {
  const struct zmeta *m = n->meta;
  if (!n->attrs)
    return 0;
  int chars =
      m->dtype.kind == DT_FIXED_BYTES && m->dtype.size == 1 && m->ndim >= 1;
  int bounds = m->ndim >= 2 && (!json_object_get(n->attrs, "units") ||
                                !json_object_get(n->attrs, "calendar"));
  const struct cfvars *cv = NULL;
  const char *slash = strrchr(n->path, '/');
  if ((chars || bounds) && *n->path) {
    char parent[4096];
    size_t pl = slash ? (size_t)(slash - n->path) : 0;
    if (pl >= sizeof parent)
      return 0;
    memcpy(parent, n->path, pl);
    parent[pl] = '\0';
    ZTRY(group_vars(t, parent, &cv, err));
  }
  json_t *eff = NULL; /* the attributes with what a bounded time gives */
  if (cv && bounds)
    ZTRY(cfvars_attrs(cv, slash ? slash + 1 : n->path, n->attrs, &eff, err));
  json_t *attrs = eff ? eff : n->attrs;
  int joined = chars && cv && joinable(t, n, cv, key);
  struct cf *c = NULL;
  int rc = parse_cf(t, n, attrs, joined, key, &c, err);
  struct znode *v = rc == 0 && c ? malloc(sizeof *v) : NULL;
  if (rc == 0 && c && !v)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (v) {
    *v = *n;
    v->cf = NULL;
    v->base = n;
    v->attrs = NULL;
    v->attrs_hash = attrs_hash_of(attrs) ^ (joined ? VNODE_JOIN_SALT : 0);
    v->cons = NULL;
    v->next = NULL;
    atomic_init(&v->sizes_gen, 0);
    v->form.cf = c;
    v->form.fill = NULL;
    if (c->is_bytes) /* their text, not hex */
      v->form.dt = dtype_of(DT_STRING);
    if (joined && (rc = vnode_join(v, n, err)) < 0)
      v->join = 0;
    if (rc == 0)
      rc =
          textprep_fill_text(&v->uspec, &v->meta->dtype, t->env, &v->form, err);
  }
  json_decref(eff);
  if (rc < 0 || !c) {
    if (v)
      vnode_free_cf(v);
    else
      cf_free(c);
    return rc;
  }
  n->cf = v;
  return 0;
}

/* ---- rows.csv's node ---- */

/* Give an array of two or more dimensions the node of rows.csv: its own
 * form (CSV fields, CF-decoded where the array has CF views) and fill
 * text. A fill text that cannot be made is logged and gives no rows.csv.
 * 0, or -ENOMEM with err set. */
int vnode_set_csv(struct node_table *t, struct znode *n, const char *key,
                  struct zerr *err) {
  if (n->meta->ndim < 2)
    return 0;
  struct znode *v = malloc(sizeof *v);
  if (!v)
    return zerr_set(err, ENOMEM, "out of memory");
  *v = *n;
  v->cf = NULL;
  v->csv = NULL;
  v->base = n;
  v->attrs = NULL;
  v->attrs_hash = attrs_hash_of(n->attrs);
  v->cons = NULL;
  v->next = NULL;
  atomic_init(&v->sizes_gen, 0);
  v->form.csv = 1;
  v->form.row_len = n->meta->shape[n->meta->ndim - 1];
  if (n->meta->dtype.kind == DT_STRUCT && n->meta->dtype.st)
    v->form.elem_fields = n->meta->dtype.st->nfields;
  /* numbers decoded as the CF views decode them; strings stay fields of
   * their own (a character array's characters are not joined here) */
  v->form.cf = n->cf && !n->cf->form.cf->is_bytes ? n->cf->form.cf : NULL;
  if (v->form.dt.kind == DT_STRING || v->form.dt.kind == DT_BYTES)
    v->form.dt = dtype_of(DT_STRING); /* their fields: see csvtext_prep */
  v->form.fill = NULL;
  int rc =
      textprep_fill_text(&v->uspec, &v->meta->dtype, t->env, &v->form, err);
  if (rc < 0) {
    free(v);
    if (rc == -ENOMEM)
      return rc;
    char msg[ZERR_MSG_MAX + 32];
    snprintf(msg, sizeof msg, "no rows.csv: %s", err->msg);
    node_log(t, key, msg);
    zerr_clear(err);
    return 0;
  }
  n->csv = v;
  return 0;
}

/* ---- freeing ---- */

/* Free the CF views' node of an array: it shares all but its form's CF
 * encoding and fill text (and, joined, its metadata) with the array's
 * node. */
void vnode_free_cf(struct znode *c) {
  if (!c)
    return;
  cf_free((struct cf *)c->form.cf);
  free(c->form.fill);
  if (c->join) {
    free(c->meta->fill);
    free(c->meta);
  }
  free(c);
}

void vnode_free(struct znode *n) {
  if (!n)
    return;
  if (n->csv) { /* all but its fill text is shared */
    free(n->csv->form.fill);
    free((struct znode *)n->csv);
  }
  vnode_free_cf((struct znode *)n->cf);
  cfvars_free(atomic_load_explicit(&n->vars, memory_order_acquire));
}

/* vnode.c's functions that node.c, below it, calls back. */
static const struct node_views vnode_views = {vnode_set_cf, vnode_set_csv,
                                              vnode_free};

/* See node.h. */
int vnode_table_new(struct store *store, struct logonce *log,
                    const struct codec_env *env, int no_consolidated,
                    struct node_table **out, struct zerr *err) {
  ZTRY(node_table_new(store, log, env, no_consolidated, out, err));
  (*out)->views = &vnode_views;
  return 0;
}
