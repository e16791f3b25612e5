#!/usr/bin/env bash
# nostall bench repro --micro: the shape of a run, not its figures (a timed
# test would assert the machine, not the code). One tiny run on sim:ssd:
# results.json validates against docs/bench-repro.schema.json (stdlib
# validator, tools/bench/json_validate.py), has a record for every run of
# the matrix (guarded's "skipped" until it is built), the plots are
# non-empty SVGs, the report has its tables and checks; percentiles of too
# few samples are n/a and the sample-floor runs go past --seconds; `nostall
# load` on a host directory speaks the protocol and honours --min-samples /
# --max-seconds; usage errors (an unknown workload among them) exit 2.
# nostall-test: release-only
set -eu
: "${NOSTALL:?path to the nostall binary}"
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$NOSTALL" bench repro --micro --device sim:ssd,size=1G --out "$tmp/out" --json >"$tmp/stdout.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "bench repro --micro exited $?"; }
grep -q "bench repro: \[1/" "$tmp/err" || fail "no progress line on stderr"
for f in report.md results.json; do [ -s "$tmp/out/$f" ] || fail "$f missing or empty"; done
python3 "$here/tools/bench/json_validate.py" "$here/docs/bench-repro.schema.json" "$tmp/out/results.json" ||
	fail "results.json does not validate"
cmp -s "$tmp/stdout.json" "$tmp/out/results.json" || fail "--json output differs from results.json"
# the validator itself rejects a broken record (a test that cannot fail is a defect)
python3 - "$tmp/out/results.json" "$tmp/bad.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))
recs[0]["samples"] = -1
del recs[1]["unit"]
json.dump(recs, open(sys.argv[2], "w"))
PY
if python3 "$here/tools/bench/json_validate.py" "$here/docs/bench-repro.schema.json" "$tmp/bad.json" 2>/dev/null; then
	fail "the validator accepted a negative samples and a missing unit"
fi

# every run of the matrix has records: workload/preset/mode/config
python3 - "$tmp/out/results.json" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))
have = {(r["workload"], r["preset"], r["mode"], r["config"]) for r in recs}
want = set()
# fsync-under-stream: the era's default data mode is config era-default
era_mode = {"2.6.29": "ordered", "2.6.30-rc1": "writeback", "2.6.30": "writeback"}
def fus_cfg(p, m):
    return "era-default" if era_mode[p] == m else "stream"
for p in ("2.6.29", "2.6.30-rc1", "2.6.30"):
    want |= {("jens", p, "ordered", "idle"), ("jens", p, "ordered", "stream"),
             ("fsync-under-stream", p, "ordered", fus_cfg(p, "ordered")),
             ("fsync-under-stream", p, "writeback", fus_cfg(p, "writeback")),
             ("fsync-tester", p, "ordered", "random-writer")}
want |= {("fsync-under-stream", "2.6.30", m, "stream") for m in ("guarded", "journal")}
want |= {("atime", "2.6.30", "ordered", "journal_ioprio=%s/4" % c) for c in ("BE", "RT")}
want |= {("max-sectors", "2.6.30", m, "max_sectors_kb=%d" % k) for k in (512, 64) for m in ("ordered", "writeback")}
missing = want - have
assert not missing, "missing runs: %s" % sorted(missing)
assert have == want, "unexpected runs: %s" % sorted(have - want)
def val(w, p, m, c, metric):
    v = [r for r in recs if (r["workload"], r["preset"], r["mode"], r["config"], r["metric"]) == (w, p, m, c, metric)]
    assert len(v) == 1, (w, p, m, c, metric, v)
    return v[0]
# the figures the done-when checks use are there, positive, with their sample counts
for p in ("2.6.29", "2.6.30-rc1", "2.6.30"):
    r = val("jens", p, "ordered", "idle", "total_s")
    assert r["value"] > 0 and r["unit"] == "s" and r["samples"] == 10, r
    r = val("fsync-under-stream", p, "ordered", fus_cfg(p, "ordered"), "fsync_p99_ms")
    assert r["value"] > 0 and r["samples"] >= 1, r
    assert val("fsync-under-stream", p, "ordered", fus_cfg(p, "ordered"), "stream_mbps")["value"] > 0
    assert val("fsync-under-stream", p, era_mode[p], "era-default", "fsync_p99_ms")["value"] > 0
for c in ("BE", "RT"):
    r = val("atime", "2.6.30", "ordered", "journal_ioprio=%s/4" % c, "probe_p99_ms")
    assert r["value"] > 0 and r["samples"] >= 4, r
g = [r for r in recs if r["mode"] == "guarded"]
assert g and all(r["metric"] != "skipped" or r["value"] is None for r in g), g
PY

# plots: gnuplot drew non-empty SVGs from the same data
for p in timeline-eras timeline-modes cdf-eras cdf-modes cdf-atime jens; do
	[ -s "$tmp/out/plots/$p.svg" ] || fail "plots/$p.svg missing or empty"
	grep -q "<svg" "$tmp/out/plots/$p.svg" || fail "plots/$p.svg is not an SVG"
done
grep -q "^2.6.30-rc1 " "$tmp/out/plots/jens.dat" || fail "jens.dat has no 2.6.30-rc1 row"
# the report: its checks and one table per workload, each run a row
grep -q "^## Done-when checks" "$tmp/out/report.md" || fail "report: no checks"
for t in "### jens" "### fsync-under-stream" "### fsync-tester" "### atime" "### max-sectors"; do
	grep -q "^$t" "$tmp/out/report.md" || fail "report: no table '$t'"
done
[ "$(grep -c '^| nostall | sim:ssd,size=1G |' "$tmp/out/report.md")" = 23 ] || fail "report: want 23 run rows"
grep -q "skipped: not built" "$tmp/out/report.md" || grep -Eq "\| guarded \| stream \| (n/a|[0-9])" "$tmp/out/report.md" ||
	fail "report: guarded neither measured nor skipped with a reason"

# fewest samples: --micro's fsync-under-stream and fsync-tester runs measure
# past --seconds (0.4/0.5 s) until 3 fsyncs or the 1 s cap; the report says
# n/a for a percentile of fewer than 5 samples (RP_MIN_SAMPLES) and keeps
# the max; max_sectors_kb=512 reports the fsync-under-stream 2.6.30 run.
python3 - "$tmp/out/results.json" "$tmp/out/report.md" <<'PY'
import json, sys
recs = json.load(open(sys.argv[1]))
def runs(w):
    return {(r["preset"], r["mode"], r["config"]) for r in recs if r["workload"] == w}
def get(w, key, metric):
    v = [r for r in recs if r["workload"] == w and (r["preset"], r["mode"], r["config"]) == key and r["metric"] == metric]
    assert len(v) == 1, (w, key, metric, v)
    return v[0]
for w, seconds in (("fsync-under-stream", 0.4), ("fsync-tester", 0.5), ("max-sectors", 0.4)):
    for key in runs(w):
        m = get(w, key, "measured_s")["value"]
        n = get(w, key, "fsync_p50_ms")["samples"]
        assert m >= seconds, ("stopped before --seconds", w, key, m)
        assert n >= 3 or m >= 0.999, ("stopped with %d fsyncs before the cap" % n, w, key, m)
for mode in ("ordered", "writeback"):
    a = {r["metric"]: r["value"] for r in recs if r["workload"] == "max-sectors" and r["mode"] == mode and r["config"] == "max_sectors_kb=512"}
    b = {r["metric"]: r["value"] for r in recs if r["workload"] == "fsync-under-stream" and r["preset"] == "2.6.30" and r["mode"] == mode}
    assert a and a == b, ("max_sectors_kb=512 is not the fsync-under-stream 2.6.30 run", mode, a, b)
# every table row: p50 and p99 cells n/a below 5 samples, numbers from 5 on
rows = 0
head = None
for line in open(sys.argv[2]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if line.startswith("| system |"):
        head = cells
        continue
    if not line.startswith("| nostall |") or head is None or "samples" not in head:
        continue
    n = int(cells[head.index("samples")])
    for i, h in enumerate(head):
        if h.endswith("p50 ms") or h == "p99 ms":  # the series the samples column counts
            rows += 1
            if n < 5:
                assert cells[i] == "n/a", ("a percentile of %d samples" % n, line)
            elif "skipped" not in line:
                assert cells[i] != "n/a", ("a percentile of %d samples is n/a" % n, line)
assert rows > 0, "no percentile cells found"
PY

# nostall load: the peers' binary on a host directory
mkdir "$tmp/dir"
"$NOSTALL" load "$tmp/dir" jens --jens-n 5 >"$tmp/load.out" || fail "nostall load jens exited $?"
[ "$(grep -c '^S fsync ' "$tmp/load.out")" = 5 ] || { cat "$tmp/load.out"; fail "load: want 5 samples"; }
grep -Eq '^M total_s [0-9.e+-]+ s$' "$tmp/load.out" || fail "load: no total_s"
[ "$(wc -l <"$tmp/dir/jens.txt")" = 5 ] || fail "load: jens.txt should have 5 lines"

# nostall load's sample floor: --seconds 0.1 holds 2-3 fsyncs of a 50 ms
# period; --min-samples 8 makes it go on to 8 (the cap is far), and a
# floor it cannot reach within --max-seconds ends at the cap
"$NOSTALL" load "$tmp/dir" fsync-under-stream --seconds 0.1 --warmup 0 --min-samples 8 --max-seconds 60 \
	--stream-bytes 4194304 >"$tmp/fus.out" || fail "load fsync-under-stream exited $?"
n=$(grep -c '^S fsync ' "$tmp/fus.out")
[ "$n" -ge 8 ] || { cat "$tmp/fus.out"; fail "load: --min-samples 8 gave $n fsyncs"; }
"$NOSTALL" load "$tmp/dir" fsync-under-stream --seconds 0.1 --warmup 0 --min-samples 100000 --max-seconds 0.5 \
	--stream-bytes 4194304 >"$tmp/fus.out" || fail "load fsync-under-stream (capped) exited $?"
python3 - "$tmp/fus.out" <<'PY' || fail "load: the --max-seconds cap"
import sys
lines = open(sys.argv[1]).read().split("\n")
m = [float(l.split()[2]) for l in lines if l.startswith("M measured_s ")]
n = sum(l.startswith("S fsync ") for l in lines)
assert len(m) == 1 and m[0] >= 0.5 and 0 < n < 100000, (m, n)
PY

# usage errors exit 2
for args in "--workload nope" "extra" "--bogus"; do
	rc=0; "$NOSTALL" bench repro $args >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "bench repro $args should exit 2 (got $rc)"
done
# every name --workload does not run is an error naming it and the valid
# ones: bench fs --mount's phases (stream-write ran nothing before), typos,
# an empty name; before any run starts (no output directory)
valid="jens,jens-stream,fsync-under-stream,fsync-tester,atime,max-sectors"
for w in stream-write stream-read creates stats unlinks nope "jens,stream-write" "atime,,jens" "jens,"; do
	rc=0; "$NOSTALL" bench repro --micro --out "$tmp/none" --workload "$w" >/dev/null 2>"$tmp/werr" || rc=$?
	[ "$rc" = 2 ] || fail "--workload '$w' should exit 2 (got $rc)"
	[ ! -e "$tmp/none" ] || fail "--workload '$w' ran something"
	case $w in
	*,,* | *,) grep -q "empty workload name" "$tmp/werr" || fail "--workload '$w': $(head -1 "$tmp/werr")" ;;
	*) bad=${w#jens,}; grep -q "unknown workload '$bad'" "$tmp/werr" || fail "--workload '$w': $(head -1 "$tmp/werr")" ;;
	esac
	grep -q "valid workloads: $valid" "$tmp/werr" || fail "--workload '$w' does not list the valid workloads"
done
grep -q "bench fs --mount" <("$NOSTALL" bench repro --workload stream-write 2>&1) ||
	fail "--workload stream-write does not say it is a bench fs --mount phase"
for args in "" "$tmp/dir" "$tmp/dir nope" "$tmp/dir jens --jens-n x"; do
	rc=0; "$NOSTALL" load $args >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "load $args should exit 2 (got $rc)"
done
rc=0; "$NOSTALL" bench repro --micro --device sim:floppy --out "$tmp/x" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || fail "a bad device should exit 1 (got $rc)"
echo ok
