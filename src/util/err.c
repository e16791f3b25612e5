#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char err_msg[512];

int err_set(int neg_errno, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof err_msg, fmt, ap);
	va_end(ap);
	return neg_errno;
}

const char *err_last(int neg_errno)
{
	if (err_msg[0])
		return err_msg;
	return strerror(neg_errno < 0 ? -neg_errno : neg_errno);
}

void err_clear(void)
{
	err_msg[0] = '\0';
}

int err_wrap(int neg_errno, const char *fmt, ...)
{
	char old[sizeof err_msg];
	snprintf(old, sizeof old, "%s", err_last(neg_errno));
	char prefix[sizeof err_msg];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof prefix, fmt, ap);
	va_end(ap);
	/* "ext3: inode 12" wrapping "ext3: bad block" reads "ext3: inode 12:
	 * bad block": a layer tag shared by both is said once. */
	const char *o = old;
	const char *colon = strstr(prefix, ": ");
	if (colon && colon - prefix < 16 && !strncmp(prefix, old, (size_t)(colon - prefix) + 2))
		o = old + (colon - prefix) + 2;
	/* Assembled by hand: the result is cut at the buffer's size on purpose. */
	size_t n = 0, cap = sizeof err_msg - 1;
	const char *parts[3] = {prefix, ": ", o};
	for (int i = 0; i < 3; i++) {
		size_t l = strlen(parts[i]);
		if (l > cap - n)
			l = cap - n;
		memcpy(err_msg + n, parts[i], l);
		n += l;
	}
	err_msg[n] = '\0';
	return neg_errno;
}
