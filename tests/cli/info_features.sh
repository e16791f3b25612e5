#!/usr/bin/env bash
# The on-disk feature table (src/extfs/format/features.c) and its readers:
#   1. docs/ext3-format.md's "Features" table is the code's, row for row
#      (`nostall info -F` prints the code's);
#   2. mkfs sets the table's mkfs column and nothing else: the image's
#      features (`nostall info`, and dumpe2fs when installed) are those rows;
#   3. the names are e2fsprogs': each compat / ro_compat bit (and each
#      incompat bit dumpe2fs opens) set on a copy of the image is named by
#      dumpe2fs as the table names it;
#   4. the mount follows the table: a refused incompat set is refused naming
#      each feature (and an unknown bit as FEATURE_I<n>), a read-only
#      ro_compat feature (and an unknown ro_compat bit) leaves the mount
#      read-only, an ignored compat feature (and an unknown compat bit) mounts
#      read-write.
# Run by tests/run.sh with $NOSTALL = the nostall binary.
set -u
NOSTALL=${NOSTALL:-build/nostall}
case $NOSTALL in /*) ;; *) NOSTALL=$PWD/$NOSTALL ;; esac
root=$(cd "$(dirname "$0")/../.." && pwd)
export TZ=UTC PATH="$PATH:/sbin:/usr/sbin"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3 not installed" >&2; exit 77; }

tmp=$(mktemp -d /tmp/nostall-infofeat.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
img="$tmp/fs.img"
"$NOSTALL" mkfs -q -b 1024 -U 01234567-89ab-cdef-0123-456789abcdef -T 1700000000 "$img" 8M ||
	{ echo "FAIL: nostall mkfs"; exit 1; }

# set_bit IMAGE KIND(0 compat, 1 incompat, 2 ro_compat) BIT: sets the bit in
# the primary superblock.
set_bit() {
	python3 - "$1" "$2" "$3" <<'EOF'
import struct, sys
path, kind, bit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
off = 1024 + 0x5C + 4 * kind
with open(path, "r+b") as f:
    f.seek(off)
    v = struct.unpack("<I", f.read(4))[0] | (1 << bit)
    f.seek(off)
    f.write(struct.pack("<I", v))
EOF
}

# ---- 1. the doc's table is the code's ----
if ! "$NOSTALL" info -F "$img" >"$tmp/table" 2>"$tmp/err"; then
	fail "nostall info -F: $(cat "$tmp/err")"
fi
python3 - "$tmp/table" "$root/docs/ext3-format.md" >"$tmp/cmp" 2>&1 <<'EOF'
import re, sys
code = []
for line in open(sys.argv[1]).read().splitlines()[1:]:
    kind, bit, name, support, mkfs, image = line.split()
    code.append((kind, int(bit, 16), name, support, mkfs))
doc, inside = [], False
for line in open(sys.argv[2]):
    if "features table: begin" in line:
        inside = True
        continue
    if "features table: end" in line:
        break
    if not inside or not line.startswith("|") or line.startswith("| Kind") or line.startswith("|--"):
        continue
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    doc.append((cells[0], int(cells[1], 16), cells[2], cells[3], cells[4]))
if not doc:
    print("no features table in the doc")
    sys.exit(1)
if doc != code:
    for i in range(max(len(doc), len(code))):
        d = doc[i] if i < len(doc) else None
        c = code[i] if i < len(code) else None
        if d != c:
            print(f"row {i}: doc {d} != code {c}")
    sys.exit(1)
print(f"{len(code)} rows agree")
EOF
[ $? -eq 0 ] || fail "docs/ext3-format.md's features table differs from the code's: $(cat "$tmp/cmp")"

# ---- 2. mkfs sets the mkfs column ----
want=$(awk 'NR > 1 && $5 == "yes" { printf "%s%s", sep, $3; sep = " " }' "$tmp/table")
onimg=$(awk 'NR > 1 && $6 == "set" { printf "%s%s", sep, $3; sep = " " }' "$tmp/table")
[ "$want" = "$onimg" ] || fail "mkfs set '$onimg', the table's mkfs column is '$want'"
got=$("$NOSTALL" info "$img" | sed -n 's/^Filesystem features: *//p')
[ "$got" = "$want" ] || fail "nostall info lists '$got', want '$want'"
if command -v dumpe2fs >/dev/null 2>&1; then
	e2=$(dumpe2fs -h "$img" 2>/dev/null | sed -n 's/^Filesystem features: *//p')
	[ "$e2" = "$want" ] || fail "dumpe2fs lists '$e2', want '$want'"
else
	echo "SKIP: dumpe2fs not installed (the mkfs features and the names against e2fsprogs)"
fi

# ---- 3. the names are e2fsprogs' ----
if command -v dumpe2fs >/dev/null 2>&1; then
	checked=0
	while read -r kind bit name _; do
		case $kind in compat) k=0 ;; incompat) k=1 ;; ro_compat) k=2 ;; *) continue ;; esac
		b=$(python3 -c "print((int('$bit', 16)).bit_length() - 1)")
		cp "$img" "$tmp/n.img"
		set_bit "$tmp/n.img" "$k" "$b"
		# (an incompat feature it does not know, or metadata_csum without
		# checksums, and dumpe2fs refuses the image: nothing to compare)
		out=$(dumpe2fs -h "$tmp/n.img" 2>/dev/null) || continue
		names=" $(printf '%s\n' "$out" | sed -n 's/^Filesystem features: *//p') "
		# btree_dir: the kernel headers' name, which nostall printed before
		# the table; e2fsprogs has none for the bit
		[ "$name" = btree_dir ] && name=FEATURE_R2
		case $names in *" $name "*) checked=$((checked + 1)) ;;
			*) fail "$kind bit $b: dumpe2fs names it not '$name' ($names)" ;; esac
	done < <(tail -n +2 "$tmp/table")
	[ "$checked" -ge 30 ] || fail "only $checked names checked against dumpe2fs"
fi

# ---- 4. the mount follows the table ----
# refused: each named, unknown bits as FEATURE_I<n>
cp "$img" "$tmp/r.img"
set_bit "$tmp/r.img" 1 8
set_bit "$tmp/r.img" 1 15
if "$NOSTALL" info "$tmp/r.img" >/dev/null 2>"$tmp/err"; then
	fail "an image with mmp inline_data mounted"
fi
grep -q "unsupported incompat features mmp inline_data (0x8100): refusing to mount" "$tmp/err" ||
	fail "refusal message: $(cat "$tmp/err")"
# extent (issue 39: no longer read-only): an image with the bit mounts
# read-write; nostall's new files are indirect-mapped, valid with extent
cp "$img" "$tmp/e.img"
set_bit "$tmp/e.img" 1 6
"$NOSTALL" info "$tmp/e.img" >/dev/null 2>"$tmp/err" || fail "extent: info failed: $(cat "$tmp/err")"
"$NOSTALL" mkdir "$tmp/e.img" /x >/dev/null 2>"$tmp/err" || fail "extent: mkdir failed: $(cat "$tmp/err")"
cp "$img" "$tmp/u.img"
set_bit "$tmp/u.img" 1 31
"$NOSTALL" info "$tmp/u.img" >/dev/null 2>"$tmp/err" && fail "an unknown incompat bit mounted"
grep -q "unsupported incompat feature FEATURE_I31 (0x80000000): refusing to mount" "$tmp/err" ||
	fail "unknown incompat message: $(cat "$tmp/err")"

# read-only: a known and an unknown ro_compat bit
for b in 14 20; do
	cp "$img" "$tmp/ro.img"
	set_bit "$tmp/ro.img" 2 "$b"
	"$NOSTALL" mkdir "$tmp/ro.img" /x >/dev/null 2>"$tmp/err" &&
		fail "ro_compat bit $b: a read-write command succeeded"
	out=$("$NOSTALL" info "$tmp/ro.img" 2>&1) || fail "ro_compat bit $b: read-only info failed: $out"
	printf '%s\n' "$out" | grep -q "^Unknown ro_compat: *yes (read-only)" ||
		fail "ro_compat bit $b: info does not say read-only"
	line=$("$NOSTALL" info -F "$tmp/ro.img" | awk -v b="$(printf '0x%08x' $((1 << b)))" '$1 == "ro_compat" && $2 == b')
	case $b in
	14) want="shared_blocks read-only no set" ;;
	20) want="FEATURE_R20 read-only no set" ;;
	esac
	[ "$(echo "$line" | awk '{ print $3, $4, $5, $6 }')" = "$want" ] ||
		fail "info -F for ro_compat bit $b: '$line', want '$want'"
done

# ignored compat features (known and unknown) mount read-write
for b in 9 20; do
	cp "$img" "$tmp/c.img"
	set_bit "$tmp/c.img" 0 "$b"
	"$NOSTALL" mkdir "$tmp/c.img" /x 2>"$tmp/err" || fail "compat bit $b: mkdir failed: $(cat "$tmp/err")"
done

if [ "$fails" -ne 0 ]; then
	echo "$fails failure(s)"
	exit 1
fi
echo "info_features: ok"
