#!/usr/bin/env bash
# Build the libFuzzer target fuzz/fuzz_mount.c (clang, -fsanitize=fuzzer,
# address,undefined) against the whole library and run it for a bounded time
# from a seed corpus of small images made by mke2fs and debugfs (ext3 with a
# journal at 1 KiB and 2 KiB blocks, ext2 at 1 KiB and 4 KiB, ext4 (extents,
# 64bit, flex_bg, with and without metadata_csum), with files in
# direct/indirect/double-indirect blocks, holes, fast and slow symlinks,
# xattrs in the inode and in a block, a fifo, a device, an htree directory)
# and, when build/nostall exists, `nostall mkfs` images.
#
#   fuzz/run.sh [SECONDS] [extra libFuzzer flags]     (default 60 s)
#   FUZZ_TARGET=write fuzz/run.sh ...   the write-path target fuzz/fuzz_write.c
#                                       (mount read-write, change, unmount)
#
# Work files go to fuzz/work/ (corpus grows there between runs, artifacts in
# fuzz/work/artifacts/). A crash input found there belongs in
# tests/fuzz-regress/ once fixed (tests/test_fuzz_regress.c replays it).
set -eu
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
export PATH="$PATH:/sbin:/usr/sbin"
work=fuzz/work
obj=$work/obj
mkdir -p "$obj" "$work/corpus" "$work/seeds" "$work/artifacts"

CC=${CC_FUZZ:-clang}
flags="-D_GNU_SOURCE -Isrc -Iinclude -Ifuzz -std=c17 -g -O1 -pthread -fno-omit-frame-pointer
 -fsanitize=address,undefined -fno-sanitize-recover=all -Wall -Wextra -Werror -Wno-unused-parameter"
objs=()
for f in $(find src -name "*.c" | sort); do
	# FUZZ_SKIP: space-separated globs of sources to leave out (half-written files)
	skip=0
	for pat in ${FUZZ_SKIP:-}; do case $f in $pat) skip=1 ;; esac; done
	[ "$skip" -eq 0 ] || continue
	o=$obj/$(printf '%s' "${f%.c}" | tr / _).o
	if [ ! -e "$o" ] || [ "$f" -nt "$o" ] || [ -n "$(find src include -name '*.h' -newer "$o" | head -1)" ]; then
		$CC $flags -fsanitize=fuzzer-no-link -c "$f" -o "$o"
	fi
	objs+=("$o")
done
target=${FUZZ_TARGET:-mount}
case $target in
mount | write) ;;
*) echo "fuzz/run.sh: FUZZ_TARGET must be mount or write, not '$target'" >&2; exit 2 ;;
esac
$CC $flags -fsanitize=fuzzer "fuzz/fuzz_$target.c" "${objs[@]}" -luring -lnbd -lpthread -lm -o "$work/fuzz_$target"

# ---- seeds ----
seed() { # name size mke2fs-args...
	local name=$1 size=$2 img="$work/seeds/$1"
	shift 2
	[ -s "$img" ] && return 0
	rm -f "$img"
	truncate -s "$size" "$img"
	mke2fs -q -F -E root_owner=0:0 "$@" "$img" >/dev/null
	local src=$work/seedsrc
	rm -rf "$src" && mkdir -p "$src"
	printf 'hello\n' >"$src/small"
	head -c 20000 /dev/urandom >"$src/indirect"
	head -c 300000 /dev/urandom >"$src/dindirect"
	{
		echo "mkdir d"
		echo "mkdir d/e"
		echo "write $src/small small"
		echo "write $src/indirect d/indirect"
		echo "write $src/dindirect d/e/dind"
		echo "symlink fast small"
		echo "symlink d/slow /$(printf 'x%.0s' $(seq 1 120))"
		echo "symlink loop loop"
		echo "mknod fifo p"
		echo "mknod null c 1 3"
		echo "ln small d/hard"
		echo "sif small links_count 2"
		echo "ea_set small user.a 1"
		echo "ea_set d user.dir value"
		echo "ea_set d/indirect trusted.big $(printf 'v%.0s' $(seq 1 400))"
		echo "mkdir big"
		for i in $(seq 1 150); do echo "write /dev/null big/entry-name-number-$i"; done
	} >"$work/seed.cmds"
	debugfs -w -f "$work/seed.cmds" "$img" >/dev/null 2>&1
	e2fsck -fyD "$img" >/dev/null 2>&1 || true # builds the htree index of big/
	rm -rf "$src" "$work/seed.cmds"
}
seed ext3-1k 3M -t ext3 -b 1024 -I 128 -N 256 -J size=1
seed ext3-2k 6M -t ext3 -b 2048 -I 256 -N 256 -J size=2
seed ext2-1k 384K -t ext2 -b 1024 -I 256 -N 256
seed ext2-4k 640K -t ext2 -b 4096 -I 128 -N 256
# ext4 (issue 38): extents (debugfs writes extent files on an extent
# filesystem), 64bit descriptors, flex_bg, metadata_csum; and without the
# checksums, so that mutations reach the structural checks
seed ext4-1k 4M -t ext4 -b 1024 -N 256 -J size=1
seed ext4-1k-nocsum 4M -t ext4 -b 1024 -N 256 -J size=1 -O ^metadata_csum
if [ -x build/nostall ] && [ ! -s "$work/seeds/nostall-8m" ]; then
	build/nostall mkfs -q -b 4096 -N 64 -J 1024 -U 01234567-89ab-cdef-0123-456789abcdef -T 1700000000 \
		"$work/seeds/nostall-8m" 8M || true
fi

corpus=$work/corpus
[ "$target" = mount ] || corpus=$work/corpus-$target
mkdir -p "$corpus"
echo "fuzzing fuzz_$target for $secs s (corpus $corpus, artifacts $work/artifacts)"
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
	"$work/fuzz_$target" "$corpus" "$work/seeds" -max_total_time="$secs" -max_len=$((9 << 20)) \
	-rss_limit_mb=4096 -timeout=20 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$@"
