/* log.c - the log sink (see log.h). The two statics are written once before
 * any thread starts and only read afterwards. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

static int log_syslog;
static enum zlog_level log_max = ZLOG_INFO;

/* Pick the sink. */
void zlog_setup(int use_syslog, enum zlog_level max_level) {
  log_syslog = use_syslog;
  log_max = max_level;
  if (use_syslog)
    openlog("zarrfs", LOG_PID, LOG_DAEMON);
}

/* Format into one buffer and write it with one call. */
void zlog(enum zlog_level level, const char *fmt, ...) {
  if (level > log_max)
    return;
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(line, sizeof line - 1, fmt, ap);
  va_end(ap);
  if (n < 0)
    return;
  if (log_syslog) {
    syslog((int)level, "%s", line);
    return;
  }
  char out[1100];
  int m = snprintf(out, sizeof out, "zarrfs: %s\n", line);
  if (m > (int)sizeof out - 1) {
    m = (int)sizeof out - 1;
    out[m - 1] = '\n';
  }
  ssize_t w = write(STDERR_FILENO, out, (size_t)m);
  (void)w;
}
