#!/usr/bin/env bash
# The CLI on nbd: devices served by a real nbdkit: ls/cat/info through
# --device nbd:... on an image exported by the file plugin (then e2fsck -fn
# on it), a read-only export, and bench fs / bench blk running on nbd:
# (--quick, --json: the figures are the benchmark's business). nbdkit
# missing fails unless NOSTALL_ALLOW_SKIP=1 (then exit 77, a skip).
set -eu
: "${NOSTALL:?path to the nostall binary}"
. "$(dirname "$0")/../lib/nbdkit.sh"

"$NOSTALL" mkfs -q "$tmp/fs.img" 32M
printf 'over nbd\n' >"$tmp/hello"
"$NOSTALL" put "$tmp/fs.img" "$tmp/hello" /hello
serve fs file "$tmp/fs.img"
spec="nbd:nbd+unix:///?socket=$tmp/fs.sock"
"$NOSTALL" ls --device "$spec" / >"$tmp/ls"
grep -qx 'hello' "$tmp/ls" || { cat "$tmp/ls"; echo "FAIL: ls on nbd: misses hello"; exit 1; }
[ "$("$NOSTALL" cat --device "$spec" /hello)" = "over nbd" ] || { echo "FAIL: cat on nbd:"; exit 1; }
"$NOSTALL" info --device "$spec" >"$tmp/info"
grep -qi 'block' "$tmp/info" || { cat "$tmp/info"; echo "FAIL: info on nbd:"; exit 1; }
e2fsck -fn "$tmp/fs.img" >/dev/null 2>&1 || { echo "FAIL: e2fsck -fn after reading over nbd:"; exit 1; }

# A bad URI and a missing server: one-line errors, no hang.
if "$NOSTALL" ls --device "nbd:nbd+unix:///?socket=$tmp/none.sock" / 2>"$tmp/err"; then
	echo "FAIL: ls on a missing server succeeded"
	exit 1
fi
grep -q "cannot connect" "$tmp/err" || { cat "$tmp/err"; echo "FAIL: no 'cannot connect' message"; exit 1; }

# A read-only export reads fine.
serve ro -r file "$tmp/fs.img"
[ "$("$NOSTALL" cat --device "nbd:nbd+unix:///?socket=$tmp/ro.sock" /hello)" = "over nbd" ] ||
	{ echo "FAIL: cat on a read-only export"; exit 1; }

# The benchmarks run on nbd: (a sparse 2 GiB RAM export).
serve mem memory 2G
mem="nbd:nbd+unix:///?socket=$tmp/mem.sock"
"$NOSTALL" bench fs --quick --json --workload jens,stream -o data=ordered --device "$mem" \
	>"$tmp/fs.json" 2>"$tmp/err" || { cat "$tmp/err"; echo "FAIL: bench fs on nbd:"; exit 1; }
[ "$(grep -c "\"device\":\"nbd:nbd+unix:" "$tmp/fs.json")" = 2 ] ||
	{ cat "$tmp/fs.json"; echo "FAIL: want 2 bench fs lines on nbd:"; exit 1; }
"$NOSTALL" bench blk --json --scenario max-sectors --seconds 0.2 --device "$mem" \
	>"$tmp/blk.json" 2>"$tmp/err" || { cat "$tmp/err"; echo "FAIL: bench blk on nbd:"; exit 1; }
grep -q '"scenario":"max-sectors","device":"nbd:' "$tmp/blk.json" ||
	{ cat "$tmp/blk.json"; echo "FAIL: bench blk output"; exit 1; }
echo "nbd CLI: ok"
