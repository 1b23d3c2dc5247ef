/* consolidated.c - consolidated metadata tables (see consolidated.h). */
#include "consolidated.h"

#include <stdlib.h>
#include <string.h>

#include "meta.h"
#include "zkey.h"
#include "../json/zjson.h"

/* One listed node: its path below the group and its document as text. */
struct zcons_entry {
  char *rel;
  char *text;
  size_t len;
  enum zcons_kind kind;
};

/* The table, sorted by rel (strcmp), one entry per rel. */
struct zcons {
  struct zcons_entry *e;
  size_t n, cap;
};

/* Free; NULL-safe. */
void zcons_free(struct zcons *c) {
  if (!c)
    return;
  for (size_t i = 0; i < c->n; i++) {
    free(c->e[i].rel);
    free(c->e[i].text);
  }
  free(c->e);
  free(c);
}

/* Number of nodes listed. */
size_t zcons_count(const struct zcons *c) { return c ? c->n : 0; }

/* Append rel (rel_len bytes) with doc serialized as compact JSON. */
static int cons_add(struct zcons *c, const char *rel, size_t rel_len,
                    json_t *doc, enum zcons_kind kind, struct zerr *err) {
  if (c->n == c->cap) {
    size_t nc = c->cap ? c->cap * 2 : 16;
    struct zcons_entry *ne = realloc(c->e, nc * sizeof *ne);
    if (!ne)
      return zerr_set(err, ENOMEM, "out of memory");
    c->e = ne;
    c->cap = nc;
  }
  struct zcons_entry *en = &c->e[c->n];
  en->rel = strndup(rel, rel_len);
  en->text = zjson_dump(doc); /* never a document short of a key */
  if (!en->rel || !en->text) {
    free(en->rel);
    free(en->text);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  en->len = strlen(en->text);
  en->kind = kind;
  c->n++;
  return 0;
}

/* Order entries by rel, then by kind (a V2 .zarray before a .zgroup). */
static int entry_cmp(const void *a, const void *b) {
  const struct zcons_entry *x = a, *y = b;
  int r = strcmp(x->rel, y->rel);
  return r ? r : (int)x->kind - (int)y->kind;
}

/* Sort and keep the first entry of each rel; an empty table becomes NULL. */
static void cons_finish(struct zcons **c) {
  struct zcons *t = *c;
  if (t->n == 0) {
    zcons_free(t);
    *c = NULL;
    return;
  }
  qsort(t->e, t->n, sizeof *t->e, entry_cmp);
  size_t w = 1;
  for (size_t i = 1; i < t->n; i++) {
    if (!strcmp(t->e[i].rel, t->e[w - 1].rel)) {
      free(t->e[i].rel);
      free(t->e[i].text);
      continue;
    }
    t->e[w++] = t->e[i];
  }
  t->n = w;
}

/* A node path below a group: non-empty, no empty, "." or ".." segment. */
static int rel_valid(const char *rel, size_t len) {
  if (len == 0 || len >= 4096 || memchr(rel, '\0', len) || rel[len - 1] == '/')
    return 0;
  char buf[4096];
  memcpy(buf, rel, len);
  buf[len] = '\0';
  return zkey_valid(buf) == 0;
}

/* Parse a V3 group's consolidated_metadata member. */
int zcons_parse_v3(json_t *member, struct zcons **out, struct zerr *err) {
  *out = NULL;
  if (!member || json_is_null(member))
    return 0;
  if (!json_is_object(member))
    return zerr_set(err, EIO, "consolidated_metadata must be an object");
  const char *kind = json_string_value(json_object_get(member, "kind"));
  if (!kind || strcmp(kind, "inline"))
    return zerr_set(err, EIO, "consolidated_metadata kind must be \"inline\"");
  json_t *md = json_object_get(member, "metadata");
  if (!json_is_object(md))
    return zerr_set(err, EIO,
                    "consolidated_metadata metadata must be an object");
  struct zcons *c = calloc(1, sizeof *c);
  if (!c)
    return zerr_set(err, ENOMEM, "out of memory");
  const char *rel;
  json_t *doc;
  int rc = 0;
  json_object_foreach(md, rel, doc) {
    enum zcons_kind k = ZCONS_V3;
    json_t *zf = json_object_get(doc, "zarr_format");
    const char *nt = json_string_value(json_object_get(doc, "node_type"));
    if (!rel_valid(rel, strlen(rel)))
      rc =
          zerr_set(err, EIO, "consolidated entry '%s': invalid node path", rel);
    else if (!json_is_object(doc))
      rc = zerr_set(err, EIO, "consolidated entry '%s': not an object", rel);
    else if (json_is_integer(zf) && json_integer_value(zf) == 2)
      k = json_object_get(doc, "shape") ? ZCONS_V2_ARRAY : ZCONS_V2_GROUP;
    else if (!json_is_integer(zf) || json_integer_value(zf) != 3)
      rc = zerr_set(err, EIO,
                    "consolidated entry '%s': zarr_format must be 2 or 3", rel);
    else if (!nt || (strcmp(nt, "array") && strcmp(nt, "group")))
      rc = zerr_set(err, EIO,
                    "consolidated entry '%s': node_type must be \"array\" or "
                    "\"group\"",
                    rel);
    if (rc == 0)
      rc = cons_add(c, rel, strlen(rel), doc, k, err);
    if (rc < 0) {
      zcons_free(c);
      return rc;
    }
  }
  cons_finish(&c);
  *out = c;
  return 0;
}

/* Does s (len bytes) end with suffix? */
static int has_suffix(const char *s, size_t len, const char *suffix) {
  size_t n = strlen(suffix);
  return len >= n && !memcmp(s + len - n, suffix, n);
}

/* Parse .zmetadata text. */
int zcons_parse_v2(const char *text, size_t len, struct zcons **out,
                   struct zerr *err) {
  *out = NULL;
  json_t *root = zjson_loadb(text, len, err);
  if (!root)
    return err && err->code ? -err->code : -EIO;
  int rc = 0;
  json_t *fmt = json_object_get(root, "zarr_consolidated_format");
  json_t *md = json_object_get(root, "metadata");
  struct zcons *c = NULL;
  if (!json_is_object(root))
    rc = zerr_set(err, EIO, ".zmetadata is not a JSON object");
  else if (!json_is_integer(fmt) || json_integer_value(fmt) != 1)
    rc = zerr_set(err, EIO, "zarr_consolidated_format must be 1");
  else if (!json_is_object(md))
    rc = zerr_set(err, EIO, ".zmetadata metadata must be an object");
  else if (!(c = calloc(1, sizeof *c)))
    rc = zerr_set(err, ENOMEM, "out of memory");
  const char *key;
  json_t *doc;
  if (rc == 0) {
    json_object_foreach(md, key, doc) {
      size_t kl = strlen(key);
      enum zcons_kind k;
      size_t sl;
      if (has_suffix(key, kl, ".zarray")) {
        k = ZCONS_V2_ARRAY;
        sl = 7;
      } else if (has_suffix(key, kl, ".zgroup")) {
        k = ZCONS_V2_GROUP;
        sl = 7;
      } else {
        continue; /* .zattrs and anything else: not needed */
      }
      if (kl == sl)
        continue; /* the group itself */
      if (key[kl - sl - 1] != '/' || !rel_valid(key, kl - sl - 1)) {
        rc = zerr_set(err, EIO, "consolidated entry '%s': invalid key", key);
        break;
      }
      if (!json_is_object(doc)) {
        rc = zerr_set(err, EIO, "consolidated entry '%s': not an object", key);
        break;
      }
      if ((rc = cons_add(c, key, kl - sl - 1, doc, k, err)) < 0)
        break;
    }
  }
  json_decref(root);
  if (rc < 0) {
    zcons_free(c);
    return rc;
  }
  cons_finish(&c);
  *out = c;
  return 0;
}

/* Index of the first entry whose rel is >= key. */
static size_t lower_bound(const struct zcons *c, const char *key) {
  size_t lo = 0, hi = c->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(c->e[mid].rel, key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Lookup by exact rel. */
const char *zcons_node(const struct zcons *c, const char *rel, size_t *len,
                       enum zcons_kind *kind) {
  if (!c || !*rel)
    return NULL;
  size_t i = lower_bound(c, rel);
  if (i == c->n || strcmp(c->e[i].rel, rel))
    return NULL;
  *len = c->e[i].len;
  *kind = c->e[i].kind;
  return c->e[i].text;
}

/* "rel/" into buf (or "" for the group); -1 when too long. */
static int dir_prefix(const char *rel, char *buf, size_t cap) {
  size_t n = strlen(rel);
  if (n + 2 > cap)
    return -1;
  memcpy(buf, rel, n);
  if (n)
    buf[n++] = '/';
  buf[n] = '\0';
  return (int)n;
}

/* A listed node, or a directory above one. */
int zcons_has_dir(const struct zcons *c, const char *rel) {
  if (!c)
    return 0;
  char pre[4098];
  int pl = dir_prefix(rel, pre, sizeof pre);
  if (pl < 0)
    return 0;
  size_t i = lower_bound(c, rel);
  if (pl && i < c->n && !strcmp(c->e[i].rel, rel))
    return 1;
  i = lower_bound(c, pre);
  return i < c->n && !strncmp(c->e[i].rel, pre, (size_t)pl);
}

/* A child name as a pointer into an entry and a length. */
struct seg {
  const char *p;
  size_t n;
};

/* Order segments by their bytes (strcmp order). */
static int seg_cmp(const void *a, const void *b) {
  const struct seg *x = a, *y = b;
  size_t m = x->n < y->n ? x->n : y->n;
  int r = memcmp(x->p, y->p, m);
  return r ? r : (x->n > y->n) - (x->n < y->n);
}

/* Distinct first segments below rel. */
int zcons_children(const struct zcons *c, const char *rel, zcons_child_cb cb,
                   void *ud, struct zerr *err) {
  if (!c)
    return 0;
  char pre[4098];
  int pl = dir_prefix(rel, pre, sizeof pre);
  if (pl < 0)
    return 0;
  size_t first = lower_bound(c, pre), last = first;
  while (last < c->n && !strncmp(c->e[last].rel, pre, (size_t)pl))
    last++;
  if (last == first)
    return 0;
  struct seg *segs = malloc((last - first) * sizeof *segs);
  if (!segs)
    return zerr_set(err, ENOMEM, "out of memory");
  for (size_t i = first; i < last; i++) {
    const char *p = c->e[i].rel + pl;
    const char *slash = strchr(p, '/');
    segs[i - first] = (struct seg){p, slash ? (size_t)(slash - p) : strlen(p)};
  }
  size_t n = last - first;
  qsort(segs, n, sizeof *segs, seg_cmp);
  char name[4096];
  for (size_t i = 0; i < n; i++) {
    if (i && !seg_cmp(&segs[i], &segs[i - 1]))
      continue;
    memcpy(name, segs[i].p, segs[i].n);
    name[segs[i].n] = '\0';
    if (cb(ud, name))
      break;
  }
  free(segs);
  return 0;
}
