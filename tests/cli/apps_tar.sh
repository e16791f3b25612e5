#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# tar on the FUSE mount in every data mode (tests/lib/apps_common.sh): a
# varied host tree (tests/lib/fs_mktree.py: every file type, sparse files,
# hard links, symlinks, user.* and trusted.* xattrs, odd owners, modes and
# nanosecond times, a large directory) is archived onto the mount (pax format,
# --xattrs, --sparse), extracted there, archived again from the mount and
# extracted back on the host; both extractions must equal the source (type,
# mode, owner, size, links, mtime in ns, contents, symlink targets, xattrs,
# hard-link groups, device numbers). Then unmount, e2fsck -fn and the
# kernel's view. CI: a 500-entry big directory; NOSTALL_APPS_FULL=1: 10,000.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need tar:tar
BIG=$(apps_size 500 10000 200)
src=$APPS_TMP/src
apps_mktree "$src" "$BIG"
TARF=(--warning=no-timestamp --format=posix --xattrs --xattrs-include='*' --sparse --numeric-owner)
FIELDS=type,mode,uid,gid,size,nlink,mtime,data,link,xattr,hlink,rdev
apps_manifest "$src" "$FIELDS" | apps_portable >"$APPS_TMP/src.manifest"
echo "apps_tar: $(wc -l <"$APPS_TMP/src.manifest") entries, modes: $APPS_MODES"

tar_work() { # mnt mode
	local m=$1
	tar "${TARF[@]}" -C "$src" -cpf "$m/a.tar" . || fail "data=$2: tar create onto the mount"
	mkdir "$m/x"
	tar "${TARF[@]}" -C "$m/x" -xpf "$m/a.tar" || fail "data=$2: tar extract on the mount"
	apps_manifest "$m/x" "$FIELDS" | apps_portable >"$APPS_TMP/x.manifest"
	apps_same "$APPS_TMP/src.manifest" "$APPS_TMP/x.manifest" "data=$2: extracted on the mount != source"
	rm -rf "$APPS_TMP/back" "$APPS_TMP/b.tar"
	mkdir "$APPS_TMP/back"
	tar "${TARF[@]}" -C "$m/x" -cpf "$APPS_TMP/b.tar" . || fail "data=$2: tar create from the mount"
	tar "${TARF[@]}" -C "$APPS_TMP/back" -xpf "$APPS_TMP/b.tar" || fail "data=$2: tar extract on the host"
	apps_manifest "$APPS_TMP/back" "$FIELDS" | apps_portable >"$APPS_TMP/back.manifest"
	apps_same "$APPS_TMP/src.manifest" "$APPS_TMP/back.manifest" "data=$2: round trip through the mount != source"
	rm -rf "$APPS_TMP/back" "$APPS_TMP/b.tar"
}

for mode in $APPS_MODES; do
	apps_cycle "$mode" 512M tar_work
done
apps_finish apps_tar
