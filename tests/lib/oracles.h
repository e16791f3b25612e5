/* The external oracles (e2fsprogs) the filesystem tests need. */
#ifndef NOSTALL_TESTS_ORACLES_H
#define NOSTALL_TESTS_ORACLES_H

/* Are all the space-separated commands in `tools` on PATH? If not, say so
 * on stdout and return the exit status the test binary must end with: 1 (a
 * required oracle is missing: the run fails loudly), or 0 with a SKIP line
 * when NOSTALL_ALLOW_SKIP=1 (tests/run.sh's escape hatch). -1: all present,
 * run the tests. */
int oracles_check(const char *test, const char *tools);

#endif
