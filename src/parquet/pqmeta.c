/* pqmeta.c - FileMetaData and PageHeader from Thrift (see pqmeta.h). */
#include "pqmeta.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "thrift.h"

/* A loop over the fields of a struct: declares id and type. */
#define FIELDS(r, st, id, type, rc)                                            \
  int16_t id;                                                                  \
  int type;                                                                    \
  while (((rc) = thrift_field((r), (st), &id, &type)) == 1)

/* An i32 field that must not be negative. */
static int nonneg32(struct thrift_r *r, int type, const char *name,
                    int32_t *v) {
  ZTRY(thrift_i32(r, type, v));
  if (*v < 0)
    return thrift_fail(r, "%s is negative (%ld)", name, (long)*v);
  return 0;
}

/* An i64 field that must not be negative. */
static int nonneg64(struct thrift_r *r, int type, const char *name,
                    int64_t *v) {
  ZTRY(thrift_i64(r, type, v));
  if (*v < 0)
    return thrift_fail(r, "%s is negative (%lld)", name, (long long)*v);
  return 0;
}

/* A SchemaElement. */
static int read_schema_el(struct thrift_r *r, struct pq_schema_el *el) {
  struct thrift_st st;
  int rc, have_name = 0;
  el->type = -1;
  el->repetition = -1;
  el->num_children = 0;
  ZTRY(thrift_enter(r, &st));
  FIELDS(r, &st, id, type, rc) {
    switch (id) {
    case 1:
      rc = nonneg32(r, type, "SchemaElement.type", &el->type);
      break;
    case 3:
      rc = thrift_i32(r, type, &el->repetition);
      if (rc == 0 && (el->repetition < 0 || el->repetition > 2))
        rc = thrift_fail(r, "repetition_type %ld", (long)el->repetition);
      break;
    case 4:
      rc = thrift_binary(r, type, &el->name.p, &el->name.len);
      have_name = 1;
      break;
    case 5:
      rc = nonneg32(r, type, "num_children", &el->num_children);
      break;
    default:
      rc = thrift_skip(r, type);
    }
    if (rc < 0)
      return rc;
  }
  ZTRY(thrift_leave_rc(r, rc));
  if (!have_name)
    return thrift_fail(r, "SchemaElement without a name");
  return 0;
}

/* Bits of the required fields seen. */
enum { CM_TYPE = 1, CM_CODEC = 2, CM_NUM = 4, CM_SIZE = 8, CM_DATA = 16 };

/* A ColumnMetaData. */
static int read_colmeta(struct thrift_r *r, struct pq_chunk *c) {
  struct thrift_st st;
  int rc, seen = 0;
  ZTRY(thrift_enter(r, &st));
  FIELDS(r, &st, id, type, rc) {
    switch (id) {
    case 1:
      rc = nonneg32(r, type, "ColumnMetaData.type", &c->type);
      seen |= CM_TYPE;
      break;
    case 3: {
      int et;
      uint32_t n;
      rc = thrift_list(r, type, &et, &n);
      if (rc == 0 && (n == 0 || n > PQMETA_MAX_PATH))
        rc = thrift_fail(r, "path_in_schema of %u elements", n);
      for (uint32_t i = 0; i < n && rc == 0; i++) {
        struct pq_str s;
        rc = thrift_binary(r, et, &s.p, &s.len);
        if (i == 0)
          c->path0 = s;
      }
      c->npath = n;
      break;
    }
    case 4:
      rc = nonneg32(r, type, "codec", &c->codec);
      seen |= CM_CODEC;
      break;
    case 5:
      rc = nonneg64(r, type, "num_values", &c->num_values);
      seen |= CM_NUM;
      break;
    case 7:
      rc =
          nonneg64(r, type, "total_compressed_size", &c->total_compressed_size);
      seen |= CM_SIZE;
      break;
    case 9:
      rc = nonneg64(r, type, "data_page_offset", &c->data_page_offset);
      seen |= CM_DATA;
      break;
    case 11:
      rc = nonneg64(r, type, "dictionary_page_offset",
                    &c->dictionary_page_offset);
      break;
    default:
      rc = thrift_skip(r, type);
    }
    if (rc < 0)
      return rc;
  }
  ZTRY(thrift_leave_rc(r, rc));
  if (seen != (CM_TYPE | CM_CODEC | CM_NUM | CM_SIZE | CM_DATA) || !c->npath)
    return thrift_fail(r, "ColumnMetaData lacks a required field");
  return 0;
}

/* A ColumnChunk. */
static int read_colchunk(struct thrift_r *r, struct pq_chunk *c) {
  struct thrift_st st;
  int rc, have_meta = 0;
  c->dictionary_page_offset = -1;
  ZTRY(thrift_enter(r, &st));
  FIELDS(r, &st, id, type, rc) {
    if (id == 1 && type == THRIFT_BINARY) {
      const uint8_t *p;
      size_t n;
      rc = thrift_binary(r, type, &p, &n);
      c->external = 1;
    } else if (id == 3) {
      rc = type == THRIFT_STRUCT
               ? read_colmeta(r, c)
               : thrift_fail(r, "ColumnChunk.meta_data is not a struct");
      have_meta = 1;
    } else {
      rc = thrift_skip(r, type);
    }
    if (rc < 0)
      return rc;
  }
  ZTRY(thrift_leave_rc(r, rc));
  if (!have_meta)
    return thrift_fail(r, "ColumnChunk without meta_data (encrypted?)");
  return 0;
}

/* A RowGroup; its columns are allocated here (owned by the group). */
static int read_rowgroup(struct thrift_r *r, struct pq_footer *f,
                         struct pq_row_group *g) {
  struct thrift_st st;
  int rc, have_cols = 0, have_rows = 0;
  ZTRY(thrift_enter(r, &st));
  FIELDS(r, &st, id, type, rc) {
    if (id == 1 && !have_cols) {
      int et;
      uint32_t n;
      rc = thrift_list(r, type, &et, &n);
      if (rc == 0 && et != THRIFT_STRUCT)
        rc = thrift_fail(r, "RowGroup.columns is not a list of structs");
      if (rc == 0 && n > PQMETA_MAX_CHUNKS - f->nchunks)
        rc = thrift_fail(r, "more than %u column chunks", PQMETA_MAX_CHUNKS);
      if (rc == 0 && n && !(g->cols = calloc(n, sizeof *g->cols)))
        return zerr_set(r->err, ENOMEM, "out of memory");
      for (uint32_t i = 0; i < n && rc == 0; i++) {
        rc = read_colchunk(r, &g->cols[i]);
        g->ncols = i + 1;
      }
      f->nchunks += n;
      have_cols = 1;
    } else if (id == 3) {
      rc = nonneg64(r, type, "RowGroup.num_rows", &g->num_rows);
      have_rows = 1;
    } else {
      rc = thrift_skip(r, type);
    }
    if (rc < 0)
      return rc;
  }
  ZTRY(thrift_leave_rc(r, rc));
  if (!have_cols || !have_rows)
    return thrift_fail(r, "RowGroup lacks columns or num_rows");
  return 0;
}

/* The header of a list of lo..hi structs named name, given once (given:
 * what an earlier one filled, else NULL). */
static int struct_list(struct thrift_r *r, int type, const char *name,
                       uint32_t lo, uint32_t hi, const void *given,
                       uint32_t *n) {
  int et;
  ZTRY(thrift_list(r, type, &et, n));
  if (et != THRIFT_STRUCT)
    return thrift_fail(r, "%s is not a list of structs", name);
  if (*n < lo || *n > hi)
    return thrift_fail(r, "%s of %u elements (%u to %u)", name, *n, lo, hi);
  if (given)
    return thrift_fail(r, "%s given twice", name);
  return 0;
}

/* FileMetaData.schema. */
static int read_schema(struct thrift_r *r, int type, struct pq_footer *f) {
  uint32_t n;
  ZTRY(struct_list(r, type, "schema", 1, PQMETA_MAX_SCHEMA, f->schema, &n));
  if (!(f->schema = calloc(n, sizeof *f->schema)))
    return zerr_set(r->err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    ZTRY(read_schema_el(r, &f->schema[i]));
    f->nschema = i + 1;
  }
  return 0;
}

/* FileMetaData.row_groups. */
static int read_rowgroups(struct thrift_r *r, int type, struct pq_footer *f) {
  uint32_t n;
  ZTRY(
      struct_list(r, type, "row_groups", 0, PQMETA_MAX_ROW_GROUPS, f->rgs, &n));
  if (n && !(f->rgs = calloc(n, sizeof *f->rgs)))
    return zerr_set(r->err, ENOMEM, "out of memory");
  for (uint32_t i = 0; i < n; i++) {
    f->nrg = i + 1;
    ZTRY(read_rowgroup(r, f, &f->rgs[i]));
  }
  return 0;
}

/* The FileMetaData struct. */
static int read_footer(struct thrift_r *r, struct pq_footer *f) {
  struct thrift_st st;
  int rc, have_rows = 0, have_rgs = 0;
  ZTRY(thrift_enter(r, &st));
  FIELDS(r, &st, id, type, rc) {
    switch (id) {
    case 1:
      rc = thrift_i32(r, type, &f->version);
      break;
    case 2:
      rc = read_schema(r, type, f);
      break;
    case 3:
      rc = nonneg64(r, type, "num_rows", &f->num_rows);
      have_rows = 1;
      break;
    case 4:
      rc = read_rowgroups(r, type, f);
      have_rgs = 1;
      break;
    default:
      rc = thrift_skip(r, type);
    }
    if (rc < 0)
      return rc;
  }
  ZTRY(thrift_leave_rc(r, rc));
  if (!f->schema || !have_rows || !have_rgs)
    return thrift_fail(r, "FileMetaData lacks schema, num_rows or row_groups");
  return 0;
}

int pqmeta_footer(const uint8_t *data, size_t len, struct pq_footer **out,
                  struct zerr *err) {
  struct pq_footer *f = calloc(1, sizeof *f);
  if (!f)
    return zerr_set(err, ENOMEM, "out of memory");
  struct thrift_r r;
  thrift_init(&r, data, len, "footer", err);
  int rc = read_footer(&r, f);
  if (rc < 0) {
    pqmeta_footer_free(f);
    return rc;
  }
  *out = f;
  return 0;
}

void pqmeta_footer_free(struct pq_footer *f) {
  if (!f)
    return;
  for (uint32_t i = 0; i < f->nrg; i++)
    free(f->rgs[i].cols);
  free(f->rgs);
  free(f->schema);
  free(f);
}

/* A field of a page header's sub-struct: id, how it is read ('n' an i32
 * that must not be negative, 'i' any i32, 'b' a bool), where it goes in
 * struct pq_page, and whether it is required. */
struct pg_field {
  int16_t id;
  char kind;
  size_t off;
  int required;
};

#define PGF(id, kind, member, req)                                             \
  { id, kind, offsetof(struct pq_page, member), req }

/* DataPageHeader (v1), DictionaryPageHeader and DataPageHeaderV2. */
static const struct pg_field dph_fields[] = {PGF(1, 'n', num_values, 1),
                                             PGF(2, 'i', encoding, 1),
                                             PGF(3, 'i', def_encoding, 1)};
static const struct pg_field dict_fields[] = {PGF(1, 'n', num_values, 1),
                                              PGF(2, 'i', encoding, 1)};
static const struct pg_field dph2_fields[] = {
    PGF(1, 'n', num_values, 1),   PGF(2, 'n', num_nulls, 1),
    PGF(3, 'n', num_rows, 1),     PGF(4, 'i', encoding, 1),
    PGF(5, 'n', def_len, 1),      PGF(6, 'n', rep_len, 1),
    PGF(7, 'b', is_compressed, 0)};

/* A page header's sub-struct named what, by its table of fields. */
static int read_pg_struct(struct thrift_r *r, struct pq_page *pg,
                          const struct pg_field *fs, size_t nf,
                          const char *what) {
  struct thrift_st st;
  int rc;
  unsigned seen = 0, want = 0;
  for (size_t i = 0; i < nf; i++)
    want |= fs[i].required ? 1u << i : 0;
  ZTRY(thrift_enter(r, &st));
  FIELDS(r, &st, id, type, rc) {
    size_t i = 0;
    while (i < nf && fs[i].id != id)
      i++;
    if (i == nf) {
      rc = thrift_skip(r, type);
    } else {
      int32_t *v = (int32_t *)((char *)pg + fs[i].off);
      int b;
      rc = fs[i].kind == 'n'   ? nonneg32(r, type, what, v)
           : fs[i].kind == 'i' ? thrift_i32(r, type, v)
                               : thrift_bool(r, type, 0, &b);
      if (fs[i].kind == 'b' && rc == 0)
        *(int *)((char *)pg + fs[i].off) = b;
      seen |= 1u << i;
    }
    if (rc < 0)
      return rc;
  }
  ZTRY(thrift_leave_rc(r, rc));
  if ((seen & want) != want)
    return thrift_fail(r, "%s lacks a required field", what);
  return rc;
}

int pqmeta_page(const uint8_t *data, size_t len, struct pq_page *pg,
                struct zerr *err) {
  struct thrift_r r;
  struct thrift_st st;
  int rc, seen = 0, sub = 0;
  memset(pg, 0, sizeof *pg);
  pg->is_compressed = 1;
  pg->type = -1;
  thrift_init(&r, data, len, "page header", err);
  ZTRY(thrift_enter(&r, &st));
  FIELDS(&r, &st, id, type, rc) {
    switch (id) {
    case 1:
      rc = thrift_i32(&r, type, &pg->type), seen |= 1;
      break;
    case 2:
      rc = nonneg32(&r, type, "uncompressed_page_size", &pg->uncompressed_size);
      seen |= 2;
      break;
    case 3:
      rc = nonneg32(&r, type, "compressed_page_size", &pg->compressed_size);
      seen |= 4;
      break;
    case 5:
    case 7:
    case 8:
      if (type != THRIFT_STRUCT) {
        rc = thrift_fail(&r, "page header field %d is not a struct", id);
      } else if (sub) {
        rc = thrift_fail(&r, "page header with two kinds of page");
      } else {
        sub = id;
        rc =
            id == 5 ? read_pg_struct(&r, pg, dph_fields, 3, "DataPageHeader")
            : id == 7
                ? read_pg_struct(&r, pg, dict_fields, 2, "DictionaryPageHeader")
                : read_pg_struct(&r, pg, dph2_fields, 7, "DataPageHeaderV2");
      }
      break;
    default:
      rc = thrift_skip(&r, type);
    }
    if (rc < 0)
      return rc;
  }
  if (rc < 0)
    return rc;
  if (seen != 7)
    return thrift_fail(&r, "PageHeader lacks type or sizes");
  int want = pg->type == PQ_DATA_PAGE         ? 5
             : pg->type == PQ_DICTIONARY_PAGE ? 7
             : pg->type == PQ_DATA_PAGE_V2    ? 8
                                              : 0;
  if (want && sub != want)
    return thrift_fail(&r, "page of type %ld without its header",
                       (long)pg->type);
  pg->header_len = thrift_pos(&r);
  return 0;
}

/* A name from a table, or "#N". */
static const char *name_of(const char *const *names, int n, int v,
                           char buf[16]) {
  if (v >= 0 && v < n && names[v])
    return names[v];
  snprintf(buf, 16, "#%d", v);
  return buf;
}

const char *pqmeta_codec_name(int codec, char buf[16]) {
  static const char *const n[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
                                  "BROTLI",       "LZ4",    "ZSTD", "LZ4_RAW"};
  return name_of(n, 8, codec, buf);
}

const char *pqmeta_encoding_name(int enc, char buf[16]) {
  static const char *const n[] = {"PLAIN",
                                  NULL,
                                  "PLAIN_DICTIONARY",
                                  "RLE",
                                  "BIT_PACKED",
                                  "DELTA_BINARY_PACKED",
                                  "DELTA_LENGTH_BYTE_ARRAY",
                                  "DELTA_BYTE_ARRAY",
                                  "RLE_DICTIONARY",
                                  "BYTE_STREAM_SPLIT"};
  return name_of(n, 10, enc, buf);
}

const char *pqmeta_type_name(int type, char buf[16]) {
  static const char *const n[] = {
      "BOOLEAN", "INT32",  "INT64",      "INT96",
      "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return name_of(n, 8, type, buf);
}
