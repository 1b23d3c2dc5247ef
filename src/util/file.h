/* file.h - whole small files read into memory (reference files, the
 * fuzzers' inputs), with a size cap like every growable buffer. */
#ifndef ZARRFS_FILE_H
#define ZARRFS_FILE_H

#include <stddef.h>

#include "err.h"

/* Read the whole file at path into malloc'd memory (*out, caller frees;
 * NULL when empty), refusing files above max bytes (-EFBIG). */
int zread_file(const char *path, size_t max, char **out, size_t *len,
               struct zerr *err);

#endif
