#!/usr/bin/env bash
# nostall-test: release-only (a 2 GiB sparse image recovered five ways; the library's recovery runs under ASan in test_jbd_crash and test_fs_guarded_crash)
# The crash images of tests/crash-images/ (real crashes of a nostall mount,
# README.md there): each is recovered by nostall, e2fsprogs and (as root)
# the kernel, and the results must agree (tests/lib/replay_oracles.sh):
# nostall's replay equals debugfs journal_run's block for block; nostall's
# replay + orphan cleanup equals e2fsck -E journal_only's and the kernel's
# (each peer's known differences named); e2fsck -fn is clean after nostall's
# recovery and after a nostall mount + umount.
# sigkill-fsstress.img: data=guarded, 4 fsstress processes, SIGKILL. Before
# the truncate fix its orphan cleanup kept 8 emptied indirect blocks that
# the kernel and e2fsck free.
set -u
: "${NOSTALL:?path to the nostall binary}"
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export NOSTALL PATH="$PATH:/sbin:/usr/sbin"
cd "$(dirname "$0")/../.."
for t in e2fsck debugfs zstd python3; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed" >&2; exit 77; }
done
. tests/lib/replay_oracles.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
for z in tests/crash-images/*.img.zst; do
	name=$(basename "$z" .img.zst)
	zstd -q -d --sparse "$z" -o "$tmp/$name.img" || { echo "FAIL $name: zstd"; fails=$((fails + 1)); continue; }
	REPLAY_FUSE=$([ -e /dev/fuse ] && echo 1 || echo 0) replay_check "$tmp/$name.img" "$tmp/$name" "$name" ||
		fails=$((fails + 1))
	rm -f "$tmp/$name.img"
done
[ "$fails" -eq 0 ] || { echo "FAIL: $fails crash images recovered differently"; exit 1; }
echo "all crash images recover alike"
