/* faultsrv.c - a small HTTP/1.1 file server that misbehaves on request,
 * for the tests of remote reading (tests/unit/stores/check_remote.c and the
 * integration tests). Not part of zarrfs.
 *
 *   faultsrv --root DIR --port-file FILE [--log FILE] [--bind ADDR] [--times]
 *
 * Binds ADDR (default 127.0.0.1) on an ephemeral port and writes the port
 * to FILE once listening. Serves the files under DIR for GET and HEAD with
 * single ranges (bytes=a-b, a-, -n: 206 and Content-Range; 416 past the
 * end), keep-alive, one thread per connection.
 *
 * Faults, per request by a path prefix /_f/MODE[,MODE...]/rest (rest is
 * served from DIR), or for every request without a prefix after
 * GET /_control/mode/MODE[,MODE...] (ok clears it):
 *   ok        serve normally
 *   500once   the first request of a path (per mode set) gets 500; 500xN
 *             the first N
 *   503       always 503
 *   429       the first request of a path gets 429 with Retry-After: 1
 *   short     headers promising the whole body, half of it, then close
 *   stall     headers and one byte of body, then nothing (until the client
 *             closes, at most 600 s)
 *   stallhdr  no answer at all
 *   reset     headers and half the body, then a TCP reset
 *   norange   Range ignored: 200 with the whole body
 *   lat=MS    wait MS before answering (combines with the others)
 *   etag      a strong ETag from the file's size and mtime, and If-Match
 *             honoured (412 when it differs)
 *   etagreq   a new ETag on every request, If-Match ignored (an object
 *             that changes all the time, on a careless server)
 *   (without etag or etagreq an answer names the file's Last-Modified, as
 *   nginx and most servers do)
 * Hostile servers:
 *   novalid   no validator at all: no ETag, no Last-Modified
 *   flip      every other request of a path serves PATH.alt instead (an
 *             object that changes between requests)
 *   endless   requests of a path after its first: 200, no validator, no
 *             Content-Length, the file then endless filler, until the
 *             client closes
 *   gzip      200 with Content-Encoding: gzip and a body of another length
 *   excess    a body 64 bytes longer than its Content-Length
 *   redir=HP  302 to http://HP/PATH (HP host:port; "." this server)
 *   s3many    (S3 listings) 1,000 keys of 200 bytes more on every page
 * S3 listings: GET /BUCKET?...list-type=2...&prefix=P lists DIR/BUCKET/P
 * as ListObjectsV2 does with delimiter '/' (one page, keys url-encoded
 * when encoding-type=url is asked for); in modes
 *   s3loop    every page is truncated with the same continuation token
 *   s3endless every page is truncated with a new continuation token
 *   s3bad     each listing also holds keys no file system can name: a
 *             control character, "..", a 300-byte segment, an empty
 *             segment, a NUL byte
 * One log line per request (control requests excepted):
 *   METHOD PATH RANGE|- STATUS BODY_BYTES
 * (with --log-auth, then auth=yes|no: whether it carried Authorization or
 * x-amz-security-token)
 * and with --times, first the milliseconds (since the server started) at
 * which the request arrived and at which its answer was sent:
 *   ARRIVED_MS DONE_MS METHOD PATH RANGE|- STATUS BODY_BYTES
 * (what a test of request order reads: which requests were in flight
 * together).  * GET /_control/count answers the number of requests logged. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_SEEN 4096

struct server {
  const char *root;
  FILE *log;
  int times;            /* --times: log arrival and answer times */
  int log_auth;         /* --log-auth: log whether Authorization came */
  double t0;            /* when the server started (ms) */
  pthread_mutex_t lock; /* guards everything below */
  char mode[256];       /* global mode */
  long count;
  struct seen {
    char *key; /* "mode|path" */
    int n;
  } seen[MAX_SEEN];
  int nseen;
};

static struct server S;

struct modes {
  int fail500, is503, is429, is_short, stall, stallhdr, reset, norange;
  int s3loop, s3endless, s3bad, etag, etagreq;
  int novalid, flip, endless, gzip, excess, s3many;
  char redir[64];
  long lat_ms;
};

static void parse_modes(const char *m, struct modes *o) {
  memset(o, 0, sizeof *o);
  char buf[256];
  snprintf(buf, sizeof buf, "%s", m);
  for (char *save, *t = strtok_r(buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    if (!strcmp(t, "500once"))
      o->fail500 = 1;
    else if (!strncmp(t, "500x", 4))
      o->fail500 = atoi(t + 4);
    else if (!strcmp(t, "503"))
      o->is503 = 1;
    else if (!strcmp(t, "429"))
      o->is429 = 1;
    else if (!strcmp(t, "short"))
      o->is_short = 1;
    else if (!strcmp(t, "stall"))
      o->stall = 1;
    else if (!strcmp(t, "stallhdr"))
      o->stallhdr = 1;
    else if (!strcmp(t, "reset"))
      o->reset = 1;
    else if (!strcmp(t, "norange"))
      o->norange = 1;
    else if (!strcmp(t, "s3loop"))
      o->s3loop = 1;
    else if (!strcmp(t, "s3endless"))
      o->s3endless = 1;
    else if (!strcmp(t, "s3bad"))
      o->s3bad = 1;
    else if (!strcmp(t, "etag"))
      o->etag = 1;
    else if (!strcmp(t, "etagreq"))
      o->etagreq = 1;
    else if (!strncmp(t, "lat=", 4))
      o->lat_ms = atol(t + 4);
    else if (!strncmp(t, "redir=", 6))
      snprintf(o->redir, sizeof o->redir, "%s", t + 6);
    else
      o->novalid |= !strcmp(t, "novalid"), o->flip |= !strcmp(t, "flip"),
          o->endless |= !strcmp(t, "endless"), o->gzip |= !strcmp(t, "gzip"),
          o->excess |= !strcmp(t, "excess"), o->s3many |= !strcmp(t, "s3many");
  }
}

/* How many requests of (modes, path) came before this one. */
static int seen_before(const char *modes, const char *path) {
  char key[1200];
  snprintf(key, sizeof key, "%s|%s", modes, path);
  pthread_mutex_lock(&S.lock);
  int n = -1;
  for (int i = 0; i < S.nseen; i++)
    if (!strcmp(S.seen[i].key, key)) {
      n = S.seen[i].n++;
      break;
    }
  if (n < 0) {
    n = 0;
    if (S.nseen < MAX_SEEN) {
      S.seen[S.nseen].key = strdup(key);
      S.seen[S.nseen].n = 1;
      S.nseen++;
    }
  }
  pthread_mutex_unlock(&S.lock);
  return n;
}

/* When the request this thread serves arrived (--times), and whether it
 * carried Authorization (--log-auth). */
static __thread double arrived_ms;
static __thread int had_auth;

/* Milliseconds on the monotonic clock. */
static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void log_req(const char *method, const char *path, const char *range,
                    int status, long long bytes) {
  pthread_mutex_lock(&S.lock);
  S.count++;
  if (S.log) {
    if (S.times)
      fprintf(S.log, "%.1f %.1f ", arrived_ms - S.t0, now_ms() - S.t0);
    fprintf(S.log, "%s %s %s %d %lld%s\n", method, path,
            range && *range ? range : "-", status, bytes,
            !S.log_auth ? ""
            : had_auth  ? " auth=yes"
                        : " auth=no");
    fflush(S.log);
  }
  pthread_mutex_unlock(&S.lock);
}

static int send_all(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n) {
    ssize_t w = send(fd, c, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return -1;
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

static void sleep_ms(long ms) {
  nanosleep(&(struct timespec){ms / 1000, (ms % 1000) * 1000000L}, NULL);
}

/* Wait until the peer closes (or max seconds). */
static void hold(int fd, int max_s) {
  char b[256];
  struct timeval tv = {1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  for (int i = 0; i < max_s; i++) {
    ssize_t r = recv(fd, b, sizeof b, 0);
    if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
      return;
  }
}

static int simple(int fd, int status, const char *reason, const char *extra,
                  const char *body) {
  char h[512];
  int n = snprintf(h, sizeof h,
                   "HTTP/1.1 %d %s\r\nContent-Length: %zu\r\n%s"
                   "Content-Type: text/plain\r\n\r\n%s",
                   status, reason, strlen(body), extra ? extra : "", body);
  return send_all(fd, h, (size_t)n);
}

/* The value of query parameter name in q (percent-decoded into out). */
static int query_get(const char *q, const char *name, char *out, size_t n) {
  size_t nl = strlen(name);
  for (const char *p = q; p && *p;
       p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL) {
    if (strncmp(p, name, nl) || p[nl] != '=')
      continue;
    size_t o = 0;
    for (const char *v = p + nl + 1; *v && *v != '&' && o + 1 < n; v++) {
      if (*v == '%' && v[1] && v[2]) {
        char hx[3] = {v[1], v[2], 0};
        out[o++] = (char)strtol(hx, NULL, 16);
        v += 2;
      } else {
        out[o++] = *v == '+' ? ' ' : *v;
      }
    }
    out[o] = '\0';
    return 1;
  }
  return 0;
}

/* Append key to the growing body b: url-encoded (as S3 does, '+' for a
 * space) or XML-escaped. */
static void put_key(char **b, size_t *len, size_t *cap, const char *key,
                    size_t klen, int enc) {
  if (*len + 6 * klen + 1 > *cap) {
    *cap = 2 * (*len + 6 * klen + 1);
    *b = realloc(*b, *cap);
  }
  char *o = *b + *len;
  for (size_t i = 0; i < klen; i++) {
    unsigned char c = (unsigned char)key[i];
    if (enc && c == ' ')
      *o++ = '+';
    else if (enc && !(isalnum(c) || (c && strchr("-._~/", c))))
      o += sprintf(o, "%%%02X", c);
    else if (c == '&')
      o += sprintf(o, "&amp;");
    else if (c == '<')
      o += sprintf(o, "&lt;");
    else
      *o++ = (char)c;
  }
  *len = (size_t)(o - *b);
}

/* Append text to the body. */
static void put_str(char **b, size_t *len, size_t *cap, const char *s) {
  size_t n = strlen(s);
  if (*len + n + 1 > *cap) {
    *cap = 2 * (*len + n + 1);
    *b = realloc(*b, *cap);
  }
  memcpy(*b + *len, s, n);
  *len += n;
}

static int name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A ListObjectsV2 answer for bucket (a directory under the root). */
static int s3_list(int fd, const char *method, const char *path,
                   const char *bucket, const char *q, const struct modes *m) {
  char prefix[2048] = "", enc[16] = "", dir[4096];
  query_get(q, "prefix", prefix, sizeof prefix);
  int url =
      query_get(q, "encoding-type", enc, sizeof enc) && !strcmp(enc, "url");
  const char *slash = strrchr(prefix, '/');
  size_t dl = slash ? (size_t)(slash - prefix) + 1 : 0;
  snprintf(dir, sizeof dir, "%s/%s/%.*s", S.root, bucket, (int)dl, prefix);
  char **names = NULL;
  size_t nn = 0;
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.' && (!e->d_name[1] || !strcmp(e->d_name, "..")))
      continue;
    if (strncmp(e->d_name, prefix + dl, strlen(prefix + dl)))
      continue;
    names = realloc(names, (nn + 1) * sizeof *names);
    names[nn++] = strdup(e->d_name);
  }
  if (d)
    closedir(d);
  qsort(names, nn, sizeof *names, name_cmp);
  size_t len = 0, cap = 4096;
  char *b = malloc(cap);
  put_str(&b, &len, &cap,
          "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult>");
  put_str(&b, &len, &cap,
          m->s3loop || m->s3endless ? "<IsTruncated>true</IsTruncated>"
                                    : "<IsTruncated>false</IsTruncated>");
  for (size_t i = 0; i < nn; i++) {
    char full[4096];
    struct stat st;
    snprintf(full, sizeof full, "%s%s", dir, names[i]);
    if (stat(full, &st) < 0)
      continue;
    char key[4096];
    int kl = snprintf(key, sizeof key, "%.*s%s%s", (int)dl, prefix, names[i],
                      S_ISDIR(st.st_mode) ? "/" : "");
    if (S_ISDIR(st.st_mode)) {
      put_str(&b, &len, &cap, "<CommonPrefixes><Prefix>");
      put_key(&b, &len, &cap, key, (size_t)kl, url);
      put_str(&b, &len, &cap, "</Prefix></CommonPrefixes>");
    } else {
      char sz[64];
      put_str(&b, &len, &cap, "<Contents><Key>");
      put_key(&b, &len, &cap, key, (size_t)kl, url);
      snprintf(sz, sizeof sz, "</Key><Size>%lld</Size></Contents>",
               (long long)st.st_size);
      put_str(&b, &len, &cap, sz);
    }
    free(names[i]);
  }
  free(names);
  for (int i = 0; m->s3many && i < 1000; i++) {
    char key[512];
    pthread_mutex_lock(&S.lock);
    long page = S.count;
    pthread_mutex_unlock(&S.lock);
    int kl =
        snprintf(key, sizeof key, "%.*sm%ld-%d-", (int)dl, prefix, page, i);
    memset(key + kl, 'x', 200);
    put_str(&b, &len, &cap, "<Contents><Key>");
    put_key(&b, &len, &cap, key, (size_t)kl + 200, url);
    put_str(&b, &len, &cap, "</Key><Size>1</Size></Contents>");
  }
  if (m->s3bad) {
    char key[1024];
    static const char *const odd[] = {"ctl\001name", "..", "nul\0x", NULL};
    for (int i = 0; odd[i]; i++) {
      size_t ol = i == 2 ? 5 : strlen(odd[i]);
      int kl = snprintf(key, sizeof key, "%.*s", (int)dl, prefix);
      memcpy(key + kl, odd[i], ol);
      put_str(&b, &len, &cap, "<Contents><Key>");
      put_key(&b, &len, &cap, key, (size_t)kl + ol, url);
      put_str(&b, &len, &cap, "</Key><Size>1</Size></Contents>");
    }
    int kl = snprintf(key, sizeof key, "%.*s", (int)dl, prefix);
    memset(key + kl, 'L', 300);
    put_str(&b, &len, &cap, "<Contents><Key>");
    put_key(&b, &len, &cap, key, (size_t)kl + 300, url);
    put_str(&b, &len, &cap, "</Key><Size>1</Size></Contents>");
    kl = snprintf(key, sizeof key, "%.*s/", (int)dl, prefix);
    put_str(&b, &len, &cap, "<CommonPrefixes><Prefix>");
    put_key(&b, &len, &cap, key, (size_t)kl, url);
    put_str(&b, &len, &cap, "</Prefix></CommonPrefixes>");
  }
  if (url)
    put_str(&b, &len, &cap, "<EncodingType>url</EncodingType>");
  if (m->s3loop)
    put_str(&b, &len, &cap,
            "<NextContinuationToken>same-token</NextContinuationToken>");
  if (m->s3endless) {
    char t[96];
    pthread_mutex_lock(&S.lock);
    snprintf(t, sizeof t,
             "<NextContinuationToken>token-%ld</NextContinuationToken>",
             S.count);
    pthread_mutex_unlock(&S.lock);
    put_str(&b, &len, &cap, t);
  }
  put_str(&b, &len, &cap, "</ListBucketResult>\n");
  char h[256];
  int hn = snprintf(h, sizeof h,
                    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                    "Content-Type: application/xml\r\n\r\n",
                    len);
  int rc = send_all(fd, h, (size_t)hn) < 0 || send_all(fd, b, len) < 0 ? -1 : 0;
  log_req(method, path, "", 200, (long long)len);
  free(b);
  return rc;
}

/* The answers of the endless and gzip modes: 200 with no validator, and
 * either no length and the file followed by filler until the client
 * closes (at most 1 GiB), or Content-Encoding: gzip and a body that is
 * not the file's. Closes the connection (-1). */
static int hostile_body(int fd, int ffd, const char *method, const char *path,
                        const char *range, const struct modes *m) {
  char buf[65536];
  ssize_t r;
  long long sent = 0;
  if (m->gzip) {
    static const char gz[] =
        "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03not the file";
    char h[256];
    int hn = snprintf(h, sizeof h,
                      "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n"
                      "Content-Encoding: gzip\r\n\r\n",
                      sizeof gz - 1);
    if (send_all(fd, h, (size_t)hn) == 0 &&
        send_all(fd, gz, sizeof gz - 1) == 0)
      sent = sizeof gz - 1;
  } else if (send_all(fd, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n", 38) ==
             0) {
    while ((r = read(ffd, buf, sizeof buf)) > 0 &&
           send_all(fd, buf, (size_t)r) == 0)
      sent += r;
    memset(buf, 'F', sizeof buf);
    while (sent < (1LL << 30) && send_all(fd, buf, sizeof buf) == 0)
      sent += (long long)sizeof buf;
  }
  close(ffd);
  log_req(method, path, range, 200, sent);
  return -1;
}

/* Serve one request; returns 0 to keep the connection, -1 to close. */
static int serve(int fd, const char *method, char *path, const char *range,
                 const char *if_match) {
  if (!strncmp(path, "/_control/", 10)) {
    if (!strncmp(path, "/_control/mode/", 15)) {
      pthread_mutex_lock(&S.lock);
      snprintf(S.mode, sizeof S.mode, "%.255s",
               strcmp(path + 15, "ok") ? path + 15 : "");
      pthread_mutex_unlock(&S.lock);
      return simple(fd, 200, "OK", NULL, "ok\n");
    }
    if (!strcmp(path, "/_control/count")) {
      char b[32];
      pthread_mutex_lock(&S.lock);
      snprintf(b, sizeof b, "%ld\n", S.count);
      pthread_mutex_unlock(&S.lock);
      return simple(fd, 200, "OK", NULL, b);
    }
    return simple(fd, 404, "Not Found", NULL, "no such control\n");
  }
  char modes[256] = "", *rel = path;
  if (!strncmp(path, "/_f/", 4)) {
    char *end = strchr(path + 4, '/');
    if (!end)
      return simple(fd, 404, "Not Found", NULL, "bad fault path\n");
    snprintf(modes, sizeof modes, "%.*s", (int)(end - path - 4), path + 4);
    rel = end;
  } else {
    pthread_mutex_lock(&S.lock);
    snprintf(modes, sizeof modes, "%s", S.mode);
    pthread_mutex_unlock(&S.lock);
  }
  struct modes m;
  parse_modes(modes, &m);
  int nth = seen_before(modes, rel);
  if (m.lat_ms)
    sleep_ms(m.lat_ms);
  if (m.stallhdr) {
    log_req(method, path, range, 0, 0);
    hold(fd, 600);
    return -1;
  }
  if (m.is503) {
    log_req(method, path, range, 503, 0);
    return simple(fd, 503, "Service Unavailable", NULL, "");
  }
  if (m.fail500 && nth < m.fail500) {
    log_req(method, path, range, 500, 0);
    return simple(fd, 500, "Internal Server Error", NULL, "");
  }
  if (m.is429 && nth == 0) {
    log_req(method, path, range, 429, 0);
    return simple(fd, 429, "Too Many Requests", "Retry-After: 1\r\n", "");
  }
  if (m.redir[0]) {
    char loc[1200];
    snprintf(loc, sizeof loc, "Location: %s%s%s\r\n",
             strcmp(m.redir, ".") ? "http://" : "",
             strcmp(m.redir, ".") ? m.redir : "", rel);
    log_req(method, path, range, 302, 0);
    return simple(fd, 302, "Found", loc, "");
  }
  char *qm = strchr(rel, '?');
  if (qm && strstr(qm, "list-type=2")) {
    char bucket[256];
    snprintf(bucket, sizeof bucket, "%.*s", (int)(qm - rel - 1), rel + 1);
    if (!strchr(bucket, '/') && strcmp(bucket, "..") && *bucket)
      return s3_list(fd, method, path, bucket, qm + 1, &m);
  }
  if (strstr(rel, "/../") || strstr(rel, "/..") == rel + strlen(rel) - 3) {
    log_req(method, path, range, 404, 0);
    return simple(fd, 404, "Not Found", NULL, "");
  }
  /* Percent-decoding of the path. */
  char file[4096], dec[2048];
  size_t o = 0;
  for (const char *p = rel; *p && o + 1 < sizeof dec; p++) {
    if (*p == '%' && p[1] && p[2]) {
      char hx[3] = {p[1], p[2], 0};
      dec[o++] = (char)strtol(hx, NULL, 16);
      p += 2;
    } else if (*p == '?') {
      break;
    } else {
      dec[o++] = *p;
    }
  }
  dec[o] = '\0';
  snprintf(file, sizeof file, "%s%s%s", S.root, dec,
           m.flip && nth % 2 ? ".alt" : "");
  int ffd = open(file, O_RDONLY);
  struct stat st;
  if (ffd < 0 || fstat(ffd, &st) < 0 || !S_ISREG(st.st_mode)) {
    if (ffd >= 0)
      close(ffd);
    log_req(method, path, range, 404, 0);
    return simple(fd, 404, "Not Found", NULL, "");
  }
  long long size = st.st_size, a = 0, b = size - 1;
  int status = 200;
  if ((m.endless && nth > 0) || m.gzip)
    return hostile_body(fd, ffd, method, path, range, &m);
  char etag[128] = "";
  if (m.etag)
    snprintf(etag, sizeof etag, "ETag: \"%llx-%llx\"\r\n", (long long)size,
             (long long)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec);
  else if (m.etagreq) {
    pthread_mutex_lock(&S.lock);
    snprintf(etag, sizeof etag, "ETag: \"req-%ld\"\r\n", S.count);
    pthread_mutex_unlock(&S.lock);
  } else if (!m.novalid) {
    char date[64];
    struct tm tm;
    gmtime_r(&st.st_mtime, &tm);
    strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
    snprintf(etag, sizeof etag, "Last-Modified: %s\r\n", date);
  }
  if (m.etag && *if_match && strncmp(etag + 6, if_match, strlen(if_match))) {
    close(ffd);
    log_req(method, path, range, 412, 0);
    return simple(fd, 412, "Precondition Failed", NULL, "");
  }
  if (range && *range && !m.norange) {
    long long x, y;
    if (sscanf(range, "bytes=%lld-%lld", &x, &y) == 2) {
      a = x;
      b = y < size - 1 ? y : size - 1;
    } else if (sscanf(range, "bytes=%lld-", &x) == 1 && range[6] != '-') {
      a = x;
    } else if (sscanf(range, "bytes=-%lld", &x) == 1) {
      a = x < size ? size - x : 0;
    }
    if (a >= size) {
      close(ffd);
      char cr[96];
      snprintf(cr, sizeof cr, "Content-Range: bytes */%lld\r\n", size);
      log_req(method, path, range, 416, 0);
      return simple(fd, 416, "Range Not Satisfiable", cr, "");
    }
    status = 206;
  }
  long long len = b - a + 1;
  if (len < 0)
    len = 0;
  char h[512];
  int hn;
  if (status == 206)
    hn = snprintf(h, sizeof h,
                  "HTTP/1.1 206 Partial Content\r\nContent-Length: %lld\r\n"
                  "Content-Range: bytes %lld-%lld/%lld\r\n%s"
                  "Accept-Ranges: bytes\r\n\r\n",
                  len, a, b, size, etag);
  else
    hn = snprintf(h, sizeof h,
                  "HTTP/1.1 200 OK\r\nContent-Length: %lld\r\n%s"
                  "Accept-Ranges: bytes\r\n\r\n",
                  len, etag);
  if (send_all(fd, h, (size_t)hn) < 0) {
    close(ffd);
    return -1;
  }
  long long todo = len;
  if (!strcmp(method, "HEAD"))
    todo = 0;
  else if (m.is_short || m.reset)
    todo = len / 2;
  else if (m.stall)
    todo = len ? 1 : 0;
  long long sent = 0;
  char buf[65536];
  while (sent < todo) {
    size_t want = todo - sent < (long long)sizeof buf ? (size_t)(todo - sent)
                                                      : sizeof buf;
    ssize_t r = pread(ffd, buf, want, a + sent);
    if (r <= 0 || send_all(fd, buf, (size_t)r) < 0)
      break;
    sent += r;
  }
  close(ffd);
  log_req(method, path, range, status, sent);
  if (m.excess && sent == len) { /* once the client took the answer as */
    sleep_ms(100);               /* whole: read as the next answer's start */
    memset(buf, 'E', 64);
    send_all(fd, buf, 64);
  }
  if (m.stall) {
    hold(fd, 600);
    return -1;
  }
  if (m.reset) {
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
    return -1;
  }
  if (m.is_short)
    return -1;
  return sent == todo ? 0 : -1;
}

/* One connection: requests until close. */
static void *conn(void *arg) {
  int fd = (int)(intptr_t)arg;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  char buf[16384];
  size_t have = 0;
  for (;;) {
    char *end;
    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
      if (have == sizeof buf)
        goto out;
      ssize_t r = recv(fd, buf + have, sizeof buf - have, 0);
      if (r <= 0)
        goto out;
      have += (size_t)r;
    }
    *end = '\0';
    arrived_ms = now_ms();
    char method[16] = "", path[4096] = "", range[128] = "", ifm[128] = "";
    if (sscanf(buf, "%15s %4095s", method, path) != 2)
      goto out;
    had_auth = strcasestr(buf, "\r\nAuthorization:") ||
               strcasestr(buf, "\r\nx-amz-security-token:");
    for (char *l = strstr(buf, "\r\n"); l; l = strstr(l + 2, "\r\n")) {
      if (!strncasecmp(l + 2, "Range:", 6)) {
        const char *v = l + 8;
        while (*v == ' ')
          v++;
        snprintf(range, sizeof range, "%.*s", (int)strcspn(v, "\r\n"), v);
      }
      if (!strncasecmp(l + 2, "If-Match:", 9)) {
        const char *v = l + 11;
        while (*v == ' ')
          v++;
        snprintf(ifm, sizeof ifm, "%.*s", (int)strcspn(v, "\r\n"), v);
      }
    }
    size_t used = (size_t)(end + 4 - buf);
    memmove(buf, buf + used, have - used);
    have -= used;
    if (serve(fd, method, path, range, ifm) < 0)
      break;
  }
out:
  close(fd);
  return NULL;
}

int main(int argc, char **argv) {
  const char *portfile = NULL, *logpath = NULL, *bind_addr = "127.0.0.1";
  S.t0 = now_ms();
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--times"))
      S.times = 1;
    else if (!strcmp(argv[i], "--log-auth"))
      S.log_auth = 1;
    else if (i + 1 == argc)
      break;
    else if (!strcmp(argv[i], "--root"))
      S.root = argv[++i];
    else if (!strcmp(argv[i], "--port-file"))
      portfile = argv[++i];
    else if (!strcmp(argv[i], "--log"))
      logpath = argv[++i];
    else if (!strcmp(argv[i], "--bind"))
      bind_addr = argv[++i];
    else
      i++;
  }
  if (!S.root || !portfile) {
    fprintf(stderr, "usage: faultsrv --root DIR --port-file FILE [--log FILE] "
                    "[--bind ADDR] [--times]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  pthread_mutex_init(&S.lock, NULL);
  if (logpath && !(S.log = fopen(logpath, "a"))) {
    perror(logpath);
    return 1;
  }
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {.sin_family = AF_INET};
  if (inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1 ||
      bind(ls, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(ls, 128) < 0) {
    perror("bind");
    return 1;
  }
  socklen_t sl = sizeof sa;
  getsockname(ls, (struct sockaddr *)&sa, &sl);
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s.tmp", portfile);
  FILE *pf = fopen(tmp, "w");
  if (!pf) {
    perror(tmp);
    return 1;
  }
  fprintf(pf, "%d\n", ntohs(sa.sin_port));
  fclose(pf);
  rename(tmp, portfile);
  for (;;) {
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) {
      if (errno == EINTR)
        continue;
      continue;
    }
    pthread_t t;
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &at, conn, (void *)(intptr_t)fd) != 0)
      close(fd);
    pthread_attr_destroy(&at);
  }
}
