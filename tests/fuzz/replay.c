/* replay.c - every fuzz target without libFuzzer: replays the committed
 * seeds and regression inputs (every file of tests/fuzz/seeds/NAME/
 * and tests/fuzz/regress/NAME/, under $ZARRFS_SRCDIR or the current
 * directory) through the targets' own entry points, so a fixed crash
 * stays fixed in the normal build and under the ASan build (make check).
 * `fuzz_replay NAME FILE...` replays chosen files through one target.
 * A crash or a sanitizer report ends the program with an error. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/util/file.h"
#include "fuzz.h"

#define X(name) int fuzz_one_##name(const uint8_t *data, size_t size);
#include "targets.h"
#undef X

struct target {
  const char *name;
  int (*one)(const uint8_t *data, size_t size);
};

static const struct target targets[] = {
#define X(name) {#name, fuzz_one_##name},
#include "targets.h"
#undef X
};

/* Run one file through t. 0, or -1 when it cannot be read. */
static int replay_file(const struct target *t, const char *path) {
  char *text = NULL;
  size_t len = 0;
  struct zerr err = {0};
  if (zread_file(path, 64u << 20, &text, &len, &err) < 0) {
    fprintf(stderr, "fuzz_replay: %s: %s\n", path, err.msg);
    return -1;
  }
  t->one((const uint8_t *)(text ? text : ""), len);
  free(text);
  return 0;
}

/* name filter for scandir: skip dot files (README, .gitignore). */
static int visible(const struct dirent *d) { return d->d_name[0] != '.'; }

/* Every file of dir through t; the number replayed, or -1. */
static long replay_dir(const struct target *t, const char *dir) {
  struct dirent **names;
  int n = scandir(dir, &names, visible, alphasort);
  if (n < 0)
    return 0; /* no inputs of this kind for this target */
  long done = 0;
  for (int i = 0; i < n; i++) {
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    if (done >= 0 && replay_file(t, path) == 0)
      done++;
    else
      done = -1;
    free(names[i]);
  }
  free(names);
  return done;
}

/* The target called name, or NULL. */
static const struct target *target_named(const char *name) {
  for (size_t i = 0; i < sizeof targets / sizeof *targets; i++)
    if (!strcmp(targets[i].name, name))
      return &targets[i];
  return NULL;
}

int main(int argc, char **argv) {
  if (argc >= 2) {
    const struct target *t = target_named(argv[1]);
    if (!t) {
      fprintf(stderr, "fuzz_replay: no target '%s'\n", argv[1]);
      return 2;
    }
    for (int i = 2; i < argc; i++)
      if (replay_file(t, argv[i]) < 0)
        return 1;
    return 0;
  }
  const char *src = getenv("ZARRFS_SRCDIR");
  int failed = 0;
  long total = 0;
  for (size_t i = 0; i < sizeof targets / sizeof *targets; i++) {
    static const char *const kinds[] = {"seeds", "regress"};
    for (int k = 0; k < 2; k++) {
      char dir[4096];
      snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", src ? src : ".",
               kinds[k], targets[i].name);
      long n = replay_dir(&targets[i], dir);
      if (n < 0)
        failed = 1;
      else
        total += n;
      printf("%s %s: %ld inputs\n", targets[i].name, kinds[k], n);
    }
  }
  printf("fuzz_replay: %ld inputs through %zu targets%s\n", total,
         sizeof targets / sizeof *targets, failed ? ", unreadable files" : "");
  return failed;
}
