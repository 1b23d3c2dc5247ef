/* store_icechunk.c - Icechunk repositories (see icechunk.h): the open
 * repository, and a store per snapshot presenting its nodes as a Zarr V3
 * key space. Nodes are the snapshot's, sorted by path, so a node key
 * ("group1/x", "" for the root) is found by binary search; chunk keys
 * are mapped to coordinates, the manifest whose extents hold them, and
 * its reference. Manifests live in one memo per repository (by id, within
 * a byte budget, loaded once by one thread while others wait, failures
 * remembered), so snapshot stores opened on one repository share them. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../util/log.h"
#include "../../util/memo.h"
#include "../confine.h"
#include "icechunk.h"
#include "icechunk_fmt.h"
#include "icechunk_virt.h"

/* Chunk files kept open: a read of many chunks meets the same few files
 * (an Icechunk writer packs many chunks in one), and opening one per chunk
 * would cost a lookup and an open each. Chunk files are immutable (named
 * by their id), so a kept one never goes stale. */
#define IC_FILES_KEPT 16

/* One kept chunk file. */
struct ic_kept {
  uint8_t id[12];
  struct bytesrc *b; /* one reference, or NULL */
};

struct icechunk {
  struct store *files;       /* the repository's files (owned) */
  pthread_mutex_t kept_lock; /* guards kept and kept_next (a leaf) */
  struct ic_kept kept[IC_FILES_KEPT];
  unsigned kept_next; /* the slot to replace next (round robin) */
  struct icefmt_repo *refs;
  const struct confine *c; /* borrowed; NULL: no virtual chunk */
  struct icevirt *virt;    /* the virtual chunk reader (owned) */
  size_t max_decode;
  struct memo *manifests; /* by manifest id, shared by every snapshot
                             store (level MEMO_LEVEL_STORE) */
  _Atomic long nrefs;
};

struct store_icechunk {
  struct store base;
  struct icechunk *ic; /* one reference */
  struct icefmt_snapshot *sn;
  int64_t mtime; /* the snapshot's commit time, for every key */
  char *ref;     /* "branch NAME" or "tag NAME" it was opened by (owned),
                    NULL when by its id */
};

/* A repo file with the magic, or the spec 1 main branch's ref file. */
int icechunk_detect(struct store *s, struct zerr *err) {
  struct bytesrc *b;
  int rc = store_get(s, "repo", &b, err);
  if (rc == 0) {
    uint8_t head[12];
    static const uint8_t magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                      0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};
    rc = b->size >= 12 ? bytesrc_read_range(b, 0, 12, head, err) : -EIO;
    bytesrc_unref(b);
    if (rc == 0 && !memcmp(head, magic, 12))
      return 1;
    if (rc < 0 && zerr_is_transient(-rc))
      return rc;
  } else if (rc != -ENOENT) {
    return rc;
  }
  /* A GET, not a stat: a remote stat may list, and a store whose listing
   * fails is still a Zarr store to mount (its listings fail later, alone). */
  zerr_clear(err);
  rc = store_get(s, "refs/branch.main/ref.json", &b, err);
  if (rc == 0) {
    bytesrc_unref(b);
    return 1;
  }
  if (rc < 0 && zerr_is_transient(-rc))
    return rc;
  zerr_clear(err);
  return 0;
}

/* One line per ref the load left out (they are few: a repository names
 * its refs once). */
static void log_skipped(const struct store *s, const struct icefmt_repo *r) {
  for (size_t i = 0; i < r->nskipped && i < ICEFMT_SKIPPED_MAX; i++)
    zlog(ZLOG_WARN, "%s: %s", s->location, r->skipped[i]);
  if (r->nskipped > ICEFMT_SKIPPED_MAX)
    zlog(ZLOG_WARN, "%s: %zu more refs skipped", s->location,
         r->nskipped - ICEFMT_SKIPPED_MAX);
}

/* Load the refs now: the mount shows them as they are at open. */
int icechunk_open(struct store *s, size_t max_decode, size_t budget,
                  const struct confine *c, struct icechunk **out,
                  struct zerr *err) {
  struct icechunk *ic = calloc(1, sizeof *ic);
  if (!ic) {
    store_free(s);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  ic->files = s;
  pthread_mutex_init(&ic->kept_lock, NULL);
  ic->c = c;
  ic->max_decode = max_decode;
  atomic_init(&ic->nrefs, 1);
  struct memo_config mc = {budget, 1, NULL, 0, 0};
  int rc = memo_new(&mc, &ic->manifests, err);
  if (rc == 0)
    rc = icefmt_repo_load(s, max_decode, &ic->refs, err);
  if (rc == 0) {
    log_skipped(s, ic->refs);
    rc = icevirt_new(ic->refs, c, &ic->virt, err);
  }
  if (rc < 0) {
    icechunk_unref(ic);
    return rc;
  }
  *out = ic;
  return 0;
}

/* The refs (borrowed). */
const struct icefmt_repo *icechunk_refs(const struct icechunk *ic) {
  return ic->refs;
}

/* icechunk_resolve, saying in *kind what named the snapshot: 0 its id,
 * 1 a branch, 2 a tag. An id is read as Crockford base 32 reads it (any
 * case; O as 0, I and L as 1): 20 such characters that name no snapshot
 * (their last 4 bits set, or none of the repository's) do not exist. */
static int resolve_kind(struct icechunk *ic, const char *ref,
                        const char *snapshot, uint8_t id[12], int *kind,
                        struct zerr *err) {
  *kind = 0;
  if (snapshot) {
    int rc = icefmt_id_decode(snapshot, id);
    if (rc == -ENOENT)
      return zerr_set(err, ENOENT, "no snapshot %s in the repository",
                      snapshot);
    if (rc < 0)
      return zerr_set(err, EINVAL,
                      "snapshot '%s' is not an id (20 "
                      "characters of Crockford base 32)",
                      snapshot);
    return 0;
  }
  if (!ref)
    ref = "main";
  *kind = 1;
  int rc = icefmt_repo_ref(ic->refs, ic->files, ref, 0, id, err);
  if (rc == -ENOENT) {
    *kind = 2;
    rc = icefmt_repo_ref(ic->refs, ic->files, ref, 1, id, err);
  }
  if (rc == -ENOENT)
    return zerr_set(err, ENOENT, "no branch or tag named '%s'", ref);
  return rc;
}

/* snapshot, else ref (a branch, then a tag), else main. */
int icechunk_resolve(struct icechunk *ic, const char *ref, const char *snapshot,
                     uint8_t id[12], struct zerr *err) {
  int kind;
  return resolve_kind(ic, ref, snapshot, id, &kind, err);
}

/* A branch or a tag by name, as loaded at open (spec 1 refs not listed
 * then are read now). */
int icechunk_ref_id(struct icechunk *ic, const char *name, int tag,
                    uint8_t id[12], struct zerr *err) {
  return icefmt_repo_ref(ic->refs, ic->files, name, tag, id, err);
}

/* id as its 20 characters, in buf. */
static const char *sid_of(const uint8_t id[12], char buf[ICEFMT_ID_CHARS + 1]) {
  icefmt_id_encode(id, 12, buf);
  return buf;
}

/* walk's answer when cb asked to stop. */
#define WALK_STOPPED (ICECHUNK_PARTIAL + 1)

/* Walk the ancestry of id, newest first, adding each snapshot to seen
 * before giving it to cb. A snapshot already in seen ends the walk: a
 * loop (ICECHUNK_PARTIAL) when known_stops is 0, an ancestry given
 * already (0) when it is 1. Spec 2 follows the repo file's parent
 * indexes; spec 1 reads each snapshot for its parent. */
static int walk(struct icechunk *ic, const uint8_t id[12],
                struct icefmt_idset *seen, int known_stops, icechunk_log_cb cb,
                void *ud, struct zerr *err) {
  const struct icefmt_repo *r = ic->refs;
  uint8_t cur[12], next[12];
  memcpy(cur, id, 12);
  size_t i = 0;
  if (r->spec == 2) {
    while (i < r->nsnaps && memcmp(r->snaps[i].id, cur, 12))
      i++;
    if (i == r->nsnaps) {
      char sid[ICEFMT_ID_CHARS + 1];
      return zerr_set(err, ENOENT, "no snapshot %s in the repository",
                      sid_of(cur, sid));
    }
  }
  for (size_t given = 0;; given++) {
    char sid[ICEFMT_ID_CHARS + 1];
    if (seen->n >= ICECHUNK_HISTORY_MAX) {
      zerr_set(
          err, EIO,
          "the history is cut before %s: at most " ICECHUNK_HISTORY_MAX_TEXT
          " snapshots (%zu given)",
          sid_of(cur, sid), given);
      return ICECHUNK_PARTIAL;
    }
    int added = icefmt_idset_add(seen, cur);
    if (added < 0)
      return zerr_set(err, ENOMEM, "out of memory");
    if (!added && known_stops)
      return 0;
    if (!added) {
      zerr_set(err, EIO,
               "the parents of the snapshots loop: the history stops "
               "before %s, met again after %zu snapshots",
               sid_of(cur, sid), given);
      return ICECHUNK_PARTIAL;
    }
    const char *msg;
    uint64_t at;
    int more;
    struct icefmt_snapshot *sn = NULL;
    if (r->spec == 2) {
      const struct icefmt_snapinfo *si = &r->snaps[i];
      msg = si->message;
      at = si->flushed_at;
      more = si->parent >= 0;
      if (more) {
        i = (size_t)si->parent;
        memcpy(next, r->snaps[i].id, 12);
      }
    } else {
      int rc = icefmt_snapshot_load(ic->files, cur, ic->max_decode, &sn, err);
      if (rc < 0 && (given == 0 || zerr_is_transient(-rc)))
        return rc;
      if (rc < 0) {
        zerr_prefix(err, "the history stops at a parent that cannot be "
                         "read: ");
        return ICECHUNK_PARTIAL;
      }
      msg = sn->message;
      at = sn->flushed_at;
      more = sn->has_parent;
      memcpy(next, sn->parent, 12);
    }
    int stop = cb(ud, cur, at, msg);
    icefmt_snapshot_free(sn);
    if (stop)
      return WALK_STOPPED;
    if (!more)
      return 0;
    memcpy(cur, next, 12);
  }
}

/* One walk with a set of its own: a snapshot met twice is a loop. */
int icechunk_history(struct icechunk *ic, const uint8_t id[12],
                     icechunk_log_cb cb, void *ud, struct zerr *err) {
  struct icefmt_idset seen = {0};
  int rc = walk(ic, id, &seen, 0, cb, ud, err);
  icefmt_idset_free(&seen);
  return rc == WALK_STOPPED ? 0 : rc;
}

/* Spec 2: the list; spec 1: the union of the refs' ancestries, each
 * walk ending where it meets one given before. A ref whose ancestry
 * cannot be read (or loops) gives what it can; err keeps the first
 * such reason. */
int icechunk_snapshots(struct icechunk *ic, icechunk_log_cb cb, void *ud,
                       struct zerr *err) {
  const struct icefmt_repo *r = ic->refs;
  if (r->spec == 2) {
    for (size_t i = 0; i < r->nsnaps; i++) {
      if (i == ICECHUNK_HISTORY_MAX) {
        char sid[ICEFMT_ID_CHARS + 1];
        zerr_set(err, EIO,
                 "the list of snapshots is cut before %s: at "
                 "most " ICECHUNK_HISTORY_MAX_TEXT " (%zu given)",
                 sid_of(r->snaps[i].id, sid), i);
        return ICECHUNK_PARTIAL;
      }
      if (cb(ud, r->snaps[i].id, r->snaps[i].flushed_at, r->snaps[i].message))
        break;
    }
    return 0;
  }
  struct icefmt_idset seen = {0};
  int rc = 0, partial = 0;
  size_t nrefs = r->nbranches + r->ntags;
  for (size_t k = 0; k < nrefs && (rc == 0 || rc == ICECHUNK_PARTIAL); k++) {
    const struct icefmt_ref *ref =
        k < r->nbranches ? &r->branches[k] : &r->tags[k - r->nbranches];
    struct zerr e2 = {0};
    rc = walk(ic, ref->snap, &seen, 1, cb, ud, &e2);
    if (rc == ICECHUNK_PARTIAL || (rc < 0 && !zerr_is_transient(-rc))) {
      if (!partial++)
        zerr_set(err, EIO, "%s '%s': %s", k < r->nbranches ? "branch" : "tag",
                 ref->name, e2.msg);
      rc = seen.n >= ICECHUNK_HISTORY_MAX ? WALK_STOPPED : ICECHUNK_PARTIAL;
    } else if (rc < 0) {
      zerr_set(err, -rc, "%s", e2.msg);
    }
  }
  icefmt_idset_free(&seen);
  return rc < 0 ? rc : partial ? ICECHUNK_PARTIAL : 0;
}

/* Fills of the manifest memo. */
uint64_t icechunk_manifest_loads(const struct icechunk *ic) {
  return memo_fills(ic->manifests, MEMO_LEVEL_STORE);
}

/* One more holder. */
struct icechunk *icechunk_ref(struct icechunk *ic) {
  atomic_fetch_add(&ic->nrefs, 1);
  return ic;
}

/* The last holder frees the refs and the files' store. */
void icechunk_unref(struct icechunk *ic) {
  if (!ic || atomic_fetch_sub(&ic->nrefs, 1) != 1)
    return;
  icevirt_free(ic->virt);
  memo_free(ic->manifests);
  for (size_t i = 0; i < IC_FILES_KEPT; i++)
    bytesrc_unref(ic->kept[i].b);
  pthread_mutex_destroy(&ic->kept_lock);
  icefmt_repo_free(ic->refs);
  store_free(ic->files);
  free(ic);
}

/* ---- the snapshot store ---- */

/* A failure to read listed data becomes EIO with its reason (transient
 * codes are kept: the next read tries again). */
static int as_eio(int rc, struct zerr *err) {
  if (rc >= 0 || zerr_is_transient(-rc))
    return rc;
  if (err)
    err->code = EIO;
  return -EIO;
}

/* The node whose key is key[0..n) ("" the root), or -1. */
static long node_find(const struct icefmt_snapshot *sn, const char *key,
                      size_t n) {
  size_t lo = 0, hi = sn->nnodes;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *p = sn->nodes[mid].path + 1;
    int c = strncmp(p, key, n);
    if (c == 0)
      c = p[n] ? 1 : 0;
    if (c == 0)
      return (long)mid;
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return -1;
}

/* Parse the coordinates of s ("0/1/2", "" for none) into c; their count,
 * or -1 when s is not '/'-separated decimal numbers below 2^32. */
static int parse_coords(const char *s, uint32_t *c, int max) {
  int n = 0;
  if (!*s)
    return 0;
  for (;;) {
    if (n == max || *s < '0' || *s > '9' ||
        (s[0] == '0' && s[1] >= '0' && s[1] <= '9'))
      return -1;
    uint64_t v = 0;
    while (*s >= '0' && *s <= '9') {
      v = v * 10 + (uint64_t)(*s++ - '0');
      if (v > UINT32_MAX)
        return -1;
    }
    c[n++] = (uint32_t)v;
    if (!*s)
      return n;
    if (*s++ != '/')
      return -1;
  }
}

/* A key inside an array's chunk tree: the node, the coordinates (ncoord
 * of them, fewer than ndim for a directory). */
struct ic_chunkkey {
  long node;
  uint32_t coord[64];
  int ncoord;
};

/* Split key into an array node and chunk coordinates: key is NODE/c,
 * NODE/c/i..., or c, c/i... for an array at the root. 0, or -ENOENT. */
static int chunk_key(const struct icefmt_snapshot *sn, const char *key,
                     struct ic_chunkkey *ck) {
  for (const char *p = key; (p = strchr(p, 'c')); p++) {
    if ((p != key && p[-1] != '/') || (p[1] != '/' && p[1] != '\0'))
      continue;
    size_t n = p == key ? 0 : (size_t)(p - key - 1);
    long i = node_find(sn, key, n);
    if (i < 0 || !sn->nodes[i].is_array)
      continue;
    const struct icefmt_node *nd = &sn->nodes[i];
    int k = parse_coords(p[1] ? p + 2 : "", ck->coord, 64);
    if (k < 0 || (uint32_t)k > nd->ndim || (p[1] && k == 0))
      return -ENOENT;
    ck->node = i;
    ck->ncoord = k;
    return 0;
  }
  return -ENOENT;
}

/* Does manifest ref m hold the first n coordinates c? */
static int mref_holds(const struct icefmt_mref *m, const uint32_t *c, int n) {
  for (int d = 0; d < n; d++)
    if (c[d] < m->from[d] || c[d] >= m->to[d])
      return 0;
  return 1;
}

/* A manifest held in the repository's memo. */
struct ic_mobj {
  struct zobj obj;
  struct icefmt_manifest *m;
};

/* Free a manifest dropped by the memo. */
static void mobj_destroy(struct zobj *o) {
  struct ic_mobj *x = (struct ic_mobj *)o;
  icefmt_manifest_free(x->m);
  free(x);
}

/* What a manifest fill needs. */
struct ic_mfill {
  struct icechunk *ic;
  const uint8_t *id;
};

/* Load a manifest for the memo. A file the snapshot names and that is
 * missing or damaged is EIO (remembered: one log line). */
static int manifest_fill(void *ctx, struct zobj **obj, size_t *cost,
                         struct zerr *err) {
  const struct ic_mfill *f = ctx;
  struct icefmt_manifest *m;
  int rc =
      icefmt_manifest_load(f->ic->files, f->id, f->ic->max_decode, &m, err);
  if (rc < 0)
    return as_eio(rc, err);
  struct ic_mobj *x = malloc(sizeof *x);
  if (!x) {
    icefmt_manifest_free(m);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  zobj_init(&x->obj, mobj_destroy);
  x->m = m;
  *obj = &x->obj;
  *cost = icefmt_manifest_bytes(m);
  return 0;
}

/* Manifest k of node i, pinned in the memo (memo_release *pin after use). */
static int manifest_pin(struct store_icechunk *st, long i, size_t k,
                        const struct icefmt_manifest **out,
                        struct memo_ref **pin, struct zerr *err) {
  const uint8_t *id = st->sn->nodes[i].mrefs[k].id;
  struct memo_key key;
  memset(&key, 0, sizeof key);
  key.level = MEMO_LEVEL_STORE;
  key.owner = st->ic;
  key.n = 2;
  memcpy(&key.v[0], id, 8);
  uint32_t tail;
  memcpy(&tail, id + 8, 4);
  key.v[1] = tail;
  struct ic_mfill f = {st->ic, id};
  ZTRY(memo_get(st->ic->manifests, &key, manifest_fill, &f, pin, err));
  *out = ((const struct ic_mobj *)memo_obj(*pin))->m;
  return 0;
}

/* The reference of a full chunk key (the caller frees *out and releases
 * *pin, which keeps inline bytes alive). */
static int chunk_ref(struct store_icechunk *st, const struct ic_chunkkey *ck,
                     struct icefmt_chunk **out, struct memo_ref **pin,
                     struct zerr *err) {
  const struct icefmt_node *nd = &st->sn->nodes[ck->node];
  if ((uint32_t)ck->ncoord != nd->ndim)
    return zerr_set(err, ENOENT, "no such key");
  for (size_t k = 0; k < nd->nmrefs; k++) {
    if (!mref_holds(&nd->mrefs[k], ck->coord, ck->ncoord))
      continue;
    const struct icefmt_manifest *m;
    ZTRY(manifest_pin(st, ck->node, k, &m, pin, err));
    struct icefmt_chunk *c = malloc(sizeof *c);
    int rc = c ? icefmt_manifest_find(m, nd->id, ck->coord, nd->ndim, c, err)
               : zerr_set(err, ENOMEM, "out of memory");
    if (rc == 0) {
      *out = c;
      return 0;
    }
    free(c);
    memo_release(st->ic->manifests, *pin);
    *pin = NULL;
    if (rc != -ENOENT)
      return as_eio(rc, err);
    break; /* extents do not overlap: no other manifest has it */
  }
  return zerr_set(err, ENOENT, "no such key");
}

/* The chunk file id (its key: key): a kept one, else opened and kept in
 * place of the oldest. *out holds a reference. */
static int chunk_file(struct icechunk *ic, const uint8_t id[12],
                      const char *key, struct bytesrc **out, struct zerr *err) {
  pthread_mutex_lock(&ic->kept_lock);
  for (size_t i = 0; i < IC_FILES_KEPT; i++)
    if (ic->kept[i].b && !memcmp(ic->kept[i].id, id, 12)) {
      *out = bytesrc_ref(ic->kept[i].b);
      pthread_mutex_unlock(&ic->kept_lock);
      return 0;
    }
  pthread_mutex_unlock(&ic->kept_lock);
  ZTRY(store_get(ic->files, key, out, err));
  pthread_mutex_lock(&ic->kept_lock);
  struct ic_kept *k = &ic->kept[ic->kept_next++ % IC_FILES_KEPT];
  struct bytesrc *old = k->b;
  memcpy(k->id, id, 12);
  k->b = bytesrc_ref(*out);
  pthread_mutex_unlock(&ic->kept_lock);
  bytesrc_unref(old);
  return 0;
}

/* Bytes of a chunk reference. */
static int chunk_open(struct store_icechunk *st, const struct icefmt_chunk *c,
                      struct bytesrc **out, struct zerr *err) {
  if (c->kind == ICEFMT_INLINE) {
    void *p = malloc(c->length ? c->length : 1);
    if (!p)
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy(p, c->data, c->length);
    *out = bytesrc_from_mem(p, c->length);
    return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
  }
  if (c->kind == ICEFMT_VIRTUAL)
    return icevirt_open(st->ic->virt, c, &st->base.stats, out, err);
  char key[8 + ICEFMT_ID_CHARS] = "chunks/";
  icefmt_id_encode(c->chunk_id, 12, key + 7);
  struct bytesrc *f;
  int rc = chunk_file(st->ic, c->chunk_id, key, &f, err);
  if (rc < 0)
    return zerr_prefix(err, "%s: ", key);
  rc = bytesrc_sub(f, c->offset, c->length, out, err);
  bytesrc_unref(f);
  return rc < 0 ? zerr_prefix(err, "%s: ", key) : 0;
}

/* The node of a metadata key (".../zarr.json"), or -1. */
static long meta_node(const struct icefmt_snapshot *sn, const char *key) {
  size_t n = strlen(key);
  if (!strcmp(key, "zarr.json"))
    return node_find(sn, "", 0);
  if (n > 10 && !strcmp(key + n - 10, "/zarr.json"))
    return node_find(sn, key, n - 10);
  return -1;
}

/* Bytes of a key. */
static int ic_get(struct store *s, const char *key, struct bytesrc **out,
                  struct zerr *err) {
  struct store_icechunk *st = (struct store_icechunk *)s;
  long i = meta_node(st->sn, key);
  if (i >= 0) {
    const struct icefmt_node *nd = &st->sn->nodes[i];
    *out = bytesrc_from_static(nd->user_data, nd->user_len);
    return *out ? 0 : zerr_set(err, ENOMEM, "out of memory");
  }
  struct ic_chunkkey ck;
  if (chunk_key(st->sn, key, &ck) < 0)
    return zerr_set(err, ENOENT, "no such key");
  struct icefmt_chunk *c;
  struct memo_ref *pin;
  ZTRY(chunk_ref(st, &ck, &c, &pin, err));
  int rc = chunk_open(st, c, out, err);
  free(c);
  memo_release(st->ic->manifests, pin);
  return as_eio(rc, err);
}

/* Is key a directory: a node, a node's ancestor, or a chunk directory
 * inside some manifest's extents? */
static int is_dir(struct store_icechunk *st, const char *key) {
  size_t n = strlen(key);
  if (node_find(st->sn, key, n) >= 0)
    return 1;
  for (size_t i = 0; i < st->sn->nnodes; i++) {
    const char *p = st->sn->nodes[i].path + 1;
    if (!strncmp(p, key, n) && p[n] == '/')
      return 1;
  }
  struct ic_chunkkey ck;
  if (chunk_key(st->sn, key, &ck) < 0)
    return 0;
  const struct icefmt_node *nd = &st->sn->nodes[ck.node];
  if ((uint32_t)ck.ncoord >= nd->ndim)
    return 0;
  for (size_t k = 0; k < nd->nmrefs; k++)
    if (mref_holds(&nd->mrefs[k], ck.coord, ck.ncoord))
      return 1;
  return 0;
}

/* Type and size. */
static int ic_stat(struct store *s, const char *key,
                   enum store_entry_type *type, uint64_t *size, int64_t *mtime,
                   struct zerr *err) {
  struct store_icechunk *st = (struct store_icechunk *)s;
  *mtime = st->mtime;
  *size = 0;
  if (!*key || is_dir(st, key)) {
    *type = STORE_DIR;
    return 0;
  }
  long i = meta_node(st->sn, key);
  if (i >= 0) {
    *type = STORE_FILE;
    *size = st->sn->nodes[i].user_len;
    return 0;
  }
  struct ic_chunkkey ck;
  if (chunk_key(st->sn, key, &ck) < 0)
    return zerr_set(err, ENOENT, "no such key");
  struct icefmt_chunk *c;
  struct memo_ref *pin;
  ZTRY(chunk_ref(st, &ck, &c, &pin, err));
  *type = STORE_FILE;
  *size = c->length;
  free(c);
  memo_release(st->ic->manifests, pin);
  return 0;
}

/* Children of a chunk directory, collected from the manifests. */
struct ic_listing {
  const uint32_t *prefix;
  int nprefix;
  uint32_t ndim;
  uint32_t *next; /* next coordinate of each matching reference */
  uint64_t *size;
  size_t n, cap;
  int oom;
};

/* Keep a reference under the listed directory. */
static int list_cb(void *ud, const uint32_t *coord, uint32_t ndim,
                   uint64_t size) {
  struct ic_listing *l = ud;
  if (ndim != l->ndim)
    return 0;
  for (int d = 0; d < l->nprefix; d++)
    if (coord[d] != l->prefix[d])
      return 0;
  if (l->n == l->cap) {
    size_t nc = l->cap ? 2 * l->cap : 64;
    uint32_t *nx = realloc(l->next, nc * sizeof *nx);
    if (nx)
      l->next = nx;
    uint64_t *ns = nx ? realloc(l->size, nc * sizeof *ns) : NULL;
    if (!ns) {
      l->oom = 1;
      return 1;
    }
    l->size = ns;
    l->cap = nc;
  }
  l->next[l->n] = coord[l->nprefix];
  l->size[l->n++] = size;
  return 0;
}

/* Numbers ascending, for qsort. */
static int u32_cmp(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* List a chunk directory: files at the last dimension, else the distinct
 * next coordinates as directories. */
static int list_chunks(struct store_icechunk *st, const struct ic_chunkkey *ck,
                       store_list_cb cb, void *ud, struct zerr *err) {
  const struct icefmt_node *nd = &st->sn->nodes[ck->node];
  struct ic_listing l = {ck->coord, ck->ncoord, nd->ndim, NULL, NULL, 0, 0, 0};
  int rc = 0;
  for (size_t k = 0; k < nd->nmrefs && rc == 0 && !l.oom; k++) {
    if (!mref_holds(&nd->mrefs[k], ck->coord, ck->ncoord))
      continue;
    const struct icefmt_manifest *m;
    struct memo_ref *pin;
    rc = manifest_pin(st, ck->node, k, &m, &pin, err);
    if (rc == 0) {
      rc = icefmt_manifest_each(m, nd->id, list_cb, &l, err);
      memo_release(st->ic->manifests, pin);
    }
  }
  if (l.oom)
    rc = zerr_set(err, ENOMEM, "out of memory");
  int last = (uint32_t)ck->ncoord + 1 == nd->ndim;
  if (rc == 0 && !last && l.n > 1)
    qsort(l.next, l.n, sizeof *l.next, u32_cmp);
  for (size_t i = 0; rc == 0 && i < l.n; i++) {
    if (!last && i && l.next[i] == l.next[i - 1])
      continue;
    char name[16];
    snprintf(name, sizeof name, "%u", l.next[i]);
    if (cb(ud, name, last ? STORE_FILE : STORE_DIR, last ? l.size[i] : 0,
           st->mtime))
      break;
  }
  free(l.next);
  free(l.size);
  if (rc < 0 && !zerr_is_transient(-rc))
    return STORE_LIST_PARTIAL; /* a damaged manifest: err says which */
  return rc;
}

/* Children of a prefix. */
static int ic_list(struct store *s, const char *prefix, store_list_cb cb,
                   void *ud, struct zerr *err) {
  struct store_icechunk *st = (struct store_icechunk *)s;
  size_t n = strlen(prefix);
  long self = node_find(st->sn, prefix, n);
  if (self < 0) {
    struct ic_chunkkey ck;
    if (chunk_key(st->sn, prefix, &ck) == 0 &&
        (uint32_t)ck.ncoord < st->sn->nodes[ck.node].ndim)
      return list_chunks(st, &ck, cb, ud, err);
    if (*prefix && !is_dir(st, prefix)) /* the root is always there */
      return zerr_set(err, ENOENT, "no such directory");
  } else {
    const struct icefmt_node *nd = &st->sn->nodes[self];
    if (cb(ud, "zarr.json", STORE_FILE, nd->user_len, st->mtime))
      return 0;
    if (nd->is_array && nd->nmrefs &&
        cb(ud, "c", nd->ndim ? STORE_DIR : STORE_FILE,
           nd->ndim ? 0 : STORE_SIZE_UNKNOWN, st->mtime))
      return 0;
  }
  /* Child nodes (Icechunk keeps every ancestor of a node as a group). */
  for (size_t i = 0; i < st->sn->nnodes; i++) {
    const char *p = st->sn->nodes[i].path + 1;
    if (n && (strncmp(p, prefix, n) || p[n] != '/'))
      continue;
    const char *rest = n ? p + n + 1 : p;
    if (!*rest || strchr(rest, '/'))
      continue;
    if (cb(ud, rest, STORE_DIR, 0, st->mtime))
      return 0;
  }
  return 0;
}

/* Drop the manifests, the snapshot and the repository reference. */
static void ic_destroy(struct store *s) {
  struct store_icechunk *st = (struct store_icechunk *)s;
  icefmt_snapshot_free(st->sn);
  icechunk_unref(st->ic);
  free(st->ref);
  free(s->location);
  free(st);
}

static const struct store_ops ic_ops = {ic_get, ic_stat, ic_list, ic_destroy};

/* Read the snapshot; its manifests load when a read needs them. */
int icechunk_open_snapshot(struct icechunk *ic, const uint8_t id[12],
                           struct store **out, struct zerr *err) {
  struct store_icechunk *st = calloc(1, sizeof *st);
  if (!st)
    return zerr_set(err, ENOMEM, "out of memory");
  st->base.ops = &ic_ops;
  st->ic = icechunk_ref(ic);
  int rc = icefmt_snapshot_load(ic->files, id, ic->max_decode, &st->sn, err);
  char sid[ICEFMT_ID_CHARS + 1];
  icefmt_id_encode(id, 12, sid);
  if (rc == -ENOENT)
    rc = zerr_set(err, ENOENT, "no snapshot %s in the repository", sid);
  if (rc == 0 &&
      asprintf(&st->base.location, "%s@%s", ic->files->location, sid) < 0) {
    st->base.location = NULL;
    rc = zerr_set(err, ENOMEM, "out of memory");
  }
  if (rc < 0) {
    ic_destroy(&st->base);
    return rc;
  }
  st->mtime = (int64_t)(st->sn->flushed_at > INT64_MAX / 1000
                            ? STORE_MTIME_UNKNOWN
                            : (int64_t)st->sn->flushed_at * 1000);
  *out = &st->base;
  return 0;
}

/* By the store's operations: only snapshot stores have these. */
struct icechunk *icechunk_of_store(const struct store *s) {
  return s && s->ops == &ic_ops ? ((const struct store_icechunk *)s)->ic : NULL;
}

/* What snapshot store s shows: its ref and snapshot (borrowed). */
const struct icefmt_snapshot *icechunk_store_shown(const struct store *s,
                                                   const char **ref) {
  if (!icechunk_of_store(s))
    return NULL;
  const struct store_icechunk *st = (const struct store_icechunk *)s;
  *ref = st->ref;
  return st->sn;
}

/* Repository, ref, snapshot store: the mount's one call. */
int store_open_icechunk(struct store *inner, const char *ref,
                        const char *snapshot, size_t max_decode, size_t budget,
                        const struct confine *c, struct store **out,
                        struct zerr *err) {
  struct icechunk *ic;
  ZTRY(icechunk_open(inner, max_decode, budget, c, &ic, err));
  uint8_t id[12];
  int kind;
  int rc = resolve_kind(ic, ref, snapshot, id, &kind, err);
  if (rc == 0)
    rc = icechunk_open_snapshot(ic, id, out, err);
  icechunk_unref(ic);
  if (rc < 0 || !kind)
    return rc;
  struct store_icechunk *st = (struct store_icechunk *)*out;
  if (asprintf(&st->ref, "%s %s", kind == 1 ? "branch" : "tag",
               ref ? ref : "main") < 0) {
    st->ref = NULL;
    store_free(*out);
    *out = NULL;
    return zerr_set(err, ENOMEM, "out of memory");
  }
  return 0;
}
