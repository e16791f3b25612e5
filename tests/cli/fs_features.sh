#!/usr/bin/env bash
# ext3 images of every layout mke2fs makes, changed by nostall: the kernel's
# ext3 accepts them all (2.6.30's feature set: filetype, meta_bg, sparse_super,
# large_file, resize_inode, dir_index, ext_attr), so nostall must too.
#
# For each mke2fs variant (block sizes 1-4 KiB, 128-1024-byte inodes,
# without dir_index / filetype / resize_inode / sparse_super / ext_attr /
# large_file, meta_bg over several metagroups, a tiny journal, small
# groups, stride hints):
#   1. mke2fs -t ext3 -d populates the image from a host tree (no root
#      needed): files across the block-map boundaries, a sparse file,
#      symlinks, a hard link, a 600-entry directory; the host tree is the
#      reference;
#   2. the nostall CLI and coreutils make the same changes (put -r, mv over
#      a file, rm -r, write appends, write past 2 GiB - which must set
#      large_file on an image without it -, truncate, mkdir -p, ln, ln -s,
#      chmod, xattr set - which must set ext_attr where it was off);
#   3. e2fsck -fn is clean, the features the changes need are set, and
#      `nostall get -r` of the image equals the reference; as root the
#      kernel mounts it and its tree equals the reference too.
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
. "$(dirname "$0")/../lib/kmount.sh"
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
lib=$(cd "$(dirname "$0")/../lib" && pwd)
export TZ=UTC PATH="$PATH:/sbin:/usr/sbin"
umask 022
fails=0
passes=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for tool in mke2fs e2fsck dumpe2fs python3; do
	if ! command -v "$tool" >/dev/null 2>&1; then
		echo "SKIP: $tool not installed"
		exit 77
	fi
done
tmp=$(mktemp -d /tmp/nostall-feat.XXXXXX)
mnt="$tmp/mnt"
mkdir -p "$mnt"
mounted=""
cleanup() {
	if [ -n "$mounted" ]; then umount "$mounted" 2>/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
mkdir -p "$tmp/empty"
if ! mke2fs -q -F -t ext3 -d "$tmp/empty" "$tmp/probe.img" 8M >/dev/null 2>&1; then
	echo "SKIP: this mke2fs cannot populate an image from a directory (-d)"
	exit 77
fi
rm -f "$tmp/probe.img"

kernel=0
if [ "$(id -u)" -eq 0 ]; then
	truncate -s 8M "$tmp/probe.img"
	if mke2fs -q -F -t ext3 "$tmp/probe.img" && kmount -o loop,ro -t ext3 "$tmp/probe.img" "$mnt" 2>/dev/null; then
		umount "$mnt"
		kernel=1
	fi
	rm -f "$tmp/probe.img"
fi
[ $kernel = 1 ] || echo "SKIP: the kernel's view (needs root and an ext3 loop mount)"

# The tree mke2fs starts from (seeded: the same bytes every run).
seed_tree() { # DIR
	python3 - "$1" <<'EOF'
import os, random, sys
root = sys.argv[1]
rnd = random.Random(20091)
os.makedirs(f"{root}/d1/d2/d3")
os.makedirs(f"{root}/wide")
sizes = [0, 1, 1023, 1024, 1025, 4095, 4096, 4097, 12 * 1024 + 1, 13 * 4096,
         268 * 1024 + 7, 1100 * 1024]
for i, n in enumerate(sizes):
    with open(f"{root}/d1/f{i}", "wb") as f:
        f.write(rnd.randbytes(n))
with open(f"{root}/d1/d2/sparse", "wb") as f:
    f.seek(5 * 1024 * 1024)
    f.write(b"end of a sparse file\n")
for i in range(600):
    with open(f"{root}/wide/entry-with-a-longish-name-{i:04d}", "w") as f:
        f.write(f"{i}\n")
os.symlink("d1/f3", f"{root}/fast-link")
os.symlink("x" * 200, f"{root}/slow-link-dangling")
os.link(f"{root}/d1/f5", f"{root}/d1/d2/hard")
os.chmod(f"{root}/d1/f1", 0o4751)
os.chmod(f"{root}/d1/d2/d3", 0o1777)
EOF
}

# The same change on the image (nostall) and on the reference (coreutils).
changes() { # IMG REF LABEL
	local img=$1 ref=$2 label=$3 e="$tmp/err"
	step() { "$@" 2>"$e" || fail "$label: $(tr '\n' ' ' <"$e")"; }
	mkdir -p "$tmp/extra/sub" && printf 'extra %s\n' one >"$tmp/extra/a" && head -c 70000 /dev/zero >"$tmp/extra/sub/b"
	step "$NOSTALL" put -r "$img" "$tmp/extra" /extra && cp -a "$tmp/extra" "$ref/extra"
	step "$NOSTALL" mv "$img" /d1/f2 /d1/f3 && mv "$ref/d1/f2" "$ref/d1/f3"
	step "$NOSTALL" rm -r "$img" /d1/d2/d3 && rm -r "$ref/d1/d2/d3"
	step "$NOSTALL" rm "$img" /wide/entry-with-a-longish-name-0100 && rm "$ref/wide/entry-with-a-longish-name-0100"
	printf 'appended\n' >"$tmp/app"
	sz=$(stat -c %s "$ref/d1/f9")
	step "$NOSTALL" write "$img" /d1/f9 "$sz" <"$tmp/app" && cat "$tmp/app" >>"$ref/d1/f9"
	# past 2 GiB (large_file), checked here and removed: hashing it would
	# dominate the run
	step "$NOSTALL" write "$img" /huge 2147483648 <"$tmp/app"
	local hsz
	hsz=$("$NOSTALL" stat "$img" /huge 2>/dev/null | sed -n 's/^ *Size: *\([0-9]*\).*/\1/p')
	[ "$hsz" = 2147483657 ] || fail "$label: /huge is ${hsz:-missing}, want 2147483657 bytes"
	step "$NOSTALL" truncate "$img" /d1/f11 5000 && truncate -s 5000 "$ref/d1/f11"
	step "$NOSTALL" mkdir -p "$img" /new/a/b && mkdir -p "$ref/new/a/b"
	step "$NOSTALL" ln "$img" /d1/f0 /new/a/hard0 && ln "$ref/d1/f0" "$ref/new/a/hard0"
	step "$NOSTALL" ln -s "$img" ../../d1/f4 /new/a/sym && ln -s ../../d1/f4 "$ref/new/a/sym"
	step "$NOSTALL" chmod "$img" 0640 /d1/f4 && chmod 0640 "$ref/d1/f4"
	step "$NOSTALL" xattr "$img" set /d1/f6 user.origin nostall &&
		python3 -c 'import os,sys; os.setxattr(sys.argv[1], "user.origin", b"nostall")' "$ref/d1/f6"
}

fsck_clean() { # IMG LABEL
	if ! e2fsck -fn "$1" >"$tmp/fsck.log" 2>&1; then
		fail "$2: e2fsck -fn is not clean"
		sed -n '1,15p' "$tmp/fsck.log"
		return 1
	fi
	return 0
}

fields=type,mode,size,nlink,data,link,xattr,hlink
variants=(
	"-b 1024"
	"-b 2048 -I 128"
	"-b 4096 -I 1024"
	"-O ^dir_index"
	"-O ^filetype"
	"-O ^resize_inode"
	"-O ^sparse_super,^resize_inode"
	"-O ^ext_attr -I 128"
	"-O ^large_file"
	"-b 1024 -O meta_bg,^resize_inode -g 512"
	"-b 4096 -O meta_bg,^resize_inode -g 1024"
	"-b 1024 -g 1024 -J size=1"
	"-T small -E stride=16,stripe_width=64"
)
for v in "${variants[@]}"; do
	label="mke2fs $v"
	img="$tmp/img"
	ref="$tmp/ref"
	rm -rf "$ref" "$img"
	seed_tree "$ref"
	# shellcheck disable=SC2086
	if ! mke2fs -q -F -t ext3 $v -d "$ref" "$img" 96M >"$tmp/mkfs.log" 2>&1; then
		fail "$label: mke2fs failed: $(head -2 "$tmp/mkfs.log" | tr '\n' ' ')"
		continue
	fi
	fsck_clean "$img" "$label: as mke2fs made it" || continue
	mkdir -m 0700 "$ref/lost+found"
	before=$fails
	changes "$img" "$ref" "$label"
	fsck_clean "$img" "$label: after nostall's changes"
	feats=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Filesystem features: *//p')
	"$NOSTALL" rm "$img" /huge 2>"$tmp/err" || fail "$label: rm /huge: $(head -1 "$tmp/err")"
	for f in large_file ext_attr; do
		case " $feats " in *" $f "*) ;; *) fail "$label: feature $f not set after the changes that need it ($feats)" ;; esac
	done
	case " $feats " in *" needs_recovery "*) fail "$label: left with needs_recovery" ;; esac
	python3 "$lib/fs_compare.py" record "$ref" "$tmp/ref.json" >/dev/null || fail "$label: record"
	rm -rf "$tmp/got"
	if "$NOSTALL" get -r "$img" / "$tmp/got" 2>"$tmp/err"; then
		python3 "$lib/fs_compare.py" tree "$tmp/ref.json" "$tmp/got" --fields=$fields ||
			fail "$label: nostall's view differs from the reference"
	else
		fail "$label: get -r: $(head -1 "$tmp/err")"
	fi
	if [ $kernel = 1 ]; then
		if kmount -o loop,ro,noatime -t ext3 "$img" "$mnt" 2>"$tmp/err"; then
			mounted=$mnt
			python3 "$lib/fs_compare.py" tree "$tmp/ref.json" "$mnt" --fields=$fields ||
				fail "$label: the kernel's view differs from the reference"
			umount "$mnt" && mounted=""
		else
			fail "$label: the kernel refuses to mount the result: $(head -1 "$tmp/err")"
		fi
	fi
	[ $fails -eq $before ] && { passes=$((passes + 1)); echo "ok: $label"; }
done
rm -rf "$tmp/got" "$tmp/ref" "$tmp/img"
echo "$passes passed, $fails failed"
[ $fails -eq 0 ]
