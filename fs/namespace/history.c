/* history.c - an Icechunk mount's history as files (see history.h). */
#include "history.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/store/icechunk/icechunk.h"

#define HISTORY_LOG_DIR "log"
#define HISTORY_LOG_SUFFIX ".txt"
/* Log lines name history paths below the control directory
 * (fs/namespace/namespace.h's NS_STATS_DIR, which includes this module). */
#define HISTORY_KEY_DIR ".zarrfs/"

/* Only a mount's own engine: a tree shown below /.zarrfs has no history
 * of its own (no endless nesting). */
int history_shown(const struct engine *e) { return e->ic && !e->parent; }

/* The length of rel's first component. */
static size_t first_len(const char *rel) {
  const char *slash = strchr(rel, '/');
  return slash ? (size_t)(slash - rel) : strlen(rel);
}

/* Does rel's first component equal word? */
static int first_is(const char *rel, const char *word) {
  size_t n = first_len(rel);
  return n == strlen(word) && !memcmp(rel, word, n);
}

/* A log file name, "branch.NAME.txt" or "tag.NAME.txt": the ref's name
 * (into name, NUL-terminated) and whether it is a tag; -ENOENT when it is
 * no such name. */
static int log_name(const char *file, char *name, size_t cap, int *tag,
                    struct zerr *err) {
  size_t fl = strlen(file), sl = strlen(HISTORY_LOG_SUFFIX), pl;
  if (!strncmp(file, "branch.", 7)) {
    pl = 7;
    *tag = 0;
  } else if (!strncmp(file, "tag.", 4)) {
    pl = 4;
    *tag = 1;
  } else {
    return zerr_set(err, ENOENT, "no such file");
  }
  if (fl <= pl + sl || strcmp(file + fl - sl, HISTORY_LOG_SUFFIX) ||
      fl - pl - sl >= cap)
    return zerr_set(err, ENOENT, "no such file");
  memcpy(name, file + pl, fl - pl - sl);
  name[fl - pl - sl] = '\0';
  return 0;
}

/* The snapshot a tree directory names: branches/NAME, tags/NAME or
 * snapshots/ID (name: the component after the first). */
static int tree_id(struct engine *e, const char *dir, const char *name,
                   uint8_t id[12], struct zerr *err) {
  if (!strcmp(dir, "branches") || !strcmp(dir, "tags")) {
    int rc = icechunk_ref_id(e->ic, name, dir[0] == 't', id, err);
    return rc == -ENOENT ? zerr_set(err, ENOENT, "no such file") : rc;
  }
  if (icefmt_id_decode(name, id) < 0 || strlen(name) != ICEFMT_ID_CHARS)
    return zerr_set(err, ENOENT, "no such file");
  /* The canonical spelling only: one directory per snapshot. */
  char sid[ICEFMT_ID_CHARS + 1];
  icefmt_id_encode(id, 12, sid);
  if (strcmp(sid, name))
    return zerr_set(err, ENOENT, "no such file");
  const struct icefmt_repo *r = icechunk_refs(e->ic);
  if (r->spec == 2) { /* the repository's list, no file read */
    for (size_t i = 0; i < r->nsnaps; i++)
      if (!memcmp(r->snaps[i].id, id, 12))
        return 0;
    return zerr_set(err, ENOENT, "no such file");
  }
  return 0; /* spec 1: opening the snapshot tells */
}

/* Route into a tree, or name the history's own directories and logs. */
int history_resolve(struct engine *e, const char *rel, struct engine **sub,
                    const char **rest, struct zerr *err) {
  if (!*rel)
    return HISTORY_DIR;
  size_t n = first_len(rel);
  const char *after = rel[n] ? rel + n + 1 : rel + n;
  if (first_is(rel, HISTORY_LOG_DIR)) {
    if (!*after)
      return HISTORY_DIR;
    char name[4096];
    int tag;
    uint8_t id[12];
    if (strchr(after, '/'))
      return zerr_set(err, ENOENT, "no such file");
    ZTRY(log_name(after, name, sizeof name, &tag, err));
    int rc = icechunk_ref_id(e->ic, name, tag, id, err);
    if (rc == -ENOENT)
      return zerr_set(err, ENOENT, "no such file");
    return rc < 0 ? rc : HISTORY_LOG;
  }
  char dir[16];
  if (n >= sizeof dir || !(first_is(rel, "branches") || first_is(rel, "tags") ||
                           first_is(rel, "snapshots")))
    return zerr_set(err, ENOENT, "no such file");
  memcpy(dir, rel, n);
  dir[n] = '\0';
  if (!*after)
    return HISTORY_DIR;
  size_t m = first_len(after);
  char name[4096];
  if (m >= sizeof name)
    return zerr_set(err, ENAMETOOLONG, "path too long");
  memcpy(name, after, m);
  name[m] = '\0';
  uint8_t id[12];
  ZTRY(tree_id(e, dir, name, id, err));
  int rc = engine_sub(e, id, sub, err);
  if (rc == -ENOENT && dir[0] != 's') { /* a ref naming no snapshot */
    zerr_prefix(err, "the %s names a snapshot that cannot be read: ",
                dir[0] == 'b' ? "branch" : "tag");
    err->code = EIO;
    return -EIO;
  }
  if (rc == -ENOENT)
    return zerr_set(err, ENOENT, "no such file");
  if (rc < 0)
    return rc;
  *rest = after[m] ? after + m + 1 : after + m;
  return HISTORY_TREE;
}

/* Collects snapshot ids for history_list. */
struct ids_fill {
  history_name_cb cb;
  void *ud;
};

/* icechunk_snapshots callback: one directory per snapshot. */
static int ids_one(void *ud, const uint8_t id[12], uint64_t at,
                   const char *msg) {
  (void)at, (void)msg;
  struct ids_fill *f = ud;
  char sid[ICEFMT_ID_CHARS + 1];
  icefmt_id_encode(id, 12, sid);
  return f->cb(f->ud, sid, 1);
}

/* Names from the refs loaded at open (spec 1 over a store that cannot
 * list refs/: none known, but each name still resolves). */
int history_list(struct engine *e, const char *rel, history_name_cb cb,
                 void *ud, struct zerr *err) {
  const struct icefmt_repo *r = icechunk_refs(e->ic);
  if (!*rel) {
    static const char *const dirs[] = {"branches", "log", "snapshots", "tags"};
    for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
      if (cb(ud, dirs[i], 1))
        break;
    return 0;
  }
  if (!strcmp(rel, "branches") || !strcmp(rel, "tags")) {
    int tag = rel[0] == 't';
    const struct icefmt_ref *refs = tag ? r->tags : r->branches;
    size_t nrefs = tag ? r->ntags : r->nbranches;
    for (size_t i = 0; i < nrefs; i++)
      if (cb(ud, refs[i].name, 1))
        break;
    return 0;
  }
  if (!strcmp(rel, HISTORY_LOG_DIR)) {
    for (int tag = 0; tag < 2; tag++) {
      const struct icefmt_ref *refs = tag ? r->tags : r->branches;
      size_t nrefs = tag ? r->ntags : r->nbranches;
      for (size_t i = 0; i < nrefs; i++) {
        char name[4096];
        int w = snprintf(name, sizeof name, "%s.%s" HISTORY_LOG_SUFFIX,
                         tag ? "tag" : "branch", refs[i].name);
        if (w > 0 && (size_t)w < sizeof name && cb(ud, name, 0))
          return 0;
      }
    }
    return 0;
  }
  if (!strcmp(rel, "snapshots")) {
    struct ids_fill f = {cb, ud};
    int rc = icechunk_snapshots(e->ic, ids_one, &f, err);
    if (rc == ICECHUNK_PARTIAL) /* the rest is listed */
      engine_log(e, HISTORY_KEY_DIR "snapshots", err->msg);
    return rc < 0 ? rc : 0;
  }
  return zerr_set(err, ENOTDIR, "not a directory");
}

/* The text being made by log_fill. */
struct log_text {
  struct engine *e;
  char *buf;
  size_t len, cap;
  size_t lines;
  int oom, cut, stopped;
};

/* icechunk_history callback: append one line, while the text stays
 * within HISTORY_LOG_MAX. */
static int log_one(void *ud, const uint8_t id[12], uint64_t at,
                   const char *msg) {
  struct log_text *t = ud;
  if (engine_stopping(t->e)) {
    t->stopped = 1;
    return 1;
  }
  char *line = icefmt_log_line(id, at, msg ? msg : "");
  if (!line) {
    t->oom = 1;
    return 1;
  }
  size_t ll = strlen(line);
  if (t->len + ll > HISTORY_LOG_MAX) {
    free(line);
    t->cut = 1;
    return 1;
  }
  if (t->len + ll + 1 > t->cap) {
    size_t nc = t->cap ? t->cap : 1024;
    while (nc < t->len + ll + 1)
      nc *= 2;
    char *p = realloc(t->buf, nc);
    if (!p) {
      free(line);
      t->oom = 1;
      return 1;
    }
    t->buf = p;
    t->cap = nc;
  }
  memcpy(t->buf + t->len, line, ll + 1);
  t->len += ll;
  t->lines++;
  free(line);
  return 0;
}

/* A log's text, kept (memo object, ELEVEL_INFO: it depends on the
 * snapshot alone, so refs at one snapshot share it). */
struct log_obj {
  struct zobj obj;
  char *text;
  size_t len;
};

/* Release a kept text. */
static void log_obj_destroy(struct zobj *o) {
  struct log_obj *t = (struct log_obj *)o;
  free(t->text);
  free(t);
}

/* What log_fill makes: the ancestry of id, named key in log lines. */
struct log_job {
  struct engine *e;
  const uint8_t *id;
  const char *key;
};

/* Walk the ancestry once; a walk or a text ended early is said once
 * (the text made so far stands), a ref naming no snapshot is EIO. */
static int log_fill(void *ctx, struct zobj **obj, size_t *cost,
                    struct zerr *err) {
  const struct log_job *j = ctx;
  struct log_text t = {.e = j->e};
  int rc = icechunk_history(j->e->ic, j->id, log_one, &t, err);
  if (rc == 0 && t.stopped)
    rc = engine_check_stop(j->e, err);
  if (rc == 0 && t.oom)
    rc = zerr_set(err, ENOMEM, "out of memory");
  if (rc == -ENOENT || (rc < 0 && !zerr_is_transient(-rc))) {
    err->code = EIO; /* the ref names it: the repository is wrong */
    rc = -EIO;
    engine_log(j->e, j->key, err->msg); /* as sizes do: said where met */
  }
  if (rc < 0) {
    free(t.buf);
    return rc;
  }
  if (rc == ICECHUNK_PARTIAL)
    engine_log(j->e, j->key, err->msg);
  if (t.cut) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "the log is cut at %zu snapshots: the next line would take it "
             "past %d MiB",
             t.lines, HISTORY_LOG_MAX >> 20);
    engine_log(j->e, j->key, msg);
  }
  struct log_obj *o = malloc(sizeof *o);
  if (!o) {
    free(t.buf);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  zobj_init(&o->obj, log_obj_destroy);
  o->text = t.buf;
  o->len = t.len;
  *obj = &o->obj;
  *cost = sizeof *o + t.cap;
  return 0;
}

/* The ref's ancestry, made once and kept in the memo: a copy. */
int history_log_text(struct engine *e, const char *rel, char **text,
                     size_t *len, struct zerr *err) {
  const char *file = strchr(rel, '/');
  char name[4096];
  int tag;
  uint8_t id[12];
  if (!file)
    return zerr_set(err, ENOENT, "no such file");
  ZTRY(log_name(file + 1, name, sizeof name, &tag, err));
  ZTRY(icechunk_ref_id(e->ic, name, tag, id, err));
  char key[4200];
  snprintf(key, sizeof key, HISTORY_KEY_DIR "%s", rel);
  struct memo_key k;
  memset(&k, 0, sizeof k);
  k.level = ELEVEL_INFO;
  k.owner = e->ic;
  k.n = 3;
  k.v[0] = 0x4c4f47; /* "LOG": apart from any other key of the repository */
  memcpy(&k.v[1], id, 8);
  uint32_t tail;
  memcpy(&tail, id + 8, 4);
  k.v[2] = tail;
  struct log_job j = {e, id, key};
  struct memo_ref *ref;
  ZTRY(memo_get(e->memo, &k, log_fill, &j, &ref, err));
  const struct log_obj *o = (const struct log_obj *)memo_obj(ref);
  *text = malloc(o->len + 1);
  if (*text) {
    if (o->len)
      memcpy(*text, o->text, o->len);
    (*text)[o->len] = '\0';
    *len = o->len;
  }
  memo_release(e->memo, ref);
  return *text ? 0 : zerr_set(err, ENOMEM, "out of memory");
}
