/* file.c - whole files into memory (see file.h). */
#include "file.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"

/* Read a whole file (at most max bytes) into malloc'd memory. */
int zread_file(const char *path, size_t max, char **out, size_t *len,
               struct zerr *err) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return zerr_set(err,
                    errno == ENOENT || zerr_is_transient(errno) ? errno : EIO,
                    "%s", strerror(errno));
  struct zbuf b;
  zbuf_init(&b, max);
  char chunk[1 << 16];
  size_t n;
  int rc = 0;
  while (rc == 0 && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
    rc = zbuf_append(&b, chunk, n, err);
  if (rc == 0 && ferror(f))
    rc = zerr_set(err, EIO, "read error");
  fclose(f);
  if (rc) {
    zbuf_free(&b);
    return rc;
  }
  *out = (char *)zbuf_steal(&b, len);
  return 0;
}
