/* utf8.h - the text codings every parser shares: UTF-8 encoding, checking
 * and decoding, and hex digits.
 *
 * One copy of each: the JSON lexer (escapes to UTF-8, raw bytes checked),
 * fixed-width UTF-32 strings shown as text, fill values written in hex.
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

/* The code point at *p (p < end), *p moved past it; an ill-formed sequence
 * gives U+FFFD and moves past its first byte or the bytes that began a
 * sequence, never past end. */
uint32_t utf8_next(const uint8_t **p, const uint8_t *end);

/* The value of a hex digit (0-9, a-f, A-F), or -1. */
int hex_digit(int c);

#endif
