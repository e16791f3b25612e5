#!/usr/bin/env python3
"""A multi-process filesystem load in the spirit of fsstress, to be killed.

  fsload.py DIR SEED [--procs N] [--seconds S]

Each process works in DIR/pN and in the shared DIR/shared with a seeded
random mix: create, append, write at random (sparse) offsets, truncate up
and down, fsync / fdatasync, setxattr (user.* values large enough to need an
xattr block on 128- and 256-byte inodes), mkdir / rmdir, rename (within and
across directories, over existing names), link, symlink, unlink, and
unlinking open files (orphans). Errors are ignored (another process, or the
mount going away, may cause them): the point is the on-disk state a crash
leaves, judged afterwards by the recovery oracles (tests/lib/replay_oracles.sh).
Prints its seed. Runs until --seconds pass or it is killed.
"""
import argparse
import os
import random
import sys
import time

OPS = ["create", "append", "pwrite", "truncate", "fsync", "xattr", "mkdir", "rmdir",
       "rename", "link", "symlink", "unlink", "orphan", "bigwrite"]
WEIGHTS = [8, 10, 10, 6, 4, 4, 2, 1, 5, 2, 1, 4, 2, 2]


def worker(root, seed, idx, deadline):
    r = random.Random(seed * 1000 + idx)
    mine = os.path.join(root, f"p{idx}")
    shared = os.path.join(root, "shared")
    for d in (mine, shared):
        try:
            os.makedirs(d, exist_ok=True)
        except OSError:
            pass
    held = []

    def pick_dir():
        base = mine if r.random() < 0.7 else shared
        try:
            subs = [e for e in os.listdir(base) if e.startswith("d")]
        except OSError:
            subs = []
        if subs and r.random() < 0.5:
            return os.path.join(base, r.choice(subs))
        return base

    def pick_file(d):
        try:
            names = [e for e in os.listdir(d) if e.startswith("f")]
        except OSError:
            return None
        return os.path.join(d, r.choice(names)) if names else None

    def data(n):
        return bytes([r.randrange(1, 256)]) * n

    n = 0
    while time.time() < deadline:
        n += 1
        op = r.choices(OPS, WEIGHTS)[0]
        d = pick_dir()
        try:
            if op == "create":
                p = os.path.join(d, f"f{idx}_{r.randrange(200)}")
                fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o644)
                os.write(fd, data(r.choice((0, 100, 4096, 5000, 70000))))
                os.close(fd)
            elif op in ("append", "pwrite", "bigwrite", "fsync"):
                p = pick_file(d)
                if not p:
                    continue
                fd = os.open(p, os.O_WRONLY | (os.O_APPEND if op == "append" else 0))
                if op == "append":
                    os.write(fd, data(r.randrange(1, 20000)))
                elif op == "pwrite":
                    os.pwrite(fd, data(r.randrange(1, 9000)), r.randrange(0, 8 << 20))
                elif op == "bigwrite":
                    os.pwrite(fd, data(r.randrange(64 << 10, 1 << 20)), r.randrange(0, 4 << 20))
                else:
                    os.pwrite(fd, data(r.randrange(1, 9000)), r.randrange(0, 1 << 20))
                    (os.fsync if r.random() < 0.5 else os.fdatasync)(fd)
                os.close(fd)
            elif op == "truncate":
                p = pick_file(d)
                if p:
                    os.truncate(p, r.choice((0, r.randrange(0, 1 << 20), r.randrange(0, 16 << 20))))
            elif op == "xattr":
                p = pick_file(d)
                if p:
                    os.setxattr(p, f"user.a{r.randrange(8)}", data(r.randrange(1, 600)))
            elif op == "mkdir":
                os.mkdir(os.path.join(d if d in (mine, shared) else mine, f"d{idx}_{r.randrange(20)}"))
            elif op == "rmdir":
                subs = [e for e in os.listdir(mine) if e.startswith("d")]
                if subs:
                    os.rmdir(os.path.join(mine, r.choice(subs)))
            elif op == "rename":
                p = pick_file(d)
                if p:
                    os.rename(p, os.path.join(pick_dir(), f"f{idx}_{r.randrange(200)}"))
            elif op == "link":
                p = pick_file(d)
                if p:
                    os.link(p, os.path.join(pick_dir(), f"f{idx}_l{r.randrange(100)}"))
            elif op == "symlink":
                os.symlink("x" * r.choice((10, 100, 300)), os.path.join(d, f"s{idx}_{r.randrange(50)}"))
            elif op == "unlink":
                p = pick_file(d)
                if p:
                    os.unlink(p)
            elif op == "orphan":
                p = pick_file(d)
                if p:
                    fd = os.open(p, os.O_RDWR)
                    os.unlink(p)
                    os.write(fd, data(r.randrange(1, 50000)))
                    held.append(fd)
                    if len(held) > 8:
                        os.close(held.pop(0))
        except OSError:
            pass
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("seed", type=int)
    ap.add_argument("--procs", type=int, default=4)
    ap.add_argument("--seconds", type=float, default=3600)
    o = ap.parse_args()
    print(f"fsload: seed {o.seed}, {o.procs} processes", file=sys.stderr, flush=True)
    deadline = time.time() + o.seconds
    pids = []
    for i in range(o.procs):
        pid = os.fork()
        if pid == 0:
            try:
                worker(o.dir, o.seed, i, deadline)
            finally:
                os._exit(0)
        pids.append(pid)
    for pid in pids:
        os.waitpid(pid, 0)


if __name__ == "__main__":
    main()
