/* fuzz_consolidated.c - consolidated metadata: the V2 .zmetadata parser,
 * and the consolidated_metadata member of a V3 group's zarr.json; then
 * the table's walk (children, node documents) as listings use it. */
#include "fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/zarr/consolidated.h"
#include "../../src/json/zjson.h"

struct walk {
  const struct zcons *c;
  const char *dir;
  int depth;
  int budget; /* names left to visit */
};

static int walk_dir(const struct zcons *c, const char *dir, int depth,
                    int *budget);

/* One child: its document, and below it. */
static int walk_child(void *ud, const char *name) {
  struct walk *w = ud;
  if (--w->budget < 0)
    return 1;
  char rel[1024];
  if (snprintf(rel, sizeof rel, "%s%s%s", w->dir, *w->dir ? "/" : "", name) >=
      (int)sizeof rel)
    return 0;
  size_t len;
  enum zcons_kind kind;
  const char *doc = zcons_node(w->c, rel, &len, &kind);
  if (doc && strlen(doc) > len)
    abort(); /* the length must cover the document */
  if (zcons_has_dir(w->c, rel) && w->depth < 8)
    walk_dir(w->c, rel, w->depth + 1, &w->budget);
  return 0;
}

/* List dir and everything below it (bounded). */
static int walk_dir(const struct zcons *c, const char *dir, int depth,
                    int *budget) {
  struct walk w = {c, dir, depth, *budget};
  struct zerr err = {0};
  int rc = zcons_children(c, dir, walk_child, &w, &err);
  *budget = w.budget;
  return rc;
}

/* Walk a parsed table and free it. */
static void walk_free(struct zcons *c) {
  int budget = 4096;
  if (c) {
    zcons_count(c);
    walk_dir(c, "", 0, &budget);
  }
  zcons_free(c);
}

/* One document, read both as a .zmetadata and as a V3 group zarr.json. */
FUZZ_TARGET(consolidated) {
  struct zcons *c = NULL;
  struct zerr err = {0};
  if (zcons_parse_v2((const char *)data, size, &c, &err) == 0)
    walk_free(c);
  json_t *root = zjson_loadb((const char *)data, size, &err);
  if (root) {
    c = NULL;
    if (zcons_parse_v3(json_object_get(root, "consolidated_metadata"), &c,
                       &err) == 0)
      walk_free(c);
    json_decref(root);
  }
  return 0;
}
