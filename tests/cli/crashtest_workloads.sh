#!/usr/bin/env bash
# nostall-test: release-only (the crashtest tool's own code is checked in release; the recovery it drives runs under ASan in test_jbd_crash and test_fs_crash)
# nostall crashtest's own-job workloads (docs/crashtest-workloads.md), CI-sized:
#  1. recovery and eio-loop in data=guarded, journal and ordered at 1 KiB
#     and 4 KiB blocks (100 eio rounds per mode): exit 0, 0 violations, the
#     JSON has their kinds, interrupted recoveries with orphans were checked,
#     the e2fsck oracle ran;
#     concurrent (three threads) in the same modes: 0 violations;
#     fsx and fsstress (long histories on an aged image) in the same modes at
#     both block sizes, a few thousand operations each: no tool error, no
#     violation beyond the KNOWN findings below, epoch ends as states;
#  2. eio-loop in data=writeback: exit 0 (only the kinds writeback allows);
#  3. the broken recovery (test-hooks build, NOSTALL_DEBUG_RECOVERY_RESET_EARLY=1
#     marks the journal empty before replaying it) is caught:
#     recovery_interrupted, exit 1; the same build without the variable is
#     clean; the release build has no such hook (the variable changes
#     nothing, its name is in neither the binary nor the library).
# Seeds are fixed.
set -u
: "${NOSTALL:?path to the nostall binary}"
HOOKS=${NOSTALL_HOOKS:-${NOSTALL%/*}/nostall-testhooks}
cd "$(dirname "$0")/../.."
for t in e2fsck mke2fs; do
	command -v "$t" >/dev/null || { echo "SKIP: e2fsprogs ($t) not installed" >&2; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

jget() { # file expr: a key of the file's last JSON line
	python3 -c 'import json,sys
o = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(eval(sys.argv[2], {"o": o}))' "$1" "$2"
}

# 1. guarded, journal, ordered at both block sizes: budget 200 per job,
#    i.e. 200 interrupted recoveries, and 50 eio rounds, per job
"$NOSTALL" crashtest --mode guarded,journal,ordered --block-size 1024,4096 --workload recovery,eio-loop \
	--states 800 --seed 7 --json --quiet >"$tmp/ci.out" 2>"$tmp/ci.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "run exit $rc"; tail -30 "$tmp/ci.out" "$tmp/ci.err" >&2; }
[ "$(jget "$tmp/ci.out" 'o["violations"]')" = 0 ] || bad "violations: $(jget "$tmp/ci.out" 'o["by_kind"]')"
[ "$(jget "$tmp/ci.out" 'o["errors"]')" = 0 ] || bad "errors"
[ "$(jget "$tmp/ci.out" 'o["workload"]')" = recovery,eio-loop ] || bad "summary workload"
[ "$(jget "$tmp/ci.out" 'sorted(o["by_kind"])')" = \
	"['eio_erofs', 'fsck', 'lost_fsync', 'recovery_e2fsck', 'recovery_idempotent', 'recovery_interrupted', 'recovery_mismatch', 'rename', 'stale_data', 'too_long']" ] ||
	bad "by_kind keys: $(jget "$tmp/ci.out" 'sorted(o["by_kind"])')"
[ "$(jget "$tmp/ci.out" 'o["states"] >= 1500')" = True ] || bad "too few states: $(jget "$tmp/ci.out" 'o["states"]')"
[ "$(jget "$tmp/ci.out" 'o["orphan_states"] > 20')" = True ] || bad "few states with orphans"
[ "$(jget "$tmp/ci.out" 'o["e2fsck_states"] > 300')" = True ] || bad "e2fsck oracle rarely run"
for m in guarded journal ordered; do
	grep -Eq "^eio-loop +4096 +5[0-9] " <(sed -n "/^data=$m:/,/^total/p" "$tmp/ci.out") || bad "data=$m: not 50 eio rounds at 4 KiB"
done
# concurrent: three threads recorded together, every thread's fsyncs checked
"$NOSTALL" crashtest --mode guarded,journal,ordered --block-size 1024,4096 --workload concurrent \
	--states 600 --seed 7 --json --quiet >"$tmp/cc.out" 2>"$tmp/cc.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "concurrent exit $rc"; tail -20 "$tmp/cc.out" "$tmp/cc.err" >&2; }
[ "$(jget "$tmp/cc.out" 'o["violations"]')" = 0 ] || bad "concurrent violations: $(jget "$tmp/cc.out" 'o["by_kind"]')"
[ "$(jget "$tmp/cc.out" 'o["states"] >= 1200')" = True ] || bad "concurrent: too few states"
[ "$(jget "$tmp/cc.out" 'len(o["by_kind"])')" = 6 ] || bad "concurrent shows other kinds"
# fsx and fsstress: budget 80 a job (5120 steps each on the aged image).
# KNOWN: the violations docs/crashtest-workloads.md "Found" reports (open
# filesystem or model findings of issue 35); they are printed, not failed,
# and must go from this list once fixed. Every other kind, and any tool
# error, fails.
KNOWN=""
"$NOSTALL" crashtest --mode guarded,journal,ordered --block-size 1024,4096 --workload fsx,fsstress \
	--states 320 --seed 7 --json --quiet >"$tmp/hist.out" 2>"$tmp/hist.err"
rc=$?
[ "$rc" -le 1 ] || { bad "fsx,fsstress exit $rc"; tail -20 "$tmp/hist.out" "$tmp/hist.err" >&2; }
python3 - "$tmp/hist.out" "$KNOWN" <<'PY' || bad "fsx,fsstress: $(tail -1 "$tmp/hist.out")"
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
known = set(sys.argv[2].split())
ok = len(lines) == 4 and all(o["workload"] == "fsx,fsstress" for o in lines)
for o in lines[:-1]:
    ok = ok and o["errors"] == 0 and o["ops"] >= 4 * 2000 and o["epoch_states"] >= 200
    for k, n in o["by_kind"].items():
        if n and o["mode"] + ":" + k in known:
            print("KNOWN: data=%s %s in %d states (docs/crashtest-workloads.md)" % (o["mode"], k, n), file=sys.stderr)
        elif n:
            print("data=%s: %s in %d states" % (o["mode"], k, n), file=sys.stderr)
            ok = False
sys.exit(0 if ok else 1)
PY
# an old workload's report keeps its six kinds
"$NOSTALL" crashtest --mode ordered --block-size 1024 --workload append --states 20 --seed 1 --json --quiet \
	--fsck-every 0 >"$tmp/old.out" 2>/dev/null || bad "append run failed"
[ "$(jget "$tmp/old.out" 'len(o["by_kind"])')" = 6 ] || bad "an append run shows other kinds"

# 2. writeback: stale data after a failed write is what it allows
"$NOSTALL" crashtest --mode writeback --block-size 4096 --workload eio-loop --states 200 --seed 7 --json --quiet \
	>"$tmp/wb.out" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] || bad "writeback eio-loop exit $rc: $(jget "$tmp/wb.out" 'o["by_kind"]')"

# 3. the broken recovery
if [ -x "$HOOKS" ]; then
	NOSTALL_DEBUG_RECOVERY_RESET_EARLY=1 "$HOOKS" crashtest --mode ordered --block-size 1024 --workload recovery \
		--states 200 --seed 7 --json --quiet >"$tmp/broken.out" 2>/dev/null
	rc=$?
	[ "$rc" -eq 1 ] || bad "broken recovery: exit $rc, want 1"
	[ "$(jget "$tmp/broken.out" 'o["by_kind"]["recovery_interrupted"] > 0')" = True ] ||
		bad "broken recovery not caught: $(jget "$tmp/broken.out" 'o["by_kind"]')"
	"$HOOKS" crashtest --mode ordered --block-size 1024 --workload recovery --states 200 --seed 7 --json --quiet \
		>"$tmp/hooks.out" 2>/dev/null || bad "test-hooks build without the variable: not clean"
else
	bad "no test-hooks build at $HOOKS (make tests builds it)"
fi
NOSTALL_DEBUG_RECOVERY_RESET_EARLY=1 "$NOSTALL" crashtest --mode ordered --block-size 1024 --workload recovery \
	--states 100 --seed 7 --json --quiet >"$tmp/rel.out" 2>/dev/null || bad "release build: the variable changed something"
for f in "$NOSTALL" "${NOSTALL%/*}/libnostall.a"; do
	[ -f "$f" ] || continue
	! strings "$f" | grep -q RECOVERY_RESET_EARLY || bad "$f carries the test hook"
done

exit $fail
