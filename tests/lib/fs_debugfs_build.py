#!/usr/bin/env python3
"""Copy a host source tree into an ext3 image with debugfs -w (no kernel, no
root needed), add what an unprivileged source tree cannot hold (device nodes,
foreign owners, trusted.* xattrs), set every entry's mode, owner and times
with `sif`, and write the reference view (fs_compare.py's JSON format):
contents and names from the source, inode numbers, block counts, link counts
and ctimes as debugfs itself reports them.

usage: fs_debugfs_build.py SRCDIR IMAGE OUT.json
Times are whole seconds (debugfs `sif` sets no nanoseconds); compare with
--times-s. Names must be free of control characters and double quotes.
"""
import json
import os
import re
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fs_manifest  # noqa: E402

src, image, out = sys.argv[1:4]
m = fs_manifest.manifest(src)
ref = {rel: d for rel, d in m}


def mknod(rel, args):
    # debugfs mknod links the whole given name into the current directory:
    # cd into the parent first
    parent, base = os.path.split(rel)
    return ["cd %s" % q(parent or b"."), "mknod %s %s" % (q(base).replace('"/', '"', 1), args), "cd /"]


def q(rel):
    s = ("/" + os.fsdecode(rel)) if rel != b"." else "/"
    if '"' in s or any(ord(c) < 0x20 for c in s):
        sys.exit("fs_debugfs_build: unsupported name %r" % s)
    return '"%s"' % s


cmds = []
first_of = {}
for rel, d in m:
    if rel == b".":
        continue
    hp = os.path.join(os.fsencode(src), rel)
    t = d["type"]
    if t == "dir":
        cmds.append("mkdir %s" % q(rel))
    elif t == "reg":
        if d["hlink"] != "-" and fs_manifest.esc(rel) != d["hlink"]:
            cmds.append("ln %s %s" % (q(first_of[d["hlink"]]), q(rel)))
            continue
        first_of[fs_manifest.esc(rel)] = rel
        cmds.append("write %s %s" % ('"%s"' % os.fsdecode(hp), q(rel)))
    elif t == "lnk":
        cmds.append("symlink %s %s" % (q(rel), '"%s"' % os.fsdecode(os.readlink(hp))))
    elif t == "fifo":
        cmds += mknod(rel, "p")
    elif t in ("chr", "blk") and all(int(x) < 256 for x in d["rdev"].split(",")):
        cmds += mknod(rel, "%s %s" % (t[0], d["rdev"].replace(",", " ")))
    else:
        sys.exit("fs_debugfs_build: cannot make %s (%s)" % (rel, t))

# what an unprivileged source cannot hold
extra = [
    (b"lost+found", dict(type="dir", mode="0700", uid="0", gid="0")),  # made by mke2fs
    (b"dbg", dict(type="dir", mode="0755", uid="0", gid="0")),
    (b"dbg/null", dict(type="chr", mode="0666", uid="0", gid="0", rdev="1,3")),
    (b"dbg/sda1", dict(type="blk", mode="0660", uid="0", gid="6", rdev="8,1")),
    (b"dbg/owned", dict(type="reg", mode="0640", uid="100000", gid="200000")),
]
for rel, d in extra:
    if rel == b"lost+found":
        pass
    elif d["type"] == "dir":
        cmds.append("mkdir %s" % q(rel))
    elif d["type"] in ("chr", "blk"):
        ma, mi = d["rdev"].split(",")
        cmds += mknod(rel, "%s %s %s" % (d["type"][0], ma, mi))
    else:
        cmds.append("write /dev/null %s" % q(rel))
    base = dict(size="0", nlink="2" if d["type"] == "dir" else "1",
                mtime="1000000000000000000", atime="1100000000000000000",
                data=("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
                      if d["type"] == "reg" else "-"),
                link="-", xattr="-", hlink="-")
    base.update(d)
    base.setdefault("rdev", "-")
    ref[rel] = base
ref[b"dbg/owned"]["xattr"] = "trusted.dbg=%s" % __import__("hashlib").sha256(b"debugfs").hexdigest()[:16]
cmds.append('ea_set %s trusted.dbg debugfs' % q(b"dbg/owned"))
ref[b"."]["nlink"] = str(int(ref[b"."]["nlink"]) + 2)

TYPE_BITS = {"reg": 0o100000, "dir": 0o040000, "lnk": 0o120000, "chr": 0o020000,
             "blk": 0o060000, "fifo": 0o010000}
for rel, d in sorted(ref.items()):
    mode = TYPE_BITS[d["type"]] | int(d["mode"], 8)
    cmds.append("sif %s mode 0%o" % (q(rel), mode))
    cmds.append("sif %s uid %s" % (q(rel), d["uid"]))
    cmds.append("sif %s gid %s" % (q(rel), d["gid"]))
    for t in ("atime", "mtime"):
        cmds.append("sif %s %s @%d" % (q(rel), t, int(d[t]) // 1_000_000_000))
    if d["type"] == "reg" and int(d["nlink"]) > 1:
        cmds.append("sif %s links_count %s" % (q(rel), d["nlink"]))
    if d["xattr"] != "-" and rel != b"dbg/owned":
        hp = os.path.join(os.fsencode(src), rel)
        for item in d["xattr"].split(";"):
            name = item.split("=")[0]
            vf = "%s.xattr%d" % (out, len(cmds))  # debugfs reads it when it runs
            with open(vf, "wb") as f:
                f.write(os.getxattr(hp, name, follow_symlinks=False))
            cmds.append("ea_set -f %s %s %s" % (vf, q(rel), name))

# 128-byte inodes hold 32-bit signed seconds: debugfs wraps what does not fit
isz = subprocess.run(["dumpe2fs", "-h", image], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
m_isz = re.search(rb"Inode size:\s+(\d+)", isz)
if m_isz and int(m_isz.group(1)) == 128:
    for d in ref.values():
        for t in ("atime", "mtime"):
            sec = (int(d[t]) // 1_000_000_000) & 0xFFFFFFFF
            d[t] = str((sec - (1 << 32) if sec >= 1 << 31 else sec) * 1_000_000_000)

cmdfile = out + ".cmds"
with open(cmdfile, "w") as f:
    f.write("\n".join(cmds) + "\n")
p = subprocess.run(["debugfs", "-w", "-f", cmdfile, image], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
bad = [line for line in p.stdout.decode(errors="replace").split("\n")
       if line and not line.startswith(("debugfs", "Allocated inode"))]
if p.returncode != 0 or bad:
    print("debugfs -w failed: %s" % "\n".join(bad[:20]))
    sys.exit(1)

# debugfs's own view: inode numbers, block counts, links, ctime
rels = sorted(ref)
with open(cmdfile, "w") as f:
    for rel in rels:
        f.write("stat %s\n" % q(rel))
p = subprocess.run(["debugfs", "-f", cmdfile, image], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
blocks = p.stdout.decode(errors="replace").split("debugfs: stat ")[1:]
if len(blocks) != len(rels):
    sys.exit("debugfs stat: %d answers for %d paths" % (len(blocks), len(rels)))
for rel, b in zip(rels, blocks):
    d = ref[rel]
    mi = re.search(r"Inode: (\d+)", b)
    ml = re.search(r"Links: (\d+)\s+Blockcount: (\d+)", b)
    mc = re.search(r"\bctime: 0x([0-9a-f]+)", b)
    ms = re.search(r"Size: (\d+)", b)
    if not (mi and ml and mc and ms):
        sys.exit("debugfs stat %s: unparsed:\n%s" % (rel, b[:400]))
    d["ino"] = mi.group(1)
    if d["nlink"] != ml.group(1):
        sys.exit("debugfs made %s with %s links, the source has %s" % (rel, ml.group(1), d["nlink"]))
    d["blocks"] = ml.group(2)
    c = int(mc.group(1), 16)
    d["ctime"] = str((c - (1 << 32) if c >= 1 << 31 else c) * 1_000_000_000)
    if d["type"] == "dir":
        d["size"] = ms.group(1)
with open(out, "w") as f:
    json.dump([[rel.hex(), ref[rel]] for rel in rels], f)
os.unlink(cmdfile)
for n in os.listdir(os.path.dirname(os.path.abspath(out))):
    if n.startswith(os.path.basename(out) + ".xattr"):
        os.unlink(os.path.join(os.path.dirname(os.path.abspath(out)), n))
print("debugfs image: %d entries" % len(rels))
