#!/usr/bin/env bash
# --fs and --features of the tools that make their own images (issue 39,
# item 6): crashtest, bench fs, bench repro, and load's --fs. ext3 with
# ^dir_index stands for "a set other than the default" (one the library
# writes today): the outputs name it, the default ones do not. ext4 and ext2
# are either refused with the library's own message (before their write
# paths are merged) or run (after); either way the tool says which.
# A bad type or feature is a usage error (exit 2). A few seconds.
set -u
: "${NOSTALL:?path to the nostall binary}"
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/nostall-fstype.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# ---- crashtest
"$NOSTALL" crashtest --mode ordered --workload append --block-size 1024 --states 60 --seed 3 --json --quiet \
	>"$tmp/d.out" 2>&1 || fail "crashtest (default) exit $?"
grep -q '"fs"' "$tmp/d.out" && fail "crashtest: the default JSON names a filesystem"
"$NOSTALL" crashtest --fs ext3 --features ^dir_index --mode ordered --workload append --block-size 1024 \
	--states 60 --seed 3 --json --quiet >"$tmp/f.out" 2>&1 || { cat "$tmp/f.out"; fail "crashtest --features exit $?"; }
grep -q '^{"mode":"ordered","fs":"ext3","features":"^dir_index",' "$tmp/f.out" ||
	{ cat "$tmp/f.out"; fail "crashtest --features: no fs/features in the JSON"; }
grep -q '^filesystem: ext3, features ^dir_index' "$tmp/f.out" || fail "crashtest --features: no filesystem line"
"$NOSTALL" crashtest --fs ext5 --states 10 >"$tmp/b.out" 2>&1
[ $? = 2 ] && grep -q "unknown filesystem type 'ext5'" "$tmp/b.out" || { cat "$tmp/b.out"; fail "crashtest --fs ext5"; }
"$NOSTALL" crashtest --fs ext4 --features uninit_bg --states 10 >"$tmp/b.out" 2>&1
[ $? = 2 ] && grep -q "cannot make feature 'uninit_bg'" "$tmp/b.out" || { cat "$tmp/b.out"; fail "crashtest --features uninit_bg"; }
"$NOSTALL" crashtest --fs ext2 --states 10 >"$tmp/b.out" 2>&1
[ $? = 1 ] && grep -q "^nostall crashtest: --fs ext2: no journal; crash states of a journal-less" "$tmp/b.out" ||
	{ cat "$tmp/b.out"; fail "crashtest --fs ext2: not refused"; }
for t in ext4; do
	"$NOSTALL" crashtest --fs $t --mode ordered --workload append --block-size 1024 --states 40 --seed 3 --json \
		--quiet >"$tmp/$t.out" 2>&1
	rc=$?
	if [ $rc = 1 ] && grep -q "^nostall crashtest: --fs $t, data=ordered, 1024-byte blocks: ext3: " "$tmp/$t.out"; then
		echo "crashtest --fs $t: refused by the library: $(tail -n 1 "$tmp/$t.out" | cut -c1-120)"
	elif [ $rc = 0 ] && grep -q "^{\"mode\":\"ordered\",\"fs\":\"$t\"," "$tmp/$t.out"; then
		echo "crashtest --fs $t: runs"
	else
		cat "$tmp/$t.out"
		fail "crashtest --fs $t: exit $rc, neither the library's refusal nor a run"
	fi
done

# ---- bench fs
dev="sim:ssd,size=256M"
"$NOSTALL" bench fs --quick --json -o data=ordered --workload creates --device $dev --fs ext3 --features ^dir_index \
	>"$tmp/bf.json" 2>"$tmp/err" || { cat "$tmp/err"; fail "bench fs --features exit $?"; }
grep -q '^{"scenario":"creates","device":"sim:ssd,size=256M","config":"ordered","fs":"ext3","features":"^dir_index","creates_per_s":' \
	"$tmp/bf.json" || { cat "$tmp/bf.json"; fail "bench fs: fs/features in the JSON"; }
"$NOSTALL" bench fs --quick -o data=ordered --workload creates --device $dev --fs ext3 >"$tmp/bf.txt" 2>&1 ||
	fail "bench fs --fs ext3 exit $?"
grep -q "^creates on $dev (ext3)" "$tmp/bf.txt" || { cat "$tmp/bf.txt"; fail "bench fs --fs ext3: table header"; }
"$NOSTALL" bench fs --quick --fs ext3,ext3 >"$tmp/err" 2>&1
[ $? = 2 ] && grep -q "ext3 twice" "$tmp/err" || fail "bench fs --fs ext3,ext3"
"$NOSTALL" bench fs --quick --fs ext3,ext4 -o data=ordered --workload creates --device $dev >"$tmp/bf2.txt" 2>&1
rc=$?
if [ $rc = 1 ] && grep -q "^nostall bench fs: --fs ext4, data=ordered: mount -o [^ ]*: ext3: " "$tmp/bf2.txt"; then
	echo "bench fs --fs ext3,ext4: ext4 refused by the library"
elif [ $rc = 0 ] && grep -q "^filesystems compared on $dev" "$tmp/bf2.txt" &&
	grep -q "^  worse than ext3 by more than 10 %: " "$tmp/bf2.txt" &&
	grep -q "alternating with the other --fs types" "$tmp/bf2.txt"; then
	echo "bench fs --fs ext3,ext4: compared"
else
	cat "$tmp/bf2.txt"
	fail "bench fs --fs ext3,ext4: exit $rc, neither the library's refusal nor the comparison"
fi

# ---- bench repro, load
"$NOSTALL" bench repro --micro --workload jens --device sim:ssd --fs ext3 --features ^dir_index --out "$tmp/repro" \
	>/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "bench repro --fs exit $?"; }
python3 "$here/tools/bench/json_validate.py" "$here/docs/bench-repro.schema.json" "$tmp/repro/results.json" ||
	fail "bench repro --fs: results.json against the schema"
grep -q '"fs": "ext3", "features": "^dir_index"}' "$tmp/repro/results.json" || fail "bench repro: no fs in the records"
grep -q '^Filesystem: ext3, features ^dir_index' "$tmp/repro/report.md" || fail "bench repro: no Filesystem line"
"$NOSTALL" bench repro --micro --workload jens --device sim:ssd --fs ext9 --out "$tmp/repro2" >/dev/null 2>&1
[ $? = 2 ] || fail "bench repro --fs ext9 is not a usage error"
mkdir -p "$tmp/load"
"$NOSTALL" load "$tmp/load" jens --jens-n 3 --fs ext4 >"$tmp/load.out" 2>&1 || fail "load --fs exit $?"
grep -q '^N fs ext4$' "$tmp/load.out" || fail "load --fs: no note"
"$NOSTALL" load "$tmp/load" jens --fs ext9 >/dev/null 2>&1
[ $? = 2 ] || fail "load --fs ext9 is not a usage error"

[ "$fails" -eq 0 ] || { echo "tools_fs_type: $fails failures"; exit 1; }
echo "tools_fs_type: ok"
