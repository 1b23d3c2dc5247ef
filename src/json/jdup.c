/* jdup.c - duplicate keys of a JSON object (see jdup.h). */
#include "jdup.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../util/buf.h"
#include "jlex.h"

/* A decoded key: bytes [off, off + n) of the arena, at p once the arena
 * stopped moving. */
struct span {
  size_t off, n;
  const uint8_t *p;
};

/* The lexer over the text: lenient like the loaders whose documents it
 * checks (NaN and Infinity are numbers). A scan failure is no error here:
 * the DOM parser reported it already. */
static void lex_init(struct jlex *l, const char *text, size_t len,
                     struct zerr *scratch) {
  jlex_init(l, text, len, JLEX_NONFINITE | JLEX_LONE_SURROGATE, scratch);
}

/* Position l at the value of the top-level member `member` (decoded
 * comparison), or stay at the top level when member is NULL. 1 when found,
 * 0 when not or when the text does not scan. */
static int find(struct jlex *l, const char *member) {
  if (!member)
    return 1;
  int more = jlex_open(l, '{');
  size_t ml = strlen(member);
  while (more > 0) {
    struct jlex_str k;
    if (jlex_key(l, &k) < 0)
      return 0;
    /* Decoding never lengthens: a key longer than member when written
     * may still equal it decoded, one shorter never does. */
    if (k.len >= ml) {
      char small[256];
      char *d = k.len < sizeof small ? small : malloc(k.len + 1);
      if (!d)
        return -ENOMEM;
      size_t n = jlex_unescape(&k, d);
      int eq = n == ml && !memcmp(d, member, ml);
      if (d != small)
        free(d);
      if (eq)
        return 1;
    }
    if (jlex_skip(l) < 0)
      return 0;
    more = jlex_next(l, '{');
  }
  return 0;
}

/* Walk the object at l: count its keys, and decode them into the arena
 * (spans in keys) when keys is not NULL. 1 when it scanned, 0 when not. */
static int walk(struct jlex *l, size_t *count, struct span *keys,
                struct zbuf *arena, struct zerr *err) {
  *count = 0;
  int more = jlex_open(l, '{');
  while (more > 0) {
    struct jlex_str k;
    if (jlex_key(l, &k) < 0)
      return 0;
    if (keys) {
      ZTRY(zbuf_reserve(arena, k.len + 1, err));
      keys[*count].off = arena->len;
      keys[*count].n = jlex_unescape(&k, (char *)arena->data + arena->len);
      arena->len += keys[*count].n;
    }
    (*count)++;
    if (jlex_skip(l) < 0)
      return 0;
    more = jlex_next(l, '{');
  }
  return more == 0;
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
  struct zerr scratch = {0};
  struct jlex l;
  lex_init(&l, text, len, &scratch);
  int found = find(&l, member);
  if (found < 0)
    return zerr_set(err, ENOMEM, "out of memory");
  if (!found)
    return 0;
  const char *start = l.p;
  size_t count;
  int rc = walk(&l, &count, NULL, NULL, err);
  if (rc <= 0 || count <= expected)
    return rc < 0 ? rc : 0;
  struct span *keys = malloc(count * sizeof *keys);
  if (!keys)
    return zerr_set(err, ENOMEM, "out of memory");
  struct zbuf arena;
  zbuf_init(&arena, SIZE_MAX);
  l.p = start;
  rc = walk(&l, &count, keys, &arena, err);
  char **d = NULL;
  size_t nd = 0;
  if (rc > 0) {
    rc = 0;
    for (size_t i = 0; i < count; i++)
      keys[i].p = arena.data + keys[i].off;
    qsort(keys, count, sizeof *keys, span_cmp);
  }
  for (size_t i = 1; i < count && rc == 0; i++) {
    if (span_cmp(&keys[i - 1], &keys[i]) ||
        (i >= 2 && !span_cmp(&keys[i - 2], &keys[i])))
      continue; /* not a duplicate, or already reported */
    char *k = malloc(keys[i].n + 1);
    char **nd2 = k ? realloc(d, (nd + 1) * sizeof *d) : NULL;
    if (!nd2) {
      free(k);
      rc = zerr_set(err, ENOMEM, "out of memory");
      break;
    }
    memcpy(k, keys[i].p, keys[i].n);
    k[keys[i].n] = '\0';
    d = nd2;
    d[nd++] = k;
  }
  free(keys);
  zbuf_free(&arena);
  if (rc < 0) {
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
