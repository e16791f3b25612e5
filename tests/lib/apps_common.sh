# Shared part of the real-application tests on the FUSE mount
# (tests/cli/apps_*.sh, tests/cli/fsx_fuse.sh; docs/exerciser.md). Sourced,
# not run. Each test calls apps_cycle once per data mode:
#   mkfs (mke2fs, 256-byte inodes) -> nostall mount -o data=MODE -> the app's
#   work and its own checks -> manifest of the tree -> nostall umount (returns
#   once the image is clean) -> e2fsck -fn -> as root, a read-only kernel loop
#   mount of the image must show the same manifest (tests/lib/fs_manifest.py:
#   type, mode, owner, size, blocks, links, inode numbers, mtime/ctime in ns,
#   contents, symlink targets, user xattrs, hard-link groups) and pass the
#   app's own kernel-side check.
# Environment:
#   NOSTALL               the nostall binary (tests/run.sh sets it)
#   NOSTALL_DATA_MODES    data modes to run (default "journal ordered writeback guarded")
#   NOSTALL_APPS_FULL=1   the issue's full sizes instead of the bounded CI ones
#   NOSTALL_APPS_SMALL=1  the sanitized builds' smaller sizes on any build (the
#                         write matrix runs every app on five more filesystems)
#   NOSTALL_ALLOW_SKIP=1  a missing tool skips the test (exit 77) instead of failing it
#   NOSTALL_TEST_FS, NOSTALL_TEST_MKFS_OPTS  the filesystem made (tests/lib/testfs.sh;
#                         default ext3); the kernel mounts it as that type
#   NOSTALL_TEST_BLOCK_SIZE  the block size (default 4096)
set -u
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
APPS_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$APPS_LIB/kmount.sh"
. "$APPS_LIB/testfs.sh"
APPS_BS=${NOSTALL_TEST_BLOCK_SIZE:-4096}
APPS_KTYPE=$(testfs_kernel_type)
APPS_MODES=${NOSTALL_DATA_MODES:-journal ordered writeback guarded}
APPS_FULL=${NOSTALL_APPS_FULL:-0}
APPS_SANITIZED=0
case $NOSTALL in */asan/* | */tsan/*) APPS_SANITIZED=1 ;; esac
[ "${NOSTALL_APPS_SMALL:-0}" = 1 ] && APPS_SANITIZED=1
export TZ=UTC LC_ALL=C
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# apps_size CI FULL [SANITIZED]: the size to use (a sanitized daemon is
# several times slower: its own, smaller CI size).
apps_size() {
	if [ "$APPS_FULL" = 1 ]; then echo "$2"
	elif [ "$APPS_SANITIZED" = 1 ] && [ $# -ge 3 ]; then echo "$3"
	else echo "$1"; fi
}

# A missing tool fails the test (CI must not skip silently) unless
# NOSTALL_ALLOW_SKIP=1, which makes it a skip (exit 77, as tests/run.sh counts).
apps_missing() { # what debian-package
	if [ "${NOSTALL_ALLOW_SKIP:-0}" = 1 ]; then
		echo "SKIP: $1 not available (Debian package $2)"
		exit 77
	fi
	echo "FAIL: $1 not available: install the Debian package $2 (NOSTALL_ALLOW_SKIP=1 to skip)"
	exit 1
}

apps_need() { # tool:package ...
	local t
	for t in "$@"; do
		command -v "${t%%:*}" >/dev/null 2>&1 || apps_missing "${t%%:*}" "${t#*:}"
	done
}

apps_need_fuse() {
	apps_need fusermount3:fuse3 mke2fs:e2fsprogs e2fsck:e2fsprogs python3:python3
	[ -c /dev/fuse ] || apps_missing /dev/fuse "fuse3 (and the fuse kernel module)"
	"$NOSTALL" mount 2>&1 | grep -q 'usage: nostall mount' ||
		{ echo "FAIL: $NOSTALL has no mount command"; exit 1; }
}

APPS_TMP=$(mktemp -d /tmp/nostall-apps.XXXXXX)
APPS_MOUNTED=""
APPS_KMOUNTED=""
apps_cleanup() {
	if [ -n "$APPS_MOUNTED" ]; then
		"$NOSTALL" umount "$APPS_MOUNTED" >/dev/null 2>&1 || fusermount3 -u -z "$APPS_MOUNTED" 2>/dev/null
	fi
	[ -n "$APPS_KMOUNTED" ] && umount "$APPS_KMOUNTED" 2>/dev/null
	rm -rf "$APPS_TMP"
}
trap apps_cleanup EXIT

# Kernel loop mounts: as root they must work (else the test fails, as
# tests/run.sh promises); not root: that part is skipped, loudly.
APPS_KERNEL=0
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$APPS_TMP/kmnt"
	if testfs_mke2fs "$APPS_TMP/probe.img" 4M >/dev/null 2>&1 &&
		kmount -o loop,ro -t "$APPS_KTYPE" "$APPS_TMP/probe.img" "$APPS_TMP/kmnt" 2>/dev/null; then
		umount "$APPS_TMP/kmnt"
		APPS_KERNEL=1
	else
		fail "root, but a kernel loop mount of $APPS_KTYPE does not work"
	fi
	rm -f "$APPS_TMP/probe.img"
fi

apps_mount() { # image mountpoint opts
	mkdir -p "$2"
	local o
	o=$(testfs_mount_opts "$3") # no data= without a journal (ext2)
	if ! "$NOSTALL" mount ${o:+-o "$o"} "$1" "$2" >"$APPS_TMP/mount.log" 2>&1; then
		cat "$APPS_TMP/mount.log"
		fail "nostall mount -o $3 $1 failed"
		return 1
	fi
	APPS_MOUNTED=$2
}

apps_umount() { # mountpoint label
	APPS_MOUNTED=""
	"$NOSTALL" umount "$1" >"$APPS_TMP/umount.log" 2>&1 ||
		{ cat "$APPS_TMP/umount.log"; fail "$2: nostall umount failed"; return 1; }
}

apps_fsck() { # image label
	e2fsck -fn "$1" >"$APPS_TMP/fsck.log" 2>&1 ||
		{ tail -n 20 "$APPS_TMP/fsck.log"; fail "$2: e2fsck -fn is not clean"; }
}

APPS_FIELDS=type,mode,uid,gid,size,blocks,nlink,mtime,ctime,data,link,xattr,ino,hlink
apps_manifest() { # dir [fields]
	python3 "$APPS_LIB/fs_manifest.py" --fields "${2:-$APPS_FIELDS}" "$1"
}

# The varied host tree of tests/lib/fs_mktree.py (every file type, sparse
# files, hard links, symlinks, xattrs, odd owners, modes and times) with a
# big directory of N entries, shaped for the images' block size (a symlink
# or an xattr block value fits in one block).
apps_mktree() { # dir N
	mkdir -p "$1"
	python3 "$APPS_LIB/fs_mktree.py" --small --plain --bigdir "$2" "$APPS_BS" "$1" >/dev/null ||
		{ echo "FAIL: fs_mktree.py"; exit 1; }
}

# A manifest comparable across filesystems: directory sizes are each
# filesystem's own.
apps_portable() { sed $'/\ttype=dir\t/s/\tsize=[0-9]*/\tsize=-/'; }

# Two manifests must be equal; shows the first differences.
apps_same() { # a b label
	if ! diff -q "$1" "$2" >/dev/null; then
		diff "$1" "$2" | head -n 20
		fail "$3"
	fi
}

# apps_cycle MODE SIZE WORK [KERNEL_CHECK]: WORK MNT MODE runs the app on the
# mount (and checks it there); KERNEL_CHECK KMNT MODE checks the kernel's view.
apps_cycle() {
	local mode=$1 size=$2 work=$3 kcheck=${4:-} img="$APPS_TMP/$1.img" mnt="$APPS_TMP/mnt"
	local t0=$SECONDS before=$fails
	rm -f "$img"
	testfs_mke2fs -I 256 -b "$APPS_BS" "$img" "$size" >/dev/null 2>&1 || { fail "$mode: mke2fs"; return; }
	apps_mount "$img" "$mnt" "data=$mode" || return
	"$work" "$mnt" "$mode"
	apps_manifest "$mnt" >"$APPS_TMP/fuse.manifest" 2>"$APPS_TMP/manifest.err" ||
		{ cat "$APPS_TMP/manifest.err"; fail "$mode: manifest on the mount"; }
	apps_umount "$mnt" "$mode" || return
	apps_fsck "$img" "data=$mode"
	if [ "$APPS_KERNEL" = 1 ]; then
		local k="$APPS_TMP/kmnt"
		if kmount -o loop,ro,noatime -t "$APPS_KTYPE" "$img" "$k"; then
			APPS_KMOUNTED=$k
			apps_manifest "$k" >"$APPS_TMP/kernel.manifest"
			apps_same "$APPS_TMP/fuse.manifest" "$APPS_TMP/kernel.manifest" \
				"data=$mode: the kernel's $APPS_KTYPE sees another tree than the FUSE mount did"
			[ -n "$kcheck" ] && "$kcheck" "$k" "$mode"
			umount "$k"
			APPS_KMOUNTED=""
		else
			fail "data=$mode: the kernel does not mount the image"
		fi
	else
		echo "SKIP: data=$mode: kernel loop-mount comparison (not root)"
	fi
	echo "data=$mode: $((SECONDS - t0)) s, $((fails - before)) failures"
}

apps_finish() { # name
	[ "$fails" -eq 0 ] || { echo "$1: $fails failures"; exit 1; }
	echo "$1: ok"
}
