#!/usr/bin/env bash
# Corrupt orphan lists at mount (docs/write-inode.md, "Orphans"): the chain
# is followed while its links are valid, the valid prefix is cleaned, and a
# bad link ends it with an ext3 error (the filesystem marked as having
# errors) - never a hang. As Linux's ext4_orphan_get: "couldn't read orphan
# inode N (err -116)", the prefix deleted, the mount goes on.
# Cases (each: an unlinked 500-byte file, inode 12, heads the list):
#   deleted  its successor is an all-zero inode whose bitmap bit is set
#            (hung forever in the cleanup loop before the fix);
#   free     its successor is a free inode;
#   range    its successor is out of range;
#   loop     it points to itself.
set -u
: "${NOSTALL:?path to the nostall binary}"
command -v debugfs >/dev/null && command -v mke2fs >/dev/null || { echo "SKIP: e2fsprogs not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() { echo "FAIL $1: $2"; fails=$((fails + 1)); }
head -c 500 /dev/urandom >"$tmp/data"
for c in deleted free range loop; do
	img=$tmp/$c.img
	mke2fs -q -F -t ext3 -b 1024 -N 64 "$img" 4M >/dev/null
	case $c in deleted) next=17 ;; free) next=18 ;; range) next=100000 ;; loop) next=12 ;; esac
	{
		echo "write $tmp/data a"
		echo "sif a links_count 0"
		echo "sif a dtime $next"
		echo "unlink a"
		echo "ssv last_orphan 12"
		[ "$c" = deleted ] && echo "seti <17>"
	} | debugfs -w -f - "$img" >/dev/null 2>&1
	[ "$(debugfs -R 'stat <12>' "$img" 2>/dev/null | grep -c 'Links: 0')" = 1 ] || { bad $c "debugfs did not make the orphan"; continue; }
	rc=0
	timeout 30 "$NOSTALL" mkdir "$img" /x >"$tmp/out" 2>&1 || rc=$?
	if [ "$rc" = 124 ]; then bad $c "the mount hung in the orphan cleanup"; continue; fi
	[ "$rc" = 0 ] || { cat "$tmp/out"; bad $c "mkdir after the cleanup: exit $rc"; continue; }
	grep -q "orphan list" "$tmp/out" || { cat "$tmp/out"; bad $c "no error reported for the bad link"; }
	dumpe2fs -h "$img" 2>/dev/null | grep -q "^Filesystem state:.*with errors" || bad $c "the error is not recorded in the superblock"
	[ "$(dumpe2fs -h "$img" 2>/dev/null | grep -c '^First orphan inode')" = 0 ] || bad $c "the orphan list is still on disk"
	# the orphan itself was deleted: its blocks and number are free again
	# (the new directory may have reused the number)
	e2fsck -fn "$img" >"$tmp/fsck" 2>&1
	grep -q "^Pass 5" "$tmp/fsck" || { cat "$tmp/fsck"; bad $c "e2fsck did not get through"; }
	# (the "deleted" case's own corruption stays: inode 17's bitmap bit,
	# and the free-inode counts that follow from it)
	if [ "$c" = deleted ]; then
		grep -q "Inode bitmap differences: *-17$" "$tmp/fsck" || { cat "$tmp/fsck"; bad $c "e2fsck no longer sees the test's own corruption"; }
		sed -i '/Inode bitmap differences: *-17$/d; /Free inodes count wrong/d' "$tmp/fsck"
	fi
	if grep -qiE "inode 12|orphan|count wrong|bitmap differences" "$tmp/fsck"; then
		cat "$tmp/fsck"; bad $c "e2fsck finds the orphan's leftovers"
	fi
	echo "ok $c: $(grep -m1 'orphan list' "$tmp/out")"
done
[ "$fails" -eq 0 ] || exit 1
