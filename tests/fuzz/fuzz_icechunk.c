/* fuzz_icechunk.c - Icechunk metadata files
 * (src/store/icechunk/icechunk_fmt.c): the 39-byte header, the bounded zstd
 * payload and the verified flatbuffers reader under the parsers of the repo
 * info file, snapshots and manifests, then what the store asks of them (every
 * chunk reference of every array of a manifest, looked up by its coordinates
 * and at a few others). Input: one whole file, dispatched on its header's
 * file type (so both compressed and uncompressed payloads are reached). */
#include "fuzz.h"

#include <stdlib.h>
#include <string.h>

#include "../../src/store/icechunk/icechunk_fmt.h"

/* A visited reference: look it up by its own coordinates. */
struct walk {
  const struct icefmt_manifest *m;
  const uint8_t *node;
  struct icefmt_chunk *c;
  int n;
};

/* Find each listed reference again (at most 64 per array). */
static int visit(void *ud, const uint32_t *coord, uint32_t ndim,
                 uint64_t size) {
  (void)size;
  struct walk *w = ud;
  struct zerr err = {0};
  icefmt_manifest_find(w->m, w->node, coord, ndim, w->c, &err);
  return ++w->n >= 64;
}

/* Every array of a manifest. */
static void manifest_walk(const struct icefmt_manifest *m) {
  struct icefmt_chunk *c = malloc(sizeof *c);
  if (!c)
    return;
  uint32_t n = icefmt_manifest_narrays(m);
  for (uint32_t i = 0; i < n && i < 16; i++) {
    struct walk w = {m, icefmt_manifest_node(m, i), c, 0};
    struct zerr err = {0};
    icefmt_manifest_each(m, w.node, visit, &w, &err);
    static const uint32_t far[3] = {0, 1, 4000000000u};
    icefmt_manifest_find(m, w.node, far, 3, c, &err);
    icefmt_manifest_find(m, w.node, far, 0, c, &err);
  }
  free(c);
}

/* One metadata file. */
FUZZ_TARGET(icechunk) {
  struct zerr err = {0};
  if (size < ICEFMT_HEADER_LEN)
    return 0;
  enum icefmt_type t = (enum icefmt_type)data[37];
  uint8_t *fb;
  size_t len;
  if (icefmt_decode(data, size, t, FUZZ_MAX_DECODED, &fb, &len, NULL, &err) < 0)
    return 0;
  if (t == ICEFMT_MANIFEST) {
    struct icefmt_manifest *m;
    if (icefmt_manifest_parse(fb, len, &m, &err) == 0) { /* takes fb */
      manifest_walk(m);
      icefmt_manifest_free(m);
    }
    return 0;
  }
  if (t == ICEFMT_SNAPSHOT) {
    struct icefmt_snapshot *sn;
    if (icefmt_snapshot_parse(fb, len, &sn, &err) == 0)
      icefmt_snapshot_free(sn);
  } else if (t == ICEFMT_REPO) {
    struct icefmt_repo *r;
    if (icefmt_repo_parse(fb, len, &r, &err) == 0) {
      uint8_t id[12];
      icefmt_repo_ref(r, NULL, "main", 0, id, &err);
      icefmt_repo_ref(r, NULL, "it works!", 1, id, &err);
      icefmt_repo_free(r);
    }
  }
  free(fb);
  return 0;
}
