#!/usr/bin/env bash
# nostall-test: release-only (long application run; its C code runs under ASan in the unit tests)
# git on the FUSE mount in every data mode (tests/lib/apps_common.sh): a
# generated tree of several thousand files is committed over many commits
# (each adding, changing, renaming and deleting files), `git fsck --full`
# is clean, the history has every commit and the last tree's files, then a
# local clone on the mount (hard-linked objects) fscks clean and checks out
# the same tree. After unmount, e2fsck -fn and the kernel's view (the same
# files, and git fsck --full there too). CI: 1,200 files over 8 commits;
# NOSTALL_APPS_FULL=1: 6,000 files over 60 commits.
. "$(dirname "$0")/../lib/apps_common.sh"
apps_need_fuse
apps_need git:git
NFILES=$(apps_size 1200 6000 400)
NCOMMITS=$(apps_size 8 60 4)
export HOME=$APPS_TMP GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=nostall GIT_AUTHOR_EMAIL=t@nostall.invalid
export GIT_COMMITTER_NAME=nostall GIT_COMMITTER_EMAIL=t@nostall.invalid
git config --global safe.directory '*'
git config --global init.defaultBranch main
echo "apps_git: $NFILES files, $NCOMMITS commits, modes: $APPS_MODES"

# Commit k of the history: the first adds most files; later ones change a
# slice, add some, rename some and delete some (deterministic).
evolve() { # worktree k
	python3 - "$1" "$2" "$NFILES" <<'PY'
import os, random, sys
root, k, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rnd = random.Random(k)
def path(i):
    return os.path.join(root, "src%d" % (i % 23), "m%d" % (i % 7), "file%05d.txt" % i)
def write(i):
    p = path(i)
    os.makedirs(os.path.dirname(p), exist_ok=True)
    with open(p, "w") as f:
        f.write("file %d commit %d\n" % (i, k) + "x" * rnd.randint(0, 3000) + "\n")
if k == 0:
    for i in range(n * 9 // 10):
        write(i)
    sys.exit(0)
have = [i for i in range(n) if os.path.exists(path(i))]
for i in rnd.sample(have, min(len(have), n // 20)):
    write(i)
for i in range(n * 9 // 10 + (k - 1) * 7, n * 9 // 10 + k * 7):
    if i < n:
        write(i)
for i in rnd.sample(have, min(len(have), 5)):
    if os.path.exists(path(i)):
        os.remove(path(i))
for i in rnd.sample(have, min(len(have), 3)):
    if os.path.exists(path(i)):
        os.rename(path(i), path(i) + ".moved")
PY
}

git_work() { # mnt mode
	local m=$1 k out
	git init -q "$m/repo" || { fail "data=$2: git init"; return; }
	for ((k = 0; k < NCOMMITS; k++)); do
		evolve "$m/repo" "$k"
		(cd "$m/repo" && git add -A && git commit -q -m "commit $k") || { fail "data=$2: commit $k"; return; }
	done
	(cd "$m/repo" && git gc -q) || fail "data=$2: git gc"
	out=$(cd "$m/repo" && git fsck --full --strict 2>&1) || fail "data=$2: git fsck --full: $(echo "$out" | head -3)"
	[ "$(cd "$m/repo" && git rev-list --count HEAD)" = "$NCOMMITS" ] || fail "data=$2: history lost commits"
	(cd "$m/repo" && git status --porcelain | head -3) | grep -q . && fail "data=$2: the worktree is not clean after the commits"
	git clone -q "$m/repo" "$m/clone" || { fail "data=$2: git clone on the mount"; return; }
	out=$(cd "$m/clone" && git fsck --full --strict 2>&1) || fail "data=$2: git fsck --full in the clone: $(echo "$out" | head -3)"
	[ "$(cd "$m/clone" && git rev-parse HEAD)" = "$(cd "$m/repo" && git rev-parse HEAD)" ] || fail "data=$2: clone HEAD differs"
	diff -r -x .git "$m/repo" "$m/clone" >/dev/null || fail "data=$2: the clone's checkout differs from the worktree"
	(cd "$m/repo" && git ls-files -s) >"$APPS_TMP/ls-files"
}

git_kernel() { # kmnt mode
	local out
	out=$(cd "$1/repo" && git fsck --full --strict --no-dangling 2>&1) ||
		fail "data=$2: git fsck --full on the kernel's mount: $(echo "$out" | head -3)"
	(cd "$1/clone" && git ls-files -s) | cmp -s - "$APPS_TMP/ls-files" ||
		fail "data=$2: the kernel sees another index in the clone"
}

for mode in $APPS_MODES; do
	apps_cycle "$mode" 512M git_work git_kernel
done
apps_finish apps_git
