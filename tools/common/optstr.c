/* Option strings and numbers for the public-API tools (optstr.h). */
#include "optstr.h"

#include "nostall/nostall.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int optstr_each(const char *s, optstr_cb cb, void *ctx)
{
	char *copy = s ? strdup(s) : NULL;
	if (s && !copy)
		return nostall_errmsg_set(-ENOMEM, "out of memory");
	int rc = 0;
	char *save = NULL;
	for (char *it = copy ? strtok_r(copy, ",", &save) : NULL; it && !rc; it = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(it, '=');
		if (eq)
			*eq++ = 0;
		rc = *it ? cb(ctx, it, eq) : nostall_errmsg_set(-EINVAL, "empty option name in '%s'", s);
	}
	free(copy);
	return rc;
}

/* strtoull over all of s, which starts with a digit; *end is what follows. */
static bool leading_u64(const char *s, int base, uint64_t *v, char **end)
{
	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, end, base);
	return errno != ERANGE;
}

bool optstr_u64(const char *s, uint64_t *out)
{
	char *end;
	return leading_u64(s, 0, out, &end) && !*end;
}

bool optstr_size(const char *s, uint64_t *out)
{
	uint64_t v;
	char *end;
	if (!leading_u64(s, 10, &v, &end))
		return false;
	const char *unit = *end ? strchr("KMGT", toupper((unsigned char)*end)) : NULL;
	unsigned shift = unit ? 10 * (unsigned)(unit - "KMGT" + 1) : 0;
	if (unit && (!*++end || !strcasecmp(end, "iB") || !strcasecmp(end, "B")))
		end += strlen(end);
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return false;
	*out = v << shift;
	return true;
}

bool optstr_double(const char *s, double *out)
{
	char *end;
	if (!s || !*s)
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno == ERANGE || *end || end == s)
		return false;
	*out = v;
	return true;
}
