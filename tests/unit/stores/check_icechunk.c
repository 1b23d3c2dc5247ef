/* check_icechunk.c - unit tests of Icechunk's format
 * (src/store/icechunk/icechunk_fmt.c): ids, headers and bounded payloads on
 * built inputs, then the five repositories of ../shared/fixtures/icechunk
 * against their EXPECTED.md (refs, deleted tags, histories, node paths, inline,
 * native and virtual chunk references, split manifests' extents), and every
 * fixture metadata file truncated and bit-flipped (refused or read, never a
 * crash). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "../../../src/net/remote.h"
#include "../../../src/net/rversion.h"
#include "../../../src/net/s3.h"
#include "../../../src/store/icechunk/icechunk.h"
#include "../../../src/store/icechunk/icechunk_fmt.h"
#include "../../../src/store/store.h"
#include "../testutil.h"

#define MAXDEC (64u << 20)

static const uint8_t magic_hdr[12] = {0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
                                      0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B};

START_TEST(ids) {
  static const uint8_t first[12] = {0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75,
                                    0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34};
  char s[32];
  icefmt_id_encode(first, 12, s);
  ck_assert_str_eq(s, ICEFMT_FIRST_SNAPSHOT);
  uint8_t id[12];
  ck_assert_int_eq(icefmt_id_decode(ICEFMT_FIRST_SNAPSHOT, id), 0);
  ck_assert_mem_eq(id, first, 12);
  ck_assert_int_eq(icefmt_id_decode("1cechnkrep0f1rstcmt0", id), 0);
  ck_assert_mem_eq(id, first, 12);
  ck_assert_int_eq(icefmt_id_decode("1CECHNKREPOF1RSTCMTO", id), 0); /* O=0 */
  ck_assert_mem_eq(id, first, 12);
  ck_assert_int_eq(icefmt_id_decode("1CECHNKREP0F1RSTCMT", id), -EINVAL);
  ck_assert_int_eq(icefmt_id_decode("1CECHNKREP0F1RSTCMT00", id), -EINVAL);
  ck_assert_int_eq(icefmt_id_decode("1CECHNKREP0F1RSTCMTU", id), -EINVAL);
  /* well formed, but its last 4 bits set: no id is spelled so */
  ck_assert_int_eq(icefmt_id_decode("1CECHNKREP0F1RSTCMT1", id), -ENOENT);
  static const uint8_t node[8] = {0xff, 0, 0, 0, 0, 0, 0, 1};
  icefmt_id_encode(node, 8, s);
  ck_assert_uint_eq(strlen(s), ICEFMT_NODE_ID_CHARS);
}
END_TEST

/* A file of type t, spec, compression c holding payload p[0..n). */
static uint8_t *make_file(int spec, int t, int c, const void *p, size_t n,
                          size_t *len) {
  uint8_t *f = malloc(ICEFMT_HEADER_LEN + n + 1);
  memcpy(f, magic_hdr, 12);
  memset(f + 12, ' ', 24);
  memcpy(f + 12, "test", 4);
  f[36] = (uint8_t)spec;
  f[37] = (uint8_t)t;
  f[38] = (uint8_t)c;
  memcpy(f + ICEFMT_HEADER_LEN, p, n);
  *len = ICEFMT_HEADER_LEN + n;
  return f;
}

START_TEST(headers_and_payloads) {
  struct zerr err = {0};
  struct icefmt_header h;
  size_t len, out_len;
  uint8_t *out;
  uint8_t *f = make_file(2, ICEFMT_SNAPSHOT, 0, "abcdefgh", 8, &len);
  ck_assert_int_eq(
      icefmt_decode(f, len, ICEFMT_SNAPSHOT, 100, &out, &out_len, &h, &err), 0);
  ck_assert_str_eq(h.writer, "test");
  ck_assert_uint_eq(out_len, 8);
  ck_assert_mem_eq(out, "abcdefgh", 8);
  free(out);
  ck_assert_int_eq(
      icefmt_decode(f, len, ICEFMT_SNAPSHOT, 4, &out, &out_len, &h, &err),
      -EFBIG);
  ck_assert_int_eq(icefmt_header(f, len, ICEFMT_MANIFEST, &h, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "expected 2 (manifest)"));
  ck_assert_int_eq(icefmt_header(f, 38, ICEFMT_SNAPSHOT, &h, &err), -EIO);
  f[36] = 3;
  ck_assert_int_eq(icefmt_header(f, len, ICEFMT_SNAPSHOT, &h, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "spec version 3"));
  f[36] = 1;
  f[38] = 2;
  ck_assert_int_eq(icefmt_header(f, len, ICEFMT_SNAPSHOT, &h, &err), -EIO);
  f[38] = 0;
  f[3] = 'x';
  ck_assert_int_eq(icefmt_header(f, len, ICEFMT_SNAPSHOT, &h, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "magic"));
  free(f);
  /* zstd: a 1 MB payload of zeros, bounded; a truncated frame. */
  size_t big = 1u << 20;
  uint8_t *zeros = calloc(1, big);
  size_t cap = ZSTD_compressBound(big);
  uint8_t *z = malloc(cap);
  size_t zn = ZSTD_compress(z, cap, zeros, big, 3);
  ck_assert(!ZSTD_isError(zn));
  f = make_file(1, ICEFMT_MANIFEST, 1, z, zn, &len);
  ck_assert_int_eq(
      icefmt_decode(f, len, ICEFMT_MANIFEST, big, &out, &out_len, NULL, &err),
      0);
  ck_assert_uint_eq(out_len, big);
  free(out);
  ck_assert_int_eq(icefmt_decode(f, len, ICEFMT_MANIFEST, big - 1, &out,
                                 &out_len, NULL, &err),
                   -EFBIG);
  ck_assert_int_eq(icefmt_decode(f, len - 3, ICEFMT_MANIFEST, big, &out,
                                 &out_len, NULL, &err),
                   -EIO);
  f[ICEFMT_HEADER_LEN + 1] ^= 0x55; /* a damaged frame header */
  ck_assert_int_eq(
      icefmt_decode(f, len, ICEFMT_MANIFEST, big, &out, &out_len, NULL, &err),
      -EIO);
  free(f);
  f = make_file(1, ICEFMT_MANIFEST, 1, "", 0, &len);
  ck_assert_int_eq(
      icefmt_decode(f, len, ICEFMT_MANIFEST, big, &out, &out_len, NULL, &err),
      -EIO);
  free(f);
  free(z);
  free(zeros);
}
END_TEST

START_TEST(ref_json_and_config) {
  struct zerr err = {0};
  uint8_t id[12];
  const char *good = "{\"snapshot\":\"NXH3M0HJ7EEJ0699DPP0\"}";
  ck_assert_int_eq(icefmt_refjson_parse(good, strlen(good), id, &err), 0);
  const char *bad[] = {"",
                       "{}",
                       "{\"snapshot\":1}",
                       "{\"snapshot\":\"abc\"}",
                       "[",
                       "{\"snapshot\":\"NXH3M0HJ7EEJ0699DPP0\","
                       "\"snapshot\":\"NXH3M0HJ7EEJ0699DPP0\"}"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_int_eq(icefmt_refjson_parse(bad[i], strlen(bad[i]), id, &err),
                     -EIO);
  struct icefmt_repo r = {0};
  const char *yaml = "virtual_chunk_containers:\n  s3:\n    url_prefix: "
                     "s3://testbucket\n  f:\n    url_prefix: 'file:///x'\n"
                     "url_prefix_other: no\n";
  ck_assert_int_eq(icefmt_config_yaml(yaml, strlen(yaml), &r, &err), 0);
  ck_assert_uint_eq(r.ncontainers, 2);
  ck_assert_str_eq(r.containers[0], "s3://testbucket");
  ck_assert_str_eq(r.containers[1], "file:///x");
  icefmt_containers_free(&r);
}
END_TEST

/* The store of fixture repository name (skipped without fixtures). */
static struct store *open_fixture(const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/icechunk/%s", testutil_fixtures(), name);
  struct store *s;
  struct zerr err = {0};
  ck_assert_msg(store_open_local(path, &s, &err) == 0, "%s: %s", path, err.msg);
  return s;
}

/* The repo of fixture name, with its store in *s. */
static struct icefmt_repo *load_repo(const char *name, struct store **s) {
  *s = open_fixture(name);
  struct icefmt_repo *r;
  struct zerr err = {0};
  ck_assert_msg(icefmt_repo_load(*s, MAXDEC, &r, &err) == 0, "%s: %s", name,
                err.msg);
  return r;
}

/* Messages of the history of ref (newest first), '|'-joined into out:
 * spec 2 from the repo's snapshot list, spec 1 from the snapshots'
 * parents. */
static void history(struct icefmt_repo *r, struct store *s, const char *ref,
                    int tag, char *out, size_t cap) {
  struct zerr err = {0};
  uint8_t id[12];
  ck_assert_msg(icefmt_repo_ref(r, s, ref, tag, id, &err) == 0, "%s", err.msg);
  out[0] = '\0';
  for (int steps = 0; steps < 100; steps++) {
    const char *msg = NULL;
    int more = 0;
    struct icefmt_snapshot *sn = NULL;
    if (r->spec == 2) {
      size_t i = 0;
      while (i < r->nsnaps && memcmp(r->snaps[i].id, id, 12))
        i++;
      ck_assert_uint_lt(i, r->nsnaps);
      msg = r->snaps[i].message;
      if (r->snaps[i].parent >= 0) {
        memcpy(id, r->snaps[r->snaps[i].parent].id, 12);
        more = 1;
      }
    } else {
      ck_assert_msg(icefmt_snapshot_load(s, id, MAXDEC, &sn, &err) == 0, "%s",
                    err.msg);
      msg = sn->message;
      if (sn->has_parent) {
        memcpy(id, sn->parent, 12);
        more = 1;
      }
    }
    if (out[0])
      strncat(out, "|", cap - strlen(out) - 1);
    strncat(out, msg, cap - strlen(out) - 1);
    icefmt_snapshot_free(sn);
    if (!more)
      return;
  }
  ck_abort_msg("history does not end");
}

static const char *test_repos[] = {"test-repo-v1", "test-repo-v2",
                                   "test-repo-v2-migrated"};

START_TEST(refs_and_histories) {
  struct store *s;
  struct icefmt_repo *r = load_repo(test_repos[_i], &s);
  ck_assert_int_eq(r->spec, _i == 0 ? 1 : 2);
  ck_assert_uint_eq(r->nbranches, 2);
  ck_assert_str_eq(r->branches[0].name, "main");
  ck_assert_str_eq(r->branches[1].name, "my-branch");
  ck_assert_uint_eq(r->ntags, 2);
  ck_assert_str_eq(r->tags[0].name, "it also works!");
  ck_assert_str_eq(r->tags[1].name, "it works!");
  ck_assert_uint_eq(r->ndeleted, 1);
  ck_assert_str_eq(r->deleted_tags[0], "deleted");
  struct zerr err = {0};
  uint8_t id[12];
  ck_assert_int_eq(icefmt_repo_ref(r, s, "deleted", 1, id, &err), -ENOENT);
  ck_assert_int_eq(icefmt_repo_ref(r, s, "nope", 0, id, &err), -ENOENT);
  { /* config.yaml's containers, or the repo file's configuration */
    ck_assert(r->containers_known);
    int found = 0;
    for (size_t i = 0; i < r->ncontainers; i++)
      found |= !strncmp(r->containers[i], "s3://testbucket", 15);
    ck_assert(found);
    /* the s3 container's store, as Icechunk's tests configure it */
    long ci = icefmt_container_of(r, "s3://testbucket/can_read_old/chunk-1");
    ck_assert_int_ge(ci, 0);
    const struct icefmt_vstore *v = &r->stores[ci];
    ck_assert_int_eq(v->kind, ICEFMT_VK_S3);
    ck_assert_str_eq(v->endpoint, "http://localhost:4200");
    ck_assert_str_eq(v->region, "us-east-1");
    ck_assert_int_eq(v->force_path_style, 1);
    ck_assert_int_eq(v->anonymous, 0);
    ck_assert_ptr_null(v->unusable);
  }
  char h[1024];
  const char *base = "fill data|empty structure|Repository initialized";
  char want[1024];
  history(r, s, "main", 0, h, sizeof h);
  snprintf(want, sizeof want, "set virtual chunk|%s", base);
  ck_assert_str_eq(h, want);
  snprintf(want, sizeof want,
           "some more structure|delete a chunk|set virtual chunk|%s", base);
  history(r, s, "my-branch", 0, h, sizeof h);
  ck_assert_str_eq(h, want);
  history(r, s, "it also works!", 1, h, sizeof h);
  ck_assert_str_eq(h, want);
  snprintf(want, sizeof want, "delete a chunk|set virtual chunk|%s", base);
  history(r, s, "it works!", 1, h, sizeof h);
  ck_assert_str_eq(h, want);
  icefmt_repo_free(r);
  store_free(s);
}
END_TEST

/* The snapshot of ref in fixture name. */
static struct icefmt_snapshot *load_snap(struct icefmt_repo *r, struct store *s,
                                         const char *ref) {
  struct zerr err = {0};
  uint8_t id[12];
  ck_assert_msg(icefmt_repo_ref(r, s, ref, 0, id, &err) == 0, "%s", err.msg);
  struct icefmt_snapshot *sn;
  ck_assert_msg(icefmt_snapshot_load(s, id, MAXDEC, &sn, &err) == 0, "%s",
                err.msg);
  return sn;
}

/* The node at path, or NULL. */
static const struct icefmt_node *node_at(const struct icefmt_snapshot *sn,
                                         const char *path) {
  for (size_t i = 0; i < sn->nnodes; i++)
    if (!strcmp(sn->nodes[i].path, path))
      return &sn->nodes[i];
  return NULL;
}

/* Count node's chunk references in every manifest it names. */
static int count_cb(void *ud, const uint32_t *c, uint32_t nd, uint64_t sz) {
  ++*(int *)ud;
  return 0;
}

/* The reference of coord in node (through its manifests); returns 0 or
 * -ENOENT. */
static int chunk_at(struct store *s, const struct icefmt_node *n,
                    const uint32_t *coord, struct icefmt_chunk *out,
                    int *nrefs) {
  struct zerr err = {0};
  int rc = -ENOENT;
  *nrefs = 0;
  for (size_t k = 0; k < n->nmrefs; k++) {
    struct icefmt_manifest *m;
    ck_assert_msg(icefmt_manifest_load(s, n->mrefs[k].id, MAXDEC, &m, &err) ==
                      0,
                  "%s", err.msg);
    icefmt_manifest_each(m, n->id, count_cb, nrefs, &err);
    if (rc == -ENOENT)
      rc = icefmt_manifest_find(m, n->id, coord, n->ndim, out, &err);
    if (rc == 0 && out->kind == ICEFMT_INLINE)
      out->data = NULL; /* borrowed from m, freed below */
    icefmt_manifest_free(m);
  }
  return rc;
}

START_TEST(trees_and_chunks) {
  struct store *s;
  struct icefmt_repo *r = load_repo(test_repos[_i], &s);
  struct icefmt_snapshot *sn = load_snap(r, s, "my-branch");
  static const char *paths[] = {"/",
                                "/group1",
                                "/group1/big_chunks",
                                "/group1/small_chunks",
                                "/group2",
                                "/group2/group3",
                                "/group2/group3/group4",
                                "/group2/group3/group4/group5",
                                "/group2/group3/group4/group5/inner"};
  ck_assert_uint_eq(sn->nnodes, 9);
  for (size_t i = 0; i < 9; i++)
    ck_assert_str_eq(sn->nodes[i].path, paths[i]);
  const struct icefmt_node *g1 = node_at(sn, "/group1");
  ck_assert(!g1->is_array);
  ck_assert_ptr_nonnull(strstr(g1->user_data, "is a nice group"));
  const struct icefmt_node *inner =
      node_at(sn, "/group2/group3/group4/group5/inner");
  ck_assert(inner->is_array);
  ck_assert_uint_eq(inner->ndim, 2);
  ck_assert_uint_eq(inner->shape[0], 10);
  ck_assert_uint_eq(inner->nmrefs, 0);
  /* small_chunks: inline, four on my-branch (the last was deleted). */
  const struct icefmt_node *sc = node_at(sn, "/group1/small_chunks");
  ck_assert_ptr_nonnull(strstr(sc->user_data, "\"int8\""));
  struct icefmt_chunk *c = malloc(sizeof *c);
  int nrefs;
  uint32_t at[2] = {0, 0};
  ck_assert_int_eq(chunk_at(s, sc, at, c, &nrefs), 0);
  ck_assert_int_eq(c->kind, ICEFMT_INLINE);
  ck_assert_int_eq(nrefs, 4);
  at[0] = 4;
  ck_assert_int_eq(chunk_at(s, sc, at, c, &nrefs), -ENOENT);
  /* big_chunks: c/0/0 virtual, the other three native. */
  const struct icefmt_node *bc = node_at(sn, "/group1/big_chunks");
  ck_assert_uint_eq(bc->ndim, 2);
  at[0] = 0;
  ck_assert_int_eq(chunk_at(s, bc, at, c, &nrefs), 0);
  ck_assert_int_eq(nrefs, 4);
  ck_assert_int_eq(c->kind, ICEFMT_VIRTUAL);
  ck_assert_str_eq(c->location, "s3://testbucket/can_read_old/chunk-1");
  ck_assert_uint_eq(c->offset, 0);
  /* its checksum: a last-modified time (2106), no ETag */
  ck_assert_uint_eq(c->last_modified, 4294111232u);
  ck_assert_str_eq(c->etag, "");
  at[1] = 1;
  ck_assert_int_eq(chunk_at(s, bc, at, c, &nrefs), 0);
  ck_assert_int_eq(c->kind, ICEFMT_NATIVE);
  char key[64] = "chunks/";
  icefmt_id_encode(c->chunk_id, 12, key + 7);
  enum store_entry_type ty;
  uint64_t size;
  struct zerr err = {0};
  ck_assert_msg(store_stat(s, key, &ty, &size, &err) == 0, "%s", key);
  ck_assert_uint_le(c->offset + c->length, size);
  icefmt_snapshot_free(sn);
  /* main: all five small chunks. */
  sn = load_snap(r, s, "main");
  at[0] = 4;
  ck_assert_int_eq(
      chunk_at(s, node_at(sn, "/group1/small_chunks"), at, c, &nrefs), 0);
  ck_assert_int_eq(nrefs, 5);
  ck_assert_ptr_null(node_at(sn, "/group2"));
  icefmt_snapshot_free(sn);
  free(c);
  icefmt_repo_free(r);
  store_free(s);
}
END_TEST

/* Distinct manifest ids of a snapshot. */
static size_t distinct_manifests(const struct icefmt_snapshot *sn) {
  uint8_t seen[256][12];
  size_t n = 0;
  for (size_t i = 0; i < sn->nnodes; i++)
    for (size_t k = 0; k < sn->nodes[i].nmrefs; k++) {
      size_t j = 0;
      while (j < n && memcmp(seen[j], sn->nodes[i].mrefs[k].id, 12))
        j++;
      if (j == n && n < 256)
        memcpy(seen[n++], sn->nodes[i].mrefs[k].id, 12);
    }
  return n;
}

START_TEST(split_manifests) {
  static const char *repos[] = {"split-repo-v1", "split-repo-v2"};
  struct store *s;
  struct icefmt_repo *r = load_repo(repos[_i], &s);
  char h[1024];
  history(r, s, "main", 0, h, sizeof h);
  ck_assert_str_eq(h, "write data again with more splits|write data again|"
                      "write data|empty structure|Repository initialized");
  struct icefmt_snapshot *sn = load_snap(r, s, "main");
  ck_assert_uint_eq(distinct_manifests(sn), 17);
  const struct icefmt_node *sp = node_at(sn, "/group1/split");
  ck_assert_ptr_nonnull(sp);
  ck_assert_uint_eq(sp->ndim, 2);
  ck_assert_ptr_nonnull(strstr(sp->user_data, "longitude"));
  /* The extents tile the 4 x 4 chunk grid without overlap. */
  int cover[4][4] = {{0}};
  for (size_t k = 0; k < sp->nmrefs; k++)
    for (uint32_t i = sp->mrefs[k].from[0]; i < sp->mrefs[k].to[0]; i++)
      for (uint32_t j = sp->mrefs[k].from[1]; j < sp->mrefs[k].to[1]; j++) {
        ck_assert(i < 4 && j < 4);
        cover[i][j]++;
      }
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      ck_assert_int_eq(cover[i][j], 1);
  struct icefmt_chunk *c = malloc(sizeof *c);
  int nrefs;
  uint32_t at[2] = {3, 2};
  ck_assert_int_eq(chunk_at(s, sp, at, c, &nrefs), 0);
  ck_assert_int_eq(nrefs, 16);
  ck_assert_int_eq(c->kind, ICEFMT_NATIVE);
  free(c);
  /* The parent snapshots, 'write data again' and 'write data': 9 each. */
  struct zerr err = {0};
  uint8_t id[12];
  for (int back = 1; back <= 2; back++) {
    memcpy(id, sn->id, 12);
    for (int b = 0; b < back; b++) {
      if (r->spec == 2) {
        size_t i = 0;
        while (memcmp(r->snaps[i].id, id, 12))
          i++;
        memcpy(id, r->snaps[r->snaps[i].parent].id, 12);
      } else {
        struct icefmt_snapshot *p;
        ck_assert_int_eq(icefmt_snapshot_load(s, id, MAXDEC, &p, &err), 0);
        memcpy(id, p->parent, 12);
        icefmt_snapshot_free(p);
      }
    }
    struct icefmt_snapshot *p;
    ck_assert_int_eq(icefmt_snapshot_load(s, id, MAXDEC, &p, &err), 0);
    ck_assert_uint_eq(distinct_manifests(p), 9);
    icefmt_snapshot_free(p);
  }
  icefmt_snapshot_free(sn);
  icefmt_repo_free(r);
  store_free(s);
}
END_TEST

/* Parse buf as a file of type t; the result does not matter, only that
 * it is an answer. */
static void parse_any(const uint8_t *buf, size_t n, enum icefmt_type t) {
  struct zerr err = {0};
  uint8_t *fb;
  size_t len;
  if (icefmt_decode(buf, n, t, MAXDEC, &fb, &len, NULL, &err) < 0)
    return;
  if (t == ICEFMT_MANIFEST) {
    struct icefmt_manifest *m;
    if (icefmt_manifest_parse(fb, len, &m, &err) == 0) {
      struct icefmt_chunk *c = malloc(sizeof *c);
      static const uint8_t node[8];
      uint32_t at[2] = {0, 1};
      icefmt_manifest_find(m, node, at, 2, c, &err);
      free(c);
      icefmt_manifest_free(m);
    }
    return;
  }
  if (t == ICEFMT_SNAPSHOT) {
    struct icefmt_snapshot *sn;
    if (icefmt_snapshot_parse(fb, len, &sn, &err) == 0)
      icefmt_snapshot_free(sn);
  } else {
    struct icefmt_repo *r;
    if (icefmt_repo_parse(fb, len, &r, &err) == 0)
      icefmt_repo_free(r);
  }
  free(fb);
}

/* Up to 8 names of a listing. */
struct names {
  char v[8][64];
  int n;
};

/* Collect a listed name. */
static int collect(void *ud, const char *name, enum store_entry_type ty,
                   uint64_t sz, int64_t mt) {
  struct names *x = ud;
  if (x->n < 8)
    snprintf(x->v[x->n++], 64, "%s", name);
  return 0;
}

/* Names listed under prefix, sorted and ','-joined, files marked "=SIZE". */
struct listing {
  char names[64][64];
  int n;
};

/* Keep a listed name. */
static int keep(void *ud, const char *name, enum store_entry_type ty,
                uint64_t sz, int64_t mt) {
  struct listing *l = ud;
  if (l->n < 64) {
    if (ty == STORE_FILE)
      snprintf(l->names[l->n++], 64, "%s=%llu", name, (unsigned long long)sz);
    else
      snprintf(l->names[l->n++], 64, "%s/", name);
  }
  return 0;
}

/* Names ascending. */
static int name_cmp(const void *a, const void *b) { return strcmp(a, b); }

/* The listing of prefix in s as one string. */
static void list_of(struct store *s, const char *prefix, char *out,
                    size_t cap) {
  struct listing l = {.n = 0};
  struct zerr err = {0};
  ck_assert_msg(store_list(s, prefix, keep, &l, &err) == 0, "%s: %s", prefix,
                err.msg);
  qsort(l.names, (size_t)l.n, sizeof l.names[0], name_cmp);
  out[0] = '\0';
  for (int i = 0; i < l.n; i++) {
    if (i)
      strncat(out, ",", cap - strlen(out) - 1);
    strncat(out, l.names[i], cap - strlen(out) - 1);
  }
}

/* The store of a fixture repository at ref or snapshot. */
static struct store *open_snapshot_store(const char *repo, const char *ref,
                                         const char *snap) {
  struct store *files = open_fixture(repo), *s;
  struct zerr err = {0};
  ck_assert_msg(store_open_icechunk(files, ref, snap, MAXDEC, 1 << 20, NULL, &s,
                                    &err) == 0,
                "%s: %s", repo, err.msg);
  return s;
}

START_TEST(snapshot_store) {
  struct zerr err = {0};
  struct store *files = open_fixture(test_repos[_i]);
  ck_assert_int_eq(icechunk_detect(files, &err), 1);
  store_free(files);
  struct store *s = open_snapshot_store(test_repos[_i], "my-branch", NULL);
  char l[2048];
  list_of(s, "", l, sizeof l);
  ck_assert_ptr_nonnull(strstr(l, "group1/,group2/,zarr.json="));
  list_of(s, "group1", l, sizeof l);
  ck_assert_ptr_nonnull(strstr(l, "big_chunks/,small_chunks/,zarr.json="));
  list_of(s, "group1/small_chunks", l, sizeof l);
  ck_assert_ptr_nonnull(strstr(l, "c/,zarr.json="));
  list_of(s, "group1/small_chunks/c", l, sizeof l);
  ck_assert_str_eq(l, "0=10,1=10,2=10,3=10");
  list_of(s, "group1/big_chunks/c", l, sizeof l);
  ck_assert_str_eq(l, "0/,1/");
  list_of(s, "group1/big_chunks/c/1", l, sizeof l);
  ck_assert_str_eq(l, "0=19,1=19");
  list_of(s, "group2/group3/group4/group5/inner", l, sizeof l);
  ck_assert_ptr_null(strstr(l, "c/"));
  /* Metadata byte-identical to the snapshot's, chunks by kind. */
  uint8_t *p;
  size_t n;
  ck_assert_int_eq(store_read_all(s, "group1/zarr.json", 1 << 20, &p, &n, &err),
                   0);
  ck_assert_ptr_nonnull(strstr((char *)p, "is a nice group"));
  free(p);
  ck_assert_int_eq(
      store_read_all(s, "group1/small_chunks/c/3", 1 << 20, &p, &n, &err), 0);
  ck_assert_uint_eq(n, 10);
  free(p);
  ck_assert_int_eq(
      store_read_all(s, "group1/small_chunks/c/4", 1 << 20, &p, &n, &err),
      -ENOENT);
  uint8_t *q;
  size_t qn;
  ck_assert_int_eq(
      store_read_all(s, "group1/big_chunks/c/0/1", 1 << 20, &p, &n, &err), 0);
  ck_assert_uint_eq(n, 19);
  ck_assert_int_eq(
      store_read_all(s, "group1/big_chunks/c/1/1", 1 << 20, &q, &qn, &err), 0);
  ck_assert_mem_eq(p, q, 19); /* every element 42.0 */
  free(p);
  free(q);
  /* The virtual chunk: never read without authorization. */
  ck_assert_int_eq(
      store_read_all(s, "group1/big_chunks/c/0/0", 1 << 20, &p, &n, &err),
      -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "s3://testbucket/can_read_old"));
  enum store_entry_type ty;
  uint64_t sz;
  ck_assert_int_eq(store_stat(s, "group1/big_chunks/c/0/0", &ty, &sz, &err), 0);
  ck_assert_uint_eq(sz, 19);
  ck_assert_int_eq(store_stat(s, "group1/big_chunks/c/0", &ty, &sz, &err), 0);
  ck_assert_int_eq(ty, STORE_DIR);
  ck_assert_int_eq(store_stat(s, "group1/big_chunks/c/2", &ty, &sz, &err),
                   -ENOENT);
  ck_assert_int_eq(store_stat(s, "group1/nope", &ty, &sz, &err), -ENOENT);
  ck_assert_int_eq(store_stat(s, "group1/big_chunks/c/0/01", &ty, &sz, &err),
                   -ENOENT);
  ck_assert_int_eq(store_stat(s, "group1/big_chunks/c/0/1/0", &ty, &sz, &err),
                   -ENOENT);
  store_free(s);
  /* main: five small chunks; a tag; a snapshot by id; unknown names. */
  s = open_snapshot_store(test_repos[_i], NULL, NULL);
  list_of(s, "group1/small_chunks/c", l, sizeof l);
  ck_assert_str_eq(l, "0=10,1=10,2=10,3=10,4=10");
  list_of(s, "", l, sizeof l);
  ck_assert_ptr_null(strstr(l, "group2"));
  store_free(s);
  s = open_snapshot_store(test_repos[_i], "it works!", NULL);
  list_of(s, "group1/small_chunks/c", l, sizeof l);
  ck_assert_str_eq(l, "0=10,1=10,2=10,3=10");
  store_free(s);
  struct store *files2 = open_fixture(test_repos[_i]);
  ck_assert_int_eq(store_open_icechunk(files2, "deleted", NULL, MAXDEC, 1 << 20,
                                       NULL, &s, &err),
                   -ENOENT);
  files2 = open_fixture(test_repos[_i]);
  ck_assert_int_eq(store_open_icechunk(files2, NULL, "00000000000000000000",
                                       MAXDEC, 1 << 20, NULL, &s, &err),
                   -ENOENT);
  ck_assert_ptr_nonnull(strstr(err.msg, "no snapshot"));
}
END_TEST

START_TEST(split_store) {
  static const char *repos[] = {"split-repo-v1", "split-repo-v2"};
  struct store *s = open_snapshot_store(repos[_i], NULL, NULL);
  char l[2048];
  list_of(s, "group1/split/c", l, sizeof l);
  ck_assert_str_eq(l, "0/,1/,2/,3/");
  list_of(s, "group1/split/c/3", l, sizeof l);
  ck_assert_str_eq(l, "0=23,1=23,2=23,3=23");
  uint8_t *p;
  size_t n;
  struct zerr err = {0};
  ck_assert_int_eq(
      store_read_all(s, "group1/split/c/2/3", 1 << 20, &p, &n, &err), 0);
  ck_assert_uint_eq(n, 25);
  free(p);
  store_free(s);
}
END_TEST

/* Read a key whole; its length, or a negative errno. */
static long read_len(struct store *s, const char *key) {
  uint8_t *p;
  size_t n;
  struct zerr err = {0};
  int rc = store_read_all(s, key, 1 << 20, &p, &n, &err);
  if (rc < 0)
    return rc;
  free(p);
  return (long)n;
}

START_TEST(shared_manifests) {
  /* 'fill data' and 'set virtual chunk' of test-repo-v1 name the same
   * manifest for small_chunks: two snapshot stores of one repository
   * load it once; with no budget it is loaded again at every use. */
  static const char *snaps[] = {"7XAF0Q905SH4938DN9CG", "NXH3M0HJ7EEJ0699DPP0"};
  for (int budget = 1; budget >= 0; budget--) {
    struct zerr err = {0};
    struct icechunk *ic;
    ck_assert_int_eq(icechunk_open(open_fixture("test-repo-v1"), MAXDEC,
                                   budget ? 1 << 20 : 0, NULL, &ic, &err),
                     0);
    struct store *s[2];
    for (int i = 0; i < 2; i++) {
      uint8_t id[12];
      ck_assert_int_eq(icechunk_resolve(ic, NULL, snaps[i], id, &err), 0);
      ck_assert_int_eq(icechunk_open_snapshot(ic, id, &s[i], &err), 0);
    }
    for (int i = 0; i < 2; i++)
      for (int k = 0; k < 2; k++)
        ck_assert_int_eq(read_len(s[i], "group1/small_chunks/c/2"), 10);
    ck_assert_uint_eq(icechunk_manifest_loads(ic), budget ? 1 : 4);
    icechunk_unref(ic); /* the stores keep it */
    ck_assert_int_eq(read_len(s[1], "group1/big_chunks/c/1/1"), 19);
    store_free(s[0]);
    store_free(s[1]);
  }
}
END_TEST

/* Append a history line to a growing text. */
static int log_cb(void *ud, const uint8_t id[12], uint64_t at,
                  const char *msg) {
  char *line = icefmt_log_line(id, at, msg);
  ck_assert_ptr_nonnull(line);
  strncat(ud, line, 4096 - strlen(ud) - 1);
  free(line);
  return 0;
}

START_TEST(histories) {
  /* The history of tag 'it works!', as the log files will show it. */
  struct zerr err = {0};
  struct icechunk *ic;
  ck_assert_int_eq(icechunk_open(open_fixture(test_repos[_i]), MAXDEC, 1 << 20,
                                 NULL, &ic, &err),
                   0);
  uint8_t id[12];
  ck_assert_int_eq(icechunk_resolve(ic, "it works!", NULL, id, &err), 0);
  char text[4096] = "";
  ck_assert_int_eq(icechunk_history(ic, id, log_cb, text, &err), 0);
  int lines = 0;
  for (const char *p = text; (p = strchr(p, '\n')); p++)
    lines++;
  ck_assert_int_eq(lines, 5);
  ck_assert_ptr_nonnull(strstr(text, "\tdelete a chunk\n"));
  ck_assert_ptr_nonnull(strstr(text, "\tRepository initialized\n"));
  if (_i != 1) /* v1 and its migration keep the times Icechunk 1 wrote */
    ck_assert_ptr_nonnull(strstr(
        text, "4QF8JA0YPDN51MHSSYVG\t2025-02-19T21:11:56.023456Z\tdelete"));
  icechunk_unref(ic);
  char when[32];
  icefmt_time_iso(0, when);
  ck_assert_str_eq(when, "1970-01-01T00:00:00.000000Z");
  static const uint8_t z[12];
  char *line = icefmt_log_line(z, 1000001, "two\nlines\tand a tab");
  ck_assert_str_eq(line, "00000000000000000000\t1970-01-01T00:00:01.000001Z"
                         "\ttwo lines and a tab\n");
  free(line);
}
END_TEST

/* Count snapshots. */
static int count_snap(void *ud, const uint8_t id[12], uint64_t at,
                      const char *msg) {
  ++*(int *)ud;
  return 0;
}

START_TEST(all_snapshots) {
  static const char *repos[] = {"test-repo-v1", "test-repo-v2",
                                "test-repo-v2-migrated", "split-repo-v1",
                                "split-repo-v2"};
  static const int want[] = {6, 6, 6, 5, 5};
  struct zerr err = {0};
  struct icechunk *ic;
  ck_assert_int_eq(
      icechunk_open(open_fixture(repos[_i]), MAXDEC, 1 << 20, NULL, &ic, &err),
      0);
  int n = 0;
  ck_assert_msg(icechunk_snapshots(ic, count_snap, &n, &err) == 0, "%s",
                err.msg);
  ck_assert_int_eq(n, want[_i]);
  icechunk_unref(ic);
}
END_TEST

/* Damage every file under dir of fixture repo: truncations and flipped
 * bytes of the decompressed flatbuffer, re-wrapped uncompressed. */
static void damage_dir(const char *repo, const char *dir, enum icefmt_type t) {
  char path[4096];
  snprintf(path, sizeof path, "%s/icechunk/%s", testutil_fixtures(), repo);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(path, &s, &err), 0);
  struct names ns = {.n = 0};
  if (!strcmp(dir, "")) {
    snprintf(ns.v[0], 64, "repo");
    ns.n = 1;
  } else {
    ck_assert_int_ge(store_list(s, dir, collect, &ns, &err), 0);
  }
  for (int i = 0; i < ns.n; i++) {
    char key[160];
    snprintf(key, sizeof key, "%s%s%s", dir, *dir ? "/" : "", ns.v[i]);
    uint8_t *raw, *fb;
    size_t n, len;
    ck_assert_int_eq(store_read_all(s, key, MAXDEC, &raw, &n, &err), 0);
    ck_assert_msg(icefmt_decode(raw, n, t, MAXDEC, &fb, &len, NULL, &err) == 0,
                  "%s: %s", key, err.msg);
    for (size_t cut = 0; cut < n - ICEFMT_HEADER_LEN; cut += 1 + n / 64)
      parse_any(raw, ICEFMT_HEADER_LEN + cut, t); /* truncated zstd */
    for (size_t k = 0; k < len; k += 1 + len / 200) {
      for (int v = 0; v < 3; v++) {
        uint8_t *copy = malloc(len);
        memcpy(copy, fb, len);
        copy[k] = v == 0 ? 0xff : v == 1 ? 0 : copy[k] ^ 0x80;
        size_t flen;
        uint8_t *f = make_file(2, t, 0, copy, len, &flen);
        parse_any(f, flen, t);
        free(f);
        free(copy);
      }
    }
    free(fb);
    free(raw);
  }
  store_free(s);
}

START_TEST(damaged_files) {
  damage_dir("test-repo-v2", "", ICEFMT_REPO);
  damage_dir("test-repo-v2", "snapshots", ICEFMT_SNAPSHOT);
  damage_dir("test-repo-v2", "manifests", ICEFMT_MANIFEST);
  damage_dir("test-repo-v1", "snapshots", ICEFMT_SNAPSHOT);
  damage_dir("test-repo-v1", "manifests", ICEFMT_MANIFEST);
}
END_TEST

/* The containers of a config.yaml r (cleared first). */
static void yaml_load(struct icefmt_repo *r, const char *yaml) {
  struct zerr err = {0};
  icefmt_containers_free(r);
  ck_assert_int_eq(icefmt_config_yaml(yaml, strlen(yaml), r, &err), 0);
}

START_TEST(container_configs) {
  struct icefmt_repo r = {0};
  /* Icechunk's block style: a map of containers, each store a tag */
  yaml_load(&r, "inline_chunk_threshold_bytes: 12\n"
                "virtual_chunk_containers:\n"
                "  tigris:\n    name: tigris\n    url_prefix: tigris\n"
                "    store: !tigris\n      region: null\n"
                "      endpoint_url: https://fly.storage.tigris.dev\n"
                "      anonymous: false\n"
                "  file:\n    url_prefix: file\n"
                "    store: !local_file_system ''\n"
                "  gcs:\n    url_prefix: gcs\n    store: !gcs {}\n"
                "  s3:\n    name: s3\n    url_prefix: s3://testbucket\n"
                "    store: !s3_compatible\n      region: us-east-1\n"
                "      endpoint_url: \"http://localhost:4200\"\n"
                "      anonymous: true\n      force_path_style: true\n"
                "  s3sub:\n    url_prefix: s3://testbucket/sub/\n"
                "    store: !S3\n      region: eu-west-3\n"
                "manifest: null\n"
                "url_prefix: s3://not-a-container\n");
  ck_assert_uint_eq(r.ncontainers, 5);
  ck_assert_str_eq(r.containers[0], "tigris");
  ck_assert_int_eq(r.stores[0].kind, ICEFMT_VK_S3);
  ck_assert_ptr_null(r.stores[0].region);
  ck_assert_str_eq(r.stores[0].endpoint, "https://fly.storage.tigris.dev");
  ck_assert_int_eq(r.stores[1].kind, ICEFMT_VK_LOCAL);
  ck_assert_int_eq(r.stores[2].kind, ICEFMT_VK_OTHER);
  ck_assert_str_eq(r.containers[3], "s3://testbucket");
  ck_assert_str_eq(r.stores[3].endpoint, "http://localhost:4200");
  ck_assert_str_eq(r.stores[3].region, "us-east-1");
  ck_assert_int_eq(r.stores[3].anonymous, 1);
  ck_assert_int_eq(r.stores[3].force_path_style, 1);
  ck_assert_str_eq(r.stores[4].region, "eu-west-3");
  ck_assert_ptr_null(r.stores[4].endpoint);
  /* the longest prefix wins, as in Icechunk */
  ck_assert_int_eq(icefmt_container_of(&r, "s3://testbucket/sub/x"), 4);
  ck_assert_int_eq(icefmt_container_of(&r, "s3://testbucket/x"), 3);
  ck_assert_int_eq(icefmt_container_of(&r, "http://elsewhere/x"), -1);
  /* older writers: a list of containers */
  yaml_load(&r, "virtual_chunk_containers:\n"
                "- name: s3\n  url_prefix: s3://\n  store: !S3Compatible\n"
                "    endpoint_url: https://minio.example:9000/\n"
                "- name: h\n  url_prefix: 'https://data.example/'\n"
                "  store: !http {}\n"
                "other: 1\n");
  ck_assert_uint_eq(r.ncontainers, 2);
  ck_assert_str_eq(r.containers[0], "s3://");
  ck_assert_int_eq(r.stores[0].kind, ICEFMT_VK_S3);
  ck_assert_str_eq(r.stores[0].endpoint, "https://minio.example:9000/");
  ck_assert_str_eq(r.containers[1], "https://data.example/");
  ck_assert_int_eq(r.stores[1].kind, ICEFMT_VK_HTTP);
  /* hostile settings make a container unusable, never another server */
  yaml_load(&r, "virtual_chunk_containers:\n"
                "  a:\n    url_prefix: s3://a/\n    store: !s3\n"
                "      endpoint_url: file:///etc/passwd\n"
                "  b:\n    url_prefix: s3://b/\n    store: !s3\n"
                "      region: \"us-east-1\\r\\nX-Evil: 1\"\n"
                "  c:\n    url_prefix: s3://c/\n    store: !s3\n"
                "      endpoint_url: http://a b/\n"
                "  d:\n    store: !s3\n      endpoint_url: http://nowhere/\n"
                "  e:\n    url_prefix: ''\n"
                "  f:\n    url_prefix: null\n");
  ck_assert_uint_eq(r.ncontainers, 3);
  for (size_t i = 0; i < 3; i++) {
    ck_assert_ptr_nonnull(r.stores[i].unusable);
    ck_assert_ptr_null(r.stores[i].endpoint);
    ck_assert_ptr_null(r.stores[i].region);
  }
  /* a long endpoint, deep indentation, no newline at the end, binary */
  char big[ICEFMT_ENDPOINT_MAX + 200];
  int n = snprintf(big, sizeof big,
                   "virtual_chunk_containers:\n  a:\n    url_prefix: s3://a/\n"
                   "    store: !s3\n      endpoint_url: http://");
  memset(big + n, 'x', sizeof big - (size_t)n - 1);
  big[sizeof big - 1] = '\0';
  yaml_load(&r, big);
  ck_assert_uint_eq(r.ncontainers, 1);
  ck_assert_ptr_nonnull(r.stores[0].unusable);
  const char junk[] = "virtual_chunk_containers:\n\x01\x02:\n  \xff: !\n"
                      "      :\n -\n- \n-: :\n  url_prefix:\n";
  struct zerr err = {0};
  icefmt_containers_free(&r);
  ck_assert_int_eq(icefmt_config_yaml(junk, sizeof junk - 1, &r, &err), 0);
  ck_assert_uint_eq(r.ncontainers, 0);
  icefmt_containers_free(&r);
}
END_TEST

START_TEST(checksums) {
  int64_t t;
  char buf[32];
  /* the three HTTP date forms */
  ck_assert_int_eq(rversion_parse_date("Sun, 06 Nov 1994 08:49:37 GMT", &t), 0);
  ck_assert_int_eq(t, 784111777);
  ck_assert_int_eq(rversion_parse_date("Sunday, 06-Nov-94 08:49:37 GMT", &t),
                   0);
  ck_assert_int_eq(t, 784111777);
  ck_assert_int_eq(rversion_parse_date("Sun Nov  6 08:49:37 1994", &t), 0);
  ck_assert_int_eq(t, 784111777);
  rversion_format_date(784111777, buf);
  ck_assert_str_eq(buf, "Sun, 06 Nov 1994 08:49:37 GMT");
  /* the fixture's last-modified (u32 seconds, year 2106) round trips */
  rversion_format_date(4294111232u, buf);
  ck_assert_int_eq(rversion_parse_date(buf, &t), 0);
  ck_assert_int_eq(t, 4294111232);
  rversion_format_date(0, buf);
  ck_assert_str_eq(buf, "Thu, 01 Jan 1970 00:00:00 GMT");
  const char *bad[] = {"",
                       "yesterday",
                       "Sun, 06 Nov 1994 08:49:37 CET",
                       "Sun, 32 Nov 1994 08:49:37 GMT",
                       "Sun, 06 Foo 1994 08:49:37 GMT",
                       "Sun, 06 Nov 1994 25:49:37 GMT",
                       "Sun, 06 Nov 1969 08:49:37 GMT",
                       "Sun, 06 Nov 1994",
                       ",,,,"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    ck_assert_msg(rversion_parse_date(bad[i], &t) == -EINVAL, "%s", bad[i]);
  /* ETags: quotes aside, weak only equal to weak */
  ck_assert(rversion_etag_same("\"abc\"", "abc"));
  ck_assert(rversion_etag_same("abc", "abc"));
  ck_assert(!rversion_etag_same("\"abc\"", "\"abd\""));
  ck_assert(!rversion_etag_same("W/\"abc\"", "\"abc\""));
  ck_assert(rversion_etag_same("W/\"abc\"", "W/abc"));
  ck_assert(!rversion_etag_same("\"abc\"", ""));
  ck_assert(rversion_etag_same("\"\"", ""));
  /* pinning: an ETag that cannot go in a header is refused (no request
   * is made: the window is given) */
  struct remote_config rc;
  remote_config_default(&rc);
  struct remote *r;
  struct zerr err = {0};
  ck_assert_int_eq(remote_new(&rc, NULL, &r, &err), 0);
  char longtag[400];
  memset(longtag, 'a', sizeof longtag - 1);
  longtag[sizeof longtag - 1] = '\0';
  const char *hostile[] = {"\"a\r\nX-Evil: 1\"", "a\tb", "\"a\"b\"", longtag,
                           "W/\"\x7f\""};
  for (size_t i = 0; i < sizeof hostile / sizeof *hostile; i++) {
    struct bytesrc *b;
    ck_assert_int_eq(
        remote_open(r, "http://127.0.0.1:9/x", 0, 4, 0, NULL, &b, &err), 0);
    ck_assert_int_eq(rversion_pin(b, hostile[i], 0, &err), -EINVAL);
    bytesrc_unref(b);
  }
  struct bytesrc *b;
  ck_assert_int_eq(
      remote_open(r, "http://127.0.0.1:9/x", 0, 4, 0, NULL, &b, &err), 0);
  ck_assert_int_eq(rversion_pin(b, "", 0, &err), 0);
  ck_assert_int_eq(rversion_pin(b, NULL, 0, &err), 0);
  ck_assert_int_eq(
      rversion_pin(b, "\"d41d8cd98f00b204e9800998ecf8427e\"", 0, &err), 0);
  bytesrc_unref(b);
  ck_assert_int_eq(
      remote_open(r, "http://127.0.0.1:9/x", 0, 4, 0, NULL, &b, &err), 0);
  ck_assert_int_eq(rversion_pin(b, NULL, 4294111232u, &err), 0);
  bytesrc_unref(b);
  remote_free(r);
}
END_TEST

/* The request URL of s3://bkt/k under settings c (malloc'd). */
static char *s3_url_of(const struct s3_config *c) {
  char *u = NULL;
  struct zerr err = {0};
  ck_assert_int_eq(s3_object_url(c, "bkt", "k", &u, &err), 0);
  return u;
}

START_TEST(container_s3_settings) {
  const char *vars[] = {"AWS_ENDPOINT_URL_S3",  "AWS_ENDPOINT_URL",
                        "AWS_REGION",           "AWS_DEFAULT_REGION",
                        "AWS_PROFILE",          "AWS_ACCESS_KEY_ID",
                        "AWS_SECRET_ACCESS_KEY"};
  for (size_t i = 0; i < sizeof vars / sizeof *vars; i++)
    unsetenv(vars[i]);
  setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent", 1);
  setenv("AWS_CONFIG_FILE", "/nonexistent", 1);
  setenv("AWS_ACCESS_KEY_ID", "AKID", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "SECRET", 1);
  struct zerr err = {0};
  struct s3_options none = {0}, named = {0};
  named.endpoint = "http://named:1";
  named.region = "ap-south-1";
  struct s3_config *base, *nbase, *c;
  ck_assert_int_eq(s3_config_load(&none, &base, &err), 0);
  ck_assert_int_eq(s3_config_load(&named, &nbase, &err), 0);
  /* the container's endpoint, with the mount's credentials */
  ck_assert_int_eq(
      s3_config_derive(base, "http://ctr:9/", "eu-west-3", 0, &c, &err), 0);
  char *u = s3_url_of(c);
  ck_assert_str_eq(u, "http://ctr:9/bkt/k");
  free(u);
  ck_assert(!s3_is_anonymous(c));
  s3_config_free(c);
  /* anonymous: unsigned whatever the environment holds */
  ck_assert_int_eq(s3_config_derive(base, "http://ctr:9", NULL, 1, &c, &err),
                   0);
  ck_assert(s3_is_anonymous(c));
  s3_config_free(c);
  /* an endpoint given as an option wins */
  ck_assert_int_eq(
      s3_config_derive(nbase, "http://ctr:9", "eu-west-3", 0, &c, &err), 0);
  u = s3_url_of(c);
  ck_assert_str_eq(u, "http://named:1/bkt/k");
  free(u);
  s3_config_free(c);
  /* no endpoint anywhere: AWS, virtual-hosted */
  ck_assert_int_eq(s3_config_derive(base, NULL, "eu-west-3", 0, &c, &err), 0);
  u = s3_url_of(c);
  ck_assert_str_eq(u, "https://bkt.s3.eu-west-3.amazonaws.com/k");
  free(u);
  s3_config_free(c);
  ck_assert_int_eq(s3_config_derive(base, "file:///etc", NULL, 0, &c, &err),
                   -EINVAL);
  s3_config_free(base);
  s3_config_free(nbase);
  unsetenv("AWS_ACCESS_KEY_ID");
  unsetenv("AWS_SECRET_ACCESS_KEY");
}
END_TEST

/* ---- hostile repositories (issue 32 items 10 and 11) ---- */

/* An id set: 200,000 ids, each added once; ids differing in one byte, the
 * all-zero id; every one found again. */
START_TEST(id_sets) {
  struct icefmt_idset s = {0};
  uint8_t id[12] = {0};
  for (uint32_t i = 0; i < 200000; i++) {
    memcpy(id + 8, &i, 4);
    ck_assert_int_eq(icefmt_idset_add(&s, id), 1);
  }
  for (uint32_t i = 0; i < 200000; i += 7) {
    memcpy(id + 8, &i, 4);
    ck_assert_int_eq(icefmt_idset_add(&s, id), 0);
  }
  ck_assert_uint_eq(s.n, 200000);
  icefmt_idset_free(&s);
  ck_assert_uint_eq(s.n, 0);
  icefmt_idset_free(&s);
  memset(id, 0, 12);
  ck_assert_int_eq(icefmt_idset_add(&s, id), 1);
  ck_assert_int_eq(icefmt_idset_add(&s, id), 0);
  icefmt_idset_free(&s);
}
END_TEST

/* A long commit message is cut in its history line, at a character
 * boundary, and says so with "...". */
START_TEST(log_line_cut) {
  size_t n = ICEFMT_LOG_MESSAGE_MAX + 1001;
  char *msg = malloc(n + 1);
  msg[0] = 'x'; /* then two-byte characters: the cut falls inside one */
  for (size_t i = 1; i + 1 < n; i += 2)
    memcpy(msg + i, "\xc3\xa9", 2);
  msg[n - (n % 2 == 0)] = '\0';
  static const uint8_t z[12];
  char *line = icefmt_log_line(z, 0, msg);
  const char *m = strrchr(line, '\t') + 1;
  size_t ml = strlen(m);
  ck_assert_uint_le(ml, ICEFMT_LOG_MESSAGE_MAX + 4);
  ck_assert_str_eq(m + ml - 4, "...\n");
  ck_assert_int_eq(memcmp(m, msg, ml - 4), 0);
  ck_assert_int_ne((unsigned char)m[ml - 5], 0xc3); /* no half character */
  free(line);
  msg[100] = '\0';
  line = icefmt_log_line(z, 0, msg);
  ck_assert_ptr_null(strstr(line, "..."));
  free(line);
  free(msg);
}
END_TEST

/* Write text to dir/rel, making its directory. */
static void put_ref(const char *dir, const char *rel, const char *text) {
  char path[4096], cmd[8400];
  snprintf(path, sizeof path, "%s/%s", dir, rel);
  snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
  ck_assert_int_eq(system(cmd), 0);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

/* A writable copy of fixture repository name in a new directory dir (a
 * mkdtemp template). */
static void copy_fixture(const char *name, char *dir) {
  char cmd[8400];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(cmd, sizeof cmd,
           "cp -r '%s/icechunk/%s/.' '%s' && chmod -R u+w '%s'",
           testutil_fixtures(), name, dir, dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Is there a note in r's skipped list containing both a and b? */
static int skipped_has(const struct icefmt_repo *r, const char *a,
                       const char *b) {
  for (size_t i = 0; i < r->nskipped && i < ICEFMT_SKIPPED_MAX; i++)
    if (strstr(r->skipped[i], a) && strstr(r->skipped[i], b))
      return 1;
  return 0;
}

/* A copy of test-repo-v1 with refs no reader can use beside the good
 * ones: ref.json empty, not JSON, not an id; refs named '', '.', '..'.
 * Each is left out with a note and the others are served; then main
 * itself broken leaves the repository open on its other refs. */
START_TEST(bad_refs_spec1) {
  char dir[] = "/tmp/zarrfs-badrefs-XXXXXX", cmd[4300];
  copy_fixture("test-repo-v1", dir);
  const char *good = "{\"snapshot\":\"1CECHNKREP0F1RSTCMT0\"}";
  put_ref(dir, "refs/tag.empty/ref.json", "");
  put_ref(dir, "refs/tag.garbage/ref.json", "garbage{");
  put_ref(dir, "refs/tag.badid/ref.json", "{\"snapshot\":\"nope\"}");
  put_ref(dir, "refs/tag../ref.json", good);
  put_ref(dir, "refs/tag.../ref.json", good);
  put_ref(dir, "refs/branch./ref.json", good);
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct icefmt_repo *r;
  ck_assert_msg(icefmt_repo_load(s, MAXDEC, &r, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(r->nbranches, 2);
  ck_assert_str_eq(r->branches[0].name, "main");
  ck_assert_uint_eq(r->ntags, 2);
  ck_assert_str_eq(r->tags[0].name, "it also works!");
  ck_assert_str_eq(r->tags[1].name, "it works!");
  ck_assert_uint_eq(r->nskipped, 6);
  ck_assert(skipped_has(r, "tag 'empty'", "not JSON"));
  ck_assert(skipped_has(r, "tag 'garbage'", "refs/tag.garbage/ref.json"));
  ck_assert(skipped_has(r, "tag 'badid'", "no snapshot id"));
  ck_assert(skipped_has(r, "tag '.'", "no file system can name it"));
  ck_assert(skipped_has(r, "tag '..'", "no file system can name it"));
  ck_assert(skipped_has(r, "branch ''", "no file system can name it"));
  icefmt_repo_free(r);
  /* main broken: the repository still opens on its other refs */
  put_ref(dir, "refs/branch.main/ref.json", "{");
  struct icechunk *ic;
  ck_assert_msg(icechunk_open(s, MAXDEC, 1 << 20, NULL, &ic, &err) == 0, "%s",
                err.msg);
  r = (struct icefmt_repo *)icechunk_refs(ic);
  ck_assert(skipped_has(r, "branch 'main'", "refs/branch.main/ref.json"));
  uint8_t id[12];
  ck_assert_int_eq(icechunk_resolve(ic, NULL, NULL, id, &err), -ENOENT);
  ck_assert_int_eq(icechunk_resolve(ic, "my-branch", NULL, id, &err), 0);
  struct store *st;
  ck_assert_msg(icechunk_open_snapshot(ic, id, &st, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(read_len(st, "group1/small_chunks/c/0"), 10);
  store_free(st);
  icechunk_unref(ic);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A ref naming a snapshot that is not there: left out at open from a
 * local store; from a remote one, its history is ENOENT and the list of
 * every snapshot keeps the others and says which ref it left out; a
 * parent that is not there ends a history early. */
START_TEST(missing_snapshots) {
  char dir[] = "/tmp/zarrfs-missing-XXXXXX", cmd[4300];
  copy_fixture("test-repo-v1", dir);
  put_ref(dir, "refs/tag.missing/ref.json",
          "{\"snapshot\":\"00000000000000000000\"}");
  struct store *s;
  struct zerr err = {0};
  ck_assert_int_eq(store_open_local(dir, &s, &err), 0);
  struct icefmt_repo *r;
  ck_assert_msg(icefmt_repo_load(s, MAXDEC, &r, &err) == 0, "%s", err.msg);
  ck_assert(skipped_has(r, "tag 'missing'", "00000000000000000000"));
  icefmt_repo_free(r);
  /* a remote store is not asked at open (a request per ref): what the
   * ref names is found missing when it is used */
  s->remote = 1;
  struct icechunk *ic;
  ck_assert_msg(icechunk_open(s, MAXDEC, 1 << 20, NULL, &ic, &err) == 0, "%s",
                err.msg);
  uint8_t id[12];
  ck_assert_int_eq(icechunk_resolve(ic, "missing", NULL, id, &err), 0);
  char text[4096] = "";
  ck_assert_int_eq(icechunk_history(ic, id, log_cb, text, &err), -ENOENT);
  int n = 0;
  ck_assert_int_eq(icechunk_snapshots(ic, count_snap, &n, &err),
                   ICECHUNK_PARTIAL);
  ck_assert_int_eq(n, 6);
  ck_assert_ptr_nonnull(strstr(err.msg, "tag 'missing'"));
  /* "fill data" gone: tag "it works!" shows the two snapshots above it */
  ck_assert_int_eq(icechunk_resolve(ic, "it works!", NULL, id, &err), 0);
  ck_assert_int_eq(icechunk_history(ic, id, log_cb, text, &err), 0);
  const char *fill = strstr(text, "\tfill data\n");
  ck_assert_ptr_nonnull(fill);
  while (fill > text && fill[-1] != '\n')
    fill--;
  char path[4200];
  snprintf(path, sizeof path, "%s/snapshots/%.20s", dir, fill);
  ck_assert_int_eq(unlink(path), 0);
  text[0] = '\0';
  ck_assert_int_eq(icechunk_history(ic, id, log_cb, text, &err),
                   ICECHUNK_PARTIAL);
  ck_assert_ptr_nonnull(strstr(err.msg, "a parent that cannot be read"));
  ck_assert_ptr_nonnull(strstr(text, "\tdelete a chunk\n"));
  ck_assert_ptr_nonnull(strstr(text, "\tset virtual chunk\n"));
  ck_assert_ptr_null(strstr(text, "\tempty structure\n"));
  icechunk_unref(ic);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("icechunk");
  TCase *tc = tcase_create("format");
  tcase_add_test(tc, ids);
  tcase_add_test(tc, headers_and_payloads);
  tcase_add_test(tc, ref_json_and_config);
  tcase_add_test(tc, container_configs);
  tcase_add_test(tc, checksums);
  tcase_add_test(tc, container_s3_settings);
  tcase_add_test(tc, id_sets);
  tcase_add_test(tc, log_line_cut);
  suite_add_tcase(s, tc);
  TCase *fx = tcase_create("fixtures");
  tcase_set_timeout(fx, 120);
  tcase_add_loop_test(fx, refs_and_histories, 0, 3);
  tcase_add_loop_test(fx, trees_and_chunks, 0, 3);
  tcase_add_loop_test(fx, split_manifests, 0, 2);
  tcase_add_test(fx, damaged_files);
  tcase_add_loop_test(fx, snapshot_store, 0, 3);
  tcase_add_loop_test(fx, split_store, 0, 2);
  tcase_add_test(fx, shared_manifests);
  tcase_add_loop_test(fx, histories, 0, 3);
  tcase_add_loop_test(fx, all_snapshots, 0, 5);
  tcase_add_test(fx, bad_refs_spec1);
  tcase_add_test(fx, missing_snapshots);
  testutil_add_fixture_tcase(s, fx, "check_icechunk");
  return testutil_run(s);
}
