/* kerchunk.c - kerchunk reference files into a manifest (see kerchunk.h). */
#define _GNU_SOURCE /* asprintf */
#include "kerchunk.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "jdup.h"
#include "log.h"

/* gen expands at most this many keys in all (a typo must not hang us). */
#define GEN_MAX 50000000ull

/* ---- integer expressions ---- */

struct expr {
  const char *p;
  const char *const *names;
  const int64_t *vals;
  int nvars, depth;
  struct zerr *err;
};

static int ex_sum(struct expr *x, int64_t *v);

/* Skip blanks. */
static void ex_ws(struct expr *x) {
  while (isspace((unsigned char)*x->p))
    x->p++;
}

/* number | name | '(' sum ')' | '-' primary */
static int ex_primary(struct expr *x, int64_t *v) {
  ex_ws(x);
  if (++x->depth > 64)
    return zerr_set(x->err, EINVAL, "expression nested too deeply");
  int rc = 0;
  if (*x->p == '-') {
    x->p++;
    rc = ex_primary(x, v);
    if (rc == 0) {
      if (*v == INT64_MIN)
        rc = zerr_set(x->err, EINVAL, "integer overflow");
      else
        *v = -*v;
    }
  } else if (*x->p == '(') {
    x->p++;
    rc = ex_sum(x, v);
    ex_ws(x);
    if (rc == 0 && *x->p++ != ')')
      rc = zerr_set(x->err, EINVAL, "missing ')'");
  } else if (isdigit((unsigned char)*x->p)) {
    errno = 0;
    char *end;
    long long n = strtoll(x->p, &end, 10);
    if (errno)
      rc = zerr_set(x->err, EINVAL, "number out of range");
    *v = n;
    x->p = end;
  } else if (isalpha((unsigned char)*x->p) || *x->p == '_') {
    const char *s = x->p;
    while (isalnum((unsigned char)*x->p) || *x->p == '_')
      x->p++;
    size_t n = (size_t)(x->p - s);
    int found = 0;
    for (int i = 0; i < x->nvars && !found; i++)
      if (strlen(x->names[i]) == n && !strncmp(x->names[i], s, n)) {
        *v = x->vals[i];
        found = 1;
      }
    if (!found)
      rc = zerr_set(x->err, EINVAL, "unknown name '%.*s'", (int)n, s);
  } else {
    rc = zerr_set(x->err, EINVAL, "unexpected '%c'", *x->p ? *x->p : ' ');
  }
  x->depth--;
  return rc;
}

/* primary (('*' | '//' | '/' | '%') primary)* */
static int ex_prod(struct expr *x, int64_t *v) {
  ZTRY(ex_primary(x, v));
  for (;;) {
    ex_ws(x);
    char op = *x->p;
    if (op != '*' && op != '/' && op != '%')
      return 0;
    int floordiv = op == '/' && x->p[1] == '/';
    x->p += floordiv ? 2 : 1;
    int64_t r;
    ZTRY(ex_primary(x, &r));
    if (op == '*') {
      if (__builtin_mul_overflow(*v, r, v))
        return zerr_set(x->err, EINVAL, "integer overflow");
      continue;
    }
    if (r == 0 || (*v == INT64_MIN && r == -1))
      return zerr_set(x->err, EINVAL, "division by zero or overflow");
    int64_t q = *v / r, m = *v % r;
    if (op == '/' && !floordiv && m)
      return zerr_set(x->err, EINVAL, "'/' gives a fraction");
    if (m && ((m < 0) != (r < 0))) { /* Python floors */
      q--;
      m += r;
    }
    *v = op == '%' ? m : q;
  }
}

/* prod (('+' | '-') prod)* */
static int ex_sum(struct expr *x, int64_t *v) {
  ZTRY(ex_prod(x, v));
  for (;;) {
    ex_ws(x);
    char op = *x->p;
    if (op != '+' && op != '-')
      return 0;
    x->p++;
    int64_t r;
    ZTRY(ex_prod(x, &r));
    if (op == '+' ? __builtin_add_overflow(*v, r, v)
                  : __builtin_sub_overflow(*v, r, v))
      return zerr_set(x->err, EINVAL, "integer overflow");
  }
}

int kerchunk_render(const char *tmpl, const void *templates,
                    const char *const *names, const int64_t *vals, int nvars,
                    char **out, struct zerr *err) {
  struct zbuf b;
  zbuf_init(&b, (size_t)1 << 20);
  const char *s = tmpl;
  int rc = 0;
  while (rc == 0 && *s) {
    const char *open = strstr(s, "{{");
    if (!open) {
      rc = zbuf_append(&b, s, strlen(s), err);
      break;
    }
    const char *close = strstr(open + 2, "}}");
    if (!close) {
      rc = zerr_set(err, EINVAL, "'{{' without '}}' in '%s'", tmpl);
      break;
    }
    rc = zbuf_append(&b, s, (size_t)(open - s), err);
    if (rc)
      break;
    char inner[256];
    size_t n = (size_t)(close - open - 2);
    if (n >= sizeof inner) {
      rc = zerr_set(err, EINVAL, "template expression too long");
      break;
    }
    memcpy(inner, open + 2, n);
    inner[n] = '\0';
    char *a = inner, *e = inner + n;
    while (isspace((unsigned char)*a))
      a++;
    while (e > a && isspace((unsigned char)e[-1]))
      *--e = '\0';
    json_t *t = templates ? json_object_get((json_t *)templates, a) : NULL;
    if (json_is_string(t)) {
      rc = zbuf_append(&b, json_string_value(t), json_string_length(t), err);
    } else {
      struct expr x = {a, names, vals, nvars, 0, err};
      int64_t v;
      rc = ex_sum(&x, &v);
      ex_ws(&x);
      if (rc == 0 && *x.p)
        rc = zerr_set(err, EINVAL, "cannot evaluate '{{%s}}'", a);
      if (rc == 0) {
        char num[32];
        int k = snprintf(num, sizeof num, "%lld", (long long)v);
        rc = zbuf_append(&b, num, (size_t)k, err);
      }
    }
    s = close + 2;
  }
  if (rc == 0)
    rc = zbuf_append(&b, "", 1, err);
  if (rc) {
    zbuf_free(&b);
    return rc;
  }
  size_t len;
  *out = (char *)zbuf_steal(&b, &len);
  return 0;
}

/* ---- references ---- */

/* A non-negative integer from a JSON number or a decimal string. */
static int nonneg(json_t *j, uint64_t *out) {
  if (json_is_integer(j) && json_integer_value(j) >= 0) {
    *out = (uint64_t)json_integer_value(j);
    return 0;
  }
  return -EINVAL;
}

/* Parse decimal text as a non-negative integer. */
static int nonneg_text(const char *s, uint64_t *out) {
  if (!isdigit((unsigned char)*s))
    return -EINVAL;
  errno = 0;
  char *end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end)
    return -EINVAL;
  *out = v;
  return 0;
}

/* Add one reference value under key; a malformed value becomes MF_BAD. */
static int add_value(struct manifest_builder *b, const char *key, json_t *v,
                     json_t *templates, struct zerr *err) {
  char why[512];
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (n >= 7 && !strncmp(s, "base64:", 7)) {
      uint8_t *raw;
      size_t len;
      int rc = zbase64_decode(s + 7, n - 7, &raw, &len);
      if (rc == -ENOMEM)
        return zerr_set(err, ENOMEM, "out of memory");
      if (rc < 0)
        return manifest_add_bad(b, key, "reference: bad base64 data", err);
      rc = manifest_add_inline(b, key, raw, len, err);
      free(raw);
      return rc;
    }
    return manifest_add_inline(b, key, s, n, err);
  }
  size_t n = json_is_array(v) ? json_array_size(v) : 0;
  json_t *url = json_array_get(v, 0);
  if ((n != 1 && n != 3) || !json_is_string(url)) {
    snprintf(why, sizeof why,
             "reference: value must be text, \"base64:...\", [url] or [url, "
             "offset, length]");
    return manifest_add_bad(b, key, why, err);
  }
  char *path;
  struct zerr terr = {0};
  if (!strstr(json_string_value(url), "{{")) { /* the common case: no copy */
    path = NULL;
  } else if (kerchunk_render(json_string_value(url), templates, NULL, NULL, 0,
                             &path, &terr) < 0) {
    zerr_prefix(&terr, "reference url: ");
    return manifest_add_bad(b, key, terr.msg, err);
  }
  const char *target = path ? path : json_string_value(url);
  int rc;
  uint64_t off, len;
  if (n == 1) {
    rc = manifest_add_whole(b, key, target, err);
  } else if (nonneg(json_array_get(v, 1), &off) < 0 ||
             nonneg(json_array_get(v, 2), &len) < 0) {
    rc = manifest_add_bad(b, key,
                          "reference: offset and length must be non-negative "
                          "integers",
                          err);
  } else {
    rc = manifest_add_range(b, key, target, off, len, err);
    if (rc == -EINVAL) /* overflow or an empty url */
      rc = manifest_add_bad(b, key, err->msg, err);
  }
  free(path);
  return rc;
}

/* Add with a key check: a refused key is logged and left out. */
static int add_checked(struct manifest_builder *b, const char *path,
                       const char *key, json_t *v, json_t *templates,
                       struct zerr *err) {
  if (store_key_valid(key) < 0) {
    zlog(ZLOG_WARN,
         "%s: refusing reference key '%s' (empty segment, '.', "
         "'..' or a leading '/')",
         path, key);
    return 0;
  }
  return add_value(b, key, v, templates, err);
}

/* The values of dimension d: {start, stop, step} or a list of integers. */
static int dim_values(json_t *d, int64_t **vals, size_t *n, struct zerr *err) {
  if (json_is_array(d)) {
    *n = json_array_size(d);
    *vals = malloc((*n ? *n : 1) * sizeof **vals);
    if (!*vals)
      return zerr_set(err, ENOMEM, "out of memory");
    for (size_t i = 0; i < *n; i++) {
      json_t *e = json_array_get(d, i);
      if (!json_is_integer(e)) {
        free(*vals);
        return zerr_set(err, EINVAL, "dimension values must be integers");
      }
      (*vals)[i] = json_integer_value(e);
    }
    return 0;
  }
  json_t *jstart = json_object_get(d, "start"),
         *jstop = json_object_get(d, "stop"),
         *jstep = json_object_get(d, "step");
  if (!json_is_object(d) || !json_is_integer(jstop) ||
      (jstart && !json_is_integer(jstart)) ||
      (jstep && !json_is_integer(jstep)))
    return zerr_set(err, EINVAL,
                    "a dimension must be a list or {start, stop, step}");
  int64_t start = jstart ? json_integer_value(jstart) : 0,
          stop = json_integer_value(jstop),
          step = jstep ? json_integer_value(jstep) : 1;
  if (step <= 0)
    return zerr_set(err, EINVAL, "dimension step must be positive");
  uint64_t cnt =
      stop > start
          ? ((uint64_t)(stop - start) + (uint64_t)step - 1) / (uint64_t)step
          : 0;
  if (cnt > GEN_MAX)
    return zerr_set(err, EINVAL, "dimension too large");
  *n = (size_t)cnt;
  *vals = malloc((cnt ? cnt : 1) * sizeof **vals);
  if (!*vals)
    return zerr_set(err, ENOMEM, "out of memory");
  for (uint64_t i = 0; i < cnt; i++)
    (*vals)[i] = start + (int64_t)i * step;
  return 0;
}

/* Expand one gen entry. */
static int add_gen(struct manifest_builder *b, const char *path, json_t *g,
                   json_t *templates, uint64_t *total, struct zerr *err) {
  json_t *jkey = json_object_get(g, "key"), *jurl = json_object_get(g, "url"),
         *joff = json_object_get(g, "offset"),
         *jlen = json_object_get(g, "length"),
         *dims = json_object_get(g, "dimensions");
  if (!json_is_string(jkey) || !json_is_string(jurl) || !json_is_object(dims) ||
      (joff && !json_is_string(joff) && !json_is_integer(joff)) ||
      (jlen && !json_is_string(jlen) && !json_is_integer(jlen)) ||
      (!joff != !jlen))
    return zerr_set(err, EINVAL,
                    "gen entry needs key, url, dimensions (and offset with "
                    "length)");
  size_t nd = json_object_size(dims);
  if (nd == 0 || nd > 16)
    return zerr_set(err, EINVAL, "gen entry needs 1 to 16 dimensions");
  const char *names[16];
  int64_t *vals[16] = {0}, cur[16];
  size_t cnt[16], pos[16] = {0};
  int rc = 0;
  size_t d = 0;
  const char *name;
  json_t *dv;
  uint64_t prod = 1;
  json_object_foreach(dims, name, dv) {
    names[d] = name;
    rc = dim_values(dv, &vals[d], &cnt[d], err);
    if (rc)
      break;
    if (zmul_u64(prod, cnt[d], &prod) < 0 || *total + prod > GEN_MAX)
      rc = zerr_set(err, EINVAL, "gen expands to too many keys");
    d++;
    if (rc)
      break;
  }
  if (rc == 0 && prod)
    *total += prod;
  for (uint64_t k = 0; rc == 0 && k < prod; k++) {
    for (size_t i = 0; i < nd; i++)
      cur[i] = vals[i][pos[i]];
    char *key = NULL, *url = NULL, *off = NULL, *len = NULL;
    rc = kerchunk_render(json_string_value(jkey), templates, names, cur,
                         (int)nd, &key, err);
    if (rc == 0)
      rc = kerchunk_render(json_string_value(jurl), templates, names, cur,
                           (int)nd, &url, err);
    if (rc == 0 && joff) {
      if (json_is_integer(joff))
        rc = asprintf(&off, "%lld", (long long)json_integer_value(joff)) < 0
                 ? zerr_set(err, ENOMEM, "out of memory")
                 : 0;
      else
        rc = kerchunk_render(json_string_value(joff), templates, names, cur,
                             (int)nd, &off, err);
    }
    if (rc == 0 && jlen) {
      if (json_is_integer(jlen))
        rc = asprintf(&len, "%lld", (long long)json_integer_value(jlen)) < 0
                 ? zerr_set(err, ENOMEM, "out of memory")
                 : 0;
      else
        rc = kerchunk_render(json_string_value(jlen), templates, names, cur,
                             (int)nd, &len, err);
    }
    if (rc == 0) {
      if (store_key_valid(key) < 0) {
        zlog(ZLOG_WARN, "%s: refusing generated key '%s'", path, key);
      } else if (!joff) {
        rc = manifest_add_whole(b, key, url, err);
      } else {
        uint64_t o, l;
        if (nonneg_text(off, &o) < 0 || nonneg_text(len, &l) < 0)
          rc = manifest_add_bad(b, key,
                                "generated offset and length must be "
                                "non-negative integers",
                                err);
        else
          rc = manifest_add_range(b, key, url, o, l, err);
      }
    }
    free(key);
    free(url);
    free(off);
    free(len);
    for (size_t i = nd; i-- > 0;) { /* last dimension fastest */
      if (++pos[i] < cnt[i])
        break;
      pos[i] = 0;
    }
  }
  for (size_t i = 0; i < nd; i++)
    free(vals[i]);
  return rc;
}

/* The directory of path, absolute. */
static char *dir_of(const char *path) {
  char *abs = realpath(path, NULL);
  if (!abs)
    return NULL;
  char *slash = strrchr(abs, '/');
  if (slash == abs)
    slash[1] = '\0';
  else
    *slash = '\0';
  return abs;
}

/* Make every key the file names twice fail with a reason (jansson keeps
 * the last silently). */
static int mark_duplicates(struct manifest_builder *b, const char *text,
                           size_t len, const char *member, json_t *refs,
                           struct zerr *err) {
  char **dups;
  size_t nd;
  ZTRY(jdup_keys(text, len, member, json_object_size(refs), &dups, &nd, err));
  int rc = 0;
  for (size_t i = 0; i < nd && rc == 0; i++)
    if (store_key_valid(dups[i]) == 0)
      rc = manifest_add_bad(b, dups[i],
                            "the key appears more than once in the reference "
                            "file (duplicate key)",
                            err);
  jdup_free(dups, nd);
  return rc;
}

int kerchunk_load(const char *path, struct manifest **out, struct zerr *err) {
  json_error_t je;
  char *text = NULL;
  size_t tlen = 0;
  ZTRY(zread_file(path, SIZE_MAX, &text, &tlen, err));
  json_t *root = json_loadb(text ? text : "", tlen, JSON_ALLOW_NUL, &je);
  if (!root) {
    free(text);
    return zerr_set(err, EIO, "not valid JSON: %s (line %d)", je.text, je.line);
  }
  json_t *refs = root, *templates = NULL, *gen = NULL;
  int rc = 0;
  if (!json_is_object(root)) {
    rc = zerr_set(err, EIO, "the top level must be an object");
  } else if (json_object_get(root, "version")) {
    json_t *ver = json_object_get(root, "version");
    refs = json_object_get(root, "refs");
    templates = json_object_get(root, "templates");
    gen = json_object_get(root, "gen");
    if (!json_is_integer(ver) || json_integer_value(ver) != 1)
      rc = zerr_set(err, EIO, "unsupported reference version (only 0 and 1)");
    else if (!json_is_object(refs))
      rc = zerr_set(err, EIO, "version 1 needs a 'refs' object");
    else if (templates && !json_is_object(templates))
      rc = zerr_set(err, EIO, "'templates' must be an object");
    else if (gen && !json_is_array(gen))
      rc = zerr_set(err, EIO, "'gen' must be a list");
  }
  char *base = rc ? NULL : dir_of(path);
  if (rc == 0 && !base)
    rc = zerr_set(err, EIO, "%s: %s", path, strerror(errno));
  struct manifest_builder *b = NULL;
  if (rc == 0)
    rc = manifest_builder_new(base, &b, err);
  free(base);
  uint64_t total = 0;
  for (size_t i = 0; rc == 0 && gen && i < json_array_size(gen); i++) {
    rc = add_gen(b, path, json_array_get(gen, i), templates, &total, err);
    if (rc)
      zerr_prefix(err, "gen entry %zu: ", i);
  }
  const char *key;
  json_t *v;
  if (rc == 0) {
    json_object_foreach(refs, key, v) {
      rc = add_checked(b, path, key, v, templates, err);
      if (rc)
        break;
    }
  }
  if (rc == 0)
    rc =
        mark_duplicates(b, text, tlen, refs == root ? NULL : "refs", refs, err);
  free(text);
  json_decref(root);
  if (rc) {
    manifest_builder_free(b);
    return rc;
  }
  rc = manifest_builder_finish(b, out, NULL, err);
  malloc_trim(0); /* give the parse's memory back before serving */
  return rc;
}
