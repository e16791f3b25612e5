#!/usr/bin/env bash
# nostall recover vs e2fsck: journals written by debugfs (jo/jw/jc) are
# replayed by `nostall recover` to exactly the image `e2fsck -y -E
# journal_only` makes (masking the superblock's write time and lifetime
# write counter), and `e2fsck -fn` is clean afterwards.
# Cases: a short transaction, a long one needing several descriptor blocks
# (with blocks that start with the JBD magic: escaping), revokes across
# transactions, a block rewritten after its revoke, an uncommitted tail
# (debugfs jw -c), and 1 KiB and 4 KiB blocks; then the same with jbd2's
# v3 checksums (metadata_csum image, debugfs jo -c: crc32c on the journal
# superblock, descriptor and revoke tails, tags and commit blocks), and
# v3 journals damaged after the fact: a logged block, a commit block, a
# descriptor block and a revoke block changed. nostall recover and e2fsck
# must leave the same image in each (the kernel's rules, jbd_recovery.c).
# Last, ext4 images as Debian's mke2fs makes them (64bit, flex_bg, extents,
# metadata_csum): their journals have 64-bit tags and v3 checksums, and the
# journal inode is extent-mapped.
set -eu
: "${NOSTALL:?path to the nostall binary}"
command -v debugfs >/dev/null && command -v e2fsck >/dev/null && command -v mke2fs >/dev/null || {
	echo "SKIP: e2fsprogs (debugfs, e2fsck, mke2fs) not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Zero the fields e2fsck and nostall may set differently: s_wtime (0x30) and
# s_kbytes_written (0x178) of the primary superblock at byte 1024.
# With metadata_csum the superblock checksum (0x3FC) covers them: masked
# too (e2fsck -fn afterwards checks ours).
mask() {
	printf '\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x30)) conv=notrunc status=none
	printf '\0\0\0\0\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x178)) conv=notrunc status=none
	printf '\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x3FC)) conv=notrunc status=none
}

# Flip one byte of journal block L (logical) at byte offset OFF.
jflip() { # img bs L off
	local p
	p=$(debugfs -R "bmap <8> $3" "$1" 2>/dev/null)
	python3 - "$1" $(( p * $2 + $4 )) <<'PY'
import sys
f, off = sys.argv[1], int(sys.argv[2])
with open(f, "r+b") as o:
    o.seek(off); b = o.read(1); o.seek(off); o.write(bytes([b[0] ^ 0x5a]))
PY
}

# data file: block k starts with the JBD magic when k % 7 == 3
mkdata() { # file nblocks bs
	python3 - "$@" <<'PY'
import os, sys, random
f, n, bs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = random.Random(42)
with open(f, "wb") as o:
    for k in range(n):
        b = bytearray(r.getrandbits(8) for _ in range(bs))
        if k % 7 == 3:
            b[0:4] = b"\xc0\x3b\x39\x98"
        o.write(b)
PY
}

check_case() { # name bs size base cmds...
	local name=$1 bs=$2 size=$3 base=$4
	shift 4
	local img=$tmp/$name.img
	rm -f "$img"
	mke2fs -q -F -t "${MKFS_TYPE:-ext3}" ${MKFS_OPTS:-} -b "$bs" -U 0e2c4f50-7d43-4a6e-9d1e-2a3b4c5d6e7f -E hash_seed=0e2c4f50-7d43-4a6e-9d1e-2a3b4c5d6e7f "$img" "$size" >/dev/null
	mkdata "$tmp/data" 400 "$bs"
	{
		echo "${JO:-jo}"
		for c in "$@"; do
			# block numbers are relative to base
			echo "$c" | python3 -c '
import sys, re
base = int(sys.argv[1])
def rel(m):
    return ",".join("-".join(str(base + int(x)) for x in part.split("-")) for part in m.group(2).split(","))
line = sys.stdin.read().strip()
line = re.sub(r"(-[br] )([0-9,\-]+)", lambda m: m.group(1) + rel(m), line)
print(line)' "$base"
		done
		echo "jc"
	} | sed "s#DATA#$tmp/data#" >"$tmp/cmds"
	debugfs -w -f "$tmp/cmds" "$img" >"$tmp/debugfs.out" 2>&1
	# DAMAGE="L OFF ...": flip bytes of the written journal (logical block L)
	if [ -n "${DAMAGE:-}" ]; then
		set -- $DAMAGE
		while [ $# -ge 2 ]; do jflip "$img" "$bs" "$1" "$2"; shift 2; done
	fi
	cp "$img" "$tmp/ours.img"
	cp "$img" "$tmp/theirs.img"
	rc=0
	"$NOSTALL" recover "$tmp/ours.img" >"$tmp/ours.out" 2>&1 || rc=$?
	if [ -z "${DAMAGE:-}" ] && [ "$rc" -ne 0 ]; then cat "$tmp/ours.out"; echo "FAIL $name: nostall recover"; exit 1; fi
	if [ -n "${WANT_ERR:-}" ] && ! grep -q "$WANT_ERR" "$tmp/ours.out"; then
		cat "$tmp/ours.out"; echo "FAIL $name: nostall recover did not say '$WANT_ERR'"; exit 1
	fi
	rc=0
	e2fsck -y -E journal_only "$tmp/theirs.img" >"$tmp/theirs.out" 2>&1 || rc=$?
	[ "$rc" -le 1 ] || [ -n "${DAMAGE:-}" ] || { cat "$tmp/theirs.out"; echo "FAIL $name: e2fsck exit $rc"; exit 1; }
	cp "$tmp/ours.img" "$tmp/ours-unmasked.img"
	mask "$tmp/ours.img"
	mask "$tmp/theirs.img"
	if ! cmp -s "$tmp/ours.img" "$tmp/theirs.img"; then
		cat "$tmp/ours.out"
		cmp -l "$tmp/ours.img" "$tmp/theirs.img" | head -20
		echo "FAIL $name: images differ"
		exit 1
	fi
	# a damaged journal may leave a filesystem that needs repair: the same one
	[ -n "${DAMAGE:-}" ] || e2fsck -fn "$tmp/ours-unmasked.img" >"$tmp/fsck.out" 2>&1 || { cat "$tmp/fsck.out"; echo "FAIL $name: e2fsck -fn not clean"; exit 1; }
	# the original must really have had something to replay (or nothing, for the -c only case)
	echo "ok $name: $(cat "$tmp/ours.out")"
}

for bs in 1024 4096; do
	if [ "$bs" = 1024 ]; then size=8M; base=3000; else size=64M; base=8000; fi
	check_case short$bs $bs $size $base "jw -b 0,1,2 DATA"
	check_case long$bs $bs $size $base "jw -b 10-309 DATA"
	check_case revokes$bs $bs $size $base \
		"jw -b 0-20 DATA" "jw -r 5,7,9 DATA" "jw -b 7 DATA" "jw -b 30-40 DATA" "jw -r 30 DATA"
	check_case uncommitted$bs $bs $size $base \
		"jw -b 0-3 DATA" "jw -b 50-60 DATA" "jw -b 2,70-75 -c DATA"
	check_case mixed$bs $bs $size $base \
		"jw -b 0-200 DATA" "jw -r 100-150 DATA" "jw -b 120-130 DATA" "jw -b 300-399 DATA"
done
# jbd2 v3 checksums (crc32c): the same cases on a metadata_csum image.
for bs in 1024 4096; do
	if [ "$bs" = 1024 ]; then size=8M; base=3000; else size=64M; base=8000; fi
	MKFS_OPTS="-O metadata_csum" JO="jo -c" check_case v3short$bs $bs $size $base "jw -b 0,1,2 DATA"
	MKFS_OPTS="-O metadata_csum" JO="jo -c" check_case v3long$bs $bs $size $base "jw -b 10-309 DATA"
	MKFS_OPTS="-O metadata_csum" JO="jo -c" check_case v3revokes$bs $bs $size $base \
		"jw -b 0-20 DATA" "jw -r 5,7,9 DATA" "jw -b 7 DATA" "jw -b 30-40 DATA" "jw -r 30 DATA"
	MKFS_OPTS="-O metadata_csum" JO="jo -c" check_case v3uncommitted$bs $bs $size $base \
		"jw -b 0-3 DATA" "jw -b 50-60 DATA" "jw -b 2,70-75 -c DATA"
done
# Damaged v3 journals (4 KiB blocks). Log layout of the three transactions
# below: 1 descriptor, 2 data, 3 data, 4 commit | 5 descriptor, 6-8 data,
# 9 commit | 10 revoke, 11 commit.
v3d() { # name damage want-message
	MKFS_OPTS="-O metadata_csum" JO="jo -c" DAMAGE="$2" WANT_ERR="$3" check_case "$1" 4096 64M 8000 \
		"jw -b 0,1 DATA" "jw -b 2-4 DATA" "jw -r 0 DATA"
}
v3d v3bad_data "7 100" "fails its checksum"          # a logged block of transaction 2
v3d v3bad_commit_last "11 200" ""                    # the last commit: torn
v3d v3bad_commit_mid "9 200" ""                      # a commit with one after it
v3d v3bad_desc "5 100" "journal is corrupt"          # a descriptor: the next commit decides
v3d v3bad_revoke "10 100" "journal is corrupt"       # a revoke block
# ext4 (64bit journal: 12-byte block numbers in 16-byte v3 tags, 8-byte
# revoke records; the journal inode is extent-mapped)
for bs in 1024 4096; do
	if [ "$bs" = 1024 ]; then size=32M; base=20000; else size=128M; base=20000; fi
	MKFS_TYPE=ext4 JO="jo -c" check_case e4short$bs $bs $size $base "jw -b 0,1,2 DATA"
	MKFS_TYPE=ext4 JO="jo -c" check_case e4long$bs $bs $size $base "jw -b 10-309 DATA"
	MKFS_TYPE=ext4 JO="jo -c" check_case e4revokes$bs $bs $size $base \
		"jw -b 0-20 DATA" "jw -r 5,7,9 DATA" "jw -b 7 DATA" "jw -b 30-40 DATA" "jw -r 30 DATA"
	MKFS_TYPE=ext4 JO="jo -c" check_case e4uncommitted$bs $bs $size $base \
		"jw -b 0-3 DATA" "jw -b 50-60 DATA" "jw -b 2,70-75 -c DATA"
done
grep -q "journal_64bit" <(dumpe2fs -h "$tmp/e4short4096.img" 2>/dev/null) ||
	{ echo "FAIL: the ext4 cases' journal has no 64bit feature"; exit 1; }
MKFS_TYPE=ext4 JO="jo -c" DAMAGE="7 100" WANT_ERR="fails its checksum" check_case e4bad_data 4096 128M 20000 \
	"jw -b 0,1 DATA" "jw -b 2-4 DATA" "jw -r 0 DATA"
echo "all recover cases match e2fsck"
