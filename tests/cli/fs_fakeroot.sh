#!/usr/bin/env bash
# -o fakeroot (issue 37: "an unprivileged user with -o fakeroot fills an
# image with root-owned files, set-id programs and device nodes that the
# kernel then mounts and shows as made"):
#   1. an unprivileged user (setpriv --reuid=65534 --regid=65534
#      --clear-groups) owns an image file; through the CLI with -o fakeroot
#      it puts a file and a tree, makes directories, a setuid and a setgid
#      program, character and block devices and a fifo, chowns one file to
#      another owner; without fakeroot the same user gets EACCES/EPERM and
#      what it makes is its own;
#   2. through the FUSE mount with -o fakeroot as that user (when
#      /dev/fuse can be opened by it, granted with an ACL as fuse_basic.sh
#      does): new files are root's, chown and chmod 4755 with the host's
#      own tools (device nodes: not through a mount, see below);
#   3. as root, e2fsck -fn is clean and the kernel mounts the image
#      read-only: stat shows every owner, mode and device number as made.
# Needs root (to switch users and loop-mount): exits 77 otherwise.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export TZ=UTC PATH="$PATH:/sbin:/usr/sbin"
umask 022
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root (the test switches users and loop-mounts)"
	exit 77
fi
for tool in setpriv e2fsck; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed"; exit 77; }
done

U=65534
asuser() { setpriv --reuid=$U --regid=$U --clear-groups "$@"; }

tmp=$(mktemp -d /tmp/nostall-fakeroot.XXXXXX)
chmod 755 "$tmp"
mnt=$tmp/mnt
fm=$tmp/fm
mkdir -p "$mnt" "$fm"
mounted=""
fuse_acl=""
cleanup() {
	[ -n "$fuse_acl" ] && (cd / && setfacl --restore="$tmp/fuse.acl")
	mountpoint -q "$fm" 2>/dev/null && { umount "$fm" 2>/dev/null || umount -l "$fm"; }
	[ -n "$mounted" ] && umount "$mounted" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT

img=$tmp/u.img
"$NOSTALL" mkfs -q "$img" 16M || { echo "FAIL: mkfs"; exit 1; }
chown $U:$U "$img"
mkdir -p "$tmp/src/tree/sub"
printf '#!/bin/sh\necho hi\n' >"$tmp/src/prog"
echo a >"$tmp/src/tree/a"
echo b >"$tmp/src/tree/sub/b"
chown -R $U:$U "$tmp/src"

us() { # the user's nostall command, must succeed
	local out
	out=$(asuser "$NOSTALL" "$@" 2>&1) || fail "as $U: nostall $*: $out"
}

# ---- without fakeroot: the user's own credentials ----
if out=$(asuser "$NOSTALL" mknod "$img" /dev0 c 1 3 2>&1); then
	fail "an unprivileged user made a device node"
fi
if out=$(asuser "$NOSTALL" mkdir "$img" /mine 2>&1); then
	fail "an unprivileged user wrote in root's 0755 /"
fi

# ---- with fakeroot: root inside the image ----
F=(-o fakeroot)
us mkdir "${F[@]}" "$img" /bin /dev /home
us put "${F[@]}" "$img" "$tmp/src/prog" /bin/suidprog
us chmod "${F[@]}" "$img" 4755 /bin/suidprog
us put "${F[@]}" "$img" "$tmp/src/prog" /bin/sgidprog
us chmod "${F[@]}" "$img" 2755 /bin/sgidprog
us put -r "${F[@]}" "$img" "$tmp/src/tree" /tree
us chown "${F[@]}" "$img" 0:0 /tree/a
us mknod "${F[@]}" -m 0666 "$img" /dev/null c 1 3
us mknod "${F[@]}" -m 0660 "$img" /dev/sda b 8 0
us mknod "${F[@]}" -m 0644 "$img" /dev/fifo p
us mkdir "${F[@]}" "$img" /home/user
us chown "${F[@]}" "$img" 1234:5678 /home/user
printf 'x' | asuser "$NOSTALL" write "${F[@]}" "$img" /bin/suidprog 0 ||
	fail "fakeroot write"
# expected: PATH TYPE MODE UID GID [MAJOR:MINOR]
expect=(
	"/bin directory 755 0 0"
	"/bin/suidprog regular 4755 0 0"
	"/bin/sgidprog regular 2755 0 0"
	"/tree/a regular 644 0 0"
	"/dev/null character 666 0 0 1:3"
	"/dev/sda block 660 0 0 8:0"
	"/dev/fifo fifo 644 0 0"
	"/home/user directory 755 1234 5678"
)

# ---- FUSE -o fakeroot as the user ----
fuse=0
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
	if ! asuser test -r /dev/fuse -a -w /dev/fuse; then
		getfacl -p /dev/fuse >"$tmp/fuse.acl" 2>/dev/null
		if command -v setfacl >/dev/null 2>&1 && setfacl -m "u:$U:rw" /dev/fuse 2>/dev/null; then
			fuse_acl=1
		fi
	fi
	asuser test -r /dev/fuse -a -w /dev/fuse && fuse=1
fi
if [ $fuse -eq 1 ]; then
	chown $U "$fm"
	if asuser "$NOSTALL" mount -o fakeroot "$img" "$fm"; then
		# (device nodes: the kernel refuses mknod(2) of one to a caller
		# without CAP_MKNOD before the daemon is asked; fifos it lets by)
		asuser sh -c "mkfifo -m 620 '$fm/dev/fifo2' &&
			cp '$tmp/src/prog' '$fm/bin/fuseprog' && chmod 4755 '$fm/bin/fuseprog' &&
			mkdir '$fm/srv' && chown 42:43 '$fm/srv' && echo hi >'$fm/srv/f' &&
			chown 42:43 '$fm/srv/f'" 2>&1 || fail "fakeroot FUSE mount: mknod/chown/chmod as $U"
		[ "$(asuser stat -c %u "$fm/bin/fuseprog" 2>/dev/null)" = 0 ] || fail "fakeroot FUSE: a new file is not root's"
		asuser "$NOSTALL" umount "$fm" || fail "unprivileged umount"
		expect+=(
			"/dev/fifo2 fifo 620 0 0"
			"/bin/fuseprog regular 4755 0 0"
			"/srv directory 755 42 43"
			"/srv/f regular 644 42 43"
		)
	else
		fail "unprivileged mount -o fakeroot"
	fi
else
	echo "note: /dev/fuse not usable by $U here: the FUSE part is not run"
fi

# ---- the kernel's view ----
if ! out=$(e2fsck -fn "$img" 2>&1); then
	fail "e2fsck -fn: $(echo "$out" | head -5)"
fi
if ! kmount -o loop,ro -t ext3 "$img" "$mnt"; then
	echo "SKIP: the kernel cannot loop-mount ext3 here"
	exit 77
fi
mounted=$mnt
for e in "${expect[@]}"; do
	set -- $e
	got=$(stat -c '%F %a %u %g' "$mnt$1" 2>&1)
	want="$2 $3 $4 $5"
	case $2 in
	character) want="character special file $3 $4 $5" ;;
	block) want="block special file $3 $4 $5" ;;
	regular) want="regular file $3 $4 $5" ;;
	esac
	if [ "$got" != "$want" ]; then
		fail "$1: the kernel shows '$got', made as '$want'"
	elif [ -n "${6:-}" ]; then
		dev=$(stat -c '%Hr:%Lr' "$mnt$1")
		[ "$dev" = "$6" ] || fail "$1: device $dev, made as $6"
	fi
done
[ "$(cat "$mnt/bin/suidprog" | head -c 1)" = x ] || fail "/bin/suidprog: the write is not there"
umount "$mnt"
mounted=""

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "fs_fakeroot: ok"
