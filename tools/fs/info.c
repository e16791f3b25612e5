/* nostall info [-F] [--device SPEC] [-o OPTS] IMAGE: the superblock in
 * `dumpe2fs -h` style, then one entry per block group; with -F the table of
 * on-disk features nostall knows (nostall_feature_get) and which of them the
 * image has (docs/cli.md, docs/ext3-format.md "Features"). */
#include "../common/cmds.h"
#include "common.h"

#include <inttypes.h>
#include <stdio.h>

static void print_time_field(const char *label, int64_t t)
{
	if (t == 0) {
		printf("%-26s n/a\n", label);
		return;
	}
	struct nostall_timespec ts = { .sec = t, .nsec = 0 };
	char buf[64];
	cli_time_string(&ts, false, buf, sizeof buf);
	printf("%-26s %s\n", label, buf);
}

/* -F: one line per feature of the table, then per bit of the image the
 * table lacks: kind, bit, name, what nostall does, whether mkfs sets it,
 * whether the image has it. */
static int info_features(const struct nostall_info *in)
{
	static const char *const kinds[3] = { "compat", "incompat", "ro_compat" };
	static const char *const support[4] = { "read-write", "ignored", "read-only", "refused" };
	const uint32_t set[3] = { in->feature_compat, in->feature_incompat, in->feature_ro_compat };
	uint32_t known[3] = { 0, 0, 0 };
	printf("%-9s %-10s %-19s %-10s %-4s %s\n", "KIND", "BIT", "NAME", "NOSTALL", "MKFS", "IMAGE");
	struct nostall_feature f;
	for (unsigned i = 0; nostall_feature_get(i, &f) == 0; i++) {
		known[f.which] |= f.bit;
		printf("%-9s 0x%08" PRIx32 " %-19s %-10s %-4s %s\n", kinds[f.which], f.bit, f.name,
		       f.support_name, f.mkfs ? "yes" : "no", (set[f.which] & f.bit) ? "set" : "-");
	}
	static const char letter[3] = { 'C', 'I', 'R' };
	for (int w = 0; w < 3; w++)
		for (int b = 0; b < 32; b++) {
			uint32_t bit = 1u << b;
			if (!(set[w] & bit) || (known[w] & bit))
				continue;
			char name[32];
			snprintf(name, sizeof name, "FEATURE_%c%d", letter[w], b);
			int s = nostall_feature_support(w, bit);
			printf("%-9s 0x%08" PRIx32 " %-19s %-10s %-4s %s\n", kinds[w], bit, name,
			       s >= 0 && s < 4 ? support[s] : "?", "no", "set");
		}
	return 0;
}

static int info_run(struct cli_args *a, struct nostall_fs *fs)
{
	struct nostall_info in;
	struct nostall_statfs sf;
	int rc = nostall_info(fs, &in);
	if (rc == 0)
		rc = nostall_statfs(fs, &sf);
	if (rc) {
		fprintf(stderr, "nostall info: %s: %s\n", cli_what(a), nostall_errmsg(rc));
		return 1;
	}
	if (a->flag['F'])
		return info_features(&in);
	static const char *const hash_names[] = { "legacy", "half_md4", "tea" };
	printf("%-26s %s\n", "Filesystem volume name:", in.volume_name[0] ? in.volume_name : "<none>");
	printf("%-26s %s\n", "Last mounted on:", in.last_mounted[0] ? in.last_mounted : "<not available>");
	printf("%-26s %s\n", "Filesystem UUID:", in.uuid);
	printf("%-26s %u.%u\n", "Filesystem revision #:", in.rev_level, in.minor_rev_level);
	printf("%-26s %s\n", "Filesystem features:", in.features);
	printf("%-26s %s%s%s\n", "Filesystem state:", (in.state & 1) ? "clean" : "not clean",
	       (in.state & 2) ? " with errors" : "", (in.state & 4) ? " (orphans being recovered)" : "");
	printf("%-26s %s\n", "Errors behavior:",
	       in.errors == 1 ? "Continue" : in.errors == 2 ? "Remount read-only" : in.errors == 3 ? "Panic" : "Unknown");
	printf("%-26s %u\n", "Inode count:", in.inodes_count);
	printf("%-26s %" PRIu64 "\n", "Block count:", in.blocks_count);
	printf("%-26s %" PRIu64 "\n", "Reserved block count:", in.r_blocks_count);
	printf("%-26s %" PRIu64 "\n", "Free blocks:", in.free_blocks_count);
	printf("%-26s %u\n", "Free inodes:", in.free_inodes_count);
	printf("%-26s %u\n", "First block:", in.first_data_block);
	printf("%-26s %u\n", "Block size:", in.block_size);
	printf("%-26s %u\n", "Reserved GDT blocks:", in.reserved_gdt_blocks);
	printf("%-26s %u\n", "Blocks per group:", in.blocks_per_group);
	printf("%-26s %u\n", "Inodes per group:", in.inodes_per_group);
	printf("%-26s %u\n", "Group count:", in.groups);
	printf("%-26s %u\n", "GDT blocks:", in.desc_blocks);
	print_time_field("Filesystem created:", in.mkfs_time);
	print_time_field("Last mount time:", in.mtime);
	print_time_field("Last write time:", in.wtime);
	printf("%-26s %u\n", "Mount count:", in.mnt_count);
	printf("%-26s %d\n", "Maximum mount count:", in.max_mnt_count);
	print_time_field("Last checked:", in.lastcheck);
	printf("%-26s %u\n", "Check interval:", in.checkinterval);
	printf("%-26s %u\n", "Reserved blocks uid:", in.def_resuid);
	printf("%-26s %u\n", "Reserved blocks gid:", in.def_resgid);
	printf("%-26s %u\n", "First inode:", in.first_ino);
	printf("%-26s %u\n", "Inode size:", in.inode_size);
	if (in.inode_size > 128) {
		printf("%-26s %u\n", "Required extra isize:", in.min_extra_isize);
		printf("%-26s %u\n", "Desired extra isize:", in.want_extra_isize);
	}
	printf("%-26s %u\n", "Journal inode:", in.journal_inum);
	if (in.journal_features[0])
		printf("%-26s %s\n", "Journal features:", in.journal_features);
	if (in.journal_dev)
		printf("%-26s 0x%04x\n", "Journal device:", in.journal_dev);
	printf("%-26s %s\n", "Default directory hash:",
	       in.def_hash_version < 3 ? hash_names[in.def_hash_version] : "unknown");
	printf("%-26s %08x-%08x-%08x-%08x\n", "Directory hash seed:", in.hash_seed[0], in.hash_seed[1],
	       in.hash_seed[2], in.hash_seed[3]);
	printf("%-26s %s\n", "Directory hash sign:", in.unsigned_hash ? "unsigned" : "signed");
	printf("%-26s 0x%04x\n", "Default mount options:", in.default_mount_opts);
	printf("%-26s %s%s\n", "Data mode:", in.data_mode, in.read_only ? " (of a read-write mount)" : "");
	if (in.last_orphan)
		printf("%-26s %u\n", "First orphan inode:", in.last_orphan);
	printf("%-26s %s\n", "Needs recovery:", in.needs_recovery ? "yes (journal not replayed: mounted with noload)" : "no");
	if (in.unknown_ro_compat)
		printf("%-26s yes (read-only)\n", "Unknown ro_compat:");
	if (in.superblock_block != (in.block_size == 1024 ? 1u : 0u))
		printf("%-26s %u\n", "Superblock read from:", in.superblock_block);
	printf("%-26s %" PRIu64 " blocks, %" PRIu64 " free, %" PRIu64 " available, %" PRIu64
	       " inodes, %" PRIu64 " free\n",
	       "statfs:", sf.blocks, sf.blocks_free, sf.blocks_avail, sf.files, sf.files_free);

	printf("\n");
	int ret = 0;
	for (uint32_t g = 0; g < in.groups; g++) {
		struct nostall_group_info gi;
		rc = nostall_group_info(fs, g, &gi);
		if (rc) {
			fprintf(stderr, "nostall info: group %u: %s\n", g, nostall_errmsg(rc));
			ret = 1;
			continue;
		}
		printf("Group %u: blocks %" PRIu64 "-%" PRIu64 "%s\n", gi.group, gi.first_block, gi.last_block,
		       gi.has_super ? " [superblock + GDT backup]" : "");
		printf("  block bitmap %u, inode bitmap %u, inode table %u\n", gi.block_bitmap, gi.inode_bitmap,
		       gi.inode_table);
		printf("  %u free blocks, %u free inodes, %u directories%s\n", gi.free_blocks, gi.free_inodes,
		       gi.used_dirs, gi.flags ? "" : "");
	}
	return ret;
}

const struct cli_cmd cmd_info = {
	.name = "info", .usage = "info [-F] [--device SPEC] [-o OPTS] IMAGE", .flags = "F",
	.min_pos = 0, .max_pos = 0, .mount_flags = NOSTALL_MOUNT_RDONLY,
	.run = info_run,
};
