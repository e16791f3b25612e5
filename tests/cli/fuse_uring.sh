#!/usr/bin/env bash
# FUSE over io_uring (tools/fuse/uring.c, docs/fuse.md "io_uring"): with the
# fuse module's enable_uring on (set here, restored after), a mount with
# -o uring serves its requests through the kernel's per-CPU rings:
#   1. file operations through the kernel (create, write and read back in
#      sizes up to the 1 MiB payload, append, rename, hard and symbolic
#      links, xattrs, truncate, readdir of 300 names, fsync, unlink), the
#      data compared byte for byte; NOSTALL_FUSE_STATS shows requests served
#      by the rings; unmount, e2fsck -fn clean, the library reads the same;
#   2. the default (nouring): the same round trip, everything through
#      /dev/fuse (no ring requests) with the parameter on;
#   3. -o uring_idle: the round trip again, through the rings;
#   4. -o uring with the parameter off: the mount says the kernel does not
#      offer it, and /dev/fuse serves the round trip.
# Needs root, /dev/fuse and a kernel with the parameter: exits 77 otherwise.
set -u
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export PATH="$PATH:/sbin:/usr/sbin"
param=/sys/module/fuse/parameters/enable_uring
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }
[ -w "$param" ] || { echo "SKIP: this kernel has no FUSE over io_uring ($param)"; exit 77; }
for tool in mke2fs e2fsck setfattr getfattr; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done

tmp=$(mktemp -d /tmp/nostall-uring.XXXXXX)
m=$tmp/m
mkdir -p "$m"
saved=$(cat "$param")
cleanup() {
	mountpoint -q "$m" 2>/dev/null && { umount "$m" 2>/dev/null || umount -l "$m"; }
	echo "$saved" >"$param"
	rm -rf "$tmp"
}
trap cleanup EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}log_path=$tmp/san"
echo Y >"$param"

# ring_count STATS: requests the rings served (the stats' uring line)
ring_count() { sed -n 's/^uring \([0-9]*\)$/\1/p' "$1" | tail -1; }

# roundtrip LABEL OPTS: mount with OPTS, work through the kernel, unmount;
# the ring requests served in $rings.
roundtrip() {
	local label=$1 opts=$2 img=$tmp/$1.img stats=$tmp/$1.stats
	rings=""
	mke2fs -q -F -t ext4 "$img" 256M || { fail "$label: mke2fs"; return; }
	rm -f "$stats"
	if ! NOSTALL_FUSE_STATS=$stats "$NOSTALL" mount ${opts:+-o "$opts"} "$img" "$m"; then
		fail "$label: mount"
		return
	fi
	head -c 3500000 /dev/urandom >"$tmp/big"
	head -c 4096 /dev/urandom >"$tmp/small"
	cp "$tmp/big" "$m/big" && cp "$tmp/small" "$m/small" || fail "$label: copy in"
	mkdir -p "$m/d/e" || fail "$label: mkdir"
	for i in $(seq 1 300); do echo "$i" >"$m/d/f$i"; done
	[ "$(ls "$m/d" | wc -l)" -eq 301 ] || fail "$label: readdir lists $(ls "$m/d" | wc -l) of 301"
	[ "$(cat "$m/d/f123")" = 123 ] || fail "$label: d/f123 reads back $(cat "$m/d/f123")"
	echo more >>"$m/small" && mv "$m/small" "$m/d/e/moved" || fail "$label: append + rename"
	ln "$m/big" "$m/big.link" && ln -s ../big "$m/d/sym" || fail "$label: links"
	[ "$(readlink "$m/d/sym")" = ../big ] || fail "$label: readlink"
	[ "$(stat -c %h "$m/big")" = 2 ] || fail "$label: link count $(stat -c %h "$m/big")"
	setfattr -n user.k -v v1 "$m/big" || fail "$label: setfattr"
	[ "$(getfattr --only-values -n user.k "$m/big" 2>/dev/null)" = v1 ] || fail "$label: getfattr"
	truncate -s 1000000 "$m/big.link" || fail "$label: truncate"
	sync "$m/big" || fail "$label: fsync"
	cmp -n 1000000 "$tmp/big" "$m/big" || fail "$label: big differs after truncate"
	[ "$(stat -c %s "$m/big")" = 1000000 ] || fail "$label: size $(stat -c %s "$m/big")"
	{ cat "$tmp/small"; echo more; } | cmp - "$m/d/e/moved" || fail "$label: moved file differs"
	dd if="$m/big" of=/dev/null bs=1M 2>/dev/null || fail "$label: 1 MiB reads"
	rm "$m/d/f7" && [ ! -e "$m/d/f7" ] || fail "$label: unlink"
	"$NOSTALL" umount "$m" || fail "$label: umount"
	e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || { fail "$label: e2fsck"; cat "$tmp/fsck"; }
	"$NOSTALL" cat "$img" /d/e/moved >"$tmp/lib.moved" 2>/dev/null &&
		{ cat "$tmp/small"; echo more; } | cmp -s - "$tmp/lib.moved" || fail "$label: the library reads otherwise"
	rings=$(ring_count "$stats")
}

rings=""
roundtrip uring uring
n=$rings
[ -n "$n" ] && [ "$n" -gt 300 ] || fail "-o uring: ${n:-no} requests through the rings (want > 300)"
echo "-o uring: $n requests through the rings"

roundtrip nouring ""
n=$rings
[ "${n:-x}" = 0 ] || fail "default mount: ${n:-no figure} requests through the rings (want 0)"

roundtrip idle uring_idle
n=$rings
[ -n "$n" ] && [ "$n" -gt 300 ] || fail "-o uring_idle: ${n:-no} requests through the rings"

echo N >"$param"
roundtrip off uring 2>"$tmp/off.err"
n=$rings
[ "${n:-x}" = 0 ] || fail "-o uring, parameter off: ${n:-no figure} requests through the rings (want 0)"
grep -q "does not offer FUSE over io_uring" "$tmp/off.err" ||
	fail "-o uring, parameter off: no word of it ($(cat "$tmp/off.err"))"

if ls "$tmp"/san* >/dev/null 2>&1; then
	fail "sanitizer reports"
	cat "$tmp"/san*
fi
[ "$fails" -eq 0 ] && echo "PASS" && exit 0
exit 1
