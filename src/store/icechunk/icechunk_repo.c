/* icechunk_repo.c - a repository's refs and history: the spec 2 `repo` info
 * file (branches, tags, deleted tags, every snapshot; its configuration's
 * virtual chunk containers are read by icechunk_vcc.c) and the spec 1 refs
 * (`refs/branch.NAME/ref.json`, `refs/tag.NAME/ref.json`,
 * `ref.json.deleted` tombstones, `config.yaml`), read through a store.
 * Parsing only, no locks; a struct icefmt_repo belongs to whoever loaded
 * it. Field numbers are the slots of the .fbs schemas of
 * icechunk-format/flatbuffers/ (a union takes two: its type, then its
 * value); spec 1 files use a prefix of the same tables. The icefmt_ prefix
 * is the format module's across its files (icechunk_fmt.c,
 * icechunk_common.c, icechunk_repo.c, icechunk_vcc.c, icechunk_snap.c,
 * icechunk_manifest.c). */
#define _GNU_SOURCE
#include "icechunk_fmt.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../json/flatbuf.h"
#include "../store.h"
#include "icechunk_common.h"

/* Largest ref.json and config.yaml read. */
#define ICEFMT_SMALL_MAX (1u << 20)

/* Is name usable as a ref name: one a file system can hold as a file
 * name (non-empty, not "." or "..", no NUL, no '/')? */
static int ref_name_ok(const char *s, size_t n) {
  return n > 0 && !memchr(s, '\0', n) && !memchr(s, '/', n) &&
         !(n == 1 && s[0] == '.') && !(n == 2 && s[0] == '.' && s[1] == '.');
}

/* Refs by name (byte order, as Icechunk sorts them). */
static int ref_cmp(const void *a, const void *b) {
  return strcmp(((const struct icefmt_ref *)a)->name,
                ((const struct icefmt_ref *)b)->name);
}

/* C strings through pointers, for qsort and bsearch. */
static int str_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Note a ref left out, "skipped KIND 'NAME': WHY" (the name's first 64
 * bytes, escaped), among the first ICEFMT_SKIPPED_MAX; every one counts. */
static int note_skip(struct icefmt_repo *r, const char *kind, const char *name,
                     size_t n, const char *why, struct zerr *err) {
  if (++r->nskipped > ICEFMT_SKIPPED_MAX)
    return 0;
  char shown[4 * 64 + 4], *o = shown;
  for (size_t i = 0; i < n && i < 64; i++) {
    unsigned char c = (unsigned char)name[i];
    if (c < 0x20 || c == 0x7f || c == '\\' || c == '\'')
      o += sprintf(o, "\\x%02x", c);
    else
      *o++ = (char)c;
  }
  strcpy(o, n > 64 ? "..." : "");
  char **nv = realloc(r->skipped, r->nskipped * sizeof *nv);
  if (!nv) {
    r->nskipped--;
    return zerr_set(err, ENOMEM, "out of memory");
  }
  r->skipped = nv;
  if (asprintf(&nv[r->nskipped - 1], "skipped %s '%s': %s", kind, shown, why) <
      0) {
    r->nskipped--;
    return zerr_set(err, ENOMEM, "out of memory");
  }
  return 0;
}

/* A ref and where it was listed, for a stable sort. */
struct listed_ref {
  struct icefmt_ref ref;
  size_t pos;
};

/* By name, then by place in the list. */
static int listed_cmp(const void *a, const void *b) {
  const struct listed_ref *x = a, *y = b;
  int c = ref_cmp(&x->ref, &y->ref);
  return c ? c : (x->pos > y->pos) - (x->pos < y->pos);
}

/* Sort v[0..*n) by name; of a name listed twice the first listed is kept
 * and the others are left out (noted in r). */
static int sort_refs(struct icefmt_repo *r, struct icefmt_ref *v, size_t *n,
                     const char *what, struct zerr *err) {
  if (*n < 2)
    return 0;
  struct listed_ref *t = malloc(*n * sizeof *t);
  if (!t)
    return zerr_set(err, ENOMEM, "out of memory");
  for (size_t i = 0; i < *n; i++)
    t[i] = (struct listed_ref){v[i], i};
  qsort(t, *n, sizeof *t, listed_cmp);
  size_t k = 0;
  int rc = 0;
  for (size_t i = 0; i < *n; i++) {
    if (k && !strcmp(v[k - 1].name, t[i].ref.name)) {
      if (rc == 0)
        rc = note_skip(r, what, t[i].ref.name, strlen(t[i].ref.name),
                       "listed twice (the first one listed is kept)", err);
      free(t[i].ref.name);
      continue;
    }
    v[k++] = t[i].ref;
  }
  *n = k;
  free(t);
  return rc;
}

/* Is name among the sorted strings v[0..n)? */
static int in_sorted(char *const *v, size_t n, const char *name) {
  return n && bsearch(&name, v, n, sizeof *v, str_cmp) != NULL;
}

/* Refs vector field id of the repo table into *out; a ref no file
 * system can name, or naming no snapshot of the list, is left out. */
static int parse_refs(const struct fb_table *t, unsigned id,
                      struct icefmt_repo *r, struct icefmt_ref **out, size_t *n,
                      const char *what, struct zerr *err) {
  struct fb_vec v;
  int rc = fb_vector(t, id, 4, 4, &v, err);
  if (rc < 0)
    return rc;
  if (rc == 0)
    return zerr_set(err, EIO, "repo info has no %s list", what);
  *out = calloc(v.n ? v.n : 1, sizeof **out);
  if (!*out)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    struct fb_table e;
    const char *s;
    uint32_t sn;
    uint64_t idx;
    ZTRY(fb_vec_table(&v, i, &e, err));
    ZTRY(fb_string(&e, 0, &s, &sn, err));
    ZTRY(fb_scalar(&e, 1, 4, 0, &idx, err));
    if (!s || !ref_name_ok(s, sn)) {
      ZTRY(note_skip(r, what, s ? s : "", s ? sn : 0,
                     "no file system can name it", err));
      continue;
    }
    if (idx >= r->nsnaps) {
      char why[96];
      snprintf(why, sizeof why, "names snapshot %llu of %zu",
               (unsigned long long)idx, r->nsnaps);
      ZTRY(note_skip(r, what, s, sn, why, err));
      continue;
    }
    if (!((*out)[*n].name = strndup(s, sn)))
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy((*out)[*n].snap, r->snaps[idx].id, 12);
    (*n)++;
  }
  return sort_refs(r, *out, n, what, err);
}

/* The body of icefmt_repo_parse, filling r. */
static int repo_fill(const uint8_t *fb, size_t len, struct icefmt_repo *r,
                     struct zerr *err) {
  struct fb_table t;
  ZTRY(fb_root(fb, len, &t, err));
  struct fb_vec v;
  int rc = fb_vector(&t, 4, 4, 4, &v, err);
  if (rc <= 0)
    return rc < 0 ? rc : zerr_set(err, EIO, "repo info has no snapshots");
  r->snaps = calloc(v.n ? v.n : 1, sizeof *r->snaps);
  if (!r->snaps)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    struct icefmt_snapinfo *si = &r->snaps[i];
    struct fb_table e;
    const uint8_t *id;
    const char *s;
    uint32_t sn;
    uint64_t x;
    ZTRY(fb_vec_table(&v, i, &e, err));
    ZTRY(fb_struct(&e, 0, 12, 1, &id, err));
    if (!id)
      return zerr_set(err, EIO, "snapshot %u has no id", i);
    memcpy(si->id, id, 12);
    ZTRY(fb_scalar(&e, 1, 4, 0, &x, err));
    int32_t parent = (int32_t)(uint32_t)x;
    /* its own parent is a loop, as any other: walks stop there */
    if (parent < -1 || parent >= (int64_t)v.n)
      return zerr_set(err, EIO, "snapshot %u has parent %d of %u", i, parent,
                      v.n);
    si->parent = parent;
    ZTRY(fb_scalar(&e, 2, 8, 0, &si->flushed_at, err));
    ZTRY(fb_string(&e, 3, &s, &sn, err));
    if (!(si->message = icefmt_dup_text(s ? s : "", sn)))
      return zerr_set(err, ENOMEM, "out of memory");
    r->nsnaps = i + 1;
  }
  rc = fb_vector(&t, 3, 4, 4, &v, err);
  if (rc < 0)
    return rc;
  r->deleted_tags = calloc(v.n ? v.n : 1, sizeof *r->deleted_tags);
  if (!r->deleted_tags)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    const char *s;
    uint32_t sn;
    ZTRY(fb_vec_string(&v, i, &s, &sn, err));
    if (!(r->deleted_tags[i] = icefmt_dup_text(s, sn)))
      return zerr_set(err, ENOMEM, "out of memory");
    r->ndeleted = i + 1;
  }
  if (r->ndeleted > 1)
    qsort(r->deleted_tags, r->ndeleted, sizeof *r->deleted_tags, str_cmp);
  ZTRY(parse_refs(&t, 2, r, &r->branches, &r->nbranches, "branch", err));
  ZTRY(parse_refs(&t, 1, r, &r->tags, &r->ntags, "tag", err));
  /* A deleted tag is never offered, whatever the tag list says. */
  size_t k = 0;
  for (size_t i = 0; i < r->ntags; i++) {
    if (in_sorted(r->deleted_tags, r->ndeleted, r->tags[i].name))
      free(r->tags[i].name);
    else
      r->tags[k++] = r->tags[i];
  }
  r->ntags = k;
  return icefmt_repo_config(&t, r, err);
}

/* A spec 2 repo info flatbuffer into a struct icefmt_repo. */
int icefmt_repo_parse(const uint8_t *fb, size_t len, struct icefmt_repo **out,
                      struct zerr *err) {
  struct icefmt_repo *r = calloc(1, sizeof *r);
  if (!r)
    return zerr_set(err, ENOMEM, "out of memory");
  r->spec = 2;
  r->refs_listed = 1;
  int rc = repo_fill(fb, len, r, err);
  if (rc < 0) {
    icefmt_repo_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* The snapshot id of a spec 1 ref.json. */
int icefmt_refjson_parse(const char *text, size_t len, uint8_t id[12],
                         struct zerr *err) {
  json_error_t je;
  json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  if (!j)
    return zerr_set(err, EIO, "not JSON: %s (line %d)", je.text, je.line);
  json_t *s = json_object_get(j, "snapshot");
  int rc = 0;
  if (!json_is_string(s) || icefmt_id_decode(json_string_value(s), id) < 0)
    rc = zerr_set(err, EIO,
                  "no snapshot id (\"snapshot\": 20 characters of "
                  "Crockford base 32)");
  json_decref(j);
  return rc;
}

/* Read a small text object; -ENOENT passes through. */
static int read_small(struct store *s, const char *key, char **text,
                      size_t *len, struct zerr *err) {
  uint8_t *p;
  ZTRY(store_read_all(s, key, ICEFMT_SMALL_MAX, &p, len, err));
  *text = (char *)p;
  return 0;
}

/* read_ref1's answer for a tag with a tombstone. */
#define REF_DELETED 1

/* Note a tombstone among a ref directory's names. */
static int tomb_cb(void *ud, const char *name, enum store_entry_type type,
                   uint64_t size, int64_t mtime) {
  if (!strcmp(name, "ref.json.deleted"))
    *(int *)ud = 1;
  return 0;
}

/* Does the tombstone key (refs/tag.NAME/ref.json.deleted) exist? A store
 * that lists is asked for the directory's names (the tombstone is an
 * empty object, which some servers answer badly when it is read); one
 * that cannot, for the key itself. 1, 0, or a negative errno. */
static int has_tombstone(struct store *s, const char *tomb, struct zerr *err) {
  struct zerr e2 = {0};
  int rc;
  if (!s->unlistable) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(tomb, '/') - tomb), tomb);
    int found = 0;
    rc = store_list(s, dir, tomb_cb, &found, &e2);
    if (rc >= 0)
      return found;
  } else {
    enum store_entry_type ty;
    uint64_t sz;
    rc = store_stat(s, tomb, &ty, &sz, &e2);
    if (rc == 0)
      return 1;
  }
  if (rc == -ENOENT)
    return 0;
  return zerr_set(err, -rc, "%s: %s", tomb, e2.msg);
}

/* Read refs/KIND.NAME/ref.json: 0 and the id, -ENOENT when absent,
 * REF_DELETED for a tag with a tombstone (ref.json.deleted). */
static int read_ref1(struct store *s, const char *kind, const char *name,
                     size_t n, uint8_t id[12], struct zerr *err) {
  char key[1024];
  if (!ref_name_ok(name, n) ||
      snprintf(key, sizeof key, "refs/%s.%.*s/ref.json.deleted", kind, (int)n,
               name) >= (int)sizeof key)
    return zerr_set(err, ENOENT, "no usable ref named '%.*s'",
                    (int)(n > 200 ? 200 : n), name);
  if (!strcmp(kind, "tag")) {
    int rc = has_tombstone(s, key, err);
    if (rc < 0)
      return rc;
    if (rc == 1)
      return REF_DELETED;
  }
  key[strlen(key) - 8] = '\0'; /* drop ".deleted" */
  char *text;
  size_t len;
  int rc = read_small(s, key, &text, &len, err);
  if (rc < 0)
    return rc == -ENOENT ? rc : zerr_prefix(err, "%s: ", key);
  rc = icefmt_refjson_parse(text, len, id, err);
  free(text);
  return rc < 0 ? zerr_prefix(err, "%s: ", key) : 0;
}

/* Append a ref to a growing list. */
static int push_ref(struct icefmt_ref **v, size_t *n, const char *name,
                    const uint8_t id[12], struct zerr *err) {
  struct icefmt_ref *nv = realloc(*v, (*n + 1) * sizeof *nv);
  if (!nv)
    return zerr_set(err, ENOMEM, "out of memory");
  *v = nv;
  if (!(nv[*n].name = strdup(name)))
    return zerr_set(err, ENOMEM, "out of memory");
  memcpy(nv[*n].snap, id, 12);
  (*n)++;
  return 0;
}

/* Names under refs/, collected by store_list. */
struct names {
  char **v;
  size_t n;
  int oom;
};

/* Keep a directory name of refs/. */
static int collect_name(void *ud, const char *name, enum store_entry_type type,
                        uint64_t size, int64_t mtime) {
  struct names *ns = ud;
  if (type != STORE_DIR)
    return 0;
  char **nv = realloc(ns->v, (ns->n + 1) * sizeof *nv);
  if (!nv || !(nv[ns->n] = strdup(name))) {
    if (nv)
      ns->v = nv;
    ns->oom = 1;
    return 1;
  }
  ns->v = nv;
  ns->n++;
  return 0;
}

/* A deleted tag's name, kept. */
static int push_deleted(struct icefmt_repo *r, const char *name,
                        struct zerr *err) {
  char **nv = realloc(r->deleted_tags, (r->ndeleted + 1) * sizeof *nv);
  if (!nv)
    return zerr_set(err, ENOMEM, "out of memory");
  r->deleted_tags = nv;
  if (!(nv[r->ndeleted] = strdup(name)))
    return zerr_set(err, ENOMEM, "out of memory");
  r->ndeleted++;
  return 0;
}

/* Does the snapshot a spec 1 ref names exist? Asked of a local store
 * only (a stat); over the network it would cost a request per ref at
 * open, so there a missing one is found when the ref is used. 0, or a
 * negative errno (err says it). */
static int snapshot_there(struct store *s, const uint8_t id[12],
                          struct zerr *err) {
  if (s->remote)
    return 0;
  char key[16 + ICEFMT_ID_CHARS];
  memcpy(key, "snapshots/", 10);
  icefmt_id_encode(id, 12, key + 10);
  enum store_entry_type ty;
  uint64_t size;
  int rc = store_stat(s, key, &ty, &size, err);
  if (rc == 0 && ty != STORE_FILE)
    rc = zerr_set(err, ENOENT, "not a file");
  if (rc < 0 && !zerr_is_transient(-rc))
    zerr_set(err, -rc, "names snapshot %s, which is not there (%s)", key + 10,
             rc == -ENOENT ? "no such file" : "cannot be read");
  return rc;
}

/* One listed spec 1 ref directory's name (branch.NAME, tag.NAME) into r:
 * a ref, a deleted tag, nothing (no ref.json: a deleted branch), or left
 * out and noted when it cannot be named or read. Main was read already
 * (main: its id, or NULL when it was left out). */
static int repo1_ref(struct store *s, struct icefmt_repo *r, const char *nm,
                     const uint8_t *main, struct zerr *err) {
  int tag = !strncmp(nm, "tag.", 4);
  if (!tag && strncmp(nm, "branch.", 7))
    return 0;
  const char *kind = tag ? "tag" : "branch", *name = nm + (tag ? 4 : 7);
  if (!ref_name_ok(name, strlen(name)))
    return note_skip(r, kind, name, strlen(name), "no file system can name it",
                     err);
  if (!tag && !strcmp(name, "main"))
    return main ? push_ref(&r->branches, &r->nbranches, name, main, err) : 0;
  uint8_t id[12];
  struct zerr e2 = {0};
  int rc = read_ref1(s, kind, name, strlen(name), id, &e2);
  if (rc == REF_DELETED)
    return push_deleted(r, name, err);
  if (rc == -ENOENT)
    return 0;
  if (rc == 0)
    rc = snapshot_there(s, id, &e2);
  if (rc == 0)
    return push_ref(tag ? &r->tags : &r->branches,
                    tag ? &r->ntags : &r->nbranches, name, id, err);
  if (zerr_is_transient(-rc))
    return zerr_set(err, -rc, "%s", e2.msg);
  return note_skip(r, kind, name, strlen(name), e2.msg, err);
}

/* Spec 1: refs from refs/ and config.yaml. */
static int repo1_fill(struct store *s, struct icefmt_repo *r,
                      struct zerr *err) {
  uint8_t main[12];
  struct zerr e2 = {0};
  int rc = read_ref1(s, "branch", "main", 4, main, &e2);
  if (rc == 0 && (rc = snapshot_there(s, main, &e2)) == -ENOENT)
    rc = -EIO; /* a repository all the same: main is what is wrong */
  if (rc == -ENOENT)
    return zerr_set(err, ENOENT,
                    "neither repo nor "
                    "refs/branch.main/ref.json: not an Icechunk "
                    "repository");
  if (rc < 0 && zerr_is_transient(-rc))
    return zerr_set(err, -rc, "%s", e2.msg);
  if (rc < 0) /* the other refs may still be read */
    ZTRY(note_skip(r, "branch", "main", 4, e2.msg, err));
  int main_ok = rc == 0;
  struct names ns = {0};
  rc = s->unlistable ? -ENOTSUP : store_list(s, "refs", collect_name, &ns, &e2);
  if (ns.oom)
    rc = zerr_set(err, ENOMEM, "out of memory");
  else if (rc == 0) {
    r->refs_listed = 1;
    for (size_t i = 0; i < ns.n && rc == 0; i++)
      rc = repo1_ref(s, r, ns.v[i], main_ok ? main : NULL, err);
  } else if (zerr_is_transient(-rc)) {
    rc = zerr_set(err, -rc, "refs: %s", e2.msg);
  } else {
    rc = main_ok ? push_ref(&r->branches, &r->nbranches, "main", main, err) : 0;
  }
  for (size_t i = 0; i < ns.n; i++)
    free(ns.v[i]);
  free(ns.v);
  ZTRY(rc);
  ZTRY(sort_refs(r, r->branches, &r->nbranches, "branch", err));
  ZTRY(sort_refs(r, r->tags, &r->ntags, "tag", err));
  if (r->ndeleted > 1)
    qsort(r->deleted_tags, r->ndeleted, sizeof *r->deleted_tags, str_cmp);
  char *text;
  size_t len;
  rc = read_small(s, "config.yaml", &text, &len, err);
  if (rc == -ENOENT)
    return 0;
  if (rc < 0)
    return zerr_prefix(err, "config.yaml: ");
  rc = icefmt_config_yaml(text, len, r, err);
  free(text);
  return rc;
}

/* Spec 2 when `repo` exists, else spec 1 refs. */
int icefmt_repo_load(struct store *s, size_t max_decode,
                     struct icefmt_repo **out, struct zerr *err) {
  uint8_t *fb;
  size_t len;
  int rc = icefmt_read_file(s, "repo", ICEFMT_REPO, max_decode, &fb, &len, err);
  if (rc == 0) {
    rc = icefmt_repo_parse(fb, len, out, err);
    free(fb);
    return rc < 0 ? zerr_prefix(err, "repo: ") : 0;
  }
  if (rc != -ENOENT)
    return rc;
  struct icefmt_repo *r = calloc(1, sizeof *r);
  if (!r)
    return zerr_set(err, ENOMEM, "out of memory");
  r->spec = 1;
  zerr_clear(err);
  rc = repo1_fill(s, r, err);
  if (rc < 0) {
    icefmt_repo_free(r);
    return rc;
  }
  *out = r;
  return 0;
}

/* A branch or tag by name (binary search; spec 1 unlisted: read). */
int icefmt_repo_ref(const struct icefmt_repo *r, struct store *s,
                    const char *name, int tag, uint8_t id[12],
                    struct zerr *err) {
  const struct icefmt_ref *v = tag ? r->tags : r->branches;
  size_t n = tag ? r->ntags : r->nbranches;
  struct icefmt_ref key = {.name = (char *)name};
  const struct icefmt_ref *f =
      n ? bsearch(&key, v, n, sizeof *v, ref_cmp) : NULL;
  if (f) {
    memcpy(id, f->snap, 12);
    return 0;
  }
  if (r->spec == 1 && !r->refs_listed && s) {
    int rc = read_ref1(s, tag ? "tag" : "branch", name, strlen(name), id, err);
    if (rc != REF_DELETED)
      return rc;
  }
  return zerr_set(err, ENOENT, "no %s named '%s'", tag ? "tag" : "branch",
                  name);
}

/* Free every name and message; NULL-safe. */
void icefmt_repo_free(struct icefmt_repo *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->nbranches; i++)
    free(r->branches[i].name);
  for (size_t i = 0; i < r->ntags; i++)
    free(r->tags[i].name);
  for (size_t i = 0; i < r->ndeleted; i++)
    free(r->deleted_tags[i]);
  for (size_t i = 0; i < r->nsnaps; i++)
    free(r->snaps[i].message);
  for (size_t i = 0; i < r->nskipped && i < ICEFMT_SKIPPED_MAX; i++)
    free(r->skipped[i]);
  free(r->skipped);
  icefmt_containers_free(r);
  free(r->branches);
  free(r->tags);
  free(r->deleted_tags);
  free(r->snaps);
  free(r);
}
