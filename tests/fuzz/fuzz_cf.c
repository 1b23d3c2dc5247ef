/* fuzz_cf.c - CF encodings from attributes (src/zarr/cf.c): cf_parse of
 * the attributes for every stored type CF decodes, with and without a
 * fill value, then each 8-byte value of the input decoded (cf_decode) and
 * written (fs/text/cftext.c, fs/text/csvtext.c); and cf_parse_units of the
 * `units` in every calendar. Input: ATTRIBUTES NUL VALUES (a JSON object, then
 * raw element bytes). A decoded time must be a real date of its calendar
 * (month 1-12, day 1-31, nanoseconds within the day). */
#include "fuzz.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/text/cftext.h"
#include "../../fs/text/csvtext.h"
#include "../../src/zarr/cf.h"

/* Decode and write each value of vals through c. */
static void decode_all(const struct cf *c, const struct dtype *dt,
                       const uint8_t *vals, size_t nvals) {
  for (size_t at = 0; at + 8 <= nvals && at < 64 * 8; at += 8) {
    uint8_t elem[16] = {0};
    memcpy(elem, vals + at, 8);
    struct cf_value v;
    if (cf_decode(c, elem, &v) < 0)
      continue;
    if (v.kind == CF_TIME &&
        (v.time.month < 1 || v.time.month > 12 || v.time.day < 1 ||
         v.time.day > 31 || v.time.ns < 0 || v.time.ns >= 86400000000000ll))
      abort();
    char buf[CFTEXT_MAX + 1];
    if (cftext_render(&v, buf) > CFTEXT_MAX)
      abort();
    if (csvtext_fixed(c, dt, elem, buf) > CSVTEXT_MAX)
      abort();
  }
}

/* Every type, with and without a fill value; the units in every calendar. */
FUZZ_TARGET(cf) {
  const uint8_t *nul = memchr(data, '\0', size);
  size_t alen = nul ? (size_t)(nul - data) : size;
  const uint8_t *vals = nul ? nul + 1 : data + size;
  size_t nvals = nul ? size - alen - 1 : 0;
  json_t *attrs = json_loadb((const char *)data, alen, 0, NULL);
  if (!attrs)
    return 0;
  static const enum dtype_kind kinds[] = {
      DT_BOOL,    DT_INT8,    DT_INT16,  DT_INT32,  DT_INT64,
      DT_UINT8,   DT_UINT16,  DT_UINT32, DT_UINT64, DT_FLOAT16,
      DT_FLOAT32, DT_FLOAT64, DT_STRING};
  json_t *fill = json_integer(-1);
  for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
    struct dtype dt = dtype_of(kinds[k]);
    for (int f = 0; f < 2; f++) {
      struct cf *c = NULL;
      struct zerr err = {0};
      if (cf_parse(attrs, f ? fill : NULL, &dt, &c, &err) == 0 && c)
        decode_all(c, &dt, vals, nvals);
      cf_free(c);
    }
  }
  json_decref(fill);
  const char *units = json_string_value(json_object_get(attrs, "units"));
  for (int cal = CF_CAL_STANDARD; units && cal <= CF_CAL_JULIAN; cal++) {
    int64_t unit, day, ns;
    int readers;
    if (cf_parse_units(units, (enum cf_calendar)cal, &unit, &readers, &day,
                       &ns) == 0 &&
        (unit <= 0 || !readers || ns < 0 || ns >= 86400000000000ll))
      abort();
  }
  json_decref(attrs);
  return 0;
}
