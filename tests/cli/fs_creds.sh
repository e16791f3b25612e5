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
# Also: the unprivileged user is refused (EACCES) where root is not; files
# whose POSIX ACLs the kernel set (deny, named user, named group, mask) are
# read by that user through nostall exactly when the kernel lets it; a file
# nostall creates in a directory with a default ACL gets the ACL and mode
# the kernel gives its own.
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

# ---- POSIX ACLs: the kernel sets them, nostall and the kernel judge ----
if command -v setfacl >/dev/null 2>&1 && command -v getfacl >/dev/null 2>&1; then
	aimg=$tmp/acl.img
	ns mkfs -q "$aimg" 8M
	kmount -o loop -t ext3 "$aimg" "$mnt" || fail "kernel mount of the ACL image"
	mounted=$mnt
	chmod 755 "$mnt"
	for f in deny grant group mask; do echo secret >"$mnt/$f"; chmod 640 "$mnt/$f"; done
	chown 0:4242 "$mnt/group"
	setfacl -m u:1000:rw "$mnt/deny"         # names another user: 65534 is other (---)
	setfacl -m u:$U:r "$mnt/grant"           # names the user
	setfacl -m g:$U:r "$mnt/group"           # names the user's group
	setfacl -m u:$U:rw "$mnt/mask" && chmod 600 "$mnt/mask" # the mask takes the group bits: ---
	mkdir "$mnt/d" && setfacl -d -m u:$U:rwx,g::rx,o::- "$mnt/d" && touch "$mnt/d/bykernel"
	declare -A kread
	for f in deny grant group mask; do
		if asuser cat "$mnt/$f" >/dev/null 2>&1; then kread[$f]=yes; else kread[$f]=no; fi
	done
	umount "$mnt"
	mounted=""
	chown $U "$aimg" # the user's image (a read mount opens it for writing too)
	for f in deny grant group mask; do
		if asuser "$NOSTALL" cat "$aimg" "/$f" >/dev/null 2>&1; then n=yes; else n=no; fi
		if [ "$n" != "${kread[$f]}" ]; then
			fail "ACL /$f: the user reads through nostall: $n, through the kernel: ${kread[$f]}"
		else
			echo "ok: ACL /$f: read by $U: $n (as the kernel)"
		fi
	done
	# a new file in a directory with a default ACL, made by nostall (umask
	# 022, mode 0666 asked): the kernel must show the ACL its own got
	chown 0 "$aimg"
	printf 'x' | "$NOSTALL" write "$aimg" /d/bynostall 0 || fail "nostall write in /d"
	kmount -o loop,ro -t ext3 "$aimg" "$mnt" || fail "kernel mount of the ACL image (2)"
	mounted=$mnt
	a=$(cd "$mnt/d" && getfacl -n -p bykernel 2>&1 | sed 1d)
	b=$(cd "$mnt/d" && getfacl -n -p bynostall 2>&1 | sed 1d)
	[ "$a" = "$b" ] || fail "inherited ACL: kernel's file: $a; nostall's: $b"
	[ "$(stat -c %a "$mnt/d/bynostall")" = "$(stat -c %a "$mnt/d/bykernel")" ] ||
		fail "inherited mode: $(stat -c %a "$mnt/d/bynostall") against the kernel's $(stat -c %a "$mnt/d/bykernel")"
	umount "$mnt"
	mounted=""
	kimg_acl=$aimg
else
	echo "note: setfacl/getfacl not installed: the ACL part is not run"
	kimg_acl=""
fi

for i in "$img" "$kimg" $kimg_acl; do
	if ! out=$(e2fsck -fn "$i" 2>&1); then
		fail "e2fsck -fn $(basename "$i"): $(echo "$out" | head -5)"
	fi
done

if [ $fails -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "fs_creds: ok"
