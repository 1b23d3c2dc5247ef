/* kerchunk.c - kerchunk reference files into a manifest (see kerchunk.h). */
#define _GNU_SOURCE /* asprintf */
#include "config.h" /* FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION */
#include "kerchunk.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../json/jdup.h"
#include "../json/jlex.h"
#include "../json/zjson.h"
#include "../util/base64.h"
#include "../util/buf.h"
#include "../util/file.h"
#include "../util/log.h"
#include "../util/zmath.h"
#include "../zarr/meta.h"

/* gen expands at most GEN_MAX keys in all (a typo must not hang us),
 * counted before any is made (gen_total), and renders at most GEN_BYTES_MAX
 * bytes of keys, urls, offsets and lengths in all: a template value of a
 * few KB used in every url would otherwise make a 4 KB file cost hours
 * and gigabytes. Each rendered field counts the larger of its template's
 * length and its result's, so work is bounded too (a url of thousands of
 * "{{e}}", e empty, renders nothing but is scanned for every key). The
 * urls of refs that use templates count against the same ceiling. One rendered value is at most RENDER_MAX bytes (a url
 * longer than 16 KiB is refused by common HTTP servers anyway). A fuzzing
 * build (--enable-fuzzing) uses smaller ceilings, so that one input's run
 * stays within the fuzzer's time and memory limits: the code paths are
 * the same, only the numbers differ. */
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define GEN_MAX 200000ull
#define GEN_BYTES_MAX ((uint64_t)16 << 20)
#else
#define GEN_MAX 50000000ull
#define GEN_BYTES_MAX ((uint64_t)2 << 30)
#endif
#define RENDER_MAX ((size_t)16 << 10)

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
    /* Never step past the end: the caller still skips blanks after an
     * error (fuzz_kerchunk_render: "(i" read beyond its buffer). */
    if (rc == 0 && *x->p != ')')
      rc = zerr_set(x->err, EINVAL, "missing ')'");
    else if (rc == 0)
      x->p++;
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

/* The first "cc" at or after s, or NULL. Not strstr: ASan's reads the whole
 * rest at every call, so 2,000 "{{e}}" rendered in quadratic time. */
static const char *find_pair(const char *s, char c) {
  for (; *s; s++)
    if (s[0] == c && s[1] == c)
      return s;
  return NULL;
}

/* kerchunk_render with the length of the result in *outlen: a template
 * value may bring a NUL byte into the text, which only the length shows. */
static int render_n(const char *tmpl, const void *templates,
                    const char *const *names, const int64_t *vals, int nvars,
                    char **out, size_t *outlen, struct zerr *err) {
  struct zbuf b;
  zbuf_init(&b, RENDER_MAX + 1); /* + the terminating NUL */
  const char *s = tmpl;
  int rc = 0;
  while (rc == 0 && *s) {
    const char *open = find_pair(s, '{');
    if (!open) {
      rc = zbuf_append(&b, s, strlen(s), err);
      break;
    }
    const char *close = find_pair(open + 2, '}');
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
  if (rc == -EFBIG)
    rc = zerr_set(err, EINVAL, "'%.64s...' renders to more than %zu bytes",
                  tmpl, RENDER_MAX);
  if (rc) {
    zbuf_free(&b);
    return rc;
  }
  size_t len;
  *out = (char *)zbuf_steal(&b, &len);
  *outlen = len - 1; /* without the terminating NUL appended above */
  return 0;
}

/* Render, refusing a result with a NUL byte inside (it would be cut short
 * where it is used as a C string). */
int kerchunk_render(const char *tmpl, const void *templates,
                    const char *const *names, const int64_t *vals, int nvars,
                    char **out, struct zerr *err) {
  size_t n;
  ZTRY(render_n(tmpl, templates, names, vals, nvars, out, &n, err));
  if (memchr(*out, '\0', n)) {
    free(*out);
    *out = NULL;
    return zerr_set(err, EINVAL, "'%s' renders to text with a NUL byte", tmpl);
  }
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

/* Add inline text (or "base64:DATA") under key. */
static int add_text(struct manifest_builder *b, const char *key, const char *s,
                    size_t n, struct zerr *err) {
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

/* Add [url] (whole) or [url, off, len] under key, rendering templates; a
 * rendered url's length adds to *rendered (GEN_BYTES_MAX in all, with
 * gen's): "{{t}}{{t}}{{t}}" with a 5 KB t made 15 KB of a 20-byte ref. */
static int add_url(struct manifest_builder *b, const char *key, const char *url,
                   int whole, uint64_t off, uint64_t len, json_t *templates,
                   uint64_t *rendered, struct zerr *err) {
  char *path;
  size_t plen;
  struct zerr terr = {0};
  if (!strstr(url, "{{")) { /* the common case: no copy */
    path = NULL;
  } else if (render_n(url, templates, NULL, NULL, 0, &path, &plen, &terr) < 0) {
    zerr_prefix(&terr, "reference url: ");
    return manifest_add_bad(b, key, terr.msg, err);
  } else if ((*rendered += plen) > GEN_BYTES_MAX) {
    free(path);
    return zerr_set(err, EINVAL,
                    "reference urls and gen render more than %llu bytes in "
                    "all (templates)",
                    (unsigned long long)GEN_BYTES_MAX);
  } else if (memchr(path, '\0', plen)) { /* a template brought a NUL */
    free(path);
    return manifest_add_bad(b, key, MANIFEST_NUL_REASON, err);
  }
  const char *target = path ? path : url;
  int rc;
  if (whole) {
    rc = manifest_add_whole(b, key, target, err);
  } else {
    rc = manifest_add_range(b, key, target, off, len, err);
    if (rc == -EINVAL) /* overflow or an empty url */
      rc = manifest_add_bad(b, key, err->msg, err);
  }
  free(path);
  return rc;
}

/* Add one reference value under key; a malformed value becomes MF_BAD. */
static int add_value(struct manifest_builder *b, const char *key, json_t *v,
                     json_t *templates, uint64_t *rendered, struct zerr *err) {
  if (json_is_string(v))
    return add_text(b, key, json_string_value(v), json_string_length(v), err);
  size_t n = json_is_array(v) ? json_array_size(v) : 0;
  json_t *url = json_array_get(v, 0);
  if ((n != 1 && n != 3) || !json_is_string(url))
    return manifest_add_bad(b, key,
                            "reference: value must be text, \"base64:...\", "
                            "[url] or [url, offset, length]",
                            err);
  if (strlen(json_string_value(url)) != json_string_length(url))
    return manifest_add_bad(b, key, MANIFEST_NUL_REASON, err);
  uint64_t off = 0, len = 0;
  if (n == 3 && (nonneg(json_array_get(v, 1), &off) < 0 ||
                 nonneg(json_array_get(v, 2), &len) < 0))
    return manifest_add_bad(b, key,
                            "reference: offset and length must be "
                            "non-negative integers",
                            err);
  return add_url(b, key, json_string_value(url), n == 1, off, len, templates,
                 rendered, err);
}

/* How many of start, start + step, ... lie below stop (step > 0). The
 * span is taken in unsigned arithmetic: stop - start overflows an int64_t
 * for a range such as {INT64_MIN, INT64_MAX} (fuzz_kerchunk, UBSan). */
static uint64_t span_count(int64_t start, int64_t stop, int64_t step) {
  if (stop <= start)
    return 0;
  uint64_t span = (uint64_t)stop - (uint64_t)start;
  return span / (uint64_t)step + (span % (uint64_t)step != 0);
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
        *vals = NULL; /* the caller frees every dimension's values */
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
  uint64_t cnt = span_count(start, stop, step);
  if (cnt > GEN_MAX)
    return zerr_set(err, EINVAL, "dimension too large");
  *n = (size_t)cnt;
  *vals = malloc((cnt ? cnt : 1) * sizeof **vals);
  if (!*vals)
    return zerr_set(err, ENOMEM, "out of memory");
  /* In unsigned arithmetic: start + i * step lies in [start, stop), but
   * i * step alone may not fit an int64_t (a range across zero). */
  for (uint64_t i = 0; i < cnt; i++)
    (*vals)[i] = (int64_t)((uint64_t)start + i * (uint64_t)step);
  return 0;
}

/* A rendered gen field's cost against GEN_BYTES_MAX: the larger of its
 * template's length (scanned for every key) and its result's. */
static uint64_t rendered_cost(json_t *tmpl, size_t outlen) {
  size_t in = json_is_string(tmpl) ? json_string_length(tmpl) : 0;
  return in > outlen ? in : outlen;
}

static int gen_bytes_err(struct zerr *err) {
  return zerr_set(err, EINVAL,
                  "gen renders more than %llu bytes of keys and urls (or of "
                  "their templates) in all: nothing expanded",
                  (unsigned long long)GEN_BYTES_MAX);
}

/* Expand one gen entry. */
static int add_gen(struct manifest_builder *b, const char *path, json_t *g,
                   json_t *templates, uint64_t *total, uint64_t *bytes,
                   struct zerr *err) {
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
  /* Templates are used as C strings: a NUL inside would cut them short.
   * One in the url makes each generated key bad (below); elsewhere the
   * keys themselves are unknown, so the entry fails. */
  if (strlen(json_string_value(jkey)) != json_string_length(jkey) ||
      (json_is_string(joff) &&
       strlen(json_string_value(joff)) != json_string_length(joff)) ||
      (json_is_string(jlen) &&
       strlen(json_string_value(jlen)) != json_string_length(jlen)))
    return zerr_set(err, EINVAL,
                    "gen entry key, offset or length contains a NUL byte");
  int url_nul = strlen(json_string_value(jurl)) != json_string_length(jurl);
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
  /* Each key costs at least its templates' length (rendered_cost): an
   * entry that must pass the ceiling is refused before any is rendered. */
  uint64_t least;
  if (rc == 0 &&
      (zmul_u64(prod,
                rendered_cost(jkey, 0) + rendered_cost(jurl, 0) +
                    rendered_cost(joff, 0) + rendered_cost(jlen, 0),
                &least) < 0 ||
       least > GEN_BYTES_MAX - *bytes))
    rc = gen_bytes_err(err);
  for (uint64_t k = 0; rc == 0 && k < prod; k++) {
    for (size_t i = 0; i < nd; i++)
      cur[i] = vals[i][pos[i]];
    char *key = NULL, *url = NULL, *off = NULL, *len = NULL;
    size_t ulen = 0;
    rc = kerchunk_render(json_string_value(jkey), templates, names, cur,
                         (int)nd, &key, err);
    if (rc == 0)
      rc = render_n(json_string_value(jurl), templates, names, cur, (int)nd,
                    &url, &ulen, err);
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
      *bytes += rendered_cost(jkey, strlen(key)) +
                rendered_cost(jurl, ulen) +
                (off ? rendered_cost(joff, strlen(off)) : 0) +
                (len ? rendered_cost(jlen, strlen(len)) : 0);
      if (*bytes > GEN_BYTES_MAX)
        rc = gen_bytes_err(err);
    }
    if (rc == 0) {
      if (zkey_valid(key) < 0) {
        zlog(ZLOG_WARN, "%s: refusing generated key '%s'", path, key);
      } else if (url_nul || memchr(url, '\0', ulen)) {
        rc = manifest_add_bad(b, key, MANIFEST_NUL_REASON, err);
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

/* How many values dimension d has, without making them: 0 for a shape
 * dim_values refuses (it says why when the entry is expanded). */
static uint64_t dim_count(json_t *d) {
  if (json_is_array(d))
    return json_array_size(d);
  json_t *jstart = json_object_get(d, "start"),
         *jstop = json_object_get(d, "stop"),
         *jstep = json_object_get(d, "step");
  if (!json_is_integer(jstop) || (jstart && !json_is_integer(jstart)) ||
      (jstep && !json_is_integer(jstep)))
    return 0;
  int64_t start = jstart ? json_integer_value(jstart) : 0,
          stop = json_integer_value(jstop),
          step = jstep ? json_integer_value(jstep) : 1;
  if (step <= 0)
    return 0;
  return span_count(start, stop, step);
}

/* Every gen entry's keys counted before any is made: a file asking for
 * more than GEN_MAX in all is refused at once, in bounded work and
 * memory (its dimensions are sizes here, not lists of values). An
 * entry's dimensions hold at most GEN_MAX + 16 values (what a product of
 * at most GEN_MAX allows): after an empty one, 15 more of 50,000,000
 * values each took 6 GB for no key at all. */
static int gen_total(json_t *gen, struct zerr *err) {
  uint64_t total = 0, bad_sum = 0;
  size_t bad = SIZE_MAX; /* the first entry with too many values */
  for (size_t i = 0; i < json_array_size(gen); i++) {
    json_t *dims = json_object_get(json_array_get(gen, i), "dimensions");
    const char *name;
    json_t *dv;
    uint64_t prod = json_is_object(dims) && json_object_size(dims) ? 1 : 0,
             sum = 0;
    json_object_foreach(dims, name, dv) {
      uint64_t c = dim_count(dv);
      if (zmul_u64(prod, c, &prod) < 0)
        prod = UINT64_MAX;
      sum = c > UINT64_MAX - sum ? UINT64_MAX : sum + c;
    }
    if (sum > GEN_MAX + 16 && bad == SIZE_MAX) {
      bad = i;
      bad_sum = sum;
    }
    total = prod > UINT64_MAX - total ? UINT64_MAX : total + prod;
  }
  if (total > GEN_MAX)
    return zerr_set(err, EINVAL,
                    "gen expands to %llu keys in all, more than %llu: "
                    "nothing expanded",
                    (unsigned long long)total, (unsigned long long)GEN_MAX);
  if (bad != SIZE_MAX)
    return zerr_set(err, EINVAL,
                    "gen entry %zu: its dimensions hold %llu values, more "
                    "than %llu: nothing expanded",
                    bad, (unsigned long long)bad_sum,
                    (unsigned long long)(GEN_MAX + 16));
  return 0;
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

/* ---- a streaming scanner: the refs object is walked in place with the
 * JSON lexer, without a DOM (a 1,000,000-entry file must load in well
 * under 3 s). Small parts (version, templates, gen, and values of unusual
 * shape) go through jansson. ---- */

struct scan {
  struct jlex l;
  char *buf, *buf2; /* decoded strings (key, url) */
  size_t cap, cap2;
  struct zerr *err;
  uint64_t rendered; /* bytes rendered from templates (GEN_BYTES_MAX) */
};

/* The value [start, end) parsed by jansson (it was validated already)
 * into *out: NULL when jansson refuses it (a number out of range); out of
 * memory is -ENOMEM, never a refused value. */
static int sc_small(const char *start, const char *end, json_t **out,
                    struct zerr *err) {
  json_error_t je;
  zjson_watch();
  *out = json_loadb(start, (size_t)(end - start),
                    JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
  if (zjson_nomem()) { /* jansson may then have parsed something else */
    json_decref(*out);
    *out = NULL;
    return zerr_set(err, ENOMEM, "out of memory");
  }
  return 0;
}

/* Try the common shapes at the '[': [url] or [url, int, int] with plain
 * integers. 1 = added, 0 = another shape (position undefined), <0 error. */
static int sc_fast_array(struct scan *s, struct manifest_builder *b,
                         const char *key, json_t *templates) {
  struct jlex *l = &s->l;
  l->p++;
  if (jlex_peek(l) != '"')
    return 0;
  size_t un;
  ZTRY(jlex_string_dup(l, &s->buf2, &s->cap2, &un));
  if (strlen(s->buf2) != un) /* a NUL inside: add_value marks the key bad */
    return 0;
  uint64_t nums[2];
  int k = 0;
  while (k < 2 && jlex_eat(l, ',')) {
    char c = jlex_peek(l);
    if (c != '-' && !isdigit((unsigned char)c))
      return 0;
    struct jlex_num num;
    ZTRY(jlex_number(l, &num));
    if (!num.fits_u64 || num.neg || num.mag > INT64_MAX)
      return 0;
    nums[k++] = num.mag;
  }
  if (k == 1 || !jlex_eat(l, ']'))
    return 0;
  ZTRY(add_url(b, key, s->buf2, k == 0, k ? nums[0] : 0, k ? nums[1] : 0,
               templates, &s->rendered, s->err));
  return 1;
}

/* A member's key, decoded into s->buf (*kn bytes), and the ':' after it. */
static int sc_key(struct scan *s, size_t *kn) {
  if (jlex_peek(&s->l) != '"')
    return jlex_fail(&s->l, "string or '}' expected");
  ZTRY(jlex_string_dup(&s->l, &s->buf, &s->cap, kn));
  if (!jlex_eat(&s->l, ':'))
    return jlex_fail(&s->l, "':' expected");
  return 0;
}

/* Walk the refs object at the position (at '{') adding every member. */
static int sc_refs(struct scan *s, struct manifest_builder *b, const char *path,
                   json_t *templates, size_t *members) {
  struct jlex *l = &s->l;
  int more = jlex_open(l, '{');
  while (more > 0) {
    size_t kn;
    ZTRY(sc_key(s, &kn));
    (*members)++;
    char c = jlex_peek(l);
    const char *vstart = l->p;
    const char *key = s->buf;
    if (strlen(key) != kn || zkey_valid(key) < 0) {
      zlog(ZLOG_WARN,
           "%s: refusing reference key '%s' (empty segment, '.', "
           "'..', a leading '/' or NUL)",
           path, key);
      ZTRY(jlex_skip(l));
    } else if (c == '"') {
      size_t vn;
      ZTRY(jlex_string_dup(l, &s->buf2, &s->cap2, &vn));
      ZTRY(add_text(b, key, s->buf2, vn, s->err));
    } else {
      int rc = c == '[' ? sc_fast_array(s, b, key, templates) : 0;
      if (rc < 0)
        return rc;
      if (rc == 0) { /* another shape: jansson decides */
        l->p = vstart;
        ZTRY(jlex_skip(l));
        json_t *v;
        ZTRY(sc_small(vstart, l->p, &v, s->err));
        if (!v)
          rc = manifest_add_bad(b, key, "reference: number out of range",
                                s->err);
        else
          rc = add_value(b, key, v, templates, &s->rendered, s->err);
        json_decref(v);
        if (rc < 0)
          return rc;
      }
    }
    more = jlex_next(l, '{');
  }
  return more;
}

/* The spans of the top-level members version, refs, templates, gen. */
struct top {
  const char *ver[2], *refs[2], *tmpl[2], *gen[2];
};

/* Scan the top level: an object, nothing after it. */
static int sc_top(struct scan *s, struct top *t) {
  struct jlex *l = &s->l;
  memset(t, 0, sizeof *t);
  if (jlex_at_end(l))
    return jlex_fail(l, "empty file");
  char c = jlex_peek(l);
  if (c != '{') {
    ZTRY(jlex_skip(l));
    if (!jlex_at_end(l))
      return jlex_fail(l, "end of file expected");
    return zerr_set(s->err, EIO, "the top level must be an object");
  }
  int more = jlex_open(l, '{');
  while (more > 0) {
    size_t kn;
    ZTRY(sc_key(s, &kn));
    jlex_ws(l);
    const char *v = l->p;
    ZTRY(jlex_skip(l));
    const char **span = !strcmp(s->buf, "version")     ? t->ver
                        : !strcmp(s->buf, "refs")      ? t->refs
                        : !strcmp(s->buf, "templates") ? t->tmpl
                        : !strcmp(s->buf, "gen")       ? t->gen
                                                       : NULL;
    if (span && strlen(s->buf) == kn) {
      span[0] = v;
      span[1] = l->p;
    }
    more = jlex_next(l, '{');
  }
  if (more < 0)
    return more;
  if (!jlex_at_end(l))
    return jlex_fail(l, "end of file expected");
  return 0;
}

/* One pass: gen entries, then the refs object at refs (so a refs key wins
 * over a generated one), then the keys in dups (each MF_BAD). */
static int build(struct scan *s, const char *path, const char *base,
                 const char *refs, json_t *gen, json_t *templates, char **dups,
                 size_t ndups, struct manifest **out, uint64_t *dropped,
                 size_t *members, struct zerr *err) {
  struct manifest_builder *b = NULL;
  ZTRY(manifest_builder_new(base, &b, err));
  uint64_t total = 0;
  s->rendered = 0;
  int rc = gen ? gen_total(gen, err) : 0;
  for (size_t i = 0; rc == 0 && gen && i < json_array_size(gen); i++) {
    rc = add_gen(b, path, json_array_get(gen, i), templates, &total,
                 &s->rendered, err);
    if (rc)
      zerr_prefix(err, "gen entry %zu: ", i);
  }
  *members = 0;
  s->l.p = refs;
  if (rc == 0)
    rc = sc_refs(s, b, path, templates, members);
  for (size_t i = 0; i < ndups && rc == 0; i++)
    if (zkey_valid(dups[i]) == 0)
      rc = manifest_add_bad(b, dups[i],
                            "the key appears more than once in the reference "
                            "file (duplicate key)",
                            err);
  if (rc) {
    manifest_builder_free(b);
    return rc;
  }
  return manifest_builder_finish(b, out, dropped, err);
}

/* Parse NUL-terminated text (tlen bytes) named path (for messages), whose
 * relative targets resolve against base. */
static int load_text(const char *text, size_t tlen, const char *path,
                     const char *base, struct manifest **out,
                     struct zerr *err) {
  struct scan s = {.err = err};
  jlex_init(&s.l, text, tlen, 0, err);
  struct top t;
  json_t *ver = NULL, *templates = NULL, *gen = NULL;
  const char *refs = NULL;
  int rc = sc_top(&s, &t);
  if (rc == 0 && t.ver[0]) {
    rc = sc_small(t.ver[0], t.ver[1], &ver, err);
    if (rc == 0 && t.tmpl[0])
      rc = sc_small(t.tmpl[0], t.tmpl[1], &templates, err);
    if (rc == 0 && t.gen[0])
      rc = sc_small(t.gen[0], t.gen[1], &gen, err);
    refs = t.refs[0];
    if (rc == 0 && (!json_is_integer(ver) || json_integer_value(ver) != 1))
      rc = zerr_set(err, EIO, "unsupported reference version (only 0 and 1)");
    else if (rc == 0 && (!refs || *refs != '{'))
      rc = zerr_set(err, EIO, "version 1 needs a 'refs' object");
    else if (rc == 0 && t.tmpl[0] && !json_is_object(templates))
      rc = zerr_set(err, EIO, "'templates' must be an object");
    else if (rc == 0 && t.gen[0] && !json_is_array(gen))
      rc = zerr_set(err, EIO, "'gen' must be a list");
  } else if (rc == 0) { /* version 0: the top level is the refs */
    refs = strchr(s.l.start, '{');
  }
  uint64_t dropped = 0;
  size_t members = 0;
  if (rc == 0)
    rc = build(&s, path, base, refs, gen, templates, NULL, 0, out, &dropped,
               &members, err);
  if (rc == 0 && dropped) { /* rare: duplicates, or refs overriding gen */
    char **dups;
    size_t nd;
    rc = jdup_keys(text, tlen, t.ver[0] ? "refs" : NULL, 0, &dups, &nd, err);
    if (rc == 0 && nd) { /* build again with the duplicates marked */
      manifest_free(*out);
      *out = NULL;
      rc = build(&s, path, base, refs, gen, templates, dups, nd, out, &dropped,
                 &members, err);
    }
    if (rc == 0)
      jdup_free(dups, nd);
  }
  free(s.buf);
  free(s.buf2);
  json_decref(ver);
  json_decref(templates);
  json_decref(gen);
  return rc;
}

int kerchunk_load(const char *path, struct manifest **out, struct zerr *err) {
  char *text = NULL;
  size_t tlen = 0;
  ZTRY(zread_file(path, SIZE_MAX, &text, &tlen, err));
  char *base = dir_of(path);
  int e = errno;
  int rc = base ? load_text(text ? text : "", tlen, path, base, out, err)
                : zerr_set(err, zerr_is_transient(e) ? e : EIO, "%s: %s", path,
                           strerror(e));
  free(base);
  free(text);
  return rc;
}

int kerchunk_load_mem(const char *text, size_t len, const char *name,
                      const char *base, struct manifest **out,
                      struct zerr *err) {
  return load_text(text, len, name, base, out, err);
}
