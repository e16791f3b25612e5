#!/usr/bin/env bash
# mkfs takes any device spec (issue 37): a filesystem made on an NBD export
# (nbdkit memory, then nbdkit file over an image file that e2fsck reads),
# written with put, listed with ls; mkfs through a wrapper (fault:file:) and
# on sim:...,file=; mem: and sim: without file= are refused in one line
# (the filesystem would vanish with mkfs); a SIZE larger than the device is
# an error. nbdkit missing fails unless NOSTALL_ALLOW_SKIP=1 (exit 77).
set -eu
: "${NOSTALL:?path to the nostall binary}"
. "$(dirname "$0")/../lib/nbdkit.sh"
fail() { echo "FAIL: $*"; exit 1; }

printf 'made over nbd\n' >"$tmp/hello"

# 1. nbdkit memory 64M: mkfs (the size is the export's), put, ls, cat.
serve mem memory 64M
spec="nbd:nbd+unix:///?socket=$tmp/mem.sock"
"$NOSTALL" mkfs "$spec" >"$tmp/mkfs.out" 2>&1 || { cat "$tmp/mkfs.out"; fail "mkfs on nbdkit memory"; }
grep -q 'Creating ext3 filesystem with 65536 1k blocks' "$tmp/mkfs.out" || { cat "$tmp/mkfs.out"; fail "mkfs did not take the export's 64 MiB"; }
"$NOSTALL" put "$spec" "$tmp/hello" /hello
"$NOSTALL" ls "$spec" / >"$tmp/ls"
grep -qx hello "$tmp/ls" || { cat "$tmp/ls"; fail "ls on the nbd: filesystem misses hello"; }
[ "$("$NOSTALL" cat "$spec" /hello)" = "made over nbd" ] || fail "cat on the nbd: filesystem"

# 2. nbdkit file over an image file: mkfs, put, ls through nbd:, then the
#    file itself is the image, and e2fsck finds it clean.
truncate -s 48M "$tmp/exp.img"
serve file file "$tmp/exp.img"
spec="nbd:nbd+unix:///?socket=$tmp/file.sock"
"$NOSTALL" mkfs -q -b 4096 "$spec"
"$NOSTALL" put "$spec" "$tmp/hello" /hello
"$NOSTALL" mkdir "$spec" /d
"$NOSTALL" ls "$spec" / | grep -qx hello || fail "ls (file plugin) misses hello"
e2fsck -fn "$tmp/exp.img" >"$tmp/fsck" 2>&1 || { cat "$tmp/fsck"; fail "e2fsck -fn of the export's image"; }
[ "$("$NOSTALL" cat "$tmp/exp.img" /hello)" = "made over nbd" ] || fail "the image read as a file"

# A SIZE within the export is the filesystem's size; beyond it, an error.
"$NOSTALL" mkfs -q "$spec" 32M
"$NOSTALL" info "$spec" | grep -Eq '^Block count: +32768$' || { "$NOSTALL" info "$spec"; fail "mkfs SIZE on nbd:"; }
if "$NOSTALL" mkfs -q "$spec" 1G 2>"$tmp/err"; then fail "mkfs with SIZE beyond the export succeeded"; fi
grep -q 'larger than the device' "$tmp/err" || { cat "$tmp/err"; fail "no 'larger than the device' message"; }
[ "$(wc -l <"$tmp/err")" = 1 ] || { cat "$tmp/err"; fail "more than one line"; }

# 3. A missing server: one line naming it, nothing created.
if "$NOSTALL" mkfs -q "nbd:nbd+unix:///?socket=$tmp/none.sock" 2>"$tmp/err"; then fail "mkfs on a missing server succeeded"; fi
grep -q 'cannot connect' "$tmp/err" || { cat "$tmp/err"; fail "no 'cannot connect' message"; }

# 4. Wrapped and simulated files: fault:file: (no rule fires) and
#    sim:hdd,file= over existing files.
truncate -s 16M "$tmp/w.img" "$tmp/s.img"
"$NOSTALL" mkfs -q "fault:file:$tmp/w.img,op=read,sector=999999-1000000"
e2fsck -fn "$tmp/w.img" >/dev/null 2>&1 || fail "e2fsck after mkfs through fault:file:"
"$NOSTALL" mkfs -q "sim:ssd,size=16M,scale=0.001,file=$tmp/s.img"
e2fsck -fn "$tmp/s.img" >/dev/null 2>&1 || fail "e2fsck after mkfs on sim:ssd,file="
# file:PATH is a plain file: created given a SIZE.
"$NOSTALL" mkfs -q "file:$tmp/new.img" 8M
e2fsck -fn "$tmp/new.img" >/dev/null 2>&1 || fail "e2fsck after mkfs file:PATH SIZE"

# 5. In-memory devices: refused in one line (exit 2), no file made.
for s in mem:64M sim:hdd,size=64M; do
	rc=0
	(cd "$tmp" && "$NOSTALL" mkfs -q "$s") 2>"$tmp/err" || rc=$?
	[ "$rc" = 2 ] || { cat "$tmp/err"; fail "mkfs $s: exit $rc, want 2"; }
	head -1 "$tmp/err" | grep -q 'in memory only' || { cat "$tmp/err"; fail "mkfs $s: no 'in memory only' message"; }
	[ -z "$(find "$tmp" -maxdepth 1 -name 'mem:*' -o -maxdepth 1 -name 'sim:*')" ] || fail "mkfs $s made a file"
done
# A spec that is malformed: one line, exit 2.
rc=0
"$NOSTALL" mkfs -q "log:,to=$tmp/x.log" 2>"$tmp/err" || rc=$?
[ "$rc" = 2 ] || { cat "$tmp/err"; fail "mkfs log:,to=: exit $rc"; }
echo "mkfs_nbd: ok"
