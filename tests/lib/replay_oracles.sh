# The recovery oracles for a crashed ext3 image (sourced, not run;
# docs/write-testing.md, "Replay oracles"). Needs $NOSTALL, e2fsprogs, python3.
#
# replay_check IMG WORK LABEL: recovers copies of IMG (never IMG itself) in
# WORK and prints one line per check; returns the number of failed checks.
#   1. nostall's replay alone (`nostall recover`) equals e2fsprogs' replay
#      alone (`debugfs -w -R journal_run`): every block, the superblock's
#      write/check times masked (tests/lib/replay_compare.py --peer replay);
#   2. nostall's replay and orphan cleanup (`nostall recover -o orphans`)
#      equals `e2fsck -y -E journal_only` (--peer e2fsck: the in-use blocks,
#      every in-use inode, bitmaps, descriptors, superblock; e2fsck 1.47.0's
#      dropped xattr blocks of truncated orphans named and allowed);
#   3. `e2fsck -fn` is clean on nostall's recovery;
#   4. as root with loop devices: the kernel's replay and orphan cleanup (a
#      read-only mount of a writable loop device) equals nostall's (--peer
#      kernel: the orphans' mtime/ctime its truncate sets, i_extra_isize
#      grown); REPLAY_KERNEL=0 skips it;
#   5. with REPLAY_FUSE=1: `nostall mount` + `nostall umount` of a copy (the
#      way a user recovers) leaves an image `e2fsck -fn` finds clean.
# The copies are removed again unless REPLAY_KEEP=1.
replay_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
. "$replay_lib/kmount.sh"

replay_check() { # img work label
	local img=$1 work=$2 label=$3 bad=0 out rc
	mkdir -p "$work"
	local n=$work/n.img d=$work/d.img o=$work/o.img e=$work/e.img k=$work/k.img
	for c in "$n" "$d" "$o" "$e"; do
		cp --sparse=always "$img" "$c" && chmod u+w "$c" || { echo "FAIL $label: copy"; return 1; }
	done
	if ! out=$("$NOSTALL" recover "$n" 2>&1); then
		echo "FAIL $label: nostall recover: $out"; return 1
	fi
	echo "  $label: $out"
	debugfs -w -R journal_run "$d" >"$work/debugfs.out" 2>&1
	if out=$(python3 "$replay_lib/replay_compare.py" "$n" "$d" --peer replay 2>&1); then
		echo "  $label: $out"
	else
		echo "$out" | tail -12; echo "FAIL $label: nostall's replay differs from debugfs journal_run's"; bad=$((bad + 1))
	fi
	if ! out=$("$NOSTALL" recover -o orphans "$o" 2>&1); then
		echo "FAIL $label: nostall recover -o orphans: $out"; return $((bad + 1))
	fi
	rc=0
	e2fsck -y -E journal_only "$e" >"$work/e2fsck.out" 2>&1 || rc=$?
	if [ "$rc" -gt 1 ]; then
		tail -5 "$work/e2fsck.out"; echo "FAIL $label: e2fsck -E journal_only exit $rc"; bad=$((bad + 1))
	elif out=$(python3 "$replay_lib/replay_compare.py" "$o" "$e" --peer e2fsck --orphans "$n" 2>&1); then
		echo "  $label: $out ($(grep -c 'orphaned inode' "$work/e2fsck.out") orphans for e2fsck)"
	else
		echo "$out" | tail -12; echo "FAIL $label: nostall's recovery differs from e2fsck -E journal_only's"; bad=$((bad + 1))
	fi
	if ! e2fsck -fn "$o" >"$work/fsck.out" 2>&1; then
		head -20 "$work/fsck.out"; echo "FAIL $label: e2fsck -fn not clean after nostall's recovery"; bad=$((bad + 1))
	fi
	if [ "${REPLAY_KERNEL:-1}" = 1 ] && [ "$(id -u)" = 0 ] && command -v losetup >/dev/null; then
		cp --sparse=always "$img" "$k" && chmod u+w "$k"
		local loop mnt=$work/kmnt
		mkdir -p "$mnt"
		if loop=$(losetup -f --show "$k" 2>/dev/null); then
			if kmount -t ext3 -o ro "$loop" "$mnt"; then
				umount "$mnt"
				losetup -d "$loop"
				if out=$(python3 "$replay_lib/replay_compare.py" "$o" "$k" --peer kernel --orphans "$n" 2>&1); then
					echo "  $label: $out"
				else
					echo "$out" | tail -12; echo "FAIL $label: nostall's recovery differs from the kernel's"; bad=$((bad + 1))
				fi
			else
				losetup -d "$loop"
				echo "FAIL $label: the kernel refused to mount the crashed image"; bad=$((bad + 1))
			fi
		else
			echo "SKIP: $label: no loop device for the kernel's replay" >&2
		fi
		rm -f "$k"
	fi
	if [ "${REPLAY_FUSE:-0}" = 1 ]; then
		local m=$work/m.img mnt=$work/fmnt
		cp --sparse=always "$img" "$m" && chmod u+w "$m"
		mkdir -p "$mnt"
		if "$NOSTALL" mount "$m" "$mnt" >"$work/mount.out" 2>&1 && "$NOSTALL" umount "$mnt" >>"$work/mount.out" 2>&1; then
			if ! e2fsck -fn "$m" >"$work/fsck_m.out" 2>&1; then
				head -20 "$work/fsck_m.out"; echo "FAIL $label: e2fsck -fn not clean after nostall mount + umount"; bad=$((bad + 1))
			fi
		else
			cat "$work/mount.out"; echo "FAIL $label: nostall mount/umount of the crashed image"; bad=$((bad + 1))
		fi
		rm -f "$m"
	fi
	[ "${REPLAY_KEEP:-0}" = 1 ] || rm -f "$n" "$d" "$o" "$e"
	[ "$bad" -eq 0 ] && echo "ok $label"
	return "$bad"
}
