#!/usr/bin/env bash
# nostall-test: release-only (FUSE mounts killed mid-load; the recovery code runs under ASan in test_jbd_crash, test_fs_crash and test_fs_guarded_crash)
# Real crashes: a `nostall mount` under a multi-process load is killed with
# SIGKILL at a random time, the mount detached (umount -l), and the image
# left behind is recovered by nostall, e2fsprogs and (as root) the kernel
# (tests/lib/replay_oracles.sh): nostall's replay equals debugfs
# journal_run's, its replay + orphan cleanup equals e2fsck -E journal_only's
# and the kernel's, and e2fsck -fn is clean after nostall's recovery and
# after a nostall mount + umount. Each round varies the data mode (guarded,
# the default, most often), the block size, the load (tests/lib/fsload.py:
# files, sparse writes, truncates, xattrs, renames, links, orphans, fsyncs;
# stress-ng's hdd/dir/rename/link/dentry stressors as in the issue that
# found the divergence) and the kill time (1.5-6 s).
#   CRASH_ROUNDS (default 8), CRASH_SEED (default: time; printed) - the
#   closing run of issue 35 used CRASH_ROUNDS=20.
set -u
: "${NOSTALL:?path to the nostall binary}"
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export NOSTALL PATH="$PATH:/sbin:/usr/sbin"
cd "$(dirname "$0")/../.."
[ -e /dev/fuse ] || { echo "SKIP: no /dev/fuse" >&2; exit 77; }
for t in e2fsck debugfs python3 fusermount3; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed" >&2; exit 77; }
done
. tests/lib/replay_oracles.sh
rounds=${CRASH_ROUNDS:-8}
seed=${CRASH_SEED:-$(date +%s)}
echo "crash_sigkill: seed $seed, $rounds rounds (CRASH_SEED=$seed reruns)"
RANDOM=$seed
tmp=$(mktemp -d)
mnt=$tmp/mnt
mkdir -p "$mnt"
daemon=
loadpids=()
cleanup() {
	[ -n "$daemon" ] && kill -9 "$daemon" 2>/dev/null
	for p in "${loadpids[@]}"; do kill -9 "$p" 2>/dev/null; done
	fusermount3 -uz "$mnt" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
modes=(guarded guarded ordered guarded journal writeback guarded ordered)
fails=0
for ((r = 0; r < rounds; r++)); do
	mode=${modes[r % ${#modes[@]}]}
	bs=$([ $((r % 3)) -eq 1 ] && echo 1024 || echo 4096)
	load=$([ $((r % 4)) -eq 3 ] && command -v stress-ng >/dev/null && echo stress-ng || echo fsload)
	ms=$((1500 + RANDOM % 4500))
	lseed=$((seed + r))
	label="round $r ($mode, ${bs}B blocks, $load seed $lseed, kill at ${ms} ms)"
	img=$tmp/img
	rm -f "$img"
	"$NOSTALL" mkfs -q -b "$bs" "$img" 768M >/dev/null || { echo "FAIL $label: mkfs"; fails=$((fails + 1)); continue; }
	"$NOSTALL" mount -f -o "data=$mode" "$img" "$mnt" >"$tmp/daemon.out" 2>&1 &
	daemon=$!
	for ((i = 0; i < 400; i++)); do mountpoint -q "$mnt" && break; sleep 0.05; done
	mountpoint -q "$mnt" || { cat "$tmp/daemon.out"; echo "FAIL $label: the mount did not come up"; fails=$((fails + 1)); kill -9 "$daemon"; daemon=; continue; }
	loadpids=()
	if [ "$load" = stress-ng ]; then
		stress-ng --temp-path "$mnt" --hdd 2 --hdd-bytes 32M --dir 1 --rename 1 --link 1 --dentry 1 \
			--seed "$lseed" -t 60 >/dev/null 2>&1 &
		loadpids+=($!)
	else
		python3 tests/lib/fsload.py "$mnt" "$lseed" --procs 4 --seconds 60 2>/dev/null &
		loadpids+=($!)
	fi
	sleep "$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))"
	kill -9 "$daemon"
	{ wait "$daemon"; } 2>/dev/null
	daemon=
	fusermount3 -uz "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null
	for p in "${loadpids[@]}"; do pkill -9 -P "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	{ wait; } 2>/dev/null
	loadpids=()
	if ! dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery; then
		echo "NOTE: $label: the crash left no journal to replay"
	fi
	REPLAY_FUSE=1 replay_check "$img" "$tmp/w$r" "$label" || fails=$((fails + 1))
	rm -rf "$tmp/w$r"
done
echo "crash_sigkill: $rounds rounds, $fails failed (seed $seed)"
[ "$fails" -eq 0 ] || { echo "FAIL: $fails of $rounds SIGKILL rounds recovered differently"; exit 1; }
