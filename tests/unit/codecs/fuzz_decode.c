/* fuzz_decode.c - random-input robustness for the two parsers that see
 * untrusted bytes: the codec chains (chunk bytes) and zmeta_parse
 * (zarr.json). Each input must give a result or an error, never a crash,
 * a hang or a sanitizer report (run under ASan+UBSan in CI). Seeded and
 * deterministic; ZARRFS_FUZZ_ITERS sets the iterations per target. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../codecs/chain.h"
#include "../../../src/zarr/meta.h"

static const char *const chains[] = {
    "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
    "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
    "\"data_codecs\":[{\"name\":\"bytes\"}],\"index_data_type\":\"uint64\","
    "\"index_location\":\"start\"}}]",
    "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
    "\"name\":\"bytes\",\"configuration\":{\"endian\":\"big\"}}],"
    "\"data_codecs\":[{\"name\":\"bytes\"},{\"name\":\"zstd\"}],"
    "\"index_data_type\":\"uint32\",\"index_location\":\"end\"}}]",
    "[{\"name\":\"zarrs.vlen\",\"configuration\":{\"index_codecs\":[{"
    "\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}},{"
    "\"name\":\"crc32c\"}],\"data_codecs\":[{\"name\":\"bytes\"},{\"name\":"
    "\"gzip\"}],\"index_data_type\":\"uint64\",\"index_location\":\"start\"}}"
    ",{\"name\":\"zstd\"}]",
    "[{\"name\":\"vlen-utf8\"},{\"name\":\"gzip\"}]",
    "[{\"name\":\"vlen-bytes\"}]",
    "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2],"
    "\"codecs\":[{\"name\":\"vlen-utf8\"}],\"index_codecs\":[{\"name\":"
    "\"bytes\",\"configuration\":{\"endian\":\"little\"}}],"
    "\"index_location\":\"start\"}}]",
};

/* xorshift: deterministic and independent of libc's rand. */
static uint64_t next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random chunks (with plausible length words) through every chain. */
static int fuzz_chains(long iters) {
  uint64_t r = 88172645463325252ull;
  for (size_t c = 0; c < sizeof chains / sizeof *chains; c++) {
    json_t *j = json_loads(chains[c], 0, NULL);
    struct codec_spec s;
    memset(&s, 0, sizeof s);
    s.ndim = 1;
    s.shape[0] = s.nelem = 7;
    s.dtype = dtype_of(DT_STRING);
    s.fill = (const uint8_t *)"";
    struct chain *ch;
    struct zerr err = {0};
    if (!j || chain_build(j, &s, &ch, &err) < 0) {
      fprintf(stderr, "fuzz_decode: chain %zu: %s\n", c, err.msg);
      return 1;
    }
    for (long it = 0; it < iters; it++) {
      uint8_t buf[300];
      size_t n = next(&r) % sizeof buf;
      for (size_t i = 0; i < n; i++)
        buf[i] = next(&r) % 4 ? (uint8_t)next(&r) : 0;
      if (n >= 8 && next(&r) % 2) {
        uint64_t L = next(&r) % 64;
        memcpy(next(&r) % 2 ? buf : buf + n - 8, &L, 8);
      }
      struct bytesrc *b = bytesrc_from_static(buf, n);
      struct codec_env env = {1 << 20, NULL, 0};
      struct abytes *a = NULL;
      if (chain_decode(ch, &s, b, &env, &a, &err) == 0) {
        struct bytesrc *d;
        if (!a->elsize && chain_load_data(a, &env, &d, &err) == 0)
          bytesrc_unref(d);
        abytes_free(a);
      }
      bytesrc_unref(b);
    }
    chain_free(ch);
    json_decref(j);
  }
  return 0;
}

/* Random shards (index at the end, no checksum, so the entries are what
 * varies) through the one-inner-chunk-at-a-time API the engine uses. */
static int fuzz_shards(long iters) {
  static const char codecs[] =
      "[{\"name\":\"sharding_indexed\",\"configuration\":{\"chunk_shape\":[2],"
      "\"codecs\":[{\"name\":\"vlen-utf8\"}],\"index_codecs\":[{\"name\":"
      "\"bytes\",\"configuration\":{\"endian\":\"little\"}}]}}]";
  uint64_t r = 2463534242ull;
  json_t *j = json_loads(codecs, 0, NULL);
  struct codec_spec s;
  memset(&s, 0, sizeof s);
  s.ndim = 1;
  s.shape[0] = s.nelem = 8;
  s.dtype = dtype_of(DT_STRING);
  s.fill = (const uint8_t *)"";
  struct chain *ch;
  struct zerr err = {0};
  uint64_t inner[ZMETA_MAX_DIMS];
  if (!j || chain_build(j, &s, &ch, &err) < 0 || !chain_inner(ch, inner)) {
    fprintf(stderr, "fuzz_decode: shard chain: %s\n", err.msg);
    return 1;
  }
  for (long it = 0; it < iters; it++) {
    uint8_t buf[400];
    size_t n = 64 + next(&r) % (sizeof buf - 64);
    for (size_t i = 0; i < n; i++)
      buf[i] = next(&r) % 3 ? (uint8_t)next(&r) : 0;
    /* Mostly plausible entries: inside the shard, small, or empty. */
    for (int c = 0; c < 4; c++) {
      uint64_t e[2] = {next(&r) % n, next(&r) % 64};
      if (next(&r) % 5 == 0)
        e[0] = e[1] = UINT64_MAX;
      if (next(&r) % 4)
        memcpy(buf + n - 64 + 16 * c, e, 16);
    }
    struct bytesrc *b = bytesrc_from_static(buf, n);
    struct codec_env env = {1 << 20, NULL, 0};
    struct chain_index *index = NULL;
    if (chain_index_read(ch, &s, b, &env, &index, &err) == 0) {
      for (uint64_t c = 0; c < chain_index_count(index); c++) {
        struct abytes *a = NULL;
        if (chain_inner_decode(ch, &s, b, index, c, &env, &a, &err) == 0)
          abytes_free(a);
      }
      chain_index_free(index);
    }
    bytesrc_unref(b);
  }
  chain_free(ch);
  json_decref(j);
  return 0;
}

/* Mutated zarr.json documents through zmeta_parse and chain_build. */
static int fuzz_meta(long iters) {
  static const char base[] =
      "{\"zarr_format\":3,\"node_type\":\"array\",\"shape\":[10,7],"
      "\"data_type\":\"float64\",\"chunk_grid\":{\"name\":\"regular\","
      "\"configuration\":{\"chunk_shape\":[4,3]}},\"chunk_key_encoding\":{"
      "\"name\":\"default\",\"configuration\":{\"separator\":\".\"}},"
      "\"fill_value\":NaN,\"codecs\":[{\"name\":\"bytes\",\"configuration\":"
      "{\"endian\":\"big\"}},{\"name\":\"gzip\",\"configuration\":{\"level\":"
      "1}}]}";
  static const char alpha[] = "{}[]\":,0123456789-.eE aNInfy";
  uint64_t r = 1181783497276652981ull;
  size_t n = sizeof base - 1;
  for (long it = 0; it < iters; it++) {
    char buf[sizeof base];
    memcpy(buf, base, sizeof base);
    for (int k = 1 + (int)(next(&r) % 4); k > 0; k--)
      buf[next(&r) % n] = alpha[next(&r) % (sizeof alpha - 1)];
    struct zmeta *m = NULL;
    struct zerr err = {0};
    if (zmeta_parse(buf, n, &m, &err) < 0)
      continue;
    if (m->node == ZMETA_ARRAY) {
      struct codec_spec s;
      memset(&s, 0, sizeof s);
      s.ndim = m->ndim;
      memcpy(s.shape, m->chunk, sizeof m->chunk);
      s.nelem = m->chunk_nelem;
      s.dtype = m->dtype;
      s.fill = m->fill;
      s.fill_len = m->fill_len;
      struct chain *c;
      if (chain_build(m->codecs, &s, &c, &err) == 0)
        chain_free(c);
      char key[256];
      uint64_t idx[ZMETA_MAX_DIMS] = {0};
      if (m->nchunks > 0 && zmeta_chunk_key(m, idx, key, sizeof key) >= 0 &&
          zmeta_parse_chunk_key(m, key, idx) != 0) {
        fprintf(stderr, "fuzz_decode: key %s does not parse back\n", key);
        zmeta_free(m);
        return 1;
      }
    }
    zmeta_free(m);
  }
  return 0;
}

int main(void) {
  const char *env = getenv("ZARRFS_FUZZ_ITERS");
  long iters = env ? atol(env) : 20000;
  int failed = fuzz_chains(iters) + fuzz_shards(iters) + fuzz_meta(iters * 5);
  printf("%d passed, %d failed\n", 3 - failed, failed);
  return failed ? 1 : 0;
}
