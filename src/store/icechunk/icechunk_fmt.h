/* icechunk_fmt.h - Icechunk's on-disk format, read-only: the 39-byte
 * header of every metadata file, its bounded zstd payload, and parsers
 * over the verified flatbuffers reader (src/json/flatbuf.h) for the repo
 * info file (spec 2), the refs of spec 1 (`refs/branch.NAME/ref.json`,
 * `refs/tag.NAME/ref.json`, `ref.json.deleted` tombstones, `config.yaml`),
 * snapshots and manifests.
 *
 * Every file is checked before it is trusted: the header against the file
 * type expected, the decompressed size against max_decode, every
 * flatbuffer field through checked accessors, and the invariants a reader
 * relies on (node paths canonical, manifests sorted by node id and chunk
 * coordinates, one kind per chunk reference, extents one per dimension).
 * Failures are -EIO with a reason; the loaders that read files through a
 * store prefix it with the file's key. Parsed values are immutable and
 * may be shared by threads. */
#ifndef ZARRFS_ICECHUNK_FMT_H
#define ZARRFS_ICECHUNK_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "../../util/err.h"

struct store;

#define ICEFMT_HEADER_LEN 39
/* The well-known id of every repository's first snapshot. */
#define ICEFMT_FIRST_SNAPSHOT "1CECHNKREP0F1RSTCMT0"
/* Characters of a 12-byte id (Crockford base 32, no padding), of an
 * 8-byte node id. */
#define ICEFMT_ID_CHARS 20
#define ICEFMT_NODE_ID_CHARS 13
/* Longest virtual chunk URL and checksum ETag accepted. */
#define ICEFMT_URL_MAX 4096
#define ICEFMT_ETAG_MAX 256

enum icefmt_type {
  ICEFMT_SNAPSHOT = 1,
  ICEFMT_MANIFEST = 2,
  ICEFMT_TXLOG = 4,
  ICEFMT_REPO = 6,
};

struct icefmt_header {
  char writer[25];     /* implementation name, trailing spaces removed */
  uint8_t spec;        /* 1 or 2 */
  uint8_t type;        /* enum icefmt_type */
  uint8_t compression; /* 0 none, 1 zstd */
};

/* Check the header of p[0..len) against the file type want: magic, spec
 * version 1 or 2, type, compression 0 or 1. */
int icefmt_header(const uint8_t *p, size_t len, enum icefmt_type want,
                  struct icefmt_header *h, struct zerr *err);
/* Header check, then the payload decompressed (at most max_decode bytes,
 * else -EFBIG): *out is malloc'd (caller frees), *out_len its length. h
 * may be NULL. */
int icefmt_decode(const uint8_t *p, size_t len, enum icefmt_type want,
                  size_t max_decode, uint8_t **out, size_t *out_len,
                  struct icefmt_header *h, struct zerr *err);

/* Crockford base 32 of n id bytes into out (room for (8n + 4) / 5 + 1
 * characters), upper case, no padding. */
void icefmt_id_encode(const uint8_t *id, size_t n, char *out);
/* The 12 bytes of a 20-character id (case-insensitive, Crockford's
 * aliases O = 0, I and L = 1). -EINVAL when it is not one. */
int icefmt_id_decode(const char *s, uint8_t id[12]);

/* A commit time (microseconds since the epoch) as ISO 8601 UTC,
 * "2025-02-19T21:11:56.017780Z", into out (at least 32 bytes). */
void icefmt_time_iso(uint64_t us, char *out);
/* Longest commit message a history line shows (bytes): a longer one is
 * cut at a UTF-8 character boundary below it and ends with "...". */
#define ICEFMT_LOG_MESSAGE_MAX 65536
/* One line of a ref's history, "ID<TAB>TIME<TAB>MESSAGE\n" (TIME as
 * icefmt_time_iso; newlines, tabs and other control characters of the
 * message shown as spaces, the message cut at ICEFMT_LOG_MESSAGE_MAX),
 * into a malloc'd string (caller frees); NULL without memory. */
char *icefmt_log_line(const uint8_t id[12], uint64_t flushed_at,
                      const char *message);

/* A set of 12-byte ids: what a walk of a history met (loops, ancestries
 * already given). Zeroed is empty; the walk that owns it frees it
 * (icefmt_idset_free). Hashed with a seed of its own, so ids a repository
 * chose cannot pile up in one place. Not shared between threads. */
struct icefmt_idset {
  uint8_t (*ids)[12]; /* in the order added */
  size_t n, idcap;
  uint32_t *slots; /* open addressing: 1 + an index into ids, 0 empty */
  size_t nslots;   /* a power of two, or 0 */
  uint64_t seed;
};
/* Add id: 1 when it is new, 0 when it was there, -ENOMEM. */
int icefmt_idset_add(struct icefmt_idset *s, const uint8_t id[12]);
/* Free what s holds and empty it; NULL-safe. */
void icefmt_idset_free(struct icefmt_idset *s);

/* ---- repo info (spec 2) and refs (spec 1) ---- */

/* One snapshot as the repo info file lists it (spec 2). */
struct icefmt_snapinfo {
  uint8_t id[12];
  int64_t parent;      /* index into the list, -1 for none */
  uint64_t flushed_at; /* microseconds since the epoch, UTC */
  char *message;       /* NUL-free bytes of the commit message */
};

/* A branch or a tag. */
struct icefmt_ref {
  char *name;
  uint8_t snap[12];
};

/* What a virtual chunk container's store is. */
enum icefmt_vkind {
  ICEFMT_VK_OTHER = 0, /* a store zarrfs does not read (gcs, azure, ...) */
  ICEFMT_VK_S3,        /* s3, s3_compatible, tigris, r2: the S3 API */
  ICEFMT_VK_HTTP,      /* http */
  ICEFMT_VK_LOCAL,     /* local_file_system */
};

/* The store settings of a virtual chunk container. */
struct icefmt_vstore {
  enum icefmt_vkind kind;
  char *endpoint; /* endpoint_url (http:// or https://), NULL when unset */
  char *region;   /* NULL when unset */
  int anonymous, force_path_style, allow_http; /* 0 or 1 */
  const char *unusable; /* why no chunk may be read through it (a static
                           string), or NULL */
};

/* Longest container endpoint and region accepted. */
#define ICEFMT_ENDPOINT_MAX 512
#define ICEFMT_REGION_MAX 64

/* A repository's refs. Owned by whoever loaded it (icefmt_repo_free). */
struct icefmt_repo {
  int spec;                    /* 1 or 2 */
  struct icefmt_ref *branches; /* sorted by name */
  size_t nbranches;
  struct icefmt_ref *tags; /* sorted by name; deleted tags left out */
  size_t ntags;
  char **deleted_tags; /* sorted */
  size_t ndeleted;
  struct icefmt_snapinfo *snaps; /* spec 2: every snapshot; spec 1: none */
  size_t nsnaps;
  int refs_listed;   /* spec 1: 0 when the store could not list refs/ (HTTP):
                        refs are then read one by one on demand */
  char **containers; /* url_prefix of each virtual chunk container */
  struct icefmt_vstore *stores; /* and its store, in the same order */
  size_t ncontainers;           /* (spec 1 config.yaml, spec 2 the repo file's
                                   configuration) */
  int containers_known;         /* 0: spec 1 without config.yaml (any prefix the
                                   user allows) */
  char **skipped;  /* why each ref left out was (one line each, the name
                      escaped): a name no file system can hold, a name
                      listed twice, a ref that cannot be read or names
                      no snapshot; at most ICEFMT_SKIPPED_MAX kept */
  size_t nskipped; /* refs left out (more than kept past the cap) */
};

/* Reasons kept in icefmt_repo.skipped. */
#define ICEFMT_SKIPPED_MAX 64

/* Parse a spec 2 repo info flatbuffer. *out owned by the caller. A ref
 * whose name no file system can hold (empty, ".", "..", a '/' or a NUL
 * inside), that names no snapshot of the list or whose name was listed
 * before is left out and noted in skipped. */
int icefmt_repo_parse(const uint8_t *fb, size_t len, struct icefmt_repo **out,
                      struct zerr *err);
/* Parse a spec 1 `ref.json` ({"snapshot": "ID"}). */
int icefmt_refjson_parse(const char *text, size_t len, uint8_t id[12],
                         struct zerr *err);
/* The virtual chunk containers of a spec 1 `config.yaml`, appended to r:
 * under `virtual_chunk_containers:`, each container's `url_prefix` and
 * `store: !KIND` with its `endpoint_url`, `region`, `anonymous`,
 * `force_path_style` and `allow_http` (block style, as Icechunk writes
 * it; anything else is skipped). */
int icefmt_config_yaml(const char *text, size_t len, struct icefmt_repo *r,
                       struct zerr *err);
/* The container of url: the one with the longest url_prefix that url
 * starts with (as Icechunk matches them), or -1. */
long icefmt_container_of(const struct icefmt_repo *r, const char *url);
/* Free r's containers and set none; NULL-safe. */
void icefmt_containers_free(struct icefmt_repo *r);
/* Load a repository's refs through store s: `repo` (spec 2) if present,
 * else `refs/` (spec 1; `refs/branch.main/ref.json` must exist). -ENOENT
 * when s holds neither. A ref that cannot be used (see
 * icefmt_repo_parse; spec 1 also a ref.json that cannot be read or
 * parsed, main's included) is left out and noted in skipped; a transient
 * failure to read one fails the load. *out owned by the caller. */
int icefmt_repo_load(struct store *s, size_t max_decode,
                     struct icefmt_repo **out, struct zerr *err);
/* The snapshot of branch (tag 0) or tag (tag 1) name: 0, -ENOENT when
 * there is none (a deleted tag is none). Spec 1 refs not listed at load
 * are read from s. */
int icefmt_repo_ref(const struct icefmt_repo *r, struct store *s,
                    const char *name, int tag, uint8_t id[12],
                    struct zerr *err);
/* Free; NULL-safe. */
void icefmt_repo_free(struct icefmt_repo *r);

/* ---- snapshots ---- */

/* One manifest of an array and the chunk coordinates it covers. */
struct icefmt_mref {
  uint8_t id[12];
  uint32_t *from, *to; /* ndim each: [from, to) per dimension */
};

/* A group or an array of a snapshot. */
struct icefmt_node {
  uint8_t id[8];
  char *path;      /* "/", "/group1/x": canonical, NUL-free */
  char *user_data; /* the node's zarr.json (NUL-terminated copy) */
  size_t user_len;
  int is_array;
  uint32_t ndim;   /* arrays */
  uint64_t *shape; /* arrays: length of each dimension */
  struct icefmt_mref *mrefs;
  size_t nmrefs;
};

struct icefmt_snapshot {
  uint8_t id[12];
  int has_parent; /* spec 1 records parents in snapshots; spec 2 in repo */
  uint8_t parent[12];
  uint64_t flushed_at;
  char *message;
  struct icefmt_node *nodes; /* sorted by path */
  size_t nnodes;
};

/* Parse a snapshot flatbuffer. *out owned by the caller. */
int icefmt_snapshot_parse(const uint8_t *fb, size_t len,
                          struct icefmt_snapshot **out, struct zerr *err);
/* Read and parse snapshots/ID through s. */
int icefmt_snapshot_load(struct store *s, const uint8_t id[12],
                         size_t max_decode, struct icefmt_snapshot **out,
                         struct zerr *err);
/* Free; NULL-safe. */
void icefmt_snapshot_free(struct icefmt_snapshot *sn);

/* ---- manifests ---- */

struct icefmt_manifest;

enum icefmt_chunk_kind {
  ICEFMT_NATIVE = 1,  /* chunks/chunk_id, [offset, offset + length) */
  ICEFMT_INLINE = 2,  /* data[0..length) inside the manifest */
  ICEFMT_VIRTUAL = 3, /* location, [offset, offset + length) */
};

/* A chunk reference as icefmt_manifest_find returns it. data borrows the
 * manifest (lives as long as it). */
struct icefmt_chunk {
  enum icefmt_chunk_kind kind;
  uint8_t chunk_id[12];
  uint64_t offset, length;
  const uint8_t *data;
  char location[ICEFMT_URL_MAX]; /* NUL-terminated */
  char etag[ICEFMT_ETAG_MAX];    /* "" when none */
  uint32_t last_modified;        /* 0 when none */
};

/* Parse and check a manifest flatbuffer; takes fb (malloc'd, freed with
 * the manifest, or at once on failure). *out owned by the caller. */
int icefmt_manifest_parse(uint8_t *fb, size_t len, struct icefmt_manifest **out,
                          struct zerr *err);
/* Read and parse manifests/ID through s. */
int icefmt_manifest_load(struct store *s, const uint8_t id[12],
                         size_t max_decode, struct icefmt_manifest **out,
                         struct zerr *err);
/* The reference of node's chunk at coord[0..ndim): 0, or -ENOENT when the
 * manifest has none. */
int icefmt_manifest_find(const struct icefmt_manifest *m, const uint8_t node[8],
                         const uint32_t *coord, uint32_t ndim,
                         struct icefmt_chunk *out, struct zerr *err);
/* Called for each chunk reference of a node, in coordinate order, with
 * its coordinates and its size in bytes; return non-zero to stop. */
typedef int (*icefmt_chunk_cb)(void *ud, const uint32_t *coord, uint32_t ndim,
                               uint64_t size);
/* Walk node's chunk references. */
int icefmt_manifest_each(const struct icefmt_manifest *m, const uint8_t node[8],
                         icefmt_chunk_cb cb, void *ud, struct zerr *err);
/* The arrays a manifest holds: their count, and the node id of array i
 * (i below the count; borrowed from the manifest). */
uint32_t icefmt_manifest_narrays(const struct icefmt_manifest *m);
const uint8_t *icefmt_manifest_node(const struct icefmt_manifest *m,
                                    uint32_t i);
/* Chunk references held, bytes of the flatbuffer. */
uint64_t icefmt_manifest_count(const struct icefmt_manifest *m);
size_t icefmt_manifest_bytes(const struct icefmt_manifest *m);
/* Free; NULL-safe. */
void icefmt_manifest_free(struct icefmt_manifest *m);

#endif
