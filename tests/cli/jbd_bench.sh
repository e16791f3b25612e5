#!/usr/bin/env bash
# nostall bench jbd: JSON shape (one object per preset), option errors, and
# the 2.6.30 claim on sim:hdd: the sync-commit p99 beside the same 1 MiB
# async flood is at most 1/5 of 2.6.29's. Also nostall recover's usage and
# error paths.
set -eu
: "${NOSTALL:?path to the nostall binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$NOSTALL" bench jbd --device sim:ssd --seconds 0.3 --json >"$tmp/ssd.json" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
[ "$(wc -l <"$tmp/ssd.json")" = 3 ] || { cat "$tmp/ssd.json"; echo "FAIL: want 3 JSON lines"; exit 1; }
for cfg in 2.6.29 2.6.30-rc1 2.6.30; do
	grep -q "\"scenario\":\"sync-commit\",\"device\":\"sim:ssd\",\"config\":\"$cfg\",\"p50_ms\":[0-9.]*,\"p99_ms\":[0-9.]*,\"max_ms\":[0-9.]*,\"async_mbps\":[0-9.]*" "$tmp/ssd.json" ||
		{ cat "$tmp/ssd.json"; echo "FAIL: no line for $cfg"; exit 1; }
done
grep -q "bench jbd: sync-commit run" "$tmp/err" || { echo "FAIL: no progress line"; exit 1; }

# option errors are usage errors
rc=0; "$NOSTALL" bench jbd -o commit=x >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: bad -o should exit 2 (got $rc)"; exit 1; }
rc=0; "$NOSTALL" bench jbd -o journal_ioprio=XX/9 >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: bad journal_ioprio should exit 2 (got $rc)"; exit 1; }

# recover: usage and errors
rc=0; "$NOSTALL" recover >/dev/null 2>&1 || rc=$?
[ "$rc" = 2 ] || { echo "FAIL: recover without IMAGE should exit 2"; exit 1; }
rc=0; "$NOSTALL" recover "$tmp/missing.img" >/dev/null 2>&1 || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: recover of a missing image should exit 1"; exit 1; }
rc=0; "$NOSTALL" recover mem:16M >"$tmp/o" 2>&1 || rc=$?
[ "$rc" = 1 ] && grep -q "not an ext2/ext3" "$tmp/o" || { cat "$tmp/o"; echo "FAIL: recover of an empty device"; exit 1; }
if command -v mke2fs >/dev/null; then
	mke2fs -q -F -t ext3 "$tmp/clean.img" 8M >/dev/null
	"$NOSTALL" recover "$tmp/clean.img" | grep -q "journal is clean" || { echo "FAIL: clean image"; exit 1; }
fi

# The era claim on the default device.
"$NOSTALL" bench jbd --seconds 3 --json >"$tmp/hdd.json" 2>/dev/null
cat "$tmp/hdd.json"
p99() { sed -n "s/.*\"config\":\"$1\".*\"p99_ms\":\([0-9.]*\).*/\1/p" "$tmp/hdd.json"; }
old=$(p99 2.6.29); new=$(p99 2.6.30)
awk -v o="$old" -v n="$new" 'BEGIN { exit !(n * 5 <= o) }' ||
	{ echo "FAIL: 2.6.30 p99 $new ms is not <= 1/5 of 2.6.29's $old ms"; exit 1; }
echo "ok: sync-commit p99 2.6.29 $old ms, 2.6.30 $new ms"
