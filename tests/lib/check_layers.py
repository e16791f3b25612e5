#!/usr/bin/env python3
"""Layering check (make check-layers; part of make test).

The layer order is read from the ```layers block of docs/architecture.md
(bottom first; folders on one line are peers). Every #include "..." in src/,
include/, tools/, tests/ and fuzz/ is resolved to the file it names; the check
fails when
  - a file includes a header of a layer above its own, or
  - two folders include each other (directly: a folder-level cycle of two;
    longer cycles are caught by the first rule unless the folders are peers,
    so peers are also checked for any cycle), or
  - a folder under src/ is not listed in the order, or an include names a
    file that does not exist, or
  - a file of a public-only folder (the ```public-only block of
    docs/architecture.md: tools/fs, tools/fuse, tools/common) includes a
    header outside its own folder and the folders the block allows with a
    "+" line (include/nostall, tools/common).
Folder keys are full paths (tools/bench, tools/fuse, extfs/core, ...), so the
"include each other" rule holds between tools' folders too.
Prints one line per violation and exits 1, else prints a summary and exits 0.
Usage: check_layers.py [--root DIR]  (default: the tree holding this script;
tests/cli/check_layers_selftest.sh runs it on an edited copy).
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
if len(sys.argv) == 3 and sys.argv[1] == "--root":
    ROOT = os.path.abspath(sys.argv[2])
elif len(sys.argv) != 1:
    sys.exit("usage: check_layers.py [--root DIR]")
INC_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_layers():
    doc = os.path.join(ROOT, "docs", "architecture.md")
    text = open(doc, encoding="utf-8").read()
    m = re.search(r"```layers\n(.*?)```", text, re.S)
    if not m:
        sys.exit("check-layers: docs/architecture.md has no ```layers block")
    level = {}
    for i, line in enumerate(l for l in m.group(1).splitlines() if l.strip() and not l.strip().startswith("#")):
        for folder in line.split("#")[0].split():
            level[folder] = i
    return level


def read_public_only():
    """The ```public-only block: (folders that see only the public API, the
    further folders they may include: "+FOLDER" lines)."""
    doc = os.path.join(ROOT, "docs", "architecture.md")
    m = re.search(r"```public-only\n(.*?)```", open(doc, encoding="utf-8").read(), re.S)
    if not m:
        sys.exit("check-layers: docs/architecture.md has no ```public-only block")
    folders, allowed = set(), set()
    for line in m.group(1).splitlines():
        for word in line.split("#")[0].split():
            if word.startswith("+"):
                allowed.add(word[1:])
            else:
                folders.add(word)
    return folders, allowed


def folder_of(path):
    """Folder key of a file: 'blk', 'blk/sched', 'extfs/core', 'include/nostall', 'tools/fuse', ..."""
    rel = os.path.relpath(path, ROOT)
    parts = rel.split(os.sep)
    if parts[0] == "src":
        return "/".join(parts[1:-1])
    return "/".join(parts[:-1])  # include/nostall, tools/bench, tests/lib, ...


def layer_key(folder, level):
    """Longest listed prefix of folder."""
    parts = folder.split("/")
    for n in range(len(parts), 0, -1):
        k = "/".join(parts[:n])
        if k in level:
            return k
    return None


def resolve(src, inc):
    for base in (os.path.dirname(src), os.path.join(ROOT, "src"), os.path.join(ROOT, "include")):
        p = os.path.normpath(os.path.join(base, inc))
        if os.path.isfile(p):
            return p
    return None


def main():
    level = read_layers()
    public_only, public_allowed = read_public_only()
    errors = []
    edges = {}
    files = []
    for top in ("src", "include", "tools", "tests", "fuzz"):
        for dirpath, _, names in os.walk(os.path.join(ROOT, top)):
            for n in names:
                if n.endswith((".c", ".h")):
                    files.append(os.path.join(dirpath, n))
    for f in sorted(files):
        ff = folder_of(f)
        fk = layer_key(ff, level)
        rel = os.path.relpath(f, ROOT)
        if fk is None:
            errors.append(f"{rel}: folder '{ff}' is not in the layer order (docs/architecture.md)")
            continue
        for lineno, line in enumerate(open(f, encoding="utf-8", errors="replace"), 1):
            m = INC_RE.match(line)
            if not m:
                continue
            target = resolve(f, m.group(1))
            if target is None:
                errors.append(f"{rel}:{lineno}: #include \"{m.group(1)}\" names no file")
                continue
            tf = folder_of(target)
            if ff in public_only and tf != ff and tf not in public_allowed:
                errors.append(f"{rel}:{lineno}: '{ff}' sees only the public API (docs/architecture.md, "
                              f"public-only), but includes {os.path.relpath(target, ROOT)}")
            tk = layer_key(tf, level)
            if tk is None:
                errors.append(f"{rel}:{lineno}: includes {os.path.relpath(target, ROOT)} from unlisted folder '{tf}'")
                continue
            if tk != fk:
                edges.setdefault(fk, {}).setdefault(tk, f"{rel}:{lineno}")
            if level[tk] > level[fk]:
                errors.append(f"{rel}:{lineno}: layer '{fk}' includes {os.path.relpath(target, ROOT)} "
                              f"of layer '{tk}' above it")
    # Folder-level cycles (mostly among peers; upward edges are reported above).
    seen_pairs = set()
    for a, outs in edges.items():
        for b in outs:
            if a in edges.get(b, {}) and (b, a) not in seen_pairs:
                seen_pairs.add((a, b))
                errors.append(f"folders '{a}' and '{b}' include each other "
                              f"({edges[a][b]} and {edges[b][a]})")
    for e in errors:
        print("check-layers: " + e)
    if errors:
        print(f"check-layers: {len(errors)} violation(s)")
        return 1
    print(f"check-layers: ok ({len(files)} files, {sum(len(v) for v in edges.values())} folder edges)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
