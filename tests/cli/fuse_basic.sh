#!/usr/bin/env bash
# nostall mount / umount / sync (issue 11, items 1 and 3; docs/fuse.md):
#   1. mount (daemonized: returns when usable), file operations through the
#      kernel (write, read back, append, rename, links, symlink, xattr,
#      truncate, big file), nostall sync, nostall umount (returns when the
#      image is clean), e2fsck -fn clean, the library sees the same data;
#   2. -o writeback_cache, -o threads=1: the same round trip; the session
#      loop's hand-offs (NOSTALL_FUSE_STATS): every FSYNC hands the reader
#      role on, threads=1 never does, a request running past handoff_us is
#      handed on by the monitor's timer; close(2) sends no FLUSH by default
#      (FOPEN_NOFLUSH), one per close with -o close_flush; a write the
#      device refuses at writeback: close(2) succeeds, the next fsync
#      reports EIO; a default ACL of 100 entries is inherited in full;
#   3. bad input: missing image, corrupt superblock, missing mount point,
#      a file as mount point, a busy mount point, an image already mounted,
#      an unknown option: each one line on stderr, non-zero exit, and the
#      image bytes unchanged;
#   4. SIGTERM unmounts cleanly; SIGKILL mid-write leaves an image the next
#      mount recovers (journal replay), fsync'ed data intact, e2fsck clean;
#   5. mount(8): the mount.fuse.nostall helper as mount(8) runs it, and
#      `mount -t fuse.nostall` / an fstab line (mount -T) with the helper
#      put in /usr/sbin inside a private mount namespace (overlay);
#   6. an unprivileged user mounts an image they own (fusermount3) and works
#      in it; root's mount (allow_other by default) enforces permissions for
#      that user; with noallow_other the user cannot enter it;
#   7. overlayfs with its upper and work directories on the mount: changes
#      through the merged view, whiteouts (RENAME_WHITEOUT) in the upper
#      layer, e2fsck clean.
# Needs root and /dev/fuse: exits 77 with the reason otherwise.
set -u
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
helper=$(cd "$(dirname "$0")/../../tools/fuse" && pwd)/mount.fuse.nostall
export PATH="$PATH:/sbin:/usr/sbin"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
for tool in mke2fs e2fsck debugfs dumpe2fs fusermount3 runuser; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

tmp=$(mktemp -d /tmp/nostall-fuse.XXXXXX)
chmod 755 "$tmp"
m=$tmp/m
mkdir -p "$m"
bgpid=""
fuse_acl_user=""
cleanup() {
	[ -n "$bgpid" ] && kill -9 "$bgpid" 2>/dev/null
	[ -n "$fuse_acl_user" ] && (cd / && setfacl --restore="$tmp/fuse.acl")
	for d in "$tmp"/merged "$tmp"/m "$tmp"/u/m; do
		mountpoint -q "$d" 2>/dev/null && { umount "$d" 2>/dev/null || umount -l "$d"; }
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
# daemons leave the terminal once mounted: sanitizer reports go to files
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}log_path=$tmp/san"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}${UBSAN_OPTIONS:+:}log_path=$tmp/san"
san_check() {
	if ls "$tmp"/san.* >/dev/null 2>&1; then
		cat "$tmp"/san.*
		fail "sanitizer reports (above)"
	fi
}

mkimg() { truncate -s 0 "$1"; mke2fs -q -F -t ext3 -I 256 "$1" "${2:-64M}" >/dev/null 2>&1; }
fsck_clean() { # image what
	e2fsck -fn "$1" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "e2fsck -fn after $2"; }
}
# wait (bounded number of tries) until $1 is (or, with "gone", is not) a mount point
wait_mount() {
	for _ in $(seq 200); do
		if [ "${2:-}" = gone ]; then mountpoint -q "$1" || return 0
		else mountpoint -q "$1" && return 0; fi
		sleep 0.05
	done
	return 1
}

# 1. round trip
roundtrip() { # opts label
	local img=$tmp/rt.img
	mkimg "$img"
	"$NOSTALL" mount ${1:+-o "$1"} "$img" "$m" || { fail "$2: mount"; return; }
	grep -q " $m .* fuse.nostall $img " /proc/self/mountinfo || fail "$2: not in mountinfo"
	head -c 3000000 /dev/urandom >"$tmp/blob"
	echo hello >"$m/a" && echo more >>"$m/a"
	[ "$(cat "$m/a")" = "$(printf 'hello\nmore')" ] || fail "$2: read back an appended file"
	cp "$tmp/blob" "$m/blob" && cmp -s "$tmp/blob" "$m/blob" || fail "$2: 3 MB file differs"
	mkdir -p "$m/d/e" && mv "$m/a" "$m/d/e/b" && ln "$m/d/e/b" "$m/hard" && ln -s d/e/b "$m/sym"
	[ "$(stat -c %h "$m/hard")" = 2 ] || fail "$2: link count"
	[ "$(cat "$m/sym")" = "$(printf 'hello\nmore')" ] || fail "$2: symlink"
	setfattr -n user.k -v val "$m/hard" 2>/dev/null || python3 -c "import os; os.setxattr('$m/hard', 'user.k', b'val')"
	truncate -s 100000 "$m/blob2" && [ "$(stat -c %s "$m/blob2")" = 100000 ] || fail "$2: truncate"
	dd if=/dev/zero of="$m/big" bs=1M count=20 status=none conv=fsync || fail "$2: 20 MB write"
	"$NOSTALL" sync "$m" || fail "$2: nostall sync"
	# The mount's readahead (-o readahead=, default 4M; 0 keeps the
	# kernel's 128 KiB), then the blob read back cold through it
	local ra=4096
	case ${1:-} in *readahead=*) ra=${1#*readahead=}; ra=${ra%%,*} ;; esac
	case $ra in 0) ra=128 ;; *M) ra=$(( ${ra%M} * 1024 )) ;; *K) ra=${ra%K} ;; esac
	got=$(cat "/sys/class/bdi/$(mountpoint -d "$m")/read_ahead_kb")
	[ "$got" = "$ra" ] || fail "$2: the mount's read_ahead_kb is $got, want $ra"
	sync && echo 3 >/proc/sys/vm/drop_caches
	cmp -s "$tmp/blob" "$m/blob" || fail "$2: 3 MB file differs read cold"
	# The mode in use: the build default (guarded) unless -o data= says.
	want=guarded
	case ${1:-} in *data=*) want=${1#*data=}; want=${want%%,*} ;; esac
	"$NOSTALL" info "$m" | grep -q "^Data mode: *$want\$" || fail "$2: nostall info MOUNTPOINT: $("$NOSTALL" info "$m" 2>&1)"
	ls "$m" | sort | tr '\n' ' ' | grep -q "^big blob blob2 d hard lost+found sym $" || fail "$2: listing: $(ls "$m")"
	"$NOSTALL" umount "$m" || fail "$2: nostall umount"
	mountpoint -q "$m" && fail "$2: still mounted after nostall umount"
	fsck_clean "$img" "$2"
	"$NOSTALL" get "$img" /blob "$tmp/blob.back" && cmp -s "$tmp/blob" "$tmp/blob.back" || fail "$2: the library reads another blob"
	[ "$("$NOSTALL" xattr "$img" get /d/e/b user.k 2>/dev/null)" = val ] || fail "$2: xattr through the library"
}
roundtrip "" "defaults"
roundtrip writeback_cache "writeback_cache"
roundtrip threads=1 "threads=1"
roundtrip readahead=1M "readahead=1M"
roundtrip readahead=0 "readahead=0"

# 1a. a device spec with options (file:IMG,OPTS): the options are the
# device's, the image (locked against a second daemon) is IMG
mkimg "$tmp/spec.img"
if "$NOSTALL" mount "file:$tmp/spec.img,direct=0,inline_io=0" "$m"; then
	echo spec >"$m/s" || fail "spec mount: write"
	mkdir -p "$tmp/m2"
	"$NOSTALL" mount "file:$tmp/spec.img,direct=0" "$tmp/m2" 2>"$tmp/spec.err" &&
		{ fail "spec mount: a second daemon on the same image"; "$NOSTALL" umount "$tmp/m2"; }
	grep -q "in use by another nostall mount" "$tmp/spec.err" || fail "spec mount: second mount said: $(cat "$tmp/spec.err")"
	"$NOSTALL" umount "$m" || fail "spec mount: umount"
	fsck_clean "$tmp/spec.img" "spec mount"
	[ "$("$NOSTALL" cat "$tmp/spec.img" /s)" = spec ] || fail "spec mount: the file is not in the image"
else
	fail "spec mount: file:IMG,direct=0,inline_io=0 refused"
fi

# 1b. the session loop (tools/fuse/loop.c): with NOSTALL_FUSE_STATS the
# daemon writes its hand-offs and per-opcode counts at unmount. An FSYNC
# (opcode 20) hands the reader role on before it is served only when
# another request is waiting; a lone client's fsyncs keep one leader (with
# handoff_us=1000000 the monitor cannot hand it on either). Beside a
# client that keeps a request waiting, fsyncs hand the role on. With
# threads=1 nobody takes it over: one leader, no hand-off.
loopstats() { # opts label [python body] -> ls_ho ls_leaders ls_flush (empty on failure)
	local img=$tmp/ls.img
	ls_ho="" ls_leaders="" ls_flush="" ls_getx=""
	mkimg "$img"
	rm -f "$tmp/stats"
	NOSTALL_FUSE_STATS=$tmp/stats "$NOSTALL" mount ${1:+-o "$1"} "$img" "$m" || { fail "$2: mount"; return; }
	python3 -c "
import os
m = '$m'
${3:-fd = os.open(m + '/f', os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(5):
    os.write(fd, b'x' * 100)
    os.fsync(fd)
os.close(fd)}" || fail "$2: the calls failed"
	"$NOSTALL" umount "$m" || fail "$2: umount"
	[ -n "${3:-}" ] || grep -q "^op 20 n 5 " "$tmp/stats" || { cat "$tmp/stats"; fail "$2: stats do not count 5 FSYNC requests"; }
	read -r ls_ho ls_leaders < <(sed -n 's/^threads [0-9]* handoffs \([0-9]*\) leaders \([0-9]*\)$/\1 \2/p' "$tmp/stats")
	ls_flush=$(sed -n 's/^op 25 n \([0-9]*\) .*/\1/p' "$tmp/stats")
	ls_flush=${ls_flush:-0}
	ls_getx=$(sed -n 's/^op 22 n \([0-9]*\) .*/\1/p' "$tmp/stats")
	ls_getx=${ls_getx:-0}
}
loopstats "" "loop default"
[ "$ls_flush" = 0 ] || fail "loop default: $ls_flush FLUSH requests (FOPEN_NOFLUSH: want none)"
loopstats handoff_us=1000000 "loop lone fsyncs"
[ "${ls_leaders:-}" = 1 ] && [ "${ls_ho:-}" = 0 ] || fail "loop lone fsyncs: '$ls_leaders' leaders, '$ls_ho' hand-offs (want 1 and 0)"
# HANDLE_KILLPRIV_V2 (killpriv.c): the kernel asks security.capability
# once for the file, not before each of the 5 writes
[ "$ls_getx" -le 1 ] || fail "loop lone fsyncs: $ls_getx GETXATTR requests for 5 writes to one file (KILLPRIV_V2: want at most 1)"
# two processes keep LISTXATTR requests coming (measured: 18-87 leaders)
loopstats handoff_us=1000000 "loop busy fsyncs" "import multiprocessing
fd = os.open(m + '/f', os.O_CREAT | os.O_WRONLY, 0o644)
def other(ev):
    while not ev.is_set():
        os.listxattr(m + '/f')
ev = multiprocessing.Event()
ps = [multiprocessing.Process(target=other, args=(ev,)) for _ in range(2)]
for p in ps: p.start()
for i in range(100):
    os.write(fd, b'x' * 100)
    os.fsync(fd)
ev.set()
for p in ps: p.join()
os.close(fd)"
[ "${ls_leaders:-0}" -ge 2 ] || fail "loop busy fsyncs: '$ls_leaders' leaders for 100 fsyncs beside clients with requests waiting (want hand-offs)"
loopstats threads=1 "loop threads=1"
[ "${ls_leaders:-}" = 1 ] && [ "${ls_ho:-}" = 0 ] || fail "loop threads=1: '$ls_leaders' leaders, '$ls_ho' hand-offs (want 1 and 0)"
# -o close_flush: one FLUSH per close(2), dup'ed descriptors included
loopstats close_flush "loop close_flush" "fd = os.open(m + '/f', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'x' * 100)
os.close(os.dup(fd))
os.close(fd)
os.close(os.open(m + '/f', os.O_RDONLY))"
[ "$ls_flush" = 3 ] || fail "loop close_flush: $ls_flush FLUSH requests for 3 closes"
# the monitor's timer: 1 MiB writes run far longer than handoff_us=10, so
# the monitor hands the reader role on mid-request (the timer is armed at
# the first request and re-armed from the monitor while requests last)
loopstats handoff_us=10 "loop handoff_us=10" "fd = os.open(m + '/f', os.O_CREAT | os.O_WRONLY, 0o644)
for i in range(32):
    os.write(fd, b'y' * (1 << 20))
os.close(fd)"
[ "${ls_ho:-0}" -ge 1 ] || fail "loop handoff_us=10: '$ls_ho' hand-offs during 32 writes of 1 MiB (want some)"

# 1c. close(2) and write errors (FOPEN_NOFLUSH): a write the device
# refuses at writeback does not fail close(2), as on ext3 (no FLUSH
# request), and the file's next fsync reports it. The file's blocks are
# known from a first mount; the second mount's device fails writes there.
wimg=$tmp/werr.img
mkimg "$wimg" 64M
"$NOSTALL" mount "$wimg" "$m" || fail "write error: mount"
python3 -c "
import os
fd = os.open('$m/f', os.O_CREAT | os.O_WRONLY, 0o644)
os.write(fd, b'a' * (1 << 20))
os.fsync(fd)
os.close(fd)" || fail "write error: first write"
"$NOSTALL" umount "$m" || fail "write error: umount"
bs=$(dumpe2fs -h "$wimg" 2>/dev/null | sed -n 's/^Block size: *//p')
read -r b0 b1 < <(debugfs -R "blocks /f" "$wimg" 2>/dev/null | tr ' ' '\n' | grep . | sed -n '1p;$p' | tr '\n' ' ')
if [ -n "$bs" ] && [ -n "${b1:-}" ]; then
	spb=$((bs / 512))
	"$NOSTALL" mount -o data=writeback "fault:file:$wimg,op=write,sector=$((b0 * spb))-$((b1 * spb + spb - 1)),err=eio" "$m" ||
		fail "write error: mount over a fault device"
	out=$(python3 -c "
import os
fd = os.open('$m/f', os.O_WRONLY)
os.write(fd, b'b' * (1 << 20))
os.close(fd)
print('close ok')
fd = os.open('$m/f', os.O_WRONLY)
try:
    os.fsync(fd)
    print('fsync ok')
except OSError as e:
    print('fsync errno', e.errno)
os.close(fd)" 2>&1)
	[ "$out" = "close ok
fsync errno 5" ] || fail "write error: want close ok then fsync EIO, got: $out"
	"$NOSTALL" umount "$m" >/dev/null 2>&1 || umount "$m" 2>/dev/null
else
	fail "write error: no block list for /f (bs '$bs', blocks '${b0:-}-${b1:-}')"
fi

# 1d. a default ACL of 100 named users (about 800 bytes on disk, past the
# daemon's 512-byte first read of a directory's default ACL) is inherited
# in full by a new file.
if command -v setfacl >/dev/null 2>&1 && command -v getfacl >/dev/null 2>&1; then
	aimg=$tmp/acl.img
	mkimg "$aimg"
	if "$NOSTALL" mount "$aimg" "$m"; then
		spec=$(for u in $(seq 1000 1099); do printf 'd:u:%d:r,' "$u"; done)
		mkdir "$m/big" && setfacl -m "${spec%,}" "$m/big" && touch "$m/big/f" ||
			fail "large ACL: setfacl or create"
		n=$(getfacl -n "$m/big/f" 2>/dev/null | grep -c '^user:1[0-9][0-9][0-9]:')
		[ "$n" = 100 ] || fail "large ACL: $n of 100 named users inherited"
		"$NOSTALL" umount "$m" || fail "large ACL: umount"
		fsck_clean "$aimg" "large ACL"
	else
		fail "large ACL: mount"
	fi
else
	echo "SKIP: setfacl/getfacl not installed (large default ACL)"
fi

# 3. bad input: one line, non-zero, nothing written
mkimg "$tmp/good.img"
dd if=/dev/zero of="$tmp/bad.img" bs=1M count=8 status=none
sum0=$(md5sum "$tmp/good.img" "$tmp/bad.img")
touch "$tmp/afile"
badcase() { # label args...
	local label=$1
	shift
	local before
	before=$(grep -c " $m " /proc/self/mountinfo)
	"$NOSTALL" mount "$@" >"$tmp/out" 2>"$tmp/err"
	local rc=$?
	[ "$rc" -ne 0 ] || fail "bad input '$label' exits 0"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || { cat "$tmp/err"; fail "bad input '$label': not one line"; }
	[ -s "$tmp/out" ] && fail "bad input '$label' prints on stdout"
	[ "$(grep -c " $m " /proc/self/mountinfo)" = "$before" ] || { fail "bad input '$label' mounted"; "$NOSTALL" umount "$m"; }
	echo "  $label: $(cat "$tmp/err")"
}
badcase "missing image" "$tmp/nope.img" "$m"
badcase "corrupt superblock" "$tmp/bad.img" "$m"
badcase "missing mount point" "$tmp/good.img" "$tmp/nodir"
badcase "file as mount point" "$tmp/good.img" "$tmp/afile"
badcase "unknown option" -o no_such_option "$tmp/good.img" "$m"
badcase "bad option value" -o data=bogus "$tmp/good.img" "$m"
badcase "readahead too large" -o readahead=2G "$tmp/good.img" "$m"
badcase "bad daemon option" -o threads=0 "$tmp/good.img" "$m"
badcase "bad hand-off time" -o handoff_us=5 "$tmp/good.img" "$m"
badcase "bad spin time" -o spin_us=5000 "$tmp/good.img" "$m"
[ "$(md5sum "$tmp/good.img" "$tmp/bad.img")" = "$sum0" ] || fail "bad input changed an image"
mkimg "$tmp/other.img"
"$NOSTALL" mount "$tmp/other.img" "$m" || fail "mount for the busy cases"
sum1=$(md5sum "$tmp/good.img")
badcase "busy mount point" "$tmp/good.img" "$m"
mkdir -p "$tmp/m2"
"$NOSTALL" mount "$tmp/other.img" "$tmp/m2" 2>"$tmp/err" && { fail "an image mounted twice"; "$NOSTALL" umount "$tmp/m2"; }
grep -q "in use" "$tmp/err" || fail "image mounted twice: message '$(cat "$tmp/err")'"
[ "$(md5sum "$tmp/good.img")" = "$sum1" ] || fail "busy mount point: image changed"
"$NOSTALL" umount "$m" || fail "umount after the busy cases"
"$NOSTALL" umount "$m" 2>/dev/null && fail "nostall umount of a directory that is not mounted exits 0"

# 4. signals
img=$tmp/sig.img
mkimg "$img"
"$NOSTALL" mount -f "$img" "$m" &
bgpid=$!
wait_mount "$m" || fail "foreground mount never appeared"
echo data >"$m/f"
kill -TERM "$bgpid"
wait "$bgpid" || fail "SIGTERM: the daemon exits non-zero"
bgpid=""
wait_mount "$m" gone || fail "SIGTERM: still mounted"
fsck_clean "$img" "SIGTERM"
[ "$("$NOSTALL" cat "$img" /f)" = data ] || fail "SIGTERM: data lost"

"$NOSTALL" mount -f -o commit=30 "$img" "$m" &
bgpid=$!
wait_mount "$m" || fail "foreground mount (SIGKILL case) never appeared"
head -c 1000000 /dev/urandom >"$tmp/keep"
cp "$tmp/keep" "$m/keep" && python3 -c "import os; fd=os.open('$m/keep', os.O_RDONLY); os.fsync(fd)" || fail "fsync before SIGKILL"
( for i in $(seq 1 2000); do head -c 20000 /dev/zero >"$m/w$i" || break; done ) 2>/dev/null &
writer=$!
sleep 0.5
kill -KILL "$bgpid"
wait "$bgpid" 2>/dev/null
bgpid=""
wait "$writer" 2>/dev/null
fusermount3 -u "$m" 2>/dev/null || umount -l "$m"
# the image needs recovery now
dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery || fail "SIGKILL: the image does not need recovery (was it written at all?)"
"$NOSTALL" mount "$img" "$m" || fail "mount after SIGKILL (replay)"
cmp -s "$tmp/keep" "$m/keep" || fail "SIGKILL: fsync'ed file differs after replay"
"$NOSTALL" umount "$m" || fail "umount after the replay"
fsck_clean "$img" "SIGKILL + replay"

# 5. mount(8)
mkimg "$img"
NOSTALL=$NOSTALL "$helper" "$img" "$m" -o rw,noauto,x-systemd.automount,commit=3 || fail "mount.fuse.nostall as mount(8) runs it"
mountpoint -q "$m" && "$NOSTALL" umount "$m" || fail "mount.fuse.nostall did not mount"
if command -v unshare >/dev/null && grep -q overlay /proc/filesystems; then
	mkdir -p "$tmp/ov/up" "$tmp/ov/work"
	ln -s "$helper" "$tmp/ov/up/mount.fuse.nostall"
	printf '%s %s fuse.nostall defaults,noauto,data=journal 0 0\n' "$img" "$m" >"$tmp/fstab"
	NOSTALL=$NOSTALL unshare -m --propagation private bash -c '
		set -e
		mount -t overlay overlay -o lowerdir=/usr/sbin,upperdir=$1/ov/up,workdir=$1/ov/work /usr/sbin
		mount -t fuse.nostall -o commit=2 "$2" "$3"
		echo via-mount >"$3/x"
		"$NOSTALL" umount "$3"
		mount -T "$1/fstab" "$3"
		grep -q via-mount "$3/x"
		"$NOSTALL" umount "$3"' _ "$tmp" "$img" "$m" || fail "mount -t fuse.nostall / fstab line"
	fsck_clean "$img" "mount(8)"
else
	echo "SKIP: unshare or overlayfs missing: mount -t fuse.nostall not run"
fi

# 6. users
user=nostallfuse
if ! id "$user" >/dev/null 2>&1; then
	useradd -M -r -s /usr/sbin/nologin "$user" 2>/dev/null || { echo "SKIP: cannot create user $user"; user=""; }
fi
if [ -n "$user" ] && ! runuser -u "$user" -- test -r /dev/fuse -a -w /dev/fuse; then
	# /dev/fuse is normally 0666; a container may keep it for root (fusermount3
	# opens it with the user's rights). Grant this user access for the test.
	getfacl -p /dev/fuse >"$tmp/fuse.acl" 2>/dev/null
	devmode=$(stat -c %a /dev/fuse)
	if setfacl -m "u:$user:rw" /dev/fuse 2>/dev/null; then
		fuse_acl_user=$user
		echo "note: /dev/fuse is $devmode: access granted to $user for this test"
	else
		echo "SKIP: /dev/fuse is not usable by $user and cannot be granted: unprivileged mount not run"
		user=""
	fi
fi
if [ -n "$user" ]; then
	uid=$(id -u "$user")
	mkdir -p "$tmp/u/m"
	truncate -s 0 "$tmp/u/own.img"
	mke2fs -q -F -t ext3 -E root_owner="$uid:$(id -g "$user")" "$tmp/u/own.img" 32M >/dev/null 2>&1
	chown -R "$user" "$tmp/u"
	as() { runuser -u "$user" -- "$@"; }
	as "$NOSTALL" mount "$tmp/u/own.img" "$tmp/u/m" || fail "unprivileged mount"
	as sh -c "echo mine >'$tmp/u/m/x' && mkdir '$tmp/u/m/dir' && mv '$tmp/u/m/x' '$tmp/u/m/dir/y'" || fail "unprivileged user works in the mount"
	[ "$(stat -c %u "$tmp/u/m/dir/y" 2>/dev/null)" = "$uid" ] && fail "root reaches a user's mount without allow_other"
	as "$NOSTALL" umount "$tmp/u/m" || fail "unprivileged nostall umount"
	fsck_clean "$tmp/u/own.img" "the unprivileged mount"
	"$NOSTALL" stat "$tmp/u/own.img" /dir/y 2>/dev/null | grep -q "Uid: $uid " || fail "files of the unprivileged mount are not owned by the user"

	mkimg "$img"
	"$NOSTALL" mount "$img" "$m" || fail "root mount for allow_other"
	mkdir "$m/closed" "$m/pub" && chmod 700 "$m/closed" && chmod 1777 "$m/pub" && echo r >"$m/ro" && chmod 644 "$m/ro"
	as ls "$m/closed" >/dev/null 2>&1 && fail "allow_other: a 0700 directory listed by another user"
	as sh -c "echo x >>'$m/ro'" 2>/dev/null && fail "allow_other: a 0644 root file written by another user"
	[ "$(as cat "$m/ro")" = r ] || fail "allow_other: a 0644 file is not readable by another user"
	as sh -c "echo x >'$m/pub/u'" || fail "allow_other: a user cannot create in a 1777 directory"
	[ "$(stat -c %u "$m/pub/u")" = "$uid" ] || fail "allow_other: a new file is not owned by its creator"
	"$NOSTALL" umount "$m" || fail "umount (allow_other)"
	"$NOSTALL" mount -o noallow_other "$img" "$m" || fail "root mount without allow_other"
	as ls "$m" >/dev/null 2>&1 && fail "noallow_other: another user enters the mount"
	"$NOSTALL" umount "$m" || fail "umount (noallow_other)"
	fsck_clean "$img" "allow_other"
fi

# overlayfs with its upper and work directories on the mount (containers):
# the kernel demands RENAME_WHITEOUT, xattrs and d_type of a FUSE upper layer
if [ "$(id -u)" -eq 0 ] && grep -qw overlay /proc/filesystems 2>/dev/null; then
	mkimg "$img"
	"$NOSTALL" mount "$img" "$m" || fail "mount for overlayfs"
	mkdir -p "$tmp/lower/d" "$tmp/merged" "$m/upper" "$m/work"
	echo low >"$tmp/lower/f" && echo x >"$tmp/lower/d/y"
	if mount -t overlay overlay -o "lowerdir=$tmp/lower,upperdir=$m/upper,workdir=$m/work" "$tmp/merged"; then
		echo new >"$tmp/merged/n" && echo more >>"$tmp/merged/n" && rm "$tmp/merged/f" && rm -r "$tmp/merged/d" &&
			echo up >"$tmp/merged/lowcopy" || fail "overlayfs: changes through the merged view"
		[ "$(ls "$tmp/merged" | tr '\n' ' ')" = "lowcopy n " ] || fail "overlayfs: merged view: $(ls "$tmp/merged")"
		[ -c "$m/upper/f" ] && [ -c "$m/upper/d" ] || fail "overlayfs: no whiteouts in the upper layer"
		umount "$tmp/merged" || fail "overlayfs: umount"
		[ -c "$m/upper/f" ] && [ "$(stat -c %t:%T "$m/upper/f")" = 0:0 ] || fail "overlayfs: the whiteout is not 0:0"
		[ "$(cat "$m/upper/n")" = "$(printf 'new\nmore')" ] || fail "overlayfs: upper file contents"
	else
		fail "overlayfs does not mount with its upper layer on nostall (dmesg: $(dmesg 2>/dev/null | grep -i overlay | tail -2))"
	fi
	"$NOSTALL" umount "$m" || fail "umount (overlayfs)"
	fsck_clean "$img" "overlayfs"
fi

san_check
[ "$fails" -eq 0 ] && echo "fuse_basic: all passed"
[ "$fails" -eq 0 ]
