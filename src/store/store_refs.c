/* store_refs.c - a store over a kerchunk reference file: the reference
 * keys are the key space (src/store/kerchunk.h), each key's bytes come from its
 * manifest entry (inline, or a range of a target file under an allowed
 * root: src/store/confine.h). Immutable after open. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kerchunk.h"
#include "manifest.h"
#include "../net/remote.h"
#include "store.h"

/* Largest remote reference file fetched (a million references take about
 * 100 MB of JSON). */
#define REFS_URL_MAX (2ull << 30)

struct store_refs {
  struct store base;
  struct manifest *m;
  const struct confine *c; /* borrowed */
  int64_t mtime; /* the reference file's, for every key (URL: unknown) */
};

/* Bytes of a key. */
static int refs_get(struct store *s, const char *key, struct bytesrc **out,
                    struct zerr *err) {
  struct store_refs *r = (struct store_refs *)s;
  struct manifest_entry en;
  if (manifest_lookup(r->m, key, &en) < 0 || en.kind == MF_MISSING)
    return zerr_set(err, ENOENT, "no such key");
  return manifest_open(r->m, &en, r->c, &s->stats, out, err);
}

/* Type and size; a whole-file reference is opened to learn its size. */
static int refs_stat(struct store *s, const char *key,
                     enum store_entry_type *type, uint64_t *size,
                     int64_t *mtime, struct zerr *err) {
  struct store_refs *r = (struct store_refs *)s;
  *mtime = r->mtime;
  struct manifest_entry en;
  if (manifest_lookup(r->m, key, &en) == 0 && en.kind != MF_MISSING) {
    *type = STORE_FILE;
    *size = en.kind == MF_RANGE || en.kind == MF_INLINE ? en.length : 0;
    if (en.kind == MF_WHOLE) {
      struct bytesrc *b;
      struct zerr e2 = {0};
      /* An unreadable target still stats (size 0); its read fails. A
       * transient failure is no answer: size 0 must not be learned. */
      int orc = manifest_open(r->m, &en, r->c, NULL, &b, &e2);
      if (orc == 0) {
        *size = b->size;
        bytesrc_unref(b);
      } else if (zerr_is_transient(-orc)) {
        return zerr_set(err, -orc, "%s", e2.msg);
      }
    }
    return 0;
  }
  if (manifest_is_dir(r->m, key)) {
    *type = STORE_DIR;
    *size = 0;
    return 0;
  }
  return zerr_set(err, ENOENT, "no such key");
}

/* Children of a prefix. */
static int refs_list(struct store *s, const char *prefix, store_list_cb cb,
                     void *ud, struct zerr *err) {
  struct store_refs *r = (struct store_refs *)s;
  if (*prefix && !manifest_is_dir(r->m, prefix))
    return zerr_set(err, ENOENT, "no such directory");
  return manifest_list(r->m, prefix, r->mtime, cb, ud, err);
}

/* Free the table. */
static void refs_destroy(struct store *s) {
  struct store_refs *r = (struct store_refs *)s;
  manifest_free(r->m);
  free(s->location);
  free(r);
}

static const struct store_ops refs_ops = {refs_get, refs_stat, refs_list,
                                          refs_destroy};

/* The version of every key under a prefix: the table's entries and their
 * targets' versions. */
static int refs_prefix_version(struct store *s, const char *prefix,
                               uint64_t *version, struct zerr *err) {
  struct store_refs *r = (struct store_refs *)s;
  return manifest_digest(r->m, prefix, r->c, version, err);
}

/* The store over a loaded table (takes m). */
static int refs_new(struct manifest *m, const char *location,
                    const struct confine *c, int64_t mtime, struct store **out,
                    struct zerr *err);

int store_open_refs(const char *path, const struct confine *c,
                    struct store **out, struct zerr *err) {
  struct manifest *m;
  ZTRY(kerchunk_load(path, &m, err));
  struct stat st; /* the keys' time: the reference file's, when it says */
  int64_t mtime =
      stat(path, &st) == 0
          ? (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec
          : STORE_MTIME_UNKNOWN;
  return refs_new(m, path, c, mtime, out, err);
}

int store_open_refs_url(struct remote *r, const char *url, struct confine *c,
                        struct store **out, struct zerr *err) {
  uint8_t *text;
  size_t len;
  ZTRY(remote_read_all(r, url, REFS_URL_MAX, &text, &len, err));
  /* Relative targets resolve against the reference's own directory. */
  size_t q = strcspn(url, "?#");
  char *base = strndup(url, q);
  char *slash = base ? strrchr(base, '/') : NULL;
  if (slash && slash > strstr(base, "://") + 2)
    *slash = '\0';
  struct manifest *m = NULL;
  int rc = base ? kerchunk_load_mem((const char *)text, len, url, base, &m, err)
                : zerr_set(err, ENOMEM, "out of memory");
  free(base);
  free(text);
  if (rc < 0)
    return rc;
  confine_set_remote(c, r);
  confine_set_remote_reference(c); /* it may name no local file */
  return refs_new(m, url, c, STORE_MTIME_UNKNOWN, out, err);
}

static int refs_new(struct manifest *m, const char *path,
                    const struct confine *c, int64_t mtime, struct store **out,
                    struct zerr *err) {
  struct store_refs *r = calloc(1, sizeof *r);
  char *loc = strdup(path);
  if (!r || !loc) {
    free(r);
    free(loc);
    manifest_free(m);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  r->base.ops = &refs_ops;
  r->base.prefix_version = refs_prefix_version;
  r->base.location = loc;
  r->m = m;
  r->c = c;
  r->mtime = mtime;
  *out = &r->base;
  return 0;
}
