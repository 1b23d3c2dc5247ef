/* cmd.h - zarrfs without FUSE: `zarrfs ls|cat|stat|info SOURCE [PATH...]`.
 *
 * The same namespace and bytes a mount shows (fs/namespace/namespace.c, the
 * views, raw keys byte-identical), written to a stream, for machines without
 * /dev/fuse (containers, batch nodes) and for scripts. Each command goes
 * through the engine exactly as the FUSE operations do, so what it prints
 * is what `ls`, `cat` and `stat` on a mount of the same store print:
 *
 *   ls   PATH     the names in directory PATH (default the root), one per
 *                 line, sorted bytewise (as `LC_ALL=C ls -1A` sorts); for
 *                 a file, PATH itself
 *   cat  PATH...  the bytes of each file, in order (with a progress line
 *                 on stderr when it is a terminal)
 *   stat PATH...  one line per PATH: "KIND SIZE PATH", KIND one of
 *                 directory, file (a stored key), chunk-view, array-view;
 *                 SIZE in bytes (0 for directories; with -o sizes=lazy
 *                 what the mount's stat would say)
 *   info PATH     an array's or group's metadata, one "field: value" a
 *                 line (the fields: README.md, "Without a mount")
 *
 * A PATH that fails is reported on err ("zarrfs: PATH: reason") and the
 * command goes on with the next; the result is then 1. FUSE-free. */
#ifndef ZARRFS_CMD_H
#define ZARRFS_CMD_H

#include <stddef.h>
#include <stdio.h>

#include "../src/app/cli.h"

struct engine;

/* Run command tool over paths[0..n) (n == 0: the root) of the store e
 * serves; output to out, one line per failure to err. The exit status: 0
 * when every PATH worked, 1 when one failed, 2 when out could not be
 * written. */
int cmd_run(struct engine *e, enum cli_tool tool, char *const *paths, size_t n,
            FILE *out, FILE *err);

#endif
