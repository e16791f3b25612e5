#!/usr/bin/env bash
# Journals the kernel writes with jbd2's v1 checksums are recovered by
# nostall exactly as e2fsck recovers them (docs/journal.md, "Asynchronous
# commit"). Needs root (loop mount); skips otherwise.
#
# For each of `journal_checksum` (data=ordered) and `journal_async_commit`
# (data=writeback; the kernel refuses it with ordered data): the kernel's
# ext4 driver mounts an ext3 image (ext3's own name refuses the options),
# 30 files are written and fsynced, and the image file is copied while still
# mounted: a crash image whose journal holds the fsynced transactions, each
# commit block carrying the checksum. Then:
#   - the copy's journal has the features and needs recovery;
#   - `nostall recover` verifies the checksums (count > 0) and its image
#     equals `e2fsck -E journal_only`'s of the same copy byte for byte;
#   - e2fsck -fn is clean and every file reads back as the kernel wrote it;
#   - async only: one logged block of the last transaction changed (a cache
#     that kept the commit block and lost that block): both recoveries stop
#     before that transaction (nostall says the commit was torn), agree
#     byte for byte, e2fsck -fn is clean, and the files of the transactions
#     before it read back.
set -eu
. "$(dirname "$0")/../lib/kmount.sh"
: "${NOSTALL:?path to the nostall binary}"
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root (loop mount)" >&2; exit 77; }
export PATH="$PATH:/sbin:/usr/sbin"
for t in mke2fs e2fsck dumpe2fs debugfs python3; do
	command -v $t >/dev/null || { echo "FAIL: $t not installed"; exit 1; }
done
tmp=$(mktemp -d /tmp/nostall-jkc.XXXXXX)
mnt=$tmp/m
mkdir "$mnt"
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
fail() { echo "FAIL: $*"; exit 1; }

# Zero the superblock fields e2fsck may set on its own (write time, last
# check, kbytes written), as tests/test_jbd_crash.c does.
mask() {
	python3 - "$1" <<'EOF'
import sys
with open(sys.argv[1], 'r+b') as f:
    for off, n in ((1024 + 0x30, 4), (1024 + 0x40, 4), (1024 + 0x178, 8)):
        f.seek(off); f.write(b'\0' * n)
EOF
}

# The journal's block map, one physical block per line (debugfs bmap of
# every journal block: the journal has an indirect block among its data).
journal_map() { # image -> file jmap
	local n
	n=$(dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Total journal blocks: *//p')
	for i in $(seq 0 $((n - 1))); do echo "bmap <8> $i"; done >bmap.cmds
	debugfs -f bmap.cmds "$1" 2>/dev/null | grep -E '^[0-9]+$' >jmap
	[ "$(wc -l <jmap)" -eq "$n" ] || fail "journal map: $(wc -l <jmap) of $n blocks"
}

# Change one byte of the last logged (non-header) block before the last
# commit block in the log; print that commit's sequence.
tear_last() { # image jmap
	python3 - "$1" "$2" <<'EOF'
import struct, sys
img, bs = sys.argv[1], 4096
jmap = [int(x) for x in open(sys.argv[2])]
MAGIC = 0xC03B3998
with open(img, 'r+b') as f:
    def blk(i):
        f.seek(jmap[i] * bs); return f.read(bs)
    sb = blk(0)
    maxlen, first, seq, start = struct.unpack('>IIII', sb[0x10:0x20])
    b, last = start, None
    cur_data = None
    for _ in range(2 * maxlen):
        d = blk(b)
        magic, btype, s = struct.unpack('>III', d[:12])
        if magic != MAGIC or s != seq:
            break
        if btype == 1:  # descriptor: tags of 8 bytes, uuid unless SAME_UUID
            off, n = 12, 0
            while off + 8 <= bs:
                flags = struct.unpack('>I', d[off + 4:off + 8])[0] & 0xffff
                n += 1
                off += 8 + (0 if flags & 2 else 16)
                if flags & 8:
                    break
            cur_data = first + (b - first + n) % (maxlen - first)
            b = first + (b - first + n + 1) % (maxlen - first)
        elif btype == 2:  # commit
            last = (seq, cur_data)
            seq += 1
            b = first + (b - first + 1) % (maxlen - first)
        elif btype == 5:
            b = first + (b - first + 1) % (maxlen - first)
        else:
            break
    if not last or last[1] is None:
        sys.exit('no committed transaction with a logged block')
    f.seek(jmap[last[1]] * bs + 100)
    byte = f.read(1)
    f.seek(jmap[last[1]] * bs + 100)
    f.write(bytes([byte[0] ^ 0x5a]))
    print(last[0])
EOF
}

for kopts in "journal_checksum,data=ordered" "journal_async_commit,data=writeback"; do
	rm -f img crash.img ours.img theirs.img sums sums29 jmap bmap.cmds
	mke2fs -q -F -t ext3 -b 4096 img 64M >/dev/null 2>&1
	kmount -o "loop,$kopts" -t ext4 img "$mnt" || fail "$kopts: the kernel refused to mount (ext4 driver)"
	for i in $(seq 1 30); do
		head -c $((i * 1000 + 17)) /dev/urandom >"$mnt/f$i"
		python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_RDWR); os.fsync(fd)" "$mnt/f$i"
		# the files fsynced before the last one: what a torn last commit keeps
		[ "$i" -eq 29 ] && (cd "$mnt" && md5sum f*) >sums29
	done
	(cd "$mnt" && md5sum f*) >sums
	cp --sparse=always img crash.img # the crash image: mounted, journal not checkpointed
	umount "$mnt"
	feats=$(dumpe2fs -h crash.img 2>/dev/null | grep "^Journal features:")
	echo "$feats" | grep -q journal_checksum || fail "$kopts: crash image journal lacks the checksum feature: $feats"
	case $kopts in journal_async*) echo "$feats" | grep -q journal_async_commit || fail "$kopts: no async_commit feature: $feats" ;; esac
	dumpe2fs -h crash.img 2>/dev/null | grep -q needs_recovery || fail "$kopts: the copy needs no recovery"

	check() { # label sums-file [torn]
		cp --sparse=always crash.img ours.img
		cp --sparse=always crash.img theirs.img
		out=$("$NOSTALL" recover ours.img) || fail "$1: nostall recover: $out"
		echo "$out" | grep -q "commit checksums verified" || fail "$1: no checksums verified: $out"
		n=$(echo "$out" | sed -n 's/.*: \([0-9]*\) commit checksums verified.*/\1/p')
		[ "${n:-0}" -gt 0 ] || fail "$1: $out"
		if [ -n "${3:-}" ]; then
			echo "$out" | grep -q "torn by the crash" || fail "$1: the torn commit was not reported: $out"
		else
			echo "$out" | grep -q "torn\|failed its checksum" && fail "$1: unexpected: $out"
		fi
		e2fsck -y -E journal_only theirs.img >/dev/null 2>&1 || true
		mask ours.img
		mask theirs.img
		cmp -s ours.img theirs.img || { cmp -l ours.img theirs.img | head -5; fail "$1: nostall and e2fsck recover differently"; }
		e2fsck -fn ours.img >/dev/null 2>&1 || { e2fsck -fn ours.img; fail "$1: e2fsck -fn after recovery"; }
		while read -r sum name; do
			got=$("$NOSTALL" cat ours.img "/$name" | md5sum | cut -d' ' -f1)
			[ "$got" = "$sum" ] || fail "$1: /$name differs after recovery"
		done <"$2"
		echo "$1: $n checksums verified, same image as e2fsck, files intact"
	}
	check "$kopts" sums
	case $kopts in
	journal_async*)
		journal_map crash.img
		tid=$(tear_last crash.img jmap)
		check "$kopts, commit $tid torn" sums29 torn
		;;
	esac
done
echo ok
