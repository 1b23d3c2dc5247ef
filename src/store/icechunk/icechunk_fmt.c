/* icechunk_fmt.c - the common ground of Icechunk's format (see
 * icechunk_fmt.h): the 39-byte file header, its bounded zstd payload, ids
 * in Crockford base 32, commit times and log lines. Parsing only, no locks;
 * what it returns is the caller's. The icefmt_ prefix is the format
 * module's across its files (icechunk_fmt.c, icechunk_common.c,
 * icechunk_repo.c, icechunk_snap.c, icechunk_manifest.c). */
#define _GNU_SOURCE
#include "icechunk_fmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "../../util/buf.h"

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

/* Id, time and message, the message flattened to one field and cut at
 * ICEFMT_LOG_MESSAGE_MAX bytes (a character boundary). */
char *icefmt_log_line(const uint8_t id[12], uint64_t flushed_at,
                      const char *message) {
  char sid[ICEFMT_ID_CHARS + 1], when[32];
  icefmt_id_encode(id, 12, sid);
  icefmt_time_iso(flushed_at, when);
  size_t n = strnlen(message, ICEFMT_LOG_MESSAGE_MAX + 1);
  const char *more = "";
  if (n > ICEFMT_LOG_MESSAGE_MAX) {
    n = ICEFMT_LOG_MESSAGE_MAX;
    while (n > 0 && ((unsigned char)message[n] & 0xC0) == 0x80)
      n--;
    more = "...";
  }
  char *line;
  if (asprintf(&line, "%s\t%s\t%.*s%s\n", sid, when, (int)n, message, more) < 0)
    return NULL;
  /* the message: one line, one field */
  for (char *p = line + strlen(sid) + strlen(when) + 2; p[1]; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = ' ';
  return line;
}
