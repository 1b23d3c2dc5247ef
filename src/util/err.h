/* err.h - the one error convention of zarrfs.
 *
 * Every fallible function returns 0 on success or a negative errno value
 * (-EIO, -ENOENT, -ENOMEM, ...). When it fails it also fills the caller's
 * struct zerr (if non-NULL) with a one-line reason. Callers add context
 * (store path, key) with zerr_prefix() as the error travels up; the FUSE
 * layer logs the message once and returns the errno. */
#ifndef ZARRFS_ERR_H
#define ZARRFS_ERR_H

#include <errno.h>
#include <stddef.h>

#define ZERR_MSG_MAX 512

struct zerr {
  int code;               /* positive errno, 0 when no error was set */
  char msg[ZERR_MSG_MAX]; /* one line, no trailing newline */
};

/* Record an error (code is a positive errno). Returns -code so callers can
 * write `return zerr_set(err, EIO, "...")`. err may be NULL. */
int zerr_set(struct zerr *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prepend context ("key c/0/0: ") to an error already set. Returns
 * -err->code (or -EIO if none was set). err may be NULL. */
int zerr_prefix(struct zerr *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Reset to "no error". */
void zerr_clear(struct zerr *err);

/* Is code (a positive errno) a transient condition rather than a fact about
 * the data: EMFILE, ENFILE (descriptor tables full), ENOMEM, EAGAIN, EINTR,
 * ETIMEDOUT (remote stores)? Returns 1 or 0. The store and byte-source
 * layers pass these codes up unchanged instead of folding them into EIO,
 * and the engine never remembers a transient failure: the next read tries
 * again. */
int zerr_is_transient(int code);

/* Return a negative errno from the current function if expr failed. */
#define ZTRY(expr)                                                             \
  do {                                                                         \
    int ztry_rc_ = (expr);                                                     \
    if (ztry_rc_ < 0)                                                          \
      return ztry_rc_;                                                         \
  } while (0)

/* Fail with EIO and a message when cond holds. */
#define ZFAIL_IF(cond, err, ...)                                               \
  do {                                                                         \
    if (cond)                                                                  \
      return zerr_set((err), EIO, __VA_ARGS__);                                \
  } while (0)

#endif
