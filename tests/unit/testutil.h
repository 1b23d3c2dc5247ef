/* testutil.h - small helpers shared by the Check unit tests. */
#ifndef ZARRFS_TESTUTIL_H
#define ZARRFS_TESTUTIL_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h" /* ZFS_WITH_X, ZFS_WITHOUT: configure --without-X */

/* Fixture bookkeeping of this test program, decided in main() while the
 * suite is assembled (Check runs each test in a child process, so a test
 * body cannot report back). */
struct testutil_state {
  int fixtures_skipped; /* fixture test cases left out (exit 77 when no
                           other test ran) */
  int fixtures_missing; /* ... under CI=true: a failure */
  int without;          /* tests of a library the build lacks left out */
  const char *prog;     /* the test program, for the closing line */
};
static struct testutil_state testutil_state;

/* Remove the directory tree dir (a test's temporary store); a failure is
 * said on stderr, not fatal: cleanup must not hide the test's result. */
static inline void testutil_rmtree(const char *dir) {
  char cmd[4200];
  int n = snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (n < 0 || (size_t)n >= sizeof cmd || strchr(dir, '\'') ||
      system(cmd) != 0)
    fprintf(stderr, "cleanup of %s failed\n", dir);
}

/* Run one suite, return the process exit status: 1 when a test failed or
 * the fixtures are missing under CI=true; when fixture test cases, or
 * tests of a library the build was configured without, were left out, a
 * closing line as the integration scripts end with ("PROG: N passed, 0
 * failed, K skipped", which tests/driver.sh reads) and 77 (automake's
 * SKIP) only when no other test ran; else 0. */
static inline int testutil_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  int ran = srunner_ntests_run(sr);
  srunner_free(sr);
  if (failed || testutil_state.fixtures_missing)
    return EXIT_FAILURE;
  int skipped = testutil_state.fixtures_skipped + testutil_state.without;
  if (!skipped)
    return EXIT_SUCCESS;
  printf("%s: %d passed, 0 failed, %d skipped\n", testutil_state.prog, ran,
         skipped);
  return ran ? EXIT_SUCCESS : 77;
}

/* Say in one line that prog leaves out what needs lib, which this build
 * was configured without (configure --without-LIB): a skipped part of
 * testutil_run's closing line. Called where the tests that need it would
 * be added (#if !ZFS_WITH_LIB). */
static inline void testutil_skip_without(const char *prog, const char *lib,
                                         const char *what) {
  printf("%s: zarrfs was built without %s: skipping %s\n", prog, lib, what);
  testutil_state.prog = prog;
  testutil_state.without++;
}

/* Is msg a codec's refusal by a build configured without its library
 * (chain_build: "zarrfs was built without LIB")? Tests over many stores
 * count those as refused, and call testutil_skip_without for each lib of
 * ZFS_WITHOUT. */
static inline int testutil_is_without(const char *msg) {
  return *ZFS_WITHOUT && strstr(msg, "zarrfs was built without ") != NULL;
}

/* Directory of the shared conformance fixtures: $ZARRFS_FIXTURES, else
 * $ZARRFS_SRCDIR/../shared/fixtures, else ../shared/fixtures. NULL when it
 * does not exist. The returned string is static storage. */
static inline const char *testutil_fixtures(void) {
  static char buf[4096];
  const char *env = getenv("ZARRFS_FIXTURES");
  const char *src = getenv("ZARRFS_SRCDIR");
  if (env && *env)
    snprintf(buf, sizeof buf, "%s", env);
  else if (src && *src)
    snprintf(buf, sizeof buf, "%s/../shared/fixtures", src);
  else
    snprintf(buf, sizeof buf, "../shared/fixtures");
  struct stat st;
  if (stat(buf, &st) != 0 || !S_ISDIR(st.st_mode))
    return NULL;
  return buf;
}

/* The fixtures the tests make themselves ($ZARRFS_OWN_FIXTURES, written
 * by tests/writers/own_fixtures.py before make check runs the unit tests):
 * the directory when it holds them (own_fixtures.py's last file), else
 * NULL. */
static inline const char *testutil_own_fixtures(void) {
  const char *d = getenv("ZARRFS_OWN_FIXTURES");
  char probe[4096];
  struct stat st;
  if (!d || !*d)
    return NULL;
  snprintf(probe, sizeof probe, "%s/kerchunk/expected_refs.json", d);
  return stat(probe, &st) == 0 ? d : NULL;
}

/* Throw away a TCase that was left out. */
static inline void testutil_drop_tcase(TCase *tc) {
  /* Check has no tcase_free: an unused TCase goes into a throwaway suite. */
  Suite *unused = suite_create("unused");
  suite_add_tcase(unused, tc);
  SRunner *sr = srunner_create(unused);
  srunner_free(sr);
}

/* Leave out tc (its data is missing: `what`): one line saying so, and
 * testutil_run counts it skipped; under CI=true, a failure. */
static inline void testutil_leave_out(TCase *tc, const char *prog,
                                      const char *what) {
  const char *ci = getenv("CI");
  testutil_state.prog = prog;
  if (ci && !strcmp(ci, "true")) {
    printf("%s: FAIL: %s, required under CI=true\n", prog, what);
    testutil_state.fixtures_missing = 1;
  } else {
    printf("%s: SKIP part: %s\n", prog, what);
    testutil_state.fixtures_skipped++;
  }
  testutil_drop_tcase(tc);
}

/* Add tc to s when its data is there (`have`), else leave it out
 * (testutil_leave_out, `what` says what is missing): the other tests still
 * run. The one skip convention of the Check suites. */
static inline void testutil_add_tcase_if(Suite *s, TCase *tc, const char *prog,
                                         int have, const char *what) {
  testutil_state.prog = prog;
  if (have)
    suite_add_tcase(s, tc);
  else
    testutil_leave_out(tc, prog, what);
}

/* Add tc, whose tests read the shared fixtures, when they are there. */
static inline void testutil_add_fixture_tcase(Suite *s, TCase *tc,
                                              const char *prog) {
  testutil_add_tcase_if(s, tc, prog, testutil_fixtures() != NULL,
                        "fixtures not found (set ZARRFS_FIXTURES or put them "
                        "at ../shared/fixtures): the fixture tests");
}

/* Add tc, whose tests read the fixtures the tests make themselves, when
 * they were made (not without python3-zarr). */
static inline void testutil_add_own_tcase(Suite *s, TCase *tc,
                                          const char *prog) {
  testutil_add_tcase_if(s, tc, prog, testutil_own_fixtures() != NULL,
                        "own fixtures not made (tests/writers/own_fixtures.py "
                        "needs python3-zarr): the own-fixture tests");
}

/* The length of the well-formed UTF-8 sequence at p[0, n) by the table of
 * well-formed byte sequences of the Unicode standard (3.9, Table 3-7), 0
 * when there is none: the tests' reference, written apart from
 * src/util/utf8.c. */
static inline size_t testutil_utf8_len(const uint8_t *p, size_t n) {
  static const struct {
    uint8_t lo0, hi0, lo1, hi1;
    size_t len;
  } rows[] = {{0x00, 0x7f, 0, 0, 1},       {0xc2, 0xdf, 0x80, 0xbf, 2},
              {0xe0, 0xe0, 0xa0, 0xbf, 3}, {0xe1, 0xec, 0x80, 0xbf, 3},
              {0xed, 0xed, 0x80, 0x9f, 3}, {0xee, 0xef, 0x80, 0xbf, 3},
              {0xf0, 0xf0, 0x90, 0xbf, 4}, {0xf1, 0xf3, 0x80, 0xbf, 4},
              {0xf4, 0xf4, 0x80, 0x8f, 4}};
  for (size_t r = 0; n && r < sizeof rows / sizeof *rows; r++) {
    if (p[0] < rows[r].lo0 || p[0] > rows[r].hi0)
      continue;
    size_t len = rows[r].len;
    if (len > n)
      return 0;
    if (len > 1 && (p[1] < rows[r].lo1 || p[1] > rows[r].hi1))
      return 0;
    for (size_t i = 2; i < len; i++)
      if (p[i] < 0x80 || p[i] > 0xbf)
        return 0;
    return len;
  }
  return 0;
}

/* Is s[0, n) well-formed UTF-8 (by testutil_utf8_len)? */
static inline int testutil_utf8_ok(const uint8_t *s, size_t n) {
  for (size_t i = 0, k; i < n; i += k)
    if (!(k = testutil_utf8_len(s + i, n - i)))
      return 0;
  return 1;
}

/* One string's bytes s[0, n) as the text contract shows them: each byte
 * that is not part of a well-formed sequence (read from the start) '?'. */
static inline void testutil_utf8_fix(uint8_t *s, size_t n) {
  for (size_t i = 0; i < n;) {
    size_t k = testutil_utf8_len(s + i, n - i);
    if (k) {
      i += k;
    } else {
      s[i++] = '?';
    }
  }
}

#endif
