/* targets.h - the list of fuzz targets, one X(name) each: the replay
 * program's table (tests/fuzz/replay.c). Keep in step with Makefile.am's
 * FUZZ_TARGETS and docs/fuzzing.md. */
X(meta_v3)
X(meta_v2)
X(consolidated)
X(kerchunk)
X(kerchunk_render)
X(jdup)
X(jlex)
X(manifest)
X(vlen)
X(vlen_interleaved)
X(sharding)
X(blosc)
X(packbits)
X(optional)
X(json2)
X(namespace)
