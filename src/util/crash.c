/* crash.c - the stack of a fatal signal on stderr (see crash.h). */
#include "crash.h"

#include <errno.h>
#include <execinfo.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CRASH_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CRASH_SANITIZED 1
#endif
#endif

#ifndef CRASH_SANITIZED
/* Frames reported. */
#define CRASH_FRAMES 64

/* The signals reported, and the line each begins with. */
static const struct {
  int sig;
  const char *line;
} crash_signals[] = {
    {SIGSEGV, "zarrfs: fatal signal SIGSEGV (invalid memory access); stack:\n"},
    {SIGBUS, "zarrfs: fatal signal SIGBUS (bus error); stack:\n"},
    {SIGILL, "zarrfs: fatal signal SIGILL (illegal instruction); stack:\n"},
    {SIGFPE, "zarrfs: fatal signal SIGFPE (arithmetic fault); stack:\n"},
    {SIGABRT, "zarrfs: fatal signal SIGABRT (abort); stack:\n"},
};

/* Write s whole with write(2), which a signal handler may call. */
static void crash_put(const char *s) {
  size_t n = strlen(s);
  while (n) {
    ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0)
      return;
    s += w;
    n -= (size_t)w;
  }
}

/* Say which signal and where, then die of it: SA_RESETHAND made the
 * default action current. backtrace_symbols_fd writes without
 * allocating, and backtrace's unwinder was loaded at install. */
static void crash_handler(int sig) {
  for (size_t i = 0; i < sizeof crash_signals / sizeof *crash_signals; i++)
    if (crash_signals[i].sig == sig)
      crash_put(crash_signals[i].line);
  void *frames[CRASH_FRAMES];
  int got = backtrace(frames, CRASH_FRAMES);
  backtrace_symbols_fd(frames, got, STDERR_FILENO);
  raise(sig);
}
#endif

/* See crash.h. */
int crash_handlers_install(void) {
#ifndef CRASH_SANITIZED
  void *warm[1];
  backtrace(warm, 1); /* loads the unwinder now, not in the handler */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = crash_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESETHAND;
  for (size_t i = 0; i < sizeof crash_signals / sizeof *crash_signals; i++)
    if (sigaction(crash_signals[i].sig, &sa, NULL) < 0)
      return -errno;
#endif
  return 0;
}
