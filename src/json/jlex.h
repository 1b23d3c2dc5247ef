/* jlex.h - the one JSON lexer: blanks, strings, numbers, literals and whole
 * values over JSON text in memory, with no tree built.
 *
 * jansson builds trees of small documents (metadata, a reference's odd
 * value); everything that must walk JSON without a tree uses this lexer:
 * the kerchunk scanner (a 1,000,000-entry refs object in place), the
 * duplicate-key check, the lenient metadata rewrite and the json2 codec.
 * It checks as strictly as jansson (escapes, surrogate pairs, UTF-8,
 * control characters, number grammar, nesting), with two opt-in
 * relaxations for what Python's json module writes.
 *
 * A lexer is a cursor over [start, end): it owns nothing. Every failure is
 * -EIO with "not valid JSON: <what> (line L)" in err; a function that
 * fails leaves p where the problem is. */
#ifndef ZARRFS_JLEX_H
#define ZARRFS_JLEX_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* Bare NaN, Infinity and -Infinity are numbers (Python's json.dumps). */
#define JLEX_NONFINITE 1u
/* A \u escape of a surrogate without its pair is accepted (Python writes
 * them for lone surrogates in str); it decodes to U+FFFD. */
#define JLEX_LONE_SURROGATE 2u

/* Containers nested deeper than this are refused (the walk keeps its own
 * stack, so this bounds memory, not the C stack). */
#define JLEX_MAX_DEPTH 1000

struct jlex {
  const char *start, *p, *end; /* the text, and the position */
  unsigned flags;              /* JLEX_* */
  struct zerr *err;            /* where failures are described */
};

/* A string as written: its bytes between the quotes. */
struct jlex_str {
  const char *body;
  size_t len;
  int escaped; /* has a backslash: jlex_unescape changes it */
};

/* A number (or, with JLEX_NONFINITE, NaN / Infinity / -Infinity). */
struct jlex_num {
  const char *text; /* as written */
  size_t len;
  int neg;       /* a leading '-' */
  int integer;   /* no fraction, no exponent, finite */
  int nonfinite; /* NaN, Infinity or -Infinity */
  int fits_u64;  /* integer whose magnitude fits mag */
  uint64_t mag;  /* the magnitude, when fits_u64 */
};

/* Start a lexer over text[0, len). */
void jlex_init(struct jlex *l, const char *text, size_t len, unsigned flags,
               struct zerr *err);

/* Skip blanks (space, tab, CR, LF). */
void jlex_ws(struct jlex *l);
/* Skip blanks; 1 (and step over it) when the next character is c, else 0. */
int jlex_eat(struct jlex *l, char c);
/* Skip blanks; the character there, or 0 at the end of the text (a NUL
 * byte in the text is 0 too: use jlex_at_end for the end). */
char jlex_peek(struct jlex *l);
/* Skip blanks; 1 at the end of the text, else 0. */
int jlex_at_end(struct jlex *l);
/* -EIO: "not valid JSON: <what> (line L)". */
int jlex_fail(struct jlex *l, const char *what);

/* At '"': check the string, step past it, describe it in *s (may be
 * NULL). */
int jlex_string(struct jlex *l, struct jlex_str *s);
/* Decode a string jlex_string accepted into out, which has room for
 * s->len + 1 bytes (decoding never lengthens); NUL-terminated. Returns the
 * decoded length (NULs inside are possible). */
size_t jlex_unescape(const struct jlex_str *s, char *out);
/* jlex_string, then decode into *buf (malloc'd, grown as needed, *cap its
 * size; the caller frees), NUL-terminated; *n the decoded length. */
int jlex_string_dup(struct jlex *l, char **buf, size_t *cap, size_t *n);

/* At a number (or a non-finite token with JLEX_NONFINITE): check it, step
 * past it, describe it in *n (may be NULL). */
int jlex_number(struct jlex *l, struct jlex_num *n);

/* Skip blanks and one whole value, checked (containers walked to their
 * end, at most JLEX_MAX_DEPTH deep). */
int jlex_skip(struct jlex *l);

/* Containers, one member at a time. jlex_open(l, '{') steps over the
 * opening bracket and says whether a first member follows (1) or the
 * container was empty and is closed (0). After each member (for objects:
 * jlex_key, then the value), jlex_next says whether another follows (1,
 * its ',' eaten) or the container closed (0, its bracket eaten). */
int jlex_open(struct jlex *l, char bracket);
int jlex_next(struct jlex *l, char bracket);
/* An object member's key and the ':' after it; *k may be NULL. */
int jlex_key(struct jlex *l, struct jlex_str *k);

#endif
