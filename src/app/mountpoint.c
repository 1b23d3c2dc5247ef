/* mountpoint.c - MOUNTPOINT before and after the mount: refuse one that is
 * missing, not a directory, or already a live or stale FUSE mount (read
 * from /proc/self/mountinfo, with the fusermount3 command that fixes it),
 * and set the kernel's read-ahead of the new mount. FUSE-free. */
#include "mountpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "../util/log.h"

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
void mountpoint_set_readahead(const char *mnt, unsigned long long bytes) {
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

/* Refuse a missing, non-directory or already mounted MOUNTPOINT. */
/* The number of entries of directory mnt (besides . and ..), counting at
 * most to 2; -1 when it cannot be read (then the mount decides). */
static int entries(const char *mnt) {
  DIR *d = opendir(mnt);
  if (!d)
    return -1;
  int n = 0;
  struct dirent *de;
  while (n < 2 && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
      n++;
  closedir(d);
  return n;
}

int mountpoint_check(const char *mnt, int allow_nonempty) {
  struct stat st;
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
  if (check_not_mounted(mnt) < 0)
    return -1;
  if (!allow_nonempty && entries(mnt) > 0) {
    fprintf(stderr,
            "zarrfs: %s: mount point is not empty (the mount would hide "
            "what is there); use an empty directory, or -o nonempty to "
            "mount over it\n",
            mnt);
    return -1;
  }
  return 0;
}
