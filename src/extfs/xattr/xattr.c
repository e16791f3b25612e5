/* ext3 extended attributes (read side): in-inode (256-byte inodes) and the
 * attribute block. See docs/ext3-read-path.md, "Extended attributes". */
#include "extfs/core/csum.h"
#include "extfs/core/ext3_int.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static const char *xattr_prefix(unsigned index)
{
	switch (index) {
	case EXT3_XATTR_INDEX_USER: return "user.";
	case EXT3_XATTR_INDEX_POSIX_ACL_ACCESS: return "system.posix_acl_access";
	case EXT3_XATTR_INDEX_POSIX_ACL_DEFAULT: return "system.posix_acl_default";
	case EXT3_XATTR_INDEX_TRUSTED: return "trusted.";
	case EXT3_XATTR_INDEX_LUSTRE: return "lustre.";
	case EXT3_XATTR_INDEX_SECURITY: return "security.";
	case 7: return "system.";
	case 8: return "system.richacl";
	default: return NULL;
	}
}

int ext3_xattr_region_walk(const uint8_t *base, const uint8_t *first, const uint8_t *end,
			   const char *what, ext3_xattr_cb cb, void *ctx)
{
	const uint8_t *p = first;
	size_t region = (size_t)(end - base);
	while ((size_t)(end - p) >= 4) {
		uint32_t word;
		memcpy(&word, p, 4);
		if (word == 0)
			return 0; /* end of the entry list */
		if ((size_t)(end - p) < sizeof(struct ext3_xattr_entry))
			return err_set(-EUCLEAN, "ext3: %s: truncated xattr entry at offset %zu", what,
				       (size_t)(p - base));
		struct ext3_xattr_entry e;
		memcpy(&e, p, sizeof e);
		size_t elen = EXT3_XATTR_LEN(e.e_name_len);
		if ((size_t)(end - p) < elen)
			return err_set(-EUCLEAN, "ext3: %s: xattr name at offset %zu overflows", what,
				       (size_t)(p - base));
		uint32_t vsize = le32_to_cpu(e.e_value_size);
		uint16_t voffs = le16_to_cpu(e.e_value_offs);
		if (le32_to_cpu(e.e_value_inum) != 0)
			return err_set(-EUCLEAN, "ext3: %s: xattr value in an inode (ea_inode) is not "
				       "ext3", what);
		if (vsize && ((size_t)voffs > region || vsize > region - voffs))
			return err_set(-EUCLEAN, "ext3: %s: xattr value (offset %u, %u bytes) outside "
				       "the region (%zu bytes)", what, voffs, vsize, region);
		const char *prefix = xattr_prefix(e.e_name_index);
		if (prefix) {
			int rc = cb(ctx, prefix, (const char *)p + sizeof e, e.e_name_len,
				    vsize ? base + voffs : base, vsize);
			if (rc)
				return rc;
		}
		p += elen;
	}
	return 0;
}

/* Call cb for the in-inode attributes and then the block's. */
static int xattr_walk_locked(struct ext3_fs *fs, const struct ext3_inode *in, ext3_xattr_cb cb,
		      void *ctx)
{
	char what[64];
	if (in->raw_size > EXT3_GOOD_OLD_INODE_SIZE) {
		unsigned off = EXT3_GOOD_OLD_INODE_SIZE + in->a.extra_isize;
		uint32_t magic;
		if (off + 4 <= in->raw_size) {
			memcpy(&magic, in->raw + off, 4);
			if (le32_to_cpu(magic) == EXT3_XATTR_MAGIC) {
				snprintf(what, sizeof what, "inode %u", in->a.ino);
				const uint8_t *first = in->raw + off + 4;
				int rc = ext3_xattr_region_walk(first, first, in->raw + in->raw_size, what,
								cb, ctx);
				if (rc)
					return rc;
			}
		}
	}
	if (!in->a.file_acl)
		return 0;
	struct buffer_head *bh;
	int rc = ext3_bread(fs, in->a.file_acl, "xattr", &bh);
	if (rc)
		return rc;
	const uint8_t *b = buf_data(bh);
	struct ext3_xattr_header h;
	memcpy(&h, b, sizeof h);
	if (le32_to_cpu(h.h_magic) != EXT3_XATTR_MAGIC || le32_to_cpu(h.h_blocks) != 1) {
		buf_put(bh);
		return err_set(-EUCLEAN, "ext3: inode %u: xattr block %u: bad header (magic 0x%08x, "
			       "blocks %u)", in->a.ino, in->a.file_acl, le32_to_cpu(h.h_magic),
			       le32_to_cpu(h.h_blocks));
	}
	/* metadata_csum: the kernel's EFSBADCRC for this block. */
	if (!buf_verified(bh) && !ext4_xattr_block_csum_ok(fs, in->a.file_acl, b)) {
		buf_put(bh);
		return err_set(-EBADMSG, "ext4: inode %u: xattr block %u: checksum mismatch", in->a.ino,
			       in->a.file_acl);
	}
	snprintf(what, sizeof what, "inode %u, xattr block %u", in->a.ino, in->a.file_acl);
	rc = ext3_xattr_region_walk(b, b + sizeof h, b + fs->g.block_size, what, cb, ctx);
	buf_put(bh);
	return rc;
}

/* Walk with in->lock held as reader. */
static int xattr_walk(struct ext3_fs *fs, struct ext3_inode *in, ext3_xattr_cb cb, void *ctx)
{
	ext3_inode_rdlock(in);
	int rc = xattr_walk_locked(fs, in, cb, ctx);
	ext3_inode_unlock(in);
	return rc;
}

struct get_ctx {
	const char *name;
	size_t name_len;
	void *value;
	size_t size;
	ssize_t result;
};

static int get_cb(void *ctx, const char *prefix, const char *name, size_t name_len,
		  const uint8_t *value, size_t value_len)
{
	struct get_ctx *g = ctx;
	size_t pl = strlen(prefix);
	if (pl + name_len != g->name_len || memcmp(g->name, prefix, pl) ||
	    memcmp(g->name + pl, name, name_len))
		return 0;
	if (g->size == 0) {
		g->result = (ssize_t)value_len;
	} else if (value_len > g->size) {
		g->result = err_set(-ERANGE, "xattr value of %zu bytes, buffer %zu", value_len,
				    g->size);
	} else {
		memcpy(g->value, value, value_len);
		g->result = (ssize_t)value_len;
	}
	return 1;
}

ssize_t ext3_xattr_get(struct ext3_fs *fs, struct ext3_inode *in, const char *name,
		       void *value, size_t size)
{
	struct get_ctx g = {.name = name, .name_len = strlen(name), .value = value, .size = size};
	int rc = xattr_walk(fs, in, get_cb, &g);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return err_set(-ENODATA, "no attribute %s", name);
	return g.result;
}

struct list_ctx {
	char *list;
	size_t size;
	size_t len;
	bool overflow;
};

static int list_cb(void *ctx, const char *prefix, const char *name, size_t name_len,
		   const uint8_t *value, size_t value_len)
{
	struct list_ctx *l = ctx;
	(void)value;
	(void)value_len;
	size_t pl = strlen(prefix);
	size_t need = pl + name_len + 1;
	if (l->size && !l->overflow) {
		if (l->len + need > l->size) {
			l->overflow = true;
		} else {
			memcpy(l->list + l->len, prefix, pl);
			memcpy(l->list + l->len + pl, name, name_len);
			l->list[l->len + pl + name_len] = '\0';
		}
	}
	l->len += need;
	return 0;
}

ssize_t ext3_xattr_list(struct ext3_fs *fs, struct ext3_inode *in, char *list,
			size_t size)
{
	struct list_ctx l = {.list = list, .size = size};
	int rc = xattr_walk(fs, in, list_cb, &l);
	if (rc < 0)
		return rc;
	if (l.overflow)
		return err_set(-ERANGE, "xattr names need %zu bytes, buffer %zu", l.len, size);
	return (ssize_t)l.len;
}
