/* POSIX ACLs: their two formats and the mode rules (acl.h); the inode
 * side (reading, checking, inheriting) is acl_inode.c.
 *
 *   VFS xattr (what the kernel sends and expects, getfacl's view):
 *     le32 version 2, then 8-byte entries: le16 tag, le16 perm, le32 id
 *   ext3 on disk (what the kernel's ext3 stores, fs/ext3/acl.h):
 *     le32 version 1, then 4-byte entries (le16 tag, le16 perm) for
 *     USER_OBJ, GROUP_OBJ, MASK, OTHER and 8-byte ones (with le32 id) for
 *     USER and GROUP.
 * Both are converted to one array of entries; the mode rules (create with
 * a default ACL, chmod, setting an access ACL) work on that array. */
#include "extfs/xattr/acl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { VFS_VERSION = 2, EXT3_VERSION = 1 };

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint16_t le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static void put32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}
static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static bool has_id(uint16_t tag)
{
	return tag == EXT3_ACL_USER || tag == EXT3_ACL_GROUP;
}

static struct ext3_acl *ext3_acl_alloc(size_t n)
{
	return calloc(1, sizeof(struct ext3_acl) + n * sizeof(struct ext3_acl_entry));
}

void ext3_acl_free(struct ext3_acl *a)
{
	free(a);
}

int ext3_acl_from_vfs(const void *buf, size_t n, struct ext3_acl **out)
{
	const unsigned char *p = buf;
	*out = NULL;
	if (n < 4 || (n - 4) % 8 || le32(p) != VFS_VERSION)
		return -EINVAL;
	size_t cnt = (n - 4) / 8;
	struct ext3_acl *a = ext3_acl_alloc(cnt);
	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < cnt; i++) {
		const unsigned char *q = p + 4 + 8 * i;
		a->e[i].tag = le16(q);
		a->e[i].perm = le16(q + 2);
		a->e[i].id = has_id(a->e[i].tag) ? le32(q + 4) : EXT3_ACL_UNDEFINED_ID;
	}
	a->n = cnt;
	*out = a;
	return 0;
}

int ext3_acl_from_disk(const void *buf, size_t n, struct ext3_acl **out)
{
	const unsigned char *p = buf;
	*out = NULL;
	if (n < 4 || le32(p) != EXT3_VERSION)
		return -EUCLEAN;
	struct ext3_acl *a = ext3_acl_alloc((n - 4) / 4);
	if (!a)
		return -ENOMEM;
	for (size_t at = 4; at < n;) {
		if (n - at < 4)
			goto bad;
		uint16_t tag = le16(p + at);
		struct ext3_acl_entry *e = &a->e[a->n++];
		e->tag = tag;
		e->perm = le16(p + at + 2);
		e->id = EXT3_ACL_UNDEFINED_ID;
		if (has_id(tag)) {
			if (n - at < 8)
				goto bad;
			e->id = le32(p + at + 4);
			at += 8;
		} else {
			at += 4;
		}
	}
	*out = a;
	return 0;
bad:
	ext3_acl_free(a);
	return -EUCLEAN;
}

size_t ext3_acl_vfs_size(const struct ext3_acl *a)
{
	return 4 + 8 * a->n;
}

void ext3_acl_to_vfs(const struct ext3_acl *a, void *buf)
{
	unsigned char *p = buf;
	put32(p, VFS_VERSION);
	for (size_t i = 0; i < a->n; i++) {
		unsigned char *q = p + 4 + 8 * i;
		put16(q, a->e[i].tag);
		put16(q + 2, a->e[i].perm);
		put32(q + 4, has_id(a->e[i].tag) ? a->e[i].id : EXT3_ACL_UNDEFINED_ID);
	}
}

size_t ext3_acl_disk_size(const struct ext3_acl *a)
{
	size_t n = 4;
	for (size_t i = 0; i < a->n; i++)
		n += has_id(a->e[i].tag) ? 8 : 4;
	return n;
}

void ext3_acl_to_disk(const struct ext3_acl *a, void *buf)
{
	unsigned char *p = buf;
	put32(p, EXT3_VERSION);
	size_t at = 4;
	for (size_t i = 0; i < a->n; i++) {
		put16(p + at, a->e[i].tag);
		put16(p + at + 2, a->e[i].perm);
		if (has_id(a->e[i].tag)) {
			put32(p + at + 4, a->e[i].id);
			at += 8;
		} else {
			at += 4;
		}
	}
}

int ext3_acl_valid(const struct ext3_acl *a)
{
	/* one USER_OBJ, GROUP_OBJ, OTHER; MASK needed with named entries;
	 * entries in tag order, named ones by increasing id, no duplicates */
	unsigned seen = 0, named = 0;
	uint16_t last_tag = 0;
	uint32_t last_id = 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct ext3_acl_entry *e = &a->e[i];
		if (e->perm & ~7u)
			return -EINVAL;
		if (e->tag < last_tag)
			return -EINVAL;
		switch (e->tag) {
		case EXT3_ACL_USER_OBJ: case EXT3_ACL_GROUP_OBJ: case EXT3_ACL_MASK: case EXT3_ACL_OTHER:
			if (seen & e->tag)
				return -EINVAL;
			seen |= e->tag;
			break;
		case EXT3_ACL_USER: case EXT3_ACL_GROUP:
			if (e->tag == last_tag && e->id <= last_id)
				return -EINVAL;
			last_id = e->id;
			named++;
			break;
		default:
			return -EINVAL;
		}
		last_tag = e->tag;
	}
	unsigned need = EXT3_ACL_USER_OBJ | EXT3_ACL_GROUP_OBJ | EXT3_ACL_OTHER;
	if ((seen & need) != need || (named && !(seen & EXT3_ACL_MASK)))
		return -EINVAL;
	return 0;
}

static struct ext3_acl_entry *find(struct ext3_acl *a, uint16_t tag)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->e[i].tag == tag)
			return &a->e[i];
	return NULL;
}

bool ext3_acl_mode_of(const struct ext3_acl *ca, uint32_t *mode)
{
	struct ext3_acl *a = (struct ext3_acl *)ca;
	struct ext3_acl_entry *u = find(a, EXT3_ACL_USER_OBJ), *g = find(a, EXT3_ACL_GROUP_OBJ);
	struct ext3_acl_entry *m = find(a, EXT3_ACL_MASK), *o = find(a, EXT3_ACL_OTHER);
	bool equiv = !m && !find(a, EXT3_ACL_USER) && !find(a, EXT3_ACL_GROUP);
	struct ext3_acl_entry *gm = m ? m : g;
	uint32_t perms = (uint32_t)(u ? u->perm : 0) << 6 | (uint32_t)(gm ? gm->perm : 0) << 3 |
			 (uint32_t)(o ? o->perm : 0);
	*mode = (*mode & ~0777u) | perms;
	return equiv;
}

bool ext3_acl_create_masq(struct ext3_acl *a, uint32_t *mode)
{
	uint32_t m = *mode;
	bool not_equiv = false;
	struct ext3_acl_entry *group = NULL, *mask = NULL;
	for (size_t i = 0; i < a->n; i++) {
		struct ext3_acl_entry *e = &a->e[i];
		switch (e->tag) {
		case EXT3_ACL_USER_OBJ:
			e->perm &= (m >> 6) & 7;
			m &= ((uint32_t)e->perm << 6) | ~0700u;
			break;
		case EXT3_ACL_USER: case EXT3_ACL_GROUP:
			not_equiv = true;
			break;
		case EXT3_ACL_GROUP_OBJ:
			group = e;
			break;
		case EXT3_ACL_OTHER:
			e->perm &= m & 7;
			m &= e->perm | ~0007u;
			break;
		case EXT3_ACL_MASK:
			mask = e;
			not_equiv = true;
			break;
		}
	}
	struct ext3_acl_entry *g = mask ? mask : group;
	if (g) {
		g->perm &= (m >> 3) & 7;
		m &= ((uint32_t)g->perm << 3) | ~0070u;
	}
	*mode = m;
	return not_equiv;
}

void ext3_acl_chmod_masq(struct ext3_acl *a, uint32_t mode)
{
	struct ext3_acl_entry *mask = find(a, EXT3_ACL_MASK);
	for (size_t i = 0; i < a->n; i++) {
		struct ext3_acl_entry *e = &a->e[i];
		if (e->tag == EXT3_ACL_USER_OBJ)
			e->perm = (mode >> 6) & 7;
		else if (e->tag == EXT3_ACL_OTHER)
			e->perm = mode & 7;
		else if (e->tag == (mask ? EXT3_ACL_MASK : EXT3_ACL_GROUP_OBJ))
			e->perm = (mode >> 3) & 7;
	}
}

struct ext3_acl *ext3_acl_dup(const struct ext3_acl *a)
{
	struct ext3_acl *d = ext3_acl_alloc(a->n);
	if (d)
		memcpy(d, a, sizeof *a + a->n * sizeof a->e[0]);
	return d;
}

bool ext3_acl_xattr_name(const char *name)
{
	return !strcmp(name, "system.posix_acl_access") || !strcmp(name, "system.posix_acl_default");
}
