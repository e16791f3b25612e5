#!/usr/bin/env bash
# RELEASE racing a WRITE's post-reply throttle on the FUSE mount (found by
# fsx seed 4243 with -o cache=64K,writeback_cache,data=guarded: the daemon
# died in libfuse, "tpp.c: __pthread_tpp_change_priority: Assertion").
# op_write replies, then waits in the dirty-page throttle holding the
# handle's lock; the kernel may send RELEASE as soon as the last WRITE is
# answered, and another thread (the reader role handed on) freed the handle
# under that lock: the WRITE's unlock then wrote to freed memory.
# Workload: files rewritten with 64 KiB writes and closed at once, on a
# 64 KiB cache (the throttle runs after almost every WRITE), with
# writeback_cache (the close's write-back and RELEASE come back to back),
# in data=ordered, data=journal and data=guarded (there TSan also saw
# gi->orphaned written under in->lock only while queue_add's flag test,
# compiled to one 8-byte load, read it under g->lock: now written under
# both; seen in about one run in two before).
# The daemon runs in the foreground; with a ThreadSanitizer build next to
# $NOSTALL (build/tsan/nostall: make VARIANT=tsan tests) it is that one,
# which reports the race every run ("destroy of a locked mutex"); with the
# others only a crash shows it (said as a SKIP line). Then umount, e2fsck.
set -u
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
daemon=$NOSTALL
for t in "$(dirname "$NOSTALL")/tsan/nostall" "$(dirname "$NOSTALL")/../tsan/nostall"; do
	[ -x "$t" ] && { daemon=$(cd "$(dirname "$t")" && pwd)/nostall; break; }
done
case $daemon in
*/tsan/*) ;;
*) echo "SKIP: soak_fuse_release: no ThreadSanitizer build next to $NOSTALL: the race shows only if it crashes" ;;
esac
export TSAN_OPTIONS="halt_on_error=1 exitcode=66"
img=$APPS_TMP/fs.img
mnt=$APPS_TMP/mnt
mkdir -p "$mnt"
for opts in "cache=64K,writeback_cache,data=ordered" "cache=64K,writeback_cache,data=journal" \
	"cache=64K,writeback_cache,data=guarded"; do
	rm -f "$img"
	mke2fs -q -F -t ext3 -b 4096 "$img" 256M >/dev/null 2>&1 || { fail "$opts: mke2fs"; continue; }
	"$daemon" mount -f -o "$opts" "$img" "$mnt" >"$APPS_TMP/daemon.log" 2>&1 &
	dpid=$!
	for _ in $(seq 300); do mountpoint -q "$mnt" && break; kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done
	if ! mountpoint -q "$mnt"; then
		cat "$APPS_TMP/daemon.log"
		fail "$opts: the mount did not come up"
		continue
	fi
	APPS_MOUNTED=$mnt
	python3 - "$mnt" <<'EOF' || fail "$opts: the workload failed (the daemon died?)"
import os, sys
root = sys.argv[1]
buf = os.urandom(65536)
for i in range(150):
    fd = os.open(os.path.join(root, "f%d" % (i % 8)), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for k in range(6):
        os.write(fd, buf)
    os.close(fd)
EOF
	apps_umount "$mnt" "$opts"
	wait "$dpid"
	rc=$?
	[ "$rc" -eq 0 ] || fail "$opts: the daemon exited with $rc"
	if grep -qE "ThreadSanitizer|Sanitizer|Assertion" "$APPS_TMP/daemon.log"; then
		grep -E "WARNING|SUMMARY|Assertion|#[0-4] " "$APPS_TMP/daemon.log" | head -20
		fail "$opts: the daemon reported an error"
	fi
	apps_fsck "$img" "$opts"
done
apps_finish soak_fuse_release
