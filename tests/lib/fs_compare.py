#!/usr/bin/env python3
"""Compare nostall's view of an ext3 image with a recorded reference view
(normally the Linux kernel's, read through a read-only noatime loop mount).

  fs_compare.py record ROOT OUT.json        record the view under ROOT
  fs_compare.py tree REF.json HOSTDIR [--fields a,b] [--times-s]
                                            compare a `nostall get -r` copy
  fs_compare.py stat NOSTALL IMAGE REF.json [--times-s]
                                            every stat field of every entry
  fs_compare.py ls NOSTALL IMAGE REF.json   `nostall ls -lRi /`: names, inode,
                                            mode, links, owner, size, mtime
  fs_compare.py cat NOSTALL IMAGE REF.json PATH...
                                            sha256 of `nostall cat`

Prints each difference (at most 40) and exits 1 if there is any, 0 if none.
--times-s compares times in whole seconds (references that only know seconds).
Run with TZ=UTC (nostall prints local time).
"""
import calendar
import hashlib
import json
import os
import re
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fs_manifest  # noqa: E402

MAX_SHOWN = 40


class Diffs:
    def __init__(self, what):
        self.what = what
        self.n = 0

    def add(self, path, msg):
        self.n += 1
        if self.n <= MAX_SHOWN:
            print("%s: %s: %s" % (self.what, fs_manifest.esc(path) or ".", msg))

    def done(self, checked):
        if self.n > MAX_SHOWN:
            print("%s: ... %d more differences" % (self.what, self.n - MAX_SHOWN))
        print("%s: %d entries checked, %d differences" % (self.what, checked, self.n))
        return 1 if self.n else 0


def load(ref):
    with open(ref) as f:
        data = json.load(f)
    return [(bytes.fromhex(k), v) for k, v in data]


def fspath(rel):
    return b"/" if rel == b"." else b"/" + rel


def secs(v):
    return int(v) // 1_000_000_000  # floor, also for negative times


def cmd_record(root, out):
    m = fs_manifest.manifest(root)
    with open(out, "w") as f:
        json.dump([[rel.hex(), d] for rel, d in m], f)
    print("recorded %d entries" % len(m))
    return 0


def cmd_tree(ref, host, fields, times_s):
    refm = load(ref)
    got = dict(fs_manifest.manifest(host, fields))
    diffs = Diffs("tree")
    for rel, want in refm:
        have = got.pop(rel, None)
        if have is None:
            diffs.add(rel, "missing in the copy")
            continue
        for f in fields:
            w, h = want.get(f), have.get(f)
            if f == "size" and want["type"] == "dir":
                continue  # host directories have their own sizes
            if f in ("mtime", "atime", "ctime") and times_s:
                w, h = secs(w), secs(h)
            if w != h:
                diffs.add(rel, "%s: reference %s, copy %s" % (f, w, h))
    for rel in sorted(got):
        diffs.add(rel, "in the copy but not in the reference")
    return diffs.done(len(refm))


STAT_TIME = re.compile(rb"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{9}) ([+-]\d{4})$")


def parse_time(b):
    m = STAT_TIME.match(b.strip())
    if not m:
        raise ValueError("bad time %r" % b)
    tm = (int(m.group(1)[0:4]), int(m.group(1)[5:7]), int(m.group(1)[8:10]),
          int(m.group(1)[11:13]), int(m.group(1)[14:16]), int(m.group(1)[17:19]))
    s = calendar.timegm(tm + (0, 0, 0))
    z = m.group(3)
    off = (int(z[1:3]) * 3600 + int(z[3:5]) * 60) * (1 if z[0:1] == b"+" else -1)
    return (s - off) * 1_000_000_000 + int(m.group(2))


def unescape(b):
    return re.sub(rb"\\x([0-9a-f]{2})|\\\\", lambda m: bytes([int(m.group(1), 16)]) if m.group(1) else b"\\", b)


TYPES = {b"regular file": "reg", b"directory": "dir", b"symbolic link": "lnk",
         b"character special file": "chr", b"block special file": "blk", b"fifo": "fifo",
         b"socket": "sock"}


def parse_stat(out):
    """nostall stat output -> list of dicts."""
    res = []
    cur = None
    in_x = False
    for line in out.split(b"\n"):
        if line.startswith(b"  File: "):
            cur = {"xattr_names": []}
            res.append(cur)
            in_x = False
            rest = line[8:]
            if b" -> " in rest:
                cur["link"] = unescape(rest.split(b" -> ", 1)[1])
            continue
        if cur is None:
            continue
        m = re.match(rb"^  Size: (\d+) +Blocks: (\d+) +IO Block: (\d+) +(.*)$", line)
        if m:
            cur["size"], cur["blocks"] = int(m.group(1)), int(m.group(2))
            cur["type"] = TYPES.get(m.group(4), "?")
            continue
        m = re.match(rb"^Inode: (\d+) +Links: (\d+)(?:  Device type: (\d+),(\d+))?$", line)
        if m:
            cur["ino"], cur["nlink"] = int(m.group(1)), int(m.group(2))
            if m.group(3) is not None:
                cur["rdev"] = "%d,%d" % (int(m.group(3)), int(m.group(4)))
            continue
        m = re.match(rb"^Access: \((\d{4})/\S+\)  Uid: (\d+)  Gid: (\d+)$", line)
        if m:
            cur["mode"] = m.group(1).decode()
            cur["uid"], cur["gid"] = int(m.group(2)), int(m.group(3))
            continue
        for label, key in ((b"Access: ", "atime"), (b"Modify: ", "mtime"), (b"Change: ", "ctime")):
            if line.startswith(label) and not line.startswith(b"Access: ("):
                cur[key] = parse_time(line[len(label):])
        if line.startswith(b"Xattrs:"):
            in_x = True
            continue
        if in_x:
            m = re.match(rb"^  (\S+) \(\d+\)", line)
            if m:
                cur["xattr_names"].append(m.group(1).decode())
    return res


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout, p.stderr


def cmd_stat(nostall, image, ref, times_s):
    refm = load(ref)
    diffs = Diffs("stat")
    chunk = 1500
    for i in range(0, len(refm), chunk):
        part = refm[i:i + chunk]
        rc, out, err = run([nostall, "stat", image] + [fspath(rel) for rel, _ in part])
        if rc != 0:
            diffs.add(b".", "nostall stat exit %d: %s" % (rc, err.decode(errors="replace")[:500]))
        got = parse_stat(out)
        if len(got) != len(part):
            diffs.add(b".", "nostall stat printed %d entries for %d paths" % (len(got), len(part)))
            continue
        for (rel, want), have in zip(part, got):
            checks = [("ino", int(want["ino"])), ("type", want["type"]), ("mode", want["mode"]),
                      ("nlink", int(want["nlink"])), ("uid", int(want["uid"])),
                      ("gid", int(want["gid"])), ("size", int(want["size"])),
                      ("blocks", int(want["blocks"]))]
            for t in ("atime", "mtime", "ctime"):
                checks.append((t, int(want[t])))
            if want["rdev"] != "-":
                checks.append(("rdev", want["rdev"]))
            for k, w in checks:
                h = have.get(k)
                if k in ("atime", "mtime", "ctime") and times_s and h is not None:
                    w, h = secs(w), secs(h)
                if h != w:
                    diffs.add(rel, "%s: reference %s, nostall %s" % (k, w, h))
            if want["type"] == "lnk":
                target = unescape(want["link"].encode())
                if have.get("link") != target:
                    diffs.add(rel, "symlink target: reference %r, nostall %r" % (target[:80], (have.get("link") or b"")[:80]))
            wx = sorted(x.split("=")[0] for x in want["xattr"].split(";")) if want["xattr"] != "-" else []
            hx = sorted(n for n in have["xattr_names"] if not n.startswith(("security.", "system.")))
            if wx != hx:
                diffs.add(rel, "xattr names: reference %s, nostall %s" % (wx, hx))
    return diffs.done(len(refm))


def mode_string(t, mode):
    c = {"reg": "-", "dir": "d", "lnk": "l", "chr": "c", "blk": "b", "fifo": "p", "sock": "s"}[t]
    m = int(mode, 8)
    s = list(c + "".join((r if m & (0o400 >> k) else "-") for k, r in enumerate("rwxrwxrwx")))
    if m & 0o4000:
        s[3] = "s" if m & 0o100 else "S"
    if m & 0o2000:
        s[6] = "s" if m & 0o010 else "S"
    if m & 0o1000:
        s[9] = "t" if m & 0o001 else "T"
    return "".join(s)


LS_LINE = re.compile(rb"^ *(\d+) ([-dlcbps?][-rwxsStT]{9}) +(\d+) +(\d+) +(\d+) +(\d+, +\d+|\d+) "
                     rb"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d) (.*)$")


def cmd_ls(nostall, image, ref):
    refm = load(ref)
    diffs = Diffs("ls")
    rc, out, err = run([nostall, "ls", "-lRi", image, "/"])
    if rc != 0:
        diffs.add(b".", "nostall ls exit %d: %s" % (rc, err.decode(errors="replace")[:500]))
    got = {}
    cur = None
    prev_blank = True
    for line in out.split(b"\n"):
        if line == b"":
            prev_blank = True
            continue
        if prev_blank and line.endswith(b":") and line.startswith(b"/"):
            d = line[:-1]
            cur = b"" if d == b"/" else d[1:] + b"/"
            prev_blank = False
            continue
        prev_blank = False
        if line.startswith(b"total "):
            continue
        m = LS_LINE.match(line)
        if not m or cur is None:
            diffs.add(b".", "unparsed ls line %r" % line[:120])
            continue
        name = m.group(8)
        target = None
        if m.group(2)[:1] == b"l":
            name, _, target = name.partition(b" -> ")
        got[cur + name] = (m, target)
    for rel, want in refm:
        if rel == b".":
            continue
        have = got.pop(rel, None)
        if have is None:
            diffs.add(rel, "not listed")
            continue
        m, target = have
        exp_size = want["rdev"].replace(",", ", ") if want["type"] in ("chr", "blk") else want["size"]
        mt = int(want["mtime"]) // 1_000_000_000
        import time as _t
        exp = [("ino", want["ino"], m.group(1).decode()),
               ("mode", mode_string(want["type"], want["mode"]), m.group(2).decode()),
               ("nlink", want["nlink"], m.group(3).decode()),
               ("uid", want["uid"], m.group(4).decode()), ("gid", want["gid"], m.group(5).decode()),
               ("size", exp_size, re.sub(r", +", ", ", m.group(6).decode())),
               ("mtime", _t.strftime("%Y-%m-%d %H:%M:%S", _t.gmtime(mt)), m.group(7).decode())]
        for k, w, h in exp:
            if w != h:
                diffs.add(rel, "%s: reference %s, nostall %s" % (k, w, h))
        if want["type"] == "lnk" and unescape(want["link"].encode()) != target:
            diffs.add(rel, "symlink target differs (nostall %r)" % (target or b"")[:80])
    for rel in sorted(got):
        diffs.add(rel, "listed but not in the reference")
    return diffs.done(len(refm))


def cmd_cat(nostall, image, ref, paths):
    refm = dict(load(ref))
    diffs = Diffs("cat")
    for p in paths:
        rel = os.fsencode(p).lstrip(b"/")
        want = refm.get(rel)
        if want is None:
            diffs.add(rel, "not in the reference")
            continue
        if want["type"] == "lnk":  # cat follows it: compare with the target
            t = os.path.normpath(os.path.join(os.path.dirname(rel), unescape(want["link"].encode())))
            want = refm.get(t)
            if want is None:
                diffs.add(rel, "symlink target %r not in the reference" % t)
                continue
        h = hashlib.sha256()
        proc = subprocess.Popen([nostall, "cat", image, fspath(rel)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        n = 0
        while True:
            b = proc.stdout.read(1 << 20)
            if not b:
                break
            n += len(b)
            h.update(b)
        err = proc.stderr.read()
        rc = proc.wait()
        if rc != 0:
            diffs.add(rel, "nostall cat exit %d: %s" % (rc, err.decode(errors="replace")[:300]))
        elif h.hexdigest() != want["data"]:
            diffs.add(rel, "contents differ (%d bytes read, size %s)" % (n, want["size"]))
    return diffs.done(len(paths))


def main(argv):
    args = [a for a in argv if not a.startswith("--")]
    opts = [a for a in argv if a.startswith("--")]
    times_s = "--times-s" in opts
    fields = "type,mode,uid,gid,size,nlink,mtime,atime,rdev,data,link,xattr,hlink".split(",")
    for o in opts:
        if o.startswith("--fields="):
            fields = o[len("--fields="):].split(",")
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    c = args[0]
    if c == "record" and len(args) == 3:
        return cmd_record(args[1], args[2])
    if c == "tree" and len(args) == 3:
        return cmd_tree(args[1], args[2], fields, times_s)
    if c == "stat" and len(args) == 4:
        return cmd_stat(args[1], args[2], args[3], times_s)
    if c == "ls" and len(args) == 4:
        return cmd_ls(args[1], args[2], args[3])
    if c == "cat" and len(args) >= 4:
        return cmd_cat(args[1], args[2], args[3], args[4:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
