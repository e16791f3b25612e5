#!/usr/bin/env bash
# nostall-test: release-only (it reruns release test binaries and scripts on another filesystem; the sanitizers see them on ext3)
# Issue 39's write-path test matrix on ext2 (no journal), the tests' own block sizes:
# tests/lib/write_matrix.sh ext2 (what runs, what is scaled for
# CI, and how a combination the library does not write yet is skipped: one
# "SKIP:" line, found by trying). One of three entries, each under
# tests/run.sh's 600 s per test.
exec bash "$(dirname "$0")/../lib/write_matrix.sh" ext2
