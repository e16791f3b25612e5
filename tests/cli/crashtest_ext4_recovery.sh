#!/usr/bin/env bash
# nostall-test: release-only (the crashtest tool drives the recovery; its code runs under ASan in test_jbd_crash and test_fs_crash)
# crashtest --fs ext4 (metadata_csum), CI-sized, for two causes of
# violations fixed together (docs/ext4-extents.md "Remove", docs/ext4-csum.md):
#  1. the recovery workload at 1 KiB blocks (the superblock is a whole block
#     of two sectors): a crash during recovery never leaves a superblock
#     whose checksum fails (its block is written FUA by the replay, the
#     checkpoint and recovery's flag update): 0 violations;
#  2. fsx at 1 KiB and 4 KiB blocks: the orphan truncate keeps the extent
#     tree's depth as the kernel and e2fsck do (no move back into the
#     inode), so the orphan cleanup frees what e2fsck frees: 0 violations.
# Seeds are fixed.
set -u
: "${NOSTALL:?path to the nostall binary}"
for t in e2fsck mke2fs; do
	command -v "$t" >/dev/null || { echo "SKIP: e2fsprogs ($t) not installed" >&2; exit 77; }
done
fail=0
run() { # what, crashtest args...
	local what=$1 out rc
	shift
	out=$("$NOSTALL" crashtest --fs ext4 --quiet --jobs 2 "$@" 2>&1)
	rc=$?
	[ "$rc" = 0 ] || { echo "FAIL: $what: exit $rc" >&2; echo "$out" | tail -8 >&2; fail=1; }
}
run "recovery, guarded, 1 KiB" --mode guarded --workload recovery --block-size 1024 --states 400 --seed 1
run "recovery, ordered, 1 KiB" --mode ordered --workload recovery --block-size 1024 --states 300 --seed 3
run "fsx, guarded" --mode guarded --workload fsx --states 400 --seed 1
exit $fail
