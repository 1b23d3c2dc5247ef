/* sizeblob.c - region records of the persistent size index, one file
 * each (see sizeblob.h). */
#include "sizeblob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../util/htab.h"
#include "../util/log.h"
#include "sizeindex_int.h"

/* File format (host byte order): magic, CRC-32 of everything after it,
 * payload length (8), text size (8), lines (8), identity length (4),
 * identity bytes (sizeindex_id_bytes), payload. */
static const char lxb_magic[4] = {'L', 'X', 'b', '2'};
#define LXB_HEAD 36

/* The record's file name in the index directory. */
static void blob_name(const struct sizeindex_id *id, char *name, size_t len) {
  uint64_t h = htab_hash_str(id->location);
  h = htab_hash_bytes("", 1, h);
  h = htab_hash_bytes(id->key, strlen(id->key), h);
  snprintf(name, len, "lx2-r%016llx.idx", (unsigned long long)h);
}

/* See sizeblob.h. */
int sizeblob_store(struct sizeindex *x, const struct sizeindex_id *id,
                   const struct sizeindex_rec *rec, const void *data,
                   size_t len) {
  if (!x)
    return -EINVAL;
  size_t idmax = 32 + strlen(id->location) + strlen(id->key);
  if (len > SIZEBLOB_MAX || len > sizeindex_cap(x) / 4 ||
      idmax > sizeindex_cap(x) / 4)
    return -EFBIG;
  unsigned char *buf = malloc(LXB_HEAD + idmax + len);
  if (!buf)
    return -ENOMEM;
  size_t il = sizeindex_id_bytes(id, buf + LXB_HEAD);
  if (!il) {
    free(buf);
    return -ENAMETOOLONG;
  }
  uint64_t plen = len;
  uint32_t il32 = (uint32_t)il;
  memcpy(buf, lxb_magic, 4);
  memcpy(buf + 8, &plen, 8);
  memcpy(buf + 16, &rec->text_size, 8);
  memcpy(buf + 24, &rec->lines, 8);
  memcpy(buf + 32, &il32, 4);
  if (len)
    memcpy(buf + LXB_HEAD + il, data, len);
  size_t total = LXB_HEAD + il + len;
  uint32_t crc = (uint32_t)crc32(0L, buf + 8, (uInt)(total - 8));
  memcpy(buf + 4, &crc, 4);
  char name[64], tmp[128];
  blob_name(id, name, sizeof name);
  int dfd = sizeindex_dirfd(x);
  int fd = sizeindex_temp(x, name, tmp, sizeof tmp);
  int rc = fd < 0 ? -EIO : 0;
  if (rc == 0 && sizeindex_write_all(fd, buf, total) < 0)
    rc = -EIO;
  if (rc == 0 && renameat(dfd, tmp, dfd, name) < 0)
    rc = -errno;
  if (fd >= 0) {
    if (rc < 0)
      unlinkat(dfd, tmp, 0);
    close(fd);
  }
  free(buf);
  if (rc == 0)
    sizeindex_evict(x);
  return rc;
}

/* See sizeblob.h. */
int sizeblob_lookup(struct sizeindex *x, const struct sizeindex_id *id,
                    struct sizeindex_rec *rec, void **data, size_t *len) {
  *data = NULL;
  *len = 0;
  if (!x)
    return 0;
  char name[64];
  blob_name(id, name, sizeof name);
  int fd = openat(sizeindex_dirfd(x), name,
                  O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    if (errno == ELOOP)
      zlog(ZLOG_WARN, "index cache file %s: a symbolic link: not used", name);
    return 0;
  }
  struct stat st;
  char why_buf[96];
  const char *why = NULL;
  if (fstat(fd, &st) < 0)
    why = strerror(errno);
  else
    why = sizeindex_unsafe(x, &st, why_buf, sizeof why_buf);
  if (why) {
    zlog(ZLOG_WARN, "index cache file %s: %s: not used", name, why);
    close(fd);
    return 0;
  }
  size_t idmax = 32 + strlen(id->location) + strlen(id->key);
  unsigned char *want = malloc(idmax);
  size_t wl = want ? sizeindex_id_bytes(id, want) : 0;
  uint64_t fsize = (uint64_t)st.st_size;
  unsigned char *buf = NULL;
  int hit = 0;
  if (wl && fsize >= LXB_HEAD + wl &&
      fsize <= LXB_HEAD + wl + (uint64_t)SIZEBLOB_MAX &&
      fsize <= sizeindex_cap(x) / 2 && (buf = malloc((size_t)fsize))) {
    size_t got = 0;
    while (got < fsize) {
      ssize_t r = pread(fd, buf + got, (size_t)fsize - got, (off_t)got);
      if (r < 0 && errno == EINTR)
        continue;
      if (r <= 0)
        break;
      got += (size_t)r;
    }
    uint64_t plen;
    uint32_t crc, il;
    if (got == fsize) {
      memcpy(&crc, buf + 4, 4);
      memcpy(&plen, buf + 8, 8);
      memcpy(&il, buf + 32, 4);
      hit = !memcmp(buf, lxb_magic, 4) && il == wl &&
            plen == fsize - LXB_HEAD - wl &&
            !memcmp(buf + LXB_HEAD, want, wl) &&
            crc32(0L, buf + 8, (uInt)(fsize - 8)) == crc;
    }
    if (hit && (*data = malloc(plen ? (size_t)plen : 1))) {
      memcpy(&rec->text_size, buf + 16, 8);
      memcpy(&rec->lines, buf + 24, 8);
      memcpy(*data, buf + LXB_HEAD + wl, (size_t)plen);
      *len = (size_t)plen;
    } else {
      hit = 0;
    }
  }
  free(buf);
  free(want);
  close(fd);
  return hit;
}
