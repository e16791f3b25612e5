#include "oracles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int oracles_check(const char *test, const char *tools)
{
	char list[512];
	snprintf(list, sizeof list, "%s", tools);
	char missing[512] = "";
	for (char *save = NULL, *t = strtok_r(list, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		char cmd[600];
		snprintf(cmd, sizeof cmd, "command -v '%s' >/dev/null 2>&1", t);
		if (system(cmd) != 0) {
			size_t n = strlen(missing);
			snprintf(missing + n, sizeof missing - n, "%s%s", n ? " " : "", t);
		}
	}
	if (!missing[0])
		return -1;
	const char *allow = getenv("NOSTALL_ALLOW_SKIP");
	if (allow && !strcmp(allow, "1")) {
		printf("SKIP: %s: required oracle(s) missing: %s\n", test, missing);
		return 0;
	}
	printf("%s: required oracle(s) missing: %s (install e2fsprogs, or NOSTALL_ALLOW_SKIP=1)\n", test,
	       missing);
	return 1;
}
