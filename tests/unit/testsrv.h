/* testsrv.h - tests/integration/faultsrv, the project's fault-injecting
 * HTTP server, for the Check suites: started over a fresh temporary root
 * on an ephemeral port of 127.0.0.1, stopped and its files removed at the
 * end. Header-only, like testutil.h. */
#ifndef ZARRFS_TESTSRV_H
#define ZARRFS_TESTSRV_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

struct testsrv {
  char root[256]; /* the directory served */
  char base[128]; /* "http://127.0.0.1:PORT" */
  char log[300];  /* its request log */
  pid_t pid;
};

/* Start faultsrv (extra: one more argument, or NULL) over a new root that
 * fill (may be NULL) populated first. 0, or -1 when the binary is not
 * built; a server that does not come up exits the test program. */
static inline int testsrv_start(struct testsrv *s, const char *tag,
                                void (*fill)(const char *root),
                                const char *extra) {
  const char *bd = getenv("ZARRFS_BUILDDIR");
  char bin[512];
  snprintf(bin, sizeof bin, "%s/tests/integration/faultsrv", bd ? bd : ".");
  if (access(bin, X_OK) != 0)
    return -1;
  snprintf(s->root, sizeof s->root, "/tmp/zarrfs-%s-XXXXXX", tag);
  if (!mkdtemp(s->root))
    return -1;
  if (fill)
    fill(s->root);
  char portfile[400];
  snprintf(portfile, sizeof portfile, "%s.port", s->root);
  snprintf(s->log, sizeof s->log, "%s.log", s->root);
  unlink(portfile);
  s->pid = fork();
  if (s->pid == 0) {
    execl(bin, bin, "--root", s->root, "--port-file", portfile, "--log", s->log,
          extra, (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 200; i++) {
    FILE *pf = fopen(portfile, "r");
    int port = 0;
    if (pf) {
      if (fscanf(pf, "%d", &port) != 1)
        port = 0;
      fclose(pf);
    }
    if (port > 0) {
      snprintf(s->base, sizeof s->base, "http://127.0.0.1:%d", port);
      return 0;
    }
    nanosleep(&(struct timespec){0, 50000000L}, NULL);
  }
  fprintf(stderr, "faultsrv did not start\n");
  exit(1);
}

/* Stop the server and remove its root, port file and log. */
static inline void testsrv_stop(struct testsrv *s) {
  if (s->pid > 0) {
    kill(s->pid, SIGTERM);
    waitpid(s->pid, NULL, 0);
  }
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s.port' '%s.log'", s->root, s->root,
           s->root);
  if (system(cmd) != 0)
    fprintf(stderr, "cleanup failed\n");
}

/* The exit status of prog when faultsrv is not built: a failure under
 * CI=true (it must be there), else 77 (SKIP). */
static inline int testsrv_missing(const char *prog) {
  if (getenv("CI") && !strcmp(getenv("CI"), "true")) {
    fprintf(stderr, "%s: tests/integration/faultsrv is missing\n", prog);
    return 1;
  }
  fprintf(stderr, "%s: SKIP: tests/integration/faultsrv is not built\n", prog);
  return 77;
}

#endif
