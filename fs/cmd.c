/* cmd.c - zarrfs without FUSE (see cmd.h). */
#include "cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../src/io/bytesrc.h"
#include "../src/store/store.h"
#include "engine/engine.h"
#include "engine/node.h"
#include "namespace/namespace.h"
#include "namespace/ns_dir.h"
#include "namespace/zfs_errno.h"
#include "views/info.h"
#include "views/view.h"

/* Bytes per read: the size of the mount's FUSE requests. */
#define CMD_PIECE (1u << 20)

/* One command's state: where it writes, and whether that failed. */
struct cmd {
  struct engine *e;
  FILE *out, *err;
  int failed;       /* a PATH failed: exit status 1 */
  int write_failed; /* out could not be written: stop, status 2 */
};

/* A progress line on a terminal: first after CMD_PROGRESS_FIRST_MS, then
 * at most every CMD_PROGRESS_EVERY_MS (ZARRFS_PROGRESS_MS sets both, for
 * tests), erased when the file is done. */
#define CMD_PROGRESS_FIRST_MS 1000
#define CMD_PROGRESS_EVERY_MS 250

struct cmd_progress {
  int on;           /* stderr is a terminal */
  uint64_t total;   /* the file's size, 0 when not known cheaply */
  int64_t start_ms; /* when the file was opened */
  int64_t next_ms;  /* when the next line may be shown */
  int64_t every_ms; /* between lines */
  int shown;        /* a line is on the terminal */
};

/* Milliseconds of the monotonic clock. */
static int64_t cmd_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* n bytes in words: "12.3 MiB". */
static void cmd_bytes(uint64_t n, char *out, size_t cap) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)n;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  snprintf(out, cap, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
}

/* Start the progress of one file (its size, when known, set after). */
static void cmd_progress_start(struct cmd *c, struct cmd_progress *p) {
  memset(p, 0, sizeof *p);
  p->on = isatty(fileno(c->err));
  if (!p->on)
    return;
  const char *env = getenv("ZARRFS_PROGRESS_MS");
  int64_t first = CMD_PROGRESS_FIRST_MS;
  p->every_ms = CMD_PROGRESS_EVERY_MS;
  if (env && *env)
    first = p->every_ms = atoll(env);
  p->start_ms = cmd_now_ms();
  p->next_ms = p->start_ms + first;
}

/* Show where path's copy is at done bytes, when it is time to. */
static void cmd_progress_step(struct cmd *c, struct cmd_progress *p,
                              const char *path, uint64_t done) {
  if (!p->on)
    return;
  int64_t now = cmd_now_ms();
  if (now < p->next_ms)
    return;
  p->next_ms = now + p->every_ms;
  double secs = (double)(now - p->start_ms) / 1000;
  double rate = secs > 0 ? (double)done / secs : 0;
  char d[32], r[32], t[32] = "", left[48] = "";
  cmd_bytes(done, d, sizeof d);
  cmd_bytes((uint64_t)rate, r, sizeof r);
  if (p->total) {
    cmd_bytes(p->total, t, sizeof t);
    if (rate > 0 && p->total > done)
      snprintf(left, sizeof left, ", %.0f s left",
               (double)(p->total - done) / rate + 0.5);
    fprintf(c->err, "\rzarrfs: %s: %s of %s (%.0f%%), %s/s%s\033[K", path, d, t,
            100.0 * (double)done / (double)p->total, r, left);
  } else {
    fprintf(c->err, "\rzarrfs: %s: %s, %s/s\033[K", path, d, r);
  }
  fflush(c->err);
  p->shown = 1;
}

/* Erase the progress line, if one is shown. */
static void cmd_progress_end(struct cmd *c, struct cmd_progress *p) {
  if (p->shown) {
    fputs("\r\033[K", c->err);
    fflush(c->err);
  }
}

/* Report that path failed with rc (a negative errno), and why. A name
 * that is not there says where it was looked for (the reason would only
 * repeat the errno's words). */
static void fail(struct cmd *c, const char *path, int rc,
                 const struct zerr *err) {
  int code = -zfs_errno(rc);
  if (rc == -ENOENT &&
      (!err || !err->code || !strcmp(err->msg, "no such file")))
    fprintf(c->err, "zarrfs: %s: %s in %s (zarrfs ls lists what is there)\n",
            path, strerror(code), c->e->store->location);
  else if (err && err->code && err->msg[0])
    fprintf(c->err, "zarrfs: %s: %s (%s)\n", path, strerror(code), err->msg);
  else
    fprintf(c->err, "zarrfs: %s: %s\n", path, strerror(code));
  c->failed = 1;
}

/* Write n bytes to out. */
static int put(struct cmd *c, const void *p, size_t n) {
  if (n && fwrite(p, 1, n, c->out) != n) {
    c->write_failed = 1;
    return -EIO;
  }
  return 0;
}

/* The path in the store's namespace: "" for the root ("", "/", "."),
 * without trailing slashes. */
static void norm(const char *in, char *out, size_t cap) {
  while (*in == '/')
    in++;
  if (!strcmp(in, "."))
    in = "";
  snprintf(out, cap, "%s", in);
  size_t n = strlen(out);
  while (n > 0 && out[n - 1] == '/')
    out[--n] = '\0';
}

/* Resolve path into *ent (heap: an entry holds a 4 KiB key). */
static int resolve(struct cmd *c, const char *path, struct ns_entry *ent,
                   struct zerr *err) {
  char p[4096];
  norm(path, p, sizeof p);
  return ns_resolve(c->e, p, ent, err);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ls: the names of a directory, sorted; a file names itself. */
static void cmd_ls(struct cmd *c, const char *path, struct ns_entry *ent) {
  struct zerr err = {0};
  int rc = resolve(c, path, ent, &err);
  if (rc < 0) {
    fail(c, path, rc, &err);
    return;
  }
  if (ent->kind != NS_DIR) {
    fprintf(c->out, "%s\n", path);
    return;
  }
  struct ns_dir *d;
  char p[4096];
  norm(path, p, sizeof p);
  rc = ns_dir_open(c->e, p, &d, &err); /* the path: .text is not a key */
  if (rc < 0) {
    fail(c, path, rc, &err);
    return;
  }
  size_t n = ns_dir_count(d);
  const char **names = malloc((n ? n : 1) * sizeof *names);
  if (!names) {
    ns_dir_free(d);
    fail(c, path, -ENOMEM, NULL);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    struct ns_dirent de;
    ns_dir_get(d, i, &de);
    names[i] = de.name;
  }
  qsort(names, n, sizeof *names, by_name);
  for (size_t i = 0; i < n && !c->write_failed; i++)
    if (put(c, names[i], strlen(names[i])) == 0)
      put(c, "\n", 1);
  free(names);
  ns_dir_free(d);
}

/* cat: the bytes of one file, in pieces, as a sequential reader. */
static void cmd_cat(struct cmd *c, const char *path, struct ns_entry *ent,
                    char *buf) {
  struct zerr err = {0};
  int rc = resolve(c, path, ent, &err);
  if (rc == 0 && ent->kind == NS_DIR)
    rc = -EISDIR;
  if (rc < 0) {
    fail(c, path, rc, &err);
    return;
  }
  if (ns_text_whole(ent)) { /* one snapshot, as an open of the mount */
    char *text;
    size_t tl;
    rc = ns_text(c->e, ent, &text, &tl, &err);
    if (rc < 0)
      fail(c, path, rc, &err);
    else
      put(c, text, tl);
    free(text);
    return;
  }
  struct bytesrc *raw = NULL;
  struct view_cursor *cur = NULL;
  if (ent->kind == NS_RAW)
    rc = store_get(ent->eng->store, ent->key, &raw, &err);
  else
    cur = view_cursor_new(); /* NULL only costs re-decoding */
  uint64_t off = 0, total = 0;
  struct cmd_progress prog;
  cmd_progress_start(c, &prog);
  if (prog.on) { /* the size only where a terminal shows it */
    struct zerr serr = {0};
    if (raw)
      total = raw->size;
    else if (ns_size(c->e, ent, &total, &serr) < 0)
      total = 0;
    prog.total = total;
  }
  while (rc == 0 && !c->write_failed) {
    long n;
    if (raw) {
      uint64_t left = raw->size - off;
      size_t want = left < CMD_PIECE ? (size_t)left : CMD_PIECE;
      int r = want ? bytesrc_read_range(raw, off, want, buf, &err) : 0;
      n = r < 0 ? r : (long)want;
    } else {
      n = ns_read_view(c->e, ent, off, CMD_PIECE, buf, cur, &err);
      /* the text before a bad chunk goes out; the next read fails */
      if (n < 0)
        n = ns_read_before_failure(c->e, ent, off, CMD_PIECE, buf, n);
    }
    if (n <= 0) {
      rc = (int)n;
      break;
    }
    put(c, buf, (size_t)n);
    off += (uint64_t)n;
    cmd_progress_step(c, &prog, path, off);
  }
  cmd_progress_end(c, &prog);
  if (rc < 0)
    fail(c, path, rc, &err);
  bytesrc_unref(raw);
  view_cursor_free(c->e, cur);
}

/* stat: "KIND SIZE PATH". */
static void cmd_stat(struct cmd *c, const char *path, struct ns_entry *ent) {
  struct zerr err = {0};
  int rc = resolve(c, path, ent, &err);
  uint64_t size = 0;
  if (rc == 0)
    rc = ns_size(c->e, ent, &size, &err);
  if (rc < 0) {
    fail(c, path, rc, &err);
    return;
  }
  static const char *const kinds[] = {
      [NS_DIR] = "directory",         [NS_RAW] = "file",
      [NS_CHUNK_VIEW] = "chunk-view", [NS_ARRAY_VIEW] = "array-view",
      [NS_INFO_VIEW] = "info-view",   [NS_STATS] = "stats",
      [NS_HISTORY] = "history",       [NS_TABLE] = "table",
  };
  fprintf(c->out, "%s %llu %s\n", kinds[ent->kind], (unsigned long long)size,
          path);
}

/* info: the node's metadata, one field a line (fs/views/info.c). */
static void cmd_info(struct cmd *c, const char *path, struct ns_entry *ent) {
  struct zerr err = {0};
  int rc = resolve(c, path, ent, &err);
  if (rc == 0 && ent->kind != NS_DIR)
    rc = -ENOTDIR;
  if (rc < 0) {
    fail(c, path, rc, &err);
    return;
  }
  const struct znode *n = node_get(ent->eng->nodes, ent->key);
  if (n->kind == ZNODE_NONE) {
    fprintf(c->err, "zarrfs: %s: not a Zarr array or group (no metadata)\n",
            path);
    c->failed = 1;
    return;
  }
  char *text;
  size_t len;
  rc = info_text(ent->eng, n, &text, &len, &err);
  if (rc < 0) {
    fail(c, path, rc, &err);
    return;
  }
  put(c, text, len);
  free(text);
}

int cmd_run(struct engine *e, enum cli_tool tool, char *const *paths, size_t n,
            FILE *out, FILE *errf) {
  struct cmd c = {.e = e, .out = out, .err = errf};
  static char *const root[] = {"/"};
  if (n == 0) {
    paths = root;
    n = 1;
  }
  struct ns_entry *ent = malloc(sizeof *ent);
  char *buf = tool == CLI_TOOL_CAT ? malloc(CMD_PIECE) : NULL;
  if (!ent || (tool == CLI_TOOL_CAT && !buf)) {
    fprintf(errf, "zarrfs: out of memory\n");
    free(ent);
    free(buf);
    return 1;
  }
  for (size_t i = 0; i < n && !c.write_failed; i++) {
    switch (tool) {
    case CLI_TOOL_LS:
      cmd_ls(&c, paths[i], ent);
      break;
    case CLI_TOOL_CAT:
      cmd_cat(&c, paths[i], ent, buf);
      break;
    case CLI_TOOL_STAT:
      cmd_stat(&c, paths[i], ent);
      break;
    case CLI_TOOL_INFO:
      cmd_info(&c, paths[i], ent);
      break;
    }
  }
  free(ent);
  free(buf);
  if (fflush(out) != 0 || ferror(out))
    c.write_failed = 1;
  if (c.write_failed) {
    fprintf(errf, "zarrfs: cannot write the output: %s\n", strerror(errno));
    return 2;
  }
  return c.failed ? 1 : 0;
}
