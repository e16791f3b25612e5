#!/usr/bin/env bash
# fallocate on ext4 through the FUSE mount, judged by the kernel (issue 39,
# item 3; docs/write-data.md, "fallocate"):
#  - the same sequence of writes and util-linux fallocate(1) calls (KEEP_SIZE
#    past the end, PUNCH_HOLE with partial edges and over the end, which
#    stops at the block of i_size, ZERO_RANGE, mode 0 growing the size, a
#    write into an unwritten extent, unaligned allocations and zeroed ranges
#    over holes) on a kernel loop mount of
#    one image and on nostall's FUSE mount of another, in data=ordered,
#    guarded, writeback and journal (at 1 KiB blocks guarded and journal);
#  - e2fsck -fn clean; the kernel reading nostall's image gives the same
#    bytes, the same size and st_blocks; debugfs's extents give the same
#    layout classes (written / unwritten / hole per logical block, adjacent
#    runs of one class coalesced: physical placement may differ);
#  - the errors (python3 ctypes fallocate: bad ranges and modes, no write
#    access, past the maximum size, append-only and immutable files) equal
#    the kernel's;
#  - SEEK_DATA / SEEK_HOLE answers (python3 os.lseek) on nostall's FUSE
#    mount equal the kernel's for the same layout, on fresh mounts (a page
#    the kernel caches over an unwritten extent counts as data);
#  - nostall fallocate (the CLI) does the same on the image;
#  - an ext3 image (indirect-mapped files): fallocate(1) through the FUSE
#    mount prints "Operation not supported", as the kernel on such files.
# Extents are big enough (over 32 KiB) that the kernel never zeroes one out
# instead of splitting it (s_extent_max_zeroout_kb).
# Needs root, /dev/fuse and loop devices: exits 77 otherwise.
set -u
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
. "$(dirname "$0")/../lib/kmount.sh"
export PATH="$PATH:/sbin:/usr/sbin"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

[ "$(id -u)" -eq 0 ] || { echo "SKIP: not root"; exit 77; }
for tool in mkfs.ext4 e2fsck debugfs fallocate python3 fusermount3; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done
[ -c /dev/fuse ] || { echo "SKIP: no /dev/fuse"; exit 77; }

tmp=$(mktemp -d /tmp/nostall-falloc.XXXXXX)
m=$tmp/m
k=$tmp/k
mkdir -p "$m" "$k"
cleanup() {
	for d in "$m" "$k"; do
		mountpoint -q "$d" 2>/dev/null && { umount "$d" 2>/dev/null || umount -l "$d"; }
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
export ASAN_OPTIONS="${ASAN_OPTIONS:-}${ASAN_OPTIONS:+:}log_path=$tmp/san"

feat=^metadata_csum,^64bit,^uninit_bg,^huge_file,^dir_nlink,^extra_isize
head -c 1048576 /dev/urandom >"$tmp/pat"

# The sequence, in directory $1 (a mount point).
ops() {
	local f=$1/f
	dd if="$tmp/pat" of="$f" bs=64k status=none conv=notrunc || return 1
	fallocate -n -o 1M -l 512K "$f" &&
		fallocate -p -o 102500 -l 307200 "$f" &&
		fallocate -z -o 600000 -l 300000 "$f" &&
		fallocate -o 2M -l 256K "$f" &&
		printf hello | dd of="$f" bs=1 seek=$((1048576 + 204900)) conv=notrunc status=none &&
		fallocate -z -n -o 3M -l 128K "$f" &&
		fallocate -n -o $((2359296)) -l 64K "$f" &&
		fallocate -p -o $((2359296 - 8192)) -l 1M "$f" &&
		fallocate -z -n -o $((3 * 1048576 + 300000)) -l 10000 "$f" &&
		fallocate -n -o $((4 * 1048576 + 100)) -l 5000 "$f" &&
		fallocate -l 64K "$1/g"
}

# SEEK_DATA/SEEK_HOLE transitions of a file, before anything reads it.
seeks() {
	python3 - "$1" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
off, out = 0, []
while True:
    try:
        d = os.lseek(fd, off, os.SEEK_DATA)
    except OSError:
        out.append("end"); break
    h = os.lseek(fd, d, os.SEEK_HOLE)
    out.append("%d-%d" % (d, h))
    off = h
for probe in (0, 5000, 120000, 700000, 1100000, 2200000):
    try:
        out.append("h%d=%d" % (probe, os.lseek(fd, probe, os.SEEK_HOLE)))
    except OSError as e:
        out.append("h%d=%s" % (probe, e.errno))
print(" ".join(out))
EOF
}

# fallocate(2)'s errors on a file of directory $1 (ctypes: any mode bits):
# bad ranges and modes, append-only and immutable files.
errs() {
	python3 - "$1" <<'EOF'
import ctypes, errno, os, subprocess, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_long, ctypes.c_long]
d = sys.argv[1]
def fa(path, mode, off, ln, flags=os.O_RDWR):
    fd = os.open(path, flags)
    r = libc.fallocate(fd, mode, off, ln)
    e = ctypes.get_errno() if r else 0
    os.close(fd)
    return errno.errorcode.get(e, str(e)) if e else "ok"
p = d + "/e"
open(p, "wb").write(b"x" * 10000)
out = [fa(p, 0, 0, 0), fa(p, 0, -1, 10), fa(p, 0x02, 0, 4096), fa(p, 0x13, 0, 4096),
       fa(p, 0x80, 0, 4096), fa(p, 0, 0, 4096, os.O_RDONLY), fa(p, 0, 1 << 62, 4096)]
subprocess.run(["chattr", "+a", p], check=True)
out += [fa(p, 0x01, 0, 8192, os.O_WRONLY | os.O_APPEND), fa(p, 0x03, 0, 4096, os.O_WRONLY | os.O_APPEND),
        fa(p, 0x10, 0, 4096, os.O_WRONLY | os.O_APPEND)]
subprocess.run(["chattr", "-a", p], check=True)
subprocess.run(["chattr", "+i", p], check=True)
out += [fa(p, 0, 0, 4096, os.O_RDONLY)]
subprocess.run(["chattr", "-i", p], check=True)
os.unlink(p)
print(" ".join(out))
EOF
}

# Layout classes from debugfs: "start-end W|U" per run, holes left out,
# adjacent runs of one class coalesced.
layout() {
	debugfs -R "ex $2" "$1" 2>/dev/null | awk '
		/Uninit/ { u = 1 } !/Uninit/ { u = 0 }
		$0 ~ / - .* - / {
			# leaf: Level Entries Logical(a - b) Physical(c - d) Length
			n = split($0, w, /[ \t]+/); s = ""; a = ""; b = ""
			for (i = 1; i <= n; i++) if (w[i] == "-") { if (a == "") { a = w[i-1]; b = w[i+1] } }
			c = u ? "U" : "W"
			if (cur != "" && c == cls && a == end + 1) { end = b; next }
			if (cur != "") printf "%s-%s%s ", cur, end, cls
			cur = a; end = b; cls = c; next
		}
		END { if (cur != "") printf "%s-%s%s", cur, end, cls; print "" }'
}

# The kernel's answer, then nostall's, at 4 KiB and 1 KiB blocks (the
# kernel's punch past the end stops after its 4 KiB page in both).
for bs in 4096 1024; do
	kimg=$tmp/k.img
	mkfs.ext4 -q -F -b "$bs" -O "$feat" "$kimg" 64M >/dev/null || { echo "FAIL: mkfs"; exit 1; }
	kmount -o loop "$kimg" "$k" || { echo "SKIP: no loop mount"; exit 77; }
	ops "$k" || fail "$bs: kernel: the sequence"
	kerrs=$(errs "$k")
	umount "$k"
	kmount -o loop,ro "$kimg" "$k" || fail "$bs: kernel: ro mount"
	kseek=$(seeks "$k/f")
	kstat=$(stat -c "%s %b" "$k/f" "$k/g")
	cp "$k/f" "$tmp/kf"
	umount "$k"
	klayout=$(layout "$kimg" /f)
	echo "kernel ($bs): layout $klayout; seeks $kseek; size/blocks $kstat; errors $kerrs" | tr "\n" " "; echo
	debugfs -R "ex /f" "$kimg" 2>/dev/null | grep -q Uninit || fail "$bs: kernel: no unwritten extent in debugfs ex"

	modes="ordered guarded writeback journal"
	[ "$bs" = 1024 ] && modes="guarded journal" # (time: the rest at 4 KiB)
	for mode in $modes; do
		img=$tmp/n.img
		rm -f "$img"
		mkfs.ext4 -q -F -b "$bs" -O "$feat" "$img" 64M >/dev/null
		"$NOSTALL" mount -o "data=$mode" "$img" "$m" || { fail "$bs/$mode: nostall mount"; continue; }
		ops "$m" || fail "$bs/$mode: the sequence through the FUSE mount"
		nerrs=$(errs "$m")
		[ "$nerrs" = "$kerrs" ] || fail "$bs/$mode: errors '$nerrs', kernel '$kerrs'"
		"$NOSTALL" umount "$m" || fail "$bs/$mode: nostall umount"
		e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || { fail "$bs/$mode: e2fsck"; cat "$tmp/fsck"; }
		nlayout=$(layout "$img" /f)
		[ "$nlayout" = "$klayout" ] || fail "$bs/$mode: layout classes: nostall '$nlayout', kernel '$klayout'"
		"$NOSTALL" mount -o "data=$mode" "$img" "$m" || { fail "$bs/$mode: nostall remount"; continue; }
		nseek=$(seeks "$m/f")
		[ "$nseek" = "$kseek" ] || fail "$bs/$mode: SEEK on the FUSE mount: '$nseek', kernel '$kseek'"
		cmp -s "$m/f" "$tmp/kf" || fail "$bs/$mode: bytes through the FUSE mount differ from the kernel's"
		"$NOSTALL" umount "$m" || fail "$bs/$mode: nostall umount (2)"
		kmount -o loop,ro "$img" "$k" || { fail "$bs/$mode: kernel mount of nostall's image"; continue; }
		kseek2=$(seeks "$k/f")
		[ "$kseek2" = "$kseek" ] || fail "$bs/$mode: SEEK by the kernel on nostall's image: '$kseek2', want '$kseek'"
		cmp -s "$k/f" "$tmp/kf" || fail "$bs/$mode: the kernel reads other bytes from nostall's image"
		nstat=$(stat -c "%s %b" "$k/f" "$k/g")
		[ "$nstat" = "$kstat" ] || fail "$bs/$mode: size/blocks '$nstat', kernel '$kstat'"
		umount "$k"
	done
done

# The CLI on the image: the same calls, the same layout (the last block
# size's).
img=$tmp/c.img
mkfs.ext4 -q -F -b "$bs" -O "$feat" "$img" 64M >/dev/null
"$NOSTALL" put "$img" "$tmp/pat" /f || fail "cli: put"
"$NOSTALL" fallocate -k -O 1M -l 512K "$img" /f &&
	"$NOSTALL" fallocate -p -O 102500 -l 307200 "$img" /f &&
	"$NOSTALL" fallocate -z -O 600000 -l 300000 "$img" /f &&
	"$NOSTALL" fallocate -O 2M -l 256K "$img" /f &&
	printf hello | "$NOSTALL" write "$img" /f $((1048576 + 204900)) &&
	"$NOSTALL" fallocate -z -k -O 3M -l 128K "$img" /f &&
	"$NOSTALL" fallocate -k -O 2359296 -l 64K "$img" /f &&
	"$NOSTALL" fallocate -p -O $((2359296 - 8192)) -l 1M "$img" /f &&
	"$NOSTALL" fallocate -z -k -O $((3 * 1048576 + 300000)) -l 10000 "$img" /f &&
	"$NOSTALL" fallocate -k -O $((4 * 1048576 + 100)) -l 5000 "$img" /f || fail "cli: the sequence"
e2fsck -fn "$img" >"$tmp/fsck" 2>&1 || { fail "cli: e2fsck"; cat "$tmp/fsck"; }
clayout=$(layout "$img" /f)
[ "$clayout" = "$klayout" ] || fail "cli: layout classes '$clayout', kernel '$klayout'"
"$NOSTALL" cat "$img" /f | cmp -s - "$tmp/kf" || fail "cli: bytes differ from the kernel's"
"$NOSTALL" fallocate -p -l 4K "$img" /f || fail "cli: punch at 0"
"$NOSTALL" fallocate -l 0 "$img" /f 2>/dev/null; [ $? -eq 2 ] || fail "cli: -l 0 is not a usage error"

# ext3: indirect-mapped files refuse as the kernel does.
img=$tmp/e3.img
"$NOSTALL" mkfs -q "$img" 32M || fail "ext3 mkfs"
"$NOSTALL" mount "$img" "$m" || fail "ext3: nostall mount"
echo data >"$m/f"
if fallocate -l 1M "$m/f" 2>"$tmp/err"; then
	fail "ext3: fallocate succeeded"
else
	grep -q "Operation not supported" "$tmp/err" || fail "ext3: fallocate said '$(cat "$tmp/err")'"
fi
fallocate -p -o 0 -l 4096 "$m/f" 2>/dev/null && fail "ext3: punch succeeded"
python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDONLY); print(os.lseek(fd,0,os.SEEK_DATA), os.lseek(fd,0,os.SEEK_HOLE))" "$m/f" >"$tmp/seek" || fail "ext3: SEEK"
[ "$(cat "$tmp/seek")" = "0 5" ] || fail "ext3: SEEK_DATA/HOLE gave '$(cat "$tmp/seek")'"
"$NOSTALL" umount "$m" || fail "ext3: nostall umount"
e2fsck -fn "$img" >/dev/null 2>&1 || fail "ext3: e2fsck"
"$NOSTALL" fallocate -l 1M "$img" /f 2>"$tmp/err" && fail "ext3: nostall fallocate succeeded"
grep -q "Operation not supported" "$tmp/err" || fail "ext3: nostall fallocate said '$(cat "$tmp/err")'"

if ls "$tmp"/san* >/dev/null 2>&1; then
	fail "sanitizer reports"
	cat "$tmp"/san*
fi
[ "$fails" -eq 0 ] && echo "PASS: ext4_falloc" || echo "FAIL: ext4_falloc ($fails)"
[ "$fails" -eq 0 ]
