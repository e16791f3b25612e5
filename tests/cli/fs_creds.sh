#!/usr/bin/env bash
# The CLI acts with its own process's credentials, and a data write or a
# truncate keeps or clears setuid/setgid as the Linux kernel does for the
# same caller (issue 37: "Through the CLI as root and as an unprivileged
# owner of an image, a data write keeps and clears setuid as the kernel
# does for the same caller"). The kernel is the oracle:
#   1. nostall makes files with set-id modes and owners on one image, which
#      is copied; the copy is loop-mounted by the kernel;
#   2. each case's write (or truncate) is made by `nostall write` on the
#      image and by dd (truncate(1)) on the kernel's mount, as root or as
#      an unprivileged user (setpriv --reuid=65534 --regid=65534
#      --clear-groups; the image file is that user's);
#   3. the modes must agree, case by case; both images stay e2fsck -fn
#      clean.
# Also: the unprivileged user is refused (EACCES) where root is not.
# Needs root, setpriv and loop mounts: exits 77 with the reason otherwise.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export TZ=UTC PATH="$PATH:/sbin:/usr/sbin"
umask 022
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root (the kernel must mount the images; the test switches users)"
	exit 77
fi
for tool in setpriv e2fsck dd; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not installed"
		exit 77
	fi
done

U=65534 # the unprivileged user and group (nobody / nogroup)
asuser() { setpriv --reuid=$U --regid=$U --clear-groups "$@"; }

tmp=$(mktemp -d /tmp/nostall-creds.XXXXXX)
chmod 755 "$tmp" # the user reaches its image
mnt="$tmp/mnt"
mkdir -p "$mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

ns() { # nostall as root, must succeed
	local out
	out=$("$NOSTALL" "$@" 2>&1) || fail "nostall $*: $out"
}
# modes as 4 octal digits
mode_ns() { printf '%04o' $((8#$("$NOSTALL" stat "$img" "$1" | sed -n 's/^Access: (\([0-7]*\)\/.*/\1/p'))); }
mode_k() { printf '%04o' $((8#$(stat -c %a "$mnt$1"))); }

img=$tmp/i.img
kimg=$tmp/k.img
printf 'x' >"$tmp/data"
chmod 644 "$tmp/data"

# case: NAME OWNER MODE WHO OP (OP: write or trunc)
cases=(
	"r_suid 0:0 4755 root write"
	"r_sgid 0:0 2755 root write"
	"r_both 0:0 6755 root trunc"
	"r_user 65534:65534 6755 root write"
	"u_suid 65534:65534 4755 user write"
	"u_sgidx 65534:65534 2755 user write"
	"u_sgid_nox 65534:65534 2745 user write"
	"u_sgid_nox_other 65534:0 2745 user write"
	"u_both 65534:65534 6775 user write"
	"u_trunc 65534:65534 4755 user trunc"
	"u_plain 65534:65534 0755 user write"
)

ns mkfs -q "$img" 8M
for c in "${cases[@]}"; do
	set -- $c
	printf 'hello world\n' | "$NOSTALL" write "$img" "/$1" 0 || fail "write /$1"
	ns chown "$img" "$2" "/$1"
	ns chmod "$img" "$3" "/$1"
done
# the root directory open to the user (for the kernel side's dd)
ns chmod "$img" 0777 /
cp "$img" "$kimg"
chown $U:$U "$img"

# nostall's side
for c in "${cases[@]}"; do
	set -- $c
	run=()
	[ "$4" = user ] && run=(setpriv --reuid=$U --regid=$U --clear-groups)
	if [ "$5" = write ]; then
		"${run[@]}" "$NOSTALL" write "$img" "/$1" 3 <"$tmp/data" || fail "nostall write /$1 as $4"
	else
		"${run[@]}" "$NOSTALL" truncate "$img" "/$1" 5 || fail "nostall truncate /$1 as $4"
	fi
done

# the kernel's side
if ! kmount -o loop -t ext3 "$kimg" "$mnt"; then
	echo "SKIP: the kernel cannot loop-mount ext3 here"
	exit 77
fi
mounted=$mnt
for c in "${cases[@]}"; do
	set -- $c
	run=()
	[ "$4" = user ] && run=(setpriv --reuid=$U --regid=$U --clear-groups)
	if [ "$5" = write ]; then
		"${run[@]}" dd of="$mnt/$1" bs=1 seek=3 conv=notrunc status=none <"$tmp/data" ||
			fail "kernel: dd /$1 as $4"
	else
		"${run[@]}" truncate -s 5 "$mnt/$1" || fail "kernel: truncate /$1 as $4"
	fi
done
for c in "${cases[@]}"; do
	set -- $c
	k=$(mode_k "/$1")
	n=$(mode_ns "/$1")
	if [ "$n" != "$k" ]; then
		fail "/$1 ($3, $2, $5 by $4): nostall leaves $n, the kernel $k"
	else
		echo "ok: /$1 ($3, owner $2, $5 by $4) -> $k"
	fi
done
umount "$mnt"
mounted=""

# the issue's example, as it reads: root keeps 4755, the image owner clears it
[ "$(mode_ns /r_suid)" = 4755 ] || fail "root's write cleared setuid: $(mode_ns /r_suid)"
[ "$(mode_ns /u_suid)" = 0755 ] || fail "the user's write kept setuid: $(mode_ns /u_suid)"

# the user is refused what its credentials do not allow; root is not
if out=$(asuser "$NOSTALL" write "$img" /r_suid 0 <"$tmp/data" 2>&1); then
	fail "the user wrote root's 4755 file"
else
	case $out in *"Permission denied"*) ;; *) fail "refusal: $out" ;; esac
fi
ns chmod "$img" 0755 /
if out=$(asuser "$NOSTALL" mkdir "$img" /d 2>&1); then
	fail "the user made a directory in root's 0755 /"
else
	case $out in *"Permission denied"*) ;; *) fail "mkdir refusal: $out" ;; esac
fi
asuser "$NOSTALL" chmod "$img" 0700 /r_user || fail "the user could not chmod its own file"
if out=$(asuser "$NOSTALL" chmod "$img" 0777 /r_suid 2>&1); then
	fail "the user chmod'ed root's file"
else
	case $out in *"Operation not permitted"*) ;; *) fail "chmod refusal: $out" ;; esac
fi

for i in "$img" "$kimg"; do
	if ! out=$(e2fsck -fn "$i" 2>&1); then
		fail "e2fsck -fn $(basename "$i"): $(echo "$out" | head -5)"
	fi
done

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "fs_creds: ok"
