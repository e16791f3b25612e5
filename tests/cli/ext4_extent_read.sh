#!/usr/bin/env bash
# ext4 images read by nostall as the kernel and mke2fs wrote them (issue 38,
# first steps; docs/ext4-extents.md): extent-mapped files, 64bit group
# descriptors, flex_bg placement.
#  - mkfs.ext4 -d fills images from a directory (small, empty, 1 MiB, sparse
#    files, a symlink, a subdirectory), with Debian's default features
#    (64bit, flex_bg, metadata_csum, ...) and without 64bit and flex_bg, at
#    1 KiB and 4 KiB blocks; every file reads back byte for byte;
#  - as root, the kernel writes a file of 3,000 separate extents (an index
#    tree of depth 1 and more), a preallocated file (unwritten extents, read
#    as zeros) and one partly written after fallocate; nostall reads each as
#    the kernel does;
#  - the image is writable since issue 39: a write into an extent file
#    lands, reads back, and the image stays clean (e2fsck -fn);
#  - an htree directory the kernel made (400 names) lists and looks up
#    through its index;
#  - metadata_csum is verified: an inode changed behind its checksum reads
#    as -EBADMSG naming it (the kernel's EFSBADCRC), and e2fsck agrees it is
#    bad; a superblock whose checksum fails does not mount; a group
#    descriptor whose checksum fails is reported and the read-only mount
#    goes on (the kernel's ext4_check_descriptors).
set -eu
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
export PATH="$PATH:/sbin:/usr/sbin"
command -v mkfs.ext4 >/dev/null && command -v e2fsck >/dev/null || {
	echo "FAIL: e2fsprogs not installed"; exit 1; }
tmp=$(mktemp -d /tmp/nostall-e4r.XXXXXX)
mnt=$tmp/m
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

src=$tmp/src
mkdir -p "$src/d/e"
head -c 1048577 /dev/urandom >"$src/big"
echo hello >"$src/small"
: >"$src/empty"
ln -s small "$src/link"
truncate -s 10M "$src/sparse"
dd if=/dev/urandom of="$src/sparse" bs=4k seek=1000 count=3 conv=notrunc status=none
head -c 70000 /dev/urandom >"$src/d/e/f"

for feat in default "^64bit,^flex_bg"; do
	for bs in 1024 4096; do
		name="$feat/$bs"
		img=$tmp/e4.img
		rm -f "$img"
		if [ "$feat" = default ]; then
			mkfs.ext4 -q -F -b "$bs" -d "$src" "$img" 300M
		else
			mkfs.ext4 -q -F -b "$bs" -O "$feat" -d "$src" "$img" 300M
		fi
		dumpe2fs -h "$img" 2>/dev/null | grep -q "^Filesystem features:.* extent" || fail "$name: mkfs.ext4 made no extent image"
		for f in big small empty sparse d/e/f; do
			"$NOSTALL" cat "$img" "/$f" >"$tmp/out" 2>"$tmp/err" || { fail "$name: cat /$f: $(cat "$tmp/err")"; continue; }
			cmp -s "$tmp/out" "$src/$f" || fail "$name: /$f differs from what mkfs.ext4 -d wrote"
		done
		"$NOSTALL" ls "$img" /d/e | grep -qx f || fail "$name: ls /d/e"
		[ "$("$NOSTALL" stat "$img" /link 2>/dev/null | grep -c "symbolic link")" -ge 1 ] || fail "$name: stat /link is not a symlink"
		# the descriptors as dumpe2fs reads them: free blocks and inodes
		want=$(dumpe2fs -h "$img" 2>/dev/null | awk -F: '/^Free blocks:/ { gsub(/ /, "", $2); print $2 }')
		got=$("$NOSTALL" info "$img" | awk -F: '/^Free blocks:/ { gsub(/ /, "", $2); print $2 }')
		[ "$want" = "$got" ] || fail "$name: free blocks $got, dumpe2fs says $want"
		# the journal's features, named as dumpe2fs names them
		want=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Journal features: *//p')
		got=$("$NOSTALL" info "$img" | sed -n 's/^Journal features: *//p')
		[ -n "$want" ] && [ "$want" = "$got" ] || fail "$name: journal features '$got', dumpe2fs says '$want'"
		# writable (issue 39): a write into an extent file lands and
		# reads back (tests/cli/ext4_write_extent.sh covers the rest)
		printf 'x' | "$NOSTALL" write "$img" /small 0 >/dev/null 2>"$tmp/err" ||
			fail "$name: a write into an extent file failed: $(cat "$tmp/err")"
		[ "$("$NOSTALL" cat "$img" /small 2>/dev/null | head -c 1)" = x ] || fail "$name: the write did not read back"
		e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "$name: e2fsck -fn after reading"; }
	done
done

# ---- metadata_csum ----
flipbyte() { # file offset
	python3 - "$1" "$2" <<'PY'
import sys
f, off = sys.argv[1], int(sys.argv[2])
with open(f, "r+b") as o:
    o.seek(off); b = o.read(1); o.seek(off); o.write(bytes([b[0] ^ 0x01]))
PY
}
img=$tmp/c.img
mkfs.ext4 -q -F -b 4096 -d "$src" "$img" 300M
loc=$(debugfs -R "imap /big" "$img" 2>/dev/null | awk '/located at block/ { gsub(",", "", $4); print $4, $6 }')
set -- $loc
[ $# -eq 2 ] || fail "debugfs imap /big: '$loc'"
ino=$(debugfs -R "stat /big" "$img" 2>/dev/null | awk '/^Inode:/ { print $2; exit }')
cp "$img" "$tmp/ci.img"
flipbyte "$tmp/ci.img" $(( $1 * 4096 + $2 + 0x2 )) # i_uid
if "$NOSTALL" cat "$tmp/ci.img" /big >/dev/null 2>"$tmp/err"; then
	fail "an inode changed behind its checksum was read"
fi
grep -q "inode $ino: checksum mismatch" "$tmp/err" || fail "inode checksum message: $(cat "$tmp/err")"
"$NOSTALL" cat "$tmp/ci.img" /small >/dev/null 2>&1 || fail "another file of that image no longer reads"
e2fsck -fn "$tmp/ci.img" >"$tmp/fsck" 2>&1 && fail "e2fsck finds the changed inode clean"
grep -qi "checksum" "$tmp/fsck" || fail "e2fsck does not name a checksum: $(tail -3 "$tmp/fsck")"
cp "$img" "$tmp/cs.img"
flipbyte "$tmp/cs.img" $(( 1024 + 0x78 )) # s_volume_name
"$NOSTALL" ls "$tmp/cs.img" / >/dev/null 2>"$tmp/err" && fail "a superblock failing its checksum mounted"
grep -q "superblock checksum mismatch" "$tmp/err" || fail "superblock checksum message: $(cat "$tmp/err")"
cp "$img" "$tmp/cg.img"
flipbyte "$tmp/cg.img" $(( 4096 + 0x0C )) # group 0's free blocks count
"$NOSTALL" cat "$tmp/cg.img" /small >"$tmp/out" 2>"$tmp/err" || fail "a descriptor checksum failure stopped a read-only mount: $(cat "$tmp/err")"
grep -q "group 0: descriptor checksum mismatch" "$tmp/err" || fail "descriptor checksum warning: $(cat "$tmp/err")"

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: kernel-written extent trees need root (loop mount)" >&2
else
	img2=$tmp/k.img
	mkfs.ext4 -q -F "$img2" 300M
	mkdir -p "$mnt"
	kmount -o loop "$img2" "$mnt"
	# every other block: 3,000 extents, more than the inode's four
	python3 - "$mnt/frag" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
for i in range(3000):
    os.pwrite(fd, bytes([(i * 7 + k) & 0xff for k in range(4096)]), i * 8192)
    if i % 100 == 0:
        os.fsync(fd)
os.close(fd)
PY
	mkdir "$mnt/many"
	for i in $(seq 1 400); do echo "$i" >"$mnt/many/file_with_a_long_name_$i"; done
	fallocate -l 1M "$mnt/prealloc"
	fallocate -l 1M "$mnt/partial"
	printf 'written' | dd of="$mnt/partial" bs=1 seek=300000 conv=notrunc status=none
	sync
	for f in frag prealloc partial; do cp "$mnt/$f" "$tmp/k.$f"; done
	umount "$mnt"
	debugfs -R "ex /frag" "$img2" 2>/dev/null | awk 'NR > 1 && $1 ~ /^[0-9]+\/$/ { if ($1 + 0 > d) d = $1 + 0 } END { exit !(d >= 1) }' ||
		fail "the kernel's /frag has no index level (want a tree of depth >= 1)"
	for f in frag prealloc partial; do
		"$NOSTALL" cat "$img2" "/$f" >"$tmp/out" 2>"$tmp/err" || { fail "cat /$f: $(cat "$tmp/err")"; continue; }
		cmp -s "$tmp/out" "$tmp/k.$f" || fail "/$f differs from what the kernel wrote"
	done
	e2fsck -fn "$img2" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "e2fsck -fn of the kernel's image"; }
	# an htree directory (dx_tail checksums; the index's limit leaves room
	# for the tail): lookups go through the index, and every name lists
	debugfs -R "htree /many" "$img2" 2>/dev/null | grep -q "Root node dump" || fail "the kernel's /many is not an htree"
	[ "$("$NOSTALL" ls "$img2" /many | wc -l)" = 400 ] || fail "ls /many does not list 400 names"
	for i in 1 77 400; do
		[ "$("$NOSTALL" cat "$img2" "/many/file_with_a_long_name_$i")" = "$i" ] || fail "cat /many/file_with_a_long_name_$i"
	done
	leaf=$(debugfs -R "bmap /many 1" "$img2" 2>/dev/null)
	cp "$img2" "$tmp/kd.img"
	flipbyte "$tmp/kd.img" $(( leaf * $(dumpe2fs -h "$img2" 2>/dev/null | awk -F: '/^Block size:/ { print $2 + 0 }') + 40 ))
	if "$NOSTALL" ls "$tmp/kd.img" /many >/dev/null 2>"$tmp/err"; then
		fail "a directory block changed behind its checksum was listed"
	fi
	grep -q "directory inode [0-9]*: block 1: checksum mismatch" "$tmp/err" || fail "directory checksum message: $(cat "$tmp/err")"
	# an extent tree block changed behind its checksum (metadata_csum tail)
	kbs=$(dumpe2fs -h "$img2" 2>/dev/null | awk -F: '/^Block size:/ { gsub(/ /, "", $2); print $2 }')
	etb=$(debugfs -R "stat /frag" "$img2" 2>/dev/null | grep -o "(ETB[0-9]*):[0-9]*" | tail -1 | cut -d: -f2)
	if [ -n "$etb" ] && [ -n "$kbs" ]; then
		cp "$img2" "$tmp/ke.img"
		flipbyte "$tmp/ke.img" $(( etb * kbs + 20 ))
		if "$NOSTALL" cat "$tmp/ke.img" /frag >/dev/null 2>"$tmp/err"; then
			fail "a changed extent tree block was read"
		fi
		grep -q "extent tree block $etb: checksum mismatch" "$tmp/err" || fail "extent block checksum message: $(cat "$tmp/err")"
	else
		fail "no extent tree block found for /frag (bs '$kbs', etb '$etb')"
	fi
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "ext4_extent_read: ok"
