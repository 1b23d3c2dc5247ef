/* soakread.c - the reader of tests/integration/soak.sh: many threads read
 * random ranges of files on a zarrfs mount for a bounded time and compare
 * every byte with what a model says the file holds.
 *
 * usage: soakread [--threads T] [--seconds S] [--seed N] [--max-read B]
 *                 SPECFILE
 * SPECFILE has one line per file: "MODE MOUNTED EXPECTED", where MODE is
 *   exact   every open, stat and read succeeds; the size and every byte
 *           are EXPECTED's;
 *   either  a read fails with EIO or returns EXPECTED's bytes (a view over
 *           a corrupt chunk and good ones), or fewer of them where the
 *           text before the corrupt chunk ends (a read from there then
 *           fails with EIO): never other bytes, never another error;
 *   corrupt as either, and at least one read or open must fail with EIO
 *           (the view of a corrupt chunk: partial decoding may serve the
 *           elements that are still intact, but not all of them).
 * EXPECTED is a plain file: what the file holds, or for either/corrupt
 * what it would hold if nothing were corrupt. Prints one line of counts and
 * exits 1 on any wrong byte, wrong size or unexpected error, else 0. It
 * uses no FUSE header: it is an ordinary program reading files, which is
 * the point. SIGTERM/SIGINT stop it early with the counts so far. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum soak_mode { SOAK_EXACT, SOAK_EITHER, SOAK_CORRUPT };

struct soak_file {
  enum soak_mode mode;
  char *mounted;
  const unsigned char *want; /* mapped EXPECTED, NULL when empty */
  uint64_t size;             /* EXPECTED's size */
  atomic_ulong eio;          /* EIOs seen on this file */
};

struct soak {
  struct soak_file *files;
  size_t nfiles;
  double seconds;
  size_t max_read;
  uint64_t seed;
  atomic_int stop;
  atomic_ulong reads, bytes, eio, bad; /* bad: wrong bytes or errors */
  pthread_mutex_t print_lock;          /* one report line at a time */
  unsigned long reported;              /* under print_lock */
};

static struct soak *soak_signal_target; /* for the signal handler only */

/* Stop the readers on SIGTERM/SIGINT (the signal tests stop the daemon). */
static void soak_on_signal(int sig) {
  (void)sig;
  if (soak_signal_target)
    atomic_store(&soak_signal_target->stop, 1);
}

/* xorshift64*: a per-thread random stream. */
static uint64_t soak_rand(uint64_t *s) {
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * 2685821657736338717ULL;
}

static double soak_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Record a failure and print its first few reports. */
static void soak_bad(struct soak *s, const struct soak_file *f,
                     const char *what, uint64_t off, size_t len, int e) {
  atomic_fetch_add(&s->bad, 1);
  pthread_mutex_lock(&s->print_lock);
  if (s->reported++ < 20)
    fprintf(stderr, "soakread: %s: %s at %" PRIu64 " +%zu%s%s\n", f->mounted,
            what, off, len, e ? ": " : "", e ? strerror(e) : "");
  pthread_mutex_unlock(&s->print_lock);
}

/* One read of f through fd (opened by the caller, or -1 when open
 * failed with errno open_err). */
static void soak_one(struct soak *s, struct soak_file *f, int fd,
                     int open_err, uint64_t *rs, char *buf) {
  uint64_t off = f->size ? soak_rand(rs) % f->size : 0;
  size_t len = 1 + (size_t)(soak_rand(rs) % s->max_read);
  /* Now and then a read that runs past the end, or starts at it. */
  if (soak_rand(rs) % 16 == 0)
    off = f->size - (f->size ? soak_rand(rs) % (f->size < 64 ? f->size : 64)
                             : 0);
  if (fd < 0) {
    if (f->mode != SOAK_EXACT && open_err == EIO) {
      atomic_fetch_add(&s->eio, 1);
      atomic_fetch_add(&f->eio, 1);
      return;
    }
    soak_bad(s, f, "open failed", 0, 0, open_err);
    return;
  }
  ssize_t got = pread(fd, buf, len, (off_t)off);
  int e = errno;
  atomic_fetch_add(&s->reads, 1);
  if (got < 0) {
    if (f->mode != SOAK_EXACT && e == EIO) {
      atomic_fetch_add(&s->eio, 1);
      atomic_fetch_add(&f->eio, 1);
    } else
      soak_bad(s, f, "read failed", off, len, e);
    return;
  }
  uint64_t want_n = off >= f->size ? 0 : f->size - off;
  if (want_n > len)
    want_n = len;
  if ((uint64_t)got != want_n) {
    /* A short read is allowed at the end of the file, and in a view over
     * a corrupt chunk where the text before that chunk ends: the bytes
     * must be right and a read from there must fail with EIO (a bad
     * chunk closes only itself, docs/reference.md). */
    char c;
    if (f->mode == SOAK_EXACT || got == 0 ||
        memcmp(buf, f->want + off, (size_t)got) != 0 ||
        pread(fd, &c, 1, (off_t)(off + (uint64_t)got)) >= 0 || errno != EIO) {
      soak_bad(s, f, "wrong length", off, len, 0);
      return;
    }
    atomic_fetch_add(&s->eio, 1);
    atomic_fetch_add(&f->eio, 1);
    atomic_fetch_add(&s->bytes, (unsigned long)got);
    return;
  }
  if (got && memcmp(buf, f->want + off, (size_t)got) != 0) {
    soak_bad(s, f, "WRONG BYTES", off, len, 0);
    return;
  }
  atomic_fetch_add(&s->bytes, (unsigned long)got);
}

struct soak_thread {
  struct soak *s;
  uint64_t seed;
};

/* A reader: random files, random ranges, until the time is up. Each
 * thread keeps one descriptor per file, so reads mix with opens. */
static void *soak_reader(void *arg) {
  struct soak_thread *t = arg;
  struct soak *s = t->s;
  uint64_t rs = t->seed | 1;
  int *fds = malloc(s->nfiles * sizeof *fds);
  int *errs = malloc(s->nfiles * sizeof *errs);
  char *buf = malloc(s->max_read);
  if (!fds || !errs || !buf) {
    fprintf(stderr, "soakread: out of memory\n");
    atomic_fetch_add(&s->bad, 1);
    free(fds);
    free(errs);
    free(buf);
    return NULL;
  }
  for (size_t i = 0; i < s->nfiles; i++)
    fds[i] = -2; /* not opened yet */
  double end = soak_now() + s->seconds;
  unsigned n = 0;
  while (!atomic_load(&s->stop) && (n++ % 64 || soak_now() < end)) {
    size_t i = (size_t)(soak_rand(&rs) % s->nfiles);
    struct soak_file *f = &s->files[i];
    /* Reopen now and then: opens and lookups are part of the load. */
    if (fds[i] >= 0 && soak_rand(&rs) % 32 == 0) {
      close(fds[i]);
      fds[i] = -2;
    }
    if (fds[i] == -2 || fds[i] == -1) {
      fds[i] = open(f->mounted, O_RDONLY);
      errs[i] = fds[i] < 0 ? errno : 0;
      if (fds[i] >= 0 && f->mode == SOAK_EXACT) {
        struct stat st;
        if (fstat(fds[i], &st) != 0 || (uint64_t)st.st_size != f->size)
          soak_bad(s, f, "wrong size in stat", (uint64_t)st.st_size, 0, 0);
      }
    }
    /* Drop the file's pages now and then: the kernel's page cache would
     * otherwise answer most reads without asking the daemon. */
    if (fds[i] >= 0 && soak_rand(&rs) % 8 == 0)
      posix_fadvise(fds[i], 0, 0, POSIX_FADV_DONTNEED);
    soak_one(s, f, fds[i], errs[i], &rs, buf);
  }
  for (size_t i = 0; i < s->nfiles; i++)
    if (fds[i] >= 0)
      close(fds[i]);
  free(fds);
  free(errs);
  free(buf);
  return NULL;
}

/* Read SPECFILE into s->files. Returns 0 or -1 (after a message). */
static int soak_load(struct soak *s, const char *spec) {
  FILE *fp = fopen(spec, "r");
  if (!fp) {
    perror(spec);
    return -1;
  }
  char mode[16], mounted[4096], expected[4096];
  size_t cap = 0;
  while (fscanf(fp, "%15s %4095s %4095s", mode, mounted, expected) == 3) {
    if (s->nfiles == cap) {
      cap = cap ? 2 * cap : 64;
      struct soak_file *nf = realloc(s->files, cap * sizeof *nf);
      if (!nf) {
        fclose(fp);
        return -1;
      }
      s->files = nf;
    }
    struct soak_file *f = &s->files[s->nfiles];
    memset(f, 0, sizeof *f);
    if (!strcmp(mode, "exact"))
      f->mode = SOAK_EXACT;
    else if (!strcmp(mode, "either"))
      f->mode = SOAK_EITHER;
    else if (!strcmp(mode, "corrupt"))
      f->mode = SOAK_CORRUPT;
    else {
      fprintf(stderr, "soakread: %s: bad mode '%s'\n", spec, mode);
      fclose(fp);
      return -1;
    }
    f->mounted = strdup(mounted);
    {
      int fd = open(expected, O_RDONLY);
      struct stat st;
      if (fd < 0 || fstat(fd, &st) != 0) {
        perror(expected);
        fclose(fp);
        return -1;
      }
      f->size = (uint64_t)st.st_size;
      if (f->size) {
        void *m = mmap(NULL, (size_t)f->size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
          perror(expected);
          close(fd);
          fclose(fp);
          return -1;
        }
        f->want = m;
      }
      close(fd);
    }
    s->nfiles++;
  }
  fclose(fp);
  if (!s->nfiles) {
    fprintf(stderr, "soakread: %s lists no file\n", spec);
    return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  struct soak s = {.seconds = 10, .max_read = 256 * 1024, .seed = 1};
  int threads = 16;
  int i = 1;
  for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2) {
    if (!strcmp(argv[i], "--threads"))
      threads = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--seconds"))
      s.seconds = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--seed"))
      s.seed = strtoull(argv[i + 1], NULL, 10);
    else if (!strcmp(argv[i], "--max-read"))
      s.max_read = (size_t)strtoull(argv[i + 1], NULL, 10);
    else
      break;
  }
  if (i != argc - 1 || threads < 1 || threads > 256 || s.max_read < 1) {
    fprintf(stderr, "usage: soakread [--threads T] [--seconds S] [--seed N] "
                    "[--max-read B] SPECFILE\n");
    return 2;
  }
  pthread_mutex_init(&s.print_lock, NULL);
  if (soak_load(&s, argv[i]) < 0)
    return 2;
  soak_signal_target = &s;
  signal(SIGTERM, soak_on_signal);
  signal(SIGINT, soak_on_signal);
  pthread_t *tid = calloc((size_t)threads, sizeof *tid);
  struct soak_thread *ts = calloc((size_t)threads, sizeof *ts);
  if (!tid || !ts)
    return 2;
  for (int t = 0; t < threads; t++) {
    ts[t].s = &s;
    ts[t].seed = s.seed * 1000003ULL + (uint64_t)t * 7919ULL + 1;
    if (pthread_create(&tid[t], NULL, soak_reader, &ts[t]) != 0) {
      fprintf(stderr, "soakread: cannot start thread %d\n", t);
      return 2;
    }
  }
  for (int t = 0; t < threads; t++)
    pthread_join(tid[t], NULL);
  for (size_t k = 0; k < s.nfiles; k++) {
    if (s.files[k].mode == SOAK_CORRUPT && !atomic_load(&s.files[k].eio) &&
        !atomic_load(&s.stop)) {
      fprintf(stderr, "soakread: %s: a corrupt chunk's view never failed\n",
              s.files[k].mounted);
      atomic_fetch_add(&s.bad, 1);
    }
    if (s.files[k].want)
      munmap((void *)s.files[k].want, (size_t)s.files[k].size);
    free(s.files[k].mounted);
  }
  printf("soakread: %zu files, %d threads, %lu reads, %lu bytes compared, "
         "%lu EIO as expected, %lu bad\n",
         s.nfiles, threads, atomic_load(&s.reads), atomic_load(&s.bytes),
         atomic_load(&s.eio), atomic_load(&s.bad));
  free(s.files);
  free(tid);
  free(ts);
  return atomic_load(&s.bad) ? 1 : 0;
}
