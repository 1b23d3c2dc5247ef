/* err.c - error messages for the zarrfs error convention (see err.h). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Record code and a formatted reason. */
int zerr_set(struct zerr *err, int code, const char *fmt, ...) {
  if (code <= 0)
    code = EIO;
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return -code;
}

/* Put context in front of the existing message. */
int zerr_prefix(struct zerr *err, const char *fmt, ...) {
  if (!err)
    return -EIO;
  if (err->code <= 0) {
    err->code = EIO;
    err->msg[0] = '\0';
  }
  char head[ZERR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  /* head, then as much of the old message as still fits */
  size_t hl = strlen(head), tl = strlen(err->msg);
  if (hl > sizeof err->msg - 1)
    hl = sizeof err->msg - 1;
  if (tl > sizeof err->msg - 1 - hl)
    tl = sizeof err->msg - 1 - hl;
  memmove(err->msg + hl, err->msg, tl);
  memcpy(err->msg, head, hl);
  err->msg[hl + tl] = '\0';
  return -err->code;
}

/* Forget any recorded error. */
void zerr_clear(struct zerr *err) {
  if (err) {
    err->code = 0;
    err->msg[0] = '\0';
  }
}

/* Conditions that pass: a retry may succeed (see err.h). */
int zerr_is_transient(int code) {
  switch (code) {
  case EMFILE:
  case ENFILE:
  case ENOMEM:
  case EAGAIN:
  case EINTR:
  case ETIMEDOUT:
    return 1;
  default:
    return 0;
  }
}
