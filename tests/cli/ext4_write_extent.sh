#!/usr/bin/env bash
# ext4 extent files written by nostall (issue 39, item 1; docs/ext4-extents.md,
# "Writing"), on mkfs.ext4 images with extent and flex_bg (without the
# features other parts of issue 39 write: metadata_csum, 64bit, huge_file,
# dir_nlink, extra_isize), at 1 KiB and 4 KiB blocks:
#  - sequential, random-offset, sparse and large files (nostall put, write),
#    truncated down and up, deleted; many small files; a directory of 3,000
#    entries (htree, its blocks extent-mapped); a fast and a slow symlink;
#    with FUSE, 4,000 separate blocks in random order (a tree of depth 2 at
#    1 KiB blocks) truncated in steps back to an empty root;
#  - after each step e2fsck -fn is clean and, as root, the kernel (loop
#    mount, read-only) reads the same tree as a host mirror of it (diff -r);
#  - debugfs lists new files as extent-mapped (Flags 0x80000), the fast
#    symlink inline (no flag), the sequential file in few extents.
# Indirect-mapped files are covered by the ext3 tests (fs_write.sh, ...).
set -eu
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
export PATH="$PATH:/sbin:/usr/sbin"
command -v mkfs.ext4 >/dev/null && command -v e2fsck >/dev/null && command -v debugfs >/dev/null || {
	echo "FAIL: e2fsprogs not installed"; exit 1; }
tmp=$(mktemp -d /tmp/nostall-e4w.XXXXXX)
mnt=$tmp/m
mkdir -p "$mnt" "$tmp/f"
cleanup() {
	mountpoint -q "$tmp/f" 2>/dev/null && "$NOSTALL" umount "$tmp/f"
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
kernel=0
[ "$(id -u)" = 0 ] && kernel=1
[ $kernel = 1 ] || echo "SKIP: not root: the kernel's reading is not compared" >&2

img=$tmp/e4.img
mir=$tmp/mirror
ns() { "$NOSTALL" "$@" 2>"$tmp/err" || fail "$name: nostall $*: $(cat "$tmp/err")"; }

# e2fsck clean; the kernel reads the mirror's tree
check() {
	local step=$1
	e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || { sed 's/^/  /' "$tmp/fsck" | head -30; fail "$name: $step: e2fsck -fn"; }
	[ $kernel = 1 ] || return 0
	if ! kmount -o loop,ro "$img" "$mnt"; then
		fail "$name: $step: kernel mount"
		return
	fi
	diff -r --no-dereference -x lost+found "$mir" "$mnt" >"$tmp/diff" 2>&1 ||
		{ head -10 "$tmp/diff"; fail "$name: $step: the kernel reads another tree than the mirror"; }
	umount "$mnt"
}

flags_of() { debugfs -R "stat $1" "$img" 2>/dev/null | sed -n 's/.*Flags: \(0x[0-9a-f]*\).*/\1/p' | head -1; }
# leaf extents of a file in debugfs's listing
extents_of() { debugfs -R "ex $1" "$img" 2>/dev/null | awk 'NR > 1 { split($0, f, "/"); d = f[1] + 0; m = f[2] + 0; if (d == m) n++ } END { print n + 0 }'; }

for bs in 1024 4096; do
	name="${bs}b"
	rm -rf "$img" "$mir"
	mkdir -p "$mir"
	mkfs.ext4 -q -F -b "$bs" -O ^metadata_csum,^64bit,^huge_file,^dir_nlink,^extra_isize \
		-E lazy_itable_init=0 "$img" 256M >/dev/null
	# ---- sequential and large ----
	head -c 3000000 /dev/urandom >"$mir/seq"
	head -c 40000000 /dev/urandom >"$mir/large"
	ns put "$img" "$mir/seq" /seq
	ns put "$img" "$mir/large" /large
	[ "$(flags_of /seq)" = 0x80000 ] || fail "$name: /seq flags $(flags_of /seq), not extent-mapped"
	n=$(extents_of /large)
	max=$((40000000 / bs / 32768 + 2 + 40000000 / bs / (bs * 8)))
	[ "$n" -ge 1 ] && [ "$n" -le "$max" ] || fail "$name: /large in $n extents (more than $max)"
	check sequential
	# ---- random offsets into an existing file and past its end ----
	cp "$mir/seq" "$mir/rnd"
	ns put "$img" "$mir/rnd" /rnd
	for i in $(seq 1 12); do
		off=$(( (RANDOM * 32768 + RANDOM) % 4000000 ))
		len=$(( RANDOM % 20000 + 1 ))
		head -c "$len" /dev/urandom >"$tmp/chunk"
		dd if="$tmp/chunk" of="$mir/rnd" bs=1 seek="$off" conv=notrunc status=none
		ns write "$img" /rnd "$off" <"$tmp/chunk"
	done
	check random
	# ---- sparse: blocks far apart, holes between ----
	: >"$mir/sparse"
	for off in 0 5000000 70000000 123456789; do
		head -c 5000 /dev/urandom >"$tmp/chunk"
		dd if="$tmp/chunk" of="$mir/sparse" bs=1 seek="$off" conv=notrunc status=none
	done
	ns put "$img" "$mir/sparse" /sparse
	# also written piece by piece into an empty file
	: >"$mir/sparse2"
	ns touch "$img" /sparse2
	for off in 123456789 0 70000000 5000000 4096; do
		head -c 3000 /dev/urandom >"$tmp/chunk"
		dd if="$tmp/chunk" of="$mir/sparse2" bs=1 seek="$off" conv=notrunc status=none
		ns write "$img" /sparse2 "$off" <"$tmp/chunk"
	done
	check sparse
	# ---- truncate down (inside an extent, to 0) and up ----
	for f_s in "large 12345678" "rnd 1000" "sparse 70001000" "seq 0" "large 30000000" "sparse2 5001000"; do
		set -- $f_s
		truncate -s "$2" "$mir/$1"
		ns truncate "$img" "/$1" "$2"
	done
	check "truncate down and up"
	# ---- delete ----
	rm "$mir/large" "$mir/sparse"
	ns rm "$img" /large /sparse
	check delete
	# ---- many small files; a directory of 3,000 entries ----
	mkdir -p "$mir/small" "$mir/big"
	for i in $(seq 1 100); do head -c $((i * 37)) /dev/urandom >"$mir/small/f$i"; done
	for i in $(seq 1 3000); do : >"$mir/big/entry-with-a-longer-name-$i"; done
	ns put -r "$img" "$mir/small" /small
	ns put -r "$img" "$mir/big" /big
	[ "$(flags_of /big)" = 0x81000 ] || [ "$(flags_of /big)" = 0x80000 ] ||
		fail "$name: /big flags $(flags_of /big), not extent-mapped"
	debugfs -R "htree /big" "$img" 2>/dev/null | grep -q "Number of entries" ||
		fail "$name: /big has no htree index"
	check "small files and a big directory"
	# ---- symlinks: fast (inline) and slow (one extent-mapped block) ----
	long=$(printf 'x%.0s' $(seq 1 100))
	ln -s short "$mir/fast"
	ln -s "$long" "$mir/slow"
	ns ln -s "$img" short /fast
	ns ln -s "$img" "$long" /slow
	[ "$(flags_of /fast)" = 0x0 ] || fail "$name: fast symlink flags $(flags_of /fast)"
	[ "$(flags_of /slow)" = 0x80000 ] || fail "$name: slow symlink flags $(flags_of /slow)"
	check symlinks
	# ---- removing half the big directory's entries, the small files ----
	for i in $(seq 1 2 3000); do echo "/big/entry-with-a-longer-name-$i"; done >"$tmp/list"
	xargs -a "$tmp/list" "$NOSTALL" rm "$img" 2>"$tmp/err" || fail "$name: rm in /big: $(cat "$tmp/err")"
	for i in $(seq 1 2 3000); do rm "$mir/big/entry-with-a-longer-name-$i"; done
	rm -r "$mir/small"
	ns rm -r "$img" /small
	check "removals"
	# ---- a deep tree: 4,000 separate blocks in random order through the
	# FUSE mount (depth 2 at 1 KiB blocks), then truncated in steps ----
	if [ -c /dev/fuse ] && "$NOSTALL" mount "$img" "$tmp/f" 2>"$tmp/err"; then
		python3 - "$tmp/f/deep" "$mir/deep" <<'PY'
import os, random, sys
random.seed(39)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
ref = os.open(sys.argv[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
idx = list(range(4000))
random.shuffle(idx)
for i in idx:
    b = os.urandom(1024)
    os.pwrite(fd, b, i * 2048)
    os.pwrite(ref, b, i * 2048)
os.close(fd)
os.close(ref)
PY
		"$NOSTALL" umount "$tmp/f" || fail "$name: nostall umount"
		d=$(debugfs -R "ex /deep" "$img" 2>/dev/null | awk 'NR == 2 { split($0, f, "/"); print f[2] + 0 }')
		[ "$bs" != 1024 ] || [ "${d:-0}" -ge 2 ] || fail "$name: /deep has depth ${d:-?}, not 2"
		check "deep tree"
		for sz in 3000000 1000 0; do
			truncate -s "$sz" "$mir/deep"
			ns truncate "$img" /deep "$sz"
			check "deep tree truncated to $sz"
		done
		d=$(debugfs -R "ex /deep" "$img" 2>/dev/null | awk 'NR == 2 { split($0, f, "/"); print f[2] + 0 }')
		[ -z "$d" ] || [ "$d" = 0 ] || fail "$name: /deep emptied keeps depth $d"
	else
		echo "SKIP: $name: no FUSE mount for the deep tree: $(cat "$tmp/err" 2>/dev/null)" >&2
	fi
	# nostall reads what it wrote
	for f in seq rnd sparse2; do
		"$NOSTALL" cat "$img" "/$f" | cmp -s - "$mir/$f" || fail "$name: nostall cat /$f differs"
	done
done
[ "$fails" = 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "ext4_write_extent: ok"
