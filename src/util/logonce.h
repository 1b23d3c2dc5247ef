/* logonce.h - per-mount log deduplication: each failure is logged once, and
 * its repeats are counted and summarised.
 *
 * A `struct logonce` belongs to one mount (the engine owns it; no global
 * state). The first logonce_log() of a line "WHERE: KEY: MSG" prints it;
 * identical later calls are only counted. When repeats were counted, the
 * line is printed again as a summary,
 *
 *   WHERE: KEY: MSG (repeated N more times in the last S s)
 *
 * at most once every summary_secs per line: on the first repeat that comes
 * at least summary_secs after the line was last printed (there is no timer
 * thread, so a burst that then stops is summarised by the next repeat or
 * by logonce_flush / logonce_free, which print every pending count). S is
 * the time since the line was last printed, in whole seconds rounded up.
 *
 * Identity is the whole printed line (after truncation to
 * LOGONCE_LINE_MAX bytes), so messages must not embed changing details
 * (counters, timestamps) or they will not deduplicate. Memory is bounded:
 * at most max_keys lines are remembered, least recently seen first out; an
 * evicted line's pending count is printed when it is evicted, and the line
 * is printed in full again if it comes back.
 *
 * Thread-safe: one mutex per object, a leaf lock (the sink is never called
 * while it is held). Lines go to zlog() (which prepends "zarrfs: ") unless
 * a test installs its own sink. FUSE-free. */
#ifndef ZARRFS_LOGONCE_H
#define ZARRFS_LOGONCE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "log.h"

/* Defaults for a mount: lines remembered, seconds between summaries. */
#define LOGONCE_DEFAULT_KEYS 4096
#define LOGONCE_DEFAULT_SECS 60

/* Longest remembered line "WHERE: KEY: MSG" (bytes, without NUL); longer
 * lines are cut (zlog cuts at about the same length anyway). */
#define LOGONCE_LINE_MAX 1000

struct logonce;

/* Where lines go: one whole line without newline, NUL-terminated, valid
 * during the call only. Called without the object's lock held, possibly
 * from several threads at once. */
typedef void (*logonce_sink_fn)(void *ud, enum zlog_level lvl,
                                const char *line);
/* A monotonic clock in milliseconds. */
typedef uint64_t (*logonce_clock_fn)(void *ud);

/* Create (max_keys >= 1 lines remembered, summary_secs >= 1). The caller
 * owns *out and frees it with logonce_free. -EINVAL or -ENOMEM. */
int logonce_new(size_t max_keys, unsigned summary_secs, struct logonce **out,
                struct zerr *err);

/* Print every pending summary, then free. NULL-safe. No other thread may
 * use l during or after the call. */
void logonce_free(struct logonce *l);

/* Log "WHERE: KEY: MSG" at lvl the first time it is seen; count it
 * afterwards (see the file comment). key "" is shown as ".". where may be
 * NULL or "" (then the line is "KEY: MSG"). l NULL: plain zlog, no
 * deduplication. */
void logonce_log(struct logonce *l, enum zlog_level lvl, const char *where,
                 const char *key, const char *msg);

/* Log "WHERE: KEY: MSG" the first time it is seen, as logonce_log, but
 * let its repeats pass unsaid (no count, no summary): for what is said of
 * data rather than of a failure (a chunk whose text shows '?' for bytes
 * that are not UTF-8), which every later read of it would repeat. A line
 * evicted from memory is printed again if it comes back. */
void logonce_note(struct logonce *l, enum zlog_level lvl, const char *where,
                  const char *key, const char *msg);

/* Print the summary of every line with pending repeats now (at exit, or
 * from a periodic caller). NULL-safe. */
void logonce_flush(struct logonce *l);

/* Tests: replace the sink (default: zlog) and the clock (default:
 * CLOCK_MONOTONIC). Call before l is shared with other threads. */
void logonce_set_sink(struct logonce *l, logonce_sink_fn fn, void *ud);
void logonce_set_clock(struct logonce *l, logonce_clock_fn fn, void *ud);

#endif
