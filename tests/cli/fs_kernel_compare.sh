#!/usr/bin/env bash
# nostall-test: release-only (the kernel comparison repeats what fs_features.sh and fs_kernel_modify.sh run under ASan; kept under the 30-minute CI budget)
# The read path judged by the Linux kernel: images made by mke2fs -t ext3
# (1 KiB blocks with 128-byte inodes, 2 KiB and 4 KiB with 256-byte inodes)
# are filled through a kernel loop mount with a varied tree (tests/lib/fs_mktree.py:
# ~12,000 entries, sizes 0 B to 300 MiB, sparse files, a triple-indirect file at
# 1 KiB, a 10,000-entry htree directory, deep paths, 255-byte names, fast and
# slow symlinks, hard links, device nodes, fifos, a socket, user.* and trusted.*
# xattrs, odd modes, owners and times). The kernel's view is recorded from a
# read-only noatime mount, the image unmounted, and then nostall must agree:
#   - `nostall get -r IMAGE / COPY`: contents (sha256), type, mode, owner,
#     size, link count, mtime, atime, device numbers, symlink targets, xattrs
#     and hard-link groups of every entry of the copy;
#   - `nostall stat` of every entry: all of that plus inode number, blocks
#     and ctime, to the nanosecond;
#   - `nostall ls -lRi /`: the listing of every directory;
#   - `nostall cat` of the big and sparse files.
# Without root (or without loop mounts) the images are built with debugfs -w
# instead (tests/lib/fs_debugfs_build.py) and compared with the source tree.
# A debugfs-built image is also checked when root (a second, independent
# writer). Set NOSTALL_FS_DEBUGFS=1 to force the debugfs path only, and
# NOSTALL_FS_KERNEL_ONLY=1 to leave that extra debugfs-built image out when
# the kernel-built ones run (tests/cli/ext4_write_matrix.sh). The filesystem
# made: tests/lib/testfs.sh (NOSTALL_TEST_FS, ...; default ext3).
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
. "$(dirname "$0")/../lib/testfs.sh" # NOSTALL_TEST_FS, _MKFS_OPTS, _BLOCK_SIZE
ktype=$(testfs_kernel_type)
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
lib=$(cd "$(dirname "$0")/../lib" && pwd)
export TZ=UTC PATH="$PATH:/sbin:/usr/sbin"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in mke2fs debugfs python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not installed" >&2
		exit 77
	fi
done

tmp=$(mktemp -d /tmp/nostall-fscmp.XXXXXX)
mnt="$tmp/mnt"
mkdir -p "$mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

compare_all() { # image ref.json what [--times-s]
	local img=$1 ref=$2 what=$3 ts=${4:-} out
	rm -rf "$tmp/copy"
	if ! out=$("$NOSTALL" get -r "$img" / "$tmp/copy" 2>&1); then
		fail "$what: nostall get -r exited non-zero"
		printf '%s\n' "$out" | head -20
	fi
	python3 "$lib/fs_compare.py" tree "$ref" "$tmp/copy" $ts ${FIELDS:+"--fields=$FIELDS"} ||
		fail "$what: copy differs from the reference"
	# holes stay holes: the 300 MiB sparse file must not take 300 MiB
	if [ -f "$tmp/copy/sparse/300M" ]; then
		local kb
		kb=$(du -k "$tmp/copy/sparse/300M" | cut -f1)
		[ "$kb" -lt 1024 ] || fail "$what: sparse/300M copy takes $kb KiB (holes not preserved)"
	fi
	rm -rf "$tmp/copy"
	python3 "$lib/fs_compare.py" stat "$NOSTALL" "$img" "$ref" $ts || fail "$what: nostall stat differs"
	python3 "$lib/fs_compare.py" ls "$NOSTALL" "$img" "$ref" || fail "$what: nostall ls -lRi differs"
	local cats=()
	for p in sizes/big-random-6M sparse/300M sparse/tind sparse/30M sparse/head-tail sparse/written-zeroes \
		hard/sub/link2 links/fast; do
		grep -q "\"$(printf '%s' "$p" | od -An -tx1 | tr -d ' \n')\"" "$ref" && cats+=("/$p")
	done
	python3 "$lib/fs_compare.py" cat "$NOSTALL" "$img" "$ref" "${cats[@]}" || fail "$what: nostall cat differs"
}

# ---- kernel-built images ----
can_mount=0
if [ "$(id -u)" -eq 0 ] && [ -z "${NOSTALL_FS_DEBUGFS:-}" ]; then
	truncate -s 8M "$tmp/probe.img"
	if testfs_mke2fs "$tmp/probe.img" && kmount -o loop,ro -t "$ktype" "$tmp/probe.img" "$mnt" 2>/dev/null; then
		umount "$mnt"
		can_mount=1
	fi
	rm -f "$tmp/probe.img"
fi
if [ "$can_mount" -eq 1 ]; then
	for cfg in 1024:128 2048:256 4096:256; do
		bs=${cfg%:*} isz=${cfg#*:}
		testfs_bs_wanted "$bs" || { echo "skipped: kernel -b $bs (NOSTALL_TEST_BLOCK_SIZE)"; continue; }
		img="$tmp/k$bs.img" what="kernel -b $bs -I $isz"
		truncate -s 256M "$img"
		if ! testfs_mke2fs -b "$bs" -I "$isz" "$img" 2>/dev/null; then
			fail "$what: mke2fs"
			continue
		fi
		if ! kmount -o loop -t "$ktype" "$img" "$mnt"; then
			fail "$what: kernel mount"
			continue
		fi
		mounted=$mnt
		python3 "$lib/fs_mktree.py" "$bs" "$mnt" || fail "$what: building the tree"
		umount "$mnt" && mounted="" || fail "$what: umount"
		# the kernel's view, from a mount that changes nothing (no atime updates)
		kmount -o loop,ro,noatime -t "$ktype" "$img" "$mnt" || { fail "$what: ro mount"; continue; }
		mounted=$mnt
		python3 "$lib/fs_compare.py" record "$mnt" "$tmp/ref.json" >/dev/null || fail "$what: recording"
		umount "$mnt" && mounted="" || fail "$what: umount"
		compare_all "$img" "$tmp/ref.json" "$what"
		echo "checked: $what"
		rm -f "$img" "$tmp/ref.json"
	done
elif [ -n "${NOSTALL_FS_DEBUGFS:-}" ]; then
	echo "SKIP: kernel-built images (NOSTALL_FS_DEBUGFS set): debugfs-built only" >&2
elif [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: kernel-built images need root (loop mounts): debugfs-built only" >&2
elif [ "${NOSTALL_ALLOW_SKIP:-0}" = 1 ]; then
	echo "SKIP: kernel-built images: running as root but the ext3 loop mount failed (NOSTALL_ALLOW_SKIP=1)" >&2
else
	fail "running as root but the kernel cannot loop-mount ext3 here (NOSTALL_ALLOW_SKIP=1 to allow)"
fi

# ---- debugfs-built images (independent writer; the oracle is the source tree) ----
if [ "$can_mount" -eq 1 ]; then dcfgs="1024:256"; else dcfgs="1024:128 2048:256 4096:256"; fi
[ "$can_mount" -eq 1 ] && [ "${NOSTALL_FS_KERNEL_ONLY:-0}" = 1 ] && dcfgs=""
for cfg in $dcfgs; do
	bs=${cfg%:*} isz=${cfg#*:}
	testfs_bs_wanted "$bs" || { echo "skipped: debugfs -b $bs (NOSTALL_TEST_BLOCK_SIZE)"; continue; }
	img="$tmp/d$bs.img" what="debugfs -b $bs -I $isz" src="$tmp/src"
	rm -rf "$src"
	mkdir -p "$src"
	python3 "$lib/fs_mktree.py" --small --bigdir 3000 --plain "$bs" "$src" 2>/dev/null ||
		{ fail "$what: building the source tree"; continue; }
	truncate -s 128M "$img"
	testfs_mke2fs -b "$bs" -I "$isz" "$img" 2>/dev/null || { fail "$what: mke2fs"; continue; }
	python3 "$lib/fs_debugfs_build.py" "$src" "$img" "$tmp/ref.json" || { fail "$what: debugfs build"; continue; }
	# debugfs sets whole seconds; it cannot make sockets or (without the
	# kernel) say what ctime is: compare what it controls
	FIELDS=type,mode,uid,gid,size,nlink,mtime,atime,data,link,xattr,hlink \
		compare_all "$img" "$tmp/ref.json" "$what" --times-s
	echo "checked: $what"
	rm -rf "$img" "$src" "$tmp/ref.json"
done

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "fs_kernel_compare: all checks passed"
exit 0
