/* pqmeta.h - Parquet's footer (FileMetaData) and page headers, read from
 * the Thrift compact protocol (thrift.h) into plain structs.
 *
 * Only what a reader of flat tables needs is kept: the schema (each
 * element's type, repetition, name and number of children), the row
 * groups with their column chunks' metadata (type, codec, path, value
 * count, byte offsets and sizes), and the page headers. Everything else is
 * skipped. Every count is bounded (PQMETA_MAX_*) before anything is
 * allocated, so the memory a footer costs is bounded by the limits, not by
 * what it claims. Names are borrowed views of the footer bytes, which must
 * outlive the result. Pure: no locks. */
#ifndef ZARRFS_PQMETA_H
#define ZARRFS_PQMETA_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* Limits on what one footer may describe. */
#define PQMETA_MAX_SCHEMA 4096       /* schema elements */
#define PQMETA_MAX_ROW_GROUPS 65536  /* row groups */
#define PQMETA_MAX_CHUNKS (1u << 18) /* column chunks over all row groups */
#define PQMETA_MAX_PATH 64           /* elements of a path_in_schema */

/* Physical types (parquet.thrift Type). */
enum pq_ptype {
  PQ_BOOLEAN = 0,
  PQ_INT32 = 1,
  PQ_INT64 = 2,
  PQ_INT96 = 3,
  PQ_FLOAT = 4,
  PQ_DOUBLE = 5,
  PQ_BYTE_ARRAY = 6,
  PQ_FIXED_LEN_BYTE_ARRAY = 7,
};

/* Repetition (FieldRepetitionType). */
enum pq_rep { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 };

/* Codecs (CompressionCodec). */
enum pq_codec {
  PQ_UNCOMPRESSED = 0,
  PQ_SNAPPY = 1,
  PQ_GZIP = 2,
  PQ_LZO = 3,
  PQ_BROTLI = 4,
  PQ_LZ4 = 5,
  PQ_ZSTD = 6,
  PQ_LZ4_RAW = 7,
};

/* Encodings (Encoding). */
enum pq_encoding {
  PQ_PLAIN = 0,
  PQ_PLAIN_DICTIONARY = 2,
  PQ_RLE = 3,
  PQ_BIT_PACKED = 4,
  PQ_DELTA_BINARY_PACKED = 5,
  PQ_DELTA_LENGTH_BYTE_ARRAY = 6,
  PQ_DELTA_BYTE_ARRAY = 7,
  PQ_RLE_DICTIONARY = 8,
  PQ_BYTE_STREAM_SPLIT = 9,
};

/* Page types (PageType). */
enum pq_page_type {
  PQ_DATA_PAGE = 0,
  PQ_INDEX_PAGE = 1,
  PQ_DICTIONARY_PAGE = 2,
  PQ_DATA_PAGE_V2 = 3,
};

/* A borrowed string of the footer. */
struct pq_str {
  const uint8_t *p;
  size_t len;
};

/* A SchemaElement. */
struct pq_schema_el {
  int32_t type;         /* enum pq_ptype, -1 for a group */
  int32_t repetition;   /* enum pq_rep, -1 when absent (the root) */
  int32_t num_children; /* 0 for a leaf */
  struct pq_str name;
};

/* A ColumnChunk's ColumnMetaData. */
struct pq_chunk {
  int32_t type;        /* enum pq_ptype */
  int32_t codec;       /* enum pq_codec */
  uint32_t npath;      /* elements of path_in_schema */
  struct pq_str path0; /* its first element (flat tables: the name) */
  int64_t num_values;
  int64_t total_compressed_size;
  int64_t data_page_offset;
  int64_t dictionary_page_offset; /* -1 when absent */
  int external;                   /* 1: file_path names another file */
};

/* A RowGroup. */
struct pq_row_group {
  int64_t num_rows;
  uint32_t ncols;
  struct pq_chunk *cols; /* owned */
};

/* A FileMetaData. */
struct pq_footer {
  int32_t version;
  int64_t num_rows;
  uint32_t nschema;
  struct pq_schema_el *schema; /* owned */
  uint32_t nrg;
  struct pq_row_group *rgs; /* owned */
  uint32_t nchunks;         /* column chunks over all row groups */
};

/* Parse a FileMetaData of len bytes. *out is owned by the caller
 * (pqmeta_footer_free); its names point into data. -EIO with the reason
 * (naming the field and byte) for a malformed or over-limit footer,
 * -ENOMEM. */
int pqmeta_footer(const uint8_t *data, size_t len, struct pq_footer **out,
                  struct zerr *err);
/* Free; NULL-safe. */
void pqmeta_footer_free(struct pq_footer *f);

/* A PageHeader with the parts a reader uses. */
struct pq_page {
  int32_t type;              /* enum pq_page_type */
  int32_t uncompressed_size; /* of the page body (v2: levels included) */
  int32_t compressed_size;
  int32_t num_values;   /* data pages and dictionary pages */
  int32_t encoding;     /* of the values */
  int32_t def_encoding; /* v1 data pages: definition levels' encoding */
  int32_t num_nulls;    /* v2 */
  int32_t num_rows;     /* v2 */
  int32_t def_len;      /* v2: bytes of definition levels */
  int32_t rep_len;      /* v2: bytes of repetition levels */
  int is_compressed;    /* v2 (default 1) */
  size_t header_len;    /* bytes of the header itself */
};

/* Parse the PageHeader at the start of [data, data+len): the header's own
 * length goes to out->header_len. Sizes and counts are checked to be
 * non-negative. -EIO with the reason. */
int pqmeta_page(const uint8_t *data, size_t len, struct pq_page *out,
                struct zerr *err);

/* Names for messages: "SNAPPY", "DELTA_BYTE_ARRAY", "INT96" ("#N" for an
 * unknown value; the buffer is used only then). */
const char *pqmeta_codec_name(int codec, char buf[16]);
const char *pqmeta_encoding_name(int enc, char buf[16]);
const char *pqmeta_type_name(int type, char buf[16]);

#endif
