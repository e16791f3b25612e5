#!/usr/bin/env bash
# make check-layers (tests/lib/check_layers.py) fails on what it is there to
# catch, each on a copy of the tree with one edit, and passes on the clean
# copy: an internal header in tools/fuse (public-only: docs/architecture.md),
# an upward include from tools/fuse (tools/cli is above it), an internal
# header in tools/fs, and two tools folders that include each other
# (tools/bench and tools/crash, peers). The binary is not used.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

fresh() {
	rm -rf "$tmp/t"
	mkdir -p "$tmp/t"
	for d in src include tools tests fuzz docs; do
		[ -d "$root/$d" ] && cp -r "$root/$d" "$tmp/t/"
	done
	return 0
}
check() { python3 "$root/tests/lib/check_layers.py" --root "$tmp/t" >"$tmp/out" 2>&1; }

# expect_fail WHAT PATTERN: the check fails and says PATTERN.
expect_fail() {
	if check; then cat "$tmp/out"; fail "check-layers passed with $1"; fi
	grep -q -- "$2" "$tmp/out" || { cat "$tmp/out"; fail "$1: no line matching '$2'"; }
	echo "ok: $1: $(grep -m1 -- "$2" "$tmp/out")"
}

fresh
check || { cat "$tmp/out"; fail "check-layers fails on the clean tree"; }
echo "ok: clean tree: $(cat "$tmp/out")"

# 1. an internal header in tools/fuse
fresh
sed -i '0,/#include "fuse_int.h"/s//#include "fuse_int.h"\n#include "util\/err.h"/' "$tmp/t/tools/fuse/mount_opts.c"
grep -q '"util/err.h"' "$tmp/t/tools/fuse/mount_opts.c" || fail "the edit did not take"
expect_fail "an internal header in tools/fuse" "tools/fuse/mount_opts.c:.*sees only the public API.*src/util/err.h"

# 2. an upward include from tools/fuse (tools/cli is above tools/fuse)
fresh
printf '#include "../cli/up.h"\n' >>"$tmp/t/tools/fuse/mount_opts.c"
printf '/* a header of the CLI */\n' >"$tmp/t/tools/cli/up.h"
expect_fail "an upward include in tools/fuse" "layer 'tools/fuse' includes tools/cli/up.h of layer 'tools/cli' above it"

# 3. an internal header in tools/fs
fresh
printf '#include "dev/dev.h"\n' >>"$tmp/t/tools/fs/info.c"
expect_fail "an internal header in tools/fs" "tools/fs/info.c:.*sees only the public API.*src/dev/dev.h"

# 4. two tools folders that include each other (peers: no upward edge)
fresh
printf '#include "../crash/crash.h"\n' >>"$tmp/t/tools/bench/repro_plot.c"
printf '#include "../bench/repro.h"\n' >>"$tmp/t/tools/crash/report.c"
expect_fail "tools/bench and tools/crash including each other" \
	"folders 'tools/[a-z]*' and 'tools/[a-z]*' include each other"
grep -q "tools/bench/repro_plot.c" "$tmp/out" && grep -q "tools/crash/report.c" "$tmp/out" ||
	{ cat "$tmp/out"; fail "the pair's lines are not named"; }
echo "check_layers_selftest: ok"
