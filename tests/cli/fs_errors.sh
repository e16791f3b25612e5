#!/usr/bin/env bash
# The read-only fs commands (info, ls, cat, stat, get) on bad input: each case
# must exit non-zero (1 runtime, 2 usage), say what is wrong on stderr, print
# nothing on stdout, and never crash. Plus the basics on a small image made by
# nostall mkfs (no root, no kernel needed).
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
NOSTALL=${NOSTALL:-build/nostall}
export TZ=UTC
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

tmp=$(mktemp -d /tmp/nostall-fserr.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
img="$tmp/fs.img"
"$NOSTALL" mkfs -q -b 1024 -U 01234567-89ab-cdef-0123-456789abcdef -T 1700000000 "$img" 8M ||
	{ echo "FAIL: nostall mkfs"; exit 1; }
head -c 4M /dev/urandom >"$tmp/junk.img"
: >"$tmp/empty.img"
mkdir "$tmp/adir"

# expect EXIT-CODE MESSAGE-REGEX ARGS...: run nostall ARGS. EXIT-CODE "nz":
# any failure (1 or 2: what the library rejects as invalid (-EINVAL: a bad
# spec, option or device file) is reported as a usage error)
expect() {
	local want=$1 re=$2 out err rc
	shift 2
	out=$("$NOSTALL" "$@" 2>"$tmp/err")
	rc=$?
	err=$(cat "$tmp/err")
	if [ "$rc" -ge 128 ] || { [ "$want" = nz ] && [ "$rc" -eq 0 ]; } ||
		{ [ "$want" != nz ] && [ "$rc" -ne "$want" ]; }; then
		fail "nostall $*: exit $rc, want $want (stderr: $err)"
		return
	fi
	if [ -n "$out" ]; then fail "nostall $*: printed on stdout: ${out:0:200}"; fi
	if ! printf '%s\n' "$err" | grep -Eqi -- "$re"; then
		fail "nostall $*: message '$err' does not match /$re/"
	fi
	case $err in *AddressSanitizer*|*runtime\ error*) fail "nostall $*: sanitizer report: $err" ;; esac
}

for cmd in info ls cat stat get; do
	case $cmd in
	info) args=() ;;
	get) args=(/ "$tmp/out") ;;
	*) args=(/) ;;
	esac
	[ "$cmd" = get ] && args=(-r "${args[@]}")
	expect 1 "no such file|cannot (mount|open)" "$cmd" "$tmp/missing.img" "${args[@]}"
	expect 1 "not an ext2/ext3|magic|bad|corrupt" "$cmd" "$tmp/junk.img" "${args[@]}"
	expect nz "cannot mount|size|small|empty|short|invalid|beyond|range" "$cmd" "$tmp/empty.img" "${args[@]}"
	expect nz "cannot mount|directory|invalid|not" "$cmd" "$tmp/adir" "${args[@]}"
	expect nz "device|spec|unknown|no such file" "$cmd" --device "bogus:thing" "${args[@]}"
	expect 2 "device|spec|sim|unknown|model" "$cmd" --device "sim:floppy,file=$img" "${args[@]}"
	expect 2 "tunable|option|unknown|no_such" "$cmd" -o no_such_tunable=1 "$img" "${args[@]}"
	expect 2 "range|max_sectors|invalid|bad" "$cmd" -o max_sectors_kb=0 "$img" "${args[@]}"
	expect 2 "unknown option" "$cmd" --frobnicate "$img" "${args[@]}"
	expect 2 "needs an argument" "$cmd" "$img" -o
	expect 2 "missing|usage" "$cmd"
done
rm -rf "$tmp/out"

expect 1 "no such file" ls "$img" /nope
expect 1 "no such file" ls -l "$img" /lost+found/nope
expect 1 "no such file" cat "$img" /nope
expect 1 "no such file" stat "$img" /a/b/c
expect 1 "no such file" get "$img" /nope "$tmp/out"
expect 1 "is a directory" cat "$img" /lost+found
expect 1 "is a directory" get "$img" /lost+found "$tmp/out"
expect 1 "too long|at most 255" stat "$img" "/$(printf 'x%.0s' $(seq 1 300))"
expect 2 "missing" cat "$img"
expect 2 "missing" get "$img" /
expect 2 "too many" get "$img" / a b
expect 2 "too many" info "$img" extra
expect 1 "$tmp/nodir/deeper|no such file" get -r "$img" /lost+found/.. "$tmp/nodir/deeper/x"
[ ! -e "$tmp/out" ] || fail "failed get left $tmp/out behind"

# ---- the basics on a good image ----
out=$("$NOSTALL" info "$img") || fail "info exit $?"
printf '%s\n' "$out" | grep -q "Filesystem UUID: *01234567-89ab-cdef-0123-456789abcdef" || fail "info: no uuid: $out"
printf '%s\n' "$out" | grep -q "Block size: *1024" || fail "info: no block size"
printf '%s\n' "$out" | grep -q "^Group 0: blocks 1-" || fail "info: no group 0 line"
printf '%s\n' "$out" | grep -q "has_journal" || fail "info: features missing"
out=$("$NOSTALL" ls "$img" /) || fail "ls exit $?"
[ "$out" = "lost+found" ] || fail "ls /: got '$out'"
out=$("$NOSTALL" ls -la "$img" /) || fail "ls -la exit $?"
printf '%s\n' "$out" | grep -Eq '^drwx------ +2 +0 +0 +12288 2023-11-14 22:13:20 lost\+found$' ||
	fail "ls -la: lost+found line: $out"
printf '%s\n' "$out" | grep -Eq '^drwxr-xr-x +3 .* \.$' || fail "ls -la: no . line: $out"
out=$("$NOSTALL" stat "$img" /lost+found) || fail "stat exit $?"
printf '%s\n' "$out" | grep -q "Inode: 11 " || fail "stat: lost+found not inode 11: $out"
printf '%s\n' "$out" | grep -q "Access: (0700/drwx------)" || fail "stat: mode line: $out"
"$NOSTALL" get -r "$img" / "$tmp/copy" || fail "get -r exit $?"
[ -d "$tmp/copy/lost+found" ] || fail "get -r: no lost+found in the copy"
[ "$(stat -c %a "$tmp/copy/lost+found")" = 700 ] || fail "get -r: lost+found mode"
[ "$(stat -c %Y "$tmp/copy/lost+found")" = 1700000000 ] || fail "get -r: lost+found mtime"
# the same through another device kind and with tunables passed through
out=$("$NOSTALL" ls --device "sim:ssd,file=$img,scale=0.01" -o scheduler=deadline,max_sectors_kb=64 /) ||
	fail "ls --device sim:ssd exit $?"
[ "$out" = "lost+found" ] || fail "ls via sim:ssd: got '$out'"
out=$("$NOSTALL" ls -o cache=1M,readahead=0 "$img" /) || fail "ls -o cache= exit $?"
"$NOSTALL" --help | grep -q "nostall get" || fail "--help lacks get"
"$NOSTALL" ls -h | grep -q "usage: nostall ls" || fail "ls -h"


# ---- cat: files larger than the readahead ring go out in its own buffers
# (nostall_pread_sink), holes as zeroes, several files in order, a full or
# closed output
big="$tmp/big.img"
"$NOSTALL" mkfs -q "$big" 64M || fail "mkfs of $big"
head -c 13000000 /dev/urandom >"$tmp/r13"
head -c 5000 /dev/urandom >"$tmp/r5k"
"$NOSTALL" put "$big" "$tmp/r13" /r13 || fail "put /r13"
"$NOSTALL" put "$big" "$tmp/r5k" /r5k || fail "put /r5k"
# a file with a hole of 9 MiB before 5000 bytes
"$NOSTALL" write "$big" /holey 9437184 <"$tmp/r5k" || fail "write /holey"
"$NOSTALL" cat "$big" /r13 | cmp - "$tmp/r13" || fail "cat /r13 through a pipe differs"
"$NOSTALL" cat -o file_readahead=64K "$big" /r13 | cmp - "$tmp/r13" ||
	fail "cat /r13 with file_readahead=64K differs"
"$NOSTALL" cat "$big" /r5k /r13 /r5k | cmp - <(cat "$tmp/r5k" "$tmp/r13" "$tmp/r5k") ||
	fail "cat of three files: not their concatenation"
cmp <("$NOSTALL" cat "$big" /holey) <(head -c 9437184 /dev/zero; cat "$tmp/r5k") ||
	fail "cat /holey: not 9 MiB of zeroes and the 5000 bytes"
out=$("$NOSTALL" cat "$big" /r13 2>"$tmp/err" | head -c 10 | wc -c)
[ "$out" = 10 ] || fail "cat | head -c 10: got $out bytes"
[ ! -s "$tmp/err" ] || fail "cat into a closed pipe complained: $(cat "$tmp/err")"
"$NOSTALL" cat "$big" /r13 >/dev/full 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || fail "cat >/dev/full: exit $rc, want 1"
grep -q "write error: No space left on device" "$tmp/err" || fail "cat >/dev/full: $(cat "$tmp/err")"
# get takes the same lent buffers: contents equal, the hole stays a hole
"$NOSTALL" get "$big" /r13 "$tmp/got13" && cmp "$tmp/got13" "$tmp/r13" || fail "get /r13 differs"
"$NOSTALL" get "$big" /holey "$tmp/gotholey" &&
	cmp "$tmp/gotholey" <(head -c 9437184 /dev/zero; cat "$tmp/r5k") || fail "get /holey differs"
[ "$(stat -c %b "$tmp/gotholey")" -lt 1024 ] || fail "get /holey: the 9 MiB hole was written"

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "fs_errors: all checks passed"
exit 0
