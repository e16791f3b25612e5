#!/usr/bin/env python3
"""Fill a directory (normally the root of a freshly mounted ext3 filesystem)
with the varied tree the read-path oracle tests compare: every file type,
sizes around every block-map boundary, sparse files up to 300 MiB (and one
that needs a triple-indirect block at 1 KiB blocks), a 10,000-entry directory
(htree), deep paths, 255-byte names, fast and slow symlinks, hard links,
device nodes old and new encoding, fifos, a socket, user.* and trusted.*
xattrs (in-inode, in a block, shared), odd modes and owners, times with
nanoseconds, before 1970 and after 2038.

usage: fs_mktree.py [--small] [--bigdir N] BLOCKSIZE ROOT
  --small   no 300 MiB / triple-indirect files (for debugfs-size images)
  --plain   no socket and no names with control characters (what debugfs
            can write)
Root is needed for chown, mknod of devices and trusted.* xattrs; without it
those parts are skipped (the comparison still covers the rest).
Deterministic: the same arguments give the same tree.
"""
import os
import random
import socket
import stat
import sys

args = sys.argv[1:]
small = False
plain = False
bigdir = 10000
while args and args[0].startswith("--"):
    a = args.pop(0)
    if a == "--small":
        small = True
    elif a == "--plain":
        plain = True
    elif a == "--bigdir":
        bigdir = int(args.pop(0))
    else:
        sys.exit("unknown option " + a)
if len(args) != 2:
    sys.exit(__doc__)
bs = int(args[0])
root = args[1]
root_user = os.geteuid() == 0
rng = random.Random(20090401 + bs)
MiB = 1 << 20


def data(n):
    return rng.randbytes(n)


def put(path, content=b"", mode=None):
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "wb") as f:
        f.write(content)
    if mode is not None:
        os.chmod(p, mode)
    return p


def sparse(path, size, pieces):
    """A file of `size` bytes that is a hole except for (offset, length) pieces."""
    p = os.path.join(root, path)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for off, n in pieces:
        os.pwrite(fd, data(n), off)
    os.ftruncate(fd, size)
    os.close(fd)
    return p


apb = bs // 4  # block addresses per indirect block
direct_end = 12 * bs
ind_end = direct_end + apb * bs
dind_end = ind_end + apb * apb * bs

# ---- sizes around the block map boundaries ----
sizes = [0, 1, 11, 60, 61, bs - 1, bs, bs + 1, 2 * bs, direct_end - 1, direct_end,
         direct_end + 1, ind_end - 1, ind_end, ind_end + 1, ind_end + 3 * bs + 17]
for s in sizes:
    put("sizes/f%08d" % s, data(s))
put("sizes/big-random-6M", data(6 * MiB + 123))

# ---- sparse files ----
sparse("sparse/hole-only-1M", MiB, [])
sparse("sparse/head-tail", 5 * MiB + 3, [(0, 100), (5 * MiB - 50, 53)])
sparse("sparse/middle", 3 * MiB, [(MiB + 7, 2 * bs + 5)])
sparse("sparse/indirect-only", ind_end + 10 * bs, [(direct_end + bs, 10), (ind_end + 5 * bs, bs)])
# an all-zero block that IS allocated (written zeroes): must still read as zeroes
p = put("sparse/written-zeroes", b"\0" * (4 * bs) + data(bs) + b"\0" * (3 * bs))
if not small:
    sparse("sparse/300M", 300 * MiB, [(0, 4096), (77 * MiB + 5, 9000), (150 * MiB, 1),
                                      (300 * MiB - 4096, 4096)])
    # needs the triple-indirect block at 1 KiB blocks (> 12 + 256 + 65536 blocks);
    # at bigger blocks the same boundary is 513 MiB / 4 GiB: skipped there
    if bs == 1024:
        sparse("sparse/tind", dind_end + 300 * 1024 + 5,
               [(dind_end - 3 * bs, 2 * bs), (dind_end + 7, 3 * bs), (dind_end + 300 * 1024 - 100, 105)])
else:
    sparse("sparse/30M", 30 * MiB, [(0, 4096), (17 * MiB + 5, 9000), (30 * MiB - 1, 1)])

# ---- many small files in nested directories ----
for i in range(2000):
    d = "many/d%02d/e%d" % (i % 37, i % 5)
    put("%s/file-%04d.txt" % (d, i), data(rng.choice([0, 1, 17, 500, 1500, 3000, 5000, 9000, 20000])))

# ---- a big directory (htree) ----
big = os.path.join(root, "bigdir")
os.makedirs(big)
for i in range(bigdir):
    fd = os.open(os.path.join(big, "entry-with-a-longish-name-%06d" % i), os.O_WRONLY | os.O_CREAT, 0o644)
    if i % 1000 == 0:
        os.write(fd, b"entry %d\n" % i)
    os.close(fd)

# ---- deep paths and long names ----
d = "deep"
for i in range(40):
    d = os.path.join(d, "level%02d" % i)
put(os.path.join(d, "bottom"), b"at the bottom\n")
d = "deep-long"
for i in range(14):
    d = os.path.join(d, ("L%02d" % i) + "x" * 250)  # 253-byte components, ~3.5 KiB path
put(os.path.join(d, "f"), b"long path\n")
put("names/" + "n" * 255, b"255-byte name\n")
os.makedirs(os.path.join(root, "names", "D" * 255))
put("names/" + "D" * 255 + "/" + "f" * 255, b"255 in 255\n")
put("names/with space and \u00e9\u00e8 utf8", b"spaces\n")
put("names/-leading-dash", b"dash\n")
put("names/.hidden", b"hidden\n")
if not plain:
    put("names/\x01ctl\x7f", b"control bytes\n")

# ---- symlinks: fast (< 60 bytes in i_block) and slow (in a block) ----
ln = os.path.join(root, "links")
os.makedirs(ln)
os.symlink("../sizes/f%08d" % 11, os.path.join(ln, "fast"))
os.symlink("a" * 59, os.path.join(ln, "fast-59"))
os.symlink("b" * 60, os.path.join(ln, "slow-60"))
os.symlink("c" * 61, os.path.join(ln, "slow-61"))
os.symlink("/".join(["seg%03d" % i for i in range(100)]), os.path.join(ln, "slow-long"))
os.symlink("m" * (bs - 1), os.path.join(ln, "slow-max"))
os.symlink("../names", os.path.join(ln, "to-dir"))
os.symlink("nowhere/dangling", os.path.join(ln, "dangling"))

# ---- hard links ----
hl = put("hard/orig", data(3000))
os.makedirs(os.path.join(root, "hard", "sub"))
os.link(hl, os.path.join(root, "hard", "link1"))
os.link(hl, os.path.join(root, "hard", "sub", "link2"))
e = put("hard/empty", b"")
os.link(e, os.path.join(root, "hard", "empty-link"))

# ---- special files ----
sp = os.path.join(root, "special")
os.makedirs(sp)
os.mkfifo(os.path.join(sp, "fifo"), 0o640)
if not plain:
    s = socket.socket(socket.AF_UNIX)
    s.bind(os.path.join(sp, "sock"))
    s.close()
if root_user:
    os.mknod(os.path.join(sp, "null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.mknod(os.path.join(sp, "sda1"), stat.S_IFBLK | 0o660, os.makedev(8, 1))
    if not plain:  # new (i_block[1]) encoding: debugfs mknod takes only 0..255
        os.mknod(os.path.join(sp, "big-minor"), stat.S_IFCHR | 0o600, os.makedev(4, 300))
        os.mknod(os.path.join(sp, "big-major"), stat.S_IFBLK | 0o600, os.makedev(300, 70000))
    os.mknod(os.path.join(sp, "zero-zero"), stat.S_IFCHR | 0o600, os.makedev(0, 0))

# ---- modes and owners ----
modes = [0, 0o777, 0o4755, 0o2755, 0o1777, 0o6711, 0o400, 0o7777]
for m in modes:
    put("modes/m%04o" % m, b"mode %o\n" % m, mode=m)
os.makedirs(os.path.join(root, "modes", "sticky-dir"))
os.chmod(os.path.join(root, "modes", "sticky-dir"), 0o1777)
os.makedirs(os.path.join(root, "modes", "no-perm-dir"))
put("modes/no-perm-dir/inside", b"x\n")
if root_user:
    for uid, gid in [(1000, 1000), (65534, 65534), (100000, 200000), (4000000000, 7)]:
        p = put("owners/u%d-g%d" % (uid, gid), b"owned\n")
        os.chown(p, uid, gid)
    os.lchown(os.path.join(ln, "fast"), 1234, 5678)
    os.chown(os.path.join(root, "owners"), 1000, 1000)
os.chmod(os.path.join(root, "modes", "no-perm-dir"), 0)

# ---- xattrs ----
def setx(path, name, value, follow=True):
    try:
        os.setxattr(os.path.join(root, path), name, value, follow_symlinks=follow)
        return True
    except OSError as ex:
        print("note: setxattr %s %s: %s" % (path, name, ex), file=sys.stderr)
        return False

put("xattr/small", b"x\n")
setx("xattr/small", "user.a", b"1")
setx("xattr/small", "user.mime_type", b"text/plain")
put("xattr/block", b"y\n")
setx("xattr/block", "user.big", data(min(bs, 4096) - 200))  # too big for the inode: EA block
setx("xattr/block", "user.empty", b"")
for i in range(3):  # identical sets: ext3 shares one EA block
    put("xattr/shared%d" % i, b"s\n")
    setx("xattr/shared%d" % i, "user.shared", b"v" * 300)
os.makedirs(os.path.join(root, "xattr", "dir"))
setx("xattr/dir", "user.on-dir", b"dir value")
put("xattr/many", b"m\n")
for i in range(12):
    setx("xattr/many", "user.k%02d" % i, b"%d" % (i * 7))
if root_user:
    setx("xattr/small", "trusted.t1", b"trusted value")
    setx("xattr/block", "trusted.big", data(100))
    setx("links/slow-60", "trusted.on-symlink", b"sym", follow=False)
    setx("special/fifo", "trusted.on-fifo", b"fifo")

# ---- times (last: everything above changed the directories' mtimes) ----
def times(path, at, mt, follow=True):
    os.utime(os.path.join(root, path), ns=(at, mt), follow_symlinks=follow)

times("sizes/f%08d" % 1, 1234567890_123456789, 1234567890_987654321)
times("sizes/f%08d" % 0, 0, 0)
times("modes/m0777", 946684800_000000001, 946684799_999999999)
times("names/.hidden", -86400_000000000, -1_500000000)  # before 1970
times("names/-leading-dash", 2209075200_000000000, 2208988800_250000000)  # 2040
times("links/fast", 1111111111_000000000, 1222222222_000000000, follow=False)
times("special/fifo", 1500000000_000000000, 1500000001_000000000)
times("hard/orig", 1600000000_111111111, 1600000000_222222222)
times("deep", 1300000000_000000000, 1300000000_000000000)
