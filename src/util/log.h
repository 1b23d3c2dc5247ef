/* log.h - one-line log messages (errors the mount survives, warnings).
 *
 * The sink is chosen once at startup (before threads start) and never
 * changed afterwards: stderr in the foreground, syslog when daemonized, or
 * a descriptor (-o log_file, or the mounting shell's stderr when there is
 * no syslog). One call writes one whole line, atomically. */
#ifndef ZARRFS_LOG_H
#define ZARRFS_LOG_H

enum zlog_level { ZLOG_ERR = 3, ZLOG_WARN = 4, ZLOG_INFO = 6, ZLOG_DEBUG = 7 };

/* Choose the sink: use_syslog != 0 sends lines to syslog. max_level drops
 * messages above it. Call before any thread starts. */
void zlog_setup(int use_syslog, enum zlog_level max_level);
/* Send lines to descriptor fd instead (owned by the log from now on),
 * each as "TIME zarrfs[PID] LEVEL: message" with the time in UTC to the
 * millisecond. max_level as for zlog_setup. Call before any thread
 * starts. */
void zlog_setup_fd(int fd, enum zlog_level max_level);
/* Would a line of this level be written? (So that debug lines cost
 * nothing when they are not.) */
int zlog_enabled(enum zlog_level level);
/* Log one line ("zarrfs: " is prepended). */
void zlog(enum zlog_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
