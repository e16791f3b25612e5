#!/usr/bin/env bash
# Runs every test binary and CLI test script in each build variant and prints
# one summary line "N passed, N failed, N skipped" at the end (counting cmocka
# test cases and CLI scripts), then the reason for each skip. A binary that
# crashes or times out counts its unreported cases as failed.
#   variants: release (build/), asan (build/asan: ASan+UBSan, all tests
#             except CLI scripts marked "nostall-test: release-only"),
#             tsan (build/tsan: tests marked "nostall-test: concurrent")
#   A variant or a test binary that is not built is reported as a skip.
# Skips:
#   cmocka: skip() ("[  SKIPPED ] name"); the reason is the "[  SKIP    ] ..."
#     line the test printed before it, if any.
#   CLI scripts: exit 77 with "SKIP: reason" on stderr (the whole script is
#     skipped); a passing script may also print "SKIP: reason" lines for the
#     parts it could not check (each counts as one skip).
# Oracles: e2fsck, debugfs, dumpe2fs and mke2fs (e2fsprogs) must be on PATH:
# without them the run fails (the checks that need them skip, loudly), unless
# NOSTALL_ALLOW_SKIP=1. Scripts that need root for kernel loop mounts fail
# when run as root without them, and skip that part when not root.
# Streams: the variants run as NOSTALL_TEST_JOBS parallel streams (default 2:
#   release beside asan-then-tsan, about the same length each); most tests
#   wait on fsync, sleeps or subprocesses, so two streams on two cores take
#   ~40 % less time than one. Every test uses its own temporary files, mounts
#   and loop devices. NOSTALL_TEST_JOBS=1 runs them one after another.
#   Each result line is printed when its test ends, so streams interleave;
#   the summary at the end covers all of them.
# Usage: tests/run.sh [FILTER]   (FILTER: substring of the test name)
set -u
cd "$(dirname "$0")/.."
filter=${1:-}
pass=0
fail=0
skip=0
failed_names=()
skip_reasons=()
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
export NOSTALL_ALLOW_SKIP=${NOSTALL_ALLOW_SKIP:-0}
timeout_s=${NOSTALL_TEST_TIMEOUT:-600}

add_skip() { # reason
	skip=$((skip + 1))
	skip_reasons+=("$1")
}

# Sum the N of every line "PREFIX N test(s)" in $out.
count() { printf '%s\n' "$out" | sed -n "s/^$1 \([0-9]*\) test(s).*/\1/p" | awk '{s+=$1} END {print s+0}'; }

run_cmocka() { # variant binary
	local variant=$1 bin=$2 name out rc total passed failed skipped line
	name="$variant/$(basename "$bin")"
	SECONDS=0
	out=$(timeout "$timeout_s" "$bin" 2>&1)
	rc=$?
	name="$name [${SECONDS}s]"
	total=$(count '\[==========\] Running')
	passed=$(count '\[  PASSED  \]')
	skipped=$(count '\[  SKIPPED \]')
	failed=$((total - passed - skipped))
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
	pass=$((pass + passed))
	fail=$((fail + failed))
	# One reason per skipped case, from its own block of output.
	while IFS= read -r line; do
		[ -n "$line" ] && add_skip "$name: $line"
	done < <(printf '%s\n' "$out" | awk '
		/^\[ RUN      \] / { reason = ""; next }
		/^\[  SKIP    \] / { reason = substr($0, 14); next }
		/^\[  SKIPPED \] [0-9]+ test\(s\)/ { listing = 1; next }
		/^\[  SKIPPED \] / && !listing {
			print substr($0, 14) ": " (reason != "" ? reason : "(no reason printed)")
		}')
	if [ "$failed" -ne 0 ]; then
		failed_names+=("$name (exit $rc)")
		printf '%s\n' "$out" | tail -n 40
		echo "FAIL $name: $passed passed, $failed failed (exit $rc)"
	elif [ "$skipped" -ne 0 ]; then
		echo "ok   $name: $passed passed, $skipped skipped"
	else
		echo "ok   $name: $passed passed"
	fi
}

run_script() { # variant nostall-binary script
	local variant=$1 bin=$2 script=$3 name out rc reasons r
	name="$variant/$(basename "$script")"
	SECONDS=0
	# NOSTALL_HOOKS: the same variant's CLI with the test hooks
	# (NOSTALL_DEBUG_SKIP_ORDERED, lockdep; Makefile HOOKS_DEFS)
	out=$(NOSTALL="$bin" NOSTALL_HOOKS="${bin%/*}/nostall-testhooks" timeout "$timeout_s" bash "$script" 2>&1)
	rc=$?
	name="$name [${SECONDS}s]"
	reasons=$(printf '%s\n' "$out" | sed -n 's/^SKIP: //p')
	if [ "$rc" -eq 77 ]; then
		[ -n "$reasons" ] || reasons=$(printf '%s\n' "$out" | tail -n 1)
		add_skip "$name: ${reasons//$'\n'/; }"
		echo "skip $name: ${reasons//$'\n'/; }"
	elif [ "$rc" -eq 0 ]; then
		pass=$((pass + 1))
		if [ -n "$reasons" ]; then
			while IFS= read -r r; do add_skip "$name (part): $r"; done <<<"$reasons"
			echo "ok   $name (parts skipped: ${reasons//$'\n'/; })"
		else
			echo "ok   $name"
		fi
	else
		fail=$((fail + 1)); failed_names+=("$name (exit $rc)")
		printf '%s\n' "$out" | tail -n 40
		echo "FAIL $name (exit $rc)"
	fi
}

# Required oracles, looked up on PATH as the C tests do.
for tool in e2fsck debugfs dumpe2fs mke2fs; do
	command -v "$tool" >/dev/null 2>&1 && continue
	if [ "$NOSTALL_ALLOW_SKIP" = 1 ]; then
		add_skip "oracle: $tool not on PATH (allowed by NOSTALL_ALLOW_SKIP=1)"
		echo "skip oracle: $tool not on PATH (NOSTALL_ALLOW_SKIP=1)"
	else
		fail=$((fail + 1))
		failed_names+=("oracle: $tool not on PATH (install e2fsprogs or add its directory to PATH; NOSTALL_ALLOW_SKIP=1 to allow)")
		echo "FAIL oracle: $tool not on PATH: the checks that need it are skipped (NOSTALL_ALLOW_SKIP=1 allows this)"
	fi
done

# Runs one variant's tests in this shell (a stream's subshell).
run_variant() { # variant
	local variant=$1 dir built src t bin script
	case $variant in
	release) dir=build ;;
	*) dir=build/$variant ;;
	esac
	built=0
	for src in tests/test_*.c; do
		t=$(basename "$src" .c)
		case $t in *"$filter"*) ;; *) continue ;; esac
		if [ "$variant" = tsan ] && ! grep -q 'nostall-test: concurrent' "$src"; then
			continue
		fi
		bin=$dir/tests/$t
		if [ ! -x "$bin" ]; then
			[ -d "$dir/tests" ] && add_skip "$variant/$t: not built"
			continue
		fi
		built=1
		run_cmocka "$variant" "$bin"
	done
	if [ "$variant" != tsan ]; then
		for script in tests/cli/*.sh; do
			if [ ! -f "$script" ]; then
				# no match leaves the pattern; anything else is a script
				# that vanished since the glob: say so, never drop it quietly
				if [ "$script" != 'tests/cli/*.sh' ]; then
					add_skip "$variant/$(basename "$script"): not found when its turn came"
					echo "skip $variant/$(basename "$script"): not found when its turn came"
				fi
				continue
			fi
			case $script in *"$filter"*) ;; *) continue ;; esac
			# Long application/benchmark scripts run once, in release: their
			# C code is covered under ASan by the unit tests (CI time budget).
			if [ "$variant" != release ] && grep -q 'nostall-test: release-only' "$script"; then
				continue
			fi
			if [ ! -x "$dir/nostall" ]; then
				[ -d "$dir" ] && add_skip "$variant/$(basename "$script"): $dir/nostall not built"
				continue
			fi
			built=1
			run_script "$variant" "$PWD/$dir/nostall" "$script"
		done
	fi
	if [ "$built" -eq 0 ] && [ ! -d "$dir/tests" ]; then
		add_skip "variant $variant: not built (make VARIANT=$variant tests)"
		echo "skip variant $variant: not built ($dir/tests missing)"
	fi
}

# Writes this stream's counts, failures and skip reasons to FILE (one record
# per line: "P n", "F n", "S n", "N name", "R reason").
save_state() { # file
	local n
	{
		echo "P $pass"; echo "F $fail"; echo "S $skip"
		for n in "${failed_names[@]}"; do printf 'N %s\n' "${n//$'\n'/ }"; done
		for n in "${skip_reasons[@]}"; do printf 'R %s\n' "${n//$'\n'/ }"; done
	} >"$1"
}

# Adds a saved stream's records to this shell's counts.
load_state() { # file
	local tag rest line
	while IFS= read -r line; do
		tag=${line%% *}; rest=${line#* }
		case $tag in
		P) pass=$((pass + rest)) ;;
		F) fail=$((fail + rest)) ;;
		S) skip=$((skip + rest)) ;;
		N) failed_names+=("$rest") ;;
		R) skip_reasons+=("$rest") ;;
		esac
	done <"$1"
}

jobs=${NOSTALL_TEST_JOBS:-2}
case $jobs in ''|*[!0-9]*|0) echo "NOSTALL_TEST_JOBS=$jobs: want a positive number" >&2; exit 2 ;; esac
if [ "$jobs" -eq 1 ]; then
	streams=("release asan tsan")
else
	# release alone takes about as long as asan and tsan together
	streams=("release" "asan tsan")
fi
state=$(mktemp -d /tmp/nostall-run.XXXXXX)
trap 'rm -rf "$state"' EXIT
pids=()
for k in "${!streams[@]}"; do
	(
		pass=0 fail=0 skip=0 failed_names=() skip_reasons=()
		for variant in ${streams[$k]}; do run_variant "$variant"; done
		save_state "$state/$k"
	) &
	pids+=($!)
done
for k in "${!pids[@]}"; do
	if ! wait "${pids[$k]}" || [ ! -f "$state/$k" ]; then
		fail=$((fail + 1)); failed_names+=("stream '${streams[$k]}' ended without its results")
		continue
	fi
	load_state "$state/$k"
done

if [ "${#failed_names[@]}" -ne 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failed_names[@]}"
fi
if [ "${#skip_reasons[@]}" -ne 0 ]; then
	echo "skipped:"
	printf '  %s\n' "${skip_reasons[@]}"
fi
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
