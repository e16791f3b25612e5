#!/usr/bin/env bash
# nostall modifies images the Linux kernel wrote, and the kernel (and
# e2fsck) accept the result (issue 8: "An image the kernel wrote (a varied
# tree, plus a kernel-made 10,000-entry htree directory) is modified by
# nostall (renames, deletes, appends, new entries in the htree directory)
# and stays e2fsck -fn clean; the kernel then sees those changes").
#
# For 1 KiB blocks (128-byte inodes), 4 KiB blocks (256-byte inodes) and 2 KiB
# blocks with the tea directory hash (NOSTALL_KMOD_CFGS below for others):
#   1. mke2fs -t ext3, loop mount, tests/lib/fs_mktree.py --small fills it
#      (every file type, block-map boundaries, sparse files, hard links,
#      xattrs, odd modes and owners, and /bigdir: 10,000 entries, an htree);
#      the kernel's tree is copied (cp -a) to a host reference; unmount.
#   2. The same changes are made by the nostall CLI on the image and by
#      coreutils on the reference: mv (a file over another, a directory
#      across directories, a hard link), rm and rm -r (files, a subtree,
#      500 htree entries in one call), write (appends to existing files,
#      new files, an overwrite inside a sparse file), mkdir -p, ln, ln -s,
#      truncate, chmod, touch, and new htree entries (put -r of 2,000
#      files merged into /bigdir, put and write of single ones); files the
#      kernel made immutable / append-only (chattr) refuse writes and
#      removal.
#   3. e2fsck -fn is clean, /bigdir still has its index, then the kernel
#      mounts the image and its tree must equal the reference (type, mode,
#      owner, size, link count, device numbers, contents, symlink targets,
#      xattrs, hard-link groups; times excluded: the two sides change them
#      at different moments). The kernel then writes to it once more and
#      e2fsck stays clean.
# Needs root and loop mounts: exits 77 with the reason otherwise.
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
. "$(dirname "$0")/../lib/testfs.sh" # NOSTALL_TEST_FS, _MKFS_OPTS, _BLOCK_SIZE
ktype=$(testfs_kernel_type)
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
lib=$(cd "$(dirname "$0")/../lib" && pwd)
export TZ=UTC PATH="$PATH:/sbin:/usr/sbin"
umask 022
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in mke2fs e2fsck debugfs python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not installed"
		exit 77
	fi
done
if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: not root (the kernel must write and mount the images)"
	exit 77
fi

tmp=$(mktemp -d /tmp/nostall-fsmod.XXXXXX)
mnt="$tmp/mnt"
mkdir -p "$mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

truncate -s 8M "$tmp/probe.img"
if ! testfs_mke2fs "$tmp/probe.img" || ! kmount -o loop -t "$ktype" "$tmp/probe.img" "$mnt" 2>/dev/null; then
	echo "SKIP: the kernel cannot loop-mount ext3 here"
	exit 77
fi
umount "$mnt"
rm -f "$tmp/probe.img"

ns() { # nostall command, must succeed (a long one is cut in the report)
	local out cmd="nostall $*"
	if ! out=$("$NOSTALL" "$@" 2>&1); then
		[ ${#cmd} -le 300 ] || cmd="${cmd:0:300}... ($# arguments)"
		fail "$cmd: ${out:0:1000}"
		return 1
	fi
	return 0
}

has_index() { # image path: EXT3_INDEX_FL (0x1000) among the inode's flags (ext4 adds EXTENTS_FL 0x80000)
	local f
	f=$(debugfs -R "stat $2" "$1" 2>/dev/null | sed -n 's/.*Flags: \(0x[0-9a-fA-F]*\).*/\1/p')
	[ -n "$f" ] && [ $((f & 0x1000)) != 0 ]
}
fsck_clean() { # image what
	local out
	if ! out=$(e2fsck -fn "$1" 2>&1); then
		fail "$2: e2fsck -fn is not clean"
		printf '%s\n' "$out" | head -30
	fi
}

# Host files to put and append.
mkdir -p "$tmp/host/newents" "$tmp/host/tree/sub"
chmod 0755 "$tmp/host/newents"
python3 - "$tmp/host" <<'EOF'
import os, sys
h = sys.argv[1]
for i in range(2000):
    with open(os.path.join(h, "newents", "nostall-new-%05d" % i), "wb") as f:
        f.write(b"new entry %d\n" % i * (i % 7))
with open(os.path.join(h, "single"), "wb") as f:
    f.write(bytes(range(256)) * 40)
with open(os.path.join(h, "append"), "wb") as f:
    f.write(b"appended by nostall\n" * 300)
with open(os.path.join(h, "tree", "sub", "leaf"), "wb") as f:
    f.write(b"leaf\n")
EOF

# Apply one change to the reference tree $ref and the image $img.
modify() { # image ref bs
	local img=$1 ref=$2 bs=$3 sz
	# renames: a file over another, a directory across directories, a hard link
	ns mv "$img" /names/.hidden /names/-leading-dash && mv "$ref/names/.hidden" "$ref/names/-leading-dash"
	ns mv "$img" /many/d01 /deep/level00/d01-moved && mv "$ref/many/d01" "$ref/deep/level00/d01-moved"
	ns mv "$img" /hard/link1 /hard/sub/link1-moved && mv "$ref/hard/link1" "$ref/hard/sub/link1-moved"
	ns mv "$img" /bigdir/entry-with-a-longish-name-000007 /bigdir/renamed-inside-the-htree &&
		mv "$ref/bigdir/entry-with-a-longish-name-000007" "$ref/bigdir/renamed-inside-the-htree"
	ns mv "$img" /bigdir/entry-with-a-longish-name-000008 /moved-out-of-bigdir &&
		mv "$ref/bigdir/entry-with-a-longish-name-000008" "$ref/moved-out-of-bigdir"
	# deletes: files, a subtree, 500 htree entries in one call
	ns rm "$img" /hard/orig /links/dangling && rm "$ref/hard/orig" "$ref/links/dangling"
	ns rm -r "$img" /many/d02 && rm -r "$ref/many/d02"
	local del=()
	for i in $(seq 100 2 1098); do del+=("/bigdir/entry-with-a-longish-name-$(printf %06d "$i")"); done
	ns rm "$img" "${del[@]}" && (cd "$ref" && rm "${del[@]/#\//}")
	# appends (at the current size) and new files
	for f in /hard/sub/link2 /sizes/f00000011 "/names/with space and éè utf8"; do
		[ -e "$ref$f" ] || { fail "reference lacks $f"; continue; }
		sz=$(stat -c %s "$ref$f")
		ns write "$img" "$f" "$sz" <"$tmp/host/append" && cat "$tmp/host/append" >>"$ref$f"
	done
	ns write "$img" /new-by-write 0 <"$tmp/host/single" && cat "$tmp/host/single" >"$ref/new-by-write"
	# an overwrite inside a sparse file's hole region, not past its end
	if [ -f "$ref/sparse/30M" ]; then
		ns write "$img" /sparse/30M 5000000 <"$tmp/host/append" &&
			dd if="$tmp/host/append" of="$ref/sparse/30M" bs=1 seek=5000000 conv=notrunc status=none
	fi
	# directories, links, attributes
	ns mkdir -p "$img" /new/a/b/c && mkdir -p "$ref/new/a/b/c"
	ns mkdir -m 700 "$img" /new/private && mkdir -m 700 "$ref/new/private"
	ns ln "$img" /hard/sub/link2 /new/a/hardlink && ln "$ref/hard/sub/link2" "$ref/new/a/hardlink"
	ns ln -s "$img" ../../names /new/a/symlink && ln -s ../../names "$ref/new/a/symlink"
	ns truncate "$img" /hard/empty 5000 && truncate -s 5000 "$ref/hard/empty"
	ns truncate "$img" /new-by-write 777 && truncate -s 777 "$ref/new-by-write"
	ns chmod "$img" 640 /new-by-write && chmod 640 "$ref/new-by-write"
	ns chown "$img" 1234:56 /new/a/b && chown 1234:56 "$ref/new/a/b"
	ns touch "$img" /new/touched && touch "$ref/new/touched"
	ns xattr "$img" set /new-by-write user.who nostall &&
		python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.who", b"nostall")' "$ref/new-by-write"
	# new entries in the htree directory: a merge of 2,000, single ones
	ns put -r "$img" "$tmp/host/newents" /bigdir && cp -a "$tmp/host/newents/." "$ref/bigdir/"
	ns put "$img" "$tmp/host/single" /bigdir/zz-single && cp -a "$tmp/host/single" "$ref/bigdir/zz-single"
	ns put -r "$img" "$tmp/host/tree" /bigdir/a-tree && cp -a "$tmp/host/tree" "$ref/bigdir/a-tree"
	ns write "$img" /bigdir/written-entry 0 <"$tmp/host/append" && cat "$tmp/host/append" >"$ref/bigdir/written-entry"
}

fields=type,mode,uid,gid,size,nlink,rdev,data,link,xattr,hlink

# NOSTALL_KMOD_CFGS: the configurations, ";"-separated, each "BLOCKSIZE
# INODESIZE [more mke2fs options] [| tune2fs options]" (e.g. "2048 256 -O
# ^dir_index;4096 128 | -E hash_alg=tea"). Without dir_index /bigdir is a
# linear directory.
IFS=';' read -ra cfgs <<<"${NOSTALL_KMOD_CFGS:-1024 128;4096 256;2048 256 | -E hash_alg=tea}"
n=0
for cfg in "${cfgs[@]}"; do
	tune=()
	case $cfg in *'|'*) read -ra tune <<<"${cfg#*|}"; cfg=${cfg%%|*} ;; esac
	set -- $cfg
	bs=$1 isz=$2
	shift 2
	extra=("$@")
	testfs_bs_wanted "$bs" || { echo "skipped: bs $bs (NOSTALL_TEST_BLOCK_SIZE)"; continue; }
	n=$((n + 1))
	tag="bs $bs${extra[*]:+ (${extra[*]})}${tune[*]:+ (tune2fs ${tune[*]})}"
	case " ${extra[*]} " in *^dir_index*) dx=0 ;; *) dx=1 ;; esac
	img="$tmp/img-$n"
	ref="$tmp/ref-$n"
	truncate -s 128M "$img"
	testfs_mke2fs -b "$bs" -I "$isz" "${extra[@]}" "$img" 2>/dev/null || { fail "mke2fs: $tag"; continue; }
	[ ${#tune[@]} = 0 ] || tune2fs "${tune[@]}" "$img" >/dev/null 2>&1 || { fail "tune2fs: $tag"; continue; }
	if ! kmount -o loop -t "$ktype" "$img" "$mnt"; then
		fail "$tag: the kernel cannot mount a fresh image"
		continue
	fi
	mounted=$mnt
	python3 "$lib/fs_mktree.py" --small "$bs" "$mnt" >/dev/null || fail "$tag: fs_mktree.py"
	# inode flags the kernel sets, which nostall must honour
	{ echo imm >"$mnt/kimm" && chattr +i "$mnt/kimm" && echo app >"$mnt/kapp" && chattr +a "$mnt/kapp"; } ||
		fail "$tag: chattr on the kernel mount"
	cp -a "$mnt/." "$ref/" || fail "$tag: cp -a of the kernel's tree"
	umount "$mnt" && mounted=""
	fsck_clean "$img" "$tag: the kernel's image"
	[ "$dx" = 0 ] || has_index "$img" /bigdir ||
		fail "$tag: the kernel's /bigdir has no htree index"
	n0=$(ls -f "$ref/bigdir" | wc -l)

	modify "$img" "$ref" "$bs"
	# the kernel's chattr +i / +a hold under nostall: no write, no removal
	[ "$("$NOSTALL" lsattr "$img" /kimm /kapp | cut -c1-8 | tr '\n' ' ')" = "----i--- -----a-- " ] ||
		fail "$tag: nostall lsattr of the kernel's flags: $("$NOSTALL" lsattr "$img" /kimm /kapp 2>&1)"
	echo x | "$NOSTALL" write "$img" /kimm 0 2>/dev/null && fail "$tag: wrote into a kernel-made immutable file"
	echo x | "$NOSTALL" write "$img" /kapp 0 2>/dev/null && fail "$tag: overwrote a kernel-made append-only file"
	"$NOSTALL" rm "$img" /kimm /kapp 2>/dev/null && fail "$tag: removed kernel-made immutable/append-only files"

	fsck_clean "$img" "$tag: after nostall's changes"
	dumpe2fs -h "$img" 2>/dev/null | grep -q needs_recovery && fail "$tag: image left with needs_recovery"
	[ "$dx" = 0 ] || has_index "$img" /bigdir ||
		fail "$tag: /bigdir lost its htree index"
	n1=$(ls -f "$ref/bigdir" | wc -l)
	[ "$n1" -gt "$n0" ] || fail "$tag: the reference's bigdir did not grow ($n0 -> $n1)"

	python3 "$lib/fs_compare.py" record "$ref" "$tmp/ref.json" >/dev/null || fail "$tag: record"
	if kmount -o loop,ro,noatime -t "$ktype" "$img" "$mnt"; then
		mounted=$mnt
		python3 "$lib/fs_compare.py" tree "$tmp/ref.json" "$mnt" --fields=$fields ||
			fail "$tag: the kernel's view differs from the reference"
		n2=$(ls -f "$mnt/bigdir" | wc -l)
		[ "$n2" -eq "$n1" ] || fail "$tag: the kernel lists $n2 entries in /bigdir, want $n1"
		umount "$mnt" && mounted=""
	else
		fail "$tag: the kernel refuses to mount nostall's image"
	fi
	# the kernel writes again on top of nostall's changes
	if kmount -o loop -t "$ktype" "$img" "$mnt"; then
		mounted=$mnt
		rm -rf "$mnt/bigdir/a-tree" "$mnt/new/a"
		for i in $(seq 0 99); do echo "$i" >"$mnt/bigdir/kernel-again-$i"; done
		mv "$mnt/new-by-write" "$mnt/bigdir/"
		umount "$mnt" && mounted=""
		fsck_clean "$img" "$tag: the kernel's changes after nostall's"
		"$NOSTALL" stat "$img" /bigdir/kernel-again-99 >/dev/null 2>&1 ||
			fail "$tag: nostall does not see the kernel's new entry"
	else
		fail "$tag: the kernel refuses a read-write mount of nostall's image"
	fi
	rm -rf "$ref" "$img" "$tmp/ref.json"
done

if [ "$fails" -ne 0 ]; then
	echo "fs_kernel_modify: $fails failure(s)"
	exit 1
fi
echo "fs_kernel_modify: ok"
