/* vlen_interleaved.c - `vlen-utf8`, `vlen-bytes`, `vlen-array` and
 * `zarrs.vlen_v2`: four names for one numcodecs-compatible format,
 *   u32 LE count (== n) | n x ( u32 LE len | len bytes )
 * (see shared/reference/zarrs-vlen.md section 2.2).
 *
 * Lengths are interleaved with the data, so there is no way to find element
 * j without walking the ones before it: decoding loads the chunk and builds
 * a compact offsets + data pair that views can index directly. Behind a
 * codec that streams, the elements can also be read in order from the
 * stream (codec.h: elements as a stream) without holding the chunk. */
#include "abytes.h"
#include "codec.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "../src/util/buf.h"

/* The state is the codec's name, for messages; it is static, never freed. */

/* Shared create: configuration absent or {}, variable-length type. */
static int vli_create(const char *name, json_t *config,
                      const struct codec_spec *decoded, void **state,
                      struct zerr *err) {
  if (config && (!json_is_object(config) || json_object_size(config) != 0))
    return zerr_set(err, EIO, "%s: configuration must be empty", name);
  const struct dtype *dt = &decoded->dtype;
  if (!dtype_is_variable(dt))
    return zerr_set(err, dt->kind == DT_UNSUPPORTED ? ENOTSUP : EIO,
                    "%s: data type '%s' is not variable-length", name,
                    dt->name);
  *state = (void *)name;
  return 0;
}

/* Per-name wrappers, so messages say which name the metadata used. */
static int vli_create_utf8(json_t *c, const struct codec_spec *d, void **s,
                           struct zerr *e) {
  return vli_create("vlen-utf8", c, d, s, e);
}
static int vli_create_bytes(json_t *c, const struct codec_spec *d, void **s,
                            struct zerr *e) {
  return vli_create("vlen-bytes", c, d, s, e);
}
static int vli_create_array(json_t *c, const struct codec_spec *d, void **s,
                            struct zerr *e) {
  return vli_create("vlen-array", c, d, s, e);
}
static int vli_create_v2(json_t *c, const struct codec_spec *d, void **s,
                         struct zerr *e) {
  return vli_create("zarrs.vlen_v2", c, d, s, e);
}

/* Nothing to free: the state is a string literal. */
static void vli_destroy(void *state) { (void)state; }

/* Little-endian u32 at p. */
static uint32_t vli_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static int vli_compact(const char *name, const uint8_t *p, size_t size,
                       uint8_t **ownp, uint64_t n, const struct codec_env *env,
                       struct abytes *a, struct zerr *err);

/* Bytes of one HDF5 variable-length element as stored in a dataset's
 * chunk: the length (u32), then a global heap ID, the heap collection's
 * address (8 bytes, the usual size of offsets) and the object's index
 * (u32). The strings themselves live in the file's global heap. */
#define VLI_HDF5_REF 16

/* Does the chunk look like n HDF5 variable-length elements referenced by
 * byte range rather than inlined: exactly n heap IDs, each either empty
 * (all zero) or with a collection address (below 2^48) and an object
 * index (1..65535: a collection numbers its objects in 16 bits)? Only to
 * say why a chunk does not parse. */
static int vli_hdf5_refs(const uint8_t *p, size_t size, uint64_t n) {
  if (n == 0 || n > size / VLI_HDF5_REF || size != n * VLI_HDF5_REF)
    return 0;
  for (uint64_t i = 0; i < n; i++) {
    const uint8_t *e = p + i * VLI_HDF5_REF;
    uint64_t addr = vli_le32(e + 4) | (uint64_t)vli_le32(e + 8) << 32;
    uint32_t index = vli_le32(e + 12);
    if ((addr == 0) != (index == 0) || (index == 0 && vli_le32(e) != 0) ||
        addr >> 48 || index > 0xffff)
      return 0;
  }
  return 1;
}

/* Would the numcodecs layout fail on this chunk? Its lengths walked, no
 * byte copied. */
static int vli_walk_fails(const uint8_t *p, size_t size, uint64_t n) {
  if (vli_le32(p) != n)
    return 1;
  size_t pos = 4;
  for (uint64_t i = 0; i < n; i++) {
    if (size - pos < 4)
      return 1;
    uint32_t len = vli_le32(p + pos);
    pos += 4;
    if (len > size - pos)
      return 1;
    pos += len;
  }
  return 0;
}

/* The chunk's head checked before any element: the count is the
 * chunk's, each element has room for its length word, and a chunk of
 * HDF5 heap references says so rather than which header failed. */
static int vli_check_head(const char *name, const uint8_t *p, size_t size,
                          uint64_t n, struct zerr *err) {
  if (size < 4)
    return zerr_set(err, EIO,
                    "%s: chunk of %zu bytes is too short for the 4-byte "
                    "header",
                    name, size);
  /* HDF5 variable-length strings referenced where the dataset stores
   * them (kerchunk inlines them instead): say so rather than which
   * header failed. */
  if (vli_hdf5_refs(p, size, n) && vli_walk_fails(p, size, n))
    return zerr_set(err, EIO,
                    "%s: the chunk holds %llu HDF5 variable-length references "
                    "(%d bytes each), not the strings: they live in the HDF5 "
                    "file's global heap, so the references must inline them "
                    "(as kerchunk does)",
                    name, (unsigned long long)n, VLI_HDF5_REF);
  uint32_t count = vli_le32(p);
  if (count != n)
    return zerr_set(err, EIO, "%s: header says %u elements, chunk has %llu",
                    name, count, (unsigned long long)n);
  /* Each element needs at least its 4-byte length. */
  if (n > (size - 4) / 4)
    return zerr_set(err, EIO,
                    "%s: chunk of %zu bytes is too short for %llu element "
                    "lengths",
                    name, size, (unsigned long long)n);
  return 0;
}

/* Element i's length word runs past the end of the chunk. */
static int vli_err_header(const char *name, uint64_t i, struct zerr *err) {
  return zerr_set(err, EIO,
                  "%s: element %llu length header runs past the end of the "
                  "chunk",
                  name, (unsigned long long)i);
}

/* Element i's bytes (len) run past the end of the chunk. */
static int vli_err_len(const char *name, uint64_t i, uint32_t len,
                       struct zerr *err) {
  return zerr_set(err, EIO,
                  "%s: element %llu length %u runs past the end of the chunk",
                  name, (unsigned long long)i, len);
}

/* In-place compaction reads the chunk ahead of what it writes: the bytes
 * between the most the compact data can reach (`keep`: the sum of the
 * lengths can be no more than room, plus the 32 bytes a short move may
 * write) and the next header (pos) are read and will never be written
 * again, so their whole pages go back to the system and the chunk is not
 * resident whole beside the offsets being built. Pages below keep stay:
 * handing back the gap just above the compact data would have every later
 * write there fault a zeroed page back in (some 3,500 faults a 1M-string
 * chunk, a fifth of the daemon's time in a cat). Nothing is handed back
 * of a chunk below env->heap_max: a heap's block, whose pages the next
 * decode would fault in again, zeroed (the text made in place over the
 * compact data grows into them too: a steady `cat` of 10 chunks of 1M
 * strings faulted some 6,500 pages back each time). */
static void vli_release(uint8_t *buf, size_t keep, size_t pos, size_t page,
                        size_t *gone) {
  uintptr_t b = (uintptr_t)buf;
  uintptr_t lo = (b + keep + 32 + page - 1) & ~(uintptr_t)(page - 1);
  uintptr_t hi = (b + pos) & ~(uintptr_t)(page - 1);
  if (lo < b + *gone)
    lo = (b + *gone + page - 1) & ~(uintptr_t)(page - 1);
  if (hi > lo && hi - lo >= 16 * page) {
    madvise((void *)lo, hi - lo, MADV_DONTNEED);
    *gone = hi - b;
  }
}

/* One pass: bounds-check each length and move its bytes to the compact
 * data, whose size cannot exceed the chunk's less its headers (the sum of
 * lengths is checked as we go). `own` is the chunk's own buffer (p) when
 * the decoder may write over it: the data is then compacted in place (a
 * string only ever moves down, over headers already read), which saves a
 * buffer as large as the chunk; else a new buffer with 32 bytes of slack.
 * Short strings, the common case, are moved 16 or 32 bytes at a time
 * through registers (a read of 16 or 32 only when the chunk has that many
 * bytes left; in place only when the excess lands on bytes already read:
 * from the third or the seventh element on, or a long enough earlier
 * one); the next element overwrites the excess. Trailing bytes after element
 * n-1 are ignored, as numcodecs and zarrs do. On failure `own` is freed too. */
static int vli_parse(const char *name, const uint8_t *p, size_t size,
                     uint8_t *own, uint64_t n, const struct codec_env *env,
                     struct abytes *a, struct zerr *err) {
  int rc = vli_compact(name, p, size, &own, n, env, a, err);
  free(own); /* still ours: a failure before the data source took it */
  return rc;
}

/* vli_parse without the cleanup: *ownp is set to NULL once the buffer
 * passes to the data source. */
static int vli_compact(const char *name, const uint8_t *p, size_t size,
                       uint8_t **ownp, uint64_t n, const struct codec_env *env,
                       struct abytes *a, struct zerr *err) {
  uint8_t *own = *ownp;
  ZTRY(vli_check_head(name, p, size, n, err));
  uint64_t obytes = (n + 1) * sizeof(uint64_t); /* n < size/4: no overflow */
  if (obytes > env->max_decoded)
    return zerr_set(err, EFBIG,
                    "%s: %llu offsets exceed the decode limit of %zu bytes",
                    name, (unsigned long long)n + 1, env->max_decoded);
  size_t room = size - 4 - 4 * (size_t)n; /* >= the sum of the lengths */
  uint64_t *off = malloc((size_t)obytes);
  uint8_t *data = own ? own : malloc(room + 32);
  if (!off || !data) {
    free(off);
    if (data != own)
      free(data);
    return zerr_set(err, ENOMEM, "%s: out of memory for %zu bytes", name, room);
  }
  /* both written through: huge pages where the kernel allows */
  zbuf_prefer_huge(off, (size_t)obytes);
  if (data != own)
    zbuf_prefer_huge(data, room + 32);
  size_t pos = 4, total = 0, page = (size_t)sysconf(_SC_PAGESIZE);
  size_t gone = 0; /* in place: pages below this were handed back */
  int doomed = 0, release = own && size >= env->heap_max;
  off[0] = 0;
  for (uint64_t i = 0; i < n; i++) {
    if (release && !doomed && (i & 0xffff) == 0)
      vli_release(own, room, pos, page, &gone);
    if (size - pos < 4) {
      free(off);
      if (data != own)
        free(data);
      return vli_err_header(name, i, err);
    }
    uint32_t len = vli_le32(p + pos);
    pos += 4;
    if (len > size - pos) {
      free(off);
      if (data != own)
        free(data);
      return vli_err_len(name, i, len, err);
    }
    /* Past room (the sum of lengths the chunk can hold with all n
     * headers) a later header must fail: stop copying, keep checking, so
     * the error names the element whose header is missing. */
    if (len > room - total)
      doomed = 1;
    if (doomed) {
      /* nothing written */
    } else if (len <= 16 && size - pos >= 16 &&
               (!own || 4 * i + 8 + len >= 16)) {
      /* pos = total + 4i + 8 and total + len <= room; in place the excess
       * of a 16-byte move ends at total + 16 <= pos + len when
       * 4i+8+len >= 16 */
      uint8_t t[16];
      memcpy(t, p + pos, 16);
      memcpy(data + total, t, 16);
    } else if (len <= 32 && size - pos >= 32 &&
               (!own || 4 * i + 8 + len >= 32)) {
      /* the same with 32 bytes (a new buffer has 32 bytes of slack):
       * strings of 17 to 32 bytes were a library call each, a fifth of
       * the parse */
      uint8_t t[32];
      memcpy(t, p + pos, 32);
      memcpy(data + total, t, 32);
    } else {
      memmove(data + total, p + pos, len);
    }
    pos += len;
    total += len;
    off[i + 1] = total;
  }
  if (doomed) { /* cannot happen: room is the most n valid lengths sum to */
    free(off);
    if (data != own)
      free(data);
    return zerr_set(err, EIO, "%s: element lengths exceed the chunk", name);
  }
  uint8_t *fit =
      own || total + 32 < room ? realloc(data, total ? total : 1) : NULL;
  *ownp = NULL; /* the source below owns it now, or freed it */
  a->data = bytesrc_from_mem(fit ? fit : data, total);
  if (!a->data) {
    free(off);
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  }
  a->offsets = off;
  return 0;
}

/* Load the chunk (bounded) and parse it into a compact abytes. */
static int vli_decode(const void *state, const struct codec_spec *spec,
                      struct bytesrc *in, const struct codec_env *env,
                      struct abytes **out, struct zerr *err) {
  const char *name = state;
  struct abytes *a = abytes_alloc();
  if (!a)
    return zerr_set(err, ENOMEM, "%s: out of memory", name);
  a->n = spec->nelem;
  a->elsize = 0;
  /* The chunk decompressed just for us (the chain's only reference):
   * compact it in place. */
  size_t size;
  uint8_t *own = bytesrc_take_mem(in, &size);
  int rc;
  if (own) {
    rc = vli_parse(name, own, size, own, spec->nelem, env, a, err);
  } else {
    struct bytesrc *mem;
    rc = bytesrc_load(in, env->max_decoded, &mem, err);
    if (rc < 0) {
      abytes_free(a);
      zerr_prefix(err, "%s: ", name);
      return rc;
    }
    rc = vli_parse(name, mem->mem, (size_t)mem->size, NULL, spec->nelem, env, a,
                   err);
    bytesrc_unref(mem);
  }
  if (rc < 0) {
    abytes_free(a);
    return rc;
  }
  *out = a;
  return 0;
}

/* ---- elements as a stream (codec.h) ----
 *
 * The records read in order from the decoded stream: the count checked
 * first, then each length where the previous element's bytes end. */

/* Read the u32 LE at stream byte at. */
static int vli_stream_le32(struct bytesrc *s, uint64_t at, uint32_t *v,
                           struct zerr *err) {
  uint8_t h[4];
  ZTRY(bytesrc_read_range(s, at, 4, h, err));
  *v = vli_le32(h);
  return 0;
}

/* The count must be the chunk's; element 0's record follows it. */
static int vli_elems_open(const void *state, const struct codec_spec *spec,
                          struct bytesrc *s, uint64_t *first,
                          struct zerr *err) {
  const char *name = state;
  uint32_t count;
  ZTRY(vli_stream_le32(s, 0, &count, err));
  if (count != spec->nelem)
    return zerr_set(err, EIO, "%s: header says %u elements, chunk has %llu",
                    name, count, (unsigned long long)spec->nelem);
  *first = 4;
  return 0;
}

/* The length word of the record at `at`. */
static int vli_elems_len(const void *state, struct bytesrc *s, uint64_t at,
                         uint64_t *len, struct zerr *err) {
  (void)state;
  uint32_t v;
  ZTRY(vli_stream_le32(s, at, &v, err));
  *len = v;
  return 0;
}

/* The bytes after the length word. */
static int vli_elems_read(const void *state, struct bytesrc *s, uint64_t at,
                          uint64_t len, void *dst, struct zerr *err) {
  (void)state;
  return bytesrc_read_range(s, at + 4, (size_t)len, dst, err);
}

/* The next record follows the bytes. */
static uint64_t vli_elems_next(const void *state, uint64_t at, uint64_t len) {
  (void)state;
  return at + 4 + len;
}

/* The count and a length word per element frame the element bytes. */
static int vli_elems_total(const void *state, uint64_t decoded, uint64_t nelem,
                           uint64_t *total) {
  (void)state;
  if (decoded < 4 || nelem > (decoded - 4) / 4)
    return -1;
  *total = decoded - 4 - 4 * nelem;
  return 0;
}

/* Length words read where they lie in buf, a record after another. */
static void vli_elems_walk(const void *state, const uint8_t *buf, size_t len,
                           uint64_t *at, uint64_t *k, uint64_t nelem,
                           uint64_t *sum) {
  (void)state;
  uint64_t pos = 0, s = *sum, i = *k;
  while (i < nelem && pos < len && len - pos >= 4) {
    uint32_t l = vli_le32(buf + pos);
    s += l;
    pos += 4 + (uint64_t)l;
    i++;
  }
  *at += pos;
  *k = i;
  *sum = s;
}

/* How far ahead of a walk through a chunk held whole its lines are
 * asked for. */
#define VLI_PREFETCH 2048

/* Records where they lie in memory (codec.h): in a chunk held whole, the
 * head checked with the first call (as vli_compact checks it), then each
 * record; in a window, records up to the first that runs past it. */
static long vli_elems_spans(const void *state, const uint8_t *buf,
                            uint64_t base, size_t size, int whole, uint64_t *at,
                            uint64_t *k, uint64_t nelem, uint64_t *start,
                            uint64_t *len, size_t max, struct zerr *err) {
  const char *name = state;
  if (whole && *k == 0 && *at <= 4) {
    ZTRY(vli_check_head(name, buf, size, nelem, err));
    *at = 4;
  }
  if (*at < base || *at - base > size)
    return whole ? vli_err_header(name, *k, err) : 0;
  uint64_t pos = *at - base, i = *k; /* pos <= size from here on */
  size_t m = 0;
  while (m < max && i < nelem) {
    /* The next length hangs on this one, so each is a load the walk
     * waits for: ask for the lines ahead before it needs them. */
    if (size - pos > VLI_PREFETCH)
      __builtin_prefetch(buf + pos + VLI_PREFETCH);
    if (size - pos < 4) {
      if (whole)
        return vli_err_header(name, i, err);
      break;
    }
    uint32_t l = vli_le32(buf + pos);
    if (l > size - pos - 4) {
      if (whole)
        return vli_err_len(name, i, l, err);
      break;
    }
    pos += 4;
    start[m] = base + pos;
    len[m++] = l;
    pos += l;
    i++;
  }
  *at = base + pos;
  *k = i;
  return (long)m;
}

/* The names that stream (vlen-array's text is not streamed). */
#define VLI_ELEMS                                                              \
  .elems_open = vli_elems_open, .elems_len = vli_elems_len,                    \
  .elems_read = vli_elems_read, .elems_next = vli_elems_next,                  \
  .elems_total = vli_elems_total, .elems_walk = vli_elems_walk,                \
  .elems_spans = vli_elems_spans

const struct codec_impl codec_vlen_utf8 = {
    .name = "vlen-utf8",
    .kind = CODEC_A2B,
    .create = vli_create_utf8,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
    VLI_ELEMS,
};

const struct codec_impl codec_vlen_bytes = {
    .name = "vlen-bytes",
    .kind = CODEC_A2B,
    .create = vli_create_bytes,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
    VLI_ELEMS,
};

const struct codec_impl codec_vlen_array = {
    .name = "vlen-array",
    .kind = CODEC_A2B,
    .create = vli_create_array,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
};

static const char *const vli_v2_aliases[] = {
    "https://codec.zarrs.dev/array_to_bytes/vlen_v2", NULL};

const struct codec_impl codec_vlen_v2 = {
    .name = "zarrs.vlen_v2",
    .aliases = vli_v2_aliases,
    .kind = CODEC_A2B,
    .create = vli_create_v2,
    .destroy = vli_destroy,
    .decode_array = vli_decode,
    VLI_ELEMS,
};
