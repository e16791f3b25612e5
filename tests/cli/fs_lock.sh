#!/usr/bin/env bash
# Image locks (docs/devices.md "Image locks"): a command that mounts an image
# must not write one that another program is using. Checked:
#   1. another program's flock (util-linux flock(1)): exclusive refuses
#      every nostall mount but -o noload; shared lets readers in, not put;
#   2. a nostall FUSE daemon's mount: put, ls, mkfs, recover and a second
#      daemon are refused while it runs, and the image still holds what the daemon
#      wrote, e2fsck clean (before: put succeeded and the daemon's unmount
#      wrote over it);
#   3. as root, a kernel loop mount: put and ls (which would replay the
#      kernel's live journal) are refused naming the loop device, -o noload
#      reads; the block device itself mounted: refused; attached but not
#      mounted: allowed (e2fsck's rule).
# Every refusal: exit 1, one line naming the image, nothing written (the
# image's bytes are compared before and after).
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export PATH="$PATH:/sbin:/usr/sbin"
fails=0
passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { passes=$((passes + 1)); }
for tool in flock e2fsck mke2fs; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed" >&2; exit 77; }
done
tmp=$(mktemp -d /tmp/nostall-lock.XXXXXX)
cleanup() {
	mountpoint -q "$tmp/m" 2>/dev/null && { "$NOSTALL" umount "$tmp/m" || fusermount3 -u "$tmp/m"; } 2>/dev/null
	mountpoint -q "$tmp/k" 2>/dev/null && umount "$tmp/k"
	[ -n "${loopdev:-}" ] && losetup -d "$loopdev" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
img=$tmp/fs.img
mkdir "$tmp/m" "$tmp/k"
mke2fs -q -F -t ext3 -b 1024 -E nodiscard "$img" 16M >/dev/null 2>&1 || { echo "FAIL: mke2fs"; exit 1; }
"$NOSTALL" put "$img" /etc/hostname /first || fail "put on a free image"
echo data >"$tmp/host.txt"

# refused CASE PATTERN ARGS...: nostall ARGS exits 1 with one line matching
# PATTERN on stderr, and the image is byte for byte what it was.
refused() {
	local what=$1 re=$2 sum0 sum1 rc lines
	shift 2
	sum0=$(md5sum <"$img")
	"$NOSTALL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	sum1=$(md5sum <"$img")
	lines=$(wc -l <"$tmp/err")
	if [ "$rc" -ne 1 ]; then fail "$what: exit $rc, want 1 ($(cat "$tmp/err"))"
	elif ! grep -Eq -- "$re" "$tmp/err"; then fail "$what: message '$(cat "$tmp/err")' lacks /$re/"
	elif [ "$lines" -ne 1 ]; then fail "$what: $lines lines on stderr"
	elif [ "$sum0" != "$sum1" ]; then fail "$what: the image changed"
	else ok; fi
}
allowed() {
	local what=$1
	shift
	if "$NOSTALL" "$@" >"$tmp/out" 2>"$tmp/err"; then ok; else fail "$what: exit $? ($(cat "$tmp/err"))"; fi
}

# ---- 1. another program's flock (this shell's, on its own descriptor) ----
exec 9<"$img"
flock -x 9 || fail "flock -x"
refused "put beside an exclusive flock" "in use" put "$img" "$tmp/host.txt" /x
refused "ls beside an exclusive flock" "in use" ls "$img" /
allowed "ls -o noload beside an exclusive flock" ls -o noload "$img" /
grep -qx first "$tmp/out" || fail "ls -o noload: '$(cat "$tmp/out")'"
flock -s 9 || fail "flock -s"
allowed "ls beside a shared flock" ls "$img" /
refused "put beside a shared flock" "in use" put "$img" "$tmp/host.txt" /x
exec 9<&-
allowed "put once the flock is gone" put "$img" "$tmp/host.txt" /second

# ---- 2. a nostall daemon ----
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
	if "$NOSTALL" mount "$img" "$tmp/m" 2>"$tmp/err"; then
		echo fuse >"$tmp/m/by-daemon" || fail "write through the mount"
		refused "put while a daemon has it" "in use by another nostall mount" put "$img" "$tmp/host.txt" /x
		refused "ls while a daemon has it" "in use" ls "$img" /
		refused "a second daemon" "in use" mount "$img" "$tmp/k"
		refused "mkfs over a mounted image" "in use" mkfs "$img"
		refused "recover a mounted image" "in use" recover "$img"
		mountpoint -q "$tmp/k" && { fail "a second daemon mounted"; "$NOSTALL" umount "$tmp/k"; }
		"$NOSTALL" umount "$tmp/m" || fail "nostall umount"
		if e2fsck -fn "$img" >"$tmp/fsck" 2>&1; then ok; else fail "e2fsck after the daemon: $(tail -3 "$tmp/fsck")"; fi
		out=$("$NOSTALL" cat "$img" /by-daemon 2>&1)
		[ "$out" = fuse ] && ok || fail "the daemon's file: '$out'"
		allowed "put after the daemon left" put "$img" "$tmp/host.txt" /after
	else
		echo "SKIP: nostall mount failed: $(cat "$tmp/err")" >&2
	fi
else
	echo "SKIP: no FUSE here (/dev/fuse, fusermount3)" >&2
fi

# ---- 3. the kernel ----
if [ "$(id -u)" -ne 0 ] || ! command -v losetup >/dev/null 2>&1; then
	echo "SKIP: kernel mounts need root and losetup" >&2
elif ! kmount -o loop -t ext3 "$img" "$tmp/k" 2>"$tmp/err"; then
	echo "SKIP: kernel loop mount of ext3 failed: $(cat "$tmp/err")" >&2
else
	refused "put while the kernel has it" "mounted by the kernel through /dev/loop[0-9]+ on $tmp/k" \
		put "$img" "$tmp/host.txt" /x
	refused "ls while the kernel has it (its journal is live)" "needs recovery.*mounted by the kernel" ls "$img" /
	allowed "ls -o noload while the kernel has it" ls -o noload "$img" /
	loopdev=$(findmnt -n -o SOURCE "$tmp/k")
	refused "put on the mounted block device" "in use by the kernel" put "$loopdev" "$tmp/host.txt" /x
	umount "$tmp/k" || fail "umount"
	loopdev=$(losetup -f --show "$img") || fail "losetup"
	allowed "put with a loop device attached, not mounted" put "$img" "$tmp/host.txt" /attached
	allowed "put on the unmounted block device" put "$loopdev" "$tmp/host.txt" /bdev
	losetup -d "$loopdev"
	loopdev=
	if e2fsck -fn "$img" >"$tmp/fsck" 2>&1; then ok; else fail "e2fsck at the end: $(tail -3 "$tmp/fsck")"; fi
	"$NOSTALL" ls "$img" / >"$tmp/out" 2>&1
	for f in attached bdev; do grep -qx "$f" "$tmp/out" || fail "/$f missing: $(cat "$tmp/out")"; done
fi

echo "fs_lock: $passes checks passed, $fails failed"
[ "$fails" -eq 0 ]
