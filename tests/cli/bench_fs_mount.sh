#!/usr/bin/env bash
# nostall bench fs --mount [--peers [--host-cache]] --quick: the shape of a
# run, not its figures (docs/bench-fs-mount.md). --json gives one line per
# workload (jens, stream, creates, fsync-under-stream, readback, manyfiles)
# and system (nostall-fuse in its default mode, guarded; kernel-ext3
# ordered and writeback on a loop device with direct I/O; fuse2fs) with
# its path, dirty budget and a status: "ok" and every figure positive
# (p99_ms may be null; bytes_per_file may be anything), or
# "skipped: REASON"; nostall-fuse always runs and reports its daemon's
# VmHWM; without --peers the peers are skipped with that reason; one line
# per issue 36 target with its ratio; the table form has a row per system
# and the targets; --host-cache adds the kernel's rows through the host's
# page cache; the host's vm.dirty_* settings are what they were after a
# run and after SIGINT in a peer's run; an unknown mount option fails the
# run (exit 1) and says why; usage errors exit 2; SIGINT mid-run exits 130
# with nothing mounted; nothing is left mounted, attached or on disk.
# Needs /dev/fuse (exits 77 otherwise); the peers need root (their rows are
# then checked to say so).
# nostall-test: release-only
set -eu
: "${NOSTALL:?path to the nostall binary}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
[ -w /dev/fuse ] || { echo "SKIP: no usable /dev/fuse" >&2; exit 77; }
export PATH="$PATH:/sbin:/usr/sbin"

# The budget the bench sets must be gone after a run (the settings are the
# host's: another job may change them meanwhile, so only the bench's own
# values are looked for, unless they were there before).
vm_now() { cat /proc/sys/vm/dirty_bytes /proc/sys/vm/dirty_background_bytes | tr '\n' ' '; }
vm0=$(vm_now)
vm_check() { # $1: when
	[ -n "${budget:-}" ] || return 0
	local now want i
	read -ra now <<<"$(vm_now)"; read -ra want <<<"$budget"
	for i in 0 1; do
		[ "${now[$i]}" != "${want[$i]}" ] || [ "$vm0" = "$budget" ] ||
			fail "vm.${vm_names[$i]} still the bench's (${want[$i]}) $1"
	done
}
vm_names=(dirty_bytes dirty_background_bytes)
"$NOSTALL" bench fs --mount --peers --quick --json >"$tmp/all.json" 2>"$tmp/err" ||
	{ cat "$tmp/err" "$tmp/all.json"; fail "bench fs --mount --peers exited $?"; }
grep -q "bench fs: jens on nostall-fuse (guarded)" "$tmp/err" || fail "no progress on stderr"
budget=$(grep -o '"dirty_bytes":[0-9]*,"dirty_background_bytes":[0-9]*' "$tmp/all.json" | head -1 | tr -dc '0-9,' | tr ',' ' ')
[ -n "$budget" ] || fail "no dirty budget in the rows"
budget="$budget "
vm_check "after a run"
root=$([ "$(id -u)" = 0 ] && echo 1 || echo 0)
python3 - "$tmp/all.json" "$root" <<'PY' || fail "JSON shape (above)"
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
root = sys.argv[2] == "1"
fields = {
    "jens": ["total_s", "ms_per_fsync", "p99_ms", "fsyncs"],
    "stream": ["write_mbps", "read_mbps"],
    "creates": ["creates_per_s", "stats_per_s", "unlinks_per_s", "files"],
    "fsync-under-stream": ["p50_ms", "p99_ms", "stream_mbps", "max_ms", "samples"],
    "readback": ["write_mbps", "readback_mbps", "fresh_read_mbps"],
    "manyfiles": ["files_per_s", "find_s", "files"],
}
systems = [("nostall-fuse", "guarded"), ("kernel-ext3", "ordered"), ("kernel-ext3", "writeback"), ("fuse2fs", "default")]
rows = [l for l in lines if l["scenario"] != "target"]
targets = [l for l in lines if l["scenario"] == "target"]
def bad(msg):
    print("FAIL:", msg); sys.exit(1)
if len(rows) != 24: bad(f"want 24 workload lines, got {len(rows)}")
budget = None
for w, names in fields.items():
    for sysname, cfg in systems:
        m = [r for r in rows if (r["scenario"], r["system"], r["config"]) == (w, sysname, cfg)]
        if len(m) != 1: bad(f"{w} {sysname} {cfg}: {len(m)} lines")
        r = m[0]
        if not r["device"].startswith("file:/tmp/nostall-benchfs."): bad(f"device {r['device']}")
        # every row says how it reaches the disk and under which dirty budget: the daemon's, for all
        want_path = {"nostall-fuse": "O_DIRECT", "kernel-ext3": "loop device with direct I/O", "fuse2fs": "the image through the host page cache"}[sysname]
        if not r["path"].startswith(want_path) and not (sysname == "kernel-ext3" and "NOT taken" in r["path"]): bad(f"{w} {sysname} path {r['path']!r}")
        b = (r["dirty_bytes"], r["dirty_background_bytes"])
        if not (isinstance(b[0], int) and b[0] > 0 and isinstance(b[1], int) and 0 < b[1] <= b[0]): bad(f"{w} {sysname} budget {b}")
        if budget and b != budget: bad(f"{w} {sysname} budget {b}, others {budget}")
        budget = b
        keys = [k for k in r if k not in ("scenario", "device", "system", "config", "path", "dirty_bytes", "dirty_background_bytes", "note", "status")]
        st = r["status"]
        want = names + (["daemon_hwm_mib"] + (["bytes_per_file"] if w == "manyfiles" else []) if sysname == "nostall-fuse" else [])
        if st == "ok":
            if keys != want: bad(f"{w} {sysname}: fields {keys}, want {want}")
            for k in want:
                v = r[k]
                if v is None and k == "p99_ms": continue
                if k == "bytes_per_file" and isinstance(v, (int, float)): continue
                if not (isinstance(v, (int, float)) and v > 0 and math.isfinite(v)): bad(f"{w} {sysname} {k}={v}")
            if w == "manyfiles" and r["files"] != 20000: bad(f"manyfiles {sysname}: find counted {r['files']}")
        elif not st.startswith("skipped: ") or len(st) < 15:
            bad(f"{w} {sysname}: status {st!r}")
        if sysname == "nostall-fuse" and st != "ok": bad(f"nostall-fuse did not run {w}: {st}")
        if sysname != "nostall-fuse" and not root and "needs root" not in st: bad(f"{w} {sysname} as non-root: {st}")
        if sysname != "nostall-fuse" and root and st != "ok": print(f"SKIP: {w} on {sysname}: {st}", file=sys.stderr)
if len(targets) != 8: bad(f"want 8 target lines, got {len(targets)}")
for t in targets:
    if t["system"] != "nostall-fuse" or t["met"] not in (True, False, None): bad(f"target {t}")
    if t["met"] is None:
        if t["ratio"] is not None: bad(f"target without met has a ratio: {t}")
    # value and peer_value are printed rounded to 3 decimals: allow that error
    elif abs(t["ratio"] - t["value"] / t["peer_value"]) > t["ratio"] * (0.0006 / max(t["value"], 0.001) + 0.0006 / max(t["peer_value"], 0.001)) + 0.01 * t["ratio"] + 0.002: bad(f"ratio {t}")
    elif t["met"] != (t["ratio"] <= t["goal"] if "<=" in t["target"] else t["ratio"] >= t["goal"]): bad(f"met {t}")
# under 100 fsync samples there is no p99, so that target is n/a
fus = [t for t in targets if t["figure"] == "p99_ms"]
if len(fus) != 2 or any(t["met"] is not None for t in fus): bad(f"fsync p99 targets with --quick: {fus}")
mem = [t for t in targets if t["figure"] == "daemon_hwm_mib"]
if len(mem) != 1 or mem[0]["peer"] != "bound" or abs(mem[0]["peer_value"] - (64 + 20000 * 512 / 2**20)) > 0.01: bad(f"memory target {mem}")
PY

# --host-cache (root): two more kernel rows, through the host's page cache
# with the host's own dirty settings; the settings are restored
if [ "$root" = 1 ]; then
	"$NOSTALL" bench fs --mount --peers --host-cache --quick --json --workload jens >"$tmp/hc.json" 2>"$tmp/err" ||
		{ cat "$tmp/err" "$tmp/hc.json"; fail "--host-cache exited $?"; }
	[ "$(grep -c '"scenario":"jens"' "$tmp/hc.json")" = 6 ] || { cat "$tmp/hc.json"; fail "--host-cache: want 6 jens rows"; }
	for c in "ordered (host cache)" "writeback (host cache)"; do
		grep -q "\"system\":\"kernel-ext3\",\"config\":\"$c\",\"path\":\"loop device through the host page cache[^\"]*\",\"dirty_bytes\":null,\"dirty_background_bytes\":null,\"total_s\"" "$tmp/hc.json" ||
			{ cat "$tmp/hc.json"; fail "--host-cache: no $c row"; }
	done
	vm_check "after --host-cache"
fi

# without --peers the peers are skipped with that reason; the table names systems
"$NOSTALL" bench fs --mount --quick --workload jens,creates >"$tmp/table" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "bench fs --mount exited $?"; }
grep -Eq '^  nostall-fuse +guarded +[0-9.]+ +[0-9.]+' "$tmp/table" || { cat "$tmp/table"; fail "no nostall-fuse row"; }
grep -q '^dirty budget: [0-9.]* MiB, background [0-9.]* MiB' "$tmp/table" || { cat "$tmp/table"; fail "no budget in the header"; }
[ "$(grep -c 'skipped: --peers not given' "$tmp/table")" = 6 ] || { cat "$tmp/table"; fail "peers not skipped"; }
grep -q '^jens on file:/tmp/nostall-benchfs' "$tmp/table" && grep -q '^creates on file:' "$tmp/table" &&
	! grep -q '^stream on' "$tmp/table" || { cat "$tmp/table"; fail "workload tables"; }
grep -Eq '^  creates/s >= 0.4x kernel-ext3 ordered +n/a' "$tmp/table" || { cat "$tmp/table"; fail "targets table"; }

# -o data= picks nostall-fuse's mode; --device file: is used and kept
dev="$tmp/dev.img"
truncate -s 128M "$dev"
"$NOSTALL" bench fs --mount --quick --json --workload jens -o data=writeback --device "file:$dev" >"$tmp/wb.json" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "-o data=writeback"; }
grep -q "^{\"scenario\":\"jens\",\"device\":\"file:$dev\",\"system\":\"nostall-fuse\",\"config\":\"writeback\",.*\"status\":\"ok\"}\$" "$tmp/wb.json" ||
	{ cat "$tmp/wb.json"; fail "data=writeback row"; }
[ -f "$dev" ] || fail "--device file was removed"

# an unknown option fails nostall-fuse's mount: exit 1, the reason in the row
rc=0
"$NOSTALL" bench fs --mount --quick --json --workload jens -o nosuchoption >"$tmp/bad.json" 2>/dev/null || rc=$?
[ "$rc" = 1 ] || fail "an unknown option should exit 1 (got $rc)"
grep -q '"system":"nostall-fuse".*"status":"failed: mount failed.*nosuchoption' "$tmp/bad.json" ||
	{ cat "$tmp/bad.json"; fail "the failed mount's reason"; }

# usage errors exit 2
for args in "--peers" "--mount --device sim:ssd" "--mount --workload nope" "--workload readback" "--mount --host-cache"; do
	rc=0; "$NOSTALL" bench fs $args >/dev/null 2>&1 || rc=$?
	[ "$rc" = 2 ] || fail "bench fs $args should exit 2 (got $rc)"
done

# SIGINT mid-run (once nostall-fuse's first phase runs): exit 128+2, the
# interruption said on stderr, the mount gone (the kept --device image is
# mounted nowhere)
sigdev="$tmp/sig.img"
truncate -s 128M "$sigdev"
"$NOSTALL" bench fs --mount --quick --workload stream,creates,fsync-under-stream,jens --device "file:$sigdev" \
	>"$tmp/sig.out" 2>"$tmp/sig.err" &
bpid=$!
for _ in $(seq 600); do
	grep -q "stream-write on nostall-fuse" "$tmp/sig.err" && break
	sleep 0.05
done
kill -INT "$bpid" 2>/dev/null || true
rc=0; wait "$bpid" || rc=$?
[ "$rc" = 130 ] || { tr '\r' '\n' <"$tmp/sig.err" | tail -3; fail "SIGINT: exit $rc, want 130"; }
grep -q "interrupted (signal 2); nothing left mounted" "$tmp/sig.err" || fail "SIGINT: no message"
! grep -q " fuse.nostall $sigdev " /proc/self/mountinfo || { fail "SIGINT: $sigdev still mounted"; "$NOSTALL" umount "$(grep " fuse.nostall $sigdev " /proc/self/mountinfo | cut -d' ' -f5)"; }

# SIGINT in a peer's run (root): the host's dirty settings are restored,
# the loop device detached
if [ "$root" = 1 ]; then
	"$NOSTALL" bench fs --mount --peers --quick --workload readback --device "file:$sigdev" \
		>"$tmp/sig2.out" 2>"$tmp/sig2.err" &
	bpid=$!
	for _ in $(seq 600); do
		grep -q "stream-write on kernel-ext3 (ordered)" "$tmp/sig2.err" && break
		sleep 0.05
	done
	kill -INT "$bpid" 2>/dev/null || true
	rc=0; wait "$bpid" || rc=$?
	[ "$rc" = 130 ] || { tr '\r' '\n' <"$tmp/sig2.err" | tail -3; fail "SIGINT in a peer: exit $rc, want 130"; }
	vm_check "after SIGINT"
	! losetup -a 2>/dev/null | grep -q "($sigdev)" || fail "SIGINT: a loop device is still attached to $sigdev"
fi

# nothing left behind: no mount of, loop device on, or file of the images used
for f in $(grep -oh '/tmp/nostall-benchfs\.[A-Za-z0-9]*' "$tmp/all.json" "$tmp/table" | sort -u) "$dev"; do
	! grep -q "^$f " /proc/mounts || fail "$f is still mounted"
	! losetup -a 2>/dev/null | grep -q "($f)" || fail "a loop device is still attached to $f"
	[ "$f" = "$dev" ] || [ ! -e "$f" ] || fail "the image $f was left behind"
done
echo ok
