/* fuzz.h - what the fuzz targets under tests/fuzz/ share.
 *
 * Each target is one file with one entry point, written with FUZZ_TARGET:
 * with libFuzzer (./configure --enable-fuzzing CC=clang) it is
 * LLVMFuzzerTestOneInput, one executable per target (fuzz_NAME); in the
 * normal build (FUZZ_REPLAY) it is fuzz_one_NAME, and tests/fuzz/replay.c
 * links every target into one program that replays the committed seeds and
 * regression inputs (tests/fuzz/seeds/NAME/, tests/fuzz/regress/NAME/)
 * through the same code. Targets must give an error for bad input, never a
 * crash, and must not leak: ASan's leak check runs at exit of each input
 * set under libFuzzer and of the replay under the ASan build. */
#ifndef ZARRFS_FUZZ_H
#define ZARRFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "../../src/zarr/meta.h"

#ifdef FUZZ_REPLAY
#define FUZZ_TARGET(name)                                                      \
  int fuzz_one_##name(const uint8_t *data, size_t size);                       \
  int fuzz_one_##name(const uint8_t *data, size_t size)
#else
#define FUZZ_TARGET(name)                                                      \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);                \
  int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
/* A private directory for targets that need files (made once per
 * process, removed at exit); NULL when it cannot be made. Also silences
 * the library's log lines (FUZZ_VERBOSE=1 keeps them). */
const char *fuzz_tmpdir(void);

/* Write len bytes to dir/rel (parent directories must exist). 0 or -1. */
int fuzz_put_file(const char *dir, const char *rel, const void *data,
                  size_t len);

#endif

/* The largest decoded intermediate a target allows (the engine's
 * max_decode, scaled down so the fuzzer's RSS stays small). */
#define FUZZ_MAX_DECODED (16u << 20)
/* Chunks with more elements than this are skipped (a shape is cheap to
 * write, and a huge fill chunk says nothing about the decoder). */
#define FUZZ_MAX_NELEM (1u << 16)

/* A NUL-terminated malloc'd copy of data (caller frees); NULL without
 * memory. */
char *fuzz_strndup(const uint8_t *data, size_t size);

/* Metadata (zarr.json, else V2 .zarray) from text; NULL when neither
 * parses. Caller frees (zmeta_free). */
struct zmeta *fuzz_meta_parse(const char *text, size_t len);

/* Parse a metadata document, build its codec chain and decode the chunk
 * with it, through every API the engine uses on a chunk of that chain
 * (whole decode, deferred data, direct zarrs.vlen access, shard index and
 * inner chunks). The input is METADATA NUL CHUNK; documents whose text
 * names none of the codecs in `want` (NULL-terminated; NULL: any) are
 * skipped, so each target stays on its codec. */
void fuzz_chunk_run(const uint8_t *data, size_t size, const char *const *want);

/* Build the chain of an array's metadata and check its chunk keys read
 * back (the follow-up of every metadata target). */
void fuzz_meta_check(const struct zmeta *m);

/* A private directory for targets that need files (made once per
 * process, removed at exit); NULL when it cannot be made. Also silences
 * the library's log lines (FUZZ_VERBOSE=1 keeps them). */
const char *fuzz_tmpdir(void);

/* Write len bytes to dir/rel (parent directories must exist). 0 or -1. */
int fuzz_put_file(const char *dir, const char *rel, const void *data,
                  size_t len);

#endif
