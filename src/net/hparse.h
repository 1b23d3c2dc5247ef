/* hparse.h - what the HTTP transport (http.c) reads out of an answer
 * besides its status: the Content-Range header, and the code of an S3
 * <Error> body for messages. Pure functions, no locks. */
#ifndef ZARRFS_HPARSE_H
#define ZARRFS_HPARSE_H

#include <stddef.h>
#include <stdint.h>

/* A Content-Range value: "bytes a-b/T" is 1 with *start, *end and *total
 * (UINT64_MAX for "*"); "bytes * /T" (unsatisfied, no space) is 2 with
 * *total alone; anything else 0, nothing set. */
int hparse_content_range(const char *v, uint64_t *start, uint64_t *end,
                         uint64_t *total);

/* The <Code> of an error body (NUL-terminated; len 0: none) as " (CODE)"
 * into out[n], or "" when it names none or it does not fit. */
void hparse_error_code(const char *body, size_t len, char *out, size_t n);

#endif
