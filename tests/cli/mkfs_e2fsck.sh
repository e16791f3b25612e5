#!/usr/bin/env bash
# nostall mkfs judged by others: e2fsck -fn must be clean, dumpe2fs -h must show
# the ext3 features and a JBD v2 journal with revoke, and (as root, when loop
# mounts work) the kernel must mount the images as ext3, take writes, and leave
# them e2fsck-clean. Also: byte reproducibility with -U/-T, mkfs over an old
# non-sparse image, and bad-input handling.
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in e2fsck dumpe2fs debugfs; do
	if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/sbin/$tool" ] && [ ! -x "/usr/sbin/$tool" ]; then
		echo "SKIP: $tool not installed (e2fsprogs)" >&2
		exit 77
	fi
done
export PATH="$PATH:/sbin:/usr/sbin"

tmp=$(mktemp -d /tmp/nostall-mkfs.XXXXXX)
mnt="$tmp/mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

UUID=01234567-89ab-cdef-0123-456789abcdef
T=1700000000
FEATURES="has_journal ext_attr resize_inode dir_index filetype sparse_super large_file"

fsck_clean() { # image what
	local out rc
	out=$(e2fsck -fn "$1" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "e2fsck -fn $2: exit $rc"
		printf '%s\n' "$out" | head -20
		return 1
	fi
	return 0
}

check_dumpe2fs() { # image what bs isz
	local h f
	h=$(dumpe2fs -h "$1" 2>/dev/null)
	f=$(printf '%s\n' "$h" | sed -n 's/^Filesystem features: *//p')
	for feat in $FEATURES; do
		case " $f " in *" $feat "*) ;; *) fail "$2: feature $feat missing (have: $f)" ;; esac
	done
	for bad in extent flex_bg uninit_bg 64bit huge_file metadata_csum needs_recovery; do
		case " $f " in *" $bad "*) fail "$2: unexpected feature $bad" ;; esac
	done
	printf '%s\n' "$h" | grep -q "^Block size:[[:space:]]*$3\$" || fail "$2: block size not $3"
	printf '%s\n' "$h" | grep -q "^Inode size:[[:space:]]*$4\$" || fail "$2: inode size not $4"
	printf '%s\n' "$h" | grep -q "^Journal features:[[:space:]]*.*journal_incompat_revoke" ||
		fail "$2: journal superblock lacks revoke"
	printf '%s\n' "$h" | grep -q "^Journal inode:[[:space:]]*8\$" || fail "$2: journal inode not 8"
	printf '%s\n' "$h" | grep -q "^Journal start:[[:space:]]*0\$" || fail "$2: journal not empty"
	printf '%s\n' "$h" | grep -q "^Default directory hash:[[:space:]]*half_md4" || fail "$2: hash not half_md4"
	printf '%s\n' "$h" | grep -q "^Filesystem state:[[:space:]]*clean" || fail "$2: state not clean"
	printf '%s\n' "$h" | grep -q "^Filesystem revision #:[[:space:]]*1" || fail "$2: not revision 1"
}

# ---- the matrix ----
n=0
for bs in 1024 2048 4096; do
	for isz in 128 256; do
		for size in 8M 64M 1G; do
			img="$tmp/b$bs-i$isz-$size.img"
			what="-b $bs -I $isz $size"
			if ! "$NOSTALL" mkfs -q -b "$bs" -I "$isz" -U "$UUID" -T "$T" "$img" "$size"; then
				fail "mkfs $what"
				continue
			fi
			fsck_clean "$img" "$what" && check_dumpe2fs "$img" "$what" "$bs" "$isz"
			n=$((n + 1))
			[ "$size" = 1G ] || rm -f "$img"
		done
	done
done
echo "checked $n images"

# ---- one 16G sparse image, defaults (4 KiB blocks, 256-byte inodes) ----
big="$tmp/big.img"
if "$NOSTALL" mkfs -q -U "$UUID" -T "$T" "$big" 16G; then
	fsck_clean "$big" "16G" && check_dumpe2fs "$big" "16G" 4096 256
	alloc_kb=$(du -k "$big" | cut -f1)
	[ "$alloc_kb" -lt 65536 ] || fail "16G image not sparse ($alloc_kb KiB allocated)"
	dumpe2fs -h "$big" 2>/dev/null | grep -q "^Total journal blocks:[[:space:]]*32768" || fail "16G: journal not 32768 blocks"
	rm -f "$big"
else
	fail "mkfs 16G"
fi

# ---- summary output, label, root owner ----
img="$tmp/opts.img"
out=$("$NOSTALL" mkfs -L vol-label -E root_owner=1000:2000 -U "$UUID" -T "$T" "$img" 32M 2>&1) || fail "mkfs with -L/-E"
printf '%s\n' "$out" | grep -q "Filesystem UUID: $UUID" || fail "summary lacks the uuid: $out"
printf '%s\n' "$out" | grep -q "Superblock backups stored on blocks" || fail "summary lacks backups: $out"
dumpe2fs -h "$img" 2>/dev/null | grep -q "^Filesystem volume name:[[:space:]]*vol-label" || fail "label not set"
st=$(debugfs -R "stat /" "$img" 2>/dev/null)
printf '%s\n' "$st" | grep -q "User: *1000 *Group:[[:space:]]*2000" || fail "root owner not 1000:2000"
fsck_clean "$img" "-L/-E"

# ---- byte reproducibility ----
"$NOSTALL" mkfs -q -U "$UUID" -T "$T" "$tmp/r1.img" 48M || fail "mkfs r1"
"$NOSTALL" mkfs -q -U "$UUID" -T "$T" "$tmp/r2.img" 48M || fail "mkfs r2"
cmp -s "$tmp/r1.img" "$tmp/r2.img" || fail "two runs with -U/-T differ"
rm -f "$tmp/r1.img" "$tmp/r2.img"

# ---- mkfs over an existing non-sparse file full of junk (no SIZE: whole file) ----
junk="$tmp/junk.img"
head -c $((24 * 1024 * 1024)) /dev/urandom >"$junk"
"$NOSTALL" mkfs -q -b 2048 -U "$UUID" -T "$T" "$junk" || fail "mkfs over junk"
fsck_clean "$junk" "over junk"
# The filesystem range was punched out (read as zeroes, as mke2fs discards):
# far less than 24 MiB stays allocated.
alloc_kib=$(du -k "$junk" | cut -f1)
[ "$alloc_kib" -lt 8192 ] || fail "mkfs over junk left $alloc_kib KiB allocated (not discarded)"
rm -f "$junk"
# -E nodiscard writes the zeroes instead: clean, and nothing punched.
head -c $((24 * 1024 * 1024)) /dev/urandom >"$junk"
"$NOSTALL" mkfs -q -E nodiscard -U "$UUID" -T "$T" "$junk" || fail "mkfs -E nodiscard over junk"
fsck_clean "$junk" "over junk, nodiscard"
alloc_kib=$(du -k "$junk" | cut -f1)
[ "$alloc_kib" -ge 24000 ] || fail "mkfs -E nodiscard punched the image ($alloc_kib KiB allocated)"
rm -f "$junk"
# SIZE below the file's size: only the filesystem's range is discarded.
head -c $((24 * 1024 * 1024)) /dev/urandom >"$junk"
tail -c $((8 * 1024 * 1024)) "$junk" >"$tmp/tail.bin"
"$NOSTALL" mkfs -q -U "$UUID" -T "$T" "$junk" 16M || fail "mkfs 16M over a 24 MiB junk file"
fsck_clean "$junk" "16M over junk"
tail -c $((8 * 1024 * 1024)) "$junk" | cmp -s - "$tmp/tail.bin" || fail "mkfs 16M changed bytes past the filesystem"
rm -f "$junk" "$tmp/tail.bin"

# ---- bad input: non-zero exit, message on stderr, no file left behind ----
bad() { # description, args...
	local what=$1 err rc
	shift
	err=$("$NOSTALL" mkfs "$@" 2>&1 >/dev/null)
	rc=$?
	[ "$rc" -ne 0 ] || fail "$what: exit 0"
	[ -n "$err" ] || fail "$what: no message on stderr"
	[ ! -e "$tmp/bad.img" ] || { fail "$what: left $tmp/bad.img behind"; rm -f "$tmp/bad.img"; }
}
bad "unknown -b" -b 3000 "$tmp/bad.img" 64M
bad "-b garbage" -b xyz "$tmp/bad.img" 64M
bad "SIZE garbage" "$tmp/bad.img" 12Q
bad "SIZE missing" "$tmp/bad.img"
bad "SIZE too small" "$tmp/bad.img" 1M
bad "too small for 4k" -b 4096 "$tmp/bad.img" 4M
bad "bad -I" -I 512 "$tmp/bad.img" 64M
bad "bad uuid" -U not-a-uuid "$tmp/bad.img" 64M
bad "too many inodes" -b 1024 -N 100000 "$tmp/bad.img" 8M
bad "journal too big" -J 100000 "$tmp/bad.img" 64M
bad "label too long" -L 12345678901234567 "$tmp/bad.img" 64M
bad "bad -E" -E stride=4 "$tmp/bad.img" 64M
bad "no args"
msg=$("$NOSTALL" mkfs -b 3000 "$tmp/bad.img" 64M 2>&1 >/dev/null)
printf '%s\n' "$msg" | grep -qi "block size" || fail "bad -b message unclear: $msg"
msg=$("$NOSTALL" mkfs "$tmp/bad.img" 1M 2>&1 >/dev/null)
printf '%s\n' "$msg" | grep -qi "too small" || fail "too-small message unclear: $msg"

# ---- the kernel: mount each block size as ext3, write, unmount, fsck ----
can_mount=0
if [ "$(id -u)" -eq 0 ] && command -v mount >/dev/null 2>&1; then
	mkdir -p "$mnt"
	probe="$tmp/b4096-i256-1G.img"
	if [ -f "$probe" ] && kmount -o loop,ro -t ext3 "$probe" "$mnt" 2>/dev/null; then
		umount "$mnt"
		can_mount=1
	fi
fi
if [ "$can_mount" -eq 1 ]; then
	for bs in 1024 2048 4096; do
		img="$tmp/b$bs-i256-1G.img"
		[ "$bs" = 2048 ] && img="$tmp/b$bs-i128-1G.img"
		if ! kmount -o loop -t ext3 "$img" "$mnt"; then
			fail "kernel mount -t ext3 of $img"
			continue
		fi
		mounted=$mnt
		ok=1
		dd if=/dev/urandom of="$mnt/big" bs=1M count=20 status=none || ok=0
		mkdir -p "$mnt/dir/sub" || ok=0
		for i in $(seq 1 400); do echo "file $i" >"$mnt/dir/sub/f$i" || ok=0; done
		ln -s dir/sub/f1 "$mnt/link" || ok=0
		rm -f "$mnt/dir/sub/f7" || ok=0
		sync
		[ "$(cat "$mnt/link")" = "file 1" ] || ok=0
		[ "$ok" -eq 1 ] || fail "writing into the mounted $bs-byte-block image"
		umount "$mnt" || fail "umount"
		mounted=""
		fsck_clean "$img" "after kernel writes (-b $bs)"
	done
	echo "kernel mount checks done"
elif [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: kernel mount checks need root (loop mounts)" >&2
elif [ "${NOSTALL_ALLOW_SKIP:-0}" = 1 ]; then
	echo "SKIP: kernel mount checks: running as root but the ext3 loop mount failed (NOSTALL_ALLOW_SKIP=1)" >&2
else
	fail "running as root but the kernel cannot loop-mount ext3 here (NOSTALL_ALLOW_SKIP=1 to allow)"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "mkfs_e2fsck: all checks passed"
exit 0
