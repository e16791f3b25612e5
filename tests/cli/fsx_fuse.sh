#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# The exerciser and Debian's stress tools on the FUSE mount
# (docs/exerciser.md; shared set-up in tests/lib/apps_common.sh):
#   1. fsx (tests/fsx), seeded, on a default mount (data=ordered) and with
#      -o writeback_cache, then shorter runs in the other data modes; a
#      mismatch prints the seed and the minimized replay script;
#   2. stress-ng's filesystem stressors with --verify, in parallel, bounded
#      by --timeout;
#   3. fio random writes with --verify=crc32c and --fsync, verified while
#      running, then again (--verify_only) after an unmount and a remount;
# each followed by nostall umount and e2fsck -fn. CI: 20,000 fsx ops per
# mount (5,000 under ASan); NOSTALL_APPS_FULL=1: the issue's 1,000,000;
# NOSTALL_FSX_OPS overrides; NOSTALL_FSX_SEED fixes the seed.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need stress-ng:stress-ng fio:fio
FSX=$(dirname "$NOSTALL")/fsx
[ -x "$FSX" ] || { echo "FAIL: $FSX not built (make tests)"; exit 1; }
OPS=${NOSTALL_FSX_OPS:-$(apps_size 20000 1000000 5000)}
SEED=${NOSTALL_FSX_SEED:-$(( $(date +%s) % 1000000 ))}
STRESS_S=$(apps_size 8 120 8)
FIO_SIZE=$(apps_size 24M 1G 8M)
# two fio jobs of FIO_SIZE each, with room for the metadata (a full run
# on the default 512M image ran out of space, and fio reported that as a
# verify failure)
FIO_IMG=$(apps_size 512M 3G 512M)
echo "fsx_fuse: $OPS ops, seed $SEED (NOSTALL_FSX_SEED=$SEED to repeat)"
img=$APPS_TMP/fs.img
mnt=$APPS_TMP/mnt

fresh() { # opts label [size]
	rm -f "$img"
	testfs_mke2fs -I 256 -b "$APPS_BS" "$img" "${3:-512M}" >/dev/null 2>&1 || { fail "$2: mke2fs"; return 1; }
	apps_mount "$img" "$mnt" "$1"
}
finish() { # label
	apps_umount "$mnt" "$1" && apps_fsck "$img" "$1"
}

run_fsx() { # opts ops label
	fresh "$1" "$3" || return
	local t0=$SECONDS
	if ! "$FSX" -q -n "$2" -S "$SEED" -o "$APPS_TMP/replay.txt" "$mnt" >"$APPS_TMP/fsx.log" 2>&1; then
		cat "$APPS_TMP/fsx.log"
		[ -f "$APPS_TMP/replay.txt" ] && { echo "--- replay script:"; cat "$APPS_TMP/replay.txt"; }
		fail "$3: fsx found a mismatch (seed $SEED)"
	fi
	finish "$3"
	echo "$3: fsx $2 ops, $((SECONDS - t0)) s"
}

run_fsx "" "$OPS" "fsx default"
run_fsx "writeback_cache" "$OPS" "fsx writeback_cache"
for mode in $APPS_MODES; do
	[ "$mode" = ordered ] && continue
	run_fsx "data=$mode" $((OPS / 4)) "fsx data=$mode"
done

# stress-ng: each stressor checks its own results (--verify); they run
# side by side so that they also race each other.
# The image must not fill: the stressors' defaults (mmap-file 256M,
# copy-file 256M, sync-file, readahead 64M, ...) oversubscribe 512M, and
# with -o writeback_cache write(2) has returned before the kernel sends the
# data, so a write-back the daemon refuses with ENOSPC is lost in every data
# mode (the readahead and hdd stressors then read holes). 2G (sparse) leaves
# room; fsync/close are where such a loss is reported, and these stressors
# do not check them.
for opts in "" "writeback_cache"; do
	label="stress-ng ${opts:-default}"
	fresh "$opts" "$label" 2G || continue
	mkdir "$mnt/s"
	t0=$SECONDS
	if ! (cd "$mnt/s" && stress-ng --temp-path . --verify --timeout "${STRESS_S}s" \
		--hdd 2 --hdd-bytes 16M --hdd-write-size 4K --dir 1 --dentry 1 --link 1 --symlink 1 \
		--rename 1 --seek 1 --mmap 1 --mmap-file --copy-file 1 \
		--iomix 1 --iomix-bytes 16M --readahead 1 --utime 1 --chmod 1 --getdent 1 \
		--flock 1 --lockf 1 --xattr 1 --dirdeep 1 --dirmany 1 --fpunch 1 --sync-file 1 \
		--filename 1 >"$APPS_TMP/stress.log" 2>&1); then
		grep -E 'fail|error' "$APPS_TMP/stress.log" | head -10
		fail "$label: stress-ng reported failures"
	fi
	grep -q 'successful run completed' "$APPS_TMP/stress.log" || fail "$label: stress-ng did not complete"
	finish "$label"
	echo "$label: $((SECONDS - t0)) s"
done

# fio: random writes of random sizes, each block with a crc32c header,
# fsync every 16 writes, checked after writing; then checked again after a
# remount, which reads it back through a fresh mount from the image.
FIO=(--name=v --directory="$mnt/f" --rw=randwrite --bsrange=512-64k --size="$FIO_SIZE" --numjobs=2
	--ioengine=psync --fsync=16 --verify=crc32c --verify_fatal=1 --randrepeat=1
	--randseed="$SEED" --group_reporting --verify_state_save=0)
for opts in "" "writeback_cache"; do
	label="fio ${opts:-default}"
	fresh "$opts" "$label" "$FIO_IMG" || continue
	mkdir "$mnt/f"
	t0=$SECONDS
	fio "${FIO[@]}" >"$APPS_TMP/fio.log" 2>&1 ||
		{ tail -n 20 "$APPS_TMP/fio.log"; fail "$label: fio --verify=crc32c failed"; }
	apps_umount "$mnt" "$label"
	apps_fsck "$img" "$label"
	apps_mount "$img" "$mnt" "$opts" || continue
	fio "${FIO[@]}" --verify_only >"$APPS_TMP/fio.log" 2>&1 ||
		{ tail -n 20 "$APPS_TMP/fio.log"; fail "$label: the data does not verify after a remount"; }
	finish "$label"
	echo "$label: $((SECONDS - t0)) s"
done
apps_finish fsx_fuse
