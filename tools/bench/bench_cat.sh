#!/usr/bin/env bash
# Read throughput of the read path against the kernel's, in one run: a 1 GiB
# file in an ext3 image (mke2fs -t ext3, 4 KiB blocks, written through a
# kernel loop mount), then, each from a cold cache (drop_caches before each):
#   nostall cat IMAGE /file > /dev/null
#   cat MOUNT/file > /dev/null         (kernel ext3 on a read-only loop mount)
# Prints both rates in MB/s (10^6 bytes per second). RUNS=N (default 3)
# repeats the pair, alternating, and prints each run and the medians (a busy
# machine varies a lot between runs). Needs root.
#   tools/bench/bench_cat.sh [NOSTALL-BINARY] [SIZE-MiB] [-- nostall cat options, e.g. -o file_readahead=16M]
set -eu
nostall=${1:-build/nostall}
mib=${2:-1024}
shift $(( $# > 2 ? 2 : $# ))
[ "${1:-}" = "--" ] && shift
extra=("$@")
[ "$(id -u)" -eq 0 ] || { echo "bench_cat: needs root (loop mount, drop_caches)" >&2; exit 2; }
export PATH="$PATH:/sbin:/usr/sbin"
tmp=$(mktemp -d /tmp/nostall-benchcat.XXXXXX)
mnt=$tmp/mnt
mkdir "$mnt"
cleanup() { mountpoint -q "$mnt" && umount "$mnt"; rm -rf "$tmp"; }
trap cleanup EXIT
img=$tmp/cat.img
truncate -s $((mib + mib / 8 + 128))M "$img"
mke2fs -q -F -t ext3 -b 4096 "$img"
mount -o loop -t ext3 "$img" "$mnt"
echo "writing a $mib MiB file through the kernel..." >&2
head -c $((mib << 20)) /dev/urandom >"$mnt/file"
umount "$mnt"
bytes=$((mib << 20))

rate() { # seconds -> MB/s
	awk -v b="$bytes" -v s="$1" 'BEGIN { printf "%.0f", b / s / 1e6 }'
}
timed() { # command... -> seconds on stdout
	local t0 t1
	sync
	echo 3 >/proc/sys/vm/drop_caches
	t0=$(date +%s.%N)
	"$@" >/dev/null
	t1=$(date +%s.%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }'
}
runs=${RUNS:-3}
nsum=$(sha256sum < <("$nostall" cat "${extra[@]}" "$img" /file) | cut -c1-16)
mount -o loop,ro -t ext3 "$img" "$mnt"
ksum=$(sha256sum <"$mnt/file" | cut -c1-16)
[ "$nsum" = "$ksum" ] || echo "WARNING: contents differ (nostall $nsum, kernel $ksum)" >&2
printf 'cold sequential read of a %d MiB file (ext3, 4 KiB blocks, image %s), %d runs\n' "$mib" "$img" "$runs"
ns=() ks=()
for ((i = 1; i <= runs; i++)); do
	umount "$mnt"
	t_n=$(timed "$nostall" cat "${extra[@]}" "$img" /file)
	mount -o loop,ro -t ext3 "$img" "$mnt"
	t_k=$(timed cat "$mnt/file")
	ns+=("$(rate "$t_n")") ks+=("$(rate "$t_k")")
	printf '  run %d: nostall cat %s %6s MB/s   kernel cat %6s MB/s\n' "$i" "${extra[*]:-}" "${ns[-1]}" "${ks[-1]}"
done
umount "$mnt"
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
mn=$(median "${ns[@]}") mk=$(median "${ks[@]}")
printf '  median: nostall cat %s %6s MB/s   kernel loop mount cat %6s MB/s   (%s x)\n' "${extra[*]:-}" "$mn" "$mk" \
	"$(awk -v a="$mn" -v b="$mk" 'BEGIN { printf "%.2f", a / b }')"
