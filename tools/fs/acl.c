/* POSIX ACL conversion between the ext3 on-disk and the xattr forms (acl.h). */
#include "acl.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

enum {
	ACL_EXT3_VERSION = 1,
	ACL_XATTR_VERSION = 2,
	ACL_TAG_USER = 0x02,  /* entries with an id: 8 bytes on disk */
	ACL_TAG_GROUP = 0x08,
};

bool acl_xattr_name(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") || !strcmp(name, "system.posix_acl_default");
}

ssize_t acl_ext3_to_xattr(const unsigned char *in, size_t n, unsigned char *out)
{
	if (n < 4 || in[0] != ACL_EXT3_VERSION || in[1] || in[2] || in[3])
		return -EINVAL;
	size_t o = 0;
	out[o++] = ACL_XATTR_VERSION; out[o++] = 0; out[o++] = 0; out[o++] = 0;
	size_t p = 4;
	while (p < n) {
		if (n - p < 4)
			return -EINVAL;
		uint16_t tag = (uint16_t)(in[p] | in[p + 1] << 8);
		uint32_t id = 0xffffffffu; /* ACL_UNDEFINED_ID */
		size_t esz = 4;
		if (tag == ACL_TAG_USER || tag == ACL_TAG_GROUP) {
			if (n - p < 8)
				return -EINVAL;
			id = (uint32_t)in[p + 4] | (uint32_t)in[p + 5] << 8 | (uint32_t)in[p + 6] << 16 |
			     (uint32_t)in[p + 7] << 24;
			esz = 8;
		}
		memcpy(out + o, in + p, 4); /* tag, perm (little-endian in both) */
		out[o + 4] = (unsigned char)id;
		out[o + 5] = (unsigned char)(id >> 8);
		out[o + 6] = (unsigned char)(id >> 16);
		out[o + 7] = (unsigned char)(id >> 24);
		o += 8;
		p += esz;
	}
	return (ssize_t)o;
}
