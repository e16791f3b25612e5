#!/usr/bin/env bash
# nostall bench fs --quick --json: one object per workload and data mode, in
# bench blk's shape, every figure a positive number (p99_ms may be null: under
# 100 samples it is not reported; data=journal's stream adds its own floor);
# -o data= runs one mode; usage errors.
# The figures themselves are the benchmark's business, not a timed test's.
set -eu
: "${NOSTALL:?path to the nostall binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$NOSTALL" bench fs --quick --json >"$tmp/all.json" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
[ "$(wc -l <"$tmp/all.json")" = 16 ] || { cat "$tmp/all.json"; echo "FAIL: want 16 JSON lines (4 workloads x 4 modes)"; exit 1; }
grep -q "bench fs: jens (data=journal)" "$tmp/err" || { echo "FAIL: no progress on stderr"; exit 1; }
num='[0-9]+(\.[0-9]+)?'
pos='(0*[1-9][0-9]*(\.[0-9]+)?|0\.[0-9]*[1-9][0-9]*)' # a number above zero
dev='"device":"file:/tmp/nostall-benchfs\.[A-Za-z0-9]+"'
for mode in journal ordered writeback guarded; do
	# data=journal's stream also has its own floor (every byte twice, a
	# flush per transaction); the other modes have no such figure
	jfloor=""
	[ "$mode" = journal ] && jfloor=",\"raw_journal_write_mbps\":$pos,\"journal_write_pct\":$pos"
	want=(
		"\"scenario\":\"jens\",$dev,\"config\":\"$mode\",\"total_s\":$pos,\"floor_s\":$pos,\"x_floor\":$pos,\"x_floor_min\":$pos,\"x_floor_max\":$pos,\"ms_per_fsync\":$pos,\"fsyncs\":20,\"reps\":2}"
		"\"scenario\":\"stream\",$dev,\"config\":\"$mode\",\"write_mbps\":$pos,\"raw_write_mbps\":$pos,\"write_pct\":$pos,\"write_pct_min\":$pos,\"write_pct_max\":$pos,\"read_mbps\":$pos,\"raw_read_mbps\":$pos,\"read_pct\":$pos,\"read_pct_min\":$pos,\"read_pct_max\":$pos,\"rss_peak_mib\":$pos,\"rss_bound_mib\":$pos,\"reps\":2$jfloor}"
		"\"scenario\":\"creates\",$dev,\"config\":\"$mode\",\"creates_per_s\":$pos,\"stats_per_s\":$pos,\"unlinks_per_s\":$pos,\"files\":100,\"reps\":2}"
		"\"scenario\":\"fsync-under-stream\",$dev,\"config\":\"$mode\",\"floor_ms\":$pos,\"idle_p50_ms\":$pos,\"p50_ms\":$pos,\"p99_ms\":(null|$pos),\"max_ms\":$pos,\"samples\":$pos,\"stream_mbps\":$pos,\"fsync_per_s\":$pos}"
	)
	for re in "${want[@]}"; do
		grep -Eq "^\{$re\$" "$tmp/all.json" || { cat "$tmp/all.json"; echo "FAIL: no line matching $re"; exit 1; }
	done
done
# no line has a zero or negative figure, an unquoted word or a missing field
if grep -Eq ":(-|0(\.0*)?[,}])" "$tmp/all.json"; then cat "$tmp/all.json"; echo "FAIL: a figure is not positive"; exit 1; fi
[ "$(grep -c ':null' "$tmp/all.json" || true)" -le 4 ] || { echo "FAIL: null outside p99_ms"; exit 1; }
devfile=$(head -1 "$tmp/all.json" | sed 's/.*"device":"file:\([^"]*\)".*/\1/')
[ ! -e "$devfile" ] || { echo "FAIL: the device file $devfile was left behind"; exit 1; }

# -o data= runs that mode only; --workload picks; sim: works
"$NOSTALL" bench fs --quick --json -o data=writeback,cache=8M --workload jens,creates --device sim:ssd,size=256M \
	>"$tmp/one.json" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
[ "$(wc -l <"$tmp/one.json")" = 2 ] || { cat "$tmp/one.json"; echo "FAIL: want 2 JSON lines"; exit 1; }
[ "$(grep -c '"device":"sim:ssd,size=256M","config":"writeback"' "$tmp/one.json")" = 2 ] ||
	{ cat "$tmp/one.json"; echo "FAIL: device/config"; exit 1; }
# the table form names each workload
"$NOSTALL" bench fs --quick --workload jens -o data=ordered --device sim:ssd,size=256M >"$tmp/table" 2>/dev/null
grep -Eq "^  ordered +$num +$num" "$tmp/table" && grep -q "^jens on sim:ssd" "$tmp/table" ||
	{ cat "$tmp/table"; echo "FAIL: table"; exit 1; }

# usage errors exit 2
for args in "--workload nope" "-o data=bogus" "-o ro" "extra" "--reps 0" "--reps x"; do
	rc=0; "$NOSTALL" bench fs $args >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || { echo "FAIL: bench fs $args should exit 2 (got $rc)"; exit 1; }
done
rc=0; "$NOSTALL" bench fs --quick --device /nonexistent/x >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: a missing device should exit 1 (got $rc)"; exit 1; }
echo ok
