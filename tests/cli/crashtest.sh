#!/usr/bin/env bash
# nostall-test: release-only (2 min under ASan; the library's crash recovery runs under ASan in test_jbd_crash, test_fs_crash and test_fs_guarded_crash, the crashtest tool's own code is checked in release only; kept under the 30-minute CI budget)
# nostall crashtest (docs/crashtest.md), CI-sized:
#  1. data=guarded (the default data mode, first), data=journal and
#     data=ordered at 1 KiB and 4 KiB blocks, every workload, reordered and
#     torn states:
#     exit 0, the JSON summary (last line) says 0 violations, states checked,
#     some by the e2fsck oracle; every flush epoch's end has a state
#     (epoch_states) beside the random subsets (random_states);
#  2. data=writeback on rename-replace at 1 KiB and 4 KiB blocks: stale
#     data found (the article's point), and exit 0 because only the kinds
#     writeback allows occur;
#  3. the broken build (NOSTALL_DEBUG_SKIP_ORDERED=1 skips the ordered data
#     flush) is caught in data=ordered: stale_data, exit 1; a kept state
#     replays (replay.sh) to the same verdict, its regression line is written;
#  4. the regression corpus tests/crash-regress replays (every case passes;
#     run by the test-hooks CLI, its broken-ordered cases need the switch);
#  5. usage errors exit 2;
#  6. -o journal_async_commit on the recording mount: data=journal and
#     data=writeback show nothing their mode does not allow, the output
#     names the option, a kept state and a corpus case replay with it; with
#     data=ordered it is refused before any job runs (exit 2, one line
#     naming the mode and the option).
# Seeds are fixed (the workloads are a function of the seed).
set -u
: "${NOSTALL:?path to the nostall binary}"
cd "$(dirname "$0")/../.."
for t in e2fsck mke2fs; do
	command -v "$t" >/dev/null || { echo "SKIP: e2fsprogs ($t) not installed" >&2; exit 77; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

# The value of a key of the last JSON line of a file (python3: a real parse).
jget() { # file expr
	python3 -c 'import json,sys
o = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
print(eval(sys.argv[2], {"o": o}))' "$1" "$2"
}

# 1. guarded + journal + ordered, both block sizes
"$NOSTALL" crashtest --mode guarded,journal,ordered --block-size 1024,4096 \
	--workload append,overwrite,create,rename-replace,truncate-write,dirs,links,htree,random \
	--states 640 --seed 11 --json --quiet --keep "$tmp/keep1" >"$tmp/ci.out" 2>"$tmp/ci.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "guarded/journal/ordered run exit $rc"; tail -30 "$tmp/ci.out" "$tmp/ci.err" >&2; }
[ "$(jget "$tmp/ci.out" 'o["violations"]')" = 0 ] || bad "guarded/journal/ordered violations (kept under --keep)"
[ "$(jget "$tmp/ci.out" 'o["mode"]')" = guarded,journal,ordered ] || bad "summary mode"
[ "$(jget "$tmp/ci.out" 'o["states"] >= 1800')" = True ] || bad "too few states: $(jget "$tmp/ci.out" 'o["states"]')"
[ "$(jget "$tmp/ci.out" 'o["e2fsck_states"] > 75')" = True ] || bad "e2fsck oracle rarely run"
[ "$(jget "$tmp/ci.out" 'sorted(o["by_kind"])')" = \
	"['fsck', 'lost_fsync', 'recovery_mismatch', 'rename', 'stale_data', 'too_long']" ] || bad "by_kind keys"
# every epoch end has its state, beyond the budget; the random (reordered,
# torn) subsets get at least half of each job's 35 states
[ "$(jget "$tmp/ci.out" 'o["epoch_states"] > 0 and o["random_states"] >= 3 * 18 * 10 and o["epoch_states"] + o["prefix_states"] + o["random_states"] == o["states"]')" = True ] ||
	bad "epoch/random states: $(jget "$tmp/ci.out" '[o[k] for k in ("epoch_states", "prefix_states", "random_states")]')"
grep -q '^data=guarded: ' "$tmp/ci.out" && grep -q '^data=ordered: ' "$tmp/ci.out" &&
	grep -q '^data=journal: ' "$tmp/ci.out" || bad "no table per mode"
[ "$(grep -c '^{' "$tmp/ci.out")" = 4 ] || bad "want one JSON line per mode and a summary"
[ "$(grep '^{' "$tmp/ci.out" | head -1 | cut -c1-18)" = '{"mode":"guarded",' ] || bad "guarded is not first"

# 2. writeback: stale data shown, exit 0 (allowed kinds only)
"$NOSTALL" crashtest --mode writeback --workload rename-replace --block-size 1024,4096 --states 300 \
	--seed 1 --json --quiet >"$tmp/wb.out" 2>/dev/null
rc=$?
[ "$rc" -eq 0 ] || bad "writeback rename-replace exit $rc (only allowed kinds expected)"
[ "$(jget "$tmp/wb.out" 'o["by_kind"]["stale_data"] > 0')" = True ] || bad "writeback: no stale data found"
[ "$(jget "$tmp/wb.out" 'o["mode"]')" = writeback ] || bad "writeback summary mode"

# 3. the broken build is caught
NOSTALL_HOOKS=${NOSTALL_HOOKS:-build/nostall-testhooks} # the switch is in test builds only (issue 35)
NOSTALL_DEBUG_SKIP_ORDERED=1 "$NOSTALL_HOOKS" crashtest --mode ordered --workload append --block-size 4096 \
	--states 120 --seed 5 --json --quiet --keep "$tmp/keep3" >"$tmp/broken.out" 2>/dev/null
rc=$?
[ "$rc" -eq 1 ] || bad "broken ordered build: exit $rc, want 1"
[ "$(jget "$tmp/broken.out" 'o["by_kind"]["stale_data"] > 0')" = True ] || bad "broken build: stale data not caught"
state=$(ls -d "$tmp"/keep3/ordered-4096-append-s5-* 2>/dev/null | head -1)
if [ -n "$state" ] && [ -f "$state/replay.sh" ]; then
	NOSTALL_DEBUG_SKIP_ORDERED=1 NOSTALL="$NOSTALL_HOOKS" sh "$state/replay.sh" >"$tmp/replay.out" 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || bad "replay.sh exit $rc, want 1"
	grep -q 'e2fsck checked' "$tmp/replay.out" || bad "replay did not run the e2fsck oracle"
	grep -Eq '^  (stale_data|lost_fsync|too_long): ' "$tmp/replay.out" || bad "replay lost the verdict"
	grep -q 'workload=append seed=5 block-size=4096' "$tmp/keep3/corpus.txt" || bad "no regression line"
else
	bad "no kept state under $tmp/keep3"
fi

# 4. the regression corpus (with the test hooks: broken-ordered.case sets
#    env=NOSTALL_DEBUG_SKIP_ORDERED=1, a switch the release build lacks)
"$NOSTALL_HOOKS" crashtest --corpus tests/crash-regress >"$tmp/corpus.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || { bad "regression corpus exit $rc"; cat "$tmp/corpus.out" >&2; }
grep -q 'regression cases passed' "$tmp/corpus.out" || bad "corpus summary missing"

# 5. usage
for args in "--mode nosuch" "--workload nosuch" "--block-size 512" "--states 0" "extra" "-o data=journal" \
	"--options a,,b" "-o journal_async_commit --replay $tmp"; do
	# shellcheck disable=SC2086
	"$NOSTALL" crashtest $args >/dev/null 2>&1
	rc=$?
	[ "$rc" -eq 2 ] || bad "crashtest $args: exit $rc, want 2"
done

# 6. -o: extra mount options of the recording (journal_async_commit: the
#    commit block beside the log blocks, one flush after them)
"$NOSTALL" crashtest --mode writeback,journal -o journal_async_commit --states 600 --seed 5 --json --quiet \
	--keep "$tmp/keep6" >"$tmp/async.out" 2>"$tmp/async.err"
rc=$?
[ "$rc" -eq 0 ] || { bad "async commit run exit $rc"; tail -30 "$tmp/async.out" "$tmp/async.err" >&2; }
[ "$(jget "$tmp/async.out" 'o["mode"], o["options"]')" = "('writeback,journal', 'journal_async_commit')" ] ||
	bad "async summary: mode/options"
[ "$(jget "$tmp/async.out" 'o["states"] >= 1200 and o["errors"] == 0')" = True ] || bad "async: too few states or errors"
# writeback may show stale_data and too_long (documented); nothing else, in either mode
[ "$(jget "$tmp/async.out" '[o["by_kind"][k] for k in ("lost_fsync", "rename", "fsck", "recovery_mismatch")]')" = \
	"[0, 0, 0, 0]" ] || bad "async commit: violations: $(jget "$tmp/async.out" 'o["by_kind"]')"
grep '^{"mode":"journal",' "$tmp/async.out" >"$tmp/async-journal.json"
[ "$(jget "$tmp/async-journal.json" 'o["violations"], o["options"]')" = "(0, 'journal_async_commit')" ] ||
	bad "async commit: data=journal violating states"
grep -q '^data=journal,journal_async_commit: ' "$tmp/async.out" &&
	grep -q '^data=writeback,journal_async_commit: ' "$tmp/async.out" || bad "async: table headers do not name the option"
state=$(ls -d "$tmp"/keep6/writeback,journal_async_commit-*-s5-* 2>/dev/null | head -1)
if [ -n "$state" ]; then
	grep -q ' options=journal_async_commit$' "$state/job.txt" || bad "kept state without its options"
	NOSTALL="$NOSTALL" sh "$state/replay.sh" >"$tmp/replay6.out" 2>&1
	rc=$?
	[ "$rc" -eq 1 ] || bad "async replay.sh exit $rc, want 1 (the kept verdict)"
	grep -q 'data=writeback,journal_async_commit, ' "$tmp/replay6.out" || bad "async replay: options not named"
	grep -q 'mode=writeback options=journal_async_commit workload=' "$tmp/keep6/corpus.txt" ||
		bad "async regression line without options="
	# a kept state from before -o (job.txt without options=) still replays
	cp -r "$state" "$tmp/old-state"
	sed -i 's/ options=.*//' "$tmp/old-state/job.txt"
	"$NOSTALL" crashtest --replay "$tmp/old-state" >"$tmp/replay6old.out" 2>&1
	rc=$?
	[ "$rc" -le 1 ] && grep -q 'data=writeback, ' "$tmp/replay6old.out" || bad "old job.txt: replay exit $rc"
else
	bad "no kept async state under $tmp/keep6"
fi
mkdir -p "$tmp/corpus6"
echo "mode=journal options=journal_async_commit workload=append seed=5 block-size=1024 states=40 expect=clean" \
	>"$tmp/corpus6/async.case"
"$NOSTALL" crashtest --corpus "$tmp/corpus6" >"$tmp/corpus6.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] && grep -q '^PASS async.case:1: data=journal,journal_async_commit ' "$tmp/corpus6.out" ||
	{ bad "corpus case with options= exit $rc"; cat "$tmp/corpus6.out" >&2; }
for m in ordered guarded; do
	"$NOSTALL" crashtest --mode "journal,$m" -o journal_async_commit --states 60 --seed 5 \
		>"$tmp/refused.out" 2>"$tmp/refused.err"
	rc=$?
	[ "$rc" -eq 2 ] || bad "-o journal_async_commit with $m: exit $rc, want 2"
	[ "$(wc -l <"$tmp/refused.err")" -eq 1 ] && grep -q "journal_async_commit with --mode $m: .*data=$m" \
		"$tmp/refused.err" || { bad "-o journal_async_commit with $m: want one line naming both"; cat "$tmp/refused.err" >&2; }
	[ ! -s "$tmp/refused.out" ] || bad "-o journal_async_commit with $m: jobs ran before the refusal"
done

[ "$fail" -eq 0 ] && echo "crashtest: ok"
exit "$fail"
