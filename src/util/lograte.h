/* lograte.h - lines of the debug level at a rate a person can follow: at
 * most per_sec lines in each second, the rest counted by kind and said in
 * one summary line before the next line shown,
 *
 *   1,234 debug lines left out in the last 2 s (request 1,200, cache
 *   30, decode 4): at most 20 a second are shown
 *
 * or by lograte_flush once their second is over (a caller that wakes
 * every second: the engine's watchdog), or when the object is freed. Debug
 * lines (one per request, cache decision and decode) would otherwise come by
 * the thousand a second under load; this bounds them as logonce bounds the
 * other levels.
 *
 * A `struct lograte` belongs to one mount (the engine owns it; no global
 * state). Thread-safe: one mutex per object, a leaf (the sink is called
 * without it). FUSE-free. */
#ifndef ZARRFS_LOGRATE_H
#define ZARRFS_LOGRATE_H

#include <stdarg.h>
#include <stdint.h>

#include "err.h"
#include "log.h"
#include "logonce.h"

/* Kinds of lines counted apart in a summary. */
#define LOGRATE_KINDS 4

struct lograte;

/* Create: at most per_sec >= 1 lines a second; kinds[k] names kind k in
 * summaries (borrowed, must outlive the object; NULL ends the list). The
 * caller owns *out (lograte_free). -EINVAL or -ENOMEM. */
int lograte_new(unsigned per_sec, const char *const *kinds,
                struct lograte **out, struct zerr *err);

/* Say what was left out and not said yet, then free. NULL-safe. No other
 * thread may use r during or after the call. */
void lograte_free(struct lograte *r);

/* Write "MSG" (formatted) at level lvl when a line of kind k may be shown
 * now, after a summary of what was left out since the last line shown;
 * else count it. NULL r: written as it comes. */
void lograte_log(struct lograte *r, enum zlog_level lvl, unsigned k,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* lograte_log with a va_list (formatted only when shown). */
void lograte_vlog(struct lograte *r, enum zlog_level lvl, unsigned k,
                  const char *fmt, va_list ap);

/* Say what was left out, when the second it was left out in is over.
 * NULL-safe. */
void lograte_flush(struct lograte *r);

/* Lines left out so far (for tests). */
uint64_t lograte_left_out(struct lograte *r);

/* Tests: replace the sink (default: zlog) and the clock (default:
 * CLOCK_MONOTONIC), with logonce's types. Before r is shared. */
void lograte_set_sink(struct lograte *r, logonce_sink_fn fn, void *ud);
void lograte_set_clock(struct lograte *r, logonce_clock_fn fn, void *ud);

#endif
