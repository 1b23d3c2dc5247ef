/* azure.h - the Azure Blob Storage conventions of zarrfs: settings and
 * credentials, object and listing URLs, Shared Key signing, and the List
 * Blobs response. Transport-free: requests are made by src/net/http.c
 * (which calls the signer before each attempt), objects read by
 * src/net/remote.c.
 *
 * Names: az://CONTAINER/BLOB, or https://ACCOUNT.blob.core.windows.net/
 * CONTAINER/BLOB. Settings, named as the Azure CLI, adlfs and GDAL name
 * them (first found):
 *  - AZURE_STORAGE_CONNECTION_STRING ("AccountName=...;AccountKey=...;
 *    BlobEndpoint=...;SharedAccessSignature=...;DefaultEndpointsProtocol=
 *    ...;EndpointSuffix=...", or "UseDevelopmentStorage=true": Azurite's
 *    documented account on 127.0.0.1:10000);
 *  - the account AZURE_STORAGE_ACCOUNT, its key AZURE_STORAGE_KEY, a SAS
 *    token AZURE_STORAGE_SAS_TOKEN;
 *  - the endpoint: the option (-o endpoint=URL; path-style, as Azurite's
 *    http://127.0.0.1:10000/devstoreaccount1), the connection string's
 *    BlobEndpoint, else https://ACCOUNT.blob.core.windows.net.
 * Access: Shared Key when a key is known (every request signed), else the
 * SAS token appended to every URL, else anonymous (public containers).
 *
 * Credentials go only to the configured endpoint: a
 * https://ACCOUNT.blob.core.windows.net URL is signed only when it names
 * that endpoint; any other such URL is read as plain anonymous HTTPS.
 * Keys and SAS tokens never appear in a message. A config is immutable
 * after load and shared by threads. */
#ifndef ZARRFS_AZURE_H
#define ZARRFS_AZURE_H

#include <stddef.h>
#include <stdint.h>

#include "../util/err.h"
#include "http.h"
#include "s3.h"

/* The REST API version every request names (x-ms-version). */
#define AZURE_API_VERSION "2021-08-06"

struct azure_options {  /* all may be NULL/0 */
  const char *endpoint; /* -o endpoint= */
  const char *account;  /* the account a https://ACCOUNT.blob.core.windows.net
                           SOURCE names: when the environment configures
                           another, its credentials are not used */
  const char *sas;      /* a SAS token the SOURCE URL carries (its query) */
  int anonymous;        /* -o no_sign_request: no credentials at all */
};

struct azure_config;

/* Load the settings (see above). *out is owned by the caller
 * (azure_config_free). A malformed connection string, key or endpoint is
 * -EINVAL naming the variable (never its value). */
int azure_config_load(const struct azure_options *o, struct azure_config **out,
                      struct zerr *err);
/* Free, wiping the secrets; NULL-safe. */
void azure_config_free(struct azure_config *c);
/* Are requests neither signed nor carrying a SAS token? */
int azure_is_anonymous(const struct azure_config *c);
/* The storage account ("" when none is known). */
const char *azure_account(const struct azure_config *c);

/* "az://container/some/blob" -> container, blob ("" allowed); malloc'd. */
int azure_parse_url(const char *url, char **container, char **blob,
                    struct zerr *err);
/* The account of a https://ACCOUNT.blob.core.windows.net/... URL into
 * acct (n bytes), with the rest ("CONTAINER/BLOB...", no query) in
 * *rest; 1 when url is one, else 0. */
int azure_url_account(const char *url, char *acct, size_t n, const char **rest);
/* If url is https://ACCOUNT.blob.core.windows.net/C/B and that is c's
 * endpoint, the az://C/B URL it names (malloc'd) in *az: 1; else 0. */
int azure_url_to_az(const struct azure_config *c, const char *url, char **az);

/* The request URL of a blob (endpoint/container/blob, the SAS appended);
 * malloc'd. */
int azure_object_url(const struct azure_config *c, const char *container,
                     const char *blob, char **url, struct zerr *err);
/* A List Blobs request URL (delimiter and marker may be NULL). */
int azure_list_url(const struct azure_config *c, const char *container,
                   const char *prefix, const char *delimiter,
                   const char *marker, int max_results, char **url,
                   struct zerr *err);
/* The headers of every request (x-ms-version), and the per-attempt
 * signer (NULL unless Shared Key): both borrowed from c. */
struct curl_slist *azure_headers(const struct azure_config *c);
const struct http_signer *azure_signer(const struct azure_config *c);

/* ---- Shared Key, exposed for the tests ---- */

/* The string to sign of a GET of url (its path and query as sent) by
 * account, with the request's Range value (or NULL), precondition line
 * (or NULL), x-ms-date and x-ms-version. malloc'd into *out. */
int azure_string_to_sign(const char *account, const char *url,
                         const char *range, const char *cond, const char *date,
                         const char *version, char **out, struct zerr *err);
/* base64(HMAC-SHA256(key, msg)) into out (45 bytes with the NUL). */
int azure_hmac_b64(const uint8_t *key, size_t klen, const char *msg,
                   char out[45]);

/* A List Blobs response: obj per Blob (Name, Properties/Content-Length),
 * prefix per BlobPrefix, names decoded when Encoded="true"; *next_marker
 * (malloc'd, NULL at the end) from NextMarker. An <Error> document or
 * malformed XML is -EIO with the reason. */
int azure_list_parse(const char *xml, size_t len, const struct s3_list_cbs *cb,
                     void *ud, char **next_marker, struct zerr *err);

#endif
