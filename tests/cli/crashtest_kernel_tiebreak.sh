#!/usr/bin/env bash
# crashtest's kernel tie-breaker (docs/crashtest.md "The kernel as
# tie-breaker"): a kept crash state (tests/crash-images/orphan-e2fsck-split,
# data=guarded ext4 at 1 KiB blocks, fsstress seed 7) whose orphan cleanup
# e2fsck 1.47 does differently (its block-by-block truncate splits an extent
# into a new leaf it keeps: i_blocks one block higher). Without the
# tie-breaker (NOSTALL_CRASH_NO_KERNEL=1) it is a recovery_mismatch; with it
# (root, loop mounts) the kernel's recovery of the same state equals
# nostall's and the state checks clean as e2fsck_differs_kernel_agrees.
set -u
: "${NOSTALL:?path to the nostall binary}"
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export PATH="$PATH:/sbin:/usr/sbin"
cd "$(dirname "$0")/../.."
for t in e2fsck zstd; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed" >&2; exit 77; }
done
tmp=$(mktemp -d /tmp/nostall-tiebreak-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
src=tests/crash-images/orphan-e2fsck-split
cp "$src/job.txt" "$src/state.txt" "$tmp/" && zstd -q -d "$src/rec.log.zst" -o "$tmp/rec.log" ||
	{ echo "FAIL: unpacking $src"; exit 1; }

# 1. without the kernel: e2fsck's difference stays a violation
NOSTALL_CRASH_NO_KERNEL=1 "$NOSTALL" crashtest --replay "$tmp" >"$tmp/no-kernel.out" 2>&1
rc=$?
if [ "$rc" -eq 0 ] && grep -q "no violation" "$tmp/no-kernel.out"; then
	# an e2fsck that cleans this orphan like the kernel: nothing to break
	echo "SKIP: this e2fsck ($(e2fsck -V 2>&1 | head -1)) agrees with nostall here" >&2
	exit 77
fi
[ "$rc" -eq 1 ] && grep -q "recovery_mismatch: after orphan cleanup" "$tmp/no-kernel.out" &&
	! grep -q "e2fsck_differs_kernel_agrees" "$tmp/no-kernel.out" ||
	{ echo "FAIL: NOSTALL_CRASH_NO_KERNEL=1: expected recovery_mismatch (exit $rc)"; cat "$tmp/no-kernel.out"; exit 1; }
echo "ok: without the kernel, recovery_mismatch after orphan cleanup"

# 2. with the kernel (root and loop mounts only)
kernel=1
[ "$(id -u)" -eq 0 ] && [ -e /dev/loop-control ] || kernel=0
[ "$kernel" = 0 ] || grep -qw ext4 /proc/filesystems || modprobe -q ext4 2>/dev/null || kernel=0
if [ "$kernel" = 0 ]; then
	echo "SKIP (part 2): no kernel loop mount of ext4 here (not root, no loop device or no ext4)" >&2
	exit 0
fi
"$NOSTALL" crashtest --replay "$tmp" >"$tmp/kernel.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q "e2fsck_differs_kernel_agrees.*after orphan cleanup" "$tmp/kernel.out" &&
	grep -q "no violation" "$tmp/kernel.out" && ! grep -q "recovery_mismatch" "$tmp/kernel.out" ||
	{ echo "FAIL: with the kernel: expected e2fsck_differs_kernel_agrees (exit $rc)"; cat "$tmp/kernel.out"; exit 1; }
echo "ok: the kernel agrees with nostall: e2fsck_differs_kernel_agrees, no violation"
