# Sourced by the CLI scripts that serve images over NBD (nbd_cli.sh,
# mkfs_nbd.sh): nbdkit missing fails unless NOSTALL_ALLOW_SKIP=1 (then exit
# 77, a skip); sets up $tmp (removed at exit, with every server started)
# and serve NAME ARGS...: nbdkit ARGS on $tmp/NAME.sock, ready once its
# pidfile exists.
if ! command -v nbdkit >/dev/null 2>&1; then
	if [ "${NOSTALL_ALLOW_SKIP:-0}" = 1 ]; then
		echo "SKIP: nbdkit not on PATH" >&2
		exit 77
	fi
	echo "FAIL: nbdkit not on PATH (install nbdkit, or NOSTALL_ALLOW_SKIP=1)"
	exit 1
fi
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT

serve() {
	local name=$1
	shift
	nbdkit -f --exit-with-parent -P "$tmp/$name.pid" -U "$tmp/$name.sock" "$@" 2>>"$tmp/nbdkit.log" &
	pids+=($!)
	for _ in $(seq 2000); do
		[ -e "$tmp/$name.pid" ] && return 0
		kill -0 "${pids[-1]}" 2>/dev/null || break
		sleep 0.01
	done
	cat "$tmp/nbdkit.log"
	echo "FAIL: nbdkit $* did not start"
	exit 1
}
