/* check_textvar.c - the text of decoded variable-length units (strings,
 * byte strings as hex), rendered by runs (fs/text/text.h: layout, whole
 * and copied renders, line offsets, ranged reads) against a renderer that
 * goes element by element: random strings with newlines, empty ones and
 * invalid UTF-8, 1-D and 2-D with partial rows and columns, offsets from 0
 * or not; and the same text made straight from a chunk's records
 * (vlen-utf8 behind gzip: text_layout_records), with strings longer than
 * its scratch, trailing elements outside the array, a record that lies
 * (the decode's own error) and a chunk past render_max (not taken: it
 * decodes as ever). The codecs that decode such units:
 * tests/unit/codecs/check_vlen.c. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "../../../fs/text/render.h"
#include "../../../fs/text/text.h"
#include "../../../src/util/buf.h"
#include "../../../src/util/log.h"
#include "../testutil.h"

#define MAXDEC ((size_t)64 << 20)

/* ---- unit text by runs against element by element ---- */

/* The text of the in-bounds box (rows x cols of a unit R x C, C order) of
 * elements eo/data (data[x - eo[0]] is byte x), one element at a time:
 * the text contract's reference. Returns its length. */
static size_t text_by_elements(const struct dtype *dt, const uint64_t *eo,
                               const uint8_t *data, uint64_t C, uint64_t rows,
                               uint64_t cols, char *out) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  for (uint64_t r = 0; r < rows; r++)
    for (uint64_t c = 0; c < cols; c++) {
      uint64_t j = r * C + c;
      size_t o0 = o;
      for (uint64_t x = eo[j]; x < eo[j + 1]; x++) {
        uint8_t b = data[x - eo[0]];
        if (dt->kind == DT_BYTES) {
          out[o++] = hex[b >> 4];
          out[o++] = hex[b & 15];
        } else {
          out[o++] = b == '\n' ? ' ' : (char)b;
        }
      }
      if (dt->kind != DT_BYTES) /* bytes that are not UTF-8: '?' */
        testutil_utf8_fix((uint8_t *)out + o0, o - o0);
      out[o++] = '\n';
    }
  return o;
}
START_TEST(test_text_runs_same_as_elements) {
  /* Decoded units of random strings and byte strings (newlines inside,
   * empty ones, invalid UTF-8, all empty), 1-D and
   * 2-D with partial rows and columns, offsets from 0 or not, bytes in
   * memory or in a file, laid out lazily or rendered whole (in place where
   * that applies): the size, every line offset and every read [off, end)
   * equal the element-by-element text. */
  static const uint8_t pick[] = {'a', 'b', '\n', 0xff, 0xc3, 0xa9, 0, ' '};
  unsigned seed = 2025;
  char path[] = "/tmp/check_vlen_runs_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  for (int round = 0; round < 96; round++) {
    enum dtype_kind kind = round % 2 ? DT_BYTES : DT_STRING;
    int in_file = round / 2 % 2, whole = round / 4 % 2, shape_case = round / 8;
    uint64_t R = 1 + (uint64_t)rand_r(&seed) % 5,
             C = 1 + (uint64_t)rand_r(&seed) % 6;
    int ndim = shape_case % 3 == 0 ? 1 : 2;
    if (ndim == 1) {
      C = R * C;
      R = 1;
    }
    uint64_t rows = R, cols = C;
    switch (shape_case % 4) {
    case 1:
      cols = 1 + (uint64_t)rand_r(&seed) % C;
      break;
    case 2:
      rows = 1 + (uint64_t)rand_r(&seed) % R;
      break;
    case 3:
      cols = 1 + (uint64_t)rand_r(&seed) % C;
      break;
    }
    if (ndim == 1) { /* one dimension: the unit is C long, cols of it in */
      rows = 1;
      if (shape_case % 4 == 2)
        cols = 1 + (uint64_t)rand_r(&seed) % C;
    }
    uint64_t n = R * C, base = in_file || whole ? 0 : 3;
    int all_empty = round % 12 == 5;
    uint64_t *eo = malloc((n + 1) * sizeof *eo);
    uint8_t *data = malloc(n * 70 + 1);
    eo[0] = base;
    for (uint64_t j = 0; j < n; j++) {
      unsigned r = (unsigned)rand_r(&seed);
      uint64_t len = all_empty || r % 4 == 0 ? 0
                     : r % 3 == 0            ? (r >> 8) % 70
                                             : (r >> 8) % 17;
      for (uint64_t i = 0; i < len; i++)
        data[eo[j] - base + i] = pick[(unsigned)rand_r(&seed) % sizeof pick];
      eo[j + 1] = eo[j] + len;
    }
    size_t dsize = (size_t)(eo[n] - base);
    struct dtype dt = dtype_of(kind);
    char *want = malloc(2 * dsize + n + 1);
    size_t wlen = text_by_elements(&dt, eo, data, C, rows, cols, want);

    struct text_form form = {0};
    form.dt = dt;
    form.ndim = ndim;
    uint64_t ashape[2], idx[2] = {0, 0};
    if (ndim == 1) {
      form.shape[0] = C;
      ashape[0] = cols;
    } else {
      form.shape[0] = R;
      form.shape[1] = C;
      ashape[0] = rows;
      ashape[1] = cols;
    }
    form.fill = (char *)"";
    struct zerr err = {0};
    struct abytes *ab = calloc(1, sizeof *ab);
    ab->n = n;
    ab->offsets = eo;
    struct bytesrc *src = NULL;
    if (in_file) {
      FILE *f = fopen(path, "wb");
      ck_assert_uint_eq(fwrite(data, 1, dsize, f), dsize);
      fclose(f);
      ck_assert_int_eq(bytesrc_open_file(path, NULL, &src, &err), 0);
    } else {
      void *copy = malloc(dsize ? dsize : 1);
      memcpy(copy, data, dsize);
      /* offsets are absolute: the data section starts base bytes in */
      uint8_t *mem = malloc(dsize + base + 1);
      memset(mem, 'x', base);
      memcpy(mem + base, copy, dsize);
      free(copy);
      src = bytesrc_from_mem(mem, dsize + base);
    }
    ab->data = src;
    /* our reference, for reads; without it the unit's bytes are its
     * alone, and strings in a linear box become their text in place */
    int in_place = whole && !in_file && round / 16 % 2;
    if (in_place)
      src = NULL;
    else
      bytesrc_ref(src);
    struct chunk_text *ct = NULL;
    ck_assert_int_eq(text_layout(&form, ashape, idx, ab, MAXDEC,
                                 whole ? MAXDEC : 0, NULL, NULL, &ct, &err),
                     0);
    if (whole && ct->ab && !in_file) { /* a decoded data section's copy */
      uint8_t *sec = malloc(dsize + base + 1);
      memset(sec, 'x', base);
      memcpy(sec + base, data, dsize);
      struct bytesrc *ds = bytesrc_from_mem(sec, dsize + base);
      struct chunk_text *cp = NULL;
      ck_assert_int_eq(text_render_copy(ct, ds, MAXDEC, &cp, &err), 0);
      bytesrc_unref(ds);
      ck_assert_uint_eq(cp->size, wlen);
      ck_assert(!memcmp(cp->text, want, wlen));
      for (uint64_t k = 0; k < cp->nin; k++)
        ck_assert_uint_eq(text_line_off(cp, k), text_line_off(ct, k));
      zobj_put(&cp->obj);
    }
    if (whole && ct->ab) /* what the unit decoder does with strings */
      ck_assert_int_eq(text_render_all(ct, ct->ab->data, &err), 0);
    ck_assert(!whole || ct->text);
    ck_assert_uint_eq(ct->size, wlen);
    for (uint64_t k = 0, pos = 0; k <= ct->nin; k++) {
      ck_assert_uint_eq(text_line_off(ct, k), pos);
      if (k < ct->nin) {
        ck_assert_uint_eq(text_line_off_from(ct, 0, 0, k), pos);
        pos =
            (uint64_t)((char *)memchr(want + pos, '\n', wlen - pos) - want) + 1;
      }
    }
    char *got = malloc(wlen + 2);
    for (uint64_t off = 0; off <= wlen; off++)
      for (uint64_t end = off; end <= wlen + 1; end++) {
        memset(got, '#', wlen + 2);
        long r = text_read(ct, src, off, (size_t)(end - off), got, &err);
        uint64_t e = end < wlen ? end : wlen;
        if (r != (long)(e - off) ||
            memcmp(got, want + off, (size_t)(e - off)) || got[e - off] != '#')
          ck_abort_msg("round %d: [%llu, %llu) of %zu differs", round,
                       (unsigned long long)off, (unsigned long long)end, wlen);
      }
    for (uint64_t k = 0; k < ct->nin; k++) { /* reads from a known line */
      uint64_t kpos = text_line_off(ct, k);
      for (uint64_t len = 0; kpos + len <= wlen; len++) {
        long r = text_read_at(ct, src, k, kpos, kpos, (size_t)len, got, &err);
        if (r != (long)len || memcmp(got, want + kpos, (size_t)len))
          ck_abort_msg("round %d: line %llu, %llu bytes differ", round,
                       (unsigned long long)k, (unsigned long long)len);
      }
    }
    free(got);
    zobj_put(&ct->obj);
    bytesrc_unref(src);
    free(want);
    free(data);
  }
  unlink(path);
}
END_TEST

/* A unit's strings turned into its text in place run by run (each run's
 * bytes scanned for newlines and bytes that are not UTF-8, then moved):
 * units of several runs, with such bytes at and across run edges, some
 * runs with none, give the element-by-element text and line offsets. */
START_TEST(test_text_in_place_runs) {
  static const uint8_t pick[] = {'a', 'b', '\n', 0xff, 0xc3, 0xa9, 0xe2, ' '};
  unsigned seed = 77;
  for (int round = 0; round < 6; round++) {
    uint64_t n = 4096 * (uint64_t)(round + 1) + (uint64_t)round * 37 - 1;
    uint64_t *eo = malloc((n + 1) * sizeof *eo);
    uint8_t *data = malloc(n * 40 + 1);
    eo[0] = 0;
    for (uint64_t j = 0; j < n; j++) {
      unsigned r = (unsigned)rand_r(&seed);
      uint64_t len = r % 5 == 0 ? 0 : (r >> 8) % 40;
      int plain = (j / 4096) % 2 && round % 2; /* whole runs of ASCII */
      for (uint64_t i = 0; i < len; i++)
        data[eo[j] + i] = plain ? (uint8_t)('c' + i % 20)
                                : pick[(unsigned)rand_r(&seed) % sizeof pick];
      eo[j + 1] = eo[j] + len;
    }
    size_t dsize = (size_t)eo[n];
    struct dtype dt = dtype_of(DT_STRING);
    char *want = malloc(dsize + n + 1);
    size_t wlen = text_by_elements(&dt, eo, data, n, 1, n, want);
    struct text_form form = {0};
    form.dt = dt;
    form.ndim = 1;
    form.shape[0] = n;
    form.fill = (char *)"";
    uint64_t ashape[1] = {n}, idx[1] = {0};
    struct abytes *ab = calloc(1, sizeof *ab);
    ab->n = n;
    ab->offsets = eo;
    uint8_t *mem = malloc(dsize ? dsize : 1);
    memcpy(mem, data, dsize);
    ab->data = bytesrc_from_mem(mem, dsize); /* the unit's alone */
    struct chunk_text *ct = NULL;
    struct zerr err = {0};
    ck_assert_int_eq(text_layout(&form, ashape, idx, ab, MAXDEC, MAXDEC, NULL,
                                 NULL, &ct, &err),
                     0);
    ck_assert_ptr_nonnull(ct->text);
    ck_assert_ptr_null(ct->ab); /* made in place: the elements are gone */
    ck_assert_uint_eq(ct->size, wlen);
    ck_assert(!memcmp(ct->text, want, wlen));
    for (uint64_t k = 0, pos = 0; k < n; k++) {
      ck_assert_uint_eq(text_line_off(ct, k), pos);
      pos = (uint64_t)((char *)memchr(want + pos, '\n', wlen - pos) - want) + 1;
    }
    zobj_put(&ct->obj);
    free(want);
    free(data);
  }
}
END_TEST

/* ---- text from a chunk's records ---- */

/* The chain `vlen-utf8, gzip` for chunks of n strings, its spec in s. */
static struct chain *records_chain(uint64_t n, struct codec_spec *s) {
  memset(s, 0, sizeof *s);
  s->ndim = 1;
  s->shape[0] = n;
  s->nelem = n;
  s->dtype = dtype_of(DT_STRING);
  json_t *j =
      json_loads("[{\"name\":\"vlen-utf8\"},{\"name\":\"gzip\"}]", 0, NULL);
  struct chain *c = NULL;
  struct zerr err = {0};
  ck_assert_msg(chain_build(j, s, &c, &err) == 0, "%s", err.msg);
  json_decref(j);
  ck_assert(chain_records_capable(c));
  return c;
}

/* The records of elements eo/data (count, then each length and bytes),
 * as a zlib stream (which gzip accepts) in a new source; lie: element 1's
 * length made to run past the end. */
static struct bytesrc *records_chunk(const uint64_t *eo, const uint8_t *data,
                                     uint64_t n, int lie) {
  size_t rl = 4 + 4 * (size_t)n + (size_t)eo[n];
  uint8_t *raw = malloc(rl);
  size_t at = 4;
  for (int b = 0; b < 4; b++)
    raw[b] = (uint8_t)(n >> (8 * b));
  for (uint64_t j = 0; j < n; j++) {
    uint64_t l = eo[j + 1] - eo[j];
    if (lie && j == 1)
      l = rl;
    for (int b = 0; b < 4; b++)
      raw[at + b] = (uint8_t)(l >> (8 * b));
    memcpy(raw + at + 4, data + eo[j], (size_t)(eo[j + 1] - eo[j]));
    at += 4 + (size_t)(eo[j + 1] - eo[j]);
  }
  uLongf zl = compressBound(rl);
  uint8_t *z = malloc(zl);
  ck_assert_int_eq(compress2(z, &zl, raw, rl, 1), Z_OK);
  free(raw);
  return bytesrc_from_mem(z, zl);
}

/* Units of strings laid out from their records give the element-by-
 * element text and line offsets, in-bounds prefix and all. */
START_TEST(test_text_from_records) {
  static const uint8_t pick[] = {'a', 'b', '\n', 0xff, 0xc3, 0xa9, 0xe2, ' '};
  unsigned seed = 91;
  struct codec_env env = {MAXDEC, NULL, 0};
  for (int round = 0; round < 6; round++) {
    /* sizes below, at and past a run of 4096; rounds 2 and 5 hold a
     * string longer than the scratch (128 KiB), round 4 an empty unit */
    uint64_t n =
        round == 4 ? 0 : 4096 * (uint64_t)round + 3 * (uint64_t)round + 5;
    uint64_t nin = round % 2 ? n - 3 : n; /* the array ends inside the unit */
    uint64_t *eo = malloc((n + 1) * sizeof *eo);
    uint8_t *data = malloc(n * 40 + 300000);
    eo[0] = 0;
    for (uint64_t j = 0; j < n; j++) {
      unsigned r = (unsigned)rand_r(&seed);
      uint64_t len = r % 5 == 0 ? 0 : (r >> 8) % 40;
      if ((round == 2 || round == 5) && (j == n / 2 || j == n / 2 + 1))
        len = 150000 + j % 7;
      int plain = (j / 4096) % 2 == 1;
      /* round 3: ASCII throughout, a newline inside a string now and
       * then (a run to fix that no byte above 0x7f gives away) */
      unsigned npick = round == 3 ? 3 : sizeof pick;
      for (uint64_t i = 0; i < len; i++)
        data[eo[j] + i] = plain && len < 1000
                              ? (uint8_t)('c' + i % 20)
                              : pick[(unsigned)rand_r(&seed) % npick];
      eo[j + 1] = eo[j] + len;
    }
    struct dtype dt = dtype_of(DT_STRING);
    char *want = malloc((size_t)eo[n] + n + 1);
    size_t wlen = text_by_elements(&dt, eo, data, n, 1, nin, want);
    struct codec_spec spec;
    struct chain *c = records_chain(n, &spec);
    struct text_form form = {0};
    form.dt = dt;
    form.ndim = 1;
    form.shape[0] = n;
    form.fill = (char *)"";
    uint64_t ashape[1] = {nin}, idx[1] = {0};
    struct bytesrc *z = records_chunk(eo, data, n, 0);
    struct chain_records rec;
    struct zerr err = {0};
    ck_assert_msg(chain_records_decode(c, &spec, z, &env, &rec, &err) == 0,
                  "%s", err.msg);
    struct chunk_text *ct = NULL;
    ck_assert_msg(text_layout_records(&form, ashape, idx, &rec, MAXDEC, NULL,
                                      &ct, &err) == 1,
                  "round %d: %s", round, err.msg);
    ck_assert_ptr_null(rec.buf); /* taken: the text is made over it */
    ck_assert_ptr_nonnull(ct->text);
    ck_assert_uint_eq(ct->nin, nin);
    ck_assert_uint_eq(ct->size, wlen);
    ck_assert_msg(!memcmp(ct->text, want, wlen), "round %d differs", round);
    for (uint64_t k = 0, pos = 0; k < nin; k++) {
      ck_assert_uint_eq(text_line_off(ct, k), pos);
      pos = (uint64_t)((char *)memchr(want + pos, '\n', wlen - pos) - want) + 1;
    }
    zobj_put(&ct->obj);
    /* Past render_max: not taken, decoded as chain_decode decodes. */
    ck_assert_int_eq(chain_records_decode(c, &spec, z, &env, &rec, &err), 0);
    ck_assert_int_eq(text_layout_records(&form, ashape, idx, &rec,
                                         rec.size ? rec.size - 1 : 0, NULL, &ct,
                                         &err),
                     0);
    struct abytes *ab = NULL;
    ck_assert_msg(chain_records_abytes(&rec, &spec, &env, &ab, &err) == 0, "%s",
                  err.msg);
    ck_assert_ptr_null(rec.buf);
    ck_assert_uint_eq(ab->n, n);
    for (uint64_t j = 0; j <= n; j++)
      ck_assert_uint_eq(ab->offsets[j], eo[j]);
    abytes_free(ab);
    bytesrc_unref(z);
    /* A record that lies: the decode's own error, nothing shown. */
    if (n > 1) {
      z = records_chunk(eo, data, n, 1);
      struct zerr want_err = {0};
      ck_assert_int_eq(chain_decode(c, &spec, z, &env, &ab, &want_err), -EIO);
      ck_assert_int_eq(chain_records_decode(c, &spec, z, &env, &rec, &err), 0);
      ct = NULL;
      ck_assert_int_eq(text_layout_records(&form, ashape, idx, &rec, MAXDEC,
                                           NULL, &ct, &err),
                       -EIO);
      ck_assert_ptr_null(ct);
      ck_assert_str_eq(err.msg, want_err.msg);
      ck_assert_msg(strstr(err.msg, "vlen-utf8: element 1 length"), "%s",
                    err.msg);
      chain_records_free(&rec);
      bytesrc_unref(z);
    }
    chain_free(c);
    free(want);
    free(eo);
    free(data);
  }
}
END_TEST

static Suite *textvar_suite(void) {
  Suite *s = suite_create("textvar");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_text_runs_same_as_elements);
  tcase_add_test(tc, test_text_in_place_runs);
  tcase_add_test(tc, test_text_from_records);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) {
  zlog_setup(0, ZLOG_ERR);
  return testutil_run(textvar_suite());
}
