/* icechunk_fmt.c - Icechunk headers, payloads, ids, repo info, refs,
 * snapshots and manifests (see icechunk_fmt.h). Field numbers are the
 * slots of the .fbs schemas of icechunk-format/flatbuffers/ (a union takes two:
 * its type, then its value); spec 1 files use a prefix of the same tables. */
#define _GNU_SOURCE
#include "icechunk_fmt.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "../json/flatbuf.h"
#include "../util/buf.h"
#include "store.h"

/* Most dimensions an array may have here. */
#define ICEFMT_MAX_NDIM 64
/* Largest ref.json and config.yaml read. */
#define ICEFMT_SMALL_MAX (1u << 20)
/* Output slice of the zstd loop. */
#define ICEFMT_ZSTD_SLICE ((size_t)1 << 20)

static const uint8_t magic[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                  0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};

/* The name of a file type, for messages. */
static const char *type_name(int t) {
  switch (t) {
  case ICEFMT_SNAPSHOT:
    return "snapshot";
  case ICEFMT_MANIFEST:
    return "manifest";
  case ICEFMT_TXLOG:
    return "transaction log";
  case ICEFMT_REPO:
    return "repo info";
  default:
    return "unknown";
  }
}

/* Check magic, spec version, file type and compression. */
int icefmt_header(const uint8_t *p, size_t len, enum icefmt_type want,
                  struct icefmt_header *h, struct zerr *err) {
  if (len < ICEFMT_HEADER_LEN)
    return zerr_set(err, EIO, "%zu bytes: too short for an Icechunk header",
                    len);
  if (memcmp(p, magic, sizeof magic))
    return zerr_set(err, EIO, "not an Icechunk file (bad magic)");
  int n = 24;
  while (n > 0 && p[12 + n - 1] == ' ')
    n--;
  for (int i = 0; i < n; i++) {
    uint8_t c = p[12 + i];
    h->writer[i] = c >= 0x20 && c < 0x7f ? (char)c : '?';
  }
  h->writer[n] = '\0';
  h->spec = p[36];
  h->type = p[37];
  h->compression = p[38];
  if (h->spec != 1 && h->spec != 2)
    return zerr_set(err, EIO, "unsupported Icechunk spec version %u", h->spec);
  if (h->type != want)
    return zerr_set(err, EIO, "file type %u (%s), expected %d (%s)", h->type,
                    type_name(h->type), (int)want, type_name(want));
  if (h->compression > 1)
    return zerr_set(err, EIO, "unknown compression %u", h->compression);
  return 0;
}

/* Decompress zstd frames into at most max bytes. */
static int zstd_bounded(const uint8_t *src, size_t n, size_t max,
                        struct zbuf *b, struct zerr *err) {
  ZSTD_DCtx *d = ZSTD_createDCtx();
  if (!d)
    return zerr_set(err, ENOMEM, "out of memory");
  ZSTD_inBuffer in = {src, n, 0};
  uint8_t probe;
  int rc = 0;
  for (;;) {
    size_t room = max - b->len;
    size_t step = room < ICEFMT_ZSTD_SLICE ? room : ICEFMT_ZSTD_SLICE;
    uint8_t *dst = &probe;
    if (step) {
      if ((rc = zbuf_reserve(b, step, err)) < 0)
        break;
      dst = b->data + b->len;
    } else {
      step = 1; /* only to learn whether more output follows */
    }
    ZSTD_outBuffer o = {dst, step, 0};
    size_t r = ZSTD_decompressStream(d, &o, &in);
    if (ZSTD_isError(r)) {
      rc = zerr_set(err, EIO, "zstd: %s", ZSTD_getErrorName(r));
      break;
    }
    if (!room && o.pos) {
      rc = zerr_set(err, EFBIG,
                    "decompressed payload exceeds max_decode "
                    "(%zu bytes)",
                    max);
      break;
    }
    if (room)
      b->len += o.pos;
    if (r == 0 && in.pos == in.size)
      break;
    if (in.pos == in.size && o.pos < o.size) {
      rc = zerr_set(err, EIO, "zstd: truncated payload");
      break;
    }
  }
  ZSTD_freeDCtx(d);
  return rc;
}

/* The payload after the header, decompressed within max_decode. */
int icefmt_decode(const uint8_t *p, size_t len, enum icefmt_type want,
                  size_t max_decode, uint8_t **out, size_t *out_len,
                  struct icefmt_header *h, struct zerr *err) {
  struct icefmt_header local;
  if (!h)
    h = &local;
  ZTRY(icefmt_header(p, len, want, h, err));
  const uint8_t *src = p + ICEFMT_HEADER_LEN;
  size_t n = len - ICEFMT_HEADER_LEN;
  struct zbuf b;
  zbuf_init(&b, max_decode);
  int rc = h->compression == 0 ? zbuf_append(&b, src, n, err)
                               : zstd_bounded(src, n, max_decode, &b, err);
  if (rc == 0 && b.len == 0)
    rc = zerr_set(err, EIO, "empty payload");
  if (rc < 0) {
    if (rc == -EFBIG && h->compression == 0)
      zerr_set(err, EFBIG, "payload exceeds max_decode (%zu bytes)",
               max_decode);
    zbuf_free(&b);
    return rc;
  }
  *out = zbuf_steal(&b, out_len);
  return 0;
}

static const char crockford[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/* Crockford base 32, 5 bits at a time, zero bits padding the end. */
void icefmt_id_encode(const uint8_t *id, size_t n, char *out) {
  uint32_t acc = 0;
  int bits = 0;
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    acc = acc << 8 | id[i];
    bits += 8;
    while (bits >= 5) {
      out[k++] = crockford[(acc >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits)
    out[k++] = crockford[(acc << (5 - bits)) & 31];
  out[k] = '\0';
}

/* Value of one Crockford character, or -1. */
static int crock_value(char c) {
  if (c >= 'a' && c <= 'z')
    c = (char)(c - 'a' + 'A');
  if (c == 'O')
    c = '0';
  if (c == 'I' || c == 'L')
    c = '1';
  const char *p = c ? strchr(crockford, c) : NULL;
  return p ? (int)(p - crockford) : -1;
}

/* The inverse of icefmt_id_encode for 12-byte ids. */
int icefmt_id_decode(const char *s, uint8_t id[12]) {
  if (strlen(s) != ICEFMT_ID_CHARS)
    return -EINVAL;
  uint32_t acc = 0;
  int bits = 0;
  size_t k = 0;
  for (int i = 0; i < ICEFMT_ID_CHARS; i++) {
    int v = crock_value(s[i]);
    if (v < 0)
      return -EINVAL;
    acc = (acc << 5 | (uint32_t)v) & 0xffff;
    bits += 5;
    if (bits >= 8) {
      if (k < 12)
        id[k++] = (uint8_t)(acc >> (bits - 8));
      bits -= 8;
    }
  }
  /* 100 bits carry 96: the 4 padding bits must be zero (one name per id). */
  if (acc & ((1u << bits) - 1))
    return -EINVAL;
  return 0;
}

/* gmtime_r, then the microseconds Icechunk keeps. */
void icefmt_time_iso(uint64_t us, char *out) {
  time_t t = (time_t)(us / 1000000);
  struct tm tm;
  if (us / 1000000 > (uint64_t)253402300799 || !gmtime_r(&t, &tm)) {
    strcpy(out, "9999-12-31T23:59:59.999999Z"); /* beyond ISO 8601's years */
    return;
  }
  char b[96]; /* room for what the compiler cannot bound */
  snprintf(b, sizeof b, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ",
           tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
           tm.tm_sec, (unsigned)(us % 1000000));
  snprintf(out, 32, "%.31s", b);
}

/* Id, time and message, the message flattened to one field. */
char *icefmt_log_line(const uint8_t id[12], uint64_t flushed_at,
                      const char *message) {
  char sid[ICEFMT_ID_CHARS + 1], when[32];
  icefmt_id_encode(id, 12, sid);
  icefmt_time_iso(flushed_at, when);
  char *line;
  if (asprintf(&line, "%s\t%s\t%s\n", sid, when, message) < 0)
    return NULL;
  /* the message: one line, one field */
  for (char *p = line + strlen(sid) + strlen(when) + 2; p[1]; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = ' ';
  return line;
}

/* ---- repo info ---- */

/* A malloc'd copy of n bytes with NUL bytes shown as spaces. */
static char *dup_text(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p)
    return NULL;
  for (size_t i = 0; i < n; i++)
    p[i] = s[i] ? s[i] : ' ';
  p[n] = '\0';
  return p;
}

/* Is name usable as a ref name (non-empty, no NUL, no '/')? */
static int ref_name_ok(const char *s, size_t n) {
  return n > 0 && !memchr(s, '\0', n) && !memchr(s, '/', n);
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

/* Sort refs by name; a duplicate name is an error. */
static int sort_refs(struct icefmt_ref *r, size_t n, const char *what,
                     struct zerr *err) {
  if (n > 1)
    qsort(r, n, sizeof *r, ref_cmp);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(r[i - 1].name, r[i].name))
      return zerr_set(err, EIO, "%s '%s' listed twice", what, r[i].name);
  return 0;
}

/* Is name among the sorted strings v[0..n)? */
static int in_sorted(char *const *v, size_t n, const char *name) {
  return n && bsearch(&name, v, n, sizeof *v, str_cmp) != NULL;
}

/* Refs vector field id of the repo table into *out (snapshot indexes
 * checked against nsnaps). */
static int parse_refs(const struct fb_table *t, unsigned id,
                      const struct icefmt_repo *r, struct icefmt_ref **out,
                      size_t *n, const char *what, struct zerr *err) {
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
    if (!s || !ref_name_ok(s, sn))
      return zerr_set(err, EIO, "%s %u has no usable name", what, i);
    ZTRY(fb_scalar(&e, 1, 4, 0, &idx, err));
    if (idx >= r->nsnaps)
      return zerr_set(err, EIO, "%s '%.*s' names snapshot %llu of %zu", what,
                      (int)sn, s, (unsigned long long)idx, r->nsnaps);
    if (!((*out)[i].name = strndup(s, sn)))
      return zerr_set(err, ENOMEM, "out of memory");
    memcpy((*out)[i].snap, r->snaps[idx].id, 12);
    *n = i + 1;
  }
  return sort_refs(*out, *n, what, err);
}

static int add_container(struct icefmt_repo *r, const char *s, size_t n,
                         struct zerr *err);

/* The url_prefix of every virtual chunk container in the repository's
 * configuration (a FlexBuffers map). A configuration that cannot be read
 * names no container, so no virtual chunk is read. */
static int repo_config(const struct fb_table *t, struct icefmt_repo *r,
                       struct zerr *err) {
  r->containers_known = 1;
  struct fb_vec v;
  struct zerr e2 = {0};
  if (fb_vector(t, 9, 1, 1, &v, &e2) <= 0 || v.n == 0)
    return 0;
  struct fb_flex root, vcc, c, up;
  if (fb_flex_root(v.buf + v.pos, v.n, &root, &e2) < 0 ||
      fb_flex_get(&root, "virtual_chunk_containers", &vcc, &e2) <= 0)
    return 0;
  uint32_t n;
  if (fb_flex_size(&vcc, &n, &e2) < 0)
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    const char *s;
    uint32_t sn;
    if (fb_flex_at(&vcc, i, &c, &e2) == 0 &&
        fb_flex_get(&c, "url_prefix", &up, &e2) == 1 &&
        fb_flex_string(&up, &s, &sn, &e2) == 1 && sn > 0)
      ZTRY(add_container(r, s, sn, err));
  }
  return 0;
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
    if (parent < -1 || parent >= (int64_t)v.n || parent == (int64_t)i)
      return zerr_set(err, EIO, "snapshot %u has parent %d of %u", i, parent,
                      v.n);
    si->parent = parent;
    ZTRY(fb_scalar(&e, 2, 8, 0, &si->flushed_at, err));
    ZTRY(fb_string(&e, 3, &s, &sn, err));
    if (!(si->message = dup_text(s ? s : "", sn)))
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
    if (!(r->deleted_tags[i] = dup_text(s, sn)))
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
  return repo_config(&t, r, err);
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

/* Append a malloc'd copy of s[0..n) to r->containers. */
static int add_container(struct icefmt_repo *r, const char *s, size_t n,
                         struct zerr *err) {
  char **v = realloc(r->containers, (r->ncontainers + 1) * sizeof *v);
  if (!v)
    return zerr_set(err, ENOMEM, "out of memory");
  r->containers = v;
  if (!(v[r->ncontainers] = strndup(s, n)))
    return zerr_set(err, ENOMEM, "out of memory");
  r->ncontainers++;
  return 0;
}

/* The url_prefix lines of config.yaml: the one key a reader needs. */
int icefmt_config_yaml(const char *text, size_t len, struct icefmt_repo *r,
                       struct zerr *err) {
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *eol = memchr(p, '\n', (size_t)(end - p));
    if (!eol)
      eol = end;
    const char *q = p;
    while (q < eol && (*q == ' ' || *q == '\t'))
      q++;
    static const char key[] = "url_prefix:";
    if ((size_t)(eol - q) > sizeof key - 1 && !memcmp(q, key, sizeof key - 1)) {
      q += sizeof key - 1;
      while (q < eol && *q == ' ')
        q++;
      const char *e = eol;
      while (e > q && (e[-1] == ' ' || e[-1] == '\r'))
        e--;
      if (e - q >= 2 && (*q == '"' || *q == '\'') && e[-1] == *q) {
        q++;
        e--;
      }
      if (e > q && !memchr(q, '\0', (size_t)(e - q)))
        ZTRY(add_container(r, q, (size_t)(e - q), err));
    }
    p = eol + 1;
  }
  r->containers_known = 1;
  return 0;
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

/* Spec 1: refs from refs/ and config.yaml. */
static int repo1_fill(struct store *s, struct icefmt_repo *r,
                      struct zerr *err) {
  uint8_t id[12];
  int rc = read_ref1(s, "branch", "main", 4, id, err);
  if (rc < 0)
    return rc == -ENOENT
               ? zerr_set(err, ENOENT,
                          "neither repo nor "
                          "refs/branch.main/ref.json: not an Icechunk "
                          "repository")
               : rc;
  struct names ns = {0};
  struct zerr e2 = {0};
  rc = s->unlistable ? -ENOTSUP : store_list(s, "refs", collect_name, &ns, &e2);
  if (ns.oom)
    rc = zerr_set(err, ENOMEM, "out of memory");
  else if (rc == 0) {
    r->refs_listed = 1;
    for (size_t i = 0; i < ns.n && rc == 0; i++) {
      const char *nm = ns.v[i];
      int tag = !strncmp(nm, "tag.", 4);
      if (!tag && strncmp(nm, "branch.", 7))
        continue;
      const char *name = nm + (tag ? 4 : 7);
      rc = read_ref1(s, tag ? "tag" : "branch", name, strlen(name), id, err);
      if (rc == REF_DELETED) {
        rc = 0;
        char **nv = realloc(r->deleted_tags, (r->ndeleted + 1) * sizeof *nv);
        if (!nv || !(nv[r->ndeleted] = strdup(name)))
          rc = zerr_set(err, ENOMEM, "out of memory");
        if (nv)
          r->deleted_tags = nv;
        if (rc == 0)
          r->ndeleted++;
      } else if (rc == -ENOENT) {
        rc = 0; /* a directory without ref.json: a deleted branch */
      } else if (rc == 0) {
        rc = tag ? push_ref(&r->tags, &r->ntags, name, id, err)
                 : push_ref(&r->branches, &r->nbranches, name, id, err);
      }
    }
  } else if (zerr_is_transient(-rc)) {
    rc = zerr_set(err, -rc, "refs: %s", e2.msg);
  } else {
    rc = push_ref(&r->branches, &r->nbranches, "main", id, err);
  }
  for (size_t i = 0; i < ns.n; i++)
    free(ns.v[i]);
  free(ns.v);
  ZTRY(rc);
  ZTRY(sort_refs(r->branches, r->nbranches, "branch", err));
  ZTRY(sort_refs(r->tags, r->ntags, "tag", err));
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

/* Read a whole metadata file of type want and decode its payload. */
static int read_file(struct store *s, const char *key, enum icefmt_type want,
                     size_t max_decode, uint8_t **fb, size_t *len,
                     struct zerr *err) {
  uint8_t *raw;
  size_t n;
  int rc = store_read_all(s, key, max_decode, &raw, &n, err);
  if (rc < 0)
    return zerr_prefix(err, "%s: ", key);
  rc = icefmt_decode(raw, n, want, max_decode, fb, len, NULL, err);
  free(raw);
  return rc < 0 ? zerr_prefix(err, "%s: ", key) : 0;
}

/* Spec 2 when `repo` exists, else spec 1 refs. */
int icefmt_repo_load(struct store *s, size_t max_decode,
                     struct icefmt_repo **out, struct zerr *err) {
  uint8_t *fb;
  size_t len;
  int rc = read_file(s, "repo", ICEFMT_REPO, max_decode, &fb, &len, err);
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
  for (size_t i = 0; i < r->ncontainers; i++)
    free(r->containers[i]);
  free(r->branches);
  free(r->tags);
  free(r->deleted_tags);
  free(r->snaps);
  free(r->containers);
  free(r);
}

/* ---- snapshots ---- */

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
  if (!(sn->message = dup_text(s ? s : "", n)))
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
  ZTRY(read_file(s, key, ICEFMT_SNAPSHOT, max_decode, &fb, &len, err));
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

/* ---- manifests ---- */

/* One array's references inside a manifest. */
struct mf_array {
  uint8_t node[8];
  struct fb_vec refs;
  uint32_t ndim;
};

struct icefmt_manifest {
  uint8_t id[12];
  uint8_t *fb; /* owned */
  size_t len;
  struct mf_array *arrays;
  uint32_t narrays;
  uint64_t count;
  const uint8_t *dict; /* location dictionary, inside fb */
  uint32_t dict_len;
  uint8_t compression; /* of compressed_location: 0 none, 1 zstd */
};

/* Coordinates of a reference (ndim of them) into c; the count in *nd. */
static int ref_index(const struct fb_table *r, uint32_t *c, uint32_t *nd,
                     struct zerr *err) {
  struct fb_vec v;
  int rc = fb_vector(r, 0, 4, 4, &v, err);
  if (rc <= 0)
    return rc < 0 ? rc : zerr_set(err, EIO, "chunk reference without index");
  if (v.n > ICEFMT_MAX_NDIM)
    return zerr_set(err, EIO, "chunk index of %u dimensions", v.n);
  for (uint32_t i = 0; i < v.n; i++)
    c[i] = fb_le32(fb_vec_at(&v, i));
  *nd = v.n;
  return 0;
}

/* Order of two coordinate lists of n dimensions. */
static int coord_cmp(const uint32_t *a, const uint32_t *b, uint32_t n) {
  for (uint32_t i = 0; i < n; i++)
    if (a[i] != b[i])
      return a[i] < b[i] ? -1 : 1;
  return 0;
}

/* The kind of a reference, checking exactly one is given. */
static int ref_kind(const struct fb_table *r, enum icefmt_chunk_kind *k,
                    struct zerr *err) {
  int inl = fb_has(r, 1), nat = fb_has(r, 4),
      vir = fb_has(r, 5) || fb_has(r, 8);
  if (inl + nat + vir != 1)
    return zerr_set(err, EIO, "chunk reference is %s",
                    inl + nat + vir ? "of several kinds"
                                    : "of no kind (inline, native or "
                                      "virtual)");
  *k = inl ? ICEFMT_INLINE : nat ? ICEFMT_NATIVE : ICEFMT_VIRTUAL;
  return 0;
}

/* Check every reference of one array: indexes of one length, sorted,
 * one kind each, ranges that do not overflow. */
static int check_array(struct icefmt_manifest *m, struct mf_array *a,
                       struct zerr *err) {
  uint32_t prev[ICEFMT_MAX_NDIM], cur[ICEFMT_MAX_NDIM];
  for (uint32_t i = 0; i < a->refs.n; i++) {
    struct fb_table r;
    uint32_t nd;
    ZTRY(fb_vec_table(&a->refs, i, &r, err));
    ZTRY(ref_index(&r, cur, &nd, err));
    if (i == 0)
      a->ndim = nd;
    else if (nd != a->ndim)
      return zerr_set(err, EIO,
                      "chunk reference %u has %u coordinates, "
                      "the first %u",
                      i, nd, a->ndim);
    else if (coord_cmp(prev, cur, nd) >= 0)
      return zerr_set(err, EIO, "chunk references not sorted at %u", i);
    enum icefmt_chunk_kind k;
    ZTRY(ref_kind(&r, &k, err));
    if (k != ICEFMT_INLINE) {
      uint64_t off, len;
      ZTRY(fb_scalar(&r, 2, 8, 0, &off, err));
      ZTRY(fb_scalar(&r, 3, 8, 0, &len, err));
      if (off + len < off)
        return zerr_set(err, EIO,
                        "chunk reference %u: offset + length "
                        "overflows",
                        i);
    }
    memcpy(prev, cur, nd * sizeof *cur);
    m->count++;
  }
  return 0;
}

/* The body of icefmt_manifest_parse. */
static int manifest_fill(struct icefmt_manifest *m, struct zerr *err) {
  struct fb_table t;
  ZTRY(fb_root(m->fb, m->len, &t, err));
  const uint8_t *id;
  ZTRY(fb_struct(&t, 0, 12, 1, &id, err));
  if (!id)
    return zerr_set(err, EIO, "manifest without an id");
  memcpy(m->id, id, 12);
  struct fb_vec v;
  int rc = fb_vector(&t, 1, 4, 4, &v, err);
  if (rc <= 0)
    return rc < 0 ? rc : zerr_set(err, EIO, "manifest without arrays");
  struct fb_vec dict;
  ZTRY(fb_vector(&t, 2, 1, 1, &dict, err));
  m->dict = dict.n ? dict.buf + dict.pos : NULL;
  m->dict_len = dict.n;
  uint64_t alg;
  ZTRY(fb_scalar(&t, 3, 1, 1, &alg, err));
  if (alg > 1)
    return zerr_set(err, EIO, "unknown location compression %u", (unsigned)alg);
  m->compression = (uint8_t)alg;
  m->arrays = calloc(v.n ? v.n : 1, sizeof *m->arrays);
  if (!m->arrays)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < v.n; i++) {
    struct mf_array *a = &m->arrays[i];
    struct fb_table at;
    const uint8_t *node;
    ZTRY(fb_vec_table(&v, i, &at, err));
    ZTRY(fb_struct(&at, 0, 8, 1, &node, err));
    if (!node)
      return zerr_set(err, EIO, "array %u without a node id", i);
    memcpy(a->node, node, 8);
    if (i && memcmp(m->arrays[i - 1].node, a->node, 8) >= 0)
      return zerr_set(err, EIO, "arrays not sorted by node id at %u", i);
    rc = fb_vector(&at, 1, 4, 4, &a->refs, err);
    if (rc <= 0)
      return rc < 0 ? rc : zerr_set(err, EIO, "array %u without refs", i);
    char nid[ICEFMT_NODE_ID_CHARS + 1];
    icefmt_id_encode(a->node, 8, nid);
    if ((rc = check_array(m, a, err)) < 0)
      return zerr_prefix(err, "node %s: ", nid);
    m->narrays = i + 1;
  }
  return 0;
}

/* Check a manifest whole once, then keep its buffer for lookups. */
int icefmt_manifest_parse(uint8_t *fb, size_t len, struct icefmt_manifest **out,
                          struct zerr *err) {
  struct icefmt_manifest *m = calloc(1, sizeof *m);
  if (!m) {
    free(fb);
    return zerr_set(err, ENOMEM, "out of memory");
  }
  m->fb = fb;
  m->len = len;
  int rc = manifest_fill(m, err);
  if (rc < 0) {
    icefmt_manifest_free(m);
    return rc;
  }
  *out = m;
  return 0;
}

/* manifests/ID through the store. */
int icefmt_manifest_load(struct store *s, const uint8_t id[12],
                         size_t max_decode, struct icefmt_manifest **out,
                         struct zerr *err) {
  char key[16 + ICEFMT_ID_CHARS];
  memcpy(key, "manifests/", 10);
  icefmt_id_encode(id, 12, key + 10);
  uint8_t *fb;
  size_t len;
  ZTRY(read_file(s, key, ICEFMT_MANIFEST, max_decode, &fb, &len, err));
  int rc = icefmt_manifest_parse(fb, len, out, err);
  if (rc < 0)
    return zerr_prefix(err, "%s: ", key);
  if (memcmp((*out)->id, id, 12)) {
    icefmt_manifest_free(*out);
    *out = NULL;
    return zerr_set(err, EIO, "%s: holds another manifest's id", key);
  }
  return 0;
}

/* The array of node in m, or NULL. */
static const struct mf_array *find_array(const struct icefmt_manifest *m,
                                         const uint8_t node[8]) {
  uint32_t lo = 0, hi = m->narrays;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    int c = memcmp(m->arrays[mid].node, node, 8);
    if (c == 0)
      return &m->arrays[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return NULL;
}

/* Copy a location of n bytes (no NUL inside) into out. */
static int set_location(char *out, const char *s, size_t n, struct zerr *err) {
  if (n == 0 || n >= ICEFMT_URL_MAX || memchr(s, '\0', n))
    return zerr_set(err, EIO,
                    "virtual chunk location is empty, too long or "
                    "holds a NUL byte");
  memcpy(out, s, n);
  out[n] = '\0';
  return 0;
}

/* Fill out from the reference table r. */
static int ref_decode(const struct icefmt_manifest *m, const struct fb_table *r,
                      struct icefmt_chunk *out, struct zerr *err) {
  ZTRY(ref_kind(r, &out->kind, err));
  ZTRY(fb_scalar(r, 2, 8, 0, &out->offset, err));
  ZTRY(fb_scalar(r, 3, 8, 0, &out->length, err));
  out->data = NULL;
  out->location[0] = out->etag[0] = '\0';
  out->last_modified = 0;
  struct fb_vec v;
  if (out->kind == ICEFMT_INLINE) {
    ZTRY(fb_vector(r, 1, 1, 1, &v, err));
    out->data = v.buf + v.pos;
    out->offset = 0;
    out->length = v.n;
    return 0;
  }
  if (out->kind == ICEFMT_NATIVE) {
    const uint8_t *id;
    ZTRY(fb_struct(r, 4, 12, 1, &id, err));
    memcpy(out->chunk_id, id, 12);
    return 0;
  }
  const char *s;
  uint32_t n;
  if (fb_has(r, 5)) {
    ZTRY(fb_string(r, 5, &s, &n, err));
    ZTRY(set_location(out->location, s, n, err));
  } else {
    ZTRY(fb_vector(r, 8, 1, 1, &v, err));
    if (m->compression == 0) {
      ZTRY(set_location(out->location, (const char *)v.buf + v.pos, v.n, err));
    } else {
      ZSTD_DCtx *d = ZSTD_createDCtx();
      if (!d)
        return zerr_set(err, ENOMEM, "out of memory");
      size_t got =
          ZSTD_decompress_usingDict(d, out->location, ICEFMT_URL_MAX - 1,
                                    v.buf + v.pos, v.n, m->dict, m->dict_len);
      ZSTD_freeDCtx(d);
      if (ZSTD_isError(got))
        return zerr_set(err, EIO, "compressed virtual chunk location: %s",
                        ZSTD_getErrorName(got));
      char tmp[ICEFMT_URL_MAX];
      memcpy(tmp, out->location, got);
      ZTRY(set_location(out->location, tmp, got, err));
    }
  }
  ZTRY(fb_string(r, 6, &s, &n, err));
  if (s) {
    if (n >= ICEFMT_ETAG_MAX || memchr(s, '\0', n))
      return zerr_set(err, EIO,
                      "virtual chunk checksum ETag too long or "
                      "holds a NUL byte");
    memcpy(out->etag, s, n);
    out->etag[n] = '\0';
  }
  uint64_t lm;
  ZTRY(fb_scalar(r, 7, 4, 0, &lm, err));
  out->last_modified = (uint32_t)lm;
  return 0;
}

/* Binary search of the node, then of its sorted coordinates. */
int icefmt_manifest_find(const struct icefmt_manifest *m, const uint8_t node[8],
                         const uint32_t *coord, uint32_t ndim,
                         struct icefmt_chunk *out, struct zerr *err) {
  const struct mf_array *a = find_array(m, node);
  if (!a || a->ndim != ndim || a->refs.n == 0)
    return zerr_set(err, ENOENT, "no such chunk");
  uint32_t lo = 0, hi = a->refs.n, c[ICEFMT_MAX_NDIM];
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2, nd;
    struct fb_table r;
    ZTRY(fb_vec_table(&a->refs, mid, &r, err));
    ZTRY(ref_index(&r, c, &nd, err));
    int cmp = nd == ndim ? coord_cmp(c, coord, ndim) : 1;
    if (cmp == 0)
      return ref_decode(m, &r, out, err);
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return zerr_set(err, ENOENT, "no such chunk");
}

/* Every reference of a node in coordinate order. */
int icefmt_manifest_each(const struct icefmt_manifest *m, const uint8_t node[8],
                         icefmt_chunk_cb cb, void *ud, struct zerr *err) {
  const struct mf_array *a = find_array(m, node);
  if (!a)
    return 0;
  uint32_t c[ICEFMT_MAX_NDIM];
  for (uint32_t i = 0; i < a->refs.n; i++) {
    struct fb_table r;
    uint32_t nd;
    uint64_t len;
    ZTRY(fb_vec_table(&a->refs, i, &r, err));
    ZTRY(ref_index(&r, c, &nd, err));
    if (fb_has(&r, 1)) {
      struct fb_vec v;
      ZTRY(fb_vector(&r, 1, 1, 1, &v, err));
      len = v.n;
    } else {
      ZTRY(fb_scalar(&r, 3, 8, 0, &len, err));
    }
    if (cb(ud, c, nd, len))
      break;
  }
  return 0;
}

/* How many arrays. */
uint32_t icefmt_manifest_narrays(const struct icefmt_manifest *m) {
  return m->narrays;
}

/* Node id of array i. */
const uint8_t *icefmt_manifest_node(const struct icefmt_manifest *m,
                                    uint32_t i) {
  return i < m->narrays ? m->arrays[i].node : NULL;
}

/* How many chunk references. */
uint64_t icefmt_manifest_count(const struct icefmt_manifest *m) {
  return m->count;
}

/* Memory held. */
size_t icefmt_manifest_bytes(const struct icefmt_manifest *m) {
  return m->len + (size_t)m->narrays * sizeof *m->arrays + sizeof *m;
}

/* Free the buffer and the index; NULL-safe. */
void icefmt_manifest_free(struct icefmt_manifest *m) {
  if (!m)
    return;
  free(m->fb);
  free(m->arrays);
  free(m);
}
