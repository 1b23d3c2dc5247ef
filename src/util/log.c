/* log.c - the log sink (see log.h). The three statics are written once
 * before any thread starts and only read afterwards. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

static int log_syslog;
static enum zlog_level log_max = ZLOG_INFO;
static int log_fd = -1; /* zlog_setup_fd's descriptor, or -1 */

void zlog_setup_fd(int fd, enum zlog_level max_level) {
  log_fd = fd;
  log_syslog = 0;
  log_max = max_level;
}

/* The name of a level ("error", "warn", "info", "debug"). */
static const char *zlog_level_name(enum zlog_level level) {
  return level <= ZLOG_ERR    ? "error"
         : level <= ZLOG_WARN ? "warn"
         : level <= ZLOG_INFO ? "info"
                              : "debug";
}

/* Write line to the descriptor: time, program, pid, level, message. */
static void log_to_fd(enum zlog_level level, const char *line) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char out[1200];
  int m = snprintf(out, sizeof out,
                   "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ zarrfs[%ld] %s: %s\n",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, (long)getpid(),
                   zlog_level_name(level), line);
  if (m > (int)sizeof out - 1) {
    m = (int)sizeof out - 1;
    out[m - 1] = '\n';
  }
  ssize_t w = write(log_fd, out, (size_t)m);
  (void)w;
}

/* Pick the sink. */
void zlog_setup(int use_syslog, enum zlog_level max_level) {
  log_syslog = use_syslog;
  log_max = max_level;
  if (use_syslog)
    openlog("zarrfs", LOG_PID, LOG_DAEMON);
}

/* Compare with the level set at startup. */
int zlog_enabled(enum zlog_level level) { return level <= log_max; }

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
  if (log_fd >= 0) {
    log_to_fd(level, line);
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
