/* ext3 extended attributes, write side (write.h, "extended attributes"; the
 * read side is xattr.c). See docs/write-names.md, "Extended attributes".
 *
 * Each change parses the inode body's region and the attribute block into a
 * list of items, edits the list and writes each changed region again from
 * scratch (entries from the start, values packed from the end). The block's
 * entries are kept sorted as ext3 sorts them (name index, name length,
 * name), each entry carries its hash and the header the block hash, which
 * e2fsck checks. A block shared by several inodes (h_refcount > 1) is never
 * written: the changed copy goes to a new block and the old one loses a
 * reference.
 *
 * Locking: the caller holds in->lock as writer and a handle. The block's
 * refcount is read and changed under the buffer lock (another inode sharing
 * the block may drop it at the same time); write access is taken before the
 * buffer lock, as jbd may lock the buffer itself. */
#include "extfs/core/csum.h"
#include "extfs/core/ext3_fsops.h"
#include "extfs/core/write.h"

#include "buf/buf.h"
#include "util/err.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define XA_NAME_MAX 255
#define XA_VALUE_MAX 65536u /* XATTR_SIZE_MAX */

/* One attribute: pointers into a private copy of its region or the
 * caller's name/value. */
struct xa_item {
	uint8_t index;
	uint8_t name_len;
	const char *name;
	const uint8_t *value;
	uint32_t value_len;
};

struct xa_list {
	struct xa_item *v;
	unsigned n, cap;
	uint8_t *copy; /* the region the items point into (owned) */
};

static void xa_list_free(struct xa_list *l)
{
	free(l->v);
	free(l->copy);
	memset(l, 0, sizeof *l);
}

/* Bytes a list needs in a region: entries, their values and the 4-byte end
 * marker. */
static size_t xa_list_bytes(const struct xa_list *l)
{
	size_t sum = 4;
	for (unsigned i = 0; i < l->n; i++)
		sum += EXT3_XATTR_LEN(l->v[i].name_len) + EXT3_XATTR_SIZE(l->v[i].value_len);
	return sum;
}

/* The namespace of a full name: index and the name after the prefix. */
static int xa_name_split(const char *name, uint8_t *index, const char **suffix)
{
	static const struct {
		const char *prefix;
		uint8_t index;
		bool whole; /* the prefix is the whole name */
	} ns[] = {
		{"user.", EXT3_XATTR_INDEX_USER, false},
		{"system.posix_acl_access", EXT3_XATTR_INDEX_POSIX_ACL_ACCESS, true},
		{"system.posix_acl_default", EXT3_XATTR_INDEX_POSIX_ACL_DEFAULT, true},
		{"trusted.", EXT3_XATTR_INDEX_TRUSTED, false},
		{"security.", EXT3_XATTR_INDEX_SECURITY, false},
	};
	if (!name)
		return err_set(-EINVAL, "ext3: xattr: no name");
	if (strlen(name) > XA_NAME_MAX)
		return err_set(-ERANGE, "ext3: xattr name of %zu bytes (at most %d)", strlen(name),
			       XA_NAME_MAX);
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		size_t pl = strlen(ns[i].prefix);
		if (strncmp(name, ns[i].prefix, pl) != 0)
			continue;
		if (ns[i].whole && name[pl] != '\0')
			continue;
		if (!ns[i].whole && name[pl] == '\0')
			return err_set(-EINVAL, "ext3: xattr %s: empty name", name);
		*index = ns[i].index;
		*suffix = name + pl;
		return 0;
	}
	return err_set(-EOPNOTSUPP, "ext3: xattr %s: unsupported namespace", name);
}

/* Parse the entries of a region into l (which takes ownership of `copy`,
 * the region's private copy). base: where value offsets count from; entries
 * from `first`, the region ends at copy + size. Unknown name indexes are
 * kept as they are. */
static int xa_parse(struct xa_list *l, uint8_t *copy, size_t size, size_t base, size_t first,
		    const char *what, uint32_t ino)
{
	l->copy = copy;
	l->cap = (unsigned)(size / sizeof(struct ext3_xattr_entry)) + 2;
	l->v = calloc(l->cap, sizeof *l->v);
	if (!l->v)
		return err_set(-ENOMEM, "ext3: out of memory for xattrs");
	size_t off = first, span = size - base;
	for (;;) {
		uint32_t word = 0;
		if (size - off >= 4)
			memcpy(&word, copy + off, 4);
		if (size - off < 4 || word == 0)
			return 0;
		struct ext3_xattr_entry e;
		if (size - off < sizeof e)
			break;
		memcpy(&e, copy + off, sizeof e);
		size_t len = EXT3_XATTR_LEN(e.e_name_len);
		uint32_t vs = le32_to_cpu(e.e_value_size), vo = le16_to_cpu(e.e_value_offs);
		if (len > size - off || e.e_value_inum != 0 || (vs && (vo > span || vs > span - vo)) ||
		    l->n + 1 >= l->cap)
			break;
		l->v[l->n++] = (struct xa_item){
			.index = e.e_name_index,
			.name_len = e.e_name_len,
			.name = (const char *)copy + off + sizeof e,
			.value = copy + base + vo,
			.value_len = vs,
		};
		off += len;
	}
	return err_set(-EUCLEAN, "ext3: inode %u: %s: bad xattr entry at offset %zu", ino, what, off);
}

static int xa_find(const struct xa_list *l, uint8_t index, const char *name, size_t len)
{
	for (unsigned i = 0; i < l->n; i++)
		if (l->v[i].index == index && l->v[i].name_len == len &&
		    memcmp(l->v[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

static void xa_remove_at(struct xa_list *l, int i)
{
	if (i < 0)
		return;
	memmove(&l->v[i], &l->v[i + 1], (l->n - (unsigned)i - 1) * sizeof l->v[0]);
	l->n--;
}

/* Replace or append (the list always has a free slot: cap > n). */
static void xa_put(struct xa_list *l, const struct xa_item *it)
{
	int i = xa_find(l, it->index, it->name, it->name_len);
	if (i >= 0)
		l->v[i] = *it;
	else
		l->v[l->n++] = *it;
}

/* ext3's order in the block: name index, then name length, then name. */
static int xa_cmp(const void *a, const void *b)
{
	const struct xa_item *x = a, *y = b;
	if (x->index != y->index)
		return x->index < y->index ? -1 : 1;
	if (x->name_len != y->name_len)
		return x->name_len < y->name_len ? -1 : 1;
	return memcmp(x->name, y->name, x->name_len);
}

/* The entry hash of ext3 (and e2fsprogs): the name's bytes as signed chars
 * (ext3 on x86), then the value as padded little-endian words. */
static uint32_t xa_entry_hash(const char *name, size_t name_len, const uint8_t *padded_value,
			      uint32_t value_len)
{
	uint32_t h = 0;
	for (size_t i = 0; i < name_len; i++)
		h = (h << 5) ^ (h >> 27) ^ (uint32_t)(int32_t)(signed char)name[i];
	for (uint32_t w = 0; w < (value_len + 3) / 4; w++) {
		uint32_t v;
		memcpy(&v, padded_value + 4 * w, 4);
		h = (h << 16) ^ (h >> 16) ^ le32_to_cpu(v);
	}
	return h;
}

/* Write l into out[0..size): entries from `first`, values from the end
 * down, value offsets from `base`. Returns the combined block hash (0 when
 * empty). The caller checked that it fits (xa_list_bytes <= size - first). */
static uint32_t xa_build(const struct xa_list *l, uint8_t *out, size_t size, size_t base,
			 size_t first)
{
	memset(out + first, 0, size - first);
	size_t eoff = first, vend = size;
	uint32_t bhash = 0;
	bool unhashed = false;
	for (unsigned i = 0; i < l->n; i++) {
		const struct xa_item *it = &l->v[i];
		struct ext3_xattr_entry e = {
			.e_name_len = it->name_len,
			.e_name_index = it->index,
			.e_value_size = cpu_to_le32(it->value_len),
		};
		const uint8_t *vp = out; /* no value: nothing hashed */
		if (it->value_len) {
			vend -= EXT3_XATTR_SIZE(it->value_len);
			memcpy(out + vend, it->value, it->value_len);
			e.e_value_offs = cpu_to_le16((uint16_t)(vend - base));
			vp = out + vend;
		}
		uint32_t eh = xa_entry_hash(it->name, it->name_len, vp, it->value_len);
		e.e_hash = cpu_to_le32(eh);
		memcpy(out + eoff, &e, sizeof e);
		memcpy(out + eoff + sizeof e, it->name, it->name_len);
		eoff += EXT3_XATTR_LEN(it->name_len);
		bhash = (bhash << 16) ^ (bhash >> 16) ^ eh;
		unhashed |= eh == 0; /* ext3: an entry without a hash gives the block none */
	}
	return unhashed ? 0 : bhash;
}

/* ---- the inode body's region (256-byte inodes) ---- */

/* Region [start, raw_size) of raw; start = 0 when the inode has none. */
static unsigned ibody_start(const struct ext3_inode *in)
{
	if (in->raw_size <= EXT3_GOOD_OLD_INODE_SIZE || in->a.extra_isize < 4)
		return 0;
	unsigned s = EXT3_GOOD_OLD_INODE_SIZE + in->a.extra_isize;
	return s + 4 + sizeof(struct ext3_xattr_entry) + 4 <= in->raw_size ? s : 0;
}

static int ibody_load(const struct ext3_inode *in, struct xa_list *l)
{
	unsigned s = ibody_start(in);
	if (!s)
		return 0;
	size_t size = in->raw_size - s;
	uint8_t *copy = malloc(size);
	if (!copy)
		return err_set(-ENOMEM, "ext3: out of memory for xattrs");
	memcpy(copy, in->raw + s, size);
	uint32_t magic;
	memcpy(&magic, copy, 4);
	if (le32_to_cpu(magic) != EXT3_XATTR_MAGIC) {
		memset(copy, 0, size); /* no attributes yet: an empty list */
	}
	return xa_parse(l, copy, size, 4, 4, "in-inode xattrs", in->ino);
}

/* Write the region into raw and the whole inode into its inode-table block
 * (its metadata_csum checksum covers the region: ext3_inode_write_raw
 * computes it, under ext3_mark_inode_dirty). */
static int ibody_store(struct jbd_handle *h, struct ext3_inode *in, const struct xa_list *l)
{
	unsigned s = ibody_start(in);
	size_t size = in->raw_size - s;
	uint8_t *region = in->raw + s;
	xa_build(l, region, size, 4, 4);
	uint32_t magic = l->n ? cpu_to_le32(EXT3_XATTR_MAGIC) : 0;
	memcpy(region, &magic, 4);
	return ext3_mark_inode_dirty(h, in);
}

/* ---- the attribute block ---- */

static int block_check(struct ext3_inode *in, struct buffer_head *bh)
{
	struct ext3_xattr_header hd;
	memcpy(&hd, buf_data(bh), sizeof hd);
	if (le32_to_cpu(hd.h_magic) != EXT3_XATTR_MAGIC || le32_to_cpu(hd.h_blocks) != 1 ||
	    hd.h_refcount == 0)
		return ext3_fs_error(in->fs, "inode %u: xattr block %u: bad header (magic 0x%08x, "
				     "blocks %u, refcount %u)", in->ino, in->a.file_acl,
				     le32_to_cpu(hd.h_magic), le32_to_cpu(hd.h_blocks),
				     le32_to_cpu(hd.h_refcount));
	/* metadata_csum: as the read side (the kernel's EFSBADCRC) */
	if (buf_verified(bh))
		return 0;
	if (!ext4_xattr_block_csum_ok(in->fs, in->a.file_acl, buf_data(bh)))
		return err_set(-EBADMSG, "ext4: inode %u: xattr block %u: checksum mismatch", in->ino,
			       in->a.file_acl);
	buf_set_verified(bh);
	return 0;
}

static int block_load(struct ext3_inode *in, struct xa_list *l)
{
	if (!in->a.file_acl)
		return 0;
	struct ext3_fs *fs = in->fs;
	struct buffer_head *bh;
	int rc = ext3_bread(fs, in->a.file_acl, "xattr", &bh);
	if (rc)
		return rc;
	rc = block_check(in, bh);
	uint8_t *copy = rc ? NULL : malloc(fs->g.block_size);
	if (!rc && !copy)
		rc = err_set(-ENOMEM, "ext3: out of memory for xattrs");
	if (!rc)
		memcpy(copy, buf_data(bh), fs->g.block_size);
	buf_put(bh);
	if (rc)
		return rc;
	rc = xa_parse(l, copy, fs->g.block_size, 0, sizeof(struct ext3_xattr_header), "xattr block",
		      in->ino);
	if (rc == -EUCLEAN)
		return ext3_fs_error(fs, "inode %u: xattr block %u: bad entry", in->ino,
				     in->a.file_acl);
	return rc;
}

/* Read xattr block blk with write access in h. */
static int block_get_writable(struct jbd_handle *h, struct ext3_inode *in, uint64_t blk,
			      struct buffer_head **out)
{
	int rc = ext3_bread(in->fs, blk, "xattr", out);
	if (rc)
		return rc;
	rc = ext3_journal_get_write_access(h, *out);
	if (rc) {
		buf_put(*out);
		*out = NULL;
	}
	return rc;
}

/* Drop one reference on block blk (free it with the last). */
static int block_release(struct jbd_handle *h, struct ext3_inode *in, uint64_t blk)
{
	struct buffer_head *bh;
	int rc = block_get_writable(h, in, blk, &bh);
	if (rc)
		return rc;
	buf_lock(bh);
	struct ext3_xattr_header *hd = buf_data(bh);
	uint32_t refs = le32_to_cpu(hd->h_refcount);
	if (refs > 1) {
		hd->h_refcount = cpu_to_le32(refs - 1);
		/* metadata_csum: under the buffer lock, which every change of
		 * a (shareable) xattr block holds */
		ext4_xattr_block_csum_update(in->fs, blk, buf_data(bh));
	}
	buf_unlock(bh);
	rc = refs > 1 ? ext3_journal_dirty_metadata(h, bh) : 0;
	buf_put(bh);
	if (!rc && refs <= 1)
		rc = ext3_free_blocks(h, in, blk, 1, true);
	return rc;
}

static void block_header(uint8_t *b, uint32_t hash)
{
	struct ext3_xattr_header hd = {
		.h_magic = cpu_to_le32(EXT3_XATTR_MAGIC),
		.h_refcount = cpu_to_le32(1),
		.h_blocks = cpu_to_le32(1),
		.h_hash = cpu_to_le32(hash),
	};
	memcpy(b, &hd, sizeof hd);
}

/* Rewrite the exclusive block in place: 1 done, 0 the block is shared (the
 * caller copies). */
static int block_rewrite(struct jbd_handle *h, struct ext3_inode *in, const struct xa_list *l)
{
	struct ext3_fs *fs = in->fs;
	struct buffer_head *bh;
	int rc = block_get_writable(h, in, in->a.file_acl, &bh);
	if (rc)
		return rc;
	buf_lock(bh);
	uint8_t *b = buf_data(bh);
	struct ext3_xattr_header hd;
	memcpy(&hd, b, sizeof hd);
	bool mine = le32_to_cpu(hd.h_refcount) == 1;
	if (mine) {
		block_header(b, xa_build(l, b, fs->g.block_size, 0, sizeof hd));
		ext4_xattr_block_csum_update(fs, in->a.file_acl, b);
	}
	buf_unlock(bh);
	if (mine)
		rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	return rc ? rc : mine;
}

/* Write l to a new block, then let go of the old one (if any). */
static int block_new(struct jbd_handle *h, struct ext3_inode *in, const struct xa_list *l)
{
	struct ext3_fs *fs = in->fs;
	uint32_t count = 1;
	uint64_t nb;
	int rc = ext3_new_blocks(h, in, 0, &count, &nb);
	if (rc)
		return rc;
	int err = 0;
	struct buffer_head *bh = buf_get(fs->cache, nb, &err);
	if (!bh) {
		rc = err_set(err ? err : -ENOMEM, "ext3: xattr block %llu", (unsigned long long)nb);
		goto undo;
	}
	rc = ext3_journal_get_create_access(h, bh);
	if (rc) {
		buf_put(bh);
		goto undo;
	}
	buf_lock(bh);
	uint8_t *b = buf_data(bh);
	memset(b, 0, fs->g.block_size);
	block_header(b, xa_build(l, b, fs->g.block_size, 0, sizeof(struct ext3_xattr_header)));
	ext4_xattr_block_csum_update(fs, nb, b);
	buf_set_uptodate(bh);
	buf_unlock(bh);
	rc = ext3_journal_dirty_metadata(h, bh);
	buf_put(bh);
	if (rc)
		goto undo;
	uint32_t old = in->a.file_acl;
	in->a.file_acl = (uint32_t)nb;
	if (old)
		return block_release(h, in, old);
	ext3_inode_blocks_add(in, fs->g.block_size / 512);
	return 0;
undo:
	ext3_free_blocks(h, in, nb, 1, true);
	return rc;
}

/* Let go of the inode's xattr block, if any (the caller logs the inode). */
static int block_drop(struct jbd_handle *h, struct ext3_inode *in)
{
	if (!in->a.file_acl)
		return 0;
	int rc = block_release(h, in, in->a.file_acl);
	if (rc)
		return rc;
	in->a.file_acl = 0;
	ext3_inode_blocks_add(in, -(int64_t)(in->fs->g.block_size / 512));
	return 0;
}

/* Make the block hold l (none when l is empty). */
static int block_store(struct jbd_handle *h, struct ext3_inode *in, const struct xa_list *l)
{
	if (l->n == 0)
		return block_drop(h, in);
	if (in->a.file_acl) {
		int rc = block_rewrite(h, in, l);
		if (rc)
			return rc < 0 ? rc : 0;
	}
	return block_new(h, in, l);
}

/* The first attribute written on a filesystem sets the ext_attr feature. */
static int xa_feature(struct jbd_handle *h, struct ext3_fs *fs)
{
	ext3_sb_lock(fs);
	uint32_t compat = le32_to_cpu(fs->sb.s_feature_compat);
	bool set = !(compat & EXT3_FEATURE_COMPAT_EXT_ATTR);
	if (set)
		fs->sb.s_feature_compat = cpu_to_le32(compat | EXT3_FEATURE_COMPAT_EXT_ATTR);
	ext3_sb_unlock(fs);
	return set ? ext3_super_dirty(h, fs) : 0;
}

int ext3_xattr_set(struct jbd_handle *h, struct ext3_inode *in, const char *name,
		   const void *value, size_t size, unsigned flags)
{
	struct ext3_fs *fs = in->fs;
	uint8_t index = 0;
	const char *suffix = "";
	int rc = xa_name_split(name, &index, &suffix);
	if (rc)
		return rc;
	if (value && size > XA_VALUE_MAX)
		return err_set(-E2BIG, "ext3: xattr %s: value of %zu bytes", name, size);
	size_t slen = strlen(suffix);
	struct xa_list ib = {0}, bl = {0};
	rc = ibody_load(in, &ib);
	if (!rc)
		rc = block_load(in, &bl);
	if (rc)
		goto out;
	int in_ib = ib.v ? xa_find(&ib, index, suffix, slen) : -1;
	int in_bl = bl.v ? xa_find(&bl, index, suffix, slen) : -1;
	bool found = in_ib >= 0 || in_bl >= 0;
	if (found && (flags & EXT3_XATTR_CREATE)) {
		rc = err_set(-EEXIST, "ext3: inode %u: xattr %s exists", in->ino, name);
		goto out;
	}
	if (!found && (!value || (flags & EXT3_XATTR_REPLACE))) {
		rc = err_set(-ENODATA, "ext3: inode %u: no xattr %s", in->ino, name);
		goto out;
	}
	bool ib_dirty = in_ib >= 0, bl_dirty = in_bl >= 0;
	xa_remove_at(&ib, in_ib);
	xa_remove_at(&bl, in_bl);
	if (value) {
		struct xa_item it = {.index = index, .name_len = (uint8_t)slen, .name = suffix,
				     .value = value, .value_len = (uint32_t)size};
		unsigned s = ibody_start(in);
		size_t ib_room = s ? in->raw_size - s - 4 : 0;
		if (ib.v && xa_list_bytes(&ib) + EXT3_XATTR_LEN(slen) + EXT3_XATTR_SIZE(size) <= ib_room) {
			xa_put(&ib, &it);
			ib_dirty = true;
		} else {
			size_t room = fs->g.block_size - sizeof(struct ext3_xattr_header);
			if (xa_list_bytes(&bl) + EXT3_XATTR_LEN(slen) + EXT3_XATTR_SIZE(size) > room) {
				rc = err_set(-ENOSPC, "ext3: inode %u: no room for xattr %s (%zu bytes)",
					     in->ino, name, size);
				goto out;
			}
			if (!bl.v) {
				bl.cap = fs->g.block_size / 16 + 2;
				bl.v = calloc(bl.cap, sizeof *bl.v);
				if (!bl.v) {
					rc = err_set(-ENOMEM, "ext3: out of memory for xattrs");
					goto out;
				}
			}
			xa_put(&bl, &it);
			bl_dirty = true;
		}
	}
	if (bl_dirty) {
		qsort(bl.v, bl.n, sizeof bl.v[0], xa_cmp);
		rc = block_store(h, in, &bl);
	}
	if (!rc && ib_dirty)
		rc = ibody_store(h, in, &ib);
	if (!rc && value)
		rc = xa_feature(h, fs);
	if (!rc) {
		ext3_now(&in->a.ctime, &in->a.ctime_ns);
		rc = ext3_mark_inode_dirty(h, in);
	}
out:
	xa_list_free(&ib);
	xa_list_free(&bl);
	return rc;
}

int ext3_xattr_drop(struct jbd_handle *h, struct ext3_inode *in)
{
	if (!in->a.file_acl)
		return 0;
	int rc = block_drop(h, in);
	return rc ? rc : ext3_mark_inode_dirty(h, in);
}
