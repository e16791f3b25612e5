#!/usr/bin/env python3
"""Compare two recoveries of the same crashed ext2/ext3 image, block by block
where blocks mean something (docs/write-testing.md, "Replay oracles").

  replay_compare.py OURS THEIRS --peer replay|e2fsck|kernel [--orphans IMG]
                    [--e2fsck-log FILE] [--quiet]

OURS is nostall's recovery, THEIRS the reference's (same crashed image).
Compared exactly: the superblock (all but the fields a mount or a check
writes: mount/write/check times, mount count, lifetime writes, last mount
point), every group descriptor, every block and inode bitmap, every in-use
inode (raw bytes, its i_extra_isize part included), and every in-use block
outside the inode tables and the journal. Free blocks and free inodes are
not compared: what a freed block holds is nobody's business (the kernel
leaves a freed indirect block's pointers, e2fsck zeroes them). The journal's
own blocks are not compared: a mount writes new transactions there.

Peers, and what each is allowed to do differently (every use is counted
and printed):
  replay  e2fsprogs' replay alone (debugfs -w -R journal_run): nothing
          allowed; with an orphan list pending both keep it.
  e2fsck  e2fsck -E journal_only: replay and orphan cleanup. Allowed:
          e2fsprogs 1.46.5-1.47.0 drop the extended-attribute block of an
          orphan they *truncate* (links > 0), leaving i_blocks counting it
          (upstream "e2fsck: do not clean up file acl if the inode is
          truncating type"; e2fsck -fn then reports "i_blocks is N, should
          be N-k"). For exactly those inodes (the orphan list of --orphans
          IMG, links > 0, ours has file_acl X, theirs 0): X's refcount is one
          lower in theirs, or X is free in theirs when ours has refcount 1,
          with the free-block counts moved to match.
  kernel  Linux (ext4 driver) replay and orphan cleanup on a read-only mount
          of a writable loop device. Allowed: its truncate sets mtime and
          ctime of the orphans it truncates; it grows i_extra_isize to its
          s_want_extra_isize (the new bytes zero).
Exit 0 when every difference is allowed, 1 otherwise (each printed, at most
40), 2 on usage or unreadable images.
"""
import argparse
import struct
import sys

MAX_SHOWN = 40
JOURNAL_INO = 8

# Superblock fields (offset, size) that a mount, an unmount or a check
# writes by itself.
SB_VOLATILE = {
    0x2C: (4, "s_mtime"), 0x30: (4, "s_wtime"), 0x34: (2, "s_mnt_count"),
    0x40: (4, "s_lastcheck"), 0x88: (64, "s_last_mounted"),
    0x178: (8, "s_kbytes_written"),
}


class Image:
    def __init__(self, path):
        self.path = path
        self.f = open(path, "rb")
        self.f.seek(1024)
        sb = self.f.read(1024)
        if len(sb) < 1024 or struct.unpack_from("<H", sb, 0x38)[0] != 0xEF53:
            raise ValueError(f"{path}: no ext2/3 superblock")
        self.sb = sb
        self.bs = 1024 << struct.unpack_from("<I", sb, 0x18)[0]
        self.blocks = struct.unpack_from("<I", sb, 0x04)[0]
        self.inodes = struct.unpack_from("<I", sb, 0x00)[0]
        self.first_data = struct.unpack_from("<I", sb, 0x14)[0]
        self.bpg = struct.unpack_from("<I", sb, 0x20)[0]
        self.ipg = struct.unpack_from("<I", sb, 0x28)[0]
        rev = struct.unpack_from("<I", sb, 0x4C)[0]
        self.isz = struct.unpack_from("<H", sb, 0x58)[0] if rev else 128
        self.last_orphan = struct.unpack_from("<I", sb, 0xE8)[0]
        self.ngroups = (self.blocks - self.first_data + self.bpg - 1) // self.bpg
        gdt = self.block(self.first_data + 1, (self.ngroups * 32 + self.bs - 1) // self.bs)
        self.gds = [gdt[g * 32:(g + 1) * 32] for g in range(self.ngroups)]
        self._bbm = {}
        self._ibm = {}

    def block(self, b, n=1):
        self.f.seek(b * self.bs)
        d = self.f.read(n * self.bs)
        return d + bytes(n * self.bs - len(d))

    def gd(self, g):
        return struct.unpack_from("<III", self.gds[g], 0)

    def bbm(self, g):
        if g not in self._bbm:
            self._bbm[g] = self.block(self.gd(g)[0])
        return self._bbm[g]

    def ibm(self, g):
        if g not in self._ibm:
            self._ibm[g] = self.block(self.gd(g)[1])
        return self._ibm[g]

    def block_used(self, b):
        g, i = divmod(b - self.first_data, self.bpg)
        return bool(self.bbm(g)[i >> 3] >> (i & 7) & 1)

    def inode_used(self, ino):
        g, i = divmod(ino - 1, self.ipg)
        return bool(self.ibm(g)[i >> 3] >> (i & 7) & 1)

    def inode(self, ino):
        g, i = divmod(ino - 1, self.ipg)
        off = self.gd(g)[2] * self.bs + i * self.isz
        self.f.seek(off)
        return self.f.read(self.isz)

    def ptrs(self, b):
        d = self.block(b)
        return struct.unpack_from(f"<{self.bs // 4}I", d)

    def inode_blocks(self, ino):
        """Every block of an inode's indirect map: data and tree."""
        raw = self.inode(ino)
        out = []
        blk = struct.unpack_from("<15I", raw, 40)

        def walk(b, depth):
            if not b or b >= self.blocks:
                return
            out.append(b)
            if depth:
                for p in self.ptrs(b):
                    walk(p, depth - 1)
        for b in blk[:12]:
            walk(b, 0)
        for k, depth in ((12, 1), (13, 2), (14, 3)):
            walk(blk[k], depth)
        return out

    def orphans(self):
        """The orphan chain (s_last_orphan, then each inode's i_dtime)."""
        seen = []
        ino = self.last_orphan
        while ino and 0 < ino <= self.inodes and ino not in seen and len(seen) < 100000:
            seen.append(ino)
            ino = struct.unpack_from("<I", self.inode(ino), 20)[0]
        return seen


class Report:
    def __init__(self, quiet):
        self.n = 0
        self.allowed = {}
        self.quiet = quiet

    def diff(self, msg):
        self.n += 1
        if self.n <= MAX_SHOWN:
            print("DIFF " + msg)

    def allow(self, why):
        self.allowed[why] = self.allowed.get(why, 0) + 1


def itimes_equalised(ours, theirs):
    """theirs with ours' atime/ctime/mtime (and their _extra) copied in."""
    t = bytearray(theirs)
    for off in (8, 12, 16):
        t[off:off + 4] = ours[off:off + 4]
    for off in (132, 136, 140):
        if off + 4 <= min(len(ours), len(t)):
            t[off:off + 4] = ours[off:off + 4]
    return bytes(t)


def compare(a, b, peer, orphan_src, rep):
    if (a.bs, a.blocks, a.inodes, a.ipg, a.isz) != (b.bs, b.blocks, b.inodes, b.ipg, b.isz):
        rep.diff("geometry differs")
        return
    orphan_list = orphan_src.orphans() if orphan_src else []
    orphan_set = set(orphan_list)
    # e2fsck's dropped xattr blocks: block -> references dropped
    ea_dropped = {}
    ea_inodes = set()
    if peer == "e2fsck":
        for ino in orphan_list:
            ra, rb = a.inode(ino), b.inode(ino)
            links = struct.unpack_from("<H", ra, 26)[0]
            acl_a = struct.unpack_from("<I", ra, 104)[0]
            acl_b = struct.unpack_from("<I", rb, 104)[0]
            if links and acl_a and not acl_b:
                ea_inodes.add(ino)
                ea_dropped[acl_a] = ea_dropped.get(acl_a, 0) + 1
    freed_by_peer = {}  # group -> blocks e2fsck freed through the EA bug
    ea_freed = set()
    for blk, n in ea_dropped.items():
        ref = struct.unpack_from("<I", a.block(blk), 4)[0]
        if ref <= n:
            ea_freed.add(blk)
            g = (blk - a.first_data) // a.bpg
            freed_by_peer[g] = freed_by_peer.get(g, 0) + 1

    # superblock
    sa, sb_ = bytearray(a.sb), bytearray(b.sb)
    for off, (size, _) in SB_VOLATILE.items():
        sa[off:off + size] = bytes(size)
        sb_[off:off + size] = bytes(size)
    extra_free = sum(freed_by_peer.values())
    if extra_free:
        fa = struct.unpack_from("<I", sa, 0x0C)[0]
        struct.pack_into("<I", sa, 0x0C, fa + extra_free)
        rep.allow("e2fsck: superblock free blocks count the dropped xattr blocks")
    for off in range(0, 1024, 4):
        if sa[off:off + 4] != sb_[off:off + 4]:
            rep.diff(f"superblock bytes 0x{off:03x}..: ours {sa[off:off + 4].hex()} theirs {sb_[off:off + 4].hex()}")

    # group descriptors and bitmaps
    for g in range(a.ngroups):
        ga, gb = bytearray(a.gds[g]), b.gds[g]
        if g in freed_by_peer:
            free = struct.unpack_from("<H", ga, 12)[0]
            struct.pack_into("<H", ga, 12, free + freed_by_peer[g])
            rep.allow("e2fsck: group free blocks count the dropped xattr blocks")
        if bytes(ga) != gb:
            rep.diff(f"group {g} descriptor: ours {bytes(ga).hex()} theirs {gb.hex()}")
        if a.gd(g)[:3] != b.gd(g)[:3]:
            continue
        ba, bb = bytearray(a.bbm(g)), b.bbm(g)
        for blk in ea_freed:
            if (blk - a.first_data) // a.bpg == g:
                i = (blk - a.first_data) % a.bpg
                ba[i >> 3] &= ~(1 << (i & 7)) & 0xFF
                rep.allow("e2fsck: xattr block freed (refcount 1)")
        if bytes(ba) != bb:
            for i in range(min(a.bpg, a.blocks - a.first_data - g * a.bpg)):
                x, y = ba[i >> 3] >> (i & 7) & 1, bb[i >> 3] >> (i & 7) & 1
                if x != y:
                    rep.diff(f"block {a.first_data + g * a.bpg + i}: {'used' if x else 'free'} in ours, "
                             f"{'used' if y else 'free'} in theirs")
        if a.ibm(g) != b.ibm(g):
            for i in range(a.ipg):
                x, y = a.ibm(g)[i >> 3] >> (i & 7) & 1, b.ibm(g)[i >> 3] >> (i & 7) & 1
                if x != y:
                    rep.diff(f"inode {g * a.ipg + i + 1}: {'used' if x else 'free'} in ours, "
                             f"{'used' if y else 'free'} in theirs")

    # in-use inodes, raw
    itable = set()
    for g in range(a.ngroups):
        first = a.gd(g)[2]
        itable.update(range(first, first + (a.ipg * a.isz + a.bs - 1) // a.bs))
    for ino in range(1, a.inodes + 1):
        if not a.inode_used(ino) or ino == JOURNAL_INO:
            continue
        ra, rb = a.inode(ino), b.inode(ino)
        if ra == rb:
            continue
        if peer == "e2fsck" and ino in ea_inodes:
            t = bytearray(rb)
            t[104:108] = ra[104:108]
            if bytes(t) == ra:
                rep.allow("e2fsck: truncated orphan lost its xattr block (i_blocks kept)")
                continue
        if peer == "kernel":
            t = rb
            if ino in orphan_set:
                t2 = itimes_equalised(ra, t)
                if t2 != t:
                    rep.allow("kernel: truncate of an orphan set mtime/ctime")
                t = t2
            xa = struct.unpack_from("<H", ra, 128)[0] if len(ra) > 128 else 0
            xb = struct.unpack_from("<H", t, 128)[0] if len(t) > 128 else 0
            if xb > xa and not any(t[128 + xa:128 + xb]):
                t = bytearray(t)
                t[128:130] = ra[128:130]
                t = bytes(t)
                rep.allow("kernel: i_extra_isize grown")
            if t == ra:
                continue
            rb = t
        fields = [(o, n) for o, n in ((0, "mode"), (2, "uid"), (4, "size"), (8, "atime"), (12, "ctime"),
                                      (16, "mtime"), (20, "dtime"), (24, "gid"), (26, "links"),
                                      (28, "blocks"), (32, "flags"), (40, "i_block"), (100, "generation"),
                                      (104, "file_acl"), (108, "size_high"), (128, "extra"))]
        bad = []
        for k, (o, n) in enumerate(fields):
            end = fields[k + 1][0] if k + 1 < len(fields) else len(ra)
            if ra[o:end] != rb[o:end]:
                bad.append(f"{n} {ra[o:end].hex()} / {rb[o:end].hex()}")
        rep.diff(f"inode {ino}: " + "; ".join(bad) if bad else f"inode {ino}: bytes differ")

    # in-use blocks, raw (not the inode tables, not the journal, not the
    # superblock / descriptors / bitmaps compared above)
    skip = set(itable)
    skip.update(a.inode_blocks(JOURNAL_INO))
    for g in range(a.ngroups):
        skip.update(a.gd(g)[:2])
    # the primary superblock's block and the descriptor table: compared
    # field by field above
    skip.add(1024 // a.bs)
    skip.update(range(a.first_data + 1, a.first_data + 1 + (a.ngroups * 32 + a.bs - 1) // a.bs))
    for blk in range(a.first_data, a.blocks):
        if blk in skip or not a.block_used(blk) or not b.block_used(blk):
            continue
        da, db = a.block(blk), b.block(blk)
        if da == db:
            continue
        if blk in ea_dropped and blk not in ea_freed:
            t = bytearray(db)
            t[4:8] = da[4:8]
            if bytes(t) == da:
                rep.allow("e2fsck: xattr block refcount lowered")
                continue
        n = sum(1 for x, y in zip(da, db) if x != y)
        rep.diff(f"block {blk}: {n} bytes differ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("ours")
    ap.add_argument("theirs")
    ap.add_argument("--peer", choices=("replay", "e2fsck", "kernel"), required=True)
    ap.add_argument("--orphans", help="image whose orphan list names the truncated orphans "
                    "(the replayed image before orphan cleanup)")
    ap.add_argument("--quiet", action="store_true")
    o = ap.parse_args()
    try:
        a, b = Image(o.ours), Image(o.theirs)
        orph = Image(o.orphans) if o.orphans else None
    except (OSError, ValueError) as e:
        print(f"replay_compare: {e}", file=sys.stderr)
        return 2
    rep = Report(o.quiet)
    compare(a, b, o.peer, orph, rep)
    allowed = ", ".join(f"{why}: {n}" for why, n in sorted(rep.allowed.items()))
    if rep.n:
        if rep.n > MAX_SHOWN:
            print(f"... {rep.n - MAX_SHOWN} more")
        print(f"replay_compare ({o.peer}): {rep.n} differences" + (f" (allowed: {allowed})" if allowed else ""))
        return 1
    if not o.quiet:
        print(f"replay_compare ({o.peer}): equal" + (f" (allowed: {allowed})" if allowed else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
