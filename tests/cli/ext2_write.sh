#!/usr/bin/env bash
# ext2 read-write without a journal (issue 39 item 5; docs/ext2-nojournal.md),
# as the kernel's ext4 driver writes a journal-less filesystem:
#   1. the writing commands (put -r, write, mkdir, ln, mv, truncate, chmod,
#      chown, touch, xattr, chattr, rm, rmdir) on ext2 images made by
#      `nostall mkfs -t ext2` and by `mke2fs -t ext2`, 1 KiB and 4 KiB
#      blocks: e2fsck -fn clean after each step, nostall's view (get -r) and,
#      as root, the kernel's (mount -t ext2 -o ro,loop) equal to the source;
#   2. the journal's options are refused as the kernel refuses them without
#      a journal ("can't mount with data=, fs mounted w/o journal", ...);
#   3. the superblock's state: "clean" after an unmount, "not clean" while a
#      FUSE mount is up, the mount count and time move; an image that is not
#      clean mounts with the kernel's warning and stays not clean (e2fsck
#      must look), one with errors likewise, a maximal mount count warns;
#   4. through the FUSE mount (root, /dev/fuse): a tree copied in, changed,
#      fsync'ed; after umount e2fsck is clean and the kernel reads it; a
#      SIGKILL of the daemon mid-writes (a file open and unlinked) leaves it
#      not clean with the fsynced file intact, e2fsck -fy repairs the rest.
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
export TZ=UTC
lib=$(cd "$(dirname "$0")/../lib" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for tool in mke2fs e2fsck debugfs dumpe2fs; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed" >&2; exit 77; }
done

tmp=$(mktemp -d /tmp/nostall-ext2w.XXXXXX)
mnt="$tmp/mnt"
fmnt="$tmp/fmnt"
mkdir "$mnt" "$fmnt"
mounted=""
fmounted=""
bgpid=""
cleanup() {
	if [ -n "$bgpid" ]; then kill -9 "$bgpid" 2>/dev/null; fi
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	if [ -n "$fmounted" ]; then "$NOSTALL" umount "$fmounted" 2>/dev/null || fusermount3 -u "$fmounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

root=0
[ "$(id -u)" -eq 0 ] && root=1
can_mount=0
if [ $root -eq 1 ] && mke2fs -q -F -t ext2 "$tmp/probe.img" 4M >/dev/null 2>&1 &&
	kmount -o loop,ro -t ext2 "$tmp/probe.img" "$mnt" 2>/dev/null; then
	umount "$mnt"
	can_mount=1
fi
rm -f "$tmp/probe.img"
[ $can_mount -eq 1 ] || echo "NOTE: not root or no loop mounts: kernel checks skipped"

ns() { "$NOSTALL" "$@"; }

# ok ARGS...: the command must succeed and say nothing on stderr.
ok() {
	local err rc
	"$NOSTALL" "$@" 2>"$tmp/err" >"$tmp/out"
	rc=$?
	err=$(cat "$tmp/err")
	[ "$rc" -eq 0 ] || fail "nostall $*: exit $rc (stderr: $err)"
	[ -z "$err" ] || fail "nostall $*: stderr: $err"
}

# refused REGEX ARGS...: exit non-zero, one line on stderr matching REGEX.
refused() {
	local re=$1 rc lines err
	shift
	"$NOSTALL" "$@" 2>"$tmp/err" >"$tmp/out" </dev/null
	rc=$?
	err=$(cat "$tmp/err")
	lines=$(wc -l <"$tmp/err")
	[ "$rc" -ne 0 ] && [ "$rc" -lt 128 ] || fail "nostall $*: exit $rc, want a refusal"
	[ "$lines" -eq 1 ] || fail "nostall $*: $lines lines on stderr: $err"
	printf '%s\n' "$err" | grep -Eq -- "$re" || fail "nostall $*: '$err' does not match /$re/"
}

# clean IMAGE WHAT: e2fsck -fn finds nothing; the state says clean.
clean() {
	local out
	out=$(e2fsck -fn "$1" 2>&1) || fail "$2: e2fsck -fn: $(printf '%s\n' "$out" | tail -8)"
	[ "$(state "$1")" = clean ] || fail "$2: state '$(state "$1")' after the unmount"
}
state() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Filesystem state: *//p'; }
hdr() { dumpe2fs -h "$1" 2>/dev/null | sed -n "s/^$2: *//p"; }

# ---- the host tree that put copies in ----
src="$tmp/src"
mkdir -p "$src/dir/sub" "$src/empty"
printf 'hello, ext2\n' >"$src/small"
: >"$src/zero"
head -c 300000 /dev/urandom >"$src/dir/random"
truncate -s 5M "$src/sparse"
printf 'middle' | dd of="$src/sparse" bs=1 seek=1048576 conv=notrunc status=none
ln -s small "$src/link"
ln -s "$(printf 'y%.0s' $(seq 1 200))" "$src/dir/slowlink"
ln "$src/dir/random" "$src/dir/sub/hard"
mkfifo "$src/fifo"
chmod 0750 "$src/dir"
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.color", b"blue"); os.setxattr(sys.argv[2], "user.big", os.urandom(600))' \
	"$src/small" "$src/dir" 2>/dev/null || echo "NOTE: host without user xattrs"
[ $root -eq 1 ] && chown 1234:5678 "$src/small"
touch -h -d '2001-02-03 04:05:06' "$src/link" "$src/small" "$src/zero"
touch -d '1999-12-31 23:59:59' "$src/empty" "$src/dir/sub" "$src/dir" "$src"
python3 "$lib/fs_compare.py" record "$src" "$tmp/src.json" >/dev/null
FIELDS=type,mode,uid,gid,size,nlink,mtime,rdev,data,link,xattr,hlink

# kernel_sees IMAGE WHAT: the kernel's ext2 mount shows /tree as the source.
kernel_sees() {
	[ $can_mount -eq 1 ] || return 0
	if kmount -o loop,ro,noatime -t ext2 "$1" "$mnt"; then
		mounted=$mnt
		python3 "$lib/fs_compare.py" tree "$tmp/src.json" "$mnt/tree" --fields=$FIELDS ||
			fail "$2: the kernel's /tree differs from the source"
		[ "$(cat "$mnt/one" 2>&1)" = "hello, ext2" ] || fail "$2: the kernel's /one"
		[ "$(stat -c %s "$mnt/big" 2>&1)" = 2000000 ] || fail "$2: the kernel's /big size"
		cmp -s "$mnt/big" "$tmp/big" || fail "$2: the kernel's /big contents"
		[ -e "$mnt/p" ] && fail "$2: the kernel still sees /p"
		umount "$mnt" && mounted="" || fail "$2: umount"
	else
		fail "$2: the kernel cannot mount the result"
	fi
}

head -c 2000000 /dev/urandom >"$tmp/big"

# ---- 1. the writing commands ----
for maker in nostall mke2fs; do
	for bs in 1024 4096; do
		what="$maker -t ext2 -b $bs"
		img="$tmp/img-$maker-$bs"
		rm -f "$img"
		if [ $maker = nostall ]; then
			ns mkfs -q -t ext2 -b $bs "$img" 64M || { fail "$what: mkfs"; continue; }
		else
			mke2fs -q -F -t ext2 -b $bs -I 256 "$img" 64M >/dev/null 2>&1 || { fail "$what: mke2fs"; continue; }
		fi
		dumpe2fs -h "$img" 2>/dev/null | grep -q has_journal && fail "$what: has a journal"
		count0=$(hdr "$img" "Mount count")
		ok put -r "$img" "$src" /tree
		ok put "$img" "$src/small" /one
		clean "$img" "$what: after put"
		[ "$(hdr "$img" "Mount count")" -gt "$count0" ] || fail "$what: the mount count did not move"
		rm -rf "$tmp/back"
		ok get -r "$img" /tree "$tmp/back"
		python3 "$lib/fs_compare.py" tree "$tmp/src.json" "$tmp/back" --fields=$FIELDS ||
			fail "$what: get -r of the put tree differs from the source"
		ns write "$img" /big 0 <"$tmp/big" || fail "$what: write of 2 MB"
		cmp <(ns cat "$img" /big) "$tmp/big" || fail "$what: /big contents"
		printf 'hello' | ns write "$img" /w 0 || fail "$what: write (create)"
		printf 'Z' | ns write "$img" /w 10 || fail "$what: write past EOF"
		[ "$(ns cat "$img" /w | od -An -c | tr -s ' ')" = " h e l l o \0 \0 \0 \0 \0 Z" ] ||
			fail "$what: write contents: $(ns cat "$img" /w | od -An -c)"
		ok mkdir -p "$img" /p/q/r
		ok mkdir -m 0700 "$img" /m /m2
		ok ln -s "$img" ../one /p/sl
		ok ln "$img" /one /p/hard
		ok mv "$img" /p/hard /m/moved
		ok truncate "$img" /w 100K
		ok chmod "$img" 0640 /one
		ok chown "$img" 777:888 /m/moved
		ok chmod "$img" 0644 /one
		ok touch "$img" /new
		ok xattr "$img" set /one user.k "some value"
		[ "$(ns xattr "$img" get /one user.k)" = "some value" ] || fail "$what: xattr get"
		ok xattr "$img" rm /one user.k
		ok chattr "$img" +dA /one
		[ "$(ns lsattr "$img" /one)" = "------dA----- /one" ] || fail "$what: lsattr /one"
		ok chattr "$img" =d /one
		clean "$img" "$what: after the changes"
		ok rm "$img" /w /new /m/moved
		ok rm -r "$img" /p
		ok rmdir "$img" /m2
		ok put "$img" "$src/sparse" /s
		ok truncate "$img" /s 0
		ok truncate "$img" /s 5M
		ok truncate "$img" /s 0
		ok put "$img" "$src/sparse" /s.tmp
		ok mv "$img" /s.tmp /s
		cmp <(ns cat "$img" /s) "$src/sparse" || fail "$what: /s after the rename over it"
		clean "$img" "$what: after rm, rmdir, truncate, rename over"
		for p in /w /new /p /m2 /m/moved; do
			ns stat "$img" $p >/dev/null 2>&1 && fail "$what: $p still there"
		done
		kernel_sees "$img" "$what"
		[ "$(state "$img")" = clean ] || fail "$what: the kernel's read-only mount left '$(state "$img")'"
	done
done

# ---- 2. the journal's options, refused as the kernel refuses them ----
img="$tmp/img-mke2fs-1024"
for o in data=ordered data=journal data=writeback data=guarded; do
	refused "can't mount with data=, fs mounted w/o journal" mkdir -o $o "$img" /x
	refused "can't mount with data=, fs mounted w/o journal" ls -o $o "$img" /
done
refused "can't mount with commit=10, fs mounted w/o journal" mkdir -o commit=10 "$img" /x
refused "can't mount with journal_async_commit, fs mounted w/o journal" mkdir -o journal_async_commit "$img" /x
refused "can't mount with journal_checksum, fs mounted w/o journal" mkdir -o journal_checksum "$img" /x
refused "can't mount with data_err=abort, fs mounted w/o journal" mkdir -o data_err=abort "$img" /x
ok mkdir -o commit=5,barrier=0,data_err=ignore "$img" /opts
# the superblock's default data mode (tune2fs -o) is not "another" data=
debugfs -w -R "ssv default_mount_opts 0x0060" "$img" >/dev/null 2>&1 # journal_data_writeback
ok rmdir -o data=writeback "$img" /opts
refused "can't mount with data=, fs mounted w/o journal" mkdir -o data=ordered "$img" /x
debugfs -w -R "ssv default_mount_opts 0" "$img" >/dev/null 2>&1
clean "$img" "options"

# ---- 3. the state ----
img="$tmp/img-nostall-4096"
t0=$(hdr "$img" "Last mount time")
count0=$(hdr "$img" "Mount count")
sleep 1
ok mkdir "$img" /state
[ "$(hdr "$img" "Mount count")" = $((count0 + 1)) ] || fail "state: mount count $count0 -> $(hdr "$img" "Mount count")"
[ "$(hdr "$img" "Last mount time")" != "$t0" ] || fail "state: the mount time did not move"
# not clean: the warning, and the state stays not clean after the unmount
debugfs -w -R "ssv state 0" "$img" >/dev/null 2>&1
ns mkdir "$img" /unclean 2>"$tmp/err" || fail "state: mkdir on an unchecked fs: $(cat "$tmp/err")"
grep -q "warning: mounting unchecked fs, running e2fsck is recommended" "$tmp/err" ||
	fail "state: no warning for an unchecked fs: $(cat "$tmp/err")"
[ "$(state "$img")" = "not clean" ] || fail "state: an unchecked fs came out '$(state "$img")'"
ns ls "$img" / 2>"$tmp/err" >/dev/null
[ -s "$tmp/err" ] && fail "state: a read-only mount warned: $(cat "$tmp/err")"
e2fsck -fy "$img" >/dev/null 2>&1
[ "$(state "$img")" = clean ] || fail "state: e2fsck -fy left '$(state "$img")'"
# errors: the warning, the error kept
debugfs -w -R "ssv state 3" "$img" >/dev/null 2>&1
ns mkdir "$img" /errors 2>"$tmp/err" || fail "state: mkdir on an fs with errors: $(cat "$tmp/err")"
grep -q "warning: mounting fs with errors, running e2fsck is recommended" "$tmp/err" ||
	fail "state: no warning for an fs with errors: $(cat "$tmp/err")"
[ "$(state "$img")" = "clean with errors" ] || fail "state: an fs with errors came out '$(state "$img")'"
e2fsck -fy "$img" >/dev/null 2>&1
# the maximal mount count
debugfs -w -R "ssv max_mnt_count 3" "$img" >/dev/null 2>&1
debugfs -w -R "ssv mnt_count 3" "$img" >/dev/null 2>&1
ns mkdir "$img" /maxcount 2>"$tmp/err" || fail "state: mkdir at the maximal mount count"
grep -q "warning: maximal mount count reached, running e2fsck is recommended" "$tmp/err" ||
	fail "state: no warning at the maximal mount count: $(cat "$tmp/err")"
debugfs -w -R "ssv max_mnt_count -1" "$img" >/dev/null 2>&1
clean "$img" "state"

# ---- 4. through the FUSE mount ----
if [ $root -eq 1 ] && [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
	img="$tmp/img-mke2fs-4096"
	if ns mount "$img" "$fmnt" 2>"$tmp/err"; then
		fmounted=$fmnt
		[ "$(state "$img")" = "not clean" ] || fail "fuse: state '$(state "$img")' while mounted"
		cp -a "$src" "$fmnt/copy" || fail "fuse: cp -a"
		mkdir -p "$fmnt/d/e" && mv "$fmnt/copy/small" "$fmnt/d/e/small" && rm -r "$fmnt/copy/dir" ||
			fail "fuse: mkdir, mv, rm -r"
		head -c 1000000 /dev/urandom >"$tmp/synced"
		python3 -c 'import os,sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, open(sys.argv[2], "rb").read()); os.fsync(fd); os.close(fd)' "$fmnt/synced" "$tmp/synced" ||
			fail "fuse: write + fsync"
		[ "$(state "$img")" = "not clean" ] || fail "fuse: state '$(state "$img")' after fsync"
		ns sync "$fmnt" || fail "fuse: nostall sync"
		ns umount "$fmnt" && fmounted="" || fail "fuse: umount"
		clean "$img" "fuse: after umount"
		cmp <(ns cat "$img" /synced) "$tmp/synced" || fail "fuse: /synced contents"
		[ "$(ns cat "$img" /d/e/small)" = "hello, ext2" ] || fail "fuse: /d/e/small"
		ns stat "$img" /copy/dir >/dev/null 2>&1 && fail "fuse: /copy/dir still there"
		if [ $can_mount -eq 1 ] && kmount -o loop,ro -t ext2 "$img" "$mnt"; then
			mounted=$mnt
			cmp -s "$mnt/synced" "$tmp/synced" || fail "fuse: the kernel's /synced"
			[ -d "$mnt/copy/empty" ] || fail "fuse: the kernel lacks /copy/empty"
			umount "$mnt" && mounted="" || fail "fuse: kernel umount"
		fi
	else
		fail "fuse: mount: $(cat "$tmp/err")"
	fi

	# SIGKILL of the daemon mid-writes, with a file open and unlinked:
	# the image is left not clean; the fsynced file is there as it is
	# (read-only), e2fsck -fy repairs the rest (the orphan list included),
	# after which e2fsck -fn is clean and the file still there.
	img="$tmp/img-kill"
	mke2fs -q -F -t ext2 -b 1024 "$img" 64M >/dev/null 2>&1
	"$NOSTALL" mount -f "$img" "$fmnt" &
	bgpid=$!
	for _ in $(seq 200); do mountpoint -q "$fmnt" && break; sleep 0.05; done
	fmounted=$fmnt
	head -c 700000 /dev/urandom >"$tmp/keep"
	cp "$tmp/keep" "$fmnt/keep" && python3 -c "import os; fd=os.open('$fmnt/keep', os.O_RDONLY); os.fsync(fd)" ||
		fail "kill: fsync before SIGKILL"
	python3 -c 'import os,sys,time
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644); os.write(fd, b"x" * 50000)
os.unlink(sys.argv[1]); os.fsync(fd); time.sleep(3)' "$fmnt/gone" 2>/dev/null &
	holder=$!
	( for i in $(seq 1 2000); do head -c 20000 /dev/zero >"$fmnt/w$i" || break; done ) 2>/dev/null &
	writer=$!
	sleep 0.7
	kill -KILL "$bgpid"
	wait "$bgpid" 2>/dev/null
	wait "$writer" "$holder" 2>/dev/null
	fusermount3 -u "$fmnt" 2>/dev/null || umount -l "$fmnt"
	fmounted=""
	[ "$(state "$img")" = "not clean" ] || fail "kill: state '$(state "$img")' after SIGKILL"
	cmp <(ns cat "$img" /keep) "$tmp/keep" || fail "kill: /keep before e2fsck"
	e2fsck -fy "$img" >"$tmp/fsck.out" 2>&1
	rc=$?
	[ $rc -le 1 ] || fail "kill: e2fsck -fy exit $rc: $(tail -5 "$tmp/fsck.out")"
	echo "NOTE: e2fsck -fy after SIGKILL: exit $rc ($(grep -ci orphan "$tmp/fsck.out") orphan lines)"
	clean "$img" "kill: after e2fsck -fy"
	cmp <(ns cat "$img" /keep) "$tmp/keep" || fail "kill: /keep after e2fsck"
	ns mkdir "$img" /after 2>"$tmp/err" || fail "kill: a read-write mount after e2fsck: $(cat "$tmp/err")"
	[ -s "$tmp/err" ] && fail "kill: the repaired image warns: $(cat "$tmp/err")"
	clean "$img" "kill: after a mount of the repaired image"
else
	echo "SKIP: the FUSE part (needs root, /dev/fuse and fusermount3)" >&2
fi

if [ $fails -ne 0 ]; then
	echo "ext2_write: $fails failures"
	exit 1
fi
echo "ext2_write: ok"
