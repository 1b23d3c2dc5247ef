/* base64.h - standard base64 decoding (inline chunk bytes of kerchunk and
 * VirtualiZarr references, base64 fill values). Pure, thread-safe. */
#ifndef ZARRFS_BASE64_H
#define ZARRFS_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Decode n characters of standard base64 (padding optional) into fresh
 * bytes (*out, owned by the caller; free()). -EINVAL on a bad character or
 * length, -ENOMEM. */
int zbase64_decode(const char *s, size_t n, uint8_t **out, size_t *out_len);

/* Decode as Python's base64.b64decode(s) (binascii.a2b_base64 without
 * strict mode) does: characters outside the alphabet are skipped, the
 * first complete pad sequence ends the input, a quad left unfinished is
 * an error ("Incorrect padding"). What zarr-python 2 tries first on a
 * V2 fill value of a numpy S type. Fresh bytes (*out, owned by the
 * caller; free()); -EINVAL where Python raises binascii.Error, -ENOMEM. */
int zbase64_decode_python(const char *s, size_t n, uint8_t **out,
                          size_t *out_len);

#endif
