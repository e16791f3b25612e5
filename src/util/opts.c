#include "opts.h"
#include "err.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int opts_parse(const char *s, opts_cb cb, void *ctx)
{
	if (!s)
		return 0;
	size_t len = strlen(s);
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, len + 1);
	int rc = 0;
	char *save = NULL;
	for (char *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(item, '=');
		if (eq)
			*eq = '\0';
		if (!*item) {
			rc = err_set(-EINVAL, "empty option name in '%s'", s);
			break;
		}
		rc = cb(ctx, item, eq ? eq + 1 : NULL);
		if (rc)
			break;
	}
	free(copy);
	return rc;
}

int opts_parse_u64(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return err_set(-EINVAL, "'%s' is not a number", s ? s : "");
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno == ERANGE)
		return err_set(-ERANGE, "'%s' is too large", s);
	if (*end)
		return err_set(-EINVAL, "'%s' is not a number", s);
	*out = v;
	return 0;
}

int opts_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || *s == '-' || isspace((unsigned char)*s))
		return err_set(-EINVAL, "'%s' is not a size", s ? s : "");
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return err_set(-ERANGE, "size '%s' is too large", s);
	if (end == s)
		return err_set(-EINVAL, "'%s' is not a size", s);
	unsigned shift = 0;
	switch (toupper((unsigned char)*end)) {
	case '\0': break;
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	default: return err_set(-EINVAL, "'%s' is not a size (use K, M, G or T)", s);
	}
	if (shift && (strcasecmp(end, "iB") == 0 || strcasecmp(end, "B") == 0))
		end += strlen(end);
	if (*end)
		return err_set(-EINVAL, "'%s' is not a size (use K, M, G or T)", s);
	if (shift && v > (UINT64_MAX >> shift))
		return err_set(-ERANGE, "size '%s' is too large", s);
	*out = (uint64_t)v << shift;
	return 0;
}

int opts_parse_double(const char *s, double *out)
{
	if (!s || !*s)
		return err_set(-EINVAL, "'' is not a number");
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno == ERANGE || *end || end == s)
		return err_set(-EINVAL, "'%s' is not a number", s);
	*out = v;
	return 0;
}

int opts_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "on", "yes", "true" };
	static const char *const no[] = { "0", "off", "no", "false" };
	for (size_t i = 0; s && i < 4; i++) {
		if (strcasecmp(s, yes[i]) == 0) {
			*out = true;
			return 0;
		}
		if (strcasecmp(s, no[i]) == 0) {
			*out = false;
			return 0;
		}
	}
	return err_set(-EINVAL, "'%s' is not a boolean (use 0 or 1)", s ? s : "");
}
