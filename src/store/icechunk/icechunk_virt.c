/* icechunk_virt.c - reading an Icechunk repository's virtual chunks: the
 * container and confinement checks, the containers' own S3 settings, and
 * the checksum of each chunk (see icechunk_virt.h).
 *
 * Locks: icevirt.lock (a leaf: guards the containers' remote contexts,
 * made once on first use and kept until icevirt_free). */
#define _GNU_SOURCE
#include "icechunk_virt.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "../../net/remote.h"
#include "../../net/rversion.h"
#include "../../net/s3.h"
#include "../../net/url.h"
#include "../confine.h"

/* The block cache of a container's remote context: a share of the
 * mount's, with at least this much. */
#define IV_CACHE_MIN (4u << 20)

struct icevirt {
  const struct icefmt_repo *r;
  const struct confine *c;
  pthread_mutex_t lock;
  struct remote **remotes; /* one per container, NULL until used */
  int *failed;             /* 1: making it failed (reason in why) */
  char (*why)[ZERR_MSG_MAX];
  /* Where the redirects of a container's chunks may lead: under a
   * prefix the user named and under the container; the last one (index
   * ncontainers) for chunks of a repository without containers. */
  struct url_scope **scopes;
};

/* A reader with no container remote made yet. */
int icevirt_new(const struct icefmt_repo *r, const struct confine *c,
                struct icevirt **out, struct zerr *err) {
  struct icevirt *v = calloc(1, sizeof *v);
  if (!v)
    return zerr_set(err, ENOMEM, "out of memory");
  v->r = r;
  v->c = c;
  pthread_mutex_init(&v->lock, NULL);
  size_t n = r->ncontainers ? r->ncontainers : 1;
  if (!(v->remotes = calloc(n, sizeof *v->remotes)) ||
      !(v->failed = calloc(n, sizeof *v->failed)) ||
      !(v->why = calloc(n, sizeof *v->why)) ||
      !(v->scopes = calloc(r->ncontainers + 1, sizeof *v->scopes))) {
    icevirt_free(v);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  for (size_t i = 0; c && i <= r->ncontainers; i++) {
    const char *within = i < r->ncontainers ? r->containers[i] : NULL;
    int rc = confine_scope(c, 1, within, &v->scopes[i], err);
    if (rc < 0) {
      icevirt_free(v);
      return rc;
    }
  }
  *out = v;
  return 0;
}

/* Free the containers' remote contexts with the reader. */
void icevirt_free(struct icevirt *v) {
  if (!v)
    return;
  for (size_t i = 0; v->remotes && i < v->r->ncontainers; i++)
    remote_free(v->remotes[i]);
  for (size_t i = 0; v->scopes && i <= v->r->ncontainers; i++)
    url_scope_unref(v->scopes[i]);
  free(v->scopes);
  pthread_mutex_destroy(&v->lock);
  free(v->remotes);
  free(v->failed);
  free(v->why);
  free(v);
}

/* Does container i's store ask for S3 settings of its own? */
static int own_settings(const struct icefmt_vstore *s) {
  return s->kind == ICEFMT_VK_S3 &&
         (s->endpoint || s->region || s->anonymous || s->force_path_style);
}

/* May container store s send requests to its own endpoint ep (aws: AWS's
 * regional path-style host)? The user's credentials go only to the
 * endpoint the user configured, or to one allowed with -o
 * container_endpoint; an endpoint given with -o endpoint is used instead
 * of every container's. 0, or -EACCES naming the option. */
static int endpoint_allowed(const struct icevirt *v, const char *ep, int aws,
                            const struct s3_config *b3, struct zerr *err) {
  int option;
  const char *mine = s3_endpoint(b3, &option);
  if (!ep || option || (aws && !mine) ||
      (!aws && mine && url_same_endpoint(mine, ep)) ||
      confine_endpoint_allowed(v->c, ep))
    return 0;
  return zerr_set(err, EACCES,
                  "names the S3 endpoint %.150s, which you did not "
                  "configure: allow it with -o container_endpoint=%.150s "
                  "(your S3 credentials are sent to it unless the container "
                  "is anonymous)",
                  ep, ep);
}

/* The remote context of container i, made on first use: the mount's
 * settings with the container's endpoint, region and anonymity. */
static int container_remote(struct icevirt *v, size_t i, struct remote **out,
                            struct zerr *err) {
  const struct icefmt_vstore *s = &v->r->stores[i];
  struct remote *base = confine_remote(v->c);
  if (!base)
    return zerr_set(err, EIO, "remote targets need a remote context");
  pthread_mutex_lock(&v->lock);
  int rc = 0;
  if (v->remotes[i]) {
    *out = v->remotes[i];
  } else if (v->failed[i]) {
    rc = zerr_set(err, EIO, "%s", v->why[i]);
  } else {
    /* Path style without an endpoint: AWS's regional path-style host. */
    char aws[96];
    const char *ep = s->endpoint;
    if (!ep && s->force_path_style && s->region) {
      snprintf(aws, sizeof aws, "https://s3.%s.amazonaws.com", s->region);
      ep = aws;
    }
    struct remote_config cfg = *remote_config_of(base);
    cfg.cache_size /= 4;
    if (cfg.cache_size < IV_CACHE_MIN)
      cfg.cache_size = IV_CACHE_MIN;
    struct s3_config *s3 = NULL;
    struct zerr e = {0};
    const struct s3_config *b3 = remote_s3(base);
    if (!b3)
      rc = zerr_set(&e, EIO, "s3:// URLs are not read here");
    else if ((rc = endpoint_allowed(v, ep, ep == aws, b3, &e)) == 0)
      rc = s3_config_derive(b3, ep, s->region, s->anonymous, &s3, &e);
    if (rc == 0)
      rc = remote_new(&cfg, s3, &v->remotes[i], &e);
    if (rc == 0) {
      *out = v->remotes[i];
    } else {
      v->failed[i] = rc != -ENOMEM;
      snprintf(v->why[i], sizeof v->why[i], "container %.200s: %.280s",
               v->r->containers[i], e.msg);
      rc = zerr_set(err, e.code ? e.code : EIO, "%s", v->why[i]);
    }
  }
  pthread_mutex_unlock(&v->lock);
  return rc;
}

/* Does the local file of virtual chunk c still match its checksum? As
 * Icechunk's local file system store sees it: the ETag is
 * "INODE-MTIME-SIZE" (hexadecimal; the modification time in microseconds
 * since the epoch), the last-modified check fails on a file modified
 * after the recorded second. Checked when the chunk is opened. */
static int local_checksum(const struct icefmt_chunk *c, struct zerr *err) {
  if (!c->etag[0] && !c->last_modified)
    return 0;
  struct stat sb;
  if (stat(c->location + 7, &sb) < 0)
    return zerr_set(err, EIO, "%s: %s", c->location, strerror(errno));
  if (c->etag[0]) {
    char tag[80];
    uint64_t us = (uint64_t)sb.st_mtim.tv_sec * 1000000u +
                  (uint64_t)sb.st_mtim.tv_nsec / 1000u;
    snprintf(tag, sizeof tag, "%llx-%llx-%llx", (unsigned long long)sb.st_ino,
             (unsigned long long)us, (unsigned long long)sb.st_size);
    if (!rversion_etag_same(tag, c->etag))
      return zerr_set(err, EIO,
                      "%s: the file does not match the checksum its "
                      "reference recorded (ETag \"%s\", the file's is "
                      "\"%s\")",
                      c->location, c->etag, tag);
    return 0;
  }
  if (sb.st_mtim.tv_sec > (time_t)c->last_modified) {
    char when[32];
    rversion_format_date(c->last_modified, when);
    return zerr_set(err, EIO,
                    "%s: the file does not match the checksum its "
                    "reference recorded (modified after %s)",
                    c->location, when);
  }
  return 0;
}

/* A local virtual chunk through the confine's roots. */
static int local_open(struct icevirt *v, const struct icefmt_chunk *c,
                      struct io_stats *stats, struct bytesrc **out,
                      struct zerr *err) {
  struct bytesrc *f;
  ZTRY(confine_open(v->c, c->location + 7, stats, &f, err));
  int rc = local_checksum(c, err);
  if (rc == 0)
    rc = bytesrc_sub(f, c->offset, c->length, out, err);
  bytesrc_unref(f);
  return rc;
}

/* Container, confinement, then the source, pinned to the checksum. */
int icevirt_open(struct icevirt *v, const struct icefmt_chunk *c,
                 struct io_stats *stats, struct bytesrc **out,
                 struct zerr *err) {
  if (!v->c)
    return zerr_set(err, EACCES,
                    "virtual chunk %s: no virtual chunk may be read here",
                    c->location);
  long ci = icefmt_container_of(v->r, c->location);
  if (v->r->containers_known && ci < 0)
    return zerr_set(err, EACCES,
                    "virtual chunk %s: not under a virtual chunk container "
                    "of the repository",
                    c->location);
  const struct icefmt_vstore *s = ci >= 0 ? &v->r->stores[ci] : NULL;
  if (s && s->unusable)
    return zerr_set(err, EACCES, "virtual chunk %s: container %s: %s",
                    c->location, v->r->containers[ci], s->unusable);
  if (!strncmp(c->location, "file://", 7))
    return local_open(v, c, stats, out, err);
  int named;
  ZTRY(confine_check_url(v->c, c->location, &named, err));
  if (!named)
    return zerr_set(err, EACCES,
                    "virtual chunk %s: not authorized (allow its prefix "
                    "with -o target_root=PREFIX)",
                    c->location);
  /* Its redirects too stay under the container and a named prefix. */
  struct url_scope *scope = v->scopes[ci >= 0 ? ci : (long)v->r->ncontainers];
  struct remote *rem = confine_remote(v->c);
  if (s && own_settings(s) && !strncmp(c->location, "s3://", 5) &&
      container_remote(v, (size_t)ci, &rem, err) < 0)
    return zerr_prefix(err, "virtual chunk %s: ", c->location);
  if (!rem)
    return zerr_set(err, EIO,
                    "virtual chunk %s: remote targets need a remote "
                    "context",
                    c->location);
  ZTRY(remote_open_scoped(rem, c->location, c->offset, c->length, named, scope,
                          stats, out, err));
  int rc = rversion_pin(*out, c->etag, c->last_modified, err);
  if (rc < 0) {
    bytesrc_unref(*out);
    *out = NULL;
    if (err)
      err->code = EIO;
    return -EIO;
  }
  return 0;
}
