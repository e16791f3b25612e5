#!/usr/bin/env bash
# nostall bench jbd: JSON shape (one object per preset) and option errors;
# nostall recover's usage and error paths. The figures themselves are the
# benchmark's business (run it, read the table), not a timed test's.
set -eu
: "${NOSTALL:?path to the nostall binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$NOSTALL" bench jbd --device sim:ssd --seconds 0.3 --json >"$tmp/ssd.json" 2>"$tmp/err" || { cat "$tmp/err"; exit 1; }
[ "$(wc -l <"$tmp/ssd.json")" = 3 ] || { cat "$tmp/ssd.json"; echo "FAIL: want 3 JSON lines"; exit 1; }
for cfg in 2.6.29 2.6.30-rc1 2.6.30; do
	grep -q "\"scenario\":\"sync-commit\",\"device\":\"sim:ssd\",\"config\":\"$cfg\",\"p50_ms\":[0-9.]*,\"p99_ms\":\(null\|[0-9.]*\),\"max_ms\":[0-9.]*,\"async_mbps\":[0-9.]*" "$tmp/ssd.json" ||
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
else
	echo "SKIP: recover of a clean mke2fs image (mke2fs not installed)" >&2
fi
echo ok
