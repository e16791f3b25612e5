#!/usr/bin/env bash
# Journals the kernel's jbd2 writes on ext4 images as Debian's mke2fs makes
# them (64bit, metadata_csum: 64-bit tags, v3 checksums, an extent-mapped
# journal inode) are recovered by nostall exactly as e2fsck recovers them
# (issue 38, "Done when", second bullet). Needs root (loop mount).
# For 4 KiB and 1 KiB blocks, and with -o data=writeback,journal_async_commit
# (the kernel then adds ASYNC_COMMIT to 64bit and v3; it refuses async
# commit with data=ordered): files are written and fsynced through a loop
# mount, a directory made, and the image copied after `sync` while still
# mounted (needs_recovery set, committed transactions in the log). Then:
#  - `nostall recover` and `e2fsck -E journal_only` of the copy are equal
#    byte for byte (masking the superblock's write time, write counter and
#    checksum), and e2fsck -fn is clean on ours;
#  - a read-only mount of another copy replays the log too (as the kernel's
#    does) and every file reads as the kernel wrote it.
set -eu
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (loop mount)" >&2; exit 77; }
export PATH="$PATH:/sbin:/usr/sbin"
for t in mkfs.ext4 e2fsck dumpe2fs python3; do command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }; done
tmp=$(mktemp -d /tmp/nostall-j2k.XXXXXX)
mnt=$tmp/m
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$mnt"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
mask() {
	printf '\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x30)) conv=notrunc status=none
	printf '\0\0\0\0\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x178)) conv=notrunc status=none
	printf '\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x3FC)) conv=notrunc status=none
}

for run in 4096 1024 4096-async; do
	bs=${run%-async}
	mopts=loop
	want_feat="journal_64bit.*journal_checksum_v3"
	if [ "$run" != "$bs" ]; then
		mopts=loop,data=writeback,journal_async_commit
		want_feat="journal_64bit journal_async_commit journal_checksum_v3"
	fi
	img=$tmp/k$bs.img
	mkfs.ext4 -q -F -b "$bs" "$img" 300M >/dev/null
	kmount -o "$mopts" "$img" "$mnt"
	mkdir -p "$tmp/want"
	for i in $(seq 1 30); do
		head -c $((i * 1000 + 7)) /dev/urandom >"$mnt/f$i"
		python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); os.fsync(fd)" "$mnt/f$i"
	done
	mkdir "$mnt/dir"
	echo made >"$mnt/dir/x"
	sync
	cp "$img" "$tmp/copy.img"
	cp -a "$mnt/." "$tmp/want/"
	umount "$mnt"
	dumpe2fs -h "$tmp/copy.img" 2>/dev/null | grep -q "^Filesystem features:.*needs_recovery" ||
		fail "[$run] the copy does not need recovery"
	dumpe2fs -h "$tmp/copy.img" 2>/dev/null | grep -q "^Journal features:.*$want_feat" ||
		fail "[$run] the journal's features are not '$want_feat'"
	cp "$tmp/copy.img" "$tmp/ours.img"
	cp "$tmp/copy.img" "$tmp/theirs.img"
	"$NOSTALL" recover "$tmp/ours.img" >"$tmp/ours.out" 2>&1 || { cat "$tmp/ours.out"; fail "[$run] nostall recover"; }
	grep -q "commit checksums verified" "$tmp/ours.out" || fail "[$run] no commit checksum verified: $(cat "$tmp/ours.out")"
	rc=0
	e2fsck -y -E journal_only "$tmp/theirs.img" >/dev/null 2>&1 || rc=$?
	[ "$rc" -le 1 ] || fail "[$run] e2fsck -E journal_only exit $rc"
	e2fsck -fn "$tmp/ours.img" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "[$run] e2fsck -fn after nostall recover"; }
	mask "$tmp/ours.img"
	mask "$tmp/theirs.img"
	cmp -s "$tmp/ours.img" "$tmp/theirs.img" || fail "[$run] nostall's recovery differs from e2fsck's: $(cmp -l "$tmp/ours.img" "$tmp/theirs.img" | head -3 | tr '\n' ';')"
	# the read-only mount replays as the kernel's does
	cp "$tmp/copy.img" "$tmp/ro.img"
	for i in 1 15 30; do
		"$NOSTALL" cat "$tmp/ro.img" "/f$i" | cmp -s - "$tmp/want/f$i" || fail "[$run] /f$i after a read-only mount's replay"
	done
	[ "$("$NOSTALL" cat "$tmp/ro.img" /dir/x)" = made ] || fail "[$run] /dir/x after the replay"
	dumpe2fs -h "$tmp/ro.img" 2>/dev/null | grep -q "needs_recovery" && fail "[$run] needs_recovery still set after the replay"
	rm -rf "$tmp/want"
	echo "ok [$run]: $(head -1 "$tmp/ours.out")"
done

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "jbd2_kernel_recover: ok"
