/* cli.h - the command line: argv into a validated struct cli_config.
 *
 * FUSE-free, so the unit tests drive it directly (tests/unit/base/check_cli.c). It
 * owns the meaning of every zarrfs option, the defaults, the refusals and
 * the usage text; what belongs to libfuse (-f, -d, -s, -o allow_other,
 * -o max_threads=N, unknown options, ...) is passed through untouched in
 * cli_config.fuse_argv, which fs/main.c hands to libfuse.
 *
 * Tokenizing follows libfuse's fuse_opt_parse exactly, so that moving the
 * parsing here changed nothing a user can see: "-o a,b" and "-oa,b";
 * options may come before, between or after SOURCE and MOUNTPOINT; inside
 * -o, "\," is a literal comma, "\\" a backslash and "\NNN" an octal byte;
 * "--" makes every later argument a non-option; a repeated option keeps its
 * last value (only the last is validated); options we do not know are kept
 * for libfuse, those from -o groups joined into one "-o" argument at
 * position 1, as fuse_opt_parse does. */
#ifndef ZARRFS_CLI_H
#define ZARRFS_CLI_H

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../net/remote.h"
#include "../util/err.h"

/* What the command line asks for. */
enum cli_action {
  CLI_MOUNT,   /* mount SOURCE at MOUNTPOINT */
  CLI_HELP,    /* -h, --help (wins over everything but a syntax error) */
  CLI_VERSION, /* -V, --version */
  CLI_TOOL,    /* zarrfs ls|cat|stat|info SOURCE [PATH...]: no mount */
};

/* The commands that read a store without mounting it (fs/cmd.h): the
 * first non-option argument, when it is one of these words, names one. */
enum cli_tool {
  CLI_TOOL_LS = 1, /* the names in a directory, sorted */
  CLI_TOOL_CAT,    /* the bytes of files */
  CLI_TOOL_STAT,   /* kind and size of names */
  CLI_TOOL_INFO,   /* an array's or group's metadata, readable */
};

/* The defaults of the options below. */
#define CLI_DEFAULT_CACHE_SIZE (256ull << 20)
#define CLI_DEFAULT_MAX_DECODE (1ull << 30)
#define CLI_DEFAULT_ATTR_TIMEOUT 3600.0
/* Seconds a lookup or stat waits for a view's size to be learned (-o
 * size_wait): past that, or when learning it would take longer, stat
 * shows 0 and says so again until the size is known. */
#define CLI_DEFAULT_SIZE_WAIT 2.0
#define CLI_DEFAULT_KERNEL_READAHEAD (1u << 20)
#define CLI_MAX_KERNEL_READAHEAD (1u << 30)
#define CLI_MAX_DECODE_THREADS 64

/* S3 settings from the command line (strings owned by the config; NULL
 * when not given). */
struct cli_s3 {
  char *region, *endpoint, *profile;
  int no_sign_request, requester_pays;
};

/* A parsed, validated command line. Owned by the caller of cli_parse
 * (cli_config_free). With action CLI_HELP or CLI_VERSION only action and
 * fuse_argv are meaningful: nothing else was validated. */
struct cli_config {
  enum cli_action action;
  char *source;       /* SOURCE: a directory, file or URL */
  char *mountpoint;   /* MOUNTPOINT as given (also in fuse_argv);
                         NULL for CLI_TOOL */
  enum cli_tool tool; /* CLI_TOOL: which command */
  char **paths;       /* CLI_TOOL: the PATHs in the store, in order
                         (none: the root) */
  size_t n_paths;
  size_t cache_size;         /* -o cache_size, bytes (0 allowed) */
  size_t max_decode;         /* -o max_decode, bytes, > 0 */
  double attr_timeout;       /* -o attr_timeout, seconds, >= 0 */
  double size_wait;          /* -o size_wait, seconds, >= 0 */
  unsigned kernel_readahead; /* -o kernel_readahead, bytes (0: the
                                kernel's own), at most 1 GiB */
  int no_consolidated;       /* -o consolidated=no */
  int lazy_sizes;            /* -o sizes=lazy; default: SOURCE is a URL */
  int decode_threads;        /* -o decode_threads, 0..64; default the
                                number of cores, at most 16 */
  char *index_cache;         /* -o index_cache: the persistent size
                                index's directory (owned), or NULL: none
                                (index_cache=none, or no default) */
  size_t index_cache_size;   /* -o index_cache_size, bytes (0: the
                                index's default cap) */
  int remote_targets;        /* -o remote_targets: 1 yes (default), 0 no */
  char *log_file;            /* -o log_file=PATH, or NULL */
  int log_level;             /* -o log_level: an enum zlog_level value
                                (3 error, 4 warn, 6 info, 7 debug), or 0:
                                the default */
  int xattrs;                /* -o xattr: user.zarr.* attributes */
  int views;                 /* -o views: 0 beside (default), 1 tree,
                                2 none (enum engine_views) */
  int nonempty;              /* -o nonempty: mount over a non-empty
                                directory */
  long long uid, gid;        /* -o uid=, gid=: the owner every file shows;
                                -1: the mounting user's (default) */
  int fmask, dmask;          /* -o umask= (both), fmask=, dmask=: permission
                                bits taken from files (0444) and
                                directories (0555); default 0 */
  int default_permissions;   /* libfuse gets -o default_permissions (the
                                kernel enforces the modes and owners stat
                                shows): 0 no, 1 given, 2 implied by
                                allow_other with any of uid, gid, umask,
                                fmask, dmask (-o no_default_permissions
                                opts out) */
  char *ref;                 /* -o ref=NAME: an Icechunk branch or tag,
                                or NULL (branch main) */
  char *snapshot;            /* -o snapshot=ID: an Icechunk snapshot id
                                (20 characters), or NULL; not both */
  char **allow_roots;        /* -o target_root=DIR|URL (alias
                                allow_root=), in order given */
  size_t n_allow_roots;
  char **endpoints;          /* -o container_endpoint=URL: S3 endpoints
                                Icechunk containers may name */
  size_t n_endpoints;
  struct remote_config remote; /* remote_config_default + -o connect_timeout,
                                  stall_timeout, timeout, retries,
                                  remote_cache, block_size, max_request,
                                  readahead, connections */
  struct cli_s3 s3;            /* -o region, endpoint, profile,
                                  no_sign_request, requester_pays */
  int fuse_argc;               /* arguments for libfuse: argv[0], the options */
  char **fuse_argv;            /* kept for libfuse, MOUNTPOINT; NULL-ended */
};

/* Parse and validate argv (argv[0] is the program name). On success 0 and
 * a new config in *out (owned by the caller). A command line zarrfs
 * refuses is -EINVAL with a one-line reason in err, to be printed as
 * "zarrfs: REASON" (no "zarrfs: " in it); out of memory is -ENOMEM. *out
 * is NULL on failure. Reads no file: SOURCE and MOUNTPOINT are checked by
 * the caller. */
int cli_parse(int argc, char *const *argv, struct cli_config **out,
              struct zerr *err);

/* Free a config; NULL-safe. */
void cli_config_free(struct cli_config *c);

/* The name of a command ("ls", ...). */
const char *cli_tool_name(enum cli_tool t);

/* The commands, as a refusal of a mistyped one lists them. */
#define CLI_TOOLS_TEXT "ls, cat, stat, info"

/* Could arg, taken as SOURCE because it names no command, be a mistyped
 * command: a plain word (letters, digits, '-' and '_' only: no path, no
 * file name with a dot, no URL)? The first
 * non-option is a command only when it names one, else it is SOURCE
 * (`zarrfs SOURCE MOUNTPOINT` keeps working with any SOURCE); a refusal
 * of such a SOURCE (it names nothing that exists, or MOUNTPOINT is
 * missing) then says that it is not a command either. */
static inline int cli_maybe_command(const char *arg) {
  return *arg &&
         strspn(arg, "abcdefghijklmnopqrstuvwxyz"
                     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") == strlen(arg);
}

/* Print the usage text (zarrfs's own options; libfuse's follow it) to f
 * (cli_usage.c). */
void cli_usage(FILE *f, const char *prog);

/* "256M" -> bytes in *out: decimal digits, then optionally K, M, G or T
 * (either case, powers of 1024) and then optionally i (KiB, MiB: the same
 * powers), then optionally B or b. At most 2^62.
 * Returns 0, or -1 when s is not such a size (nothing stored). */
int cli_parse_size(const char *s, unsigned long long *out);

#endif
