#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# rsync on the FUSE mount in every data mode (tests/lib/apps_common.sh): the
# varied host tree of tests/lib/fs_mktree.py (hard links, symlinks, sparse
# files, xattrs, devices, odd owners and times) goes onto the mount with
# `rsync -a --checksum` plus -H (hard links), -S (sparse), -X (xattrs) and
# -A (ACLs), must equal the source, a second run must find nothing to do,
# sparse files must stay sparse, and the tree comes back to the host the same
# way and equal. Then unmount, e2fsck -fn and the kernel's view.
# CI: a 500-entry big directory; NOSTALL_APPS_FULL=1: 10,000.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need rsync:rsync
BIG=$(apps_size 500 10000 200)
src=$APPS_TMP/src
apps_mktree "$src" "$BIG"
# A big sparse file: 16 MiB apparent, 2 MiB of data in four places.
for off in 0 5 10 15; do
	head -c 512K /dev/urandom | dd of="$src/sparse-big" bs=1M seek="$off" conv=notrunc status=none
done
truncate -s 16M "$src/sparse-big"
# Every source time in the past: rsync (3.5.0 here, also on tmpfs and ext4)
# leaves a directory's or symlink's mtime alone when it falls in the same
# second as the source's, so a tree copied within a second of its making
# kept the copy's own creation times (with different nanoseconds), and the
# manifest compare failed on the first data mode (docs/write-path.md, Fixed).
find "$src" -depth -exec touch -h -d '2020-01-02 03:04:05.123456789' {} +
RS=(-aHSAX --checksum --numeric-ids)
FIELDS=type,mode,uid,gid,size,nlink,mtime,data,link,xattr,hlink,rdev
apps_manifest "$src" "$FIELDS" | apps_portable >"$APPS_TMP/src.manifest"
echo "apps_rsync: $(wc -l <"$APPS_TMP/src.manifest") entries, modes: $APPS_MODES"

rsync_work() { # mnt mode
	local m=$1 out blocks
	rsync "${RS[@]}" "$src/" "$m/r/" || fail "data=$2: rsync onto the mount"
	apps_manifest "$m/r" "$FIELDS" | apps_portable >"$APPS_TMP/r.manifest"
	apps_same "$APPS_TMP/src.manifest" "$APPS_TMP/r.manifest" "data=$2: rsync copy on the mount != source"
	out=$(rsync "${RS[@]}" -i "$src/" "$m/r/")
	[ -z "$out" ] || fail "data=$2: a second rsync still finds changes: $(echo "$out" | head -5 | tr '\n' ' ')"
	blocks=$(stat -c %b "$m/r/sparse-big")
	[ "$blocks" -lt $((8 * 2048)) ] || fail "data=$2: sparse-big uses $blocks sectors on the mount (not sparse)"
	rm -rf "$APPS_TMP/back"
	rsync "${RS[@]}" "$m/r/" "$APPS_TMP/back/" || fail "data=$2: rsync from the mount"
	apps_manifest "$APPS_TMP/back" "$FIELDS" | apps_portable >"$APPS_TMP/back.manifest"
	apps_same "$APPS_TMP/src.manifest" "$APPS_TMP/back.manifest" "data=$2: rsync round trip != source"
	rm -rf "$APPS_TMP/back"
}

for mode in $APPS_MODES; do
	apps_cycle "$mode" 512M rsync_work
done
apps_finish apps_rsync
