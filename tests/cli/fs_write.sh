#!/usr/bin/env bash
# The writing commands (put, write, mkdir, rm, rmdir, mv, ln, truncate, chmod,
# chown, touch, xattr, chattr/lsattr) on ext3 images with 1 KiB and 4 KiB blocks: every
# command works, the image is left clean (e2fsck -fn, no needs_recovery),
# nostall's own view (cat, ls, stat, get -r) and debugfs's agree with what was
# written, and the error cases (missing path, EEXIST, ENOTEMPTY, a bad mode,
# ...) print one line on stderr, nothing on stdout and exit non-zero. As root
# with loop mounts, the kernel mounts each result read-only and must see the
# same tree (fs_compare.py, as tests/cli/fs_kernel_compare.sh does), POSIX
# ACLs included (put converts them to the on-disk form, get back).
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
export TZ=UTC
lib=$(cd "$(dirname "$0")/../lib" && pwd)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

tmp=$(mktemp -d /tmp/nostall-fswrite.XXXXXX)
mnt="$tmp/mnt"
mkdir "$mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

root=0
[ "$(id -u)" -eq 0 ] && root=1
can_mount=0
if [ $root -eq 1 ] && mke2fs -q -F -t ext3 "$tmp/probe.img" 4M 2>/dev/null &&
	kmount -o loop,ro -t ext3 "$tmp/probe.img" "$mnt" 2>/dev/null; then
	umount "$mnt"
	can_mount=1
fi
rm -f "$tmp/probe.img"
[ $can_mount -eq 1 ] || echo "NOTE: not root or no loop mounts: kernel checks skipped"

ns() { "$NOSTALL" "$@"; }

# ok ARGS...: the command must succeed and say nothing on stderr.
ok() {
	local err rc
	"$NOSTALL" "$@" 2>"$tmp/err" >"$tmp/out"
	rc=$?
	err=$(cat "$tmp/err")
	[ "$rc" -eq 0 ] || fail "nostall $*: exit $rc (stderr: $err)"
	[ -z "$err" ] || fail "nostall $*: stderr: $err"
}

# bad EXIT REGEX ARGS...: exit EXIT (nz: any failure), exactly one line on
# stderr matching REGEX, nothing on stdout.
bad() {
	local want=$1 re=$2 out err rc lines
	shift 2
	out=$("$NOSTALL" "$@" 2>"$tmp/err" </dev/null)
	rc=$?
	err=$(cat "$tmp/err")
	lines=$(wc -l <"$tmp/err")
	if [ "$rc" -ge 128 ] || [ "$rc" -eq 0 ] || { [ "$want" != nz ] && [ "$rc" -ne "$want" ]; }; then
		fail "nostall $*: exit $rc, want $want (stderr: $err)"
	fi
	[ -z "$out" ] || fail "nostall $*: printed on stdout: ${out:0:200}"
	[ "$lines" -eq 1 ] || fail "nostall $*: $lines lines on stderr: $err"
	printf '%s\n' "$err" | grep -Eqi -- "$re" || fail "nostall $*: message '$err' does not match /$re/"
	case $err in *AddressSanitizer*|*runtime\ error*) fail "nostall $*: sanitizer report: $err" ;; esac
}

# clean IMAGE WHAT: e2fsck -fn finds nothing and needs_recovery is off.
clean() {
	local out
	out=$(e2fsck -fn "$1" 2>&1) || { fail "$2: e2fsck -fn: $(printf '%s\n' "$out" | tail -8)"; }
	dumpe2fs -h "$1" 2>/dev/null | grep -q needs_recovery && fail "$2: needs_recovery left set"
}

# A stat field of nostall stat: "Size:", "Links:", "Access: (" ...
nstat() { # image path -> the whole stat output
	"$NOSTALL" stat "$1" "$2" 2>&1
}

# ---- the host tree that put copies in ----
src="$tmp/src"
mkdir -p "$src/dir/sub" "$src/empty"
printf 'hello, ext3\n' >"$src/small"
: >"$src/zero"
head -c 300000 /dev/urandom >"$src/dir/random"
truncate -s 5M "$src/sparse"
printf 'middle' | dd of="$src/sparse" bs=1 seek=1048576 conv=notrunc status=none
printf 'tail' | dd of="$src/sparse" bs=1 seek=$((5 * 1048576 - 4)) conv=notrunc status=none
ln -s small "$src/link"
ln -s "$(printf 'y%.0s' $(seq 1 200))" "$src/dir/slowlink"
ln "$src/dir/random" "$src/dir/sub/hard"
mkfifo "$src/fifo"
chmod 4755 "$src/small"
chmod 0750 "$src/dir"
chmod 1777 "$src/empty"
python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.color", b"blue"); os.setxattr(sys.argv[2], "user.big", os.urandom(600))' \
	"$src/small" "$src/dir" 2>/dev/null || echo "NOTE: host without user xattrs"
# POSIX ACLs (an access ACL on a file, a default one on a directory): put
# stores ext3's on-disk form, get gives the VFS form back, the kernel reads it
acls=0
if command -v setfacl >/dev/null 2>&1 && setfacl -m u:1234:rw,g:55:r "$src/dir/random" 2>/dev/null; then
	setfacl -d -m u:1234:rwx,g::rx "$src/empty" && setfacl -m u:99:rx "$src/empty" ||
		fail "setfacl on the source tree"
	acls=1
else
	echo "SKIP: POSIX ACLs in put/get (no setfacl, or the host's /tmp has no ACLs)"
fi
# acls_of ROOT: the ACLs of the paths that have them, numeric, paths relative
acls_of() { (cd "$1" && getfacl -n -p dir/random empty 2>&1); }
if [ $root -eq 1 ]; then
	chown 1234:5678 "$src/small"
	chown -h 42:43 "$src/link"
	mknod "$src/chr" c 1 3
	python3 -c 'import os,sys; os.setxattr(sys.argv[1], "trusted.t", b"secret")' "$src/zero" 2>/dev/null
fi
touch -h -d '2001-02-03 04:05:06.123456789' "$src/link" "$src/small" "$src/zero"
touch -d '1999-12-31 23:59:59' "$src/empty" "$src/dir/sub" "$src/dir" "$src"

FIELDS=type,mode,uid,gid,size,nlink,mtime,rdev,data,link,xattr,hlink

for bs in 1024 4096; do
	what="bs=$bs"
	img="$tmp/img-$bs"
	mke2fs -q -F -t ext3 -b $bs -I 256 "$img" 64M || { fail "$what: mke2fs"; continue; }

	# ---- put ----
	ok put -r "$img" "$src" /tree
	ok put "$img" "$src/small" /one          # a file
	ok mkdir "$img" /into
	ok put "$img" "$src/link" /into         # through the symlink, into the directory
	clean "$img" "$what: after put"
	[ "$(ns cat "$img" /one)" = "hello, ext3" ] || fail "$what: put of one file"
	[ "$(ns cat "$img" /into/link)" = "hello, ext3" ] || fail "$what: put into a directory"
	ns stat "$img" /into/link | grep -q "regular file" || fail "$what: put followed HOSTPATH's symlink"
	# holes stay holes: 5 MiB with 10 bytes of data takes a few blocks
	blocks=$(ns stat "$img" /tree/sparse | sed -n 's/.*Blocks: \([0-9]*\).*/\1/p')
	[ -n "$blocks" ] && [ "$blocks" -lt 64 ] || fail "$what: /tree/sparse takes $blocks sectors"
	cmp <(ns cat "$img" /tree/sparse) "$src/sparse" || fail "$what: /tree/sparse contents"
	# nostall's own view: get -r of the copy matches the source
	python3 "$lib/fs_compare.py" record "$src" "$tmp/src.json" >/dev/null
	rm -rf "$tmp/back"
	ok get -r "$img" /tree "$tmp/back"
	python3 "$lib/fs_compare.py" tree "$tmp/src.json" "$tmp/back" --fields=$FIELDS ||
		fail "$what: get -r of the put tree differs from the source"
	# the ACLs (fs_compare leaves system.* out): get -r gives the source's back
	if [ $acls -eq 1 ] && [ "$(acls_of "$tmp/back")" != "$(acls_of "$src")" ]; then
		fail "$what: get -r's ACLs differ from the source's: $(diff <(acls_of "$src") <(acls_of "$tmp/back") | head -5)"
	fi
	# debugfs agrees on a few things
	dbg=$(debugfs -R "stat /tree/dir/random" "$img" 2>/dev/null)
	printf '%s\n' "$dbg" | grep -q "Links: 2" || fail "$what: debugfs: /tree/dir/random links"
	printf '%s\n' "$dbg" | grep -q "Size: 300000" || fail "$what: debugfs: /tree/dir/random size"
	debugfs -R "cat /tree/small" "$img" 2>/dev/null | cmp -s - "$src/small" || fail "$what: debugfs cat"

	# ---- write ----
	printf 'hello' | ns write "$img" /w 0 || fail "$what: write (create)"
	printf 'XY' | ns write -o data=journal "$img" /w 3 || fail "$what: write at 3 (-o before)"
	printf 'Z' | ns write "$img" /w 10 -o data=writeback || fail "$what: write past EOF (-o after)"
	[ "$(ns cat "$img" /w | od -An -c | tr -s ' ')" = " h e l X Y \0 \0 \0 \0 \0 Z" ] ||
		fail "$what: write contents: $(ns cat "$img" /w | od -An -c)"
	head -c 2000000 /dev/urandom >"$tmp/big"
	ns write "$img" /big 0 <"$tmp/big" || fail "$what: write of 2 MB"
	cmp <(ns cat "$img" /big) "$tmp/big" || fail "$what: /big contents"
	ns write "$img" /big 100 </dev/null || fail "$what: an empty write"
	[ "$(ns stat "$img" /big | sed -n 's/.*Size: \([0-9]*\).*/\1/p')" = 2000000 ] ||
		fail "$what: write truncated /big"

	# ---- mkdir, ln, mv, truncate, chmod, chown, touch, xattr ----
	ok mkdir -p "$img" /p/q/r /p/q
	ok mkdir -m 0700 "$img" /m /m2
	nstat "$img" /m | grep -q "Access: (0700/drwx------)" || fail "$what: mkdir -m 0700"
	ok ln -s "$img" ../one /p/sl
	[ "$(ns cat "$img" /p/sl)" = "hello, ext3" ] || fail "$what: ln -s"
	ok ln "$img" /one /p/hard
	nstat "$img" /one | grep -q "Links: 2" || fail "$what: ln (hard)"
	ok mv "$img" /p/hard /moved
	ok mv "$img" /moved /m            # into the directory
	nstat "$img" /m/moved | grep -q "Links: 2" || fail "$what: mv"
	ok truncate "$img" /m/moved 100K
	[ "$(ns stat "$img" /one | sed -n 's/.*Size: \([0-9]*\).*/\1/p')" = 102400 ] || fail "$what: truncate"
	ok chmod "$img" 2751 /one
	nstat "$img" /one | grep -q "Access: (2751/" || fail "$what: chmod"
	ok chown "$img" 777:888 /one
	ok chown "$img" :999 /one
	nstat "$img" /one | grep -q "Uid: 777  Gid: 999" || fail "$what: chown: $(nstat "$img" /one | grep Uid)"
	ok touch "$img" /new
	nstat "$img" /new | grep -q "Size: 0 " || fail "$what: touch (create)"
	ok put "$img" "$src/zero" /old
	ok touch "$img" /old
	nstat "$img" /old | grep -q "Modify: 2001" && fail "$what: touch kept the old mtime"
	# stat prints printable UTF-8 as it is, and escapes what would not
	# read back: a C1 control (U+0085), a byte that is not UTF-8, a
	# backslash
	odd=$(printf '/n\xc3\xa9\xc2\x85\xff\\z\xf0\x9f\x98\x80')
	ok touch "$img" "$odd"
	[ "$(nstat "$img" "$odd" | head -1)" = "  File: /n$(printf '\xc3\xa9')\\xc2\\x85\\xff\\\\z$(printf '\xf0\x9f\x98\x80')" ] ||
		fail "$what: stat's name: $(nstat "$img" "$odd" | head -1)"
	ok xattr "$img" set /one user.k "some value"
	[ "$(ns xattr "$img" get /one user.k)" = "some value" ] || fail "$what: xattr get"
	ns xattr "$img" list /tree/small | grep -qx "user.color" || fail "$what: xattr list"
	ok xattr "$img" rm /one user.k
	# ---- chattr, lsattr ----
	ok chattr "$img" +dA /one
	[ "$(ns lsattr "$img" /one)" = "------dA----- /one" ] || fail "$what: lsattr after chattr +dA: $(ns lsattr "$img" /one 2>&1)"
	ok chattr "$img" +i /one
	bad 1 "Operation not permitted" write "$img" /one 0
	bad 1 "Operation not permitted" chmod "$img" 644 /one
	bad 1 "Operation not permitted" rm "$img" /one
	ok chattr "$img" =dA /one
	ok chattr "$img" +D /m
	[ "$(ns lsattr "$img" /m)" = "---D--------- /m" ] || fail "$what: lsattr of a dirsync directory"
	bad 1 "not supported" chattr "$img" +j /one
	bad 2 "invalid flags" chattr "$img" +Q /one
	bad 2 "invalid flags" chattr "$img" +I /one
	bad 1 "No such file" lsattr "$img" /nope

	# ---- rm, rmdir ----
	ok rm "$img" /w /new /old
	ok rm -r "$img" /p
	ok rmdir "$img" /m2
	for p in /w /new /p /m2; do
		ns stat "$img" $p >/dev/null 2>&1 && fail "$what: $p still there"
	done

	# ---- errors: one line, non-zero, nothing changed ----
	bad 1 "File exists" mkdir "$img" /m
	bad 1 "Directory not empty" rmdir "$img" /tree
	bad 1 "No such file" rm "$img" /nope
	bad 1 "Is a directory" rm "$img" /tree
	bad 1 "Not a directory" rmdir "$img" /one
	bad 1 "No such file" mkdir "$img" /no/such/dir
	bad 1 "No such file" mv "$img" /nope /x
	bad 1 "No such file" write "$img" /nodir/x 0
	bad 1 "No such file" truncate "$img" /nope 1
	bad 1 "No such file" chmod "$img" 644 /nope
	bad 1 "No data|attribute" xattr "$img" get /one user.none
	bad 1 "File exists" ln -s "$img" x /one
	bad 1 "Operation not permitted" ln "$img" /tree /hardtodir
	bad 1 "too long" mkdir "$img" "/$(printf 'x%.0s' $(seq 1 300))"
	bad 2 "invalid mode" chmod "$img" 999 /one
	bad 2 "invalid mode" mkdir -m rwx "$img" /bad
	bad 2 "invalid owner" chown "$img" bob /one
	bad 2 "invalid size" truncate "$img" /one 12Q
	bad 2 "invalid offset" write "$img" /one 3x
	bad 2 "unknown operation" xattr "$img" frob /one
	bad 1 "read-only|ro" mkdir -o ro "$img" /ro
	clean "$img" "$what: at the end"

	# ---- the kernel sees the same tree ----
	if [ $can_mount -eq 1 ]; then
		if kmount -o loop,ro,noatime -t ext3 "$img" "$mnt"; then
			mounted=$mnt
			python3 "$lib/fs_compare.py" tree "$tmp/src.json" "$mnt/tree" --fields=$FIELDS ||
				fail "$what: the kernel's /tree differs from the source"
			python3 "$lib/fs_compare.py" record "$mnt" "$tmp/k.json" >/dev/null
			if [ $acls -eq 1 ] && [ "$(acls_of "$mnt/tree")" != "$(acls_of "$src")" ]; then
				fail "$what: the kernel's ACLs differ from the source's: $(diff <(acls_of "$src") <(acls_of "$mnt/tree") | head -5)"
			fi
			# e2fsprogs' lsattr through the kernel: the flags chattr set
			kfl=$(lsattr -d "$mnt/one" 2>&1 | cut -c1-8)
			[ "$kfl" = "------dA" ] || fail "$what: the kernel's lsattr of /one: $kfl"
			kfl=$(lsattr -d "$mnt/m" 2>&1 | cut -c1-8)
			[ "$kfl" = "---D----" ] || fail "$what: the kernel's lsattr of /m: $kfl"
			umount "$mnt" && mounted="" || fail "$what: umount"
			python3 "$lib/fs_compare.py" stat "$NOSTALL" "$img" "$tmp/k.json" ||
				fail "$what: nostall stat differs from the kernel"
			python3 "$lib/fs_compare.py" ls "$NOSTALL" "$img" "$tmp/k.json" ||
				fail "$what: nostall ls -lRi differs from the kernel"
		else
			fail "$what: the kernel cannot mount the result"
		fi
	fi
	rm -f "$img"
done

if [ $fails -ne 0 ]; then
	echo "fs_write: $fails failures"
	exit 1
fi
echo "fs_write: ok"
