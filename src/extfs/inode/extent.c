/* Extent tree lookup (extent.h). A walk from the root in i_block down to a
 * leaf: at each level the last entry starting at or before lblk is taken
 * (binary search over the sorted entries), and the first entry starting
 * after lblk bounds a hole at that level; the nearest such bound over all
 * levels is where the next mapped block can start. */
#include "extfs/inode/extent.h"

#include "extfs/format/ext4_extent.h"
#include "util/endian.h"
#include "util/err.h"

#include <errno.h>
#include <string.h>

#define IBLOCK_BYTES 60

static int corrupt(const struct ext4_ext_source *src, uint64_t blk, const char *what)
{
	if (blk)
		return err_set(-EUCLEAN, "ext4: inode %u: extent tree block %llu: %s", src->ino,
			       (unsigned long long)blk, what);
	return err_set(-EUCLEAN, "ext4: inode %u: extent tree root: %s", src->ino, what);
}

/* The header of a node of `bytes` bytes (60 for the root) at the depth the
 * level above says it has (-1: the root, any depth up to the maximum). */
static int header_check(const struct ext4_ext_source *src, const struct ext4_extent_header *eh, size_t bytes,
			int want_depth, uint64_t blk)
{
	if (le16_to_cpu(eh->eh_magic) != EXT4_EXT_MAGIC)
		return corrupt(src, blk, "bad magic");
	unsigned max = le16_to_cpu(eh->eh_max), n = le16_to_cpu(eh->eh_entries);
	unsigned depth = le16_to_cpu(eh->eh_depth);
	size_t room = (bytes - sizeof *eh) / sizeof(struct ext4_extent);
	if (max == 0 || max > room)
		return corrupt(src, blk, "eh_max out of range");
	if (n > max)
		return corrupt(src, blk, "more entries than eh_max");
	if (depth > EXT4_EXT_MAX_DEPTH)
		return corrupt(src, blk, "depth past 5");
	if (want_depth >= 0 && depth != (unsigned)want_depth)
		return corrupt(src, blk, "depth does not follow its parent's");
	return 0;
}

static uint32_t first_block(const uint8_t *first, unsigned i)
{
	uint32_t b;
	memcpy(&b, first + (size_t)i * 12, 4);
	return le32_to_cpu(b);
}

/* Every entry of a node, as the kernel checks a block it reads: sorted by
 * first block; in a leaf, no extent of length 0, none overlapping the next,
 * none past the 32-bit logical space or outside the filesystem; in an
 * index, no child outside the filesystem. */
static int entries_check(const struct ext4_ext_source *src, const uint8_t *first, unsigned n, unsigned depth,
			 uint64_t blk)
{
	uint64_t end = 0; /* first logical block after the previous entry */
	for (unsigned i = 0; i < n; i++) {
		uint32_t b = first_block(first, i);
		if (i && b < end)
			return corrupt(src, blk, depth ? "index entries out of order" : "extents out of order or overlapping");
		if (depth) {
			struct ext4_extent_idx ix;
			memcpy(&ix, first + (size_t)i * 12, sizeof ix);
			uint64_t child = (uint64_t)le16_to_cpu(ix.ei_leaf_hi) << 32 | le32_to_cpu(ix.ei_leaf_lo);
			if (child == 0 || child >= src->blocks_count)
				return corrupt(src, blk, "an index pointing outside the filesystem");
			end = (uint64_t)b + 1;
			continue;
		}
		struct ext4_extent e;
		memcpy(&e, first + (size_t)i * 12, sizeof e);
		unsigned len = le16_to_cpu(e.ee_len);
		if (len > EXT4_EXT_INIT_MAX_LEN)
			len -= EXT4_EXT_INIT_MAX_LEN;
		uint64_t pstart = (uint64_t)le16_to_cpu(e.ee_start_hi) << 32 | le32_to_cpu(e.ee_start_lo);
		if (len == 0)
			return corrupt(src, blk, "an extent of length 0");
		if ((uint64_t)b + len > ((uint64_t)1 << 32) || pstart == 0 || pstart + len > src->blocks_count)
			return corrupt(src, blk, "an extent outside the filesystem");
		end = (uint64_t)b + len;
	}
	return 0;
}

/* Index of the last entry whose first block is <= lblk, -1 if none. */
static int entry_find(const uint8_t *first, unsigned n, uint32_t lblk)
{
	int lo = 0, hi = (int)n - 1, ans = -1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (first_block(first, (unsigned)mid) <= lblk) {
			ans = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return ans;
}

int ext4_ext_lookup(const struct ext4_ext_source *src, const void *i_block, uint32_t lblk, void *scratch,
		    struct ext4_ext_map *out)
{
	memset(out, 0, sizeof *out);
	const uint8_t *node = i_block;
	size_t bytes = IBLOCK_BYTES;
	uint64_t blk = 0;
	int want = -1;
	/* The next mapped logical block after lblk seen so far (2^32: none). */
	uint64_t next = (uint64_t)1 << 32;
	void *ref = NULL;       /* a get source's block held */
	bool checked = false;   /* ...and its entries checked before */
	int rc;
	for (;;) { /* at most 6 levels: header_check pins each child's depth */
		const struct ext4_extent_header *eh = (const void *)node;
		rc = header_check(src, eh, bytes, want, blk);
		if (rc)
			break;
		unsigned n = le16_to_cpu(eh->eh_entries), depth = le16_to_cpu(eh->eh_depth);
		const uint8_t *first = node + sizeof *eh;
		if (!checked && (rc = entries_check(src, first, n, depth, blk)))
			break;
		int i = entry_find(first, n, lblk);
		if ((unsigned)(i + 1) < n && first_block(first, (unsigned)(i + 1)) < next)
			next = first_block(first, (unsigned)(i + 1));
		if (depth == 0 && i >= 0) {
			struct ext4_extent e;
			memcpy(&e, first + (size_t)i * 12, sizeof e);
			uint32_t start = le32_to_cpu(e.ee_block);
			unsigned len = le16_to_cpu(e.ee_len);
			bool unwritten = len > EXT4_EXT_INIT_MAX_LEN;
			if (unwritten)
				len -= EXT4_EXT_INIT_MAX_LEN;
			if ((uint64_t)lblk < (uint64_t)start + len) {
				uint64_t pstart = (uint64_t)le16_to_cpu(e.ee_start_hi) << 32 | le32_to_cpu(e.ee_start_lo);
				out->pblk = pstart + (lblk - start);
				out->len = (uint32_t)(start + len - lblk);
				out->unwritten = unwritten;
				break;
			}
		}
		if (depth == 0 || i < 0) {
			/* A hole: up to the nearest next entry of any level. */
			uint64_t hole = next - lblk;
			out->len = hole > UINT32_MAX ? UINT32_MAX : (uint32_t)hole;
			break;
		}
		struct ext4_extent_idx ix;
		memcpy(&ix, first + (size_t)i * 12, sizeof ix);
		uint64_t child = (uint64_t)le16_to_cpu(ix.ei_leaf_hi) << 32 | le32_to_cpu(ix.ei_leaf_lo);
		if (src->get) {
			if (ref)
				src->put(src->ctx, ref);
			ref = NULL;
			int err = 0;
			node = src->get(src->ctx, child, &ref, &checked, &err);
			rc = node ? 0 : (err < 0 ? err : -EIO);
		} else {
			rc = src->read(src->ctx, child, scratch);
			node = scratch;
		}
		if (rc < 0) {
			rc = err_wrap(rc, "ext4: inode %u: reading extent tree block %llu", src->ino,
				      (unsigned long long)child);
			break;
		}
		bytes = src->block_size;
		blk = child;
		want = (int)depth - 1;
	}
	if (ref)
		src->put(src->ctx, ref);
	return rc;
}

int ext4_ext_node_check(const struct ext4_ext_source *src, const void *node, uint64_t pblk)
{
	const struct ext4_extent_header *eh = node;
	int rc = header_check(src, eh, src->block_size, -1, pblk);
	if (rc)
		return rc;
	return entries_check(src, (const uint8_t *)node + sizeof *eh, le16_to_cpu(eh->eh_entries),
			     le16_to_cpu(eh->eh_depth), pblk);
}
