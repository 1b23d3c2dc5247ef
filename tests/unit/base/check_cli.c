/* check_cli.c - unit tests of src/cli: defaults; every option with valid
 * values (a table); every refusal with its exact message (a table); sizes
 * (suffixes, limits, overflow); the syntax of -o groups, escapes, "--",
 * repeats; SOURCE/MOUNTPOINT and extra arguments; --help and --version and
 * what they win over; what is passed through to libfuse. The tokenizer is
 * also checked against libfuse's own fuse_opt_parse run with a
 * fuse_opt table of zarrfs' options (the oracle): the same argv must give
 * the same arguments for libfuse. */
#define FUSE_USE_VERSION 312
#include <fuse_opt.h>
#include <math.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "../../../src/app/cli.h"
#include "../testutil.h"

#define MAXARGS 32

/* argv from a NULL-ended list of arguments, "zarrfs" in front. */
static int mkargv(const char *const *args, char **argv) {
  int n = 0;
  argv[n++] = (char *)"zarrfs";
  for (; *args && n < MAXARGS - 1; args++)
    argv[n++] = (char *)*args;
  argv[n] = NULL;
  return n;
}

/* Parse args, which must be accepted. */
static struct cli_config *parse_ok(const char *const *args) {
  char *argv[MAXARGS];
  int argc = mkargv(args, argv);
  struct cli_config *c = (struct cli_config *)1;
  struct zerr err = {0};
  int rc = cli_parse(argc, argv, &c, &err);
  ck_assert_msg(rc == 0, "refused (%d): %s", rc, err.msg);
  ck_assert_ptr_nonnull(c);
  return c;
}

/* Parse args, which must be refused with -EINVAL and exactly msg. */
static void parse_refused(const char *const *args, const char *msg) {
  char *argv[MAXARGS];
  int argc = mkargv(args, argv);
  struct cli_config *c = (struct cli_config *)1;
  struct zerr err = {0};
  int rc = cli_parse(argc, argv, &c, &err);
  ck_assert_int_eq(rc, -EINVAL);
  ck_assert_int_eq(err.code, EINVAL);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(err.msg, msg);
}

/* fuse_argv must be exactly the NULL-ended list want. */
static void assert_fuse_argv(const struct cli_config *c,
                             const char *const *want) {
  int n = 0;
  for (; want[n]; n++) {
    ck_assert_msg(n < c->fuse_argc, "fuse_argv has %d arguments, want more",
                  c->fuse_argc);
    ck_assert_str_eq(c->fuse_argv[n], want[n]);
  }
  ck_assert_int_eq(c->fuse_argc, n);
  ck_assert_ptr_null(c->fuse_argv[n]);
}

/* ---- defaults ---- */

START_TEST(defaults) {
  struct cli_config *c =
      parse_ok((const char *[]){"/data/x.zarr", "/mnt/x", NULL});
  ck_assert_int_eq(c->action, CLI_MOUNT);
  ck_assert_str_eq(c->source, "/data/x.zarr");
  ck_assert_str_eq(c->mountpoint, "/mnt/x");
  ck_assert_uint_eq(c->cache_size, 256ull << 20);
  ck_assert_uint_eq(c->max_decode, 1ull << 30);
  ck_assert(c->attr_timeout == 3600.0);
  ck_assert_uint_eq(c->kernel_readahead, 1u << 20);
  ck_assert_int_eq(c->no_consolidated, 0);
  ck_assert_int_eq(c->lazy_sizes, 0);
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  ck_assert_int_eq(c->decode_threads, ncpu < 1 ? 1 : ncpu > 16 ? 16 : ncpu);
  ck_assert_int_eq(c->remote_targets, 1);
  ck_assert_uint_eq(c->n_allow_roots, 0);
  ck_assert_ptr_null(c->s3.region);
  ck_assert_ptr_null(c->s3.endpoint);
  ck_assert_ptr_null(c->s3.profile);
  ck_assert_int_eq(c->s3.no_sign_request, 0);
  ck_assert_int_eq(c->s3.requester_pays, 0);
  ck_assert_int_eq(c->uid, -1); /* the mounting user's */
  ck_assert_int_eq(c->gid, -1);
  ck_assert_int_eq(c->fmask, 0);
  ck_assert_int_eq(c->dmask, 0);
  struct remote_config d;
  remote_config_default(&d);
  ck_assert_int_eq(c->remote.http.connect_ms, 10000);
  ck_assert_int_eq(c->remote.http.stall_ms, 30000);
  ck_assert_int_eq(c->remote.http.op_ms, 60000);
  ck_assert_int_eq(c->remote.http.max_attempts, 6); /* retries=5 */
  ck_assert_int_eq(c->remote.http.max_conns, 32);
  ck_assert_uint_eq(c->remote.cache_size, 256u << 20);
  ck_assert_uint_eq(c->remote.block_size, 64u << 10);
  ck_assert_uint_eq(c->remote.max_request, 8u << 20);
  ck_assert_uint_eq(c->remote.readahead, 32u << 20);
  ck_assert_int_eq(memcmp(&c->remote, &d, sizeof d), 0);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "/mnt/x", NULL});
  cli_config_free(c);
}
END_TEST

/* Remote sources default to lazy sizes; -o sizes decides either way. */
START_TEST(sizes_default_by_source) {
  static const struct {
    const char *src, *opt;
    int lazy;
  } cases[] = {
      {"/data/x.zarr", NULL, 0},
      {"http://h/x.zarr", NULL, 1},
      {"https://h/x.zarr", NULL, 1},
      {"s3://bucket/x.zarr", NULL, 1},
      {"s3://bucket/refs.json", NULL, 1},
      {"httpx://h/x", NULL, 0}, /* not a URL zarrfs knows: a local path */
      {"http://h/x.zarr", "sizes=exact", 0},
      {"/data/x.zarr", "sizes=lazy", 1},
      {"/data/x.zarr", "sizes=exact", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct cli_config *c =
        cases[i].opt ? parse_ok((const char *[]){"-o", cases[i].opt,
                                                 cases[i].src, "m", NULL})
                     : parse_ok((const char *[]){cases[i].src, "m", NULL});
    ck_assert_msg(c->lazy_sizes == cases[i].lazy, "%s %s: lazy %d",
                  cases[i].src, cases[i].opt ? cases[i].opt : "",
                  c->lazy_sizes);
    cli_config_free(c);
  }
}
END_TEST

/* ---- every option, valid values ---- */

/* What a valid case sets. */
enum field {
  F_CACHE_SIZE,
  F_MAX_DECODE,
  F_ATTR_TIMEOUT,
  F_KERNEL_READAHEAD,
  F_NO_CONSOLIDATED,
  F_DECODE_THREADS,
  F_REMOTE_TARGETS,
  F_CONNECT_MS,
  F_STALL_MS,
  F_OP_MS,
  F_MAX_ATTEMPTS,
  F_MAX_CONNS,
  F_REMOTE_CACHE,
  F_BLOCK_SIZE,
  F_MAX_REQUEST,
  F_READAHEAD,
  F_NO_SIGN,
  F_REQUESTER_PAYS,
  F_UID,
  F_GID,
  F_FMASK,
  F_DMASK,
};

/* The field's value in c. */
static long double field(const struct cli_config *c, enum field f) {
  switch (f) {
  case F_CACHE_SIZE:
    return c->cache_size;
  case F_MAX_DECODE:
    return c->max_decode;
  case F_ATTR_TIMEOUT:
    return c->attr_timeout;
  case F_KERNEL_READAHEAD:
    return c->kernel_readahead;
  case F_NO_CONSOLIDATED:
    return c->no_consolidated;
  case F_DECODE_THREADS:
    return c->decode_threads;
  case F_REMOTE_TARGETS:
    return c->remote_targets;
  case F_CONNECT_MS:
    return c->remote.http.connect_ms;
  case F_STALL_MS:
    return c->remote.http.stall_ms;
  case F_OP_MS:
    return c->remote.http.op_ms;
  case F_MAX_ATTEMPTS:
    return c->remote.http.max_attempts;
  case F_MAX_CONNS:
    return c->remote.http.max_conns;
  case F_REMOTE_CACHE:
    return c->remote.cache_size;
  case F_BLOCK_SIZE:
    return c->remote.block_size;
  case F_MAX_REQUEST:
    return c->remote.max_request;
  case F_READAHEAD:
    return c->remote.readahead;
  case F_NO_SIGN:
    return c->s3.no_sign_request;
  case F_REQUESTER_PAYS:
    return c->s3.requester_pays;
  case F_UID:
    return c->uid;
  case F_GID:
    return c->gid;
  case F_FMASK:
    return c->fmask;
  case F_DMASK:
    return c->dmask;
  }
  return -1;
}

static const struct valid_case {
  const char *opt;
  enum field f;
  long double want;
} valid[] = {
    {"cache_size=0", F_CACHE_SIZE, 0},
    {"cache_size=12", F_CACHE_SIZE, 12},
    {"cache_size=7b", F_CACHE_SIZE, 7},
    {"cache_size=64K", F_CACHE_SIZE, 64 << 10},
    {"cache_size=5kb", F_CACHE_SIZE, 5 << 10},
    {"cache_size=256M", F_CACHE_SIZE, 256 << 20},
    {"cache_size=3mB", F_CACHE_SIZE, 3 << 20},
    {"cache_size=2G", F_CACHE_SIZE, 2ull << 30},
    {"cache_size=1T", F_CACHE_SIZE, 1ull << 40},
    {"cache_size=4611686018427387904", F_CACHE_SIZE, 1ull << 62},
    {"cache_size=4194304T", F_CACHE_SIZE, 1ull << 62},
    {"max_decode=1", F_MAX_DECODE, 1},
    {"max_decode=64M", F_MAX_DECODE, 64 << 20},
    {"attr_timeout=0", F_ATTR_TIMEOUT, 0},
    {"attr_timeout=0.5", F_ATTR_TIMEOUT, 0.5},
    {"attr_timeout=86400", F_ATTR_TIMEOUT, 86400},
    {"kernel_readahead=0", F_KERNEL_READAHEAD, 0},
    {"kernel_readahead=128K", F_KERNEL_READAHEAD, 128 << 10},
    {"kernel_readahead=1G", F_KERNEL_READAHEAD, 1 << 30},
    {"consolidated=no", F_NO_CONSOLIDATED, 1},
    {"consolidated=yes", F_NO_CONSOLIDATED, 0},
    {"decode_threads=0", F_DECODE_THREADS, 0},
    {"decode_threads=7", F_DECODE_THREADS, 7},
    {"decode_threads=64", F_DECODE_THREADS, 64},
    {"remote_targets=no", F_REMOTE_TARGETS, 0},
    {"remote_targets=yes", F_REMOTE_TARGETS, 1},
    {"connect_timeout=0.5", F_CONNECT_MS, 500},
    {"connect_timeout=3", F_CONNECT_MS, 3000},
    {"stall_timeout=2", F_STALL_MS, 2000},
    {"timeout=604800", F_OP_MS, 604800000},
    {"retries=0", F_MAX_ATTEMPTS, 1},
    {"retries=100", F_MAX_ATTEMPTS, 101},
    {"connections=1", F_MAX_CONNS, 1},
    {"connections=1024", F_MAX_CONNS, 1024},
    {"remote_cache=1M", F_REMOTE_CACHE, 1 << 20},
    {"block_size=4K", F_BLOCK_SIZE, 4 << 10},
    {"max_request=16M", F_MAX_REQUEST, 16 << 20},
    {"readahead=0", F_READAHEAD, 0},
    {"readahead=1M", F_READAHEAD, 1 << 20},
    {"no_sign_request", F_NO_SIGN, 1},
    {"requester_pays", F_REQUESTER_PAYS, 1},
    {"uid=0", F_UID, 0},
    {"uid=1000", F_UID, 1000},
    {"uid=4294967294", F_UID, 4294967294.0},
    {"gid=0", F_GID, 0},
    {"gid=65534", F_GID, 65534},
    {"umask=022", F_FMASK, 022},
    {"umask=022", F_DMASK, 022},
    {"umask=0", F_DMASK, 0},
    {"umask=777", F_FMASK, 0777},
    {"fmask=0137", F_FMASK, 0137},
    {"dmask=7", F_DMASK, 07},
};

/* Each valid value, as "-o OPT", as "-oOPT" and after the positionals. */
START_TEST(valid_option) {
  const struct valid_case *v = &valid[_i];
  char glued[256];
  snprintf(glued, sizeof glued, "-o%s", v->opt);
  const char *const *forms[] = {
      (const char *[]){"-o", v->opt, "src", "mnt", NULL},
      (const char *[]){glued, "src", "mnt", NULL},
      (const char *[]){"src", "mnt", "-o", v->opt, NULL},
  };
  for (size_t i = 0; i < 3; i++) {
    struct cli_config *c = parse_ok(forms[i]);
    ck_assert_msg(field(c, v->f) == v->want, "%s (form %zu): got %Lg, want %Lg",
                  v->opt, i, field(c, v->f), v->want);
    /* ours: nothing of it reaches libfuse */
    assert_fuse_argv(c, (const char *[]){"zarrfs", "mnt", NULL});
    cli_config_free(c);
  }
}
END_TEST

START_TEST(s3_strings) {
  struct cli_config *c = parse_ok(
      (const char *[]){"-o", "region=eu-west-1,endpoint=http://127.0.0.1:9000",
                       "-o", "profile=lab", "s3://b/x.zarr", "m", NULL});
  ck_assert_str_eq(c->s3.region, "eu-west-1");
  ck_assert_str_eq(c->s3.endpoint, "http://127.0.0.1:9000");
  ck_assert_str_eq(c->s3.profile, "lab");
  ck_assert_int_eq(c->s3.no_sign_request, 0);
  cli_config_free(c);
}
END_TEST

START_TEST(allow_roots_in_order) {
  struct cli_config *c = parse_ok(
      (const char *[]){"-o", "allow_root=/a", "src", "-o",
                       "allow_root=http://169.254.169.254/x/,allow_root=/b",
                       "mnt", "-oallow_root=", NULL});
  ck_assert_uint_eq(c->n_allow_roots, 4);
  ck_assert_str_eq(c->allow_roots[0], "/a");
  ck_assert_str_eq(c->allow_roots[1], "http://169.254.169.254/x/");
  ck_assert_str_eq(c->allow_roots[2], "/b");
  ck_assert_str_eq(c->allow_roots[3], ""); /* confine refuses it later */
  assert_fuse_argv(c, (const char *[]){"zarrfs", "mnt", NULL});
  cli_config_free(c);
  /* target_root= and its alias allow_root= together, in order; plain
   * allow_root (no value) is libfuse's */
  c = parse_ok((const char *[]){"-o", "target_root=/n,allow_root=/o", "-o",
                                "allow_root", "src", "mnt", NULL});
  ck_assert_uint_eq(c->n_allow_roots, 2);
  ck_assert_str_eq(c->allow_roots[0], "/n");
  ck_assert_str_eq(c->allow_roots[1], "/o");
  assert_fuse_argv(c,
                   (const char *[]){"zarrfs", "-o", "allow_root", "mnt", NULL});
  cli_config_free(c);
}
END_TEST

/* -o log_file and -o log_level. */
START_TEST(log_options) {
  struct cli_config *c = parse_ok((const char *[]){"s", "m", NULL});
  ck_assert_ptr_null(c->log_file);
  ck_assert_int_eq(c->log_level, 0);
  cli_config_free(c);
  static const struct {
    const char *v;
    int level;
  } lv[] = {{"error", 3}, {"warn", 4}, {"info", 6}, {"debug", 7}};
  for (size_t i = 0; i < sizeof lv / sizeof *lv; i++) {
    char opt[64];
    snprintf(opt, sizeof opt, "log_level=%s,log_file=/var/log/z.log", lv[i].v);
    c = parse_ok((const char *[]){"-o", opt, "s", "m", NULL});
    ck_assert_int_eq(c->log_level, lv[i].level);
    ck_assert_str_eq(c->log_file, "/var/log/z.log");
    assert_fuse_argv(c, (const char *[]){"zarrfs", "m", NULL});
    cli_config_free(c);
  }
  parse_refused((const char *[]){"-o", "log_level=verbose", "s", "m", NULL},
                "bad log_level 'verbose' (error, warn, info or debug)");
  parse_refused((const char *[]){"-o", "log_file=", "s", "m", NULL},
                "bad log_file '' (a file name)");
}
END_TEST

/* -o ref=NAME and -o snapshot=ID (Icechunk). */
START_TEST(icechunk_options) {
  struct cli_config *c = parse_ok((const char *[]){"s", "m", NULL});
  ck_assert_ptr_null(c->ref);
  ck_assert_ptr_null(c->snapshot);
  cli_config_free(c);
  c = parse_ok((const char *[]){"-o", "ref=it works!", "s", "m", NULL});
  ck_assert_str_eq(c->ref, "it works!");
  assert_fuse_argv(c, (const char *[]){"zarrfs", "m", NULL});
  cli_config_free(c);
  c = parse_ok(
      (const char *[]){"-o", "snapshot=1CECHNKREP0F1RSTCMT0", "s", "m", NULL});
  ck_assert_str_eq(c->snapshot, "1CECHNKREP0F1RSTCMT0");
  cli_config_free(c);
  parse_refused((const char *[]){"-o", "ref=", "s", "m", NULL},
                "bad ref '' (a branch or tag name)");
  parse_refused(
      (const char *[]){"-o", "snapshot=1CECHNKREP0F1RSTCMTU", "s", "m", NULL},
      "bad snapshot '1CECHNKREP0F1RSTCMTU' (an Icechunk snapshot "
      "id: 20 characters of Crockford base 32)");
  parse_refused((const char *[]){"-o", "ref=main,snapshot=1CECHNKREP0F1RSTCMT0",
                                 "s", "m", NULL},
                "ref and snapshot exclude each other");
}
END_TEST

/* -o views=beside|tree|none. */
START_TEST(views_option) {
  struct cli_config *c = parse_ok((const char *[]){"s", "m", NULL});
  ck_assert_int_eq(c->views, 0);
  cli_config_free(c);
  static const char *const modes[] = {"views=beside", "views=tree",
                                      "views=none"};
  for (int i = 0; i < 3; i++) {
    c = parse_ok((const char *[]){"-o", modes[i], "s", "m", NULL});
    ck_assert_int_eq(c->views, i);
    cli_config_free(c);
  }
  c = parse_ok((const char *[]){"ls", "-o", "views=tree", "s", ".text", NULL});
  ck_assert_int_eq(c->views, 1);
  cli_config_free(c);
  parse_refused((const char *[]){"-o", "views=both", "s", "m", NULL},
                "bad views 'both' (beside, tree or none)");
}
END_TEST

/* -o umask is the mask of both kinds; fmask and dmask override it, in
 * whatever order they come. */
START_TEST(masks_over_umask) {
  struct cli_config *c =
      parse_ok((const char *[]){"-o", "fmask=7,umask=027", "s", "m", NULL});
  ck_assert_int_eq(c->fmask, 07);
  ck_assert_int_eq(c->dmask, 027);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "m", NULL});
  cli_config_free(c);
  c = parse_ok((const char *[]){"-o", "umask=022,dmask=0", "s", "m", NULL});
  ck_assert_int_eq(c->fmask, 022);
  ck_assert_int_eq(c->dmask, 0);
  cli_config_free(c);
}
END_TEST

/* Modes shown to other users are enforced: allow_other with any of uid,
 * gid, umask, fmask, dmask adds default_permissions for libfuse (once);
 * no_default_permissions opts out; nothing is added without allow_other
 * or without an owner option (issue 32 item 4). */
START_TEST(allow_other_implies_default_permissions) {
  static const char *const implied[] = {"umask=077", "fmask=0", "dmask=7",
                                        "uid=5", "gid=6"};
  for (size_t i = 0; i < sizeof implied / sizeof *implied; i++) {
    struct cli_config *c = parse_ok((const char *[]){
        "-o", "allow_other", "-o", implied[i], "s", "m", NULL});
    ck_assert_int_eq(c->default_permissions, 2);
    assert_fuse_argv(c, (const char *[]){"zarrfs", "-o",
                                         "allow_other,default_permissions", "m",
                                         NULL});
    cli_config_free(c);
  }
  struct cli_config *c = parse_ok((const char *[]){
      "-o", "umask=077,allow_other,default_permissions", "s", "m", NULL});
  ck_assert_int_eq(c->default_permissions, 1);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "-o",
                                       "allow_other,default_permissions", "m",
                                       NULL});
  cli_config_free(c);
  c = parse_ok((const char *[]){
      "-o", "allow_other,umask=077,no_default_permissions", "s", "m", NULL});
  ck_assert_int_eq(c->default_permissions, 0);
  ck_assert_int_eq(c->fmask, 077);
  assert_fuse_argv(c,
                   (const char *[]){"zarrfs", "-o", "allow_other", "m", NULL});
  cli_config_free(c);
  c = parse_ok((const char *[]){"-o", "allow_other", "s", "m", NULL});
  ck_assert_int_eq(c->default_permissions, 0);
  assert_fuse_argv(c,
                   (const char *[]){"zarrfs", "-o", "allow_other", "m", NULL});
  cli_config_free(c);
  c = parse_ok((const char *[]){"-o", "umask=077,uid=3", "s", "m", NULL});
  ck_assert_int_eq(c->default_permissions, 0);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "m", NULL});
  cli_config_free(c);
  parse_refused((const char *[]){"-o", "default_permissions", "-o",
                                 "no_default_permissions", "s", "m", NULL},
                "default_permissions and no_default_permissions exclude "
                "each other");
}
END_TEST

/* -o nonempty is ours (libfuse 3 has no such option). */
START_TEST(nonempty_is_ours) {
  struct cli_config *c = parse_ok((const char *[]){"s", "m", NULL});
  ck_assert_int_eq(c->nonempty, 0);
  cli_config_free(c);
  c = parse_ok((const char *[]){"-o", "ro,nonempty", "s", "m", NULL});
  ck_assert_int_eq(c->nonempty, 1);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "-o", "ro", "m", NULL});
  cli_config_free(c);
  /* -o xattr is ours too (libfuse has none) */
  c = parse_ok((const char *[]){"s", "m", NULL});
  ck_assert_int_eq(c->xattrs, 0);
  cli_config_free(c);
  c = parse_ok((const char *[]){"-oxattr", "s", "m", NULL});
  ck_assert_int_eq(c->xattrs, 1);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "m", NULL});
  cli_config_free(c);
}
END_TEST

/* ---- every refusal ---- */

static const struct refusal_case {
  const char *opt, *msg;
} refusals[] = {
    {"cache_size=lots", "bad cache_size 'lots' (a size such as 256M; units K, "
                        "M, G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=", "bad cache_size '' (a size such as 256M; units K, M, G, T "
                    "or KiB, MiB, GiB, TiB)"},
    {"cache_size=1Q", "bad cache_size '1Q' (a size such as 256M; units K, M, "
                      "G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=1KK", "bad cache_size '1KK' (a size such as 256M; units K, M, "
                       "G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=1.5M", "bad cache_size '1.5M' (a size such as 256M; units K, "
                        "M, G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=M", "bad cache_size 'M' (a size such as 256M; units K, M, G, "
                     "T or KiB, MiB, GiB, TiB)"},
    {"cache_size=-1", "bad cache_size '-1' (a size such as 256M; units K, M, "
                      "G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=4611686018427387905",
     "bad cache_size '4611686018427387905' (a size such as 256M; units K, M, "
     "G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=4194305T", "bad cache_size '4194305T' (a size such as 256M; "
                            "units K, M, G, T or KiB, MiB, GiB, TiB)"},
    {"cache_size=18446744073709551616",
     "bad cache_size '18446744073709551616' (a size such as 256M; units K, M, "
     "G, T or KiB, MiB, GiB, TiB)"},
    {"max_decode=0", "bad max_decode '0' (a size such as 1G; units K, M, G, T "
                     "or KiB, MiB, GiB, TiB)"},
    {"max_decode=big", "bad max_decode 'big' (a size such as 1G; units K, M, "
                       "G, T or KiB, MiB, GiB, TiB)"},
    {"kernel_readahead=2G", "bad kernel_readahead '2G' (a size up to 1G, such "
                            "as 1M; units K, M, G, T or KiB, MiB, GiB, TiB)"},
    {"kernel_readahead=1025M",
     "bad kernel_readahead '1025M' (a size up to 1G, such as 1M; units K, M, "
     "G, T or KiB, MiB, GiB, TiB)"},
    {"kernel_readahead=x", "bad kernel_readahead 'x' (a size up to 1G, such as "
                           "1M; units K, M, G, T or KiB, MiB, GiB, TiB)"},
    {"attr_timeout=-1", "bad attr_timeout '-1' (seconds, 0 or more)"},
    {"attr_timeout=abc", "bad attr_timeout 'abc' (seconds, 0 or more)"},
    {"attr_timeout=", "bad attr_timeout '' (seconds, 0 or more)"},
    {"attr_timeout=nan", "bad attr_timeout 'nan' (seconds, 0 or more)"},
    {"attr_timeout=1s", "bad attr_timeout '1s' (seconds, 0 or more)"},
    {"consolidated=maybe", "bad consolidated 'maybe' (yes or no)"},
    {"consolidated=", "bad consolidated '' (yes or no)"},
    {"consolidated=YES", "bad consolidated 'YES' (yes or no)"},
    {"sizes=fast", "bad sizes 'fast' (exact or lazy)"},
    {"decode_threads=many", "bad decode_threads 'many' (0 to 64)"},
    {"decode_threads=65", "bad decode_threads '65' (0 to 64)"},
    {"decode_threads=-1", "bad decode_threads '-1' (0 to 64)"},
    {"decode_threads=1.5", "bad decode_threads '1.5' (0 to 64)"},
    {"decode_threads=", "bad decode_threads '' (0 to 64)"},
    {"decode_threads=99999999999999999999",
     "bad decode_threads '99999999999999999999' (0 to 64)"},
    {"remote_targets=maybe", "bad remote_targets 'maybe' (yes or no)"},
    {"connect_timeout=0", "bad connect_timeout '0' (seconds, e.g. 30 or 0.5)"},
    {"connect_timeout=-1",
     "bad connect_timeout '-1' (seconds, e.g. 30 or 0.5)"},
    {"stall_timeout=604801",
     "bad stall_timeout '604801' (seconds, e.g. 30 or 0.5)"},
    {"timeout=abc", "bad timeout 'abc' (seconds, e.g. 30 or 0.5)"},
    {"timeout=nan", "bad timeout 'nan' (seconds, e.g. 30 or 0.5)"},
    {"timeout=", "bad timeout '' (seconds, e.g. 30 or 0.5)"},
    {"retries=101", "bad retries '101' (0 to 100)"},
    {"retries=-1", "bad retries '-1' (0 to 100)"},
    {"retries=x", "bad retries 'x' (0 to 100)"},
    {"connections=0", "bad connections '0' (1 to 1024)"},
    {"connections=1025", "bad connections '1025' (1 to 1024)"},
    {"remote_cache=0", "bad remote_cache '0' (a size such as 64K or 8M; units "
                       "K, M, G, T or KiB, MiB, GiB, TiB)"},
    {"block_size=0", "bad block_size '0' (a size such as 64K or 8M; units K, "
                     "M, G, T or KiB, MiB, GiB, TiB)"},
    {"max_request=0", "bad max_request '0' (a size such as 64K or 8M; units K, "
                      "M, G, T or KiB, MiB, GiB, TiB)"},
    {"readahead=x", "bad readahead 'x' (a size such as 64K or 8M; units K, M, "
                    "G, T or KiB, MiB, GiB, TiB)"},
    {"uid=-1", "bad uid '-1' (a number, 0 to 4294967294)"},
    {"uid=4294967295", "bad uid '4294967295' (a number, 0 to 4294967294)"},
    {"uid=root", "bad uid 'root' (a number, 0 to 4294967294)"},
    {"gid=", "bad gid '' (a number, 0 to 4294967294)"},
    {"gid=1x", "bad gid '1x' (a number, 0 to 4294967294)"},
    {"umask=8", "bad umask '8' (octal, 0 to 777)"},
    {"umask=1000", "bad umask '1000' (octal, 0 to 777)"},
    {"fmask=-1", "bad fmask '-1' (octal, 0 to 777)"},
    {"dmask=", "bad dmask '' (octal, 0 to 777)"},
    /* options neither zarrfs nor libfuse's low-level mount knows: refused
     * with zarrfs's words, not "fuse: unknown option(s)" */
    {"bogus", "unknown option '-o bogus' (try --help)"},
    {"cache_sizex=1", "unknown option '-o cache_sizex=1' (try --help)"},
    {"timeouts=3", "unknown option '-o timeouts=3' (try --help)"},
    {"noallow_root=/x", "unknown option '-o noallow_root=/x' (try --help)"},
    {"fsnamex=1", "unknown option '-o fsnamex=1' (try --help)"},
    /* high-level libfuse options do nothing for a low-level file system */
    {"entry_timeout=3", "unknown option '-o entry_timeout=3' (try --help)"},
    {"kernel_cache", "unknown option '-o kernel_cache' (try --help)"},
    {"modules=subdir,subdir=x",
     "-o modules=subdir is not supported (libfuse's stacking modules work "
     "only with its high-level API; zarrfs uses the low-level one)"},
};

/* Each bad value is refused, whatever SOURCE is (nothing is read). */
START_TEST(refused_option) {
  const struct refusal_case *r = &refusals[_i];
  parse_refused((const char *[]){"-o", r->opt, "src", "mnt", NULL}, r->msg);
  parse_refused((const char *[]){"http://h/x", "mnt", "-o", r->opt, NULL},
                r->msg);
}
END_TEST

/* An argument of its own that is not -f, -d, -s (or ours) is refused, and
 * so is the first of several unknown options. */
START_TEST(unknown_arguments_refused) {
  parse_refused((const char *[]){"-x", "src", "mnt", NULL},
                "unknown option '-x' (try --help)");
  parse_refused((const char *[]){"src", "mnt", "--foreground", NULL},
                "unknown option '--foreground' (try --help)");
  parse_refused((const char *[]){"-", "src", "mnt", NULL},
                "unknown option '-' (try --help)");
  parse_refused((const char *[]){"-o", "a1,a2", "-y", "src", "mnt", NULL},
                "unknown option '-o a1' (try --help)");
  parse_refused((const char *[]){"ls", "-o", "bogus", "src", NULL},
                "unknown option '-o bogus' (try --help)");
}
END_TEST

/* A repeated option counts with its last value only. */
START_TEST(last_value_wins) {
  struct cli_config *c = parse_ok((const char *[]){
      "-o", "cache_size=lots", "-o", "cache_size=1K", "s", "m", NULL});
  ck_assert_uint_eq(c->cache_size, 1024);
  cli_config_free(c);
  c = parse_ok(
      (const char *[]){"-o", "sizes=lazy,sizes=exact", "s", "m", NULL});
  ck_assert_int_eq(c->lazy_sizes, 0);
  cli_config_free(c);
  parse_refused(
      (const char *[]){"-o", "cache_size=1K,cache_size=lots", "s", "m", NULL},
      "bad cache_size 'lots' (a size such as 256M; units K, M, G, T or KiB, "
      "MiB, GiB, TiB)");
}
END_TEST

/* With several bad values, the first in the order of the usage text is
 * named (one line, whatever the order given). */
START_TEST(first_refusal_named) {
  parse_refused(
      (const char *[]){"-o", "retries=x,cache_size=lots", "s", "m", NULL},
      "bad cache_size 'lots' (a size such as 256M; units K, M, G, T or KiB, "
      "MiB, GiB, TiB)");
}
END_TEST

/* ---- positionals ---- */

START_TEST(missing_and_extra_arguments) {
  parse_refused((const char *[]){NULL}, "missing SOURCE (try --help)");
  parse_refused((const char *[]){"-f", "-o", "allow_other", NULL},
                "missing SOURCE (try --help)");
  parse_refused((const char *[]){"./src", NULL},
                "missing MOUNTPOINT (try --help)");
  parse_refused((const char *[]){"-o", "cache_size=lots", "/data/src", NULL},
                "missing MOUNTPOINT (try --help)");
  parse_refused((const char *[]){"s3://bucket/src", NULL},
                "missing MOUNTPOINT (try --help)");
  /* a plain word may be a mistyped command: said so, and the commands */
  parse_refused((const char *[]){"frobnicate", NULL},
                "missing MOUNTPOINT, or 'frobnicate' is not a command (the "
                "commands: ls, cat, stat, info; try --help)");
  parse_refused((const char *[]){"-o", "cache_size=lots", "src", NULL},
                "missing MOUNTPOINT, or 'src' is not a command (the "
                "commands: ls, cat, stat, info; try --help)");
  parse_refused((const char *[]){"./a", "b", "c", NULL},
                "unexpected argument 'c' after SOURCE and MOUNTPOINT (try "
                "--help)");
  parse_refused(
      (const char *[]){"a", "b", "c", "d", "-o", "cache_size=lots", NULL},
      "unexpected argument 'c' after SOURCE and MOUNTPOINT, or 'a' is not a "
      "command (the commands: ls, cat, stat, info; try --help)");
  /* an empty argument is an argument (and no word) */
  parse_refused((const char *[]){"", NULL}, "missing MOUNTPOINT (try --help)");
}
END_TEST

/* zarrfs ls|cat|stat|info SOURCE [PATH...]: no mount. */
START_TEST(tool_commands) {
  struct cli_config *c =
      parse_ok((const char *[]){"cat", "-o", "cache_size=1M", "store.zarr",
                                "a/values.txt", "b/0.txt", NULL});
  ck_assert_int_eq(c->action, CLI_TOOL);
  ck_assert_int_eq(c->tool, CLI_TOOL_CAT);
  ck_assert_str_eq(c->source, "store.zarr");
  ck_assert_ptr_null(c->mountpoint);
  ck_assert_uint_eq(c->n_paths, 2);
  ck_assert_str_eq(c->paths[0], "a/values.txt");
  ck_assert_str_eq(c->paths[1], "b/0.txt");
  ck_assert_uint_eq(c->cache_size, 1u << 20);
  cli_config_free(c);
  static const struct {
    const char *word;
    enum cli_tool tool;
  } w[] = {{"ls", CLI_TOOL_LS},
           {"cat", CLI_TOOL_CAT},
           {"stat", CLI_TOOL_STAT},
           {"info", CLI_TOOL_INFO}};
  for (size_t i = 0; i < sizeof w / sizeof *w; i++) {
    c = parse_ok((const char *[]){w[i].word, "s", "p", NULL});
    ck_assert_int_eq(c->tool, w[i].tool);
    ck_assert_str_eq(cli_tool_name(c->tool), w[i].word);
    ck_assert_uint_eq(c->n_paths, 1);
    cli_config_free(c);
  }
  /* without PATH: the root (ls, stat, info) */
  c = parse_ok((const char *[]){"ls", "s", NULL});
  ck_assert_uint_eq(c->n_paths, 0);
  ck_assert_int_eq(c->lazy_sizes, 0);
  cli_config_free(c);
  /* a URL: lazy sizes, as a mount of it */
  c = parse_ok((const char *[]){"stat", "http://127.0.0.1:1/s", NULL});
  ck_assert_int_eq(c->lazy_sizes, 1);
  cli_config_free(c);
  /* only the first non-option is a command: a mountpoint named "ls" */
  c = parse_ok((const char *[]){"src", "ls", NULL});
  ck_assert_int_eq(c->action, CLI_MOUNT);
  ck_assert_str_eq(c->mountpoint, "ls");
  cli_config_free(c);
  /* help still wins */
  c = parse_ok((const char *[]){"cat", "--help", NULL});
  ck_assert_int_eq(c->action, CLI_HELP);
  cli_config_free(c);
  parse_refused((const char *[]){"ls", NULL}, "missing SOURCE (try --help)");
  parse_refused((const char *[]){"cat", "s", NULL},
                "'zarrfs cat' needs a PATH (try --help)");
  parse_refused((const char *[]){"ls", "s", "a", "b", NULL},
                "'zarrfs ls' takes one PATH (try --help)");
  parse_refused((const char *[]){"info", "s", "a", "b", NULL},
                "'zarrfs info' takes one PATH (try --help)");
  parse_refused((const char *[]){"ls", "-f", "s", NULL},
                "'-f' is an option of mounts, not of 'zarrfs ls' (try "
                "--help)");
  parse_refused((const char *[]){"stat", "-o", "allow_other", "s", NULL},
                "'-o allow_other' is an option of mounts, not of 'zarrfs "
                "stat' (try "
                "--help)");
  parse_refused((const char *[]){"cat", "-o", "cache_size=x", "s", "p", NULL},
                "bad cache_size 'x' (a size such as 256M; units K, M, G, T or "
                "KiB, MiB, GiB, TiB)");
}
END_TEST

START_TEST(no_argv_at_all) {
  struct cli_config *c = (struct cli_config *)1;
  struct zerr err = {0};
  char *argv[] = {NULL};
  ck_assert_int_eq(cli_parse(0, argv, &c, &err), -EINVAL);
  ck_assert_ptr_null(c);
  ck_assert_str_eq(err.msg, "missing SOURCE (try --help)");
}
END_TEST

/* After "--" everything is SOURCE or MOUNTPOINT, even "-x" or "-o"; the
 * "--" stays for libfuse unless it ends the list. */
START_TEST(double_dash) {
  struct cli_config *c =
      parse_ok((const char *[]){"-f", "--", "-o", "-weird", NULL});
  ck_assert_str_eq(c->source, "-o");
  ck_assert_str_eq(c->mountpoint, "-weird");
  assert_fuse_argv(c, (const char *[]){"zarrfs", "-f", "--", "-weird", NULL});
  cli_config_free(c);
  c = parse_ok((const char *[]){"src", "mnt", "--", NULL});
  assert_fuse_argv(c, (const char *[]){"zarrfs", "mnt", NULL});
  cli_config_free(c);
  parse_refused((const char *[]){"./src", "--", "mnt", "--help", NULL},
                "unexpected argument '--help' after SOURCE and MOUNTPOINT "
                "(try --help)");
}
END_TEST

/* ---- -o syntax ---- */

START_TEST(option_groups_and_escapes) {
  struct cli_config *c = parse_ok(
      (const char *[]){"-o", "cache_size=1K,max_decode=2M",
                       "-oallow_root=/a\\,b\\\\c\\040d", "s", "m", NULL});
  ck_assert_uint_eq(c->cache_size, 1024);
  ck_assert_uint_eq(c->max_decode, 2 << 20);
  ck_assert_uint_eq(c->n_allow_roots, 1);
  ck_assert_str_eq(c->allow_roots[0], "/a,b\\c d");
  cli_config_free(c);
  parse_refused((const char *[]){"s", "m", "-o", NULL},
                "missing argument after '-o'");
  /* a syntax error is not forgiven by --help */
  parse_refused((const char *[]){"--help", "-o", NULL},
                "missing argument after '-o'");
}
END_TEST

/* ---- --help, --version ---- */

START_TEST(help_and_version) {
  static const struct {
    const char *a, *b, *c, *d;
    enum cli_action want;
  } cases[] = {
      {"--help", NULL, NULL, NULL, CLI_HELP},
      {"-h", NULL, NULL, NULL, CLI_HELP},
      {"-o", "-h", NULL, NULL, CLI_HELP}, /* as libfuse matched it */
      {"--version", NULL, NULL, NULL, CLI_VERSION},
      {"-V", NULL, NULL, NULL, CLI_VERSION},
      {"-V", "--help", NULL, NULL, CLI_HELP},          /* help wins */
      {"--help", "-V", NULL, NULL, CLI_HELP},          /* in either order */
      {"-o", "cache_size=lots", "-h", NULL, CLI_HELP}, /* over bad values */
      {"a", "b", "c", "--help", CLI_HELP},       /* over an extra argument */
      {"-o", "bogus", "--help", NULL, CLI_HELP}, /* over unknown options */
      {"-x", "-V", NULL, NULL, CLI_VERSION},
      {"-V", "-o", "sizes=fast", NULL, CLI_VERSION},
      {"src", "mnt", "--version", NULL, CLI_VERSION},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    struct cli_config *c = parse_ok(
        (const char *[]){cases[i].a, cases[i].b, cases[i].c, cases[i].d, NULL});
    ck_assert_msg(c->action == cases[i].want, "case %zu: action %d", i,
                  c->action);
    cli_config_free(c);
  }
}
END_TEST

START_TEST(usage_names_every_option) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  ck_assert_ptr_nonnull(f);
  cli_usage(f, "PROG");
  fclose(f);
  ck_assert_msg(!strncmp(text, "usage: PROG [options] SOURCE MOUNTPOINT\n", 40),
                "%.60s", text);
  static const char *const opts[] = {"-h, --help",
                                     "-V, --version",
                                     "-o cache_size=",
                                     "-o max_decode=",
                                     "-o attr_timeout=",
                                     "-o consolidated=",
                                     "-o sizes=exact|lazy",
                                     "-o decode_threads=",
                                     "-o target_root=",
                                     "-o nonempty",
                                     "-o uid=N,gid=N",
                                     "-o umask=OCT",
                                     "-o fmask=OCT",
                                     "-o dmask=OCT",
                                     "-o no_default_permissions",
                                     "-o xattr",
                                     "-o views=beside|tree|none",
                                     "-o log_file=",
                                     "-o log_level=",
                                     "-o ref=",
                                     "-o snapshot=",
                                     "ls SOURCE [PATH]",
                                     "cat SOURCE PATH...",
                                     "stat SOURCE [PATH...]",
                                     "info SOURCE [PATH]",
                                     "-o max_threads=",
                                     "-o remote_targets=",
                                     "-o kernel_readahead=",
                                     "-o region=",
                                     "-o endpoint=",
                                     "-o profile=",
                                     "-o no_sign_request",
                                     "-o requester_pays",
                                     "-o connect_timeout=",
                                     "-o stall_timeout=",
                                     "-o timeout=",
                                     "-o retries=",
                                     "-o remote_cache=",
                                     "-o block_size=",
                                     "-o max_request=",
                                     "-o readahead=",
                                     "-o connections=",
                                     "-f ",
                                     "-d ",
                                     "-s ",
                                     "-o allow_other"};
  for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
    ck_assert_msg(strstr(text, opts[i]), "usage lacks '%s'", opts[i]);
  free(text);
}
END_TEST

START_TEST(free_null) { cli_config_free(NULL); }
END_TEST

/* ---- what libfuse gets ---- */

START_TEST(passed_through_to_libfuse) {
  struct cli_config *c = parse_ok((const char *[]){
      "-f", "-d", "-s", "-o", "allow_other,cache_size=1K,max_threads=4", "src",
      "-o", "default_permissions,fsname=a\\,b", "mnt", "-s", "-oclone_fd", "-o",
      "ro,debug", NULL});
  ck_assert_uint_eq(c->cache_size, 1024);
  assert_fuse_argv(
      c, (const char *[]){"zarrfs", "-o",
                          "allow_other,max_threads=4,default_permissions,"
                          "fsname=a\\,b,clone_fd,ro,debug",
                          "-f", "-d", "-s", "mnt", "-s", NULL});
  cli_config_free(c);
  /* an empty -o option is kept as libfuse keeps it */
  c = parse_ok((const char *[]){"-o", ",cache_size=2K", "s", "m", NULL});
  ck_assert_uint_eq(c->cache_size, 2048);
  assert_fuse_argv(c, (const char *[]){"zarrfs", "-o", "", "m", NULL});
  cli_config_free(c);
}
END_TEST

/* ---- the oracle: libfuse's fuse_opt_parse with a table of our options ---- */

struct oracle_cli {
  char *source, *mountpoint, *cache_size, *max_decode, *attr_timeout,
      *consolidated, *sizes, *decode_threads, *remote_targets,
      *kernel_readahead, *region, *endpoint, *profile, *connect_timeout,
      *stall_timeout, *timeout, *retries, *remote_cache, *block_size,
      *max_request, *readahead, *connections;
  int no_sign_request, requester_pays, help, version;
  char *allow[8];
  int n_allow;
};
enum { ORACLE_HELP, ORACLE_VERSION, ORACLE_ALLOW_ROOT };
#define ORACLE(t, p)                                                           \
  { t, offsetof(struct oracle_cli, p), 1 }
static const struct fuse_opt oracle_opts[] = {
    ORACLE("cache_size=%s", cache_size),
    ORACLE("max_decode=%s", max_decode),
    ORACLE("attr_timeout=%s", attr_timeout),
    ORACLE("consolidated=%s", consolidated),
    ORACLE("sizes=%s", sizes),
    ORACLE("decode_threads=%s", decode_threads),
    ORACLE("remote_targets=%s", remote_targets),
    ORACLE("kernel_readahead=%s", kernel_readahead),
    ORACLE("region=%s", region),
    ORACLE("endpoint=%s", endpoint),
    ORACLE("profile=%s", profile),
    ORACLE("no_sign_request", no_sign_request),
    ORACLE("requester_pays", requester_pays),
    ORACLE("connect_timeout=%s", connect_timeout),
    ORACLE("stall_timeout=%s", stall_timeout),
    ORACLE("timeout=%s", timeout),
    ORACLE("retries=%s", retries),
    ORACLE("remote_cache=%s", remote_cache),
    ORACLE("block_size=%s", block_size),
    ORACLE("max_request=%s", max_request),
    ORACLE("readahead=%s", readahead),
    ORACLE("connections=%s", connections),
    FUSE_OPT_KEY("allow_root=", ORACLE_ALLOW_ROOT),
    FUSE_OPT_KEY("-h", ORACLE_HELP),
    FUSE_OPT_KEY("--help", ORACLE_HELP),
    FUSE_OPT_KEY("-V", ORACLE_VERSION),
    FUSE_OPT_KEY("--version", ORACLE_VERSION),
    FUSE_OPT_END};

/* The oracle's option callback: help, version, target roots, SOURCE and
 * MOUNTPOINT kept; everything else passed to libfuse. */
static int oracle_proc(void *data, const char *arg, int key,
                       struct fuse_args *outargs) {
  (void)outargs;
  struct oracle_cli *c = data;
  switch (key) {
  case ORACLE_HELP:
    c->help = 1;
    return 0;
  case ORACLE_VERSION:
    c->version = 1;
    return 0;
  case ORACLE_ALLOW_ROOT:
    if (c->n_allow < 8)
      c->allow[c->n_allow++] = strdup(arg + strlen("allow_root="));
    return 0;
  case FUSE_OPT_KEY_NONOPT:
    if (!c->source) {
      c->source = strdup(arg);
      return 0;
    }
    if (!c->mountpoint)
      c->mountpoint = strdup(arg);
    return 1;
  default:
    return 1;
  }
}

/* Command lines that both must read alike (NULL ends each, "" too). */
static const char *const oracle_cases[][12] = {
    {"src", "mnt"},
    {"-f", "src", "mnt"},
    {"-o", "ro,allow_other", "-s", "-d", "src", "mnt"},
    {"src", "-o", "cache_size=1K,fsname=x\\,y", "mnt", "-osubtype=z"},
    {"-oallow_root=/a\\054b,allow_root=/c\\\\d", "s", "m", "-o", "fsname=x\\y"},
    {"--", "-s", "m"},
    {"-f", "s", "m", "--"},
    {"-f", "--", "s", "m"},
    {"-o", ",,", "s", "m"},
    {"-o", "region=r,endpoint=http://e,profile=p,no_sign_request", "s", "m"},
    {"-o", "requester_pays,connections=3,retries=2,readahead=0", "s", "m"},
    {"-o", "connect_timeout=1,stall_timeout=2,timeout=3", "s", "m"},
    {"-o", "remote_cache=1M,block_size=1K,max_request=2M", "s", "m"},
    {"-o", "sizes=lazy,consolidated=no,decode_threads=2", "s", "m"},
    {"-o", "remote_targets=no,kernel_readahead=0,attr_timeout=5", "s", "m"},
    {"-s", "s", "-d", "m", "-f"},
    {"-o", "max_decode=1M", "-o", "max_decode=2M", "s", "m"},
    {"-o", "allow_root", "-o", "nodev,nosuid,noatime", "s", "m"},
    {"-o", "debug,max_idle_threads=2", "-oclone_fd", "s", "m"},
};

/* The value the oracle's parse gave for a named option. */
static const char *oracle_value(const struct oracle_cli *o, const char *name) {
  struct {
    const char *name, *val;
  } t[] = {{"cache_size", o->cache_size},
           {"max_decode", o->max_decode},
           {"decode_threads", o->decode_threads},
           {"retries", o->retries}};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    if (!strcmp(t[i].name, name))
      return t[i].val;
  return NULL;
}

START_TEST(same_as_fuse_opt_parse) {
  const char *const *args = oracle_cases[_i];
  char *argv[MAXARGS];
  int argc = mkargv(args, argv);
  struct fuse_args fa = FUSE_ARGS_INIT(argc, argv);
  struct oracle_cli o = {0};
  ck_assert_int_eq(fuse_opt_parse(&fa, &o, oracle_opts, oracle_proc), 0);
  struct cli_config *c = parse_ok(args);
  ck_assert_str_eq(c->source, o.source);
  ck_assert_str_eq(c->mountpoint, o.mountpoint);
  ck_assert_int_eq(c->fuse_argc, fa.argc);
  for (int i = 0; i < fa.argc; i++)
    ck_assert_str_eq(c->fuse_argv[i], fa.argv[i]);
  ck_assert_int_eq((int)c->n_allow_roots, o.n_allow);
  for (int i = 0; i < o.n_allow; i++)
    ck_assert_str_eq(c->allow_roots[i], o.allow[i]);
  ck_assert_int_eq(c->s3.no_sign_request, o.no_sign_request);
  ck_assert_int_eq(c->s3.requester_pays, o.requester_pays);
  if (o.region)
    ck_assert_str_eq(c->s3.region, o.region);
  if (o.endpoint)
    ck_assert_str_eq(c->s3.endpoint, o.endpoint);
  if (o.profile)
    ck_assert_str_eq(c->s3.profile, o.profile);
  /* values the new parse validated from the same strings */
  unsigned long long n;
  const char *v;
  if ((v = oracle_value(&o, "cache_size")) && cli_parse_size(v, &n) == 0)
    ck_assert_uint_eq(c->cache_size, n);
  if ((v = oracle_value(&o, "max_decode")) && cli_parse_size(v, &n) == 0)
    ck_assert_uint_eq(c->max_decode, n);
  if ((v = oracle_value(&o, "decode_threads")))
    ck_assert_int_eq(c->decode_threads, atoi(v));
  if ((v = oracle_value(&o, "retries")))
    ck_assert_int_eq(c->remote.http.max_attempts, atoi(v) + 1);
  cli_config_free(c);
  fuse_opt_free_args(&fa);
  char **strs[] = {&o.source,         &o.mountpoint,
                   &o.cache_size,     &o.max_decode,
                   &o.attr_timeout,   &o.consolidated,
                   &o.sizes,          &o.decode_threads,
                   &o.remote_targets, &o.kernel_readahead,
                   &o.region,         &o.endpoint,
                   &o.profile,        &o.connect_timeout,
                   &o.stall_timeout,  &o.timeout,
                   &o.retries,        &o.remote_cache,
                   &o.block_size,     &o.max_request,
                   &o.readahead,      &o.connections};
  for (size_t i = 0; i < sizeof strs / sizeof *strs; i++)
    free(*strs[i]);
  for (int i = 0; i < o.n_allow; i++)
    free(o.allow[i]);
}
END_TEST

/* ---- cli_parse_size on its own ---- */

START_TEST(parse_size_table) {
  static const struct {
    const char *s;
    int ok;
    unsigned long long v;
  } t[] = {
      {"0", 1, 0},
      {"1", 1, 1},
      {"1b", 1, 1},
      {"1B", 1, 1},
      {"1k", 1, 1024},
      {"1KB", 1, 1024},
      {"1Kb", 1, 1024},
      {"10M", 1, 10ull << 20},
      {"3g", 1, 3ull << 30},
      {"2T", 1, 2ull << 40},
      {"4194304T", 1, 1ull << 62},
      {"4096G", 1, 1ull << 42},
      {"4611686018427387904", 1, 1ull << 62},
      {"+5", 1, 5}, /* strtoull's syntax, as always */
      {" 7K", 1, 7 << 10},
      {"4194305T", 0, 0},
      {"4611686018427387905", 0, 0},
      {"18446744073709551615", 0, 0},
      {"18446744073709551616", 0, 0},
      {"", 0, 0},
      {"K", 0, 0},
      {"1P", 0, 0},
      {"1 K", 0, 0},
      {"1K ", 0, 0},
      {"1BB", 0, 0},
      {"1KiB", 1, 1024},
      {"3MiB", 1, 3u << 20},
      {"2gib", 1, 2ull << 30},
      {"1Ki", 1, 1024},
      {"1iB", 0, 0},
      {"1KiiB", 0, 0},
      {"0x10", 0, 0},
      {"1e3", 0, 0},
      {"-1", 0, 0},
      {"-5K", 0, 0},
  };
  for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
    unsigned long long v = 12345;
    int rc = cli_parse_size(t[i].s, &v);
    ck_assert_msg(rc == (t[i].ok ? 0 : -1), "'%s': rc %d", t[i].s, rc);
    ck_assert_msg(v == (t[i].ok ? t[i].v : 12345), "'%s': %llu", t[i].s, v);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("cli");
  TCase *tc = tcase_create("cli");
  tcase_add_test(tc, defaults);
  tcase_add_test(tc, sizes_default_by_source);
  tcase_add_loop_test(tc, valid_option, 0, (int)(sizeof valid / sizeof *valid));
  tcase_add_test(tc, s3_strings);
  tcase_add_test(tc, allow_roots_in_order);
  tcase_add_test(tc, nonempty_is_ours);
  tcase_add_test(tc, masks_over_umask);
  tcase_add_test(tc, allow_other_implies_default_permissions);
  tcase_add_test(tc, log_options);
  tcase_add_test(tc, icechunk_options);
  tcase_add_test(tc, views_option);
  tcase_add_loop_test(tc, refused_option, 0,
                      (int)(sizeof refusals / sizeof *refusals));
  tcase_add_test(tc, last_value_wins);
  tcase_add_test(tc, first_refusal_named);
  tcase_add_test(tc, missing_and_extra_arguments);
  tcase_add_test(tc, tool_commands);
  tcase_add_test(tc, no_argv_at_all);
  tcase_add_test(tc, double_dash);
  tcase_add_test(tc, option_groups_and_escapes);
  tcase_add_test(tc, help_and_version);
  tcase_add_test(tc, usage_names_every_option);
  tcase_add_test(tc, free_null);
  tcase_add_test(tc, passed_through_to_libfuse);
  tcase_add_test(tc, unknown_arguments_refused);
  tcase_add_loop_test(tc, same_as_fuse_opt_parse, 0,
                      (int)(sizeof oracle_cases / sizeof *oracle_cases));
  tcase_add_test(tc, parse_size_table);
  suite_add_tcase(s, tc);
  return testutil_run(s);
}
