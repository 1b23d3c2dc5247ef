/* jlex.c - the JSON lexer (see jlex.h). */
#include "jlex.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../util/utf8.h"

void jlex_init(struct jlex *l, const char *text, size_t len, unsigned flags,
               struct zerr *err) {
  l->start = l->p = text ? text : "";
  l->end = l->start + (text ? len : 0);
  l->flags = flags;
  l->err = err;
}

int jlex_fail(struct jlex *l, const char *what) {
  int line = 1;
  for (const char *q = l->start; q < l->p && q < l->end; q++)
    line += *q == '\n';
  return zerr_set(l->err, EIO, "not valid JSON: %s (line %d)", what, line);
}

void jlex_ws(struct jlex *l) {
  while (l->p < l->end &&
         (*l->p == ' ' || *l->p == '\n' || *l->p == '\r' || *l->p == '\t'))
    l->p++;
}

char jlex_peek(struct jlex *l) {
  jlex_ws(l);
  return l->p < l->end ? *l->p : 0;
}

int jlex_at_end(struct jlex *l) {
  jlex_ws(l);
  return l->p >= l->end;
}

int jlex_eat(struct jlex *l, char c) {
  jlex_ws(l);
  if (l->p < l->end && *l->p == c) {
    l->p++;
    return 1;
  }
  return 0;
}

/* Four hex digits at p; -1 if any is not one. */
static long hex4(const char *p) {
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int d = hex_digit((unsigned char)p[i]);
    if (d < 0)
      return -1;
    v = v << 4 | d;
  }
  return v;
}

static int is_high(long u) { return u >= 0xd800 && u <= 0xdbff; }
static int is_low(long u) { return u >= 0xdc00 && u <= 0xdfff; }

/* The \u escape at q (q[0] == '\\', q[1] == 'u', q < end), with its pair
 * when it is a high surrogate followed by a low one: the code point (lone
 * surrogates as themselves) and the bytes it took in *used; -1 if its hex
 * is not four digits. */
static long u_escape(const char *q, const char *end, size_t *used) {
  if (end - q < 6)
    return -1;
  long u = hex4(q + 2);
  *used = 6;
  if (u < 0 || !is_high(u))
    return u;
  if (end - q >= 12 && q[6] == '\\' && q[7] == 'u') {
    long lo = hex4(q + 8);
    if (is_low(lo)) {
      *used = 12;
      return 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
    }
  }
  return u;
}

int jlex_string(struct jlex *l, struct jlex_str *s) {
  const char *b = ++l->p; /* past the opening quote */
  int escaped = 0;
  for (;;) {
    const char *q = l->p;
    /* The common run: printable ASCII that is neither quote nor escape. */
    while (q < l->end && *q != '"' && *q != '\\' && (unsigned char)*q >= 0x20 &&
           (unsigned char)*q < 0x80)
      q++;
    l->p = q;
    if (q >= l->end)
      return jlex_fail(l, "unterminated string");
    unsigned char c = (unsigned char)*q;
    if (c == '"')
      break;
    if (c == '\\') {
      escaped = 1;
      if (q + 1 >= l->end)
        return jlex_fail(l, "unterminated string");
      char e = q[1];
      if (e && strchr("\"\\/bfnrt", e)) {
        l->p = q + 2;
        continue;
      }
      if (e != 'u')
        return jlex_fail(l, "invalid escape");
      size_t used;
      long u = u_escape(q, l->end, &used);
      if (u < 0)
        return jlex_fail(l, "invalid \\u escape");
      if ((is_high(u) || is_low(u)) && !(l->flags & JLEX_LONE_SURROGATE))
        return jlex_fail(l, is_high(u) ? "invalid Unicode surrogate pair"
                                       : "invalid Unicode surrogate");
      l->p = q + used;
    } else if (c < 0x20) {
      return jlex_fail(l, "control character in a string");
    } else {
      size_t n = utf8_valid((const uint8_t *)q, (const uint8_t *)l->end);
      if (!n)
        return jlex_fail(l, "invalid UTF-8");
      l->p = q + n;
    }
  }
  if (s) {
    s->body = b;
    s->len = (size_t)(l->p - b);
    s->escaped = escaped;
  }
  l->p++; /* the closing quote */
  return 0;
}

size_t jlex_unescape(const struct jlex_str *s, char *out) {
  const char *q = s->body, *end = s->body + s->len;
  size_t n = 0;
  if (!s->escaped) {
    memcpy(out, q, s->len);
    out[s->len] = '\0';
    return s->len;
  }
  while (q < end) {
    const char *r = memchr(q, '\\', (size_t)(end - q));
    size_t run = (size_t)((r ? r : end) - q);
    memcpy(out + n, q, run);
    n += run;
    q += run;
    if (!r || end - q < 2)
      break;
    char e = q[1];
    if (e != 'u') {
      static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
      const char *m = e ? strchr(from, e) : NULL;
      out[n++] = m ? to[m - from] : e; /* m is never NULL after jlex_string */
      q += 2;
      continue;
    }
    size_t used;
    long u = u_escape(q, end, &used);
    if (u < 0) { /* never after jlex_string: keep the bytes */
      out[n++] = *q++;
      continue;
    }
    if (is_high(u) || is_low(u))
      u = 0xfffd; /* a lone surrogate has no UTF-8 form */
    n += utf8_put((uint8_t *)out + n, (uint32_t)u);
    q += used;
  }
  out[n] = '\0';
  return n;
}

int jlex_string_dup(struct jlex *l, char **buf, size_t *cap, size_t *n) {
  struct jlex_str s;
  ZTRY(jlex_string(l, &s));
  if (s.len + 1 > *cap) {
    size_t nc = *cap ? *cap : 256;
    while (nc < s.len + 1)
      nc *= 2;
    char *nb = realloc(*buf, nc);
    if (!nb)
      return zerr_set(l->err, ENOMEM, "out of memory");
    *buf = nb;
    *cap = nc;
  }
  size_t len = jlex_unescape(&s, *buf);
  if (n)
    *n = len;
  return 0;
}

static int is_digit(char c) { return c >= '0' && c <= '9'; }

/* Does [p, p+n) start with the word w? */
static int has_word(const char *p, const char *end, const char *w) {
  size_t k = strlen(w);
  return (size_t)(end - p) >= k && !memcmp(p, w, k);
}

int jlex_number(struct jlex *l, struct jlex_num *n) {
  struct jlex_num v = {.text = l->p};
  const char *q = l->p;
  if (q < l->end && *q == '-')
    q++, v.neg = 1;
  if (l->flags & JLEX_NONFINITE) {
    const char *w = has_word(q, l->end, "Infinity")        ? "Infinity"
                    : !v.neg && has_word(q, l->end, "NaN") ? "NaN"
                                                           : NULL;
    if (w) {
      q += strlen(w);
      v.nonfinite = 1;
      goto done;
    }
  }
  if (q >= l->end || !is_digit(*q))
    return jlex_fail(l, "invalid number");
  if (*q == '0' && q + 1 < l->end && is_digit(q[1]))
    return jlex_fail(l, "invalid number (leading zero)");
  v.integer = v.fits_u64 = 1;
  for (; q < l->end && is_digit(*q); q++) {
    uint64_t d = (uint64_t)(*q - '0');
    if (v.mag > (UINT64_MAX - d) / 10)
      v.fits_u64 = 0;
    else if (v.fits_u64)
      v.mag = v.mag * 10 + d;
  }
  if (q < l->end && *q == '.') {
    v.integer = 0;
    if (++q >= l->end || !is_digit(*q)) {
      l->p = q;
      return jlex_fail(l, "invalid number");
    }
    while (q < l->end && is_digit(*q))
      q++;
  }
  if (q < l->end && (*q == 'e' || *q == 'E')) {
    v.integer = 0;
    q++;
    if (q < l->end && (*q == '+' || *q == '-'))
      q++;
    if (q >= l->end || !is_digit(*q)) {
      l->p = q;
      return jlex_fail(l, "invalid number");
    }
    while (q < l->end && is_digit(*q))
      q++;
  }
done:
  if (!v.integer)
    v.fits_u64 = 0, v.mag = 0;
  v.len = (size_t)(q - v.text);
  l->p = q;
  if (n)
    *n = v;
  return 0;
}

/* One scalar at p (not a container). */
static int scalar(struct jlex *l) {
  if (l->p >= l->end)
    return jlex_fail(l, "unexpected end of input");
  if (*l->p == '"')
    return jlex_string(l, NULL);
  static const char *const lits[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++)
    if (has_word(l->p, l->end, lits[i])) {
      l->p += strlen(lits[i]);
      return 0;
    }
  char c = *l->p;
  int nonfinite = (l->flags & JLEX_NONFINITE) && (c == 'N' || c == 'I');
  if (c != '-' && !(c >= '0' && c <= '9') && !nonfinite)
    return jlex_fail(l, "invalid value");
  return jlex_number(l, NULL);
}

int jlex_skip(struct jlex *l) {
  char stack[JLEX_MAX_DEPTH]; /* the open brackets */
  int depth = 0;
  for (;;) {
    jlex_ws(l);
    char c = l->p < l->end ? *l->p : 0;
    if (c == '{' || c == '[') {
      if (depth == JLEX_MAX_DEPTH)
        return jlex_fail(l, "nested too deeply");
      l->p++;
      if (jlex_eat(l, c == '{' ? '}' : ']')) {
        /* empty: a complete value */
      } else {
        stack[depth++] = c;
        if (c == '{')
          ZTRY(jlex_key(l, NULL));
        continue; /* the first member's value */
      }
    } else {
      ZTRY(scalar(l));
    }
    /* After a value: close containers or go to the next member. */
    for (;;) {
      if (depth == 0)
        return 0;
      char top = stack[depth - 1];
      int more = jlex_next(l, top);
      if (more < 0)
        return more;
      if (!more) {
        depth--;
        continue;
      }
      if (top == '{')
        ZTRY(jlex_key(l, NULL));
      break;
    }
  }
}

int jlex_open(struct jlex *l, char bracket) {
  char close = bracket == '{' ? '}' : ']';
  if (!jlex_eat(l, bracket))
    return jlex_fail(l, bracket == '{' ? "'{' expected" : "'[' expected");
  return jlex_eat(l, close) ? 0 : 1;
}

int jlex_next(struct jlex *l, char bracket) {
  char close = bracket == '{' ? '}' : ']';
  if (jlex_eat(l, ','))
    return 1;
  if (jlex_eat(l, close))
    return 0;
  return jlex_fail(l, bracket == '{' ? "',' or '}' expected"
                                     : "',' or ']' expected");
}

int jlex_key(struct jlex *l, struct jlex_str *k) {
  if (jlex_peek(l) != '"')
    return jlex_fail(l, "string expected");
  ZTRY(jlex_string(l, k));
  if (!jlex_eat(l, ':'))
    return jlex_fail(l, "':' expected");
  return 0;
}
