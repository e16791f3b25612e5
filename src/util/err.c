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
