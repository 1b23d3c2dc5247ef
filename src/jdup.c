/* jdup.c - duplicate keys of a JSON object (see jdup.h). */
#include "jdup.h"

#include <errno.h>
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "meta.h"

struct span {
  const char *p; /* the key's characters, quotes excluded */
  size_t n;
};

struct scan {
  const char *p, *end;
};

/* Skip blanks. */
static void ws(struct scan *s) {
  while (s->p < s->end &&
         (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
    s->p++;
}

/* At a '"': skip the string; its inside into sp. -1 if unterminated. */
static int str(struct scan *s, struct span *sp) {
  const char *b = ++s->p;
  while (s->p < s->end && *s->p != '"')
    s->p += *s->p == '\\' ? 2 : 1;
  if (s->p >= s->end)
    return -1;
  if (sp) {
    sp->p = b;
    sp->n = (size_t)(s->p - b);
  }
  s->p++;
  return 0;
}

/* Skip one value (nesting counted, strings skipped whole). */
static int skip_value(struct scan *s) {
  ws(s);
  long depth = 0;
  while (s->p < s->end) {
    char c = *s->p;
    if (c == '"') {
      if (str(s, NULL) < 0)
        return -1;
    } else if (c == '{' || c == '[') {
      depth++;
      s->p++;
    } else if (c == '}' || c == ']') {
      if (depth == 0)
        return 0; /* the end of the enclosing container */
      depth--;
      s->p++;
    } else if (c == ',' && depth == 0) {
      return 0;
    } else {
      s->p++;
    }
    if (depth == 0 && (c == '"' || c == '}' || c == ']')) {
      ws(s);
      return 0;
    }
  }
  return -1;
}

/* Walk the keys of the object at s->p: count them, and collect them when
 * keys is not NULL. */
static int walk(struct scan *s, size_t *count, struct span *keys) {
  ws(s);
  if (s->p >= s->end || *s->p != '{')
    return -1;
  s->p++;
  *count = 0;
  for (;;) {
    ws(s);
    if (s->p < s->end && *s->p == '}')
      return 0;
    struct span k;
    if (s->p >= s->end || *s->p != '"' || str(s, &k) < 0)
      return -1;
    if (keys)
      keys[*count] = k;
    (*count)++;
    ws(s);
    if (s->p >= s->end || *s->p++ != ':')
      return -1;
    if (skip_value(s) < 0)
      return -1;
    ws(s);
    if (s->p < s->end && *s->p == ',') {
      s->p++;
      continue;
    }
    if (s->p < s->end && *s->p == '}')
      return 0;
    return -1;
  }
}

/* Position s at the object to inspect. */
static int find(struct scan *s, const char *member) {
  if (!member)
    return 0;
  ws(s);
  if (s->p >= s->end || *s->p != '{')
    return -1;
  s->p++;
  size_t ml = strlen(member);
  for (;;) {
    ws(s);
    struct span k;
    if (s->p >= s->end || *s->p != '"' || str(s, &k) < 0)
      return -1;
    ws(s);
    if (s->p >= s->end || *s->p++ != ':')
      return -1;
    ws(s);
    if (k.n == ml && !memcmp(k.p, member, ml))
      return 0;
    if (skip_value(s) < 0)
      return -1;
    ws(s);
    if (s->p >= s->end || *s->p++ != ',')
      return -1;
  }
}

/* Order spans by bytes, then length. */
static int span_cmp(const void *a, const void *b) {
  const struct span *x = a, *y = b;
  size_t n = x->n < y->n ? x->n : y->n;
  int c = memcmp(x->p, y->p, n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

int jdup_keys(const char *text, size_t len, const char *member, size_t expected,
              char ***out, size_t *n, struct zerr *err) {
  *out = NULL;
  *n = 0;
  struct scan s = {text, text + len};
  size_t count;
  if (find(&s, member) < 0)
    return 0;
  const char *start = s.p;
  if (walk(&s, &count, NULL) < 0 || count <= expected)
    return 0;
  struct span *keys = malloc(count * sizeof *keys);
  if (!keys)
    return zerr_set(err, ENOMEM, "out of memory");
  s.p = start;
  walk(&s, &count, keys);
  qsort(keys, count, sizeof *keys, span_cmp);
  char **d = NULL;
  size_t nd = 0;
  int rc = 0;
  for (size_t i = 1; i < count && rc == 0; i++) {
    if (span_cmp(&keys[i - 1], &keys[i]) ||
        (i >= 2 && !span_cmp(&keys[i - 2], &keys[i])))
      continue; /* not a duplicate, or already reported */
    /* Decode the key as JSON text: "..." */
    char *q = malloc(keys[i].n + 3);
    char **nd2 = realloc(d, (nd + 1) * sizeof *d);
    if (!q || !nd2) {
      free(q);
      if (nd2)
        d = nd2;
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    d = nd2;
    q[0] = '"';
    memcpy(q + 1, keys[i].p, keys[i].n);
    q[keys[i].n + 1] = '"';
    q[keys[i].n + 2] = '\0';
    zjson_watch();
    json_t *j = json_loads(q, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    free(q);
    const char *v = json_string_value(j);
    if ((!j && zjson_nomem()) || (v && !(d[nd] = strdup(v))))
      rc = zerr_set(err, ENOMEM, "out of memory");
    else if (v)
      nd++;
    json_decref(j);
  }
  free(keys);
  if (rc) {
    jdup_free(d, nd);
    return rc;
  }
  *out = d;
  *n = nd;
  return 0;
}

void jdup_free(char **keys, size_t n) {
  for (size_t i = 0; keys && i < n; i++)
    free(keys[i]);
  free(keys);
}
