/* source.c - SOURCE: refuse a local one that cannot be a Zarr store before
 * anything starts, then open the store it names (a local directory, a
 * kerchunk reference file, or the same over http(s)://, s3://, gs:// or
 * az://) with its remote context and the roots its references may read.
 * FUSE-free. */
#define _GNU_SOURCE /* asprintf */
#include "source.h"

#include <ctype.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../json/jlex.h"
#include "../json/zjson.h"
#include "../net/azure.h"
#include "../net/s3.h"
#include "../store/confine.h"
#include "../store/icechunk/icechunk.h"
#include "../store/manifest.h"
#include "../store/pqrefs.h"
#include "../util/buf.h"
#include "../util/file.h"
#include "../zarr/meta.h"

/* Root metadata larger than this is not metadata. */
#define ROOT_META_MAX (64 << 20)

/* The root's metadata file meta must parse: a malformed root would mount
 * and show only unusable entries. Unsupported features (a chunk grid, a
 * data type) are not refused here: the rest of the store still serves.
 * Out of memory or an unreadable file is left to the mount. */
static int root_meta_check(const char *meta) {
  char *text = NULL;
  size_t len = 0;
  struct zerr err = {0};
  if (zread_file(meta, ROOT_META_MAX, &text, &len, &err) < 0) {
    if (err.code == EFBIG) {
      fprintf(stderr, "zarrfs: %s: larger than %d MiB: not metadata\n", meta,
              ROOT_META_MAX >> 20);
      return -1;
    }
    return 0;
  }
  const char *name = strrchr(meta, '/') + 1;
  struct zmeta *m = NULL;
  int rc;
  if (!strcmp(name, ".zgroup")) {
    json_t *j = zjson_loadb(text ? text : "", len, &err);
    rc = j ? 0 : err.code == ENOMEM ? -ENOMEM : -EIO;
    if (j && !json_is_object(j))
      rc = zerr_set(&err, EIO, "not a JSON object");
    json_decref(j);
  } else {
    rc = !strcmp(name, "zarr.json")
             ? zmeta_parse(text ? text : "", len, &m, &err)
             : zmeta_parse_v2(text ? text : "", len, &m, &err);
  }
  zmeta_free(m);
  free(text);
  if (rc == -EIO) {
    fprintf(stderr, "zarrfs: %s: invalid metadata: %s\n", meta, err.msg);
    return -1;
  }
  return 0;
}

/* The Zarr metadata file names: the file a user finds in a store and
 * gives instead of its directory. */
static int is_meta_name(const char *name, size_t len) {
  static const char *const names[] = {"zarr.json", ".zarray", ".zgroup",
                                      ".zattrs", ".zmetadata"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++)
    if (len == strlen(names[i]) && !memcmp(name, names[i], len))
      return 1;
  return 0;
}

/* Does directory dir hold Zarr root metadata (zarr.json, .zgroup, .zarray)? */
static int dir_is_zarr(const char *dir) {
  static const char *const roots[] = {"zarr.json", ".zgroup", ".zarray"};
  char p[4096];
  struct stat st;
  for (int i = 0; i < 3; i++) {
    if (snprintf(p, sizeof p, "%s/%s", dir, roots[i]) >= (int)sizeof p)
      return 0;
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
      return 1;
  }
  return 0;
}

/* The directory to mount instead of the file at path: the outermost of the
 * Zarr directories that hold it (a walk up, bounded), else the file's own
 * directory. Written into out (NUL-terminated); 1 when it is a Zarr
 * directory. */
static int store_dir_for(const char *path, char *out, size_t outlen) {
  char *real = realpath(path, NULL);
  char *dir = strdup(real ? real : path);
  int found = 0;
  snprintf(out, outlen, "%s", dir ? dirname(dir) : ".");
  for (int up = 0; real && up < 64; up++) {
    char *slash = strrchr(real, '/');
    if (!slash || slash == real)
      break;
    *slash = '\0';
    if (!dir_is_zarr(real))
      break;
    snprintf(out, outlen, "%s", real);
    found = 1;
  }
  free(dir);
  free(real);
  return found;
}

/* What a JSON text's top-level object says it is: 1 kerchunk references
 * (a "refs" member, version 1; or a key naming Zarr metadata, version 0),
 * 0 another JSON object, -1 not a JSON object. Members are scanned in
 * place (jlex), up to the first that decides. */
static int refs_kind(const char *text, size_t len) {
  struct zerr err = {0};
  struct jlex l;
  jlex_init(&l, text, len, JLEX_NONFINITE | JLEX_LONE_SURROGATE, &err);
  if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
    l.p += 3; /* a byte order mark */
  if (jlex_peek(&l) != '{')
    return -1;
  int more = jlex_open(&l, '{');
  if (more < 0)
    return -1;
  while (more == 1) {
    struct jlex_str k;
    if (jlex_key(&l, &k) < 0)
      return -1;
    const char *last = k.body + k.len;
    while (last > k.body && last[-1] != '/')
      last--;
    if ((k.len == 4 && !memcmp(k.body, "refs", 4)) ||
        is_meta_name(last, k.len - (size_t)(last - k.body)))
      return 1;
    if (jlex_skip(&l) < 0)
      return -1;
    more = jlex_next(&l, '{');
  }
  return more < 0 ? -1 : 0;
}

/* Is dir the folder of kerchunk Parquet references (a .zmetadata with
 * record_size)? */
static int dir_is_pqrefs(const char *dir) {
  char p[4096];
  if (snprintf(p, sizeof p, "%s/.zmetadata", dir) >= (int)sizeof p)
    return 0;
  char *text = NULL;
  size_t len = 0;
  struct zerr err = {0};
  if (zread_file(p, ROOT_META_MAX, &text, &len, &err) < 0)
    return 0;
  int yes = pqrefs_is_zmetadata(text ? text : "", len);
  free(text);
  return yes;
}

/* The folder of Parquet references holding path (a record file or an
 * array's folder of them): a walk up, bounded. 1 and the folder in out. */
static int pqrefs_dir_for(const char *path, char *out, size_t outlen) {
  char *real = realpath(path, NULL);
  int found = 0;
  for (int up = 0; real && up < 64 && !found; up++) {
    char *slash = strrchr(real, '/');
    if (!slash || slash == real)
      break;
    *slash = '\0';
    if (dir_is_pqrefs(real)) {
      snprintf(out, outlen, "%s", real);
      found = 1;
    }
  }
  free(real);
  return found;
}

/* Does directory dir hold Parquet record files (refs.N.parq)? */
static int dir_has_parq(const char *dir) {
  char p[4096];
  struct stat st;
  if (snprintf(p, sizeof p, "%s/refs.0.parq", dir) >= (int)sizeof p)
    return 0;
  return stat(p, &st) == 0;
}

/* A SOURCE that is part of kerchunk Parquet references but not their
 * folder (a refs.N.parq file, or the folder of one array's record files):
 * say so, naming the folder to mount. 1 when said. */
static int pqrefs_misnamed(const char *source, int is_file) {
  if (is_file) {
    FILE *fp = fopen(source, "rb");
    char magic[4] = {0};
    int par1 = fp && fread(magic, 1, 4, fp) == 4 && !memcmp(magic, "PAR1", 4);
    if (fp)
      fclose(fp);
    if (!par1)
      return 0;
  } else if (!dir_has_parq(source)) {
    return 0;
  }
  char dir[4096];
  if (pqrefs_dir_for(source, dir, sizeof dir))
    fprintf(stderr,
            "zarrfs: %s: %s of kerchunk Parquet references: mount their "
            "folder %s (the one with .zmetadata) instead\n",
            source, is_file ? "a Parquet record file" : "record files", dir);
  else
    fprintf(stderr,
            "zarrfs: %s: %s, but no folder above it has a .zmetadata with "
            "record_size: not kerchunk Parquet references\n",
            source, is_file ? "a Parquet file" : "Parquet record files");
  return 1;
}

/* A regular file as SOURCE must be kerchunk references: a metadata file,
 * a file that is not JSON, or JSON that is not references (a `.zarray`
 * renamed, any other document) is refused, naming the directory to mount
 * instead. The file is read once more by the store; a reference file is
 * read from the page cache the second time. */
static int refs_file_check(const char *source) {
  const char *base = strrchr(source, '/');
  base = base ? base + 1 : source;
  char dir[4096];
  if (pqrefs_misnamed(source, 1))
    return -1;
  if (is_meta_name(base, strlen(base))) {
    int found = store_dir_for(source, dir, sizeof dir);
    fprintf(stderr,
            "zarrfs: %s: a Zarr metadata file, not a store: mount %s %s "
            "instead\n",
            source, found ? "the Zarr store" : "its directory", dir);
    return -1;
  }
  char *text = NULL;
  size_t len = 0;
  struct zerr err = {0};
  if (zread_file(source, SIZE_MAX, &text, &len, &err) < 0)
    return 0; /* the store's own open says why */
  int kind = refs_kind(text ? text : "", len);
  free(text);
  if (kind == 1)
    return 0;
  const char *what = kind < 0 ? "not JSON, so not a kerchunk reference file"
                              : "JSON, but not kerchunk references (no "
                                "\"refs\", no Zarr metadata keys)";
  if (store_dir_for(source, dir, sizeof dir))
    fprintf(stderr, "zarrfs: %s: %s: mount the Zarr store %s instead\n", source,
            what, dir);
  else
    fprintf(stderr,
            "zarrfs: %s: %s: mount the directory of a Zarr store (one with "
            "zarr.json, .zgroup or .zarray) instead\n",
            source, what);
  return -1;
}

/* A SOURCE naming a scheme zarrfs does not read (file://, ftp://, ...):
 * refused with the scheme and what is supported. 1 when refused. */
static int scheme_check(const char *source) {
  const char *p = source;
  while (isalnum((unsigned char)*p) || *p == '+' || *p == '-' || *p == '.')
    p++;
  if (p == source || strncmp(p, "://", 3) || !isalpha((unsigned char)*source))
    return 0;
  int n = (int)(p - source);
  if (n == 4 && !strncasecmp(source, "file", 4))
    fprintf(stderr,
            "zarrfs: %s: the file:// scheme is not supported: give the path "
            "itself (%s)\n",
            source, p + 3);
  else
    fprintf(stderr,
            "zarrfs: %s: the %.*s:// scheme is not supported (SOURCE is a "
            "directory, a reference file, or an %s URL)\n",
            source, n, source, remote_url_schemes());
  return 1;
}

/* Refuse a local SOURCE that is missing, unreadable, or a directory
 * without Zarr root metadata, or with root metadata that does not parse. */
int source_check(const char *source) {
  struct stat st;
  if (remote_is_url(source))
    return 0; /* checked when the store opens */
  if (scheme_check(source))
    return -1;
  if (stat(source, &st) < 0) {
    fprintf(stderr, "zarrfs: %s: %s\n", source, strerror(errno));
    return -1;
  }
  if (S_ISREG(st.st_mode)) { /* a kerchunk reference file */
    if (access(source, R_OK) < 0) {
      fprintf(stderr, "zarrfs: %s: cannot read: %s\n", source, strerror(errno));
      return -1;
    }
    return refs_file_check(source);
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "zarrfs: %s: not a directory or reference file\n", source);
    return -1;
  }
  if (access(source, R_OK | X_OK) < 0) {
    fprintf(stderr, "zarrfs: %s: cannot read: %s\n", source, strerror(errno));
    return -1;
  }
  /* An Icechunk repository: `repo` (spec 2) or refs/branch.main (spec
   * 1); its files are checked when it opens. */
  static const char *const ice[] = {"repo", "refs/branch.main/ref.json"};
  for (int i = 0; i < 2; i++) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", source, ice[i]);
    if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
      return 0;
  }
  /* A V3 root (zarr.json) or a V2 one (.zgroup or .zarray). */
  static const char *const roots[] = {"zarr.json", ".zgroup", ".zarray"};
  char meta[4096];
  int found = 0;
  for (int i = 0; i < 3 && !found; i++) {
    snprintf(meta, sizeof meta, "%s/%s", source, roots[i]);
    found = stat(meta, &st) == 0 && S_ISREG(st.st_mode);
  }
  if (!found && dir_is_pqrefs(source))
    return 0; /* kerchunk Parquet references, checked when they open */
  if (!found && pqrefs_misnamed(source, 0))
    return -1;
  if (!found) {
    fprintf(stderr,
            "zarrfs: %s: no zarr.json (or .zgroup/.zarray): not a "
            "Zarr store\n",
            source);
    return -1;
  }
  if (access(meta, R_OK) < 0) {
    fprintf(stderr, "zarrfs: %s: cannot read: %s\n", meta, strerror(errno));
    return -1;
  }
  return root_meta_check(meta);
}

/* A hint for a refusal of a cloud SOURCE (403): the settings that give
 * access, "" when none applies. */
static const char *access_hint(const char *src) {
  if (!strncmp(src, "az://", 5))
    return " (check the Azure credentials: AZURE_STORAGE_KEY, "
           "AZURE_STORAGE_SAS_TOKEN or AZURE_STORAGE_CONNECTION_STRING; "
           "-o no_sign_request for a public container)";
  if (!strncmp(src, "gs://", 5))
    return " (check the HMAC keys GS_ACCESS_KEY_ID and GS_SECRET_ACCESS_KEY; "
           "-o no_sign_request for a public bucket)";
  if (!strncmp(src, "s3://", 5))
    return " (check the AWS credentials; -o no_sign_request for a public "
           "bucket)";
  return "";
}

/* A URL naming a JSON file (a kerchunk reference file), not a store. */
static int url_is_json(const char *url) {
  size_t n = strcspn(url, "?#");
  return n > 5 && !strncasecmp(url + n - 5, ".json", 5);
}

/* Does a remote store hold Zarr metadata at its root? 1 yes, 0 no, -1
 * when the server could not say (a line saying what it answered). A
 * store with none is refused at once, as a local one (check_paths),
 * unless it is an Icechunk repository. */
static int remote_root_check(struct store *s, const char *src) {
  static const char *const names[] = {"zarr.json", ".zgroup", ".zarray"};
  struct zerr err = {0};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    enum store_entry_type t;
    uint64_t sz;
    zerr_clear(&err);
    int rc = store_stat(s, names[i], &t, &sz, &err);
    if (rc == 0 && t == STORE_FILE)
      return 1;
    if (rc < 0 && rc != -ENOENT) {
      fprintf(stderr, "zarrfs: %s: %s%s\n", src, err.msg,
              rc == -EACCES ? access_hint(s->location) : "");
      return -1;
    }
  }
  return 0;
}

/* The remote context from the options (S3 settings from the options, the
 * environment and ~/.aws; Cloud Storage's and Azure's from the
 * environment). -o endpoint names the endpoint of the SOURCE's service
 * (s3://, gs://, az://); with any other SOURCE, S3's. */
int source_remote_new(const struct cli_config *cfg, struct remote **out) {
  const struct cli_s3 *o = &cfg->s3;
  const char *src = cfg->source;
  char acct[128];
  const char *rest = NULL;
  int az_https = azure_url_account(src, acct, sizeof acct, &rest);
  int gs = !strncmp(src, "gs://", 5), az = !strncmp(src, "az://", 5);
  const char *ep = o->endpoint;
  struct s3_options so = {o->region, gs || az ? NULL : ep, o->profile,
                          o->no_sign_request, o->requester_pays};
  struct s3_options go = {NULL, gs ? ep : NULL, NULL, o->no_sign_request, 0};
  const char *q = az_https ? strchr(rest, '?') : NULL;
  struct azure_options ao = {az ? ep : NULL, az_https ? acct : NULL,
                             q ? q + 1 : NULL, o->no_sign_request};
  struct s3_config *s3 = NULL, *gcs = NULL;
  struct azure_config *azc = NULL;
  struct zerr err = {0};
  if (s3_config_load(&so, &s3, &err) < 0 ||
      remote_new(&cfg->remote, s3, out, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    return -1;
  }
  int rc = s3_config_load_gcs(&go, &gcs, &err);
  if (rc == 0 && (rc = azure_config_load(&ao, &azc, &err)) < 0)
    s3_config_free(gcs);
  if (rc == 0) /* takes both over */
    rc = remote_set_clouds(*out, gcs, azc, &err);
  if (rc < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    remote_free(*out);
    *out = NULL;
    return -1;
  }
  return 0;
}

/* The store URL of a SOURCE: az://CONTAINER/PATH for a
 * https://ACCOUNT.blob.core.windows.net one (its SAS query dropped: the
 * Azure settings carry it), else the SOURCE itself. malloc'd or NULL. */
static char *source_url(const char *src) {
  char acct[128];
  const char *rest;
  char *u = NULL;
  if (!azure_url_account(src, acct, sizeof acct, &rest))
    return strdup(src);
  if (asprintf(&u, "az://%.*s", (int)strcspn(rest, "?#"), rest) < 0)
    return NULL;
  return u;
}

/* The allowed roots of manifest and reference targets: the reference
 * file's directory (or the store root) and every -o target_root. */
static int source_confine(const struct cli_config *cfg, struct remote *remote,
                          int is_url, int is_refs, struct confine **out) {
  struct zerr err = {0};
  struct confine *c;
  if (confine_new(&c, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    return -1;
  }
  *out = c;
  confine_set_remote(c, remote);
  if (!cfg->remote_targets)
    confine_forbid_remote(c);
  if (!is_url) { /* a remote source allows no local root of its own */
    char *srcdir = strdup(cfg->source);
    if (!srcdir) {
      fprintf(stderr, "zarrfs: out of memory\n");
      return -1;
    }
    int rc = confine_add_root(c, is_refs ? dirname(srcdir) : cfg->source, &err);
    free(srcdir);
    if (rc < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      return -1;
    }
  }
  for (size_t i = 0; i < cfg->n_allow_roots; i++) {
    const char *r = cfg->allow_roots[i];
    if ((remote_is_url(r) ? confine_add_url_prefix(c, r, &err)
                          : confine_add_root(c, r, &err)) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      return -1;
    }
  }
  for (size_t i = 0; i < cfg->n_endpoints; i++)
    if (confine_allow_endpoint(c, cfg->endpoints[i], &err) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      return -1;
    }
  return 0;
}

/* Bytes of Icechunk manifests kept when no read uses them: half the
 * decoded-data budget, at least 16 MiB (a manifest is the index of every
 * chunk of its arrays, read again at every miss). */
static size_t source_manifest_budget(const struct cli_config *cfg) {
  size_t b = cfg->cache_size / 2;
  return b < ((size_t)16 << 20) ? (size_t)16 << 20 : b;
}

/* Replace *s (a local or remote store) by the store of the Icechunk
 * repository it holds, when it holds one: 1 done, 0 not a repository, -1
 * refused (said on stderr; *s freed and NULL). */
static int source_icechunk(const struct cli_config *cfg, struct confine *c,
                           struct store **s) {
  struct zerr err = {0};
  int rc = icechunk_detect(*s, &err);
  if (rc == 0) {
    if (!cfg->ref && !cfg->snapshot)
      return 0;
    fprintf(stderr,
            "zarrfs: %s: -o ref and -o snapshot apply to Icechunk "
            "repositories only\n",
            cfg->source);
  } else if (rc < 0) {
    fprintf(stderr, "zarrfs: %s: %s%s\n", cfg->source, err.msg,
            rc == -EACCES ? access_hint((*s)->location) : "");
  } else if (store_open_icechunk(*s, cfg->ref, cfg->snapshot, cfg->max_decode,
                                 source_manifest_budget(cfg), c, s, &err) < 0) {
    *s = NULL;
    fprintf(stderr, "zarrfs: %s: cannot open the Icechunk repository: %s\n",
            cfg->source, err.msg);
    return -1;
  } else {
    return 1;
  }
  store_free(*s);
  *s = NULL;
  return -1;
}

/* Replace *s (a local or remote store) by the store of the kerchunk
 * Parquet references it holds, when its .zmetadata has record_size: 1
 * done, 0 not Parquet references, -1 refused (said on stderr; *s freed
 * and NULL). Record tables share the budget of Icechunk manifests. */
static int source_pqrefs(const struct cli_config *cfg, struct confine *c,
                         struct store **s) {
  struct zerr err = {0};
  int rc = store_wrap_pqrefs(*s, c, source_manifest_budget(cfg),
                             cfg->max_decode, s, &err);
  if (rc < 0) {
    *s = NULL;
    fprintf(stderr,
            "zarrfs: %s: cannot open the kerchunk Parquet references: %s\n",
            cfg->source, err.msg);
    return -1;
  }
  return rc;
}

/* Open the store at src (cfg->source, or the az:// URL it names), by its
 * kind. */
static int source_open_at(const struct cli_config *cfg, const char *src,
                          struct remote *remote, struct confine **confine,
                          struct store **out) {
  struct zerr err = {0};
  struct stat sst;
  int is_url = remote_is_url(src);
  int is_refs =
      is_url ? url_is_json(src) : stat(src, &sst) == 0 && S_ISREG(sst.st_mode);
  *out = NULL;
  if (source_confine(cfg, remote, is_url, is_refs, confine) < 0)
    return -1;
  struct confine *c = *confine;
  if (is_url && is_refs) {
    if (store_open_refs_url(remote, src, c, out, &err) < 0) {
      fprintf(stderr, "zarrfs: %s: cannot load the reference file: %s\n", src,
              err.msg);
      return -1;
    }
  } else if (is_url) {
    if (store_open_remote(remote, src, out, &err) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      return -1;
    }
    /* Virtual chunks of a remote repository may name no local file. */
    confine_set_remote_reference(c);
    /* Zarr metadata at the root first: a Zarr store costs no request for
     * Icechunk's files; -o ref / -o snapshot name a repository. */
    int zarr = cfg->ref || cfg->snapshot ? 0 : remote_root_check(*out, src);
    if (zarr == 0 && !cfg->ref && !cfg->snapshot) {
      int pq = source_pqrefs(cfg, c, out);
      if (pq != 0)
        return pq < 0 ? -1 : 0;
    }
    if (zarr == 0) {
      int ice = source_icechunk(cfg, c, out);
      if (ice != 0)
        return ice < 0 ? -1 : 0;
      fprintf(stderr,
              "zarrfs: %s: not a Zarr store (no zarr.json, .zgroup or "
              ".zarray at its root)\n",
              src);
    }
    if (zarr <= 0) {
      store_free(*out);
      *out = NULL;
      return -1;
    }
    /* Manifests of a remote store may name no local file. */
    confine_set_remote_reference(c);
    if (store_wrap_vzarr(*out, c, out, &err) < 0) {
      *out = NULL;
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      return -1;
    }
  } else if (is_refs) {
    if (store_open_refs(src, c, out, &err) < 0) {
      fprintf(stderr, "zarrfs: %s: not a kerchunk reference file: %s\n", src,
              err.msg);
      return -1;
    }
  } else if (store_open_local(src, out, &err) < 0) {
    *out = NULL;
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    return -1;
  } else {
    int pq = cfg->ref || cfg->snapshot ? 0 : source_pqrefs(cfg, c, out);
    if (pq != 0)
      return pq < 0 ? -1 : 0;
    int ice = source_icechunk(cfg, c, out);
    if (ice != 0)
      return ice < 0 ? -1 : 0;
    if (store_wrap_vzarr(*out, c, out, &err) < 0) {
      *out = NULL;
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      return -1;
    }
  }
  if (cfg->ref || cfg->snapshot) {
    store_free(*out);
    *out = NULL;
    fprintf(stderr,
            "zarrfs: %s: -o ref and -o snapshot apply to Icechunk "
            "repositories only\n",
            src);
    return -1;
  }
  return 0;
}

/* A URL whose last segment is manifest.json (a VirtualiZarr manifest):
 * its directory (malloc'd), else NULL. */
static char *manifest_dir(const char *url) {
  size_t n = strcspn(url, "?#");
  if (n < 14 || strncmp(url + n - 14, "/manifest.json", 14))
    return NULL;
  return strndup(url, n - 14);
}

/* Does dir/zarr.json (an array) name the manifest at url? 1 yes, 0 no (a
 * line on stderr saying what to do). */
static int manifest_named(struct remote *remote, const char *dir,
                          const char *url) {
  char *zj = NULL, *named = NULL;
  uint8_t *text = NULL;
  size_t len;
  struct zerr err = {0};
  int ok = 0;
  if (asprintf(&zj, "%s/zarr.json", dir) >= 0 &&
      remote_read_all(remote, zj, ROOT_META_MAX, &text, &len, &err) == 0) {
    json_t *j = zjson_loadb((const char *)text, len, &err);
    json_t *t, *st = json_object_get(j, "storage_transformers");
    size_t i;
    json_array_foreach(st, i, t) {
      const char *m = json_string_value(
          json_object_get(json_object_get(t, "configuration"), "manifest"));
      if (!m || strcmp(json_string_value(json_object_get(t, "name")) ?: "",
                       "chunk-manifest-json"))
        continue;
      named = remote_is_url(m) ? strdup(m) : manifest_url_join(dir, m);
      break;
    }
    json_decref(j);
  }
  size_t n = strcspn(url, "?#");
  ok = named && strlen(named) == n && !strncmp(named, url, n);
  if (!ok)
    fprintf(stderr,
            "zarrfs: %s: a VirtualiZarr manifest that no zarr.json beside it "
            "names (%s): mount the array or the store whose zarr.json names "
            "it\n",
            url, text ? "its zarr.json names another" : "no zarr.json there");
  free(named);
  free(text);
  free(zj);
  return ok;
}

/* Open the store the source names (see source.h). A manifest.json URL
 * mounts the array whose zarr.json, beside it, names it. */
int source_open(const struct cli_config *cfg, struct remote *remote,
                struct confine **confine, struct store **out) {
  char *src = source_url(cfg->source);
  *out = NULL;
  if (!src) {
    fprintf(stderr, "zarrfs: out of memory\n");
    return -1;
  }
  char *dir = remote_is_url(src) ? manifest_dir(src) : NULL;
  int rc = -1;
  if (!dir)
    rc = source_open_at(cfg, src, remote, confine, out);
  else if (manifest_named(remote, dir, src))
    rc = source_open_at(cfg, dir, remote, confine, out);
  free(dir);
  free(src);
  return rc;
}
