/* UUID text form (uuid.h). */
#include "extfs/format/uuid.h"

#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int ext3_uuid_parse(const char *s, uint8_t out[16])
{
	if (!s || strlen(s) != 36)
		return err_set(-EINVAL, "bad uuid '%s' (want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)",
			       s ? s : "");
	size_t n = 0;
	for (size_t i = 0; i < 36;) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				goto bad;
			i++;
			continue;
		}
		int v = 0;
		for (int k = 0; k < 2; k++, i++) {
			char ch = s[i];
			int d;
			if (ch >= '0' && ch <= '9')
				d = ch - '0';
			else if (ch >= 'a' && ch <= 'f')
				d = ch - 'a' + 10;
			else if (ch >= 'A' && ch <= 'F')
				d = ch - 'A' + 10;
			else
				goto bad;
			v = v * 16 + d;
		}
		out[n++] = (uint8_t)v;
	}
	return 0;
bad:
	return err_set(-EINVAL, "bad uuid '%s' (want xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx)", s);
}

void ext3_uuid_format(const uint8_t u[16], char out[37])
{
	snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12],
		 u[13], u[14], u[15]);
}

/* ---- layout ---- */
