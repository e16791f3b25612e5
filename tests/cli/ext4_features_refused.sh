#!/usr/bin/env bash
# Feature refusals by name (issue 38 item 5; docs/ext3-format.md,
# "Features"): each feature Debian 12's mke2fs can set (man ext4) is made
# with `mkfs.ext4 -O FEATURE` on a small image, and nostall's answer is the
# table's:
#  - refused: the mount fails naming the feature (before any geometry check:
#    journal_dev and bigalloc images are refused by name);
#  - read-only: a read-only mount lists the root, and a writing command
#    fails naming the reason (-o ro not given);
#  - read-write (issue 39: metadata_csum_seed, huge_file, uninit_bg,
#    64bit): nostall's writes are e2fsck-clean;
#  - ignored compat features (sparse_super2, stable_inodes, fast_commit,
#    orphan_file): an ext3 image with one mounts read-write, and e2fsck
#    finds what nostall wrote clean.
# orphan_present (ro_compat) is set by the kernel with orphan_file while
# orphans exist; debugfs sets it here (`feature orphan_present`).
set -eu
: "${NOSTALL:?path to the nostall binary}"
export PATH="$PATH:/sbin:/usr/sbin"
command -v mkfs.ext4 >/dev/null && command -v debugfs >/dev/null || {
	echo "FAIL: e2fsprogs not installed"; exit 1; }
tmp=$(mktemp -d /tmp/nostall-e4f.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
img=$tmp/f.img
mkdir -p "$tmp/src/d"
echo hello >"$tmp/src/d/x"

# mk FEATURE [MKE2FS ARGS...]: an image with the feature; 1 when mke2fs
# refuses it (reported as a skip).
mk() {
	local f=$1
	shift
	rm -f "$img"
	if ! mkfs.ext4 -q -F -O "$f" "$@" "$img" 64M >"$tmp/mkfs" 2>&1; then
		echo "SKIP: mke2fs does not make $f: $(tail -1 "$tmp/mkfs")" >&2
		return 1
	fi
	dumpe2fs -h "$img" 2>/dev/null | grep -q "^Filesystem features:.*\b$f\b" ||
		fail "$f: not in dumpe2fs's features"
}

# refused FEATURE KIND [ARGS]: the mount fails, naming it.
refused() {
	local f=$1 kind=$2
	shift 2
	mk "$f" "$@" || return 0
	if "$NOSTALL" ls -o ro "$img" / >/dev/null 2>"$tmp/err"; then
		fail "$f: mounted"
		return
	fi
	grep -q "unsupported $kind feature.* $f .*refusing to mount" "$tmp/err" ||
		fail "$f: the refusal does not name it: $(cat "$tmp/err")"
}

# readonly FEATURE [ARGS]: read-only mount lists the tree; a write fails
# naming the feature (or, on ext4, the features that make it read-only).
readonly_ok() {
	local f=$1
	shift
	mk "$f" -d "$tmp/src" "$@" || return 0
	[ "$("$NOSTALL" cat -o ro "$img" /d/x 2>"$tmp/err")" = hello ] ||
		fail "$f: read-only mount does not read: $(cat "$tmp/err")"
	if "$NOSTALL" mkdir "$img" /new >/dev/null 2>"$tmp/err"; then
		fail "$f: a read-write mount was allowed"
	fi
	grep -q "read-only" "$tmp/err" || fail "$f: write refusal: $(cat "$tmp/err")"
	case $f in
	^*) ;;
	*) grep -q "\b$f\b" "$tmp/err" || fail "$f: the write refusal does not name it: $(cat "$tmp/err")" ;;
	esac
}

refused casefold incompat
refused ea_inode incompat
refused encrypt incompat
refused inline_data incompat
refused large_dir incompat
refused mmp incompat
refused journal_dev incompat
refused bigalloc ro_compat -C 16384
refused bigalloc ro_compat -b 4096 -C 65536

# readwrite_ok FEATURE [ARGS]: (issue 39) the mount is read-write, a
# directory tree and a file made by nostall are e2fsck-clean, the feature
# kept.
readwrite_ok() {
	local f=$1
	shift
	mk "$f" -d "$tmp/src" "$@" || return 0
	"$NOSTALL" mkdir -p "$img" /new/a/b 2>"$tmp/err" || fail "$f: read-write mount: $(cat "$tmp/err")"
	"$NOSTALL" put "$img" "$tmp/src/d/x" /new/a/x 2>"$tmp/err" || fail "$f: put: $(cat "$tmp/err")"
	[ "$("$NOSTALL" cat "$img" /new/a/x 2>&1)" = hello ] || fail "$f: the new file does not read back"
	e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || fail "$f: e2fsck after a write: $(tail -5 "$tmp/fsck")"
	dumpe2fs -h "$img" 2>/dev/null | grep -q "^Filesystem features:.*\b${f#^}\b" || case $f in ^*) ;; *) fail "$f: feature lost" ;; esac
}

readwrite_ok metadata_csum_seed
readonly_ok quota
readonly_ok project
readonly_ok verity
readwrite_ok huge_file
readwrite_ok uninit_bg -O ^metadata_csum
readwrite_ok 64bit
# ignored FEATURE: a compat feature nostall leaves alone - on an ext3 image
# with it the mount is read-write, and what nostall writes is clean for
# e2fsck, the feature kept.
ignored() {
	local f=$1
	rm -f "$img"
	if ! mke2fs -q -F -t ext3 -O "$f" -d "$tmp/src" "$img" 64M >"$tmp/mkfs" 2>&1; then
		echo "SKIP: mke2fs -t ext3 does not make $f: $(tail -1 "$tmp/mkfs")" >&2
		return 0
	fi
	"$NOSTALL" mkdir "$img" /new 2>"$tmp/err" || fail "$f (ignored): read-write mount: $(cat "$tmp/err")"
	"$NOSTALL" ls "$img" / | grep -qx new || fail "$f (ignored): /new missing"
	e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || fail "$f (ignored): e2fsck after a write: $(tail -5 "$tmp/fsck")"
	dumpe2fs -h "$img" 2>/dev/null | grep -q "^Filesystem features:.*\b$f\b" || fail "$f (ignored): feature lost"
}
ignored orphan_file
ignored stable_inodes
ignored sparse_super2
ignored fast_commit

# orphan_present: the ro_compat half of orphan_file
if mk orphan_file; then
	debugfs -w -R "feature orphan_present" "$img" >/dev/null 2>&1
	if dumpe2fs -h "$img" 2>/dev/null | grep -q "orphan_present"; then
		"$NOSTALL" ls -o ro "$img" / >/dev/null 2>"$tmp/err" ||
			fail "orphan_present: read-only mount: $(cat "$tmp/err")"
		"$NOSTALL" mkdir "$img" /new >/dev/null 2>"$tmp/err" && fail "orphan_present: read-write mount"
		grep -q "orphan_present" "$tmp/err" || fail "orphan_present: not named: $(cat "$tmp/err")"
	else
		echo "SKIP: debugfs does not set orphan_present" >&2
	fi
fi

# metadata_csum_seed: the seed is s_checksum_seed, not the uuid's crc -
# after a uuid change (tune2fs -U, which keeps the seed) the checksums
# still hold, and a changed inode still fails.
if mk metadata_csum_seed -d "$tmp/src"; then
	tune2fs -U random "$img" >/dev/null 2>&1 || fail "tune2fs -U on metadata_csum_seed"
	[ "$("$NOSTALL" cat -o ro "$img" /d/x 2>"$tmp/err")" = hello ] ||
		fail "metadata_csum_seed after a uuid change: $(cat "$tmp/err")"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "ext4_features_refused: ok"
