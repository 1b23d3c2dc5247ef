/* cftext.h - one CF-decoded element (src/zarr/cf.h) as the text the CF
 * views show:
 *   number   integers in decimal; floats by the float rule of the text
 *            contract (fs/text/render.c: shortest round-trip digits at the
 *            value's own width, float32 as float32), `nan` for NaN
 *   missing  `nan` (xarray's NaN)
 *   time     ISO 8601 `YYYY-MM-DDTHH:MM:SS`, then `.` and the fraction of
 *            the second only when it is not zero, in the fewest digits
 *            that hold it exactly (nanoseconds at most); years outside
 *            0..9999 with their sign and at least four digits
 *   timedelta  the timedelta rule of the text contract (fs/text/render.h): an
 *            ISO 8601 duration, `P1DT2H`, `-PT1.5S`, `PT0S`
 *   NaT      `NaT` (a missing time or duration)
 *   bool     `true` / `false`
 *   complex  as values.txt writes it (`1.5-2j`); masked `nan+nanj`
 * Pure functions, no allocation, thread-safe. */
#ifndef ZARRFS_CFTEXT_H
#define ZARRFS_CFTEXT_H

#include <stddef.h>

#include "../../src/zarr/cf.h"

/* Longest text of one element (without newline). */
#define CFTEXT_MAX 64

/* Write v's text into buf (at least CFTEXT_MAX bytes, not NUL-terminated);
 * returns its length. */
size_t cftext_render(const struct cf_value *v, char *buf);

#endif
