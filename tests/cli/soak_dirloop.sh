#!/usr/bin/env bash
# Recursive CLI walks on a corrupt image whose directory entries name an
# ancestor (found by the soak's corruption runs: a flipped byte turned an
# entry of / into a second name for /). ls -R, get -r and rm -r must end
# promptly, report "directory loop" for each such entry and exit 1; before,
# each walked the loop again at every level up to its depth bound (with two
# such names: 2^depth walks, a hang), and rm -r removed what is outside the
# path it was given through a name for /.
# The loops are made by debugfs (link of / and of /d under /d/sub).
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
NOSTALL=${NOSTALL:-build/nostall}
export PATH="$PATH:/sbin:/usr/sbin"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
for tool in mke2fs debugfs; do
	command -v "$tool" >/dev/null 2>&1 || { echo "SKIP: $tool not installed" >&2; exit 77; }
done
tmp=$(mktemp -d /tmp/nostall-dirloop.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
img=$tmp/loop.img
mke2fs -q -F -t ext3 -b 1024 "$img" 4M >/dev/null 2>&1 || { echo "FAIL: mke2fs"; exit 1; }
echo keep >"$tmp/keep"
echo data >"$tmp/data"
debugfs -w -f - "$img" >/dev/null 2>&1 <<EOF
write $tmp/keep keep
mkdir d
mkdir d/sub
write $tmp/data d/sub/file
link / d/sub/up1
link / d/sub/up2
link /d d/sub/up3
EOF
"$NOSTALL" stat "$img" /d/sub/up1 /d/sub/up3 >/dev/null 2>&1 || { echo "FAIL: debugfs made no loop"; exit 1; }

# run LABEL CMD...: bounded by a timeout; must exit 1 and name each loop
run() {
	local label=$1 rc
	shift
	timeout 60 "$NOSTALL" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" -eq 124 ] && { fail "$label: did not end within 60 s"; return; }
	[ "$rc" -eq 1 ] || fail "$label: exit $rc, want 1"
	for e in up1 up2 up3; do
		grep -q "sub/$e.*directory loop" "$tmp/err" || fail "$label: no loop reported at $e: $(head -c 300 "$tmp/err")"
	done
	[ "$(wc -l <"$tmp/err")" -le 6 ] || fail "$label: $(wc -l <"$tmp/err") lines of errors"
}

run "ls -R" ls -R "$img" /
grep -q '^/d/sub:' "$tmp/out" && grep -q '^file$' "$tmp/out" || fail "ls -R: the tree is not listed"
run "get -r" get -r "$img" / "$tmp/copy"
[ "$(cat "$tmp/copy/d/sub/file" 2>/dev/null)" = data ] || fail "get -r: d/sub/file not copied"
[ "$(cat "$tmp/copy/keep" 2>/dev/null)" = keep ] || fail "get -r: keep not copied"
run "rm -r" rm -r "$img" /d/sub
# what is outside /d/sub stays; its own file went
"$NOSTALL" cat "$img" /keep 2>/dev/null | grep -q keep || fail "rm -r /d/sub removed /keep through a loop"
"$NOSTALL" stat "$img" /d >/dev/null 2>&1 || fail "rm -r /d/sub removed /d through a loop"
"$NOSTALL" stat "$img" /d/sub/file >/dev/null 2>&1 && fail "rm -r /d/sub left d/sub/file"

if [ "$fails" -ne 0 ]; then
	echo "soak_dirloop: $fails failure(s)"
	exit 1
fi
echo "soak_dirloop: all checks passed"
exit 0
