#!/usr/bin/env bash
# The write-path test matrix of issue 39 ("Done when", first bullet): the
# random-operation model test, the kernel comparison both ways, the ENOSPC
# tests, the 100,000-entry htree test, the fault-injection tests and the
# real-application tests on the FUSE mount, each run on
#
#   ext4-4k          mke2fs -t ext4 (Debian 12's default set), 4 KiB blocks
#   ext4-1k          the same, 1 KiB blocks
#   ext4-nocsum-4k   mke2fs -t ext4 -O ^metadata_csum,uninit_bg, 4 KiB
#   ext4-nocsum-1k   the same, 1 KiB blocks
#   ext2             mke2fs -t ext2, the tests' own block sizes
#   ext3             (only when named: the runner's own check; `make test`
#                    runs every test on ext3 anyway)
#
# Usage: NOSTALL=build/nostall bash tests/lib/write_matrix.sh [COMBO...]
# (default: the five above). `make test` runs it as three entries under
# tests/run.sh's 600 s per test: tests/cli/ext4_write_matrix.sh (ext4-4k,
# ext4-1k), tests/cli/ext4_nocsum_write_matrix.sh (the two nocsum ones) and
# tests/cli/ext2_write_matrix.sh (ext2).
#
# One line per (test, combination): "ok", "FAIL" or "SKIP" with the time.
# The tests take the filesystem from tests/lib/testfs.{h,sh}
# (NOSTALL_TEST_FS, NOSTALL_TEST_MKFS_OPTS, NOSTALL_TEST_BLOCK_SIZE); each
# runs e2fsck -fn on every image it makes after every unmount (the model
# test also at every check point), so "ok" means e2fsck -fn was clean after
# each. A combination the library refuses to mount read-write (ext4 and
# ext2 before their write support lands) gives one "SKIP: COMBO: the
# library's message" line and nothing else: found by trying (a fresh image
# of that combination, `nostall mkdir` on it), never by name, so the matrix
# turns itself on when write support is merged.
#
# Scaled for CI (measured on ext3, all block sizes, on the shared 2-core
# VM: model 6 s, kernel-reads 68 s, kernel-writes 53 s, ENOSPC 11 s, htree
# 16 s, fault 2 s, six applications in one data mode at the small sizes
# 122 s; about 4 min per ext4 pair, 5 min for ext2, ~14 min of `make
# test`'s release stream when all of them run):
#   - one block size per ext4 combination (NOSTALL_TEST_BLOCK_SIZE): the
#     tests that run both (model, ENOSPC, fault, kernel compare/modify) run
#     half their cases per combination, all of them over the pair;
#   - the model test: NOSTALL_FSOPS=1000 operations per data mode (3000 on
#     ext3), check point every 250;
#   - htree, 100,000 entries at 1 KiB blocks: unscaled, in the 1 KiB
#     combination of each ext4 feature set and on ext2 (the 4 KiB ones skip
#     it: the test is a 1 KiB one);
#   - the FUSE applications: one data mode per combination, a different
#     one in each (guarded, ordered, journal, writeback over the four ext4
#     combinations; guarded on ext2), at the sanitized builds' sizes
#     (NOSTALL_APPS_SMALL=1: a third of the CI sizes), and on ext4 half of
#     them per combination (tar, git, sqlite at 4 KiB; make, cp, rsync at
#     1 KiB: each application once per feature set); all six on ext2;
#   - ext2 has no journal: the tests mount it without data= and
#     data_err= (tests/lib/testfs: refused there, as by the kernel's ext4
#     driver), the model test once per block size; the fault-injection test
#     (journal aborts, data_err=) does not run on it;
#   - the kernel comparison (the kernel writes, nostall reads) runs its
#     kernel-built images only (not the debugfs-built extra), and neither
#     side runs its 2 KiB configuration on ext4 (block sizes of the
#     combination only).
# NOSTALL_MATRIX_COMBOS="ext4-4k ext2" picks combinations as the arguments
# do, NOSTALL_MATRIX_TESTS="model htree" picks tests; NOSTALL_MATRIX_FULL=1
# runs every test unscaled in every combination (all data modes and
# applications, 3000 operations) - a long run, not for CI.
# Needs the release test binaries next to $NOSTALL (build/tests/), mke2fs,
# e2fsck; the kernel and FUSE parts as their tests need (root, /dev/fuse).
set -u
: "${NOSTALL:?path to the nostall binary}"
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
here=$(cd "$(dirname "$0")/../.." && pwd)
bindir=$(dirname "$NOSTALL")/tests
export PATH="$PATH:/sbin:/usr/sbin"
for t in mke2fs e2fsck; do command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }; done
tmp=$(mktemp -d /tmp/nostall-e4w.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
full=${NOSTALL_MATRIX_FULL:-0}

# name|type|mke2fs options|block size|apps' data mode
all_combos=(
	"ext4-4k|ext4||4096|guarded"
	"ext4-1k|ext4||1024|ordered"
	"ext4-nocsum-4k|ext4|-O ^metadata_csum,uninit_bg|4096|journal"
	"ext4-nocsum-1k|ext4|-O ^metadata_csum,uninit_bg|1024|writeback"
	"ext2|ext2|||guarded"
)
# COMBO arguments, else NOSTALL_MATRIX_COMBOS, else the five; ext3 only when named
want_combos=${*:-${NOSTALL_MATRIX_COMBOS:-}}
[[ " $want_combos " == *" ext3 "* ]] && all_combos+=("ext3|ext3|||guarded")
for c in $want_combos; do
	printf '%s\n' "${all_combos[@]}" | grep -q "^$c|" ||
		{ echo "FAIL: unknown combination '$c' (ext4-4k ext4-1k ext4-nocsum-4k ext4-nocsum-1k ext2 ext3)"; exit 2; }
done
all_tests="model kernel-reads kernel-writes enospc htree fault apps"
want_tests=${NOSTALL_MATRIX_TESTS:-$all_tests}

fails=0 passes=0 skips=0
line() { # status test combo seconds [detail]
	printf '%-5s %-14s %-15s %4ss%s\n' "$1" "$2" "$3" "$4" "${5:+  $5}"
}

# Does the library write this combination? A fresh 32 MiB image, a
# directory made by the CLI (a read-write library mount), e2fsck -fn.
# Prints the reason and returns 1 when it does not.
probe() { # block size ("": mke2fs's choice)
	local img="$tmp/probe.img" out
	rm -f "$img"
	# shellcheck disable=SC2046
	if ! out=$(testfs_mke2fs $([ -n "$1" ] && echo "-b $1") "$img" 32M 2>&1); then
		echo "mke2fs $(testfs_label): $out"
		return 2
	fi
	if ! out=$("$NOSTALL" mkdir "$img" /matrix-probe 2>&1); then
		# read-only it must mount (the read side is there for every set)
		if "$NOSTALL" ls "$img" / >/dev/null 2>&1; then
			printf '%s\n' "$out" | head -n 1 | sed 's/^nostall mkdir: cannot mount [^:]*: //'
			return 1
		fi
		echo "not even a read-only mount: $(printf '%s' "$out" | head -n 1)"
		return 2
	fi
	if ! out=$(e2fsck -fn "$img" 2>&1); then
		echo "e2fsck -fn after nostall mkdir: $(printf '%s' "$out" | tail -n 3 | tr '\n' ' ')"
		return 2
	fi
	rm -f "$img"
	return 0
}

# run_c BINARY [VAR=VALUE...]: a cmocka test binary; 0 when it passed.
run_c() {
	local bin=$bindir/$1
	shift
	[ -x "$bin" ] || { echo "not built: $bin (make tests)" >"$tmp/out"; return 2; }
	env "$@" "$bin" >"$tmp/out" 2>&1
}

# run_sh SCRIPT [VAR=VALUE...]: a CLI test script; 0 when it passed.
run_sh() {
	local script=$here/tests/cli/$1.sh
	shift
	env "$@" NOSTALL="$NOSTALL" bash "$script" >"$tmp/out" 2>&1
}

# One test on the current combination: its status line.
one() { # test combo bs appmode
	local t=$1 c=$2 bs=$3 mode=$4 rc=0 t0=$SECONDS detail="" ops=1000 check=250
	[ "$full" = 1 ] && ops=3000 check=300
	case $t in
	model)
		run_c test_fs_random NOSTALL_FSOPS="$ops" NOSTALL_FSCHECK="$check" || rc=$? ;;
	kernel-reads) # the kernel writes, nostall reads (fs_kernel_compare.sh)
		if [ "$full" = 1 ]; then run_sh fs_kernel_compare || rc=$?
		else run_sh fs_kernel_compare NOSTALL_FS_KERNEL_ONLY=1 || rc=$?; fi ;;
	kernel-writes) # nostall changes, the kernel reads (fs_kernel_modify.sh)
		local cfgs="1024 128;4096 256"
		[ "$full" = 1 ] && cfgs="1024 128;4096 256;2048 256 | -E hash_alg=tea"
		run_sh fs_kernel_modify NOSTALL_KMOD_CFGS="$cfgs" || rc=$? ;;
	enospc)
		run_c test_fs_enospc || rc=$? ;;
	htree)
		if [ -n "$bs" ] && [ "$bs" != 1024 ]; then
			line SKIP "$t" "$c" 0 "a 1 KiB test: runs in the 1 KiB combination"
			skips=$((skips + 1))
			return
		fi
		run_c test_fs_bigdir NOSTALL_TEST_BLOCK_SIZE= || rc=$? ;;
	fault)
		if ! testfs_has_journal; then
			line SKIP "$t" "$c" 0 "journal aborts and data_err=: a journal's (ext2's write errors: ext2_write.sh)"
			skips=$((skips + 1))
			return
		fi
		run_c test_fs_fault || rc=$? ;;
	apps)
		local a modes=$mode apps="tar git sqlite make cp rsync"
		[ "$full" = 1 ] && modes="journal ordered writeback guarded"
		if [ "$full" != 1 ] && [ "$NOSTALL_TEST_FS" = ext4 ]; then
			[ "$bs" = 4096 ] && apps="tar git sqlite"
			[ "$bs" = 1024 ] && apps="make cp rsync"
		fi
		: >"$tmp/apps.out"
		for a in $apps; do
			if ! run_sh "apps_$a" NOSTALL_DATA_MODES="$modes" NOSTALL_APPS_SMALL=$((1 - full)); then
				rc=1
				detail="$detail apps_$a"
			fi
			{ echo "== apps_$a"; cat "$tmp/out"; } >>"$tmp/apps.out"
		done
		cp "$tmp/apps.out" "$tmp/out"
		detail=${detail:+failed:$detail}
		[ -z "$detail" ] && detail="data=${modes// /,}: $apps" ;;
	esac
	local secs=$((SECONDS - t0))
	if [ "$rc" -eq 0 ]; then
		line ok "$t" "$c" "$secs" "$detail"
		passes=$((passes + 1))
	elif [ "$rc" -eq 77 ]; then
		line SKIP "$t" "$c" "$secs" "$(grep -m1 'SKIP' "$tmp/out")"
		skips=$((skips + 1))
	else
		line FAIL "$t" "$c" "$secs" "$detail"
		tail -n 30 "$tmp/out" | sed 's/^/    /'
		fails=$((fails + 1))
	fi
}

echo "issue 39 write matrix: tests [$want_tests]$([ "$full" = 1 ] && echo ', unscaled (NOSTALL_MATRIX_FULL=1)')"
for spec in "${all_combos[@]}"; do
	IFS='|' read -r c type opts bs mode <<<"$spec"
	if [ -n "$want_combos" ] && [[ " $want_combos " != *" $c "* ]]; then
		continue
	fi
	export NOSTALL_TEST_FS=$type NOSTALL_TEST_MKFS_OPTS=$opts NOSTALL_TEST_BLOCK_SIZE=$bs
	# shellcheck source=../lib/testfs.sh
	. "$here/tests/lib/testfs.sh"
	why=$(probe "$bs")
	case $? in
	0) ;;
	1)
		echo "SKIP: $c ($(testfs_label)${bs:+, $bs-byte blocks}): the library does not write it: $why"
		skips=$((skips + 1))
		continue ;;
	*)
		line FAIL probe "$c" 0 "$why"
		fails=$((fails + 1))
		continue ;;
	esac
	for t in $want_tests; do
		one "$t" "$c" "$bs" "$mode"
	done
done
unset NOSTALL_TEST_FS NOSTALL_TEST_MKFS_OPTS NOSTALL_TEST_BLOCK_SIZE
echo "write matrix: $passes ok, $fails failed, $skips skipped"
[ "$fails" -eq 0 ]
