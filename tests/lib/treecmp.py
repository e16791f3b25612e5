#!/usr/bin/env python3
"""Compare two directory trees the way a filesystem copy must match:
type, permission and set-id bits, owner, size, contents (sparse-aware: only
the data regions of either side are read), symlink targets, extended
attributes, hard-link groups and modification times (nanoseconds with --ns,
else whole seconds). Prints one line per difference (at most 20) and exits 1
if there is any; the root directories' own times are not compared.

usage: treecmp.py [--ns] [--skip NAME] SRC OUT
"""
import os
import stat
import sys


def data_regions(fd, size):
    out, off = [], 0
    while off < size:
        try:
            start = os.lseek(fd, off, os.SEEK_DATA)
        except OSError:
            break
        end = os.lseek(fd, start, os.SEEK_HOLE)
        out.append((start, end))
        off = end
    return out


def same_content(a, b, size):
    with open(a, 'rb') as fa, open(b, 'rb') as fb:
        regions = data_regions(fa.fileno(), size) + data_regions(fb.fileno(), size)
        for start, end in regions:
            pos = start
            while pos < end:
                n = min(1 << 20, end - pos)
                fa.seek(pos)
                fb.seek(pos)
                if fa.read(n) != fb.read(n):
                    return False
                pos += n
    return True


def xattrs(p):
    try:
        names = os.listxattr(p, follow_symlinks=False)
    except OSError:
        return {}
    return {n: os.getxattr(p, n, follow_symlinks=False) for n in names if not n.startswith('security.')}


def main():
    args = sys.argv[1:]
    ns = '--ns' in args
    skip = set()
    while '--skip' in args:
        i = args.index('--skip')
        skip.add(args[i + 1])
        del args[i:i + 2]
    args = [a for a in args if a != '--ns']
    src, out = args
    diffs = []
    links_src, links_out = {}, {}

    def diff(msg):
        diffs.append(msg)

    for root, dirs, files in os.walk(src):
        dirs[:] = [d for d in dirs if d not in skip]
        rel = os.path.relpath(root, src)
        for name in sorted(dirs + files):
            if name in skip:
                continue
            r = os.path.normpath(os.path.join(rel, name))
            a, b = os.path.join(src, r), os.path.join(out, r)
            sa = os.lstat(a)
            try:
                sb = os.lstat(b)
            except FileNotFoundError:
                diff(f'{r}: missing')
                continue
            if stat.S_IFMT(sa.st_mode) != stat.S_IFMT(sb.st_mode):
                diff(f'{r}: type {oct(sa.st_mode)} vs {oct(sb.st_mode)}')
                continue
            if not stat.S_ISLNK(sa.st_mode) and stat.S_IMODE(sa.st_mode) != stat.S_IMODE(sb.st_mode):
                diff(f'{r}: mode {oct(sa.st_mode)} vs {oct(sb.st_mode)}')
            if (sa.st_uid, sa.st_gid) != (sb.st_uid, sb.st_gid):
                diff(f'{r}: owner {sa.st_uid}:{sa.st_gid} vs {sb.st_uid}:{sb.st_gid}')
            if stat.S_ISLNK(sa.st_mode):
                if os.readlink(a) != os.readlink(b):
                    diff(f'{r}: symlink target differs')
            elif stat.S_ISREG(sa.st_mode):
                if sa.st_size != sb.st_size:
                    diff(f'{r}: size {sa.st_size} vs {sb.st_size}')
                elif not same_content(a, b, sa.st_size):
                    diff(f'{r}: contents differ')
                if sa.st_nlink > 1:
                    links_src.setdefault(sa.st_ino, set()).add(r)
                    links_out.setdefault(sb.st_ino, set()).add(r)
            if not stat.S_ISLNK(sa.st_mode):
                ta, tb = sa.st_mtime_ns, sb.st_mtime_ns
                if (ta != tb) if ns else (ta // 10**9 != tb // 10**9):
                    diff(f'{r}: mtime {ta} vs {tb}')
            if xattrs(a) != xattrs(b):
                diff(f'{r}: xattrs {sorted(xattrs(a))} vs {sorted(xattrs(b))}')
    if sorted(map(sorted, links_src.values())) != sorted(map(sorted, links_out.values())):
        diff('hard-link groups differ')
    for d in diffs[:20]:
        print(d)
    return 1 if diffs else 0


if __name__ == '__main__':
    sys.exit(main())
