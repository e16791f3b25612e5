#!/usr/bin/env bash
# POSIX/ext3 semantics on the FUSE mount against the kernel's ext3 (issue 11,
# item 2): tests/conform/conform.c (built here with cc) runs as root, switching
# uids for the permission cases, first on the kernel's ext3 on a loop device
# (the reference: every check must pass there), then on `nostall mount` with
# its shipped defaults (no options) in each data mode; every check must pass
# on both. Then the ACL round trip: ACLs set through the kernel's ext3 show up
# on the FUSE mount, ACLs set on the FUSE mount show up under a kernel mount,
# and the image stays e2fsck -fn clean.
# Needs root, /dev/fuse and loop mounts: exits 77 with the reason otherwise.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
src=$(cd "$(dirname "$0")/../conform" && pwd)
export PATH="$PATH:/sbin:/usr/sbin"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
for tool in mke2fs e2fsck cc setfacl getfacl; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

tmp=$(mktemp -d /tmp/nostall-conform.XXXXXX)
chmod 755 "$tmp" # the checks switch to other users, who must reach the mounts
mkdir -p "$tmp/k" "$tmp/m"
cleanup() {
	mountpoint -q "$tmp/k" && umount "$tmp/k"
	mountpoint -q "$tmp/m" && { "$NOSTALL" umount "$tmp/m" || umount -l "$tmp/m"; }
	rm -rf "$tmp"
}
trap cleanup EXIT
# daemons leave the terminal once mounted: sanitizer reports go to files
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}log_path=$tmp/san"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}log_path=$tmp/san"
san_check() {
	if ls "$tmp"/san.* >/dev/null 2>&1; then
		cat "$tmp"/san.*
		fail "sanitizer reports (above)"
	fi
}
cc -O1 -Wall -Wextra -Werror -o "$tmp/conform" "$src/conform.c" || { fail "conform.c does not build"; exit 1; }

truncate -s 8M "$tmp/probe.img"
if ! mke2fs -q -F -t ext3 "$tmp/probe.img" || ! kmount -o loop -t ext3 "$tmp/probe.img" "$tmp/k" 2>/dev/null; then
	echo "SKIP: the kernel cannot loop-mount ext3 here"
	exit 77
fi
umount "$tmp/k"

mkimg() { truncate -s 0 "$1"; mke2fs -q -F -t ext3 -I 256 -b 4096 "$1" 64M >/dev/null 2>&1; }

# 1. the reference: the kernel's ext3
mkimg "$tmp/k.img"
kmount -o loop -t ext3 "$tmp/k.img" "$tmp/k" && mkdir "$tmp/k/t"
out=$("$tmp/conform" "$tmp/k/t") || { echo "$out" | grep -v '^ok'; fail "the kernel's ext3 fails the checks (the reference)"; }
echo "kernel ext3: $(echo "$out" | tail -1)"
umount "$tmp/k"

# 2. nostall mount, default options, each data mode (default first)
for mode in "" data=journal data=writeback; do
	mkimg "$tmp/f.img"
	if ! "$NOSTALL" mount ${mode:+-o $mode} "$tmp/f.img" "$tmp/m"; then
		fail "nostall mount ${mode:-(defaults)}"; continue
	fi
	mkdir "$tmp/m/t"
	out=$("$tmp/conform" "$tmp/m/t") || { echo "$out" | grep -v '^ok'; fail "nostall mount ${mode:-(defaults)}: checks failed"; }
	echo "nostall ${mode:-defaults}: $(echo "$out" | tail -1)"
	"$NOSTALL" umount "$tmp/m" || fail "nostall umount ($mode)"
	e2fsck -fn "$tmp/f.img" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "e2fsck after the checks ($mode)"; }
done

# 3. ACL round trip between the kernel's ext3 and the FUSE mount
mkimg "$tmp/r.img"
kmount -o loop -t ext3 "$tmp/r.img" "$tmp/k"
mkdir "$tmp/k/kdir" && touch "$tmp/k/kfile"
setfacl -m u:1001:rwx,g:2001:r-x,m::rwx "$tmp/k/kfile"
setfacl -d -m u:1002:rw,g::r-x "$tmp/k/kdir"
(cd "$tmp/k" && getfacl -p kfile kdir) >"$tmp/kacl"
umount "$tmp/k"
"$NOSTALL" mount "$tmp/r.img" "$tmp/m" || fail "mount for the ACL round trip"
(cd "$tmp/m" && getfacl -p kfile kdir) >"$tmp/facl"
cmp -s "$tmp/kacl" "$tmp/facl" || { diff "$tmp/kacl" "$tmp/facl"; fail "kernel-set ACLs differ on the FUSE mount"; }
mkdir "$tmp/m/fdir" && touch "$tmp/m/ffile"
setfacl -m u:1002:r--,g:2002:rw-,m::rw- "$tmp/m/ffile"
setfacl -d -m u:1001:rwx,o::--- "$tmp/m/fdir"
touch "$tmp/m/fdir/inherit"
(cd "$tmp/m" && getfacl -p ffile fdir fdir/inherit) >"$tmp/facl2"
"$NOSTALL" umount "$tmp/m" || fail "nostall umount (ACL round trip)"
e2fsck -fn "$tmp/r.img" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "e2fsck after the ACL round trip"; }
kmount -o loop,ro -t ext3 "$tmp/r.img" "$tmp/k"
(cd "$tmp/k" && getfacl -p ffile fdir fdir/inherit) >"$tmp/kacl2"
umount "$tmp/k"
cmp -s "$tmp/facl2" "$tmp/kacl2" || { diff "$tmp/facl2" "$tmp/kacl2"; fail "FUSE-set ACLs differ under the kernel"; }
grep -q 'user:1001:rwx' "$tmp/kacl2" || fail "the inherited ACL is missing under the kernel"

san_check
[ "$fails" -eq 0 ] && echo "fuse_conform: all passed"
[ "$fails" -eq 0 ]
