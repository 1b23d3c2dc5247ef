/* testutil.h - small helpers shared by the Check unit tests. */
#ifndef ZARRFS_TESTUTIL_H
#define ZARRFS_TESTUTIL_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* Run one suite, return the process exit status. */
static inline int testutil_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
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

#endif
