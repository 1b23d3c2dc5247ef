/* zjson.c - jansson under zarrfs' rules (see zjson.h): lenient loading,
 * a dump that cannot lose keys, and the watcher of jansson's allocations. */
#include "zjson.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "jlex.h"

/* Does the integer fit in int64? jansson refuses integers that do not, so
 * they travel as strings. */
static int fits_int64(const struct jlex_num *n) {
  return n->fits_u64 && n->mag <= (uint64_t)INT64_MAX + (uint64_t)n->neg;
}

/* Rewrite, outside strings, bare NaN / Infinity / -Infinity tokens (Python's
 * json module and old VirtualiZarr write them) into the strings "NaN",
 * "Infinity", "-Infinity", and integers beyond int64 (uint64 fill values)
 * into strings of digits. The tokens are the JSON lexer's; what it cannot
 * read is copied as it is, for jansson to report. Returns a malloc'd copy
 * (length in *olen), or NULL on allocation failure. *changed says whether
 * anything was rewritten. */
static char *lenient_rewrite(const char *text, size_t len, size_t *olen,
                             int *changed) {
  /* Each rewrite adds two quotes to a token of at least three bytes. */
  if (len > ((size_t)-1 - 16) / 2)
    return NULL;
  char *out = malloc(len * 2 + 16);
  if (!out)
    return NULL;
  struct zerr scratch;
  struct jlex l;
  jlex_init(&l, text, len, JLEX_NONFINITE, &scratch);
  const char *copied = l.start; /* text before this is in out */
  size_t o = 0;
  *changed = 0;
  while (l.p < l.end) {
    char c = *l.p;
    if (c == '"') {
      if (jlex_string(&l, NULL) < 0)
        break; /* a broken string: the rest as it is */
      continue;
    }
    if (c != '-' && c != 'N' && c != 'I' && !(c >= '0' && c <= '9')) {
      l.p++;
      continue;
    }
    const char *t = l.p;
    struct jlex_num n;
    if (jlex_number(&l, &n) < 0) {
      l.p = t + 1;
      continue;
    }
    if (n.nonfinite || (n.integer && !fits_int64(&n))) {
      memcpy(out + o, copied, (size_t)(t - copied));
      o += (size_t)(t - copied);
      out[o++] = '"';
      memcpy(out + o, n.text, n.len);
      o += n.len;
      out[o++] = '"';
      copied = l.p;
      *changed = 1;
    }
  }
  memcpy(out + o, copied, (size_t)(l.end - copied));
  o += (size_t)(l.end - copied);
  *olen = o;
  return out;
}

/* Set when one of jansson's allocations fails on this thread. */
static _Thread_local int zjson_failed;
/* What jansson's allocations call: malloc, or a test's failing one. The
 * allocator is process-wide in jansson, so this is too. */
static void *(*_Atomic zjson_alloc)(size_t) = malloc;

/* jansson's malloc: note a failure. */
static void *zjson_malloc(size_t n) {
  void *p = atomic_load(&zjson_alloc)(n);
  if (!p)
    zjson_failed = 1;
  return p;
}

/* Route jansson's allocations through zjson_malloc, at program start:
 * before any thread runs, as json_set_alloc_funcs wants. */
__attribute__((constructor)) static void zjson_install(void) {
  json_set_alloc_funcs(zjson_malloc, free);
}

/* Start watching this thread's jansson allocations. */
void zjson_watch(void) { zjson_failed = 0; }

/* Did one fail since zjson_watch? */
int zjson_nomem(void) { return zjson_failed; }

/* The allocator under zjson_malloc (tests inject failures). */
void zjson_set_malloc(void *(*fn)(size_t)) {
  atomic_store(&zjson_alloc, fn ? fn : malloc);
}

/* A parse's result, checked for lost allocations: jansson's lexer drops a
 * character it cannot append ("chunk_key_encoing") and goes on, so a
 * document parsed while an allocation failed is not trusted. NULL with
 * ENOMEM then. */
static json_t *zjson_checked(json_t *j, struct zerr *err) {
  if (!zjson_nomem())
    return j;
  json_decref(j);
  zerr_set(err, ENOMEM, "out of memory parsing JSON");
  return NULL;
}

/* Compact text through our own buffer (see zjson.h). */
char *zjson_dump(json_t *j) {
  const size_t flags = JSON_ENCODE_ANY | JSON_COMPACT;
  size_t n = j ? json_dumpb(j, NULL, 0, flags) : 0;
  char *s = n ? malloc(n + 1) : NULL;
  if (s && json_dumpb(j, s, n, flags) != n) {
    free(s);
    s = NULL;
  }
  if (s)
    s[n] = '\0';
  return s;
}

/* Lenient JSON load: strict first (the common case costs one parse). */
json_t *zjson_loadb(const char *text, size_t len, struct zerr *err) {
  json_error_t je;
  zjson_watch();
  json_t *j = json_loadb(text, len, JSON_ALLOW_NUL, &je);
  if (j || zjson_nomem())
    return zjson_checked(j, err);
  size_t nl;
  int changed = 0;
  char *fixed = lenient_rewrite(text, len, &nl, &changed);
  if (!fixed) {
    zerr_set(err, ENOMEM, "out of memory");
    return NULL;
  }
  if (changed) {
    /* Positions in the rewritten text still have the same line numbers. */
    j = json_loadb(fixed, nl, JSON_ALLOW_NUL, &je);
  }
  free(fixed);
  if (j || zjson_nomem())
    return zjson_checked(j, err);
  zerr_set(err, EIO, "not valid JSON: %s (line %d)", je.text, je.line);
  return NULL;
}
