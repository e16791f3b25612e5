#!/usr/bin/env bash
# The exerciser itself (tests/fsx, docs/exerciser.md) on a host tmpfs
# directory: a seeded run passes; each self-test injection (a write, a
# truncate, an unlink the model does not see) is detected, minimized by delta
# debugging to a replay script of at most 10 ops (ddmin gives a 1-minimal log: no single op can go) that contains the wrong op,
# and replaying that script fails again while a script without it passes; a
# malformed script is a usage error. Run by tests/run.sh with $NOSTALL = the
# nostall binary (fsx sits beside it).
set -u
NOSTALL=${NOSTALL:-build/nostall}
FSX=$(dirname "$NOSTALL")/fsx
[ -x "$FSX" ] || { echo "FAIL: $FSX not built (make tests)"; exit 1; }
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

base=/dev/shm
[ -d "$base" ] && [ -w "$base" ] || base=${TMPDIR:-/tmp}
tmp=$(mktemp -d "$base/nostall-fsx.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
seed=${NOSTALL_FSX_SEED:-$(( $(date +%s) % 100000 ))}
echo "fsx_selftest: seed $seed in $tmp"

out=$("$FSX" -n 20000 -S "$seed" -c 50 "$tmp" 2>&1)
rc=$?
echo "$out" | tail -n 2
[ $rc -eq 0 ] || fail "clean run on tmpfs (seed $seed) exited $rc: $(echo "$out" | grep MISMATCH)"
echo "$out" | grep -q "seed $seed" || fail "the seed is not printed"

for how in 0 1 2; do
	script="$tmp/replay-$how.txt"
	out=$("$FSX" -n 20000 -S "$seed" -X 3000:$how -o "$script" "$tmp" 2>&1)
	rc=$?
	[ $rc -eq 1 ] || { fail "injection how=$how: exit $rc, want 1 (a mismatch): $out"; continue; }
	echo "$out" | grep -q 'MISMATCH at op' || fail "injection how=$how: no MISMATCH line"
	[ -f "$script" ] || { fail "injection how=$how: no replay script"; continue; }
	nops=$(grep -cv '^#' "$script")
	[ "$nops" -le 10 ] || fail "injection how=$how: replay script has $nops ops (want <= 10)"
	grep -q '^# minimized:' "$script" || fail "injection how=$how: script not marked minimized"
	grep -q "^badwrite .* how=$how\$" "$script" || fail "injection how=$how: the wrong op is not in the script"
	"$FSX" -r "$script" "$tmp" >"$tmp/replay.log" 2>&1
	rc=$?
	[ $rc -eq 1 ] || fail "injection how=$how: replay exited $rc, want 1: $(cat "$tmp/replay.log")"
	# The same script with the wrong op made right replays clean.
	sed 's/^badwrite \(.*\) how=[0-9]$/write \1 how=0/' "$script" >"$tmp/fixed.txt"
	"$FSX" -r "$tmp/fixed.txt" "$tmp" >"$tmp/replay.log" 2>&1
	rc=$?
	[ $rc -eq 0 ] || fail "injection how=$how: the corrected script exited $rc: $(cat "$tmp/replay.log")"
done

printf 'write p:nosuch 0 1 tag=1 how=0\n' >"$tmp/bad.txt"
"$FSX" -r "$tmp/bad.txt" "$tmp" >/dev/null 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a malformed script exited $rc, want 2"

[ "$fails" -eq 0 ] || exit 1
echo "fsx_selftest: ok"
