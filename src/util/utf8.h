/* utf8.h - the text codings every parser shares: UTF-8 encoding, checking
 * and decoding, and hex digits.
 *
 * One copy of each: the JSON lexer (escapes to UTF-8, raw bytes checked),
 * fixed-width UTF-32 strings shown as text, fill values written in hex,
 * text views and tables made valid UTF-8 (utf8_fix: a byte that is not
 * part of a well-formed sequence becomes '?', so sizes stay the bytes').
 * Pure functions over caller memory; nothing is allocated. */
#ifndef ZARRFS_UTF8_H
#define ZARRFS_UTF8_H

#include <stddef.h>
#include <stdint.h>

/* The most bytes one code point takes in UTF-8. */
#define UTF8_MAX 4

/* Write code point c (at most 0x10ffff; surrogates are written as their
 * three bytes, so a caller that must not do that maps them first) to o,
 * which has room for UTF8_MAX bytes. Returns the bytes written. */
size_t utf8_put(uint8_t *o, uint32_t c);

/* The length of the well-formed UTF-8 sequence at p (p < end): 1-4, or 0
 * for an ill-formed one (a stray continuation byte, an overlong form, a
 * surrogate, beyond U+10FFFF, or cut short by end). */
size_t utf8_valid(const uint8_t *p, const uint8_t *end);

/* The character a byte that is not part of a well-formed UTF-8 sequence is
 * shown as in text zarrfs makes: one byte for one byte, so a text's size
 * is known from its bytes' count alone (U+FFFD would take three). */
#define UTF8_BAD_BYTE '?'

/* The first byte of [p, end) that is not ASCII (0x80 or above) or equals
 * `also` (a byte value, or -1 for none); end when there is none. Runs of
 * ASCII are skipped 16 or 32 bytes a step (SSE2 where the compiler has
 * it, else 8-byte words): what keeps a check of text about as fast as
 * memchr. */
const uint8_t *utf8_skip_ascii(const uint8_t *p, const uint8_t *end, int also);

/* Where the well-formed sequence that holds continuation byte p starts,
 * looking back at most 3 bytes and never before lo (the string's first
 * byte); NULL when p is part of none. What a reader that starts inside a
 * string needs to judge its first bytes as a reader from the start would
 * (a byte that is not a continuation byte always starts a step of such
 * a reader, and a sequence is at most 4 bytes). hi: the string's end. */
const uint8_t *utf8_seq_start(const uint8_t *lo, const uint8_t *hi,
                              const uint8_t *p);

/* Replace, in s[0, n) taken as one string, each byte that is not part of
 * a well-formed UTF-8 sequence (utf8_valid, read from the string's start)
 * by UTF8_BAD_BYTE. Returns how many were; 0 leaves s as it was. ASCII
 * bytes (and so separators such as ',' and '\n') never change and never
 * join a sequence, so a text of strings with ASCII between them can be
 * checked as a whole. */
size_t utf8_fix(uint8_t *s, size_t n);

/* Must s (NUL-terminated) be quoted (utf8_quote) to be shown on one line
 * of text that tools split, such as info.txt's `NAME: VALUE` lines? Yes
 * when it holds a control character (C0, DEL, C1), a line or paragraph
 * separator (U+2028, U+2029), bytes that are not UTF-8, or starts with a
 * double quote (which says "quoted"). A name (name != 0) is also quoted
 * when it is empty, starts or ends with a space, or holds a double quote,
 * a backslash or one of : , ( ) = (the marks of the lines it sits in:
 * `NAME: VALUE`, `VAR(DIM, DIM)`, `DIM = SIZE`). Returns 1 or 0. */
int utf8_needs_quotes(const char *s, int name);

/* s as a JSON string, quotes included: \" \\ \b \f \n \r \t, \u00XX
 * for other control characters, \u0080-\u009f and \u2028, \u2029 as
 * such escapes, each byte that is not UTF-8 as \ufffd; other characters
 * as they are. New malloc'd string (caller frees), NULL without memory. */
char *utf8_quote(const char *s);

/* The code point at *p (p < end), *p moved past it; an ill-formed sequence
 * gives U+FFFD and moves past its first byte or the bytes that began a
 * sequence, never past end. */
uint32_t utf8_next(const uint8_t **p, const uint8_t *end);

/* The value of a hex digit (0-9, a-f, A-F), or -1. */
int hex_digit(int c);

#endif
