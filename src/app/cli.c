/* cli.c - the command line (see cli.h): tokenizing as libfuse's
 * fuse_opt_parse does, the table of zarrfs's own options, their
 * validation into a struct cli_config. FUSE-free. The usage text is in
 * cli_usage.c. */
#define _GNU_SOURCE /* asprintf */
#include "cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* zarrfs's own options that take a value ("NAME=VALUE"). */
enum cli_opt {
  CLI_OPT_CACHE_SIZE,
  CLI_OPT_MAX_DECODE,
  CLI_OPT_ATTR_TIMEOUT,
  CLI_OPT_CONSOLIDATED,
  CLI_OPT_SIZES,
  CLI_OPT_DECODE_THREADS,
  CLI_OPT_REMOTE_TARGETS,
  CLI_OPT_KERNEL_READAHEAD,
  CLI_OPT_REGION,
  CLI_OPT_ENDPOINT,
  CLI_OPT_PROFILE,
  CLI_OPT_CONNECT_TIMEOUT,
  CLI_OPT_STALL_TIMEOUT,
  CLI_OPT_TIMEOUT,
  CLI_OPT_RETRIES,
  CLI_OPT_REMOTE_CACHE,
  CLI_OPT_BLOCK_SIZE,
  CLI_OPT_MAX_REQUEST,
  CLI_OPT_READAHEAD,
  CLI_OPT_CONNECTIONS,
  CLI_OPT_LOG_FILE,
  CLI_OPT_LOG_LEVEL,
  CLI_OPT_VIEWS,
  CLI_OPT_UID, /* ownership and permissions, together */
  CLI_OPT_GID,
  CLI_OPT_UMASK,
  CLI_OPT_FMASK,
  CLI_OPT_DMASK,
  CLI_OPT_REF, /* Icechunk: which tree */
  CLI_OPT_SNAPSHOT,
  CLI_OPT_INDEX_CACHE,
  CLI_OPT_INDEX_CACHE_SIZE,
  CLI_OPT_SIZE_WAIT,
  CLI_OPT_COUNT
};

/* Their names, by enum cli_opt. */
static const char *const cli_opt_names[CLI_OPT_COUNT] = {
    "cache_size",    "max_decode",     "attr_timeout",   "consolidated",
    "sizes",         "decode_threads", "remote_targets", "kernel_readahead",
    "region",        "endpoint",       "profile",        "connect_timeout",
    "stall_timeout", "timeout",        "retries",        "remote_cache",
    "block_size",    "max_request",    "readahead",      "connections",
    "log_file",      "log_level",      "views",          "uid",
    "gid",           "umask",          "fmask",          "dmask",
    "ref",           "snapshot",       "index_cache",    "index_cache_size",
    "size_wait"};

/* The parse in progress. */
struct cli_parser {
  struct cli_config *c;
  char *value[CLI_OPT_COUNT]; /* last value of each option (owned) */
  char *kept_opts; /* -o options for libfuse, escaped and comma-joined */
  int help, version;
  int nonopt;          /* after "--": the index in fuse_argv past it, else 0 */
  char *extra;         /* a third non-option (owned), refused after --help */
  struct zerr unknown; /* the first unknown option, refused after --help */
  int first_nonopt_seen; /* the command word can only be the first */
  int allow_other;       /* -o allow_other was given (kept for libfuse) */
  int defperm;           /* -o default_permissions was given (kept) */
  int no_defperm;        /* -o no_default_permissions (ours) */
  size_t argv_cap;       /* slots allocated in c->fuse_argv */
  struct zerr *err;
};

/* The out-of-memory refusal. */
static int cli_nomem(struct cli_parser *p) {
  return zerr_set(p->err, ENOMEM, "out of memory parsing the command line");
}

/* Append a copy of arg to fuse_argv (kept NULL-terminated). */
static int cli_keep_arg(struct cli_parser *p, const char *arg) {
  struct cli_config *c = p->c;
  if ((size_t)c->fuse_argc + 2 > p->argv_cap) {
    size_t cap = p->argv_cap ? 2 * p->argv_cap : 8;
    char **v = realloc(c->fuse_argv, cap * sizeof *v);
    if (!v)
      return cli_nomem(p);
    c->fuse_argv = v;
    p->argv_cap = cap;
  }
  if (!(c->fuse_argv[c->fuse_argc] = strdup(arg)))
    return cli_nomem(p);
  c->fuse_argv[++c->fuse_argc] = NULL;
  return 0;
}

/* Insert a copy of arg into fuse_argv at position pos. */
static int cli_insert_arg(struct cli_parser *p, int pos, const char *arg) {
  ZTRY(cli_keep_arg(p, arg));
  char **v = p->c->fuse_argv;
  char *last = v[p->c->fuse_argc - 1];
  memmove(v + pos + 1, v + pos,
          (size_t)(p->c->fuse_argc - 1 - pos) * sizeof *v);
  v[pos] = last;
  return 0;
}

/* Add one -o option for libfuse, escaping ',' and '\' as fuse_opt does. */
static int cli_keep_opt(struct cli_parser *p, const char *opt) {
  size_t old = p->kept_opts ? strlen(p->kept_opts) : 0;
  char *d = realloc(p->kept_opts, old + 1 + 2 * strlen(opt) + 1);
  if (!d)
    return cli_nomem(p);
  p->kept_opts = d;
  d += old;
  if (old)
    *d++ = ',';
  for (; *opt; opt++) {
    if (*opt == ',' || *opt == '\\')
      *d++ = '\\';
    *d++ = *opt;
  }
  *d = '\0';
  return 0;
}

/* Append a copy of s to a growable array of strings. */
static int cli_push(char ***list, size_t *n, const char *s) {
  char **l = realloc(*list, (*n + 1) * sizeof *l);
  if (!l)
    return -ENOMEM;
  *list = l;
  if (!(l[*n] = strdup(s)))
    return -ENOMEM;
  (*n)++;
  return 0;
}

/* The -o options zarrfs passes on to libfuse and the kernel: the generic
 * mount flags (mount(8) and fstab lines give them), libfuse's mount and
 * session options that mean something for a read-only low-level file
 * system. A name ending in '=' takes a value. Anything else is refused
 * here with zarrfs's own message: libfuse would print "fuse: unknown
 * option" or, worse, accept an option of its high-level API that does
 * nothing here. */
static const char cli_fuse_opts[] =
    " ro rw dev nodev suid nosuid exec noexec atime noatime diratime"
    " nodiratime relatime norelatime strictatime nostrictatime lazytime"
    " nolazytime sync async dirsync symfollow nosymfollow allow_other"
    " allow_root auto_unmount default_permissions blkdev fsname="
    " subtype= max_read= blksize= context= fscontext= defcontext="
    " rootcontext= debug clone_fd max_threads= max_idle_threads= ";

/* Is opt (from a -o group) one of cli_fuse_opts? " NAME " or, with a
 * value, " NAME= " must be in it. */
static int cli_fuse_opt_known(const char *opt) {
  char key[64];
  size_t n = strcspn(opt, "=");
  if (n + 4 > sizeof key)
    return 0;
  key[0] = ' ';
  memcpy(key + 1, opt, n);
  if (opt[n] == '=')
    key[++n] = '=';
  memcpy(key + n + 1, " ", 2);
  return strstr(cli_fuse_opts, key) != NULL;
}

/* Keep an option for libfuse; one zarrfs does not know is recorded (the
 * first only) and refused once --help and --version have had their say. */
static int cli_keep_fuse(struct cli_parser *p, const char *opt, int in_group) {
  if (p->unknown.code)
    return 0;
  if (!in_group) {
    /* arguments of their own: libfuse's -f, -d and -s */
    if (!strcmp(opt, "-f") || !strcmp(opt, "-d") || !strcmp(opt, "-s"))
      return cli_keep_arg(p, opt);
    zerr_set(&p->unknown, EINVAL, "unknown option '%s' (try --help)", opt);
    return 0;
  }
  /* an empty option ("-o ,,") is nothing, as libfuse takes it */
  if (!*opt || cli_fuse_opt_known(opt))
    return cli_keep_opt(p, opt);
  if (!strncmp(opt, "modules=", 8))
    zerr_set(&p->unknown, EINVAL,
             "-o %s is not supported (libfuse's stacking modules work only "
             "with its high-level API; zarrfs uses the low-level one)",
             opt);
  else
    zerr_set(&p->unknown, EINVAL, "unknown option '-o %s' (try --help)", opt);
  return 0;
}

/* One option (from a -o group, in_group, or an argument of its own): ours
 * is recorded, anything else kept for libfuse. */
static int cli_option(struct cli_parser *p, const char *opt, int in_group) {
  if (!strcmp(opt, "-h") || !strcmp(opt, "--help")) {
    p->help = 1;
    return 0;
  }
  if (!strcmp(opt, "-V") || !strcmp(opt, "--version")) {
    p->version = 1;
    return 0;
  }
  if (!strcmp(opt, "no_sign_request")) {
    p->c->s3.no_sign_request = 1;
    return 0;
  }
  if (!strcmp(opt, "requester_pays")) {
    p->c->s3.requester_pays = 1;
    return 0;
  }
  if (!strcmp(opt, "nonempty")) {
    p->c->nonempty = 1;
    return 0;
  }
  if (!strcmp(opt, "xattr")) {
    p->c->xattrs = 1;
    return 0;
  }
  if (!strcmp(opt, "no_default_permissions")) {
    p->no_defperm = 1;
    return 0;
  }
  if (in_group && !strcmp(opt, "allow_other"))
    p->allow_other = 1; /* and kept for libfuse, below */
  if (in_group && !strcmp(opt, "default_permissions"))
    p->defperm = 1;
  /* target_root=DIR; allow_root=DIR is an alias (plain allow_root,
   * without a value, is libfuse's and passes through) */
  const char *root = !strncmp(opt, "target_root=", 12)  ? opt + 12
                     : !strncmp(opt, "allow_root=", 11) ? opt + 11
                                                        : NULL;
  if (root)
    return cli_push(&p->c->allow_roots, &p->c->n_allow_roots, root) < 0
               ? cli_nomem(p)
               : 0;
  if (!strncmp(opt, "container_endpoint=", 19))
    return cli_push(&p->c->endpoints, &p->c->n_endpoints, opt + 19) < 0
               ? cli_nomem(p)
               : 0;
  for (int i = 0; i < CLI_OPT_COUNT; i++) {
    size_t n = strlen(cli_opt_names[i]);
    if (!strncmp(opt, cli_opt_names[i], n) && opt[n] == '=') {
      char *v = strdup(opt + n + 1);
      if (!v)
        return cli_nomem(p);
      free(p->value[i]); /* the last one given counts */
      p->value[i] = v;
      return 0;
    }
  }
  return cli_keep_fuse(p, opt, in_group);
}

/* The options of one -o argument: split at commas, unescaping "\," "\\"
 * and "\NNN" (octal) as fuse_opt does. */
static int cli_option_group(struct cli_parser *p, const char *group) {
  char *opt = strdup(group);
  if (!opt)
    return cli_nomem(p);
  char *d = opt;
  int rc = 0;
  for (const char *s = group;; s++) {
    if (*s == ',' || *s == '\0') {
      *d = '\0';
      if ((rc = cli_option(p, opt, 1)) < 0 || *s == '\0')
        break;
      d = opt;
    } else if (s[0] == '\\' && s[1] != '\0') {
      s++;
      if (s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' &&
          s[2] >= '0' && s[2] <= '7') {
        *d++ = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
        s += 2;
      } else {
        *d++ = *s;
      }
    } else {
      *d++ = *s;
    }
  }
  free(opt);
  return rc;
}

/* A non-option: SOURCE (ours), then MOUNTPOINT (also libfuse's), then one
 * too many (refused once --help and --version have had their say). */
static int cli_nonoption(struct cli_parser *p, const char *arg) {
  struct cli_config *c = p->c;
  if (!p->first_nonopt_seen) {
    p->first_nonopt_seen = 1;
    for (enum cli_tool t = CLI_TOOL_LS; t <= CLI_TOOL_INFO; t++)
      if (!strcmp(arg, cli_tool_name(t))) {
        c->tool = t;
        return 0;
      }
  }
  if (c->tool && c->source) { /* a command's PATHs */
    char **np = realloc(c->paths, (c->n_paths + 1) * sizeof *np);
    if (!np)
      return cli_nomem(p);
    c->paths = np;
    if (!(np[c->n_paths] = strdup(arg)))
      return cli_nomem(p);
    c->n_paths++;
    return 0;
  }
  char **slot = !p->c->source       ? &p->c->source
                : !p->c->mountpoint ? &p->c->mountpoint
                : !p->extra         ? &p->extra
                                    : NULL;
  if (!slot)
    return 0; /* the first extra one is named */
  if (!(*slot = strdup(arg)))
    return cli_nomem(p);
  return slot == &p->c->mountpoint ? cli_keep_arg(p, arg) : 0;
}

/* Modes other users are shown are modes they are held to: with
 * allow_other, any of uid=, gid=, umask=, fmask=, dmask= adds
 * default_permissions for libfuse (the kernel then checks the modes and
 * owners stat shows; without it every user reads every file whatever it
 * shows), unless no_default_permissions opts out. As s3fs and rclone
 * users expect. */
static int cli_implied_permissions(struct cli_parser *p) {
  int owner = 0;
  for (int o = CLI_OPT_UID; o <= CLI_OPT_DMASK; o++)
    owner |= p->value[o] != NULL;
  p->c->default_permissions = p->defperm ? 1 : 0;
  if (!p->allow_other || !owner || p->defperm || p->no_defperm)
    return 0;
  p->c->default_permissions = 2;
  return cli_keep_opt(p, "default_permissions");
}

/* Walk argv as fuse_opt_parse does. */
static int cli_tokenize(struct cli_parser *p, int argc, char *const *argv) {
  ZTRY(cli_keep_arg(p, argc > 0 && argv[0] ? argv[0] : "zarrfs"));
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (p->nonopt || a[0] != '-') {
      ZTRY(cli_nonoption(p, a));
    } else if (a[1] == 'o') {
      if (!a[2] && i + 1 >= argc)
        return zerr_set(p->err, EINVAL, "missing argument after '-o'");
      ZTRY(cli_option_group(p, a[2] ? a + 2 : argv[++i]));
    } else if (a[1] == '-' && !a[2]) {
      ZTRY(cli_keep_arg(p, a));
      p->nonopt = p->c->fuse_argc;
    } else {
      ZTRY(cli_option(p, a, 0));
    }
  }
  ZTRY(cli_implied_permissions(p));
  if (p->kept_opts) {
    ZTRY(cli_insert_arg(p, 1, "-o"));
    ZTRY(cli_insert_arg(p, 2, p->kept_opts));
  }
  /* a "--" that ended up last is dropped, as fuse_opt_parse does */
  struct cli_config *c = p->c;
  if (p->nonopt && p->nonopt == c->fuse_argc &&
      !strcmp(c->fuse_argv[c->fuse_argc - 1], "--")) {
    free(c->fuse_argv[--c->fuse_argc]);
    c->fuse_argv[c->fuse_argc] = NULL;
  }
  return 0;
}

/* The accepted syntax of a size (see cli.h); strtoull's own prefix
 * (blanks, a sign) is accepted as it always was. */
int cli_parse_size(const char *s, unsigned long long *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s)
    return -1;
  unsigned long long mul = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    mul = 1ull << 10;
    break;
  case 'M':
    mul = 1ull << 20;
    break;
  case 'G':
    mul = 1ull << 30;
    break;
  case 'T':
    mul = 1ull << 40;
    break;
  default:
    break;
  }
  if (mul > 1) {
    end++;
    if (*end == 'i') /* KiB, MiB, ...: the same powers of 1024 */
      end++;
  }
  if (*end == 'B' || *end == 'b')
    end++;
  if (*end || v > (1ull << 62) / mul)
    return -1;
  *out = v * mul;
  return 0;
}

/* What a refused size is told it may use. */
#define CLI_SIZE_UNITS "units K, M, G, T or KiB, MiB, GiB, TiB"

/* A size option in [min, max] into *dst (unchanged when not given). */
static int cli_size(const struct cli_parser *p, enum cli_opt o,
                    unsigned long long min, unsigned long long max,
                    const char *hint, size_t *dst) {
  const char *v = p->value[o];
  unsigned long long n;
  if (!v)
    return 0;
  if (cli_parse_size(v, &n) < 0 || n < min || n > max)
    return zerr_set(p->err, EINVAL, "bad %s '%s' (%s; %s)", cli_opt_names[o], v,
                    hint, CLI_SIZE_UNITS);
  *dst = (size_t)n;
  return 0;
}

/* An integer option in [min, max] into *dst (unchanged when not given). */
static int cli_count(const struct cli_parser *p, enum cli_opt o, long min,
                     long max, int *dst) {
  const char *v = p->value[o];
  if (!v)
    return 0;
  char *end;
  errno = 0;
  long n = strtol(v, &end, 10);
  if (errno || end == v || *end || n < min || n > max)
    return zerr_set(p->err, EINVAL, "bad %s '%s' (%ld to %ld)",
                    cli_opt_names[o], v, min, max);
  *dst = (int)n;
  return 0;
}

/* A remote time bound in seconds (a decimal number, above 0, at most a
 * week) into milliseconds in *dst (unchanged when not given). */
static int cli_seconds(const struct cli_parser *p, enum cli_opt o, long *dst) {
  const char *v = p->value[o];
  if (!v)
    return 0;
  char *end;
  double s = strtod(v, &end);
  if (end == v || *end || !(s > 0) || s > 86400 * 7)
    return zerr_set(p->err, EINVAL, "bad %s '%s' (seconds, e.g. 30 or 0.5)",
                    cli_opt_names[o], v);
  *dst = (long)(s * 1000);
  return 0;
}

/* A choice between two words into *dst: 1 for `one`, 0 for `zero`. */
static int cli_choice(const struct cli_parser *p, enum cli_opt o,
                      const char *one, const char *zero, int *dst) {
  const char *v = p->value[o];
  if (!v)
    return 0;
  if (strcmp(v, one) && strcmp(v, zero))
    return zerr_set(p->err, EINVAL, "bad %s '%s' (%s or %s)", cli_opt_names[o],
                    v, one, zero);
  *dst = !strcmp(v, one);
  return 0;
}

/* An owner id (uid=, gid=): decimal, 0 .. 2^32-2 ((uid_t)-1 means "no
 * change" to chown, so no file can show it). */
static int cli_id(const struct cli_parser *p, enum cli_opt o, long long *dst) {
  const char *v = p->value[o];
  if (!v)
    return 0;
  char *end;
  errno = 0;
  unsigned long long id = strtoull(v, &end, 10);
  if (!isdigit((unsigned char)*v) || *end || errno || id > 0xfffffffeull)
    return zerr_set(p->err, EINVAL, "bad %s '%s' (a number, 0 to 4294967294)",
                    cli_opt_names[o], v);
  *dst = (long long)id;
  return 0;
}

/* A permission mask (umask=, fmask=, dmask=): octal, 0 to 777. */
static int cli_mask(const struct cli_parser *p, enum cli_opt o, int *dst) {
  const char *v = p->value[o];
  if (!v)
    return 0;
  char *end;
  unsigned long m = strtoul(v, &end, 8);
  if (!isdigit((unsigned char)*v) || *end || m > 0777)
    return zerr_set(p->err, EINVAL, "bad %s '%s' (octal, 0 to 777)",
                    cli_opt_names[o], v);
  *dst = (int)m;
  return 0;
}

/* uid=, gid=, umask=, fmask=, dmask= into the config: umask is the mask
 * of both kinds, fmask and dmask override it for files and directories. */
static int cli_owner(struct cli_parser *p) {
  struct cli_config *c = p->c;
  int um = 0;
  if (p->defperm && p->no_defperm)
    return zerr_set(p->err, EINVAL,
                    "default_permissions and no_default_permissions "
                    "exclude each other");
  ZTRY(cli_id(p, CLI_OPT_UID, &c->uid));
  ZTRY(cli_id(p, CLI_OPT_GID, &c->gid));
  ZTRY(cli_mask(p, CLI_OPT_UMASK, &um));
  c->fmask = c->dmask = um;
  ZTRY(cli_mask(p, CLI_OPT_FMASK, &c->fmask));
  return cli_mask(p, CLI_OPT_DMASK, &c->dmask);
}

/* The persistent size index's directory: -o index_cache=DIR, none, or
 * by default $XDG_CACHE_HOME/zarrfs, else $HOME/.cache/zarrfs (none
 * when neither is set). */
static int cli_index(struct cli_parser *p) {
  struct cli_config *c = p->c;
  const char *v = p->value[CLI_OPT_INDEX_CACHE];
  ZTRY(cli_size(p, CLI_OPT_INDEX_CACHE_SIZE, 4096, 1ull << 50,
                "a size such as 64M", &c->index_cache_size));
  if (v && !*v)
    return zerr_set(p->err, EINVAL,
                    "bad index_cache '' (a directory, or none)");
  if (v) {
    if (strcmp(v, "none")) {
      c->index_cache = p->value[CLI_OPT_INDEX_CACHE]; /* taken over */
      p->value[CLI_OPT_INDEX_CACHE] = NULL;
    }
    return 0;
  }
  const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
  int rc = 0;
  if (x && *x == '/')
    rc = asprintf(&c->index_cache, "%s/zarrfs", x);
  else if (h && *h == '/')
    rc = asprintf(&c->index_cache, "%s/.cache/zarrfs", h);
  if (rc < 0) {
    c->index_cache = NULL;
    return zerr_set(p->err, ENOMEM, "out of memory");
  }
  return 0;
}

/* Validate the values of zarrfs's options into the config, in the order
 * of the usage text. */
static int cli_validate(struct cli_parser *p) {
  struct cli_config *c = p->c;
  const unsigned long long big = 1ull << 62;
  ZTRY(cli_size(p, CLI_OPT_CACHE_SIZE, 0, big, "a size such as 256M",
                &c->cache_size));
  ZTRY(cli_size(p, CLI_OPT_MAX_DECODE, 1, big, "a size such as 1G",
                &c->max_decode));
  size_t ra = c->kernel_readahead;
  ZTRY(cli_size(p, CLI_OPT_KERNEL_READAHEAD, 0, CLI_MAX_KERNEL_READAHEAD,
                "a size up to 1G, such as 1M", &ra));
  c->kernel_readahead = (unsigned)ra;
  const char *at = p->value[CLI_OPT_ATTR_TIMEOUT];
  if (at) {
    char *end;
    c->attr_timeout = strtod(at, &end);
    if (end == at || *end || isnan(c->attr_timeout) || c->attr_timeout < 0)
      return zerr_set(p->err, EINVAL,
                      "bad attr_timeout '%s' (seconds, 0 or more)", at);
  }
  const char *sw = p->value[CLI_OPT_SIZE_WAIT];
  if (sw) {
    char *end;
    c->size_wait = strtod(sw, &end);
    if (end == sw || *end || isnan(c->size_wait) || c->size_wait < 0 ||
        c->size_wait > 1e6)
      return zerr_set(p->err, EINVAL,
                      "bad size_wait '%s' (seconds, 0 to 1000000)", sw);
  }
  int consolidated = 1;
  ZTRY(cli_choice(p, CLI_OPT_CONSOLIDATED, "yes", "no", &consolidated));
  c->no_consolidated = !consolidated;
  int exact = !c->lazy_sizes;
  ZTRY(cli_choice(p, CLI_OPT_SIZES, "exact", "lazy", &exact));
  c->lazy_sizes = !exact;
  ZTRY(cli_count(p, CLI_OPT_DECODE_THREADS, 0, CLI_MAX_DECODE_THREADS,
                 &c->decode_threads));
  ZTRY(cli_choice(p, CLI_OPT_REMOTE_TARGETS, "yes", "no", &c->remote_targets));
  struct remote_config *r = &c->remote;
  ZTRY(cli_seconds(p, CLI_OPT_CONNECT_TIMEOUT, &r->http.connect_ms));
  ZTRY(cli_seconds(p, CLI_OPT_STALL_TIMEOUT, &r->http.stall_ms));
  ZTRY(cli_seconds(p, CLI_OPT_TIMEOUT, &r->http.op_ms));
  const char *sz = "a size such as 64K or 8M";
  ZTRY(cli_size(p, CLI_OPT_REMOTE_CACHE, 1, big, sz, &r->cache_size));
  ZTRY(cli_size(p, CLI_OPT_BLOCK_SIZE, 1, big, sz, &r->block_size));
  ZTRY(cli_size(p, CLI_OPT_MAX_REQUEST, 1, big, sz, &r->max_request));
  ZTRY(cli_size(p, CLI_OPT_READAHEAD, 0, big, sz, &r->readahead));
  int retries = r->http.max_attempts - 1;
  ZTRY(cli_count(p, CLI_OPT_RETRIES, 0, 100, &retries));
  r->http.max_attempts = retries + 1; /* retries after the first attempt */
  ZTRY(cli_count(p, CLI_OPT_CONNECTIONS, 1, 1024, &r->http.max_conns));
  const char *vw = p->value[CLI_OPT_VIEWS];
  if (vw) {
    static const char *const modes[] = {"beside", "tree", "none"};
    c->views = -1;
    for (int i = 0; i < 3; i++)
      if (!strcmp(vw, modes[i]))
        c->views = i;
    if (c->views < 0)
      return zerr_set(p->err, EINVAL, "bad views '%s' (beside, tree or none)",
                      vw);
  }
  ZTRY(cli_owner(p));
  const char *lv = p->value[CLI_OPT_LOG_LEVEL];
  if (lv) {
    static const struct {
      const char *name;
      int level;
    } levels[] = {{"error", 3}, {"warn", 4}, {"info", 6}, {"debug", 7}};
    c->log_level = 0;
    for (size_t i = 0; i < sizeof levels / sizeof *levels; i++)
      if (!strcmp(lv, levels[i].name))
        c->log_level = levels[i].level;
    if (!c->log_level)
      return zerr_set(p->err, EINVAL,
                      "bad log_level '%s' (error, warn, info or debug)", lv);
  }
  if (p->value[CLI_OPT_LOG_FILE] && !*p->value[CLI_OPT_LOG_FILE])
    return zerr_set(p->err, EINVAL, "bad log_file '' (a file name)");
  c->log_file = p->value[CLI_OPT_LOG_FILE]; /* taken over from the parser */
  p->value[CLI_OPT_LOG_FILE] = NULL;
  const char *ref = p->value[CLI_OPT_REF], *snap = p->value[CLI_OPT_SNAPSHOT];
  if (ref && (!*ref || strchr(ref, '/')))
    return zerr_set(p->err, EINVAL, "bad ref '%s' (a branch or tag name)", ref);
  if (snap && (strlen(snap) != 20 ||
               strspn(snap, "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
                            "abcdefghjkmnpqrstvwxyzOoIiLl") != 20))
    return zerr_set(p->err, EINVAL,
                    "bad snapshot '%s' (an Icechunk snapshot id: 20 "
                    "characters of Crockford base 32)",
                    snap);
  if (ref && snap)
    return zerr_set(p->err, EINVAL, "ref and snapshot exclude each other");
  c->ref = p->value[CLI_OPT_REF]; /* taken over from the parser */
  c->snapshot = p->value[CLI_OPT_SNAPSHOT];
  p->value[CLI_OPT_REF] = p->value[CLI_OPT_SNAPSHOT] = NULL;
  ZTRY(cli_index(p));
  char **s3[] = {&c->s3.region, &c->s3.endpoint, &c->s3.profile};
  enum cli_opt s3o[] = {CLI_OPT_REGION, CLI_OPT_ENDPOINT, CLI_OPT_PROFILE};
  for (size_t i = 0; i < 3; i++) { /* taken over from the parser */
    *s3[i] = p->value[s3o[i]];
    p->value[s3o[i]] = NULL;
  }
  return 0;
}

/* The defaults that do not depend on the options. */
static void cli_defaults(struct cli_config *c) {
  c->cache_size = CLI_DEFAULT_CACHE_SIZE;
  c->max_decode = CLI_DEFAULT_MAX_DECODE;
  c->attr_timeout = CLI_DEFAULT_ATTR_TIMEOUT;
  c->size_wait = CLI_DEFAULT_SIZE_WAIT;
  c->kernel_readahead = CLI_DEFAULT_KERNEL_READAHEAD;
  c->remote_targets = 1;
  c->uid = c->gid = -1;
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  c->decode_threads = ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu;
  remote_config_default(&c->remote);
}

/* Tokenize, then decide what is asked for and check it. */
static int cli_run(struct cli_parser *p, int argc, char *const *argv) {
  struct cli_config *c = p->c;
  ZTRY(cli_tokenize(p, argc, argv));
  if (p->help || p->version) {
    c->action = p->help ? CLI_HELP : CLI_VERSION;
    return 0;
  }
  if (p->unknown.code) {
    *p->err = p->unknown;
    return -p->unknown.code;
  }
  if (!c->source)
    return zerr_set(p->err, EINVAL, "missing SOURCE (try --help)");
  if (c->tool) {
    c->action = CLI_TOOL;
    /* only zarrfs's own -o options mean anything without a mount */
    if (c->fuse_argc > 1) {
      int o = !strcmp(c->fuse_argv[1], "-o") && c->fuse_argc > 2;
      return zerr_set(p->err, EINVAL,
                      "'%s%s' is an option of mounts, not of 'zarrfs %s' "
                      "(try --help)",
                      o ? "-o " : "", c->fuse_argv[1 + o],
                      cli_tool_name(c->tool));
    }
    if ((c->tool == CLI_TOOL_LS || c->tool == CLI_TOOL_INFO) && c->n_paths > 1)
      return zerr_set(p->err, EINVAL, "'zarrfs %s' takes one PATH (try --help)",
                      cli_tool_name(c->tool));
    if (c->tool == CLI_TOOL_CAT && c->n_paths == 0)
      return zerr_set(p->err, EINVAL, "'zarrfs cat' needs a PATH (try --help)");
    c->lazy_sizes = remote_is_url(c->source);
    return cli_validate(p);
  }
  char alt[160] = " ("; /* SOURCE may be a mistyped command (cli.h) */
  if (cli_maybe_command(c->source))
    snprintf(alt, sizeof alt,
             ", or '%.64s' is not a command (the commands: %s; ", c->source,
             CLI_TOOLS_TEXT);
  if (!c->mountpoint || p->extra)
    return zerr_set(p->err, EINVAL, "%s%s%s%stry --help)",
                    p->extra ? "unexpected argument '" : "missing MOUNTPOINT",
                    p->extra ? p->extra : "",
                    p->extra ? "' after SOURCE and MOUNTPOINT" : "", alt);
  c->lazy_sizes = remote_is_url(c->source); /* remote: never fetch for stat */
  return cli_validate(p);
}

int cli_parse(int argc, char *const *argv, struct cli_config **out,
              struct zerr *err) {
  *out = NULL;
  struct cli_parser p = {.err = err};
  if (!(p.c = calloc(1, sizeof *p.c)))
    return zerr_set(err, ENOMEM, "out of memory parsing the command line");
  cli_defaults(p.c);
  int rc = cli_run(&p, argc, argv);
  for (int i = 0; i < CLI_OPT_COUNT; i++)
    free(p.value[i]);
  free(p.kept_opts);
  free(p.extra);
  if (rc < 0) {
    cli_config_free(p.c);
    return rc;
  }
  *out = p.c;
  return 0;
}

const char *cli_tool_name(enum cli_tool t) {
  static const char *const names[] = {"?", "ls", "cat", "stat", "info"};
  return t >= CLI_TOOL_LS && t <= CLI_TOOL_INFO ? names[t] : "?";
}

void cli_config_free(struct cli_config *c) {
  if (!c)
    return;
  free(c->log_file);
  free(c->ref);
  free(c->snapshot);
  free(c->index_cache);
  for (size_t i = 0; i < c->n_paths; i++)
    free(c->paths[i]);
  free(c->paths);
  free(c->source);
  free(c->mountpoint);
  for (size_t i = 0; i < c->n_allow_roots; i++)
    free(c->allow_roots[i]);
  free(c->allow_roots);
  for (size_t i = 0; i < c->n_endpoints; i++)
    free(c->endpoints[i]);
  free(c->endpoints);
  free(c->s3.region);
  free(c->s3.endpoint);
  free(c->s3.profile);
  for (int i = 0; i < c->fuse_argc; i++)
    free(c->fuse_argv[i]);
  free(c->fuse_argv);
  free(c);
}
