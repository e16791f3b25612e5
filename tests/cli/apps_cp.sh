#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# cp -a of a large tree on the FUSE mount in every data mode
# (tests/lib/apps_common.sh): the varied host tree of tests/lib/fs_mktree.py
# plus a bulk of generated files (sizes from 0 to a few MiB) is copied onto
# the mount with cp -a, then copied again within the mount (cp -a, which may
# use copy_file_range/reflink attempts), and both copies must equal the
# source (type, mode, owner, size, links, mtime in ns, contents, symlinks,
# xattrs, hard-link groups); a recursive diff agrees. Then unmount,
# e2fsck -fn and the kernel's view. CI: about 50 MiB in 1,200 files;
# NOSTALL_APPS_FULL=1: about 1 GiB in 30,000 files.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need cp:coreutils diff:diffutils
NFILES=$(apps_size 1200 30000 400)
src=$APPS_TMP/src
apps_mktree "$src" 300
python3 - "$src/bulk" "$NFILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(11)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i % 37), "e%d" % (i % 5))
    os.makedirs(d, exist_ok=True)
    r = rnd.random()
    size = 0 if r < 0.05 else rnd.randint(1, 4096) if r < 0.7 else rnd.randint(4096, 65536) if r < 0.99 else rnd.randint(1 << 20, 2 << 20)
    with open(os.path.join(d, "f%05d" % i), "wb") as f:
        f.write(rnd.randbytes(size))
PY
FIELDS=type,mode,uid,gid,size,nlink,mtime,data,link,xattr,hlink,rdev
apps_manifest "$src" "$FIELDS" | apps_portable >"$APPS_TMP/src.manifest"
echo "apps_cp: $(wc -l <"$APPS_TMP/src.manifest") entries, $(du -sm --apparent-size "$src" | cut -f1) MiB, modes: $APPS_MODES"

cp_work() { # mnt mode
	local m=$1 c
	cp -a "$src" "$m/c1" || fail "data=$2: cp -a onto the mount"
	cp -a "$m/c1" "$m/c2" || fail "data=$2: cp -a within the mount"
	for c in c1 c2; do
		apps_manifest "$m/$c" "$FIELDS" | apps_portable >"$APPS_TMP/$c.manifest"
		apps_same "$APPS_TMP/src.manifest" "$APPS_TMP/$c.manifest" "data=$2: $c != source"
	done
	diff -r --no-dereference "$src/bulk" "$m/c2/bulk" >"$APPS_TMP/diff.log" 2>&1 ||
		fail "data=$2: diff -r of the bulk files: $(head -3 "$APPS_TMP/diff.log")"
}

for mode in $APPS_MODES; do
	apps_cycle "$mode" 1G cp_work
done
apps_finish apps_cp
