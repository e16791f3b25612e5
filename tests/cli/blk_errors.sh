#!/usr/bin/env bash
# Bad input to the block-layer bench: each case must print a clear message on
# stderr and exit non-zero, and a device that fails I/O must not hang it.
set -u
fail=0
check() { # expected-exit pattern-in-stderr command...
	local want=$1 pat=$2
	shift 2
	local err rc
	err=$(timeout 60 "$@" 2>&1 >/dev/null)
	rc=$?
	if [ "$rc" -eq 124 ]; then
		echo "FAIL (hang): $*"; fail=1; return
	fi
	if [ "$rc" -ne "$want" ]; then
		echo "FAIL (exit $rc, want $want): $*"; echo "  stderr: $err"; fail=1; return
	fi
	if ! printf '%s' "$err" | grep -q -- "$pat"; then
		echo "FAIL (message lacks '$pat'): $*"; echo "  stderr: $err"; fail=1; return
	fi
	echo "ok: $* -> exit $rc"
}
N=${NOSTALL:?set NOSTALL to the nostall binary}
check 1 "unknown model 'floppy'" "$N" bench blk --device sim:floppy --scenario sync-plug
check 1 "unknown kind" "$N" bench blk --device tape:0 --scenario sync-plug
check 1 "No such file\|ENOENT\|does not exist\|cannot open" "$N" bench blk --device file:/nonexistent/x.img --scenario sync-plug
check 2 "unknown tunable 'foo'" "$N" bench blk -o foo=1
check 2 "out of range" "$N" bench blk -o nr_requests=2
check 2 "out of range" "$N" bench blk -o max_sectors_kb=1
check 2 "scheduler" "$N" bench blk -o scheduler=anticipatory
check 2 "preset" "$N" bench blk -o preset=2.4.20
check 2 "unknown scenario" "$N" bench blk --scenario warp-speed
check 2 "seconds" "$N" bench blk --seconds -1
check 2 "unknown benchmark" "$N" bench tape
# A device that fails writes: the run reports the failed I/O and stops.
check 1 "failed" "$N" bench blk --device 'fault:sim:hdd,scale=0.1,op=write,after=20' --scenario sync-plug --seconds 0.5
check 1 "failed" "$N" bench blk --device 'fault:mem:1G,op=write,prob=0.5,seed=3' --scenario era --seconds 0.5
# And a good run on a fast device works and prints JSON with the fields.
out=$(timeout 120 "$N" bench blk --device sim:ssd,scale=0.2 --scenario sync-plug --seconds 0.4 --json 2>/dev/null)
rc=$?
lines=$(printf '%s\n' "$out" | grep -c '"scenario":"sync-plug"')
if [ "$rc" -ne 0 ] || [ "$lines" -ne 2 ] || ! printf '%s' "$out" | grep -q '"device_requests":'; then
	echo "FAIL: json run rc=$rc lines=$lines"; printf '%s\n' "$out"; fail=1
else
	echo "ok: json run"
fi
exit $fail
