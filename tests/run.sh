#!/usr/bin/env bash
# Runs every test binary and CLI test script in each build variant and prints
# one summary line "N passed, N failed" at the end (counting cmocka test cases
# and CLI scripts). A binary that crashes or times out counts its unreported
# cases as failed.
#   variants: release (build/), asan (build/asan: ASan+UBSan, all tests),
#             tsan (build/tsan: tests marked "nostall-test: concurrent")
# Usage: tests/run.sh [FILTER]   (FILTER: substring of the test name)
set -u
cd "$(dirname "$0")/.."
filter=${1:-}
pass=0
fail=0
failed_names=()
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
timeout_s=${NOSTALL_TEST_TIMEOUT:-600}

run_cmocka() { # variant binary
	local variant=$1 bin=$2 name out rc total passed failed
	name="$variant/$(basename "$bin")"
	out=$(timeout "$timeout_s" "$bin" 2>&1)
	rc=$?
	total=$(printf '%s\n' "$out" | sed -n 's/^\[==========\] Running \([0-9]*\) test(s)\./\1/p' | awk '{s+=$1} END {print s+0}')
	passed=$(printf '%s\n' "$out" | sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\./\1/p' | awk '{s+=$1} END {print s+0}')
	failed=$((total - passed))
	if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then failed=1; fi
	pass=$((pass + passed))
	fail=$((fail + failed))
	if [ "$failed" -ne 0 ]; then
		failed_names+=("$name (exit $rc)")
		printf '%s\n' "$out" | tail -n 40
		echo "FAIL $name: $passed passed, $failed failed (exit $rc)"
	else
		echo "ok   $name: $passed passed"
	fi
}

run_script() { # variant nostall-binary script
	local variant=$1 bin=$2 script=$3 name out rc
	name="$variant/$(basename "$script")"
	out=$(NOSTALL="$bin" timeout "$timeout_s" bash "$script" 2>&1)
	rc=$?
	if [ "$rc" -eq 0 ]; then
		pass=$((pass + 1)); echo "ok   $name"
	else
		fail=$((fail + 1)); failed_names+=("$name (exit $rc)")
		printf '%s\n' "$out" | tail -n 40
		echo "FAIL $name (exit $rc)"
	fi
}

for variant in release asan tsan; do
	case $variant in
	release) dir=build ;;
	*) dir=build/$variant ;;
	esac
	for bin in "$dir"/tests/test_*; do
		[ -x "$bin" ] || continue
		case $bin in *"$filter"*) ;; *) continue ;; esac
		if [ "$variant" = tsan ] && ! grep -q 'nostall-test: concurrent' "tests/$(basename "$bin").c"; then
			continue
		fi
		run_cmocka "$variant" "$bin"
	done
	if [ "$variant" != tsan ] && [ -x "$dir/nostall" ]; then
		for script in tests/cli/*.sh; do
			[ -f "$script" ] || continue
			case $script in *"$filter"*) ;; *) continue ;; esac
			run_script "$variant" "$PWD/$dir/nostall" "$script"
		done
	fi
done

if [ "${#failed_names[@]}" -ne 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failed_names[@]}"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
