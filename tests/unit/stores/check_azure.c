/* check_azure.c - Azure Blob Storage conventions (src/net/azure.c): the
 * Shared Key string to sign and signature against known vectors (HMAC
 * from RFC 4231; canonicalized resources from Microsoft's "Authorize with
 * Shared Key"; whole signatures computed by Python's hmac, independently
 * of this code), settings from the environment (connection strings,
 * account, key, SAS token, which account's credentials apply), URLs, and
 * the List Blobs parser (Azurite's and Azure's answers). Azurite itself
 * checks the signatures end to end in tests/integration/mount_azure.sh. */
#define _GNU_SOURCE
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../../src/net/azure.h"
#include "../testutil.h"

#define DEV_KEY                                                                \
  "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/" \
  "KBHBeksoGMGw=="
#define DATE "Mon, 01 Jan 2024 00:00:00 GMT"

/* No Azure setting of the machine's environment leaks into a test. */
static void env_clear(void) {
  unsetenv("AZURE_STORAGE_CONNECTION_STRING");
  unsetenv("AZURE_STORAGE_ACCOUNT");
  unsetenv("AZURE_STORAGE_KEY");
  unsetenv("AZURE_STORAGE_SAS_TOKEN");
}

START_TEST(test_hmac_rfc4231) {
  char out[45];
  /* RFC 4231 test cases 1 and 2, base64 of the HMAC-SHA256 given there. */
  uint8_t k1[20];
  memset(k1, 0x0b, sizeof k1);
  ck_assert_int_eq(azure_hmac_b64(k1, sizeof k1, "Hi There", out), 0);
  ck_assert_str_eq(out, "sDRMYdjbOFNcqK/OrwvxK4gdwgDJgz2nJuk3bC4yz/c=");
  ck_assert_int_eq(azure_hmac_b64((const uint8_t *)"Jefe", 4,
                                  "what do ya want for nothing?", out),
                   0);
  ck_assert_str_eq(out, "W9zBRr9gdU5qBCQmCJV1x1oAPwidJzmDnexYuWTsOEM=");
}
END_TEST

START_TEST(test_string_to_sign) {
  struct zerr e = {0};
  char *s = NULL;
  /* Microsoft's example of a canonicalized resource: the query's names
   * lower-cased and sorted, one "name:value" line each. */
  ck_assert_int_eq(
      azure_string_to_sign("myaccount",
                           "https://myaccount.blob.core.windows.net/"
                           "mycontainer?restype=container&comp=metadata&"
                           "timeout=20",
                           NULL, NULL, DATE, "2015-02-21", &s, &e),
      0);
  ck_assert_str_eq(s, "GET\n\n\n\n\n\n\n\n\n\n\n\nx-ms-date:" DATE
                      "\nx-ms-version:2015-02-21\n/myaccount/mycontainer\n"
                      "comp:metadata\nrestype:container\ntimeout:20");
  free(s);
  /* A ranged GET with a precondition, on Azurite's path-style endpoint:
   * the account twice in the resource. */
  ck_assert_int_eq(azure_string_to_sign(
                       "devstoreaccount1",
                       "http://127.0.0.1:10000/devstoreaccount1/mycontainer/"
                       "dir/a%20b.bin",
                       "bytes=0-65535", "If-Match: \"0x8D9\"", DATE,
                       AZURE_API_VERSION, &s, &e),
                   0);
  ck_assert_str_eq(s, "GET\n\n\n\n\n\n\n\n\"0x8D9\"\n\n\nbytes=0-65535\n"
                      "x-ms-date:" DATE "\nx-ms-version:2021-08-06\n"
                      "/devstoreaccount1/devstoreaccount1/mycontainer/dir/"
                      "a%20b.bin");
  char sig[45];
  uint8_t key[64];
  size_t kl = 0;
  {
    /* the key, decoded by hand of the base64 table (no shared code) */
    static const char tab[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    uint32_t acc = 0;
    int bits = 0;
    for (const char *p = DEV_KEY; *p && *p != '='; p++) {
      acc = acc << 6 | (uint32_t)(strchr(tab, *p) - tab);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        key[kl++] = (uint8_t)(acc >> bits);
      }
    }
  }
  ck_assert_uint_eq(kl, 64);
  ck_assert_int_eq(azure_hmac_b64(key, kl, s, sig), 0);
  ck_assert_str_eq(sig, "E76Gg7VQWPfBmCi6ACRUAJL78Ysne9DGN3eAwT0jt5E=");
  free(s);
  /* A List Blobs query: values decoded (%2F, %2B, %20). */
  ck_assert_int_eq(
      azure_string_to_sign("devstoreaccount1",
                           "http://127.0.0.1:10000/devstoreaccount1/c?comp="
                           "list&delimiter=%2F&marker=M%2B1&maxresults=1000&"
                           "prefix=a%20b%2F&restype=container",
                           NULL, NULL, DATE, AZURE_API_VERSION, &s, &e),
      0);
  ck_assert_int_eq(azure_hmac_b64(key, kl, s, sig), 0);
  ck_assert_str_eq(sig, "3KLDmHrgVMobGXqzX7VrGDtDkBwzs1xkAfrXmruymD8=");
  free(s);
  /* If-Unmodified-Since has its own line; parameters out of order are
   * sorted. */
  ck_assert_int_eq(azure_string_to_sign(
                       "a", "https://a.blob.core.windows.net/c/k?z=1&B=2", NULL,
                       "If-Unmodified-Since: " DATE, DATE, "v", &s, &e),
                   0);
  ck_assert_str_eq(s, "GET\n\n\n\n\n\n\n\n\n\n" DATE "\n\nx-ms-date:" DATE
                      "\nx-ms-version:v\n/a/c/k\nb:2\nz:1");
  free(s);
}
END_TEST

/* Load with o; the config (caller frees) or NULL with e filled. */
static struct azure_config *load(const struct azure_options *o,
                                 struct zerr *e) {
  struct azure_config *c = NULL;
  if (azure_config_load(o, &c, e) < 0)
    return NULL;
  return c;
}

START_TEST(test_settings) {
  env_clear();
  struct zerr e = {0};
  struct azure_options none = {0};
  char *u = NULL;
  /* Nothing configured: anonymous, no endpoint, az:// refused naming the
   * settings. */
  struct azure_config *c = load(&none, &e);
  ck_assert_ptr_nonnull(c);
  ck_assert(azure_is_anonymous(c));
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), -EINVAL);
  ck_assert_ptr_nonnull(strstr(e.msg, "AZURE_STORAGE_ACCOUNT"));
  azure_config_free(c);
  /* The account alone: its default endpoint, anonymous. */
  setenv("AZURE_STORAGE_ACCOUNT", "acct1", 1);
  c = load(&none, &e);
  ck_assert_int_eq(azure_object_url(c, "c", "a b/k+1", &u, &e), 0);
  ck_assert_str_eq(u, "https://acct1.blob.core.windows.net/c/a%20b/k%2B1");
  free(u);
  ck_assert(azure_is_anonymous(c));
  ck_assert_ptr_null(azure_signer(c));
  azure_config_free(c);
  /* A SAS token: appended to every URL (its '?' dropped). */
  setenv("AZURE_STORAGE_SAS_TOKEN", "?sv=2019-12-12&sig=abc%2B", 1);
  c = load(&none, &e);
  ck_assert(!azure_is_anonymous(c));
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), 0);
  ck_assert_str_eq(u, "https://acct1.blob.core.windows.net/c/k?sv=2019-12-"
                      "12&sig=abc%2B");
  free(u);
  ck_assert_int_eq(azure_list_url(c, "c", "p/", "/", NULL, 1000, &u, &e), 0);
  ck_assert_str_eq(u, "https://acct1.blob.core.windows.net/c?comp=list&"
                      "delimiter=%2F&maxresults=1000&prefix=p%2F&restype="
                      "container&sv=2019-12-12&sig=abc%2B");
  free(u);
  azure_config_free(c);
  /* A key wins over the SAS; -o no_sign_request drops both. */
  setenv("AZURE_STORAGE_KEY", DEV_KEY, 1);
  c = load(&none, &e);
  ck_assert_ptr_nonnull(azure_signer(c));
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), 0);
  ck_assert_str_eq(u, "https://acct1.blob.core.windows.net/c/k");
  free(u);
  azure_config_free(c);
  struct azure_options anon = {.anonymous = 1};
  c = load(&anon, &e);
  ck_assert(azure_is_anonymous(c));
  azure_config_free(c);
  /* A key that is not base64: refused, the value never shown. */
  setenv("AZURE_STORAGE_KEY", "not*base64!", 1);
  ck_assert_ptr_null(load(&none, &e));
  ck_assert_int_eq(e.code, EINVAL);
  ck_assert_ptr_null(strstr(e.msg, "not*base64"));
  env_clear();
}
END_TEST

START_TEST(test_connection_string) {
  env_clear();
  struct zerr e = {0};
  struct azure_options none = {0};
  char *u = NULL;
  setenv("AZURE_STORAGE_CONNECTION_STRING",
         "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
         "AccountKey=" DEV_KEY ";BlobEndpoint=http://127.0.0.1:10000/"
         "devstoreaccount1/;",
         1);
  setenv("AZURE_STORAGE_ACCOUNT", "other", 1); /* the string wins */
  struct azure_config *c = load(&none, &e);
  ck_assert_ptr_nonnull(c);
  ck_assert_str_eq(azure_account(c), "devstoreaccount1");
  ck_assert_ptr_nonnull(azure_signer(c));
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), 0);
  ck_assert_str_eq(u, "http://127.0.0.1:10000/devstoreaccount1/c/k");
  free(u);
  azure_config_free(c);
  /* The option wins over BlobEndpoint. */
  struct azure_options ep = {.endpoint = "http://127.0.0.1:9/devstoreaccount1"};
  c = load(&ep, &e);
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), 0);
  ck_assert_str_eq(u, "http://127.0.0.1:9/devstoreaccount1/c/k");
  free(u);
  azure_config_free(c);
  /* EndpointSuffix and the protocol make the endpoint; a SAS. */
  setenv("AZURE_STORAGE_CONNECTION_STRING",
         "AccountName=acct2;SharedAccessSignature=sv=1&sig=x;"
         "EndpointSuffix=core.chinacloudapi.cn;DefaultEndpointsProtocol=https",
         1);
  c = load(&none, &e);
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), 0);
  ck_assert_str_eq(u,
                   "https://acct2.blob.core.chinacloudapi.cn/c/k?sv=1&sig=x");
  free(u);
  azure_config_free(c);
  /* Azurite's shorthand. */
  setenv("AZURE_STORAGE_CONNECTION_STRING", "UseDevelopmentStorage=true", 1);
  c = load(&none, &e);
  ck_assert_str_eq(azure_account(c), "devstoreaccount1");
  ck_assert_ptr_nonnull(azure_signer(c));
  ck_assert_int_eq(azure_object_url(c, "c", "k", &u, &e), 0);
  ck_assert_str_eq(u, "http://127.0.0.1:10000/devstoreaccount1/c/k");
  free(u);
  azure_config_free(c);
  /* A part without '=': refused naming the variable. */
  setenv("AZURE_STORAGE_CONNECTION_STRING", "AccountName=a;garbage", 1);
  ck_assert_ptr_null(load(&none, &e));
  ck_assert_ptr_nonnull(strstr(e.msg, "AZURE_STORAGE_CONNECTION_STRING"));
  /* The account from -o endpoint alone (Azurite's path). */
  env_clear();
  c = load(&ep, &e);
  ck_assert_str_eq(azure_account(c), "devstoreaccount1");
  azure_config_free(c);
  env_clear();
}
END_TEST

START_TEST(test_credentials_stay_home) {
  env_clear();
  struct zerr e = {0};
  char *az = NULL;
  char acct[64];
  const char *rest;
  ck_assert_int_eq(azure_url_account("https://acc.blob.core.windows.net/c/d/"
                                     "k?sv=1",
                                     acct, sizeof acct, &rest),
                   1);
  ck_assert_str_eq(acct, "acc");
  ck_assert_str_eq(rest, "c/d/k?sv=1");
  ck_assert_int_eq(azure_url_account("https://acc.blob.core.windows.net.evil."
                                     "example/c/k",
                                     acct, sizeof acct, &rest),
                   0);
  ck_assert_int_eq(azure_url_account("http://acc.blob.core.windows.net/c/k",
                                     acct, sizeof acct, &rest),
                   0);
  setenv("AZURE_STORAGE_ACCOUNT", "mine", 1);
  setenv("AZURE_STORAGE_KEY", DEV_KEY, 1);
  struct azure_options none = {0};
  struct azure_config *c = load(&none, &e);
  /* Only the configured endpoint's URLs are ours (and signed). */
  ck_assert_int_eq(
      azure_url_to_az(c, "https://mine.blob.core.windows.net/c/k", &az), 1);
  ck_assert_str_eq(az, "az://c/k");
  free(az);
  ck_assert_int_eq(
      azure_url_to_az(c, "https://other.blob.core.windows.net/c/k", &az), 0);
  azure_config_free(c);
  /* A SOURCE of another account: that account, none of the
   * environment's secrets, the SAS its URL carries. */
  struct azure_options src = {.account = "other", .sas = "sv=9&sig=s"};
  c = load(&src, &e);
  ck_assert_str_eq(azure_account(c), "other");
  ck_assert_ptr_null(azure_signer(c));
  ck_assert_int_eq(azure_object_url(c, "c", "k", &az, &e), 0);
  ck_assert_str_eq(az, "https://other.blob.core.windows.net/c/k?sv=9&sig=s");
  free(az);
  azure_config_free(c);
  /* The same account as the environment's: its key applies. */
  struct azure_options same = {.account = "mine"};
  c = load(&same, &e);
  ck_assert_ptr_nonnull(azure_signer(c));
  azure_config_free(c);
  env_clear();
}
END_TEST

struct seen {
  char names[16][64];
  uint64_t sizes[16];
  int n, prefixes, skipped;
};

static int seen_obj(void *ud, const char *key, const char *raw, uint64_t size) {
  (void)raw;
  struct seen *s = ud;
  snprintf(s->names[s->n], sizeof s->names[0], "%s", key);
  s->sizes[s->n++] = size;
  return 0;
}

static int seen_prefix(void *ud, const char *prefix, const char *raw) {
  (void)raw;
  struct seen *s = ud;
  snprintf(s->names[s->n++], sizeof s->names[0], "%s", prefix);
  s->prefixes++;
  return 0;
}

static int seen_skip(void *ud, const char *raw, const char *why) {
  (void)raw;
  (void)why;
  ((struct seen *)ud)->skipped++;
  return 0;
}

START_TEST(test_list_parse) {
  static const struct s3_list_cbs cbs = {seen_obj, seen_prefix, seen_skip};
  struct zerr e = {0};
  struct seen s = {0};
  char *next = NULL;
  /* As Azure documents List Blobs (and Azurite answers), with an encoded
   * name (a control character) and a bad escape. */
  const char *page =
      "<?xml version=\"1.0\" encoding=\"utf-8\"?>"
      "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1/\" "
      "ContainerName=\"c\"><Prefix>p/</Prefix><MaxResults>2</MaxResults>"
      "<Delimiter>/</Delimiter><Blobs>"
      "<Blob><Name>p/a.bin</Name><Properties><Last-Modified>Mon, 01 Jan 2024 "
      "00:00:00 GMT</Last-Modified><Etag>0x8D9</Etag><Content-Length>1234"
      "</Content-Length></Properties></Blob>"
      "<BlobPrefix><Name>p/d/</Name></BlobPrefix>"
      "<Blob><Name Encoded=\"true\">p/x%01y+z</Name><Properties>"
      "<Content-Length>7</Content-Length></Properties></Blob>"
      "<Blob><Name Encoded=\"true\">p/bad%zz</Name><Properties>"
      "<Content-Length>1</Content-Length></Properties></Blob>"
      "</Blobs><NextMarker>2!48!MDAwMDA</NextMarker></EnumerationResults>";
  ck_assert_int_eq(azure_list_parse(page, strlen(page), &cbs, &s, &next, &e),
                   0);
  ck_assert_int_eq(s.n, 3);
  ck_assert_str_eq(s.names[0], "p/a.bin");
  ck_assert_uint_eq(s.sizes[0], 1234);
  ck_assert_str_eq(s.names[1], "p/d/");
  ck_assert_str_eq(s.names[2], "p/x\001y+z"); /* '+' stays a '+' */
  ck_assert_uint_eq(s.sizes[2], 7);
  ck_assert_int_eq(s.prefixes, 1);
  ck_assert_int_eq(s.skipped, 1);
  ck_assert_str_eq(next, "2!48!MDAwMDA");
  free(next);
  /* The last page: an empty NextMarker. */
  const char *last = "<EnumerationResults><Blobs/><NextMarker/>"
                     "</EnumerationResults>";
  ck_assert_int_eq(azure_list_parse(last, strlen(last), &cbs, &s, &next, &e),
                   0);
  ck_assert_ptr_null(next);
  /* An error document and broken XML are EIO with the reason. */
  const char *er = "<?xml version=\"1.0\"?><Error><Code>AuthenticationFailed"
                   "</Code><Message>Server failed to authenticate</Message>"
                   "</Error>";
  ck_assert_int_eq(azure_list_parse(er, strlen(er), &cbs, &s, &next, &e), -EIO);
  ck_assert_ptr_nonnull(strstr(e.msg, "AuthenticationFailed"));
  ck_assert_int_eq(azure_list_parse("<Enum", 5, &cbs, &s, &next, &e), -EIO);
  ck_assert_ptr_nonnull(strstr(e.msg, "malformed XML"));
}
END_TEST

START_TEST(test_parse_url) {
  struct zerr e = {0};
  char *c = NULL, *b = NULL;
  ck_assert_int_eq(azure_parse_url("az://cont/a/b c", &c, &b, &e), 0);
  ck_assert_str_eq(c, "cont");
  ck_assert_str_eq(b, "a/b c");
  free(c);
  free(b);
  ck_assert_int_eq(azure_parse_url("az://cont", &c, &b, &e), 0);
  ck_assert_str_eq(b, "");
  free(c);
  free(b);
  ck_assert_int_eq(azure_parse_url("az:///x", &c, &b, &e), -EINVAL);
  ck_assert_int_eq(azure_parse_url("s3://x/y", &c, &b, &e), -EINVAL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("azure");
  TCase *tc = tcase_create("azure");
  tcase_add_test(tc, test_hmac_rfc4231);
  tcase_add_test(tc, test_string_to_sign);
  tcase_add_test(tc, test_settings);
  tcase_add_test(tc, test_connection_string);
  tcase_add_test(tc, test_credentials_stay_home);
  tcase_add_test(tc, test_list_parse);
  tcase_add_test(tc, test_parse_url);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
