#!/usr/bin/env bash
# ext4's metadata written by nostall (issue 39 item 2; docs/ext4-csum.md,
# "The write side"): on images from Debian 12's mkfs.ext4 - its default set
# (metadata_csum, 64bit, flex_bg, extent ...) at 1 KiB and 4 KiB blocks,
# ^extent (indirect files from the root down), and ^metadata_csum,uninit_bg
# (crc16 descriptors) - nostall creates a seeded tree (put -r: many files
# across groups, so uninitialised groups come into use; a 400-name htree
# directory; symlinks, hard links, small and block-sized xattrs, POSIX
# ACLs) and then changes it (xattrs set and removed, hard links, renames
# of files and directories, unlinks, rm -r, truncate, chmod, mkdir trees).
# New inodes carry i_extra_isize 32 and a creation time the kernel sees.
# After every step e2fsck -fn is clean: it checks every checksum
# (superblock, descriptors, bitmaps, inodes, directory leaves and htree
# blocks, xattr blocks) and the uninit flags against the bitmaps. dumpe2fs
# then shows no group left INODE_UNINIT with inodes in use, and none
# INODE-initialised but BLOCK_UNINIT (the kernel writes a group's block
# bitmap with its first inode; nostall does the same). As root the kernel
# mounts the result read-only and its view must equal the same operations
# done on a host copy (tests/lib/treecmp.py), then mounts it read-write,
# changes it, and e2fsck is clean again.
#
# Nostall's files here are indirect-mapped (the extent write side is
# another part of issue 39): on the default layout the tree lives in /w,
# a directory nostall makes (the root and lost+found are extent-mapped).
set -u
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
export PATH="$PATH:/sbin:/usr/sbin"
here=$(cd "$(dirname "$0")/../.." && pwd)
for t in mkfs.ext4 e2fsck dumpe2fs python3; do
	command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done
tmp=$(mktemp -d /tmp/nostall-e4w.XXXXXX)
mnt=$tmp/m
mkdir -p "$mnt"
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

seed=${NOSTALL_SEED:-39}
echo "seed $seed (NOSTALL_SEED)"
src=$tmp/src
mkdir -p "$src"
python3 - "$src" "$seed" <<'PY'
import os, random, sys
root, seed = sys.argv[1], int(sys.argv[2])
os.chdir(root)
r = random.Random(seed)
for d in range(16):
    os.makedirs('d%02d/sub/deeper' % d, exist_ok=True)
    for i in range(30):
        with open('d%02d/f%03d' % (d, i), 'wb') as f:
            f.write(r.randbytes(r.choice([0, 1, 100, 1500, 5000, 40000])))
os.makedirs('htree', exist_ok=True)
for i in range(400):
    with open('htree/a_rather_long_file_name_%04d' % i, 'w') as f:
        f.write(str(i))
os.symlink('x' * 200, 'longlink')
os.symlink('d00/f001', 'shortlink')
os.link('d00/f002', 'd01/hard')
os.setxattr('d00/f003', 'user.color', b'blue')
os.setxattr('d00/f004', 'user.big', r.randbytes(700))   # past the inode body
os.setxattr('d00', 'user.dir', b'yes')
os.chmod('d00/f005', 0o4755)
PY
acls=0
if command -v setfacl >/dev/null && setfacl -m u:1234:rw,g:55:r "$src/d00/f006" 2>/dev/null &&
	setfacl -d -m u:1234:rwx,g::rx "$src/d01"; then
	acls=1
else
	echo "NOTE: no POSIX ACLs on the host's /tmp: ACLs not checked"
fi

can_mount=0
if [ "$(id -u)" -eq 0 ]; then
	can_mount=1
else
	echo "SKIP: the kernel checks need root (loop mounts)" >&2
fi

# clean WHAT: e2fsck -fn finds nothing.
clean() {
	local out
	out=$(e2fsck -fn "$img" 2>&1) || fail "[$lay] $1: e2fsck -fn: $(printf '%s\n' "$out" | grep -v '^Pass\|^e2fsck\|^Checking' | head -6 | tr '\n' ';')"
}

# op WHAT NOSTALL-ARGS -- HOST-COMMAND...: the change on the image and the
# same change on the host's expected tree ($exp), then e2fsck.
op() {
	local what=$1
	shift
	local args=()
	while [ "$1" != -- ]; do
		args+=("$1")
		shift
	done
	shift
	if ! "$NOSTALL" "${args[0]}" "$img" "${args[@]:1}" 2>"$tmp/err" >/dev/null; then
		fail "[$lay] $what: nostall ${args[*]}: $(head -2 "$tmp/err")"
	fi
	(cd "$exp" && "$@") || fail "[$lay] $what: the host's side"
	clean "$what"
}

# The uninit flags as the kernel leaves them (dumpe2fs per group).
flags_check() {
	local ipg
	ipg=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Inodes per group: *//p')
	dumpe2fs "$img" 2>/dev/null | awk -v ipg="$ipg" -v lay="$lay" '
		/^Group [0-9]+:/ { g = $2; flags = $0; next }
		/free inodes,/ && g != "" {
			split($0, a, ","); fi = a[2] + 0
			if (flags ~ /INODE_UNINIT/ && fi != ipg)
				print "FAIL: [" lay "] group " g " INODE_UNINIT with inodes in use"
			if (flags !~ /INODE_UNINIT/ && flags ~ /BLOCK_UNINIT/ && fi != ipg)
				print "FAIL: [" lay "] group " g " has inodes but BLOCK_UNINIT (the kernel writes the block bitmap with the first inode)"
			if (fi != ipg) used++
			g = ""
		}
		END { if (used < 2) print "FAIL: [" lay "] inodes in " used + 0 " group(s) only: no uninitialised group came into use" }
	' >"$tmp/flags"
	if [ -s "$tmp/flags" ]; then
		fails=$((fails + $(wc -l <"$tmp/flags")))
		cat "$tmp/flags"
	fi
}

# Few inodes per group (-N), so that the ~1,000 of the tree fill several
# groups: with flex_bg the kernel (and nostall) pack a flex group's inodes
# into its first groups, one after the other.
layouts=("-b 1024 -N 2048" "-b 4096 -g 4096 -N 2048" "-b 1024 -N 2048 -O ^metadata_csum,uninit_bg"
	 "-b 4096 -g 4096 -N 2048 -O ^extent,^64bit")
img=$tmp/i.img
for lay in "${layouts[@]}"; do
	rm -f "$img"
	# shellcheck disable=SC2086
	mkfs.ext4 -q -F $lay "$img" 96M >/dev/null 2>&1 || { fail "[$lay] mkfs.ext4"; continue; }
	exp=$tmp/exp
	rm -rf "$exp"
	mkdir -p "$exp"
	# ---- the tree ----
	t0=$(date +%s)
	op "mkdir" mkdir /w -- mkdir w
	op "put -r" put -r "$src" /w/t -- cp -a "$src" w/t
	op "mkdir -p" mkdir -p /w/new/a/b/c -- mkdir -p w/new/a/b/c
	# ---- changes ----
	op "xattr set" xattr set /w/t/d02/f000 user.k v1 -- python3 -c 'import os; os.setxattr("w/t/d02/f000", "user.k", b"v1")'
	big=$(head -c 600 /dev/zero | tr '\0' b)
	op "xattr set (block)" xattr set /w/t/d02/f001 user.big "$big" -- \
		python3 -c 'import os,sys; os.setxattr("w/t/d02/f001", "user.big", sys.argv[1].encode())' "$big"
	op "xattr replace (block)" xattr set /w/t/d00/f004 user.big "$big" -- \
		python3 -c 'import os,sys; os.setxattr("w/t/d00/f004", "user.big", sys.argv[1].encode())' "$big"
	op "xattr rm" xattr rm /w/t/d00/f003 user.color -- python3 -c 'import os; os.removexattr("w/t/d00/f003", "user.color")'
	op "xattr rm (block)" xattr rm /w/t/d02/f001 user.big -- python3 -c 'import os; os.removexattr("w/t/d02/f001", "user.big")'
	op "link" ln /w/t/d03/f000 /w/t/d04/hard -- ln w/t/d03/f000 w/t/d04/hard
	op "symlink" ln -s ../d05/f001 /w/t/d04/sym -- ln -s ../d05/f001 w/t/d04/sym
	op "rename dir" mv /w/t/d06 /w/t/d07/moved -- mv w/t/d06 w/t/d07/moved
	op "rename over" mv /w/t/d08/f000 /w/t/d09/f000 -- mv -f w/t/d08/f000 w/t/d09/f000
	op "rename in htree" mv /w/t/htree/a_rather_long_file_name_0001 /w/t/htree/renamed -- \
		mv w/t/htree/a_rather_long_file_name_0001 w/t/htree/renamed
	op "unlink" rm /w/t/d10/f001 -- rm w/t/d10/f001
	op "unlink (htree)" rm /w/t/htree/a_rather_long_file_name_0100 -- rm w/t/htree/a_rather_long_file_name_0100
	op "unlink a hard link" rm /w/t/d01/hard -- rm w/t/d01/hard
	op "rm -r" rm -r /w/t/d11 -- rm -r w/t/d11
	op "rmdir" rmdir /w/new/a/b/c -- rmdir w/new/a/b/c
	op "truncate" truncate /w/t/d12/f002 100 -- truncate -s 100 w/t/d12/f002
	op "truncate up" truncate /w/t/d12/f003 70000 -- truncate -s 70000 w/t/d12/f003
	op "chmod" chmod 0600 /w/t/d12/f004 -- chmod 0600 w/t/d12/f004
	flags_check
	# a new inode has the kernel's 32 extra bytes (i_checksum_hi, the time
	# extras, i_crtime, i_version_hi, i_projid)
	debugfs -R "stat /w/t/d00/f000" "$img" 2>/dev/null | grep -q "Size of extra inode fields: 32" ||
		fail "[$lay] a new inode's i_extra_isize is not 32"
	# ---- the kernel reads it, then writes it ----
	if [ $can_mount -eq 1 ]; then
		if kmount -o loop,ro "$img" "$mnt"; then
			# times of what the steps changed are each side's own clock:
			# the directories' and the truncated files' are taken over
			python3 - "$exp/w" "$mnt/w" <<'PY2'
import os, sys
exp, got = sys.argv[1], sys.argv[2]
for d, dirs, files in os.walk(exp):
    rel = os.path.relpath(d, exp)
    names = [rel] + [os.path.join(rel, f) for f in ('d12/f002', 'd12/f003') if rel == 't']
    for n in names:
        g = os.path.join(got, n)
        if os.path.exists(g):
            st = os.stat(g)
            os.utime(os.path.join(exp, n), ns=(st.st_atime_ns, st.st_mtime_ns))
PY2
			python3 "$here/tests/lib/treecmp.py" "$exp/w" "$mnt/w" >"$tmp/cmp" ||
				fail "[$lay] the kernel's view differs: $(head -5 "$tmp/cmp" | tr '\n' ';')"
			# creation time (i_crtime, with nanoseconds) set at create
			born=$(stat -c %W "$mnt/w/t/d00/f000" 2>/dev/null)
			[ "${born:-0}" -ge "$t0" ] || fail "[$lay] the kernel sees no creation time ($born)"
			if [ $acls -eq 1 ]; then
				[ "$(cd "$mnt/w/t" && getfacl -n -p d00/f006 d01 2>&1)" = "$(cd "$exp/w/t" && getfacl -n -p d00/f006 d01 2>&1)" ] ||
					fail "[$lay] the kernel's ACLs differ"
			fi
			umount "$mnt"
		else
			fail "[$lay] the kernel does not mount it"
		fi
		if kmount -o loop "$img" "$mnt"; then
			mkdir "$mnt/w/t/kernel" && echo k >"$mnt/w/t/kernel/file" && rm -r "$mnt/w/t/d13" &&
				mv "$mnt/w/t/d14" "$mnt/w/t/kernel/" || fail "[$lay] the kernel's changes"
			umount "$mnt"
			clean "after the kernel's changes"
			[ "$("$NOSTALL" cat "$img" /w/t/kernel/file 2>&1)" = k ] || fail "[$lay] nostall reads the kernel's file"
		else
			fail "[$lay] the kernel does not mount it read-write"
		fi
	fi
	echo "ok [$lay]"
done

# lazy_itable_init over a device full of junk: the inode tables past each
# group's bg_itable_unused (and of INODE_UNINIT groups) hold garbage, and
# bitmaps of uninit groups too. New inodes there start from nothing (their
# slot is zeroed, never read as an inode), and e2fsck stays clean.
lay="junk, lazy_itable_init"
rm -f "$img"
head -c 32M /dev/urandom >"$img"
if mkfs.ext4 -q -F -E lazy_itable_init=1,nodiscard -b 1024 -N 512 -O ^extent,^64bit "$img" 32M >/dev/null 2>&1; then
	mkdir -p "$tmp/junk"
	for i in $(seq 1 300); do echo "$i" >"$tmp/junk/f$i"; done
	"$NOSTALL" put -r "$img" "$tmp/junk" /j 2>"$tmp/err" || fail "[$lay] put -r: $(head -2 "$tmp/err")"
	clean "put -r"
	"$NOSTALL" rm "$img" /j/f7 /j/f8 2>"$tmp/err" || fail "[$lay] rm: $(head -2 "$tmp/err")"
	"$NOSTALL" mkdir -p "$img" /j/a/b 2>"$tmp/err" || fail "[$lay] mkdir: $(head -2 "$tmp/err")"
	clean "rm, mkdir"
	[ "$("$NOSTALL" cat "$img" /j/f300 2>&1)" = 300 ] || fail "[$lay] /j/f300 does not read back"
	echo "ok [$lay]"
else
	fail "[$lay] mkfs.ext4"
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "ext4_write_csum: ok"
