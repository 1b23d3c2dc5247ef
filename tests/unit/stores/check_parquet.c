/* check_parquet.c - the Thrift compact reader (src/parquet/thrift.c) and the
 * Parquet reader (src/parquet/parquet.c, pqmeta.c, pqpage.c): files written
 * by parquet-wasm and hyparquet-writer (tests/data/parquet-refs/, made by
 * tests/writers/parquet_refs.mjs) read column by column; a table of
 * hostile, truncated and lying inputs, built here with a small Thrift
 * writer, each refused with EIO and a reason naming what is wrong; every
 * prefix and every one-byte corruption of the real files read without a
 * crash (ASan watches). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/parquet/parquet.h"
#include "../../../src/parquet/pqmeta.h"
#include "../../../src/parquet/pqpage.h"
#include "../../../src/parquet/thrift.h"
#include "../../../src/store/confine.h"
#include "../../../src/store/pqrefs.h"
#include "../../../src/store/store.h"
#include "../../../src/util/file.h"
#include "../testutil.h"

/* ---- a small Thrift compact writer, for inputs made by hand ---- */

struct tw {
  uint8_t b[1 << 16];
  size_t n;
  int16_t last[64];
  int d;
};

static void tw_byte(struct tw *w, unsigned v) { w->b[w->n++] = (uint8_t)v; }

static void tw_varint(struct tw *w, uint64_t u) {
  while (u >= 0x80) {
    tw_byte(w, (unsigned)(u & 0x7f) | 0x80);
    u >>= 7;
  }
  tw_byte(w, (unsigned)u);
}

static void tw_zz(struct tw *w, int64_t v) {
  tw_varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void tw_field(struct tw *w, int id, int type) {
  int delta = id - w->last[w->d];
  if (delta > 0 && delta <= 15) {
    tw_byte(w, (unsigned)(delta << 4 | type));
  } else {
    tw_byte(w, (unsigned)type);
    tw_zz(w, id);
  }
  w->last[w->d] = (int16_t)id;
}

static void tw_i32(struct tw *w, int id, int32_t v) {
  tw_field(w, id, THRIFT_I32);
  tw_zz(w, v);
}

static void tw_i64(struct tw *w, int id, int64_t v) {
  tw_field(w, id, THRIFT_I64);
  tw_zz(w, v);
}

static void tw_bin(struct tw *w, int id, const char *s) {
  tw_field(w, id, THRIFT_BINARY);
  tw_varint(w, strlen(s));
  memcpy(w->b + w->n, s, strlen(s));
  w->n += strlen(s);
}

/* A struct as a field (id > 0) or as a list element (id 0). */
static void tw_begin(struct tw *w, int id) {
  if (id)
    tw_field(w, id, THRIFT_STRUCT);
  w->last[++w->d] = 0;
}

static void tw_end(struct tw *w) {
  tw_byte(w, 0);
  w->d--;
}

static void tw_list(struct tw *w, int id, int etype, uint32_t n) {
  tw_field(w, id, THRIFT_LIST);
  if (n < 15) {
    tw_byte(w, n << 4 | (unsigned)etype);
  } else {
    tw_byte(w, 0xf0 | (unsigned)etype);
    tw_varint(w, n);
  }
}

/* ---- Thrift ---- */

START_TEST(thrift_reads_and_skips) {
  struct tw w = {0};
  tw_begin(&w, 0);
  tw_i32(&w, 1, -5);
  tw_i64(&w, 3, (int64_t)1 << 40);
  tw_bin(&w, 4, "name");
  tw_list(&w, 20, THRIFT_I32, 20); /* a long list, id by varint */
  for (int i = 0; i < 20; i++)
    tw_zz(&w, i);
  tw_begin(&w, 21); /* an unknown struct, skipped */
  tw_field(&w, 1, THRIFT_DOUBLE);
  for (int i = 0; i < 8; i++)
    tw_byte(&w, 0);
  tw_field(&w, 2, THRIFT_TRUE);
  tw_field(&w, 3, THRIFT_MAP);
  tw_varint(&w, 1);
  tw_byte(&w, THRIFT_BINARY << 4 | THRIFT_I32);
  tw_varint(&w, 1);
  tw_byte(&w, 'k');
  tw_zz(&w, 7);
  tw_end(&w);
  tw_end(&w);

  struct thrift_r r;
  struct thrift_st st;
  struct zerr err = {0};
  thrift_init(&r, w.b, w.n, "test", &err);
  ck_assert_int_eq(thrift_enter(&r, &st), 0);
  int16_t id;
  int type, rc, seen = 0;
  while ((rc = thrift_field(&r, &st, &id, &type)) == 1) {
    if (id == 1) {
      int32_t v;
      ck_assert_int_eq(thrift_i32(&r, type, &v), 0);
      ck_assert_int_eq(v, -5);
    } else if (id == 3) {
      int64_t v;
      ck_assert_int_eq(thrift_i64(&r, type, &v), 0);
      ck_assert(v == (int64_t)1 << 40);
    } else if (id == 4) {
      const uint8_t *p;
      size_t n;
      ck_assert_int_eq(thrift_binary(&r, type, &p, &n), 0);
      ck_assert(n == 4 && !memcmp(p, "name", 4));
    } else {
      ck_assert_int_eq(thrift_skip(&r, type), 0);
    }
    seen++;
  }
  ck_assert_int_eq(rc, 0);
  ck_assert_int_eq(seen, 5);
  ck_assert_uint_eq(thrift_pos(&r), w.n);
}
END_TEST

/* One hostile Thrift input: skipping it as a struct fails with why. */
static void thrift_bad(const uint8_t *p, size_t n, const char *why) {
  struct thrift_r r;
  struct zerr err = {0};
  thrift_init(&r, p, n, "test", &err);
  int rc = thrift_skip(&r, THRIFT_STRUCT);
  ck_assert_msg(rc == -EIO, "accepted (want '%s')", why);
  ck_assert_msg(strstr(err.msg, why), "'%s' lacks '%s'", err.msg, why);
}

START_TEST(thrift_hostile) {
  static const uint8_t trunc_varint[] = {0x15, 0x80, 0x80};
  thrift_bad(trunc_varint, sizeof trunc_varint, "varint runs past the end");
  static const uint8_t long_varint[] = {0x16, 0xff, 0xff, 0xff, 0xff, 0xff,
                                        0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  thrift_bad(long_varint, sizeof long_varint, "varint");
  static const uint8_t i32_overflow[] = {0x15, 0xff, 0xff, 0xff, 0xff, 0x7f};
  thrift_bad(i32_overflow, sizeof i32_overflow, "does not fit 32 bits");
  static const uint8_t big_list[] = {0x19, 0xf5, 0xff, 0xff, 0xff, 0x0f, 0};
  thrift_bad(big_list, sizeof big_list, "elements in");
  static const uint8_t big_bin[] = {0x18, 0x7f, 'a'};
  thrift_bad(big_bin, sizeof big_bin, "runs past the end");
  static const uint8_t bad_type[] = {0x1e, 0};
  thrift_bad(bad_type, sizeof bad_type, "unknown field type 14");
  static const uint8_t no_stop[] = {0x15, 0x02};
  thrift_bad(no_stop, sizeof no_stop, "no stop field");
  static const uint8_t bad_map[] = {0x1b, 0x05, 0xff, 0};
  thrift_bad(bad_map, sizeof bad_map, "map of unknown types");
  static const uint8_t big_map[] = {0x1b, 0x7f, 0x55, 0, 0};
  thrift_bad(big_map, sizeof big_map, "entries in");
  uint8_t deep[200];
  size_t n = 0;
  for (int i = 0; i < 60; i++)
    deep[n++] = 0x1c; /* field 1, a struct, nested 60 deep */
  for (int i = 0; i < 61; i++)
    deep[n++] = 0;
  thrift_bad(deep, n, "nested deeper than 32");
  uint8_t deep_list[200];
  n = 0;
  deep_list[n++] = 0x19; /* field 1: a list of lists of lists ... */
  for (int i = 0; i < 60; i++)
    deep_list[n++] = 0x19; /* one element, a list */
  thrift_bad(deep_list, n, "deeper than 32");
  /* A wrong type where a reader expects one. */
  static const uint8_t as_bin[] = {0x18, 0x01, 'a', 0};
  struct thrift_r r;
  struct thrift_st st;
  struct zerr err = {0};
  int16_t id;
  int type;
  int32_t v;
  thrift_init(&r, as_bin, sizeof as_bin, "test", &err);
  thrift_enter(&r, &st);
  ck_assert_int_eq(thrift_field(&r, &st, &id, &type), 1);
  ck_assert_int_eq(thrift_i32(&r, type, &v), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "binary where i32"));
}
END_TEST

/* ---- the RLE/bit-packed hybrid ---- */

START_TEST(rle_hybrid) {
  /* A run of 3 fives (width 3), then one group of 8 bit-packed values
   * 0..7 (width 3: 3 bytes), read as 9 values. */
  static const uint8_t in[] = {0x06, 0x05, 0x03, 0x88, 0xc6, 0xfa};
  uint32_t out[16];
  struct zerr err = {0};
  size_t used;
  ck_assert_int_eq(pqpage_rle(in, sizeof in, 3, out, 9, &used, &err), 0);
  static const uint32_t want[] = {5, 5, 5, 0, 1, 2, 3, 4, 5};
  for (int i = 0; i < 9; i++)
    ck_assert_uint_eq(out[i], want[i]);
  ck_assert_int_eq(pqpage_rle(in, sizeof in, 3, out, 12, NULL, &err), -EIO);
  ck_assert_int_eq(pqpage_rle(in, 3, 3, out, 9, NULL, &err), -EIO);
  ck_assert_int_eq(pqpage_rle(in, sizeof in, 33, out, 1, NULL, &err), -EIO);
  static const uint8_t wide[] = {0x02, 0x09}; /* 9 in one bit */
  ck_assert_int_eq(pqpage_rle(wide, 2, 1, out, 1, NULL, &err), -EIO);
  ck_assert_int_eq(pqpage_bit_width(1), 1);
  ck_assert_int_eq(pqpage_bit_width(0), 0);
  ck_assert_int_eq(pqpage_bit_width(255), 8);
}
END_TEST

/* ---- files made by hand: one column "x" ---- */

/* What a hand-made file looks like; every field a knob of the table. */
struct spec {
  int type, rep, codec, enc, page_type, def_enc;
  int nvals;          /* rows */
  int page_values;    /* num_values in the page header (0: nvals) */
  int clen_delta;     /* added to compressed_page_size */
  int ulen_delta;     /* added to uncompressed_page_size */
  int64_t rows_delta; /* added to FileMetaData.num_rows */
  int64_t dpo;        /* data_page_offset (0: the real one) */
  int footer_delta;   /* added to the footer length */
  int root_children;  /* 0: 1 */
  int dict;           /* a dictionary page of 2 values first */
  int dict_index;     /* the index of the data page's values */
  int nulls_lie;      /* v2: num_nulls off by one */
  int nested;         /* schema groups around x */
  int external;       /* ColumnChunk.file_path */
  int no_schema;      /* leave FileMetaData.schema out */
  int two_dicts;      /* a second dictionary page */
};

/* Write a PageHeader. */
static void page_header(struct tw *w, int type, int ulen, int clen,
                        const struct spec *s, int nv, int nulls, int deflen) {
  tw_begin(w, 0);
  tw_i32(w, 1, type);
  tw_i32(w, 2, ulen);
  tw_i32(w, 3, clen);
  if (type == PQ_DICTIONARY_PAGE) {
    tw_begin(w, 7);
    tw_i32(w, 1, nv);
    tw_i32(w, 2, PQ_PLAIN);
    tw_end(w);
  } else if (type == PQ_DATA_PAGE) {
    tw_begin(w, 5);
    tw_i32(w, 1, nv);
    tw_i32(w, 2, s->enc);
    tw_i32(w, 3, s->def_enc);
    tw_i32(w, 4, PQ_RLE);
    tw_end(w);
  } else {
    tw_begin(w, 8);
    tw_i32(w, 1, nv);
    tw_i32(w, 2, nulls);
    tw_i32(w, 3, nv);
    tw_i32(w, 4, s->enc);
    tw_i32(w, 5, deflen);
    tw_i32(w, 6, 0);
    tw_end(w);
  }
  tw_end(w);
}

/* The file of a spec, into w. Values are 10, 20, ... (every second row
 * null when optional). */
static void make_file(struct tw *w, const struct spec *s) {
  memset(w, 0, sizeof *w);
  memcpy(w->b, "PAR1", 4);
  w->n = 4;
  int nv = s->nvals;
  int nonnull = s->rep == PQ_OPTIONAL ? (nv + 1) / 2 : nv;
  uint8_t body[1024];
  size_t blen = 0, deflen = 0;
  int64_t dict_off = -1;
  if (s->dict) {
    dict_off = (int64_t)w->n;
    for (int d = 0; d < 1 + s->two_dicts; d++) {
      page_header(w, PQ_DICTIONARY_PAGE, 16, 16, s, 2, 0, 0);
      for (int i = 0; i < 16; i++)
        tw_byte(w, i == 0 ? 7 : i == 8 ? 9 : 0); /* values 7 and 9 */
    }
  }
  if (s->rep == PQ_OPTIONAL) { /* levels: 1,0,1,0,... bit-packed */
    uint8_t lev[8] = {0};
    size_t groups = ((size_t)nv + 7) / 8;
    lev[0] = (uint8_t)(groups << 1 | 1);
    for (size_t g = 0; g < groups; g++)
      lev[1 + g] = 0x55;
    deflen = 1 + groups;
    if (s->page_type == PQ_DATA_PAGE) {
      body[0] = (uint8_t)deflen;
      body[1] = body[2] = body[3] = 0;
      memcpy(body + 4, lev, deflen);
      blen = 4 + deflen;
    } else {
      memcpy(body, lev, deflen);
      blen = deflen;
    }
  }
  if (s->dict) {
    body[blen++] = 2;                       /* bit width */
    body[blen++] = (uint8_t)(nonnull << 1); /* one run */
    body[blen++] = (uint8_t)s->dict_index;
  } else {
    for (int i = 0; i < nonnull; i++) {
      int64_t v = 10 * (i + 1);
      int wdt = s->type == PQ_INT32 ? 4 : 8;
      if (s->type == PQ_BYTE_ARRAY) {
        body[blen++] = 2, body[blen++] = 0, body[blen++] = 0, body[blen++] = 0;
        body[blen++] = 'v', body[blen++] = (uint8_t)('0' + i % 10);
        continue;
      }
      for (int k = 0; k < wdt; k++)
        body[blen++] = (uint8_t)(v >> (8 * k));
    }
  }
  int64_t dpo = (int64_t)w->n;
  int pv = s->page_values ? s->page_values : nv;
  page_header(w, s->page_type, (int)blen + s->ulen_delta,
              (int)blen + s->clen_delta, s, pv, nv - nonnull + s->nulls_lie,
              (int)deflen);
  memcpy(w->b + w->n, body, blen);
  w->n += blen;
  int64_t chunk_end = (int64_t)w->n;
  int64_t start = dict_off >= 0 ? dict_off : dpo;
  size_t footer = w->n;
  /* FileMetaData */
  tw_begin(w, 0);
  tw_i32(w, 1, 1);
  if (!s->no_schema) {
    tw_list(w, 2, THRIFT_STRUCT, (uint32_t)(2 + s->nested));
    tw_begin(w, 0);
    tw_bin(w, 4, "schema");
    tw_i32(w, 5, s->root_children ? s->root_children : 1);
    tw_end(w);
    for (int g = 0; g < s->nested; g++) {
      tw_begin(w, 0);
      tw_i32(w, 3, PQ_REQUIRED);
      tw_bin(w, 4, g ? "inner" : "x");
      tw_i32(w, 5, 1);
      tw_end(w);
    }
    tw_begin(w, 0);
    tw_i32(w, 1, s->type);
    tw_i32(w, 3, s->rep);
    tw_bin(w, 4, s->nested ? "leaf" : "x");
    tw_end(w);
  }
  tw_i64(w, 3, nv + s->rows_delta);
  tw_list(w, 4, THRIFT_STRUCT, 1);
  tw_begin(w, 0); /* RowGroup */
  tw_list(w, 1, THRIFT_STRUCT, 1);
  tw_begin(w, 0); /* ColumnChunk */
  if (s->external)
    tw_bin(w, 1, "other.parquet");
  tw_i64(w, 2, start);
  tw_begin(w, 3); /* ColumnMetaData */
  tw_i32(w, 1, s->type);
  tw_list(w, 2, THRIFT_I32, 1);
  tw_zz(w, s->enc);
  tw_list(w, 3, THRIFT_BINARY, (uint32_t)(1 + s->nested));
  for (int g = 0; g <= s->nested; g++) {
    const char *nm = g == 0 ? "x" : g == s->nested ? "leaf" : "inner";
    tw_varint(w, strlen(nm));
    memcpy(w->b + w->n, nm, strlen(nm));
    w->n += strlen(nm);
  }
  tw_i32(w, 4, s->codec);
  tw_i64(w, 5, nv);
  tw_i64(w, 6, chunk_end - start);
  tw_i64(w, 7, chunk_end - start);
  tw_i64(w, 9, s->dpo ? s->dpo : dpo);
  if (dict_off >= 0)
    tw_i64(w, 11, dict_off);
  tw_end(w);
  tw_end(w);
  tw_i64(w, 3, nv);
  tw_end(w);
  tw_end(w);
  uint32_t flen = (uint32_t)(w->n - footer) + (uint32_t)s->footer_delta;
  for (int k = 0; k < 4; k++)
    w->b[w->n++] = (uint8_t)(flen >> (8 * k));
  memcpy(w->b + w->n, "PAR1", 4);
  w->n += 4;
}

/* Open and read column x: 0, or the failure with its message. */
static int read_x(const uint8_t *p, size_t n, struct parquet_col **out,
                  struct zerr *err) {
  struct parquet_file *f;
  ZTRY(parquet_open(p, n, NULL, &f, err));
  int col = parquet_column(f, "x");
  int rc = col < 0 ? zerr_set(err, ENOENT, "no column x")
                   : parquet_read(f, col, out, err);
  parquet_close(f);
  return rc;
}

/* A default spec: 5 INT64 rows, required, PLAIN, v1, uncompressed. */
static struct spec spec_default(void) {
  struct spec s = {0};
  s.type = PQ_INT64;
  s.rep = PQ_REQUIRED;
  s.codec = PQ_UNCOMPRESSED;
  s.enc = PQ_PLAIN;
  s.page_type = PQ_DATA_PAGE;
  s.def_enc = PQ_RLE;
  s.nvals = 5;
  return s;
}

START_TEST(hand_made_valid) {
  static struct tw w;
  struct zerr err = {0};
  struct parquet_col *c;
  struct spec s = spec_default();
  make_file(&w, &s);
  ck_assert_msg(read_x(w.b, w.n, &c, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(c->n, 5);
  for (int i = 0; i < 5; i++)
    ck_assert(!c->isnull[i] && c->ints[i] == 10 * (i + 1));
  parquet_col_free(c);
  /* optional, v2, INT32: rows 1 and 3 null */
  s.rep = PQ_OPTIONAL;
  s.page_type = PQ_DATA_PAGE_V2;
  s.type = PQ_INT32;
  make_file(&w, &s);
  ck_assert_msg(read_x(w.b, w.n, &c, &err) == 0, "%s", err.msg);
  ck_assert(!c->isnull[0] && c->ints[0] == 10 && c->isnull[1] &&
            c->ints[2] == 20 && c->isnull[3] && c->ints[4] == 30);
  parquet_col_free(c);
  /* optional v1 dictionary: index 1 (9) for every non-null row */
  s = spec_default();
  s.rep = PQ_OPTIONAL;
  s.dict = 1;
  s.dict_index = 1;
  s.enc = PQ_RLE_DICTIONARY;
  make_file(&w, &s);
  ck_assert_msg(read_x(w.b, w.n, &c, &err) == 0, "%s", err.msg);
  ck_assert(c->ints[0] == 9 && c->isnull[1] && c->ints[4] == 9);
  parquet_col_free(c);
  /* BYTE_ARRAY, v2, required */
  s = spec_default();
  s.type = PQ_BYTE_ARRAY;
  s.page_type = PQ_DATA_PAGE_V2;
  make_file(&w, &s);
  ck_assert_msg(read_x(w.b, w.n, &c, &err) == 0, "%s", err.msg);
  ck_assert(c->off[1] == 2 && !memcmp(c->bytes + c->off[4], "v4", 2));
  parquet_col_free(c);
}
END_TEST

/* One row of the hostile table: a change to the default spec and what the
 * refusal must say. */
struct bad_case {
  const char *name;
  void (*change)(struct spec *s);
  const char *why;
};

#define CHANGE(nm, body)                                                       \
  static void ch_##nm(struct spec *s) { body; }
CHANGE(lz4, s->codec = PQ_LZ4)
CHANGE(brotli, s->codec = PQ_BROTLI)
CHANGE(delta, s->enc = PQ_DELTA_BINARY_PACKED)
CHANGE(bss, s->enc = PQ_BYTE_STREAM_SPLIT)
CHANGE(int96, s->type = PQ_INT96)
CHANGE(flba, s->type = PQ_FIXED_LEN_BYTE_ARRAY)
CHANGE(repeated, s->rep = PQ_REPEATED)
CHANGE(nested, s->nested = 2)
CHANGE(bitpacked_levels, s->rep = PQ_OPTIONAL; s->def_enc = PQ_BIT_PACKED)
CHANGE(more_values, s->page_values = 9)
CHANGE(fewer_values, s->page_values = 2)
CHANGE(clen_past, s->clen_delta = 400)
CHANGE(clen_short, s->clen_delta = -3)
CHANGE(ulen_lie, s->ulen_delta = 8)
CHANGE(rows_lie, s->rows_delta = 3)
CHANGE(dpo_past, s->dpo = 100000)
CHANGE(dpo_zero, s->dpo = 1)
CHANGE(footer_long, s->footer_delta = 100000)
CHANGE(footer_short, s->footer_delta = -5)
CHANGE(children_lie, s->root_children = 3)
CHANGE(dict_index, s->dict = 1; s->enc = PQ_RLE_DICTIONARY; s->dict_index = 3)
CHANGE(dict_missing, s->enc = PQ_RLE_DICTIONARY)
CHANGE(two_dicts, s->dict = 1; s->two_dicts = 1; s->enc = PQ_RLE_DICTIONARY)
CHANGE(nulls_lie, s->rep = PQ_OPTIONAL; s->page_type = PQ_DATA_PAGE_V2;
       s->nulls_lie = 1)
CHANGE(external, s->external = 1)
CHANGE(no_schema, s->no_schema = 1)
CHANGE(unknown_page, s->page_type = 7)
CHANGE(zstd_garbage, s->codec = PQ_ZSTD)
CHANGE(gzip_garbage, s->codec = PQ_GZIP)
CHANGE(snappy_garbage, s->codec = PQ_SNAPPY)

static const struct bad_case bad_cases[] = {
    {"LZ4 codec", ch_lz4, "codec LZ4 is not supported"},
    {"BROTLI codec", ch_brotli, "codec BROTLI is not supported"},
    {"DELTA encoding", ch_delta, "DELTA_BINARY_PACKED is not supported"},
    {"BYTE_STREAM_SPLIT", ch_bss, "BYTE_STREAM_SPLIT is not supported"},
    {"INT96", ch_int96, "type INT96 is not supported"},
    {"FIXED_LEN_BYTE_ARRAY", ch_flba, "FIXED_LEN_BYTE_ARRAY is not supported"},
    {"repeated", ch_repeated, "nested or repeated"},
    {"nested", ch_nested, "no column x"},
    {"BIT_PACKED levels", ch_bitpacked_levels, "levels in encoding BIT_PACKED"},
    {"page with more values than rows", ch_more_values, "9 values, 5 rows"},
    {"pages short of the rows", ch_fewer_values, "pages end after 2 of 5"},
    {"compressed size past the chunk", ch_clen_past, "runs past its column"},
    {"compressed size short", ch_clen_short, "header says"},
    {"uncompressed size lies", ch_ulen_lie, "header says"},
    {"num_rows lies", ch_rows_lie, "row groups hold 5 rows"},
    {"data page offset past the data", ch_dpo_past, "outside the data"},
    {"data page offset in the magic", ch_dpo_zero, "outside the data"},
    {"footer length past the file", ch_footer_long, "footer of"},
    {"footer length short", ch_footer_short, "footer at byte"},
    {"num_children lies", ch_children_lie, "runs past the"},
    {"dictionary index out of range", ch_dict_index, "dictionary index 3"},
    {"dictionary page missing", ch_dict_missing, "without a dictionary"},
    {"two dictionary pages", ch_two_dicts, "second or late dictionary"},
    {"num_nulls lies", ch_nulls_lie, "nulls"},
    {"column data elsewhere", ch_external, "another file"},
    {"no schema", ch_no_schema, "lacks schema"},
    {"unknown page type", ch_unknown_page, "unknown type 7"},
    {"ZSTD garbage", ch_zstd_garbage, "ZSTD"},
    {"GZIP garbage", ch_gzip_garbage, "GZIP"},
    {"SNAPPY garbage", ch_snappy_garbage, "SNAPPY"},
};

START_TEST(hand_made_hostile) {
  static struct tw w;
  const struct bad_case *bc = &bad_cases[_i];
  struct spec s = spec_default();
  bc->change(&s);
  make_file(&w, &s);
  struct zerr err = {0};
  struct parquet_col *c = NULL;
  int rc = read_x(w.b, w.n, &c, &err);
  parquet_col_free(c);
  ck_assert_msg(rc == -EIO || (rc == -ENOENT && strstr(bc->why, "no column")),
                "%s: accepted (rc %d)", bc->name, rc);
  ck_assert_msg(strstr(err.msg, bc->why), "%s: '%s' lacks '%s'", bc->name,
                err.msg, bc->why);
}
END_TEST

START_TEST(not_parquet) {
  struct zerr err = {0};
  struct parquet_file *f;
  ck_assert_int_eq(parquet_open((const uint8_t *)"PAR1", 4, NULL, &f, &err),
                   -EIO);
  static const uint8_t enc[] = "PAR1\0\0\0\0\0\0\0\0PARE";
  ck_assert_int_eq(parquet_open(enc, sizeof enc - 1, NULL, &f, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "encrypted"));
  static const uint8_t json[] = "{\"metadata\": {}, \"x\": 1}";
  ck_assert_int_eq(parquet_open(json, sizeof json - 1, NULL, &f, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "not a Parquet file"));
}
END_TEST

/* ---- the files of tests/data/parquet-refs ---- */

/* A committed file, read whole (malloc'd). */
static uint8_t *load(const char *rel, size_t *len) {
  const char *src = getenv("ZARRFS_SRCDIR");
  char p[4096];
  snprintf(p, sizeof p, "%s/tests/data/parquet-refs/store/%s", src ? src : ".",
           rel);
  char *text = NULL;
  struct zerr err = {0};
  ck_assert_msg(zread_file(p, 1 << 20, &text, len, &err) == 0, "%s: %s", p,
                err.msg);
  return (uint8_t *)text;
}

/* Column name of file f, read. */
static struct parquet_col *col_of(const struct parquet_file *f,
                                  const char *name) {
  struct zerr err = {0};
  struct parquet_col *c = NULL;
  int i = parquet_column(f, name);
  ck_assert_msg(i >= 0, "no column %s", name);
  ck_assert_msg(parquet_read(f, i, &c, &err) == 0, "%s: %s", name, err.msg);
  return c;
}

START_TEST(real_files) {
  size_t len;
  struct zerr err = {0};
  struct parquet_file *f;
  /* a/refs.0: parquet-wasm, dictionary path, ZSTD, v1 pages */
  uint8_t *d = load("a/refs.0.parq", &len);
  ck_assert_msg(parquet_open(d, len, NULL, &f, &err) == 0, "%s", err.msg);
  ck_assert_uint_eq(parquet_num_rows(f), 4);
  struct parquet_col *path = col_of(f, "path"), *off = col_of(f, "offset"),
                     *size = col_of(f, "size"), *raw = col_of(f, "raw");
  ck_assert(!path->isnull[0] && !path->isnull[1] && path->isnull[2] &&
            path->isnull[3]);
  ck_assert(path->off[1] == 8 && !memcmp(path->bytes, "data.bin", 8));
  ck_assert(off->ints[0] == 0 && off->ints[1] == 16 && size->ints[1] == 16);
  ck_assert(raw->isnull[0] && raw->isnull[2] && !raw->isnull[3]);
  ck_assert_uint_eq(raw->off[4] - raw->off[3], 16);
  ck_assert_int_eq(raw->bytes[raw->off[3]], (uint8_t)(36 - 50)); /* 9*3-50+.. */
  parquet_col_free(path);
  parquet_col_free(off);
  parquet_col_free(size);
  parquet_col_free(raw);
  parquet_close(f);
  free(d);
  /* a/refs.2: hyparquet-writer, PLAIN path, SNAPPY, v2 pages */
  d = load("a/refs.2.parq", &len);
  ck_assert_msg(parquet_open(d, len, NULL, &f, &err) == 0, "%s", err.msg);
  path = col_of(f, "path");
  off = col_of(f, "offset");
  ck_assert(path->off[1] == 9 && !memcmp(path->bytes, "whole.bin", 9));
  ck_assert(!path->isnull[1] && path->isnull[2] && path->isnull[3]);
  ck_assert_int_eq(off->ints[1], 32);
  parquet_col_free(path);
  parquet_col_free(off);
  parquet_close(f);
  free(d);
  /* g/b/refs.0: GZIP, v2, dictionary; g/b/refs.1: uncompressed v1 plain */
  static const char *const more[] = {"g/b/refs.0.parq", "g/b/refs.1.parq",
                                     "c/refs.0.parq"};
  for (int k = 0; k < 3; k++) {
    d = load(more[k], &len);
    ck_assert_msg(parquet_open(d, len, NULL, &f, &err) == 0, "%s: %s", more[k],
                  err.msg);
    off = col_of(f, "offset");
    size = col_of(f, "size");
    int64_t first = k == 0 ? 48 : k == 1 ? 48 + 4 * 64 : 432;
    ck_assert_int_eq(off->ints[0], first);
    ck_assert_int_eq(size->ints[0], k == 2 ? 56 : 64);
    ck_assert_int_eq(parquet_column(f, "raw") < 0, k == 2);
    parquet_col_free(off);
    parquet_col_free(size);
    parquet_close(f);
    free(d);
  }
  /* z/refs.0: only a raw column */
  d = load("z/refs.0.parq", &len);
  ck_assert_msg(parquet_open(d, len, NULL, &f, &err) == 0, "%s", err.msg);
  ck_assert_int_lt(parquet_column(f, "path"), 0);
  raw = col_of(f, "raw");
  ck_assert(raw->off[1] == 2 && raw->bytes[0] == (uint8_t)-7);
  parquet_col_free(raw);
  parquet_close(f);
  free(d);
}
END_TEST

/* Open and read every column; the result does not matter, only that it
 * is one (ASan and UBSan watch the reads). */
static void read_all(const uint8_t *p, size_t n) {
  struct zerr err = {0};
  struct parquet_file *f;
  struct parquet_limits lim;
  parquet_limits_default(&lim);
  lim.max_page = 1 << 16;
  if (parquet_open(p, n, &lim, &f, &err) < 0) {
    ck_assert(err.code == EIO || err.code == ENOMEM);
    return;
  }
  static const char *const cols[] = {"path", "offset", "size", "raw"};
  for (int i = 0; i < 4; i++) {
    struct parquet_col *c = NULL;
    int k = parquet_column(f, cols[i]);
    if (k >= 0 && parquet_read(f, k, &c, &err) < 0)
      ck_assert(err.code == EIO || err.code == ENOMEM);
    parquet_col_free(c);
  }
  parquet_close(f);
}

START_TEST(every_prefix_and_corruption) {
  static const char *const files[] = {"a/refs.0.parq", "a/refs.2.parq",
                                      "g/b/refs.0.parq", "c/refs.0.parq",
                                      "z/refs.0.parq"};
  for (int k = 0; k < 5; k++) {
    size_t len;
    uint8_t *d = load(files[k], &len);
    uint8_t *copy = malloc(len);
    for (size_t n = 0; n < len; n++) { /* truncated, or its middle cut */
      read_all(d, n);
      if (n + 8 <= len) {
        memcpy(copy, d, n);
        memcpy(copy + n, d + len - 8, 8);
        read_all(copy, n + 8);
      }
    }
    for (size_t i = 0; i < len; i++) {
      memcpy(copy, d, len);
      copy[i] ^= 0xff;
      read_all(copy, len);
      copy[i] ^= 0x7e;
      read_all(copy, len);
    }
    free(copy);
    free(d);
  }
}
END_TEST

/* ---- the store over tests/data/parquet-refs ---- */

/* The fixture store, wrapped, with a budget for record tables. */
static struct store *open_store(size_t budget, struct confine **c) {
  const char *src = getenv("ZARRFS_SRCDIR");
  char root[4096];
  snprintf(root, sizeof root, "%s/tests/data/parquet-refs/store",
           src ? src : ".");
  struct zerr err = {0};
  struct store *local, *s;
  ck_assert_int_eq(confine_new(c, &err), 0);
  ck_assert_msg(confine_add_root(*c, root, &err) == 0, "%s", err.msg);
  ck_assert_msg(store_open_local(root, &local, &err) == 0, "%s", err.msg);
  ck_assert_msg(store_wrap_pqrefs(local, *c, budget, 1 << 20, &s, &err) == 1,
                "%s", err.msg);
  return s;
}

/* The first bytes of key as a little-endian int32, or the failure. */
static int first_i32(struct store *s, const char *key, int32_t *v,
                     struct zerr *err) {
  struct bytesrc *b;
  ZTRY(store_get(s, key, &b, err));
  uint8_t x[4];
  int rc = bytesrc_read_range(b, 0, 4, x, err);
  bytesrc_unref(b);
  *v = (int32_t)((uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 |
                 (uint32_t)x[3] << 24);
  return rc;
}

/* Names listed, space-separated. */
static int names_cb(void *ud, const char *name, enum store_entry_type t,
                    uint64_t size, int64_t mtime) {
  (void)t, (void)size, (void)mtime;
  char *out = ud;
  size_t o = strlen(out);
  snprintf(out + o, 512 - o, "%s ", name);
  return 0;
}

START_TEST(store_lazy_and_budget) {
  struct confine *c;
  struct store *s = open_store(1 << 20, &c);
  struct zerr err = {0};
  int32_t v;
  ck_assert_uint_eq(store_pqrefs_loads(s), 0); /* nothing read at open */
  ck_assert_msg(first_i32(s, "a/0", &v, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(v, -50);
  ck_assert_msg(first_i32(s, "a/1", &v, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(v, -38);
  ck_assert_uint_eq(store_pqrefs_loads(s), 1); /* one record file */
  ck_assert_msg(first_i32(s, "a/3", &v, &err) == 0, "%s", err.msg); /* raw */
  ck_assert_int_eq(v, -14);
  ck_assert_msg(first_i32(s, "a/8", &v, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(v, 46); /* whole.bin */
  ck_assert_uint_eq(store_pqrefs_loads(s), 2);
  ck_assert_int_eq(first_i32(s, "a/2", &v, &err), -ENOENT);  /* null path */
  ck_assert_int_eq(first_i32(s, "a/5", &v, &err), -ENOENT);  /* no file */
  ck_assert_int_eq(first_i32(s, "a/10", &v, &err), -ENOENT); /* grid */
  ck_assert_int_eq(first_i32(s, "a/01", &v, &err), -ENOENT);
  ck_assert_int_eq(first_i32(s, "a/refs.0.parq", &v, &err), -ENOENT);
  ck_assert_int_eq(first_i32(s, ".zmetadata", &v, &err), -ENOENT);
  ck_assert_int_eq(first_i32(s, "bad/1", &v, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "negative offset"));
  ck_assert_int_eq(first_i32(s, "delta/0", &v, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "DELTA_BYTE_ARRAY"));
  ck_assert_msg(first_i32(s, "g/b/2.1", &v, &err) == 0, "%s", err.msg);
  ck_assert_int_eq(v, (int32_t)(404LL * 1000000007LL)); /* low word */
  enum store_entry_type t;
  uint64_t size;
  ck_assert_int_eq(store_stat(s, "a/8", &t, &size, &err), 0);
  ck_assert(t == STORE_FILE && size == 16);
  ck_assert_int_eq(store_stat(s, "g", &t, &size, &err), 0);
  ck_assert(t == STORE_DIR);
  char names[512] = "";
  ck_assert_int_eq(store_list(s, "a", names_cb, names, &err), 0);
  ck_assert_str_eq(names, ".zarray .zattrs 0 1 3 8 9 ");
  names[0] = '\0';
  ck_assert_int_eq(store_list(s, "g", names_cb, names, &err), 0);
  ck_assert_str_eq(names, ".zgroup b ");
  names[0] = '\0';
  ck_assert_int_eq(store_list(s, "delta", names_cb, names, &err),
                   STORE_LIST_PARTIAL);
  ck_assert_str_eq(names, ".zarray ");
  store_free(s);
  confine_free(c);
  /* No budget: a table is dropped once unpinned, and read again. */
  s = open_store(0, &c);
  ck_assert_int_eq(first_i32(s, "a/0", &v, &err), 0);
  ck_assert_int_eq(first_i32(s, "a/0", &v, &err), 0);
  ck_assert_uint_eq(store_pqrefs_loads(s), 2);
  store_free(s);
  confine_free(c);
}
END_TEST

START_TEST(zmetadata_and_keys) {
  static const char good[] =
      "{\"metadata\": {\".zgroup\": {\"zarr_format\": 2}, \"v/.zarray\": "
      "{\"shape\": [10, 3], \"chunks\": [4, 2], \"dtype\": \"<i4\"}, "
      "\"w/.zarray\": {\"shape\": [5], \"chunks\": [5], "
      "\"dimension_separator\": \"/\"}}, \"record_size\": 100}";
  ck_assert(pqrefs_is_zmetadata(good, sizeof good - 1));
  ck_assert(!pqrefs_is_zmetadata("{\"metadata\": {}}", 16));
  ck_assert(!pqrefs_is_zmetadata("{\"zarr_consolidated_format\": 1}", 31));
  struct pqrefs_meta *m;
  struct zerr err = {0};
  ck_assert_msg(pqrefs_meta_parse(good, sizeof good - 1, &m, &err) == 0, "%s",
                err.msg);
  ck_assert_uint_eq(m->record_size, 100);
  ck_assert_uint_eq(m->nfields, 2);
  ck_assert_uint_eq(m->fields[0].nchunks, 6); /* 3 x 2 */
  size_t f;
  uint64_t n;
  ck_assert_int_eq(pqrefs_chunk(m, "v/2.1", &f, &n, &err), 1);
  ck_assert_uint_eq(n, 5);
  char name[64];
  pqrefs_chunk_name(&m->fields[0], 5, name, sizeof name);
  ck_assert_str_eq(name, "2.1");
  ck_assert_int_eq(pqrefs_chunk(m, "v/3.0", &f, &n, &err), -ENOENT);
  ck_assert_int_eq(pqrefs_chunk(m, "v/0", &f, &n, &err), -ENOENT);
  ck_assert_int_eq(pqrefs_chunk(m, "v/0.0.0", &f, &n, &err), -ENOENT);
  ck_assert_int_eq(pqrefs_chunk(m, "v/.zarray", &f, &n, &err), 0);
  ck_assert_int_eq(pqrefs_chunk(m, "vv/0.0", &f, &n, &err), 0);
  ck_assert_int_eq(pqrefs_chunk(m, "w/0", &f, &n, &err), -EIO);
  ck_assert_ptr_nonnull(strstr(err.msg, "dimension_separator"));
  struct manifest_entry en;
  ck_assert_int_eq(manifest_lookup(m->docs, "v/.zarray", &en), 0);
  ck_assert_int_eq(strncmp((const char *)en.data, "{\"shape\": [10, 3]", 17),
                   0);
  pqrefs_meta_free(m);
  static const char *const bad[] = {
      "{\"metadata\": {}, \"record_size\": 0}",
      "{\"metadata\": {}, \"record_size\": -1}",
      "{\"metadata\": {}, \"record_size\": 1.5}",
      "{\"metadata\": {}, \"record_size\": 99999999999}",
      "{\"metadata\": [], \"record_size\": 10}",
      "{\"record_size\": 10}",
      "{\"metadata\": {\"a\": {}}, \"record_size\": 10",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    ck_assert_msg(pqrefs_meta_parse(bad[i], strlen(bad[i]), &m, &err) == -EIO,
                  "accepted %s", bad[i]);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("parquet");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, thrift_reads_and_skips);
  tcase_add_test(tc, thrift_hostile);
  tcase_add_test(tc, rle_hybrid);
  tcase_add_test(tc, hand_made_valid);
  tcase_add_loop_test(tc, hand_made_hostile, 0,
                      sizeof bad_cases / sizeof *bad_cases);
  tcase_add_test(tc, not_parquet);
  tcase_add_test(tc, real_files);
  tcase_add_test(tc, every_prefix_and_corruption);
  tcase_add_test(tc, store_lazy_and_budget);
  tcase_add_test(tc, zmetadata_and_keys);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
