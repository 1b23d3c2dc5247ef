/* main.c - the composition root: parse the command line, check SOURCE and
 * MOUNTPOINT (refusing a mount point that is already a live or stale FUSE
 * mount), build the store and the engine, hand over to FUSE, and shut down
 * within a bounded time on SIGTERM, SIGINT and SIGHUP. The only file in
 * src/ that sees libfuse. */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "../fs/engine.h"
#include "../fs/fuse_ops.h"
#include "confine.h"
#include "log.h"
#include "remote.h"
#include "s3.h"
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
  char *sizes;
  char *decode_threads;
  char *remote_targets;
  char *kernel_readahead;
  char **allow_roots; /* -o allow_root=DIR, repeatable (owned) */
  size_t n_allow;
  int help, version;
  struct cli_remote {  /* remote sources and targets */
    char *region, *endpoint, *profile;
    int no_sign_request, requester_pays;
    char *connect_timeout, *stall_timeout, *timeout, *retries;
    char *remote_cache, *block_size, *max_request, *readahead, *connections;
  } rem;
};

enum { KEY_HELP, KEY_VERSION, KEY_ALLOW_ROOT };

#define CLI_OPT(t, p)                                                          \
  { t, offsetof(struct cli, p), 1 }
static const struct fuse_opt cli_opts[] = {
    CLI_OPT("cache_size=%s", cache_size),
    CLI_OPT("max_decode=%s", max_decode),
    CLI_OPT("attr_timeout=%s", attr_timeout),
    CLI_OPT("consolidated=%s", consolidated),
    CLI_OPT("sizes=%s", sizes),
    CLI_OPT("decode_threads=%s", decode_threads),
    CLI_OPT("remote_targets=%s", remote_targets),
    CLI_OPT("kernel_readahead=%s", kernel_readahead),
    CLI_OPT("region=%s", rem.region),
    CLI_OPT("endpoint=%s", rem.endpoint),
    CLI_OPT("profile=%s", rem.profile),
    {"no_sign_request", offsetof(struct cli, rem.no_sign_request), 1},
    {"requester_pays", offsetof(struct cli, rem.requester_pays), 1},
    CLI_OPT("connect_timeout=%s", rem.connect_timeout),
    CLI_OPT("stall_timeout=%s", rem.stall_timeout),
    CLI_OPT("timeout=%s", rem.timeout),
    CLI_OPT("retries=%s", rem.retries),
    CLI_OPT("remote_cache=%s", rem.remote_cache),
    CLI_OPT("block_size=%s", rem.block_size),
    CLI_OPT("max_request=%s", rem.max_request),
    CLI_OPT("readahead=%s", rem.readahead),
    CLI_OPT("connections=%s", rem.connections),
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
      "reference file SOURCE, read-only at MOUNTPOINT. SOURCE may also be\n"
      "an http://, https:// or s3://BUCKET/PREFIX URL.\n"
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
      "    -o sizes=exact|lazy    exact: stat of a view decodes what it must\n"
      "                           to give the exact size (local default);\n"
      "                           lazy: only sizes known without decoding\n"
      "                           data, else 0, read with direct I/O\n"
      "                           (remote default)\n"
      "    -o decode_threads=N    workers decoding chunks ahead of\n"
      "                           sequential readers (default: the number\n"
      "                           of cores, at most 16; 0: none)\n"
      "    -o allow_root=DIR      let references and manifests read files\n"
      "                           under DIR (repeatable; the reference\n"
      "                           file's directory is always allowed);\n"
      "                           DIR may be a URL prefix, which also\n"
      "                           allows link-local addresses under it\n"
      "    -o remote_targets=no   references and manifests may not read\n"
      "                           remote targets (untrusted references)\n"
      "    -o kernel_readahead=SIZE  the kernel's read-ahead for this mount\n"
      "                           (default 1M: whole 1 MiB requests; 0\n"
      "                           keeps the kernel's own, 128K; needs root)\n\n"
      "remote stores (http, https, s3; see docs/remote.md):\n"
      "    -o region=NAME         S3 region (else AWS_REGION, ~/.aws/config,\n"
      "                           us-east-1)\n"
      "    -o endpoint=URL        S3 endpoint (MinIO, Ceph, R2: path-style)\n"
      "    -o profile=NAME        ~/.aws profile (else AWS_PROFILE, default)\n"
      "    -o no_sign_request     anonymous S3 access (also automatic when\n"
      "                           no credentials exist)\n"
      "    -o requester_pays      send x-amz-request-payer: requester\n"
      "    -o connect_timeout=SECS  connect bound (default 10)\n"
      "    -o stall_timeout=SECS  no byte for this long fails an attempt\n"
      "                           (default 30)\n"
      "    -o timeout=SECS        bound of one request with its retries\n"
      "                           (default 60)\n"
      "    -o retries=N           retries after the first attempt (default 5)\n"
      "    -o remote_cache=SIZE   cache of fetched blocks (default 64M)\n"
      "    -o block_size=SIZE     fetch granularity and coalescing gap\n"
      "                           (default 64K)\n"
      "    -o max_request=SIZE    largest single GET (default 8M)\n"
      "    -o readahead=SIZE      read-ahead window of sequential reads\n"
      "                           (default 32M; 0: off)\n"
      "    -o connections=N       transfers at once (default 32)\n\n"
      "FUSE options:\n"
      "    -f                     stay in the foreground (log to stderr)\n"
      "    -d                     debug output (implies -f)\n"
      "    -s                     single-threaded\n"
      "    -o allow_other         let other users see the mount\n",
      prog);
}

/* ---- is MOUNTPOINT already a FUSE mount? ---- */

/* Decode mountinfo's octal escapes (\040 space, \011 tab, \012 newline,
 * \134 backslash) in place. */
static void mountinfo_unescape(char *s) {
  char *o = s;
  for (; *s; s++) {
    if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
        s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
      *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
      s += 3;
    } else {
      *o++ = *s;
    }
  }
  *o = '\0';
}

/* A FUSE file system type: "fuse", "fuseblk", "fuse.SUBTYPE" (not
 * "fusectl", the control file system). */
static int is_fuse_type(const char *type) {
  return !strcmp(type, "fuse") || !strcmp(type, "fuseblk") ||
         !strncmp(type, "fuse.", 5);
}

/* Is path equal to dir or below it? */
static int path_within(const char *path, const char *dir) {
  size_t n = strlen(dir);
  if (n == 1 && dir[0] == '/')
    return path[0] == '/';
  return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* A mount from /proc/self/mountinfo, decoded (each string owned). */
struct mount_entry {
  char *point, *type, *source;
  char *dev; /* "MAJOR:MINOR" */
};

/* Free the strings of m; NULL-safe fields. */
static void mount_entry_clear(struct mount_entry *m) {
  free(m->point);
  free(m->type);
  free(m->source);
  free(m->dev);
  memset(m, 0, sizeof *m);
}

/* Search /proc/self/mountinfo. within == 0: the topmost mount (the last
 * listed) whose mount point is path, any type. within != 0: the FUSE mount
 * with the deepest mount point that holds path. Returns 1 and fills *out
 * (caller clears it), 0 when none, -1 when mountinfo cannot be read. */
static int mountinfo_find(const char *path, int within,
                          struct mount_entry *out) {
  FILE *f = fopen("/proc/self/mountinfo", "re");
  if (!f)
    return -1;
  char *line = NULL;
  size_t cap = 0;
  size_t best = 0;
  int found = 0;
  while (getline(&line, &cap, f) > 0) {
    /* ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE
     * SUPEROPTIONS */
    char *save = NULL, *field[5] = {0}, *type = NULL, *source = NULL;
    int i = 0, dash = 0;
    for (char *t = strtok_r(line, " \n", &save); t;
         t = strtok_r(NULL, " \n", &save)) {
      if (i < 5)
        field[i++] = t;
      else if (!dash)
        dash = !strcmp(t, "-");
      else if (!type)
        type = t;
      else if (!source)
        source = t;
    }
    if (!field[4] || !type)
      continue;
    mountinfo_unescape(field[4]);
    mountinfo_unescape(type);
    if (source)
      mountinfo_unescape(source);
    size_t len = strlen(field[4]);
    if (within
            ? !is_fuse_type(type) || !path_within(path, field[4]) || len < best
            : strcmp(path, field[4]))
      continue;
    mount_entry_clear(out);
    out->point = strdup(field[4]);
    out->type = strdup(type);
    out->source = strdup(source ? source : "none");
    out->dev = strdup(field[2] ? field[2] : "");
    if (!out->point || !out->type || !out->source || !out->dev) {
      mount_entry_clear(out);
      found = 0;
      break;
    }
    best = len;
    found = 1;
  }
  free(line);
  fclose(f);
  return found;
}

/* p made absolute against the working directory and cleaned of ".", ".."
 * and repeated slashes, without looking at the file system (a path under a
 * stale mount cannot be resolved). Caller frees; NULL on failure. */
static char *lexical_abspath(const char *p) {
  char cwd[PATH_MAX];
  if (p[0] != '/' && !getcwd(cwd, sizeof cwd))
    return NULL;
  size_t n = (p[0] == '/' ? 0 : strlen(cwd) + 1) + strlen(p) + 2;
  char *in = malloc(n), *out = malloc(n);
  if (!in || !out) {
    free(in);
    free(out);
    return NULL;
  }
  if (p[0] == '/')
    snprintf(in, n, "%s", p);
  else
    snprintf(in, n, "%s/%s", cwd, p);
  size_t o = 0;
  char *save = NULL;
  for (char *c = strtok_r(in, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
    if (!strcmp(c, "."))
      continue;
    if (!strcmp(c, "..")) {
      while (o > 0 && out[o - 1] != '/')
        o--;
      if (o > 0)
        o--; /* the slash */
      continue;
    }
    out[o++] = '/';
    size_t cl = strlen(c);
    memcpy(out + o, c, cl);
    o += cl;
  }
  if (o == 0)
    out[o++] = '/';
  out[o] = '\0';
  free(in);
  return out;
}

/* s as one shell word for a command to copy: unchanged when it holds only
 * safe characters, else in single quotes. Caller frees; NULL on failure. */
static char *shell_word(const char *s) {
  size_t n = strlen(s);
  if (n && strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                     "0123456789/._+-=:,@%") == n)
    return strdup(s);
  char *w = malloc(4 * n + 3), *o = w;
  if (!w)
    return NULL;
  *o++ = '\'';
  for (; *s; s++) {
    if (*s == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else {
      *o++ = *s;
    }
  }
  *o++ = '\'';
  *o = '\0';
  return w;
}

/* MOUNTPOINT's stat failed with ENOTCONN: a FUSE mount whose daemon died.
 * Name the mount to clean up (MNT itself, or the stale mount above it). */
static void report_stale(const char *mnt) {
  struct mount_entry m = {0};
  char *abs = lexical_abspath(mnt);
  const char *target = mnt;
  if (abs && mountinfo_find(abs, 1, &m) == 1 && strcmp(m.point, abs))
    target = m.point;
  char *word = shell_word(target);
  if (target == mnt)
    fprintf(stderr,
            "zarrfs: %s: stale mount (Transport endpoint is not connected: "
            "its daemon died); clean it up with: fusermount3 -u %s\n",
            mnt, word ? word : mnt);
  else
    fprintf(stderr,
            "zarrfs: %s: inside the stale mount %s (Transport endpoint is "
            "not connected: its daemon died); clean it up with: "
            "fusermount3 -u %s\n",
            mnt, target, word ? word : target);
  free(word);
  free(abs);
  mount_entry_clear(&m);
}

/* Refuse (one line, -1) when MNT is already the mount point of a FUSE file
 * system: mounting again would stack a second mount on it. Other types
 * (an empty tmpfs, say) are fine; so is a system without mountinfo. */
static int check_not_mounted(const char *mnt) {
  char *abs = realpath(mnt, NULL);
  if (!abs) {
    fprintf(stderr, "zarrfs: %s: %s\n", mnt, strerror(errno));
    return -1;
  }
  struct mount_entry m = {0};
  int rc = 0;
  struct statfs sfs;
  if (mountinfo_find(abs, 0, &m) == 1 && is_fuse_type(m.type)) {
    /* stat may be answered from the kernel's attribute cache after the
     * daemon died; statfs always asks the daemon. */
    if (statfs(mnt, &sfs) < 0 && errno == ENOTCONN) {
      report_stale(mnt);
      rc = -1;
      goto done;
    }
    char *word = shell_word(mnt);
    fprintf(stderr,
            "zarrfs: %s: already a mount point (%s %s); unmount it first "
            "with: fusermount3 -u %s\n",
            mnt, m.type, m.source, word ? word : mnt);
    free(word);
    rc = -1;
  }
done:
  mount_entry_clear(&m);
  free(abs);
  return rc;
}

/* Set the kernel's read-ahead for the new mount at mnt (the mount's own
 * backing device, /sys/class/bdi/MAJOR:MINOR), so that sequential reads
 * through the page cache reach the daemon as requests of up to `bytes`
 * (1 MiB: the largest FUSE request, max_pages 256) instead of 128 KiB: the
 * FUSE handshake can lower the kernel's read-ahead but never raise it. It
 * needs root; failing changes nothing else and is said at debug level. */
static void set_kernel_readahead(const char *mnt, unsigned long long bytes) {
  struct mount_entry m = {0};
  char p[128];
  int fd = -1;
  if (mountinfo_find(mnt, 0, &m) == 1 && is_fuse_type(m.type) &&
      strchr(m.dev, ':') && !strchr(m.dev, '/') &&
      snprintf(p, sizeof p, "/sys/class/bdi/%s/read_ahead_kb", m.dev) <
          (int)sizeof p)
    fd = open(p, O_WRONLY | O_CLOEXEC);
  char val[32];
  int n = snprintf(val, sizeof val, "%llu\n", (bytes + 1023) / 1024);
  if (fd < 0 || write(fd, val, (size_t)n) != n)
    zlog(ZLOG_DEBUG, "%s: kernel read-ahead not set: %s", mnt,
         fd < 0 && !m.dev ? "mount not found" : strerror(errno));
  if (fd >= 0)
    close(fd);
  mount_entry_clear(&m);
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
  if (remote_is_url(source))
    goto mountpoint; /* checked when the store opens */
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
    if (errno == ENOTCONN)
      report_stale(mnt);
    else
      fprintf(stderr, "zarrfs: %s: %s\n", mnt, strerror(errno));
    return -1;
  }
  if (!S_ISDIR(st.st_mode)) {
    fprintf(stderr, "zarrfs: %s: mount point is not a directory\n", mnt);
    return -1;
  }
  return check_not_mounted(mnt);
}

/* ---- shutdown on SIGTERM, SIGINT, SIGHUP ---- */

/* How long in-flight requests get after a shutdown signal before the mount
 * is detached and the daemon exits without them. The engine's long loops
 * see engine_stop within milliseconds; this bounds what cannot be
 * interrupted (one huge decode, a slow disk). */
#define SHUTDOWN_GRACE_MS 500

/* What the signal handler, the watchdog thread and main share; lives in
 * main's frame for the life of the mount.
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

/* A URL naming a JSON file (a kerchunk reference file), not a store. */
static int url_is_json(const char *url) {
  size_t n = strcspn(url, "?#");
  return n > 5 && !strncasecmp(url + n - 5, ".json", 5);
}

/* A remote store must hold Zarr metadata at its root, as a local one
 * (check_paths): refuse at once, saying what the server answered. */
static int remote_root_check(struct store *s, const char *src) {
  static const char *const names[] = {"zarr.json", ".zgroup", ".zarray"};
  struct zerr err = {0};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    enum store_entry_type t;
    uint64_t sz;
    zerr_clear(&err);
    int rc = store_stat(s, names[i], &t, &sz, &err);
    if (rc == 0 && t == STORE_FILE)
      return 0;
    if (rc < 0 && rc != -ENOENT) {
      fprintf(stderr, "zarrfs: %s: %s\n", src, err.msg);
      return -1;
    }
  }
  fprintf(stderr, "zarrfs: %s: not a Zarr store (no zarr.json, .zgroup or "
          ".zarray at its root)\n", src);
  return -1;
}

/* Seconds (a decimal number) into milliseconds; -1 when malformed. */
static long parse_ms(const char *s) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || *end || !(v > 0) || v > 86400 * 7)
    return -1;
  return (long)(v * 1000);
}

/* The remote context from the options (S3 settings from the options, the
 * environment and ~/.aws). Prints the refusal and returns -1. */
static int remote_setup(const struct cli_remote *o, struct remote **out) {
  struct remote_config rc;
  remote_config_default(&rc);
  struct {
    const char *name, *val;
    long *ms;
  } times[] = {{"connect_timeout", o->connect_timeout, &rc.http.connect_ms},
               {"stall_timeout", o->stall_timeout, &rc.http.stall_ms},
               {"timeout", o->timeout, &rc.http.op_ms}};
  for (size_t i = 0; i < sizeof times / sizeof *times; i++)
    if (times[i].val && (*times[i].ms = parse_ms(times[i].val)) < 0) {
      fprintf(stderr, "zarrfs: bad %s '%s' (seconds, e.g. 30 or 0.5)\n",
              times[i].name, times[i].val);
      return -1;
    }
  struct {
    const char *name, *val;
    size_t *dst;
  } sizes[] = {{"remote_cache", o->remote_cache, &rc.cache_size},
               {"block_size", o->block_size, &rc.block_size},
               {"max_request", o->max_request, &rc.max_request},
               {"readahead", o->readahead, &rc.readahead}};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    long long v;
    if (sizes[i].val &&
        ((v = parse_size(sizes[i].val)) < 0 || (v == 0 && i != 3))) {
      fprintf(stderr, "zarrfs: bad %s '%s' (a size such as 64K or 8M)\n",
              sizes[i].name, sizes[i].val);
      return -1;
    }
    if (sizes[i].val)
      *sizes[i].dst = (size_t)v;
  }
  struct {
    const char *name, *val;
    int *dst;
    int min, max;
  } counts[] = {{"retries", o->retries, &rc.http.max_attempts, 0, 100},
                {"connections", o->connections, &rc.http.max_conns, 1, 1024}};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    if (!counts[i].val)
      continue;
    char *end;
    long v = strtol(counts[i].val, &end, 10);
    if (end == counts[i].val || *end || v < counts[i].min ||
        v > counts[i].max) {
      fprintf(stderr, "zarrfs: bad %s '%s' (%d to %d)\n", counts[i].name,
              counts[i].val, counts[i].min, counts[i].max);
      return -1;
    }
    *counts[i].dst = (int)v + (i == 0); /* retries -> attempts */
  }
  struct s3_options so = {o->region, o->endpoint, o->profile,
                          o->no_sign_request, o->requester_pays};
  struct s3_config *s3;
  struct zerr err = {0};
  if (s3_config_load(&so, &s3, &err) < 0 ||
      remote_new(&rc, s3, out, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    return -1;
  }
  return 0;
}

/* Parse, check, mount, serve. */
/* Decoding writes fresh buffers of megabytes (decompressed chunks, rendered
 * text); with 4 KiB pages a 1M-string chunk costs some 15,000 page faults,
 * which measured as half the daemon's time. glibc backs its large
 * allocations with transparent huge pages when told so by the tunable
 * glibc.malloc.hugetlb=1, which it reads only at start: so the daemon
 * starts itself again, once, with it set (ZARRFS_MALLOC_TUNED marks the
 * second start; ZARRFS_MALLOC_TUNED=0 set by the user keeps the default).
 * Nothing is done yet when this runs; if exec fails we go on as we are. */
static void malloc_tune(char **argv) {
  if (getenv("ZARRFS_MALLOC_TUNED"))
    return;
  const char *old = getenv("GLIBC_TUNABLES");
  if (old && strstr(old, "glibc.malloc.hugetlb"))
    return;
  size_t len = (old ? strlen(old) : 0) + 32;
  char *tun = malloc(len);
  if (!tun)
    return;
  snprintf(tun, len, "%s%sglibc.malloc.hugetlb=1", old ? old : "",
           old && *old ? ":" : "");
  if (setenv("GLIBC_TUNABLES", tun, 1) == 0 &&
      setenv("ZARRFS_MALLOC_TUNED", "1", 1) == 0)
    execv("/proc/self/exe", argv);
  /* exec failed: undo, and run with the defaults */
  if (old)
    setenv("GLIBC_TUNABLES", old, 1);
  else
    unsetenv("GLIBC_TUNABLES");
  free(tun);
}

int main(int argc, char **argv) {
  malloc_tune(argv);
  struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
  struct cli cli = {0};
  struct fuse_cmdline_opts opts = {0};
  struct engine *engine = NULL;
  struct confine *confine = NULL;
  struct remote *remote = NULL;
  struct fuse_session *se = NULL;
  struct zfs_inodes *inodes = NULL;
  struct shutdown shut = {0};
  int status = 1;

  if (sem_init(&shut.requested, 0, 0) < 0) {
    fprintf(stderr, "zarrfs: sem_init: %s\n", strerror(errno));
    return 1;
  }

  if (fuse_opt_parse(&args, &cli, cli_opts, cli_proc) < 0)
    goto out;
  if (cli.help) {
    usage(argv[0]);
    printf("\nOptions of the FUSE library:\n");
    fuse_lowlevel_help();
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
  long long kernel_readahead = 1 << 20;
  if (cli.kernel_readahead &&
      ((kernel_readahead = parse_size(cli.kernel_readahead)) < 0 ||
       kernel_readahead > (1ll << 30))) {
    fprintf(stderr, "zarrfs: bad kernel_readahead '%s'\n",
            cli.kernel_readahead);
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

  int lazy_sizes = remote_is_url(cli.source); /* remote: never fetch for stat */
  if (cli.sizes) {
    if (!strcmp(cli.sizes, "lazy")) {
      lazy_sizes = 1;
    } else if (!strcmp(cli.sizes, "exact")) {
      lazy_sizes = 0;
    } else {
      fprintf(stderr, "zarrfs: bad sizes '%s' (exact or lazy)\n", cli.sizes);
      goto out;
    }
  }

  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int decode_threads = ncpu < 1 ? 1 : ncpu > 16 ? 16 : (int)ncpu;
  if (cli.decode_threads) {
    char *end;
    long v = strtol(cli.decode_threads, &end, 10);
    if (*end || end == cli.decode_threads || v < 0 || v > 64) {
      fprintf(stderr, "zarrfs: bad decode_threads '%s' (0 to 64)\n",
              cli.decode_threads);
      goto out;
    }
    decode_threads = (int)v;
  }

  zlog_setup(!opts.foreground, opts.debug ? ZLOG_DEBUG : ZLOG_INFO);

  struct zerr err = {0};
  struct store *store;
  struct stat sst;
  int is_url = remote_is_url(cli.source);
  int is_refs = is_url ? url_is_json(cli.source)
                       : stat(cli.source, &sst) == 0 && S_ISREG(sst.st_mode);
  if (remote_setup(&cli.rem, &remote) < 0)
    goto out;
  /* Allowed roots of manifest targets: the reference file's directory (or
   * the store root) and every -o allow_root. */
  if (confine_new(&confine, &err) < 0) {
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    goto out;
  }
  confine_set_remote(confine, remote);
  if (cli.remote_targets && !strcmp(cli.remote_targets, "no")) {
    confine_forbid_remote(confine);
  } else if (cli.remote_targets && strcmp(cli.remote_targets, "yes")) {
    fprintf(stderr, "zarrfs: bad remote_targets '%s' (yes or no)\n",
            cli.remote_targets);
    goto out;
  }
  char *srcdir = strdup(cli.source);
  if (!srcdir || is_url) {
    /* a remote source allows no local root of its own */
  } else if (
      confine_add_root(confine, is_refs ? dirname(srcdir) : cli.source, &err) <
          0) {
    free(srcdir);
    fprintf(stderr, "zarrfs: %s\n", err.msg);
    goto out;
  }
  if (!srcdir) {
    fprintf(stderr, "zarrfs: out of memory\n");
    goto out;
  }
  free(srcdir);
  for (size_t i = 0; i < cli.n_allow; i++)
    if ((remote_is_url(cli.allow_roots[i])
             ? confine_add_url_prefix(confine, cli.allow_roots[i], &err)
             : confine_add_root(confine, cli.allow_roots[i], &err)) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      goto out;
    }
  if (is_url && is_refs) {
    if (store_open_refs_url(remote, cli.source, confine, &store, &err) < 0) {
      fprintf(stderr, "zarrfs: %s: cannot load the reference file: %s\n",
              cli.source, err.msg);
      goto out;
    }
  } else if (is_url) {
    if (store_open_remote(remote, cli.source, &store, &err) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      goto out;
    }
    if (remote_root_check(store, cli.source) < 0) {
      store_free(store);
      goto out;
    }
    /* Manifests of a remote store may name no local file. */
    confine_set_remote_reference(confine);
    if (store_wrap_vzarr(store, confine, &store, &err) < 0) {
      fprintf(stderr, "zarrfs: %s\n", err.msg);
      goto out;
    }
  } else if (is_refs) {
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
                               no_consolidated, lazy_sizes, decode_threads};
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

  if (zfs_inodes_new(&inodes) < 0) {
    fprintf(stderr, "zarrfs: out of memory\n");
    goto out;
  }
  struct zfs_fuse_ctx fctx = {engine,
                              {attr_timeout, (unsigned)kernel_readahead},
                              (long)time(NULL),
                              getuid(),
                              getgid(),
                              inodes};
  se = fuse_session_new(&args, zfs_operations(),
                        sizeof(struct fuse_lowlevel_ops), &fctx);
  if (!se)
    goto out;
  /* Handlers first: a signal from here on stops the mount cleanly. */
  shut.engine = engine;
  shut.remote = remote;
  shut.se = se;
  shut.mountpoint = opts.mountpoint;
  if (shutdown_install(&shut) < 0) {
    fprintf(stderr, "zarrfs: cannot install signal handlers: %s\n",
            strerror(errno));
    goto out;
  }
  if (fuse_session_mount(se, opts.mountpoint) != 0)
    goto out;
  if (kernel_readahead > 0)
    set_kernel_readahead(opts.mountpoint, (unsigned long long)kernel_readahead);
  if (fuse_daemonize(opts.foreground) != 0) {
    fuse_session_unmount(se);
    goto out;
  }
  pthread_t watch; /* after fuse_daemonize: a fork keeps no threads */
  int werr = shutdown_start(&shut, &watch);
  if (werr) {
    zlog(ZLOG_ERR, "cannot start the shutdown thread: %s", strerror(werr));
    fuse_session_unmount(se);
    goto out;
  }
  int rc;
  if (opts.singlethread) {
    rc = fuse_session_loop(se);
  } else {
    struct fuse_loop_config *lc = fuse_loop_cfg_create();
    fuse_loop_cfg_set_clone_fd(lc, opts.clone_fd);
    fuse_loop_cfg_set_max_threads(lc, opts.max_threads ? opts.max_threads : 16);
    if (opts.max_idle_threads != UINT_MAX)
      fuse_loop_cfg_set_idle_threads(lc, opts.max_idle_threads);
    rc = fuse_session_loop_mt(se, lc);
    fuse_loop_cfg_destroy(lc);
  }
  atomic_store(&shut.loop_returned, 1);
  if (atomic_exchange(&shut.claimed, 1))
    for (;;) /* the watchdog is unmounting and will _exit */
      pause();
  shutdown_detach();
  sem_post(&shut.requested); /* let the watchdog return */
  pthread_join(watch, NULL);
  fuse_session_unmount(se);
  /* The loop returns 0 after an unmount, -errno on failure; after a
   * shutdown signal it may return -EINTR (single-threaded loop), yet that
   * exit was asked for: status 0. */
  status = rc >= 0 || atomic_load(&shut.signo) ? 0 : 1;

out:
  shutdown_detach(); /* before the session is freed */
  if (se)
    fuse_session_destroy(se);
  zfs_inodes_free(inodes); /* after the session: no request runs */
  engine_free(engine);
  confine_free(confine); /* after the engine: its store borrows it */
  remote_free(remote);   /* likewise */
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
  free(cli.sizes);
  free(cli.decode_threads);
  free(cli.remote_targets);
  free(cli.kernel_readahead);
  char **rs[] = {&cli.rem.region, &cli.rem.endpoint, &cli.rem.profile,
                 &cli.rem.connect_timeout, &cli.rem.stall_timeout,
                 &cli.rem.timeout, &cli.rem.retries, &cli.rem.remote_cache,
                 &cli.rem.block_size, &cli.rem.max_request,
                 &cli.rem.readahead, &cli.rem.connections};
  for (size_t i = 0; i < sizeof rs / sizeof *rs; i++)
    free(*rs[i]);
  fuse_opt_free_args(&args);
  sem_destroy(&shut.requested);
  return status;
}
