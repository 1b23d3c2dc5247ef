/* xlist.h - the XML listing pages of object stores, one parser for two
 * dialects: S3's ListObjectsV2 (also Cloud Storage's XML API) and Azure
 * Blob Storage's List Blobs, behind s3_list_parse and azure_list_parse
 * (s3.h includes this header for the callbacks).
 *
 * A page is parsed whole, then its entries are delivered in its order
 * through struct s3_list_cbs (below): objects with their size, common
 * prefixes, and keys that cannot be decoded. Keys come url-encoded when
 * the page says so (S3: <EncodingType>url</EncodingType>, for the whole
 * page; Azure: <Name Encoded="true">, per name) and are decoded here. An
 * <Error> document or malformed XML is -EIO with the reason. */
#ifndef ZARRFS_XLIST_H
#define ZARRFS_XLIST_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"

/* What a listing page delivers (named for S3, whose listing came first;
 * Azure's delivers the same). key is decoded (the request asks for
 * encoding-type=url; a server that does not apply it sends keys as they
 * are), raw is the key as it came, printable for messages when encoded;
 * both borrowed for the call. A non-zero return stops the page and is
 * returned. skip (may be NULL) gets keys that cannot be decoded (a NUL
 * byte, a bad escape). */
struct s3_list_cbs {
  int (*obj)(void *ud, const char *key, const char *raw, uint64_t size);
  int (*prefix)(void *ud, const char *prefix, const char *raw);
  int (*skip)(void *ud, const char *raw, const char *why);
};

enum xlist_dialect {
  XLIST_S3,    /* ListBucketResult: Contents/Key, Contents/Size,
                  CommonPrefixes/Prefix, IsTruncated,
                  NextContinuationToken */
  XLIST_AZURE, /* EnumerationResults: Blobs/Blob/Name,
                  Blobs/Blob/Properties/Content-Length,
                  Blobs/BlobPrefix/Name, NextMarker (empty at the end) */
};

/* Parse one page of dialect d. *truncated: more pages follow; *next
 * (malloc'd or NULL): the continuation token or marker. what names the
 * listing in messages ("S3 listing"). */
int xlist_parse(enum xlist_dialect d, const char *what, const char *xml,
                size_t len, const struct s3_list_cbs *cb, void *ud,
                int *truncated, char **next, struct zerr *err);

#endif
