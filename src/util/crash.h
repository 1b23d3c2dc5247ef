/* crash.h - a daemon that dies of a fault says where: on SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE or SIGABRT, one line naming the signal, then the stack
 * (glibc's backtrace: `binary(symbol+off)` or `binary(+off)`, offsets that
 * a build of the same commit resolves with addr2line), go to stderr (the
 * log of a daemon in the foreground), and the signal is raised again with
 * its default action: the same exit status, and a core dump where the
 * system keeps them. A fault that leaves the thread no stack (an overflow)
 * dies as before, unreported. Nothing is installed in a build with
 * AddressSanitizer or ThreadSanitizer, whose own reports say more.
 *
 * Process-wide, from main, once: signal dispositions are the process's
 * by nature, and nothing else is kept. */
#ifndef ZARRFS_CRASH_H
#define ZARRFS_CRASH_H

/* Install the handlers for this process (every thread). 0, or -errno
 * (then faults end the process unreported, as before). */
int crash_handlers_install(void);

#endif
