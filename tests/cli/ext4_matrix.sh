#!/usr/bin/env bash
# ext4 layouts read by nostall (issue 38, "Done when", first bullet): for
# each mke2fs layout - the Debian 12 ext4 default, ^metadata_csum,uninit_bg,
# ^64bit, 1 KiB blocks, 128-byte inodes, ^flex_bg, ^extent (ext4 with
# indirect files), meta_bg - an image is filled from a seeded tree (many
# files, a deep tree, a sparse file and one past 4 GiB, long and short
# symlinks, a hard link, xattrs, set-id and foreign owners, a time with
# nanoseconds) by `mke2fs -d` and, as root, by the kernel through a loop
# mount (cp -a, plus a 600-name htree directory). `nostall get -r` of each
# must equal the tree (tests/lib/treecmp.py: contents sparse-aware, modes,
# owners, links, xattrs, times: nanoseconds for the kernel's copies with
# large inodes, seconds for mke2fs -d, which keeps none). e2fsck -fn stays
# clean.
set -eu
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
export PATH="$PATH:/sbin:/usr/sbin"
here=$(cd "$(dirname "$0")/../.." && pwd)
for t in mkfs.ext4 e2fsck python3; do command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }; done
tmp=$(mktemp -d /tmp/nostall-e4m.XXXXXX)
mnt=$tmp/m
cleanup() {
	mountpoint -q "$mnt" 2>/dev/null && umount "$mnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

seed=${NOSTALL_SEED:-38}
echo "seed $seed (NOSTALL_SEED)"
src=$tmp/src
mkdir -p "$src"
python3 - "$src" "$seed" <<'PY'
import os, random, sys
root, seed = sys.argv[1], int(sys.argv[2])
os.chdir(root)
r = random.Random(seed)
os.makedirs('deep/' + '/'.join('d%d' % i for i in range(12)), exist_ok=True)
for i in range(300):
    d = 'many' if i % 3 else 'deep/d0/d1'
    os.makedirs(d, exist_ok=True)
    with open('%s/f%03d' % (d, i), 'wb') as f:
        f.write(r.randbytes(r.choice([0, 1, 100, 4096, 5000, 70000])))
with open('deep/' + '/'.join('d%d' % i for i in range(12)) + '/leaf', 'wb') as f:
    f.write(b'deep')
with open('sparse', 'wb') as f:
    f.seek(3 << 20); f.write(b'tail')
with open('big_sparse', 'wb') as f:
    f.write(b'head'); f.seek(4608 << 20); f.write(b'past 4 GiB')
os.symlink('x' * 200, 'longlink')
os.symlink('many/f001', 'shortlink')
os.link('many/f001', 'hardlink')
os.setxattr('many/f002', 'user.color', b'blue')
os.setxattr('many', 'user.dir', b'yes')
os.chmod('many/f004', 0o4755)
os.chmod('many/f008', 0o2750)
os.chown('many/f005', 1234, 5678)
os.utime('many/f007', ns=(1_600_000_000_123_456_789, 1_600_000_000_987_654_321))
PY

layouts=("default" "-O ^metadata_csum,uninit_bg" "-O ^64bit" "-b 1024" "-I 128" "-O ^flex_bg"
	 "-O ^extent,^64bit" "-O meta_bg,^resize_inode")
img=$tmp/i.img
for lay in "${layouts[@]}"; do
	opts=${lay#default}
	rm -f "$img"
	# shellcheck disable=SC2086
	mkfs.ext4 -q -F $opts -d "$src" "$img" 300M >/dev/null
	rm -rf "$tmp/out"
	if ! "$NOSTALL" get -r "$img" / "$tmp/out" 2>"$tmp/err"; then
		fail "[$lay] mke2fs -d: get -r: $(head -3 "$tmp/err")"
		continue
	fi
	python3 "$here/tests/lib/treecmp.py" --skip lost+found "$src" "$tmp/out" >"$tmp/cmp" ||
		fail "[$lay] mke2fs -d: the copy differs: $(head -5 "$tmp/cmp" | tr '\n' ';')"
	e2fsck -fn "$img" >/dev/null 2>&1 || fail "[$lay] mke2fs -d: e2fsck -fn not clean"
	echo "ok [$lay] mke2fs -d"
done

if [ "$(id -u)" -ne 0 ]; then
	echo "SKIP: the kernel-written half needs root (loop mount)" >&2
else
	mkdir -p "$mnt"
	for lay in "${layouts[@]}"; do
		opts=${lay#default}
		rm -f "$img"
		# shellcheck disable=SC2086
		mkfs.ext4 -q -F $opts "$img" 300M >/dev/null
		kmount -o loop "$img" "$mnt"
		cp -a "$src/." "$mnt/"
		mkdir "$mnt/htree"
		for i in $(seq 1 600); do echo "$i" >"$mnt/htree/a_rather_long_file_name_$i"; done
		umount "$mnt"
		rm -rf "$tmp/out"
		if ! "$NOSTALL" get -r "$img" / "$tmp/out" 2>"$tmp/err"; then
			fail "[$lay] kernel: get -r: $(head -3 "$tmp/err")"
			continue
		fi
		ns=--ns
		case $lay in *"-I 128"*) ns= ;; esac
		python3 "$here/tests/lib/treecmp.py" $ns --skip lost+found --skip htree "$src" "$tmp/out" >"$tmp/cmp" ||
			fail "[$lay] kernel: the copy differs: $(head -5 "$tmp/cmp" | tr '\n' ';')"
		[ "$(ls "$tmp/out/htree" | wc -l)" = 600 ] || fail "[$lay] kernel: the htree directory lost names"
		[ "$("$NOSTALL" cat "$img" /htree/a_rather_long_file_name_333)" = 333 ] || fail "[$lay] kernel: htree lookup"
		e2fsck -fn "$img" >/dev/null 2>&1 || fail "[$lay] kernel: e2fsck -fn not clean"
		echo "ok [$lay] kernel"
	done
fi

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "ext4_matrix: ok"
