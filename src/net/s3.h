/* s3.h - the S3 conventions of zarrfs: settings and credentials, object
 * and listing URLs, signing material for libcurl's SigV4, and the
 * ListObjectsV2 response. Transport-free: requests are made by
 * src/net/http.c, objects read by src/net/remote.c.
 *
 * Credentials: anonymous with no_sign_request; else AWS_ACCESS_KEY_ID +
 * AWS_SECRET_ACCESS_KEY (+ AWS_SESSION_TOKEN); else the profile
 * (options, AWS_PROFILE, "default") of the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, ~/.aws/credentials) and the config file
 * (AWS_CONFIG_FILE, ~/.aws/config); none anywhere: anonymous. Region:
 * option, AWS_REGION, AWS_DEFAULT_REGION, the profile's, "us-east-1".
 * Endpoint: option, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, the profile's
 * endpoint_url, else AWS's virtual-hosted
 * https://BUCKET.s3.REGION.amazonaws.com. A custom endpoint (MinIO, Ceph, R2,
 * s3rver) is addressed path-style.
 *
 * libcurl 7.88 signs the path and query exactly as given: keys are
 * percent-encoded here (unreserved characters and '/' kept, uppercase
 * hex), list queries are sorted by name (encoding-type=url among them). Secrets
 * never appear in a message. A config is immutable after load and shared by
 * threads. */
#ifndef ZARRFS_S3_H
#define ZARRFS_S3_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "xlist.h"

struct curl_slist;

struct s3_options { /* from the command line; all may be NULL/0 */
  const char *region, *endpoint, *profile;
  int no_sign_request, requester_pays;
};

struct s3_config;

/* Load the settings (see above). *out is owned by the caller
 * (s3_config_free). A malformed endpoint is -EINVAL. */
int s3_config_load(const struct s3_options *o, struct s3_config **out,
                   struct zerr *err);
/* Cloud Storage's default endpoint (its XML API). */
#define S3_GCS_ENDPOINT "https://storage.googleapis.com"
/* The settings of Cloud Storage (gs:// URLs) through its S3-compatible XML
 * API: HMAC keys from GS_ACCESS_KEY_ID + GS_SECRET_ACCESS_KEY (GDAL's
 * names; none, or no_sign_request: anonymous), signed with SigV4 in region
 * "auto"; the endpoint o->endpoint, else CPL_GS_ENDPOINT, else
 * S3_GCS_ENDPOINT, addressed path-style (ENDPOINT/BUCKET/KEY). region,
 * profile and requester_pays are not used. *out owned by the caller. */
int s3_config_load_gcs(const struct s3_options *o, struct s3_config **out,
                       struct zerr *err);
/* The settings of a virtual chunk container: a copy of base with its own
 * endpoint and region (NULL: base's), unsigned when anonymous. An
 * endpoint or a region the user gave as an option wins over the
 * container's. *out owned by the caller. A malformed endpoint is
 * -EINVAL. */
int s3_config_derive(const struct s3_config *base, const char *endpoint,
                     const char *region, int anonymous, struct s3_config **out,
                     struct zerr *err);
/* Free, wiping the secrets; NULL-safe. */
void s3_config_free(struct s3_config *c);
/* Are requests sent unsigned (no credentials found, or no_sign_request)? */
int s3_is_anonymous(const struct s3_config *c);
/* The endpoint the user configured (option, environment or profile; no
 * trailing '/'), or NULL for AWS; borrowed. *option: 1 when it was given
 * as -o endpoint (it then wins over every container's). */
const char *s3_endpoint(const struct s3_config *c, int *option);

/* "s3://bucket/some/prefix" (or "gs://...") -> bucket, key ("" allowed);
 * malloc'd. */
int s3_parse_url(const char *url, char **bucket, char **key, struct zerr *err);
/* The same for any URL of a five-character scheme ("az://container/blob"):
 * its first segment (noun names it in the refusal of an empty one) and
 * the rest; malloc'd. */
int s3_split_url(const char *url, const char *noun, char **bucket, char **key,
                 struct zerr *err);
/* The request URL of an object (malloc'd). */
int s3_object_url(const struct s3_config *c, const char *bucket,
                  const char *key, char **url, struct zerr *err);
/* A ListObjectsV2 request URL, query sorted (token and delimiter may be
 * NULL). */
int s3_list_url(const struct s3_config *c, const char *bucket,
                const char *prefix, const char *delimiter, const char *token,
                int max_keys, char **url, struct zerr *err);

/* Append the percent-encoding of s to o (unreserved characters kept, and
 * '/' when keep_slash; uppercase hex; NUL-terminated; room checked by the
 * caller: 3 bytes per input byte); returns the end. */
char *s3_pct_encode(char *o, const char *s, int keep_slash);
/* Append name_eq ("marker=", "&prefix=") and the percent-encoding of value
 * to o (room checked by the caller); returns the end. */
char *s3_query_add(char *o, const char *name_eq, const char *value);

/* What every request carries: headers (x-amz-content-sha256 when signing,
 * x-amz-security-token, x-amz-request-payer), CURLOPT_AWS_SIGV4 and
 * CURLOPT_USERPWD values (NULL when anonymous). */
struct s3_signing {
  struct curl_slist *headers;
  char *sigv4;
  char *userpwd;
};
int s3_signing_new(const struct s3_config *c, struct s3_signing *out,
                   struct zerr *err);
void s3_signing_free(struct s3_signing *s);

/* A ListObjectsV2 response (expat): obj per <Contents> (Key, Size), prefix
 * per <CommonPrefixes>, in the page's order. *truncated from
 * <IsTruncated>, *next_token (malloc'd or NULL) from
 * <NextContinuationToken>. An <Error> document or malformed XML is -EIO
 * with the reason. */
int s3_list_parse(const char *xml, size_t len, const struct s3_list_cbs *cb,
                  void *ud, int *truncated, char **next_token,
                  struct zerr *err);

#endif
