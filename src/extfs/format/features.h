/* The on-disk feature bits (superblock s_feature_compat / _incompat /
 * _ro_compat) as one table: each known feature with e2fsprogs' name, its
 * bit, what nostall does with a filesystem that has it, and whether nostall
 * mkfs sets it. Mount (super.c), `nostall info` (api_info.c), mkfs and the
 * table in docs/ext3-format.md ("Features", checked by test_features) all
 * read it. No I/O, no locks, no allocation.
 *
 * Bits not in the table follow the rule of their kind, as Linux: an unknown
 * compat bit is ignored, an unknown incompat bit refuses the mount, an
 * unknown ro_compat bit allows read-only mounts only. */
#ifndef NOSTALL_EXT3_FEATURES_H
#define NOSTALL_EXT3_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ext3_feature_kind {
	EXT3_FEATURE_KIND_COMPAT = 0,
	EXT3_FEATURE_KIND_INCOMPAT = 1,
	EXT3_FEATURE_KIND_RO_COMPAT = 2,
};

/* What nostall does with a filesystem that has the feature. */
enum ext3_feature_support {
	EXT3_FEATURE_RW,      /* understood: read-write */
	EXT3_FEATURE_IGNORED, /* compat, not used by nostall: read-write, the feature untouched */
	EXT3_FEATURE_RO,      /* read-only mounts only: a ro_compat feature not understood,
			       * or an incompat one read but not written yet (extent) */
	EXT3_FEATURE_REFUSE,  /* not understood: the mount is refused */
};

struct ext3_feature {
	const char *name; /* e2fsprogs' (lib/e2p), as dumpe2fs prints it */
	uint8_t kind;     /* enum ext3_feature_kind */
	uint8_t support;  /* enum ext3_feature_support */
	bool mkfs;        /* nostall mkfs sets it */
	uint32_t mask;    /* its bit */
};

/* The table, by kind then bit: entry i (0..), NULL past the last. */
const struct ext3_feature *ext3_feature_at(size_t i);
/* The entry of (kind, one bit), NULL when the bit has none. */
const struct ext3_feature *ext3_feature_find(int kind, uint32_t bit);
/* Its name, NULL when none; kind 0 compat, 1 incompat, 2 ro_compat. */
const char *ext3_feature_name(int kind, uint32_t bit);
/* What nostall does with (kind, one bit), known or not (the rule of the
 * kind for a bit the table lacks). */
enum ext3_feature_support ext3_feature_support_of(int kind, uint32_t bit);
/* The bits of `set` (of kind) whose support is `s`. */
uint32_t ext3_features_with(int kind, uint32_t set, enum ext3_feature_support s);
/* The bits of kind that nostall mkfs sets. */
uint32_t ext3_features_mkfs(int kind);
/* "has_journal ext_attr ..." for the three masks, in table order (compat,
 * incompat, ro_compat by bit); a bit without a name as e2fsprogs prints it
 * (FEATURE_C12 / FEATURE_I31 / FEATURE_R14). Truncated to fit len. */
void ext3_features_format(uint32_t compat, uint32_t incompat, uint32_t ro_compat, char *out,
			  size_t len);
/* Support's name for reports and the docs: "read-write", "ignored",
 * "read-only", "refused". */
const char *ext3_feature_support_name(enum ext3_feature_support s);
/* Kind's name: "compat", "incompat", "ro_compat". */
const char *ext3_feature_kind_name(int kind);

#endif
