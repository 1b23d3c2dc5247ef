/* fuzz_sizeindex.c - the persistent size index (src/store/sizeindex.c) over
 * an index file that is the input: opening, reading and resynchronising
 * never crash; a lookup hits only the record stored for that very
 * identity (what the file says about it, or nothing); a record stored
 * after the damage is found again, also by another open. */
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../src/store/sizeindex.h"

/* Remove the index files a run left. */
static void clear(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *de;
  char p[4096];
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "lx2-", 4)) {
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      unlink(p);
    }
  if (d)
    closedir(d);
}

/* One input: the index file of location "/f". */
FUZZ_TARGET(sizeindex) {
  const char *dir = fuzz_tmpdir();
  if (!dir)
    return 0;
  clear(dir);
  struct zerr err = {0};
  struct sizeindex *x;
  if (sizeindex_open(dir, 1 << 16, &x, &err) < 0)
    return 0;
  /* the file of location "/f": found by storing one record first */
  struct sizeindex_id id = {"/f", "k", 1, 2, 3, 1};
  struct sizeindex_rec r = {10, 1}, got;
  sizeindex_store(x, &id, &r);
  sizeindex_close(x);
  DIR *d = opendir(dir);
  struct dirent *de;
  char name[300] = "";
  while (d && (de = readdir(d)))
    if (!strncmp(de->d_name, "lx2-", 4))
      snprintf(name, sizeof name, "%s", de->d_name);
  if (d)
    closedir(d);
  if (!*name || fuzz_put_file(dir, name, data, size) < 0)
    return 0;
  if (sizeindex_open(dir, 1 << 16, &x, &err) < 0)
    return 0;
  char key[32];
  for (int i = 0; i < 16; i++) {
    snprintf(key, sizeof key, "c/%d", i);
    struct sizeindex_id q = {"/f", key, (uint64_t)i, i, (uint64_t)i * 7, 1};
    sizeindex_lookup(x, &q, &got);
  }
  struct sizeindex_id mine = {"/f", "mine", 77, 78, 79, 1};
  struct sizeindex_rec mr = {1234, 5};
  int stored = sizeindex_store(x, &mine, &mr) == 0;
  if (stored && (!sizeindex_lookup(x, &mine, &got) || got.text_size != 1234 ||
                 got.lines != 5))
    abort();
  sizeindex_close(x);
  if (stored && sizeindex_open(dir, 1 << 16, &x, &err) == 0) {
    if (!sizeindex_lookup(x, &mine, &got) || got.text_size != 1234)
      abort();
    sizeindex_close(x);
  }
  return 0;
}
