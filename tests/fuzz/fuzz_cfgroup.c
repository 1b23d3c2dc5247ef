/* fuzz_cfgroup.c - CF decoding as xarray does it for a group: its
 * variables (src/zarr/cfvars.c: time bounds, stackable character
 * dimensions), each variable's encoding (src/zarr/cf.c cf_parse, and
 * cfmask.c for complex, bool and strings) and its elements decoded and
 * written (fs/text/cftext.c). Input: a JSON object of variables, each
 * {"dtype": numpy dtype, "dims": [...], "attrs": {...}, "fill": JSON},
 * then a NUL, then element bytes that every variable decodes in turn. */
#include "fuzz.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "../../fs/text/cftext.h"
#include "../../src/json/zjson.h"
#include "../../src/zarr/cf.h"
#include "../../src/zarr/cfmask.h"
#include "../../src/zarr/cfvars.h"

/* Variables decoded at most per input. */
#define FUZZ_CF_VARS 64

/* Decode the bytes as elements of one variable's type. */
static void decode_all(const struct dtype *dt, json_t *attrs, json_t *fill,
                       const uint8_t *b, size_t n) {
  struct cf *c = NULL;
  struct zerr err = {0};
  if (dt->kind == DT_FIXED_BYTES) {
    uint8_t *f = NULL;
    size_t fl = 0;
    if (fill && dtype_parse_fill_v2(dt, fill, &f, &fl, &err) < 0)
      f = NULL;
    if (cfmask_parse_bytes(attrs, f, fl, fill != NULL, 1, &c, &err) == 0 && c) {
      for (size_t i = 0; dt->size && i + dt->size <= n; i += dt->size)
        cfmask_bytes_masked(c, b + i, dt->size);
    }
    free(f);
  } else if (dt->size && dt->size <= 16 &&
             cf_parse(attrs, fill, dt, &c, &err) == 0 && c) {
    for (size_t i = 0; i + dt->size <= n; i += dt->size) {
      uint8_t elem[16];
      struct cf_value v;
      char buf[CFTEXT_MAX];
      memcpy(elem, b + i, dt->size);
      if (cf_decode(c, elem, &v) == 0)
        cftext_render(&v, buf);
    }
  }
  cf_free(c);
}

/* One group and its element bytes. */
FUZZ_TARGET(cfgroup) {
  const uint8_t *nul = memchr(data, 0, size);
  size_t jl = nul ? (size_t)(nul - data) : size;
  const uint8_t *elems = nul ? nul + 1 : data + size;
  size_t nel = (size_t)(data + size - elems);
  struct zerr err = {0};
  json_t *doc = zjson_loadb((const char *)data, jl, &err);
  if (!json_is_object(doc)) {
    json_decref(doc);
    return 0;
  }
  struct cfvar_in in[FUZZ_CF_VARS];
  struct dtype dts[FUZZ_CF_VARS];
  size_t n = 0;
  const char *name;
  json_t *v;
  json_object_foreach(doc, name, v) {
    if (n == FUZZ_CF_VARS)
      break;
    const char *dts_s = json_string_value(json_object_get(v, "dtype"));
    char endian;
    dtype_parse_numpy(dts_s ? dts_s : "", &dts[n], &endian);
    json_t *attrs = json_object_get(v, "attrs");
    in[n] = (struct cfvar_in){name, json_object_get(v, "dims"),
                              dts[n].kind == DT_FIXED_BYTES,
                              json_is_object(attrs) ? attrs : NULL};
    n++;
  }
  struct cfvars *cv = NULL;
  if (cfvars_new(in, n, &cv, &err) == 0) {
    for (size_t i = 0; i < n; i++) {
      json_t *eff = NULL;
      if (cfvars_attrs(cv, in[i].name, in[i].attrs, &eff, &err) < 0)
        continue;
      json_t *dims = in[i].dims;
      const char *last =
          json_string_value(json_array_get(dims, json_array_size(dims) - 1));
      if (last)
        cfvars_stackable(cv, last);
      json_t *fill = json_object_get(json_object_get(doc, in[i].name), "fill");
      decode_all(&dts[i], eff ? eff : in[i].attrs, fill, elems, nel);
      json_decref(eff);
    }
  }
  cfvars_free(cv);
  json_decref(doc);
  return 0;
}
