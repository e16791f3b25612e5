#!/usr/bin/env bash
# nostall-test: release-only (it checks the release build's files; the asan and tsan variants are test builds with the hooks compiled in)
# Test hooks stay out of the release build (issue 35): `strings` finds no
# NOSTALL_DEBUG name (the environment switches such as
# NOSTALL_DEBUG_SKIP_ORDERED, src/jbd/jbd_inode.c) and not the lock-order
# checker's report (src/util/lockdep.c, "lock-order inversion") in
# build/libnostall.a, build/libnostall.so.* or build/nostall; the test-hooks CLI build/nostall-testhooks (make tests,
# -DNOSTALL_TEST_HOOKS -DNOSTALL_LOCKDEP) has both, so the check cannot pass
# for a name that was merely renamed. Run by tests/run.sh in the release
# variant ($NOSTALL is build/nostall there).
set -u
cd "$(dirname "$0")/../.."
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

command -v strings >/dev/null 2>&1 || { echo "SKIP: strings (binutils) not on PATH"; exit 77; }
dir=$(dirname "${NOSTALL:-build/nostall}")
hooks=${NOSTALL_HOOKS:-$dir/nostall-testhooks}

files=("$dir/libnostall.a" "$dir/nostall")
for so in "$dir"/libnostall.so.*; do
	[ -f "$so" ] && files+=("$so")
done
[ "${#files[@]}" -ge 3 ] || fail "no $dir/libnostall.so.* (make tests builds it)"
for f in "${files[@]}"; do
	if [ ! -f "$f" ]; then
		fail "$f missing (make tests)"
		continue
	fi
	found=$(strings -a "$f" | grep -E 'NOSTALL_DEBUG|lock-order inversion' | sort -u | head -5)
	[ -z "$found" ] || fail "$f has test-hook strings: ${found//$'\n'/, }"
done

if [ ! -x "$hooks" ]; then
	fail "$hooks missing (make tests builds it)"
else
	strings -a "$hooks" | grep -q 'NOSTALL_DEBUG_SKIP_ORDERED' || fail "$hooks lacks NOSTALL_DEBUG_SKIP_ORDERED"
	strings -a "$hooks" | grep -q 'lock-order inversion' || fail "$hooks lacks the lock-order checker"
fi

[ "$fails" -eq 0 ] && echo "release_no_debug_hooks: ok"
exit $((fails > 0))
