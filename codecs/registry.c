/* registry.c - the table of codecs this build knows, lookup by name or
 * alias, and the helpers codecs use to read their JSON configuration.
 *
 * The table is const: nothing here is ever written after compilation, so
 * lookups need no lock. */
#include "codec.h"

#include "../src/util/buf.h"

#include <string.h>

/* Implementations live one per file; they are reached only through here. */
extern const struct codec_impl codec_bytes;
extern const struct codec_impl codec_vlen;
extern const struct codec_impl codec_vlen_utf8;
extern const struct codec_impl codec_vlen_bytes;
extern const struct codec_impl codec_vlen_array;
extern const struct codec_impl codec_vlen_v2;
extern const struct codec_impl codec_gzip;
extern const struct codec_impl codec_zstd;
extern const struct codec_impl codec_crc32c;
extern const struct codec_impl codec_transpose;
extern const struct codec_impl codec_sharding;
extern const struct codec_impl codec_reshape;
extern const struct codec_impl codec_squeeze;
extern const struct codec_impl codec_delta;
extern const struct codec_impl codec_blosc;
extern const struct codec_impl codec_numcodecs_zlib;
extern const struct codec_impl codec_numcodecs_gzip;
extern const struct codec_impl codec_numcodecs_zstd;
extern const struct codec_impl codec_numcodecs_bz2;
extern const struct codec_impl codec_numcodecs_lz4;
extern const struct codec_impl codec_numcodecs_shuffle;
extern const struct codec_impl codec_numcodecs_adler32;
extern const struct codec_impl codec_numcodecs_crc32;
extern const struct codec_impl codec_numcodecs_crc32c;
extern const struct codec_impl codec_numcodecs_fletcher32;
extern const struct codec_impl codec_packbits;
extern const struct codec_impl codec_numcodecs_packbits;
extern const struct codec_impl codec_optional;
extern const struct codec_impl codec_fixedscaleoffset;
extern const struct codec_impl codec_json2;
extern const struct codec_impl codec_bitround;
extern const struct codec_impl codec_zfp;
extern const struct codec_impl codec_numcodecs_zfpy;
extern const struct codec_impl codec_json;
extern const struct codec_impl codec_msgpack2;

static const struct codec_impl *const registry_table[] = {
    &codec_bytes,
    &codec_vlen,
    &codec_vlen_utf8,
    &codec_vlen_bytes,
    &codec_vlen_array,
    &codec_vlen_v2,
    &codec_gzip,
    &codec_zstd,
    &codec_crc32c,
    &codec_transpose,
    &codec_sharding,
    &codec_reshape,
    &codec_squeeze,
    &codec_delta,
    &codec_blosc,
    &codec_numcodecs_zlib,
    &codec_numcodecs_gzip,
    &codec_numcodecs_zstd,
    &codec_numcodecs_bz2,
    &codec_numcodecs_lz4,
    &codec_numcodecs_shuffle,
    &codec_numcodecs_adler32,
    &codec_numcodecs_crc32,
    &codec_numcodecs_crc32c,
    &codec_numcodecs_fletcher32,
    &codec_packbits,
    &codec_numcodecs_packbits,
    &codec_optional,
    &codec_fixedscaleoffset,
    &codec_json2,
    &codec_bitround,
    &codec_zfp,
    &codec_numcodecs_zfpy,
    &codec_json,
    &codec_msgpack2,
    NULL,
};

/* Exact, case-sensitive match against the name and every alias (zarrs and
 * zarr-python both match names as exact strings). */
const struct codec_impl *codec_lookup(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; registry_table[i]; i++) {
    const struct codec_impl *c = registry_table[i];
    if (!strcmp(c->name, name))
      return c;
    for (size_t a = 0; c->aliases && c->aliases[a]; a++)
      if (!strcmp(c->aliases[a], name))
        return c;
  }
  return NULL;
}

/* The whole table, NULL-terminated. */
const struct codec_impl *const *codec_all(void) { return registry_table; }

/* One entry of a `codecs` list: "name" or {"name", "configuration",
 * "must_understand"}. Other members are tolerated, as the spec allows
 * additional fields inside extension objects. */
int codec_entry_parse(json_t *j, const char **name, json_t **config,
                      int *optional, struct zerr *err) {
  *name = NULL;
  *config = NULL;
  *optional = 0;
  if (json_is_string(j)) {
    *name = json_string_value(j);
    return 0;
  }
  if (!json_is_object(j))
    return zerr_set(err, EIO,
                    "codec entry must be a string or an object with a name");
  json_t *n = json_object_get(j, "name");
  if (!json_is_string(n))
    return zerr_set(err, EIO, "codec entry has no string 'name'");
  json_t *c = json_object_get(j, "configuration");
  if (c && !json_is_object(c))
    return zerr_set(err, EIO, "codec '%s': 'configuration' must be an object",
                    json_string_value(n));
  json_t *mu = json_object_get(j, "must_understand");
  if (mu && !json_is_boolean(mu))
    return zerr_set(err, EIO, "codec '%s': 'must_understand' must be a boolean",
                    json_string_value(n));
  *name = json_string_value(n);
  *config = c;
  *optional = mu && json_is_false(mu);
  return 0;
}

/* Integer member; messages name the key, callers prefix the codec. */
int codec_cfg_int(json_t *config, const char *key, int required, long long def,
                  long long *out, struct zerr *err) {
  json_t *v = config ? json_object_get(config, key) : NULL;
  if (!v) {
    if (required)
      return zerr_set(err, EIO, "missing required configuration key '%s'", key);
    *out = def;
    return 0;
  }
  if (!json_is_integer(v))
    return zerr_set(err, EIO, "configuration key '%s' must be an integer", key);
  *out = (long long)json_integer_value(v);
  return 0;
}

/* Number member (integer or real). */
int codec_cfg_num(json_t *config, const char *key, int required, double def,
                  double *out, struct zerr *err) {
  json_t *v = config ? json_object_get(config, key) : NULL;
  if (!v) {
    if (required)
      return zerr_set(err, EIO, "missing required configuration key '%s'", key);
    *out = def;
    return 0;
  }
  if (!json_is_number(v))
    return zerr_set(err, EIO, "configuration key '%s' must be a number", key);
  *out = json_number_value(v);
  return 0;
}

/* String member (borrowed from config). */
int codec_cfg_str(json_t *config, const char *key, int required,
                  const char *def, const char **out, struct zerr *err) {
  json_t *v = config ? json_object_get(config, key) : NULL;
  if (!v) {
    if (required)
      return zerr_set(err, EIO, "missing required configuration key '%s'", key);
    *out = def;
    return 0;
  }
  if (!json_is_string(v))
    return zerr_set(err, EIO, "configuration key '%s' must be a string", key);
  *out = json_string_value(v);
  return 0;
}

/* Reject any member not listed; a NULL config has no members. */
int codec_cfg_only(json_t *config, const char *codec,
                   const char *const *allowed, struct zerr *err) {
  if (!config)
    return 0;
  if (!json_is_object(config))
    return zerr_set(err, EIO, "%s: configuration must be an object", codec);
  const char *key;
  json_t *val;
  json_object_foreach(config, key, val) {
    (void)val;
    int ok = 0;
    for (size_t i = 0; allowed && allowed[i]; i++)
      if (!strcmp(allowed[i], key)) {
        ok = 1;
        break;
      }
    if (!ok)
      return zerr_set(err, EIO, "%s: unknown configuration key '%s'", codec,
                      key);
  }
  return 0;
}

/* Load a codec's whole input, naming the codec in errors. */
int codec_load_input(struct bytesrc *in, const struct codec_env *env,
                     const char *codec, struct bytesrc **out,
                     struct zerr *err) {
  int rc = bytesrc_load(in, env->max_decoded, out, err);
  /* The codec's own limit names it; a failure to read what it was given
   * is the source's, already named by where it read (the file, or the
   * endpoint asked), not the codec's. */
  if (rc == -EFBIG || rc == -ENOMEM)
    zerr_prefix(err, "%s: ", codec);
  return rc;
}

/* Hand a decoded buffer over to a memory source. */
int codec_output_from_buf(struct zbuf *b, const char *codec,
                          struct bytesrc **out, struct zerr *err) {
  size_t len;
  uint8_t *p = zbuf_steal(b, &len);
  *out = bytesrc_from_mem(p, len);
  if (!*out)
    return zerr_set(err, ENOMEM, "%s: out of memory", codec);
  return 0;
}
