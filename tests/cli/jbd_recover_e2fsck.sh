#!/usr/bin/env bash
# nostall recover vs e2fsck: journals written by debugfs (jo/jw/jc) are
# replayed by `nostall recover` to exactly the image `e2fsck -y -E
# journal_only` makes (masking the superblock's write time and lifetime
# write counter), and `e2fsck -fn` is clean afterwards.
# Cases: a short transaction, a long one needing several descriptor blocks
# (with blocks that start with the JBD magic: escaping), revokes across
# transactions, a block rewritten after its revoke, an uncommitted tail
# (debugfs jw -c), and 1 KiB and 4 KiB blocks.
set -eu
: "${NOSTALL:?path to the nostall binary}"
command -v debugfs >/dev/null && command -v e2fsck >/dev/null && command -v mke2fs >/dev/null || {
	echo "SKIP: e2fsprogs (debugfs, e2fsck, mke2fs) not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Zero the fields e2fsck and nostall may set differently: s_wtime (0x30) and
# s_kbytes_written (0x178) of the primary superblock at byte 1024.
mask() {
	printf '\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x30)) conv=notrunc status=none
	printf '\0\0\0\0\0\0\0\0' | dd of="$1" bs=1 seek=$((1024 + 0x178)) conv=notrunc status=none
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
	mke2fs -q -F -t ext3 -b "$bs" -U 0e2c4f50-7d43-4a6e-9d1e-2a3b4c5d6e7f -E hash_seed=0e2c4f50-7d43-4a6e-9d1e-2a3b4c5d6e7f "$img" "$size" >/dev/null
	mkdata "$tmp/data" 400 "$bs"
	{
		echo "jo"
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
	cp "$img" "$tmp/ours.img"
	cp "$img" "$tmp/theirs.img"
	"$NOSTALL" recover "$tmp/ours.img" >"$tmp/ours.out" 2>&1 || { cat "$tmp/ours.out"; echo "FAIL $name: nostall recover"; exit 1; }
	rc=0
	e2fsck -y -E journal_only "$tmp/theirs.img" >"$tmp/theirs.out" 2>&1 || rc=$?
	[ "$rc" -le 1 ] || { cat "$tmp/theirs.out"; echo "FAIL $name: e2fsck exit $rc"; exit 1; }
	mask "$tmp/ours.img"
	mask "$tmp/theirs.img"
	if ! cmp -s "$tmp/ours.img" "$tmp/theirs.img"; then
		cat "$tmp/ours.out"
		cmp -l "$tmp/ours.img" "$tmp/theirs.img" | head -20
		echo "FAIL $name: images differ"
		exit 1
	fi
	e2fsck -fn "$tmp/ours.img" >"$tmp/fsck.out" 2>&1 || { cat "$tmp/fsck.out"; echo "FAIL $name: e2fsck -fn not clean"; exit 1; }
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
echo "all recover cases match e2fsck"
