#!/usr/bin/env bash
# Mounting an image whose journal needs recovery replays it first, as the
# kernel does (even for a read-only mount); `-o noload` reads the image as it
# is and leaves it untouched. The journal is written by debugfs (jo/jw/jc), a
# committed transaction that rewrites a file's data block; e2fsck is the
# judge of the result.
set -eu
: "${NOSTALL:?path to the nostall binary}"
command -v debugfs >/dev/null && command -v e2fsck >/dev/null || { echo "SKIP: e2fsprogs (debugfs, e2fsck) not installed" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
python3 -c "
open('old','wb').write(b'old content '*85 + b'\n'*4)
open('new','wb').write(b'NEW CONTENT '*85 + b'\n'*4)"
mke2fs -q -F -t ext3 -b 1024 img 8M >/dev/null 2>&1
debugfs -w -R "write old f" img >/dev/null 2>&1
blk=$(debugfs -R "bmap f 0" img 2>/dev/null)
printf 'jo\njw -b %s new\njc\n' "$blk" >cmds
debugfs -w -f cmds img >/dev/null 2>&1
dumpe2fs -h img 2>/dev/null | grep -q needs_recovery || { echo "FAIL: debugfs left no transaction to replay"; exit 1; }
cp --sparse=always img img.noload

# noload: the on-disk state, image unchanged
sum=$(md5sum <img.noload)
"$NOSTALL" cat -o noload img.noload /f | cmp -s - old || { echo "FAIL: noload should read the pre-journal data"; exit 1; }
[ "$(md5sum <img.noload)" = "$sum" ] || { echo "FAIL: a noload mount changed the image"; exit 1; }

# default: replay, then read
"$NOSTALL" cat img /f | cmp -s - new || { echo "FAIL: the mount did not replay the journal"; exit 1; }
dumpe2fs -h img 2>/dev/null | grep -q needs_recovery && { echo "FAIL: needs_recovery still set after the replay"; exit 1; }
e2fsck -fn img >/dev/null 2>&1 || { e2fsck -fn img; echo "FAIL: e2fsck -fn after the mount's replay"; exit 1; }
# the replayed image equals e2fsck's recovery of the same journal
e2fsck -y -E journal_only img.noload >/dev/null 2>&1 || true
cmp -s <(debugfs -R "cat f" img.noload 2>/dev/null) new || { echo "FAIL: e2fsck's recovery differs"; exit 1; }
"$NOSTALL" info img | grep -q "Needs recovery: *no" || { "$NOSTALL" info img | grep -i recover; echo "FAIL: info still reports recovery"; exit 1; }
echo ok
