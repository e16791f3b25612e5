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
             ("fsync-tester", p, "ordered", "random-writer"),
             ("overwrite", p, "ordered", "overwriter")}
want |= {("fsync-under-stream", "2.6.30", m, "stream") for m in ("guarded", "journal")}
want |= {("overwrite", "2.6.30", m, "overwriter") for m in ("writeback", "guarded")}
want |= {("atime", p, "ordered", "journal_ioprio=%s/4" % c) for c in ("BE", "RT") for p in ("2.6.29", "2.6.30")}
want |= {("max-sectors", "2.6.30", m, "max_sectors_kb=%d" % k) for k in (512, 64) for m in ("ordered", "writeback")}
want |= {("max-sectors", "2.6.30", m, "wbt_lat_usec=75000") for m in ("ordered", "writeback")}
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
    for p in ("2.6.29", "2.6.30"):
        for m in ("probe_p99_ms", "probe_max_ms"):
            r = val("atime", p, "ordered", "journal_ioprio=%s/4" % c, m)
            assert r["value"] > 0 and r["samples"] >= 4, r
# overwrite (issue 40): the tester's fsyncs and the overwriter's rate per era in data=ordered
for p in ("2.6.29", "2.6.30-rc1", "2.6.30"):
    for m in ("fsync_p50_ms", "fsync_max_ms"):
        r = val("overwrite", p, "ordered", "overwriter", m)
        assert r["value"] > 0 and r["samples"] >= 1 and r["unit"] == "ms", r
    r = val("overwrite", p, "ordered", "overwriter", "stream_mbps")
    assert r["value"] > 0 and r["unit"] == "MiB/s", r
g = [r for r in recs if r["mode"] == "guarded"]
assert g and all(r["metric"] != "skipped" or r["value"] is None for r in g), g
PY

# plots: gnuplot drew non-empty SVGs from the same data
for p in timeline-eras timeline-modes cdf-eras cdf-modes cdf-atime jens overwrite; do
	[ -s "$tmp/out/plots/$p.svg" ] || fail "plots/$p.svg missing or empty"
	grep -q "<svg" "$tmp/out/plots/$p.svg" || fail "plots/$p.svg is not an SVG"
done
grep -q "^2.6.30-rc1 " "$tmp/out/plots/jens.dat" || fail "jens.dat has no 2.6.30-rc1 row"
# the anchors beside our bars: Axboe's 16 s / 0.9 s for 2,000 scaled to --micro's 10 iterations,
# Ts'o's ranges beside overwrite's, Arjan's 6 s in the atime CDF, ordered's curve among the modes
awk '$1 == "2.6.30-rc1" && $4 == 0.08 {r=1} $1 == "2.6.30" && $4 == 0.0045 {p=1} END {exit !(r && p)}' \
	"$tmp/out/plots/jens.dat" || fail "jens.dat: Axboe's figures not scaled to 10 iterations"
grep -q "^0 2.6.29 .* 2430.0 6330.0$" "$tmp/out/plots/overwrite.dat" || fail "overwrite.dat: no Ts'o range for 2.6.29"
grep -q "set arrow 1 from 6000" "$tmp/out/plots/plots.gp" || fail "plots.gp: no Arjan anchor"
awk '/set output .cdf-modes.svg./ {m=1} m && /2.6.30 ordered/ {f=1} /set output .cdf-atime/ {m=0} END {exit !f}' \
	"$tmp/out/plots/plots.gp" || fail "cdf-modes has no data=ordered curve"
# the report: every claim row quotes its anchor; the era gain decomposed; censored verdicts
grep -q "^### The era gain decomposed: overwrite" "$tmp/out/report.md" || fail "report: no overwrite decomposition"
grep -q "^### The era gain decomposed: fsync-under-stream" "$tmp/out/report.md" || fail "report: no fus decomposition"
grep -q "LWN 327107" "$tmp/out/report.md" && grep -q "seed 010" "$tmp/out/report.md" ||
	fail "report: claim rows without their anchors"
grep -q "^The run took [0-9]* s" "$tmp/out/report.md" || fail "report: no run duration"
# the report: its checks and one table per workload, each run a row
grep -q "^## Done-when checks" "$tmp/out/report.md" || fail "report: no checks"
for t in "### jens" "### fsync-under-stream" "### fsync-tester" "### atime" "### overwrite" "### max-sectors"; do
	grep -q "^$t" "$tmp/out/report.md" || fail "report: no table '$t'"
done
[ "$(grep -c '^| nostall | sim:ssd,size=1G |' "$tmp/out/report.md")" = 32 ] || fail "report: want 32 run rows (30 + the two wbt_lat_usec rows)"
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
for w, seconds in (("fsync-under-stream", 0.4), ("fsync-tester", 0.5), ("overwrite", 0.5), ("max-sectors", 0.4)):
    for key in runs(w):
        m = get(w, key, "measured_s")["value"]
        n = get(w, key, "fsync_p50_ms")["samples"]
        assert m >= seconds, ("stopped before --seconds", w, key, m)
        assert n >= 3 or m >= 0.999, ("stopped with %d fsyncs before the cap" % n, w, key, m)
for mode in ("ordered", "writeback"):
    a = {r["metric"]: r["value"] for r in recs if r["workload"] == "max-sectors" and r["mode"] == mode and r["config"] == "max_sectors_kb=512"}
    b = {r["metric"]: r["value"] for r in recs if r["workload"] == "fsync-under-stream" and r["preset"] == "2.6.30" and r["mode"] == mode}
    assert a and a == b, ("max_sectors_kb=512 is not the fsync-under-stream 2.6.30 run", mode, a, b)
# every table row: p50 cells n/a below 5 samples, numbers from 5 on; p99 cells
# n/a below 100 (there the nearest-rank p99 is the max, in its own column)
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
            floor = 100 if h == "p99 ms" else 5
            if n < floor:
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
valid="jens,jens-stream,fsync-under-stream,fsync-tester,atime,overwrite,max-sectors"
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
