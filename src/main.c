/* main.c - the composition root: parse the command line, check SOURCE and
 * MOUNTPOINT, build the store and the engine, and hand over to FUSE. The
 * only file in src/ that sees libfuse. */
#include "config.h"

#include <ctype.h>
#include <libgen.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../fs/engine.h"
#include "../fs/fuse_ops.h"
#include "confine.h"
#include "log.h"
#include "store.h"
#include <fuse_lowlevel.h>

#define DEFAULT_CACHE_SIZE (256ull << 20)
#define DEFAULT_MAX_DECODE (1ull << 30)

/* Options of our own, between fuse_opt_parse and fuse_new. */
struct cli {
  char *source;
  char *mountpoint; /* a copy, checked before libfuse sees it */
  char *cache_size;
  char *max_decode;
  char *attr_timeout;
  char *consolidated;
  char **allow_roots; /* -o allow_root=DIR, repeatable (owned) */
  size_t n_allow;
  int help, version;
};

enum { KEY_HELP, KEY_VERSION, KEY_ALLOW_ROOT };

#define CLI_OPT(t, p)                                                          \
  { t, offsetof(struct cli, p), 1 }
static const struct fuse_opt cli_opts[] = {
    CLI_OPT("cache_size=%s", cache_size),
    CLI_OPT("max_decode=%s", max_decode),
    CLI_OPT("attr_timeout=%s", attr_timeout),
    CLI_OPT("consolidated=%s", consolidated),
    FUSE_OPT_KEY("allow_root=", KEY_ALLOW_ROOT),
    FUSE_OPT_KEY("-h", KEY_HELP),
    FUSE_OPT_KEY("--help", KEY_HELP),
    FUSE_OPT_KEY("-V", KEY_VERSION),
    FUSE_OPT_KEY("--version", KEY_VERSION),
    FUSE_OPT_END};

/* Take the first non-option as SOURCE; leave the rest to FUSE. */
static int cli_proc(void *data, const char *arg, int key,
                    struct fuse_args *outargs) {
  (void)outargs;
  struct cli *c = data;
  switch (key) {
  case KEY_HELP:
    c->help = 1;
    return 0;
  case KEY_VERSION:
    c->version = 1;
    return 0;
  case KEY_ALLOW_ROOT: {
    char **r = realloc(c->allow_roots, (c->n_allow + 1) * sizeof *r);
    if (!r)
      return -1;
    c->allow_roots = r;
    if (!(r[c->n_allow] = strdup(arg + strlen("allow_root="))))
      return -1;
    c->n_allow++;
    return 0;
  }
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

/* "256M" -> bytes; -1 on a malformed size. */
static long long parse_size(const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s)
    return -1;
  unsigned long long mul = 1;
  switch (toupper((unsigned char)*end)) {
  case 'K':
    mul = 1ull << 10;
    end++;
    break;
  case 'M':
    mul = 1ull << 20;
    end++;
    break;
  case 'G':
    mul = 1ull << 30;
    end++;
    break;
  case 'T':
    mul = 1ull << 40;
    end++;
    break;
  default:
    break;
  }
  if (*end == 'B' || *end == 'b')
    end++;
  if (*end || v > (unsigned long long)(1ll << 62) / mul)
    return -1;
  return (long long)(v * mul);
}

/* The usage text. */
static void usage(const char *prog) {
  printf(
      "usage: %s [options] SOURCE MOUNTPOINT\n\n"
      "Mount the Zarr store in directory SOURCE (V3 or V2), or the kerchunk\n"
      "reference file SOURCE, read-only at MOUNTPOINT.\n"
      "Every stored key appears byte-identical; beside every chunk K a\n"
      "text view K.txt; in every array directory values.txt.\n\n"
      "zarrfs options:\n"
      "    -h, --help             print this help\n"
      "    -V, --version          print the version\n"
      "    -o cache_size=SIZE     decoded-data cache budget (default 256M)\n"
      "    -o max_decode=SIZE     largest decoded chunk held in memory\n"
      "                           (default 1G)\n"
      "    -o attr_timeout=SECS   kernel attribute cache time (default "
      "3600;\n"
      "                           the store is treated as immutable)\n"
      "    -o consolidated=no     ignore consolidated metadata (zarr.json\n"
      "                           consolidated_metadata, .zmetadata); read\n"
      "                           each node's own metadata (default yes)\n"
      "    -o allow_root=DIR      let references and manifests read files\n"
      "                           under DIR (repeatable; the reference\n"
      "                           file's directory is always allowed)\n\n"
      "FUSE options:\n"
      "    -f                     stay in the foreground (log to stderr)\n"
      "    -d                     debug output (implies -f)\n"
      "    -s                     single-threaded\n"
      "    -o allow_other         let other users see the mount\n",
      prog);
}

/* Refuse bad SOURCE/MOUNTPOINT at once, with one line. */
static int check_paths(const char *source, const char *mnt) {
  struct stat st;
  if (!source) {
    fprintf(stderr, "zarrfs: missing SOURCE (try --help)\n");
    return -1;
  }
  if (!mnt) {
    fprintf(stderr, "zarrfs: missing MOUNTPOINT (try --help)\n");
    return -1;
  }
  if (stat(source, &st) < 0) {
    fprintf(stderr, "zarrfs: %s: %s\n", source, strerror(errno));
    return -1;
  }
  if (S_ISREG(st.st_mode)) { /* a kerchunk reference file */
    if (access(source, R_OK) < 0) {
      fprintf(stderr, "zarrfs: %s: cannot read: %s\n", source, strerror(errno));
      return -1;
    }
    goto mountpoint;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "zarrfs: %s: not a directory or reference file\n", source);
    return -1;
  }
  if (access(source, R_OK | X_OK) < 0) {
    fprintf(stderr, "zarrfs: %s: cannot read: %s\n", source, strerror(errno));
    return -1;
  }
  /* A V3 root (zarr.json) or a V2 one (.zgroup or .zarray). */
  static const char *const roots[] = {"zarr.json", ".zgroup", ".zarray"};
  char meta[4096];
  int found = 0;
  for (int i = 0; i < 3 && !found; i++) {
    snprintf(meta, sizeof meta, "%s/%s", source, roots[i]);
    found = stat(meta, &st) == 0 && S_ISREG(st.st_mode);
  }
  if (!found) {
    fprintf(stderr,
            "zarrfs: %s: no zarr.json (or .zgroup/.zarray): not a "
            "Zarr store\n",
            source);
    return -1;
  }
  if (access(meta, R_OK) < 0) {
    fprintf(stderr, "zarrfs: %s: cannot read: %s\n", meta, strerror(errno));
    return -1;
  }
mountpoint:
  if (stat(mnt, &st) < 0) {
    fprintf(stderr, "zarrfs: %s: %s\n", mnt, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "zarrfs: %s: mount point is not a directory\n", mnt);
    return -1;
  }
  return 0;
}

/* Parse, check, mount, serve. */
int main(int argc, char **argv) {
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  struct cli cli = {0};
  struct fuse_cmdline_opts opts = {0};
  struct engine *engine = NULL;
  struct confine *confine = NULL;
  struct fuse *fuse = NULL;
  int status = 1;

  if (fuse_opt_parse(&args, &cli, cli_opts, cli_proc) < 0)
    goto out;
  if (cli.help) {
    usage(argv[0]);
    printf("\nOptions of the FUSE library:\n");
    fuse_lib_help(&args);
    status = 0;
    goto out;
  }
  if (cli.version) {
    printf("zarrfs %s\n", PACKAGE_VERSION);
    printf("FUSE library version %s\n", fuse_pkgversion());
    status = 0;
    goto out;
  }
  /* Check before libfuse does, so every refusal is one clear line. */
  if (check_paths(cli.source, cli.mountpoint) < 0)
    goto out;
  if (fuse_parse_cmdline(&args, &opts) != 0)
    goto out;

  long long cache_size = DEFAULT_CACHE_SIZE, max_decode = DEFAULT_MAX_DECODE;
  if (cli.cache_size && (cache_size = parse_size(cli.cache_size)) < 0) {
    fprintf(stderr, "zarrfs: bad cache_size '%s'\n", cli.cache_size);
    goto out;
  }
  if (cli.max_decode && (max_decode = parse_size(cli.max_decode)) <= 0) {
    fprintf(stderr, "zarrfs: bad max_decode '%s'\n", cli.max_decode);
    goto out;
  }
  double attr_timeout = 3600;
  if (cli.attr_timeout) {
    char *end;
    attr_timeout = strtod(cli.attr_timeout, &end);
    if (*end || attr_timeout < 0) {
      fprintf(stderr, "zarrfs: bad attr_timeout '%s'\n", cli.attr_timeout);
      goto out;
    }
  }

  int no_consolidated = 0;
  if (cli.consolidated) {
    if (!strcmp(cli.consolidated, "no")) {
      no_consolidated = 1;
    } else if (strcmp(cli.consolidated, "yes")) {
      fprintf(stderr, "zarrfs: bad consolidated '%s' (yes or no)\n",
              cli.consolidated);
      goto out;
    }
  }

  zlog_setup(!opts.foreground, opts.debug ? ZLOG_DEBUG : ZLOG_INFO);

  struct zerr err = {0};
  struct store *store;
  struct stat sst;
  int is_refs = stat(cli.source, &sst) == 0 && S_ISREG(sst.st_mode);
  /* Allowed roots of manifest targets: the reference file's directory (or
   * the store root) and every -o allow_root. */
  if (confine_new(&confine, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    goto out;
  }
  char *srcdir = strdup(cli.source);
  if (!srcdir ||
      confine_add_root(confine, is_refs ? dirname(srcdir) : cli.source, &err) <
          0) {
    free(srcdir);
    fprintf(stderr, "zarrfs: %s\n", srcdir ? err.msg : "out of memory");
    goto out;
  }
  free(srcdir);
  for (size_t i = 0; i < cli.n_allow; i++)
    if (confine_add_root(confine, cli.allow_roots[i], &err) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      goto out;
    }
  if (is_refs) {
    if (store_open_refs(cli.source, confine, &store, &err) < 0) {
      fprintf(stderr, "zarrfs: %s: not a kerchunk reference file: %s\n",
              cli.source, err.msg);
      goto out;
    }
  } else if (store_open_local(cli.source, &store, &err) < 0 ||
             store_wrap_vzarr(store, confine, &store, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    goto out;
  }
  struct engine_config ecfg = {(size_t)cache_size, (size_t)max_decode, 1 << 20,
                               no_consolidated};
  if (engine_new(store, &ecfg, &engine, &err) < 0) {
    store_free(store);
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    goto out;
  }

  /* Read-only at the kernel too, and name the mount after its source. */
  char mopt[4200];
  if (!strchr(store->location, ',') && !strchr(store->location, '\\'))
    snprintf(mopt, sizeof mopt, "-oro,subtype=zarrfs,fsname=%s",
             store->location);
  else
    snprintf(mopt, sizeof mopt, "-oro,subtype=zarrfs");
  fuse_opt_add_arg(&args, mopt);

  struct zfs_fuse_ctx fctx = {engine, {attr_timeout}, (long)time(NULL)};
  fuse =
      fuse_new(&args, zfs_operations(), sizeof(struct fuse_operations), &fctx);
  if (!fuse)
    goto out;
  if (fuse_mount(fuse, opts.mountpoint) != 0)
    goto out;
  if (fuse_daemonize(opts.foreground) != 0) {
    fuse_unmount(fuse);
    goto out;
  }
  struct fuse_session *se = fuse_get_session(fuse);
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_unmount(fuse);
    goto out;
  }
  int rc;
  if (opts.singlethread) {
    rc = fuse_loop(fuse);
  } else {
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(lc, opts.clone_fd);
    fuse_loop_cfg_set_max_threads(lc, opts.max_threads ? opts.max_threads : 16);
    if (opts.max_idle_threads != UINT_MAX)
      fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
    rc = fuse_loop_mt(fuse, lc);
    fuse_loop_cfg_destroy(lc);
  }
  fuse_remove_signal_handlers(se);
  fuse_unmount(fuse);
  /* The loop returns 0 after an unmount, the signal number after
   * SIGTERM/SIGINT/SIGHUP (a clean exit on purpose; it also resets the
   * session, so fuse_session_exited() cannot tell), -errno on failure. */
  status = rc >= 0 ? 0 : 1;

out:
  if (fuse)
    fuse_destroy(fuse);
  engine_free(engine);
  confine_free(confine); /* after the engine: its store borrows it */
  for (size_t i = 0; i < cli.n_allow; i++)
    free(cli.allow_roots[i]);
  free(cli.allow_roots);
  free(opts.mountpoint);
  free(cli.source);
  free(cli.mountpoint);
  free(cli.cache_size);
  free(cli.max_decode);
  free(cli.attr_timeout);
  free(cli.consolidated);
  fuse_opt_free_args(&args);
  return status;
}
