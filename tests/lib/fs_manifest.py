#!/usr/bin/env python3
"""Print one line per entry of a directory tree, sorted by path, for comparing
two views of one filesystem (the kernel's loop mount and nostall's copy).

usage: fs_manifest.py [--fields LIST] [--no-root] ROOT

Each line is "PATH<TAB>field=value<TAB>...". Fields (comma list, default all):
  type mode uid gid size nlink mtime atime ctime rdev data link xattr ino hlink
  data   sha256 of a regular file's contents
  link   a symlink's target (hex, names may hold any byte)
  xattr  sorted name=sha256(value) list (lgetxattr: symlinks too)
  hlink  for regular files with nlink > 1: the first path (sorted order) of
         the same inode, so hard-link groups compare without inode numbers
Times are integer nanoseconds since the epoch.
Paths are printed with surrogate escapes as hex-escaped bytes when not
printable ASCII.
"""
import hashlib
import os
import stat
import sys

ALL = "type mode uid gid size blocks nlink mtime atime ctime rdev data link xattr ino hlink".split()


def esc(b):
    out = []
    for c in b:
        if 0x21 <= c < 0x7F and c != 0x5C:
            out.append(chr(c))
        else:
            out.append("\\x%02x" % c)
    return "".join(out)


def ftype(m):
    for f, n in ((stat.S_ISREG, "reg"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "lnk"),
                 (stat.S_ISCHR, "chr"), (stat.S_ISBLK, "blk"), (stat.S_ISFIFO, "fifo"),
                 (stat.S_ISSOCK, "sock")):
        if f(m):
            return n
    return "?"


NOATIME = getattr(os, "O_NOATIME", 0)


def sha(path):
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | NOATIME)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY)
    try:
        while True:
            b = os.read(fd, 1 << 20)
            if not b:
                break
            h.update(b)
    finally:
        os.close(fd)
    return h.hexdigest()


def listdir(path):
    """Names in a directory, read with O_NOATIME where allowed so that listing
    a copy does not move its atime."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | NOATIME)
    except PermissionError:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return [os.fsencode(n) for n in os.listdir(fd)]
    finally:
        os.close(fd)


def walk(root):
    """All paths under root (bytes), root first, then sorted; lstat results
    are taken before anything under a directory is read."""
    out = []
    stats = {}

    def rec(p):
        st = os.lstat(p)
        stats[p] = st
        out.append(p)
        if stat.S_ISDIR(st.st_mode):
            for n in sorted(listdir(p)):
                rec(os.path.join(p, n))

    rec(root)
    return out, stats


def manifest(root, fields=ALL, root_too=True):
    """[(relative path bytes, {field: value string})] sorted by path."""
    root = os.fsencode(root)
    entries, stats = walk(root)
    first_of_ino = {}
    for p in sorted(entries):
        st = stats[p]
        if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
            first_of_ino.setdefault(st.st_ino, p)
    res = []
    for p in entries:
        if p == root and not root_too:
            continue
        st = stats[p]
        rel = os.path.relpath(p, root)
        d = {}
        for f in fields:
            if f == "type":
                v = ftype(st.st_mode)
            elif f == "mode":
                v = "%04o" % stat.S_IMODE(st.st_mode)
            elif f == "uid":
                v = st.st_uid
            elif f == "gid":
                v = st.st_gid
            elif f == "size":
                v = st.st_size
            elif f == "blocks":
                v = st.st_blocks
            elif f == "nlink":
                v = st.st_nlink
            elif f in ("mtime", "atime", "ctime"):
                v = getattr(st, "st_" + f + "_ns")
            elif f == "rdev":
                if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
                    v = "%d,%d" % (os.major(st.st_rdev), os.minor(st.st_rdev))
                else:
                    v = "-"
            elif f == "data":
                v = sha(p) if stat.S_ISREG(st.st_mode) else "-"
            elif f == "link":
                v = esc(os.readlink(p)) if stat.S_ISLNK(st.st_mode) else "-"
            elif f == "xattr":
                try:
                    names = sorted(os.listxattr(p, follow_symlinks=False))
                except OSError:
                    names = []
                parts = []
                for n in names:
                    if n.startswith("security.") or n.startswith("system."):
                        continue  # host-specific (selinux labels, ACLs)
                    val = os.getxattr(p, n, follow_symlinks=False)
                    parts.append("%s=%s" % (n, hashlib.sha256(val).hexdigest()[:16]))
                v = ";".join(parts) if parts else "-"
            elif f == "ino":
                v = st.st_ino
            elif f == "hlink":
                if stat.S_ISREG(st.st_mode) and st.st_nlink > 1:
                    v = esc(os.path.relpath(first_of_ino[st.st_ino], root))
                else:
                    v = "-"
            else:
                raise ValueError("unknown field " + f)
            d[f] = str(v)
        res.append((rel, d))
    res.sort(key=lambda x: x[0])
    return res


def main():
    args = sys.argv[1:]
    fields = ALL
    root_too = True
    while args and args[0].startswith("--"):
        a = args.pop(0)
        if a == "--fields":
            fields = args.pop(0).split(",")
        elif a == "--no-root":
            root_too = False
        else:
            print("unknown option " + a, file=sys.stderr)
            return 2
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    for rel, d in manifest(args[0], fields, root_too):
        sys.stdout.write("\t".join([esc(rel)] + ["%s=%s" % (f, d[f]) for f in fields]) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
