#!/usr/bin/env bash
# nostall mkfs -t ext2|ext3|ext4 [-O feature,^feature] judged by e2fsprogs and
# the kernel: each image is e2fsck -fn clean; dumpe2fs -h shows the features
# mke2fs -t TYPE (-O the same list) sets, the ext4 details (64-byte
# descriptors, flex groups of 16, crc32c, extra isize 32, a jbd2 journal with
# 64bit and checksum v3); nostall itself reads the images; -O adds and removes features
# and refuses, in one line, ones nostall cannot make. As root with loop
# mounts: the kernel mounts each image, takes writes, and leaves it clean.
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in e2fsck dumpe2fs mke2fs; do
	if ! command -v "$tool" >/dev/null 2>&1 && [ ! -x "/sbin/$tool" ] && [ ! -x "/usr/sbin/$tool" ]; then
		echo "SKIP: $tool not installed (e2fsprogs)" >&2
		exit 77
	fi
done
export PATH="$PATH:/sbin:/usr/sbin"

tmp=$(mktemp -d /tmp/nostall-mkfs-types.XXXXXX)
mnt="$tmp/mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
UUID=01234567-89ab-cdef-0123-456789abcdef
T=1700000000

features_of() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Filesystem features: *//p' | tr ' ' '\n' | grep . | sort | tr '\n' ' '; }
hdr() { dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^$2: *//p"; }

fsck_clean() { # image what
	local out rc
	out=$(e2fsck -fn "$1" 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		fail "e2fsck -fn $2: exit $rc"
		printf '%s\n' "$out" | head -20
		return 1
	fi
}

# What mke2fs would set for the type (its own conf).
mke2fs_features() { # type size bs extra-O
	local ref="$tmp/ref.img" o="${4:-}"
	rm -f "$ref"
	mke2fs -q -F -t "$1" -b "$3" ${o:+-O "$o"} "$ref" "$2" >/dev/null 2>&1 || { echo "mke2fs failed"; return; }
	features_of "$ref"
	rm -f "$ref"
}

imgs=()
check() { # type size bs [-O list]
	local type=$1 size=$2 bs=$3 o=${4:-}
	local img="$tmp/$type-$size-$bs${o:+-$(echo "$o" | tr ',^' '_x')}.img"
	local what="-t $type -b $bs ${o:+-O $o }$size"
	if ! "$NOSTALL" mkfs -q -t "$type" -b "$bs" ${o:+-O "$o"} -U "$UUID" -T "$T" "$img" "$size"; then
		fail "mkfs $what"
		return
	fi
	fsck_clean "$img" "$what" || return
	local got want
	got=$(features_of "$img")
	want=$(mke2fs_features "$type" "$size" "$bs" "$o")
	[ "$got" = "$want" ] || fail "$what: features '$got', mke2fs sets '$want'"
	case " $got " in
	*" metadata_csum "*)
		[ "$(hdr "$img" "Checksum type")" = crc32c ] || fail "$what: checksum type not crc32c"
		hdr "$img" "Journal features" | grep -q "journal_64bit journal_checksum_v3" ||
			fail "$what: journal lacks 64bit/checksum_v3: $(hdr "$img" "Journal features")"
		;;
	esac
	case " $got " in
	*" 64bit "*) [ "$(hdr "$img" "Group descriptor size")" = 64 ] || fail "$what: descriptors not 64 bytes" ;;
	esac
	case " $got " in
	*" flex_bg "*) [ "$(hdr "$img" "Flex block group size")" = 16 ] || fail "$what: flex groups not of 16" ;;
	esac
	case " $got " in
	*" extra_isize "*) [ "$(hdr "$img" "Required extra isize")" = 32 ] || fail "$what: min extra isize not 32" ;;
	esac
	case " $got " in
	*" has_journal "*) ;;
	*) [ -z "$(hdr "$img" "Journal inode")" ] || fail "$what: a journal inode without has_journal" ;;
	esac
	# nostall reads it (read-only mount for ext4 images)
	"$NOSTALL" ls "$img" / 2>&1 | grep -q "lost+found" || fail "$what: nostall ls / lacks lost+found"
	"$NOSTALL" info "$img" >/dev/null 2>&1 || fail "$what: nostall info failed"
	# the kernel's ext3 and ext2 mounts refuse ext4-only features
	local mtype=$type
	case " $got " in *" flex_bg "* | *" extent "* | *" 64bit "* | *" metadata_csum "*) mtype=ext4 ;; esac
	imgs+=("$img:$mtype:$what")
}

check ext4 300M 1024
check ext4 300M 4096
check ext4 2G 4096
check ext4 2G 1024
check ext4 64M 1024 "^metadata_csum"
check ext4 64M 4096 "^64bit"
check ext4 300M 1024 "^flex_bg"
# flex metadata of 16 groups larger than a group: inode tables moved past
# the backup superblocks they would cross
"$NOSTALL" mkfs -q -t ext4 -b 1024 -N 300000 -U "$UUID" -T "$T" "$tmp/fat.img" 300M &&
	fsck_clean "$tmp/fat.img" "ext4 1k, 300000 inodes" && imgs+=("$tmp/fat.img:ext4:1k, 300000 inodes") ||
	fail "mkfs -t ext4 -b 1024 -N 300000 300M"
check ext3 300M 4096 "flex_bg"
check ext2 300M 4096
check ext2 64M 1024
check ext3 64M 1024 "^dir_index"

# A journal of more than 4 extents: a leaf block under the inode's index.
img="$tmp/leaf.img"
if "$NOSTALL" mkfs -q -t ext4 -b 1024 -J 65536 -U "$UUID" -T "$T" "$img" 1G; then
	fsck_clean "$img" "ext4 1G, 65536-block journal" &&
		imgs+=("$img:ext4:65536-block journal")
else
	fail "mkfs -t ext4 -J 65536 1G"
fi

# Over a file full of junk with -E nodiscard (every zero written, the flex
# metadata and the journal's extents over old bytes).
head -c $((96 * 1024 * 1024)) /dev/urandom >"$tmp/junk.img"
"$NOSTALL" mkfs -q -t ext4 -E nodiscard -U "$UUID" -T "$T" "$tmp/junk.img" || fail "mkfs -t ext4 over junk"
fsck_clean "$tmp/junk.img" "ext4 over junk, nodiscard"
rm -f "$tmp/junk.img"

# -t ext3 is the default, byte for byte.
"$NOSTALL" mkfs -q -U "$UUID" -T "$T" "$tmp/d.img" 48M || fail "mkfs default"
"$NOSTALL" mkfs -q -t ext3 -U "$UUID" -T "$T" "$tmp/e3.img" 48M || fail "mkfs -t ext3"
cmp -s "$tmp/d.img" "$tmp/e3.img" || fail "-t ext3 differs from the default"
# ext4 images are reproducible too.
"$NOSTALL" mkfs -q -t ext4 -U "$UUID" -T "$T" "$tmp/r1.img" 48M || fail "mkfs r1"
"$NOSTALL" mkfs -q -t ext4 -U "$UUID" -T "$T" "$tmp/r2.img" 48M || fail "mkfs r2"
cmp -s "$tmp/r1.img" "$tmp/r2.img" || fail "two -t ext4 runs with -U/-T differ"
rm -f "$tmp/d.img" "$tmp/e3.img" "$tmp/r1.img" "$tmp/r2.img"

# Refusals: one clear line, exit 2, nothing left behind.
refuse() { # expect-in-message args...
	local want=$1 err rc
	shift
	err=$("$NOSTALL" mkfs "$@" "$tmp/bad.img" 64M 2>&1 >/dev/null)
	rc=$?
	[ "$rc" -eq 2 ] || fail "mkfs $*: exit $rc, want 2"
	printf '%s\n' "$err" | grep -q "$want" || fail "mkfs $*: message '$err' lacks '$want'"
	[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "mkfs $*: more than one line: $err"
	[ ! -e "$tmp/bad.img" ] || { fail "mkfs $*: left an image"; rm -f "$tmp/bad.img"; }
}
refuse "cannot make feature 'meta_bg'" -t ext4 -O meta_bg
refuse "cannot make feature 'bigalloc'" -t ext4 -O bigalloc
refuse "cannot make feature 'inline_data'" -O inline_data
refuse "unknown feature 'nosuch'" -O nosuch
refuse "unknown filesystem type 'ext5'" -t ext5
refuse "64bit needs extent" -t ext4 -O ^extent

# The kernel: mount, write, unmount, e2fsck clean again.
can_mount=0
if [ "$(id -u)" -eq 0 ] && command -v mount >/dev/null 2>&1; then
	mkdir -p "$mnt"
	probe="${imgs[0]%%:*}"
	if kmount -o loop,ro "$probe" "$mnt" 2>/dev/null; then
		umount "$mnt"
		can_mount=1
	fi
fi
if [ "$can_mount" -eq 1 ]; then
	for entry in "${imgs[@]}"; do
		img=${entry%%:*}
		rest=${entry#*:}
		type=${rest%%:*}
		what=${rest#*:}
		if ! kmount -o loop -t "$type" "$img" "$mnt"; then
			fail "kernel mount -t $type of $what"
			continue
		fi
		mounted=$mnt
		ok=1
		dd if=/dev/urandom of="$mnt/big" bs=1M count=8 status=none || ok=0
		mkdir -p "$mnt/dir/sub" || ok=0
		for i in $(seq 1 300); do echo "file $i" >"$mnt/dir/sub/f$i" || ok=0; done
		echo hello >"$mnt/lost+found/x" || ok=0
		sync
		[ "$ok" -eq 1 ] || fail "writing into the mounted image ($what)"
		umount "$mnt" || fail "umount ($what)"
		mounted=""
		fsck_clean "$img" "after kernel writes ($what)"
		"$NOSTALL" cat "$img" /dir/sub/f300 2>/dev/null | grep -q "file 300" ||
			fail "nostall cat of a kernel-written file ($what)"
	done
	echo "kernel mount checks done (${#imgs[@]} images)"
else
	echo "SKIP: kernel mounts (needs root and loop devices)"
fi

echo "mkfs_types: ${#imgs[@]} images, $fails failures"
[ "$fails" -eq 0 ]
