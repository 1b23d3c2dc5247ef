/* main.c - the composition root: parse the command line (src/app/cli.c), check
 * SOURCE and MOUNTPOINT (src/app/source.c, src/app/mountpoint.c), build the
 * store and the engine, hand over to FUSE, and shut down within a bounded time
 * on SIGTERM, SIGINT and SIGHUP. The only file in src/ that sees libfuse. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../src/app/cli.h"
#include "../src/app/mountpoint.h"
#include "../src/app/source.h"
#include "../src/net/remote.h"
#include "../src/store/confine.h"
#include "../src/store/store.h"
#include "../src/util/crash.h"
#include "../src/util/log.h"
#include "cmd.h"
#include "engine/engine.h"
#include "fuse_ops.h"
#include "namespace/inodes.h"
#include "namespace/namespace.h"
#include <fuse_lowlevel.h>

/* ---- shutdown on SIGTERM, SIGINT, SIGHUP ---- */

/* How long in-flight requests get after a shutdown signal before the mount
 * is detached and the daemon exits without them. The engine's long loops
 * see engine_stop within milliseconds; this bounds what cannot be
 * interrupted (one huge decode, a slow disk). */
#define SHUTDOWN_GRACE_MS 500

/* What the signal handler, the watchdog thread and main share; lives in
 * struct daemon, in daemon_run's frame, for the life of the mount.
 *
 * Why a watchdog: libfuse's multi-threaded loop, once the session has
 * exited, joins every worker, and a worker answers its request with
 * cancellation disabled; so without it exit waits for the slowest request,
 * with the mount still listed and new accesses hanging. */
struct shutdown {
  struct engine *engine;    /* engine_stop: long loops return -EINTR */
  struct remote *remote;    /* remote_stop: transfers return -EINTR */
  struct fuse_session *se;  /* fuse_session_exit: the loop returns */
  const char *mountpoint;   /* for the log line */
  sem_t requested;          /* posted by the handler; by main at the end */
  atomic_int signo;         /* the first shutdown signal, 0 if none */
  atomic_int loop_returned; /* the FUSE loop has returned */
  atomic_int claimed;       /* the teardown is main's or the watchdog's */
};

/* The handler's way to the mount (signal handlers take no argument): set
 * before the handlers are installed, cleared with the signals blocked
 * before the session is freed. The daemon's only mutable static. */
static struct shutdown *_Atomic shutdown_ctx;

/* The signals that ask for a shutdown. */
static void shutdown_sigset(sigset_t *set) {
  sigemptyset(set);
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGHUP);
}

/* SIGTERM/SIGINT/SIGHUP: async-signal-safe work only (atomic stores,
 * sem_post; fuse_session_exit is one store, as in libfuse's own handler).
 * libfuse's workers and the watchdog block these signals, so the main
 * thread takes them, and the signal interrupts its wait in the loop, which
 * then sees the exited session. */
static void on_shutdown_signal(int sig) {
  int saved = errno;
  struct shutdown *s = atomic_load(&shutdown_ctx);
  if (s) {
    int none = 0;
    atomic_compare_exchange_strong(&s->signo, &none, sig);
    engine_stop(s->engine);
    remote_stop(s->remote);
    fuse_session_exit(s->se);
    sem_post(&s->requested);
  }
  errno = saved;
}

/* Route the shutdown signals to s (instead of fuse_set_signal_handlers,
 * whose handler cannot stop the engine) and ignore SIGPIPE. No
 * SA_RESTART: the signal must interrupt the loop's wait. */
static int shutdown_install(struct shutdown *s) {
  atomic_store(&shutdown_ctx, s);
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sigemptyset(&sa.sa_mask);
  sa.sa_handler = on_shutdown_signal;
  if (sigaction(SIGTERM, &sa, NULL) < 0 || sigaction(SIGINT, &sa, NULL) < 0 ||
      sigaction(SIGHUP, &sa, NULL) < 0)
    return -1;
  sa.sa_handler = SIG_IGN;
  return sigaction(SIGPIPE, &sa, NULL);
}

/* Stop the handler from touching the session: block the shutdown signals
 * in this (the last) thread that takes them, then clear the pointer. A
 * signal that comes later stays pending and dies with the process. */
static void shutdown_detach(void) {
  sigset_t set;
  shutdown_sigset(&set);
  pthread_sigmask(SIG_BLOCK, &set, NULL);
  atomic_store(&shutdown_ctx, NULL);
}

/* The watchdog: after a shutdown signal, give in-flight requests
 * SHUTDOWN_GRACE_MS; if the loop has not returned by then, unmount (lazily,
 * as fuse_unmount does; closing the device aborts the requests still
 * waiting in the kernel) and exit at once, status 0. */
static void *shutdown_watch(void *arg) {
  struct shutdown *s = arg;
  while (sem_wait(&s->requested) < 0 && errno == EINTR)
    ;
  for (int ms = 0; ms < SHUTDOWN_GRACE_MS; ms += 10) {
    if (atomic_load(&s->loop_returned))
      return NULL;
    nanosleep(&(struct timespec){0, 10 * 1000000L}, NULL);
  }
  if (atomic_exchange(&s->claimed, 1))
    return NULL; /* main is tearing down normally */
  zlog(ZLOG_WARN,
       "%s: requests still running %d ms after the shutdown signal; "
       "unmounting without waiting for them",
       s->mountpoint, SHUTDOWN_GRACE_MS);
  fuse_session_unmount(s->se);
  _exit(0);
}

/* Start the watchdog with the shutdown signals blocked in it. */
static int shutdown_start(struct shutdown *s, pthread_t *t) {
  sigset_t set, old;
  shutdown_sigset(&set);
  pthread_sigmask(SIG_BLOCK, &set, &old);
  int rc = pthread_create(t, NULL, shutdown_watch, s);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

/* Everything a mount holds, released by daemon_free in reverse order. */
struct daemon {
  struct fuse_args args;         /* what libfuse is given */
  struct fuse_cmdline_opts opts; /* libfuse's reading of them */
  struct remote *remote;
  struct confine *confine;
  struct engine *engine;
  struct zfs_inodes *inodes;
  struct zfs_fuse_ctx fctx; /* the session's userdata */
  struct fuse_session *se;
  struct shutdown shut;
};

/* Have the kernel ask again for the attributes of path, when it holds
 * it. Attributes only: dropping cached pages could wait for the very read
 * that found the size wrong (their pages hold the truth: every byte
 * served was placed by checked sizes, fs/layout.h). */
static void daemon_inval_path(void *ud, const char *path) {
  struct daemon *d = ud;
  uint64_t ino = inodes_find(d->inodes, path);
  if (ino)
    fuse_lowlevel_notify_inval_inode(d->se, ino, -1, 0);
}

/* engine.size_grew: a unit's text is longer than the size the kernel may
 * hold for the views of n that show it, and a reader would stop at their
 * old end: the kernel asks for their size again before reading past it. */
static void daemon_size_grew(void *ud, const struct znode *n,
                             const uint64_t *idx) {
  struct daemon *d = ud;
  ns_unit_view_paths(d->engine, n, idx, daemon_inval_path, d);
}

/* Is there a syslog to send lines to? Without /dev/log (containers,
 * minimal systems) syslog(3) drops every line. */
static int syslog_works(void) {
  struct stat st;
  return stat("/dev/log", &st) == 0 && S_ISSOCK(st.st_mode);
}

/* May the daemon keep the mounting shell's stderr? A terminal or a file:
 * yes. Not a pipe: whoever reads it (`out=$(zarrfs SRC MNT 2>&1)`) would
 * wait for its end as long as the daemon runs. */
static int stderr_keepable(void) {
  struct stat st;
  return isatty(STDERR_FILENO) ||
         (fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode));
}

/* Choose where log lines go, before any thread starts: -o log_file (opened
 * now, so a relative path means the current directory and a failure is a
 * refusal), else stderr in the foreground, else syslog, else a copy of
 * stderr, which outlives daemonizing (fuse_daemonize points 0-2 at
 * /dev/null): errors then reach the shell that mounted rather than
 * nowhere (when it is a terminal or a file). level: the default when
 * -o log_level is not given. */
static int log_open(const struct cli_config *cfg, int foreground,
                    enum zlog_level level) {
  if (cfg->log_level)
    level = (enum zlog_level)cfg->log_level;
  if (cfg->log_file) {
    int fd =
        open(cfg->log_file, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
      fprintf(stderr, "zarrfs: %s: cannot open the log file: %s\n",
              cfg->log_file, strerror(errno));
      return -1;
    }
    zlog_setup_fd(fd, level);
  } else if (foreground) {
    zlog_setup(0, level);
  } else if (syslog_works()) {
    zlog_setup(1, level);
  } else if (stderr_keepable()) {
    int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
    if (fd >= 0)
      zlog_setup_fd(fd, level);
    else
      zlog_setup(1, level);
  } else {
    zlog_setup(1, level); /* nowhere better */
  }
  return 0;
}

/* The remote context, the store SOURCE names and the engine over it, as
 * the command line sets them. Refusals are printed, one line each. */
static int engine_open(const struct cli_config *cfg, struct remote **remote,
                       struct confine **confine, struct engine **e) {
  struct store *store;
  struct zerr err = {0};
  if (source_remote_new(cfg, remote) < 0 ||
      source_open(cfg, *remote, confine, &store) < 0)
    return -1;
  struct engine_config ecfg = {.cache_size = cfg->cache_size,
                               .max_decoded = cfg->max_decode,
                               .size_table_max = 1 << 20,
                               .no_consolidated = cfg->no_consolidated,
                               .lazy_sizes = cfg->lazy_sizes,
                               .decode_threads = cfg->decode_threads,
                               .views = cfg->views};
  if (engine_new(store, &ecfg, e, &err) < 0) {
    store_free(store);
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    return -1;
  }
  /* The persistent size index, for local stores (records are keyed by
   * the version of a chunk's bytes, src/store/store.h store_version); one
   * that cannot be opened or is refused (a directory others may write)
   * only means sizes are learned again. */
  struct sizeindex *sizeidx = NULL;
  if (cfg->index_cache && !(*e)->store->remote) {
    if (sizeindex_open(cfg->index_cache, cfg->index_cache_size, &sizeidx,
                       &err) < 0)
      zlog(ZLOG_WARN, "no size index: %s", err.msg);
    engine_set_index(*e, sizeidx);
  }
  return 0;
}

/* zarrfs ls|cat|stat|info SOURCE [PATH...]: the namespace on standard
 * output, no mount (fs/cmd.c). Log lines go to standard error. */
static int tool_run(const struct cli_config *cfg) {
  if (log_open(cfg, 1, ZLOG_WARN) < 0)
    return 1;
  if (source_check(cfg->source) < 0)
    return 1;
  struct remote *remote = NULL;
  struct confine *confine = NULL;
  struct engine *e = NULL;
  int status = 1;
  if (engine_open(cfg, &remote, &confine, &e) == 0)
    status = cmd_run(e, cfg->tool, cfg->paths, cfg->n_paths, stdout, stderr);
  engine_free(e);
  confine_free(confine); /* after the engine: its store borrows it */
  remote_free(remote);
  return status;
}

/* Check the paths, then build libfuse's arguments, the log, the remote
 * context, the store, the engine and the session. Refusals are printed
 * (one line each, by their module; libfuse prints its own). */
static int daemon_prepare(struct daemon *d, const struct cli_config *cfg) {
  /* Check before libfuse does, so every refusal is one clear line. */
  if (source_check(cfg->source) < 0 ||
      mountpoint_check(cfg->mountpoint, cfg->nonempty) < 0)
    return -1;
  for (int i = 0; i < cfg->fuse_argc; i++)
    if (fuse_opt_add_arg(&d->args, cfg->fuse_argv[i]) < 0)
      return -1;
  if (fuse_parse_cmdline(&d->args, &d->opts) != 0)
    return -1;
  if (log_open(cfg, d->opts.foreground,
               d->opts.debug ? ZLOG_DEBUG : ZLOG_INFO) < 0)
    return -1;

  if (cfg->default_permissions == 2)
    zlog(ZLOG_INFO, "allow_other with uid, gid, umask, fmask or dmask: "
                    "default_permissions added, so other users are held to "
                    "the modes they are shown (-o no_default_permissions "
                    "lets everyone read)");
  struct store *store;
  if (engine_open(cfg, &d->remote, &d->confine, &d->engine) < 0)
    return -1;
  store = d->engine->store;

  /* Read-only at the kernel too, and name the mount after its source. */
  char mopt[4200];
  if (!strchr(store->location, ',') && !strchr(store->location, '\\'))
    snprintf(mopt, sizeof mopt, "-oro,subtype=zarrfs,fsname=%s",
             store->location);
  else
    snprintf(mopt, sizeof mopt, "-oro,subtype=zarrfs");
  if (fuse_opt_add_arg(&d->args, mopt) < 0)
    return -1;

  if (zfs_inodes_new(&d->inodes) < 0) {
    fprintf(stderr, "zarrfs: out of memory\n");
    return -1;
  }
  d->fctx = (struct zfs_fuse_ctx){
      .engine = d->engine,
      .cfg = {cfg->attr_timeout, cfg->kernel_readahead, cfg->xattrs,
              (unsigned)cfg->fmask, (unsigned)cfg->dmask,
              (uint64_t)(cfg->size_wait * 1e9)},
      .mount_time = (long)time(NULL),
      .uid = cfg->uid >= 0 ? (uid_t)cfg->uid : getuid(),
      .gid = cfg->gid >= 0 ? (gid_t)cfg->gid : getgid(),
      .inodes = d->inodes};
  d->se = fuse_session_new(&d->args, zfs_operations(),
                           sizeof(struct fuse_lowlevel_ops), &d->fctx);
  d->engine->size_grew = daemon_size_grew;
  d->engine->size_grew_ud = d;
  return d->se ? 0 : -1;
}

/* Run libfuse's loop as the command line asked (single- or
 * multi-threaded). Its result: 0 after an unmount, else -errno. */
static int daemon_loop(struct daemon *d) {
  if (d->opts.singlethread)
    return fuse_session_loop(d->se);
  struct fuse_loop_config *lc = fuse_loop_cfg_create();
  if (!lc)
    return -ENOMEM;
  fuse_loop_cfg_set_clone_fd(lc, d->opts.clone_fd);
  fuse_loop_cfg_set_max_threads(lc,
                                d->opts.max_threads ? d->opts.max_threads : 16);
  if (d->opts.max_idle_threads != UINT_MAX)
    fuse_loop_cfg_set_idle_threads(lc, d->opts.max_idle_threads);
  int rc = fuse_session_loop_mt(d->se, lc);
  fuse_loop_cfg_destroy(lc);
  return rc;
}

/* Mount, serve until unmounted or signalled, unmount. The exit status. */
static int daemon_serve(struct daemon *d, const struct cli_config *cfg) {
  struct shutdown *shut = &d->shut;
  /* Handlers first: a signal from here on stops the mount cleanly. */
  shut->engine = d->engine;
  shut->remote = d->remote;
  shut->se = d->se;
  shut->mountpoint = d->opts.mountpoint;
  if (shutdown_install(shut) < 0) {
    fprintf(stderr, "zarrfs: cannot install signal handlers: %s\n",
            strerror(errno));
    return 1;
  }
  if (fuse_session_mount(d->se, d->opts.mountpoint) != 0)
    return 1;
  if (cfg->kernel_readahead > 0)
    mountpoint_set_readahead(d->opts.mountpoint, cfg->kernel_readahead);
  if (fuse_daemonize(d->opts.foreground) != 0) {
    fuse_session_unmount(d->se);
    return 1;
  }
  pthread_t watch; /* after fuse_daemonize: a fork keeps no threads */
  int werr = shutdown_start(shut, &watch);
  if (werr) {
    zlog(ZLOG_ERR, "cannot start the shutdown thread: %s", strerror(werr));
    fuse_session_unmount(d->se);
    return 1;
  }
  int rc = daemon_loop(d);
  atomic_store(&shut->loop_returned, 1);
  if (atomic_exchange(&shut->claimed, 1))
    for (;;) /* the watchdog is unmounting and will _exit */
      pause();
  shutdown_detach();
  sem_post(&shut->requested); /* let the watchdog return */
  pthread_join(watch, NULL);
  fuse_session_unmount(d->se);
  /* The loop returns 0 after an unmount, -errno on failure; after a
   * shutdown signal it may return -EINTR (single-threaded loop), yet that
   * exit was asked for: status 0. */
  return rc >= 0 || atomic_load(&shut->signo) ? 0 : 1;
}

/* Release what daemon_prepare built, in the order the parts borrow from
 * each other. */
static void daemon_free(struct daemon *d) {
  shutdown_detach(); /* before the session is freed */
  if (d->se)
    fuse_session_destroy(d->se);
  /* After the session (no request runs), before the engine (open files
   * hold its cursors). */
  zfs_inodes_free(d->inodes, d->engine);
  engine_free(d->engine);
  confine_free(d->confine); /* after the engine: its store borrows it */
  remote_free(d->remote);   /* likewise */
  free(d->opts.mountpoint);
  fuse_opt_free_args(&d->args);
  sem_destroy(&d->shut.requested);
}

/* Check, mount and serve what cfg names. The exit status. */
static int daemon_run(const struct cli_config *cfg) {
  struct daemon d = {.args = FUSE_ARGS_INIT(0, NULL)};
  if (sem_init(&d.shut.requested, 0, 0) < 0) {
    fprintf(stderr, "zarrfs: sem_init: %s\n", strerror(errno));
    return 1;
  }
  int status = daemon_prepare(&d, cfg) < 0 ? 1 : daemon_serve(&d, cfg);
  daemon_free(&d);
  return status;
}

/* Parse the command line, then print help or version, or mount. */
int main(int argc, char **argv) {
  struct cli_config *cfg;
  struct zerr err = {0};
  if (cli_parse(argc, argv, &cfg, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    return 1;
  }
  int status = 0;
  if (cfg->action == CLI_HELP) {
    cli_usage(stdout, argv[0]); /* with the few libfuse options that fit */
  } else if (cfg->action == CLI_VERSION) {
    printf("zarrfs %s\n", PACKAGE_VERSION);
    printf("FUSE library version %s\n", fuse_pkgversion());
    if (*ZFS_WITHOUT) /* configure --without-LIB: their codecs are refused */
      printf("built without: %s\n", ZFS_WITHOUT);
  } else if (cfg->action == CLI_TOOL) {
    status = tool_run(cfg);
  } else {
    /* a fault in the daemon leaves its stack in the log (crash.h) */
    if (crash_handlers_install() < 0)
      zlog(ZLOG_WARN, "cannot install the fatal-signal handlers: faults "
                      "will not be reported");
    status = daemon_run(cfg);
  }
  cli_config_free(cfg);
  return status;
}
