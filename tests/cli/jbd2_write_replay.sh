#!/usr/bin/env bash
# nostall-test: release-only (crash images made through fault: devices and recovered by e2fsprogs and the kernel; the format round trip runs under ASan in test_jbd2_format)
# jbd2's write format (issue 39; docs/journal.md, "The jbd2 write format"):
# journals nostall writes with 64-bit tags (journal_64bit) and v3 checksums
# (journal_csum=v3) are replayed alike by e2fsck, the kernel and nostall.
# ext3 images (the feature table keeps ext4's 64bit and metadata_csum
# read-only on this branch, so the format is asked for by option, as the
# filesystem asks for it from those features: ext3_journal_config_features).
# Per case (block size, options, the operation that crashes):
#   - a clean `nostall put -r` in that format leaves the journal superblock
#     with the features (dumpe2fs, debugfs logdump -S) and e2fsck -fn clean;
#   - the operation runs on a `fault:` device whose writes fail after the
#     first N (N growing from 2 until the image needs recovery with at least
#     one committed transaction, and for `rm` revoke records): a crash image;
#   - logdump shows the log's descriptor (and revoke) blocks;
#   - tests/lib/replay_oracles.sh: nostall's replay equals debugfs
#     journal_run's block for block, nostall's replay + orphans equals
#     e2fsck -E journal_only's and (as root) the kernel's, e2fsck -fn clean;
#   - e2fsck -fy, then e2fsck -fn is clean; as root the kernel replays a copy
#     at a read-write mount, umount, e2fsck -fn is clean; the files of the
#     three (nostall get -r, debugfs rdump, the kernel's mount) are the same.
set -u
: "${NOSTALL:?path to the nostall binary}"
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
export NOSTALL PATH="$PATH:/sbin:/usr/sbin"
cd "$(dirname "$0")/../.."
for t in mke2fs e2fsck debugfs dumpe2fs python3; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed" >&2; exit 77; }
done
. tests/lib/replay_oracles.sh
tmp=$(mktemp -d /tmp/nostall-j2w.XXXXXX)
kmnt=$tmp/kmnt
mkdir -p "$kmnt"
cleanup() {
	mountpoint -q "$kmnt" 2>/dev/null && umount "$kmnt"
	rm -rf "$tmp"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# A tree of files: sizes from a few bytes to 300 KiB (indirect blocks at 1
# KiB and 4 KiB), every 1 KiB piece k with k % 7 == 3 starting with the JBD
# magic (logged copies escaped), and a subdirectory.
mktree() { # dir seed
	python3 - "$1" "$2" <<'PY'
import os, random, sys
d, seed = sys.argv[1], int(sys.argv[2])
r = random.Random(seed)
os.makedirs(d + "/sub", exist_ok=True)
for i in range(14):
    n = r.choice([17, 1500, 9000, 70000, 140000, 300000])
    b = bytearray(r.getrandbits(8) for _ in range(n))
    for k in range(3, n // 1024, 7):
        b[k * 1024:k * 1024 + 4] = b"\xc0\x3b\x39\x98"
    with open(os.path.join(d, "sub" if i % 3 == 0 else "", "f%d" % i), "wb") as f:
        f.write(b)
PY
}
mktree "$tmp/old" 1
mktree "$tmp/new" 2

# case: block size | journal options (beside the data mode) | crash op | the features logdump must show
cases=(
	"4096|journal_64bit,journal_csum=v3,data=journal|put|journal_64bit journal_checksum_v3"
	"1024|journal_64bit,journal_csum=v3,data=ordered|rm|journal_64bit journal_checksum_v3"
	"4096|journal_64bit,data=ordered|put|journal_64bit"
	"1024|journal_csum=v3,journal_async_commit,data=journal|put|journal_async_commit journal_checksum_v3"
)
for c in "${cases[@]}"; do
	IFS='|' read -r bs opts op want <<<"$c"
	label="$bs $opts $op"
	base=$tmp/base.img crash=$tmp/crash.img
	rm -f "$base" "$crash"
	mke2fs -q -F -t ext3 -b "$bs" "$base" 32M >/dev/null 2>&1
	if ! out=$("$NOSTALL" put -r -o "$opts" "$base" "$tmp/old" /old 2>&1); then
		fail "[$label] clean put: $out"; continue
	fi
	feats=$(dumpe2fs -h "$base" 2>/dev/null | sed -n 's/^Journal features: *//p')
	# after a clean unmount only the async commit feature is gone again
	for f in ${want/journal_async_commit/}; do
		case " $feats " in *" $f "*) ;; *) fail "[$label] journal features after a clean unmount: '$feats' (want $f)" ;; esac
	done
	case " $feats " in *" journal_async_commit "*) fail "[$label] async commit left on: $feats" ;; esac
	e2fsck -fn "$base" >"$tmp/fsck" 2>&1 || { head "$tmp/fsck"; fail "[$label] e2fsck -fn after a clean put"; }

	# the crash image
	found=
	for after in $(seq 2 40) 48 56 64 80 96 128 192 256 384 512; do
		cp --sparse=always "$base" "$crash"
		dev="fault:file:$crash,op=write,after=$after"
		if [ "$op" = put ]; then
			"$NOSTALL" put -r --device "$dev" -o "$opts" "$tmp/new" /new >"$tmp/op.out" 2>&1 && break
		else
			"$NOSTALL" rm -r --device "$dev" -o "$opts" /old >"$tmp/op.out" 2>&1 && break
		fi
		dumpe2fs -h "$crash" 2>/dev/null | grep -q "^Filesystem features:.*needs_recovery" || continue
		dry=$("$NOSTALL" recover -o dry_run "$crash" 2>&1) || { found=bad; break; }
		ncommit=$(echo "$dry" | sed -n 's/.*(\([0-9]*\) committed).*/\1/p')
		nrev=$(echo "$dry" | sed -n 's/.* \([0-9]*\) revoke records.*/\1/p')
		[ "${ncommit:-0}" -ge 1 ] || continue
		[ "$op" = put ] || [ "${nrev:-0}" -ge 1 ] || continue
		found=$after
		break
	done
	if [ "$found" = bad ]; then
		fail "[$label] nostall's recovery refuses the crash image: $dry"; continue
	fi
	if [ -z "$found" ]; then
		fail "[$label] no crash state with a committed transaction (last: $(tail -1 "$tmp/op.out"))"; continue
	fi
	echo "[$label] crash after $found writes: $(echo "$dry" | head -1)"
	ld=$(debugfs -R 'logdump -S' "$crash" 2>&1)
	for f in $want; do
		echo "$ld" | grep -q "^Journal features:.* $f" || fail "[$label] logdump -S lacks $f: $(echo "$ld" | grep '^Journal features')"
	done
	echo "$ld" | grep -q "type 1 (descriptor block)" || fail "[$label] logdump shows no descriptor block"
	[ "$op" = put ] || echo "$ld" | grep -q "type 5 (revoke table)" || fail "[$label] logdump shows no revoke block"
	case $want in *checksum_v3*) echo "$ld" | grep -q "^Journal checksum type: *crc32c" || fail "[$label] logdump: no crc32c" ;; esac

	replay_check "$crash" "$tmp/rc" "$label" || fails=$((fails + 1))

	# e2fsck -fy, then clean; nostall's recovery; the kernel's
	cp --sparse=always "$crash" "$tmp/fy.img"
	e2fsck -fy "$tmp/fy.img" >"$tmp/fy.out" 2>&1
	[ $? -le 1 ] || { tail -5 "$tmp/fy.out"; fail "[$label] e2fsck -fy"; }
	e2fsck -fn "$tmp/fy.img" >"$tmp/fsck" 2>&1 || { head "$tmp/fsck"; fail "[$label] e2fsck -fn after e2fsck -fy"; }
	cp --sparse=always "$crash" "$tmp/ns.img"
	"$NOSTALL" recover -o orphans "$tmp/ns.img" >/dev/null 2>&1 || fail "[$label] nostall recover -o orphans"
	rm -rf "$tmp/files.ns" "$tmp/files.e2"
	"$NOSTALL" get -r "$tmp/ns.img" / "$tmp/files.ns" >/dev/null 2>&1 || fail "[$label] nostall get -r"
	mkdir -p "$tmp/files.e2"
	debugfs -R "rdump / $tmp/files.e2" "$tmp/fy.img" >/dev/null 2>&1
	rm -rf "$tmp/files.ns/lost+found" "$tmp/files.e2/lost+found"
	diff -r "$tmp/files.ns" "$tmp/files.e2" >/dev/null || fail "[$label] nostall's and e2fsck's recoveries hold different files"
	if [ "$(id -u)" -eq 0 ]; then
		cp --sparse=always "$crash" "$tmp/k.img"
		if kmount -o loop -t ext4 "$tmp/k.img" "$kmnt"; then
			diff -r -x lost+found "$tmp/files.ns" "$kmnt" >/dev/null || fail "[$label] the kernel's replay holds different files"
			umount "$kmnt"
			e2fsck -fn "$tmp/k.img" >"$tmp/fsck" 2>&1 || { head "$tmp/fsck"; fail "[$label] e2fsck -fn after the kernel's replay"; }
		else
			fail "[$label] the kernel refused the crash image"
		fi
		rm -f "$tmp/k.img"
	else
		echo "SKIP: [$label] not root: the kernel's read-write replay" >&2
	fi
	rm -f "$tmp/fy.img" "$tmp/ns.img"
done
[ "$fails" -eq 0 ] || { echo "FAIL: $fails check(s) failed"; exit 1; }
echo ok
