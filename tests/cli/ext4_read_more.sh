#!/usr/bin/env bash
# The rest of ext4's read side (issue 38 items 2 and 3; docs/ext4-csum.md,
# docs/ext4-extents.md), each judged by e2fsprogs and, as root, the kernel:
#  - huge_file: osd2.l_i_blocks_high (debugfs `sif blocks`, 48 bits) and
#    EXT4_HUGE_FILE_FL (i_blocks in filesystem blocks): `nostall stat`'s
#    Blocks equals debugfs's Blockcount (times block/512 with the flag) and
#    the kernel's `stat -c %b`;
#  - dir_nlink: a directory with i_links_count 1 ("more than 65000
#    subdirectories") stats with Links: 1 and lists, as in the kernel;
#  - extra_isize: Birth: is the inode's crtime, as debugfs and the kernel's
#    statx show it;
#  - metadata_csum on xattr blocks: a block changed behind its checksum is
#    refused with -EBADMSG naming it, and e2fsck agrees it is bad;
#  - uninit_bg: a directory entry pointing into a group's unused part of the
#    inode table (bg_itable_unused), where a valid-looking inode was written,
#    finds a free inode (-EUCLEAN), as e2fsck ("found in group 0's unused
#    inodes area"): the slot is never read.
set -eu
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
export PATH="$PATH:/sbin:/usr/sbin"
command -v mkfs.ext4 >/dev/null && command -v debugfs >/dev/null || {
	echo "FAIL: e2fsprogs not installed"; exit 1; }
tmp=$(mktemp -d /tmp/nostall-e4m.XXXXXX)
mnt=$tmp/m
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
root=0
[ "$(id -u)" -eq 0 ] && root=1 || echo "SKIP: the kernel's answers need root (loop mount)" >&2

# kstat IMG FMT PATH: the kernel's stat of PATH in a read-only loop mount.
kstat() {
	mkdir -p "$mnt"
	kmount -o loop,ro "$1" "$mnt"
	TZ=UTC stat -c "$2" "$mnt$3"
	umount "$mnt"
}
nst() { "$NOSTALL" stat "$1" "$2"; }

src=$tmp/src
mkdir -p "$src/d/e"
head -c 50000 /dev/urandom >"$src/f"
echo hi >"$src/small"
have_xattr=1
setfattr -n user.big -v "$(head -c 3000 /dev/zero | tr '\0' a)" "$src/small" 2>/dev/null || {
	have_xattr=0; echo "SKIP: $tmp does not take user xattrs" >&2; }
img=$tmp/e4.img
mkfs.ext4 -q -b 4096 -d "$src" "$img" 16M

# ---- huge_file ----
cp "$img" "$tmp/h.img"
debugfs -w -R "sif /f blocks 0x100000068" "$tmp/h.img" 2>/dev/null
want=$(debugfs -R "stat /f" "$tmp/h.img" 2>/dev/null | sed -n 's/.*Blockcount: \([0-9]*\).*/\1/p')
[ "$want" = 4294967400 ] || fail "debugfs did not set the high bits of i_blocks ($want)"
got=$(nst "$tmp/h.img" /f | sed -n 's/.*Blocks: \([0-9]*\).*/\1/p')
[ "$got" = "$want" ] || fail "l_i_blocks_high: nostall Blocks $got, debugfs $want"
[ $root = 1 ] && { k=$(kstat "$tmp/h.img" %b /f); [ "$got" = "$k" ] || fail "l_i_blocks_high: nostall $got, kernel $k"; }
debugfs -w -R "sif /f flags 0xC0000" "$tmp/h.img" 2>/dev/null # EXTENTS_FL | HUGE_FILE_FL
got=$(nst "$tmp/h.img" /f | sed -n 's/.*Blocks: \([0-9]*\).*/\1/p')
[ "$got" = $((want * 8)) ] || fail "HUGE_FILE_FL: nostall Blocks $got, want $((want * 8))"
[ $root = 1 ] && { k=$(kstat "$tmp/h.img" %b /f); [ "$got" = "$k" ] || fail "HUGE_FILE_FL: nostall $got, kernel $k"; }

# ---- dir_nlink ----
cp "$img" "$tmp/n.img"
debugfs -w -R "sif /d links_count 1" "$tmp/n.img" 2>/dev/null
nst "$tmp/n.img" /d >"$tmp/out" 2>"$tmp/err" || fail "dir_nlink: stat of a directory with 1 link: $(cat "$tmp/err")"
grep -q "Links: 1\b" "$tmp/out" || fail "dir_nlink: $(grep Links "$tmp/out")"
"$NOSTALL" ls "$tmp/n.img" /d | grep -qx e || fail "dir_nlink: the directory does not list"
[ $root = 1 ] && { k=$(kstat "$tmp/n.img" %h /d); [ "$k" = 1 ] || fail "dir_nlink: kernel says $k links"; }

# ---- crtime ----
crt=$(debugfs -R "stat /f" "$img" 2>/dev/null | sed -n 's/^ *crtime: 0x\([0-9a-f]*\):\([0-9a-f]*\).*/\1 \2/p')
[ -n "$crt" ] || fail "debugfs shows no crtime"
read -r hs hx <<<"$crt"
want=$(TZ=UTC date -d "@$((16#$hs))" '+%Y-%m-%d %H:%M:%S').$(printf %09d $(((16#$hx) >> 2)))
grep -q " Birth: $want +0000" <(TZ=UTC nst "$img" /f) || fail "Birth: $(TZ=UTC nst "$img" /f | grep Birth), debugfs $want"
if [ $root = 1 ]; then
	# a kernel-made file carries nanoseconds
	cp "$img" "$tmp/b.img"
	mkdir -p "$mnt"
	kmount -o loop "$tmp/b.img" "$mnt"
	touch "$mnt/new"
	umount "$mnt"
	k=$(kstat "$tmp/b.img" %w /new)
	grep -q " Birth: $k" <(TZ=UTC nst "$tmp/b.img" /new) || fail "Birth: $(TZ=UTC nst "$tmp/b.img" /new | grep Birth), kernel $k"
fi

# ---- xattr block checksum ----
if [ $have_xattr = 1 ]; then
	xb=$(debugfs -R "stat /small" "$img" 2>/dev/null | sed -n 's/.*File ACL: \([0-9]*\).*/\1/p')
	[ -n "$xb" ] && [ "$xb" != 0 ] || fail "no xattr block for /small ($xb)"
	"$NOSTALL" xattr -o ro "$img" get /small user.big >/dev/null 2>"$tmp/err" ||
		fail "an intact xattr block: $(cat "$tmp/err")"
	cp "$img" "$tmp/x.img"
	printf 'b' | dd of="$tmp/x.img" bs=1 seek=$((xb * 4096 + 4000)) conv=notrunc status=none
	if "$NOSTALL" xattr -o ro "$tmp/x.img" get /small user.big >/dev/null 2>"$tmp/err"; then
		fail "an xattr block changed behind its checksum was read"
	fi
	grep -q "xattr block $xb: checksum mismatch" "$tmp/err" || fail "xattr checksum message: $(cat "$tmp/err")"
	grep -qi "bad message" "$tmp/err" || fail "xattr checksum errno (EBADMSG): $(cat "$tmp/err")"
	e2fsck -fn "$tmp/x.img" >"$tmp/fsck" 2>&1 && fail "e2fsck finds the changed xattr block clean"
fi

# ---- an entry into the unused part of the inode table ----
u=$tmp/u.img
mkfs.ext4 -q -b 4096 -d "$src" "$u" 64M
ipg=$(dumpe2fs -h "$u" 2>/dev/null | sed -n 's/^Inodes per group: *//p')
unused=$(dumpe2fs "$u" 2>/dev/null | sed -n 's/.*, \([0-9]*\) unused inodes.*/\1/p' | head -1)
g=$((ipg - 10))
[ "$g" -gt $((ipg - unused)) ] || fail "inode $g is not in group 0's unused part ($unused unused of $ipg)"
debugfs -w -R "sif <$g> mode 0100644" "$u" 2>/dev/null
debugfs -w -R "sif <$g> links_count 1" "$u" 2>/dev/null
debugfs -w -R "link <$g> /ghost" "$u" 2>/dev/null
debugfs -R "stat <$g>" "$u" 2>/dev/null | grep -q "Type: regular" || fail "debugfs did not write inode $g"
e2fsck -fn "$u" 2>&1 | grep -q "inode $g found in group 0's unused inodes area" ||
	fail "e2fsck does not call inode $g unused"
if nst "$u" /ghost >/dev/null 2>"$tmp/err"; then
	fail "an inode in the unused part of the table was read from disk"
fi
grep -q "points at free inode $g" "$tmp/err" || fail "unused inode message: $(cat "$tmp/err")"
"$NOSTALL" cat "$u" /f | cmp -s - "$src/f" || fail "/f beside the hostile entry"

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "ext4_read_more: ok"
